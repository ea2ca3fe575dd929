//! The structs and request codes of `kfd_ioctl.h`, and the generic Linux `_IOC` encoding.
//!
//! Struct and field names are exactly the C names. Direction notes follow the header: "to KFD"
//! fields are read by the kernel, "from KFD" fields are written by it.
#![expect(non_snake_case, reason = "uapi names (fields, _IOC macros) keep their C spelling")]

use core::mem::size_of;

use super::consts::{
    AMDKFD_COMMAND_END, AMDKFD_COMMAND_START, AMDKFD_IOCTL_BASE, NUM_OF_SUPPORTED_GPUS,
};
use super::layout::{FunctionMacro, MacroKind};
use super::version::{KfdVersion, since};

// ---------------------------------------------------------------------------------------------
// <linux/ioctl.h>: the request-code encoding
// ---------------------------------------------------------------------------------------------

#[cfg(any(
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "mips32r6",
    target_arch = "mips64r6",
    target_arch = "sparc",
    target_arch = "sparc64"
))]
mod arch {
    pub(super) const SIZEBITS: u32 = 13;
    pub(super) const DIRBITS: u32 = 3;
    pub(super) const NONE: u32 = 1;
    pub(super) const READ: u32 = 2;
    pub(super) const WRITE: u32 = 4;
}

#[cfg(not(any(
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "mips32r6",
    target_arch = "mips64r6",
    target_arch = "sparc",
    target_arch = "sparc64"
)))]
mod arch {
    pub(super) const SIZEBITS: u32 = 14;
    pub(super) const DIRBITS: u32 = 2;
    pub(super) const NONE: u32 = 0;
    pub(super) const READ: u32 = 2;
    pub(super) const WRITE: u32 = 1;
}

/// Bits of the command-number field of a request code.
pub const _IOC_NRBITS: u32 = 8;
/// Bits of the type ("magic") field.
pub const _IOC_TYPEBITS: u32 = 8;
/// Bits of the argument-size field (14 in `asm-generic/ioctl.h`; 13 on powerpc, mips, sparc).
pub const _IOC_SIZEBITS: u32 = arch::SIZEBITS;
/// Bits of the direction field (2 generic; 3 on powerpc, mips, sparc).
pub const _IOC_DIRBITS: u32 = arch::DIRBITS;
/// Mask of the command-number field (after shifting).
pub const _IOC_NRMASK: u32 = (1 << _IOC_NRBITS) - 1;
/// Mask of the type field (after shifting).
pub const _IOC_TYPEMASK: u32 = (1 << _IOC_TYPEBITS) - 1;
/// Mask of the size field (after shifting).
pub const _IOC_SIZEMASK: u32 = (1 << _IOC_SIZEBITS) - 1;
/// Mask of the direction field (after shifting).
pub const _IOC_DIRMASK: u32 = (1 << _IOC_DIRBITS) - 1;
/// Position of the command-number field.
pub const _IOC_NRSHIFT: u32 = 0;
/// Position of the type field.
pub const _IOC_TYPESHIFT: u32 = _IOC_NRSHIFT + _IOC_NRBITS;
/// Position of the size field.
pub const _IOC_SIZESHIFT: u32 = _IOC_TYPESHIFT + _IOC_TYPEBITS;
/// Position of the direction field.
pub const _IOC_DIRSHIFT: u32 = _IOC_SIZESHIFT + _IOC_SIZEBITS;
/// Direction: no argument is copied.
pub const _IOC_NONE: u32 = arch::NONE;
/// Direction bit: user space writes the argument (the kernel copies it in).
pub const _IOC_WRITE: u32 = arch::WRITE;
/// Direction bit: user space reads the argument (the kernel copies it out).
pub const _IOC_READ: u32 = arch::READ;

/// `_IOC(dir, type, nr, size)`: assembles a request code.
///
/// Fields wider than their bit width are masked, so the function is total.
#[must_use]
pub const fn _IOC(dir: u32, ty: u32, nr: u32, size: u32) -> u32 {
    ((dir & _IOC_DIRMASK) << _IOC_DIRSHIFT)
        | ((ty & _IOC_TYPEMASK) << _IOC_TYPESHIFT)
        | ((nr & _IOC_NRMASK) << _IOC_NRSHIFT)
        | ((size & _IOC_SIZEMASK) << _IOC_SIZESHIFT)
}

/// `sizeof(T)` as an `_IOC` size; a type too large for the size field fails to compile.
const fn ioc_size<T>() -> u32 {
    const {
        assert!(size_of::<T>() <= _IOC_SIZEMASK as usize, "type too large for an ioctl size");
    }
    size_of::<T>() as u32
}

/// `_IO(type, nr)`: a request without an argument.
#[must_use]
pub const fn _IO(ty: u32, nr: u32) -> u32 {
    _IOC(_IOC_NONE, ty, nr, 0)
}

/// `_IOR(type, nr, T)`: the kernel writes a `T` back to user space.
#[must_use]
pub const fn _IOR<T>(ty: u32, nr: u32) -> u32 {
    _IOC(_IOC_READ, ty, nr, ioc_size::<T>())
}

/// `_IOW(type, nr, T)`: the kernel reads a `T` from user space.
#[must_use]
pub const fn _IOW<T>(ty: u32, nr: u32) -> u32 {
    _IOC(_IOC_WRITE, ty, nr, ioc_size::<T>())
}

/// `_IOWR(type, nr, T)`: the kernel reads a `T` and writes it back.
#[must_use]
pub const fn _IOWR<T>(ty: u32, nr: u32) -> u32 {
    _IOC(_IOC_READ | _IOC_WRITE, ty, nr, ioc_size::<T>())
}

/// `_IOC_DIR(request)`: the direction bits.
#[must_use]
pub const fn _IOC_DIR(request: u32) -> u32 {
    (request >> _IOC_DIRSHIFT) & _IOC_DIRMASK
}

/// `_IOC_TYPE(request)`: the type ("magic") byte.
#[must_use]
pub const fn _IOC_TYPE(request: u32) -> u32 {
    (request >> _IOC_TYPESHIFT) & _IOC_TYPEMASK
}

/// `_IOC_NR(request)`: the command number — all amdkfd dispatches on.
#[must_use]
pub const fn _IOC_NR(request: u32) -> u32 {
    (request >> _IOC_NRSHIFT) & _IOC_NRMASK
}

/// `_IOC_SIZE(request)`: the argument size — the number of bytes amdkfd copies in and out.
#[must_use]
pub const fn _IOC_SIZE(request: u32) -> u32 {
    (request >> _IOC_SIZESHIFT) & _IOC_SIZEMASK
}

/// `AMDKFD_IO(nr)`: an amdkfd request without an argument.
#[must_use]
pub const fn AMDKFD_IO(nr: u32) -> u32 {
    _IO(AMDKFD_IOCTL_BASE, nr)
}

/// `AMDKFD_IOR(nr, T)`: an amdkfd request whose argument the kernel writes.
#[must_use]
pub const fn AMDKFD_IOR<T>(nr: u32) -> u32 {
    _IOR::<T>(AMDKFD_IOCTL_BASE, nr)
}

/// `AMDKFD_IOW(nr, T)`: an amdkfd request whose argument the kernel reads.
#[must_use]
pub const fn AMDKFD_IOW<T>(nr: u32) -> u32 {
    _IOW::<T>(AMDKFD_IOCTL_BASE, nr)
}

/// `AMDKFD_IOWR(nr, T)`: an amdkfd request whose argument the kernel reads and writes.
#[must_use]
pub const fn AMDKFD_IOWR<T>(nr: u32) -> u32 {
    _IOWR::<T>(AMDKFD_IOCTL_BASE, nr)
}

/// The request-code constructors as [`FunctionMacro`]s (evaluated with `T = u64`).
pub(crate) const IOCTL_H_REQUEST_MACROS: &[FunctionMacro] = &[
    FunctionMacro { name: "AMDKFD_IO", kind: MacroKind::Request { eval: AMDKFD_IO } },
    FunctionMacro { name: "AMDKFD_IOR", kind: MacroKind::Request { eval: AMDKFD_IOR::<u64> } },
    FunctionMacro { name: "AMDKFD_IOW", kind: MacroKind::Request { eval: AMDKFD_IOW::<u64> } },
    FunctionMacro { name: "AMDKFD_IOWR", kind: MacroKind::Request { eval: AMDKFD_IOWR::<u64> } },
];

// ---------------------------------------------------------------------------------------------
// Argument structs
// ---------------------------------------------------------------------------------------------

uapi_structs! {
    /// Argument of [`AMDKFD_IOC_GET_VERSION`]: the KFD ioctl interface version.
    pub struct kfd_ioctl_get_version_args {
        /// Interface major version (from KFD); 1 for every amdkfd so far.
        pub major_version: u32,
        /// Interface minor version (from KFD); gates features, see [`since`].
        pub minor_version: u32,
    }

    /// Argument of [`AMDKFD_IOC_CREATE_QUEUE`].
    ///
    /// The struct grew over time (`sdma_engine_id` in 1.17, `metadata_ring_size` in 1.22);
    /// the kernel zero-fills what an older, smaller struct does not carry.
    pub struct kfd_ioctl_create_queue_args {
        /// GPU virtual address of the ring buffer (to KFD).
        pub ring_base_address: u64,
        /// Address of the queue's write pointer (to KFD; headers before 1.12 said "from KFD",
        /// but it always was a user address).
        pub write_pointer_address: u64,
        /// Address of the queue's read pointer (to KFD; user-provided like the write pointer).
        pub read_pointer_address: u64,
        /// `mmap` offset of the process doorbell page on `/dev/kfd` (from KFD); on SOC15 GPUs
        /// (gfx9 and later) the bits below the page size give this queue's doorbell byte offset.
        pub doorbell_offset: u64,
        /// Ring size in bytes (to KFD): a power of two (or 0); smaller than
        /// [`KFD_MIN_QUEUE_RING_SIZE`](super::KFD_MIN_QUEUE_RING_SIZE) is rounded up.
        pub ring_size: u32,
        /// Target GPU, the topology `gpu_id` (to KFD).
        pub gpu_id: u32,
        /// Queue type, one of `KFD_IOC_QUEUE_TYPE_*` (to KFD).
        pub queue_type: u32,
        /// Queue percentage 0..=[`KFD_MAX_QUEUE_PERCENTAGE`](super::KFD_MAX_QUEUE_PERCENTAGE)
        /// in bits 0..=7, 0 making the queue inactive (to KFD); recent kernels read bits 8..=15
        /// as the target XCC of PM4 queues.
        pub queue_percentage: u32,
        /// Queue priority 0..=[`KFD_MAX_QUEUE_PRIORITY`](super::KFD_MAX_QUEUE_PRIORITY)
        /// (to KFD).
        pub queue_priority: u32,
        /// Id of the new queue within the process (from KFD).
        pub queue_id: u32,
        /// GPU virtual address of the end-of-pipe buffer (to KFD).
        pub eop_buffer_address: u64,
        /// Size of the end-of-pipe buffer in bytes (to KFD).
        pub eop_buffer_size: u64,
        /// GPU virtual address of the context save/restore (CWSR) area (to KFD).
        pub ctx_save_restore_address: u64,
        /// Size of the context save/restore area in bytes (to KFD).
        pub ctx_save_restore_size: u32,
        /// Size of the control stack within the context save/restore area (to KFD).
        pub ctl_stack_size: u32,
        /// SDMA engine for `KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID` queues (to KFD; KFD 1.17).
        pub sdma_engine_id: u32,
        /// Size in bytes of the queue's metadata ring, 0 for none (to KFD; KFD 1.22).
        pub metadata_ring_size: u32,
    }

    /// Argument of [`AMDKFD_IOC_DESTROY_QUEUE`].
    pub struct kfd_ioctl_destroy_queue_args {
        /// Queue to destroy (to KFD).
        pub queue_id: u32,
        /// Padding.
        pub pad: u32,
    }

    /// Argument of [`AMDKFD_IOC_UPDATE_QUEUE`].
    pub struct kfd_ioctl_update_queue_args {
        /// New GPU virtual address of the ring buffer (to KFD).
        pub ring_base_address: u64,
        /// Queue to update (to KFD).
        pub queue_id: u32,
        /// New ring size in bytes (to KFD).
        pub ring_size: u32,
        /// New queue percentage (to KFD), as in `kfd_ioctl_create_queue_args`.
        pub queue_percentage: u32,
        /// New queue priority (to KFD).
        pub queue_priority: u32,
    }

    /// Argument of [`AMDKFD_IOC_SET_CU_MASK`].
    pub struct kfd_ioctl_set_cu_mask_args {
        /// Queue whose compute-unit mask is set (to KFD).
        pub queue_id: u32,
        /// Number of mask bits at `cu_mask_ptr` (to KFD); a multiple of 32.
        pub num_cu_mask: u32,
        /// User address of the CU mask, an array of `u32` words (to KFD).
        pub cu_mask_ptr: u64,
    }

    /// Argument of [`AMDKFD_IOC_GET_QUEUE_WAVE_STATE`].
    pub struct kfd_ioctl_get_queue_wave_state_args {
        /// User buffer receiving the queue's control stack (to KFD).
        pub ctl_stack_address: u64,
        /// Bytes of control stack in use (from KFD).
        pub ctl_stack_used_size: u32,
        /// Bytes of wave save area in use (from KFD).
        pub save_area_used_size: u32,
        /// Queue to query (to KFD).
        pub queue_id: u32,
        /// Padding.
        pub pad: u32,
    }

    /// Argument of [`AMDKFD_IOC_AVAILABLE_MEMORY`] (KFD 1.9).
    pub struct kfd_ioctl_get_available_memory_args {
        /// Bytes of VRAM still available to this process on the GPU (from KFD).
        pub available: u64,
        /// GPU to query (to KFD).
        pub gpu_id: u32,
        /// Padding.
        pub pad: u32,
    }

    /// One device entry of the debugger's device snapshot
    /// (`KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT`, KFD 1.13).
    pub struct kfd_dbg_device_info_entry {
        /// Raised exceptions of the device, a mask of `KFD_EC_MASK(EC_*)`.
        pub exception_status: u64,
        /// Base of the LDS aperture.
        pub lds_base: u64,
        /// Limit of the LDS aperture.
        pub lds_limit: u64,
        /// Base of the scratch aperture.
        pub scratch_base: u64,
        /// Limit of the scratch aperture.
        pub scratch_limit: u64,
        /// Base of the GPUVM aperture.
        pub gpuvm_base: u64,
        /// Limit of the GPUVM aperture.
        pub gpuvm_limit: u64,
        /// The device's topology `gpu_id`.
        pub gpu_id: u32,
        /// PCI location (bus << 8 | devfn), as sysfs `location_id`.
        pub location_id: u32,
        /// PCI vendor id.
        pub vendor_id: u32,
        /// PCI device id.
        pub device_id: u32,
        /// PCI revision id.
        pub revision_id: u32,
        /// PCI subsystem vendor id.
        pub subsystem_vendor_id: u32,
        /// PCI subsystem device id.
        pub subsystem_device_id: u32,
        /// MEC firmware version.
        pub fw_version: u32,
        /// GFX target version, decimal MMmmss as sysfs `gfx_target_version`.
        pub gfx_target_version: u32,
        /// Number of SIMDs.
        pub simd_count: u32,
        /// Maximum waves per SIMD.
        pub max_waves_per_simd: u32,
        /// Number of shader arrays.
        pub array_count: u32,
        /// Shader arrays per shader engine.
        pub simd_arrays_per_engine: u32,
        /// Number of XCCs.
        pub num_xcc: u32,
        /// `HSA_CAP_*` bits, as sysfs `capability`.
        pub capability: u32,
        /// `HSA_DBG_*` bits, as sysfs `debug_prop`.
        pub debug_prop: u32,
        /// `HSA_CAP2_*` bits, as sysfs `capability2` (added after 1.13 without a version bump).
        pub capability2: u32,
        /// Padding.
        pub pad: u32,
    }

    /// Argument of [`AMDKFD_IOC_SET_MEMORY_POLICY`].
    pub struct kfd_ioctl_set_memory_policy_args {
        /// Base of the alternate aperture (to KFD).
        pub alternate_aperture_base: u64,
        /// Size of the alternate aperture (to KFD).
        pub alternate_aperture_size: u64,
        /// GPU the policy applies to (to KFD).
        pub gpu_id: u32,
        /// Default cache policy, `KFD_IOC_CACHE_POLICY_*` (to KFD).
        pub default_policy: u32,
        /// Cache policy of the alternate aperture, `KFD_IOC_CACHE_POLICY_*` (to KFD).
        pub alternate_policy: u32,
        /// `KFD_PROC_FLAG_*` bits (to KFD; KFD 1.18, padding before).
        pub misc_process_flag: u32,
    }

    /// Argument of [`AMDKFD_IOC_GET_CLOCK_COUNTERS`]. All counters are monotonic and not
    /// affected by a GPU reset.
    pub struct kfd_ioctl_get_clock_counters_args {
        /// GPU timestamp counter (from KFD).
        pub gpu_clock_counter: u64,
        /// CPU timestamp (from KFD; `CLOCK_MONOTONIC_RAW` in ns on current kernels).
        pub cpu_clock_counter: u64,
        /// System timestamp (from KFD; `CLOCK_BOOTTIME` in ns on current kernels).
        pub system_clock_counter: u64,
        /// Frequency of `system_clock_counter` in Hz (from KFD).
        pub system_clock_freq: u64,
        /// GPU to sample (to KFD).
        pub gpu_id: u32,
        /// Padding.
        pub pad: u32,
    }

    /// The apertures of one GPU in the process address space.
    pub struct kfd_process_device_apertures {
        /// Base of the LDS aperture (from KFD).
        pub lds_base: u64,
        /// Limit of the LDS aperture (from KFD).
        pub lds_limit: u64,
        /// Base of the scratch aperture (from KFD).
        pub scratch_base: u64,
        /// Limit of the scratch aperture (from KFD).
        pub scratch_limit: u64,
        /// Base of the GPUVM aperture (from KFD).
        pub gpuvm_base: u64,
        /// Limit of the GPUVM aperture (from KFD).
        pub gpuvm_limit: u64,
        /// The GPU these apertures belong to (from KFD).
        pub gpu_id: u32,
        /// Padding.
        pub pad: u32,
    }

    /// Argument of the deprecated [`AMDKFD_IOC_GET_PROCESS_APERTURES`] (at most
    /// [`NUM_OF_SUPPORTED_GPUS`] GPUs; use `AMDKFD_IOC_GET_PROCESS_APERTURES_NEW`).
    pub struct kfd_ioctl_get_process_apertures_args {
        /// Apertures of the process's GPUs (from KFD).
        pub process_apertures: [kfd_process_device_apertures; NUM_OF_SUPPORTED_GPUS],
        /// Entries filled, 1..=[`NUM_OF_SUPPORTED_GPUS`] (from KFD).
        pub num_of_nodes: u32,
        /// Padding.
        pub pad: u32,
    }

    /// Argument of [`AMDKFD_IOC_GET_PROCESS_APERTURES_NEW`].
    pub struct kfd_ioctl_get_process_apertures_new_args {
        /// User array of [`kfd_process_device_apertures`] the kernel fills (to KFD).
        pub kfd_process_device_apertures_ptr: u64,
        /// Entries the array holds (to KFD); entries filled (from KFD). With 0 the kernel only
        /// returns the number of GPUs.
        pub num_of_nodes: u32,
        /// Padding.
        pub pad: u32,
    }

    /// Argument of the deprecated [`AMDKFD_IOC_DBG_REGISTER_DEPRECATED`] (always `-EPERM`).
    pub struct kfd_ioctl_dbg_register_args {
        /// GPU to register the debugger on (to KFD).
        pub gpu_id: u32,
        /// Padding.
        pub pad: u32,
    }

    /// Argument of the deprecated [`AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED`] (always `-EPERM`).
    pub struct kfd_ioctl_dbg_unregister_args {
        /// GPU to unregister the debugger from (to KFD).
        pub gpu_id: u32,
        /// Padding.
        pub pad: u32,
    }

    /// Argument of the deprecated [`AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED`] (always
    /// `-EPERM`).
    pub struct kfd_ioctl_dbg_address_watch_args {
        /// User address of the watch-point description (to KFD).
        pub content_ptr: u64,
        /// Target GPU (to KFD).
        pub gpu_id: u32,
        /// Size of the description in bytes, including `gpu_id` and this field (to KFD).
        pub buf_size_in_bytes: u32,
    }

    /// Argument of the deprecated [`AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED`] (always
    /// `-EPERM`).
    pub struct kfd_ioctl_dbg_wave_control_args {
        /// User address of the wave-control description (to KFD).
        pub content_ptr: u64,
        /// Target GPU (to KFD).
        pub gpu_id: u32,
        /// Size of the description in bytes, including `gpu_id` and this field (to KFD).
        pub buf_size_in_bytes: u32,
    }

    /// Argument of [`AMDKFD_IOC_CREATE_EVENT`].
    pub struct kfd_ioctl_create_event_args {
        /// `mmap` offset of the event page on `/dev/kfd` (from KFD; signal events).
        pub event_page_offset: u64,
        /// Value a GPU writes to trigger the event (from KFD; signal events only).
        pub event_trigger_data: u32,
        /// Event type, `KFD_IOC_EVENT_*` (to KFD).
        pub event_type: u32,
        /// Non-zero for an auto-reset event (to KFD).
        pub auto_reset: u32,
        /// Node (GPU id) the event is bound to, for the event types that need one (to KFD).
        pub node_id: u32,
        /// Id of the new event (from KFD).
        pub event_id: u32,
        /// Slot of the event in the signal event page (from KFD).
        pub event_slot_index: u32,
    }

    /// Argument of [`AMDKFD_IOC_DESTROY_EVENT`].
    pub struct kfd_ioctl_destroy_event_args {
        /// Event to destroy (to KFD).
        pub event_id: u32,
        /// Padding.
        pub pad: u32,
    }

    /// Argument of [`AMDKFD_IOC_SET_EVENT`].
    pub struct kfd_ioctl_set_event_args {
        /// Event to signal (to KFD).
        pub event_id: u32,
        /// Padding.
        pub pad: u32,
    }

    /// Argument of [`AMDKFD_IOC_RESET_EVENT`].
    pub struct kfd_ioctl_reset_event_args {
        /// Event to reset (to KFD).
        pub event_id: u32,
        /// Padding.
        pub pad: u32,
    }

    /// Why a memory access faulted (part of [`kfd_hsa_memory_exception_data`]); each field is
    /// a boolean (0 or 1).
    pub struct kfd_memory_exception_failure {
        /// Page not present, or supervisor privilege required.
        pub NotPresent: u32,
        /// Write access to a read-only page.
        pub ReadOnly: u32,
        /// Execute access to a page marked no-execute.
        pub NoExecute: u32,
        /// The exact fault address could not be determined.
        pub imprecise: u32,
    }

    /// Memory exception details of a `KFD_IOC_EVENT_MEMORY` event.
    pub struct kfd_hsa_memory_exception_data {
        /// Kind of fault.
        pub failure: kfd_memory_exception_failure,
        /// Faulting virtual address.
        pub va: u64,
        /// GPU that faulted.
        pub gpu_id: u32,
        /// RAS error kind, `KFD_MEM_ERR_*` (0 no RAS error, 1 SRAM ECC, 2 poison consumed,
        /// 3 GPU hang; other values reserved).
        pub ErrorType: u32,
    }

    /// Hardware exception details of a `KFD_IOC_EVENT_HW_EXCEPTION` event.
    pub struct kfd_hsa_hw_exception_data {
        /// `KFD_HW_EXCEPTION_WHOLE_GPU_RESET` or `KFD_HW_EXCEPTION_PER_ENGINE_RESET`.
        pub reset_type: u32,
        /// `KFD_HW_EXCEPTION_GPU_HANG` or `KFD_HW_EXCEPTION_ECC`.
        pub reset_cause: u32,
        /// Non-zero if memory contents were lost.
        pub memory_lost: u32,
        /// GPU that was reset.
        pub gpu_id: u32,
    }

    /// Signal event details (KFD 1.14).
    pub struct kfd_hsa_signal_event_data {
        /// Event age (to and from KFD): the age the waiter last saw; the kernel returns the
        /// current one. A wait returns at once when they differ (no lost wake-ups).
        pub last_event_age: u64,
    }

    /// One entry of the event array of [`AMDKFD_IOC_WAIT_EVENTS`].
    pub struct kfd_event_data {
        /// Event-type specific data: the C anonymous union of `memory_exception_data`,
        /// `hw_exception_data` (both from KFD) and `signal_event_data` (to and from KFD).
        pub data: union kfd_event_data_union([u64; 4]) {
            /// Memory exception details (from KFD; `KFD_IOC_EVENT_MEMORY`).
            memory_exception_data: kfd_hsa_memory_exception_data,
            /// Hardware exception details (from KFD; `KFD_IOC_EVENT_HW_EXCEPTION`).
            hw_exception_data: kfd_hsa_hw_exception_data,
            /// Signal event details (to and from KFD; `KFD_IOC_EVENT_SIGNAL`, KFD 1.14).
            signal_event_data: kfd_hsa_signal_event_data,
        },
        /// Pointer to an extension structure for future exception types.
        pub kfd_event_data_ext: u64,
        /// Event to wait for (to KFD).
        pub event_id: u32,
        /// Padding.
        pub pad: u32,
    }

    /// Argument of [`AMDKFD_IOC_WAIT_EVENTS`].
    pub struct kfd_ioctl_wait_events_args {
        /// User array of [`kfd_event_data`] (to KFD).
        pub events_ptr: u64,
        /// Entries in the array (to KFD).
        pub num_events: u32,
        /// Non-zero to wait for all events, zero for any (to KFD).
        pub wait_for_all: u32,
        /// Timeout in milliseconds (to KFD); 0xffffffff waits forever.
        pub timeout: u32,
        /// `KFD_IOC_WAIT_RESULT_*` (from KFD).
        pub wait_result: u32,
    }

    /// Argument of [`AMDKFD_IOC_SET_SCRATCH_BACKING_VA`].
    pub struct kfd_ioctl_set_scratch_backing_va_args {
        /// Virtual address backing the scratch aperture (to KFD).
        pub va_addr: u64,
        /// GPU whose scratch is set (to KFD).
        pub gpu_id: u32,
        /// Padding.
        pub pad: u32,
    }

    /// Argument of [`AMDKFD_IOC_GET_TILE_CONFIG`]. The struct may be extended later without
    /// breaking the ABI.
    pub struct kfd_ioctl_get_tile_config_args {
        /// User array receiving the tile configuration (to KFD).
        pub tile_config_ptr: u64,
        /// User array receiving the macro tile configuration (to KFD).
        pub macro_tile_config_ptr: u64,
        /// Entries the tile array holds (to KFD); entries filled (from KFD).
        pub num_tile_configs: u32,
        /// Entries the macro tile array holds (to KFD); entries filled (from KFD).
        pub num_macro_tile_configs: u32,
        /// GPU to query (to KFD).
        pub gpu_id: u32,
        /// `GB_ADDR_CONFIG` register value (from KFD).
        pub gb_addr_config: u32,
        /// Number of memory banks (from KFD).
        pub num_banks: u32,
        /// Number of memory ranks (from KFD).
        pub num_ranks: u32,
    }

    /// Argument of [`AMDKFD_IOC_SET_TRAP_HANDLER`].
    pub struct kfd_ioctl_set_trap_handler_args {
        /// Trap base address: GPU VA of the trap handler code (to KFD).
        pub tba_addr: u64,
        /// Trap memory address: GPU VA of the trap handler's data (to KFD).
        pub tma_addr: u64,
        /// GPU the handler is installed on (to KFD).
        pub gpu_id: u32,
        /// Padding.
        pub pad: u32,
    }

    /// Argument of [`AMDKFD_IOC_ACQUIRE_VM`].
    pub struct kfd_ioctl_acquire_vm_args {
        /// File descriptor of the GPU's DRM render node whose VM the process adopts (to KFD).
        pub drm_fd: u32,
        /// GPU the render node belongs to (to KFD).
        pub gpu_id: u32,
    }

    /// Argument of [`AMDKFD_IOC_ALLOC_MEMORY_OF_GPU`]: allocate memory for later mapping at a
    /// fixed virtual address on all GPUs.
    pub struct kfd_ioctl_alloc_memory_of_gpu_args {
        /// Virtual address of the allocation; every later GPU mapping uses it (to KFD).
        pub va_addr: u64,
        /// Size in bytes (to KFD).
        pub size: u64,
        /// Buffer handle for map, unmap and free (from KFD).
        pub handle: u64,
        /// For userptr allocations the CPU address (to KFD); otherwise the offset for CPU
        /// `mmap` of the render node (from KFD).
        pub mmap_offset: u64,
        /// GPU to allocate on (to KFD).
        pub gpu_id: u32,
        /// Memory type and attributes, `KFD_IOC_ALLOC_MEM_FLAGS_*` (to KFD).
        pub flags: u32,
    }

    /// Argument of [`AMDKFD_IOC_FREE_MEMORY_OF_GPU`].
    pub struct kfd_ioctl_free_memory_of_gpu_args {
        /// Handle returned by the allocation (to KFD).
        pub handle: u64,
    }

    /// Argument of [`AMDKFD_IOC_MAP_MEMORY_TO_GPU`]: map memory to one or more GPUs. On
    /// failure `n_success` tells how many leading devices were mapped; pass it back to retry.
    pub struct kfd_ioctl_map_memory_to_gpu_args {
        /// Handle returned by the allocation (to KFD).
        pub handle: u64,
        /// User array of `u32` GPU ids (to KFD).
        pub device_ids_array_ptr: u64,
        /// Entries in the array (to KFD).
        pub n_devices: u32,
        /// Devices mapped so far (to and from KFD; 0 on the first call, `n_devices` on
        /// success).
        pub n_success: u32,
    }

    /// Argument of [`AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU`] (same fields as mapping).
    pub struct kfd_ioctl_unmap_memory_from_gpu_args {
        /// Handle returned by the allocation (to KFD).
        pub handle: u64,
        /// User array of `u32` GPU ids (to KFD).
        pub device_ids_array_ptr: u64,
        /// Entries in the array (to KFD).
        pub n_devices: u32,
        /// Devices unmapped so far (to and from KFD).
        pub n_success: u32,
    }

    /// Argument of [`AMDKFD_IOC_ALLOC_QUEUE_GWS`]: allocate global wave sync entries for a
    /// queue (contiguous only).
    pub struct kfd_ioctl_alloc_queue_gws_args {
        /// Queue the GWS is allocated for (to KFD).
        pub queue_id: u32,
        /// Number of GWS entries to allocate (to KFD).
        pub num_gws: u32,
        /// Index of the first entry allocated (from KFD).
        pub first_gws: u32,
        /// Padding.
        pub pad: u32,
    }

    /// Argument of [`AMDKFD_IOC_GET_DMABUF_INFO`].
    pub struct kfd_ioctl_get_dmabuf_info_args {
        /// Size of the buffer in bytes (from KFD).
        pub size: u64,
        /// User buffer receiving the buffer's metadata (to KFD).
        pub metadata_ptr: u64,
        /// Space at `metadata_ptr` (to KFD); actual metadata size (from KFD).
        pub metadata_size: u32,
        /// GPU the buffer lives on (from KFD).
        pub gpu_id: u32,
        /// `KFD_IOC_ALLOC_MEM_FLAGS_*` of the buffer (from KFD).
        pub flags: u32,
        /// The DMA-buf file descriptor to inspect (to KFD).
        pub dmabuf_fd: u32,
    }

    /// Argument of [`AMDKFD_IOC_IMPORT_DMABUF`].
    pub struct kfd_ioctl_import_dmabuf_args {
        /// Virtual address at which to import (to KFD).
        pub va_addr: u64,
        /// Handle of the imported buffer (from KFD).
        pub handle: u64,
        /// GPU to import to (to KFD).
        pub gpu_id: u32,
        /// The DMA-buf file descriptor to import (to KFD).
        pub dmabuf_fd: u32,
    }

    /// Argument of [`AMDKFD_IOC_EXPORT_DMABUF`] (KFD 1.12).
    pub struct kfd_ioctl_export_dmabuf_args {
        /// Handle of the buffer to export (to KFD).
        pub handle: u64,
        /// File flags of the new descriptor, e.g. `O_CLOEXEC` (to KFD).
        pub flags: u32,
        /// The new DMA-buf file descriptor (from KFD).
        pub dmabuf_fd: u32,
    }

    /// Argument of [`AMDKFD_IOC_SMI_EVENTS`] (KFD 1.3).
    pub struct kfd_ioctl_smi_events_args {
        /// GPU whose events to receive (to KFD).
        pub gpuid: u32,
        /// Anonymous file descriptor delivering the event text lines (from KFD).
        pub anon_fd: u32,
    }

    /// Argument of [`AMDKFD_IOC_CRIU_OP`] (KFD 1.7): one checkpoint/restore operation.
    pub struct kfd_ioctl_criu_args {
        /// User array of [`kfd_criu_device_bucket`] (in/out; CHECKPOINT, RESTORE).
        pub devices: u64,
        /// User array of [`kfd_criu_bo_bucket`] (in/out; CHECKPOINT, RESTORE).
        pub bos: u64,
        /// User buffer of opaque private data (in/out; CHECKPOINT, RESTORE).
        pub priv_data: u64,
        /// Size of `priv_data` in bytes (in/out; PROCESS_INFO, RESTORE).
        pub priv_data_size: u64,
        /// Number of GPUs of the process, entries of `devices` (in/out; PROCESS_INFO,
        /// RESTORE).
        pub num_devices: u32,
        /// Number of buffer objects, entries of `bos` (in/out; PROCESS_INFO, RESTORE).
        pub num_bos: u32,
        /// Number of opaque objects (in/out; PROCESS_INFO, RESTORE).
        pub num_objects: u32,
        /// Pid of the process being checkpointed (in/out; PROCESS_INFO, RESUME).
        pub pid: u32,
        /// Operation, `KFD_CRIU_OP_*` (in).
        pub op: u32,
    }

    /// One GPU of a checkpointed process.
    pub struct kfd_criu_device_bucket {
        /// The GPU id the process used.
        pub user_gpu_id: u32,
        /// The GPU id on the restoring system.
        pub actual_gpu_id: u32,
        /// DRM render-node file descriptor.
        pub drm_fd: u32,
        /// Padding.
        pub pad: u32,
    }

    /// One buffer object of a checkpointed process.
    pub struct kfd_criu_bo_bucket {
        /// Virtual address.
        pub addr: u64,
        /// Size in bytes.
        pub size: u64,
        /// `mmap` offset.
        pub offset: u64,
        /// Updated `mmap` offset after restore.
        pub restored_offset: u64,
        /// The GPU id the process used (`user_gpu_id`).
        pub gpu_id: u32,
        /// `KFD_IOC_ALLOC_MEM_FLAGS_*` of the allocation.
        pub alloc_flags: u32,
        /// DMA-buf file descriptor carrying the contents.
        pub dmabuf_fd: u32,
        /// Padding.
        pub pad: u32,
    }

    /// One SVM attribute: a type and a value whose meaning depends on the type.
    pub struct kfd_ioctl_svm_attribute {
        /// Attribute type, `KFD_IOCTL_SVM_ATTR_*`.
        pub r#type: u32,
        /// Attribute value (a GPU id, flag mask or granularity).
        pub value: u32,
    }

    /// Fixed part of the argument of [`AMDKFD_IOC_SVM`] (KFD 1.5); `nattr`
    /// [`kfd_ioctl_svm_attribute`]s follow it in memory.
    pub struct kfd_ioctl_svm_args {
        /// Start of the virtual address range (page aligned).
        pub start_addr: u64,
        /// Size of the range in bytes (page aligned).
        pub size: u64,
        /// Operation, `KFD_IOCTL_SVM_OP_*`.
        pub op: u32,
        /// Number of attributes following the struct.
        pub nattr: u32,
        /// Flexible array member (`attrs[]` in C): the attributes start here; the request
        /// code's size covers only the fixed part.
        pub attrs: [kfd_ioctl_svm_attribute; 0],
    }

    /// Argument of [`AMDKFD_IOC_SET_XNACK_MODE`].
    pub struct kfd_ioctl_set_xnack_mode_args {
        /// In: 0 disables XNACK (recoverable page faults), positive enables, negative queries.
        /// Out: the current mode (0 or positive). Changing it needs a process without queues.
        pub xnack_enabled: i32,
    }

    /// Runtime state saved by KFD for the debugger (KFD 1.13).
    pub struct kfd_runtime_info {
        /// User address of the `r_debug` structure shared by ROCr and the debugger.
        pub r_debug: u64,
        /// `DEBUG_RUNTIME_STATE_*`.
        pub runtime_state: u32,
        /// Non-zero if trap temporaries are set up.
        pub ttmp_setup: u32,
    }

    /// Argument of [`AMDKFD_IOC_RUNTIME_ENABLE`] (KFD 1.13).
    pub struct kfd_ioctl_runtime_enable_args {
        /// User address of the `r_debug` structure shared by ROCr and the debugger.
        pub r_debug: u64,
        /// `KFD_RUNTIME_ENABLE_MODE_*` bits.
        pub mode_mask: u32,
        /// Mask telling the runtime what KFD supports.
        pub capabilities_mask: u32,
    }

    /// One queue of the debugger's queue snapshot (`KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT`).
    pub struct kfd_queue_snapshot_entry {
        /// Raised exceptions of the queue, a mask of `KFD_EC_MASK(EC_*)`.
        pub exception_status: u64,
        /// GPU virtual address of the ring buffer.
        pub ring_base_address: u64,
        /// Address of the write pointer.
        pub write_pointer_address: u64,
        /// Address of the read pointer.
        pub read_pointer_address: u64,
        /// GPU virtual address of the context save/restore area.
        pub ctx_save_restore_address: u64,
        /// Queue id.
        pub queue_id: u32,
        /// GPU of the queue.
        pub gpu_id: u32,
        /// Ring size in bytes.
        pub ring_size: u32,
        /// `KFD_IOC_QUEUE_TYPE_*`.
        pub queue_type: u32,
        /// Size of the context save/restore area in bytes.
        pub ctx_save_restore_area_size: u32,
        /// Reserved.
        pub reserved: u32,
    }

    /// Header KFD writes at the start of a queue's context save area when the debugger
    /// suspends the queue.
    pub struct kfd_context_save_area_header {
        /// Location of the saved wave state (an anonymous struct in C).
        pub wave_state: struct kfd_context_save_area_header_wave_state {
            /// Offset of the control stack in the save area.
            pub control_stack_offset: u32,
            /// Size of the control stack.
            pub control_stack_size: u32,
            /// Offset of the wave state in the save area.
            pub wave_state_offset: u32,
            /// Size of the wave state.
            pub wave_state_size: u32,
        },
        /// Offset of the debugger area in the save area.
        pub debug_offset: u32,
        /// Size of the debugger area.
        pub debug_size: u32,
        /// Address where exception payloads are raised to the runtime.
        pub err_payload_addr: u64,
        /// Event signalled when an exception is raised to the runtime.
        pub err_event_id: u32,
        /// Reserved.
        pub reserved1: u32,
    }

    /// `KFD_IOC_DBG_TRAP_ENABLE`: start a debug session on the target process.
    pub struct kfd_ioctl_dbg_trap_enable_args {
        /// Exceptions to raise to the debugger (in).
        pub exception_mask: u64,
        /// User buffer receiving the saved [`kfd_runtime_info`] (in).
        pub rinfo_ptr: u64,
        /// Size of that buffer (in); size of the runtime info (out).
        pub rinfo_size: u32,
        /// File descriptor KFD notifies the debugger through (in).
        pub dbg_fd: u32,
    }

    /// `KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT`: raise exceptions to the runtime.
    pub struct kfd_ioctl_dbg_trap_send_runtime_event_args {
        /// Exceptions to raise (in); `EC_PROCESS_RUNTIME` unblocks a pending runtime enable.
        pub exception_mask: u64,
        /// Target device (in).
        pub gpu_id: u32,
        /// Target queue (in).
        pub queue_id: u32,
    }

    /// `KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED`: replace the exceptions raised to the
    /// debugger.
    pub struct kfd_ioctl_dbg_trap_set_exceptions_enabled_args {
        /// New exceptions to raise to the debugger (in).
        pub exception_mask: u64,
    }

    /// `KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE`: enable hardware exceptions that trap.
    pub struct kfd_ioctl_dbg_trap_set_wave_launch_override_args {
        /// `KFD_DBG_TRAP_OVERRIDE_*` (in).
        pub override_mode: u32,
        /// `KFD_DBG_TRAP_MASK_*` to enable (in); previous enablement (out).
        pub enable_mask: u32,
        /// `KFD_DBG_TRAP_MASK_*` to check (in); actually supported (out).
        pub support_request_mask: u32,
        /// Padding.
        pub pad: u32,
    }

    /// `KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE`: set the wave launch mode.
    pub struct kfd_ioctl_dbg_trap_set_wave_launch_mode_args {
        /// `KFD_DBG_TRAP_WAVE_LAUNCH_MODE_*` (in).
        pub launch_mode: u32,
        /// Padding.
        pub pad: u32,
    }

    /// `KFD_IOC_DBG_TRAP_SUSPEND_QUEUES`: suspend queues; returns the number suspended, with
    /// `KFD_DBG_QUEUE_ERROR_MASK` / `KFD_DBG_QUEUE_INVALID_MASK` set in failed queue ids.
    pub struct kfd_ioctl_dbg_trap_suspend_queues_args {
        /// Raised exceptions to clear (in).
        pub exception_mask: u64,
        /// User array of `u32` queue ids (in; failure bits written back).
        pub queue_array_ptr: u64,
        /// Entries in the array (in).
        pub num_queues: u32,
        /// Wave time allowance before preemption, in units of 1K GPU clock cycles (in).
        pub grace_period: u32,
    }

    /// `KFD_IOC_DBG_TRAP_RESUME_QUEUES`: resume queues; returns the number resumed.
    pub struct kfd_ioctl_dbg_trap_resume_queues_args {
        /// User array of `u32` queue ids (in; failure bits written back).
        pub queue_array_ptr: u64,
        /// Entries in the array (in).
        pub num_queues: u32,
        /// Padding.
        pub pad: u32,
    }

    /// `KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH`: set an address watch point on a device.
    pub struct kfd_ioctl_dbg_trap_set_node_address_watch_args {
        /// Address to watch (in).
        pub address: u64,
        /// `KFD_DBG_TRAP_ADDRESS_WATCH_MODE_*` (in).
        pub mode: u32,
        /// Address mask (in).
        pub mask: u32,
        /// Target device (in).
        pub gpu_id: u32,
        /// Id of the allocated watch point (out).
        pub id: u32,
    }

    /// `KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH`: clear an address watch point.
    pub struct kfd_ioctl_dbg_trap_clear_node_address_watch_args {
        /// Target device (in).
        pub gpu_id: u32,
        /// Watch point to clear (in).
        pub id: u32,
    }

    /// `KFD_IOC_DBG_TRAP_SET_FLAGS`: set wave behaviour flags.
    pub struct kfd_ioctl_dbg_trap_set_flags_args {
        /// `KFD_DBG_TRAP_FLAG_*` to enable (in); previously enabled flags (out).
        pub flags: u32,
        /// Padding.
        pub pad: u32,
    }

    /// `KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT`: find raised exceptions (`-EAGAIN` when none).
    pub struct kfd_ioctl_dbg_trap_query_debug_event_args {
        /// Exceptions to clear (in); raised exceptions (out).
        pub exception_mask: u64,
        /// Device that raised them (out).
        pub gpu_id: u32,
        /// Queue that raised them (out).
        pub queue_id: u32,
    }

    /// `KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO`: details of a raised exception.
    pub struct kfd_ioctl_dbg_trap_query_exception_info_args {
        /// User buffer receiving the exception info (in).
        pub info_ptr: u64,
        /// Size of that buffer (in); size of the info (out).
        pub info_size: u32,
        /// Target GPU or queue id (in).
        pub source_id: u32,
        /// Exception to query, `EC_*` (in).
        pub exception_code: u32,
        /// 1 to clear the exception, 0 to keep it (in).
        pub clear_exception: u32,
    }

    /// `KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT`: snapshot of the process's queues.
    pub struct kfd_ioctl_dbg_trap_queue_snapshot_args {
        /// Raised exceptions to clear (in).
        pub exception_mask: u64,
        /// User array of [`kfd_queue_snapshot_entry`] (in).
        pub snapshot_buf_ptr: u64,
        /// Entries the array holds (in); queues that exist (out).
        pub num_queues: u32,
        /// Stride of the array in bytes (in); bytes filled per entry (out).
        pub entry_size: u32,
    }

    /// `KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT`: snapshot of the process's devices.
    pub struct kfd_ioctl_dbg_trap_device_snapshot_args {
        /// Raised exceptions to clear (in).
        pub exception_mask: u64,
        /// User array of [`kfd_dbg_device_info_entry`] (in).
        pub snapshot_buf_ptr: u64,
        /// Entries the array holds (in); devices that exist (out).
        pub num_devices: u32,
        /// Stride of the array in bytes (in); bytes filled per entry (out).
        pub entry_size: u32,
    }

    /// Argument of [`AMDKFD_IOC_DBG_TRAP`] (KFD 1.13): one debugger operation on a target
    /// process.
    pub struct kfd_ioctl_dbg_trap_args {
        /// Target process to debug.
        pub pid: u32,
        /// Operation, `KFD_IOC_DBG_TRAP_*`; selects the member of `op_args`.
        pub op: u32,
        /// The operation's arguments: the C anonymous union of the
        /// `kfd_ioctl_dbg_trap_*_args` structs.
        pub op_args: union kfd_ioctl_dbg_trap_args_union([u64; 3]) {
            /// Arguments of `KFD_IOC_DBG_TRAP_ENABLE`.
            enable: kfd_ioctl_dbg_trap_enable_args,
            /// Arguments of `KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT`.
            send_runtime_event: kfd_ioctl_dbg_trap_send_runtime_event_args,
            /// Arguments of `KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED`.
            set_exceptions_enabled: kfd_ioctl_dbg_trap_set_exceptions_enabled_args,
            /// Arguments of `KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE`.
            launch_override: kfd_ioctl_dbg_trap_set_wave_launch_override_args,
            /// Arguments of `KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE`.
            launch_mode: kfd_ioctl_dbg_trap_set_wave_launch_mode_args,
            /// Arguments of `KFD_IOC_DBG_TRAP_SUSPEND_QUEUES`.
            suspend_queues: kfd_ioctl_dbg_trap_suspend_queues_args,
            /// Arguments of `KFD_IOC_DBG_TRAP_RESUME_QUEUES`.
            resume_queues: kfd_ioctl_dbg_trap_resume_queues_args,
            /// Arguments of `KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH`.
            set_node_address_watch: kfd_ioctl_dbg_trap_set_node_address_watch_args,
            /// Arguments of `KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH`.
            clear_node_address_watch: kfd_ioctl_dbg_trap_clear_node_address_watch_args,
            /// Arguments of `KFD_IOC_DBG_TRAP_SET_FLAGS`.
            set_flags: kfd_ioctl_dbg_trap_set_flags_args,
            /// Arguments of `KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT`.
            query_debug_event: kfd_ioctl_dbg_trap_query_debug_event_args,
            /// Arguments of `KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO`.
            query_exception_info: kfd_ioctl_dbg_trap_query_exception_info_args,
            /// Arguments of `KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT`.
            queue_snapshot: kfd_ioctl_dbg_trap_queue_snapshot_args,
            /// Arguments of `KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT`.
            device_snapshot: kfd_ioctl_dbg_trap_device_snapshot_args,
        },
    }

    /// `KFD_IOC_PROFILER_PMC`: GPU-specific profiler settings (KFD 1.23).
    pub struct kfd_ioctl_pmc_settings {
        /// The GPU (`user_gpu_id`).
        pub gpu_id: u32,
        /// Non-zero to lock the GPU for profiling.
        pub lock: u32,
        /// Non-zero to force performance counters on for the GPU's queues.
        pub perfcount_enable: u32,
    }

    /// `KFD_IOC_PROFILER_PTL_CONTROL` settings (KFD 1.23).
    pub struct kfd_ioctl_ptl_control {
        /// The GPU (`user_gpu_id`).
        pub gpu_id: u32,
        /// 1 enables PTL, 0 disables it.
        pub enable: u32,
    }

    /// Argument of [`AMDKFD_IOC_PROFILER`] (KFD 1.23).
    pub struct kfd_ioctl_profiler_args {
        /// Operation, `KFD_IOC_PROFILER_*`; selects the member of `op_args`.
        pub op: u32,
        /// The operation's arguments: the C anonymous union of `pmc`, `ptl` and `version`.
        pub op_args: union kfd_ioctl_profiler_args_union([u32; 3]) {
            /// Settings of `KFD_IOC_PROFILER_PMC`.
            pmc: kfd_ioctl_pmc_settings,
            /// Settings of `KFD_IOC_PROFILER_PTL_CONTROL`.
            ptl: kfd_ioctl_ptl_control,
            /// Profiler interface version, `KFD_IOC_PROFILER_VERSION_NUM`
            /// (`KFD_IOC_PROFILER_VERSION`).
            version: u32,
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Request codes
// ---------------------------------------------------------------------------------------------

/// Direction of an ioctl argument, as encoded in the request code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum IoctlDir {
    /// `_IO`: no argument.
    None,
    /// `_IOW`: the kernel reads the argument.
    Write,
    /// `_IOR`: the kernel writes the argument.
    Read,
    /// `_IOWR`: the kernel reads and writes the argument.
    ReadWrite,
}

impl IoctlDir {
    /// The `_IOC_DIR` bits of this direction.
    #[must_use]
    pub const fn bits(self) -> u32 {
        match self {
            Self::None => _IOC_NONE,
            Self::Write => _IOC_WRITE,
            Self::Read => _IOC_READ,
            Self::ReadWrite => _IOC_READ | _IOC_WRITE,
        }
    }

    /// The direction whose `_IOC_DIR` bits are `bits`, if any.
    #[must_use]
    pub const fn from_bits(bits: u32) -> Option<Self> {
        if bits == _IOC_NONE {
            Some(Self::None)
        } else if bits == _IOC_WRITE {
            Some(Self::Write)
        } else if bits == _IOC_READ {
            Some(Self::Read)
        } else if bits == _IOC_READ | _IOC_WRITE {
            Some(Self::ReadWrite)
        } else {
            None
        }
    }

    /// The `kfd_ioctl.h` macro building requests of this direction (`AMDKFD_IOWR` …).
    #[must_use]
    pub const fn c_macro(self) -> &'static str {
        match self {
            Self::None => "AMDKFD_IO",
            Self::Write => "AMDKFD_IOW",
            Self::Read => "AMDKFD_IOR",
            Self::ReadWrite => "AMDKFD_IOWR",
        }
    }

    /// Whether the kernel copies the argument in from user space.
    #[must_use]
    pub const fn copies_in(self) -> bool {
        matches!(self, Self::Write | Self::ReadWrite)
    }

    /// Whether the kernel copies the argument back out to user space.
    #[must_use]
    pub const fn copies_out(self) -> bool {
        matches!(self, Self::Read | Self::ReadWrite)
    }
}

/// Metadata of one amdkfd ioctl.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct IoctlInfo {
    /// The C name of the request code, e.g. `AMDKFD_IOC_GET_VERSION`.
    pub name: &'static str,
    /// The command number (`_IOC_NR`), the only part amdkfd dispatches on.
    pub nr: u32,
    /// The request code as the KFD 1.23 header defines it.
    pub request: u32,
    /// Argument direction (the kernel uses its own, not the caller's).
    pub dir: IoctlDir,
    /// The C argument struct, `None` for `_IO` requests.
    pub arg_type: Option<&'static str>,
    /// `sizeof` the argument struct (0 without one).
    pub arg_size: usize,
    /// KFD minor version that introduced the ioctl; 0 for those older than the version
    /// history of the header (present in every KFD reporting version 1.x).
    pub since_minor: u32,
    /// Kept only as a number: the kernel rejects it (`-EPERM`) or it is superseded.
    pub deprecated: bool,
}

impl IoctlInfo {
    /// Whether a KFD reporting `version` implements this ioctl.
    #[must_use]
    pub const fn supported_by(&self, version: KfdVersion) -> bool {
        version.supports(self.since_minor)
    }
}

/// The argument struct of an amdkfd ioctl, tied to the one request code that takes it.
///
/// Every argument type of the header implements it, generated from the same entry that defines
/// its code (`AMDKFD_IOC_GET_VERSION = IOR(0x01, kfd_ioctl_get_version_args)`), so a platform
/// never pairs a code with an argument by hand: it issues `T::CHECKED_REQUEST` with a `&mut T`.
pub trait IoctlArg: Sized {
    /// The request code (`AMDKFD_IOC_*`) whose argument this type is.
    const REQUEST: u32;

    /// [`IoctlArg::REQUEST`], proved at compile time to be an amdkfd (`'K'`) request whose
    /// size field is `size_of::<Self>()` — the number of bytes the kernel copies in and out.
    /// Naming it for a type whose code does not fit fails to compile, so an ioctl wrapper that
    /// issues `T::CHECKED_REQUEST` with a `&mut T` cannot hand the kernel a buffer of the wrong
    /// size.
    ///
    /// ```
    /// use hsakmt_core::uapi::{AMDKFD_IOC_GET_VERSION, IoctlArg, kfd_ioctl_get_version_args};
    ///
    /// // Every argument type of the header carries its code…
    /// assert_eq!(kfd_ioctl_get_version_args::CHECKED_REQUEST, AMDKFD_IOC_GET_VERSION);
    /// // …and a type of the same size as the code's argument passes the check.
    /// struct Version([u32; 2]);
    /// impl IoctlArg for Version {
    ///     const REQUEST: u32 = AMDKFD_IOC_GET_VERSION;
    /// }
    /// assert_eq!(Version::CHECKED_REQUEST, AMDKFD_IOC_GET_VERSION);
    /// ```
    ///
    /// A type of another size paired with the code does not compile:
    ///
    /// ```compile_fail,E0080
    /// use hsakmt_core::uapi::{AMDKFD_IOC_GET_VERSION, IoctlArg};
    ///
    /// struct Version([u32; 3]);
    /// impl IoctlArg for Version {
    ///     const REQUEST: u32 = AMDKFD_IOC_GET_VERSION;
    /// }
    /// let _ = Version::CHECKED_REQUEST;
    /// ```
    const CHECKED_REQUEST: u32 = {
        assert!(_IOC_TYPE(Self::REQUEST) == AMDKFD_IOCTL_BASE, "not an amdkfd request code");
        assert!(
            _IOC_SIZE(Self::REQUEST) as usize == size_of::<Self>(),
            "the request code's size field is not the size of its argument type"
        );
        Self::REQUEST
    };
}

uapi_ioctls! {
    /// Query the interface version ([`kfd_ioctl_get_version_args`]).
    AMDKFD_IOC_GET_VERSION = IOR(0x01, kfd_ioctl_get_version_args), since = 0;
    /// Create a user-mode queue ([`kfd_ioctl_create_queue_args`]).
    AMDKFD_IOC_CREATE_QUEUE = IOWR(0x02, kfd_ioctl_create_queue_args), since = 0;
    /// Destroy a queue ([`kfd_ioctl_destroy_queue_args`]).
    AMDKFD_IOC_DESTROY_QUEUE = IOWR(0x03, kfd_ioctl_destroy_queue_args), since = 0;
    /// Set the cache policy of a GPU's apertures ([`kfd_ioctl_set_memory_policy_args`]).
    AMDKFD_IOC_SET_MEMORY_POLICY = IOW(0x04, kfd_ioctl_set_memory_policy_args), since = 0;
    /// Sample GPU, CPU and system clocks ([`kfd_ioctl_get_clock_counters_args`]).
    AMDKFD_IOC_GET_CLOCK_COUNTERS = IOWR(0x05, kfd_ioctl_get_clock_counters_args), since = 0;
    /// Deprecated (at most 7 GPUs): use [`AMDKFD_IOC_GET_PROCESS_APERTURES_NEW`]
    /// ([`kfd_ioctl_get_process_apertures_args`]).
    AMDKFD_IOC_GET_PROCESS_APERTURES = IOR(0x06, kfd_ioctl_get_process_apertures_args),
        since = 0, deprecated;
    /// Update a queue's ring, percentage and priority ([`kfd_ioctl_update_queue_args`]).
    AMDKFD_IOC_UPDATE_QUEUE = IOW(0x07, kfd_ioctl_update_queue_args), since = 0;
    /// Create an event ([`kfd_ioctl_create_event_args`]).
    AMDKFD_IOC_CREATE_EVENT = IOWR(0x08, kfd_ioctl_create_event_args), since = 0;
    /// Destroy an event ([`kfd_ioctl_destroy_event_args`]).
    AMDKFD_IOC_DESTROY_EVENT = IOW(0x09, kfd_ioctl_destroy_event_args), since = 0;
    /// Signal an event ([`kfd_ioctl_set_event_args`]).
    AMDKFD_IOC_SET_EVENT = IOW(0x0A, kfd_ioctl_set_event_args), since = 0;
    /// Reset an event ([`kfd_ioctl_reset_event_args`]).
    AMDKFD_IOC_RESET_EVENT = IOW(0x0B, kfd_ioctl_reset_event_args), since = 0;
    /// Wait for any or all of several events ([`kfd_ioctl_wait_events_args`]).
    AMDKFD_IOC_WAIT_EVENTS = IOWR(0x0C, kfd_ioctl_wait_events_args), since = 0;
    /// Deprecated debugger API: the kernel returns `-EPERM` ([`kfd_ioctl_dbg_register_args`]).
    AMDKFD_IOC_DBG_REGISTER_DEPRECATED = IOW(0x0D, kfd_ioctl_dbg_register_args),
        since = 0, deprecated;
    /// Deprecated debugger API: the kernel returns `-EPERM`
    /// ([`kfd_ioctl_dbg_unregister_args`]).
    AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED = IOW(0x0E, kfd_ioctl_dbg_unregister_args),
        since = 0, deprecated;
    /// Deprecated debugger API: the kernel returns `-EPERM`
    /// ([`kfd_ioctl_dbg_address_watch_args`]).
    AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED = IOW(0x0F, kfd_ioctl_dbg_address_watch_args),
        since = 0, deprecated;
    /// Deprecated debugger API: the kernel returns `-EPERM`
    /// ([`kfd_ioctl_dbg_wave_control_args`]).
    AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED = IOW(0x10, kfd_ioctl_dbg_wave_control_args),
        since = 0, deprecated;
    /// Set the scratch backing address of a GPU ([`kfd_ioctl_set_scratch_backing_va_args`]).
    AMDKFD_IOC_SET_SCRATCH_BACKING_VA = IOWR(0x11, kfd_ioctl_set_scratch_backing_va_args),
        since = 0;
    /// Read a GPU's tiling configuration ([`kfd_ioctl_get_tile_config_args`]).
    AMDKFD_IOC_GET_TILE_CONFIG = IOWR(0x12, kfd_ioctl_get_tile_config_args), since = 0;
    /// Install a trap handler ([`kfd_ioctl_set_trap_handler_args`]).
    AMDKFD_IOC_SET_TRAP_HANDLER = IOW(0x13, kfd_ioctl_set_trap_handler_args), since = 0;
    /// Query the apertures of all GPUs ([`kfd_ioctl_get_process_apertures_new_args`]).
    AMDKFD_IOC_GET_PROCESS_APERTURES_NEW =
        IOWR(0x14, kfd_ioctl_get_process_apertures_new_args), since = 0;
    /// Adopt a render node's VM for a GPU ([`kfd_ioctl_acquire_vm_args`]).
    AMDKFD_IOC_ACQUIRE_VM = IOW(0x15, kfd_ioctl_acquire_vm_args), since = 0;
    /// Allocate GPU-accessible memory ([`kfd_ioctl_alloc_memory_of_gpu_args`]).
    AMDKFD_IOC_ALLOC_MEMORY_OF_GPU = IOWR(0x16, kfd_ioctl_alloc_memory_of_gpu_args), since = 0;
    /// Free an allocation ([`kfd_ioctl_free_memory_of_gpu_args`]).
    AMDKFD_IOC_FREE_MEMORY_OF_GPU = IOW(0x17, kfd_ioctl_free_memory_of_gpu_args), since = 0;
    /// Map an allocation on GPUs ([`kfd_ioctl_map_memory_to_gpu_args`]).
    AMDKFD_IOC_MAP_MEMORY_TO_GPU = IOWR(0x18, kfd_ioctl_map_memory_to_gpu_args), since = 0;
    /// Unmap an allocation from GPUs ([`kfd_ioctl_unmap_memory_from_gpu_args`]).
    AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU = IOWR(0x19, kfd_ioctl_unmap_memory_from_gpu_args),
        since = 0;
    /// Set a queue's compute-unit mask ([`kfd_ioctl_set_cu_mask_args`]).
    AMDKFD_IOC_SET_CU_MASK = IOW(0x1A, kfd_ioctl_set_cu_mask_args), since = 0;
    /// Read a queue's wave state ([`kfd_ioctl_get_queue_wave_state_args`]).
    AMDKFD_IOC_GET_QUEUE_WAVE_STATE = IOWR(0x1B, kfd_ioctl_get_queue_wave_state_args),
        since = 0;
    /// Inspect a DMA-buf ([`kfd_ioctl_get_dmabuf_info_args`]).
    AMDKFD_IOC_GET_DMABUF_INFO = IOWR(0x1C, kfd_ioctl_get_dmabuf_info_args), since = 0;
    /// Import a DMA-buf ([`kfd_ioctl_import_dmabuf_args`]).
    AMDKFD_IOC_IMPORT_DMABUF = IOWR(0x1D, kfd_ioctl_import_dmabuf_args), since = 0;
    /// Allocate global wave sync for a queue ([`kfd_ioctl_alloc_queue_gws_args`]); older than
    /// the version history (Linux 5.3).
    AMDKFD_IOC_ALLOC_QUEUE_GWS = IOWR(0x1E, kfd_ioctl_alloc_queue_gws_args), since = 0;
    /// Open an SMI event file descriptor ([`kfd_ioctl_smi_events_args`]).
    AMDKFD_IOC_SMI_EVENTS = IOWR(0x1F, kfd_ioctl_smi_events_args), since = since::SMI_EVENTS;
    /// Set or get SVM attributes ([`kfd_ioctl_svm_args`] plus trailing attributes).
    AMDKFD_IOC_SVM = IOWR(0x20, kfd_ioctl_svm_args), since = since::SVM;
    /// Set or query XNACK mode ([`kfd_ioctl_set_xnack_mode_args`]); came with the SVM API.
    AMDKFD_IOC_SET_XNACK_MODE = IOWR(0x21, kfd_ioctl_set_xnack_mode_args), since = since::SVM;
    /// Checkpoint/restore operation, privileged ([`kfd_ioctl_criu_args`]).
    AMDKFD_IOC_CRIU_OP = IOWR(0x22, kfd_ioctl_criu_args), since = since::CRIU;
    /// Query available VRAM ([`kfd_ioctl_get_available_memory_args`]).
    AMDKFD_IOC_AVAILABLE_MEMORY = IOWR(0x23, kfd_ioctl_get_available_memory_args),
        since = since::AVAILABLE_MEMORY;
    /// Export an allocation as a DMA-buf ([`kfd_ioctl_export_dmabuf_args`]).
    AMDKFD_IOC_EXPORT_DMABUF = IOWR(0x24, kfd_ioctl_export_dmabuf_args),
        since = since::EXPORT_DMABUF;
    /// Runtime enable for debugging ([`kfd_ioctl_runtime_enable_args`]).
    AMDKFD_IOC_RUNTIME_ENABLE = IOWR(0x25, kfd_ioctl_runtime_enable_args),
        since = since::DEBUGGER;
    /// Debugger operation ([`kfd_ioctl_dbg_trap_args`]).
    AMDKFD_IOC_DBG_TRAP = IOWR(0x26, kfd_ioctl_dbg_trap_args), since = since::DEBUGGER;
    /// Create a secondary KFD process context (no argument).
    AMDKFD_IOC_CREATE_PROCESS = IO(0x27), since = since::CREATE_PROCESS;
    /// Profiler control ([`kfd_ioctl_profiler_args`]).
    AMDKFD_IOC_PROFILER = IOWR(0x28, kfd_ioctl_profiler_args), since = since::PROFILER;
}

/// The ioctl with command number `nr`, if amdkfd has one.
#[must_use]
pub fn ioctl_by_nr(nr: u32) -> Option<&'static IoctlInfo> {
    let table: &'static [IoctlInfo] = &IOCTLS;
    let index = usize::try_from(nr.checked_sub(AMDKFD_COMMAND_START)?).ok()?;
    table.get(index).filter(|info| info.nr == nr)
}

/// The ioctl a request code selects, the way amdkfd dispatches: by type `'K'` and command
/// number only, whatever the encoded size and direction.
#[must_use]
pub fn ioctl_for_request(request: u32) -> Option<&'static IoctlInfo> {
    if _IOC_TYPE(request) == AMDKFD_IOCTL_BASE { ioctl_by_nr(_IOC_NR(request)) } else { None }
}
