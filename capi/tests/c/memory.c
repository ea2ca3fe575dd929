/* Memory: every kind of allocation, mapped, unmapped, queried and freed; alignment, fixed
 * addresses, user data, dma-buf export and import.
 * Part of hsakmt-rs; licensed MIT OR Apache-2.0. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

/* One kind of memory: allocate, touch from the CPU when it is host-visible, map, query,
 * unmap, free. */
static void round_trip(const char *what, HSAuint32 node, HsaMemFlags f, HSAuint64 size)
{
    void *p = alloc_ok(node, size, f);
    if (!p)
        return;
    if (f.ui32.HostAccess) {
        volatile uint32_t *w = p;
        w[0] = 0x600DF00D;
        w[size / 4 - 1] = 0xC0FFEE;
        CHECK(w[0] == 0x600DF00D && w[size / 4 - 1] == 0xC0FFEE, "%s: CPU access", what);
    }
    HsaPointerInfo info;
    EXPECT_OK(hsaKmtQueryPointerInfo(p, &info));
    CHECK(info.Type == HSA_POINTER_ALLOCATED, "%s: type %u", what, info.Type);
    CHECK(info.GPUAddress == (HSAuint64)(uintptr_t)p && info.CPUAddress == p,
          "%s: addresses %#llx / %p for %p", what, (unsigned long long)info.GPUAddress,
          info.CPUAddress, p);
    CHECK(info.SizeInBytes >= size && info.MemFlags.Value == f.Value,
          "%s: size %llu flags %#x", what, (unsigned long long)info.SizeInBytes,
          info.MemFlags.Value);
    CHECK(info.NMappedNodes == 0, "%s: mapped on %u nodes before mapping", what,
          info.NMappedNodes);

    /* An interior pointer resolves to the object. */
    HsaPointerInfo inner;
    EXPECT_OK(hsaKmtQueryPointerInfo((char *)p + size / 2, &inner));
    CHECK(inner.GPUAddress == info.GPUAddress, "%s: interior pointer", what);

    HSAuint64 alt = 1;
    EXPECT_OK(hsaKmtMapMemoryToGPU(p, size, &alt));
    CHECK(alt == 0, "%s: alternate VA %llu", what, (unsigned long long)alt);
    EXPECT_OK(hsaKmtQueryPointerInfo(p, &info));
    CHECK(info.NMappedNodes >= 1 && info.MappedNodes, "%s: mapped on %u nodes", what,
          info.NMappedNodes);
    int on_gpu = 0;
    for (HSAuint32 i = 0; i < info.NMappedNodes; i++)
        on_gpu |= info.MappedNodes[i] == g_sys.gpu;
    CHECK(on_gpu, "%s: not mapped on GPU node %u", what, g_sys.gpu);
    EXPECT_OK(hsaKmtUnmapMemoryToGPU(p));
    EXPECT_OK(hsaKmtQueryPointerInfo(p, &info));
    CHECK(info.NMappedNodes == 0, "%s: still mapped on %u nodes", what, info.NMappedNodes);

    /* Mapped on exactly the GPU node given. */
    HsaMemMapFlags mf;
    memset(&mf, 0, sizeof mf);
    HSAuint32 nodes[1] = { g_sys.gpu };
    EXPECT_OK(hsaKmtMapMemoryToGPUNodes(p, size, NULL, mf, 1, nodes));
    EXPECT_OK(hsaKmtQueryPointerInfo(p, &info));
    CHECK(info.NMappedNodes == 1 && info.MappedNodes && info.MappedNodes[0] == g_sys.gpu,
          "%s: mapped on %u nodes after mapping on one", what, info.NMappedNodes);
    /* Freeing mapped memory unmaps it first. */
    EXPECT_OK(hsaKmtFreeMemory(p, size));
    EXPECT(HSAKMT_STATUS_ERROR, hsaKmtQueryPointerInfo(p, &info));
    CHECK(info.Type == HSA_POINTER_UNKNOWN, "%s: freed memory has type %u", what, info.Type);
}

/* Address-only and handle-only memory cannot be mapped. */
static void unmappable(const char *what, HsaMemFlags f)
{
    void *p = alloc_ok(g_sys.gpu, 1 << 16, f);
    if (!p)
        return;
    HsaPointerInfo info;
    if (f.ui32.OnlyAddress) {
        EXPECT_OK(hsaKmtQueryPointerInfo(p, &info));
        CHECK(info.Type == HSA_POINTER_RESERVED_ADDR, "%s: type %u", what, info.Type);
    }
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtMapMemoryToGPU(p, 1 << 16, NULL));
    HSAuint32 nodes[1] = { g_sys.gpu };
    HsaMemMapFlags mf;
    memset(&mf, 0, sizeof mf);
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtMapMemoryToGPUNodes(p, 1 << 16, NULL, mf, 1, nodes));
    EXPECT_OK(hsaKmtFreeMemory(p, 1 << 16));
}

static void alignment_and_fixed(void)
{
    HsaMemFlags f = mem_flags(1, 1);
    void *p = NULL;
    EXPECT_OK(hsaKmtAllocMemoryAlign(g_sys.gpu, 4096, 1 << 21, f, &p));
    CHECK(((uintptr_t)p & ((1 << 21) - 1)) == 0, "2 MiB-aligned allocation at %p", p);
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtAllocMemoryAlign(g_sys.gpu, 4096, 3000, f, &p));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtAllocMemoryAlign(g_sys.gpu, 4096, 1024, f, &p));
    void *q = p;
    EXPECT_OK(hsaKmtFreeMemory(q, 4096));

    /* The freed address again, asked for explicitly. */
    HsaMemFlags fixed = f;
    fixed.ui32.FixedAddress = 1;
    void *at = q;
    EXPECT_OK(hsaKmtAllocMemory(g_sys.gpu, 4096, fixed, &at));
    CHECK(at == q, "fixed-address allocation at %p, asked for %p", at, q);
    /* The same address while it is taken. */
    void *again = q;
    HSAKMT_STATUS s = hsaKmtAllocMemory(g_sys.gpu, 4096, fixed, &again);
    CHECK(s != HSAKMT_STATUS_SUCCESS, "a second fixed allocation at %p succeeded", q);
    EXPECT_OK(hsaKmtFreeMemory(at, 4096));
    void *null_fixed = NULL;
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtAllocMemory(g_sys.gpu, 4096, fixed, &null_fixed));

    /* Sizes must be multiples of the flags' page size. */
    HsaMemFlags big = f;
    big.ui32.PageSize = HSA_PAGE_SIZE_2MB;
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtAllocMemory(g_sys.gpu, 4096, big, &p));
    EXPECT_OK(hsaKmtAllocMemory(g_sys.gpu, 2 << 20, big, &p));
    EXPECT_OK(hsaKmtFreeMemory(p, 2 << 20));
    /* Incompatible coherence flags. */
    HsaMemFlags bad = f;
    bad.ui32.CoarseGrain = 1;
    bad.ui32.ExtendedCoherent = 1;
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtAllocMemory(g_sys.gpu, 4096, bad, &p));
    /* Scratch takes no alignment. */
    HsaMemFlags scratch;
    memset(&scratch, 0, sizeof scratch);
    scratch.ui32.Scratch = 1;
    EXPECT(HSAKMT_STATUS_NOT_IMPLEMENTED, hsaKmtAllocMemoryAlign(g_sys.gpu, 1 << 16, 1 << 16, scratch, &p));
}

static void user_data_and_dmabuf(void)
{
    HsaMemFlags f = mem_flags(1, 1);
    void *p = alloc_ok(g_sys.gpu, 1 << 16, f);
    if (!p)
        return;
    int token;
    EXPECT_OK(hsaKmtSetMemoryUserData(p, &token));
    HsaPointerInfo info;
    EXPECT_OK(hsaKmtQueryPointerInfo(p, &info));
    CHECK(info.UserData == &token, "user data %p, set %p", info.UserData, (void *)&token);
    EXPECT(HSAKMT_STATUS_ERROR, hsaKmtSetMemoryUserData((char *)p + 4096 * 100, &token));

    int fd = -1;
    HSAuint64 offset = 1;
    EXPECT_OK(hsaKmtExportDMABufHandle((char *)p + 4096, 4096, &fd, &offset));
    CHECK(fd >= 0 && offset == 4096, "dma-buf fd %d offset %llu", fd, (unsigned long long)offset);
    int fd2 = -1;
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtExportDMABufHandle(p, 2 << 16, &fd2, &offset));
    if (fd >= 0) {
        HsaGraphicsResourceInfo gi;
        HSAuint32 nodes[1] = { g_sys.gpu };
        EXPECT_OK(hsaKmtRegisterGraphicsHandleToNodes((HSAuint64)fd, &gi, 1, nodes));
        CHECK(gi.SizeInBytes == 1 << 16 && gi.MemoryAddress && gi.NodeId == g_sys.gpu,
              "import: size %llu at %p on node %u", (unsigned long long)gi.SizeInBytes,
              gi.MemoryAddress, gi.NodeId);
        EXPECT_OK(hsaKmtQueryPointerInfo(gi.MemoryAddress, &info));
        CHECK(info.Type == HSA_POINTER_REGISTERED_GRAPHICS, "imported type %u", info.Type);
        EXPECT_OK(hsaKmtMapMemoryToGPU(gi.MemoryAddress, gi.SizeInBytes, NULL));
        EXPECT_OK(hsaKmtUnmapMemoryToGPU(gi.MemoryAddress));
        EXPECT_OK(hsaKmtDeregisterMemory(gi.MemoryAddress));
        EXPECT_OK(hsakmt_rs_close_dmabuf(fd));
    }
    /* A descriptor of the process, as the kernel's: close(2) ends the dma-buf too (kfdtest's
     * ExportDMABufTest); the accounting after the last close finds none left. */
    int fd3 = -1;
    EXPECT_OK(hsaKmtExportDMABufHandle(p, 4096, &fd3, &offset));
    CHECK(fd3 >= 0 && fcntl(fd3, F_GETFD) == FD_CLOEXEC, "dma-buf fd %d is close-on-exec", fd3);
    CHECK(fd3 >= 0 && close(fd3) == 0, "close(2) of dma-buf fd %d", fd3);
    EXPECT_OK(hsaKmtFreeMemory(p, 1 << 16));
}

void test_memory(void)
{
    HsaMemFlags f;
    round_trip("paged system memory", g_sys.cpu, mem_flags(1, 0), 1 << 16);
    round_trip("GTT", g_sys.cpu, mem_flags(1, 1), 1 << 16);
    f = mem_flags(1, 1);
    f.ui32.Uncached = 1;
    round_trip("uncached GTT", g_sys.cpu, f, 4096);
    f = mem_flags(1, 0);
    f.ui32.ExtendedCoherent = 1;
    round_trip("extended-coherent system memory", g_sys.cpu, f, 4096);
    round_trip("host-visible VRAM", g_sys.gpu, mem_flags(1, 1), 1 << 20);
    f = mem_flags(1, 1);
    f.ui32.CoarseGrain = 1;
    round_trip("coarse-grained VRAM", g_sys.gpu, f, 1 << 20);
    round_trip("CPU-invisible VRAM", g_sys.gpu, mem_flags(0, 1), 1 << 20);
    f = mem_flags(0, 1);
    f.ui32.GTTAccess = 1;
    f.ui32.HostAccess = 1;
    round_trip("GTT for MES", g_sys.gpu, f, 4096);
    f = mem_flags(1, 0);
    f.ui32.AQLQueueMemory = 1;
    round_trip("AQL queue memory", g_sys.gpu, f, 4096);

    f = mem_flags(0, 1);
    f.ui32.OnlyAddress = 1;
    unmappable("address-only", f);
    f = mem_flags(0, 1);
    f.ui32.NoAddress = 1;
    unmappable("handle-only", f);
    f = mem_flags(0, 1);
    f.ui32.OnlyAddress = 1;
    f.ui32.NoAddress = 1;
    void *p = NULL;
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtAllocMemory(g_sys.gpu, 4096, f, &p));

    /* Scratch: one backing per GPU, created when mapped. */
    HsaMemFlags scratch;
    memset(&scratch, 0, sizeof scratch);
    scratch.ui32.Scratch = 1;
    void *s = alloc_ok(g_sys.gpu, 1 << 16, scratch);
    if (s) {
        EXPECT_OK(hsaKmtMapMemoryToGPU(s, 1 << 16, NULL));
        EXPECT_OK(hsaKmtUnmapMemoryToGPU(s));
        EXPECT_OK(hsaKmtFreeMemory(s, 1 << 16));
    }

    HSAuint64 avail = 0;
    EXPECT_OK(hsaKmtAvailableMemory(g_sys.gpu, &avail));
    CHECK(avail > 0, "available VRAM %llu", (unsigned long long)avail);

    alignment_and_fixed();
    user_data_and_dmabuf();
}

void test_register(void)
{
    size_t size = 3 * 4096;
    char *user = NULL;
    CHECK(posix_memalign((void **)&user, 4096, size) == 0, "posix_memalign");
    if (!user)
        return;
    memset(user, 0x5a, size);

    EXPECT_OK(hsaKmtRegisterMemory(user, size));
    HsaPointerInfo info;
    EXPECT_OK(hsaKmtQueryPointerInfo(user + 100, &info));
    CHECK(info.Type == HSA_POINTER_REGISTERED_USER && info.CPUAddress == user &&
              info.SizeInBytes == size,
          "registered: type %u cpu %p size %llu", info.Type, info.CPUAddress,
          (unsigned long long)info.SizeInBytes);
    EXPECT_OK(hsaKmtMapMemoryToGPU(user, size, NULL));
    EXPECT_OK(hsaKmtQueryPointerInfo(user, &info));
    CHECK(info.NMappedNodes >= 1, "registered memory mapped on %u nodes", info.NMappedNodes);
    EXPECT_OK(hsaKmtUnmapMemoryToGPU(user));
    /* Registering again counts; the first deregistration keeps it. */
    EXPECT_OK(hsaKmtRegisterMemory(user, size));
    EXPECT_OK(hsaKmtDeregisterMemory(user));
    EXPECT_OK(hsaKmtQueryPointerInfo(user, &info));
    EXPECT_OK(hsaKmtDeregisterMemory(user));
    EXPECT(HSAKMT_STATUS_ERROR, hsaKmtQueryPointerInfo(user, &info));
    EXPECT(g_sys.svm_api || !g_sys.dgpu ? HSAKMT_STATUS_SUCCESS : HSAKMT_STATUS_MEMORY_NOT_REGISTERED,
           hsaKmtDeregisterMemory(user));

    HSAuint32 nodes[1] = { g_sys.gpu };
    EXPECT_OK(hsaKmtRegisterMemoryToNodes(user, size, 1, nodes));
    EXPECT_OK(hsaKmtQueryPointerInfo(user, &info));
    CHECK(info.NRegisteredNodes == 1 && info.RegisteredNodes &&
              info.RegisteredNodes[0] == g_sys.gpu,
          "registered to %u nodes", info.NRegisteredNodes);
    EXPECT_OK(hsaKmtMapMemoryToGPU(user, size, NULL));
    EXPECT_OK(hsaKmtQueryPointerInfo(user, &info));
    CHECK(info.NMappedNodes == 1 && info.MappedNodes[0] == g_sys.gpu,
          "memory registered to one node mapped on %u", info.NMappedNodes);
    EXPECT_OK(hsaKmtUnmapMemoryToGPU(user));
    EXPECT_OK(hsaKmtDeregisterMemory(user));
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtRegisterMemoryToNodes(user, size, 0, nodes));
    HSAuint32 bad[1] = { g_sys.nodes };
    EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT, hsaKmtRegisterMemoryToNodes(user, size, 1, bad));

    HsaMemFlags f = mem_flags(1, 0);
    f.ui32.CoarseGrain = 1;
    EXPECT_OK(hsaKmtRegisterMemoryWithFlags(user, size, f));
    EXPECT_OK(hsaKmtDeregisterMemory(user));
    EXPECT(HSAKMT_STATUS_NOT_SUPPORTED, hsaKmtRegisterMemoryWithFlags(user, size, mem_flags(1, 1)));
    EXPECT(HSAKMT_STATUS_NOT_SUPPORTED, hsaKmtRegisterMemoryWithFlags(user, size, mem_flags(0, 0)));
    f.ui32.ExtendedCoherent = 1;
    EXPECT(HSAKMT_STATUS_INVALID_PARAMETER, hsaKmtRegisterMemoryWithFlags(user, size, f));

    /* Memory the library allocated is not user memory. */
    void *own = alloc_ok(g_sys.gpu, 4096, mem_flags(1, 1));
    if (own) {
        EXPECT(HSAKMT_STATUS_INVALID_HANDLE, hsaKmtRegisterMemory(own, 4096));
        EXPECT_OK(hsaKmtFreeMemory(own, 4096));
    }
    free(user);
}
