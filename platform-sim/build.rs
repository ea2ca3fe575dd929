//! Embeds the topology captures under `profiles/` into the simulator: every capture directory
//! with a `topology/` tree becomes a profile holding each file's bytes; a capture that only has
//! an `ls -lR` listing becomes a profile with its directory shape and empty files.
//!
//! Each profile is one DEFLATE-compressed archive (`src/archive.rs`; sysfs text compresses
//! about 15:1), so the captures cost the binary tens of KiB instead of a megabyte of bytes,
//! paths and tables.

#[path = "src/archive.rs"]
#[expect(unreachable_pub, reason = "the simulator's public archive module, included")]
mod archive;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{env, fs};

fn main() {
    let root =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
            .join("profiles");
    println!("cargo::rerun-if-changed={}", root.display());
    let mut names: Vec<PathBuf> = fs::read_dir(&root)
        .expect("platform-sim/profiles exists")
        .map(|e| e.expect("readable profiles dir").path())
        .filter(|p| p.is_dir())
        .collect();
    names.sort();

    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut out = String::from(
        "/// Every embedded profile, sorted by name.\npub(crate) static EMBEDDED: &[EmbeddedTree] = &[\n",
    );
    for dir in &names {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let (files, dirs) = if dir.join("topology").is_dir() {
            walk_tree(&dir.join("topology"))
        } else if dir.join("LISTING-ls-lR.txt").is_file() {
            parse_listing(&dir.join("LISTING-ls-lR.txt"))
        } else {
            continue;
        };
        println!("cargo::rerun-if-changed={}", dir.display());
        let mut archive = Vec::new();
        for d in &dirs {
            archive::write_record(&mut archive, d, None);
        }
        for (rel, abs) in &files {
            let bytes = abs.as_ref().map(|p| fs::read(p).expect("readable capture file"));
            archive::write_record(&mut archive, rel, Some(bytes.as_deref().unwrap_or_default()));
        }
        let packed = archive::pack(&archive);
        let blob = out_dir.join(format!("{name}.deflate"));
        fs::write(&blob, packed).expect("OUT_DIR is writable");
        writeln!(
            out,
            "    EmbeddedTree {{ name: {name:?}, archive: include_bytes!({:?}), raw_len: {} }},",
            blob.display().to_string(),
            archive.len()
        )
        .unwrap();
    }
    out.push_str("];\n");
    fs::write(out_dir.join("profiles.rs"), out).expect("OUT_DIR is writable");
}

type Files = Vec<(String, Option<PathBuf>)>;

fn walk_tree(top: &Path) -> (Files, Vec<String>) {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    let mut stack = vec![top.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).expect("readable capture dir") {
            let p = e.expect("readable entry").path();
            let rel = p.strip_prefix(top).unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                dirs.push(rel);
                stack.push(p);
            } else {
                files.push((rel, Some(fs::canonicalize(&p).expect("capture file exists"))));
            }
        }
    }
    files.sort();
    dirs.sort();
    (files, dirs)
}

/// Turns `ls -lR /sys/class/kfd/kfd/topology` output into the tree's shape. File contents are
/// not in a listing, so files are recorded empty.
fn parse_listing(path: &Path) -> (Files, Vec<String>) {
    let text = fs::read_to_string(path).expect("readable listing");
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let line = line.trim_end();
        if let Some(header) = line.strip_suffix(':') {
            current = header
                .split_once("/topology")
                .map(|(_, rest)| rest.trim_start_matches('/').to_string());
            continue;
        }
        let Some(cur) = &current else { continue };
        let mut fields = line.split_whitespace();
        let Some(mode) = fields.next() else { continue };
        let Some(entry) = line.split_whitespace().last() else { continue };
        let rel = if cur.is_empty() { entry.to_string() } else { format!("{cur}/{entry}") };
        if mode.starts_with('d') {
            dirs.push(rel);
        } else if mode.starts_with('-') {
            files.push((rel, None));
        }
    }
    files.sort();
    dirs.sort();
    (files, dirs)
}
