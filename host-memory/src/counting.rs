//! [`CountingAllocator`]: the system allocator, counting every allocation — how a program
//! proves a path allocates nothing (install it as the `#[global_allocator]` and compare
//! [`CountingAllocator::allocations`] before and after).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

std::thread_local! {
    /// The calling thread's allocations (constant-initialised, no destructor: usable from
    /// inside the allocator).
    static THREAD_ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// The system allocator with a count of allocations (`alloc`, `alloc_zeroed` and `realloc`
/// calls; frees are not counted), process-wide ([`CountingAllocator::allocations`]) and per
/// thread ([`thread_allocations`]).
#[derive(Debug)]
pub struct CountingAllocator {
    allocations: AtomicU64,
}

impl CountingAllocator {
    /// A count at zero.
    #[must_use]
    pub const fn new() -> Self {
        Self { allocations: AtomicU64::new(0) }
    }

    /// Allocations made so far.
    #[must_use]
    pub fn allocations(&self) -> u64 {
        self.allocations.load(Ordering::Relaxed)
    }

    fn count(&self) {
        self.allocations.fetch_add(1, Ordering::Relaxed);
        // A thread being torn down has no count left to keep.
        let _ = THREAD_ALLOCATIONS.try_with(|c| c.set(c.get().wrapping_add(1)));
    }
}

/// Allocations the calling thread has made through a [`CountingAllocator`] so far.
#[must_use]
pub fn thread_allocations() -> u64 {
    THREAD_ALLOCATIONS.try_with(Cell::get).unwrap_or(0)
}

impl Default for CountingAllocator {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: every method forwards to `System` with the arguments it was given, so the
// `GlobalAlloc` contract holds exactly as it does for `System`; counting touches no memory
// handed out.
unsafe impl GlobalAlloc for CountingAllocator {
    // SAFETY: the caller meets `GlobalAlloc::alloc`'s contract; it is forwarded unchanged.
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.count();
        // SAFETY: the caller's `layout` meets `GlobalAlloc::alloc`'s contract (non-zero size).
        unsafe { System.alloc(layout) }
    }

    // SAFETY: as `alloc`, for `GlobalAlloc::alloc_zeroed`.
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.count();
        // SAFETY: as `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    // SAFETY: the caller meets `GlobalAlloc::dealloc`'s contract; it is forwarded unchanged.
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, i.e. from `System`, with this `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    // SAFETY: the caller meets `GlobalAlloc::realloc`'s contract; it is forwarded unchanged.
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.count();
        // SAFETY: `ptr` came from `System` with `layout`; `new_size` meets the caller's contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_allocations_not_frees() {
        let a = CountingAllocator::new();
        let layout = Layout::from_size_align(64, 8).unwrap();
        // SAFETY: a non-zero layout; each pointer is freed once with its layout.
        unsafe {
            let p = a.alloc(layout);
            assert!(!p.is_null());
            let p = a.realloc(p, layout, 128);
            assert!(!p.is_null());
            a.dealloc(p, Layout::from_size_align(128, 8).unwrap());
            let z = a.alloc_zeroed(layout);
            assert_eq!(*z, 0);
            a.dealloc(z, layout);
        }
        assert_eq!(a.allocations(), 3);
        let mine = thread_allocations();
        // SAFETY: as above.
        unsafe { a.dealloc(a.alloc(layout), layout) };
        assert_eq!(thread_allocations(), mine + 1, "counted on this thread");
        let other = std::thread::scope(|s| s.spawn(thread_allocations).join().unwrap());
        assert_eq!(other, 0, "a new thread has made none through `a`");
    }
}
