//! Sharing memory as dma-bufs: export inside and outside a buffer, memory that outlives its
//! buffer, import with and without an address.

use firmware_tests::{first_gpu, memory_error, nr, opened};
use hsakmt_core::device::{Error, MapNodes, PointerKind};
use hsakmt_core::error::{Errno, Error as _, ErrorKind};
use hsakmt_core::memory::{self as mem, MemFlags, NodeSet};
use hsakmt_core::platform::SharedMemory;
use hsakmt_sim::SimPlatform;

const VISIBLE_VRAM: MemFlags =
    MemFlags::NON_PAGED.union(MemFlags::HOST_ACCESS).union(MemFlags::COARSE_GRAIN);

/// kfdtest `KFDMemoryTest.ExportDMABufTest`.
#[test]
fn kfdtest_export_dmabuf() {
    let kfd = opened(SimPlatform::new());
    let (node, gpu_id) = first_gpu(&kfd);
    let sim = kfd.platform();
    let buf = kfd.alloc_memory(node, 4 * 4096, VISIBLE_VRAM).unwrap();
    buf.mapping.as_ref().unwrap().write(4096, b"shared pages").unwrap();
    // Not a buffer, or past its end: refused before the kernel.
    let heap = Box::new([0u8; 64]);
    let outside =
        [(heap.as_ptr() as u64, 8), (buf.addr, 4 * 4096 + 1), (buf.addr + 3 * 4096, 8192)];
    for (addr, size) in outside {
        let e = kfd.export_dmabuf(addr, size).unwrap_err();
        assert_eq!(
            (memory_error(&e), e.kind()),
            (mem::Error::OutsideObject { addr, size }, ErrorKind::InvalidArgument)
        );
    }
    assert_eq!(sim.ioctl_calls(nr::EXPORT), 0);
    // Inside: the offset of the address in the buffer.
    let exported = kfd.export_dmabuf(buf.addr + 4096, 4096).unwrap();
    assert_eq!(exported.offset, 4096);
    let file = format!("/proc/self/fd/{}", exported.fd);
    assert!(std::fs::metadata(&file).is_ok(), "a descriptor of the process, as the kernel's");
    // The memory survives the buffer while the descriptor lives.
    kfd.map_memory_to_gpu(buf.addr, MapNodes::Default).unwrap();
    kfd.unmap_memory_from_gpu(buf.addr).unwrap();
    kfd.free(buf).unwrap();
    assert_eq!(sim.buffer_count(), 0);
    assert_eq!(sim.dmabuf_count(), 1);
    // Re-imported to a node, it is the same memory.
    let imported = kfd.import_dmabuf(exported.fd, Some(&[node])).unwrap();
    assert_eq!(imported.addr % hsakmt_core::device::memory_manager::IMAGE_ALIGN, 0);
    assert_eq!((imported.size, imported.node), (4 * 4096, node));
    let info = kfd.pointer_info(imported.addr).unwrap();
    assert_eq!(info.kind, PointerKind::RegisteredGraphics);
    assert_eq!(info.registered_nodes, NodeSet::single(node).unwrap());
    assert!(info.flags.contains(MemFlags::COARSE_GRAIN | MemFlags::HOST_ACCESS));
    kfd.map_memory_to_gpu(imported.addr, MapNodes::Default).unwrap();
    let (view, offset) = sim.resolve(gpu_id, imported.addr + 4096, 12).unwrap();
    let mut seen = [0u8; 12];
    view.read(usize::try_from(offset).unwrap(), &mut seen).unwrap();
    assert_eq!(&seen, b"shared pages");
    drop(view);
    kfd.deregister_memory(imported.addr).unwrap();
    assert_eq!(sim.buffer_count(), 0);
    kfd.close_dmabuf(exported.fd);
    assert_eq!(sim.dmabuf_count(), 0);
    let e = kfd.import_dmabuf(exported.fd, None).unwrap_err();
    assert_eq!(e, Error::Ioctl { name: "GET_DMABUF_INFO", errno: Errno::EBADF });
    kfd.check_memory_invariants().unwrap();
}

#[test]
fn imports_without_nodes_get_no_address() {
    let kfd = opened(SimPlatform::new());
    let (node, _) = first_gpu(&kfd);
    let buf = kfd.alloc_memory(node, 8192, VISIBLE_VRAM).unwrap();
    let exported = kfd.export_dmabuf(buf.addr, 8192).unwrap();
    let imported = kfd.import_dmabuf(exported.fd, None).unwrap();
    assert!(imported.addr >= 1 << 47, "a handle in the NoAddress window");
    let e = kfd.map_memory_to_gpu(imported.addr, MapNodes::Default).unwrap_err();
    assert_eq!(memory_error(&e), mem::Error::NotMappable { addr: imported.addr });
    assert_eq!(
        memory_error(&kfd.import_dmabuf(exported.fd, Some(&[])).unwrap_err()),
        mem::Error::NoNodes
    );
    kfd.free_memory(imported.addr).unwrap();
    kfd.free(buf).unwrap();
    kfd.close_dmabuf(exported.fd);
    // Address-only memory has nothing to export.
    let only = kfd.alloc_memory(node, 4096, VISIBLE_VRAM | MemFlags::ONLY_ADDRESS).unwrap();
    let e = kfd.export_dmabuf(only.addr, 4096).unwrap_err();
    assert_eq!(memory_error(&e), mem::Error::NoKfdBuffer { addr: only.addr });
    kfd.free(only).unwrap();
    assert_eq!(kfd.platform().buffer_count(), 0);
    assert_eq!(kfd.platform().dmabuf_count(), 0);
}

#[test]
fn export_needs_kfd_1_12() {
    let kfd = opened(SimPlatform::builder().kfd_version(1, 11).build());
    let (node, _) = first_gpu(&kfd);
    let buf = kfd.alloc_memory(node, 4096, VISIBLE_VRAM).unwrap();
    let e = kfd.export_dmabuf(buf.addr, 4096).unwrap_err();
    assert!(matches!(e, Error::NotSupported { needs_minor: 12, .. }), "{e:?}");
    assert_eq!(e.kind(), ErrorKind::NotSupported);
    assert_eq!(kfd.platform().ioctl_calls(nr::EXPORT), 0);
    kfd.free(buf).unwrap();
}
