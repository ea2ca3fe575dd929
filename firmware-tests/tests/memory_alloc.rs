//! Allocating and freeing memory through the device facade over the simulated kernel: every
//! placement path with its exact kernel flags, the ioctl budget, and every refusal with its
//! exact error.

use firmware_tests::{first_gpu, memory_error, nr, opened};
use hsakmt_core::device::{Error, Kfd, MapNodes, PointerKind};
use hsakmt_core::error::{Errno, Error as _, ErrorKind};
use hsakmt_core::memory::aperture::SCRATCH_ALIGN;
use hsakmt_core::memory::{self as mem, MemFlags, PageSize};
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::uapi::*;
use hsakmt_linux::{BoxedMemory, boxed_tables};
use hsakmt_sim::SimPlatform;

const NS: u32 = KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE;
const W: u32 = KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
const C: u32 = KFD_IOC_ALLOC_MEM_FLAGS_COHERENT;
const U: u32 = KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED;
const COARSE_VRAM: MemFlags = MemFlags::NON_PAGED.union(MemFlags::COARSE_GRAIN);
const CPU_NODE: u32 = 0;

#[test]
fn invisible_vram_costs_exactly_one_alloc_and_one_free_ioctl() {
    let kfd = opened(SimPlatform::new());
    let (node, gpu_id) = first_gpu(&kfd);
    let sim = kfd.platform();
    let before = sim.total_ioctl_calls();
    let reservations = kfd.memory_usage().reservations;
    let a = kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap();
    assert_eq!(sim.total_ioctl_calls() - before, 1);
    assert_eq!(sim.ioctl_calls(nr::ALLOC), 1);
    let handle = a.kfd_handle.unwrap();
    assert_eq!(sim.buffer_flags(handle), Some(KFD_IOC_ALLOC_MEM_FLAGS_VRAM | W | NS));
    assert!(a.mapping.is_none(), "CPU-invisible VRAM has no CPU mapping");
    assert_eq!(sim.memory_usage(gpu_id).unwrap().vram_used, 4096);
    assert_eq!(a.node, node);
    kfd.free(a).unwrap();
    assert_eq!(sim.total_ioctl_calls() - before, 2);
    assert_eq!(sim.ioctl_calls(nr::FREE), 1);
    assert_eq!(sim.memory_usage(gpu_id).unwrap().vram_used, 0);
    assert_eq!(sim.buffer_count(), 0);
    assert_eq!(kfd.memory_usage().objects, 0);
    assert_eq!(kfd.memory_usage().va_used, [0, 0, 0]);
    assert_eq!(kfd.memory_usage().reservations, reservations, "no address space reserved");
    kfd.check_memory_invariants().unwrap();
}

#[test]
fn host_visible_vram_is_what_the_gpu_reads() {
    let kfd = opened(SimPlatform::new());
    let (node, gpu_id) = first_gpu(&kfd);
    let flags = MemFlags::NON_PAGED | MemFlags::HOST_ACCESS | MemFlags::COARSE_GRAIN;
    let a = kfd.alloc_memory(node, 8192, flags).unwrap();
    let sim = kfd.platform();
    assert_eq!(
        sim.buffer_flags(a.kfd_handle.unwrap()),
        Some(KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC | W | NS)
    );
    let view = a.mapping.as_ref().unwrap();
    assert_eq!((view.addr(), view.len()), (a.addr, 8192), "GPU VA == CPU VA");
    view.write(4096, b"written by the CPU").unwrap();
    // Not mapped on the GPU yet: the GPU faults.
    assert_eq!(sim.resolve(gpu_id, a.addr + 4096, 18).err(), Some(Errno::EFAULT));
    assert_eq!(kfd.map_memory_to_gpu(a.addr, MapNodes::Default).unwrap(), a.addr);
    let (gpu_view, offset) = sim.resolve(gpu_id, a.addr + 4096, 18).unwrap();
    let mut seen = [0u8; 18];
    gpu_view.read(usize::try_from(offset).unwrap(), &mut seen).unwrap();
    assert_eq!(&seen, b"written by the CPU");
    // Past the end of the buffer: a fault.
    assert_eq!(sim.resolve(gpu_id, a.addr + 8000, 400).err(), Some(Errno::EFAULT));
    drop(gpu_view);
    kfd.free(a).unwrap();
    assert_eq!(sim.buffer_count(), 0);
}

#[test]
fn host_memory_paths_and_their_flags() {
    let kfd = opened(SimPlatform::new());
    let (_, first_gpu_id) = first_gpu(&kfd);
    let sim = kfd.platform();
    // Non-paged, fine-grained host memory from the CPU node: a GTT buffer on the first GPU.
    let gtt =
        kfd.alloc_memory(CPU_NODE, 65536, MemFlags::NON_PAGED | MemFlags::HOST_ACCESS).unwrap();
    assert_eq!(
        sim.buffer_flags(gtt.kfd_handle.unwrap()),
        Some(KFD_IOC_ALLOC_MEM_FLAGS_GTT | C | W | NS)
    );
    assert_eq!(gtt.kfd_handle.unwrap() >> 32, u64::from(first_gpu_id));
    assert_eq!(sim.memory_usage(first_gpu_id).unwrap().system_bytes, 65536);
    gtt.mapping.as_ref().unwrap().write(0, &[1, 2, 3]).unwrap();
    // Paged host memory: anonymous memory made a user-pointer buffer at the same address.
    let paged = kfd.alloc_memory(CPU_NODE, 8192, MemFlags::HOST_ACCESS).unwrap();
    let h = paged.kfd_handle.unwrap();
    assert_eq!(sim.buffer_flags(h), Some(KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | C | W | NS));
    paged.mapping.as_ref().unwrap().write(100, b"paged").unwrap();
    kfd.map_memory_to_gpu(paged.addr, MapNodes::Default).unwrap();
    let (gpu_view, offset) = sim.resolve(first_gpu_id, paged.addr + 100, 5).unwrap();
    let mut seen = [0u8; 5];
    gpu_view.read(usize::try_from(offset).unwrap(), &mut seen).unwrap();
    assert_eq!(&seen, b"paged");
    drop(gpu_view);
    // Uncached, executable, read-only combinations.
    let ro = MemFlags::NON_PAGED | MemFlags::HOST_ACCESS | MemFlags::READ_ONLY;
    let x = kfd
        .alloc_memory(CPU_NODE, 4096, ro | MemFlags::EXECUTE_ACCESS | MemFlags::UNCACHED)
        .unwrap();
    assert_eq!(
        sim.buffer_flags(x.kfd_handle.unwrap()),
        Some(KFD_IOC_ALLOC_MEM_FLAGS_GTT | C | U | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE | NS)
    );
    for a in [gtt, paged, x] {
        kfd.free(a).unwrap();
    }
    assert_eq!(sim.buffer_count(), 0);
    assert_eq!(sim.memory_usage(first_gpu_id).unwrap().system_bytes, 0);
    kfd.check_memory_invariants().unwrap();
}

#[test]
fn aql_queue_memory_is_twice_the_address_range_and_half_the_charge() {
    let kfd = opened(SimPlatform::new());
    let (node, gpu_id) = first_gpu(&kfd);
    let flags = COARSE_VRAM | MemFlags::AQL_QUEUE_MEMORY | MemFlags::EXECUTE_ACCESS;
    let a = kfd.alloc_memory(node, 65536, flags).unwrap();
    assert_eq!(a.size, 2 * 65536, "the ring is mapped twice");
    let sim = kfd.platform();
    let f = sim.buffer_flags(a.kfd_handle.unwrap()).unwrap();
    assert_eq!(
        f,
        KFD_IOC_ALLOC_MEM_FLAGS_VRAM
            | KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM
            | U
            | W
            | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE
            | NS
    );
    assert_eq!(sim.memory_usage(gpu_id).unwrap().vram_used, 65536);
    kfd.free(a).unwrap();
}

#[test]
fn address_only_handle_only_and_scratch() {
    let kfd = opened(SimPlatform::new());
    let (node, gpu_id) = first_gpu(&kfd);
    let sim = kfd.platform();
    let before = sim.total_ioctl_calls();
    let only = kfd.alloc_memory(node, 1 << 20, COARSE_VRAM | MemFlags::ONLY_ADDRESS).unwrap();
    assert_eq!(sim.total_ioctl_calls(), before, "an address range costs no ioctl");
    assert_eq!(only.kfd_handle, None);
    let info = kfd.pointer_info(only.addr + 4096).unwrap();
    assert_eq!((info.kind, info.node), (PointerKind::ReservedAddress, 0));
    assert_eq!(
        memory_error(&kfd.kfd_handle(only.addr).unwrap_err()),
        mem::Error::NoKfdBuffer { addr: only.addr }
    );

    let handle_only = kfd.alloc_memory(node, 4096, COARSE_VRAM | MemFlags::NO_ADDRESS).unwrap();
    assert!(handle_only.addr >= 1 << 47, "a handle in the non-canonical window");
    assert_eq!(sim.memory_usage(gpu_id).unwrap().vram_used, 4096);
    assert!(handle_only.mapping.is_none());
    assert_eq!(sim.resolve(gpu_id, handle_only.addr, 4).err(), Some(Errno::EFAULT));

    // Scratch: a 64 KiB-aligned range, programmed with SET_SCRATCH_BACKING_VA.
    let scratch = kfd.alloc_memory(node, 25 * 4096, MemFlags::SCRATCH).unwrap();
    assert_eq!(scratch.addr % SCRATCH_ALIGN, 0);
    assert_eq!(scratch.size, 2 * SCRATCH_ALIGN);
    assert_eq!(sim.scratch_backing(gpu_id), Some(scratch.addr >> 16));
    let again = kfd.alloc_memory(node, 4096, MemFlags::SCRATCH).unwrap_err();
    assert_eq!(memory_error(&again), mem::Error::ScratchInUse { node });
    // Mapping it creates its VRAM on its GPU only.
    kfd.map_memory_to_gpu(scratch.addr, MapNodes::Default).unwrap();
    let h = kfd.kfd_handle(scratch.addr).unwrap();
    assert_eq!(sim.buffer_flags(h), Some(KFD_IOC_ALLOC_MEM_FLAGS_VRAM | W | NS));
    assert_eq!(sim.buffer_mappings(h), Some(vec![gpu_id]));
    kfd.unmap_memory_from_gpu(scratch.addr).unwrap();
    assert_eq!(sim.buffer_mappings(h), None, "unmapping scratch frees its VRAM");
    for a in [only, handle_only, scratch] {
        kfd.free(a).unwrap();
    }
    // The GPU may have scratch again.
    let s2 = kfd.alloc_memory(node, 4096, MemFlags::SCRATCH).unwrap();
    kfd.free(s2).unwrap();
    assert_eq!(sim.buffer_count(), 0);
    kfd.check_memory_invariants().unwrap();
}

/// Scratch is mapped in slices, as kfdtest's `FlatScratchAccess` does: each mapped part of the
/// range gets a VRAM buffer of its own at its address (libhsakmt `_fmm_map_to_gpu_scratch`),
/// unmapping a slice frees its buffer, and freeing the range removes the slices left.
#[test]
fn scratch_is_mapped_in_slices_with_memory_of_their_own() {
    const S: u64 = 0x1_0000;
    let kfd = opened(SimPlatform::new());
    let (node, gpu_id) = first_gpu(&kfd);
    let sim = kfd.platform();
    let scratch = kfd.alloc_memory(node, 3 * S, MemFlags::SCRATCH).unwrap();
    let base = scratch.addr;
    let vram = |sim: &SimPlatform| sim.memory_usage(gpu_id).unwrap().vram_used;
    let used = vram(sim);
    // Slices 2, 0, 1, each a buffer of its own mapped on the scratch GPU.
    let mut handles = Vec::new();
    for k in [2, 0, 1] {
        let at = base + k * S;
        assert_eq!(kfd.map_memory_to_gpu_sized(at, S, MapNodes::Default).unwrap(), at);
        let h = kfd.kfd_handle(at).unwrap();
        assert_eq!(sim.buffer_flags(h), Some(KFD_IOC_ALLOC_MEM_FLAGS_VRAM | W | NS));
        assert_eq!(sim.buffer_mappings(h), Some(vec![gpu_id]));
        let (view, offset) = sim.resolve(gpu_id, at, S).unwrap();
        assert_eq!((view.addr() + offset, view.len() as u64), (at, S), "the slice's own memory");
        assert!(!handles.contains(&h));
        handles.push(h);
    }
    assert_eq!(vram(sim) - used, 3 * S);
    let info = kfd.pointer_info(base + S).unwrap();
    assert_eq!(info.mapped_nodes.iter().collect::<Vec<_>>(), [node]);
    // The same slice again costs nothing; overlapping, unaligned or outside ones are refused.
    let calls = sim.total_ioctl_calls();
    assert_eq!(kfd.map_memory_to_gpu_sized(base + S, S, MapNodes::Default).unwrap(), base + S);
    let refused = |at, size| {
        memory_error(&kfd.map_memory_to_gpu_sized(at, size, MapNodes::Default).unwrap_err())
    };
    assert_eq!(refused(base + S + 4096, 4096), mem::Error::AddressInUse { addr: base + S + 4096 });
    assert_eq!(refused(base, 3 * S), mem::Error::AddressInUse { addr: base });
    assert_eq!(refused(base + 8, 4096), mem::Error::Misaligned { value: base + 8 });
    assert_eq!(refused(base + 2 * S, 2 * S), mem::Error::OutsideRange { addr: base + 4 * S - 1 });
    assert_eq!(sim.total_ioctl_calls(), calls);
    // An interior address that starts no slice unmaps nothing.
    let e = kfd.unmap_memory_from_gpu(base + 4096).unwrap_err();
    assert_eq!(memory_error(&e), mem::Error::UnknownAddress { addr: base + 4096 });
    // Unmapped in another order, each slice's buffer goes.
    for (k, h) in [(1, handles[2]), (2, handles[0]), (0, handles[1])] {
        kfd.unmap_memory_from_gpu(base + k * S).unwrap();
        assert_eq!(sim.buffer_mappings(h), None, "unmapping a slice frees its VRAM");
    }
    assert_eq!(vram(sim), used);
    assert!(kfd.pointer_info(base).unwrap().mapped_nodes.is_empty());
    kfd.unmap_memory_from_gpu(base).unwrap();
    // Size 0 maps the rest of the range: here all of it, as one buffer.
    assert_eq!(kfd.map_memory_to_gpu(base, MapNodes::Default).unwrap(), base);
    assert_eq!(vram(sim) - used, 3 * S);
    kfd.unmap_memory_from_gpu(base).unwrap();
    // Freeing the range removes the slices left.
    let buffers = sim.buffer_count();
    kfd.map_memory_to_gpu_sized(base, S, MapNodes::Default).unwrap();
    kfd.map_memory_to_gpu_sized(base + 2 * S, 4096, MapNodes::Default).unwrap();
    assert_eq!(sim.buffer_count(), buffers + 2);
    kfd.free(scratch).unwrap();
    assert_eq!(sim.buffer_count(), buffers);
    assert_eq!(vram(sim), used);
    kfd.check_memory_invariants().unwrap();
}

#[test]
fn alignment_and_fixed_addresses() {
    let kfd = opened(SimPlatform::new());
    let (node, _) = first_gpu(&kfd);
    let a = kfd.alloc_memory_align(node, 8192, 1 << 20, COARSE_VRAM).unwrap();
    assert_eq!(a.addr % (1 << 20), 0);
    let addr = a.addr;
    kfd.free(a).unwrap();
    // The freed range can be asked for by address.
    let fixed = kfd.alloc_memory_at(node, addr, 8192, COARSE_VRAM).unwrap();
    assert_eq!(fixed.addr, addr);
    let clash = kfd.alloc_memory_at(node, addr + 4096, 4096, COARSE_VRAM).unwrap_err();
    assert_eq!(memory_error(&clash), mem::Error::AddressInUse { addr: addr + 4096 });
    // An address outside every slab: the aperture grows a slab exactly there.
    let far = 0x2000_0000_0000;
    let grown = kfd.alloc_memory_at(node, far, 4096, COARSE_VRAM).unwrap();
    assert_eq!(grown.addr, far);
    assert!(kfd.memory_usage().reservations >= 2);
    for a in [fixed, grown] {
        kfd.free(a).unwrap();
    }
    kfd.check_memory_invariants().unwrap();
}

#[test]
fn bad_requests_are_refused_with_exact_errors() {
    let kfd = opened(SimPlatform::new());
    let (node, _) = first_gpu(&kfd);
    let sim = kfd.platform();
    let allocs = sim.ioctl_calls(nr::ALLOC);
    let cases: [(Result<_, Error>, mem::Error, ErrorKind); 9] = [
        (kfd.alloc_memory(node, 0, COARSE_VRAM), mem::Error::ZeroSize, ErrorKind::InvalidArgument),
        (
            kfd.alloc_memory(node, 4096, COARSE_VRAM.with_page_size(PageSize::Size2M)),
            mem::Error::Misaligned { value: 4096 },
            ErrorKind::Misaligned,
        ),
        (
            kfd.alloc_memory_align(node, 4096, 3 << 12, COARSE_VRAM),
            mem::Error::BadAlignment { align: 3 << 12 },
            ErrorKind::InvalidArgument,
        ),
        (
            kfd.alloc_memory_align(node, 4096, 1024, COARSE_VRAM),
            mem::Error::BadAlignment { align: 1024 },
            ErrorKind::InvalidArgument,
        ),
        // The "null address" of a fixed-address request.
        (
            kfd.alloc_memory_at(node, 0, 4096, COARSE_VRAM),
            mem::Error::InvalidFlags,
            ErrorKind::InvalidArgument,
        ),
        (
            kfd.alloc_memory(999, 4096, COARSE_VRAM),
            mem::Error::UnknownNode { node: 999 },
            ErrorKind::InvalidNode,
        ),
        (
            kfd.alloc_memory(
                node,
                4096,
                MemFlags::NON_PAGED | MemFlags::COARSE_GRAIN | MemFlags::EXTENDED_COHERENT,
            ),
            mem::Error::InvalidFlags,
            ErrorKind::InvalidArgument,
        ),
        (
            kfd.alloc_memory(
                node,
                4096,
                COARSE_VRAM | MemFlags::ONLY_ADDRESS | MemFlags::NO_ADDRESS,
            ),
            mem::Error::InvalidFlags,
            ErrorKind::InvalidArgument,
        ),
        (
            kfd.alloc_memory_align(node, 4096, 1 << 16, MemFlags::SCRATCH),
            mem::Error::NotSupported,
            ErrorKind::NotSupported,
        ),
    ];
    for (got, want, kind) in cases {
        let e = got.unwrap_err();
        assert_eq!(e.kind(), kind, "{e}");
        assert_eq!(memory_error(&e), want);
    }
    assert_eq!(sim.ioctl_calls(nr::ALLOC), allocs, "refused before reaching the kernel");
    assert_eq!(kfd.memory_usage().objects, 0);
    assert_eq!(kfd.memory_usage().pending, 0);
    kfd.check_memory_invariants().unwrap();
}

#[test]
fn contiguous_vram_needs_kfd_1_16() {
    let kfd = opened(SimPlatform::builder().kfd_version(1, 15).build());
    let (node, _) = first_gpu(&kfd);
    let e = kfd.alloc_memory(node, 4096, COARSE_VRAM | MemFlags::CONTIGUOUS).unwrap_err();
    assert!(matches!(e, Error::NotSupported { needs_minor: 16, .. }), "{e:?}");
    assert_eq!(kfd.platform().ioctl_calls(nr::ALLOC), 0);
    let kfd = opened(SimPlatform::new());
    let a = kfd.alloc_memory(node, 4096, COARSE_VRAM | MemFlags::CONTIGUOUS).unwrap();
    let f = kfd.platform().buffer_flags(a.kfd_handle.unwrap()).unwrap();
    assert_ne!(f & KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS, 0);
    kfd.free(a).unwrap();
}

#[test]
fn frees_name_exactly_one_live_object() {
    let kfd = opened(SimPlatform::new());
    let (node, _) = first_gpu(&kfd);
    let a = kfd.alloc_memory(node, 16384, COARSE_VRAM).unwrap();
    let (addr, handle) = (a.addr, a.handle);
    // Interior pointers, address 0 and unknown addresses name nothing.
    for bad in [addr + 4096, 0, 0x1234_5000] {
        let e = kfd.free_memory(bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotRegistered);
        assert_eq!(memory_error(&e), mem::Error::UnknownAddress { addr: bad });
    }
    kfd.free_memory(addr).unwrap();
    // Double free, by address and by handle.
    assert_eq!(
        memory_error(&kfd.free_memory(addr).unwrap_err()),
        mem::Error::UnknownAddress { addr }
    );
    let stale = kfd.free_handle(handle).unwrap_err();
    assert_eq!(
        (memory_error(&stale), stale.kind()),
        (mem::Error::StaleHandle, ErrorKind::InvalidHandle)
    );
    // A new object at the same address is not freed through the old handle.
    let b = kfd.alloc_memory_at(node, addr, 16384, COARSE_VRAM).unwrap();
    assert_eq!(memory_error(&kfd.free_handle(handle).unwrap_err()), mem::Error::StaleHandle);
    assert_eq!(memory_error(&kfd.handle_info(handle).unwrap_err()), mem::Error::StaleHandle);
    assert_eq!(kfd.handle_info(b.handle).unwrap().gpu_address, addr);
    kfd.free(b).unwrap();
    assert_eq!(kfd.platform().buffer_count(), 0);
}

#[test]
fn views_must_be_dropped_before_their_memory_is_freed() {
    let kfd = opened(SimPlatform::new());
    let flags = MemFlags::NON_PAGED | MemFlags::HOST_ACCESS;
    let a = kfd.alloc_memory(CPU_NODE, 4096, flags).unwrap();
    let addr = a.addr;
    let e = kfd.free_memory(addr).unwrap_err();
    assert_eq!((memory_error(&e), e.kind()), (mem::Error::MappingInUse { addr }, ErrorKind::Busy));
    let extra = kfd.cpu_mapping(addr + 100).unwrap();
    assert_eq!(extra.addr(), addr);
    drop(a);
    assert_eq!(
        memory_error(&kfd.free_memory(addr).unwrap_err()),
        mem::Error::MappingInUse { addr }
    );
    // The device cannot be closed under a view either.
    assert_eq!(memory_error(&kfd.close().unwrap_err()), mem::Error::MappingInUse { addr });
    assert_eq!(kfd.open_count(), 1);
    drop(extra);
    kfd.free_memory(addr).unwrap();
    assert_eq!(
        memory_error(&kfd.cpu_mapping(addr).unwrap_err()),
        mem::Error::UnknownAddress { addr }
    );
    let (node, _) = first_gpu(&kfd);
    let vram = kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap();
    let e = kfd.cpu_mapping(vram.addr).unwrap_err();
    assert_eq!(memory_error(&e), mem::Error::NoCpuAccess { addr: vram.addr });
    assert_eq!(kfd.kfd_handle(vram.addr).unwrap(), vram.kfd_handle.unwrap());
    kfd.free(vram).unwrap();
    kfd.close().unwrap();
}

#[test]
fn vram_exhaustion_and_available_memory() {
    let kfd = opened(SimPlatform::new());
    let (node, gpu_id) = first_gpu(&kfd);
    let total = kfd.platform().memory_usage(gpu_id).unwrap().vram_size;
    assert_eq!(kfd.available_memory(node).unwrap(), total);
    let a = kfd.alloc_memory(node, 1 << 30, COARSE_VRAM).unwrap();
    assert_eq!(kfd.available_memory(node).unwrap(), total - (1 << 30));
    let e = kfd.alloc_memory(node, total, COARSE_VRAM).unwrap_err();
    assert_eq!(e, Error::Ioctl { name: "ALLOC_MEMORY_OF_GPU", errno: Errno::ENOMEM });
    assert_eq!(e.kind(), ErrorKind::OutOfResources);
    let usage = kfd.memory_usage();
    assert_eq!(
        (usage.objects, usage.pending, usage.va_live[0]),
        (1, 0, 1),
        "the failed request left nothing"
    );
    kfd.free(a).unwrap();
    // A CPU node has no VRAM to ask about.
    assert_eq!(
        memory_error(&kfd.available_memory(CPU_NODE).unwrap_err()),
        mem::Error::NotAGpu { node: CPU_NODE }
    );
    kfd.check_memory_invariants().unwrap();
}

/// kfdtest `KFDMemoryTest.MemoryAllocAll`: available memory is reported and an allocation of
/// about that size succeeds (shrinking from available + 20 MiB in 2 MiB steps).
#[test]
fn kfdtest_memory_alloc_all() {
    let kfd = opened(SimPlatform::new());
    let (node, _) = first_gpu(&kfd);
    let available = kfd.available_memory(node).unwrap();
    let mut size = available + (20 << 20);
    let got = loop {
        match kfd.alloc_memory(node, size, COARSE_VRAM) {
            Ok(a) => break a,
            Err(Error::Ioctl { errno: Errno::ENOMEM, .. }) => size -= 2 << 20,
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(got.size, available, "exactly what was reported fits");
    assert_eq!(kfd.available_memory(node).unwrap(), 0);
    kfd.free(got).unwrap();
}

/// kfdtest `KFDMemoryTest.MemoryAlloc` / `MapMemoryToGPU`: system memory allocates, maps,
/// unmaps and frees.
#[test]
fn kfdtest_memory_alloc_and_map() {
    let kfd = opened(SimPlatform::new());
    let flags = MemFlags::HOST_ACCESS | MemFlags::NON_PAGED;
    let a = kfd.alloc_memory(CPU_NODE, 4096, flags).unwrap();
    let addr = a.addr;
    drop(a.mapping);
    kfd.map_memory_to_gpu(addr, MapNodes::Default).unwrap();
    kfd.unmap_memory_from_gpu(addr).unwrap();
    kfd.free_memory(addr).unwrap();
}

#[test]
fn capacity_is_a_typed_error_and_recovers() {
    let kfd: Box<Kfd<SimPlatform, BoxedMemory>> =
        Box::new(Kfd::with_memory(SimPlatform::new(), boxed_tables(3)));
    kfd.open().unwrap();
    let node = kfd.gpu_nodes().unwrap().first().unwrap();
    let live: Vec<_> = (0..3).map(|_| kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap()).collect();
    let allocs = kfd.platform().ioctl_calls(nr::ALLOC);
    let e = kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap_err();
    assert_eq!(memory_error(&e), mem::Error::CapacityExhausted { capacity: 3 });
    assert_eq!(e.kind(), ErrorKind::CapacityExhausted);
    assert_eq!(kfd.platform().ioctl_calls(nr::ALLOC), allocs, "refused before the ioctl");
    let mut live = live.into_iter();
    kfd.free(live.next().unwrap()).unwrap();
    let again = kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap();
    for a in live.chain([again]) {
        kfd.free(a).unwrap();
    }
    kfd.check_memory_invariants().unwrap();
}
