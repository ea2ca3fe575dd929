//! Queues on a [`Kfd`]: creation of compute (PM4), compute AQL and SDMA queues (PCIe, XGMI, or
//! a chosen engine) with the kernel's checks done first, update (priority, percentage,
//! disable / re-enable), destruction, CU masks, GWS, trap handlers and wave state — libhsakmt's
//! `hsaKmtCreateQueueExt` and friends — plus owned producer objects for lock-free submission
//! ([`AqlQueue`], [`SingleAqlQueue`], [`SdmaQueue`]).
//!
//! # Resources
//! For each queue the library allocates, sized from the node's topology
//! ([`crate::queue::params`]):
//! - the **pointers page** (one page, system memory): the AQL `amd_queue_t` layout, with the
//!   write index at [`WRITE_POINTER_OFFSET`] and the read index at [`READ_POINTER_OFFSET`]
//!   (PM4 and SDMA queues use the same two words as their write / read pointers), and the SDMA
//!   completion fence at [`SDMA_FENCE_OFFSET`];
//! - for compute queues the **EOP buffer** (device memory; 4096 bytes on gfx8+, none for AQL
//!   queues on gfx9.4.x) and the **context-save area** (CWSR), `(ctx + debug) × num_xcc` bytes
//!   with one [`ContextSaveAreaHeader`](crate::queue::params::ContextSaveAreaHeader) per XCC,
//!   whose error payload and event come from [`QueueDesc::error`];
//! - the **ring**, when [`RingSpec::Allocate`] asks for it (otherwise it is the caller's);
//! - the node's **doorbell page**, mapped at the first queue on the node and shared by all.
//!
//! Every buffer is freed when the queue is destroyed, and the table is torn down (remaining
//! queues destroyed) when the device's last open is closed. A buffer the kernel refuses to free
//! when its queue goes (or that a caller still holds a view of) is not lost: the library keeps
//! its handle and frees it at the next queue creation or destruction, or at the last close.
//!
//! # Handles
//! Queues are named by [`QueueHandle`]s — a slot of a fixed table of [`MAX_DEVICE_QUEUES`] and the
//! slot's generation — never by pointers; a destroyed queue's handle is rejected with
//! [`QueueError::InvalidHandle`]. The table sits behind a spin lock held for bookkeeping only:
//! ioctls, allocations and mappings happen outside it.
//!
//! # Files
//! - `create`: the node's facts, the kernel's checks, sizing, buffers and `CREATE_QUEUE`;
//!   `backing`: how each buffer is allocated; `doorbell`: the per-node doorbell pages.
//! - `control`: update, CU mask, GWS, wave state, trap handler, destruction and teardown.
//! - `producer`: the owned producer objects and the calls that make them.
//! - `reclaim`: buffers of destroyed queues kept to be freed later.
//! - `queue_table`: the generation-checked table; `queue_error`: [`QueueError`].

mod backing;
mod control;
mod create;
mod doorbell;
mod producer;
mod queue_error;
mod queue_table;
mod reclaim;

use crate::memory::objects::MemoryHandle;
use crate::platform::{Platform, SharedMemory};
use crate::queue::params::{ContextSaveSizes, GfxVersion, QueueKind, QueuePriority};
use crate::queue::ring::{AMD_QUEUE_READ_DISPATCH_ID_OFFSET, AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET};
use crate::uapi::{
    KFD_IOC_QUEUE_TYPE_COMPUTE, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, KFD_IOC_QUEUE_TYPE_SDMA,
    KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID, KFD_IOC_QUEUE_TYPE_SDMA_XGMI,
};

use super::Kfd;
use super::memory_manager::MemoryStorage;
use backing::QueueBuffer;
use doorbell::DoorbellPages;
use producer::ProducerToken;
use queue_table::{Table, TableError};

pub use producer::{AqlQueue, Pm4Queue, SdmaCompletion, SdmaQueue, SdmaTicket, SingleAqlQueue};
pub use queue_error::{Engine, QueueError};
pub use queue_table::QueueHandle;
pub use reclaim::MAX_ORPHANED_BUFFERS;

pub use crate::config::MAX_DEVICE_QUEUES;

/// Byte offset of the write pointer in a queue's pointers page (`amd_queue_t.write_dispatch_id`).
pub const WRITE_POINTER_OFFSET: usize = AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET;
/// Byte offset of the read pointer in a queue's pointers page (`amd_queue_t.read_dispatch_id`).
pub const READ_POINTER_OFFSET: usize = AMD_QUEUE_READ_DISPATCH_ID_OFFSET;
/// Byte offset of an SDMA queue's completion fence (a `u32`) in its pointers page.
pub const SDMA_FENCE_OFFSET: usize = 256;
/// Byte offset of the count of live producer objects (a `u32`) in a queue's pointers page.
pub(crate) const PRODUCERS_OFFSET: usize = 264;

/// What kind of queue to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum QueueType {
    /// PM4 compute queue.
    Compute,
    /// AQL compute queue.
    ComputeAql,
    /// SDMA queue on a PCIe engine the kernel picks.
    Sdma,
    /// SDMA queue on an XGMI engine the kernel picks.
    SdmaXgmi,
    /// SDMA queue on engine `0..num_sdma_engines + num_sdma_xgmi_engines` (KFD 1.17).
    SdmaEngine(u32),
}

impl QueueType {
    /// The parameter-level kind.
    #[must_use]
    pub const fn kind(self) -> QueueKind {
        match self {
            Self::Compute => QueueKind::Compute,
            Self::ComputeAql => QueueKind::ComputeAql,
            Self::Sdma => QueueKind::Sdma,
            Self::SdmaXgmi => QueueKind::SdmaXgmi,
            Self::SdmaEngine(_) => QueueKind::SdmaByEngineId,
        }
    }

    /// `KFD_IOC_QUEUE_TYPE_*`.
    #[must_use]
    pub const fn kfd_type(self) -> u32 {
        match self {
            Self::Compute => KFD_IOC_QUEUE_TYPE_COMPUTE,
            Self::ComputeAql => KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
            Self::Sdma => KFD_IOC_QUEUE_TYPE_SDMA,
            Self::SdmaXgmi => KFD_IOC_QUEUE_TYPE_SDMA_XGMI,
            Self::SdmaEngine(_) => KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID,
        }
    }

    /// Whether the queue is an SDMA queue.
    #[must_use]
    pub const fn is_sdma(self) -> bool {
        !self.kind().is_compute()
    }
}

/// The ring of a new queue.
#[derive(Debug)]
pub enum RingSpec<'a, M> {
    /// The library allocates the ring in system memory (at least a page; the size is rounded
    /// up to a page) and frees it with the queue. Producers are available.
    Allocate {
        /// Ring size in bytes (a power of two).
        size: u64,
    },
    /// The caller's memory, CPU-mapped (for example by the memory API). The ring starts at
    /// the mapping; producers are available when the mapping is exactly `size` bytes. The
    /// queue keeps a clone of the mapping while it lives. Producers publish with release
    /// stores, which order stores to system memory; a ring in write-combined device memory
    /// (VRAM) would also need a store fence before each header (ROCr's `sfence`), which the
    /// producers do not issue — keep producer rings in system memory.
    Mapped {
        /// The ring memory.
        mapping: &'a M,
        /// Ring size in bytes (a power of two, at most the mapping's length).
        size: u64,
    },
    /// A bare GPU address: the caller writes the ring itself (no producer object).
    Address {
        /// GPU virtual address of the ring.
        address: u64,
        /// Ring size in bytes.
        size: u64,
    },
}

/// Where the queue's read and write pointers live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueuePointers {
    /// In a page the library allocates (the `amd_queue_t` layout). Needed for producers.
    #[default]
    Library,
    /// At caller-chosen GPU addresses (for example inside the caller's own `amd_queue_t`); each
    /// must lie in the first page of a one-page GPU mapping, as amdkfd requires.
    Caller {
        /// Address of the 64-bit read pointer.
        read: u64,
        /// Address of the 64-bit write pointer.
        write: u64,
    },
}

/// Where the kernel reports a queue error (written into each context-save-area header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ErrorReporting {
    /// Address of a 64-bit word the kernel stores the exception mask into (typically the value
    /// of an exception signal), or 0.
    pub payload_address: u64,
    /// KFD event raised on a queue error, or 0.
    pub event_id: u32,
}

impl<M> Clone for RingSpec<'_, M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M> Copy for RingSpec<'_, M> {}

/// Parameters of [`Kfd::create_queue`].
#[derive(Debug)]
pub struct QueueDesc<'a, M> {
    /// User node id of the GPU.
    pub node: u32,
    /// The kind of queue.
    pub queue_type: QueueType,
    /// Queue percentage 0..=100 (0 creates the queue inactive).
    pub percentage: u32,
    /// Scheduling priority.
    pub priority: QueuePriority,
    /// The ring.
    pub ring: RingSpec<'a, M>,
    /// The read and write pointers.
    pub pointers: QueuePointers,
    /// Queue error reporting (compute queues with a context-save area).
    pub error: ErrorReporting,
}

impl<M> Clone for QueueDesc<'_, M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M> Copy for QueueDesc<'_, M> {}

impl<'a, M> QueueDesc<'a, M> {
    /// A queue of `queue_type` on `node` at 100 %, normal priority, with a library-allocated
    /// ring of `ring_size` bytes and library pointers.
    #[must_use]
    pub const fn new(node: u32, queue_type: QueueType, ring_size: u64) -> Self {
        QueueDesc {
            node,
            queue_type,
            percentage: 100,
            priority: QueuePriority::Normal,
            ring: RingSpec::Allocate { size: ring_size },
            pointers: QueuePointers::Library,
            error: ErrorReporting { payload_address: 0, event_id: 0 },
        }
    }

    /// The same with another ring.
    #[must_use]
    pub const fn with_ring(mut self, ring: RingSpec<'a, M>) -> Self {
        self.ring = ring;
        self
    }

    /// The same with another priority.
    #[must_use]
    pub const fn with_priority(mut self, priority: QueuePriority) -> Self {
        self.priority = priority;
        self
    }

    /// The same with another percentage.
    #[must_use]
    pub const fn with_percentage(mut self, percentage: u32) -> Self {
        self.percentage = percentage;
        self
    }
}

/// What a queue is, as created (and updated) — libhsakmt's `HsaQueueResource` and more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QueueInfo {
    /// The queue's handle.
    pub handle: QueueHandle,
    /// The kernel's queue id.
    pub queue_id: u32,
    /// User node id.
    pub node: u32,
    /// The node's gpu_id.
    pub gpu_id: u32,
    /// The kind of queue.
    pub queue_type: QueueType,
    /// The queue's own ring (the one it was created with).
    pub ring_address: u64,
    /// Its size in bytes.
    pub ring_size: u64,
    /// Whether the kernel currently has a ring and a non-zero percentage for the queue.
    pub active: bool,
    /// Address of the read pointer.
    pub read_pointer: u64,
    /// Address of the write pointer.
    pub write_pointer: u64,
    /// Address of the queue's doorbell.
    pub doorbell_address: u64,
    /// EOP buffer address (0 for none) and size.
    pub eop: (u64, u64),
    /// Context-save area address (0 for none).
    pub ctx_save_address: u64,
    /// Context-save sizes, for compute queues on CWSR-capable nodes.
    pub ctx_save_sizes: Option<ContextSaveSizes>,
    /// Current percentage.
    pub percentage: u32,
    /// Current priority.
    pub priority: QueuePriority,
    /// Bits of the CU mask last set (0: all CUs).
    pub cu_mask_bits: u32,
    /// The first GWS entry when GWS was allocated.
    pub gws: Option<u32>,
}

/// How [`Kfd::update_queue`] changes the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingUpdate {
    /// Keep the ring the kernel has now.
    Keep,
    /// The queue's own ring (re-enables a queue disabled with [`RingUpdate::Disable`]).
    Restore,
    /// A null ring: the queue stops fetching (libhsakmt's "update with NULL address").
    Disable,
    /// Another ring. Producer objects built earlier keep writing the queue's own ring.
    Replace {
        /// GPU address.
        address: u64,
        /// Size in bytes.
        size: u64,
    },
}

/// A compute queue's saved wave state (`hsaKmtGetQueueInfo`), read while it is disabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QueueWaveState {
    /// Address of the top of the saved control stack.
    pub control_stack_top: u64,
    /// Bytes of the control stack in use.
    pub control_stack_used: u32,
    /// Address of the user context-save area (after the control stack).
    pub user_context_save_area: u64,
    /// Bytes of the save area in use.
    pub save_area_used: u32,
    /// Address of the first context-save-area header.
    pub save_area_header: u64,
    /// Bits of the CU mask last set (0: all CUs).
    pub cu_mask_bits: u32,
}

/// The buffers the library allocated for one queue.
#[derive(Debug)]
struct Parts<M> {
    ring: Option<QueueBuffer<M>>,
    pointers: Option<QueueBuffer<M>>,
    eop: Option<QueueBuffer<M>>,
    cwsr: Option<QueueBuffer<M>>,
}

impl<M> Parts<M> {
    const fn new() -> Self {
        Parts { ring: None, pointers: None, eop: None, cwsr: None }
    }
}

impl<M: SharedMemory> Parts<M> {
    /// Whether a producer object of the queue is alive.
    fn has_producers(&self) -> bool {
        self.pointers
            .as_ref()
            .and_then(QueueBuffer::mapping)
            .is_some_and(|m| ProducerToken::count(m) > 0)
    }
}

/// One live queue.
#[derive(Debug)]
struct QueueRecord<M> {
    info: QueueInfo,
    gfx: GfxVersion,
    /// The ring the kernel has now (address, size).
    kernel_ring: (u64, u64),
    /// A caller's ring mapping ([`RingSpec::Mapped`]).
    user_ring: Option<M>,
    parts: Parts<M>,
    doorbell: M,
    doorbell_offset: usize,
}

impl<M: SharedMemory> QueueRecord<M> {
    /// A mapping that is exactly the queue's ring, when the library has one.
    fn ring_view(&self) -> Option<M> {
        let exact =
            |m: &M| m.addr() == self.info.ring_address && m.len() as u64 == self.info.ring_size;
        match (self.parts.ring.as_ref().and_then(QueueBuffer::mapping), &self.user_ring) {
            (Some(m), _) | (None, Some(m)) if exact(m) => Some(m.clone()),
            _ => None,
        }
    }

    /// What a producer writes through: the exact ring mapping and the mapping of the read and
    /// write pointers.
    ///
    /// # Errors
    /// [`QueueError::WrongQueueKind`] when the library has no exact mapping of either;
    /// [`QueueError::Ring`] ([`RingError::OutOfBounds`]) when the pointers mapping does not hold
    /// the read and write pointers and the producer count (the producers' invariant: they
    /// store there without checking again).
    fn producer_views(&self) -> Result<(M, M), QueueError> {
        let ring = self.ring_view().ok_or(QueueError::WrongQueueKind)?;
        let pointers = self
            .parts
            .pointers
            .as_ref()
            .and_then(QueueBuffer::mapping)
            .ok_or(QueueError::WrongQueueKind)?;
        let holds = |offset: usize, width: usize| {
            offset.checked_add(width).is_some_and(|end| end <= pointers.len())
        };
        if !(holds(READ_POINTER_OFFSET, 8)
            && holds(WRITE_POINTER_OFFSET, 8)
            && holds(PRODUCERS_OFFSET, 4))
        {
            return Err(QueueError::Ring(crate::queue::ring::RingError::OutOfBounds));
        }
        Ok((ring, pointers.clone()))
    }
}

/// The queue state of a [`Kfd`]: the table, the doorbell pages, and the buffers of destroyed
/// queues still to free.
pub(crate) struct QueueState<M> {
    table: Table<QueueRecord<M>, MAX_DEVICE_QUEUES>,
    doorbells: DoorbellPages<M>,
    orphans: [Option<MemoryHandle>; MAX_ORPHANED_BUFFERS],
}

impl<M: Clone> QueueState<M> {
    pub(crate) const fn new() -> Self {
        QueueState {
            table: Table::new(),
            doorbells: DoorbellPages::new(),
            orphans: [None; MAX_ORPHANED_BUFFERS],
        }
    }
}

impl From<TableError> for QueueError {
    fn from(e: TableError) -> Self {
        match e {
            TableError::Full => Self::TooManyQueues { capacity: MAX_DEVICE_QUEUES },
            TableError::Stale => Self::InvalidHandle,
        }
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// What the queue is.
    ///
    /// # Errors
    /// [`QueueError::InvalidHandle`].
    pub fn queue_info(&self, handle: QueueHandle) -> Result<QueueInfo, QueueError> {
        Ok(self.queues().lock().table.get(handle)?.info)
    }

    /// How many queues exist.
    pub fn queue_count(&self) -> usize {
        self.queues().lock().table.used()
    }

    /// Handles of the live queues, into `out`; returns how many were stored.
    pub fn queue_handles(&self, out: &mut [QueueHandle]) -> usize {
        self.queues().lock().table.live_handles(out)
    }

    /// Verifies the queue table (`O(MAX_DEVICE_QUEUES)`; for tests and debug sweeps): its slot
    /// accounting, that every live record carries its own handle, that no two queues share a
    /// kernel queue id, and that every buffer the library allocated for a queue is a live object
    /// of the memory manager starting at that address.
    ///
    /// # Errors
    /// The first [`Violation`](crate::memory::Violation) found.
    pub fn check_queue_invariants(&self) -> Result<(), crate::memory::Violation> {
        use crate::memory::Violation;
        let mut ids = [0u32; MAX_DEVICE_QUEUES];
        let mut buffers = [(0u32, 0u64); MAX_DEVICE_QUEUES * 4];
        let (mut n, mut b) = (0usize, 0usize);
        self.queues().lock().table.check(|h, r| {
            let slot = u32::try_from(h.index()).unwrap_or(u32::MAX);
            if r.info.handle != h || ids.iter().take(n).any(|id| *id == r.info.queue_id) {
                return Err(Violation::Duplicate { slot });
            }
            if let Some(id) = ids.get_mut(n) {
                *id = r.info.queue_id;
                n = n.saturating_add(1);
            }
            let parts = [&r.parts.ring, &r.parts.pointers, &r.parts.eop, &r.parts.cwsr];
            for p in parts.into_iter().flatten() {
                if let Some(e) = buffers.get_mut(b) {
                    *e = (slot, p.addr());
                    b = b.saturating_add(1);
                }
            }
            Ok(())
        })?;
        let orphans = self.queues().lock().orphans;
        let st = self.memory.lock();
        for &(slot, addr) in buffers.iter().take(b) {
            if st.find_named(addr).is_none() {
                return Err(Violation::Dangling { slot });
            }
        }
        for (i, h) in orphans.iter().enumerate() {
            if h.is_some_and(|h| st.objects.get(h).is_err()) {
                return Err(Violation::Dangling { slot: i as u32 });
            }
        }
        Ok(())
    }
}
