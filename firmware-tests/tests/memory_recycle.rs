//! The recycle cache of freed allocations, through the device facade over the simulated
//! kernel: freed memory is gone for every lookup and every handle, the kernel sees exactly one
//! `ALLOC` and one `FREE` per pair, exhaustion of address space, slots or a fixed range flushes
//! the cache and succeeds, and close (or `trim_memory`) releases everything — checked by
//! scenarios and by random operation sequences against a model.

use firmware_tests::{first_gpu, memory_error, nr, opened};
use hsakmt_core::device::memory_manager::{RECYCLE_CAPACITY, RECYCLE_DEPTH};
use hsakmt_core::device::{Error, Kfd, MapNodes, PointerKind};
use hsakmt_core::error::Errno;
use hsakmt_core::memory::{self as mem, MemFlags, NodeSet};
use hsakmt_core::platform::SharedMemory;
use hsakmt_linux::{BoxedMemory, boxed_tables};
use hsakmt_sim::{IoctlFault, SimPlatform, Trigger};

const COARSE_VRAM: MemFlags = MemFlags::NON_PAGED.union(MemFlags::COARSE_GRAIN);
const VISIBLE_VRAM: MemFlags = COARSE_VRAM.union(MemFlags::HOST_ACCESS);
const HOST: MemFlags = MemFlags::NON_PAGED.union(MemFlags::HOST_ACCESS);
const ONLY_ADDRESS: MemFlags = COARSE_VRAM.union(MemFlags::ONLY_ADDRESS);
const CPU_NODE: u32 = 0;
const GIB: u64 = 1 << 30;

#[test]
fn freed_memory_is_gone_and_its_shape_is_reused_with_two_ioctls() {
    let kfd = opened(SimPlatform::new());
    let (node, gpu_id) = first_gpu(&kfd);
    let sim = kfd.platform();
    let a = kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap();
    let (addr, old) = (a.addr, a.handle);
    kfd.map_memory_to_gpu(addr, MapNodes::Default).unwrap();
    kfd.set_user_data(addr, 42).unwrap();
    kfd.free(a).unwrap();
    assert_eq!(kfd.memory_usage().recycled, 1, "kept for the next allocation of its shape");
    assert_eq!((sim.buffer_count(), sim.memory_usage(gpu_id).unwrap().vram_used), (0, 0));

    // Gone for every lookup and every handle.
    let unknown = mem::Error::UnknownAddress { addr };
    assert_eq!(memory_error(&kfd.pointer_info(addr).unwrap_err()), unknown);
    assert_eq!(
        memory_error(&kfd.pointer_info(addr + 100).unwrap_err()),
        mem::Error::UnknownAddress { addr: addr + 100 }
    );
    assert_eq!(memory_error(&kfd.free_memory(addr).unwrap_err()), unknown);
    assert_eq!(memory_error(&kfd.kfd_handle(addr).unwrap_err()), unknown);
    assert_eq!(memory_error(&kfd.cpu_mapping(addr).unwrap_err()), unknown);
    assert_eq!(memory_error(&kfd.set_user_data(addr, 1).unwrap_err()), unknown);
    assert_eq!(memory_error(&kfd.map_memory_to_gpu(addr, MapNodes::Default).unwrap_err()), unknown);
    assert_eq!(memory_error(&kfd.free_handle(old).unwrap_err()), mem::Error::StaleHandle);
    assert_eq!(memory_error(&kfd.handle_info(old).unwrap_err()), mem::Error::StaleHandle);
    let usage = kfd.memory_usage();
    assert_eq!((usage.objects, usage.va_used, usage.va_live), (0, [0, 0, 0], [0, 0, 0]));
    kfd.check_memory_invariants().unwrap();

    // The same shape again: the same range, a fresh handle, a fresh object — and still
    // exactly one ioctl each way.
    let before = sim.total_ioctl_calls();
    let b = kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap();
    assert_eq!(sim.total_ioctl_calls() - before, 1);
    assert_eq!(b.addr, addr);
    assert_ne!(b.handle, old);
    assert_eq!(memory_error(&kfd.free_handle(old).unwrap_err()), mem::Error::StaleHandle);
    let info = kfd.pointer_info(addr).unwrap();
    assert_eq!((info.handle, info.user_data, info.mapped_nodes), (b.handle, 0, NodeSet::EMPTY));
    assert_eq!(info.kind, PointerKind::Allocated);
    assert_eq!(kfd.kfd_handle(addr).unwrap(), b.kfd_handle.unwrap());
    assert_eq!(kfd.memory_usage().recycled, 0);
    kfd.free(b).unwrap();
    assert_eq!(sim.total_ioctl_calls() - before, 2);
    kfd.check_memory_invariants().unwrap();
}

#[test]
fn host_memory_views_are_dropped_before_the_range_is_reused() {
    let kfd = opened(SimPlatform::new());
    let a = kfd.alloc_memory(CPU_NODE, 65536, HOST).unwrap();
    let addr = a.addr;
    a.mapping.as_ref().unwrap().write(0, &[7; 16]).unwrap();
    // A view still held: the free is refused and nothing changes.
    let held = kfd.cpu_mapping(addr).unwrap();
    let e = kfd.free_memory(addr).unwrap_err();
    assert_eq!(memory_error(&e), mem::Error::MappingInUse { addr });
    drop(held);
    kfd.free(a).unwrap();
    assert_eq!(kfd.memory_usage().recycled, 1);
    let b = kfd.alloc_memory(CPU_NODE, 65536, HOST).unwrap();
    assert_eq!(b.addr, addr);
    let view = b.mapping.as_ref().unwrap();
    view.write(0, &[9; 16]).unwrap();
    let mut back = [0u8; 16];
    kfd.cpu_mapping(addr).unwrap().read(0, &mut back).unwrap();
    assert_eq!(back, [9; 16]);
    assert_eq!(kfd.pointer_info(addr).unwrap().cpu_address, Some(addr));
    kfd.free(b).unwrap();
    kfd.check_memory_invariants().unwrap();
}

#[test]
fn a_failed_free_keeps_the_object_and_its_view() {
    let kfd = opened(SimPlatform::new());
    let a = kfd.alloc_memory(CPU_NODE, 8192, HOST).unwrap();
    let (addr, handle) = (a.addr, a.handle);
    drop(a); // and its view
    kfd.platform().inject(IoctlFault {
        nr: Some(nr::FREE),
        errno: Errno::EBUSY,
        trigger: Trigger::Nth(1),
    });
    let e = kfd.free_handle(handle).unwrap_err();
    assert_eq!(e, Error::Ioctl { name: "FREE_MEMORY_OF_GPU", errno: Errno::EBUSY });
    // Still there, with its CPU view, usable; not cached.
    let info = kfd.pointer_info(addr).unwrap();
    assert_eq!((info.handle, info.cpu_address), (handle, Some(addr)));
    let view = kfd.cpu_mapping(addr).unwrap();
    view.write(0, &[1, 2, 3]).unwrap();
    drop(view);
    assert_eq!(kfd.memory_usage().recycled, 0);
    kfd.check_memory_invariants().unwrap();
    kfd.free_handle(handle).unwrap();
    assert_eq!(kfd.memory_usage().recycled, 1);
    kfd.check_memory_invariants().unwrap();
}

#[test]
fn a_failed_reusing_allocation_puts_the_range_back() {
    let kfd = opened(SimPlatform::new());
    let (node, _) = first_gpu(&kfd);
    let a = kfd.alloc_memory(node, 8192, COARSE_VRAM).unwrap();
    let addr = a.addr;
    kfd.free(a).unwrap();
    let before = kfd.memory_usage();
    kfd.platform().inject(IoctlFault {
        nr: Some(nr::ALLOC),
        errno: Errno::ENOMEM,
        trigger: Trigger::Nth(1),
    });
    let e = kfd.alloc_memory(node, 8192, COARSE_VRAM).unwrap_err();
    assert_eq!(e, Error::Ioctl { name: "ALLOC_MEMORY_OF_GPU", errno: Errno::ENOMEM });
    assert_eq!(kfd.memory_usage(), before);
    kfd.check_memory_invariants().unwrap();
    let b = kfd.alloc_memory(node, 8192, COARSE_VRAM).unwrap();
    assert_eq!(b.addr, addr);
    kfd.free(b).unwrap();
}

#[test]
fn running_out_of_slots_flushes_the_cache() {
    let kfd: Box<Kfd<SimPlatform, BoxedMemory>> =
        Box::new(Kfd::with_memory(SimPlatform::new(), boxed_tables(3)));
    kfd.open().unwrap();
    let node = kfd.gpu_nodes().unwrap().first().unwrap();
    let a: Vec<_> = (0..3).map(|_| kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap()).collect();
    for x in a {
        kfd.free(x).unwrap();
    }
    assert_eq!(kfd.memory_usage().recycled, 3);
    // Another shape needs the slots the cache holds.
    let b: Vec<_> = (0..3).map(|_| kfd.alloc_memory(node, 8192, COARSE_VRAM).unwrap()).collect();
    assert_eq!(kfd.memory_usage().recycled, 0);
    kfd.check_memory_invariants().unwrap();
    let e = kfd.alloc_memory(node, 8192, COARSE_VRAM).unwrap_err();
    assert_eq!(memory_error(&e), mem::Error::CapacityExhausted { capacity: 3 });
    for x in b {
        kfd.free(x).unwrap();
    }
    kfd.check_memory_invariants().unwrap();
}

#[test]
fn running_out_of_address_space_flushes_the_cache() {
    // Reserved mode: a fixed aperture. Fill it with address-only ranges of halving sizes,
    // down to 1 GiB: what is left are holes smaller than 2 GiB.
    let kfd = opened(SimPlatform::builder().env("HSA_RESERVE_SVM", "1").build());
    let (node, _) = first_gpu(&kfd);
    let mut held = Vec::new();
    let mut size = 64 * GIB;
    while size >= GIB {
        match kfd.alloc_memory(node, size, ONLY_ADDRESS) {
            Ok(a) => held.push(a),
            Err(e) => {
                assert!(
                    matches!(memory_error(&e), mem::Error::OutOfSpace { .. }),
                    "{e:?} at {size:#x}"
                );
                size /= 2;
            }
        }
    }
    assert!(held.iter().filter(|a| a.size == 64 * GIB).count() > 1);
    // One big range freed: it waits in the cache, the aperture stays full.
    let big = held.iter().position(|a| a.size == 64 * GIB).unwrap();
    let freed = held.swap_remove(big).addr;
    kfd.free_memory(freed).unwrap();
    assert_eq!(kfd.memory_usage().recycled, 1);
    // Another shape: only the cached range can hold it.
    let other = kfd.alloc_memory(node, 32 * GIB, ONLY_ADDRESS).unwrap();
    assert!(other.addr >= freed && other.addr < freed + 64 * GIB);
    assert_eq!(kfd.memory_usage().recycled, 0);
    kfd.check_memory_invariants().unwrap();
    kfd.free(other).unwrap();
    for a in held {
        kfd.free(a).unwrap();
    }
    let cached = kfd.memory_usage().recycled;
    assert_eq!(kfd.trim_memory().unwrap(), cached);
    kfd.check_memory_invariants().unwrap();
}

#[test]
fn a_cached_range_does_not_cost_a_new_slab() {
    // Slab mode: a 48 GiB range cached in the first 64 GiB slab; 40 GiB of another shape
    // fits only there.
    let kfd = opened(SimPlatform::new());
    let (node, _) = first_gpu(&kfd);
    let first = kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap();
    let reservations = kfd.memory_usage().reservations;
    let a = kfd.alloc_memory(node, 48 * GIB, ONLY_ADDRESS).unwrap();
    assert_eq!(kfd.memory_usage().reservations, reservations);
    kfd.free(a).unwrap();
    let b = kfd.alloc_memory(node, 40 * GIB, ONLY_ADDRESS).unwrap();
    assert_eq!(kfd.memory_usage().reservations, reservations, "no new slab");
    assert_eq!(kfd.memory_usage().recycled, 0);
    kfd.free(b).unwrap();
    kfd.free(first).unwrap();
    kfd.check_memory_invariants().unwrap();
}

#[test]
fn a_fixed_address_in_a_cached_range_flushes_it() {
    let kfd = opened(SimPlatform::new());
    let (node, _) = first_gpu(&kfd);
    let a = kfd.alloc_memory(node, 65536, COARSE_VRAM).unwrap();
    let addr = a.addr;
    kfd.free(a).unwrap();
    assert_eq!(kfd.memory_usage().recycled, 1);
    let b = kfd.alloc_memory_at(node, addr + 4096, 4096, COARSE_VRAM).unwrap();
    assert_eq!(b.addr, addr + 4096);
    assert_eq!(kfd.memory_usage().recycled, 0);
    kfd.free(b).unwrap();
    kfd.check_memory_invariants().unwrap();
}

#[test]
fn close_and_trim_release_everything() {
    let kfd = opened(SimPlatform::new());
    let (node, gpu_id) = first_gpu(&kfd);
    for (n, size, flags) in
        [(node, 4096, COARSE_VRAM), (node, 2 << 20, COARSE_VRAM), (CPU_NODE, 65536, HOST)]
    {
        let a: Vec<_> = (0..3).map(|_| kfd.alloc_memory(n, size, flags).unwrap()).collect();
        for x in a {
            kfd.free(x).unwrap();
        }
    }
    assert_eq!(kfd.memory_usage().recycled, 9);
    assert_eq!(kfd.trim_memory().unwrap(), 9);
    let usage = kfd.memory_usage();
    assert_eq!((usage.recycled, usage.objects, usage.va_live), (0, 0, [0, 0, 0]));
    kfd.check_memory_invariants().unwrap();
    // Cached again, then closed: nothing survives, the kernel holds nothing.
    let a = kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap();
    kfd.free(a).unwrap();
    assert_eq!(kfd.memory_usage().recycled, 1);
    kfd.close().unwrap();
    let sim = kfd.platform();
    assert_eq!((sim.buffer_count(), sim.memory_usage(gpu_id).unwrap().vram_used), (0, 0));
    kfd.open().unwrap();
    let usage = kfd.memory_usage();
    assert_eq!((usage.recycled, usage.objects, usage.va_live), (0, 0, [0, 0, 0]));
    let b = kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap();
    kfd.free(b).unwrap();
    kfd.check_memory_invariants().unwrap();
}

#[test]
fn the_cache_is_bounded() {
    let kfd = opened(SimPlatform::new());
    let (node, _) = first_gpu(&kfd);
    // One shape: at most RECYCLE_DEPTH kept.
    let a: Vec<_> = (0..RECYCLE_DEPTH + 4)
        .map(|_| kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap())
        .collect();
    for x in a {
        kfd.free(x).unwrap();
    }
    assert_eq!(kfd.memory_usage().recycled as usize, RECYCLE_DEPTH);
    // Many shapes: at most RECYCLE_CAPACITY in all.
    let mut all = Vec::new();
    for pages in 2..40u64 {
        for _ in 0..4 {
            all.push(kfd.alloc_memory(node, pages * 4096, COARSE_VRAM).unwrap());
        }
    }
    for x in all {
        kfd.free(x).unwrap();
    }
    assert!(kfd.memory_usage().recycled as usize <= RECYCLE_CAPACITY);
    kfd.check_memory_invariants().unwrap();
    assert_eq!(kfd.memory_usage().va_live, [0, 0, 0]);
}

#[test]
fn threads_churning_one_shape_never_see_a_stale_handle_resolve() {
    let kfd = opened(SimPlatform::new());
    let (node, gpu_id) = first_gpu(&kfd);
    std::thread::scope(|s| {
        for t in 0..3u32 {
            let kfd = &kfd;
            s.spawn(move || {
                let flags = if t == 2 { VISIBLE_VRAM } else { COARSE_VRAM };
                for _ in 0..2000 {
                    let a = kfd.alloc_memory(node, 8192, flags).unwrap();
                    let (addr, h) = (a.addr, a.handle);
                    assert_eq!(kfd.pointer_info(addr + 8).unwrap().handle, h);
                    kfd.free(a).unwrap();
                    // Whoever has the range now, this handle names nothing any more.
                    let e = kfd.handle_info(h).unwrap_err();
                    assert_eq!(memory_error(&e), mem::Error::StaleHandle);
                    if let Ok(info) = kfd.pointer_info(addr) {
                        assert_ne!(info.handle, h);
                    }
                }
            });
        }
    });
    kfd.check_memory_invariants().unwrap();
    let usage = kfd.memory_usage();
    assert_eq!((usage.objects, usage.pending, usage.va_live), (0, 0, [0, 0, 0]));
    let sim = kfd.platform();
    assert_eq!((sim.buffer_count(), sim.memory_usage(gpu_id).unwrap().vram_used), (0, 0));
}

// ---- random sequences against a model --------------------------------------------------------

/// The request shapes the random sequences draw from.
const SHAPES: [(bool, u64, MemFlags); 7] = [
    (true, 4096, COARSE_VRAM),
    (true, 2 << 20, COARSE_VRAM),
    (true, 65536, VISIBLE_VRAM),
    (false, 65536, HOST),
    (false, 8192, MemFlags::HOST_ACCESS), // paged: a user-pointer buffer
    (true, 1 << 20, ONLY_ADDRESS),
    (true, 4096, COARSE_VRAM.union(MemFlags::NO_ADDRESS)),
];

struct Live {
    addr: u64,
    size: u64,
    handle: hsakmt_core::memory::objects::MemoryHandle,
    shape: usize,
    user_data: u64,
    mapped: bool,
    allocation: Option<hsakmt_core::device::Allocation<hsakmt_sim::SimMapping>>,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn random_sequences_match_a_model() {
    for seed in 1..=12u64 {
        run_sequence(seed, 600);
    }
}

fn run_sequence(seed: u64, steps: usize) {
    let kfd = opened(SimPlatform::new());
    let (gpu, gpu_id) = first_gpu(&kfd);
    let sim = kfd.platform();
    let baseline = (sim.buffer_count(), sim.memory_usage(gpu_id).unwrap());
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut live: Vec<Live> = Vec::new();
    let mut freed: Vec<(u64, hsakmt_core::memory::objects::MemoryHandle)> = Vec::new();
    let ctx = |step: usize| format!("seed {seed} step {step}");
    for step in 0..steps {
        match rng.below(100) {
            0..=39 => {
                let shape = rng.below(SHAPES.len());
                let (on_gpu, size, flags) = SHAPES[shape];
                let node = if on_gpu { gpu } else { CPU_NODE };
                let before = sim.total_ioctl_calls();
                let a = kfd
                    .alloc_memory(node, size, flags)
                    .unwrap_or_else(|e| panic!("{}: {e}", ctx(step)));
                if shape == 0 {
                    assert_eq!(sim.total_ioctl_calls() - before, 1, "{}: one ALLOC", ctx(step));
                }
                assert!(
                    live.iter().all(|l| a.addr + a.size <= l.addr || l.addr + l.size <= a.addr),
                    "{}: overlap",
                    ctx(step)
                );
                assert!(live.iter().all(|l| l.handle != a.handle));
                assert!(
                    freed.iter().all(|&(_, h)| h != a.handle),
                    "{}: a stale handle came back",
                    ctx(step)
                );
                live.push(Live {
                    addr: a.addr,
                    size: a.size,
                    handle: a.handle,
                    shape,
                    user_data: 0,
                    mapped: false,
                    allocation: Some(a),
                });
            }
            40..=64 => {
                if live.is_empty() {
                    continue;
                }
                let mut l = live.swap_remove(rng.below(live.len()));
                let before = sim.total_ioctl_calls();
                if rng.below(2) == 0 {
                    kfd.free(l.allocation.take().unwrap()).unwrap();
                } else {
                    drop(l.allocation.take());
                    kfd.free_memory(l.addr).unwrap();
                }
                if l.shape == 0 && !l.mapped {
                    assert_eq!(sim.total_ioctl_calls() - before, 1, "{}: one FREE", ctx(step));
                }
                freed.push((l.addr, l.handle));
            }
            65..=74 => {
                // A stale handle, or a freed address no live allocation starts at.
                if freed.is_empty() {
                    continue;
                }
                let (addr, h) = freed[rng.below(freed.len())];
                assert_eq!(
                    memory_error(&kfd.free_handle(h).unwrap_err()),
                    mem::Error::StaleHandle,
                    "{}",
                    ctx(step)
                );
                match live.iter().find(|l| l.addr <= addr && addr < l.addr + l.size) {
                    Some(l) => assert_eq!(kfd.pointer_info(addr).unwrap().handle, l.handle),
                    None => {
                        assert_eq!(
                            memory_error(&kfd.pointer_info(addr).unwrap_err()),
                            mem::Error::UnknownAddress { addr },
                            "{}",
                            ctx(step)
                        );
                        assert_eq!(
                            memory_error(&kfd.free_memory(addr).unwrap_err()),
                            mem::Error::UnknownAddress { addr }
                        );
                    }
                }
            }
            75..=84 => {
                if live.is_empty() {
                    continue;
                }
                let l = &live[rng.below(live.len())];
                let info = kfd.pointer_info(l.addr + l.size / 2).unwrap();
                assert_eq!((info.handle, info.size, info.gpu_address), (l.handle, l.size, l.addr));
                assert_eq!(info.user_data, l.user_data, "{}: fresh user data", ctx(step));
                assert_eq!(
                    info.mapped_nodes.is_empty(),
                    !l.mapped,
                    "{}: fresh GPU mappings",
                    ctx(step)
                );
            }
            85..=89 => {
                if live.is_empty() {
                    continue;
                }
                let k = rng.below(live.len());
                let l = &mut live[k];
                l.user_data = rng.next();
                kfd.set_user_data(l.addr, l.user_data).unwrap();
                let (_, _, flags) = SHAPES[l.shape];
                if !flags.contains(MemFlags::ONLY_ADDRESS)
                    && !flags.contains(MemFlags::NO_ADDRESS)
                    && !l.mapped
                {
                    kfd.map_memory_to_gpu(l.addr, MapNodes::Default).unwrap();
                    l.mapped = true;
                }
            }
            90..=93 => {
                let cached = kfd.memory_usage().recycled;
                assert_eq!(kfd.trim_memory().unwrap(), cached);
                assert_eq!(kfd.memory_usage().recycled, 0);
            }
            _ => {
                // A fixed-address request at a freed address no live allocation covers.
                let Some(&(addr, _)) = freed.last() else { continue };
                // Not in the handle window; the page and its guard clear of every live range
                // and its guard.
                if addr >= 1 << 47
                    || live.iter().any(|l| l.addr < addr + 8192 && addr < l.addr + l.size + 4096)
                {
                    continue;
                }
                let a = kfd
                    .alloc_memory_at(gpu, addr, 4096, COARSE_VRAM)
                    .unwrap_or_else(|e| panic!("{}: fixed at a freed address: {e}", ctx(step)));
                live.push(Live {
                    addr: a.addr,
                    size: a.size,
                    handle: a.handle,
                    shape: 0,
                    user_data: 0,
                    mapped: false,
                    allocation: Some(a),
                });
            }
        }
        kfd.check_memory_invariants().unwrap_or_else(|v| panic!("{}: {v}", ctx(step)));
        let usage = kfd.memory_usage();
        assert_eq!(usage.objects as usize, live.len(), "{}", ctx(step));
        assert!(usage.recycled as usize <= RECYCLE_CAPACITY);
        let with_buffer = live.iter().filter(|l| l.shape != 5).count();
        assert_eq!(sim.buffer_count(), baseline.0 + with_buffer, "{}: kernel buffers", ctx(step));
    }
    for mut l in live {
        kfd.free(l.allocation.take().unwrap()).unwrap();
    }
    kfd.trim_memory().unwrap();
    let usage = kfd.memory_usage();
    assert_eq!((usage.objects, usage.recycled, usage.va_live), (0, 0, [0, 0, 0]));
    assert_eq!((sim.buffer_count(), sim.memory_usage(gpu_id).unwrap()), baseline);
    kfd.check_memory_invariants().unwrap();
    kfd.close().unwrap();
}
