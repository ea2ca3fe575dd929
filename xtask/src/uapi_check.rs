//! `cargo xtask uapi-check`: proves `hsakmt_core::uapi` equal to the C headers.
//!
//! 1. Parses `uapi/kfd_ioctl.h` and `uapi/kfd_sysfs.h` with a small purpose-written parser
//!    ([`crate::c_header`]): structs with their member designators, enums, `#define`s.
//! 2. Generates a C program that includes the headers and prints `sizeof`/`_Alignof` of every
//!    struct, `offsetof`/`sizeof`/`_Alignof` of every member (anonymous-union members and
//!    anonymous-struct paths included), the value of every constant, enumerator and request code,
//!    and the values of the function-like macros ([`crate::c_program`]); compiles it with `cc`
//!    (or `$CC`)
//!    against a one-line `<drm/drm.h>` shim and runs it.
//! 3. Compares everything with the tables of `hsakmt_core::uapi`, both ways: a C item without a
//!    Rust counterpart and a Rust item without a C counterpart are mismatches too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use hsakmt_core::uapi::{
    CONSTANTS, Constant, ENUMS, FUNCTION_MACROS, FieldLayout, IOCTLS, IoctlInfo, LAYOUTS, MacroKind,
};

use crate::c_header::{self as cheader, Array, Header};
use crate::c_program::{self as cprog, COutput, MacroProbe};

/// The headers checked, in include order.
const HEADERS: [&str; 2] = ["kfd_ioctl.h", "kfd_sysfs.h"];

/// Prefix of the request-code macros.
const REQUEST_PREFIX: &str = "AMDKFD_IOC_";

/// Domain of the request-code constructor probes (`AMDKFD_IOR(nr, __u64)` …).
const REQUEST_NR_RANGE: (u64, u64) = (0, 255);

const USAGE: &str = "usage: cargo xtask uapi-check [--headers DIR] [--keep]
  --headers DIR  directory holding kfd_ioctl.h and kfd_sysfs.h (default: <workspace>/uapi)
  --keep         keep the generated C program and its build directory";

/// Runs the check with the subcommand's arguments.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut header_dir = workspace_root().join("uapi");
    let mut keep = false;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--headers" => {
                header_dir = PathBuf::from(args.next().ok_or("--headers needs a directory")?);
            }
            "--keep" => keep = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }

    let texts = HEADERS
        .iter()
        .map(|file| {
            let path = header_dir.join(file);
            std::fs::read_to_string(&path)
                .map(|text| (*file, text))
                .map_err(|e| format!("reading {}: {e}", path.display()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let headers = cheader::parse_all(&texts)?;
    if headers.iter().all(|h| h.structs.is_empty()) || headers.iter().any(|h| h.defines.is_empty())
    {
        return Err("the headers parsed to (almost) nothing; refusing a vacuous check".to_owned());
    }

    let mut report = Report::default();
    let probes = macro_probes(&headers, &mut report);
    let source = cprog::generate(&headers, &probes, "");

    let work_dir = std::env::temp_dir().join(format!("hsakmt-uapi-check-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work_dir);
    std::fs::create_dir_all(&work_dir)
        .map_err(|e| format!("creating {}: {e}", work_dir.display()))?;
    let c_output = cprog::compile_and_run(&source, &header_dir, &work_dir);
    if keep || c_output.is_err() {
        eprintln!("uapi-check: C program kept in {}", work_dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&work_dir);
    }
    let c_output = c_output?;
    if !c_output.compiler_messages.trim().is_empty() {
        eprintln!("uapi-check: C compiler diagnostics:\n{}", c_output.compiler_messages.trim_end());
    }

    check_structs(&headers, &c_output, &mut report);
    check_constants(&headers, &c_output, &mut report);
    check_enums(&headers, &mut report);
    check_macros(&headers, &c_output, &mut report);
    check_ioctls(&headers, &c_output, &mut report);

    for mismatch in &report.mismatches {
        println!("mismatch: {mismatch}");
    }
    if !report.reinterpreted.is_empty() {
        println!(
            "note: {} constant(s) are negative `int`s in C (e.g. `1 << 31`) and unsigned in \
             Rust, with the same bit pattern: {}",
            report.reinterpreted.len(),
            report.reinterpreted.join(", ")
        );
    }
    println!(
        "uapi-check: {} structs, {} fields, {} constants, {} request codes, {} enums, \
         {} function macros checked, {} mismatches",
        report.structs,
        report.fields,
        report.constants,
        report.requests,
        report.enums,
        report.macros,
        report.mismatches.len()
    );
    if report.mismatches.is_empty() {
        Ok(())
    } else {
        Err(format!("{} uapi mismatches", report.mismatches.len()))
    }
}

/// The workspace root (the parent of this crate's directory).
fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// Results of the comparison.
#[derive(Debug, Default)]
struct Report {
    mismatches: Vec<String>,
    /// Constants equal only modulo the Rust type's width (a negative C `int`).
    reinterpreted: Vec<String>,
    structs: usize,
    fields: usize,
    constants: usize,
    requests: usize,
    enums: usize,
    macros: usize,
}

impl Report {
    fn mismatch(&mut self, message: String) {
        self.mismatches.push(message);
    }
}

/// Reports names present on only one side.
fn compare_names<'a>(
    report: &mut Report,
    what: &str,
    c_names: impl IntoIterator<Item = &'a str>,
    rust_names: impl IntoIterator<Item = &'a str>,
) {
    let c: BTreeSet<&str> = c_names.into_iter().collect();
    let rust: BTreeSet<&str> = rust_names.into_iter().collect();
    for name in c.difference(&rust) {
        report.mismatch(format!("{what} `{name}` is in the C header but not in Rust"));
    }
    for name in rust.difference(&c) {
        report.mismatch(format!("{what} `{name}` is in Rust but not in the C header"));
    }
}

fn check_structs(headers: &[Header], c: &COutput, report: &mut Report) {
    let c_structs: Vec<_> = headers.iter().flat_map(|h| &h.structs).collect();
    compare_names(
        report,
        "struct",
        c_structs.iter().map(|s| s.name.as_str()),
        LAYOUTS.iter().map(|l| l.name),
    );
    for s in c_structs {
        report.structs += 1;
        let paths = s.field_paths();
        report.fields += paths.len();
        let Some(layout) = LAYOUTS.iter().find(|l| l.name == s.name) else { continue };
        match c.structs.get(&s.name) {
            Some(&(size, align)) => {
                compare_num(report, &s.name, "sizeof", size, layout.size);
                compare_num(report, &s.name, "_Alignof", align, layout.align);
            }
            None => report.mismatch(format!("struct {}: no output from the C program", s.name)),
        }
        compare_names(
            report,
            &format!("member of struct {}:", s.name),
            paths.iter().map(|p| p.path.as_str()),
            layout.fields.iter().map(|f| f.name),
        );
        for path in &paths {
            let Some(field) = layout.field(&path.path) else { continue };
            let what = format!("{}.{}", s.name, path.path);
            match c.fields.get(&(s.name.clone(), path.path.clone())) {
                Some(&(offset, size, align)) => {
                    compare_num(report, &what, "offsetof", offset, field.offset);
                    compare_num(report, &what, "sizeof", size, field.size);
                    compare_num(report, &what, "_Alignof", align, field.align);
                }
                None => report.mismatch(format!("{what}: no output from the C program")),
            }
            check_field_type(report, &what, path, field);
        }
        let declared: Vec<&str> = paths.iter().map(|p| p.path.as_str()).collect();
        let rust_order: Vec<&str> = layout.fields.iter().map(|f| f.name).collect();
        if declared.len() == rust_order.len() && declared != rust_order {
            report.mismatch(format!(
                "struct {}: members in a different order (C {declared:?}, Rust {rust_order:?})",
                s.name
            ));
        }
    }
}

fn compare_num(report: &mut Report, what: &str, property: &str, c: u64, rust: usize) {
    if u64::try_from(rust).ok() != Some(c) {
        report.mismatch(format!("{what}: {property} is {c} in C but {rust} in Rust"));
    }
}

/// Compares the member's C type with the Rust type written in the definition.
fn check_field_type(
    report: &mut Report,
    what: &str,
    path: &cheader::FieldPath,
    field: &FieldLayout,
) {
    let rust = field.rust_type.trim();
    let (rust_element, rust_is_array) = match rust.strip_prefix('[') {
        Some(inner) => (inner.split(';').next().unwrap_or_default().trim(), true),
        None => (rust, false),
    };
    let c_is_array = path.array != Array::No;
    if c_is_array != rust_is_array {
        report.mismatch(format!(
            "{what}: {} in C but `{rust}` in Rust",
            if c_is_array { "an array" } else { "not an array" }
        ));
    }
    if path.array == Array::Flexible && field.size != 0 {
        report.mismatch(format!("{what}: a flexible array member must be `[T; 0]` in Rust"));
    }
    // Members of anonymous aggregate type have a Rust-only type name; layout covers them.
    let Some(ty) = &path.ty else { return };
    if ty.pointer > 0 || path.bits.is_some() {
        report.mismatch(format!("{what}: pointers and bitfields are not expected in the uapi"));
        return;
    }
    match ty.base.rust_name() {
        Some(expected) if expected == rust_element => {}
        Some(expected) => report.mismatch(format!(
            "{what}: C type `{ty}` needs Rust `{expected}`, found `{rust_element}`"
        )),
        None => report.mismatch(format!("{what}: the checker does not know C type `{ty}`")),
    }
}

/// Whether a C value equals a Rust constant: exactly, or only as the same bit pattern in the
/// Rust type's width (`Some(false)`), or not at all (`None`).
fn value_matches(c: i128, rust: &Constant) -> Option<bool> {
    if c == rust.value {
        return Some(true);
    }
    let bits = rust.bits.min(127);
    let modulus = 1i128 << bits;
    let fits = c >= -(modulus >> 1) && c < modulus;
    (fits && c.rem_euclid(modulus) == rust.value.rem_euclid(modulus)).then_some(false)
}

fn rust_type_name(constant: &Constant) -> String {
    format!("{}{}", if constant.signed { 'i' } else { 'u' }, constant.bits)
}

fn check_constants(headers: &[Header], c: &COutput, report: &mut Report) {
    let c_names: Vec<&str> = headers
        .iter()
        .flat_map(|h| {
            let enumerators = h.enums.iter().flat_map(|e| e.members.iter().map(String::as_str));
            let defines = h.defines.iter().filter(|d| d.params.is_none()).map(|d| d.name.as_str());
            enumerators.chain(defines)
        })
        .collect();
    compare_names(report, "constant", c_names.iter().copied(), CONSTANTS.iter().map(|k| k.name));
    for name in c_names {
        if name.starts_with(REQUEST_PREFIX) {
            report.requests += 1;
        } else {
            report.constants += 1;
        }
        let Some(rust) = CONSTANTS.iter().find(|k| k.name == name) else { continue };
        let Some(&value) = c.constants.get(name) else {
            report.mismatch(format!("constant {name}: no output from the C program"));
            continue;
        };
        match value_matches(value, rust) {
            Some(true) => {}
            Some(false) => report.reinterpreted.push(name.to_owned()),
            None => report.mismatch(format!(
                "constant {name}: {value} ({value:#x}) in C but {} ({:#x}, {}) in Rust",
                rust.value,
                rust.value,
                rust_type_name(rust)
            )),
        }
    }
}

fn check_enums(headers: &[Header], report: &mut Report) {
    let c_enums: Vec<_> = headers.iter().flat_map(|h| &h.enums).collect();
    compare_names(
        report,
        "enum",
        c_enums.iter().map(|e| e.name.as_str()),
        ENUMS.iter().map(|e| e.name),
    );
    for e in c_enums {
        report.enums += 1;
        let Some(rust) = ENUMS.iter().find(|r| r.name == e.name) else { continue };
        if e.members.iter().map(String::as_str).ne(rust.members.iter().copied()) {
            report.mismatch(format!(
                "enum {}: enumerators differ (C {:?}, Rust {:?})",
                e.name, e.members, rust.members
            ));
        }
    }
}

/// The C probes of the function-like macros both sides have; reports arity problems.
fn macro_probes(headers: &[Header], report: &mut Report) -> Vec<MacroProbe> {
    let mut probes = Vec::new();
    for define in headers.iter().flat_map(|h| &h.defines) {
        let Some(params) = &define.params else { continue };
        let Some(rust) = FUNCTION_MACROS.iter().find(|m| m.name == define.name) else { continue };
        let name = define.name.clone();
        match rust.kind {
            MacroKind::Int { first, last, .. } if params.len() == 1 => {
                probes.push(MacroProbe::Int { name, extra: String::new(), first, last });
            }
            MacroKind::Request { .. } if params.len() == 1 || params.len() == 2 => {
                let extra = if params.len() == 2 { ", __u64" } else { "" }.to_owned();
                let (first, last) = REQUEST_NR_RANGE;
                probes.push(MacroProbe::Int { name, extra, first, last });
            }
            MacroKind::Format(_) => probes.push(MacroProbe::Format { name, args: params.len() }),
            _ => report.mismatch(format!(
                "macro {}: {} parameter(s) in C do not fit its Rust kind {:?}",
                define.name,
                params.len(),
                rust.kind
            )),
        }
    }
    probes
}

fn check_macros(headers: &[Header], c: &COutput, report: &mut Report) {
    let c_names: Vec<&str> = headers
        .iter()
        .flat_map(|h| &h.defines)
        .filter(|d| d.params.is_some())
        .map(|d| d.name.as_str())
        .collect();
    compare_names(
        report,
        "function-like macro",
        c_names.iter().copied(),
        FUNCTION_MACROS.iter().map(|m| m.name),
    );
    report.macros = c_names.len();
    for m in FUNCTION_MACROS.iter().filter(|m| c_names.contains(&m.name)) {
        match m.kind {
            MacroKind::Int { eval, first, last } => {
                compare_macro_values(report, m.name, c, first, last, eval);
            }
            MacroKind::Request { eval } => {
                let (first, last) = REQUEST_NR_RANGE;
                compare_macro_values(report, m.name, c, first, last, |nr| {
                    u64::from(eval(u32::try_from(nr).unwrap_or(u32::MAX)))
                });
            }
            MacroKind::Format(format) => match c.formats.get(m.name) {
                Some(c_format) if c_format == format => {}
                Some(c_format) => report.mismatch(format!(
                    "macro {}: format {c_format:?} in C but {format:?} in Rust",
                    m.name
                )),
                None => report.mismatch(format!("macro {}: no output from the C program", m.name)),
            },
        }
    }
}

fn compare_macro_values(
    report: &mut Report,
    name: &str,
    c: &COutput,
    first: u64,
    last: u64,
    eval: impl Fn(u64) -> u64,
) {
    for arg in first..=last {
        match c.macro_values.get(&(name.to_owned(), arg)) {
            Some(&value) if value == eval(arg) => {}
            Some(&value) => {
                report.mismatch(format!(
                    "macro {name}({arg}): {value:#x} in C but {:#x} in Rust",
                    eval(arg)
                ));
                return;
            }
            None => {
                report.mismatch(format!("macro {name}({arg}): no output from the C program"));
                return;
            }
        }
    }
}

/// A request-code definition as the header spells it: `AMDKFD_IOWR(0x02, struct x)`.
#[derive(Debug, PartialEq, Eq)]
struct RequestDef {
    constructor: String,
    nr: u32,
    arg: Option<String>,
}

fn parse_request_def(body: &str) -> Option<RequestDef> {
    let (constructor, rest) = body.split_once('(')?;
    let inner = rest.trim().strip_suffix(')')?;
    let mut parts = inner.split(',').map(str::trim);
    let nr_text = parts.next()?;
    let nr = match nr_text.strip_prefix("0x").or_else(|| nr_text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok()?,
        None => nr_text.parse().ok()?,
    };
    let arg = match parts.next() {
        Some(ty) => Some(ty.strip_prefix("struct")?.trim().to_owned()),
        None => None,
    };
    if parts.next().is_some() {
        return None;
    }
    Some(RequestDef { constructor: constructor.trim().to_owned(), nr, arg })
}

fn check_ioctls(headers: &[Header], c: &COutput, report: &mut Report) {
    let c_requests: BTreeMap<&str, &str> = headers
        .iter()
        .flat_map(|h| &h.defines)
        .filter(|d| d.params.is_none() && d.name.starts_with(REQUEST_PREFIX))
        .map(|d| (d.name.as_str(), d.body.as_str()))
        .collect();
    compare_names(
        report,
        "ioctl (IOCTLS table)",
        c_requests.keys().copied(),
        IOCTLS.iter().map(|i| i.name),
    );
    for info in &IOCTLS {
        let Some(body) = c_requests.get(info.name) else { continue };
        let Some(def) = parse_request_def(body) else {
            report.mismatch(format!("{}: cannot parse its definition `{body}`", info.name));
            continue;
        };
        check_ioctl_info(report, info, &def, c);
    }
}

fn check_ioctl_info(report: &mut Report, info: &IoctlInfo, def: &RequestDef, c: &COutput) {
    let name = info.name;
    if def.constructor != info.dir.c_macro() {
        report.mismatch(format!(
            "{name}: defined with {} in C but IOCTLS says {} ({:?})",
            def.constructor,
            info.dir.c_macro(),
            info.dir
        ));
    }
    if def.nr != info.nr {
        report.mismatch(format!("{name}: nr {:#x} in C but {:#x} in IOCTLS", def.nr, info.nr));
    }
    if def.arg.as_deref() != info.arg_type {
        report.mismatch(format!(
            "{name}: argument {:?} in C but {:?} in IOCTLS",
            def.arg, info.arg_type
        ));
    }
    if c.constants.get(name) != Some(&i128::from(info.request)) {
        report.mismatch(format!(
            "{name}: request {:?} in C but {:#x} in IOCTLS",
            c.constants.get(name).map(|v| format!("{v:#x}")),
            info.request
        ));
    }
    let c_size = def.arg.as_ref().map_or(Some(0), |arg| c.structs.get(arg).map(|s| s.0));
    if c_size != u64::try_from(info.arg_size).ok() {
        report.mismatch(format!(
            "{name}: argument size {c_size:?} in C but {} in IOCTLS",
            info.arg_size
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn constant(value: i128, bits: u32, signed: bool) -> Constant {
        Constant { name: "X", value, bits, signed }
    }

    #[test]
    fn values_match_exactly_or_as_bit_patterns() {
        assert_eq!(value_matches(5, &constant(5, 32, false)), Some(true));
        assert_eq!(value_matches(-2_147_483_648, &constant(0x8000_0000, 32, false)), Some(false));
        assert_eq!(value_matches(-1, &constant(0xffff_ffff, 32, false)), Some(false));
        assert_eq!(value_matches(0x1_0000_0000, &constant(0, 32, false)), None);
        assert_eq!(value_matches(-1, &constant(1, 32, false)), None);
        assert_eq!(
            value_matches(0xffff_ffff_ffff_f000, &constant(0xffff_ffff_ffff_f000, 64, false)),
            Some(true)
        );
    }

    #[test]
    fn parses_request_definitions() {
        assert_eq!(
            parse_request_def("AMDKFD_IOWR(0x02, struct kfd_ioctl_create_queue_args)"),
            Some(RequestDef {
                constructor: "AMDKFD_IOWR".to_owned(),
                nr: 2,
                arg: Some("kfd_ioctl_create_queue_args".to_owned()),
            })
        );
        assert_eq!(
            parse_request_def("AMDKFD_IO(0x27)"),
            Some(RequestDef { constructor: "AMDKFD_IO".to_owned(), nr: 0x27, arg: None })
        );
        assert_eq!(parse_request_def("AMDKFD_IOWR(0x14,\t\t\tstruct x)").map(|d| d.nr), Some(0x14));
        assert_eq!(parse_request_def("0x01"), None);
        assert_eq!(parse_request_def("AMDKFD_IOR(0x01, __u32)"), None);
    }
}
