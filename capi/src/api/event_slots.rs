//! Where the library keeps the `HsaEvent`s it hands out.
//!
//! Upstream `malloc`s each `HsaEvent` and trusts any pointer it is given back. Here every event
//! lives in a static table, at the slot of the facade's event table that holds it, beside the
//! facade's generation-checked handle. A pointer is accepted only when it points at the event
//! of a slot that holds a live event, so a foreign pointer (or one to a destroyed event whose
//! slot is free) is rejected with `HSAKMT_STATUS_INVALID_HANDLE`, never dereferenced.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU64, Ordering};

use hsakmt_core::config::DEFAULT_EVENT_CAPACITY;
use hsakmt_core::event::EventHandle;

use crate::types::HsaEvent;

/// One event and the handle it stands for.
struct Slot {
    /// The C-visible event (C callers read it; the library writes it).
    event: UnsafeCell<HsaEvent>,
    /// `EventHandle::to_raw` of the live event, 0 when the slot is free.
    handle: AtomicU64,
}

// SAFETY: `event` is written only by the thread that publishes the slot (before the release
// store of `handle`, while no other thread can name it) and by waits that report exception data
// into it, as upstream writes into the caller's `HsaEvent`; the C caller reads it like any
// `HsaEvent` it was given.
unsafe impl Sync for Slot {}

static SLOTS: [Slot; DEFAULT_EVENT_CAPACITY] =
    [const { Slot { event: UnsafeCell::new(HsaEvent::zeroed()), handle: AtomicU64::new(0) } };
        DEFAULT_EVENT_CAPACITY];

/// Stores `event` in the slot of `handle` and returns the pointer to give the caller.
pub(super) fn publish(handle: EventHandle, event: HsaEvent) -> Option<*mut HsaEvent> {
    let slot = SLOTS.get(handle.index())?;
    let p = slot.event.get();
    // SAFETY: the facade just created the event in this table slot, so no live event (and no
    // pointer the library would accept) names the slot until the store below publishes it.
    unsafe { p.write(event) };
    slot.handle.store(handle.to_raw(), Ordering::Release);
    Some(p)
}

/// The slot index and handle of the event `p` points to, or `None` for a pointer the library
/// did not hand out (or whose event was destroyed).
pub(super) fn lookup(p: *const HsaEvent) -> Option<(usize, EventHandle)> {
    let base = SLOTS.as_ptr() as usize + core::mem::offset_of!(Slot, event);
    let offset = (p as usize).checked_sub(base)?;
    let stride = core::mem::size_of::<Slot>();
    if !offset.is_multiple_of(stride) {
        return None;
    }
    let index = offset / stride;
    let raw = SLOTS.get(index)?.handle.load(Ordering::Acquire);
    Some((index, EventHandle::from_raw(raw)?))
}

/// The event of slot `index` (for writes of exception data).
pub(super) fn event_ptr(index: usize) -> Option<*mut HsaEvent> {
    SLOTS.get(index).map(|s| s.event.get())
}

/// Frees the slot of a destroyed event (unless a new event took it meanwhile).
pub(super) fn retire(index: usize, handle: EventHandle) {
    if let Some(s) = SLOTS.get(index) {
        let _ = s.handle.compare_exchange(handle.to_raw(), 0, Ordering::AcqRel, Ordering::Relaxed);
    }
}

/// Frees every slot (the facade destroyed or forgot every event).
pub(super) fn clear() {
    for s in &SLOTS {
        s.handle.store(0, Ordering::Release);
    }
}
