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
    /// Nothing: a view of memory someone else owns.
    Keep,
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
            OnDrop::Keep => {}
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

    /// A view of `len` bytes at `addr` that someone else owns (registered user memory); dropping
    /// it leaves the memory alone.
    ///
    /// # Safety
    /// `[addr, addr + len)` must stay mapped, readable and writable, and 8-byte aligned at
    /// `addr`, for as long as the view or a clone of it lives.
    #[must_use]
    pub unsafe fn borrowed(addr: u64, len: usize) -> Self {
        Self::new(addr as *mut c_void, len, OnDrop::Keep)
    }

    /// Maps the same pages again: at `at` (replacing part of a reservation) or where the
    /// kernel chooses. Only shared mappings ([`map_shared`]) can be duplicated; the copy keeps
    /// the pages alive after the original goes.
    ///
    /// # Errors
    /// `EINVAL` for a private mapping; the errno of `mremap`.
    pub fn duplicate(&self, at: Option<u64>) -> Result<Self, Errno> {
        let old = self.0.addr as *mut c_void;
        let len = self.0.len;
        let (p, on_drop) = match at {
            // SAFETY: `mremap` with an old size of 0 creates a second mapping of the same
            // shared pages and leaves the original untouched; the target is one of our own
            // PROT_NONE reservations, so no live Rust reference is replaced.
            Some(a) => (
                unsafe {
                    rustix::mm::mremap_fixed(
                        old,
                        0,
                        len,
                        rustix::mm::MremapFlags::MAYMOVE,
                        a as *mut c_void,
                    )
                },
                OnDrop::Reserve,
            ),
            // SAFETY: as above, at an address the kernel chooses (it aliases nothing).
            None => (
                unsafe { rustix::mm::mremap(old, 0, len, rustix::mm::MremapFlags::MAYMOVE) },
                OnDrop::Unmap,
            ),
        };
        Ok(Self::new(p.map_err(errno)?, len, on_drop))
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
    map_anonymous_at(addr, size, MapFlags::PRIVATE)
}

/// Backs `[addr, addr + size)` (inside a reservation) with zeroed *shared* anonymous memory,
/// marked `MADV_DONTFORK`: memory that [`LinuxMapping::duplicate`] can map a second time.
///
/// # Errors
/// The errno of `mmap` / `madvise`.
pub fn map_shared(addr: u64, size: u64) -> Result<LinuxMapping, Errno> {
    map_anonymous_at(addr, size, MapFlags::SHARED)
}

/// Zeroed anonymous memory over `[addr, addr + size)` of a reservation, private or shared as
/// `sharing` says, marked `MADV_DONTFORK`.
fn map_anonymous_at(addr: u64, size: u64, sharing: MapFlags) -> Result<LinuxMapping, Errno> {
    let len = usize::try_from(size).map_err(|_| Errno::ENOMEM)?;
    // SAFETY: as for `map_fd`: the target is our own reservation.
    let p = unsafe {
        rustix::mm::mmap_anonymous(
            addr as *mut c_void,
            len,
            ProtFlags::READ | ProtFlags::WRITE,
            sharing | MapFlags::FIXED,
        )
    }
    .map_err(errno)?;
    let m = LinuxMapping::new(p, len, OnDrop::Reserve);
    // SAFETY: the range was just mapped by us.
    unsafe { rustix::mm::madvise(p, len, Advice::LinuxDontFork) }.map_err(errno)?;
    Ok(m)
}

/// Zeroed shared anonymous memory where the kernel chooses (unmapped when the last clone
/// goes): memory without a place in any aperture that [`LinuxMapping::duplicate`] can map
/// elsewhere.
///
/// # Errors
/// The errno of `mmap`.
pub fn map_shared_anywhere(size: u64) -> Result<LinuxMapping, Errno> {
    let len = usize::try_from(size).map_err(|_| Errno::ENOMEM)?;
    // SAFETY: a fresh mapping where the kernel chooses; it aliases nothing.
    let p = unsafe {
        rustix::mm::mmap_anonymous(
            core::ptr::null_mut(),
            len,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::SHARED,
        )
    }
    .map_err(errno)?;
    Ok(LinuxMapping::new(p, len, OnDrop::Unmap))
}

/// Whether every page of `[addr, addr + size)` is mapped (with any protection), asked with
/// `msync(MS_ASYNC)`, which changes nothing.
#[must_use]
pub fn is_mapped(addr: u64, size: u64) -> bool {
    let Ok(len) = usize::try_from(size) else { return false };
    if !addr.is_multiple_of(4096) || len == 0 {
        return false;
    }
    // SAFETY: MS_ASYNC on anonymous or file mappings schedules nothing that could affect Rust
    // references; on an unmapped range the kernel only reports ENOMEM.
    unsafe { rustix::mm::msync(addr as *mut c_void, len, rustix::mm::MsyncFlags::ASYNC) }.is_ok()
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

    #[test]
    fn shared_memory_duplicates_and_outlives_the_original() {
        let size = 4 << 20;
        let base = reserve(None, size, 2 << 20).unwrap();
        assert!(is_mapped(base, size), "a reservation is mapped (PROT_NONE)");
        let m = map_shared(base, 8192).unwrap();
        m.write(0, b"kfd").unwrap();
        let elsewhere = m.duplicate(None).unwrap();
        let inside = m.duplicate(Some(base + (1 << 20))).unwrap();
        assert_eq!(inside.addr(), base + (1 << 20));
        drop(m);
        let mut back = [0u8; 3];
        elsewhere.read(0, &mut back).unwrap();
        assert_eq!(&back, b"kfd");
        inside.write(1, b"F").unwrap();
        elsewhere.read(0, &mut back).unwrap();
        assert_eq!(&back, b"kFd");
        // Private memory cannot be duplicated.
        let private = map_anonymous(base + (2 << 20), 4096).unwrap();
        assert_eq!(private.duplicate(None).err(), Some(Errno::EINVAL));
        drop((elsewhere, inside, private));
        release(base, size).unwrap();
        assert!(!is_mapped(base, 4096));
        // A borrowed view leaves the memory alone when dropped.
        let owner = reserve(None, 8192, 4096).unwrap();
        let owned = map_anonymous(owner, 8192).unwrap();
        // SAFETY: `owned` keeps the range mapped until after the view is dropped.
        let view = unsafe { LinuxMapping::borrowed(owner, 8192) };
        view.write(0, &[7]).unwrap();
        drop(view);
        let mut b = [0u8; 1];
        owned.read(0, &mut b).unwrap();
        assert_eq!(b, [7]);
        drop(owned);
        release(owner, 8192).unwrap();
    }
}
