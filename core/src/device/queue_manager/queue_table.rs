//! The fixed-capacity, generation-checked table of queues a [`Kfd`](crate::device::Kfd) owns.
//!
//! A slot moves `Free → Reserved → Live → Reserved → Free`: creation reserves a slot under the
//! lock, drops the lock for the allocations and the ioctl, then makes it live (or frees it on
//! error); destruction takes the record out (the slot stays reserved, so its index cannot be
//! reused) while the ioctl runs and puts it back if the kernel refuses. Every free bumps the
//! slot's generation, so a [`QueueHandle`] of a destroyed queue never names its successor.

use core::fmt;

/// A queue created through [`Kfd`](crate::device::Kfd): a slot index and the generation the slot
/// had when the queue was created. Never a pointer; a stale handle is rejected.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QueueHandle {
    index: u16,
    generation: u32,
}

impl QueueHandle {
    /// The handle as one `u64` (generation in the high half), e.g. to store it in a C-style
    /// `HSA_QUEUEID`.
    #[must_use]
    pub const fn to_raw(self) -> u64 {
        (self.generation as u64) << 32 | self.index as u64
    }

    /// A handle from [`QueueHandle::to_raw`]. Any value is accepted; a value that never named a
    /// queue is simply rejected by every queue operation.
    #[must_use]
    pub const fn from_raw(raw: u64) -> Self {
        QueueHandle { index: raw as u16, generation: (raw >> 32) as u32 }
    }

    /// The slot index.
    #[must_use]
    pub const fn index(self) -> usize {
        self.index as usize
    }
}

impl fmt::Debug for QueueHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QueueHandle({}#{})", self.index, self.generation)
    }
}

enum SlotState<R> {
    Free,
    Reserved,
    Live(R),
}

struct Slot<R> {
    generation: u32,
    state: SlotState<R>,
}

/// Why a table operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TableError {
    /// Every slot is in use.
    Full,
    /// The handle names no live queue (never created, destroyed, or being destroyed).
    Stale,
}

/// `N` slots of records `R`.
///
/// # Invariants
/// `live` counts the slots in state `Live` or `Reserved`. A handle is valid exactly when its
/// slot's generation equals the handle's and the slot is `Live`.
pub(crate) struct Table<R, const N: usize> {
    slots: [Slot<R>; N],
    used: usize,
}

impl<R, const N: usize> Table<R, N> {
    /// An empty table (every generation starts at 1, so the all-zero raw handle is never valid).
    pub(crate) const fn new() -> Self {
        Table { slots: [const { Slot { generation: 1, state: SlotState::Free } }; N], used: 0 }
    }

    /// Slots in use (live or reserved).
    pub(crate) fn used(&self) -> usize {
        self.used
    }

    /// Reserves the lowest free slot and returns its future handle.
    pub(crate) fn reserve(&mut self) -> Result<QueueHandle, TableError> {
        let index = self
            .slots
            .iter()
            .position(|s| matches!(s.state, SlotState::Free))
            .ok_or(TableError::Full)?;
        let index16 = u16::try_from(index).map_err(|_| TableError::Full)?;
        let slot = self.slots.get_mut(index).ok_or(TableError::Full)?;
        slot.state = SlotState::Reserved;
        self.used += 1;
        Ok(QueueHandle { index: index16, generation: slot.generation })
    }

    fn slot_mut(&mut self, h: QueueHandle) -> Option<&mut Slot<R>> {
        self.slots.get_mut(h.index()).filter(|s| s.generation == h.generation)
    }

    /// Makes a reserved slot live with `record`. Returns the record back when the handle does
    /// not name a reserved slot.
    pub(crate) fn fill(&mut self, h: QueueHandle, record: R) -> Result<(), R> {
        match self.slot_mut(h) {
            Some(s) if matches!(s.state, SlotState::Reserved) => {
                s.state = SlotState::Live(record);
                Ok(())
            }
            _ => Err(record),
        }
    }

    /// Frees a reserved slot (a creation that failed, or a destruction that succeeded) and
    /// bumps its generation.
    pub(crate) fn release(&mut self, h: QueueHandle) {
        if let Some(s) = self.slot_mut(h)
            && matches!(s.state, SlotState::Reserved)
        {
            s.state = SlotState::Free;
            s.generation = s.generation.wrapping_add(1).max(1);
            self.used -= 1;
        }
    }

    /// The live record `h` names.
    pub(crate) fn get(&self, h: QueueHandle) -> Result<&R, TableError> {
        match self.slots.get(h.index()) {
            Some(Slot { generation, state: SlotState::Live(r) }) if *generation == h.generation => {
                Ok(r)
            }
            _ => Err(TableError::Stale),
        }
    }

    /// The live record `h` names, mutably.
    pub(crate) fn get_mut(&mut self, h: QueueHandle) -> Result<&mut R, TableError> {
        match self.slot_mut(h) {
            Some(Slot { state: SlotState::Live(r), .. }) => Ok(r),
            _ => Err(TableError::Stale),
        }
    }

    /// Takes the record out of a live slot, leaving the slot reserved (for destruction).
    pub(crate) fn take(&mut self, h: QueueHandle) -> Result<R, TableError> {
        let s = self.slot_mut(h).ok_or(TableError::Stale)?;
        if !matches!(s.state, SlotState::Live(_)) {
            return Err(TableError::Stale);
        }
        match core::mem::replace(&mut s.state, SlotState::Reserved) {
            SlotState::Live(r) => Ok(r),
            _ => Err(TableError::Stale),
        }
    }

    /// Handles of every live slot, in index order, into `out`; returns how many were stored.
    pub(crate) fn live_handles(&self, out: &mut [QueueHandle]) -> usize {
        let mut n = 0;
        let live = self.slots.iter().enumerate().filter_map(|(i, s)| match s.state {
            SlotState::Live(_) => {
                Some(QueueHandle { index: u16::try_from(i).ok()?, generation: s.generation })
            }
            _ => None,
        });
        for (dst, h) in out.iter_mut().zip(live) {
            *dst = h;
            n += 1;
        }
        n
    }

    /// Verifies the table's invariants: no generation is 0 and `used` counts the live and
    /// reserved slots; calls `f` with each live record and its handle (for the caller's checks).
    pub(crate) fn check(
        &self,
        mut f: impl FnMut(QueueHandle, &R) -> Result<(), crate::memory::Violation>,
    ) -> Result<(), crate::memory::Violation> {
        use crate::memory::Violation;
        let mut used = 0;
        for (i, s) in self.slots.iter().enumerate() {
            let slot = u32::try_from(i).unwrap_or(u32::MAX);
            if s.generation == 0 {
                return Err(Violation::SlotList { slot });
            }
            match &s.state {
                SlotState::Free => {}
                SlotState::Reserved => used += 1,
                SlotState::Live(r) => {
                    used += 1;
                    let index = u16::try_from(i).map_err(|_| Violation::SlotList { slot })?;
                    f(QueueHandle { index, generation: s.generation }, r)?;
                }
            }
        }
        if used != self.used {
            return Err(Violation::Counter);
        }
        Ok(())
    }

    /// Empties the table, bumping the generation of every used slot, and hands each live record
    /// to `f`.
    pub(crate) fn drain(&mut self, mut f: impl FnMut(R)) {
        for s in &mut self.slots {
            match core::mem::replace(&mut s.state, SlotState::Free) {
                SlotState::Free => continue,
                SlotState::Reserved => {}
                SlotState::Live(r) => f(r),
            }
            s.generation = s.generation.wrapping_add(1).max(1);
        }
        self.used = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle_and_stale_handles() {
        let mut t: Table<u32, 2> = Table::new();
        let a = t.reserve().unwrap();
        assert_eq!(t.get(a), Err(TableError::Stale), "reserved is not live");
        t.fill(a, 7).unwrap();
        assert_eq!(t.get(a), Ok(&7));
        let b = t.reserve().unwrap();
        assert_eq!(t.reserve(), Err(TableError::Full));
        t.release(b);
        assert_eq!(t.used(), 1);
        assert_eq!(t.take(a), Ok(7));
        assert_eq!(t.get(a), Err(TableError::Stale));
        t.release(a);
        let a2 = t.reserve().unwrap();
        assert_eq!(a2.index(), a.index());
        assert_ne!(a2, a, "generation changed");
        assert_eq!(t.fill(a, 1), Err(1), "stale handle cannot fill");
        t.fill(a2, 9).unwrap();
        assert_eq!(t.get(a), Err(TableError::Stale));
        *t.get_mut(a2).unwrap() = 10;
        let mut hs = [QueueHandle::from_raw(0); 2];
        assert_eq!(t.live_handles(&mut hs), 1);
        assert_eq!(hs[0], a2);
        assert_eq!(QueueHandle::from_raw(a2.to_raw()), a2);
        let mut seen = 0;
        t.drain(|r| seen += r);
        assert_eq!(seen, 10);
        assert_eq!(t.used(), 0);
        assert_eq!(t.get(a2), Err(TableError::Stale));
        assert_eq!(t.get(QueueHandle::from_raw(0)), Err(TableError::Stale));
    }
}
