//! The memory ioctls of the emulated `/dev/kfd`, validated and answered the way amdkfd's
//! `kfd_chardev.c` and `amdgpu_amdkfd_gpuvm.c` do, with the same errnos:
//!
//! | ioctl | checks (errno) |
//! |---|---|
//! | `ALLOC_MEMORY_OF_GPU` | size 0 (`EINVAL`); pages overlapping an SVM range (`EADDRINUSE`); unknown gpu_id, public VRAM on a small-BAR GPU, doorbell size other than the doorbell slice, MMIO size other than a page, no domain flag (`EINVAL`); VM not acquired (`ENODEV`); VRAM exhausted (`ENOMEM`); user pointer to unmapped memory (`EFAULT`) |
//! | `FREE_MEMORY_OF_GPU` | unknown gpu_id or handle (`EINVAL`); the event page (`EPERM`); still GPU-mapped, or used by a queue (`EBUSY`) |
//! | `MAP_MEMORY_TO_GPU` | unknown gpu_id of the handle, empty device list, `n_success > n_devices`, unknown peer, a buffer without a virtual address, an address that is not page aligned, a range that wraps or ends above the 48-bit VM, a range that overlaps any buffer mapped on the peer (`EINVAL`); unknown handle (`ENOMEM`); peer VM not acquired (`ENODEV`). Maps from `n_success` on and advances it per device |
//! | `UNMAP_MEMORY_FROM_GPU` | as map; used by a queue (`EBUSY`) |
//! | `AVAILABLE_MEMORY` | unknown gpu_id (`EINVAL`); answers VRAM size − VRAM used |
//! | `EXPORT_DMABUF` | unknown gpu_id or handle, user-pointer / doorbell / MMIO buffers (`EINVAL`) |
//! | `GET_DMABUF_INFO`, `IMPORT_DMABUF` | unknown descriptor (`EBADF`), unknown gpu_id (`EINVAL`), VM not acquired (`ENODEV`) |
//! | `SVM` | unaligned or empty range, bad attribute type or gpu_id, unknown op (`EINVAL`); range not mapped (`EFAULT` for SET, `EINVAL` for GET); range overlapping a KFD buffer (`EADDRINUSE`) |
//! | `SET_XNACK_MODE` | queues exist (`EBUSY`); a GPU without XNACK support (`EPERM`) |
//! | `SET_SCRATCH_BACKING_VA` | unknown gpu_id (`EINVAL`); VM not acquired (`ENODEV`) |
//!
//! Memory behind buffers is real host memory at the buffer's GPU virtual address (GPU VA == CPU
//! VA), created when first needed — a CPU mapping of the buffer, an export, or the simulated GPU
//! resolving an address — as shared anonymous memory, so that a dma-buf can map the same pages
//! again elsewhere and keep them alive after the buffer is freed. User-pointer buffers are the
//! application's own memory.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use hsakmt_core::error::Errno;
use hsakmt_core::uapi::*;
use hsakmt_hostmem as host;
use hsakmt_hostmem::HostMapping;

use crate::mapping::SimMapping;

use super::dmabuf::DmaBufs;
use super::svm::SvmRange;

/// Where DRM mmap offsets of buffers start (`DRM_FILE_PAGE_OFFSET_START` pages).
const DRM_OFFSET_BASE: u64 = 0x1_0000 << 12;
/// `KFD_MMAP_TYPE_DOORBELL` (kfd_priv.h).
const KFD_MMAP_TYPE_DOORBELL: u64 = 0x3 << 62;
/// `KFD_MMAP_TYPE_MMIO` (kfd_priv.h).
const KFD_MMAP_TYPE_MMIO: u64 = 0x0 << 62;
/// `KFD_MMAP_GPU_ID_SHIFT`.
const KFD_MMAP_GPU_ID_SHIFT: u64 = 46;
/// A process's doorbell slice on gfx9+ (1024 queues × 8-byte doorbells).
pub const DOORBELL_SLICE: u64 = 1024 * 8;
/// The GPU VM's size: `amdgpu_vm_verify_parameters` refuses a mapping whose last page is at
/// or above `max_pfn` (2^36 pages of a 48-bit, 4-level gfx9+ VM).
pub(crate) const VM_LIMIT: u64 = 1 << 48;
const PAGE: u64 = 4096;

const fn page_align(v: u64) -> u64 {
    v.saturating_add(PAGE - 1) & !(PAGE - 1)
}

/// What the sim knows about one GPU's memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GpuMemory {
    pub(crate) gpu_id: u32,
    pub(crate) vram_size: u64,
    pub(crate) large_bar: bool,
    pub(crate) xnack_capable: bool,
}

/// One buffer object.
#[derive(Debug)]
pub(crate) struct Bo {
    pub(crate) gpu_id: u32,
    /// GPU virtual address (0: none).
    pub(crate) va: u64,
    pub(crate) size: u64,
    pub(crate) flags: u32,
    pub(crate) mmap_offset: u64,
    /// CPU address of user-pointer memory.
    pub(crate) user_addr: Option<u64>,
    /// gpu_ids the buffer is mapped on.
    pub(crate) mapped: Vec<u32>,
    pub(crate) backing: Option<HostMapping>,
    /// The view of user-pointer memory, made at the first GPU access after checking the
    /// memory is mapped (amdkfd pins the pages at registration; from then on the application
    /// keeps them mapped until it deregisters them — libhsakmt's contract).
    pub(crate) user_view: Option<HostMapping>,
    /// VRAM bytes charged to the GPU.
    pub(crate) vram_charge: u64,
    /// System-memory bytes counted for the GPU.
    pub(crate) system_charge: u64,
    /// Queues using the buffer (set by the queue model).
    pub(crate) queue_pins: u32,
}

impl Bo {
    fn is_userptr(&self) -> bool {
        self.flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR != 0
    }

    fn is_special(&self) -> bool {
        self.flags & (KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP) != 0
    }

    /// Host memory behind the buffer, created at its address on first use.
    fn backing(&mut self) -> Result<&HostMapping, Errno> {
        if self.backing.is_none() {
            let len = page_align(self.size);
            self.backing = Some(if self.va == 0 {
                host::map_shared_anywhere(len)?
            } else {
                host::map_shared(self.va, len)?
            });
        }
        self.backing.as_ref().ok_or(Errno::ENOMEM)
    }
}

/// Memory accounting of one GPU, for tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GpuMemoryUsage {
    /// VRAM bytes allocated.
    pub vram_used: u64,
    /// VRAM size from the profile.
    pub vram_size: u64,
    /// System-memory bytes (GTT and user-pointer buffers) created on this GPU.
    pub system_bytes: u64,
    /// Buffers created on this GPU.
    pub buffers: u32,
    /// Buffer mappings on this GPU (a buffer mapped on it counts once).
    pub mappings: u32,
}

/// Memory totals of the emulated device ([`Memory::totals`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct MemoryTotals {
    pub(crate) buffers: usize,
    pub(crate) mappings: usize,
    pub(crate) vram_bytes: u64,
    pub(crate) system_bytes: u64,
    pub(crate) svm_ranges: usize,
    pub(crate) scratch_backings: usize,
    pub(crate) pinned: usize,
}

/// The memory part of the emulated device.
#[derive(Debug, Default)]
pub(crate) struct Memory {
    pub(crate) gpus: Vec<GpuMemory>,
    pub(crate) bos: HashMap<u64, Bo>,
    pub(super) by_va: BTreeMap<u64, u64>,
    /// Each GPU VM's mappings: start → (end, handle). They never overlap (a conflicting map
    /// is refused), so the mapping just below an address is the only one that can cover it.
    vm_maps: HashMap<u32, BTreeMap<u64, (u64, u64)>>,
    by_offset: HashMap<u64, u64>,
    /// VRAM bytes charged per gpu_id.
    vram_used: HashMap<u32, u64>,
    idr_next: HashMap<u32, u32>,
    idr_free: HashMap<u32, BTreeSet<u32>>,
    next_offset: u64,
    dmabufs: DmaBufs,
    pub(super) svm: Vec<SvmRange>,
    pub(crate) xnack: bool,
    pub(crate) scratch: HashMap<u32, u64>,
    /// The event page's handle (freeing it is refused, as in the kernel); set by the event model.
    pub(crate) signal_handle: Option<u64>,
    /// Live queues (set by the queue model): XNACK mode cannot change while there are any.
    pub(crate) live_queues: u32,
    /// The next `MAP_MEMORY_TO_GPU` maps this many devices and then fails with this errno.
    pub(crate) map_failure: Option<(u32, Errno)>,
    /// Device mappings performed, in all (a resumed map must not repeat any).
    pub(crate) device_maps: u64,
}

/// The gpu_id part of a KFD buffer handle (`GET_GPU_ID`).
const fn handle_gpu(handle: u64) -> u32 {
    (handle >> 32) as u32
}

impl Memory {
    pub(crate) fn new(gpus: Vec<GpuMemory>) -> Self {
        Self { gpus, next_offset: DRM_OFFSET_BASE, ..Self::default() }
    }

    fn gpu(&self, gpu_id: u32) -> Result<&GpuMemory, Errno> {
        self.gpus.iter().find(|g| g.gpu_id == gpu_id).ok_or(Errno::EINVAL)
    }

    pub(super) fn gpu_index(&self, gpu_id: u32) -> Option<usize> {
        self.gpus.iter().position(|g| g.gpu_id == gpu_id)
    }

    /// Forgets every buffer, SVM range and setting (the process's KFD state goes with the
    /// device); dma-bufs are files of their own and stay.
    pub(crate) fn reset(&mut self) {
        let gpus = std::mem::take(&mut self.gpus);
        let dmabufs = std::mem::take(&mut self.dmabufs);
        let maps = self.device_maps;
        *self = Self::new(gpus);
        self.dmabufs = dmabufs;
        self.device_maps = maps;
    }

    /// Forgets every buffer of a process this one was forked from: their host memory was
    /// `MADV_DONTFORK` (it is not in this process), so the mappings are leaked, never unmapped
    /// or re-reserved — the addresses may belong to something else here by now.
    pub(crate) fn forget_inherited(&mut self) {
        for bo in self.bos.values_mut() {
            std::mem::forget(bo.backing.take());
            std::mem::forget(bo.user_view.take());
        }
        self.reset();
    }

    fn new_handle(&mut self, gpu_id: u32) -> u64 {
        let free = self.idr_free.entry(gpu_id).or_default();
        let idr = match free.pop_first() {
            Some(i) => i,
            None => {
                let next = self.idr_next.entry(gpu_id).or_insert(0);
                *next += 1;
                *next - 1
            }
        };
        (u64::from(gpu_id) << 32) | u64::from(idr)
    }

    fn vram_used(&self, gpu_id: u32) -> u64 {
        self.vram_used.get(&gpu_id).copied().unwrap_or(0)
    }

    /// `kfd_ioctl_alloc_memory_of_gpu`. `vm` says whether the GPU's VM was acquired.
    pub(crate) fn alloc(
        &mut self,
        args: &mut kfd_ioctl_alloc_memory_of_gpu_args,
        vm: bool,
    ) -> Result<(), Errno> {
        if args.size == 0 {
            return Err(Errno::EINVAL);
        }
        // "Address ... already allocated by SVM": the pages overlap an SVM range.
        let last = args.va_addr.saturating_add(args.size - 1);
        if self.svm_overlaps(args.va_addr, last) {
            return Err(Errno::EADDRINUSE);
        }
        let gpu = *self.gpu(args.gpu_id)?;
        let flags = args.flags;
        let vram = flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM != 0;
        if vram && flags & KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC != 0 && !gpu.large_bar {
            // "Alloc host visible vram on small bar is not allowed"
            return Err(Errno::EINVAL);
        }
        if !vm {
            return Err(Errno::ENODEV);
        }
        let special_offset = |ty: u64| ty | (u64::from(args.gpu_id) << KFD_MMAP_GPU_ID_SHIFT);
        let mut offset = None;
        if flags & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL != 0 {
            if args.size != DOORBELL_SLICE {
                return Err(Errno::EINVAL);
            }
            offset = Some(special_offset(KFD_MMAP_TYPE_DOORBELL));
        } else if flags & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP != 0 {
            if args.size != PAGE {
                return Err(Errno::EINVAL);
            }
            offset = Some(special_offset(KFD_MMAP_TYPE_MMIO));
        }
        let (mut vram_charge, mut system_charge) = (0, 0);
        if vram {
            let mut size = args.size;
            if flags & KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM != 0 {
                size >>= 1;
            }
            vram_charge = page_align(size);
            if self.vram_used(args.gpu_id).saturating_add(vram_charge) > gpu.vram_size {
                return Err(Errno::ENOMEM);
            }
        } else if flags & KFD_IOC_ALLOC_MEM_FLAGS_GTT != 0 {
            system_charge = page_align(args.size);
        } else if flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR != 0 {
            // The kernel pins the user pages at allocation: unmapped memory faults.
            if !host::is_mapped(args.mmap_offset & !(PAGE - 1), page_align(args.size)) {
                return Err(Errno::EFAULT);
            }
            system_charge = page_align(args.size);
        } else if offset.is_none() {
            return Err(Errno::EINVAL);
        }
        let user_addr = (flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR != 0).then_some(args.mmap_offset);
        let mmap_offset = offset.unwrap_or_else(|| {
            let o = self.next_offset;
            self.next_offset += page_align(args.size);
            o
        });
        let handle = self.new_handle(args.gpu_id);
        *self.vram_used.entry(args.gpu_id).or_insert(0) += vram_charge;
        self.bos.insert(
            handle,
            Bo {
                gpu_id: args.gpu_id,
                va: args.va_addr,
                size: args.size,
                flags,
                mmap_offset,
                user_addr,
                mapped: Vec::new(),
                backing: None,
                user_view: None,
                vram_charge,
                system_charge,
                queue_pins: 0,
            },
        );
        if args.va_addr != 0 {
            self.by_va.insert(args.va_addr, handle);
        }
        self.by_offset.entry(mmap_offset).or_insert(handle);
        args.handle = handle;
        args.mmap_offset = mmap_offset;
        Ok(())
    }

    /// `kfd_ioctl_free_memory_of_gpu`. For a doorbell buffer, its GPU and address: the caller
    /// forgets the doorbell page viewed there (the view must not outlive the buffer, or it
    /// would keep the address mapped after the process's allocator reused it).
    pub(crate) fn free(
        &mut self,
        args: &kfd_ioctl_free_memory_of_gpu_args,
    ) -> Result<Option<(u32, u64)>, Errno> {
        if self.signal_handle == Some(args.handle) {
            // "Free signal BO is not allowed"
            return Err(Errno::EPERM);
        }
        self.gpu(handle_gpu(args.handle))?;
        let bo = self.bos.get(&args.handle).ok_or(Errno::EINVAL)?;
        if !bo.mapped.is_empty() || bo.queue_pins > 0 {
            // "BO VA ... is still mapped."
            return Err(Errno::EBUSY);
        }
        let bo = self.bos.remove(&args.handle).ok_or(Errno::EINVAL)?;
        if let Some(used) = self.vram_used.get_mut(&bo.gpu_id) {
            *used = used.saturating_sub(bo.vram_charge);
        }
        if bo.va != 0 && self.by_va.get(&bo.va) == Some(&args.handle) {
            self.by_va.remove(&bo.va);
        }
        if self.by_offset.get(&bo.mmap_offset) == Some(&args.handle) {
            self.by_offset.remove(&bo.mmap_offset);
        }
        self.idr_free.entry(bo.gpu_id).or_default().insert(args.handle as u32);
        Ok((bo.flags & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL != 0).then_some((bo.gpu_id, bo.va)))
    }

    /// `kfd_ioctl_map_memory_to_gpu`; `vm` says whether a gpu_id's VM was acquired.
    pub(crate) fn map(
        &mut self,
        args: &mut kfd_ioctl_map_memory_to_gpu_args,
        devices: &[u32],
        vm: impl Fn(u32) -> bool,
    ) -> Result<(), Errno> {
        self.gpu(handle_gpu(args.handle))?;
        let n = u32::try_from(devices.len()).map_err(|_| Errno::EINVAL)?;
        if n == 0 || args.n_success > n {
            return Err(Errno::EINVAL);
        }
        let (va, size) = match self.bos.get(&args.handle) {
            Some(b) => (b.va, b.size),
            None => return Err(Errno::ENOMEM),
        };
        if va == 0 {
            return Err(Errno::EINVAL);
        }
        let mut budget = self.map_failure.take();
        for i in args.n_success..n {
            let peer = devices.get(i as usize).copied().ok_or(Errno::EINVAL)?;
            self.gpu(peer)?;
            if !vm(peer) {
                return Err(Errno::ENODEV);
            }
            if let Some((0, errno)) = budget {
                return Err(errno);
            }
            let bo = self.bos.get(&args.handle).ok_or(Errno::ENOMEM)?;
            if !bo.mapped.contains(&peer) {
                let end = self.check_vm_range(peer, va, size)?;
                self.vm_maps.entry(peer).or_default().insert(va, (end, args.handle));
                let bo = self.bos.get_mut(&args.handle).ok_or(Errno::ENOMEM)?;
                bo.mapped.push(peer);
                self.device_maps += 1;
            }
            args.n_success = i + 1;
            budget = budget.map(|(left, errno)| (left.saturating_sub(1), errno));
        }
        Ok(())
    }

    /// `amdgpu_vm_verify_parameters` and the conflict check of `amdgpu_vm_bo_map` for a buffer
    /// of `size` bytes at `va` on GPU `peer`'s VM: the address must be page aligned, the
    /// (page-rounded) range must not wrap and must end below [`VM_LIMIT`], and no mapping of
    /// another buffer on that VM may overlap it — all `EINVAL`. Returns the range's end.
    fn check_vm_range(&self, peer: u32, va: u64, size: u64) -> Result<u64, Errno> {
        if !va.is_multiple_of(PAGE) {
            return Err(Errno::EINVAL);
        }
        let end = va.checked_add(page_align(size)).ok_or(Errno::EINVAL)?;
        if end > VM_LIMIT {
            return Err(Errno::EINVAL);
        }
        let maps = self.vm_maps.get(&peer);
        let below = maps.and_then(|m| m.range(..end).next_back());
        if below.is_some_and(|(_, &(other_end, _))| other_end > va) {
            // "va ... conflict with ..."
            return Err(Errno::EINVAL);
        }
        Ok(end)
    }

    /// `kfd_ioctl_unmap_memory_from_gpu`.
    pub(crate) fn unmap(
        &mut self,
        args: &mut kfd_ioctl_unmap_memory_from_gpu_args,
        devices: &[u32],
    ) -> Result<(), Errno> {
        self.gpu(handle_gpu(args.handle))?;
        let n = u32::try_from(devices.len()).map_err(|_| Errno::EINVAL)?;
        if n == 0 || args.n_success > n {
            return Err(Errno::EINVAL);
        }
        let pinned = self.bos.get(&args.handle).ok_or(Errno::ENOMEM)?.queue_pins > 0;
        for i in args.n_success..n {
            let peer = devices.get(i as usize).copied().ok_or(Errno::EINVAL)?;
            self.gpu(peer)?;
            if pinned {
                // "unmapping BO ... is not allowed, queue refcount"
                return Err(Errno::EBUSY);
            }
            let bo = self.bos.get_mut(&args.handle).ok_or(Errno::ENOMEM)?;
            if bo.mapped.contains(&peer) {
                bo.mapped.retain(|&g| g != peer);
                let va = bo.va;
                if let Some(m) = self.vm_maps.get_mut(&peer)
                    && m.get(&va).is_some_and(|&(_, h)| h == args.handle)
                {
                    m.remove(&va);
                }
            }
            args.n_success = i + 1;
        }
        Ok(())
    }

    /// `kfd_ioctl_get_available_memory`.
    pub(crate) fn available(
        &self,
        args: &mut kfd_ioctl_get_available_memory_args,
    ) -> Result<(), Errno> {
        let gpu = *self.gpu(args.gpu_id)?;
        args.available = gpu.vram_size.saturating_sub(self.vram_used(args.gpu_id));
        Ok(())
    }

    /// `kfd_ioctl_export_dmabuf`.
    pub(crate) fn export(&mut self, args: &mut kfd_ioctl_export_dmabuf_args) -> Result<(), Errno> {
        self.gpu(handle_gpu(args.handle))?;
        let bo = self.bos.get_mut(&args.handle).ok_or(Errno::EINVAL)?;
        if bo.is_userptr() || bo.is_special() {
            return Err(Errno::EINVAL);
        }
        let (size, gpu_id, flags) = (bo.size, bo.gpu_id, bo.flags);
        let memory = bo.backing()?.duplicate(None)?;
        args.dmabuf_fd = self.dmabufs.export(memory, size, gpu_id, flags)?;
        Ok(())
    }

    /// `kfd_ioctl_get_dmabuf_info` (no metadata: KFD buffers carry none).
    pub(crate) fn dmabuf_info(
        &self,
        args: &mut kfd_ioctl_get_dmabuf_info_args,
    ) -> Result<(), Errno> {
        let d = self.dmabufs.get(args.dmabuf_fd)?;
        args.size = d.size;
        args.gpu_id = d.gpu_id;
        args.flags = d.flags;
        args.metadata_size = 0;
        Ok(())
    }

    /// `kfd_ioctl_import_dmabuf`.
    pub(crate) fn import(
        &mut self,
        args: &mut kfd_ioctl_import_dmabuf_args,
        vm: bool,
    ) -> Result<(), Errno> {
        self.gpu(args.gpu_id)?;
        let d = self.dmabufs.get(args.dmabuf_fd)?;
        if !vm {
            return Err(Errno::ENODEV);
        }
        let backing = if args.va_addr == 0 {
            d.memory.clone()
        } else {
            d.memory.duplicate(Some(args.va_addr))?
        };
        let (size, flags) = (d.size, d.flags);
        let handle = self.new_handle(args.gpu_id);
        let mmap_offset = self.next_offset;
        self.next_offset += page_align(size);
        self.bos.insert(
            handle,
            Bo {
                gpu_id: args.gpu_id,
                va: args.va_addr,
                size,
                flags,
                mmap_offset,
                user_addr: None,
                mapped: Vec::new(),
                backing: Some(backing),
                user_view: None,
                vram_charge: 0,
                system_charge: 0,
                queue_pins: 0,
            },
        );
        if args.va_addr != 0 {
            self.by_va.insert(args.va_addr, handle);
        }
        self.by_offset.insert(mmap_offset, handle);
        args.handle = handle;
        Ok(())
    }

    /// Closing a descriptor the library was handed by `EXPORT_DMABUF`: the dma-buf goes (the
    /// buffers importing it keep their own mapping).
    pub(crate) fn close_fd(&mut self, fd: u32) {
        self.dmabufs.close(fd);
    }

    /// A CPU mapping of a buffer through its render node at its DRM mmap offset.
    pub(crate) fn map_buffer(
        &mut self,
        render_gpu: Option<u32>,
        offset: u64,
        size: u64,
        addr: u64,
    ) -> Result<SimMapping, Errno> {
        let handle = *self.by_offset.get(&offset).ok_or(Errno::EINVAL)?;
        let bo = self.bos.get_mut(&handle).ok_or(Errno::EINVAL)?;
        if render_gpu != Some(bo.gpu_id) || bo.is_special() {
            return Err(Errno::EINVAL);
        }
        let vram = bo.flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM != 0;
        if bo.is_userptr() || (vram && bo.flags & KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC == 0) {
            // amdgpu_gem_object_mmap: user pointers and CPU-invisible VRAM.
            return Err(Errno::EPERM);
        }
        if size > page_align(bo.size) || addr != bo.va {
            return Err(Errno::EINVAL);
        }
        Ok(SimMapping::new(bo.backing()?.clone()))
    }

    /// A CPU mapping of a doorbell or MMIO page through `/dev/kfd`.
    pub(crate) fn map_kfd(&mut self, offset: u64, addr: Option<u64>) -> Result<SimMapping, Errno> {
        let handle = *self.by_offset.get(&offset).ok_or(Errno::EINVAL)?;
        let bo = self.bos.get_mut(&handle).ok_or(Errno::EINVAL)?;
        if !bo.is_special() || addr.is_some_and(|a| a != bo.va) {
            return Err(Errno::EINVAL);
        }
        Ok(SimMapping::new(bo.backing()?.clone()))
    }

    /// `kfd_kmap_event_page`: the memory of the buffer with KFD handle `handle`, which becomes
    /// the process's event page — a GTT buffer of at least the page's 32 KiB (a user pointer
    /// cannot be mapped into the kernel); `EINVAL` otherwise. Freeing it is refused from now on.
    pub(crate) fn kmap_event_page(&mut self, handle: u64) -> Result<HostMapping, Errno> {
        self.gpu(handle_gpu(handle))?;
        let bo = self.bos.get_mut(&handle).ok_or(Errno::EINVAL)?;
        if bo.flags & KFD_IOC_ALLOC_MEM_FLAGS_GTT == 0 || bo.is_userptr() || bo.size < 32 * 1024 {
            return Err(Errno::EINVAL);
        }
        let memory = bo.backing()?.clone();
        self.signal_handle = Some(handle);
        Ok(memory)
    }

    /// Host memory behind `[va, va + len)` as GPU `gpu_id` sees it, and the allocation flags
    /// that give its permissions: the range lies inside one buffer mapped on that GPU, or, away
    /// from every buffer, in SVM ranges the GPU may access (see [`super::svm`]). A doorbell or
    /// MMIO-remap buffer mapped on the GPU is its page: a GPU write to a doorbell lands where
    /// the processors' doorbell polls look (kfdtest's GPUDoorbellWrite rings a queue from
    /// another queue), one to the MMIO page's HDP flush register has nothing to flush in host
    /// memory (kfdtest's DeviceHdpFlush).
    pub(crate) fn resolve(
        &mut self,
        gpu_id: u32,
        va: u64,
        len: u64,
    ) -> Result<(HostMapping, u64, u32), Errno> {
        if self.buffer_at(va).is_none() {
            return self.resolve_svm(gpu_id, va, len);
        }
        let (&start, &handle) = self.by_va.range(..=va).next_back().ok_or(Errno::EFAULT)?;
        let bo = self.bos.get_mut(&handle).ok_or(Errno::EFAULT)?;
        let end = va.checked_add(len).ok_or(Errno::EFAULT)?;
        if end > start.saturating_add(bo.size) || !bo.mapped.contains(&gpu_id) {
            return Err(Errno::EFAULT);
        }
        let offset = va - start;
        if let Some(user) = bo.user_addr {
            if let Some(view) = &bo.user_view {
                return Ok((view.clone(), offset, bo.flags));
            }
            let size = usize::try_from(bo.size).map_err(|_| Errno::EFAULT)?;
            // User-pointer memory is the application's: registering it promises to keep it
            // mapped until it is deregistered (libhsakmt's contract; amdkfd pins the pages at
            // registration); the view, checked to be mapped now, is dropped with the buffer at
            // deregistration. Memory the GPU cannot reach is a fault.
            let view = HostMapping::registered(user, size).map_err(|_| Errno::EFAULT)?;
            bo.user_view = Some(view.clone());
            return Ok((view, offset, bo.flags));
        }
        Ok((bo.backing()?.clone(), offset, bo.flags))
    }

    /// `SET_SCRATCH_BACKING_VA`.
    pub(crate) fn set_scratch(
        &mut self,
        args: &kfd_ioctl_set_scratch_backing_va_args,
        vm: bool,
    ) -> Result<(), Errno> {
        self.gpu(args.gpu_id)?;
        if !vm {
            return Err(Errno::ENODEV);
        }
        self.scratch.insert(args.gpu_id, args.va_addr);
        Ok(())
    }

    /// `kfd_ioctl_set_xnack_mode`.
    pub(crate) fn set_xnack(
        &mut self,
        args: &mut kfd_ioctl_set_xnack_mode_args,
    ) -> Result<(), Errno> {
        if args.xnack_enabled < 0 {
            args.xnack_enabled = i32::from(self.xnack);
            return Ok(());
        }
        if self.live_queues > 0 {
            return Err(Errno::EBUSY);
        }
        let want = args.xnack_enabled > 0;
        if want == self.xnack {
            return Ok(());
        }
        if want && !self.gpus.iter().all(|g| g.xnack_capable) {
            return Err(Errno::EPERM);
        }
        self.xnack = want;
        Ok(())
    }

    /// Accounting of one GPU.
    pub(crate) fn usage(&self, gpu_id: u32) -> Option<GpuMemoryUsage> {
        let gpu = self.gpu(gpu_id).ok()?;
        let mut u = GpuMemoryUsage { vram_size: gpu.vram_size, ..GpuMemoryUsage::default() };
        for b in self.bos.values() {
            if b.gpu_id == gpu_id {
                u.vram_used += b.vram_charge;
                u.system_bytes += b.system_charge;
                u.buffers += 1;
            }
            if b.mapped.contains(&gpu_id) {
                u.mappings += 1;
            }
        }
        Some(u)
    }

    /// Totals over every GPU: buffers, buffer mappings, VRAM and system bytes, SVM ranges,
    /// programmed scratch backings, and buffers pinned by queues.
    pub(crate) fn totals(&self) -> MemoryTotals {
        let mut t = MemoryTotals {
            buffers: self.bos.len(),
            svm_ranges: self.svm.len(),
            scratch_backings: self.scratch.len(),
            ..MemoryTotals::default()
        };
        for b in self.bos.values() {
            t.mappings += b.mapped.len();
            t.vram_bytes += b.vram_charge;
            t.system_bytes += b.system_charge;
            t.pinned += usize::from(b.queue_pins > 0);
        }
        t
    }

    /// The buffer whose range contains `va`, for the queue model to pin.
    pub(crate) fn buffer_at(&self, va: u64) -> Option<u64> {
        let (&start, &h) = self.by_va.range(..=va).next_back()?;
        let b = self.bos.get(&h)?;
        (va < start.saturating_add(b.size)).then_some(h)
    }

    /// Live dma-bufs.
    pub(crate) fn dmabuf_count(&self) -> usize {
        self.dmabufs.count()
    }
}
