//! Memory facts and buffers that come straight from the kernel: available VRAM
//! (`hsaKmtAvailableMemory`), the legacy memory policy (`hsaKmtSetMemoryPolicy`), and the
//! doorbell and MMIO-remap pages (`hsakmt_fmm_allocate_doorbell`, `map_mmio`).

use crate::memory::kfd_flags::{BufferKind, alloc_flags};
use crate::memory::objects::{MemoryKind, MemoryObject};
use crate::memory::{self, CachePolicy, MemFlags, PAGE_SIZE};
use crate::platform::{Access, Ioctl, Platform};
use crate::uapi::*;

use super::state::{ApertureId, MemoryPayload, MemoryStorage, SvmMode};
use super::{Allocation, Error, Kfd, MapNodes};

/// Where the kernel's answer maps a special page for the CPU.
#[derive(Debug, Clone, Copy)]
enum CpuPage {
    /// `/dev/kfd` at this offset (the doorbell offset from `CREATE_QUEUE`).
    Kfd(u64),
    /// `/dev/kfd` at the mmap offset `ALLOC_MEMORY_OF_GPU` returns (MMIO remap).
    KfdFromAlloc,
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// Bytes of VRAM still available to this process on GPU `node` (`hsaKmtAvailableMemory`).
    ///
    /// # Errors
    /// [`Error::NotSupported`] before KFD 1.9; [`memory::Error::UnknownNode`],
    /// [`memory::Error::NotAGpu`]; [`Error::Ioctl`]; [`Error::NotOpened`] /
    /// [`Error::ForkedChild`].
    pub fn available_memory(&self, node: u32) -> Result<u64, Error> {
        self.check_open()?;
        self.require_minor("available memory", since::AVAILABLE_MEMORY)?;
        let gpu_id = self.memory.lock().gpu(node)?.gpu_id;
        let mut args = kfd_ioctl_get_available_memory_args { available: 0, gpu_id, pad: 0 };
        self.raw_ioctl(&mut Ioctl::AvailableMemory(&mut args))?;
        Ok(args.available)
    }

    /// Sets the cache policy of GPU `node`'s default and alternate apertures
    /// (`hsaKmtSetMemoryPolicy`). Like libhsakmt this applies to Kaveri (gfx 7.0) only: on every
    /// other GPU the library sets the policy itself at open (coherent alternate aperture over
    /// the coherent SVM aperture) and refuses to change it.
    ///
    /// # Errors
    /// [`memory::Error::UnknownNode`], [`memory::Error::NotAGpu`];
    /// [`memory::Error::NotSupported`] on anything but Kaveri; [`memory::Error::InvalidFlags`]
    /// for a policy other than cached or non-cached; [`memory::Error::Misaligned`];
    /// [`Error::Ioctl`]; [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn set_memory_policy(
        &self,
        node: u32,
        default: CachePolicy,
        alternate: CachePolicy,
        alternate_base: u64,
        alternate_size: u64,
    ) -> Result<(), Error> {
        self.check_open()?;
        let gpu = *self.memory.lock().gpu(node)?;
        if !gpu.kaveri {
            return Err(memory::Error::NotSupported.into());
        }
        let policy = |p| match p {
            CachePolicy::Cached => Ok(KFD_IOC_CACHE_POLICY_COHERENT),
            CachePolicy::NonCached => Ok(KFD_IOC_CACHE_POLICY_NONCOHERENT),
            _ => Err(memory::Error::InvalidFlags),
        };
        for v in [alternate_base, alternate_size] {
            if !v.is_multiple_of(PAGE_SIZE) {
                return Err(memory::Error::Misaligned { value: v }.into());
            }
        }
        let mut args = kfd_ioctl_set_memory_policy_args {
            alternate_aperture_base: alternate_base,
            alternate_aperture_size: alternate_size,
            gpu_id: gpu.gpu_id,
            default_policy: policy(default)?,
            alternate_policy: policy(alternate)?,
            misc_process_flag: 0,
        };
        self.raw_ioctl(&mut Ioctl::SetMemoryPolicy(&mut args))
    }

    /// Allocates GPU `node`'s doorbell page(s) (`hsakmt_fmm_allocate_doorbell`): a `DOORBELL`
    /// buffer of `size` bytes (the kernel's process doorbell slice) in the coherent aperture,
    /// mapped for the CPU at `/dev/kfd` offset `doorbell_offset` (from `CREATE_QUEUE`). Map it
    /// on GPUs with [`Kfd::map_memory_to_gpu`] like any buffer.
    ///
    /// # Errors
    /// As [`Kfd::alloc_memory`]; the kernel rejects a size other than its doorbell slice
    /// (`EINVAL`).
    pub fn alloc_doorbell(
        &self,
        node: u32,
        size: u64,
        doorbell_offset: u64,
    ) -> Result<Allocation<P::Mapping>, Error> {
        self.alloc_page(node, size, BufferKind::Doorbell, CpuPage::Kfd(doorbell_offset))
    }

    /// Allocates and maps GPU `node`'s MMIO remap (HDP flush) page (`map_mmio`): one page in
    /// the coherent aperture, mapped for the CPU through `/dev/kfd` and on the GPU and its peers.
    ///
    /// # Errors
    /// As [`Kfd::alloc_memory`].
    pub fn alloc_mmio_remap(&self, node: u32) -> Result<Allocation<P::Mapping>, Error> {
        let a = self.alloc_page(node, PAGE_SIZE, BufferKind::MmioRemap, CpuPage::KfdFromAlloc)?;
        if let Err(e) = self.map_memory_to_gpu(a.addr, MapNodes::Default) {
            let _ = self.free(a);
            return Err(e);
        }
        Ok(a)
    }

    fn alloc_page(
        &self,
        node: u32,
        size: u64,
        kind: BufferKind,
        cpu: CpuPage,
    ) -> Result<Allocation<P::Mapping>, Error> {
        self.check_open()?;
        let (va, gpu_id) = {
            let mut st = self.memory.lock();
            let gpu_id = st.gpu(node)?.gpu_id;
            let id = match st.mode {
                SvmMode::None => return Err(memory::Error::NotSupported.into()),
                SvmMode::Slabs => ApertureId::Default,
                SvmMode::Reserved => ApertureId::Coherent,
            };
            st.promise_slot()?;
            match st.allocate_va(id, size, None, None) {
                Ok(a) => ((id, a), gpu_id),
                Err(e) => {
                    st.keep_promise();
                    return Err(e.into());
                }
            }
        };
        let undo = |e| {
            let mut st = self.memory.lock();
            st.release_va(Some(va));
            st.keep_promise();
            e
        };
        let flags = alloc_flags(kind, MemFlags::empty(), false);
        let (handles, mmap_offset) =
            self.kfd_alloc_split(gpu_id, va.1.addr, va.1.size, flags, None).map_err(undo)?;
        let offset = match cpu {
            CpuPage::Kfd(o) => o,
            CpuPage::KfdFromAlloc => mmap_offset,
        };
        let mapping =
            match self.platform.map_kfd(offset, va.1.size, Some(va.1.addr), Access::ReadWrite) {
                Ok(m) => m,
                Err(errno) => {
                    self.free_buffers(handles.as_slice());
                    return Err(undo(Error::Platform(errno)));
                }
            };
        let user_view = mapping.clone();
        let kind = match kind {
            BufferKind::Doorbell => MemoryKind::Doorbell,
            _ => MemoryKind::Mmio,
        };
        let mut obj = MemoryObject::new(
            va.1.addr,
            va.1.size,
            kind,
            MemFlags::NON_PAGED | MemFlags::HOST_ACCESS,
            node,
            MemoryPayload::new(Some(mapping), Some(va), gpu_id),
        )
        .with_kfd_handles(handles);
        obj.mmap_offset = offset;
        let mut st = self.memory.lock();
        st.keep_promise();
        match st.objects.insert(obj) {
            Ok(handle) => Ok(Allocation {
                addr: va.1.addr,
                size: va.1.size,
                handle,
                kfd_handle: handles.first(),
                node,
                mapping: Some(user_view),
            }),
            Err((e, obj)) => {
                drop(st);
                drop(user_view);
                drop(obj);
                self.free_buffers(handles.as_slice());
                self.memory.lock().release_va(Some(va));
                Err(e.into())
            }
        }
    }
}
