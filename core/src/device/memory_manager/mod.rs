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
//! [`memory::Error::Busy`] instead of waiting.
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
//! CPU mappings are the platform's [`SharedMemory`] values. The library keeps one clone per
//! object and hands out more ([`Allocation::mapping`], [`Kfd::cpu_mapping`]); it refuses to
//! free memory while a caller still holds a clone ([`memory::Error::MappingInUse`]), so no view
//! outlives its memory.
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
//!   ([`memory::Error::UnknownAddress`]); libhsakmt reports success when the SVM API exists.
//! - Non-host-visible device memory gets no CPU mapping at all (libhsakmt maps it `PROT_NONE`,
//!   one more system call per allocation).
//! - User memory is registered as user-pointer buffers on every kernel (libhsakmt prefers SVM
//!   attributes when the SVM API exists).
//! - Closing the device while a caller holds a CPU view fails
//!   ([`memory::Error::MappingInUse`]) instead of leaving a view over released address space.
//!
//! # Not supported
//! APU system memory from plain `mmap` (libhsakmt's CPUVM aperture) and the private GPUVM
//! apertures of pre-gfx9 APUs with non-canonical GPUVM ([`memory::Error::NotSupported`]);
//! `HSA_ZFB`; the out-of-tree IPC ioctls (`hsaKmtShareMemory`); SVM-attribute registration of
//! user memory.

mod dmabuf;
mod init;
mod kernel;
mod map;
pub(crate) mod pending;
mod query;
mod register;
pub(crate) mod state;
mod svm;

pub use dmabuf::{DmaBufExport, IMAGE_ALIGN, ImportedBuffer};
pub use query::{PointerInfo, PointerKind};
pub use state::{
    DEFAULT_MEMORY_OBJECTS, Inline, MAX_NODES, MAX_RESERVATIONS, MemoryPayload, MemorySettings,
    MemoryStorage, MemoryTables, RECYCLE_CAPACITY, RECYCLE_DEPTH, RECYCLE_SHAPES, SLAB_SIZE,
    SvmMode, VaArray,
};

use crate::memory::aperture::{
    AllocRequest, ApertureRole, PlacementPolicy, PreferredNode, SCRATCH_ALIGN, choose_placement,
};
use crate::memory::kfd_flags::{BufferKind, alloc_flags};
use crate::memory::objects::{KfdHandles, MemoryHandle, MemoryKind, MemoryObject, RetiredObject};
use crate::memory::recycle::BinTag;
use crate::memory::{self, MemFlags, NodeSet, Violation};
use crate::platform::{Access, Ioctl, Platform, SharedMemory};
use crate::uapi::{
    kfd_ioctl_alloc_memory_of_gpu_args, kfd_ioctl_free_memory_of_gpu_args,
    kfd_ioctl_set_scratch_backing_va_args, since,
};

use super::{Error, Kfd};
use pending::Ticket;
use state::{AllocKey, ApertureId, MemoryState, SvmMode as Mode, page_align};

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

/// Counters of the memory manager, for tests and diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MemoryUsage {
    /// Live objects.
    pub objects: u32,
    /// Object capacity.
    pub capacity: u32,
    /// Allocations in flight (slots promised).
    pub pending: u32,
    /// Bytes allocated from the default, coherent and handle apertures (guard pages included).
    pub va_used: [u64; 3],
    /// Live allocations in the default, coherent and handle apertures.
    pub va_live: [u32; 3],
    /// Address ranges reserved from the platform and kept.
    pub reservations: u32,
    /// How the SVM apertures are set up.
    pub mode: SvmMode,
    /// Freed allocations whose address range and object slot the recycle cache keeps for the
    /// next allocation of the same shape (not counted in `objects`, `va_used`, `va_live`; see
    /// [`Kfd::trim_memory`]).
    pub recycled: u32,
}

/// What an allocation needs from the kernel, decided under the lock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AllocPlan {
    kind: MemoryKind,
    buffer: Option<BufferKind>,
    va: (ApertureId, memory::aperture::ApertureAllocation),
    /// Size of the CPU mapping (the request, page rounded).
    cpu_size: u64,
    ioc_flags: u32,
    gpu_id: u32,
    render_fd: u32,
    /// The node recorded as owner.
    node: u32,
    /// The GPU node for scratch memory.
    gpu_node: u32,
    flags: MemFlags,
    /// Map the buffer through the render node for the CPU.
    cpu_map: bool,
    /// The retired object (with its address range) this allocation reuses.
    reuse: Option<RetiredObject>,
    /// The recycle-cache bin of the request's shape.
    tag: Option<BinTag>,
}

impl AllocPlan {
    /// Rewrites a retired object of this plan's shape as this allocation's. Everything the
    /// shape decides — kind, flags, owner, GPU, address range, recycle bin — is already the
    /// plan's (an object only ever waits in the bin of the shape it was allocated for, and a
    /// bin's plan holds for its whole life); the rest is set afresh.
    #[inline]
    fn refill<M>(
        &self,
        o: &mut MemoryObject<state::MemoryPayload<M>>,
        handles: KfdHandles,
        mmap_offset: u64,
        mapping: Option<M>,
    ) {
        debug_assert!(
            o.kind == self.kind
                && o.flags == self.flags
                && o.node == self.node
                && o.payload.gpu_id == self.gpu_id
                && o.payload.va == Some(self.va)
                && o.payload.recycle == self.tag
                && !o.payload.imported,
            "a retired object is reused only for its own shape"
        );
        o.kfd_handles = handles;
        o.mmap_offset = mmap_offset;
        o.registered_nodes = NodeSet::EMPTY;
        o.mapped_nodes = NodeSet::EMPTY;
        o.registration_count = 0;
        o.mapping_count = 0;
        o.user_data = 0;
        o.payload.mapping = mapping;
        o.payload.busy = false;
        o.payload.view_out = false;
    }

    /// Object size (the whole address range, page rounded).
    const fn size(&self) -> u64 {
        self.va.1.size
    }

    /// `va_addr` of `ALLOC_MEMORY_OF_GPU` (0 for `NoAddress` memory).
    const fn ioc_va(&self) -> u64 {
        match self.va.0 {
            ApertureId::Handles => 0,
            _ => self.va.1.addr,
        }
    }
}

/// Why planning stopped.
enum PlanStop {
    Fail(memory::Error),
    /// The slab aperture needs another slab: of at least `size` bytes, or exactly at `at`.
    NeedSlab {
        size: u64,
        at: Option<u64>,
    },
}

impl From<memory::Error> for PlanStop {
    fn from(e: memory::Error) -> Self {
        Self::Fail(e)
    }
}

/// The object a release names.
#[derive(Debug, Clone, Copy)]
pub(super) enum Target {
    /// The object starting at this address (or user memory registered at it).
    Address(u64),
    /// The object this handle names.
    Handle(MemoryHandle),
}

/// What a release decided under the lock.
enum Release<M> {
    /// One registration of several was dropped; nothing else to do.
    Counted,
    /// The object is busy now; unmap `mapped`, free `buffers`, forget it.
    Destroy { handle: MemoryHandle, buffers: KfdHandles, mapped: NodeSet },
    /// As `Destroy`, but the object's CPU view (`view`) was taken out and the free is pending:
    /// unmap, free the buffers, drop the view and signal completion (see
    /// [`pending::MemoryLock`]).
    Pending {
        handle: MemoryHandle,
        free: Ticket,
        buffers: KfdHandles,
        mapped: NodeSet,
        view: Option<M>,
    },
}

/// How many times an allocation grows the slab aperture before giving up.
const SLAB_ATTEMPTS: u32 = 4;

impl<M, S: state::MemoryStorage<M>> MemoryState<M, S> {
    /// Validates a request, chooses where it goes and reserves its address range and object
    /// slot (libhsakmt `hsaKmtAllocMemoryAlign` → `fmm.c`).
    fn plan_alloc(
        &mut self,
        node: u32,
        size: u64,
        align: u64,
        flags: MemFlags,
        fixed: Option<u64>,
    ) -> Result<AllocPlan, PlanStop> {
        let key = AllocKey { size, align, node, flags };
        let (is_gpu, svm, scratch_busy) = {
            let info = self.node(node)?;
            (info.is_gpu() && self.gpus.contains(node), info.svm, info.scratch_backing.is_some())
        };
        let req = AllocRequest {
            size,
            align,
            flags,
            fixed_address: fixed.filter(|a| *a != 0),
            node: if is_gpu { PreferredNode::Gpu { svm_needed: svm } } else { PreferredNode::Cpu },
        };
        let policy = PlacementPolicy {
            is_dgpu: self.is_dgpu,
            zfb: false,
            userptr_for_paged_mem: self.settings.userptr_for_paged_mem,
        };
        let p = choose_placement(&req, &policy)?;
        let cpu_size = page_align(size).ok_or(memory::Error::SizeOverflow)?;
        let svm_ready = self.mode != Mode::None;
        let (aperture, align) = match p.aperture {
            ApertureRole::SvmDefault if svm_ready => (ApertureId::Default, p.align),
            ApertureRole::SvmCoherent if self.mode == Mode::Reserved => {
                (ApertureId::Coherent, p.align)
            }
            ApertureRole::SvmCoherent if svm_ready => (ApertureId::Default, p.align),
            ApertureRole::MemHandle if self.handles_ready => (ApertureId::Handles, p.align),
            ApertureRole::ScratchBacking if svm_ready => (ApertureId::Default, Some(SCRATCH_ALIGN)),
            _ => return Err(memory::Error::NotSupported.into()),
        };
        // The GPU whose buffer this is: the node's own, or for host memory requested from a
        // CPU node the first GPU (libhsakmt's `first_gpu_mem`).
        let gpu_node = if is_gpu {
            node
        } else {
            match self.first_gpu() {
                Some(g) => g,
                None => return Err(memory::Error::NotAGpu { node }.into()),
            }
        };
        let (gpu_id, render_fd) = {
            let gpu = self.gpu(gpu_node)?;
            (gpu.gpu_id, gpu.render_fd)
        };
        let (buffer, record_node, cpu_map) = match p.kind {
            MemoryKind::Vram => (
                Some(BufferKind::Vram),
                node,
                p.flags.contains(MemFlags::HOST_ACCESS) && !p.flags.contains(MemFlags::NO_ADDRESS),
            ),
            MemoryKind::HostGtt => (
                Some(BufferKind::Gtt),
                if p.flags.contains(MemFlags::GTT_ACCESS) { 0 } else { node },
                p.flags.contains(MemFlags::HOST_ACCESS),
            ),
            MemoryKind::HostUserptr => (Some(BufferKind::Userptr), node, false),
            MemoryKind::Scratch => {
                if !is_gpu {
                    return Err(memory::Error::NotAGpu { node }.into());
                }
                if scratch_busy {
                    return Err(memory::Error::ScratchInUse { node }.into());
                }
                (None, node, false)
            }
            MemoryKind::ReservedAddress => (None, 0, false),
            _ => return Err(memory::Error::NotSupported.into()),
        };
        self.promise_slot()?;
        let slabs = matches!(
            self.aperture_mut(aperture).config().source,
            memory::aperture::VaSource::Slabs { .. }
        );
        let alloc = match self.allocate_va(aperture, p.va_size, align, p.fixed_address) {
            Ok(a) => a,
            Err(e) => {
                self.keep_promise();
                return Err(match e {
                    memory::Error::OutOfSpace { needed } if slabs && p.fixed_address.is_none() => {
                        PlanStop::NeedSlab { size: needed, at: None }
                    }
                    memory::Error::OutsideRange { addr } if slabs => {
                        PlanStop::NeedSlab { size: p.va_size, at: Some(addr) }
                    }
                    e => PlanStop::Fail(e),
                });
            }
        };
        let buffer_flags =
            buffer.map_or(0, |b| alloc_flags(b, p.flags, self.settings.disable_cache));
        let mut plan = AllocPlan {
            kind: p.kind,
            buffer,
            va: (aperture, alloc),
            cpu_size,
            ioc_flags: buffer_flags,
            gpu_id,
            render_fd,
            node: record_node,
            gpu_node,
            flags: p.flags,
            cpu_map,
            reuse: None,
            tag: None,
        };
        // The plan depends only on the request and on what open set up, so it serves every
        // later request of the same shape: give the shape a recycle bin.
        if p.fixed_address.is_none() && fixed.is_none() && recyclable(p.kind) {
            let (tag, evicted) = self.recycle.tag(&key, || plan);
            if let Some(r) = evicted {
                self.discard_retired(r);
            }
            plan.tag = tag;
        }
        Ok(plan)
    }

    /// The plan of a request served from the recycle cache: the shape's plan, with the address
    /// range of a freed allocation of that shape (whose retired object is now claimed).
    #[inline(always)]
    fn reuse_plan(&mut self, key: &AllocKey) -> Option<AllocPlan> {
        let (plan, tag, r) = self.recycle.take(key)?;
        match self.objects.retired(r).ok().and_then(|o| o.payload.va) {
            Some(va) => {
                let plan = AllocPlan { va, reuse: Some(r), tag: Some(tag), ..*plan };
                self.claimed += 1;
                Some(plan)
            }
            None => {
                // Not reachable: cached objects keep their range (checked by the invariants).
                self.discard_retired(r);
                None
            }
        }
    }
}

/// Whether freed allocations of this kind may wait in the recycle cache: memory from
/// [`Kfd::alloc_memory`] that belongs to no other table (scratch backing is also a node's).
const fn recyclable(kind: MemoryKind) -> bool {
    matches!(
        kind,
        MemoryKind::Vram
            | MemoryKind::HostGtt
            | MemoryKind::HostUserptr
            | MemoryKind::ReservedAddress
    )
}

/// What [`MemoryState::retire_freed`] did with a freed object.
enum Retired<M> {
    /// It waits in the recycle cache.
    Cached,
    /// It is retired and claimed; drop its CPU view (outside the lock), then cache it.
    DropView(M, BinTag, RetiredObject),
    /// It cannot be cached: remove it.
    No,
}

impl<M, S: state::MemoryStorage<M>> MemoryState<M, S> {
    /// Retires an object whose buffers are freed into the recycle cache, if its shape's bin
    /// can take it (its handle becomes stale and every lookup misses it at once).
    fn retire_freed(&mut self, handle: MemoryHandle) -> Retired<M> {
        let Ok(o) = self.objects.get(handle) else { return Retired::No };
        let Some(tag) = o.payload.recycle else { return Retired::No };
        if o.payload.va.is_none() || !self.recycle.can_put(tag) {
            return Retired::No;
        }
        let Ok(r) = self.objects.retire(handle) else { return Retired::No };
        match self.objects.retired_mut(r).ok().and_then(|o| o.payload.mapping.take()) {
            None => {
                self.recycle_or_discard(Some(tag), r);
                Retired::Cached
            }
            Some(view) => {
                self.claimed += 1;
                Retired::DropView(view, tag, r)
            }
        }
    }
}

impl<M: SharedMemory, S: state::MemoryStorage<M>> MemoryState<M, S> {
    /// Resolves a release's object and decides it in one go (libhsakmt `__fmm_release`):
    /// registered user memory held several times only drops a count; anything else is marked
    /// busy for destruction, unless a caller still holds a CPU view of it.
    #[inline]
    fn begin_release(&mut self, target: Target) -> Result<Release<M>, memory::Error> {
        let handle = match target {
            Target::Handle(h) => h,
            Target::Address(addr) => {
                self.find_named(addr).ok_or(memory::Error::UnknownAddress { addr })?
            }
        };
        let o = self.objects.get_mut(handle)?;
        let addr = o.start();
        if o.payload.busy {
            return Err(memory::Error::Busy { addr });
        }
        if o.kind == MemoryKind::RegisteredUser && o.registration_count > 1 {
            o.drop_registration()?;
            return Ok(Release::Counted);
        }
        if o.payload.mapping.as_ref().is_some_and(SharedMemory::is_shared) {
            return Err(memory::Error::MappingInUse { addr });
        }
        o.payload.busy = true;
        let (buffers, mapped) = (o.kfd_handles, o.mapped_nodes);
        // Allocations the recycle cache may keep complete their free without the lock.
        if o.payload.recycle.is_some()
            && let Some(free) = self.pending_frees.begin(handle)
        {
            let view = o.payload.mapping.take();
            o.payload.view_out = view.is_some();
            return Ok(Release::Pending { handle, free, buffers, mapped, view });
        }
        Ok(Release::Destroy { handle, buffers, mapped })
    }
}

impl<P: Platform, S: state::MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// Allocates `size` bytes of memory preferring `node` (`hsaKmtAllocMemory`): device memory
    /// for `NON_PAGED` requests on a GPU node, system memory otherwise (see
    /// [`choose_placement`] for the rules and [`memory::kfd_flags`] for the kernel flags).
    ///
    /// Non-host-visible device memory costs exactly one ioctl (`ALLOC_MEMORY_OF_GPU`);
    /// host-visible memory adds the CPU mapping; paged system memory is anonymous memory
    /// made a user-pointer buffer.
    ///
    /// # Errors
    /// [`Error::Memory`] with [`memory::Error::ZeroSize`], [`memory::Error::Misaligned`] (size
    /// not a multiple of the flags' page size), [`memory::Error::InvalidFlags`],
    /// [`memory::Error::UnknownNode`], [`memory::Error::NotAGpu`] (no GPU to create the buffer
    /// on), [`memory::Error::ScratchInUse`], [`memory::Error::CapacityExhausted`],
    /// [`memory::Error::OutOfSpace`], [`memory::Error::NotSupported`];
    /// [`Error::NotSupported`] for `CONTIGUOUS` before KFD 1.16; [`Error::Ioctl`] (`ENOMEM` when
    /// VRAM is exhausted) or the platform's mapping errno; [`Error::NotOpened`] /
    /// [`Error::ForkedChild`]. Nothing is left allocated on error.
    pub fn alloc_memory(
        &self,
        node: u32,
        size: u64,
        flags: MemFlags,
    ) -> Result<Allocation<P::Mapping>, Error> {
        self.allocate(node, size, 0, flags, None)
    }

    /// As [`Kfd::alloc_memory`] with an explicit alignment (`hsaKmtAllocMemoryAlign`): a power
    /// of two at least the flags' page size, or 0 for the default.
    ///
    /// # Errors
    /// As [`Kfd::alloc_memory`], plus [`memory::Error::BadAlignment`] and
    /// [`memory::Error::NotSupported`] (an alignment for scratch memory).
    pub fn alloc_memory_align(
        &self,
        node: u32,
        size: u64,
        align: u64,
        flags: MemFlags,
    ) -> Result<Allocation<P::Mapping>, Error> {
        self.allocate(node, size, align, flags, None)
    }

    /// As [`Kfd::alloc_memory`] at exactly `addr` (`FixedAddress`).
    ///
    /// # Errors
    /// As [`Kfd::alloc_memory`]; [`memory::Error::InvalidFlags`] for address 0,
    /// [`memory::Error::Misaligned`], [`memory::Error::OutsideRange`],
    /// [`memory::Error::AddressInUse`].
    pub fn alloc_memory_at(
        &self,
        node: u32,
        addr: u64,
        size: u64,
        flags: MemFlags,
    ) -> Result<Allocation<P::Mapping>, Error> {
        self.allocate(node, size, 0, flags | MemFlags::FIXED_ADDRESS, Some(addr))
    }

    fn allocate(
        &self,
        node: u32,
        size: u64,
        align: u64,
        flags: MemFlags,
        fixed: Option<u64>,
    ) -> Result<Allocation<P::Mapping>, Error> {
        self.check_open()?;
        if flags.contains(MemFlags::CONTIGUOUS) {
            self.require_minor("contiguous VRAM", since::ALLOC_MEM_FLAGS_CONTIGUOUS)?;
        }
        // A freed allocation of the same shape, else a full plan (under the same lock).
        let key = AllocKey { size, align, node, flags };
        let mut st = self.memory.lock();
        let plan = match fixed.is_none().then(|| st.reuse_plan(&key)).flatten() {
            Some(plan) => {
                drop(st);
                plan
            }
            None => {
                self.plan_with_slabs(st, |st| st.plan_alloc(node, size, align, flags, fixed))?
            }
        };
        match self.create_buffers(&plan) {
            Ok((handles, mmap_offset, mapping)) => {
                self.record_allocation(&plan, handles, mmap_offset, mapping)
            }
            Err(e) => {
                let mut st = self.memory.lock();
                match plan.reuse {
                    Some(r) => {
                        if st.unclaim(r) {
                            st.recycle_or_discard(plan.tag, r);
                        }
                    }
                    None => {
                        st.release_va(Some(plan.va));
                        st.keep_promise();
                    }
                }
                Err(e)
            }
        }
    }

    /// Runs a planning step under the lock `st` holds, growing the slab aperture (outside the
    /// lock) when it runs out.
    fn plan_with_slabs<T>(
        &self,
        st: spin::MutexGuard<'_, MemoryState<P::Mapping, S>>,
        mut plan: impl FnMut(&mut MemoryState<P::Mapping, S>) -> Result<T, PlanStop>,
    ) -> Result<T, Error> {
        let mut attempts = 0;
        let mut st = Some(st);
        loop {
            let mut guard = st.take().unwrap_or_else(|| self.memory.lock());
            let stop = match plan(&mut guard) {
                Ok(t) => return Ok(t),
                Err(stop) => stop,
            };
            drop(guard);
            match stop {
                PlanStop::Fail(e) => return Err(e.into()),
                PlanStop::NeedSlab { size, at } => {
                    attempts += 1;
                    if attempts > SLAB_ATTEMPTS {
                        return Err(memory::Error::OutOfSpace { needed: size }.into());
                    }
                    self.grow_slabs(size, at)?;
                }
            }
        }
    }

    /// Creates the kernel buffer(s) and CPU mapping of a planned allocation; undoes its own
    /// steps on failure (the caller gives the address range back).
    fn create_buffers(
        &self,
        plan: &AllocPlan,
    ) -> Result<(KfdHandles, u64, Option<P::Mapping>), Error> {
        let addr = plan.va.1.addr;
        match plan.kind {
            MemoryKind::ReservedAddress => return Ok((KfdHandles::EMPTY, 0, None)),
            MemoryKind::Scratch => {
                // Program SH_HIDDEN_PRIVATE_BASE (libhsakmt passes the address in 64 KiB units).
                let mut args = kfd_ioctl_set_scratch_backing_va_args {
                    va_addr: addr >> 16,
                    gpu_id: plan.gpu_id,
                    pad: 0,
                };
                self.raw_ioctl(&mut Ioctl::SetScratchBackingVa(&mut args))?;
                return Ok((KfdHandles::EMPTY, 0, None));
            }
            _ => {}
        }
        let userptr = plan.kind == MemoryKind::HostUserptr;
        let mut mapping = None;
        if userptr {
            mapping =
                Some(self.platform.map_anonymous(addr, plan.cpu_size).map_err(Error::Platform)?);
        }
        if plan.buffer.is_none() {
            return Err(memory::Error::NotSupported.into());
        }
        let user_addr = userptr.then_some(addr);
        let (handles, mmap_offset) = match self.kfd_alloc_split(
            plan.gpu_id,
            plan.ioc_va(),
            plan.size(),
            plan.ioc_flags,
            user_addr,
        ) {
            Ok(h) => h,
            Err(e) => {
                drop(mapping);
                return Err(e);
            }
        };
        if plan.cpu_map {
            match self.platform.map_buffer(
                plan.render_fd,
                mmap_offset,
                plan.cpu_size,
                addr,
                Access::ReadWrite,
            ) {
                Ok(m) => mapping = Some(m),
                Err(errno) => {
                    self.free_buffers(handles.as_slice());
                    return Err(Error::Platform(errno));
                }
            }
        }
        Ok((handles, mmap_offset, mapping))
    }

    /// `ALLOC_MEMORY_OF_GPU` of `size` bytes at `va` (0: no address) on `gpu_id`, split into
    /// several buffers for user-pointer ranges (`user_addr`) larger than libhsakmt's
    /// `BIGGEST_SINGLE_BUF_SIZE`. Returns the handles and the first mmap offset; on failure
    /// nothing is left allocated.
    pub(super) fn kfd_alloc_split(
        &self,
        gpu_id: u32,
        va: u64,
        size: u64,
        flags: u32,
        user_addr: Option<u64>,
    ) -> Result<(KfdHandles, u64), Error> {
        use crate::memory::aperture::BIGGEST_SINGLE_BUF_SIZE;
        let mut handles = KfdHandles::EMPTY;
        let mut first_offset = 0;
        let mut done = 0u64;
        while done < size {
            let chunk = match user_addr {
                Some(_) => (size - done).min(BIGGEST_SINGLE_BUF_SIZE),
                None => size,
            };
            let mut args = kfd_ioctl_alloc_memory_of_gpu_args {
                va_addr: if va == 0 { 0 } else { va + done },
                size: chunk,
                handle: 0,
                mmap_offset: user_addr.map_or(0, |u| u + done),
                gpu_id,
                flags,
            };
            let result = self.raw_ioctl(&mut Ioctl::AllocMemoryOfGpu(&mut args)).and_then(|()| {
                handles.push(args.handle).map_err(|e| {
                    self.free_buffers(&[args.handle]);
                    Error::Memory(e)
                })
            });
            if let Err(e) = result {
                self.free_buffers(handles.as_slice());
                return Err(e);
            }
            if done == 0 {
                first_offset = args.mmap_offset;
            }
            done += chunk;
        }
        Ok((handles, first_offset))
    }

    /// Best-effort `FREE_MEMORY_OF_GPU` of buffers being rolled back.
    fn free_buffers(&self, handles: &[u64]) {
        for &handle in handles.iter().rev() {
            let mut args = kfd_ioctl_free_memory_of_gpu_args { handle };
            let _ = self.raw_ioctl(&mut Ioctl::FreeMemoryOfGpu(&mut args));
        }
    }

    fn record_allocation(
        &self,
        plan: &AllocPlan,
        handles: KfdHandles,
        mmap_offset: u64,
        mapping: Option<P::Mapping>,
    ) -> Result<Allocation<P::Mapping>, Error> {
        let addr = plan.va.1.addr;
        let user_view = mapping.clone();
        if let Some(r) = plan.reuse {
            return self.record_reuse(plan, r, handles, mmap_offset, mapping, user_view);
        }
        let mut payload = state::MemoryPayload::new(mapping, Some(plan.va), plan.gpu_id);
        payload.recycle = plan.tag;
        let mut obj =
            MemoryObject::new(addr, plan.size(), plan.kind, plan.flags, plan.node, payload)
                .with_kfd_handles(handles);
        obj.mmap_offset = mmap_offset;
        let mut st = self.memory.lock();
        st.keep_promise();
        match st.objects.insert(obj) {
            Ok(handle) => {
                if plan.kind == MemoryKind::Scratch
                    && let Some(n) = st.nodes.get_mut(plan.gpu_node as usize)
                {
                    n.scratch_backing = Some(addr);
                }
                drop(st);
                Ok(Allocation {
                    addr,
                    size: plan.size(),
                    handle,
                    kfd_handle: handles.first(),
                    node: plan.node,
                    mapping: user_view,
                })
            }
            Err((e, obj)) => {
                // Unreachable with a promised slot and a fresh address range; undo anyway.
                drop(st);
                drop(user_view);
                drop(obj);
                self.free_buffers(handles.as_slice());
                self.memory.lock().release_va(Some(plan.va));
                Err(e.into())
            }
        }
    }

    /// Records an allocation that reuses a retired object: the object is rewritten in place and
    /// made live again (no index changes).
    fn record_reuse(
        &self,
        plan: &AllocPlan,
        r: RetiredObject,
        handles: KfdHandles,
        mmap_offset: u64,
        mapping: Option<P::Mapping>,
        user_view: Option<P::Mapping>,
    ) -> Result<Allocation<P::Mapping>, Error> {
        let mut mapping = Some(mapping);
        let mut st = self.memory.lock();
        st.unclaim(r);
        let revived = st
            .objects
            .revive_with(r, |o| plan.refill(o, handles, mmap_offset, mapping.take().flatten()));
        drop(st);
        match revived {
            Ok(handle) => Ok(Allocation {
                addr: plan.va.1.addr,
                size: plan.size(),
                handle,
                kfd_handle: handles.first(),
                node: plan.node,
                mapping: user_view,
            }),
            Err(e) => {
                // The tables were reset (closed) meanwhile: the object and its range are gone.
                drop(user_view);
                drop(mapping);
                self.free_buffers(handles.as_slice());
                Err(e.into())
            }
        }
    }

    /// Frees an allocation (`hsaKmtFreeMemory`), dropping its view first.
    ///
    /// # Errors
    /// As [`Kfd::free_handle`].
    pub fn free(&self, allocation: Allocation<P::Mapping>) -> Result<(), Error> {
        let Allocation { handle, mapping, .. } = allocation;
        drop(mapping);
        self.free_handle(handle)
    }

    /// Frees the memory starting at `addr` (`hsaKmtFreeMemory`; registered user memory is
    /// deregistered). GPU mappings are removed first.
    ///
    /// # Errors
    /// [`memory::Error::UnknownAddress`] when no object starts at `addr` (an interior pointer,
    /// a double free, address 0); [`memory::Error::MappingInUse`] while a caller holds a CPU
    /// view; [`memory::Error::Busy`]; [`Error::Ioctl`] from the unmap or free (`EBUSY` while a
    /// queue uses the memory) — the object then stays, consistent with the kernel;
    /// [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn free_memory(&self, addr: u64) -> Result<(), Error> {
        self.check_open()?;
        self.release(Target::Address(addr))
    }

    /// Frees the object `handle` names (see [`Kfd::free_memory`]).
    ///
    /// # Errors
    /// As [`Kfd::free_memory`], with [`memory::Error::StaleHandle`] /
    /// [`memory::Error::InvalidHandle`] for a handle that names no live object (for instance a
    /// second free).
    pub fn free_handle(&self, handle: MemoryHandle) -> Result<(), Error> {
        self.check_open()?;
        self.release(Target::Handle(handle))
    }

    /// Frees an object, or drops one registration of registered user memory.
    pub(super) fn release(&self, target: Target) -> Result<(), Error> {
        let step = self.memory.lock().begin_release(target)?;
        match step {
            Release::Counted => Ok(()),
            Release::Destroy { handle, buffers, mapped } => {
                self.finish_release(handle, buffers, mapped)
            }
            Release::Pending { handle, free, buffers, mapped, view } => {
                self.finish_pending(handle, free, buffers, mapped, view)
            }
        }
    }

    /// Unmaps and frees the buffers of an object with a pending free, then drops its view and
    /// signals completion; on failure cancels the pending free, giving the object its view back
    /// (consistent with the kernel, as [`Kfd::finish_release`]).
    fn finish_pending(
        &self,
        handle: MemoryHandle,
        free: Ticket,
        buffers: KfdHandles,
        mapped: NodeSet,
        view: Option<P::Mapping>,
    ) -> Result<(), Error> {
        if !mapped.is_empty()
            && let Err(e) = self.unmap_object(handle, buffers, mapped)
        {
            self.cancel_pending(free, view, None);
            return Err(e);
        }
        for (i, &h) in buffers.as_slice().iter().enumerate() {
            let mut args = kfd_ioctl_free_memory_of_gpu_args { handle: h };
            if let Err(e) = self.raw_ioctl(&mut Ioctl::FreeMemoryOfGpu(&mut args)) {
                self.cancel_pending(free, view, Some(i));
                return Err(e);
            }
        }
        drop(view);
        self.memory.complete_free(free);
        Ok(())
    }

    /// Withdraws a pending free that failed: the object gets its view back and is no longer
    /// busy; with `freed`, only its buffers from that index on remain.
    fn cancel_pending(&self, free: Ticket, view: Option<P::Mapping>, freed: Option<usize>) {
        let mut st = self.memory.lock();
        let mut view = view;
        if let Some(handle) = st.pending_frees.cancel(free)
            && let Ok(o) = st.objects.get_mut(handle)
        {
            if let Some(i) = freed {
                let mut rest = KfdHandles::EMPTY;
                for &r in o.kfd_handles.as_slice().iter().skip(i) {
                    let _ = rest.push(r);
                }
                o.kfd_handles = rest;
            }
            o.payload.mapping = view.take();
            o.payload.view_out = false;
            o.payload.busy = false;
        }
        drop(st);
        drop(view);
    }

    /// Unmaps (if mapped), frees the buffers of and forgets an object marked busy by
    /// [`MemoryState::begin_release`].
    fn finish_release(
        &self,
        handle: MemoryHandle,
        buffers: KfdHandles,
        mapped: NodeSet,
    ) -> Result<(), Error> {
        if !mapped.is_empty()
            && let Err(e) = self.unmap_object(handle, buffers, mapped)
        {
            self.clear_busy(handle);
            return Err(e);
        }
        for (i, &h) in buffers.as_slice().iter().enumerate() {
            let mut args = kfd_ioctl_free_memory_of_gpu_args { handle: h };
            if let Err(e) = self.raw_ioctl(&mut Ioctl::FreeMemoryOfGpu(&mut args)) {
                // Buffers before `i` are gone: keep only the rest.
                let mut st = self.memory.lock();
                if let Ok(o) = st.objects.get_mut(handle) {
                    let mut rest = KfdHandles::EMPTY;
                    for &r in o.kfd_handles.as_slice().iter().skip(i) {
                        let _ = rest.push(r);
                    }
                    o.kfd_handles = rest;
                    o.payload.busy = false;
                }
                return Err(e);
            }
        }
        let mut st = self.memory.lock();
        match st.retire_freed(handle) {
            Retired::Cached => return Ok(()),
            Retired::DropView(view, tag, r) => {
                // As below: the view goes before the range can be handed out again.
                drop(st);
                drop(view);
                let mut st = self.memory.lock();
                if st.unclaim(r) {
                    st.recycle_or_discard(Some(tag), r);
                }
                return Ok(());
            }
            Retired::No => {}
        }
        let mut obj = st.objects.remove(handle)?;
        if obj.kind == MemoryKind::Scratch
            && let Some(n) = st.nodes.get_mut(obj.node as usize)
        {
            n.scratch_backing = None;
        }
        let mapping = obj.payload.mapping.take();
        let va = obj.payload.va.take();
        if mapping.is_none() {
            st.release_va(va);
            return Ok(());
        }
        // The view must be gone (its range a reservation again) before the address range can
        // be handed out again.
        drop(st);
        drop(mapping);
        drop(obj);
        self.memory.lock().release_va(va);
        Ok(())
    }

    pub(crate) fn clear_busy(&self, handle: MemoryHandle) {
        if let Ok(o) = self.memory.lock().objects.get_mut(handle) {
            o.payload.busy = false;
        }
    }

    /// The KFD buffer handle of the memory starting at `addr` (for example the event page's,
    /// which the first `CREATE_EVENT` takes).
    ///
    /// # Errors
    /// [`memory::Error::UnknownAddress`], [`memory::Error::NoKfdBuffer`] for address-only or
    /// scratch reservations; [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn kfd_handle(&self, addr: u64) -> Result<u64, Error> {
        self.check_open()?;
        let st = self.memory.lock();
        let h = st.find_named(addr).ok_or(memory::Error::UnknownAddress { addr })?;
        let o = st.objects.get(h)?;
        Ok(o.kfd_handles.first().ok_or(memory::Error::NoKfdBuffer { addr })?)
    }

    /// A CPU view of the memory containing `addr` (the whole object; its
    /// [`SharedMemory::addr`] is the object's start).
    ///
    /// # Errors
    /// [`memory::Error::UnknownAddress`]; [`memory::Error::NoCpuAccess`] for memory without a
    /// CPU mapping; [`memory::Error::Busy`] while the object is being freed;
    /// [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn cpu_mapping(&self, addr: u64) -> Result<P::Mapping, Error> {
        self.check_open()?;
        let st = self.memory.lock();
        let h = st.objects.find_containing(addr).ok_or(memory::Error::UnknownAddress { addr })?;
        let o = st.objects.get(h)?;
        if o.payload.busy {
            return Err(memory::Error::Busy { addr: o.start() }.into());
        }
        Ok(o.payload.mapping.clone().ok_or(memory::Error::NoCpuAccess { addr: o.start() })?)
    }

    /// Counters of the memory manager.
    pub fn memory_usage(&self) -> MemoryUsage {
        let st = self.memory.lock();
        let ap = [&st.default, &st.coherent, &st.handles];
        let mut va_used = ap.map(|a| a.va().used_bytes());
        let mut va_live = ap.map(|a| a.va().live_count());
        for r in st.recycle.iter() {
            if let Some((id, a)) = st.objects.retired(r).ok().and_then(|o| o.payload.va) {
                let k = match id {
                    ApertureId::Default => 0,
                    ApertureId::Coherent => 1,
                    ApertureId::Handles => 2,
                };
                if let (Some(used), Some(live)) = (va_used.get_mut(k), va_live.get_mut(k)) {
                    *used = used.saturating_sub(a.block.size);
                    *live = live.saturating_sub(1);
                }
            }
        }
        MemoryUsage {
            objects: st.objects.len(),
            capacity: st.objects.capacity(),
            pending: st.pending,
            va_used,
            va_live,
            reservations: u32::try_from(st.reservation_count).unwrap_or(u32::MAX),
            mode: st.mode,
            recycled: st.recycle.len(),
        }
    }

    /// Releases every freed allocation the recycle cache keeps (their object slots and address
    /// ranges; no system call); returns how many. Allocation does this by itself when it runs
    /// out of address space or slots, and the last close drops the cache.
    ///
    /// # Errors
    /// [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn trim_memory(&self) -> Result<u32, Error> {
        self.check_open()?;
        Ok(self.memory.lock().flush_recycled())
    }

    /// The nodes libhsakmt's default mapping of GPU `node`'s memory covers: the GPU and every
    /// GPU with an io link to it.
    ///
    /// # Errors
    /// [`memory::Error::UnknownNode`], [`memory::Error::NotAGpu`]; [`Error::NotOpened`] /
    /// [`Error::ForkedChild`].
    pub fn peer_nodes(&self, node: u32) -> Result<NodeSet, Error> {
        self.check_open()?;
        Ok(self.memory.lock().gpu(node)?.peers)
    }

    /// Every GPU node the kernel reported apertures for (what [`MapNodes::All`] maps).
    ///
    /// # Errors
    /// [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn gpu_nodes(&self) -> Result<NodeSet, Error> {
        self.check_open()?;
        Ok(self.memory.lock().gpus)
    }

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
