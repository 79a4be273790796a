//! A link rate that changes over time: the one rate-schedule type of l4s-lab (scenario
//! `rate_schedule`, the simulator's links, the live forwarder and `l4s router
//! --rate-schedule`).
//!
//! A schedule is a list of steps, each an offset from the schedule's origin (time 0 of the
//! run) and the rate that holds from then on, optionally repeated: with `repeat = P` the
//! link returns to its configured rate at every multiple of `P` and the steps (offsets
//! within the period) apply anew. The rate in force is a function of time alone, so a
//! periodic schedule is never expanded and a link idle for many periods costs nothing to
//! catch up. An `end` (the end of a run) stops the schedule: changes due at or after it
//! never take effect.
//!
//! Links apply a change between packets: the packet being serialised when a change falls
//! due finishes at the old rate, and the next one is serialised at the rate in force when
//! its serialisation starts.

use l4s_core::{Dur, Rate};

/// Rate steps over time; see the module documentation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RateSchedule {
    /// (offset from the origin, or within the period; rate from then on), in
    /// non-decreasing time order.
    pub steps: Vec<(Dur, Rate)>,
    /// The period after which the pattern starts again from the configured rate.
    pub repeat: Option<Dur>,
    /// Changes due at or after this offset never take effect.
    pub end: Option<Dur>,
}

impl RateSchedule {
    /// No changes: the configured rate holds.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The same schedule ending at `end` (changes from then on never apply).
    pub fn ending_at(mut self, end: Dur) -> RateSchedule {
        self.end = Some(end);
        self
    }

    /// The latest offset whose changes count when asking about `t`.
    fn horizon(&self, t: Dur) -> Option<Dur> {
        match self.end {
            Some(e) if e.is_zero() => None,
            Some(e) => Some(t.min(Dur(e.as_nanos() - 1))),
            None => Some(t),
        }
    }

    /// The rate in force `t` after the origin on a link configured at `base`, and how many
    /// changes have taken effect by then (with a repeat, each return to `base` at a period
    /// boundary counts as one).
    pub fn at(&self, base: Rate, t: Dur) -> (Rate, u64) {
        let Some(t) = self.horizon(t).filter(|_| !self.steps.is_empty()) else {
            return (base, 0);
        };
        let (periods, within) = match self.repeat {
            Some(p) if !p.is_zero() => (t.as_nanos() / p.as_nanos(), Dur(t.as_nanos() % p.as_nanos())),
            _ => (0, t),
        };
        let due = self.steps.partition_point(|&(at, _)| at <= within);
        let rate = due.checked_sub(1).map_or(base, |i| self.steps[i].1);
        let per_period = self.steps.len() as u64 + 1;
        (rate, periods.saturating_mul(per_period).saturating_add(due as u64))
    }

    /// The rate in force `t` after the origin.
    pub fn rate_at(&self, base: Rate, t: Dur) -> Rate {
        self.at(base, t).0
    }

    /// The first change at or after the origin, if any.
    pub fn first_change(&self) -> Option<Dur> {
        let first = self.steps.first()?.0;
        self.before_end(first)
    }

    /// The first change strictly after `t`, if any.
    pub fn next_change_after(&self, t: Dur) -> Option<Dur> {
        if self.steps.is_empty() {
            return None;
        }
        let next = match self.repeat {
            Some(p) if !p.is_zero() => {
                let (k, within) = (t.as_nanos() / p.as_nanos(), t.as_nanos() % p.as_nanos());
                let base = k.checked_mul(p.as_nanos())?;
                match self.steps.iter().find(|(at, _)| at.as_nanos() > within) {
                    Some(&(at, _)) => base.checked_add(at.as_nanos())?,
                    None => base.checked_add(p.as_nanos())?,
                }
            }
            _ => self.steps.iter().find(|(at, _)| *at > t)?.0.as_nanos(),
        };
        self.before_end(Dur(next))
    }

    fn before_end(&self, t: Dur) -> Option<Dur> {
        match self.end {
            Some(e) if t >= e => None,
            _ => Some(t),
        }
    }

    /// Check the schedule; the error says what is wrong with which step (`steps[i]`,
    /// `repeat`).
    pub fn validate(&self) -> Result<(), (String, String)> {
        for (i, (at, r)) in self.steps.iter().enumerate() {
            if r.bits_per_sec() == 0 {
                return Err((format!("steps[{i}]"), "expected a rate above zero".into()));
            }
            if i > 0 && *at < self.steps[i - 1].0 {
                return Err((
                    format!("steps[{i}]"),
                    format!("expected steps in time order, found {at} after {}", self.steps[i - 1].0),
                ));
            }
        }
        if let Some(period) = self.repeat {
            let Some(&(last, _)) = self.steps.last() else {
                return Err(("repeat".into(), "expected steps to repeat, found none".into()));
            };
            if period <= last {
                return Err((
                    "repeat".into(),
                    format!("expected a period longer than the last step ({last}), found {period}"),
                ));
            }
        }
        Ok(())
    }
}

/// `4s=5Mbit,8s=12Mbit,repeat=12s`: the form of `l4s router --rate-schedule`.
impl std::fmt::Display for RateSchedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (at, r)) in self.steps.iter().enumerate() {
            write!(f, "{}{at}={r}", if i > 0 { "," } else { "" })?;
        }
        if let Some(p) = self.repeat {
            write!(f, ",repeat={p}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(steps: &[(u64, u64)], repeat: Option<u64>) -> RateSchedule {
        RateSchedule {
            steps: steps
                .iter()
                .map(|&(ms, m)| (Dur::from_millis(ms), Rate::mbps(m)))
                .collect(),
            repeat: repeat.map(Dur::from_millis),
            end: None,
        }
    }

    #[test]
    fn the_rate_steps_and_counts_changes() {
        let sc = s(&[(2000, 5), (4000, 10)], None);
        let at = |ms| sc.at(Rate::mbps(20), Dur::from_millis(ms));
        assert_eq!(at(0), (Rate::mbps(20), 0));
        assert_eq!(at(1999), (Rate::mbps(20), 0));
        assert_eq!(at(2000), (Rate::mbps(5), 1));
        assert_eq!(at(86_400_000), (Rate::mbps(10), 2));
        assert_eq!(sc.first_change(), Some(Dur::from_secs(2)));
        assert_eq!(sc.next_change_after(Dur::from_secs(2)), Some(Dur::from_secs(4)));
        assert_eq!(sc.next_change_after(Dur::from_secs(4)), None);
    }

    #[test]
    fn a_repeating_schedule_restarts_from_the_configured_rate() {
        // 20 Mbit/s, 5 from 1 s, 10 from 1.5 s, again every 2 s.
        let sc = s(&[(1000, 5), (1500, 10)], Some(2000));
        for (ms, mbps, applied) in [
            (0, 20, 0),
            (999, 20, 0),
            (1000, 5, 1),
            (1500, 10, 2),
            (1999, 10, 2),
            (2000, 20, 3),
            (3000, 5, 4),
            (3600, 10, 5),
            (4000, 20, 6),
        ] {
            assert_eq!(
                sc.at(Rate::mbps(20), Dur::from_millis(ms)),
                (Rate::mbps(mbps), applied),
                "at {ms} ms"
            );
        }
        // A day on, nothing expanded.
        assert_eq!(
            sc.at(Rate::mbps(20), Dur::from_millis(86_400_000 + 1_200)),
            (Rate::mbps(5), 43_200 * 3 + 1)
        );
        // The change times, one after the other.
        let mut t = sc.first_change();
        let mut seen = Vec::new();
        while let Some(x) = t.filter(|x| x.as_millis_f64() < 6000.0) {
            seen.push(x.as_millis_f64() as u64);
            t = sc.next_change_after(x);
        }
        assert_eq!(seen, [1000, 1500, 2000, 3000, 3500, 4000, 5000, 5500]);
    }

    #[test]
    fn nothing_changes_at_or_after_the_end() {
        // Periods of 12 s in a 60 s run: the return to the configured rate at exactly 60 s
        // is not part of the run.
        let sc = s(&[(4000, 5), (8000, 12)], Some(12_000)).ending_at(Dur::from_secs(60));
        assert_eq!(sc.next_change_after(Dur::from_secs(56)), None);
        assert_eq!(sc.rate_at(Rate::mbps(20), Dur::from_secs(60)), Rate::mbps(12));
        assert_eq!(sc.rate_at(Rate::mbps(20), Dur::from_secs(1000)), Rate::mbps(12));
        assert_eq!(sc.next_change_after(Dur::from_secs(55)), Some(Dur::from_secs(56)));
        let late = s(&[(4000, 5)], None).ending_at(Dur::from_secs(3));
        assert_eq!(late.first_change(), None);
        assert_eq!(late.rate_at(Rate::mbps(20), Dur::from_secs(5)), Rate::mbps(20));
    }

    #[test]
    fn a_step_at_the_period_start_replaces_the_configured_rate() {
        let sc = s(&[(0, 5), (1000, 10)], Some(2000));
        assert_eq!(sc.first_change(), Some(Dur::ZERO));
        assert_eq!(sc.rate_at(Rate::mbps(20), Dur::ZERO), Rate::mbps(5));
        assert_eq!(sc.next_change_after(Dur::from_secs(1)), Some(Dur::from_secs(2)));
        assert_eq!(sc.rate_at(Rate::mbps(20), Dur::from_secs(2)), Rate::mbps(5));
    }

    #[test]
    fn validation_names_the_step() {
        assert!(s(&[(1000, 5), (1000, 7)], None).validate().is_ok());
        let e = s(&[(2000, 5), (1000, 7)], None).validate().unwrap_err();
        assert_eq!(e.0, "steps[1]");
        assert!(e.1.contains("time order"), "{e:?}");
        let e = s(&[(1000, 5), (2000, 7)], Some(2000)).validate().unwrap_err();
        assert_eq!(e.0, "repeat");
        let e = s(&[], Some(2000)).validate().unwrap_err();
        assert!(e.1.contains("found none"), "{e:?}");
    }
}
