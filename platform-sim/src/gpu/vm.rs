//! How the simulated GPU reaches memory: GPU virtual addresses resolved to the host memory that
//! backs them ([`GpuVm`]), and [`MemRange`], a live view of one resolved range.
//!
//! In the simulator GPU VA == CPU VA and every buffer is real host memory, so resolving is a
//! lookup that proves the range lies inside one buffer mapped for that GPU and hands back a
//! clone of its mapping — which keeps the memory alive while the command processor uses it.
//! An address that resolves to nothing is what a GPU page fault is.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use hsakmt_core::error::Errno;
use hsakmt_core::platform::SharedMemory;
use hsakmt_hostmem::HostMapping;

use crate::kfd::memory::Memory;

/// A resolved range of GPU virtual addresses: `len` bytes at `addr`, inside one live mapping.
///
/// It implements [`SharedMemory`] so core's views (signals, rings) work on it directly.
#[derive(Clone)]
pub struct MemRange {
    backing: HostMapping,
    offset: usize,
    len: usize,
    access: Access,
}

/// What a GPU mapping permits beyond reading: amdkfd maps a buffer writable when it was
/// allocated with `KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE` and executable with
/// `KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE` (`AMDGPU_VM_PAGE_WRITEABLE`/`_EXECUTABLE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Access {
    /// Stores and atomics may write it.
    pub(crate) writable: bool,
    /// Waves may fetch instructions from it.
    pub(crate) executable: bool,
}

impl Access {
    /// Everything permitted (memory without permissions: the host-CPU driver's).
    pub(crate) const ALL: Access = Access { writable: true, executable: true };

    /// The permissions of a buffer allocated with the `KFD_IOC_ALLOC_MEM_FLAGS_*` word `flags`.
    pub(crate) const fn of_alloc_flags(flags: u32) -> Access {
        use hsakmt_core::uapi::{
            KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE, KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        };
        Access {
            writable: flags & KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE != 0,
            executable: flags & KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE != 0,
        }
    }
}

impl fmt::Debug for MemRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MemRange({:#x}+{:#x})", self.addr(), self.len)
    }
}

impl MemRange {
    /// `len` bytes at byte `offset` of `backing`, or `None` when that is not inside it.
    pub(crate) fn new(backing: HostMapping, offset: usize, len: usize) -> Option<Self> {
        (offset.checked_add(len)? <= backing.len()).then_some(MemRange {
            backing,
            offset,
            len,
            access: Access::ALL,
        })
    }

    /// The same range with the permissions `access`.
    pub(crate) fn with_access(mut self, access: Access) -> Self {
        self.access = access;
        self
    }

    /// What the mapping permits beyond reading.
    pub(crate) fn access(&self) -> Access {
        self.access
    }

    /// Copies all of `src` to the start of this range, as a DMA engine does: `memmove`
    /// semantics (the two may overlap).
    ///
    /// # Errors
    /// `EFAULT` when `src` is longer than this range.
    pub(crate) fn copy_from(&self, src: &MemRange) -> Result<(), Errno> {
        if src.len > self.len {
            return Err(Errno::EFAULT);
        }
        HostMapping::copy(&self.backing, self.offset, &src.backing, src.offset, src.len)
    }
}

impl SharedMemory for MemRange {
    fn addr(&self) -> u64 {
        self.backing.addr() + self.offset as u64
    }

    fn len(&self) -> usize {
        self.len
    }

    /// The 32-bit words wholly inside the range (the range's start must be 4-aligned for the
    /// first word to be its first byte; otherwise the view is empty).
    fn u32s(&self) -> &[AtomicU32] {
        if !self.offset.is_multiple_of(4) {
            return &[];
        }
        let all = self.backing.u32s();
        all.get(self.offset / 4..(self.offset + self.len) / 4).unwrap_or_default()
    }

    /// As [`MemRange::u32s`] for 8-byte words.
    fn u64s(&self) -> &[AtomicU64] {
        if !self.offset.is_multiple_of(8) {
            return &[];
        }
        let all = self.backing.u64s();
        all.get(self.offset / 8..(self.offset + self.len) / 8).unwrap_or_default()
    }

    fn write(&self, offset: usize, src: &[u8]) -> Result<(), Errno> {
        if offset.checked_add(src.len()).is_none_or(|e| e > self.len) {
            return Err(Errno::EFAULT);
        }
        self.backing.write(self.offset + offset, src)
    }

    fn read(&self, offset: usize, dst: &mut [u8]) -> Result<(), Errno> {
        if offset.checked_add(dst.len()).is_none_or(|e| e > self.len) {
            return Err(Errno::EFAULT);
        }
        self.backing.read(self.offset + offset, dst)
    }

    fn is_shared(&self) -> bool {
        false
    }
}

/// A buffer a queue pinned ([`GpuVm::queue_buffer_get`]): the buffer's start address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Pin(pub(crate) u64);

/// GPU page tables of the simulated process, as the command processor and the queue ioctls
/// see them.
pub(crate) trait GpuVm: Send + Sync + fmt::Debug {
    /// The memory behind `[va, va + len)` as GPU `gpu_id` sees it, or `None` (a page fault)
    /// when the range is not inside one buffer mapped for that GPU.
    fn resolve(&self, gpu_id: u32, va: u64, len: u64) -> Option<MemRange>;

    /// amdkfd's `kfd_queue_buffer_get`: `va` must lie in the first GPU page of a buffer mapped
    /// for `gpu_id`, and when `expected` is at least a page the buffer must be exactly
    /// `expected` bytes (in pages). On success the buffer is pinned — freeing or unmapping it
    /// fails with `EBUSY` until [`GpuVm::queue_buffer_put`].
    ///
    /// # Errors
    /// `EINVAL` when the address or size does not match a buffer.
    fn queue_buffer_get(&self, gpu_id: u32, va: u64, expected: u64) -> Result<Pin, Errno>;

    /// Drops one pin taken by [`GpuVm::queue_buffer_get`].
    fn queue_buffer_put(&self, pin: Pin);

    /// The process now has `n` queues (XNACK mode cannot change while it has any).
    fn set_live_queues(&self, n: u32) {
        let _ = n;
    }
}

/// [`GpuVm`] over the simulated kernel's buffer objects: a range resolves when it lies inside
/// one buffer mapped on the GPU; pins are the buffers' queue reference counts (which make
/// `FREE_MEMORY_OF_GPU` and `UNMAP_MEMORY_FROM_GPU` fail with `EBUSY`).
#[derive(Debug)]
pub(crate) struct BoVm {
    memory: Arc<Mutex<Memory>>,
}

impl BoVm {
    pub(crate) fn new(memory: Arc<Mutex<Memory>>) -> Self {
        BoVm { memory }
    }

    fn lock(&self) -> MutexGuard<'_, Memory> {
        self.memory.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl GpuVm for BoVm {
    fn resolve(&self, gpu_id: u32, va: u64, len: u64) -> Option<MemRange> {
        let (mapping, offset, flags) = self.lock().resolve(gpu_id, va, len).ok()?;
        MemRange::new(mapping, usize::try_from(offset).ok()?, usize::try_from(len).ok()?)
            .map(|r| r.with_access(Access::of_alloc_flags(flags)))
    }

    fn queue_buffer_get(&self, gpu_id: u32, va: u64, expected: u64) -> Result<Pin, Errno> {
        let mut m = self.lock();
        let handle = m.buffer_at(va).ok_or(Errno::EINVAL)?;
        let bo = m.bos.get_mut(&handle).ok_or(Errno::EINVAL)?;
        // amdgpu_vm_bo_lookup_mapping: the buffer must be mapped in this GPU's VM.
        if !bo.mapped.contains(&gpu_id) {
            return Err(Errno::EINVAL);
        }
        let pages = expected / GPU_PAGE;
        if va / GPU_PAGE != bo.va / GPU_PAGE || (pages != 0 && bo.size.div_ceil(GPU_PAGE) != pages)
        {
            return Err(Errno::EINVAL);
        }
        bo.queue_pins += 1;
        Ok(Pin(handle))
    }

    fn queue_buffer_put(&self, pin: Pin) {
        if let Some(bo) = self.lock().bos.get_mut(&pin.0) {
            bo.queue_pins = bo.queue_pins.saturating_sub(1);
        }
    }

    fn set_live_queues(&self, n: u32) {
        self.lock().live_queues = n;
    }
}

/// GPU page size of the checks (`AMDGPU_GPU_PAGE_SIZE`).
pub(crate) const GPU_PAGE: u64 = 4096;

#[derive(Debug)]
struct Region {
    mapping: HostMapping,
    pins: u32,
    /// Memory the application owns (registered): checked to be mapped at every access.
    borrowed: bool,
}

/// Host memory as a GPU VM: every recorded host mapping is a buffer mapped on every GPU
/// (GPU VA = CPU VA). The host-CPU driver's memory table, and the unit tests' memory model.
#[derive(Debug, Default)]
pub(crate) struct HostVm {
    regions: RwLock<BTreeMap<u64, Region>>,
}

impl HostVm {
    /// Records a new mapping (tests: no overlap checks).
    #[cfg(test)]
    pub(crate) fn add(&self, mapping: HostMapping) {
        let mut r = self.regions.write().unwrap_or_else(PoisonError::into_inner);
        r.insert(mapping.addr(), Region { mapping, pins: 0, borrowed: false });
    }

    /// Records `mapping`; `borrowed` for memory the application owns (registered), which is
    /// checked to be still mapped whenever it is resolved.
    ///
    /// # Errors
    /// `EEXIST` when it overlaps a recorded mapping, `EINVAL` when it is empty.
    pub(crate) fn insert(&self, mapping: HostMapping, borrowed: bool) -> Result<(), Errno> {
        let (start, len) = (mapping.addr(), mapping.len() as u64);
        let end = start.checked_add(len).filter(|_| len > 0).ok_or(Errno::EINVAL)?;
        let mut r = self.regions.write().unwrap_or_else(PoisonError::into_inner);
        if Self::find(&r, start).is_some() || r.range(start..end).next().is_some() {
            return Err(Errno::EEXIST);
        }
        r.insert(start, Region { mapping, pins: 0, borrowed });
        Ok(())
    }

    /// Forgets the mapping starting at `addr` and returns it.
    ///
    /// # Errors
    /// `EINVAL` when no mapping starts there, `EBUSY` when a queue pins it.
    pub(crate) fn remove(&self, addr: u64) -> Result<HostMapping, Errno> {
        let mut r = self.regions.write().unwrap_or_else(PoisonError::into_inner);
        match r.get(&addr) {
            None => Err(Errno::EINVAL),
            Some(g) if g.pins > 0 => Err(Errno::EBUSY),
            Some(_) => r.remove(&addr).map(|g| g.mapping).ok_or(Errno::EINVAL),
        }
    }

    /// Forgets every mapping.
    pub(crate) fn clear(&self) {
        self.regions.write().unwrap_or_else(PoisonError::into_inner).clear();
    }

    /// How many buffers are recorded.
    pub(crate) fn len(&self) -> usize {
        self.regions.read().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Forgets the mappings inside `[addr, addr + size)`. Fails with `EBUSY`, forgetting
    /// nothing, when one of them is pinned by a queue.
    #[cfg(test)]
    pub(crate) fn remove_range(&self, addr: u64, size: u64) -> Result<(), Errno> {
        let end = addr.saturating_add(size);
        let mut r = self.regions.write().unwrap_or_else(PoisonError::into_inner);
        if r.range(addr..end).any(|(_, g)| g.pins > 0) {
            return Err(Errno::EBUSY);
        }
        let keys: Vec<u64> = r.range(addr..end).map(|(k, _)| *k).collect();
        for k in keys {
            r.remove(&k);
        }
        Ok(())
    }

    fn find(r: &BTreeMap<u64, Region>, va: u64) -> Option<(&u64, &Region)> {
        let (start, g) = r.range(..=va).next_back()?;
        (va < start + g.mapping.len() as u64).then_some((start, g))
    }
}

impl GpuVm for HostVm {
    fn resolve(&self, _gpu_id: u32, va: u64, len: u64) -> Option<MemRange> {
        let r = self.regions.read().unwrap_or_else(PoisonError::into_inner);
        let (start, g) = Self::find(&r, va)?;
        if g.borrowed && !hsakmt_hostmem::is_mapped(*start, g.mapping.len() as u64) {
            return None;
        }
        let offset = usize::try_from(va - start).ok()?;
        MemRange::new(g.mapping.clone(), offset, usize::try_from(len).ok()?)
    }

    fn queue_buffer_get(&self, _gpu_id: u32, va: u64, expected: u64) -> Result<Pin, Errno> {
        let mut r = self.regions.write().unwrap_or_else(PoisonError::into_inner);
        let (start, len) = {
            let (start, g) = Self::find(&r, va).ok_or(Errno::EINVAL)?;
            (*start, g.mapping.len() as u64)
        };
        let pages = expected / GPU_PAGE;
        if va / GPU_PAGE != start / GPU_PAGE || (pages != 0 && len.div_ceil(GPU_PAGE) != pages) {
            return Err(Errno::EINVAL);
        }
        if let Some(g) = r.get_mut(&start) {
            g.pins += 1;
        }
        Ok(Pin(start))
    }

    fn queue_buffer_put(&self, pin: Pin) {
        let mut r = self.regions.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(g) = r.get_mut(&pin.0) {
            g.pins = g.pins.saturating_sub(1);
        }
    }
}
