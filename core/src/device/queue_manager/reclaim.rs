//! Buffers of destroyed queues that could not be freed when their queue went (the kernel
//! refused, or a caller still held a view): kept by handle and freed at the next queue creation
//! or destruction, or at the last close.

use crate::device::memory_manager::MemoryStorage;
use crate::device::{Error as DeviceError, Kfd};
use crate::memory::objects::MemoryHandle;
use crate::platform::Platform;

use super::{Parts, QueueState};

pub use crate::config::MAX_ORPHANED_BUFFERS;

impl<M: Clone> QueueState<M> {
    /// Keeps a buffer to free later; `false` when there is no room.
    pub(super) fn orphan(&mut self, handle: MemoryHandle) -> bool {
        match self.orphans.iter_mut().find(|o| o.is_none()) {
            Some(slot) => {
                *slot = Some(handle);
                true
            }
            None => false,
        }
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// Frees a queue's buffers; a buffer that cannot be freed now (the kernel refuses, or a
    /// caller holds a view) is kept to be freed by [`Kfd::reclaim_queue_buffers`].
    pub(super) fn free_parts(&self, parts: Parts<P::Mapping>) {
        for b in [parts.ring, parts.pointers, parts.eop, parts.cwsr].into_iter().flatten() {
            let handle = b.handle();
            if self.queue_buffer_free(b).is_err() {
                // Without room it stays with the memory manager until the last close.
                let _ = self.queues().lock().orphan(handle);
            }
        }
    }

    /// Frees the kept buffers of destroyed queues (those the kernel refused to free, or held by
    /// a view, when their queue went); the ones that still cannot be freed stay kept.
    pub(super) fn reclaim_queue_buffers(&self) {
        let orphans = {
            let mut q = self.queues().lock();
            if q.orphans.iter().all(Option::is_none) {
                return;
            }
            core::mem::replace(&mut q.orphans, [None; MAX_ORPHANED_BUFFERS])
        };
        for handle in orphans.into_iter().flatten() {
            match self.free_handle(handle) {
                Ok(())
                | Err(DeviceError::Memory(
                    crate::memory::Error::StaleHandle | crate::memory::Error::InvalidHandle,
                )) => {}
                Err(_) => {
                    let _ = self.queues().lock().orphan(handle);
                }
            }
        }
    }
}
