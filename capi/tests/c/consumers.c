/* What the real consumers rely on beyond the API's own contract (kfdtest's PM4 and SDMA queue
 * classes, ROCr's SDMA blit queues): queues rung with plain stores to the write pointer and the
 * doorbell page, kfdtest's one-dword NOP, RELEASE_MEM's interrupt selection and GPU clock, the CP
 * read pointer wrapping at the ring's end and passing a RELEASE_MEM before its interrupt, the
 * SDMA packets both emit (WRITE, broadcast and rectangular copies, timestamps, atomics, HDP
 * flush, GCR, trap), registered memory's GPU address, threads mapping the same memory, and
 * kfdtest's GetTileConfigTest (the tiling tables as amdkfd reports them for gfx9+).
 * Part of hsakmt-rs; licensed MIT OR Apache-2.0. */
#include <pthread.h>
#include <stdlib.h>

#include "check.h"

#define RING 4096
#define RING_DWORDS (RING / 4)
#define PACKET3(op, n) ((3u << 30) | (((n) & 0x3FFFu) << 16) | ((op) << 8))
#define PM4_NOP 0x10
#define PM4_WRITE_DATA 0x37
#define PM4_RELEASE_MEM 0x49

/* Host memory on the CPU node, zeroed and mapped on the GPU. */
static void *shared(HSAuint64 size)
{
    void *p = alloc_ok(g_sys.cpu, size, mem_flags(1, 1));
    if (p) {
        memset(p, 0, size);
        EXPECT_OK(hsaKmtMapMemoryToGPU(p, size, NULL));
    }
    return p;
}

static void unshare(void *p, HSAuint64 size)
{
    if (p) {
        EXPECT_OK(hsaKmtUnmapMemoryToGPU(p));
        EXPECT_OK(hsaKmtFreeMemory(p, size));
    }
}

static HsaEvent *signal_event(void)
{
    HsaEventDescriptor d;
    memset(&d, 0, sizeof d);
    d.EventType = HSA_EVENTTYPE_SIGNAL;
    d.NodeId = g_sys.gpu;
    HsaEvent *e = NULL;
    EXPECT_OK(hsaKmtCreateEvent(&d, false, false, &e));
    return e;
}

/* Rings a queue as kfdtest's PM4Queue/SDMAQueue::SubmitPacket and ROCr's BlitSdma do: a plain
 * store of the write pointer, a barrier, a plain 64-bit store to the doorbell page. */
static void plain_ring(const HsaQueueResource *res, uint64_t wptr)
{
    *(volatile uint64_t *)res->Queue_write_ptr_aql = wptr;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    *(volatile uint64_t *)res->Queue_DoorBell_aql = wptr;
}

/* A PM4 producer that writes packets at a monotonic dword write pointer, wrapping in the ring. */
struct pm4 {
    uint32_t *ring;
    uint64_t wptr;
};

static void put(struct pm4 *q, uint32_t dw)
{
    q->ring[q->wptr++ % RING_DWORDS] = dw;
}

static void write_data(struct pm4 *q, uint64_t dst, uint32_t value)
{
    put(q, PACKET3(PM4_WRITE_DATA, 3));
    put(q, 5u << 8); /* memory, asynchronous */
    put(q, (uint32_t)dst);
    put(q, (uint32_t)(dst >> 32));
    put(q, value);
}

static void release_mem(struct pm4 *q, uint32_t data_sel, uint32_t int_sel, uint64_t dst,
                        uint64_t data, uint32_t ctx)
{
    put(q, PACKET3(PM4_RELEASE_MEM, 6));
    put(q, 0x14 | (5u << 8)); /* EOP event, as kfdtest's PM4ReleaseMemoryPacket */
    put(q, (data_sel << 29) | (int_sel << 24));
    put(q, (uint32_t)dst);
    put(q, (uint32_t)(dst >> 32));
    put(q, (uint32_t)data);
    put(q, (uint32_t)(data >> 32));
    put(q, ctx);
}

/* The CP's read pointer: the dword offset in the ring where it consumes next. */
static int consumed(const HsaQueueResource *res, const struct pm4 *q)
{
    return wait_u64((volatile uint64_t *)res->Queue_read_ptr_aql, q->wptr % RING_DWORDS);
}

static void pm4_queue(void)
{
    uint32_t *ring = shared(RING);
    volatile uint32_t *data = shared(4096);
    HsaEvent *e = signal_event();
    if (!ring || !data || !e)
        return;
    HsaQueueResource res;
    memset(&res, 0, sizeof res);
    EXPECT_OK(hsaKmtCreateQueue(g_sys.gpu, HSA_QUEUE_COMPUTE, 100, HSA_QUEUE_PRIORITY_NORMAL,
                                ring, RING, NULL, &res));
    if (res.QueueId == 0)
        goto out;
    struct pm4 q = { ring, 0 };
    uint64_t dst = (uint64_t)(uintptr_t)data;

    /* Three batches of 100 WRITE_DATA (1500 dwords): the ring of 1024 wraps; the read pointer
     * follows the write pointer modulo the ring. */
    for (uint32_t batch = 0; batch < 3; batch++) {
        for (uint32_t i = 0; i < 100; i++)
            write_data(&q, dst, batch * 100 + i);
        plain_ring(&res, q.wptr);
        CHECK(consumed(&res, &q), "batch %u: read pointer %llu, write pointer %llu", batch,
              (unsigned long long)*res.Queue_read_ptr_aql, (unsigned long long)q.wptr);
        CHECK(wait_u32(&data[0], batch * 100 + 99), "batch %u: last write %u", batch, data[0]);
    }

    /* kfdtest's SubmitNopCpQueue: a one-dword NOP, then RELEASE_MEM raising the event after the
     * write is confirmed. When the wait returns, the read pointer is past the RELEASE_MEM. */
    put(&q, PACKET3(PM4_NOP, 0x3FFF));
    release_mem(&q, 1, 2, e->EventData.HWData2, e->EventId, e->EventId);
    plain_ring(&res, q.wptr);
    EXPECT_OK(hsaKmtWaitOnEvent(e, 2000));
    CHECK(*res.Queue_read_ptr_aql == q.wptr % RING_DWORDS,
          "the event fired with the read pointer at %llu, not past its packet (%llu)",
          (unsigned long long)*res.Queue_read_ptr_aql,
          (unsigned long long)(q.wptr % RING_DWORDS));

    /* INT_SEL 3 confirms the write without an interrupt. */
    release_mem(&q, 1, 3, dst + 64, 0xC0FFEE, e->EventId);
    plain_ring(&res, q.wptr);
    CHECK(wait_u32(&data[16], 0xC0FFEE), "RELEASE_MEM with INT_SEL 3 did not write");
    CHECK(consumed(&res, &q), "RELEASE_MEM with INT_SEL 3 not consumed");
    EXPECT(HSAKMT_STATUS_WAIT_TIMEOUT, hsaKmtWaitOnEvent(e, 20));

    /* DATA_SEL 3: the GPU clock counter hsaKmtGetClockCounters reports. */
    HsaClockCounters before, after;
    EXPECT_OK(hsaKmtGetClockCounters(g_sys.gpu, &before));
    release_mem(&q, 3, 0, dst + 128, 0, 0);
    plain_ring(&res, q.wptr);
    CHECK(consumed(&res, &q), "RELEASE_MEM of the GPU clock not consumed");
    EXPECT_OK(hsaKmtGetClockCounters(g_sys.gpu, &after));
    uint64_t stamp = *(volatile uint64_t *)&data[32];
    CHECK(stamp >= before.GPUClockCounter && stamp <= after.GPUClockCounter,
          "GPU timestamp %llu outside [%llu, %llu]", (unsigned long long)stamp,
          (unsigned long long)before.GPUClockCounter, (unsigned long long)after.GPUClockCounter);
    EXPECT_OK(hsaKmtDestroyQueue(res.QueueId));
out:
    if (e)
        EXPECT_OK(hsaKmtDestroyEvent(e));
    unshare(ring, RING);
    unshare((void *)data, 4096);
}

/* SDMA packets: a byte-addressed producer; packets never straddle the ring end here. */
struct sdma {
    uint32_t *ring;
    uint32_t n;
};

static void emit(struct sdma *q, const uint32_t *dw, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        q->ring[q->n++] = dw[i];
}

#define LO(a) ((uint32_t)(a))
#define HI(a) ((uint32_t)((uint64_t)(a) >> 32))

static void sdma_queue(void)
{
    uint32_t *ring = shared(RING);
    uint8_t *mem = shared(4 * 4096);
    HsaEvent *e = signal_event();
    if (!ring || !mem || !e)
        return;
    HsaQueueResource res;
    memset(&res, 0, sizeof res);
    /* On every GPU profile, also one whose topology predates the num_sdma_* keys (Vega 10):
     * upstream does not check them; the kernel knows its engines. */
    EXPECT_OK(hsaKmtCreateQueue(g_sys.gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, ring,
                                RING, NULL, &res));
    if (res.QueueId == 0)
        goto out;
    uint64_t base = (uint64_t)(uintptr_t)mem;
    uint8_t *src = mem, *dst0 = mem + 4096, *dst1 = mem + 8192;
    uint32_t *misc = (uint32_t *)(mem + 12288);
    uint64_t s = base, d0 = base + 4096, d1 = base + 8192, m = base + 12288;
    for (int i = 0; i < 1024; i++)
        src[i] = (uint8_t)(i * 13 + 1);
    *(uint64_t *)&misc[2] = 5; /* the counter the atomic decrements */
    struct sdma q = { ring, 0 };
    /* WRITE of two dwords (kfdtest's SDMAWriteDataPacket). */
    uint32_t write[] = { 2, LO(m), HI(m), 1, 0xAAAA0001, 0xAAAA0002 };
    emit(&q, write, 6);
    /* COPY_LINEAR broadcast: 256 bytes to two destinations (kfdtest's P2PTest). */
    uint32_t bcast[] = { 1 | (1u << 27), 255, 0, LO(s), HI(s), LO(d0), HI(d0), LO(d1), HI(d1) };
    emit(&q, bcast, 9);
    /* COPY_LINEAR_RECT (ROCr's BuildCopyRectCommand): 4 rows of 16 bytes, source pitch 64,
     * destination pitch 32, 4-byte elements, into dst1 + 1024. */
    uint64_t r = d1 + 1024;
    uint32_t rect[] = { 1 | (4u << 8) | (2u << 29), LO(s), HI(s), 0, 15u << 13, 0,
                        LO(r), HI(r), 0, 7u << 13, 0, 3 | (3u << 16), 0 };
    emit(&q, rect, 13);
    /* ROCr's HDP flush, then a GCR write-back/invalidate of every line. */
    uint32_t hdp[] = { 0x8, 0x0, 0x80000000, 0, 0, 0 };
    emit(&q, hdp, 6);
    uint32_t gcr[] = { 17 | (1u << 8), 0, 0xC3C00000, 0, 0 };
    emit(&q, gcr, 5);
    /* ATOMIC add64 of -1 (ROCr's completion-signal decrement) and a global timestamp. */
    uint64_t counter = m + 8, stamp = m + 32;
    uint32_t atomic[] = { 10 | (47u << 25), LO(counter), HI(counter), 0xFFFFFFFF, 0xFFFFFFFF, 0,
                          0, 0 };
    emit(&q, atomic, 8);
    uint32_t ts[] = { 13 | (2u << 8), LO(stamp), HI(stamp) };
    emit(&q, ts, 3);
    /* FENCE to the event's mailbox and TRAP with its id (kfdtest's Wait4PacketConsumption). */
    uint64_t mailbox = e->EventData.HWData2;
    uint32_t fence[] = { 5, LO(mailbox), HI(mailbox), e->EventId };
    emit(&q, fence, 4);
    uint32_t trap[] = { 6, e->EventId };
    emit(&q, trap, 2);
    HsaClockCounters before, after;
    EXPECT_OK(hsaKmtGetClockCounters(g_sys.gpu, &before));
    plain_ring(&res, (uint64_t)q.n * 4);
    EXPECT_OK(hsaKmtWaitOnEvent(e, 2000));
    EXPECT_OK(hsaKmtGetClockCounters(g_sys.gpu, &after));
    CHECK(*res.Queue_read_ptr_aql == (uint64_t)q.n * 4,
          "the trap fired with the read pointer at %llu, not past it (%u)",
          (unsigned long long)*res.Queue_read_ptr_aql, q.n * 4);
    CHECK(misc[0] == 0xAAAA0001 && misc[1] == 0xAAAA0002, "WRITE wrote %#x %#x", misc[0],
          misc[1]);
    CHECK(memcmp(dst0, src, 256) == 0 && memcmp(dst1, src, 256) == 0,
          "the broadcast copy differs");
    int rows = 1;
    for (int y = 0; y < 4; y++)
        rows &= memcmp(dst1 + 1024 + 32 * y, src + 64 * y, 16) == 0;
    CHECK(rows && dst1[1024 + 16] == 0, "the rectangular copy differs");
    CHECK(*(volatile uint64_t *)&misc[2] == 4, "the atomic left %llu",
          (unsigned long long)*(volatile uint64_t *)&misc[2]);
    uint64_t t = *(volatile uint64_t *)&misc[8];
    CHECK(t >= before.GPUClockCounter && t <= after.GPUClockCounter,
          "SDMA timestamp %llu outside [%llu, %llu]", (unsigned long long)t,
          (unsigned long long)before.GPUClockCounter, (unsigned long long)after.GPUClockCounter);
    EXPECT_OK(hsaKmtDestroyQueue(res.QueueId));
out:
    if (e)
        EXPECT_OK(hsaKmtDestroyEvent(e));
    unshare(ring, RING);
    unshare(mem, 4 * 4096);
}

/* kfdtest's GPUDoorbellWrite: an SDMA queue writes another queue's write pointer and doorbell,
 * which rings it; writes to the doorbell page and to the MMIO-remap page (the HDP flush register
 * kfdtest's DeviceHdpFlush shader writes) are ordinary GPU writes, not faults: the SDMA queue
 * goes on to its fence. */
static void gpu_rings_a_doorbell(void)
{
    uint32_t *ring = shared(RING), *sring = shared(RING);
    volatile uint32_t *data = shared(4096);
    if (!ring || !sring || !data)
        return;
    HsaQueueResource pm4, sdma;
    memset(&pm4, 0, sizeof pm4);
    memset(&sdma, 0, sizeof sdma);
    EXPECT_OK(hsaKmtCreateQueue(g_sys.gpu, HSA_QUEUE_COMPUTE, 100, HSA_QUEUE_PRIORITY_NORMAL,
                                ring, RING, NULL, &pm4));
    EXPECT_OK(hsaKmtCreateQueue(g_sys.gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, sring,
                                RING, NULL, &sdma));
    if (pm4.QueueId && sdma.QueueId) {
        uint64_t dst = (uint64_t)(uintptr_t)data;
        struct pm4 q = { ring, 0 };
        write_data(&q, dst, 0x12345678); /* placed, not submitted */
        uint64_t w = (uint64_t)(uintptr_t)pm4.Queue_write_ptr_aql;
        uint64_t db = (uint64_t)(uintptr_t)pm4.Queue_DoorBell_aql;
        struct sdma s = { sring, 0 };
        uint32_t wptr[] = { 2, LO(w), HI(w), 1, (uint32_t)q.wptr, 0 };
        emit(&s, wptr, 6);
        uint32_t bell[] = { 2, LO(db), HI(db), 1, (uint32_t)q.wptr, 0 };
        emit(&s, bell, 6);
        HsaNodeProperties props;
        EXPECT_OK(hsaKmtGetNodeProperties(g_sys.gpu, &props));
        HsaMemoryProperties banks[16];
        HSAuint32 n = props.NumMemoryBanks < 16 ? props.NumMemoryBanks : 16;
        EXPECT_OK(hsaKmtGetNodeMemoryProperties(g_sys.gpu, n, banks));
        for (HSAuint32 i = 0; i < n; i++) {
            if (banks[i].HeapType != HSA_HEAPTYPE_MMIO_REMAP || !banks[i].VirtualBaseAddress)
                continue;
            uint64_t mmio = banks[i].VirtualBaseAddress;
            uint32_t hdp[] = { 2, LO(mmio), HI(mmio), 0, 1 };
            emit(&s, hdp, 5);
        }
        uint64_t fence = dst + 64;
        uint32_t f[] = { 5, LO(fence), HI(fence), 0xFE };
        emit(&s, f, 4);
        plain_ring(&sdma, (uint64_t)s.n * 4);
        CHECK(wait_u32(&data[0], 0x12345678), "the queue the GPU rang did not run its packet");
        CHECK(wait_u32(&data[16], 0xFE), "the SDMA queue stopped after writing a doorbell or "
                                         "the MMIO page");
    }
    if (pm4.QueueId)
        EXPECT_OK(hsaKmtDestroyQueue(pm4.QueueId));
    if (sdma.QueueId)
        EXPECT_OK(hsaKmtDestroyQueue(sdma.QueueId));
    unshare(ring, RING);
    unshare(sring, RING);
    unshare((void *)data, 4096);
}

/* An AQL queue rung with a plain store of the last packet's index to the doorbell page (ROCr
 * outside DTIF mode): noticed without hsaKmtQueueRingDoorbell. */
static void aql_plain_doorbell(void)
{
    uint8_t *ring = shared(RING);
    uint64_t *pointers = shared(4096);
    if (!ring || !pointers)
        return;
    for (int i = 0; i < RING / 64; i++)
        *(uint16_t *)(ring + i * 64) = 1; /* INVALID */
    HsaQueueResource res;
    memset(&res, 0, sizeof res);
    res.Queue_read_ptr_aql = &pointers[16];
    res.Queue_write_ptr_aql = &pointers[7];
    EXPECT_OK(hsaKmtCreateQueue(g_sys.gpu, HSA_QUEUE_COMPUTE_AQL, 100,
                                HSA_QUEUE_PRIORITY_NORMAL, ring, RING, NULL, &res));
    if (res.QueueId) {
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < 2; i++) {
                uint8_t *slot = ring + (round * 2 + i) * 64;
                memset(slot + 4, 0, 60);
                uint16_t header = 3 /* BARRIER_AND */ | (1 << 8) | (2 << 9) | (2 << 11);
                __atomic_store_n((uint16_t *)slot, header, __ATOMIC_RELEASE);
            }
            uint64_t next = (uint64_t)round * 2 + 2;
            __atomic_store_n(res.Queue_write_ptr_aql, next, __ATOMIC_RELEASE);
            *(volatile uint64_t *)res.Queue_DoorBell_aql = next - 1;
            CHECK(wait_u64(res.Queue_read_ptr_aql, next), "round %d: AQL read index %llu", round,
                  (unsigned long long)*res.Queue_read_ptr_aql);
        }
        EXPECT_OK(hsaKmtDestroyQueue(res.QueueId));
    }
    unshare(ring, RING);
    unshare(pointers, 4096);
}

/* Registered memory lives at a GPU address of its own (kfdtest's MemoryRegisterSamePtr and
 * MMapLarge): mapping returns it in AlternateVAGPU — the GPU page plus the pointer's offset in
 * its page —, the GPU writes through it, and it names the memory for unmap and deregister. */
static void registered_gpu_address(void)
{
    char *page = NULL;
    CHECK(posix_memalign((void **)&page, 4096, 8192) == 0, "posix_memalign");
    uint32_t *ring = shared(RING);
    if (!page || !ring) {
        free(page);
        return;
    }
    memset(page, 0, 8192);
    volatile uint32_t *user = (volatile uint32_t *)(page + 100);
    HSAuint64 alt = 0, again = 0;
    EXPECT_OK(hsaKmtRegisterMemory((void *)user, 8));
    EXPECT_OK(hsaKmtMapMemoryToGPU((void *)user, 8, &alt));
    CHECK(alt != 0 && alt % 4096 == 100, "AlternateVAGPU %#llx for %p",
          (unsigned long long)alt, (void *)user);
    EXPECT_OK(hsaKmtRegisterMemory((void *)user, 8));
    EXPECT_OK(hsaKmtMapMemoryToGPU((void *)user, 8, &again));
    CHECK(again == alt, "the second mapping's address %#llx, the first's %#llx",
          (unsigned long long)again, (unsigned long long)alt);
    /* One registration and mapping dropped through the GPU address: still mapped. */
    EXPECT_OK(hsaKmtUnmapMemoryToGPU((void *)(uintptr_t)alt));
    EXPECT_OK(hsaKmtDeregisterMemory((void *)(uintptr_t)alt));
    HsaQueueResource res;
    memset(&res, 0, sizeof res);
    EXPECT_OK(hsaKmtCreateQueue(g_sys.gpu, HSA_QUEUE_COMPUTE, 100, HSA_QUEUE_PRIORITY_NORMAL,
                                ring, RING, NULL, &res));
    if (res.QueueId) {
        struct pm4 q = { ring, 0 };
        write_data(&q, alt, 0xDEADBEEF);
        plain_ring(&res, q.wptr);
        CHECK(wait_u32(user, 0xDEADBEEF), "a GPU write to the registered GPU address did not "
                                          "reach the user memory (%#x)", *user);
        EXPECT_OK(hsaKmtDestroyQueue(res.QueueId));
    }
    EXPECT_OK(hsaKmtUnmapMemoryToGPU((void *)(uintptr_t)alt));
    EXPECT_OK(hsaKmtDeregisterMemory((void *)(uintptr_t)alt));
    HsaPointerInfo info;
    EXPECT(HSAKMT_STATUS_ERROR, hsaKmtQueryPointerInfo((void *)user, &info));
    /* The same start registered with two sizes is two registrations, each mapped at its own
     * GPU address and released through it (the map names the memory by start and size). */
    HSAuint64 eight = 0, four = 0;
    EXPECT_OK(hsaKmtRegisterMemory((void *)user, 8));
    EXPECT_OK(hsaKmtMapMemoryToGPU((void *)user, 8, &eight));
    EXPECT_OK(hsaKmtRegisterMemory((void *)user, 4));
    EXPECT_OK(hsaKmtMapMemoryToGPU((void *)user, 4, &four));
    CHECK(eight && four && eight != four && four % 4096 == 100,
          "GPU addresses %#llx (8 bytes) and %#llx (4 bytes)", (unsigned long long)eight,
          (unsigned long long)four);
    EXPECT_OK(hsaKmtUnmapMemoryToGPU((void *)(uintptr_t)eight));
    EXPECT_OK(hsaKmtDeregisterMemory((void *)(uintptr_t)eight));
    EXPECT_OK(hsaKmtUnmapMemoryToGPU((void *)(uintptr_t)four));
    EXPECT_OK(hsaKmtDeregisterMemory((void *)(uintptr_t)four));
    EXPECT(HSAKMT_STATUS_ERROR, hsaKmtQueryPointerInfo((void *)user, &info));
    /* Allocated memory's GPU address is its CPU address: AlternateVAGPU stays 0. */
    HSAuint64 none = 1;
    EXPECT_OK(hsaKmtMapMemoryToGPU(ring, RING, &none));
    CHECK(none == 0, "AlternateVAGPU %#llx for allocated memory", (unsigned long long)none);
    EXPECT_OK(hsaKmtUnmapMemoryToGPU(ring));
    unshare(ring, RING);
    free(page);
}

/* kfdtest's MultiThreadRegisterUserptrTest: threads register and map the same memory at once,
 * then unmap and deregister it; every call succeeds (upstream serialises them). */
enum { MAPPERS = 8 };
struct mapper {
    void *buf;
    pthread_barrier_t *barrier;
    HSAuint64 va;
    int failures;
};

static void *map_same(void *arg)
{
    struct mapper *m = arg;
    pthread_barrier_wait(m->barrier);
    m->failures += hsaKmtRegisterMemory(m->buf, 1 << 20) != HSAKMT_STATUS_SUCCESS;
    m->failures += hsaKmtMapMemoryToGPU(m->buf, 1 << 20, &m->va) != HSAKMT_STATUS_SUCCESS;
    return NULL;
}

static void *unmap_same(void *arg)
{
    struct mapper *m = arg;
    m->failures += hsaKmtUnmapMemoryToGPU((void *)(uintptr_t)m->va) != HSAKMT_STATUS_SUCCESS;
    pthread_barrier_wait(m->barrier);
    m->failures += hsaKmtDeregisterMemory((void *)(uintptr_t)m->va) != HSAKMT_STATUS_SUCCESS;
    return NULL;
}

static void threads_on_same_memory(void)
{
    void *buf = NULL;
    CHECK(posix_memalign(&buf, 4096, 1 << 20) == 0, "posix_memalign");
    if (!buf)
        return;
    memset(buf, 0, 1 << 20);
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, MAPPERS);
    struct mapper m[MAPPERS];
    pthread_t t[MAPPERS];
    memset(m, 0, sizeof m);
    for (void *(*fn)(void *) = map_same; fn; fn = fn == map_same ? unmap_same : NULL) {
        for (int i = 0; i < MAPPERS; i++) {
            m[i].buf = buf;
            m[i].barrier = &barrier;
            CHECK(pthread_create(&t[i], NULL, fn, &m[i]) == 0, "pthread_create");
        }
        for (int i = 0; i < MAPPERS; i++)
            pthread_join(t[i], NULL);
    }
    int failures = 0, same = 1;
    for (int i = 0; i < MAPPERS; i++) {
        failures += m[i].failures;
        same &= m[i].va == m[0].va && m[i].va != 0;
    }
    CHECK(failures == 0, "%d register/map/unmap/deregister calls failed", failures);
    CHECK(same, "the threads got different GPU addresses");
    HsaPointerInfo info;
    EXPECT(HSAKMT_STATUS_ERROR, hsaKmtQueryPointerInfo(buf, &info));
    pthread_barrier_destroy(&barrier);
    free(buf);
}

/* kfdtest GetTileConfigTest: amdkfd copies at most its 32 tile and 16 macro-tile words (all zero
 * on gfx9+, with num_banks/num_ranks 0) and cuts the counts to what it copied. */
static void tile_config(void)
{
    HSAuint32 tiles[40], macro_tiles[20];
    memset(tiles, 0xAB, sizeof tiles);
    memset(macro_tiles, 0xAB, sizeof macro_tiles);
    HsaGpuTileConfig c;
    memset(&c, 0, sizeof c);
    c.TileConfig = tiles;
    c.MacroTileConfig = macro_tiles;
    c.NumTileConfigs = 40;
    c.NumMacroTileConfigs = 20;
    c.NumBanks = 7;
    EXPECT_OK(hsaKmtGetTileConfig(g_sys.gpu, &c));
    CHECK(c.NumTileConfigs == 32 && c.NumMacroTileConfigs == 16, "counts %u/%u, not 32/16",
          c.NumTileConfigs, c.NumMacroTileConfigs);
    CHECK(c.GbAddrConfig != 0 && c.NumBanks == 0 && c.NumRanks == 0,
          "gb_addr_config %#x banks %u ranks %u", c.GbAddrConfig, c.NumBanks, c.NumRanks);
    for (int i = 0; i < 32; i++)
        CHECK(tiles[i] == 0, "tile word %d = %#x", i, tiles[i]);
    for (int i = 0; i < 16; i++)
        CHECK(macro_tiles[i] == 0, "macro-tile word %d = %#x", i, macro_tiles[i]);

    /* Room for fewer words: the counts are the room given; no arrays at all: counts 0. */
    HSAuint32 four[4];
    c.TileConfig = four;
    c.NumTileConfigs = 4;
    c.MacroTileConfig = NULL;
    c.NumMacroTileConfigs = 0;
    EXPECT_OK(hsaKmtGetTileConfig(g_sys.gpu, &c));
    CHECK(c.NumTileConfigs == 4 && c.NumMacroTileConfigs == 0, "counts %u/%u, not 4/0",
          c.NumTileConfigs, c.NumMacroTileConfigs);
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtGetTileConfig(g_sys.gpu, NULL));
}

void test_consumers(void)
{
    tile_config();
    pm4_queue();
    sdma_queue();
    aql_plain_doorbell();
    gpu_rings_a_doorbell();
    registered_gpu_address();
    threads_on_same_memory();
}
