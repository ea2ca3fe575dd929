//! `cargo xtask fuzz [TARGET...] [--seconds N]`: runs the cargo-fuzz targets of `core/fuzz`
//! (nightly toolchain; installs cargo-fuzz from crates.io when missing).

use std::process::Command;

use crate::{run, workspace_root};

/// Every fuzz target, as named in `core/fuzz/Cargo.toml`.
pub(crate) const TARGETS: &[&str] = &["topology"];

pub(crate) fn fuzz(args: &[String]) -> Result<(), String> {
    let mut seconds = 60u64;
    let mut targets = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => {
                let v = it.next().ok_or("--seconds needs a value")?;
                seconds = v.parse().map_err(|_| format!("--seconds: not a number: {v}"))?;
            }
            t if TARGETS.contains(&t) => targets.push(t.to_string()),
            other => {
                return Err(format!(
                    "unknown fuzz target `{other}` (known: {})",
                    TARGETS.join(", ")
                ));
            }
        }
    }
    if targets.is_empty() {
        targets = TARGETS.iter().map(|t| (*t).to_string()).collect();
    }
    ensure_cargo_fuzz()?;
    for t in &targets {
        println!("==> fuzz {t} for {seconds} s");
        let dir = workspace_root().join("core/fuzz");
        let corpus = dir.join("corpus").join(t);
        std::fs::create_dir_all(&corpus).map_err(|e| e.to_string())?;
        run(Command::new("cargo")
            .current_dir(&dir)
            .args(["+nightly", "fuzz", "run", t])
            .arg(&corpus)
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            .arg("-print_final_stats=1"))?;
    }
    Ok(())
}

fn ensure_cargo_fuzz() -> Result<(), String> {
    let have = Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if have {
        return Ok(());
    }
    println!("==> installing cargo-fuzz");
    run(Command::new("cargo").args(["install", "cargo-fuzz", "--locked"]))
}
