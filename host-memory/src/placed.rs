//! The registry of live mappings placed inside reservations: what makes
//! [`release`](crate::release) safe whatever order a device model drops its mappings in.
//!
//! A [`HostMapping`](crate::HostMapping) made with `MAP_FIXED` inside a reservation puts a
//! `PROT_NONE` reservation back over its range when its last clone drops. Without a record of
//! them, releasing the reservation first would unmap the pages under a live mapping (whose
//! slices then point at nothing), and the later drop would put `PROT_NONE` over whatever the
//! process had mapped at that address since. With the registry:
//!
//! - a mapping is placed only where no live placed mapping is (`EBUSY` otherwise), so a
//!   `MAP_FIXED` never replaces memory a live [`HostMapping`](crate::HostMapping) hands out;
//! - [`release`](crate::release) unmaps only the parts of the range no live mapping covers,
//!   and marks the live ones *orphaned*: their pages stay mapped until their last clone
//!   drops, which then unmaps them instead of reserving them again;
//! - a release whose range cuts through a live mapping is refused (`EBUSY`, nothing changed).
//!
//! One lock orders everything: placing, dropping and releasing all make their system calls
//! while holding it, so no release can fall between a mapping's creation and its record, or
//! between a drop's look at its orphan mark and its `mmap`. None of these is a hot path (each
//! makes a system call anyway).
//!
//! A `fork` takes the lock first (a `pthread_atfork` handler, registered at the first use) and
//! both processes release it after: a child forked while another thread was placing or
//! releasing would otherwise inherit the lock held by a thread it does not have, and hang at
//! its first mapping.

use core::cell::RefCell;
use core::ffi::{c_int, c_void};
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, Once, PoisonError};

use hsakmt_core::error::Errno;
use rustix::mm::{MapFlags, ProtFlags};

use crate::errno;

/// A live placed mapping: its length and whether its reservation was released under it.
#[derive(Debug, Clone, Copy)]
struct Placed {
    len: usize,
    orphaned: bool,
}

/// Live placed mappings by start address (they never overlap).
static LIVE: Mutex<BTreeMap<usize, Placed>> = Mutex::new(BTreeMap::new());

fn live() -> MutexGuard<'static, BTreeMap<usize, Placed>> {
    static AT_FORK: Once = Once::new();
    AT_FORK.call_once(|| {
        // SAFETY: the three handlers are `extern "C"` functions without arguments that live as
        // long as the program; registering them has no other precondition. Were registration
        // to fail (ENOMEM), forks would only keep today's risk, so its result is not needed.
        let _ = unsafe {
            pthread_atfork(Some(hold_for_fork), Some(release_after_fork), Some(release_after_fork))
        };
    });
    lock()
}

fn lock() -> MutexGuard<'static, BTreeMap<usize, Placed>> {
    // Nothing panics while holding the lock; a poisoned map is still consistent.
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

thread_local! {
    /// The lock, held by the forking thread from just before `fork` to just after it.
    static HELD_FOR_FORK: RefCell<Option<MutexGuard<'static, BTreeMap<usize, Placed>>>> =
        const { RefCell::new(None) };
}

// SAFETY: the declaration matches POSIX's `int pthread_atfork(void (*)(void), void (*)(void),
// void (*)(void))` (a nullable function pointer is an `Option` of one).
unsafe extern "C" {
    /// POSIX: handlers `fork` runs before it (`prepare`) and after it in the parent and in
    /// the child (glibc and musl both provide it).
    fn pthread_atfork(
        prepare: Option<unsafe extern "C" fn()>,
        parent: Option<unsafe extern "C" fn()>,
        child: Option<unsafe extern "C" fn()>,
    ) -> c_int;
}

/// `fork`'s prepare handler: waits for the lock, so the registry is consistent when copied.
extern "C" fn hold_for_fork() {
    let guard = lock();
    let _ = HELD_FOR_FORK.try_with(|h| h.replace(Some(guard)));
}

/// `fork`'s parent and child handler: releases the lock the prepare handler took (in the
/// child, the only thread is the copy of the one that forked, so it is the holder).
extern "C" fn release_after_fork() {
    let _ = HELD_FOR_FORK.try_with(|h| h.take());
}

/// Whether a live placed mapping overlaps `[addr, end)`: one starting below `end` reaches past
/// `addr` (with `addr == end`, whether one straddles that address).
fn overlaps(map: &BTreeMap<usize, Placed>, addr: usize, end: usize) -> bool {
    map.range(..end).next_back().is_some_and(|(&a, p)| a + p.len > addr)
}

/// Maps with `map` (a `MAP_FIXED` over `[addr, addr + len)` of a reservation) and records the
/// result as a live placed mapping.
///
/// # Errors
/// `EBUSY` when a live placed mapping overlaps the range (nothing is mapped), `EINVAL` for
/// a range that wraps; the errno `map` returns.
pub(crate) fn place(
    addr: u64,
    len: usize,
    map: impl FnOnce() -> Result<*mut c_void, Errno>,
) -> Result<*mut c_void, Errno> {
    let start = usize::try_from(addr).map_err(|_| Errno::EINVAL)?;
    let end = start.checked_add(len).ok_or(Errno::EINVAL)?;
    let mut live = live();
    if overlaps(&live, start, end) {
        return Err(Errno::EBUSY);
    }
    let p = map()?;
    live.insert(p as usize, Placed { len, orphaned: false });
    Ok(p)
}

/// The last clone of the placed mapping at `addr` dropped: reserve its range again, or unmap
/// it when its reservation was released meanwhile.
pub(crate) fn unplace(addr: usize, len: usize) {
    let mut live = live();
    let orphaned = live.remove(&addr).is_some_and(|p| p.orphaned);
    let p = addr as *mut c_void;
    if orphaned {
        // SAFETY: the range is this mapping's own (no clone survives) and its reservation is
        // gone, so nothing else of the process lives there; unmapping it invalidates nothing.
        let _ = unsafe { rustix::mm::munmap(p, len) };
    } else {
        // SAFETY: the range was mapped by us inside a reservation that still stands, and no
        // view of it survives (this was the last clone); a fresh PROT_NONE anonymous mapping
        // over it keeps the aperture's reservation intact.
        let _ = unsafe {
            rustix::mm::mmap_anonymous(
                p,
                len,
                ProtFlags::empty(),
                MapFlags::PRIVATE | MapFlags::FIXED | MapFlags::NORESERVE,
            )
        };
    }
}

/// Unmaps `[addr, addr + size)` except the live placed mappings inside it, which are marked
/// orphaned (unmapped when they drop).
///
/// # Errors
/// `EBUSY` when a live placed mapping reaches across either end of the range (nothing
/// changed); `EINVAL` for a range that wraps; the errno of `munmap`.
pub(crate) fn release(addr: usize, size: usize) -> Result<(), Errno> {
    let end = addr.checked_add(size).ok_or(Errno::EINVAL)?;
    let mut live = live();
    // A mapping straddles an end when it starts below it and reaches past it.
    if overlaps(&live, addr, addr) || overlaps(&live, end, end) {
        return Err(Errno::EBUSY);
    }
    let mut cursor = addr;
    for (&a, p) in live.range_mut(addr..end) {
        if a > cursor {
            unmap(cursor, a - cursor)?;
        }
        p.orphaned = true;
        cursor = a + p.len;
    }
    if end > cursor { unmap(cursor, end - cursor) } else { Ok(()) }
}

fn unmap(addr: usize, len: usize) -> Result<(), Errno> {
    // SAFETY: the caller (core's aperture bookkeeping) releases only ranges it reserved, and
    // this piece holds no live placed mapping (the registry says so, under its lock): what it
    // unmaps is `PROT_NONE` reservation, which no Rust reference can point into.
    unsafe { rustix::mm::munmap(addr as *mut c_void, len) }.map_err(errno)
}

/// Live placed mappings overlapping `[addr, addr + size)`, and how many of them are orphaned.
#[must_use]
pub fn live_in(addr: u64, size: u64) -> (usize, usize) {
    let (Ok(start), Ok(size)) = (usize::try_from(addr), usize::try_from(size)) else {
        return (0, 0);
    };
    if size == 0 {
        return (0, 0);
    }
    let end = start.saturating_add(size);
    let live = live();
    let first = live.range(..=start).next_back().filter(|(a, p)| *a + p.len > start);
    let inside = live.range(start.saturating_add(1)..end);
    let all = first.into_iter().chain(inside);
    all.fold((0, 0), |(n, o), (_, p)| (n + 1, o + usize::from(p.orphaned)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::{is_mapped, reserve};
    use crate::{map_anonymous, map_shared};
    use hsakmt_core::platform::SharedMemory;

    const PAGE: u64 = crate::PAGE_SIZE;

    /// A fork while another thread holds the registry's lock: the fork waits for it, and the
    /// child finds it free (without the fork handlers, the child waited forever for a thread
    /// it does not have).
    #[test]
    fn a_child_forked_while_another_thread_holds_the_registry_can_map() {
        let _serial = crate::serial_test();
        // An empty range overlaps nothing (and the first use registers the fork handlers).
        assert_eq!(live_in(PAGE, 0), (0, 0));
        let (held, is_held) = std::sync::mpsc::channel();
        let holder = std::thread::spawn(move || {
            let guard = live();
            held.send(()).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(100));
            drop(guard);
        });
        is_held.recv().unwrap();
        // SAFETY: the child only takes the registry's lock, maps and unmaps a page, and leaves
        // with `_exit` (no unwinding into the parent's frames, no destructors of shared state).
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let ok = map_anonymous_at_any().is_some();
            // SAFETY: ends the forked child at once.
            unsafe { libc::_exit(i32::from(!ok)) }
        }
        let mut status = 0;
        let mut waited = 0;
        for _ in 0..500 {
            // SAFETY: polls the child just forked; `status` is a valid out-pointer.
            waited = unsafe { libc::waitpid(pid, &raw mut status, libc::WNOHANG) };
            if waited != 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        if waited == 0 {
            // SAFETY: kills and reaps the child that did not finish.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &raw mut status, 0);
            }
        }
        holder.join().unwrap();
        assert_eq!(waited, pid, "the child hung on the registry's lock");
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "status {status:#x}");
    }

    /// In a forked child: reserves a range, places a mapping in it and releases both.
    fn map_anonymous_at_any() -> Option<()> {
        let base = reserve(None, 4 * PAGE, PAGE).ok()?;
        let m = map_anonymous(base + PAGE, PAGE).ok()?;
        drop(m);
        crate::release(base, 4 * PAGE).ok()
    }

    #[test]
    fn a_release_under_live_mappings_leaves_them_mapped_until_they_drop() {
        let _serial = crate::serial_test();
        let base = reserve(None, 16 * PAGE, PAGE).unwrap();
        let a = map_anonymous(base + 2 * PAGE, 2 * PAGE).unwrap();
        let b = map_shared(base + 8 * PAGE, PAGE).unwrap();
        a.write(8, b"live").unwrap();
        assert_eq!(live_in(base, 16 * PAGE), (2, 0));
        crate::release(base, 16 * PAGE).unwrap();
        assert_eq!(live_in(base, 16 * PAGE), (2, 2), "both orphaned");
        // The gaps are gone, the live mappings' pages are not.
        assert!(!is_mapped(base, 2 * PAGE));
        assert!(!is_mapped(base + 4 * PAGE, 4 * PAGE));
        assert!(!is_mapped(base + 9 * PAGE, 7 * PAGE));
        assert!(is_mapped(base + 2 * PAGE, 2 * PAGE) && is_mapped(base + 8 * PAGE, PAGE));
        let mut back = [0u8; 4];
        a.read(8, &mut back).unwrap();
        assert_eq!(&back, b"live");
        b.write(0, b"still").unwrap();
        // A clone keeps the pages; the last drop unmaps them instead of reserving them again
        // (before the registry it put PROT_NONE over whatever the process had placed there).
        let clone = a.clone();
        drop(a);
        assert!(is_mapped(base + 2 * PAGE, 2 * PAGE));
        drop((clone, b));
        assert_eq!(live_in(base, 16 * PAGE), (0, 0));
        assert!(!is_mapped(base + 2 * PAGE, 2 * PAGE), "an orphan's drop unmaps");
        assert!(!is_mapped(base + 8 * PAGE, PAGE));
    }

    #[test]
    fn nothing_is_placed_over_a_live_mapping() {
        let _serial = crate::serial_test();
        let base = reserve(None, 8 * PAGE, PAGE).unwrap();
        let a = map_shared(base + PAGE, 2 * PAGE).unwrap();
        a.write(0, b"mine").unwrap();
        for (at, len) in [(base, 2 * PAGE), (base + 2 * PAGE, PAGE), (base + PAGE, 4 * PAGE)] {
            assert_eq!(map_anonymous(at, len).err(), Some(Errno::EBUSY), "{at:#x}+{len:#x}");
        }
        assert_eq!(a.duplicate(Some(base + 2 * PAGE)).err(), Some(Errno::EBUSY));
        let mut back = [0u8; 4];
        a.read(0, &mut back).unwrap();
        assert_eq!(&back, b"mine", "the live mapping was not replaced");
        // Beside it is fine.
        let beside = a.duplicate(Some(base + 3 * PAGE)).unwrap();
        beside.read(0, &mut back).unwrap();
        assert_eq!(&back, b"mine");
        drop((a, beside));
        // Dropped mappings are reserved again: placing there works once more.
        assert!(is_mapped(base, 8 * PAGE));
        drop(map_anonymous(base, 8 * PAGE).unwrap());
        crate::release(base, 8 * PAGE).unwrap();
    }

    #[test]
    fn a_release_cutting_through_a_live_mapping_is_refused() {
        let _serial = crate::serial_test();
        let base = reserve(None, 8 * PAGE, PAGE).unwrap();
        let a = map_anonymous(base + 2 * PAGE, 4 * PAGE).unwrap();
        assert_eq!(crate::release(base, 3 * PAGE), Err(Errno::EBUSY));
        assert_eq!(crate::release(base + 3 * PAGE, 5 * PAGE), Err(Errno::EBUSY));
        assert_eq!(crate::release(base + 3 * PAGE, PAGE), Err(Errno::EBUSY));
        assert_eq!(live_in(base, 8 * PAGE), (1, 0), "nothing changed");
        assert!(is_mapped(base, 8 * PAGE));
        a.write(4 * PAGE as usize - 1, &[1]).unwrap();
        // Ranges that only touch it are fine.
        crate::release(base, 2 * PAGE).unwrap();
        crate::release(base + 6 * PAGE, 2 * PAGE).unwrap();
        assert_eq!(live_in(base, 8 * PAGE), (1, 0));
        drop(a);
        crate::release(base + 2 * PAGE, 4 * PAGE).unwrap();
        assert!(!is_mapped(base + 2 * PAGE, 4 * PAGE));
        assert_eq!(crate::release(u64::MAX - PAGE + 1, 2 * PAGE), Err(Errno::EINVAL));
    }
}
