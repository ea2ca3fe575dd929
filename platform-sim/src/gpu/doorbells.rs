//! A GPU's doorbell page: rings routed to the queues, and plain stores found by polling.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError, RwLock};

use hsakmt_core::platform::SharedMemory;
use hsakmt_hostmem::HostMapping;

use super::SimQueue;
use crate::mapping::DoorbellSink;

/// Routes one GPU's doorbell page to its queues.
pub(crate) struct Doorbells {
    size: u64,
    slots: RwLock<Vec<Option<Arc<SimQueue>>>>,
    /// The process's doorbell page as last mapped: where plain doorbell stores land.
    page: RwLock<Option<HostMapping>>,
}

impl fmt::Debug for Doorbells {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Doorbells").field("size", &self.size).finish_non_exhaustive()
    }
}

impl Doorbells {
    pub(crate) fn new(size: u64) -> Self {
        Doorbells { size, slots: RwLock::new(vec![None; 1024]), page: RwLock::new(None) }
    }

    /// The doorbell page the process mapped (`kfd_doorbell_mmap`).
    pub(crate) fn set_page(&self, page: HostMapping) {
        *self.page.write().unwrap_or_else(PoisonError::into_inner) = Some(page);
    }

    /// Forgets the process's doorbell page (its device closed): the page is a view of the
    /// process's address space, which the process releases after the close, so no view of it
    /// may outlive the close.
    pub(crate) fn clear_page(&self) {
        *self.page.write().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Forgets the doorbell page if it is the one mapped at `addr` (its buffer was freed).
    pub(crate) fn forget_page_at(&self, addr: u64) {
        let mut page = self.page.write().unwrap_or_else(PoisonError::into_inner);
        if page.as_ref().is_some_and(|p| p.addr() == addr) {
            *page = None;
        }
    }

    /// Whether a doorbell page of the process is watched.
    pub(crate) fn has_page(&self) -> bool {
        self.page.read().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    /// What doorbell `index` of the mapped page holds (`None` before the page is mapped).
    pub(super) fn stored(&self, index: u32) -> Option<u64> {
        let page = self.page.read().unwrap_or_else(PoisonError::into_inner);
        let page = page.as_ref()?;
        let i = index as usize;
        match self.size {
            8 => page.u64s().get(i).map(|w| w.load(Ordering::Acquire)),
            _ => page.u32s().get(i).map(|w| u64::from(w.load(Ordering::Acquire))),
        }
    }

    pub(crate) fn set(&self, index: u32, q: Option<Arc<SimQueue>>) {
        let mut s = self.slots.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = s.get_mut(index as usize) {
            *slot = q;
        }
    }
}

impl DoorbellSink for Doorbells {
    fn rung(&self, offset: usize, value: u64) {
        let index = offset as u64 / self.size;
        let s = self.slots.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(Some(q)) = s.get(index as usize) {
            q.ring(value);
        }
    }
}
