//! Fuzzes the AMDGPU code-object parser ([`CodeObject::parse`]), the metadata parser
//! ([`Metadata::parse`]) and the MessagePack reader on the same bytes, and walks everything a
//! loader would: segments, relocations, the loaded image, every kernel with its descriptor
//! and arguments, and a kernarg layout with a value of the right class for each explicit
//! argument. Nothing may panic; what `parse` accepted must load (at address 0) without error,
//! and every resolved kernel's code entry must lie in an executable segment.
#![no_main]

use std::fmt::Write as _;

use hsakmt_core::code_object::kernarg::{ArgClass, ArgValue, Dispatch, KernargBuilder, arg_class};
use hsakmt_core::code_object::msgpack::{self, Value};
use hsakmt_core::code_object::{AgentTarget, CodeObject, Metadata};
use hsakmt_core::topology::GfxVersion;
use libfuzzer_sys::fuzz_target;

/// Largest image the target builds.
const MAX_IMAGE: u64 = 16 << 20;

/// Visits every value of a MessagePack document (arrays and maps recursively).
fn walk(v: Value<'_>, out: &mut String) {
    let _ = write!(out, "{v:?}");
    match v {
        Value::Array(seq) => seq.iter().flatten().for_each(|e| walk(e, out)),
        Value::Map(map) => map.iter().flatten().for_each(|(k, e)| {
            walk(k, out);
            walk(e, out);
        }),
        _ => {}
    }
    out.clear();
}

fn metadata(m: &Metadata<'_>, out: &mut String) {
    for k in m.kernels() {
        let _ = write!(out, "{k:?}");
        for a in k.args.iter() {
            let _ = write!(out, "{a:?}");
        }
        assert!(k.args.explicit_count() <= k.args.len());
        out.clear();
    }
}

fuzz_target!(|data: &[u8]| {
    let mut out = String::new();
    if let Ok(v) = msgpack::read(data) {
        walk(v, &mut out);
    }
    match Metadata::parse(data) {
        Ok(m) => metadata(&m, &mut out),
        Err(e) => {
            let _ = write!(out, "{e}");
        }
    }
    let co = match CodeObject::parse(data) {
        Ok(co) => co,
        Err(e) => {
            let _ = write!(out, "{e}");
            return;
        }
    };
    metadata(co.metadata(), &mut out);
    for s in co.segments() {
        assert!(s.vaddr + s.mem_size <= co.image_size());
        assert!(s.file_bytes.len() as u64 <= s.mem_size);
    }
    for r in co.relocations() {
        assert!(r.offset + 8 <= co.image_size());
    }
    if co.image_size() <= MAX_IMAGE {
        let mut image = vec![0u8; co.image_size() as usize];
        co.load_into(&mut image, 0).expect("a parsed object loads");
    }
    if let Some(gfx) = co.target().processor.gfx() {
        assert!(co.check_target(&AgentTarget::new(gfx)).is_ok());
    }
    if let Err(e) = co.check_target(&AgentTarget::new(GfxVersion::new(9, 4, 2))) {
        let _ = write!(out, "{e}");
    }
    let _ = co.kernel("nope");
    for k in co.kernels() {
        let k = match k {
            Ok(k) => k,
            Err(e) => {
                let _ = write!(out, "{e}");
                continue;
            }
        };
        assert!(co.segments().any(|s| s.flags.execute
            && (s.vaddr..s.vaddr + s.mem_size).contains(&k.entry_offset)));
        let by_name = co.kernel(k.name());
        let _ = write!(out, "{:?} {by_name:?}", k.descriptor);
        // Lay the arguments out: a value of the right class and size for each.
        let size = k.metadata.kernarg_segment_size as usize;
        if size > 1 << 20 {
            continue;
        }
        let mut buf = vec![0u8; size];
        let Ok(mut b) = KernargBuilder::new(&k.metadata, &mut buf) else { continue };
        let bytes = [0x5au8; 64];
        for (i, a) in (0u32..).zip(k.metadata.args.explicit()) {
            let value = match (arg_class(&a), a.size) {
                (ArgClass::Pointer, _) => ArgValue::Pointer(0x1000),
                (ArgClass::Float, 4) => ArgValue::F32(1.5),
                (ArgClass::Float, 8) => ArgValue::F64(2.5),
                (ArgClass::Integer, 4) => ArgValue::U32(7),
                (ArgClass::Integer, 8) => ArgValue::U64(7),
                (_, n) if n as usize <= bytes.len() => ArgValue::Bytes(&bytes[..n as usize]),
                _ => continue,
            };
            if let Err(e) = b.set(i, value) {
                let _ = write!(out, "{e}");
            }
        }
        let wg = k.metadata.reqd_workgroup_size.map_or([64, 1, 1], |r| r.map(|x| x.min(1024) as u16));
        let d = Dispatch::new(3, wg, [1000, 3, 2]);
        match b.finish(&d) {
            Ok(layout) => assert!(layout.align >= 16 && layout.size as usize == size),
            Err(e) => {
                let _ = write!(out, "{e}");
            }
        }
        out.clear();
    }
});
