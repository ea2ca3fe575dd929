//! [`EventTable`]: the process's events in fixed-capacity, generation-checked slots.

use crate::event::{Error, EventHandle, EventType, ResetMode};
use crate::memory::Violation;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Unused; `next` links the free list (`NONE` ends it).
    Free { next: u16 },
    /// Claimed by a creation in progress (the kernel call has not returned yet).
    Reserved,
    /// A live event.
    Live(EventRecord),
    /// A destruction is in progress: no new operation may use the event.
    Destroying(EventRecord),
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    generation: u32,
    state: State,
}

const NONE: u16 = u16::MAX;

/// The events of one process, in `N` slots addressed by [`EventHandle`]s.
///
/// Creation is two-phase so a full table is detected before the kernel creates anything:
/// [`EventTable::reserve`] claims a slot, then [`EventTable::fill`] or [`EventTable::cancel`]
/// settles it. Destruction likewise: [`EventTable::begin_destroy`] stops new users, then
/// [`EventTable::finish_destroy`] or [`EventTable::abort_destroy`]. Every operation is O(1)
/// except iteration.
///
/// # Invariants
/// A slot's generation is never 0 and changes whenever the slot becomes free, so a handle
/// matches exactly one occupancy of its slot. The free list links exactly the free slots.
#[derive(Debug)]
pub struct EventTable<const N: usize = DEFAULT_EVENT_CAPACITY> {
    slots: [Slot; N],
    /// Freed slots, most recent first.
    free_head: u16,
    /// Slots from here on were never used (and are not on the free list).
    unused: u16,
    live: usize,
}

impl<const N: usize> Default for EventTable<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> EventTable<N> {
    const CAPACITY_FITS: () = assert!(N < NONE as usize, "an event table holds < 65535 slots");

    /// An empty table.
    #[must_use]
    pub const fn new() -> Self {
        let () = Self::CAPACITY_FITS;
        Self {
            slots: [Slot { generation: 1, state: State::Free { next: NONE } }; N],
            free_head: NONE,
            unused: 0,
            live: 0,
        }
    }

    /// How many events the table can hold.
    #[must_use]
    pub const fn capacity(&self) -> usize {
        N
    }

    /// Events that exist: live ones and ones being destroyed (not reservations).
    #[must_use]
    pub const fn len(&self) -> usize {
        self.live
    }

    /// Whether no event exists.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Claims a slot for an event about to be created.
    ///
    /// # Errors
    /// [`Error::TableFull`].
    pub fn reserve(&mut self) -> Result<EventHandle, Error> {
        let (index, from_list) =
            if self.free_head != NONE { (self.free_head, true) } else { (self.unused, false) };
        let slot = self.slots.get_mut(usize::from(index)).ok_or(Error::TableFull)?;
        let State::Free { next } = slot.state else {
            return Err(Error::TableFull);
        };
        if from_list {
            self.free_head = next;
        } else {
            self.unused += 1;
        }
        slot.state = State::Reserved;
        Ok(EventHandle::new(index, slot.generation))
    }

    /// Stores the created event in the slot `handle` reserved.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`] unless `handle` is a current reservation.
    pub fn fill(&mut self, handle: EventHandle, record: EventRecord) -> Result<(), Error> {
        let slot = self.slot_mut(handle)?;
        if slot.state != State::Reserved {
            return Err(Error::InvalidHandle);
        }
        slot.state = State::Live(record);
        self.live += 1;
        Ok(())
    }

    /// Gives back a reservation whose creation failed.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`] unless `handle` is a current reservation.
    pub fn cancel(&mut self, handle: EventHandle) -> Result<(), Error> {
        let slot = self.slot_mut(handle)?;
        if slot.state != State::Reserved {
            return Err(Error::InvalidHandle);
        }
        self.release(handle.index());
        Ok(())
    }

    /// The live event `handle` names.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`] for a stale handle, a reservation or an event being destroyed.
    pub fn get(&self, handle: EventHandle) -> Result<&EventRecord, Error> {
        match self.slots.get(handle.index()) {
            Some(Slot { generation, state: State::Live(r) })
                if *generation == handle.generation() =>
            {
                Ok(r)
            }
            _ => Err(Error::InvalidHandle),
        }
    }

    /// The live event `handle` names, for updates.
    ///
    /// # Errors
    /// As [`EventTable::get`].
    pub fn get_mut(&mut self, handle: EventHandle) -> Result<&mut EventRecord, Error> {
        match self.slot_mut(handle)? {
            Slot { state: State::Live(r), .. } => Ok(r),
            _ => Err(Error::InvalidHandle),
        }
    }

    /// Marks the event being destroyed (later operations on it fail) and returns it.
    ///
    /// # Errors
    /// As [`EventTable::get`] (a second destroy of the same event fails here).
    pub fn begin_destroy(&mut self, handle: EventHandle) -> Result<EventRecord, Error> {
        let slot = self.slot_mut(handle)?;
        let State::Live(r) = slot.state else {
            return Err(Error::InvalidHandle);
        };
        slot.state = State::Destroying(r);
        Ok(r)
    }

    /// Makes an event whose destruction failed live again.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`] unless the event is being destroyed.
    pub fn abort_destroy(&mut self, handle: EventHandle) -> Result<(), Error> {
        let slot = self.slot_mut(handle)?;
        let State::Destroying(r) = slot.state else {
            return Err(Error::InvalidHandle);
        };
        slot.state = State::Live(r);
        Ok(())
    }

    /// Frees the slot of a destroyed event; `handle` and all its copies become invalid.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`] unless the event is being destroyed.
    pub fn finish_destroy(&mut self, handle: EventHandle) -> Result<EventRecord, Error> {
        let slot = self.slot_mut(handle)?;
        let State::Destroying(r) = slot.state else {
            return Err(Error::InvalidHandle);
        };
        self.live = self.live.saturating_sub(1);
        self.release(handle.index());
        Ok(r)
    }

    /// The live events with their handles, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (EventHandle, &EventRecord)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| match &s.state {
            State::Live(r) => Some((EventHandle::new(i as u16, s.generation), r)),
            _ => None,
        })
    }

    /// The handle of the event in slot `index` — live or being destroyed — if any.
    #[must_use]
    pub fn occupant(&self, index: usize) -> Option<EventHandle> {
        let s = self.slots.get(index)?;
        match s.state {
            State::Live(_) | State::Destroying(_) => {
                Some(EventHandle::new(u16::try_from(index).ok()?, s.generation))
            }
            State::Free { .. } | State::Reserved => None,
        }
    }

    /// Verifies the table's invariants (`O(N + events²)`; for tests and debug sweeps): no
    /// generation is 0; the free list links exactly the freed slots, without cycles; slots
    /// never used are free; the event count matches; no two events share a kernel id or an
    /// event-page slot.
    ///
    /// # Errors
    /// The first [`Violation`] found.
    pub fn check_invariants(&self) -> Result<(), Violation> {
        let unused = usize::from(self.unused);
        if unused > N {
            return Err(Violation::Counter);
        }
        let (mut free, mut occupied) = (0usize, 0usize);
        for (i, s) in self.slots.iter().enumerate() {
            let slot = i as u32;
            if s.generation == 0 {
                return Err(Violation::SlotList { slot });
            }
            match s.state {
                State::Free { .. } => free += usize::from(i < unused),
                _ if i >= unused => return Err(Violation::SlotList { slot }),
                State::Live(_) | State::Destroying(_) => occupied += 1,
                State::Reserved => {}
            }
        }
        if occupied != self.live {
            return Err(Violation::Counter);
        }
        // Walk the free list: at most `free` steps, each to a free, used-before slot.
        let (mut at, mut steps) = (self.free_head, 0usize);
        while at != NONE {
            let i = usize::from(at);
            let ok = i < unused
                && matches!(self.slots.get(i), Some(Slot { state: State::Free { .. }, .. }));
            if !ok || steps >= free {
                return Err(Violation::FreeList { slot: u32::from(at) });
            }
            steps += 1;
            at = match self.slots.get(i).map(|s| s.state) {
                Some(State::Free { next }) => next,
                _ => NONE,
            };
        }
        if steps != free {
            return Err(Violation::FreeList { slot: u32::MAX });
        }
        let record = |s: &Slot| match s.state {
            State::Live(r) | State::Destroying(r) => Some(r),
            State::Free { .. } | State::Reserved => None,
        };
        let used = self.slots.get(..unused).unwrap_or_default();
        for (i, a) in used.iter().enumerate() {
            let Some(a) = record(a) else { continue };
            for b in used.get(i + 1..).unwrap_or_default().iter().filter_map(record) {
                let same_slot = a.slot.is_some() && a.slot == b.slot;
                if a.id == b.id || same_slot {
                    return Err(Violation::Duplicate { slot: i as u32 });
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
        for i in 0..usize::from(self.unused) {
            if !matches!(self.slots.get(i).map(|s| s.state), Some(State::Free { .. })) {
                self.release(i);
            }
        }
        self.live = 0;
    }

    fn slot_mut(&mut self, handle: EventHandle) -> Result<&mut Slot, Error> {
        match self.slots.get_mut(handle.index()) {
            Some(s) if s.generation == handle.generation() => Ok(s),
            _ => Err(Error::InvalidHandle),
        }
    }

    /// Puts slot `index` on the free list with a new generation.
    fn release(&mut self, index: usize) {
        let head = self.free_head;
        if let Some(slot) = self.slots.get_mut(index) {
            slot.generation = match slot.generation.wrapping_add(1) {
                0 => 1,
                g => g,
            };
            slot.state = State::Free { next: head };
            // `index < N < NONE` (checked at compile time), so it fits.
            self.free_head = index as u16;
        }
    }
}
