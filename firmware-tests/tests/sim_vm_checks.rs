//! The simulated kernel's checks of GPU virtual addresses, issued raw (the library's own
//! allocator never makes these mistakes): an allocation over an SVM range is `EADDRINUSE`;
//! a mapping must be page aligned, end inside the 48-bit VM, and not overlap any buffer
//! mapped on that GPU — however many buffers lie in between (`EINVAL`).

use firmware_tests::{SimKfd, opened};
use hsakmt_core::device::Error;
use hsakmt_core::error::Errno;
use hsakmt_core::memory::svm_attributes::SvmAttribute as A;
use hsakmt_core::platform::Ioctl;
use hsakmt_core::uapi::*;
use hsakmt_hostmem::{map_anonymous, reserve};
use hsakmt_sim::SimPlatform;

fn gpus(kfd: &SimKfd) -> Vec<u32> {
    kfd.platform().gpu_ids()
}

fn alloc(kfd: &SimKfd, gpu_id: u32, va: u64, size: u64) -> Result<u64, Errno> {
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: va,
        size,
        gpu_id,
        flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        ..Default::default()
    };
    match kfd.ioctl(&mut Ioctl::AllocMemoryOfGpu(&mut a)) {
        Ok(()) => Ok(a.handle),
        Err(Error::Ioctl { errno, .. }) => Err(errno),
        Err(e) => panic!("{e:?}"),
    }
}

fn map(kfd: &SimKfd, handle: u64, on: u32) -> Result<(), Errno> {
    let mut a = kfd_ioctl_map_memory_to_gpu_args { handle, ..Default::default() };
    match kfd.ioctl(&mut Ioctl::MapMemoryToGpu { args: &mut a, devices: &[on] }) {
        Ok(()) => Ok(()),
        Err(Error::Ioctl { errno, .. }) => Err(errno),
        Err(e) => panic!("{e:?}"),
    }
}

const PAGE: u64 = 4096;

#[test]
fn map_conflicts_are_found_past_any_number_of_buffers() {
    let kfd = opened(SimPlatform::new());
    let g = gpus(&kfd);
    let base = 0x7000_0000_0000u64;
    // A large buffer on GPU 0.
    let big = alloc(&kfd, g[0], base, 64 * PAGE).unwrap();
    map(&kfd, big, g[0]).unwrap();
    // Twenty one-page buffers inside its range, mapped on GPU 1 only (another VM).
    for i in 1..=20 {
        let h = alloc(&kfd, g[0], base + i * PAGE, PAGE).unwrap();
        map(&kfd, h, g[1]).unwrap();
    }
    // A buffer overlapping the big one, mapped on GPU 0: the conflict is 21 buffers back.
    let late = alloc(&kfd, g[0], base + 30 * PAGE, PAGE).unwrap();
    assert_eq!(map(&kfd, late, g[0]), Err(Errno::EINVAL));
    // On GPU 1 it does not overlap anything mapped there.
    map(&kfd, late, g[1]).unwrap();
    // Just after the big one is fine on GPU 0.
    let after = alloc(&kfd, g[0], base + 64 * PAGE, PAGE).unwrap();
    map(&kfd, after, g[0]).unwrap();
    // Unmapping the big one frees its range on GPU 0.
    let mut u = kfd_ioctl_unmap_memory_from_gpu_args { handle: big, ..Default::default() };
    kfd.ioctl(&mut Ioctl::UnmapMemoryFromGpu { args: &mut u, devices: &[g[0]] }).unwrap();
    map(&kfd, late, g[0]).unwrap();
}

#[test]
fn mappings_are_page_aligned_and_inside_the_vm() {
    let kfd = opened(SimPlatform::new());
    let g = gpus(&kfd)[0];
    let odd = alloc(&kfd, g, 0x7100_0000_0100, PAGE).unwrap();
    assert_eq!(map(&kfd, odd, g), Err(Errno::EINVAL));
    let top = (1u64 << 48) - PAGE;
    let past = alloc(&kfd, g, top, 2 * PAGE).unwrap();
    assert_eq!(map(&kfd, past, g), Err(Errno::EINVAL), "ends above the 48-bit VM");
    let last = alloc(&kfd, g, top, PAGE).unwrap();
    map(&kfd, last, g).unwrap();
    let wrap = alloc(&kfd, g, u64::MAX - PAGE + 1, PAGE).unwrap();
    assert_eq!(map(&kfd, wrap, g), Err(Errno::EINVAL));
}

#[test]
fn allocations_over_svm_ranges_are_refused() {
    let kfd = opened(SimPlatform::new());
    let g = gpus(&kfd)[0];
    let base = reserve(None, 16 * PAGE, PAGE).unwrap();
    let _mem = map_anonymous(base, 16 * PAGE).unwrap();
    kfd.svm_set_attributes(base + 4 * PAGE, 4 * PAGE, &[A::Granularity(1)]).unwrap();
    assert_eq!(alloc(&kfd, g, base + 5 * PAGE, PAGE), Err(Errno::EADDRINUSE));
    // The last page of the allocation touching the range is enough.
    assert_eq!(alloc(&kfd, g, base, 5 * PAGE), Err(Errno::EADDRINUSE));
    // Next to it is fine.
    alloc(&kfd, g, base, 4 * PAGE).unwrap();
    alloc(&kfd, g, base + 8 * PAGE, PAGE).unwrap();
    assert_eq!(kfd.platform().accounting().svm_ranges, 1);
}
