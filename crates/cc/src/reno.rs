//! Reno / NewReno with classic ECN (RFC 5681, RFC 6582, RFC 3168 §6.1.2), initial window
//! of 10 segments (RFC 6928), appropriate byte counting with L = 2 SMSS (RFC 3465) and an
//! optional ABE response (RFC 8511, β_ecn = 0.8).
//!
//! Units: the window is kept in bytes as `f64` so that the congestion-avoidance increase
//! `SMSS·SMSS/cwnd` per ACK (RFC 5681 §3.1, eq. 3) accumulates without rounding error;
//! [`CongestionControl::cwnd`] rounds it down to whole bytes.

use crate::api::{AckSample, CcInfo, CongestionControl, EcnMode};
use l4s_core::{Dur, Ecn, Time};

/// Reno multiplicative decrease on loss (RFC 5681 §3.1 eq. 4: FlightSize/2).
pub const BETA_LOSS: f64 = 0.5;
/// ABE decrease on an ECN signal (RFC 8511 §3: β_ecn = 0.8 for Reno-like controllers).
pub const BETA_ECN_ABE: f64 = 0.8;

/// Parameters of [`Reno`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RenoConfig {
    /// Sender MSS in bytes until the first ACK reports the one in use.
    pub mss: u32,
    /// Initial window in segments (RFC 6928: 10).
    pub initial_cwnd_pkts: u32,
    /// RFC 8511 Alternative Backoff with ECN: reduce to 0.8·cwnd on ECE instead of 0.5.
    pub abe: bool,
    /// Request classic ECN (RFC 3168) at set-up.
    pub ecn: bool,
}

impl Default for RenoConfig {
    fn default() -> Self {
        RenoConfig {
            mss: 1448,
            initial_cwnd_pkts: 10,
            abe: false,
            ecn: true,
        }
    }
}

/// Reno/NewReno congestion control (byte-counting).
#[derive(Clone, Debug)]
pub struct Reno {
    cfg: RenoConfig,
    mss: u32,
    /// Congestion window in bytes.
    cwnd: f64,
    /// Slow-start threshold in bytes (`u64::MAX` = infinite, RFC 5681 §3.1).
    ssthresh: u64,
    /// State saved at the last reduction, for `on_undo`.
    prior_cwnd: f64,
    prior_ssthresh: u64,
    negotiated: EcnMode,
    /// Number of reductions (loss, ECN, RTO) applied.
    pub reductions: u64,
}

impl Reno {
    pub fn new(cfg: RenoConfig) -> Reno {
        let mss = cfg.mss.max(1);
        let cwnd = f64::from(cfg.initial_cwnd_pkts.max(1)) * f64::from(mss);
        Reno {
            cfg,
            mss,
            cwnd,
            ssthresh: u64::MAX,
            prior_cwnd: cwnd,
            prior_ssthresh: u64::MAX,
            negotiated: if cfg.ecn { EcnMode::Classic } else { EcnMode::Off },
            reductions: 0,
        }
    }

    /// Start from an existing window (used by Prague's and DCTCP's Reno fallback).
    pub fn with_window(cfg: RenoConfig, cwnd_bytes: u64, ssthresh_bytes: u64) -> Reno {
        let mut r = Reno::new(cfg);
        r.cwnd = (cwnd_bytes as f64).max(f64::from(r.mss));
        r.ssthresh = ssthresh_bytes;
        r
    }

    /// Set cwnd = ssthresh = max(`cwnd_bytes`, 2·SMSS) as one reduction (kept for undo).
    /// Used by DCTCP's α-scaled response (RFC 8257 §3.3).
    pub fn reduce_to(&mut self, cwnd_bytes: f64) {
        self.save_prior();
        let target = cwnd_bytes.max(self.min_cwnd());
        self.ssthresh = target as u64;
        self.cwnd = target;
        self.reductions += 1;
    }

    /// The congestion window in bytes, unrounded.
    pub fn cwnd_f64(&self) -> f64 {
        self.cwnd
    }

    fn min_cwnd(&self) -> f64 {
        2.0 * f64::from(self.mss)
    }

    fn save_prior(&mut self) {
        self.prior_cwnd = self.cwnd;
        self.prior_ssthresh = self.ssthresh;
    }

    /// Multiplicative decrease to `max(base·beta, 2·SMSS)`, RFC 5681 §3.1 eq. 4.
    fn reduce(&mut self, base: f64, beta: f64) {
        self.save_prior();
        let target = (base * beta).max(self.min_cwnd());
        self.ssthresh = target as u64;
        self.cwnd = target;
        self.reductions += 1;
    }

    fn take_mss(&mut self, s: &AckSample) {
        if s.mss > 0 {
            self.mss = s.mss;
        }
    }

    /// Slow start / congestion avoidance growth for `acked` bytes (RFC 5681 §3.1).
    pub(crate) fn grow(&mut self, acked: u64) {
        if acked == 0 {
            return;
        }
        let mss = f64::from(self.mss);
        let mut acked = acked as f64;
        if (self.cwnd as u64) < self.ssthresh {
            // Slow start, ABC with L = 2·SMSS (RFC 3465 §2.2).
            let inc = acked.min(2.0 * mss);
            let room = self.ssthresh as f64 - self.cwnd;
            if inc <= room {
                self.cwnd += inc;
                return;
            }
            self.cwnd = self.ssthresh as f64;
            acked = inc - room;
        }
        // Congestion avoidance: +SMSS·acked/cwnd, i.e. +1 SMSS per RTT (RFC 5681 §3.1 eq. 3).
        self.cwnd += mss * acked / self.cwnd.max(1.0);
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }
    fn ecn_request(&self) -> EcnMode {
        EcnMode::classic_if(self.cfg.ecn)
    }
    fn on_ecn_negotiated(&mut self, mode: EcnMode) {
        self.negotiated = mode;
    }
    fn data_ecn(&self) -> Ecn {
        self.negotiated.data_codepoint()
    }
    fn on_ack(&mut self, s: &AckSample) {
        self.take_mss(s);
        // No growth during recovery/CWR (the transport's PRR-like hold) or when the
        // application, not the window, limited sending (RFC 7661 spirit).
        if s.in_recovery || s.in_cwr || !s.cwnd_limited {
            return;
        }
        self.grow(s.acked_bytes);
    }
    fn on_ecn_congestion(&mut self, s: &AckSample) {
        self.take_mss(s);
        // RFC 3168 §6.1.2: react to ECE as to a loss, once per window (the transport's CWR
        // state enforces the once-per-RTT rule). RFC 8511: β_ecn = 0.8 with ABE.
        let beta = if self.cfg.abe { BETA_ECN_ABE } else { BETA_LOSS };
        self.reduce(self.cwnd, beta);
    }
    fn on_loss(&mut self, _now: Time, bytes_in_flight: u64) {
        // RFC 5681 §3.2 step 2 / RFC 6582: ssthresh = max(FlightSize/2, 2·SMSS), cwnd = ssthresh.
        // A zero FlightSize (caller without that information) falls back to cwnd (Linux).
        let base = if bytes_in_flight > 0 {
            bytes_in_flight as f64
        } else {
            self.cwnd
        };
        self.reduce(base, BETA_LOSS);
    }
    fn on_recovery_exit(&mut self, _now: Time) {
        // RFC 6582 §3.2 step 3: deflate to ssthresh (already there).
        if self.ssthresh != u64::MAX && self.cwnd > self.ssthresh as f64 {
            self.cwnd = self.ssthresh as f64;
        }
    }
    fn on_rto(&mut self, _now: Time) {
        // RFC 5681 §3.1 eq. 4 and "LW = 1 SMSS".
        self.save_prior();
        self.ssthresh = ((self.cwnd * BETA_LOSS).max(self.min_cwnd())) as u64;
        self.cwnd = f64::from(self.mss);
        self.reductions += 1;
    }
    fn on_idle_restart(&mut self, _now: Time, idle: Dur, rto: Dur) {
        let iw = u64::from(self.cfg.initial_cwnd_pkts.max(1)) * u64::from(self.mss);
        let (c, s) = crate::api::idle_restart(self.cwnd as u64, self.ssthresh, iw, idle, rto);
        self.cwnd = c as f64;
        self.ssthresh = s;
    }
    fn on_undo(&mut self, _now: Time) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        if self.prior_ssthresh > self.ssthresh {
            self.ssthresh = self.prior_ssthresh;
        }
    }
    fn cwnd(&self) -> u64 {
        self.cwnd as u64
    }
    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
    fn info(&self) -> CcInfo {
        CcInfo::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;

    #[test]
    fn initial_window_is_ten_segments() {
        let r = Reno::new(RenoConfig {
            mss: 1000,
            ..Default::default()
        });
        assert_eq!(r.cwnd(), 10_000);
        assert!(r.in_slow_start());
        assert_eq!(r.ecn_request(), EcnMode::Classic);
    }

    #[test]
    fn slow_start_doubles_per_rtt() {
        let mut r = Reno::new(RenoConfig {
            mss: 1000,
            ..Default::default()
        });
        let mut clock = AckClock::new(1000, Dur::from_millis(100));
        for round in 0..5 {
            let before = r.cwnd();
            clock.round(&mut r, |_| false);
            assert_eq!(r.cwnd(), 2 * before, "round {round}");
        }
        assert_eq!(r.cwnd(), 320_000);
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_rtt() {
        let mut r = Reno::with_window(
            RenoConfig {
                mss: 1000,
                ..Default::default()
            },
            50_000,
            50_000,
        );
        let mut clock = AckClock::new(1000, Dur::from_millis(100));
        for _ in 0..10 {
            let before = r.cwnd_f64();
            clock.round(&mut r, |_| false);
            let inc = r.cwnd_f64() - before;
            // Per-ACK increments of SMSS²/cwnd sum to slightly under 1 SMSS per RTT.
            // (an integer number of ACKs per round: 970–1000 B).
            assert!((inc - 1000.0).abs() < 35.0, "increase {inc}");
        }
        assert!((r.cwnd_f64() - 60_000.0).abs() < 350.0, "{}", r.cwnd_f64());
    }

    #[test]
    fn halves_on_loss_and_on_ece_and_abe() {
        let mut r = Reno::with_window(
            RenoConfig {
                mss: 1000,
                ..Default::default()
            },
            40_000,
            u64::MAX,
        );
        r.on_loss(Time::ZERO, 40_000);
        assert_eq!(r.cwnd(), 20_000);
        assert_eq!(r.ssthresh(), 20_000);
        let s = AckSample {
            mss: 1000,
            ..Default::default()
        };
        r.on_ecn_congestion(&s);
        assert_eq!(r.cwnd(), 10_000);
        let mut a = Reno::with_window(
            RenoConfig {
                mss: 1000,
                abe: true,
                ..Default::default()
            },
            40_000,
            u64::MAX,
        );
        a.on_ecn_congestion(&s);
        assert_eq!(a.cwnd(), 32_000);
        // Floor at 2 SMSS.
        let mut f = Reno::with_window(
            RenoConfig {
                mss: 1000,
                ..Default::default()
            },
            2_500,
            u64::MAX,
        );
        f.on_loss(Time::ZERO, 2_500);
        assert_eq!(f.cwnd(), 2_000);
    }

    #[test]
    fn one_reduction_per_rtt_when_driven_by_cwr() {
        // Every packet of a round is CE-marked; a transport CWR state means one reduction.
        let mut r = Reno::with_window(
            RenoConfig {
                mss: 1000,
                ..Default::default()
            },
            64_000,
            64_000,
        );
        let mut clock = AckClock::new(1000, Dur::from_millis(100));
        // A 5.12 Mbit/s bottleneck spreads the 64 ACKs over the RTT.
        clock.link = Some(l4s_core::Rate::bps(5_120_000));
        clock.run_until(&mut r, Time::from_millis(400), |_| false);
        r = Reno::with_window(
            RenoConfig {
                mss: 1000,
                ..Default::default()
            },
            64_000,
            64_000,
        );
        let n0 = r.reductions;
        let start = clock.now;
        clock.run_until(&mut r, start + Dur::from_millis(50), |_| true);
        // Half an RTT of marks: exactly one reduction.
        assert_eq!(r.reductions - n0, 1);
        assert!((31_000..=33_000).contains(&r.cwnd()), "{}", r.cwnd());
        // Four more RTTs of marks: one reduction per window (±1 for the boundary).
        clock.run_until(&mut r, start + Dur::from_millis(450), |_| true);
        let n = r.reductions - n0;
        assert!((4..=6).contains(&n), "{n} reductions in 4.5 RTTs");
        assert_eq!(n, clock.cwr_entries);
    }

    #[test]
    fn random_loss_throughput_matches_mathis() {
        // RFC 5681 AIMD under random loss p: ≈ 1.22·MSS/(RTT·√p) (±30 %).
        for &(p, rtt_ms) in &[(0.01, 100u64), (0.002, 50), (0.03, 20)] {
            let mut r = Reno::new(RenoConfig {
                mss: 1000,
                ecn: false,
                ..Default::default()
            });
            let rtt = Dur::from_millis(rtt_ms);
            let mut clock = AckClock::new(1000, rtt);
            clock.p_loss = p;
            clock.loss_rng = Some(l4s_core::Rng::new(17));
            clock.run_until(&mut r, Time::from_secs(20), |_| false);
            let b0 = clock.delivered_bytes;
            clock.run_until(&mut r, Time::from_secs(320), |_| false);
            let thr = (clock.delivered_bytes - b0) as f64 / 300.0;
            let pred = 1.22 * 1000.0 / (rtt.as_secs_f64() * p.sqrt());
            let ratio = thr / pred;
            eprintln!("reno p={p} rtt={rtt_ms}: ×{ratio:.2}");
            assert!(
                (0.7..=1.3).contains(&ratio),
                "p={p} rtt={rtt_ms}: {thr:.0} B/s vs {pred:.0} (×{ratio:.2})"
            );
            assert!(clock.losses > 50);
        }
    }

    #[test]
    fn rto_and_undo() {
        let mut r = Reno::with_window(
            RenoConfig {
                mss: 1000,
                ..Default::default()
            },
            40_000,
            u64::MAX,
        );
        r.on_rto(Time::ZERO);
        assert_eq!(r.cwnd(), 1000);
        assert_eq!(r.ssthresh(), 20_000);
        r.on_undo(Time::ZERO);
        assert_eq!(r.cwnd(), 40_000);
        assert_eq!(r.ssthresh(), u64::MAX);
    }
    use l4s_core::Dur;
}
