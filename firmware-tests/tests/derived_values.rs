//! Differential test of the values libhsakmt derives for its users, on every embedded profile:
//! each expected value below was worked out by hand from the profile's files and upstream's
//! rule, cited beside it (file and function of ROCm's libhsakmt, `projects/rocr-runtime/
//! libhsakmt/src/`, of the kernel's amdkfd, or of libdrm's `amdgpu.ids`). The library computes
//! them independently (core `topology::derive`, `topology::marketing`, the device facade's
//! `node_heaps`).

use firmware_tests::{device, sim};
use hsakmt_core::device::{Heap, NodeHeaps};
use hsakmt_core::topology::{AmdName, GfxVersion, NodeKind};
use hsakmt_sim::profile_names;

/// What one profile's GPU nodes must report (every GPU of a profile is the same part).
struct Expected {
    profile: &'static str,
    gpus: usize,
    /// `EngineId` (topology.c `topology_sysfs_get_node_props`: the device table when the
    /// `gfx_target_version` major is ≤ 10, else the key).
    gfx: GfxVersion,
    /// `AMDName` (topology.c `topology_sysfs_get_node_props`: the table's name, else
    /// `GFX%06x`).
    amd_name: &'static str,
    /// `MarketingName` (topology.c `topology_get_node_props_from_drm` → libdrm
    /// `amdgpu_get_marketing_name`, `amdgpu.ids` by device id and revision; without the
    /// revision, only when every revision of the id has one name).
    marketing_name: Option<&'static str>,
    /// `NumShaderBanks` (topology.c `topology_sysfs_get_node_props`:
    /// `array_count / simd_arrays_per_engine`).
    shader_banks: u32,
    /// `VGPRSizePerCU` (queues.c `hsakmt_get_vgpr_size_per_cu`).
    vgpr_size_per_cu: u32,
    /// `SGPRSizePerCU` (libhsakmt.h `SGPR_SIZE_PER_CU` = 0x4000).
    sgpr_size_per_cu: u32,
    /// `NumXcc` (topology.c `topology_sysfs_get_node_props`: `num_xcc`, 1 when absent or 0).
    xcc_count: u32,
    /// The heaps `hsaKmtGetNodeMemoryProperties` adds (`None`: the simulator has no device
    /// for this profile).
    heaps: Option<ExpectedHeaps>,
}

/// Sizes and bases of the heaps of one GPU (the MMIO page's address is wherever the mapping
/// landed, so only its size is fixed).
struct ExpectedHeaps {
    lds: Heap,
    scratch: Heap,
    svm: Heap,
    mmio_size: u64,
    /// `NumMemoryBanks` (topology.c `hsaKmtGetNodeProperties`: kernel banks +
    /// `NUM_OF_DGPU_HEAPS` (3) + 1 once the MMIO aperture is mapped).
    num_memory_banks: u32,
}

/// gfx9 apertures (kernel `kfd_flat_memory.c` `kfd_init_apertures_v9`): LDS at
/// `MAKE_LDS_APP_BASE_V9` = 1 << 48; scratch at `MAKE_SCRATCH_APP_BASE_V9` = 2 << 48 up to
/// `MAKE_SCRATCH_APP_LIMIT` (base | 0xFFFF_FFFF); GPUVM from `SVM_USER_BASE` (16 KiB) to
/// 2^47 - 1.
const GFX9_HEAPS: ExpectedHeaps = ExpectedHeaps {
    // topology.c `hsaKmtGetNodeMemoryProperties`: LDS size = `lds_size_in_kb` (64) * 1024.
    lds: Heap { base: 1 << 48, size: 64 * 1024 },
    // topology.c `hsaKmtGetNodeMemoryProperties`: scratch size = limit - base + 1 = 4 GiB.
    scratch: Heap { base: 2 << 48, size: 1 << 32 },
    // fmm.c `init_svm_apertures`: base aligned up to `GPU_HUGE_PAGE_SIZE` (2 MiB), limit
    // rounded down to 2 MiB - 1 (stays 2^47 - 1); a ≥ 47-bit limit takes
    // `init_mmap_apertures`, one aperture: fmm.c `hsakmt_fmm_get_aperture_base_and_limit`
    // (FMM_SVM) reports alt base .. default limit = 2 MiB .. 2^47 - 1.
    svm: Heap { base: 2 << 20, size: (1 << 47) - (2 << 20) },
    // fmm.c `map_mmio`: one page; `hsakmt_fmm_get_aperture_base_and_limit` (FMM_MMIO).
    mmio_size: 4096,
    num_memory_banks: 1 + 3 + 1,
};

const EXPECTED: &[Expected] = &[
    Expected {
        profile: "mi25-vega10-rocm18",
        gpus: 1,
        // No gfx_target_version key; device_id 26720 = 0x6860: topology.c gfxip table
        // `{ 0x6860, 9, 0, 0, "Vega10" }`.
        gfx: GfxVersion::new(9, 0, 0),
        amd_name: "Vega10",
        // amdgpu.ids: 0x6860 is MI25 (rev 00-02), Pro V340 (03), MI25x2 (04), Pro V320 (07).
        marketing_name: None,
        // array_count 4 / simd_arrays_per_engine 1.
        shader_banks: 4,
        // gfx 9.0.0 is none of the listed versions: the default 0x40000.
        vgpr_size_per_cu: 0x40000,
        sgpr_size_per_cu: 0x4000,
        // num_xcc absent (2018 kernel).
        xcc_count: 1,
        heaps: Some(GFX9_HEAPS),
    },
    Expected {
        profile: "mi210-8gpu-2hive",
        gpus: 8,
        // gfx_target_version 90010, device_id 29711 = 0x740F: gfxip table
        // `{ 0x740F, 9, 0, 10, "Aldebaran" }`.
        gfx: GfxVersion::new(9, 0, 10),
        amd_name: "Aldebaran",
        // amdgpu.ids: `740F, 02, AMD Instinct MI210`, the id's only entry.
        marketing_name: Some("AMD Instinct MI210"),
        // array_count 8 / simd_arrays_per_engine 1.
        shader_banks: 8,
        // `GFX_VERSION_ALDEBARAN`: 0x80000.
        vgpr_size_per_cu: 0x80000,
        sgpr_size_per_cu: 0x4000,
        // num_xcc 1.
        xcc_count: 1,
        // The capture has no gpu_id files: the simulator has no GPU to open.
        heaps: None,
    },
    Expected {
        profile: "mi308x-8gpu-cpx",
        gpus: 32,
        // gfx_target_version 90402 (major 9 ≤ 10, but 0x74A2 is not in the gfxip table): the
        // key decides.
        gfx: GfxVersion::new(9, 4, 2),
        // No table entry: `GFX%06x` of 0x090402.
        amd_name: "GFX090402",
        // amdgpu.ids: `74A2, 00, AMD Instinct MI308X`, the id's only entry.
        marketing_name: Some("AMD Instinct MI308X"),
        // array_count 4 / simd_arrays_per_engine 1 (one XCC per partition in CPX mode).
        shader_banks: 4,
        // `(gfxv & ~0xff) == GFX_VERSION_AQUA_VANJARAM` (0x90400): 0x80000.
        vgpr_size_per_cu: 0x80000,
        sgpr_size_per_cu: 0x4000,
        // num_xcc 1 (CPX: one XCC per partition).
        xcc_count: 1,
        heaps: Some(GFX9_HEAPS),
    },
];

#[test]
fn every_profile_has_a_row_and_cpu_nodes_derive_nothing() {
    for name in profile_names() {
        let topo = firmware_tests::snapshot(&sim(name));
        let gpus = topo.nodes().filter(|n| n.kind() != NodeKind::Cpu).count();
        let row = EXPECTED.iter().find(|e| e.profile == name);
        match row {
            Some(e) => assert_eq!(gpus, e.gpus, "{name}: GPU nodes"),
            None => assert_eq!(gpus, 0, "{name}: a profile with GPUs needs a row"),
        }
        for n in topo.nodes().filter(|n| n.kind() == NodeKind::Cpu) {
            assert_eq!(n.amd_name(), None, "{name}");
            assert_eq!(n.marketing_name(), None, "{name}");
            assert_eq!(n.shader_banks(), None, "{name}");
            assert_eq!(n.vgpr_size_per_cu(), None, "{name}");
            assert_eq!(n.sgpr_size_per_cu(), None, "{name}");
        }
    }
}

#[test]
fn gpu_nodes_derive_what_upstream_derives() {
    for e in EXPECTED {
        let topo = firmware_tests::snapshot(&sim(e.profile));
        let mut seen = 0;
        for n in topo.nodes().filter(|n| n.kind() != NodeKind::Cpu) {
            let what = format!("{} node {}", e.profile, n.sysfs_id());
            assert_eq!(n.gfx(), Some(e.gfx), "{what}");
            assert_eq!(n.amd_name().map(|a| a.to_string()).as_deref(), Some(e.amd_name), "{what}");
            assert_eq!(n.marketing_name(), e.marketing_name, "{what}");
            assert_eq!(n.shader_banks(), Some(e.shader_banks), "{what}");
            assert_eq!(n.vgpr_size_per_cu(), Some(e.vgpr_size_per_cu), "{what}");
            assert_eq!(n.sgpr_size_per_cu(), Some(e.sgpr_size_per_cu), "{what}");
            assert_eq!(n.xcc_count(), Some(e.xcc_count), "{what}");
            seen += 1;
        }
        assert_eq!(seen, e.gpus, "{}", e.profile);
    }
    // The table name is only used when the table decided the version.
    let topo = firmware_tests::snapshot(&sim("mi210-8gpu-2hive"));
    let gpu = topo.nodes().find(|n| n.kind() != NodeKind::Cpu).unwrap();
    assert_eq!(gpu.amd_name(), Some(AmdName::Table("Aldebaran")));
}

fn check_heaps(what: &str, got: &NodeHeaps, want: &ExpectedHeaps, kernel_banks: usize) {
    assert_eq!(got.lds, Some(want.lds), "{what}: LDS");
    assert_eq!(got.scratch, Some(want.scratch), "{what}: scratch");
    assert_eq!(got.svm, Some(want.svm), "{what}: SVM");
    let mmio = got.mmio_remap.expect("the MMIO heap once the page is mapped");
    assert_eq!(mmio.size, want.mmio_size, "{what}: MMIO");
    assert_ne!(mmio.base, 0, "{what}: MMIO base");
    let banks = kernel_banks as u32 + got.extra_bank_count();
    assert_eq!(banks, want.num_memory_banks, "{what}: NumMemoryBanks");
}

#[test]
fn gpu_heaps_are_the_apertures_upstream_reports() {
    for e in EXPECTED {
        let Some(want) = &e.heaps else { continue };
        let kfd = device(sim(e.profile));
        kfd.open().unwrap();
        let gpus: Vec<(u32, usize)> = kfd
            .with_topology(|t| {
                t.nodes()
                    .filter(|n| n.kind() != NodeKind::Cpu)
                    .map(|n| (n.user_id().unwrap(), n.mem_banks().len()))
                    .collect()
            })
            .unwrap();
        assert_eq!(gpus.len(), e.gpus);
        for (node, kernel_banks) in gpus {
            let what = format!("{} node {node}", e.profile);
            // Before the MMIO page is mapped: three heaps, three extra banks.
            let before = kfd.node_heaps(node).unwrap();
            assert_eq!(before.mmio_remap, None, "{what}");
            assert_eq!(before.extra_bank_count(), 3, "{what}");
            let page = kfd.alloc_mmio_remap(node).unwrap();
            let after = kfd.node_heaps(node).unwrap();
            check_heaps(&what, &after, want, kernel_banks);
            assert_eq!(after.mmio_remap.unwrap().base, page.addr, "{what}");
            kfd.free(page).unwrap();
            assert_eq!(kfd.node_heaps(node).unwrap(), before, "{what}: freed page, no heap");
        }
        // CPU nodes have no heaps.
        let cpu = kfd
            .with_topology(|t| t.nodes().find(|n| n.kind() == NodeKind::Cpu)?.user_id())
            .unwrap()
            .unwrap();
        assert!(kfd.node_heaps(cpu).is_err());
        kfd.close().unwrap();
    }
}
