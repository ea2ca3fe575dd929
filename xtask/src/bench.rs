//! `cargo xtask bench`: with no arguments, runs `hsakmt bench --check --json` (release build,
//! with the C ABI benchmark) and writes `BENCHMARKS.md` — the table of every row with its goals
//! met or missed, the machine, the date and the command, and the AQL submit paths' instructions
//! per packet (cachegrind, when `valgrind` is installed) — then fails if a goal was missed.
//! With arguments, runs `hsakmt bench ARGS` and prints what it prints.

use std::fmt::Write as _;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::{cargo, run, workspace_root};

/// The file the table goes to, at the workspace root.
const OUTPUT: &str = "BENCHMARKS.md";

/// The release build of `hsakmt` with the C ABI benchmark, ready for `bench` arguments.
fn hsakmt_bench() -> Command {
    let mut cmd = cargo();
    cmd.args(["run", "--release", "--quiet", "-p", "hsakmt-cli", "--features", "capi-bench"])
        .args(["--", "bench"]);
    cmd
}

pub(crate) fn bench(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return run(hsakmt_bench().args(args));
    }
    let started = output_of("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
    let out = hsakmt_bench()
        .args(["--check", "--json"])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run hsakmt bench: {e}"))?;
    let doc: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("hsakmt bench --check --json printed no report ({e})"))?;
    let mut text = render(&doc, &started, &machine());
    text.push_str(&instructions_section(&instructions()));
    let path = workspace_root().join(OUTPUT);
    std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    println!("wrote {}", path.display());
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("goals missed (see {OUTPUT}): {}", out.status))
    }
}

/// The AQL submit paths `hsakmt bench --submit-only` takes, with the rows they belong to.
/// The `1p` floor comes last: the table's ratios are to it.
const SUBMIT_PATHS: [(&str, &str); 4] = [
    ("1p", "queue.aql_submit.1p"),
    ("1p.mp", "queue.aql_submit.1p.mp"),
    ("floor.mp", "the floor of queue.aql_submit.1p.mp"),
    ("floor", "the floor of queue.aql_submit.1p"),
];
/// The two packet counts whose instruction counts are subtracted.
const PACKETS: (u64, u64) = (1024, 2048);

/// Instructions per packet of each submit path, from cachegrind: the release `hsakmt` (built
/// by the bench run) submits [`PACKETS`]`.0` and then `.1` packets, and the difference of the
/// two runs' counts, over the difference of packets, is the path's own (setup cancels).
/// `Err` says why there are no counts (no valgrind, a failed run).
fn instructions() -> Result<Vec<(&'static str, f64)>, String> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| workspace_root().join("target"), std::path::PathBuf::from);
    let hsakmt = target.join("release").join("hsakmt");
    let count = |path: &str, packets: u64| -> Result<u64, String> {
        let out = Command::new("valgrind")
            .args(["--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"])
            .arg(&hsakmt)
            .args(["bench", "--submit-only", path, "--packets", &packets.to_string()])
            .output()
            .map_err(|e| format!("valgrind could not be run ({e}); install it to count"))?;
        let text = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            return Err(format!("cachegrind of `{path}` failed: {}", text.trim()));
        }
        instruction_refs(&text).ok_or_else(|| format!("cachegrind of `{path}` reported no count"))
    };
    SUBMIT_PATHS
        .iter()
        .map(|(path, row)| {
            let (a, b) = (count(path, PACKETS.0)?, count(path, PACKETS.1)?);
            Ok((*row, b.saturating_sub(a) as f64 / (PACKETS.1 - PACKETS.0) as f64))
        })
        .collect()
}

/// The `I refs` total of cachegrind's summary (`==1== I   refs:      1,121,148`).
fn instruction_refs(stderr: &str) -> Option<u64> {
    let line = stderr.lines().find(|l| l.contains("I   refs:") || l.contains("I refs:"))?;
    let digits: String = line.rsplit(':').next()?.chars().filter(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Markdown of the instruction counts, or of why there are none.
fn instructions_section(counts: &Result<Vec<(&str, f64)>, String>) -> String {
    let mut s = String::from(
        "\n## Instructions per packet\n\nUser-mode instructions per NOP packet (valgrind \
         cachegrind, exact and the same on a loaded machine): `hsakmt bench --submit-only PATH \
         --packets N` run for two counts, the difference divided by the packets.\n\n",
    );
    match counts {
        Err(why) => {
            let _ = writeln!(s, "Not measured: {why}.");
        }
        Ok(rows) => {
            let floor = rows.last().map_or(f64::NAN, |r| r.1);
            let _ = writeln!(s, "| path | instructions per packet | ratio to the `1p` floor |");
            let _ = writeln!(s, "|---|---:|---:|");
            for (name, per) in rows {
                let _ = writeln!(s, "| `{name}` | {per:.1} | {:.2} |", per / floor);
            }
        }
    }
    s
}

/// The first line a program prints, or `unknown`.
fn output_of(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

/// The CPU model, its logical CPUs, the kernel and the compiler.
fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')))
        .map_or("unknown CPU", |(_, m)| m.trim());
    let cpus = cpuinfo.lines().filter(|l| l.starts_with("processor")).count();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let rustc = output_of("rustc", &["--version"]);
    format!("{model}, {cpus} logical CPUs; Linux {}; {rustc}", kernel.trim())
}

/// A figure in its unit, scaled for reading (as `hsakmt bench` prints it).
fn figure(unit: &str, v: Option<f64>) -> String {
    match (unit, v) {
        (_, None) => "-".into(),
        ("ns", Some(v)) if v >= 1e6 => format!("{:.2} ms", v / 1e6),
        ("ns", Some(v)) if v >= 1e3 => format!("{:.2} µs", v / 1e3),
        ("ns", Some(v)) if v >= 100.0 => format!("{v:.0} ns"),
        ("ns", Some(v)) => format!("{v:.1} ns"),
        (unit, Some(v)) => format!("{v:.3e} {unit}"),
    }
}

/// A ratio or a count without trailing zeros: `1.25`, `2`.
fn number(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Markdown of the report `doc` (`{"results": [...], "check": {...}}`).
fn render(doc: &Value, date: &str, machine: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Benchmarks\n");
    let _ = writeln!(
        s,
        "Generated by `cargo xtask bench` (`hsakmt bench --check --json`, release build with \
         `capi-bench`) on {date}; do not edit by hand.\n\nMachine: {machine}.\n"
    );
    let _ = writeln!(
        s,
        "Each row is measured next to its reference in the same run; ratio = p50 / reference \
         p50. A missed goal is re-measured up to twice; `attempts` says how often the row ran. \
         Meanings of the rows: `hsakmt bench --help` and the README.\n"
    );
    let _ = writeln!(
        s,
        "| benchmark | p50 | p99 | p99.9 | reference p50 | ratio | goals | attempts |\n\
         |---|---:|---:|---:|---:|---:|---|---:|"
    );
    let rows = doc["results"].as_array().map_or(&[][..], Vec::as_slice);
    for r in rows {
        let unit = r["unit"].as_str().unwrap_or("");
        let goals: Vec<String> = r["goals"]
            .as_array()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .map(|g| {
                let metric = g["metric"].as_str().unwrap_or("?");
                let (max, value) = (g["max"].as_f64(), g["value"].as_f64());
                let show = |v: Option<f64>| match metric {
                    "p50" | "p99" | "p99.9" | "max" => figure(unit, v),
                    _ => v.map_or_else(|| "-".into(), number),
                };
                let verdict = g["verdict"].as_str().unwrap_or("?");
                format!("{metric} ≤ {}: {} ({verdict})", show(max), show(value))
            })
            .collect();
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
            r["name"].as_str().unwrap_or("?"),
            figure(unit, r["p50"].as_f64()),
            figure(unit, r["p99"].as_f64()),
            figure(unit, r["p99.9"].as_f64()),
            figure(unit, r["reference_p50"].as_f64()),
            r["ratio"].as_f64().map_or_else(|| "-".into(), |x| format!("{x:.2}")),
            goals.join("; "),
            r["attempts"]
        );
    }
    let c = &doc["check"];
    let _ = writeln!(
        s,
        "\n{} goals: {} met, {} missed, {} invalid — {}.",
        c["goals"],
        c["met"],
        c["missed"],
        c["invalid"],
        if c["passed"].as_bool() == Some(true) { "passed" } else { "FAILED" }
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_shows_every_row_and_goal_verdict() {
        let doc = serde_json::json!({
            "results": [
                {"name": "queue.x", "unit": "ns", "p50": 120.0, "p99": 2500.0, "p99.9": 3.1e6,
                 "reference_p50": 100.0, "ratio": 1.2, "attempts": 2,
                 "goals": [{"metric": "ratio", "max": 1.25, "kind": "timing", "value": 1.2,
                            "verdict": "met"},
                           {"metric": "p99.9", "max": 2000.0, "kind": "timing", "value": 3.1e6,
                            "verdict": "missed"},
                           {"metric": "allocations", "max": 0.0, "kind": "count", "value": 0.0,
                            "verdict": "met"}]},
                {"name": "queue.copy", "unit": "B/s", "p50": 1.5e9, "p99": 1.0e9, "p99.9": 1.0e9,
                 "attempts": 1}
            ],
            "check": {"goals": 1, "met": 1, "missed": 0, "invalid": 0, "passed": true}
        });
        let t = render(&doc, "2026-01-01 00:00 UTC", "a machine");
        let row = "| `queue.x` | 120 ns | 2.50 µs | 3.10 ms | 100 ns | 1.20 | ratio ≤ 1.25: 1.2 (met); \
                   p99.9 ≤ 2.00 µs: 3.10 ms (missed); allocations ≤ 0: 0 (met) | 2 |";
        assert!(t.contains(row), "{t}");
        assert!(t.contains("| `queue.copy` | 1.500e9 B/s |"), "{t}");
        assert!(t.contains("1 goals: 1 met, 0 missed, 0 invalid — passed."), "{t}");
        assert!(t.contains("2026-01-01 00:00 UTC") && t.contains("a machine"));
    }

    #[test]
    fn instruction_counts_come_from_cachegrinds_summary() {
        let stderr = "==7== Cachegrind\n==7== \n==7== I   refs:      1,121,148\n";
        assert_eq!(instruction_refs(stderr), Some(1_121_148));
        assert_eq!(instruction_refs("==7== no summary"), None);
        let s = instructions_section(&Ok(vec![("queue.x", 160.0), ("floor", 40.0)]));
        assert!(s.contains("| `queue.x` | 160.0 | 4.00 |"), "{s}");
        let s = instructions_section(&Err("valgrind could not be run".into()));
        assert!(s.contains("Not measured: valgrind could not be run."), "{s}");
    }
}
