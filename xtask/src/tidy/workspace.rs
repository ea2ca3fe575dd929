//! The workspace as tidy sees it: its packages (manifests) and Rust files (scanned, assigned
//! to a package, classified as test code or not).

use std::collections::BTreeSet;
use std::path::Path;

use super::manifest::Manifest;
use super::scan::Scanned;

/// A package of the workspace.
#[derive(Debug)]
pub(crate) struct Package {
    pub(crate) name: String,
    /// Its directory relative to the root (`""` for the root), without a trailing `/`.
    pub(crate) dir: String,
    /// Its `Cargo.toml`, relative to the root.
    pub(crate) manifest_path: String,
    pub(crate) manifest: Manifest,
}

/// A Rust source file.
#[derive(Debug)]
pub(crate) struct SourceFile {
    /// Relative to the root, with `/` separators.
    pub(crate) path: String,
    /// The package it belongs to (`None` outside every package).
    pub(crate) package: Option<String>,
    pub(crate) scan: Scanned,
    /// The whole file is test code.
    pub(crate) test: bool,
}

/// The packages and Rust files of a workspace.
#[derive(Debug, Default)]
pub(crate) struct Workspace {
    pub(crate) packages: Vec<Package>,
    pub(crate) files: Vec<SourceFile>,
}

impl Workspace {
    /// Builds a workspace from manifests and sources given as (relative path, text).
    pub(crate) fn from_texts(manifests: &[(&str, &str)], sources: &[(&str, &str)]) -> Self {
        let mut packages: Vec<Package> = manifests
            .iter()
            .filter_map(|(path, text)| {
                let manifest = Manifest::parse(text);
                let name = manifest.name.clone()?;
                let dir = path.strip_suffix("Cargo.toml").unwrap_or("").trim_end_matches('/');
                Some(Package {
                    name,
                    dir: dir.to_string(),
                    manifest_path: (*path).to_string(),
                    manifest,
                })
            })
            .collect();
        packages.sort_by(|a, b| a.dir.cmp(&b.dir));
        let mut files: Vec<SourceFile> = sources
            .iter()
            .map(|(path, text)| SourceFile {
                path: (*path).to_string(),
                package: package_of(&packages, path),
                scan: Scanned::new(text),
                test: false,
            })
            .collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        classify_tests(&mut files);
        Workspace { packages, files }
    }

    /// Reads the workspace under `root` (every `Cargo.toml` and `.rs` file outside `target`
    /// and hidden directories).
    pub(crate) fn load(root: &Path) -> Result<Self, String> {
        let mut manifests = Vec::new();
        let mut sources = Vec::new();
        walk(root, root, &mut |rel, path| {
            let is_manifest = rel == "Cargo.toml" || rel.ends_with("/Cargo.toml");
            if is_manifest || rel.ends_with(".rs") {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                if is_manifest { manifests.push((rel, text)) } else { sources.push((rel, text)) }
            }
            Ok(())
        })?;
        let m: Vec<(&str, &str)> =
            manifests.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
        let s: Vec<(&str, &str)> = sources.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
        Ok(Self::from_texts(&m, &s))
    }

    /// The package named `name`.
    pub(crate) fn package(&self, name: &str) -> Option<&Package> {
        self.packages.iter().find(|p| p.name == name)
    }

    /// The files of package `name`.
    pub(crate) fn files_of<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a SourceFile> {
        self.files.iter().filter(move |f| f.package.as_deref() == Some(name))
    }
}

fn walk(
    root: &Path,
    dir: &Path,
    visit: &mut dyn FnMut(String, &Path) -> Result<(), String>,
) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            if name == "target" || name.starts_with('.') {
                continue;
            }
            walk(root, &path, visit)?;
        } else if kind.is_file() {
            let rel = path.strip_prefix(root).unwrap_or(&path);
            let rel: Vec<String> =
                rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            visit(rel.join("/"), &path)?;
        }
    }
    Ok(())
}

/// The package whose directory holds `path` most closely.
fn package_of(packages: &[Package], path: &str) -> Option<String> {
    packages
        .iter()
        .filter(|p| p.dir.is_empty() || path.starts_with(&format!("{}/", p.dir)))
        .max_by_key(|p| p.dir.len())
        .map(|p| p.name.clone())
}

/// Marks test files: `tests.rs`, files under a `tests/` directory, files that are
/// `#![cfg(test)]`, and the module files declared from a test file or under a test attribute.
fn classify_tests(files: &mut [SourceFile]) {
    for f in files.iter_mut() {
        let parts: Vec<&str> = f.path.split('/').collect();
        let in_tests_dir = parts[..parts.len() - 1].contains(&"tests");
        f.test = in_tests_dir || parts.last() == Some(&"tests.rs") || f.scan.test_file;
    }
    let paths: BTreeSet<String> = files.iter().map(|f| f.path.clone()).collect();
    loop {
        let mut newly = BTreeSet::new();
        for f in files.iter() {
            for decl in &f.scan.mod_decls {
                if !(f.test || decl.test) {
                    continue;
                }
                if let Some(child) = module_file(&f.path, &decl.path, &paths) {
                    newly.insert(child);
                }
            }
        }
        let mut changed = false;
        for f in files.iter_mut() {
            if !f.test && newly.contains(&f.path) {
                f.test = true;
                changed = true;
            }
        }
        if !changed {
            return;
        }
    }
}

/// The file of module `decl` (inline modules, then the declared name) declared in `parent`:
/// `dir/…/name.rs` or `dir/…/name/mod.rs`, where `dir` is the parent's directory for a
/// crate root or `mod.rs`, else the parent's directory plus its stem.
pub(crate) fn module_file(
    parent: &str,
    decl: &[String],
    paths: &BTreeSet<String>,
) -> Option<String> {
    let (dir, file) = parent.rsplit_once('/').unwrap_or(("", parent));
    let stem = file.strip_suffix(".rs").unwrap_or(file);
    let parent_dir = dir.rsplit('/').next().unwrap_or("");
    let root_like = matches!(stem, "mod" | "lib" | "main" | "build")
        || matches!(parent_dir, "bin" | "tests" | "benches" | "examples" | "fuzz_targets");
    let mut base: Vec<&str> = if dir.is_empty() { Vec::new() } else { vec![dir] };
    if !root_like {
        base.push(stem);
    }
    base.extend(decl.iter().map(String::as_str));
    let stem_path = base.join("/");
    [format!("{stem_path}.rs"), format!("{stem_path}/mod.rs")]
        .into_iter()
        .find(|p| paths.contains(p))
}

/// A package's crate roots: `src/lib.rs`, `src/main.rs` and `src/bin/*.rs`.
pub(crate) fn is_crate_root(package: &Package, path: &str) -> bool {
    let prefix = if package.dir.is_empty() { String::new() } else { format!("{}/", package.dir) };
    let Some(rest) = path.strip_prefix(&prefix) else { return false };
    rest == "src/lib.rs"
        || rest == "src/main.rs"
        || rest.strip_prefix("src/bin/").is_some_and(|b| !b.contains('/') && b.ends_with(".rs"))
}
