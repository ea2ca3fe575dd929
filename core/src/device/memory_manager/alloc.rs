//! Allocation (`hsaKmtAllocMemory`, `hsaKmtAllocMemoryAlign`, libhsakmt `hsakmt_fmm_allocate_*`):
//! the plan made under the lock (aperture, address range, object slot — or a retired object of
//! the same shape from the recycle cache), the kernel buffers, the CPU mapping, and the record
//! of the outcome.

use crate::device::{Allocation, Error, Kfd};
use crate::memory::aperture::{
    AllocRequest, ApertureRole, PlacementPolicy, PreferredNode, SCRATCH_ALIGN, choose_placement,
};
use crate::memory::kfd_flags::{BufferKind, alloc_flags};
use crate::memory::objects::{KfdHandles, MemoryKind, MemoryObject, RetiredObject};
use crate::memory::recycle::BinTag;
use crate::memory::{self, MemFlags, NodeSet};
use crate::platform::{Access, Ioctl, Platform};
use crate::uapi::{
    kfd_ioctl_alloc_memory_of_gpu_args, kfd_ioctl_free_memory_of_gpu_args,
    kfd_ioctl_set_scratch_backing_va_args, since,
};

use super::free::recyclable;
use super::state::{self, AllocKey, ApertureId, MemoryState, SvmMode as Mode, page_align};

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
pub(super) enum PlanStop {
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

/// How many times an allocation grows the slab aperture before giving up.
const SLAB_ATTEMPTS: u32 = 4;

impl<M, S: state::MemoryStorage<M>> MemoryState<M, S> {
    /// Validates a request, chooses where it goes and reserves its address range and object
    /// slot (libhsakmt `hsaKmtAllocMemoryAlign` → `fmm.c`).
    pub(super) fn plan_alloc(
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
    pub(super) fn reuse_plan(&mut self, key: &AllocKey) -> Option<AllocPlan> {
        let (plan, tag, r) = self.recycle.take(key)?;
        match self.objects.retired(r).ok().and_then(|o| o.payload.va) {
            Some(va) => {
                let plan = AllocPlan { va, reuse: Some(r), tag: Some(tag), ..*plan };
                self.claimed = self.claimed.saturating_add(1);
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
        let mut attempts = 0u32;
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
                    attempts = attempts.saturating_add(1);
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
                Some(_) => size.saturating_sub(done).min(BIGGEST_SINGLE_BUF_SIZE),
                None => size,
            };
            let mut args = kfd_ioctl_alloc_memory_of_gpu_args {
                // `done < size`, and both ranges of `size` bytes were checked not to wrap
                // (the VA by its allocator, the user range at registration).
                va_addr: if va == 0 { 0 } else { va.saturating_add(done) },
                size: chunk,
                handle: 0,
                mmap_offset: user_addr.map_or(0, |u| u.saturating_add(done)),
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
            done = done.saturating_add(chunk);
        }
        Ok((handles, first_offset))
    }

    /// Best-effort `FREE_MEMORY_OF_GPU` of buffers being rolled back.
    pub(super) fn free_buffers(&self, handles: &[u64]) {
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
        // The objects of the allocations beside this one in its aperture (recorded as their
        // owners) are its neighbours in the object table's address index: inserting next to
        // them spares an address lookup and a descent from the root.
        let near = st.aperture_mut(plan.va.0).neighbour_owners(&plan.va.1);
        match st.objects.insert_beside(obj, near) {
            Ok(handle) => {
                st.aperture_mut(plan.va.0).set_owner(&plan.va.1, handle.index());
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
}
