//! [`LinuxMapping`]: the CPU mappings this platform hands to core — host memory of
//! `hsakmt-hostmem` whose doorbell store is the MMIO store of a real GPU ([`crate::doorbell`]).

use core::sync::atomic::{AtomicU32, AtomicU64};

use hsakmt_core::error::Errno;
use hsakmt_core::platform::{Access, SharedMemory};
use hsakmt_hostmem::HostMapping;
use rustix::fd::BorrowedFd;

use crate::doorbell;

/// A CPU mapping made by this platform (of `/dev/kfd`, a render node or anonymous memory);
/// clones share it, the last drop releases it.
///
/// Everything but the doorbell is [`HostMapping`]'s; [`SharedMemory::ring_doorbell64`] and
/// [`SharedMemory::ring_doorbell32`] are the uncached-MMIO stores of [`crate::doorbell`].
#[derive(Debug, Clone)]
pub struct LinuxMapping(HostMapping);

impl LinuxMapping {
    /// The host memory behind the mapping.
    #[must_use]
    pub fn host(&self) -> &HostMapping {
        &self.0
    }
}

impl From<HostMapping> for LinuxMapping {
    fn from(memory: HostMapping) -> Self {
        Self(memory)
    }
}

impl SharedMemory for LinuxMapping {
    #[inline]
    fn addr(&self) -> u64 {
        self.0.addr()
    }

    #[inline]
    fn len(&self) -> usize {
        self.0.len()
    }

    #[inline]
    fn u32s(&self) -> &[AtomicU32] {
        self.0.u32s()
    }

    #[inline]
    fn u64s(&self) -> &[AtomicU64] {
        self.0.u64s()
    }

    fn write(&self, offset: usize, src: &[u8]) -> Result<(), Errno> {
        self.0.write(offset, src)
    }

    fn read(&self, offset: usize, dst: &mut [u8]) -> Result<(), Errno> {
        self.0.read(offset, dst)
    }

    #[inline]
    fn ring_doorbell64(&self, offset: usize, value: u64) {
        doorbell::ring64(&self.0, offset, value);
    }

    #[inline]
    fn ring_doorbell32(&self, offset: usize, value: u32) {
        doorbell::ring32(&self.0, offset, value);
    }

    fn is_shared(&self) -> bool {
        self.0.is_shared()
    }
}

/// Maps `fd` at `offset` (see [`hsakmt_hostmem::map_fd`]).
pub(crate) fn map_fd(
    fd: BorrowedFd<'_>,
    offset: u64,
    size: u64,
    addr: Option<u64>,
    access: Access,
    dont_fork: bool,
) -> Result<LinuxMapping, Errno> {
    hsakmt_hostmem::map_fd(fd, offset, size, addr, access, dont_fork).map(LinuxMapping)
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::sync::atomic::Ordering;

    #[test]
    fn delegates_to_host_memory() {
        let base = hsakmt_hostmem::reserve(None, 1 << 20, 4096).unwrap();
        let m = LinuxMapping::from(hsakmt_hostmem::map_anonymous(base, 8192).unwrap());
        assert_eq!((m.addr(), m.len()), (base, 8192));
        m.write(8, &7u64.to_ne_bytes()).unwrap();
        assert_eq!(m.u64s()[1].load(Ordering::Relaxed), 7);
        assert_eq!(m.u32s().len(), 2048);
        let mut b = [0u8; 8];
        assert_eq!(m.read(8188, &mut b), Err(Errno::EFAULT));
        let c = m.clone();
        assert!(m.is_shared() && c.host().is_shared());
        drop((c, m));
        hsakmt_hostmem::release(base, 1 << 20).unwrap();
    }
}
