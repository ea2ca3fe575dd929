/*
 * hsa_queue_copy_test: the HSA check of hsakmt-rs issue 12 (built against ROCr, outside CI).
 *
 *   1. hsa_init, find a GPU agent (and the CPU agent)
 *   2. create an AQL queue on the GPU, submit a barrier-AND packet, wait for its
 *      completion signal
 *   3. hsa_amd_memory_async_copy host -> device -> host, verify the data
 *
 * Every step prints "ok"/"FAIL"; the last line is "N passed, N failed".
 * Exit status: 0 all passed, 1 a check failed, 2 hsa_init failed.
 * Environment: HSA_TEST_TIMEOUT_MS (default 10000) bounds every wait;
 *              HSA_TEST_COPY_BYTES (default 1 MiB) is the copy size;
 *              HSA_TEST_GPU_INDEX (default 0) picks among GPU agents.
 */
#define _POSIX_C_SOURCE 200809L
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int passed, failed;

static void check(int ok, const char *what, const char *detail) {
    if (ok) {
        passed++;
        printf("ok   %s\n", what);
    } else {
        failed++;
        printf("FAIL %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    }
    fflush(stdout);
}

static const char *status_str(hsa_status_t s) {
    const char *msg = NULL;
    if (hsa_status_string(s, &msg) != HSA_STATUS_SUCCESS || msg == NULL)
        return "unknown status";
    return msg;
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *v = getenv(name);
    if (v == NULL || *v == '\0')
        return dflt;
    char *end = NULL;
    unsigned long long x = strtoull(v, &end, 0);
    return (end && *end == '\0') ? (uint64_t)x : dflt;
}

/* Waits until the signal reads 0 or the timeout passes; returns the last value read.
 * The wait API's timeout is only a hint, so the loop bounds it itself. */
static hsa_signal_value_t wait_zero(hsa_signal_t sig, uint64_t timeout_ms) {
    uint64_t start = now_ms();
    hsa_signal_value_t v = hsa_signal_load_scacquire(sig);
    while (v != 0 && now_ms() - start < timeout_ms) {
        v = hsa_signal_wait_scacquire(sig, HSA_SIGNAL_CONDITION_EQ, 0,
                                      1000000 /* ~1 ms hint, in ticks */, HSA_WAIT_STATE_ACTIVE);
    }
    return v;
}

struct agents {
    hsa_agent_t cpu, gpu;
    int have_cpu, gpus_seen;
    uint64_t gpu_index;
};

static hsa_status_t find_agents(hsa_agent_t a, void *data) {
    struct agents *ag = data;
    hsa_device_type_t t;
    if (hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t) != HSA_STATUS_SUCCESS)
        return HSA_STATUS_SUCCESS;
    if (t == HSA_DEVICE_TYPE_CPU && !ag->have_cpu) {
        ag->cpu = a;
        ag->have_cpu = 1;
    } else if (t == HSA_DEVICE_TYPE_GPU) {
        if ((uint64_t)ag->gpus_seen == ag->gpu_index)
            ag->gpu = a;
        ag->gpus_seen++;
    }
    return HSA_STATUS_SUCCESS;
}

struct pool_pick {
    hsa_amd_memory_pool_t pool;
    int found;
    int want_coarse; /* 1: device memory (coarse-grained); 0: host memory (any global) */
};

static hsa_status_t find_pool(hsa_amd_memory_pool_t p, void *data) {
    struct pool_pick *pk = data;
    hsa_amd_segment_t seg;
    bool alloc = false;
    uint32_t flags = 0;
    if (hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg) != HSA_STATUS_SUCCESS ||
        seg != HSA_AMD_SEGMENT_GLOBAL)
        return HSA_STATUS_SUCCESS;
    if (hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc) !=
            HSA_STATUS_SUCCESS || !alloc)
        return HSA_STATUS_SUCCESS;
    hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
    if (pk->want_coarse && !(flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED))
        return HSA_STATUS_SUCCESS;
    if (!pk->found) {
        pk->pool = p;
        pk->found = 1;
    }
    return HSA_STATUS_SUCCESS;
}

static int barrier_and(hsa_agent_t gpu, uint64_t timeout_ms) {
    char detail[160];
    hsa_queue_t *q = NULL;
    uint32_t qmax = 0;
    hsa_agent_get_info(gpu, HSA_AGENT_INFO_QUEUE_MAX_SIZE, &qmax);
    uint32_t qsize = qmax < 64 ? qmax : 64;
    hsa_status_t s = hsa_queue_create(gpu, qsize, HSA_QUEUE_TYPE_SINGLE, NULL, NULL, UINT32_MAX,
                                      UINT32_MAX, &q);
    snprintf(detail, sizeof detail, "%s (size %" PRIu32 ")", status_str(s), qsize);
    check(s == HSA_STATUS_SUCCESS, "hsa_queue_create", detail);
    if (s != HSA_STATUS_SUCCESS)
        return -1;

    hsa_signal_t done;
    s = hsa_signal_create(1, 0, NULL, &done);
    check(s == HSA_STATUS_SUCCESS, "hsa_signal_create (barrier completion)", status_str(s));
    if (s != HSA_STATUS_SUCCESS) {
        hsa_queue_destroy(q);
        return -1;
    }

    uint64_t idx = hsa_queue_add_write_index_screlease(q, 1);
    hsa_barrier_and_packet_t *ring = (hsa_barrier_and_packet_t *)q->base_address;
    hsa_barrier_and_packet_t *pkt = &ring[idx % q->size];
    memset((char *)pkt + sizeof(uint32_t), 0, sizeof(*pkt) - sizeof(uint32_t));
    pkt->completion_signal = done;
    uint16_t header = (uint16_t)((HSA_PACKET_TYPE_BARRIER_AND << HSA_PACKET_HEADER_TYPE) |
                                 (1 << HSA_PACKET_HEADER_BARRIER) |
                                 (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                                 (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
    /* header and reserved0 are published together, last */
    __atomic_store_n((uint32_t *)pkt, (uint32_t)header, __ATOMIC_RELEASE);
    hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)idx);

    hsa_signal_value_t v = wait_zero(done, timeout_ms);
    snprintf(detail, sizeof detail, "completion signal still %" PRId64 " after %" PRIu64 " ms; read index %" PRIu64,
             (int64_t)v, timeout_ms, hsa_queue_load_read_index_scacquire(q));
    check(v == 0, "barrier-AND packet completed", detail);

    hsa_signal_destroy(done);
    s = hsa_queue_destroy(q);
    check(s == HSA_STATUS_SUCCESS, "hsa_queue_destroy", status_str(s));
    return v == 0 ? 0 : -1;
}

static int async_copy(struct agents *ag, uint64_t bytes, uint64_t timeout_ms) {
    char detail[200];
    struct pool_pick host = {.want_coarse = 0}, dev = {.want_coarse = 1};
    hsa_amd_agent_iterate_memory_pools(ag->cpu, find_pool, &host);
    hsa_amd_agent_iterate_memory_pools(ag->gpu, find_pool, &dev);
    check(host.found, "CPU agent has an allocatable global pool", NULL);
    check(dev.found, "GPU agent has an allocatable coarse-grained global pool", NULL);
    if (!host.found || !dev.found)
        return -1;

    uint8_t *src = NULL, *dst = NULL;
    void *vram = NULL;
    hsa_status_t s1 = hsa_amd_memory_pool_allocate(host.pool, bytes, 0, (void **)&src);
    hsa_status_t s2 = hsa_amd_memory_pool_allocate(host.pool, bytes, 0, (void **)&dst);
    hsa_status_t s3 = hsa_amd_memory_pool_allocate(dev.pool, bytes, 0, &vram);
    snprintf(detail, sizeof detail, "host %s / host %s / device %s", status_str(s1), status_str(s2),
             status_str(s3));
    check(s1 == HSA_STATUS_SUCCESS && s2 == HSA_STATUS_SUCCESS && s3 == HSA_STATUS_SUCCESS,
          "allocate 2 host buffers + 1 device buffer", detail);
    int rc = -1;
    hsa_signal_t sig = {0};
    if (s1 != HSA_STATUS_SUCCESS || s2 != HSA_STATUS_SUCCESS || s3 != HSA_STATUS_SUCCESS)
        goto out;

    /* the GPU (its copy engine) must be allowed to reach the host buffers */
    hsa_agent_t both[2] = {ag->gpu, ag->cpu};
    s1 = hsa_amd_agents_allow_access(2, both, NULL, src);
    s2 = hsa_amd_agents_allow_access(2, both, NULL, dst);
    s3 = hsa_amd_agents_allow_access(2, both, NULL, vram);
    snprintf(detail, sizeof detail, "%s / %s / %s", status_str(s1), status_str(s2), status_str(s3));
    check(s1 == HSA_STATUS_SUCCESS && s2 == HSA_STATUS_SUCCESS && s3 == HSA_STATUS_SUCCESS,
          "hsa_amd_agents_allow_access", detail);

    for (uint64_t i = 0; i < bytes; i++) {
        src[i] = (uint8_t)((i * 131u + 7u) ^ (i >> 8));
        dst[i] = 0xA5;
    }

    hsa_status_t s = hsa_signal_create(1, 0, NULL, &sig);
    check(s == HSA_STATUS_SUCCESS, "hsa_signal_create (copy completion)", status_str(s));
    if (s != HSA_STATUS_SUCCESS)
        goto out;

    s = hsa_amd_memory_async_copy(vram, ag->gpu, src, ag->cpu, bytes, 0, NULL, sig);
    check(s == HSA_STATUS_SUCCESS, "hsa_amd_memory_async_copy host->device submitted", status_str(s));
    if (s != HSA_STATUS_SUCCESS)
        goto out;
    hsa_signal_value_t v = wait_zero(sig, timeout_ms);
    snprintf(detail, sizeof detail, "signal still %" PRId64 " after %" PRIu64 " ms", (int64_t)v, timeout_ms);
    check(v == 0, "host->device copy completed", detail);
    if (v != 0)
        goto out;

    hsa_signal_store_screlease(sig, 1);
    s = hsa_amd_memory_async_copy(dst, ag->cpu, vram, ag->gpu, bytes, 0, NULL, sig);
    check(s == HSA_STATUS_SUCCESS, "hsa_amd_memory_async_copy device->host submitted", status_str(s));
    if (s != HSA_STATUS_SUCCESS)
        goto out;
    v = wait_zero(sig, timeout_ms);
    snprintf(detail, sizeof detail, "signal still %" PRId64 " after %" PRIu64 " ms", (int64_t)v, timeout_ms);
    check(v == 0, "device->host copy completed", detail);
    if (v != 0)
        goto out;

    uint64_t first_bad = bytes;
    for (uint64_t i = 0; i < bytes; i++)
        if (dst[i] != src[i]) {
            first_bad = i;
            break;
        }
    if (first_bad < bytes)
        snprintf(detail, sizeof detail, "first difference at byte %" PRIu64 ": got 0x%02x want 0x%02x",
                 first_bad, dst[first_bad], src[first_bad]);
    else
        snprintf(detail, sizeof detail, "%" PRIu64 " bytes", bytes);
    check(first_bad == bytes, "host->device->host data verified", detail);
    rc = first_bad == bytes ? 0 : -1;

out:
    if (sig.handle)
        hsa_signal_destroy(sig);
    if (src)
        hsa_amd_memory_pool_free(src);
    if (dst)
        hsa_amd_memory_pool_free(dst);
    if (vram)
        hsa_amd_memory_pool_free(vram);
    return rc;
}

int main(void) {
    uint64_t timeout_ms = env_u64("HSA_TEST_TIMEOUT_MS", 10000);
    uint64_t bytes = env_u64("HSA_TEST_COPY_BYTES", 1u << 20);
    setvbuf(stdout, NULL, _IOLBF, 0);

    hsa_status_t s = hsa_init();
    check(s == HSA_STATUS_SUCCESS, "hsa_init", status_str(s));
    if (s != HSA_STATUS_SUCCESS) {
        printf("%d passed, %d failed\n", passed, failed);
        return 2;
    }

    struct agents ag = {.gpu_index = env_u64("HSA_TEST_GPU_INDEX", 0)};
    hsa_iterate_agents(find_agents, &ag);
    char detail[160];
    snprintf(detail, sizeof detail, "%d GPU agent(s), wanted index %" PRIu64, ag.gpus_seen, ag.gpu_index);
    int have_gpu = (uint64_t)ag.gpus_seen > ag.gpu_index;
    check(ag.have_cpu, "found a CPU agent", NULL);
    check(have_gpu, "found the GPU agent", detail);
    if (have_gpu) {
        char name[64] = {0};
        uint32_t cus = 0, wave = 0;
        hsa_agent_get_info(ag.gpu, HSA_AGENT_INFO_NAME, name);
        hsa_agent_get_info(ag.gpu, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT, &cus);
        hsa_agent_get_info(ag.gpu, HSA_AGENT_INFO_WAVEFRONT_SIZE, &wave);
        printf("     GPU agent: %s, %" PRIu32 " CUs, wavefront %" PRIu32 "\n", name, cus, wave);
        barrier_and(ag.gpu, timeout_ms);
        if (ag.have_cpu)
            async_copy(&ag, bytes, timeout_ms);
    }

    s = hsa_shut_down();
    check(s == HSA_STATUS_SUCCESS, "hsa_shut_down", status_str(s));
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
