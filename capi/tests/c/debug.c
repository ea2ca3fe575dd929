/* The runtime and the debugger (hsaKmtRuntime*, hsaKmtDbg*, hsaKmtDebugTrapIoctl), performance
 * counters (hsaKmtPmc*), SMI events and the render device over the simulated kernel, with
 * upstream's statuses.
 * Part of hsakmt-rs; licensed MIT OR Apache-2.0. */
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "hsakmt/linux/kfd_ioctl.h"

#include "check.h"

/* Upstream's hsaKmtCheckRuntimeDebugSupport rule: every node but CPU-only ones has debugger
 * firmware, and the kernel is KFD 1.13 or newer. */
static int debug_supported(const HsaVersionInfo *v)
{
    for (HSAuint32 n = 0; n < g_sys.nodes; n++) {
        HsaNodeProperties p;
        if (hsaKmtGetNodeProperties(n, &p) != HSAKMT_STATUS_SUCCESS)
            return 0;
        if (p.NumCPUCores && !p.NumFComputeCores)
            continue;
        if (!p.Capability.ui32.DebugSupportedFirmware)
            return 0;
    }
    return v->KernelInterfaceMajorVersion > 1 ||
           (v->KernelInterfaceMajorVersion == 1 && v->KernelInterfaceMinorVersion >= 13);
}

/* The GPUs the kernel drives (their gpu_ids). */
static HSAuint32 gpu_ids(HSAuint32 *ids, HSAuint32 room)
{
    HSAuint32 n = 0;
    for (HSAuint32 node = 0; node < g_sys.nodes; node++) {
        HsaNodeProperties p;
        if (hsaKmtGetNodeProperties(node, &p) == HSAKMT_STATUS_SUCCESS && p.KFDGpuID && n < room)
            ids[n++] = p.KFDGpuID;
    }
    return n;
}

static int contains(const HSAuint32 *ids, HSAuint32 n, HSAuint32 id)
{
    for (HSAuint32 i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

/* A queue of the debugged process: reported by hsaKmtDbgGetQueueData (which suspends it), then
 * resumed, suspended and resumed again through hsaKmtDebugTrapIoctl by its HSA_QUEUEID. */
static void queue_control(void)
{
    void *ring = alloc_ok(g_sys.cpu, 4096, mem_flags(1, 1));
    if (!ring)
        return;
    EXPECT_OK(hsaKmtMapMemoryToGPU(ring, 4096, NULL));
    HsaQueueResource res;
    memset(&res, 0, sizeof res);
    EXPECT_OK(hsaKmtCreateQueue(g_sys.gpu, HSA_QUEUE_COMPUTE, 100, HSA_QUEUE_PRIORITY_NORMAL, ring,
                                4096, NULL, &res));
    void *data = NULL;
    HSAuint32 n = 0, entry = 0, qid = 0;
    EXPECT_OK(hsaKmtDbgGetQueueData(&data, &n, &entry, true));
    if (data) {
        struct kfd_queue_snapshot_entry *q = data;
        CHECK(n == 1 && q[0].gpu_id == g_sys.gpu_props.KFDGpuID &&
                  q[0].ring_base_address == (HSAuint64)(uintptr_t)ring && q[0].ring_size == 4096,
              "queue data: %u entries, gpu_id %u ring %#llx", n, n ? q[0].gpu_id : 0,
              n ? (unsigned long long)q[0].ring_base_address : 0);
        qid = n ? q[0].queue_id : 0;
        free(data);
    }
    const HSAuint32 ops[3] = { KFD_IOC_DBG_TRAP_RESUME_QUEUES, KFD_IOC_DBG_TRAP_SUSPEND_QUEUES,
                               KFD_IOC_DBG_TRAP_RESUME_QUEUES };
    for (int i = 0; i < 3; i++) {
        HSAuint32 ids[1] = { 0 };
        struct kfd_ioctl_dbg_trap_args a;
        memset(&a, 0, sizeof a);
        a.pid = (HSAuint32)getpid();
        a.op = ops[i];
        if (ops[i] == KFD_IOC_DBG_TRAP_SUSPEND_QUEUES) {
            a.suspend_queues.queue_array_ptr = (HSAuint64)(uintptr_t)ids;
            a.suspend_queues.num_queues = 1;
        } else {
            a.resume_queues.queue_array_ptr = (HSAuint64)(uintptr_t)ids;
            a.resume_queues.num_queues = 1;
        }
        HSAuint64 ret = 7;
        EXPECT_OK(hsaKmtDebugTrapIoctl(&a, &res.QueueId, &ret));
        CHECK(ret == 1 && ids[0] == qid, "op %u: returned %lld, id %#x (queue %u)", ops[i],
              (long long)ret, ids[0], qid);
    }
    EXPECT_OK(hsaKmtDestroyQueue(res.QueueId));
    EXPECT_OK(hsaKmtUnmapMemoryToGPU(ring));
    EXPECT_OK(hsaKmtFreeMemory(ring, 4096));
}

/* A self-debugging session: runtime info, device and queue snapshots, DBG_TRAP operations. */
static void session(void)
{
    static int r_debug;
    EXPECT_OK(hsaKmtRuntimeEnable(&r_debug, true));
    EXPECT(HSAKMT_STATUS_UNAVAILABLE, hsaKmtRuntimeEnable(&r_debug, true));
    HSAuint32 caps = 99;
    EXPECT_OK(hsaKmtGetRuntimeCapabilities(&caps));
    CHECK(caps == 0, "runtime capabilities %#x (amdkfd sets none)", caps);

    void *info = NULL;
    HSAuint32 size = 0;
    EXPECT_OK(hsaKmtDbgEnable(&info, &size));
    CHECK(info && size == sizeof(struct kfd_runtime_info), "runtime info %p of %u bytes", info,
          size);
    if (info) {
        struct kfd_runtime_info *ri = info;
        CHECK(ri->r_debug == (HSAuint64)(uintptr_t)&r_debug &&
                  ri->runtime_state == DEBUG_RUNTIME_STATE_ENABLED && ri->ttmp_setup == 1,
              "runtime info r_debug %#llx state %u ttmp %u", (unsigned long long)ri->r_debug,
              ri->runtime_state, ri->ttmp_setup);
        free(info);
    }
    /* A second session of the same process: the kernel's EALREADY. */
    info = NULL;
    EXPECT(HSAKMT_STATUS_ERROR, hsaKmtDbgEnable(&info, &size));

    HSAuint32 ids[64];
    HSAuint32 gpus = gpu_ids(ids, 64);
    void *data = NULL;
    HSAuint32 n = 0, entry = 0;
    EXPECT_OK(hsaKmtDbgGetDeviceData(&data, &n, &entry));
    CHECK(n == gpus && entry == sizeof(struct kfd_dbg_device_info_entry),
          "device data: %u entries of %u bytes, %u GPUs", n, entry, gpus);
    if (data) {
        struct kfd_dbg_device_info_entry *d = data;
        for (HSAuint32 i = 0; i < n && i < gpus; i++)
            CHECK(contains(ids, gpus, d[i].gpu_id), "device entry %u: gpu_id %u", i, d[i].gpu_id);
        free(data);
    }
    data = NULL;
    EXPECT_OK(hsaKmtDbgGetQueueData(&data, &n, &entry, true));
    CHECK(n == 0 && entry == sizeof(struct kfd_queue_snapshot_entry),
          "queue data: %u entries of %u bytes without queues", n, entry);
    free(data);

    /* DBG_TRAP as the caller builds it: a device snapshot into the caller's buffer (a smaller
     * entry size than the kernel's: the kernel's rule copies what fits). */
    struct kfd_dbg_device_info_entry snap[64];
    memset(snap, 0, sizeof snap);
    struct kfd_ioctl_dbg_trap_args a;
    memset(&a, 0, sizeof a);
    a.pid = (HSAuint32)getpid();
    a.op = KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT;
    a.device_snapshot.snapshot_buf_ptr = (HSAuint64)(uintptr_t)snap;
    a.device_snapshot.num_devices = 64;
    a.device_snapshot.entry_size = sizeof snap[0];
    HSAuint64 ret = 7;
    EXPECT_OK(hsaKmtDebugTrapIoctl(&a, NULL, &ret));
    CHECK(ret == 0 && a.device_snapshot.num_devices == gpus &&
              a.device_snapshot.snapshot_buf_ptr == (HSAuint64)(uintptr_t)snap,
          "device snapshot: returned %lld, %u devices", (long long)ret,
          a.device_snapshot.num_devices);
    for (HSAuint32 i = 0; i < gpus && i < 64; i++)
        CHECK(contains(ids, gpus, snap[i].gpu_id), "snapshot entry %u: gpu_id %u", i,
              snap[i].gpu_id);
    /* No event pending: the kernel's EAGAIN is a failed ioctl, DebugReturn -1. */
    memset(&a, 0, sizeof a);
    a.pid = (HSAuint32)getpid();
    a.op = KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT;
    EXPECT(HSAKMT_STATUS_ERROR, hsaKmtDebugTrapIoctl(&a, NULL, &ret));
    CHECK((long long)ret == -1, "query debug event returned %lld", (long long)ret);
    /* Suspend with queue ids that name no queue of the library's. */
    HSAuint32 kernel_ids[1] = { 0 };
    HSA_QUEUEID bogus[1] = { 12345 };
    memset(&a, 0, sizeof a);
    a.pid = (HSAuint32)getpid();
    a.op = KFD_IOC_DBG_TRAP_SUSPEND_QUEUES;
    a.suspend_queues.queue_array_ptr = (HSAuint64)(uintptr_t)kernel_ids;
    a.suspend_queues.num_queues = 1;
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtDebugTrapIoctl(&a, bogus, &ret));
    /* A kernel queue id that does not exist: the kernel marks it invalid, suspends none. */
    kernel_ids[0] = 999;
    EXPECT_OK(hsaKmtDebugTrapIoctl(&a, NULL, &ret));
    CHECK(ret == 0 && (kernel_ids[0] & KFD_DBG_QUEUE_INVALID_MASK),
          "suspend of an unknown queue: returned %lld, id %#x", (long long)ret, kernel_ids[0]);
    /* Another process is not ours to debug this way. */
    a.pid = 0x7FFFFFF0;
    EXPECT(HSAKMT_STATUS_ERROR, hsaKmtDebugTrapIoctl(&a, NULL, &ret));

    queue_control();

    EXPECT_OK(hsaKmtDbgDisable());
    EXPECT(HSAKMT_STATUS_ERROR, hsaKmtDbgDisable());
    data = NULL;
    EXPECT(HSAKMT_STATUS_ERROR, hsaKmtDbgGetDeviceData(&data, &n, &entry));
    EXPECT_OK(hsaKmtRuntimeDisable());
}

void test_debugger(void)
{
    HsaVersionInfo v;
    EXPECT_OK(hsaKmtGetVersion(&v));
    int supported = debug_supported(&v);
    int debugger_api = v.KernelInterfaceMinorVersion >= 13;
    EXPECT(supported ? HSAKMT_STATUS_SUCCESS : HSAKMT_STATUS_NOT_SUPPORTED,
           hsaKmtCheckRuntimeDebugSupport());
    HSAuint32 caps = 99;
    EXPECT_OK(hsaKmtGetRuntimeCapabilities(&caps));
    CHECK(caps == 0, "runtime capabilities %#x before a runtime enable", caps);
    if (!supported) {
        EXPECT(HSAKMT_STATUS_NOT_SUPPORTED, hsaKmtRuntimeEnable(NULL, false));
        EXPECT(HSAKMT_STATUS_NOT_SUPPORTED, hsaKmtRuntimeDisable());
    }
    if (!debugger_api) {
        void *info = NULL;
        HSAuint32 size = 0;
        EXPECT(HSAKMT_STATUS_NOT_SUPPORTED, hsaKmtDbgEnable(&info, &size));
        EXPECT(HSAKMT_STATUS_NOT_SUPPORTED, hsaKmtDbgDisable());
    } else if (g_sys.gpu != INVALID_NODEID) {
        /* Without a session. */
        EXPECT(HSAKMT_STATUS_ERROR, hsaKmtDbgDisable());
        void *data = NULL;
        HSAuint32 n = 0, entry = 0;
        EXPECT(HSAKMT_STATUS_ERROR, hsaKmtDbgGetQueueData(&data, &n, &entry, false));
        if (supported)
            session();
    }
    /* The deprecated calls: the kernel refuses their ioctls. */
    if (g_sys.gpu != INVALID_NODEID) {
        EXPECT(HSAKMT_STATUS_ERROR, hsaKmtDbgRegister(g_sys.gpu));
        EXPECT(HSAKMT_STATUS_ERROR, hsaKmtDbgUnregister(g_sys.gpu));
        HSAuint64 mask[1] = { 0 };
        EXPECT(HSAKMT_STATUS_INVALID_PARAMETER,
               hsaKmtDbgAddressWatch(g_sys.gpu, 101, NULL, NULL, mask, NULL));
        EXPECT(HSAKMT_STATUS_ERROR, hsaKmtDbgAddressWatch(g_sys.gpu, 1, NULL, NULL, mask, NULL));
    }
    EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT, hsaKmtDbgRegister(g_sys.nodes));
}

/* The counter tables of the first GPU, a trace registered on them, and what a trace cannot do
 * without a kernel interface. */
void test_counters(void)
{
    HsaCounterProperties *props = NULL;
    EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT, hsaKmtPmcGetCounterProperties(g_sys.nodes, &props));
    EXPECT(HSAKMT_STATUS_NOT_SUPPORTED, hsaKmtPmcGetCounterProperties(g_sys.cpu, &props));
    EXPECT(HSAKMT_STATUS_INVALID_HANDLE, hsaKmtPmcStopTrace(42));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtPmcQueryTrace(0));
    if (g_sys.gpu == INVALID_NODEID)
        return;
    HSAKMT_STATUS s = hsaKmtPmcGetCounterProperties(g_sys.gpu, &props);
    HSAuint32 major = g_sys.gpu_props.EngineId.ui32.Major;
    if (major != 9 && major != 10) {
        CHECK(s == HSAKMT_STATUS_NOT_SUPPORTED, "gfx%u counters: %d", major, (int)s);
        return;
    }
    EXPECT_OK(s);
    if (!props)
        return;
    HsaCounterProperties *again = NULL;
    EXPECT_OK(hsaKmtPmcGetCounterProperties(g_sys.gpu, &again));
    CHECK(again == props, "the properties are not kept");
    /* Walk the variable-length blocks; remember an SQ counter. */
    HsaCounterBlockProperties *b = &props->Blocks[0];
    HSAuint32 total = 0, concurrent = 0;
    HsaCounter sq;
    int have_sq = 0;
    for (HSAuint32 i = 0; i < props->NumBlocks; i++) {
        CHECK(b->NumCounters > 0 && b->NumConcurrent > 0, "block %u: %u counters, %u slots", i,
              b->NumCounters, b->NumConcurrent);
        for (HSAuint32 c = 0; c < b->NumCounters; c++) {
            HsaCounter *k = &b->Counters[c];
            if (k->CounterSizeInBits != 64 || k->Type != HSA_PROFILE_TYPE_NONPRIV_IMMEDIATE ||
                !k->Flags.ui32.Global) {
                CHECK(0, "block %u counter %u: %u bits, type %d", i, c, k->CounterSizeInBits,
                      (int)k->Type);
                break;
            }
        }
        if (b->Counters[0].BlockIndex == 14 /* SQ */) {
            CHECK(memcmp(&b->BlockId, &HSA_PROFILEBLOCK_AMD_SQ, sizeof(HSA_UUID)) == 0,
                  "the SQ block's UUID");
            sq = b->Counters[0];
            have_sq = 1;
        }
        total += b->NumCounters;
        concurrent += b->NumConcurrent;
        b = (HsaCounterBlockProperties *)&b->Counters[b->NumCounters];
    }
    CHECK(props->NumBlocks > 10 && total > 1000 && concurrent == props->NumConcurrent,
          "%u blocks, %u counters, %u slots (header %u)", props->NumBlocks, total, concurrent,
          props->NumConcurrent);
    CHECK(have_sq, "no SQ block");
    if (!have_sq)
        return;

    HsaPmcTraceRoot root;
    memset(&root, 0, sizeof root);
    /* Only privileged counters are registered: none is an invalid request. */
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtPmcRegisterTrace(g_sys.gpu, 1, &sq, &root));
    sq.Type = HSA_PROFILE_TYPE_PRIVILEGED_IMMEDIATE;
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtPmcRegisterTrace(g_sys.gpu, 0, &sq, &root));
    HsaCounter bad = sq;
    bad.BlockIndex = 24;
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtPmcRegisterTrace(g_sys.gpu, 1, &bad, &root));
    EXPECT_OK(hsaKmtPmcRegisterTrace(g_sys.gpu, 1, &sq, &root));
    CHECK(root.TraceId != 0 && root.NumberOfPasses == 1 && root.TraceBufferMinSizeBytes == 4096,
          "trace root: id %#llx passes %u buffer %llu", (unsigned long long)root.TraceId,
          root.NumberOfPasses, (unsigned long long)root.TraceBufferMinSizeBytes);
    EXPECT_OK(hsaKmtPmcAcquireTraceAccess(g_sys.gpu, root.TraceId));
    char buf[4096];
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtPmcStartTrace(root.TraceId, NULL, 4096));
    EXPECT(HSAKMT_STATUS_NOT_SUPPORTED, hsaKmtPmcStartTrace(root.TraceId, buf, sizeof buf));
    EXPECT(HSAKMT_STATUS_NOT_SUPPORTED, hsaKmtPmcQueryTrace(root.TraceId));
    EXPECT(HSAKMT_STATUS_NOT_SUPPORTED, hsaKmtPmcStopTrace(root.TraceId));
    EXPECT_OK(hsaKmtPmcReleaseTraceAccess(g_sys.gpu, root.TraceId));
    EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT, hsaKmtPmcUnregisterTrace(g_sys.nodes, root.TraceId));
    EXPECT_OK(hsaKmtPmcUnregisterTrace(g_sys.gpu, root.TraceId));
    EXPECT(HSAKMT_STATUS_INVALID_HANDLE, hsaKmtPmcUnregisterTrace(g_sys.gpu, root.TraceId));
    EXPECT(HSAKMT_STATUS_INVALID_HANDLE, hsaKmtPmcQueryTrace(root.TraceId));
}

/* SMI streams (the simulator's descriptors are its own, so the stream is only opened here;
 * the Rust scenario tests read its lines) and the render device, opened once. */
void test_smi(void)
{
    if (g_sys.gpu == INVALID_NODEID)
        return;
    int fd = -1;
    EXPECT(HSAKMT_STATUS_ERROR, hsaKmtOpenSMI(g_sys.cpu, &fd));
    EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT, hsaKmtOpenSMI(g_sys.nodes, &fd));
    EXPECT_OK(hsaKmtOpenSMI(g_sys.gpu, &fd));
    CHECK(fd >= 0, "SMI descriptor %d", fd);
    HsaAMDGPUDeviceHandle h1 = NULL, h2 = NULL;
    EXPECT_OK(hsaKmtGetAMDGPUDeviceHandle(g_sys.gpu, &h1));
    EXPECT_OK(hsaKmtGetAMDGPUDeviceHandle(g_sys.gpu, &h2));
    CHECK(h1 != NULL && h1 == h2, "device handles %p, %p (opened once)", h1, h2);
}
