//! Creating and destroying events (`hsaKmtCreateEvent`, `hsaKmtDestroyEvent`), and destroying
//! every event at the last close.

use core::sync::atomic::Ordering;

use crate::config::EVENT_TEARDOWN_BATCH;
use crate::device::{Error, EventDescriptor, Kfd, MemoryStorage};
use crate::event::{self, EVENT_SLOTS, EventHandle, EventRecord, INITIAL_AGE, ResetMode};
use crate::platform::{Ioctl, Platform};
use crate::uapi::{
    kfd_ioctl_create_event_args, kfd_ioctl_destroy_event_args, kfd_ioctl_set_event_args,
};

use super::event_page::{EventPage, PAGE_ABSENT};
use crate::topology::Topology;

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// Creates an event (`hsaKmtCreateEvent`). The first signal or debug event also sets up
    /// the event page (see the module docs).
    ///
    /// # Errors
    /// [`Error::Event`] with [`event::Error::TableFull`] (checked before the kernel is asked) or
    /// [`event::Error::NotCpuSettable`] for a signaled non-signal event; [`Error::Ioctl`] for
    /// `CREATE_EVENT` (`ENOSPC`: 4095 signal events exist), for mapping the page, or for the
    /// initial `SET_EVENT`. On error nothing is left behind.
    pub fn create_event(&self, desc: &EventDescriptor) -> Result<EventHandle, Error> {
        self.check_open()?;
        if desc.signaled && !desc.event_type.is_cpu_settable() {
            return Err(event::Error::NotCpuSettable(desc.event_type).into());
        }
        let handle = self.events().table.lock().reserve()?;
        match self.create_reserved(desc) {
            Ok(record) => {
                let mut table = self.events().table.lock();
                table.fill(handle, record)?;
                self.events().mirror(handle, true);
                Ok(handle)
            }
            Err(e) => {
                let _ = self.events().table.lock().cancel(handle);
                Err(e)
            }
        }
    }

    pub(super) fn create_reserved(&self, desc: &EventDescriptor) -> Result<EventRecord, Error> {
        let mut args = kfd_ioctl_create_event_args {
            event_type: desc.event_type.code(),
            auto_reset: u32::from(desc.reset == ResetMode::Auto),
            node_id: desc.node,
            ..Default::default()
        };
        let setup = desc.event_type.has_slot() && self.events().claim_page();
        // dGPU systems: the library supplies the page (libhsakmt's `hsakmt_is_dgpu` path).
        let user_page = if setup && self.read_topology(Topology::is_dgpu_system) {
            match self.alloc_event_page() {
                Ok(page) => {
                    args.event_page_offset = page.handle;
                    Some(page)
                }
                Err(e) => {
                    self.events().abandon_page();
                    return Err(e);
                }
            }
        } else {
            None
        };
        if let Err(e) = self.ioctl(&mut Ioctl::CreateEvent(&mut args)) {
            if let Some(page) = user_page {
                self.release_event_page(page);
            } else if setup {
                self.events().abandon_page();
            }
            return Err(e);
        }
        if let Some(page) = user_page {
            self.events().publish_page(EventPage { mapping: page.mapping, slots: EVENT_SLOTS });
        } else if setup {
            match self.map_event_page(args.event_page_offset) {
                Ok(page) => self.events().publish_page(page),
                Err(e) => {
                    self.events().abandon_page();
                    self.destroy_kernel_event(args.event_id);
                    return Err(e);
                }
            }
        }
        let slot = if desc.event_type.has_slot() {
            let slots = self.events().page.read().as_ref().map_or(0, |p| p.slots);
            (args.event_slot_index < slots).then_some(args.event_slot_index as u16)
        } else {
            None
        };
        if desc.signaled {
            let mut set = kfd_ioctl_set_event_args { event_id: args.event_id, pad: 0 };
            if let Err(e) = self.ioctl(&mut Ioctl::SetEvent(&mut set)) {
                self.destroy_kernel_event(args.event_id);
                return Err(e);
            }
        }
        let age = if self.ages() && desc.event_type.has_age() {
            // A set at creation already advanced the kernel's age; the known age stays a lower
            // bound either way.
            INITIAL_AGE
        } else {
            0
        };
        Ok(EventRecord {
            id: args.event_id,
            event_type: desc.event_type,
            reset: desc.reset,
            node: desc.node,
            slot,
            trigger_data: args.event_trigger_data,
            age,
            dispatch_age: age,
            observed: 0,
        })
    }

    pub(super) fn destroy_kernel_event(&self, id: u32) {
        let mut args = kfd_ioctl_destroy_event_args { event_id: id, pad: 0 };
        let _ = self.ioctl(&mut Ioctl::DestroyEvent(&mut args));
    }

    /// Destroys an event (`hsaKmtDestroyEvent`); every copy of `handle` becomes invalid. Waits
    /// on it in other threads fail ([`event::Error::Destroyed`]).
    ///
    /// # Errors
    /// [`Error::Event`] with [`event::Error::InvalidHandle`] for a stale handle (or one another
    /// thread is destroying); [`Error::Ioctl`] for `DESTROY_EVENT`, after which the event is
    /// still alive and usable.
    pub fn destroy_event(&self, handle: EventHandle) -> Result<(), Error> {
        self.check_open()?;
        let record = self.events().table.lock().begin_destroy(handle)?;
        let mut args = kfd_ioctl_destroy_event_args { event_id: record.id, pad: 0 };
        match self.ioctl(&mut Ioctl::DestroyEvent(&mut args)) {
            Ok(()) => {
                let mut table = self.events().table.lock();
                table.finish_destroy(handle)?;
                self.events().mirror(handle, false);
                Ok(())
            }
            Err(e) => {
                let _ = self.events().table.lock().abort_destroy(handle);
                Err(e)
            }
        }
    }

    /// Destroys every event and drops the page mapping (the last close).
    pub(crate) fn teardown_events(&self) {
        loop {
            // In batches, so the table lock is never held across an ioctl.
            let mut batch = [(EventHandle::new(0, 0), 0u32); EVENT_TEARDOWN_BATCH];
            let n = {
                let table = self.events().table.lock();
                batch.iter_mut().zip(table.iter()).map(|(b, (h, r))| *b = (h, r.id)).count()
            };
            if n == 0 {
                break;
            }
            for (handle, id) in batch.iter().take(n).copied() {
                self.destroy_kernel_event(id);
                let mut table = self.events().table.lock();
                if table.begin_destroy(handle).is_ok() {
                    let _ = table.finish_destroy(handle);
                }
            }
        }
        self.events().table.lock().clear();
        self.events().reset_mirrors();
        self.events().callbacks.lock().clear();
        self.events().wake.store(0, Ordering::Release);
        drop(self.events().page.write().take());
        self.events().page_state.store(PAGE_ABSENT, Ordering::Release);
    }
}
