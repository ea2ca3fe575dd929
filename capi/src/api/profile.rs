//! Profiling besides the counters (`api::pmc`): the streaming performance monitor
//! (`hsaKmtSPM*`), PC sampling (`hsaKmtPcSampling*`) and SMI events (`hsaKmtOpenSMI`).
//!
//! amdkfd has no SPM ioctl and its PC-sampling ioctl is not in KFD 1.23's header, so SPM and
//! PC sampling answer `HSAKMT_STATUS_NOT_SUPPORTED` after upstream's argument checks, as
//! upstream does on a kernel or ASIC without them; calls naming a PC-sampling session answer
//! `HSAKMT_STATUS_INVALID_HANDLE`, since none can exist. SMI events are the kernel's:
//! `AMDKFD_IOC_SMI_EVENTS` is issued as upstream issues it.

use hsakmt_core::platform::Ioctl;
use hsakmt_core::uapi::kfd_ioctl_smi_events_args;

use super::status::device_status;
use super::{opened, require, tri};
use crate::device::with_kfd;
use crate::types::*;

/// After the open check: `HSAKMT_STATUS_INVALID_NODE_UNIT` for an unknown node, else `ok`.
fn node_then(what: &str, node: HSAuint32, ok: HSAKMT_STATUS) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    with_kfd!(dev, k => {
        if let Err(e) = k.check_open() {
            return device_status(what, &e);
        }
        match k.with_topology(|t| t.node_by_user_id(node).is_some()) {
            Ok(true) => ok,
            Ok(false) => HSAKMT_STATUS_INVALID_NODE_UNIT,
            Err(e) => device_status(what, &e),
        }
    })
}

/// `INVALID_PARAMETER` for session 0, else `INVALID_HANDLE`: no PC-sampling session exists.
fn no_trace(trace: HSATraceId) -> HSAKMT_STATUS {
    if trace == 0 { HSAKMT_STATUS_INVALID_PARAMETER } else { HSAKMT_STATUS_INVALID_HANDLE }
}

/// `hsaKmtSPMAcquire`: `HSAKMT_STATUS_NOT_SUPPORTED` (no kernel interface).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSPMAcquire(PreferredNode: HSAuint32) -> HSAKMT_STATUS {
    node_then("hsaKmtSPMAcquire", PreferredNode, HSAKMT_STATUS_NOT_SUPPORTED)
}

/// `hsaKmtSPMRelease`: `HSAKMT_STATUS_NOT_SUPPORTED` (no kernel interface).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSPMRelease(PreferredNode: HSAuint32) -> HSAKMT_STATUS {
    node_then("hsaKmtSPMRelease", PreferredNode, HSAKMT_STATUS_NOT_SUPPORTED)
}

/// `hsaKmtSPMSetDestBuffer`: `HSAKMT_STATUS_NOT_SUPPORTED` (no kernel interface).
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSPMSetDestBuffer(
    PreferredNode: HSAuint32,
    _SizeInBytes: HSAuint32,
    _timeout: *mut HSAuint32,
    _SizeCopied: *mut HSAuint32,
    _DestMemoryAddress: *mut core::ffi::c_void,
    _isSPMDataLoss: *mut bool,
) -> HSAKMT_STATUS {
    node_then("hsaKmtSPMSetDestBuffer", PreferredNode, HSAKMT_STATUS_NOT_SUPPORTED)
}

/// `hsaKmtPcSamplingSupport`: `HSAKMT_STATUS_NOT_SUPPORTED` (no kernel interface).
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPcSamplingSupport() -> HSAKMT_STATUS {
    let dev = tri!(opened());
    match with_kfd!(dev, k => k.check_open()) {
        Ok(()) => HSAKMT_STATUS_NOT_SUPPORTED,
        Err(e) => device_status("hsaKmtPcSamplingSupport", &e),
    }
}

/// `hsaKmtPcSamplingQueryCapabilities`: `HSAKMT_STATUS_NOT_SUPPORTED` (no kernel interface).
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPcSamplingQueryCapabilities(
    NodeId: HSAuint32,
    _sample_info: *mut core::ffi::c_void,
    _sample_info_sz: HSAuint32,
    sz_needed: *mut HSAuint32,
) -> HSAKMT_STATUS {
    require!(sz_needed, HSAKMT_STATUS_INVALID_PARAMETER);
    node_then("hsaKmtPcSamplingQueryCapabilities", NodeId, HSAKMT_STATUS_NOT_SUPPORTED)
}

/// `hsaKmtPcSamplingCreate`: `HSAKMT_STATUS_NOT_SUPPORTED` (no kernel interface).
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPcSamplingCreate(
    node_id: HSAuint32,
    sample_info: *mut HsaPcSamplingInfo,
    traceId: *mut HsaPcSamplingTraceId,
) -> HSAKMT_STATUS {
    if sample_info.is_null() || traceId.is_null() {
        return HSAKMT_STATUS_INVALID_PARAMETER;
    }
    node_then("hsaKmtPcSamplingCreate", node_id, HSAKMT_STATUS_NOT_SUPPORTED)
}

/// `hsaKmtPcSamplingDestroy`: no session exists.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPcSamplingDestroy(
    NodeId: HSAuint32,
    traceId: HsaPcSamplingTraceId,
) -> HSAKMT_STATUS {
    node_then("hsaKmtPcSamplingDestroy", NodeId, no_trace(HSATraceId::from(traceId)))
}

/// `hsaKmtPcSamplingStart`: no session exists.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPcSamplingStart(
    NodeId: HSAuint32,
    traceId: HsaPcSamplingTraceId,
) -> HSAKMT_STATUS {
    node_then("hsaKmtPcSamplingStart", NodeId, no_trace(HSATraceId::from(traceId)))
}

/// `hsaKmtPcSamplingStop`: no session exists.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPcSamplingStop(
    NodeId: HSAuint32,
    traceId: HsaPcSamplingTraceId,
) -> HSAKMT_STATUS {
    node_then("hsaKmtPcSamplingStop", NodeId, no_trace(HSATraceId::from(traceId)))
}

/// `hsaKmtOpenSMI`: opens the kernel's SMI event stream of a GPU (`AMDKFD_IOC_SMI_EVENTS`);
/// `HSAKMT_STATUS_ERROR` when the kernel refuses (a CPU node's gpu_id 0). Read the kernel's
/// event lines from the descriptor after writing an 8-byte event mask to it.
///
/// # Safety
/// `fd` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtOpenSMI(
    NodeId: HSAuint32,
    fd: *mut core::ffi::c_int,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    let r = with_kfd!(dev, k => {
        if let Err(e) = k.check_open() {
            return device_status("hsaKmtOpenSMI", &e);
        }
        let gpu_id = match k.with_topology(|t| t.node_by_user_id(NodeId).map(|n| n.node().gpu_id())) {
            Ok(Some(g)) => g.unwrap_or(0),
            Ok(None) => return HSAKMT_STATUS_INVALID_NODE_UNIT,
            Err(e) => return device_status("hsaKmtOpenSMI", &e),
        };
        require!(fd, HSAKMT_STATUS_INVALID_PARAMETER);
        let mut args = kfd_ioctl_smi_events_args { gpuid: gpu_id, anon_fd: 0 };
        k.ioctl(&mut Ioctl::SmiEvents(&mut args)).map(|()| args.anon_fd)
    });
    match r {
        Ok(anon) => {
            // SAFETY: non-NULL (checked) and valid for writes, as the caller guarantees.
            unsafe { fd.write(anon as core::ffi::c_int) };
            HSAKMT_STATUS_SUCCESS
        }
        Err(e) => {
            device_status("hsaKmtOpenSMI", &e);
            HSAKMT_STATUS_ERROR
        }
    }
}
