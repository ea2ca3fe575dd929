//! [`SlotTable`]: `N` slots addressed by generation-checked [`SlotKey`]s — the one
//! implementation behind the handle tables of the device facade (its queue table and
//! [`EventTable`](crate::event::EventTable)) and of the drivers (the queues of `KfdDriver` and
//! of the simulator's host driver). Two tables keep slot logic of their own, for reasons of
//! their own: the [`CallbackRegistry`](crate::event::CallbackRegistry), whose slots stay pinned
//! while a dispatcher may still call them, and the memory
//! [`ObjectTable`](crate::memory::objects::ObjectTable), whose slots are also the nodes of its
//! address indexes and live in storage its caller chooses.
//!
//! A key names one *occupancy* of a slot: every time a slot becomes free its generation
//! changes, so a key kept after its value was removed never reaches the slot's next value
//! (Asahi's `SlotToken`, in the manner of `slotmap`). Generations start at 1 and skip 0 when
//! they wrap, so a key of generation 0 (`SlotKey::default()`) is never valid.
//!
//! A slot is *free*, *reserved* or *live*. Creating something that needs a kernel call first
//! reserves a slot (the table cannot fill up while the lock is released for the call), then
//! [`fill`](SlotTable::fill)s it or [`release`](SlotTable::release)s it; destroying one
//! [`take`](SlotTable::take)s the value out and keeps the slot reserved (its index cannot be
//! reused while the call runs), then releases the slot or fills it again when the kernel
//! refused. [`insert`](SlotTable::insert) and [`remove`](SlotTable::remove) do both steps at
//! once.
//!
//! Every operation is `O(1)` but iteration, [`drain`](SlotTable::drain) and
//! [`check_invariants`](SlotTable::check_invariants): freed slots form a list (most recently
//! freed first), and slots never used are taken in index order after it.

use crate::memory::Violation;

/// A key of a [`SlotTable`]: a slot index and the generation the slot had when the key was
/// handed out.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SlotKey {
    index: u32,
    generation: u32,
}

impl SlotKey {
    /// The key of slot `index` at `generation` (a handle type's raw parts; any value is
    /// accepted, and one that names no live value is simply refused by the table).
    #[must_use]
    pub const fn new(index: u32, generation: u32) -> Self {
        Self { index, generation }
    }

    /// The slot index.
    #[must_use]
    pub const fn index(self) -> u32 {
        self.index
    }

    /// The generation.
    #[must_use]
    pub const fn generation(self) -> u32 {
        self.generation
    }
}

/// Why a [`SlotTable`] operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SlotError {
    /// Every slot is reserved or live.
    Full,
    /// The key names no slot in the state the operation needs (never handed out, or its slot
    /// was freed since, or it is reserved where a value was expected, or the reverse).
    Stale,
}

/// The end of the free list.
const NONE: u32 = u32::MAX;

#[derive(Debug, Clone)]
enum State<T> {
    /// Unused; `next` links the free list.
    Free { next: u32 },
    /// Claimed, without a value (a creation or a destruction in progress).
    Reserved,
    /// Holds a value.
    Live(T),
}

#[derive(Debug, Clone)]
struct Slot<T> {
    generation: u32,
    state: State<T>,
}

/// The generation after `g`: generations skip 0.
const fn next_generation(g: u32) -> u32 {
    match g.wrapping_add(1) {
        0 => 1,
        n => n,
    }
}

/// `N` slots of values `T` (see the [module docs](self)).
///
/// # Invariants
/// - No generation is 0; a slot's generation changes exactly when it becomes free.
/// - The free list links exactly the free slots below `unused`, without a cycle; slots from
///   `unused` on were never used and are free.
/// - `live` counts the live slots and `reserved` the reserved ones.
#[derive(Debug, Clone)]
pub struct SlotTable<T, const N: usize> {
    slots: [Slot<T>; N],
    /// Freed slots, most recent first.
    free_head: u32,
    /// Slots from here on were never used (and are not on the free list).
    unused: u32,
    live: u32,
    reserved: u32,
}

impl<T, const N: usize> Default for SlotTable<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize> SlotTable<T, N> {
    const CAPACITY_FITS: () = assert!(N < NONE as usize, "a slot table holds < 2^32 - 1 slots");

    /// An empty table (`const`: usable in a `static`).
    #[must_use]
    pub const fn new() -> Self {
        let () = Self::CAPACITY_FITS;
        Self {
            slots: [const { Slot { generation: 1, state: State::Free { next: NONE } } }; N],
            free_head: NONE,
            unused: 0,
            live: 0,
            reserved: 0,
        }
    }

    /// How many slots the table has.
    #[must_use]
    pub const fn capacity(&self) -> usize {
        N
    }

    /// How many slots hold a value.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.live as usize
    }

    /// Whether no slot holds a value.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// How many slots are in use: live or reserved.
    #[must_use]
    pub const fn used(&self) -> usize {
        // Both count slots of the table (`N < 2^32`).
        self.live.saturating_add(self.reserved) as usize
    }

    /// Claims a free slot and returns its key; the slot holds no value until
    /// [`fill`](Self::fill).
    ///
    /// # Errors
    /// [`SlotError::Full`] when every slot is in use.
    pub fn reserve(&mut self) -> Result<SlotKey, SlotError> {
        let (index, from_list) =
            if self.free_head != NONE { (self.free_head, true) } else { (self.unused, false) };
        let slot = self.slots.get_mut(index as usize).ok_or(SlotError::Full)?;
        let State::Free { next } = slot.state else {
            return Err(SlotError::Full);
        };
        if from_list {
            self.free_head = next;
        } else {
            self.unused = self.unused.saturating_add(1);
        }
        slot.state = State::Reserved;
        self.reserved = self.reserved.saturating_add(1);
        Ok(SlotKey { index, generation: slot.generation })
    }

    /// Stores `value` in the slot `key` reserved.
    ///
    /// # Errors
    /// `value` back unless `key` names a reserved slot.
    pub fn fill(&mut self, key: SlotKey, value: T) -> Result<(), T> {
        match self.slot_mut(key) {
            Some(slot) if matches!(slot.state, State::Reserved) => {
                slot.state = State::Live(value);
                self.reserved = self.reserved.saturating_sub(1);
                self.live = self.live.saturating_add(1);
                Ok(())
            }
            _ => Err(value),
        }
    }

    /// Stores `value` in a free slot and returns its key ([`reserve`](Self::reserve) and
    /// [`fill`](Self::fill)).
    ///
    /// # Errors
    /// `value` back when every slot is in use.
    pub fn insert(&mut self, value: T) -> Result<SlotKey, T> {
        match self.reserve() {
            Ok(key) => match self.fill(key, value) {
                Ok(()) => Ok(key),
                Err(value) => Err(value),
            },
            Err(_) => Err(value),
        }
    }

    /// Frees the reserved slot `key` names; every copy of `key` becomes stale.
    ///
    /// # Errors
    /// [`SlotError::Stale`] unless `key` names a reserved slot.
    pub fn release(&mut self, key: SlotKey) -> Result<(), SlotError> {
        match self.slot_mut(key) {
            Some(slot) if matches!(slot.state, State::Reserved) => {
                self.reserved = self.reserved.saturating_sub(1);
                self.free(key.index);
                Ok(())
            }
            _ => Err(SlotError::Stale),
        }
    }

    /// The value `key` names.
    #[must_use]
    #[inline]
    pub fn get(&self, key: SlotKey) -> Option<&T> {
        match self.slots.get(key.index as usize) {
            Some(Slot { generation, state: State::Live(value) })
                if *generation == key.generation =>
            {
                Some(value)
            }
            _ => None,
        }
    }

    /// The value `key` names, mutably.
    #[must_use]
    #[inline]
    pub fn get_mut(&mut self, key: SlotKey) -> Option<&mut T> {
        match self.slot_mut(key) {
            Some(Slot { state: State::Live(value), .. }) => Some(value),
            _ => None,
        }
    }

    /// Whether `key` names a value.
    #[must_use]
    pub fn contains(&self, key: SlotKey) -> bool {
        self.get(key).is_some()
    }

    /// Takes the value `key` names out, leaving its slot reserved (and `key` valid for
    /// [`fill`](Self::fill) or [`release`](Self::release)).
    pub fn take(&mut self, key: SlotKey) -> Option<T> {
        let slot = self.slot_mut(key)?;
        if !matches!(slot.state, State::Live(_)) {
            return None;
        }
        let State::Live(value) = core::mem::replace(&mut slot.state, State::Reserved) else {
            return None;
        };
        self.live = self.live.saturating_sub(1);
        self.reserved = self.reserved.saturating_add(1);
        Some(value)
    }

    /// Removes the value `key` names and frees its slot; every copy of `key` becomes stale.
    pub fn remove(&mut self, key: SlotKey) -> Option<T> {
        let value = self.take(key)?;
        self.reserved = self.reserved.saturating_sub(1);
        self.free(key.index);
        Some(value)
    }

    /// The key of the value in slot `index`, if the slot holds one.
    #[must_use]
    pub fn key_at(&self, index: u32) -> Option<SlotKey> {
        let slot = self.slots.get(index as usize)?;
        matches!(slot.state, State::Live(_))
            .then_some(SlotKey { index, generation: slot.generation })
    }

    /// The values with their keys, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (SlotKey, &T)> + '_ {
        self.slots.iter().take(self.unused as usize).zip(0u32..).filter_map(|(s, index)| {
            match &s.state {
                State::Live(value) => Some((SlotKey { index, generation: s.generation }, value)),
                State::Free { .. } | State::Reserved => None,
            }
        })
    }

    /// The values with their keys, mutably, in slot order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (SlotKey, &mut T)> + '_ {
        self.slots.iter_mut().take(self.unused as usize).zip(0u32..).filter_map(|(s, index)| {
            match &mut s.state {
                State::Live(value) => Some((SlotKey { index, generation: s.generation }, value)),
                State::Free { .. } | State::Reserved => None,
            }
        })
    }

    /// Empties the table — values and reservations — handing every value to `f`; every key
    /// becomes stale. `O(slots used so far)`.
    pub fn drain(&mut self, mut f: impl FnMut(T)) {
        for index in 0..self.unused {
            let Some(slot) = self.slots.get_mut(index as usize) else { break };
            match core::mem::replace(&mut slot.state, State::Reserved) {
                State::Free { next } => slot.state = State::Free { next },
                State::Reserved => self.free(index),
                State::Live(value) => {
                    self.free(index);
                    f(value);
                }
            }
        }
        self.live = 0;
        self.reserved = 0;
    }

    /// Verifies the table's invariants (`O(N)`; for tests and debug sweeps): no generation is
    /// 0; slots never used are free; the free list links exactly the other free slots, without
    /// a cycle; the counts match.
    ///
    /// # Errors
    /// The first [`Violation`] found.
    pub fn check_invariants(&self) -> Result<(), Violation> {
        let unused = self.unused as usize;
        if unused > N {
            return Err(Violation::Counter);
        }
        let (mut free, mut live, mut reserved) = (0usize, 0u32, 0u32);
        for (slot, s) in (0u32..).zip(&self.slots) {
            if s.generation == 0 {
                return Err(Violation::SlotList { slot });
            }
            match s.state {
                State::Free { .. } => {
                    free = free.saturating_add(usize::from((slot as usize) < unused))
                }
                _ if slot as usize >= unused => return Err(Violation::SlotList { slot }),
                State::Reserved => reserved = reserved.saturating_add(1),
                State::Live(_) => live = live.saturating_add(1),
            }
        }
        if live != self.live || reserved != self.reserved {
            return Err(Violation::Counter);
        }
        // Walk the free list: at most `free` steps, each to a free slot below `unused`.
        let (mut at, mut steps) = (self.free_head, 0usize);
        while at != NONE {
            let next = match self.slots.get(at as usize) {
                Some(Slot { state: State::Free { next }, .. }) if (at as usize) < unused => *next,
                _ => return Err(Violation::FreeList { slot: at }),
            };
            if steps >= free {
                return Err(Violation::FreeList { slot: at });
            }
            steps = steps.saturating_add(1);
            at = next;
        }
        if steps != free {
            return Err(Violation::FreeList { slot: u32::MAX });
        }
        Ok(())
    }

    /// The slot `key` names, whatever its state, if the generations match.
    #[inline]
    fn slot_mut(&mut self, key: SlotKey) -> Option<&mut Slot<T>> {
        self.slots.get_mut(key.index as usize).filter(|s| s.generation == key.generation)
    }

    /// Puts slot `index` on the free list with a new generation.
    fn free(&mut self, index: u32) {
        let head = self.free_head;
        if let Some(slot) = self.slots.get_mut(index as usize) {
            slot.generation = next_generation(slot.generation);
            slot.state = State::Free { next: head };
            self.free_head = index;
        }
    }
}

#[cfg(test)]
mod tests;
