//! Owned producer objects for submitting to a queue without touching the [`Kfd`] again:
//! [`AqlQueue`] (multi-producer, `&self` from any thread), [`SingleAqlQueue`] (one thread,
//! no atomic read-modify-write) and [`SdmaQueue`] (copies, fills, fences and signals).
//!
//! Each holds clones of the queue's mappings (ring, pointers page, doorbell page), so the
//! memory stays valid as long as the object lives; the queue cannot be destroyed meanwhile
//! ([`QueueError::Busy`]). Submission takes no lock, allocates nothing and makes no system call:
//! it is the protocol of [`crate::queue::ring`] / [`crate::queue::sdma`] on those mappings.
//!
//! [`Kfd`]: crate::device::Kfd

use core::sync::atomic::Ordering;

use crate::config::SDMA_SUBMIT_BATCH;
use crate::device::{Kfd, MemoryStorage};
use crate::platform::{Platform, SharedMemory};
use crate::queue::aql::PacketWords;
use crate::queue::ring::{
    AqlProducer, AqlRing, AqlRingMemory, Reservation, RingError, SharedAqlCells, SingleProducer,
};
use crate::queue::sdma::{SdmaError, SdmaLimits, SdmaPacket, SdmaRing, SdmaRingMemory};
use crate::queue::signal::{Mailbox, VALUE_OFFSET};

use super::{
    PRODUCERS_OFFSET, QueueError, QueueHandle, QueueType, READ_POINTER_OFFSET, SDMA_FENCE_OFFSET,
    WRITE_POINTER_OFFSET,
};

/// Counts a queue's live producer objects in a word of its pointers page (a word the packet
/// processor never touches), so the queue can refuse destruction while one exists — without
/// a lock or an allocation. Created under the queue table's lock; dropped anywhere.
#[derive(Debug)]
pub(crate) struct ProducerToken<M: SharedMemory> {
    page: M,
}

impl<M: SharedMemory> ProducerToken<M> {
    pub(crate) fn new(page: M) -> Self {
        let word = page.u32s().get(PRODUCERS_OFFSET / 4);
        // PANIC: debug builds only: producers are built from `producer_views`, which checked
        // that the page holds the count; a miss is a broken invariant (release builds count
        // nothing, and the queue's destruction is then not held back by this producer).
        debug_assert!(word.is_some(), "producer count outside the pointers page");
        if let Some(w) = word {
            w.fetch_add(1, Ordering::AcqRel);
        }
        ProducerToken { page }
    }

    /// Live producers of the queue whose pointers page is `page`.
    pub(crate) fn count(page: &M) -> u32 {
        page.u32s().get(PRODUCERS_OFFSET / 4).map_or(0, |w| w.load(Ordering::Acquire))
    }
}

impl<M: SharedMemory> Clone for ProducerToken<M> {
    fn clone(&self) -> Self {
        Self::new(self.page.clone())
    }
}

impl<M: SharedMemory> Drop for ProducerToken<M> {
    fn drop(&mut self) {
        if let Some(w) = self.page.u32s().get(PRODUCERS_OFFSET / 4) {
            w.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// A multi-producer AQL queue: any number of threads may submit through `&self`.
///
/// # Invariants
/// Every producer of the ring goes through an [`AqlQueue`] (any number of them) or exactly one
/// [`SingleAqlQueue`] and nothing else (see [`crate::queue::ring`]).
#[derive(Debug)]
pub struct AqlQueue<M: SharedMemory> {
    handle: QueueHandle,
    queue_id: u32,
    ring: AqlRing<M>,
    token: ProducerToken<M>,
}

impl<M: SharedMemory> AqlQueue<M> {
    pub(crate) fn new(
        handle: QueueHandle,
        queue_id: u32,
        ring: AqlRing<M>,
        token: ProducerToken<M>,
    ) -> Self {
        AqlQueue { handle, queue_id, ring, token }
    }

    /// The queue this producer submits to.
    #[must_use]
    pub fn handle(&self) -> QueueHandle {
        self.handle
    }

    /// The kernel's queue id.
    #[must_use]
    pub fn queue_id(&self) -> u32 {
        self.queue_id
    }

    /// Packet slots in the ring.
    #[must_use]
    #[inline]
    pub fn slots(&self) -> u64 {
        self.ring.slots()
    }

    /// The ring protocol object (reservations, batches).
    #[must_use]
    #[inline]
    pub fn producer(&self) -> &AqlRing<M> {
        &self.ring
    }

    /// The read index the packet processor has reached.
    #[must_use]
    #[inline]
    pub fn read_index(&self) -> u64 {
        use crate::queue::ring::AqlRingCells;
        self.ring.cells().load_read_index(Ordering::Acquire)
    }

    /// The write index (packets reserved so far).
    #[must_use]
    #[inline]
    pub fn write_index(&self) -> u64 {
        use crate::queue::ring::AqlRingCells;
        self.ring.cells().load_write_index(Ordering::Acquire)
    }

    /// Submits one packet, waiting (calling `relax`) while the ring is full; returns its index.
    #[inline]
    pub fn submit(&self, packet: &PacketWords, relax: impl FnMut()) -> u64 {
        self.ring.submit(packet, relax)
    }

    /// Submits one packet if a slot is free now.
    ///
    /// # Errors
    /// [`RingError::Full`] (nothing written).
    #[inline]
    pub fn try_submit(&self, packet: &PacketWords) -> Result<u64, RingError> {
        self.ring.try_submit(packet)
    }

    /// Reserves `n` slots, waiting for room; see [`AqlRing::reserve`].
    ///
    /// # Errors
    /// [`RingError::InvalidCount`].
    #[inline]
    pub fn reserve(
        &self,
        n: u64,
        relax: impl FnMut(),
    ) -> Result<Reservation<'_, SharedAqlCells<M>>, RingError> {
        self.ring.reserve(n, relax)
    }

    /// Turns this producer into the queue's single producer.
    ///
    /// # Errors
    /// [`RingError::InvalidRingSize`] (cannot happen for a validated ring).
    pub fn into_single(self) -> Result<SingleAqlQueue<M>, QueueError> {
        let cells = self.ring.cells().clone();
        Ok(SingleAqlQueue {
            handle: self.handle,
            queue_id: self.queue_id,
            ring: SingleProducer::new(cells)?,
            _token: self.token.clone(),
        })
    }
}

/// The single producer of an AQL queue: plain loads and stores of the write index.
///
/// # Invariants
/// No other producer writes the ring while this object exists.
#[derive(Debug)]
pub struct SingleAqlQueue<M: SharedMemory> {
    handle: QueueHandle,
    queue_id: u32,
    ring: SingleProducer<SharedAqlCells<M>>,
    _token: ProducerToken<M>,
}

impl<M: SharedMemory> SingleAqlQueue<M> {
    /// The queue this producer submits to.
    #[must_use]
    pub fn handle(&self) -> QueueHandle {
        self.handle
    }

    /// The kernel's queue id.
    #[must_use]
    pub fn queue_id(&self) -> u32 {
        self.queue_id
    }

    /// The ring protocol object.
    #[must_use]
    #[inline]
    pub fn producer(&mut self) -> &mut SingleProducer<SharedAqlCells<M>> {
        &mut self.ring
    }

    /// Submits one packet, waiting (calling `relax`) while the ring is full; returns its index.
    #[inline]
    pub fn submit(&mut self, packet: &PacketWords, relax: impl FnMut()) -> u64 {
        self.ring.submit(packet, relax)
    }

    /// Submits one packet if a slot is free now.
    ///
    /// # Errors
    /// [`RingError::Full`].
    #[inline]
    pub fn try_submit(&mut self, packet: &PacketWords) -> Result<u64, RingError> {
        self.ring.try_submit(packet)
    }

    /// Submits a batch with one doorbell, waiting for room.
    ///
    /// # Errors
    /// [`RingError::InvalidCount`].
    #[inline]
    pub fn submit_batch(
        &mut self,
        packets: &[PacketWords],
        relax: impl FnMut(),
    ) -> Result<u64, RingError> {
        self.ring.submit_batch(packets, relax)
    }
}

/// The producer of a PM4 (compute) queue: a dword ring; packets may wrap around the ring's end.
/// The write pointer counts dwords (64-bit, monotonic); the read pointer the CP reports is the
/// dword offset in the ring (`CP_HQD_PQ_RPTR`, wrapping at the ring's end). The caller builds
/// the PM4 packets.
///
/// # Invariants
/// One producer per PM4 queue; it alone writes the ring and the write pointer.
#[derive(Debug)]
pub struct Pm4Queue<M: SharedMemory> {
    handle: QueueHandle,
    queue_id: u32,
    ring: M,
    pointers: M,
    read_offset: usize,
    write_offset: usize,
    doorbell: M,
    doorbell_offset: usize,
    wptr: u64,
    size: u64,
    _token: ProducerToken<M>,
}

impl<M: SharedMemory> Pm4Queue<M> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        handle: QueueHandle,
        queue_id: u32,
        ring: M,
        pointers: M,
        read_offset: usize,
        write_offset: usize,
        doorbell: M,
        doorbell_offset: usize,
    ) -> Self {
        let wptr = pointers.u64s().get(write_offset / 8).map_or(0, |w| w.load(Ordering::Acquire));
        let size = (ring.len() / 4) as u64;
        let _token = ProducerToken::new(pointers.clone());
        Pm4Queue {
            _token,
            handle,
            queue_id,
            ring,
            pointers,
            read_offset,
            write_offset,
            doorbell,
            doorbell_offset,
            wptr,
            size,
        }
    }

    /// The queue this producer submits to.
    #[must_use]
    pub fn handle(&self) -> QueueHandle {
        self.handle
    }

    /// The kernel's queue id.
    #[must_use]
    pub fn queue_id(&self) -> u32 {
        self.queue_id
    }

    /// The write pointer in dwords.
    #[must_use]
    pub fn wptr(&self) -> u64 {
        self.wptr
    }

    /// The read pointer: the dword offset in the ring where the CP consumes next (it wraps at
    /// the ring's end).
    #[must_use]
    pub fn rptr(&self) -> u64 {
        self.pointers.u64s().get(self.read_offset / 8).map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// Dwords written and not yet consumed by the CP (0: the queue is drained).
    #[must_use]
    pub fn pending(&self) -> u64 {
        // The read pointer comes from shared memory: taken modulo the ring, never a panic.
        let (Some(r), Some(w)) =
            (self.rptr().checked_rem(self.size), self.wptr.checked_rem(self.size))
        else {
            return 0;
        };
        // Bounded: both are below the ring size.
        w.wrapping_add(self.size).wrapping_sub(r).checked_rem(self.size).unwrap_or(0)
    }

    /// Writes `dwords` (whole packets) at the write pointer, waiting (calling `relax`) for
    /// room, then stores the write pointer and rings the doorbell with it. Returns the new
    /// write pointer.
    ///
    /// # Errors
    /// [`RingError::InvalidCount`] for an empty submission or one of a ring or more.
    pub fn submit(&mut self, dwords: &[u32], mut relax: impl FnMut()) -> Result<u64, RingError> {
        let n = dwords.len() as u64;
        if n == 0 || n >= self.size {
            return Err(RingError::InvalidCount { requested: n, capacity: self.size });
        }
        while self.pending().saturating_add(n) >= self.size {
            relax();
        }
        let words = self.ring.u32s();
        for (i, d) in dwords.iter().enumerate() {
            let at = self.wptr.wrapping_add(i as u64).checked_rem(self.size);
            let cell = at.and_then(|a| words.get(a as usize));
            // PANIC: debug builds only: `at < size`, the ring's length in dwords.
            debug_assert!(cell.is_some(), "PM4 ring index outside the ring");
            if let Some(w) = cell {
                w.store(*d, Ordering::Relaxed);
            }
        }
        self.wptr = self.wptr.saturating_add(n);
        let cell = self.pointers.u64s().get(self.write_offset / 8);
        // PANIC: debug builds only: `pm4_queue` built this producer from `producer_views`,
        // which checked that the pointers mapping holds the write pointer.
        debug_assert!(cell.is_some(), "PM4 write pointer outside the pointers mapping");
        if let Some(w) = cell {
            w.store(self.wptr, Ordering::Release);
        }
        self.doorbell.ring_doorbell64(self.doorbell_offset, self.wptr);
        Ok(self.wptr)
    }
}

/// A completion ticket of an [`SdmaQueue`]: the fence value written after the submission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SdmaTicket(pub u32);

/// How an SDMA submission reports completion, besides the queue's own fence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SdmaCompletion {
    /// Only the queue's fence ([`SdmaQueue::is_complete`], [`SdmaQueue::wait`]).
    Fence,
    /// Also store `value` into the HSA signal at `signal` (its handle) — as two 32-bit
    /// `FENCE` writes, high word first, so a waiter sees the low word change last — and, when
    /// `mailbox` is set, write its event id there and raise an interrupt (`FENCE` + `TRAP`, the
    /// way SDMA raises KFD events).
    Signal {
        /// The signal handle (address of the `amd_signal_t`).
        signal: u64,
        /// The value to store.
        value: i64,
        /// The event to raise.
        mailbox: Option<Mailbox>,
    },
}

/// The producer of an SDMA queue, with a copy API that splits large transfers into packets of
/// the engine's maximum size and completes through the queue's fence (and optionally a signal).
///
/// The fence is a 32-bit word in the queue's pointers page; each submission writes the next
/// sequence number to it with a `FENCE` packet after its other packets.
///
/// # Invariants
/// One producer per SDMA queue (the ring is single-producer): share it behind a lock or give
/// each thread its own queue.
#[derive(Debug)]
pub struct SdmaQueue<M: SharedMemory> {
    handle: QueueHandle,
    queue_id: u32,
    ring: SdmaRing<M>,
    fence: M,
    fence_offset: usize,
    next: u32,
    _token: ProducerToken<M>,
}

/// The most packets a completion takes: the signal value's two halves, the mailbox fence and
/// trap, the queue's fence.
const COMPLETION_PACKETS: usize = 5;

/// Packets per ring submission when a copy is split: at most a quarter of the ring.
const fn batch_packets(ring_size: u64) -> u64 {
    let n = ring_size / 4 / 28;
    if n == 0 { 1 } else { n }
}

impl<M: SharedMemory> SdmaQueue<M> {
    pub(crate) fn new(
        handle: QueueHandle,
        queue_id: u32,
        ring: SdmaRing<M>,
        fence: M,
        fence_offset: usize,
    ) -> Self {
        let next = fence
            .u32s()
            .get(fence_offset / 4)
            .map_or(0, |w| w.load(Ordering::Acquire))
            .wrapping_add(1);
        let _token = ProducerToken::new(fence.clone());
        SdmaQueue { handle, queue_id, ring, fence, fence_offset, next, _token }
    }

    /// The queue this producer submits to.
    #[must_use]
    pub fn handle(&self) -> QueueHandle {
        self.handle
    }

    /// The kernel's queue id.
    #[must_use]
    pub fn queue_id(&self) -> u32 {
        self.queue_id
    }

    /// The engine's packet limits.
    #[must_use]
    pub fn limits(&self) -> SdmaLimits {
        self.ring.limits()
    }

    /// The ring producer, for submitting packets directly.
    #[must_use]
    pub fn ring(&mut self) -> &mut SdmaRing<M> {
        &mut self.ring
    }

    /// The GPU address of the queue's fence word.
    #[must_use]
    pub fn fence_address(&self) -> u64 {
        // An offset inside the fence buffer.
        self.fence.addr().saturating_add(self.fence_offset as u64)
    }

    /// The last fence value the engine wrote.
    #[must_use]
    #[inline]
    pub fn fence_value(&self) -> u32 {
        self.fence.u32s().get(self.fence_offset / 4).map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// Whether the submission of `ticket` completed (every packet before its fence executed).
    #[must_use]
    #[inline]
    pub fn is_complete(&self, ticket: SdmaTicket) -> bool {
        self.fence_value().wrapping_sub(ticket.0) as i32 >= 0
    }

    /// Waits (calling `relax`) until `ticket` completed.
    pub fn wait(&self, ticket: SdmaTicket, mut relax: impl FnMut()) {
        while !self.is_complete(ticket) {
            relax();
        }
    }

    /// The packets completing the next submission: the signal's value (and the mailbox
    /// event's fence and trap), then the queue's fence with the submission's number. Built
    /// before anything is written, so an address that overflows submits nothing.
    fn completion_packets(
        &self,
        completion: SdmaCompletion,
    ) -> Result<([SdmaPacket; COMPLETION_PACKETS], usize), SdmaError> {
        let fence = SdmaPacket::Fence { addr: self.fence_address(), data: self.next, mtype: 0 };
        let mut tail = [SdmaPacket::Nop { dwords: 1 }; COMPLETION_PACKETS];
        let mut n = 0;
        if let SdmaCompletion::Signal { signal, value, mailbox } = completion {
            let at = signal.checked_add(VALUE_OFFSET as u64).ok_or(SdmaError::AddressOverflow)?;
            let hi = at.checked_add(4).ok_or(SdmaError::AddressOverflow)?;
            let v = value as u64;
            tail[0] = SdmaPacket::Fence { addr: hi, data: (v >> 32) as u32, mtype: 0 };
            tail[1] = SdmaPacket::Fence { addr: at, data: v as u32, mtype: 0 };
            n = 2;
            if let Some(m) = mailbox {
                tail[2] = SdmaPacket::Fence { addr: m.address, data: m.event_id, mtype: 0 };
                tail[3] = SdmaPacket::Trap { int_ctx: m.event_id };
                n = 4;
            }
        }
        if let Some(slot) = tail.get_mut(n) {
            *slot = fence;
            n = n.saturating_add(1);
        }
        Ok((tail, n))
    }

    /// The ticket of the submission just completed by its fence; numbers the next one.
    fn advance(&mut self) -> SdmaTicket {
        let seq = self.next;
        self.next = seq.wrapping_add(1);
        SdmaTicket(seq)
    }

    fn finish(
        &mut self,
        completion: SdmaCompletion,
        mut relax: impl FnMut(),
    ) -> Result<SdmaTicket, QueueError> {
        let (tail, n) = self.completion_packets(completion)?;
        self.ring.submit(tail.get(..n).unwrap_or_default().iter().copied(), &mut relax)?;
        Ok(self.advance())
    }

    /// Submits `lead` (packets that must come first, such as polls), then `bytes` of work as
    /// packets of at most `per_packet` bytes each (`make` builds one from its offset and
    /// length), in batches the ring can hold, then `completion`. `lead` goes into the first
    /// batch and the completion into the last when they fit there (one write-pointer store
    /// and one doorbell for a copy that takes one packet), else each on its own.
    fn submit_split<L>(
        &mut self,
        lead: L,
        bytes: u64,
        per_packet: u64,
        mut make: impl FnMut(u64, u64) -> Result<SdmaPacket, SdmaError>,
        completion: SdmaCompletion,
        mut relax: impl FnMut(),
    ) -> Result<SdmaTicket, QueueError>
    where
        L: Iterator<Item = SdmaPacket> + ExactSizeIterator + Clone,
    {
        let (tail, tail_len) = self.completion_packets(completion)?;
        let batch = usize::try_from(batch_packets(self.ring.size())).unwrap_or(usize::MAX);
        let batch = batch.min(SDMA_SUBMIT_BATCH);
        let mut lead = Some(lead);
        if let Some(l) = lead.take_if(|l| l.len() >= batch) {
            self.ring.submit(l, &mut relax)?;
        }
        let mut done = 0u64;
        loop {
            let mut buf = [SdmaPacket::Nop { dwords: 1 }; SDMA_SUBMIT_BATCH];
            let mut n = 0usize;
            for (slot, p) in buf.iter_mut().zip(lead.take().into_iter().flatten()) {
                *slot = p;
                n = n.saturating_add(1);
            }
            while done < bytes && n < batch {
                let chunk = bytes.saturating_sub(done).min(per_packet);
                if let Some(slot) = buf.get_mut(n) {
                    *slot = make(done, chunk)?;
                }
                n = n.saturating_add(1);
                done = done.saturating_add(chunk);
            }
            let last = done >= bytes;
            if last && n.saturating_add(tail_len) <= batch {
                for (slot, p) in buf.iter_mut().skip(n).zip(tail.iter().take(tail_len)) {
                    *slot = *p;
                }
                let packets = buf.get(..n.saturating_add(tail_len)).unwrap_or_default();
                self.ring.submit(packets.iter().copied(), &mut relax)?;
                return Ok(self.advance());
            }
            let packets = buf.get(..n).unwrap_or_default();
            self.ring.submit(packets.iter().copied(), &mut relax)?;
            if last {
                break;
            }
        }
        self.ring.submit(tail.get(..tail_len).unwrap_or_default().iter().copied(), &mut relax)?;
        Ok(self.advance())
    }

    /// Copies `bytes` from `src` to `dst` (GPU virtual addresses: host memory, this GPU's VRAM,
    /// or a peer's VRAM mapped to this GPU), as `COPY_LINEAR` packets of at most the engine's
    /// maximum transfer each, then the completion. Waits (calling `relax`) whenever the ring
    /// is full; packets are submitted as they fit, so copies of any size work on any ring.
    ///
    /// # Errors
    /// [`SdmaError::InvalidSize`] for 0 bytes, [`SdmaError::AddressOverflow`] for a range that
    /// wraps (both before anything is submitted).
    pub fn copy(
        &mut self,
        dst: u64,
        src: u64,
        bytes: u64,
        completion: SdmaCompletion,
        relax: impl FnMut(),
    ) -> Result<SdmaTicket, QueueError> {
        self.copy_after(core::iter::empty(), dst, src, bytes, completion, relax)
    }

    /// As [`SdmaQueue::copy`], after `waits` (packets the engine executes first, such as
    /// `POLL_REGMEM` on a dependency's signal), which go into the copy's first submission when
    /// they fit in it (one doorbell for waits, a one-packet copy and its completion).
    ///
    /// # Errors
    /// As [`SdmaQueue::copy`], and the [`SdmaPacket::validate`] errors of `waits`.
    pub fn copy_after<W>(
        &mut self,
        waits: W,
        dst: u64,
        src: u64,
        bytes: u64,
        completion: SdmaCompletion,
        relax: impl FnMut(),
    ) -> Result<SdmaTicket, QueueError>
    where
        W: IntoIterator<Item = SdmaPacket>,
        W::IntoIter: ExactSizeIterator + Clone,
    {
        let limits = self.ring.limits();
        limits.plan_copy(src, dst, bytes)?;
        let max = u64::from(limits.max_copy_bytes());
        self.submit_split(
            waits.into_iter(),
            bytes,
            max,
            |off, len| {
                // `off` < `bytes`, and both ranges were checked not to wrap.
                let (src, dst) = (src.saturating_add(off), dst.saturating_add(off));
                Ok(SdmaPacket::CopyLinear { src, dst, bytes: len as u32 })
            },
            completion,
            relax,
        )
    }

    /// Fills `bytes` (a multiple of 4) at `dst` (dword-aligned) with `data`.
    ///
    /// # Errors
    /// [`SdmaError::InvalidSize`], [`SdmaError::Misaligned`], [`SdmaError::AddressOverflow`].
    pub fn fill(
        &mut self,
        dst: u64,
        data: u32,
        bytes: u64,
        completion: SdmaCompletion,
        relax: impl FnMut(),
    ) -> Result<SdmaTicket, QueueError> {
        self.ring.limits().plan_fill(dst, data, bytes)?;
        let max = u64::from(crate::queue::sdma::MAX_FILL_BYTES);
        self.submit_split(
            core::iter::empty(),
            bytes,
            max,
            |off, len| {
                let dst = dst.saturating_add(off);
                Ok(SdmaPacket::ConstantFill { dst, data, bytes: len as u32 })
            },
            completion,
            relax,
        )
    }

    /// Submits only a completion (fence, and optionally a signal): completes when every earlier
    /// submission did.
    ///
    /// # Errors
    /// [`SdmaError::AddressOverflow`] for a signal at the top of the address space.
    pub fn marker(
        &mut self,
        completion: SdmaCompletion,
        relax: impl FnMut(),
    ) -> Result<SdmaTicket, QueueError> {
        self.finish(completion, relax)
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// A multi-producer submitter for an AQL queue, holding clones of its ring, pointers and
    /// doorbell mappings.
    ///
    /// # Errors
    /// [`QueueError::InvalidHandle`]; [`QueueError::WrongQueueKind`] for a non-AQL queue or one
    /// whose ring or pointers the library has no exact mapping of.
    pub fn aql_queue(&self, handle: QueueHandle) -> Result<AqlQueue<P::Mapping>, QueueError> {
        let (mem, queue_id, token) = {
            let q = self.queues().lock();
            let r = q.table.get(handle)?;
            if r.info.queue_type != QueueType::ComputeAql {
                return Err(QueueError::WrongQueueKind);
            }
            let (ring, pointers) = r.producer_views()?;
            let mem = AqlRingMemory {
                ring,
                indices: pointers.clone(),
                write_index_offset: WRITE_POINTER_OFFSET,
                read_index_offset: READ_POINTER_OFFSET,
                doorbell: r.doorbell.clone(),
                doorbell_offset: r.doorbell_offset,
            };
            (mem, r.info.queue_id, ProducerToken::new(pointers))
        };
        let ring = AqlProducer::new(SharedAqlCells::new(mem)?)?;
        Ok(AqlQueue::new(handle, queue_id, ring, token))
    }

    /// The producer of a PM4 compute queue.
    ///
    /// # Errors
    /// [`QueueError::InvalidHandle`]; [`QueueError::WrongQueueKind`] for another kind or one
    /// whose ring or pointers the library has no exact mapping of; [`QueueError::Ring`] for a
    /// doorbell not 8-aligned ([`RingError::Misaligned`]: the 32-bit doorbells before gfx9)
    /// or outside its page ([`RingError::OutOfBounds`]).
    pub fn pm4_queue(&self, handle: QueueHandle) -> Result<Pm4Queue<P::Mapping>, QueueError> {
        let q = self.queues().lock();
        let r = q.table.get(handle)?;
        if r.info.queue_type != QueueType::Compute {
            return Err(QueueError::WrongQueueKind);
        }
        // The doorbell invariant of `SharedMemory::ring_doorbell64`, checked once here as the
        // AQL and SDMA producers check it when they are built.
        if !r.doorbell_offset.is_multiple_of(8) {
            return Err(QueueError::Ring(RingError::Misaligned));
        }
        if r.doorbell_offset.checked_add(8).is_none_or(|end| end > r.doorbell.len()) {
            return Err(QueueError::Ring(RingError::OutOfBounds));
        }
        let (ring, pointers) = r.producer_views()?;
        Ok(Pm4Queue::new(
            handle,
            r.info.queue_id,
            ring,
            pointers,
            READ_POINTER_OFFSET,
            WRITE_POINTER_OFFSET,
            r.doorbell.clone(),
            r.doorbell_offset,
        ))
    }

    /// The producer of an SDMA queue, with its copy API.
    ///
    /// # Errors
    /// [`QueueError::InvalidHandle`]; [`QueueError::WrongQueueKind`] for a compute queue or one
    /// whose ring or pointers the library has no exact mapping of; [`QueueError::Sdma`] for a
    /// gfx version without an SDMA v4+ engine.
    pub fn sdma_queue(&self, handle: QueueHandle) -> Result<SdmaQueue<P::Mapping>, QueueError> {
        let (mem, gfx, queue_id) = {
            let q = self.queues().lock();
            let r = q.table.get(handle)?;
            if !r.info.queue_type.is_sdma() {
                return Err(QueueError::WrongQueueKind);
            }
            let (ring, pointers) = r.producer_views()?;
            let mem = SdmaRingMemory {
                ring,
                pointers,
                rptr_offset: READ_POINTER_OFFSET,
                wptr_offset: WRITE_POINTER_OFFSET,
                doorbell: r.doorbell.clone(),
                doorbell_offset: r.doorbell_offset,
            };
            (mem, r.gfx, r.info.queue_id)
        };
        let limits = SdmaLimits::for_gfx(gfx.major, gfx.minor, gfx.stepping)?;
        let fence = mem.pointers.clone();
        let ring = SdmaRing::new(mem, limits)?;
        Ok(SdmaQueue::new(handle, queue_id, ring, fence, SDMA_FENCE_OFFSET))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::sdma::{SdmaConsumer, SdmaRingMemory};
    use crate::queue::test_mem::TestMem;
    use std::vec::Vec;

    /// A queue over a `ring`-byte ring, its consumer, its pointers and its doorbell page.
    fn queue(ring: usize) -> (SdmaQueue<TestMem>, SdmaConsumer<TestMem>, TestMem, TestMem) {
        let pointers = TestMem::new(4096);
        let doorbell = TestMem::new(4096);
        let mem = SdmaRingMemory {
            ring: TestMem::at(0x4000_0000, ring),
            pointers: pointers.clone(),
            rptr_offset: 128,
            wptr_offset: 56,
            doorbell: doorbell.clone(),
            doorbell_offset: 8,
        };
        let cons = SdmaConsumer::new(mem.clone(), SdmaLimits::COUNT22).unwrap();
        let ring = SdmaRing::new(mem, SdmaLimits::COUNT22).unwrap();
        let h = QueueHandle::from_raw(1 << 32);
        (SdmaQueue::new(h, 3, ring, pointers.clone(), 256), cons, pointers, doorbell)
    }

    /// A copy of one packet and its completion are one submission: one write-pointer store,
    /// one doorbell. A completion whose address overflows submits nothing at all.
    #[test]
    fn a_small_copy_and_its_completion_ring_the_doorbell_once() {
        let (mut q, cons, pointers, doorbell) = queue(4096);
        let signal = SdmaCompletion::Signal {
            signal: 0x5000,
            value: 0,
            mailbox: Some(Mailbox { address: 0x6000, event_id: 4 }),
        };
        let t = q.copy(0x9000_0000, 0x1000_0000, 4096, signal, || unreachable!()).unwrap();
        assert_eq!((t, doorbell.doorbell_count()), (SdmaTicket(1), 1));
        let mut seen = Vec::new();
        while let Some(p) = cons.pop() {
            seen.push(p.unwrap());
        }
        assert_eq!(seen.len(), 6, "{seen:?}");
        assert_eq!(
            seen[0],
            SdmaPacket::CopyLinear { src: 0x1000_0000, dst: 0x9000_0000, bytes: 4096 }
        );
        assert_eq!(seen[5], SdmaPacket::Fence { addr: pointers.addr() + 256, data: 1, mtype: 0 });
        assert_eq!(doorbell.last_doorbell(), cons.rptr());
        let wptr = cons.rptr();
        let top = SdmaCompletion::Signal { signal: u64::MAX - 4, value: 0, mailbox: None };
        assert_eq!(
            q.copy(0x9000_0000, 0x1000_0000, 4096, top, || unreachable!()).unwrap_err(),
            QueueError::Sdma(SdmaError::AddressOverflow)
        );
        assert_eq!(doorbell.doorbell_count(), 1, "nothing was submitted");
        assert!(cons.pop().is_none());
        assert_eq!(cons.rptr(), wptr);
        // The next copy still gets the next number.
        let t = q.copy(0x9000_0000, 0x1000_0000, 8, SdmaCompletion::Fence, || {}).unwrap();
        assert_eq!((t, doorbell.doorbell_count()), (SdmaTicket(2), 2));
    }

    /// Waits before a copy share its first submission when they fit (one doorbell for the
    /// polls, the copy and its completion); as many waits as a batch holds go on their own,
    /// ahead of the copy, and the engine still sees them first.
    #[test]
    fn waits_go_into_the_copys_first_submission() {
        use crate::queue::sdma::PollFunc;
        let poll = |addr| SdmaPacket::PollRegMem {
            addr,
            reference: 0,
            mask: u32::MAX,
            func: PollFunc::Equal,
            interval: 10,
            retry_count: 0xFFF,
        };
        let drain = |cons: &SdmaConsumer<TestMem>| {
            let mut seen = Vec::new();
            while let Some(p) = cons.pop() {
                seen.push(p.unwrap());
            }
            seen
        };
        let (mut q, cons, _, doorbell) = queue(4096);
        let waits = [poll(0x7000), poll(0x7100)];
        q.copy_after(waits, 0x9000_0000, 0x1000_0000, 64, SdmaCompletion::Fence, || {}).unwrap();
        assert_eq!(doorbell.doorbell_count(), 1);
        let seen = drain(&cons);
        assert_eq!(&seen[..2], &waits);
        assert_eq!(
            seen[2],
            SdmaPacket::CopyLinear { src: 0x1000_0000, dst: 0x9000_0000, bytes: 64 }
        );
        assert_eq!(seen.len(), 4, "{seen:?}");
        // A 1 KiB ring takes 9 packets per batch: 9 waits are submitted before the copy.
        let (mut q, cons, _, doorbell) = queue(1024);
        let many: Vec<_> = (0..9).map(|i| poll(0x7000 + i * 8)).collect();
        q.copy_after(
            many.iter().copied(),
            0x9000_0000,
            0x1000_0000,
            64,
            SdmaCompletion::Fence,
            || {
                drain(&cons);
            },
        )
        .unwrap();
        assert_eq!(doorbell.doorbell_count(), 2);
        // An invalid wait is refused before anything is written.
        let bad = SdmaPacket::PollRegMem {
            addr: 0x7001,
            reference: 0,
            mask: u32::MAX,
            func: PollFunc::Equal,
            interval: 10,
            retry_count: 0xFFF,
        };
        assert!(
            q.copy_after([bad], 0x9000_0000, 0x1000_0000, 64, SdmaCompletion::Fence, || {})
                .is_err()
        );
        assert_eq!(doorbell.doorbell_count(), 2);
    }

    /// A large copy on a small ring is split into maximum-size packets, submitted as the
    /// (simulated) engine drains the ring, and followed by the completion packets.
    #[test]
    fn large_copy_splits_and_completes() {
        let (mut q, cons, pointers, _) = queue(1024);
        let bytes = 64 * (1u64 << 22) + 5;
        let mut seen = Vec::new();
        let t = q
            .copy(
                0x9000_0000,
                0x1000_0000,
                bytes,
                SdmaCompletion::Signal {
                    signal: 0x5000,
                    value: -2,
                    mailbox: Some(Mailbox { address: 0x6000, event_id: 9 }),
                },
                || {
                    while let Some(p) = cons.pop() {
                        seen.push(p.unwrap());
                    }
                },
            )
            .unwrap();
        assert_eq!(t, SdmaTicket(1));
        while let Some(p) = cons.pop() {
            seen.push(p.unwrap());
        }
        let copies: Vec<_> = seen
            .iter()
            .filter_map(|p| match p {
                SdmaPacket::CopyLinear { src, dst, bytes } => Some((*src, *dst, *bytes)),
                _ => None,
            })
            .collect();
        assert_eq!(copies.len(), 65);
        assert!(copies.iter().all(|c| c.1 - c.0 == 0x8000_0000));
        assert_eq!(copies.iter().map(|c| u64::from(c.2)).sum::<u64>(), bytes);
        assert_eq!(copies.last().unwrap().2, 5);
        let tail: Vec<_> =
            seen.iter().filter(|p| !matches!(p, SdmaPacket::CopyLinear { .. })).collect();
        let tail: Vec<_> =
            tail.into_iter().filter(|p| !matches!(p, SdmaPacket::Nop { .. })).collect();
        assert_eq!(
            tail,
            [
                &SdmaPacket::Fence { addr: 0x500C, data: u32::MAX, mtype: 0 },
                &SdmaPacket::Fence { addr: 0x5008, data: (-2i64) as u32, mtype: 0 },
                &SdmaPacket::Fence { addr: 0x6000, data: 9, mtype: 0 },
                &SdmaPacket::Trap { int_ctx: 9 },
                &SdmaPacket::Fence { addr: pointers.addr() + 256, data: 1, mtype: 0 },
            ]
        );
        assert!(!q.is_complete(t));
        pointers.u32s()[64].store(1, Ordering::Release);
        assert!(q.is_complete(t));
        q.wait(t, || unreachable!());
        assert_eq!(
            q.copy(0, 0, 0, SdmaCompletion::Fence, || {}).unwrap_err(),
            QueueError::Sdma(SdmaError::InvalidSize)
        );
        let t2 = q.fill(0x1000, 7, 8, SdmaCompletion::Fence, || {}).unwrap();
        assert_eq!(t2, SdmaTicket(2));
        assert!(!q.is_complete(t2));
        assert!(matches!(
            q.fill(0x1001, 7, 8, SdmaCompletion::Fence, || {}),
            Err(QueueError::Sdma(SdmaError::Misaligned))
        ));
    }
}
