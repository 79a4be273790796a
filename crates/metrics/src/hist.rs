//! Delay histograms.

use hdrhistogram::Histogram;
use l4s_core::Dur;
use serde::{Deserialize, Serialize};

/// Largest value a histogram tracks: one hour in ns. Larger samples are clamped (and
/// counted in `max`, which is kept exactly).
const HIGHEST_NS: u64 = 3_600_000_000_000;

/// A histogram of durations with 3 significant digits (relative error ≤ 0.1 %).
#[derive(Clone, Debug)]
pub struct LatencyHist {
    h: Histogram<u64>,
    max_ns: u64,
    sum_ns: u128,
}

impl Default for LatencyHist {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHist {
    pub fn new() -> LatencyHist {
        LatencyHist {
            // Auto-resizing: the counts cover up to the largest value recorded, not the
            // whole hour (278 KB per histogram; a flow has two). 3 digits is a constant
            // that hdrhistogram accepts: this cannot fail.
            h: Histogram::new(3).expect("valid histogram precision"),
            max_ns: 0,
            sum_ns: 0,
        }
    }
    /// A smaller histogram (2 significant digits, ≤ 1 % error) for per-interval
    /// snapshots, which are reset often.
    pub fn coarse() -> LatencyHist {
        LatencyHist {
            h: Histogram::new(2).expect("valid histogram precision"),
            max_ns: 0,
            sum_ns: 0,
        }
    }
    /// The smallest recorded value in ns (0 if empty).
    pub fn min_ns(&self) -> u64 {
        if self.h.is_empty() {
            0
        } else {
            self.h.min()
        }
    }
    /// Points of the cumulative distribution, `(value_ns, fraction ≤ value)`, sampled
    /// densely in the tail: quantiles 1 − 10^(−i/20) up to 1 − 10^−6, plus every 1 %
    /// from 1 % to 99 %, plus the minimum and the maximum. Sorted by value, no duplicates.
    pub fn cdf_points(&self) -> Vec<(u64, f64)> {
        cdf_points(&self.h, self.max_ns)
    }
    /// Record one sample. Zero is recorded as 1 ns (the lowest trackable value) for the
    /// percentiles; the mean keeps the exact value.
    #[inline]
    pub fn record(&mut self, d: Dur) {
        let ns = d.as_nanos();
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns += ns as u128;
        // `record` grows the counts to the value (`saturating_record` would clamp it to
        // the current top); it cannot fail below the clamp, but if it did the sample
        // still counts, at the top.
        let v = ns.clamp(1, HIGHEST_NS);
        if self.h.record(v).is_err() {
            self.h.saturating_record(v);
        }
    }
    pub fn count(&self) -> u64 {
        self.h.len()
    }
    pub fn is_empty(&self) -> bool {
        self.h.is_empty()
    }
    pub fn clear(&mut self) {
        self.h.reset();
        self.max_ns = 0;
        self.sum_ns = 0;
    }
    /// Merge another histogram into this one.
    pub fn merge(&mut self, other: &LatencyHist) {
        // Same bounds on both sides; add cannot fail.
        let _ = self.h.add(&other.h);
        self.max_ns = self.max_ns.max(other.max_ns);
        self.sum_ns += other.sum_ns;
    }
    /// The value at quantile `q` (0..=1), in ns. hdrhistogram reports the highest value
    /// equivalent to the bucket, so a percentile is never under-reported.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.h.is_empty() {
            return 0;
        }
        self.h.value_at_quantile(q).min(self.max_ns)
    }
    pub fn mean_ns(&self) -> f64 {
        if self.h.is_empty() {
            0.0
        } else {
            self.sum_ns as f64 / self.h.len() as f64
        }
    }
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }
    /// Percentiles in milliseconds, as written to `summary.json`.
    pub fn percentiles_ms(&self) -> Percentiles {
        let ms = |ns: u64| round6(ns as f64 / 1e6);
        Percentiles {
            count: self.count(),
            mean: round6(self.mean_ns() / 1e6),
            p50: ms(self.quantile_ns(0.50)),
            p90: ms(self.quantile_ns(0.90)),
            p99: ms(self.quantile_ns(0.99)),
            p999: ms(self.quantile_ns(0.999)),
            p9999: ms(self.quantile_ns(0.9999)),
            max: ms(self.max_ns),
        }
    }
}

/// Round to 6 decimals (ns precision for ms values) so that JSON stays short and stable.
pub fn round6(x: f64) -> f64 {
    if !x.is_finite() {
        return 0.0;
    }
    (x * 1e6).round() / 1e6
}

/// `a / b` rounded as [`round6`], and 0 when `b` is 0: the fractions of `summary.json`
/// (loss, CE marks, bad frames).
pub fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        round6(a as f64 / b as f64)
    }
}

/// Distribution summary of a delay, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub p9999: f64,
    pub max: f64,
}

/// Points of the cumulative distribution of `h`, `(value, fraction ≤ value)`, sampled
/// densely in the tail: quantiles 1 − 10^(−i/20) up to 1 − 10^−6, plus every 1 % from 1 % to
/// 99 %, plus the minimum and `max` (the exact largest value; bucket tops are clamped to it).
/// Sorted by value, no duplicates; empty for an empty histogram.
pub fn cdf_points(h: &Histogram<u64>, max: u64) -> Vec<(u64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut qs: Vec<f64> = (1..100).map(|i| i as f64 / 100.0).collect();
    qs.extend((20..=120).map(|i| 1.0 - 10f64.powf(-(i as f64) / 20.0)));
    qs.sort_by(|a, b| a.total_cmp(b));
    let n = h.len() as f64;
    // One pass over the recorded buckets: the cumulative count at each bucket's top value
    // is exactly the number of samples at or below it.
    let mut out: Vec<(u64, f64)> = Vec::with_capacity(qs.len() + 2);
    let mut cum = 0u64;
    let mut next = 0;
    for (i, v) in h.iter_recorded().enumerate() {
        cum += v.count_at_value();
        let value = v.value_iterated_to().min(max);
        let f = (cum as f64 / n).min(1.0);
        if i == 0 {
            out.push((value, f));
        }
        while next < qs.len() && f >= qs[next] {
            out.push((value, f));
            next += 1;
        }
    }
    out.push((max, 1.0));
    out.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    out.dedup_by(|b, a| {
        if a.0 == b.0 {
            a.1 = a.1.max(b.1);
            true
        } else {
            false
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn percentiles_of_known_samples() {
        let mut h = LatencyHist::new();
        // 1..=1000 ms, one sample each.
        for i in 1..=1000u64 {
            h.record(Dur::from_millis(i));
        }
        let p = h.percentiles_ms();
        assert_eq!(p.count, 1000);
        assert!((p.mean - 500.5).abs() < 1e-9, "{}", p.mean);
        // Within HDR precision (3 significant digits → ≤ 0.1 % relative).
        for (got, want) in [(p.p50, 500.0), (p.p90, 900.0), (p.p99, 990.0), (p.p999, 999.0)] {
            assert!((got - want).abs() / want <= 0.001, "{got} vs {want}");
        }
        assert_eq!(p.max, 1000.0);
    }
    #[test]
    fn cdf_points_are_monotone_and_exact_at_the_ends() {
        let mut h = LatencyHist::new();
        for i in 1..=10_000u64 {
            h.record(Dur::from_micros(i));
        }
        let c = h.cdf_points();
        assert!(c.len() > 100);
        assert!(c.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        assert_eq!(c.last().unwrap(), &(10_000_000, 1.0));
        // Median point: about half of the samples at or below 5 ms.
        let mid = c.iter().find(|p| p.1 >= 0.5).unwrap();
        assert!((mid.0 as f64 - 5e6).abs() / 5e6 < 0.002, "{mid:?}");
        assert!(LatencyHist::new().cdf_points().is_empty());
    }

    #[test]
    fn empty_and_merge() {
        let mut a = LatencyHist::new();
        assert_eq!(a.percentiles_ms(), Percentiles::default());
        let mut b = LatencyHist::new();
        a.record(Dur::from_millis(1));
        b.record(Dur::from_millis(3));
        a.merge(&b);
        assert_eq!(a.count(), 2);
        assert!((a.percentiles_ms().mean - 2.0).abs() < 1e-9);
        assert_eq!(a.max_ns(), 3_000_000);
        // Zero is recorded and does not break the mean.
        a.record(Dur::ZERO);
        assert_eq!(a.count(), 3);
    }
}
