//! Registering application memory for GPU access: `hsaKmtRegisterMemory`,
//! `hsaKmtRegisterMemoryToNodes`, `hsaKmtRegisterMemoryWithFlags`, `hsaKmtDeregisterMemory`
//! (libhsakmt `fmm_register_user_memory`, `hsakmt_fmm_register_memory`,
//! `hsakmt_fmm_deregister_memory`).
//!
//! A registration creates a user-pointer buffer over the pages of `[addr, addr + size)` at a GPU
//! address of the default SVM aperture, on the first GPU. Registering the same range again only
//! counts (and returns the same GPU address); the buffer goes with the last deregistration.

use crate::memory::aperture::ApertureAllocation;
use crate::memory::kfd_flags::{BufferKind, alloc_flags};
use crate::memory::objects::{MemoryKind, MemoryObject};
use crate::memory::{self, MemFlags, NodeSet, PAGE_SIZE};
use crate::platform::Platform;

use super::free::Target;
use super::state::{ApertureId, MemoryPayload, MemoryState, MemoryStorage, SvmMode, page_align};
use super::{Error, Kfd};

/// A registration to create, decided under the lock.
struct RegisterPlan {
    va: (ApertureId, ApertureAllocation),
    aligned_addr: u64,
    aligned_size: u64,
    gpu_id: u32,
    node: u32,
    flags: u32,
}

/// The GPU address of user address `addr` registered at `start`.
const fn gpu_address(start: u64, addr: u64) -> u64 {
    // `start` is a page-aligned VA inside an aperture, far below 2^64 − 4096.
    start.saturating_add(addr & (PAGE_SIZE - 1))
}

impl<M, S: MemoryStorage<M>> MemoryState<M, S> {
    /// Counts another registration of an existing range; `None` when the range is new.
    fn register_again(
        &mut self,
        addr: u64,
        size: u64,
        nodes: Option<NodeSet>,
    ) -> Result<Option<u64>, memory::Error> {
        let Some(h) = self.objects.find_userptr(addr, size) else { return Ok(None) };
        let o = self.objects.get_mut(h)?;
        if let Some(nodes) = nodes {
            if o.registered_nodes.is_empty() {
                o.registered_nodes = nodes;
            } else if o.registered_nodes != nodes {
                return Err(memory::Error::RegisteredToOtherNodes { addr });
            }
        }
        o.add_registration()?;
        Ok(Some(gpu_address(o.start(), addr)))
    }

    fn plan_register(
        &mut self,
        addr: u64,
        size: u64,
        flags: MemFlags,
    ) -> Result<RegisterPlan, memory::Error> {
        if self.objects.find_containing(addr).is_some() {
            return Err(memory::Error::NotUserMemory { addr });
        }
        if self.mode == SvmMode::None {
            return Err(memory::Error::NotSupported);
        }
        let node = self.first_gpu().ok_or(memory::Error::NotSupported)?;
        let gpu_id = self.gpu(node)?.gpu_id;
        let offset = addr & (PAGE_SIZE - 1);
        let aligned_size = page_align(offset.checked_add(size).ok_or(memory::Error::SizeOverflow)?)
            .ok_or(memory::Error::SizeOverflow)?;
        self.promise_slot()?;
        let va = match self.allocate_va(ApertureId::Default, aligned_size, None, None) {
            Ok(a) => a,
            Err(e) => {
                self.keep_promise();
                return Err(e);
            }
        };
        Ok(RegisterPlan {
            va: (ApertureId::Default, va),
            aligned_addr: addr & !(PAGE_SIZE - 1),
            aligned_size,
            gpu_id,
            node,
            flags: alloc_flags(BufferKind::RegisteredUser, flags, self.settings.disable_cache),
        })
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// Registers `size` bytes of application memory at CPU address `addr` for GPU access
    /// (`hsaKmtRegisterMemory`: coarse-grained); returns the GPU address of `addr`. Map it with
    /// [`Kfd::map_memory_to_gpu`] (passing `addr`).
    ///
    /// # Errors
    /// [`memory::Error::ZeroSize`]; [`memory::Error::NotUserMemory`] for memory the library
    /// allocated; [`memory::Error::CapacityExhausted`]; [`Error::Ioctl`] (`EFAULT` for memory
    /// that is not mapped); [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn register_memory(&self, addr: u64, size: u64) -> Result<u64, Error> {
        self.register(addr, size, None, MemFlags::COARSE_GRAIN)
    }

    /// As [`Kfd::register_memory`], restricted to `nodes` (`hsaKmtRegisterMemoryToNodes`): the
    /// default mapping then covers exactly those GPUs. Registering the same range again must
    /// name the same nodes.
    ///
    /// # Errors
    /// As [`Kfd::register_memory`], plus [`memory::Error::NoNodes`],
    /// [`memory::Error::UnknownNode`], [`memory::Error::NotAGpu`],
    /// [`memory::Error::RegisteredToOtherNodes`].
    pub fn register_memory_to_nodes(
        &self,
        addr: u64,
        size: u64,
        nodes: &[u32],
    ) -> Result<u64, Error> {
        self.check_open()?;
        if nodes.is_empty() {
            return Err(memory::Error::NoNodes.into());
        }
        let set = {
            let st = self.memory.lock();
            let mut set = NodeSet::EMPTY;
            for &n in nodes {
                st.gpu(n)?;
                set.insert(n)?;
            }
            set
        };
        self.register(addr, size, Some(set), MemFlags::COARSE_GRAIN)
    }

    /// As [`Kfd::register_memory`] with explicit flags (`hsaKmtRegisterMemoryWithFlags`):
    /// `HostAccess` must be set and `NonPaged` clear; `CoarseGrain` and `ExtendedCoherent`
    /// select the coherence.
    ///
    /// # Errors
    /// As [`Kfd::register_memory`], plus [`memory::Error::InvalidFlags`] (`CoarseGrain` with
    /// `ExtendedCoherent`) and [`memory::Error::NotSupported`] (not ordinary paged host memory).
    pub fn register_memory_with_flags(
        &self,
        addr: u64,
        size: u64,
        flags: MemFlags,
    ) -> Result<u64, Error> {
        if !flags.contains(MemFlags::HOST_ACCESS) || flags.contains(MemFlags::NON_PAGED) {
            return Err(memory::Error::NotSupported.into());
        }
        self.register(addr, size, None, flags)
    }

    fn register(
        &self,
        addr: u64,
        size: u64,
        nodes: Option<NodeSet>,
        flags: MemFlags,
    ) -> Result<u64, Error> {
        self.check_open()?;
        if size == 0 {
            return Err(memory::Error::ZeroSize.into());
        }
        if flags.contains(MemFlags::COARSE_GRAIN | MemFlags::EXTENDED_COHERENT) {
            return Err(memory::Error::InvalidFlags.into());
        }
        let plan = {
            let mut st = self.memory.lock();
            if let Some(va) = st.register_again(addr, size, nodes)? {
                return Ok(va);
            }
            st.plan_register(addr, size, flags)?
        };
        let created = self.kfd_alloc_split(
            plan.gpu_id,
            plan.va.1.addr,
            plan.aligned_size,
            plan.flags,
            Some(plan.aligned_addr),
        );
        let (handles, mmap_offset) = match created {
            Ok(c) => c,
            Err(e) => {
                let mut st = self.memory.lock();
                st.release_va(Some(plan.va));
                st.keep_promise();
                return Err(e);
            }
        };
        let mut obj = MemoryObject::new(
            plan.va.1.addr,
            plan.aligned_size,
            MemoryKind::RegisteredUser,
            flags,
            plan.node,
            MemoryPayload::new(None, Some(plan.va), plan.gpu_id),
        )
        .with_userptr(addr, size)
        .with_kfd_handles(handles);
        obj.mmap_offset = mmap_offset;
        obj.registration_count = 1;
        obj.registered_nodes = nodes.unwrap_or_default();
        let mut st = self.memory.lock();
        st.keep_promise();
        match st.objects.insert(obj) {
            Ok(_) => Ok(gpu_address(plan.va.1.addr, addr)),
            Err((e, _)) => {
                // Another thread registered the same range meanwhile: count on its object and
                // give our buffer back (libhsakmt handles the same race the same way).
                let again = st.register_again(addr, size, nodes);
                drop(st);
                self.free_buffers(handles.as_slice());
                self.memory.lock().release_va(Some(plan.va));
                match again {
                    Ok(Some(va)) => Ok(va),
                    Ok(None) => Err(e.into()),
                    Err(e) => Err(e.into()),
                }
            }
        }
    }

    /// Deregisters memory (`hsaKmtDeregisterMemory`): drops one registration of user memory
    /// registered at CPU address `addr` (the last one unmaps and releases its buffer); releases
    /// an imported dma-buf; forgets the node registration of allocated memory.
    ///
    /// # Errors
    /// [`memory::Error::UnknownAddress`]; [`memory::Error::NotRegistered`] for allocated memory
    /// registered to no nodes; [`memory::Error::Busy`], [`memory::Error::MappingInUse`];
    /// [`Error::Ioctl`] from the unmap or free; [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn deregister_memory(&self, addr: u64) -> Result<(), Error> {
        self.check_open()?;
        {
            let mut st = self.memory.lock();
            let h = st.find_named(addr).ok_or(memory::Error::UnknownAddress { addr })?;
            let o = st.objects.get_mut(h)?;
            if o.kind != MemoryKind::RegisteredUser && !o.payload.imported {
                if o.registered_nodes.is_empty() {
                    return Err(memory::Error::NotRegistered { addr }.into());
                }
                o.registered_nodes = NodeSet::EMPTY;
                o.registration_count = 0;
                return Ok(());
            }
        }
        self.release(Target::Address(addr))
    }
}
