//! The simulator's memory ioctls answered directly, without the library: amdkfd's validation
//! and errnos.

use hsakmt_core::error::Errno;
use hsakmt_core::platform::{Access, EntryKind, Ioctl, KfdDevice, SharedMemory, SysfsFile};
use hsakmt_core::uapi::*;
use hsakmt_hostmem::{map_anonymous, reserve};
use hsakmt_sim::{DOORBELL_SLICE, Profile, SimPlatform};

const VRAM: u32 = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;

/// An opened simulator with the VMs of its first two GPUs acquired.
fn device(sim: SimPlatform) -> (SimPlatform, u32, u32) {
    sim.open().unwrap();
    let gpus = sim.gpu_ids();
    for &gpu_id in gpus.iter().take(2) {
        render_fd(&sim, gpu_id);
    }
    (sim.clone(), gpus[0], gpus.get(1).copied().unwrap_or(0))
}

/// The render-node descriptor of `gpu_id` (the one `ACQUIRE_VM` accepts; acquiring it on the
/// way).
fn render_fd(sim: &SimPlatform, gpu_id: u32) -> u32 {
    (128..256)
        .filter_map(|m| sim.open_render_node(m).ok())
        .find(|&fd| {
            let mut a = kfd_ioctl_acquire_vm_args { drm_fd: fd, gpu_id };
            sim.ioctl(&mut Ioctl::AcquireVm(&mut a)).is_ok()
        })
        .expect("a render node for the GPU")
}

fn alloc(sim: &SimPlatform, gpu_id: u32, va: u64, size: u64, flags: u32) -> Result<u64, Errno> {
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: va,
        size,
        gpu_id,
        flags,
        ..Default::default()
    };
    sim.ioctl(&mut Ioctl::AllocMemoryOfGpu(&mut a)).map(|()| a.handle)
}

fn free(sim: &SimPlatform, handle: u64) -> Result<(), Errno> {
    sim.ioctl(&mut Ioctl::FreeMemoryOfGpu(&mut kfd_ioctl_free_memory_of_gpu_args { handle }))
}

fn map(
    sim: &SimPlatform,
    handle: u64,
    devices: &[u32],
    n_success: u32,
) -> (Result<(), Errno>, u32) {
    let mut a = kfd_ioctl_map_memory_to_gpu_args { handle, n_success, ..Default::default() };
    let r = sim.ioctl(&mut Ioctl::MapMemoryToGpu { args: &mut a, devices });
    (r, a.n_success)
}

fn unmap(sim: &SimPlatform, handle: u64, devices: &[u32]) -> Result<(), Errno> {
    let mut a = kfd_ioctl_unmap_memory_from_gpu_args { handle, ..Default::default() };
    sim.ioctl(&mut Ioctl::UnmapMemoryFromGpu { args: &mut a, devices })
}

#[test]
fn alloc_and_free_validation() {
    let (sim, g, _) = device(SimPlatform::new());
    let va = 0x7000_0000_0000;
    assert_eq!(alloc(&sim, g, va, 0, VRAM), Err(Errno::EINVAL), "size 0");
    assert_eq!(alloc(&sim, 0xdead, va, 4096, VRAM), Err(Errno::EINVAL), "unknown gpu_id");
    assert_eq!(
        alloc(&sim, g, va, 4096, KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE),
        Err(Errno::EINVAL),
        "no domain"
    );
    assert_eq!(
        alloc(&sim, g, va, 4096, KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL),
        Err(Errno::EINVAL),
        "doorbell size other than the slice"
    );
    assert!(alloc(&sim, g, va, DOORBELL_SLICE, KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL).is_ok());
    assert_eq!(alloc(&sim, g, va, 8192, KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP), Err(Errno::EINVAL));
    // A GPU whose VM was not acquired.
    let third = sim.gpu_ids()[2];
    assert_eq!(alloc(&sim, third, va, 4096, VRAM), Err(Errno::ENODEV));
    // VRAM exhausted.
    let size = sim.memory_usage(g).unwrap().vram_size;
    let big = alloc(&sim, g, va, size, VRAM).unwrap();
    assert_eq!(alloc(&sim, g, va, 4096, VRAM), Err(Errno::ENOMEM));
    free(&sim, big).unwrap();
    // User pointers to memory that is not mapped.
    let u = KFD_IOC_ALLOC_MEM_FLAGS_USERPTR;
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: va,
        size: 4096,
        gpu_id: g,
        flags: u,
        mmap_offset: 0x10000,
        ..Default::default()
    };
    assert_eq!(sim.ioctl(&mut Ioctl::AllocMemoryOfGpu(&mut a)), Err(Errno::EFAULT));
    // Handles: gpu_id in the high half; a double free and a foreign gpu_id are EINVAL.
    let h = alloc(&sim, g, va, 4096, VRAM).unwrap();
    assert_eq!(h >> 32, u64::from(g));
    free(&sim, h).unwrap();
    assert_eq!(free(&sim, h), Err(Errno::EINVAL));
    assert_eq!(free(&sim, (0xdead << 32) | 1), Err(Errno::EINVAL));
}

#[test]
fn public_vram_needs_a_large_bar() {
    let mut profile = Profile::embedded("mi25-vega10-rocm18").unwrap();
    let bank = SysfsFile::EntryProperties { node: 1, kind: EntryKind::MemBank, index: 0 };
    let text =
        String::from_utf8_lossy(profile.file(bank).unwrap()).replace("heap_type 1", "heap_type 2");
    profile.set_file(bank, text.as_bytes());
    let (sim, g, _) = device(SimPlatform::builder().profile(profile).build());
    let public = VRAM | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC;
    assert_eq!(alloc(&sim, g, 0x7000_0000_0000, 4096, public), Err(Errno::EINVAL));
    assert!(alloc(&sim, g, 0x7000_0000_0000, 4096, VRAM).is_ok());
}

#[test]
fn map_and_unmap_validation() {
    let (sim, g, g2) = device(SimPlatform::new());
    let h = alloc(&sim, g, 0x7000_0000_0000, 8192, VRAM).unwrap();
    assert_eq!(map(&sim, h, &[], 0).0, Err(Errno::EINVAL), "empty device list");
    assert_eq!(map(&sim, h, &[g], 2).0, Err(Errno::EINVAL), "n_success > n_devices");
    assert_eq!(map(&sim, h | 0xffff, &[g], 0).0, Err(Errno::ENOMEM), "unknown handle");
    assert_eq!(map(&sim, (0xdead << 32) | 1, &[g], 0).0, Err(Errno::EINVAL), "unknown gpu");
    assert_eq!(map(&sim, h, &[g, 0xbeef], 0), (Err(Errno::EINVAL), 1), "unknown peer after one");
    let third = sim.gpu_ids()[2];
    assert_eq!(map(&sim, h, &[g2, third], 1), (Err(Errno::ENODEV), 1), "peer VM not acquired");
    // Resuming from n_success maps the rest only.
    assert_eq!(map(&sim, h, &[g, g2], 1), (Ok(()), 2));
    assert_eq!(sim.buffer_mappings(h), Some(vec![g, g2]));
    // A buffer without an address cannot be mapped.
    let no_va = alloc(&sim, g, 0, 4096, VRAM).unwrap();
    assert_eq!(map(&sim, no_va, &[g], 0).0, Err(Errno::EINVAL));
    // An overlapping address range on the same GPU conflicts.
    let other = alloc(&sim, g, 0x7000_0000_1000, 4096, VRAM).unwrap();
    assert_eq!(map(&sim, other, &[g], 0).0, Err(Errno::EINVAL));
    // Still mapped: no free.
    assert_eq!(free(&sim, h), Err(Errno::EBUSY));
    // Queues hold buffers.
    sim.pin_buffer(0x7000_0000_0000).unwrap();
    assert_eq!(unmap(&sim, h, &[g]), Err(Errno::EBUSY));
    sim.unpin_buffer(h);
    assert_eq!(unmap(&sim, h, &[]), Err(Errno::EINVAL));
    assert_eq!(unmap(&sim, h | 0xffff, &[g]), Err(Errno::ENOMEM));
    unmap(&sim, h, &[g, g2]).unwrap();
    // Unmapping from a device the buffer is not mapped on does nothing.
    unmap(&sim, h, &[g]).unwrap();
    free(&sim, h).unwrap();
}

#[test]
fn cpu_mappings_of_buffers() {
    let (sim, g, g2) = device(SimPlatform::new());
    let base = reserve(None, 1 << 20, 1 << 20).unwrap();
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: base,
        size: 8192,
        gpu_id: g,
        flags: VRAM | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC,
        ..Default::default()
    };
    sim.ioctl(&mut Ioctl::AllocMemoryOfGpu(&mut a)).unwrap();
    let fd = render_fd(&sim, g);
    let other_fd = render_fd(&sim, g2);
    assert_eq!(
        sim.map_buffer(other_fd, a.mmap_offset, 8192, base, Access::ReadWrite).err(),
        Some(Errno::EINVAL)
    );
    assert_eq!(
        sim.map_buffer(fd, a.mmap_offset, 16384, base, Access::ReadWrite).err(),
        Some(Errno::EINVAL)
    );
    let m = sim.map_buffer(fd, a.mmap_offset, 8192, base, Access::ReadWrite).unwrap();
    drop(m);
    // CPU-invisible VRAM and user pointers refuse CPU mappings.
    let mut b = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: base + (512 << 10),
        size: 4096,
        gpu_id: g,
        flags: VRAM,
        ..Default::default()
    };
    sim.ioctl(&mut Ioctl::AllocMemoryOfGpu(&mut b)).unwrap();
    assert_eq!(
        sim.map_buffer(fd, b.mmap_offset, 4096, b.va_addr, Access::ReadWrite).err(),
        Some(Errno::EPERM)
    );
    let user = map_anonymous(base + (256 << 10), 4096).unwrap();
    let mut c = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: base + (768 << 10),
        size: 4096,
        gpu_id: g,
        flags: KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        mmap_offset: user.addr(),
        ..Default::default()
    };
    sim.ioctl(&mut Ioctl::AllocMemoryOfGpu(&mut c)).unwrap();
    assert_eq!(
        sim.map_buffer(fd, c.mmap_offset, 4096, c.va_addr, Access::ReadWrite).err(),
        Some(Errno::EPERM)
    );
}

#[test]
fn dmabuf_svm_xnack_and_scratch_validation() {
    let (sim, g, _) = device(SimPlatform::new());
    let mut info = kfd_ioctl_get_dmabuf_info_args { dmabuf_fd: 77, ..Default::default() };
    assert_eq!(
        sim.ioctl(&mut Ioctl::GetDmabufInfo { args: &mut info, metadata: &mut [] }),
        Err(Errno::EBADF)
    );
    let h = alloc(&sim, g, 0x7000_0000_0000, 4096, VRAM).unwrap();
    let mut e = kfd_ioctl_export_dmabuf_args { handle: h, ..Default::default() };
    sim.ioctl(&mut Ioctl::ExportDmabuf(&mut e)).unwrap();
    assert_eq!(sim.dmabuf_count(), 1);
    sim.close_fd(e.dmabuf_fd);
    assert_eq!(sim.dmabuf_count(), 0, "closing the descriptor releases it");
    let mut bad = kfd_ioctl_export_dmabuf_args { handle: h | 0xffff, ..Default::default() };
    assert_eq!(sim.ioctl(&mut Ioctl::ExportDmabuf(&mut bad)), Err(Errno::EINVAL));

    // SVM: alignment, attribute types, gpu_ids, unknown op, unmapped ranges.
    let base = reserve(None, 8192, 4096).unwrap();
    let _mem = map_anonymous(base, 8192).unwrap();
    let svm = |op, start, size, attrs: &mut [kfd_ioctl_svm_attribute]| {
        let mut a = kfd_ioctl_svm_args { start_addr: start, size, op, ..Default::default() };
        sim.ioctl(&mut Ioctl::Svm { args: &mut a, attrs })
    };
    let attr = |t, v| kfd_ioctl_svm_attribute { r#type: t, value: v };
    let set = KFD_IOCTL_SVM_OP_SET_ATTR;
    assert_eq!(svm(set, base + 1, 4096, &mut []), Err(Errno::EINVAL));
    assert_eq!(svm(set, base, 0, &mut []), Err(Errno::EINVAL));
    assert_eq!(svm(set, base, 4096, &mut [attr(99, 0)]), Err(Errno::EINVAL));
    assert_eq!(
        svm(set, base, 4096, &mut [attr(KFD_IOCTL_SVM_ATTR_ACCESS, 0xbeef)]),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        svm(
            set,
            base,
            4096,
            &mut [attr(KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, KFD_IOCTL_SVM_LOCATION_UNDEFINED)]
        ),
        Err(Errno::EINVAL),
        "prefetch needs a location"
    );
    assert_eq!(svm(7, base, 4096, &mut []), Err(Errno::EINVAL));
    assert_eq!(svm(KFD_IOCTL_SVM_OP_GET_ATTR, 0x10000, 4096, &mut []), Err(Errno::EINVAL));
    svm(set, base, 8192, &mut [attr(KFD_IOCTL_SVM_ATTR_GRANULARITY, 200)]).unwrap();
    let mut q = [attr(KFD_IOCTL_SVM_ATTR_GRANULARITY, 0)];
    svm(KFD_IOCTL_SVM_OP_GET_ATTR, base, 8192, &mut q).unwrap();
    assert_eq!(q[0].value, 0x3f, "granularity is capped");

    // XNACK: query, set, busy with queues.
    let mut x = kfd_ioctl_set_xnack_mode_args { xnack_enabled: -1 };
    sim.ioctl(&mut Ioctl::SetXnackMode(&mut x)).unwrap();
    assert_eq!(x.xnack_enabled, 0);
    sim.set_live_queues(2);
    let mut on = kfd_ioctl_set_xnack_mode_args { xnack_enabled: 1 };
    assert_eq!(sim.ioctl(&mut Ioctl::SetXnackMode(&mut on)), Err(Errno::EBUSY));
    sim.set_live_queues(0);
    sim.ioctl(&mut Ioctl::SetXnackMode(&mut on)).unwrap();
    assert!(sim.xnack_enabled());

    // Scratch backing: recorded per GPU.
    let mut s = kfd_ioctl_set_scratch_backing_va_args { va_addr: 0x1234, gpu_id: g, pad: 0 };
    sim.ioctl(&mut Ioctl::SetScratchBackingVa(&mut s)).unwrap();
    assert_eq!(sim.scratch_backing(g), Some(0x1234));
    s.gpu_id = 0xdead;
    assert_eq!(sim.ioctl(&mut Ioctl::SetScratchBackingVa(&mut s)), Err(Errno::EINVAL));
    // Closing the device ends the process's buffers.
    sim.close();
    assert_eq!(sim.buffer_count(), 0);
}

#[test]
fn ioctls_newer_than_the_kernel_do_not_exist() {
    let (sim, g, _) = device(SimPlatform::builder().kfd_version(1, 8).build());
    let mut a = kfd_ioctl_get_available_memory_args { gpu_id: g, ..Default::default() };
    assert_eq!(sim.ioctl(&mut Ioctl::AvailableMemory(&mut a)), Err(Errno::ENOTTY));
    let (sim, g, _) = device(SimPlatform::new());
    let mut a = kfd_ioctl_get_available_memory_args { gpu_id: g, ..Default::default() };
    sim.ioctl(&mut Ioctl::AvailableMemory(&mut a)).unwrap();
    assert_eq!(a.available, sim.memory_usage(g).unwrap().vram_size);
}

#[test]
fn freeing_the_doorbell_buffer_forgets_its_page() {
    let (sim, g, _) = device(SimPlatform::builder().build());
    let va = reserve(None, 4 * DOORBELL_SLICE, 4096).unwrap();
    let flags = KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL;
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: va,
        size: DOORBELL_SLICE,
        gpu_id: g,
        flags,
        ..Default::default()
    };
    sim.ioctl(&mut Ioctl::AllocMemoryOfGpu(&mut a)).unwrap();
    let page = sim.map_kfd(a.mmap_offset, DOORBELL_SLICE, Some(va), Access::ReadWrite).unwrap();
    assert_eq!(page.addr(), va);
    assert_eq!(sim.doorbell_pages(), 1, "the processors watch the page");
    drop(page);
    free(&sim, a.handle).unwrap();
    assert_eq!(sim.doorbell_pages(), 0, "no view outlives the buffer");
    // The address is the process's reservation again: its allocator may place anything there
    // (with the view left behind, this was refused: a live mapping holds the range).
    let reused = map_anonymous(va, DOORBELL_SLICE).unwrap();
    reused.write(0, &[1]).unwrap();
    drop(reused);
    // The same again at the same address, as a retried first queue does.
    sim.ioctl(&mut Ioctl::AllocMemoryOfGpu(&mut a)).unwrap();
    let page = sim.map_kfd(a.mmap_offset, DOORBELL_SLICE, Some(va), Access::ReadWrite).unwrap();
    assert_eq!(sim.doorbell_pages(), 1);
    drop(page);
    free(&sim, a.handle).unwrap();
    hsakmt_hostmem::release(va, 4 * DOORBELL_SLICE).unwrap();
}
