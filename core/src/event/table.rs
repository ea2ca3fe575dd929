//! [`EventTable`]: the process's events in fixed-capacity, generation-checked slots (a
//! [`SlotTable`]).

use crate::event::{Error, EventHandle, EventType, ResetMode};
use crate::memory::Violation;
use crate::slot_table::{SlotKey, SlotTable};

pub use crate::config::DEFAULT_EVENT_CAPACITY;

/// What the library knows about one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EventRecord {
    /// The kernel's event id.
    pub id: u32,
    /// The event's type.
    pub event_type: EventType,
    /// Manual or auto reset.
    pub reset: ResetMode,
    /// The node given at creation (the kernel ignores it; kept for the caller).
    pub node: u32,
    /// The event-page slot (signal and debug events when the page is mapped).
    pub slot: Option<u16>,
    /// The value a GPU sends with the interrupt to raise the event (the kernel's
    /// `event_trigger_data`, equal to the id).
    pub trigger_data: u32,
    /// The newest age the process learned from the kernel (1 at creation; raised by every wait
    /// that returns the age). 0 when the event has no age (not a signal event, or KFD < 1.14).
    /// The kernel's age is never lower.
    pub age: u64,
    /// The age up to which the callback dispatcher has reported firings.
    pub dispatch_age: u64,
    /// How many firings of this event waits of this process observed (saturating).
    pub observed: u32,
}

impl EventRecord {
    /// Whether the event fired after age `age`, as far as the process knows: `false` for
    /// events without ages or `age == 0`.
    #[must_use]
    pub const fn fired_since(&self, age: u64) -> bool {
        age != 0 && self.age > age
    }

    /// Raises the known age to `age` (ages only grow; 0 is ignored).
    pub fn learn_age(&mut self, age: u64) {
        if age > self.age {
            self.age = age;
        }
    }
}

/// One event of the table: its record, and whether its destruction is in progress (no new
/// operation may use it then).
#[derive(Debug, Clone, Copy)]
struct Entry {
    record: EventRecord,
    destroying: bool,
}

impl EventHandle {
    const fn key(self) -> SlotKey {
        SlotKey::new(self.index() as u32, self.generation())
    }

    /// The handle of `key` (every key of a table of fewer than 65,535 slots fits).
    fn of(key: SlotKey) -> Self {
        EventHandle::new(u16::try_from(key.index()).unwrap_or(u16::MAX), key.generation())
    }
}

/// The events of one process, in the `N` slots of a [`SlotTable`] addressed by
/// [`EventHandle`]s.
///
/// Creation is two-phase so a full table is detected before the kernel creates anything:
/// [`EventTable::reserve`] claims a slot, then [`EventTable::fill`] or [`EventTable::cancel`]
/// settles it. Destruction likewise: [`EventTable::begin_destroy`] stops new users, then
/// [`EventTable::finish_destroy`] or [`EventTable::abort_destroy`]. Every operation is O(1)
/// except iteration.
///
/// # Invariants
/// Those of [`SlotTable`]: a slot's generation is never 0 and changes whenever the slot becomes
/// free, so a handle matches exactly one occupancy of its slot. No two events share a kernel id
/// or an event-page slot.
#[derive(Debug)]
pub struct EventTable<const N: usize = DEFAULT_EVENT_CAPACITY> {
    slots: SlotTable<Entry, N>,
}

impl<const N: usize> Default for EventTable<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> EventTable<N> {
    const CAPACITY_FITS: () = assert!(N < u16::MAX as usize, "an event table holds < 65535 slots");

    /// An empty table.
    #[must_use]
    pub const fn new() -> Self {
        let () = Self::CAPACITY_FITS;
        Self { slots: SlotTable::new() }
    }

    /// How many events the table can hold.
    #[must_use]
    pub const fn capacity(&self) -> usize {
        N
    }

    /// Events that exist: live ones and ones being destroyed (not reservations).
    #[must_use]
    pub const fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no event exists.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Claims a slot for an event about to be created.
    ///
    /// # Errors
    /// [`Error::TableFull`].
    pub fn reserve(&mut self) -> Result<EventHandle, Error> {
        self.slots.reserve().map(EventHandle::of).map_err(|_| Error::TableFull)
    }

    /// Stores the created event in the slot `handle` reserved.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`] unless `handle` is a current reservation.
    pub fn fill(&mut self, handle: EventHandle, record: EventRecord) -> Result<(), Error> {
        let entry = Entry { record, destroying: false };
        self.slots.fill(handle.key(), entry).map_err(|_| Error::InvalidHandle)
    }

    /// Gives back a reservation whose creation failed.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`] unless `handle` is a current reservation.
    pub fn cancel(&mut self, handle: EventHandle) -> Result<(), Error> {
        self.slots.release(handle.key()).map_err(|_| Error::InvalidHandle)
    }

    /// The live event `handle` names.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`] for a stale handle, a reservation or an event being destroyed.
    #[inline]
    pub fn get(&self, handle: EventHandle) -> Result<&EventRecord, Error> {
        match self.slots.get(handle.key()) {
            Some(Entry { record, destroying: false }) => Ok(record),
            _ => Err(Error::InvalidHandle),
        }
    }

    /// The live event `handle` names, for updates.
    ///
    /// # Errors
    /// As [`EventTable::get`].
    #[inline]
    pub fn get_mut(&mut self, handle: EventHandle) -> Result<&mut EventRecord, Error> {
        match self.slots.get_mut(handle.key()) {
            Some(Entry { record, destroying: false }) => Ok(record),
            _ => Err(Error::InvalidHandle),
        }
    }

    /// Marks the event being destroyed (later operations on it fail) and returns it.
    ///
    /// # Errors
    /// As [`EventTable::get`] (a second destroy of the same event fails here).
    pub fn begin_destroy(&mut self, handle: EventHandle) -> Result<EventRecord, Error> {
        match self.slots.get_mut(handle.key()) {
            Some(entry) if !entry.destroying => {
                entry.destroying = true;
                Ok(entry.record)
            }
            _ => Err(Error::InvalidHandle),
        }
    }

    /// Makes an event whose destruction failed live again.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`] unless the event is being destroyed.
    pub fn abort_destroy(&mut self, handle: EventHandle) -> Result<(), Error> {
        match self.slots.get_mut(handle.key()) {
            Some(entry) if entry.destroying => {
                entry.destroying = false;
                Ok(())
            }
            _ => Err(Error::InvalidHandle),
        }
    }

    /// Frees the slot of a destroyed event; `handle` and all its copies become invalid.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`] unless the event is being destroyed.
    pub fn finish_destroy(&mut self, handle: EventHandle) -> Result<EventRecord, Error> {
        match self.slots.get(handle.key()) {
            Some(Entry { destroying: true, .. }) => {}
            _ => return Err(Error::InvalidHandle),
        }
        self.slots.remove(handle.key()).map(|e| e.record).ok_or(Error::InvalidHandle)
    }

    /// The live events with their handles, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (EventHandle, &EventRecord)> + '_ {
        self.slots
            .iter()
            .filter(|(_, e)| !e.destroying)
            .map(|(key, e)| (EventHandle::of(key), &e.record))
    }

    /// The handle of the event in slot `index` — live or being destroyed — if any.
    #[must_use]
    pub fn occupant(&self, index: usize) -> Option<EventHandle> {
        self.slots.key_at(u32::try_from(index).ok()?).map(EventHandle::of)
    }

    /// Verifies the table's invariants (`O(N + events²)`; for tests and debug sweeps): those of
    /// the [`SlotTable`], and no two events (live or being destroyed) share a kernel id or an
    /// event-page slot.
    ///
    /// # Errors
    /// The first [`Violation`] found.
    pub fn check_invariants(&self) -> Result<(), Violation> {
        self.slots.check_invariants()?;
        for (i, (key, a)) in self.slots.iter().enumerate() {
            for (_, b) in self.slots.iter().skip(i.saturating_add(1)) {
                let (a, b) = (&a.record, &b.record);
                let same_slot = a.slot.is_some() && a.slot == b.slot;
                if a.id == b.id || same_slot {
                    return Err(Violation::Duplicate { slot: key.index() });
                }
            }
        }
        Ok(())
    }

    /// The live event with kernel id `id`, if any (a linear scan).
    #[must_use]
    pub fn find_id(&self, id: u32) -> Option<EventHandle> {
        self.iter().find(|(_, r)| r.id == id).map(|(h, _)| h)
    }

    /// Forgets every event and reservation; every handle becomes invalid.
    pub fn clear(&mut self) {
        self.slots.drain(|_| {});
    }
}
