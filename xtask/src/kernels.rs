//! `cargo xtask kernels [--check]`: compiles the project's GPU kernels (`kernels/cl/*.cl`,
//! OpenCL C) into AMDGPU code objects with Debian's `clang-19` (which drives `ld.lld` from
//! `lld-19`), and writes them to `kernels/objects/` together with the table that embeds them
//! (`kernels/src/objects.rs`).
//!
//! `--check` rebuilds everything into a temporary directory — from a copy of the sources
//! there, so a path leaking into an object would show — and compares it byte for byte with
//! the committed files, naming every file that differs, is missing or is not produced by the
//! build. `cargo xtask ci` runs it; when `clang-19` or `ld.lld-19` is missing it installs
//! them with apt (`apt-get update`, then `apt-get install clang-19 lld-19`, through `sudo`
//! when not root), and fails when that is impossible.
//!
//! The build is reproducible: no debug information (so no paths), no timestamps; the objects
//! carry the compiler and linker identification in `.comment`, so a different clang-19
//! release shows as a difference (the committed one is in [`EXPECTED_CLANG`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{run, workspace_root};

/// The compiler.
const CLANG: &str = "clang-19";
/// The linker clang runs (checked to be present; clang finds it in its own directory).
const LLD: &str = "ld.lld-19";
/// The first line of `clang-19 --version` the committed objects were built with.
const EXPECTED_CLANG: &str = "Debian clang version 19.1.7 (3~deb12u1)";

/// The processors every kernel set is built for (code object v5).
const PROCESSORS: &[&str] = &["gfx900", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1201"];

/// A kernel set: its name (also the object directory), the `KernelSet` variant of the
/// kernels crate, and its source file in `kernels/cl`.
struct Set {
    name: &'static str,
    variant: &'static str,
    source: &'static str,
}

const SETS: &[Set] = &[
    Set { name: "control", variant: "Control", source: "control.cl" },
    Set { name: "blit", variant: "Blit", source: "blit.cl" },
    Set { name: "test", variant: "Test", source: "test.cl" },
];

/// Objects beyond the default matrix, for the other code object versions and target
/// feature settings: (set, `-mcpu` target ID, code object version, file name).
const EXTRA: &[(&str, &str, u8, &str)] = &[
    ("control", "gfx900", 4, "gfx900-v4.co"),
    ("test", "gfx900", 4, "gfx900-v4.co"),
    ("control", "gfx9-generic", 6, "gfx9-generic-v6.co"),
    ("control", "gfx942:sramecc+:xnack-", 6, "gfx942-sramecc-on-xnack-off-v6.co"),
];

/// The default code object version.
const DEFAULT_VERSION: u8 = 5;

/// Flags of every compilation (before `-mcpu`, `-mcode-object-version`, the source and
/// `-o`).
const FLAGS: &[&str] = &[
    "-x",
    "cl",
    "-cl-std=CL2.0",
    // Argument names and type names in the metadata.
    "-cl-kernel-arg-info",
    // Division and square root of f32 correctly rounded (exact results to test against).
    "-cl-fp32-correctly-rounded-divide-sqrt",
    "-target",
    "amdgcn-amd-amdhsa",
    "-O2",
    // No ROCm device libraries exist here: the kernels use clang's builtins only.
    "-nogpulib",
    "-Wall",
];

/// One object to build.
struct Object {
    set: &'static Set,
    target_id: &'static str,
    version: u8,
    /// Path under `kernels/objects`.
    file: String,
}

impl Object {
    /// The processor of the target ID (`gfx942` of `gfx942:xnack-`).
    fn processor(&self) -> &'static str {
        self.target_id.split(':').next().unwrap_or(self.target_id)
    }
}

/// Every object, in the order of the generated table.
fn objects() -> Vec<Object> {
    let mut all = Vec::new();
    for set in SETS {
        for p in PROCESSORS {
            all.push(Object {
                set,
                target_id: p,
                version: DEFAULT_VERSION,
                file: format!("{}/{p}.co", set.name),
            });
        }
        for (_, target_id, version, file) in EXTRA.iter().filter(|e| e.0 == set.name) {
            all.push(Object {
                set,
                target_id,
                version: *version,
                file: format!("{}/{file}", set.name),
            });
        }
    }
    all
}

fn kernels_dir() -> PathBuf {
    workspace_root().join("kernels")
}

pub(crate) fn kernels(args: &[String]) -> Result<(), String> {
    match args {
        [] => build_committed(),
        [a] if a == "--check" => check(),
        _ => Err("usage: cargo xtask kernels [--check]".into()),
    }
}

/// `cargo xtask kernels`: rebuilds `kernels/objects` and `kernels/src/objects.rs`.
fn build_committed() -> Result<(), String> {
    ensure_toolchain(false)?;
    let dir = kernels_dir();
    let out = dir.join("objects");
    // Replace the whole tree: objects no longer in the matrix disappear.
    if out.exists() {
        std::fs::remove_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    let objects = objects();
    build_all(&objects, &dir.join("cl"), &out)?;
    let table = dir.join("src/objects.rs");
    std::fs::write(&table, table_source(&objects))
        .map_err(|e| format!("{}: {e}", table.display()))?;
    let mut total = 0u64;
    for o in &objects {
        let len = std::fs::metadata(out.join(&o.file)).map_err(|e| e.to_string())?.len();
        total += len;
        println!("  {:<48} {len:>7} bytes", o.file);
    }
    println!(
        "==> kernels: {} code objects, {total} bytes, table in kernels/src/objects.rs",
        objects.len()
    );
    Ok(())
}

/// `cargo xtask kernels --check`: rebuilds in a temporary directory and compares.
pub(crate) fn check() -> Result<(), String> {
    ensure_toolchain(true)?;
    let dir = kernels_dir();
    let scratch = std::env::temp_dir().join(format!("hsakmt-kernels-check-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let result = check_in(&dir, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn check_in(dir: &Path, scratch: &Path) -> Result<(), String> {
    // Build from a copy of the sources, in another directory than the committed build's.
    let sources = scratch.join("src/cl");
    std::fs::create_dir_all(&sources).map_err(|e| format!("{}: {e}", sources.display()))?;
    let cl = dir.join("cl");
    for entry in std::fs::read_dir(&cl).map_err(|e| format!("{}: {e}", cl.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if let Some(name) = path.file_name() {
            std::fs::copy(&path, sources.join(name))
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    let out = scratch.join("objects");
    let objects = objects();
    build_all(&objects, &sources, &out)?;

    let committed = dir.join("objects");
    let mut problems = Vec::new();
    for o in &objects {
        let fresh = std::fs::read(out.join(&o.file)).map_err(|e| format!("{}: {e}", o.file))?;
        match std::fs::read(committed.join(&o.file)) {
            Ok(old) if old == fresh => {}
            Ok(old) => problems.push(format!(
                "kernels/objects/{} differs from a rebuild ({} bytes committed, {} rebuilt{})",
                o.file,
                old.len(),
                fresh.len(),
                first_difference(&old, &fresh)
                    .map(|at| format!(", first at byte {at}"))
                    .unwrap_or_default()
            )),
            Err(_) => problems.push(format!("kernels/objects/{} is missing", o.file)),
        }
    }
    for file in list_files(&committed)? {
        if !objects.iter().any(|o| o.file == file) {
            problems.push(format!("kernels/objects/{file} is not produced by the build"));
        }
    }
    let table = dir.join("src/objects.rs");
    if std::fs::read_to_string(&table).ok().as_deref() != Some(table_source(&objects).as_str()) {
        problems.push("kernels/src/objects.rs differs from the generated table".into());
    }
    if problems.is_empty() {
        println!("==> kernels --check: {} code objects rebuilt, identical", objects.len());
        return Ok(());
    }
    let version = clang_version().unwrap_or_default();
    let hint = if version == EXPECTED_CLANG {
        String::new()
    } else {
        format!(
            "\nnote: the objects were built with `{EXPECTED_CLANG}`, this machine has `{version}`"
        )
    };
    Err(format!(
        "committed code objects do not match their sources:\n  {}{hint}\nrun `cargo xtask kernels` and commit the result",
        problems.join("\n  ")
    ))
}

fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y).or((a.len() != b.len()).then(|| a.len().min(b.len())))
}

/// Files under `root`, as `/`-separated relative paths, sorted.
fn list_files(root: &Path) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries {
            let entry = entry.map_err(|e| e.to_string())?;
            let path = rel.join(entry.file_name());
            if entry.file_type().map_err(|e| e.to_string())?.is_dir() {
                stack.push(path);
            } else {
                out.push(path.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Compiles every object from `sources` into `out`.
fn build_all(objects: &[Object], sources: &Path, out: &Path) -> Result<(), String> {
    for o in objects {
        let dst = out.join(&o.file);
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let mut cmd = Command::new(CLANG);
        cmd.current_dir(sources)
            .args(FLAGS)
            .arg(format!("-mcpu={}", o.target_id))
            .arg(format!("-mcode-object-version={}", o.version))
            .arg(o.set.source)
            .arg("-o")
            .arg(&dst);
        let output = cmd.output().map_err(|e| format!("cannot run {CLANG}: {e}"))?;
        // Code object v6 draws a "still in development" warning from the driver; anything
        // else clang says is shown.
        let stderr = String::from_utf8_lossy(&output.stderr);
        for line in stderr.lines().filter(|l| !l.contains("code object v6 is still in development"))
        {
            eprintln!("{line}");
        }
        if !output.status.success() {
            return Err(format!(
                "{CLANG} failed for {} ({}): {}",
                o.file, o.target_id, output.status
            ));
        }
    }
    Ok(())
}

/// The generated `kernels/src/objects.rs`.
fn table_source(objects: &[Object]) -> String {
    let mut s = String::from(
        "//! The committed code objects. @generated by `cargo xtask kernels` from the matrix in\n\
         //! `xtask/src/kernels.rs`; do not edit.\n\n\
         use crate::{CodeObjectFile, KernelSet};\n\n\
         /// Every committed code object.\n\
         pub(crate) const ALL: &[CodeObjectFile] = &[\n",
    );
    for o in objects {
        s.push_str(&format!(
            "    CodeObjectFile {{\n        \
             set: KernelSet::{},\n        \
             processor: \"{}\",\n        \
             target_id: \"{}\",\n        \
             version: {},\n        \
             path: \"{}\",\n        \
             bytes: include_bytes!(\"../objects/{}\"),\n    \
             }},\n",
            o.set.variant,
            o.processor(),
            o.target_id,
            o.version,
            o.file,
            o.file
        ));
    }
    s.push_str("];\n");
    s
}

fn clang_version() -> Option<String> {
    let out = Command::new(CLANG).arg("--version").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").to_string())
}

fn have_toolchain() -> bool {
    let ok =
        |tool: &str| Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    ok(CLANG) && ok(LLD)
}

/// Makes sure `clang-19` and `ld.lld-19` exist; with `install`, installs them with apt
/// when missing.
fn ensure_toolchain(install: bool) -> Result<(), String> {
    if have_toolchain() {
        return Ok(());
    }
    let missing = format!(
        "{CLANG} and {LLD} are needed to build the kernels (Debian/Ubuntu packages `clang-19 lld-19`)"
    );
    if !install {
        return Err(format!("{missing}: install them with `apt-get install clang-19 lld-19`"));
    }
    println!("==> installing clang-19 and lld-19 with apt-get");
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let apt = |args: &[&str]| {
        let mut cmd = if root {
            Command::new("apt-get")
        } else {
            let mut c = Command::new("sudo");
            c.args(["-n", "apt-get"]);
            c
        };
        cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        run(&mut cmd)
    };
    let installed = apt(&["update"])
        .and_then(|()| apt(&["install", "-y", "--no-install-recommends", "clang-19", "lld-19"]));
    match installed {
        Ok(()) if have_toolchain() => Ok(()),
        Ok(()) => Err(format!("{missing}; apt-get installed the packages but they do not run")),
        Err(e) => Err(format!("{missing}; installing them failed: {e}")),
    }
}
