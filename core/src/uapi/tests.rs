//! Unit tests of the uapi module: request codes, sizes, tables, unions and byte images.
//!
//! The full comparison with the C header is `cargo xtask uapi-check`; these tests pin values
//! computed by hand and the internal consistency of the tables.

use core::mem::{align_of, offset_of, size_of};

use super::*;

/// The generic `_IOC` encoding (the architectures amdkfd runs on, except powerpc).
const GENERIC_IOC: bool = _IOC_SIZEBITS == 14 && _IOC_DIRBITS == 2;

#[test]
fn request_codes_computed_by_hand() {
    if !GENERIC_IOC {
        return;
    }
    assert_eq!(AMDKFD_IOC_GET_VERSION, 0x8008_4B01);
    assert_eq!(AMDKFD_IOC_ACQUIRE_VM, 0x4008_4B15);
    assert_eq!(AMDKFD_IOC_CREATE_PROCESS, 0x0000_4B27);
    // _IOWR('K', 0x02, 96 bytes)
    assert_eq!(AMDKFD_IOC_CREATE_QUEUE, 0xC060_4B02);
    // _IOR('K', 0x06, 400 bytes)
    assert_eq!(AMDKFD_IOC_GET_PROCESS_APERTURES, 0x8190_4B06);
    // _IOWR('K', 0x20, 24 bytes): the size covers only the fixed part of the SVM args.
    assert_eq!(AMDKFD_IOC_SVM, 0xC018_4B20);
    assert_eq!(AMDKFD_IOC_DBG_TRAP, 0xC020_4B26);
    assert_eq!(AMDKFD_IOC_PROFILER, 0xC010_4B28);
}

#[test]
fn ioc_encoding_round_trips() {
    let request = _IOC(_IOC_READ | _IOC_WRITE, AMDKFD_IOCTL_BASE, 0x2A, 0x123);
    assert_eq!(_IOC_DIR(request), _IOC_READ | _IOC_WRITE);
    assert_eq!(_IOC_TYPE(request), u32::from(b'K'));
    assert_eq!(_IOC_NR(request), 0x2A);
    assert_eq!(_IOC_SIZE(request), 0x123);
    assert_eq!(_IO(AMDKFD_IOCTL_BASE, 7), AMDKFD_IO(7));
    assert_eq!(AMDKFD_IOR::<u64>(1), _IOC(_IOC_READ, AMDKFD_IOCTL_BASE, 1, 8));
    assert_eq!(AMDKFD_IOW::<u32>(1), _IOC(_IOC_WRITE, AMDKFD_IOCTL_BASE, 1, 4));
}

#[test]
fn struct_sizes() {
    assert_eq!(size_of::<kfd_ioctl_get_version_args>(), 8);
    assert_eq!(size_of::<kfd_ioctl_create_queue_args>(), 96);
    assert_eq!(size_of::<kfd_process_device_apertures>(), 56);
    assert_eq!(size_of::<kfd_ioctl_get_process_apertures_args>(), 7 * 56 + 8);
    assert_eq!(size_of::<kfd_event_data>(), 48);
    assert_eq!(size_of::<kfd_event_data_union>(), 32);
    assert_eq!(size_of::<kfd_ioctl_criu_args>(), 56);
    assert_eq!(size_of::<kfd_ioctl_svm_args>(), 24);
    assert_eq!(offset_of!(kfd_ioctl_svm_args, attrs), 24);
    assert_eq!(size_of::<kfd_ioctl_set_xnack_mode_args>(), 4);
    assert_eq!(size_of::<kfd_dbg_device_info_entry>(), 7 * 8 + 18 * 4);
    assert_eq!(size_of::<kfd_context_save_area_header>(), 40);
    assert_eq!(size_of::<kfd_ioctl_dbg_trap_args>(), 32);
    assert_eq!(offset_of!(kfd_ioctl_dbg_trap_args, op_args), 8);
    assert_eq!(size_of::<kfd_ioctl_profiler_args>(), 16);
    assert_eq!(align_of::<kfd_ioctl_profiler_args>(), 4);
}

#[test]
fn ioctl_table_is_dense_and_consistent() {
    assert_eq!(IOCTLS.len(), 40);
    for (i, info) in IOCTLS.iter().enumerate() {
        assert_eq!(info.nr as usize, i + AMDKFD_COMMAND_START as usize, "{}", info.name);
        assert_eq!(_IOC_NR(info.request), info.nr, "{}", info.name);
        assert_eq!(_IOC_TYPE(info.request), AMDKFD_IOCTL_BASE, "{}", info.name);
        assert_eq!(_IOC_SIZE(info.request) as usize, info.arg_size, "{}", info.name);
        assert_eq!(IoctlDir::from_bits(_IOC_DIR(info.request)), Some(info.dir), "{}", info.name);
        assert_eq!(info.arg_type.is_none(), info.dir == IoctlDir::None, "{}", info.name);
        assert!(info.since_minor <= KFD_IOCTL_MINOR_VERSION, "{}", info.name);
        if let Some(arg) = info.arg_type {
            let layout = LAYOUTS.iter().find(|l| l.name == arg).expect("argument struct");
            assert_eq!(layout.size, info.arg_size, "{}", info.name);
        }
        assert_eq!(ioctl_by_nr(info.nr), Some(info));
    }
    assert_eq!(IOCTLS.iter().filter(|i| i.deprecated).count(), 5);
}

#[test]
fn ioctl_lookup() {
    assert_eq!(ioctl_by_nr(0), None);
    assert_eq!(ioctl_by_nr(AMDKFD_COMMAND_END), None);
    assert_eq!(ioctl_by_nr(0x25).map(|i| i.name), Some("AMDKFD_IOC_RUNTIME_ENABLE"));
    // Dispatch ignores size and direction, like kfd_ioctl: an old 88-byte create_queue.
    let old_create_queue = AMDKFD_IOWR::<[u64; 11]>(0x02);
    assert_ne!(old_create_queue, AMDKFD_IOC_CREATE_QUEUE);
    assert_eq!(
        ioctl_for_request(old_create_queue).map(|i| i.request),
        Some(AMDKFD_IOC_CREATE_QUEUE)
    );
    assert_eq!(ioctl_for_request(_IOR::<u64>(u32::from(b'd'), 0x01)), None);
}

#[test]
fn version_gating() {
    let v1_11 = KfdVersion::new(1, 11);
    assert!(v1_11.supports(since::AVAILABLE_MEMORY));
    assert!(!v1_11.supports(since::EXPORT_DMABUF));
    assert!(!KfdVersion::new(2, 30).supports(since::SVM));
    assert!(KfdVersion::CURRENT.supports(since::PROFILER));
    let dbg_trap = ioctl_by_nr(0x26).expect("DBG_TRAP");
    assert_eq!(dbg_trap.since_minor, 13);
    assert!(!dbg_trap.supported_by(KfdVersion::new(1, 12)));
    assert!(KfdVersion::new(1, 13).supports_ioctl(dbg_trap));
    let from_kernel =
        KfdVersion::from(kfd_ioctl_get_version_args { major_version: 1, minor_version: 17 });
    assert!(from_kernel > v1_11);
    assert!(from_kernel.supports(since::QUEUE_TYPE_SDMA_BY_ENG_ID));
    assert!(!from_kernel.supports(since::CREATE_QUEUE_METADATA_RING_SIZE));
    let since_of = |name: &str| IOCTLS.iter().find(|i| i.name == name).map(|i| i.since_minor);
    assert_eq!(since_of("AMDKFD_IOC_SMI_EVENTS"), Some(3));
    assert_eq!(since_of("AMDKFD_IOC_SVM"), Some(5));
    assert_eq!(since_of("AMDKFD_IOC_CRIU_OP"), Some(7));
    assert_eq!(since_of("AMDKFD_IOC_AVAILABLE_MEMORY"), Some(9));
    assert_eq!(since_of("AMDKFD_IOC_EXPORT_DMABUF"), Some(12));
    assert_eq!(since_of("AMDKFD_IOC_CREATE_PROCESS"), Some(19));
    assert_eq!(since_of("AMDKFD_IOC_PROFILER"), Some(23));
    assert_eq!(since_of("AMDKFD_IOC_GET_VERSION"), Some(0));
}

#[test]
fn exception_code_macros() {
    assert_eq!(KFD_EC_MASK(EC_QUEUE_WAVE_ABORT), 1);
    assert_eq!(KFD_EC_MASK(EC_PROCESS_DEVICE_REMOVE), 1 << 48);
    assert_eq!(KFD_EC_MASK(0), 0);
    assert_eq!(KFD_EC_MASK(65), 0);
    assert_eq!(KFD_EC_MASK_PROCESS, (1 << 47) | (1 << 48));
    assert!(KFD_DBG_EC_TYPE_IS_QUEUE(EC_QUEUE_NEW));
    assert!(!KFD_DBG_EC_TYPE_IS_QUEUE(EC_DEVICE_NEW));
    assert!(KFD_DBG_EC_TYPE_IS_DEVICE(EC_DEVICE_RAS_ERROR));
    assert!(KFD_DBG_EC_TYPE_IS_PACKET(EC_QUEUE_PACKET_RESERVED));
    assert!(KFD_DBG_EC_TYPE_IS_PROCESS(EC_PROCESS_RUNTIME));
    assert!(!KFD_DBG_EC_IS_VALID(EC_NONE));
    assert!(!KFD_DBG_EC_IS_VALID(EC_MAX));
    assert_eq!(KFD_SMI_EVENT_MASK_FROM_INDEX(KFD_SMI_EVENT_ALL_PROCESS), 1 << 63);
    assert_eq!(KFD_SMI_EVENT_MASK_FROM_INDEX(KFD_SMI_EVENT_VMFAULT), 1);
    assert_eq!(KFD_SMI_EVENT_MASK_FROM_INDEX(0), 0);
}

#[test]
fn unions_copy_members_bytewise() {
    let memory = kfd_hsa_memory_exception_data {
        failure: kfd_memory_exception_failure {
            NotPresent: 1,
            ReadOnly: 0,
            NoExecute: 1,
            imprecise: 0,
        },
        va: 0x7fff_0000_1000,
        gpu_id: 0x1234,
        ErrorType: KFD_MEM_ERR_SRAM_ECC,
    };
    let data = kfd_event_data_union::from(memory);
    assert_eq!(data.memory_exception_data(), memory);
    // The leading 16 bytes read as the hardware-exception member, as in C.
    let hw = data.hw_exception_data();
    assert_eq!((hw.reset_type, hw.reset_cause, hw.memory_lost, hw.gpu_id), (1, 0, 1, 0));

    // Building from a smaller member zeroes the rest.
    let signal = kfd_event_data_union::from(kfd_hsa_signal_event_data { last_event_age: 9 });
    assert_eq!(signal.memory_exception_data().gpu_id, 0);
    assert_eq!(signal.signal_event_data().last_event_age, 9);

    let mut trap = kfd_ioctl_dbg_trap_args {
        pid: 42,
        op: KFD_IOC_DBG_TRAP_SUSPEND_QUEUES,
        ..Default::default()
    };
    trap.op_args = kfd_ioctl_dbg_trap_suspend_queues_args {
        exception_mask: KFD_EC_MASK(EC_QUEUE_NEW),
        queue_array_ptr: 0xdead_0000,
        num_queues: 3,
        grace_period: 10,
    }
    .into();
    assert_eq!(trap.op_args.suspend_queues().num_queues, 3);
    assert_eq!(trap.op_args.resume_queues().queue_array_ptr, KFD_EC_MASK(EC_QUEUE_NEW));

    let profiler = kfd_ioctl_profiler_args { op: KFD_IOC_PROFILER_VERSION, op_args: 1u32.into() };
    assert_eq!(profiler.op_args.version(), KFD_IOC_PROFILER_VERSION_NUM);
    assert_eq!(profiler.op_args.pmc().gpu_id, 1);
}

#[test]
fn byte_images_follow_kernel_copy_rules() {
    let args = kfd_ioctl_create_queue_args {
        ring_base_address: 0x1000,
        ring_size: 4096,
        queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
        sdma_engine_id: 5,
        metadata_ring_size: 6,
        ..Default::default()
    };
    let image: [u8; 96] = args.to_bytes();
    assert_eq!(kfd_ioctl_create_queue_args::read_from(&image), args);
    assert_eq!(&image[..8], &0x1000u64.to_ne_bytes());
    assert_eq!(&image[32..36], &4096u32.to_ne_bytes());

    // A pre-1.17 caller passes 88 bytes: the kernel zero-fills the rest.
    let old = kfd_ioctl_create_queue_args::read_from(&image[..88]);
    assert_eq!(old.sdma_engine_id, 0);
    assert_eq!(old.metadata_ring_size, 0);
    assert_eq!(old.ring_size, 4096);

    // Writing back to a short buffer writes only what fits.
    let mut short = [0xAAu8; 90];
    args.write_to(&mut short);
    assert_eq!(&short[..88], &image[..88]);
    assert_eq!(&short[88..90], &image[88..90]);

    // Trailing padding is written as zero (criu_args: 52 bytes of fields, 56 of struct).
    let mut criu = [0xFFu8; 56];
    kfd_ioctl_criu_args { op: KFD_CRIU_OP_RESUME, ..Default::default() }.write_to(&mut criu);
    assert_eq!(&criu[52..], &[0, 0, 0, 0]);
    assert_eq!(&criu[48..52], &KFD_CRIU_OP_RESUME.to_ne_bytes());

    // Arrays of structs use sizeof as the stride.
    let mut apertures = kfd_ioctl_get_process_apertures_args::default();
    apertures.process_apertures[1].gpu_id = 77;
    apertures.num_of_nodes = 2;
    let image: [u8; 400] = apertures.to_bytes();
    assert_eq!(&image[56 + 48..56 + 52], &77u32.to_ne_bytes());
    assert_eq!(kfd_ioctl_get_process_apertures_args::read_from(&image), apertures);
}

#[test]
fn layout_table_matches_definitions() {
    assert_eq!(LAYOUTS.len(), 68);
    for (i, layout) in LAYOUTS.iter().enumerate() {
        assert!(LAYOUTS[..i].iter().all(|other| other.name != layout.name), "{}", layout.name);
        assert!(!layout.fields.is_empty(), "{}", layout.name);
        for field in layout.fields {
            assert!(field.offset + field.size <= layout.size, "{}.{}", layout.name, field.name);
            assert_eq!(field.offset % field.align, 0, "{}.{}", layout.name, field.name);
        }
    }
    let svm = LAYOUTS.iter().find(|l| l.name == "kfd_ioctl_svm_attribute").expect("svm attr");
    assert_eq!(svm.field("type").map(|f| f.offset), Some(0));
    let event = LAYOUTS.iter().find(|l| l.name == "kfd_event_data").expect("event data");
    let names: [&str; 6] = core::array::from_fn(|i| event.fields[i].name);
    assert_eq!(
        names,
        [
            "memory_exception_data",
            "hw_exception_data",
            "signal_event_data",
            "kfd_event_data_ext",
            "event_id",
            "pad"
        ]
    );
    assert!(event.fields[..3].iter().all(|f| f.offset == 0));
    let header = LAYOUTS.iter().find(|l| l.name == "kfd_context_save_area_header").expect("header");
    assert_eq!(header.field("wave_state.wave_state_size").map(|f| f.offset), Some(12));
    assert_eq!(header.field("debug_offset").map(|f| f.offset), Some(16));
}

#[test]
fn constant_tables_are_complete_and_unique() {
    for (i, constant) in CONSTANTS.iter().enumerate() {
        assert!(!constant.name.is_empty());
        assert!(CONSTANTS[..i].iter().all(|c| c.name != constant.name), "{}", constant.name);
    }
    let find = |name: &str| CONSTANTS.iter().find(|c| c.name == name).map(|c| c.value);
    assert_eq!(find("KFD_IOCTL_MINOR_VERSION"), Some(23));
    assert_eq!(find("AMDKFD_IOC_GET_VERSION"), Some(i128::from(AMDKFD_IOC_GET_VERSION)));
    assert_eq!(find("HSA_DBG_RESERVED"), Some(0xffff_ffff_ffff_f000));
    assert_eq!(find("KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE"), Some(0x8000_0000));
    assert_eq!(find("EC_MAX"), Some(50));
    assert_eq!(CONSTANTS.iter().filter(|c| c.name.starts_with("AMDKFD_IOC_")).count(), 40);
    assert_eq!(ENUMS.len(), 18);
    let smi = ENUMS.iter().find(|e| e.name == "kfd_smi_event").expect("smi enum");
    assert_eq!(smi.members.len(), 15);
    assert_eq!(FUNCTION_MACROS.len(), 4 + 7 + 11);
    for m in FUNCTION_MACROS {
        match m.kind {
            MacroKind::Int { eval, first, last } => {
                assert!(first <= last);
                let _ = eval(first);
            }
            MacroKind::Request { eval } => assert_eq!(_IOC_NR(eval(0x42)), 0x42),
            MacroKind::Format(format) => assert!(format.ends_with('\n'), "{}", m.name),
        }
    }
}
