//! Typed exception data: what the kernel copies into `kfd_event_data` for memory-fault and
//! HW-exception events, decoded the way libhsakmt fills `HsaMemoryAccessFault` and
//! `HsaHwException`.

use crate::event::EventType;
use crate::uapi::{
    self, kfd_event_data, kfd_hsa_hw_exception_data, kfd_hsa_memory_exception_data,
    kfd_memory_exception_failure,
};

bitflags::bitflags! {
    /// Why a GPU memory access faulted (`kfd_memory_exception_failure`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct FaultFlags: u8 {
        /// The page is not present (or needs supervisor privilege).
        const NOT_PRESENT = 1 << 0;
        /// A write to a read-only page.
        const READ_ONLY = 1 << 1;
        /// An instruction fetch from a no-execute page.
        const NO_EXECUTE = 1 << 2;
        /// The exact fault address is unknown (`imprecise`).
        const IMPRECISE = 1 << 3;
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for FaultFlags {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "FaultFlags({=u8:#x})", self.bits());
    }
}

/// The RAS error behind a memory fault (`ErrorType`, `KFD_MEM_ERR_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MemoryError {
    /// No RAS error: an ordinary page fault.
    None,
    /// An SRAM ECC error.
    SramEcc,
    /// Poisoned data was consumed (link SYNFLOOD).
    PoisonConsumed,
    /// A GPU hang not attributable to a specific cause.
    GpuHang,
    /// A value the header reserves.
    Reserved(u32),
}

impl MemoryError {
    /// The `ErrorType` value.
    #[must_use]
    pub const fn code(self) -> u32 {
        match self {
            Self::None => uapi::KFD_MEM_ERR_NO_RAS,
            Self::SramEcc => uapi::KFD_MEM_ERR_SRAM_ECC,
            Self::PoisonConsumed => uapi::KFD_MEM_ERR_POISON_CONSUMED,
            Self::GpuHang => uapi::KFD_MEM_ERR_GPU_HANG,
            Self::Reserved(v) => v,
        }
    }

    /// The error for `ErrorType` value `code`.
    #[must_use]
    pub const fn from_code(code: u32) -> Self {
        match code {
            uapi::KFD_MEM_ERR_NO_RAS => Self::None,
            uapi::KFD_MEM_ERR_SRAM_ECC => Self::SramEcc,
            uapi::KFD_MEM_ERR_POISON_CONSUMED => Self::PoisonConsumed,
            uapi::KFD_MEM_ERR_GPU_HANG => Self::GpuHang,
            v => Self::Reserved(v),
        }
    }

    /// Whether libhsakmt reports this error as an ECC failure (`Failure.ECC`: SRAM ECC or
    /// poison).
    #[must_use]
    pub const fn is_ecc(self) -> bool {
        matches!(self, Self::SramEcc | Self::PoisonConsumed)
    }
}

/// A GPU memory access fault (a `KFD_IOC_EVENT_MEMORY` event's data).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MemoryFault {
    /// The GPU that faulted.
    pub gpu_id: u32,
    /// Its node (libhsakmt's node id), when the topology knows the GPU.
    pub node: Option<u32>,
    /// The faulting virtual address (page granular; meaningless when imprecise).
    pub address: u64,
    /// Why the access faulted.
    pub flags: FaultFlags,
    /// The RAS error, if any.
    pub error: MemoryError,
    /// Whether the fault ends the process's GPU context. Every memory exception amdkfd reports
    /// is fatal to the process (libhsakmt reports `HSA_EVENTID_MEMORY_FATAL_PROCESS`; the
    /// kernel also sends `SIGSEGV`/`SIGBUS`).
    pub fatal: bool,
}

impl MemoryFault {
    /// Whether libhsakmt would set `Failure.ECC`.
    #[must_use]
    pub const fn is_ecc(&self) -> bool {
        self.error.is_ecc()
    }

    /// The kernel's form of this fault (for simulators and tests).
    #[must_use]
    pub fn to_kernel(&self) -> kfd_hsa_memory_exception_data {
        kfd_hsa_memory_exception_data {
            failure: kfd_memory_exception_failure {
                NotPresent: u32::from(self.flags.contains(FaultFlags::NOT_PRESENT)),
                ReadOnly: u32::from(self.flags.contains(FaultFlags::READ_ONLY)),
                NoExecute: u32::from(self.flags.contains(FaultFlags::NO_EXECUTE)),
                imprecise: u32::from(self.flags.contains(FaultFlags::IMPRECISE)),
            },
            va: self.address,
            gpu_id: self.gpu_id,
            ErrorType: self.error.code(),
        }
    }
}

/// How a GPU was reset (`reset_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ResetType {
    /// The whole GPU was reset.
    WholeGpu,
    /// One engine was reset.
    PerEngine,
    /// A value this library does not know.
    Other(u32),
}

impl ResetType {
    /// The `KFD_HW_EXCEPTION_*` reset type value.
    #[must_use]
    pub const fn code(self) -> u32 {
        match self {
            Self::WholeGpu => uapi::KFD_HW_EXCEPTION_WHOLE_GPU_RESET,
            Self::PerEngine => uapi::KFD_HW_EXCEPTION_PER_ENGINE_RESET,
            Self::Other(v) => v,
        }
    }

    /// The reset type for value `code`.
    #[must_use]
    pub const fn from_code(code: u32) -> Self {
        match code {
            uapi::KFD_HW_EXCEPTION_WHOLE_GPU_RESET => Self::WholeGpu,
            uapi::KFD_HW_EXCEPTION_PER_ENGINE_RESET => Self::PerEngine,
            v => Self::Other(v),
        }
    }
}

/// Why a GPU was reset (`reset_cause`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ResetCause {
    /// The GPU hung.
    GpuHang,
    /// An uncorrectable ECC error.
    Ecc,
    /// A value this library does not know.
    Other(u32),
}

impl ResetCause {
    /// The `KFD_HW_EXCEPTION_*` cause value.
    #[must_use]
    pub const fn code(self) -> u32 {
        match self {
            Self::GpuHang => uapi::KFD_HW_EXCEPTION_GPU_HANG,
            Self::Ecc => uapi::KFD_HW_EXCEPTION_ECC,
            Self::Other(v) => v,
        }
    }

    /// The cause for value `code`.
    #[must_use]
    pub const fn from_code(code: u32) -> Self {
        match code {
            uapi::KFD_HW_EXCEPTION_GPU_HANG => Self::GpuHang,
            uapi::KFD_HW_EXCEPTION_ECC => Self::Ecc,
            v => Self::Other(v),
        }
    }
}

/// A GPU reset (a `KFD_IOC_EVENT_HW_EXCEPTION` event's data).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HwException {
    /// The GPU that was reset.
    pub gpu_id: u32,
    /// Its node (libhsakmt's node id), when the topology knows the GPU.
    pub node: Option<u32>,
    /// Whole GPU or one engine.
    pub reset: ResetType,
    /// Why.
    pub cause: ResetCause,
    /// Whether the contents of GPU memory were lost.
    pub memory_lost: bool,
}

impl HwException {
    /// The kernel's form of this exception (for simulators and tests).
    #[must_use]
    pub const fn to_kernel(&self) -> kfd_hsa_hw_exception_data {
        kfd_hsa_hw_exception_data {
            reset_type: self.reset.code(),
            reset_cause: self.cause.code(),
            memory_lost: self.memory_lost as u32,
            gpu_id: self.gpu_id,
        }
    }
}

/// The data a fired event carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum EventData {
    /// A memory access fault.
    MemoryFault(MemoryFault),
    /// A GPU reset.
    HwException(HwException),
}

/// Decodes the exception data the kernel copied into `data` for an event of type `event_type`,
/// mapping `gpu_id` to a node with `node_of`.
///
/// Returns `None` when there is none: other event types, or a `gpu_id` of 0 (the kernel copies
/// data only for events the wait activated, and libhsakmt treats `gpu_id == 0` as "no data").
#[must_use]
pub fn decode(
    event_type: EventType,
    data: &kfd_event_data,
    node_of: impl Fn(u32) -> Option<u32>,
) -> Option<EventData> {
    match event_type {
        EventType::Memory => {
            let m = data.data.memory_exception_data();
            if m.gpu_id == 0 {
                return None;
            }
            let mut flags = FaultFlags::empty();
            flags.set(FaultFlags::NOT_PRESENT, m.failure.NotPresent != 0);
            flags.set(FaultFlags::READ_ONLY, m.failure.ReadOnly != 0);
            flags.set(FaultFlags::NO_EXECUTE, m.failure.NoExecute != 0);
            flags.set(FaultFlags::IMPRECISE, m.failure.imprecise != 0);
            Some(EventData::MemoryFault(MemoryFault {
                gpu_id: m.gpu_id,
                node: node_of(m.gpu_id),
                address: m.va,
                flags,
                error: MemoryError::from_code(m.ErrorType),
                fatal: true,
            }))
        }
        EventType::HwException => {
            let h = data.data.hw_exception_data();
            if h.gpu_id == 0 {
                return None;
            }
            Some(EventData::HwException(HwException {
                gpu_id: h.gpu_id,
                node: node_of(h.gpu_id),
                reset: ResetType::from_code(h.reset_type),
                cause: ResetCause::from_code(h.reset_cause),
                memory_lost: h.memory_lost != 0,
            }))
        }
        _ => None,
    }
}
