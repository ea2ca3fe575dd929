//! What the library knows about an address: `hsaKmtQueryPointerInfo` and
//! `hsaKmtSetMemoryUserData` (libhsakmt `hsakmt_fmm_get_mem_info`,
//! `hsakmt_fmm_set_mem_user_data`).

use crate::memory::objects::{MemoryHandle, MemoryKind, MemoryObject};
use crate::memory::{self, MemFlags, NodeSet, PAGE_SIZE};
use crate::platform::Platform;

use super::state::{self, ApertureId, MemoryPayload, MemoryStorage, SvmMode};
use super::{Error, Kfd};
use crate::memory::aperture::ReportedAperture;

/// `HSA_POINTER_TYPE`: what kind of memory an address belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PointerKind {
    /// Allocated by the library (`HSA_POINTER_ALLOCATED`).
    Allocated,
    /// Application memory registered for GPU access (`HSA_POINTER_REGISTERED_USER`).
    RegisteredUser,
    /// An imported dma-buf / graphics buffer (`HSA_POINTER_REGISTERED_GRAPHICS`).
    RegisteredGraphics,
    /// An address range without memory (`HSA_POINTER_RESERVED_ADDR`, `OnlyAddress`).
    ReservedAddress,
}

/// `HsaPointerInfo`, with node sets instead of heap arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PointerInfo {
    /// What kind of memory.
    pub kind: PointerKind,
    /// The owning node.
    pub node: u32,
    /// The allocation flags as requested (libhsakmt records `HsaMemFlags`, not ioctl flags).
    pub flags: MemFlags,
    /// The CPU address: the registered user pointer, or the start of memory the CPU can access;
    /// `None` for memory without a CPU mapping.
    pub cpu_address: Option<u64>,
    /// The GPU address (for registered user memory, of the user pointer itself).
    pub gpu_address: u64,
    /// Size in bytes (for registered user memory, the registered size).
    pub size: u64,
    /// Nodes the memory is registered to.
    pub registered_nodes: NodeSet,
    /// Nodes the memory is mapped on.
    pub mapped_nodes: NodeSet,
    /// The value set with [`Kfd::set_user_data`].
    pub user_data: u64,
    /// The library's name of the object.
    pub handle: MemoryHandle,
}

/// The address ranges a GPU node reports to the runtime (libhsakmt's
/// `hsakmt_fmm_get_aperture_base_and_limit`, which `hsaKmtGetNodeMemoryProperties` turns into the
/// LDS, scratch and SVM heaps). A range is `None` when the kernel did not set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NodeApertures {
    /// LDS aperture `(base, limit)`, limit inclusive.
    pub lds: Option<(u64, u64)>,
    /// Scratch aperture `(base, limit)`.
    pub scratch: Option<(u64, u64)>,
    /// GPUVM aperture `(base, limit)`.
    pub gpuvm: Option<(u64, u64)>,
    /// The SVM apertures as one range: from the base of the fine-grained (coherent) aperture to
    /// the limit of the coarse-grained one; `None` without SVM apertures.
    pub svm: Option<(u64, u64)>,
}

fn range(a: &ReportedAperture) -> Option<(u64, u64)> {
    a.is_valid().then_some((a.base, a.limit))
}

fn info_of<M>(handle: MemoryHandle, o: &MemoryObject<MemoryPayload<M>>) -> PointerInfo {
    let kind = match o.kind {
        MemoryKind::RegisteredUser => PointerKind::RegisteredUser,
        MemoryKind::ImportedDmaBuf => PointerKind::RegisteredGraphics,
        MemoryKind::ReservedAddress => PointerKind::ReservedAddress,
        _ => PointerKind::Allocated,
    };
    let mut info = PointerInfo {
        kind,
        node: o.node,
        flags: o.flags,
        cpu_address: None,
        gpu_address: o.start(),
        size: o.size(),
        registered_nodes: o.registered_nodes,
        mapped_nodes: o.mapped_nodes,
        user_data: o.user_data,
        handle,
    };
    if let Some(u) = o.userptr() {
        info.cpu_address = Some(u.addr);
        info.size = u.size;
        info.gpu_address = info.gpu_address.saturating_add(u.addr & (PAGE_SIZE - 1));
    } else if o.payload.mapping.is_some() || o.payload.view_out {
        info.cpu_address = Some(o.start());
    }
    info
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// What the library knows about the memory containing `addr` (`hsaKmtQueryPointerInfo`):
    /// any address inside an allocation (its GPU range) or inside registered user memory (its
    /// CPU range) resolves to that object.
    ///
    /// # Errors
    /// [`memory::Error::UnknownAddress`] (libhsakmt's `HSA_POINTER_UNKNOWN`);
    /// [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn pointer_info(&self, addr: u64) -> Result<PointerInfo, Error> {
        self.check_open()?;
        let st = self.memory.lock();
        let h = st.find_containing(addr).ok_or(memory::Error::UnknownAddress { addr })?;
        Ok(info_of(h, st.objects.get(h)?))
    }

    /// As [`Kfd::pointer_info`] for the object `handle` names.
    ///
    /// # Errors
    /// [`memory::Error::StaleHandle`] / [`memory::Error::InvalidHandle`] when it names no live
    /// object; [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn handle_info(&self, handle: MemoryHandle) -> Result<PointerInfo, Error> {
        self.check_open()?;
        let st = self.memory.lock();
        Ok(info_of(handle, st.objects.get(handle)?))
    }

    /// The apertures GPU `node` reports (see [`NodeApertures`]).
    ///
    /// # Errors
    /// [`memory::Error::UnknownNode`], [`memory::Error::NotAGpu`]; [`Error::NotOpened`] /
    /// [`Error::ForkedChild`].
    pub fn node_apertures(&self, node: u32) -> Result<NodeApertures, Error> {
        self.check_open()?;
        let st = self.memory.lock();
        let g = st.gpu(node)?;
        let svm = match st.mode {
            SvmMode::None => None,
            SvmMode::Slabs => Some((st.default.config().base, st.default.config().limit)),
            SvmMode::Reserved => Some((st.coherent.config().base, st.default.config().limit)),
        };
        Ok(NodeApertures {
            lds: range(&g.lds),
            scratch: range(&g.scratch),
            gpuvm: range(&g.gpuvm),
            svm: svm.filter(|(b, l)| b < l),
        })
    }

    /// Attaches an opaque value to the memory starting at `addr` (or registered at CPU address
    /// `addr`), returned by [`Kfd::pointer_info`] (`hsaKmtSetMemoryUserData`).
    ///
    /// # Errors
    /// [`memory::Error::UnknownAddress`]; [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn set_user_data(&self, addr: u64, user_data: u64) -> Result<(), Error> {
        self.check_open()?;
        let mut st = self.memory.lock();
        let h = st.find_named(addr).ok_or(memory::Error::UnknownAddress { addr })?;
        st.objects.get_mut(h)?.user_data = user_data;
        Ok(())
    }
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

impl<P: Platform, S: state::MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// The KFD buffer handle of the memory starting at `addr` (for example the event page's,
    /// which the first `CREATE_EVENT` takes); inside a scratch range, that of the mapped slice
    /// starting at `addr`.
    ///
    /// # Errors
    /// [`memory::Error::UnknownAddress`], [`memory::Error::NoKfdBuffer`] for address-only
    /// ranges and scratch without a mapped slice at `addr`; [`Error::NotOpened`] /
    /// [`Error::ForkedChild`].
    pub fn kfd_handle(&self, addr: u64) -> Result<u64, Error> {
        self.check_open()?;
        let st = self.memory.lock();
        let none = memory::Error::NoKfdBuffer { addr };
        if st.scratch_containing(addr).is_some() {
            let slice = st.scratch_slices.find(addr).filter(|s| s.is_mapped()).ok_or(none)?;
            return Ok(slice.handle);
        }
        let h = st.find_named(addr).ok_or(memory::Error::UnknownAddress { addr })?;
        let o = st.objects.get(h)?;
        Ok(o.kfd_handles.first().ok_or(none)?)
    }

    /// A CPU view of the memory containing `addr` (the whole object; its
    /// [`SharedMemory::addr`](crate::platform::SharedMemory::addr) is the object's start).
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

    /// Every GPU node the kernel reported apertures for (what
    /// [`MapNodes::All`](super::MapNodes::All) maps).
    ///
    /// # Errors
    /// [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn gpu_nodes(&self) -> Result<NodeSet, Error> {
        self.check_open()?;
        Ok(self.memory.lock().gpus)
    }
}
