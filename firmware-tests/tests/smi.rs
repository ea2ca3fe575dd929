//! SMI event streams (`hsaKmtOpenSMI`): the simulated kernel writes its event lines for VM
//! faults, GPU resets, queue evictions and restores and page migrations; the library parses
//! them into typed events.

use firmware_tests::{first_gpu, opened};
use hsakmt_core::device::Error;
use hsakmt_core::event::{FaultFlags, ResetCause, ResetType};
use hsakmt_core::memory::svm_attributes::{SvmAttribute as A, SvmLocation as L};
use hsakmt_core::platform::{Host, KfdDevice};
use hsakmt_core::smi::{SMI_FIFO_SIZE, SmiEvent, SmiMask};
use hsakmt_core::uapi::*;
use hsakmt_hostmem::{map_anonymous, reserve};
use hsakmt_sim::SimPlatform;

fn events(kfd: &firmware_tests::SimKfd, s: &hsakmt_core::device::SmiStream) -> Vec<String> {
    let mut buf = [0u8; SMI_FIFO_SIZE];
    let lines = kfd.read_smi_events(s, 0, &mut buf).unwrap();
    lines.map(|e| format!("{:?}", e.expect("the kernel's lines parse"))).collect()
}

#[test]
fn streams_deliver_the_kernels_events_typed() {
    let kfd = opened(SimPlatform::new());
    let sim = kfd.platform();
    let (node, gpu_id) = first_gpu(&kfd);
    let pid = sim.process_id();
    let s = kfd.open_smi(node).unwrap();
    // Nothing enabled yet: nothing arrives.
    sim.inject_gpu_reset(gpu_id, ResetType::WholeGpu, ResetCause::GpuHang, false);
    assert!(events(&kfd, &s).is_empty());
    let mask = [
        KFD_SMI_EVENT_VMFAULT,
        KFD_SMI_EVENT_GPU_PRE_RESET,
        KFD_SMI_EVENT_GPU_POST_RESET,
        KFD_SMI_EVENT_QUEUE_EVICTION,
        KFD_SMI_EVENT_QUEUE_RESTORE,
        KFD_SMI_EVENT_MIGRATE_START,
        KFD_SMI_EVENT_MIGRATE_END,
    ]
    .iter()
    .fold(SmiMask::NONE, |m, e| m.with(*e));
    kfd.set_smi_events(&s, mask).unwrap();

    // A GPU reset: pre and post, with the device's next sequence number and the cause.
    sim.inject_gpu_reset(gpu_id, ResetType::WholeGpu, ResetCause::Ecc, false);
    let mut buf = [0u8; SMI_FIFO_SIZE];
    let got: Vec<SmiEvent<'_>> =
        kfd.read_smi_events(&s, 1000, &mut buf).unwrap().map(Result::unwrap).collect();
    assert_eq!(
        got,
        [
            SmiEvent::GpuPreReset { sequence: 2, cause: Some("RAS") },
            SmiEvent::GpuPostReset { sequence: 2, cause: Some("RAS") },
        ]
    );

    // A VM fault names the process.
    sim.inject_memory_fault(gpu_id, 0x1000, FaultFlags::NOT_PRESENT);
    let mut buf = [0u8; SMI_FIFO_SIZE];
    let got: Vec<_> =
        kfd.read_smi_events(&s, 1000, &mut buf).unwrap().map(Result::unwrap).collect();
    assert!(matches!(got.as_slice(), [SmiEvent::VmFault { pid: p, .. }] if *p == pid), "{got:?}");

    // Queue eviction and restore.
    sim.evict_queues(KFD_QUEUE_EVICTION_TRIGGER_TTM);
    sim.restore_queues();
    let mut buf = [0u8; SMI_FIFO_SIZE];
    let got: Vec<_> =
        kfd.read_smi_events(&s, 1000, &mut buf).unwrap().map(Result::unwrap).collect();
    assert!(
        matches!(
            got.as_slice(),
            [
                SmiEvent::QueueEviction { pid: p1, gpu_id: g1, trigger: KFD_QUEUE_EVICTION_TRIGGER_TTM, .. },
                SmiEvent::QueueRestore { pid: p2, gpu_id: g2, rescheduled: Some(false), .. },
            ] if *p1 == pid && *p2 == pid && *g1 == gpu_id && *g2 == gpu_id
        ),
        "{got:?}"
    );

    // An SVM prefetch to the GPU migrates the range.
    let base = reserve(None, 16 * 4096, 4096).unwrap();
    let _mem = map_anonymous(base, 16 * 4096).unwrap();
    kfd.svm_set_attributes(base, 16 * 4096, &[A::PrefetchLocation(L::Node(node))]).unwrap();
    let mut buf = [0u8; SMI_FIFO_SIZE];
    let got: Vec<_> =
        kfd.read_smi_events(&s, 1000, &mut buf).unwrap().map(Result::unwrap).collect();
    let want_start = |timestamp_ns| SmiEvent::MigrateStart {
        timestamp_ns,
        pid,
        start_page: base >> 12,
        pages: 16,
        from: 0,
        to: gpu_id,
        prefetch_loc: gpu_id,
        preferred_loc: KFD_IOCTL_SVM_LOCATION_UNDEFINED,
        trigger: KFD_MIGRATE_TRIGGER_PREFETCH,
    };
    match got.as_slice() {
        [
            SmiEvent::MigrateStart { timestamp_ns, .. },
            SmiEvent::MigrateEnd { error: Some(0), from: 0, to, .. },
        ] => {
            assert_eq!(got[0], want_start(*timestamp_ns));
            assert_eq!(*to, gpu_id);
        }
        other => panic!("{other:?}"),
    }
    // Prefetching to where it already is moves nothing.
    kfd.svm_set_attributes(base, 16 * 4096, &[A::PrefetchLocation(L::Node(node))]).unwrap();
    assert!(events(&kfd, &s).is_empty());

    // A stream of another GPU sees none of these.
    let nodes: Vec<u32> = kfd.gpu_nodes().unwrap().iter().collect();
    let other = kfd.open_smi(nodes[1]).unwrap();
    kfd.set_smi_events(&other, SmiMask::ALL_EVENTS).unwrap();
    sim.inject_memory_fault(gpu_id, 0x2000, FaultFlags::NOT_PRESENT);
    assert!(events(&kfd, &other).is_empty());
    assert_eq!(events(&kfd, &s).len(), 1);

    assert_eq!(sim.smi_clients(), 2);
    kfd.close_smi(s);
    kfd.close_smi(other);
    assert_eq!(sim.smi_clients(), 0);
    assert_eq!(sim.open_files(), 0);
}

#[test]
fn stream_errors() {
    let kfd = opened(SimPlatform::new());
    let sim = kfd.platform();
    let (node, _) = first_gpu(&kfd);
    // A CPU node has no SMI stream.
    assert!(matches!(kfd.open_smi(0), Err(Error::InvalidNode { node: 0 })));
    assert!(matches!(kfd.open_smi(9999), Err(Error::InvalidNode { .. })));
    let s = kfd.open_smi(node).unwrap();
    // The kernel takes 8 bytes of mask.
    assert_eq!(sim.write_fd(s.fd(), &[1, 2, 3]), Err(hsakmt_core::error::Errno::EFAULT));
    // Nothing to read: the wait times out, no lines.
    let mut buf = [0u8; SMI_FIFO_SIZE];
    assert_eq!(kfd.read_smi_events(&s, 10, &mut buf).unwrap().count(), 0);
    kfd.close_smi(s);
    // Closed: the descriptor is gone.
    assert!(sim.poll_fd(30_000, 0).is_err());
    // A kernel before 1.3 has no SMI events.
    let old = opened(SimPlatform::builder().kfd_version(1, 2).build());
    assert!(matches!(old.open_smi(node), Err(Error::NotSupported { needs_minor: 3, .. })));
}
