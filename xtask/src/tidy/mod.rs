//! `cargo xtask tidy`: the workspace's structural rules, checked over its sources without
//! building anything.
//!
//! | rule | what it enforces |
//! |---|---|
//! | `core-names-no-platform` | hsakmt-core's manifest and code name no platform crate |
//! | `platforms-independent` | hsakmt-linux and hsakmt-sim (and the host-memory crate below them) do not depend on each other |
//! | `core-layering` | the lower core modules never import the facade (`device`) or the driver layer (`driver`) |
//! | `unsafe-crate` | `unsafe` only in the allowed crates (and listed files) |
//! | `unsafe-comment` | each `unsafe` block, impl, trait, extern block and fn there with a `// SAFETY:` comment directly above (or, for a fn or trait, a `# Safety` doc section) |
//! | `forbid-unsafe` | every other crate's roots (`src/lib.rs`, `src/main.rs`, `src/bin/*.rs`) carry `#![forbid(unsafe_code)]` |
//! | `file-length` | no non-test source file over 1,000 lines |
//! | `capacity` | capacities declared only in `core/src/config.rs` (the uapi transcription's constants are the kernel's facts) |
//! | `stack-size` | no `stack_size(` call outside the listed files |
//! | `stale-exception` | every exception in [`policy`] still matches something |
//!
//! The exceptions, each with its reason, are in [`policy`]. Test code is what sits under
//! `#[cfg(test)]`/`#[test]` (inline modules and functions, and the files of `mod x;`
//! declared under them), files named `tests.rs`, and files under a `tests/` directory.
//! Comments and strings are never code. Every failure is reported, as
//! `path:line: [rule] message`.

mod boundaries;
mod limits;
mod manifest;
mod policy;
mod scan;
mod unsafe_code;
mod workspace;

#[cfg(test)]
mod tests;

use std::fmt;

pub(crate) use workspace::Workspace;

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Failure {
    /// The file, relative to the workspace root.
    pub(crate) path: String,
    /// 1-based line.
    pub(crate) line: usize,
    /// The rule's name (see the module docs).
    pub(crate) rule: &'static str,
    pub(crate) message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: [{}] {}", self.path, self.line, self.rule, self.message)
    }
}

/// Every rule over `ws`, failures sorted by file and line.
pub(crate) fn check(ws: &Workspace) -> Vec<Failure> {
    let mut failures = Vec::new();
    failures.extend(boundaries::dependencies(ws));
    failures.extend(boundaries::layering(ws));
    failures.extend(unsafe_code::unsafe_uses(ws));
    failures.extend(unsafe_code::forbid_attributes(ws));
    failures.extend(limits::file_length(ws));
    failures.extend(limits::capacities(ws));
    failures.extend(limits::stack_sizes(ws));
    failures.extend(limits::stale_exceptions(ws));
    failures.sort();
    failures
}

/// `cargo xtask tidy`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if let Some(a) = args.first() {
        return Err(format!("tidy takes no arguments (got `{a}`)"));
    }
    let ws = Workspace::load(&crate::workspace_root())?;
    let failures = check(&ws);
    for f in &failures {
        println!("{f}");
    }
    if failures.is_empty() {
        println!(
            "tidy: {} files of {} packages, every rule holds",
            ws.files.len(),
            ws.packages.len()
        );
        Ok(())
    } else {
        Err(format!(
            "tidy: {} failure(s); the rules and their exceptions are in xtask/src/tidy/policy.rs",
            failures.len()
        ))
    }
}
