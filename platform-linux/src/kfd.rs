//! `/dev/kfd` ioctls: the typed [`Ioctl`] requests of core turned into the kernel's request
//! codes and argument memory.
//!
//! Kernel facts (`kfd_chardev.c`): the kernel indexes its table by `_IOC_NR` only, copies
//! `_IOC_SIZE(cmd)` bytes in, zero-fills up to its own struct size and copies the same number
//! of bytes back, so the request size is always the size of our (1.23) struct. A file opened by
//! another process (a forked child using its parent's descriptor) gets `EBADF`. Numbers outside
//! `[0x01, 0x29)` get `ENOTTY`, and so does a descriptor that is not amdkfd at all.

use core::ffi::c_void;
use core::mem::size_of;

use hsakmt_core::error::Errno;
use hsakmt_core::platform::{DbgTrapData, Ioctl};
use hsakmt_core::uapi::{
    self, kfd_ioctl_dbg_trap_args, kfd_ioctl_svm_args, kfd_ioctl_svm_attribute,
};
use rustix::fd::BorrowedFd;
use rustix::ioctl::{IoctlOutput, Opcode};

/// Most SVM attributes one `AMDKFD_IOC_SVM` call can carry (the argument is assembled in a
/// stack buffer; libhsakmt's callers pass at most a handful).
pub const MAX_SVM_ATTRS: usize = 64;

/// One raw ioctl: request code and argument pointer.
struct Raw {
    code: u32,
    arg: *mut c_void,
}

// SAFETY: `Raw` passes a pointer to a live, correctly sized argument (built by `issue` from a
// `&mut` borrow or a local buffer that outlives the call); the kernel reads and writes at most
// `_IOC_SIZE(code)` bytes, which `issue` makes equal to the argument's size.
unsafe impl rustix::ioctl::Ioctl for Raw {
    type Output = u32;
    const IS_MUTATING: bool = true;

    fn opcode(&self) -> Opcode {
        self.code as Opcode
    }

    fn as_ptr(&mut self) -> *mut c_void {
        self.arg
    }

    unsafe fn output_from_ptr(out: IoctlOutput, _: *mut c_void) -> rustix::io::Result<u32> {
        // rustix turned negative results into errors; what is left is >= 0.
        Ok(out.unsigned_abs())
    }
}

fn call(fd: BorrowedFd<'_>, code: u32, arg: *mut c_void) -> Result<(), Errno> {
    call_counted(fd, code, arg).map(|_| ())
}

/// [`call`] returning the ioctl's non-negative result (the queue count of `DBG_TRAP`'s
/// suspend and resume).
fn call_counted(fd: BorrowedFd<'_>, code: u32, arg: *mut c_void) -> Result<u32, Errno> {
    // SAFETY: see `impl Ioctl for Raw`; every caller passes a pointer to an argument of exactly
    // `_IOC_SIZE(code)` bytes that stays borrowed for the duration of the call.
    unsafe { rustix::ioctl::ioctl(fd, Raw { code, arg }) }.map_err(|e| Errno(e.raw_os_error()))
}

fn ptr<T>(arg: &mut T) -> *mut c_void {
    core::ptr::from_mut(arg).cast()
}

fn addr<T>(slice: &[T]) -> u64 {
    slice.as_ptr() as u64
}

fn count<T>(slice: &[T]) -> Result<u32, Errno> {
    u32::try_from(slice.len()).map_err(|_| Errno::E2BIG)
}

/// Issues `request` on `fd`, storing slice addresses and lengths into the argument's pointer
/// and count fields first.
///
/// # Errors
/// The kernel's errno; `E2BIG` when an SVM request has more than [`MAX_SVM_ATTRS`] attributes.
pub fn issue(fd: BorrowedFd<'_>, request: &mut Ioctl<'_>) -> Result<(), Errno> {
    use uapi::*;
    match request {
        Ioctl::GetVersion(a) => call(fd, AMDKFD_IOC_GET_VERSION, ptr(*a)),
        Ioctl::CreateQueue(a) => call(fd, AMDKFD_IOC_CREATE_QUEUE, ptr(*a)),
        Ioctl::DestroyQueue(a) => call(fd, AMDKFD_IOC_DESTROY_QUEUE, ptr(*a)),
        Ioctl::SetMemoryPolicy(a) => call(fd, AMDKFD_IOC_SET_MEMORY_POLICY, ptr(*a)),
        Ioctl::GetClockCounters(a) => call(fd, AMDKFD_IOC_GET_CLOCK_COUNTERS, ptr(*a)),
        Ioctl::GetProcessApertures(a) => call(fd, AMDKFD_IOC_GET_PROCESS_APERTURES, ptr(*a)),
        Ioctl::DbgRegisterDeprecated(a) => call(fd, AMDKFD_IOC_DBG_REGISTER_DEPRECATED, ptr(*a)),
        Ioctl::DbgUnregisterDeprecated(a) => {
            call(fd, AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED, ptr(*a))
        }
        Ioctl::DbgAddressWatchDeprecated(a) => {
            a.content_ptr = 0;
            call(fd, AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED, ptr(*a))
        }
        Ioctl::DbgWaveControlDeprecated(a) => {
            a.content_ptr = 0;
            call(fd, AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED, ptr(*a))
        }
        Ioctl::UpdateQueue(a) => call(fd, AMDKFD_IOC_UPDATE_QUEUE, ptr(*a)),
        Ioctl::CreateEvent(a) => call(fd, AMDKFD_IOC_CREATE_EVENT, ptr(*a)),
        Ioctl::DestroyEvent(a) => call(fd, AMDKFD_IOC_DESTROY_EVENT, ptr(*a)),
        Ioctl::SetEvent(a) => call(fd, AMDKFD_IOC_SET_EVENT, ptr(*a)),
        Ioctl::ResetEvent(a) => call(fd, AMDKFD_IOC_RESET_EVENT, ptr(*a)),
        Ioctl::WaitEvents { args, events } => {
            args.events_ptr = addr(events);
            args.num_events = count(events)?;
            call(fd, AMDKFD_IOC_WAIT_EVENTS, ptr(*args))
        }
        Ioctl::SetScratchBackingVa(a) => call(fd, AMDKFD_IOC_SET_SCRATCH_BACKING_VA, ptr(*a)),
        Ioctl::GetTileConfig { args, tile_config, macro_tile_config } => {
            args.tile_config_ptr = addr(tile_config);
            args.num_tile_configs = count(tile_config)?;
            args.macro_tile_config_ptr = addr(macro_tile_config);
            args.num_macro_tile_configs = count(macro_tile_config)?;
            call(fd, AMDKFD_IOC_GET_TILE_CONFIG, ptr(*args))
        }
        Ioctl::SetTrapHandler(a) => call(fd, AMDKFD_IOC_SET_TRAP_HANDLER, ptr(*a)),
        Ioctl::GetProcessAperturesNew { args, apertures } => {
            args.kfd_process_device_apertures_ptr = addr(apertures);
            args.num_of_nodes = count(apertures)?;
            call(fd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, ptr(*args))
        }
        Ioctl::AcquireVm(a) => call(fd, AMDKFD_IOC_ACQUIRE_VM, ptr(*a)),
        Ioctl::AllocMemoryOfGpu(a) => call(fd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, ptr(*a)),
        Ioctl::FreeMemoryOfGpu(a) => call(fd, AMDKFD_IOC_FREE_MEMORY_OF_GPU, ptr(*a)),
        Ioctl::MapMemoryToGpu { args, devices } => {
            args.device_ids_array_ptr = addr(devices);
            args.n_devices = count(devices)?;
            call(fd, AMDKFD_IOC_MAP_MEMORY_TO_GPU, ptr(*args))
        }
        Ioctl::UnmapMemoryFromGpu { args, devices } => {
            args.device_ids_array_ptr = addr(devices);
            args.n_devices = count(devices)?;
            call(fd, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, ptr(*args))
        }
        Ioctl::SetCuMask { args, mask } => {
            args.cu_mask_ptr = addr(mask);
            args.num_cu_mask = count(mask)?.checked_mul(32).ok_or(Errno::E2BIG)?;
            call(fd, AMDKFD_IOC_SET_CU_MASK, ptr(*args))
        }
        Ioctl::GetQueueWaveState(a) => call(fd, AMDKFD_IOC_GET_QUEUE_WAVE_STATE, ptr(*a)),
        Ioctl::GetDmabufInfo { args, metadata } => {
            args.metadata_ptr = addr(metadata);
            args.metadata_size = count(metadata)?;
            call(fd, AMDKFD_IOC_GET_DMABUF_INFO, ptr(*args))
        }
        Ioctl::ImportDmabuf(a) => call(fd, AMDKFD_IOC_IMPORT_DMABUF, ptr(*a)),
        Ioctl::AllocQueueGws(a) => call(fd, AMDKFD_IOC_ALLOC_QUEUE_GWS, ptr(*a)),
        Ioctl::SmiEvents(a) => call(fd, AMDKFD_IOC_SMI_EVENTS, ptr(*a)),
        Ioctl::Svm { args, attrs } => svm(fd, args, attrs),
        Ioctl::SetXnackMode(a) => call(fd, AMDKFD_IOC_SET_XNACK_MODE, ptr(*a)),
        Ioctl::AvailableMemory(a) => call(fd, AMDKFD_IOC_AVAILABLE_MEMORY, ptr(*a)),
        Ioctl::ExportDmabuf(a) => call(fd, AMDKFD_IOC_EXPORT_DMABUF, ptr(*a)),
        Ioctl::RuntimeEnable(a) => call(fd, AMDKFD_IOC_RUNTIME_ENABLE, ptr(*a)),
        Ioctl::CriuOp(a) => {
            a.devices = 0;
            a.bos = 0;
            a.priv_data = 0;
            call(fd, AMDKFD_IOC_CRIU_OP, ptr(*a))
        }
        Ioctl::DbgTrap { args, data, returned } => {
            bind_dbg_trap(args, data)?;
            *returned = call_counted(fd, AMDKFD_IOC_DBG_TRAP, ptr(*args))?;
            Ok(())
        }
        Ioctl::CreateProcess => call(fd, AMDKFD_IOC_CREATE_PROCESS, core::ptr::null_mut()),
        Ioctl::Profiler(a) => call(fd, AMDKFD_IOC_PROFILER, ptr(*a)),
        _ => Err(Errno::ENOTTY),
    }
}

/// Stores the address and length of `data` into the pointer and count (or size) fields of the
/// `DBG_TRAP` operation `args.op`, and zeroes them when `data` is [`DbgTrapData::None`], so the
/// kernel reads and writes only the caller's slice.
///
/// # Errors
/// `EINVAL` when `data` is not the kind the operation takes.
fn bind_dbg_trap(
    args: &mut kfd_ioctl_dbg_trap_args,
    data: &mut DbgTrapData<'_>,
) -> Result<(), Errno> {
    use uapi::*;
    if !data.fits(args.op) {
        return Err(Errno::EINVAL);
    }
    let entry = |size: usize| u32::try_from(size).map_err(|_| Errno::E2BIG);
    let (ptr, len): (u64, usize) = match data {
        DbgTrapData::None => (0, 0),
        DbgTrapData::RuntimeInfo(r) => {
            (core::ptr::from_mut(*r) as u64, size_of::<kfd_runtime_info>())
        }
        DbgTrapData::QueueIds(q) => (addr(q), q.len()),
        DbgTrapData::ExceptionInfo(b) => (addr(b), b.len()),
        DbgTrapData::QueueSnapshot(s) => (addr(s), s.len()),
        DbgTrapData::DeviceSnapshot(s) => (addr(s), s.len()),
    };
    let len = entry(len)?;
    match args.op {
        KFD_IOC_DBG_TRAP_ENABLE => {
            let mut e = args.op_args.enable();
            e.rinfo_ptr = ptr;
            e.rinfo_size = len;
            args.op_args = e.into();
        }
        KFD_IOC_DBG_TRAP_SUSPEND_QUEUES => {
            let mut s = args.op_args.suspend_queues();
            s.queue_array_ptr = ptr;
            s.num_queues = len;
            args.op_args = s.into();
        }
        KFD_IOC_DBG_TRAP_RESUME_QUEUES => {
            let mut r = args.op_args.resume_queues();
            r.queue_array_ptr = ptr;
            r.num_queues = len;
            args.op_args = r.into();
        }
        KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO => {
            let mut q = args.op_args.query_exception_info();
            q.info_ptr = ptr;
            q.info_size = len;
            args.op_args = q.into();
        }
        KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT => {
            let mut q = args.op_args.queue_snapshot();
            q.snapshot_buf_ptr = ptr;
            q.num_queues = len;
            q.entry_size = entry(size_of::<kfd_queue_snapshot_entry>())?;
            args.op_args = q.into();
        }
        KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT => {
            let mut d = args.op_args.device_snapshot();
            d.snapshot_buf_ptr = ptr;
            d.num_devices = len;
            d.entry_size = entry(size_of::<kfd_dbg_device_info_entry>())?;
            args.op_args = d.into();
        }
        // The other operations carry no user pointer.
        _ => {}
    }
    Ok(())
}

/// `AMDKFD_IOC_SVM` takes the fixed part followed by `nattr` attributes in one block, and the
/// request's size field covers the whole block (`kfd_ioctl` checks it against `nattr`).
fn svm(
    fd: BorrowedFd<'_>,
    args: &mut kfd_ioctl_svm_args,
    attrs: &mut [kfd_ioctl_svm_attribute],
) -> Result<(), Errno> {
    #[repr(C)]
    struct Block {
        head: kfd_ioctl_svm_args,
        attrs: [kfd_ioctl_svm_attribute; MAX_SVM_ATTRS],
    }
    if attrs.len() > MAX_SVM_ATTRS {
        return Err(Errno::E2BIG);
    }
    args.nattr = count(attrs)?;
    let mut block =
        Block { head: *args, attrs: [kfd_ioctl_svm_attribute::default(); MAX_SVM_ATTRS] };
    block.attrs[..attrs.len()].copy_from_slice(attrs);
    let size = size_of::<kfd_ioctl_svm_args>() + size_of_val(attrs);
    let size = u32::try_from(size).map_err(|_| Errno::E2BIG)?;
    // _IOWR('K', 0x20, size): direction 3 in bits 30..31, size in bits 16..29.
    let code = (uapi::AMDKFD_IOC_SVM & !(0x3fff << 16)) | (size << 16);
    let result = call(fd, code, ptr(&mut block));
    *args = block.head;
    attrs.copy_from_slice(&block.attrs[..attrs.len()]);
    result
}
