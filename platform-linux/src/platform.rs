//! [`LinuxPlatform`]: every platform trait of core over the real kernel.

use core::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

use hsakmt_core::error::Errno;
use hsakmt_core::platform::{
    Access, Host, Ioctl, KfdDevice, OpenError, Sysfs, SysfsDir, SysfsFile,
};
use hsakmt_hostmem::PidCache;
use rustix::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use rustix::fs::{Mode, OFlags};

use crate::descriptor::Descriptors;
use crate::errno::from_rustix;
use crate::mapping::{self, LinuxMapping};
use crate::path::FixedPath;
use crate::{KFD_DEVICE, SysfsTree, device_node, kfd};

/// Render nodes are `/dev/dri/renderD128` .. `renderD255`.
const RENDER_MINOR_BASE: u32 = 128;
const RENDER_MINORS: usize = 128;

/// The Linux platform: the KFD sysfs tree, `/dev/kfd`, render nodes and the address space.
///
/// The `/dev/kfd` descriptor is held as an atomic so ioctls take no lock; [`KfdDevice::close`]
/// must not race with calls in flight on other threads (core's open count guarantees it).
pub struct LinuxPlatform {
    sysfs: SysfsTree,
    device: FixedPath,
    kfd: AtomicI32,
    open_lock: Mutex<()>,
    render: [AtomicI32; RENDER_MINORS],
    descriptors: Descriptors,
    pid: PidCache,
}

impl core::fmt::Debug for LinuxPlatform {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LinuxPlatform")
            .field("sysfs", &String::from_utf8_lossy(self.sysfs.root()))
            .field("kfd_fd", &self.kfd.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Default for LinuxPlatform {
    fn default() -> Self {
        Self::new()
    }
}

impl LinuxPlatform {
    /// The real system: `/sys/devices/virtual/kfd/kfd/topology` and `/dev/kfd`.
    #[must_use]
    pub fn new() -> Self {
        Self::with_sysfs(SysfsTree::system())
    }

    /// The real `/dev/kfd`, with the topology read from `sysfs` (for example a captured tree).
    #[must_use]
    pub fn with_sysfs(sysfs: SysfsTree) -> Self {
        Self {
            sysfs,
            device: FixedPath::new(KFD_DEVICE.as_bytes()).unwrap_or_default(),
            kfd: AtomicI32::new(-1),
            open_lock: Mutex::new(()),
            render: [const { AtomicI32::new(-1) }; RENDER_MINORS],
            descriptors: Descriptors::new(),
            pid: PidCache::new(),
        }
    }

    /// The topology tree this platform reads.
    #[must_use]
    pub fn sysfs(&self) -> &SysfsTree {
        &self.sysfs
    }

    fn kfd_fd(&self) -> Result<BorrowedFd<'_>, Errno> {
        let raw = self.kfd.load(Ordering::Acquire);
        if raw < 0 {
            return Err(Errno::EBADF);
        }
        // SAFETY: `raw` was stored by `open` from an OwnedFd we leaked into the atomic, and it
        // is only closed by `close`, which the caller does not race with calls in flight.
        Ok(unsafe { BorrowedFd::borrow_raw(raw) })
    }
}

impl Sysfs for LinuxPlatform {
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
        self.sysfs.read_file(file, buf)
    }

    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
        self.sysfs.list_dir(dir, out)
    }

    fn walk_done(&self) {
        self.sysfs.walk_done();
    }
}

impl Host for LinuxPlatform {
    fn now_ns(&self) -> u64 {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
    }

    fn process_id(&self) -> u32 {
        self.pid.get()
    }

    fn env_var(&self, name: &str, buf: &mut [u8]) -> Option<usize> {
        let value = std::env::var_os(name)?;
        let bytes = value.as_encoded_bytes();
        let n = bytes.len().min(buf.len());
        buf.get_mut(..n)?.copy_from_slice(bytes.get(..n)?);
        Some(bytes.len())
    }
}

impl KfdDevice for LinuxPlatform {
    type Mapping = LinuxMapping;

    fn open(&self) -> Result<(), OpenError> {
        let _guard = self.open_lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.kfd.load(Ordering::Acquire) >= 0 {
            return Ok(());
        }
        let path = core::str::from_utf8(self.device.as_bytes()).unwrap_or(KFD_DEVICE);
        let fd = device_node::open_device(path)?;
        self.kfd.store(fd.into_raw_fd(), Ordering::Release);
        Ok(())
    }

    fn close(&self) {
        let _guard = self.open_lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let raw = self.kfd.swap(-1, Ordering::AcqRel);
        if raw >= 0 {
            // SAFETY: `raw` came from `OwnedFd::into_raw_fd` in `open` and was just removed
            // from the atomic, so this is its only owner.
            drop(unsafe { OwnedFd::from_raw_fd(raw) });
        }
    }

    fn ioctl(&self, request: &mut Ioctl<'_>) -> Result<(), Errno> {
        kfd::issue(self.kfd_fd()?, request)?;
        if let Ioctl::SmiEvents(a) = request {
            let raw = i32::try_from(a.anon_fd).map_err(|_| Errno::EBADF)?;
            // SAFETY: `AMDKFD_IOC_SMI_EVENTS` succeeded, so `anon_fd` is a descriptor the
            // kernel just installed for this process and nothing else owns yet.
            let owned = unsafe { OwnedFd::from_raw_fd(raw) };
            a.anon_fd = self.descriptors.adopt(owned)?;
        }
        Ok(())
    }

    fn open_render_node(&self, minor: u32) -> Result<u32, Errno> {
        let slot = minor
            .checked_sub(RENDER_MINOR_BASE)
            .and_then(|i| self.render.get(i as usize))
            .ok_or(Errno::ENODEV)?;
        let cached = slot.load(Ordering::Acquire);
        if cached >= 0 {
            return Ok(cached.unsigned_abs());
        }
        let mut name: heapless::String<32> = heapless::String::new();
        core::fmt::write(&mut name, format_args!("/dev/dri/renderD{minor}"))
            .map_err(|_| Errno::ENAMETOOLONG)?;
        let path = FixedPath::new(name.as_bytes())?;
        let fd = rustix::fs::open(path.as_c_str(), OFlags::RDWR | OFlags::CLOEXEC, Mode::empty())
            .map_err(from_rustix)?;
        let raw = fd.as_raw_fd();
        match slot.compare_exchange(-1, raw, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                // Kept open for the life of the process: the GPU VM is bound to it.
                let _ = fd.into_raw_fd();
                Ok(raw.unsigned_abs())
            }
            // Another thread won the race; ours closes on drop.
            Err(existing) => Ok(existing.unsigned_abs()),
        }
    }

    fn close_fd(&self, fd: u32) {
        if self.descriptors.close(fd) {
            return;
        }
        if let Ok(raw) = i32::try_from(fd) {
            // SAFETY: core passes only descriptors the kernel handed it (dma-buf exports) and
            // closes each once.
            drop(unsafe { OwnedFd::from_raw_fd(raw) });
        }
    }

    fn poll_fd(&self, fd: u32, timeout_ms: i32) -> Result<bool, Errno> {
        self.descriptors.poll(fd, timeout_ms)
    }

    fn read_fd(&self, fd: u32, buf: &mut [u8]) -> Result<usize, Errno> {
        self.descriptors.read(fd, buf)
    }

    fn write_fd(&self, fd: u32, data: &[u8]) -> Result<usize, Errno> {
        self.descriptors.write(fd, data)
    }

    fn create_pipe(&self) -> Result<(u32, u32), Errno> {
        self.descriptors.pipe()
    }

    fn reserve_va(&self, hint: Option<u64>, size: u64, align: u64) -> Result<u64, Errno> {
        hsakmt_hostmem::reserve(hint, size, align)
    }

    fn release_va(&self, addr: u64, size: u64) -> Result<(), Errno> {
        hsakmt_hostmem::release(addr, size)
    }

    fn map_kfd(
        &self,
        offset: u64,
        size: u64,
        addr: Option<u64>,
        access: Access,
    ) -> Result<LinuxMapping, Errno> {
        mapping::map_fd(self.kfd_fd()?, offset, size, addr, access, false)
    }

    fn map_buffer(
        &self,
        render_fd: u32,
        offset: u64,
        size: u64,
        addr: u64,
        access: Access,
    ) -> Result<LinuxMapping, Errno> {
        let raw = i32::try_from(render_fd).map_err(|_| Errno::EBADF)?;
        if !self.render.iter().any(|r| r.load(Ordering::Acquire) == raw) {
            return Err(Errno::EBADF);
        }
        // SAFETY: `raw` is one of the render-node descriptors this platform opened and keeps
        // open for the life of the process (checked just above).
        let fd = unsafe { BorrowedFd::borrow_raw(raw) };
        mapping::map_fd(fd, offset, size, Some(addr), access, true)
    }

    fn map_anonymous(&self, addr: u64, size: u64) -> Result<LinuxMapping, Errno> {
        hsakmt_hostmem::map_anonymous(addr, size).map(LinuxMapping::from)
    }
}
