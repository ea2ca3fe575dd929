//! `/dev/kfd` ioctls: the typed [`Ioctl`] requests of core turned into the kernel's request
//! codes and argument memory.
//!
//! Each request code is tied to its argument type at compile time: the wrapper takes a `&mut T`
//! and issues `T::CHECKED_REQUEST` ([`IoctlArg`]), whose size field core proves equal to
//! `size_of::<T>()`; no code is paired with an argument by hand. `AMDKFD_IOC_SVM`, whose size
//! covers a variable number of trailing attributes, builds its code from the same checked one.
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
    self, IoctlArg, kfd_ioctl_dbg_trap_args, kfd_ioctl_svm_args, kfd_ioctl_svm_attribute,
};
use rustix::fd::BorrowedFd;
use rustix::ioctl::{IoctlOutput, Opcode};

use crate::errno::from_rustix;

/// Most SVM attributes one `AMDKFD_IOC_SVM` call can carry (the argument is assembled in a
/// stack buffer; libhsakmt's callers pass at most a handful).
pub const MAX_SVM_ATTRS: usize = 64;

/// One raw ioctl: request code and argument pointer.
struct Raw {
    code: u32,
    arg: *mut c_void,
}

// SAFETY: `Raw` passes a pointer to a live, correctly sized argument (built by `call` from a
// `&mut T` whose code carries `size_of::<T>()`, or by `svm` from a local block whose size the
// code carries); the kernel reads and writes at most `_IOC_SIZE(code)` bytes.
unsafe impl rustix::ioctl::Ioctl for Raw {
    type Output = u32;
    const IS_MUTATING: bool = true;

    fn opcode(&self) -> Opcode {
        self.code as Opcode
    }

    fn as_ptr(&mut self) -> *mut c_void {
        self.arg
    }

    // SAFETY: the trait's contract (the ioctl succeeded, the pointer is `as_ptr`'s); nothing
    // is read through it: the kernel updated the argument in place.
    unsafe fn output_from_ptr(out: IoctlOutput, _: *mut c_void) -> rustix::io::Result<u32> {
        // rustix turned negative results into errors; what is left is >= 0.
        Ok(out.unsigned_abs())
    }
}

/// Issues `code` with `arg` (null for `_IO` requests); the ioctl's non-negative result (the
/// queue count of `DBG_TRAP`'s suspend and resume, else 0).
///
/// # Safety
/// `arg` is null for a request without argument, else points to `_IOC_SIZE(code)` bytes that
/// stay borrowed, readable and writable for the call, and every pointer field in them names
/// memory the kernel may read or write as the request defines.
unsafe fn raw(fd: BorrowedFd<'_>, code: u32, arg: *mut c_void) -> Result<u32, Errno> {
    // SAFETY: see `impl Ioctl for Raw` and this function's contract.
    unsafe { rustix::ioctl::ioctl(fd, Raw { code, arg }) }.map_err(from_rustix)
}

/// Issues the request of argument type `T` with `arg`; its pointer fields must already name the
/// caller's slices (`issue` fills them from the borrowed slices of the request) or be zero.
fn call<T: IoctlArg>(fd: BorrowedFd<'_>, arg: &mut T) -> Result<(), Errno> {
    call_counted(fd, arg).map(|_| ())
}

/// [`call`] returning the ioctl's non-negative result.
fn call_counted<T: IoctlArg>(fd: BorrowedFd<'_>, arg: &mut T) -> Result<u32, Errno> {
    // SAFETY: `T::CHECKED_REQUEST` carries `size_of::<T>()` (proved at compile time), and
    // `arg` is a live `&mut T` for the call; `issue` stored the address and length of a
    // borrowed slice into each pointer field of the requests that have one and zeroed the
    // pointer fields of the others.
    unsafe { raw(fd, T::CHECKED_REQUEST, ptr(arg)) }
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
    match request {
        Ioctl::GetVersion(a) => call(fd, *a),
        Ioctl::CreateQueue(a) => call(fd, *a),
        Ioctl::DestroyQueue(a) => call(fd, *a),
        Ioctl::SetMemoryPolicy(a) => call(fd, *a),
        Ioctl::GetClockCounters(a) => call(fd, *a),
        Ioctl::GetProcessApertures(a) => call(fd, *a),
        Ioctl::DbgRegisterDeprecated(a) => call(fd, *a),
        Ioctl::DbgUnregisterDeprecated(a) => call(fd, *a),
        Ioctl::DbgAddressWatchDeprecated(a) => {
            a.content_ptr = 0;
            call(fd, *a)
        }
        Ioctl::DbgWaveControlDeprecated(a) => {
            a.content_ptr = 0;
            call(fd, *a)
        }
        Ioctl::UpdateQueue(a) => call(fd, *a),
        Ioctl::CreateEvent(a) => call(fd, *a),
        Ioctl::DestroyEvent(a) => call(fd, *a),
        Ioctl::SetEvent(a) => call(fd, *a),
        Ioctl::ResetEvent(a) => call(fd, *a),
        Ioctl::WaitEvents { args, events } => {
            args.events_ptr = addr(events);
            args.num_events = count(events)?;
            call(fd, *args)
        }
        Ioctl::SetScratchBackingVa(a) => call(fd, *a),
        Ioctl::GetTileConfig { args, tile_config, macro_tile_config } => {
            args.tile_config_ptr = addr(tile_config);
            args.num_tile_configs = count(tile_config)?;
            args.macro_tile_config_ptr = addr(macro_tile_config);
            args.num_macro_tile_configs = count(macro_tile_config)?;
            call(fd, *args)
        }
        Ioctl::SetTrapHandler(a) => call(fd, *a),
        Ioctl::GetProcessAperturesNew { args, apertures } => {
            args.kfd_process_device_apertures_ptr = addr(apertures);
            args.num_of_nodes = count(apertures)?;
            call(fd, *args)
        }
        Ioctl::AcquireVm(a) => call(fd, *a),
        Ioctl::AllocMemoryOfGpu(a) => call(fd, *a),
        Ioctl::FreeMemoryOfGpu(a) => call(fd, *a),
        Ioctl::MapMemoryToGpu { args, devices } => {
            args.device_ids_array_ptr = addr(devices);
            args.n_devices = count(devices)?;
            call(fd, *args)
        }
        Ioctl::UnmapMemoryFromGpu { args, devices } => {
            args.device_ids_array_ptr = addr(devices);
            args.n_devices = count(devices)?;
            call(fd, *args)
        }
        Ioctl::SetCuMask { args, mask } => {
            args.cu_mask_ptr = addr(mask);
            args.num_cu_mask = count(mask)?.checked_mul(32).ok_or(Errno::E2BIG)?;
            call(fd, *args)
        }
        Ioctl::GetQueueWaveState(a) => call(fd, *a),
        Ioctl::GetDmabufInfo { args, metadata } => {
            args.metadata_ptr = addr(metadata);
            args.metadata_size = count(metadata)?;
            call(fd, *args)
        }
        Ioctl::ImportDmabuf(a) => call(fd, *a),
        Ioctl::AllocQueueGws(a) => call(fd, *a),
        Ioctl::SmiEvents(a) => call(fd, *a),
        Ioctl::Svm { args, attrs } => svm(fd, args, attrs),
        Ioctl::SetXnackMode(a) => call(fd, *a),
        Ioctl::AvailableMemory(a) => call(fd, *a),
        Ioctl::ExportDmabuf(a) => call(fd, *a),
        Ioctl::RuntimeEnable(a) => call(fd, *a),
        Ioctl::CriuOp(a) => {
            a.devices = 0;
            a.bos = 0;
            a.priv_data = 0;
            call(fd, *a)
        }
        Ioctl::DbgTrap { args, data, returned } => {
            bind_dbg_trap(args, data)?;
            *returned = call_counted(fd, *args)?;
            Ok(())
        }
        // SAFETY: `_IO` request: no argument.
        Ioctl::CreateProcess => unsafe {
            raw(fd, uapi::AMDKFD_IOC_CREATE_PROCESS, core::ptr::null_mut()).map(|_| ())
        },
        Ioctl::Profiler(a) => call(fd, *a),
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
    let code = svm_request(attrs.len())?;
    // SAFETY: `block` is a live local holding the fixed part and `nattr` attributes in C
    // layout, at least as many bytes as the code's size field says (`svm_request`).
    let result = unsafe { raw(fd, code, ptr(&mut block)) }.map(|_| ());
    *args = block.head;
    attrs.copy_from_slice(&block.attrs[..attrs.len()]);
    result
}

/// The `AMDKFD_IOC_SVM` request for `attrs` trailing attributes: the checked code of the fixed
/// part with its size field covering the attributes too.
fn svm_request(attrs: usize) -> Result<u32, Errno> {
    let size = size_of::<kfd_ioctl_svm_attribute>()
        .checked_mul(attrs)
        .and_then(|a| a.checked_add(size_of::<kfd_ioctl_svm_args>()))
        .filter(|s| *s <= uapi::_IOC_SIZEMASK as usize)
        .ok_or(Errno::E2BIG)?;
    let fixed = kfd_ioctl_svm_args::CHECKED_REQUEST;
    let (dir, ty, nr) = (uapi::_IOC_DIR(fixed), uapi::_IOC_TYPE(fixed), uapi::_IOC_NR(fixed));
    Ok(uapi::_IOC(dir, ty, nr, u32::try_from(size).map_err(|_| Errno::E2BIG)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svm_request_sizes_cover_the_attributes() {
        // No attributes: the header's code itself.
        assert_eq!(svm_request(0), Ok(uapi::AMDKFD_IOC_SVM));
        let code = svm_request(MAX_SVM_ATTRS).unwrap();
        assert_eq!(code & !(uapi::_IOC_SIZEMASK << uapi::_IOC_SIZESHIFT), {
            uapi::AMDKFD_IOC_SVM & !(uapi::_IOC_SIZEMASK << uapi::_IOC_SIZESHIFT)
        });
        assert_eq!(uapi::_IOC_SIZE(code) as usize, 24 + MAX_SVM_ATTRS * 8);
        assert_eq!(svm_request(usize::MAX), Err(Errno::E2BIG));
        assert_eq!(svm_request(1 << 11), Err(Errno::E2BIG));
    }

    #[test]
    fn every_argument_type_issues_its_own_code() {
        // `call` issues `T::CHECKED_REQUEST`: the code of the header entry naming `T`.
        assert_eq!(
            uapi::kfd_ioctl_create_queue_args::CHECKED_REQUEST,
            uapi::AMDKFD_IOC_CREATE_QUEUE
        );
        assert_eq!(uapi::kfd_ioctl_wait_events_args::CHECKED_REQUEST, uapi::AMDKFD_IOC_WAIT_EVENTS);
    }
}
