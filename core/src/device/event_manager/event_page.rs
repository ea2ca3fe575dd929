//! The event page (see the [module docs](super)): claimed by the first signal or debug event,
//! allocated by the library (dGPU systems) or by the kernel (APUs), mapped, and the mailbox of
//! each slot read through it.

use core::sync::atomic::Ordering;

use crate::device::{Allocation, Error, Kfd, Mailbox, MapNodes, MemoryStorage};
use crate::event::{
    EVENT_PAGE_SIZE, EVENT_SLOTS, LEGACY_EVENT_SLOTS, UNSIGNALED_EVENT_SLOT, {self},
};
use crate::memory::MemFlags;
use crate::platform::{Access, Platform, SharedMemory};

use super::Events;

pub(super) const PAGE_ABSENT: u8 = 0;
pub(super) const PAGE_CREATING: u8 = 1;
pub(super) const PAGE_READY: u8 = 2;

/// The event page as mapped by this process.
#[derive(Debug)]
pub(super) struct EventPage<M> {
    pub(super) mapping: M,
    /// Slots usable through the mapping.
    pub(super) slots: u32,
}

/// An event page the library allocated (dGPU systems), before the kernel took it.
pub(super) struct UserPage<M> {
    pub(super) alloc: Allocation<M>,
    pub(super) mapping: M,
    pub(super) handle: u64,
}

impl<M> Events<M> {
    /// Claims the page setup. `true`: the caller must set the page up and then call
    /// [`Events::publish_page`] or [`Events::abandon_page`]; `false`: the page is ready.
    pub(super) fn claim_page(&self) -> bool {
        loop {
            match self.page_state.compare_exchange(
                PAGE_ABSENT,
                PAGE_CREATING,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(PAGE_READY) => return false,
                // Another thread is creating the first signal event: the page exists once it
                // is done (or it failed and the state is absent again).
                Err(_) => core::hint::spin_loop(),
            }
        }
    }

    pub(super) fn publish_page(&self, page: EventPage<M>) {
        *self.page.write() = Some(page);
        self.page_state.store(PAGE_READY, Ordering::Release);
    }

    pub(super) fn abandon_page(&self) {
        self.page_state.store(PAGE_ABSENT, Ordering::Release);
    }
}

impl<M: SharedMemory> Events<M> {
    pub(super) fn page_slot_address(&self, slot: Option<u16>) -> Option<u64> {
        let slot = u32::from(slot?);
        let page = self.page.read();
        let page = page.as_ref()?;
        if slot >= page.slots {
            return None;
        }
        event::mailbox_address(page.mapping.addr(), slot)
    }

    pub(super) fn mailbox(&self, slot: Option<u16>) -> Mailbox {
        let Some(slot) = slot else { return Mailbox::None };
        let page = self.page.read();
        let Some(page) = page.as_ref() else { return Mailbox::None };
        if u32::from(slot) >= page.slots {
            return Mailbox::None;
        }
        match page.mapping.u64s().get(usize::from(slot)) {
            Some(w) => match w.load(Ordering::Acquire) {
                UNSIGNALED_EVENT_SLOT => Mailbox::Idle,
                v => Mailbox::Pending(v),
            },
            None => Mailbox::None,
        }
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// Allocates the event page as libhsakmt does on dGPUs: 32 KiB of uncached, non-paged host
    /// memory on node 0 with a CPU view, mapped on every GPU.
    pub(super) fn alloc_event_page(&self) -> Result<UserPage<P::Mapping>, Error> {
        let flags = MemFlags::HOST_ACCESS
            | MemFlags::EXECUTE_ACCESS
            | MemFlags::NON_PAGED
            | MemFlags::UNCACHED;
        let alloc = self.alloc_memory(0, EVENT_PAGE_SIZE, flags)?;
        let (Some(handle), Some(mapping)) = (alloc.kfd_handle, alloc.mapping.clone()) else {
            let _ = self.free(alloc);
            return Err(event::Error::Unexpected.into());
        };
        if let Err(e) = self.map_memory_to_gpu(alloc.addr, MapNodes::All) {
            drop(mapping);
            let _ = self.free(alloc);
            return Err(e);
        }
        Ok(UserPage { alloc, mapping, handle })
    }

    /// Gives back a page the kernel did not take; one it took (the kernel refuses to free the
    /// event page, `EPERM`) becomes the page after all.
    pub(super) fn release_event_page(&self, page: UserPage<P::Mapping>) {
        let UserPage { alloc, mapping, .. } = page;
        drop(mapping);
        let addr = alloc.addr;
        let _ = self.unmap_memory_from_gpu(addr);
        match self.free(alloc) {
            Err(Error::Ioctl { errno: crate::error::Errno::EPERM, .. }) => {
                let _ = self.map_memory_to_gpu(addr, MapNodes::All);
                match self.cpu_mapping(addr) {
                    Ok(mapping) => {
                        self.events().publish_page(EventPage { mapping, slots: EVENT_SLOTS });
                    }
                    Err(_) => self.events().abandon_page(),
                }
            }
            _ => self.events().abandon_page(),
        }
    }

    /// Maps the kernel-allocated event page at `offset` (from the first `CREATE_EVENT`).
    pub(super) fn map_event_page(&self, offset: u64) -> Result<EventPage<P::Mapping>, Error> {
        if offset == 0 {
            return Err(event::Error::Unexpected.into());
        }
        let map = |size: u64| self.platform.map_kfd(offset, size, None, Access::ReadWrite);
        match map(EVENT_PAGE_SIZE) {
            Ok(mapping) => Ok(EventPage { mapping, slots: EVENT_SLOTS }),
            // Old kernels map one page and use 256 slots of it.
            Err(_) => match map(4096) {
                Ok(mapping) => Ok(EventPage { mapping, slots: LEGACY_EVENT_SLOTS }),
                Err(errno) => Err(Error::Platform(errno)),
            },
        }
    }
}
