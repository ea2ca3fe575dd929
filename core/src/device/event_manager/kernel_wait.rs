//! Waiting for events in the kernel (`hsaKmtWaitOnEvent`, `hsaKmtWaitOnEvent_Ext`,
//! `hsaKmtWaitOnMultipleEvents`, `hsaKmtWaitOnMultipleEvents_Ext`): one or many, any or all,
//! timeouts and event ages, over the wait sets of [`crate::event`].

use crate::device::{Error, Kfd, MemoryStorage};
use crate::event::{
    EventHandle, Fired, Timeout, WaitMode, WaitResult, WaitSet, {self},
};
use crate::platform::{Ioctl, Platform};
use crate::topology::Topology;
use crate::uapi::{
    KFD_IOC_WAIT_RESULT_COMPLETE, KFD_IOC_WAIT_RESULT_FAIL, KFD_IOC_WAIT_RESULT_TIMEOUT,
    kfd_event_data, kfd_ioctl_wait_events_args, since,
};

/// libhsakmt's node id of the GPU with `gpu_id`.
fn node_of(topology: &Topology, gpu_id: u32) -> Option<u32> {
    topology.node_by_gpu_id(gpu_id).and_then(|n| n.node().user_id())
}

pub(super) fn ceil_ms(ns: u64) -> u32 {
    u32::try_from(ns.div_ceil(1_000_000)).unwrap_or(Timeout::KERNEL_INFINITE - 1)
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// Waits for one event (`hsaKmtWaitOnEvent`), without age tracking: an auto-reset event
    /// that satisfies the wait is unsignaled by it.
    ///
    /// # Errors
    /// As [`Kfd::wait_events`].
    pub fn wait_event(&self, handle: EventHandle, timeout: Timeout) -> Result<WaitResult, Error> {
        let mut set: WaitSet<1> = WaitSet::new();
        set.push(handle)?;
        self.wait_events(&mut set, WaitMode::All, timeout)
    }

    /// Waits for one signal event with its age (`hsaKmtWaitOnEvent_Ext`): returns at once if it
    /// fired after `*age`, and stores the current age in `*age` when the wait completes. Pass
    /// [`INITIAL_AGE`](crate::event::INITIAL_AGE) for a new event; 0 disables age tracking.
    ///
    /// # Errors
    /// [`event::Error::NoEventAge`] for a non-signal event with `*age != 0`, or on KFD < 1.14
    /// ([`Error::NotSupported`]); otherwise as [`Kfd::wait_events`].
    pub fn wait_event_with_age(
        &self,
        handle: EventHandle,
        age: &mut u64,
        timeout: Timeout,
    ) -> Result<WaitResult, Error> {
        if *age != 0 {
            self.check_open()?;
            self.require_minor("event age", since::EVENT_AGE)?;
        }
        let mut set: WaitSet<1> = WaitSet::new();
        set.push_with_age(handle, *age)?;
        let result = self.wait_events(&mut set, WaitMode::All, timeout)?;
        *age = set.age(0);
        Ok(result)
    }

    /// Waits for any or all events of `set` (`hsaKmtWaitOnMultipleEvents_Ext`); afterwards the
    /// set tells which fired, their ages and exception data, and the table learns the ages.
    /// Nothing is allocated: the kernel's array lives in the set.
    ///
    /// A timeout or a signal interrupting the kernel wait is handled here: an interrupted wait
    /// is issued again with the time that is left, measured on the platform clock.
    ///
    /// # Errors
    /// [`event::Error::EmptyWaitSet`], [`event::Error::InvalidHandle`] for a stale handle in
    /// the set, [`event::Error::NoEventAge`] for an age that cannot be tracked,
    /// [`event::Error::Destroyed`] when an event was destroyed during the wait,
    /// [`Error::Ioctl`] for `WAIT_EVENTS`. The table is unchanged on error.
    pub fn wait_events<const N: usize>(
        &self,
        set: &mut WaitSet<N>,
        mode: WaitMode,
        timeout: Timeout,
    ) -> Result<WaitResult, Error> {
        self.check_open()?;
        if set.is_empty() {
            return Err(event::Error::EmptyWaitSet.into());
        }
        let ages = self.ages();
        {
            let table = self.events().table.lock();
            for i in 0..set.len() {
                let h = set.handle(i).ok_or(event::Error::InvalidHandle)?;
                let r = table.get(h)?;
                set.bind(i, r.id, r.event_type, ages)?;
            }
        }
        let result = self.wait_kernel(set.kernel_mut(), mode, timeout)?;
        self.read_topology(|topology| set.finish(mode, result, |g| node_of(topology, g)));
        let mut table = self.events().table.lock();
        for i in 0..set.len() {
            let Some(r) = set.handle(i).and_then(|h| table.get_mut(h).ok()) else { continue };
            r.learn_age(set.age(i));
            if set.fired(i) == Fired::Yes {
                r.observed = r.observed.saturating_add(1);
            }
        }
        Ok(result)
    }

    /// One `WAIT_EVENTS`, re-issued with the remaining time when a signal interrupts it.
    pub(super) fn wait_kernel(
        &self,
        events: &mut [kfd_event_data],
        mode: WaitMode,
        timeout: Timeout,
    ) -> Result<WaitResult, Error> {
        let deadline = timeout.as_nanos().map(|ns| self.platform.now_ns().saturating_add(ns));
        let mut args = kfd_ioctl_wait_events_args {
            wait_for_all: u32::from(mode == WaitMode::All),
            timeout: timeout.to_kernel(),
            wait_result: u32::MAX,
            ..Default::default()
        };
        let mut tries = 0;
        loop {
            let mut request = Ioctl::WaitEvents { args: &mut args, events: &mut *events };
            match self.platform.ioctl(&mut request) {
                Ok(()) => break,
                Err(errno) if errno.is_retryable() && tries < crate::device::IOCTL_RETRIES => {
                    log_debug!("WAIT_EVENTS interrupted ({:?}), retrying", errno);
                    tries = tries.saturating_add(1);
                    if let Some(deadline) = deadline {
                        let left = deadline.saturating_sub(self.platform.now_ns());
                        args.timeout = ceil_ms(left);
                    }
                    args.wait_result = u32::MAX;
                }
                Err(_) if args.wait_result == KFD_IOC_WAIT_RESULT_FAIL => {
                    return Err(event::Error::Destroyed.into());
                }
                Err(errno) => return Err(self.ioctl_failure("WAIT_EVENTS", errno)),
            }
        }
        match args.wait_result {
            KFD_IOC_WAIT_RESULT_COMPLETE => Ok(WaitResult::Complete),
            KFD_IOC_WAIT_RESULT_TIMEOUT => Ok(WaitResult::TimedOut),
            KFD_IOC_WAIT_RESULT_FAIL => Err(event::Error::Destroyed.into()),
            _ => Err(event::Error::Unexpected.into()),
        }
    }
}
