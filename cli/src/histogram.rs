//! A fixed-size log-linear histogram of non-negative integer measurements (HdrHistogram's
//! layout): memory and recording cost are the same whatever the number of samples, and every
//! percentile is within a bounded relative error of the exact one.
//!
//! Values below `2^SUB_BITS` have a bucket each (exact). Above, each power-of-two range
//! `[2^e, 2^(e+1))` is cut into `2^SUB_BITS` equal buckets of width `2^(e - SUB_BITS)`, so a
//! bucket is at most `1 / 2^SUB_BITS` of its values wide. A percentile is reported as the
//! middle of its bucket (clamped to the exact minimum and maximum), hence within
//! [`RELATIVE_ERROR`] of the exact nearest-rank percentile. The maximum and minimum are kept
//! exactly. Recording is a few instructions: no allocation, no branch on the count.

/// Sub-bucket bits: `2^SUB_BITS` buckets per power of two.
const SUB_BITS: u32 = 7;
/// Buckets per power of two (and exact buckets below `2^SUB_BITS`).
const SUB_BUCKETS: usize = 1 << SUB_BITS;
/// Every `u64` has a bucket: the exact range, then one group per power of two from
/// `2^SUB_BITS` to `2^63`.
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB_BUCKETS;

/// The largest relative distance between a reported percentile and the exact one: half a
/// bucket's width over the bucket's lowest value.
pub(crate) const RELATIVE_ERROR: f64 = 1.0 / (2 * SUB_BUCKETS) as f64;

/// A log-linear histogram (see the module docs). About 59 KiB, allocated once.
#[derive(Clone)]
pub(crate) struct Histogram {
    /// `BUCKETS` counters.
    counts: Box<[u64]>,
    total: u64,
    min: u64,
    max: u64,
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("total", &self.total)
            .field("min", &self.min)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

/// The bucket of `v`.
fn bucket(v: u64) -> usize {
    if v < SUB_BUCKETS as u64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // >= SUB_BITS
    let shift = e - SUB_BITS;
    // The top SUB_BITS + 1 bits: in [2^SUB_BITS, 2^(SUB_BITS + 1)).
    let top = (v >> shift) as usize;
    (shift as usize + 1) * SUB_BUCKETS + (top - SUB_BUCKETS)
}

/// The lowest value and the width of bucket `i`.
fn bounds(i: usize) -> (u64, u64) {
    if i < SUB_BUCKETS {
        return (i as u64, 1);
    }
    let group = i / SUB_BUCKETS; // >= 1
    let shift = (group - 1) as u32;
    let top = (SUB_BUCKETS + i % SUB_BUCKETS) as u64;
    (top << shift, 1u64 << shift)
}

impl Histogram {
    /// An empty histogram.
    pub(crate) fn new() -> Self {
        Self { counts: vec![0; BUCKETS].into_boxed_slice(), total: 0, min: u64::MAX, max: 0 }
    }

    /// Counts one measurement.
    pub(crate) fn record(&mut self, v: u64) {
        if let Some(c) = self.counts.get_mut(bucket(v)) {
            *c = c.saturating_add(1);
        }
        self.total = self.total.saturating_add(1);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Adds every measurement of `other`.
    pub(crate) fn merge(&mut self, other: &Histogram) {
        for (c, o) in self.counts.iter_mut().zip(other.counts.iter()) {
            *c = c.saturating_add(*o);
        }
        self.total = self.total.saturating_add(other.total);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Measurements recorded.
    pub(crate) fn len(&self) -> u64 {
        self.total
    }

    /// The largest measurement (exact); 0 when empty.
    pub(crate) fn max(&self) -> u64 {
        self.max
    }

    /// The `p`th percentile by nearest rank (`0 < p <= 100`), within [`RELATIVE_ERROR`]; 0
    /// when empty. `p = 100` is the exact maximum.
    pub(crate) fn percentile(&self, p: f64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let rank = ((p.clamp(0.0, 100.0) / 100.0) * self.total as f64).ceil().max(1.0) as u64;
        if rank >= self.total {
            return self.max as f64;
        }
        let mut seen = 0u64;
        for (i, c) in self.counts.iter().enumerate() {
            seen = seen.saturating_add(*c);
            if seen >= rank {
                let (low, width) = bounds(i);
                let mid = low as f64 + (width - 1) as f64 / 2.0;
                return mid.clamp(self.min as f64, self.max as f64);
            }
        }
        self.max as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn buckets_tile_every_u64() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(127), 127);
        assert_eq!(bucket(128), 128);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
        let mut next = 0u64;
        for i in 0..BUCKETS {
            let (low, width) = bounds(i);
            assert_eq!(low, next, "bucket {i} starts where {} ended", i.wrapping_sub(1));
            assert_eq!(bucket(low), i);
            assert_eq!(bucket(low + (width - 1)), i);
            assert!(i < SUB_BUCKETS || width as f64 / low as f64 <= 2.0 * RELATIVE_ERROR);
            next = low.wrapping_add(width);
        }
        assert_eq!(next, 0, "the last bucket ends at 2^64");
    }

    #[test]
    fn exact_below_the_sub_bucket_range_and_at_the_ends() {
        let mut h = Histogram::new();
        assert_eq!((h.len(), h.max(), h.percentile(50.0)), (0, 0, 0.0));
        for v in (1..=100).rev() {
            h.record(v);
        }
        assert_eq!(h.percentile(50.0), 50.0);
        assert_eq!(h.percentile(99.0), 99.0);
        assert_eq!(h.percentile(100.0), 100.0);
        assert_eq!(h.max(), 100);
        h.record(u64::MAX);
        assert_eq!(h.percentile(100.0), u64::MAX as f64);
    }

    #[test]
    fn memory_does_not_grow_with_the_count() {
        let mut h = Histogram::new();
        let before = std::mem::size_of_val(&*h.counts);
        for v in 0..1_000_000u64 {
            h.record(v.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40);
        }
        assert_eq!(std::mem::size_of_val(&*h.counts), before);
        assert_eq!(h.len(), 1_000_000);
    }

    fn exact(sorted: &[u64], p: f64) -> f64 {
        let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
        sorted[rank.min(sorted.len()) - 1] as f64
    }

    proptest! {
        /// p50, p99, p99.9 and max within the bound of the exact nearest-rank values, for
        /// any values, recorded whole or merged from two halves.
        #[test]
        fn percentiles_within_the_relative_error(
            mut values in proptest::collection::vec(any::<u64>().prop_map(|v| v >> (v % 64)), 1..400),
            split in 0usize..400,
        ) {
            let (mut a, mut b) = (Histogram::new(), Histogram::new());
            let split = split.min(values.len());
            for v in &values[..split] { a.record(*v); }
            for v in &values[split..] { b.record(*v); }
            a.merge(&b);
            values.sort_unstable();
            for p in [50.0, 99.0, 99.9, 100.0] {
                let want = exact(&values, p);
                let got = a.percentile(p);
                prop_assert!((got - want).abs() <= want * RELATIVE_ERROR + 0.5,
                    "p{p}: {got} vs exact {want}");
            }
            prop_assert_eq!(a.max(), *values.last().unwrap());
        }
    }
}
