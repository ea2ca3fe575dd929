//! The scheduler's run-queue delay of the calling thread: how long it has waited, runnable,
//! while another task had its CPU (the second field of `/proc/thread-self/schedstat`).
//!
//! `hsakmt run --step` leaves the iterations during which it grew out of the library's own
//! time and counts them instead: time another program held the CPU is neither the library's
//! nor the simulated engines' (which are measured in wall time, so subtracting the delay would
//! count a preemption during their run twice).

use std::fs::File;
use std::os::unix::fs::FileExt;

/// The calling thread's `schedstat`, open for reading again and again.
pub(super) struct RunQueueDelay {
    file: File,
}

impl RunQueueDelay {
    /// Opens the calling thread's `schedstat`; `None` when the kernel does not report it
    /// (built without `CONFIG_SCHED_INFO`, or no `/proc`).
    pub(super) fn open() -> Option<Self> {
        let delay = Self { file: File::open("/proc/thread-self/schedstat").ok()? };
        delay.ns().map(|_| delay)
    }

    /// The thread's run-queue delay so far, in nanoseconds (one `pread`, nothing allocated).
    pub(super) fn ns(&self) -> Option<u64> {
        let mut buf = [0u8; 96];
        let n = self.file.read_at(&mut buf, 0).ok()?;
        let text = std::str::from_utf8(buf.get(..n)?).ok()?;
        text.split_ascii_whitespace().nth(1)?.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delay_is_read_and_never_goes_back() {
        // Linux with CONFIG_SCHED_INFO (every distribution kernel) reports it.
        let Some(delay) = RunQueueDelay::open() else { return };
        let first = delay.ns().unwrap();
        std::thread::yield_now();
        assert!(delay.ns().unwrap() >= first);
    }
}
