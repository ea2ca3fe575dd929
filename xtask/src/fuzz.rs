//! `cargo xtask fuzz [TARGET...] [--seconds N] [--ci] [--write-seeds]`: runs the cargo-fuzz
//! targets of `core/fuzz` (nightly toolchain; installs cargo-fuzz from crates.io when missing).
//!
//! Each target starts from its persistent corpus `core/fuzz/corpus/<target>` (gitignored) plus
//! the committed seeds `core/fuzz/seeds/<target>`; crashes land in
//! `core/fuzz/artifacts/<target>`. `--ci` is the CI-sized run: [`CI_SECONDS`] per target (all
//! but the simulator's `cp_pm4` and `isa`, which need the fuzz crate's `sim` feature) from the seeds
//! alone (a fresh corpus under `core/fuzz/target/ci-corpus`), libFuzzer's output
//! shown only for a failing target. Targets are built without a sanitizer: `hsakmt-core` forbids `unsafe`, so
//! AddressSanitizer would only halve the executions.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::{run, workspace_root};

/// Every fuzz target, as named in `core/fuzz/Cargo.toml`.
pub(crate) const TARGETS: &[&str] = &[
    "topology",
    "apertures",
    "event_data",
    "dmabuf_info",
    "aql",
    "sdma",
    "smi",
    "queue_sizing",
    "code_object",
    "kernel_replies",
    "cp_pm4",
    "isa",
];

/// Targets that need the fuzz crate's `sim` feature (the simulator in process): built only
/// when selected, and left out of the CI-sized run (they double its build time).
const SIM_TARGETS: &[&str] = &["cp_pm4", "isa"];

/// Seconds per target of the CI-sized run.
pub(crate) const CI_SECONDS: u64 = 10;

/// Seconds after which one input counts as a hang.
const UNIT_TIMEOUT: u64 = 10;

/// What one run reported.
struct Outcome {
    target: String,
    executions: Option<u64>,
    corpus: Option<String>,
    failure: Option<String>,
}

pub(crate) fn fuzz(args: &[String]) -> Result<(), String> {
    let mut seconds = 60u64;
    let mut targets = Vec::new();
    let mut ci = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => {
                let v = it.next().ok_or("--seconds needs a value")?;
                seconds = v.parse().map_err(|_| format!("--seconds: not a number: {v}"))?;
            }
            "--ci" => ci = true,
            "--write-seeds" => return crate::fuzz_seeds::write_seeds(&seeds_root()),
            t if TARGETS.contains(&t) => targets.push(t.to_string()),
            other => {
                return Err(format!(
                    "unknown fuzz target or option `{other}` (targets: {})",
                    TARGETS.join(", ")
                ));
            }
        }
    }
    if ci {
        return ci_run();
    }
    if targets.is_empty() {
        targets = TARGETS.iter().map(|t| (*t).to_string()).collect();
    }
    run_targets(&targets, seconds, false)
}

/// The CI step: every target but the simulator's for [`CI_SECONDS`] from its seeds.
pub(crate) fn ci_run() -> Result<(), String> {
    let targets: Vec<String> =
        TARGETS.iter().filter(|t| !SIM_TARGETS.contains(t)).map(|t| (*t).to_string()).collect();
    run_targets(&targets, CI_SECONDS, true)
}

fn fuzz_dir() -> PathBuf {
    workspace_root().join("core/fuzz")
}

fn seeds_root() -> PathBuf {
    fuzz_dir().join("seeds")
}

/// `cargo +nightly fuzz …` in `core/fuzz`, with the environment of a plain invocation (the
/// outer cargo's target directory would mix instrumented and normal builds).
fn cargo_fuzz(args: &[&str]) -> Command {
    let mut cmd = Command::new("cargo");
    cmd.current_dir(fuzz_dir()).arg("+nightly").arg("fuzz").args(args);
    cmd.env_remove("CARGO_TARGET_DIR").env_remove("RUSTFLAGS").env_remove("CARGO");
    cmd
}

fn run_targets(targets: &[String], seconds: u64, ci: bool) -> Result<(), String> {
    ensure_nightly()?;
    ensure_cargo_fuzz()?;
    let started = Instant::now();
    let sim = targets.iter().any(|t| SIM_TARGETS.contains(&t.as_str()));
    let features: &[&str] = if sim { &["--features", "sim"] } else { &[] };
    println!(
        "==> building fuzz targets (cargo +nightly fuzz build --sanitizer none {})",
        features.join(" ")
    );
    run(cargo_fuzz(&["build", "--sanitizer", "none"]).args(features))?;
    let built = started.elapsed();
    let mut outcomes = Vec::new();
    for t in targets {
        println!("==> fuzz {t} for {seconds} s");
        let corpus = if ci {
            let dir = fuzz_dir().join("target/ci-corpus").join(t);
            let _ = std::fs::remove_dir_all(&dir);
            dir
        } else {
            fuzz_dir().join("corpus").join(t)
        };
        std::fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
        let seeds = seeds_root().join(t);
        outcomes.push(run_one(t, features, &corpus, &seeds, seconds, ci)?);
    }
    println!(
        "==> fuzz summary ({} s per target; build {:.0} s, total {:.0} s)",
        seconds,
        built.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    println!("{:<12} {:>12} {:>10}  {:<14} result", "target", "executions", "exec/s", "corpus");
    let mut failed = Vec::new();
    for o in &outcomes {
        let execs = o.executions.map_or("?".into(), |e| e.to_string());
        let rate = o.executions.map_or("?".into(), |e| (e / seconds.max(1)).to_string());
        let result = o.failure.as_deref().unwrap_or("ok");
        let corpus = o.corpus.as_deref().unwrap_or("?");
        println!("{:<12} {:>12} {:>10}  {:<14} {result}", o.target, execs, rate, corpus);
        if o.failure.is_some() {
            failed.push(o.target.as_str());
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "fuzz targets failed: {} (inputs in core/fuzz/artifacts/<target>; reproduce with \
             `cargo +nightly fuzz run --sanitizer none TARGET FILE` in core/fuzz)",
            failed.join(", ")
        ))
    }
}

/// Runs one target, echoing libFuzzer's output (without progress lines in CI) and picking
/// the final statistics out of it.
fn run_one(
    target: &str,
    features: &[&str],
    corpus: &Path,
    seeds: &Path,
    seconds: u64,
    ci: bool,
) -> Result<Outcome, String> {
    let mut cmd = cargo_fuzz(&["run", "--sanitizer", "none"]);
    cmd.args(features).arg(target).arg(corpus);
    if seeds.is_dir() {
        cmd.arg(seeds);
    }
    cmd.arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-timeout={UNIT_TIMEOUT}"))
        .arg("-print_final_stats=1")
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("cannot run cargo fuzz: {e}"))?;
    let mut outcome =
        Outcome { target: target.to_string(), executions: None, corpus: None, failure: None };
    let mut artifact = None;
    // In CI the output is kept and shown only when the target fails.
    let mut kept = Vec::new();
    if let Some(stderr) = child.stderr.take() {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(v) = line.strip_prefix("stat::number_of_executed_units:") {
                outcome.executions = v.trim().parse().ok();
            }
            let mut words = line.split_whitespace();
            if words.nth(1) == Some("DONE")
                && let Some(c) = words.skip_while(|w| *w != "corp:").nth(1)
            {
                outcome.corpus = Some(c.to_string());
            }
            if let Some((_, path)) = line.split_once("Test unit written to ") {
                artifact = Some(path.trim().to_string());
            }
            if ci {
                kept.push(line);
            } else {
                eprintln!("{line}");
            }
        }
    }
    let status = child.wait().map_err(|e| format!("cargo fuzz: {e}"))?;
    if !status.success() {
        for line in &kept {
            eprintln!("{line}");
        }
        outcome.failure = Some(match artifact {
            Some(a) => format!("FAILED: {a}"),
            None => format!("FAILED: {status}"),
        });
    }
    Ok(outcome)
}

fn ensure_nightly() -> Result<(), String> {
    let have = || {
        Command::new("cargo")
            .args(["+nightly", "--version"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if have() {
        return Ok(());
    }
    println!("==> installing the nightly toolchain (cargo-fuzz builds with -Z flags)");
    let installed = run(Command::new("rustup").args([
        "toolchain",
        "install",
        "nightly",
        "--profile",
        "minimal",
    ]));
    if installed.is_ok() && have() {
        return Ok(());
    }
    Err("fuzzing needs the nightly toolchain (cargo-fuzz builds with -Z flags) and it could not \
         be installed: install it with `rustup toolchain install nightly`"
        .into())
}

fn ensure_cargo_fuzz() -> Result<(), String> {
    let have = Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if have {
        return Ok(());
    }
    println!("==> installing cargo-fuzz (cargo install cargo-fuzz --locked; takes minutes)");
    run(Command::new("cargo").args(["install", "cargo-fuzz", "--locked"])).map_err(|e| {
        format!("cargo-fuzz is missing and could not be installed ({e}); install it with `cargo install cargo-fuzz --locked`")
    })
}
