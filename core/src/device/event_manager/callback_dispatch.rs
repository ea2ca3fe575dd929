//! The callback dispatcher: registering callbacks for an event or an event type, and
//! [`Kfd::poll`], which waits and calls them (the protocol of
//! [`CallbackRegistry`](crate::event::CallbackRegistry), with no lock held across a call).

use core::sync::atomic::Ordering;

use crate::config::DEFAULT_CALLBACK_CAPACITY;
use crate::device::{Error, Kfd, MemoryStorage};
use crate::event::{
    self, CallbackId, CallbackRegistry, EventHandle, Filter, Fired, MAX_WAIT_EVENTS, Notification,
    Timeout, Unregistered, WaitMode, WaitResult, WaitSet,
};
use crate::platform::Platform;

/// What one [`Kfd::poll`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Dispatched {
    /// Events the wait covered (callback targets, plus the wake event if any).
    pub watched: usize,
    /// Callback targets left out because a wait holds at most [`MAX_WAIT_EVENTS`] events.
    pub skipped: usize,
    /// Events whose callbacks ran.
    pub fired: usize,
    /// Callback calls made.
    pub calls: usize,
}

/// Settles a collected callback even if the callback panics.
struct CallGuard<'a> {
    registry: &'a spin::Mutex<CallbackRegistry<DEFAULT_CALLBACK_CAPACITY>>,
    id: CallbackId,
    called: bool,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        self.registry.lock().end_call(self.id, self.called);
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// Registers `callback` for `filter`; [`Kfd::poll`] (or a monitor thread calling it) runs
    /// it when a matching event fires. Wakes the dispatcher so it watches the new event.
    ///
    /// # Errors
    /// [`event::Error::RegistryFull`]; [`event::Error::InvalidHandle`] for a filter on a stale
    /// event.
    pub fn register_callback(
        &self,
        filter: Filter,
        callback: event::Callback,
    ) -> Result<CallbackId, Error> {
        if let Filter::Event(h) = filter {
            self.record(h)?;
        }
        let id = self.events().callbacks.lock().register(filter, callback)?;
        self.wake_dispatcher();
        Ok(id)
    }

    /// Unregisters a callback. Safe while a dispatch runs, also from inside the callback: no
    /// call starts after this returns; [`Unregistered::Running`] says one that started earlier
    /// may still be running.
    ///
    /// # Errors
    /// [`event::Error::InvalidCallback`].
    pub fn unregister_callback(&self, id: CallbackId) -> Result<Unregistered, Error> {
        let r = self.events().callbacks.lock().unregister(id)?;
        self.wake_dispatcher();
        Ok(r)
    }

    /// Whether a call of callback `id` is running now.
    pub fn callback_running(&self, id: CallbackId) -> bool {
        self.events().callbacks.lock().is_running(id)
    }

    /// Names a signal event that registration changes (and [`Kfd::wake_dispatcher`]) set, so a
    /// thread blocked in [`Kfd::poll`] rebuilds its wait; `poll` always waits on it too and
    /// never reports it.
    pub fn set_dispatch_wake(&self, event: Option<EventHandle>) {
        self.events().wake.store(event.map_or(0, EventHandle::to_raw), Ordering::Release);
    }

    /// Sets the dispatcher's wake event, if any (errors are ignored: the dispatcher then picks
    /// changes up at its next wait).
    pub fn wake_dispatcher(&self) {
        if let Some(h) = EventHandle::from_raw(self.events().wake.load(Ordering::Acquire)) {
            let _ = self.set_event(h);
        }
    }

    /// The callback dispatcher for single-threaded loops (and the body of a monitor thread):
    /// waits up to `timeout` for any event a callback is registered for (by handle, or by type:
    /// every such event in the table, up to [`MAX_WAIT_EVENTS`]) and runs the callbacks of the
    /// events that fired, with no lock held. Signal events are watched with the dispatcher's own
    /// ages, so a firing is reported once even if other threads wait on the event too; events
    /// the kernel reports without age or data are reported with
    /// [`Notification::certain`] = `false`.
    ///
    /// # Errors
    /// As [`Kfd::wait_events`].
    pub fn poll(&self, timeout: Timeout) -> Result<Dispatched, Error> {
        self.check_open()?;
        let ages = self.ages();
        let wake = EventHandle::from_raw(self.events().wake.load(Ordering::Acquire));
        let mut filters = [None; DEFAULT_CALLBACK_CAPACITY];
        for (slot, f) in filters.iter_mut().zip(self.events().callbacks.lock().filters()) {
            *slot = Some(f);
        }
        let mut set: WaitSet<MAX_WAIT_EVENTS> = WaitSet::new();
        let mut out = Dispatched::default();
        {
            let table = self.events().table.lock();
            if let Some(w) = wake.filter(|w| table.get(*w).is_ok()) {
                let _ = set.push(w);
            }
            for (h, r) in table.iter() {
                if Some(h) == wake || !filters.iter().flatten().any(|f| f.matches(h, r.event_type))
                {
                    continue;
                }
                let age = if ages && r.event_type.has_age() { r.dispatch_age } else { 0 };
                if set.push_with_age(h, age).is_err() {
                    out.skipped = out.skipped.saturating_add(1);
                }
            }
        }
        out.watched = set.len();
        if set.is_empty()
            || self.wait_events(&mut set, WaitMode::Any, timeout)? == WaitResult::TimedOut
        {
            return Ok(out);
        }
        for i in 0..set.len() {
            let (Some(h), fired) = (set.handle(i), set.fired(i)) else { continue };
            if Some(h) == wake || fired == Fired::No {
                continue;
            }
            let note = {
                let mut table = self.events().table.lock();
                let Ok(r) = table.get_mut(h) else { continue };
                if r.dispatch_age != 0 {
                    r.dispatch_age = r.dispatch_age.max(set.age(i));
                }
                Notification {
                    event: h,
                    event_type: r.event_type,
                    event_id: r.id,
                    age: set.age(i),
                    data: set.data(i),
                    certain: fired == Fired::Yes,
                }
            };
            out.fired = out.fired.saturating_add(1);
            out.calls = out.calls.saturating_add(self.dispatch(&note));
        }
        Ok(out)
    }

    /// Runs the callbacks for one notification; returns how many ran.
    pub(super) fn dispatch(&self, note: &Notification) -> usize {
        let mut ids = [CallbackId::NONE; DEFAULT_CALLBACK_CAPACITY];
        let n = self.events().callbacks.lock().collect(note.event, note.event_type, &mut ids);
        let mut calls = 0usize;
        for id in ids.iter().take(n).copied() {
            let mut guard = CallGuard { registry: &self.events().callbacks, id, called: false };
            let callback = self.events().callbacks.lock().begin_call(id);
            if let Some(callback) = callback {
                guard.called = true;
                callback(note);
                calls = calls.saturating_add(1);
            }
        }
        calls
    }
}
