//! Descriptors the platform hands core besides `/dev/kfd` and the render nodes: the SMI event
//! streams `AMDKFD_IOC_SMI_EVENTS` returns and the pipes a debugger gives
//! `DBG_TRAP_ENABLE`. They are read, written and polled with `rustix`; only descriptors in the
//! platform's table are touched, so a number core passes that the platform did not hand out is
//! `EBADF`, never someone else's file.

use core::sync::atomic::{AtomicI32, Ordering};

use hsakmt_core::error::Errno;
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fd::{BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use rustix::pipe::PipeFlags;

/// How many such descriptors one platform holds open at once.
pub const MAX_DESCRIPTORS: usize = 64;

fn errno(e: rustix::io::Errno) -> Errno {
    Errno(e.raw_os_error())
}

/// The descriptors the platform owns, by raw number (-1: free slot).
#[derive(Debug)]
pub(crate) struct Descriptors {
    slots: [AtomicI32; MAX_DESCRIPTORS],
}

impl Descriptors {
    pub(crate) const fn new() -> Self {
        Self { slots: [const { AtomicI32::new(-1) }; MAX_DESCRIPTORS] }
    }

    /// Takes ownership of `fd` (from the kernel or `pipe2`).
    ///
    /// # Errors
    /// `EMFILE` when the table is full (the descriptor is closed).
    pub(crate) fn adopt(&self, fd: OwnedFd) -> Result<u32, Errno> {
        let raw = fd.into_raw_fd();
        for slot in &self.slots {
            if slot.compare_exchange(-1, raw, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                return Ok(raw.unsigned_abs());
            }
        }
        // SAFETY: `raw` came from `into_raw_fd` just above and was stored nowhere.
        drop(unsafe { OwnedFd::from_raw_fd(raw) });
        Err(Errno::EMFILE)
    }

    fn find(&self, fd: u32) -> Option<&AtomicI32> {
        let raw = i32::try_from(fd).ok()?;
        self.slots.iter().find(|s| s.load(Ordering::Acquire) == raw)
    }

    /// Runs `f` on `fd` when the platform owns it.
    fn with<R>(&self, fd: u32, f: impl FnOnce(BorrowedFd<'_>) -> R) -> Result<R, Errno> {
        let slot = self.find(fd).ok_or(Errno::EBADF)?;
        let raw = slot.load(Ordering::Acquire);
        if raw < 0 {
            return Err(Errno::EBADF);
        }
        // SAFETY: `raw` is in the table, so it is open and owned by this platform; core's
        // contract (`KfdDevice::close_fd`) is not to close a descriptor while using it.
        Ok(f(unsafe { BorrowedFd::borrow_raw(raw) }))
    }

    /// Closes `fd` if the platform owns it; returns whether it did.
    pub(crate) fn close(&self, fd: u32) -> bool {
        let Some(slot) = self.find(fd) else { return false };
        let raw = slot.swap(-1, Ordering::AcqRel);
        if raw >= 0 {
            // SAFETY: the slot held the only copy of the owned descriptor, just removed.
            drop(unsafe { OwnedFd::from_raw_fd(raw) });
        }
        true
    }

    /// `poll(POLLIN)` with a timeout in milliseconds (negative: none).
    pub(crate) fn poll(&self, fd: u32, timeout_ms: i32) -> Result<bool, Errno> {
        self.with(fd, |b| {
            let mut fds = [PollFd::new(&b, PollFlags::IN)];
            let timeout = u64::try_from(timeout_ms).ok().map(|ms| Timespec {
                tv_sec: i64::try_from(ms / 1000).unwrap_or(i64::MAX),
                tv_nsec: i64::try_from((ms % 1000) * 1_000_000).unwrap_or(0),
            });
            loop {
                match rustix::event::poll(&mut fds, timeout.as_ref()) {
                    Ok(n) => return Ok(n > 0 && fds[0].revents().contains(PollFlags::IN)),
                    Err(rustix::io::Errno::INTR) => {}
                    Err(e) => return Err(errno(e)),
                }
            }
        })?
    }

    pub(crate) fn read(&self, fd: u32, buf: &mut [u8]) -> Result<usize, Errno> {
        self.with(fd, |b| rustix::io::read(b, buf).map_err(errno))?
    }

    pub(crate) fn write(&self, fd: u32, data: &[u8]) -> Result<usize, Errno> {
        self.with(fd, |b| rustix::io::write(b, data).map_err(errno))?
    }

    /// A non-blocking, close-on-exec pipe: `(read, write)`.
    pub(crate) fn pipe(&self) -> Result<(u32, u32), Errno> {
        let (r, w) =
            rustix::pipe::pipe_with(PipeFlags::NONBLOCK | PipeFlags::CLOEXEC).map_err(errno)?;
        let r = self.adopt(r)?;
        match self.adopt(w) {
            Ok(w) => Ok((r, w)),
            Err(e) => {
                self.close(r);
                Err(e)
            }
        }
    }
}
