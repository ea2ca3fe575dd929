//! `hsakmt bench`: benchmarks of the real code paths, each reported next to a reference
//! measured in the same run.

#[cfg(feature = "capi-bench")]
mod capi;
mod event;
mod memory;
mod queue;
mod stats;
mod topology;

use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::output::Failure;

pub(crate) use stats::Samples;

/// Which benchmark group to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Group {
    /// Topology snapshot vs a plain read of the same files; in-memory parse.
    Topology,
    /// Allocate + free pairs through the library over the simulator, and the library's own
    /// share, next to the simulator's two ioctls.
    Memory,
    /// AQL submission vs bare stores, dispatch latency and SDMA copies on the simulator.
    Queue,
    /// Event set-to-wake latency and wait-any over the simulator vs a condition-variable
    /// handoff; query cost.
    Event,
    /// The C ABI (hsakmt-capi's exported functions, called in-process) against the Rust
    /// facade on the same calls (needs the `capi-bench` feature, which `cargo xtask bench`
    /// turns on).
    Capi,
}

/// Arguments of `hsakmt bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// Groups to run (all when none is given).
    #[arg(value_enum)]
    groups: Vec<Group>,
    /// Print `{"results": [...]}` instead of a table.
    #[arg(long)]
    json: bool,
    /// Scale the iteration counts (0.1 for a quick look, 10 for steadier figures); from 0.001
    /// to 100.
    #[arg(long, default_value_t = 1.0, value_parser = parse_scale)]
    scale: f64,
}

/// The smallest `--scale`: every benchmark still takes its minimum of samples.
const SCALE_MIN: f64 = 0.001;
/// The largest `--scale`: a hundred times the default counts (minutes per group).
const SCALE_MAX: f64 = 100.0;

/// Parses `--scale`: a finite number from [`SCALE_MIN`] to [`SCALE_MAX`].
fn parse_scale(text: &str) -> Result<f64, String> {
    let range = format!("a number from {SCALE_MIN} to {SCALE_MAX}");
    let v: f64 = text.trim().parse().map_err(|_| format!("not a number; give {range}"))?;
    if !v.is_finite() {
        return Err(format!("{v} is not finite; give {range}"));
    }
    if !(SCALE_MIN..=SCALE_MAX).contains(&v) {
        return Err(format!("{v} is outside the range; give {range}"));
    }
    Ok(v)
}

/// One benchmark figure.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Row {
    pub(crate) name: String,
    pub(crate) unit: &'static str,
    pub(crate) p50: f64,
    pub(crate) p99: f64,
    pub(crate) max: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reference: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reference_p50: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ratio: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) goal: Option<String>,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub(crate) extra: serde_json::Map<String, serde_json::Value>,
}

impl Row {
    /// A row of latencies in nanoseconds without a reference.
    pub(crate) fn latency(name: impl Into<String>, s: &Samples) -> Self {
        Self {
            name: name.into(),
            unit: "ns",
            p50: s.percentile(50.0),
            p99: s.percentile(99.0),
            max: s.max(),
            reference: None,
            reference_p50: None,
            ratio: None,
            goal: None,
            extra: serde_json::Map::new(),
        }
    }

    /// Adds the reference measured in the same run and the ratio of the medians.
    pub(crate) fn against(mut self, reference: &'static str, r: &Samples) -> Self {
        let rp50 = r.percentile(50.0);
        self.reference = Some(reference);
        self.reference_p50 = Some(rp50);
        self.ratio = Some(if rp50 > 0.0 { self.p50 / rp50 } else { f64::NAN });
        self
    }

    /// Records the goal this figure is held to.
    pub(crate) fn goal(mut self, goal: impl Into<String>) -> Self {
        self.goal = Some(goal.into());
        self
    }
}

pub(crate) fn run(args: &BenchArgs) -> Result<(), Failure> {
    let groups = if args.groups.is_empty() {
        let mut all = vec![Group::Topology, Group::Memory, Group::Event, Group::Queue];
        if cfg!(feature = "capi-bench") {
            all.push(Group::Capi);
        }
        all
    } else {
        args.groups.clone()
    };
    let mut rows = Vec::new();
    for g in groups {
        match g {
            Group::Topology => rows.extend(topology::run(args.scale)?),
            Group::Memory => rows.extend(memory::run(args.scale)?),
            Group::Queue => rows.extend(queue::run(args.scale)?),
            Group::Event => rows.extend(event::run(args.scale)?),
            #[cfg(feature = "capi-bench")]
            Group::Capi => rows.extend(capi::run(args.scale)?),
            #[cfg(not(feature = "capi-bench"))]
            Group::Capi => {
                return Err(Failure::from(
                    "this hsakmt was built without the C library (feature `capi-bench`); run \
                     `cargo xtask bench capi`",
                ));
            }
        }
    }
    if args.json {
        let doc = serde_json::json!({ "results": rows });
        let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
        crate::output::emit(&format!("{text}\n"))
    } else {
        print_table(&rows)
    }
}

fn print_table(rows: &[Row]) -> Result<(), Failure> {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<44} {:>12} {:>12} {:>12} {:>18} {:>7}  goal",
        "benchmark", "p50", "p99", "max", "reference p50", "ratio"
    );
    for r in rows {
        let fmt = |v: f64| match r.unit {
            "ns" if v >= 1e6 => format!("{:.2} ms", v / 1e6),
            "ns" if v >= 1e3 => format!("{:.2} us", v / 1e3),
            "ns" => format!("{v:.0} ns"),
            unit => format!("{v:.3e} {unit}"),
        };
        let _ = writeln!(
            s,
            "{:<44} {:>12} {:>12} {:>12} {:>18} {:>7}  {}",
            r.name,
            fmt(r.p50),
            fmt(r.p99),
            fmt(r.max),
            r.reference_p50.map_or_else(|| "-".into(), fmt),
            r.ratio.map_or_else(|| "-".into(), |x| format!("{x:.2}")),
            r.goal.as_deref().unwrap_or("")
        );
    }
    crate::output::emit(&s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn scale_is_finite_positive_and_bounded() {
        assert_eq!(parse_scale("0.1"), Ok(0.1));
        assert_eq!(parse_scale("100"), Ok(100.0));
        for (bad, why) in [
            ("inf", "not finite"),
            ("-inf", "not finite"),
            ("nan", "not finite"),
            ("1e6", "outside"),
            ("0", "outside"),
            ("-1", "outside"),
            ("1e-9", "outside"),
            ("x", "not a number"),
            ("", "not a number"),
        ] {
            let e = parse_scale(bad).unwrap_err();
            assert!(e.contains(why) && e.contains("from 0.001 to 100"), "{bad}: {e}");
        }
    }

    proptest! {
        #[test]
        fn any_scale_text_is_in_range_or_refused(text in "\\PC*|[-+0-9.eEinfa]{0,12}") {
            if let Ok(v) = parse_scale(&text) {
                prop_assert!(v.is_finite() && (SCALE_MIN..=SCALE_MAX).contains(&v));
            }
        }
    }
}
