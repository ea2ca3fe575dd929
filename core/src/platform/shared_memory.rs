//! Safe views of memory shared with the GPU: rings, signals, doorbells and data buffers are
//! written through these, never through raw pointers (core forbids `unsafe`).

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};

use crate::error::Errno;

/// How a CPU mapping may be accessed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Access {
    /// Read only.
    Read,
    /// Read and write.
    ReadWrite,
}

/// A CPU mapping of memory the GPU may also access, as the platform created it.
///
/// Clones share one mapping; it goes away (the range returns to a `PROT_NONE` reservation, or
/// is unmapped) when the last clone is dropped. Core keeps one clone per memory object and hands
/// out further clones; it refuses to free memory while [`SharedMemory::is_shared`] says a
/// caller still holds one, so no view ever outlives its memory.
///
/// # Invariants
/// [`SharedMemory::u32s`] and [`SharedMemory::u64s`] cover the whole mapping (`len / 4` and
/// `len / 8` elements) starting at [`SharedMemory::addr`], which is at least 8-byte aligned.
/// A location is accessed with one width only: AQL packet words 0–1 and signal `event_id` as
/// `u32`, everything else as `u64` (mixed-size atomic access to one location is undefined).
pub trait SharedMemory: Clone + Send + Sync {
    /// CPU (and, for GPU memory, GPU) virtual address of the first byte.
    fn addr(&self) -> u64;

    /// Length in bytes.
    fn len(&self) -> usize;

    /// Whether the mapping is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The mapping as 32-bit atomic words.
    fn u32s(&self) -> &[AtomicU32];

    /// The mapping as 64-bit atomic words.
    fn u64s(&self) -> &[AtomicU64];

    /// Copies `src` into the mapping at byte `offset`.
    ///
    /// # Errors
    /// [`Errno::EFAULT`] when the range is outside the mapping.
    fn write(&self, offset: usize, src: &[u8]) -> Result<(), Errno>;

    /// Copies from the mapping at byte `offset` into `dst`.
    ///
    /// # Errors
    /// [`Errno::EFAULT`] when the range is outside the mapping.
    fn read(&self, offset: usize, dst: &mut [u8]) -> Result<(), Errno>;

    /// Rings a doorbell: stores `value` into the 64-bit doorbell at byte `offset` of the
    /// mapping, after every earlier store of this thread.
    ///
    /// A doorbell is only ever written, never read back, and never with a locked
    /// read-modify-write: on a GPU it is uncached MMIO, and a platform over real hardware
    /// overrides this with a release fence and one plain volatile store (`hsakmt-linux`). This
    /// default is for memory that is ordinary memory: a release fence, then a relaxed atomic
    /// store (a plain `mov` on x86_64). A simulated device overrides it to wake its command
    /// processor.
    ///
    /// # Invariants
    /// `offset` is 8-aligned and `offset + 8 <= len()`: every producer checks its doorbell
    /// offset against the mapping when it is built. A miss is a bug of the caller: debug builds
    /// assert, release builds store nothing.
    fn ring_doorbell64(&self, offset: usize, value: u64) {
        let word = self.u64s().get(offset / 8).filter(|_| offset.is_multiple_of(8));
        // PANIC: debug builds only, on a broken invariant of the caller (see `# Invariants`).
        debug_assert!(word.is_some(), "doorbell offset {offset} outside the mapping");
        if let Some(w) = word {
            fence(Ordering::Release);
            w.store(value, Ordering::Relaxed);
        }
    }

    /// As [`SharedMemory::ring_doorbell64`] for a 32-bit doorbell (4-aligned `offset`, `offset +
    /// 4 <= len()`): the doorbells of parts before gfx9 (doorbell type 1).
    fn ring_doorbell32(&self, offset: usize, value: u32) {
        let word = self.u32s().get(offset / 4).filter(|_| offset.is_multiple_of(4));
        // PANIC: debug builds only, on a broken invariant of the caller (see `# Invariants`).
        debug_assert!(word.is_some(), "doorbell offset {offset} outside the mapping");
        if let Some(w) = word {
            fence(Ordering::Release);
            w.store(value, Ordering::Relaxed);
        }
    }

    /// Whether another clone of this mapping is alive.
    fn is_shared(&self) -> bool;
}
