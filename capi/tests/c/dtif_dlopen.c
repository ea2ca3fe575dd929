/* ROCr's DTIF loader against libdtif.so: `dlopen("libdtif.so")` and every symbol ROCr looks
 * up (its 103 `dlsym`s: the hsaKmt functions but hsaKmtReportQueue, hsaKmtQueueRingDoorbell,
 * nine libdrm functions, DtifCreate and DtifDestroy), then the calls ROCr makes on the way
 * through hsa_init, over the simulator.
 * Part of hsakmt-rs; licensed MIT OR Apache-2.0. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

struct kfd_ioctl_dbg_trap_args; /* named, not declared, by hsakmt.h */
#include "hsakmt/hsakmt.h"

#if __has_include(<libdrm/amdgpu.h>)
#include <libdrm/amdgpu.h>
#define HAVE_LIBDRM 1
#endif

static const char *const ROCR_DTIF_SYMBOLS[] = {
    "DtifCreate",
    "DtifDestroy",
    "amdgpu_bo_cpu_map",
    "amdgpu_bo_export",
    "amdgpu_bo_free",
    "amdgpu_bo_import",
    "amdgpu_bo_va_op",
    "amdgpu_device_deinitialize",
    "amdgpu_device_initialize",
    "amdgpu_query_gpu_info",
    "drmCommandWriteRead",
    "hsaKmtAcquireSystemProperties",
    "hsaKmtAllocMemory",
    "hsaKmtAllocMemoryAlign",
    "hsaKmtAllocQueueGWS",
    "hsaKmtAvailableMemory",
    "hsaKmtCheckRuntimeDebugSupport",
    "hsaKmtCloseKFD",
    "hsaKmtCreateEvent",
    "hsaKmtCreateQueue",
    "hsaKmtCreateQueueExt",
    "hsaKmtDbgAddressWatch",
    "hsaKmtDbgDisable",
    "hsaKmtDbgEnable",
    "hsaKmtDbgGetDeviceData",
    "hsaKmtDbgGetQueueData",
    "hsaKmtDbgRegister",
    "hsaKmtDbgUnregister",
    "hsaKmtDbgWavefrontControl",
    "hsaKmtDebugTrapIoctl",
    "hsaKmtDeregisterMemory",
    "hsaKmtDestroyEvent",
    "hsaKmtDestroyQueue",
    "hsaKmtExportDMABufHandle",
    "hsaKmtFreeMemory",
    "hsaKmtGetAMDGPUDeviceHandle",
    "hsaKmtGetClockCounters",
    "hsaKmtGetNodeCacheProperties",
    "hsaKmtGetNodeIoLinkProperties",
    "hsaKmtGetNodeMemoryProperties",
    "hsaKmtGetNodeProperties",
    "hsaKmtGetQueueInfo",
    "hsaKmtGetRuntimeCapabilities",
    "hsaKmtGetTileConfig",
    "hsaKmtGetVersion",
    "hsaKmtGetXNACKMode",
    "hsaKmtMapGraphicHandle",
    "hsaKmtMapMemoryToGPU",
    "hsaKmtMapMemoryToGPUNodes",
    "hsaKmtModelEnabled",
    "hsaKmtOpenKFD",
    "hsaKmtOpenSMI",
    "hsaKmtPcSamplingCreate",
    "hsaKmtPcSamplingDestroy",
    "hsaKmtPcSamplingQueryCapabilities",
    "hsaKmtPcSamplingStart",
    "hsaKmtPcSamplingStop",
    "hsaKmtPcSamplingSupport",
    "hsaKmtPmcAcquireTraceAccess",
    "hsaKmtPmcGetCounterProperties",
    "hsaKmtPmcQueryTrace",
    "hsaKmtPmcRegisterTrace",
    "hsaKmtPmcReleaseTraceAccess",
    "hsaKmtPmcStartTrace",
    "hsaKmtPmcStopTrace",
    "hsaKmtPmcUnregisterTrace",
    "hsaKmtProcessVMRead",
    "hsaKmtProcessVMWrite",
    "hsaKmtQueryEventState",
    "hsaKmtQueryPointerInfo",
    "hsaKmtQueueRingDoorbell",
    "hsaKmtRegisterGraphicsHandleToNodes",
    "hsaKmtRegisterGraphicsHandleToNodesExt",
    "hsaKmtRegisterMemory",
    "hsaKmtRegisterMemoryToNodes",
    "hsaKmtRegisterMemoryWithFlags",
    "hsaKmtRegisterSharedHandle",
    "hsaKmtRegisterSharedHandleToNodes",
    "hsaKmtReleaseSystemProperties",
    "hsaKmtReplaceAsanHeaderPage",
    "hsaKmtResetEvent",
    "hsaKmtReturnAsanHeaderPage",
    "hsaKmtRuntimeDisable",
    "hsaKmtRuntimeEnable",
    "hsaKmtSPMAcquire",
    "hsaKmtSPMRelease",
    "hsaKmtSPMSetDestBuffer",
    "hsaKmtSVMGetAttr",
    "hsaKmtSVMSetAttr",
    "hsaKmtSetEvent",
    "hsaKmtSetMemoryPolicy",
    "hsaKmtSetMemoryUserData",
    "hsaKmtSetQueueCUMask",
    "hsaKmtSetTrapHandler",
    "hsaKmtSetXNACKMode",
    "hsaKmtShareMemory",
    "hsaKmtUnmapGraphicHandle",
    "hsaKmtUnmapMemoryToGPU",
    "hsaKmtUpdateQueue",
    "hsaKmtWaitOnEvent",
    "hsaKmtWaitOnEvent_Ext",
    "hsaKmtWaitOnMultipleEvents",
    "hsaKmtWaitOnMultipleEvents_Ext"
};

static int failed;

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        if (!(cond)) {                                                    \
            failed++;                                                     \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                 \
            fprintf(stderr, "\n");                                        \
        }                                                                 \
    } while (0)

int main(void)
{
    void *h = dlopen("libdtif.so", RTLD_LAZY);
    if (!h) {
        fprintf(stderr, "dlopen(libdtif.so): %s\n", dlerror());
        return 1;
    }
    size_t n = sizeof ROCR_DTIF_SYMBOLS / sizeof ROCR_DTIF_SYMBOLS[0];
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        void *s = dlsym(h, ROCR_DTIF_SYMBOLS[i]);
        CHECK(s != NULL, "dlsym(%s): %s", ROCR_DTIF_SYMBOLS[i], dlerror());
        found += s != NULL;
    }
    printf("resolved %zu of %zu symbols\n", found, n);

    void *(*create)(const char *) = (void *(*)(const char *))dlsym(h, "DtifCreate");
    void (*destroy)(void) = (void (*)(void))dlsym(h, "DtifDestroy");
    HSAKMT_STATUS (*open)(void) = (HSAKMT_STATUS(*)(void))dlsym(h, "hsaKmtOpenKFD");
    HSAKMT_STATUS (*close)(void) = (HSAKMT_STATUS(*)(void))dlsym(h, "hsaKmtCloseKFD");
    HSAKMT_STATUS (*acquire)(HsaSystemProperties *) =
        (HSAKMT_STATUS(*)(HsaSystemProperties *))dlsym(h, "hsaKmtAcquireSystemProperties");
    HSAKMT_STATUS (*props)(HSAuint32, HsaNodeProperties *) =
        (HSAKMT_STATUS(*)(HSAuint32, HsaNodeProperties *))dlsym(h, "hsaKmtGetNodeProperties");
    HSAKMT_STATUS (*handle)(HSAuint32, HsaAMDGPUDeviceHandle *) =
        (HSAKMT_STATUS(*)(HSAuint32, HsaAMDGPUDeviceHandle *))dlsym(h, "hsaKmtGetAMDGPUDeviceHandle");
    HSAKMT_STATUS (*runtime)(void *, bool) =
        (HSAKMT_STATUS(*)(void *, bool))dlsym(h, "hsaKmtRuntimeEnable");
    HSAKMT_STATUS (*caps)(HSAuint32 *) = (HSAKMT_STATUS(*)(HSAuint32 *))dlsym(h, "hsaKmtGetRuntimeCapabilities");
    HSAKMT_STATUS (*model)(bool *) = (HSAKMT_STATUS(*)(bool *))dlsym(h, "hsaKmtModelEnabled");
    int (*query)(void *, void *) = (int (*)(void *, void *))dlsym(h, "amdgpu_query_gpu_info");
    int (*deinit)(void *) = (int (*)(void *))dlsym(h, "amdgpu_device_deinitialize");
    int (*import)(void *, int, unsigned, void *) =
        (int (*)(void *, int, unsigned, void *))dlsym(h, "amdgpu_bo_import");
    if (failed)
        return 1;

    CHECK(create("HSA") != NULL, "DtifCreate returned NULL");
    CHECK(open() == HSAKMT_STATUS_SUCCESS, "hsaKmtOpenKFD");
    HSAKMT_STATUS r = runtime(NULL, false);
    CHECK(r == HSAKMT_STATUS_SUCCESS || r == HSAKMT_STATUS_NOT_SUPPORTED, "runtime enable %d", (int)r);
    HSAuint32 mask = 1;
    CHECK(caps(&mask) == HSAKMT_STATUS_SUCCESS, "runtime capabilities");
    bool on = true;
    CHECK(model(&on) == HSAKMT_STATUS_SUCCESS && !on, "model enabled");
    HsaSystemProperties sp;
    CHECK(acquire(&sp) == HSAKMT_STATUS_SUCCESS, "acquire");
    int gpus = 0;
    for (HSAuint32 i = 0; i < sp.NumNodes; i++) {
        HsaNodeProperties p;
        CHECK(props(i, &p) == HSAKMT_STATUS_SUCCESS, "node %u", i);
        if (!p.KFDGpuID)
            continue;
        gpus++;
        HsaAMDGPUDeviceHandle dev = NULL;
        CHECK(handle(i, &dev) == HSAKMT_STATUS_SUCCESS && dev, "device handle of node %u", i);
        unsigned char info[4096];
        memset(info, 0xAB, sizeof info);
        CHECK(query(dev, info) == 0, "amdgpu_query_gpu_info on node %u", i);
#ifdef HAVE_LIBDRM
        struct amdgpu_gpu_info *gi = (struct amdgpu_gpu_info *)info;
        CHECK(gi->gpu_counter_freq == 100000 && gi->asic_id == p.DeviceId,
              "node %u: counter %u kHz, asic %#x (device %#x)", i, gi->gpu_counter_freq,
              gi->asic_id, p.DeviceId);
        CHECK(info[sizeof *gi] == 0xAB, "amdgpu_query_gpu_info wrote past the struct");
#endif
        CHECK(deinit(dev) == 0, "deinitialize");
    }
    CHECK(query(&sp, NULL) < 0 && query(&sp, (void *)&sp) < 0, "a foreign handle was accepted");
    CHECK(deinit(&sp) < 0, "a foreign handle was deinitialized");
    unsigned char result[16];
    CHECK(import(NULL, 2, 3, result) < 0, "amdgpu_bo_import");
    CHECK(close() == HSAKMT_STATUS_SUCCESS, "hsaKmtCloseKFD");
    destroy();
    printf("dtif: %d GPUs, %d failures\n", gpus, failed);
    return failed ? 1 : 0;
}
