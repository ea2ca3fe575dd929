//! libhsakmt's debugger calls on top of [`Debugger`] (`debug.c`): `hsaKmtDbgEnable`,
//! `hsaKmtDbgDisable`, `hsaKmtDbgGetDeviceData`, `hsaKmtDbgGetQueueData`,
//! `hsaKmtDebugTrapIoctl`. They debug the calling process itself, and need KFD 1.13.
//!
//! Differences from upstream, on purpose:
//! - upstream hands the kernel its `/dev/kfd` descriptor as the notification descriptor (the
//!   kernel's writes into it fail silently); [`Kfd::dbg_enable`] creates a pipe instead, whose
//!   read end [`Kfd::debug_event_fd`] gives, so a caller can wait for exceptions
//!   ([`Kfd::wait_debug_event`]). Like upstream it subscribes to no exception; call
//!   [`Debugger::set_exceptions_enabled`] for notifications.
//! - upstream's `hsaKmtDbgGetQueueData` fails (`ERROR`) whenever `suspend_queues` is false or
//!   the process has no queue (its `!queue_ids` check); [`Kfd::dbg_queue_data`] returns the
//!   snapshot then.
//! - outputs go into caller buffers instead of `malloc`ed ones.

use super::{Debugger, Error, Kfd};
use crate::debug::{ExceptionCode, ExceptionMask, RuntimeInfo};
use crate::device::MemoryStorage;
use crate::platform::{DbgTrapData, Platform};
use crate::uapi::*;

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    fn self_debugger(&self) -> Debugger<'_, P, S> {
        self.debugger(self.platform.process_id())
    }

    /// `hsaKmtDbgEnable`: starts a debug session on the calling process (notifications go to
    /// a pipe of the library's, see the module docs) and returns the runtime info (whose size
    /// libhsakmt reports as `sizeof(struct kfd_runtime_info)`).
    ///
    /// # Errors
    /// [`Error::NotOpened`] / [`Error::ForkedChild`], [`Error::NotSupported`] before KFD 1.13,
    /// [`Error::Platform`] when no pipe can be made, [`Error::Ioctl`] (`EALREADY` …).
    pub fn dbg_enable(&self) -> Result<RuntimeInfo, Error> {
        self.check_open()?;
        self.require_minor("debugger", since::DEBUGGER)?;
        let pipe = match self.debug_pipe.get() {
            Some(p) => p,
            None => {
                let p = self.platform.create_pipe().map_err(Error::Platform)?;
                self.debug_pipe.set(Some(p));
                p
            }
        };
        match self.self_debugger().enable(ExceptionMask::NONE, pipe.1) {
            Ok(info) => Ok(info),
            Err(e) => {
                self.close_debug_pipe();
                Err(e)
            }
        }
    }

    /// `hsaKmtDbgDisable`: ends the calling process's debug session and closes the pipe.
    ///
    /// # Errors
    /// As [`Kfd::dbg_enable`]; [`Error::Ioctl`] (`EINVAL` without a session).
    pub fn dbg_disable(&self) -> Result<(), Error> {
        self.check_open()?;
        self.require_minor("debugger", since::DEBUGGER)?;
        let r = self.self_debugger().disable();
        self.close_debug_pipe();
        r
    }

    pub(crate) fn close_debug_pipe(&self) {
        if let Some((r, w)) = self.debug_pipe.take() {
            self.platform.close_fd(r);
            self.platform.close_fd(w);
        }
    }

    /// The read end of [`Kfd::dbg_enable`]'s notification pipe, while a session it started
    /// lives.
    pub fn debug_event_fd(&self) -> Option<u32> {
        self.debug_pipe.get().map(|(r, _)| r)
    }

    /// Waits up to `timeout_ms` (negative: forever) for a notification on
    /// [`Kfd::debug_event_fd`] and consumes the pending ones; returns whether there was any.
    ///
    /// # Errors
    /// [`Error::NotOpened`] when no session of [`Kfd::dbg_enable`] lives; [`Error::Platform`].
    pub fn wait_debug_event(&self, timeout_ms: i32) -> Result<bool, Error> {
        let (r, _) = self.debug_pipe.get().ok_or(Error::NotOpened)?;
        if !self.platform.poll_fd(r, timeout_ms).map_err(Error::Platform)? {
            return Ok(false);
        }
        let mut buf = [0u8; 64];
        for _ in 0..crate::config::DEBUG_EVENT_DRAIN_READS {
            match self.platform.read_fd(r, &mut buf) {
                Ok(n) if n >= buf.len() => {}
                _ => break,
            }
        }
        Ok(true)
    }

    /// `hsaKmtDbgGetDeviceData`: the device snapshot of the calling process into `out`
    /// (nothing cleared); returns how many GPUs it has.
    ///
    /// # Errors
    /// As [`Kfd::dbg_enable`]; [`Error::Ioctl`].
    pub fn dbg_device_data(&self, out: &mut [kfd_dbg_device_info_entry]) -> Result<u32, Error> {
        self.self_debugger().device_snapshot(ExceptionMask::NONE, out)
    }

    /// `hsaKmtDbgGetQueueData`: the queue snapshot of the calling process into `out`, which
    /// marks every queue seen (`EC_QUEUE_NEW` cleared); with `suspend`, the queues reported are
    /// then suspended and the snapshot retaken. Returns how many queues the process has.
    ///
    /// # Errors
    /// As [`Kfd::dbg_enable`]; [`Error::Ioctl`].
    pub fn dbg_queue_data(
        &self,
        out: &mut [kfd_queue_snapshot_entry],
        suspend: bool,
    ) -> Result<u32, Error> {
        let d = self.self_debugger();
        let new = ExceptionCode::QueueNew.mask();
        let total = d.queue_snapshot(new, out)?;
        if suspend && total > 0 {
            let mut ids = [0u32; crate::config::MAX_DEVICE_QUEUES];
            let n = out.len().min(total as usize).min(ids.len());
            for (id, e) in ids.iter_mut().zip(out.iter()).take(n) {
                *id = e.queue_id;
            }
            d.suspend_queues(ids.get_mut(..n).unwrap_or_default(), 0, new)?;
            return d.queue_snapshot(new, out);
        }
        Ok(total)
    }

    /// `hsaKmtDebugTrapIoctl`: one `DBG_TRAP` operation exactly as the caller built it (its
    /// pid and op), with `data` for its user pointer. Returns the ioctl's result; as upstream
    /// judges it, suspend and resume succeed when it is at most the number of ids given, other
    /// operations when the ioctl succeeded.
    ///
    /// # Errors
    /// [`Error::NotOpened`] / [`Error::ForkedChild`]; [`Error::Ioctl`] (what upstream reports
    /// as `DebugReturn` < 0 and `ERROR`); [`Error::NotSupported`] before KFD 1.13.
    pub fn debug_trap_raw(
        &self,
        args: &mut kfd_ioctl_dbg_trap_args,
        data: DbgTrapData<'_>,
    ) -> Result<u32, Error> {
        self.dbg_trap_ioctl(args, data)
    }
}
