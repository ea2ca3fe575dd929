//! The simulator as a [`KfdDevice`]: `/dev/kfd`, render nodes, descriptors and mappings.

use std::sync::atomic::Ordering;

use hsakmt_core::error::Errno;
use hsakmt_core::event::KFD_MMAP_TYPE_EVENTS;
use hsakmt_core::platform::{Access, Ioctl, KfdDevice, OpenError};

use super::{RENDER_FD_BASE, lock};
use crate::SimPlatform;
use crate::gpu::pqm::{MMAP_GPU_ID_SHIFT, MMAP_TYPE_DOORBELL};
use crate::mapping::SimMapping;

impl KfdDevice for SimPlatform {
    type Mapping = SimMapping;

    fn open(&self) -> Result<(), OpenError> {
        self.count_device_call();
        self.kfd.open()
    }

    fn close(&self) {
        self.count_device_call();
        self.kfd.close();
    }

    fn ioctl(&self, request: &mut Ioctl<'_>) -> Result<(), Errno> {
        self.count_device_call();
        // The kernel's own: the engines' work run inside the call (on-wait mode) is not.
        let engines = crate::gpu::thread_engine_allocations();
        let before = hsakmt_hostmem::thread_allocations();
        let r = self.kfd.ioctl(request);
        let made = hsakmt_hostmem::thread_allocations()
            .wrapping_sub(before)
            .wrapping_sub(crate::gpu::thread_engine_allocations().wrapping_sub(engines));
        let _ = super::IOCTL_ALLOCATIONS.try_with(|c| c.set(c.get().wrapping_add(made)));
        if r == Err(Errno::EBADF)
            && let Some(cache) = &self.stale_pid
        {
            // The kernel says the descriptor is another process's: re-read the process id.
            cache.store(self.kfd.process_id(), Ordering::Relaxed);
        }
        r
    }

    fn open_render_node(&self, minor: u32) -> Result<u32, Errno> {
        self.count_device_call();
        if let Some(errno) = self.render_node_refusal(minor) {
            return Err(errno);
        }
        if self.kfd.gpus.iter().any(|g| g.render_minor == minor) {
            Ok(RENDER_FD_BASE + minor)
        } else {
            Err(Errno::ENOENT)
        }
    }

    fn close_fd(&self, fd: u32) {
        self.count_device_call();
        if !self.kfd.files.close(fd) {
            lock(&self.kfd.memory).close_fd(fd);
        }
    }

    fn poll_fd(&self, fd: u32, timeout_ms: i32) -> Result<bool, Errno> {
        self.count_device_call();
        self.kfd.files.poll(fd, timeout_ms)
    }

    fn read_fd(&self, fd: u32, buf: &mut [u8]) -> Result<usize, Errno> {
        self.count_device_call();
        self.kfd.files.read(fd, buf)
    }

    fn write_fd(&self, fd: u32, data: &[u8]) -> Result<usize, Errno> {
        self.count_device_call();
        self.kfd.files.write(fd, data)
    }

    fn create_pipe(&self) -> Result<(u32, u32), Errno> {
        self.count_device_call();
        Ok(self.kfd.files.pipe())
    }

    fn reserve_va(&self, hint: Option<u64>, size: u64, align: u64) -> Result<u64, Errno> {
        self.count_device_call();
        hsakmt_hostmem::reserve(hint, size, align)
    }

    fn release_va(&self, addr: u64, size: u64) -> Result<(), Errno> {
        self.count_device_call();
        hsakmt_hostmem::release(addr, size)
    }

    fn map_kfd(
        &self,
        offset: u64,
        size: u64,
        addr: Option<u64>,
        _access: Access,
    ) -> Result<SimMapping, Errno> {
        self.count_device_call();
        match offset {
            // The simulator hands out the page where it lives (a kernel would map the same
            // pages again), so it cannot honour a fixed address.
            KFD_MMAP_TYPE_EVENTS if addr.is_none() => {
                if !self.kfd.is_open_by_caller() {
                    return Err(Errno::EBADF);
                }
                self.kfd.events.map(size)
            }
            KFD_MMAP_TYPE_EVENTS => Err(Errno::EINVAL),
            _ if offset & (3 << 62) == MMAP_TYPE_DOORBELL => self.map_doorbells(offset, size, addr),
            _ => lock(&self.kfd.memory).map_kfd(offset, addr),
        }
    }

    fn map_buffer(
        &self,
        render_fd: u32,
        offset: u64,
        size: u64,
        addr: u64,
        _access: Access,
    ) -> Result<SimMapping, Errno> {
        self.count_device_call();
        let gpu = render_fd
            .checked_sub(RENDER_FD_BASE)
            .and_then(|minor| self.kfd.gpus.iter().find(|g| g.render_minor == minor))
            .map(|g| g.gpu_id);
        lock(&self.kfd.memory).map_buffer(gpu, offset, size, addr)
    }

    fn map_anonymous(&self, addr: u64, size: u64) -> Result<SimMapping, Errno> {
        self.count_device_call();
        hsakmt_hostmem::map_anonymous(addr, size).map(SimMapping::new)
    }
}

impl SimPlatform {
    /// Counts one call of a [`KfdDevice`] method ([`SimPlatform::device_calls`]).
    fn count_device_call(&self) {
        self.device_calls.fetch_add(1, Ordering::Relaxed);
    }

    /// `kfd_doorbell_mmap`: the process's doorbell slice of the GPU the offset names — the
    /// doorbell buffer's pages when one was allocated, else pages of its own — whose writes
    /// wake the command processor.
    fn map_doorbells(
        &self,
        offset: u64,
        size: u64,
        addr: Option<u64>,
    ) -> Result<SimMapping, Errno> {
        let gpu_id = ((offset >> MMAP_GPU_ID_SHIFT) & 0xFFFF) as u32;
        let facts = self.kfd.gpu.facts(gpu_id).ok_or(Errno::EINVAL)?;
        let doorbells = self.kfd.gpu.doorbells(gpu_id).ok_or(Errno::EINVAL)?;
        let mapped = lock(&self.kfd.memory).map_kfd(offset, addr);
        let memory = match mapped {
            Ok(m) => m.memory().clone(),
            Err(_) => {
                if size != (1024 * facts.doorbell_size).max(4096) {
                    return Err(Errno::EINVAL);
                }
                let at = match addr {
                    Some(a) => a,
                    None => hsakmt_hostmem::reserve(None, size, 4096)?,
                };
                hsakmt_hostmem::map_anonymous(at, size)?
            }
        };
        // Plain stores to the page are found there by the processors' doorbell polls.
        doorbells.set_page(memory.clone());
        Ok(SimMapping::doorbell(memory, doorbells))
    }
}
