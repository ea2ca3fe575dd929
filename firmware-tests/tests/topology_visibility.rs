//! Topology as libhsakmt's users see it: GPUs whose render node cannot be opened are hidden
//! (user node ids renumbered, links to them dropped, overrides following the new ids), both
//! numberings and the reasons are kept; releasing and re-acquiring the system properties
//! re-reads the tree with its `generation_id` check.

use hsakmt_core::device::queue_manager::{QueueDesc, QueueType};
use hsakmt_core::device::{Acquired, Error};
use hsakmt_core::error::Errno;
use hsakmt_core::topology::{self, GfxVersion, Hidden, NodeKind};
use hsakmt_sim::{CpMode, SimPlatform};

/// The MI308X profile: nodes 0 and 1 are CPUs, 2..34 GPU partitions with render minors from
/// 128 (node 2) on.
fn sim_without_render(minor: u32, errno: Errno) -> SimPlatform {
    SimPlatform::builder().cp_mode(CpMode::Step).render_node_unavailable(minor, errno).build()
}

#[test]
fn gpus_without_a_render_node_are_hidden_and_the_rest_renumbered() {
    // renderD129 is node 3's.
    let sim = SimPlatform::builder()
        .cp_mode(CpMode::Step)
        .render_node_unavailable(129, Errno::ENOENT)
        .env("HSA_OVERRIDE_GFX_VERSION_3", "9.4.1")
        .build();
    let kfd = firmware_tests::device(sim);
    kfd.open().unwrap();
    kfd.with_topology(|t| {
        let n3 = t.node_by_sysfs_id(3).unwrap();
        assert_eq!(
            n3.node().hidden(),
            Some(Hidden::RenderNode { minor: 129, errno: Errno::ENOENT })
        );
        assert_eq!(n3.node().user_id(), None);
        // Node 4 takes user id 3 — and the per-node override of user node 3.
        let n4 = t.node_by_sysfs_id(4).unwrap();
        assert_eq!(n4.node().user_id(), Some(3));
        assert_eq!(n4.node().gfx_override(), Some(GfxVersion::new(9, 4, 1)));
        assert_eq!(t.node_by_user_id(3).unwrap().node().sysfs_id(), 4);
        // 34 nodes, 33 visible, one hidden and why.
        assert_eq!(t.node_count(), 34);
        assert_eq!(t.nodes().filter(|v| v.node().user_id().is_some()).count(), 33);
        let hidden: Vec<u32> = t.hidden_nodes().map(|(v, _)| v.node().sysfs_id()).collect();
        assert_eq!(hidden, [3]);
        // Links to the hidden node are dropped from what users see.
        let n2 = t.node_by_sysfs_id(2).unwrap();
        assert!(n2.links().any(|l| l.node_to() == Some(3)));
        assert!(!n2.visible_links(t).any(|l| l.node_to() == Some(3)));
        assert_eq!(n2.visible_links(t).count() + 1, n2.links().count());
    })
    .unwrap();
    // The hidden GPU is not used: 31 GPU nodes, and queues work on the others.
    assert_eq!(kfd.gpu_nodes().unwrap().iter().count(), 31);
    let q = kfd.create_queue(&QueueDesc::new(3, QueueType::ComputeAql, 4096)).unwrap();
    let n4_gpu = kfd.with_topology(|t| t.node_by_sysfs_id(4).unwrap().gpu_id()).unwrap();
    assert_eq!(Some(q.gpu_id), n4_gpu);
    kfd.destroy_queue(q.handle).unwrap();
}

#[test]
fn a_render_node_refused_for_another_reason_fails_the_snapshot() {
    let kfd = firmware_tests::device(sim_without_render(130, Errno::EACCES));
    let e = kfd.open().unwrap_err();
    assert!(
        matches!(
            e,
            Error::Topology(topology::Error::RenderNode {
                node: 4,
                minor: 130,
                errno: Errno::EACCES
            })
        ),
        "{e:?}"
    );
    assert_eq!(kfd.open_count(), 0);
    // EPERM hides, like ENOENT.
    let kfd = firmware_tests::device(sim_without_render(130, Errno::EPERM));
    kfd.open().unwrap();
    let h = kfd.with_topology(|t| t.node_by_sysfs_id(4).unwrap().node().hidden()).unwrap();
    assert_eq!(h, Some(Hidden::RenderNode { minor: 130, errno: Errno::EPERM }));
}

#[test]
fn cgroup_hidden_nodes_say_so() {
    let kfd = firmware_tests::device(SimPlatform::builder().hide_node(5).build());
    kfd.open().unwrap();
    kfd.with_topology(|t| {
        let n = t.node_by_sysfs_id(5).unwrap();
        assert_eq!(n.node().hidden(), Some(Hidden::Cgroup));
        assert_eq!(n.node().kind(), NodeKind::Gpu);
    })
    .unwrap();
}

#[test]
fn release_and_acquire_reread_the_topology() {
    let kfd = firmware_tests::device(SimPlatform::builder().cp_mode(CpMode::Step).build());
    kfd.open().unwrap();
    let sim = kfd.platform();
    // Held: nothing is read.
    assert_eq!(kfd.acquire_system_properties().unwrap(), Acquired::Held);
    // Released, unchanged tree: re-read, same snapshot.
    kfd.release_system_properties().unwrap();
    assert_eq!(kfd.acquire_system_properties().unwrap(), Acquired::Reread);
    let gen0 = kfd.with_topology(|t| t.generation_id()).unwrap().unwrap();
    assert_eq!(kfd.memory_usage().objects, 0);

    // A GPU goes away (a container loses renderD131, node 5) and the tree's generation
    // moves. Nothing is held yet: the acquire re-reads and the memory manager follows.
    sim.set_render_node_unavailable(131, Some(Errno::ENOENT));
    sim.bump_generation();
    kfd.release_system_properties().unwrap();
    assert_eq!(kfd.acquire_system_properties().unwrap(), Acquired::Changed);
    kfd.with_topology(|t| {
        assert_eq!(t.generation_id(), Some(gen0 + 1));
        assert!(t.node_by_sysfs_id(5).unwrap().node().hidden().is_some());
    })
    .unwrap();
    assert_eq!(kfd.gpu_nodes().unwrap().iter().count(), 31);
    // User node 5 is now sysfs node 6, and queues run there.
    let q = kfd.create_queue(&QueueDesc::new(5, QueueType::ComputeAql, 4096)).unwrap();
    let gpu6 = kfd.with_topology(|t| t.node_by_sysfs_id(6).unwrap().gpu_id()).unwrap();
    assert_eq!(Some(q.gpu_id), gpu6);

    // It comes back while the process holds a queue: refused, the old snapshot stays.
    sim.set_render_node_unavailable(131, None);
    sim.bump_generation();
    kfd.release_system_properties().unwrap();
    let e = kfd.acquire_system_properties().unwrap_err();
    assert!(
        matches!(e, Error::TopologyChanged { held: Some(h), now: Some(n) } if n == h + 1),
        "{e:?}"
    );
    assert_eq!(kfd.with_topology(|t| t.generation_id()).unwrap(), Some(gen0 + 1));
    kfd.destroy_queue(q.handle).unwrap();
    // Closing and opening again sees it.
    kfd.close().unwrap();
    kfd.open().unwrap();
    assert_eq!(kfd.gpu_nodes().unwrap().iter().count(), 32);
    // A pending release does not survive a close.
    kfd.release_system_properties().unwrap();
    kfd.close().unwrap();
    assert!(matches!(kfd.acquire_system_properties(), Err(Error::NotOpened)));
    kfd.open().unwrap();
    assert_eq!(kfd.acquire_system_properties().unwrap(), Acquired::Held);
}
