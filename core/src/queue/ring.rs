//! The AQL ring: producers that reserve slots, write packets and ring the doorbell, and the
//! consumer side a (simulated) packet processor uses.
//!
//! # Memory
//! An AQL queue is three pieces of GPU-shared memory ([`AqlRingMemory`]):
//! - the **ring**: `N` 64-byte slots, `N` a power of two, packet `i` in slot `i & (N − 1)`;
//! - the **indices**: two `u64` counters that never wrap — `write_dispatch_id` (packets reserved
//!   by producers, [`AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET`] in ROCr's `amd_queue_t`) and
//!   `read_dispatch_id` (packets released by the consumer, [`AMD_QUEUE_READ_DISPATCH_ID_OFFSET`]);
//! - the **doorbell**: a 64-bit register (gfx9+) the producer writes the index of the last packet
//!   it published to.
//!
//! The protocol core ([`AqlProducer`], [`SingleProducer`], [`AqlConsumer`]) is written against
//! [`AqlRingCells`], the handful of atomic accesses the protocol makes; [`SharedAqlCells`]
//! implements it over [`SharedMemory`], and tests implement it over `loom` atomics to model-check
//! the very same code.
//!
//! # Protocol (ROCr semantics: `amd_blit_kernel.cpp`, `AqlQueue::ExecutePM4`)
//! 1. **Reserve** `n` consecutive indices.
//!    - Blocking ([`AqlProducer::reserve`], [`AqlProducer::submit`]): ONE `fetch_add(n)` on
//!      the write index (acq-rel), then wait (calling the caller's `relax` hook) until
//!      `first + n − read_index ≤ N`. The reservation is made before space exists and cannot be
//!      abandoned: once taken, the slots must be published (or the queue stalls at the first
//!      unpublished slot).
//!    - Non-blocking ([`AqlProducer::try_reserve`]): a compare-exchange loop. Each round has a
//!      read index `r` (loaded before the write index) and loads the write index `w`; if
//!      `w + n − r > N` it reloads the read index (acquire) and fails with
//!      [`RingError::Full`] if that did not move, else it tries `CAS(w → w + n)`; a lost race
//!      retries. A reservation is only made when the whole range fits, so it never
//!      over-reserves, and a `Full` error has reserved nothing. (Reading `r` before `w` keeps
//!      `r ≤ w`; a read index loaded later that overtook `w` only causes a retry.) The loop is
//!      lock-free, not wait-free: it retries only when another producer succeeded.
//!    - Room is checked first against a producer-side cached copy of the read index
//!      ([`AqlRingCells::load_read_cache`], never ahead of the real one); the real read index —
//!      a cache line the packet processor keeps writing — is loaded (acquire) only when the copy
//!      says full, and the copy is then raised with release ordering so the consumer's release
//!      still reaches every producer that relies on the copy.
//!
//!    Both kinds may be mixed on one ring.
//! 2. **Write** each packet's body — `dw[1]` and `qw[0..7]` — with relaxed stores. The slot's
//!    header word still holds `INVALID` (the ring is initialised so, and the consumer writes it
//!    back), so the packet processor ignores the slot.
//! 3. **Publish** with ONE 32-bit release store of `header | setup << 16` into `dw[0]`.
//! 4. **Doorbell**: store the index of the last published packet with
//!    [`SharedMemory::ring_doorbell64`] (ordered after every earlier store; one plain store,
//!    never a locked read-modify-write).
//!    With several producers, doorbell values are not monotonic; the doorbell only says "look";
//!    the packet processor follows headers, not doorbell values.
//!
//! The consumer ([`AqlConsumer::pop`]) loads the header at `read_index` with acquire; if it is
//! not `INVALID` it reads the body, stores `INVALID` back into the header, then publishes
//! `read_index + 1` with release — which is what lets a producer that acquires the read index
//! reuse the slot.
//!
//! Nothing on this path allocates, locks or makes a system call; slot positions use masks.

use core::fmt;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::aql::{Barrier, INVALID_HEADER_WORD, PACKET_SIZE, PacketType, PacketWords, header_word};
use crate::error::{Error, ErrorKind};
use crate::platform::SharedMemory;

/// Size of ROCr's `amd_queue_t` (64-byte aligned), the queue descriptor holding the indices.
pub const AMD_QUEUE_SIZE: usize = 256;
/// `amd_queue_t.hsa_queue.type` (u32).
pub const AMD_QUEUE_TYPE_OFFSET: usize = 0;
/// `amd_queue_t.hsa_queue.features` (u32).
pub const AMD_QUEUE_FEATURES_OFFSET: usize = 4;
/// `amd_queue_t.hsa_queue.base_address` (u64, the ring).
pub const AMD_QUEUE_BASE_ADDRESS_OFFSET: usize = 8;
/// `amd_queue_t.hsa_queue.doorbell_signal` (u64 signal handle).
pub const AMD_QUEUE_DOORBELL_SIGNAL_OFFSET: usize = 16;
/// `amd_queue_t.hsa_queue.size` (u32, packets).
pub const AMD_QUEUE_SIZE_OFFSET: usize = 24;
/// `amd_queue_t.hsa_queue.id` (u64).
pub const AMD_QUEUE_ID_OFFSET: usize = 32;
/// `amd_queue_t.write_dispatch_id` (u64): the write index.
pub const AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET: usize = 56;
/// `amd_queue_t.read_dispatch_id` (u64): the read index, advanced by the packet processor.
pub const AMD_QUEUE_READ_DISPATCH_ID_OFFSET: usize = 128;

/// Why a ring operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RingError {
    /// Not enough free slots right now; nothing was reserved.
    Full,
    /// More packets than the ring has slots (or zero packets).
    InvalidCount {
        /// Packets asked for.
        requested: u64,
        /// Slots in the ring.
        capacity: u64,
    },
    /// Every slot of the reservation was already written.
    ReservationExhausted,
    /// Ring length is not a power-of-two number of 64-byte packets.
    InvalidRingSize,
    /// Ring not 64-byte aligned, or an index/doorbell offset not 8-byte aligned.
    Misaligned,
    /// An index or doorbell offset lies outside its mapping.
    OutOfBounds,
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full => f.write_str("AQL ring full"),
            Self::InvalidCount { requested, capacity } => {
                write!(f, "cannot reserve {requested} packets in a ring of {capacity}")
            }
            Self::ReservationExhausted => f.write_str("reservation already fully written"),
            Self::InvalidRingSize => {
                f.write_str("ring size is not a power-of-two number of packets")
            }
            Self::Misaligned => f.write_str("ring or index word misaligned"),
            Self::OutOfBounds => f.write_str("index or doorbell outside its mapping"),
        }
    }
}

impl Error for RingError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::Full => ErrorKind::OutOfResources,
            Self::InvalidCount { .. } | Self::InvalidRingSize | Self::OutOfBounds => {
                ErrorKind::InvalidArgument
            }
            Self::ReservationExhausted => ErrorKind::CapacityExhausted,
            Self::Misaligned => ErrorKind::Misaligned,
        }
    }
}

impl core::error::Error for RingError {}

/// The atomic accesses the AQL ring protocol makes. Implemented over [`SharedMemory`] by
/// [`SharedAqlCells`], and over model-checker atomics in tests.
///
/// `slot` arguments are always `< slots()`; implementations may ignore out-of-range slots.
pub trait AqlRingCells {
    /// Number of packet slots (a power of two).
    fn slots(&self) -> u64;
    /// Loads the write index.
    fn load_write_index(&self, order: Ordering) -> u64;
    /// Stores the write index (single producer only).
    fn store_write_index(&self, value: u64, order: Ordering);
    /// Atomically adds `n` to the write index, returning the previous value.
    fn fetch_add_write_index(&self, n: u64, order: Ordering) -> u64;
    /// Compare-exchange on the write index (weak: may fail spuriously).
    ///
    /// # Errors
    /// `Err(observed)` when the exchange did not happen.
    fn compare_exchange_write_index(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64>;
    /// Loads the read index.
    fn load_read_index(&self, order: Ordering) -> u64;
    /// Stores the read index (consumer only).
    fn store_read_index(&self, value: u64, order: Ordering);
    /// Loads (acquire) the producers' cached copy of the read index: a value a producer
    /// earlier loaded from the read index, never more than the read index itself. Producers
    /// check for room against it and touch the real read index — a cache line the packet
    /// processor keeps writing — only when the copy says the ring may be full. The default
    /// has no cache and loads the read index.
    #[inline]
    fn load_read_cache(&self) -> u64 {
        self.load_read_index(Ordering::Acquire)
    }
    /// Raises the cached copy to `seen` (a value just loaded, with acquire, from the read
    /// index) with release ordering, so a producer that acquires the copy also sees what the
    /// consumer released. The default has no cache.
    #[inline]
    fn update_read_cache(&self, seen: u64) {
        let _ = seen;
    }
    /// Stores `dw[1]` and `qw[0..7]` of a slot with relaxed ordering (not `dw[0]`).
    fn store_body(&self, slot: usize, packet: &PacketWords);
    /// Loads `dw[1]` and `qw[0..7]` of a slot with relaxed ordering (`dw[0]` of the result is
    /// unspecified).
    fn load_body(&self, slot: usize) -> PacketWords;
    /// Stores a slot's header word `dw[0]`.
    fn store_header(&self, slot: usize, word: u32, order: Ordering);
    /// Loads a slot's header word `dw[0]`.
    fn load_header(&self, slot: usize, order: Ordering) -> u32;
    /// Rings the doorbell with `value` (the index of the last published packet), ordered after
    /// every earlier store of this thread.
    fn ring_doorbell(&self, value: u64);
}

/// The memory of one AQL queue, as the queue's creator allocated it.
#[derive(Debug, Clone)]
pub struct AqlRingMemory<M> {
    /// The ring buffer: a power-of-two number of 64-byte slots, 64-byte aligned.
    pub ring: M,
    /// The mapping holding the two index words (usually the `amd_queue_t`).
    pub indices: M,
    /// Byte offset of the write index in `indices` (8-aligned).
    pub write_index_offset: usize,
    /// Byte offset of the read index in `indices` (8-aligned).
    pub read_index_offset: usize,
    /// The doorbell mapping.
    pub doorbell: M,
    /// Byte offset of this queue's 64-bit doorbell in `doorbell` (8-aligned).
    pub doorbell_offset: usize,
}

/// [`AqlRingCells`] over [`SharedMemory`] mappings.
///
/// # Invariants
/// Established by [`SharedAqlCells::new`]: the ring's `u32s()`/`u64s()` views cover `slots`
/// packets, `slots` is a power of two, and the index and doorbell words exist. Slot words
/// 0–1 are accessed as `u32`, words 2–15 (bytes 8..64) as `u64`; index words as `u64`.
#[derive(Debug)]
pub struct SharedAqlCells<M> {
    mem: AqlRingMemory<M>,
    read_cache: AtomicU64,
    slots: u64,
    write_word: usize,
    read_word: usize,
}

impl<M: Clone> Clone for SharedAqlCells<M> {
    /// A view of the same memory with its own read-index cache.
    fn clone(&self) -> Self {
        SharedAqlCells {
            mem: self.mem.clone(),
            read_cache: AtomicU64::new(self.read_cache.load(Ordering::Acquire)),
            slots: self.slots,
            write_word: self.write_word,
            read_word: self.read_word,
        }
    }
}

/// Index of word `word` of slot `slot` in a ring of `per_slot`-word packets. Saturating:
/// `slot` is below the slot count validated against the ring's length, so the index never
/// nears `usize::MAX`; were it to, it would stay out of range, where `get` misses.
#[inline]
const fn cell(slot: usize, per_slot: usize, word: usize) -> usize {
    slot.saturating_mul(per_slot).saturating_add(word)
}

impl<M: SharedMemory> SharedAqlCells<M> {
    /// Validates the memory and wraps it.
    ///
    /// # Errors
    /// [`RingError::InvalidRingSize`] unless the ring holds a non-zero power-of-two number of
    /// packets, [`RingError::Misaligned`] for a ring address not 64-aligned or an offset not
    /// 8-aligned, [`RingError::OutOfBounds`] for an index or doorbell outside its mapping.
    pub fn new(mem: AqlRingMemory<M>) -> Result<Self, RingError> {
        let len = mem.ring.len();
        if len == 0 || !len.is_multiple_of(PACKET_SIZE) || !(len / PACKET_SIZE).is_power_of_two() {
            return Err(RingError::InvalidRingSize);
        }
        let slots = len / PACKET_SIZE;
        if !mem.ring.addr().is_multiple_of(PACKET_SIZE as u64)
            || !mem.write_index_offset.is_multiple_of(8)
            || !mem.read_index_offset.is_multiple_of(8)
            || !mem.doorbell_offset.is_multiple_of(8)
            || (!mem.indices.addr().is_multiple_of(8))
        {
            return Err(RingError::Misaligned);
        }
        let short =
            |have: usize, per_slot: usize| slots.checked_mul(per_slot).is_none_or(|n| have < n);
        if short(mem.ring.u32s().len(), 16) || short(mem.ring.u64s().len(), 8) {
            return Err(RingError::InvalidRingSize);
        }
        let (write_word, read_word) = (mem.write_index_offset / 8, mem.read_index_offset / 8);
        let idx = mem.indices.u64s().len();
        if write_word >= idx
            || read_word >= idx
            || mem.doorbell_offset / 8 >= mem.doorbell.u64s().len()
        {
            return Err(RingError::OutOfBounds);
        }
        let read_cache = AtomicU64::new(match mem.indices.u64s().get(read_word) {
            Some(r) => r.load(Ordering::Acquire),
            None => 0,
        });
        Ok(SharedAqlCells { mem, read_cache, slots: slots as u64, write_word, read_word })
    }

    /// The memory this ring was built over.
    #[must_use]
    pub fn memory(&self) -> &AqlRingMemory<M> {
        &self.mem
    }

    #[inline]
    fn write_index(&self) -> Option<&AtomicU64> {
        self.mem.indices.u64s().get(self.write_word)
    }

    #[inline]
    fn read_index(&self) -> Option<&AtomicU64> {
        self.mem.indices.u64s().get(self.read_word)
    }

    #[inline]
    fn header_cell(&self, slot: usize) -> Option<&AtomicU32> {
        self.mem.ring.u32s().get(cell(slot, 16, 0))
    }
}

impl<M: SharedMemory> AqlRingCells for SharedAqlCells<M> {
    #[inline]
    fn slots(&self) -> u64 {
        self.slots
    }
    #[inline]
    fn load_write_index(&self, order: Ordering) -> u64 {
        self.write_index().map_or(0, |w| w.load(order))
    }
    #[inline]
    fn store_write_index(&self, value: u64, order: Ordering) {
        let w = self.write_index();
        // PANIC: debug builds only: `new` checked the write index lies in the indices mapping.
        debug_assert!(w.is_some(), "write index outside its mapping");
        if let Some(w) = w {
            w.store(value, order);
        }
    }
    #[inline]
    fn fetch_add_write_index(&self, n: u64, order: Ordering) -> u64 {
        self.write_index().map_or(0, |w| w.fetch_add(n, order))
    }
    #[inline]
    fn compare_exchange_write_index(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        self.write_index()
            .map_or(Err(current), |w| w.compare_exchange_weak(current, new, success, failure))
    }
    #[inline]
    fn load_read_index(&self, order: Ordering) -> u64 {
        self.read_index().map_or(0, |r| r.load(order))
    }
    #[inline]
    fn store_read_index(&self, value: u64, order: Ordering) {
        if let Some(r) = self.read_index() {
            r.store(value, order);
        }
    }
    #[inline]
    fn load_read_cache(&self) -> u64 {
        self.read_cache.load(Ordering::Acquire)
    }
    #[inline]
    fn update_read_cache(&self, seen: u64) {
        self.read_cache.fetch_max(seen, Ordering::Release);
    }
    #[inline]
    fn store_body(&self, slot: usize, packet: &PacketWords) {
        // PANIC: debug builds only: producers pass `index & (slots - 1)`, and `new` checked the
        // ring holds `slots` packets (release builds would store nothing, never out of bounds).
        debug_assert!((slot as u64) < self.slots, "slot {slot} outside the ring");
        if let Some(d1) = self.mem.ring.u32s().get(cell(slot, 16, 1)) {
            d1.store(packet.dw[1], Ordering::Relaxed);
        }
        if let Some(q) = self.mem.ring.u64s().get(cell(slot, 8, 1)..cell(slot, 8, 8)) {
            for (cell, v) in q.iter().zip(packet.qw.iter()) {
                cell.store(*v, Ordering::Relaxed);
            }
        }
    }
    #[inline]
    fn load_body(&self, slot: usize) -> PacketWords {
        let mut p = PacketWords::default();
        if let Some(d1) = self.mem.ring.u32s().get(cell(slot, 16, 1)) {
            p.dw[1] = d1.load(Ordering::Relaxed);
        }
        if let Some(q) = self.mem.ring.u64s().get(cell(slot, 8, 1)..cell(slot, 8, 8)) {
            for (v, cell) in p.qw.iter_mut().zip(q.iter()) {
                *v = cell.load(Ordering::Relaxed);
            }
        }
        p
    }
    #[inline]
    fn store_header(&self, slot: usize, word: u32, order: Ordering) {
        // PANIC: as in `store_body`.
        debug_assert!((slot as u64) < self.slots, "slot {slot} outside the ring");
        if let Some(h) = self.header_cell(slot) {
            h.store(word, order);
        }
    }
    #[inline]
    fn load_header(&self, slot: usize, order: Ordering) -> u32 {
        self.header_cell(slot).map_or(INVALID_HEADER_WORD, |h| h.load(order))
    }
    #[inline]
    fn ring_doorbell(&self, value: u64) {
        self.mem.doorbell.ring_doorbell64(self.mem.doorbell_offset, value);
    }
}

/// The packet a producer writes into reserved slots it does not use: a barrier-AND with no
/// dependencies, no fences and no completion signal, which completes at once.
const NOP_PACKET: PacketWords = PacketWords {
    dw: [header_word(Barrier::NOP.flags.header(PacketType::BarrierAnd), 0), 0],
    qw: [0; 7],
};

/// Writes every slot as an unpublished slot: header `INVALID`, body zero.
fn init_slots<C: AqlRingCells>(cells: &C) {
    for slot in 0..cells.slots() as usize {
        cells.store_body(slot, &PacketWords::INVALID);
        cells.store_header(slot, INVALID_HEADER_WORD, Ordering::Release);
    }
}

/// Multi-producer AQL submission: any number of threads may submit through `&self`.
///
/// # Invariants
/// - The producer owns no slot; a [`Reservation`] owns the slots `first..first + len` from the
///   moment the write index moved past them until each is published. Only the owner writes a
///   reserved slot's body, and it writes the header word exactly once (the publish).
/// - After publish, the slot belongs to the packet processor until it stores `INVALID` into the
///   header and advances the read index past it.
/// - A producer writes slot `i & mask` only once `i − read_index < slots` (acquire load of the
///   read index), so it never overwrites a packet the consumer has not released.
/// - All producers of one ring go through [`AqlProducer`] (or one [`SingleProducer`] alone).
#[derive(Debug)]
pub struct AqlProducer<C> {
    cells: C,
    mask: u64,
    slots: u64,
}

/// An [`AqlProducer`] over shared memory.
pub type AqlRing<M> = AqlProducer<SharedAqlCells<M>>;

impl<C: AqlRingCells> AqlProducer<C> {
    /// A producer over `cells`.
    ///
    /// # Errors
    /// [`RingError::InvalidRingSize`] unless `cells.slots()` is a non-zero power of two.
    pub fn new(cells: C) -> Result<Self, RingError> {
        let slots = cells.slots();
        if !slots.is_power_of_two() {
            return Err(RingError::InvalidRingSize);
        }
        Ok(AqlProducer { cells, mask: slots.wrapping_sub(1), slots })
    }

    /// The cells (for the queue's owner: initialisation, inspection).
    #[must_use]
    pub fn cells(&self) -> &C {
        &self.cells
    }

    /// Number of slots.
    #[must_use]
    #[inline]
    pub fn slots(&self) -> u64 {
        self.slots
    }

    /// Writes every slot as unpublished (header `INVALID`, body zero). Call once when the
    /// ring is created, before the packet processor may read it.
    pub fn init_slots(&self) {
        init_slots(&self.cells);
    }

    #[inline]
    fn check_count(&self, n: u64) -> Result<(), RingError> {
        if n == 0 || n > self.slots {
            return Err(RingError::InvalidCount { requested: n, capacity: self.slots });
        }
        Ok(())
    }

    /// Waits until the slots before index `end` are free: `end − read_index ≤ slots`. Checks
    /// the cached read index first and loads the real one only when that says full.
    #[inline]
    fn wait_for_room(&self, end: u64, mut relax: impl FnMut()) {
        if end.wrapping_sub(self.cells.load_read_cache()) <= self.slots {
            return;
        }
        loop {
            let read = self.cells.load_read_index(Ordering::Acquire);
            if end.wrapping_sub(read) <= self.slots {
                self.cells.update_read_cache(read);
                return;
            }
            relax();
        }
    }

    /// Reserves `n` slots, waiting (calling `relax` between checks) until they are free.
    ///
    /// `relax` cannot abort the wait: the reservation already exists (see the module docs);
    /// use [`AqlProducer::try_reserve`] to be able to give up.
    ///
    /// # Errors
    /// [`RingError::InvalidCount`] for `n == 0` or `n > slots` (nothing reserved).
    #[inline]
    pub fn reserve(&self, n: u64, relax: impl FnMut()) -> Result<Reservation<'_, C>, RingError> {
        self.check_count(n)?;
        let first = self.cells.fetch_add_write_index(n, Ordering::AcqRel);
        self.wait_for_room(first.wrapping_add(n), relax);
        Ok(Reservation { producer: self, first, len: n, written: 0, finished: false })
    }

    /// Reserves `n` slots if they are free now.
    ///
    /// # Errors
    /// [`RingError::Full`] when fewer than `n` slots are free (nothing reserved);
    /// [`RingError::InvalidCount`] for `n == 0` or `n > slots`.
    #[inline]
    pub fn try_reserve(&self, n: u64) -> Result<Reservation<'_, C>, RingError> {
        self.check_count(n)?;
        let mut read = self.cells.load_read_cache();
        loop {
            let write = self.cells.load_write_index(Ordering::Relaxed);
            if write.wrapping_add(n).wrapping_sub(read) > self.slots {
                let fresh = self.cells.load_read_index(Ordering::Acquire);
                if fresh == read {
                    return Err(RingError::Full);
                }
                self.cells.update_read_cache(fresh);
                read = fresh;
                continue;
            }
            if self
                .cells
                .compare_exchange_write_index(
                    write,
                    write.wrapping_add(n),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                return Ok(Reservation {
                    producer: self,
                    first: write,
                    len: n,
                    written: 0,
                    finished: false,
                });
            }
        }
    }

    #[inline]
    fn write_body(&self, index: u64, packet: &PacketWords) {
        self.cells.store_body((index & self.mask) as usize, packet);
    }

    #[inline]
    fn publish(&self, index: u64, packet: &PacketWords) {
        self.cells.store_header((index & self.mask) as usize, packet.dw[0], Ordering::Release);
    }

    /// Reserves one slot (waiting for space), writes `packet`, publishes it and rings the
    /// doorbell. Returns the packet's index.
    #[inline]
    pub fn submit(&self, packet: &PacketWords, relax: impl FnMut()) -> u64 {
        let index = self.cells.fetch_add_write_index(1, Ordering::AcqRel);
        self.wait_for_room(index.wrapping_add(1), relax);
        self.write_body(index, packet);
        self.publish(index, packet);
        self.cells.ring_doorbell(index);
        index
    }

    /// As [`AqlProducer::submit`], but fails instead of waiting.
    ///
    /// # Errors
    /// [`RingError::Full`] when no slot is free (nothing reserved or written).
    #[inline]
    pub fn try_submit(&self, packet: &PacketWords) -> Result<u64, RingError> {
        let mut r = self.try_reserve(1)?;
        r.push(packet)?;
        Ok(r.commit())
    }

    /// Reserves `packets.len()` slots (waiting for space), writes every body, publishes every
    /// header in index order and rings the doorbell once. Returns the last packet's index.
    ///
    /// # Errors
    /// [`RingError::InvalidCount`] for an empty batch or one larger than the ring.
    pub fn submit_batch(
        &self,
        packets: &[PacketWords],
        relax: impl FnMut(),
    ) -> Result<u64, RingError> {
        let r = self.reserve(packets.len() as u64, relax)?;
        Ok(r.fill(packets))
    }

    /// As [`AqlProducer::submit_batch`], but fails instead of waiting.
    ///
    /// # Errors
    /// [`RingError::Full`] when fewer than `packets.len()` slots are free (nothing reserved);
    /// [`RingError::InvalidCount`] for an empty batch or one larger than the ring.
    pub fn try_submit_batch(&self, packets: &[PacketWords]) -> Result<u64, RingError> {
        let r = self.try_reserve(packets.len() as u64)?;
        Ok(r.fill(packets))
    }
}

/// Slots `first..first + len` reserved by one producer.
///
/// Packets are written in index order with [`Reservation::push`] (body, then the header's
/// release store) and the doorbell rung by [`Reservation::commit`]. Slots left unwritten when
/// the reservation is committed or dropped are filled with no-op barrier packets (and the
/// doorbell rung), so an abandoned reservation never stalls the queue.
#[must_use = "reserved slots must be published, or the queue stalls"]
#[derive(Debug)]
pub struct Reservation<'p, C: AqlRingCells> {
    producer: &'p AqlProducer<C>,
    first: u64,
    len: u64,
    written: u64,
    finished: bool,
}

impl<C: AqlRingCells> Reservation<'_, C> {
    /// Index of the first reserved packet.
    #[must_use]
    #[inline]
    pub fn first_index(&self) -> u64 {
        self.first
    }

    /// Number of reserved slots.
    #[must_use]
    #[inline]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Always false: a reservation holds at least one slot.
    #[must_use]
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slots not yet written.
    #[must_use]
    #[inline]
    pub fn remaining(&self) -> u64 {
        self.len.saturating_sub(self.written)
    }

    /// Writes `packet` into the next reserved slot (body first, then the header word with one
    /// release store) and returns its index. The doorbell is not rung until
    /// [`Reservation::commit`].
    ///
    /// # Errors
    /// [`RingError::ReservationExhausted`] when every reserved slot is written.
    #[inline]
    pub fn push(&mut self, packet: &PacketWords) -> Result<u64, RingError> {
        if self.written == self.len {
            return Err(RingError::ReservationExhausted);
        }
        let index = self.first.wrapping_add(self.written);
        self.producer.write_body(index, packet);
        self.producer.publish(index, packet);
        self.written = self.written.saturating_add(1);
        Ok(index)
    }

    /// Fills unwritten slots with no-op packets, rings the doorbell with the last reserved
    /// index and returns that index.
    #[inline]
    pub fn commit(mut self) -> u64 {
        self.finish()
    }

    /// Writes all of `packets` (exactly `len()` of them) — bodies first, then headers in order
    /// — and rings the doorbell once.
    fn fill(mut self, packets: &[PacketWords]) -> u64 {
        for (i, p) in packets.iter().enumerate() {
            self.producer.write_body(self.first.wrapping_add(i as u64), p);
        }
        for (i, p) in packets.iter().enumerate() {
            self.producer.publish(self.first.wrapping_add(i as u64), p);
        }
        self.written = packets.len() as u64;
        self.finish()
    }

    #[inline]
    fn finish(&mut self) -> u64 {
        let last = self.first.wrapping_add(self.len).wrapping_sub(1);
        if !self.finished {
            self.finished = true;
            while self.written < self.len {
                let index = self.first.wrapping_add(self.written);
                self.producer.write_body(index, &NOP_PACKET);
                self.producer.publish(index, &NOP_PACKET);
                self.written = self.written.saturating_add(1);
            }
            self.producer.cells.ring_doorbell(last);
        }
        last
    }
}

impl<C: AqlRingCells> Drop for Reservation<'_, C> {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Single-producer AQL submission: the one thread holding `&mut self` is the only writer of
/// the write index, so reservation is a plain load and store (no atomic read-modify-write),
/// and the read index is re-read only when the cached value says the ring looks full.
///
/// # Invariants
/// No other producer (of either kind) writes this ring while the `SingleProducer` exists. The
/// write index is stored (release) before the slots it covers are written, as a `fetch_add`
/// would; slot ownership is as for [`AqlProducer`].
#[derive(Debug)]
pub struct SingleProducer<C> {
    cells: C,
    mask: u64,
    slots: u64,
    next: u64,
    read_cache: u64,
}

impl<C: AqlRingCells> SingleProducer<C> {
    /// A single producer over `cells`, continuing from the current write index.
    ///
    /// # Errors
    /// [`RingError::InvalidRingSize`] unless `cells.slots()` is a non-zero power of two.
    pub fn new(cells: C) -> Result<Self, RingError> {
        let slots = cells.slots();
        if !slots.is_power_of_two() {
            return Err(RingError::InvalidRingSize);
        }
        let next = cells.load_write_index(Ordering::Acquire);
        let read_cache = cells.load_read_index(Ordering::Acquire);
        Ok(SingleProducer { cells, mask: slots.wrapping_sub(1), slots, next, read_cache })
    }

    /// The cells.
    #[must_use]
    pub fn cells(&self) -> &C {
        &self.cells
    }

    /// Writes every slot as unpublished; see [`AqlProducer::init_slots`].
    pub fn init_slots(&self) {
        init_slots(&self.cells);
    }

    /// The index the next packet will get.
    #[must_use]
    #[inline]
    pub fn write_index(&self) -> u64 {
        self.next
    }

    #[inline]
    fn has_room(&mut self, n: u64) -> bool {
        let end = self.next.wrapping_add(n);
        if end.wrapping_sub(self.read_cache) <= self.slots {
            return true;
        }
        self.read_cache = self.cells.load_read_index(Ordering::Acquire);
        end.wrapping_sub(self.read_cache) <= self.slots
    }

    #[inline]
    fn put(&mut self, packets: &[PacketWords]) -> u64 {
        let first = self.next;
        let n = packets.len() as u64;
        self.next = first.wrapping_add(n);
        self.cells.store_write_index(self.next, Ordering::Release);
        for (i, p) in packets.iter().enumerate() {
            self.cells.store_body((first.wrapping_add(i as u64) & self.mask) as usize, p);
        }
        for (i, p) in packets.iter().enumerate() {
            let slot = (first.wrapping_add(i as u64) & self.mask) as usize;
            self.cells.store_header(slot, p.dw[0], Ordering::Release);
        }
        let last = self.next.wrapping_sub(1);
        self.cells.ring_doorbell(last);
        last
    }

    /// Writes, publishes and rings one packet, waiting (calling `relax`) for a free slot.
    /// Returns the packet's index.
    #[inline]
    pub fn submit(&mut self, packet: &PacketWords, mut relax: impl FnMut()) -> u64 {
        while !self.has_room(1) {
            relax();
        }
        self.put(core::slice::from_ref(packet))
    }

    /// As [`SingleProducer::submit`], but fails instead of waiting.
    ///
    /// # Errors
    /// [`RingError::Full`] when no slot is free.
    #[inline]
    pub fn try_submit(&mut self, packet: &PacketWords) -> Result<u64, RingError> {
        if !self.has_room(1) {
            return Err(RingError::Full);
        }
        Ok(self.put(core::slice::from_ref(packet)))
    }

    /// Writes all bodies, publishes all headers in order and rings the doorbell once, waiting
    /// for space. Returns the last index.
    ///
    /// # Errors
    /// [`RingError::InvalidCount`] for an empty batch or one larger than the ring.
    pub fn submit_batch(
        &mut self,
        packets: &[PacketWords],
        mut relax: impl FnMut(),
    ) -> Result<u64, RingError> {
        let n = packets.len() as u64;
        if n == 0 || n > self.slots {
            return Err(RingError::InvalidCount { requested: n, capacity: self.slots });
        }
        while !self.has_room(n) {
            relax();
        }
        Ok(self.put(packets))
    }

    /// As [`SingleProducer::submit_batch`], but fails instead of waiting.
    ///
    /// # Errors
    /// [`RingError::Full`] when fewer than `packets.len()` slots are free;
    /// [`RingError::InvalidCount`] for an empty batch or one larger than the ring.
    pub fn try_submit_batch(&mut self, packets: &[PacketWords]) -> Result<u64, RingError> {
        let n = packets.len() as u64;
        if n == 0 || n > self.slots {
            return Err(RingError::InvalidCount { requested: n, capacity: self.slots });
        }
        if !self.has_room(n) {
            return Err(RingError::Full);
        }
        Ok(self.put(packets))
    }
}

/// The packet processor's side of the ring (the simulator's CP, and tests).
///
/// # Invariants
/// Exactly one consumer per ring; it alone stores the read index.
#[derive(Debug)]
pub struct AqlConsumer<C> {
    cells: C,
    mask: u64,
}

impl<C: AqlRingCells> AqlConsumer<C> {
    /// A consumer over `cells`.
    ///
    /// # Errors
    /// [`RingError::InvalidRingSize`] unless `cells.slots()` is a non-zero power of two.
    pub fn new(cells: C) -> Result<Self, RingError> {
        let slots = cells.slots();
        if !slots.is_power_of_two() {
            return Err(RingError::InvalidRingSize);
        }
        Ok(AqlConsumer { cells, mask: slots.wrapping_sub(1) })
    }

    /// The cells.
    #[must_use]
    pub fn cells(&self) -> &C {
        &self.cells
    }

    /// The read index: the next packet to consume.
    #[must_use]
    #[inline]
    pub fn read_index(&self) -> u64 {
        self.cells.load_read_index(Ordering::Relaxed)
    }

    /// The packet at the read index, if published (header not `INVALID`), without consuming.
    #[must_use]
    #[inline]
    pub fn peek(&self) -> Option<PacketWords> {
        let slot = (self.read_index() & self.mask) as usize;
        let header = self.cells.load_header(slot, Ordering::Acquire);
        if header & 0xFF == PacketType::Invalid as u32 {
            return None;
        }
        let mut p = self.cells.load_body(slot);
        p.dw[0] = header;
        Some(p)
    }

    /// Takes the packet at the read index if published: reads it, stores `INVALID` into its
    /// header, then advances the read index (release). Returns `(index, packet)`.
    #[inline]
    pub fn pop(&self) -> Option<(u64, PacketWords)> {
        let index = self.read_index();
        let p = self.peek()?;
        let slot = (index & self.mask) as usize;
        self.cells.store_header(slot, INVALID_HEADER_WORD, Ordering::Relaxed);
        self.cells.store_read_index(index.wrapping_add(1), Ordering::Release);
        Some((index, p))
    }
}

#[cfg(test)]
mod tests;
