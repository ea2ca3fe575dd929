//! Retired objects (see "Retired objects" in the [module docs](super)): out of every lookup,
//! their handles stale, kept in their slot and the start index until they are revived in place
//! or removed for good.

use crate::memory::Error;

use super::memory_object::MemoryObject;
use super::{MemoryHandle, ObjectStorage, ObjectTable, next_generation};

/// A generation-checked reference to a *retired* object of an [`ObjectTable`] (see
/// [`ObjectTable::retire`]): distinct from [`MemoryHandle`], so that no lookup or handle can
/// reach a retired object by accident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RetiredObject {
    pub(super) index: u32,
    pub(super) generation: u32,
}

impl RetiredObject {
    /// The slot index.
    #[must_use]
    pub const fn index(self) -> u32 {
        self.index
    }
}

impl<T, S: ObjectStorage<T>> ObjectTable<T, S> {
    /// The slot index a retired-object reference names, if that object is still retired.
    #[inline]
    fn resolve_retired(&self, r: RetiredObject) -> Result<u32, Error> {
        let s = self.slot(r.index).ok_or(Error::InvalidHandle)?;
        if r.generation == 0 || r.index >= self.hwm {
            return Err(Error::InvalidHandle);
        }
        if s.object.is_none() || !s.retired || s.generation != r.generation {
            return Err(Error::StaleHandle);
        }
        Ok(r.index)
    }

    /// Retires a live object: `h` (and every other handle of it) becomes stale at once, the
    /// object becomes invisible, and the returned reference names it for
    /// [`ObjectTable::revive`], [`ObjectTable::retired_mut`] or
    /// [`ObjectTable::remove_retired`]. `O(1)`: no index changes.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`], [`Error::StaleHandle`]; [`Error::NotSupported`] for an object
    /// with a user-pointer range (registered memory is not retired). The table is unchanged.
    #[inline]
    pub fn retire(&mut self, h: MemoryHandle) -> Result<RetiredObject, Error> {
        self.retire_if(h, |_| true)?.ok_or(Error::NotSupported)
    }

    /// As [`ObjectTable::retire`] when `keep` says so of the object; `Ok(None)` (unchanged)
    /// otherwise.
    ///
    /// # Errors
    /// As [`ObjectTable::retire`].
    #[inline]
    pub fn retire_if(
        &mut self,
        h: MemoryHandle,
        keep: impl FnOnce(&MemoryObject<T>) -> bool,
    ) -> Result<Option<RetiredObject>, Error> {
        let i = self.resolve(h)?;
        let s = self.slot_mut(i).ok_or(Error::InvalidHandle)?;
        let o = s.object.as_ref().ok_or(Error::StaleHandle)?;
        if o.userptr.is_some() {
            return Err(Error::NotSupported);
        }
        if !keep(o) {
            return Ok(None);
        }
        s.retired = true;
        s.generation = next_generation(s.generation);
        let generation = s.generation;
        self.live = self.live.saturating_sub(1);
        self.retired = self.retired.saturating_add(1);
        Ok(Some(RetiredObject { index: i, generation }))
    }

    /// A retired object (to read what the caller kept in it).
    ///
    /// # Errors
    /// [`Error::InvalidHandle`]; [`Error::StaleHandle`] when it was revived or removed since.
    #[inline]
    pub fn retired(&self, r: RetiredObject) -> Result<&MemoryObject<T>, Error> {
        let i = self.resolve_retired(r)?;
        self.slot(i).and_then(|s| s.object.as_ref()).ok_or(Error::StaleHandle)
    }

    /// A retired object, mutably (its address fields stay read-only).
    ///
    /// # Errors
    /// As [`ObjectTable::retired`].
    pub fn retired_mut(&mut self, r: RetiredObject) -> Result<&mut MemoryObject<T>, Error> {
        let i = self.resolve_retired(r)?;
        self.slot_mut(i).and_then(|s| s.object.as_mut()).ok_or(Error::StaleHandle)
    }

    /// Makes a retired object live again, after `update` has rewritten it (everything but its
    /// address fields: it keeps its GPU range); returns its new handle, which differs from every
    /// handle the object had before. `O(1)`.
    ///
    /// # Errors
    /// As [`ObjectTable::retired`] (`update` is not called; the table is unchanged).
    #[inline]
    pub fn revive_with(
        &mut self,
        r: RetiredObject,
        update: impl FnOnce(&mut MemoryObject<T>),
    ) -> Result<MemoryHandle, Error> {
        let i = self.resolve_retired(r)?;
        let s = self.slot_mut(i).ok_or(Error::InvalidHandle)?;
        let o = s.object.as_mut().ok_or(Error::StaleHandle)?;
        update(o);
        s.retired = false;
        let handle = MemoryHandle { index: i, generation: s.generation };
        self.retired = self.retired.saturating_sub(1);
        self.live = self.live.saturating_add(1);
        Ok(handle)
    }

    /// As [`ObjectTable::revive_with`] without changes.
    ///
    /// # Errors
    /// As [`ObjectTable::retired`].
    pub fn revive(&mut self, r: RetiredObject) -> Result<MemoryHandle, Error> {
        self.revive_with(r, |_| {})
    }

    /// Removes a retired object for good and returns it (the cost of
    /// [`ObjectTable::remove`]).
    ///
    /// # Errors
    /// As [`ObjectTable::retired`] (unchanged).
    pub fn remove_retired(&mut self, r: RetiredObject) -> Result<MemoryObject<T>, Error> {
        let i = self.resolve_retired(r)?;
        let obj = self.remove_slot(i, Option::take)?;
        self.retired = self.retired.saturating_sub(1);
        Ok(obj)
    }

    /// As [`ObjectTable::remove_retired`], handing the object to `f` where it lies (see
    /// [`ObjectTable::remove_with`]).
    ///
    /// # Errors
    /// As [`ObjectTable::retired`] (unchanged, `f` not called).
    pub fn remove_retired_with<R>(
        &mut self,
        r: RetiredObject,
        f: impl FnOnce(&mut MemoryObject<T>) -> R,
    ) -> Result<R, Error> {
        let i = self.resolve_retired(r)?;
        let out = self.remove_slot(i, |o| o.as_mut().map(f))?;
        self.retired = self.retired.saturating_sub(1);
        Ok(out)
    }
}
