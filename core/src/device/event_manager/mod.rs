//! Events on [`Kfd`]: create, destroy, set, reset, query, wait (one or many, any or all, with
//! timeouts and event ages), the signal-wait helper, and the callback dispatcher.
//!
//! # The event page
//!
//! Signal events need the 32 KiB event page of 4096 mailboxes. It is set up once, at the first
//! signal (or debug) event, by whichever thread creates that event (others creating signal
//! events meanwhile wait for it). Two origins, as in libhsakmt and the kernel:
//! - **user-allocated** (systems with a dGPU, libhsakmt's `hsakmt_is_dgpu`): the library
//!   allocates 32 KiB of uncached, non-paged host memory with a CPU view ([`Kfd::alloc_memory`]
//!   on node 0), maps it on every GPU, and passes its KFD buffer handle as `event_page_offset`
//!   in that first `CREATE_EVENT`; the kernel maps it for itself (`kfd_kmap_event_page`) and
//!   refuses to free it from then on (`EPERM`). Mailbox addresses are GPU = CPU addresses.
//! - **kernel-allocated** (APUs): the first `CREATE_EVENT` passes `event_page_offset = 0`, the
//!   kernel allocates the page and answers with its `/dev/kfd` mmap offset, which the library
//!   maps (falling back to one page of 256 slots when the kernel refuses 32 KiB, as libhsakmt
//!   does).
//!
//! On the last close the library destroys every event it created and drops its view of the
//! page (before the memory manager forgets its objects); after a fork the child forgets the
//! parent's page (the kernel does not copy it into the child). amdkfd itself keeps a process's
//! events and page until the process exits, so on a real dGPU a close followed by a reopen *in
//! the same process* cannot hand the kernel a second page: the first signal event after the
//! reopen fails with `EINVAL` (libhsakmt never frees its page and keeps it across closes; this
//! library, like its memory manager, treats the last close as the end of the process's KFD
//! state, which is what the simulator models).
//!
//! # Query
//!
//! The kernel cannot report an event's state without a wait, and a wait consumes an auto-reset
//! event. [`Kfd::query_event`] therefore never enters the kernel: it reports what the process
//! learned — the newest age any wait of any thread returned (ages only grow, so
//! [`EventState::fired_since`] is exact for what has been observed), how many firings waits
//! observed, and the event's mailbox: [`Mailbox::Pending`] when a GPU wrote it and the kernel
//! has not serviced the interrupt yet. A caller that needs the kernel's current answer waits
//! with [`Timeout::Immediate`] and an age (which, with ages, consumes nothing it relies on).
//!
//! # Signal waits
//!
//! [`Kfd::wait_signal`] waits for a condition on a 64-bit signal value in shared memory (an
//! HSA completion signal) that has an event attached: it spins for a bounded time, then blocks
//! in the kernel with the event age. [`Kfd::store_signal`] stores a value and issues
//! `SET_EVENT` only if a waiter sleeps. The protocol, per event:
//!
//! - waiter: read the known age `a`; `sleepers += 1`; SeqCst fence; loop { load the value;
//!   done if the condition holds; else `WAIT_EVENTS` with age `a`, and `a` := the age returned };
//!   `sleepers -= 1`.
//! - setter: store the value; SeqCst fence; if `sleepers > 0`, `SET_EVENT`.
//!
//! The two fences order each side's store before its load (the store-buffer pattern), so
//! either the waiter's load sees the new value, or the setter's load sees the waiter and sets
//! the event — which raises the kernel's age above `a` (ages only grow, and `a` was read
//! before), so the waiter's next wait returns at once however late it starts: no lost wake-up,
//! and no syscall when nobody sleeps. A GPU setter writes the value and the mailbox and always
//! interrupts. Without event ages (KFD < 1.14) an earlier set can be consumed by another
//! sleeper, so the waiter blocks in slices of [`NO_AGE_SLICE_MS`] and re-checks.
//!
//! # Files
//! - `lifecycle`: create and destroy events, and destroy them all at the last close;
//!   `event_page`: setting up and reading the event page.
//! - `kernel_wait`: waits for one or many events in the kernel.
//! - `signal_wait`: waits for, and stores, a signal value with an event attached.
//! - `callback_dispatch`: registering callbacks and the dispatcher that calls them.
//! - here: the event state, set / reset, and what the process knows about an event.

mod callback_dispatch;
mod event_page;
mod kernel_wait;
mod lifecycle;
mod signal_wait;

pub use callback_dispatch::Dispatched;
pub use signal_wait::{SignalCondition, SignalValue, SignalWaited};

use core::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};

use crate::device::{Error, Kfd, MemoryStorage};
use crate::event::{
    self, CallbackRegistry, DEFAULT_CALLBACK_CAPACITY, DEFAULT_EVENT_CAPACITY, EventHandle,
    EventRecord, EventTable, EventType, ResetMode,
};
use crate::platform::{Ioctl, Platform, SharedMemory};
use crate::uapi::{kfd_ioctl_reset_event_args, kfd_ioctl_set_event_args, since};

use event_page::{EventPage, PAGE_ABSENT, PAGE_CREATING, PAGE_READY};

/// How long [`Kfd::wait_signal`] spins before blocking unless told otherwise: ROCr's 200 µs.
pub const DEFAULT_SPIN_NS: u64 = 200_000;

/// Without event ages (KFD < 1.14), the longest a signal waiter blocks before re-checking.
pub const NO_AGE_SLICE_MS: u32 = 1;

/// What to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EventDescriptor {
    /// The type.
    pub event_type: EventType,
    /// The node the event is for (passed to the kernel, which ignores it, as libhsakmt does).
    pub node: u32,
    /// Manual or auto reset.
    pub reset: ResetMode,
    /// Create it signaled (signal events only).
    pub signaled: bool,
}

impl EventDescriptor {
    /// An auto-reset, unsignaled event of type `event_type` on node 0.
    #[must_use]
    pub const fn new(event_type: EventType) -> Self {
        Self { event_type, node: 0, reset: ResetMode::Auto, signaled: false }
    }

    /// An auto-reset, unsignaled signal event.
    #[must_use]
    pub const fn signal() -> Self {
        Self::new(EventType::Signal)
    }

    /// The same, manual-reset.
    #[must_use]
    pub const fn manual(mut self) -> Self {
        self.reset = ResetMode::Manual;
        self
    }

    /// The same, created signaled.
    #[must_use]
    pub const fn signaled(mut self) -> Self {
        self.signaled = true;
        self
    }

    /// The same, for node `node`.
    #[must_use]
    pub const fn node(mut self, node: u32) -> Self {
        self.node = node;
        self
    }
}

/// An event's identity: what a GPU needs to raise it and what the kernel calls it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EventInfo {
    /// The kernel's id (libhsakmt's `EventId` / `HWData1`).
    pub id: u32,
    /// The type.
    pub event_type: EventType,
    /// Manual or auto reset.
    pub reset: ResetMode,
    /// The node given at creation.
    pub node: u32,
    /// The event-page slot (signal and debug events).
    pub slot: Option<u32>,
    /// The mailbox a GPU writes to raise the event: page base + slot × 8 (`HWData2`).
    pub mailbox: Option<u64>,
    /// The value a GPU sends with the interrupt (`HWData3`).
    pub trigger_data: u32,
}

/// An event's mailbox, read without entering the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Mailbox {
    /// The event has no mailbox (not a signal or debug event, or its slot is not mapped).
    None,
    /// Idle: no GPU write awaits the kernel.
    Idle,
    /// A GPU wrote this value and the kernel has not serviced the interrupt yet.
    Pending(u64),
}

/// What the process knows about an event without asking the kernel (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EventState {
    /// The event.
    pub info: EventInfo,
    /// The newest age a wait of this process returned (1 at creation; 0 without ages). The
    /// kernel's age is never lower.
    pub age: u64,
    /// Firings waits of this process observed.
    pub observed: u32,
    /// The mailbox.
    pub mailbox: Mailbox,
}

impl EventState {
    /// Whether the event is known to have fired after age `age` (0: never true).
    #[must_use]
    pub const fn fired_since(&self, age: u64) -> bool {
        age != 0 && self.age > age
    }
}

/// The event state of a [`Kfd`].
pub(crate) struct Events<M> {
    table: spin::Mutex<EventTable<DEFAULT_EVENT_CAPACITY>>,
    /// Generation of the live event in each table slot, 0 when none (lock-free handle checks).
    generations: [AtomicU32; DEFAULT_EVENT_CAPACITY],
    /// Signal waiters blocked (or about to block) in the kernel, per table slot.
    sleepers: [AtomicU32; DEFAULT_EVENT_CAPACITY],
    page_state: AtomicU8,
    page: spin::RwLock<Option<EventPage<M>>>,
    callbacks: spin::Mutex<CallbackRegistry<DEFAULT_CALLBACK_CAPACITY>>,
    /// The dispatcher's wake event (raw handle), 0 when none.
    wake: AtomicU64,
}

impl<M> Events<M> {
    pub(crate) const fn new() -> Self {
        Self {
            table: spin::Mutex::new(EventTable::new()),
            generations: [const { AtomicU32::new(0) }; DEFAULT_EVENT_CAPACITY],
            sleepers: [const { AtomicU32::new(0) }; DEFAULT_EVENT_CAPACITY],
            page_state: AtomicU8::new(PAGE_ABSENT),
            page: spin::RwLock::new(None),
            callbacks: spin::Mutex::new(CallbackRegistry::new()),
            wake: AtomicU64::new(0),
        }
    }

    /// Forgets everything without touching the kernel or the page mapping (a forked child:
    /// neither the events nor the page exist in it).
    pub(crate) fn forget(&self) {
        self.table.lock().clear();
        self.reset_mirrors();
        self.callbacks.lock().clear();
        self.wake.store(0, Ordering::Release);
        if let Some(page) = self.page.write().take() {
            // The mapping was not copied into this process; unmapping its range could destroy
            // whatever the child mapped there since.
            core::mem::forget(page);
        }
        self.page_state.store(PAGE_ABSENT, Ordering::Release);
    }

    fn reset_mirrors(&self) {
        for g in &self.generations {
            g.store(0, Ordering::Release);
        }
        for s in &self.sleepers {
            s.store(0, Ordering::Release);
        }
    }

    fn mirror(&self, handle: EventHandle, live: bool) {
        let g = self.generations.get(handle.index());
        // PANIC: debug builds only: handles come from the event table, whose capacity is the
        // mirror's length (release builds leave the mirror stale, never out of bounds).
        debug_assert!(g.is_some(), "event handle beyond the generation mirror");
        if let Some(g) = g {
            g.store(if live { handle.generation() } else { 0 }, Ordering::Release);
        }
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    fn ages(&self) -> bool {
        self.session.version().supports(since::EVENT_AGE)
    }

    fn record(&self, handle: EventHandle) -> Result<EventRecord, Error> {
        Ok(*self.events().table.lock().get(handle)?)
    }

    /// Verifies the event state (`O(capacity + events²)`; for tests and debug sweeps): the
    /// table's own invariants ([`EventTable::check_invariants`]), that the lock-free handle
    /// mirror names exactly the events of the table, and that the event page is published
    /// exactly when its state says so.
    ///
    /// # Errors
    /// The first [`Violation`](crate::memory::Violation) found.
    pub fn check_event_invariants(&self) -> Result<(), crate::memory::Violation> {
        use crate::memory::Violation;
        let table = self.events().table.lock();
        table.check_invariants()?;
        for (i, mirror) in self.events().generations.iter().enumerate() {
            let expected = table.occupant(i).map_or(0, EventHandle::generation);
            if mirror.load(Ordering::Acquire) != expected {
                return Err(Violation::Dangling { slot: i as u32 });
            }
        }
        drop(table);
        let state = self.events().page_state.load(Ordering::Acquire);
        let page = self.events().page.read().is_some();
        if (state == PAGE_READY) != page && state != PAGE_CREATING {
            return Err(Violation::Counter);
        }
        Ok(())
    }

    /// Sets a signal event (`hsaKmtSetEvent`): wakes its waiters (an auto-reset event with
    /// waiters wakes them all and stays unsignaled) and advances its age.
    ///
    /// # Errors
    /// [`event::Error::InvalidHandle`], [`event::Error::NotCpuSettable`] for other types;
    /// [`Error::Ioctl`] for `SET_EVENT`.
    pub fn set_event(&self, handle: EventHandle) -> Result<(), Error> {
        self.check_open()?;
        let r = self.record(handle)?;
        if !r.event_type.is_cpu_settable() {
            return Err(event::Error::NotCpuSettable(r.event_type).into());
        }
        let mut args = kfd_ioctl_set_event_args { event_id: r.id, pad: 0 };
        self.ioctl(&mut Ioctl::SetEvent(&mut args))
    }

    /// Resets a signal event (`hsaKmtResetEvent`).
    ///
    /// # Errors
    /// As [`Kfd::set_event`], for `RESET_EVENT`.
    pub fn reset_event(&self, handle: EventHandle) -> Result<(), Error> {
        self.check_open()?;
        let r = self.record(handle)?;
        if !r.event_type.is_cpu_settable() {
            return Err(event::Error::NotCpuSettable(r.event_type).into());
        }
        let mut args = kfd_ioctl_reset_event_args { event_id: r.id, pad: 0 };
        self.ioctl(&mut Ioctl::ResetEvent(&mut args))
    }

    /// The event's id, slot, mailbox address and trigger data.
    ///
    /// # Errors
    /// [`event::Error::InvalidHandle`].
    pub fn event_info(&self, handle: EventHandle) -> Result<EventInfo, Error> {
        let r = self.record(handle)?;
        Ok(self.info_of(&r))
    }

    fn info_of(&self, r: &EventRecord) -> EventInfo {
        EventInfo {
            id: r.id,
            event_type: r.event_type,
            reset: r.reset,
            node: r.node,
            slot: r.slot.map(u32::from),
            mailbox: self.events().page_slot_address(r.slot),
            trigger_data: r.trigger_data,
        }
    }

    /// What the process knows about the event, without a system call (see the module docs for
    /// what this can and cannot say).
    ///
    /// # Errors
    /// [`event::Error::InvalidHandle`].
    pub fn query_event(&self, handle: EventHandle) -> Result<EventState, Error> {
        let r = self.record(handle)?;
        Ok(EventState {
            info: self.info_of(&r),
            age: r.age,
            observed: r.observed,
            mailbox: self.events().mailbox(r.slot),
        })
    }

    /// The event page: its address and usable slots, once the first signal event created it.
    pub fn event_page(&self) -> Option<(u64, u32)> {
        self.events().page.read().as_ref().map(|p| (p.mapping.addr(), p.slots))
    }

    /// Live events.
    pub fn event_count(&self) -> usize {
        self.events().table.lock().len()
    }
}
