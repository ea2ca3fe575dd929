//! From the facade's typed errors to the `HSAKMT_STATUS` upstream libhsakmt returns in the same
//! situation. Upstream reports nearly every failed ioctl as `HSAKMT_STATUS_ERROR`; functions
//! whose upstream code differs map their own cases before falling back to these.

use hsakmt_core::device::Error as DeviceError;
use hsakmt_core::device::queue_manager::QueueError;
use hsakmt_core::event;
use hsakmt_core::memory::Error as MemError;

use crate::device::log_err;
use crate::types::*;

/// The status for a facade error, logged when `HSAKMT_DEBUG_LEVEL` asks for errors.
pub(crate) fn device_status(what: &str, e: &DeviceError) -> HSAKMT_STATUS {
    log_err!("{what}: {e}");
    match e {
        DeviceError::NotOpened | DeviceError::ForkedChild => {
            HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED
        }
        DeviceError::Open(_) => HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED,
        DeviceError::VersionMismatch { .. } => HSAKMT_STATUS_DRIVER_MISMATCH,
        DeviceError::NotSupported { .. } => HSAKMT_STATUS_NOT_SUPPORTED,
        DeviceError::Memory(m) => memory_status(m),
        DeviceError::Event(ev) => event_status(ev),
        _ => HSAKMT_STATUS_ERROR,
    }
}

/// The status for a refusal of the memory manager's bookkeeping.
fn memory_status(e: &MemError) -> HSAKMT_STATUS {
    match e {
        MemError::UnknownNode { .. } | MemError::NotAGpu { .. } | MemError::InvalidNode { .. } => {
            HSAKMT_STATUS_INVALID_NODE_UNIT
        }
        MemError::ZeroSize
        | MemError::BadAlignment { .. }
        | MemError::Misaligned { .. }
        | MemError::InvalidFlags
        | MemError::SizeOverflow
        | MemError::OutsideRange { .. }
        | MemError::AddressInUse { .. }
        | MemError::UnknownAddress { .. }
        | MemError::InvalidHandle
        | MemError::StaleHandle
        | MemError::OutsideObject { .. }
        | MemError::NotMappable { .. }
        | MemError::NoNodes
        | MemError::NodesNotRegistered
        | MemError::RegisteredToOtherNodes { .. }
        | MemError::NotUserMemory { .. } => HSAKMT_STATUS_INVALID_PARAMETER,
        MemError::OutOfSpace { .. }
        | MemError::CapacityExhausted { .. }
        | MemError::ScratchInUse { .. } => HSAKMT_STATUS_NO_MEMORY,
        MemError::NotSupported | MemError::ReportedOnly => HSAKMT_STATUS_NOT_SUPPORTED,
        MemError::NotRegistered { .. } => HSAKMT_STATUS_MEMORY_NOT_REGISTERED,
        MemError::DuplicateUserptr { .. } => HSAKMT_STATUS_MEMORY_ALREADY_REGISTERED,
        _ => HSAKMT_STATUS_ERROR,
    }
}

/// The status for an event bookkeeping error.
fn event_status(e: &event::Error) -> HSAKMT_STATUS {
    match e {
        event::Error::InvalidHandle => HSAKMT_STATUS_INVALID_HANDLE,
        event::Error::TableFull | event::Error::WaitSetFull => HSAKMT_STATUS_OUT_OF_RESOURCES,
        event::Error::EmptyWaitSet | event::Error::NoEventAge => HSAKMT_STATUS_INVALID_PARAMETER,
        event::Error::Destroyed => HSAKMT_STATUS_WAIT_FAILURE,
        _ => HSAKMT_STATUS_ERROR,
    }
}

/// The status for a queue error.
pub(crate) fn queue_status(what: &str, e: &QueueError) -> HSAKMT_STATUS {
    match e {
        QueueError::Device(d) | QueueError::Memory { error: d, .. } => device_status(what, d),
        other => {
            log_err!("{what}: {other}");
            match other {
                QueueError::InvalidNode(_) | QueueError::NotAGpu { .. } => {
                    HSAKMT_STATUS_INVALID_NODE_UNIT
                }
                QueueError::InvalidHandle
                | QueueError::Param(_)
                | QueueError::InvalidPercentage(_)
                | QueueError::RingOutsideMapping { .. }
                | QueueError::InvalidEngineId { .. } => HSAKMT_STATUS_INVALID_PARAMETER,
                QueueError::TooManyQueues { .. } => HSAKMT_STATUS_OUT_OF_RESOURCES,
                QueueError::NoEngine { .. } | QueueError::NoGws { .. } => {
                    HSAKMT_STATUS_NOT_SUPPORTED
                }
                _ => HSAKMT_STATUS_ERROR,
            }
        }
    }
}
