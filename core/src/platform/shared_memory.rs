//! Safe views of memory shared with the GPU: rings, signals, doorbells and data buffers are
//! written through these, never through raw pointers (core forbids `unsafe`).

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

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

    /// Rings a doorbell: stores `value` into the 64-bit doorbell at byte `offset`, ordered after
    /// every earlier store of this thread (a sequentially consistent store is a locked
    /// instruction on x86, which also drains write-combining buffers). A simulated device
    /// overrides this to wake its command processor.
    fn ring_doorbell64(&self, offset: usize, value: u64) {
        if let Some(w) = self.u64s().get(offset / 8) {
            w.store(value, Ordering::SeqCst);
        }
    }

    /// As [`SharedMemory::ring_doorbell64`] for the 32-bit doorbells of pre-gfx9 parts.
    fn ring_doorbell32(&self, offset: usize, value: u32) {
        if let Some(w) = self.u32s().get(offset / 4) {
            w.store(value, Ordering::SeqCst);
        }
    }

    /// Whether another clone of this mapping is alive.
    fn is_shared(&self) -> bool;
}
