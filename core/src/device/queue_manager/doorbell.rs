//! Doorbell pages: mapped once per node, at the first queue created on it (libhsakmt's
//! `map_doorbell`), and kept until the device closes.
//!
//! `CREATE_QUEUE` returns `doorbell_offset`; [`doorbell_location`] splits it into the `/dev/kfd`
//! mmap offset of the process's doorbell page on that GPU and the queue's byte offset inside it.
//! Every queue of one node shares the page, so the first creation maps it and later ones reuse
//! the mapping. On dGPU systems the page is a doorbell buffer of the memory manager
//! ([`Kfd::alloc_doorbell`](crate::device::Kfd::alloc_doorbell)), mapped for the CPU at that
//! offset and on the GPU; otherwise a plain mapping of `/dev/kfd`.

use crate::device::{Allocation, Error as DeviceError, Kfd, MapNodes, MemoryStorage};
use crate::error::Errno;
use crate::platform::{Access, Platform};
use crate::queue::params::doorbell_page_size;
use crate::topology::DEFAULT_NODES;

use super::QueueError;
use super::create::NodeFacts;

/// How a doorbell page is mapped.
#[derive(Debug)]
pub(crate) enum DoorbellMapping<M> {
    /// A doorbell buffer of the memory manager (its CPU view).
    Buffer(Allocation<M>),
    /// A plain mapping of `/dev/kfd`.
    Plain(M),
}

impl<M> DoorbellMapping<M> {
    /// The CPU view.
    pub(crate) fn view(&self) -> Option<&M> {
        match self {
            Self::Buffer(a) => a.mapping.as_ref(),
            Self::Plain(m) => Some(m),
        }
    }
}

/// One node's doorbell page.
#[derive(Debug)]
pub(crate) struct DoorbellPage<M> {
    /// The mmap offset the page was mapped at (carries the gpu_id).
    pub(crate) mmap_offset: u64,
    /// The mapping.
    pub(crate) mapping: DoorbellMapping<M>,
}

/// Doorbell pages by node index.
pub(crate) struct DoorbellPages<M> {
    pages: [Option<DoorbellPage<M>>; DEFAULT_NODES],
}

impl<M: Clone> DoorbellPages<M> {
    pub(crate) const fn new() -> Self {
        DoorbellPages { pages: [const { None }; DEFAULT_NODES] }
    }

    /// The page of node `index` if mapped at `mmap_offset`.
    pub(crate) fn get(&self, index: usize, mmap_offset: u64) -> Option<&DoorbellPage<M>> {
        self.pages.get(index)?.as_ref().filter(|p| p.mmap_offset == mmap_offset)
    }

    /// Records a page for node `index` and returns its view. When another thread recorded the
    /// same page first, that page is kept and `page` handed back (second value); a page of an
    /// older offset is replaced and handed back. `(None, Some(page))` for an index out of
    /// range.
    pub(crate) fn insert(
        &mut self,
        index: usize,
        page: DoorbellPage<M>,
    ) -> (Option<M>, Option<DoorbellMapping<M>>) {
        let Some(slot) = self.pages.get_mut(index) else { return (None, Some(page.mapping)) };
        match slot {
            Some(p) if p.mmap_offset == page.mmap_offset => {
                (p.mapping.view().cloned(), Some(page.mapping))
            }
            _ => {
                let view = page.mapping.view().cloned();
                let old = slot.replace(page).map(|p| p.mapping);
                (view, old)
            }
        }
    }

    /// Takes every page out.
    pub(crate) fn take_all(&mut self) -> [Option<DoorbellPage<M>>; DEFAULT_NODES] {
        core::mem::replace(&mut self.pages, [const { None }; DEFAULT_NODES])
    }
}

pub(crate) use crate::queue::params::doorbell_location;

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// The node's doorbell page, mapped at the first queue on it: a doorbell buffer mapped for
    /// the CPU at the page's mmap offset and on the GPU (libhsakmt's dGPU path), or — when the
    /// memory manager has no aperture for it — a plain mapping of `/dev/kfd` (the APU path).
    pub(super) fn doorbell_page(
        &self,
        f: &NodeFacts,
        mmap_offset: u64,
    ) -> Result<P::Mapping, QueueError> {
        let fail = |error| QueueError::Memory { what: "doorbell page", error };
        if let Some(p) = self.queues().lock().doorbells.get(f.index, mmap_offset) {
            return p.mapping.view().cloned().ok_or(fail(DeviceError::Platform(Errno::EFAULT)));
        }
        let size = doorbell_page_size(f.gfx());
        let mapping = match self.alloc_doorbell(f.node, size, mmap_offset) {
            Ok(a) => {
                if let Err(e) = self.map_memory_to_gpu(a.addr, MapNodes::Only(&[f.node])) {
                    let _ = self.free(a);
                    return Err(fail(e));
                }
                DoorbellMapping::Buffer(a)
            }
            Err(DeviceError::Memory(crate::memory::Error::NotSupported)) => {
                let m = self
                    .platform()
                    .map_kfd(mmap_offset, size, None, Access::ReadWrite)
                    .map_err(|e| fail(DeviceError::Platform(e)))?;
                DoorbellMapping::Plain(m)
            }
            Err(e) => return Err(fail(e)),
        };
        let page = DoorbellPage { mmap_offset, mapping };
        let (view, lost) = self.queues().lock().doorbells.insert(f.index, page);
        if let Some(DoorbellMapping::Buffer(a)) = lost {
            // Another thread mapped the page first (or an old one was left): free ours.
            let _ = self.free(a);
        }
        view.ok_or(QueueError::IncompleteNode { node: f.node, what: "node index" })
    }
}
