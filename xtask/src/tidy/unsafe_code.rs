//! Where `unsafe` may be, and how it is justified.

use super::Failure;
use super::policy::{UNSAFE_CRATES, UNSAFE_FILES};
use super::scan::{Kind, Scanned};
use super::workspace::{Workspace, is_crate_root};

/// What an `unsafe` keyword introduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnsafeUse {
    /// `unsafe { … }`.
    Block,
    /// `unsafe impl`.
    Impl,
    /// `unsafe trait` (or `unsafe auto trait`).
    Trait,
    /// `unsafe fn name(…) { … }` (also `unsafe extern "C" fn`).
    Fn,
    /// `unsafe extern "C" { … }`.
    ExternBlock,
    /// `unsafe fn name(…);`: a declaration without a body (in a trait or an extern block).
    FnDeclaration,
    /// `unsafe fn(…)` or `unsafe extern "C" fn(…)`: a function-pointer type.
    FnPointerType,
    /// `#[unsafe(no_mangle)]` and other unsafe attributes.
    Attribute,
}

impl UnsafeUse {
    /// Whether this use needs a `// SAFETY:` comment (or a `# Safety` doc section).
    pub(crate) fn needs_comment(self) -> bool {
        matches!(self, Self::Block | Self::Impl | Self::Trait | Self::Fn | Self::ExternBlock)
    }

    /// Whether this use is `unsafe` code (the `unsafe_code` lint's sense): everything but a
    /// function-pointer type.
    pub(crate) fn is_code(self) -> bool {
        self != Self::FnPointerType
    }
}

/// What the `unsafe` keyword at token `i` introduces.
pub(crate) fn classify(scan: &Scanned, i: usize) -> UnsafeUse {
    let t = &scan.tokens;
    let at = |k: usize| t.get(k);
    let mut k = i + 1;
    match at(k) {
        Some(n) if n.is("(") => return UnsafeUse::Attribute,
        Some(n) if n.is("{") => return UnsafeUse::Block,
        Some(n) if n.is_ident("impl") => return UnsafeUse::Impl,
        Some(n) if n.is_ident("trait") || n.is_ident("auto") => return UnsafeUse::Trait,
        _ => {}
    }
    if at(k).is_some_and(|n| n.is_ident("extern")) {
        k += 1;
        if at(k).is_some_and(|n| n.kind == Kind::Str) {
            k += 1;
        }
        if at(k).is_some_and(|n| n.is("{")) {
            return UnsafeUse::ExternBlock;
        }
    }
    if !at(k).is_some_and(|n| n.is_ident("fn")) {
        return UnsafeUse::Block;
    }
    if at(k + 1).is_some_and(|n| n.is("(")) {
        return UnsafeUse::FnPointerType;
    }
    // A body `{` or a `;` outside the parameter list and generics' brackets.
    let mut j = k + 1;
    while let Some(n) = at(j) {
        if n.is("(") || n.is("[") {
            j = scan.matching(j) + 1;
            continue;
        }
        if n.is("{") {
            return UnsafeUse::Fn;
        }
        if n.is(";") {
            return UnsafeUse::FnDeclaration;
        }
        j += 1;
    }
    UnsafeUse::FnDeclaration
}

/// Index of the first token of the statement, item or expression list entry holding token
/// `i`: just after the nearest `;`, `,` or unmatched bracket before it, or the `}` that ends
/// the previous statement.
pub(crate) fn statement_start(scan: &Scanned, i: usize) -> usize {
    let mut depth = 0usize;
    for k in (0..i).rev() {
        let t = &scan.tokens[k];
        if t.kind != Kind::Punct {
            continue;
        }
        match t.text.as_str() {
            ")" | "]" => depth += 1,
            "}" if depth > 0 => depth += 1,
            "(" | "[" | "{" if depth > 0 => depth -= 1,
            "}" | "(" | "[" | "{" | ";" | "," if depth == 0 => return k + 1,
            _ => {}
        }
    }
    0
}

/// Index of the unmatched opening bracket before token `i`, if any.
fn enclosing_open(scan: &Scanned, i: usize) -> Option<usize> {
    let mut depth = 0usize;
    for k in (0..i).rev() {
        let t = &scan.tokens[k];
        if t.kind != Kind::Punct {
            continue;
        }
        match t.text.as_str() {
            ")" | "]" | "}" => depth += 1,
            "(" | "[" | "{" if depth == 0 => return Some(k),
            "(" | "[" | "{" => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The lines a justification may sit directly above for the `unsafe` at token `i`: its own,
/// the first line of the expression-list entry or statement holding it, and — while that
/// entry sits in parentheses or brackets (a call's argument, a tuple's element) — the first
/// line of the entry or statement holding those, up to the statement.
pub(crate) fn justification_lines(scan: &Scanned, i: usize) -> Vec<usize> {
    let mut lines = vec![scan.tokens[i].line];
    let mut k = i;
    loop {
        let start = statement_start(scan, k);
        lines.push(scan.tokens[start].line);
        let Some(boundary) = start.checked_sub(1) else { break };
        let open = match scan.tokens[boundary].text.as_str() {
            "(" | "[" => Some(boundary),
            "," => enclosing_open(scan, boundary),
            _ => None,
        };
        match open {
            Some(o) if scan.tokens[o].is("(") || scan.tokens[o].is("[") => k = o,
            _ => break,
        }
    }
    lines.dedup();
    lines
}

/// Whether the `unsafe` at token `i` is justified: a `// SAFETY:` comment in the block of
/// comment lines directly above one of its [`justification_lines`], or — for an `unsafe fn`
/// or `unsafe trait` — a `# Safety` section in the doc comment there.
pub(crate) fn justified(scan: &Scanned, i: usize, kind: UnsafeUse) -> bool {
    justification_lines(scan, i).into_iter().any(|line| {
        scan.comments_above(line).iter().any(|c| {
            (!c.doc && c.text.starts_with("SAFETY:"))
                || (c.doc
                    && matches!(kind, UnsafeUse::Fn | UnsafeUse::Trait)
                    && c.text
                        .lines()
                        .any(|l| l.trim().trim_start_matches('*').trim() == "# Safety"))
        })
    })
}

/// `unsafe-crate` and `unsafe-comment`: `unsafe` code outside [`UNSAFE_CRATES`] and
/// [`UNSAFE_FILES`]; a block, impl, trait, extern block or fn inside them without its
/// justification.
pub(crate) fn unsafe_uses(ws: &Workspace) -> Vec<Failure> {
    let mut failures = Vec::new();
    for file in &ws.files {
        let allowed = file.package.as_deref().is_some_and(|p| UNSAFE_CRATES.contains(&p))
            || UNSAFE_FILES.iter().any(|(p, _)| *p == file.path);
        for (i, t) in file.scan.tokens.iter().enumerate() {
            if !t.is_ident("unsafe") {
                continue;
            }
            let kind = classify(&file.scan, i);
            if !allowed && kind.is_code() {
                failures.push(Failure {
                    path: file.path.clone(),
                    line: t.line,
                    rule: "unsafe-crate",
                    message: format!(
                        "`unsafe` outside the crates allowed it ({}); see UNSAFE_FILES for the \
                         exceptions",
                        UNSAFE_CRATES.join(", ")
                    ),
                });
            } else if allowed && kind.needs_comment() && !justified(&file.scan, i, kind) {
                failures.push(Failure {
                    path: file.path.clone(),
                    line: t.line,
                    rule: "unsafe-comment",
                    message: format!(
                        "unsafe {} without a `// SAFETY:` comment directly above{}",
                        describe(kind),
                        if matches!(kind, UnsafeUse::Fn | UnsafeUse::Trait) {
                            " (or a `# Safety` doc section)"
                        } else {
                            ""
                        }
                    ),
                });
            }
        }
    }
    failures
}

fn describe(kind: UnsafeUse) -> &'static str {
    match kind {
        UnsafeUse::Block => "block",
        UnsafeUse::Impl => "impl",
        UnsafeUse::Trait => "trait",
        UnsafeUse::Fn => "fn",
        UnsafeUse::ExternBlock => "extern block",
        UnsafeUse::FnDeclaration => "fn declaration",
        UnsafeUse::FnPointerType => "fn pointer type",
        UnsafeUse::Attribute => "attribute",
    }
}

/// `forbid-unsafe`: a crate root of a package outside [`UNSAFE_CRATES`] without
/// `#![forbid(unsafe_code)]`.
pub(crate) fn forbid_attributes(ws: &Workspace) -> Vec<Failure> {
    let mut failures = Vec::new();
    for package in ws.packages.iter().filter(|p| !UNSAFE_CRATES.contains(&p.name.as_str())) {
        for file in ws.files_of(&package.name) {
            if is_crate_root(package, &file.path) && !forbids_unsafe(&file.scan) {
                failures.push(Failure {
                    path: file.path.clone(),
                    line: 1,
                    rule: "forbid-unsafe",
                    message: format!(
                        "the crate root of {} lacks `#![forbid(unsafe_code)]` (only {} may hold \
                         unsafe code)",
                        package.name,
                        UNSAFE_CRATES.join(", ")
                    ),
                });
            }
        }
    }
    failures
}

/// Whether `scan` has the inner attribute `#![forbid(…unsafe_code…)]`.
pub(crate) fn forbids_unsafe(scan: &Scanned) -> bool {
    let t = &scan.tokens;
    (0..t.len()).any(|i| {
        t[i].is("#")
            && t.get(i + 1).is_some_and(|x| x.is("!"))
            && t.get(i + 2).is_some_and(|x| x.is("["))
            && t.get(i + 3).is_some_and(|x| x.is_ident("forbid"))
            && t.get(i + 4).is_some_and(|x| x.is("("))
            && {
                let close = scan.matching(i + 4);
                t[i + 5..close].iter().any(|x| x.is_ident("unsafe_code"))
            }
    })
}
