//! Mapping memory on GPUs: the default device sets, explicit sets, unmapping, partial success
//! and its resumption, queue-held buffers, and the refusals.

use firmware_tests::{SimKfd, first_gpu, memory_error, nr, opened};
use hsakmt_core::device::{Error, MapNodes};
use hsakmt_core::error::{Errno, Error as _, ErrorKind};
use hsakmt_core::memory::{self as mem, MemFlags, NodeSet};
use hsakmt_core::platform::{EntryKind, SysfsFile};
use hsakmt_sim::{Profile, SimPlatform};

const COARSE_VRAM: MemFlags = MemFlags::NON_PAGED.union(MemFlags::COARSE_GRAIN);
const HOST: MemFlags = MemFlags::NON_PAGED.union(MemFlags::HOST_ACCESS);
const CPU_NODE: u32 = 0;

/// The gpu_ids of a node set, in node order.
fn gpu_ids(kfd: &SimKfd, nodes: NodeSet) -> Vec<u32> {
    kfd.with_topology(|t| {
        nodes
            .iter()
            .map(|n| t.node_by_user_id(n).and_then(|v| v.node().gpu_id()).unwrap())
            .collect()
    })
    .unwrap()
}

fn sorted(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v
}

/// The default profile with every link *to* sysfs node `target` redirected to CPU node 0,
/// except those from `keep`: `target`'s VRAM then has peers `keep` and itself.
fn few_peers(target: u32, keep: &[u32]) -> SimPlatform {
    let mut profile = Profile::default_profile();
    let edits: Vec<(SysfsFile, Vec<u8>)> = profile
        .files()
        .filter_map(|(f, bytes)| {
            let SysfsFile::EntryProperties {
                node,
                kind: EntryKind::IoLink | EntryKind::P2pLink,
                ..
            } = f
            else {
                return None;
            };
            let text = String::from_utf8_lossy(bytes);
            let to = format!("node_to {target}\n");
            (node != target && !keep.contains(&node) && text.contains(&to))
                .then(|| (f, text.replace(&to, "node_to 0\n").into_bytes()))
        })
        .collect();
    for (f, bytes) in edits {
        profile.set_file(f, &bytes);
    }
    SimPlatform::builder().profile(profile).build()
}

#[test]
fn default_sets_owner_and_peers_for_vram_every_gpu_for_host_memory() {
    // Sysfs node 2 is the first GPU; only GPUs at sysfs nodes 5 and 9 keep a link to it.
    let kfd = opened(few_peers(2, &[5, 9]));
    let (node, gpu_id) = first_gpu(&kfd);
    let peers = kfd.peer_nodes(node).unwrap();
    assert_eq!(peers.len(), 3, "itself and two linked GPUs");
    assert!(peers.contains(node));
    let all = kfd.gpu_nodes().unwrap();
    assert_eq!(all.len(), 32);
    let vram = kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap();
    kfd.map_memory_to_gpu(vram.addr, MapNodes::Default).unwrap();
    let h = vram.kfd_handle.unwrap();
    let sim = kfd.platform();
    assert_eq!(sorted(sim.buffer_mappings(h).unwrap()), sorted(gpu_ids(&kfd, peers)));
    assert_eq!(kfd.pointer_info(vram.addr).unwrap().mapped_nodes, peers);
    assert!(sim.memory_usage(gpu_id).unwrap().mappings >= 1);

    let host = kfd.alloc_memory(CPU_NODE, 4096, HOST).unwrap();
    kfd.map_memory_to_gpu(host.addr, MapNodes::Default).unwrap();
    let hh = host.kfd_handle.unwrap();
    assert_eq!(sorted(sim.buffer_mappings(hh).unwrap()), sorted(gpu_ids(&kfd, all)));
    assert_eq!(kfd.pointer_info(host.addr).unwrap().mapped_nodes, all);
    // Mapping again changes nothing and issues nothing.
    let maps = sim.ioctl_calls(nr::MAP);
    kfd.map_memory_to_gpu(host.addr, MapNodes::All).unwrap();
    assert_eq!(sim.ioctl_calls(nr::MAP), maps);
    for a in [vram, host] {
        kfd.free(a).unwrap();
    }
    assert_eq!(sim.buffer_count(), 0);
}

#[test]
fn explicit_sets_replace_the_mapping() {
    let kfd = opened(SimPlatform::new());
    let nodes: Vec<u32> = kfd.gpu_nodes().unwrap().iter().take(3).collect();
    let (a, b, c) = (nodes[0], nodes[1], nodes[2]);
    let buf = kfd.alloc_memory(a, 8192, COARSE_VRAM).unwrap();
    let h = buf.kfd_handle.unwrap();
    let sim = kfd.platform();
    assert_eq!(kfd.map_memory_to_gpu(buf.addr, MapNodes::Only(&[a, b])).unwrap(), buf.addr);
    let set = |l: &[u32]| NodeSet::from_slice(l).unwrap();
    assert_eq!(kfd.pointer_info(buf.addr).unwrap().mapped_nodes, set(&[a, b]));
    assert_eq!(sorted(sim.buffer_mappings(h).unwrap()), sorted(gpu_ids(&kfd, set(&[a, b]))));
    // b, c: a is unmapped, c mapped.
    kfd.map_memory_to_gpu(buf.addr, MapNodes::Only(&[c, b])).unwrap();
    assert_eq!(kfd.pointer_info(buf.addr).unwrap().mapped_nodes, set(&[b, c]));
    assert_eq!(sorted(sim.buffer_mappings(h).unwrap()), sorted(gpu_ids(&kfd, set(&[b, c]))));
    kfd.unmap_memory_from_gpu(buf.addr).unwrap();
    assert_eq!(sim.buffer_mappings(h).unwrap(), Vec::<u32>::new());
    assert!(kfd.pointer_info(buf.addr).unwrap().mapped_nodes.is_empty());
    // Unmapping what is not mapped, and address 0, succeed (libhsakmt).
    let unmaps = sim.ioctl_calls(nr::UNMAP);
    kfd.unmap_memory_from_gpu(buf.addr).unwrap();
    kfd.unmap_memory_from_gpu(0).unwrap();
    assert_eq!(sim.ioctl_calls(nr::UNMAP), unmaps);
    kfd.free(buf).unwrap();
}

#[test]
fn bad_targets_are_refused() {
    let kfd = opened(SimPlatform::new());
    let (node, _) = first_gpu(&kfd);
    let buf = kfd.alloc_memory(node, 8192, COARSE_VRAM).unwrap();
    let maps = kfd.platform().ioctl_calls(nr::MAP);
    let cases = [
        (
            kfd.map_memory_to_gpu(buf.addr + 4096, MapNodes::Default),
            mem::Error::UnknownAddress { addr: buf.addr + 4096 },
        ),
        (kfd.map_memory_to_gpu(0, MapNodes::Default), mem::Error::UnknownAddress { addr: 0 }),
        (kfd.map_memory_to_gpu(buf.addr, MapNodes::Only(&[])), mem::Error::NoNodes),
        (
            kfd.map_memory_to_gpu(buf.addr, MapNodes::Only(&[CPU_NODE])),
            mem::Error::NotAGpu { node: CPU_NODE },
        ),
        (
            kfd.map_memory_to_gpu(buf.addr, MapNodes::Only(&[500])),
            mem::Error::UnknownNode { node: 500 },
        ),
    ];
    for (got, want) in cases {
        assert_eq!(memory_error(&got.unwrap_err()), want);
    }
    let e = kfd.unmap_memory_from_gpu(buf.addr + 4096).unwrap_err();
    assert_eq!(
        (memory_error(&e), e.kind()),
        (mem::Error::UnknownAddress { addr: buf.addr + 4096 }, ErrorKind::NotRegistered)
    );
    assert_eq!(kfd.platform().ioctl_calls(nr::MAP), maps);
    kfd.free(buf).unwrap();
}

/// kfdtest `KFDMemoryTest.VA_VRAM_Only_AllocTest`: address-only and memory-only allocations
/// succeed, refuse to be mapped, and free.
#[test]
fn kfdtest_va_vram_only_alloc() {
    let kfd = opened(SimPlatform::new());
    let (node, _) = first_gpu(&kfd);
    for extra in [MemFlags::ONLY_ADDRESS, MemFlags::NO_ADDRESS] {
        let a = kfd.alloc_memory(node, 1 << 20, COARSE_VRAM | extra).unwrap();
        for nodes in [MapNodes::Default, MapNodes::Only(&[node])] {
            let e = kfd.map_memory_to_gpu(a.addr, nodes).unwrap_err();
            assert_eq!(memory_error(&e), mem::Error::NotMappable { addr: a.addr });
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        }
        kfd.free(a).unwrap();
    }
    assert_eq!(kfd.platform().ioctl_calls(nr::MAP), 0);
    assert_eq!(kfd.platform().buffer_count(), 0);
}

#[test]
fn an_interrupted_map_resumes_where_the_kernel_stopped() {
    let kfd = opened(SimPlatform::new());
    let host = kfd.alloc_memory(CPU_NODE, 4096, HOST).unwrap();
    let sim = kfd.platform();
    let gpus = kfd.gpu_nodes().unwrap().len();
    let (maps, devices) = (sim.ioctl_calls(nr::MAP), sim.device_map_count());
    sim.fail_next_map_after(5, Errno::EINTR);
    kfd.map_memory_to_gpu(host.addr, MapNodes::All).unwrap();
    assert_eq!(sim.ioctl_calls(nr::MAP) - maps, 2, "issued again once");
    assert_eq!(sim.device_map_count() - devices, u64::from(gpus), "no device mapped twice");
    assert_eq!(sim.buffer_mappings(host.kfd_handle.unwrap()).unwrap().len(), gpus as usize);
    kfd.free(host).unwrap();
}

#[test]
fn a_failed_map_undoes_its_partial_progress() {
    let kfd = opened(SimPlatform::new());
    let host = kfd.alloc_memory(CPU_NODE, 4096, HOST).unwrap();
    let sim = kfd.platform();
    let h = host.kfd_handle.unwrap();
    sim.fail_next_map_after(5, Errno::ENOMEM);
    let e = kfd.map_memory_to_gpu(host.addr, MapNodes::All).unwrap_err();
    assert_eq!(e, Error::Ioctl { name: "MAP_MEMORY_TO_GPU", errno: Errno::ENOMEM });
    assert_eq!(
        sim.buffer_mappings(h).unwrap(),
        Vec::<u32>::new(),
        "the five mapped devices were unmapped"
    );
    assert!(kfd.pointer_info(host.addr).unwrap().mapped_nodes.is_empty());
    // The same call succeeds once the kernel does.
    kfd.map_memory_to_gpu(host.addr, MapNodes::All).unwrap();
    assert_eq!(sim.buffer_mappings(h).unwrap().len(), kfd.gpu_nodes().unwrap().len() as usize);
    kfd.free(host).unwrap();
    kfd.check_memory_invariants().unwrap();
}

#[test]
fn memory_a_queue_uses_cannot_be_unmapped_or_freed() {
    let kfd = opened(SimPlatform::new());
    let (node, _) = first_gpu(&kfd);
    let ring = kfd.alloc_memory(node, 65536, COARSE_VRAM).unwrap();
    kfd.map_memory_to_gpu(ring.addr, MapNodes::Only(&[node])).unwrap();
    let sim = kfd.platform();
    let h = sim.pin_buffer(ring.addr + 100).unwrap();
    assert_eq!(Some(h), ring.kfd_handle);
    let e = kfd.unmap_memory_from_gpu(ring.addr).unwrap_err();
    assert_eq!(e, Error::Ioctl { name: "UNMAP_MEMORY_FROM_GPU", errno: Errno::EBUSY });
    assert_eq!(e.kind(), ErrorKind::Busy);
    let e = kfd.free_memory(ring.addr).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy);
    // Still there, still mapped, in both books.
    assert_eq!(kfd.pointer_info(ring.addr).unwrap().mapped_nodes, NodeSet::single(node).unwrap());
    assert_eq!(sim.buffer_mappings(h).unwrap().len(), 1);
    sim.unpin_buffer(h);
    // Freeing mapped memory unmaps it first.
    let unmaps = sim.ioctl_calls(nr::UNMAP);
    kfd.free(ring).unwrap();
    assert_eq!(sim.ioctl_calls(nr::UNMAP) - unmaps, 1);
    assert_eq!(sim.buffer_count(), 0);
    kfd.check_memory_invariants().unwrap();
}
