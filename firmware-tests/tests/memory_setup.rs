//! What open sets up for memory (render nodes, apertures, VMs, policies, the SVM apertures in
//! both modes) and what close leaves; the environment settings; doorbell, MMIO and policy.

use firmware_tests::{first_gpu, memory_error, nr, opened};
use hsakmt_core::device::memory_manager::SvmMode;
use hsakmt_core::device::{Error, MapNodes};
use hsakmt_core::memory::{self as mem, CachePolicy, MemFlags};
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::uapi::*;
use hsakmt_sim::{DOORBELL_SLICE, SimPlatform};

const COARSE_VRAM: MemFlags = MemFlags::NON_PAGED.union(MemFlags::COARSE_GRAIN);
const FINE_HOST: MemFlags = MemFlags::NON_PAGED.union(MemFlags::HOST_ACCESS);

#[test]
fn open_binds_every_gpu_and_sets_up_slab_mode() {
    let kfd = opened(SimPlatform::new());
    let sim = kfd.platform();
    let gpus = sim.gpu_ids();
    assert_eq!(sim.ioctl_calls(nr::APERTURES), 1);
    assert_eq!(sim.ioctl_calls(nr::ACQUIRE_VM), gpus.len() as u64);
    assert_eq!(sim.ioctl_calls(nr::MEMORY_POLICY), gpus.len() as u64);
    assert!(gpus.iter().all(|&g| sim.vm_acquired(g)));
    let usage = kfd.memory_usage();
    assert_eq!((usage.mode, usage.reservations, usage.objects), (SvmMode::Slabs, 1, 0));
    // Coarse and fine grain share the one aperture.
    let (node, _) = first_gpu(&kfd);
    let a = kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap();
    let b = kfd.alloc_memory(0, 4096, FINE_HOST).unwrap();
    assert_eq!(kfd.memory_usage().va_live, [2, 0, 0]);
    kfd.free(a).unwrap();
    kfd.free(b).unwrap();
}

#[test]
fn reserved_mode_splits_coherent_and_default_apertures() {
    let kfd = opened(SimPlatform::builder().env("HSA_RESERVE_SVM", "1").build());
    let usage = kfd.memory_usage();
    assert_eq!((usage.mode, usage.reservations), (SvmMode::Reserved, 1));
    let (node, gpu_id) = first_gpu(&kfd);
    let coarse = kfd.alloc_memory(node, 8192, COARSE_VRAM).unwrap();
    let fine = kfd.alloc_memory(0, 8192, FINE_HOST).unwrap();
    assert_eq!(kfd.memory_usage().va_live, [1, 1, 0]);
    assert!(fine.addr < coarse.addr, "the coherent aperture is the reservation's first quarter");
    assert!(coarse.addr + coarse.size <= 1 << 40, "inside the 1 TiB reservation");
    // Reserved apertures align the end of small buffers (libhsakmt's end alignment).
    assert_eq!((coarse.addr + coarse.size) % 8192, 0);
    fine.mapping.as_ref().unwrap().write(0, b"fine").unwrap();
    kfd.map_memory_to_gpu(fine.addr, MapNodes::Default).unwrap();
    let (view, off) = kfd.platform().resolve(gpu_id, fine.addr, 4).unwrap();
    let mut seen = [0u8; 4];
    view.read(usize::try_from(off).unwrap(), &mut seen).unwrap();
    assert_eq!(&seen, b"fine");
    drop(view);
    kfd.free(coarse).unwrap();
    kfd.free(fine).unwrap();
    // Close and reopen: the reservation is kept and reused, nothing else survives.
    kfd.close().unwrap();
    assert_eq!(kfd.platform().buffer_count(), 0);
    kfd.open().unwrap();
    assert_eq!(kfd.memory_usage().reservations, 1);
    assert_eq!(kfd.memory_usage().mode, SvmMode::Reserved);
    let again = kfd.alloc_memory(0, 4096, FINE_HOST).unwrap();
    kfd.free(again).unwrap();
    kfd.check_memory_invariants().unwrap();
}

#[test]
fn close_forgets_objects_and_the_kernel_releases_their_buffers() {
    let kfd = opened(SimPlatform::new());
    let (node, gpu_id) = first_gpu(&kfd);
    let a = kfd.alloc_memory(node, 1 << 20, COARSE_VRAM).unwrap();
    kfd.map_memory_to_gpu(a.addr, MapNodes::Default).unwrap();
    let reservations = kfd.memory_usage().reservations;
    kfd.close().unwrap();
    let sim = kfd.platform();
    assert_eq!((sim.buffer_count(), sim.memory_usage(gpu_id).unwrap().vram_used), (0, 0));
    assert_eq!(kfd.free_memory(a.addr), Err(Error::NotOpened));
    kfd.open().unwrap();
    let usage = kfd.memory_usage();
    assert_eq!((usage.objects, usage.reservations), (0, reservations), "address space is reused");
    let b = kfd.alloc_memory(node, 1 << 20, COARSE_VRAM).unwrap();
    kfd.free(b).unwrap();
}

#[test]
fn environment_settings() {
    // HSA_DISABLE_CACHE: coarse-grained memory becomes coherent and uncached.
    let kfd = opened(SimPlatform::builder().env("HSA_DISABLE_CACHE", "1").build());
    let (node, _) = first_gpu(&kfd);
    let a = kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap();
    let f = kfd.platform().buffer_flags(a.kfd_handle.unwrap()).unwrap();
    let cu = KFD_IOC_ALLOC_MEM_FLAGS_COHERENT | KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED;
    assert_eq!(f & cu, cu);
    kfd.free(a).unwrap();
    // HSA_USERPTR_FOR_PAGED_MEM=0: paged host memory is a GTT buffer.
    let kfd = opened(SimPlatform::builder().env("HSA_USERPTR_FOR_PAGED_MEM", "0").build());
    let a = kfd.alloc_memory(0, 4096, MemFlags::HOST_ACCESS).unwrap();
    let f = kfd.platform().buffer_flags(a.kfd_handle.unwrap()).unwrap();
    assert_ne!(f & KFD_IOC_ALLOC_MEM_FLAGS_GTT, 0);
    kfd.free(a).unwrap();
    // HSA_SVM_GUARD_PAGES: four guard pages after each allocation.
    let kfd = opened(SimPlatform::builder().env("HSA_SVM_GUARD_PAGES", "4").build());
    let (node, _) = first_gpu(&kfd);
    let a = kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap();
    assert_eq!(kfd.memory_usage().va_used[0], 5 * 4096);
    kfd.free(a).unwrap();
}

#[test]
fn doorbell_and_mmio_pages() {
    let kfd = opened(SimPlatform::new());
    let (node, gpu_id) = first_gpu(&kfd);
    let sim = kfd.platform();
    // The doorbell offset CREATE_QUEUE reports: KFD_MMAP_TYPE_DOORBELL | gpu_id << 46.
    let offset = (3 << 62) | (u64::from(gpu_id) << 46);
    let db = kfd.alloc_doorbell(node, DOORBELL_SLICE, offset).unwrap();
    let h = db.kfd_handle.unwrap();
    assert_eq!(
        sim.buffer_flags(h),
        Some(
            KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL
                | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
                | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT
                | KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE
        )
    );
    let view = db.mapping.as_ref().unwrap();
    assert_eq!((view.addr(), view.len()), (db.addr, DOORBELL_SLICE as usize));
    view.ring_doorbell64(8, 42);
    kfd.map_memory_to_gpu(db.addr, MapNodes::Only(&[node])).unwrap();
    kfd.free(db).unwrap();
    // The kernel takes exactly its doorbell slice.
    let e = kfd.alloc_doorbell(node, 4096, offset).unwrap_err();
    assert_eq!(
        e,
        Error::Ioctl { name: "ALLOC_MEMORY_OF_GPU", errno: hsakmt_core::error::Errno::EINVAL }
    );
    // The MMIO remap page: CPU-mapped through /dev/kfd and GPU-mapped on the GPU's peers.
    let mmio = kfd.alloc_mmio_remap(node).unwrap();
    assert_eq!(mmio.size, 4096);
    assert_eq!(
        sim.buffer_mappings(mmio.kfd_handle.unwrap()).unwrap().len(),
        kfd.peer_nodes(node).unwrap().len() as usize
    );
    assert!(mmio.mapping.is_some());
    kfd.free(mmio).unwrap();
    assert_eq!(sim.buffer_count(), 0);
    // The legacy memory policy applies to Kaveri only.
    let e =
        kfd.set_memory_policy(node, CachePolicy::Cached, CachePolicy::NonCached, 0, 0).unwrap_err();
    assert_eq!(memory_error(&e), mem::Error::NotSupported);
    assert_eq!(
        memory_error(
            &kfd.set_memory_policy(0, CachePolicy::Cached, CachePolicy::Cached, 0, 0).unwrap_err()
        ),
        mem::Error::NotAGpu { node: 0 }
    );
}
