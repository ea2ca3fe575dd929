//! Memory operations of [`Kfd`]: libhsakmt's `hsaKmtAllocMemory*`, `hsaKmtFreeMemory`,
//! `hsaKmtMapMemoryToGPU*`, `hsaKmtRegisterMemory*`, `hsaKmtQueryPointerInfo`, dma-buf export
//! and import, SVM attributes, XNACK mode, scratch backing and memory policy — over the
//! bookkeeping of [`crate::memory`].
//!
//! # Node ids and gpu_ids
//! Every node id in this API is a topology user node id (libhsakmt's node ids: the position
//! among accessible nodes, [`Node::user_id`](crate::topology::Node::user_id)). The kernel takes
//! gpu_ids; the translation happens inside.
//!
//! # Locking
//! The memory state sits behind one `spin` lock, held only for bookkeeping. An operation takes
//! it to plan (choose an aperture, reserve an address range, mark the object busy), releases it
//! for the ioctl, and takes it again to record the outcome — or to undo the plan when the kernel
//! refused. An object with an ioctl in flight is *busy*: other operations on it fail with
//! [`memory::Error::Busy`](crate::memory::Error::Busy) instead of waiting.
//!
//! A free of memory the recycle cache may keep records its outcome without that second lock
//! round trip: it publishes its completion in an atomic beside the lock, and the next thread to
//! take the lock records it first (see `pending`). Every later operation therefore sees the
//! memory freed, as if the free had recorded it itself.
//!
//! # The recycle cache
//! Freeing an allocation made by [`Kfd::alloc_memory`] (device, GTT, paged host memory or an
//! address-only range; not scratch, not registered, imported or doorbell/MMIO memory) frees
//! its kernel buffers and CPU view as always, but may keep its *bookkeeping* for the next
//! allocation of the same shape — the same node, size, alignment and flags: the address range
//! stays reserved in its aperture and the object stays in the table, *retired* (invisible to
//! every lookup, every handle of it stale; see [`crate::memory::objects`]). The next such
//! allocation takes both in `O(1)` — no aperture search, no index update, not even the
//! placement rules (the shape's plan is kept with it) — and the kernel still sees exactly its
//! `ALLOC_MEMORY_OF_GPU` (and, for host-visible memory, the CPU mapping).
//!
//! The cache holds at most [`RECYCLE_DEPTH`] allocations per shape, [`RECYCLE_SHAPES`] shapes
//! and [`RECYCLE_CAPACITY`] allocations in all ([`crate::memory::recycle`]). It gives its
//! allocations back for good (`O(1)` bookkeeping each, no system call) whenever an address range
//! cannot be found otherwise (no space, no block descriptor, or a fixed address inside a cached
//! range) — before a slab aperture grows —, whenever an object slot is needed, one at a time
//! when a new shape needs a bin, on [`Kfd::trim_memory`], and on the last close.
//! [`MemoryUsage::recycled`] counts them; [`MemoryUsage::va_used`] and
//! [`MemoryUsage::va_live`] leave them out.
//!
//! # CPU access
//! CPU mappings are the platform's [`SharedMemory`](crate::platform::SharedMemory) values. The
//! library keeps one clone per object and hands out more ([`Allocation::mapping`],
//! [`Kfd::cpu_mapping`]); it refuses to free memory while a caller still holds a clone
//! ([`memory::Error::MappingInUse`](crate::memory::Error::MappingInUse)), so no view outlives its
//! memory.
//!
//! # For other parts of the library
//! - Queue memory (rings, EOP buffers, context-save areas, queue descriptors): allocate with
//!   [`Kfd::alloc_memory`] (`NON_PAGED | HOST_ACCESS` host memory, or VRAM on the queue's node),
//!   map with [`Kfd::map_memory_to_gpu`], free with [`Kfd::free`].
//! - The event page: `alloc_memory(cpu_node, 32 KiB, NON_PAGED | HOST_ACCESS | UNCACHED)`,
//!   `map_memory_to_gpu(addr, MapNodes::All)`, and pass [`Allocation::kfd_handle`] (or
//!   [`Kfd::kfd_handle`]) to the first `CREATE_EVENT`.
//! - Doorbells: [`Kfd::alloc_doorbell`].
//!
//! # Deliberate differences from libhsakmt
//! - Freeing memory that is still GPU-mapped unmaps it first (the kernel would refuse the free
//!   with `EBUSY`, which libhsakmt reports as a generic error).
//! - The address range of freed memory may stay reserved (the recycle cache) and is then handed
//!   out again to the next allocation of the same shape (libhsakmt releases it at once, and
//!   first-fit may or may not hand it out again).
//! - Freeing or unmapping an address no object starts at is an error
//!   ([`memory::Error::UnknownAddress`](crate::memory::Error::UnknownAddress)); libhsakmt reports
//!   success when the SVM API exists.
//! - Non-host-visible device memory gets no CPU mapping at all (libhsakmt maps it `PROT_NONE`,
//!   one more system call per allocation).
//! - User memory is registered as user-pointer buffers on every kernel (libhsakmt prefers SVM
//!   attributes when the SVM API exists).
//! - Closing the device while a caller holds a CPU view fails
//!   ([`memory::Error::MappingInUse`](crate::memory::Error::MappingInUse)) instead of leaving a
//!   view over released address space.
//!
//! # Not supported
//! APU system memory from plain `mmap` (libhsakmt's CPUVM aperture) and the private GPUVM apertures
//! of pre-gfx9 APUs with non-canonical GPUVM
//! ([`memory::Error::NotSupported`](crate::memory::Error::NotSupported)); `HSA_ZFB`; the
//! out-of-tree IPC ioctls (`hsaKmtShareMemory`); SVM-attribute registration of user memory.
//!
//! # Files
//! - `state`: the memory manager's tables and storage; `init`: their set-up at open and
//!   teardown at close; `pending`: frees recorded by the next lock holder.
//! - `alloc` and `free`: allocation and freeing, with the recycle cache.
//! - `map`, `register`, `dmabuf`, `svm`: mapping on GPUs, registering user memory, dma-buf
//!   export and import, SVM attributes and XNACK mode.
//! - `kernel`: what comes straight from the kernel (available VRAM, memory policy, doorbell and
//!   MMIO pages).
//! - `query`: what the library knows about addresses, objects and its own usage.

mod alloc;
mod dmabuf;
mod free;
mod heaps;
mod init;
mod kernel;
mod map;
pub(crate) mod pending;
mod query;
mod register;
mod scratch;
pub(crate) mod state;
mod svm;

pub use dmabuf::{DmaBufExport, IMAGE_ALIGN, ImportedBuffer};
pub use heaps::{Heap, HeapKind, NodeHeaps, STATIC_HEAPS};
pub use query::{MemoryUsage, NodeApertures, PointerInfo, PointerKind};
pub use state::{
    DEFAULT_MEMORY_OBJECTS, Inline, MemoryPayload, MemorySettings, MemoryStorage, MemoryTables,
    RECYCLE_CAPACITY, RECYCLE_DEPTH, RECYCLE_SHAPES, SLAB_SIZE, SvmMode, VaArray,
};

use crate::memory::Violation;
use crate::memory::objects::MemoryHandle;
use crate::platform::Platform;

use super::{Error, Kfd};
use state::SvmMode as Mode;

/// One allocation: where it is, how to name it, and (for CPU-accessible memory) a view of it.
///
/// Drop [`Allocation::mapping`] (or pass the whole value to [`Kfd::free`]) before freeing: the
/// library refuses to free memory while a view is held.
#[derive(Debug)]
pub struct Allocation<M> {
    /// First address (GPU VA; also the CPU address of host-visible memory; a handle for
    /// `NoAddress` memory).
    pub addr: u64,
    /// Size in bytes (page rounded; twice the request for AQL queue memory, the ring being
    /// mapped twice).
    pub size: u64,
    /// The library's generation-checked name of the object.
    pub handle: MemoryHandle,
    /// The KFD buffer handle (for `CREATE_EVENT`'s event page, for instance); `None` for
    /// address-only and scratch reservations.
    pub kfd_handle: Option<u64>,
    /// The node recorded as the memory's owner.
    pub node: u32,
    /// A CPU view of the memory, when it has one.
    pub mapping: Option<M>,
}

/// Which GPUs to map memory on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MapNodes<'a> {
    /// libhsakmt's default: the nodes the memory is registered to; else, for memory owned by a
    /// GPU, that GPU and every GPU linked to it; else every GPU.
    Default,
    /// Every GPU.
    All,
    /// Exactly these GPU nodes: nodes mapped but not listed are unmapped (they must all be
    /// among the registered nodes when the memory is registered to nodes).
    Only(&'a [u32]),
}

impl<P: Platform, S: state::MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// Verifies the invariants of the object table and the apertures (`O(capacity)`; for tests).
    ///
    /// # Errors
    /// The first [`Violation`] found.
    pub fn check_memory_invariants(&self) -> Result<(), Violation> {
        let st = self.memory.lock();
        st.objects.check_invariants()?;
        st.check_recycled()?;
        if st.mode != Mode::None {
            st.default.check_invariants()?;
        }
        if st.mode == Mode::Reserved {
            st.coherent.check_invariants()?;
        }
        if st.handles_ready {
            st.handles.check_invariants()?;
        }
        Ok(())
    }
}
