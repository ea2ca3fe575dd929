//! Shared virtual memory attributes (node ids in, node ids out) and XNACK mode.

use firmware_tests::{first_gpu, memory_error, nr, opened, sim};
use hsakmt_core::device::Error;
use hsakmt_core::error::{Errno, Error as _, ErrorKind};
use hsakmt_core::memory::svm_attributes::{SvmAttribute as A, SvmFlags, SvmLocation as L};
use hsakmt_core::memory::{self as mem, MemFlags};
use hsakmt_core::platform::SharedMemory;
use hsakmt_hostmem::{HostMapping, map_anonymous, release, reserve};
use hsakmt_sim::SimPlatform;

/// Page-aligned application memory.
fn pages(n: u64) -> (u64, HostMapping) {
    let base = reserve(None, n * 4096, 4096).unwrap();
    (base, map_anonymous(base, n * 4096).unwrap())
}

#[test]
fn defaults_then_set_and_get_round_trip() {
    let kfd = opened(SimPlatform::new());
    let gpus: Vec<u32> = kfd.gpu_nodes().unwrap().iter().collect();
    let (g0, g1) = (gpus[0], gpus[1]);
    let (addr, mapping) = pages(16);
    let size = 16 * 4096;
    let mut q = [
        A::PreferredLocation(L::Undefined),
        A::PrefetchLocation(L::Undefined),
        A::SetFlags(SvmFlags::empty()),
        A::ClearFlags(SvmFlags::empty()),
        A::Granularity(0),
        A::Access(g0),
    ];
    kfd.svm_get_attributes(addr, size, &mut q).unwrap();
    assert_eq!(
        q,
        [
            A::PreferredLocation(L::Undefined),
            A::PrefetchLocation(L::Undefined),
            A::SetFlags(SvmFlags::HOST_ACCESS | SvmFlags::COHERENT),
            A::ClearFlags(!(SvmFlags::HOST_ACCESS | SvmFlags::COHERENT)),
            A::Granularity(9),
            A::NoAccess(g0),
        ],
        "kernel defaults with XNACK off"
    );
    kfd.svm_set_attributes(
        addr,
        size,
        &[
            A::PreferredLocation(L::Node(g0)),
            A::PrefetchLocation(L::Node(0)),
            A::Access(g0),
            A::AccessInPlace(g1),
            A::SetFlags(SvmFlags::GPU_EXEC),
            A::ClearFlags(SvmFlags::COHERENT),
            A::Granularity(5),
        ],
    )
    .unwrap();
    let mut q = [
        A::PreferredLocation(L::Undefined),
        A::PrefetchLocation(L::Undefined),
        A::NoAccess(g0),
        A::NoAccess(g1),
        A::NoAccess(gpus[2]),
        A::SetFlags(SvmFlags::empty()),
        A::Granularity(0),
    ];
    kfd.svm_get_attributes(addr, size, &mut q).unwrap();
    assert_eq!(
        q,
        [
            A::PreferredLocation(L::Node(g0)),
            A::PrefetchLocation(L::System),
            A::Access(g0),
            A::AccessInPlace(g1),
            A::NoAccess(gpus[2]),
            A::SetFlags(SvmFlags::HOST_ACCESS | SvmFlags::GPU_EXEC),
            A::Granularity(5),
        ]
    );
    // Half the range changes: the other half keeps its location, so the whole range's
    // location is undefined.
    kfd.svm_set_attributes(addr, 8 * 4096, &[A::PreferredLocation(L::System)]).unwrap();
    let mut q = [A::PreferredLocation(L::Undefined)];
    kfd.svm_get_attributes(addr + 8 * 4096, 8 * 4096, &mut q).unwrap();
    assert_eq!(q, [A::PreferredLocation(L::Node(g0))]);
    kfd.svm_get_attributes(addr, size, &mut q).unwrap();
    assert_eq!(q, [A::PreferredLocation(L::Undefined)]);
    drop(mapping);
    release(addr, size).unwrap();
}

#[test]
fn invalid_ranges_and_attributes() {
    let kfd = opened(SimPlatform::new());
    let (g, _) = first_gpu(&kfd);
    let (addr, mapping) = pages(4);
    let sim = kfd.platform();
    // kfdtest InvalidRangeTest: an unmapped range.
    let e = kfd.svm_set_attributes(0x10000, 4096, &[A::Access(g)]).unwrap_err();
    assert_eq!(e, Error::Ioctl { name: "SVM", errno: Errno::EFAULT });
    let svm_calls = sim.ioctl_calls(nr::SVM);
    let cases = [
        (kfd.svm_set_attributes(addr + 8, 4096, &[]), mem::Error::Misaligned { value: addr + 8 }),
        (kfd.svm_set_attributes(addr, 0, &[]), mem::Error::ZeroSize),
        (kfd.svm_set_attributes(addr, 4096, &[A::Access(0)]), mem::Error::NotAGpu { node: 0 }),
        (
            kfd.svm_set_attributes(addr, 4096, &[A::NoAccess(999)]),
            mem::Error::UnknownNode { node: 999 },
        ),
        (
            kfd.svm_set_attributes(addr, 4096, &[A::Granularity(1); 65]),
            mem::Error::CapacityExhausted { capacity: 64 },
        ),
    ];
    for (got, want) in cases {
        assert_eq!(memory_error(&got.unwrap_err()), want);
    }
    assert_eq!(sim.ioctl_calls(nr::SVM), svm_calls, "refused before the kernel");
    // A range the library allocated buffers in.
    let host = kfd.alloc_memory(0, 4096, MemFlags::NON_PAGED | MemFlags::HOST_ACCESS).unwrap();
    let e = kfd.svm_set_attributes(host.addr, 4096, &[A::Access(g)]).unwrap_err();
    assert_eq!(e, Error::Ioctl { name: "SVM", errno: Errno::EADDRINUSE });
    assert_eq!(e.kind(), ErrorKind::Busy);
    kfd.free(host).unwrap();
    drop(mapping);
    release(addr, 4 * 4096).unwrap();
    // SVM needs KFD 1.5.
    let old = opened(SimPlatform::builder().kfd_version(1, 4).build());
    let e = old.svm_set_attributes(addr, 4096, &[]).unwrap_err();
    assert!(matches!(e, Error::NotSupported { needs_minor: 5, .. }), "{e:?}");
    assert_eq!(old.platform().ioctl_calls(nr::SVM), 0);
}

#[test]
fn xnack_mode() {
    let kfd = opened(SimPlatform::new());
    assert!(!kfd.xnack_mode().unwrap());
    kfd.set_xnack_mode(true).unwrap();
    assert!(kfd.xnack_mode().unwrap() && kfd.platform().xnack_enabled());
    // With XNACK on every GPU may access unregistered ranges by default.
    let (g, _) = first_gpu(&kfd);
    let (addr, mapping) = pages(1);
    let mut q = [A::NoAccess(g)];
    kfd.svm_get_attributes(addr, 4096, &mut q).unwrap();
    assert_eq!(q, [A::Access(g)]);
    drop(mapping);
    release(addr, 4096).unwrap();
    // Not while queues exist.
    kfd.platform().set_live_queues(1);
    let e = kfd.set_xnack_mode(false).unwrap_err();
    assert_eq!(
        (e.clone(), e.kind()),
        (Error::Ioctl { name: "SET_XNACK_MODE", errno: Errno::EBUSY }, ErrorKind::Busy)
    );
    kfd.platform().set_live_queues(0);
    kfd.set_xnack_mode(false).unwrap();
    assert!(!kfd.xnack_mode().unwrap());
    // gfx900 cannot do it at all.
    let vega = opened(sim("mi25-vega10-rocm18"));
    let e = vega.set_xnack_mode(true).unwrap_err();
    assert_eq!((memory_error(&e), e.kind()), (mem::Error::NotSupported, ErrorKind::NotSupported));
    assert_eq!(vega.platform().ioctl_calls(nr::XNACK), 1);
}

/// A GPU reaches the application's pages of an SVM range that grants it access, through the
/// simulated GPU's address translation (what a shader or SDMA engine uses): kfdtest's SVM
/// dispatches hung before, their first access faulting.
#[test]
fn gpus_reach_svm_ranges_granting_them_access() {
    let kfd = opened(SimPlatform::new());
    let (g0, gpu_id) = first_gpu(&kfd);
    let sim = kfd.platform();
    let (addr, mapping) = pages(4);
    mapping.write(100, &[0x5a; 4]).unwrap();
    assert_eq!(sim.resolve(gpu_id, addr, 4096).err(), Some(Errno::EFAULT), "no range yet");
    kfd.svm_set_attributes(addr, 2 * 4096, &[A::Access(g0), A::PrefetchLocation(L::Node(g0))])
        .unwrap();
    let (view, offset) = sim.resolve(gpu_id, addr, 2 * 4096).unwrap();
    let mut word = [0; 4];
    view.read(offset as usize + 100, &mut word).unwrap();
    assert_eq!(word, [0x5a; 4], "the application's own pages, wherever the range was prefetched");
    assert_eq!(sim.resolve(gpu_id, addr + 4096, 2 * 4096).err(), Some(Errno::EFAULT));
    let others: Vec<u32> = kfd.gpu_nodes().unwrap().iter().filter(|&n| n != g0).collect();
    let other = kfd
        .with_topology(|t| t.node_by_user_id(others[0]).and_then(|v| v.node().gpu_id()))
        .unwrap()
        .unwrap();
    assert_eq!(sim.resolve(other, addr, 4).err(), Some(Errno::EFAULT), "a GPU without access");
}
