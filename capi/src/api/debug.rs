//! Debugger and runtime enable: `hsaKmtRuntimeEnable`, `hsaKmtRuntimeDisable`,
//! `hsaKmtGetRuntimeCapabilities`, `hsaKmtCheckRuntimeDebugSupport`, `hsaKmtDbgEnable`,
//! `hsaKmtDbgDisable`, `hsaKmtDbgGetDeviceData`, `hsaKmtDbgGetQueueData`,
//! `hsaKmtDebugTrapIoctl`, and the deprecated `hsaKmtDbgRegister`, `hsaKmtDbgUnregister`,
//! `hsaKmtDbgWavefrontControl`, `hsaKmtDbgAddressWatch`.
//!
//! The device facade has no debugger and no runtime enable yet (issue #15): these answer as
//! upstream does on a kernel without the debugger API (KFD < 1.13) — `HSAKMT_STATUS_NOT_SUPPORTED`
//! — so ROCr's `hsa_init` proceeds without debugging, as it does on such kernels. The
//! deprecated calls issue ioctls mainline amdkfd removed; upstream reports the kernel's refusal
//! as `HSAKMT_STATUS_ERROR`.

use core::sync::atomic::{AtomicU32, Ordering};

use hsakmt_core::device::{Kfd, MemoryStorage};
use hsakmt_core::platform::Platform;

use super::status::device_status;
use super::{opened, require, tri};
use crate::device::with_kfd;
use crate::types::*;

/// The runtime capabilities the last successful runtime enable reported (never, yet).
static RUNTIME_CAPABILITIES: AtomicU32 = AtomicU32::new(0);

/// Forgets the runtime capabilities (a new open).
pub(super) fn forget_runtime() {
    RUNTIME_CAPABILITIES.store(0, Ordering::Release);
}

/// `HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED` unless the device is open, else `ok`.
fn when_open(what: &str, ok: HSAKMT_STATUS) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    match with_kfd!(dev, k => k.check_open()) {
        Ok(()) => ok,
        Err(e) => device_status(what, &e),
    }
}

/// `HSAKMT_STATUS_INVALID_NODE_UNIT` for an unknown node, else `ok` (after the open check).
fn with_node(what: &str, node: HSAuint32, ok: HSAKMT_STATUS) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    with_kfd!(dev, k => node_status(k, what, node, ok))
}

fn node_status<P: Platform, S: MemoryStorage<P::Mapping>>(
    k: &Kfd<P, S>,
    what: &str,
    node: HSAuint32,
    ok: HSAKMT_STATUS,
) -> HSAKMT_STATUS {
    if let Err(e) = k.check_open() {
        return device_status(what, &e);
    }
    match k.with_topology(|t| t.node_by_user_id(node).is_some()) {
        Ok(true) => ok,
        Ok(false) => HSAKMT_STATUS_INVALID_NODE_UNIT,
        Err(e) => device_status(what, &e),
    }
}

/// `hsaKmtCheckRuntimeDebugSupport`: `HSAKMT_STATUS_NOT_SUPPORTED` (no debugger yet, #15).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtCheckRuntimeDebugSupport() -> HSAKMT_STATUS {
    when_open("hsaKmtCheckRuntimeDebugSupport", HSAKMT_STATUS_NOT_SUPPORTED)
}

/// `hsaKmtRuntimeEnable`: `HSAKMT_STATUS_NOT_SUPPORTED` (runtime enable comes with the debugger,
/// #15); ROCr continues without it.
///
/// # Safety
/// `rDebug` is not dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRuntimeEnable(
    _rDebug: *mut core::ffi::c_void,
    _setupTtmp: bool,
) -> HSAKMT_STATUS {
    when_open("hsaKmtRuntimeEnable", HSAKMT_STATUS_NOT_SUPPORTED)
}

/// `hsaKmtRuntimeDisable`: the runtime is never enabled here, so it is already disabled.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRuntimeDisable() -> HSAKMT_STATUS {
    when_open("hsaKmtRuntimeDisable", HSAKMT_STATUS_SUCCESS)
}

/// `hsaKmtGetRuntimeCapabilities`: the capabilities of the last runtime enable (0: none), as
/// upstream.
///
/// # Safety
/// `caps_mask` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetRuntimeCapabilities(caps_mask: *mut HSAuint32) -> HSAKMT_STATUS {
    require!(caps_mask, HSAKMT_STATUS_INVALID_PARAMETER);
    // SAFETY: non-NULL and valid for writes, as the caller guarantees.
    unsafe { caps_mask.write(RUNTIME_CAPABILITIES.load(Ordering::Acquire)) };
    HSAKMT_STATUS_SUCCESS
}

/// `hsaKmtDbgEnable`: `HSAKMT_STATUS_NOT_SUPPORTED` (#15).
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgEnable(
    _runtime_info: *mut *mut core::ffi::c_void,
    _data_size: *mut HSAuint32,
) -> HSAKMT_STATUS {
    when_open("hsaKmtDbgEnable", HSAKMT_STATUS_NOT_SUPPORTED)
}

/// `hsaKmtDbgDisable`: `HSAKMT_STATUS_NOT_SUPPORTED` (#15).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgDisable() -> HSAKMT_STATUS {
    when_open("hsaKmtDbgDisable", HSAKMT_STATUS_NOT_SUPPORTED)
}

/// `hsaKmtDbgGetDeviceData`: `HSAKMT_STATUS_NOT_SUPPORTED` (#15).
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgGetDeviceData(
    _data: *mut *mut core::ffi::c_void,
    _n_entries: *mut HSAuint32,
    _entry_size: *mut HSAuint32,
) -> HSAKMT_STATUS {
    when_open("hsaKmtDbgGetDeviceData", HSAKMT_STATUS_NOT_SUPPORTED)
}

/// `hsaKmtDbgGetQueueData`: `HSAKMT_STATUS_NOT_SUPPORTED` (#15).
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgGetQueueData(
    _data: *mut *mut core::ffi::c_void,
    _n_entries: *mut HSAuint32,
    _entry_size: *mut HSAuint32,
    _suspend_queues: bool,
) -> HSAKMT_STATUS {
    when_open("hsaKmtDbgGetQueueData", HSAKMT_STATUS_NOT_SUPPORTED)
}

/// `hsaKmtDebugTrapIoctl`: `HSAKMT_STATUS_NOT_SUPPORTED` (#15).
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDebugTrapIoctl(
    _arg: *mut hsakmt_core::uapi::kfd_ioctl_dbg_trap_args,
    _Queues: *mut HSA_QUEUEID,
    _DebugReturn: *mut HSAuint64,
) -> HSAKMT_STATUS {
    when_open("hsaKmtDebugTrapIoctl", HSAKMT_STATUS_NOT_SUPPORTED)
}

/// `hsaKmtDbgRegister`: a deprecated ioctl mainline amdkfd no longer has: `HSAKMT_STATUS_ERROR`
/// for a valid node, as upstream reports the kernel's refusal.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgRegister(NodeId: HSAuint32) -> HSAKMT_STATUS {
    with_node("hsaKmtDbgRegister", NodeId, HSAKMT_STATUS_ERROR)
}

/// `hsaKmtDbgUnregister`: see [`hsaKmtDbgRegister`].
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgUnregister(NodeId: HSAuint32) -> HSAKMT_STATUS {
    with_node("hsaKmtDbgUnregister", NodeId, HSAKMT_STATUS_ERROR)
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
    with_node("hsaKmtDbgWavefrontControl", NodeId, HSAKMT_STATUS_ERROR)
}

/// `hsaKmtDbgAddressWatch`: see [`hsaKmtDbgRegister`].
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgAddressWatch(
    NodeId: HSAuint32,
    _NumWatchPoints: HSAuint32,
    _WatchMode: *mut HSA_DBG_WATCH_MODE,
    _WatchAddress: *mut *mut core::ffi::c_void,
    _WatchMask: *mut HSAuint64,
    _WatchEvent: *mut *mut HsaEvent,
) -> HSAKMT_STATUS {
    with_node("hsaKmtDbgAddressWatch", NodeId, HSAKMT_STATUS_ERROR)
}
