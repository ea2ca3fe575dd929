//! Registering application memory, and what pointer queries report about every kind of memory.

use firmware_tests::{first_gpu, memory_error, nr, opened};
use hsakmt_core::device::{Error, MapNodes, PointerKind};
use hsakmt_core::error::{Errno, Error as _, ErrorKind};
use hsakmt_core::memory::{self as mem, MemFlags, NodeSet};
use hsakmt_core::platform::SharedMemory;
use hsakmt_core::uapi::*;
use hsakmt_sim::SimPlatform;

const HOST: MemFlags = MemFlags::NON_PAGED.union(MemFlags::HOST_ACCESS);
const CPU_NODE: u32 = 0;

/// Application memory: a heap buffer (not page aligned in general).
fn user_buffer(len: usize) -> Vec<u64> {
    (0..len / 8).map(|i| i as u64).collect()
}

#[test]
fn registration_is_counted_and_keeps_its_gpu_address() {
    let kfd = opened(SimPlatform::new());
    let (_, gpu_id) = first_gpu(&kfd);
    let sim = kfd.platform();
    let buf = user_buffer(3 * 4096);
    let ptr = buf.as_ptr() as u64;
    let va = kfd.register_memory(ptr, 3 * 4096).unwrap();
    assert_eq!(va % 4096, ptr % 4096, "same offset inside the page");
    assert_eq!(kfd.register_memory(ptr, 3 * 4096).unwrap(), va, "same GPU address on repeat");
    assert_eq!(sim.buffer_count(), 1, "one buffer for both registrations");
    let h = kfd.kfd_handle(ptr).unwrap();
    assert_eq!(
        sim.buffer_flags(h),
        Some(
            KFD_IOC_ALLOC_MEM_FLAGS_USERPTR
                | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
                | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE
                | KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE
        ),
        "registered memory is coarse grained"
    );
    // The GPU sees the application's bytes at the GPU address.
    assert_eq!(kfd.map_memory_to_gpu(ptr, MapNodes::Default).unwrap(), va);
    let (view, offset) = sim.resolve(gpu_id, va + 8 * 100, 8).unwrap();
    let mut word = [0u8; 8];
    view.read(usize::try_from(offset).unwrap(), &mut word).unwrap();
    assert_eq!(u64::from_ne_bytes(word), 100);
    drop(view);
    kfd.unmap_memory_from_gpu(ptr).unwrap();
    kfd.deregister_memory(ptr).unwrap();
    assert_eq!(sim.buffer_count(), 1, "one registration left");
    kfd.deregister_memory(ptr).unwrap();
    assert_eq!(sim.buffer_count(), 0);
    let e = kfd.deregister_memory(ptr).unwrap_err();
    assert_eq!(
        (memory_error(&e), e.kind()),
        (mem::Error::UnknownAddress { addr: ptr }, ErrorKind::NotRegistered)
    );
    kfd.check_memory_invariants().unwrap();
}

/// kfdtest `KFDMemoryTest.MemoryRegisterSamePtr`.
#[test]
fn kfdtest_memory_register_same_ptr() {
    let kfd = opened(SimPlatform::new());
    let (node, gpu_id) = first_gpu(&kfd);
    let sim = kfd.platform();
    let buf = user_buffer(4096);
    let ptr = buf.as_ptr() as u64;
    // The same pointer with sizes 8 and 4: two registrations, each mapped.
    let va8 = kfd.register_memory(ptr, 8).unwrap();
    kfd.map_memory_to_gpu(ptr, MapNodes::Default).unwrap();
    let va4 = kfd.register_memory(ptr, 4).unwrap();
    kfd.map_memory_to_gpu(ptr, MapNodes::Default).unwrap();
    assert_ne!(va8, va4, "different ranges, different buffers");
    kfd.unmap_memory_from_gpu(ptr).unwrap();
    kfd.unmap_memory_from_gpu(ptr).unwrap();
    kfd.deregister_memory(ptr).unwrap();
    kfd.deregister_memory(ptr).unwrap();
    assert_eq!(sim.buffer_count(), 0);
    // Registered to a node twice with the same size: the same GPU address, counted.
    let size = 4096;
    let a = kfd.register_memory_to_nodes(ptr, size, &[node]).unwrap();
    let a_mapped = kfd.map_memory_to_gpu(ptr, MapNodes::Default).unwrap();
    let b = kfd.register_memory_to_nodes(ptr, size, &[node]).unwrap();
    let b_mapped = kfd.map_memory_to_gpu(ptr, MapNodes::Default).unwrap();
    assert_eq!((a, a_mapped), (b, b_mapped));
    let h = kfd.kfd_handle(ptr).unwrap();
    assert_eq!(sim.buffer_mappings(h), Some(vec![gpu_id]), "mapped once, on the registered node");
    kfd.unmap_memory_from_gpu(ptr).unwrap();
    kfd.deregister_memory(ptr).unwrap();
    // The other registration is still usable by the GPU.
    assert!(sim.resolve(gpu_id, a, 8).is_ok());
    kfd.unmap_memory_from_gpu(ptr).unwrap();
    kfd.deregister_memory(ptr).unwrap();
    assert_eq!(sim.buffer_count(), 0);
}

#[test]
fn registrations_that_are_refused() {
    let kfd = opened(SimPlatform::new());
    let nodes: Vec<u32> = kfd.gpu_nodes().unwrap().iter().take(2).collect();
    let buf = user_buffer(8192);
    let ptr = buf.as_ptr() as u64;
    let sim = kfd.platform();
    assert_eq!(memory_error(&kfd.register_memory(ptr, 0).unwrap_err()), mem::Error::ZeroSize);
    // Other nodes than the first registration named.
    kfd.register_memory_to_nodes(ptr, 4096, &[nodes[0]]).unwrap();
    let e = kfd.register_memory_to_nodes(ptr, 4096, &[nodes[1]]).unwrap_err();
    assert_eq!(
        (memory_error(&e), e.kind()),
        (mem::Error::RegisteredToOtherNodes { addr: ptr }, ErrorKind::AlreadyRegistered)
    );
    assert_eq!(
        memory_error(&kfd.register_memory_to_nodes(ptr, 4096, &[]).unwrap_err()),
        mem::Error::NoNodes
    );
    assert_eq!(
        memory_error(&kfd.register_memory_to_nodes(ptr, 4096, &[CPU_NODE]).unwrap_err()),
        mem::Error::NotAGpu { node: CPU_NODE }
    );
    // A node not registered cannot be mapped explicitly.
    let e = kfd.map_memory_to_gpu(ptr, MapNodes::Only(&[nodes[1]])).unwrap_err();
    assert_eq!(memory_error(&e), mem::Error::NodesNotRegistered);
    kfd.deregister_memory(ptr).unwrap();
    assert_eq!(sim.buffer_count(), 0, "the refused second registration did not count");
    // Flags: ordinary paged host memory only, and a coherence that exists.
    let cases = [
        (MemFlags::empty(), mem::Error::NotSupported),
        (HOST, mem::Error::NotSupported),
        (
            MemFlags::HOST_ACCESS | MemFlags::COARSE_GRAIN | MemFlags::EXTENDED_COHERENT,
            mem::Error::InvalidFlags,
        ),
    ];
    for (flags, want) in cases {
        assert_eq!(
            memory_error(&kfd.register_memory_with_flags(ptr, 4096, flags).unwrap_err()),
            want
        );
    }
    kfd.register_memory_with_flags(ptr, 4096, MemFlags::HOST_ACCESS | MemFlags::EXTENDED_COHERENT)
        .unwrap();
    let f = sim.buffer_flags(kfd.kfd_handle(ptr).unwrap()).unwrap();
    let want = KFD_IOC_ALLOC_MEM_FLAGS_COHERENT | KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT;
    assert_eq!(f & want, want);
    kfd.deregister_memory(ptr).unwrap();
    // Unmapped memory: the kernel faults on the pages.
    let e = kfd.register_memory(0x10000, 4096).unwrap_err();
    assert_eq!(e, Error::Ioctl { name: "ALLOC_MEMORY_OF_GPU", errno: Errno::EFAULT });
    // Memory the library allocated is not user memory.
    let host = kfd.alloc_memory(CPU_NODE, 4096, HOST).unwrap();
    let e = kfd.register_memory(host.addr, 4096).unwrap_err();
    assert_eq!(
        (memory_error(&e), e.kind()),
        (mem::Error::NotUserMemory { addr: host.addr }, ErrorKind::InvalidHandle)
    );
    // Allocated memory registered to no node cannot be deregistered.
    assert_eq!(
        memory_error(&kfd.deregister_memory(host.addr).unwrap_err()),
        mem::Error::NotRegistered { addr: host.addr }
    );
    kfd.free(host).unwrap();
    assert_eq!(sim.buffer_count(), 0);
    assert_eq!(kfd.memory_usage().objects, 0);
    assert_eq!(kfd.memory_usage().pending, 0);
    kfd.check_memory_invariants().unwrap();
    assert!(sim.ioctl_calls(nr::ALLOC) > 0);
}

/// kfdtest `KFDMemoryTest.QueryPointerInfo`.
#[test]
fn kfdtest_query_pointer_info() {
    let kfd = opened(SimPlatform::new());
    let all = kfd.gpu_nodes().unwrap();
    let flags = HOST | MemFlags::NO_NUMA_BIND;
    let a = kfd.alloc_memory(CPU_NODE, 4 * 4096, flags).unwrap();
    let info = kfd.pointer_info(a.addr).unwrap();
    assert_eq!(info.kind, PointerKind::Allocated);
    assert_eq!(info.node, CPU_NODE);
    assert_eq!(info.flags, flags, "the requested flags round-trip");
    assert_eq!((info.cpu_address, info.gpu_address, info.size), (Some(a.addr), a.addr, 4 * 4096));
    assert!(info.mapped_nodes.is_empty() && info.registered_nodes.is_empty());
    assert_eq!(info.handle, a.handle);
    kfd.map_memory_to_gpu(a.addr, MapNodes::Default).unwrap();
    assert_eq!(kfd.pointer_info(a.addr).unwrap().mapped_nodes, all);
    kfd.unmap_memory_from_gpu(a.addr).unwrap();
    assert!(kfd.pointer_info(a.addr).unwrap().mapped_nodes.is_empty());
    // Interior pointers resolve to the object.
    assert_eq!(kfd.pointer_info(a.addr + 3 * 4096 + 17).unwrap().gpu_address, a.addr);
    // User data round-trips.
    kfd.set_user_data(a.addr, 0xfeed).unwrap();
    assert_eq!(kfd.pointer_info(a.addr + 5).unwrap().user_data, 0xfeed);
    assert_eq!(
        memory_error(&kfd.set_user_data(a.addr + 4096, 1).unwrap_err()),
        mem::Error::UnknownAddress { addr: a.addr + 4096 }
    );
    // Registered user memory: its CPU range, its nodes.
    let buf = user_buffer(8192);
    let ptr = buf.as_ptr() as u64 + 8;
    let nodes: Vec<u32> = all.iter().take(2).collect();
    let va = kfd.register_memory_to_nodes(ptr, 100, &nodes).unwrap();
    let info = kfd.pointer_info(ptr + 50).unwrap();
    assert_eq!(info.kind, PointerKind::RegisteredUser);
    assert_eq!((info.cpu_address, info.gpu_address, info.size), (Some(ptr), va, 100));
    assert_eq!(info.registered_nodes, NodeSet::from_slice(&nodes).unwrap());
    kfd.deregister_memory(ptr).unwrap();
    // Nothing there.
    let e = kfd.pointer_info(0x1000).unwrap_err();
    assert_eq!(
        (memory_error(&e), e.kind()),
        (mem::Error::UnknownAddress { addr: 0x1000 }, ErrorKind::NotRegistered)
    );
    kfd.free(a).unwrap();
}
