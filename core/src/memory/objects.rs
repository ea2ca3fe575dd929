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
//!   path. Insertion first tries the *finger* — the node touched by the last insertion or
//!   removal — as the new object's in-order neighbour (a validated guess: one climb to the
//!   nearest ancestor on the other side), and descends from the root only if that fails; in a
//!   steady allocate/free cycle the finger hits and no root descent happens.
//! - **Address cache**: a 2-choice, 4-way set-associative map from start address to slot,
//!   embedded in the index nodes (two entries per node, so 2 × capacity entries: at most 50 %
//!   load). [`ObjectTable::find_exact`] probes at most 8 entries in 2 buckets; an object that
//!   found both buckets full is not cached, and only while such objects exist does a miss fall
//!   back to the tree. The cache never changes a result, only its cost.
//! - **User-pointer index**, for registered host memory (libhsakmt's `user_tree`): user ranges
//!   may overlap, so it is an interval tree (subtree maxima of range ends);
//!   [`ObjectTable::find_userptr_containing`] takes two root-to-leaf walks — where libhsakmt's
//!   range lookup may scan every node.
//!
//! With `H = ⌊1.4405 · log2(capacity + 2)⌋` (the maximum AVL height, 25 for 2^17 slots), worst
//! cases: [`insert`](ObjectTable::insert) ≤ 5·`H` steps (finger climb, neighbour descent,
//! duplicate-userptr check, two insertions) plus 8 cache probes;
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

/// A generation-checked reference to a *retired* object of an [`ObjectTable`] (see
/// [`ObjectTable::retire`]): distinct from [`MemoryHandle`], so that no lookup or handle can
/// reach a retired object by accident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RetiredObject {
    index: u32,
    generation: u32,
}

impl RetiredObject {
    /// The slot index.
    #[must_use]
    pub const fn index(self) -> u32 {
        self.index
    }
}

/// The generation after `g` (never 0).
const fn next_generation(g: u32) -> u32 {
    match g.wrapping_add(1) {
        0 => 1,
        g => g,
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

/// A node of an [`ObjectTable`]'s start index (and two entries of its address cache): storage
/// unit, contents private.
#[derive(Debug, Clone, Copy)]
pub struct IndexNode {
    links: Links,
    cache: [u32; 2],
}

impl IndexNode {
    /// An unused node.
    pub const EMPTY: Self = Self { links: Links::EMPTY, cache: [NIL; 2] };
}

impl Default for IndexNode {
    fn default() -> Self {
        Self::EMPTY
    }
}

/// One object slot of an [`ObjectTable`]: storage unit, contents private.
pub struct ObjectSlot<T> {
    object: Option<MemoryObject<T>>,
    generation: u32,
    next_free: u32,
    /// The object is retired: kept in the start index, invisible (see
    /// [`ObjectTable::retire`]).
    retired: bool,
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

/// The start index, viewed over the node array (keys, links) and the slots (range ends).
struct StartView<'a, T> {
    nodes: &'a [IndexNode],
    slots: &'a [ObjectSlot<T>],
    root: u32,
}

struct StartViewMut<'a, T> {
    nodes: &'a mut [IndexNode],
    slots: &'a [ObjectSlot<T>],
    root: &'a mut u32,
}

/// The user-pointer index, viewed over the slots.
struct UserView<'a, T> {
    slots: &'a [ObjectSlot<T>],
    root: u32,
}

struct UserViewMut<'a, T> {
    slots: &'a mut [ObjectSlot<T>],
    root: &'a mut u32,
}

#[inline]
fn object<T>(slots: &[ObjectSlot<T>], i: u32) -> Option<&MemoryObject<T>> {
    slots.get(i as usize).and_then(|s| s.object.as_ref())
}

#[inline]
fn start_links(nodes: &[IndexNode], i: u32) -> Links {
    nodes.get(i as usize).map_or(Links::EMPTY, |n| n.links)
}

#[inline]
fn start_end<T>(slots: &[ObjectSlot<T>], i: u32) -> u64 {
    object(slots, i).map_or(0, MemoryObject::end)
}

#[inline]
fn user_links<T>(slots: &[ObjectSlot<T>], i: u32) -> Links {
    slots.get(i as usize).map_or(Links::EMPTY, |s| s.by_user)
}

#[inline]
fn user_end<T>(slots: &[ObjectSlot<T>], i: u32) -> u64 {
    object(slots, i).and_then(|o| o.userptr).map_or(0, |u| u.end())
}

#[inline]
fn user_max_end<T>(slots: &[ObjectSlot<T>], i: u32) -> u64 {
    slots.get(i as usize).map_or(0, |s| s.user_max_end)
}

impl<T> Tree for StartView<'_, T> {
    const INTERVAL: bool = false;
    #[inline]
    fn links(&self, i: u32) -> Links {
        start_links(self.nodes, i)
    }
    #[inline]
    fn end(&self, i: u32) -> u64 {
        start_end(self.slots, i)
    }
    #[inline]
    fn max_end(&self, _i: u32) -> u64 {
        0
    }
    #[inline]
    fn root(&self) -> u32 {
        self.root
    }
}

impl<T> Tree for StartViewMut<'_, T> {
    const INTERVAL: bool = false;
    #[inline]
    fn links(&self, i: u32) -> Links {
        start_links(self.nodes, i)
    }
    #[inline]
    fn end(&self, i: u32) -> u64 {
        start_end(self.slots, i)
    }
    #[inline]
    fn max_end(&self, _i: u32) -> u64 {
        0
    }
    #[inline]
    fn root(&self) -> u32 {
        *self.root
    }
}

impl<T> TreeMut for StartViewMut<'_, T> {
    #[inline]
    fn links_mut(&mut self, i: u32) -> Option<&mut Links> {
        self.nodes.get_mut(i as usize).map(|n| &mut n.links)
    }
    #[inline]
    fn set_max_end(&mut self, _i: u32, _value: u64) {}
    #[inline]
    fn set_root(&mut self, root: u32) {
        *self.root = root;
    }
}

impl<T> Tree for UserView<'_, T> {
    const INTERVAL: bool = true;
    #[inline]
    fn links(&self, i: u32) -> Links {
        user_links(self.slots, i)
    }
    #[inline]
    fn end(&self, i: u32) -> u64 {
        user_end(self.slots, i)
    }
    #[inline]
    fn max_end(&self, i: u32) -> u64 {
        user_max_end(self.slots, i)
    }
    #[inline]
    fn root(&self) -> u32 {
        self.root
    }
}

impl<T> Tree for UserViewMut<'_, T> {
    const INTERVAL: bool = true;
    #[inline]
    fn links(&self, i: u32) -> Links {
        user_links(self.slots, i)
    }
    #[inline]
    fn end(&self, i: u32) -> u64 {
        user_end(self.slots, i)
    }
    #[inline]
    fn max_end(&self, i: u32) -> u64 {
        user_max_end(self.slots, i)
    }
    #[inline]
    fn root(&self) -> u32 {
        *self.root
    }
}

impl<T> TreeMut for UserViewMut<'_, T> {
    #[inline]
    fn links_mut(&mut self, i: u32) -> Option<&mut Links> {
        self.slots.get_mut(i as usize).map(|s| &mut s.by_user)
    }
    #[inline]
    fn set_max_end(&mut self, i: u32, value: u64) {
        if let Some(s) = self.slots.get_mut(i as usize) {
            s.user_max_end = value;
        }
    }
    #[inline]
    fn set_root(&mut self, root: u32) {
        *self.root = root;
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

    fn starts(&self) -> StartView<'_, T> {
        StartView { nodes: self.slots.nodes(), slots: self.slots.slots(), root: self.root_start }
    }

    fn users(&self) -> UserView<'_, T> {
        UserView { slots: self.slots.slots(), root: self.root_user }
    }

    fn starts_mut(&mut self) -> StartViewMut<'_, T> {
        let (nodes, slots) = self.slots.split_mut();
        StartViewMut { nodes, slots, root: &mut self.root_start }
    }

    fn users_mut(&mut self) -> UserViewMut<'_, T> {
        UserViewMut { slots: self.slots.split_mut().1, root: &mut self.root_user }
    }

    fn slot(&self, i: u32) -> Option<&ObjectSlot<T>> {
        self.slots.slots().get(i as usize)
    }

    fn slot_mut(&mut self, i: u32) -> Option<&mut ObjectSlot<T>> {
        self.slots.split_mut().1.get_mut(i as usize)
    }

    // ---- address cache -------------------------------------------------------------------
    //
    // A 2-choice, 4-way set-associative map from start address to slot, embedded in the index
    // nodes (bucket b = the cache entries of nodes 2b and 2b+1). An object that finds both of
    // its buckets full is simply not cached (`uncached` counts them); lookups then fall back to
    // the tree, so the cache never changes a result, only the cost.

    fn buckets_of(&self, addr: u64) -> [usize; 2] {
        let n = (self.capacity() / 2) as u64;
        let page = addr.rotate_right(12);
        let h1 = page.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        let h2 = page.wrapping_mul(0xC2B2_AE3D_27D4_EB4F) >> 32;
        [((h1 * n) >> 32) as usize, ((h2 * n) >> 32) as usize]
    }

    fn cache_entry(nodes: &[IndexNode], bucket: usize, k: usize) -> u32 {
        nodes.get(bucket * 2 + k / 2).and_then(|n| n.cache.get(k % 2)).copied().unwrap_or(NIL)
    }

    fn cache_set(&mut self, bucket: usize, k: usize, v: u32) {
        let nodes = self.slots.split_mut().0;
        if let Some(e) = nodes.get_mut(bucket * 2 + k / 2).and_then(|n| n.cache.get_mut(k % 2)) {
            *e = v;
        }
    }

    /// Where slot `i` sits in the cache (bucket, entry), if it does.
    fn cache_find_slot(&self, addr: u64, i: u32) -> Option<(usize, usize)> {
        let nodes = self.slots.nodes();
        self.buckets_of(addr)
            .into_iter()
            .flat_map(|b| (0..4).map(move |k| (b, k)))
            .find(|&(b, k)| Self::cache_entry(nodes, b, k) == i)
    }

    fn cache_insert(&mut self, addr: u64, i: u32) {
        let nodes = self.slots.nodes();
        let enabled = self.capacity() >= 2;
        let free = self
            .buckets_of(addr)
            .into_iter()
            .flat_map(|b| (0..4).map(move |k| (b, k)))
            .find(|&(b, k)| enabled && Self::cache_entry(nodes, b, k) == NIL);
        match free {
            Some((b, k)) => self.cache_set(b, k, i),
            None => self.uncached += 1,
        }
    }

    fn cache_remove(&mut self, addr: u64, i: u32) {
        match self.cache_find_slot(addr, i) {
            Some((b, k)) => self.cache_set(b, k, NIL),
            None => self.uncached -= 1,
        }
    }

    /// The slot of the object starting at `addr`: the cache, then (only if some object is
    /// uncached) the tree.
    fn lookup_start(&self, addr: u64) -> Option<u32> {
        let nodes = self.slots.nodes();
        for b in self.buckets_of(addr) {
            for k in 0..4 {
                let e = Self::cache_entry(nodes, b, k);
                if e != NIL && nodes.get(e as usize).is_some_and(|n| n.links.key == addr) {
                    return Some(e);
                }
            }
        }
        if self.uncached == 0 {
            return None;
        }
        avl::find_key(&self.starts(), addr)
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

    /// Validates a new object; returns its in-order neighbours in the start index.
    fn check_new(&self, obj: &MemoryObject<T>) -> Result<(u32, u32), Error> {
        if obj.size == 0 {
            return Err(Error::ZeroSize);
        }
        let end = obj.start.checked_add(obj.size).ok_or(Error::SizeOverflow)?;
        let t = self.starts();
        let (pred, succ) = avl::neighbours_near(&t, obj.start, self.finger)
            .unwrap_or_else(|| avl::neighbours(&t, obj.start));
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
        let (pred, succ) = match self.check_new(&obj) {
            Ok(n) => n,
            Err(e) => return Err((e, obj)),
        };
        let i = if self.recycled != NIL {
            let i = self.recycled;
            self.recycled = self.slot(i).map_or(NIL, |s| s.next_free);
            i
        } else {
            self.hwm += 1;
            self.hwm - 1
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
        self.live += 1;
        Ok(MemoryHandle { index: i, generation: self.slot(i).map_or(0, |s| s.generation) })
    }

    /// Removes an object and returns it.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`], [`Error::StaleHandle`] (unchanged).
    pub fn remove(&mut self, h: MemoryHandle) -> Result<MemoryObject<T>, Error> {
        let i = self.resolve(h)?;
        let obj = self.remove_slot(i)?;
        self.live -= 1;
        Ok(obj)
    }

    /// Takes the object of occupied slot `i` out of the indexes and the slot.
    fn remove_slot(&mut self, i: u32) -> Result<MemoryObject<T>, Error> {
        let (start, has_user) = self
            .slot(i)
            .and_then(|s| s.object.as_ref())
            .map_or((0, false), |o| (o.start, o.userptr.is_some()));
        let links = self.starts().links(i);
        avl::remove(&mut self.starts_mut(), i);
        self.cache_remove(start, i);
        // The removed node's parent (or, for an inner node, whatever took its place) borders
        // the freed gap: the likely neighbour of the next insertion there.
        self.finger = if links.parent != NIL { links.parent } else { self.root_start };
        if has_user {
            avl::remove(&mut self.users_mut(), i);
        }
        let recycled = self.recycled;
        let slot = self.slot_mut(i).ok_or(Error::InvalidHandle)?;
        let obj = slot.object.take().ok_or(Error::StaleHandle)?;
        slot.next_free = recycled;
        slot.retired = false;
        self.recycled = i;
        Ok(obj)
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
        self.live -= 1;
        self.retired += 1;
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
        self.retired -= 1;
        self.live += 1;
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
        let obj = self.remove_slot(i)?;
        self.retired -= 1;
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

    /// The object starting exactly at `addr`.
    #[must_use]
    pub fn find_exact(&self, addr: u64) -> Option<MemoryHandle> {
        self.lookup_start(addr).and_then(|i| self.visible(i))
    }

    /// The object whose GPU range contains `addr` (an interior pointer).
    #[must_use]
    pub fn find_containing(&self, addr: u64) -> Option<MemoryHandle> {
        let t = self.starts();
        // A retired object here means no object contains addr: any other object containing
        // it would start before the retired one and overlap it.
        let p = avl::predecessor(&t, addr)?;
        if t.end(p) > addr { self.visible(p) } else { None }
    }

    /// The object registered with exactly the user range `[addr, addr + size)`.
    #[must_use]
    pub fn find_userptr(&self, addr: u64, size: u64) -> Option<MemoryHandle> {
        avl::find_key_end(&self.users(), addr, addr.wrapping_add(size))
            .and_then(|i| self.visible(i))
    }

    /// Among the objects whose user range contains `addr`, the one with the highest start
    /// (then the longest range) — the one libhsakmt's right-to-left walk would meet first.
    #[must_use]
    pub fn find_userptr_containing(&self, addr: u64) -> Option<MemoryHandle> {
        avl::stab_last(&self.users(), addr).and_then(|i| self.visible(i))
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
            recycled += 1;
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
            occupied += 1;
            if s.retired {
                retired += 1;
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
        if retired != self.retired
            || occupied != self.live + self.retired
            || occupied + recycled != self.hwm
        {
            return Err(Violation::Counter);
        }
        // Address cache: entries name live objects in one of their two buckets, at most once;
        // the others are counted as uncached.
        let mut cached = 0u32;
        let buckets = (cap / 2) as usize;
        for b in 0..buckets {
            for k in 0..4 {
                let e = Self::cache_entry(nodes, b, k);
                if e == NIL {
                    continue;
                }
                let Some(o) = self.slot(e).and_then(|s| s.object.as_ref()) else {
                    return Err(Violation::IndexMembership { slot: e });
                };
                if !self.buckets_of(o.start).contains(&b)
                    || self.cache_find_slot(o.start, e) != Some((b, k))
                {
                    return Err(Violation::IndexMembership { slot: e });
                }
                cached += 1;
            }
        }
        for n in nodes.iter().skip(2 * buckets) {
            if n.cache != [NIL; 2] {
                return Err(Violation::IndexMembership { slot: NIL });
            }
        }
        if cached + self.uncached != self.live + self.retired {
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
