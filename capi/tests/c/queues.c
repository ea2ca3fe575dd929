/* Queues: every type created on the caller's ring, packets executed by the simulated engines
 * (PM4 WRITE_DATA and RELEASE_MEM, SDMA copy and fence, an AQL barrier), update, disable and
 * resume, queue info, CU masks, GWS, destruction.
 * Part of hsakmt-rs; licensed MIT OR Apache-2.0. */
#include <stdlib.h>

#include "check.h"

#define RING 4096
#define PACKET3(op, n) ((3u << 30) | (((n) & 0x3FFFu) << 16) | ((op) << 8))
#define PM4_WRITE_DATA 0x37
#define PM4_RELEASE_MEM 0x49
#define SDMA_OP_COPY 1
#define SDMA_OP_FENCE 5

/* Host memory on the CPU node, mapped on the GPU: rings, pointers, data. */
static void *gpu_visible(HSAuint64 size)
{
    void *p = alloc_ok(g_sys.cpu, size, mem_flags(1, 1));
    if (p) {
        memset(p, 0, size);
        EXPECT_OK(hsaKmtMapMemoryToGPU(p, size, NULL));
    }
    return p;
}

static void release(void *p, HSAuint64 size)
{
    if (p) {
        EXPECT_OK(hsaKmtUnmapMemoryToGPU(p));
        EXPECT_OK(hsaKmtFreeMemory(p, size));
    }
}

static HSAKMT_STATUS create(HSA_QUEUE_TYPE type, HSAuint32 engine, void *ring,
                            HsaQueueResource *res)
{
    return hsaKmtCreateQueueExt(g_sys.gpu, type, 100, HSA_QUEUE_PRIORITY_NORMAL, engine, ring,
                                RING, NULL, res);
}

/* Stores the write pointer and rings the doorbell as a DTIF client does. */
static void kick(const HsaQueueResource *res, uint64_t wptr)
{
    __atomic_store_n(res->Queue_write_ptr_aql, wptr, __ATOMIC_RELEASE);
    EXPECT_OK(hsaKmtQueueRingDoorbell(res->QueueId));
}

static void pm4(void)
{
    uint32_t *ring = gpu_visible(RING);
    volatile uint32_t *data = gpu_visible(4096);
    if (!ring || !data)
        return;
    HsaQueueResource res;
    memset(&res, 0, sizeof res);
    EXPECT_OK(create(HSA_QUEUE_COMPUTE, 0, ring, &res));
    CHECK(res.QueueId != 0 && res.QueueDoorBell != 0 && res.QueueWptrValue != 0 &&
              res.QueueRptrValue != 0,
          "PM4 queue resource: id %llu doorbell %#llx wptr %#llx rptr %#llx",
          (unsigned long long)res.QueueId, (unsigned long long)res.QueueDoorBell,
          (unsigned long long)res.QueueWptrValue, (unsigned long long)res.QueueRptrValue);
    if (res.QueueId == 0)
        goto out;
    uint64_t dst = (uint64_t)(uintptr_t)data;
    uint32_t n = 0;
    /* WRITE_DATA of two dwords to memory. */
    ring[n++] = PACKET3(PM4_WRITE_DATA, 4);
    ring[n++] = 5u << 8;
    ring[n++] = (uint32_t)dst;
    ring[n++] = (uint32_t)(dst >> 32);
    ring[n++] = 0x11112222;
    ring[n++] = 0x33334444;
    /* RELEASE_MEM writing 32 bits. */
    uint64_t fence = dst + 64;
    ring[n++] = PACKET3(PM4_RELEASE_MEM, 6);
    ring[n++] = 0;
    ring[n++] = 1u << 29;
    ring[n++] = (uint32_t)fence;
    ring[n++] = (uint32_t)(fence >> 32);
    ring[n++] = 0xFEEDBEEF;
    ring[n++] = 0;
    ring[n++] = 0;
    kick(&res, n);
    CHECK(wait_u32(&data[16], 0xFEEDBEEF), "PM4 RELEASE_MEM did not write its fence");
    CHECK(data[0] == 0x11112222 && data[1] == 0x33334444, "PM4 WRITE_DATA wrote %#x %#x",
          data[0], data[1]);
    CHECK(wait_u64(res.Queue_read_ptr_aql, n), "PM4 read pointer %llu, expected %u",
          (unsigned long long)*res.Queue_read_ptr_aql, n);

    /* Disabled by a NULL ring, then its wave state can be read; resumed by its own ring. */
    EXPECT_OK(hsaKmtUpdateQueue(res.QueueId, 100, HSA_QUEUE_PRIORITY_NORMAL, NULL, 0, NULL));
    HsaQueueInfo info;
    memset(&info, 0, sizeof info);
    EXPECT_OK(hsaKmtGetQueueInfo(res.QueueId, &info));
    CHECK(info.SaveAreaHeader && info.ControlStackTop && info.UserContextSaveArea &&
              info.CUMaskInfo && info.NumCUAssigned >= 32 && info.NumCUAssigned % 32 == 0,
          "queue info: header %p stack %p save area %p CUs %u", (void *)info.SaveAreaHeader,
          (void *)info.ControlStackTop, (void *)info.UserContextSaveArea, info.NumCUAssigned);
    ring[n] = PACKET3(PM4_WRITE_DATA, 3);
    ring[n + 1] = 5u << 8;
    ring[n + 2] = (uint32_t)(dst + 128);
    ring[n + 3] = (uint32_t)((dst + 128) >> 32);
    ring[n + 4] = 0xABCD;
    kick(&res, n + 5);
    EXPECT_OK(hsaKmtUpdateQueue(res.QueueId, 100, HSA_QUEUE_PRIORITY_HIGH, ring, RING, NULL));
    CHECK(wait_u32(&data[32], 0xABCD), "a resumed PM4 queue did not run its packet");
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER,
           hsaKmtUpdateQueue(res.QueueId, 100, HSA_QUEUE_PRIORITY_MAXIMUM + 1, ring, RING, NULL));

    /* A CU mask of the first 32 CUs (of the node's). */
    HSAuint32 cus = g_sys.gpu_props.NumFComputeCores / g_sys.gpu_props.NumSIMDPerCU;
    HSAuint32 mask[1] = { cus >= 32 ? 0xFFFFFFFFu : (1u << cus) - 1 };
    EXPECT_OK(hsaKmtSetQueueCUMask(res.QueueId, 32, mask));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtSetQueueCUMask(res.QueueId, 31, mask));
    EXPECT_OK(hsaKmtUpdateQueue(res.QueueId, 0, HSA_QUEUE_PRIORITY_NORMAL, ring, RING, NULL));
    EXPECT_OK(hsaKmtGetQueueInfo(res.QueueId, &info));
    CHECK(info.NumCUAssigned == 32 && info.CUMaskInfo[0] == mask[0], "CU mask %u bits, %#x",
          info.NumCUAssigned, info.CUMaskInfo ? info.CUMaskInfo[0] : 0);

    if (g_sys.gpu_props.NumGws) {
        HSAuint32 first = 99;
        EXPECT_OK(hsaKmtAllocQueueGWS(res.QueueId, g_sys.gpu_props.NumGws, &first));
        CHECK(first == 0, "first GWS %u", first);
    }
    EXPECT_OK(hsaKmtDestroyQueue(res.QueueId));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtDestroyQueue(res.QueueId));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtQueueRingDoorbell(res.QueueId));
out:
    release(ring, RING);
    release((void *)data, 4096);
}

static void sdma(HSA_QUEUE_TYPE type, HSAuint32 engine, const char *what)
{
    uint32_t *ring = gpu_visible(RING);
    uint8_t *src = gpu_visible(8192);
    volatile uint8_t *dst = gpu_visible(8192);
    if (!ring || !src || !dst)
        return;
    HsaQueueResource res;
    memset(&res, 0, sizeof res);
    EXPECT_OK(create(type, engine, ring, &res));
    if (res.QueueId == 0)
        goto out;
    for (int i = 0; i < 4096; i++)
        src[i] = (uint8_t)(i * 7 + 3);
    uint64_t s = (uint64_t)(uintptr_t)src, d = (uint64_t)(uintptr_t)dst;
    uint64_t fence = d + 4096;
    uint32_t n = 0;
    ring[n++] = SDMA_OP_COPY;
    ring[n++] = 4096 - 1;
    ring[n++] = 0;
    ring[n++] = (uint32_t)s;
    ring[n++] = (uint32_t)(s >> 32);
    ring[n++] = (uint32_t)d;
    ring[n++] = (uint32_t)(d >> 32);
    ring[n++] = SDMA_OP_FENCE;
    ring[n++] = (uint32_t)fence;
    ring[n++] = (uint32_t)(fence >> 32);
    ring[n++] = 0x5D3A;
    /* An SDMA queue's pointers count bytes. */
    kick(&res, n * 4);
    CHECK(wait_u32((volatile uint32_t *)(dst + 4096), 0x5D3A), "%s: no fence", what);
    CHECK(memcmp((const void *)dst, src, 4096) == 0, "%s: the copy differs", what);
    EXPECT_OK(hsaKmtDestroyQueue(res.QueueId));
out:
    release(ring, RING);
    release(src, 8192);
    release((void *)dst, 8192);
}

/* AQL: the caller owns the ring and the read and write indices. */
static void aql(void)
{
    uint8_t *ring = gpu_visible(RING);
    uint64_t *pointers = gpu_visible(4096);
    if (!ring || !pointers)
        return;
    /* Every slot starts INVALID (packet type 1). */
    for (int i = 0; i < RING / 64; i++)
        *(uint16_t *)(ring + i * 64) = 1;
    HsaQueueResource res;
    memset(&res, 0, sizeof res);
    res.Queue_read_ptr_aql = &pointers[16];
    res.Queue_write_ptr_aql = &pointers[7];
    EXPECT_OK(create(HSA_QUEUE_COMPUTE_AQL, 0, ring, &res));
    CHECK(res.Queue_read_ptr_aql == &pointers[16] && res.Queue_write_ptr_aql == &pointers[7] &&
              res.QueueDoorBell != 0,
          "AQL queue resource changed the caller's pointers");
    if (res.QueueId == 0)
        goto out;
    /* Two barrier-AND packets without dependencies or signals. */
    for (int i = 0; i < 2; i++) {
        uint8_t *slot = ring + i * 64;
        memset(slot + 4, 0, 60);
        uint16_t header = 3 /* BARRIER_AND */ | (1 << 8) | (2 << 9) | (2 << 11);
        __atomic_store_n((uint16_t *)slot, header, __ATOMIC_RELEASE);
    }
    kick(&res, 2);
    CHECK(wait_u64(res.Queue_read_ptr_aql, 2), "AQL read index %llu, expected 2",
          (unsigned long long)*res.Queue_read_ptr_aql);
    EXPECT_OK(hsaKmtDestroyQueue(res.QueueId));
out:
    release(ring, RING);
    release(pointers, 4096);
}

void test_queues(void)
{
    pm4();
    aql();
    if (g_sys.gpu_props.NumSdmaEngines) {
        sdma(HSA_QUEUE_SDMA, 0, "SDMA");
        sdma(HSA_QUEUE_SDMA_BY_ENG_ID, 0, "SDMA on engine 0");
    }
    if (g_sys.gpu_props.NumSdmaXgmiEngines)
        sdma(HSA_QUEUE_SDMA_XGMI, 0, "XGMI SDMA");
    /* hsaKmtCreateQueue refuses the engine-id type. */
    HsaQueueResource res;
    memset(&res, 0, sizeof res);
    EXPECT(HSAKMT_STATUS_ERROR,
           hsaKmtCreateQueue(g_sys.gpu, HSA_QUEUE_SDMA_BY_ENG_ID, 100, HSA_QUEUE_PRIORITY_NORMAL,
                             NULL, RING, NULL, &res));
}
