//! Goals as data: each row of `hsakmt bench` names the figures it is held to (`{"metric":
//! "ratio", "max": 1.25}`), and `--check` evaluates them.
//!
//! A goal's metric is a figure of its row: `ratio` (p50 over the reference's p50), `p50`,
//! `p99`, `p99.9`, `max`, `p99.9/p50` (the tail over the median: a realtime loop's bound), or
//! any numeric key of the row's extra figures (`ioctls`, `allocations`, …). A goal whose metric
//! the row does not carry, or whose value is not a finite number, is invalid: that is a failure
//! of the benchmark itself, never a miss to retry.

use serde::Serialize;

/// What kind of figure a goal bounds: timings vary with the machine's load, counts do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    /// A time or a ratio of times: re-measured when missed; not a gate under `--quick`.
    Timing,
    /// A count (system calls, allocations, instructions): the same on every run.
    Count,
}

/// The metrics that are times or ratios of times; every other metric is a count.
const TIMING_METRICS: [&str; 6] = ["ratio", "p50", "p99", "p99.9", "max", "p99.9/p50"];

/// One goal of a row: `metric <= max`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Goal {
    /// The figure bounded (see the module docs).
    pub(crate) metric: String,
    /// Its largest acceptable value, in the row's unit for times (nanoseconds).
    pub(crate) max: f64,
    /// Timing or count.
    pub(crate) kind: Kind,
}

impl Goal {
    /// `metric <= max`; the kind follows from the metric.
    pub(crate) fn new(metric: &str, max: f64) -> Self {
        let kind = if TIMING_METRICS.contains(&metric) { Kind::Timing } else { Kind::Count };
        Self { metric: metric.to_string(), max, kind }
    }

    /// Parses goals written as text, `"ratio <= 1.25"` or `"p50 <= 250 ns, p99.9 <= 2 us"`:
    /// comma-separated `metric <= number [unit]`, times in `ns`, `us` or `ms` (held in
    /// nanoseconds). A part that does not parse becomes a goal on the whole text with no
    /// finite bound, which [`evaluate`] reports invalid: a typo fails the check, never passes.
    pub(crate) fn parse(text: &str) -> Vec<Self> {
        text.split(',')
            .map(|part| Self::parse_one(part).unwrap_or_else(|| Self::new(part.trim(), f64::NAN)))
            .collect()
    }

    fn parse_one(part: &str) -> Option<Self> {
        let (metric, bound) = part.split_once("<=")?;
        let metric = metric.trim();
        let mut words = bound.split_whitespace();
        let number: f64 = words.next()?.parse().ok()?;
        let scale = match words.next() {
            None => 1.0,
            Some("ns") => 1.0,
            Some("us") => 1e3,
            Some("ms") => 1e6,
            Some(_) => return None,
        };
        if metric.is_empty() || words.next().is_some() {
            return None;
        }
        Some(Self::new(metric, number * scale))
    }

    /// The goal as text: `ratio <= 1.25`, `p50 <= 250 ns`.
    pub(crate) fn describe(&self) -> String {
        let unit = if matches!(self.metric.as_str(), "p50" | "p99" | "p99.9" | "max") {
            " ns"
        } else {
            ""
        };
        format!("{} <= {}{unit}", self.metric, trim(self.max))
    }
}

/// What became of a goal once evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Verdict {
    /// The value is within the goal.
    Met,
    /// The value exceeds the goal.
    Missed,
    /// The row does not carry the metric, or its value is not a finite number.
    Invalid,
}

/// A number without trailing zeros (`1.25`, `2000`).
pub(crate) fn trim(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// The value of `metric` among a row's figures; `None` when the row does not carry it.
pub(crate) fn value_of(metric: &str, figures: &super::Row) -> Option<f64> {
    let v = match metric {
        "ratio" => figures.ratio?,
        "p50" => figures.p50,
        "p99" => figures.p99,
        "p99.9" => figures.p999,
        "max" => figures.max,
        "p99.9/p50" if figures.p50 > 0.0 => figures.p999 / figures.p50,
        "p99.9/p50" => return None,
        key => figures.extra.get(key)?.as_f64()?,
    };
    Some(v)
}

/// Evaluates `goal` against `row`: the value and the verdict.
pub(crate) fn evaluate(goal: &Goal, row: &super::Row) -> (Option<f64>, Verdict) {
    match value_of(&goal.metric, row) {
        Some(v) if v.is_finite() && goal.max.is_finite() => {
            (Some(v), if v <= goal.max { Verdict::Met } else { Verdict::Missed })
        }
        v => (v, Verdict::Invalid),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Row;
    use super::*;

    fn row() -> Row {
        let mut r = Row::blank("x", "ns");
        r.p50 = 100.0;
        r.p99 = 300.0;
        r.p999 = 390.0;
        r.max = 9000.0;
        r.ratio = Some(1.3);
        r.extra.insert("ioctls".into(), 2.into());
        r.extra.insert("name".into(), "text".into());
        r
    }

    #[test]
    fn every_metric_is_a_figure_of_the_row() {
        let r = row();
        for (metric, want) in [
            ("ratio", 1.3),
            ("p50", 100.0),
            ("p99", 300.0),
            ("p99.9", 390.0),
            ("max", 9000.0),
            ("p99.9/p50", 3.9),
            ("ioctls", 2.0),
        ] {
            assert_eq!(value_of(metric, &r), Some(want), "{metric}");
        }
        assert_eq!(value_of("name", &r), None, "text is no figure");
        assert_eq!(value_of("absent", &r), None);
    }

    #[test]
    fn goals_are_met_missed_or_invalid() {
        let r = row();
        assert_eq!(evaluate(&Goal::new("ratio", 1.25), &r), (Some(1.3), Verdict::Missed));
        assert_eq!(evaluate(&Goal::new("ratio", 1.3), &r), (Some(1.3), Verdict::Met));
        assert_eq!(evaluate(&Goal::new("p99.9/p50", 4.0), &r).1, Verdict::Met);
        assert_eq!(evaluate(&Goal::new("ioctls", 2.0), &r).1, Verdict::Met);
        assert_eq!(evaluate(&Goal::new("ioctls", 1.0), &r).1, Verdict::Missed);
        assert_eq!(evaluate(&Goal::new("absent", 1.0), &r), (None, Verdict::Invalid));
        let mut nan = row();
        nan.ratio = Some(f64::NAN);
        assert_eq!(evaluate(&Goal::new("ratio", 1.25), &nan).1, Verdict::Invalid);
        let mut zero = row();
        zero.p50 = 0.0;
        assert_eq!(evaluate(&Goal::new("p99.9/p50", 4.0), &zero).1, Verdict::Invalid);
    }

    #[test]
    fn goals_written_as_text_parse_to_data() {
        assert_eq!(Goal::parse("ratio <= 1.25"), vec![Goal::new("ratio", 1.25)]);
        let g = Goal::parse("p50 <= 250 ns, p99.9 <= 2 us, ioctls <= 2");
        assert_eq!(
            g,
            vec![Goal::new("p50", 250.0), Goal::new("p99.9", 2000.0), Goal::new("ioctls", 2.0)]
        );
        assert_eq!(g[2].kind, Kind::Count);
        assert_eq!(g[1].kind, Kind::Timing);
        let r = row();
        for bad in ["ratio < 1.25", "ratio <= fast", "p50 <= 2 parsecs", "<= 2", "ratio <= 1 2 3"] {
            let g = Goal::parse(bad);
            assert_eq!(g.len(), 1, "{bad}");
            assert_eq!(evaluate(&g[0], &r).1, Verdict::Invalid, "{bad} must not pass");
        }
    }

    #[test]
    fn goals_serialise_as_data() {
        let g = serde_json::to_value(Goal::new("ratio", 1.25)).unwrap();
        assert_eq!(g, serde_json::json!({"metric": "ratio", "max": 1.25, "kind": "timing"}));
        assert_eq!(Goal::new("ioctls", 2.0).describe(), "ioctls <= 2");
        assert_eq!(Goal::new("p50", 250.0).describe(), "p50 <= 250 ns");
    }
}
