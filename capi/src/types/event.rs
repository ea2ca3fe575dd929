//! Event types: descriptors, the `HsaEvent` the library allocates, per-type event data, clock
//! counters.

use core::ffi::c_void;

use super::{HSA_DEVICE, HSAuint32, HSAuint64, bitfield, c_enums};
use crate::layout::{Description, layout, scalars};

/// `HSA_EVENTID`: the kernel's event id.
pub type HSA_EVENTID = HSAuint32;

/// The user data of a sync variable (C: an anonymous union member named `SyncVar`).
#[repr(C, packed(4))]
#[derive(Clone, Copy)]
pub union HsaSyncVarData {
    /// As a pointer.
    pub UserData: *mut c_void,
    /// As an integer.
    pub UserDataPtrValue: HSAuint64,
}

/// `HsaSyncVar`.
#[repr(C, packed(4))]
#[derive(Clone, Copy)]
pub struct HsaSyncVar {
    /// The user data.
    pub SyncVar: HsaSyncVarData,
    /// Its size.
    pub SyncVarSize: HSAuint64,
}

impl Default for HsaSyncVar {
    fn default() -> Self {
        Self { SyncVar: HsaSyncVarData { UserDataPtrValue: 0 }, SyncVarSize: 0 }
    }
}

/// `HsaNodeChange`.
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy, Default)]
pub struct HsaNodeChange {
    /// Added or removed.
    pub Flags: HSA_EVENTTYPE_NODECHANGE_FLAGS,
}

/// `HsaDeviceStateChange`.
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy, Default)]
pub struct HsaDeviceStateChange {
    /// Node of the device.
    pub NodeId: HSAuint32,
    /// CPU or GPU.
    pub Device: HSA_DEVICE,
    /// Started or stopped.
    pub Flags: HSA_EVENTTYPE_DEVICESTATECHANGE_FLAGS,
}

bitfield! {
    /// `HsaAccessAttributeFailure`: why a memory access faulted.
    pub struct HsaAccessAttributeFailure { bits: HSAuint32 } "" {
        NotPresent: 1,
        ReadOnly: 1,
        NoExecute: 1,
        GpuAccess: 1,
        ECC: 1,
        Imprecise: 1,
        ErrorType: 3,
        Reserved: 23,
    }
}

/// `HsaMemoryAccessFault`: data of a memory event.
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy, Default)]
pub struct HsaMemoryAccessFault {
    /// Node of the faulting GPU.
    pub NodeId: HSAuint32,
    /// Faulting address.
    pub VirtualAddress: HSAuint64,
    /// Why.
    pub Failure: HsaAccessAttributeFailure,
    /// Recoverable or fatal.
    pub Flags: HSA_EVENTID_MEMORYFLAGS,
}

/// `HsaHwException`: data of a HW-exception event.
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy, Default)]
pub struct HsaHwException {
    /// Node of the GPU.
    pub NodeId: HSAuint32,
    /// Reset type.
    pub ResetType: HSAuint32,
    /// Whether VRAM contents were lost.
    pub MemoryLost: HSAuint32,
    /// Why.
    pub ResetCause: HSA_EVENTID_HW_EXCEPTION_CAUSE,
}

/// The per-type data of an event (C: an anonymous union member named `EventData`).
#[repr(C, packed(4))]
#[derive(Clone, Copy)]
pub union HsaEventDataUnion {
    /// Signal (and other) events.
    pub SyncVar: HsaSyncVar,
    /// Node-change events.
    pub NodeChangeState: HsaNodeChange,
    /// Device-state events.
    pub DeviceState: HsaDeviceStateChange,
    /// Memory events.
    pub MemoryAccessFault: HsaMemoryAccessFault,
    /// HW-exception events.
    pub HwException: HsaHwException,
}

/// `HsaEventData`.
#[repr(C, packed(4))]
#[derive(Clone, Copy)]
pub struct HsaEventData {
    /// The type.
    pub EventType: HSA_EVENTTYPE,
    /// Per-type data.
    pub EventData: HsaEventDataUnion,
    /// The kernel's event id.
    pub HWData1: HSAuint64,
    /// The event's mailbox address (signal and debug events), else 0.
    pub HWData2: HSAuint64,
    /// The trigger data a GPU sends with the interrupt.
    pub HWData3: HSAuint32,
}

/// `HsaEventDescriptor` (`hsaKmtCreateEvent`).
#[repr(C, packed(4))]
#[derive(Clone, Copy, Default)]
pub struct HsaEventDescriptor {
    /// The type.
    pub EventType: HSA_EVENTTYPE,
    /// The node.
    pub NodeId: HSAuint32,
    /// User data, copied into the event.
    pub SyncVar: HsaSyncVar,
}

/// `HsaEvent`: allocated by `hsaKmtCreateEvent`, freed by `hsaKmtDestroyEvent`.
#[repr(C, packed(4))]
#[derive(Clone, Copy)]
pub struct HsaEvent {
    /// The kernel's event id.
    pub EventId: HSA_EVENTID,
    /// The event's data.
    pub EventData: HsaEventData,
}

impl HsaEvent {
    /// An all-zero event.
    #[must_use]
    pub const fn zeroed() -> Self {
        // SAFETY: every member is an integer, a raw pointer or a union of those; all-zero
        // bytes is a valid value of each.
        unsafe { core::mem::zeroed() }
    }
}

/// `HsaClockCounters` (`hsaKmtGetClockCounters`).
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy, Default)]
pub struct HsaClockCounters {
    /// GPU counter.
    pub GPUClockCounter: HSAuint64,
    /// CPU counter.
    pub CPUClockCounter: HSAuint64,
    /// System counter.
    pub SystemClockCounter: HSAuint64,
    /// System counter frequency.
    pub SystemClockFrequencyHz: HSAuint64,
}

c_enums! {
    fn describe_enums;

    /// `HSA_EVENTTYPE`
    pub enum HSA_EVENTTYPE: u32 {
        HSA_EVENTTYPE_SIGNAL = 0,
        HSA_EVENTTYPE_NODECHANGE = 1,
        HSA_EVENTTYPE_DEVICESTATECHANGE = 2,
        HSA_EVENTTYPE_HW_EXCEPTION = 3,
        HSA_EVENTTYPE_SYSTEM_EVENT = 4,
        HSA_EVENTTYPE_DEBUG_EVENT = 5,
        HSA_EVENTTYPE_PROFILE_EVENT = 6,
        HSA_EVENTTYPE_QUEUE_EVENT = 7,
        HSA_EVENTTYPE_MEMORY = 8,
        HSA_EVENTTYPE_MAXID = 9,
        HSA_EVENTTYPE_TYPE_SIZE = 0xFFFF_FFFF,
    }

    /// `HSA_EVENTTYPE_NODECHANGE_FLAGS`
    pub enum HSA_EVENTTYPE_NODECHANGE_FLAGS: u32 {
        HSA_EVENTTYPE_NODECHANGE_ADD = 0,
        HSA_EVENTTYPE_NODECHANGE_REMOVE = 1,
        HSA_EVENTTYPE_NODECHANGE_SIZE = 0xFFFF_FFFF,
    }

    /// `HSA_EVENTTYPE_DEVICESTATECHANGE_FLAGS`
    pub enum HSA_EVENTTYPE_DEVICESTATECHANGE_FLAGS: u32 {
        HSA_EVENTTYPE_DEVICESTATUSCHANGE_START = 0,
        HSA_EVENTTYPE_DEVICESTATUSCHANGE_STOP = 1,
        HSA_EVENTTYPE_DEVICESTATUSCHANGE_SIZE = 0xFFFF_FFFF,
    }

    /// `HSA_EVENTID_MEMORYFLAGS`
    pub enum HSA_EVENTID_MEMORYFLAGS: u32 {
        HSA_EVENTID_MEMORY_RECOVERABLE = 0,
        HSA_EVENTID_MEMORY_FATAL_PROCESS = 1,
        HSA_EVENTID_MEMORY_FATAL_VM = 2,
    }

    /// `HSA_EVENTID_HW_EXCEPTION_CAUSE`
    pub enum HSA_EVENTID_HW_EXCEPTION_CAUSE: u32 {
        HSA_EVENTID_HW_EXCEPTION_GPU_HANG = 0,
        HSA_EVENTID_HW_EXCEPTION_ECC = 1,
    }

    /// `HsaEventTimeOut`
    pub enum HsaEventTimeOut: u32 {
        HSA_EVENTTIMEOUT_IMMEDIATE = 0,
        HSA_EVENTTIMEOUT_INFINITE = 0xFFFF_FFFF,
    }
}

/// Adds this module's rows.
pub(crate) fn describe(d: &mut Description) {
    describe_enums(d);
    scalars!(d, HSA_EVENTID);
    layout!(d, HsaSyncVar {
        SyncVar,
        "SyncVar.UserData" => SyncVar.UserData,
        "SyncVar.UserDataPtrValue" => SyncVar.UserDataPtrValue,
        SyncVarSize,
    });
    layout!(d, HsaNodeChange { Flags });
    layout!(d, HsaDeviceStateChange { NodeId, Device, Flags });
    HsaAccessAttributeFailure::describe(d);
    layout!(d, HsaMemoryAccessFault { NodeId, VirtualAddress, Failure, Flags });
    layout!(d, HsaHwException { NodeId, ResetType, MemoryLost, ResetCause });
    layout!(d, HsaEventData {
        EventType,
        EventData,
        "EventData.SyncVar" => EventData.SyncVar,
        "EventData.NodeChangeState" => EventData.NodeChangeState,
        "EventData.DeviceState" => EventData.DeviceState,
        "EventData.MemoryAccessFault" => EventData.MemoryAccessFault,
        "EventData.HwException" => EventData.HwException,
        HWData1,
        HWData2,
        HWData3,
    });
    layout!(d, HsaEventDescriptor { EventType, NodeId, SyncVar });
    layout!(d, HsaEvent { EventId, EventData });
    layout!(
        d,
        HsaClockCounters {
            GPUClockCounter,
            CPUClockCounter,
            SystemClockCounter,
            SystemClockFrequencyHz,
        }
    );
}
