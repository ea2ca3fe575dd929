//! The crate and module boundaries: which crate may name which, and which core modules may
//! import which.

use super::Failure;
use super::policy::{FORBIDDEN_DEPENDENCIES, LOWER_CORE_MODULES, UPPER_CORE_MODULES};
use super::scan::{Kind, Scanned};
use super::workspace::Workspace;

/// `core-names-no-platform` and `platforms-independent`: a crate of
/// [`FORBIDDEN_DEPENDENCIES`] names a crate it must not, as a dependency in its manifest or as
/// a path in its code (`hsakmt_linux::…`).
pub(crate) fn dependencies(ws: &Workspace) -> Vec<Failure> {
    let mut failures = Vec::new();
    for (krate, forbidden, why) in FORBIDDEN_DEPENDENCIES {
        let Some(package) = ws.package(krate) else { continue };
        let rule = if *krate == "hsakmt-core" {
            "core-names-no-platform"
        } else {
            "platforms-independent"
        };
        for dep in &package.manifest.dependencies {
            if forbidden.contains(&dep.package.as_str()) {
                failures.push(Failure {
                    path: package.manifest_path.clone(),
                    line: dep.line,
                    rule,
                    message: format!("{krate} depends on {}: {why}", dep.package),
                });
            }
        }
        for file in ws.files_of(krate) {
            for t in &file.scan.tokens {
                let named = forbidden
                    .iter()
                    .find(|f| t.kind == Kind::Ident && t.text == f.replace('-', "_"));
                if let Some(named) = named {
                    failures.push(Failure {
                        path: file.path.clone(),
                        line: t.line,
                        rule,
                        message: format!("{krate} names {named} (`{}`): {why}", t.text),
                    });
                }
            }
        }
    }
    failures
}

/// `core-layering`: a file of a lower core module ([`LOWER_CORE_MODULES`]) reaches an upper
/// one ([`UPPER_CORE_MODULES`]) by a path from the crate root (`crate::device::…`,
/// `crate::{driver, …}`, or enough `super::` to climb to the root). Test code is held to it
/// too: a lower module's tests that need the facade belong with the facade's.
pub(crate) fn layering(ws: &Workspace) -> Vec<Failure> {
    let mut failures = Vec::new();
    for file in ws.files_of("hsakmt-core") {
        let Some(module) = core_module_path(&file.path) else { continue };
        let Some(top) = module.first() else { continue };
        if !LOWER_CORE_MODULES.contains(&top.as_str()) {
            continue;
        }
        for (segment, line) in root_paths(&file.scan, module.len()) {
            if UPPER_CORE_MODULES.contains(&segment.as_str()) {
                failures.push(Failure {
                    path: file.path.clone(),
                    line,
                    rule: "core-layering",
                    message: format!(
                        "the lower core module `{top}` imports `crate::{segment}` (lower modules \
                         — {} — never import the facade or the driver layer)",
                        LOWER_CORE_MODULES.join(", ")
                    ),
                });
            }
        }
    }
    failures
}

/// The module path of a file of hsakmt-core (`core/src/memory/va.rs` → `[memory, va]`,
/// `core/src/lib.rs` → `[]`); `None` outside `core/src`.
pub(crate) fn core_module_path(path: &str) -> Option<Vec<String>> {
    let rest = path.strip_prefix("core/src/")?.strip_suffix(".rs")?;
    let mut parts: Vec<String> = rest.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod") || parts == ["lib"] {
        parts.pop();
    }
    Some(parts)
}

/// The first segment after the crate root of every path of `scan` that starts at the root
/// (`crate::x`, `crate::{x, y}`, or `super::` as many times as the module is deep, counting
/// inline modules), with its line. `depth` is the file's module depth.
pub(crate) fn root_paths(scan: &Scanned, depth: usize) -> Vec<(String, usize)> {
    let t = &scan.tokens;
    let colons =
        |i: usize| t.get(i).is_some_and(|a| a.is(":")) && t.get(i + 1).is_some_and(|b| b.is(":"));
    let mut found = Vec::new();
    let mut i = 0;
    while i < t.len() {
        let after = if t[i].is_ident("crate") && !(i > 0 && t[i - 1].is("$")) && colons(i + 1) {
            Some(i + 3)
        } else if t[i].is_ident("super")
            && !(i > 2 && t[i - 1].is(":") && t[i - 3].is_ident("super"))
        {
            let mut j = i;
            let mut supers = 0;
            while t.get(j).is_some_and(|s| s.is_ident("super")) && colons(j + 1) {
                supers += 1;
                j += 3;
            }
            let here = depth + scan.inline_path(i).len();
            (supers > 0 && supers >= here).then_some(j)
        } else {
            None
        };
        let Some(after) = after else {
            i += 1;
            continue;
        };
        match t.get(after) {
            Some(s) if s.kind == Kind::Ident => found.push((s.text.clone(), s.line)),
            Some(s) if s.is("{") => {
                let close = scan.matching(after);
                let mut depth = 0usize;
                let mut expect = true;
                for s in &t[after + 1..close] {
                    match s.text.as_str() {
                        "{" | "(" | "[" if s.kind == Kind::Punct => depth += 1,
                        "}" | ")" | "]" if s.kind == Kind::Punct => depth = depth.saturating_sub(1),
                        "," if depth == 0 => expect = true,
                        _ if expect && depth == 0 && s.kind == Kind::Ident => {
                            found.push((s.text.clone(), s.line));
                            expect = false;
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        i = after;
    }
    found
}
