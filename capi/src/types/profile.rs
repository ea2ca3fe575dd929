//! Profiling types: counter blocks and their UUIDs, PMC traces, SMI events, PC sampling.

use super::{HSAuint8, HSAuint16, HSAuint32, HSAuint64, bitfield, c_enums};
use crate::layout::{Description, MacroRow, ObjectRow, constants, layout, scalars};

/// `HSA_UUID`.
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HSA_UUID {
    /// First 32 bits.
    pub Data1: HSAuint32,
    /// Next 16 bits.
    pub Data2: HSAuint16,
    /// Next 16 bits.
    pub Data3: HSAuint16,
    /// Last 64 bits.
    pub Data4: [HSAuint8; 8],
}

impl HSA_UUID {
    /// Its 16 bytes as they lie in memory.
    #[must_use]
    pub fn to_bytes(self) -> Vec<u8> {
        let mut b = Vec::with_capacity(16);
        b.extend_from_slice(&{ self.Data1 }.to_ne_bytes());
        b.extend_from_slice(&{ self.Data2 }.to_ne_bytes());
        b.extend_from_slice(&{ self.Data3 }.to_ne_bytes());
        b.extend_from_slice(&self.Data4);
        b
    }
}

/// The header's `HSA_DEFINE_UUID(name, ...)` block ids: `name = (dw, w1, w2, [b1, ..., b8])`.
macro_rules! uuids {
    ($( $name:ident = ($d1:literal, $d2:literal, $d3:literal, [$($b:literal),*]), )*) => {
        $(
            #[doc = concat!("`", stringify!($name), "`: a counter block's id.")]
            pub const $name: HSA_UUID =
                HSA_UUID { Data1: $d1, Data2: $d2, Data3: $d3, Data4: [$($b),*] };
        )*

        /// Adds the block ids' rows.
        fn describe_uuids(d: &mut Description) {
            $( d.objects.push(ObjectRow { name: stringify!($name), bytes: $name.to_bytes() }); )*
        }
    };
}

uuids! {
    HSA_PROFILEBLOCK_AMD_CB = (0x9ba429c6, 0xaf2d, 0x4b38, [0xb3, 0x49, 0x15, 0x72, 0x71, 0xbe, 0xac, 0x6a]),
    HSA_PROFILEBLOCK_AMD_CPF = (0x2b0ad2b5, 0x1c43, 0x4f46, [0xa7, 0xbc, 0xe1, 0x19, 0x41, 0x1e, 0xa6, 0xc9]),
    HSA_PROFILEBLOCK_AMD_CPG = (0x590ec94d, 0x20f0, 0x448f, [0x8d, 0xff, 0x31, 0x6c, 0x67, 0x9d, 0xe7, 0xff]),
    HSA_PROFILEBLOCK_AMD_DB = (0x3d1a47fc, 0x0013, 0x4ed4, [0x83, 0x06, 0x82, 0x2c, 0xa0, 0xb7, 0xa6, 0xc2]),
    HSA_PROFILEBLOCK_AMD_GDS = (0xf59276ec, 0x2526, 0x4bf8, [0x8e, 0xc0, 0x11, 0x8f, 0x77, 0x70, 0x0d, 0xc9]),
    HSA_PROFILEBLOCK_AMD_GRBM = (0x8f00933c, 0xc33d, 0x4801, [0x97, 0xb7, 0x70, 0x07, 0xf7, 0x85, 0x73, 0xad]),
    HSA_PROFILEBLOCK_AMD_GRBMSE = (0x34ebd8d7, 0x7c8b, 0x4d15, [0x88, 0xfa, 0x0e, 0x4e, 0x4a, 0xf5, 0x9a, 0xc1]),
    HSA_PROFILEBLOCK_AMD_IA = (0x34276944, 0x4264, 0x4fcd, [0x9d, 0x6e, 0xae, 0x26, 0x45, 0x82, 0xec, 0x51]),
    HSA_PROFILEBLOCK_AMD_MC = (0x13900b57, 0x4956, 0x4d98, [0x81, 0xd0, 0x68, 0x52, 0x19, 0x37, 0xf5, 0x9c]),
    HSA_PROFILEBLOCK_AMD_PASC = (0xb0e7fb5d, 0x0efc, 0x4744, [0xb5, 0x16, 0x5d, 0x23, 0xdc, 0x1f, 0xd5, 0x6c]),
    HSA_PROFILEBLOCK_AMD_PASU = (0x9a152b6a, 0x1fad, 0x45f2, [0xa5, 0xbf, 0xf1, 0x63, 0x82, 0x6b, 0xd0, 0xcd]),
    HSA_PROFILEBLOCK_AMD_SPI = (0xeda81044, 0xd62c, 0x47eb, [0xaf, 0x89, 0x4f, 0x6f, 0xbf, 0x3b, 0x38, 0xe0]),
    HSA_PROFILEBLOCK_AMD_SRBM = (0x9f8040e0, 0x6830, 0x4019, [0xac, 0xc8, 0x46, 0x3c, 0x9e, 0x44, 0x5b, 0x89]),
    HSA_PROFILEBLOCK_AMD_SQ = (0xb5c396b6, 0xd310, 0x47e4, [0x86, 0xfc, 0x5c, 0xc3, 0x04, 0x3a, 0xf5, 0x08]),
    HSA_PROFILEBLOCK_AMD_SX = (0xbdb8d737, 0x43cc, 0x4162, [0xbe, 0x52, 0x51, 0xcf, 0xb8, 0x47, 0xbe, 0xaf]),
    HSA_PROFILEBLOCK_AMD_TA = (0xc01ee43d, 0xad92, 0x44b1, [0x8a, 0xb9, 0xbe, 0x5e, 0x69, 0x6c, 0xee, 0xa7]),
    HSA_PROFILEBLOCK_AMD_TCA = (0x333e393f, 0xe147, 0x4f49, [0xa6, 0xd1, 0x60, 0x91, 0x4c, 0x70, 0x86, 0xb0]),
    HSA_PROFILEBLOCK_AMD_TCC = (0x848ce855, 0xd805, 0x4566, [0xa8, 0xab, 0x73, 0xe8, 0x84, 0xcc, 0x6b, 0xff]),
    HSA_PROFILEBLOCK_AMD_TCP = (0xe10a013b, 0x17d4, 0x4bf5, [0xb0, 0x89, 0x42, 0x95, 0x91, 0x05, 0x9b, 0x60]),
    HSA_PROFILEBLOCK_AMD_TCS = (0x4126245c, 0x4d96, 0x4d1a, [0x8a, 0xed, 0xa9, 0x39, 0xd4, 0xcc, 0x8e, 0xc9]),
    HSA_PROFILEBLOCK_AMD_TD = (0x7d7c0fe4, 0xfe41, 0x4fea, [0x92, 0xc9, 0x45, 0x44, 0xd7, 0x70, 0x6d, 0xc6]),
    HSA_PROFILEBLOCK_AMD_VGT = (0x0b6a8cb7, 0x7a01, 0x409f, [0xa2, 0x2c, 0x30, 0x14, 0x85, 0x4f, 0x13, 0x59]),
    HSA_PROFILEBLOCK_AMD_WD = (0x0e176789, 0x46ed, 0x4b02, [0x97, 0x2a, 0x91, 0x6d, 0x2f, 0xac, 0x24, 0x4a]),
}

bitfield! {
    /// `HsaCounterFlags`.
    pub struct HsaCounterFlags { pub Value: HSAuint32 } "ui32." {
        Global: 1,
        Resettable: 1,
        ReadOnly: 1,
        Stream: 1,
        Reserved: 28,
    }
}

/// `HsaCounter`.
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy, Default)]
pub struct HsaCounter {
    /// Counter type.
    pub Type: HSA_PROFILE_TYPE,
    /// Register offset.
    pub CounterId: HSAuint64,
    /// Relevant bits.
    pub CounterSizeInBits: HSAuint32,
    /// Value mask.
    pub CounterMask: HSAuint64,
    /// Flags.
    pub Flags: HsaCounterFlags,
    /// Block index.
    pub BlockIndex: HSAuint32,
}

/// `HsaCounterBlockProperties` (variable length: `NumCounters` counters).
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy, Default)]
pub struct HsaCounterBlockProperties {
    /// The block.
    pub BlockId: HSA_UUID,
    /// Counters that follow.
    pub NumCounters: HSAuint32,
    /// Counter slots.
    pub NumConcurrent: HSAuint32,
    /// First counter.
    pub Counters: [HsaCounter; 1],
}

/// `HsaCounterProperties` (variable length: `NumBlocks` blocks).
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy, Default)]
pub struct HsaCounterProperties {
    /// Blocks that follow.
    pub NumBlocks: HSAuint32,
    /// Block slots.
    pub NumConcurrent: HSAuint32,
    /// First block.
    pub Blocks: [HsaCounterBlockProperties; 1],
}

/// `HSATraceId`.
pub type HSATraceId = HSAuint64;

/// `HsaPmcTraceRoot`.
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy, Default)]
pub struct HsaPmcTraceRoot {
    /// Minimum trace buffer size.
    pub TraceBufferMinSizeBytes: HSAuint64,
    /// Passes.
    pub NumberOfPasses: HSAuint32,
    /// The trace.
    pub TraceId: HSATraceId,
}

/// `HSA_SMI_EVENT_MSG_SIZE`
pub const HSA_SMI_EVENT_MSG_SIZE: u32 = 96;

/// `HSA_SMI_EVENT_MASK_FROM_INDEX(i)`: the mask bit of SMI event `i` (1..=64).
#[must_use]
pub const fn HSA_SMI_EVENT_MASK_FROM_INDEX(i: u64) -> u64 {
    1u64 << (i - 1)
}

/// `HsaPcSamplingTraceId`.
pub type HsaPcSamplingTraceId = HSAuint32;

/// `HsaPcSamplingInfo`.
#[repr(C, packed(4))]
#[derive(Debug, Clone, Copy, Default)]
pub struct HsaPcSamplingInfo {
    /// Interval.
    pub value: HSAuint64,
    /// Smallest interval.
    pub value_min: HSAuint64,
    /// Largest interval.
    pub value_max: HSAuint64,
    /// Flags.
    pub flags: HSAuint64,
    /// Method.
    pub method: HSA_PC_SAMPLING_METHOD_KIND,
    /// Interval unit.
    pub units: HSA_PC_SAMPLING_UNIT_INTERVAL,
}

c_enums! {
    fn describe_enums;

    /// `HSA_PROFILE_TYPE`
    pub enum HSA_PROFILE_TYPE: u32 {
        HSA_PROFILE_TYPE_PRIVILEGED_IMMEDIATE = 0,
        HSA_PROFILE_TYPE_PRIVILEGED_STREAMING = 1,
        HSA_PROFILE_TYPE_NONPRIV_IMMEDIATE = 2,
        HSA_PROFILE_TYPE_NONPRIV_STREAMING = 3,
        HSA_PROFILE_TYPE_NUM = 4,
        HSA_PROFILE_TYPE_SIZE = 0xFFFF_FFFF,
    }

    /// `HSA_EVENT_TYPE`: SMI event kinds (C tag `_HSA_SMI_EVENT`).
    pub enum HSA_EVENT_TYPE: u32 {
        HSA_SMI_EVENT_NONE = 0,
        HSA_SMI_EVENT_VMFAULT = 1,
        HSA_SMI_EVENT_THERMAL_THROTTLE = 2,
        HSA_SMI_EVENT_GPU_PRE_RESET = 3,
        HSA_SMI_EVENT_GPU_POST_RESET = 4,
        HSA_SMI_EVENT_MIGRATE_START = 5,
        HSA_SMI_EVENT_MIGRATE_END = 6,
        HSA_SMI_EVENT_PAGE_FAULT_START = 7,
        HSA_SMI_EVENT_PAGE_FAULT_END = 8,
        HSA_SMI_EVENT_QUEUE_EVICTION = 9,
        HSA_SMI_EVENT_QUEUE_RESTORE = 10,
        HSA_SMI_EVENT_UNMAP_FROM_GPU = 11,
        HSA_SMI_EVENT_INDEX_MAX = 12,
        HSA_SMI_EVENT_ALL_PROCESS = 64,
    }

    /// `HSA_MIGRATE_TRIGGERS`
    pub enum HSA_MIGRATE_TRIGGERS: u32 {
        HSA_MIGRATE_TRIGGER_PREFETCH = 0,
        HSA_MIGRATE_TRIGGER_PAGEFAULT_GPU = 1,
        HSA_MIGRATE_TRIGGER_PAGEFAULT_CPU = 2,
        HSA_MIGRATE_TRIGGER_TTM_EVICTION = 3,
    }

    /// `HSA_QUEUE_EVICTION_TRIGGERS`
    pub enum HSA_QUEUE_EVICTION_TRIGGERS: u32 {
        HSA_QUEUE_EVICTION_TRIGGER_SVM = 0,
        HSA_QUEUE_EVICTION_TRIGGER_USERPTR = 1,
        HSA_QUEUE_EVICTION_TRIGGER_TTM = 2,
        HSA_QUEUE_EVICTION_TRIGGER_SUSPEND = 3,
        HSA_QUEUE_EVICTION_CRIU_CHECKPOINT = 4,
        HSA_QUEUE_EVICTION_CRIU_RESTORE = 5,
    }

    /// `HSA_SVM_UNMAP_TRIGGERS`
    pub enum HSA_SVM_UNMAP_TRIGGERS: u32 {
        HSA_SVM_UNMAP_TRIGGER_MMU_NOTIFY = 0,
        HSA_SVM_UNMAP_TRIGGER_MMU_NOTIFY_MIGRATE = 1,
        HSA_SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU = 2,
    }

    /// `HSA_PC_SAMPLING_METHOD_KIND`
    pub enum HSA_PC_SAMPLING_METHOD_KIND: u32 {
        HSA_PC_SAMPLING_METHOD_KIND_HOSTTRAP_V1 = 1,
        HSA_PC_SAMPLING_METHOD_KIND_STOCHASTIC_V1 = 2,
    }

    /// `HSA_PC_SAMPLING_UNIT_INTERVAL` (C tag `_HSA_PC_SAMPLING_UNITS`)
    pub enum HSA_PC_SAMPLING_UNIT_INTERVAL: u32 {
        HSA_PC_SAMPLING_UNIT_INTERVAL_MICROSECONDS = 0,
        HSA_PC_SAMPLING_UNIT_INTERVAL_CYCLES = 1,
        HSA_PC_SAMPLING_UNIT_INTERVAL_INSTRUCTIONS = 2,
    }
}

/// Adds this module's rows.
pub(crate) fn describe(d: &mut Description) {
    describe_enums(d);
    describe_uuids(d);
    scalars!(d, HSATraceId, HsaPcSamplingTraceId);
    constants!(d, HSA_SMI_EVENT_MSG_SIZE);
    d.macros.push(MacroRow {
        name: "HSA_SMI_EVENT_MASK_FROM_INDEX",
        eval: HSA_SMI_EVENT_MASK_FROM_INDEX,
        first: 1,
        last: 64,
    });
    layout!(d, HSA_UUID { Data1, Data2, Data3, Data4 });
    HsaCounterFlags::describe(d);
    layout!(d, HsaCounter { Type, CounterId, CounterSizeInBits, CounterMask, Flags, BlockIndex });
    layout!(d, HsaCounterBlockProperties { BlockId, NumCounters, NumConcurrent, Counters });
    layout!(d, HsaCounterProperties { NumBlocks, NumConcurrent, Blocks });
    layout!(d, HsaPmcTraceRoot { TraceBufferMinSizeBytes, NumberOfPasses, TraceId });
    layout!(d, HsaPcSamplingInfo { value, value_min, value_max, flags, method, units });
}
