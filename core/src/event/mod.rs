//! Events: the table of a process's KFD events, wait sets, the exception data the kernel reports,
//! and the callback registry — pure bookkeeping, no I/O and no allocation. The device facade
//! ([`crate::device::Kfd`]) wires them to the kernel.
//!
//! # Kernel facts this module encodes (amdkfd `kfd_events.c`, `kfd_chardev.c`)
//!
//! - Every event has a 32-bit id. **Signal** and **debug** events take ids `1..4096`; the id is
//!   also the event's *slot* in the 4096-slot event page (`KFD_SIGNAL_EVENT_LIMIT` slots of 8
//!   bytes, 32 KiB) and the *trigger data* a GPU sends with the interrupt. Id 0 is reserved, so
//!   at most 4095 signal events exist at once (`ENOSPC` beyond). Other types take ids from
//!   [`FIRST_NONSIGNAL_EVENT_ID`] up. Ids are reused as soon as an event is destroyed, which is
//!   why user-space handles carry a generation ([`EventHandle`]).
//! - The *mailbox* of a signal event is its slot: a GPU writes a value there (any value but
//!   [`UNSIGNALED_EVENT_SLOT`]) and raises an interrupt; the kernel's interrupt handler writes
//!   the slot back to [`UNSIGNALED_EVENT_SLOT`] and sets the event.
//! - Only signal events may be set or reset from the CPU (`EINVAL` otherwise).
//! - A *satisfied wait consumes an auto-reset event*: when a wait finds the event signaled it
//!   clears the flag (for auto-reset events) as it registers, even if a wait-all then times out;
//!   setting an auto-reset event that has waiters wakes them all and leaves it unsignaled. A
//!   manual-reset event stays signaled until reset.
//! - *Event age* (KFD 1.14): every set increments the event's age (starting at 1 on creation,
//!   never wrapping back to 0 or 1). A wait that passes `last_event_age != 0` for a signal event
//!   returns at once when the age differs, and gets the current age back when it completes; age
//!   0 disables the check.
//! - A wait takes any number of events (the kernel has no limit of its own beyond its
//!   allocation); libhsakmt documents 64 as the maximum of `hsaKmtWaitOnMultipleEvents`, the
//!   default capacity of [`WaitSet`]. Timeout 0 polls, `0xffffffff` waits forever; a destroyed
//!   event fails the wait (`EIO`, `KFD_IOC_WAIT_RESULT_FAIL`).
//! - On completion the kernel copies memory-exception data (and, in recent kernels,
//!   HW-exception data) of every activated event into the wait array; see [`EventData`].
//!
//! # What "query" means here
//!
//! The kernel offers no way to read an event's state: a zero-timeout wait is the only probe, and
//! it consumes an auto-reset event. [`EventTable`] therefore records what the process *has
//! learned*: the newest age any wait returned (ages only grow, so "fired since age `a`" is
//! `age > a`), how many firings waits observed, and, for signal events, the event-page slot a
//! caller can inspect for a GPU write the kernel has not serviced yet. See
//! [`crate::device::Kfd::query_event`].

mod callback;
mod data;
mod table;
mod wait;

#[cfg(test)]
mod tests;

use core::fmt;

pub use callback::{
    Callback, CallbackId, CallbackRegistry, DEFAULT_CALLBACK_CAPACITY, Filter, Notification,
    Unregistered,
};
pub use data::{
    EventData, FaultFlags, HwException, MemoryError, MemoryFault, ResetCause, ResetType, decode,
};
pub use table::{DEFAULT_EVENT_CAPACITY, EventRecord, EventTable};
pub use wait::{Fired, MAX_WAIT_EVENTS, WaitSet};

use crate::error::ErrorKind;
use crate::uapi;

/// Slots of the event page (`KFD_SIGNAL_EVENT_LIMIT`).
pub const EVENT_SLOTS: u32 = uapi::KFD_SIGNAL_EVENT_LIMIT;

/// Size in bytes of the event page: one 64-bit mailbox per slot (32 KiB).
pub const EVENT_PAGE_SIZE: u64 = EVENT_SLOTS as u64 * 8;

/// Slots old kernels let user space map (one page of 256 slots used); libhsakmt falls back to
/// this when mapping the whole page fails.
pub const LEGACY_EVENT_SLOTS: u32 = 256;

/// The value of an idle mailbox (`UNSIGNALED_EVENT_SLOT`, `kfd_events.h`); anything else means
/// a GPU wrote the slot and the kernel has not yet serviced the interrupt.
pub const UNSIGNALED_EVENT_SLOT: u64 = u64::MAX;

/// First id the kernel gives an event that is neither a signal nor a debug event
/// (`KFD_FIRST_NONSIGNAL_EVENT_ID`).
pub const FIRST_NONSIGNAL_EVENT_ID: u32 = 0x4000_0000;

/// The `/dev/kfd` mmap offset of a kernel-allocated event page (`KFD_MMAP_TYPE_EVENTS`, type 2
/// in bits 62–63; a private `kfd_priv.h` value the kernel returns in `event_page_offset`).
pub const KFD_MMAP_TYPE_EVENTS: u64 = 2 << 62;

/// The age of a freshly created event (KFD ≥ 1.14).
pub const INITIAL_AGE: u64 = 1;

/// The mailbox address of event-page slot `slot` when the page starts at `page_base`, or `None`
/// for a slot outside the page.
#[must_use]
pub const fn mailbox_address(page_base: u64, slot: u32) -> Option<u64> {
    if slot >= EVENT_SLOTS {
        return None;
    }
    // `slot` < 4096: the product is small.
    page_base.checked_add((slot as u64).saturating_mul(8))
}

/// The kernel's event types (`KFD_IOC_EVENT_*`, matching `HSA_EVENTTYPE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum EventType {
    /// A signal: set from the CPU or by a GPU through its mailbox.
    Signal,
    /// The topology changed (node added or removed).
    NodeChange,
    /// A device started or stopped.
    DeviceStateChange,
    /// A GPU was reset (whole GPU or one engine).
    HwException,
    /// A system event.
    System,
    /// A debug event (signalled like a signal event, but only by a GPU).
    Debug,
    /// A profiling event.
    Profile,
    /// A queue event.
    Queue,
    /// A GPU memory access fault.
    Memory,
}

impl EventType {
    /// Every type, in code order.
    pub const ALL: [EventType; 9] = [
        Self::Signal,
        Self::NodeChange,
        Self::DeviceStateChange,
        Self::HwException,
        Self::System,
        Self::Debug,
        Self::Profile,
        Self::Queue,
        Self::Memory,
    ];

    /// The `KFD_IOC_EVENT_*` code.
    #[must_use]
    pub const fn code(self) -> u32 {
        match self {
            Self::Signal => uapi::KFD_IOC_EVENT_SIGNAL,
            Self::NodeChange => uapi::KFD_IOC_EVENT_NODECHANGE,
            Self::DeviceStateChange => uapi::KFD_IOC_EVENT_DEVICESTATECHANGE,
            Self::HwException => uapi::KFD_IOC_EVENT_HW_EXCEPTION,
            Self::System => uapi::KFD_IOC_EVENT_SYSTEM_EVENT,
            Self::Debug => uapi::KFD_IOC_EVENT_DEBUG_EVENT,
            Self::Profile => uapi::KFD_IOC_EVENT_PROFILE_EVENT,
            Self::Queue => uapi::KFD_IOC_EVENT_QUEUE_EVENT,
            Self::Memory => uapi::KFD_IOC_EVENT_MEMORY,
        }
    }

    /// The type with `KFD_IOC_EVENT_*` code `code`.
    #[must_use]
    pub const fn from_code(code: u32) -> Option<Self> {
        match code {
            uapi::KFD_IOC_EVENT_SIGNAL => Some(Self::Signal),
            uapi::KFD_IOC_EVENT_NODECHANGE => Some(Self::NodeChange),
            uapi::KFD_IOC_EVENT_DEVICESTATECHANGE => Some(Self::DeviceStateChange),
            uapi::KFD_IOC_EVENT_HW_EXCEPTION => Some(Self::HwException),
            uapi::KFD_IOC_EVENT_SYSTEM_EVENT => Some(Self::System),
            uapi::KFD_IOC_EVENT_DEBUG_EVENT => Some(Self::Debug),
            uapi::KFD_IOC_EVENT_PROFILE_EVENT => Some(Self::Profile),
            uapi::KFD_IOC_EVENT_QUEUE_EVENT => Some(Self::Queue),
            uapi::KFD_IOC_EVENT_MEMORY => Some(Self::Memory),
            _ => None,
        }
    }

    /// Whether events of this type get an event-page slot (signal and debug events).
    #[must_use]
    pub const fn has_slot(self) -> bool {
        matches!(self, Self::Signal | Self::Debug)
    }

    /// Whether the kernel lets the CPU set and reset events of this type (signal events only).
    #[must_use]
    pub const fn is_cpu_settable(self) -> bool {
        matches!(self, Self::Signal)
    }

    /// Whether waits on events of this type can track the event age (signal events, KFD 1.14).
    #[must_use]
    pub const fn has_age(self) -> bool {
        matches!(self, Self::Signal)
    }
}

/// How an event returns to the unsignaled state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ResetMode {
    /// Stays signaled until reset (`RESET_EVENT`).
    Manual,
    /// A satisfied wait unsignals it (the kernel's `auto_reset`).
    Auto,
}

/// A generation-checked reference to an event of an [`EventTable`].
///
/// The kernel reuses event ids at once; a handle names one event of the table for its whole
/// life and is rejected ([`Error::InvalidHandle`]) after the event is destroyed.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EventHandle {
    index: u16,
    generation: u32,
}

impl EventHandle {
    pub(crate) const fn new(index: u16, generation: u32) -> Self {
        Self { index, generation }
    }

    /// The table slot this handle refers to.
    #[must_use]
    pub const fn index(self) -> usize {
        self.index as usize
    }

    /// The slot's generation when the handle was made (never 0).
    #[must_use]
    pub const fn generation(self) -> u32 {
        self.generation
    }

    /// The handle as one integer (for C callers and logs): generation in the high 32 bits.
    #[must_use]
    pub const fn to_raw(self) -> u64 {
        ((self.generation as u64) << 32) | self.index as u64
    }

    /// The handle [`EventHandle::to_raw`] made, or `None` for a value no table hands out.
    #[must_use]
    pub const fn from_raw(raw: u64) -> Option<Self> {
        let generation = (raw >> 32) as u32;
        let index = raw & 0xFFFF_FFFF;
        if generation == 0 || index > u16::MAX as u64 {
            return None;
        }
        Some(Self { index: index as u16, generation })
    }
}

impl fmt::Debug for EventHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EventHandle({}#{})", self.index, self.generation)
    }
}

/// How long a wait may block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Timeout {
    /// Do not block: report the state now (`KFD_EVENT_TIMEOUT_IMMEDIATE`).
    Immediate,
    /// Block at most this many milliseconds (`0xffffffff` means the kernel's largest finite
    /// timeout, `0xfffffffe`, not infinity).
    Millis(u32),
    /// Block until the condition holds (`KFD_EVENT_TIMEOUT_INFINITE`).
    Infinite,
}

impl Timeout {
    /// The kernel's infinite timeout value.
    pub const KERNEL_INFINITE: u32 = 0xFFFF_FFFF;

    /// The `timeout` field of `kfd_ioctl_wait_events_args`.
    #[must_use]
    pub const fn to_kernel(self) -> u32 {
        match self {
            Self::Immediate => 0,
            Self::Millis(Self::KERNEL_INFINITE) => Self::KERNEL_INFINITE - 1,
            Self::Millis(ms) => ms,
            Self::Infinite => Self::KERNEL_INFINITE,
        }
    }

    /// The timeout in nanoseconds, `None` for [`Timeout::Infinite`].
    #[must_use]
    pub const fn as_nanos(self) -> Option<u64> {
        match self {
            Self::Immediate => Some(0),
            // A 32-bit count of milliseconds in nanoseconds fits 64 bits.
            Self::Millis(ms) => Some((ms as u64).saturating_mul(1_000_000)),
            Self::Infinite => None,
        }
    }
}

/// Whether a wait is satisfied by any of its events or needs all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WaitMode {
    /// One signaled event satisfies the wait.
    Any,
    /// Every event must be signaled.
    All,
}

/// How a wait ended (`KFD_IOC_WAIT_RESULT_COMPLETE` / `_TIMEOUT`; `_FAIL` is an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WaitResult {
    /// The wait condition held.
    Complete,
    /// The timeout expired first (libhsakmt's `HSAKMT_STATUS_WAIT_TIMEOUT`).
    TimedOut,
}

/// An error of the event bookkeeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// The handle names no live event (never valid, destroyed, or being destroyed).
    InvalidHandle,
    /// The event table is full.
    TableFull,
    /// The wait set is full.
    WaitSetFull,
    /// A wait needs at least one event.
    EmptyWaitSet,
    /// The callback registry is full.
    RegistryFull,
    /// The callback id names no registered callback.
    InvalidCallback,
    /// The operation needs a CPU-settable (signal) event.
    NotCpuSettable(EventType),
    /// An event age was given for an event that has none (not a signal event), or on a kernel
    /// without event ages (KFD < 1.14).
    NoEventAge,
    /// An event of the wait was destroyed while it waited (`KFD_IOC_WAIT_RESULT_FAIL`).
    Destroyed,
    /// The kernel returned a value this library cannot use (an id or slot out of range, an
    /// unknown wait result).
    Unexpected,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidHandle => f.write_str("the event handle names no live event"),
            Self::TableFull => f.write_str("the event table is full"),
            Self::WaitSetFull => f.write_str("the wait set is full"),
            Self::EmptyWaitSet => f.write_str("a wait needs at least one event"),
            Self::RegistryFull => f.write_str("the callback registry is full"),
            Self::InvalidCallback => f.write_str("the callback id names no registered callback"),
            Self::NotCpuSettable(t) => {
                write!(f, "{t:?} events cannot be set or reset from the CPU (signal events only)")
            }
            Self::NoEventAge => {
                f.write_str("event ages exist only for signal events on KFD 1.14 or newer")
            }
            Self::Destroyed => f.write_str("an event was destroyed while a wait used it"),
            Self::Unexpected => f.write_str("the kernel returned an unexpected event value"),
        }
    }
}

impl crate::error::Error for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidHandle | Self::InvalidCallback => ErrorKind::InvalidHandle,
            Self::TableFull | Self::WaitSetFull | Self::RegistryFull => {
                ErrorKind::CapacityExhausted
            }
            Self::EmptyWaitSet | Self::NotCpuSettable(_) | Self::NoEventAge => {
                ErrorKind::InvalidArgument
            }
            Self::Destroyed => ErrorKind::WaitFailed,
            Self::Unexpected => ErrorKind::Malformed,
        }
    }
}

impl core::error::Error for Error {}
