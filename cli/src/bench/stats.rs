//! Latency samples and their percentiles.

/// A set of measurements (any unit; the benchmarks use nanoseconds).
#[derive(Debug, Default, Clone)]
pub(crate) struct Samples {
    values: Vec<f64>,
    sorted: bool,
}

impl Samples {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self { values: Vec::with_capacity(n), sorted: true }
    }

    pub(crate) fn push(&mut self, v: f64) {
        self.values.push(v);
        self.sorted = false;
    }

    fn sort(&self) -> Vec<f64> {
        let mut v = self.values.clone();
        if !self.sorted {
            v.sort_by(f64::total_cmp);
        }
        v
    }

    /// The `p`th percentile (nearest rank), 0 when empty.
    pub(crate) fn percentile(&self, p: f64) -> f64 {
        let v = self.sort();
        if v.is_empty() {
            return 0.0;
        }
        let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
        v[rank.min(v.len()) - 1]
    }

    /// Appends every measurement of `other`.
    pub(crate) fn extend(&mut self, other: &Samples) {
        self.values.extend_from_slice(&other.values);
        self.sorted = false;
    }

    /// How many measurements exceed `limit`.
    pub(crate) fn count_above(&self, limit: f64) -> usize {
        self.values.iter().filter(|&&v| v > limit).count()
    }

    pub(crate) fn max(&self) -> f64 {
        self.values.iter().copied().fold(0.0, f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let mut s = Samples::with_capacity(100);
        for i in (1..=100).rev() {
            s.push(f64::from(i));
        }
        assert_eq!(s.percentile(50.0), 50.0);
        assert_eq!(s.percentile(99.0), 99.0);
        assert_eq!(s.percentile(100.0), 100.0);
        assert_eq!(s.max(), 100.0);
        assert_eq!(s.count_above(97.0), 3);
        assert_eq!(s.count_above(100.0), 0);
        assert_eq!(Samples::default().percentile(50.0), 0.0);
    }
}
