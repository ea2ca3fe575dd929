/* Bad input: NULL pointers, unknown nodes, stale and foreign handles, double frees — each
 * answered with upstream's status and nothing changed.
 * Part of hsakmt-rs; licensed MIT OR Apache-2.0. */
#include <pthread.h>
#include <stdlib.h>

#include "check.h"

static void null_pointers(void)
{
    HsaNodeProperties p;
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtGetVersion(NULL));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtAcquireSystemProperties(NULL));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtGetNodeProperties(0, NULL));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtGetNodeMemoryProperties(0, 1, NULL));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtGetNodeCacheProperties(0, 0, 0, NULL));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtGetNodeIoLinkProperties(0, 0, NULL));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtAllocMemory(0, 4096, mem_flags(1, 0), NULL));
    void *m = NULL;
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtAllocMemory(0, 0, mem_flags(1, 0), &m));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtAllocMemory(0, 100, mem_flags(1, 0), &m));
    EXPECT(HSAKMT_STATUS_ERROR, hsaKmtFreeMemory(NULL, 4096));
    EXPECT(HSAKMT_STATUS_ERROR, hsaKmtMapMemoryToGPU(NULL, 4096, NULL));
    EXPECT(HSAKMT_STATUS_SUCCESS, hsaKmtUnmapMemoryToGPU(NULL));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtQueryPointerInfo(&p, NULL));
    HsaEvent *e = NULL;
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtCreateEvent(NULL, false, false, &e));
    HsaEventDescriptor d;
    memset(&d, 0, sizeof d);
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtCreateEvent(&d, false, false, NULL));
    d.EventType = HSA_EVENTTYPE_MAXID;
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtCreateEvent(&d, false, false, &e));
    EXPECT(HSAKMT_STATUS_INVALID_HANDLE, hsaKmtDestroyEvent(NULL));
    EXPECT(HSAKMT_STATUS_INVALID_HANDLE, hsaKmtSetEvent(NULL));
    EXPECT(HSAKMT_STATUS_INVALID_HANDLE, hsaKmtWaitOnEvent(NULL, 0));
    EXPECT(HSAKMT_STATUS_INVALID_HANDLE, hsaKmtWaitOnMultipleEvents(NULL, 1, true, 0));
    EXPECT(HSAKMT_STATUS_INVALID_HANDLE, hsaKmtQueryEventState(NULL));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtGetClockCounters(0, NULL));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtModelEnabled(NULL));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtGetRuntimeCapabilities(NULL));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtGetXNACKMode(NULL));
    if (g_sys.gpu != INVALID_NODEID) {
        EXPECT(HSAKMT_STATUS_INVALID_PARAMETER,
               hsaKmtCreateQueue(g_sys.gpu, HSA_QUEUE_COMPUTE, 100, HSA_QUEUE_PRIORITY_NORMAL,
                                 &p, 4096, NULL, NULL));
        EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtAvailableMemory(g_sys.gpu, NULL));
        EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtGetAMDGPUDeviceHandle(g_sys.gpu, NULL));
    }
}

static void unknown_nodes(void)
{
    HSAuint32 bad = g_sys.nodes;
    HsaNodeProperties p;
    HsaMemoryProperties mp;
    HsaCacheProperties cp;
    HsaIoLinkProperties lp;
    HsaClockCounters cc;
    void *m = NULL;
    HSAuint64 avail;
    EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT, hsaKmtGetNodeProperties(bad, &p));
    EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT, hsaKmtGetNodeMemoryProperties(bad, 1, &mp));
    EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT, hsaKmtGetNodeCacheProperties(bad, 0, 0, &cp));
    EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT, hsaKmtGetNodeIoLinkProperties(bad, 0, &lp));
    EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT, hsaKmtAllocMemory(bad, 4096, mem_flags(1, 0), &m));
    EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT, hsaKmtGetClockCounters(bad, &cc));
    EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT, hsaKmtAvailableMemory(bad, &avail));
    EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT, hsaKmtSetTrapHandler(bad, NULL, 0, NULL, 0));
    EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT, hsaKmtDbgRegister(bad));
    HsaQueueResource res;
    memset(&res, 0, sizeof res);
    EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT,
           hsaKmtCreateQueue(bad, HSA_QUEUE_COMPUTE, 100, HSA_QUEUE_PRIORITY_NORMAL, &p, 4096,
                             NULL, &res));
    HsaAMDGPUDeviceHandle h;
    EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT, hsaKmtGetAMDGPUDeviceHandle(g_sys.cpu, &h));
    if (g_sys.gpu == INVALID_NODEID)
        return;
    void *buf = alloc_ok(g_sys.gpu, 4096, mem_flags(1, 1));
    if (buf) {
        HsaMemMapFlags mf;
        memset(&mf, 0, sizeof mf);
        HSAuint32 nodes[1] = { bad };
        EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT, hsaKmtMapMemoryToGPUNodes(buf, 4096, NULL, mf, 1, nodes));
        EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtMapMemoryToGPUNodes(buf, 4096, NULL, mf, 0, nodes));
        EXPECT_OK(hsaKmtFreeMemory(buf, 4096));
    }
}

static void stale_and_foreign(void)
{
    HsaEventDescriptor d;
    memset(&d, 0, sizeof d);
    HsaEvent *e = NULL;
    if (!g_sys.topology_only) {
        EXPECT_OK(hsaKmtCreateEvent(&d, false, false, &e));
        EXPECT_OK(hsaKmtDestroyEvent(e));
        /* The destroyed event's slot is free: its pointer is refused. */
        EXPECT(HSAKMT_STATUS_INVALID_HANDLE, hsaKmtDestroyEvent(e));
        EXPECT(HSAKMT_STATUS_INVALID_HANDLE, hsaKmtSetEvent(e));
        EXPECT(HSAKMT_STATUS_INVALID_HANDLE, hsaKmtWaitOnEvent(e, 0));
    }
    /* An HsaEvent the library did not make. */
    HsaEvent forged;
    memset(&forged, 0, sizeof forged);
    EXPECT(HSAKMT_STATUS_INVALID_HANDLE, hsaKmtSetEvent(&forged));
    EXPECT(HSAKMT_STATUS_INVALID_HANDLE, hsaKmtDestroyEvent(&forged));
    HsaEvent *list[1] = { &forged };
    EXPECT(HSAKMT_STATUS_INVALID_HANDLE, hsaKmtWaitOnMultipleEvents(list, 1, true, 0));
    /* Queue ids: 0, made up, and one the library never issued. */
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtDestroyQueue(0));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtDestroyQueue(0x7777000000000001ull));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtUpdateQueue(0x12345, 100, 0, NULL, 0, NULL));
    HsaQueueInfo qi;
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtGetQueueInfo(0x12345, &qi));
    HSAuint32 mask = 1;
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtSetQueueCUMask(0x12345, 32, &mask));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtQueueRingDoorbell(0x12345));
    /* Queue parameters upstream checks itself. */
    HsaQueueResource res;
    memset(&res, 0, sizeof res);
    if (g_sys.gpu != INVALID_NODEID) {
        EXPECT(HSAKMT_STATUS_INVALID_PARAMETER,
               hsaKmtCreateQueue(g_sys.gpu, HSA_QUEUE_COMPUTE, 100, HSA_QUEUE_PRIORITY_MINIMUM - 1,
                                 &mask, 4096, NULL, &res));
        EXPECT(HSAKMT_STATUS_INVALID_PARAMETER,
               hsaKmtCreateQueue(g_sys.gpu, HSA_QUEUE_MULTIMEDIA_DECODE, 100,
                                 HSA_QUEUE_PRIORITY_NORMAL, &mask, 4096, NULL, &res));
        /* A ring the GPU cannot see: the kernel refuses it. */
        EXPECT(HSAKMT_STATUS_ERROR,
               hsaKmtCreateQueue(g_sys.gpu, HSA_QUEUE_COMPUTE, 100, HSA_QUEUE_PRIORITY_NORMAL,
                                 (void *)0x10000, 4096, NULL, &res));
        /* An event of another library as the queue's error event. */
        EXPECT(HSAKMT_STATUS_INVALID_HANDLE,
               hsaKmtCreateQueue(g_sys.gpu, HSA_QUEUE_COMPUTE, 100, HSA_QUEUE_PRIORITY_NORMAL,
                                 (void *)0x10000, 4096, &forged, &res));
    }
}

static void double_free(void)
{
    if (g_sys.gpu == INVALID_NODEID)
        return;
    void *p = alloc_ok(g_sys.gpu, 4096, mem_flags(1, 1));
    if (!p)
        return;
    EXPECT_OK(hsaKmtFreeMemory(p, 4096));
    /* Upstream: an address it does not know may be SVM memory when the SVM API is in use. */
    HSAKMT_STATUS unknown = g_sys.svm_api ? HSAKMT_STATUS_SUCCESS : HSAKMT_STATUS_MEMORY_NOT_REGISTERED;
    EXPECT(unknown, hsaKmtFreeMemory(p, 4096));
    EXPECT(g_sys.svm_api || !g_sys.dgpu ? HSAKMT_STATUS_SUCCESS : HSAKMT_STATUS_ERROR,
           hsaKmtUnmapMemoryToGPU(p));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtMapMemoryToGPU(p, 4096, NULL));
    int stack;
    EXPECT(unknown, hsaKmtFreeMemory(&stack, 4096));
}

void test_bad_input(void)
{
    HsakmtRsSimAccounting before = accounting();
    null_pointers();
    unknown_nodes();
    stale_and_foreign();
    double_free();
    HsakmtRsSimAccounting after = accounting();
    CHECK(same_accounting(&before, &after), "bad input changed what the kernel holds");
}
