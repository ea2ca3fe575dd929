//! Tests over the committed code objects (`hsakmt-kernels`) and hand-corrupted copies of
//! them, plus synthetic metadata documents. Expected values come from LLVM's tools
//! (`expected.rs`), not from the parser.
#![expect(clippy::arithmetic_side_effects, reason = "tests compute offsets of known, small files")]

mod errors;
mod expected;
mod kernarg;
mod objects;

use std::string::String;
use std::vec::Vec;

use hsakmt_kernels::CodeObjectFile;

/// The committed object at `path` (under `kernels/objects/`).
fn object(path: &str) -> &'static CodeObjectFile {
    hsakmt_kernels::all()
        .iter()
        .find(|o| o.path == path)
        .unwrap_or_else(|| panic!("no object {path}"))
}

/// A mutable copy of the committed object at `path`.
fn copy(path: &str) -> Vec<u8> {
    object(path).bytes.to_vec()
}

fn rd16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}

fn rd32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn rd64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn wr16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

fn wr32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn wr64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// File offsets of the program headers (read straight from the ELF header).
fn phdrs(b: &[u8]) -> Vec<usize> {
    let (off, n) = (rd64(b, 32) as usize, rd16(b, 56) as usize);
    (0..n).map(|i| off + 56 * i).collect()
}

/// File offset of the first program header of type `p_type`.
fn phdr_of(b: &[u8], p_type: u32) -> usize {
    phdrs(b).into_iter().find(|&p| rd32(b, p) == p_type).expect("program header")
}

/// File offsets of the section headers.
fn shdrs(b: &[u8]) -> Vec<usize> {
    let (off, n) = (rd64(b, 40) as usize, rd16(b, 60) as usize);
    (0..n).map(|i| off + 64 * i).collect()
}

/// File offset of the first section header of type `sh_type`.
fn shdr_of(b: &[u8], sh_type: u32) -> usize {
    shdrs(b).into_iter().find(|&s| rd32(b, s + 4) == sh_type).expect("section header")
}

/// File offset of the `Elf64_Dyn` entry with `tag`.
fn dynamic_entry(b: &[u8], tag: u64) -> usize {
    let p = phdr_of(b, 2);
    let (off, size) = (rd64(b, p + 8) as usize, rd64(b, p + 32) as usize);
    (off..off + size).step_by(16).find(|&d| rd64(b, d) == tag).expect("dynamic tag")
}

/// The position of `needle` in `b` (the only one).
fn find(b: &[u8], needle: &[u8]) -> usize {
    let mut hits = (0..=b.len() - needle.len()).filter(|&i| &b[i..i + needle.len()] == needle);
    let first = hits.next().expect("needle present");
    assert!(hits.next().is_none(), "needle {:?} is not unique", String::from_utf8_lossy(needle));
    first
}

/// A minimal MessagePack writer for synthetic metadata.
#[derive(Default)]
struct Pack(Vec<u8>);

impl Pack {
    fn map(mut self, n: usize) -> Self {
        assert!(n < 16);
        self.0.push(0x80 | n as u8);
        self
    }
    fn array(mut self, n: usize) -> Self {
        assert!(n < 16);
        self.0.push(0x90 | n as u8);
        self
    }
    fn str(mut self, s: &str) -> Self {
        assert!(s.len() < 256);
        self.0.extend_from_slice(&[0xd9, s.len() as u8]);
        self.0.extend_from_slice(s.as_bytes());
        self
    }
    fn uint(mut self, v: u64) -> Self {
        self.0.push(0xcf);
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn boolean(mut self, v: bool) -> Self {
        self.0.push(if v { 0xc3 } else { 0xc2 });
        self
    }
    fn kv(self, k: &str, v: u64) -> Self {
        self.str(k).uint(v)
    }
    fn kvs(self, k: &str, v: &str) -> Self {
        self.str(k).str(v)
    }
}

/// A one-kernel metadata document: kernel `k` with `args` (offset, size, kind) and a kernarg
/// segment of `size` bytes; `extra` key/value pairs go into the kernel map.
fn metadata_doc(size: u64, args: &[(u64, u64, &str)], extra: &[(&str, u64)]) -> Vec<u8> {
    let mut p = Pack::default().map(3);
    p = p.str("amdhsa.version").array(2).uint(1).uint(2);
    p = p.kvs("amdhsa.target", "amdgcn-amd-amdhsa--gfx942");
    p = p.str("amdhsa.kernels").array(1).map(11 + extra.len());
    p = p.kvs(".name", "k").kvs(".symbol", "k.kd");
    p = p.kv(".kernarg_segment_size", size).kv(".kernarg_segment_align", 8);
    p = p.kv(".group_segment_fixed_size", 0).kv(".private_segment_fixed_size", 0);
    p = p.kv(".wavefront_size", 64).kv(".sgpr_count", 16).kv(".vgpr_count", 8);
    p = p.kv(".max_flat_workgroup_size", 1024);
    for (k, v) in extra {
        p = p.kv(k, *v);
    }
    p = p.str(".args").array(args.len());
    for (offset, size, kind) in args {
        p = p.map(3).kv(".offset", *offset).kv(".size", *size).kvs(".value_kind", kind);
    }
    p.0
}
