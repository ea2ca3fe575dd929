//! What the debugger reads back: raised events, per-queue results of suspend and resume, and
//! the typed view of queue and device snapshots.

use super::exception::ExceptionMask;
use crate::uapi::*;

/// One raised exception set found by `QUERY_DEBUG_EVENT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DebugEvent {
    /// The raised exceptions of the source (all of them, not only the subscribed ones).
    pub exceptions: ExceptionMask,
    /// Where they are raised.
    pub source: EventSource,
}

/// The source of a [`DebugEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum EventSource {
    /// A queue (kernel queue id) of the GPU `gpu_id`.
    Queue {
        /// Kernel queue id.
        queue_id: u32,
        /// Its GPU.
        gpu_id: u32,
    },
    /// A device.
    Device {
        /// The GPU.
        gpu_id: u32,
    },
    /// The process.
    Process,
}

impl DebugEvent {
    /// From `QUERY_DEBUG_EVENT`'s output. The kernel reports a queue's status (queue
    /// exceptions only) with its id and GPU, a device's (device exceptions only) with its GPU,
    /// the process's with neither; queue id 0 is a valid queue, so the kind of the raised bits
    /// tells a queue from a device.
    #[must_use]
    pub const fn from_kernel(q: &kfd_ioctl_dbg_trap_query_debug_event_args) -> Self {
        let source = if q.gpu_id == 0 {
            EventSource::Process
        } else if q.exception_mask & KFD_EC_MASK_QUEUE != 0 {
            EventSource::Queue { queue_id: q.queue_id, gpu_id: q.gpu_id }
        } else {
            EventSource::Device { gpu_id: q.gpu_id }
        };
        Self { exceptions: ExceptionMask(q.exception_mask), source }
    }
}

/// What became of one queue id of a suspend or resume request (the status bits the kernel
/// sets in the id array).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum QueueOutcome {
    /// Suspended (or resumed), now or before.
    Done,
    /// No such queue — or, for a suspend, a queue new to the debugger (`EC_QUEUE_NEW` raised)
    /// or being destroyed (`KFD_DBG_QUEUE_INVALID_MASK`).
    Invalid,
    /// The hardware failed (`KFD_DBG_QUEUE_ERROR_MASK`).
    Error,
}

impl QueueOutcome {
    /// Decodes one entry of the id array after the call.
    #[must_use]
    pub const fn of(entry: u32) -> Self {
        if entry & KFD_DBG_QUEUE_ERROR_MASK != 0 {
            Self::Error
        } else if entry & KFD_DBG_QUEUE_INVALID_MASK != 0 {
            Self::Invalid
        } else {
            Self::Done
        }
    }

    /// The queue id an entry names, without the status bits.
    #[must_use]
    pub const fn queue_id(entry: u32) -> u32 {
        entry & !(KFD_DBG_QUEUE_ERROR_MASK | KFD_DBG_QUEUE_INVALID_MASK)
    }
}

/// A queue of a queue snapshot, typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QueueSnapshot {
    /// Kernel queue id.
    pub queue_id: u32,
    /// Its GPU.
    pub gpu_id: u32,
    /// `KFD_IOC_QUEUE_TYPE_*`.
    pub queue_type: u32,
    /// Raised exceptions (before the snapshot's clear mask applied).
    pub exceptions: ExceptionMask,
    /// Ring address and size.
    pub ring: (u64, u32),
    /// Read and write pointer addresses.
    pub pointers: (u64, u64),
    /// Context-save area address and size.
    pub context_save: (u64, u32),
}

impl QueueSnapshot {
    /// From the kernel's entry.
    #[must_use]
    pub const fn from_kernel(e: &kfd_queue_snapshot_entry) -> Self {
        Self {
            queue_id: e.queue_id,
            gpu_id: e.gpu_id,
            queue_type: e.queue_type,
            exceptions: ExceptionMask(e.exception_status),
            ring: (e.ring_base_address, e.ring_size),
            pointers: (e.read_pointer_address, e.write_pointer_address),
            context_save: (e.ctx_save_restore_address, e.ctx_save_restore_area_size),
        }
    }
}
