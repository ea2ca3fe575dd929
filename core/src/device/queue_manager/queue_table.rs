//! The fixed-capacity, generation-checked table of queues a [`Kfd`](crate::device::Kfd) owns: a
//! [`SlotTable`] named by [`QueueHandle`]s.
//!
//! A slot moves `Free → Reserved → Live → Reserved → Free`: creation reserves a slot under the
//! lock, drops the lock for the allocations and the ioctl, then makes it live (or frees it on
//! error); destruction takes the record out (the slot stays reserved, so its index cannot be
//! reused) while the ioctl runs and puts it back if the kernel refuses. Every free bumps the
//! slot's generation, so a [`QueueHandle`] of a destroyed queue never names its successor.

use core::fmt;

use crate::slot_table::{SlotKey, SlotTable};

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

/// Why a table operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TableError {
    /// Every slot is in use.
    Full,
    /// The handle names no live queue (never created, destroyed, or being destroyed).
    Stale,
}

impl QueueHandle {
    const fn key(self) -> SlotKey {
        SlotKey::new(self.index as u32, self.generation)
    }

    /// The handle of `key` (every key of a table of at most 65,536 slots fits).
    fn of(key: SlotKey) -> Self {
        QueueHandle {
            index: u16::try_from(key.index()).unwrap_or(u16::MAX),
            generation: key.generation(),
        }
    }
}

/// `N` slots of records `R`: a [`SlotTable`] named by [`QueueHandle`]s.
///
/// # Invariants
/// A handle is valid exactly when its slot's generation equals the handle's and the slot holds
/// a record (see [`SlotTable`]).
pub(crate) struct Table<R, const N: usize>(SlotTable<R, N>);

impl<R, const N: usize> Table<R, N> {
    const INDEX_FITS: () = assert!(N <= 1 << 16, "queue handles carry a 16-bit index");

    /// An empty table (every generation starts at 1, so the all-zero raw handle is never valid).
    pub(crate) const fn new() -> Self {
        let () = Self::INDEX_FITS;
        Table(SlotTable::new())
    }

    /// Slots in use (live or reserved).
    pub(crate) fn used(&self) -> usize {
        self.0.used()
    }

    /// Reserves a free slot and returns its future handle.
    pub(crate) fn reserve(&mut self) -> Result<QueueHandle, TableError> {
        self.0.reserve().map(QueueHandle::of).map_err(|_| TableError::Full)
    }

    /// Makes a reserved slot live with `record`. Returns the record back when the handle does
    /// not name a reserved slot.
    pub(crate) fn fill(&mut self, h: QueueHandle, record: R) -> Result<(), R> {
        self.0.fill(h.key(), record)
    }

    /// Frees a reserved slot (a creation that failed, or a destruction that succeeded) and
    /// bumps its generation.
    pub(crate) fn release(&mut self, h: QueueHandle) {
        let _ = self.0.release(h.key());
    }

    /// The live record `h` names.
    pub(crate) fn get(&self, h: QueueHandle) -> Result<&R, TableError> {
        self.0.get(h.key()).ok_or(TableError::Stale)
    }

    /// The live record `h` names, mutably.
    pub(crate) fn get_mut(&mut self, h: QueueHandle) -> Result<&mut R, TableError> {
        self.0.get_mut(h.key()).ok_or(TableError::Stale)
    }

    /// Takes the record out of a live slot, leaving the slot reserved (for destruction).
    pub(crate) fn take(&mut self, h: QueueHandle) -> Result<R, TableError> {
        self.0.take(h.key()).ok_or(TableError::Stale)
    }

    /// Handles of every live slot, in index order, into `out`; returns how many were stored.
    pub(crate) fn live_handles(&self, out: &mut [QueueHandle]) -> usize {
        let mut n = 0usize;
        for (dst, (key, _)) in out.iter_mut().zip(self.0.iter()) {
            *dst = QueueHandle::of(key);
            n = n.saturating_add(1);
        }
        n
    }

    /// Verifies the table's invariants (see [`SlotTable::check_invariants`]); calls `f` with
    /// each live record and its handle (for the caller's checks).
    pub(crate) fn check(
        &self,
        mut f: impl FnMut(QueueHandle, &R) -> Result<(), crate::memory::Violation>,
    ) -> Result<(), crate::memory::Violation> {
        self.0.check_invariants()?;
        for (key, r) in self.0.iter() {
            f(QueueHandle::of(key), r)?;
        }
        Ok(())
    }

    /// Empties the table, bumping the generation of every used slot, and hands each live record
    /// to `f`.
    pub(crate) fn drain(&mut self, f: impl FnMut(R)) {
        self.0.drain(f);
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
