//! Doorbell pages: mapped once per node, at the first queue created on it (libhsakmt's
//! `map_doorbell`), and kept until the device closes.
//!
//! `CREATE_QUEUE` returns `doorbell_offset`; [`doorbell_location`] splits it into the `/dev/kfd`
//! mmap offset of the process's doorbell page on that GPU and the queue's byte offset inside it.
//! Every queue of one node shares the page, so the first creation maps it and later ones reuse
//! the mapping. On dGPU systems the page is a doorbell buffer of the memory manager
//! ([`Kfd::alloc_doorbell`](crate::device::Kfd::alloc_doorbell)), mapped for the CPU at that
//! offset and on the GPU; otherwise a plain mapping of `/dev/kfd`.

use crate::device::Allocation;
use crate::topology::DEFAULT_NODES;

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
