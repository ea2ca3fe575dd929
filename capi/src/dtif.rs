//! ROCr's DTIF hook (`HSA_ENABLE_DTIF=1`): the entry points ROCr looks up in `libdtif.so` besides
//! the `hsaKmt*` functions — `DtifCreate`, `DtifDestroy` and nine libdrm functions. Built only
//! with the `dtif` feature, so `libhsakmt.so.1` / `.a` never clash with libdrm in a program that
//! links both.
//!
//! The device functions answer from the library's own handles ([`crate::drm`]). Buffer objects
//! (`amdgpu_bo_*`) and raw DRM commands go through a render node, which this library does not
//! drive: no buffer object can exist, so calls naming one answer `-EINVAL`, and the import and
//! raw command answer `-ENOSYS` (ROCr then reports that dma-buf IPC is unavailable).

use core::ffi::{c_char, c_int, c_ulong, c_void};

use crate::drm::{self, EINVAL, amdgpu_bo_import_result, amdgpu_gpu_info};

/// libdrm's answer for an operation this library cannot perform (`-ENOSYS`).
const ENOSYS: c_int = -38;

/// What `DtifCreate` hands ROCr: an opaque token (ROCr only checks it is not NULL).
static PLATFORM: u64 = 0x4854_4946; // "HTIF"

/// `DtifCreate`: ROCr calls it with `"HSA"` and needs a non-NULL result.
///
/// # Safety
/// `_name` is not dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn DtifCreate(_name: *const c_char) -> *mut c_void {
    (&raw const PLATFORM).cast_mut().cast()
}

/// `DtifDestroy`: nothing to release.
///
/// # Safety
/// No arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn DtifDestroy() {}

/// `amdgpu_device_initialize` (see [`drm::device_initialize`]).
///
/// # Safety
/// The out-pointers are NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amdgpu_device_initialize(
    fd: c_int,
    major_version: *mut u32,
    minor_version: *mut u32,
    device_handle: *mut *mut c_void,
) -> c_int {
    if major_version.is_null() || minor_version.is_null() || device_handle.is_null() {
        return EINVAL;
    }
    match drm::device_initialize(fd) {
        Ok((major, minor, handle)) => {
            // SAFETY: all three non-NULL (checked) and valid for writes, as the caller
            // guarantees.
            unsafe {
                major_version.write(major);
                minor_version.write(minor);
                device_handle.write(handle);
            }
            0
        }
        Err(e) => e,
    }
}

/// `amdgpu_device_deinitialize`: handles are static; 0 for one of this library's.
///
/// # Safety
/// `device_handle` is not dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amdgpu_device_deinitialize(device_handle: *mut c_void) -> c_int {
    if drm::node_of(device_handle).is_some() { 0 } else { EINVAL }
}

/// `amdgpu_query_gpu_info` (see [`drm::query_gpu_info`]).
///
/// # Safety
/// `info` is NULL or valid for writes of libdrm's `struct amdgpu_gpu_info`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amdgpu_query_gpu_info(
    dev: *mut c_void,
    info: *mut amdgpu_gpu_info,
) -> c_int {
    if info.is_null() {
        return EINVAL;
    }
    match drm::query_gpu_info(dev) {
        Ok(i) => {
            // SAFETY: non-NULL and valid for writes, as the caller guarantees.
            unsafe { info.write_unaligned(i) };
            0
        }
        Err(e) => e,
    }
}

/// `amdgpu_bo_cpu_map`: no buffer object exists.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amdgpu_bo_cpu_map(_bo: *mut c_void, _cpu: *mut *mut c_void) -> c_int {
    EINVAL
}

/// `amdgpu_bo_free`: no buffer object exists.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amdgpu_bo_free(_bo: *mut c_void) -> c_int {
    EINVAL
}

/// `amdgpu_bo_export`: no buffer object exists.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amdgpu_bo_export(
    _bo: *mut c_void,
    _type: u32,
    _shared_handle: *mut u32,
) -> c_int {
    EINVAL
}

/// `amdgpu_bo_import`: buffer objects come from render nodes, which this library does not
/// drive.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amdgpu_bo_import(
    _dev: *mut c_void,
    _type: u32,
    _shared_handle: u32,
    _output: *mut amdgpu_bo_import_result,
) -> c_int {
    ENOSYS
}

/// `amdgpu_bo_va_op`: no buffer object exists.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amdgpu_bo_va_op(
    _bo: *mut c_void,
    _offset: u64,
    _size: u64,
    _addr: u64,
    _flags: u64,
    _ops: u32,
) -> c_int {
    EINVAL
}

/// `drmCommandWriteRead`: raw DRM commands go to render nodes, which this library does not
/// drive.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn drmCommandWriteRead(
    _fd: c_int,
    _index: c_ulong,
    _data: *mut c_void,
    _size: c_ulong,
) -> c_int {
    ENOSYS
}
