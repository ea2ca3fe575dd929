//! `hsakmt bench --check`: every goal of every row evaluated, a table of what was met and
//! missed, and the verdict of the run.
//!
//! A row is *missed* when one of its goals is; *invalid* when one of its goals cannot be
//! evaluated (the row lacks the metric, or its value is not a finite number), which always
//! fails the check. Under `--quick` timing goals are evaluated and shown but a miss does not
//! fail the check (the counts are too small to mean anything); count goals still do.

use serde::Serialize;

use super::Row;
use super::goal::{self, Goal, Kind, Verdict};

/// A row's standing against all its goals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowVerdict {
    /// Every goal met (or the row has none).
    Met,
    /// A goal missed.
    Missed,
    /// A goal could not be evaluated.
    Invalid,
}

/// Evaluates every goal of `row`; timing goals count only when `timing` (or always, for
/// [`RowVerdict::Invalid`]).
pub(crate) fn verdict(row: &Row, quick: bool) -> RowVerdict {
    let mut out = RowVerdict::Met;
    for g in &row.goals {
        match goal::evaluate(g, row).1 {
            Verdict::Invalid => return RowVerdict::Invalid,
            Verdict::Missed if !(quick && g.kind == Kind::Timing) => out = RowVerdict::Missed,
            _ => {}
        }
    }
    out
}

/// One goal with its outcome.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Evaluated {
    #[serde(flatten)]
    pub(crate) goal: Goal,
    /// The row's value of the metric (`null` when it has none).
    pub(crate) value: Option<f64>,
    pub(crate) verdict: Verdict,
}

/// A row as reported: its figures, its goals evaluated, and how many times it was measured.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RowReport<'r> {
    #[serde(flatten)]
    pub(crate) row: &'r Row,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) goals: Vec<Evaluated>,
    pub(crate) attempts: u32,
}

/// The verdict of a run.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Summary {
    /// Goals evaluated.
    pub(crate) goals: usize,
    pub(crate) met: usize,
    pub(crate) missed: usize,
    /// Timing goals missed under `--quick`, which do not fail the check.
    pub(crate) missed_not_enforced: usize,
    pub(crate) invalid: usize,
    /// Whether the check passes.
    pub(crate) passed: bool,
}

impl Summary {
    /// The failure message of a check that did not pass.
    pub(crate) fn failure(&self) -> String {
        format!(
            "bench --check: {} of {} goals missed, {} invalid",
            self.missed, self.goals, self.invalid
        )
    }
}

/// Every row's goals evaluated, with the summary.
#[derive(Debug)]
pub(crate) struct Report<'r> {
    pub(crate) rows: Vec<RowReport<'r>>,
    pub(crate) summary: Summary,
    quick: bool,
}

impl<'r> Report<'r> {
    /// Evaluates the goals of `rows` (measured `attempts[i]` times each).
    pub(crate) fn new(rows: &'r [Row], attempts: &[u32], quick: bool) -> Self {
        let mut summary = Summary {
            goals: 0,
            met: 0,
            missed: 0,
            missed_not_enforced: 0,
            invalid: 0,
            passed: true,
        };
        let rows: Vec<RowReport<'r>> = rows
            .iter()
            .zip(attempts.iter().chain(std::iter::repeat(&1)))
            .map(|(row, &attempts)| {
                let goals = row
                    .goals
                    .iter()
                    .map(|g| {
                        let (value, verdict) = goal::evaluate(g, row);
                        summary.goals += 1;
                        match verdict {
                            Verdict::Met => summary.met += 1,
                            Verdict::Missed if quick && g.kind == Kind::Timing => {
                                summary.missed_not_enforced += 1;
                            }
                            Verdict::Missed => summary.missed += 1,
                            Verdict::Invalid => summary.invalid += 1,
                        }
                        Evaluated { goal: g.clone(), value, verdict }
                    })
                    .collect();
                RowReport { row, goals, attempts }
            })
            .collect();
        summary.passed = summary.missed == 0 && summary.invalid == 0;
        Report { rows, summary, quick }
    }

    /// The met/missed table.
    pub(crate) fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<44} {:<26} {:>12} {:>8}  {:<8} attempts",
            "goal of", "goal", "value", "", "verdict"
        );
        for r in &self.rows {
            for e in &r.goals {
                let value =
                    e.value.map_or_else(|| "-".to_string(), |v| display(&e.goal.metric, r.row, v));
                let verdict = match e.verdict {
                    Verdict::Met => "met",
                    Verdict::Missed if self.quick && e.goal.kind == Kind::Timing => {
                        "missed (timing, not enforced under --quick)"
                    }
                    Verdict::Missed => "MISSED",
                    Verdict::Invalid => "INVALID",
                };
                let _ = writeln!(
                    s,
                    "{:<44} {:<26} {:>12} {:>8}  {:<8} {}",
                    r.row.name,
                    e.goal.describe(),
                    value,
                    "",
                    verdict,
                    r.attempts
                );
            }
        }
        let m = &self.summary;
        let _ = writeln!(
            s,
            "{} goals: {} met, {} missed{}, {} invalid: {}",
            m.goals,
            m.met,
            m.missed,
            if m.missed_not_enforced > 0 {
                format!(" (+{} timing goals not enforced under --quick)", m.missed_not_enforced)
            } else {
                String::new()
            },
            m.invalid,
            if m.passed { "PASSED" } else { "FAILED" }
        );
        s
    }
}

/// A goal's value for reading: times in the row's unit, ratios and counts as numbers.
fn display(metric: &str, row: &Row, v: f64) -> String {
    match metric {
        "p50" | "p99" | "p99.9" | "max" => super::format_value(row.unit, v),
        _ if v.fract() == 0.0 && v.abs() < 1e15 => format!("{v:.0}"),
        _ => format!("{v:.3}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, ratio: f64, goals: &[Goal]) -> Row {
        let mut r = Row::blank(name, "ns");
        r.p50 = 10.0;
        r.ratio = Some(ratio);
        r.extra.insert("ioctls".into(), 2.into());
        r.goals = goals.to_vec();
        r
    }

    #[test]
    fn a_missed_or_invalid_goal_fails_the_check() {
        let rows = [
            row("a", 1.1, &[Goal::new("ratio", 1.25)]),
            row("b", 1.3, &[Goal::new("ratio", 1.25), Goal::new("ioctls", 2.0)]),
            row("c", 1.0, &[]),
        ];
        let report = Report::new(&rows, &[1, 3, 1], false);
        assert_eq!((report.summary.goals, report.summary.met, report.summary.missed), (3, 2, 1));
        assert!(!report.summary.passed);
        assert_eq!(verdict(&rows[1], false), RowVerdict::Missed);
        assert_eq!(verdict(&rows[2], false), RowVerdict::Met);
        let t = report.table();
        assert!(t.contains("MISSED") && t.contains("FAILED"), "{t}");

        let bad = [row("d", 1.0, &[Goal::new("absent", 1.0)])];
        let report = Report::new(&bad, &[1], true);
        assert_eq!(report.summary.invalid, 1);
        assert!(!report.summary.passed, "an invalid goal fails even under --quick");
    }

    #[test]
    fn quick_enforces_counts_not_timings() {
        let rows = [row("b", 1.3, &[Goal::new("ratio", 1.25), Goal::new("ioctls", 2.0)])];
        let report = Report::new(&rows, &[1], true);
        assert!(report.summary.passed);
        assert_eq!(report.summary.missed_not_enforced, 1);
        assert_eq!(verdict(&rows[0], true), RowVerdict::Met);
        let counts = [row("e", 1.0, &[Goal::new("ioctls", 1.0)])];
        assert!(!Report::new(&counts, &[1], true).summary.passed);
    }

    #[test]
    fn the_json_carries_each_goal_with_its_value_and_verdict() {
        let rows = [row("b", 1.3, &[Goal::new("ratio", 1.25)])];
        let report = Report::new(&rows, &[2], false);
        let v = serde_json::to_value(&report.rows).unwrap();
        assert_eq!(v[0]["name"], "b");
        assert_eq!(v[0]["attempts"], 2);
        assert_eq!(
            v[0]["goals"][0],
            serde_json::json!({
                "metric": "ratio", "max": 1.25, "kind": "timing", "value": 1.3, "verdict": "missed"
            })
        );
    }
}
