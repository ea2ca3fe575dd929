//! [`VaAllocator`]: a bounded-time allocator of virtual-address ranges (TLSF).
//!
//! # Algorithm
//! Two-level segregated fit (Masmano et al., "TLSF: a new dynamic memory allocator for
//! real-time systems", 2004) over `u64` address ranges, in units of [`GRANULE`] (4 KiB):
//!
//! - Free blocks are kept in segregated lists indexed by size class: the first level is the
//!   power of two of the block's size in granules, the second level splits each power of two
//!   into 32 linear subdivisions (sizes below 32 granules get one exact class each). Two bitmaps
//!   (one bit per first-level class, one word of bits per second level) say which lists are
//!   non-empty.
//! - `alloc` rounds the request up to the next class boundary ("good fit"), so that *any* block
//!   in that class or above fits; two find-first-set operations on the bitmaps then locate a
//!   non-empty list in `O(1)` and its head is taken. The block is split and the remainder(s)
//!   go back to the lists. Internal waste of the class rounding is at most 1/32 of the request
//!   (it only affects which block is chosen, never the size handed out).
//! - Every block (free or used) links to its physical neighbours, so `free` coalesces with a
//!   free predecessor/successor in `O(1)`. Free blocks are never adjacent.
//! - Block descriptors live in a fixed slot array with a recycled-index list (no heap). Used
//!   blocks are also nodes of an address-ordered AVL tree embedded in the same slots: `free(addr)`
//!   and `alloc_at(addr, ..)` find their block through it.
//! - An allocator made with [`VaAllocator::unindexed`] keeps no such tree, for an owner that
//!   indexes the same allocations itself (the memory manager's object table does): it frees by
//!   block ([`VaAllocator::free_block`]), and for a fixed address names an allocation below it
//!   ([`VaAllocator::alloc_at_near`]), from which the allocator walks the physical links up to
//!   the address. Allocation and free then do no tree work at all.
//!
//! # Alignment
//! Alignments above the granule are served by over-allocation: the search asks for
//! `size + align − GRANULE` bytes, which guarantees that every block it can return contains an
//! aligned start (block starts are granule aligned); the leading fragment before that start is
//! split off and stays free (it keeps the original descriptor, the allocation gets a new one).
//! [`VaAllocator::alloc_with_phase`] generalises the alignment to `addr % align == phase`, which
//! is how libhsakmt's end alignment is expressed (see [`super::aperture`]).
//!
//! Because the good-fit search is conservative, a request may fail with
//! [`Error::OutOfSpace`] although some free block could hold it (a block of the request's own
//! class that is just large enough, or an aligned fit inside a block smaller than
//! `size + align − GRANULE`). Before failing, the allocator examines up to 16 more blocks, taken
//! from the non-empty classes at and above the unpadded size's class, lowest first (a bitmap
//! search per class). What *is* guaranteed: if any free block is at
//! least [`VaAllocator::guaranteed_fit`]`(size, align)` bytes, the request succeeds (given a free
//! descriptor).
//!
//! # Worst case (independent of the number of live allocations)
//! Let `H = ⌊1.4405 · log2(capacity + 2)⌋` — the maximum height of the AVL index (26 for a
//! capacity of 2^18 descriptors).
//! - [`alloc`](VaAllocator::alloc) / [`alloc_with_phase`](VaAllocator::alloc_with_phase): two
//!   bitmap searches, at most 16 blocks (and as many bitmap searches) in the fallback scan, `O(1)` splitting, one index
//!   insertion (≤ `H` steps down, ≤ `H` up, at most 2 rotations).
//! - [`alloc_at`](VaAllocator::alloc_at): a scan of at most [`MAX_VA_RANGES`] range records, one
//!   predecessor query (≤ `H`), `O(1)` splitting, one index insertion.
//! - [`free`](VaAllocator::free): one index lookup (≤ `H`) and removal (≤ `H` to the successor,
//!   ≤ `H` retracing with rotations), `O(1)` coalescing and list insertion.
//!   [`free_block`](VaAllocator::free_block) skips the lookup.
//!
//! Without the index ([`VaAllocator::unindexed`]), allocation and
//! [`free_block`](VaAllocator::free_block) lose their index step, and
//! [`alloc_at_near`](VaAllocator::alloc_at_near) walks the blocks from its hint (else from the
//! range's start) up to the address: `O(k)` for the `k` blocks in between, which for the memory
//! manager (whose hint is the range of the object nearest below the address) are only
//! allocations in flight and the free blocks between them. [`free`](VaAllocator::free),
//! [`allocation_size`](VaAllocator::allocation_size) and
//! [`allocation_containing`](VaAllocator::allocation_containing) walk from the range's start
//! (`O(blocks in the range)`: for tests and tools, never on the memory manager's paths).
//!
//! Typical costs are far below these bounds: the index insertion of an allocation is attached
//! next to its physical neighbour in `O(1)` (the neighbouring used blocks are its in-order
//! neighbours) and retracing stops at the first unchanged node (amortised `O(1)`).
//! - [`neighbour_allocations`](VaAllocator::neighbour_allocations) and
//!   [`neighbour_owners`](VaAllocator::neighbour_owners): `O(1)` (at most four physical links).
//!   The memory manager records each allocation's object slot as its owner
//!   ([`set_owner`](VaAllocator::set_owner), `O(1)`) and inserts a new allocation's object
//!   beside its neighbours' objects in the object table's index.
//! - [`add_range`](VaAllocator::add_range): a scan of at most [`MAX_VA_RANGES`] records.
//! - [`largest_free_block`](VaAllocator::largest_free_block): `O(k)` for the `k` free blocks of
//!   the highest non-empty class (a query, not used by the operations above).
//! - [`check_invariants`](VaAllocator::check_invariants): `O(capacity)`.
//!
//! # Example
//! ```
//! use hsakmt_core::memory::va::InlineVaAllocator;
//!
//! let mut va = InlineVaAllocator::<64>::new();
//! va.add_range(0x7f00_0000_0000, 1 << 30)?;
//! let a = va.alloc(3 << 20, 2 << 20)?; // 3 MiB, 2 MiB aligned
//! assert_eq!(a.addr % (2 << 20), 0);
//! let b = va.alloc_at(0x7f00_2000_0000, 0x1000)?; // a fixed address
//! assert_eq!(va.live_count(), 2);
//! assert_eq!(va.free(a.addr)?, 3 << 20); // by address
//! assert_eq!(va.free_block(b)?, 0x1000); // by block: no address lookup
//! assert_eq!(va.largest_free_block(), 1 << 30); // coalesced back into one block
//! # Ok::<(), hsakmt_core::memory::Error>(())
//! ```

use super::avl::{self, Links, NIL, Tree, TreeMut};
use super::{Error, PAGE_SIZE, align_up};
use free_lists::{class_min, mapping_insert, mapping_search};

/// The unit of every address and size: 4 KiB.
pub const GRANULE: u64 = PAGE_SIZE;
const GRANULE_SHIFT: u32 = GRANULE.trailing_zeros();

const SL_LOG2: u32 = 5;
const SL_COUNT: usize = 1 << SL_LOG2;
/// Sizes below 2^64 bytes are below 2^52 granules: first-level classes 0..=47.
const FL_COUNT: usize = 48;
const SCAN_LIMIT: usize = 16;

pub use crate::config::{MAX_VA_RANGES, VA_ALLOCATOR_CAPACITY};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum State {
    Unused,
    Free,
    Used,
}

/// One block descriptor: the storage unit of a [`VaAllocator`] (56 bytes; aligning it to a
/// cache line would save about one cache miss per allocate + free pair in large tables, but
/// grow the inline tables of the driver's signal pool by an eighth).
///
/// Its contents are private; storage is created with [`VaSlot::EMPTY`] (e.g.
/// `[VaSlot::EMPTY; N]`, or `vec![VaSlot::EMPTY; n].into_boxed_slice()` in a `std` crate).
#[derive(Debug, Clone, Copy)]
pub struct VaSlot {
    /// `key` is the block start for every block; the tree links are valid for used blocks.
    links: Links,
    size: u64,
    prev_phys: u32,
    next_phys: u32,
    /// Free blocks: segregated-list neighbours. Unused slots: `next_free` chains recycled slots.
    prev_free: u32,
    next_free: u32,
    /// Used blocks: what the caller recorded as the allocation's owner
    /// ([`VaAllocator::set_owner`]), else [`NIL`]; always [`NIL`] for other blocks.
    owner: u32,
    state: State,
}

impl VaSlot {
    /// An unused descriptor.
    pub const EMPTY: Self = Self {
        links: Links::EMPTY,
        size: 0,
        prev_phys: NIL,
        next_phys: NIL,
        prev_free: NIL,
        next_free: NIL,
        owner: NIL,
        state: State::Unused,
    };
}

impl Default for VaSlot {
    fn default() -> Self {
        Self::EMPTY
    }
}

/// A live allocation as returned by the `alloc*` methods: its address, its size (rounded up to
/// [`GRANULE`]) and a private reference to its descriptor, which lets
/// [`VaAllocator::free_block`] skip the address lookup.
///
/// A block stays valid until it is freed. Freeing a stale block (already freed) is detected
/// unless the same address has been allocated again meanwhile, in which case — as with
/// [`VaAllocator::free`] — the allocation now at that address is freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct VaBlock {
    /// First address of the allocation.
    pub addr: u64,
    /// Size in bytes (a multiple of [`GRANULE`]).
    pub size: u64,
    slot: u32,
}

#[derive(Debug, Clone, Copy)]
struct Range {
    base: u64,
    end: u64,
    /// The block at `base`. It never changes: splits keep the low descriptor, and coalescing
    /// keeps the lower block's descriptor.
    first: u32,
}

impl Range {
    const EMPTY: Self = Self { base: 0, end: 0, first: NIL };
}

/// A TLSF allocator of address ranges over slot storage `S` (see the [module docs](self) for the
/// algorithm, alignment strategy and worst cases).
///
/// `S` is `[VaSlot; N]` ([`InlineVaAllocator`]) or any other `AsRef<[VaSlot]> + AsMut<[VaSlot]>`
/// (e.g. `Box<[VaSlot]>`); its length is the descriptor capacity. Each live allocation needs one
/// descriptor and each maximal free range one more, so a capacity of `2 · live + ranges` always
/// suffices.
///
/// # Invariants
/// - The blocks of each range tile it exactly, linked in address order; no two adjacent blocks
///   are free.
/// - Each free block is in exactly the segregated list of its size class and the bitmaps mirror
///   list emptiness; each used block is in the address index and nothing else is (nothing
///   is, without an index).
/// - On any error, the state is unchanged.
pub struct VaAllocator<S> {
    slots: S,
    root: u32,
    fl_bitmap: u64,
    sl_bitmap: [u32; FL_COUNT],
    heads: [[u32; SL_COUNT]; FL_COUNT],
    ranges: [Range; MAX_VA_RANGES],
    range_count: u32,
    /// Slots at and above this index were never used.
    hwm: u32,
    /// Head of the list of recycled slots.
    recycled: u32,
    /// Descriptors in ranges (free + used blocks).
    in_use: u32,
    live: u32,
    free_bytes: u64,
    used_bytes: u64,
    /// Used blocks are kept in the address index (see [`VaAllocator::unindexed`]).
    indexed: bool,
}

/// A [`VaAllocator`] whose `N` descriptors are stored inline (usable in a `static`).
pub type InlineVaAllocator<const N: usize> = VaAllocator<[VaSlot; N]>;

impl<const N: usize> VaAllocator<[VaSlot; N]> {
    /// An empty allocator with `N` inline descriptors and no ranges.
    #[must_use]
    pub const fn new() -> Self {
        Self::with_storage([VaSlot::EMPTY; N])
    }
}

impl<const N: usize> Default for VaAllocator<[VaSlot; N]> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> VaAllocator<S> {
    /// An empty allocator over `slots` (their contents are ignored; their number is the
    /// capacity, at most `u32::MAX − 1`).
    pub const fn with_storage(slots: S) -> Self {
        Self::build(slots, true)
    }

    /// As [`VaAllocator::with_storage`], without the address index of the allocations: for an
    /// owner that frees by block ([`VaAllocator::free_block`]) and knows, for a fixed address,
    /// an allocation below it ([`VaAllocator::alloc_at_near`]) — as the memory manager does
    /// through its object table, which indexes the same ranges. Allocating and freeing then
    /// skip the index's insertion and removal (tree walks, rotations and their cache misses);
    /// what needs an address lookup walks the range's blocks instead (see the module docs).
    pub const fn unindexed(slots: S) -> Self {
        Self::build(slots, false)
    }

    const fn build(slots: S, indexed: bool) -> Self {
        Self {
            slots,
            root: NIL,
            fl_bitmap: 0,
            sl_bitmap: [0; FL_COUNT],
            heads: [[NIL; SL_COUNT]; FL_COUNT],
            ranges: [Range::EMPTY; MAX_VA_RANGES],
            range_count: 0,
            hwm: 0,
            recycled: NIL,
            in_use: 0,
            live: 0,
            free_bytes: 0,
            used_bytes: 0,
            indexed,
        }
    }

    /// Whether used blocks are kept in an address index ([`VaAllocator::with_storage`]) or
    /// not ([`VaAllocator::unindexed`]).
    #[must_use]
    pub const fn is_indexed(&self) -> bool {
        self.indexed
    }

    /// The number of live allocations.
    #[must_use]
    pub const fn live_count(&self) -> u32 {
        self.live
    }

    /// Bytes in free blocks.
    #[must_use]
    pub const fn free_bytes(&self) -> u64 {
        self.free_bytes
    }

    /// Bytes in live allocations.
    #[must_use]
    pub const fn used_bytes(&self) -> u64 {
        self.used_bytes
    }

    /// Bytes in all ranges.
    #[must_use]
    pub const fn total_bytes(&self) -> u64 {
        self.free_bytes.saturating_add(self.used_bytes)
    }

    /// Descriptors currently describing blocks (free and used).
    #[must_use]
    pub const fn descriptors_in_use(&self) -> u32 {
        self.in_use
    }

    /// The number of ranges added.
    #[must_use]
    pub const fn range_count(&self) -> u32 {
        self.range_count
    }

    /// The smallest free block size that guarantees `alloc(size, align)` succeeds (given a free
    /// descriptor): `size` (rounded to granules) plus the alignment padding, rounded up to the
    /// next size-class boundary. `None` if that overflows.
    #[must_use]
    pub fn guaranteed_fit(size: u64, align: u64) -> Option<u64> {
        let size = align_up(size.max(1), GRANULE)?;
        let align = align.max(GRANULE);
        let need = size.checked_add(align.saturating_sub(GRANULE))?;
        let (fl, sl) = mapping_search(need >> GRANULE_SHIFT)?;
        Some(class_min(fl, sl) << GRANULE_SHIFT)
    }
}

/// The first address `>= start` that is `≡ phase (mod align)`.
fn phased(start: u64, align: u64, phase: u64) -> Option<u64> {
    start.checked_add(phase.wrapping_sub(start) & align.wrapping_sub(1))
}

impl<S: AsRef<[VaSlot]> + AsMut<[VaSlot]>> VaAllocator<S> {
    /// The descriptor capacity.
    #[must_use]
    pub fn capacity(&self) -> u32 {
        u32::try_from(self.slots.as_ref().len()).map_or(u32::MAX - 1, |n| n.min(u32::MAX - 1))
    }

    /// Forgets every range and allocation (`O(1)` in the capacity: the slots are not touched).
    pub fn reset(&mut self) {
        self.root = NIL;
        self.fl_bitmap = 0;
        self.sl_bitmap = [0; FL_COUNT];
        self.heads = [[NIL; SL_COUNT]; FL_COUNT];
        self.ranges = [Range::EMPTY; MAX_VA_RANGES];
        self.range_count = 0;
        self.hwm = 0;
        self.recycled = NIL;
        self.in_use = 0;
        self.live = 0;
        self.free_bytes = 0;
        self.used_bytes = 0;
    }

    // ---- slot access -------------------------------------------------------------------

    fn slot(&self, i: u32) -> Option<&VaSlot> {
        self.slots.as_ref().get(i as usize)
    }

    fn slot_mut(&mut self, i: u32) -> Option<&mut VaSlot> {
        self.slots.as_mut().get_mut(i as usize)
    }

    fn start(&self, i: u32) -> u64 {
        self.slot(i).map_or(0, |s| s.links.key)
    }

    fn size(&self, i: u32) -> u64 {
        self.slot(i).map_or(0, |s| s.size)
    }

    fn end(&self, i: u32) -> u64 {
        self.slot(i).map_or(0, |s| s.links.key.saturating_add(s.size))
    }

    fn state(&self, i: u32) -> State {
        self.slot(i).map_or(State::Unused, |s| s.state)
    }

    fn next_phys(&self, i: u32) -> u32 {
        self.slot(i).map_or(NIL, |s| s.next_phys)
    }

    fn next_free(&self, i: u32) -> u32 {
        self.slot(i).map_or(NIL, |s| s.next_free)
    }

    fn prev_free(&self, i: u32) -> u32 {
        self.slot(i).map_or(NIL, |s| s.prev_free)
    }

    fn set_prev_phys(&mut self, i: u32, v: u32) {
        if let Some(s) = self.slot_mut(i) {
            s.prev_phys = v;
        }
    }

    fn head(&self, fl: usize, sl: usize) -> u32 {
        self.heads.get(fl).and_then(|h| h.get(sl)).copied().unwrap_or(NIL)
    }

    fn set_head(&mut self, fl: usize, sl: usize, v: u32) {
        if let Some(h) = self.heads.get_mut(fl).and_then(|h| h.get_mut(sl)) {
            *h = v;
        }
    }

    fn sl_map(&self, fl: usize) -> u32 {
        self.sl_bitmap.get(fl).copied().unwrap_or(0)
    }

    // ---- descriptor pool -----------------------------------------------------------------

    fn available(&self) -> u32 {
        self.capacity().saturating_sub(self.in_use)
    }

    /// Takes a descriptor; the caller checked [`Self::available`].
    fn acquire(&mut self) -> u32 {
        self.in_use = self.in_use.saturating_add(1);
        if self.recycled != NIL {
            let i = self.recycled;
            self.recycled = self.slot(i).map_or(NIL, |s| s.next_free);
            i
        } else {
            let i = self.hwm;
            self.hwm = self.hwm.saturating_add(1);
            i
        }
    }

    fn release(&mut self, i: u32) {
        let next = self.recycled;
        if let Some(s) = self.slot_mut(i) {
            *s = VaSlot { next_free: next, ..VaSlot::EMPTY };
        }
        self.recycled = i;
        self.in_use = self.in_use.saturating_sub(1);
    }

    /// The nearest used block in direction `dir` within the range of `b`, or [`NIL`].
    fn used_neighbour(&self, b: u32, dir: impl Fn(&VaSlot) -> u32) -> u32 {
        let mut x = b;
        for _ in 0..2 {
            x = self.slot(x).map_or(NIL, &dir);
            match self.state(x) {
                State::Used => return x,
                State::Free => {}
                State::Unused => return NIL,
            }
        }
        NIL
    }

    /// Descriptors needed to carve `[a, a + size)` out of free block `b`.
    fn split_cost(&self, b: u32, a: u64, size: u64) -> u32 {
        u32::from(a > self.start(b)).saturating_add(u32::from(a.saturating_add(size) < self.end(b)))
    }

    /// Turns `[a, a + size)` of free block `b` into a used block; the caller checked that the
    /// range lies in `b` and that [`Self::split_cost`] descriptors are available.
    fn carve(&mut self, b: u32, a: u64, size: u64) -> u32 {
        let Some(&bs) = self.slot(b) else { return NIL };
        // As in `release_used`: start the reads of the blocks this touches — `b`'s successor on
        // its free list and its physical neighbours (the new block's neighbours) — at once, so
        // that their cache misses overlap.
        let touched = self.state(bs.next_free) as u32
            ^ self.state(bs.next_phys) as u32
            ^ self.state(bs.prev_phys) as u32;
        core::hint::black_box(touched);
        let (b_start, b_end) = (bs.links.key, bs.links.key.saturating_add(bs.size));
        let a_end = a.saturating_add(size);
        let (lead, trail) = (a > b_start, a_end < b_end);
        self.list_unlink_known(&bs);
        // A leading fragment keeps `b`; the allocation, and a trailing fragment, get new
        // descriptors (taken in that order).
        let used = if lead { self.acquire() } else { b };
        let f = if trail { self.acquire() } else { NIL };
        let after = bs.next_phys;
        if let Some(s) = self.slot_mut(used) {
            *s = VaSlot {
                size,
                prev_phys: if lead { b } else { bs.prev_phys },
                next_phys: if trail { f } else { after },
                state: State::Used,
                ..VaSlot::EMPTY
            };
            s.links.key = a;
        }
        if lead {
            if let Some(s) = self.slot_mut(b) {
                s.size = a.saturating_sub(b_start);
                s.next_phys = used;
            }
            self.list_push(b);
        }
        if trail {
            if let Some(s) = self.slot_mut(f) {
                *s = VaSlot {
                    size: b_end.saturating_sub(a_end),
                    prev_phys: used,
                    next_phys: after,
                    ..VaSlot::EMPTY
                };
                s.links.key = a_end;
            }
            self.list_push(f);
        }
        if lead || trail {
            self.set_prev_phys(after, if trail { f } else { used });
        }
        // The block's in-order neighbours in the index are the nearest used blocks of the same
        // range, at most two physical links away (free blocks are never adjacent).
        if self.indexed {
            let pred = self.used_neighbour(used, |s| s.prev_phys);
            let succ = self.used_neighbour(used, |s| s.next_phys);
            avl::insert_hinted(self, used, a, pred, succ);
        }
        self.live = self.live.saturating_add(1);
        self.used_bytes = self.used_bytes.saturating_add(size);
        self.free_bytes = self.free_bytes.saturating_sub(size);
        used
    }

    // ---- public operations ---------------------------------------------------------------

    /// Adds the free range `[base, base + size)`.
    ///
    /// Ranges are kept disjoint and are never merged, even when adjacent: an allocation never
    /// spans two ranges.
    ///
    /// # Errors
    /// [`Error::ZeroSize`]; [`Error::Misaligned`] when `base` or `size` is not a multiple of
    /// [`GRANULE`]; [`Error::SizeOverflow`] when the range wraps around 2^64;
    /// [`Error::TooManyRanges`]; [`Error::RangeOverlap`] when it overlaps a managed range;
    /// [`Error::CapacityExhausted`] without a free descriptor.
    pub fn add_range(&mut self, base: u64, size: u64) -> Result<(), Error> {
        if size == 0 {
            return Err(Error::ZeroSize);
        }
        for v in [base, size] {
            if !v.is_multiple_of(GRANULE) {
                return Err(Error::Misaligned { value: v });
            }
        }
        let end = base.checked_add(size).ok_or(Error::SizeOverflow)?;
        let n = self.range_count as usize;
        if n >= MAX_VA_RANGES {
            return Err(Error::TooManyRanges { max: MAX_VA_RANGES as u32 });
        }
        if self.ranges.iter().take(n).any(|r| base < r.end && r.base < end) {
            return Err(Error::RangeOverlap { base });
        }
        if self.available() == 0 {
            return Err(Error::CapacityExhausted { capacity: self.capacity() });
        }
        let b = self.acquire();
        if let Some(s) = self.slot_mut(b) {
            *s = VaSlot { size, ..VaSlot::EMPTY };
            s.links.key = base;
        }
        self.list_push(b);
        if let Some(r) = self.ranges.get_mut(n) {
            *r = Range { base, end, first: b };
        }
        self.range_count = self.range_count.saturating_add(1);
        self.free_bytes = self.free_bytes.saturating_add(size);
        Ok(())
    }

    /// The ranges added, as `(base, size)`, in the order they were added.
    pub fn ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges
            .iter()
            .take(self.range_count as usize)
            .map(|r| (r.base, r.end.saturating_sub(r.base)))
    }

    /// Allocates `size` bytes (rounded up to [`GRANULE`]) at an address aligned to `align`
    /// (a power of two; `0` and values below the granule mean the granule).
    ///
    /// # Errors
    /// [`Error::ZeroSize`], [`Error::SizeOverflow`], [`Error::BadAlignment`],
    /// [`Error::OutOfSpace`] (see the module docs for the good-fit guarantee),
    /// [`Error::CapacityExhausted`] when splitting needs descriptors that are not available.
    pub fn alloc(&mut self, size: u64, align: u64) -> Result<VaBlock, Error> {
        self.alloc_with_phase(size, align, 0)
    }

    /// Allocates `size` bytes (rounded up to [`GRANULE`]) at an address `a` with
    /// `a % align == phase % align`. `phase` must be a multiple of [`GRANULE`].
    ///
    /// libhsakmt's end alignment — the *end* of a buffer aligned, its start not — is
    /// `phase = align − size % align`.
    ///
    /// # Errors
    /// As [`VaAllocator::alloc`], and [`Error::Misaligned`] for a `phase` that is not a multiple
    /// of the granule.
    pub fn alloc_with_phase(
        &mut self,
        size: u64,
        align: u64,
        phase: u64,
    ) -> Result<VaBlock, Error> {
        if size == 0 {
            return Err(Error::ZeroSize);
        }
        let size = align_up(size, GRANULE).ok_or(Error::SizeOverflow)?;
        if align != 0 && !align.is_power_of_two() {
            return Err(Error::BadAlignment { align });
        }
        let align = align.max(GRANULE);
        if !phase.is_multiple_of(GRANULE) {
            return Err(Error::Misaligned { value: phase });
        }
        let phase = phase & align.wrapping_sub(1);
        let need = size.checked_add(align.saturating_sub(GRANULE)).ok_or(Error::SizeOverflow)?;
        let (b, a) =
            self.find_block(need, size, align, phase).ok_or(Error::OutOfSpace { needed: need })?;
        if self.available() < self.split_cost(b, a, size) {
            return Err(Error::CapacityExhausted { capacity: self.capacity() });
        }
        let slot = self.carve(b, a, size);
        Ok(VaBlock { addr: a, size, slot })
    }

    /// Allocates exactly `[addr, addr + size)` (`size` rounded up to [`GRANULE`]), which must lie
    /// inside one range and be entirely free.
    ///
    /// # Errors
    /// [`Error::ZeroSize`], [`Error::SizeOverflow`]; [`Error::Misaligned`] when `addr` is not
    /// granule aligned; [`Error::OutsideRange`] when the request is not inside one range;
    /// [`Error::AddressInUse`] when part of it is allocated; [`Error::CapacityExhausted`].
    pub fn alloc_at(&mut self, addr: u64, size: u64) -> Result<VaBlock, Error> {
        self.alloc_at_near(addr, size, None)
    }

    /// As [`VaAllocator::alloc_at`], given an allocation that starts at or below `addr` in its
    /// range (`hint`), which an allocator without an index ([`VaAllocator::unindexed`]) walks
    /// up from, block by block, to the block holding `addr` — instead of from the range's start.
    /// The nearer the hint, the shorter the walk; an indexed allocator ignores it. A hint that
    /// is stale, above `addr` or in another range is ignored too: the result never depends on
    /// it.
    ///
    /// # Errors
    /// As [`VaAllocator::alloc_at`].
    pub fn alloc_at_near(
        &mut self,
        addr: u64,
        size: u64,
        hint: Option<VaBlock>,
    ) -> Result<VaBlock, Error> {
        if size == 0 {
            return Err(Error::ZeroSize);
        }
        if !addr.is_multiple_of(GRANULE) {
            return Err(Error::Misaligned { value: addr });
        }
        let size = align_up(size, GRANULE).ok_or(Error::SizeOverflow)?;
        let end = addr.checked_add(size).ok_or(Error::SizeOverflow)?;
        let r = self
            .ranges
            .iter()
            .take(self.range_count as usize)
            .find(|r| r.base <= addr && addr < r.end)
            .copied()
            .ok_or(Error::OutsideRange { addr })?;
        if end > r.end {
            return Err(Error::OutsideRange { addr: r.end });
        }
        let cand = self.block_at(&r, addr, hint);
        if self.state(cand) != State::Free || self.start(cand) > addr || self.end(cand) < end {
            return Err(Error::AddressInUse { addr });
        }
        if self.available() < self.split_cost(cand, addr, size) {
            return Err(Error::CapacityExhausted { capacity: self.capacity() });
        }
        let slot = self.carve(cand, addr, size);
        Ok(VaBlock { addr, size, slot })
    }

    /// Frees the allocation starting at `addr`; returns its size.
    ///
    /// # Errors
    /// [`Error::UnknownAddress`] when no live allocation starts at `addr` (never allocated,
    /// already freed, or an interior address); the state is unchanged.
    pub fn free(&mut self, addr: u64) -> Result<u64, Error> {
        let u = self.find_used(addr).ok_or(Error::UnknownAddress { addr })?;
        Ok(self.release_used(u))
    }

    /// Frees `block` without looking its address up (`O(1)` validation, then as
    /// [`VaAllocator::free`] minus the lookup); returns its size.
    ///
    /// # Errors
    /// [`Error::UnknownAddress`] when no live allocation starts at `block.addr` (the block was
    /// already freed); the state is unchanged.
    pub fn free_block(&mut self, block: VaBlock) -> Result<u64, Error> {
        let valid = self
            .slot(block.slot)
            .is_some_and(|s| s.state == State::Used && s.links.key == block.addr);
        let u = if valid {
            block.slot
        } else {
            self.find_used(block.addr).ok_or(Error::UnknownAddress { addr: block.addr })?
        };
        Ok(self.release_used(u))
    }

    /// Turns used block `u` free, coalescing with its free neighbours; returns its size.
    fn release_used(&mut self, u: u32) -> u64 {
        let Some(&us) = self.slot(u) else { return 0 };
        let free = |s: &VaSlot| s.state == State::Free;
        let next = self.slot(us.next_phys).copied().filter(free);
        let prev = self.slot(us.prev_phys).copied().filter(free);
        // Start the reads of the blocks coalescing will touch — the free neighbours' list
        // neighbours and the block after the merged extent — before any write, so that their
        // cache misses overlap instead of following one another.
        let mut touched = 0u32;
        for s in [next, prev].into_iter().flatten() {
            touched ^= self.next_phys(s.next_phys)
                ^ self.next_free(s.prev_free)
                ^ self.prev_free(s.next_free);
        }
        core::hint::black_box(touched);
        if self.indexed {
            avl::remove(self, u);
        }
        let size = us.size;
        self.live = self.live.saturating_sub(1);
        self.used_bytes = self.used_bytes.saturating_sub(size);
        self.free_bytes = self.free_bytes.saturating_add(size);
        // The merged free block: the lowest of prev, u, next keeps its descriptor.
        let (mut block, mut total, mut after) = (u, size, us.next_phys);
        if let Some(n) = next {
            self.list_unlink_known(&n);
            total = total.saturating_add(n.size);
            after = n.next_phys;
            self.release(us.next_phys);
        }
        if let Some(p) = prev {
            // A fresh read: unlinking `next` may have changed `prev`'s list links.
            self.list_unlink(us.prev_phys);
            total = total.saturating_add(p.size);
            self.release(u);
            block = us.prev_phys;
        }
        if let Some(s) = self.slot_mut(block) {
            s.size = total;
            s.next_phys = after;
            s.owner = NIL;
        }
        self.set_prev_phys(after, block);
        self.list_push(block);
        size
    }

    /// The start addresses of the live allocations nearest to `block` before and after it in
    /// its range (`None` where there is none, or when `block` is not live): its neighbours in an
    /// address-ordered index of the allocations. `O(1)`: free blocks are never adjacent, so each
    /// is at most two physical links away.
    #[must_use]
    pub fn neighbour_allocations(&self, block: VaBlock) -> [Option<u64>; 2] {
        let live = self
            .slot(block.slot)
            .is_some_and(|s| s.state == State::Used && s.links.key == block.addr);
        if !live {
            return [None, None];
        }
        let start = |b: u32| (b != NIL).then(|| self.start(b));
        [
            start(self.used_neighbour(block.slot, |s| s.prev_phys)),
            start(self.used_neighbour(block.slot, |s| s.next_phys)),
        ]
    }

    /// Records `owner` (any value but `u32::MAX`, which reads as none) as the owner of the
    /// live allocation `block` — for instance the slot of the object that records it — for
    /// [`VaAllocator::neighbour_owners`] to report. `false` (nothing recorded) when `block` is
    /// not live. `O(1)`; the record goes with the allocation when it is freed.
    pub fn set_owner(&mut self, block: VaBlock, owner: u32) -> bool {
        match self.slots.as_mut().get_mut(block.slot as usize) {
            Some(s) if s.state == State::Used && s.links.key == block.addr => {
                s.owner = owner;
                true
            }
            _ => false,
        }
    }

    /// The owners recorded ([`VaAllocator::set_owner`]) of the live allocations nearest to
    /// `block` before and after it in its range — the allocations
    /// [`VaAllocator::neighbour_allocations`] names — where there are such allocations and they
    /// have owners. `O(1)`: with owners that are slots of an address-ordered table, these are
    /// the new allocation's neighbours there, without an address lookup.
    #[must_use]
    pub fn neighbour_owners(&self, block: VaBlock) -> [Option<u32>; 2] {
        let live = self
            .slot(block.slot)
            .is_some_and(|s| s.state == State::Used && s.links.key == block.addr);
        if !live {
            return [None, None];
        }
        let owner = |b: u32| self.slot(b).map(|s| s.owner).filter(|&o| o != NIL);
        [
            owner(self.used_neighbour(block.slot, |s| s.prev_phys)),
            owner(self.used_neighbour(block.slot, |s| s.next_phys)),
        ]
    }

    /// The size of the live allocation starting at `addr`.
    #[must_use]
    pub fn allocation_size(&self, addr: u64) -> Option<u64> {
        self.find_used(addr).map(|u| self.size(u))
    }

    /// The live allocation `(start, size)` containing `addr`.
    #[must_use]
    pub fn allocation_containing(&self, addr: u64) -> Option<(u64, u64)> {
        let b = self.containing(addr)?;
        (self.state(b) == State::Used).then(|| (self.start(b), self.size(b)))
    }

    /// The block of range `r` (which holds `addr`) that holds `addr`, or [`NIL`] when `addr`
    /// lies in a used block (indexed: the last used block at or below `addr`, or the free block
    /// after it; unindexed: a walk from `hint` — when it is a live allocation of `r` at or below
    /// `addr` — or from the range's first block).
    fn block_at(&self, r: &Range, addr: u64, hint: Option<VaBlock>) -> u32 {
        if self.indexed {
            // The last used block starting at or below addr; the free block after it (or the
            // range's first block) is the only free block that can contain addr.
            return match avl::predecessor(self, addr) {
                Some(p) if self.start(p) >= r.base => {
                    if self.end(p) > addr {
                        return NIL;
                    }
                    self.next_phys(p)
                }
                _ => r.first,
            };
        }
        let from = hint
            .filter(|h| h.addr >= r.base && h.addr <= addr)
            .filter(|h| {
                self.slot(h.slot).is_some_and(|s| s.state == State::Used && s.links.key == h.addr)
            })
            .map_or(r.first, |h| h.slot);
        let mut b = from;
        while let Some(s) = self.slot(b) {
            if s.links.key.saturating_add(s.size) > addr {
                return b;
            }
            b = s.next_phys;
        }
        NIL
    }

    /// The block (free or used) containing `addr`, if `addr` lies in a range.
    fn containing(&self, addr: u64) -> Option<u32> {
        let r = self
            .ranges
            .iter()
            .take(self.range_count as usize)
            .find(|r| r.base <= addr && addr < r.end)?;
        if self.indexed {
            let p = avl::predecessor(self, addr).filter(|&p| self.start(p) >= r.base);
            return Some(match p {
                Some(p) if self.end(p) > addr => p,
                Some(p) => self.next_phys(p),
                None => r.first,
            });
        }
        Some(self.block_at(r, addr, None)).filter(|&b| b != NIL)
    }

    /// The live allocation starting at `addr`.
    fn find_used(&self, addr: u64) -> Option<u32> {
        if self.indexed {
            return avl::find_key(self, addr);
        }
        self.containing(addr).filter(|&b| self.state(b) == State::Used && self.start(b) == addr)
    }

    /// The size of the largest free block (`O(k)` in the free blocks of the highest non-empty
    /// size class).
    #[must_use]
    pub fn largest_free_block(&self) -> u64 {
        if self.fl_bitmap == 0 {
            return 0;
        }
        let fl = 63usize.saturating_sub(self.fl_bitmap.leading_zeros() as usize);
        let Some(sl) = 31usize.checked_sub(self.sl_map(fl).leading_zeros() as usize) else {
            return 0;
        };
        let mut best = 0;
        let mut b = self.head(fl, sl);
        while let Some(s) = self.slot(b) {
            best = best.max(s.size);
            b = s.next_free;
        }
        best
    }
}

impl<S: AsRef<[VaSlot]> + AsMut<[VaSlot]>> Tree for VaAllocator<S> {
    const INTERVAL: bool = false;
    fn links(&self, i: u32) -> Links {
        self.slot(i).map_or(Links::EMPTY, |s| s.links)
    }
    fn end(&self, i: u32) -> u64 {
        VaAllocator::end(self, i)
    }
    fn max_end(&self, _i: u32) -> u64 {
        0
    }
    fn root(&self) -> u32 {
        self.root
    }
}

impl<S: AsRef<[VaSlot]> + AsMut<[VaSlot]>> TreeMut for VaAllocator<S> {
    fn links_mut(&mut self, i: u32) -> Option<&mut Links> {
        self.slot_mut(i).map(|s| &mut s.links)
    }
    fn set_max_end(&mut self, _i: u32, _value: u64) {}
    fn set_root(&mut self, root: u32) {
        self.root = root;
    }
}

impl<S> core::fmt::Debug for VaAllocator<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("VaAllocator")
            .field("ranges", &self.range_count)
            .field("live", &self.live)
            .field("descriptors_in_use", &self.in_use)
            .field("free_bytes", &self.free_bytes)
            .field("used_bytes", &self.used_bytes)
            .finish_non_exhaustive()
    }
}

mod free_lists;
mod invariants;

#[cfg(test)]
mod tests;
