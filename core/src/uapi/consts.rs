//! The constants, enums and function-like macros of `kfd_ioctl.h` (request codes are in
//! [`super::ioctl`]).
//!
//! Every `#define` and enumerator keeps its C name. Enums become a type alias of the same name
//! (the C struct fields holding them are plain `__u32`) plus one constant per enumerator.
//! Function-like macros become `const fn`s, the `KFD_EVENT_FMT_*` format macros `&str`
//! constants.
#![expect(non_camel_case_types, reason = "enum type aliases keep their C names")]
#![expect(non_snake_case, reason = "function-like macros keep their C names")]

use super::layout::{FunctionMacro, MacroKind};

uapi_consts! {
    table IOCTL_H_DEFINES;

    /// Major version of the interface this crate was written against.
    pub const KFD_IOCTL_MAJOR_VERSION: u32 = 1;
    /// Minor version of the interface this crate was written against (see
    /// [`KfdVersion`](super::KfdVersion) for gating on what a kernel reports).
    pub const KFD_IOCTL_MINOR_VERSION: u32 = 23;

    /// Queue type: PM4 compute queue.
    pub const KFD_IOC_QUEUE_TYPE_COMPUTE: u32 = 0x0;
    /// Queue type: SDMA queue on any engine.
    pub const KFD_IOC_QUEUE_TYPE_SDMA: u32 = 0x1;
    /// Queue type: AQL compute queue (what HSA runtimes use).
    pub const KFD_IOC_QUEUE_TYPE_COMPUTE_AQL: u32 = 0x2;
    /// Queue type: SDMA queue on an XGMI engine.
    pub const KFD_IOC_QUEUE_TYPE_SDMA_XGMI: u32 = 0x3;
    /// Queue type: SDMA queue on the engine given by `sdma_engine_id` (KFD 1.17).
    pub const KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID: u32 = 0x4;

    /// Largest `queue_percentage`.
    pub const KFD_MAX_QUEUE_PERCENTAGE: u32 = 100;
    /// Largest `queue_priority`.
    pub const KFD_MAX_QUEUE_PRIORITY: u32 = 15;
    /// Smallest ring size in bytes (smaller requests are rounded up).
    pub const KFD_MIN_QUEUE_RING_SIZE: u32 = 1024;

    /// Cache policy: coherent.
    pub const KFD_IOC_CACHE_POLICY_COHERENT: u32 = 0;
    /// Cache policy: non-coherent.
    pub const KFD_IOC_CACHE_POLICY_NONCOHERENT: u32 = 1;

    /// `misc_process_flag`: high-precision MFMA (KFD 1.18).
    pub const KFD_PROC_FLAG_MFMA_HIGH_PRECISION: u32 = 1 << 0;

    /// Capacity of the deprecated `AMDKFD_IOC_GET_PROCESS_APERTURES` result.
    pub const NUM_OF_SUPPORTED_GPUS: usize = 7;

    /// Deprecated debugger API: maximum address watch points.
    pub const MAX_ALLOWED_NUM_POINTS: u32 = 100;
    /// Deprecated debugger API: maximum address-watch buffer size.
    pub const MAX_ALLOWED_AW_BUFF_SIZE: u32 = 4096;
    /// Deprecated debugger API: maximum wave-control buffer size.
    pub const MAX_ALLOWED_WAC_BUFF_SIZE: u32 = 128;

    /// An invalid file descriptor value in `__u32` fd fields.
    pub const KFD_INVALID_FD: u32 = 0xffff_ffff;

    /// Event type (matching `HSA_EVENTTYPE`): signal.
    pub const KFD_IOC_EVENT_SIGNAL: u32 = 0;
    /// Event type: topology node change.
    pub const KFD_IOC_EVENT_NODECHANGE: u32 = 1;
    /// Event type: device state change.
    pub const KFD_IOC_EVENT_DEVICESTATECHANGE: u32 = 2;
    /// Event type: hardware exception (GPU reset).
    pub const KFD_IOC_EVENT_HW_EXCEPTION: u32 = 3;
    /// Event type: system event.
    pub const KFD_IOC_EVENT_SYSTEM_EVENT: u32 = 4;
    /// Event type: debug event.
    pub const KFD_IOC_EVENT_DEBUG_EVENT: u32 = 5;
    /// Event type: profile event.
    pub const KFD_IOC_EVENT_PROFILE_EVENT: u32 = 6;
    /// Event type: queue event.
    pub const KFD_IOC_EVENT_QUEUE_EVENT: u32 = 7;
    /// Event type: memory exception (GPU page fault).
    pub const KFD_IOC_EVENT_MEMORY: u32 = 8;

    /// Wait result: the wait condition was met.
    pub const KFD_IOC_WAIT_RESULT_COMPLETE: u32 = 0;
    /// Wait result: the timeout expired.
    pub const KFD_IOC_WAIT_RESULT_TIMEOUT: u32 = 1;
    /// Wait result: the wait failed.
    pub const KFD_IOC_WAIT_RESULT_FAIL: u32 = 2;

    /// Number of signal event slots in the event page.
    pub const KFD_SIGNAL_EVENT_LIMIT: u32 = 4096;

    /// `hw_exception_data.reset_type`: the whole GPU was reset.
    pub const KFD_HW_EXCEPTION_WHOLE_GPU_RESET: u32 = 0;
    /// `hw_exception_data.reset_type`: one engine was reset.
    pub const KFD_HW_EXCEPTION_PER_ENGINE_RESET: u32 = 1;

    /// `hw_exception_data.reset_cause`: GPU hang.
    pub const KFD_HW_EXCEPTION_GPU_HANG: u32 = 0;
    /// `hw_exception_data.reset_cause`: ECC error.
    pub const KFD_HW_EXCEPTION_ECC: u32 = 1;

    /// `memory_exception_data.ErrorType`: no RAS error.
    pub const KFD_MEM_ERR_NO_RAS: u32 = 0;
    /// `memory_exception_data.ErrorType`: SRAM ECC error.
    pub const KFD_MEM_ERR_SRAM_ECC: u32 = 1;
    /// `memory_exception_data.ErrorType`: poison consumed (link SYNFLOOD).
    pub const KFD_MEM_ERR_POISON_CONSUMED: u32 = 2;
    /// `memory_exception_data.ErrorType`: GPU hang not attributable to a specific cause.
    pub const KFD_MEM_ERR_GPU_HANG: u32 = 3;

    /// Allocation memory type: VRAM.
    pub const KFD_IOC_ALLOC_MEM_FLAGS_VRAM: u32 = 1 << 0;
    /// Allocation memory type: GTT (system memory mapped through the GART).
    pub const KFD_IOC_ALLOC_MEM_FLAGS_GTT: u32 = 1 << 1;
    /// Allocation memory type: user pointer (existing user memory; CPU address in
    /// `mmap_offset`).
    pub const KFD_IOC_ALLOC_MEM_FLAGS_USERPTR: u32 = 1 << 2;
    /// Allocation memory type: the process's doorbell page.
    pub const KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL: u32 = 1 << 3;
    /// Allocation memory type: the MMIO remap page (HDP flush registers).
    pub const KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP: u32 = 1 << 4;
    /// Allocation attribute: writable by the GPU.
    pub const KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE: u32 = 1 << 31;
    /// Allocation attribute: executable by the GPU.
    pub const KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE: u32 = 1 << 30;
    /// Allocation attribute: CPU-visible VRAM.
    pub const KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC: u32 = 1 << 29;
    /// Allocation attribute: do not substitute system memory for VRAM.
    pub const KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE: u32 = 1 << 28;
    /// Allocation attribute: memory of an AQL queue (ring mapped twice).
    pub const KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM: u32 = 1 << 27;
    /// Allocation attribute: fine-grained coherent.
    pub const KFD_IOC_ALLOC_MEM_FLAGS_COHERENT: u32 = 1 << 26;
    /// Allocation attribute: uncached.
    pub const KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED: u32 = 1 << 25;
    /// Allocation attribute: coherent with system-scope atomics (added after 1.11 without a
    /// version bump).
    pub const KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT: u32 = 1 << 24;
    /// Allocation attribute: physically contiguous VRAM (KFD 1.16).
    pub const KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS: u32 = 1 << 23;

    /// Size of the buffer for one SMI event text line.
    pub const KFD_SMI_EVENT_MSG_SIZE: u32 = 96;

    /// SVM flag: guarantee host access to the memory.
    pub const KFD_IOCTL_SVM_FLAG_HOST_ACCESS: u32 = 0x0000_0001;
    /// SVM flag: fine-grained coherency between all devices with access.
    pub const KFD_IOCTL_SVM_FLAG_COHERENT: u32 = 0x0000_0002;
    /// SVM flag: use any GPU in the same hive as the preferred device.
    pub const KFD_IOCTL_SVM_FLAG_HIVE_LOCAL: u32 = 0x0000_0004;
    /// SVM flag: GPUs only read (allows replication).
    pub const KFD_IOCTL_SVM_FLAG_GPU_RO: u32 = 0x0000_0008;
    /// SVM flag: allow execution on the GPU.
    pub const KFD_IOCTL_SVM_FLAG_GPU_EXEC: u32 = 0x0000_0010;
    /// SVM flag: GPUs mostly read (optimisations as read-only, but writes fault).
    pub const KFD_IOCTL_SVM_FLAG_GPU_READ_MOSTLY: u32 = 0x0000_0020;
    /// SVM flag: keep the GPU mapping always valid, as if XNACK were off.
    pub const KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED: u32 = 0x0000_0040;
    /// SVM flag: fine-grained coherency using device-scope atomics (added after 1.11 without
    /// a version bump).
    pub const KFD_IOCTL_SVM_FLAG_EXT_COHERENT: u32 = 0x0000_0080;

    /// Bit of a queue id returned by suspend/resume queues: hardware failure.
    pub const KFD_DBG_QUEUE_ERROR_BIT: u32 = 30;
    /// Bit of a queue id returned by suspend/resume queues: queue does not exist, is new, or
    /// is being destroyed.
    pub const KFD_DBG_QUEUE_INVALID_BIT: u32 = 31;
    /// Mask of [`KFD_DBG_QUEUE_ERROR_BIT`].
    pub const KFD_DBG_QUEUE_ERROR_MASK: u32 = 1 << KFD_DBG_QUEUE_ERROR_BIT;
    /// Mask of [`KFD_DBG_QUEUE_INVALID_BIT`].
    pub const KFD_DBG_QUEUE_INVALID_MASK: u32 = 1 << KFD_DBG_QUEUE_INVALID_BIT;

    /// Runtime enable mode: enable the runtime for debugging (otherwise disable).
    pub const KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK: u32 = 1;
    /// Runtime enable mode: set up trap temporaries (ignored on disable).
    pub const KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK: u32 = 2;

    /// Exceptions reported per queue.
    pub const KFD_EC_MASK_QUEUE: u64 = KFD_EC_MASK(EC_QUEUE_WAVE_ABORT)
        | KFD_EC_MASK(EC_QUEUE_WAVE_TRAP)
        | KFD_EC_MASK(EC_QUEUE_WAVE_MATH_ERROR)
        | KFD_EC_MASK(EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION)
        | KFD_EC_MASK(EC_QUEUE_WAVE_MEMORY_VIOLATION)
        | KFD_EC_MASK(EC_QUEUE_WAVE_APERTURE_VIOLATION)
        | KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_DIM_INVALID)
        | KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID)
        | KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_CODE_INVALID)
        | KFD_EC_MASK(EC_QUEUE_PACKET_RESERVED)
        | KFD_EC_MASK(EC_QUEUE_PACKET_UNSUPPORTED)
        | KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID)
        | KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID)
        | KFD_EC_MASK(EC_QUEUE_PACKET_VENDOR_UNSUPPORTED)
        | KFD_EC_MASK(EC_QUEUE_PREEMPTION_ERROR)
        | KFD_EC_MASK(EC_QUEUE_NEW);
    /// Exceptions reported per device.
    pub const KFD_EC_MASK_DEVICE: u64 = KFD_EC_MASK(EC_DEVICE_QUEUE_DELETE)
        | KFD_EC_MASK(EC_DEVICE_RAS_ERROR)
        | KFD_EC_MASK(EC_DEVICE_FATAL_HALT)
        | KFD_EC_MASK(EC_DEVICE_MEMORY_VIOLATION)
        | KFD_EC_MASK(EC_DEVICE_NEW);
    /// Exceptions reported per process.
    pub const KFD_EC_MASK_PROCESS: u64 =
        KFD_EC_MASK(EC_PROCESS_RUNTIME) | KFD_EC_MASK(EC_PROCESS_DEVICE_REMOVE);
    /// Queue exceptions caused by an invalid packet.
    pub const KFD_EC_MASK_PACKET: u64 = KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_DIM_INVALID)
        | KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID)
        | KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_CODE_INVALID)
        | KFD_EC_MASK(EC_QUEUE_PACKET_RESERVED)
        | KFD_EC_MASK(EC_QUEUE_PACKET_UNSUPPORTED)
        | KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID)
        | KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID)
        | KFD_EC_MASK(EC_QUEUE_PACKET_VENDOR_UNSUPPORTED);

    /// Version of the profiler interface reported by `KFD_IOC_PROFILER_VERSION`.
    pub const KFD_IOC_PROFILER_VERSION_NUM: u32 = 1;

    /// The ioctl type ("magic") of amdkfd: `'K'`.
    pub const AMDKFD_IOCTL_BASE: u32 = b'K' as u32;
    /// First amdkfd command number.
    pub const AMDKFD_COMMAND_START: u32 = 0x01;
    /// One past the last amdkfd command number.
    pub const AMDKFD_COMMAND_END: u32 = 0x29;
}

uapi_enums! {
    tables IOCTL_H_ENUM_CONSTANTS, IOCTL_H_ENUMS;

    /// SMI (system management interface) events; bits of the mask written to the SMI file
    /// descriptor via [`KFD_SMI_EVENT_MASK_FROM_INDEX`].
    pub enum kfd_smi_event: u32 {
        /// Not used.
        KFD_SMI_EVENT_NONE = 0,
        /// GPU VM fault (events count from 1).
        KFD_SMI_EVENT_VMFAULT = 1,
        /// Thermal throttling.
        KFD_SMI_EVENT_THERMAL_THROTTLE = 2,
        /// GPU about to reset.
        KFD_SMI_EVENT_GPU_PRE_RESET = 3,
        /// GPU reset done.
        KFD_SMI_EVENT_GPU_POST_RESET = 4,
        /// Page migration started (KFD 1.10 profiler events).
        KFD_SMI_EVENT_MIGRATE_START = 5,
        /// Page migration ended.
        KFD_SMI_EVENT_MIGRATE_END = 6,
        /// GPU page fault started.
        KFD_SMI_EVENT_PAGE_FAULT_START = 7,
        /// GPU page fault handled.
        KFD_SMI_EVENT_PAGE_FAULT_END = 8,
        /// User queues evicted.
        KFD_SMI_EVENT_QUEUE_EVICTION = 9,
        /// User queues restored.
        KFD_SMI_EVENT_QUEUE_RESTORE = 10,
        /// Range unmapped from the GPU.
        KFD_SMI_EVENT_UNMAP_FROM_GPU = 11,
        /// A KFD process started (added after 1.11 without a version bump).
        KFD_SMI_EVENT_PROCESS_START = 12,
        /// A KFD process ended (added after 1.11 without a version bump).
        KFD_SMI_EVENT_PROCESS_END = 13,
        /// Flag bit: receive events of all processes (needs privilege), not just the caller's.
        KFD_SMI_EVENT_ALL_PROCESS = 64,
    }

    /// Reason of a page migration event.
    pub enum KFD_MIGRATE_TRIGGERS: u32 {
        /// Prefetch to GPU VRAM or system memory.
        KFD_MIGRATE_TRIGGER_PREFETCH = 0,
        /// GPU page fault recovery.
        KFD_MIGRATE_TRIGGER_PAGEFAULT_GPU = 1,
        /// CPU page fault recovery.
        KFD_MIGRATE_TRIGGER_PAGEFAULT_CPU = 2,
        /// TTM eviction.
        KFD_MIGRATE_TRIGGER_TTM_EVICTION = 3,
    }

    /// Reason of a user queue eviction event.
    pub enum KFD_QUEUE_EVICTION_TRIGGERS: u32 {
        /// SVM buffer migration.
        KFD_QUEUE_EVICTION_TRIGGER_SVM = 0,
        /// Userptr movement.
        KFD_QUEUE_EVICTION_TRIGGER_USERPTR = 1,
        /// TTM buffer move.
        KFD_QUEUE_EVICTION_TRIGGER_TTM = 2,
        /// GPU suspend.
        KFD_QUEUE_EVICTION_TRIGGER_SUSPEND = 3,
        /// CRIU checkpoint.
        KFD_QUEUE_EVICTION_CRIU_CHECKPOINT = 4,
        /// CRIU restore.
        KFD_QUEUE_EVICTION_CRIU_RESTORE = 5,
    }

    /// Reason of an unmap-from-GPU event.
    pub enum KFD_SVM_UNMAP_TRIGGERS: u32 {
        /// MMU notifier: CPU buffer movement.
        KFD_SVM_UNMAP_TRIGGER_MMU_NOTIFY = 0,
        /// MMU notifier: page migration.
        KFD_SVM_UNMAP_TRIGGER_MMU_NOTIFY_MIGRATE = 1,
        /// Unmapped from the CPU to free the buffer.
        KFD_SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU = 2,
    }

    /// CRIU operations (`kfd_ioctl_criu_args.op`).
    pub enum kfd_criu_op: u32 {
        /// Query process information; pauses the process and evicts its queues.
        KFD_CRIU_OP_PROCESS_INFO = 0,
        /// Checkpoint buffers, queues, events and SVM ranges.
        KFD_CRIU_OP_CHECKPOINT = 1,
        /// Un-evict the queues after `PROCESS_INFO`.
        KFD_CRIU_OP_UNPAUSE = 2,
        /// Restore the process contents.
        KFD_CRIU_OP_RESTORE = 3,
        /// Start the restored process.
        KFD_CRIU_OP_RESUME = 4,
    }

    /// Register offsets inside the remapped MMIO page.
    pub enum kfd_mmio_remap: u32 {
        /// HDP memory flush control register.
        KFD_MMIO_REMAP_HDP_MEM_FLUSH_CNTL = 0,
        /// HDP register flush control register.
        KFD_MMIO_REMAP_HDP_REG_FLUSH_CNTL = 4,
    }

    /// SVM ioctl operations (`kfd_ioctl_svm_args.op`).
    pub enum kfd_ioctl_svm_op: u32 {
        /// Modify one or more attributes of a range.
        KFD_IOCTL_SVM_OP_SET_ATTR = 0,
        /// Query attributes of a range.
        KFD_IOCTL_SVM_OP_GET_ATTR = 1,
    }

    /// Special preferred/prefetch locations (otherwise a GPU id).
    pub enum kfd_ioctl_svm_location: u32 {
        /// System memory.
        KFD_IOCTL_SVM_LOCATION_SYSMEM = 0,
        /// Unspecified (or, from `GET_ATTR`, differing across the range).
        KFD_IOCTL_SVM_LOCATION_UNDEFINED = 0xffff_ffff,
    }

    /// SVM attribute types (`kfd_ioctl_svm_attribute.type`).
    pub enum kfd_ioctl_svm_attr_type: u32 {
        /// GPU id of the preferred location, 0 for system memory.
        KFD_IOCTL_SVM_ATTR_PREFERRED_LOC = 0,
        /// GPU id of the prefetch location, 0 for system memory; setting it migrates.
        KFD_IOCTL_SVM_ATTR_PREFETCH_LOC = 1,
        /// The GPU id in the value may access the range.
        KFD_IOCTL_SVM_ATTR_ACCESS = 2,
        /// The GPU id in the value may access the range in place.
        KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE = 3,
        /// The GPU id in the value may not access the range.
        KFD_IOCTL_SVM_ATTR_NO_ACCESS = 4,
        /// `KFD_IOCTL_SVM_FLAG_*` bits to set.
        KFD_IOCTL_SVM_ATTR_SET_FLAGS = 5,
        /// `KFD_IOCTL_SVM_FLAG_*` bits to clear.
        KFD_IOCTL_SVM_ATTR_CLR_FLAGS = 6,
        /// Migration granularity, log2 of the number of pages.
        KFD_IOCTL_SVM_ATTR_GRANULARITY = 7,
    }

    /// Wave launch override modes.
    pub enum kfd_dbg_trap_override_mode: u32 {
        /// OR the requested traps into the enabled ones.
        KFD_DBG_TRAP_OVERRIDE_OR = 0,
        /// Replace the enabled traps.
        KFD_DBG_TRAP_OVERRIDE_REPLACE = 1,
    }

    /// Wave launch override trap bits.
    pub enum kfd_dbg_trap_mask: u32 {
        /// Floating-point invalid operation.
        KFD_DBG_TRAP_MASK_FP_INVALID = 1,
        /// Floating-point denormal input.
        KFD_DBG_TRAP_MASK_FP_INPUT_DENORMAL = 2,
        /// Floating-point divide by zero.
        KFD_DBG_TRAP_MASK_FP_DIVIDE_BY_ZERO = 4,
        /// Floating-point overflow.
        KFD_DBG_TRAP_MASK_FP_OVERFLOW = 8,
        /// Floating-point underflow.
        KFD_DBG_TRAP_MASK_FP_UNDERFLOW = 16,
        /// Floating-point inexact result.
        KFD_DBG_TRAP_MASK_FP_INEXACT = 32,
        /// Integer divide by zero.
        KFD_DBG_TRAP_MASK_INT_DIVIDE_BY_ZERO = 64,
        /// Address watch hit.
        KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH = 128,
        /// Memory violation.
        KFD_DBG_TRAP_MASK_DBG_MEMORY_VIOLATION = 256,
        /// Trap when a wave starts.
        KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_START = 1 << 30,
        /// Trap when a wave ends (`1 << 31`: a negative `int` in C).
        KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_END = 1 << 31,
    }

    /// Wave launch modes.
    pub enum kfd_dbg_trap_wave_launch_mode: u32 {
        /// Normal launch.
        KFD_DBG_TRAP_WAVE_LAUNCH_MODE_NORMAL = 0,
        /// Launch halted.
        KFD_DBG_TRAP_WAVE_LAUNCH_MODE_HALT = 1,
        /// Launch in debug mode.
        KFD_DBG_TRAP_WAVE_LAUNCH_MODE_DEBUG = 3,
    }

    /// Address watch modes.
    pub enum kfd_dbg_trap_address_watch_mode: u32 {
        /// Watch reads.
        KFD_DBG_TRAP_ADDRESS_WATCH_MODE_READ = 0,
        /// Watch non-reads.
        KFD_DBG_TRAP_ADDRESS_WATCH_MODE_NONREAD = 1,
        /// Watch atomics.
        KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ATOMIC = 2,
        /// Watch all accesses.
        KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ALL = 3,
    }

    /// Additional wave settings (`KFD_IOC_DBG_TRAP_SET_FLAGS`).
    pub enum kfd_dbg_trap_flags: u32 {
        /// Precise memory operations (one at a time).
        KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP = 1,
        /// Precise ALU operations.
        KFD_DBG_TRAP_FLAG_SINGLE_ALU_OP = 2,
        /// Report LDS out-of-address-range accesses (KFD 1.21).
        KFD_DBG_TRAP_FLAG_LDS_OUT_OF_ADDR_RANGE = 4,
    }

    /// Debugger exception codes; [`KFD_EC_MASK`] turns one into its mask bit.
    pub enum kfd_dbg_trap_exception_code: u32 {
        /// No exception.
        EC_NONE = 0,
        /// Queue: wave aborted.
        EC_QUEUE_WAVE_ABORT = 1,
        /// Queue: wave trap.
        EC_QUEUE_WAVE_TRAP = 2,
        /// Queue: wave math error.
        EC_QUEUE_WAVE_MATH_ERROR = 3,
        /// Queue: illegal instruction.
        EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION = 4,
        /// Queue: memory violation.
        EC_QUEUE_WAVE_MEMORY_VIOLATION = 5,
        /// Queue: aperture violation.
        EC_QUEUE_WAVE_APERTURE_VIOLATION = 6,
        /// Queue packet: invalid dispatch dimensions.
        EC_QUEUE_PACKET_DISPATCH_DIM_INVALID = 16,
        /// Queue packet: invalid group segment size.
        EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID = 17,
        /// Queue packet: invalid code object.
        EC_QUEUE_PACKET_DISPATCH_CODE_INVALID = 18,
        /// Queue packet: reserved packet type.
        EC_QUEUE_PACKET_RESERVED = 19,
        /// Queue packet: unsupported packet.
        EC_QUEUE_PACKET_UNSUPPORTED = 20,
        /// Queue packet: invalid work-group size.
        EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID = 21,
        /// Queue packet: invalid register setup.
        EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID = 22,
        /// Queue packet: unsupported vendor packet.
        EC_QUEUE_PACKET_VENDOR_UNSUPPORTED = 23,
        /// Queue: preemption error.
        EC_QUEUE_PREEMPTION_ERROR = 30,
        /// Queue: new queue created.
        EC_QUEUE_NEW = 31,
        /// Device: queue deleted.
        EC_DEVICE_QUEUE_DELETE = 32,
        /// Device: memory violation.
        EC_DEVICE_MEMORY_VIOLATION = 33,
        /// Device: RAS error.
        EC_DEVICE_RAS_ERROR = 34,
        /// Device: fatal halt.
        EC_DEVICE_FATAL_HALT = 35,
        /// Device: new device.
        EC_DEVICE_NEW = 36,
        /// Process: runtime enable (unblocks `AMDKFD_IOC_RUNTIME_ENABLE`).
        EC_PROCESS_RUNTIME = 48,
        /// Process: device removed.
        EC_PROCESS_DEVICE_REMOVE = 49,
        /// One past the last code.
        EC_MAX = 50,
    }

    /// Runtime enable states (`kfd_runtime_info.runtime_state`).
    pub enum kfd_dbg_runtime_state: u32 {
        /// Runtime disabled.
        DEBUG_RUNTIME_STATE_DISABLED = 0,
        /// Runtime enabled.
        DEBUG_RUNTIME_STATE_ENABLED = 1,
        /// Runtime enabled, busy.
        DEBUG_RUNTIME_STATE_ENABLED_BUSY = 2,
        /// Runtime enabled, in error.
        DEBUG_RUNTIME_STATE_ENABLED_ERROR = 3,
    }

    /// Debugger operations (`kfd_ioctl_dbg_trap_args.op`); "hardware" operations need a prior
    /// successful `AMDKFD_IOC_RUNTIME_ENABLE`.
    pub enum kfd_dbg_trap_operations: u32 {
        /// Enable a debug session.
        KFD_IOC_DBG_TRAP_ENABLE = 0,
        /// Disable the debug session.
        KFD_IOC_DBG_TRAP_DISABLE = 1,
        /// Raise exceptions to the runtime.
        KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT = 2,
        /// Set the exceptions raised to the debugger.
        KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED = 3,
        /// Set wave launch trap overrides (hardware operation).
        KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE = 4,
        /// Set the wave launch mode (hardware operation).
        KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE = 5,
        /// Suspend queues (hardware operation).
        KFD_IOC_DBG_TRAP_SUSPEND_QUEUES = 6,
        /// Resume queues (hardware operation).
        KFD_IOC_DBG_TRAP_RESUME_QUEUES = 7,
        /// Set an address watch point (hardware operation).
        KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH = 8,
        /// Clear an address watch point (hardware operation).
        KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH = 9,
        /// Set wave behaviour flags.
        KFD_IOC_DBG_TRAP_SET_FLAGS = 10,
        /// Find raised exceptions.
        KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT = 11,
        /// Details of a raised exception.
        KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO = 12,
        /// Snapshot of the queues.
        KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT = 13,
        /// Snapshot of the devices.
        KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT = 14,
    }

    /// Profiler operations (`kfd_ioctl_profiler_args.op`, KFD 1.23).
    pub enum kfd_profiler_ops: u32 {
        /// GPU profiler settings (`pmc`).
        KFD_IOC_PROFILER_PMC = 0,
        /// Query the profiler interface version (`version`).
        KFD_IOC_PROFILER_VERSION = 2,
        /// PTL control (`ptl`).
        KFD_IOC_PROFILER_PTL_CONTROL = 3,
    }
}

/// `KFD_SMI_EVENT_MASK_FROM_INDEX(i)`: the mask bit of SMI event `i` (`1 << (i - 1)`).
///
/// Defined for `i` in `1..=64`; other values (undefined behaviour in C) give 0.
#[must_use]
pub const fn KFD_SMI_EVENT_MASK_FROM_INDEX(i: u32) -> u64 {
    match 1u64.checked_shl(i.wrapping_sub(1)) {
        Some(mask) => mask,
        None => 0,
    }
}

/// `KFD_EC_MASK(ecode)`: the mask bit of exception code `ecode` (`1 << (ecode - 1)`).
///
/// Defined for `ecode` in `1..=64`; other values (undefined behaviour in C) give 0.
#[must_use]
pub const fn KFD_EC_MASK(ecode: u32) -> u64 {
    match 1u64.checked_shl(ecode.wrapping_sub(1)) {
        Some(mask) => mask,
        None => 0,
    }
}

/// `KFD_DBG_EC_IS_VALID(ecode)`: `EC_NONE < ecode < EC_MAX`.
#[must_use]
pub const fn KFD_DBG_EC_IS_VALID(ecode: u32) -> bool {
    ecode > EC_NONE && ecode < EC_MAX
}

/// `KFD_DBG_EC_TYPE_IS_QUEUE(ecode)`: a valid per-queue exception.
#[must_use]
pub const fn KFD_DBG_EC_TYPE_IS_QUEUE(ecode: u32) -> bool {
    KFD_DBG_EC_IS_VALID(ecode) && (KFD_EC_MASK(ecode) & KFD_EC_MASK_QUEUE) != 0
}

/// `KFD_DBG_EC_TYPE_IS_DEVICE(ecode)`: a valid per-device exception.
#[must_use]
pub const fn KFD_DBG_EC_TYPE_IS_DEVICE(ecode: u32) -> bool {
    KFD_DBG_EC_IS_VALID(ecode) && (KFD_EC_MASK(ecode) & KFD_EC_MASK_DEVICE) != 0
}

/// `KFD_DBG_EC_TYPE_IS_PROCESS(ecode)`: a valid per-process exception.
#[must_use]
pub const fn KFD_DBG_EC_TYPE_IS_PROCESS(ecode: u32) -> bool {
    KFD_DBG_EC_IS_VALID(ecode) && (KFD_EC_MASK(ecode) & KFD_EC_MASK_PROCESS) != 0
}

/// `KFD_DBG_EC_TYPE_IS_PACKET(ecode)`: a valid invalid-packet queue exception.
#[must_use]
pub const fn KFD_DBG_EC_TYPE_IS_PACKET(ecode: u32) -> bool {
    KFD_DBG_EC_IS_VALID(ecode) && (KFD_EC_MASK(ecode) & KFD_EC_MASK_PACKET) != 0
}

// SMI event text formats. In C each macro expands to the format string followed by its
// arguments, for `snprintf` in the kernel and `sscanf` in user space; the constants hold the
// format string and document the arguments in order. Each line read from the SMI file starts
// with the event id, followed by this text.

/// `KFD_EVENT_FMT_UPDATE_GPU_RESET(reset_seq_num, reset_cause)`: GPU pre/post reset.
pub const KFD_EVENT_FMT_UPDATE_GPU_RESET: &str = "%x %s\n";
/// `KFD_EVENT_FMT_THERMAL_THROTTLING(bitmask, counter)`: thermal throttling.
pub const KFD_EVENT_FMT_THERMAL_THROTTLING: &str = "%llx:%llx\n";
/// `KFD_EVENT_FMT_VMFAULT(pid, task_name)`: VM fault.
pub const KFD_EVENT_FMT_VMFAULT: &str = "%x:%s\n";
/// `KFD_EVENT_FMT_PAGEFAULT_START(ns, pid, addr, node, rw)`: page fault start; `rw` is `'W'`
/// or `'R'`, `addr` in pages.
pub const KFD_EVENT_FMT_PAGEFAULT_START: &str = "%lld -%d @%lx(%x) %c\n";
/// `KFD_EVENT_FMT_PAGEFAULT_END(ns, pid, addr, node, migrate_update)`: page fault end;
/// `migrate_update` is `'M'` (migrated) or `'U'` (updated).
pub const KFD_EVENT_FMT_PAGEFAULT_END: &str = "%lld -%d @%lx(%x) %c\n";
/// `KFD_EVENT_FMT_MIGRATE_START(ns, pid, start, size, from, to, prefetch_loc, preferred_loc,
/// migrate_trigger)`: migration start (`KFD_MIGRATE_TRIGGER_*`).
pub const KFD_EVENT_FMT_MIGRATE_START: &str = "%lld -%d @%lx(%lx) %x->%x %x:%x %d\n";
/// `KFD_EVENT_FMT_MIGRATE_END(ns, pid, start, size, from, to, migrate_trigger,
/// error_code)`: migration end.
pub const KFD_EVENT_FMT_MIGRATE_END: &str = "%lld -%d @%lx(%lx) %x->%x %d %d\n";
/// `KFD_EVENT_FMT_QUEUE_EVICTION(ns, pid, node, evict_trigger)`: queue eviction
/// (`KFD_QUEUE_EVICTION_*`).
pub const KFD_EVENT_FMT_QUEUE_EVICTION: &str = "%lld -%d %x %d\n";
/// `KFD_EVENT_FMT_QUEUE_RESTORE(ns, pid, node, rescheduled)`: queue restore; `rescheduled` is
/// `'R'` when the restore failed and was rescheduled.
pub const KFD_EVENT_FMT_QUEUE_RESTORE: &str = "%lld -%d %x %c\n";
/// `KFD_EVENT_FMT_UNMAP_FROM_GPU(ns, pid, addr, size, node, unmap_trigger)`: unmap from GPU
/// (`KFD_SVM_UNMAP_TRIGGER_*`).
pub const KFD_EVENT_FMT_UNMAP_FROM_GPU: &str = "%lld -%d @%lx(%lx) %x %d\n";
/// `KFD_EVENT_FMT_PROCESS(pid, task_name)`: process start/end.
pub const KFD_EVENT_FMT_PROCESS: &str = "%x %s\n";

/// `u64` adapters for the [`FunctionMacro`] table (arguments beyond `u32` are out of domain).
fn arg(x: u64) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

/// The function-like macros of `kfd_ioctl.h` other than the request-code constructors.
pub(crate) const IOCTL_H_FUNCTION_MACROS: &[FunctionMacro] = &[
    FunctionMacro {
        name: "KFD_SMI_EVENT_MASK_FROM_INDEX",
        kind: MacroKind::Int {
            eval: |i| KFD_SMI_EVENT_MASK_FROM_INDEX(arg(i)),
            first: 1,
            last: 64,
        },
    },
    FunctionMacro {
        name: "KFD_EC_MASK",
        kind: MacroKind::Int { eval: |e| KFD_EC_MASK(arg(e)), first: 1, last: 64 },
    },
    FunctionMacro {
        name: "KFD_DBG_EC_IS_VALID",
        kind: MacroKind::Int { eval: |e| KFD_DBG_EC_IS_VALID(arg(e)) as u64, first: 0, last: 64 },
    },
    FunctionMacro {
        name: "KFD_DBG_EC_TYPE_IS_QUEUE",
        kind: MacroKind::Int {
            eval: |e| KFD_DBG_EC_TYPE_IS_QUEUE(arg(e)) as u64,
            first: 0,
            last: 64,
        },
    },
    FunctionMacro {
        name: "KFD_DBG_EC_TYPE_IS_DEVICE",
        kind: MacroKind::Int {
            eval: |e| KFD_DBG_EC_TYPE_IS_DEVICE(arg(e)) as u64,
            first: 0,
            last: 64,
        },
    },
    FunctionMacro {
        name: "KFD_DBG_EC_TYPE_IS_PROCESS",
        kind: MacroKind::Int {
            eval: |e| KFD_DBG_EC_TYPE_IS_PROCESS(arg(e)) as u64,
            first: 0,
            last: 64,
        },
    },
    FunctionMacro {
        name: "KFD_DBG_EC_TYPE_IS_PACKET",
        kind: MacroKind::Int {
            eval: |e| KFD_DBG_EC_TYPE_IS_PACKET(arg(e)) as u64,
            first: 0,
            last: 64,
        },
    },
    FunctionMacro {
        name: "KFD_EVENT_FMT_UPDATE_GPU_RESET",
        kind: MacroKind::Format(KFD_EVENT_FMT_UPDATE_GPU_RESET),
    },
    FunctionMacro {
        name: "KFD_EVENT_FMT_THERMAL_THROTTLING",
        kind: MacroKind::Format(KFD_EVENT_FMT_THERMAL_THROTTLING),
    },
    FunctionMacro { name: "KFD_EVENT_FMT_VMFAULT", kind: MacroKind::Format(KFD_EVENT_FMT_VMFAULT) },
    FunctionMacro {
        name: "KFD_EVENT_FMT_PAGEFAULT_START",
        kind: MacroKind::Format(KFD_EVENT_FMT_PAGEFAULT_START),
    },
    FunctionMacro {
        name: "KFD_EVENT_FMT_PAGEFAULT_END",
        kind: MacroKind::Format(KFD_EVENT_FMT_PAGEFAULT_END),
    },
    FunctionMacro {
        name: "KFD_EVENT_FMT_MIGRATE_START",
        kind: MacroKind::Format(KFD_EVENT_FMT_MIGRATE_START),
    },
    FunctionMacro {
        name: "KFD_EVENT_FMT_MIGRATE_END",
        kind: MacroKind::Format(KFD_EVENT_FMT_MIGRATE_END),
    },
    FunctionMacro {
        name: "KFD_EVENT_FMT_QUEUE_EVICTION",
        kind: MacroKind::Format(KFD_EVENT_FMT_QUEUE_EVICTION),
    },
    FunctionMacro {
        name: "KFD_EVENT_FMT_QUEUE_RESTORE",
        kind: MacroKind::Format(KFD_EVENT_FMT_QUEUE_RESTORE),
    },
    FunctionMacro {
        name: "KFD_EVENT_FMT_UNMAP_FROM_GPU",
        kind: MacroKind::Format(KFD_EVENT_FMT_UNMAP_FROM_GPU),
    },
    FunctionMacro { name: "KFD_EVENT_FMT_PROCESS", kind: MacroKind::Format(KFD_EVENT_FMT_PROCESS) },
];
