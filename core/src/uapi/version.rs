//! The KFD interface version and which minor version introduced what.
//!
//! amdkfd reports `major.minor` through `AMDKFD_IOC_GET_VERSION`. The major version has been 1
//! for every kernel; each minor bump marks an addition (the header's changelog). Gate an optional
//! feature on the version a kernel reports:
//!
//! ```
//! use hsakmt_core::uapi::{KfdVersion, since};
//!
//! let kernel = KfdVersion::new(1, 14); // from AMDKFD_IOC_GET_VERSION
//! assert!(kernel.supports(since::EVENT_AGE));
//! assert!(!kernel.supports(since::ALLOC_MEM_FLAGS_CONTIGUOUS));
//! ```
//!
//! Some additions came without a version bump (for example `KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT`,
//! the SMI `PROCESS_START`/`PROCESS_END` events, `kfd_dbg_device_info_entry::capability2`); their
//! documentation says so, and they cannot be gated on the version — try them and handle the
//! kernel's `EINVAL`.

use core::fmt;

use super::consts::{KFD_IOCTL_MAJOR_VERSION, KFD_IOCTL_MINOR_VERSION};
use super::ioctl::{IoctlInfo, kfd_ioctl_get_version_args};

/// A KFD interface version, as reported by `AMDKFD_IOC_GET_VERSION`.
///
/// Ordered by major, then minor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct KfdVersion {
    /// Major version; only 1 is known.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl KfdVersion {
    /// The version of the headers this crate mirrors (1.23).
    pub const CURRENT: Self =
        Self { major: KFD_IOCTL_MAJOR_VERSION, minor: KFD_IOCTL_MINOR_VERSION };

    /// A version from its parts.
    #[must_use]
    pub const fn new(major: u32, minor: u32) -> Self {
        Self { major, minor }
    }

    /// The version in a `AMDKFD_IOC_GET_VERSION` result.
    #[must_use]
    pub const fn from_args(args: &kfd_ioctl_get_version_args) -> Self {
        Self { major: args.major_version, minor: args.minor_version }
    }

    /// Whether the major version is the one this crate speaks (1); libhsakmt refuses others
    /// with `HSAKMT_STATUS_DRIVER_MISMATCH`.
    #[must_use]
    pub const fn is_compatible(self) -> bool {
        self.major == KFD_IOCTL_MAJOR_VERSION
    }

    /// Whether this is a compatible version with at least minor version `minor` — the check
    /// libhsakmt spells `CHECK_KFD_MINOR_VERSION(minor)`. Pass a [`since`] constant.
    #[must_use]
    pub const fn supports(self, minor: u32) -> bool {
        self.is_compatible() && self.minor >= minor
    }

    /// Whether a kernel of this version implements `ioctl`.
    #[must_use]
    pub const fn supports_ioctl(self, ioctl: &IoctlInfo) -> bool {
        self.supports(ioctl.since_minor)
    }
}

impl From<kfd_ioctl_get_version_args> for KfdVersion {
    fn from(args: kfd_ioctl_get_version_args) -> Self {
        Self::from_args(&args)
    }
}

impl fmt::Display for KfdVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The KFD minor version that introduced each later addition to the interface, for
/// [`KfdVersion::supports`]. Names follow the header's changelog; the uapi items each one
/// covers are listed on the constant.
pub mod since {
    /// 1.1: the first entry of the header's changelog. The ioctls up to
    /// `AMDKFD_IOC_ALLOC_QUEUE_GWS` (0x1E) arrived before or without version bumps; the
    /// [`IOCTLS`](super::super::IOCTLS) table records them as minor 0.
    pub const INITIAL: u32 = 1;
    /// 1.3: SMI events — `AMDKFD_IOC_SMI_EVENTS`, `kfd_ioctl_smi_events_args`,
    /// `KFD_SMI_EVENT_VMFAULT` … `KFD_SMI_EVENT_GPU_POST_RESET`.
    pub const SMI_EVENTS: u32 = 3;
    /// 1.4: the new SRAM EDC bit in node properties, `HSA_CAP_SRAM_EDCSUPPORTED`.
    pub const SRAM_EDC: u32 = 4;
    /// 1.5: the SVM API — `AMDKFD_IOC_SVM`, `kfd_ioctl_svm_args`, `KFD_IOCTL_SVM_*`, and
    /// `AMDKFD_IOC_SET_XNACK_MODE`, which came with it.
    pub const SVM: u32 = 5;
    /// 1.6: `KFD_IOCTL_SVM_ATTR_CLR_FLAGS` can be queried with `KFD_IOCTL_SVM_OP_GET_ATTR`.
    pub const SVM_GET_ATTR_CLR_FLAGS: u32 = 6;
    /// 1.7: checkpoint/restore — `AMDKFD_IOC_CRIU_OP`, `kfd_ioctl_criu_args`, `KFD_CRIU_OP_*`,
    /// the CRIU buckets.
    pub const CRIU: u32 = 7;
    /// 1.8: CRIU supports SDMA transfers with GTT buffer objects.
    pub const CRIU_SDMA_GTT: u32 = 8;
    /// 1.9: `AMDKFD_IOC_AVAILABLE_MEMORY`, `kfd_ioctl_get_available_memory_args`.
    pub const AVAILABLE_MEMORY: u32 = 9;
    /// 1.10: the SMI profiler event log — `KFD_SMI_EVENT_MIGRATE_START` …
    /// `KFD_SMI_EVENT_UNMAP_FROM_GPU`, `KFD_SMI_EVENT_ALL_PROCESS` and the trigger enums.
    pub const SMI_PROFILER_EVENTS: u32 = 10;
    /// 1.11: unified memory for the context save/restore area.
    pub const UNIFIED_CTX_SAVE_AREA: u32 = 11;
    /// 1.12: `AMDKFD_IOC_EXPORT_DMABUF`, `kfd_ioctl_export_dmabuf_args`.
    pub const EXPORT_DMABUF: u32 = 12;
    /// 1.13: the debugger API — `AMDKFD_IOC_RUNTIME_ENABLE`, `AMDKFD_IOC_DBG_TRAP`, the
    /// `kfd_dbg_trap_*` enums and structs, `EC_*` codes, `kfd_runtime_info`,
    /// `kfd_queue_snapshot_entry`, `kfd_dbg_device_info_entry`, `kfd_context_save_area_header`;
    /// the `HSA_CAP_TRAP_DEBUG_*` bits and the sysfs `debug_prop` (`HSA_DBG_*`).
    pub const DEBUGGER: u32 = 13;
    /// 1.14: event age — `kfd_event_data` gains `signal_event_data`
    /// (`kfd_hsa_signal_event_data::last_event_age`).
    pub const EVENT_AGE: u32 = 14;
    /// 1.15: mappings in compute VMs can be managed with the DRM `GEM_VA` ioctl (behaviour
    /// only).
    pub const GEM_VA: u32 = 15;
    /// 1.16: `KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS`.
    pub const ALLOC_MEM_FLAGS_CONTIGUOUS: u32 = 16;
    /// 1.17: SDMA queues on a chosen engine — `KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID`,
    /// `kfd_ioctl_create_queue_args::sdma_engine_id` (and the sysfs io_link
    /// `recommended_sdma_engine_id_mask`).
    pub const QUEUE_TYPE_SDMA_BY_ENG_ID: u32 = 17;
    /// 1.17: `kfd_ioctl_create_queue_args::sdma_engine_id` (same as
    /// [`QUEUE_TYPE_SDMA_BY_ENG_ID`]).
    pub const CREATE_QUEUE_SDMA_ENGINE_ID: u32 = 17;
    /// 1.18: `kfd_ioctl_set_memory_policy_args::misc_process_flag` (was `pad`) and
    /// `KFD_PROC_FLAG_MFMA_HIGH_PRECISION`.
    pub const MISC_PROCESS_FLAG: u32 = 18;
    /// 1.19: `AMDKFD_IOC_CREATE_PROCESS` (secondary KFD process contexts).
    pub const CREATE_PROCESS: u32 = 19;
    /// 1.20: the trap handler supports expert scheduling mode (capability signal only).
    pub const EXPERT_SCHEDULING_TRAP: u32 = 20;
    /// 1.21: `KFD_DBG_TRAP_FLAG_LDS_OUT_OF_ADDR_RANGE` and
    /// `HSA_CAP2_TRAP_DEBUG_LDS_OUT_OF_ADDR_RANGE_SUPPORTED`.
    pub const DBG_LDS_OUT_OF_ADDR_RANGE: u32 = 21;
    /// 1.22: `kfd_ioctl_create_queue_args::metadata_ring_size`.
    pub const CREATE_QUEUE_METADATA_RING_SIZE: u32 = 22;
    /// 1.23: `AMDKFD_IOC_PROFILER`, `kfd_ioctl_profiler_args`, `kfd_ioctl_pmc_settings`,
    /// `kfd_ioctl_ptl_control`, `KFD_IOC_PROFILER_*`.
    pub const PROFILER: u32 = 23;
}
