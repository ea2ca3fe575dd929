//! Every typed error, from hand-corrupted copies of committed objects (or synthetic metadata).

use std::format;
use std::string::ToString;
use std::vec;
use std::vec::Vec;

use super::{
    Pack, copy, dynamic_entry, find, metadata_doc, object, phdr_of, phdrs, rd64, shdr_of, wr16,
    wr32, wr64,
};
use crate::code_object::msgpack::{MsgPackError, MsgPackProblem};
use crate::code_object::target::EFlagsProblem;
use crate::code_object::*;
use crate::error::{Error as _, ErrorKind};

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const SHT_RELA: u32 = 4;
const SHT_DYNSYM: u32 = 11;
const DT_RELA: u64 = 7;
const DT_RELAENT: u64 = 9;

fn parse(b: &[u8]) -> Result<CodeObject<'_>, CodeObjectError> {
    CodeObject::parse(b)
}

fn malformed(part: ElfPart, problem: ElfProblem) -> Result<(), CodeObjectError> {
    Err(CodeObjectError::Malformed { part, problem })
}

/// Parses and drops the object (for comparing errors).
fn check(b: &[u8]) -> Result<(), CodeObjectError> {
    parse(b).map(|_| ())
}

fn meta_err(
    kernel: Option<u32>,
    arg: Option<u32>,
    key: &'static str,
    problem: MetadataProblem,
) -> MetadataError {
    MetadataError { kernel, arg, key, problem }
}

#[test]
fn not_elf() {
    assert_eq!(check(b""), Err(CodeObjectError::NotElf));
    assert_eq!(check(b"\x7fELF"), Err(CodeObjectError::NotElf));
    assert_eq!(check(b"MZ\x90\x00 not an ELF file at all"), Err(CodeObjectError::NotElf));
    for (byte, value) in [(4, 1u8), (5, 2), (6, 0)] {
        // ELFCLASS32, big endian, version 0.
        let mut b = copy("control/gfx900.co");
        b[byte] = value;
        assert_eq!(check(&b), Err(CodeObjectError::NotElf), "byte {byte}");
    }
    // An ELF header cut short.
    let b = &object("control/gfx900.co").bytes[..40];
    assert_eq!(check(b), malformed(ElfPart::Header, ElfProblem::OutOfBounds));
    assert_eq!(CodeObjectError::NotElf.kind(), ErrorKind::Malformed);
}

#[test]
fn not_amdgpu_not_hsa_not_loadable() {
    let mut b = copy("control/gfx900.co");
    wr16(&mut b, 18, 62); // EM_X86_64
    assert_eq!(check(&b), Err(CodeObjectError::NotAmdgpu { machine: 62 }));
    assert_eq!(
        CodeObjectError::NotAmdgpu { machine: 62 }.to_string(),
        "not an AMDGPU code object (e_machine 62, expected 224)"
    );
    let mut b = copy("control/gfx900.co");
    b[7] = 65; // ELFOSABI_AMDGPU_PAL
    assert_eq!(check(&b), Err(CodeObjectError::NotHsa { os_abi: 65 }));
    let mut b = copy("control/gfx900.co");
    wr16(&mut b, 16, 1); // ET_REL
    assert_eq!(check(&b), Err(CodeObjectError::NotSharedObject { e_type: 1 }));
}

#[test]
fn unsupported_versions() {
    for abi in [0u8, 1, 5, 255] {
        let mut b = copy("control/gfx900.co");
        b[8] = abi;
        assert_eq!(check(&b), Err(CodeObjectError::UnsupportedVersion { abi_version: abi }));
    }
    let e = CodeObjectError::UnsupportedVersion { abi_version: 1 };
    assert_eq!(e.kind(), ErrorKind::NotSupported);
    assert!(e.to_string().contains("EI_ABIVERSION 1"));
}

#[test]
fn bad_targets() {
    let bad = |e| Err(CodeObjectError::BadTarget(e));
    let mut b = copy("control/gfx900.co");
    wr32(&mut b, 48, 0x127); // reserved processor value 0x27
    assert_eq!(check(&b), bad(EFlagsProblem::UnknownProcessor));
    wr32(&mut b, 48, 0x112c); // gfx900 with a reserved bit
    assert_eq!(check(&b), bad(EFlagsProblem::ReservedBits));
    wr32(&mut b, 48, 0x0100_012c); // a generic version in a v5 object
    assert_eq!(check(&b), bad(EFlagsProblem::ReservedBits));
    let mut b = copy("control/gfx9-generic-v6.co");
    wr32(&mut b, 48, 0x151); // gfx9-generic without its version
    assert_eq!(check(&b), bad(EFlagsProblem::GenericVersion));
    // A consistent e_flags for another processor than the metadata's target.
    let mut b = copy("control/gfx900.co");
    wr32(&mut b, 48, 0x12f); // gfx906
    assert_eq!(
        check(&b),
        Err(CodeObjectError::Metadata(meta_err(
            None,
            None,
            "amdhsa.target",
            MetadataProblem::TargetMismatch
        )))
    );
}

#[test]
fn relocations_other_than_relative64_are_refused() {
    let rela = |b: &[u8]| rd64(b, shdr_of(b, SHT_RELA) + 24) as usize;
    for (kind, text) in [
        (3u32, "relocation 0: unsupported type R_AMDGPU_ABS64 (3)"),
        (99, "relocation 0: unknown type 99"),
    ] {
        let mut b = copy("test/gfx900.co");
        let at = rela(&b);
        wr32(&mut b, at + 8, kind);
        let err = check(&b).unwrap_err();
        assert_eq!(err, CodeObjectError::UnknownRelocation { kind, index: 0 });
        assert_eq!(err.to_string(), text);
    }
    // R_AMDGPU_NONE is a no-op.
    let mut b = copy("test/gfx900.co");
    let at = rela(&b);
    wr32(&mut b, at + 24 + 8, 0);
    let co = parse(&b).unwrap();
    assert_eq!(co.relocations().map(|r| r.index).collect::<Vec<_>>(), vec![0, 2, 3]);
    // A RELATIVE64 naming a symbol, outside the image, or overflowing.
    let mut b = copy("test/gfx900.co");
    let at = rela(&b);
    wr32(&mut b, at + 24 + 12, 1);
    assert_eq!(check(&b), malformed(ElfPart::Relocation(1), ElfProblem::UnexpectedSymbol));
    let mut b = copy("test/gfx900.co");
    let at = rela(&b);
    let size = parse(object("test/gfx900.co").bytes).unwrap().image_size();
    wr64(&mut b, at + 48, size - 4);
    assert_eq!(check(&b), malformed(ElfPart::Relocation(2), ElfProblem::OutOfBounds));
    wr64(&mut b, at + 48, u64::MAX - 3);
    assert_eq!(check(&b), malformed(ElfPart::Relocation(2), ElfProblem::Overflow));
    // A value below the image or past its end.
    for addend in [-8i64, size as i64 + 1] {
        let mut b = copy("test/gfx900.co");
        let at = rela(&b);
        wr64(&mut b, at + 24 + 16, addend as u64);
        assert_eq!(check(&b), malformed(ElfPart::Relocation(1), ElfProblem::TargetOutsideImage));
    }
}

#[test]
fn dynamic_table_problems() {
    let mut b = copy("test/gfx900.co");
    let d = dynamic_entry(&b, DT_RELAENT);
    wr64(&mut b, d, 17); // DT_REL
    assert_eq!(check(&b), Err(CodeObjectError::UnsupportedDynamic { tag: 17 }));
    let mut b = copy("test/gfx900.co");
    let d = dynamic_entry(&b, DT_RELAENT);
    wr64(&mut b, d + 8, 16);
    assert_eq!(check(&b), malformed(ElfPart::Relocations, ElfProblem::EntrySize));
    let mut b = copy("test/gfx900.co");
    let d = dynamic_entry(&b, DT_RELA);
    wr64(&mut b, d + 8, 0x10_0000);
    assert_eq!(check(&b), malformed(ElfPart::Relocations, ElfProblem::OutOfBounds));
    let mut b = copy("test/gfx900.co");
    let p = phdr_of(&b, PT_DYNAMIC);
    wr64(&mut b, p + 8, 1 << 40);
    assert_eq!(check(&b), malformed(ElfPart::Dynamic, ElfProblem::OutOfBounds));
}

#[test]
fn missing_kernels() {
    let co = parse(object("control/gfx900.co").bytes).unwrap();
    let err = co.kernel("nope").unwrap_err();
    assert_eq!(err, CodeObjectError::MissingKernel { name: KernelName::new("nope") });
    assert_eq!(err.to_string(), "no kernel `nope` (no `nope.kd` symbol)");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    // The function symbol is not the kernel: only `<name>.kd` counts.
    assert!(co.kernel("control_step.kd").is_err());
    let long = "k".repeat(100);
    let CodeObjectError::MissingKernel { name } = co.kernel(&long).unwrap_err() else { panic!() };
    assert!(name.is_truncated());
    assert_eq!(name.as_str().len(), KERNEL_NAME_CAPACITY);
    assert!(name.to_string().ends_with("kkk..."));
    // Truncation keeps whole characters.
    let wide = "é".repeat(30);
    assert_eq!(KernelName::new(&wide).as_str(), "é".repeat(24));
    // A symbol without a metadata entry, and a metadata entry without a symbol.
    let mut b = copy("control/gfx900.co");
    let at = find(&b, b"\xafcontrol_step.kd") + 1; // the `.symbol` value (a fixstr)
    b[at + 9] = b'x';
    let co = parse(&b).unwrap();
    assert_eq!(
        co.kernel("control_step").unwrap_err(),
        CodeObjectError::Metadata(meta_err(None, None, ".symbol", MetadataProblem::NoKernelEntry))
    );
    let kernels: Vec<_> = co.kernels().collect();
    assert_eq!(
        kernels,
        vec![Err(CodeObjectError::MissingKernel { name: KernelName::new("control_step") })]
    );
}

#[test]
fn too_many_segments() {
    // A new program header table at the end of the file: 17 copies of the first LOAD at
    // increasing addresses.
    let mut b = copy("control/gfx900.co");
    let load = phdr_of(&b, PT_LOAD);
    let first: Vec<u8> = b[load..load + 56].to_vec();
    let table = b.len().next_multiple_of(8);
    b.resize(table, 0);
    for i in 0..=MAX_LOAD_SEGMENTS as u64 {
        let at = b.len();
        b.extend_from_slice(&first);
        wr64(&mut b, at + 16, i * 0x10000);
    }
    wr64(&mut b, 32, table as u64);
    wr16(&mut b, 56, (MAX_LOAD_SEGMENTS + 1) as u16);
    assert_eq!(check(&b), Err(CodeObjectError::TooManySegments));
    assert_eq!(CodeObjectError::TooManySegments.kind(), ErrorKind::CapacityExhausted);
    // 16 are accepted (the metadata note is then found through the sections).
    wr16(&mut b, 56, MAX_LOAD_SEGMENTS as u16);
    assert_eq!(parse(&b).unwrap().segments().count(), MAX_LOAD_SEGMENTS);
}

#[test]
fn malformed_headers_and_segments() {
    let path = "control/gfx900.co";
    let mut b = copy(path);
    wr16(&mut b, 54, 32);
    assert_eq!(check(&b), malformed(ElfPart::ProgramHeaders, ElfProblem::EntrySize));
    let mut b = copy(path);
    wr16(&mut b, 58, 40);
    assert_eq!(check(&b), malformed(ElfPart::Sections, ElfProblem::EntrySize));
    let mut b = copy(path);
    let len = b.len() as u64;
    wr64(&mut b, 32, len);
    assert_eq!(check(&b), malformed(ElfPart::ProgramHeaders, ElfProblem::OutOfBounds));
    let mut b = copy(path);
    wr64(&mut b, 40, len - 10);
    assert_eq!(check(&b), malformed(ElfPart::Sections, ElfProblem::OutOfBounds));
    let mut b = copy(path);
    wr64(&mut b, 40, u64::MAX - 8);
    assert_eq!(check(&b), malformed(ElfPart::Sections, ElfProblem::OutOfBounds));

    let loads: Vec<usize> = phdrs(&copy(path))
        .into_iter()
        .filter(|&p| super::rd32(object(path).bytes, p) == PT_LOAD)
        .collect();
    let (first, second) = (loads[0], loads[1]);
    let segment = |p: usize| ElfPart::Segment(((p - 64) / 56) as u16);
    let mut b = copy(path);
    let memsz = rd64(&b, first + 40);
    wr64(&mut b, first + 32, memsz + 1);
    assert_eq!(check(&b), malformed(segment(first), ElfProblem::FileSizeAboveMemSize));
    let mut b = copy(path);
    wr64(&mut b, first + 8, 1 << 40);
    assert_eq!(check(&b), malformed(segment(first), ElfProblem::OutOfBounds));
    let mut b = copy(path);
    wr64(&mut b, first + 48, 3);
    assert_eq!(check(&b), malformed(segment(first), ElfProblem::Alignment));
    let mut b = copy(path);
    wr64(&mut b, second + 16, 0);
    assert_eq!(check(&b), malformed(segment(second), ElfProblem::Overlap));
    let mut b = copy(path);
    let last = *loads.last().unwrap();
    wr64(&mut b, last + 16, u64::MAX - 4);
    assert_eq!(check(&b), malformed(segment(last), ElfProblem::Overflow));
    let mut b = copy(path);
    for &p in &loads {
        wr32(&mut b, p, 0);
    }
    assert_eq!(check(&b), malformed(ElfPart::ProgramHeaders, ElfProblem::NoSegments));
}

#[test]
fn malformed_symbols_and_descriptors() {
    let path = "control/gfx900.co";
    let dynsym = |b: &[u8]| shdr_of(b, SHT_DYNSYM);
    let mut b = copy(path);
    let s = dynsym(&b);
    wr64(&mut b, s + 56, 16);
    let co = parse(&b).unwrap();
    let section = ElfPart::Section(((s - rd64(&b, 40) as usize) / 64) as u32);
    assert_eq!(co.kernel("control_step").map(|_| ()), malformed(section, ElfProblem::EntrySize));
    let mut b = copy(path);
    let s = dynsym(&b);
    wr32(&mut b, s + 40, 999);
    let co = parse(&b).unwrap();
    assert_eq!(
        co.kernel("control_step").map(|_| ()),
        malformed(ElfPart::Section(999), ElfProblem::OutOfBounds)
    );
    // Symbol 1 of .dynsym: a name past its string table.
    let mut b = copy(path);
    let table = rd64(&b, dynsym(&b) + 24) as usize;
    wr32(&mut b, table + 24, 0xffff);
    let co = parse(&b).unwrap();
    assert_eq!(
        co.kernel("control_step").map(|_| ()),
        malformed(ElfPart::Symbol(1), ElfProblem::OutOfBounds)
    );
    // Symbol 2 of .dynsym is `control_step.kd`: its value moved out of the image.
    let mut b = copy(path);
    let table = rd64(&b, dynsym(&b) + 24) as usize;
    wr64(&mut b, table + 48 + 8, 0x10_0000);
    let co = parse(&b).unwrap();
    assert_eq!(
        co.kernel("control_step").map(|_| ()),
        malformed(ElfPart::Descriptor, ElfProblem::OutOfBounds)
    );
    // The descriptor (at 0x5c0, in the first segment, file offset = address) points its
    // entry at itself (not code), or below address 0.
    let mut b = copy(path);
    wr64(&mut b, 0x5c0 + 16, 0);
    let co = parse(&b).unwrap();
    assert_eq!(
        co.kernel("control_step").map(|_| ()),
        malformed(ElfPart::Descriptor, ElfProblem::EntryNotExecutable)
    );
    // A descriptor at 0x5c8 (not 64-byte aligned); an entry 4 bytes into the code (not
    // 256-byte aligned).
    let mut b = copy(path);
    let table = rd64(&b, dynsym(&b) + 24) as usize;
    wr64(&mut b, table + 48 + 8, 0x5c8);
    let co = parse(&b).unwrap();
    assert_eq!(
        co.kernel("control_step").map(|_| ()),
        malformed(ElfPart::Descriptor, ElfProblem::Misaligned)
    );
    let mut b = copy(path);
    let entry = rd64(&b, 0x5c0 + 16);
    wr64(&mut b, 0x5c0 + 16, entry + 4);
    let co = parse(&b).unwrap();
    assert_eq!(
        co.kernel("control_step").map(|_| ()),
        malformed(ElfPart::Descriptor, ElfProblem::Misaligned)
    );
    let mut b = copy(path);
    wr64(&mut b, 0x5c0 + 16, (-0x5c1i64) as u64);
    let co = parse(&b).unwrap();
    assert_eq!(
        co.kernel("control_step").map(|_| ()),
        malformed(ElfPart::Descriptor, ElfProblem::Overflow)
    );
    assert_eq!(
        co.kernels().next().unwrap().map(|_| ()),
        malformed(ElfPart::Descriptor, ElfProblem::Overflow)
    );
}

/// The file offset of the `AMDGPU` metadata note record of `b`.
fn note(b: &[u8]) -> usize {
    find(b, b"AMDGPU\0\0") - 12
}

#[test]
fn metadata_note_problems() {
    let path = "control/gfx900.co";
    let md =
        |kernel, key, problem| Err(CodeObjectError::Metadata(meta_err(kernel, None, key, problem)));
    // Another note type: no metadata.
    let mut b = copy(path);
    let n = note(&b);
    wr32(&mut b, n + 8, 33);
    assert_eq!(check(&b), md(None, "", MetadataProblem::NoNote));
    // A record running past its segment.
    let mut b = copy(path);
    let n = note(&b);
    wr32(&mut b, n, 0xffff);
    assert_eq!(check(&b), malformed(ElfPart::Note, ElfProblem::OutOfBounds));
    // A descriptor cut short: the MessagePack is truncated.
    let mut b = copy(path);
    let n = note(&b);
    wr32(&mut b, n + 4, 100);
    let Err(CodeObjectError::Metadata(e)) = check(&b) else { panic!("not a metadata error") };
    assert!(
        matches!(
            e.problem,
            MetadataProblem::Syntax(MsgPackError { problem: MsgPackProblem::Truncated, .. })
        ),
        "{e:?}"
    );
    // A required key renamed.
    let mut b = copy(path);
    let at = find(&b, b".kernarg_segment_size");
    b[at + 20] = b'f';
    assert_eq!(check(&b), md(Some(0), ".kernarg_segment_size", MetadataProblem::MissingKey));
    // .wavefront_size: true (wrong type), 48 (not a power of two).
    let mut b = copy(path);
    let at = find(&b, b".wavefront_size\x40") + 15;
    b[at] = 0xc3;
    assert_eq!(check(&b), md(Some(0), ".wavefront_size", MetadataProblem::WrongType));
    b[at] = 0x30;
    assert_eq!(check(&b), md(Some(0), ".wavefront_size", MetadataProblem::OutOfRange));
    // amdhsa.version 2.2.
    let mut b = copy(path);
    let at = find(&b, b"amdhsa.version\x92\x01") + 15;
    b[at] = 0x02;
    assert_eq!(check(&b), md(None, "amdhsa.version", MetadataProblem::UnsupportedVersion));
    // amdhsa.target naming gfx901.
    let mut b = copy(path);
    let at = find(&b, b"amdgcn-amd-amdhsa--gfx900");
    b[at + 24] = b'1';
    assert_eq!(check(&b), md(None, "amdhsa.target", MetadataProblem::TargetMismatch));
    // An argument offset past the kernarg segment (`seed` at 24 moved to 127).
    let mut b = copy(path);
    let at = find(&b, b".offset\x18") + 7;
    b[at] = 0x7f;
    assert_eq!(
        check(&b),
        Err(CodeObjectError::Metadata(meta_err(
            Some(0),
            Some(3),
            ".offset",
            MetadataProblem::OutOfRange
        )))
    );
    let text = format!("{}", check(&b).unwrap_err());
    assert_eq!(text, "AMDGPU metadata, kernel 0, argument 3, key `.offset`: value out of range");
}

#[test]
fn synthetic_metadata_problems() {
    let e = |kernel, arg, key, problem| Err(meta_err(kernel, arg, key, problem));
    let ok = metadata_doc(16, &[(0, 8, "global_buffer"), (8, 8, "hidden_none")], &[]);
    let m = Metadata::parse(&ok).unwrap();
    assert_eq!(m.kernels().count(), 1);
    assert_eq!(m.kernels().next().unwrap().args.explicit_count(), 1);
    let parse = |d: &[u8]| Metadata::parse(d).map(|_| ());
    // An argument ending past the segment; one whose end overflows.
    assert_eq!(
        parse(&metadata_doc(16, &[(12, 8, "by_value")], &[])),
        e(Some(0), Some(0), ".offset", MetadataProblem::OutOfRange)
    );
    assert_eq!(
        parse(&metadata_doc(16, &[(u32::MAX as u64, 8, "by_value")], &[])),
        e(Some(0), Some(0), ".offset", MetadataProblem::OutOfRange)
    );
    // A size above 32 bits.
    assert_eq!(
        parse(&metadata_doc(1 << 32, &[], &[])),
        e(Some(0), None, ".kernarg_segment_size", MetadataProblem::OutOfRange)
    );
    // The alignment must be a power of two.
    assert_eq!(
        parse(&metadata_doc(16, &[], &[(".kernarg_segment_align", 12)])),
        e(Some(0), None, ".kernarg_segment_align", MetadataProblem::OutOfRange)
    );
    // A flag given as 2.
    assert_eq!(
        parse(&metadata_doc(16, &[], &[(".uses_dynamic_stack", 2)])),
        e(Some(0), None, ".uses_dynamic_stack", MetadataProblem::OutOfRange)
    );
    // Not a map; kernels not an array; a kernel that is not a map; no kernels key.
    assert_eq!(parse(&Pack::default().array(0).0), e(None, None, "", MetadataProblem::WrongType));
    let doc = Pack::default().map(3).str("amdhsa.version").array(2).uint(1).uint(1);
    let doc = doc.kvs("amdhsa.target", "x").str("amdhsa.kernels").boolean(true);
    assert_eq!(parse(&doc.0), e(None, None, "amdhsa.kernels", MetadataProblem::WrongType));
    let doc = Pack::default().map(3).str("amdhsa.version").array(2).uint(1).uint(1);
    let doc = doc.kvs("amdhsa.target", "x").str("amdhsa.kernels").array(1).uint(5);
    assert_eq!(parse(&doc.0), e(Some(0), None, "", MetadataProblem::WrongType));
    let doc = Pack::default()
        .map(2)
        .str("amdhsa.version")
        .array(2)
        .uint(1)
        .uint(1)
        .kvs("amdhsa.target", "x");
    assert_eq!(parse(&doc.0), e(None, None, "amdhsa.kernels", MetadataProblem::MissingKey));
    // A version of three numbers.
    let doc = Pack::default().map(1).str("amdhsa.version").array(3).uint(1).uint(1).uint(1);
    assert_eq!(parse(&doc.0), e(None, None, "amdhsa.version", MetadataProblem::WrongType));
    // An argument without a kind, and one whose kind is a number.
    let mut doc = metadata_doc(16, &[(0, 8, "by_value")], &[]);
    let at = find(&doc, b".value_kind");
    doc[at + 10] = b'x';
    assert_eq!(parse(&doc), e(Some(0), Some(0), ".value_kind", MetadataProblem::MissingKey));
    let doc = Pack::default()
        .map(3)
        .str("amdhsa.version")
        .array(2)
        .uint(1)
        .uint(1)
        .kvs("amdhsa.target", "x");
    let doc = doc.str("amdhsa.kernels").array(1).map(11).kvs(".name", "k").kvs(".symbol", "k.kd");
    let doc = doc
        .kv(".kernarg_segment_size", 8)
        .kv(".kernarg_segment_align", 8)
        .kv(".group_segment_fixed_size", 0);
    let doc = doc
        .kv(".private_segment_fixed_size", 0)
        .kv(".wavefront_size", 64)
        .kv(".sgpr_count", 1)
        .kv(".vgpr_count", 1);
    let doc = doc
        .kv(".max_flat_workgroup_size", 64)
        .str(".args")
        .array(1)
        .map(3)
        .kv(".offset", 0)
        .kv(".size", 8)
        .kv(".value_kind", 1);
    assert_eq!(parse(&doc.0), e(Some(0), Some(0), ".value_kind", MetadataProblem::WrongType));
}

#[test]
fn load_into_problems() {
    let co = parse(object("test/gfx900.co").bytes).unwrap();
    let mut image = vec![0u8; co.image_size() as usize];
    assert_eq!(
        co.load_into(&mut image[1..], 0x10000),
        Err(CodeObjectError::ImageTooSmall { needed: co.image_size(), got: image.len() - 1 })
    );
    assert_eq!(
        co.load_into(&mut image, 0x10800),
        Err(CodeObjectError::MisalignedBase { base: 0x10800, align: 0x1000 })
    );
    assert_eq!(
        co.load_into(&mut image, u64::MAX - 0xfff),
        malformed(ElfPart::Relocations, ElfProblem::Overflow)
    );
    assert!(co.load_into(&mut image, 0x10000).is_ok());
    let e = CodeObjectError::MisalignedBase { base: 1, align: 2 };
    assert_eq!(e.kind(), ErrorKind::Misaligned);
}
