//! Doorbell pages: mapped once per node, at the first queue created on it (libhsakmt's
//! `map_doorbell`), and kept until the device closes.
//!
//! `CREATE_QUEUE` returns `doorbell_offset`; [`doorbell_location`] splits it into the `/dev/kfd`
//! mmap offset of the process's doorbell page on that GPU and the queue's byte offset inside it.
//! Every queue of one node shares the page, so the first creation maps it and later ones reuse
//! the mapping. (libhsakmt maps dGPU doorbells as a doorbell BO through the memory manager so the
//! GPU itself can ring them; the CPU path here is its APU / fallback path, a plain mmap of
//! `/dev/kfd`.)

use crate::topology::DEFAULT_NODES;

/// One node's doorbell page.
#[derive(Debug, Clone)]
pub(crate) struct DoorbellPage<M> {
    /// The mmap offset the page was mapped at (carries the gpu_id).
    pub(crate) mmap_offset: u64,
    /// The mapping.
    pub(crate) mapping: M,
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

    /// Records a new mapping for node `index`. When another thread won the race the existing
    /// page is kept and returned, and the caller's mapping is dropped.
    pub(crate) fn insert(&mut self, index: usize, page: DoorbellPage<M>) -> Option<M> {
        let slot = self.pages.get_mut(index)?;
        match slot {
            Some(p) if p.mmap_offset == page.mmap_offset => Some(p.mapping.clone()),
            _ => {
                let m = page.mapping.clone();
                *slot = Some(page);
                Some(m)
            }
        }
    }

    /// Forgets every page (the mappings go away when their last clone does).
    pub(crate) fn clear(&mut self) {
        for p in &mut self.pages {
            *p = None;
        }
    }
}

pub(crate) use crate::queue::params::doorbell_location;
