//! The emulated amdkfd events, with `kfd_events.c`'s semantics and errnos:
//!
//! - ids: signal and debug events take the lowest free id in `1..mapped_slots` (id 0 is
//!   reserved), which is also their event-page slot and trigger data; other events take the
//!   lowest free id from `0x40000000`. At most `mapped_slots - 1` signal events (`ENOSPC`).
//! - the event page: either allocated by the "kernel" at the first signal event (then
//!   `event_page_offset` answers `KFD_MMAP_TYPE_EVENTS` and only 256 slots are usable until the
//!   process maps the page, as `signal_mapped_size` works), or supplied by user space as a
//!   buffer handle in the first `CREATE_EVENT` (`kfd_kmap_event_page`: `EINVAL` when a page is
//!   already set or the handle is unknown). Every slot starts at `UNSIGNALED_EVENT_SLOT`.
//! - set: only signal events from the CPU (`EINVAL`); an auto-reset event with waiters wakes
//!   them all and stays unsignaled, otherwise it becomes signaled; every set advances the age
//!   (from 1, never wrapping to 0 or 1).
//! - wait: registering consumes an auto-reset event that is signaled (even if a wait-all then
//!   times out); an age that differs from the event's activates the waiter; a destroyed event
//!   fails the wait (`EIO`, `KFD_IOC_WAIT_RESULT_FAIL`); on completion the memory or HW
//!   exception data, or the age, of each activated event is copied out. Timeouts run on the
//!   platform clock; each wait blocks on its own condition variable, so any number of threads
//!   can wait at once and no signal interrupts them.
//! - as for the rest of the simulated process state, closing the device ends the events and the
//!   event page (amdkfd keeps them until the process exits; see `KfdModel::close`).
//!
//! The GPU side: [`SimEvents::interrupt`] is the interrupt handler (acknowledge the mailbox,
//! set the event), [`SimEvents::memory_fault`] and [`SimEvents::gpu_reset`] raise the exception
//! events as `kfd_signal_vm_fault_event` and `kfd_signal_reset_event` do.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hsakmt_core::error::Errno;
use hsakmt_core::event::{
    EVENT_PAGE_SIZE, FIRST_NONSIGNAL_EVENT_ID, KFD_MMAP_TYPE_EVENTS, LEGACY_EVENT_SLOTS,
    UNSIGNALED_EVENT_SLOT,
};
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::uapi::{
    KFD_HW_EXCEPTION_ECC, KFD_IOC_EVENT_DEBUG_EVENT, KFD_IOC_EVENT_HW_EXCEPTION,
    KFD_IOC_EVENT_MEMORY, KFD_IOC_EVENT_SIGNAL, KFD_IOC_WAIT_RESULT_COMPLETE,
    KFD_IOC_WAIT_RESULT_FAIL, KFD_IOC_WAIT_RESULT_TIMEOUT, KFD_MEM_ERR_SRAM_ECC, kfd_event_data,
    kfd_hsa_hw_exception_data, kfd_hsa_memory_exception_data, kfd_hsa_signal_event_data,
    kfd_ioctl_create_event_args, kfd_ioctl_wait_events_args, kfd_memory_exception_failure,
};
use hsakmt_hostmem::HostMapping;

use crate::mapping::SimMapping;

const INFINITE: u32 = 0xFFFF_FFFF;

#[derive(Debug)]
struct Event {
    event_type: u32,
    auto_reset: bool,
    signaled: bool,
    age: u64,
    memory: kfd_hsa_memory_exception_data,
    hw: kfd_hsa_hw_exception_data,
    /// Waits queued on this event: (wait id, entry).
    queue: Vec<(u64, usize)>,
}

impl Event {
    fn is_slotted(&self) -> bool {
        self.event_type == KFD_IOC_EVENT_SIGNAL || self.event_type == KFD_IOC_EVENT_DEBUG_EVENT
    }
}

#[derive(Debug)]
struct Waiter {
    event_id: u32,
    activated: bool,
    /// The event was destroyed while queued.
    gone: bool,
    age_enabled: bool,
}

#[derive(Debug)]
struct Wait {
    entries: Vec<Waiter>,
    wake: Arc<Condvar>,
}

#[derive(Debug)]
struct Page {
    memory: HostMapping,
    /// The user buffer handle it came from, 0 when the "kernel" allocated it.
    user_handle: u64,
}

#[derive(Debug)]
struct State {
    events: BTreeMap<u32, Event>,
    /// Signal events plus the reserved id 0 (`signal_event_count`).
    signal_count: u64,
    page: Option<Page>,
    /// `signal_mapped_size`: bytes of the page user space may use.
    mapped_size: u64,
    waits: HashMap<u64, Wait>,
    /// Finished waits' records, reused (their condition variable and entries), so a wait in
    /// the steady state allocates nothing.
    spare: Vec<Wait>,
    /// Event ids an interrupt or fault is about to set (reused: no allocation per interrupt).
    to_set: Vec<u32>,
    next_wait: u64,
    /// Threads blocked in a wait now.
    sleeping: usize,
}

impl State {
    fn new() -> Self {
        Self {
            events: BTreeMap::new(),
            signal_count: 1,
            page: None,
            mapped_size: 0,
            waits: HashMap::new(),
            spare: Vec::new(),
            to_set: Vec::new(),
            next_wait: 0,
            sleeping: 0,
        }
    }

    fn slot_word(&self, id: u32) -> Option<&std::sync::atomic::AtomicU64> {
        self.page.as_ref()?.memory.u64s().get(id as usize)
    }

    fn lowest_free(&self, from: u32, to: u32) -> Option<u32> {
        let mut want = from;
        for &id in self.events.range(from..to).map(|(id, _)| id) {
            if id != want {
                break;
            }
            want = want.checked_add(1)?;
        }
        (want < to).then_some(want)
    }

    /// `set_event`: wake every queued waiter; auto-reset events with waiters stay unsignaled.
    fn set(&mut self, id: u32) {
        let Some(ev) = self.events.get_mut(&id) else { return };
        ev.signaled = !ev.auto_reset || ev.queue.is_empty();
        ev.age = match ev.age.wrapping_add(1) {
            0 => 2,
            a => a,
        };
        let queue = std::mem::take(&mut ev.queue);
        for (wait, entry) in &queue {
            if let Some(w) = self.waits.get_mut(wait) {
                if let Some(e) = w.entries.get_mut(*entry) {
                    e.activated = true;
                }
                w.wake.notify_one();
            }
        }
        if let Some(ev) = self.events.get_mut(&id) {
            ev.queue = queue;
        }
    }

    /// `test_event_condition`.
    fn condition(&self, wait: u64, all: bool) -> u32 {
        let Some(w) = self.waits.get(&wait) else { return KFD_IOC_WAIT_RESULT_FAIL };
        if w.entries.iter().any(|e| e.gone) {
            return KFD_IOC_WAIT_RESULT_FAIL;
        }
        let active = w.entries.iter().filter(|e| e.activated).count();
        if (all && active == w.entries.len()) || (!all && active > 0) || w.entries.is_empty() {
            KFD_IOC_WAIT_RESULT_COMPLETE
        } else {
            KFD_IOC_WAIT_RESULT_TIMEOUT
        }
    }

    /// Takes wait `wait` off every queue and forgets it.
    fn remove_wait(&mut self, wait: u64) -> Option<Wait> {
        let w = self.waits.remove(&wait)?;
        for e in &w.entries {
            if let Some(ev) = self.events.get_mut(&e.event_id) {
                ev.queue.retain(|(id, _)| *id != wait);
            }
        }
        Some(w)
    }

    /// Takes wait `wait` off every queue and keeps its record for the next wait.
    fn retire_wait(&mut self, wait: u64) {
        if let Some(w) = self.remove_wait(wait) {
            self.spare.push(w);
        }
    }

    /// Sets every event in `to_set` (filled by the caller; emptied, its capacity kept),
    /// first writing each one's mailbox idle when `acknowledge`; returns how many.
    fn set_pending(&mut self, acknowledge: bool) -> usize {
        let ids = std::mem::take(&mut self.to_set);
        for id in &ids {
            if acknowledge && let Some(w) = self.slot_word(*id) {
                w.store(UNSIGNALED_EVENT_SLOT, Ordering::Release);
            }
            self.set(*id);
        }
        let n = ids.len();
        self.to_set = ids;
        self.to_set.clear();
        n
    }
}

/// The events of the emulated device.
#[derive(Debug)]
pub(crate) struct SimEvents {
    state: Mutex<State>,
}

impl SimEvents {
    pub(crate) fn new() -> Self {
        Self { state: Mutex::new(State::new()) }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        super::lock(&self.state)
    }

    /// Ends every event (their waiters fail) and forgets the page.
    pub(crate) fn end_all(&self) {
        let mut s = self.lock();
        for w in s.waits.values_mut() {
            for e in &mut w.entries {
                e.gone = true;
            }
            w.wake.notify_one();
        }
        // Waiters still blocked keep their records (they find them gone and fail).
        let waits = std::mem::take(&mut s.waits);
        let spare = std::mem::take(&mut s.spare);
        *s = State { waits, spare, next_wait: s.next_wait, sleeping: s.sleeping, ..State::new() };
    }

    /// Forgets the events of a process this one was forked from, leaking the page's mapping
    /// (it was not inherited; its address may be something else's here).
    pub(crate) fn forget_inherited(&self) {
        let mut s = self.lock();
        if let Some(page) = s.page.take() {
            std::mem::forget(page);
        }
        *s = State::new();
    }

    /// `AMDKFD_IOC_CREATE_EVENT`. `user_page` resolves a buffer handle passed as
    /// `event_page_offset` to its memory (and marks the buffer unfreeable), or fails as the
    /// kernel does.
    pub(crate) fn create(
        &self,
        args: &mut kfd_ioctl_create_event_args,
        user_page: impl FnOnce(u64) -> Result<HostMapping, Errno>,
    ) -> Result<(), Errno> {
        let mut s = self.lock();
        if args.event_page_offset != 0 {
            // kfd_kmap_event_page
            if s.page.is_some() {
                return Err(Errno::EINVAL);
            }
            let memory = user_page(args.event_page_offset)?;
            if (memory.len() as u64) < EVENT_PAGE_SIZE {
                return Err(Errno::EINVAL);
            }
            fill_unsignaled(&memory);
            s.mapped_size = memory.len() as u64;
            s.page = Some(Page { memory, user_handle: args.event_page_offset });
        }
        let slotted =
            args.event_type == KFD_IOC_EVENT_SIGNAL || args.event_type == KFD_IOC_EVENT_DEBUG_EVENT;
        args.event_page_offset = 0;
        let id = if slotted {
            if s.mapped_size != 0 && s.signal_count == s.mapped_size / 8 {
                return Err(Errno::ENOSPC);
            }
            if s.page.is_none() {
                let memory = hsakmt_hostmem::map_shared_anywhere(EVENT_PAGE_SIZE)?;
                fill_unsignaled(&memory);
                s.page = Some(Page { memory, user_handle: 0 });
                // Oldest user mode expects 256 event slots.
                s.mapped_size = u64::from(LEGACY_EVENT_SLOTS) * 8;
            }
            let limit = u32::try_from(s.mapped_size / 8).unwrap_or(u32::MAX);
            // Id 0 is reserved for bogus interrupts without a context id.
            let id = s.lowest_free(1, limit).ok_or(Errno::ENOSPC)?;
            if let Some(w) = s.slot_word(id) {
                w.store(UNSIGNALED_EVENT_SLOT, Ordering::Release);
            }
            s.signal_count += 1;
            args.event_page_offset = KFD_MMAP_TYPE_EVENTS;
            args.event_slot_index = id;
            id
        } else {
            s.lowest_free(FIRST_NONSIGNAL_EVENT_ID, i32::MAX as u32).ok_or(Errno::ENOMEM)?
        };
        s.events.insert(
            id,
            Event {
                event_type: args.event_type,
                auto_reset: args.auto_reset != 0,
                signaled: false,
                age: 1,
                memory: kfd_hsa_memory_exception_data::default(),
                hw: kfd_hsa_hw_exception_data::default(),
                queue: Vec::new(),
            },
        );
        args.event_id = id;
        args.event_trigger_data = id;
        Ok(())
    }

    /// `AMDKFD_IOC_DESTROY_EVENT`: waiters of the event fail.
    pub(crate) fn destroy(&self, id: u32) -> Result<(), Errno> {
        let mut s = self.lock();
        let ev = s.events.remove(&id).ok_or(Errno::EINVAL)?;
        for (wait, entry) in &ev.queue {
            if let Some(w) = s.waits.get_mut(wait) {
                if let Some(e) = w.entries.get_mut(*entry) {
                    e.gone = true;
                }
                w.wake.notify_one();
            }
        }
        if ev.is_slotted() {
            s.signal_count -= 1;
        }
        Ok(())
    }

    /// `AMDKFD_IOC_SET_EVENT`.
    pub(crate) fn set(&self, id: u32) -> Result<(), Errno> {
        let mut s = self.lock();
        match s.events.get(&id) {
            Some(ev) if ev.event_type == KFD_IOC_EVENT_SIGNAL => {
                s.set(id);
                Ok(())
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// `AMDKFD_IOC_RESET_EVENT`.
    pub(crate) fn reset(&self, id: u32) -> Result<(), Errno> {
        let mut s = self.lock();
        match s.events.get_mut(&id) {
            Some(ev) if ev.event_type == KFD_IOC_EVENT_SIGNAL => {
                ev.signaled = false;
                Ok(())
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// `AMDKFD_IOC_WAIT_EVENTS` (`kfd_wait_on_events`).
    pub(crate) fn wait(
        &self,
        args: &mut kfd_ioctl_wait_events_args,
        events: &mut [kfd_event_data],
    ) -> Result<(), Errno> {
        let all = args.wait_for_all != 0;
        let deadline = match args.timeout {
            INFINITE => None,
            ms => Some(Instant::now() + Duration::from_millis(u64::from(ms))),
        };
        let mut s = self.lock();
        let wait = s.next_wait;
        s.next_wait += 1;
        let mut record = s
            .spare
            .pop()
            .unwrap_or_else(|| Wait { entries: Vec::new(), wake: Arc::new(Condvar::new()) });
        record.entries.clear();
        record.entries.reserve(events.len());
        let wake = record.wake.clone();
        s.waits.insert(wait, record);
        // init_event_waiter, per event.
        for (i, data) in events.iter().enumerate() {
            let id = data.event_id;
            let Some(ev) = s.events.get_mut(&id) else {
                // The events registered so far keep their consumed flags, as in the kernel.
                s.retire_wait(wait);
                args.wait_result = KFD_IOC_WAIT_RESULT_FAIL;
                return Err(Errno::EINVAL);
            };
            let mut activated = ev.signaled;
            ev.signaled = ev.signaled && !ev.auto_reset;
            let last_age = data.data.signal_event_data().last_event_age;
            let age_enabled = ev.event_type == KFD_IOC_EVENT_SIGNAL && last_age != 0;
            if age_enabled && ev.age != last_age {
                activated = true;
            }
            if !activated {
                ev.queue.push((wait, i));
            }
            if let Some(w) = s.waits.get_mut(&wait) {
                w.entries.push(Waiter { event_id: id, activated, gone: false, age_enabled });
            }
        }
        let mut result = s.condition(wait, all);
        while result == KFD_IOC_WAIT_RESULT_TIMEOUT {
            let left = match deadline {
                None => Duration::from_secs(3600),
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left,
                    _ => break,
                },
            };
            s.sleeping += 1;
            s = wake.wait_timeout(s, left).map_or_else(|p| p.into_inner().0, |(g, _)| g);
            s.sleeping -= 1;
            result = s.condition(wait, all);
        }
        let w = s.remove_wait(wait);
        args.wait_result = result;
        if result == KFD_IOC_WAIT_RESULT_COMPLETE {
            // copy_signaled_event_data
            for (e, data) in w.iter().flat_map(|w| &w.entries).zip(events.iter_mut()) {
                let Some(ev) = s.events.get(&e.event_id).filter(|_| e.activated) else {
                    continue;
                };
                match ev.event_type {
                    KFD_IOC_EVENT_MEMORY => data.data = ev.memory.into(),
                    KFD_IOC_EVENT_HW_EXCEPTION => data.data = ev.hw.into(),
                    KFD_IOC_EVENT_SIGNAL if e.age_enabled => {
                        data.data = kfd_hsa_signal_event_data { last_event_age: ev.age }.into();
                    }
                    _ => {}
                }
            }
        }
        if let Some(w) = w {
            s.spare.push(w);
        }
        if result == KFD_IOC_WAIT_RESULT_FAIL {
            return Err(Errno::EIO);
        }
        Ok(())
    }

    /// `mmap` of `/dev/kfd` at the events offset (`kfd_event_mmap`): at most the 32 KiB page,
    /// and afterwards that many bytes of slots are usable.
    pub(crate) fn map(&self, size: u64) -> Result<SimMapping, Errno> {
        let pages = |bytes: u64| bytes.div_ceil(4096).next_power_of_two();
        if size == 0 || pages(size) > pages(EVENT_PAGE_SIZE) {
            return Err(Errno::EINVAL);
        }
        let mut s = self.lock();
        let memory = s.page.as_ref().ok_or(Errno::EINVAL)?.memory.clone();
        s.mapped_size = size.min(EVENT_PAGE_SIZE);
        Ok(SimMapping::new(memory))
    }

    /// A GPU writes `value` into the mailbox of slot `id` (no interrupt yet).
    pub(crate) fn write_mailbox(&self, id: u32, value: u64) -> bool {
        let s = self.lock();
        s.slot_word(id).map(|w| w.store(value, Ordering::Release)).is_some()
    }

    /// The interrupt handler (`kfd_signal_event_interrupt`): with `id`, the event whose
    /// mailbox holds a write; without (or when that mailbox is idle), every written mailbox.
    /// Acknowledges each (writes it idle) and sets its signal or debug event. Returns how many
    /// events were set.
    pub(crate) fn interrupt(&self, id: Option<u32>) -> usize {
        let mut s = self.lock();
        let pending = |s: &State, id: u32| {
            s.slot_word(id).is_some_and(|w| w.load(Ordering::Acquire) != UNSIGNALED_EVENT_SLOT)
        };
        let mut ids = std::mem::take(&mut s.to_set);
        ids.clear();
        match id {
            Some(id) if pending(&s, id) && s.events.contains_key(&id) => ids.push(id),
            _ => ids.extend(
                s.events
                    .iter()
                    .filter(|(id, ev)| ev.is_slotted() && pending(&s, **id))
                    .map(|(id, _)| *id),
            ),
        }
        s.to_set = ids;
        s.set_pending(true)
    }

    /// A GPU memory fault (`kfd_signal_vm_fault_event`): every memory event gets `data` and
    /// is set. Returns how many.
    pub(crate) fn memory_fault(&self, data: kfd_hsa_memory_exception_data) -> usize {
        let mut s = self.lock();
        let mut ids = std::mem::take(&mut s.to_set);
        ids.clear();
        for (id, ev) in s.events.iter_mut().filter(|(_, e)| e.event_type == KFD_IOC_EVENT_MEMORY) {
            ev.memory = data;
            ids.push(*id);
        }
        s.to_set = ids;
        s.set_pending(false)
    }

    /// A GPU reset (`kfd_signal_reset_event`): every HW-exception event gets `data` and is
    /// set; for an ECC reset every memory event also gets an imprecise SRAM-ECC fault. Returns
    /// how many events were set.
    pub(crate) fn gpu_reset(&self, data: kfd_hsa_hw_exception_data) -> usize {
        let mut s = self.lock();
        let ecc = data.reset_cause == KFD_HW_EXCEPTION_ECC;
        let memory = kfd_hsa_memory_exception_data {
            failure: kfd_memory_exception_failure { imprecise: 1, ..Default::default() },
            gpu_id: data.gpu_id,
            ErrorType: KFD_MEM_ERR_SRAM_ECC,
            ..Default::default()
        };
        let mut ids = std::mem::take(&mut s.to_set);
        ids.clear();
        for (id, ev) in s.events.iter_mut() {
            if ev.event_type == KFD_IOC_EVENT_HW_EXCEPTION {
                ev.hw = data;
            } else if ecc && ev.event_type == KFD_IOC_EVENT_MEMORY {
                ev.memory = memory;
            } else {
                continue;
            }
            ids.push(*id);
        }
        s.to_set = ids;
        s.set_pending(false)
    }

    /// Threads blocked in `WAIT_EVENTS` now.
    pub(crate) fn sleeping(&self) -> usize {
        self.lock().sleeping
    }

    /// Events that exist.
    pub(crate) fn count(&self) -> usize {
        self.lock().events.len()
    }

    /// The page's address and whether user space supplied it.
    pub(crate) fn page(&self) -> Option<(u64, bool)> {
        self.lock().page.as_ref().map(|p| (p.memory.addr(), p.user_handle != 0))
    }

    /// The kernel's view of event `id`: (signaled, age).
    pub(crate) fn peek(&self, id: u32) -> Option<(bool, u64)> {
        self.lock().events.get(&id).map(|e| (e.signaled, e.age))
    }
}

fn fill_unsignaled(memory: &HostMapping) {
    for w in memory.u64s().iter().take((EVENT_PAGE_SIZE / 8) as usize) {
        w.store(UNSIGNALED_EVENT_SLOT, Ordering::Relaxed);
    }
}
