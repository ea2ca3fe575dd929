//! `cargo xtask tsan [--seconds N]`: the thread stress test (`firmware-tests/tests/stress.rs`)
//! and the core unit tests under ThreadSanitizer, on the nightly toolchain.
//!
//! ThreadSanitizer needs every crate instrumented, the standard library included, so the run
//! rebuilds `std` from source (`-Zbuild-std`, which needs the nightly `rust-src` component;
//! installed here when missing). It builds into its own target directory (`<target>/tsan`), so
//! it never invalidates the normal build.

use std::path::PathBuf;
use std::process::Command;

use crate::{run, workspace_root};

/// The host target (build-std needs it spelled out).
const TARGET: &str = "x86_64-unknown-linux-gnu";

pub(crate) fn tsan(args: &[String]) -> Result<(), String> {
    let mut seconds = 3u64;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => {
                let v = it.next().ok_or("--seconds needs a value")?;
                seconds = v.parse().map_err(|_| format!("--seconds: not a number: {v}"))?;
            }
            other => return Err(format!("unknown argument `{other}` (usage: tsan [--seconds N])")),
        }
    }
    ensure_nightly_rust_src()?;
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| workspace_root().join("target"), PathBuf::from)
        .join("tsan");
    let cargo = |what: &[&str]| {
        let mut cmd = Command::new("cargo");
        cmd.current_dir(workspace_root())
            .arg("+nightly")
            .args(["test", "-Zbuild-std", "--target", TARGET])
            .arg("--target-dir")
            .arg(&target_dir)
            .args(what)
            // Instrument everything; frame pointers give TSan usable stacks.
            .env("RUSTFLAGS", "-Zsanitizer=thread -Cforce-frame-pointers=yes")
            .env("RUSTDOCFLAGS", "-Zsanitizer=thread")
            // Any report fails the run (exit code 66), with the second stack of each race.
            .env("TSAN_OPTIONS", "halt_on_error=1 exitcode=66 second_deadlock_stack=1")
            .env("HSAKMT_STRESS_SECS", seconds.to_string())
            .env_remove("CARGO_TARGET_DIR");
        cmd
    };
    println!("==> tsan: core unit tests");
    run(&mut cargo(&["-p", "hsakmt-core", "--lib"]))?;
    println!("==> tsan: thread stress test ({seconds} s)");
    run(&mut cargo(&["-p", "firmware-tests", "--test", "stress", "--", "--nocapture"]))?;
    println!("==> tsan: no data race reported");
    Ok(())
}

/// Makes sure the nightly toolchain and its `rust-src` component exist, installing the
/// component when it is missing.
fn ensure_nightly_rust_src() -> Result<(), String> {
    let installed = Command::new("rustup")
        .args(["+nightly", "component", "list", "--installed"])
        .output()
        .map_err(|e| format!("cannot run rustup ({e}); ThreadSanitizer needs rustup's nightly"))?;
    if !installed.status.success() {
        return Err("no nightly toolchain: install it with `rustup toolchain install nightly \
                    --component rust-src`"
            .into());
    }
    let list = String::from_utf8_lossy(&installed.stdout);
    if list.lines().any(|l| l.trim() == "rust-src" || l.starts_with("rust-src")) {
        return Ok(());
    }
    println!("==> installing the nightly rust-src component (needed by -Zbuild-std)");
    run(Command::new("rustup").args(["component", "add", "rust-src", "--toolchain", "nightly"]))
        .map_err(|e| {
            format!(
                "{e}\nThreadSanitizer rebuilds the standard library and needs the nightly \
                 `rust-src` component; install it with `rustup component add rust-src \
                 --toolchain nightly` (it needs network access to the Rust distribution server)"
            )
        })
}
