//! Freeing (`hsaKmtFreeMemory`, libhsakmt `hsakmt_fmm_release`): the release decided under the
//! lock, the unmapping and the kernel's free outside it, and the outcome — the object forgotten,
//! or retired into the recycle cache, possibly recorded by the next thread to take the lock (see
//! `pending`); and giving the recycle cache's allocations back ([`Kfd::trim_memory`]).

use crate::device::{Allocation, Error, Kfd};
use crate::memory::objects::{KfdHandles, MemoryHandle, MemoryKind, RetiredObject};
use crate::memory::recycle::BinTag;
use crate::memory::{self, NodeSet};
use crate::platform::{Ioctl, Platform, SharedMemory};
use crate::uapi::kfd_ioctl_free_memory_of_gpu_args;

use super::pending::Ticket;
use super::state::{self, MemoryState};

/// The object a release names.
#[derive(Debug, Clone, Copy)]
pub(super) enum Target {
    /// The object starting at this address (or user memory registered at it).
    Address(u64),
    /// The object this handle names.
    Handle(MemoryHandle),
}

/// What a release decided under the lock.
enum Release<M> {
    /// One registration of several was dropped; nothing else to do.
    Counted,
    /// A scratch range with mapped slices: remove them first (libhsakmt's
    /// `fmm_release_scratch`), then release again.
    Slices(MemoryHandle),
    /// The object is busy now; unmap `mapped`, free `buffers`, forget it.
    Destroy { handle: MemoryHandle, buffers: KfdHandles, mapped: NodeSet },
    /// As `Destroy`, but the object's CPU view (`view`) was taken out and the free is pending:
    /// unmap, free the buffers, drop the view and signal completion (see
    /// [`pending::MemoryLock`]).
    Pending {
        handle: MemoryHandle,
        free: Ticket,
        buffers: KfdHandles,
        mapped: NodeSet,
        view: Option<M>,
    },
}

/// Whether freed allocations of this kind may wait in the recycle cache: memory from
/// [`Kfd::alloc_memory`] that belongs to no other table (scratch backing is also a node's).
pub(super) const fn recyclable(kind: MemoryKind) -> bool {
    matches!(
        kind,
        MemoryKind::Vram
            | MemoryKind::HostGtt
            | MemoryKind::HostUserptr
            | MemoryKind::ReservedAddress
    )
}

/// What [`MemoryState::retire_freed`] did with a freed object.
enum Retired<M> {
    /// It waits in the recycle cache.
    Cached,
    /// It is retired and claimed; drop its CPU view (outside the lock), then cache it.
    DropView(M, BinTag, RetiredObject),
    /// It cannot be cached: remove it.
    No,
}

impl<M, S: state::MemoryStorage<M>> MemoryState<M, S> {
    /// Retires an object whose buffers are freed into the recycle cache, if its shape's bin
    /// can take it (its handle becomes stale and every lookup misses it at once).
    fn retire_freed(&mut self, handle: MemoryHandle) -> Retired<M> {
        let Ok(o) = self.objects.get(handle) else { return Retired::No };
        let Some(tag) = o.payload.recycle else { return Retired::No };
        if o.payload.va.is_none() || !self.recycle.can_put(tag) {
            return Retired::No;
        }
        let Ok(r) = self.objects.retire(handle) else { return Retired::No };
        match self.objects.retired_mut(r).ok().and_then(|o| o.payload.mapping.take()) {
            None => {
                self.recycle_or_discard(Some(tag), r);
                Retired::Cached
            }
            Some(view) => {
                self.claimed = self.claimed.saturating_add(1);
                Retired::DropView(view, tag, r)
            }
        }
    }
}

impl<M: SharedMemory, S: state::MemoryStorage<M>> MemoryState<M, S> {
    /// Resolves a release's object and decides it in one go (libhsakmt `__fmm_release`):
    /// registered user memory held several times only drops a count; anything else is marked
    /// busy for destruction, unless a caller still holds a CPU view of it.
    #[inline]
    fn begin_release(&mut self, target: Target) -> Result<Release<M>, memory::Error> {
        let handle = match target {
            Target::Handle(h) => h,
            Target::Address(addr) => {
                self.find_named(addr).ok_or(memory::Error::UnknownAddress { addr })?
            }
        };
        let o = self.objects.get_mut(handle)?;
        let addr = o.start();
        if o.payload.busy {
            return Err(memory::Error::Busy { addr });
        }
        if o.kind == MemoryKind::RegisteredUser && o.registration_count > 1 {
            o.drop_registration()?;
            return Ok(Release::Counted);
        }
        if o.payload.mapping.as_ref().is_some_and(SharedMemory::is_shared) {
            return Err(memory::Error::MappingInUse { addr });
        }
        if o.kind == MemoryKind::Scratch && self.scratch_slices.count(o.node) != 0 {
            return Ok(Release::Slices(handle));
        }
        o.payload.busy = true;
        let (buffers, mapped) = (o.kfd_handles, o.mapped_nodes);
        // Allocations the recycle cache may keep complete their free without the lock.
        if o.payload.recycle.is_some()
            && let Some(free) = self.pending_frees.begin(handle)
        {
            let view = o.payload.mapping.take();
            o.payload.view_out = view.is_some();
            return Ok(Release::Pending { handle, free, buffers, mapped, view });
        }
        Ok(Release::Destroy { handle, buffers, mapped })
    }
}

impl<P: Platform, S: state::MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// Frees an allocation (`hsaKmtFreeMemory`), dropping its view first.
    ///
    /// # Errors
    /// As [`Kfd::free_handle`].
    pub fn free(&self, allocation: Allocation<P::Mapping>) -> Result<(), Error> {
        let Allocation { handle, mapping, .. } = allocation;
        drop(mapping);
        self.free_handle(handle)
    }

    /// Frees the memory starting at `addr` (`hsaKmtFreeMemory`; registered user memory is
    /// deregistered). GPU mappings are removed first.
    ///
    /// # Errors
    /// [`memory::Error::UnknownAddress`] when no object starts at `addr` (an interior pointer,
    /// a double free, address 0); [`memory::Error::MappingInUse`] while a caller holds a CPU
    /// view; [`memory::Error::Busy`]; [`Error::Ioctl`] from the unmap or free (`EBUSY` while a
    /// queue uses the memory) — the object then stays, consistent with the kernel;
    /// [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn free_memory(&self, addr: u64) -> Result<(), Error> {
        self.check_open()?;
        self.release(Target::Address(addr))
    }

    /// Frees the object `handle` names (see [`Kfd::free_memory`]).
    ///
    /// # Errors
    /// As [`Kfd::free_memory`], with [`memory::Error::StaleHandle`] /
    /// [`memory::Error::InvalidHandle`] for a handle that names no live object (for instance a
    /// second free).
    pub fn free_handle(&self, handle: MemoryHandle) -> Result<(), Error> {
        self.check_open()?;
        self.release(Target::Handle(handle))
    }

    /// Frees an object, or drops one registration of registered user memory.
    pub(super) fn release(&self, target: Target) -> Result<(), Error> {
        let mut step = self.memory.lock().begin_release(target)?;
        if let Release::Slices(h) = step {
            self.remove_slices(h)?;
            step = self.memory.lock().begin_release(Target::Handle(h))?;
        }
        match step {
            Release::Counted => Ok(()),
            // A slice mapped again meanwhile (by another thread).
            Release::Slices(h) => {
                let addr = self.memory.lock().objects.get(h).map_or(0, |o| o.start());
                Err(memory::Error::Busy { addr }.into())
            }
            Release::Destroy { handle, buffers, mapped } => {
                self.finish_release(handle, buffers, mapped)
            }
            Release::Pending { handle, free, buffers, mapped, view } => {
                self.finish_pending(handle, free, buffers, mapped, view)
            }
        }
    }

    /// Unmaps and frees the buffers of an object with a pending free, then drops its view and
    /// signals completion; on failure cancels the pending free, giving the object its view back
    /// (consistent with the kernel, as [`Kfd::finish_release`]).
    fn finish_pending(
        &self,
        handle: MemoryHandle,
        free: Ticket,
        buffers: KfdHandles,
        mapped: NodeSet,
        view: Option<P::Mapping>,
    ) -> Result<(), Error> {
        if !mapped.is_empty()
            && let Err(e) = self.unmap_object(handle, buffers, mapped)
        {
            self.cancel_pending(free, view, None);
            return Err(e);
        }
        for (i, &h) in buffers.as_slice().iter().enumerate() {
            let mut args = kfd_ioctl_free_memory_of_gpu_args { handle: h };
            if let Err(e) = self.raw_ioctl(&mut Ioctl::FreeMemoryOfGpu(&mut args)) {
                self.cancel_pending(free, view, Some(i));
                return Err(e);
            }
        }
        drop(view);
        self.memory.complete_free(free);
        Ok(())
    }

    /// Withdraws a pending free that failed: the object gets its view back and is no longer
    /// busy; with `freed`, only its buffers from that index on remain.
    fn cancel_pending(&self, free: Ticket, view: Option<P::Mapping>, freed: Option<usize>) {
        let mut st = self.memory.lock();
        let mut view = view;
        if let Some(handle) = st.pending_frees.cancel(free)
            && let Ok(o) = st.objects.get_mut(handle)
        {
            if let Some(i) = freed {
                let mut rest = KfdHandles::EMPTY;
                for &r in o.kfd_handles.as_slice().iter().skip(i) {
                    let _ = rest.push(r);
                }
                o.kfd_handles = rest;
            }
            o.payload.mapping = view.take();
            o.payload.view_out = false;
            o.payload.busy = false;
        }
        drop(st);
        drop(view);
    }

    /// Unmaps (if mapped), frees the buffers of and forgets an object marked busy by
    /// [`MemoryState::begin_release`].
    fn finish_release(
        &self,
        handle: MemoryHandle,
        buffers: KfdHandles,
        mapped: NodeSet,
    ) -> Result<(), Error> {
        if !mapped.is_empty()
            && let Err(e) = self.unmap_object(handle, buffers, mapped)
        {
            self.clear_busy(handle);
            return Err(e);
        }
        for (i, &h) in buffers.as_slice().iter().enumerate() {
            let mut args = kfd_ioctl_free_memory_of_gpu_args { handle: h };
            if let Err(e) = self.raw_ioctl(&mut Ioctl::FreeMemoryOfGpu(&mut args)) {
                // Buffers before `i` are gone: keep only the rest.
                let mut st = self.memory.lock();
                if let Ok(o) = st.objects.get_mut(handle) {
                    let mut rest = KfdHandles::EMPTY;
                    for &r in o.kfd_handles.as_slice().iter().skip(i) {
                        let _ = rest.push(r);
                    }
                    o.kfd_handles = rest;
                    o.payload.busy = false;
                }
                return Err(e);
            }
        }
        let mut st = self.memory.lock();
        match st.retire_freed(handle) {
            Retired::Cached => return Ok(()),
            Retired::DropView(view, tag, r) => {
                // As below: the view goes before the range can be handed out again.
                drop(st);
                drop(view);
                let mut st = self.memory.lock();
                if st.unclaim(r) {
                    st.recycle_or_discard(Some(tag), r);
                }
                return Ok(());
            }
            Retired::No => {}
        }
        let mut obj = st.objects.remove(handle)?;
        if obj.kind == MemoryKind::Scratch
            && let Some(n) = st.nodes.get_mut(obj.node as usize)
        {
            n.scratch_backing = None;
        }
        let mapping = obj.payload.mapping.take();
        let va = obj.payload.va.take();
        if mapping.is_none() {
            st.release_va(va);
            return Ok(());
        }
        // The view must be gone (its range a reservation again) before the address range can
        // be handed out again.
        drop(st);
        drop(mapping);
        drop(obj);
        self.memory.lock().release_va(va);
        Ok(())
    }

    pub(crate) fn clear_busy(&self, handle: MemoryHandle) {
        if let Ok(o) = self.memory.lock().objects.get_mut(handle) {
            o.payload.busy = false;
        }
    }

    /// Releases every freed allocation the recycle cache keeps (their object slots and address
    /// ranges; no system call); returns how many. Allocation does this by itself when it runs
    /// out of address space or slots, and the last close drops the cache.
    ///
    /// # Errors
    /// [`Error::NotOpened`] / [`Error::ForkedChild`].
    pub fn trim_memory(&self) -> Result<u32, Error> {
        self.check_open()?;
        Ok(self.memory.lock().flush_recycled())
    }
}
