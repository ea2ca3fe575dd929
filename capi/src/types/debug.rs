//! Debugger types: wave operations, watch points, trap masks and exception codes, wave messages.

use core::ffi::c_void;

use super::{HSAuint32, c_enums};
use crate::layout::{Description, MacroRow, constants, layout};

/// `HSA_RUNTIME_ENABLE_CAPS_SUPPORTS_CORE_DUMP_MASK`: a runtime capability bit
/// (`hsaKmtGetRuntimeCapabilities`).
pub const HSA_RUNTIME_ENABLE_CAPS_SUPPORTS_CORE_DUMP_MASK: u32 = 0x8000_0000;

/// `HSA_EC_MASK(ecode)`: the mask bit of exception code `ecode` (1..=64).
#[must_use]
pub const fn HSA_EC_MASK(ecode: u64) -> u64 {
    1u64 << (ecode - 1)
}

/// `HsaDbgWaveMsgAMDGen2`.
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy, Default)]
pub struct HsaDbgWaveMsgAMDGen2 {
    /// The message.
    pub Value: HSAuint32,
    /// Reserved.
    pub Reserved2: HSAuint32,
}

/// `HsaDbgWaveMessageAMD`.
#[repr(C, packed(4))]
#[derive(Clone, Copy)]
pub union HsaDbgWaveMessageAMD {
    /// Gen 2 message.
    pub WaveMsgInfoGen2: HsaDbgWaveMsgAMDGen2,
}

/// `HsaDbgWaveMessage`.
#[repr(C, packed(4))]
#[derive(Clone, Copy)]
pub struct HsaDbgWaveMessage {
    /// Host-accessible data.
    pub MemoryVA: *mut c_void,
    /// The message.
    pub DbgWaveMsg: HsaDbgWaveMessageAMD,
}

c_enums! {
    fn describe_enums;

    /// `HSA_DBG_WAVEOP`
    pub enum HSA_DBG_WAVEOP: u32 {
        HSA_DBG_WAVEOP_HALT = 1,
        HSA_DBG_WAVEOP_RESUME = 2,
        HSA_DBG_WAVEOP_KILL = 3,
        HSA_DBG_WAVEOP_DEBUG = 4,
        HSA_DBG_WAVEOP_TRAP = 5,
        HSA_DBG_NUM_WAVEOP = 5,
        HSA_DBG_MAX_WAVEOP = 0xFFFF_FFFF,
    }

    /// `HSA_DBG_WAVEMODE`
    pub enum HSA_DBG_WAVEMODE: u32 {
        HSA_DBG_WAVEMODE_SINGLE = 0,
        HSA_DBG_WAVEMODE_BROADCAST_PROCESS = 2,
        HSA_DBG_WAVEMODE_BROADCAST_PROCESS_CU = 3,
        HSA_DBG_NUM_WAVEMODE = 3,
        HSA_DBG_MAX_WAVEMODE = 0xFFFF_FFFF,
    }

    /// `HSA_DBG_WAVEMSG_TYPE`
    pub enum HSA_DBG_WAVEMSG_TYPE: u32 {
        HSA_DBG_WAVEMSG_AUTO = 0,
        HSA_DBG_WAVEMSG_USER = 1,
        HSA_DBG_WAVEMSG_ERROR = 2,
        HSA_DBG_NUM_WAVEMSG = 3,
        HSA_DBG_MAX_WAVEMSG = 0xFFFF_FFFF,
    }

    /// `HSA_DBG_WATCH_MODE`
    pub enum HSA_DBG_WATCH_MODE: u32 {
        HSA_DBG_WATCH_READ = 0,
        HSA_DBG_WATCH_NONREAD = 1,
        HSA_DBG_WATCH_ATOMIC = 2,
        HSA_DBG_WATCH_ALL = 3,
        HSA_DBG_WATCH_NUM = 4,
    }

    /// `HSA_DBG_TRAP_OVERRIDE`
    pub enum HSA_DBG_TRAP_OVERRIDE: u32 {
        HSA_DBG_TRAP_OVERRIDE_OR = 0,
        HSA_DBG_TRAP_OVERRIDE_REPLACE = 1,
        HSA_DBG_TRAP_OVERRIDE_NUM = 2,
    }

    /// `HSA_DBG_TRAP_MASK`
    pub enum HSA_DBG_TRAP_MASK: u32 {
        HSA_DBG_TRAP_MASK_FP_INVALID = 1,
        HSA_DBG_TRAP_MASK_FP_INPUT_DENOMAL = 2,
        HSA_DBG_TRAP_MASK_FP_DIVIDE_BY_ZERO = 4,
        HSA_DBG_TRAP_MASK_FP_OVERFLOW = 8,
        HSA_DBG_TRAP_MASK_FP_UNDERFLOW = 16,
        HSA_DBG_TRAP_MASK_FP_INEXACT = 32,
        HSA_DBG_TRAP_MASK_INT_DIVIDE_BY_ZERO = 64,
        HSA_DBG_TRAP_MASK_DBG_ADDRESS_WATCH = 128,
        HSA_DBG_TRAP_MASK_DBG_MEMORY_VIOLATION = 256,
    }

    /// `HSA_DBG_TRAP_EXCEPTION_CODE`
    pub enum HSA_DBG_TRAP_EXCEPTION_CODE: u32 {
        HSA_DBG_EC_NONE = 0,
        HSA_DBG_EC_QUEUE_WAVE_ABORT = 1,
        HSA_DBG_EC_QUEUE_WAVE_TRAP = 2,
        HSA_DBG_EC_QUEUE_WAVE_MATH_ERROR = 3,
        HSA_DBG_EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION = 4,
        HSA_DBG_EC_QUEUE_WAVE_MEMORY_VIOLATION = 5,
        HSA_DBG_EC_QUEUE_WAVE_APERTURE_VIOLATION = 6,
        HSA_DBG_EC_QUEUE_PACKET_DISPATCH_DIM_INVALID = 16,
        HSA_DBG_EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID = 17,
        HSA_DBG_EC_QUEUE_PACKET_DISPATCH_CODE_INVALID = 18,
        HSA_DBG_EC_QUEUE_PACKET_RESERVED = 19,
        HSA_DBG_EC_QUEUE_PACKET_UNSUPPORTED = 20,
        HSA_DBG_EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID = 21,
        HSA_DBG_EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID = 22,
        HSA_DBG_EC_QUEUE_PACKET_VENDOR_UNSUPPORTED = 23,
        HSA_DBG_EC_QUEUE_PREEMPTION_ERROR = 30,
        HSA_DBG_EC_QUEUE_NEW = 31,
        HSA_DBG_EC_DEVICE_QUEUE_DELETE = 32,
        HSA_DBG_EC_DEVICE_MEMORY_VIOLATION = 33,
        HSA_DBG_EC_DEVICE_RAS_ERROR = 34,
        HSA_DBG_EC_DEVICE_FATAL_HALT = 35,
        HSA_DBG_EC_DEVICE_NEW = 36,
        HSA_DBG_EC_PROCESS_RUNTIME = 48,
        HSA_DBG_EC_PROCESS_DEVICE_REMOVE = 49,
        HSA_DBG_EC_MAX = 50,
    }

    /// `HSA_DBG_WAVE_LAUNCH_MODE`
    pub enum HSA_DBG_WAVE_LAUNCH_MODE: u32 {
        HSA_DBG_WAVE_LAUNCH_MODE_NORMAL = 0,
        HSA_DBG_WAVE_LAUNCH_MODE_HALT = 1,
        HSA_DBG_WAVE_LAUNCH_MODE_KILL = 2,
        HSA_DBG_WAVE_LAUNCH_MODE_SINGLE_STEP = 3,
        HSA_DBG_WAVE_LAUNCH_MODE_DISABLE = 4,
        HSA_DBG_WAVE_LAUNCH_MODE_NUM = 5,
    }

    /// `HSA_DBG_NODE_CONTROL`
    pub enum HSA_DBG_NODE_CONTROL: u32 {
        HSA_DBG_NODE_CONTROL_FLAG_MAX = 0x01,
    }

    /// `HSA_DEBUG_EVENT_TYPE`
    pub enum HSA_DEBUG_EVENT_TYPE: u32 {
        HSA_DEBUG_EVENT_TYPE_NONE = 0,
        HSA_DEBUG_EVENT_TYPE_TRAP = 1,
        HSA_DEBUG_EVENT_TYPE_VMFAULT = 2,
        HSA_DEBUG_EVENT_TYPE_TRAP_VMFAULT = 3,
    }
}

/// Adds this module's rows.
pub(crate) fn describe(d: &mut Description) {
    describe_enums(d);
    constants!(d, HSA_RUNTIME_ENABLE_CAPS_SUPPORTS_CORE_DUMP_MASK);
    d.macros.push(MacroRow { name: "HSA_EC_MASK", eval: HSA_EC_MASK, first: 1, last: 64 });
    layout!(d, HsaDbgWaveMsgAMDGen2 { Value, Reserved2 });
    layout!(d, HsaDbgWaveMessageAMD { WaveMsgInfoGen2 });
    layout!(d, HsaDbgWaveMessage { MemoryVA, DbgWaveMsg });
}
