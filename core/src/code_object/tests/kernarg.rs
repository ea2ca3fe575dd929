//! Kernel-argument layout against the committed objects' metadata (offsets from
//! `llvm-readelf-19 --notes`, see `expected.rs`) and synthetic metadata.

use std::string::ToString;
use std::vec;

use super::expected::ARGS;
use super::{metadata_doc, object, rd16, rd32, rd64};
use crate::code_object::kernarg::*;
use crate::code_object::*;
use crate::error::{Error as _, ErrorKind};

fn kernel(path: &str, name: &str) -> KernelMetadata<'static> {
    CodeObject::parse(object(path).bytes).unwrap().kernel(name).unwrap().metadata
}

/// The offset of argument `kind` of kernel `name` (v5 objects), from `expected.rs`.
fn offset_of(name: &str, kind: &str) -> usize {
    let (_, _, _, args) =
        ARGS.iter().find(|(s, v, n, _)| *s == "test" && *v == 5 && *n == name).unwrap();
    args.iter().find(|a| a.4 == kind).unwrap().2 as usize
}

#[test]
fn control_step_arguments() {
    let k = kernel("control/gfx900.co", "control_step");
    let mut buf = [0xeeu8; 40];
    let values = [
        ArgValue::Pointer(0x1000),
        ArgValue::Pointer(0x2000),
        ArgValue::U64(1024),
        ArgValue::U64(7),
    ];
    let layout = write_kernargs(&k, &mut buf, &values, &Dispatch::linear(1024, 64)).unwrap();
    assert_eq!(layout, KernargLayout { size: 32, align: 16 });
    // in, out, words, seed at 0, 8, 16, 24 (llvm-readelf); bytes past the segment untouched.
    assert_eq!(
        [rd64(&buf, 0), rd64(&buf, 8), rd64(&buf, 16), rd64(&buf, 24)],
        [0x1000, 0x2000, 1024, 7]
    );
    assert_eq!(buf[32..], [0xee; 8]);
}

#[test]
fn hidden_arguments_of_a_2d_dispatch() {
    let k = kernel("test/gfx942.co", "local_size_2d");
    let mut buf = vec![0xeeu8; 512];
    let mut b = KernargBuilder::new(&k, &mut buf).unwrap();
    assert_eq!(b.explicit_count(), 3);
    b.set(0, ArgValue::Pointer(0xdead_0000)).unwrap();
    b.set(1, ArgValue::U32(100)).unwrap().set(2, ArgValue::I32(37)).unwrap();
    let mut d = Dispatch::new(2, [16, 8, 1], [100, 37, 1]);
    d.global_offset = [5, 6, 0];
    let layout = b.finish(&d).unwrap();
    assert_eq!(layout, KernargLayout { size: 272, align: 16 });
    let at = |kind| offset_of("local_size_2d", kind);
    assert_eq!(rd64(&buf, 0), 0xdead_0000);
    assert_eq!((rd32(&buf, 8), rd32(&buf, 12)), (100, 37));
    // 100 = 6 * 16 + 4, 37 = 4 * 8 + 5.
    assert_eq!(rd32(&buf, at("hidden_block_count_x")), 6);
    assert_eq!(rd32(&buf, at("hidden_block_count_y")), 4);
    assert_eq!(rd32(&buf, at("hidden_block_count_z")), 1);
    assert_eq!(rd16(&buf, at("hidden_group_size_x")), 16);
    assert_eq!(rd16(&buf, at("hidden_group_size_y")), 8);
    assert_eq!(rd16(&buf, at("hidden_group_size_z")), 1);
    assert_eq!(rd16(&buf, at("hidden_remainder_x")), 4);
    assert_eq!(rd16(&buf, at("hidden_remainder_y")), 5);
    assert_eq!(rd16(&buf, at("hidden_remainder_z")), 0);
    assert_eq!(rd64(&buf, at("hidden_global_offset_x")), 5);
    assert_eq!(rd64(&buf, at("hidden_global_offset_y")), 6);
    assert_eq!(rd64(&buf, at("hidden_global_offset_z")), 0);
    assert_eq!(rd16(&buf, at("hidden_grid_dims")), 2);
    // Everything no argument covers is zero, up to the segment's end only.
    let covered: std::vec::Vec<_> =
        k.args.iter().flat_map(|a| a.offset..a.offset + a.size).collect();
    for i in 0..272u32 {
        if !covered.contains(&i) {
            assert_eq!(buf[i as usize], 0, "byte {i}");
        }
    }
    assert!(buf[272..].iter().all(|b| *b == 0xee));
    // The v4 build of the same kernel has no hidden arguments (it reads the dispatch packet).
    let v4 = kernel("test/gfx900-v4.co", "local_size_2d");
    assert_eq!((v4.args.len(), v4.kernarg_segment_size), (3, 16));
}

#[test]
fn every_hidden_kind_gets_its_value() {
    let kinds = [
        ("hidden_global_offset_x", 8, 11u64),
        ("hidden_printf_buffer", 8, 0x1000),
        ("hidden_hostcall_buffer", 8, 0x2000),
        ("hidden_default_queue", 8, 0x3000),
        ("hidden_completion_action", 8, 0x4000),
        ("hidden_multigrid_sync_arg", 8, 0x5000),
        ("hidden_heap_v1", 8, 0x6000),
        ("hidden_dynamic_lds_size", 4, 512),
        ("hidden_private_base", 4, 0x1_0000),
        ("hidden_shared_base", 4, 0x2_0000),
        ("hidden_queue_ptr", 8, 0x7000),
        ("hidden_none", 8, 0),
        ("hidden_not_yet_invented", 8, 0),
    ];
    let args: std::vec::Vec<_> =
        kinds.iter().enumerate().map(|(i, (k, s, _))| (8 * i as u64, *s, *k)).collect();
    let doc = metadata_doc(8 * kinds.len() as u64, &args, &[]);
    let meta = Metadata::parse(&doc).unwrap();
    let k = meta.kernels().next().unwrap();
    assert_eq!(k.args.explicit_count(), 0);
    let mut d = Dispatch::linear(64, 64);
    d.global_offset[0] = 11;
    (d.printf_buffer, d.hostcall_buffer, d.default_queue) = (0x1000, 0x2000, 0x3000);
    (d.completion_action, d.multigrid_sync_arg, d.heap_v1) = (0x4000, 0x5000, 0x6000);
    (d.dynamic_lds_size, d.private_base, d.shared_base, d.queue_ptr) =
        (512, 0x1_0000, 0x2_0000, 0x7000);
    let mut buf = [0xffu8; 8 * 13];
    write_kernargs(&k, &mut buf, &[], &d).unwrap();
    for (i, (kind, size, value)) in kinds.iter().enumerate() {
        let got = if *size == 8 { rd64(&buf, 8 * i) } else { u64::from(rd32(&buf, 8 * i)) };
        assert_eq!(got, *value, "{kind}");
    }
}

#[test]
fn argument_type_and_count_checks() {
    let k = kernel("control/gfx900.co", "control_step");
    let mut buf = [0u8; 32];
    let mut b = KernargBuilder::new(&k, &mut buf).unwrap();
    // `in` is a global buffer: a pointer or 8 raw bytes, nothing else.
    let e = b.set(0, ArgValue::U64(1)).unwrap_err();
    let given = ValueClass { class: ArgClass::Integer, size: 8 };
    assert_eq!(
        e,
        KernargError::ArgumentType { index: 0, expected: ArgClass::Pointer, size: 8, given }
    );
    assert_eq!(e.to_string(), "argument 0 takes a 8-byte pointer, given a 8-byte integer");
    assert!(b.set(0, ArgValue::Bytes(&[1; 8])).is_ok());
    assert!(b.set(0, ArgValue::Bytes(&[1; 4])).is_err());
    // `words` is a ulong: 8-byte integers only.
    assert!(b.set(2, ArgValue::Pointer(1)).is_err());
    assert!(b.set(2, ArgValue::F64(1.0)).is_err());
    assert!(b.set(2, ArgValue::U32(1)).is_err());
    assert!(b.set(2, ArgValue::I64(-1)).is_ok());
    assert_eq!(
        b.set(4, ArgValue::U64(0)).unwrap_err(),
        KernargError::NoSuchArgument { index: 4, count: 4 }
    );
    // Arguments 1 and 3 were never set.
    b.set(1, ArgValue::Pointer(2)).unwrap();
    assert_eq!(
        b.finish(&Dispatch::linear(64, 64)),
        Err(KernargError::MissingArgument { index: 3 })
    );
    // Too few values.
    let mut buf = [0u8; 32];
    let values = [ArgValue::Pointer(1), ArgValue::Pointer(2), ArgValue::U64(3)];
    assert_eq!(
        write_kernargs(&k, &mut buf, &values, &Dispatch::linear(64, 64)),
        Err(KernargError::ArgumentCount { expected: 4, got: 3 })
    );
    // Floats and integers by type name (float_math's `n` is a uint; uint_division64's `a` a
    // pointer; signedness is not checked).
    let f = kernel("test/gfx900.co", "float_math");
    let mut buf = [0u8; 32];
    let mut b = KernargBuilder::new(&f, &mut buf).unwrap();
    assert!(b.set(2, ArgValue::F32(1.0)).is_err());
    assert!(b.set(2, ArgValue::I32(-1)).is_ok());
    assert_eq!(rd32(&buf, 16), u32::MAX);
}

#[test]
fn dispatch_checks() {
    let k = kernel("test/gfx900.co", "vector_add");
    let values =
        [ArgValue::Pointer(1), ArgValue::Pointer(2), ArgValue::Pointer(3), ArgValue::U32(4)];
    let run = |d: Dispatch| write_kernargs(&k, &mut [0u8; 64], &values, &d).map(|_| ());
    assert!(run(Dispatch::linear(1000, 256)).is_ok());
    assert_eq!(run(Dispatch::new(0, [1, 1, 1], [1, 1, 1])), Err(KernargError::Geometry));
    assert_eq!(run(Dispatch::new(4, [1, 1, 1], [1, 1, 1])), Err(KernargError::Geometry));
    assert_eq!(run(Dispatch::linear(1000, 0)), Err(KernargError::Geometry));
    assert_eq!(run(Dispatch::linear(0, 64)), Err(KernargError::Geometry));
    assert_eq!(run(Dispatch::new(1, [64, 2, 1], [64, 2, 1])), Err(KernargError::Geometry));
    assert_eq!(
        run(Dispatch::linear(1000, 512)),
        Err(KernargError::WorkgroupTooLarge { size: 512, max: 256 })
    );
    // lds_reduce requires work-groups of exactly 256.
    let r = kernel("test/gfx900.co", "lds_reduce");
    let values = [ArgValue::Pointer(1), ArgValue::Pointer(2), ArgValue::U32(3)];
    let run = |d: Dispatch| write_kernargs(&r, &mut [0u8; 64], &values, &d).map(|_| ());
    assert_eq!(
        run(Dispatch::linear(1024, 64)),
        Err(KernargError::WorkgroupSizeRequired { required: [256, 1, 1] })
    );
    assert!(run(Dispatch::linear(1000, 256)).is_ok());
    // A kernel requiring uniform work-groups.
    let mut u = k;
    u.uniform_work_group_size = true;
    let values =
        [ArgValue::Pointer(1), ArgValue::Pointer(2), ArgValue::Pointer(3), ArgValue::U32(4)];
    let run = |d: Dispatch| write_kernargs(&u, &mut [0u8; 64], &values, &d).map(|_| ());
    assert_eq!(run(Dispatch::linear(1000, 64)), Err(KernargError::NonUniformGrid));
    assert!(run(Dispatch::linear(1024, 64)).is_ok());
}

#[test]
fn buffer_and_capacity_limits() {
    let k = kernel("test/gfx942.co", "local_size_2d");
    let mut buf = [0xaau8; 271];
    let e = KernargBuilder::new(&k, &mut buf).unwrap_err();
    assert_eq!(e, KernargError::BufferTooSmall { needed: 272, got: 271 });
    assert_eq!(e.to_string(), "kernel arguments need 272 bytes, the buffer has 271");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(buf.iter().all(|b| *b == 0xaa), "nothing written");
    // A hidden value that does not fit its slot: a block count in 2 bytes.
    let doc = metadata_doc(8, &[(0, 2, "hidden_block_count_x")], &[]);
    let meta = Metadata::parse(&doc).unwrap();
    let k = meta.kernels().next().unwrap();
    let mut buf = [0u8; 8];
    assert!(write_kernargs(&k, &mut buf, &[], &Dispatch::linear(65535, 1)).is_ok());
    assert_eq!(
        write_kernargs(&k, &mut buf, &[], &Dispatch::linear(65536, 1)),
        Err(KernargError::HiddenValueTooLarge { index: 0, kind: ValueKind::HiddenBlockCountX })
    );
    // More arguments than the builder tracks.
    let args: std::vec::Vec<_> = (0..=MAX_KERNEL_ARGS as u64).map(|i| (i, 1, "by_value")).collect();
    let many = big_doc(&args);
    let meta = Metadata::parse(&many).unwrap();
    let k = meta.kernels().next().unwrap();
    let mut buf = vec![0u8; args.len()];
    let count = args.len() as u32;
    assert_eq!(
        KernargBuilder::new(&k, &mut buf).unwrap_err(),
        KernargError::TooManyArguments { count }
    );
}

/// A one-kernel document with more arguments than a fixarray holds.
fn big_doc(args: &[(u64, u64, &str)]) -> std::vec::Vec<u8> {
    let small = metadata_doc(args.len() as u64, &[], &[]);
    // The empty `.args` array (0x90) is the document's last byte: replace it by an array32.
    let mut doc = small[..small.len() - 1].to_vec();
    doc.push(0xdd);
    doc.extend_from_slice(&(args.len() as u32).to_be_bytes());
    for (offset, size, kind) in args {
        let arg = super::Pack::default()
            .map(3)
            .kv(".offset", *offset)
            .kv(".size", *size)
            .kvs(".value_kind", kind);
        doc.extend_from_slice(&arg.0);
    }
    doc
}
