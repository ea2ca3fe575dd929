//! The type half of `capi-check`: struct and union layouts, bitfields, and function
//! signatures, with C types translated to the Rust types they must be.

use std::collections::BTreeMap;

use hsakmt_capi::layout::{Description, TypeLayout};

use super::{Report, compare_names, compare_num};
use crate::c_header::{Array, CType, FieldPath, Header, TypeRef, Typedef};
use crate::c_program::COutput;

/// What the C side knows about type names: typedefs, aggregates and enums.
pub(super) struct CTypes<'a> {
    typedefs: BTreeMap<&'a str, &'a Typedef>,
    aggregates: BTreeMap<&'a str, ()>,
    enums: BTreeMap<&'a str, (u64, bool)>,
    constants: &'a BTreeMap<String, i128>,
}

/// The Rust primitive a C scalar type name stands for.
fn primitive(name: &str) -> Option<&'static str> {
    Some(match name {
        "uint8_t" | "unsigned char" => "u8",
        "int8_t" | "char" | "signed char" => "i8",
        "uint16_t" | "unsigned short" => "u16",
        "int16_t" | "short" | "signed short" => "i16",
        "uint32_t" | "unsigned int" | "unsigned" => "u32",
        "int32_t" | "int" | "signed int" => "i32",
        "uint64_t" | "unsigned long" | "unsigned long long" => "u64",
        "int64_t" | "long" | "long long" => "i64",
        "bool" | "_Bool" => "bool",
        "void" => "c_void",
        _ => return None,
    })
}

impl<'a> CTypes<'a> {
    pub(super) fn new(headers: &'a [Header], c: &'a COutput) -> Self {
        let mut typedefs = BTreeMap::new();
        let mut aggregates = BTreeMap::new();
        let mut enums = BTreeMap::new();
        for h in headers {
            for t in &h.typedefs {
                typedefs.insert(t.name.as_str(), t);
            }
            for s in &h.structs {
                aggregates.insert(s.name.as_str(), ());
            }
            for e in &h.enums {
                if let Some(&v) = c.enums.get(&e.name) {
                    enums.insert(e.name.as_str(), v);
                }
            }
        }
        Self { typedefs, aggregates, enums, constants: &c.constants }
    }

    /// The Rust spelling (paths stripped) of a C type: `*mut u32`, `HsaEvent`, `[u32; 8]`.
    pub(super) fn rust(&self, t: &TypeRef) -> Option<String> {
        let (mut base, array) = match &t.base {
            CType::Struct(tag) => (tag.clone(), None),
            CType::Named(n) => self.named(n)?,
        };
        if let Some(len) = array {
            base = format!("[{base}; {len}]");
        }
        // `const` binds to the base type: the innermost pointer is `*const`.
        for level in 0..t.pointer {
            let konst = level == 0 && t.is_const;
            base = format!("{} {base}", if konst { "*const" } else { "*mut" });
        }
        Some(base)
    }

    /// A named type: its Rust spelling (a pointer typedef's levels included) and, for an array
    /// typedef, the array length.
    fn named(&self, n: &str) -> Option<(String, Option<String>)> {
        if self.aggregates.contains_key(n) {
            return Some((n.to_owned(), None));
        }
        if let Some(&(size, signed)) = self.enums.get(n) {
            return Some((format!("{}{}", if signed { 'i' } else { 'u' }, size * 8), None));
        }
        if let Some(p) = primitive(n) {
            return Some((p.to_owned(), None));
        }
        let t = self.typedefs.get(n)?;
        let inner = self.rust(&t.ty)?;
        let len = match &t.array {
            Array::No => None,
            Array::Fixed(expr) => Some(self.length(expr)?),
            Array::Flexible => return None,
        };
        Some((inner, len))
    }

    /// An array length: a literal or a constant of the header.
    fn length(&self, expr: &str) -> Option<String> {
        match expr.parse::<u64>() {
            Ok(n) => Some(n.to_string()),
            Err(_) => self.constants.get(expr).map(ToString::to_string),
        }
    }

    /// The Rust type a typedef must alias.
    pub(super) fn typedef_target(&self, t: &Typedef) -> Option<String> {
        self.named(&t.name).map(|(base, len)| match len {
            Some(n) => format!("[{base}; {n}]"),
            None => base,
        })
    }
}

/// A Rust type name without paths: `*mut hsakmt_capi::types::HsaEvent` → `*mut HsaEvent`.
pub(super) fn rust_name(type_name: &str) -> String {
    let mut out = String::with_capacity(type_name.len());
    let mut word = String::new();
    let mut chars = type_name.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            word.clear();
        } else {
            out.push_str(&word);
            word.clear();
            out.push(c);
        }
    }
    out.push_str(&word);
    out
}

/// The element of an array type name (`[u16; 64]` → `u16`), or the name itself.
fn element(rust: &str) -> &str {
    match rust.strip_prefix('[') {
        Some(inner) => inner.rsplit_once(';').map_or(inner, |(e, _)| e).trim(),
        None => rust,
    }
}

pub(super) fn check_types(
    headers: &[Header],
    c: &COutput,
    rust: &Description,
    ctypes: &CTypes<'_>,
    report: &mut Report,
) {
    let c_types: Vec<_> = headers.iter().flat_map(|h| &h.structs).collect();
    compare_names(
        report,
        "struct/union",
        c_types.iter().map(|s| s.name.as_str()),
        rust.types.iter().map(|t| t.name),
    );
    for s in c_types {
        report.count("structs and unions", 1);
        let Some(r) = rust.types.iter().find(|t| t.name == s.name) else { continue };
        match c.structs.get(&s.name) {
            Some(&(size, align)) => {
                compare_num(report, &s.name, "sizeof", size, r.size as u64);
                compare_num(report, &s.name, "_Alignof", align, r.align as u64);
            }
            None => report.mismatch(format!("{}: no output from the C program", s.name)),
        }
        let paths = s.field_paths();
        let (bits, fields): (Vec<&FieldPath>, Vec<&FieldPath>) =
            paths.iter().partition(|p| p.bits.is_some());
        check_fields(&s.name, &fields, c, r, ctypes, report);
        check_bits(&s.name, &bits, c, r, report);
    }
}

fn check_fields(
    name: &str,
    fields: &[&FieldPath],
    c: &COutput,
    r: &TypeLayout,
    ctypes: &CTypes<'_>,
    report: &mut Report,
) {
    compare_names(
        report,
        &format!("member of {name}:"),
        fields.iter().map(|p| p.path.as_str()),
        r.fields.iter().map(|f| f.path),
    );
    report.count("fields", fields.len());
    for p in fields {
        let Some(f) = r.fields.iter().find(|f| f.path == p.path) else { continue };
        let what = format!("{name}.{}", p.path);
        match c.fields.get(&(name.to_owned(), p.path.clone())) {
            Some(&(offset, size, align)) => {
                compare_num(report, &what, "offsetof", offset, f.offset as u64);
                compare_num(report, &what, "sizeof", size, f.size as u64);
                compare_num(report, &what, "_Alignof", align, f.align as u64);
            }
            None => report.mismatch(format!("{what}: no output from the C program")),
        }
        // Members of anonymous aggregate type have a Rust-only type name; layout covers them.
        let Some(ty) = &p.ty else { continue };
        let found = rust_name(f.rust_type);
        let found = if p.array == Array::No { found.as_str() } else { element(&found) };
        match ctypes.rust(ty) {
            Some(expected) if expected == found => {}
            Some(expected) => report.mismatch(format!(
                "{what}: C type `{ty}` needs Rust `{expected}`, found `{found}`"
            )),
            None => report.mismatch(format!("{what}: the checker does not know C type `{ty}`")),
        }
    }
}

fn check_bits(name: &str, bits: &[&FieldPath], c: &COutput, r: &TypeLayout, report: &mut Report) {
    compare_names(
        report,
        &format!("bitfield of {name}:"),
        bits.iter().map(|p| p.path.as_str()),
        r.bits.iter().map(|b| b.path),
    );
    report.count("bitfields", bits.len());
    for p in bits {
        let Some(b) = r.bits.iter().find(|b| b.path == p.path) else { continue };
        let what = format!("{name}.{}", p.path);
        match c.bits.get(&(name.to_owned(), p.path.clone())) {
            Some(&(lo, width)) => {
                compare_num(report, &what, "lowest bit", lo, u64::from(b.shift));
                compare_num(report, &what, "width", width, u64::from(b.width));
                if p.bits != Some(b.width) {
                    report.mismatch(format!("{what}: declared width {:?} in C", p.bits));
                }
            }
            None => report.mismatch(format!("{what}: no output from the C program")),
        }
    }
}

pub(super) fn check_functions(
    headers: &[Header],
    rust: &Description,
    ctypes: &CTypes<'_>,
    report: &mut Report,
) {
    let protos: Vec<_> = headers.iter().flat_map(|h| &h.functions).collect();
    compare_names(
        report,
        "function",
        protos.iter().map(|f| f.name.as_str()),
        rust.functions.iter().map(|f| f.name),
    );
    report.count("functions", protos.len());
    for p in protos {
        let Some(r) = rust.functions.iter().find(|f| f.name == p.name) else { continue };
        let expected: Vec<Option<String>> = p.params.iter().map(|t| ctypes.rust(t)).collect();
        let found: Vec<String> = r.params.iter().map(|t| rust_name(t)).collect();
        if expected.len() != found.len() {
            report.mismatch(format!(
                "{}: {} parameters in C, {} in Rust",
                p.name,
                expected.len(),
                found.len()
            ));
            continue;
        }
        for (i, (e, f)) in expected.iter().zip(&found).enumerate() {
            if e.as_deref() != Some(f.as_str()) {
                report.mismatch(format!(
                    "{}: parameter {i} is `{}` in C (Rust `{}`), `{f}` in Rust",
                    p.name,
                    p.params.get(i).map(ToString::to_string).unwrap_or_default(),
                    e.clone().unwrap_or_else(|| "?".to_owned())
                ));
            }
        }
        let ret = ctypes.rust(&p.ret);
        if ret.as_deref() != Some(rust_name(r.ret).as_str()) {
            report.mismatch(format!("{}: return type differs", p.name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_paths() {
        assert_eq!(rust_name("*mut hsakmt_capi::types::event::HsaEvent"), "*mut HsaEvent");
        assert_eq!(rust_name("*mut *mut core::ffi::c_void"), "*mut *mut c_void");
        assert_eq!(rust_name("[u32; 8]"), "[u32; 8]");
        assert_eq!(element("[u16; 64]"), "u16");
        assert_eq!(element("u32"), "u32");
    }
}
