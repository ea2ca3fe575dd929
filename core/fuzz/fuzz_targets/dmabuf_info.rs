//! Fuzzes the import path's consumption of `GET_DMABUF_INFO`: a series of replies, each built
//! from arbitrary bytes through the byte image of `kfd_ioctl_get_dmabuf_info_args`, is decoded
//! ([`DmaBufInfo::from_kernel`]) and imported as [`Kfd::import_dmabuf`] does: address space at
//! [`IMAGE_ALIGN`] in the default SVM aperture or the `NoAddress` handle window, then an
//! object in the object table; some imports are released again. Nothing may panic; every
//! import lies in its aperture, aligned, at least as large as the buffer, and findable.
//!
//! [`Kfd::import_dmabuf`]: hsakmt_core::device::Kfd::import_dmabuf
#![no_main]

use hsakmt_core::memory::aperture::{
    ApertureConfig, ApertureKind, InlineAperture, MEM_HANDLE_APERTURE_SIZE, NON_CANONICAL_START,
    SvmLayout,
};
use hsakmt_core::memory::dmabuf_info::{DmaBufInfo, IMAGE_ALIGN, METADATA_SIZE};
use hsakmt_core::memory::kfd_flags::mem_flags_from_alloc;
use hsakmt_core::memory::objects::{InlineObjectTable, MemoryKind, MemoryObject};
use hsakmt_core::memory::va::VaSlot;
use hsakmt_core::memory::{Error, MemFlags};
use hsakmt_core::uapi::{KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE, kfd_ioctl_get_dmabuf_info_args};
use hsakmt_core_fuzz::Input;
use libfuzzer_sys::fuzz_target;

/// The GPUs of the process: gpu_id → node.
const GPUS: [(u32, u32); 3] = [(0x1002, 1), (0x2fa3, 2), (0xbeef, 5)];

fn node_of_gpu(gpu_id: u32) -> Option<u32> {
    GPUS.iter().find(|g| g.0 == gpu_id).map(|g| g.1)
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let control = input.u8();
    // The default SVM aperture: a 64 GiB reserved split at a 2 MiB-aligned base.
    let svm = SvmLayout::reserved(0x10_0000_0000, 64 << 30, 4096, u32::from(control & 3))
        .expect("svm layout");
    let handles = ApertureConfig::reserved(
        ApertureKind::MemHandle,
        NON_CANONICAL_START,
        NON_CANONICAL_START + (MEM_HANDLE_APERTURE_SIZE - 1),
    );
    let mut apertures = [
        InlineAperture::<32>::new(*svm.default_aperture(), [VaSlot::EMPTY; 32]).expect("svm"),
        InlineAperture::<32>::new(handles, [VaSlot::EMPTY; 32]).expect("handles"),
    ];
    let mut objects: InlineObjectTable<(usize, u64), 16> = InlineObjectTable::new();
    let mut live = Vec::new();

    while !input.is_empty() {
        let op = input.u8();
        if op & 0xC0 == 0xC0 {
            // Release an earlier import.
            if live.is_empty() {
                continue;
            }
            let h = live.swap_remove(usize::from(op) % live.len());
            let obj = objects.remove(h).expect("live import");
            let (which, block) = obj.payload;
            assert_eq!(apertures[which].release(block), Ok(obj.size()));
            continue;
        }
        let which = usize::from(op & 1);
        let reply: kfd_ioctl_get_dmabuf_info_args = input.uapi();
        let info = match DmaBufInfo::from_kernel(&reply, node_of_gpu) {
            Ok(i) => i,
            Err(e) => {
                assert_eq!(e, Error::UnknownGpu { gpu_id: reply.gpu_id });
                assert_eq!(node_of_gpu(reply.gpu_id), None);
                continue;
            }
        };
        assert_eq!(Some(info.node), node_of_gpu(info.gpu_id));
        assert_eq!(info.size, reply.size);
        assert!(info.va_size >= info.size);
        assert!(info.metadata_len() <= METADATA_SIZE);
        assert!(info.flags.contains(MemFlags::COARSE_GRAIN));
        assert_eq!(
            info.flags.contains(MemFlags::READ_ONLY),
            reply.flags & KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE == 0
        );
        assert!(info.flags.contains(mem_flags_from_alloc(reply.flags)));

        let ap = &mut apertures[which];
        let a = match ap.allocate(info.va_size, Some(IMAGE_ALIGN), None) {
            Ok(a) => a,
            Err(e) => {
                assert!(
                    matches!(
                        e,
                        Error::ZeroSize
                            | Error::SizeOverflow
                            | Error::OutOfSpace { .. }
                            | Error::CapacityExhausted { .. }
                    ),
                    "{e:?}"
                );
                continue;
            }
        };
        assert_eq!(a.addr % IMAGE_ALIGN, 0);
        assert!(a.size >= info.size);
        assert!(ap.contains(a.addr) && ap.contains(a.addr + (a.size - 1)));
        let obj = MemoryObject::new(
            a.addr,
            a.size,
            MemoryKind::ImportedDmaBuf,
            info.flags,
            info.node,
            (which, a.addr),
        );
        match objects.insert(obj) {
            Ok(h) => {
                assert_eq!(objects.find_containing(a.addr + (a.size - 1)), Some(h));
                assert_eq!(objects.find_exact(a.addr), Some(h));
                live.push(h);
            }
            Err((e, _)) => {
                assert!(matches!(e, Error::CapacityExhausted { .. }), "{e:?}");
                assert_eq!(ap.release_allocation(a), Ok(a.size));
            }
        }
    }
    assert_eq!(objects.check_invariants(), Ok(()));
    for ap in &apertures {
        assert_eq!(ap.check_invariants(), Ok(()));
    }
});
