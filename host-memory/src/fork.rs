//! Fork detection without a system call per check: [`PidCache`].
//!
//! The process id is cached in a page marked `MADV_WIPEONFORK` (Linux ≥ 4.14): a forked child
//! sees the page zeroed, so the next lookup re-reads `getpid` and the caller notices the change.
//! Steady-state cost is one atomic load. Where the advice is unavailable every lookup calls
//! `getpid`.

use core::ffi::c_void;
use core::sync::atomic::{AtomicU32, Ordering};

use rustix::mm::{Advice, MapFlags, ProtFlags};

/// A process id cache that a fork wipes.
#[derive(Debug)]
pub struct PidCache {
    /// Address of the wipe-on-fork page, 0 when it could not be set up.
    page: usize,
}

fn getpid() -> u32 {
    rustix::process::getpid().as_raw_nonzero().get().unsigned_abs()
}

impl PidCache {
    /// Maps the page (falls back to plain `getpid` on failure).
    #[must_use]
    pub fn new() -> Self {
        // SAFETY: a fresh private anonymous page at a kernel-chosen address; it aliases nothing.
        let page = unsafe {
            rustix::mm::mmap_anonymous(
                core::ptr::null_mut(),
                4096,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE,
            )
        };
        let Ok(p) = page else { return Self { page: 0 } };
        // SAFETY: `p` is the page just mapped.
        if unsafe { rustix::mm::madvise(p, 4096, Advice::LinuxWipeOnFork) }.is_err() {
            // SAFETY: unmapping the page just mapped, never shared.
            let _ = unsafe { rustix::mm::munmap(p, 4096) };
            return Self { page: 0 };
        }
        Self { page: p as usize }
    }

    fn slot(&self) -> Option<&AtomicU32> {
        if self.page == 0 {
            return None;
        }
        // SAFETY: the page stays mapped until `drop` and is 4096-byte aligned; a child's copy
        // is zero-filled by the kernel, which is a valid AtomicU32 value.
        Some(unsafe { &*(self.page as *const AtomicU32) })
    }

    /// The calling process's id.
    #[must_use]
    pub fn get(&self) -> u32 {
        let Some(slot) = self.slot() else { return getpid() };
        match slot.load(Ordering::Relaxed) {
            0 => {
                let pid = getpid();
                slot.store(pid, Ordering::Relaxed);
                pid
            }
            pid => pid,
        }
    }
}

impl Default for PidCache {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for PidCache {
    fn drop(&mut self) {
        if self.page != 0 {
            // SAFETY: the page was mapped in `new` and no reference to it outlives `self`.
            let _ = unsafe { rustix::mm::munmap(self.page as *mut c_void, 4096) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caches_the_pid() {
        let _serial = crate::serial_test();
        let c = PidCache::new();
        assert_eq!(c.get(), std::process::id());
        assert_eq!(c.get(), std::process::id());
    }
}
