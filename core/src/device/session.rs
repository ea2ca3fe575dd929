//! Open/close reference counting, the KFD version, and fork detection.
//!
//! libhsakmt semantics (`openclose.c`): the first open opens `/dev/kfd`, checks the interface
//! version and takes the topology snapshot; a second open in the same process only counts and
//! reports "already opened"; the matching closes balance it. A forked child inherits the
//! parent's state but may not use it — the kernel answers its ioctls with `EBADF` — so every call
//! in the child fails with "not opened in this process" until the child opens again, which
//! discards the parent's state.

use core::sync::atomic::{AtomicU32, Ordering};

use crate::uapi::KfdVersion;

/// Lock-free view of whether the device may be used by the calling process.
///
/// # Invariants
/// `pid != 0` exactly when `count > 0`; `version` is meaningful while `count > 0`.
#[derive(Debug)]
pub(crate) struct Session {
    count: AtomicU32,
    pid: AtomicU32,
    major: AtomicU32,
    minor: AtomicU32,
}

/// What the calling process may do with the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Usability {
    /// Open in this process.
    Open,
    /// Never opened, or closed.
    Closed,
    /// Opened by the parent of this (forked) process.
    Forked,
}

impl Session {
    pub(crate) const fn new() -> Self {
        Self {
            count: AtomicU32::new(0),
            pid: AtomicU32::new(0),
            major: AtomicU32::new(0),
            minor: AtomicU32::new(0),
        }
    }

    /// Whether process `pid` may use the device.
    #[inline]
    pub(crate) fn usability(&self, pid: u32) -> Usability {
        if self.count.load(Ordering::Acquire) == 0 {
            Usability::Closed
        } else if self.pid.load(Ordering::Relaxed) == pid {
            Usability::Open
        } else {
            Usability::Forked
        }
    }

    /// Counts one more open by the owner; returns the new count.
    pub(crate) fn reopen(&self) -> u32 {
        self.count.fetch_add(1, Ordering::AcqRel).saturating_add(1)
    }

    /// Records the kernel's version before the device counts as open (open-time setup checks
    /// it).
    pub(crate) fn set_version(&self, version: KfdVersion) {
        self.major.store(version.major, Ordering::Relaxed);
        self.minor.store(version.minor, Ordering::Relaxed);
    }

    /// Marks the device open (count 1) for `pid` with the kernel's `version`.
    pub(crate) fn start(&self, pid: u32, version: KfdVersion) {
        self.major.store(version.major, Ordering::Relaxed);
        self.minor.store(version.minor, Ordering::Relaxed);
        self.pid.store(pid, Ordering::Relaxed);
        self.count.store(1, Ordering::Release);
    }

    /// Counts one close; returns the remaining count (0: the caller must tear down).
    pub(crate) fn close(&self) -> u32 {
        let prev = self
            .count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| c.checked_sub(1))
            .unwrap_or(0);
        let left = prev.saturating_sub(1);
        if left == 0 {
            self.pid.store(0, Ordering::Relaxed);
        }
        left
    }

    /// Forgets everything (used when a forked child reopens).
    pub(crate) fn reset(&self) {
        self.count.store(0, Ordering::Release);
        self.pid.store(0, Ordering::Relaxed);
    }

    /// The open count.
    pub(crate) fn count(&self) -> u32 {
        self.count.load(Ordering::Acquire)
    }

    /// The interface version reported at open.
    pub(crate) fn version(&self) -> KfdVersion {
        KfdVersion {
            major: self.major.load(Ordering::Relaxed),
            minor: self.minor.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_forks() {
        let s = Session::new();
        assert_eq!(s.usability(10), Usability::Closed);
        s.start(10, KfdVersion { major: 1, minor: 23 });
        assert_eq!(s.usability(10), Usability::Open);
        assert_eq!(s.usability(11), Usability::Forked);
        assert_eq!(s.reopen(), 2);
        assert_eq!(s.close(), 1);
        assert_eq!(s.usability(10), Usability::Open);
        assert_eq!(s.close(), 0);
        assert_eq!(s.usability(10), Usability::Closed);
        // Unbalanced closes do not underflow.
        assert_eq!(s.close(), 0);
        assert_eq!(s.version().minor, 23);
    }
}
