//! Size and capacity rules: file length, where capacities are declared, thread stack sizes,
//! and the exceptions' own upkeep.

use super::Failure;
use super::policy::{
    CAPACITY_EXCEPTIONS, CONFIG_MODULE, FACT_MODULES, LONG_FILES, MAX_LINES, STACK_SIZE_FILES,
    UNSAFE_FILES,
};
use super::scan::{Kind, Scanned};
use super::workspace::Workspace;

/// `file-length`: a non-test source file with more than [`MAX_LINES`] lines outside its test
/// modules, unless listed in [`LONG_FILES`]. The failure names the first line past the limit.
pub(crate) fn file_length(ws: &Workspace) -> Vec<Failure> {
    let mut failures = Vec::new();
    for file in ws.files.iter().filter(|f| !f.test) {
        if LONG_FILES.iter().any(|(p, _)| *p == file.path) {
            continue;
        }
        let lines = file.scan.non_test_lines();
        if let Some(&line) = lines.get(MAX_LINES) {
            failures.push(Failure {
                path: file.path.clone(),
                line,
                rule: "file-length",
                message: format!(
                    "{} lines outside test code, more than {MAX_LINES}: split the file along \
                     its jobs",
                    lines.len()
                ),
            });
        }
    }
    failures
}

/// Whether a constant's name reads like a capacity: `MAX_*`, `DEFAULT_*`, `CAPACITY`,
/// `*_CAPACITY`, `*_BATCH`, `*_RETRIES`, `*_DEPTH`.
pub(crate) fn capacity_name(name: &str) -> bool {
    name.starts_with("MAX_")
        || name.starts_with("DEFAULT_")
        || name == "CAPACITY"
        || ["_CAPACITY", "_BATCH", "_RETRIES", "_DEPTH"].iter().any(|s| name.ends_with(s))
}

const INTEGER_TYPES: &[&str] =
    &["usize", "isize", "u8", "u16", "u32", "u64", "u128", "i8", "i16", "i32", "i64", "i128"];

/// A capacity declaration in `scan`: (name, line).
///
/// Two forms count. A `const` item (free or associated) of an integer type whose name reads
/// like a capacity ([`capacity_name`]) and whose value is written with a number (`= 64`,
/// `= 1 << 17`) rather than derived from named constants alone; and a const generic parameter
/// whose default is written with a number (`const N: usize = 64`), whatever its name.
pub(crate) fn capacity_declarations(scan: &Scanned) -> Vec<(String, usize)> {
    let t = &scan.tokens;
    let mut found = Vec::new();
    for i in 0..t.len() {
        if !t[i].is_ident("const") || t[i].test || (i > 0 && t[i - 1].is("*")) {
            continue;
        }
        let Some(name) = t.get(i + 1).filter(|n| n.kind == Kind::Ident) else { continue };
        if !t.get(i + 2).is_some_and(|c| c.is(":")) {
            continue;
        }
        let generic = i > 0 && (t[i - 1].is("<") || t[i - 1].is(","));
        // The type, then the value up to `;` (item) or `,`/`>` (generic default).
        let mut j = i + 3;
        let mut ty = Vec::new();
        while let Some(x) = t.get(j) {
            if x.is("=") || x.is(";") || (generic && (x.is(",") || x.is(">"))) {
                break;
            }
            ty.push(x.text.as_str());
            j += 1;
        }
        if !t.get(j).is_some_and(|x| x.is("=")) {
            continue;
        }
        let mut depth = 0usize;
        let mut numbered = false;
        for x in &t[j + 1..] {
            if x.kind == Kind::Punct {
                match x.text.as_str() {
                    "(" | "[" | "{" => depth += 1,
                    ")" | "]" | "}" if depth == 0 => break,
                    ")" | "]" | "}" => depth -= 1,
                    ";" if depth == 0 => break,
                    "," | ">" if generic && depth == 0 => break,
                    _ => {}
                }
            }
            numbered |= x.kind == Kind::Number;
        }
        let integer = ty.len() == 1 && INTEGER_TYPES.contains(&ty[0]);
        let counts =
            if generic { numbered } else { integer && numbered && capacity_name(&name.text) };
        if counts {
            found.push((name.text.clone(), name.line));
        }
    }
    found
}

/// `capacity`: a capacity declared in hsakmt-core outside [`CONFIG_MODULE`] and
/// [`FACT_MODULES`] (test code aside), unless listed in [`CAPACITY_EXCEPTIONS`].
pub(crate) fn capacities(ws: &Workspace) -> Vec<Failure> {
    let mut failures = Vec::new();
    let checked =
        |path: &str| path != CONFIG_MODULE && !FACT_MODULES.iter().any(|m| path.starts_with(m));
    for file in ws.files_of("hsakmt-core").filter(|f| !f.test && checked(&f.path)) {
        for (name, line) in capacity_declarations(&file.scan) {
            let excepted =
                CAPACITY_EXCEPTIONS.iter().any(|(p, n, _)| *p == file.path && *n == name);
            if !excepted {
                failures.push(Failure {
                    path: file.path.clone(),
                    line,
                    rule: "capacity",
                    message: format!(
                        "`{name}` declares a capacity outside {CONFIG_MODULE}: declare it there \
                         (or, for a fact of the kernel, hardware or a format, list it in \
                         CAPACITY_EXCEPTIONS with its reason)"
                    ),
                });
            }
        }
    }
    failures
}

/// The `.stack_size(` method calls of `scan` (`std::thread::Builder::stack_size`), by line.
pub(crate) fn stack_size_calls(scan: &Scanned) -> Vec<usize> {
    let t = &scan.tokens;
    (1..t.len())
        .filter(|&i| {
            t[i].is_ident("stack_size")
                && t[i - 1].is(".")
                && t.get(i + 1).is_some_and(|p| p.is("("))
        })
        .map(|i| t[i].line)
        .collect()
}

/// `stack-size`: a thread's stack size set outside [`STACK_SIZE_FILES`] (test code
/// included: no test needs a big stack either).
pub(crate) fn stack_sizes(ws: &Workspace) -> Vec<Failure> {
    let mut failures = Vec::new();
    for file in &ws.files {
        if STACK_SIZE_FILES.iter().any(|(p, _)| *p == file.path) {
            continue;
        }
        for line in stack_size_calls(&file.scan) {
            failures.push(Failure {
                path: file.path.clone(),
                line,
                rule: "stack-size",
                message: "a thread stack size set outside STACK_SIZE_FILES: nothing needs a big \
                          stack (the topology lives in caller storage)"
                    .to_string(),
            });
        }
    }
    failures
}

/// `stale-exception`: an exception of the policy that matches nothing in `ws`.
pub(crate) fn stale_exceptions(ws: &Workspace) -> Vec<Failure> {
    let mut failures = Vec::new();
    let file = |path: &str| ws.files.iter().find(|f| f.path == path);
    let mut stale = |what: &str, entry: String| {
        failures.push(Failure {
            path: "xtask/src/tidy/policy.rs".to_string(),
            line: 1,
            rule: "stale-exception",
            message: format!("{what} lists {entry}, which matches nothing: remove the entry"),
        });
    };
    for (path, _) in LONG_FILES {
        if file(path).is_none_or(|f| f.scan.non_test_lines().len() <= MAX_LINES) {
            stale("LONG_FILES", format!("{path} (missing, or not over {MAX_LINES} lines)"));
        }
    }
    for (path, _) in UNSAFE_FILES {
        let uses = file(path).is_some_and(|f| f.scan.tokens.iter().any(|t| t.is_ident("unsafe")));
        if !uses {
            stale("UNSAFE_FILES", format!("{path} (missing, or without unsafe)"));
        }
    }
    for (path, name, _) in CAPACITY_EXCEPTIONS {
        let declared = file(path)
            .is_some_and(|f| capacity_declarations(&f.scan).iter().any(|(n, _)| n == name));
        if !declared {
            stale("CAPACITY_EXCEPTIONS", format!("{name} in {path}"));
        }
    }
    for (path, _) in STACK_SIZE_FILES {
        if file(path).is_none_or(|f| stack_size_calls(&f.scan).is_empty()) {
            stale("STACK_SIZE_FILES", format!("{path} (missing, or without a stack_size call)"));
        }
    }
    failures
}
