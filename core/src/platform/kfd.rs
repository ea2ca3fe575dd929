//! The `/dev/kfd` side of the platform boundary: typed ioctl requests, memory mappings, and
//! the safe views of GPU-shared memory core writes rings, signals and doorbells through.

use crate::error::Errno;
use crate::platform::{Access, OpenError, SharedMemory};
use crate::uapi::*;

/// One KFD ioctl with its typed argument.
///
/// Arguments the kernel reaches through a user pointer travel as slices: the platform stores the
/// slice's address and length into the struct's pointer and count fields just before the call
/// (`n_devices`, `num_events`, `nattr`, `num_of_nodes`, …), so core never handles raw pointers
/// and a count can never disagree with its array. Fields holding GPU virtual addresses of memory
/// the library allocated (ring, EOP, context-save area) stay plain `u64`s.
///
/// Every ioctl of `kfd_ioctl.h` 1.23 has a variant. A few carry user pointers the library never
/// fills: the platform zeroes them before the call (see each variant), so the kernel can only
/// write into memory a slice of the request names.
#[derive(Debug)]
#[non_exhaustive]
pub enum Ioctl<'a> {
    /// `AMDKFD_IOC_GET_VERSION`
    GetVersion(&'a mut kfd_ioctl_get_version_args),
    /// `AMDKFD_IOC_CREATE_QUEUE`
    CreateQueue(&'a mut kfd_ioctl_create_queue_args),
    /// `AMDKFD_IOC_DESTROY_QUEUE`
    DestroyQueue(&'a mut kfd_ioctl_destroy_queue_args),
    /// `AMDKFD_IOC_SET_MEMORY_POLICY`
    SetMemoryPolicy(&'a mut kfd_ioctl_set_memory_policy_args),
    /// `AMDKFD_IOC_GET_CLOCK_COUNTERS`
    GetClockCounters(&'a mut kfd_ioctl_get_clock_counters_args),
    /// `AMDKFD_IOC_GET_PROCESS_APERTURES` (deprecated: at most 7 GPUs, the array is inline).
    GetProcessApertures(&'a mut kfd_ioctl_get_process_apertures_args),
    /// `AMDKFD_IOC_UPDATE_QUEUE`
    UpdateQueue(&'a mut kfd_ioctl_update_queue_args),
    /// `AMDKFD_IOC_CREATE_EVENT`
    CreateEvent(&'a mut kfd_ioctl_create_event_args),
    /// `AMDKFD_IOC_DESTROY_EVENT`
    DestroyEvent(&'a mut kfd_ioctl_destroy_event_args),
    /// `AMDKFD_IOC_SET_EVENT`
    SetEvent(&'a mut kfd_ioctl_set_event_args),
    /// `AMDKFD_IOC_RESET_EVENT`
    ResetEvent(&'a mut kfd_ioctl_reset_event_args),
    /// `AMDKFD_IOC_WAIT_EVENTS`; `events_ptr`/`num_events` come from `events`.
    WaitEvents {
        /// Fixed part (timeout, wait_for_all; wait_result on return).
        args: &'a mut kfd_ioctl_wait_events_args,
        /// Per-event data, updated by the kernel (ages, exception data).
        events: &'a mut [kfd_event_data],
    },
    /// `AMDKFD_IOC_DBG_REGISTER_DEPRECATED` (current kernels answer `EPERM`).
    DbgRegisterDeprecated(&'a mut kfd_ioctl_dbg_register_args),
    /// `AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED` (current kernels answer `EPERM`).
    DbgUnregisterDeprecated(&'a mut kfd_ioctl_dbg_unregister_args),
    /// `AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED` (current kernels answer `EPERM`); the platform
    /// zeroes `content_ptr` (the description is never sent).
    DbgAddressWatchDeprecated(&'a mut kfd_ioctl_dbg_address_watch_args),
    /// `AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED` (current kernels answer `EPERM`); the platform
    /// zeroes `content_ptr`.
    DbgWaveControlDeprecated(&'a mut kfd_ioctl_dbg_wave_control_args),
    /// `AMDKFD_IOC_SET_SCRATCH_BACKING_VA`
    SetScratchBackingVa(&'a mut kfd_ioctl_set_scratch_backing_va_args),
    /// `AMDKFD_IOC_GET_TILE_CONFIG`; the two arrays come from the slices.
    GetTileConfig {
        /// Fixed part.
        args: &'a mut kfd_ioctl_get_tile_config_args,
        /// Receives the tile configs.
        tile_config: &'a mut [u32],
        /// Receives the macro tile configs.
        macro_tile_config: &'a mut [u32],
    },
    /// `AMDKFD_IOC_SET_TRAP_HANDLER`
    SetTrapHandler(&'a mut kfd_ioctl_set_trap_handler_args),
    /// `AMDKFD_IOC_GET_PROCESS_APERTURES_NEW`; the array and `num_of_nodes` come from
    /// `apertures` (the kernel writes back how many it filled).
    GetProcessAperturesNew {
        /// Fixed part.
        args: &'a mut kfd_ioctl_get_process_apertures_new_args,
        /// One entry per GPU.
        apertures: &'a mut [kfd_process_device_apertures],
    },
    /// `AMDKFD_IOC_ACQUIRE_VM`
    AcquireVm(&'a mut kfd_ioctl_acquire_vm_args),
    /// `AMDKFD_IOC_ALLOC_MEMORY_OF_GPU`
    AllocMemoryOfGpu(&'a mut kfd_ioctl_alloc_memory_of_gpu_args),
    /// `AMDKFD_IOC_FREE_MEMORY_OF_GPU`
    FreeMemoryOfGpu(&'a mut kfd_ioctl_free_memory_of_gpu_args),
    /// `AMDKFD_IOC_MAP_MEMORY_TO_GPU`; `device_ids_array_ptr`/`n_devices` from `devices`.
    MapMemoryToGpu {
        /// Fixed part (`n_success` in/out).
        args: &'a mut kfd_ioctl_map_memory_to_gpu_args,
        /// gpu_ids to map on.
        devices: &'a [u32],
    },
    /// `AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU`; as for map.
    UnmapMemoryFromGpu {
        /// Fixed part (`n_success` in/out).
        args: &'a mut kfd_ioctl_unmap_memory_from_gpu_args,
        /// gpu_ids to unmap from.
        devices: &'a [u32],
    },
    /// `AMDKFD_IOC_SET_CU_MASK`; `cu_mask_ptr`/`num_cu_mask` (bits) from `mask`.
    SetCuMask {
        /// Fixed part.
        args: &'a mut kfd_ioctl_set_cu_mask_args,
        /// The mask, 32 CUs per word.
        mask: &'a [u32],
    },
    /// `AMDKFD_IOC_GET_QUEUE_WAVE_STATE`
    GetQueueWaveState(&'a mut kfd_ioctl_get_queue_wave_state_args),
    /// `AMDKFD_IOC_GET_DMABUF_INFO`; `metadata_ptr`/`metadata_size` from `metadata`.
    GetDmabufInfo {
        /// Fixed part.
        args: &'a mut kfd_ioctl_get_dmabuf_info_args,
        /// Receives the buffer's metadata (may be empty).
        metadata: &'a mut [u8],
    },
    /// `AMDKFD_IOC_IMPORT_DMABUF`
    ImportDmabuf(&'a mut kfd_ioctl_import_dmabuf_args),
    /// `AMDKFD_IOC_ALLOC_QUEUE_GWS`
    AllocQueueGws(&'a mut kfd_ioctl_alloc_queue_gws_args),
    /// `AMDKFD_IOC_SMI_EVENTS`
    SmiEvents(&'a mut kfd_ioctl_smi_events_args),
    /// `AMDKFD_IOC_SVM`; the trailing attribute array and `nattr` come from `attrs` (the
    /// request's size field covers the fixed part plus the attributes).
    Svm {
        /// Fixed part.
        args: &'a mut kfd_ioctl_svm_args,
        /// Attributes, in and (for GET_ATTR) out.
        attrs: &'a mut [kfd_ioctl_svm_attribute],
    },
    /// `AMDKFD_IOC_SET_XNACK_MODE`
    SetXnackMode(&'a mut kfd_ioctl_set_xnack_mode_args),
    /// `AMDKFD_IOC_CRIU_OP` (privileged). The platform zeroes the `devices`, `bos` and
    /// `priv_data` pointers: only the operations that need no buffer (`PROCESS_INFO`,
    /// `UNPAUSE`, `RESUME`) can succeed through it.
    CriuOp(&'a mut kfd_ioctl_criu_args),
    /// `AMDKFD_IOC_AVAILABLE_MEMORY`
    AvailableMemory(&'a mut kfd_ioctl_get_available_memory_args),
    /// `AMDKFD_IOC_EXPORT_DMABUF`
    ExportDmabuf(&'a mut kfd_ioctl_export_dmabuf_args),
    /// `AMDKFD_IOC_RUNTIME_ENABLE`. `r_debug` is an address the kernel only stores and hands
    /// back to a debugger; it never dereferences it.
    RuntimeEnable(&'a mut kfd_ioctl_runtime_enable_args),
    /// `AMDKFD_IOC_DBG_TRAP`: the user pointer of the operation (and the count or size next to
    /// it) come from `data`, which must be the kind the operation uses
    /// ([`DbgTrapData::fits`]; a mismatch is `EINVAL` without a call). The kernel's return
    /// value (the number of queues `SUSPEND_QUEUES` / `RESUME_QUEUES` acted on, else 0) is
    /// stored into `returned`.
    DbgTrap {
        /// Fixed part: pid, op and the operation's arguments.
        args: &'a mut kfd_ioctl_dbg_trap_args,
        /// The caller's memory behind the operation's pointer.
        data: DbgTrapData<'a>,
        /// The ioctl's non-negative return value (out).
        returned: u32,
    },
    /// `AMDKFD_IOC_CREATE_PROCESS`
    CreateProcess,
    /// `AMDKFD_IOC_PROFILER`
    Profiler(&'a mut kfd_ioctl_profiler_args),
}

/// The caller's memory behind the user pointer of one `AMDKFD_IOC_DBG_TRAP` operation.
///
/// The platform stores the slice's address into the operation's pointer field and its length
/// into the count or size beside it (`rinfo_size`, `num_queues`, `info_size`,
/// `num_queues`/`entry_size`, `num_devices`/`entry_size`), so the kernel never writes past it.
#[derive(Debug)]
pub enum DbgTrapData<'a> {
    /// The operation takes no user memory (its pointer and count are set to 0).
    None,
    /// `ENABLE`: receives the saved [`kfd_runtime_info`].
    RuntimeInfo(&'a mut kfd_runtime_info),
    /// `SUSPEND_QUEUES` / `RESUME_QUEUES`: queue ids in, the same ids with
    /// `KFD_DBG_QUEUE_ERROR_MASK` / `KFD_DBG_QUEUE_INVALID_MASK` set on failure out.
    QueueIds(&'a mut [u32]),
    /// `QUERY_EXCEPTION_INFO`: receives the exception's data.
    ExceptionInfo(&'a mut [u8]),
    /// `GET_QUEUE_SNAPSHOT`: receives one entry per queue (as many as fit).
    QueueSnapshot(&'a mut [kfd_queue_snapshot_entry]),
    /// `GET_DEVICE_SNAPSHOT`: receives one entry per device (as many as fit).
    DeviceSnapshot(&'a mut [kfd_dbg_device_info_entry]),
}

impl DbgTrapData<'_> {
    /// Whether this is the kind of memory operation `op` (`KFD_IOC_DBG_TRAP_*`) takes;
    /// [`DbgTrapData::None`] fits every operation.
    #[must_use]
    pub const fn fits(&self, op: u32) -> bool {
        match self {
            Self::None => true,
            Self::RuntimeInfo(_) => op == KFD_IOC_DBG_TRAP_ENABLE,
            Self::QueueIds(_) => {
                op == KFD_IOC_DBG_TRAP_SUSPEND_QUEUES || op == KFD_IOC_DBG_TRAP_RESUME_QUEUES
            }
            Self::ExceptionInfo(_) => op == KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO,
            Self::QueueSnapshot(_) => op == KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT,
            Self::DeviceSnapshot(_) => op == KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT,
        }
    }
}

impl Ioctl<'_> {
    /// The ioctl's `_IOC_NR` (0x01..0x28).
    #[must_use]
    pub const fn nr(&self) -> u32 {
        match self {
            Self::GetVersion(_) => 0x01,
            Self::CreateQueue(_) => 0x02,
            Self::DestroyQueue(_) => 0x03,
            Self::SetMemoryPolicy(_) => 0x04,
            Self::GetClockCounters(_) => 0x05,
            Self::GetProcessApertures(_) => 0x06,
            Self::UpdateQueue(_) => 0x07,
            Self::CreateEvent(_) => 0x08,
            Self::DestroyEvent(_) => 0x09,
            Self::SetEvent(_) => 0x0A,
            Self::ResetEvent(_) => 0x0B,
            Self::WaitEvents { .. } => 0x0C,
            Self::DbgRegisterDeprecated(_) => 0x0D,
            Self::DbgUnregisterDeprecated(_) => 0x0E,
            Self::DbgAddressWatchDeprecated(_) => 0x0F,
            Self::DbgWaveControlDeprecated(_) => 0x10,
            Self::SetScratchBackingVa(_) => 0x11,
            Self::GetTileConfig { .. } => 0x12,
            Self::SetTrapHandler(_) => 0x13,
            Self::GetProcessAperturesNew { .. } => 0x14,
            Self::AcquireVm(_) => 0x15,
            Self::AllocMemoryOfGpu(_) => 0x16,
            Self::FreeMemoryOfGpu(_) => 0x17,
            Self::MapMemoryToGpu { .. } => 0x18,
            Self::UnmapMemoryFromGpu { .. } => 0x19,
            Self::SetCuMask { .. } => 0x1A,
            Self::GetQueueWaveState(_) => 0x1B,
            Self::GetDmabufInfo { .. } => 0x1C,
            Self::ImportDmabuf(_) => 0x1D,
            Self::AllocQueueGws(_) => 0x1E,
            Self::SmiEvents(_) => 0x1F,
            Self::Svm { .. } => 0x20,
            Self::SetXnackMode(_) => 0x21,
            Self::CriuOp(_) => 0x22,
            Self::AvailableMemory(_) => 0x23,
            Self::ExportDmabuf(_) => 0x24,
            Self::RuntimeEnable(_) => 0x25,
            Self::DbgTrap { .. } => 0x26,
            Self::CreateProcess => 0x27,
            Self::Profiler(_) => 0x28,
        }
    }

    /// The ioctl's name without the `AMDKFD_IOC_` prefix (`"ALLOC_MEMORY_OF_GPU"`).
    #[must_use]
    pub fn name(&self) -> &'static str {
        ioctl_by_nr(self.nr()).map_or("UNKNOWN", |i| i.name.trim_start_matches("AMDKFD_IOC_"))
    }
}

/// The `/dev/kfd` device, render nodes, and virtual memory, at the level of the kernel
/// interface.
pub trait KfdDevice {
    /// A CPU mapping created by this platform.
    type Mapping: SharedMemory;

    /// Opens `/dev/kfd` (once; opening again while open is a no-op).
    ///
    /// # Errors
    /// An [`OpenError`] saying what to do.
    fn open(&self) -> Result<(), OpenError>;

    /// Closes `/dev/kfd`. Mappings already made stay valid until dropped.
    fn close(&self);

    /// Issues one KFD ioctl. The platform does not retry: the caller decides what an `EINTR`
    /// means for the request (see [`Errno::is_retryable`]).
    ///
    /// # Errors
    /// The errno the kernel returned; `EBADF` when the device is not open (or this is a forked
    /// child using the parent's file).
    fn ioctl(&self, request: &mut Ioctl<'_>) -> Result<(), Errno>;

    /// Opens the DRM render node `/dev/dri/renderD<minor>` and returns its descriptor, for
    /// `AMDKFD_IOC_ACQUIRE_VM` and CPU mappings of GPU buffers. The platform keeps it open for
    /// the life of the process (the GPU VM is bound to it).
    ///
    /// # Errors
    /// The errno of the open (`EACCES` when the user is not in the render node's group).
    fn open_render_node(&self, minor: u32) -> Result<u32, Errno>;

    /// Closes a descriptor the kernel or [`KfdDevice::create_pipe`] handed out (a dma-buf from
    /// `EXPORT_DMABUF`, an SMI event stream from `SMI_EVENTS`, a pipe end).
    fn close_fd(&self, fd: u32);

    /// Waits up to `timeout_ms` milliseconds (0: do not wait, negative: no limit) for `fd` to
    /// have data to read; returns whether it has.
    ///
    /// # Errors
    /// `EBADF` for a descriptor the platform does not know; the errno of `poll`.
    fn poll_fd(&self, fd: u32, timeout_ms: i32) -> Result<bool, Errno>;

    /// Reads what `fd` holds, up to `buf.len()` bytes, without waiting: `EAGAIN` when it holds
    /// nothing (poll first).
    ///
    /// # Errors
    /// `EAGAIN` as described; `EBADF` for an unknown descriptor; the errno of `read`.
    fn read_fd(&self, fd: u32, buf: &mut [u8]) -> Result<usize, Errno>;

    /// Writes `data` to `fd` (an SMI stream takes its 8-byte event mask this way); returns the
    /// bytes written.
    ///
    /// # Errors
    /// `EBADF` for an unknown descriptor; the errno of `write` (`EFAULT` from an SMI stream for
    /// fewer than 8 bytes).
    fn write_fd(&self, fd: u32, data: &[u8]) -> Result<usize, Errno>;

    /// Creates a non-blocking pipe and returns its `(read, write)` descriptors: the
    /// notification channel a debugger hands `DBG_TRAP_ENABLE`, into which the kernel writes
    /// one byte per raised exception.
    ///
    /// # Errors
    /// The errno of `pipe2` (`EMFILE`, `ENFILE`).
    fn create_pipe(&self) -> Result<(u32, u32), Errno>;

    /// Reserves `size` bytes of address space (no access, no backing) aligned to `align` (a
    /// power of two), at `hint` when given and free, else where the kernel chooses.
    ///
    /// # Errors
    /// `ENOMEM` when no such range is available; `EEXIST` when `hint` is required but taken.
    fn reserve_va(&self, hint: Option<u64>, size: u64, align: u64) -> Result<u64, Errno>;

    /// Returns a reserved range (or part of one) to the system.
    ///
    /// # Errors
    /// `EINVAL` for a range that is not reserved.
    fn release_va(&self, addr: u64, size: u64) -> Result<(), Errno>;

    /// Maps `size` bytes of `/dev/kfd` at `offset` (doorbell pages, the event page, the MMIO
    /// remap page), at `addr` when given (over a reservation) else anywhere.
    ///
    /// # Errors
    /// The errno of `mmap`.
    fn map_kfd(
        &self,
        offset: u64,
        size: u64,
        addr: Option<u64>,
        access: Access,
    ) -> Result<Self::Mapping, Errno>;

    /// Maps a GPU buffer for the CPU through render node `render_fd` at its mmap `offset`
    /// (from `ALLOC_MEMORY_OF_GPU`), at `addr` (its GPU virtual address, inside a reservation),
    /// so CPU and GPU see the buffer at the same address. The platform also marks the range
    /// `MADV_DONTFORK` so a forked child cannot take references to it.
    ///
    /// # Errors
    /// The errno of `mmap`.
    fn map_buffer(
        &self,
        render_fd: u32,
        offset: u64,
        size: u64,
        addr: u64,
        access: Access,
    ) -> Result<Self::Mapping, Errno>;

    /// Backs `size` bytes at `addr` (inside a reservation) with fresh zeroed anonymous memory,
    /// marked `MADV_DONTFORK` — host memory the GPU reaches as a user pointer (paged system
    /// memory, context-save areas).
    ///
    /// # Errors
    /// The errno of `mmap`/`madvise`.
    fn map_anonymous(&self, addr: u64, size: u64) -> Result<Self::Mapping, Errno>;
}
