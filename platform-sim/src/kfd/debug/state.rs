//! The per-process debug state of the emulated amdkfd and how exceptions are raised into it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use hsakmt_core::event::{FaultFlags, MemoryError, MemoryFault};
use hsakmt_core::uapi::{
    DEBUG_RUNTIME_STATE_DISABLED, EC_DEVICE_MEMORY_VIOLATION, EC_QUEUE_WAVE_MEMORY_VIOLATION,
    EC_QUEUE_WAVE_TRAP, KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH, KFD_EC_MASK, KFD_EC_MASK_DEVICE,
    KFD_EC_MASK_PROCESS, UapiType, kfd_hsa_memory_exception_data, kfd_runtime_info,
};

use crate::gpu::watch::{WatchAccess, WatchPoint, first_hit};
use crate::kfd::files::{File, Files};
use crate::kfd::lock;

/// Address watch points per device (`MAX_WATCH_ADDRESSES`).
pub(crate) const MAX_WATCH_ADDRESSES: u32 = 4;

/// One address watch point (`SET_NODE_ADDRESS_WATCH`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Watch {
    pub(crate) address: u64,
    pub(crate) mask: u32,
    pub(crate) mode: u32,
}

/// What `kfd_process` holds for the debugger and the runtime.
#[derive(Debug)]
pub(crate) struct DebugState {
    /// `runtime_info`: `r_debug`, the runtime state, whether trap temporaries are set up.
    pub(crate) runtime: kfd_runtime_info,
    /// `runtime_enable_sema`: ups not yet consumed by a runtime enable or disable.
    pub(crate) runtime_sema: u32,
    /// `debug_trap_enabled`.
    pub(crate) enabled: bool,
    /// The descriptor the kernel writes `'.'` into for subscribed exceptions (`dbg_ev_file`).
    pub(crate) notify_fd: Option<u32>,
    /// When that descriptor is the process's own (a FIFO or pipe the debugger made, not one of
    /// the simulator's files): a second open of it, written instead.
    pub(crate) notify_file: Option<std::fs::File>,
    /// `exception_enable_mask`: exceptions raised to the debugger.
    pub(crate) exception_enable_mask: u64,
    /// Raised process exceptions.
    pub(crate) process_status: u64,
    /// Raised device exceptions, per gpu_id.
    pub(crate) device_status: BTreeMap<u32, u64>,
    /// Memory-violation data saved for the debugger, per gpu_id (`vm_fault_exc_data`).
    pub(crate) vm_fault_data: BTreeMap<u32, Vec<u8>>,
    /// Raised queue exceptions, per queue id.
    pub(crate) queue_status: BTreeMap<u32, u64>,
    /// `dbg_flags` (`KFD_DBG_TRAP_FLAG_*`).
    pub(crate) flags: u32,
    /// The wave launch mode last set.
    pub(crate) launch_mode: u32,
    /// The trap override mode and mask last set.
    pub(crate) trap_override: (u32, u32),
    /// Watch points this process holds, by (gpu_id, id).
    pub(crate) watches: BTreeMap<(u32, u32), Watch>,
    /// Queues whose destruction waits for a resume (`is_being_destroyed`).
    pub(crate) being_destroyed: BTreeSet<u32>,
}

impl DebugState {
    fn new() -> Self {
        DebugState {
            runtime: kfd_runtime_info {
                r_debug: 0,
                runtime_state: DEBUG_RUNTIME_STATE_DISABLED,
                ttmp_setup: 0,
            },
            runtime_sema: 0,
            enabled: false,
            notify_fd: None,
            notify_file: None,
            exception_enable_mask: 0,
            process_status: 0,
            device_status: BTreeMap::new(),
            vm_fault_data: BTreeMap::new(),
            queue_status: BTreeMap::new(),
            flags: 0,
            launch_mode: 0,
            trap_override: (0, 0),
            watches: BTreeMap::new(),
            being_destroyed: BTreeSet::new(),
        }
    }

    /// Every raised exception of the process, its devices and queues.
    pub(crate) fn all_raised(&self) -> u64 {
        self.process_status
            | self.device_status.values().fold(0, |m, s| m | s)
            | self.queue_status.values().fold(0, |m, s| m | s)
    }

    /// The watch points of GPU `gpu_id` that trap a wave: a session is on and the trap mask
    /// enables address watches (`SET_WAVE_LAUNCH_OVERRIDE`); none otherwise.
    pub(crate) fn armed_watches(&self, gpu_id: u32) -> Vec<WatchPoint> {
        let armed = self.enabled && self.trap_override.1 & KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH != 0;
        if !armed {
            return Vec::new();
        }
        self.watches
            .iter()
            .filter(|((g, _), _)| *g == gpu_id)
            .map(|(&(_, id), w)| WatchPoint { id, address: w.address, mask: w.mask, mode: w.mode })
            .collect()
    }
}

/// Where an exception is raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The process.
    Process,
    /// A device.
    Device(u32),
    /// A queue (its id).
    Queue(u32),
}

/// The debug state behind its lock, with the condition variable the runtime-enable rendezvous
/// and the destruction of suspended queues wait on.
#[derive(Debug)]
pub(crate) struct Debugger {
    state: Mutex<DebugState>,
    changed: Condvar,
}

impl Debugger {
    pub(crate) fn new() -> Self {
        Debugger { state: Mutex::new(DebugState::new()), changed: Condvar::new() }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, DebugState> {
        lock(&self.state)
    }

    /// Wakes every waiter (an up of the runtime semaphore, a resumed queue).
    pub(crate) fn notify(&self) {
        self.changed.notify_all();
    }

    /// Waits until `done` holds, re-checking at each notification (and every 50 ms).
    pub(crate) fn wait_until<'a>(
        &self,
        mut guard: MutexGuard<'a, DebugState>,
        mut done: impl FnMut(&mut DebugState) -> bool,
    ) -> MutexGuard<'a, DebugState> {
        while !done(&mut guard) {
            guard = self
                .changed
                .wait_timeout(guard, Duration::from_millis(50))
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        guard
    }

    /// Forgets everything (the process's KFD state ended).
    pub(crate) fn reset(&self) {
        *self.lock() = DebugState::new();
        self.notify();
    }

    /// `kfd_dbg_ev_raise`: records `mask` at `source` (device and process exceptions at their
    /// level, the rest at the queue) while a debug session is on, and writes one `'.'` into the
    /// notification descriptor when the debugger subscribed to any of it. Returns whether it did
    /// (the exception then goes to the debugger instead of the runtime).
    pub(crate) fn raise(&self, files: &Files, mask: u64, source: Source) -> bool {
        let mut s = self.lock();
        raise_locked(&mut s, files, mask, source)
    }

    /// A queue fault from the command processor: raised to the debugger at the queue (and for
    /// memory violations at the device, the fault's data saved once per device). Returns
    /// whether the debugger subscribed to it, in which case the runtime is not told
    /// (`kfd_set_dbg_ev_from_interrupt`).
    pub(crate) fn queue_fault(
        &self,
        files: &Files,
        queue_id: u32,
        gpu_id: u32,
        exception: u32,
        address: Option<u64>,
    ) -> bool {
        let mut s = self.lock();
        if !s.enabled {
            return false;
        }
        let mut taken =
            raise_locked(&mut s, files, KFD_EC_MASK(exception), Source::Queue(queue_id));
        if exception == EC_QUEUE_WAVE_MEMORY_VIOLATION {
            s.vm_fault_data.entry(gpu_id).or_insert_with(|| {
                let fault = MemoryFault {
                    gpu_id,
                    node: None,
                    address: address.unwrap_or(0),
                    flags: FaultFlags::NOT_PRESENT,
                    error: MemoryError::None,
                    fatal: true,
                };
                let mut b = vec![0u8; size_of::<kfd_hsa_memory_exception_data>()];
                fault.to_kernel().write_to(&mut b);
                b
            });
            let mask = KFD_EC_MASK(EC_DEVICE_MEMORY_VIOLATION);
            taken |= raise_locked(&mut s, files, mask, Source::Device(gpu_id));
        }
        taken
    }

    /// [`DebugState::armed_watches`] under the lock.
    pub(crate) fn armed_watches(&self, gpu_id: u32) -> Vec<WatchPoint> {
        self.lock().armed_watches(gpu_id)
    }

    /// A wave of queue `queue_id` touched memory an armed watch covers: the wave traps into
    /// the debugger's trap handler, which reports `EC_QUEUE_WAVE_TRAP` on the queue.
    pub(crate) fn watch_hit(&self, files: &Files, queue_id: u32) {
        let mut s = self.lock();
        raise_locked(&mut s, files, KFD_EC_MASK(EC_QUEUE_WAVE_TRAP), Source::Queue(queue_id));
    }

    /// An access of `len` bytes at `address` by queue `queue_id` on GPU `gpu_id`, checked
    /// against the armed watches as the interpreter checks its own ([`Debugger::watch_hit`]
    /// on a hit). Returns the watch id hit.
    pub(crate) fn watch_access(
        &self,
        files: &Files,
        gpu_id: u32,
        queue_id: u32,
        access: (u64, u64, WatchAccess),
    ) -> Option<u32> {
        let (address, len, kind) = access;
        let id = first_hit(&self.armed_watches(gpu_id), address, len, kind)?;
        self.watch_hit(files, queue_id);
        Some(id)
    }
}

/// [`Debugger::raise`] with the state already locked.
pub(crate) fn raise_locked(s: &mut DebugState, files: &Files, mask: u64, source: Source) -> bool {
    if !s.enabled {
        return false;
    }
    if mask & KFD_EC_MASK_DEVICE != 0 {
        if let Source::Device(gpu) = source {
            *s.device_status.entry(gpu).or_default() |= mask & KFD_EC_MASK_DEVICE;
        }
    } else if mask & KFD_EC_MASK_PROCESS != 0 {
        s.process_status |= mask & KFD_EC_MASK_PROCESS;
    } else if let Source::Queue(q) = source {
        *s.queue_status.entry(q).or_default() |= mask;
    }
    if s.exception_enable_mask & mask == 0 {
        return false;
    }
    notify(s, files);
    true
}

/// Writes the one-byte notification (a full or closed descriptor loses it, as the kernel's
/// write does).
pub(crate) fn notify(s: &DebugState, files: &Files) {
    if let Some(mut file) = s.notify_file.as_ref() {
        let _ = std::io::Write::write(&mut file, b".");
        return;
    }
    if let Some(fd) = s.notify_fd
        && let Some(File::PipeWrite(_)) = files.get(fd)
    {
        let _ = files.write(fd, b".");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsakmt_core::uapi::{
        EC_DEVICE_MEMORY_VIOLATION, EC_PROCESS_RUNTIME, EC_QUEUE_NEW, EC_QUEUE_WAVE_ABORT,
    };

    #[test]
    fn raised_exceptions_land_at_their_level_and_notify_when_subscribed() {
        let files = Files::default();
        let (r, w) = files.pipe();
        let d = Debugger::new();
        // No session: nothing is recorded.
        assert!(!d.raise(&files, KFD_EC_MASK(EC_QUEUE_NEW), Source::Queue(3)));
        {
            let mut s = d.lock();
            s.enabled = true;
            s.notify_fd = Some(w);
            s.exception_enable_mask = KFD_EC_MASK(EC_QUEUE_WAVE_ABORT);
        }
        // Recorded but not subscribed: no notification.
        assert!(!d.raise(&files, KFD_EC_MASK(EC_QUEUE_NEW), Source::Queue(3)));
        assert!(d.raise(&files, KFD_EC_MASK(EC_QUEUE_WAVE_ABORT), Source::Queue(3)));
        assert!(!d.raise(&files, KFD_EC_MASK(EC_DEVICE_MEMORY_VIOLATION), Source::Device(9)));
        assert!(!d.raise(&files, KFD_EC_MASK(EC_PROCESS_RUNTIME), Source::Process));
        let s = d.lock();
        assert_eq!(
            s.queue_status.get(&3),
            Some(&(KFD_EC_MASK(EC_QUEUE_NEW) | KFD_EC_MASK(EC_QUEUE_WAVE_ABORT)))
        );
        assert_eq!(s.device_status.get(&9), Some(&KFD_EC_MASK(EC_DEVICE_MEMORY_VIOLATION)));
        assert_eq!(s.process_status, KFD_EC_MASK(EC_PROCESS_RUNTIME));
        let mut buf = [0u8; 8];
        assert_eq!(files.read(r, &mut buf), Ok(1));
        assert_eq!(buf[0], b'.');
    }

    #[test]
    fn watches_are_armed_by_a_session_with_address_watch_traps() {
        let mut s = DebugState::new();
        s.watches.insert((5, 1), Watch { address: 0x1000, mask: 0xFFFF_FFC0, mode: 3 });
        s.watches.insert((6, 0), Watch { address: 0x2000, mask: 0xFFFF_FFC0, mode: 3 });
        assert!(s.armed_watches(5).is_empty(), "no session");
        s.enabled = true;
        assert!(s.armed_watches(5).is_empty(), "address watch traps disabled");
        s.trap_override = (0, KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH);
        let armed = s.armed_watches(5);
        assert_eq!(armed, [WatchPoint { id: 1, address: 0x1000, mask: 0xFFFF_FFC0, mode: 3 }]);
    }
}
