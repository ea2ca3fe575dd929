//! [`HostMapping`]: CPU mappings of memory the GPU (or the simulated GPU) shares, with
//! `rustix::mm`, and the functions that make them.

use core::ffi::c_void;
use core::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::Arc;

use hsakmt_core::error::Errno;
use hsakmt_core::platform::{Access, SharedMemory};
use rustix::fd::BorrowedFd;
use rustix::mm::{Advice, MapFlags, ProtFlags};

use crate::errno;
use crate::placed;
use crate::space::{PAGE_SIZE, is_mapped};

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
        match self.on_drop {
            OnDrop::Reserve => placed::unplace(self.addr, self.len),
            OnDrop::Unmap => {
                // SAFETY: the range is ours (the kernel chose it) and unobserved, this being
                // the last clone; unmapping it cannot invalidate any live reference.
                let _ = unsafe { rustix::mm::munmap(self.addr as *mut c_void, self.len) };
            }
            OnDrop::Keep => {}
        }
    }
}

/// A CPU mapping; clones share it, the last drop releases it.
///
/// # Invariants
/// `[addr, addr + len)` stays mapped, readable (and writable unless mapped read-only) while a
/// clone lives, and `addr` is 8-byte aligned (page-aligned except for registered views), which
/// is what lets [`SharedMemory::u32s`] and [`SharedMemory::u64s`] hand out atomics over it.
#[derive(Debug, Clone)]
pub struct HostMapping(Arc<Inner>);

impl HostMapping {
    fn new(addr: *mut c_void, len: usize, on_drop: OnDrop) -> Self {
        Self(Arc::new(Inner { addr: addr as usize, len, on_drop }))
    }

    /// A view of `len` bytes at `addr` of memory an application registered with a device
    /// model (`hsaKmtRegisterMemory`, a userptr allocation); dropping it leaves the memory
    /// alone.
    ///
    /// # Soundness
    /// The range is checked to be mapped now (with [`is_mapped`], which cannot tell a
    /// `PROT_NONE` reservation from accessible memory). That it *stays* mapped, readable and
    /// writable while the view lives is the registration contract a device model holds its
    /// caller to — libhsakmt's for registered memory, which amdkfd backs by pinning the pages:
    /// the application keeps the memory until it deregisters it, and the model drops its views
    /// at deregistration. This is the one promise of this crate's safe API that rests on the
    /// caller rather than on a check (an application that unmaps registered memory would, on a
    /// GPU, have it written by DMA all the same); models that can afford it re-check
    /// [`is_mapped`] before each use.
    ///
    /// # Errors
    /// `EINVAL` for a range that is empty or whose start is not 8-byte aligned, `EFAULT` when a
    /// page of it is not mapped.
    pub fn registered(addr: u64, len: usize) -> Result<Self, Errno> {
        if len == 0 || !addr.is_multiple_of(8) {
            return Err(Errno::EINVAL);
        }
        let first = addr & !(PAGE_SIZE - 1);
        let end = addr
            .checked_add(len as u64)
            .and_then(|e| e.checked_next_multiple_of(PAGE_SIZE))
            .ok_or(Errno::EFAULT)?;
        if !is_mapped(first, end - first) {
            return Err(Errno::EFAULT);
        }
        Ok(Self::new(addr as *mut c_void, len, OnDrop::Keep))
    }

    /// Maps the same pages again: at `at` (replacing part of a reservation) or where the
    /// kernel chooses. Only shared mappings ([`map_shared`], [`map_shared_anywhere`]) can be
    /// duplicated; the copy keeps the pages alive after the original goes.
    ///
    /// # Errors
    /// `EINVAL` for a private mapping; the errno of `mremap`.
    pub fn duplicate(&self, at: Option<u64>) -> Result<Self, Errno> {
        let old = self.0.addr as *mut c_void;
        let len = self.0.len;
        match at {
            Some(a) => {
                let p = placed::place(a, len, || {
                    // SAFETY: `mremap` with an old size of 0 creates a second mapping of the
                    // same shared pages and leaves the original untouched; the target lies in
                    // one of our own reservations where the registry holds no live mapping, so
                    // no live Rust reference is replaced.
                    unsafe {
                        rustix::mm::mremap_fixed(
                            old,
                            0,
                            len,
                            rustix::mm::MremapFlags::MAYMOVE,
                            a as *mut c_void,
                        )
                    }
                    .map_err(errno)
                })?;
                Ok(Self::new(p, len, OnDrop::Reserve))
            }
            None => {
                // SAFETY: as above, at an address the kernel chooses (it aliases nothing).
                let p =
                    unsafe { rustix::mm::mremap(old, 0, len, rustix::mm::MremapFlags::MAYMOVE) }
                        .map_err(errno)?;
                Ok(Self::new(p, len, OnDrop::Unmap))
            }
        }
    }

    /// Copies `len` bytes from byte `src_offset` of `src` to byte `dst_offset` of `dst`, with
    /// `memmove` semantics (the two ranges may overlap, also within one mapping): what a DMA
    /// engine does.
    ///
    /// Like [`SharedMemory::write`], the copy is made of plain stores: another agent accessing
    /// the same bytes meanwhile sees them in an unspecified order, which users of shared memory
    /// exclude (a copy's buffers are not touched until it completes).
    ///
    /// # Errors
    /// [`Errno::EFAULT`] when either range is outside its mapping (nothing is copied).
    pub fn copy(
        dst: &Self,
        dst_offset: usize,
        src: &Self,
        src_offset: usize,
        len: usize,
    ) -> Result<(), Errno> {
        let to = dst.range(dst_offset, len)?;
        let from = src.range(src_offset, len)?;
        // SAFETY: `range` checked that both ranges lie inside their live mappings, which the
        // borrows of `dst` and `src` keep mapped for the call; `ptr::copy` allows overlap.
        unsafe { core::ptr::copy(from, to, len) };
        Ok(())
    }

    fn range(&self, offset: usize, len: usize) -> Result<*mut u8, Errno> {
        let end = offset.checked_add(len).ok_or(Errno::EFAULT)?;
        if end > self.0.len {
            return Err(Errno::EFAULT);
        }
        Ok((self.0.addr + offset) as *mut u8)
    }
}

impl SharedMemory for HostMapping {
    #[inline]
    fn addr(&self) -> u64 {
        self.0.addr as u64
    }

    #[inline]
    fn len(&self) -> usize {
        self.0.len
    }

    #[inline]
    fn u32s(&self) -> &[AtomicU32] {
        // SAFETY: by the type's invariant the range is 8-byte aligned, `len` bytes long and
        // stays mapped while `self` (a clone of the Arc) lives; atomics may alias memory other
        // agents write.
        unsafe { core::slice::from_raw_parts(self.0.addr as *const AtomicU32, self.0.len / 4) }
    }

    #[inline]
    fn u64s(&self) -> &[AtomicU64] {
        // SAFETY: as for `u32s`; the base is 8-byte aligned.
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

/// Maps `fd` at `offset`: at `addr` (replacing a reservation) or where the kernel chooses;
/// `dont_fork` marks the range `MADV_DONTFORK`.
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
) -> Result<HostMapping, Errno> {
    let len = usize::try_from(size).map_err(|_| Errno::ENOMEM)?;
    let m = match addr {
        Some(a) => {
            let p = placed::place(a, len, || {
                // SAFETY: the MAP_FIXED target lies in one of our own reservations where the
                // registry holds no live mapping, so no live Rust reference is replaced.
                unsafe {
                    rustix::mm::mmap(
                        a as *mut c_void,
                        len,
                        prot(access),
                        MapFlags::SHARED | MapFlags::FIXED,
                        fd,
                        offset,
                    )
                }
                .map_err(errno)
            })?;
            HostMapping::new(p, len, OnDrop::Reserve)
        }
        None => {
            // SAFETY: a fresh mapping where the kernel chooses; it aliases nothing.
            let p = unsafe {
                rustix::mm::mmap(
                    core::ptr::null_mut(),
                    len,
                    prot(access),
                    MapFlags::SHARED,
                    fd,
                    offset,
                )
            }
            .map_err(errno)?;
            HostMapping::new(p, len, OnDrop::Unmap)
        }
    };
    let p = m.0.addr as *mut c_void;
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
pub fn map_anonymous(addr: u64, size: u64) -> Result<HostMapping, Errno> {
    map_anonymous_at(addr, size, MapFlags::PRIVATE)
}

/// Backs `[addr, addr + size)` (inside a reservation) with zeroed *shared* anonymous memory,
/// marked `MADV_DONTFORK`: memory that [`HostMapping::duplicate`] can map a second time.
///
/// # Errors
/// The errno of `mmap` / `madvise`.
pub fn map_shared(addr: u64, size: u64) -> Result<HostMapping, Errno> {
    map_anonymous_at(addr, size, MapFlags::SHARED)
}

/// Zeroed anonymous memory over `[addr, addr + size)` of a reservation, private or shared as
/// `sharing` says, marked `MADV_DONTFORK`.
fn map_anonymous_at(addr: u64, size: u64, sharing: MapFlags) -> Result<HostMapping, Errno> {
    let len = usize::try_from(size).map_err(|_| Errno::ENOMEM)?;
    let p = placed::place(addr, len, || {
        // SAFETY: as for `map_fd`: the target lies in our own reservation, under no live mapping.
        unsafe {
            rustix::mm::mmap_anonymous(
                addr as *mut c_void,
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                sharing | MapFlags::FIXED,
            )
        }
        .map_err(errno)
    })?;
    let m = HostMapping::new(p, len, OnDrop::Reserve);
    // SAFETY: the range was just mapped by us.
    unsafe { rustix::mm::madvise(p, len, Advice::LinuxDontFork) }.map_err(errno)?;
    Ok(m)
}

/// Zeroed shared anonymous memory where the kernel chooses (unmapped when the last clone
/// goes): memory without a place in any aperture that [`HostMapping::duplicate`] can map
/// elsewhere.
///
/// # Errors
/// The errno of `mmap`.
pub fn map_shared_anywhere(size: u64) -> Result<HostMapping, Errno> {
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
    Ok(HostMapping::new(p, len, OnDrop::Unmap))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::{release, reserve};
    use core::sync::atomic::Ordering;

    #[test]
    fn reserve_back_and_release() {
        let _serial = crate::serial_test();
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
        let _serial = crate::serial_test();
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
        // A registered view leaves the memory alone when dropped.
        let owner = reserve(None, 8192, 4096).unwrap();
        let owned = map_anonymous(owner, 8192).unwrap();
        let view = HostMapping::registered(owner, 8192).unwrap();
        view.write(0, &[7]).unwrap();
        drop(view);
        let mut b = [0u8; 1];
        owned.read(0, &mut b).unwrap();
        assert_eq!(b, [7]);
        drop(owned);
        release(owner, 8192).unwrap();
    }

    #[test]
    fn registered_views_check_the_range() {
        let _serial = crate::serial_test();
        let owner = reserve(None, 16384, 4096).unwrap();
        let owned = map_anonymous(owner, 8192).unwrap();
        // Inside one page, 8-aligned but not page-aligned: fine.
        let view = HostMapping::registered(owner + 64, 100).unwrap();
        assert_eq!(view.addr(), owner + 64);
        assert_eq!(view.u64s().len(), 12);
        assert_eq!(HostMapping::registered(owner + 4, 8).err(), Some(Errno::EINVAL));
        assert_eq!(HostMapping::registered(owner, 0).err(), Some(Errno::EINVAL));
        assert_eq!(HostMapping::registered(u64::MAX - 7, 16).err(), Some(Errno::EFAULT));
        // The first page is below `mmap_min_addr` (at least 4 KiB): never mapped.
        assert_eq!(HostMapping::registered(8, 8).err(), Some(Errno::EFAULT));
        // The third page is released: a range reaching into it is refused — unless another
        // thread of the test process has mapped something there meanwhile (the kernel may hand
        // a released page to anyone), which is looked at after the call.
        release(owner + 8192, 8192).unwrap();
        let reaching = HostMapping::registered(owner + 4096, 8192).err();
        if !is_mapped(owner + 8192, 4096) {
            assert_eq!(reaching, Some(Errno::EFAULT));
        }
        drop((view, owned));
        release(owner, 8192).unwrap();
    }

    #[test]
    fn copies_check_bounds_and_allow_overlap() {
        let _serial = crate::serial_test();
        let a = map_shared_anywhere(8192).unwrap();
        let b = map_shared_anywhere(4096).unwrap();
        a.write(0, b"abcdefgh").unwrap();
        HostMapping::copy(&b, 100, &a, 0, 8).unwrap();
        let mut back = [0u8; 8];
        b.read(100, &mut back).unwrap();
        assert_eq!(&back, b"abcdefgh");
        // Overlapping, forward and backward, within one mapping (memmove).
        HostMapping::copy(&a, 2, &a, 0, 6).unwrap();
        a.read(0, &mut back).unwrap();
        assert_eq!(&back, b"ababcdef");
        HostMapping::copy(&a, 0, &a, 2, 6).unwrap();
        a.read(0, &mut back).unwrap();
        assert_eq!(&back, b"abcdefef");
        // Out of range on either side: an error, and nothing copied.
        assert_eq!(HostMapping::copy(&b, 4090, &a, 0, 8), Err(Errno::EFAULT));
        assert_eq!(HostMapping::copy(&b, 0, &a, 8190, 8), Err(Errno::EFAULT));
        assert_eq!(HostMapping::copy(&b, usize::MAX, &a, 0, 8), Err(Errno::EFAULT));
        b.read(4090, &mut back[..6]).unwrap();
        assert_eq!(&back[..6], &[0; 6]);
    }
}
