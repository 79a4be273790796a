//! Descriptive statistics of a campaign's values: summary statistics as pandas and numpy
//! give them, a bootstrap confidence interval of the mean, and the empirical CDF.
//!
//! * Percentiles use numpy's default method (`np.percentile(x, q)`, method `"linear"`,
//!   Hyndman & Fan 1996 definition 7): the value at rank `h = (n − 1)·q/100` of the sorted
//!   sample, interpolated linearly between the two closest ranks.
//! * The standard deviation is the sample standard deviation (divisor `n − 1`, as pandas'
//!   `Series.std()` and `np.std(x, ddof=1)`); it is `None` for fewer than two values.
//! * NaN values are missing values: every function here ignores them (as pandas does with
//!   its default `skipna=True`). Infinite values are kept.

use l4s_core::Rng;

/// Resamples of the report's bootstrap intervals.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;
/// Confidence level of the report's bootstrap intervals.
pub const CI_LEVEL: f64 = 0.95;

/// Summary statistics of a sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// Values used (NaN values are left out).
    pub n: usize,
    pub mean: f64,
    /// The 50th, 90th, 25th and 75th percentiles (numpy's linear method).
    pub median: f64,
    pub p90: f64,
    pub q25: f64,
    pub q75: f64,
    /// The interquartile range, `q75 − q25`.
    pub iqr: f64,
    /// Sample standard deviation (divisor `n − 1`); `None` for a single value.
    pub sd: Option<f64>,
}

impl Stats {
    /// The statistics of `values` (NaN values ignored); `None` when no value is left.
    pub fn of(values: &[f64]) -> Option<Stats> {
        let v = sorted(values);
        let n = v.len();
        if n == 0 {
            return None;
        }
        let mean = mean_of(&v);
        let sd = (n >= 2).then(|| {
            let ss: f64 = v.iter().map(|x| (x - mean) * (x - mean)).sum();
            (ss / (n - 1) as f64).sqrt()
        });
        let q25 = percentile_sorted(&v, 25.0);
        let q75 = percentile_sorted(&v, 75.0);
        Some(Stats {
            n,
            mean,
            median: percentile_sorted(&v, 50.0),
            p90: percentile_sorted(&v, 90.0),
            q25,
            q75,
            iqr: q75 - q25,
            sd,
        })
    }
}

/// The values without NaN, in ascending order.
fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    v
}

fn mean_of(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The `q`-th percentile (0 ≤ q ≤ 100) of `values` by numpy's default linear method;
/// NaN values are ignored; NaN when no value is left.
pub fn percentile(values: &[f64], q: f64) -> f64 {
    percentile_sorted(&sorted(values), q)
}

/// [`percentile`] of an ascending sample without NaN. The interpolation is numpy's
/// (`_lerp`: from the lower neighbour below the midpoint, from the upper one above), so
/// the result matches `np.percentile` to the last bit.
fn percentile_sorted(v: &[f64], q: f64) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    let h = (n - 1) as f64 * (q / 100.0).clamp(0.0, 1.0);
    let lo = (h.floor() as usize).min(n - 1);
    let hi = (lo + 1).min(n - 1);
    let t = h - lo as f64;
    let (a, b) = (v[lo], v[hi]);
    let d = b - a;
    if t >= 0.5 {
        b - d * (1.0 - t)
    } else {
        a + d * t
    }
}

/// A percentile bootstrap confidence interval of the mean (Efron & Tibshirani 1993, §13.3):
/// `resamples` samples of `n` values drawn with replacement from `values` (NaN values
/// ignored), the mean of each, and the `(1 − level)/2` and `(1 + level)/2` percentiles of
/// those means (numpy's linear method). Deterministic: the draws come from
/// `l4s_core::Rng::new(seed)`. `None` with fewer than two values (a single value gives no
/// interval), no resample, or a `level` outside (0, 1).
pub fn bootstrap_mean_ci(values: &[f64], level: f64, resamples: usize, seed: u64) -> Option<(f64, f64)> {
    let v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    let n = v.len();
    if n < 2 || resamples == 0 || !(level > 0.0 && level < 1.0) {
        return None;
    }
    let mut rng = Rng::new(seed);
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| (0..n).map(|_| v[rng.below(n as u64) as usize]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0 * 100.0;
    Some((percentile_sorted(&means, tail), percentile_sorted(&means, 100.0 - tail)))
}

/// The empirical CDF of `values` (NaN values ignored): the distinct values in ascending
/// order, each with the fraction of values at or below it (the last is 1).
pub fn ecdf(values: &[f64]) -> Vec<(f64, f64)> {
    let v = sorted(values);
    let n = v.len() as f64;
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (i, x) in v.iter().enumerate() {
        let f = (i + 1) as f64 / n;
        match out.last_mut() {
            Some(last) if last.0 == *x => last.1 = f,
            _ => out.push((*x, f)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn summary_statistics_of_small_samples_by_hand() {
        // [1, 2, 3, 4, 10]: mean 4; ranks h = 4q/100: p90 at 3.6, 4 + 0.6 (10 - 4) = 7.6;
        // squared deviations 9 + 4 + 1 + 0 + 36 = 50, / 4 = 12.5.
        let s = Stats::of(&[10.0, 2.0, 4.0, 1.0, 3.0]).unwrap();
        assert_eq!(s.n, 5);
        assert!(close(s.mean, 4.0));
        assert!(close(s.median, 3.0));
        assert!(close(s.p90, 7.6), "{}", s.p90);
        assert!(close(s.q25, 2.0) && close(s.q75, 4.0) && close(s.iqr, 2.0));
        assert!(close(s.sd.unwrap(), 12.5f64.sqrt()));
        // Four values: np.percentile([1, 2, 3, 4], [25, 50, 75, 90]) = 1.75, 2.5, 3.25, 3.7;
        // pd.Series([1, 2, 3, 4]).std() = sqrt(5/3).
        let s = Stats::of(&[4.0, 3.0, 2.0, 1.0]).unwrap();
        assert!(close(s.q25, 1.75) && close(s.median, 2.5) && close(s.q75, 3.25));
        assert!(close(s.p90, 3.7), "{}", s.p90);
        assert!(close(s.iqr, 1.5));
        assert!(close(s.sd.unwrap(), (5.0f64 / 3.0).sqrt()));
        // NaN is a missing value; one value has no standard deviation.
        let s = Stats::of(&[f64::NAN, -2.5, f64::NAN]).unwrap();
        assert_eq!(
            (s.n, s.mean, s.median, s.p90, s.iqr, s.sd),
            (1, -2.5, -2.5, -2.5, 0.0, None)
        );
        assert_eq!(Stats::of(&[]), None);
        assert_eq!(Stats::of(&[f64::NAN]), None);
        assert!(close(percentile(&[0.0, 10.0], 33.0), 3.3));
        assert!(percentile(&[], 50.0).is_nan());
    }

    #[test]
    fn ecdf_steps_at_each_distinct_value() {
        assert_eq!(
            ecdf(&[3.0, 1.0, f64::NAN, 3.0, 2.0]),
            vec![(1.0, 0.25), (2.0, 0.5), (3.0, 1.0)]
        );
        assert!(ecdf(&[]).is_empty());
    }

    #[test]
    fn bootstrap_interval_is_deterministic_and_brackets_the_mean() {
        let v = [1.0, 2.0, 3.0, 4.0, 10.0];
        let a = bootstrap_mean_ci(&v, 0.95, 2000, 7).unwrap();
        assert_eq!(a, bootstrap_mean_ci(&v, 0.95, 2000, 7).unwrap());
        assert_ne!(a, bootstrap_mean_ci(&v, 0.95, 2000, 8).unwrap());
        assert!(a.0 < 4.0 && 4.0 < a.1, "{a:?}");
        // Within the range of the data, and narrower at a lower level.
        assert!(a.0 >= 1.0 && a.1 <= 10.0);
        let b = bootstrap_mean_ci(&v, 0.5, 2000, 7).unwrap();
        assert!(b.1 - b.0 < a.1 - a.0);
        assert_eq!(bootstrap_mean_ci(&[1.0], 0.95, 2000, 7), None);
        assert_eq!(bootstrap_mean_ci(&v, 1.0, 2000, 7), None);
        assert_eq!(bootstrap_mean_ci(&[2.0, 2.0, f64::NAN], 0.95, 100, 1), Some((2.0, 2.0)));
    }

    /// A standard normal draw (Box–Muller).
    fn normal(rng: &mut Rng) -> f64 {
        let u1 = 1.0 - rng.next_f64(); // (0, 1]: ln is finite
        let u2 = rng.next_f64();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// The 95 % interval holds the true mean of a normal sample of 30 in about 95 % of
    /// trials. The percentile bootstrap is known to run a little short of its level at
    /// small n (its intervals are too narrow by about the factor sqrt((n − 1)/n)); with
    /// these seeds 186 of 200 trials (93.0 %) cover the mean.
    #[test]
    fn bootstrap_interval_covers_the_true_mean_about_95_percent_of_the_time() {
        let (trials, n, mu, sigma) = (200, 30, 12.0, 3.0);
        let mut rng = Rng::new(2024);
        let mut covered = 0;
        for t in 0..trials {
            let sample: Vec<f64> = (0..n).map(|_| mu + sigma * normal(&mut rng)).collect();
            let (lo, hi) = bootstrap_mean_ci(&sample, CI_LEVEL, BOOTSTRAP_RESAMPLES, t).unwrap();
            if lo <= mu && mu <= hi {
                covered += 1;
            }
        }
        let rate = covered as f64 / trials as f64;
        println!(
            "bootstrap 95 % interval coverage: {covered} of {trials} trials ({:.1} %)",
            rate * 100.0
        );
        assert!((0.88..=0.99).contains(&rate), "coverage {rate}");
    }
}
