//! The debugger (`AMDKFD_IOC_DBG_TRAP`, KFD 1.13): every `KFD_IOC_DBG_TRAP_*` operation as a
//! typed method of [`Debugger`], libhsakmt's `hsaKmtDbg*` and `hsaKmtDebugTrapIoctl` on top
//! ([`compat`]), and what the four deprecated calls answer ([`deprecated`]).
//!
//! Every operation goes to one target process by pid; on Linux a debugger must be the
//! target's ptrace parent, except for the target itself (libhsakmt's `hsaKmtDbgEnable` debugs
//! the calling process). Generic errors of the kernel: `ESRCH` (no such process with KFD
//! state), `EINVAL` (no session for every operation but `ENABLE`), `EPERM` (the hardware
//! operations — launch override and mode, suspend, resume, address watches, flags — before the
//! target's runtime is enabled, or a foreign target that is not ptraced), `EOPNOTSUPP` (a
//! secondary KFD process).
//!
//! Queue ids are the kernel's ([`QueueInfo::queue_id`](super::queue_manager::QueueInfo));
//! GPUs are user node ids, turned into gpu_ids here.

pub mod compat;
pub mod deprecated;

use core::sync::atomic::{AtomicU32, Ordering};

use super::{Error, Kfd};
use crate::debug::{
    DebugEvent, DebugFlags, ExceptionCode, ExceptionMask, OverrideResult, RuntimeInfo, TrapMask,
    TrapOverride, WatchMode, WaveLaunchMode,
};
use crate::device::MemoryStorage;
use crate::error::Errno;
use crate::platform::{DbgTrapData, Ioctl, Platform};
use crate::uapi::*;

/// The notification pipe [`compat`]'s `dbg_enable` creates (read and write descriptors, or
/// `u32::MAX`).
#[derive(Debug)]
pub(crate) struct DebugPipe {
    read: AtomicU32,
    write: AtomicU32,
}

impl DebugPipe {
    pub(crate) const fn new() -> Self {
        Self { read: AtomicU32::new(u32::MAX), write: AtomicU32::new(u32::MAX) }
    }

    fn get(&self) -> Option<(u32, u32)> {
        let (r, w) = (self.read.load(Ordering::Acquire), self.write.load(Ordering::Acquire));
        (r != u32::MAX && w != u32::MAX).then_some((r, w))
    }

    fn set(&self, fds: Option<(u32, u32)>) {
        let (r, w) = fds.unwrap_or((u32::MAX, u32::MAX));
        self.read.store(r, Ordering::Release);
        self.write.store(w, Ordering::Release);
    }

    pub(crate) fn take(&self) -> Option<(u32, u32)> {
        let r = self.read.swap(u32::MAX, Ordering::AcqRel);
        let w = self.write.swap(u32::MAX, Ordering::AcqRel);
        (r != u32::MAX && w != u32::MAX).then_some((r, w))
    }
}

/// What an address watch is set to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AddressWatch {
    /// The watched address.
    pub address: u64,
    /// The address bits compared: the kernel programs the mask's bits 6 to 29 into the
    /// hardware's 24-bit compare mask (64-byte granularity), and address bits from 30 up are
    /// always compared — `0xFFFF_FFC0` watches one 64-byte line, `0xFFFF_F000` one 4 KiB page.
    pub mask: u32,
    /// What triggers it.
    pub mode: WatchMode,
}

/// The debugger operations on one target process (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct Debugger<'k, P: Platform, S: MemoryStorage<P::Mapping>> {
    kfd: &'k Kfd<P, S>,
    pid: u32,
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// The debugger operations on process `pid` (the calling process: its
    /// [`process_id`](crate::platform::Host::process_id)).
    pub const fn debugger(&self, pid: u32) -> Debugger<'_, P, S> {
        Debugger { kfd: self, pid }
    }

    /// Issues one `DBG_TRAP` operation: retried on `EINTR` only (`EAGAIN` means "no event"
    /// for `QUERY_DEBUG_EVENT`); returns the ioctl's result.
    pub(crate) fn dbg_trap_ioctl(
        &self,
        args: &mut kfd_ioctl_dbg_trap_args,
        data: DbgTrapData<'_>,
    ) -> Result<u32, Error> {
        self.check_open()?;
        self.require_minor("debugger", since::DEBUGGER)?;
        let mut request = Ioctl::DbgTrap { args, data, returned: 0 };
        let mut tries = 0;
        loop {
            match self.platform.ioctl(&mut request) {
                Ok(()) => break,
                Err(Errno::EINTR | Errno::ERESTARTSYS) if tries < crate::config::IOCTL_RETRIES => {
                    // Bounded by IOCTL_RETRIES.
                    tries = tries.saturating_add(1);
                }
                Err(errno) => return Err(self.ioctl_failure("DBG_TRAP", errno)),
            }
        }
        match request {
            Ioctl::DbgTrap { returned, .. } => Ok(returned),
            _ => Ok(0),
        }
    }

    /// The gpu_id of user node `node`.
    ///
    /// # Errors
    /// [`Error::NotOpened`] / [`Error::ForkedChild`]; [`Error::InvalidNode`] for a CPU node or
    /// a node that does not exist.
    pub(crate) fn gpu_id_of(&self, node: u32) -> Result<u32, Error> {
        self.with_topology(|t| t.node_by_user_id(node).and_then(|n| n.gpu_id()))?
            .filter(|g| *g != 0)
            .ok_or(Error::InvalidNode { node })
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Debugger<'_, P, S> {
    fn args(&self, op: u32, op_args: kfd_ioctl_dbg_trap_args_union) -> kfd_ioctl_dbg_trap_args {
        kfd_ioctl_dbg_trap_args { pid: self.pid, op, op_args }
    }

    fn call(&self, op: u32, op_args: kfd_ioctl_dbg_trap_args_union) -> Result<(), Error> {
        self.kfd.dbg_trap_ioctl(&mut self.args(op, op_args), DbgTrapData::None).map(|_| ())
    }

    /// `ENABLE`: starts a debug session. The kernel writes one byte into `notify_fd` (a pipe's
    /// write end from [`KfdDevice::create_pipe`](crate::platform::KfdDevice::create_pipe))
    /// whenever an exception of `exceptions` is raised. Returns the runtime's state.
    ///
    /// # Errors
    /// [`Error::Ioctl`]: `EALREADY` (a session exists), `ENODEV` (a GPU before gfx9), `EBUSY`
    /// (GWS in use where the debugger cannot share it), `EBADF` (`notify_fd`), generic errors.
    pub fn enable(&self, exceptions: ExceptionMask, notify_fd: u32) -> Result<RuntimeInfo, Error> {
        let e = kfd_ioctl_dbg_trap_enable_args {
            exception_mask: exceptions.0,
            rinfo_ptr: 0,
            rinfo_size: 0,
            dbg_fd: notify_fd,
        };
        let mut info = kfd_runtime_info::default();
        let mut args = self.args(KFD_IOC_DBG_TRAP_ENABLE, e.into());
        self.kfd.dbg_trap_ioctl(&mut args, DbgTrapData::RuntimeInfo(&mut info))?;
        Ok(RuntimeInfo::from_kernel(&info))
    }

    /// `DISABLE`: ends the session (queues resumed, watches and flags cleared, raised
    /// exceptions forgotten).
    ///
    /// # Errors
    /// [`Error::Ioctl`] (`EINVAL` without a session).
    pub fn disable(&self) -> Result<(), Error> {
        self.call(KFD_IOC_DBG_TRAP_DISABLE, kfd_ioctl_dbg_trap_enable_args::default().into())
    }

    /// `SEND_RUNTIME_EVENT`: raises `exceptions` to the runtime: `EC_PROCESS_RUNTIME` unblocks
    /// a pending runtime enable or disable, `EC_DEVICE_MEMORY_VIOLATION` delivers the saved
    /// fault of `node` to the memory events, the rest goes to queue `queue_id`'s error payload
    /// and event.
    ///
    /// # Errors
    /// [`Error::InvalidNode`]; [`Error::Ioctl`] (`ENODEV` for a GPU of no process device).
    pub fn send_runtime_event(
        &self,
        node: u32,
        queue_id: u32,
        exceptions: ExceptionMask,
    ) -> Result<(), Error> {
        let gpu_id = self.kfd.gpu_id_of(node)?;
        let a = kfd_ioctl_dbg_trap_send_runtime_event_args {
            exception_mask: exceptions.0,
            gpu_id,
            queue_id,
        };
        self.call(KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT, a.into())
    }

    /// `SEND_RUNTIME_EVENT(EC_PROCESS_RUNTIME)`: lets a runtime enable or disable that waits
    /// for the debugger go on (needs no GPU).
    ///
    /// # Errors
    /// [`Error::Ioctl`].
    pub fn acknowledge_runtime(&self) -> Result<(), Error> {
        let a = kfd_ioctl_dbg_trap_send_runtime_event_args {
            exception_mask: ExceptionCode::ProcessRuntime.mask().0,
            gpu_id: 0,
            queue_id: 0,
        };
        self.call(KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT, a.into())
    }

    /// `SET_EXCEPTIONS_ENABLED`: the exceptions that notify the debugger from now on (a
    /// notification is written at once when one of them is already raised).
    ///
    /// # Errors
    /// [`Error::Ioctl`].
    pub fn set_exceptions_enabled(&self, exceptions: ExceptionMask) -> Result<(), Error> {
        let a = kfd_ioctl_dbg_trap_set_exceptions_enabled_args { exception_mask: exceptions.0 };
        self.call(KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED, a.into())
    }

    /// `SET_WAVE_LAUNCH_OVERRIDE`: within `request`, the trap-mask bits become those of
    /// `enable`.
    ///
    /// # Errors
    /// [`Error::Ioctl`]: `EINVAL`/`EPERM` (a mode a GPU refuses), `EACCES` (a bit of
    /// `request` some GPU cannot override), generic errors.
    pub fn set_wave_launch_override(
        &self,
        mode: TrapOverride,
        enable: TrapMask,
        request: TrapMask,
    ) -> Result<OverrideResult, Error> {
        let o = kfd_ioctl_dbg_trap_set_wave_launch_override_args {
            override_mode: mode.raw(),
            enable_mask: enable.0,
            support_request_mask: request.0,
            pad: 0,
        };
        let mut args = self.args(KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE, o.into());
        self.kfd.dbg_trap_ioctl(&mut args, DbgTrapData::None)?;
        let out = args.op_args.launch_override();
        Ok(OverrideResult {
            previous: TrapMask(out.enable_mask),
            supported: TrapMask(out.support_request_mask),
        })
    }

    /// `SET_WAVE_LAUNCH_MODE`.
    ///
    /// # Errors
    /// [`Error::Ioctl`].
    pub fn set_wave_launch_mode(&self, mode: WaveLaunchMode) -> Result<(), Error> {
        let a = kfd_ioctl_dbg_trap_set_wave_launch_mode_args { launch_mode: mode.raw(), pad: 0 };
        self.call(KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE, a.into())
    }

    /// `SUSPEND_QUEUES`: suspends the queues `ids` names (kernel queue ids) and clears
    /// `clear` from each suspended queue's exceptions; returns how many are suspended. Each id
    /// gets the kernel's status bits ([`QueueOutcome::of`](crate::debug::QueueOutcome::of)): a
    /// queue the debugger has not seen yet (`EC_QUEUE_NEW` raised — take a
    /// [`queue_snapshot`](Self::queue_snapshot) that clears it first) stays invalid.
    ///
    /// # Errors
    /// [`Error::Ioctl`].
    pub fn suspend_queues(
        &self,
        ids: &mut [u32],
        grace_period: u32,
        clear: ExceptionMask,
    ) -> Result<u32, Error> {
        let a = kfd_ioctl_dbg_trap_suspend_queues_args {
            exception_mask: clear.0,
            queue_array_ptr: 0,
            num_queues: 0,
            grace_period,
        };
        let mut args = self.args(KFD_IOC_DBG_TRAP_SUSPEND_QUEUES, a.into());
        self.kfd.dbg_trap_ioctl(&mut args, DbgTrapData::QueueIds(ids))
    }

    /// `RESUME_QUEUES`: resumes the queues `ids` names, or every queue of the process
    /// (`None`); returns how many were resumed.
    ///
    /// # Errors
    /// [`Error::Ioctl`].
    pub fn resume_queues(&self, ids: Option<&mut [u32]>) -> Result<u32, Error> {
        let mut args = self.args(
            KFD_IOC_DBG_TRAP_RESUME_QUEUES,
            kfd_ioctl_dbg_trap_resume_queues_args::default().into(),
        );
        let data = ids.map_or(DbgTrapData::None, DbgTrapData::QueueIds);
        self.kfd.dbg_trap_ioctl(&mut args, data)
    }

    /// `SET_NODE_ADDRESS_WATCH` on GPU `node`; returns the watch id (0..4).
    ///
    /// # Errors
    /// [`Error::InvalidNode`]; [`Error::Ioctl`]: `ENOMEM` (the GPU's 4 watch points are taken),
    /// `ENODEV`, generic errors.
    pub fn set_address_watch(&self, node: u32, watch: AddressWatch) -> Result<u32, Error> {
        let w = kfd_ioctl_dbg_trap_set_node_address_watch_args {
            address: watch.address,
            mode: watch.mode.raw(),
            mask: watch.mask,
            gpu_id: self.kfd.gpu_id_of(node)?,
            id: 0,
        };
        let mut args = self.args(KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH, w.into());
        self.kfd.dbg_trap_ioctl(&mut args, DbgTrapData::None)?;
        Ok(args.op_args.set_node_address_watch().id)
    }

    /// `CLEAR_NODE_ADDRESS_WATCH`.
    ///
    /// # Errors
    /// [`Error::InvalidNode`]; [`Error::Ioctl`] (`EINVAL` for a watch id not held).
    pub fn clear_address_watch(&self, node: u32, id: u32) -> Result<(), Error> {
        let w = kfd_ioctl_dbg_trap_clear_node_address_watch_args {
            gpu_id: self.kfd.gpu_id_of(node)?,
            id,
        };
        self.call(KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH, w.into())
    }

    /// `SET_FLAGS`; returns the flags set before.
    ///
    /// # Errors
    /// [`Error::Ioctl`] (`EACCES` when a GPU lacks the capability a flag needs; nothing
    /// changes).
    pub fn set_flags(&self, flags: DebugFlags) -> Result<DebugFlags, Error> {
        let f = kfd_ioctl_dbg_trap_set_flags_args { flags: flags.0, pad: 0 };
        let mut args = self.args(KFD_IOC_DBG_TRAP_SET_FLAGS, f.into());
        self.kfd.dbg_trap_ioctl(&mut args, DbgTrapData::None)?;
        Ok(DebugFlags(args.op_args.set_flags().flags))
    }

    /// `QUERY_DEBUG_EVENT`: the next queue, device or process with a raised exception the
    /// session subscribed to (`None`: nothing pending — the kernel's `EAGAIN`); the exceptions
    /// of `clear` are cleared on it.
    ///
    /// # Errors
    /// [`Error::Ioctl`].
    pub fn query_debug_event(&self, clear: ExceptionMask) -> Result<Option<DebugEvent>, Error> {
        let q = kfd_ioctl_dbg_trap_query_debug_event_args {
            exception_mask: clear.0,
            gpu_id: 0,
            queue_id: 0,
        };
        let mut args = self.args(KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, q.into());
        match self.kfd.dbg_trap_ioctl(&mut args, DbgTrapData::None) {
            Ok(_) => Ok(Some(DebugEvent::from_kernel(&args.op_args.query_debug_event()))),
            Err(Error::Ioctl { errno: Errno::EAGAIN, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `QUERY_EXCEPTION_INFO`: copies what the kernel saved for exception `code` at
    /// `source_id` (a queue id, a gpu_id, or 0 for the process) into `info` — the memory
    /// fault (`kfd_hsa_memory_exception_data`) of `EC_DEVICE_MEMORY_VIOLATION`, the runtime
    /// info of `EC_PROCESS_RUNTIME` — and returns its full size; `clear` clears the exception.
    ///
    /// # Errors
    /// [`Error::Ioctl`]: `ENODATA` (not raised there), `EINVAL` (unknown source), generic.
    pub fn query_exception_info(
        &self,
        code: ExceptionCode,
        source_id: u32,
        clear: bool,
        info: &mut [u8],
    ) -> Result<u32, Error> {
        let q = kfd_ioctl_dbg_trap_query_exception_info_args {
            info_ptr: 0,
            info_size: 0,
            source_id,
            exception_code: code.code(),
            clear_exception: u32::from(clear),
        };
        let mut args = self.args(KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO, q.into());
        self.kfd.dbg_trap_ioctl(&mut args, DbgTrapData::ExceptionInfo(info))?;
        Ok(args.op_args.query_exception_info().info_size)
    }

    /// `GET_QUEUE_SNAPSHOT`: fills `out` with as many queues as fit, clearing `clear` from
    /// each one reported; returns how many queues the process has.
    ///
    /// # Errors
    /// [`Error::Ioctl`].
    pub fn queue_snapshot(
        &self,
        clear: ExceptionMask,
        out: &mut [kfd_queue_snapshot_entry],
    ) -> Result<u32, Error> {
        let q = kfd_ioctl_dbg_trap_queue_snapshot_args {
            exception_mask: clear.0,
            ..Default::default()
        };
        let mut args = self.args(KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, q.into());
        self.kfd.dbg_trap_ioctl(&mut args, DbgTrapData::QueueSnapshot(out))?;
        Ok(args.op_args.queue_snapshot().num_queues)
    }

    /// `GET_DEVICE_SNAPSHOT`: fills `out` with as many of the process's GPUs as fit, clearing
    /// `clear` from each one reported; returns how many GPUs there are.
    ///
    /// # Errors
    /// [`Error::Ioctl`].
    pub fn device_snapshot(
        &self,
        clear: ExceptionMask,
        out: &mut [kfd_dbg_device_info_entry],
    ) -> Result<u32, Error> {
        let d = kfd_ioctl_dbg_trap_device_snapshot_args {
            exception_mask: clear.0,
            ..Default::default()
        };
        let mut args = self.args(KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, d.into());
        self.kfd.dbg_trap_ioctl(&mut args, DbgTrapData::DeviceSnapshot(out))?;
        Ok(args.op_args.device_snapshot().num_devices)
    }
}
