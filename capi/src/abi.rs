//! The signatures of the exported functions, for `cargo xtask capi-check`: each row is checked
//! at compile time against the function itself (a fn-pointer coercion that fails to build if
//! a parameter type differs) and at check time against the prototype in the C header.

use core::ffi::{c_int, c_uint, c_void};

use hsakmt_core::uapi::kfd_ioctl_dbg_trap_args;

use crate::api::{self, HsakmtRsSimAccounting};
use crate::layout::{Description, FunctionRow, layout};
use crate::types::*;

/// `name(types...);` rows: the compile-time proof and the table.
macro_rules! signatures {
    ($( $name:ident ( $($t:ty),* ); )*) => {
        const _: () = {
            $( let _: unsafe extern "C" fn($($t),*) -> HSAKMT_STATUS = api::$name; )*
        };

        /// Adds the signature rows and the types of `hsakmt_rs.h`.
        pub(crate) fn describe(d: &mut Description) {
            layout!(d, HsakmtRsSimAccounting {
                open,
                buffers,
                mappings,
                vram_bytes,
                system_bytes,
                pinned_buffers,
                dmabufs,
                svm_ranges,
                scratch_backings,
                queues,
                events,
                event_waiters,
            });
            $( d.functions.push(FunctionRow {
                name: stringify!($name),
                params: vec![$(core::any::type_name::<$t>()),*],
                ret: core::any::type_name::<HSAKMT_STATUS>(),
            }); )*
        }
    };
}

signatures! {
    hsaKmtAcquireSystemProperties(*mut HsaSystemProperties);
    hsaKmtAllocMemory(HSAuint32, HSAuint64, HsaMemFlags, *mut *mut c_void);
    hsaKmtAllocMemoryAlign(HSAuint32, HSAuint64, HSAuint64, HsaMemFlags, *mut *mut c_void);
    hsaKmtAllocQueueGWS(HSA_QUEUEID, HSAuint32, *mut HSAuint32);
    hsaKmtAvailableMemory(HSAuint32, *mut HSAuint64);
    hsaKmtCheckRuntimeDebugSupport();
    hsaKmtCloseKFD();
    hsaKmtCreateEvent(*mut HsaEventDescriptor, bool, bool, *mut *mut HsaEvent);
    hsaKmtCreateQueue(HSAuint32, HSA_QUEUE_TYPE, HSAuint32, HSA_QUEUE_PRIORITY, *mut c_void, HSAuint64, *mut HsaEvent, *mut HsaQueueResource);
    hsaKmtCreateQueueExt(HSAuint32, HSA_QUEUE_TYPE, HSAuint32, HSA_QUEUE_PRIORITY, HSAuint32, *mut c_void, HSAuint64, *mut HsaEvent, *mut HsaQueueResource);
    hsaKmtDbgAddressWatch(HSAuint32, HSAuint32, *mut HSA_DBG_WATCH_MODE, *mut *mut c_void, *mut HSAuint64, *mut *mut HsaEvent);
    hsaKmtDbgDisable();
    hsaKmtDbgEnable(*mut *mut c_void, *mut HSAuint32);
    hsaKmtDbgGetDeviceData(*mut *mut c_void, *mut HSAuint32, *mut HSAuint32);
    hsaKmtDbgGetQueueData(*mut *mut c_void, *mut HSAuint32, *mut HSAuint32, bool);
    hsaKmtDbgRegister(HSAuint32);
    hsaKmtDbgUnregister(HSAuint32);
    hsaKmtDbgWavefrontControl(HSAuint32, HSA_DBG_WAVEOP, HSA_DBG_WAVEMODE, HSAuint32, *mut HsaDbgWaveMessage);
    hsaKmtDebugTrapIoctl(*mut kfd_ioctl_dbg_trap_args, *mut HSA_QUEUEID, *mut HSAuint64);
    hsaKmtDeregisterMemory(*mut c_void);
    hsaKmtDestroyEvent(*mut HsaEvent);
    hsaKmtDestroyQueue(HSA_QUEUEID);
    hsaKmtExportDMABufHandle(*mut c_void, HSAuint64, *mut c_int, *mut HSAuint64);
    hsaKmtFreeMemory(*mut c_void, HSAuint64);
    hsaKmtGetAMDGPUDeviceHandle(HSAuint32, *mut HsaAMDGPUDeviceHandle);
    hsaKmtGetClockCounters(HSAuint32, *mut HsaClockCounters);
    hsaKmtGetNodeCacheProperties(HSAuint32, HSAuint32, HSAuint32, *mut HsaCacheProperties);
    hsaKmtGetNodeIoLinkProperties(HSAuint32, HSAuint32, *mut HsaIoLinkProperties);
    hsaKmtGetNodeMemoryProperties(HSAuint32, HSAuint32, *mut HsaMemoryProperties);
    hsaKmtGetNodeProperties(HSAuint32, *mut HsaNodeProperties);
    hsaKmtGetQueueInfo(HSA_QUEUEID, *mut HsaQueueInfo);
    hsaKmtGetRuntimeCapabilities(*mut HSAuint32);
    hsaKmtGetTileConfig(HSAuint32, *mut HsaGpuTileConfig);
    hsaKmtGetVersion(*mut HsaVersionInfo);
    hsaKmtGetXNACKMode(*mut HSAint32);
    hsaKmtMapGraphicHandle(HSAuint32, HSAuint64, HSAuint64, HSAuint64, HSAuint64, *mut HSAuint64);
    hsaKmtMapMemoryToGPU(*mut c_void, HSAuint64, *mut HSAuint64);
    hsaKmtMapMemoryToGPUNodes(*mut c_void, HSAuint64, *mut HSAuint64, HsaMemMapFlags, HSAuint64, *mut HSAuint32);
    hsaKmtModelEnabled(*mut bool);
    hsaKmtOpenKFD();
    hsaKmtOpenSMI(HSAuint32, *mut c_int);
    hsaKmtPcSamplingCreate(HSAuint32, *mut HsaPcSamplingInfo, *mut HsaPcSamplingTraceId);
    hsaKmtPcSamplingDestroy(HSAuint32, HsaPcSamplingTraceId);
    hsaKmtPcSamplingQueryCapabilities(HSAuint32, *mut c_void, HSAuint32, *mut HSAuint32);
    hsaKmtPcSamplingStart(HSAuint32, HsaPcSamplingTraceId);
    hsaKmtPcSamplingStop(HSAuint32, HsaPcSamplingTraceId);
    hsaKmtPcSamplingSupport();
    hsaKmtPmcAcquireTraceAccess(HSAuint32, HSATraceId);
    hsaKmtPmcGetCounterProperties(HSAuint32, *mut *mut HsaCounterProperties);
    hsaKmtPmcQueryTrace(HSATraceId);
    hsaKmtPmcRegisterTrace(HSAuint32, HSAuint32, *mut HsaCounter, *mut HsaPmcTraceRoot);
    hsaKmtPmcReleaseTraceAccess(HSAuint32, HSATraceId);
    hsaKmtPmcStartTrace(HSATraceId, *mut c_void, HSAuint64);
    hsaKmtPmcStopTrace(HSATraceId);
    hsaKmtPmcUnregisterTrace(HSAuint32, HSATraceId);
    hsaKmtProcessVMRead(HSAuint32, *mut HsaMemoryRange, HSAuint64, *mut HsaMemoryRange, HSAuint64, *mut HSAuint64);
    hsaKmtProcessVMWrite(HSAuint32, *mut HsaMemoryRange, HSAuint64, *mut HsaMemoryRange, HSAuint64, *mut HSAuint64);
    hsaKmtQueryEventState(*mut HsaEvent);
    hsaKmtQueryPointerInfo(*const c_void, *mut HsaPointerInfo);
    hsaKmtQueueRingDoorbell(HSA_QUEUEID);
    hsaKmtRegisterGraphicsHandleToNodes(HSAuint64, *mut HsaGraphicsResourceInfo, HSAuint64, *mut HSAuint32);
    hsaKmtRegisterGraphicsHandleToNodesExt(HSAuint64, *mut HsaGraphicsResourceInfo, HSAuint64, *mut HSAuint32, HSA_REGISTER_MEM_FLAGS);
    hsaKmtRegisterMemory(*mut c_void, HSAuint64);
    hsaKmtRegisterMemoryToNodes(*mut c_void, HSAuint64, HSAuint64, *mut HSAuint32);
    hsaKmtRegisterMemoryWithFlags(*mut c_void, HSAuint64, HsaMemFlags);
    hsaKmtRegisterSharedHandle(*const HsaSharedMemoryHandle, *mut *mut c_void, *mut HSAuint64);
    hsaKmtRegisterSharedHandleToNodes(*const HsaSharedMemoryHandle, *mut *mut c_void, *mut HSAuint64, HSAuint64, *mut HSAuint32);
    hsaKmtReleaseSystemProperties();
    hsaKmtReplaceAsanHeaderPage(*mut c_void);
    hsaKmtReportQueue(HSA_QUEUEID, *mut HsaQueueReport);
    hsaKmtResetEvent(*mut HsaEvent);
    hsaKmtReturnAsanHeaderPage(*mut c_void);
    hsaKmtRuntimeDisable();
    hsaKmtRuntimeEnable(*mut c_void, bool);
    hsaKmtSPMAcquire(HSAuint32);
    hsaKmtSPMRelease(HSAuint32);
    hsaKmtSPMSetDestBuffer(HSAuint32, HSAuint32, *mut HSAuint32, *mut HSAuint32, *mut c_void, *mut bool);
    hsaKmtSVMGetAttr(*mut c_void, HSAuint64, c_uint, *mut HSA_SVM_ATTRIBUTE);
    hsaKmtSVMSetAttr(*mut c_void, HSAuint64, c_uint, *mut HSA_SVM_ATTRIBUTE);
    hsaKmtSetEvent(*mut HsaEvent);
    hsaKmtSetMemoryPolicy(HSAuint32, HSAuint32, HSAuint32, *mut c_void, HSAuint64);
    hsaKmtSetMemoryUserData(*const c_void, *mut c_void);
    hsaKmtSetQueueCUMask(HSA_QUEUEID, HSAuint32, *mut HSAuint32);
    hsaKmtSetTrapHandler(HSAuint32, *mut c_void, HSAuint64, *mut c_void, HSAuint64);
    hsaKmtSetXNACKMode(HSAint32);
    hsaKmtShareMemory(*mut c_void, HSAuint64, *mut HsaSharedMemoryHandle);
    hsaKmtUnmapGraphicHandle(HSAuint32, HSAuint64, HSAuint64);
    hsaKmtUnmapMemoryToGPU(*mut c_void);
    hsaKmtUpdateQueue(HSA_QUEUEID, HSAuint32, HSA_QUEUE_PRIORITY, *mut c_void, HSAuint64, *mut HsaEvent);
    hsaKmtWaitOnEvent(*mut HsaEvent, HSAuint32);
    hsaKmtWaitOnEvent_Ext(*mut HsaEvent, HSAuint32, *mut u64);
    hsaKmtWaitOnMultipleEvents(*mut *mut HsaEvent, HSAuint32, bool, HSAuint32);
    hsaKmtWaitOnMultipleEvents_Ext(*mut *mut HsaEvent, HSAuint32, bool, HSAuint32, *mut u64);
    hsakmt_rs_close_dmabuf(c_int);
    hsakmt_rs_sim_accounting(*mut HsakmtRsSimAccounting);
}
