//! Capacity processes: a link's capacity over time drawn from a seed instead of read from
//! a file, and turned into delivery opportunities that a [`crate::TraceLink`] replays.
//!
//! The processes are those used to stand in for measured cellular capacity: a constant
//! rate; a piecewise-constant pattern (a square wave is two steps); a sawtooth; a Gaussian
//! redrawn every step and clipped to bounds; a Markov-modulated process whose states (say
//! good, bad and an outage at rate 0) last exponentially distributed times; and a log-rate
//! AR(1) process, `ln C(t+Δ) = μ + φ(ln C(t) − μ) + σε` with standard normal ε, clipped to
//! bounds when it is sampled (the process itself is not clipped, so φ keeps its meaning).
//!
//! **To opportunities**: a byte credit grows by `C(t)·1 ms/8` every millisecond, and each
//! [`crate::trace::OPPORTUNITY_BYTES`] of credit becomes one opportunity at the end of that
//! millisecond, so the trace's capacity in IP bytes is the process's rate (Mahimahi's own
//! convention names an opportunity "one 1500-byte packet"; mm-link moves 1504 bytes in it).
//! The draws come from [`l4s_core::Rng`], whose stream is fixed by this project: the same
//! seed gives the same trace on every platform and in every release.

use crate::trace::{Trace, TraceError, OPPORTUNITY_BYTES};
use l4s_core::{Dur, Rate, Rng};

/// Most milliseconds [`CapacityProcess::rates`] gives (8 bytes each, 512 MiB in all): a
/// run of 18 h 38 min.
pub const MAX_RATE_MS: usize = 64 << 20;

/// One state of a [`CapacityProcess::Markov`] process.
#[derive(Clone, Debug, PartialEq)]
pub struct MarkovState {
    pub rate: Rate,
    /// Mean time in the state (exponentially distributed).
    pub mean_stay: Dur,
}

/// A capacity process; see the module documentation.
#[derive(Clone, Debug, PartialEq)]
pub enum CapacityProcess {
    Constant {
        rate: Rate,
    },
    /// The rate becomes each step's rate at its offset; the pattern starts again every
    /// `period` (the first step is at offset 0).
    Steps {
        steps: Vec<(Dur, Rate)>,
        period: Dur,
    },
    /// From `low` up to `high` in a straight line over `period`, then back to `low`.
    Sawtooth {
        low: Rate,
        high: Rate,
        period: Dur,
    },
    /// A normal draw around `mean` every `step`, clipped to `[min, max]`.
    Gaussian {
        mean: Rate,
        std_dev: Rate,
        step: Dur,
        min: Rate,
        max: Rate,
    },
    /// Each state lasts an exponential time with its mean, then the process moves to one
    /// of the other states, each as likely; it starts in the first state.
    Markov {
        states: Vec<MarkovState>,
    },
    /// `ln C` follows an AR(1) process around `ln median` with coefficient `phi` and
    /// innovation `sigma` every `step`, starting at the median; samples are clipped to
    /// `[min, max]`.
    Ar1 {
        median: Rate,
        sigma: f64,
        phi: f64,
        step: Dur,
        min: Rate,
        max: Rate,
    },
}

impl CapacityProcess {
    /// Check the parameters: the key that is wrong and what was expected.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        // The process is sampled once a millisecond: a step, period or stay shorter than
        // that has no meaning here (and a stay of nanoseconds would take a million draws
        // per sample).
        let positive = |k: &'static str, d: Dur| {
            if d < Dur::from_millis(1) {
                Err((
                    k,
                    format!("expected at least 1ms (the process is sampled every millisecond), found {d}"),
                ))
            } else {
                Ok(())
            }
        };
        let bounds = |min: Rate, max: Rate| {
            if min > max {
                Err(("min", format!("min ({min}) is above max ({max})")))
            } else if max.bits_per_sec() == 0 {
                Err(("max", "expected a maximum above zero".to_string()))
            } else {
                Ok(())
            }
        };
        match self {
            CapacityProcess::Constant { rate } => {
                if rate.bits_per_sec() == 0 {
                    return Err(("rate", "expected a rate above zero".into()));
                }
            }
            CapacityProcess::Steps { steps, period } => {
                if steps.is_empty() || steps[0].0 != Dur::ZERO {
                    return Err(("steps", "expected steps from offset 0, such as [{ at = \"0s\", rate = \"20Mbit\" }, { at = \"5s\", rate = \"5Mbit\" }]".into()));
                }
                if steps.windows(2).any(|w| w[1].0 <= w[0].0) {
                    return Err(("steps", "steps must be in increasing time order".into()));
                }
                positive("period", *period)?;
                if *period <= steps[steps.len() - 1].0 {
                    return Err(("period", "the period must be longer than the last step's offset".into()));
                }
                if steps.iter().all(|s| s.1.bits_per_sec() == 0) {
                    return Err(("steps", "at least one step needs a rate above zero".into()));
                }
            }
            CapacityProcess::Sawtooth { low, high, period } => {
                positive("period", *period)?;
                if low > high {
                    return Err(("low", format!("low ({low}) is above high ({high})")));
                }
                if high.bits_per_sec() == 0 {
                    return Err(("high", "expected a rate above zero".into()));
                }
            }
            CapacityProcess::Gaussian {
                step, min, max, mean, ..
            } => {
                positive("step", *step)?;
                bounds(*min, *max)?;
                if mean.bits_per_sec() == 0 {
                    return Err(("mean", "expected a mean above zero".into()));
                }
            }
            CapacityProcess::Markov { states } => {
                if states.len() < 2 {
                    return Err(("states", "expected at least two states".into()));
                }
                if let Some(s) = states.iter().find(|s| s.mean_stay < Dur::from_millis(1)) {
                    return Err((
                        "states",
                        format!(
                            "every state needs a mean stay of at least 1ms (the process is sampled every millisecond), found {}",
                            s.mean_stay
                        ),
                    ));
                }
                if states.iter().all(|s| s.rate.bits_per_sec() == 0) {
                    return Err(("states", "at least one state needs a rate above zero".into()));
                }
            }
            CapacityProcess::Ar1 {
                median,
                sigma,
                phi,
                step,
                min,
                max,
            } => {
                positive("step", *step)?;
                bounds(*min, *max)?;
                if median.bits_per_sec() == 0 {
                    return Err(("median", "expected a rate above zero".into()));
                }
                if !(0.0..1.0).contains(phi) {
                    return Err(("phi", format!("{phi} is outside [0, 1)")));
                }
                if !(sigma.is_finite() && *sigma >= 0.0) {
                    return Err(("sigma", format!("{sigma} is not a standard deviation (0 or above)")));
                }
            }
        }
        Ok(())
    }

    /// The capacity, in bit/s, for each millisecond of `length` (the rate in force in
    /// that millisecond; a sawtooth at its middle). At most [`MAX_RATE_MS`] milliseconds:
    /// a cellular link holds them all for the run.
    pub fn rates(&self, length: Dur, seed: u64) -> Result<Vec<f64>, TraceError> {
        let n = length.as_nanos() / 1_000_000;
        if n > MAX_RATE_MS as u64 {
            return Err(TraceError {
                line: None,
                message: format!(
                    "a rate for each of more than {MAX_RATE_MS} milliseconds (a run of at most {})",
                    Dur::from_millis(MAX_RATE_MS as u64)
                ),
            });
        }
        let mut out = Vec::with_capacity(n as usize);
        self.each_ms(n, seed, |_, r| {
            out.push(r);
            true
        });
        Ok(out)
    }

    /// Call `f` with each millisecond's index and rate, in bit/s, for the first `n`
    /// milliseconds, until it returns false. Nothing is held per millisecond, so a caller
    /// that stops early pays for what it read.
    fn each_ms(&self, n: u64, seed: u64, mut f: impl FnMut(u64, f64) -> bool) {
        let mut rng = Rng::new(seed);
        let bps = |r: &Rate| r.bits_per_sec() as f64;
        match self {
            CapacityProcess::Constant { rate } => {
                for k in 0..n {
                    if !f(k, bps(rate)) {
                        return;
                    }
                }
            }
            CapacityProcess::Steps { steps, period } => {
                let p = period.as_nanos() / 1_000_000;
                for k in 0..n {
                    let at = Dur::from_millis(k % p.max(1));
                    let r = steps.iter().rev().find(|s| s.0 <= at).map_or(0.0, |s| bps(&s.1));
                    if !f(k, r) {
                        return;
                    }
                }
            }
            CapacityProcess::Sawtooth { low, high, period } => {
                let p = period.as_nanos() as f64 / 1e6;
                for k in 0..n {
                    let x = ((k as f64 + 0.5) % p) / p;
                    if !f(k, bps(low) + (bps(high) - bps(low)) * x) {
                        return;
                    }
                }
            }
            CapacityProcess::Gaussian {
                mean,
                std_dev,
                step,
                min,
                max,
            } => {
                let s = (step.as_nanos() / 1_000_000).max(1);
                let mut r = 0.0;
                for k in 0..n {
                    if k % s == 0 {
                        r = (bps(mean) + bps(std_dev) * normal(&mut rng)).clamp(bps(min), bps(max));
                    }
                    if !f(k, r) {
                        return;
                    }
                }
            }
            CapacityProcess::Markov { states } => {
                let mut state = 0;
                let mut left = stay(&mut rng, states[0].mean_stay);
                for k in 0..n {
                    while left <= 0.0 {
                        let next = rng.below(states.len() as u64 - 1) as usize;
                        state = if next >= state { next + 1 } else { next };
                        left += stay(&mut rng, states[state].mean_stay);
                    }
                    if !f(k, bps(&states[state].rate)) {
                        return;
                    }
                    left -= 1.0;
                }
            }
            CapacityProcess::Ar1 {
                median,
                sigma,
                phi,
                step,
                min,
                max,
            } => {
                let s = (step.as_nanos() / 1_000_000).max(1);
                let mu = bps(median).ln();
                let mut x = mu;
                for k in 0..n {
                    if k > 0 && k % s == 0 {
                        x = mu + phi * (x - mu) + sigma * normal(&mut rng);
                    }
                    if !f(k, x.exp().clamp(bps(min), bps(max))) {
                        return;
                    }
                }
            }
        }
    }

    /// The delivery opportunities of `length` of this process drawn with `seed` (see the
    /// module documentation). A trace counts its times in whole milliseconds in 32 bits,
    /// so `length` is at most `u32::MAX` ms (49.7 days); a process that would give more than
    /// [`crate::trace::MAX_OPPORTUNITIES`] stops there, and the trace refuses it.
    pub fn trace(&self, length: Dur, seed: u64) -> Result<Trace, TraceError> {
        let n = length.as_nanos() / 1_000_000;
        if n >= u64::from(u32::MAX) {
            return Err(TraceError {
                line: None,
                message: format!(
                    "times beyond {}, which a trace cannot count in its 32-bit milliseconds",
                    Dur::from_millis(u64::from(u32::MAX) - 1)
                ),
            });
        }
        let mut credit = 0.0;
        let per = f64::from(OPPORTUNITY_BYTES);
        let mut ms = Vec::new();
        self.each_ms(n, seed, |k, r| {
            credit += r / 8.0 / 1000.0;
            while credit >= per {
                ms.push(k as u32 + 1);
                credit -= per;
            }
            ms.len() <= crate::trace::MAX_OPPORTUNITIES
        });
        Trace::new(ms)
    }
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut Rng) -> f64 {
    let u1 = 1.0 - rng.next_f64();
    let u2 = rng.next_f64();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// An exponential stay with mean `mean`, in milliseconds.
fn stay(rng: &mut Rng, mean: Dur) -> f64 {
    -(1.0 - rng.next_f64()).ln() * mean.as_nanos() as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean(v: &[f64]) -> f64 {
        v.iter().sum::<f64>() / v.len() as f64
    }

    #[test]
    fn a_constant_rate_becomes_a_trace_of_that_mean() {
        let p = CapacityProcess::Constant { rate: Rate::mbps(12) };
        let t = p.trace(Dur::from_secs(10), 1).unwrap();
        let got = t.mean_rate().bits_per_sec() as f64;
        assert!((got / 12e6 - 1.0).abs() < 0.005, "{got}");
        // 12 Mbit/s is 1500 bytes a millisecond: just under one 1504-byte opportunity.
        assert_eq!(t.times_ms()[0], 2);
    }

    #[test]
    fn steps_and_sawtooth_follow_their_shape() {
        let sq = CapacityProcess::Steps {
            steps: vec![(Dur::ZERO, Rate::mbps(20)), (Dur::from_secs(1), Rate::mbps(5))],
            period: Dur::from_secs(2),
        };
        let r = sq.rates(Dur::from_secs(4), 1).unwrap();
        assert_eq!((r[0], r[999], r[1000], r[1999], r[2000]), (20e6, 20e6, 5e6, 5e6, 20e6));
        let t = sq.trace(Dur::from_secs(4), 1).unwrap();
        assert!((t.mean_rate().bits_per_sec() as f64 / 12.5e6 - 1.0).abs() < 0.005);
        let saw = CapacityProcess::Sawtooth {
            low: Rate::mbps(5),
            high: Rate::mbps(15),
            period: Dur::from_secs(1),
        };
        let r = saw.rates(Dur::from_secs(2), 1).unwrap();
        assert!((r[0] - 5.005e6).abs() < 1.0 && (r[999] - 14.995e6).abs() < 1.0 && (r[1000] - 5.005e6).abs() < 1.0);
        assert!((mean(&r) - 10e6).abs() < 1e3);
    }

    #[test]
    fn a_clipped_gaussian_keeps_its_bounds_steps_and_mean() {
        let p = CapacityProcess::Gaussian {
            mean: Rate::mbps(10),
            std_dev: Rate::mbps(2),
            step: Dur::from_millis(100),
            min: Rate::mbps(5),
            max: Rate::mbps(20),
        };
        let r = p.rates(Dur::from_secs(1000), 7).unwrap();
        assert!(r.iter().all(|&x| (5e6..=20e6).contains(&x)));
        // Constant within each 100 ms step.
        assert!(r.chunks(100).all(|c| c.iter().all(|&x| x == c[0])));
        // Clipping at 2.5 σ barely moves the mean; the spread is σ.
        let steps: Vec<f64> = r.iter().step_by(100).copied().collect();
        let m = mean(&steps);
        let sd = (steps.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / steps.len() as f64).sqrt();
        assert!((m / 10e6 - 1.0).abs() < 0.01, "mean {m}");
        assert!((sd / 2e6 - 1.0).abs() < 0.05, "sd {sd}");
        // The same seed gives the same trace; another seed another.
        assert_eq!(p.trace(Dur::from_secs(10), 7), p.trace(Dur::from_secs(10), 7));
        assert_ne!(p.trace(Dur::from_secs(10), 7), p.trace(Dur::from_secs(10), 8));
    }

    #[test]
    fn markov_states_last_their_means_and_outages_have_no_capacity() {
        let p = CapacityProcess::Markov {
            states: vec![
                MarkovState {
                    rate: Rate::mbps(20),
                    mean_stay: Dur::from_secs(2),
                },
                MarkovState {
                    rate: Rate::mbps(5),
                    mean_stay: Dur::from_secs(1),
                },
                MarkovState {
                    rate: Rate::ZERO,
                    mean_stay: Dur::from_millis(500),
                },
            ],
        };
        let r = p.rates(Dur::from_secs(20_000), 3).unwrap();
        // Each state is entered equally often, so its share of time is its mean stay's:
        // 2/3.5, 1/3.5 and 0.5/3.5.
        let share = |v: f64| r.iter().filter(|&&x| x == v).count() as f64 / r.len() as f64;
        assert!((share(20e6) - 2.0 / 3.5).abs() < 0.02, "{}", share(20e6));
        assert!((share(5e6) - 1.0 / 3.5).abs() < 0.02, "{}", share(5e6));
        assert!((share(0.0) - 0.5 / 3.5).abs() < 0.01, "{}", share(0.0));
        // Outages last 500 ms on average.
        let mut runs = Vec::new();
        let mut n = 0;
        for &x in &r {
            if x == 0.0 {
                n += 1;
            } else if n > 0 {
                runs.push(n as f64);
                n = 0;
            }
        }
        let m = mean(&runs);
        assert!((m / 500.0 - 1.0).abs() < 0.06, "mean outage {m} ms over {}", runs.len());
        // An outage leaves a gap in the trace.
        let t = p.trace(Dur::from_secs(60), 3).unwrap();
        let gap = t.times_ms().windows(2).map(|w| w[1] - w[0]).max().unwrap();
        assert!(gap > 100, "longest gap {gap} ms");
    }

    #[test]
    fn a_log_rate_ar1_process_has_its_coefficient() {
        let p = CapacityProcess::Ar1 {
            median: Rate::mbps(10),
            sigma: 0.1,
            phi: 0.95,
            step: Dur::from_millis(100),
            min: Rate::kbps(1),
            max: Rate::gbps(10),
        };
        let r = p.rates(Dur::from_secs(1000), 11).unwrap();
        let x: Vec<f64> = r.iter().step_by(100).map(|v| v.ln()).collect();
        assert_eq!(x.len(), 10_000);
        let m = mean(&x);
        let (mut num, mut den) = (0.0, 0.0);
        for w in x.windows(2) {
            num += (w[0] - m) * (w[1] - m);
            den += (w[0] - m) * (w[0] - m);
        }
        let phi = num / den;
        assert!((phi - 0.95).abs() < 0.02, "phi {phi}");
        // Stationary spread of ln C: σ/√(1−φ²).
        let sd = (x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / x.len() as f64).sqrt();
        let want = 0.1 / (1.0f64 - 0.95 * 0.95).sqrt();
        assert!((sd / want - 1.0).abs() < 0.15, "sd {sd} vs {want}");
        // Clipped when sampled.
        let clipped = CapacityProcess::Ar1 {
            median: Rate::mbps(10),
            sigma: 0.3,
            phi: 0.9,
            step: Dur::from_millis(100),
            min: Rate::mbps(5),
            max: Rate::mbps(20),
        };
        assert!(clipped
            .rates(Dur::from_secs(100), 1)
            .unwrap()
            .iter()
            .all(|&v| (5e6..=20e6).contains(&v)));
    }

    #[test]
    fn bad_parameters_name_their_key() {
        let g = |min, max| CapacityProcess::Gaussian {
            mean: Rate::mbps(10),
            std_dev: Rate::mbps(1),
            step: Dur::from_millis(100),
            min,
            max,
        };
        assert_eq!(g(Rate::mbps(20), Rate::mbps(5)).validate().unwrap_err().0, "min");
        assert!(g(Rate::mbps(5), Rate::mbps(20)).validate().is_ok());
        let ar = |phi: f64| CapacityProcess::Ar1 {
            median: Rate::mbps(10),
            sigma: 0.1,
            phi,
            step: Dur::from_millis(100),
            min: Rate::mbps(1),
            max: Rate::mbps(50),
        };
        assert_eq!(ar(1.0).validate().unwrap_err().0, "phi");
        let saw = CapacityProcess::Sawtooth {
            low: Rate::mbps(20),
            high: Rate::mbps(5),
            period: Dur::from_secs(1),
        };
        assert_eq!(saw.validate().unwrap_err().0, "low");
        let steps = CapacityProcess::Steps {
            steps: vec![(Dur::from_secs(1), Rate::mbps(5))],
            period: Dur::from_secs(2),
        };
        assert_eq!(steps.validate().unwrap_err().0, "steps");
    }

    #[test]
    fn steps_periods_and_stays_under_a_millisecond_are_refused() {
        // Sampled every millisecond: a stay of nanoseconds took a million draws a sample
        // (a 30 s run did not finish in 30 s); such input is now refused by name.
        let markov = |stay: Dur| CapacityProcess::Markov {
            states: vec![
                MarkovState {
                    rate: Rate::mbps(20),
                    mean_stay: Dur::from_secs(1),
                },
                MarkovState {
                    rate: Rate::mbps(5),
                    mean_stay: stay,
                },
            ],
        };
        let e = markov(Dur::from_nanos(1)).validate().unwrap_err();
        assert_eq!(e.0, "states");
        assert!(e.1.contains("at least 1ms") && e.1.contains("1ns"), "{}", e.1);
        assert!(markov(Dur::from_millis(1)).validate().is_ok());
        let ar = |step: Dur| CapacityProcess::Ar1 {
            median: Rate::mbps(10),
            sigma: 0.1,
            phi: 0.5,
            step,
            min: Rate::mbps(1),
            max: Rate::mbps(50),
        };
        assert_eq!(ar(Dur::from_micros(999)).validate().unwrap_err().0, "step");
        assert!(ar(Dur::from_millis(1)).validate().is_ok());
        let saw = CapacityProcess::Sawtooth {
            low: Rate::mbps(5),
            high: Rate::mbps(20),
            period: Dur::from_micros(500),
        };
        assert_eq!(saw.validate().unwrap_err().0, "period");
        let steps = CapacityProcess::Steps {
            steps: vec![(Dur::ZERO, Rate::mbps(5))],
            period: Dur::from_micros(500),
        };
        assert_eq!(steps.validate().unwrap_err().0, "period");
    }

    #[test]
    fn a_run_too_long_for_a_trace_is_refused_before_anything_is_drawn() {
        let p = CapacityProcess::Constant { rate: Rate::mbps(20) };
        // Once, the rates of such a run were allocated before the trace's limits were
        // checked: the process aborted asking for 147 TB.
        let e = p.trace(Dur::from_nanos(u64::MAX), 1).unwrap_err();
        assert!(e.message.contains("32-bit milliseconds"), "{}", e.message);
        let e = p.rates(Dur::from_nanos(u64::MAX), 1).unwrap_err();
        assert!(e.message.contains("more than 67108864 milliseconds"), "{}", e.message);
        let e = p.rates(Dur::from_millis(MAX_RATE_MS as u64 + 1), 1).unwrap_err();
        assert!(e.message.contains("more than 67108864 milliseconds"), "{}", e.message);
        assert_eq!(p.rates(Dur::from_millis(1500), 1).unwrap().len(), 1500);
    }
}
