//! Frees that finish without taking the memory lock a second time.
//!
//! The memory manager never holds its lock across an ioctl: an operation plans under the lock,
//! issues the ioctl, and records the outcome. When the recycle cache may keep the memory being
//! freed, the record step (retire the object into the cache) needs nothing but the ioctls'
//! success. Such a free registers a *pending* entry under its one lock (a slot and a ticket;
//! the object stays visible and busy), issues its ioctls without the lock, drops the CPU view
//! it took out, and then *publishes* its completion: the ticket, stored in an atomic beside
//! the lock — a plain store, no read-modify-write. Whoever takes the lock next
//! ([`MemoryLock::lock`], the only way to the state) first *settles* every published entry:
//! the record step, done on the freeing thread's behalf before anything else looks at the
//! tables.
//!
//! So a free's effect is visible to every later operation exactly as if it had recorded it
//! itself: to observe anything, a thread must take the lock, and taking it settles first. A
//! failed ioctl takes the lock again and cancels its entry (the object gets its view back).
//!
//! An entry stays in use until its free completes or cancels, even across a reset of the
//! tables (a close racing with the free): it is then an *orphan*, settled or cancelled without
//! effect, so that a late publication can never be taken for that of a newer free in the same
//! slot.

use core::sync::atomic::{AtomicU32, Ordering};

use crate::config::PENDING_FREE_SLOTS;

use super::state::{MemoryState, MemoryStorage};

/// A registered pending operation: where and under which ticket it publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket {
    slot: u32,
    ticket: u32,
}

/// Pending operations, with what settling each needs (`E`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pending<E> {
    entries: [Option<(u32, E)>; PENDING_FREE_SLOTS],
    /// Bit `p` set: entry `p` is in use.
    pub(crate) mask: u32,
    /// Bit `p` set: entry `p` is an orphan.
    orphans: u32,
    /// The next ticket (never 0; never reset).
    next_ticket: u32,
}

impl<E: Copy> Pending<E> {
    pub(crate) const EMPTY: Self =
        Self { entries: [None; PENDING_FREE_SLOTS], mask: 0, orphans: 0, next_ticket: 1 };

    /// Registers an operation; `None` when every entry is in use.
    #[inline]
    pub(crate) fn begin(&mut self, e: E) -> Option<Ticket> {
        // (A full mask gives 32, beyond the entries.)
        let slot = (!self.mask).trailing_zeros();
        let entry = self.entries.get_mut(slot as usize)?;
        let ticket = self.next_ticket;
        *entry = Some((ticket, e));
        self.mask |= 1 << slot;
        self.next_ticket = ticket.wrapping_add(1).max(1);
        Some(Ticket { slot, ticket })
    }

    /// Withdraws an operation whose ioctl failed: its entry, or `None` when it is an orphan
    /// (or unknown).
    pub(crate) fn cancel(&mut self, t: Ticket) -> Option<E> {
        let entry = self.entries.get_mut(t.slot as usize)?;
        let (ticket, e) = (*entry)?;
        if ticket != t.ticket {
            return None;
        }
        *entry = None;
        let bit = 1 << t.slot;
        let orphan = self.orphans & bit != 0;
        self.mask &= !bit;
        self.orphans &= !bit;
        (!orphan).then_some(e)
    }

    /// Takes out the next published operation (orphans are dropped on the way).
    #[inline]
    fn take_done(&mut self, words: &[AtomicU32; PENDING_FREE_SLOTS]) -> Option<E> {
        let mut mask = self.mask;
        while mask != 0 {
            let slot = mask.trailing_zeros() as usize;
            mask &= mask.wrapping_sub(1);
            let (Some(entry), Some(w)) = (self.entries.get_mut(slot), words.get(slot)) else {
                continue;
            };
            let Some((ticket, e)) = *entry else { continue };
            if w.load(Ordering::Acquire) != ticket {
                continue;
            }
            *entry = None;
            let bit = 1 << slot;
            self.mask &= !bit;
            if self.orphans & bit != 0 {
                self.orphans &= !bit;
                continue;
            }
            return Some(e);
        }
        None
    }

    /// Turns every entry into an orphan (the tables are being reset).
    pub(crate) fn orphan_all(&mut self) {
        self.orphans = self.mask;
    }

    /// Forgets every entry, orphans included: only when no other thread of this process can
    /// hold one (a forked child starting over).
    pub(crate) fn clear(&mut self) {
        *self = Self { next_ticket: self.next_ticket, ..Self::EMPTY };
    }

    /// The entries that are not orphans.
    pub(crate) fn live(&self) -> impl Iterator<Item = E> + '_ {
        self.entries
            .iter()
            .enumerate()
            .filter(|&(slot, _)| self.orphans & (1 << slot) == 0)
            .filter_map(|(_, e)| e.map(|(_, e)| e))
    }

    /// Whether the bitmaps agree with the entries.
    pub(crate) fn consistent(&self) -> bool {
        self.orphans & !self.mask == 0
            && self
                .entries
                .iter()
                .enumerate()
                .all(|(slot, e)| e.is_some() == (self.mask & (1 << slot) != 0))
    }
}

/// The memory state behind its lock, with the completion words of pending frees (see the
/// [module docs](self)).
pub(crate) struct MemoryLock<M, S: MemoryStorage<M>> {
    state: spin::Mutex<MemoryState<M, S>>,
    /// Entry `p`'s completion word: the ticket of the last free published there.
    frees: [AtomicU32; PENDING_FREE_SLOTS],
}

impl<M, S: MemoryStorage<M>> MemoryLock<M, S> {
    pub(crate) const fn new(state: MemoryState<M, S>) -> Self {
        Self {
            state: spin::Mutex::new(state),
            frees: [const { AtomicU32::new(0) }; PENDING_FREE_SLOTS],
        }
    }

    /// Locks the memory state, settling published frees first.
    #[inline]
    pub(crate) fn lock(&self) -> spin::MutexGuard<'_, MemoryState<M, S>> {
        let mut st = self.state.lock();
        if st.pending_frees.mask != 0 {
            st.settle(&self.frees);
        }
        st
    }

    /// Publishes the completion of a pending free (its buffers are freed, its CPU view gone).
    #[inline]
    pub(crate) fn complete_free(&self, t: Ticket) {
        let w = self.frees.get(t.slot as usize);
        // PANIC: debug builds only: tickets are issued for slots of this array (a miss would
        // leave the free pending until close).
        debug_assert!(w.is_some(), "free ticket slot {} out of range", t.slot);
        if let Some(w) = w {
            w.store(t.ticket, Ordering::Release);
        }
    }
}

impl<M, S: MemoryStorage<M>> MemoryState<M, S> {
    /// Settles every published free: its object goes to the recycle cache (or away).
    fn settle(&mut self, frees: &[AtomicU32; PENDING_FREE_SLOTS]) {
        while let Some(handle) = self.pending_frees.take_done(frees) {
            self.forget_freed(handle);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_orphans_and_cancel() {
        let words: [AtomicU32; PENDING_FREE_SLOTS] =
            [const { AtomicU32::new(0) }; PENDING_FREE_SLOTS];
        let publish = |t: Ticket| words[t.slot as usize].store(t.ticket, Ordering::Release);
        let mut p = Pending::<u32>::EMPTY;
        let tickets: std::vec::Vec<Ticket> =
            (0..PENDING_FREE_SLOTS as u32).map(|i| p.begin(i).unwrap()).collect();
        assert_eq!(p.begin(99), None, "every entry in use");
        assert!(p.consistent());
        // Nothing published yet.
        assert_eq!(p.take_done(&words), None);
        publish(tickets[3]);
        assert_eq!(p.take_done(&words), Some(3));
        assert_eq!(p.take_done(&words), None);
        // A cancelled entry comes back; a second cancel finds nothing.
        assert_eq!(p.cancel(tickets[4]), Some(4));
        assert_eq!(p.cancel(tickets[4]), None);
        // Orphans: settled or cancelled without effect, their slot not reused meanwhile.
        p.orphan_all();
        let fresh = p.begin(50).unwrap();
        assert!(fresh.slot == 3 || fresh.slot == 4);
        publish(tickets[5]);
        assert_eq!(p.take_done(&words), None, "an orphan settles to nothing");
        assert_eq!(p.cancel(tickets[6]), None, "an orphan cancels to nothing");
        assert_eq!(p.live().collect::<std::vec::Vec<_>>(), [50]);
        // A stale publication in a reused slot is not taken for the new one.
        assert_ne!(fresh.ticket, tickets[3].ticket);
        assert_eq!(p.take_done(&words), None);
        publish(fresh);
        assert_eq!(p.take_done(&words), Some(50));
        assert!(p.consistent());
        p.clear();
        assert_eq!((p.mask, p.live().count()), (0, 0));
    }
}
