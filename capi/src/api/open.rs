//! Open, close and version: `hsaKmtOpenKFD`, `hsaKmtCloseKFD`, `hsaKmtGetVersion`,
//! `hsaKmtModelEnabled`.
//!
//! Open and close are reference counted as upstream: a second open answers
//! `HSAKMT_STATUS_KERNEL_ALREADY_OPENED` (and counts), closing a closed library answers
//! `HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED`. In a forked child every call answers
//! `HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED` until the child opens again (which forgets the
//! parent's state); a close in the child succeeds without touching anything, as upstream's.

use std::sync::Mutex;

use hsakmt_core::device::{Error as DeviceError, Opened};

use super::status::device_status;
use super::{event_slots, opened, queue_slots, require, tri};
use crate::device::{device_or_build, log_err, with_kfd};
use crate::types::*;

/// Serialises open and close with the library's own per-open state.
static LIFECYCLE: Mutex<()> = Mutex::new(());

/// Forgets what the previous open (or the parent process) left in the library's tables.
fn forget_session() {
    event_slots::clear();
    queue_slots::clear();
    super::system::forget_mmio();
}

/// `hsaKmtOpenKFD`: opens the device (reference counted).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtOpenKFD() -> HSAKMT_STATUS {
    let _guard = LIFECYCLE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dev = match device_or_build() {
        Ok(d) => d,
        Err(message) => {
            log_err!("hsaKmtOpenKFD: {message}");
            return HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
        }
    };
    with_kfd!(dev, k => match k.open() {
        Ok(Opened::First) => {
            forget_session();
            HSAKMT_STATUS_SUCCESS
        }
        Ok(Opened::Again { .. }) => HSAKMT_STATUS_KERNEL_ALREADY_OPENED,
        Err(DeviceError::Ioctl { .. } | DeviceError::Topology(_)) => {
            log_err!("hsaKmtOpenKFD: the kernel refused the open");
            HSAKMT_STATUS_ERROR
        }
        Err(e) => device_status("hsaKmtOpenKFD", &e),
    })
}

/// `hsaKmtCloseKFD`: closes one open; the last close destroys the process's queues and events
/// and releases its memory.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtCloseKFD() -> HSAKMT_STATUS {
    let _guard = LIFECYCLE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dev = tri!(opened());
    with_kfd!(dev, k => {
        match k.check_open() {
            Ok(()) => {}
            Err(DeviceError::ForkedChild) => return HSAKMT_STATUS_SUCCESS,
            Err(e) => return device_status("hsaKmtCloseKFD", &e),
        }
        let last = k.open_count() == 1;
        if last {
            super::system::release_mmio(k);
        }
        match k.close() {
            Ok(()) => {
                if last {
                    forget_session();
                }
                HSAKMT_STATUS_SUCCESS
            }
            Err(e) => device_status("hsaKmtCloseKFD", &e),
        }
    })
}

/// `hsaKmtGetVersion`: the kernel's KFD interface version.
///
/// # Safety
/// `VersionInfo` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetVersion(VersionInfo: *mut HsaVersionInfo) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    let v =
        tri!(with_kfd!(dev, k => k.version().map_err(|e| device_status("hsaKmtGetVersion", &e))));
    require!(VersionInfo, HSAKMT_STATUS_INVALID_PARAMETER);
    let info = HsaVersionInfo {
        KernelInterfaceMajorVersion: v.major,
        KernelInterfaceMinorVersion: v.minor,
    };
    // SAFETY: non-NULL, and the caller guarantees it is valid for writes of an HsaVersionInfo
    // (packed, so unaligned writes are allowed).
    unsafe { VersionInfo.write_unaligned(info) };
    HSAKMT_STATUS_SUCCESS
}

/// `hsaKmtModelEnabled`: whether libhsakmt's software-model backend drives the device. Never:
/// this library's simulator stands in for the kernel itself, so ROCr must initialise its driver
/// as for real hardware.
///
/// # Safety
/// `enable` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtModelEnabled(enable: *mut bool) -> HSAKMT_STATUS {
    require!(enable, HSAKMT_STATUS_INVALID_PARAMETER);
    // SAFETY: non-NULL and valid for writes, as the caller guarantees.
    unsafe { enable.write(false) };
    HSAKMT_STATUS_SUCCESS
}
