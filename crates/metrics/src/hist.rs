//! Delay histograms.

use hdrhistogram::Histogram;
use l4s_core::Dur;
use serde::{Deserialize, Serialize};

/// Largest value a histogram tracks: one hour in ns. Larger samples are clamped (and
/// counted in `max`, which is kept exactly).
const HIGHEST_NS: u64 = 3_600_000_000_000;

/// The counts of a [`LatencyHist`]: 32-bit while no bucket can hold more than a 32-bit
/// count (fewer samples in all than `u32::MAX`), 64-bit after. Half the memory of 64-bit
/// counts for every histogram that never takes four thousand million samples, which is
/// every per-flow and per-queue histogram of a simulated run (a flow's one-way delay
/// histogram at 3 digits and up to 20 ms holds 15 360 counts: 60 KiB rather than 120), and
/// the same buckets, counts and results.
#[derive(Clone, Debug)]
enum Counts {
    Narrow(Histogram<u32>),
    Wide(Histogram<u64>),
}

/// Apply `$f` to the histogram of either width.
macro_rules! with_counts {
    ($c:expr, $h:ident => $f:expr) => {
        match $c {
            Counts::Narrow($h) => $f,
            Counts::Wide($h) => $f,
        }
    };
}

/// Samples a 32-bit histogram may take before it widens: while its total is below this,
/// no bucket's count can overflow.
const NARROW_LIMIT: u64 = u32::MAX as u64;

impl Counts {
    fn new(sigfig: u8) -> Counts {
        // 2 and 3 digits are constants that hdrhistogram accepts: this cannot fail.
        Counts::Narrow(Histogram::new(sigfig).expect("valid histogram precision"))
    }

    fn len(&self) -> u64 {
        with_counts!(self, h => h.len())
    }

    /// Make room for `more` samples: widen to 64-bit counts if the total could then
    /// reach a 32-bit count's limit.
    #[inline]
    fn reserve(&mut self, more: u64) {
        if let Counts::Narrow(h) = self {
            if h.len().saturating_add(more) >= NARROW_LIMIT {
                self.wide();
            }
        }
    }

    /// The 64-bit counts, widened from the 32-bit ones first if need be.
    #[cold]
    fn wide(&mut self) -> &mut Histogram<u64> {
        if let Counts::Narrow(h) = self {
            *self = Counts::Wide(widen(h));
        }
        match self {
            Counts::Wide(h) => h,
            Counts::Narrow(_) => unreachable!("widened above"),
        }
    }

    #[inline]
    fn record(&mut self, v: u64) {
        match self {
            Counts::Narrow(h) if h.len() < NARROW_LIMIT - 1 => record_into(h, v),
            Counts::Narrow(_) => record_into(self.wide(), v),
            Counts::Wide(h) => record_into(h, v),
        }
    }
}

/// `record` grows the counts to the value (`saturating_record` would clamp it to the
/// current top); it cannot fail below the clamp, but if it did the sample still counts,
/// at the top.
#[inline]
fn record_into<T: hdrhistogram::Counter>(h: &mut Histogram<T>, v: u64) {
    if h.record(v).is_err() {
        h.saturating_record(v);
    }
}

#[cfg(test)]
impl Counts {
    /// `n` samples of `v` at once.
    fn record_n(&mut self, v: u64, n: u64) {
        self.reserve(n);
        match self {
            Counts::Narrow(h) => h.record_n(v, n as u32).unwrap(),
            Counts::Wide(h) => h.record_n(v, n).unwrap(),
        }
    }

    fn is_wide(&self) -> bool {
        matches!(self, Counts::Wide(_))
    }
}

/// The same buckets and counts with 64-bit counters: each bucket's count recorded at its
/// highest equivalent value, which falls in the same bucket.
fn widen(h: &Histogram<u32>) -> Histogram<u64> {
    let mut w = Histogram::new_with_bounds(h.low(), h.high(), h.sigfig()).expect("the bounds of a valid histogram");
    w.auto(true);
    for v in h.iter_recorded() {
        w.saturating_record_n(v.value_iterated_to(), u64::from(v.count_at_value()));
    }
    w
}

/// A histogram of durations with 3 significant digits (relative error ≤ 0.1 %).
#[derive(Clone, Debug)]
pub struct LatencyHist {
    h: Counts,
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
            // whole hour (139 KB per histogram at 32-bit counts; a flow has two).
            h: Counts::new(3),
            max_ns: 0,
            sum_ns: 0,
        }
    }
    /// A smaller histogram (2 significant digits, ≤ 1 % error): what the per-interval
    /// delays of the snapshots report ([`IntervalDelays`], which keeps one).
    pub fn coarse() -> LatencyHist {
        LatencyHist {
            h: Counts::new(2),
            max_ns: 0,
            sum_ns: 0,
        }
    }
    /// The smallest recorded value in ns (0 if empty).
    pub fn min_ns(&self) -> u64 {
        if self.is_empty() {
            0
        } else {
            with_counts!(&self.h, h => h.min())
        }
    }
    /// Points of the cumulative distribution, `(value_ns, fraction ≤ value)`, sampled
    /// densely in the tail: quantiles 1 − 10^(−i/20) up to 1 − 10^−6, plus every 1 %
    /// from 1 % to 99 %, plus the minimum and the maximum. Sorted by value, no duplicates.
    pub fn cdf_points(&self) -> Vec<(u64, f64)> {
        with_counts!(&self.h, h => cdf_points(h, self.max_ns))
    }
    /// Record one sample. Zero is recorded as 1 ns (the lowest trackable value) for the
    /// percentiles; the mean keeps the exact value.
    #[inline]
    pub fn record(&mut self, d: Dur) {
        let ns = d.as_nanos();
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns += ns as u128;
        self.h.record(ns.clamp(1, HIGHEST_NS));
    }
    pub fn count(&self) -> u64 {
        self.h.len()
    }
    pub fn is_empty(&self) -> bool {
        self.h.len() == 0
    }
    pub fn clear(&mut self) {
        with_counts!(&mut self.h, h => h.reset());
        self.max_ns = 0;
        self.sum_ns = 0;
    }
    /// Merge another histogram into this one.
    pub fn merge(&mut self, other: &LatencyHist) {
        // Same precision on both sides and auto-resizing: add cannot fail.
        self.h.reserve(other.count());
        match (&mut self.h, &other.h) {
            (Counts::Narrow(a), Counts::Narrow(b)) => {
                let _ = a.add(b);
            }
            (h, Counts::Narrow(b)) => {
                let _ = h.wide().add(widen(b));
            }
            (h, Counts::Wide(b)) => {
                let _ = h.wide().add(b);
            }
        }
        self.max_ns = self.max_ns.max(other.max_ns);
        self.sum_ns += other.sum_ns;
    }
    /// The value at quantile `q` (0..=1), in ns. hdrhistogram reports the highest value
    /// equivalent to the bucket, so a percentile is never under-reported.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.is_empty() {
            return 0;
        }
        with_counts!(&self.h, h => h.value_at_quantile(q)).min(self.max_ns)
    }
    pub fn mean_ns(&self) -> f64 {
        if self.is_empty() {
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

/// Samples an [`IntervalDelays`] keeps before it records into its histogram instead: 64 KiB
/// per flow at most, more than 100 ms of a 1 Gbit/s flow of full-size packets.
const INTERVAL_SAMPLES: usize = 8192;

/// The delays of one snapshot interval: their count, minimum, mean, a quantile and maximum,
/// each exactly as a [`LatencyHist::coarse`] of the same samples gives it, at a fraction of
/// its cost per sample.
///
/// A coarse histogram costs a bucket update per sample, and a clearing and a scan of its
/// buckets per interval, though an interval of a flow holds a few hundred samples. While an
/// interval holds at most 8192 samples they are kept as they are, and the figures
/// are worked out from them when asked: the quantile is the bucket of the sample of the
/// histogram's rank ([`hdrhistogram::Histogram::value_at_quantile`]: rank ⌈q·n⌉, at least 1),
/// reported at the top of its bucket, as the histogram reports it; the minimum at the bottom
/// of its bucket; the mean and the maximum exact. Buckets are found with the histogram's own
/// arithmetic. An interval with more samples goes on in the histogram itself. Either way the
/// memory is bounded by the interval, not the run.
#[derive(Clone, Debug)]
pub struct IntervalDelays {
    /// The interval's samples in ns, while they fit.
    samples: Vec<u64>,
    /// The samples once there were too many to keep; its buckets also serve to find those
    /// of the kept samples.
    hist: LatencyHist,
    spilled: bool,
}

/// Figures of an [`IntervalDelays`], in ns (all 0 for an empty interval).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IntervalFigures {
    pub count: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub quantile_ns: u64,
    pub max_ns: u64,
}

impl Default for IntervalDelays {
    fn default() -> Self {
        IntervalDelays {
            samples: Vec::new(),
            hist: LatencyHist::coarse(),
            spilled: false,
        }
    }
}

impl LatencyHist {
    /// Count, minimum, mean, quantile `q` and maximum, as [`IntervalDelays`] reports them.
    fn figures(&self, q: f64) -> IntervalFigures {
        if self.is_empty() {
            return IntervalFigures::default();
        }
        IntervalFigures {
            count: self.count(),
            min_ns: self.min_ns(),
            mean_ns: self.mean_ns(),
            quantile_ns: self.quantile_ns(q),
            max_ns: self.max_ns(),
        }
    }
}

impl IntervalDelays {
    #[inline]
    pub fn record(&mut self, d: Dur) {
        if !self.spilled && self.samples.len() < INTERVAL_SAMPLES {
            self.samples.push(d.as_nanos());
        } else {
            self.spill();
            self.hist.record(d);
        }
    }

    /// Go on in the histogram, with the samples kept so far.
    #[cold]
    fn spill(&mut self) {
        if !self.spilled {
            self.spilled = true;
            for &ns in &self.samples {
                self.hist.record(Dur::from_nanos(ns));
            }
            self.samples.clear();
        }
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty() && self.hist.is_empty()
    }

    /// The interval's figures, with quantile `q` (0..=1) as [`LatencyHist::quantile_ns`].
    pub fn figures(&mut self, q: f64) -> IntervalFigures {
        if self.spilled {
            return self.hist.figures(q);
        }
        let n = self.samples.len();
        if n == 0 {
            return IntervalFigures::default();
        }
        let (mut min, mut max, mut sum) = (u64::MAX, 0u64, 0u128);
        for &ns in &self.samples {
            min = min.min(ns);
            max = max.max(ns);
            sum += u128::from(ns);
        }
        // What the histogram records (`LatencyHist::record`): clamped, so that a zero counts.
        let bucketed = |ns: u64| ns.clamp(1, HIGHEST_NS);
        // As `value_at_quantile`: capped at 1.
        let q = if q > 1.0 { 1.0 } else { q };
        let rank = ((q * n as f64).ceil() as u64).max(1).min(n as u64) as usize;
        let (_, &mut at, _) = self.samples.select_nth_unstable(rank - 1);
        let h = &self.hist.h;
        let top = if q == 0.0 {
            with_counts!(h, h => h.lowest_equivalent(bucketed(at)))
        } else {
            with_counts!(h, h => h.highest_equivalent(bucketed(at)))
        };
        IntervalFigures {
            count: n as u64,
            min_ns: with_counts!(h, h => h.lowest_equivalent(bucketed(min))),
            mean_ns: sum as f64 / n as f64,
            quantile_ns: top.min(max),
            max_ns: max,
        }
    }

    /// Start a new interval.
    pub fn clear(&mut self) {
        self.samples.clear();
        if self.spilled {
            self.hist.clear();
            self.spilled = false;
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
pub fn cdf_points<T: hdrhistogram::Counter>(h: &Histogram<T>, max: u64) -> Vec<(u64, f64)> {
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
        cum += v.count_at_value().as_u64();
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
    fn widening_keeps_every_bucket() {
        let mut a = LatencyHist::new();
        for i in 0..20_000u64 {
            a.record(Dur::from_nanos(1 + i * i * 37 % 30_000_000));
        }
        let mut b = a.clone();
        let Counts::Narrow(h) = &b.h else { panic!("narrow") };
        b.h = Counts::Wide(widen(h));
        assert!(b.h.is_wide());
        assert_eq!(a.percentiles_ms(), b.percentiles_ms());
        assert_eq!(a.cdf_points(), b.cdf_points());
        assert_eq!(a.min_ns(), b.min_ns());
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(a.quantile_ns(q), b.quantile_ns(q));
        }
    }

    #[test]
    fn more_samples_than_a_32_bit_count_holds() {
        // Six thousand million samples in two buckets: each count is beyond u32::MAX, so
        // 32-bit counts would saturate and put the median and p90 in the wrong bucket.
        let mut h = LatencyHist::new();
        h.h.record_n(1_000_000, 2_000_000_000);
        assert!(!h.h.is_wide());
        h.h.record_n(1_000_000, 2_500_000_000);
        assert!(h.h.is_wide());
        h.h.record_n(2_000_000, 5_000_000_000);
        h.max_ns = 2_000_000;
        assert_eq!(h.count(), 9_500_000_000);
        // 4500 of 9500 million (47.4 %) at 1 ms: p46 there (a saturated count, 45.2 %,
        // would put it at 2 ms), p50 at 2 ms.
        assert!((h.quantile_ns(0.46) as f64 / 1e6 - 1.0).abs() < 1e-3);
        assert!((h.quantile_ns(0.50) as f64 / 2e6 - 1.0).abs() < 1e-3);
        // Merging a narrow histogram into a wide one and the other way round.
        let mut small = LatencyHist::new();
        small.record(Dur::from_millis(5));
        let mut w = h.clone();
        w.merge(&small);
        assert_eq!(w.count(), 9_500_000_001);
        assert_eq!(w.max_ns(), 5_000_000);
        small.merge(&h);
        assert!(small.h.is_wide());
        assert_eq!(small.count(), 9_500_000_001);
        assert_eq!(small.cdf_points(), w.cdf_points());
    }

    /// The figures of a coarse histogram of the same samples.
    fn coarse_figures(samples: &[u64], q: f64) -> IntervalFigures {
        let mut h = LatencyHist::coarse();
        for &ns in samples {
            h.record(Dur::from_nanos(ns));
        }
        h.figures(q)
    }

    #[test]
    fn interval_delays_give_what_a_coarse_histogram_gives() {
        let mut rng = l4s_core::Rng::new(7);
        let mut iv = IntervalDelays::default();
        let qs = [0.0, 0.01, 0.5, 0.9, 0.99, 0.999, 1.0, 1.5, -0.5];
        // Sizes on both sides of the kept samples' limit, and intervals one after another
        // (kept, spilled, kept again) through the same value.
        for (round, n) in [0, 1, 2, 3, 7, 100, 801, 8191, 8192, 8193, 20_000, 5, 0, 1000]
            .into_iter()
            .enumerate()
        {
            let samples: Vec<u64> = (0..n)
                .map(|i| match (round + i) % 7 {
                    // Zero (recorded as 1 ns), the clamp at an hour and beyond it, ties.
                    0 => 0,
                    1 => HIGHEST_NS + rng.next_u64() % 1000,
                    2 => 5_000_000,
                    3 => 1 + rng.next_u64() % 1000,
                    _ => 1_000_000 + rng.next_u64() % 40_000_000,
                })
                .collect();
            for &ns in &samples {
                iv.record(Dur::from_nanos(ns));
            }
            assert_eq!(iv.is_empty(), n == 0);
            assert_eq!(iv.spilled, n > INTERVAL_SAMPLES, "{n}");
            for q in qs {
                let got = iv.figures(q);
                let want = coarse_figures(&samples, q);
                assert_eq!(got, want, "{n} samples, q {q}");
            }
            iv.clear();
            assert!(iv.is_empty());
        }
        // 98 samples of 1 ms and 2 of 2 ms: the 99th of 100 is 2 ms, whose bucket's top
        // (2 007 039 ns: 8192-ns buckets there) the maximum caps; the median is the top of
        // the 1 ms bucket (4096-ns buckets from 999 424 ns), the minimum its bottom.
        let mut iv = IntervalDelays::default();
        for i in 0..100u64 {
            iv.record(Dur::from_micros(if i < 98 { 1000 } else { 2000 }));
        }
        let f = iv.figures(0.99);
        assert_eq!(
            (f.count, f.min_ns, f.quantile_ns, f.max_ns),
            (100, 999_424, 2_000_000, 2_000_000)
        );
        assert!((f.mean_ns - 1_020_000.0).abs() < 1e-6);
        assert_eq!(iv.figures(0.5).quantile_ns, 1_003_519);
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
