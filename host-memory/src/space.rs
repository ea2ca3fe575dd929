//! Address-space reservations: `PROT_NONE` ranges core's VA apertures hand out pieces of, and
//! the question whether a range is mapped at all.

use core::ffi::c_void;

use hsakmt_core::error::Errno;
use rustix::mm::{MapFlags, ProtFlags};

use crate::errno;

/// The host page size these mappings assume (x86_64 and the 4 KiB aarch64 configuration).
pub const PAGE_SIZE: u64 = 4096;

/// Reserves address space: `PROT_NONE`, `MAP_NORESERVE`, aligned to `align`; at `hint` when
/// free (`MAP_FIXED_NOREPLACE`), else anywhere.
///
/// # Errors
/// `ENOMEM` when the address space is exhausted, `EINVAL` for a bad alignment or a size of 0.
pub fn reserve(hint: Option<u64>, size: u64, align: u64) -> Result<u64, Errno> {
    let page = PAGE_SIZE as usize;
    let size = usize::try_from(size).map_err(|_| Errno::ENOMEM)?;
    let align = usize::try_from(align).map_err(|_| Errno::EINVAL)?.max(page);
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
    let padded = size.checked_add(align - page).ok_or(Errno::ENOMEM)?;
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
/// With the `std` feature, the [`HostMapping`](crate::HostMapping)s placed inside the range
/// that still live keep their pages: they are unmapped when their last clone drops instead of
/// being reserved again (see [`placed`](crate::placed)), so a device model may drop its
/// mappings before or after the release.
///
/// # Errors
/// `EINVAL` for an unaligned or empty range; `EBUSY` when a live mapping reaches across an end
/// of the range (nothing is unmapped).
pub fn release(addr: u64, size: u64) -> Result<(), Errno> {
    let addr = usize::try_from(addr).map_err(|_| Errno::EINVAL)?;
    let size = usize::try_from(size).map_err(|_| Errno::EINVAL)?;
    #[cfg(feature = "std")]
    {
        crate::placed::release(addr, size)
    }
    #[cfg(not(feature = "std"))]
    {
        // SAFETY: the caller (core's aperture bookkeeping) only releases ranges it reserved;
        // without `std` there are no mappings placed in them, and munmap of PROT_NONE memory
        // cannot invalidate live references.
        unsafe { rustix::mm::munmap(addr as *mut c_void, size) }.map_err(errno)
    }
}

/// Whether every page of `[addr, addr + size)` is mapped (with any protection), asked with
/// `msync(MS_ASYNC)`, which changes nothing. `false` for an unaligned or empty range.
#[must_use]
pub fn is_mapped(addr: u64, size: u64) -> bool {
    let Ok(len) = usize::try_from(size) else { return false };
    if !addr.is_multiple_of(PAGE_SIZE) || len == 0 {
        return false;
    }
    // SAFETY: MS_ASYNC on anonymous or file mappings schedules nothing that could affect Rust
    // references; on an unmapped range the kernel only reports ENOMEM.
    unsafe { rustix::mm::msync(addr as *mut c_void, len, rustix::mm::MsyncFlags::ASYNC) }.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_at_a_free_hint_and_release() {
        let _serial = crate::serial_test();
        let size = 8 << 20;
        let base = reserve(None, size, 2 << 20).unwrap();
        assert_eq!(base % (2 << 20), 0);
        assert!(is_mapped(base, size), "a reservation is mapped (PROT_NONE)");
        release(base, size).unwrap();
        assert!(!is_mapped(base, PAGE_SIZE));
        // A hint that is free is honoured.
        let at = reserve(Some(base), size, 2 << 20).unwrap();
        assert_eq!(at, base);
        release(at, size).unwrap();
    }

    #[test]
    fn bad_arguments_are_errors() {
        let _serial = crate::serial_test();
        assert_eq!(reserve(None, 0, 4096), Err(Errno::EINVAL));
        assert_eq!(reserve(None, 4096, 3 << 12), Err(Errno::EINVAL));
        assert!(!is_mapped(1, 4096));
        assert!(!is_mapped(4096, 0));
    }
}
