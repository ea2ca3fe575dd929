//! CPU events of the host driver: auto- and manual-reset events with waits for any or all of
//! a set, under one mutex and condition variable (a wait for all takes every event at once).

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use hsakmt_core::driver::{DriverError, EventId, Waited};

use crate::gpu::time_left;

/// Most events a host driver keeps.
pub const MAX_HOST_EVENTS: usize = 4096;

#[derive(Debug, Clone, Copy)]
struct Event {
    manual_reset: bool,
    signaled: bool,
}

#[derive(Debug, Default)]
struct Table {
    next: u64,
    events: HashMap<u64, Event>,
}

/// The event table.
#[derive(Debug, Default)]
pub(crate) struct Events {
    table: Mutex<Table>,
    cv: Condvar,
}

/// When a wait of `timeout_ns` (`u64::MAX`: forever) started now ends.
pub(crate) fn deadline(timeout_ns: u64) -> Option<Instant> {
    if timeout_ns == u64::MAX {
        return None;
    }
    // A timeout too long to represent is forever.
    Instant::now().checked_add(Duration::from_nanos(timeout_ns))
}

impl Events {
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Creates an event.
    pub(crate) fn create(
        &self,
        manual_reset: bool,
        signaled: bool,
    ) -> Result<EventId, DriverError> {
        let mut t = self.lock();
        if t.events.len() >= MAX_HOST_EVENTS {
            return Err(DriverError::CapacityExhausted("event"));
        }
        t.next += 1;
        let id = t.next;
        t.events.insert(id, Event { manual_reset, signaled });
        Ok(EventId(id))
    }

    /// Destroys an event; its waiters fail with [`DriverError::InvalidHandle`].
    pub(crate) fn destroy(&self, id: EventId) -> Result<(), DriverError> {
        self.lock().events.remove(&id.0).ok_or(DriverError::InvalidHandle)?;
        self.cv.notify_all();
        Ok(())
    }

    /// Destroys every event.
    pub(crate) fn clear(&self) {
        self.lock().events.clear();
        self.cv.notify_all();
    }

    fn update(&self, id: EventId, signaled: bool) -> Result<(), DriverError> {
        self.lock().events.get_mut(&id.0).ok_or(DriverError::InvalidHandle)?.signaled = signaled;
        if signaled {
            self.cv.notify_all();
        }
        Ok(())
    }

    /// Signals an event.
    pub(crate) fn set(&self, id: EventId) -> Result<(), DriverError> {
        self.update(id, true)
    }

    /// Resets an event.
    pub(crate) fn reset(&self, id: EventId) -> Result<(), DriverError> {
        self.update(id, false)
    }

    /// Waits until any (or all) of `ids` are signaled, consuming the signal of auto-reset
    /// events that satisfied the wait. [`Waited::Done`] carries the index of the first
    /// signaled event (0 for a wait for all).
    pub(crate) fn wait(
        &self,
        ids: &[EventId],
        all: bool,
        timeout_ns: u64,
    ) -> Result<Waited, DriverError> {
        if ids.is_empty() || ids.len() > MAX_HOST_EVENTS {
            return Err(DriverError::InvalidArgument("event count"));
        }
        let deadline = deadline(timeout_ns);
        let mut t = self.lock();
        loop {
            let mut first = None;
            let mut every = true;
            for (i, id) in ids.iter().enumerate() {
                let e = t.events.get(&id.0).ok_or(DriverError::InvalidHandle)?;
                if e.signaled {
                    first.get_or_insert(i);
                } else {
                    every = false;
                }
            }
            let fired: Option<&[EventId]> = match (all, first) {
                (true, _) if every => Some(ids),
                (false, Some(i)) => ids.get(i..=i),
                _ => None,
            };
            if let Some(fired) = fired {
                for id in fired {
                    if let Some(e) = t.events.get_mut(&id.0).filter(|e| !e.manual_reset) {
                        e.signaled = false;
                    }
                }
                let index = if all { 0 } else { first.unwrap_or(0) };
                return Ok(Waited::Done(i64::try_from(index).unwrap_or(0)));
            }
            let Some(left) = time_left(deadline) else { return Ok(Waited::TimedOut) };
            t = self.cv.wait_timeout(t, left).unwrap_or_else(PoisonError::into_inner).0;
        }
    }
}
