//! Memory: `hsaKmtAllocMemory[Align]`, `hsaKmtFreeMemory`, `hsaKmtAvailableMemory`,
//! `hsaKmtMapMemoryToGPU[Nodes]`, `hsaKmtUnmapMemoryToGPU`, `hsaKmtQueryPointerInfo`,
//! `hsaKmtSetMemoryUserData`, `hsaKmtSetMemoryPolicy`, `hsaKmtExportDMABufHandle`, the IPC and
//! deprecated calls, and the ASAN header pages.
//!
//! Memory is named by its address, as upstream. The library keeps the CPU view of host-visible
//! memory itself; the caller reaches it through the returned address (GPU VA = CPU VA).

use std::cell::RefCell;

use hsakmt_core::config::NODE_SET_CAPACITY;
use hsakmt_core::device::{Error as DeviceError, Kfd, MapNodes, MemoryStorage, PointerKind};
use hsakmt_core::memory::{CachePolicy, Error as MemError, MemFlags, NodeSet};
use hsakmt_core::platform::Platform;

use super::status::device_status;
use super::{opened, require, serialized, tri};
use crate::device::with_kfd;
use crate::types::*;

/// libhsakmt's `hsakmt_is_dgpu` and `hsakmt_is_svm_api_supported`: a system with a discrete GPU,
/// and whether every GPU supports the SVM API (and `HSA_USE_SVM` is not `0`). Upstream's answers
/// for unknown addresses depend on them.
pub(super) fn system_kind<P: Platform, S: MemoryStorage<P::Mapping>>(
    k: &Kfd<P, S>,
) -> (bool, bool) {
    let env_off = std::env::var("HSA_USE_SVM").is_ok_and(|v| v == "0");
    k.with_topology(|t| {
        let svm = t.nodes().filter(|n| n.node().has_gpu()).all(|n| {
            n.node()
                .capability()
                .is_some_and(|c| c.contains(hsakmt_core::topology::Capability::SVM_API_SUPPORTED))
        });
        (t.is_dgpu_system(), svm && !env_off)
    })
    .unwrap_or((false, false))
}

/// Whether user node `node` exists.
fn node_exists<P: Platform, S: MemoryStorage<P::Mapping>>(k: &Kfd<P, S>, node: u32) -> bool {
    k.with_topology(|t| t.node_by_user_id(node).is_some()).unwrap_or(false)
}

/// `hsaKmtAllocMemory`: as [`hsaKmtAllocMemoryAlign`] with the default alignment.
///
/// # Safety
/// As [`hsaKmtAllocMemoryAlign`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAllocMemory(
    PreferredNode: HSAuint32,
    SizeInBytes: HSAuint64,
    MemFlags: HsaMemFlags,
    MemoryAddress: *mut *mut core::ffi::c_void,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract.
    unsafe { hsaKmtAllocMemoryAlign(PreferredNode, SizeInBytes, 0, MemFlags, MemoryAddress) }
}

/// `hsaKmtAllocMemoryAlign`: allocates memory of the kind the flags ask for on
/// `PreferredNode` (system memory, GTT, VRAM, scratch, address-only, handle-only).
///
/// # Safety
/// `MemoryAddress` is NULL or valid for reads and writes (read for `FixedAddress`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAllocMemoryAlign(
    PreferredNode: HSAuint32,
    SizeInBytes: HSAuint64,
    Alignment: HSAuint64,
    MemFlags: HsaMemFlags,
    MemoryAddress: *mut *mut core::ffi::c_void,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    with_kfd!(dev, k => alloc(k, PreferredNode, SizeInBytes, Alignment, MemFlags, MemoryAddress))
}

fn alloc<P: Platform, S: MemoryStorage<P::Mapping>>(
    k: &Kfd<P, S>,
    node: u32,
    size: u64,
    align: u64,
    f: HsaMemFlags,
    out: *mut *mut core::ffi::c_void,
) -> HSAKMT_STATUS {
    const WHAT: &str = "hsaKmtAllocMemory";
    if let Err(e) = k.check_open() {
        return device_status(WHAT, &e);
    }
    let flags = MemFlags::from_bits_retain(f.Value);
    if flags.contains(MemFlags::CONTIGUOUS)
        && let Err(e) = k.require_minor("contiguous VRAM", 16)
    {
        return device_status(WHAT, &e);
    }
    // One topology look-up: whether the node exists, and whether it has a GPU.
    let Some(gpu_node) =
        k.with_topology(|t| t.node_by_user_id(node).map(|n| n.node().has_gpu())).ok().flatten()
    else {
        return HSAKMT_STATUS_INVALID_NODE_UNIT;
    };
    let page = flags.page_size().bytes();
    if align != 0 && (align < page || !align.is_power_of_two()) {
        return HSAKMT_STATUS_INVALID_PARAMETER;
    }
    if out.is_null() || size == 0 || !size.is_multiple_of(page) {
        return HSAKMT_STATUS_INVALID_PARAMETER;
    }
    let fixed = if flags.contains(MemFlags::FIXED_ADDRESS) {
        // SAFETY: non-NULL and valid for reads, as the caller guarantees.
        let addr = unsafe { out.read() } as u64;
        if addr == 0 {
            return HSAKMT_STATUS_INVALID_PARAMETER;
        }
        Some(addr)
    } else {
        // SAFETY: non-NULL and valid for writes, as the caller guarantees.
        unsafe { out.write(core::ptr::null_mut()) };
        None
    };
    let coherence_conflict = flags.contains(MemFlags::EXTENDED_COHERENT)
        && flags.intersects(MemFlags::COARSE_GRAIN | MemFlags::UNCACHED);
    if coherence_conflict {
        return HSAKMT_STATUS_INVALID_PARAMETER;
    }
    // Which of upstream's three paths the request takes decides its failure status.
    let fail = if flags.contains(MemFlags::SCRATCH) {
        if align != 0 {
            return HSAKMT_STATUS_NOT_IMPLEMENTED;
        }
        HSAKMT_STATUS_NO_MEMORY
    } else if !gpu_node
        || !flags.contains(MemFlags::NON_PAGED)
        || flags.intersects(MemFlags::GTT_ACCESS | MemFlags::ONLY_ADDRESS)
    {
        HSAKMT_STATUS_ERROR
    } else {
        if flags.contains(MemFlags::ONLY_ADDRESS | MemFlags::NO_ADDRESS) {
            return HSAKMT_STATUS_INVALID_PARAMETER;
        }
        HSAKMT_STATUS_NO_MEMORY
    };
    let result = match fixed {
        Some(addr) => k.alloc_memory_at(node, addr, size, flags),
        None => k.alloc_memory_align(node, size, align, flags),
    };
    match result {
        Ok(a) => {
            let addr = a.addr;
            // The library keeps its own view; the caller uses the address.
            drop(a.mapping);
            // SAFETY: non-NULL and valid for writes, as the caller guarantees.
            unsafe { out.write(addr as *mut core::ffi::c_void) };
            HSAKMT_STATUS_SUCCESS
        }
        Err(DeviceError::Memory(MemError::InvalidFlags | MemError::BadAlignment { .. })) => {
            HSAKMT_STATUS_INVALID_PARAMETER
        }
        Err(e @ (DeviceError::NotOpened | DeviceError::ForkedChild)) => device_status(WHAT, &e),
        Err(e) => {
            device_status(WHAT, &e);
            fail
        }
    }
}

/// `hsaKmtFreeMemory`: frees memory by its address (`SizeInBytes` is ignored, as upstream).
/// NULL answers `HSAKMT_STATUS_ERROR`; an address the library does not know answers success when
/// the SVM API is in use (it may be SVM memory), else `HSAKMT_STATUS_MEMORY_NOT_REGISTERED`.
///
/// # Safety
/// `MemoryAddress` is not dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtFreeMemory(
    MemoryAddress: *mut core::ffi::c_void,
    _SizeInBytes: HSAuint64,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    with_kfd!(dev, k => {
        if let Err(e) = k.check_open() {
            return device_status("hsaKmtFreeMemory", &e);
        }
        if MemoryAddress.is_null() {
            return HSAKMT_STATUS_ERROR;
        }
        match serialized(|| k.free_memory(MemoryAddress as u64)) {
            Ok(()) => HSAKMT_STATUS_SUCCESS,
            Err(DeviceError::Memory(MemError::UnknownAddress { .. })) => {
                if system_kind(k).1 {
                    HSAKMT_STATUS_SUCCESS
                } else {
                    HSAKMT_STATUS_MEMORY_NOT_REGISTERED
                }
            }
            Err(e) => {
                device_status("hsaKmtFreeMemory", &e);
                HSAKMT_STATUS_ERROR
            }
        }
    })
}

/// `hsaKmtAvailableMemory`: VRAM still available to the process on a GPU node (KFD 1.9).
///
/// # Safety
/// `AvailableBytes` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAvailableMemory(
    Node: HSAuint32,
    AvailableBytes: *mut HSAuint64,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    let r = with_kfd!(dev, k => {
        if let Err(e) = k.check_open().and_then(|()| k.require_minor("available memory", 9)) {
            return device_status("hsaKmtAvailableMemory", &e);
        }
        if !node_exists(k, Node) {
            return HSAKMT_STATUS_INVALID_NODE_UNIT;
        }
        k.available_memory(Node)
    });
    match r {
        Ok(bytes) => {
            require!(AvailableBytes, HSAKMT_STATUS_INVALID_PARAMETER);
            // SAFETY: non-NULL and valid for writes, as the caller guarantees.
            unsafe { AvailableBytes.write(bytes) };
            HSAKMT_STATUS_SUCCESS
        }
        Err(e) => {
            device_status("hsaKmtAvailableMemory", &e);
            HSAKMT_STATUS_ERROR
        }
    }
}

/// `hsaKmtMapMemoryToGPU`: maps memory on its default GPUs (NULL answers
/// `HSAKMT_STATUS_ERROR`, as upstream). `AlternateVAGPU` is set to 0 (it applies only to the old
/// APU apertures this library does not manage).
///
/// # Safety
/// `AlternateVAGPU` is NULL or valid for writes; `MemoryAddress` is not dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtMapMemoryToGPU(
    MemoryAddress: *mut core::ffi::c_void,
    MemorySizeInBytes: HSAuint64,
    AlternateVAGPU: *mut HSAuint64,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    tri!(
        with_kfd!(dev, k => k.check_open().map_err(|e| device_status("hsaKmtMapMemoryToGPU", &e)))
    );
    if MemoryAddress.is_null() {
        return HSAKMT_STATUS_ERROR;
    }
    if !AlternateVAGPU.is_null() {
        // SAFETY: non-NULL and valid for writes, as the caller guarantees.
        unsafe { AlternateVAGPU.write(0) };
    }
    let r = with_kfd!(dev, k => serialized(|| k.map_memory_to_gpu_sized(MemoryAddress as u64, MemorySizeInBytes, MapNodes::Default)));
    // SAFETY: as the caller guarantees.
    unsafe { map_status("hsaKmtMapMemoryToGPU", MemoryAddress as u64, AlternateVAGPU, r) }
}

/// Map results as upstream reports them: an unknown or unmappable address is an invalid
/// parameter, a refusal of the kernel an error. Registered user memory lives at a GPU address
/// of its own: as upstream's `_fmm_map_to_gpu_userptr`, `*AlternateVAGPU` receives it (the
/// start of its GPU pages plus the user pointer's offset in its page); for allocated memory,
/// whose GPU address is its CPU address, it stays 0.
///
/// # Safety
/// `alternate` is NULL or valid for writes.
unsafe fn map_status(
    what: &str,
    addr: u64,
    alternate: *mut HSAuint64,
    r: Result<u64, DeviceError>,
) -> HSAKMT_STATUS {
    match r {
        Ok(va) => {
            if va != addr && !alternate.is_null() {
                // SAFETY: non-NULL and valid for writes, as the caller guarantees.
                unsafe { alternate.write(va) };
            }
            HSAKMT_STATUS_SUCCESS
        }
        Err(DeviceError::Ioctl { .. } | DeviceError::Platform(_)) => {
            if let Err(e) = r {
                device_status(what, &e);
            }
            HSAKMT_STATUS_ERROR
        }
        Err(e) => device_status(what, &e),
    }
}

/// `hsaKmtMapMemoryToGPUNodes`: maps memory on exactly the listed GPU nodes.
///
/// # Safety
/// `NodeArray` is NULL or valid for reads of `NumberOfNodes` ids; `AlternateVAGPU` is NULL or
/// valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtMapMemoryToGPUNodes(
    MemoryAddress: *mut core::ffi::c_void,
    MemorySizeInBytes: HSAuint64,
    AlternateVAGPU: *mut HSAuint64,
    _MemMapFlags: HsaMemMapFlags,
    NumberOfNodes: HSAuint64,
    NodeArray: *mut HSAuint32,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    tri!(
        with_kfd!(dev, k => k.check_open().map_err(|e| device_status("hsaKmtMapMemoryToGPUNodes", &e)))
    );
    if MemoryAddress.is_null() {
        return HSAKMT_STATUS_ERROR;
    }
    // SAFETY: as the caller guarantees.
    let nodes = tri!(unsafe { node_array(NodeArray, NumberOfNodes) });
    tri!(with_kfd!(dev, k => validate_nodes(k, nodes)));
    if !AlternateVAGPU.is_null() {
        // SAFETY: non-NULL and valid for writes, as the caller guarantees.
        unsafe { AlternateVAGPU.write(0) };
    }
    let r = with_kfd!(dev, k => serialized(|| k.map_memory_to_gpu_sized(MemoryAddress as u64, MemorySizeInBytes, MapNodes::Only(nodes))));
    // SAFETY: as the caller guarantees.
    unsafe { map_status("hsaKmtMapMemoryToGPUNodes", MemoryAddress as u64, AlternateVAGPU, r) }
}

/// A node array from C: upstream's `hsakmt_validate_nodeid_array` refuses an empty or NULL one.
///
/// # Safety
/// `nodes` is NULL or valid for reads of `count` ids for the lifetime `'a`.
pub(super) unsafe fn node_array<'a>(
    nodes: *const HSAuint32,
    count: HSAuint64,
) -> Result<&'a [u32], HSAKMT_STATUS> {
    if nodes.is_null() || count == 0 {
        return Err(HSAKMT_STATUS_INVALID_PARAMETER);
    }
    let n = usize::try_from(count).map_err(|_| HSAKMT_STATUS_INVALID_PARAMETER)?;
    if n > NODE_SET_CAPACITY {
        return Err(HSAKMT_STATUS_INVALID_NODE_UNIT);
    }
    // SAFETY: non-NULL and valid for `count` reads, as the caller guarantees.
    Ok(unsafe { core::slice::from_raw_parts(nodes, n) })
}

/// Every node of `nodes` must exist (upstream: `HSAKMT_STATUS_INVALID_NODE_UNIT`).
pub(super) fn validate_nodes<P: Platform, S: MemoryStorage<P::Mapping>>(
    k: &Kfd<P, S>,
    nodes: &[u32],
) -> Result<(), HSAKMT_STATUS> {
    if nodes.iter().all(|&n| node_exists(k, n)) {
        Ok(())
    } else {
        Err(HSAKMT_STATUS_INVALID_NODE_UNIT)
    }
}

/// `hsaKmtUnmapMemoryToGPU`: unmaps memory from every GPU. NULL succeeds (upstream's
/// "workaround for runtime bug"); an unknown address succeeds on APUs or with the SVM API, else
/// answers `HSAKMT_STATUS_ERROR`.
///
/// # Safety
/// `MemoryAddress` is not dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtUnmapMemoryToGPU(
    MemoryAddress: *mut core::ffi::c_void,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    with_kfd!(dev, k => {
        if let Err(e) = k.check_open() {
            return device_status("hsaKmtUnmapMemoryToGPU", &e);
        }
        if MemoryAddress.is_null() {
            return HSAKMT_STATUS_SUCCESS;
        }
        match serialized(|| k.unmap_memory_from_gpu(MemoryAddress as u64)) {
            Ok(()) => HSAKMT_STATUS_SUCCESS,
            Err(DeviceError::Memory(MemError::UnknownAddress { .. })) => {
                let (dgpu, svm) = system_kind(k);
                if !dgpu || svm { HSAKMT_STATUS_SUCCESS } else { HSAKMT_STATUS_ERROR }
            }
            Err(e) => {
                device_status("hsaKmtUnmapMemoryToGPU", &e);
                HSAKMT_STATUS_ERROR
            }
        }
    })
}

thread_local! {
    /// The node lists `hsaKmtQueryPointerInfo` points at: valid until the next call on the same
    /// thread (upstream's stay valid until the object's registration or mapping changes).
    static NODE_LISTS: RefCell<([u32; NODE_SET_CAPACITY], [u32; NODE_SET_CAPACITY])> =
        const { RefCell::new(([0; NODE_SET_CAPACITY], [0; NODE_SET_CAPACITY])) };
}

/// Copies `set` into `out`; returns how many.
fn fill(set: NodeSet, out: &mut [u32; NODE_SET_CAPACITY]) -> u32 {
    let mut n = 0;
    for (slot, node) in out.iter_mut().zip(set.iter()) {
        *slot = node;
        n += 1;
    }
    n
}

/// `hsaKmtQueryPointerInfo`: what the library knows about the memory containing `Pointer`. An
/// unknown address answers `HSAKMT_STATUS_ERROR` with `Type = HSA_POINTER_UNKNOWN`. The node
/// lists stay valid until the calling thread's next call.
///
/// # Safety
/// `PointerInfo` is NULL or valid for writes; `Pointer` is not dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtQueryPointerInfo(
    Pointer: *const core::ffi::c_void,
    PointerInfo: *mut HsaPointerInfo,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    tri!(
        with_kfd!(dev, k => k.check_open().map_err(|e| device_status("hsaKmtQueryPointerInfo", &e)))
    );
    require!(PointerInfo, HSAKMT_STATUS_INVALID_PARAMETER);
    let r = with_kfd!(dev, k => k.pointer_info(Pointer as u64));
    let mut out = HsaPointerInfo {
        Type: HSA_POINTER_UNKNOWN,
        Node: 0,
        MemFlags: HsaMemFlags::default(),
        CPUAddress: core::ptr::null_mut(),
        GPUAddress: 0,
        SizeInBytes: 0,
        NRegisteredNodes: 0,
        NMappedNodes: 0,
        RegisteredNodes: core::ptr::null(),
        MappedNodes: core::ptr::null(),
        UserData: core::ptr::null_mut(),
    };
    let status = match r {
        Ok(info) => {
            out.Type = match info.kind {
                PointerKind::Allocated => HSA_POINTER_ALLOCATED,
                PointerKind::RegisteredUser => HSA_POINTER_REGISTERED_USER,
                PointerKind::RegisteredGraphics => HSA_POINTER_REGISTERED_GRAPHICS,
                PointerKind::ReservedAddress => HSA_POINTER_RESERVED_ADDR,
            };
            out.Node = info.node;
            out.MemFlags = HsaMemFlags { Value: info.flags.bits() };
            out.GPUAddress = info.gpu_address;
            out.SizeInBytes = info.size;
            out.UserData = info.user_data as *mut core::ffi::c_void;
            // Upstream reports the start of allocated memory as its CPU address, mapped or not.
            out.CPUAddress = match info.kind {
                PointerKind::RegisteredUser => info.cpu_address.unwrap_or(0),
                PointerKind::Allocated => info.gpu_address,
                _ => 0,
            } as *mut core::ffi::c_void;
            NODE_LISTS.with_borrow_mut(|(registered, mapped)| {
                out.NRegisteredNodes = fill(info.registered_nodes, registered);
                out.NMappedNodes = fill(info.mapped_nodes, mapped);
                if out.NRegisteredNodes > 0 {
                    out.RegisteredNodes = registered.as_ptr();
                }
                if out.NMappedNodes > 0 {
                    out.MappedNodes = mapped.as_ptr();
                }
            });
            HSAKMT_STATUS_SUCCESS
        }
        Err(DeviceError::Memory(MemError::UnknownAddress { .. })) => HSAKMT_STATUS_ERROR,
        Err(e) => device_status("hsaKmtQueryPointerInfo", &e),
    };
    // SAFETY: non-NULL and valid for writes, as the caller guarantees.
    unsafe { PointerInfo.write_unaligned(out) };
    status
}

/// `hsaKmtSetMemoryUserData`: attaches an opaque pointer to the memory starting at `Pointer`.
///
/// # Safety
/// Neither pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSetMemoryUserData(
    Pointer: *const core::ffi::c_void,
    UserData: *mut core::ffi::c_void,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    with_kfd!(dev, k => match k.set_user_data(Pointer as u64, UserData as u64) {
        Ok(()) => HSAKMT_STATUS_SUCCESS,
        Err(e @ (DeviceError::NotOpened | DeviceError::ForkedChild)) => {
            device_status("hsaKmtSetMemoryUserData", &e)
        }
        Err(_) => HSAKMT_STATUS_ERROR,
    })
}

/// `hsaKmtSetMemoryPolicy`: Kaveri only (gfx 7.0); every other GPU answers
/// `HSAKMT_STATUS_NOT_IMPLEMENTED`, as upstream.
///
/// # Safety
/// `MemoryAddressAlternate` is not dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSetMemoryPolicy(
    Node: HSAuint32,
    DefaultPolicy: HSAuint32,
    AlternatePolicy: HSAuint32,
    MemoryAddressAlternate: *mut core::ffi::c_void,
    MemorySizeInBytes: HSAuint64,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    let policy = |p| match p {
        HSA_CACHING_CACHED => Some(CachePolicy::Cached),
        HSA_CACHING_NONCACHED => Some(CachePolicy::NonCached),
        _ => None,
    };
    with_kfd!(dev, k => {
        if let Err(e) = k.check_open() {
            return device_status("hsaKmtSetMemoryPolicy", &e);
        }
        if !node_exists(k, Node) {
            return HSAKMT_STATUS_INVALID_NODE_UNIT;
        }
        let kaveri = k.with_topology(|t| {
            t.node_by_user_id(Node)
                .and_then(|n| n.node().gfx())
                .is_some_and(|g| (g.major, g.minor) == (7, 0))
        });
        if kaveri != Ok(true) {
            return HSAKMT_STATUS_NOT_IMPLEMENTED;
        }
        let (Some(d), Some(a)) = (policy(DefaultPolicy), policy(AlternatePolicy)) else {
            return HSAKMT_STATUS_INVALID_PARAMETER;
        };
        let base = MemoryAddressAlternate as u64;
        match k.set_memory_policy(Node, d, a, base, MemorySizeInBytes) {
            Ok(()) => HSAKMT_STATUS_SUCCESS,
            Err(DeviceError::Memory(MemError::Misaligned { .. })) => HSAKMT_STATUS_INVALID_PARAMETER,
            Err(e) => {
                device_status("hsaKmtSetMemoryPolicy", &e);
                HSAKMT_STATUS_ERROR
            }
        }
    })
}

/// `hsaKmtExportDMABufHandle` (KFD 1.12): exports the buffer containing the range as a dma-buf;
/// a range not inside one buffer answers `HSAKMT_STATUS_INVALID_PARAMETER`.
///
/// # Safety
/// `DMABufFd` and `Offset` are NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtExportDMABufHandle(
    MemoryAddress: *mut core::ffi::c_void,
    MemorySizeInBytes: HSAuint64,
    DMABufFd: *mut core::ffi::c_int,
    Offset: *mut HSAuint64,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    let r = with_kfd!(dev, k => {
        if let Err(e) = k.check_open().and_then(|()| k.require_minor("dma-buf export", 12)) {
            return device_status("hsaKmtExportDMABufHandle", &e);
        }
        if DMABufFd.is_null() || Offset.is_null() {
            return HSAKMT_STATUS_INVALID_PARAMETER;
        }
        serialized(|| k.export_dmabuf(MemoryAddress as u64, MemorySizeInBytes))
    });
    match r {
        Ok(x) => {
            // SAFETY: both non-NULL (checked) and valid for writes, as the caller guarantees.
            unsafe {
                DMABufFd.write(x.fd as core::ffi::c_int);
                Offset.write(x.offset);
            }
            HSAKMT_STATUS_SUCCESS
        }
        Err(DeviceError::Memory(_)) => HSAKMT_STATUS_INVALID_PARAMETER,
        Err(e) => {
            device_status("hsaKmtExportDMABufHandle", &e);
            HSAKMT_STATUS_ERROR
        }
    }
}

/// `hsakmt_rs_close_dmabuf` (`hsakmt_rs.h`, not upstream): closes a descriptor
/// `hsaKmtExportDMABufHandle` returned — `close(2)` on a real device; over the simulator, whose
/// dma-bufs are descriptors of the process as well (a `memfd` standing for each), it closes the
/// descriptor and releases the simulated dma-buf at once (`close(2)` releases it too, noticed
/// at the simulator's next dma-buf operation).
/// `HSAKMT_STATUS_INVALID_PARAMETER` for a negative descriptor.
#[unsafe(no_mangle)]
pub extern "C" fn hsakmt_rs_close_dmabuf(DMABufFd: core::ffi::c_int) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    let Ok(fd) = u32::try_from(DMABufFd) else { return HSAKMT_STATUS_INVALID_PARAMETER };
    with_kfd!(dev, k => k.close_dmabuf(fd));
    HSAKMT_STATUS_SUCCESS
}

/// `hsaKmtShareMemory`: IPC export. Upstream issues `AMDKFD_IOC_IPC_EXPORT_HANDLE`, an ioctl of
/// AMD's out-of-tree driver that mainline amdkfd (and so this library) does not have: the kernel
/// would refuse it, which upstream reports as `HSAKMT_STATUS_ERROR`.
///
/// # Safety
/// `SharedMemoryHandle` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtShareMemory(
    _MemoryAddress: *mut core::ffi::c_void,
    _SizeInBytes: HSAuint64,
    SharedMemoryHandle: *mut HsaSharedMemoryHandle,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    tri!(with_kfd!(dev, k => k.check_open().map_err(|e| device_status("hsaKmtShareMemory", &e))));
    require!(SharedMemoryHandle, HSAKMT_STATUS_INVALID_PARAMETER);
    HSAKMT_STATUS_ERROR
}

/// `hsaKmtRegisterSharedHandle`: IPC import; see [`hsaKmtShareMemory`].
///
/// # Safety
/// As [`hsaKmtRegisterSharedHandleToNodes`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterSharedHandle(
    SharedMemoryHandle: *const HsaSharedMemoryHandle,
    MemoryAddress: *mut *mut core::ffi::c_void,
    SizeInBytes: *mut HSAuint64,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract, without nodes.
    unsafe {
        hsaKmtRegisterSharedHandleToNodes(
            SharedMemoryHandle,
            MemoryAddress,
            SizeInBytes,
            0,
            core::ptr::null_mut(),
        )
    }
}

/// `hsaKmtRegisterSharedHandleToNodes`: IPC import (`AMDKFD_IOC_IPC_IMPORT_HANDLE`, out-of-tree
/// only); see [`hsaKmtShareMemory`].
///
/// # Safety
/// `NodeArray` is NULL or valid for reads of `NumberOfNodes` ids.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterSharedHandleToNodes(
    SharedMemoryHandle: *const HsaSharedMemoryHandle,
    _MemoryAddress: *mut *mut core::ffi::c_void,
    _SizeInBytes: *mut HSAuint64,
    NumberOfNodes: HSAuint64,
    NodeArray: *mut HSAuint32,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    tri!(
        with_kfd!(dev, k => k.check_open().map_err(|e| device_status("hsaKmtRegisterSharedHandle", &e)))
    );
    require!(SharedMemoryHandle, HSAKMT_STATUS_INVALID_PARAMETER);
    if !NodeArray.is_null() {
        // SAFETY: as the caller guarantees.
        let nodes = tri!(unsafe { node_array(NodeArray, NumberOfNodes) });
        tri!(with_kfd!(dev, k => validate_nodes(k, nodes)));
    }
    HSAKMT_STATUS_ERROR
}

/// `hsaKmtProcessVMRead`: deprecated upstream, `HSAKMT_STATUS_NOT_IMPLEMENTED`.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtProcessVMRead(
    _Pid: HSAuint32,
    _LocalMemoryArray: *mut HsaMemoryRange,
    _LocalMemoryArrayCount: HSAuint64,
    _RemoteMemoryArray: *mut HsaMemoryRange,
    _RemoteMemoryArrayCount: HSAuint64,
    _SizeCopied: *mut HSAuint64,
) -> HSAKMT_STATUS {
    HSAKMT_STATUS_NOT_IMPLEMENTED
}

/// `hsaKmtProcessVMWrite`: deprecated upstream, `HSAKMT_STATUS_NOT_IMPLEMENTED`.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtProcessVMWrite(
    _Pid: HSAuint32,
    _LocalMemoryArray: *mut HsaMemoryRange,
    _LocalMemoryArrayCount: HSAuint64,
    _RemoteMemoryArray: *mut HsaMemoryRange,
    _RemoteMemoryArrayCount: HSAuint64,
    _SizeCopied: *mut HSAuint64,
) -> HSAKMT_STATUS {
    HSAKMT_STATUS_NOT_IMPLEMENTED
}

/// `hsaKmtMapGraphicHandle`: Kaveri-era, never upstreamed; `HSAKMT_STATUS_NOT_IMPLEMENTED`.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtMapGraphicHandle(
    _NodeId: HSAuint32,
    _GraphicDeviceHandle: HSAuint64,
    _GraphicResourceHandle: HSAuint64,
    _GraphicResourceOffset: HSAuint64,
    _GraphicResourceSize: HSAuint64,
    _FlatMemoryAddress: *mut HSAuint64,
) -> HSAKMT_STATUS {
    HSAKMT_STATUS_NOT_IMPLEMENTED
}

/// `hsaKmtUnmapGraphicHandle`: as `hsaKmtUnmapMemoryToGPU(FlatMemoryAddress)`.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtUnmapGraphicHandle(
    _NodeId: HSAuint32,
    FlatMemoryAddress: HSAuint64,
    _SizeInBytes: HSAuint64,
) -> HSAKMT_STATUS {
    // SAFETY: the address is not dereferenced.
    unsafe { hsaKmtUnmapMemoryToGPU(FlatMemoryAddress as *mut core::ffi::c_void) }
}

/// `hsaKmtReplaceAsanHeaderPage`: only in ASAN builds of upstream; otherwise (and here)
/// `HSAKMT_STATUS_NOT_SUPPORTED`.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtReplaceAsanHeaderPage(
    _addr: *mut core::ffi::c_void,
) -> HSAKMT_STATUS {
    HSAKMT_STATUS_NOT_SUPPORTED
}

/// `hsaKmtReturnAsanHeaderPage`: see [`hsaKmtReplaceAsanHeaderPage`].
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtReturnAsanHeaderPage(
    _addr: *mut core::ffi::c_void,
) -> HSAKMT_STATUS {
    HSAKMT_STATUS_NOT_SUPPORTED
}

/// Page size of flags, for tests of the translation.
#[cfg(test)]
fn page_bytes(f: HsaMemFlags) -> u64 {
    MemFlags::from_bits_retain(f.Value).page_size().bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsakmt_core::memory::PageSize;

    #[test]
    fn flags_cross_the_boundary_bit_for_bit() {
        let f = HsaMemFlags::default()
            .with(HsaMemFlags::PageSize, HSA_PAGE_SIZE_2MB)
            .with(HsaMemFlags::HostAccess, 1)
            .with(HsaMemFlags::CoarseGrain, 1);
        let core = MemFlags::from_bits_retain(f.Value);
        assert_eq!(core.page_size(), PageSize::Size2M);
        assert!(core.contains(MemFlags::HOST_ACCESS | MemFlags::COARSE_GRAIN));
        assert_eq!(page_bytes(f), 2 << 20);
    }
}
