//! Scratch memory mapped in slices (libhsakmt `_fmm_map_to_gpu_scratch`,
//! `_fmm_unmap_from_gpu_scratch`, `fmm_release_scratch`).
//!
//! A scratch allocation is an address range of its GPU. Mapping any page-aligned part of it
//! (`hsaKmtMapMemoryToGPU(addr, size)` with `addr` inside the range; size 0 means "to the end
//! of the range") creates a VRAM buffer of that slice's own at `addr` and maps it on the
//! scratch GPU; unmapping names a slice by its start and unmaps and frees its buffer; freeing
//! the range first removes every slice left. Slices never overlap; mapping the same slice again
//! answers its address. The slices are recorded in
//! [`ScratchSlices`](crate::memory::scratch_slices::ScratchSlices); the scratch object's
//! mapped-node set and mapping count say whether (and how many) slices are mapped.

use crate::memory::objects::{MemoryHandle, MemoryKind};
use crate::memory::scratch_slices::{ScratchSlice, SliceId};
use crate::memory::{self, NodeSet, PAGE_SIZE};
use crate::platform::{Ioctl, Platform};
use crate::uapi::kfd_ioctl_free_memory_of_gpu_args;

use super::state::{MemoryState, MemoryStorage};
use super::{Error, Kfd};

/// A slice to create: where, and on which GPU.
pub(super) struct SliceMap {
    pub(super) id: SliceId,
    pub(super) start: u64,
    pub(super) size: u64,
    pub(super) gpu_id: u32,
    pub(super) node: u32,
}

/// A slice to remove, taken by [`MemoryState::begin_slice_unmap`].
pub(super) struct SliceUnmap {
    id: SliceId,
    slice: ScratchSlice,
    gpu_id: u32,
}

impl<M, S: MemoryStorage<M>> MemoryState<M, S> {
    /// The scratch range holding `addr` (libhsakmt's `fmm_is_scratch_aperture`).
    pub(super) fn scratch_containing(&self, addr: u64) -> Option<MemoryHandle> {
        let h = self.objects.find_containing(addr)?;
        (self.objects.get(h).ok()?.kind == MemoryKind::Scratch).then_some(h)
    }

    /// The scratch range a map or unmap of `addr` is about, given the object `named` by that
    /// address (a scratch range is named by any address inside it).
    pub(super) fn scratch_named(
        &self,
        named: Option<MemoryHandle>,
        addr: u64,
    ) -> Option<MemoryHandle> {
        match named {
            Some(h) => {
                self.objects.get(h).is_ok_and(|o| o.kind == MemoryKind::Scratch).then_some(h)
            }
            None => self.scratch_containing(addr),
        }
    }

    /// Plans mapping the slice `[addr, addr + size)` of the scratch range `h`: `Ok(None)` when
    /// that very slice is mapped already, else the slice to create (now busy).
    pub(super) fn plan_slice_map(
        &mut self,
        h: MemoryHandle,
        addr: u64,
        size: u64,
    ) -> Result<Option<SliceMap>, memory::Error> {
        let o = self.objects.get(h)?;
        if o.payload.busy {
            return Err(memory::Error::Busy { addr: o.start() });
        }
        if !addr.is_multiple_of(PAGE_SIZE) {
            return Err(memory::Error::Misaligned { value: addr });
        }
        let end = match size {
            0 => o.end(),
            _ => addr
                .checked_add(size)
                .and_then(|e| e.checked_next_multiple_of(PAGE_SIZE))
                .ok_or(memory::Error::SizeOverflow)?,
        };
        if end > o.end() {
            return Err(memory::Error::OutsideRange { addr: end.saturating_sub(1) });
        }
        let (node, gpu_id) = (o.node, o.payload.gpu_id);
        if self.scratch_slices.find(addr).is_some_and(|s| s.end() == end && s.is_mapped()) {
            return Ok(None);
        }
        let size = end.saturating_sub(addr);
        let id = self.scratch_slices.begin_map(node, addr, size)?;
        Ok(Some(SliceMap { id, start: addr, size, gpu_id, node }))
    }

    /// Starts unmapping the slice starting at `addr` of the scratch range `h`. `Ok(None)` when
    /// `addr` is the range's start and no slice of it is mapped (unmapping memory that is not
    /// mapped succeeds).
    fn begin_slice_unmap(
        &mut self,
        h: MemoryHandle,
        addr: u64,
    ) -> Result<Option<SliceUnmap>, memory::Error> {
        let o = self.objects.get(h)?;
        if o.payload.busy {
            return Err(memory::Error::Busy { addr: o.start() });
        }
        let (start, node) = (o.start(), o.node);
        let gpu_id = o.payload.gpu_id;
        match self.scratch_slices.begin_unmap(addr) {
            Ok((id, slice)) => Ok(Some(SliceUnmap { id, slice, gpu_id })),
            Err(memory::Error::UnknownAddress { .. })
                if addr == start && self.scratch_slices.count(node) == 0 =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Records on the scratch object of `node`'s range whether (and how many) slices it has.
    pub(super) fn note_slices(&mut self, h: MemoryHandle, node: u32) {
        let count = self.scratch_slices.count(node);
        if let Ok(o) = self.objects.get_mut(h) {
            o.mapped_nodes =
                if count == 0 { NodeSet::EMPTY } else { NodeSet::single(node).unwrap_or_default() };
            o.mapping_count = count;
        }
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// Creates the buffer of a planned slice and records the outcome; returns its address.
    pub(super) fn map_slice(&self, h: MemoryHandle, plan: SliceMap) -> Result<u64, Error> {
        let result = self.map_scratch(plan.start, plan.size, plan.gpu_id);
        let mut st = self.memory.lock();
        st.scratch_slices.finish_map(plan.id, result.as_ref().ok().copied());
        st.note_slices(h, plan.node);
        result.map(|_| plan.start)
    }

    /// Unmaps the slice starting at `addr` of the scratch range `h` (see the module docs).
    pub(super) fn unmap_slice(&self, h: MemoryHandle, addr: u64) -> Result<(), Error> {
        let Some(taken) = self.memory.lock().begin_slice_unmap(h, addr)? else {
            return Ok(());
        };
        self.remove_slice(h, taken)
    }

    /// Unmaps and frees every slice of the scratch range `h` (nothing for other memory),
    /// before the range itself is freed.
    pub(super) fn remove_slices(&self, h: MemoryHandle) -> Result<(), Error> {
        loop {
            let taken = {
                let mut st = self.memory.lock();
                let Ok(o) = st.objects.get(h) else { return Ok(()) };
                if o.kind != MemoryKind::Scratch {
                    return Ok(());
                }
                let (node, gpu_id) = (o.node, o.payload.gpu_id);
                match st.scratch_slices.begin_unmap_any(node) {
                    Some((id, slice)) => SliceUnmap { id, slice, gpu_id },
                    None => return Ok(()),
                }
            };
            self.remove_slice(h, taken)?;
        }
    }

    /// Unmaps and frees one slice's buffer and records the outcome: a slice the kernel did not
    /// unmap stays mapped; one it unmapped is gone even when the free then fails (its buffer
    /// then stays with the kernel until the process closes it, and the error is returned).
    fn remove_slice(&self, h: MemoryHandle, taken: SliceUnmap) -> Result<(), Error> {
        let SliceUnmap { id, slice, gpu_id } = taken;
        let unmapped = self.kfd_unmap(slice.handle, &[gpu_id]).map_err(|(e, _)| e);
        let gone = unmapped.is_ok();
        let result = unmapped.and_then(|()| {
            let mut args = kfd_ioctl_free_memory_of_gpu_args { handle: slice.handle };
            self.raw_ioctl(&mut Ioctl::FreeMemoryOfGpu(&mut args))
        });
        let mut st = self.memory.lock();
        st.scratch_slices.finish_unmap(id, gone);
        st.note_slices(h, slice.node);
        result
    }
}
