/* The C ABI test of hsakmt-rs's libhsakmt, run over the simulator by `cargo xtask capi-test`
 * (linked once against libhsakmt.so.1 and once against libhsakmt.a).
 *
 * Prints the topology the API reports as `system|node|bank|cache|link ... FIELD VALUE` lines on
 * stdout (the driver compares them with `hsakmt info --json`), failures on stderr, and
 * `RESULT passed=N failed=M` last. Exits non-zero when a check failed.
 * Part of hsakmt-rs; licensed MIT OR Apache-2.0. */
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

int g_passed, g_failed;
struct system g_sys;

HsaMemFlags mem_flags(int host_access, int non_paged)
{
    HsaMemFlags f;
    memset(&f, 0, sizeof f);
    f.ui32.HostAccess = host_access;
    f.ui32.NonPaged = non_paged;
    return f;
}

void *alloc_ok(HSAuint32 node, HSAuint64 size, HsaMemFlags flags)
{
    void *p = NULL;
    HSAKMT_STATUS s = hsaKmtAllocMemory(node, size, flags, &p);
    CHECK(s == HSAKMT_STATUS_SUCCESS && p, "alloc of %llu bytes on node %u (flags %#x): %d",
          (unsigned long long)size, node, flags.Value, (int)s);
    return s == HSAKMT_STATUS_SUCCESS ? p : NULL;
}

static void pause_ms(int ms)
{
    struct timespec t = { 0, ms * 1000000L };
    nanosleep(&t, NULL);
}

int wait_u32(volatile uint32_t *p, uint32_t value)
{
    for (int i = 0; i < 2000; i++) {
        if (__atomic_load_n(p, __ATOMIC_ACQUIRE) == value)
            return 1;
        pause_ms(1);
    }
    return 0;
}

int wait_u64(volatile uint64_t *p, uint64_t value)
{
    for (int i = 0; i < 2000; i++) {
        if (__atomic_load_n(p, __ATOMIC_ACQUIRE) == value)
            return 1;
        pause_ms(1);
    }
    return 0;
}

HsakmtRsSimAccounting accounting(void)
{
    HsakmtRsSimAccounting a;
    memset(&a, 0, sizeof a);
    EXPECT_OK(hsakmt_rs_sim_accounting(&a));
    return a;
}

/* Equal but for the scratch backings: the kernel keeps a GPU's scratch backing address for the
 * rest of the process, as amdkfd does. */
int same_accounting(const HsakmtRsSimAccounting *a, const HsakmtRsSimAccounting *b)
{
    HsakmtRsSimAccounting x = *a, y = *b;
    x.scratch_backings = y.scratch_backings = 0;
    return memcmp(&x, &y, sizeof x) == 0;
}

static void print_accounting(const char *what, const HsakmtRsSimAccounting *a)
{
    fprintf(stderr,
            "  %s: open %llu buffers %llu mappings %llu vram %llu system %llu pinned %llu "
            "dmabufs %llu svm %llu scratch %llu queues %llu events %llu waiters %llu\n",
            what, (unsigned long long)a->open, (unsigned long long)a->buffers,
            (unsigned long long)a->mappings, (unsigned long long)a->vram_bytes,
            (unsigned long long)a->system_bytes, (unsigned long long)a->pinned_buffers,
            (unsigned long long)a->dmabufs, (unsigned long long)a->svm_ranges,
            (unsigned long long)a->scratch_backings, (unsigned long long)a->queues,
            (unsigned long long)a->events, (unsigned long long)a->event_waiters);
}

/* Before the first open every call answers "not opened". */
static void test_closed_library(const char *when)
{
    HsaVersionInfo v;
    HsaNodeProperties p;
    void *mem = NULL;
    HsaEventDescriptor d;
    HsaEvent *e = NULL;
    memset(&d, 0, sizeof d);
    EXPECT(HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED, hsaKmtGetVersion(&v));
    EXPECT(HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED, hsaKmtCloseKFD());
    EXPECT(HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED, hsaKmtGetNodeProperties(0, &p));
    EXPECT(HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED,
           hsaKmtAllocMemory(0, 4096, mem_flags(1, 0), &mem));
    EXPECT(HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED, hsaKmtCreateEvent(&d, false, false, &e));
    EXPECT(HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED, hsaKmtDestroyQueue(1));
    (void)when;
}

/* Open and close are reference counted. */
static void test_open_close(void)
{
    HsaVersionInfo v;
    EXPECT_OK(hsaKmtOpenKFD());
    EXPECT(HSAKMT_STATUS_KERNEL_ALREADY_OPENED, hsaKmtOpenKFD());
    EXPECT_OK(hsaKmtCloseKFD());
    EXPECT_OK(hsaKmtGetVersion(&v));
    CHECK(v.KernelInterfaceMajorVersion == 1 && v.KernelInterfaceMinorVersion >= 14,
          "version %u.%u", v.KernelInterfaceMajorVersion, v.KernelInterfaceMinorVersion);
}

/* A forked child may not use the parent's open until it opens itself. */
static void test_fork(void)
{
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        HsaVersionInfo v;
        int bad = 0;
        bad |= hsaKmtGetVersion(&v) != HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
        bad |= hsaKmtGetNodeProperties(0, &g_sys.gpu_props) !=
               HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
        bad |= hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS;
        bad |= hsaKmtGetVersion(&v) != HSAKMT_STATUS_SUCCESS;
        bad |= hsaKmtCloseKFD() != HSAKMT_STATUS_SUCCESS;
        _exit(bad ? 3 : 0);
    }
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child, "fork/wait");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the forked child saw wrong answers (status %#x)", status);
    /* The parent is unaffected. */
    HsaVersionInfo v;
    EXPECT_OK(hsaKmtGetVersion(&v));
}

/* Learns the nodes the tests use. */
static void survey(void)
{
    HsaSystemProperties sp;
    EXPECT_OK(hsaKmtAcquireSystemProperties(&sp));
    g_sys.nodes = sp.NumNodes;
    g_sys.cpu = INVALID_NODEID;
    g_sys.gpu = INVALID_NODEID;
    g_sys.svm_api = 1;
    g_sys.dgpu = 0;
    for (HSAuint32 n = 0; n < sp.NumNodes; n++) {
        HsaNodeProperties p;
        EXPECT_OK(hsaKmtGetNodeProperties(n, &p));
        if (p.NumFComputeCores == 0) {
            if (g_sys.cpu == INVALID_NODEID)
                g_sys.cpu = n;
            continue;
        }
        if (p.KFDGpuID == 0) {
            /* A GPU the kernel does not drive: a topology capture without gpu_id files. */
            g_sys.topology_only = 1;
            continue;
        }
        if (p.NumCPUCores == 0)
            g_sys.dgpu = 1;
        if (!p.Capability.ui32.SVMAPISupported)
            g_sys.svm_api = 0;
        if (g_sys.gpu == INVALID_NODEID) {
            g_sys.gpu = n;
            g_sys.gpu_props = p;
        }
    }
    if (g_sys.gpu == INVALID_NODEID)
        g_sys.svm_api = 0;
    else
        g_sys.topology_only = 0;
}

/* `--expect-open-failure`: the environment names no usable device; the open must fail the
 * way upstream's does without /dev/kfd, and every call after it must answer "not opened". */
static int expect_open_failure(void)
{
    EXPECT(HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED, hsaKmtOpenKFD());
    test_closed_library("after a failed open");
    printf("RESULT passed=%d failed=%d\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 2 && strcmp(argv[1], "--expect-open-failure") == 0)
        return expect_open_failure();
    test_closed_library("before the first open");
    test_open_close();
    survey();
    test_topology();
    test_unsupported();
    test_debugger();
    test_counters();
    test_smi();

    if (g_sys.topology_only)
        printf("note: GPU nodes without gpu_id (a topology capture): only topology, bad input "
               "and open/close are tested\n");

    /* Warm up what lives for the whole open (the event page, doorbell pages), then take the
     * baseline every test must return to. */
    if (g_sys.gpu != INVALID_NODEID)
        test_queues();
    if (!g_sys.topology_only)
        test_events();
    HsakmtRsSimAccounting base = accounting();

    if (g_sys.gpu != INVALID_NODEID) {
        test_memory();
        test_register();
        test_queues();
        test_consumers();
    }
    if (!g_sys.topology_only) {
        test_events();
        test_threads();
    }
    test_bad_input();
    test_fork();

    HsakmtRsSimAccounting after = accounting();
    CHECK(same_accounting(&base, &after), "the simulated kernel does not hold what it held "
                                          "before the tests (see below)");
    if (!same_accounting(&base, &after)) {
        print_accounting("before", &base);
        print_accounting("after", &after);
    }

    /* Released, the next acquire reads the tree again: the same nodes (nothing changed). */
    EXPECT_OK(hsaKmtReleaseSystemProperties());
    HsaSystemProperties again;
    EXPECT_OK(hsaKmtAcquireSystemProperties(&again));
    CHECK(again.NumNodes == g_sys.nodes, "re-acquired %u nodes, not %u", again.NumNodes,
          g_sys.nodes);
    if (g_sys.gpu != INVALID_NODEID) {
        HsaNodeProperties p;
        EXPECT_OK(hsaKmtGetNodeProperties(g_sys.gpu, &p));
        CHECK(p.KFDGpuID == g_sys.gpu_props.KFDGpuID, "node %u is gpu_id %u after re-acquiring",
              g_sys.gpu, p.KFDGpuID);
    }
    EXPECT_OK(hsaKmtReleaseSystemProperties());
    EXPECT_OK(hsaKmtCloseKFD());
    EXPECT(HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED, hsaKmtReleaseSystemProperties());
    HsakmtRsSimAccounting closed = accounting();
    CHECK(closed.open == 0 && closed.buffers == 0 && closed.mappings == 0 &&
              closed.queues == 0 && closed.events == 0 && closed.dmabufs == 0,
          "the last close left kernel objects behind");
    if (closed.buffers || closed.queues || closed.events)
        print_accounting("closed", &closed);
    test_closed_library("after the last close");

    /* The library opens again after a full close. */
    EXPECT_OK(hsaKmtOpenKFD());
    HsaSystemProperties sp;
    EXPECT_OK(hsaKmtAcquireSystemProperties(&sp));
    CHECK(sp.NumNodes == g_sys.nodes, "reopen sees %u nodes, not %u", sp.NumNodes, g_sys.nodes);
    EXPECT_OK(hsaKmtCloseKFD());

    printf("RESULT passed=%d failed=%d\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
