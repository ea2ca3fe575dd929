//! Debugger and runtime enable: `hsaKmtRuntimeEnable`, `hsaKmtRuntimeDisable`,
//! `hsaKmtGetRuntimeCapabilities`, `hsaKmtCheckRuntimeDebugSupport`, `hsaKmtDbgEnable`,
//! `hsaKmtDbgDisable`, `hsaKmtDbgGetDeviceData`, `hsaKmtDbgGetQueueData`,
//! `hsaKmtDebugTrapIoctl`, and the deprecated `hsaKmtDbgRegister`, `hsaKmtDbgUnregister`,
//! `hsaKmtDbgWavefrontControl`, `hsaKmtDbgAddressWatch`.
//!
//! Each maps onto the device facade's runtime and debugger (`Kfd::runtime_enable`,
//! `Kfd::dbg_enable`, `Kfd::debug_trap_raw` …) and answers with upstream's status
//! (`libhsakmt/src/debug.c`): the runtime calls answer `HSAKMT_STATUS_ERROR` when the device is
//! not open (upstream's support check fails on its system-properties call) and
//! `HSAKMT_STATUS_NOT_SUPPORTED` before KFD 1.13 or on a GPU without debugger firmware; a
//! runtime enable the kernel refuses with `EBUSY` is `HSAKMT_STATUS_UNAVAILABLE`; any other
//! refusal of the kernel is `HSAKMT_STATUS_ERROR`. The `hsaKmtDbg*` calls check the open device
//! and KFD 1.13 (`NOT_SUPPORTED`) first. What `hsaKmtDbgEnable`, `hsaKmtDbgGetDeviceData` and
//! `hsaKmtDbgGetQueueData` return is `malloc`ed, for the caller to `free`, as upstream's.
//! The deprecated calls issue ioctls mainline amdkfd refuses (`EPERM`): `HSAKMT_STATUS_ERROR`
//! after the node check.

use core::ffi::c_void;

use hsakmt_core::config::{MAX_DEVICE_QUEUES, NODE_SET_CAPACITY};
use hsakmt_core::device::queue_manager::QueueHandle;
use hsakmt_core::device::{Error as DeviceError, Kfd, MemoryStorage};
use hsakmt_core::error::Errno;
use hsakmt_core::platform::{DbgTrapData, Platform};
use hsakmt_core::uapi::{
    KFD_IOC_DBG_TRAP_ENABLE, KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT,
    KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO,
    KFD_IOC_DBG_TRAP_RESUME_QUEUES, KFD_IOC_DBG_TRAP_SUSPEND_QUEUES, kfd_dbg_device_info_entry,
    kfd_ioctl_dbg_trap_args, kfd_queue_snapshot_entry, kfd_runtime_info,
};

use super::status::device_status;
use super::{opened, require, tri};
use crate::device::{device, with_kfd};
use crate::types::*;

// SAFETY: `malloc` is the C library's, with C's signature (the library links against libc).
unsafe extern "C" {
    /// The C library's allocator: callers `free` what these calls return, as upstream's.
    fn malloc(size: usize) -> *mut c_void;
}

/// `malloc`s a copy of `bytes` (at least one byte, so the caller's `free` always has a
/// pointer); NULL when the allocation fails.
fn malloc_copy(bytes: &[u8]) -> *mut c_void {
    // SAFETY: `malloc` has no preconditions; a non-NULL result is valid for `len.max(1)` bytes,
    // of which the first `len` are written from `bytes`, which cannot overlap fresh memory.
    unsafe {
        let p = malloc(bytes.len().max(1));
        if !p.is_null() {
            core::ptr::copy_nonoverlapping(bytes.as_ptr(), p.cast::<u8>(), bytes.len());
        }
        p
    }
}

/// The bytes of `items` (plain kernel structs without padding or pointers).
fn bytes_of<T: Copy>(items: &[T]) -> &[u8] {
    // SAFETY: `T` is one of the kernel's `#[repr(C)]` structs of integers, every byte of
    // which is initialised; the slice covers exactly `items`.
    unsafe { core::slice::from_raw_parts(items.as_ptr().cast::<u8>(), size_of_val(items)) }
}

/// Upstream's support check's statuses: the device not open is `ERROR` (its
/// `hsaKmtAcquireSystemProperties` fails), a kernel or firmware without the debugger
/// `NOT_SUPPORTED`.
fn support_status(what: &str, e: &DeviceError) -> HSAKMT_STATUS {
    match device_status(what, e) {
        HSAKMT_STATUS_NOT_SUPPORTED => HSAKMT_STATUS_NOT_SUPPORTED,
        _ => HSAKMT_STATUS_ERROR,
    }
}

/// A `hsaKmtDbg*` call's statuses: not open, `NOT_SUPPORTED` before KFD 1.13, else the kernel's
/// refusal as `ERROR`.
fn dbg_status(what: &str, e: &DeviceError) -> HSAKMT_STATUS {
    match device_status(what, e) {
        s @ (HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED | HSAKMT_STATUS_NOT_SUPPORTED) => s,
        _ => HSAKMT_STATUS_ERROR,
    }
}

/// `hsaKmtCheckRuntimeDebugSupport`: every GPU's firmware supports the debugger and the kernel
/// is KFD 1.13 or newer (`SUCCESS`), else `NOT_SUPPORTED`; `ERROR` when the device is not open.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtCheckRuntimeDebugSupport() -> HSAKMT_STATUS {
    let Some(dev) = device() else { return HSAKMT_STATUS_ERROR };
    match with_kfd!(dev, k => k.check_runtime_debug_support()) {
        Ok(()) => HSAKMT_STATUS_SUCCESS,
        Err(e) => support_status("hsaKmtCheckRuntimeDebugSupport", &e),
    }
}

/// `hsaKmtRuntimeEnable`: the support check, then `AMDKFD_IOC_RUNTIME_ENABLE` with `rDebug`
/// (ROCr's rendezvous address) and trap temporaries when `setupTtmp`. `UNAVAILABLE` when the
/// runtime is enabled already (`EBUSY`), `ERROR` for any other refusal (`EEXIST`: queues
/// exist). With a debugger attached the call waits for the debugger's answer, as the kernel
/// makes it.
///
/// # Safety
/// `rDebug` is not dereferenced (the kernel keeps the address for the debugger).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRuntimeEnable(
    rDebug: *mut c_void,
    setupTtmp: bool,
) -> HSAKMT_STATUS {
    let Some(dev) = device() else { return HSAKMT_STATUS_ERROR };
    match with_kfd!(dev, k => k.runtime_enable(rDebug as u64, setupTtmp)) {
        Ok(()) => HSAKMT_STATUS_SUCCESS,
        Err(e @ DeviceError::Ioctl { errno: Errno::EBUSY, .. }) => {
            device_status("hsaKmtRuntimeEnable", &e);
            HSAKMT_STATUS_UNAVAILABLE
        }
        Err(e) => support_status("hsaKmtRuntimeEnable", &e),
    }
}

/// `hsaKmtRuntimeDisable`: the support check, then the runtime disable (the kernel accepts it
/// whether or not the runtime was enabled).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRuntimeDisable() -> HSAKMT_STATUS {
    let Some(dev) = device() else { return HSAKMT_STATUS_ERROR };
    match with_kfd!(dev, k => k.runtime_disable()) {
        Ok(()) => HSAKMT_STATUS_SUCCESS,
        Err(e) => support_status("hsaKmtRuntimeDisable", &e),
    }
}

/// `hsaKmtGetRuntimeCapabilities`: the capabilities mask of the last successful runtime enable
/// (0 before one), as upstream; no open check, as upstream.
///
/// # Safety
/// `caps_mask` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetRuntimeCapabilities(caps_mask: *mut HSAuint32) -> HSAKMT_STATUS {
    require!(caps_mask, HSAKMT_STATUS_INVALID_PARAMETER);
    let caps = device().map_or(0, |dev| with_kfd!(dev, k => k.runtime_capabilities()));
    // SAFETY: non-NULL and valid for writes, as the caller guarantees.
    unsafe { caps_mask.write_unaligned(caps) };
    HSAKMT_STATUS_SUCCESS
}

/// `hsaKmtDbgEnable`: starts a debug session on the calling process and returns the runtime
/// info (`struct kfd_runtime_info`, `malloc`ed) and its size. Notifications go to a pipe of the
/// library's, not to the `/dev/kfd` descriptor upstream passes (the kernel's writes into that
/// fail); `EALREADY` (a session exists) and other refusals are `ERROR`.
///
/// # Safety
/// `runtime_info` and `data_size` are NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgEnable(
    runtime_info: *mut *mut c_void,
    data_size: *mut HSAuint32,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    require!(runtime_info, HSAKMT_STATUS_INVALID_PARAMETER);
    require!(data_size, HSAKMT_STATUS_INVALID_PARAMETER);
    let info = match with_kfd!(dev, k => k.dbg_enable()) {
        Ok(i) => i,
        Err(e) => return dbg_status("hsaKmtDbgEnable", &e),
    };
    let raw = kfd_runtime_info {
        r_debug: info.r_debug,
        runtime_state: info.state.raw(),
        ttmp_setup: u32::from(info.ttmp_setup),
    };
    let p = malloc_copy(bytes_of(core::slice::from_ref(&raw)));
    if p.is_null() {
        return HSAKMT_STATUS_NO_MEMORY;
    }
    // SAFETY: both non-NULL (checked) and valid for writes, as the caller guarantees.
    unsafe {
        runtime_info.write_unaligned(p);
        data_size.write_unaligned(size_of::<kfd_runtime_info>() as u32);
    }
    HSAKMT_STATUS_SUCCESS
}

/// `hsaKmtDbgDisable`: ends the calling process's debug session (`ERROR` without one).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgDisable() -> HSAKMT_STATUS {
    let dev = tri!(opened());
    match with_kfd!(dev, k => k.dbg_disable()) {
        Ok(()) => HSAKMT_STATUS_SUCCESS,
        Err(e) => dbg_status("hsaKmtDbgDisable", &e),
    }
}

/// `hsaKmtDbgGetDeviceData`: the device snapshot of the calling process (one
/// `struct kfd_dbg_device_info_entry` per GPU, `malloc`ed), its entry count and entry size.
/// Needs a debug session (`ERROR` without one).
///
/// # Safety
/// The three pointers are NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgGetDeviceData(
    data: *mut *mut c_void,
    n_entries: *mut HSAuint32,
    entry_size: *mut HSAuint32,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    require!(data, HSAKMT_STATUS_INVALID_PARAMETER);
    require!(n_entries, HSAKMT_STATUS_INVALID_PARAMETER);
    require!(entry_size, HSAKMT_STATUS_INVALID_PARAMETER);
    let mut entries = vec![kfd_dbg_device_info_entry::default(); NODE_SET_CAPACITY];
    let n = match with_kfd!(dev, k => k.dbg_device_data(&mut entries)) {
        Ok(n) => n,
        Err(e) => return dbg_status("hsaKmtDbgGetDeviceData", &e),
    };
    let kept = entries.get(..n as usize).unwrap_or(&entries);
    // SAFETY: all non-NULL (checked) and valid for writes, as the caller guarantees.
    unsafe { hand_out(kept, data, n_entries, entry_size) }
}

/// `hsaKmtDbgGetQueueData`: the queue snapshot of the calling process (one
/// `struct kfd_queue_snapshot_entry` per queue, `malloc`ed; the queues are marked seen), with
/// `suspend_queues` after suspending them. Needs a debug session (`ERROR` without one). Unlike
/// upstream, which answers `ERROR` whenever it suspends nothing (`suspend_queues` false, or no
/// queue), the snapshot is returned then too.
///
/// # Safety
/// The three pointers are NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgGetQueueData(
    data: *mut *mut c_void,
    n_entries: *mut HSAuint32,
    entry_size: *mut HSAuint32,
    suspend_queues: bool,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    require!(data, HSAKMT_STATUS_INVALID_PARAMETER);
    require!(n_entries, HSAKMT_STATUS_INVALID_PARAMETER);
    require!(entry_size, HSAKMT_STATUS_INVALID_PARAMETER);
    let mut entries = vec![kfd_queue_snapshot_entry::default(); MAX_DEVICE_QUEUES];
    let n = match with_kfd!(dev, k => k.dbg_queue_data(&mut entries, suspend_queues)) {
        Ok(n) => n,
        Err(e) => return dbg_status("hsaKmtDbgGetQueueData", &e),
    };
    let kept = entries.get(..n as usize).unwrap_or(&entries);
    // SAFETY: all non-NULL (checked) and valid for writes, as the caller guarantees.
    unsafe { hand_out(kept, data, n_entries, entry_size) }
}

/// Hands a snapshot to the C caller as upstream does: a `malloc`ed copy of `entries` in
/// `*data`, their count in `*n_entries`, the size of one in `*entry_size`; `NO_MEMORY` when the
/// copy cannot be allocated (nothing written then).
///
/// # Safety
/// The three pointers are non-NULL and valid for writes.
unsafe fn hand_out<T: Copy>(
    entries: &[T],
    data: *mut *mut c_void,
    n_entries: *mut HSAuint32,
    entry_size: *mut HSAuint32,
) -> HSAKMT_STATUS {
    let p = malloc_copy(bytes_of(entries));
    if p.is_null() {
        return HSAKMT_STATUS_NO_MEMORY;
    }
    // SAFETY: as the caller guarantees.
    unsafe {
        data.write_unaligned(p);
        n_entries.write_unaligned(entries.len() as u32);
        entry_size.write_unaligned(size_of::<T>() as u32);
    }
    HSAKMT_STATUS_SUCCESS
}

/// Writes the kernel queue ids of `queues` (`HSA_QUEUEID`s) into `out`.
fn kernel_queue_ids<P: Platform, S: MemoryStorage<P::Mapping>>(
    k: &Kfd<P, S>,
    queues: &[HSA_QUEUEID],
    out: &mut [u32],
) -> Result<(), HSAKMT_STATUS> {
    for (id, q) in out.iter_mut().zip(queues) {
        let info =
            k.queue_info(QueueHandle::from_raw(*q)).map_err(|_| HSAKMT_STATUS_INVALID_PARAMETER)?;
        *id = info.queue_id;
    }
    Ok(())
}

/// One `DBG_TRAP` operation over the caller's memory: the operation's buffer is copied into
/// a buffer of the library's, the call made, and what the kernel wrote copied back (at the
/// caller's entry size for snapshots). Returns the ioctl's result.
///
/// # Safety
/// The pointer fields of `args` for its operation are NULL or valid for what they describe.
unsafe fn trap_over_user_memory<P: Platform, S: MemoryStorage<P::Mapping>>(
    k: &Kfd<P, S>,
    args: &mut kfd_ioctl_dbg_trap_args,
) -> Result<u32, DeviceError> {
    let op = args.op;
    let copy_out = |dst: u64, src: &[u8]| {
        if dst != 0 {
            // SAFETY: the caller guarantees `dst` is valid for the bytes the operation's
            // count and size describe, which `src` does not exceed.
            unsafe {
                core::ptr::copy_nonoverlapping(src.as_ptr(), dst as *mut u8, src.len());
            }
        }
    };
    match op {
        KFD_IOC_DBG_TRAP_ENABLE => {
            let e = args.op_args.enable();
            let mut info = kfd_runtime_info::default();
            let r = k.debug_trap_raw(args, DbgTrapData::RuntimeInfo(&mut info));
            let mut back = args.op_args.enable();
            let size = (e.rinfo_size as usize).min(size_of::<kfd_runtime_info>());
            if r.is_ok() {
                copy_out(
                    e.rinfo_ptr,
                    bytes_of(core::slice::from_ref(&info)).get(..size).unwrap_or_default(),
                );
            }
            back.rinfo_ptr = e.rinfo_ptr;
            args.op_args = back.into();
            r
        }
        KFD_IOC_DBG_TRAP_SUSPEND_QUEUES | KFD_IOC_DBG_TRAP_RESUME_QUEUES => {
            let (ptr, num) = if op == KFD_IOC_DBG_TRAP_SUSPEND_QUEUES {
                let s = args.op_args.suspend_queues();
                (s.queue_array_ptr, s.num_queues)
            } else {
                let s = args.op_args.resume_queues();
                (s.queue_array_ptr, s.num_queues)
            };
            let mut ids = vec![0u32; if ptr == 0 { 0 } else { num as usize }];
            if ptr != 0 {
                // SAFETY: the caller guarantees `num` ids at `ptr`.
                unsafe {
                    core::ptr::copy_nonoverlapping(ptr as *const u32, ids.as_mut_ptr(), ids.len());
                }
            }
            let r = k.debug_trap_raw(args, DbgTrapData::QueueIds(&mut ids));
            copy_out(ptr, bytes_of(&ids));
            if op == KFD_IOC_DBG_TRAP_SUSPEND_QUEUES {
                let mut s = args.op_args.suspend_queues();
                (s.queue_array_ptr, s.num_queues) = (ptr, num);
                args.op_args = s.into();
            } else {
                let mut s = args.op_args.resume_queues();
                (s.queue_array_ptr, s.num_queues) = (ptr, num);
                args.op_args = s.into();
            }
            r
        }
        KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO => {
            let q = args.op_args.query_exception_info();
            let mut info = vec![0u8; if q.info_ptr == 0 { 0 } else { q.info_size as usize }];
            let r = k.debug_trap_raw(args, DbgTrapData::ExceptionInfo(&mut info));
            copy_out(q.info_ptr, &info);
            let mut back = args.op_args.query_exception_info();
            back.info_ptr = q.info_ptr;
            args.op_args = back.into();
            r
        }
        KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT => {
            let q = args.op_args.queue_snapshot();
            let room = if q.snapshot_buf_ptr == 0 { 0 } else { q.num_queues as usize };
            let mut entries = vec![kfd_queue_snapshot_entry::default(); room];
            let r = k.debug_trap_raw(args, DbgTrapData::QueueSnapshot(&mut entries));
            copy_entries(q.snapshot_buf_ptr, q.entry_size, &entries);
            let mut back = args.op_args.queue_snapshot();
            (back.snapshot_buf_ptr, back.entry_size) = (q.snapshot_buf_ptr, q.entry_size);
            args.op_args = back.into();
            r
        }
        KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT => {
            let d = args.op_args.device_snapshot();
            let room = if d.snapshot_buf_ptr == 0 { 0 } else { d.num_devices as usize };
            let mut entries = vec![kfd_dbg_device_info_entry::default(); room];
            let r = k.debug_trap_raw(args, DbgTrapData::DeviceSnapshot(&mut entries));
            copy_entries(d.snapshot_buf_ptr, d.entry_size, &entries);
            let mut back = args.op_args.device_snapshot();
            (back.snapshot_buf_ptr, back.entry_size) = (d.snapshot_buf_ptr, d.entry_size);
            args.op_args = back.into();
            r
        }
        _ => k.debug_trap_raw(args, DbgTrapData::None),
    }
}

/// Copies snapshot `entries` to `dst` at the caller's `entry_size` (the kernel's rule: as much
/// of each entry as both sizes hold).
fn copy_entries<T: Copy>(dst: u64, entry_size: u32, entries: &[T]) {
    if dst == 0 {
        return;
    }
    let stride = entry_size as usize;
    let len = stride.min(size_of::<T>());
    for (i, e) in entries.iter().enumerate() {
        let src = bytes_of(core::slice::from_ref(e));
        let Some(at) = i.checked_mul(stride).and_then(|o| (dst as usize).checked_add(o)) else {
            return;
        };
        // SAFETY: the caller of `hsaKmtDebugTrapIoctl` guarantees room for the entries it
        // asked for at its entry size; `len` is at most that size.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), at as *mut u8, len) };
    }
}

/// `hsaKmtDebugTrapIoctl`: one `AMDKFD_IOC_DBG_TRAP` operation as the caller built it (its pid
/// and op). With `Queues` (suspend or resume only), the `HSA_QUEUEID`s are first converted into
/// the kernel's queue ids in the operation's array (`INVALID_PARAMETER` for a queue id that
/// names no live queue). `DebugReturn` receives the ioctl's result (-1 when it failed).
/// Suspend and resume succeed when the result is at most the number of ids, other operations
/// when the ioctl succeeded; else `ERROR`.
///
/// # Safety
/// `arg` is NULL or valid for reads and writes, and its operation's pointers are NULL or valid
/// for what they describe; `Queues` is NULL or holds the operation's `num_queues` ids;
/// `DebugReturn` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDebugTrapIoctl(
    arg: *mut kfd_ioctl_dbg_trap_args,
    Queues: *mut HSA_QUEUEID,
    DebugReturn: *mut HSAuint64,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    require!(arg, HSAKMT_STATUS_INVALID_PARAMETER);
    // SAFETY: non-NULL and valid for reads, as the caller guarantees.
    let mut args = unsafe { arg.read_unaligned() };
    let suspend = args.op == KFD_IOC_DBG_TRAP_SUSPEND_QUEUES;
    let resume = args.op == KFD_IOC_DBG_TRAP_RESUME_QUEUES;
    let (array, num) = if suspend {
        let s = args.op_args.suspend_queues();
        (s.queue_array_ptr, s.num_queues)
    } else if resume {
        let s = args.op_args.resume_queues();
        (s.queue_array_ptr, s.num_queues)
    } else {
        (0, 0)
    };
    let r = with_kfd!(dev, k => {
        if let Err(e) = k.check_open() {
            return device_status("hsaKmtDebugTrapIoctl", &e);
        }
        if !Queues.is_null() {
            if !(suspend || resume) || array == 0 {
                return HSAKMT_STATUS_INVALID_PARAMETER;
            }
            // SAFETY: the caller guarantees `num` queue ids at `Queues` and room for `num`
            // kernel ids at the operation's array.
            let (queues, ids) = unsafe {
                (
                    core::slice::from_raw_parts(Queues, num as usize),
                    core::slice::from_raw_parts_mut(array as *mut u32, num as usize),
                )
            };
            tri!(kernel_queue_ids(k, queues, ids));
        }
        // SAFETY: the caller guarantees the operation's pointers.
        unsafe { trap_over_user_memory(k, &mut args) }
    });
    // SAFETY: non-NULL and valid for writes, as the caller guarantees.
    unsafe { arg.write_unaligned(args) };
    let returned = match &r {
        Ok(v) => i64::from(*v),
        Err(_) => -1,
    };
    if !DebugReturn.is_null() {
        // SAFETY: non-NULL and valid for writes, as the caller guarantees.
        unsafe { DebugReturn.write_unaligned(returned as u64) };
    }
    match r {
        Ok(v) if (suspend || resume) && v <= num => HSAKMT_STATUS_SUCCESS,
        Ok(0) => HSAKMT_STATUS_SUCCESS,
        Ok(_) => HSAKMT_STATUS_ERROR,
        Err(e) => {
            device_status("hsaKmtDebugTrapIoctl", &e);
            match e {
                DeviceError::NotOpened | DeviceError::ForkedChild => {
                    HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED
                }
                _ => HSAKMT_STATUS_ERROR,
            }
        }
    }
}

/// Upstream's statuses for a deprecated call: not open, an unknown node
/// (`INVALID_NODE_UNIT`), more than 100 watch points (`INVALID_PARAMETER`), else the kernel's
/// refusal (a CPU node's gpu_id 0 included) as `ERROR`.
fn deprecated<P: Platform, S: MemoryStorage<P::Mapping>>(
    k: &Kfd<P, S>,
    what: &str,
    node: HSAuint32,
    call: impl FnOnce(&Kfd<P, S>) -> Result<(), DeviceError>,
) -> HSAKMT_STATUS {
    if let Err(e) = k.check_open() {
        return device_status(what, &e);
    }
    match k.with_topology(|t| t.node_by_user_id(node).is_some()) {
        Ok(true) => {}
        Ok(false) => return HSAKMT_STATUS_INVALID_NODE_UNIT,
        Err(e) => return device_status(what, &e),
    }
    match call(k) {
        Ok(()) => HSAKMT_STATUS_SUCCESS,
        Err(DeviceError::TooManyWatchPoints { .. }) => HSAKMT_STATUS_INVALID_PARAMETER,
        Err(e) => {
            device_status(what, &e);
            HSAKMT_STATUS_ERROR
        }
    }
}

/// `hsaKmtDbgRegister`: the deprecated `AMDKFD_IOC_DBG_REGISTER`, which current kernels refuse
/// (`ERROR`), after the node check.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgRegister(NodeId: HSAuint32) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    with_kfd!(dev, k => deprecated(k, "hsaKmtDbgRegister", NodeId, |k| k.dbg_register(NodeId)))
}

/// `hsaKmtDbgUnregister`: see [`hsaKmtDbgRegister`].
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgUnregister(NodeId: HSAuint32) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    with_kfd!(dev, k => deprecated(k, "hsaKmtDbgUnregister", NodeId, |k| k.dbg_unregister(NodeId)))
}

/// `hsaKmtDbgWavefrontControl`: see [`hsaKmtDbgRegister`].
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgWavefrontControl(
    NodeId: HSAuint32,
    _Operand: HSA_DBG_WAVEOP,
    _Mode: HSA_DBG_WAVEMODE,
    _TrapId: HSAuint32,
    _DbgWaveMsgRing: *mut HsaDbgWaveMessage,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    with_kfd!(dev, k => {
        deprecated(k, "hsaKmtDbgWavefrontControl", NodeId, |k| k.dbg_wavefront_control(NodeId))
    })
}

/// `hsaKmtDbgAddressWatch`: see [`hsaKmtDbgRegister`]; more than 100 watch points is
/// `INVALID_PARAMETER`, as upstream.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgAddressWatch(
    NodeId: HSAuint32,
    NumWatchPoints: HSAuint32,
    _WatchMode: *mut HSA_DBG_WATCH_MODE,
    _WatchAddress: *mut *mut c_void,
    _WatchMask: *mut HSAuint64,
    _WatchEvent: *mut *mut HsaEvent,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    with_kfd!(dev, k => {
        deprecated(k, "hsaKmtDbgAddressWatch", NodeId, |k| {
            k.dbg_address_watch(NodeId, NumWatchPoints)
        })
    })
}
