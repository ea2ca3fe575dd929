//! The device facade shared between threads: concurrent allocations, mappings and frees keep
//! the books straight, and racing frees of one object free it exactly once.

use firmware_tests::{SimKfd, device, first_gpu, memory_error};
use hsakmt_core::device::{Error, Kfd, MapNodes};
use hsakmt_core::memory::{self as mem, MemFlags};
use hsakmt_linux::{BoxedMemory, LinuxPlatform, boxed_tables};
use hsakmt_sim::SimPlatform;

const COARSE_VRAM: MemFlags = MemFlags::NON_PAGED.union(MemFlags::COARSE_GRAIN);
const HOST: MemFlags = MemFlags::NON_PAGED.union(MemFlags::HOST_ACCESS);

#[test]
fn the_facade_is_send_and_sync() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Kfd<SimPlatform>>();
    shareable::<Kfd<LinuxPlatform, BoxedMemory>>();
}

#[test]
fn concurrent_alloc_map_free_keeps_the_books() {
    let kfd: Box<Kfd<SimPlatform, BoxedMemory>> =
        Box::new(Kfd::with_memory(SimPlatform::new(), boxed_tables(4096)));
    kfd.open().unwrap();
    let (node, _) = first_gpu(&kfd);
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let kfd = &kfd;
            s.spawn(move || {
                let mut kept = Vec::new();
                for i in 0..300u64 {
                    let (n, size, flags) = if (i + t) % 2 == 0 {
                        (node, 4096 * (1 + i % 5), COARSE_VRAM)
                    } else {
                        (0, 65536, HOST)
                    };
                    let a = kfd.alloc_memory(n, size, flags).unwrap();
                    if let Some(m) = &a.mapping {
                        hsakmt_core::platform::SharedMemory::write(m, 0, &t.to_ne_bytes()).unwrap();
                    }
                    kfd.map_memory_to_gpu(a.addr, MapNodes::Only(&[node])).unwrap();
                    assert_eq!(kfd.pointer_info(a.addr + 8).unwrap().gpu_address, a.addr);
                    if i % 3 == 0 {
                        kept.push(a.addr);
                        drop(a);
                    } else {
                        kfd.unmap_memory_from_gpu(a.addr).unwrap();
                        kfd.free(a).unwrap();
                    }
                }
                for addr in kept {
                    kfd.free_memory(addr).unwrap();
                }
            });
        }
    });
    let usage = kfd.memory_usage();
    assert_eq!((usage.objects, usage.pending, usage.va_live), (0, 0, [0, 0, 0]));
    assert_eq!(kfd.platform().buffer_count(), 0);
    kfd.check_memory_invariants().unwrap();
}

#[test]
fn racing_frees_free_once() {
    let kfd: Box<SimKfd> = device(SimPlatform::new());
    kfd.open().unwrap();
    let (node, _) = first_gpu(&kfd);
    for _ in 0..200 {
        let a = kfd.alloc_memory(node, 4096, COARSE_VRAM).unwrap();
        let addr = a.addr;
        let results: Vec<Result<(), Error>> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..2).map(|_| s.spawn(|| kfd.free_memory(addr))).collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let freed = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(freed, 1, "{results:?}");
        for r in results.iter().filter_map(|r| r.as_ref().err()) {
            let e = memory_error(r);
            assert!(
                e == mem::Error::Busy { addr } || e == mem::Error::UnknownAddress { addr },
                "{e:?}"
            );
        }
    }
    assert_eq!(kfd.platform().buffer_count(), 0);
    kfd.check_memory_invariants().unwrap();
}
