//! `cargo xtask size [--json]`: the static footprints of hsakmt-rs.
//!
//! - the embedded proof, `hsakmt-image` (`firmware-tests/image`): `#![no_std]`, `#![no_main]`,
//!   no libc, linked with `-nostartfiles -static`, non-PIE;
//! - the `hsakmt` command-line tool linked statically against glibc (`+crt-static`, non-PIE);
//! - the default topology snapshot (`size_of::<Topology>()`).
//!
//! Both binaries are built with the workspace's `min` profile (`opt-level = "s"`, fat LTO, one
//! codegen unit, `panic = "abort"`, stripped) for an explicitly named
//! `x86_64-unknown-linux-gnu` target, so the link flags (passed as `CARGO_ENCODED_RUSTFLAGS`)
//! reach the binaries only and not build scripts. Each build has its own target directory under
//! `$CARGO_TARGET_DIR/xtask-size/` because the flags differ and cargo would otherwise rebuild
//! the shared dependencies each time.
//!
//! Goals are reported, not enforced: the command fails only when a build fails, a binary is not
//! static, or the snapshot exceeds its budget.

use std::path::PathBuf;
use std::process::Command;

use hsakmt_core::topology::Topology;

use crate::elf::{self, Linkage};
use crate::{cargo, workspace_root};

/// Budget for the default topology snapshot.
pub(crate) const SNAPSHOT_BUDGET: usize = 512 * 1024;
/// Goal for the stripped image.
pub(crate) const IMAGE_GOAL: u64 = 128 * 1024;
/// Goal for the stripped static `hsakmt`.
pub(crate) const HSAKMT_GOAL: u64 = 2 * 1024 * 1024;

/// The target both static builds name explicitly.
pub(crate) const TARGET: &str = "x86_64-unknown-linux-gnu";

/// Flags of the no-libc image: our own `_start`, no C runtime, absolute addresses.
const IMAGE_RUSTFLAGS: &[&str] =
    &["-Clink-arg=-nostartfiles", "-Clink-arg=-static", "-Crelocation-model=static"];
/// Flags of the static `hsakmt`: glibc linked in. Non-PIE, as the image: a static PIE carries
/// a relocation per pointer of its tables (about 270 KB for the simulator's embedded profiles).
const CLI_RUSTFLAGS: &[&str] = &["-Ctarget-feature=+crt-static", "-Crelocation-model=static"];

/// A binary built by [`build_image`] or [`build_cli`].
#[derive(Debug)]
pub(crate) struct Built {
    /// Where it is.
    pub(crate) path: PathBuf,
    /// Its size in bytes.
    pub(crate) bytes: u64,
    /// How it is linked.
    pub(crate) linkage: Linkage,
}

/// Builds `hsakmt-image` (see the module docs) and checks it is static.
pub(crate) fn build_image() -> Result<Built, String> {
    build(
        "hsakmt-image",
        &["-p", "hsakmt-image", "--features", "image"],
        IMAGE_RUSTFLAGS,
        "image",
        "hsakmt-image",
    )
}

/// Builds the `hsakmt` binary statically (see the module docs) and checks it is static.
pub(crate) fn build_cli() -> Result<Built, String> {
    build("hsakmt (static)", &["-p", "hsakmt-cli"], CLI_RUSTFLAGS, "cli", "hsakmt")
}

/// The directory cargo builds into (`$CARGO_TARGET_DIR`, else `target/`).
pub(crate) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

fn build(
    what: &str,
    package: &[&str],
    rustflags: &[&str],
    dir: &str,
    bin: &str,
) -> Result<Built, String> {
    let target_dir = target_dir().join("xtask-size").join(dir);
    eprintln!("==> building {what}: --profile min --target {TARGET}, {}", rustflags.join(" "));
    let mut cmd = cargo();
    cmd.args(["build", "--profile", "min", "--target", TARGET])
        .args(package)
        .arg("--target-dir")
        .arg(&target_dir)
        .env("CARGO_ENCODED_RUSTFLAGS", rustflags.join("\x1f"))
        .env_remove("RUSTFLAGS");
    run_keeping_stdout_clean(&mut cmd)?;
    let path = target_dir.join(TARGET).join("min").join(bin);
    let bytes =
        std::fs::metadata(&path).map_err(|e| format!("cannot stat {}: {e}", path.display()))?.len();
    let linkage = elf::linkage(&path)?;
    if !linkage.is_static() {
        return Err(format!("{} is not static: {linkage:?}", path.display()));
    }
    Ok(Built { path, bytes, linkage })
}

/// Runs `cmd` with its stdout discarded (cargo reports on stderr; stdout stays JSON-clean),
/// failing with its exit status.
fn run_keeping_stdout_clean(cmd: &mut Command) -> Result<(), String> {
    let status = cmd
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("{cmd:?} failed: {status}")) }
}

pub(crate) fn size(args: &[String]) -> Result<(), String> {
    let mut json = false;
    for a in args {
        match a.as_str() {
            "--json" => json = true,
            other => {
                return Err(format!("size: unknown argument `{other}` (usage: size [--json])"));
            }
        }
    }
    let snapshot = core::mem::size_of::<Topology>();
    let image = build_image()?;
    let cli = build_cli()?;
    if json {
        println!(
            "{{\"image_bytes\": {}, \"hsakmt_bytes\": {}, \"snapshot_bytes\": {snapshot}, \
             \"image_goal_bytes\": {IMAGE_GOAL}, \"hsakmt_goal_bytes\": {HSAKMT_GOAL}, \
             \"snapshot_budget_bytes\": {SNAPSHOT_BUDGET}, \"image_linkage\": \"{}\", \
             \"hsakmt_linkage\": \"{}\"}}",
            image.bytes,
            cli.bytes,
            image.linkage.describe(),
            cli.linkage.describe(),
        );
    } else {
        let rows = [
            row("hsakmt-image", image.bytes, "goal", IMAGE_GOAL, &linkage(&image, "no libc")),
            row("hsakmt", cli.bytes, "goal", HSAKMT_GOAL, &linkage(&cli, "glibc +crt-static")),
            row(
                "snapshot",
                snapshot as u64,
                "budget",
                SNAPSHOT_BUDGET as u64,
                "size_of::<Topology>() at default capacity",
            ),
        ];
        for r in rows {
            println!("{r}");
        }
        println!("built: {}", image.path.display());
        println!("       {}", cli.path.display());
    }
    if snapshot > SNAPSHOT_BUDGET {
        return Err(format!("the snapshot exceeds its budget of {SNAPSHOT_BUDGET} bytes"));
    }
    Ok(())
}

fn linkage(built: &Built, how: &str) -> String {
    let stripped = if built.linkage.symtab { "not stripped" } else { "stripped" };
    format!("{}, {how}, {stripped}", built.linkage.describe())
}

/// `hsakmt-image    63864 bytes (62.4 KiB)   goal <= 128 KiB: met   static, ...`.
fn row(name: &str, bytes: u64, kind: &str, limit: u64, note: &str) -> String {
    let verdict = if bytes <= limit {
        "met".to_string()
    } else {
        format!("NOT met (+{} bytes)", bytes - limit)
    };
    let size = format!("{bytes} bytes ({})", human(bytes));
    let goal = format!("{kind} <= {}: {verdict}", human(limit));
    format!("{name:<13}{size:>26}   {goal:<40} {note}")
}

/// `62.4 KiB`, `2.37 MiB`, `128 KiB`.
fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes.is_multiple_of(1024) && bytes < 1 << 20 {
        format!("{} KiB", bytes / 1024)
    } else if bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 20 {
        format!("{:.2} MiB", b / f64::from(1 << 20))
    } else {
        format!("{:.1} KiB", b / 1024.0)
    }
}
