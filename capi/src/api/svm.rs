//! Shared virtual memory: `hsaKmtSVMSetAttr`, `hsaKmtSVMGetAttr`, `hsaKmtSetXNACKMode`,
//! `hsaKmtGetXNACKMode` (KFD 1.5), with node ids as upstream translates them: a CPU node is
//! system memory, `INVALID_NODEID` as a preferred location is "undefined", and access
//! attributes need a GPU node.

use hsakmt_core::device::{Error as DeviceError, Kfd, MemoryStorage};
use hsakmt_core::memory::svm_attributes::{
    MAX_SVM_ATTRIBUTES, SvmAttribute, SvmFlags, SvmLocation,
};
use hsakmt_core::memory::{Error as MemError, PAGE_SIZE};
use hsakmt_core::platform::Platform;

use super::status::device_status;
use super::{opened, require, tri};
use crate::device::with_kfd;
use crate::types::*;

/// The typed attribute for a C one, translating node ids as upstream.
fn to_core<P: Platform, S: MemoryStorage<P::Mapping>>(
    k: &Kfd<P, S>,
    a: HSA_SVM_ATTRIBUTE,
    query: bool,
) -> Result<SvmAttribute, HSAKMT_STATUS> {
    let node = |n: u32| -> Result<(bool, u32), HSAKMT_STATUS> {
        k.with_topology(|t| t.node_by_user_id(n).map(|v| v.node().has_gpu()))
            .ok()
            .flatten()
            .map(|gpu| (gpu, n))
            .ok_or(HSAKMT_STATUS_INVALID_NODE_UNIT)
    };
    let location = |n: u32| -> Result<SvmLocation, HSAKMT_STATUS> {
        let (gpu, n) = node(n)?;
        Ok(if gpu { SvmLocation::Node(n) } else { SvmLocation::System })
    };
    let gpu_node = |n: u32| -> Result<u32, HSAKMT_STATUS> {
        match node(n)? {
            (true, n) => Ok(n),
            (false, _) => Err(HSAKMT_STATUS_INVALID_NODE_UNIT),
        }
    };
    let v = a.value;
    Ok(match a.r#type {
        // A query names no location: the kernel answers it.
        HSA_SVM_ATTR_PREFERRED_LOC | HSA_SVM_ATTR_PREFETCH_LOC if query => {
            if a.r#type == HSA_SVM_ATTR_PREFERRED_LOC {
                SvmAttribute::PreferredLocation(SvmLocation::Undefined)
            } else {
                SvmAttribute::PrefetchLocation(SvmLocation::Undefined)
            }
        }
        HSA_SVM_ATTR_PREFERRED_LOC if v == INVALID_NODEID => {
            SvmAttribute::PreferredLocation(SvmLocation::Undefined)
        }
        HSA_SVM_ATTR_PREFERRED_LOC => SvmAttribute::PreferredLocation(location(v)?),
        HSA_SVM_ATTR_PREFETCH_LOC => SvmAttribute::PrefetchLocation(location(v)?),
        HSA_SVM_ATTR_ACCESS => SvmAttribute::Access(gpu_node(v)?),
        HSA_SVM_ATTR_ACCESS_IN_PLACE => SvmAttribute::AccessInPlace(gpu_node(v)?),
        HSA_SVM_ATTR_NO_ACCESS => SvmAttribute::NoAccess(gpu_node(v)?),
        HSA_SVM_ATTR_SET_FLAGS => SvmAttribute::SetFlags(SvmFlags::from_bits_retain(v)),
        HSA_SVM_ATTR_CLR_FLAGS => SvmAttribute::ClearFlags(SvmFlags::from_bits_retain(v)),
        HSA_SVM_ATTR_GRANULARITY => SvmAttribute::Granularity(v),
        // Upstream hands unknown types to the kernel, which refuses them.
        _ => return Err(HSAKMT_STATUS_ERROR),
    })
}

/// The C attribute for a typed one.
fn to_c(a: SvmAttribute) -> HSA_SVM_ATTRIBUTE {
    let loc = |l: SvmLocation| match l {
        SvmLocation::System => 0,
        SvmLocation::Undefined => INVALID_NODEID,
        SvmLocation::Node(n) => n,
    };
    let (r#type, value) = match a {
        SvmAttribute::PreferredLocation(l) => (HSA_SVM_ATTR_PREFERRED_LOC, loc(l)),
        SvmAttribute::PrefetchLocation(l) => (HSA_SVM_ATTR_PREFETCH_LOC, loc(l)),
        SvmAttribute::Access(n) => (HSA_SVM_ATTR_ACCESS, n),
        SvmAttribute::AccessInPlace(n) => (HSA_SVM_ATTR_ACCESS_IN_PLACE, n),
        SvmAttribute::NoAccess(n) => (HSA_SVM_ATTR_NO_ACCESS, n),
        SvmAttribute::SetFlags(f) => (HSA_SVM_ATTR_SET_FLAGS, f.bits()),
        SvmAttribute::ClearFlags(f) => (HSA_SVM_ATTR_CLR_FLAGS, f.bits()),
        SvmAttribute::Granularity(g) => (HSA_SVM_ATTR_GRANULARITY, g),
    };
    HSA_SVM_ATTRIBUTE { r#type, value }
}

/// Upstream's checks of an SVM range (after the open and version checks).
fn check_range(start: u64, size: u64) -> Result<(), HSAKMT_STATUS> {
    if start == 0
        || size == 0
        || !start.is_multiple_of(PAGE_SIZE)
        || !size.is_multiple_of(PAGE_SIZE)
    {
        Err(HSAKMT_STATUS_INVALID_PARAMETER)
    } else {
        Ok(())
    }
}

/// SVM errors as upstream reports them.
fn svm_status(what: &str, e: &DeviceError) -> HSAKMT_STATUS {
    match e {
        DeviceError::NotOpened | DeviceError::ForkedChild | DeviceError::NotSupported { .. } => {
            device_status(what, e)
        }
        DeviceError::Memory(MemError::UnknownNode { .. } | MemError::NotAGpu { .. }) => {
            HSAKMT_STATUS_INVALID_NODE_UNIT
        }
        DeviceError::Memory(MemError::NotSupported) => HSAKMT_STATUS_NOT_SUPPORTED,
        _ => {
            device_status(what, e);
            HSAKMT_STATUS_ERROR
        }
    }
}

/// `hsaKmtSVMSetAttr`.
///
/// # Safety
/// `attrs` is NULL or valid for reads of `nattr` attributes; `start_addr` is not dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSVMSetAttr(
    start_addr: *mut core::ffi::c_void,
    size: HSAuint64,
    nattr: core::ffi::c_uint,
    attrs: *mut HSA_SVM_ATTRIBUTE,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    with_kfd!(dev, k => {
        if let Err(e) = k.check_open().and_then(|()| k.require_minor("SVM", 5)) {
            return device_status("hsaKmtSVMSetAttr", &e);
        }
        tri!(check_range(start_addr as u64, size));
        let n = nattr as usize;
        if n > MAX_SVM_ATTRIBUTES {
            return HSAKMT_STATUS_NO_MEMORY;
        }
        if n > 0 {
            require!(attrs, HSAKMT_STATUS_INVALID_PARAMETER);
        }
        let mut typed = [SvmAttribute::Granularity(0); MAX_SVM_ATTRIBUTES];
        for (i, slot) in typed.iter_mut().take(n).enumerate() {
            // SAFETY: `i < nattr` and the caller guarantees `nattr` readable attributes.
            let a = unsafe { attrs.add(i).read_unaligned() };
            *slot = tri!(to_core(k, a, false));
        }
        match k.svm_set_attributes(start_addr as u64, size, typed.get(..n).unwrap_or_default()) {
            Ok(()) => HSAKMT_STATUS_SUCCESS,
            Err(e) => svm_status("hsaKmtSVMSetAttr", &e),
        }
    })
}

/// `hsaKmtSVMGetAttr`: replaces each attribute's value by the kernel's answer.
///
/// # Safety
/// `attrs` is NULL or valid for reads and writes of `nattr` attributes; `start_addr` is not
/// dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSVMGetAttr(
    start_addr: *mut core::ffi::c_void,
    size: HSAuint64,
    nattr: core::ffi::c_uint,
    attrs: *mut HSA_SVM_ATTRIBUTE,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    with_kfd!(dev, k => {
        if let Err(e) = k.check_open().and_then(|()| k.require_minor("SVM", 5)) {
            return device_status("hsaKmtSVMGetAttr", &e);
        }
        tri!(check_range(start_addr as u64, size));
        let n = nattr as usize;
        if n > MAX_SVM_ATTRIBUTES {
            return HSAKMT_STATUS_NO_MEMORY;
        }
        if n > 0 {
            require!(attrs, HSAKMT_STATUS_INVALID_PARAMETER);
        }
        let mut typed = [SvmAttribute::Granularity(0); MAX_SVM_ATTRIBUTES];
        for (i, slot) in typed.iter_mut().take(n).enumerate() {
            // SAFETY: `i < nattr` and the caller guarantees `nattr` readable attributes.
            let a = unsafe { attrs.add(i).read_unaligned() };
            *slot = tri!(to_core(k, a, true));
        }
        let answers = typed.get_mut(..n).unwrap_or_default();
        match k.svm_get_attributes(start_addr as u64, size, answers) {
            Ok(()) => {
                for (i, a) in answers.iter().enumerate() {
                    // SAFETY: `i < nattr` and the caller guarantees `nattr` writable attributes.
                    unsafe { attrs.add(i).write_unaligned(to_c(*a)) };
                }
                HSAKMT_STATUS_SUCCESS
            }
            Err(e) => svm_status("hsaKmtSVMGetAttr", &e),
        }
    })
}

/// `hsaKmtSetXNACKMode`: turns XNACK on (non-zero) or off; the kernel's `EPERM` answers
/// `HSAKMT_STATUS_NOT_SUPPORTED`, anything else (`EBUSY` while queues exist) `HSAKMT_STATUS_ERROR`.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSetXNACKMode(enable: HSAint32) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    match with_kfd!(dev, k => k.set_xnack_mode(enable != 0)) {
        Ok(()) => HSAKMT_STATUS_SUCCESS,
        Err(e) => svm_status("hsaKmtSetXNACKMode", &e),
    }
}

/// `hsaKmtGetXNACKMode`: whether XNACK is on (1) or off (0).
///
/// # Safety
/// `enable` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetXNACKMode(enable: *mut HSAint32) -> HSAKMT_STATUS {
    require!(enable, HSAKMT_STATUS_INVALID_PARAMETER);
    let dev = tri!(opened());
    match with_kfd!(dev, k => k.xnack_mode()) {
        Ok(on) => {
            // SAFETY: non-NULL and valid for writes, as the caller guarantees.
            unsafe { enable.write(i32::from(on)) };
            HSAKMT_STATUS_SUCCESS
        }
        Err(e) => svm_status("hsaKmtGetXNACKMode", &e),
    }
}
