//! The per-queue buffers the library allocates itself — the ring (when asked to), the page
//! holding the read and write pointers, the EOP buffer and the context-save area — through the
//! memory API ([`Kfd::alloc_memory`], [`Kfd::map_memory_to_gpu`], [`Kfd::free`]), as
//! libhsakmt's `hsakmt_allocate_exec_aligned_memory_gpu` does: system memory on the CPU node
//! nearest the GPU (non-paged, host-accessible: a GTT buffer) or CPU-invisible VRAM on the GPU,
//! mapped on the queue's GPU only.
//!
//! What the kernel demands of these buffers (`kfd_queue_acquire_buffers`): each must be a GPU
//! mapping that starts exactly at the address passed, and — except for rings smaller than a
//! page — whose size is exactly what the queue says (EOP: the node's EOP size; context-save
//! area: `(ctx_save_restore_size + debug_memory_size) × num_xcc` rounded up to a page;
//! pointers: one page). Every buffer here is an allocation of its own, sized so.

use crate::device::memory_manager::MemoryStorage;
use crate::device::{Allocation, Error as DeviceError, Kfd, MapNodes};
use crate::memory::MemFlags;
use crate::platform::{Platform, SharedMemory};
use crate::queue::params::PAGE_SIZE;

use super::QueueError;

/// Where a buffer should live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Device-local memory the CPU does not see (EOP buffers).
    Vram,
    /// Non-paged system memory the GPU reaches (rings, context-save areas).
    System,
    /// As [`Placement::System`], uncached (the pointers page the GPU keeps writing).
    SystemUncached,
}

/// A buffer the library allocated for a queue.
#[derive(Debug)]
pub(crate) struct QueueBuffer<M> {
    alloc: Allocation<M>,
}

impl<M: SharedMemory> QueueBuffer<M> {
    /// GPU (== CPU) virtual address.
    pub(crate) fn addr(&self) -> u64 {
        self.alloc.addr
    }

    /// Size in bytes (whole pages).
    pub(crate) fn handle(&self) -> crate::memory::objects::MemoryHandle {
        self.alloc.handle
    }

    pub(crate) fn size(&self) -> u64 {
        self.alloc.size
    }

    /// The CPU view, for host-accessible buffers.
    pub(crate) fn mapping(&self) -> Option<&M> {
        self.alloc.mapping.as_ref()
    }
}

/// Rounds up to whole pages (saturating; a request that large fails to allocate anyway).
pub(crate) const fn page_round(bytes: u64) -> u64 {
    match bytes.checked_add(PAGE_SIZE - 1) {
        Some(v) => v & !(PAGE_SIZE - 1),
        None => !(PAGE_SIZE - 1),
    }
}

impl<P: Platform, S: MemoryStorage<P::Mapping>> Kfd<P, S> {
    /// Allocates a zeroed, page-rounded buffer of `bytes` for a queue on GPU node `node`
    /// (`host` is the CPU node whose memory serves system placements, when the topology names
    /// one) and maps it on that GPU.
    ///
    /// # Errors
    /// [`QueueError::Memory`] naming `what`. Nothing stays allocated.
    pub(crate) fn queue_buffer_alloc(
        &self,
        node: u32,
        host: Option<u32>,
        bytes: u64,
        placement: Placement,
        what: &'static str,
    ) -> Result<QueueBuffer<P::Mapping>, QueueError> {
        let size = page_round(bytes.max(1));
        let host_flags = MemFlags::NON_PAGED | MemFlags::HOST_ACCESS;
        let (owner, flags) = match (placement, host) {
            (Placement::Vram, _) => (node, MemFlags::NON_PAGED | MemFlags::COARSE_GRAIN),
            (Placement::System, Some(cpu)) => (cpu, host_flags),
            (Placement::SystemUncached, Some(cpu)) => (cpu, host_flags | MemFlags::UNCACHED),
            // No CPU node to name: GTT memory through the GPU node.
            (Placement::System, None) => (node, host_flags | MemFlags::GTT_ACCESS),
            (Placement::SystemUncached, None) => {
                (node, host_flags | MemFlags::GTT_ACCESS | MemFlags::UNCACHED)
            }
        };
        let fail = |error: DeviceError| QueueError::Memory { what, error };
        let alloc = self.alloc_memory(owner, size, flags).map_err(fail)?;
        if let Err(e) = self.map_memory_to_gpu(alloc.addr, MapNodes::Only(&[node])) {
            let _ = self.free(alloc);
            return Err(fail(e));
        }
        Ok(QueueBuffer { alloc })
    }

    /// Returns a buffer. Fails (handing the buffer back) while a view of it is held elsewhere
    /// or the memory manager refuses.
    pub(crate) fn queue_buffer_free(
        &self,
        buf: QueueBuffer<P::Mapping>,
    ) -> Result<(), DeviceError> {
        self.free(buf.alloc)
    }
}
