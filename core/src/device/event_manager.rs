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

use core::sync::atomic::{AtomicI64, AtomicU8, AtomicU32, AtomicU64, Ordering, fence};

use crate::device::{Allocation, Error, Kfd, MapNodes, MemoryStorage};
use crate::event::{
    self, CallbackId, CallbackRegistry, DEFAULT_CALLBACK_CAPACITY, DEFAULT_EVENT_CAPACITY,
    EVENT_PAGE_SIZE, EVENT_SLOTS, EventHandle, EventRecord, EventTable, EventType, Filter, Fired,
    INITIAL_AGE, LEGACY_EVENT_SLOTS, MAX_WAIT_EVENTS, Notification, ResetMode, Timeout,
    UNSIGNALED_EVENT_SLOT, Unregistered, WaitMode, WaitResult, WaitSet,
};
use crate::memory::MemFlags;
use crate::platform::{Access, Ioctl, Platform, SharedMemory};
use crate::topology::Topology;
use crate::uapi::{
    KFD_IOC_WAIT_RESULT_COMPLETE, KFD_IOC_WAIT_RESULT_FAIL, KFD_IOC_WAIT_RESULT_TIMEOUT,
    kfd_event_data, kfd_hsa_signal_event_data, kfd_ioctl_create_event_args,
    kfd_ioctl_destroy_event_args, kfd_ioctl_reset_event_args, kfd_ioctl_set_event_args,
    kfd_ioctl_wait_events_args, since,
};

/// Events one device holds.
pub const EVENT_CAPACITY: usize = DEFAULT_EVENT_CAPACITY;

/// Callbacks one device holds.
pub const CALLBACK_CAPACITY: usize = DEFAULT_CALLBACK_CAPACITY;

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

const PAGE_ABSENT: u8 = 0;
const PAGE_CREATING: u8 = 1;
const PAGE_READY: u8 = 2;

/// The event page as mapped by this process.
#[derive(Debug)]
struct EventPage<M> {
    mapping: M,
    /// Slots usable through the mapping.
    slots: u32,
}

/// An event page the library allocated (dGPU systems), before the kernel took it.
struct UserPage<M> {
    alloc: Allocation<M>,
    mapping: M,
    handle: u64,
}

/// The event state of a [`Kfd`].
pub(crate) struct Events<M> {
    table: spin::Mutex<EventTable<EVENT_CAPACITY>>,
    /// Generation of the live event in each table slot, 0 when none (lock-free handle checks).
    generations: [AtomicU32; EVENT_CAPACITY],
    /// Signal waiters blocked (or about to block) in the kernel, per table slot.
    sleepers: [AtomicU32; EVENT_CAPACITY],
    page_state: AtomicU8,
    page: spin::RwLock<Option<EventPage<M>>>,
    callbacks: spin::Mutex<CallbackRegistry<CALLBACK_CAPACITY>>,
    /// The dispatcher's wake event (raw handle), 0 when none.
    wake: AtomicU64,
}

impl<M> Events<M> {
    pub(crate) const fn new() -> Self {
        Self {
            table: spin::Mutex::new(EventTable::new()),
            generations: [const { AtomicU32::new(0) }; EVENT_CAPACITY],
            sleepers: [const { AtomicU32::new(0) }; EVENT_CAPACITY],
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
        if let Some(g) = self.generations.get(handle.index()) {
            g.store(if live { handle.generation() } else { 0 }, Ordering::Release);
        }
    }

    /// Claims the page setup. `true`: the caller must set the page up and then call
    /// [`Events::publish_page`] or [`Events::abandon_page`]; `false`: the page is ready.
    fn claim_page(&self) -> bool {
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

    fn publish_page(&self, page: EventPage<M>) {
        *self.page.write() = Some(page);
        self.page_state.store(PAGE_READY, Ordering::Release);
    }

    fn abandon_page(&self) {
        self.page_state.store(PAGE_ABSENT, Ordering::Release);
    }
}

impl<M: SharedMemory> Events<M> {
    fn page_slot_address(&self, slot: Option<u16>) -> Option<u64> {
        let slot = u32::from(slot?);
        let page = self.page.read();
        let page = page.as_ref()?;
        if slot >= page.slots {
            return None;
        }
        event::mailbox_address(page.mapping.addr(), slot)
    }

    fn mailbox(&self, slot: Option<u16>) -> Mailbox {
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

/// Decrements a sleeper count when a signal waiter leaves, however it leaves.
struct Sleeping<'a>(&'a AtomicU32);

impl Drop for Sleeping<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Settles a collected callback even if the callback panics.
struct CallGuard<'a> {
    registry: &'a spin::Mutex<CallbackRegistry<CALLBACK_CAPACITY>>,
    id: CallbackId,
    called: bool,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        self.registry.lock().end_call(self.id, self.called);
    }
}

/// libhsakmt's node id of the GPU with `gpu_id`.
fn node_of(topology: &Topology, gpu_id: u32) -> Option<u32> {
    topology.node_by_gpu_id(gpu_id).and_then(|n| n.node().user_id())
}

fn ceil_ms(ns: u64) -> u32 {
    u32::try_from(ns.div_ceil(1_000_000)).unwrap_or(Timeout::KERNEL_INFINITE - 1)
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    fn ages(&self) -> bool {
        self.session.version().supports(since::EVENT_AGE)
    }

    fn record(&self, handle: EventHandle) -> Result<EventRecord, Error> {
        Ok(*self.events.table.lock().get(handle)?)
    }

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
        let handle = self.events.table.lock().reserve()?;
        match self.create_reserved(desc) {
            Ok(record) => {
                let mut table = self.events.table.lock();
                table.fill(handle, record)?;
                self.events.mirror(handle, true);
                Ok(handle)
            }
            Err(e) => {
                let _ = self.events.table.lock().cancel(handle);
                Err(e)
            }
        }
    }

    fn create_reserved(&self, desc: &EventDescriptor) -> Result<EventRecord, Error> {
        let mut args = kfd_ioctl_create_event_args {
            event_type: desc.event_type.code(),
            auto_reset: u32::from(desc.reset == ResetMode::Auto),
            node_id: desc.node,
            ..Default::default()
        };
        let setup = desc.event_type.has_slot() && self.events.claim_page();
        // dGPU systems: the library supplies the page (libhsakmt's `hsakmt_is_dgpu` path).
        let user_page = if setup && self.topology.read().is_dgpu_system() {
            match self.alloc_event_page() {
                Ok(page) => {
                    args.event_page_offset = page.handle;
                    Some(page)
                }
                Err(e) => {
                    self.events.abandon_page();
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
                self.events.abandon_page();
            }
            return Err(e);
        }
        if let Some(page) = user_page {
            self.events.publish_page(EventPage { mapping: page.mapping, slots: EVENT_SLOTS });
        } else if setup {
            match self.map_event_page(args.event_page_offset) {
                Ok(page) => self.events.publish_page(page),
                Err(e) => {
                    self.events.abandon_page();
                    self.destroy_kernel_event(args.event_id);
                    return Err(e);
                }
            }
        }
        let slot = if desc.event_type.has_slot() {
            let slots = self.events.page.read().as_ref().map_or(0, |p| p.slots);
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

    /// Allocates the event page as libhsakmt does on dGPUs: 32 KiB of uncached, non-paged host
    /// memory on node 0 with a CPU view, mapped on every GPU.
    fn alloc_event_page(&self) -> Result<UserPage<P::Mapping>, Error> {
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
    fn release_event_page(&self, page: UserPage<P::Mapping>) {
        let UserPage { alloc, mapping, .. } = page;
        drop(mapping);
        let addr = alloc.addr;
        let _ = self.unmap_memory_from_gpu(addr);
        match self.free(alloc) {
            Err(Error::Ioctl { errno: crate::error::Errno::EPERM, .. }) => {
                let _ = self.map_memory_to_gpu(addr, MapNodes::All);
                match self.cpu_mapping(addr) {
                    Ok(mapping) => {
                        self.events.publish_page(EventPage { mapping, slots: EVENT_SLOTS });
                    }
                    Err(_) => self.events.abandon_page(),
                }
            }
            _ => self.events.abandon_page(),
        }
    }

    /// Maps the kernel-allocated event page at `offset` (from the first `CREATE_EVENT`).
    fn map_event_page(&self, offset: u64) -> Result<EventPage<P::Mapping>, Error> {
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

    fn destroy_kernel_event(&self, id: u32) {
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
        let record = self.events.table.lock().begin_destroy(handle)?;
        let mut args = kfd_ioctl_destroy_event_args { event_id: record.id, pad: 0 };
        match self.ioctl(&mut Ioctl::DestroyEvent(&mut args)) {
            Ok(()) => {
                let mut table = self.events.table.lock();
                table.finish_destroy(handle)?;
                self.events.mirror(handle, false);
                Ok(())
            }
            Err(e) => {
                let _ = self.events.table.lock().abort_destroy(handle);
                Err(e)
            }
        }
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
        let table = self.events.table.lock();
        table.check_invariants()?;
        for (i, mirror) in self.events.generations.iter().enumerate() {
            let expected = table.occupant(i).map_or(0, EventHandle::generation);
            if mirror.load(Ordering::Acquire) != expected {
                return Err(Violation::Dangling { slot: i as u32 });
            }
        }
        drop(table);
        let state = self.events.page_state.load(Ordering::Acquire);
        let page = self.events.page.read().is_some();
        if (state == PAGE_READY) != page && state != PAGE_CREATING {
            return Err(Violation::Counter);
        }
        Ok(())
    }

    /// Destroys every event and drops the page mapping (the last close).
    pub(crate) fn teardown_events(&self) {
        loop {
            // In batches, so the table lock is never held across an ioctl.
            let mut batch = [(EventHandle::new(0, 0), 0u32); 64];
            let n = {
                let table = self.events.table.lock();
                batch.iter_mut().zip(table.iter()).map(|(b, (h, r))| *b = (h, r.id)).count()
            };
            if n == 0 {
                break;
            }
            for (handle, id) in batch.iter().take(n).copied() {
                self.destroy_kernel_event(id);
                let mut table = self.events.table.lock();
                if table.begin_destroy(handle).is_ok() {
                    let _ = table.finish_destroy(handle);
                }
            }
        }
        self.events.table.lock().clear();
        self.events.reset_mirrors();
        self.events.callbacks.lock().clear();
        self.events.wake.store(0, Ordering::Release);
        drop(self.events.page.write().take());
        self.events.page_state.store(PAGE_ABSENT, Ordering::Release);
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
            mailbox: self.events.page_slot_address(r.slot),
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
            mailbox: self.events.mailbox(r.slot),
        })
    }

    /// The event page: its address and usable slots, once the first signal event created it.
    pub fn event_page(&self) -> Option<(u64, u32)> {
        self.events.page.read().as_ref().map(|p| (p.mapping.addr(), p.slots))
    }

    /// Live events.
    pub fn event_count(&self) -> usize {
        self.events.table.lock().len()
    }

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
    /// [`INITIAL_AGE`] for a new event; 0 disables age tracking.
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
            let table = self.events.table.lock();
            for i in 0..set.len() {
                let h = set.handle(i).ok_or(event::Error::InvalidHandle)?;
                let r = table.get(h)?;
                set.bind(i, r.id, r.event_type, ages)?;
            }
        }
        let result = self.wait_kernel(set.kernel_mut(), mode, timeout)?;
        {
            let topology = self.topology.read();
            set.finish(mode, result, |g| node_of(&topology, g));
        }
        let mut table = self.events.table.lock();
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
    fn wait_kernel(
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
                Err(errno) if errno.is_retryable() && tries < super::IOCTL_RETRIES => {
                    tries += 1;
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

    /// Waits until `condition` holds for the signal value `value`, which `event` (a signal
    /// event) is raised for: spins for up to `spin_ns` (see [`DEFAULT_SPIN_NS`]), then blocks
    /// in the kernel with the event age (see the module docs for the protocol). The timeout
    /// covers both phases.
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
        let mut n: u32 = 0;
        loop {
            let v = value.load_acquire();
            if condition.holds(v) {
                return Ok(done(v, 0));
            }
            n = n.wrapping_add(1);
            if n.is_multiple_of(64) && self.platform.now_ns() >= spin_end {
                break;
            }
            core::hint::spin_loop();
        }

        let ages = self.ages();
        let mut age = if ages { r.age.max(INITIAL_AGE) } else { 0 };
        let count = self.events.sleepers.get(handle.index()).ok_or(event::Error::InvalidHandle)?;
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
                    Timeout::Millis(ceil_ms(d - now))
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
                if let Ok(r) = self.events.table.lock().get_mut(handle) {
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
        let live = self.events.generations.get(index).map(|g| g.load(Ordering::Acquire));
        if live != Some(handle.generation()) {
            return Err(event::Error::InvalidHandle.into());
        }
        // Pairs with the fence in `wait_signal` (see the module docs).
        fence(Ordering::SeqCst);
        let sleeping = self.events.sleepers.get(index).map_or(0, |s| s.load(Ordering::SeqCst));
        if sleeping == 0 {
            return Ok(false);
        }
        self.set_event(handle)?;
        Ok(true)
    }

    /// Signal waiters of `handle` blocked (or about to block) in the kernel.
    pub fn signal_sleepers(&self, handle: EventHandle) -> u32 {
        self.events.sleepers.get(handle.index()).map_or(0, |s| s.load(Ordering::SeqCst))
    }

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
        let id = self.events.callbacks.lock().register(filter, callback)?;
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
        let r = self.events.callbacks.lock().unregister(id)?;
        self.wake_dispatcher();
        Ok(r)
    }

    /// Whether a call of callback `id` is running now.
    pub fn callback_running(&self, id: CallbackId) -> bool {
        self.events.callbacks.lock().is_running(id)
    }

    /// Names a signal event that registration changes (and [`Kfd::wake_dispatcher`]) set, so a
    /// thread blocked in [`Kfd::poll`] rebuilds its wait; `poll` always waits on it too and
    /// never reports it.
    pub fn set_dispatch_wake(&self, event: Option<EventHandle>) {
        self.events.wake.store(event.map_or(0, EventHandle::to_raw), Ordering::Release);
    }

    /// Sets the dispatcher's wake event, if any (errors are ignored: the dispatcher then picks
    /// changes up at its next wait).
    pub fn wake_dispatcher(&self) {
        if let Some(h) = EventHandle::from_raw(self.events.wake.load(Ordering::Acquire)) {
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
        let wake = EventHandle::from_raw(self.events.wake.load(Ordering::Acquire));
        let mut filters = [None; CALLBACK_CAPACITY];
        for (slot, f) in filters.iter_mut().zip(self.events.callbacks.lock().filters()) {
            *slot = Some(f);
        }
        let mut set: WaitSet<MAX_WAIT_EVENTS> = WaitSet::new();
        let mut out = Dispatched::default();
        {
            let table = self.events.table.lock();
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
                    out.skipped += 1;
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
                let mut table = self.events.table.lock();
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
            out.fired += 1;
            out.calls += self.dispatch(&note);
        }
        Ok(out)
    }

    /// Runs the callbacks for one notification; returns how many ran.
    fn dispatch(&self, note: &Notification) -> usize {
        let mut ids = [CallbackId::NONE; CALLBACK_CAPACITY];
        let n = self.events.callbacks.lock().collect(note.event, note.event_type, &mut ids);
        let mut calls = 0;
        for id in ids.iter().take(n).copied() {
            let mut guard = CallGuard { registry: &self.events.callbacks, id, called: false };
            let callback = self.events.callbacks.lock().begin_call(id);
            if let Some(callback) = callback {
                guard.called = true;
                callback(note);
                calls += 1;
            }
        }
        calls
    }
}
