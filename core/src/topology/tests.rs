//! Whole-tree tests: real captures, synthetic trees, failure modes, properties.

use std::boxed::Box;
use std::collections::BTreeMap;
use std::format;
use std::string::{String, ToString};
use std::vec;
use std::vec::Vec;

use super::testing::{MemSysfs, TestHost, profile_dir};
use super::*;
use crate::error::{Errno, Error as _, ErrorKind};
use crate::platform::{EntryKind, Host, Sysfs, SysfsDir, SysfsFile};

type Topo = Topology;

fn boxed() -> Box<Topo> {
    boxed_with()
}

/// Boxes an empty snapshot; a separate frame so that test functions do not each hold a
/// snapshot-sized temporary on their stack (debug builds).
#[inline(never)]
fn boxed_with<
    const N: usize,
    const B: usize,
    const C: usize,
    const L: usize,
    const U: usize,
    const W: usize,
>() -> Box<Topology<N, B, C, L, U, W>> {
    Box::new(Topology::new())
}

fn snapshot(sysfs: &impl Sysfs) -> Box<Topo> {
    snapshot_with(sysfs, &TestHost::default())
}

fn snapshot_with(sysfs: &impl Sysfs, host: &impl Host) -> Box<Topo> {
    try_snapshot(sysfs, host).unwrap()
}

/// One snapshot with a read buffer of `len` bytes, for trees that count or change as they are
/// read.
fn snapshot_once(sysfs: &impl Sysfs, len: usize) -> Box<Topo> {
    let mut t = boxed();
    let mut buf = vec![0u8; len];
    t.refresh(sysfs, &TestHost::default(), &mut buf).unwrap();
    t
}

/// Takes the snapshot with a one-page buffer (one file per read) and with [`READ_BUFFER`]
/// (entry files read in batches): both must give the same result.
fn try_snapshot(sysfs: &impl Sysfs, host: &impl Host) -> Result<Box<Topo>, Error> {
    let mut one = boxed();
    let mut page = [0u8; MIN_READ_BUFFER];
    let single = one.refresh(sysfs, host, &mut page).map(|()| one);
    let mut many = boxed();
    let mut large = vec![0u8; READ_BUFFER];
    let batched = many.refresh(sysfs, host, &mut large).map(|()| many);
    match (&single, &batched) {
        (Ok(a), Ok(b)) => assert!(**a == **b, "batched reads changed the snapshot"),
        (a, b) => assert_eq!(a.as_ref().err(), b.as_ref().err()),
    }
    single
}

fn kinds_of(t: &Topo) -> Vec<NodeKind> {
    t.nodes().map(|n| n.kind()).collect()
}

fn link_types(links: &[Link]) -> BTreeMap<u32, usize> {
    let mut m = BTreeMap::new();
    for l in links {
        *m.entry(l.properties().link_type().unwrap()).or_default() += 1;
    }
    m
}

fn count_warnings(t: &Topo, f: impl Fn(&Warning) -> bool) -> usize {
    t.warnings().iter().filter(|w| f(w)).count()
}

// ------------------------------------------------------------------ footprint

#[test]
fn default_footprint_fits_512_kib() {
    let size = core::mem::size_of::<Topo>();
    std::println!(
        "Topology: {size} bytes; Node {} Cache {} Link {} MemBank {} UnknownKey {} Warning {}",
        core::mem::size_of::<Node>(),
        core::mem::size_of::<Cache>(),
        core::mem::size_of::<Link>(),
        core::mem::size_of::<MemBank>(),
        core::mem::size_of::<UnknownKey>(),
        core::mem::size_of::<Warning>(),
    );
    assert!(size <= 512 * 1024, "{size}");
    assert!(core::mem::size_of::<Error>() <= 24);
}

// ------------------------------------------------------------------ captures

#[test]
fn mi308x_capture() {
    let fs = MemSysfs::from_dir(&profile_dir("mi308x-8gpu-cpx/topology"));
    let t = snapshot(&fs);
    assert_eq!(t.generation_id(), Some(33));
    let sys = t.system_properties();
    assert_eq!(sys.platform_oem(), Some(35498446626881));
    assert_eq!(sys.platform_id(), Some(71791775140929));
    assert_eq!(sys.platform_rev(), Some(2));
    assert_eq!(&sys.platform_id().unwrap().to_le_bytes()[..6], b"ALASKA");

    assert_eq!(t.node_count(), 34);
    assert_eq!(t.gpu_count(), 32);
    let kinds = kinds_of(&t);
    assert_eq!(&kinds[..2], &[NodeKind::Cpu, NodeKind::Cpu]);
    assert!(kinds[2..].iter().all(|k| *k == NodeKind::Gpu));
    assert!(t.is_dgpu_system());
    assert!(!t.has_derived_links());

    let small_vram = [5, 9, 13, 17, 21, 25, 29, 33];
    let mut total_caches = 0;
    for n in t.nodes() {
        assert!(n.is_accessible());
        assert_eq!(n.user_id(), Some(n.index() as u32));
        if n.index() < 2 {
            assert_eq!(n.gpu_id(), Some(0));
            assert_eq!(n.name(), Some(""));
            assert_eq!(n.cpu_cores_count(), Some(112));
            assert_eq!(n.gfx(), None);
            assert_eq!(n.vram_bytes(), None);
            assert_eq!(n.properties().present_count(), 30);
            let heap0: Vec<_> = n.mem_banks().iter().map(|b| b.heap_type()).collect();
            assert_eq!(heap0, [Some(HeapType::System)]);
            assert_eq!(link_types(n.io_links()), BTreeMap::from([(2, 16), (5, 1)]));
            assert_eq!(link_types(n.p2p_links()), BTreeMap::from([(2, 16)]));
            assert_eq!(n.caches().len(), 0);
            continue;
        }
        assert_eq!(n.name(), Some("ip discovery"));
        assert_eq!(n.properties().present_count(), 38);
        assert_eq!(n.gfx().unwrap().to_string(), "gfx942");
        assert_eq!(n.gfx_source(), Some(GfxSource::TargetVersion));
        assert_eq!(n.effective_gfx(), n.gfx());
        assert_eq!(n.simd_count(), Some(80));
        assert_eq!(n.cu_count(), Some(20));
        assert_eq!(n.xcc_count(), Some(1));
        assert_eq!(n.shader_banks(), Some(4));
        assert_eq!(n.vgpr_size_per_cu(), Some(0x80000));
        assert_eq!(n.sgpr_size_per_cu(), Some(0x4000));
        assert_eq!(n.device_id(), Some(29858));
        assert_eq!(n.hive_id(), Some(2095653680343411291));
        assert_eq!(n.get(NodeKey::LocalMemSize), Some(0));
        assert_eq!(n.get(NodeKey::Capability2), None);
        assert_eq!(n.get(NodeKey::CwsrSize), None);
        assert_eq!(n.drm_render_minor(), n.get(NodeKey::DrmRenderMinor).map(|v| v as u32));
        let want = if small_vram.contains(&n.index()) { 51522830336 } else { 51539607552 };
        assert_eq!(n.vram_bytes(), Some(want), "node {}", n.index());
        assert_eq!(n.caches().len(), 46);
        total_caches += n.caches().len();
        let mut l1 = 0;
        for c in n.caches() {
            let map = c.sibling_map().unwrap();
            match c.properties().level() {
                Some(1) => {
                    l1 += 1;
                    assert_eq!(map.len(), 32);
                }
                Some(2 | 3) => assert_eq!(map.len(), 128),
                other => panic!("{other:?}"),
            }
            assert!(!map.is_truncated());
        }
        assert_eq!(l1, 44);
        assert_eq!(link_types(n.io_links()), BTreeMap::from([(2, 1), (11, 31)]));
        assert_eq!(link_types(n.p2p_links()), BTreeMap::from([(2, 1)]));
        assert!(n.io_links().iter().all(|l| l.get(LinkKey::RecommendedSdmaEngineIdMask).is_none()));
        assert!(n.io_links().iter().all(|l| l.properties().present_count() == 12));
        // NUMA: nearest CPU is the PCIe parent, weight 20.
        let (cpu, w) = t.nearest_cpu(n.index()).unwrap();
        assert!(cpu < 2);
        assert_eq!(w, 20);
        assert_eq!(t.direct_link_cpu(n.index()), Some(cpu));
        assert_eq!(t.cpu_weights(n.index()).count(), 2);
    }
    assert_eq!(total_caches, 1472);
    // The capture is internally consistent: used_memory is ignored, nothing else is missing
    // but perf/.
    assert!(t.warnings().is_empty(), "{:?}", t.warnings());
    assert_eq!(t.unknown_keys().len(), 0);
    assert_eq!(t.node_by_gpu_id(24248).unwrap().index(), 2);
    assert_eq!(t.node_by_gpu_id(15601).unwrap().index(), 33);
    assert!(t.node_by_gpu_id(0).is_none());
    assert_eq!(t.node_by_sysfs_id(7).unwrap().gpu_id(), Some(42334));
}

#[test]
fn mi25_capture_old_driver() {
    let fs = MemSysfs::from_dir(&profile_dir("mi25-vega10-rocm18/topology"));
    let t = snapshot(&fs);
    assert_eq!(t.generation_id(), Some(2));
    assert_eq!(t.system_properties().platform_oem(), Some(4777524452235890003));
    assert_eq!(&t.system_properties().platform_id().unwrap().to_le_bytes()[..6], b"SUPERM");
    assert_eq!(t.node_count(), 2);
    assert_eq!(kinds_of(&t), [NodeKind::Cpu, NodeKind::Gpu]);
    let cpu = t.node(0).unwrap();
    assert_eq!(cpu.properties().present_count(), 21);
    assert_eq!(cpu.cpu_cores_count(), Some(20));
    assert_eq!(cpu.gpu_id(), Some(0));
    assert_eq!(cpu.mem_banks()[0].size_in_bytes(), Some(67155521536));
    assert_eq!(cpu.mem_banks()[0].get(MemBankKey::MemClkMax), Some(2666));
    let gpu = t.node(1).unwrap();
    assert_eq!(gpu.properties().present_count(), 26);
    assert_eq!(gpu.gpu_id(), Some(13261));
    assert_eq!(gpu.name(), Some(""));
    assert_eq!(gpu.get(NodeKey::GfxTargetVersion), None);
    assert_eq!(gpu.get(NodeKey::P2pLinksCount), None);
    assert_eq!(gpu.gfx().unwrap().to_string(), "gfx900");
    assert_eq!(gpu.gfx_source(), Some(GfxSource::DeviceTable));
    assert_eq!(gpu.amd_name().unwrap().to_string(), "Vega10");
    assert_eq!(gpu.vgpr_size_per_cu(), Some(0x40000));
    assert_eq!(gpu.simd_count(), Some(256));
    assert_eq!(gpu.cu_count(), Some(64));
    assert_eq!(gpu.xcc_count(), Some(1));
    assert_eq!(gpu.num_xcc(), None);
    assert_eq!(gpu.shader_banks(), Some(4));
    assert_eq!(gpu.ucode_version(), Some(392));
    assert_eq!(gpu.capability().unwrap().bits(), 8832);
    assert_eq!(gpu.get(NodeKey::LocalMemSize), Some(17163091968));
    assert_eq!(gpu.vram_bytes(), Some(17163091968));
    assert_eq!(gpu.caches().len(), 96);
    for c in gpu.caches() {
        let m = c.sibling_map().unwrap();
        assert_eq!((m.len(), m.stored_len(), m.is_truncated()), (256, 256, false));
        assert_eq!(c.properties().present_count(), 9);
        assert_eq!(c.get(CacheKey::SiblingMap), None);
    }
    let mut mix: BTreeMap<(u32, u32), usize> = BTreeMap::new();
    for c in gpu.caches() {
        *mix.entry((c.properties().size().unwrap(), c.properties().cache_type().unwrap()))
            .or_default() += 1;
    }
    assert_eq!(mix, BTreeMap::from([((16, 9), 64), ((4, 9), 16), ((8, 10), 16)]));
    for n in t.nodes() {
        assert_eq!(n.io_links().len(), 1);
        let l = &n.io_links()[0];
        assert_eq!((l.link_type(), l.weight()), (Some(IoLinkType::PciExpress), Some(20)));
        assert_eq!(l.properties().present_count(), 12);
        assert!(n.p2p_links().is_empty());
    }
    // No p2p_links_count anywhere: libhsakmt's indirect links are computed, but a 1-GPU
    // machine has none.
    assert!(t.has_derived_links());
    assert!(t.nodes().all(|n| n.derived_links().is_empty()));
    assert_eq!(t.nearest_cpu(1), Some((0, 20)));
    // The only gap: node 0 has no caches/ dir and caches_count 0 — consistent.
    assert!(t.warnings().is_empty(), "{:?}", t.warnings());
}

#[test]
fn mi210_capture_incomplete() {
    let fs = MemSysfs::from_dir(&profile_dir("mi210-8gpu-2hive/topology"));
    let t = snapshot(&fs);
    assert_eq!(t.generation_id(), None);
    assert!(!t.has_system_properties());
    assert_eq!(t.node_count(), 10);
    assert_eq!(t.gpu_count(), 8);
    let hive_a = 12609507387757274807u64;
    let hive_b = 18091350218769748594u64;
    for n in t.nodes() {
        assert_eq!(n.gpu_id(), None);
        assert_eq!(n.name(), None);
        assert!(n.mem_banks().is_empty());
        assert_eq!(n.vram_bytes(), None);
        if n.index() < 2 {
            assert_eq!(n.kind(), NodeKind::Cpu);
            assert_eq!(n.cpu_cores_count(), Some(64));
            assert_eq!(link_types(n.io_links()), BTreeMap::from([(1, 1), (2, 4)]));
            assert_eq!(link_types(n.p2p_links()), BTreeMap::from([(2, 4)]));
            continue;
        }
        assert_eq!(n.kind(), NodeKind::Gpu);
        assert_eq!(n.gfx().unwrap().to_string(), "gfx90a");
        // 0x740F is in libhsakmt's table (Aldebaran), which wins for majors <= 10.
        assert_eq!(n.gfx_source(), Some(GfxSource::DeviceTable));
        assert_eq!(n.amd_name().unwrap().to_string(), "Aldebaran");
        assert_eq!(n.simd_count(), Some(416));
        assert_eq!(n.cu_count(), Some(104));
        assert_eq!(n.shader_banks(), Some(8));
        assert_eq!(n.num_sdma_xgmi_engines(), Some(3));
        assert_eq!(n.vgpr_size_per_cu(), Some(0x80000));
        assert_eq!(n.hive_id(), Some(if n.index() < 6 { hive_a } else { hive_b }));
        assert!(n.caches().is_empty());
        assert_eq!(link_types(n.io_links()), BTreeMap::from([(2, 1), (11, 3)]));
        assert_eq!(link_types(n.p2p_links()), BTreeMap::from([(2, 5)]));
        assert!(n.io_links().iter().all(|l| l.properties().present_count() == 13));
    }
    let l = &t.node(2).unwrap().io_links()[1];
    assert_eq!(l.get(LinkKey::RecommendedSdmaEngineIdMask), Some(28));
    assert_eq!((l.node_from(), l.node_to(), l.weight()), (Some(2), Some(3), Some(15)));
    assert_eq!(t.node(2).unwrap().p2p_links()[0].weight(), Some(52));
    assert_eq!(t.link_weight(2, 1), Some((52, LinkOrigin::P2pLink)));
    assert_eq!(t.nearest_cpu(2).map(|(_, w)| w), Some(20));
    // What the capture lacks is flagged, not invented.
    let missing = |f: fn(&SysfsFile) -> bool| {
        count_warnings(&t, |w| {
            w.kind == WarningKind::MissingFile
                && matches!(w.location, Location::File(ref x) if f(x))
        })
    };
    assert_eq!(missing(|f| *f == SysfsFile::GenerationId), 1);
    assert_eq!(missing(|f| *f == SysfsFile::SystemProperties), 1);
    assert_eq!(missing(|f| matches!(f, SysfsFile::GpuId(_))), 10);
    assert_eq!(missing(|f| matches!(f, SysfsFile::Name(_))), 10);
    let mismatch = |key: NodeKey| {
        count_warnings(
            &t,
            |w| matches!(w.kind, WarningKind::CountMismatch { key: k, .. } if k == key),
        )
    };
    assert_eq!(mismatch(NodeKey::MemBanksCount), 10);
    assert_eq!(mismatch(NodeKey::CachesCount), 8);
    assert_eq!(mismatch(NodeKey::IoLinksCount), 0);
    assert_eq!(mismatch(NodeKey::P2pLinksCount), 0);
    assert_eq!(t.warnings().len(), 40);
    assert_eq!(t.warnings_dropped(), 0);
    let w = t
        .warnings()
        .iter()
        .find(|w| matches!(w.kind, WarningKind::CountMismatch { key: NodeKey::CachesCount, .. }))
        .unwrap();
    assert_eq!(w.to_string(), "nodes/2/caches/: `caches_count` is 217 but 0 directories exist");
}

/// Builds the shape of the 2021 CPU-only listing: every file exists, with unknown (empty)
/// contents.
fn cpu_only_listing() -> MemSysfs {
    let listing =
        std::fs::read_to_string(profile_dir("cpu-only-virtual-crat-2021/LISTING-ls-lR.txt"))
            .unwrap();
    let mut fs = MemSysfs::new();
    let mut dir = String::new();
    for line in listing.lines() {
        if let Some(d) = line.strip_suffix(':') {
            dir =
                d.trim_start_matches("/sys/class/kfd/kfd/topology").trim_start_matches('/').into();
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 9 {
            continue;
        }
        let name = fields[8];
        let path = if dir.is_empty() { name.to_string() } else { format!("{dir}/{name}") };
        if fields[0].starts_with('d') {
            if let Some((parent, last)) = path.rsplit_once('/')
                && let Ok(i) = last.parse::<u32>()
            {
                match parent.split('/').collect::<Vec<_>>().as_slice() {
                    ["nodes"] => fs.add_dir_entry(SysfsDir::Nodes, i),
                    ["nodes", n, kind] => {
                        let kind =
                            EntryKind::ALL.into_iter().find(|k| k.dir_name() == *kind).unwrap();
                        fs.add_dir_entry(SysfsDir::Entries { node: n.parse().unwrap(), kind }, i);
                    }
                    _ => {}
                }
            }
        } else if let Some(f) = super::testing::parse_path(&path) {
            fs.insert_file(f, b"");
        }
    }
    fs
}

#[test]
fn cpu_only_listing_shape() {
    let fs = cpu_only_listing();
    assert_eq!(fs.file_count(), 6, "{:?}", fs.files());
    let t = snapshot(&fs);
    assert_eq!(t.node_count(), 1);
    assert_eq!(t.gpu_count(), 0);
    let n = t.node(0).unwrap();
    assert_eq!(n.kind(), NodeKind::Cpu);
    assert_eq!(n.mem_banks().len(), 1);
    assert!(n.caches().is_empty() && n.io_links().is_empty() && n.p2p_links().is_empty());
    assert_eq!(n.properties().present_count(), 0);
    assert_eq!(n.gpu_id(), None);
    assert!(n.has_properties());
    // Nothing invented: every file is flagged empty.
    assert_eq!(count_warnings(&t, |w| w.kind == WarningKind::EmptyFile), 6);
}

// ------------------------------------------------------------------ synthetic trees

fn cpu_props(p2p_key: bool, io_links: u32) -> String {
    let p2p = if p2p_key { "p2p_links_count 0\n" } else { "" };
    format!(
        "cpu_cores_count 16\nsimd_count 0\nmem_banks_count 1\ncaches_count 0\n\
         io_links_count {io_links}\n{p2p}max_engine_clk_ccompute 3000\n"
    )
}

fn gpu_props(p2p_key: bool, hive: u64, io_links: u32) -> String {
    let mut s = format!(
        "cpu_cores_count 0\nsimd_count 304\nmem_banks_count 1\ncaches_count 0\n\
         io_links_count {io_links}\narray_count 8\nsimd_arrays_per_engine 2\nsimd_per_cu 4\n\
         gfx_target_version 90402\ndevice_id 29857\ndrm_render_minor 128\nhive_id {hive}\n"
    );
    if p2p_key {
        s.push_str("p2p_links_count 0\n");
    }
    s
}

fn link(ty: u32, from: u32, to: u32, weight: u32) -> String {
    format!("type {ty}\nnode_from {from}\nnode_to {to}\nweight {weight}\nflags 1\n")
}

/// Two CPU sockets (0, 1) joined by `cpu_link_type`/`cpu_weight`; GPU 2 under CPU 0,
/// GPU 3 under CPU 1, GPU 4 under CPU 0.
fn two_socket_tree(cpu_link_type: u32, cpu_weight: u32, p2p_key: bool) -> MemSysfs {
    let mut fs = MemSysfs::new();
    fs.insert("generation_id", b"1\n");
    fs.insert("system_properties", b"platform_oem 1\nplatform_id 2\nplatform_rev 3\n");
    for n in 0..5 {
        fs.insert(&format!("nodes/{n}/name"), if n < 2 { b"\n" } else { b"ip discovery\n" });
    }
    for (cpu, other, gpus) in [(0u32, 1u32, &[2u32, 4][..]), (1, 0, &[3][..])] {
        fs.insert(&format!("nodes/{cpu}/gpu_id"), b"0\n");
        let io = 1 + gpus.len() as u32;
        fs.insert(&format!("nodes/{cpu}/properties"), cpu_props(p2p_key, io).as_bytes());
        fs.insert(
            &format!("nodes/{cpu}/mem_banks/0/properties"),
            b"heap_type 0\nsize_in_bytes 1024\n",
        );
        fs.insert(
            &format!("nodes/{cpu}/io_links/0/properties"),
            link(cpu_link_type, cpu, other, cpu_weight).as_bytes(),
        );
        for (i, g) in gpus.iter().enumerate() {
            fs.insert(
                &format!("nodes/{cpu}/io_links/{}/properties", i + 1),
                link(2, cpu, *g, 20).as_bytes(),
            );
        }
    }
    for (gpu, cpu) in [(2u32, 0u32), (3, 1), (4, 0)] {
        fs.insert(&format!("nodes/{gpu}/gpu_id"), format!("{}\n", 1000 + gpu).as_bytes());
        fs.insert(&format!("nodes/{gpu}/properties"), gpu_props(p2p_key, 0, 1).as_bytes());
        fs.insert(
            &format!("nodes/{gpu}/mem_banks/0/properties"),
            b"heap_type 1\nsize_in_bytes 68702699520\n",
        );
        fs.insert(&format!("nodes/{gpu}/io_links/0/properties"), link(2, gpu, cpu, 20).as_bytes());
    }
    fs
}

fn derived(t: &Topo, node: usize) -> Vec<(u32, u32, Option<u32>)> {
    t.node(node)
        .unwrap()
        .derived_links()
        .iter()
        .map(|l| (l.node_to().unwrap(), l.weight().unwrap(), l.properties().link_type()))
        .collect()
}

#[test]
fn indirect_links_over_hypertransport() {
    let t = snapshot(&two_socket_tree(1, 32, false));
    assert!(t.warnings().is_empty(), "{:?}", t.warnings());
    assert!(t.has_derived_links());
    // GPU 2 (under CPU 0): → CPU 1 via CPU 0 (20 + 32, type of CPU0→CPU1), → GPU 3 via
    // CPU 0 → CPU 1 (20 + 32 + 20), → GPU 4 via CPU 0 (20 + 20, type PCIe).
    assert_eq!(derived(&t, 2), [(1, 52, Some(1)), (3, 72, Some(1)), (4, 40, Some(2))]);
    // CPU 0 → GPU 3 via CPU 1 (32 + 20).
    assert_eq!(derived(&t, 0), [(3, 52, Some(1))]);
    assert_eq!(derived(&t, 1), [(2, 52, Some(1)), (4, 52, Some(1))]);
    for l in t.node(2).unwrap().derived_links() {
        assert_eq!(l.origin(), LinkOrigin::Derived);
        assert!(!l.is_kernel_reported());
        assert_eq!(l.node_from(), Some(2));
        assert_eq!(l.properties().present_count(), 4);
    }
    assert_eq!(t.link_weight(2, 3), Some((72, LinkOrigin::Derived)));
    assert_eq!(t.link_weight(2, 0), Some((20, LinkOrigin::IoLink)));
    let w: Vec<_> = t.cpu_weights(2).collect();
    assert_eq!(w, [(0, 20), (1, 52)]);
    assert_eq!(t.nearest_cpu(3), Some((1, 20)));
}

#[test]
fn indirect_links_qpi_cross_socket_blocked() {
    let t = snapshot(&two_socket_tree(5, 21, false));
    // GPU↔GPU across sockets over QPI with weight > 20: no link; same socket still linked.
    assert_eq!(derived(&t, 2), [(1, 41, Some(5)), (4, 40, Some(2))]);
    assert_eq!(derived(&t, 3), [(0, 41, Some(5))]);
    // QPI of weight 20 is allowed.
    let t = snapshot(&two_socket_tree(5, 20, false));
    assert_eq!(derived(&t, 2), [(1, 40, Some(5)), (3, 60, Some(5)), (4, 40, Some(2))]);
}

#[test]
fn no_indirect_links_when_p2p_reported_or_same_hive() {
    let t = snapshot(&two_socket_tree(1, 32, true));
    assert!(!t.has_derived_links());
    assert!(t.nodes().all(|n| n.derived_links().is_empty()));

    let mut fs = two_socket_tree(1, 32, false);
    for g in [2, 3] {
        fs.insert(&format!("nodes/{g}/properties"), gpu_props(false, 77, 1).as_bytes());
    }
    let t = snapshot(&fs);
    // 2 and 3 share hive 77: no derived link between them.
    assert_eq!(derived(&t, 2), [(1, 52, Some(1)), (4, 40, Some(2))]);
    assert_eq!(derived(&t, 3), [(0, 52, Some(1)), (4, 72, Some(1))]);
}

#[test]
fn no_indirect_link_to_gpu_without_public_frame_buffer() {
    let mut fs = two_socket_tree(1, 32, false);
    fs.insert("nodes/4/mem_banks/0/properties", b"heap_type 2\nsize_in_bytes 68702699520\n");
    let t = snapshot(&fs);
    assert_eq!(derived(&t, 2), [(1, 52, Some(1)), (3, 72, Some(1))]);
    assert_eq!(t.node(4).unwrap().vram_bytes(), Some(68702699520));
}

#[test]
fn eperm_node_is_inaccessible() {
    let mut fs = two_socket_tree(1, 32, true);
    fs.deny_node(3);
    let t = snapshot(&fs);
    assert_eq!(t.node_count(), 5);
    let n = t.node(3).unwrap();
    assert!(!n.is_accessible());
    assert_eq!(n.kind(), NodeKind::Gpu);
    assert_eq!(n.user_id(), None);
    assert_eq!(n.gpu_id(), None);
    assert_eq!(n.properties().present_count(), 0);
    assert!(n.io_links().is_empty());
    assert_eq!(t.gpu_count(), 2);
    // User ids are dense over accessible nodes, like libhsakmt's.
    let ids: Vec<_> = t.nodes().map(|n| n.user_id()).collect();
    assert_eq!(ids, [Some(0), Some(1), Some(2), None, Some(3)]);
    assert_eq!(t.node_by_user_id(3).unwrap().sysfs_id(), 4);
    assert!(t.warnings().is_empty(), "{:?}", t.warnings());
}

#[test]
fn eperm_on_an_entry_marks_the_node_inaccessible() {
    let mut fs = two_socket_tree(1, 32, true);
    fs.fail_file(
        SysfsFile::EntryProperties { node: 2, kind: EntryKind::IoLink, index: 0 },
        Errno::EPERM,
    );
    let t = snapshot(&fs);
    let n = t.node(2).unwrap();
    assert!(!n.is_accessible());
    assert_eq!(n.gpu_id(), Some(1002));
    assert_eq!(n.mem_banks().len(), 1);
    assert!(n.io_links().is_empty());
}

#[test]
fn missing_files_and_read_errors_are_warnings() {
    let mut fs = two_socket_tree(1, 32, true);
    fs.remove_file(SysfsFile::NodeProperties(4));
    fs.fail_file(SysfsFile::GpuId(3), Errno::EIO);
    fs.fail_dir(SysfsDir::Entries { node: 2, kind: EntryKind::Cache }, Errno::EIO);
    let t = snapshot_opts(&fs, &LIST);
    let n4 = t.node(4).unwrap();
    assert!(!n4.has_properties());
    assert_eq!(n4.kind(), NodeKind::Cpu); // no simd_count: reported as what it shows
    assert_eq!(t.node(3).unwrap().gpu_id(), None);
    let kinds: Vec<_> = t.warnings().iter().map(|w| (w.location, w.kind)).collect();
    assert!(
        kinds.contains(&(Location::File(SysfsFile::NodeProperties(4)), WarningKind::MissingFile))
    );
    assert!(
        kinds.contains(&(Location::File(SysfsFile::GpuId(3)), WarningKind::ReadFailed(Errno::EIO)))
    );
    assert!(kinds.contains(&(
        Location::Dir(SysfsDir::Entries { node: 2, kind: EntryKind::Cache }),
        WarningKind::ListFailed(Errno::EIO)
    )));
}

#[test]
fn numbering_gaps_and_count_mismatches() {
    let mut fs = two_socket_tree(1, 32, true);
    // Node 5 missing: nodes 0..4 then 6.
    fs.insert("nodes/6/gpu_id", b"0\n");
    fs.insert("nodes/6/properties", b"cpu_cores_count 1\nio_links_count 0\nmem_banks_count 1\n");
    // A bank directory 3 with no 0..2, and a directory without a properties file.
    fs.insert("nodes/6/mem_banks/3/properties", b"heap_type 0\n");
    fs.add_dir_entry(SysfsDir::Entries { node: 6, kind: EntryKind::MemBank }, 4);
    let t = snapshot(&fs);
    assert_eq!(t.node_count(), 6);
    assert_eq!(t.node(5).unwrap().sysfs_id(), 6);
    let n = t.node(5).unwrap();
    assert_eq!(n.mem_banks().len(), 2);
    assert_eq!(n.mem_banks()[0].index(), 3);
    assert_eq!(n.mem_banks()[1].properties().present_count(), 0);
    let has =
        |loc: Location, kind: WarningKind| t.warnings().contains(&Warning { location: loc, kind });
    assert!(has(
        Location::Dir(SysfsDir::Nodes),
        WarningKind::NumberingGap { expected: 5, found: 6 }
    ));
    let banks = Location::Dir(SysfsDir::Entries { node: 6, kind: EntryKind::MemBank });
    assert!(has(banks, WarningKind::NumberingGap { expected: 0, found: 3 }));
    assert!(has(
        banks,
        WarningKind::CountMismatch { key: NodeKey::MemBanksCount, reported: 1, found: 2 }
    ));
    assert!(has(
        Location::File(SysfsFile::EntryProperties { node: 6, kind: EntryKind::MemBank, index: 4 }),
        WarningKind::MissingFile
    ));
}

/// The warnings of `t` at `location`.
fn warnings_at(t: &Topo, location: Location) -> Vec<WarningKind> {
    t.warnings().iter().filter(|w| w.location == location).map(|w| w.kind).collect()
}

#[test]
fn trees_no_kernel_makes_are_warned_about() {
    let gpu = "simd_count 4\ncpu_cores_count 0\n";
    let mut fs = MemSysfs::new();
    fs.insert("generation_id", b"banana\n");
    for n in 0..5 {
        fs.insert(&format!("nodes/{n}/properties"), gpu.as_bytes());
    }
    fs.insert("nodes/0/gpu_id", b"4660\n");
    fs.insert("nodes/1/gpu_id", b"4660\n"); // a duplicate of node 0's
    fs.insert("nodes/2/gpu_id", b"0\n"); // a GPU with gpu_id 0
    fs.insert("nodes/3/gpu_id", b"4294967296\n"); // beyond %u
    fs.insert("nodes/0/name", b"caf\xe9\n"); // Latin-1, not UTF-8
    // 31 ASCII bytes and a 2-byte character across the 32-byte capacity: cut before it.
    fs.insert("nodes/1/name", "0123456789012345678901234567890é\n".as_bytes());
    fs.insert("nodes/4/properties", b"simd_count 4\ngfx_target_version 12345678\n");
    fs.insert("nodes/0/io_links/0/properties", b"type 2\nnode_from 0\nnode_to 0\n");
    fs.insert("nodes/0/io_links/1/properties", b"type 77\nnode_from 0\nnode_to 1\n");
    let t = snapshot(&fs);
    let at = |file| warnings_at(&t, Location::File(file));
    assert_eq!(
        at(SysfsFile::GenerationId),
        [WarningKind::MalformedNumber { problem: ValueProblem::NotDecimal }]
    );
    assert_eq!(
        at(SysfsFile::GpuId(1)),
        [WarningKind::DuplicateGpuId { gpu_id: 4660, first_node: 0 }]
    );
    assert_eq!(at(SysfsFile::GpuId(2)), [WarningKind::GpuIdZero]);
    assert_eq!(
        at(SysfsFile::GpuId(3)),
        [WarningKind::MalformedNumber { problem: ValueProblem::Overflow }]
    );
    assert_eq!(at(SysfsFile::Name(0)), [WarningKind::NameNotUtf8]);
    assert_eq!(t.node(0).unwrap().name(), None);
    assert_eq!(t.node(0).unwrap().name_bytes(), Some(&b"caf\xe9"[..]));
    assert_eq!(at(SysfsFile::Name(1)), [WarningKind::NameTooLong { len: 33 }]);
    assert_eq!(t.node(1).unwrap().name(), Some("0123456789012345678901234567890"));
    assert!(
        at(SysfsFile::NodeProperties(4))
            .contains(&WarningKind::ImpossibleGfxVersion { value: 12_345_678 })
    );
    assert_eq!(t.node(4).unwrap().gfx(), None, "no version is made up");
    let link = |index| SysfsFile::EntryProperties { node: 0, kind: EntryKind::IoLink, index };
    assert_eq!(at(link(0)), [WarningKind::SelfLink]);
    assert_eq!(at(link(1)), [WarningKind::UnknownLinkType { value: 77 }]);
    let words: Vec<String> = t.warnings().iter().map(ToString::to_string).collect();
    for want in [
        "generation_id: is not a decimal number",
        "nodes/1/gpu_id: gpu_id 4660 is also node 0's",
        "nodes/2/gpu_id: a GPU with gpu_id 0 cannot be reached",
        "nodes/3/gpu_id: does not fit 32 bits",
        "nodes/0/name: name is not UTF-8",
        "nodes/4/properties: gfx_target_version 12345678 is no gfx version",
        "nodes/0/io_links/0/properties: links the node to itself",
        "nodes/0/io_links/1/properties: link type 77 is not a known type",
    ] {
        assert!(words.iter().any(|w| w == want), "{want:?} in {words:#?}");
    }
}

#[test]
fn each_malformed_value_has_its_own_words() {
    let mut fs = MemSysfs::new();
    fs.insert("nodes/0/gpu_id", b"0\n");
    fs.insert(
        "nodes/0/properties",
        b"cpu_cores_count\nsimd_count x\nhive_id 18446744073709551616\nmystery 1x\n",
    );
    let t = snapshot(&fs);
    let words: Vec<String> = t.warnings().iter().map(|w| w.kind.to_string()).collect();
    for want in [
        "line 1: `cpu_cores_count` has no value",
        "line 2: `simd_count` is not a decimal number",
        "line 3: `hive_id` does not fit 64 bits",
        "line 4: the value of a key this library does not know is not a decimal number",
    ] {
        assert!(words.iter().any(|w| w == want), "{want:?} in {words:#?}");
    }
}

#[test]
fn malformed_content_is_flagged_not_invented() {
    let mut fs = MemSysfs::new();
    fs.insert("nodes/0/gpu_id", b"banana\n");
    fs.insert("nodes/0/name", b"a-name-that-is-far-longer-than-thirty-two-bytes\n");
    fs.insert(
        "nodes/0/properties",
        b"cpu_cores_count 4\r\n\nsimd_count 99999999999\ngarbage line\n \xff\n\
          simd_per_cu x\nhive_id 18446744073709551615\ncpu_cores_count 8\nfamily_id 42\n\
          gpu_family gfx115X\nnum_xcc",
    );
    fs.insert("nodes/0/io_links/0/properties", b"type 2\nnode_from 1\nnode_to 9\nweight 20\n");
    fs.insert("nodes/0/caches/0/properties", b"level 1\nsibling_map 1,0,1,\n");
    let t = snapshot(&fs);
    let n = t.node(0).unwrap();
    assert_eq!(n.gpu_id(), None);
    assert_eq!(n.name().unwrap().len(), NAME_CAPACITY);
    assert_eq!(n.cpu_cores_count(), Some(8)); // last value wins
    assert_eq!(n.simd_count(), None); // out of range for %u
    assert_eq!(n.get(NodeKey::SimdPerCu), None);
    assert_eq!(n.hive_id(), Some(u64::MAX));
    assert_eq!(n.num_xcc(), None);
    assert_eq!(n.kind(), NodeKind::Cpu);
    let unknown: Vec<_> =
        t.unknown_keys_of(Owner::Node { node: 0 }).map(|k| (k.name(), k.value())).collect();
    assert_eq!(unknown, [("family_id", 42)]);
    let c = &n.caches()[0];
    assert_eq!(c.sibling_map().unwrap().len(), 3);
    let got: Vec<WarningKind> = t.warnings().iter().map(|w| w.kind).collect();
    let want = [
        WarningKind::MissingFile, // generation_id
        WarningKind::MissingFile, // system_properties
        WarningKind::MalformedNumber { problem: ValueProblem::NotDecimal },
        WarningKind::NameTooLong { len: 47 },
        WarningKind::ValueOutOfRange {
            line: 3,
            key: KeyId::Node(NodeKey::SimdCount),
            value: 99999999999,
        },
        WarningKind::MalformedValue { line: 4, key: None, problem: ValueProblem::NotDecimal },
        WarningKind::MalformedLine { line: 5 },
        WarningKind::MalformedValue {
            line: 6,
            key: Some(KeyId::Node(NodeKey::SimdPerCu)),
            problem: ValueProblem::NotDecimal,
        },
        WarningKind::DuplicateKey { line: 8, key: KeyId::Node(NodeKey::CpuCoresCount) },
        WarningKind::MalformedValue { line: 10, key: None, problem: ValueProblem::NotDecimal },
        WarningKind::MalformedValue {
            line: 11,
            key: Some(KeyId::Node(NodeKey::NumXcc)),
            problem: ValueProblem::Missing,
        },
        WarningKind::MalformedSiblingMap { line: 2, entries: 3 },
        WarningKind::LinkFromMismatch { node_from: 1 },
        WarningKind::LinkTargetMissing { node_to: 9 },
    ];
    assert_eq!(got, want, "{:#?}", t.warnings());
    for w in t.warnings() {
        assert!(!w.to_string().is_empty());
    }
}

#[test]
fn long_sibling_map_is_counted_and_cut() {
    let mut fs = MemSysfs::new();
    fs.insert("nodes/0/properties", b"simd_count 4\n");
    let mut map = String::from("level 2\nsibling_map ");
    for i in 0..1024 {
        map.push_str(if i % 3 == 0 { "1," } else { "0," });
    }
    map.pop();
    map.push('\n');
    fs.insert("nodes/0/caches/0/properties", map.as_bytes());
    let t = snapshot(&fs);
    let m = t.node(0).unwrap().caches()[0].sibling_map().unwrap();
    assert_eq!((m.len(), m.stored_len(), m.is_truncated()), (1024, 256, true));
    assert_eq!(m.count_ones(), 86);
    assert_eq!(m.get(3), Some(true));
    assert_eq!(m.get(256), None);
    assert!(
        t.warnings().iter().any(|w| w.kind == WarningKind::SiblingMapTruncated { entries: 1024 })
    );
}

#[test]
fn unknown_gfx_gpu_is_flagged() {
    let mut fs = MemSysfs::new();
    fs.insert("nodes/0/properties", b"simd_count 4\ndevice_id 4660\n");
    let t = snapshot(&fs);
    let n = t.node(0).unwrap();
    assert_eq!(n.gfx(), None);
    assert_eq!(n.vgpr_size_per_cu(), None);
    assert!(
        t.warnings().iter().any(|w| w.kind == WarningKind::UnknownGfx { device_id: Some(4660) })
    );
}

#[test]
fn apu_and_zero_divisors() {
    let mut fs = MemSysfs::new();
    fs.insert(
        "nodes/0/properties",
        b"cpu_cores_count 4\nsimd_count 32\narray_count 2\nsimd_arrays_per_engine 0\nsimd_per_cu 0\n\
          gfx_target_version 90012\nnum_xcc 0\n",
    );
    let t = snapshot(&fs);
    let n = t.node(0).unwrap();
    assert_eq!(n.kind(), NodeKind::Apu);
    assert_eq!(n.shader_banks(), None);
    assert_eq!(n.cu_count(), None);
    assert_eq!(n.xcc_count(), Some(1));
    assert_eq!(n.gfx().unwrap().to_string(), "gfx90c");
    assert!(!t.is_dgpu_system());
    assert_eq!(t.gpu_count(), 1);
}

#[test]
fn no_nodes_is_an_error() {
    let fs = MemSysfs::from_files(&[
        ("generation_id", "1\n"),
        ("system_properties", "platform_rev 1\n"),
    ]);
    let err = try_snapshot(&fs, &TestHost::default()).unwrap_err();
    assert_eq!(err, Error::NoNodes);
    assert_eq!(err.kind(), ErrorKind::NoDevice);
    let mut fs = MemSysfs::new();
    fs.fail_dir(SysfsDir::Nodes, Errno::EACCES);
    let err = try_snapshot(&fs, &TestHost::default()).unwrap_err();
    assert_eq!(err, Error::ListFailed { dir: SysfsDir::Nodes, errno: Errno::EACCES });
    assert_eq!(err.kind(), ErrorKind::PermissionDenied);
}

#[test]
fn small_buffer_is_rejected() {
    let fs = MemSysfs::from_files(&[("nodes/0/properties", "simd_count 0\n")]);
    let mut t = boxed();
    let mut buf = [0u8; 100];
    let err = t.refresh(&fs, &TestHost::default(), &mut buf).unwrap_err();
    assert_eq!(err, Error::BufferTooSmall { len: 100, min: 4096 });
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

#[test]
fn one_read_per_file() {
    let fs = MemSysfs::from_dir(&profile_dir("mi308x-8gpu-cpx/topology"));
    let listed = snapshot_opts(&fs, &LIST);
    // Every file once, plus generation_id a second time.
    assert_eq!(fs.reads.get(), fs.file_count() + 1);
    // nodes/ once, four entry directories per node.
    assert_eq!(fs.lists.get(), 1 + 4 * listed.node_count());

    // The default trusts the counts of this consistent tree: only nodes/ is listed, and the
    // snapshot is the same.
    // Batched or not.
    for len in [MIN_READ_BUFFER, READ_BUFFER] {
        let fs = MemSysfs::from_dir(&profile_dir("mi308x-8gpu-cpx/topology"));
        let counted = snapshot_once(&fs, len);
        assert_eq!(fs.reads.get(), fs.file_count() + 1);
        assert_eq!(fs.lists.get(), 1);
        assert_eq!(counted.usage(), listed.usage());
        assert_eq!(counted.warnings(), listed.warnings());
    }
}

#[test]
fn refresh_in_place_reuses_and_replaces() {
    let big = MemSysfs::from_dir(&profile_dir("mi308x-8gpu-cpx/topology"));
    let small = MemSysfs::from_dir(&profile_dir("mi25-vega10-rocm18/topology"));
    let mut t = boxed();
    let mut buf = [0u8; 8192];
    let host = TestHost::default();
    t.refresh(&big, &host, &mut buf).unwrap();
    assert_eq!(t.node_count(), 34);
    t.refresh(&small, &host, &mut buf).unwrap();
    assert_eq!(t.node_count(), 2);
    assert_eq!(t.usage(), (2, 2, 96, 2));
    t.clear();
    assert!(t.is_empty());
}

fn snapshot_opts(sysfs: &impl Sysfs, options: &Options) -> Box<Topo> {
    let mut t = boxed();
    let mut buf = [0u8; MIN_READ_BUFFER];
    t.refresh_with(sysfs, &TestHost::default(), &mut buf, options).unwrap();
    t
}

const TRUST: Options =
    Options { entries: EntryEnumeration::TrustCounts, generation_retries: GENERATION_RETRIES };
const LIST: Options =
    Options { entries: EntryEnumeration::List, generation_retries: GENERATION_RETRIES };

#[test]
fn trust_counts_matches_listing_on_a_consistent_tree() {
    let fs = MemSysfs::from_dir(&profile_dir("mi308x-8gpu-cpx/topology"));
    let listed = snapshot_opts(&fs, &LIST);
    let lists_before = fs.lists.get();
    let reads_before = fs.reads.get();
    let trusted = snapshot_opts(&fs, &TRUST);
    // nodes/ only; the same files.
    assert_eq!(fs.lists.get() - lists_before, 1);
    assert_eq!(fs.reads.get() - reads_before, fs.file_count() + 1);
    assert_eq!(trusted.usage(), listed.usage());
    for (a, b) in listed.nodes().zip(trusted.nodes()) {
        assert_eq!(*a.node(), *b.node());
        assert_eq!(a.mem_banks(), b.mem_banks());
        assert_eq!(a.caches(), b.caches());
        assert_eq!(a.io_links(), b.io_links());
        assert_eq!(a.p2p_links(), b.p2p_links());
    }
    assert!(trusted.warnings().is_empty());
}

#[test]
fn trust_counts_on_an_incomplete_capture() {
    let fs = MemSysfs::from_dir(&profile_dir("mi210-8gpu-2hive/topology"));
    let t = snapshot_opts(&fs, &TRUST);
    // caches_count 217 and mem_banks_count 1 name files the capture lacks: flagged, no
    // records invented.
    assert!(t.nodes().all(|n| n.caches().is_empty() && n.mem_banks().is_empty()));
    assert_eq!(t.node(2).unwrap().io_links().len(), 4);
    assert_eq!(t.node(2).unwrap().p2p_links().len(), 5);
    // The first missing entry makes it list the directory instead, so the warnings are the
    // same as with listing: the counts disagree with what is there.
    let listed = snapshot_opts(&fs, &LIST);
    assert_eq!(t.warnings(), listed.warnings());
    assert!(t.warnings().iter().any(|w| matches!(w.kind, WarningKind::CountMismatch { .. })));
    // A count too large for any kernel is not trusted either.
    let fs = MemSysfs::from_files(&[
        ("nodes/0/properties", "caches_count 5000\n"),
        ("nodes/0/caches/0/properties", "level 1\n"),
    ]);
    let t = snapshot_opts(&fs, &TRUST);
    assert_eq!(t.node(0).unwrap().caches().len(), 1);
}

#[test]
fn trust_counts_lists_when_the_count_is_absent() {
    let fs = MemSysfs::from_dir(&profile_dir("mi25-vega10-rocm18/topology"));
    let t = snapshot_opts(&fs, &TRUST);
    // No p2p_links_count on this driver: p2p_links/ is listed (and empty).
    assert_eq!(fs.lists.get(), 1 + 2);
    assert_eq!(t.node(1).unwrap().caches().len(), 96);
}

// ------------------------------------------------------------------ generation retry

/// Wraps a tree; `generation_id` reads return min(read count, limit), so the first
/// `changes` walks see a change.
struct Flaky<'a> {
    inner: &'a MemSysfs,
    reads: core::cell::Cell<u32>,
    limit: u32,
}

impl<'a> Flaky<'a> {
    fn new(inner: &'a MemSysfs, changes: u32) -> Self {
        Self { inner, reads: core::cell::Cell::new(0), limit: (2 * changes).saturating_sub(1) }
    }
}

impl Sysfs for Flaky<'_> {
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
        if file == SysfsFile::GenerationId {
            let r = self.reads.get();
            self.reads.set(r + 1);
            let text = format!("{}\n", r.min(self.limit));
            buf[..text.len()].copy_from_slice(text.as_bytes());
            return Ok(text.len());
        }
        self.inner.read_file(file, buf)
    }
    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
        self.inner.list_dir(dir, out)
    }
}

#[test]
fn generation_change_retries_then_succeeds() {
    let fs = MemSysfs::from_dir(&profile_dir("mi25-vega10-rocm18/topology"));
    for changes in [0, 1, 3, GENERATION_RETRIES] {
        let flaky = Flaky::new(&fs, changes);
        let t = snapshot_once(&flaky, READ_BUFFER);
        assert_eq!(t.attempts(), changes + 1);
        assert_eq!(t.node_count(), 2);
        assert!(t.generation_id().is_some());
    }
}

/// Counts the walks the tree is told are over, and the reads since the last one.
struct WalkCounter<'a> {
    inner: &'a dyn Sysfs,
    done: core::cell::Cell<u32>,
    reads_since: core::cell::Cell<u32>,
}

impl Sysfs for WalkCounter<'_> {
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
        self.reads_since.set(self.reads_since.get() + 1);
        self.inner.read_file(file, buf)
    }
    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
        self.reads_since.set(self.reads_since.get() + 1);
        self.inner.list_dir(dir, out)
    }
    fn walk_done(&self) {
        self.done.set(self.done.get() + 1);
        self.reads_since.set(0);
    }
}

/// Every walk ends with one `walk_done`, after its last read: on success, after retries, and
/// when it fails.
#[test]
fn every_walk_ends_with_walk_done() {
    let fs = MemSysfs::from_dir(&profile_dir("mi25-vega10-rocm18/topology"));
    let flaky = Flaky::new(&fs, 2);
    let empty = MemSysfs::default();
    for (sysfs, ok) in [(&fs as &dyn Sysfs, true), (&flaky, true), (&empty, false)] {
        let counter = WalkCounter {
            inner: sysfs,
            done: core::cell::Cell::new(0),
            reads_since: core::cell::Cell::new(0),
        };
        let mut t = boxed();
        let mut buf = vec![0u8; READ_BUFFER];
        let r = t.refresh(&counter, &TestHost::default(), &mut buf);
        assert_eq!(r.is_ok(), ok, "{r:?}");
        assert_eq!(counter.done.get(), 1);
        assert_eq!(counter.reads_since.get(), 0, "no read after the walk ended");
    }
}

#[test]
fn generation_retries_are_configurable() {
    let fs = MemSysfs::from_dir(&profile_dir("mi25-vega10-rocm18/topology"));
    let flaky = Flaky::new(&fs, 1);
    let mut t = boxed();
    let mut buf = [0u8; MIN_READ_BUFFER];
    let once = Options { generation_retries: 0, ..Options::DEFAULT };
    assert_eq!(
        t.refresh_with(&flaky, &TestHost::default(), &mut buf, &once),
        Err(Error::Inconsistent { attempts: 1 })
    );
}

#[test]
fn generation_change_gives_up() {
    let fs = MemSysfs::from_dir(&profile_dir("mi25-vega10-rocm18/topology"));
    let flaky = Flaky::new(&fs, GENERATION_RETRIES + 1);
    let mut t = boxed();
    let mut buf = [0u8; MIN_READ_BUFFER];
    let err = t.refresh(&flaky, &TestHost::default(), &mut buf).unwrap_err();
    assert_eq!(err, Error::Inconsistent { attempts: GENERATION_RETRIES + 1 });
    assert_eq!(err.kind(), ErrorKind::Inconsistent);
    assert!(t.is_empty());
    assert_eq!(flaky.reads.get(), 2 * (GENERATION_RETRIES + 1));
}

// ------------------------------------------------------------------ capacity

/// The `Truncated` warning of `t`'s table `table`, as `(capacity, left out)`.
fn truncated<const N: usize, const B: usize, const C: usize, const L: usize>(
    t: &Topology<N, B, C, L>,
    table: Table,
) -> Option<(u32, u32)> {
    t.warnings().iter().find_map(|w| match w.kind {
        WarningKind::Truncated { table: t, capacity, left_out } if t == table => {
            Some((capacity, left_out))
        }
        _ => None,
    })
}

#[test]
fn a_tree_beyond_a_capacity_is_read_as_far_as_it_allows() {
    let fs = MemSysfs::from_dir(&profile_dir("mi308x-8gpu-cpx/topology"));
    let host = TestHost::default();
    let mut buf = [0u8; MIN_READ_BUFFER];

    // 34 nodes into 16: the lowest 16 are read, the rest counted.
    let mut t: Box<Topology<16>> = boxed_with();
    t.refresh(&fs, &host, &mut buf).unwrap();
    assert_eq!(t.node_count(), 16);
    assert_eq!(t.nodes().map(|n| n.sysfs_id()).collect::<Vec<_>>(), (0..16).collect::<Vec<_>>());
    assert_eq!(truncated(&t, Table::Nodes), Some((16, 18)));
    let w = t.warnings().iter().find(|w| matches!(w.kind, WarningKind::Truncated { .. })).unwrap();
    assert_eq!(w.to_string(), "nodes/: the `nodes` table is full (capacity 16): 18 left out");
    // Links to the nodes left out are not called missing.
    assert!(!t.warnings().iter().any(|w| matches!(w.kind, WarningKind::LinkTargetMissing { .. })));

    let mut t: Box<Topology<72, 8>> = boxed_with();
    t.refresh(&fs, &host, &mut buf).unwrap();
    assert_eq!(t.node_count(), 34);
    assert_eq!(truncated(&t, Table::MemBanks), Some((8, 26)));
    assert_eq!(t.nodes().filter(|n| !n.mem_banks().is_empty()).count(), 8);

    let mut t: Box<Topology<72, 64, 1000>> = boxed_with();
    t.refresh(&fs, &host, &mut buf).unwrap();
    assert_eq!(truncated(&t, Table::Caches), Some((1000, 472)));
    assert_eq!(t.usage().2, 1000);

    let mut t: Box<Topology<72, 64, 1600, 1000>> = boxed_with();
    t.refresh(&fs, &host, &mut buf).unwrap();
    assert_eq!(truncated(&t, Table::Links), Some((1000, 122)));
    // Every node's spans still lie in the pools.
    for n in t.nodes() {
        let _ = (n.io_links().len(), n.p2p_links().len(), n.caches().len());
    }

    // Exactly enough is enough: no warning.
    let mut t: Box<Topology<34, 34, 1472, 1122>> = boxed_with();
    t.refresh(&fs, &host, &mut buf).unwrap();
    assert_eq!(t.usage(), (34, 34, 1472, 1122));
    assert!(Table::ALL.iter().all(|table| truncated(&t, *table).is_none()));
}

#[test]
fn a_directory_beyond_the_listing_capacity_is_read_from_its_lowest_numbers() {
    let mut fs = MemSysfs::new();
    fs.insert("nodes/0/properties", b"cpu_cores_count 1\nsimd_count 0\n");
    let extra = 6;
    for i in 0..LISTING_CAPACITY + extra {
        fs.insert(&format!("nodes/0/caches/{i}/properties"), b"level 1\n");
    }
    let mut t: Box<Topology<4, 4, 2048, 16>> = boxed_with();
    let mut buf = [0u8; MIN_READ_BUFFER];
    t.refresh_with(&fs, &TestHost::default(), &mut buf, &LIST).unwrap();
    let caches = t.node(0).unwrap().caches();
    assert_eq!(caches.len(), LISTING_CAPACITY);
    assert_eq!(caches.last().unwrap().index(), (LISTING_CAPACITY - 1) as u32);
    assert_eq!(truncated(&t, Table::Listing), Some((LISTING_CAPACITY as u32, extra as u32)));
}

#[test]
fn derived_links_count_against_capacity() {
    let fs = two_socket_tree(1, 32, false);
    let host = TestHost::default();
    let mut buf = [0u8; MIN_READ_BUFFER];
    // 8 kernel links + 12 derived.
    let mut t: Box<Topology<8, 8, 8, 19>> = boxed_with();
    t.refresh(&fs, &host, &mut buf).unwrap();
    assert_eq!(truncated(&t, Table::Links), Some((19, 1)));
    let mut t: Box<Topology<8, 8, 8, 20>> = boxed_with();
    t.refresh(&fs, &host, &mut buf).unwrap();
    let derived: usize = t.nodes().map(|n| n.derived_links().len()).sum();
    assert_eq!(derived, 12);
}

#[test]
fn warnings_and_unknown_keys_are_bounded() {
    let mut fs = MemSysfs::new();
    let mut props = String::new();
    for i in 0..100 {
        props.push_str(&format!("bad{i}\nextra_key_{i} {i}\n"));
    }
    props.push_str("a_key_name_that_is_longer_than_32_bytes 1\n");
    fs.insert("nodes/0/properties", props.as_bytes());
    let t: Box<Topology<4, 4, 4, 4, 8, 16>> = {
        let mut t = boxed_with();
        let mut buf = [0u8; MIN_READ_BUFFER];
        t.refresh(&fs, &TestHost::default(), &mut buf).unwrap();
        t
    };
    assert_eq!(t.warnings().len(), 16);
    assert_eq!(t.warnings_dropped(), 104 - 16);
    assert_eq!(t.unknown_keys().len(), 8);
    assert_eq!(t.unknown_keys_dropped(), 93);
    assert_eq!(t.unknown_keys()[7].name(), "extra_key_7");
}

// ------------------------------------------------------------------ gfx override

fn one_gpu(extra: &str) -> MemSysfs {
    let mut fs = MemSysfs::new();
    fs.insert("nodes/0/properties", b"cpu_cores_count 8\n");
    fs.insert(
        "nodes/1/properties",
        format!("simd_count 80\ngfx_target_version 90402\n{extra}").as_bytes(),
    );
    fs.insert("nodes/2/properties", b"simd_count 80\ngfx_target_version 110001\n");
    fs
}

#[test]
fn gfx_override_global_and_per_node() {
    let fs = one_gpu("");
    let t = snapshot_with(&fs, &TestHost::with(&[("HSA_OVERRIDE_GFX_VERSION", "9.0.10")]));
    for i in [1, 2] {
        let n = t.node(i).unwrap();
        assert_eq!(n.gfx_override().unwrap().to_string(), "gfx90a");
        assert_eq!(n.effective_gfx().unwrap().to_string(), "gfx90a");
    }
    assert_eq!(t.node(1).unwrap().gfx().unwrap().to_string(), "gfx942");
    // Register sizes follow the real version, as in libhsakmt.
    assert_eq!(t.node(2).unwrap().vgpr_size_per_cu(), Some(0x60000));
    assert_eq!(t.node(0).unwrap().gfx_override(), None);

    // The per-node variable (user node id 2) wins over the global one.
    let host = TestHost::with(&[
        ("HSA_OVERRIDE_GFX_VERSION", "9.0.10"),
        ("HSA_OVERRIDE_GFX_VERSION_2", "11.0.0"),
    ]);
    let t = snapshot_with(&fs, &host);
    assert_eq!(t.node(1).unwrap().effective_gfx().unwrap().to_string(), "gfx90a");
    assert_eq!(t.node(2).unwrap().effective_gfx().unwrap().to_string(), "gfx1100");

    let t = snapshot_with(&fs, &TestHost::default());
    assert_eq!(t.node(2).unwrap().gfx_override(), None);
    assert_eq!(t.node(2).unwrap().effective_gfx().unwrap().to_string(), "gfx1101");
}

#[test]
fn gfx_override_malformed_is_an_error() {
    let fs = one_gpu("");
    for (var, value, node, reason) in [
        ("HSA_OVERRIDE_GFX_VERSION", "gfx90a", None, OverrideError::Syntax),
        ("HSA_OVERRIDE_GFX_VERSION", "9.0", None, OverrideError::Syntax),
        ("HSA_OVERRIDE_GFX_VERSION", "64.0.0", None, OverrideError::OutOfRange),
        ("HSA_OVERRIDE_GFX_VERSION_1", "9.0.0.0", Some(1), OverrideError::Syntax),
        ("HSA_OVERRIDE_GFX_VERSION_2", "9.300.0", Some(2), OverrideError::OutOfRange),
        (
            "HSA_OVERRIDE_GFX_VERSION",
            "1111111111111111111111111111111111.0.0",
            None,
            OverrideError::Syntax,
        ),
    ] {
        let err = try_snapshot(&fs, &TestHost::with(&[(var, value)])).unwrap_err();
        assert_eq!(err, Error::GfxOverride { node, reason }, "{var}={value}");
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains("HSA_OVERRIDE_GFX_VERSION"));
    }
    // A malformed global variable is not read when every GPU has its own.
    let host = TestHost::with(&[
        ("HSA_OVERRIDE_GFX_VERSION", "junk"),
        ("HSA_OVERRIDE_GFX_VERSION_1", "9.0.0"),
        ("HSA_OVERRIDE_GFX_VERSION_2", "9.0.0"),
    ]);
    assert!(try_snapshot(&fs, &host).is_ok());
    // ... nor on a CPU-only system.
    let cpu = MemSysfs::from_files(&[("nodes/0/properties", "cpu_cores_count 2\n")]);
    assert!(try_snapshot(&cpu, &TestHost::with(&[("HSA_OVERRIDE_GFX_VERSION", "junk")])).is_ok());
}

#[test]
fn gfx_override_uses_user_node_ids() {
    let mut fs = one_gpu("");
    fs.insert("nodes/0/properties", b"simd_count 80\ngfx_target_version 90402\n");
    fs.deny_node(0);
    // Node 0 is hidden: sysfs node 2 is user node 1.
    let t = snapshot_with(&fs, &TestHost::with(&[("HSA_OVERRIDE_GFX_VERSION_1", "10.3.0")]));
    assert_eq!(t.node(2).unwrap().user_id(), Some(1));
    assert_eq!(t.node(2).unwrap().gfx_override().unwrap().to_string(), "gfx1030");
    assert_eq!(t.node(1).unwrap().gfx_override(), None);
}

// ------------------------------------------------------------------ key metadata

#[test]
fn report_writer_can_walk_every_key_in_kernel_order() {
    let fs = MemSysfs::from_dir(&profile_dir("mi308x-8gpu-cpx/topology"));
    let t = snapshot(&fs);
    let n = t.node(2).unwrap();
    let text = std::fs::read_to_string(profile_dir("mi308x-8gpu-cpx/topology/nodes/2/properties"))
        .unwrap();
    let mut out = String::new();
    for k in NodeKey::ALL {
        if let Some(v) = n.get(*k) {
            out.push_str(&format!("{} {v}\n", k.name()));
        }
    }
    // The kernel's own order and values, byte for byte.
    assert_eq!(out, text);
    let text = std::fs::read_to_string(profile_dir(
        "mi308x-8gpu-cpx/topology/nodes/2/caches/45/properties",
    ))
    .unwrap();
    let c = &n.caches()[45];
    let mut out = String::new();
    for k in CacheKey::ALL {
        match k {
            CacheKey::SiblingMap => {
                let bits: Vec<&str> =
                    c.sibling_map().unwrap().iter().map(|b| if b { "1" } else { "0" }).collect();
                out.push_str(&format!("sibling_map {}\n", bits.join(",")));
            }
            _ => out.push_str(&format!("{} {}\n", k.name(), c.get(*k).unwrap())),
        }
    }
    assert_eq!(out, text);
}

// ------------------------------------------------------------------ properties

mod props {
    use super::*;
    use proptest::prelude::*;

    /// A line: a known node key, another key, or garbage that is never a known key.
    #[derive(Debug, Clone)]
    enum L {
        Known(usize, u64),
        Other(String, u64),
        Garbage(Vec<u8>),
    }

    fn line() -> impl Strategy<Value = L> {
        prop_oneof![
            4 => (0..NodeKey::COUNT, prop_oneof![0..=u64::from(u32::MAX), any::<u64>()])
                .prop_map(|(k, v)| L::Known(k, v)),
            1 => ("[a-z][a-z0-9_]{0,40}", any::<u64>()).prop_map(|(k, v)| L::Other(k, v)),
            // Starts with a blank or a non-ASCII/control byte: never a key. (A line starting
            // with '#' is a printable key like any other, so it is not garbage.)
            1 => (prop::sample::select(&[b' ', b'\t', 0xff, 0x01][..]), proptest::collection::vec(any::<u8>(), 0..40))
                .prop_map(|(first, rest)| L::Garbage([&[first][..], &rest].concat())),
        ]
    }

    fn render(lines: &[L], crlf: bool) -> Vec<u8> {
        let eol: &[u8] = if crlf { b"\r\n" } else { b"\n" };
        let mut out = Vec::new();
        for l in lines {
            match l {
                L::Known(k, v) => {
                    out.extend_from_slice(format!("{} {v}", NodeKey::ALL[*k].name()).as_bytes())
                }
                L::Other(k, v) => out.extend_from_slice(format!("{k} {v}").as_bytes()),
                L::Garbage(g) => out.extend(g.iter().copied().filter(|b| *b != b'\n')),
            }
            out.extend_from_slice(eol);
        }
        out
    }

    /// What the snapshot must hold after reading `lines`: known key → last value that fits
    /// its width; other keys (in order) with their values.
    fn expected(lines: &[L]) -> (BTreeMap<NodeKey, u64>, Vec<(String, u64)>) {
        let mut known = BTreeMap::new();
        let mut other = Vec::new();
        for l in lines {
            let (key, v) = match l {
                L::Known(k, v) => (NodeKey::ALL[*k], *v),
                L::Other(name, v) => match NodeKey::from_name(name.as_bytes()) {
                    Some(k) => (k, *v),
                    None => {
                        other.push((name.clone(), *v));
                        continue;
                    }
                },
                L::Garbage(_) => continue,
            };
            if key.width() == Some(Width::U64) || v <= u64::from(u32::MAX) {
                known.insert(key, v);
            }
        }
        (known, other)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Every well-formed `key value` line lands in the snapshot under its own name (the
        /// last value of a repeated key, nothing for a value too wide for `%u`), every other
        /// key is absent, and garbage never panics.
        #[test]
        fn well_formed_lines_are_kept(lines in proptest::collection::vec(line(), 0..60), crlf: bool) {
            let mut fs = MemSysfs::new();
            fs.insert("nodes/0/properties", &render(&lines, crlf));
            let t = snapshot(&fs);
            let n = t.node(0).unwrap();
            let (known, other) = expected(&lines);
            for key in NodeKey::ALL {
                prop_assert_eq!(n.get(*key), known.get(key).copied(), "{}", key.name());
            }
            let stored: Vec<(String, u64)> = t
                .unknown_keys_of(Owner::Node { node: 0 })
                .map(|k| (k.name().to_string(), k.value()))
                .collect();
            let fitting: Vec<(String, u64)> = other
                .iter()
                .filter(|(k, _)| k.len() <= UNKNOWN_KEY_NAME_CAPACITY)
                .take(DEFAULT_UNKNOWN_KEYS)
                .cloned()
                .collect();
            prop_assert_eq!(stored, fitting);
        }

        /// Well-formed entry files of a random tree come back in the right node and entry.
        #[test]
        fn tree_entries_round_trip(
            shape in proptest::collection::vec((0usize..4, 0usize..4, 0usize..4), 1..6),
            seed in any::<u32>(),
        ) {
            let mut fs = MemSysfs::new();
            let mut want: Vec<(u32, EntryKind, u32, u64)> = Vec::new();
            for (node, (banks, caches, links)) in shape.iter().enumerate() {
                let node = node as u32;
                fs.insert(&format!("nodes/{node}/properties"), format!("cpu_cores_count {node}\n").as_bytes());
                for (kind, count) in [(EntryKind::MemBank, banks), (EntryKind::Cache, caches), (EntryKind::IoLink, links), (EntryKind::P2pLink, links)] {
                    for i in 0..*count as u32 {
                        let v = u64::from(seed ^ (node << 8) ^ (i << 4) ^ kind as u32);
                        let text = match kind {
                            EntryKind::MemBank => format!("heap_type 0\nsize_in_bytes {v}\n"),
                            EntryKind::Cache => format!("level {v}\nsibling_map 1,0\n"),
                            _ => format!("type 2\nnode_from {node}\nnode_to 0\nweight {v}\n"),
                        };
                        fs.insert_file(SysfsFile::EntryProperties { node, kind, index: i }, text.as_bytes());
                        want.push((node, kind, i, v));
                    }
                }
            }
            let t = snapshot(&fs);
            prop_assert_eq!(t.node_count(), shape.len());
            for (node, kind, i, v) in want {
                let n = t.node(node as usize).unwrap();
                let got = match kind {
                    EntryKind::MemBank => n.mem_banks()[i as usize].get(MemBankKey::SizeInBytes),
                    EntryKind::Cache => n.caches()[i as usize].get(CacheKey::Level),
                    EntryKind::IoLink => n.io_links()[i as usize].get(LinkKey::Weight),
                    EntryKind::P2pLink => n.p2p_links()[i as usize].get(LinkKey::Weight),
                };
                prop_assert_eq!(got, Some(v));
            }
        }

        /// Arbitrary bytes in every file of a small tree never panic and never invent nodes.
        #[test]
        fn arbitrary_trees_do_not_panic(
            nodes in proptest::collection::btree_set(0u32..12, 1..6),
            files in proptest::collection::vec((0usize..6, 0u8..8, 0u32..4, proptest::collection::vec(any::<u8>(), 0..200)), 0..40),
            deny in proptest::option::of(0u32..12),
            env in proptest::option::of("[0-9.a]{0,12}"),
        ) {
            let mut fs = MemSysfs::new();
            let ids: Vec<u32> = nodes.iter().copied().collect();
            for id in &ids {
                fs.insert(&format!("nodes/{id}/properties"), b"");
            }
            for (n, which, idx, bytes) in &files {
                let node = ids[n % ids.len()];
                let file = match which {
                    0 => SysfsFile::GpuId(node),
                    1 => SysfsFile::Name(node),
                    2 => SysfsFile::NodeProperties(node),
                    3 => SysfsFile::GenerationId,
                    4 => SysfsFile::SystemProperties,
                    k => SysfsFile::EntryProperties { node, kind: EntryKind::ALL[(*k as usize) % 4], index: *idx },
                };
                fs.insert_file(file, bytes);
            }
            if let Some(d) = deny { fs.deny_node(d); }
            let host = match &env {
                Some(v) => TestHost::with(&[("HSA_OVERRIDE_GFX_VERSION", v.as_str())]),
                None => TestHost::default(),
            };
            let mut t: Box<Topology<8, 16, 16, 32>> = boxed_with();
            let mut buf = [0u8; MIN_READ_BUFFER];
            match t.refresh(&fs, &host, &mut buf) {
                Ok(()) => {
                    prop_assert_eq!(t.node_count(), ids.len());
                    for n in t.nodes() {
                        let _ = (n.kind(), n.gfx(), n.vram_bytes(), n.shader_banks(), n.cu_count());
                        let _ = t.nearest_cpu(n.index());
                        for l in n.links() { let _ = l.weight(); }
                    }
                    for w in t.warnings() { let _ = w.to_string(); }
                }
                Err(e) => prop_assert!(matches!(e, Error::GfxOverride { .. }), "{e:?}"),
            }
        }
    }
}

// ------------------------------------------------------------------ cost

/// A `Sysfs` over a directory on disk with std (the shape of hsakmt-linux's).
struct DiskSysfs {
    root: std::path::PathBuf,
}

impl DiskSysfs {
    fn path(&self, file: SysfsFile) -> std::path::PathBuf {
        let rel = match file {
            SysfsFile::GenerationId => "generation_id".to_string(),
            SysfsFile::SystemProperties => "system_properties".to_string(),
            SysfsFile::GpuId(n) => format!("nodes/{n}/gpu_id"),
            SysfsFile::Name(n) => format!("nodes/{n}/name"),
            SysfsFile::NodeProperties(n) => format!("nodes/{n}/properties"),
            SysfsFile::EntryProperties { node, kind, index } => {
                format!("nodes/{node}/{}/{index}/properties", kind.dir_name())
            }
        };
        self.root.join(rel)
    }
}

impl Sysfs for DiskSysfs {
    fn read_file(&self, file: SysfsFile, buf: &mut [u8]) -> Result<usize, Errno> {
        use std::io::Read;
        let mut f = std::fs::File::open(self.path(file)).map_err(|_| Errno::ENOENT)?;
        // sysfs returns a whole attribute in one read.
        f.read(buf).map_err(|_| Errno::EIO)
    }
    fn list_dir(&self, dir: SysfsDir, out: &mut [u32]) -> Result<usize, Errno> {
        let p = match dir {
            SysfsDir::Nodes => self.root.join("nodes"),
            SysfsDir::Entries { node, kind } => {
                self.root.join(format!("nodes/{node}/{}", kind.dir_name()))
            }
        };
        let Ok(rd) = std::fs::read_dir(p) else { return Ok(0) };
        let mut total = 0;
        for e in rd.flatten() {
            if let Some(v) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) {
                if let Some(slot) = out.get_mut(total) {
                    *slot = v;
                }
                total += 1;
            }
        }
        Ok(total)
    }
}

/// Snapshot cost against a plain open+read+close of the same files (run with
/// `cargo test --release -p hsakmt-core -- --ignored --nocapture snapshot_cost`).
#[test]
#[ignore = "timing; run in release by hand"]
fn snapshot_cost_vs_plain_reads() {
    use std::io::Read;
    let root = profile_dir("mi308x-8gpu-cpx/topology");
    let mem = MemSysfs::from_dir(&root);
    let files: Vec<std::path::PathBuf> = {
        let disk = DiskSysfs { root: root.clone() };
        let mut v: Vec<_> = mem.files().values().map(|f| disk.path(*f)).collect();
        v.push(disk.path(SysfsFile::GenerationId));
        v
    };
    let disk = DiskSysfs { root };
    let mut t = boxed();
    let host = TestHost::default();
    let mut buf = [0u8; MIN_READ_BUFFER];
    let rounds = 200;
    let best = |f: &mut dyn FnMut()| {
        let mut best = std::time::Duration::MAX;
        for _ in 0..rounds {
            let s = std::time::Instant::now();
            f();
            best = best.min(s.elapsed());
        }
        best
    };
    let plain = best(&mut || {
        for p in &files {
            let mut f = std::fs::File::open(p).unwrap();
            let _ = f.read(&mut buf).unwrap();
        }
    });
    let snap = best(&mut || t.refresh(&disk, &host, &mut buf).unwrap());
    let opts = Options { entries: EntryEnumeration::TrustCounts, ..Options::DEFAULT };
    let trusted = best(&mut || t.refresh_with(&disk, &host, &mut buf, &opts).unwrap());
    std::println!(
        "trust counts: snapshot {trusted:?} (ratio {:.2})",
        trusted.as_secs_f64() / plain.as_secs_f64()
    );
    let dirs: Vec<SysfsDir> = std::iter::once(SysfsDir::Nodes)
        .chain((0..34).flat_map(|node| EntryKind::ALL.map(|kind| SysfsDir::Entries { node, kind })))
        .collect();
    let mut ids = [0u32; LISTING_CAPACITY];
    let listing = best(&mut || {
        for d in &dirs {
            disk.list_dir(*d, &mut ids).unwrap();
        }
    });
    let paths = best(&mut || {
        for f in mem.files().values() {
            let _ = disk.path(*f);
        }
    });
    std::println!("listing {} dirs {listing:?}; building paths {paths:?}", dirs.len());
    let parse_only = best(&mut || t.refresh(&mem, &host, &mut buf).unwrap());
    std::println!(
        "{} files: plain {plain:?}, snapshot {snap:?} (ratio {:.2}), snapshot from memory {parse_only:?}",
        files.len(),
        snap.as_secs_f64() / plain.as_secs_f64()
    );
}

#[test]
#[ignore = "timing; run in release by hand"]
fn parse_cost_breakdown() {
    let mem = MemSysfs::from_dir(&profile_dir("mi308x-8gpu-cpx/topology"));
    let mut contents: Vec<Vec<u8>> = Vec::new();
    let mut buf = [0u8; MIN_READ_BUFFER];
    for f in mem.files().values() {
        let n = mem.read_file(*f, &mut buf).unwrap();
        contents.push(buf[..n].to_vec());
    }
    let total: usize = contents.iter().map(Vec::len).sum();
    let rounds = 200;
    let mut best = std::time::Duration::MAX;
    let mut sink = 0u64;
    for _ in 0..rounds {
        let s = std::time::Instant::now();
        for c in &contents {
            for item in super::parse::Lines::new(c) {
                if let super::parse::Item::Line(l) = item {
                    sink = sink.wrapping_add(l.value.unwrap_or(1));
                    sink = sink.wrapping_add(NodeKey::from_name(l.key).map_or(0, |k| k as u64));
                }
            }
        }
        best = best.min(s.elapsed());
    }
    let mut lines_only = std::time::Duration::MAX;
    for _ in 0..rounds {
        let s = std::time::Instant::now();
        for c in &contents {
            for item in super::parse::Lines::new(c) {
                if let super::parse::Item::Line(l) = item {
                    sink = sink.wrapping_add(l.value.unwrap_or(1)).wrapping_add(l.key.len() as u64);
                }
            }
        }
        lines_only = lines_only.min(s.elapsed());
    }
    let mut keys: Vec<&[u8]> = Vec::new();
    for c in &contents {
        for item in super::parse::Lines::new(c) {
            if let super::parse::Item::Line(l) = item {
                keys.push(l.key);
            }
        }
    }
    let mut lookups = std::time::Duration::MAX;
    for _ in 0..rounds {
        let s = std::time::Instant::now();
        for k in &keys {
            sink = sink.wrapping_add(NodeKey::from_name(k).map_or(0, |k| k as u64));
        }
        lookups = lookups.min(s.elapsed());
    }
    std::println!("lines only {lines_only:?}; {} lookups {lookups:?}", keys.len());
    let mut lookup = std::time::Duration::MAX;
    let all: Vec<SysfsFile> = mem.files().values().copied().collect();
    for _ in 0..rounds {
        let s = std::time::Instant::now();
        for f in &all {
            let n = mem.read_file(*f, &mut buf).unwrap();
            sink = sink.wrapping_add(n as u64);
        }
        lookup = lookup.min(s.elapsed());
    }
    let mut t = boxed();
    let host = TestHost::default();
    let mut snap = std::time::Duration::MAX;
    for _ in 0..rounds {
        let s = std::time::Instant::now();
        t.refresh(&mem, &host, &mut buf).unwrap();
        snap = snap.min(s.elapsed());
    }
    std::println!(
        "{} files, {total} bytes: lines+lookup {best:?}; MemSysfs reads {lookup:?}; \
         snapshot from MemSysfs {snap:?} ({sink})",
        contents.len()
    );
}

#[test]
fn batched_reads_stop_at_a_failure_like_single_reads() {
    let tree = || MemSysfs::from_dir(&profile_dir("mi308x-8gpu-cpx/topology"));
    let entry = |index| SysfsFile::EntryProperties { node: 5, kind: EntryKind::IoLink, index };
    let full = snapshot(&tree()).node(5).unwrap().io_links().len();
    assert_eq!(full, 32);

    // The file of an entry the count names is missing in the middle of a batch: the kind is
    // listed instead (the directory is there, empty), the same way with either buffer
    // (`try_snapshot` compares them).
    let mut fs = tree();
    fs.remove_file(entry(7));
    let t = snapshot(&fs);
    let links = t.node(5).unwrap().io_links();
    assert_eq!(links.len(), full);
    assert_eq!(links[7].properties().present_count(), 0);
    assert_eq!(links[8].properties().node_to(), Some(10)); // nodes/5/io_links/8 of the capture
    let missing = Warning { location: Location::File(entry(7)), kind: WarningKind::MissingFile };
    assert_eq!(t.warnings(), [missing]);

    // EPERM in the middle of a batch: the node is inaccessible, nothing after it is read.
    let mut fs = tree();
    fs.fail_file(entry(9), Errno::EPERM);
    let t = snapshot(&fs);
    assert!(!t.node(5).unwrap().is_accessible());
    fs.reads.set(0);
    let one = snapshot_once(&fs, MIN_READ_BUFFER);
    let reads = fs.reads.get();
    fs.reads.set(0);
    let many = snapshot_once(&fs, READ_BUFFER);
    assert_eq!(fs.reads.get(), reads, "batching read a file a single read would not");
    assert!(*one == *many);
}

#[test]
fn a_file_longer_than_a_page_is_truncated_whatever_the_buffer() {
    let long = format!("{}size_in_bytes 7\n", "x 1\n".repeat(1100));
    let fs = MemSysfs::from_files(&[
        ("nodes/0/properties", "mem_banks_count 1\n"),
        ("nodes/0/mem_banks/0/properties", long.as_str()),
    ]);
    // `try_snapshot` (behind `snapshot`) takes it with a page and with a larger buffer.
    let t = snapshot(&fs);
    let file = SysfsFile::EntryProperties { node: 0, kind: EntryKind::MemBank, index: 0 };
    assert!(
        t.warnings().contains(&Warning {
            location: Location::File(file),
            kind: WarningKind::MaybeTruncated
        })
    );
}
