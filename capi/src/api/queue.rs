//! Queues: `hsaKmtCreateQueue[Ext]`, `hsaKmtUpdateQueue`, `hsaKmtDestroyQueue`,
//! `hsaKmtSetQueueCUMask`, `hsaKmtGetQueueInfo`, `hsaKmtAllocQueueGWS`, `hsaKmtSetTrapHandler`,
//! `hsaKmtReportQueue`, and `hsaKmtQueueRingDoorbell` (ROCr's DTIF doorbell).
//!
//! `HSA_QUEUEID` is the facade's generation-checked queue handle, never a pointer: 0, a
//! foreign value or the id of a destroyed queue answers `HSAKMT_STATUS_INVALID_PARAMETER` (the
//! status upstream gives a NULL queue id). The caller provides the ring; for AQL queues also the
//! read and write pointer addresses (in `HsaQueueResource`), for the others the library does
//! and reports them. The doorbell address is reported for every queue.

use core::sync::atomic::{AtomicU64, Ordering};

use hsakmt_core::device::queue_manager::{
    ErrorReporting, QueueDesc, QueueError, QueueHandle, QueueInfo, QueuePointers, QueueType,
    RingSpec, RingUpdate,
};
use hsakmt_core::device::{Error as DeviceError, Kfd, MemoryStorage};
use hsakmt_core::error::Errno;
use hsakmt_core::platform::{Platform, SharedMemory};
use hsakmt_core::queue::params::{QueueKind, QueuePriority};

use super::status::{device_status, queue_status};
use super::{event_slots, opened, queue_slots, require, tri};
use crate::device::with_kfd;
use crate::types::*;

/// A priority in −3..=3, else `None` (upstream: `HSAKMT_STATUS_INVALID_PARAMETER`).
fn priority(p: HSA_QUEUE_PRIORITY) -> Option<QueuePriority> {
    i32::try_from(p).ok().and_then(|p| QueuePriority::from_raw(p).ok())
}

/// The handle a queue id names, or `None` for 0.
fn handle(id: HSA_QUEUEID) -> Option<QueueHandle> {
    (id != 0).then(|| QueueHandle::from_raw(id))
}

/// Creation errors as upstream reports them: checks upstream leaves to the kernel (ring,
/// percentage, engines, a CPU node) come back as the kernel's `EINVAL`, that is
/// `HSAKMT_STATUS_ERROR`; failed buffer allocations as `HSAKMT_STATUS_NO_MEMORY`.
fn create_status(e: &QueueError) -> HSAKMT_STATUS {
    match e {
        QueueError::InvalidNode(_) => HSAKMT_STATUS_INVALID_NODE_UNIT,
        QueueError::Memory { .. } => {
            queue_status("hsaKmtCreateQueue", e);
            HSAKMT_STATUS_NO_MEMORY
        }
        QueueError::Device(DeviceError::NotOpened | DeviceError::ForkedChild) => {
            HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED
        }
        other => {
            queue_status("hsaKmtCreateQueue", other);
            HSAKMT_STATUS_ERROR
        }
    }
}

/// `hsaKmtCreateQueue`: as [`hsaKmtCreateQueueExt`] on SDMA engine 0; `HSA_QUEUE_SDMA_BY_ENG_ID`
/// answers `HSAKMT_STATUS_ERROR`, as upstream.
///
/// # Safety
/// As [`hsaKmtCreateQueueExt`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtCreateQueue(
    NodeId: HSAuint32,
    Type: HSA_QUEUE_TYPE,
    QueuePercentage: HSAuint32,
    Priority: HSA_QUEUE_PRIORITY,
    QueueAddress: *mut core::ffi::c_void,
    QueueSizeInBytes: HSAuint64,
    Event: *mut HsaEvent,
    QueueResource: *mut HsaQueueResource,
) -> HSAKMT_STATUS {
    if Type == HSA_QUEUE_SDMA_BY_ENG_ID {
        return HSAKMT_STATUS_ERROR;
    }
    // SAFETY: forwarded under the same contract.
    unsafe {
        hsaKmtCreateQueueExt(
            NodeId,
            Type,
            QueuePercentage,
            Priority,
            0,
            QueueAddress,
            QueueSizeInBytes,
            Event,
            QueueResource,
        )
    }
}

/// `hsaKmtCreateQueueExt`: creates a PM4, SDMA (PCIe, XGMI or engine `SdmaEngineId`) or AQL
/// queue on the caller's ring.
///
/// # Safety
/// `QueueResource` is NULL or valid for reads and writes; `Event` is any pointer (only events
/// of this library are used); `QueueAddress` is the ring's GPU address (not dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtCreateQueueExt(
    NodeId: HSAuint32,
    Type: HSA_QUEUE_TYPE,
    QueuePercentage: HSAuint32,
    Priority: HSA_QUEUE_PRIORITY,
    SdmaEngineId: HSAuint32,
    QueueAddress: *mut core::ffi::c_void,
    QueueSizeInBytes: HSAuint64,
    Event: *mut HsaEvent,
    QueueResource: *mut HsaQueueResource,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    tri!(with_kfd!(dev, k => k.check_open().map_err(|e| device_status("hsaKmtCreateQueue", &e))));
    let Some(priority) = priority(Priority) else { return HSAKMT_STATUS_INVALID_PARAMETER };
    require!(QueueResource, HSAKMT_STATUS_INVALID_PARAMETER);
    let queue_type = match Type {
        HSA_QUEUE_COMPUTE => QueueType::Compute,
        HSA_QUEUE_SDMA => QueueType::Sdma,
        HSA_QUEUE_SDMA_XGMI => QueueType::SdmaXgmi,
        HSA_QUEUE_SDMA_BY_ENG_ID => QueueType::SdmaEngine(SdmaEngineId),
        HSA_QUEUE_COMPUTE_AQL => QueueType::ComputeAql,
        _ => return HSAKMT_STATUS_INVALID_PARAMETER,
    };
    // SAFETY: non-NULL and valid for reads, as the caller guarantees.
    let resource = unsafe { QueueResource.read_unaligned() };
    let pointers = if queue_type == QueueType::ComputeAql {
        QueuePointers::Caller {
            read: resource.ReadPtr.address(),
            write: resource.WritePtr.address(),
        }
    } else {
        QueuePointers::Library
    };
    let event_id = if Event.is_null() {
        0
    } else {
        match event_slots::lookup(Event) {
            Some((_, h)) => tri!(with_kfd!(dev, k => k
                .event_info(h)
                .map(|i| i.id)
                .map_err(|_| HSAKMT_STATUS_INVALID_HANDLE))),
            None => return HSAKMT_STATUS_INVALID_HANDLE,
        }
    };
    let error = ErrorReporting { payload_address: resource.ErrorReason as u64, event_id };
    let info = tri!(with_kfd!(dev, k => {
        let desc = QueueDesc {
            node: NodeId,
            queue_type,
            percentage: QueuePercentage,
            priority,
            ring: RingSpec::Address { address: QueueAddress as u64, size: QueueSizeInBytes },
            pointers,
            error,
        };
        create(k, &desc)
    }));
    let mut out = resource;
    out.QueueId = info.handle.to_raw();
    out.DoorBell = HsaQueuePointer::from_address(info.doorbell_address);
    if queue_type != QueueType::ComputeAql {
        out.WritePtr = HsaQueuePointer::from_address(info.write_pointer);
        out.ReadPtr = HsaQueuePointer::from_address(info.read_pointer);
    }
    // SAFETY: non-NULL and valid for writes, as the caller guarantees.
    unsafe { QueueResource.write_unaligned(out) };
    HSAKMT_STATUS_SUCCESS
}

fn create<P: Platform, S: MemoryStorage<P::Mapping>>(
    k: &Kfd<P, S>,
    desc: &QueueDesc<'_, P::Mapping>,
) -> Result<QueueInfo, HSAKMT_STATUS> {
    let info = k.create_queue(desc).map_err(|e| create_status(&e))?;
    let cus = k
        .with_topology(|t| {
            t.node_by_user_id(desc.node).and_then(|n| n.node().cu_count()).unwrap_or(0)
        })
        .unwrap_or(0);
    queue_slots::set_all(info.handle.index(), cus);
    Ok(info)
}

/// `hsaKmtUpdateQueue`: changes a queue's percentage, priority and ring (a NULL ring or 0 %
/// disables it).
///
/// # Safety
/// `QueueAddress` is a GPU address (not dereferenced); `Event` is unused, as upstream.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtUpdateQueue(
    QueueId: HSA_QUEUEID,
    QueuePercentage: HSAuint32,
    Priority: HSA_QUEUE_PRIORITY,
    QueueAddress: *mut core::ffi::c_void,
    QueueSize: HSAuint64,
    _Event: *mut HsaEvent,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    tri!(with_kfd!(dev, k => k.check_open().map_err(|e| device_status("hsaKmtUpdateQueue", &e))));
    let Some(priority) = priority(Priority) else { return HSAKMT_STATUS_INVALID_PARAMETER };
    let Some(h) = handle(QueueId) else { return HSAKMT_STATUS_INVALID_PARAMETER };
    let address = QueueAddress as u64;
    with_kfd!(dev, k => {
        let Ok(info) = k.queue_info(h) else { return HSAKMT_STATUS_INVALID_PARAMETER };
        let ring = if address == 0 {
            RingUpdate::Disable
        } else if (address, QueueSize) == (info.ring_address, info.ring_size) {
            RingUpdate::Restore
        } else {
            RingUpdate::Replace { address, size: QueueSize }
        };
        match k.update_queue(h, QueuePercentage, priority, ring) {
            Ok(()) => HSAKMT_STATUS_SUCCESS,
            Err(QueueError::InvalidHandle) => HSAKMT_STATUS_INVALID_PARAMETER,
            Err(e) => {
                queue_status("hsaKmtUpdateQueue", &e);
                HSAKMT_STATUS_ERROR
            }
        }
    })
}

/// `hsaKmtDestroyQueue`.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDestroyQueue(QueueId: HSA_QUEUEID) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    tri!(with_kfd!(dev, k => k.check_open().map_err(|e| device_status("hsaKmtDestroyQueue", &e))));
    let Some(h) = handle(QueueId) else { return HSAKMT_STATUS_INVALID_PARAMETER };
    with_kfd!(dev, k => match k.destroy_queue(h) {
        Ok(()) => HSAKMT_STATUS_SUCCESS,
        Err(QueueError::InvalidHandle) => HSAKMT_STATUS_INVALID_PARAMETER,
        Err(e) => {
            queue_status("hsaKmtDestroyQueue", &e);
            HSAKMT_STATUS_ERROR
        }
    })
}

/// `hsaKmtSetQueueCUMask`: restricts a queue to the CUs of the first `CUMaskCount` bits.
///
/// # Safety
/// `QueueCUMask` is NULL or valid for reads of `CUMaskCount / 32` words.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSetQueueCUMask(
    QueueId: HSA_QUEUEID,
    CUMaskCount: HSAuint32,
    QueueCUMask: *mut HSAuint32,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    tri!(
        with_kfd!(dev, k => k.check_open().map_err(|e| device_status("hsaKmtSetQueueCUMask", &e)))
    );
    if CUMaskCount == 0 || QueueCUMask.is_null() || !CUMaskCount.is_multiple_of(32) {
        return HSAKMT_STATUS_INVALID_PARAMETER;
    }
    let Some(h) = handle(QueueId) else { return HSAKMT_STATUS_INVALID_PARAMETER };
    // SAFETY: non-NULL and valid for `CUMaskCount / 32` words, as the caller guarantees.
    let mask = unsafe { core::slice::from_raw_parts(QueueCUMask, (CUMaskCount / 32) as usize) };
    with_kfd!(dev, k => match k.set_queue_cu_mask(h, CUMaskCount, mask) {
        Ok(()) => {
            queue_slots::set(h.index(), CUMaskCount, mask);
            HSAKMT_STATUS_SUCCESS
        }
        Err(QueueError::InvalidHandle | QueueError::Param(_)) => HSAKMT_STATUS_INVALID_PARAMETER,
        Err(e) => {
            queue_status("hsaKmtSetQueueCUMask", &e);
            HSAKMT_STATUS_ERROR
        }
    })
}

/// `hsaKmtGetQueueInfo`: a disabled compute queue's saved wave state and its CU mask.
///
/// # Safety
/// `QueueInfo` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetQueueInfo(
    QueueId: HSA_QUEUEID,
    QueueInfo: *mut HsaQueueInfo,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    tri!(with_kfd!(dev, k => k.check_open().map_err(|e| device_status("hsaKmtGetQueueInfo", &e))));
    require!(QueueInfo, HSAKMT_STATUS_INVALID_PARAMETER);
    let Some(h) = handle(QueueId) else { return HSAKMT_STATUS_INVALID_PARAMETER };
    let state = with_kfd!(dev, k => k.queue_wave_state(h));
    let s = match state {
        Ok(s) => s,
        Err(QueueError::InvalidHandle) => return HSAKMT_STATUS_INVALID_PARAMETER,
        Err(e) => {
            queue_status("hsaKmtGetQueueInfo", &e);
            return HSAKMT_STATUS_ERROR;
        }
    };
    let (bits, words) = queue_slots::get(h.index());
    let info = HsaQueueInfo {
        QueueDetailError: 0,
        QueueTypeExtended: 0,
        NumCUAssigned: bits,
        CUMaskInfo: words,
        UserContextSaveArea: s.user_context_save_area as *mut HSAuint32,
        SaveAreaSizeInBytes: u64::from(s.save_area_used),
        ControlStackTop: s.control_stack_top as *mut HSAuint32,
        ControlStackUsedInBytes: u64::from(s.control_stack_used),
        SaveAreaHeader: s.save_area_header as *mut HsaUserContextSaveAreaHeader,
        Reserved2: 0,
    };
    // SAFETY: non-NULL and valid for writes, as the caller guarantees.
    unsafe { QueueInfo.write_unaligned(info) };
    HSAKMT_STATUS_SUCCESS
}

/// `hsaKmtAllocQueueGWS`: gives a compute queue the node's global wave sync resources; the
/// kernel's `EINVAL`, `EBUSY` and `ENODEV` map as upstream maps them.
///
/// # Safety
/// `firstGWS` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAllocQueueGWS(
    QueueId: HSA_QUEUEID,
    nGWS: HSAuint32,
    firstGWS: *mut HSAuint32,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    tri!(with_kfd!(dev, k => k.check_open().map_err(|e| device_status("hsaKmtAllocQueueGWS", &e))));
    let Some(h) = handle(QueueId) else { return HSAKMT_STATUS_INVALID_PARAMETER };
    match with_kfd!(dev, k => k.alloc_queue_gws(h, nGWS)) {
        Ok(first) => {
            if !firstGWS.is_null() {
                // SAFETY: non-NULL and valid for writes, as the caller guarantees.
                unsafe { firstGWS.write(first) };
            }
            HSAKMT_STATUS_SUCCESS
        }
        Err(QueueError::InvalidHandle | QueueError::WrongQueueKind) => {
            HSAKMT_STATUS_INVALID_PARAMETER
        }
        Err(QueueError::NoGws { .. }) => HSAKMT_STATUS_NOT_SUPPORTED,
        Err(QueueError::Device(DeviceError::Ioctl { errno, .. })) => match errno {
            Errno::EINVAL => HSAKMT_STATUS_INVALID_PARAMETER,
            Errno::EBUSY => HSAKMT_STATUS_OUT_OF_RESOURCES,
            Errno::ENODEV => HSAKMT_STATUS_NOT_SUPPORTED,
            _ => HSAKMT_STATUS_ERROR,
        },
        Err(e) => queue_status("hsaKmtAllocQueueGWS", &e),
    }
}

/// `hsaKmtSetTrapHandler`: installs the process's trap handler on a GPU node.
///
/// # Safety
/// The addresses are GPU addresses (not dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSetTrapHandler(
    NodeId: HSAuint32,
    TrapHandlerBaseAddress: *mut core::ffi::c_void,
    _TrapHandlerSizeInBytes: HSAuint64,
    TrapBufferBaseAddress: *mut core::ffi::c_void,
    _TrapBufferSizeInBytes: HSAuint64,
) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    tri!(
        with_kfd!(dev, k => k.check_open().map_err(|e| device_status("hsaKmtSetTrapHandler", &e)))
    );
    let (tba, tma) = (TrapHandlerBaseAddress as u64, TrapBufferBaseAddress as u64);
    match with_kfd!(dev, k => k.set_trap_handler(NodeId, tba, tma)) {
        Ok(()) => HSAKMT_STATUS_SUCCESS,
        Err(QueueError::InvalidNode(_)) => HSAKMT_STATUS_INVALID_NODE_UNIT,
        Err(e) => {
            queue_status("hsaKmtSetTrapHandler", &e);
            HSAKMT_STATUS_ERROR
        }
    }
}

/// `hsaKmtReportQueue`: declared by `hsakmt.h` for Trinity + Southern Islands and implemented
/// nowhere upstream.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtReportQueue(
    _QueueId: HSA_QUEUEID,
    _QueueReport: *mut HsaQueueReport,
) -> HSAKMT_STATUS {
    HSAKMT_STATUS_NOT_IMPLEMENTED
}

/// `hsaKmtQueueRingDoorbell` (ROCr's DTIF hook; not in upstream libhsakmt): rings the queue's
/// doorbell with its current write pointer — for an AQL queue the index of the last packet
/// written (write index − 1), for PM4 and SDMA queues the write pointer itself. On the simulator
/// this is how the command processor learns of new work; on hardware it is the doorbell store.
///
/// # Safety
/// The queue's write pointer (for AQL queues the caller's) must still be valid memory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtQueueRingDoorbell(QueueId: HSA_QUEUEID) -> HSAKMT_STATUS {
    let dev = tri!(opened());
    let Some(h) = handle(QueueId) else { return HSAKMT_STATUS_INVALID_PARAMETER };
    with_kfd!(dev, k => ring(k, h))
}

fn ring<P: Platform, S: MemoryStorage<P::Mapping>>(k: &Kfd<P, S>, h: QueueHandle) -> HSAKMT_STATUS {
    if let Err(e) = k.check_open() {
        return device_status("hsaKmtQueueRingDoorbell", &e);
    }
    let Ok(info) = k.queue_info(h) else { return HSAKMT_STATUS_INVALID_PARAMETER };
    let wptr = info.write_pointer as *const AtomicU64;
    if wptr.is_null() || !wptr.is_aligned() {
        return HSAKMT_STATUS_ERROR;
    }
    // SAFETY: the write pointer of a live queue: 8-byte aligned (checked) memory the kernel
    // accepted for the queue, in the library's pointers page or the caller's (who guarantees it
    // is still valid); read atomically, as the GPU does.
    let w = unsafe { (*wptr).load(Ordering::Acquire) };
    let value = match info.queue_type.kind() {
        QueueKind::ComputeAql => match w.checked_sub(1) {
            Some(v) => v,
            None => return HSAKMT_STATUS_SUCCESS,
        },
        _ => w,
    };
    match k.cpu_mapping(info.doorbell_address) {
        Ok(page) => {
            let offset = info.doorbell_address - page.addr();
            page.ring_doorbell64(offset as usize, value);
            HSAKMT_STATUS_SUCCESS
        }
        Err(_) => {
            let db = info.doorbell_address as *const AtomicU64;
            if db.is_null() || !db.is_aligned() {
                return HSAKMT_STATUS_ERROR;
            }
            // SAFETY: the doorbell of a live queue, inside the node's doorbell page the library
            // mapped for the process (a plain `/dev/kfd` mapping on APUs); aligned (checked).
            unsafe { (*db).store(value, Ordering::SeqCst) };
            HSAKMT_STATUS_SUCCESS
        }
    }
}
