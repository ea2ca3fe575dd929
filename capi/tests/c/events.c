/* Events: creation (the HsaEvent the library allocates), set, reset, wait with and without
 * ages, auto and manual reset, waits on many, and a GPU raising an event through its mailbox.
 * Part of hsakmt-rs; licensed MIT OR Apache-2.0. */
#include <stdlib.h>

#include "check.h"

static HsaEvent *event(HSA_EVENTTYPE type, bool manual, bool signaled)
{
    HsaEventDescriptor d;
    memset(&d, 0, sizeof d);
    d.EventType = type;
    d.NodeId = 0;
    d.SyncVar.SyncVar.UserData = (void *)0x1234;
    d.SyncVar.SyncVarSize = 8;
    HsaEvent *e = NULL;
    HSAKMT_STATUS s = hsaKmtCreateEvent(&d, manual, signaled, &e);
    CHECK(s == HSAKMT_STATUS_SUCCESS && e, "create event of type %u: %d", type, (int)s);
    if (!e)
        return NULL;
    CHECK(e->EventId == e->EventData.HWData1 && e->EventData.EventType == type,
          "event id %u, HWData1 %llu, type %u", e->EventId,
          (unsigned long long)e->EventData.HWData1, e->EventData.EventType);
    CHECK(e->EventData.EventData.SyncVar.SyncVar.UserData == (void *)0x1234 &&
              e->EventData.EventData.SyncVar.SyncVarSize == 8,
          "the descriptor's sync variable was not copied");
    if (type == HSA_EVENTTYPE_SIGNAL || type == HSA_EVENTTYPE_DEBUG_EVENT)
        CHECK(e->EventData.HWData2 != 0, "signal event without a mailbox (HWData2)");
    else
        CHECK(e->EventData.HWData2 == 0, "type %u event with a mailbox", type);
    return e;
}

static void auto_and_manual(void)
{
    HsaEvent *a = event(HSA_EVENTTYPE_SIGNAL, false, false);
    HsaEvent *m = event(HSA_EVENTTYPE_SIGNAL, true, false);
    if (!a || !m)
        return;
    EXPECT(HSAKMT_STATUS_WAIT_TIMEOUT, hsaKmtWaitOnEvent(a, 0));
    EXPECT_OK(hsaKmtSetEvent(a));
    EXPECT_OK(hsaKmtQueryEventState(a));
    EXPECT_OK(hsaKmtWaitOnEvent(a, 0));
    EXPECT(HSAKMT_STATUS_WAIT_TIMEOUT, hsaKmtWaitOnEvent(a, 10));
    EXPECT_OK(hsaKmtSetEvent(m));
    EXPECT_OK(hsaKmtWaitOnEvent(m, 0));
    EXPECT_OK(hsaKmtWaitOnEvent(m, 0));
    EXPECT_OK(hsaKmtResetEvent(m));
    EXPECT(HSAKMT_STATUS_WAIT_TIMEOUT, hsaKmtWaitOnEvent(m, 0));
    EXPECT_OK(hsaKmtDestroyEvent(a));
    EXPECT_OK(hsaKmtDestroyEvent(m));
}

/* Event ages (KFD 1.14): a wait with an age returns at once when the event fired since. */
static void ages(void)
{
    HsaEvent *e = event(HSA_EVENTTYPE_SIGNAL, false, false);
    if (!e)
        return;
    uint64_t age = 1;
    EXPECT(HSAKMT_STATUS_WAIT_TIMEOUT, hsaKmtWaitOnEvent_Ext(e, 0, &age));
    CHECK(age == 1, "age after a timeout %llu", (unsigned long long)age);
    EXPECT_OK(hsaKmtSetEvent(e));
    EXPECT_OK(hsaKmtWaitOnEvent_Ext(e, 1000, &age));
    CHECK(age == 2, "age after one set %llu", (unsigned long long)age);
    EXPECT_OK(hsaKmtSetEvent(e));
    EXPECT_OK(hsaKmtSetEvent(e));
    EXPECT_OK(hsaKmtWaitOnEvent_Ext(e, 1000, &age));
    CHECK(age == 4, "age after two more sets %llu", (unsigned long long)age);
    EXPECT_OK(hsaKmtDestroyEvent(e));
}

static void many(void)
{
    enum { N = 64 };
    HsaEvent *ev[N];
    uint64_t age[N];
    for (int i = 0; i < N; i++) {
        ev[i] = event(HSA_EVENTTYPE_SIGNAL, false, i % 2 == 0);
        age[i] = 1;
        if (!ev[i])
            return;
    }
    for (int i = 1; i < N; i += 2)
        EXPECT_OK(hsaKmtSetEvent(ev[i]));
    EXPECT_OK(hsaKmtWaitOnMultipleEvents_Ext(ev, N, true, 1000, age));
    int fired = 0;
    for (int i = 0; i < N; i++)
        fired += age[i] == 2;
    CHECK(fired == N, "%d of %d events report age 2 after wait-all", fired, N);
    EXPECT(HSAKMT_STATUS_WAIT_TIMEOUT, hsaKmtWaitOnMultipleEvents(ev, N, false, 0));
    EXPECT_OK(hsaKmtSetEvent(ev[N - 1]));
    EXPECT_OK(hsaKmtWaitOnMultipleEvents(ev, N, false, 1000));
    for (int i = 0; i < N; i++)
        EXPECT_OK(hsaKmtDestroyEvent(ev[i]));
}

/* The GPU raises an event: RELEASE_MEM writes the mailbox and interrupts with the event id. */
static void from_gpu(void)
{
    HsaEvent *e = event(HSA_EVENTTYPE_SIGNAL, false, false);
    uint32_t *ring = alloc_ok(g_sys.cpu, 4096, mem_flags(1, 1));
    if (!e || !ring)
        return;
    memset(ring, 0, 4096);
    EXPECT_OK(hsaKmtMapMemoryToGPU(ring, 4096, NULL));
    HsaQueueResource res;
    memset(&res, 0, sizeof res);
    EXPECT_OK(hsaKmtCreateQueue(g_sys.gpu, HSA_QUEUE_COMPUTE, 100, HSA_QUEUE_PRIORITY_NORMAL,
                                ring, 4096, e, &res));
    if (res.QueueId) {
        uint64_t mailbox = e->EventData.HWData2;
        uint32_t n = 0;
        ring[n++] = (3u << 30) | (6u << 16) | (0x49u << 8);
        ring[n++] = 0;
        ring[n++] = (1u << 29) | (2u << 24);
        ring[n++] = (uint32_t)mailbox;
        ring[n++] = (uint32_t)(mailbox >> 32);
        ring[n++] = e->EventId;
        ring[n++] = 0;
        ring[n++] = e->EventId;
        __atomic_store_n(res.Queue_write_ptr_aql, n, __ATOMIC_RELEASE);
        EXPECT_OK(hsaKmtQueueRingDoorbell(res.QueueId));
        EXPECT_OK(hsaKmtWaitOnEvent(e, 2000));
        EXPECT_OK(hsaKmtDestroyQueue(res.QueueId));
    }
    EXPECT_OK(hsaKmtUnmapMemoryToGPU(ring));
    EXPECT_OK(hsaKmtFreeMemory(ring, 4096));
    EXPECT_OK(hsaKmtDestroyEvent(e));
}

void test_events(void)
{
    auto_and_manual();
    ages();
    many();
    /* Other types exist without a mailbox; the CPU cannot set them. */
    HsaEvent *mem = event(HSA_EVENTTYPE_MEMORY, false, true);
    if (mem) {
        EXPECT(HSAKMT_STATUS_ERROR, hsaKmtSetEvent(mem));
        EXPECT(HSAKMT_STATUS_ERROR, hsaKmtResetEvent(mem));
        EXPECT(HSAKMT_STATUS_WAIT_TIMEOUT, hsaKmtWaitOnEvent(mem, 0));
        EXPECT_OK(hsaKmtDestroyEvent(mem));
    }
    HsaEvent *hw = event(HSA_EVENTTYPE_HW_EXCEPTION, false, false);
    if (hw)
        EXPECT_OK(hsaKmtDestroyEvent(hw));
    if (g_sys.gpu != INVALID_NODEID)
        from_gpu();
}
