//! Queue types: kinds, priorities, queue resources, the context-save-area header and queue info.

use core::ffi::c_void;

use super::{HSA_QUEUEID, HSAint64, HSAuint32, HSAuint64, c_enums};
use crate::layout::{Description, layout};

/// `HsaUserContextSaveAreaHeader`: the header at the start of a queue's context-save area.
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy)]
pub struct HsaUserContextSaveAreaHeader {
    /// Offset of the saved control stack's top.
    pub ControlStackOffset: HSAuint32,
    /// Size of the saved control stack.
    pub ControlStackSize: HSAuint32,
    /// Offset of the saved wave state.
    pub WaveStateOffset: HSAuint32,
    /// Size of the saved wave state.
    pub WaveStateSize: HSAuint32,
    /// Offset of the debugger's area.
    pub DebugOffset: HSAuint32,
    /// Size of the debugger's area.
    pub DebugSize: HSAuint32,
    /// Where the kernel stores the queue's error mask.
    pub ErrorReason: *mut HSAint64,
    /// Event raised on a queue error.
    pub ErrorEventId: HSAuint32,
    /// Reserved.
    pub Reserved1: HSAuint32,
}

/// `HsaQueueInfo` (`hsaKmtGetQueueInfo`).
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy)]
pub struct HsaQueueInfo {
    /// HW specific error state.
    pub QueueDetailError: HSAuint32,
    /// HW specific queue type.
    pub QueueTypeExtended: HSAuint32,
    /// Bits of `CUMaskInfo`.
    pub NumCUAssigned: HSAuint32,
    /// The queue's CU mask (owned by the library).
    pub CUMaskInfo: *mut HSAuint32,
    /// The user context-save area.
    pub UserContextSaveArea: *mut HSAuint32,
    /// Bytes of the save area in use.
    pub SaveAreaSizeInBytes: HSAuint64,
    /// Top of the saved control stack.
    pub ControlStackTop: *mut HSAuint32,
    /// Bytes of the control stack in use.
    pub ControlStackUsedInBytes: HSAuint64,
    /// The first context-save-area header.
    pub SaveAreaHeader: *mut HsaUserContextSaveAreaHeader,
    /// Reserved.
    pub Reserved2: HSAuint64,
}

impl Default for HsaQueueInfo {
    fn default() -> Self {
        let null = core::ptr::null_mut();
        Self {
            QueueDetailError: 0,
            QueueTypeExtended: 0,
            NumCUAssigned: 0,
            CUMaskInfo: null,
            UserContextSaveArea: null,
            SaveAreaSizeInBytes: 0,
            ControlStackTop: null,
            ControlStackUsedInBytes: 0,
            SaveAreaHeader: core::ptr::null_mut(),
            Reserved2: 0,
        }
    }
}

/// A queue pointer as `HsaQueueResource` holds it (C: an anonymous union of a 32-bit pointer,
/// a 64-bit pointer and the address as an integer).
#[repr(C, packed(4))]
#[derive(Clone, Copy)]
pub union HsaQueuePointer {
    /// As a pointer to 32 bits.
    pub ptr32: *mut HSAuint32,
    /// As a pointer to 64 bits.
    pub ptr64: *mut HSAuint64,
    /// As an address.
    pub value: HSAuint64,
}

impl HsaQueuePointer {
    /// The address.
    #[must_use]
    pub const fn address(self) -> u64 {
        // SAFETY: every member is 8 bytes of plain data; reading the integer is always valid.
        unsafe { self.value }
    }

    /// A pointer with address `value`.
    #[must_use]
    pub const fn from_address(value: u64) -> Self {
        Self { value }
    }
}

impl core::fmt::Debug for HsaQueuePointer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:#x}", self.address())
    }
}

/// `HsaQueueResource`: what `hsaKmtCreateQueue` reports (and, for AQL queues, takes: the read
/// and write pointer addresses).
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy)]
pub struct HsaQueueResource {
    /// The queue's id.
    pub QueueId: HSA_QUEUEID,
    /// The doorbell (C: `Queue_DoorBell` / `Queue_DoorBell_aql` / `QueueDoorBell`).
    pub DoorBell: HsaQueuePointer,
    /// The write pointer (C: `Queue_write_ptr` / `Queue_write_ptr_aql` / `QueueWptrValue`).
    pub WritePtr: HsaQueuePointer,
    /// The read pointer (C: `Queue_read_ptr` / `Queue_read_ptr_aql` / `QueueRptrValue`).
    pub ReadPtr: HsaQueuePointer,
    /// Where the kernel stores the queue's error mask.
    pub ErrorReason: *mut HSAint64,
}

impl Default for HsaQueueResource {
    fn default() -> Self {
        let zero = HsaQueuePointer::from_address(0);
        Self {
            QueueId: 0,
            DoorBell: zero,
            WritePtr: zero,
            ReadPtr: zero,
            ErrorReason: core::ptr::null_mut(),
        }
    }
}

/// `HsaQueueReport` (`hsaKmtReportQueue`, never implemented upstream).
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy)]
pub struct HsaQueueReport {
    /// VMID.
    pub VMID: HSAuint32,
    /// Ring address.
    pub QueueAddress: *mut c_void,
    /// Ring size.
    pub QueueSize: HSAuint64,
}

c_enums! {
    fn describe_enums;

    /// `HSA_QUEUE_PRIORITY`. Its values run from -3 to `0xFFFFFFFF`, which neither `int` nor
    /// `unsigned int` holds: the C compiler makes it a 64-bit signed type.
    pub enum HSA_QUEUE_PRIORITY: i64 {
        HSA_QUEUE_PRIORITY_MINIMUM = -3,
        HSA_QUEUE_PRIORITY_LOW = -2,
        HSA_QUEUE_PRIORITY_BELOW_NORMAL = -1,
        HSA_QUEUE_PRIORITY_NORMAL = 0,
        HSA_QUEUE_PRIORITY_ABOVE_NORMAL = 1,
        HSA_QUEUE_PRIORITY_HIGH = 2,
        HSA_QUEUE_PRIORITY_MAXIMUM = 3,
        HSA_QUEUE_PRIORITY_NUM_PRIORITY = 4,
        HSA_QUEUE_PRIORITY_SIZE = 0xFFFF_FFFF,
    }

    /// `HSA_QUEUE_TYPE`
    pub enum HSA_QUEUE_TYPE: u32 {
        HSA_QUEUE_COMPUTE = 1,
        HSA_QUEUE_SDMA = 2,
        HSA_QUEUE_MULTIMEDIA_DECODE = 3,
        HSA_QUEUE_MULTIMEDIA_ENCODE = 4,
        HSA_QUEUE_SDMA_XGMI = 5,
        HSA_QUEUE_SDMA_BY_ENG_ID = 6,
        HSA_QUEUE_COMPUTE_OS = 11,
        HSA_QUEUE_SDMA_OS = 12,
        HSA_QUEUE_MULTIMEDIA_DECODE_OS = 13,
        HSA_QUEUE_MULTIMEDIA_ENCODE_OS = 14,
        HSA_QUEUE_COMPUTE_AQL = 21,
        HSA_QUEUE_DMA_AQL = 22,
        HSA_QUEUE_DMA_AQL_XGMI = 23,
        HSA_QUEUE_TYPE_SIZE = 0xFFFF_FFFF,
    }
}

/// Adds this module's rows.
pub(crate) fn describe(d: &mut Description) {
    describe_enums(d);
    layout!(
        d,
        HsaUserContextSaveAreaHeader {
            ControlStackOffset,
            ControlStackSize,
            WaveStateOffset,
            WaveStateSize,
            DebugOffset,
            DebugSize,
            ErrorReason,
            ErrorEventId,
            Reserved1,
        }
    );
    layout!(
        d,
        HsaQueueInfo {
            QueueDetailError,
            QueueTypeExtended,
            NumCUAssigned,
            CUMaskInfo,
            UserContextSaveArea,
            SaveAreaSizeInBytes,
            ControlStackTop,
            ControlStackUsedInBytes,
            SaveAreaHeader,
            Reserved2,
        }
    );
    layout!(d, HsaQueueResource {
        QueueId,
        "Queue_DoorBell" => DoorBell.ptr32,
        "Queue_DoorBell_aql" => DoorBell.ptr64,
        "QueueDoorBell" => DoorBell.value,
        "Queue_write_ptr" => WritePtr.ptr32,
        "Queue_write_ptr_aql" => WritePtr.ptr64,
        "QueueWptrValue" => WritePtr.value,
        "Queue_read_ptr" => ReadPtr.ptr32,
        "Queue_read_ptr_aql" => ReadPtr.ptr64,
        "QueueRptrValue" => ReadPtr.value,
        ErrorReason,
    });
    layout!(d, HsaQueueReport { VMID, QueueAddress, QueueSize });
}
