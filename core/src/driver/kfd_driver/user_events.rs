//! Events the driver's user creates (manual or auto reset, waits for any or all), kept in a
//! bounded list so the driver destroys them at shutdown.

use crate::device::{EventDescriptor, Kfd, MemoryStorage};
use crate::driver::{DriverError, EventId, KfdDriver, Waited};
use crate::event::{EventHandle, WaitResult};
use crate::platform::Platform;

use super::timeout;

impl<P: Platform, S: MemoryStorage<P::Mapping>> KfdDriver<P, S>
where
    Kfd<P, S>: Send + Sync,
{
    /// Creates a signal event ([`Driver::create_event`]).
    pub(super) fn create_user_event(
        &self,
        manual_reset: bool,
        signaled: bool,
    ) -> Result<EventId, DriverError> {
        let mut desc = EventDescriptor::signal();
        if manual_reset {
            desc = desc.manual();
        }
        desc.signaled = signaled;
        let h = self.kfd.create_event(&desc)?;
        let mut st = self.state.write();
        if st.events.push(h).is_err() {
            drop(st);
            let _ = self.kfd.destroy_event(h);
            return Err(DriverError::CapacityExhausted("event"));
        }
        Ok(EventId(h.to_raw()))
    }

    /// Destroys `event` ([`Driver::destroy_event`]).
    pub(super) fn destroy_user_event(&self, event: EventId) -> Result<(), DriverError> {
        let h = EventHandle::from_raw(event.0).ok_or(DriverError::InvalidHandle)?;
        {
            let mut st = self.state.write();
            let i = st.events.iter().position(|e| *e == h).ok_or(DriverError::InvalidHandle)?;
            st.events.swap_remove(i);
        }
        Ok(self.kfd.destroy_event(h)?)
    }

    /// Waits for any or all of `events` ([`Driver::wait_events`]).
    pub(super) fn wait_user_events(
        &self,
        events: &[EventId],
        all: bool,
        timeout_ns: u64,
    ) -> Result<Waited, DriverError> {
        let mut set = crate::event::WaitSet::<{ crate::event::MAX_WAIT_EVENTS }>::new();
        for e in events {
            let h = EventHandle::from_raw(e.0).ok_or(DriverError::InvalidHandle)?;
            set.push(h).map_err(|_| DriverError::InvalidArgument("too many events"))?;
        }
        let mode = if all { crate::event::WaitMode::All } else { crate::event::WaitMode::Any };
        match self.kfd.wait_events(&mut set, mode, timeout(timeout_ns))? {
            WaitResult::Complete => {
                let first = (0..events.len())
                    .find(|i| set.fired(*i) == crate::event::Fired::Yes)
                    .unwrap_or(0);
                Ok(Waited::Done(i64::try_from(first).unwrap_or(0)))
            }
            WaitResult::TimedOut => Ok(Waited::TimedOut),
        }
    }
}
