/* The calls the library answers without the facade's help, the ones without a kernel
 * interface, tile configuration, clocks, SVM attributes, and several threads at once.
 * Part of hsakmt-rs; licensed MIT OR Apache-2.0. */
#include <pthread.h>
#include <stdlib.h>

#include "check.h"

void test_unsupported(void)
{
    bool model = true;
    EXPECT_OK(hsaKmtModelEnabled(&model));
    CHECK(!model, "hsaKmtModelEnabled says true");
    EXPECT(HSAKMT_STATUS_NOT_SUPPORTED, hsaKmtPcSamplingSupport());
    EXPECT(HSAKMT_STATUS_NOT_IMPLEMENTED, hsaKmtProcessVMRead(0, NULL, 0, NULL, 0, NULL));
    EXPECT(HSAKMT_STATUS_NOT_IMPLEMENTED, hsaKmtProcessVMWrite(0, NULL, 0, NULL, 0, NULL));
    EXPECT(HSAKMT_STATUS_NOT_IMPLEMENTED, hsaKmtMapGraphicHandle(0, 0, 0, 0, 0, NULL));
    EXPECT(HSAKMT_STATUS_NOT_IMPLEMENTED, hsaKmtReportQueue(0, NULL));
    EXPECT(HSAKMT_STATUS_NOT_SUPPORTED, hsaKmtReplaceAsanHeaderPage(NULL));
    HsaSharedMemoryHandle share;
    EXPECT(HSAKMT_STATUS_ERROR, hsaKmtShareMemory(&share, 4096, &share));
    if (g_sys.gpu == INVALID_NODEID)
        return;
    EXPECT(HSAKMT_STATUS_NOT_IMPLEMENTED, hsaKmtSetMemoryPolicy(g_sys.gpu, 0, 0, NULL, 0));
    EXPECT(HSAKMT_STATUS_NOT_SUPPORTED, hsaKmtSPMAcquire(g_sys.gpu));
    /* The simulator answers GET_TILE_CONFIG from its profile, as amdkfd does: the GPU's tiling
     * registers (gfx9 has no tile-mode tables); a CPU node's gpu_id 0 is refused. */
    HsaGpuTileConfig tiles;
    HSAuint32 modes[32];
    memset(&tiles, 0, sizeof tiles);
    tiles.TileConfig = modes;
    tiles.NumTileConfigs = 32;
    EXPECT_OK(hsaKmtGetTileConfig(g_sys.gpu, &tiles));
    CHECK(tiles.GbAddrConfig != 0 && tiles.NumTileConfigs <= 32, "GB_ADDR_CONFIG %#x, %u modes",
          tiles.GbAddrConfig, tiles.NumTileConfigs);
    EXPECT(HSAKMT_STATUS_ERROR, hsaKmtGetTileConfig(g_sys.cpu, &tiles));

    HsaClockCounters c1, c2;
    EXPECT_OK(hsaKmtGetClockCounters(g_sys.gpu, &c1));
    EXPECT_OK(hsaKmtGetClockCounters(g_sys.gpu, &c2));
    CHECK(c1.SystemClockFrequencyHz != 0 && c2.GPUClockCounter >= c1.GPUClockCounter &&
              c2.CPUClockCounter > c1.CPUClockCounter,
          "clock counters do not advance");
    HSAint32 xnack = -1;
    EXPECT_OK(hsaKmtGetXNACKMode(&xnack));
    CHECK(xnack == 0 || xnack == 1, "XNACK mode %d", xnack);
    /* SVM attributes of ordinary memory, with node ids. */
    void *svm = NULL;
    CHECK(posix_memalign(&svm, 4096, 4 * 4096) == 0, "posix_memalign");
    if (svm && g_sys.svm_api) {
        HSA_SVM_ATTRIBUTE set[2] = { { HSA_SVM_ATTR_PREFERRED_LOC, g_sys.gpu },
                                     { HSA_SVM_ATTR_SET_FLAGS, HSA_SVM_FLAG_COHERENT } };
        EXPECT_OK(hsaKmtSVMSetAttr(svm, 4 * 4096, 2, set));
        HSA_SVM_ATTRIBUTE get[1] = { { HSA_SVM_ATTR_PREFERRED_LOC, 0 } };
        EXPECT_OK(hsaKmtSVMGetAttr(svm, 4 * 4096, 1, get));
        CHECK(get[0].value == g_sys.gpu, "preferred location %u, set %u", get[0].value, g_sys.gpu);
        HSA_SVM_ATTRIBUTE cpu[1] = { { HSA_SVM_ATTR_ACCESS, g_sys.cpu } };
        EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT, hsaKmtSVMSetAttr(svm, 4 * 4096, 1, cpu));
        EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtSVMSetAttr((char *)svm + 1, 4096, 1, set));
    }
    free(svm);
}

struct worker {
    int failures;
};

/* Allocations, events and queries from several threads at once. */
static void *work(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < 50; i++) {
        HsaEventDescriptor d;
        memset(&d, 0, sizeof d);
        HsaEvent *e = NULL;
        w->failures += hsaKmtCreateEvent(&d, false, false, &e) != HSAKMT_STATUS_SUCCESS;
        if (e) {
            w->failures += hsaKmtSetEvent(e) != HSAKMT_STATUS_SUCCESS;
            w->failures += hsaKmtWaitOnEvent(e, 1000) != HSAKMT_STATUS_SUCCESS;
            w->failures += hsaKmtDestroyEvent(e) != HSAKMT_STATUS_SUCCESS;
        }
        if (g_sys.gpu == INVALID_NODEID)
            continue;
        void *p = NULL;
        HSAuint32 node = i % 2 ? g_sys.gpu : g_sys.cpu;
        w->failures += hsaKmtAllocMemory(node, 1 << 16, mem_flags(1, 1), &p) != HSAKMT_STATUS_SUCCESS;
        if (p) {
            ((volatile char *)p)[100] = 1;
            w->failures += hsaKmtMapMemoryToGPU(p, 1 << 16, NULL) != HSAKMT_STATUS_SUCCESS;
            HsaPointerInfo info;
            w->failures += hsaKmtQueryPointerInfo(p, &info) != HSAKMT_STATUS_SUCCESS;
            w->failures += hsaKmtFreeMemory(p, 1 << 16) != HSAKMT_STATUS_SUCCESS;
        }
    }
    return NULL;
}

void test_threads(void)
{
    enum { THREADS = 4 };
    pthread_t t[THREADS];
    struct worker w[THREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, work, &w[i]) == 0, "pthread_create");
    int failures = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        failures += w[i].failures;
    }
    CHECK(failures == 0, "%d calls failed in the threads", failures);
}
