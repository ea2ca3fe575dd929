//! HSA signals as AMD lays them out in memory (`amd_signal_t`), reached through
//! [`SharedMemory`].
//!
//! # Layout
//! From ROCr's `runtime/hsa-runtime/inc/amd_hsa_signal.h` (`amd_signal_s`, aligned to
//! `AMD_SIGNAL_ALIGN_BYTES` = 64, size 64):
//!
//! | bytes | field | access width here |
//! |---|---|---|
//! | 0..8   | `kind` (`amd_signal_kind64_t`: 0 invalid, 1 user, −1 doorbell, −2 legacy doorbell) | u64 |
//! | 8..16  | `value` (i64), or `hardware_doorbell_ptr` for doorbell signals | u64 |
//! | 16..24 | `event_mailbox_ptr` | u64 |
//! | 24..28 | `event_id` | u32 |
//! | 28..32 | `reserved1` | u32 |
//! | 32..40 | `start_ts` | u64 |
//! | 40..48 | `end_ts` | u64 |
//! | 48..56 | `queue_ptr` (`amd_queue_v2_t*`) / `reserved2` | u64 |
//! | 56..64 | `reserved3[2]` | u64 |
//!
//! The signal *handle* (`hsa_signal_t.handle`, what AQL packets carry in `completion_signal` and
//! `dep_signal`) is the address of this structure.
//!
//! # Completion contract (CP ↔ host)
//! When a packet with a non-zero completion signal completes, the packet processor (the real CP,
//! or the simulator's, which must implement the same contract with [`Signal::cp_complete`]):
//! 1. atomically decrements `value` by 1 (after the packet's release fence, so memory the packet
//!    wrote is visible to whoever observes the new value);
//! 2. if `event_mailbox_ptr` ≠ 0, writes `event_id` (as a 32-bit value) to the mailbox address —
//!    a slot of the KFD event page (`HsaEvent.EventData.HWData2`) — and raises an interrupt;
//!    amdkfd then signals the event with that id, waking `WAIT_EVENTS` callers.
//!
//! Host writers (`hsa_signal_store`/`subtract`/…) only modify `value`; waking sleepers is the
//! caller's business (`SET_EVENT` when someone waits), as in ROCr's `InterruptSignal`.

use core::fmt;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::error::{Error, ErrorKind};
use crate::platform::SharedMemory;

/// Size of an `amd_signal_t` in bytes.
pub const SIGNAL_SIZE: usize = 64;
/// Required alignment of an `amd_signal_t` (`AMD_SIGNAL_ALIGN_BYTES`).
pub const SIGNAL_ALIGN: usize = 64;

/// Byte offset of `kind`.
pub const KIND_OFFSET: usize = 0;
/// Byte offset of `value` (and of `hardware_doorbell_ptr`).
pub const VALUE_OFFSET: usize = 8;
/// Byte offset of `event_mailbox_ptr`.
pub const EVENT_MAILBOX_PTR_OFFSET: usize = 16;
/// Byte offset of `event_id`.
pub const EVENT_ID_OFFSET: usize = 24;
/// Byte offset of `start_ts`.
pub const START_TS_OFFSET: usize = 32;
/// Byte offset of `end_ts`.
pub const END_TS_OFFSET: usize = 40;
/// Byte offset of `queue_ptr`.
pub const QUEUE_PTR_OFFSET: usize = 48;

/// `amd_signal_kind_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(i64)]
pub enum SignalKind {
    /// `AMD_SIGNAL_KIND_INVALID` (0): not initialised / destroyed.
    Invalid = 0,
    /// `AMD_SIGNAL_KIND_USER` (1): an ordinary signal; `value` is the payload.
    User = 1,
    /// `AMD_SIGNAL_KIND_DOORBELL` (−1): a queue's doorbell signal; the `value` slot holds the
    /// address of the 64-bit hardware doorbell.
    Doorbell = -1,
    /// `AMD_SIGNAL_KIND_LEGACY_DOORBELL` (−2): gfx7/8 32-bit doorbell.
    LegacyDoorbell = -2,
}

impl SignalKind {
    /// The kind for a raw `kind` word.
    ///
    /// # Errors
    /// [`SignalError::UnknownKind`] for any other value.
    pub const fn from_raw(raw: i64) -> Result<Self, SignalError> {
        match raw {
            0 => Ok(Self::Invalid),
            1 => Ok(Self::User),
            -1 => Ok(Self::Doorbell),
            -2 => Ok(Self::LegacyDoorbell),
            other => Err(SignalError::UnknownKind(other)),
        }
    }
}

/// Where a completion interrupt goes: the KFD event-page slot to write and the event id to
/// write there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Mailbox {
    /// GPU/CPU address of the event slot (`HWData2` of the KFD event), non-zero.
    pub address: u64,
    /// The KFD event id (`HWData1`).
    pub event_id: u32,
}

/// What to write into a fresh signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SignalInit {
    /// A user signal with an initial value and, to raise an interrupt event on completion, a
    /// mailbox.
    User {
        /// Initial value.
        value: i64,
        /// Event mailbox, or `None` for a busy-wait-only signal.
        mailbox: Option<Mailbox>,
    },
    /// A queue's doorbell signal pointing at its hardware doorbell.
    Doorbell {
        /// Address of the 64-bit doorbell.
        doorbell_address: u64,
    },
}

/// Result of [`Signal::cp_complete`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Completion {
    /// The value after the decrement.
    pub value: i64,
    /// The mailbox to write `event_id` to and raise an interrupt for, when set.
    pub interrupt: Option<Mailbox>,
}

/// Why a signal view could not be made or read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SignalError {
    /// The signal's address is not 64-byte aligned.
    Misaligned,
    /// The 64 bytes do not lie inside the mapping.
    OutOfBounds,
    /// The `kind` word holds no known kind.
    UnknownKind(i64),
}

impl fmt::Display for SignalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Misaligned => f.write_str("signal address is not 64-byte aligned"),
            Self::OutOfBounds => f.write_str("signal lies outside its mapping"),
            Self::UnknownKind(k) => write!(f, "unknown signal kind {k}"),
        }
    }
}

impl Error for SignalError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::Misaligned => ErrorKind::Misaligned,
            Self::OutOfBounds => ErrorKind::InvalidArgument,
            Self::UnknownKind(_) => ErrorKind::Malformed,
        }
    }
}

impl core::error::Error for SignalError {}

/// A typed view of one `amd_signal_t` inside a [`SharedMemory`] mapping.
///
/// Every operation is a single atomic access of the width the layout table above gives; none
/// allocates, locks or blocks.
pub struct Signal<'a, M: SharedMemory> {
    kind: &'a AtomicU64,
    value: &'a AtomicU64,
    mailbox: &'a AtomicU64,
    event_id: &'a AtomicU32,
    reserved1: &'a AtomicU32,
    start_ts: &'a AtomicU64,
    end_ts: &'a AtomicU64,
    queue_ptr: &'a AtomicU64,
    reserved3: &'a AtomicU64,
    handle: u64,
    _mem: core::marker::PhantomData<&'a M>,
}

impl<M: SharedMemory> Clone for Signal<'_, M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M: SharedMemory> Copy for Signal<'_, M> {}

impl<M: SharedMemory> fmt::Debug for Signal<'_, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signal")
            .field("handle", &self.handle)
            .field("kind", &self.kind.load(Ordering::Relaxed))
            .field("value", &self.load_relaxed())
            .finish()
    }
}

/// The `width`-byte word at byte `field` of the signal at byte `offset`.
fn word<A>(words: &[A], offset: usize, field: usize, width: usize) -> Result<&A, SignalError> {
    let byte = offset.checked_add(field).ok_or(SignalError::OutOfBounds)?;
    byte.checked_div(width).and_then(|i| words.get(i)).ok_or(SignalError::OutOfBounds)
}

impl<'a, M: SharedMemory> Signal<'a, M> {
    /// A view of the signal at byte `offset` of `mem`.
    ///
    /// # Errors
    /// [`SignalError::Misaligned`] unless `mem.addr() + offset` is 64-byte aligned;
    /// [`SignalError::OutOfBounds`] unless the 64 bytes lie inside `mem`.
    pub fn new(mem: &'a M, offset: usize) -> Result<Self, SignalError> {
        let handle = mem.addr().wrapping_add(offset as u64);
        if !handle.is_multiple_of(SIGNAL_ALIGN as u64) {
            return Err(SignalError::Misaligned);
        }
        if offset.checked_add(SIGNAL_SIZE).is_none_or(|end| end > mem.len()) {
            return Err(SignalError::OutOfBounds);
        }
        let (q, d) = (mem.u64s(), mem.u32s());
        Ok(Signal {
            kind: word(q, offset, KIND_OFFSET, 8)?,
            value: word(q, offset, VALUE_OFFSET, 8)?,
            mailbox: word(q, offset, EVENT_MAILBOX_PTR_OFFSET, 8)?,
            event_id: word(d, offset, EVENT_ID_OFFSET, 4)?,
            reserved1: word(d, offset, EVENT_ID_OFFSET.wrapping_add(4), 4)?,
            start_ts: word(q, offset, START_TS_OFFSET, 8)?,
            end_ts: word(q, offset, END_TS_OFFSET, 8)?,
            queue_ptr: word(q, offset, QUEUE_PTR_OFFSET, 8)?,
            reserved3: word(q, offset, 56, 8)?,
            handle,
            _mem: core::marker::PhantomData,
        })
    }

    /// The signal handle: the address of the `amd_signal_t`.
    #[must_use]
    #[inline]
    pub const fn handle(&self) -> u64 {
        self.handle
    }

    /// Writes every field: kind, value (or doorbell pointer), mailbox and event id, zero
    /// timestamps, queue pointer and reserved words. The value is stored last, with release
    /// ordering, so a thread that acquires it sees an initialised signal.
    pub fn init(&self, init: &SignalInit) {
        let (kind, value, mailbox) = match *init {
            SignalInit::User { value, mailbox } => (SignalKind::User, value as u64, mailbox),
            SignalInit::Doorbell { doorbell_address } => {
                (SignalKind::Doorbell, doorbell_address, None)
            }
        };
        let (mb, id) = mailbox.map_or((0, 0), |m| (m.address, m.event_id));
        self.kind.store(kind as i64 as u64, Ordering::Relaxed);
        self.mailbox.store(mb, Ordering::Relaxed);
        self.event_id.store(id, Ordering::Relaxed);
        self.reserved1.store(0, Ordering::Relaxed);
        self.start_ts.store(0, Ordering::Relaxed);
        self.end_ts.store(0, Ordering::Relaxed);
        self.queue_ptr.store(0, Ordering::Relaxed);
        self.reserved3.store(0, Ordering::Relaxed);
        self.value.store(value, Ordering::Release);
    }

    /// Marks the signal destroyed (`kind` = invalid, mailbox cleared).
    pub fn invalidate(&self) {
        self.mailbox.store(0, Ordering::Relaxed);
        self.kind.store(SignalKind::Invalid as i64 as u64, Ordering::Release);
    }

    /// The signal's kind.
    ///
    /// # Errors
    /// [`SignalError::UnknownKind`] when the `kind` word holds garbage.
    pub fn kind(&self) -> Result<SignalKind, SignalError> {
        SignalKind::from_raw(self.kind.load(Ordering::Acquire) as i64)
    }

    /// The event mailbox, when one is set.
    #[must_use]
    pub fn mailbox(&self) -> Option<Mailbox> {
        let address = self.mailbox.load(Ordering::Relaxed);
        (address != 0).then(|| Mailbox { address, event_id: self.event_id.load(Ordering::Relaxed) })
    }

    /// Sets or clears the event mailbox.
    pub fn set_mailbox(&self, mailbox: Option<Mailbox>) {
        let (mb, id) = mailbox.map_or((0, 0), |m| (m.address, m.event_id));
        self.event_id.store(id, Ordering::Relaxed);
        self.mailbox.store(mb, Ordering::Release);
    }

    /// `hsa_signal_load_scacquire`.
    #[must_use]
    #[inline]
    pub fn load_acquire(&self) -> i64 {
        self.value.load(Ordering::Acquire) as i64
    }

    /// `hsa_signal_load_relaxed`.
    #[must_use]
    #[inline]
    pub fn load_relaxed(&self) -> i64 {
        self.value.load(Ordering::Relaxed) as i64
    }

    /// `hsa_signal_store_screlease`.
    #[inline]
    pub fn store_release(&self, value: i64) {
        self.value.store(value as u64, Ordering::Release);
    }

    /// `hsa_signal_store_relaxed`.
    #[inline]
    pub fn store_relaxed(&self, value: i64) {
        self.value.store(value as u64, Ordering::Relaxed);
    }

    /// `hsa_signal_add_*`: adds `delta` (wrapping) and returns the previous value.
    #[inline]
    pub fn add(&self, delta: i64, order: Ordering) -> i64 {
        self.value.fetch_add(delta as u64, order) as i64
    }

    /// `hsa_signal_subtract_*`: subtracts `delta` (wrapping) and returns the previous value.
    #[inline]
    pub fn subtract(&self, delta: i64, order: Ordering) -> i64 {
        self.value.fetch_sub(delta as u64, order) as i64
    }

    /// `hsa_signal_exchange_*`: stores `value`, returns the previous value.
    #[inline]
    pub fn exchange(&self, value: i64, order: Ordering) -> i64 {
        self.value.swap(value as u64, order) as i64
    }

    /// `hsa_signal_cas_*`: stores `new` if the value is `current`. Returns the previous value:
    /// `Ok` when the exchange happened, `Err` with the observed value when it did not. The
    /// failure ordering is `Acquire` when `success` includes acquire, else `Relaxed`.
    ///
    /// # Errors
    /// `Err(observed)` when the value was not `current`.
    #[inline]
    pub fn compare_exchange(&self, current: i64, new: i64, success: Ordering) -> Result<i64, i64> {
        let failure = match success {
            Ordering::Acquire | Ordering::AcqRel => Ordering::Acquire,
            Ordering::SeqCst => Ordering::SeqCst,
            _ => Ordering::Relaxed,
        };
        self.value
            .compare_exchange(current as u64, new as u64, success, failure)
            .map(|v| v as i64)
            .map_err(|v| v as i64)
    }

    /// The doorbell address of a doorbell-kind signal (the `value` slot reinterpreted).
    #[must_use]
    pub fn hardware_doorbell_ptr(&self) -> u64 {
        self.value.load(Ordering::Acquire)
    }

    /// Profiling timestamps `(start_ts, end_ts)`.
    #[must_use]
    pub fn timestamps(&self) -> (u64, u64) {
        (self.start_ts.load(Ordering::Relaxed), self.end_ts.load(Ordering::Relaxed))
    }

    /// Records profiling timestamps (the CP does this when profiling is enabled).
    pub fn set_timestamps(&self, start: u64, end: u64) {
        self.start_ts.store(start, Ordering::Relaxed);
        self.end_ts.store(end, Ordering::Relaxed);
    }

    /// The `queue_ptr` field.
    #[must_use]
    pub fn queue_ptr(&self) -> u64 {
        self.queue_ptr.load(Ordering::Relaxed)
    }

    /// Sets the `queue_ptr` field (the `amd_queue_t` a doorbell signal belongs to).
    pub fn set_queue_ptr(&self, queue: u64) {
        self.queue_ptr.store(queue, Ordering::Relaxed);
    }

    /// The packet processor's side of completion (see the module docs): decrements the value
    /// by 1 with acquire-release ordering and reports the mailbox to write `event_id` to and
    /// interrupt for, if any. The simulator's CP calls this for each completed packet that
    /// carries a completion signal.
    pub fn cp_complete(&self) -> Completion {
        let value = (self.value.fetch_sub(1, Ordering::AcqRel) as i64).wrapping_sub(1);
        Completion { value, interrupt: self.mailbox() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::test_mem::TestMem;

    #[test]
    fn layout_and_ops() {
        let mem = TestMem::new(256);
        assert_eq!(Signal::new(&mem, 8).unwrap_err(), SignalError::Misaligned);
        assert_eq!(Signal::new(&mem, 256).unwrap_err(), SignalError::OutOfBounds);
        let s = Signal::new(&mem, 64).unwrap();
        assert_eq!(s.handle(), mem.addr() + 64);
        s.init(&SignalInit::User {
            value: 3,
            mailbox: Some(Mailbox { address: 0x1000, event_id: 42 }),
        });
        assert_eq!(mem.u64s()[8].load(Ordering::Relaxed), 1); // kind @0
        assert_eq!(mem.u64s()[9].load(Ordering::Relaxed), 3); // value @8
        assert_eq!(mem.u64s()[10].load(Ordering::Relaxed), 0x1000); // mailbox @16
        assert_eq!(mem.u32s()[16 + 6].load(Ordering::Relaxed), 42); // event_id @24
        assert_eq!(s.kind(), Ok(SignalKind::User));
        assert_eq!(s.subtract(1, Ordering::AcqRel), 3);
        assert_eq!(s.add(5, Ordering::Relaxed), 2);
        assert_eq!(s.exchange(-1, Ordering::AcqRel), 7);
        assert_eq!(s.compare_exchange(-1, 1, Ordering::AcqRel), Ok(-1));
        assert_eq!(s.compare_exchange(-1, 9, Ordering::AcqRel), Err(1));
        let c = s.cp_complete();
        assert_eq!(
            c,
            Completion { value: 0, interrupt: Some(Mailbox { address: 0x1000, event_id: 42 }) }
        );
        assert_eq!(s.load_acquire(), 0);
        s.set_mailbox(None);
        assert_eq!(s.cp_complete().interrupt, None);
        assert_eq!(s.load_relaxed(), -1);
        s.set_timestamps(5, 6);
        assert_eq!(s.timestamps(), (5, 6));
        s.invalidate();
        assert_eq!(s.kind(), Ok(SignalKind::Invalid));
        let d = Signal::new(&mem, 128).unwrap();
        d.init(&SignalInit::Doorbell { doorbell_address: 0xD000 });
        assert_eq!(d.kind(), Ok(SignalKind::Doorbell));
        assert_eq!(mem.u64s()[16].load(Ordering::Relaxed), u64::MAX); // -1
        assert_eq!(d.hardware_doorbell_ptr(), 0xD000);
        mem.u64s()[16].store(7, Ordering::Relaxed);
        assert_eq!(d.kind(), Err(SignalError::UnknownKind(7)));
    }
}
