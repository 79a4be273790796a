//! Delay histograms.
//!
//! [`LatencyHist`] keeps the buckets of an HDR histogram (Gil Tene's HdrHistogram, as the
//! `hdrhistogram` crate implements it) in its own counts: the same buckets, grown the same
//! way, read the same way, so every percentile and CDF point is the one a
//! [`hdrhistogram::Histogram`] of the same samples gives (tests compare the two). What it
//! saves is the cost of recording, which every data packet pays two or three times (its
//! one-way delay, its sojourn in each queue, the RTT samples of its ACKs): the crate's
//! `record` checks the range, may resize, and keeps a minimum and a maximum beside the
//! total, about 70 instructions; here a sample is an index, an add and a count.

use hdrhistogram::Histogram;
use l4s_core::Dur;
use serde::{Deserialize, Serialize};

/// Largest value a histogram tracks: one hour in ns. Larger samples are clamped (and
/// counted in `max`, which is kept exactly).
const HIGHEST_NS: u64 = 3_600_000_000_000;

/// The bucket arithmetic of an HDR histogram whose lowest discernible value is 1 (unit
/// magnitude 0) with `sigfig` significant digits: single-unit resolution up to
/// 2·10^sigfig, rounded up to a power of two `2^m`, then buckets of `2^(m-1)` sub-buckets
/// each twice as wide as the one before. Index, bucket and sub-bucket as in
/// `Histogram::index_for`, `bucket_for`, `sub_bucket_for` and `value_for`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    /// log2 of the sub-bucket count.
    mag: u32,
}

impl Layout {
    fn new(sigfig: u8) -> Layout {
        let largest = 2 * 10u64.pow(u32::from(sigfig));
        // ⌈log2(largest)⌉.
        Layout {
            mag: 64 - (largest - 1).leading_zeros(),
        }
    }

    #[inline]
    fn half_mag(self) -> u32 {
        self.mag - 1
    }

    #[inline]
    fn half(self) -> u64 {
        1 << self.half_mag()
    }

    /// The power of two by which `v` exceeds what the first bucket holds.
    #[inline]
    fn bucket(self, v: u64) -> u32 {
        let mask = (1u64 << self.mag) - 1;
        (64 - self.mag) - (v | mask).leading_zeros()
    }

    /// The position of `v`'s count.
    #[inline]
    fn index(self, v: u64) -> usize {
        let b = self.bucket(v);
        (((u64::from(b) + 1) << self.half_mag()) + (v >> b) - self.half()) as usize
    }

    /// The lowest value counted at `index`.
    fn value_for(self, index: usize) -> u64 {
        let i = index as u64;
        let b = (i >> self.half_mag()) as i64 - 1;
        let sub = (i & (self.half() - 1)) + self.half();
        if b < 0 {
            sub - self.half()
        } else {
            sub << b
        }
    }

    /// The lowest value counted with `v`.
    #[inline]
    fn lowest_equivalent(self, v: u64) -> u64 {
        let b = self.bucket(v);
        (v >> b) << b
    }

    /// The highest value counted with `v` (at most `u64::MAX`).
    #[inline]
    fn highest_equivalent(self, v: u64) -> u64 {
        if v == u64::MAX {
            u64::MAX
        } else {
            self.lowest_equivalent(v).saturating_add(1 << self.bucket(v)) - 1
        }
    }

    /// How a quantile `q` whose sample is `v` is reported, as `value_at_quantile` reports
    /// it: at the highest value of its bucket, so that it is never under-reported (at the
    /// lowest for `q` = 0).
    #[inline]
    fn quantile_value(self, v: u64, q: f64) -> u64 {
        if q == 0.0 {
            self.lowest_equivalent(v)
        } else {
            self.highest_equivalent(v)
        }
    }

    /// The number of counts that covers `v`, as `Histogram::resize` sizes them: enough
    /// buckets that `v` is below the top of the last, and one more half bucket.
    fn len_to_cover(self, v: u64) -> usize {
        let mut top = 1u64 << self.mag;
        let mut buckets = 1u64;
        while top <= v {
            if top > u64::MAX / 2 {
                buckets += 1;
                break;
            }
            top <<= 1;
            buckets += 1;
        }
        ((buckets + 1) << self.half_mag()) as usize
    }
}

/// The counts of a [`LatencyHist`]: 32-bit while no bucket can hold more than a 32-bit
/// count (fewer samples in all than `u32::MAX`), 64-bit after. Half the memory of 64-bit
/// counts for every histogram that never takes four thousand million samples, which is
/// every per-flow and per-queue histogram of a simulated run (a flow's one-way delay
/// histogram at 3 digits and up to 20 ms holds 15 360 counts: 60 KiB rather than 120), and
/// the same buckets, counts and results.
#[derive(Clone, Debug)]
enum Counts {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

/// Samples a 32-bit histogram may take before it widens: while its total is below this,
/// no bucket's count can overflow.
const NARROW_LIMIT: u64 = u32::MAX as u64;

impl Counts {
    fn len(&self) -> usize {
        match self {
            Counts::Narrow(c) => c.len(),
            Counts::Wide(c) => c.len(),
        }
    }

    #[cfg(test)]
    fn get(&self, i: usize) -> u64 {
        match self {
            Counts::Narrow(c) => c.get(i).map_or(0, |&n| u64::from(n)),
            Counts::Wide(c) => c.get(i).copied().unwrap_or(0),
        }
    }

    /// Lengthen to `len` counts (never shortens), as `Vec::resize` grows them.
    fn grow(&mut self, len: usize) {
        match self {
            Counts::Narrow(c) if c.len() < len => c.resize(len, 0),
            Counts::Wide(c) if c.len() < len => c.resize(len, 0),
            _ => {}
        }
    }

    /// The 64-bit counts, widened from the 32-bit ones first if need be.
    #[cold]
    fn wide(&mut self) -> &mut Vec<u64> {
        if let Counts::Narrow(c) = self {
            *self = Counts::Wide(c.iter().map(|&n| u64::from(n)).collect());
        }
        match self {
            Counts::Wide(c) => c,
            Counts::Narrow(_) => unreachable!("widened above"),
        }
    }

    fn is_wide(&self) -> bool {
        matches!(self, Counts::Wide(_))
    }

    /// The indices and counts of the buckets that hold samples, in order.
    fn recorded(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let (narrow, wide) = match self {
            Counts::Narrow(c) => (Some(c), None),
            Counts::Wide(c) => (None, Some(c)),
        };
        let narrow = narrow.into_iter().flat_map(|c| {
            c.iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(i, &n)| (i, u64::from(n)))
        });
        let wide = wide
            .into_iter()
            .flat_map(|c| c.iter().enumerate().filter(|(_, &n)| n > 0).map(|(i, &n)| (i, n)));
        narrow.chain(wide)
    }
}

/// The rank (from 1) of the sample at quantile `q` of `n` samples, as `value_at_quantile`
/// takes it: ⌈q·n⌉ with `q` capped at 1, and at least 1.
fn quantile_rank(q: f64, n: u64) -> u64 {
    let q = if q > 1.0 { 1.0 } else { q };
    ((q * n as f64).ceil() as u64).max(1)
}

/// A histogram of durations with 3 significant digits (relative error ≤ 0.1 %).
#[derive(Clone, Debug)]
pub struct LatencyHist {
    layout: Layout,
    counts: Counts,
    /// Samples recorded.
    total: u64,
    /// The smallest value recorded (after the clamp to 1..=[`HIGHEST_NS`]), `u64::MAX`
    /// while empty.
    min_rec: u64,
    max_ns: u64,
    sum_ns: u128,
}

impl Default for LatencyHist {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHist {
    fn with_sigfig(sigfig: u8) -> LatencyHist {
        let layout = Layout::new(sigfig);
        LatencyHist {
            layout,
            // Auto-resizing from the size `Histogram::new` starts with (the buckets up to
            // 2): the counts cover up to the largest value recorded, not the whole hour
            // (139 KB per histogram at 32-bit counts; a flow has two).
            counts: Counts::Narrow(vec![0; layout.len_to_cover(2)]),
            total: 0,
            min_rec: u64::MAX,
            max_ns: 0,
            sum_ns: 0,
        }
    }

    pub fn new() -> LatencyHist {
        Self::with_sigfig(3)
    }
    /// A smaller histogram (2 significant digits, ≤ 1 % error): what the per-interval
    /// delays of the snapshots report ([`IntervalDelays`], which keeps one).
    pub fn coarse() -> LatencyHist {
        Self::with_sigfig(2)
    }
    /// The smallest recorded value in ns (0 if empty), at the bottom of its bucket.
    pub fn min_ns(&self) -> u64 {
        if self.is_empty() {
            0
        } else {
            self.layout.lowest_equivalent(self.min_rec)
        }
    }
    /// Points of the cumulative distribution, `(value_ns, fraction ≤ value)`, sampled
    /// densely in the tail: quantiles 1 − 10^(−i/20) up to 1 − 10^−6, plus every 1 %
    /// from 1 % to 99 %, plus the minimum and the maximum. Sorted by value, no duplicates.
    pub fn cdf_points(&self) -> Vec<(u64, f64)> {
        let l = self.layout;
        let buckets = self
            .counts
            .recorded()
            .map(|(i, n)| (l.highest_equivalent(l.value_for(i)), n));
        cdf_points_of(buckets, self.total, self.max_ns)
    }
    /// Record one sample. Zero is recorded as 1 ns (the lowest trackable value) for the
    /// percentiles; the mean keeps the exact value.
    ///
    /// Out of line: inlined at its callers on the per-packet path it took 0.3 % fewer
    /// instructions but no less time, and called it takes 1-3 % less time than the
    /// crate's `record` (the callers' code stays small).
    #[inline(never)]
    pub fn record(&mut self, d: Dur) {
        let ns = d.as_nanos();
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns += ns as u128;
        let v = ns.clamp(1, HIGHEST_NS);
        self.min_rec = self.min_rec.min(v);
        let i = self.layout.index(v);
        if let Counts::Narrow(c) = &mut self.counts {
            if self.total < NARROW_LIMIT - 1 {
                if let Some(n) = c.get_mut(i) {
                    *n += 1;
                    self.total += 1;
                    return;
                }
            }
        }
        self.record_slow(v, i, 1);
    }
    /// `n` samples of `v` (bucket `i`) beyond the counts so far, or into 64-bit counts: the
    /// counts grow to cover `v`, and widen before the total could overflow a 32-bit count.
    #[cold]
    fn record_slow(&mut self, v: u64, i: usize, n: u64) {
        if i >= self.counts.len() {
            self.counts.grow(self.layout.len_to_cover(v));
        }
        match &mut self.counts {
            // Below the limit, `n` fits in 32 bits.
            Counts::Narrow(c) if self.total.saturating_add(n) < NARROW_LIMIT => c[i] += n as u32,
            c => c.wide()[i] += n,
        }
        self.total += n;
    }
    pub fn count(&self) -> u64 {
        self.total
    }
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
    /// Empty again, keeping the counts' length (as `Histogram::reset`).
    pub fn clear(&mut self) {
        match &mut self.counts {
            Counts::Narrow(c) => c.fill(0),
            Counts::Wide(c) => c.fill(0),
        }
        self.total = 0;
        self.min_rec = u64::MAX;
        self.max_ns = 0;
        self.sum_ns = 0;
    }
    /// Merge another histogram into this one (of the same precision).
    pub fn merge(&mut self, other: &LatencyHist) {
        debug_assert_eq!(self.layout, other.layout, "merging histograms of different precisions");
        if other.is_empty() {
            return;
        }
        // Widen if the total could reach a 32-bit count's limit.
        if let Counts::Narrow(_) = self.counts {
            if self.total.saturating_add(other.total) >= NARROW_LIMIT || other.counts.is_wide() {
                self.counts.wide();
            }
        }
        self.counts.grow(other.counts.len());
        match (&mut self.counts, &other.counts) {
            (Counts::Narrow(a), Counts::Narrow(b)) => a.iter_mut().zip(b).for_each(|(a, b)| *a += b),
            (Counts::Wide(a), Counts::Narrow(b)) => a.iter_mut().zip(b).for_each(|(a, b)| *a += u64::from(*b)),
            (Counts::Wide(a), Counts::Wide(b)) => a.iter_mut().zip(b).for_each(|(a, b)| *a += b),
            (Counts::Narrow(_), Counts::Wide(_)) => unreachable!("widened above"),
        }
        self.total += other.total;
        self.min_rec = self.min_rec.min(other.min_rec);
        self.max_ns = self.max_ns.max(other.max_ns);
        self.sum_ns += other.sum_ns;
    }
    /// The value at quantile `q` (0..=1), in ns: the bucket of the sample of rank ⌈q·n⌉ (at
    /// least 1), reported at the highest value of the bucket (its lowest for `q` = 0) as
    /// `Histogram::value_at_quantile` reports it, so that a percentile is never
    /// under-reported; and at most the largest sample.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        self.quantiles_ns([q])[0]
    }
    /// [`LatencyHist::quantile_ns`] of each of `qs`, which must be in ascending order, in
    /// one pass over the counts.
    fn quantiles_ns<const N: usize>(&self, qs: [f64; N]) -> [u64; N] {
        let mut out = [0; N];
        if self.is_empty() {
            return out;
        }
        // As `value_at_quantile`: capped at 1, and at least the first sample.
        let ranks = qs.map(|q| quantile_rank(q, self.total));
        debug_assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "quantiles in ascending order");
        let mut k = 0;
        let mut below = 0u64;
        for (i, n) in self.counts.recorded() {
            below += n;
            while k < N && below >= ranks[k] {
                let v = self.layout.value_for(i);
                out[k] = self.layout.quantile_value(v, qs[k]).min(self.max_ns);
                k += 1;
            }
            if k == N {
                break;
            }
        }
        out
    }
    pub fn mean_ns(&self) -> f64 {
        if self.is_empty() {
            0.0
        } else {
            self.sum_ns as f64 / self.total as f64
        }
    }
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }
    /// Percentiles in milliseconds, as written to `summary.json`.
    pub fn percentiles_ms(&self) -> Percentiles {
        let ms = |ns: u64| round6(ns as f64 / 1e6);
        let [p50, p90, p99, p999, p9999] = self.quantiles_ns([0.50, 0.90, 0.99, 0.999, 0.9999]);
        Percentiles {
            count: self.count(),
            mean: round6(self.mean_ns() / 1e6),
            p50: ms(p50),
            p90: ms(p90),
            p99: ms(p99),
            p999: ms(p999),
            p9999: ms(p9999),
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
        let rank = quantile_rank(q, n as u64) as usize;
        let (_, &mut at, _) = self.samples.select_nth_unstable(rank - 1);
        let l = self.hist.layout;
        let top = l.quantile_value(bucketed(at), q);
        IntervalFigures {
            count: n as u64,
            min_ns: l.lowest_equivalent(bucketed(min)),
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
    let buckets = h
        .iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value().as_u64()));
    cdf_points_of(buckets, h.len(), max)
}

/// [`cdf_points`] of the recorded buckets `(highest value, count)` in order, `total`
/// samples in all.
fn cdf_points_of(buckets: impl Iterator<Item = (u64, u64)>, total: u64, max: u64) -> Vec<(u64, f64)> {
    if total == 0 {
        return Vec::new();
    }
    let mut qs: Vec<f64> = (1..100).map(|i| i as f64 / 100.0).collect();
    qs.extend((20..=120).map(|i| 1.0 - 10f64.powf(-(i as f64) / 20.0)));
    qs.sort_by(|a, b| a.total_cmp(b));
    let n = total as f64;
    // One pass over the recorded buckets: the cumulative count at each bucket's top value
    // is exactly the number of samples at or below it.
    let mut out: Vec<(u64, f64)> = Vec::with_capacity(qs.len() + 2);
    let mut cum = 0u64;
    let mut next = 0;
    for (i, (top, count)) in buckets.enumerate() {
        cum += count;
        let value = top.min(max);
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
impl LatencyHist {
    /// `n` samples of `v` ns at once (left out of the mean and the maximum).
    fn record_n(&mut self, v: u64, n: u64) {
        self.record_slow(v, self.layout.index(v), n);
        self.min_rec = self.min_rec.min(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `hdrhistogram` itself gives for the same samples, as this module used it before
    /// it kept its own counts: a `Histogram::new(sigfig)` (auto-resizing) of the clamped
    /// values, read with `value_at_quantile`, `min` and `iter_recorded`, its quantiles
    /// capped at the exact maximum.
    struct Reference {
        h: Histogram<u64>,
        max: u64,
    }

    impl Reference {
        fn new(sigfig: u8) -> Reference {
            Reference {
                h: Histogram::new(sigfig).unwrap(),
                max: 0,
            }
        }
        fn record(&mut self, ns: u64) {
            self.max = self.max.max(ns);
            self.h.record(ns.clamp(1, HIGHEST_NS)).unwrap();
        }
        fn check(&self, got: &LatencyHist, what: &str) {
            assert_eq!(got.count(), self.h.len(), "{what}: count");
            assert_eq!(got.counts.len(), self.h.distinct_values(), "{what}: counts' length");
            for v in self.h.iter_recorded() {
                let idx = got.layout.index(v.value_iterated_to());
                assert_eq!(
                    got.counts.get(idx),
                    v.count_at_value(),
                    "{what}: count at {}",
                    v.value_iterated_to()
                );
            }
            if self.h.is_empty() {
                assert_eq!(got.min_ns(), 0);
            } else {
                assert_eq!(got.min_ns(), self.h.min(), "{what}: min");
            }
            let qs = [
                -0.5,
                -0.0,
                0.0,
                1e-9,
                0.001,
                0.01,
                0.1,
                0.25,
                0.5,
                0.75,
                0.9,
                0.99,
                0.999,
                0.9999,
                0.99999,
                1.0,
                1.5,
                f64::NAN,
            ];
            for q in qs {
                let want = if self.h.is_empty() {
                    0
                } else {
                    self.h.value_at_quantile(q).min(self.max)
                };
                assert_eq!(got.quantile_ns(q), want, "{what}: quantile {q}");
            }
            assert_eq!(got.cdf_points(), cdf_points(&self.h, self.max), "{what}: CDF points");
        }
    }

    #[test]
    fn the_buckets_percentiles_and_cdf_are_those_of_hdrhistogram() {
        let mut rng = l4s_core::Rng::new(11);
        for sigfig in [2, 3] {
            let layout = Layout::new(sigfig);
            let r = Histogram::<u64>::new(sigfig).unwrap();
            // The arithmetic on edges and on values spread over every magnitude up to the
            // clamp and beyond (the crate's histogram tracks up to its highest value only
            // once resized there; its bucket arithmetic holds for any value).
            let mut values: Vec<u64> = vec![0, 1, 2, 3, 255, 256, 1023, 1024, 2047, 2048, 4095, 4096, HIGHEST_NS];
            values.extend((0..64).flat_map(|b| [1u64 << b, (1u64 << b) - 1, (1u64 << b) + 1]));
            values.extend((0..20_000).map(|_| rng.next_u64() >> (rng.next_u64() % 64)));
            for &v in &values {
                assert_eq!(
                    layout.lowest_equivalent(v),
                    r.lowest_equivalent(v),
                    "sigfig {sigfig}, {v}"
                );
                assert_eq!(
                    layout.highest_equivalent(v),
                    r.highest_equivalent(v),
                    "sigfig {sigfig}, {v}"
                );
                if v <= HIGHEST_NS {
                    assert_eq!(
                        layout.value_for(layout.index(v)),
                        r.lowest_equivalent(v),
                        "sigfig {sigfig}, {v}"
                    );
                    let mut grown = Histogram::<u64>::new(sigfig).unwrap();
                    grown.record(v.max(1)).unwrap();
                    assert_eq!(
                        layout.len_to_cover(v.max(1)).max(layout.len_to_cover(2)),
                        grown.distinct_values(),
                        "sigfig {sigfig}, {v}"
                    );
                }
            }
        }
        // Histograms of samples from a few ns to beyond the clamp, with ties and zeros,
        // recorded one by one, merged, cleared and recorded again.
        for sigfig in [2, 3] {
            let new = || {
                if sigfig == 3 {
                    LatencyHist::new()
                } else {
                    LatencyHist::coarse()
                }
            };
            let mut parts = Vec::new();
            for (round, n) in [0usize, 1, 2, 10, 1000, 30_000].into_iter().enumerate() {
                let mut got = new();
                let mut want = Reference::new(sigfig);
                want.check(&got, "empty");
                for i in 0..n {
                    let ns = match (round + i) % 9 {
                        0 => 0,
                        1 => HIGHEST_NS + rng.next_u64() % 1_000_000,
                        2 => 5_000_000,
                        3 => 1 + rng.next_u64() % 3000,
                        4 => rng.next_u64() >> (20 + rng.next_u64() % 44),
                        _ => 1_000_000 + rng.next_u64() % 40_000_000,
                    };
                    got.record(Dur::from_nanos(ns));
                    want.record(ns);
                }
                want.check(&got, &format!("sigfig {sigfig}, {n} samples"));
                parts.push((got, want));
            }
            let mut all = new();
            let mut want = Reference::new(sigfig);
            for (got, w) in &parts {
                all.merge(got);
                want.h.add(&w.h).unwrap();
                want.max = want.max.max(w.max);
            }
            want.check(&all, &format!("sigfig {sigfig}, merged"));
            all.clear();
            want.h.reset();
            want.max = 0;
            want.check(&all, &format!("sigfig {sigfig}, cleared"));
            for ns in [7_000, 3, 12_345_678] {
                all.record(Dur::from_nanos(ns));
                want.record(ns);
            }
            want.check(&all, &format!("sigfig {sigfig}, recorded after clearing"));
        }
    }
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
        assert!(!b.counts.is_wide());
        b.counts.wide();
        assert!(b.counts.is_wide());
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
        h.record_n(1_000_000, 2_000_000_000);
        assert!(!h.counts.is_wide());
        h.record_n(1_000_000, 2_500_000_000);
        assert!(h.counts.is_wide());
        h.record_n(2_000_000, 5_000_000_000);
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
        assert!(small.counts.is_wide());
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
