//! Bursty loss on the wire: the Gilbert–Elliott model around any other link.
//!
//! The channel is in one of two states, *good* and *bad*, each with its own probability
//! of losing a packet (E. N. Gilbert, "Capacity of a burst-noise channel", Bell System
//! Technical Journal 39(5), 1960; E. O. Elliott, "Estimates of error rates for codes on
//! burst-noise channels", BSTJ 42(5), 1963). Here the state changes in time rather than
//! per packet: each stay in a state lasts an exponentially distributed time with the
//! state's mean, so the chain is a continuous-time Markov chain whose share of time in the
//! bad state is `mean_bad / (mean_good + mean_bad)`, and the long-run loss of packets
//! sent at any steady pace is
//!
//! ```text
//!   (mean_good · loss_good + mean_bad · loss_bad) / (mean_good + mean_bad)
//! ```
//!
//! ([`GilbertElliottConfig::stationary_loss`]). Time-based stays make the bursts the same
//! length in time whatever the packet rate, which is how radio fades and interference
//! behave.
//!
//! The loss strikes a packet as it leaves the inner link (after its queue, its serialiser
//! and its propagation delay): the packet used the link's capacity and is then corrupted,
//! and the state is read at the time it leaves. Losses are reported to the observer as
//! [`LossKind::Wire`]. The random source is seeded by the caller, so runs repeat exactly;
//! the chain starts in its stationary distribution at the link's origin.

use crate::{Action, Io, Link, LinkPacket, LinkStats, Loss, LossKind, Port, QueueInfo, Timer};
use l4s_aqm::{QueueId, QueueStats};
use l4s_core::{Dur, Rate, Rng, Time};

/// Parameters of the two-state chain.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GilbertElliottConfig {
    /// Probability of losing a packet in the good state (often 0).
    pub loss_good: f64,
    /// Probability of losing a packet in the bad state.
    pub loss_bad: f64,
    /// Mean stay in the good state.
    pub mean_good: Dur,
    /// Mean stay in the bad state (the mean burst length).
    pub mean_bad: Dur,
}

impl GilbertElliottConfig {
    /// Long-run share of the time spent in the bad state.
    pub fn bad_share(&self) -> f64 {
        let (g, b) = (self.mean_good.as_secs_f64(), self.mean_bad.as_secs_f64());
        b / (g + b)
    }

    /// Long-run loss of packets sent at a steady pace (see the module documentation).
    pub fn stationary_loss(&self) -> f64 {
        let pb = self.bad_share();
        (1.0 - pb) * self.loss_good + pb * self.loss_bad
    }

    /// Check the parameters; the error names the key and what was expected.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        for (k, p) in [("loss_good", self.loss_good), ("loss_bad", self.loss_bad)] {
            if !(0.0..=1.0).contains(&p) {
                return Err((k, format!("expected a probability from 0 to 1, found {p}")));
            }
        }
        for (k, d) in [("mean_good", self.mean_good), ("mean_bad", self.mean_bad)] {
            if d < Dur::from_micros(1) {
                return Err((k, format!("expected a mean stay of at least 1us, found {d}")));
            }
        }
        Ok(())
    }
}

/// The loss model around an inner link; see the module documentation.
pub struct GilbertElliott<P> {
    inner: Box<dyn Link<P>>,
    cfg: GilbertElliottConfig,
    rng: Rng,
    bad: bool,
    /// When the current stay ends (`None` before [`Link::start`]: good, no changes).
    until: Option<Time>,
    scratch: Vec<Action<P>>,
    /// Packets lost so far (reported as [`LinkStats::wire_losses`]).
    lost: u64,
}

impl<P: LinkPacket + 'static> GilbertElliott<P> {
    pub fn new(inner: Box<dyn Link<P>>, cfg: GilbertElliottConfig, rng: Rng) -> GilbertElliott<P> {
        GilbertElliott {
            inner,
            cfg,
            rng,
            bad: false,
            until: None,
            scratch: Vec::new(),
            lost: 0,
        }
    }

    /// An exponentially distributed stay with this mean (at least 1 ns).
    fn stay(&mut self, mean: Dur) -> Dur {
        let u = self.rng.next_f64();
        Dur(((-(1.0 - u).ln()) * mean.as_nanos() as f64) as u64).max(Dur(1))
    }

    fn mean(&self, bad: bool) -> Dur {
        if bad {
            self.cfg.mean_bad
        } else {
            self.cfg.mean_good
        }
    }

    /// Advance the chain to `t` (times before the current one leave the state as it is).
    fn state_at(&mut self, t: Time) -> bool {
        while let Some(until) = self.until.filter(|&u| t >= u) {
            self.bad = !self.bad;
            let d = self.stay(self.mean(self.bad));
            self.until = Some(until + d);
        }
        self.bad
    }

    /// Decide the fate of every packet the inner link delivered in this call (the actions
    /// from `from` on).
    fn strike(&mut self, from: usize, io: &mut Io<'_, P>) {
        let mut scratch = std::mem::take(&mut self.scratch);
        crate::stage::each_delivery(io, from, &mut scratch, |io, port, pkt, due| {
            let p = if self.state_at(due) {
                self.cfg.loss_bad
            } else {
                self.cfg.loss_good
            };
            if p > 0.0 && self.rng.chance(p) {
                self.lost += 1;
                io.lost(Loss {
                    pkt,
                    kind: LossKind::Wire,
                    sojourn: Dur::ZERO,
                });
            } else {
                io.deliver(port, pkt, due);
            }
        });
        self.scratch = scratch;
    }
}

impl<P: LinkPacket + 'static> Link<P> for GilbertElliott<P> {
    delegate_queries!();
    fn start(&mut self, origin: Time, io: &mut Io<'_, P>) {
        // The stationary distribution, then an exponential (memoryless) first stay.
        self.bad = self.rng.chance(self.cfg.bad_share());
        let d = self.stay(self.mean(self.bad));
        self.until = Some(origin + d);
        let from = io.actions_mut().len();
        self.inner.start(origin, io);
        self.strike(from, io);
    }
    fn send(&mut self, from: Port, to: Port, pkt: P, io: &mut Io<'_, P>) {
        let mark = io.actions_mut().len();
        self.inner.send(from, to, pkt, io);
        self.strike(mark, io);
    }
    fn handle_timeout(&mut self, timer: Timer, at: Time, io: &mut Io<'_, P>) {
        let mark = io.actions_mut().len();
        self.inner.handle_timeout(timer, at, io);
        self.strike(mark, io);
    }
    fn stats(&self) -> LinkStats {
        LinkStats {
            wire_losses: self.inner.stats().wire_losses + self.lost,
            ..self.inner.stats()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{drive, Pkt, Seen};
    use crate::{RateSchedule, Wired};
    use l4s_aqm::{AqmConfig, FifoConfig};
    use l4s_core::Ecn;

    fn lossy(cfg: GilbertElliottConfig, seed: u64) -> GilbertElliott<Pkt> {
        let wire = Wired::new(
            None,
            Dur::from_millis(1),
            &AqmConfig::Fifo(FifoConfig::default()),
            None,
            RateSchedule::default(),
            Dur::from_millis(2),
            Rng::new(0),
        );
        GilbertElliott::new(Box::new(wire), cfg, Rng::new(seed))
    }

    fn offers(n: u64, every: Dur) -> Vec<(Time, usize, usize, Pkt)> {
        (0..n)
            .map(|i| {
                (
                    Time(i * every.as_nanos()),
                    0,
                    1,
                    Pkt {
                        id: i,
                        size: 200,
                        ecn: Ecn::NotEct,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn the_long_run_loss_is_the_stationary_loss() {
        // 2 ms good stays, 0.5 ms bad ones, 1 % and 50 % loss: 10.8 % in the long run.
        let cfg = GilbertElliottConfig {
            loss_good: 0.01,
            loss_bad: 0.5,
            mean_good: Dur::from_millis(2),
            mean_bad: Dur::from_micros(500),
        };
        assert!((cfg.stationary_loss() - 0.108).abs() < 1e-12);
        for seed in 1..=5 {
            let mut l = lossy(cfg, seed);
            let mut seen = Seen::default();
            let out = drive(
                &mut l,
                offers(100_000, Dur::from_micros(100)),
                Time::from_secs(20),
                &mut seen,
            );
            let lost = seen.lost.len() as f64 / 100_000.0;
            assert_eq!(out.len() + seen.lost.len(), 100_000);
            assert!(seen.lost.iter().all(|l| l.2 == LossKind::Wire));
            assert!(
                (lost / cfg.stationary_loss() - 1.0).abs() < 0.1,
                "seed {seed}: {lost} against {}",
                cfg.stationary_loss()
            );
            assert_eq!(l.stats().wire_losses as usize, seen.lost.len());
        }
    }

    #[test]
    fn losses_come_in_bursts() {
        // No loss when good, all lost when bad: losses are runs of consecutive packets
        // whose mean length is the mean bad stay over the packet spacing (5 here).
        let cfg = GilbertElliottConfig {
            loss_good: 0.0,
            loss_bad: 1.0,
            mean_good: Dur::from_millis(5),
            mean_bad: Dur::from_micros(500),
        };
        let mut l = lossy(cfg, 3);
        let mut seen = Seen::default();
        drive(
            &mut l,
            offers(50_000, Dur::from_micros(100)),
            Time::from_secs(10),
            &mut seen,
        );
        let ids: Vec<u64> = seen.lost.iter().map(|l| l.1).collect();
        let runs = 1 + ids.windows(2).filter(|w| w[1] != w[0] + 1).count();
        let mean_run = ids.len() as f64 / runs as f64;
        assert!((4.0..6.5).contains(&mean_run), "mean burst {mean_run} packets");
    }

    #[test]
    fn the_same_seed_loses_the_same_packets() {
        let cfg = GilbertElliottConfig {
            loss_good: 0.02,
            loss_bad: 0.3,
            mean_good: Dur::from_millis(3),
            mean_bad: Dur::from_millis(1),
        };
        let run = |seed| {
            let mut seen = Seen::default();
            drive(
                &mut lossy(cfg, seed),
                offers(5_000, Dur::from_micros(100)),
                Time::from_secs(2),
                &mut seen,
            );
            seen.lost
        };
        assert_eq!(run(9), run(9));
        assert_ne!(run(9), run(10));
    }

    #[test]
    fn bad_parameters_name_the_key() {
        let ok = GilbertElliottConfig {
            loss_good: 0.0,
            loss_bad: 0.5,
            mean_good: Dur::from_secs(1),
            mean_bad: Dur::from_millis(10),
        };
        assert!(ok.validate().is_ok());
        assert_eq!(
            GilbertElliottConfig { loss_bad: 1.5, ..ok }.validate().unwrap_err().0,
            "loss_bad"
        );
        assert_eq!(
            GilbertElliottConfig {
                mean_good: Dur::ZERO,
                ..ok
            }
            .validate()
            .unwrap_err()
            .0,
            "mean_good"
        );
    }
}
