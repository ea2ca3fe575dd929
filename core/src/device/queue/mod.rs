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
//! Queues are named by [`QueueHandle`]s — a slot of a fixed table of [`MAX_QUEUES`] and the
//! slot's generation — never by pointers; a destroyed queue's handle is rejected with
//! [`QueueError::InvalidHandle`]. The table sits behind a spin lock held for bookkeeping only:
//! ioctls, allocations and mappings happen outside it.

mod backing;
mod doorbell;
mod error;
mod producer;
mod table;

use core::sync::atomic::Ordering;

use crate::platform::{Access, Ioctl, Platform, SharedMemory};
use crate::queue::aql::{INVALID_HEADER_WORD, PACKET_SIZE};
use crate::queue::params::{
    ContextSaveSizes, GfxVersion, KFD_MAX_CU_MASK_BITS, QueueKind, QueueNodeFacts, QueueParamError,
    QueuePriority, RING_BASE_ALIGN, context_save_sizes, doorbell_page_size, eop_buffer_size,
    validate_cu_mask, validate_ring, write_context_save_headers,
};
use crate::queue::ring::{
    AMD_QUEUE_READ_DISPATCH_ID_OFFSET, AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET, AqlProducer,
    AqlRingMemory, RingError, SharedAqlCells,
};
use crate::queue::sdma::{SdmaLimits, SdmaRing, SdmaRingMemory};
use crate::uapi::{
    KFD_IOC_QUEUE_TYPE_COMPUTE, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, KFD_IOC_QUEUE_TYPE_SDMA,
    KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID, KFD_IOC_QUEUE_TYPE_SDMA_XGMI,
    kfd_ioctl_alloc_queue_gws_args, kfd_ioctl_create_queue_args, kfd_ioctl_destroy_queue_args,
    kfd_ioctl_get_queue_wave_state_args, kfd_ioctl_set_cu_mask_args,
    kfd_ioctl_set_trap_handler_args, kfd_ioctl_update_queue_args,
};

use super::memory::MemoryStorage;
use super::{Error as DeviceError, Kfd, MapNodes};
use crate::error::Errno;
use crate::memory::objects::MemoryHandle;
use backing::{Placement, QueueBuffer, page_round};
use doorbell::{DoorbellMapping, DoorbellPage, DoorbellPages, doorbell_location};
use producer::ProducerToken;
use table::{Table, TableError};

pub use error::{Engine, QueueError};
pub use producer::{AqlQueue, Pm4Queue, SdmaCompletion, SdmaQueue, SdmaTicket, SingleAqlQueue};
pub use table::QueueHandle;

/// Capacity of a device's queue table (amdkfd allows 127 queues per GPU — 255 on gfx9.4.3+ —
/// and 1024 per process).
pub const MAX_QUEUES: usize = 256;

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

/// What queue creation needs from a node's topology.
#[derive(Debug, Clone, Copy)]
struct NodeFacts {
    node: u32,
    /// The CPU node nearest the GPU (system memory for the queue's buffers).
    host: Option<u32>,
    index: usize,
    gpu_id: u32,
    queue: QueueNodeFacts,
    /// PCIe and XGMI SDMA engines as the topology reports them (`None`: a kernel too old to
    /// print `num_sdma_engines` / `num_sdma_xgmi_engines`; the kernel knows its engines).
    sdma_engines: Option<u32>,
    xgmi_engines: Option<u32>,
    gws: u32,
}

impl NodeFacts {
    fn gfx(&self) -> GfxVersion {
        self.queue.gfx
    }
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
    /// [`QueueError::WrongQueueKind`] when the library has no exact mapping of either.
    fn producer_views(&self) -> Result<(M, M), QueueError> {
        let ring = self.ring_view().ok_or(QueueError::WrongQueueKind)?;
        let pointers = self
            .parts
            .pointers
            .as_ref()
            .and_then(QueueBuffer::mapping)
            .ok_or(QueueError::WrongQueueKind)?;
        Ok((ring, pointers.clone()))
    }
}

/// Buffers of destroyed queues the library keeps to free later (see the module docs); beyond
/// this many, a buffer stays with the memory manager until the last close.
pub const MAX_ORPHANED_BUFFERS: usize = 64;

/// The queue state of a [`Kfd`]: the table, the doorbell pages, and the buffers of destroyed
/// queues still to free.
pub(crate) struct QueueState<M> {
    table: Table<QueueRecord<M>, MAX_QUEUES>,
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

    /// Keeps a buffer to free later; `false` when there is no room.
    fn orphan(&mut self, handle: MemoryHandle) -> bool {
        match self.orphans.iter_mut().find(|o| o.is_none()) {
            Some(slot) => {
                *slot = Some(handle);
                true
            }
            None => false,
        }
    }
}

impl From<TableError> for QueueError {
    fn from(e: TableError) -> Self {
        match e {
            TableError::Full => Self::TooManyQueues { capacity: MAX_QUEUES },
            TableError::Stale => Self::InvalidHandle,
        }
    }
}

/// Marks every slot of an AQL ring unpublished (header `INVALID`, body zero) so the packet
/// processor never mistakes stale bytes for a packet.
fn init_aql_ring<M: SharedMemory>(ring: &M, size: u64) {
    let slots = (size / PACKET_SIZE as u64) as usize;
    let (d, q) = (ring.u32s(), ring.u64s());
    for slot in 0..slots {
        if let Some(words) = q.get(slot * 8 + 1..slot * 8 + 8) {
            for w in words {
                w.store(0, Ordering::Relaxed);
            }
        }
        if let Some(w) = d.get(slot * 16 + 1) {
            w.store(0, Ordering::Relaxed);
        }
        if let Some(h) = d.get(slot * 16) {
            h.store(INVALID_HEADER_WORD, Ordering::Release);
        }
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    fn node_facts(&self, node: u32) -> Result<NodeFacts, QueueError> {
        self.with_topology(|t| {
            let v = t.node_by_user_id(node).ok_or(QueueError::InvalidNode(node))?;
            let n = v.node();
            if !n.has_gpu() {
                return Err(QueueError::NotAGpu { node });
            }
            let gpu_id = n
                .gpu_id()
                .filter(|g| *g != 0)
                .ok_or(QueueError::IncompleteNode { node, what: "gpu_id" })?;
            let g = n.gfx().ok_or(QueueError::IncompleteNode { node, what: "gfx version" })?;
            let p = n.properties();
            let host = t.nearest_cpu(v.index()).and_then(|(i, _)| t.node(i)?.node().user_id());
            Ok(NodeFacts {
                node,
                host,
                index: v.index(),
                gpu_id,
                queue: QueueNodeFacts {
                    gfx: GfxVersion::new(g.major, g.minor, g.stepping),
                    simd_count: p.simd_count().unwrap_or(0),
                    simd_per_cu: p.simd_per_cu().unwrap_or(0),
                    num_xcc: p.num_xcc().unwrap_or(0),
                    array_count: p.array_count().unwrap_or(0),
                    simd_arrays_per_engine: p.simd_arrays_per_engine().unwrap_or(0),
                    lds_size_in_kb: p.lds_size_in_kb().unwrap_or(0),
                    max_waves_per_simd: p.max_waves_per_simd().unwrap_or(0),
                    cwsr_size: p.cwsr_size().unwrap_or(0),
                    ctl_stack_size: p.ctl_stack_size().unwrap_or(0),
                },
                sdma_engines: p.num_sdma_engines(),
                xgmi_engines: p.num_sdma_xgmi_engines(),
                gws: p.num_gws().unwrap_or(0),
            })
        })?
    }

    fn check_engine(&self, f: &NodeFacts, t: QueueType) -> Result<(), QueueError> {
        let node = f.node;
        match t {
            QueueType::Compute | QueueType::ComputeAql => {
                if f.queue.simd_count == 0 {
                    return Err(QueueError::NoEngine { node, engine: Engine::Compute });
                }
            }
            QueueType::Sdma if f.sdma_engines == Some(0) => {
                return Err(QueueError::NoEngine { node, engine: Engine::Sdma });
            }
            QueueType::SdmaXgmi if f.xgmi_engines == Some(0) => {
                return Err(QueueError::NoEngine { node, engine: Engine::SdmaXgmi });
            }
            QueueType::SdmaEngine(id) => {
                self.require_minor("SDMA queues on a chosen engine", 17)?;
                // KFD 1.17 prints both counts.
                let engines =
                    f.sdma_engines.unwrap_or(0).saturating_add(f.xgmi_engines.unwrap_or(0));
                if id >= engines {
                    return Err(QueueError::InvalidEngineId { engine_id: id, engines });
                }
            }
            QueueType::Sdma | QueueType::SdmaXgmi => {}
        }
        Ok(())
    }

    /// Frees a queue's buffers; a buffer that cannot be freed now (the kernel refuses, or a
    /// caller holds a view) is kept to be freed by [`Kfd::reclaim_queue_buffers`].
    fn free_parts(&self, parts: Parts<P::Mapping>) {
        for b in [parts.ring, parts.pointers, parts.eop, parts.cwsr].into_iter().flatten() {
            let handle = b.handle();
            if self.queue_buffer_free(b).is_err() {
                // Without room it stays with the memory manager until the last close.
                let _ = self.queues.lock().orphan(handle);
            }
        }
    }

    /// Frees the kept buffers of destroyed queues (those the kernel refused to free, or held by
    /// a view, when their queue went); the ones that still cannot be freed stay kept.
    fn reclaim_queue_buffers(&self) {
        let orphans = {
            let mut q = self.queues.lock();
            if q.orphans.iter().all(Option::is_none) {
                return;
            }
            core::mem::replace(&mut q.orphans, [None; MAX_ORPHANED_BUFFERS])
        };
        for handle in orphans.into_iter().flatten() {
            match self.free_handle(handle) {
                Ok(())
                | Err(DeviceError::Memory(
                    crate::memory::Error::StaleHandle | crate::memory::Error::InvalidHandle,
                )) => {}
                Err(_) => {
                    let _ = self.queues.lock().orphan(handle);
                }
            }
        }
    }

    /// The node's doorbell page, mapped at the first queue on it: a doorbell buffer mapped for
    /// the CPU at the page's mmap offset and on the GPU (libhsakmt's dGPU path), or — when the
    /// memory manager has no aperture for it — a plain mapping of `/dev/kfd` (the APU path).
    fn doorbell_page(&self, f: &NodeFacts, mmap_offset: u64) -> Result<P::Mapping, QueueError> {
        let fail = |error| QueueError::Memory { what: "doorbell page", error };
        if let Some(p) = self.queues.lock().doorbells.get(f.index, mmap_offset) {
            return p.mapping.view().cloned().ok_or(fail(DeviceError::Platform(Errno::EFAULT)));
        }
        let size = doorbell_page_size(f.gfx());
        let mapping = match self.alloc_doorbell(f.node, size, mmap_offset) {
            Ok(a) => {
                if let Err(e) = self.map_memory_to_gpu(a.addr, MapNodes::Only(&[f.node])) {
                    let _ = self.free(a);
                    return Err(fail(e));
                }
                DoorbellMapping::Buffer(a)
            }
            Err(DeviceError::Memory(crate::memory::Error::NotSupported)) => {
                let m = self
                    .platform()
                    .map_kfd(mmap_offset, size, None, Access::ReadWrite)
                    .map_err(|e| fail(DeviceError::Platform(e)))?;
                DoorbellMapping::Plain(m)
            }
            Err(e) => return Err(fail(e)),
        };
        let page = DoorbellPage { mmap_offset, mapping };
        let (view, lost) = self.queues.lock().doorbells.insert(f.index, page);
        if let Some(DoorbellMapping::Buffer(a)) = lost {
            // Another thread mapped the page first (or an old one was left): free ours.
            let _ = self.free(a);
        }
        view.ok_or(QueueError::IncompleteNode { node: f.node, what: "node index" })
    }

    /// Creates a queue (`hsaKmtCreateQueueExt`): checks the node and the parameters the way
    /// the kernel will, allocates the queue's buffers, issues `AMDKFD_IOC_CREATE_QUEUE` and
    /// maps the node's doorbell page (once per node).
    ///
    /// # Errors
    /// [`QueueError::InvalidNode`], [`QueueError::NotAGpu`] for a CPU node,
    /// [`QueueError::NoEngine`] / [`QueueError::InvalidEngineId`] for SDMA engines the node
    /// reports it lacks (a topology without the engine counts leaves it to the kernel, as
    /// libhsakmt does), [`QueueError::Param`] for a bad ring, [`QueueError::InvalidPercentage`],
    /// [`QueueError::RingOutsideMapping`], [`QueueError::TooManyQueues`],
    /// [`QueueError::Memory`] when a buffer or the doorbell page cannot be had,
    /// [`QueueError::Device`] for a closed device, an old kernel (`SdmaEngine` needs KFD 1.17)
    /// or the kernel's refusal (`EINVAL` for a ring that is not exactly a GPU mapping, `ENOSPC`
    /// for too many queues, `ENOMEM` when the engine has no free queue). Nothing is left
    /// allocated on error.
    pub fn create_queue(&self, desc: &QueueDesc<'_, P::Mapping>) -> Result<QueueInfo, QueueError> {
        self.check_open()?;
        self.reclaim_queue_buffers();
        let f = self.node_facts(desc.node)?;
        let kind = desc.queue_type.kind();
        self.check_engine(&f, desc.queue_type)?;
        if desc.percentage > 100 {
            return Err(QueueError::InvalidPercentage(desc.percentage));
        }
        match desc.ring {
            RingSpec::Allocate { size } => validate_ring(kind, RING_BASE_ALIGN, page_round(size))?,
            RingSpec::Mapped { mapping, size } => {
                validate_ring(kind, mapping.addr(), size)?;
                if (mapping.len() as u64) < size {
                    return Err(QueueError::RingOutsideMapping {
                        ring_size: size,
                        mapping_len: mapping.len() as u64,
                    });
                }
            }
            RingSpec::Address { address, size } => validate_ring(kind, address, size)?,
        }
        let ring_size = match desc.ring {
            RingSpec::Allocate { size } => page_round(size),
            RingSpec::Mapped { size, .. } | RingSpec::Address { size, .. } => size,
        };
        if ring_size > u64::from(u32::MAX) {
            return Err(QueueParamError::RingTooLarge.into());
        }
        let sizes = if kind.is_compute() { context_save_sizes(&f.queue)? } else { None };
        let handle = self.queues.lock().table.reserve()?;
        let mut parts = Parts::new();
        match self.create_in(handle, desc, &f, sizes, &mut parts) {
            Ok((info, rest)) => {
                let record = QueueRecord { info, parts, ..rest };
                match self.queues.lock().table.fill(handle, record) {
                    Ok(()) => Ok(info),
                    // The slot cannot have changed hands (it was reserved), but never leak.
                    Err(record) => {
                        self.free_parts(record.parts);
                        Err(QueueError::InvalidHandle)
                    }
                }
            }
            Err(e) => {
                self.free_parts(parts);
                self.queues.lock().table.release(handle);
                Err(e)
            }
        }
    }

    /// The allocation + ioctl part of [`Kfd::create_queue`]; buffers go into `parts` as they
    /// are allocated so the caller can free them on error.
    fn create_in(
        &self,
        handle: QueueHandle,
        desc: &QueueDesc<'_, P::Mapping>,
        f: &NodeFacts,
        sizes: Option<ContextSaveSizes>,
        parts: &mut Parts<P::Mapping>,
    ) -> Result<(QueueInfo, QueueRecord<P::Mapping>), QueueError> {
        let kind = desc.queue_type.kind();
        let gpu = f.gpu_id;
        let (node, host) = (f.node, f.host);
        let mut user_ring = None;
        let (ring_address, ring_size) = match desc.ring {
            RingSpec::Allocate { size } => {
                let b = self.queue_buffer_alloc(node, host, size, Placement::System, "ring")?;
                let r = (b.addr(), b.size());
                parts.ring = Some(b);
                r
            }
            RingSpec::Mapped { mapping, size } => {
                user_ring = Some(mapping.clone());
                (mapping.addr(), size)
            }
            RingSpec::Address { address, size } => (address, size),
        };
        let (read_pointer, write_pointer) = match desc.pointers {
            QueuePointers::Library => {
                let what = "pointers page";
                let b =
                    self.queue_buffer_alloc(node, host, 4096, Placement::SystemUncached, what)?;
                let base = b.addr();
                parts.pointers = Some(b);
                (base + READ_POINTER_OFFSET as u64, base + WRITE_POINTER_OFFSET as u64)
            }
            QueuePointers::Caller { read, write } => (read, write),
        };
        let eop_size = u64::from(eop_buffer_size(f.gfx(), kind));
        if eop_size > 0 {
            let b = self.queue_buffer_alloc(node, host, eop_size, Placement::Vram, "EOP buffer")?;
            parts.eop = Some(b);
        }
        if let Some(s) = sizes {
            let what = "context-save area";
            let b = self.queue_buffer_alloc(node, host, s.alloc_size(), Placement::System, what)?;
            let (event, payload) = (desc.error.event_id, desc.error.payload_address);
            let written = b.mapping().map_or(Err(Errno::EFAULT), |m| {
                write_context_save_headers(m, 0, &s, event, payload)
            });
            parts.cwsr = Some(b);
            written.map_err(|e| QueueError::Memory { what, error: DeviceError::Platform(e) })?;
        }
        if desc.queue_type == QueueType::ComputeAql {
            match (parts.ring.as_ref().and_then(QueueBuffer::mapping), &user_ring) {
                (Some(m), _) | (None, Some(m)) => init_aql_ring(m, ring_size),
                _ => {}
            }
        }
        let (eop_address, eop_len) = parts.eop.as_ref().map_or((0, 0), |b| (b.addr(), eop_size));
        let ctx_address = parts.cwsr.as_ref().map_or(0, QueueBuffer::addr);
        let mut args = kfd_ioctl_create_queue_args {
            ring_base_address: ring_address,
            write_pointer_address: write_pointer,
            read_pointer_address: read_pointer,
            ring_size: u32::try_from(ring_size).unwrap_or(u32::MAX),
            gpu_id: gpu,
            queue_type: desc.queue_type.kfd_type(),
            queue_percentage: desc.percentage,
            queue_priority: desc.priority.kfd_priority(),
            eop_buffer_address: eop_address,
            eop_buffer_size: eop_len,
            ctx_save_restore_address: ctx_address,
            ctx_save_restore_size: sizes.map_or(0, |s| s.ctx_save_restore_size),
            ctl_stack_size: sizes.map_or(0, |s| s.ctl_stack_size),
            sdma_engine_id: match desc.queue_type {
                QueueType::SdmaEngine(id) => id,
                _ => 0,
            },
            ..Default::default()
        };
        self.ioctl(&mut Ioctl::CreateQueue(&mut args))?;
        let queue_id = args.queue_id;
        let loc = doorbell_location(f.gfx(), args.doorbell_offset, queue_id);
        let doorbell = match self.doorbell_page(f, loc.mmap_offset) {
            Ok(d) => d,
            Err(e) => {
                let mut d = kfd_ioctl_destroy_queue_args { queue_id, pad: 0 };
                let _ = self.ioctl(&mut Ioctl::DestroyQueue(&mut d));
                return Err(e);
            }
        };
        let info = QueueInfo {
            handle,
            queue_id,
            node: desc.node,
            gpu_id: gpu,
            queue_type: desc.queue_type,
            ring_address,
            ring_size,
            active: desc.percentage > 0 && ring_address != 0,
            read_pointer,
            write_pointer,
            doorbell_address: doorbell.addr() + loc.offset_in_page,
            eop: (eop_address, eop_len),
            ctx_save_address: ctx_address,
            ctx_save_sizes: sizes,
            percentage: desc.percentage,
            priority: desc.priority,
            cu_mask_bits: 0,
            gws: None,
        };
        let record = QueueRecord {
            info,
            gfx: f.gfx(),
            kernel_ring: (ring_address, ring_size),
            user_ring,
            parts: Parts::new(),
            doorbell,
            doorbell_offset: loc.offset_in_page as usize,
        };
        Ok((info, record))
    }

    /// Destroys a queue (`hsaKmtDestroyQueue`): `AMDKFD_IOC_DESTROY_QUEUE`, then frees the
    /// queue's buffers — a buffer the kernel refuses to free now is kept and freed at the next
    /// queue creation or destruction (or the last close), so the queue is destroyed all the
    /// same. The handle is invalid afterwards.
    ///
    /// # Errors
    /// [`QueueError::InvalidHandle`]; [`QueueError::Busy`] while a producer object of the
    /// queue is alive; [`QueueError::Device`] when the kernel refuses (the queue then stays) —
    /// except `ETIME`: the scheduler could not preempt the queue (a hang), and amdkfd destroys
    /// it anyway and resets the GPU (`pqm_destroy_queue` carries on after `-ETIME`), so the
    /// queue is gone (its buffers freed, the handle invalid) and the error says the GPU hung.
    pub fn destroy_queue(&self, handle: QueueHandle) -> Result<(), QueueError> {
        self.check_open()?;
        self.reclaim_queue_buffers();
        let record = {
            let mut q = self.queues.lock();
            if q.table.get(handle)?.parts.has_producers() {
                return Err(QueueError::Busy);
            }
            q.table.take(handle)?
        };
        let mut args = kfd_ioctl_destroy_queue_args { queue_id: record.info.queue_id, pad: 0 };
        if let Err(e) = self.ioctl(&mut Ioctl::DestroyQueue(&mut args)) {
            if matches!(e, DeviceError::Ioctl { errno: Errno::ETIME, .. }) {
                self.free_parts(record.parts);
                self.queues.lock().table.release(handle);
                return Err(e.into());
            }
            let mut q = self.queues.lock();
            if let Err(record) = q.table.fill(handle, record) {
                drop(q);
                self.free_parts(record.parts);
            }
            return Err(e.into());
        }
        self.free_parts(record.parts);
        self.queues.lock().table.release(handle);
        Ok(())
    }

    /// Changes a queue's percentage, priority and ring (`hsaKmtUpdateQueue`). A null ring
    /// ([`RingUpdate::Disable`]) or 0 % stops the queue fetching packets; restoring its ring
    /// and a non-zero percentage resumes it where it stopped.
    ///
    /// # Errors
    /// [`QueueError::InvalidHandle`], [`QueueError::InvalidPercentage`],
    /// [`QueueError::Param`] for a replacement ring, [`QueueError::Device`] (`EFAULT` when the
    /// new ring is not a GPU mapping). The queue is unchanged on error.
    pub fn update_queue(
        &self,
        handle: QueueHandle,
        percentage: u32,
        priority: QueuePriority,
        ring: RingUpdate,
    ) -> Result<(), QueueError> {
        self.check_open()?;
        if percentage > 100 {
            return Err(QueueError::InvalidPercentage(percentage));
        }
        let (queue_id, kind, own, current) = {
            let q = self.queues.lock();
            let r = q.table.get(handle)?;
            let own = (r.info.ring_address, r.info.ring_size);
            (r.info.queue_id, r.info.queue_type.kind(), own, r.kernel_ring)
        };
        let (address, size) = match ring {
            RingUpdate::Keep => current,
            RingUpdate::Restore => own,
            RingUpdate::Disable => (0, 0),
            RingUpdate::Replace { address, size } => {
                validate_ring(kind, address, size)?;
                (address, size)
            }
        };
        let mut args = kfd_ioctl_update_queue_args {
            ring_base_address: address,
            queue_id,
            ring_size: u32::try_from(size).unwrap_or(u32::MAX),
            queue_percentage: percentage,
            queue_priority: priority.kfd_priority(),
        };
        self.ioctl(&mut Ioctl::UpdateQueue(&mut args))?;
        let mut q = self.queues.lock();
        if let Ok(r) = q.table.get_mut(handle) {
            r.kernel_ring = (address, size);
            r.info.percentage = percentage;
            r.info.priority = priority;
            r.info.active = percentage > 0 && address != 0;
        }
        Ok(())
    }

    /// Restricts a queue to the CUs set in the first `count_bits` bits of `mask`
    /// (`hsaKmtSetQueueCUMask`).
    ///
    /// # Errors
    /// [`QueueError::Param`] when `count_bits` is not a non-zero multiple of 32 within
    /// [`KFD_MAX_CU_MASK_BITS`] and `mask`, when a bit names a CU the node lacks, or when no CU
    /// is left; [`QueueError::InvalidHandle`]; [`QueueError::Device`].
    pub fn set_queue_cu_mask(
        &self,
        handle: QueueHandle,
        count_bits: u32,
        mask: &[u32],
    ) -> Result<(), QueueError> {
        self.check_open()?;
        let (queue_id, node) = {
            let q = self.queues.lock();
            let r = q.table.get(handle)?;
            (r.info.queue_id, r.info.node)
        };
        let f = self.node_facts(node)?;
        validate_cu_mask(count_bits, mask, f.queue.cu_count())?;
        let words = mask.get(..(count_bits / 32) as usize).unwrap_or_default();
        let mut args =
            kfd_ioctl_set_cu_mask_args { queue_id, num_cu_mask: count_bits, ..Default::default() };
        self.ioctl(&mut Ioctl::SetCuMask { args: &mut args, mask: words })?;
        if let Ok(r) = self.queues.lock().table.get_mut(handle) {
            r.info.cu_mask_bits = count_bits.min(KFD_MAX_CU_MASK_BITS);
        }
        Ok(())
    }

    /// Gives a compute queue the node's global wave sync resources (`hsaKmtAllocQueueGWS`);
    /// returns the first GWS entry (always 0 on current kernels). One queue per process and
    /// device may hold them.
    ///
    /// # Errors
    /// [`QueueError::NoGws`] on a node without GWS, [`QueueError::WrongQueueKind`] for an SDMA
    /// queue, [`QueueError::InvalidHandle`], [`QueueError::Device`] (`EBUSY` when another
    /// queue holds them).
    pub fn alloc_queue_gws(&self, handle: QueueHandle, num_gws: u32) -> Result<u32, QueueError> {
        self.check_open()?;
        let (queue_id, node, sdma) = {
            let q = self.queues.lock();
            let r = q.table.get(handle)?;
            (r.info.queue_id, r.info.node, r.info.queue_type.is_sdma())
        };
        if sdma {
            return Err(QueueError::WrongQueueKind);
        }
        if self.node_facts(node)?.gws == 0 {
            return Err(QueueError::NoGws { node });
        }
        let mut args = kfd_ioctl_alloc_queue_gws_args { queue_id, num_gws, ..Default::default() };
        self.ioctl(&mut Ioctl::AllocQueueGws(&mut args))?;
        if let Ok(r) = self.queues.lock().table.get_mut(handle) {
            r.info.gws = (num_gws > 0).then_some(args.first_gws);
        }
        Ok(args.first_gws)
    }

    /// Reads a disabled compute queue's saved wave state (`hsaKmtGetQueueInfo`): the kernel
    /// copies the control stack into the context-save area and reports how much is in use.
    ///
    /// # Errors
    /// [`QueueError::NoContextSaveArea`], [`QueueError::InvalidHandle`],
    /// [`QueueError::Device`] (`EINVAL` while the queue is active).
    pub fn queue_wave_state(&self, handle: QueueHandle) -> Result<QueueWaveState, QueueError> {
        self.check_open()?;
        let info = self.queue_info(handle)?;
        let sizes = info.ctx_save_sizes.ok_or(QueueError::NoContextSaveArea)?;
        if info.ctx_save_address == 0 {
            return Err(QueueError::NoContextSaveArea);
        }
        let mut args = kfd_ioctl_get_queue_wave_state_args {
            ctl_stack_address: info.ctx_save_address,
            queue_id: info.queue_id,
            ..Default::default()
        };
        self.ioctl(&mut Ioctl::GetQueueWaveState(&mut args))?;
        let ctl = u64::from(sizes.ctl_stack_size);
        Ok(QueueWaveState {
            control_stack_top: info.ctx_save_address + ctl
                - u64::from(args.ctl_stack_used_size).min(ctl),
            control_stack_used: args.ctl_stack_used_size,
            user_context_save_area: info.ctx_save_address + ctl,
            save_area_used: args.save_area_used_size,
            save_area_header: info.ctx_save_address,
            cu_mask_bits: info.cu_mask_bits,
        })
    }

    /// Installs a trap handler for the process on a GPU node (`hsaKmtSetTrapHandler`): `tba`
    /// is the handler's code address, `tma` its buffer (the kernel takes no sizes).
    ///
    /// # Errors
    /// [`QueueError::InvalidNode`], [`QueueError::NotAGpu`], [`QueueError::Device`].
    pub fn set_trap_handler(&self, node: u32, tba: u64, tma: u64) -> Result<(), QueueError> {
        self.check_open()?;
        let f = self.node_facts(node)?;
        let mut args = kfd_ioctl_set_trap_handler_args {
            tba_addr: tba,
            tma_addr: tma,
            gpu_id: f.gpu_id,
            pad: 0,
        };
        self.ioctl(&mut Ioctl::SetTrapHandler(&mut args))?;
        Ok(())
    }

    /// What the queue is.
    ///
    /// # Errors
    /// [`QueueError::InvalidHandle`].
    pub fn queue_info(&self, handle: QueueHandle) -> Result<QueueInfo, QueueError> {
        Ok(self.queues.lock().table.get(handle)?.info)
    }

    /// How many queues exist.
    pub fn queue_count(&self) -> usize {
        self.queues.lock().table.used()
    }

    /// Handles of the live queues, into `out`; returns how many were stored.
    pub fn queue_handles(&self, out: &mut [QueueHandle]) -> usize {
        self.queues.lock().table.live_handles(out)
    }

    /// A multi-producer submitter for an AQL queue, holding clones of its ring, pointers and
    /// doorbell mappings.
    ///
    /// # Errors
    /// [`QueueError::InvalidHandle`]; [`QueueError::WrongQueueKind`] for a non-AQL queue or one
    /// whose ring or pointers the library has no exact mapping of.
    pub fn aql_queue(&self, handle: QueueHandle) -> Result<AqlQueue<P::Mapping>, QueueError> {
        let (mem, queue_id, token) = {
            let q = self.queues.lock();
            let r = q.table.get(handle)?;
            if r.info.queue_type != QueueType::ComputeAql {
                return Err(QueueError::WrongQueueKind);
            }
            let (ring, pointers) = r.producer_views()?;
            let mem = AqlRingMemory {
                ring,
                indices: pointers.clone(),
                write_index_offset: WRITE_POINTER_OFFSET,
                read_index_offset: READ_POINTER_OFFSET,
                doorbell: r.doorbell.clone(),
                doorbell_offset: r.doorbell_offset,
            };
            (mem, r.info.queue_id, ProducerToken::new(pointers))
        };
        let ring = AqlProducer::new(SharedAqlCells::new(mem)?)?;
        Ok(AqlQueue::new(handle, queue_id, ring, token))
    }

    /// The producer of a PM4 compute queue.
    ///
    /// # Errors
    /// [`QueueError::InvalidHandle`]; [`QueueError::WrongQueueKind`] for another kind or one
    /// whose ring or pointers the library has no exact mapping of; [`QueueError::Ring`] for a
    /// doorbell not 8-aligned ([`RingError::Misaligned`]: the 32-bit doorbells before gfx9)
    /// or outside its page ([`RingError::OutOfBounds`]).
    pub fn pm4_queue(&self, handle: QueueHandle) -> Result<Pm4Queue<P::Mapping>, QueueError> {
        let q = self.queues.lock();
        let r = q.table.get(handle)?;
        if r.info.queue_type != QueueType::Compute {
            return Err(QueueError::WrongQueueKind);
        }
        // The doorbell invariant of `SharedMemory::ring_doorbell64`, checked once here as the
        // AQL and SDMA producers check it when they are built.
        if !r.doorbell_offset.is_multiple_of(8) {
            return Err(QueueError::Ring(RingError::Misaligned));
        }
        if r.doorbell_offset.checked_add(8).is_none_or(|end| end > r.doorbell.len()) {
            return Err(QueueError::Ring(RingError::OutOfBounds));
        }
        let (ring, pointers) = r.producer_views()?;
        Ok(Pm4Queue::new(
            handle,
            r.info.queue_id,
            ring,
            pointers,
            READ_POINTER_OFFSET,
            WRITE_POINTER_OFFSET,
            r.doorbell.clone(),
            r.doorbell_offset,
        ))
    }

    /// The producer of an SDMA queue, with its copy API.
    ///
    /// # Errors
    /// [`QueueError::InvalidHandle`]; [`QueueError::WrongQueueKind`] for a compute queue or one
    /// whose ring or pointers the library has no exact mapping of; [`QueueError::Sdma`] for a
    /// gfx version without an SDMA v4+ engine.
    pub fn sdma_queue(&self, handle: QueueHandle) -> Result<SdmaQueue<P::Mapping>, QueueError> {
        let (mem, gfx, queue_id) = {
            let q = self.queues.lock();
            let r = q.table.get(handle)?;
            if !r.info.queue_type.is_sdma() {
                return Err(QueueError::WrongQueueKind);
            }
            let (ring, pointers) = r.producer_views()?;
            let mem = SdmaRingMemory {
                ring,
                pointers,
                rptr_offset: READ_POINTER_OFFSET,
                wptr_offset: WRITE_POINTER_OFFSET,
                doorbell: r.doorbell.clone(),
                doorbell_offset: r.doorbell_offset,
            };
            (mem, r.gfx, r.info.queue_id)
        };
        let limits = SdmaLimits::for_gfx(gfx.major, gfx.minor, gfx.stepping)?;
        let fence = mem.pointers.clone();
        let ring = SdmaRing::new(mem, limits)?;
        Ok(SdmaQueue::new(handle, queue_id, ring, fence, SDMA_FENCE_OFFSET))
    }

    /// Verifies the queue table (`O(MAX_QUEUES)`; for tests and debug sweeps): its slot
    /// accounting, that every live record carries its own handle, that no two queues share a
    /// kernel queue id, and that every buffer the library allocated for a queue is a live object
    /// of the memory manager starting at that address.
    ///
    /// # Errors
    /// The first [`Violation`](crate::memory::Violation) found.
    pub fn check_queue_invariants(&self) -> Result<(), crate::memory::Violation> {
        use crate::memory::Violation;
        let mut ids = [0u32; MAX_QUEUES];
        let mut buffers = [(0u32, 0u64); MAX_QUEUES * 4];
        let (mut n, mut b) = (0usize, 0usize);
        self.queues.lock().table.check(|h, r| {
            let slot = u32::try_from(h.index()).unwrap_or(u32::MAX);
            if r.info.handle != h || ids.iter().take(n).any(|id| *id == r.info.queue_id) {
                return Err(Violation::Duplicate { slot });
            }
            if let Some(id) = ids.get_mut(n) {
                *id = r.info.queue_id;
                n += 1;
            }
            let parts = [&r.parts.ring, &r.parts.pointers, &r.parts.eop, &r.parts.cwsr];
            for p in parts.into_iter().flatten() {
                if let Some(e) = buffers.get_mut(b) {
                    *e = (slot, p.addr());
                    b += 1;
                }
            }
            Ok(())
        })?;
        let orphans = self.queues.lock().orphans;
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

    /// Destroys every queue and forgets the doorbell pages (the last close of the device).
    /// Buffers a caller still has views of stay mapped until those views go.
    pub(crate) fn teardown_queues(&self) {
        let mut handles = [QueueHandle::from_raw(0); MAX_QUEUES];
        let n = self.queues.lock().table.live_handles(&mut handles);
        for h in handles.iter().take(n) {
            let record = match self.queues.lock().table.take(*h) {
                Ok(r) => r,
                Err(_) => continue,
            };
            let mut args = kfd_ioctl_destroy_queue_args { queue_id: record.info.queue_id, pad: 0 };
            let _ = self.raw_ioctl(&mut Ioctl::DestroyQueue(&mut args));
            self.free_parts(record.parts);
            self.queues.lock().table.release(*h);
        }
        self.reclaim_queue_buffers();
        self.queues.lock().orphans = [None; MAX_ORPHANED_BUFFERS];
        let pages = self.queues.lock().doorbells.take_all();
        for p in pages.into_iter().flatten() {
            if let DoorbellMapping::Buffer(a) = p.mapping {
                let _ = self.free(a);
            }
        }
    }

    /// Forgets every queue without telling the kernel or touching their memory (a forked
    /// child's view of its parent's queues, which are not its own; their memory was not
    /// inherited, so every view of it is leaked rather than dropped — see
    /// `forget_parent_memory`).
    pub(crate) fn forget_queues(&self) {
        let mut q = self.queues.lock();
        q.table.drain(core::mem::forget);
        for page in q.doorbells.take_all() {
            core::mem::forget(page);
        }
        q.orphans = [None; MAX_ORPHANED_BUFFERS];
    }
}
