//! Shared virtual memory attributes (`AMDKFD_IOC_SVM`, KFD 1.5): the typed form of libhsakmt's
//! `HSA_SVM_ATTRIBUTE` arrays, with topology node ids where the kernel takes gpu_ids.
//!
//! The kernel's attribute is a `(type, value)` pair whose value is a gpu_id, a flag mask or a
//! granularity depending on the type; [`SvmAttribute`] makes that explicit. The device facade
//! translates node ids to gpu_ids on the way in and back on the way out
//! (`Kfd::svm_set_attributes`, `Kfd::svm_get_attributes`).

use crate::uapi::*;

bitflags::bitflags! {
    /// `KFD_IOCTL_SVM_FLAG_*`: per-range behaviour flags.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct SvmFlags: u32 {
        /// Guarantee host access to the memory.
        const HOST_ACCESS = KFD_IOCTL_SVM_FLAG_HOST_ACCESS;
        /// Fine-grained coherency between all devices with access.
        const COHERENT = KFD_IOCTL_SVM_FLAG_COHERENT;
        /// Use any GPU in the same hive as the preferred device.
        const HIVE_LOCAL = KFD_IOCTL_SVM_FLAG_HIVE_LOCAL;
        /// GPUs only read (allows replication).
        const GPU_RO = KFD_IOCTL_SVM_FLAG_GPU_RO;
        /// Allow execution on the GPU.
        const GPU_EXEC = KFD_IOCTL_SVM_FLAG_GPU_EXEC;
        /// GPUs mostly read.
        const GPU_READ_MOSTLY = KFD_IOCTL_SVM_FLAG_GPU_READ_MOSTLY;
        /// Keep the GPU mapping always valid, as if XNACK were off.
        const GPU_ALWAYS_MAPPED = KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED;
        /// Fine-grained coherency using device-scope atomics.
        const EXT_COHERENT = KFD_IOCTL_SVM_FLAG_EXT_COHERENT;
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for SvmFlags {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "SvmFlags({=u32:#x})", self.bits());
    }
}

/// A preferred or prefetch location.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SvmLocation {
    /// System memory (`KFD_IOCTL_SVM_LOCATION_SYSMEM`; a CPU node translates to it).
    System,
    /// No preference; from a query, also "differs across the range"
    /// (`KFD_IOCTL_SVM_LOCATION_UNDEFINED`).
    Undefined,
    /// A GPU node's memory.
    Node(u32),
}

/// One SVM attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SvmAttribute {
    /// `KFD_IOCTL_SVM_ATTR_PREFERRED_LOC`.
    PreferredLocation(SvmLocation),
    /// `KFD_IOCTL_SVM_ATTR_PREFETCH_LOC` (setting it migrates the range).
    PrefetchLocation(SvmLocation),
    /// `KFD_IOCTL_SVM_ATTR_ACCESS`: the GPU node may access the range. In a query, name the
    /// node with any of the three access variants; the answer replaces it with the one that
    /// holds.
    Access(u32),
    /// `KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE`: the GPU node accesses the range in place.
    AccessInPlace(u32),
    /// `KFD_IOCTL_SVM_ATTR_NO_ACCESS`: the GPU node may not access the range.
    NoAccess(u32),
    /// `KFD_IOCTL_SVM_ATTR_SET_FLAGS`: flags to set; a query answers the flags set on the
    /// whole range (bits this crate does not name are dropped).
    SetFlags(SvmFlags),
    /// `KFD_IOCTL_SVM_ATTR_CLR_FLAGS`: flags to clear; a query answers the flags clear on the
    /// whole range (bits this crate does not name are dropped).
    ClearFlags(SvmFlags),
    /// `KFD_IOCTL_SVM_ATTR_GRANULARITY`: migration granularity, log2 of pages (the kernel caps
    /// it at 63).
    Granularity(u32),
}

pub use crate::config::MAX_SVM_ATTRIBUTES;
