//! `cargo xtask ci`: every check CI runs, in order, stopping at the first failure.

use std::process::Command;

use crate::{cargo, run};

/// Runs formatting, tidy, lints, tests, the benchmarks' quick check, a CI-sized fuzz run, the
/// uapi layout check, the C library's header check and C test, the kernel code-object check,
/// the no-libc image test and the doc build.
pub(crate) fn ci() -> Result<(), String> {
    step("format", cargo().args(["fmt", "--all", "--", "--check"]))?;
    println!("==> tidy (boundaries, unsafe, file length, capacities, stack sizes)");
    crate::tidy::run(&[])?;
    step(
        "clippy (workspace, all targets)",
        cargo().args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]),
    )?;
    step(
        "clippy (core with defmt)",
        cargo().args([
            "clippy",
            "-p",
            "hsakmt-core",
            "--features",
            "defmt",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    step(
        "clippy (core logging through log)",
        cargo().args(["clippy", "-p", "hsakmt-core", "--features", "log", "--", "-D", "warnings"]),
    )?;
    step(
        "clippy (no_std linux platform)",
        cargo().args([
            "clippy",
            "-p",
            "hsakmt-linux",
            "--no-default-features",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    step(
        "clippy (no_std host memory)",
        cargo().args([
            "clippy",
            "-p",
            "hsakmt-hostmem",
            "--no-default-features",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    step(
        "clippy (no-libc runtime)",
        cargo().args([
            "clippy",
            "-p",
            "hsakmt-linux",
            "--no-default-features",
            "--features",
            "rt",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    step(
        "clippy (no-libc image)",
        cargo().args([
            "clippy",
            "-p",
            "hsakmt-image",
            "--features",
            "image",
            "--profile",
            "min",
            "--target",
            crate::size::TARGET,
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    step(
        "clippy (C library with the DTIF entry points)",
        cargo().args(["clippy", "-p", "hsakmt-capi", "--features", "dtif", "--", "-D", "warnings"]),
    )?;
    step(
        "clippy (hsakmt with the C ABI benchmark)",
        cargo().args([
            "clippy",
            "-p",
            "hsakmt-cli",
            "--all-targets",
            "--features",
            "capi-bench",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    step("tests", cargo().args(["test", "--workspace", "--all-targets"]))?;
    step("doc tests", cargo().args(["test", "--workspace", "--doc"]))?;
    step(
        "bench --check --quick (every row runs, every goal evaluates; counts enforced, timings \
         not: the machine is shared)",
        cargo().args(["run", "--quiet", "-p", "hsakmt-cli", "--", "bench", "--check", "--quick"]),
    )?;
    let mut loom = cargo();
    loom.args(["test", "-p", "hsakmt-core", "--release"])
        .args(["--test", "loom_ring", "--test", "loom_signal_wait"])
        .env("RUSTFLAGS", "--cfg loom")
        .env("CARGO_TARGET_DIR", crate::size::target_dir().join("loom"));
    step("loom (model checks: AQL ring reservation/publish, signal wait/wake)", &mut loom)?;
    println!("==> fuzz (CI-sized: {} s per target, from the seeds)", crate::fuzz::CI_SECONDS);
    crate::fuzz::ci_run()?;
    println!("==> uapi-check");
    crate::uapi_check::run(&[])?;
    println!("==> capi-check (hsakmt-capi's types and functions against the pinned headers)");
    crate::capi_check::run(&[])?;
    println!("==> capi-test (the C library under a C program, .so and .a, every profile)");
    crate::capi_test::run(&[])?;
    println!("==> kernels --check (rebuild the committed code objects with clang-19, compare)");
    crate::kernels::check()?;
    println!("==> image-test (no-libc static image against every simulator profile)");
    crate::image_test::image_test(&[])?;
    println!("==> size (static image and hsakmt against their goals, snapshot budget)");
    crate::size::size(&["--enforce".to_string()])?;
    let mut doc = cargo();
    doc.args(["doc", "--workspace", "--no-deps"]).env("RUSTDOCFLAGS", "-D warnings");
    step("docs", &mut doc)?;
    println!("==> ci: all checks passed");
    Ok(())
}

fn step(name: &str, cmd: &mut Command) -> Result<(), String> {
    println!("==> {name}");
    run(cmd)
}
