//! The per-queue buffers the library allocates itself — the ring (when asked to), the page
//! holding the read and write pointers, the EOP buffer and the context-save area — and the one
//! place that obtains and returns their memory.
//!
//! The buffers are host memory reserved and backed through the platform (`reserve_va` +
//! `map_anonymous`), GPU VA == CPU VA, page-granular. This seam is deliberately narrow (allocate
//! `bytes` with a placement, free) so that it can sit on the memory API's allocate / map / free
//! without touching the queue logic.
//!
//! What the kernel demands of these buffers (`kfd_queue_acquire_buffers`): each must be a GPU
//! mapping that starts exactly at the address passed, and — except for rings smaller than a
//! page — whose size is exactly what the queue says (EOP: the node's EOP size; context-save
//! area: `(ctx_save_restore_size + debug_memory_size) × num_xcc` rounded up to a page;
//! pointers: one page). Every buffer here is a mapping of its own, sized so.

use crate::device::Kfd;
use crate::error::Errno;
use crate::platform::{Platform, SharedMemory};
use crate::queue::params::PAGE_SIZE;

use super::QueueError;

/// Where a buffer should live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Device-local memory (EOP buffers).
    Vram,
    /// System memory the GPU reaches (rings, pointers, context-save areas).
    System,
}

/// A buffer the library allocated for a queue.
#[derive(Debug)]
pub(crate) struct QueueBuffer<M> {
    /// GPU (== CPU) virtual address.
    pub(crate) addr: u64,
    /// Size in bytes (a whole number of pages).
    pub(crate) size: u64,
    /// The CPU mapping.
    pub(crate) mapping: M,
}

impl<M: SharedMemory> QueueBuffer<M> {
    /// Whether someone outside the queue table holds a view of the buffer.
    pub(crate) fn is_shared(&self) -> bool {
        self.mapping.is_shared()
    }
}

/// Rounds up to whole pages (saturating; a request that large fails to allocate anyway).
pub(crate) const fn page_round(bytes: u64) -> u64 {
    match bytes.checked_add(PAGE_SIZE - 1) {
        Some(v) => v & !(PAGE_SIZE - 1),
        None => !(PAGE_SIZE - 1),
    }
}

impl<P: Platform> Kfd<P> {
    /// Allocates a zeroed, page-rounded buffer of `bytes` for a queue on GPU `_gpu_id`.
    ///
    /// # Errors
    /// [`QueueError::Memory`] naming `what`, with the platform's errno. Nothing stays allocated.
    pub(crate) fn queue_buffer_alloc(
        &self,
        _gpu_id: u32,
        bytes: u64,
        _placement: Placement,
        what: &'static str,
    ) -> Result<QueueBuffer<P::Mapping>, QueueError> {
        let size = page_round(bytes.max(1));
        let platform = self.platform();
        let addr = platform
            .reserve_va(None, size, PAGE_SIZE)
            .map_err(|errno| QueueError::Memory { what, errno })?;
        match platform.map_anonymous(addr, size) {
            Ok(mapping) => Ok(QueueBuffer { addr, size, mapping }),
            Err(errno) => {
                let _ = platform.release_va(addr, size);
                Err(QueueError::Memory { what, errno })
            }
        }
    }

    /// Returns a buffer. Fails (handing the buffer back) while a view of it is alive.
    pub(crate) fn queue_buffer_free(
        &self,
        buf: QueueBuffer<P::Mapping>,
    ) -> Result<(), (QueueBuffer<P::Mapping>, Errno)> {
        if buf.is_shared() {
            return Err((buf, Errno::EBUSY));
        }
        let (addr, size) = (buf.addr, buf.size);
        drop(buf.mapping);
        let _ = self.platform().release_va(addr, size);
        Ok(())
    }
}
