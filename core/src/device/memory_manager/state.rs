//! The memory manager's state inside [`Kfd`](crate::device::Kfd): the object table, the
//! apertures, the per-node table built at open, and the process-wide settings — plus the
//! storage abstraction that fixes their capacities.
//!
//! Everything here is bookkeeping: no method performs I/O. The `Kfd` methods take the lock,
//! ask this state *where* and *what*, release the lock, issue the ioctl, and come back to record
//! the outcome.

use core::borrow::Borrow;
use core::fmt;

use crate::config::{MAX_VA_RANGES, NODE_SET_CAPACITY};
use crate::device::HandleTables;
use crate::memory::aperture::{
    Aperture, ApertureAllocation, ApertureConfig, ApertureKind, ReportedAperture,
};
use crate::memory::objects::{IndexNode, MemoryHandle, ObjectSlot, ObjectTable, RetiredObject};
use crate::memory::recycle::{BinTag, RecycleCache};
use crate::memory::scratch_slices::ScratchSlices;
use crate::memory::va::VaSlot;
use crate::memory::{Error, MemFlags, NodeSet, PAGE_SIZE, Violation};
use crate::platform::SharedMemory;
use crate::topology::{Topology, TopologyStorage};

use super::alloc::AllocPlan;
use super::pending::Pending;

pub use crate::config::{DEFAULT_MEMORY_OBJECTS, RECYCLE_CAPACITY, RECYCLE_DEPTH, RECYCLE_SHAPES};

/// Size of each address-space slab reserved for the SVM aperture in slab mode (grown on demand;
/// a request larger than this reserves a slab of its own size).
pub const SLAB_SIZE: u64 = 64 << 30;

/// Where a [`Kfd`](crate::device::Kfd) keeps its large tables, in the manner of `heapless`:
/// which arrays hold the memory manager's object table and the descriptors of each aperture,
/// and where the topology snapshot taken at open and the queue and event tables live. `M` is
/// the platform's mapping type.
///
/// [`Inline`] stores everything in the device facade (capacity fixed at compile time; a facade
/// in a `static` takes no stack); a `std` crate can provide boxes built on the heap (see
/// `hsakmt_linux::BoxedMemory`), which leave the facade itself small enough for any thread's
/// stack.
pub trait MemoryStorage<M> {
    /// Start-index nodes of the object table (one per object).
    type IndexNodes: AsRef<[IndexNode]> + AsMut<[IndexNode]>;
    /// Object slots (one per object).
    type Slots: AsRef<[ObjectSlot<MemoryPayload<M>>]> + AsMut<[ObjectSlot<MemoryPayload<M>>]>;
    /// Block descriptors of one aperture (about two per live allocation).
    type VaSlots: AsRef<[VaSlot]> + AsMut<[VaSlot]>;
    /// The topology snapshot (about 450 KB with the default capacities): the
    /// [`Topology`](crate::topology::Topology) itself, `&'static mut Topology` from a
    /// [`TopologyCell`](crate::topology::TopologyCell), or a `Box<Topology>` on `std`.
    type Topology: TopologyStorage;
    /// The queue and event tables (about 380 KB with the default capacities):
    /// [`HandleTables`] itself, a `&'static HandleTables`, or a `Box<HandleTables>` on `std`.
    type HandleTables: Borrow<HandleTables<M>> + Send + Sync;
}

/// The arrays of a memory manager, the facade's topology storage and its queue and event tables,
/// handed to [`Kfd::with_memory`](crate::device::Kfd::with_memory). The object capacity is the
/// shorter of `index` and `slots`; every aperture needs about two descriptors per live allocation
/// in it.
pub struct MemoryTables<M, S: MemoryStorage<M>> {
    /// Start-index nodes, all [`IndexNode::EMPTY`].
    pub index: S::IndexNodes,
    /// Object slots, all [`ObjectSlot::new`].
    pub slots: S::Slots,
    /// Descriptors of the default SVM aperture.
    pub default_va: S::VaSlots,
    /// Descriptors of the coherent SVM aperture (used in reserved-SVM mode only).
    pub coherent_va: S::VaSlots,
    /// Descriptors of the `NoAddress` handle window.
    pub handle_va: S::VaSlots,
    /// Where the snapshot taken at open is kept (its content is replaced at open).
    pub topology: S::Topology,
    /// The queue and event tables, all empty.
    pub handle_tables: S::HandleTables,
}

/// Inline storage for `N` objects (and `2·N` descriptors per aperture).
#[derive(Debug, Clone, Copy)]
pub struct Inline<const N: usize>;

/// `2·N` VA descriptors stored inline (`[[VaSlot; N]; 2]`, viewed as one slice).
#[derive(Debug, Clone)]
pub struct VaArray<const N: usize>([[VaSlot; N]; 2]);

impl<const N: usize> VaArray<N> {
    /// Unused descriptors.
    pub const EMPTY: Self = Self([[VaSlot::EMPTY; N]; 2]);
}

impl<const N: usize> AsRef<[VaSlot]> for VaArray<N> {
    fn as_ref(&self) -> &[VaSlot] {
        self.0.as_flattened()
    }
}

impl<const N: usize> AsMut<[VaSlot]> for VaArray<N> {
    fn as_mut(&mut self) -> &mut [VaSlot] {
        self.0.as_flattened_mut()
    }
}

impl<M: Send + Sync, const N: usize> MemoryStorage<M> for Inline<N> {
    type IndexNodes = [IndexNode; N];
    type Slots = [ObjectSlot<MemoryPayload<M>>; N];
    type VaSlots = VaArray<N>;
    type Topology = Topology;
    type HandleTables = HandleTables<M>;
}

impl<M: Clone + Send + Sync, const N: usize> MemoryTables<M, Inline<N>> {
    /// Empty inline tables.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            index: [IndexNode::EMPTY; N],
            slots: [const { ObjectSlot::new() }; N],
            default_va: VaArray::EMPTY,
            coherent_va: VaArray::EMPTY,
            handle_va: VaArray::EMPTY,
            topology: Topology::new(),
            handle_tables: HandleTables::new(),
        }
    }
}

impl<M: Send + Sync, const N: usize> MemoryState<M, Inline<N>> {
    /// Empty inline tables (`const`).
    pub(crate) const fn inline() -> Self {
        Self::from_parts(
            [IndexNode::EMPTY; N],
            [const { ObjectSlot::new() }; N],
            VaArray::EMPTY,
            VaArray::EMPTY,
            VaArray::EMPTY,
        )
    }
}

impl<M: Clone + Send + Sync, const N: usize> Default for MemoryTables<M, Inline<N>> {
    fn default() -> Self {
        Self::new()
    }
}

/// Which aperture an allocation came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(crate) enum ApertureId {
    Default,
    Coherent,
    Handles,
}

/// What the library keeps per memory object besides the table's own fields: the CPU mapping
/// (one clone; callers get more), the address range to give back, the GPU its buffer lives on,
/// and whether an operation is in flight.
pub struct MemoryPayload<M> {
    /// An ioctl on this object is in progress (set and cleared under the lock).
    pub(crate) busy: bool,
    /// The CPU view was taken out by a free in flight (which drops it once the buffers are
    /// freed): the memory still counts as CPU-mapped until then.
    pub(crate) view_out: bool,
    /// The buffer came from a dma-buf import.
    pub(crate) imported: bool,
    /// gpu_id the KFD buffer(s) were created on (0: none).
    pub(crate) gpu_id: u32,
    /// The recycle-cache bin of the allocation's shape: once freed, its address range and slot
    /// may wait there for the next allocation of the same shape.
    pub(crate) recycle: Option<BinTag>,
    pub(crate) va: Option<(ApertureId, ApertureAllocation)>,
    pub(crate) mapping: Option<M>,
}

impl<M> MemoryPayload<M> {
    pub(crate) const fn new(
        mapping: Option<M>,
        va: Option<(ApertureId, ApertureAllocation)>,
        gpu_id: u32,
    ) -> Self {
        Self { mapping, va, gpu_id, busy: false, imported: false, recycle: None, view_out: false }
    }
}

impl<M> fmt::Debug for MemoryPayload<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryPayload")
            .field("mapped_for_cpu", &self.mapping.is_some())
            .field("gpu_id", &self.gpu_id)
            .field("busy", &self.busy)
            .finish_non_exhaustive()
    }
}

/// What the memory manager knows about one topology node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NodeInfo {
    /// The node is in the topology (and accessible).
    pub(crate) present: bool,
    /// KFD gpu_id; 0 for a CPU node.
    pub(crate) gpu_id: u32,
    /// Render-node descriptor for CPU mappings of this GPU's buffers.
    pub(crate) render_fd: u32,
    /// DRM render minor.
    pub(crate) render_minor: u32,
    /// Device memory comes from the SVM apertures (canonical GPUVM).
    pub(crate) svm: bool,
    /// The GPU supports the SVM API (`HSA_CAP_SVMAPI_SUPPORTED`).
    pub(crate) svm_api: bool,
    /// gfx 9.5.0.
    pub(crate) gfx950: bool,
    /// gfx 7.0.x (Kaveri: the only part where `hsaKmtSetMemoryPolicy` applies).
    pub(crate) kaveri: bool,
    /// PCI device id.
    pub(crate) device_id: u32,
    /// GPUs that can map this GPU's memory (itself included): libhsakmt's
    /// `usable_peer_id_array`.
    pub(crate) peers: NodeSet,
    pub(crate) lds: ReportedAperture,
    pub(crate) scratch: ReportedAperture,
    pub(crate) gpuvm: ReportedAperture,
    /// Start of this GPU's scratch backing object, when allocated.
    pub(crate) scratch_backing: Option<u64>,
}

impl NodeInfo {
    const EMPTY: Self = Self {
        present: false,
        gpu_id: 0,
        render_fd: 0,
        render_minor: 0,
        svm: false,
        svm_api: false,
        gfx950: false,
        kaveri: false,
        device_id: 0,
        peers: NodeSet::EMPTY,
        lds: ReportedAperture { kind: ApertureKind::Lds { node: 0 }, base: 0, limit: 0 },
        scratch: ReportedAperture { kind: ApertureKind::Scratch { node: 0 }, base: 0, limit: 0 },
        gpuvm: ReportedAperture { kind: ApertureKind::Mmio { node: 0 }, base: 0, limit: 0 },
        scratch_backing: None,
    };

    pub(crate) const fn is_gpu(&self) -> bool {
        self.present && self.gpu_id != 0
    }
}

/// Process-wide settings read from the environment at open (libhsakmt's `fmm.c` globals).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MemorySettings {
    /// `HSA_DISABLE_CACHE`: all memory coherent and uncached.
    pub disable_cache: bool,
    /// `HSA_USERPTR_FOR_PAGED_MEM` (default on): paged system memory is anonymous memory made
    /// a user-pointer buffer, rather than a GTT buffer.
    pub userptr_for_paged_mem: bool,
    /// `HSA_RESERVE_SVM`: manage a reserved SVM range in user space even on 48-bit GPUs.
    pub reserve_svm: bool,
    /// `HSA_SVM_GUARD_PAGES` (default 1).
    pub guard_pages: u32,
    /// `HSA_MAX_VA_ALIGN`: the slab aperture's maximum alignment order, when set.
    pub max_va_align: Option<u32>,
    /// `HSA_HIGH_PRECISION_MODE`: MFMA high precision on GFX950 (`SET_MEMORY_POLICY`).
    pub high_precision: bool,
}

impl MemorySettings {
    /// libhsakmt's defaults (no variable set).
    pub const DEFAULT: Self = Self {
        disable_cache: false,
        userptr_for_paged_mem: true,
        reserve_svm: false,
        guard_pages: crate::memory::aperture::DEFAULT_GUARD_PAGES,
        max_va_align: None,
        high_precision: false,
    };
}

/// How the SVM apertures are set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SvmMode {
    /// No GPU with canonical GPUVM: no SVM aperture (device memory is not supported).
    None,
    /// Kernel-chosen slabs grow one aperture serving coarse- and fine-grained memory (every GPU
    /// has ≥ 47-bit GPUVM and `HSA_RESERVE_SVM` is unset).
    Slabs,
    /// One reserved range split into the coherent aperture (first quarter) and the default
    /// aperture.
    Reserved,
}

/// The shape of an allocation request, as the recycle cache tells them apart: every input of
/// [`MemoryState::plan_alloc`](super) but the fixed address (fixed-address requests are never
/// served from the cache).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct AllocKey {
    pub(crate) size: u64,
    pub(crate) align: u64,
    pub(crate) node: u32,
    pub(crate) flags: MemFlags,
}

/// The recycle cache: freed allocations (retired objects, their address ranges still
/// reserved) by request shape, with each shape's allocation plan.
pub(crate) type Recycler = RecycleCache<
    AllocKey,
    AllocPlan,
    RetiredObject,
    RECYCLE_SHAPES,
    RECYCLE_DEPTH,
    RECYCLE_CAPACITY,
>;

/// The memory manager's state (behind the device facade's memory lock).
pub(crate) struct MemoryState<M, S: MemoryStorage<M>> {
    pub(crate) objects: ObjectTable<MemoryPayload<M>, (S::IndexNodes, S::Slots)>,
    pub(crate) default: Aperture<S::VaSlots>,
    pub(crate) coherent: Aperture<S::VaSlots>,
    pub(crate) handles: Aperture<S::VaSlots>,
    pub(crate) mode: SvmMode,
    pub(crate) handles_ready: bool,
    pub(crate) nodes: [NodeInfo; NODE_SET_CAPACITY],
    /// GPU nodes whose apertures the kernel reported (the "all GPUs" set).
    pub(crate) gpus: NodeSet,
    pub(crate) settings: MemorySettings,
    /// Some node is a dGPU (`hsakmt_is_dgpu`).
    pub(crate) is_dgpu: bool,
    /// Object slots promised to allocations whose ioctl is in flight.
    pub(crate) pending: u32,
    /// Address ranges reserved from the platform, kept for the life of the facade and reused by
    /// the next open (libhsakmt keeps its SVM reservation across close and reopen too).
    pub(crate) reservations: [(u64, u64); MAX_VA_RANGES],
    pub(crate) reservation_count: usize,
    /// Freed allocations kept for reuse: retired objects whose address ranges stay reserved.
    pub(crate) recycle: Recycler,
    /// Retired objects outside the cache: taken by allocations whose ioctl is in flight, or
    /// being freed while their CPU view is dropped.
    pub(crate) claimed: u32,
    /// Frees whose ioctls are in flight (see [`super::pending`]).
    pub(crate) pending_frees: Pending<MemoryHandle>,
    /// The mapped slices of the scratch ranges, each with a VRAM buffer of its own.
    pub(crate) scratch_slices: ScratchSlices,
}

impl<M, S: MemoryStorage<M>> MemoryState<M, S> {
    /// A memory manager over these arrays (all empty).
    pub(crate) const fn from_parts(
        index: S::IndexNodes,
        slots: S::Slots,
        default_va: S::VaSlots,
        coherent_va: S::VaSlots,
        handle_va: S::VaSlots,
    ) -> Self {
        let unset = ApertureConfig::reserved(ApertureKind::SvmDefault, 0, 0);
        Self {
            objects: ObjectTable::with_storage((index, slots)),
            default: Aperture::unindexed(unset, default_va),
            coherent: Aperture::unindexed(
                ApertureConfig { kind: ApertureKind::SvmCoherent, ..unset },
                coherent_va,
            ),
            handles: Aperture::unindexed(
                ApertureConfig { kind: ApertureKind::MemHandle, ..unset },
                handle_va,
            ),
            mode: SvmMode::None,
            handles_ready: false,
            nodes: [NodeInfo::EMPTY; NODE_SET_CAPACITY],
            gpus: NodeSet::EMPTY,
            settings: MemorySettings::DEFAULT,
            is_dgpu: false,
            pending: 0,
            reservations: [(0, 0); MAX_VA_RANGES],
            reservation_count: 0,
            recycle: RecycleCache::new(),
            claimed: 0,
            pending_frees: Pending::EMPTY,
            scratch_slices: ScratchSlices::new(),
        }
    }

    /// Forgets every object and node (dropping CPU mappings); keeps the reservations.
    /// Pending operations become orphans (see [`super::pending`]).
    pub(crate) fn reset(&mut self) {
        self.objects.clear();
        self.scratch_slices.clear();
        self.recycle.clear();
        self.claimed = 0;
        self.pending_frees.orphan_all();
        self.mode = SvmMode::None;
        self.handles_ready = false;
        self.nodes = [NodeInfo::EMPTY; NODE_SET_CAPACITY];
        self.gpus = NodeSet::EMPTY;
        self.settings = MemorySettings::DEFAULT;
        self.is_dgpu = false;
        self.pending = 0;
    }

    pub(crate) fn aperture_mut(&mut self, id: ApertureId) -> &mut Aperture<S::VaSlots> {
        match id {
            ApertureId::Default => &mut self.default,
            ApertureId::Coherent => &mut self.coherent,
            ApertureId::Handles => &mut self.handles,
        }
    }

    /// Gives an address range back to its aperture (errors mean it was already given back,
    /// which the callers' protocol rules out; nothing to undo either way).
    pub(crate) fn release_va(&mut self, va: Option<(ApertureId, ApertureAllocation)>) {
        if let Some((id, alloc)) = va {
            let _ = self.aperture_mut(id).release_allocation(alloc);
        }
    }

    /// The node record, if `node` is in the topology.
    pub(crate) fn node(&self, node: u32) -> Result<&NodeInfo, Error> {
        self.nodes.get(node as usize).filter(|n| n.present).ok_or(Error::UnknownNode { node })
    }

    /// The record of a GPU node whose apertures the kernel reported.
    pub(crate) fn gpu(&self, node: u32) -> Result<&NodeInfo, Error> {
        let n = self.node(node)?;
        if n.is_gpu() && self.gpus.contains(node) { Ok(n) } else { Err(Error::NotAGpu { node }) }
    }

    /// The node whose GPU has `gpu_id`.
    pub(crate) fn node_of_gpu(&self, gpu_id: u32) -> Option<u32> {
        if gpu_id == 0 {
            return None;
        }
        self.gpus.iter().find(|&n| self.nodes.get(n as usize).is_some_and(|i| i.gpu_id == gpu_id))
    }

    /// The first GPU (libhsakmt's `first_gpu_mem`): host buffers requested from a CPU node are
    /// created on it.
    pub(crate) fn first_gpu(&self) -> Option<u32> {
        self.gpus.first()
    }

    /// Fills `out` with the gpu_ids of `set` in ascending node order; returns how many.
    pub(crate) fn gpu_ids(&self, set: NodeSet, out: &mut [u32; NODE_SET_CAPACITY]) -> usize {
        let mut n = 0;
        for node in set.iter() {
            if let (Some(info), Some(slot)) = (self.nodes.get(node as usize), out.get_mut(n)) {
                *slot = info.gpu_id;
                n = n.saturating_add(1);
            }
        }
        n
    }

    /// Reserves an object slot for an allocation about to be created, taking one back from
    /// the recycle cache if every slot is in use.
    pub(crate) fn promise_slot(&mut self) -> Result<(), Error> {
        let capacity = self.objects.capacity();
        loop {
            let used = self.objects.len().saturating_add(self.objects.retired_len());
            if used.saturating_add(self.pending) < capacity {
                break;
            }
            match self.recycle.pop_any() {
                Some(r) => self.discard_retired(r),
                None => return Err(Error::CapacityExhausted { capacity }),
            }
        }
        self.pending = self.pending.saturating_add(1);
        Ok(())
    }

    /// Allocates from aperture `id` ([`Aperture::allocate`]); when that fails for want of
    /// space, of descriptors, or because the (fixed) range is held by the recycle cache, the
    /// cache is flushed and the allocation tried once more.
    pub(crate) fn allocate_va(
        &mut self,
        id: ApertureId,
        size: u64,
        align: Option<u64>,
        fixed: Option<u64>,
    ) -> Result<ApertureAllocation, Error> {
        match self.allocate_va_once(id, size, align, fixed) {
            Err(
                Error::OutOfSpace { .. }
                | Error::AddressInUse { .. }
                | Error::CapacityExhausted { .. },
            ) if !self.recycle.is_empty() => {
                self.flush_recycled();
                self.allocate_va_once(id, size, align, fixed)
            }
            r => r,
        }
    }

    /// [`Aperture::allocate`] from aperture `id`; for a fixed address, with the address range
    /// of the object starting last at or below it as the allocator's starting point (the
    /// apertures keep no address index of their own: every allocation of theirs is an object's
    /// range, or one about to be recorded or given back, so the walk from there to the
    /// address only passes those in flight).
    fn allocate_va_once(
        &mut self,
        id: ApertureId,
        size: u64,
        align: Option<u64>,
        fixed: Option<u64>,
    ) -> Result<ApertureAllocation, Error> {
        let near = fixed
            .and_then(|addr| self.objects.last_at_or_below(addr))
            .and_then(|o| o.payload.va)
            .filter(|(aperture, _)| *aperture == id)
            .map(|(_, a)| a);
        self.aperture_mut(id).allocate_near(size, align, fixed, near.as_ref())
    }

    /// Releases every allocation the recycle cache holds (their slots and address ranges);
    /// returns how many. At most [`RECYCLE_CAPACITY`] removals.
    pub(crate) fn flush_recycled(&mut self) -> u32 {
        let mut n = 0u32;
        while let Some(r) = self.recycle.pop_any() {
            self.discard_retired(r);
            n = n.saturating_add(1);
        }
        n
    }

    /// Removes a retired object for good and gives its address range back.
    pub(crate) fn discard_retired(&mut self, r: RetiredObject) {
        if let Ok(va) = self.objects.remove_retired_with(r, |o| o.payload.va.take()) {
            self.release_va(va);
        }
    }

    /// Ends the claim on retired object `r` (taken by an allocation, or by a free dropping its
    /// view); `false` when `r` is no longer retired (the tables were reset meanwhile: there is
    /// no claim to end).
    pub(crate) fn unclaim(&mut self, r: RetiredObject) -> bool {
        if self.objects.retired(r).is_err() {
            return false;
        }
        self.claimed = self.claimed.saturating_sub(1);
        true
    }

    /// Puts a retired object (with no CPU view) into its recycle bin, or removes it for good
    /// when the bin cannot take it. Nothing happens when `r` is no longer retired (the tables
    /// were reset meanwhile).
    pub(crate) fn recycle_or_discard(&mut self, tag: Option<BinTag>, r: RetiredObject) {
        if self.objects.retired(r).is_err() {
            return;
        }
        let rejected = match tag {
            Some(tag) => self.recycle.put(tag, r).err(),
            None => Some(r),
        };
        if let Some(r) = rejected {
            self.discard_retired(r);
        }
    }

    /// Forgets an object whose buffers are freed and whose CPU view is gone: into the recycle
    /// cache when its bin takes it, else removed with its address range.
    pub(crate) fn forget_freed(&mut self, handle: MemoryHandle) {
        let recycle = &self.recycle;
        let mut tag = None;
        let kept = self.objects.retire_if(handle, |o| {
            tag = o.payload.recycle.filter(|&t| recycle.can_put(t));
            tag.is_some()
        });
        if let (Ok(Some(r)), Some(tag)) = (kept, tag) {
            if let Err(r) = self.recycle.put(tag, r) {
                self.discard_retired(r);
            }
            return;
        }
        let scratch = crate::memory::objects::MemoryKind::Scratch;
        if let Ok((scratch_node, va)) = self
            .objects
            .remove_with(handle, |o| ((o.kind == scratch).then_some(o.node), o.payload.va.take()))
        {
            if let Some(n) = scratch_node.and_then(|node| self.nodes.get_mut(node as usize)) {
                n.scratch_backing = None;
            }
            self.release_va(va);
        }
    }

    /// Verifies the recycle cache against the object table: every cached entry names a
    /// retired object with an address range and no CPU view, at most once, and the cached and
    /// claimed entries are all the retired objects.
    pub(crate) fn check_recycled(&self) -> Result<(), Violation> {
        self.recycle.check()?;
        for (k, r) in self.recycle.iter().enumerate() {
            let bad = Violation::SlotList { slot: r.index() };
            let o = self.objects.retired(r).map_err(|_| bad)?;
            if o.payload.va.is_none()
                || o.payload.mapping.is_some()
                || self.recycle.iter().skip(k.saturating_add(1)).any(|x| x == r)
            {
                return Err(bad);
            }
        }
        if self.recycle.len().saturating_add(self.claimed) != self.objects.retired_len() {
            return Err(Violation::Counter);
        }
        // Pending frees name live, busy objects.
        if !self.pending_frees.consistent()
            || !self.pending_frees.live().all(|h| self.objects.get(h).is_ok_and(|o| o.payload.busy))
        {
            return Err(Violation::SlotList { slot: u32::MAX });
        }
        Ok(())
    }

    /// Gives a promised slot back (the allocation failed, or was inserted).
    pub(crate) fn keep_promise(&mut self) {
        self.pending = self.pending.saturating_sub(1);
    }

    /// Records a reserved range (ignored beyond [`MAX_VA_RANGES`]: it then stays reserved
    /// but is not reused by a later open).
    pub(crate) fn remember_reservation(&mut self, base: u64, size: u64) {
        if let Some(slot) = self.reservations.get_mut(self.reservation_count) {
            *slot = (base, size);
            self.reservation_count = self.reservation_count.saturating_add(1);
        }
    }

    pub(crate) fn reservations(&self) -> &[(u64, u64)] {
        self.reservations.get(..self.reservation_count).unwrap_or(&[])
    }

    /// The object a map/unmap/free/user-data call names: the object starting at `addr` (its
    /// GPU address), else the registered user memory starting at CPU address `addr`, else the
    /// registered user memory whose GPU address `addr` is — its page start plus the user
    /// pointer's offset in its page, as registration returned it (libhsakmt's `vm_find_object`).
    pub(crate) fn find_named(&self, addr: u64) -> Option<MemoryHandle> {
        if let Some(h) = self.objects.find_exact(addr) {
            return Some(h);
        }
        if let Some(h) = self.objects.find_userptr_containing(addr)
            && self.objects.get(h).ok()?.userptr().is_some_and(|u| u.addr == addr)
        {
            return Some(h);
        }
        let offset = addr & (PAGE_SIZE - 1);
        let h = self.objects.find_exact(addr & !(PAGE_SIZE - 1))?;
        let user = self.objects.get(h).ok()?.userptr()?;
        (user.addr & (PAGE_SIZE - 1) == offset).then_some(h)
    }

    /// The object whose GPU range contains `addr`, else the registered user memory whose CPU
    /// range contains it (libhsakmt's range lookup for pointer queries and exports).
    pub(crate) fn find_containing(&self, addr: u64) -> Option<MemoryHandle> {
        self.objects.find_containing(addr).or_else(|| self.objects.find_userptr_containing(addr))
    }

    /// Whether `addr` lies in the `NoAddress` handle window.
    pub(crate) fn is_handle_address(&self, addr: u64) -> bool {
        self.handles_ready && self.handles.contains(addr)
    }
}

impl<M: SharedMemory, S: MemoryStorage<M>> MemoryState<M, S> {
    /// How many objects have a CPU view a caller still holds.
    pub(crate) fn shared_mappings(&self) -> u32 {
        let held =
            |(_, o): (MemoryHandle, &crate::memory::objects::MemoryObject<MemoryPayload<M>>)| {
                o.payload.mapping.as_ref().is_some_and(SharedMemory::is_shared)
            };
        u32::try_from(self.objects.iter().filter(|e| held(*e)).count()).unwrap_or(u32::MAX)
    }
}

/// Rounds `size` up to whole pages.
pub(crate) const fn page_align(size: u64) -> Option<u64> {
    match size.checked_add(PAGE_SIZE - 1) {
        Some(v) => Some(v & !(PAGE_SIZE - 1)),
        None => None,
    }
}
