//! Each rule over small in-memory workspaces, the scanner and manifest reader underneath, and
//! the real workspace.

use std::collections::BTreeSet;

use super::manifest::Manifest;
use super::scan::{Kind, Scanned};
use super::workspace::module_file;
use super::{Failure, Workspace, boundaries, check, limits, unsafe_code};

const CORE_TOML: &str = "[package]\nname = \"hsakmt-core\"\n\n[dependencies]\nheapless = \"0.9\"\n";
const LINUX_TOML: &str =
    "[package]\nname = \"hsakmt-linux\"\n[dependencies]\nhsakmt-core = { workspace = true }\n";
const SIM_TOML: &str = "[package]\nname = \"hsakmt-sim\"\n";
const CLI_TOML: &str = "[package]\nname = \"hsakmt-cli\"\n";

/// A workspace of core, linux, sim and cli with the given sources.
fn ws(sources: &[(&str, &str)]) -> Workspace {
    Workspace::from_texts(
        &[
            ("core/Cargo.toml", CORE_TOML),
            ("platform-linux/Cargo.toml", LINUX_TOML),
            ("platform-sim/Cargo.toml", SIM_TOML),
            ("cli/Cargo.toml", CLI_TOML),
        ],
        sources,
    )
}

/// (path, line, rule) of each failure.
fn brief(failures: &[Failure]) -> Vec<(&str, usize, &str)> {
    failures.iter().map(|f| (f.path.as_str(), f.line, f.rule)).collect()
}

fn idents(scan: &Scanned) -> Vec<&str> {
    scan.tokens.iter().filter(|t| t.kind == Kind::Ident).map(|t| t.text.as_str()).collect()
}

// ---- scanner -----------------------------------------------------------------------------------

#[test]
fn comments_and_strings_are_not_code() {
    let s = Scanned::new(
        "// unsafe { x }\n/* outer /* nested unsafe */ still unsafe */\nlet a = \"unsafe\";\n\
         let b = r#\"a \" unsafe\"#; let c = b\"unsafe\"; let d = c\"unsafe\";\n\
         /// unsafe doc\nfn f() {}\n",
    );
    assert!(!idents(&s).contains(&"unsafe"), "{:?}", idents(&s));
    assert_eq!(idents(&s), ["let", "a", "let", "b", "let", "c", "let", "d", "fn", "f"]);
    assert_eq!(s.comments.len(), 3);
    assert_eq!((s.comments[1].first_line, s.comments[1].last_line), (2, 2));
    assert!(s.comments[2].doc && !s.comments[0].doc);
    assert_eq!(s.comments[2].text, "unsafe doc");
    // Lines are counted through strings and comments that span lines.
    let s = Scanned::new("let s = \"a\nb\";\n/* c\nd */\nlet t = 1;\n");
    assert_eq!(s.tokens.last().map(|t| t.line), Some(5));
    assert!(!s.comment_only(2) && s.comment_only(4));
}

#[test]
fn chars_and_lifetimes() {
    let s = Scanned::new("fn f<'a>(x: &'a u8) -> char { let q = '\\''; let c = 'a'; b'{'; '}' }");
    let kinds: Vec<Kind> = s.tokens.iter().map(|t| t.kind).collect();
    assert_eq!(kinds.iter().filter(|k| **k == Kind::Lifetime).count(), 2);
    assert_eq!(kinds.iter().filter(|k| **k == Kind::Char).count(), 4);
    // The braces inside char literals do not unbalance the body.
    let open = s.tokens.iter().position(|t| t.is("{")).unwrap();
    assert_eq!(s.matching(open), s.tokens.len() - 1);
}

#[test]
fn test_attributes_mark_their_items() {
    let s = Scanned::new(
        "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn b() { unsafe {} }\n}\nfn c() {}\n\
         #[test]\nfn d() {}\n#[cfg(all(test, feature = \"x\"))]\nfn e() {}\n\
         #[cfg(any(test, feature = \"x\"))]\nfn f() {}\n#[cfg(not(test))]\nfn g() {}\n",
    );
    let test: Vec<&str> = s
        .tokens
        .iter()
        .filter(|t| t.kind == Kind::Ident && t.test)
        .map(|t| t.text.as_str())
        .collect();
    assert!(test.contains(&"b") && test.contains(&"unsafe"));
    assert!(test.contains(&"d") && test.contains(&"e"));
    for name in ["a", "c", "f", "g"] {
        assert!(!test.contains(&name), "{name} is not test code");
    }
    assert!(!s.test_file);
    assert!(Scanned::new("//! doc\n#![cfg(test)]\nfn x() {}\n").test_file);
    assert!(!Scanned::new("fn y() {\n#![cfg(test)]\n}\n").test_file);
}

#[test]
fn modules_and_non_test_lines() {
    let s = Scanned::new(
        "mod a;\n#[cfg(test)]\nmod tests;\nmod inner {\n    pub(crate) mod deep;\n}\n\
         #[cfg(test)]\nmod t {\n    fn x() {}\n}\nfn after() {}\n",
    );
    let decls: Vec<(Vec<String>, bool)> =
        s.mod_decls.iter().map(|d| (d.path.clone(), d.test)).collect();
    assert_eq!(
        decls,
        [
            (vec!["a".to_string()], false),
            (vec!["tests".to_string()], true),
            (vec!["inner".to_string(), "deep".to_string()], false),
        ]
    );
    assert_eq!(s.inline_mods.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["inner", "t"]);
    // Lines 2-3 and 7-10 are test items.
    assert_eq!(s.non_test_lines(), [1, 4, 5, 6, 11]);
}

#[test]
fn module_files_resolve_like_rustc() {
    let paths: BTreeSet<String> =
        ["c/src/a.rs", "c/src/a/b.rs", "c/src/m/mod.rs", "c/src/m/n/mod.rs", "c/src/x.rs"]
            .into_iter()
            .map(str::to_string)
            .collect();
    let decl = |s: &[&str]| s.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
    assert_eq!(module_file("c/src/lib.rs", &decl(&["a"]), &paths).as_deref(), Some("c/src/a.rs"));
    assert_eq!(module_file("c/src/a.rs", &decl(&["b"]), &paths).as_deref(), Some("c/src/a/b.rs"));
    assert_eq!(
        module_file("c/src/m/mod.rs", &decl(&["n"]), &paths).as_deref(),
        Some("c/src/m/n/mod.rs")
    );
    assert_eq!(
        module_file("c/src/lib.rs", &decl(&["m"]), &paths).as_deref(),
        Some("c/src/m/mod.rs")
    );
    assert_eq!(module_file("c/src/lib.rs", &decl(&["zz"]), &paths), None);
}

// ---- manifests and the workspace ---------------------------------------------------------------

#[test]
fn manifest_dependencies_of_every_kind() {
    let m = Manifest::parse(
        "[package]\nname = \"demo\" # the name\n\n[dependencies]\na = \"1\"\nb.workspace = true\n\
         renamed = { package = \"real\", version = \"1\" }\n# c = \"1\"\n\n[dev-dependencies]\n\
         d = { path = \"../d\" }\n[build-dependencies]\ne = \"1\"\n\
         [target.'cfg(unix)'.dependencies]\nf = \"1\"\n[dependencies.g]\nversion = \"1\"\n\
         [dependencies.h]\npackage = \"real-h\"\n[features]\nx = [\"dep:a\"]\n\
         [workspace.dependencies]\nnot-a-dep = \"1\"\n",
    );
    assert_eq!(m.name.as_deref(), Some("demo"));
    let deps: Vec<(&str, usize)> =
        m.dependencies.iter().map(|d| (d.package.as_str(), d.line)).collect();
    assert_eq!(
        deps,
        [
            ("a", 5),
            ("b", 6),
            ("real", 7),
            ("d", 11),
            ("e", 13),
            ("f", 15),
            ("g", 16),
            ("real-h", 18)
        ]
    );
    assert_eq!(Manifest::parse("[workspace]\nmembers = []\n").name, None);
}

#[test]
fn files_get_their_package_and_test_status() {
    let w = Workspace::from_texts(
        &[
            ("core/Cargo.toml", CORE_TOML),
            ("core/fuzz/Cargo.toml", "[package]\nname = \"fuzz\"\n"),
            ("Cargo.toml", "[workspace]\n"),
        ],
        &[
            ("core/src/lib.rs", "mod a;\n#[cfg(test)]\nmod helpers;\n"),
            ("core/src/a.rs", "#[cfg(test)]\nmod tests;\n"),
            ("core/src/a/tests.rs", "mod more;\n"),
            ("core/src/a/tests/more.rs", ""),
            ("core/src/helpers.rs", "mod deeper;\n"),
            ("core/src/helpers/deeper.rs", ""),
            ("core/tests/it.rs", ""),
            ("core/fuzz/src/lib.rs", ""),
            ("xtask/src/main.rs", ""),
        ],
    );
    let status: Vec<(&str, Option<&str>, bool)> =
        w.files.iter().map(|f| (f.path.as_str(), f.package.as_deref(), f.test)).collect();
    assert_eq!(
        status,
        [
            ("core/fuzz/src/lib.rs", Some("fuzz"), false),
            ("core/src/a.rs", Some("hsakmt-core"), false),
            ("core/src/a/tests.rs", Some("hsakmt-core"), true),
            ("core/src/a/tests/more.rs", Some("hsakmt-core"), true),
            ("core/src/helpers.rs", Some("hsakmt-core"), true),
            ("core/src/helpers/deeper.rs", Some("hsakmt-core"), true),
            ("core/src/lib.rs", Some("hsakmt-core"), false),
            ("core/tests/it.rs", Some("hsakmt-core"), true),
            ("xtask/src/main.rs", None, false),
        ]
    );
}

// ---- boundaries --------------------------------------------------------------------------------

#[test]
fn core_names_no_platform_crate() {
    let w = Workspace::from_texts(
        &[(
            "core/Cargo.toml",
            "[package]\nname = \"hsakmt-core\"\n[dependencies]\nheapless = \"1\"\n\
             [dev-dependencies]\nhsakmt-sim = { path = \"../platform-sim\" }\n",
        )],
        &[
            ("core/src/lib.rs", "//! Implemented by `hsakmt_linux` (prose is fine).\nmod a;\n"),
            ("core/src/a.rs", "fn f() { let s = \"hsakmt_capi\"; hsakmt_hostmem::map(); }\n"),
        ],
    );
    assert_eq!(
        brief(&boundaries::dependencies(&w)),
        [
            ("core/Cargo.toml", 6, "core-names-no-platform"),
            ("core/src/a.rs", 1, "core-names-no-platform")
        ]
    );
}

#[test]
fn platforms_do_not_depend_on_each_other() {
    let w = Workspace::from_texts(
        &[
            (
                "platform-linux/Cargo.toml",
                "[package]\nname = \"hsakmt-linux\"\n[dependencies]\nhsakmt-core = \"1\"\nhsakmt-sim = \"1\"\n",
            ),
            (
                "platform-sim/Cargo.toml",
                "[package]\nname = \"hsakmt-sim\"\n[dependencies.hsakmt-linux]\npath = \"../platform-linux\"\n",
            ),
            (
                "host-memory/Cargo.toml",
                "[package]\nname = \"hsakmt-hostmem\"\n[dependencies]\nhsakmt-core = \"1\"\n",
            ),
        ],
        &[
            ("platform-sim/src/lib.rs", "use hsakmt_linux::LinuxPlatform;\n"),
            ("host-memory/src/lib.rs", "use hsakmt_core::error::Errno;\n"),
        ],
    );
    assert_eq!(
        brief(&boundaries::dependencies(&w)),
        [
            ("platform-linux/Cargo.toml", 5, "platforms-independent"),
            ("platform-sim/Cargo.toml", 3, "platforms-independent"),
            ("platform-sim/src/lib.rs", 1, "platforms-independent"),
        ]
    );
}

#[test]
fn lower_core_modules_do_not_import_the_facade_or_drivers() {
    let w = ws(&[
        ("core/src/memory/mod.rs", "use super::device::Kfd;\nuse super::queue::Ring;\n"),
        (
            "core/src/memory/va.rs",
            "use crate::{queue::Ring, driver::Agent};\nuse super::device::X;\n",
        ),
        (
            "core/src/memory/a/b.rs",
            "fn f() { super::super::super::driver::g(); super::super::device::h(); }\n",
        ),
        (
            "core/src/topology/mod.rs",
            "/// See [`Kfd`](crate::device::Kfd).\nfn f() { let s = \"crate::device\"; }\n\
             #[cfg(test)]\nmod tests {\n    use crate::device::Kfd;\n    use super::super::driver::Agent;\n}\n",
        ),
        ("core/src/queue.rs", "mod inner {\n    use super::super::device::Kfd;\n}\n"),
        ("core/src/device/mod.rs", "use crate::driver::Agent;\nuse crate::memory::Va;\n"),
        ("core/src/lib.rs", "pub mod device;\npub(crate) use crate::driver::Registry;\n"),
    ]);
    assert_eq!(
        brief(&boundaries::layering(&w)),
        [
            ("core/src/memory/a/b.rs", 1, "core-layering"),
            ("core/src/memory/mod.rs", 1, "core-layering"),
            ("core/src/memory/va.rs", 1, "core-layering"),
            ("core/src/queue.rs", 2, "core-layering"),
            ("core/src/topology/mod.rs", 5, "core-layering"),
            ("core/src/topology/mod.rs", 6, "core-layering"),
        ]
    );
}

// ---- unsafe ------------------------------------------------------------------------------------

#[test]
fn unsafe_only_in_the_allowed_crates() {
    let w = ws(&[
        (
            "platform-sim/src/lib.rs",
            "fn f() { unsafe { g() } }\ntype F = unsafe extern \"C\" fn(u8);\n",
        ),
        (
            "cli/src/main.rs",
            "#[unsafe(no_mangle)]\nfn h() {}\nimpl X { unsafe fn i() {} }\n// unsafe { }\n",
        ),
        ("firmware-tests/tests/fork.rs", "fn j() {\n    // SAFETY: test.\n    unsafe { k() }\n}\n"),
        (
            "firmware-tests/tests/other.rs",
            "fn j() {\n    // SAFETY: test.\n    unsafe { k() }\n}\n",
        ),
        ("platform-linux/src/lib.rs", "fn l() {\n    // SAFETY: fine.\n    unsafe { m() }\n}\n"),
    ]);
    let failures = unsafe_code::unsafe_uses(&w);
    assert_eq!(
        brief(&failures),
        [
            ("cli/src/main.rs", 1, "unsafe-crate"),
            ("cli/src/main.rs", 3, "unsafe-crate"),
            ("firmware-tests/tests/other.rs", 3, "unsafe-crate"),
            ("platform-sim/src/lib.rs", 1, "unsafe-crate"),
        ]
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>()
    );
}

#[test]
fn unsafe_needs_a_safety_comment_directly_above() {
    let src = "\
fn ok_block() {
    // SAFETY: the pointer is live.
    unsafe { a() }
}
fn ok_statement() {
    // SAFETY: multi-line
    // justification.
    let x =
        unsafe { b() };
}
fn ok_tuple(v: Option<u8>) {
    let p = match v {
        // SAFETY: first arm.
        Some(a) => (
            unsafe { c(a) },
            1,
        ),
        // SAFETY: second arm.
        None => (unsafe { d() }, 2),
    };
}
fn ok_argument() {
    f(1,
        // SAFETY: an argument.
        unsafe { e() });
}
// SAFETY: Send is fine.
unsafe impl Send for S {}
/// Docs.
///
/// # Safety
/// The caller keeps `p` live.
#[inline]
pub unsafe fn g(p: *const u8) {}
#[unsafe(no_mangle)]
pub unsafe extern \"C\" fn h() {}
trait T { unsafe fn decl(); }
fn gap() {
    // SAFETY: a blank line breaks it.

    unsafe { i() }
}
fn doc_only() {
    /// SAFETY: a doc comment is not a justification.
    unsafe { j() }
}
/// # Safety
/// Not for impls.
unsafe impl Sync for S {}
fn no_comment() {
    unsafe { k() }
}
// SAFETY: for the block.
unsafe extern \"C\" { fn ext(); }
";
    let w = ws(&[("platform-linux/src/lib.rs", src)]);
    let lines: Vec<usize> = unsafe_code::unsafe_uses(&w).iter().map(|f| f.line).collect();
    // h (no `# Safety`), gap, doc_only, the impl with docs only, no_comment.
    assert_eq!(lines, [36, 41, 45, 49, 51]);
}

#[test]
fn other_crate_roots_forbid_unsafe() {
    let w = ws(&[
        ("cli/src/main.rs", "//! Tool.\n#![forbid(unsafe_code)]\nfn main() {}\n"),
        ("cli/src/bin/extra.rs", "#![cfg_attr(all(), forbid(unsafe_code))]\nfn main() {}\n"),
        ("cli/src/other.rs", "fn x() {}\n"),
        ("core/src/lib.rs", "#![no_std]\n#![forbid(missing_docs, unsafe_code)]\n"),
        ("platform-sim/src/lib.rs", "#![deny(unsafe_code)]\n"),
        ("platform-linux/src/lib.rs", "//! The allowed crate.\n"),
    ]);
    assert_eq!(
        brief(&unsafe_code::forbid_attributes(&w)),
        [
            ("cli/src/bin/extra.rs", 1, "forbid-unsafe"),
            ("platform-sim/src/lib.rs", 1, "forbid-unsafe")
        ]
    );
}

// ---- limits ------------------------------------------------------------------------------------

fn lines_of(n: usize) -> String {
    (0..n).map(|i| format!("const A{i}: u8 = 0;\n")).collect()
}

#[test]
fn long_files_fail_at_the_first_line_past_the_limit() {
    let long = lines_of(1001);
    let with_tests = format!("{}#[cfg(test)]\nmod tests {{\n{}}}\n", lines_of(990), lines_of(100));
    let with_test_file = format!("{}#[cfg(test)]\nmod tests;\n", lines_of(998));
    let w = ws(&[
        ("core/src/big.rs", &long),
        ("core/src/fine.rs", &with_tests),
        ("core/src/edge.rs", &with_test_file),
        ("core/src/tests.rs", &long),
        ("core/tests/scenario.rs", &long),
        ("core/src/uapi/ioctl.rs", &long),
    ]);
    let failures = limits::file_length(&w);
    assert_eq!(brief(&failures), [("core/src/big.rs", 1001, "file-length")]);
    assert!(failures[0].message.starts_with("1001 lines"), "{}", failures[0].message);
    // Exactly the limit passes.
    assert!(limits::file_length(&ws(&[("core/src/edge.rs", &lines_of(1000))])).is_empty());
}

#[test]
fn capacities_are_declared_in_the_configuration_module() {
    let w = ws(&[
        ("core/src/config.rs", "pub const MAX_QUEUES: usize = 64;\n"),
        (
            "core/src/queue/ring.rs",
            "pub const MAX_SLOTS: usize = 64;\n\
             pub const RING_CAPACITY: u32 = 1 << 10;\n\
             pub const IOCTL_BATCH: usize = crate::config::BATCH;\n\
             pub const MAX_NAME: [u8; 4] = [0; 4];\n\
             pub struct R<const N: usize = 16, const M: usize = crate::config::M> { p: *const u8 }\n\
             impl<const N: usize> R<N> { pub const CAPACITY: u32 = N as u32; }\n\
             const fn max_x() -> usize { 4 }\n\
             pub const PACKET_SIZE: usize = 64;\n\
             #[cfg(test)]\nmod tests { const MAX_T: usize = 3; }\n",
        ),
        ("core/src/uapi/consts.rs", "pub const MAX_ALLOWED_NUM_POINTS: u32 = 100;\n"),
        ("core/src/driver/agent.rs", "pub const MAX_QUEUE_PACKETS: u32 = 1 << 17;\n"),
        ("platform-sim/src/lib.rs", "pub const MAX_SIM: usize = 8;\n"),
    ]);
    let failures = limits::capacities(&w);
    let found: Vec<(usize, &str)> =
        failures.iter().map(|f| (f.line, f.message.split('`').nth(1).unwrap_or(""))).collect();
    assert_eq!(found, [(1, "MAX_SLOTS"), (2, "RING_CAPACITY"), (5, "N")]);
    assert!(failures.iter().all(|f| f.path == "core/src/queue/ring.rs" && f.rule == "capacity"));
}

#[test]
fn stack_sizes_only_where_listed() {
    let w = ws(&[
        ("cli/src/main.rs", "fn f() { std::thread::Builder::new().stack_size(64 << 20); }\n"),
        ("platform-linux/src/monitor.rs", "fn g() { b.stack_size(stack); }\n"),
        (
            "platform-sim/src/lib.rs",
            "fn h(q: &Q) { q.ctl_stack_size(); } // .stack_size(1)\nfn stack_size() {}\n",
        ),
        ("platform-sim/src/tests.rs", "fn t() { b\n    .stack_size(1 << 30); }\n"),
    ]);
    assert_eq!(
        brief(&limits::stack_sizes(&w)),
        [("cli/src/main.rs", 1, "stack-size"), ("platform-sim/src/tests.rs", 2, "stack-size")]
    );
}

#[test]
fn exceptions_that_match_nothing_are_failures() {
    // None of the listed files exists here, so every exception is stale.
    let failures = limits::stale_exceptions(&ws(&[]));
    let listed = super::policy::LONG_FILES.len()
        + super::policy::UNSAFE_FILES.len()
        + super::policy::CAPACITY_EXCEPTIONS.len()
        + super::policy::STACK_SIZE_FILES.len();
    assert_eq!(failures.len(), listed);
    assert!(failures.iter().all(|f| f.rule == "stale-exception"));
    // A listed constant still declared is not stale.
    let w = ws(&[("core/src/driver/agent.rs", "pub const MAX_QUEUE_PACKETS: u32 = 1 << 17;\n")]);
    assert_eq!(limits::stale_exceptions(&w).len(), listed - 1);
}

// ---- the whole check ---------------------------------------------------------------------------

#[test]
fn every_failure_is_listed_with_file_line_and_rule() {
    let w = ws(&[
        ("core/src/memory/va.rs", "use crate::device::Kfd;\nconst MAX_RANGES: usize = 64;\n"),
        ("platform-sim/src/lib.rs", "#![forbid(unsafe_code)]\nfn f() { unsafe { g() } }\n"),
        ("cli/src/main.rs", "fn main() { b.stack_size(1); }\n"),
    ]);
    let failures: Vec<Failure> =
        check(&w).into_iter().filter(|f| f.rule != "stale-exception").collect();
    assert_eq!(
        brief(&failures),
        [
            ("cli/src/main.rs", 1, "forbid-unsafe"),
            ("cli/src/main.rs", 1, "stack-size"),
            ("core/src/memory/va.rs", 1, "core-layering"),
            ("core/src/memory/va.rs", 2, "capacity"),
            ("platform-sim/src/lib.rs", 2, "unsafe-crate"),
        ]
    );
    assert!(failures[2].to_string().starts_with("core/src/memory/va.rs:1: [core-layering] "));
}

#[test]
fn the_workspace_is_tidy() {
    let w = Workspace::load(&crate::workspace_root()).expect("the workspace reads");
    assert!(w.package("hsakmt-core").is_some() && w.files.len() > 100);
    let failures = check(&w);
    let listed: Vec<String> = failures.iter().map(ToString::to_string).collect();
    assert!(failures.is_empty(), "cargo xtask tidy fails:\n{}", listed.join("\n"));
}
