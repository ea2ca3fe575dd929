//! `cargo xtask capi-check`: proves the C library's Rust definitions equal to the pinned C
//! headers (`capi/include/hsakmt/`), as `uapi-check` does for the kernel header.
//!
//! 1. Parses `hsakmttypes.h`, `hsakmt.h` and `hsakmt_rs.h` ([`crate::c_header`]).
//! 2. Generates a program that prints the size and alignment of every struct, union and
//!    typedef, the offset, size and alignment of every member, the bit position and width of
//!    every bitfield, the size and signedness of every enum, every enumerator and constant, the
//!    bytes of every constant object and the values of the function-like macros
//!    ([`crate::c_program`]); compiles it with `cc` and runs it.
//! 3. Compares all of it with `hsakmt_capi::layout::describe()`, both ways (a C item without a
//!    Rust counterpart and a Rust item without a C counterpart are mismatches), and every
//!    function prototype with the signature of the exported Rust function.
//! 4. Checks the version scripts (`capi/link/*.map`) against the headers and upstream's
//!    `libhsakmt.ver`, and libdrm's `struct amdgpu_gpu_info` / `amdgpu_bo_import_result`
//!    against `<libdrm/amdgpu.h>` when it is installed.

mod types;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use hsakmt_capi::layout::{Description, describe};

use crate::c_header::{self, Header};
use crate::c_program::{self, COutput, MacroProbe};
use types::CTypes;

/// The checked headers, in include order.
const HEADERS: [&str; 3] = ["hsakmttypes.h", "hsakmt.h", "hsakmt_rs.h"];

/// Where the headers are.
fn include_dir() -> PathBuf {
    crate::workspace_root().join("capi").join("include").join("hsakmt")
}

/// Results of the comparison.
#[derive(Debug, Default)]
pub(crate) struct Report {
    mismatches: Vec<String>,
    counts: BTreeMap<&'static str, usize>,
}

impl Report {
    fn mismatch(&mut self, message: String) {
        self.mismatches.push(message);
    }

    fn count(&mut self, what: &'static str, n: usize) {
        *self.counts.entry(what).or_default() += n;
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

fn compare_num(report: &mut Report, what: &str, property: &str, c: u64, rust: u64) {
    if c != rust {
        report.mismatch(format!("{what}: {property} is {c} in C but {rust} in Rust"));
    }
}

/// Runs the check.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let keep = match args {
        [] => false,
        [k] if k == "--keep" => true,
        _ => return Err("usage: cargo xtask capi-check [--keep]".to_owned()),
    };
    let dir = include_dir();
    let texts = HEADERS
        .iter()
        .map(|file| {
            let path = dir.join(file);
            std::fs::read_to_string(&path)
                .map(|text| (*file, text))
                .map_err(|e| format!("reading {}: {e}", path.display()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let headers = c_header::parse_all(&texts)?;
    if headers.iter().map(|h| h.structs.len() + h.functions.len()).sum::<usize>() < 100 {
        return Err("the headers parsed to (almost) nothing; refusing a vacuous check".to_owned());
    }
    let rust = describe();
    let probes = macro_probes(&headers, &rust);
    // `hsakmt.h` names the kernel's debugger struct without declaring it; programs include
    // the kernel header first.
    let prelude = "struct kfd_ioctl_dbg_trap_args;\n";
    let source = c_program::generate(&headers, &probes, prelude);
    let c = run_program("hsakmt-capi-check", &source, &dir, keep)?;

    let mut report = Report::default();
    let ctypes = CTypes::new(&headers, &c);
    types::check_types(&headers, &c, &rust, &ctypes, &mut report);
    check_enums(&headers, &c, &rust, &mut report);
    check_scalars(&headers, &c, &rust, &ctypes, &mut report);
    check_constants(&headers, &c, &rust, &mut report);
    check_objects(&headers, &c, &rust, &mut report);
    check_macros(&headers, &c, &rust, &mut report);
    types::check_functions(&headers, &rust, &ctypes, &mut report);
    check_version_scripts(&headers, &mut report)?;
    let libdrm = check_libdrm(keep, &mut report)?;

    for m in &report.mismatches {
        println!("mismatch: {m}");
    }
    let counts: Vec<String> = report.counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    println!(
        "capi-check: {}{}, {} mismatches",
        counts.join(", "),
        if libdrm { "" } else { " (libdrm headers not installed: amdgpu_gpu_info unchecked)" },
        report.mismatches.len()
    );
    if report.mismatches.is_empty() {
        Ok(())
    } else {
        Err(format!("{} C ABI mismatches", report.mismatches.len()))
    }
}

/// Compiles and runs `source` against `dir` in a scratch directory.
fn run_program(name: &str, source: &str, dir: &Path, keep: bool) -> Result<COutput, String> {
    let work = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| format!("creating {}: {e}", work.display()))?;
    let out = c_program::compile_and_run(source, dir, &work);
    if keep || out.is_err() {
        eprintln!("capi-check: C program kept in {}", work.display());
    } else {
        let _ = std::fs::remove_dir_all(&work);
    }
    let out = out?;
    if !out.compiler_messages.trim().is_empty() {
        return Err(format!("C compiler diagnostics:\n{}", out.compiler_messages.trim_end()));
    }
    Ok(out)
}

/// Macros that declare objects (`HSA_DEFINE_UUID(name, ...);`) rather than compute values.
fn declarers(headers: &[Header]) -> BTreeSet<&str> {
    headers.iter().flat_map(|h| &h.objects).map(|o| o.macro_name.as_str()).collect()
}

fn macro_probes(headers: &[Header], rust: &Description) -> Vec<MacroProbe> {
    let declare = declarers(headers);
    headers
        .iter()
        .flat_map(|h| &h.defines)
        .filter(|d| d.params.is_some() && !declare.contains(d.name.as_str()))
        .filter_map(|d| rust.macros.iter().find(|m| m.name == d.name))
        .map(|m| MacroProbe::Int {
            name: m.name.to_owned(),
            extra: String::new(),
            first: m.first,
            last: m.last,
        })
        .collect()
}

fn check_enums(headers: &[Header], c: &COutput, rust: &Description, report: &mut Report) {
    let c_enums: Vec<_> = headers.iter().flat_map(|h| &h.enums).collect();
    compare_names(
        report,
        "enum",
        c_enums.iter().map(|e| e.name.as_str()),
        rust.enums.iter().map(|e| e.name),
    );
    for e in c_enums {
        report.count("enums", 1);
        report.count("enumerators", e.members.len());
        let Some(r) = rust.enums.iter().find(|r| r.name == e.name) else { continue };
        match c.enums.get(&e.name) {
            Some(&(size, signed)) => {
                compare_num(report, &e.name, "sizeof", size, r.size as u64);
                if signed != r.signed {
                    report.mismatch(format!(
                        "enum {}: {} in C, {} in Rust",
                        e.name,
                        if signed { "signed" } else { "unsigned" },
                        if r.signed { "signed" } else { "unsigned" }
                    ));
                }
            }
            None => report.mismatch(format!("enum {}: no output from the C program", e.name)),
        }
        let rust_members: Vec<&str> = r.members.iter().map(|(n, _)| *n).collect();
        if e.members.iter().map(String::as_str).ne(rust_members.iter().copied()) {
            report.mismatch(format!(
                "enum {}: enumerators differ (C {:?}, Rust {rust_members:?})",
                e.name, e.members
            ));
        }
        for (name, value) in &r.members {
            match c.constants.get(*name) {
                Some(v) if v == value => {}
                Some(v) => report.mismatch(format!("{name}: {v} in C but {value} in Rust")),
                None => report.mismatch(format!("{name}: no output from the C program")),
            }
        }
    }
}

fn check_scalars(
    headers: &[Header],
    c: &COutput,
    rust: &Description,
    ctypes: &CTypes<'_>,
    report: &mut Report,
) {
    let typedefs: Vec<_> = headers.iter().flat_map(|h| &h.typedefs).collect();
    compare_names(
        report,
        "typedef",
        typedefs.iter().map(|t| t.name.as_str()),
        rust.scalars.iter().map(|s| s.name),
    );
    for t in typedefs {
        report.count("typedefs", 1);
        let Some(r) = rust.scalars.iter().find(|s| s.name == t.name) else { continue };
        match c.typedefs.get(&t.name) {
            Some(&(size, align)) => {
                compare_num(report, &t.name, "sizeof", size, r.size as u64);
                compare_num(report, &t.name, "_Alignof", align, r.align as u64);
            }
            None => report.mismatch(format!("typedef {}: no output from the C program", t.name)),
        }
        let expected = ctypes.typedef_target(t);
        let found = types::rust_name(r.rust_type);
        if expected.as_deref() != Some(found.as_str()) {
            report.mismatch(format!(
                "typedef {}: C type needs Rust `{}`, found `{found}`",
                t.name,
                expected.unwrap_or_else(|| "?".to_owned())
            ));
        }
    }
}

fn check_constants(headers: &[Header], c: &COutput, rust: &Description, report: &mut Report) {
    let names: Vec<&str> = headers
        .iter()
        .flat_map(|h| &h.defines)
        .filter(|d| d.params.is_none())
        .map(|d| d.name.as_str())
        .collect();
    compare_names(report, "constant", names.iter().copied(), rust.constants.iter().map(|k| k.name));
    report.count("constants", names.len());
    for k in &rust.constants {
        match c.constants.get(k.name) {
            Some(v) if *v == k.value => {}
            Some(v) => report.mismatch(format!("{}: {v} in C but {} in Rust", k.name, k.value)),
            None => report.mismatch(format!("{}: no output from the C program", k.name)),
        }
    }
}

fn check_objects(headers: &[Header], c: &COutput, rust: &Description, report: &mut Report) {
    let names: Vec<&str> =
        headers.iter().flat_map(|h| &h.objects).map(|o| o.name.as_str()).collect();
    compare_names(report, "object", names.iter().copied(), rust.objects.iter().map(|o| o.name));
    report.count("objects", names.len());
    for o in &rust.objects {
        match c.objects.get(o.name) {
            Some(bytes) if *bytes == o.bytes => {}
            Some(bytes) => {
                report.mismatch(format!(
                    "{}: bytes {bytes:02x?} in C, {:02x?} in Rust",
                    o.name, o.bytes
                ));
            }
            None => report.mismatch(format!("{}: no output from the C program", o.name)),
        }
    }
}

fn check_macros(headers: &[Header], c: &COutput, rust: &Description, report: &mut Report) {
    let declare = declarers(headers);
    let names: Vec<&str> = headers
        .iter()
        .flat_map(|h| &h.defines)
        .filter(|d| d.params.is_some() && !declare.contains(d.name.as_str()))
        .map(|d| d.name.as_str())
        .collect();
    compare_names(
        report,
        "function-like macro",
        names.iter().copied(),
        rust.macros.iter().map(|m| m.name),
    );
    report.count("function macros", names.len());
    for m in &rust.macros {
        for arg in m.first..=m.last {
            match c.macro_values.get(&(m.name.to_owned(), arg)) {
                Some(&v) if v == (m.eval)(arg) => {}
                Some(&v) => {
                    report.mismatch(format!(
                        "{}({arg}): {v:#x} in C but {:#x} in Rust",
                        m.name,
                        (m.eval)(arg)
                    ));
                    break;
                }
                None => {
                    report.mismatch(format!("{}({arg}): no output from the C program", m.name));
                    break;
                }
            }
        }
    }
}

/// The exported names of each node of a version script (`NODE { global: a; b; local: *; }
/// PARENT;`).
pub(crate) fn version_nodes(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let uncommented = text
        .split("/*")
        .enumerate()
        .map(|(i, part)| if i == 0 { part } else { part.split_once("*/").map_or("", |p| p.1) })
        .collect::<Vec<_>>()
        .join(" ");
    let spaced = uncommented.replace('{', " { ").replace('}', " } ").replace(';', " ; ");
    let mut nodes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let (mut node, mut inside, mut local) = (None::<String>, false, false);
    for token in spaced.split_whitespace() {
        match (token, inside) {
            ("{", _) => (inside, local) = (true, false),
            ("}", _) => (inside, node) = (false, None),
            ("global:", true) => local = false,
            ("local:", true) => local = true,
            (";", _) => {}
            (name, true) => {
                if let (Some(n), false) = (&node, local) {
                    nodes.entry(n.clone()).or_default().insert(name.to_owned());
                }
            }
            // Outside a node: its name, or after `}` the node it depends on.
            (name, false) => {
                if node.is_none() && !nodes.contains_key(name) {
                    nodes.insert(name.to_owned(), BTreeSet::new());
                }
                node = Some(name.to_owned());
            }
        }
    }
    nodes
}

fn check_version_scripts(headers: &[Header], report: &mut Report) -> Result<(), String> {
    let read =
        |p: PathBuf| std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()));
    let root = crate::workspace_root().join("capi");
    let upstream = version_nodes(&read(include_dir().join("libhsakmt.ver"))?);
    let ours = version_nodes(&read(root.join("link").join("libhsakmt.map"))?);
    let dtif = version_nodes(&read(root.join("link").join("libdtif.map"))?);
    let declared = |file: &str| -> BTreeSet<String> {
        headers
            .iter()
            .filter(|h| h.file == file)
            .flat_map(|h| &h.functions)
            .map(|f| f.name.clone())
            .collect()
    };
    let empty = BTreeSet::new();
    let node = |n: &BTreeMap<String, BTreeSet<String>>, name: &str| {
        n.get(name).cloned().unwrap_or_default()
    };
    let up1 = node(&upstream, "HSAKMT_1");
    if up1.is_empty() {
        return Err("upstream's libhsakmt.ver parsed to nothing".to_owned());
    }
    let ours1 = node(&ours, "HSAKMT_1");
    for missing in up1.difference(&ours1) {
        report.mismatch(format!("libhsakmt.map: HSAKMT_1 lacks upstream's `{missing}`"));
    }
    compare_set(report, "libhsakmt.map HSAKMT_1", &ours1, &declared("hsakmt.h"));
    compare_set(
        report,
        "libhsakmt.map HSAKMT_RS_1",
        &node(&ours, "HSAKMT_RS_1"),
        &declared("hsakmt_rs.h"),
    );
    for (name, exports) in &ours {
        compare_set(
            report,
            &format!("libdtif.map {name}"),
            exports,
            dtif.get(name).unwrap_or(&empty),
        );
    }
    let dtif_names: BTreeSet<String> =
        hsakmt_capi::drm::DTIF_SYMBOLS.iter().map(|s| (*s).to_owned()).collect();
    compare_set(report, "libdtif.map DTIF_1", &node(&dtif, "DTIF_1"), &dtif_names);
    report.count("version-script names", ours.values().map(BTreeSet::len).sum());
    Ok(())
}

fn compare_set(report: &mut Report, what: &str, have: &BTreeSet<String>, want: &BTreeSet<String>) {
    for n in want.difference(have) {
        report.mismatch(format!("{what}: `{n}` missing"));
    }
    for n in have.difference(want) {
        report.mismatch(format!("{what}: `{n}` not expected"));
    }
}

/// libdrm's structs against `<libdrm/amdgpu.h>`; `false` when the header is not installed.
fn check_libdrm(keep: bool, report: &mut Report) -> Result<bool, String> {
    let dir = Path::new("/usr/include/libdrm");
    if !dir.join("amdgpu.h").exists() {
        return Ok(false);
    }
    let d = hsakmt_capi::drm::describe_libdrm();
    let mut src = String::from("#include <stddef.h>\n#include <stdio.h>\n#include <stdint.h>\n");
    src.push_str("#include <amdgpu.h>\nint main(void) {\n");
    for t in &d.types {
        let ty = format!("struct {}", t.name);
        src.push_str(&format!(
            "  printf(\"S %s %zu %zu\\n\", \"{0}\", sizeof({ty}), _Alignof({ty}));\n",
            t.name
        ));
        for f in &t.fields {
            src.push_str(&format!(
                "  printf(\"F %s %s %zu %zu %zu\\n\", \"{0}\", \"{1}\", offsetof({ty}, {1}), \
                 sizeof(((({ty} *)0)->{1})), _Alignof(__typeof__((({ty} *)0)->{1})));\n",
                t.name, f.path
            ));
        }
    }
    src.push_str("  return 0;\n}\n");
    let c = run_program("hsakmt-capi-check-libdrm", &src, dir, keep)?;
    for t in &d.types {
        report.count("libdrm structs", 1);
        match c.structs.get(t.name) {
            Some(&(size, align)) => {
                compare_num(report, t.name, "sizeof", size, t.size as u64);
                compare_num(report, t.name, "_Alignof", align, t.align as u64);
            }
            None => report.mismatch(format!("struct {}: no output", t.name)),
        }
        for f in &t.fields {
            let what = format!("{}.{}", t.name, f.path);
            match c.fields.get(&(t.name.to_owned(), f.path.to_owned())) {
                Some(&(offset, size, align)) => {
                    compare_num(report, &what, "offsetof", offset, f.offset as u64);
                    compare_num(report, &what, "sizeof", size, f.size as u64);
                    compare_num(report, &what, "_Alignof", align, f.align as u64);
                }
                None => report.mismatch(format!("{what}: no output")),
            }
        }
    }
    Ok(true)
}
