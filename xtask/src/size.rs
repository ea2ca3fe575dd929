//! `cargo xtask size [--json]`: the static footprints of hsakmt-rs.
//!
//! - the embedded proof, `hsakmt-image` (`firmware-tests/image`): `#![no_std]`, `#![no_main]`,
//!   no libc, linked with `-nostartfiles -static`, non-PIE;
//! - the `hsakmt` command-line tool linked statically (non-PIE) against musl, the C library
//!   Rust ships for static binaries (target `x86_64-unknown-linux-musl`); when that target's
//!   standard library is not installed, against glibc (`+crt-static`), saying how to add it.
//!   Static glibc drags in its dynamic loader, locale and `scanf` machinery (reached from
//!   `dlsym` and `pthread_getattr_np` in `std`): that build is about 750 KB larger, over the
//!   goal;
//! - the default topology snapshot (`size_of::<Topology>()`).
//!
//! Both binaries are built with the workspace's `min` profile (`opt-level = "z"`, fat LTO, one
//! codegen unit, `panic = "abort"`, stripped) for an explicitly named target, so the link
//! flags (passed as `CARGO_ENCODED_RUSTFLAGS`) reach the binaries only and not build scripts.
//! Each build has its own target directory under `$CARGO_TARGET_DIR/xtask-size/` because the
//! flags differ and cargo would otherwise rebuild the shared dependencies each time.
//!
//! Goals are reported; with `--enforce` (as `cargo xtask ci` runs it) a binary over its goal
//! fails the command too. It always fails when a build fails, a binary is not static, or the
//! snapshot exceeds its budget.

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

/// The target of the no-libc image (and of the glibc fallback for `hsakmt`).
pub(crate) const TARGET: &str = "x86_64-unknown-linux-gnu";
/// The target of the static `hsakmt`.
const MUSL_TARGET: &str = "x86_64-unknown-linux-musl";

/// Flags of the no-libc image: our own `_start`, no C runtime, absolute addresses.
const IMAGE_RUSTFLAGS: &[&str] =
    &["-Clink-arg=-nostartfiles", "-Clink-arg=-static", "-Crelocation-model=static"];
/// Flags of the static `hsakmt` on musl (static by default). Non-PIE, as the image: a static
/// PIE carries a relocation per pointer of its tables (about 270 KB for the simulator's
/// embedded profiles).
const CLI_MUSL_RUSTFLAGS: &[&str] = &["-Crelocation-model=static"];
/// Flags of the glibc fallback: glibc linked in, non-PIE.
const CLI_GLIBC_RUSTFLAGS: &[&str] = &["-Ctarget-feature=+crt-static", "-Crelocation-model=static"];

/// A binary built by [`build_image`] or [`build_cli`].
#[derive(Debug)]
pub(crate) struct Built {
    /// Where it is.
    pub(crate) path: PathBuf,
    /// Its size in bytes.
    pub(crate) bytes: u64,
    /// How it is linked.
    pub(crate) linkage: Linkage,
    /// The C library inside, for the report.
    pub(crate) libc: &'static str,
}

/// Builds `hsakmt-image` (see the module docs) and checks it is static.
pub(crate) fn build_image() -> Result<Built, String> {
    build(
        "hsakmt-image",
        &["-p", "hsakmt-image", "--features", "image"],
        (TARGET, "no libc"),
        IMAGE_RUSTFLAGS,
        "image",
        "hsakmt-image",
    )
}

/// Builds the `hsakmt` binary statically (see the module docs) and checks it is static.
pub(crate) fn build_cli() -> Result<Built, String> {
    let package = &["-p", "hsakmt-cli"][..];
    if !target_installed(MUSL_TARGET) {
        eprintln!("==> adding the {MUSL_TARGET} standard library (rustup target add)");
        let _ =
            run_keeping_stdout_clean(Command::new("rustup").args(["target", "add", MUSL_TARGET]));
    }
    if target_installed(MUSL_TARGET) {
        let target = (MUSL_TARGET, "musl");
        return build("hsakmt (static)", package, target, CLI_MUSL_RUSTFLAGS, "cli", "hsakmt");
    }
    eprintln!(
        "==> the {MUSL_TARGET} standard library could not be installed (`rustup target add \
         {MUSL_TARGET}`); linking hsakmt against static glibc instead, which is larger"
    );
    let target = (TARGET, "glibc +crt-static");
    build("hsakmt (static)", package, target, CLI_GLIBC_RUSTFLAGS, "cli", "hsakmt")
}

/// Whether the standard library of `target` is installed for the toolchain in use.
fn target_installed(target: &str) -> bool {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(out) =
        Command::new(rustc).args(["--print", "target-libdir", "--target", target]).output()
    else {
        return false;
    };
    let dir = String::from_utf8_lossy(&out.stdout);
    out.status.success()
        && std::fs::read_dir(dir.trim())
            .map(|entries| {
                entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with("libstd-"))
            })
            .unwrap_or(false)
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
    (target, libc): (&str, &'static str),
    rustflags: &[&str],
    dir: &str,
    bin: &str,
) -> Result<Built, String> {
    let target_dir = target_dir().join("xtask-size").join(dir);
    eprintln!("==> building {what}: --profile min --target {target}, {}", rustflags.join(" "));
    let mut cmd = cargo();
    cmd.args(["build", "--profile", "min", "--target", target])
        .args(package)
        .arg("--target-dir")
        .arg(&target_dir)
        .env("CARGO_ENCODED_RUSTFLAGS", rustflags.join("\x1f"))
        .env_remove("RUSTFLAGS");
    run_keeping_stdout_clean(&mut cmd)?;
    let path = target_dir.join(target).join("min").join(bin);
    let bytes =
        std::fs::metadata(&path).map_err(|e| format!("cannot stat {}: {e}", path.display()))?.len();
    let linkage = elf::linkage(&path)?;
    if !linkage.is_static() {
        return Err(format!("{} is not static: {linkage:?}", path.display()));
    }
    Ok(Built { path, bytes, linkage, libc })
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
    let mut enforce = false;
    for a in args {
        match a.as_str() {
            "--json" => json = true,
            "--enforce" => enforce = true,
            other => {
                return Err(format!(
                    "size: unknown argument `{other}` (usage: size [--json] [--enforce])"
                ));
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
             \"hsakmt_linkage\": \"{}\", \"hsakmt_libc\": \"{}\"}}",
            image.bytes,
            cli.bytes,
            image.linkage.describe(),
            cli.linkage.describe(),
            cli.libc,
        );
    } else {
        let rows = [
            row("hsakmt-image", image.bytes, "goal", IMAGE_GOAL, &linkage(&image)),
            row("hsakmt", cli.bytes, "goal", HSAKMT_GOAL, &linkage(&cli)),
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
    if enforce {
        for (name, built, goal) in
            [("hsakmt-image", &image, IMAGE_GOAL), ("hsakmt", &cli, HSAKMT_GOAL)]
        {
            if built.bytes > goal {
                return Err(format!(
                    "{name} is {} bytes, over its goal of {goal} ({})",
                    built.bytes, built.libc
                ));
            }
        }
    }
    Ok(())
}

fn linkage(built: &Built) -> String {
    let stripped = if built.linkage.symtab { "not stripped" } else { "stripped" };
    format!("{}, {}, {stripped}", built.linkage.describe(), built.libc)
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
