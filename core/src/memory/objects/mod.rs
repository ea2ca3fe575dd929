//! [`ObjectTable`]: the memory objects of a process (libhsakmt's `vm_object` trees).
//!
//! Each object records one allocation or registration: its GPU virtual range, flags, kind,
//! owning node, KFD buffer handle(s), mmap offset, the nodes it is registered to and mapped on,
//! reference counts, user data and a caller-defined payload (e.g. the CPU mapping object).
//!
//! Objects are named by generation-checked [`MemoryHandle`]s: a handle whose slot was freed or
//! reused is rejected with [`Error::StaleHandle`], never silently resolved to another object.
//!
//! # Retired objects
//! An object can be *retired* instead of removed ([`ObjectTable::retire`]): every handle of it
//! goes stale and no lookup, iteration or count sees it any more, but it keeps its slot and its
//! entries in the start index and the address cache (its range still counts for overlap
//! checks). An object of the same address range can then take its place in `O(1)`
//! ([`ObjectTable::revive_with`]: rewrite, new handle) instead of a removal now and an insertion
//! later; or it is removed for good ([`ObjectTable::remove_retired`]). Retired objects are
//! named by [`RetiredObject`] references, which no handle API accepts. The memory manager's
//! recycle cache keeps freed allocations this way ([`super::recycle`]).
//!
//! # Indexes and worst cases
//! - **Start index**: an AVL tree over the non-overlapping GPU ranges, kept in its own compact
//!   node array. [`ObjectTable::find_containing`] (interior pointers) walks one root-to-leaf
//!   path. Insertion first tries the objects the caller names as likely neighbours (for an
//!   allocation, the allocations beside it in its aperture: by address through the address
//!   cache, [`ObjectTable::insert_near`], or by slot, [`ObjectTable::insert_beside`]), then the
//!   *finger* — the node touched by the
//!   last insertion or removal — as the new object's in-order neighbour (each a validated guess:
//!   one climb to the nearest ancestor on the other side), and descends from the root only if
//!   all fail; in a steady allocate/free cycle, of repeated or random shapes, no root descent
//!   happens.
//! - **Address cache**: a 2-choice, 4-way set-associative map from start address to slot,
//!   embedded in the index nodes (two entries per node, so 2 × capacity entries: at most 50 %
//!   load). An entry holds the slot index and, in the bits the capacity leaves free, a
//!   fingerprint of the address, so [`ObjectTable::find_exact`] compares up to 8 entries of 2
//!   buckets (two cache lines) and reads the index node of a matching entry only; an object
//!   that found both buckets full is not cached, and only while such objects exist does a miss
//!   fall back to the tree. The cache never changes a result, only its cost.
//! - **User-pointer index**, for registered host memory (libhsakmt's `user_tree`): user ranges
//!   may overlap, so it is an interval tree (subtree maxima of range ends);
//!   [`ObjectTable::find_userptr_containing`] takes two root-to-leaf walks — where libhsakmt's
//!   range lookup may scan every node.
//!
//! With `H = ⌊1.4405 · log2(capacity + 2)⌋` (the maximum AVL height, 25 for 2^17 slots), worst
//! cases: [`insert`](ObjectTable::insert) ≤ 5·`H` steps (finger climb, neighbour descent,
//! duplicate-userptr check, two insertions) plus 8 cache probes,
//! [`insert_near`](ObjectTable::insert_near) two more climbs and 16 more probes,
//! [`insert_beside`](ObjectTable::insert_beside) two more climbs;
//! [`remove`](ObjectTable::remove) and [`remove_retired`](ObjectTable::remove_retired) ≤ 3·`H`
//! per tree plus 8 probes; [`retire`](ObjectTable::retire) and
//! [`revive_with`](ObjectTable::revive_with) `O(1)`;
//! [`find_exact`](ObjectTable::find_exact) 8 probes, plus `H` only while uncached objects exist;
//! other lookups ≤ 2·`H`; [`get`](ObjectTable::get) / [`get_mut`](ObjectTable::get_mut)
//! `O(1)`; [`clear`](ObjectTable::clear) and [`check_invariants`](ObjectTable::check_invariants)
//! `O(capacity)`. Iteration visits objects in address order, `O(1)` amortised per step.
//!
//! # Storage
//! The start index and address cache live in a compact array of [`IndexNode`]s (32 bytes
//! each) so that lookups walk densely packed nodes instead of whole objects; the objects and
//! the user-pointer index live in [`ObjectSlot`]s. `S` is a pair of the two arrays
//! ([`ObjectStorage`]): `([IndexNode; N], [ObjectSlot<T>; N])` ([`InlineObjectTable`],
//! `const fn new()`), or e.g. `(Box<[IndexNode]>, Box<[ObjectSlot<T>]>)` built on the heap in a
//! `std` crate, without passing through the stack:
//! ```ignore
//! let table = ObjectTable::with_storage((
//!     vec![IndexNode::EMPTY; n].into_boxed_slice(),
//!     (0..n).map(|_| ObjectSlot::new()).collect::<Box<[_]>>(),
//! ));
//! ```
//!
//! # Files
//! - here: the table — slots, handles, insertion, removal, lookups by handle, iteration and
//!   the invariant check;
//! - `memory_object`: [`MemoryObject`] and what it holds;
//! - `address_index`: the start index, the address cache and the user-pointer index, and the
//!   lookups by address;
//! - `retired`: retiring, reviving and removing retired objects.
//!
//! # Example
//! ```
//! use hsakmt_core::memory::objects::{InlineObjectTable, MemoryKind, MemoryObject};
//! use hsakmt_core::memory::{Error, MemFlags};
//!
//! let mut table = InlineObjectTable::<(), 16>::new();
//! let flags = MemFlags::NON_PAGED | MemFlags::HOST_ACCESS;
//! let obj = MemoryObject::new(0x7f00_0000_0000, 0x2000, MemoryKind::Vram, flags, 1, ());
//! let h = table.insert(obj).map_err(|(e, _)| e)?;
//! assert_eq!(table.find_exact(0x7f00_0000_0000), Some(h));
//! assert_eq!(table.find_containing(0x7f00_0000_1fff), Some(h));
//! table.get_mut(h)?.mapped_nodes.insert(1)?;
//! let gone = table.remove(h)?;
//! assert_eq!(gone.size(), 0x2000);
//! assert_eq!(table.get(h).err(), Some(Error::StaleHandle)); // the handle is now stale
//! # Ok::<(), Error>(())
//! ```

mod address_index;
mod memory_object;
mod retired;

pub use address_index::IndexNode;
pub use memory_object::{KfdHandles, MemoryKind, MemoryObject, UserRange};
pub use retired::RetiredObject;

use core::marker::PhantomData;

use super::avl::{self, Links, NIL, Tree};
use super::{Error, Violation};

pub use crate::config::{MAX_KFD_HANDLES, OBJECT_TABLE_CAPACITY};

/// A generation-checked reference to an object of an [`ObjectTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MemoryHandle {
    index: u32,
    generation: u32,
}

impl MemoryHandle {
    /// The slot index.
    #[must_use]
    pub const fn index(self) -> u32 {
        self.index
    }

    /// The slot's generation when the handle was issued (never 0).
    #[must_use]
    pub const fn generation(self) -> u32 {
        self.generation
    }

    /// A 64-bit encoding (`generation << 32 | index`) for passing through C interfaces.
    #[must_use]
    pub const fn to_raw(self) -> u64 {
        ((self.generation as u64) << 32) | self.index as u64
    }

    /// Decodes [`MemoryHandle::to_raw`]. Any value decodes; the table validates it on use.
    #[must_use]
    pub const fn from_raw(raw: u64) -> Self {
        Self { index: raw as u32, generation: (raw >> 32) as u32 }
    }
}

/// The generation after `g` (never 0).
const fn next_generation(g: u32) -> u32 {
    match g.wrapping_add(1) {
        0 => 1,
        g => g,
    }
}

/// One object slot of an [`ObjectTable`]: storage unit, contents private.
///
/// Laid out in declaration order (`repr(C)`): what every handle check, removal and insertion
/// reads or writes (generation, free-list link, retired flag) beside the object's own first
/// fields, the user-pointer index links (registered memory only) last.
#[repr(C)]
pub struct ObjectSlot<T> {
    generation: u32,
    next_free: u32,
    /// The object is retired: kept in the start index, invisible (see
    /// [`ObjectTable::retire`]).
    retired: bool,
    object: Option<MemoryObject<T>>,
    by_user: Links,
    user_max_end: u64,
}

impl<T> ObjectSlot<T> {
    /// An empty slot.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            object: None,
            generation: 0,
            next_free: NIL,
            retired: false,
            by_user: Links::EMPTY,
            user_max_end: 0,
        }
    }
}

/// The storage of an [`ObjectTable`]: the start-index nodes and the object slots. Implemented
/// for every pair `(A, B)` of `AsRef + AsMut` slices of [`IndexNode`] and [`ObjectSlot`]; the
/// capacity is the shorter length.
pub trait ObjectStorage<T> {
    /// The start-index nodes.
    fn nodes(&self) -> &[IndexNode];
    /// The object slots.
    fn slots(&self) -> &[ObjectSlot<T>];
    /// Both, mutably.
    fn split_mut(&mut self) -> (&mut [IndexNode], &mut [ObjectSlot<T>]);
}

impl<T, A, B> ObjectStorage<T> for (A, B)
where
    A: AsRef<[IndexNode]> + AsMut<[IndexNode]>,
    B: AsRef<[ObjectSlot<T>]> + AsMut<[ObjectSlot<T>]>,
{
    fn nodes(&self) -> &[IndexNode] {
        self.0.as_ref()
    }
    fn slots(&self) -> &[ObjectSlot<T>] {
        self.1.as_ref()
    }
    fn split_mut(&mut self) -> (&mut [IndexNode], &mut [ObjectSlot<T>]) {
        (self.0.as_mut(), self.1.as_mut())
    }
}

impl<T> Default for ObjectSlot<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Clone> Clone for ObjectSlot<T> {
    fn clone(&self) -> Self {
        Self {
            object: self.object.clone(),
            generation: self.generation,
            next_free: self.next_free,
            retired: self.retired,
            by_user: self.by_user,
            user_max_end: self.user_max_end,
        }
    }
}

impl<T> core::fmt::Debug for ObjectSlot<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ObjectSlot")
            .field("occupied", &self.object.is_some())
            .field("retired", &self.retired)
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

/// The table of memory objects, over storage `S` (see the [module docs](self)).
///
/// # Invariants
/// - Objects' GPU ranges `[start, start + size)` are non-empty and pairwise disjoint.
/// - No two objects have the same user-pointer range.
/// - Every occupied slot is in the start index, and in the user index iff it has a user range;
///   nothing else is in either index.
/// - A handle resolves iff its slot is occupied by a live (not retired) object and carries its
///   generation.
/// - A retired object is in the start index and the address cache, never in the user index;
///   no lookup, iteration or handle reaches it.
/// - On any error, the table is unchanged.
pub struct ObjectTable<T, S> {
    slots: S,
    root_start: u32,
    root_user: u32,
    hwm: u32,
    recycled: u32,
    live: u32,
    /// Retired objects (occupied slots that are not live).
    retired: u32,
    /// Live objects that found no free entry in the address cache.
    uncached: u32,
    /// A recently inserted node, or the parent of a recently removed one: a guess of the
    /// neighbour of the next insertion.
    finger: u32,
    _payload: PhantomData<T>,
}

/// An [`ObjectTable`] with `N` inline slots (usable in a `static`).
pub type InlineObjectTable<T, const N: usize> =
    ObjectTable<T, ([IndexNode; N], [ObjectSlot<T>; N])>;

impl<T, const N: usize> ObjectTable<T, ([IndexNode; N], [ObjectSlot<T>; N])> {
    /// An empty table with `N` inline slots.
    #[must_use]
    pub const fn new() -> Self {
        Self::with_storage(([IndexNode::EMPTY; N], [const { ObjectSlot::new() }; N]))
    }
}

impl<T, const N: usize> Default for ObjectTable<T, ([IndexNode; N], [ObjectSlot<T>; N])> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, S> ObjectTable<T, S> {
    /// An empty table over `storage`, whose slots must all be empty ([`ObjectSlot::new`]); the
    /// capacity is the shorter of its two arrays (at most `u32::MAX − 1`).
    pub const fn with_storage(slots: S) -> Self {
        Self {
            slots,
            root_start: NIL,
            root_user: NIL,
            hwm: 0,
            recycled: NIL,
            live: 0,
            retired: 0,
            uncached: 0,
            finger: NIL,
            _payload: PhantomData,
        }
    }

    /// The number of (live) objects.
    #[must_use]
    pub const fn len(&self) -> u32 {
        self.live
    }

    /// The number of retired objects.
    #[must_use]
    pub const fn retired_len(&self) -> u32 {
        self.retired
    }

    /// Whether the table is empty.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.live == 0
    }
}

impl<T, S: ObjectStorage<T>> ObjectTable<T, S> {
    /// The capacity.
    #[must_use]
    pub fn capacity(&self) -> u32 {
        let n = self.slots.nodes().len().min(self.slots.slots().len());
        u32::try_from(n).map_or(u32::MAX - 1, |n| n.min(u32::MAX - 1))
    }

    fn slot(&self, i: u32) -> Option<&ObjectSlot<T>> {
        self.slots.slots().get(i as usize)
    }

    fn slot_mut(&mut self, i: u32) -> Option<&mut ObjectSlot<T>> {
        self.slots.split_mut().1.get_mut(i as usize)
    }

    /// The handle of the object in slot `i`, unless it is retired (or the slot is empty).
    fn visible(&self, i: u32) -> Option<MemoryHandle> {
        let s = self.slot(i)?;
        (s.object.is_some() && !s.retired)
            .then_some(MemoryHandle { index: i, generation: s.generation })
    }

    /// The slot index a handle names, if it is live.
    #[inline]
    fn resolve(&self, h: MemoryHandle) -> Result<u32, Error> {
        let s = self.slot(h.index).ok_or(Error::InvalidHandle)?;
        if h.generation == 0 || h.index >= self.hwm {
            return Err(Error::InvalidHandle);
        }
        if s.object.is_none() || s.retired || s.generation != h.generation {
            return Err(Error::StaleHandle);
        }
        Ok(h.index)
    }

    /// The in-order neighbours of a new object starting at `start` in the start index: next
    /// to one of the `near` slots (guesses), or to the finger, or else found by a descent from
    /// the root.
    fn neighbours_of(&self, start: u64, near: impl Iterator<Item = u32>) -> (u32, u32) {
        let t = self.starts();
        near.chain(core::iter::once(self.finger))
            .find_map(|c| avl::neighbours_near(&t, start, c))
            .unwrap_or_else(|| avl::neighbours(&t, start))
    }

    /// Validates a new object; returns its in-order neighbours in the start index.
    fn check_new(
        &self,
        obj: &MemoryObject<T>,
        near: impl Iterator<Item = u32>,
    ) -> Result<(u32, u32), Error> {
        if obj.size == 0 {
            return Err(Error::ZeroSize);
        }
        let end = obj.start.checked_add(obj.size).ok_or(Error::SizeOverflow)?;
        let t = self.starts();
        let (pred, succ) = self.neighbours_of(obj.start, near);
        if (pred != NIL && t.end(pred) > obj.start) || (succ != NIL && t.links(succ).key < end) {
            return Err(Error::ObjectOverlap { start: obj.start });
        }
        if let Some(u) = obj.userptr {
            self.check_userptr(u)?;
        }
        if self.recycled == NIL && self.hwm >= self.capacity() {
            return Err(Error::CapacityExhausted { capacity: self.capacity() });
        }
        Ok((pred, succ))
    }

    fn check_userptr(&self, u: UserRange) -> Result<(), Error> {
        if u.size == 0 {
            return Err(Error::ZeroSize);
        }
        u.addr.checked_add(u.size).ok_or(Error::SizeOverflow)?;
        if avl::find_key_end(&self.users(), u.addr, u.end()).is_some() {
            return Err(Error::DuplicateUserptr { addr: u.addr });
        }
        Ok(())
    }

    /// Inserts an object; returns its handle.
    ///
    /// # Errors
    /// The object comes back with: [`Error::ZeroSize`] (empty GPU or user range),
    /// [`Error::SizeOverflow`] (a range reaching 2^64), [`Error::ObjectOverlap`] (its GPU range
    /// overlaps an object's), [`Error::DuplicateUserptr`] (the same user range is in the table),
    /// [`Error::CapacityExhausted`]. The table is unchanged.
    #[expect(
        clippy::result_large_err,
        reason = "a rejected object is handed back to the caller (heapless style), not dropped"
    )]
    pub fn insert(
        &mut self,
        obj: MemoryObject<T>,
    ) -> Result<MemoryHandle, (Error, MemoryObject<T>)> {
        self.insert_near(obj, [None, None])
    }

    /// As [`ObjectTable::insert`], given the start addresses of objects that are likely the new
    /// object's neighbours in address order (for an allocation, the allocations on either side
    /// of its address range, e.g. from
    /// [`VaAllocator::neighbour_allocations`](crate::memory::va::VaAllocator::neighbour_allocations)).
    /// A hint is only a guess — the result never depends on it — but a right one spares the
    /// descent from the root: the new object is attached next to that neighbour after an address
    /// cache lookup and a climb to the neighbour's nearest ancestor on the other side.
    ///
    /// # Errors
    /// As [`ObjectTable::insert`].
    #[expect(
        clippy::result_large_err,
        reason = "a rejected object is handed back to the caller (heapless style), not dropped"
    )]
    pub fn insert_near(
        &mut self,
        obj: MemoryObject<T>,
        near: [Option<u64>; 2],
    ) -> Result<MemoryHandle, (Error, MemoryObject<T>)> {
        // The address cache's buckets for the new object load while the tree is searched.
        core::hint::black_box(self.touch_buckets(obj.start));
        let near = near.into_iter().flatten().filter_map(|a| self.cached_start(a));
        match self.check_new(&obj, near) {
            Ok((pred, succ)) => Ok(self.insert_checked(obj, pred, succ)),
            Err(e) => Err((e, obj)),
        }
    }

    /// As [`ObjectTable::insert_near`], given the likely neighbours as slot indexes
    /// ([`MemoryHandle::index`], [`RetiredObject::index`]) instead of addresses — for instance
    /// the owners an allocator recorded for the allocations beside the new one
    /// ([`VaAllocator::neighbour_owners`](crate::memory::va::VaAllocator::neighbour_owners)):
    /// no address cache lookup. Hints are only guesses, checked against the index; the result
    /// never depends on them.
    ///
    /// # Errors
    /// As [`ObjectTable::insert`].
    #[expect(
        clippy::result_large_err,
        reason = "a rejected object is handed back to the caller (heapless style), not dropped"
    )]
    pub fn insert_beside(
        &mut self,
        obj: MemoryObject<T>,
        near: [Option<u32>; 2],
    ) -> Result<MemoryHandle, (Error, MemoryObject<T>)> {
        core::hint::black_box(self.touch_buckets(obj.start));
        match self.check_new(&obj, near.into_iter().flatten()) {
            Ok((pred, succ)) => Ok(self.insert_checked(obj, pred, succ)),
            Err(e) => Err((e, obj)),
        }
    }

    /// Inserts an object [`ObjectTable::check_new`] accepted, between its in-order neighbours.
    fn insert_checked(&mut self, obj: MemoryObject<T>, pred: u32, succ: u32) -> MemoryHandle {
        let i = if self.recycled != NIL {
            let i = self.recycled;
            self.recycled = self.slot(i).map_or(NIL, |s| s.next_free);
            i
        } else {
            let i = self.hwm;
            self.hwm = self.hwm.saturating_add(1);
            i
        };
        let (start, user) = (obj.start, obj.userptr);
        if let Some(s) = self.slot_mut(i) {
            s.generation = next_generation(s.generation);
            s.next_free = NIL;
            s.retired = false;
            s.object = Some(obj);
        }
        avl::insert_hinted(&mut self.starts_mut(), i, start, pred, succ);
        self.cache_insert(start, i);
        self.finger = i;
        if let Some(u) = user {
            avl::insert(&mut self.users_mut(), i, u.addr);
        }
        self.live = self.live.saturating_add(1);
        MemoryHandle { index: i, generation: self.slot(i).map_or(0, |s| s.generation) }
    }

    /// Removes an object and returns it.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`], [`Error::StaleHandle`] (unchanged).
    pub fn remove(&mut self, h: MemoryHandle) -> Result<MemoryObject<T>, Error> {
        let i = self.resolve(h)?;
        let obj = self.remove_slot(i, Option::take)?;
        self.live = self.live.saturating_sub(1);
        Ok(obj)
    }

    /// Removes an object as [`ObjectTable::remove`] does, but hands it to `f` where it lies and
    /// drops it there, returning what `f` returns: the parts of the record `f` does not read
    /// (and that have no drop glue) are never loaded, where a removal by value copies all of
    /// it.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`], [`Error::StaleHandle`] (unchanged, `f` not called).
    pub fn remove_with<R>(
        &mut self,
        h: MemoryHandle,
        f: impl FnOnce(&mut MemoryObject<T>) -> R,
    ) -> Result<R, Error> {
        let i = self.resolve(h)?;
        let r = self.remove_slot(i, |o| o.as_mut().map(f))?;
        self.live = self.live.saturating_sub(1);
        Ok(r)
    }

    /// Takes the object of occupied slot `i` out of the indexes and the slot: `f` gets the
    /// slot's object (present) and what it returns is returned; whatever it leaves is dropped.
    fn remove_slot<R>(
        &mut self,
        i: u32,
        f: impl FnOnce(&mut Option<MemoryObject<T>>) -> Option<R>,
    ) -> Result<R, Error> {
        let (start, has_user) = self
            .slot(i)
            .and_then(|s| s.object.as_ref())
            .map_or((0, false), |o| (o.start, o.userptr.is_some()));
        let links = self.starts().links(i);
        // The cache first: its buckets are read while the tree's nodes are still on their way.
        self.cache_remove(start, i);
        avl::remove(&mut self.starts_mut(), i);
        // The removed node's parent (or, for an inner node, whatever took its place) borders
        // the freed gap: the likely neighbour of the next insertion there.
        self.finger = if links.parent != NIL { links.parent } else { self.root_start };
        if has_user {
            avl::remove(&mut self.users_mut(), i);
        }
        let recycled = self.recycled;
        let slot = self.slot_mut(i).ok_or(Error::InvalidHandle)?;
        let r = f(&mut slot.object).ok_or(Error::StaleHandle)?;
        slot.object = None;
        slot.next_free = recycled;
        slot.retired = false;
        self.recycled = i;
        Ok(r)
    }

    // ---- retired objects -------------------------------------------------------------------
    //
    // A retired object has been freed as far as every user of the table can tell — no lookup,
    // iteration or handle reaches it, `len` does not count it — but it keeps its slot and its
    // place in the start index and the address cache, so that an object of the same address
    // range can take its place again in O(1) (`revive`) instead of a removal now and an
    // insertion later. The caller keeps its address range reserved meanwhile (the ranges of
    // retired objects still count for overlap checks) and eventually either revives it or
    // removes it for good (`remove_retired`).

    /// Sets or clears an object's user-pointer range (re-indexing it).
    ///
    /// # Errors
    /// [`Error::InvalidHandle`], [`Error::StaleHandle`], and for a new range
    /// [`Error::ZeroSize`], [`Error::SizeOverflow`], [`Error::DuplicateUserptr`] (unchanged).
    pub fn set_userptr(&mut self, h: MemoryHandle, user: Option<UserRange>) -> Result<(), Error> {
        let i = self.resolve(h)?;
        let old = self.slot(i).and_then(|s| s.object.as_ref()).and_then(|o| o.userptr);
        if old == user {
            return Ok(());
        }
        if let Some(u) = user {
            self.check_userptr(u)?;
        }
        if old.is_some() {
            avl::remove(&mut self.users_mut(), i);
        }
        if let Some(o) = self.slot_mut(i).and_then(|s| s.object.as_mut()) {
            o.userptr = user;
        }
        if let Some(u) = user {
            avl::insert(&mut self.users_mut(), i, u.addr);
        }
        Ok(())
    }

    /// The object a handle names.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`], [`Error::StaleHandle`].
    pub fn get(&self, h: MemoryHandle) -> Result<&MemoryObject<T>, Error> {
        let i = self.resolve(h)?;
        self.slot(i).and_then(|s| s.object.as_ref()).ok_or(Error::StaleHandle)
    }

    /// The object a handle names, mutably (its address fields stay read-only).
    ///
    /// # Errors
    /// [`Error::InvalidHandle`], [`Error::StaleHandle`].
    pub fn get_mut(&mut self, h: MemoryHandle) -> Result<&mut MemoryObject<T>, Error> {
        let i = self.resolve(h)?;
        self.slot_mut(i).and_then(|s| s.object.as_mut()).ok_or(Error::StaleHandle)
    }

    /// Whether a handle names a live object.
    #[must_use]
    pub fn contains(&self, h: MemoryHandle) -> bool {
        self.resolve(h).is_ok()
    }

    /// The objects in ascending order of start address.
    pub fn iter(&self) -> impl Iterator<Item = (MemoryHandle, &MemoryObject<T>)> + '_ {
        let t = self.starts();
        let first = avl::first(&t);
        core::iter::successors(first, move |&i| avl::next(&t, i)).filter_map(move |i| {
            let h = self.visible(i)?;
            Some((h, self.slot(i)?.object.as_ref()?))
        })
    }

    /// Removes every object, handing each payload to `f` instead of dropping it in place
    /// (`O(capacity)`): for payloads that must not be dropped normally, e.g. views of memory a
    /// forked child did not inherit. Handles issued before stay stale.
    pub fn clear_with(&mut self, mut f: impl FnMut(T)) {
        let hwm = self.hwm as usize;
        let (_, slots) = self.slots.split_mut();
        for s in slots.iter_mut().take(hwm) {
            if let Some(o) = s.object.take() {
                f(o.payload);
            }
        }
        self.clear();
    }

    /// Removes every object, retired ones included (dropping payloads; `O(capacity)`).
    /// Handles and retired-object references issued before stay stale.
    pub fn clear(&mut self) {
        let hwm = self.hwm as usize;
        let (nodes, slots) = self.slots.split_mut();
        for n in nodes.iter_mut() {
            *n = IndexNode::EMPTY;
        }
        let mut next = NIL;
        for (i, s) in slots.iter_mut().take(hwm).enumerate().rev() {
            s.object = None;
            s.retired = false;
            s.by_user = Links::EMPTY;
            s.next_free = next;
            next = i as u32;
        }
        self.recycled = next;
        self.root_start = NIL;
        self.root_user = NIL;
        self.live = 0;
        self.retired = 0;
        self.uncached = 0;
        self.finger = NIL;
    }

    /// Verifies every invariant (`O(capacity)`; for tests and debug sweeps).
    ///
    /// # Errors
    /// The first [`Violation`] found.
    pub fn check_invariants(&self) -> Result<(), Violation> {
        let cap = self.capacity();
        if self.hwm > cap {
            return Err(Violation::SlotList { slot: self.hwm });
        }
        // Recycled slots are empty and distinct; with the occupied ones they make up hwm.
        let mut recycled = 0u32;
        let mut r = self.recycled;
        while r != NIL {
            let Some(s) = self.slot(r) else { return Err(Violation::SlotList { slot: r }) };
            if s.object.is_some() || r >= self.hwm || recycled >= self.hwm {
                return Err(Violation::SlotList { slot: r });
            }
            recycled = recycled.saturating_add(1);
            r = s.next_free;
        }
        let (mut occupied, mut with_user, mut retired) = (0u32, 0u32, 0u32);
        let nodes = self.slots.nodes();
        for (i, s) in self.slots.slots().iter().enumerate().take(self.hwm as usize) {
            let i = i as u32;
            let start = nodes.get(i as usize).map_or(Links::EMPTY, |n| n.links);
            let Some(o) = &s.object else {
                if start.height != 0 || s.by_user.height != 0 {
                    return Err(Violation::IndexMembership { slot: i });
                }
                continue;
            };
            occupied = occupied.saturating_add(1);
            if s.retired {
                retired = retired.saturating_add(1);
                if o.userptr.is_some() {
                    return Err(Violation::IndexMembership { slot: i });
                }
            }
            if s.generation == 0
                || o.size == 0
                || start.height == 0
                || start.key != o.start
                || avl::find_key(&self.starts(), o.start) != Some(i)
            {
                return Err(Violation::IndexMembership { slot: i });
            }
            match o.userptr {
                Some(u) => {
                    with_user = with_user.saturating_add(1);
                    if s.by_user.height == 0
                        || s.by_user.key != u.addr
                        || avl::find_key_end(&self.users(), u.addr, u.end()) != Some(i)
                    {
                        return Err(Violation::IndexMembership { slot: i });
                    }
                }
                None if s.by_user.height != 0 => {
                    return Err(Violation::IndexMembership { slot: i });
                }
                None => {}
            }
        }
        if retired != self.retired
            || occupied != self.live.saturating_add(self.retired)
            || occupied.saturating_add(recycled) != self.hwm
        {
            return Err(Violation::Counter);
        }
        // Address cache: entries name live objects in one of their two buckets, at most once;
        // the others are counted as uncached.
        let mut cached = 0u32;
        let buckets = (cap / 2) as usize;
        for b in 0..buckets {
            for k in 0..4 {
                let raw = Self::cache_entry(nodes, b, k);
                if raw == NIL {
                    continue;
                }
                let e = self.entry_slot(raw);
                let Some(o) = self.slot(e).and_then(|s| s.object.as_ref()) else {
                    return Err(Violation::IndexMembership { slot: e });
                };
                if !self.buckets_of(o.start).contains(&b)
                    || raw != self.cache_entry_for(o.start, e)
                    || self.cache_find_slot(o.start, e) != Some((b, k))
                {
                    return Err(Violation::IndexMembership { slot: e });
                }
                cached = cached.saturating_add(1);
            }
        }
        for n in nodes.iter().skip(buckets.saturating_mul(2)) {
            if n.cache != [NIL; 2] {
                return Err(Violation::IndexMembership { slot: NIL });
            }
        }
        if cached.saturating_add(self.uncached) != self.live.saturating_add(self.retired) {
            return Err(Violation::Counter);
        }
        if avl::check(&self.starts(), cap)? != occupied
            || avl::check(&self.users(), cap)? != with_user
        {
            return Err(Violation::IndexMembership { slot: NIL });
        }
        // Disjoint GPU ranges: consecutive objects in address order do not overlap.
        let t = self.starts();
        let mut prev: Option<u32> = None;
        let mut cur = avl::first(&t);
        while let Some(i) = cur {
            if let Some(p) = prev
                && t.end(p) > t.links(i).key
            {
                return Err(Violation::Overlap { slot: i });
            }
            prev = Some(i);
            cur = avl::next(&t, i);
        }
        Ok(())
    }
}

impl<T, S> core::fmt::Debug for ObjectTable<T, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ObjectTable").field("len", &self.live).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
