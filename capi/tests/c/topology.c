/* Topology: prints every field the API reports (compared by the driver with `hsakmt info
 * --json`) and checks what the library adds itself (the GPU heaps) and its bounds.
 * Part of hsakmt-rs; licensed MIT OR Apache-2.0. */
#include <stdlib.h>

#include "check.h"

#define P(kind, idx, field, value) \
    printf("%s %s %s %llu\n", kind, idx, field, (unsigned long long)(value))

/* FNV-1a (64-bit) over a name's code units up to its NUL: the names printed as numbers. */
static unsigned long long fnv1a_units16(const HSAuint16 *s)
{
    unsigned long long h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < HSA_PUBLIC_NAME_SIZE && s[i] != 0; i++)
        h = (h ^ s[i]) * 0x100000001b3ULL;
    return h;
}

static unsigned long long fnv1a_units8(const HSAuint8 *s)
{
    unsigned long long h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < HSA_PUBLIC_NAME_SIZE && s[i] != 0; i++)
        h = (h ^ s[i]) * 0x100000001b3ULL;
    return h;
}

static void print_node(HSAuint32 n, const HsaNodeProperties *p)
{
    char id[32];
    snprintf(id, sizeof id, "%u", n);
    P("node", id, "NumCPUCores", p->NumCPUCores);
    P("node", id, "NumFComputeCores", p->NumFComputeCores);
    P("node", id, "NumMemoryBanks", p->NumMemoryBanks);
    P("node", id, "NumCaches", p->NumCaches);
    P("node", id, "NumIOLinks", p->NumIOLinks);
    P("node", id, "CComputeIdLo", p->CComputeIdLo);
    P("node", id, "FComputeIdLo", p->FComputeIdLo);
    P("node", id, "Capability", p->Capability.Value);
    P("node", id, "Capability2", p->Capability2.Value);
    P("node", id, "MaxWavesPerSIMD", p->MaxWavesPerSIMD);
    P("node", id, "LDSSizeInKB", p->LDSSizeInKB);
    P("node", id, "GDSSizeInKB", p->GDSSizeInKB);
    P("node", id, "WaveFrontSize", p->WaveFrontSize);
    P("node", id, "NumShaderBanks", p->NumShaderBanks);
    P("node", id, "NumArrays", p->NumArrays);
    P("node", id, "NumCUPerArray", p->NumCUPerArray);
    P("node", id, "NumSIMDPerCU", p->NumSIMDPerCU);
    P("node", id, "MaxSlotsScratchCU", p->MaxSlotsScratchCU);
    P("node", id, "EngineId.uCode", p->EngineId.ui32.uCode);
    P("node", id, "EngineId.Major", p->EngineId.ui32.Major);
    P("node", id, "EngineId.Minor", p->EngineId.ui32.Minor);
    P("node", id, "EngineId.Stepping", p->EngineId.ui32.Stepping);
    P("node", id, "VendorId", p->VendorId);
    P("node", id, "DeviceId", p->DeviceId);
    P("node", id, "LocationId", p->LocationId);
    P("node", id, "LocalMemSize", p->LocalMemSize);
    P("node", id, "MaxEngineClockMhzFCompute", p->MaxEngineClockMhzFCompute);
    P("node", id, "MaxEngineClockMhzCCompute", p->MaxEngineClockMhzCCompute);
    P("node", id, "DrmRenderMinor", (HSAuint32)p->DrmRenderMinor);
    P("node", id, "uCodeEngineVersions.uCodeSDMA", p->uCodeEngineVersions.uCodeSDMA);
    P("node", id, "DebugProperties", p->DebugProperties.Value);
    P("node", id, "HiveID", p->HiveID);
    P("node", id, "NumSdmaEngines", p->NumSdmaEngines);
    P("node", id, "NumSdmaXgmiEngines", p->NumSdmaXgmiEngines);
    P("node", id, "NumSdmaQueuesPerEngine", p->NumSdmaQueuesPerEngine);
    P("node", id, "NumCpQueues", p->NumCpQueues);
    P("node", id, "NumGws", p->NumGws);
    P("node", id, "Domain", p->Domain);
    P("node", id, "UniqueID", p->UniqueID);
    P("node", id, "NumXcc", p->NumXcc);
    P("node", id, "KFDGpuID", p->KFDGpuID);
    P("node", id, "AMDName.fnv1a", fnv1a_units8(p->AMDName));
    P("node", id, "MarketingName.fnv1a", fnv1a_units16(p->MarketingName));
}

void test_topology(void)
{
    HsaSystemProperties sp;
    EXPECT_OK(hsaKmtAcquireSystemProperties(&sp));
    P("system", "-", "NumNodes", sp.NumNodes);
    P("system", "-", "PlatformOem", sp.PlatformOem);
    P("system", "-", "PlatformId", sp.PlatformId);
    P("system", "-", "PlatformRev", sp.PlatformRev);
    for (HSAuint32 n = 0; n < sp.NumNodes; n++) {
        HsaNodeProperties p;
        EXPECT_OK(hsaKmtGetNodeProperties(n, &p));
        print_node(n, &p);
        int gpu = p.KFDGpuID != 0;
        CHECK(!gpu || p.AMDName[0] != 0, "GPU node %u has no AMDName", n);

        HsaMemoryProperties *banks = calloc(p.NumMemoryBanks + 1, sizeof *banks);
        EXPECT_OK(hsaKmtGetNodeMemoryProperties(n, p.NumMemoryBanks, banks));
        int heaps[HSA_HEAPTYPE_NUMHEAPTYPES] = { 0 };
        for (HSAuint32 b = 0; b < p.NumMemoryBanks; b++) {
            char id[32];
            snprintf(id, sizeof id, "%u.%u", n, b);
            HsaMemoryProperties *m = &banks[b];
            if (m->HeapType < HSA_HEAPTYPE_NUMHEAPTYPES)
                heaps[m->HeapType]++;
            /* The library's own heaps are checked here; the kernel's are compared. */
            if (m->HeapType == HSA_HEAPTYPE_GPU_LDS || m->HeapType == HSA_HEAPTYPE_GPU_SCRATCH ||
                m->HeapType == HSA_HEAPTYPE_DEVICE_SVM || m->HeapType == HSA_HEAPTYPE_MMIO_REMAP) {
                CHECK(m->VirtualBaseAddress != 0 && m->SizeInBytes != 0,
                      "node %u heap %u has base %#llx size %llu", n, m->HeapType,
                      (unsigned long long)m->VirtualBaseAddress,
                      (unsigned long long)m->SizeInBytes);
                continue;
            }
            P("bank", id, "HeapType", m->HeapType);
            P("bank", id, "SizeInBytes", m->SizeInBytes);
            P("bank", id, "Flags", m->Flags.MemoryProperty);
            P("bank", id, "Width", m->Width);
            P("bank", id, "MemoryClockMax", m->MemoryClockMax);
        }
        if (gpu) {
            CHECK(heaps[HSA_HEAPTYPE_GPU_LDS] == 1 && heaps[HSA_HEAPTYPE_GPU_SCRATCH] == 1 &&
                      heaps[HSA_HEAPTYPE_DEVICE_SVM] == 1 && heaps[HSA_HEAPTYPE_MMIO_REMAP] == 1,
                  "GPU node %u heaps: LDS %d scratch %d SVM %d MMIO %d", n,
                  heaps[HSA_HEAPTYPE_GPU_LDS], heaps[HSA_HEAPTYPE_GPU_SCRATCH],
                  heaps[HSA_HEAPTYPE_DEVICE_SVM], heaps[HSA_HEAPTYPE_MMIO_REMAP]);
        }
        /* Asking for fewer banks fills fewer; the rest of the array stays untouched. */
        if (p.NumMemoryBanks > 1) {
            banks[1].Width = 0xdead;
            EXPECT_OK(hsaKmtGetNodeMemoryProperties(n, 1, banks));
            CHECK(banks[1].Width == 0xdead, "node %u: a bank past NumBanks was written", n);
        }
        free(banks);

        HsaCacheProperties *caches = calloc(p.NumCaches + 1, sizeof *caches);
        EXPECT_OK(hsaKmtGetNodeCacheProperties(n, 0, p.NumCaches, caches));
        for (HSAuint32 c = 0; c < p.NumCaches; c++) {
            char id[32];
            snprintf(id, sizeof id, "%u.%u", n, c);
            P("cache", id, "ProcessorIdLow", caches[c].ProcessorIdLow);
            P("cache", id, "CacheLevel", caches[c].CacheLevel);
            P("cache", id, "CacheSize", caches[c].CacheSize);
            P("cache", id, "CacheLineSize", caches[c].CacheLineSize);
            P("cache", id, "CacheLinesPerTag", caches[c].CacheLinesPerTag);
            P("cache", id, "CacheAssociativity", caches[c].CacheAssociativity);
            P("cache", id, "CacheLatency", caches[c].CacheLatency);
            P("cache", id, "CacheType", caches[c].CacheType.Value);
        }
        EXPECT(HSAKMT_STATUS_INVALID_PARAMETER,
               hsaKmtGetNodeCacheProperties(n, 0, p.NumCaches + 1, caches));
        free(caches);

        HsaIoLinkProperties *links = calloc(p.NumIOLinks + 1, sizeof *links);
        EXPECT_OK(hsaKmtGetNodeIoLinkProperties(n, p.NumIOLinks, links));
        for (HSAuint32 l = 0; l < p.NumIOLinks; l++) {
            char id[32];
            snprintf(id, sizeof id, "%u.%u", n, l);
            HsaIoLinkProperties *k = &links[l];
            CHECK(k->NodeFrom == n && k->NodeTo < sp.NumNodes, "link %s: %u -> %u", id,
                  k->NodeFrom, k->NodeTo);
            P("link", id, "IoLinkType", k->IoLinkType);
            P("link", id, "VersionMajor", k->VersionMajor);
            P("link", id, "VersionMinor", k->VersionMinor);
            P("link", id, "NodeFrom", k->NodeFrom);
            P("link", id, "NodeTo", k->NodeTo);
            P("link", id, "Weight", k->Weight);
            P("link", id, "MinimumLatency", k->MinimumLatency);
            P("link", id, "MaximumLatency", k->MaximumLatency);
            P("link", id, "MinimumBandwidth", k->MinimumBandwidth);
            P("link", id, "MaximumBandwidth", k->MaximumBandwidth);
            P("link", id, "RecTransferSize", k->RecTransferSize);
            P("link", id, "RecSdmaEngIdMask", k->RecSdmaEngIdMask);
            P("link", id, "Flags", k->Flags.LinkProperty);
        }
        EXPECT(HSAKMT_STATUS_INVALID_PARAMETER,
               hsaKmtGetNodeIoLinkProperties(n, p.NumIOLinks + 1, links));
        free(links);
    }
    HsaNodeProperties p;
    EXPECT(HSAKMT_STATUS_INVALID_NODE_UNIT, hsaKmtGetNodeProperties(sp.NumNodes, &p));
}
