//! Waiting for a condition on a signal value with an event attached, and storing a value that
//! wakes sleepers only when there are any (see "Signal waits" in the [module docs](super)).

use core::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering, fence};

use crate::device::{Error, Kfd, MemoryStorage, NO_AGE_SLICE_MS};
use crate::event::{
    EventHandle, INITIAL_AGE, Timeout, WaitMode, WaitResult, {self},
};
use crate::platform::{Platform, SharedMemory};
use crate::uapi::{kfd_event_data, kfd_hsa_signal_event_data};

use super::kernel_wait::ceil_ms;

/// A condition on a signal value (HSA's `hsa_signal_condition_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SignalCondition {
    /// `value == x`
    Eq(i64),
    /// `value != x`
    Ne(i64),
    /// `value < x`
    Lt(i64),
    /// `value >= x`
    Gte(i64),
}

impl SignalCondition {
    /// Whether `value` satisfies the condition.
    #[must_use]
    pub const fn holds(self, value: i64) -> bool {
        match self {
            Self::Eq(x) => value == x,
            Self::Ne(x) => value != x,
            Self::Lt(x) => value < x,
            Self::Gte(x) => value >= x,
        }
    }
}

/// A 64-bit signal value in memory the CPU and GPU share, as [`Kfd::wait_signal`] and
/// [`Kfd::store_signal`] use it: an HSA signal ([`crate::queue::signal::Signal`]) or a bare atomic.
pub trait SignalValue {
    /// Loads the value with acquire ordering.
    fn load_acquire(&self) -> i64;
    /// Stores a value with release ordering.
    fn store_release(&self, value: i64);
}

impl SignalValue for AtomicU64 {
    fn load_acquire(&self) -> i64 {
        self.load(Ordering::Acquire) as i64
    }
    fn store_release(&self, value: i64) {
        self.store(value as u64, Ordering::Release);
    }
}

impl SignalValue for AtomicI64 {
    fn load_acquire(&self) -> i64 {
        self.load(Ordering::Acquire)
    }
    fn store_release(&self, value: i64) {
        self.store(value, Ordering::Release);
    }
}

impl<M: SharedMemory> SignalValue for crate::queue::signal::Signal<'_, M> {
    fn load_acquire(&self) -> i64 {
        crate::queue::signal::Signal::load_acquire(self)
    }
    fn store_release(&self, value: i64) {
        crate::queue::signal::Signal::store_release(self, value);
    }
}

/// How a [`Kfd::wait_signal`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SignalWaited {
    /// The last value read.
    pub value: i64,
    /// Whether the condition held ([`WaitResult::Complete`]) or the timeout expired.
    pub result: WaitResult,
    /// Kernel waits issued (0: the spin phase sufficed).
    pub kernel_waits: u32,
}

/// Decrements a sleeper count when a signal waiter leaves, however it leaves.
struct Sleeping<'a>(&'a AtomicU32);

impl Drop for Sleeping<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// Waits until `condition` holds for the signal value `value`, which `event` (a signal event)
    /// is raised for: spins for up to `spin_ns` (see
    /// [`DEFAULT_SPIN_NS`](crate::device::DEFAULT_SPIN_NS)), then blocks in the kernel with the
    /// event age (see the module docs for the protocol). The timeout covers both phases.
    ///
    /// # Errors
    /// [`event::Error::InvalidHandle`], [`event::Error::NotCpuSettable`] for a non-signal
    /// event, [`Error::Ioctl`] for `WAIT_EVENTS`, [`event::Error::Destroyed`].
    pub fn wait_signal(
        &self,
        handle: EventHandle,
        value: &(impl SignalValue + ?Sized),
        condition: SignalCondition,
        timeout: Timeout,
        spin_ns: u64,
    ) -> Result<SignalWaited, Error> {
        let done =
            |v, kernel_waits| SignalWaited { value: v, result: WaitResult::Complete, kernel_waits };
        let v = value.load_acquire();
        if condition.holds(v) {
            return Ok(done(v, 0));
        }
        self.check_open()?;
        let r = self.record(handle)?;
        if !r.event_type.is_cpu_settable() {
            return Err(event::Error::NotCpuSettable(r.event_type).into());
        }
        let start = self.platform.now_ns();
        let deadline = timeout.as_nanos().map(|ns| start.saturating_add(ns));
        let spin_end = start
            .saturating_add(deadline.map_or(spin_ns, |d| spin_ns.min(d.saturating_sub(start))));
        // The clock is read before the first pause, so a wait that must not spin (`spin_ns`
        // 0) blocks at once: 64 `pause`s cost microseconds on recent x86 (about 140 cycles
        // each since Skylake), where a clock read through the vDSO costs tens of nanoseconds.
        let mut n: u32 = 0;
        loop {
            let v = value.load_acquire();
            if condition.holds(v) {
                return Ok(done(v, 0));
            }
            if n.is_multiple_of(64) && self.platform.now_ns() >= spin_end {
                break;
            }
            n = n.wrapping_add(1);
            core::hint::spin_loop();
        }

        let ages = self.ages();
        let mut age = if ages { r.age.max(INITIAL_AGE) } else { 0 };
        let count =
            self.events().sleepers.get(handle.index()).ok_or(event::Error::InvalidHandle)?;
        count.fetch_add(1, Ordering::SeqCst);
        let _sleeping = Sleeping(count);
        // Pairs with the fence in `wake_signal_waiters`: the count is visible to a setter, or
        // its value is visible to the load below.
        fence(Ordering::SeqCst);
        let mut kernel_waits = 0;
        loop {
            let v = value.load_acquire();
            if condition.holds(v) {
                return Ok(done(v, kernel_waits));
            }
            let slice = match deadline {
                None => Timeout::Infinite,
                Some(d) => {
                    let now = self.platform.now_ns();
                    if now >= d {
                        return Ok(SignalWaited {
                            value: v,
                            result: WaitResult::TimedOut,
                            kernel_waits,
                        });
                    }
                    Timeout::Millis(ceil_ms(d.saturating_sub(now)))
                }
            };
            let slice = match (ages, slice) {
                (true, s) => s,
                (false, Timeout::Millis(ms)) => Timeout::Millis(ms.min(NO_AGE_SLICE_MS)),
                (false, _) => Timeout::Millis(NO_AGE_SLICE_MS),
            };
            let mut data = [kfd_event_data {
                event_id: r.id,
                data: kfd_hsa_signal_event_data { last_event_age: age }.into(),
                ..Default::default()
            }];
            kernel_waits = kernel_waits.saturating_add(1);
            if self.wait_kernel(&mut data, WaitMode::All, slice)? == WaitResult::Complete && ages {
                age = data.first().map_or(age, |d| d.data.signal_event_data().last_event_age);
                if let Ok(r) = self.events().table.lock().get_mut(handle) {
                    r.learn_age(age);
                }
            }
        }
    }

    /// Stores `new` into the signal value `value` and wakes the waiters [`Kfd::wait_signal`]
    /// put to sleep on `event` — with a `SET_EVENT` only if one sleeps. Returns whether it
    /// issued one. No lock, allocation or system call when nobody sleeps.
    ///
    /// # Errors
    /// [`event::Error::InvalidHandle`]; as [`Kfd::set_event`] when it sets the event.
    pub fn store_signal(
        &self,
        handle: EventHandle,
        value: &(impl SignalValue + ?Sized),
        new: i64,
    ) -> Result<bool, Error> {
        value.store_release(new);
        self.wake_signal_waiters(handle)
    }

    /// The waking half of [`Kfd::store_signal`], for callers that changed the value with their
    /// own atomic operation (an HSA `subtract`, `exchange`, …) just before.
    ///
    /// # Errors
    /// As [`Kfd::store_signal`].
    pub fn wake_signal_waiters(&self, handle: EventHandle) -> Result<bool, Error> {
        let index = handle.index();
        let live = self.events().generations.get(index).map(|g| g.load(Ordering::Acquire));
        if live != Some(handle.generation()) {
            return Err(event::Error::InvalidHandle.into());
        }
        // Pairs with the fence in `wait_signal` (see the module docs).
        fence(Ordering::SeqCst);
        let sleeping = self.events().sleepers.get(index).map_or(0, |s| s.load(Ordering::SeqCst));
        if sleeping == 0 {
            return Ok(false);
        }
        self.set_event(handle)?;
        Ok(true)
    }

    /// Signal waiters of `handle` blocked (or about to block) in the kernel.
    pub fn signal_sleepers(&self, handle: EventHandle) -> u32 {
        self.events().sleepers.get(handle.index()).map_or(0, |s| s.load(Ordering::SeqCst))
    }
}
