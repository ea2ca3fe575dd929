//! Registration: `hsaKmtRegisterMemory[ToNodes|WithFlags]`, `hsaKmtDeregisterMemory`,
//! `hsaKmtRegisterGraphicsHandleToNodes[Ext]`.
//!
//! User memory is registered as a user-pointer buffer on every kernel (upstream prefers SVM
//! attributes where the SVM API exists; the observable results are the same: a GPU address equal
//! to the CPU address, reference-counted registrations, `HSA_POINTER_REGISTERED_USER`).

use hsakmt_core::device::{Error as DeviceError, Kfd, MemoryStorage};
use hsakmt_core::memory::{Error as MemError, MemFlags};
use hsakmt_core::platform::Platform;

use super::memory::{node_array, system_kind, validate_nodes};
use super::status::device_status;
use super::{opened, require, serialized, tri};
use crate::device::with_kfd;
use crate::types::*;

/// Registration results as upstream reports them.
fn register_status(what: &str, r: Result<u64, DeviceError>) -> HSAKMT_STATUS {
    match r {
        Ok(_) => HSAKMT_STATUS_SUCCESS,
        // Memory the library allocated is not a user pointer.
        Err(DeviceError::Memory(MemError::NotUserMemory { .. })) => HSAKMT_STATUS_INVALID_HANDLE,
        Err(DeviceError::Memory(MemError::RegisteredToOtherNodes { .. })) => {
            HSAKMT_STATUS_MEMORY_ALREADY_REGISTERED
        }
        Err(e @ DeviceError::Memory(MemError::InvalidFlags | MemError::ZeroSize)) => {
            device_status(what, &e);
            HSAKMT_STATUS_INVALID_PARAMETER
        }
        Err(DeviceError::Memory(MemError::NotSupported)) => HSAKMT_STATUS_NOT_SUPPORTED,
        Err(e @ (DeviceError::NotOpened | DeviceError::ForkedChild)) => device_status(what, &e),
        Err(e) => {
            device_status(what, &e);
            HSAKMT_STATUS_ERROR
        }
    }
}

/// `hsaKmtRegisterMemory`: registers application memory for GPU access (a no-op success on
/// APU-only systems, as upstream).
///
/// # Safety
/// `MemoryAddress` must be memory of this process for `MemorySizeInBytes` bytes (the kernel
/// pins it).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterMemory(
    MemoryAddress: *mut core::ffi::c_void,
    MemorySizeInBytes: HSAuint64,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    with_kfd!(dev, k => {
        if let Err(e) = k.check_open() {
            return device_status("hsaKmtRegisterMemory", &e);
        }
        if !system_kind(k).0 {
            return HSAKMT_STATUS_SUCCESS;
        }
        register_status(
            "hsaKmtRegisterMemory",
            k.register_memory(MemoryAddress as u64, MemorySizeInBytes),
        )
    })
}

/// `hsaKmtRegisterMemoryToNodes`: as [`hsaKmtRegisterMemory`], mapped by default on exactly
/// the listed nodes (`HSAKMT_STATUS_NOT_SUPPORTED` on APU-only systems, as upstream).
///
/// # Safety
/// As [`hsaKmtRegisterMemory`]; `NodeArray` is NULL or valid for reads of `NumberOfNodes` ids.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterMemoryToNodes(
    MemoryAddress: *mut core::ffi::c_void,
    MemorySizeInBytes: HSAuint64,
    NumberOfNodes: HSAuint64,
    NodeArray: *mut HSAuint32,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    tri!(
        with_kfd!(dev, k => k.check_open().map_err(|e| device_status("hsaKmtRegisterMemoryToNodes", &e)))
    );
    if !with_kfd!(dev, k => system_kind(k).0) {
        return HSAKMT_STATUS_NOT_SUPPORTED;
    }
    // SAFETY: as the caller guarantees.
    let nodes = tri!(unsafe { node_array(NodeArray, NumberOfNodes) });
    with_kfd!(dev, k => {
        tri!(validate_nodes(k, nodes));
        register_status(
            "hsaKmtRegisterMemoryToNodes",
            k.register_memory_to_nodes(MemoryAddress as u64, MemorySizeInBytes, nodes),
        )
    })
}

/// `hsaKmtRegisterMemoryWithFlags`: registration of ordinary paged host memory (`HostAccess`
/// set, `NonPaged` clear, else `HSAKMT_STATUS_NOT_SUPPORTED`) with its coherence flags.
///
/// # Safety
/// As [`hsaKmtRegisterMemory`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterMemoryWithFlags(
    MemoryAddress: *mut core::ffi::c_void,
    MemorySizeInBytes: HSAuint64,
    MemFlags: HsaMemFlags,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    let flags = MemFlags::from_bits_retain(MemFlags.Value);
    with_kfd!(dev, k => {
        if let Err(e) = k.check_open() {
            return device_status("hsaKmtRegisterMemoryWithFlags", &e);
        }
        if flags.contains(MemFlags::EXTENDED_COHERENT | MemFlags::COARSE_GRAIN) {
            return HSAKMT_STATUS_INVALID_PARAMETER;
        }
        if !flags.contains(MemFlags::HOST_ACCESS) || flags.contains(MemFlags::NON_PAGED) {
            return HSAKMT_STATUS_NOT_SUPPORTED;
        }
        if !system_kind(k).0 {
            return HSAKMT_STATUS_NOT_SUPPORTED;
        }
        register_status(
            "hsaKmtRegisterMemoryWithFlags",
            k.register_memory_with_flags(MemoryAddress as u64, MemorySizeInBytes, flags),
        )
    })
}

/// `hsaKmtDeregisterMemory`: drops a registration (user memory: the last one releases it;
/// imported buffers are released; allocated memory forgets its node registration). An unknown
/// address succeeds on APUs or with the SVM API, else answers
/// `HSAKMT_STATUS_MEMORY_NOT_REGISTERED`.
///
/// # Safety
/// `MemoryAddress` is not dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDeregisterMemory(
    MemoryAddress: *mut core::ffi::c_void,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    with_kfd!(dev, k => deregister(k, MemoryAddress as u64))
}

fn deregister<P: Platform, S: MemoryStorage<P::Mapping>>(
    k: &Kfd<P, S>,
    addr: u64,
) -> HSAKMT_STATUS {
    if let Err(e) = k.check_open() {
        return device_status("hsaKmtDeregisterMemory", &e);
    }
    match serialized(|| k.deregister_memory(addr)) {
        Ok(()) => HSAKMT_STATUS_SUCCESS,
        Err(DeviceError::Memory(MemError::UnknownAddress { .. })) => {
            let (dgpu, svm) = system_kind(k);
            if !dgpu || svm { HSAKMT_STATUS_SUCCESS } else { HSAKMT_STATUS_MEMORY_NOT_REGISTERED }
        }
        Err(DeviceError::Memory(MemError::NotRegistered { .. })) => {
            HSAKMT_STATUS_MEMORY_NOT_REGISTERED
        }
        Err(e) => {
            device_status("hsaKmtDeregisterMemory", &e);
            HSAKMT_STATUS_ERROR
        }
    }
}

/// `hsaKmtRegisterGraphicsHandleToNodes`: imports a dma-buf (`GraphicsResourceHandle` is its
/// file descriptor).
///
/// # Safety
/// As [`hsaKmtRegisterGraphicsHandleToNodesExt`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterGraphicsHandleToNodes(
    GraphicsResourceHandle: HSAuint64,
    GraphicsResourceInfo: *mut HsaGraphicsResourceInfo,
    NumberOfNodes: HSAuint64,
    NodeArray: *mut HSAuint32,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract.
    unsafe {
        hsaKmtRegisterGraphicsHandleToNodesExt(
            GraphicsResourceHandle,
            GraphicsResourceInfo,
            NumberOfNodes,
            NodeArray,
            HSA_REGISTER_MEM_FLAGS::default(),
        )
    }
}

/// `hsaKmtRegisterGraphicsHandleToNodesExt`: imports a dma-buf; with nodes it gets a GPU
/// address and is registered to them, without it gets a handle (no address). The buffer's
/// metadata is not kept (`Metadata` is NULL, `MetadataSizeInBytes` the kernel's size).
///
/// # Safety
/// `GraphicsResourceInfo` is NULL or valid for writes; `NodeArray` is NULL or valid for reads of
/// `NumberOfNodes` ids.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterGraphicsHandleToNodesExt(
    GraphicsResourceHandle: HSAuint64,
    GraphicsResourceInfo: *mut HsaGraphicsResourceInfo,
    NumberOfNodes: HSAuint64,
    NodeArray: *mut HSAuint32,
    _RegisterFlags: HSA_REGISTER_MEM_FLAGS,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    tri!(
        with_kfd!(dev, k => k.check_open().map_err(|e| device_status("hsaKmtRegisterGraphicsHandleToNodes", &e)))
    );
    let nodes = if NodeArray.is_null() && NumberOfNodes == 0 {
        None
    } else {
        // SAFETY: as the caller guarantees.
        let nodes = tri!(unsafe { node_array(NodeArray, NumberOfNodes) });
        tri!(with_kfd!(dev, k => validate_nodes(k, nodes)));
        Some(nodes)
    };
    require!(GraphicsResourceInfo, HSAKMT_STATUS_INVALID_PARAMETER);
    let Ok(fd) = u32::try_from(GraphicsResourceHandle) else {
        return HSAKMT_STATUS_INVALID_PARAMETER;
    };
    match with_kfd!(dev, k => k.import_dmabuf(fd, nodes)) {
        Ok(b) => {
            let info = HsaGraphicsResourceInfo {
                MemoryAddress: b.addr as *mut core::ffi::c_void,
                SizeInBytes: b.size,
                Metadata: core::ptr::null(),
                MetadataSizeInBytes: b.metadata_size,
                NodeId: b.node,
            };
            // SAFETY: non-NULL and valid for writes, as the caller guarantees.
            unsafe { GraphicsResourceInfo.write_unaligned(info) };
            HSAKMT_STATUS_SUCCESS
        }
        Err(e) => {
            device_status("hsaKmtRegisterGraphicsHandleToNodes", &e);
            HSAKMT_STATUS_ERROR
        }
    }
}
