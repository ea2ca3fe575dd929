//! Fault injection on every memory ioctl: the error is the kernel's, typed; the library's
//! tables and the simulated kernel's accounting are exactly as before; the same operation
//! succeeds once the fault is gone; an interrupted ioctl is simply issued again.

use firmware_tests::{SimKfd, first_gpu, nr, opened};
use hsakmt_core::device::{Error, MapNodes, MemoryUsage};
use hsakmt_core::error::Errno;
use hsakmt_core::memory::MemFlags;
use hsakmt_core::memory::svm_attributes::SvmAttribute;
use hsakmt_hostmem::{HostMapping, map_anonymous, reserve};
use hsakmt_sim::{GpuMemoryUsage, IoctlFault, SimPlatform, Trigger};

const COARSE_VRAM: MemFlags = MemFlags::NON_PAGED.union(MemFlags::COARSE_GRAIN);
const VISIBLE_VRAM: MemFlags = COARSE_VRAM.union(MemFlags::HOST_ACCESS);
const HOST: MemFlags = MemFlags::NON_PAGED.union(MemFlags::HOST_ACCESS);

/// One memory operation and the ioctl a fault is injected into.
#[derive(Debug, Clone, Copy)]
enum Op {
    AllocVram,
    AllocVisible,
    AllocHost,
    AllocPaged,
    AllocScratch,
    Free,
    FreeMapped,
    Map,
    Unmap,
    Register,
    Deregister,
    Export,
    ImportInfo,
    Import,
    Available,
    SvmSet,
    Xnack,
}

impl Op {
    const ALL: [Op; 17] = [
        Op::AllocVram,
        Op::AllocVisible,
        Op::AllocHost,
        Op::AllocPaged,
        Op::AllocScratch,
        Op::Free,
        Op::FreeMapped,
        Op::Map,
        Op::Unmap,
        Op::Register,
        Op::Deregister,
        Op::Export,
        Op::ImportInfo,
        Op::Import,
        Op::Available,
        Op::SvmSet,
        Op::Xnack,
    ];

    /// The ioctl faulted, and its name in errors.
    fn ioctl(self) -> (u32, &'static str) {
        match self {
            Op::AllocVram | Op::AllocVisible | Op::AllocHost | Op::AllocPaged | Op::Register => {
                (nr::ALLOC, "ALLOC_MEMORY_OF_GPU")
            }
            Op::AllocScratch => (nr::SCRATCH, "SET_SCRATCH_BACKING_VA"),
            Op::Free | Op::Deregister => (nr::FREE, "FREE_MEMORY_OF_GPU"),
            Op::FreeMapped | Op::Unmap => (nr::UNMAP, "UNMAP_MEMORY_FROM_GPU"),
            Op::Map => (nr::MAP, "MAP_MEMORY_TO_GPU"),
            Op::Export => (nr::EXPORT, "EXPORT_DMABUF"),
            Op::ImportInfo => (nr::DMABUF_INFO, "GET_DMABUF_INFO"),
            Op::Import => (nr::IMPORT, "IMPORT_DMABUF"),
            Op::Available => (nr::AVAILABLE, "AVAILABLE_MEMORY"),
            Op::SvmSet => (nr::SVM, "SVM"),
            Op::Xnack => (nr::XNACK, "SET_XNACK_MODE"),
        }
    }
}

/// What an operation works on, prepared before the fault is armed.
struct Fixture {
    node: u32,
    buffer: u64,
    user: u64,
    fd: u32,
    _user_memory: HostMapping,
}

fn prepare(kfd: &SimKfd, op: Op) -> Fixture {
    let (node, _) = first_gpu(kfd);
    let user = reserve(None, 2 * 4096, 4096).unwrap();
    let user_memory = map_anonymous(user, 2 * 4096).unwrap();
    let mut f = Fixture { node, buffer: 0, user, fd: 0, _user_memory: user_memory };
    match op {
        Op::Free | Op::Map | Op::Export | Op::ImportInfo | Op::Import => {
            let a = kfd.alloc_memory(node, 8192, VISIBLE_VRAM).unwrap();
            f.buffer = a.addr;
            if matches!(op, Op::ImportInfo | Op::Import) {
                f.fd = kfd.export_dmabuf(a.addr, 8192).unwrap().fd;
            }
        }
        Op::FreeMapped | Op::Unmap => {
            f.buffer = kfd.alloc_memory(node, 8192, COARSE_VRAM).unwrap().addr;
            kfd.map_memory_to_gpu(f.buffer, MapNodes::Default).unwrap();
        }
        Op::Deregister => {
            kfd.register_memory(user, 4096).unwrap();
        }
        _ => {}
    }
    f
}

fn run(kfd: &SimKfd, op: Op, f: &Fixture) -> Result<(), Error> {
    let alloc = |flags| kfd.alloc_memory(f.node, 8192, flags).and_then(|a| kfd.free(a));
    match op {
        Op::AllocVram => alloc(COARSE_VRAM),
        Op::AllocVisible => alloc(VISIBLE_VRAM),
        Op::AllocHost => kfd.alloc_memory(0, 8192, HOST).and_then(|a| kfd.free(a)),
        Op::AllocPaged => {
            kfd.alloc_memory(0, 8192, MemFlags::HOST_ACCESS).and_then(|a| kfd.free(a))
        }
        Op::AllocScratch => {
            kfd.alloc_memory(f.node, 65536, MemFlags::SCRATCH).and_then(|a| kfd.free(a))
        }
        Op::Free | Op::FreeMapped => kfd.free_memory(f.buffer),
        Op::Map => kfd.map_memory_to_gpu(f.buffer, MapNodes::All).map(|_| ()),
        Op::Unmap => kfd.unmap_memory_from_gpu(f.buffer),
        Op::Register => kfd.register_memory(f.user, 4096).map(|_| ()),
        Op::Deregister => kfd.deregister_memory(f.user),
        Op::Export => kfd.export_dmabuf(f.buffer, 4096).map(|e| kfd.close_dmabuf(e.fd)),
        Op::ImportInfo | Op::Import => {
            kfd.import_dmabuf(f.fd, Some(&[f.node])).and_then(|i| kfd.free_memory(i.addr))
        }
        Op::Available => kfd.available_memory(f.node).map(|_| ()),
        Op::SvmSet => kfd.svm_set_attributes(f.user, 4096, &[SvmAttribute::Access(f.node)]),
        Op::Xnack => kfd.set_xnack_mode(true),
    }
}

/// Everything the library and the simulated kernel account, to compare before and after.
#[derive(Debug, PartialEq)]
struct Books {
    library: MemoryUsage,
    buffers: usize,
    gpu: GpuMemoryUsage,
    dmabufs: usize,
    xnack: bool,
}

fn books(kfd: &SimKfd) -> Books {
    let (_, gpu_id) = first_gpu(kfd);
    let sim = kfd.platform();
    Books {
        library: kfd.memory_usage(),
        buffers: sim.buffer_count(),
        gpu: sim.memory_usage(gpu_id).unwrap(),
        dmabufs: sim.dmabuf_count(),
        xnack: sim.xnack_enabled(),
    }
}

#[test]
fn every_memory_ioctl_fails_cleanly_and_recovers() {
    for op in Op::ALL {
        for errno in [Errno::ENOMEM, Errno::EINVAL] {
            let kfd = opened(SimPlatform::new());
            let fixture = prepare(&kfd, op);
            let before = books(&kfd);
            let (nr, name) = op.ioctl();
            kfd.platform().inject(IoctlFault { nr: Some(nr), errno, trigger: Trigger::Nth(1) });
            let got = run(&kfd, op, &fixture);
            assert_eq!(got, Err(Error::Ioctl { name, errno }), "{op:?} with {errno:?}");
            assert_eq!(kfd.platform().injected_faults(), 1, "{op:?}");
            assert_eq!(books(&kfd), before, "{op:?} with {errno:?}: books changed");
            kfd.check_memory_invariants().unwrap();
            run(&kfd, op, &fixture).unwrap_or_else(|e| panic!("{op:?} after the fault: {e}"));
            kfd.check_memory_invariants().unwrap();
        }
    }
}

#[test]
fn interrupted_memory_ioctls_are_issued_again() {
    for op in Op::ALL {
        let kfd = opened(SimPlatform::new());
        let fixture = prepare(&kfd, op);
        let (nr, _) = op.ioctl();
        let before = kfd.platform().ioctl_calls(nr);
        kfd.platform().inject(IoctlFault {
            nr: Some(nr),
            errno: Errno::EINTR,
            trigger: Trigger::Nth(1),
        });
        run(&kfd, op, &fixture).unwrap_or_else(|e| panic!("{op:?} interrupted: {e}"));
        assert!(kfd.platform().ioctl_calls(nr) - before >= 2, "{op:?}: issued again");
        kfd.check_memory_invariants().unwrap();
    }
    // A signal storm longer than the retry budget surfaces as EINTR, with nothing changed.
    let kfd = opened(SimPlatform::new());
    let (node, _) = first_gpu(&kfd);
    let before = books(&kfd);
    kfd.platform().inject(IoctlFault {
        nr: Some(nr::ALLOC),
        errno: Errno::EINTR,
        trigger: Trigger::Always,
    });
    let e = kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap_err();
    assert_eq!(e, Error::Ioctl { name: "ALLOC_MEMORY_OF_GPU", errno: Errno::EINTR });
    assert_eq!(books(&kfd), before);
    kfd.platform().clear_faults();
    let a = kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap();
    kfd.free(a).unwrap();
}
