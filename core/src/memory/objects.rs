//! [`ObjectTable`]: the memory objects of a process (libhsakmt's `vm_object` trees).
//!
//! Each object records one allocation or registration: its GPU virtual range, flags, kind,
//! owning node, KFD buffer handle(s), mmap offset, the nodes it is registered to and mapped on,
//! reference counts, user data and a caller-defined payload (e.g. the CPU mapping object).
//!
//! Objects are named by generation-checked [`MemoryHandle`]s: a handle whose slot was freed or
//! reused is rejected with [`Error::StaleHandle`], never silently resolved to another object.
//!
//! # Indexes and worst cases
//! Two AVL trees are embedded in the slots (no extra storage):
//! - by start address, over non-overlapping GPU ranges: [`ObjectTable::find_exact`] and
//!   [`ObjectTable::find_containing`] (interior pointers) walk one root-to-leaf path;
//! - by user-pointer range, for registered host memory (libhsakmt's `user_tree`). User ranges
//!   may overlap; the tree is an interval tree (subtree maxima of range ends), so
//!   [`ObjectTable::find_userptr_containing`] takes two root-to-leaf walks — where libhsakmt's
//!   range lookup may scan every node.
//!
//! With `H = ⌊1.4405 · log2(capacity + 2)⌋` (the maximum AVL height, 25 for 2^17 slots):
//! insert ≤ 4·`H` steps (overlap check, duplicate check, two insertions), remove ≤ 3·`H` per
//! tree, lookups ≤ 2·`H`, [`get`](ObjectTable::get) / [`get_mut`](ObjectTable::get_mut) `O(1)`,
//! [`check_invariants`](ObjectTable::check_invariants) `O(capacity)`. Iteration visits objects
//! in address order, `O(1)` amortised per step.
//!
//! # Storage
//! `S` is `[ObjectSlot<T>; N]` ([`InlineObjectTable`], `const fn new()`) or any
//! `AsRef<[ObjectSlot<T>]> + AsMut<[ObjectSlot<T>]>`, e.g. a `Box<[ObjectSlot<T>]>` built with
//! `(0..n).map(|_| ObjectSlot::new()).collect()` in a `std` crate.

use core::marker::PhantomData;

use super::avl::{self, Links, NIL, Tree, TreeMut};
use super::{Error, MemFlags, NodeSet, Violation};

/// A default object capacity that serves 100,000 live allocations.
pub const DEFAULT_CAPACITY: usize = 1 << 17;

/// The number of KFD buffer handles one object can hold. libhsakmt splits userptr ranges larger
/// than [`super::aperture::BIGGEST_SINGLE_BUF_SIZE`] (512 GiB − 2 MiB) into several buffers;
/// four cover 2 TiB.
pub const MAX_KFD_HANDLES: usize = 4;

/// What kind of memory an object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MemoryKind {
    /// Device memory (`KFD_IOC_ALLOC_MEM_FLAGS_VRAM`), possibly without an address
    /// (`NoAddress`: the start is a handle in the handle window).
    Vram,
    /// Non-paged system memory: a GTT buffer (`KFD_IOC_ALLOC_MEM_FLAGS_GTT`).
    HostGtt,
    /// Paged system memory allocated by the library as anonymous memory and made a userptr
    /// buffer (`HSA_USERPTR_FOR_PAGED_MEM`).
    HostUserptr,
    /// APU system memory from a plain `mmap`, no KFD buffer (libhsakmt's `cpuvm_aperture`).
    HostCpu,
    /// A queue doorbell page (`KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL`).
    Doorbell,
    /// The MMIO remap (HDP flush) page (`KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP`).
    Mmio,
    /// Scratch backing memory.
    Scratch,
    /// User memory registered by the application (`hsaKmtRegisterMemory*`).
    RegisteredUser,
    /// A buffer imported from a dma-buf or graphics handle.
    ImportedDmaBuf,
    /// An address range without memory (`OnlyAddress`).
    ReservedAddress,
}

/// Up to [`MAX_KFD_HANDLES`] KFD buffer handles (`handles[]` of a `vm_object`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct KfdHandles {
    len: u8,
    handles: [u64; MAX_KFD_HANDLES],
}

impl KfdHandles {
    /// No handle (e.g. `OnlyAddress` objects, APU `mmap` memory).
    pub const EMPTY: Self = Self { len: 0, handles: [0; MAX_KFD_HANDLES] };

    /// One handle.
    #[must_use]
    pub const fn single(handle: u64) -> Self {
        let mut handles = [0; MAX_KFD_HANDLES];
        handles[0] = handle;
        Self { len: 1, handles }
    }

    /// Appends a handle.
    ///
    /// # Errors
    /// [`Error::CapacityExhausted`] when [`MAX_KFD_HANDLES`] are held (unchanged).
    pub fn push(&mut self, handle: u64) -> Result<(), Error> {
        let slot = self
            .handles
            .get_mut(usize::from(self.len))
            .ok_or(Error::CapacityExhausted { capacity: MAX_KFD_HANDLES as u32 })?;
        *slot = handle;
        self.len += 1;
        Ok(())
    }

    /// Removes and returns the last handle.
    pub fn pop(&mut self) -> Option<u64> {
        let last = usize::from(self.len.checked_sub(1)?);
        self.len -= 1;
        self.handles.get(last).copied()
    }

    /// The handles.
    #[must_use]
    pub fn as_slice(&self) -> &[u64] {
        self.handles.get(..usize::from(self.len)).unwrap_or(&[])
    }

    /// The first handle (libhsakmt's `handles[0]`; 0 means "address only").
    #[must_use]
    pub fn first(&self) -> Option<u64> {
        self.as_slice().first().copied()
    }

    /// The number of handles.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether there is no handle.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A user-pointer range: the CPU address of registered host memory and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct UserRange {
    /// CPU address (need not be page aligned).
    pub addr: u64,
    /// Size in bytes.
    pub size: u64,
}

impl UserRange {
    /// Exclusive end.
    #[must_use]
    pub const fn end(&self) -> u64 {
        self.addr.wrapping_add(self.size)
    }
}

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

/// One memory object (libhsakmt `struct vm_object`).
///
/// The address fields (`start`, `size`, `userptr`) are keys of the table's indexes and are
/// therefore read-only once the object is in a table; everything else may be updated through
/// [`ObjectTable::get_mut`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MemoryObject<T> {
    start: u64,
    size: u64,
    userptr: Option<UserRange>,
    /// The kind of memory.
    pub kind: MemoryKind,
    /// The allocation flags (libhsakmt stores the `HsaMemFlags`, not the ioctl flags).
    pub flags: MemFlags,
    /// The owning topology node.
    pub node: u32,
    /// KFD buffer handle(s).
    pub kfd_handles: KfdHandles,
    /// The mmap offset the kernel returned for the buffer (render-node or kfd offset).
    pub mmap_offset: u64,
    /// Nodes the memory is registered to (`registered_node_id_array`).
    pub registered_nodes: NodeSet,
    /// Nodes the memory is mapped on (`mapped_node_id_array`).
    pub mapped_nodes: NodeSet,
    /// How many times the user range was registered (`registration_count`).
    pub registration_count: u32,
    /// How many times the object was mapped (`mapping_count`; userptr objects are mapped once
    /// and then reference counted).
    pub mapping_count: u32,
    /// Opaque user data (`user_data`).
    pub user_data: u64,
    /// Caller-defined payload (e.g. the CPU mapping, the aperture allocation).
    pub payload: T,
}

impl<T> MemoryObject<T> {
    /// An object covering `[start, start + size)` with no KFD handle, no user range, empty node
    /// sets and zero counts.
    #[must_use]
    pub const fn new(
        start: u64,
        size: u64,
        kind: MemoryKind,
        flags: MemFlags,
        node: u32,
        payload: T,
    ) -> Self {
        Self {
            start,
            size,
            userptr: None,
            kind,
            flags,
            node,
            kfd_handles: KfdHandles::EMPTY,
            mmap_offset: 0,
            registered_nodes: NodeSet::EMPTY,
            mapped_nodes: NodeSet::EMPTY,
            registration_count: 0,
            mapping_count: 0,
            user_data: 0,
            payload,
        }
    }

    /// This object with a user-pointer range (registered host memory).
    #[must_use]
    pub fn with_userptr(mut self, addr: u64, size: u64) -> Self {
        self.userptr = Some(UserRange { addr, size });
        self
    }

    /// This object with its KFD handle(s).
    #[must_use]
    pub fn with_kfd_handles(mut self, handles: KfdHandles) -> Self {
        self.kfd_handles = handles;
        self
    }

    /// First GPU virtual address (a handle for `NoAddress` objects).
    #[must_use]
    pub const fn start(&self) -> u64 {
        self.start
    }

    /// Size in bytes.
    #[must_use]
    pub const fn size(&self) -> u64 {
        self.size
    }

    /// Exclusive end of the GPU range (wrapping; a table never holds a range reaching 2^64).
    #[must_use]
    pub const fn end(&self) -> u64 {
        self.start.wrapping_add(self.size)
    }

    /// Whether `addr` lies in the GPU range.
    #[must_use]
    pub const fn contains(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end()
    }

    /// The user-pointer range, for registered host memory.
    #[must_use]
    pub const fn userptr(&self) -> Option<UserRange> {
        self.userptr
    }

    /// Increments the registration count; returns the new count.
    ///
    /// # Errors
    /// [`Error::RefcountOverflow`] (unchanged).
    pub fn add_registration(&mut self) -> Result<u32, Error> {
        self.registration_count =
            self.registration_count.checked_add(1).ok_or(Error::RefcountOverflow)?;
        Ok(self.registration_count)
    }

    /// Decrements the registration count; returns the new count (0: last registration gone).
    ///
    /// # Errors
    /// [`Error::RefcountUnderflow`] when it is already 0 (unchanged).
    pub fn drop_registration(&mut self) -> Result<u32, Error> {
        self.registration_count =
            self.registration_count.checked_sub(1).ok_or(Error::RefcountUnderflow)?;
        Ok(self.registration_count)
    }

    /// Increments the mapping count; returns the new count.
    ///
    /// # Errors
    /// [`Error::RefcountOverflow`] (unchanged).
    pub fn add_mapping(&mut self) -> Result<u32, Error> {
        self.mapping_count = self.mapping_count.checked_add(1).ok_or(Error::RefcountOverflow)?;
        Ok(self.mapping_count)
    }

    /// Decrements the mapping count; returns the new count.
    ///
    /// # Errors
    /// [`Error::RefcountUnderflow`] when it is already 0 (unchanged).
    pub fn drop_mapping(&mut self) -> Result<u32, Error> {
        self.mapping_count = self.mapping_count.checked_sub(1).ok_or(Error::RefcountUnderflow)?;
        Ok(self.mapping_count)
    }
}

/// One slot of an [`ObjectTable`]: storage unit, contents private.
pub struct ObjectSlot<T> {
    object: Option<MemoryObject<T>>,
    generation: u32,
    next_free: u32,
    by_start: Links,
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
            by_start: Links::EMPTY,
            by_user: Links::EMPTY,
            user_max_end: 0,
        }
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
            by_start: self.by_start,
            by_user: self.by_user,
            user_max_end: self.user_max_end,
        }
    }
}

impl<T> core::fmt::Debug for ObjectSlot<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ObjectSlot")
            .field("occupied", &self.object.is_some())
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

/// One of the two indexes, viewed over the slots. `USER` selects the user-pointer tree.
struct View<'a, T, const USER: bool> {
    slots: &'a [ObjectSlot<T>],
    root: u32,
}

struct ViewMut<'a, T, const USER: bool> {
    slots: &'a mut [ObjectSlot<T>],
    root: &'a mut u32,
}

fn slot_links<T, const USER: bool>(slots: &[ObjectSlot<T>], i: u32) -> Links {
    slots.get(i as usize).map_or(Links::EMPTY, |s| if USER { s.by_user } else { s.by_start })
}

fn slot_end<T, const USER: bool>(slots: &[ObjectSlot<T>], i: u32) -> u64 {
    let o = slots.get(i as usize).and_then(|s| s.object.as_ref());
    match o {
        Some(o) if USER => o.userptr.map_or(0, |u| u.end()),
        Some(o) => o.end(),
        None => 0,
    }
}

fn slot_max_end<T>(slots: &[ObjectSlot<T>], i: u32) -> u64 {
    slots.get(i as usize).map_or(0, |s| s.user_max_end)
}

impl<T, const USER: bool> Tree for View<'_, T, USER> {
    const INTERVAL: bool = USER;
    fn links(&self, i: u32) -> Links {
        slot_links::<T, USER>(self.slots, i)
    }
    fn end(&self, i: u32) -> u64 {
        slot_end::<T, USER>(self.slots, i)
    }
    fn max_end(&self, i: u32) -> u64 {
        slot_max_end(self.slots, i)
    }
    fn root(&self) -> u32 {
        self.root
    }
}

impl<T, const USER: bool> Tree for ViewMut<'_, T, USER> {
    const INTERVAL: bool = USER;
    fn links(&self, i: u32) -> Links {
        slot_links::<T, USER>(self.slots, i)
    }
    fn end(&self, i: u32) -> u64 {
        slot_end::<T, USER>(self.slots, i)
    }
    fn max_end(&self, i: u32) -> u64 {
        slot_max_end(self.slots, i)
    }
    fn root(&self) -> u32 {
        *self.root
    }
}

impl<T, const USER: bool> TreeMut for ViewMut<'_, T, USER> {
    fn links_mut(&mut self, i: u32) -> Option<&mut Links> {
        self.slots.get_mut(i as usize).map(|s| if USER { &mut s.by_user } else { &mut s.by_start })
    }
    fn set_max_end(&mut self, i: u32, value: u64) {
        if let Some(s) = self.slots.get_mut(i as usize) {
            s.user_max_end = value;
        }
    }
    fn set_root(&mut self, root: u32) {
        *self.root = root;
    }
}

/// The table of memory objects, over slot storage `S` (see the [module docs](self)).
///
/// # Invariants
/// - Objects' GPU ranges `[start, start + size)` are non-empty and pairwise disjoint.
/// - No two objects have the same user-pointer range.
/// - Every occupied slot is in the start index, and in the user index iff it has a user range;
///   nothing else is in either index.
/// - A handle resolves iff its slot is occupied and carries its generation.
/// - On any error, the table is unchanged.
pub struct ObjectTable<T, S> {
    slots: S,
    root_start: u32,
    root_user: u32,
    hwm: u32,
    recycled: u32,
    live: u32,
    _payload: PhantomData<T>,
}

/// An [`ObjectTable`] with `N` inline slots (usable in a `static`).
pub type InlineObjectTable<T, const N: usize> = ObjectTable<T, [ObjectSlot<T>; N]>;

impl<T, const N: usize> ObjectTable<T, [ObjectSlot<T>; N]> {
    /// An empty table with `N` inline slots.
    #[must_use]
    pub const fn new() -> Self {
        Self::with_storage([const { ObjectSlot::new() }; N])
    }
}

impl<T, const N: usize> Default for ObjectTable<T, [ObjectSlot<T>; N]> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, S> ObjectTable<T, S> {
    /// An empty table over `slots`, which must all be empty ([`ObjectSlot::new`]); their number
    /// is the capacity (at most `u32::MAX − 1`).
    pub const fn with_storage(slots: S) -> Self {
        Self {
            slots,
            root_start: NIL,
            root_user: NIL,
            hwm: 0,
            recycled: NIL,
            live: 0,
            _payload: PhantomData,
        }
    }

    /// The number of objects.
    #[must_use]
    pub const fn len(&self) -> u32 {
        self.live
    }

    /// Whether the table is empty.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.live == 0
    }
}

impl<T, S: AsRef<[ObjectSlot<T>]> + AsMut<[ObjectSlot<T>]>> ObjectTable<T, S> {
    /// The capacity.
    #[must_use]
    pub fn capacity(&self) -> u32 {
        u32::try_from(self.slots.as_ref().len()).map_or(u32::MAX - 1, |n| n.min(u32::MAX - 1))
    }

    fn starts(&self) -> View<'_, T, false> {
        View { slots: self.slots.as_ref(), root: self.root_start }
    }

    fn users(&self) -> View<'_, T, true> {
        View { slots: self.slots.as_ref(), root: self.root_user }
    }

    fn starts_mut(&mut self) -> ViewMut<'_, T, false> {
        ViewMut { slots: self.slots.as_mut(), root: &mut self.root_start }
    }

    fn users_mut(&mut self) -> ViewMut<'_, T, true> {
        ViewMut { slots: self.slots.as_mut(), root: &mut self.root_user }
    }

    fn slot(&self, i: u32) -> Option<&ObjectSlot<T>> {
        self.slots.as_ref().get(i as usize)
    }

    fn handle(&self, i: u32) -> MemoryHandle {
        MemoryHandle { index: i, generation: self.slot(i).map_or(0, |s| s.generation) }
    }

    /// The slot index a handle names, if it is live.
    fn resolve(&self, h: MemoryHandle) -> Result<u32, Error> {
        let s = self.slot(h.index).ok_or(Error::InvalidHandle)?;
        if h.generation == 0 || h.index >= self.hwm {
            return Err(Error::InvalidHandle);
        }
        if s.object.is_none() || s.generation != h.generation {
            return Err(Error::StaleHandle);
        }
        Ok(h.index)
    }

    fn check_new(&self, obj: &MemoryObject<T>) -> Result<(), Error> {
        if obj.size == 0 {
            return Err(Error::ZeroSize);
        }
        let last = obj.start.checked_add(obj.size - 1).ok_or(Error::SizeOverflow)?;
        if last == u64::MAX {
            return Err(Error::SizeOverflow);
        }
        if let Some(p) = avl::predecessor(&self.starts(), last)
            && self.starts().end(p) > obj.start
        {
            return Err(Error::ObjectOverlap { start: obj.start });
        }
        if let Some(u) = obj.userptr {
            self.check_userptr(u)?;
        }
        if self.recycled == NIL && self.hwm >= self.capacity() {
            return Err(Error::CapacityExhausted { capacity: self.capacity() });
        }
        Ok(())
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
    pub fn insert(
        &mut self,
        obj: MemoryObject<T>,
    ) -> Result<MemoryHandle, (Error, MemoryObject<T>)> {
        if let Err(e) = self.check_new(&obj) {
            return Err((e, obj));
        }
        let i = if self.recycled != NIL {
            let i = self.recycled;
            self.recycled = self.slot(i).map_or(NIL, |s| s.next_free);
            i
        } else {
            self.hwm += 1;
            self.hwm - 1
        };
        let (start, user) = (obj.start, obj.userptr);
        if let Some(s) = self.slots.as_mut().get_mut(i as usize) {
            s.generation = match s.generation.wrapping_add(1) {
                0 => 1,
                g => g,
            };
            s.next_free = NIL;
            s.object = Some(obj);
        }
        avl::insert(&mut self.starts_mut(), i, start);
        if let Some(u) = user {
            avl::insert(&mut self.users_mut(), i, u.addr);
        }
        self.live += 1;
        Ok(self.handle(i))
    }

    /// Removes an object and returns it.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`], [`Error::StaleHandle`] (unchanged).
    pub fn remove(&mut self, h: MemoryHandle) -> Result<MemoryObject<T>, Error> {
        let i = self.resolve(h)?;
        let has_user =
            self.slot(i).and_then(|s| s.object.as_ref()).is_some_and(|o| o.userptr.is_some());
        avl::remove(&mut self.starts_mut(), i);
        if has_user {
            avl::remove(&mut self.users_mut(), i);
        }
        let recycled = self.recycled;
        let slot = self.slots.as_mut().get_mut(i as usize).ok_or(Error::InvalidHandle)?;
        let obj = slot.object.take().ok_or(Error::StaleHandle)?;
        slot.next_free = recycled;
        self.recycled = i;
        self.live -= 1;
        Ok(obj)
    }

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
        if let Some(o) = self.slots.as_mut().get_mut(i as usize).and_then(|s| s.object.as_mut()) {
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
        self.slots
            .as_mut()
            .get_mut(i as usize)
            .and_then(|s| s.object.as_mut())
            .ok_or(Error::StaleHandle)
    }

    /// Whether a handle names a live object.
    #[must_use]
    pub fn contains(&self, h: MemoryHandle) -> bool {
        self.resolve(h).is_ok()
    }

    /// The object starting exactly at `addr`.
    #[must_use]
    pub fn find_exact(&self, addr: u64) -> Option<MemoryHandle> {
        avl::find_key(&self.starts(), addr).map(|i| self.handle(i))
    }

    /// The object whose GPU range contains `addr` (an interior pointer).
    #[must_use]
    pub fn find_containing(&self, addr: u64) -> Option<MemoryHandle> {
        let t = self.starts();
        let p = avl::predecessor(&t, addr)?;
        (t.end(p) > addr).then(|| self.handle(p))
    }

    /// The object registered with exactly the user range `[addr, addr + size)`.
    #[must_use]
    pub fn find_userptr(&self, addr: u64, size: u64) -> Option<MemoryHandle> {
        avl::find_key_end(&self.users(), addr, addr.wrapping_add(size)).map(|i| self.handle(i))
    }

    /// Among the objects whose user range contains `addr`, the one with the highest start
    /// (then the longest range) — the one libhsakmt's right-to-left walk would meet first.
    #[must_use]
    pub fn find_userptr_containing(&self, addr: u64) -> Option<MemoryHandle> {
        avl::stab_last(&self.users(), addr).map(|i| self.handle(i))
    }

    /// The objects in ascending order of start address.
    pub fn iter(&self) -> impl Iterator<Item = (MemoryHandle, &MemoryObject<T>)> + '_ {
        let t = self.starts();
        let first = avl::first(&t);
        core::iter::successors(first, move |&i| avl::next(&t, i)).filter_map(move |i| {
            let o = self.slot(i)?.object.as_ref()?;
            Some((self.handle(i), o))
        })
    }

    /// Removes every object (dropping payloads; `O(slots used so far)`). Handles issued before
    /// stay stale.
    pub fn clear(&mut self) {
        let hwm = self.hwm as usize;
        let mut next = NIL;
        for (i, s) in self.slots.as_mut().iter_mut().take(hwm).enumerate().rev() {
            s.object = None;
            s.by_start = Links::EMPTY;
            s.by_user = Links::EMPTY;
            s.next_free = next;
            next = i as u32;
        }
        self.recycled = next;
        self.root_start = NIL;
        self.root_user = NIL;
        self.live = 0;
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
            recycled += 1;
            r = s.next_free;
        }
        let (mut occupied, mut with_user) = (0u32, 0u32);
        for (i, s) in self.slots.as_ref().iter().enumerate().take(self.hwm as usize) {
            let i = i as u32;
            let Some(o) = &s.object else {
                if s.by_start.height != 0 || s.by_user.height != 0 {
                    return Err(Violation::IndexMembership { slot: i });
                }
                continue;
            };
            occupied += 1;
            if s.generation == 0
                || o.size == 0
                || s.by_start.height == 0
                || s.by_start.key != o.start
                || avl::find_key(&self.starts(), o.start) != Some(i)
            {
                return Err(Violation::IndexMembership { slot: i });
            }
            match o.userptr {
                Some(u) => {
                    with_user += 1;
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
        if occupied != self.live || occupied + recycled != self.hwm {
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
