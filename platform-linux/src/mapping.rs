//! CPU mappings of GPU-shared memory and address-space reservations, with `rustix::mm`.

use core::ffi::c_void;
use core::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::Arc;

use hsakmt_core::error::Errno;
use hsakmt_core::platform::{Access, SharedMemory};
use rustix::fd::BorrowedFd;
use rustix::mm::{Advice, MapFlags, ProtFlags};

fn errno(e: rustix::io::Errno) -> Errno {
    Errno(e.raw_os_error())
}

fn prot(access: Access) -> ProtFlags {
    match access {
        Access::Read => ProtFlags::READ,
        Access::ReadWrite => ProtFlags::READ | ProtFlags::WRITE,
    }
}

/// What dropping the last clone of a mapping does to its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnDrop {
    /// Put a `PROT_NONE` reservation back (the range belongs to a VA aperture).
    Reserve,
    /// Unmap (the kernel chose the address).
    Unmap,
}

#[derive(Debug)]
struct Inner {
    addr: usize,
    len: usize,
    on_drop: OnDrop,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let p = self.addr as *mut c_void;
        match self.on_drop {
            OnDrop::Reserve => {
                // SAFETY: this range was mapped by us at creation and no view of it survives
                // (this is the last clone); replacing it with a fresh PROT_NONE anonymous
                // mapping keeps the aperture's reservation intact.
                let _ = unsafe {
                    rustix::mm::mmap_anonymous(
                        p,
                        self.len,
                        ProtFlags::empty(),
                        MapFlags::PRIVATE | MapFlags::FIXED | MapFlags::NORESERVE,
                    )
                };
            }
            OnDrop::Unmap => {
                // SAFETY: as above, the range is ours and unobserved; unmapping it cannot
                // invalidate any live reference.
                let _ = unsafe { rustix::mm::munmap(p, self.len) };
            }
        }
    }
}

/// A CPU mapping made by this platform; clones share it, the last drop releases it.
#[derive(Debug, Clone)]
pub struct LinuxMapping(Arc<Inner>);

impl LinuxMapping {
    fn new(addr: *mut c_void, len: usize, on_drop: OnDrop) -> Self {
        Self(Arc::new(Inner { addr: addr as usize, len, on_drop }))
    }

    fn range(&self, offset: usize, len: usize) -> Result<*mut u8, Errno> {
        let end = offset.checked_add(len).ok_or(Errno::EFAULT)?;
        if end > self.0.len {
            return Err(Errno::EFAULT);
        }
        Ok((self.0.addr + offset) as *mut u8)
    }
}

impl SharedMemory for LinuxMapping {
    fn addr(&self) -> u64 {
        self.0.addr as u64
    }

    fn len(&self) -> usize {
        self.0.len
    }

    fn u32s(&self) -> &[AtomicU32] {
        // SAFETY: the mapping is page-aligned, `len` bytes long and stays mapped while `self`
        // (a clone of the Arc) lives; atomics may alias memory other agents write.
        unsafe { core::slice::from_raw_parts(self.0.addr as *const AtomicU32, self.0.len / 4) }
    }

    fn u64s(&self) -> &[AtomicU64] {
        // SAFETY: as for `u32s`; the base is page-aligned, so 8-byte aligned.
        unsafe { core::slice::from_raw_parts(self.0.addr as *const AtomicU64, self.0.len / 8) }
    }

    fn write(&self, offset: usize, src: &[u8]) -> Result<(), Errno> {
        let dst = self.range(offset, src.len())?;
        // SAFETY: `range` checked that `[offset, offset + len)` lies inside the live mapping;
        // `src` is a distinct Rust slice, so the ranges cannot overlap.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
        Ok(())
    }

    fn read(&self, offset: usize, dst: &mut [u8]) -> Result<(), Errno> {
        let src = self.range(offset, dst.len())?;
        // SAFETY: as for `write`, with source and destination swapped.
        unsafe { core::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    fn is_shared(&self) -> bool {
        Arc::strong_count(&self.0) > 1
    }
}

/// Reserves address space: `PROT_NONE`, `MAP_NORESERVE`, aligned to `align`; at `hint` when
/// free (`MAP_FIXED_NOREPLACE`), else anywhere.
///
/// # Errors
/// `ENOMEM` when the address space is exhausted, `EINVAL` for a bad alignment.
pub fn reserve(hint: Option<u64>, size: u64, align: u64) -> Result<u64, Errno> {
    let size = usize::try_from(size).map_err(|_| Errno::ENOMEM)?;
    let align = usize::try_from(align).map_err(|_| Errno::EINVAL)?.max(4096);
    if !align.is_power_of_two() || size == 0 {
        return Err(Errno::EINVAL);
    }
    let flags = MapFlags::PRIVATE | MapFlags::NORESERVE;
    if let Some(h) = hint.filter(|h| (*h as usize).is_multiple_of(align)) {
        // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping; the new range is
        // PROT_NONE, so nothing can observe it.
        let r = unsafe {
            rustix::mm::mmap_anonymous(
                h as *mut c_void,
                size,
                ProtFlags::empty(),
                flags | MapFlags::FIXED_NOREPLACE,
            )
        };
        if let Ok(p) = r {
            return Ok(p as u64);
        }
    }
    let padded = size.checked_add(align - 4096).ok_or(Errno::ENOMEM)?;
    // SAFETY: a fresh PROT_NONE mapping where the kernel chooses; it cannot alias anything.
    let base = unsafe {
        rustix::mm::mmap_anonymous(core::ptr::null_mut(), padded, ProtFlags::empty(), flags)
    }
    .map_err(errno)? as usize;
    let start = base.next_multiple_of(align);
    let head = start - base;
    let tail = padded - head - size;
    // SAFETY: both trimmed pieces lie inside the mapping just created and are unobserved.
    unsafe {
        if head > 0 {
            let _ = rustix::mm::munmap(base as *mut c_void, head);
        }
        if tail > 0 {
            let _ = rustix::mm::munmap((start + size) as *mut c_void, tail);
        }
    }
    Ok(start as u64)
}

/// Unmaps a reserved range.
///
/// # Errors
/// `EINVAL` for an unaligned or empty range.
pub fn release(addr: u64, size: u64) -> Result<(), Errno> {
    let size = usize::try_from(size).map_err(|_| Errno::EINVAL)?;
    // SAFETY: the caller (core's aperture bookkeeping) only releases ranges it reserved and no
    // longer maps; munmap of PROT_NONE memory cannot invalidate live references.
    unsafe { rustix::mm::munmap(addr as *mut c_void, size) }.map_err(errno)
}

/// Maps `fd` at `offset`: at `addr` (replacing a reservation) or where the kernel chooses.
///
/// # Errors
/// The errno of `mmap` / `madvise`.
pub fn map_fd(
    fd: BorrowedFd<'_>,
    offset: u64,
    size: u64,
    addr: Option<u64>,
    access: Access,
    dont_fork: bool,
) -> Result<LinuxMapping, Errno> {
    let len = usize::try_from(size).map_err(|_| Errno::ENOMEM)?;
    let (hint, flags, on_drop) = match addr {
        Some(a) => (a as *mut c_void, MapFlags::SHARED | MapFlags::FIXED, OnDrop::Reserve),
        None => (core::ptr::null_mut(), MapFlags::SHARED, OnDrop::Unmap),
    };
    // SAFETY: with MAP_FIXED the target range is one of our own PROT_NONE reservations (core's
    // aperture bookkeeping hands out each range once), so no live Rust reference is replaced.
    let p =
        unsafe { rustix::mm::mmap(hint, len, prot(access), flags, fd, offset) }.map_err(errno)?;
    let m = LinuxMapping::new(p, len, on_drop);
    if dont_fork {
        // SAFETY: the range was just mapped by us.
        unsafe { rustix::mm::madvise(p, len, Advice::LinuxDontFork) }.map_err(errno)?;
    }
    Ok(m)
}

/// Backs `[addr, addr + size)` (inside a reservation) with zeroed anonymous memory, marked
/// `MADV_DONTFORK`.
///
/// # Errors
/// The errno of `mmap` / `madvise`.
pub fn map_anonymous(addr: u64, size: u64) -> Result<LinuxMapping, Errno> {
    let len = usize::try_from(size).map_err(|_| Errno::ENOMEM)?;
    // SAFETY: as for `map_fd`: the target is our own reservation.
    let p = unsafe {
        rustix::mm::mmap_anonymous(
            addr as *mut c_void,
            len,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::PRIVATE | MapFlags::FIXED,
        )
    }
    .map_err(errno)?;
    let m = LinuxMapping::new(p, len, OnDrop::Reserve);
    // SAFETY: the range was just mapped by us.
    unsafe { rustix::mm::madvise(p, len, Advice::LinuxDontFork) }.map_err(errno)?;
    Ok(m)
}

/// Fresh zeroed anonymous memory (read-write, shared with nobody) where the kernel chooses,
/// unmapped when the last clone drops — memory a simulated kernel owns (the event page).
///
/// # Errors
/// The errno of `mmap`.
pub fn map_anonymous_anywhere(size: u64) -> Result<LinuxMapping, Errno> {
    let len = usize::try_from(size).map_err(|_| Errno::ENOMEM)?;
    // SAFETY: a fresh mapping where the kernel chooses; it cannot alias anything.
    let p = unsafe {
        rustix::mm::mmap_anonymous(
            core::ptr::null_mut(),
            len,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::PRIVATE,
        )
    }
    .map_err(errno)?;
    Ok(LinuxMapping::new(p, len, OnDrop::Unmap))
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::sync::atomic::Ordering;

    #[test]
    fn reserve_back_and_release() {
        let size = 8 << 20;
        let base = reserve(None, size, 2 << 20).unwrap();
        assert_eq!(base % (2 << 20), 0);
        let m = map_anonymous(base + 4096, 8192).unwrap();
        assert_eq!(m.addr(), base + 4096);
        assert_eq!(m.u64s().len(), 1024);
        m.write(16, &[1, 2, 3, 4]).unwrap();
        let mut back = [0u8; 4];
        m.read(16, &mut back).unwrap();
        assert_eq!(back, [1, 2, 3, 4]);
        assert_eq!(m.u32s()[4].load(Ordering::Relaxed), u32::from_ne_bytes([1, 2, 3, 4]));
        assert_eq!(m.write(8190, &[0; 4]), Err(Errno::EFAULT));
        let clone = m.clone();
        assert!(m.is_shared());
        drop(clone);
        assert!(!m.is_shared());
        drop(m);
        // The range is a reservation again: mapping it anew works.
        let again = map_anonymous(base + 4096, 4096).unwrap();
        drop(again);
        release(base, size).unwrap();
        // A hint that is free is honoured.
        let at = reserve(Some(base), size, 2 << 20).unwrap();
        assert_eq!(at, base);
        release(at, size).unwrap();
    }
}
