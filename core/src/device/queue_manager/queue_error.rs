//! [`QueueError`]: why a queue operation of the device facade failed.

use core::fmt;

use crate::device::Error as DeviceError;
use crate::error::{Errno, Error, ErrorKind};
use crate::queue::params::QueueParamError;
use crate::queue::ring::RingError;
use crate::queue::sdma::SdmaError;

/// Which engine family a queue kind needs, for [`QueueError::NoEngine`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Engine {
    /// The compute command processor (CP).
    Compute,
    /// A PCIe SDMA engine.
    Sdma,
    /// An XGMI SDMA engine.
    SdmaXgmi,
}

/// Why a queue operation failed. Every operation that returns one leaves the library's state
/// as it was before the call (nothing half-created, nothing leaked).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum QueueError {
    /// The device facade refused (not open, forked child, kernel too old) or an ioctl failed.
    Device(DeviceError),
    /// No node has this user node id.
    InvalidNode(u32),
    /// The node has no GPU (a CPU-only node cannot run queues).
    NotAGpu {
        /// The user node id.
        node: u32,
    },
    /// The node's topology lacks a fact queue creation needs (gpu_id, gfx version).
    IncompleteNode {
        /// The user node id.
        node: u32,
        /// What is missing.
        what: &'static str,
    },
    /// The node has no engine of the kind the queue needs.
    NoEngine {
        /// The user node id.
        node: u32,
        /// The engine kind.
        engine: Engine,
    },
    /// An SDMA engine id at or above the node's engine count.
    InvalidEngineId {
        /// The id asked for.
        engine_id: u32,
        /// SDMA + XGMI SDMA engines on the node.
        engines: u32,
    },
    /// A ring, priority, CU-mask or sizing parameter is invalid.
    Param(QueueParamError),
    /// Queue percentage above 100.
    InvalidPercentage(u32),
    /// A caller-provided ring mapping is shorter than the ring size.
    RingOutsideMapping {
        /// The ring size asked for.
        ring_size: u64,
        /// Bytes of the mapping from the ring's start.
        mapping_len: u64,
    },
    /// The handle names no live queue (never created, or destroyed).
    InvalidHandle,
    /// The operation does not apply to this kind of queue (a producer of the wrong kind, wave
    /// state of an SDMA queue, a producer for a ring the library has no mapping of).
    WrongQueueKind,
    /// The queue table is full.
    TooManyQueues {
        /// Its capacity.
        capacity: usize,
    },
    /// A producer object of the queue (or a view of one of its buffers) is still alive; drop it
    /// before destroying the queue.
    Busy,
    /// The queue has no context-save area (the node has no CWSR support).
    NoContextSaveArea,
    /// The node has no global wave sync (GWS) resources.
    NoGws {
        /// The user node id.
        node: u32,
    },
    /// Allocating or mapping a per-queue buffer (ring, pointers, EOP, context-save area,
    /// doorbell page) failed.
    Memory {
        /// Which buffer.
        what: &'static str,
        /// The memory manager's error.
        error: DeviceError,
    },
    /// A ring operation failed (building a producer over invalid memory, ring full).
    Ring(RingError),
    /// An SDMA packet or ring operation failed.
    Sdma(SdmaError),
}

impl fmt::Display for QueueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Device(e) => e.fmt(f),
            Self::InvalidNode(n) => write!(f, "no node with id {n}"),
            Self::NotAGpu { node } => write!(f, "node {node} has no GPU; queues need a GPU node"),
            Self::IncompleteNode { node, what } => {
                write!(f, "node {node}: the topology does not report its {what}")
            }
            Self::NoEngine { node, engine } => write!(f, "node {node} has no {engine:?} engine"),
            Self::InvalidEngineId { engine_id, engines } => {
                write!(f, "SDMA engine id {engine_id} not below the node's {engines} engines")
            }
            Self::Param(e) => e.fmt(f),
            Self::InvalidPercentage(p) => write!(f, "queue percentage {p} above 100"),
            Self::RingOutsideMapping { ring_size, mapping_len } => write!(
                f,
                "ring of {ring_size} bytes does not fit the {mapping_len} bytes of its mapping"
            ),
            Self::InvalidHandle => f.write_str("no such queue (never created, or destroyed)"),
            Self::WrongQueueKind => f.write_str("operation does not apply to this queue"),
            Self::TooManyQueues { capacity } => {
                write!(f, "queue table full ({capacity} queues)")
            }
            Self::Busy => f.write_str("a producer or buffer view of the queue is still alive"),
            Self::NoContextSaveArea => f.write_str("the queue has no context-save area"),
            Self::NoGws { node } => write!(f, "node {node} has no GWS resources"),
            Self::Memory { what, error } => {
                write!(f, "cannot allocate the queue's {what}: {error}")
            }
            Self::Ring(e) => e.fmt(f),
            Self::Sdma(e) => e.fmt(f),
        }
    }
}

impl Error for QueueError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::Device(e) => e.kind(),
            Self::InvalidNode(_) | Self::NotAGpu { .. } => ErrorKind::InvalidNode,
            Self::IncompleteNode { .. } => ErrorKind::Malformed,
            Self::NoEngine { .. } | Self::NoGws { .. } => ErrorKind::NotSupported,
            Self::InvalidEngineId { .. }
            | Self::InvalidPercentage(_)
            | Self::RingOutsideMapping { .. }
            | Self::WrongQueueKind
            | Self::NoContextSaveArea => ErrorKind::InvalidArgument,
            Self::Param(e) => e.kind(),
            Self::InvalidHandle => ErrorKind::InvalidHandle,
            Self::TooManyQueues { .. } => ErrorKind::CapacityExhausted,
            Self::Busy => ErrorKind::Busy,
            Self::Memory { error, .. } => match error.kind() {
                ErrorKind::InvalidArgument => ErrorKind::OutOfResources,
                k => k,
            },
            Self::Ring(e) => e.kind(),
            Self::Sdma(e) => e.kind(),
        }
    }
}

impl core::error::Error for QueueError {}

impl From<DeviceError> for QueueError {
    fn from(e: DeviceError) -> Self {
        Self::Device(e)
    }
}

impl From<QueueParamError> for QueueError {
    fn from(e: QueueParamError) -> Self {
        Self::Param(e)
    }
}

impl From<RingError> for QueueError {
    fn from(e: RingError) -> Self {
        Self::Ring(e)
    }
}

impl From<SdmaError> for QueueError {
    fn from(e: SdmaError) -> Self {
        Self::Sdma(e)
    }
}

impl QueueError {
    /// The kernel's errno when an ioctl failed.
    #[must_use]
    pub fn errno(&self) -> Option<Errno> {
        match self {
            Self::Device(DeviceError::Ioctl { errno, .. } | DeviceError::Platform(errno))
            | Self::Memory {
                error: DeviceError::Ioctl { errno, .. } | DeviceError::Platform(errno),
                ..
            } => Some(*errno),
            _ => None,
        }
    }
}
