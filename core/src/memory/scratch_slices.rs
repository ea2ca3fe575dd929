//! [`ScratchSlices`]: the mapped slices of scratch backing ranges.
//!
//! A scratch allocation (`hsaKmtAllocMemory` with `Scratch`) only reserves an address range
//! and tells the kernel where it is (`SET_SCRATCH_BACKING_VA`). Memory comes with each
//! `hsaKmtMapMemoryToGPU` of a part of it: libhsakmt (`_fmm_map_to_gpu_scratch`) creates a
//! VRAM buffer of the slice's own at the slice's address and maps it on the scratch GPU, and
//! unmapping the slice (named by its start) unmaps and frees that buffer
//! (`_fmm_unmap_from_gpu_scratch`). A runtime maps slices as its queues need scratch; kfdtest
//! maps and unmaps 64 KiB slices in any order.
//!
//! This table records those slices for every GPU of the process: where each lies, its node
//! and its KFD buffer. Slices never overlap. Mapping and unmapping take two steps around the
//! ioctls, so a slice being created or removed is held by the caller that started it (its
//! [`SliceId`]) and every other operation on it answers [`Error::Busy`].

use crate::config::SCRATCH_SLICE_CAPACITY;

use super::Error;

/// Where a slice is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
enum State {
    /// The slot is unused.
    Free,
    /// Its buffer is being created and mapped.
    Mapping,
    /// Its buffer is mapped on its GPU.
    Mapped,
    /// Its buffer is being unmapped and freed.
    Unmapping,
}

/// One mapped slice of a scratch range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ScratchSlice {
    /// First address (page aligned).
    pub start: u64,
    /// Size in bytes (whole pages).
    pub size: u64,
    /// The GPU node of the scratch range.
    pub node: u32,
    /// The KFD buffer backing the slice (0 while it is being created).
    pub handle: u64,
    state: State,
}

impl ScratchSlice {
    const FREE: Self = Self { start: 0, size: 0, node: 0, handle: 0, state: State::Free };

    /// Exclusive end.
    #[must_use]
    pub const fn end(&self) -> u64 {
        self.start.wrapping_add(self.size)
    }

    /// Whether the buffer is mapped (not being created or removed).
    #[must_use]
    pub const fn is_mapped(&self) -> bool {
        matches!(self.state, State::Mapped)
    }

    const fn overlaps(&self, start: u64, end: u64) -> bool {
        !matches!(self.state, State::Free) && self.start < end && start < self.end()
    }
}

/// A slice being created or removed, held by the caller that started it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[must_use = "a slice being created or removed stays busy until it is finished"]
pub struct SliceId(u32);

/// The mapped slices of every scratch range of a process, up to [`SCRATCH_SLICE_CAPACITY`].
#[derive(Debug, Clone)]
pub struct ScratchSlices {
    slots: [ScratchSlice; SCRATCH_SLICE_CAPACITY],
}

impl Default for ScratchSlices {
    fn default() -> Self {
        Self::new()
    }
}

impl ScratchSlices {
    /// An empty table.
    #[must_use]
    pub const fn new() -> Self {
        Self { slots: [ScratchSlice::FREE; SCRATCH_SLICE_CAPACITY] }
    }

    /// Starts creating the slice `[start, start + size)` of `node`'s scratch range; it is busy
    /// until [`ScratchSlices::finish_map`].
    ///
    /// # Errors
    /// [`Error::ZeroSize`]; [`Error::SizeOverflow`] (the range passes 2^64);
    /// [`Error::AddressInUse`] when it overlaps a slice (mapped or busy);
    /// [`Error::CapacityExhausted`]. The table is then unchanged.
    pub fn begin_map(&mut self, node: u32, start: u64, size: u64) -> Result<SliceId, Error> {
        if size == 0 {
            return Err(Error::ZeroSize);
        }
        let end = start.checked_add(size).ok_or(Error::SizeOverflow)?;
        if self.slots.iter().any(|s| s.overlaps(start, end)) {
            return Err(Error::AddressInUse { addr: start });
        }
        let (i, slot) = self
            .slots
            .iter_mut()
            .enumerate()
            .find(|(_, s)| s.state == State::Free)
            .ok_or(Error::CapacityExhausted { capacity: SCRATCH_SLICE_CAPACITY as u32 })?;
        *slot = ScratchSlice { start, size, node, handle: 0, state: State::Mapping };
        Ok(SliceId(i as u32))
    }

    /// Ends a [`ScratchSlices::begin_map`]: with the buffer the kernel created and mapped, the
    /// slice is mapped; with `None` (the kernel refused), it is forgotten.
    pub fn finish_map(&mut self, id: SliceId, handle: Option<u64>) {
        if let Some(s) = self.slots.get_mut(id.0 as usize)
            && s.state == State::Mapping
        {
            *s = match handle {
                Some(handle) => ScratchSlice { handle, state: State::Mapped, ..*s },
                None => ScratchSlice::FREE,
            };
        }
    }

    /// The slice starting at `start` (mapped or busy).
    #[must_use]
    pub fn find(&self, start: u64) -> Option<&ScratchSlice> {
        self.slots.iter().find(|s| s.state != State::Free && s.start == start)
    }

    /// Starts removing the mapped slice starting at `start`: it is busy until
    /// [`ScratchSlices::finish_unmap`]. Returns what the caller unmaps and frees.
    ///
    /// # Errors
    /// [`Error::UnknownAddress`] when no slice starts there; [`Error::Busy`] while it is being
    /// created or removed. The table is then unchanged.
    pub fn begin_unmap(&mut self, start: u64) -> Result<(SliceId, ScratchSlice), Error> {
        let (i, s) = self
            .slots
            .iter_mut()
            .enumerate()
            .find(|(_, s)| s.state != State::Free && s.start == start)
            .ok_or(Error::UnknownAddress { addr: start })?;
        if s.state != State::Mapped {
            return Err(Error::Busy { addr: start });
        }
        s.state = State::Unmapping;
        Ok((SliceId(i as u32), *s))
    }

    /// As [`ScratchSlices::begin_unmap`], for any mapped slice of `node` (none: `None`).
    pub fn begin_unmap_any(&mut self, node: u32) -> Option<(SliceId, ScratchSlice)> {
        let (i, s) = self
            .slots
            .iter_mut()
            .enumerate()
            .find(|(_, s)| s.state == State::Mapped && s.node == node)?;
        s.state = State::Unmapping;
        Some((SliceId(i as u32), *s))
    }

    /// Ends a removal: `gone` (the kernel unmapped the buffer) forgets the slice, otherwise it
    /// is mapped again, as the kernel still has it.
    pub fn finish_unmap(&mut self, id: SliceId, gone: bool) {
        if let Some(s) = self.slots.get_mut(id.0 as usize)
            && s.state == State::Unmapping
        {
            if gone {
                *s = ScratchSlice::FREE;
            } else {
                s.state = State::Mapped;
            }
        }
    }

    /// How many slices `node` has (mapped or busy).
    #[must_use]
    pub fn count(&self, node: u32) -> u32 {
        self.slots.iter().filter(|s| s.state != State::Free && s.node == node).count() as u32
    }

    /// The slices (mapped or busy), in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &ScratchSlice> + '_ {
        self.slots.iter().filter(|s| s.state != State::Free)
    }

    /// Forgets every slice (the process's kernel state is gone).
    pub fn clear(&mut self) {
        self.slots = [ScratchSlice::FREE; SCRATCH_SLICE_CAPACITY];
    }
}

#[cfg(test)]
mod tests;
