//! Expectations of AMD's KFD test suite (kfdtest) that the other scenario files do not already
//! check, against the simulator over every embedded topology capture: the topology basics per
//! node kind, invalid node ids and "null outputs", memory heaps of dGPUs, io_link 0 of each
//! node, and the bank / cache / link counts. `firmware-tests/README.md` maps every kfdtest
//! expectation to the test that checks it.

use firmware_tests::{device, opened, sim, snapshot};
use hsakmt_core::device::queue_manager::{QueueDesc, QueueError, QueueType};
use hsakmt_core::device::{Error, MapNodes};
use hsakmt_core::error::{Error as _, ErrorKind};
use hsakmt_core::event::{Timeout, WaitMode, WaitSet};
use hsakmt_core::memory::svm_attributes::SvmAttribute;
use hsakmt_core::memory::{self, MemFlags};
use hsakmt_core::topology::{self, HeapType, NodeKind, Topology};
use hsakmt_sim::{SimPlatform, profile_names};

const HOST: MemFlags = MemFlags::NON_PAGED.union(MemFlags::HOST_ACCESS);

/// Every embedded profile's snapshot, with its name.
fn profiles() -> Vec<(&'static str, Box<Topology>)> {
    profile_names().into_iter().map(|name| (name, snapshot(&sim(name)))).collect()
}

/// `KFDTopologyTest.BasicTest`: GPU nodes have compute cores, a firmware version, a gfx major
/// of at least 7 (minor below 10) and an SDMA firmware; CPU-only nodes have CPU cores; every
/// node has a memory bank — where the capture recorded them.
#[test]
fn kfdtest_topology_basic_test_per_node_kind() {
    let mut checked = (0, 0);
    for (name, topo) in profiles() {
        for v in topo.nodes() {
            let n = v.node();
            let at = format!("{name} node {}", n.sysfs_id());
            if !n.has_properties() {
                continue;
            }
            match n.kind() {
                // The CPU-only capture is a listing without file contents.
                NodeKind::Cpu => {
                    if let Some(cores) = n.cpu_cores_count() {
                        assert!(cores > 0, "{at}: CPU cores");
                        checked.0 += 1;
                    }
                }
                NodeKind::Gpu | NodeKind::Apu => {
                    assert!(n.simd_count().unwrap_or(0) > 0, "{at}: compute cores");
                    assert!(n.ucode_version().unwrap_or(0) > 0, "{at}: EngineId.uCode");
                    assert!(n.sdma_ucode_version().unwrap_or(0) > 0, "{at}: uCodeSDMA");
                    let gfx = n.gfx().unwrap_or_else(|| panic!("{at}: gfx version"));
                    assert!(gfx.major >= 7, "{at}: gfx major {}", gfx.major);
                    assert!(gfx.minor < 10, "{at}: gfx minor {}", gfx.minor);
                    checked.1 += 1;
                }
            }
            // NumMemoryBanks > 0 (mi210's capture counts banks it did not record).
            if let Some(count) = n.properties().mem_banks_count() {
                assert!(count > 0, "{at}: mem_banks_count");
            }
        }
    }
    assert!(checked.0 >= 3 && checked.1 >= 40, "nodes checked: {checked:?}");
}

/// `GetNodeMemoryProperties` / `GetNodeCacheProperties` / `GetNodeIoLinkProperties` with the
/// counts the node reports: every bank, cache and link the properties count is there.
#[test]
fn kfdtest_bank_cache_and_link_counts_match_the_node() {
    for (name, topo) in profiles() {
        for v in topo.nodes() {
            let n = v.node();
            let at = format!("{name} node {}", n.sysfs_id());
            let p = n.properties();
            // Entries are not captured everywhere (mi210's banks and 217 caches are absent).
            if let Some(c) = p.mem_banks_count()
                && !v.mem_banks().is_empty()
            {
                assert_eq!(v.mem_banks().len(), c as usize, "{at}: banks");
            }
            if let Some(c) = p.caches_count()
                && !v.caches().is_empty()
            {
                assert_eq!(v.caches().len(), c as usize, "{at}: caches");
            }
            if let Some(c) = p.io_links_count() {
                assert_eq!(v.io_links().len(), c as usize, "{at}: io_links");
            }
        }
    }
}

/// `KFDTopologyTest.GpuvmApertureValidate`: every dGPU reports a frame-buffer heap (public or
/// private) — on the captures that recorded their banks.
#[test]
fn kfdtest_every_dgpu_reports_a_frame_buffer_heap() {
    let mut dgpus = 0;
    for (name, topo) in profiles() {
        for v in topo.nodes().filter(|v| v.node().kind() == NodeKind::Gpu) {
            if v.mem_banks().is_empty() {
                continue;
            }
            let fb = v.mem_banks().iter().any(|b| {
                matches!(
                    b.heap_type(),
                    Some(HeapType::FrameBufferPublic | HeapType::FrameBufferPrivate)
                )
            });
            assert!(fb, "{name} node {}: no frame-buffer heap", v.node().sysfs_id());
            assert!(v.vram_bytes().unwrap_or(0) > 0);
            dgpus += 1;
        }
    }
    assert!(dgpus >= 33, "dGPUs with banks: {dgpus}");
}

/// `KFDTopologyTest.GetNodeIoLinkProperties`: the first io_link of a node starts at that node.
#[test]
fn kfdtest_io_link_zero_starts_at_its_own_node() {
    let mut nodes = 0;
    for (name, topo) in profiles() {
        for v in topo.nodes() {
            let Some(first) = v.io_links().first() else { continue };
            assert_eq!(
                first.node_from(),
                Some(v.node().sysfs_id()),
                "{name} node {}",
                v.node().sysfs_id()
            );
            nodes += 1;
        }
    }
    assert!(nodes >= 40, "nodes with io_links: {nodes}");
}

/// `KFDTopologyTest.GetNodePropertiesInvalidNodeNum`: a node id one past the last names nothing,
/// and every operation given such a node (or a CPU node where a GPU is needed) fails with an
/// error of kind `InvalidNode` before reaching the kernel.
#[test]
fn kfdtest_invalid_node_ids_are_refused() {
    let kfd = opened(SimPlatform::new());
    let count = kfd.with_topology(|t| t.node_count()).unwrap() as u32;
    let gpu = kfd.gpu_nodes().unwrap().first().unwrap();
    assert!(kfd.with_topology(|t| t.node_by_user_id(count).is_none()).unwrap());
    let calls = kfd.platform().total_ioctl_calls();
    let user = hsakmt_hostmem::reserve(None, 4096, 4096).unwrap();
    let _backing = hsakmt_hostmem::map_anonymous(user, 4096).unwrap();
    for bad in [count, 999] {
        let device: [(&str, Result<(), Error>); 6] = [
            ("alloc", kfd.alloc_memory(bad, 4096, HOST).map(drop)),
            ("available memory", kfd.available_memory(bad).map(drop)),
            ("clock counters", kfd.clock_counters(bad).map(drop)),
            ("peer nodes", kfd.peer_nodes(bad).map(drop)),
            ("register to nodes", kfd.register_memory_to_nodes(user, 4096, &[bad]).map(drop)),
            ("svm access", kfd.svm_set_attributes(user, 4096, &[SvmAttribute::Access(bad)])),
        ];
        for (what, r) in device {
            let e = r.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidNode, "{what} on node {bad}: {e:?}");
        }
        let queue: [(&str, Result<(), QueueError>); 2] = [
            (
                "create queue",
                kfd.create_queue(&QueueDesc::new(bad, QueueType::ComputeAql, 4096)).map(drop),
            ),
            ("trap handler", kfd.set_trap_handler(bad, 0x1000, 0x2000)),
        ];
        for (what, r) in queue {
            let e = r.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidNode, "{what} on node {bad}: {e:?}");
        }
    }
    // A buffer mapped on a node that is not a GPU.
    let a = kfd.alloc_memory(0, 4096, HOST).unwrap();
    let e = kfd.map_memory_to_gpu(a.addr, MapNodes::Only(&[count])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidNode, "{e:?}");
    kfd.free(a).unwrap();
    assert_eq!(kfd.platform().total_ioctl_calls(), calls + 2, "only the alloc and the free");
    assert!(kfd.available_memory(gpu).is_ok());
}

/// `KFDTopologyTest.GetNodePropertiesInvalidParams` and `KFDMemoryTest.InvalidMemoryPointerAlloc`
/// pass a null output pointer. Outputs here are return values, so there is no null output to
/// pass; what remains of the expectation is that every empty or too-small output, and every null
/// address, is refused with an `InvalidArgument`-like error instead of being used.
#[test]
fn kfdtest_null_outputs_and_null_addresses_are_refused() {
    // A read buffer too small for the topology's files.
    let sim = SimPlatform::new();
    let mut topo: Box<Topology> = Box::new(const { Topology::new() });
    let mut tiny = [0u8; 16];
    let e = topo.refresh(&sim, &sim, &mut tiny).unwrap_err();
    assert!(matches!(e, topology::Error::BufferTooSmall { .. }), "{e:?}");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);

    let kfd = device(sim);
    kfd.open().unwrap();
    // An empty wait set.
    let mut set: WaitSet<4> = WaitSet::new();
    let e = kfd.wait_events(&mut set, WaitMode::Any, Timeout::Immediate).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e:?}");
    // Null addresses: registering, freeing, mapping, exporting, fixed allocation at 0.
    // (Unmapping address 0 succeeds and does nothing, as in libhsakmt.)
    let gpu = kfd.gpu_nodes().unwrap().first().unwrap();
    assert_eq!(kfd.unmap_memory_from_gpu(0), Ok(()));
    let null: [(&str, Result<(), Error>); 5] = [
        ("register", kfd.register_memory(0, 4096).map(drop)),
        ("free", kfd.free_memory(0)),
        ("map", kfd.map_memory_to_gpu(0, MapNodes::All).map(drop)),
        ("export", kfd.export_dmabuf(0, 4096).map(drop)),
        ("alloc at 0", kfd.alloc_memory_at(gpu, 0, 4096, HOST).map(drop)),
    ];
    for (what, r) in null {
        let e = r.expect_err(what);
        assert!(
            matches!(
                e.kind(),
                ErrorKind::InvalidArgument | ErrorKind::NotRegistered | ErrorKind::InvalidHandle
            ),
            "{what} at address 0: {e:?}"
        );
    }
    // `KFDMemoryTest.ZeroMemorySizeAlloc`, for completeness next to the null pointer.
    let e = kfd.alloc_memory(gpu, 0, HOST).unwrap_err();
    assert_eq!(e, Error::Memory(memory::Error::ZeroSize));
    assert_eq!(kfd.memory_usage().objects, 0);
    kfd.check_invariants().unwrap();
}
