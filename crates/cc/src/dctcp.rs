//! DCTCP (RFC 8257).
//!
//! Units: window in bytes (`f64`, via the embedded [`Reno`] for growth and loss); alpha is
//! an `f64` in [0, 1]. The marked fraction is computed per observation window from the
//! delivered / delivered-CE packet counters of [`AckSample`] (Linux `dctcp_update_alpha`
//! since 4.19 counts packets; RFC 8257 §3.3 counts bytes — identical for equal sizes).

use crate::api::{AckSample, CcInfo, CongestionControl, EcnMode};
use crate::reno::{Reno, RenoConfig};
use l4s_core::{Dur, Ecn, Time};

/// RFC 8257 §4.2: estimation gain g = 1/16.
pub const G: f64 = 1.0 / 16.0;

/// Parameters of [`Dctcp`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DctcpConfig {
    pub mss: u32,
    pub initial_cwnd_pkts: u32,
    /// Mark data ECT(1) instead of ECT(0) (Linux uses ECT(0); ECT(1) puts DCTCP in the
    /// L queue of a DualPI2, as in L4S experiments).
    pub ect1: bool,
    /// RFC 8257 §4.2: initial alpha (1 by default).
    pub alpha_init: f64,
}

impl Default for DctcpConfig {
    fn default() -> Self {
        DctcpConfig {
            mss: 1448,
            initial_cwnd_pkts: 10,
            ect1: false,
            alpha_init: 1.0,
        }
    }
}

/// DCTCP congestion control.
#[derive(Clone, Debug)]
pub struct Dctcp {
    cfg: DctcpConfig,
    reno: Reno,
    alpha: f64,
    /// RFC 8257 §3.3 `WindowEnd` (a byte sequence number); `None` before the first ACK.
    window_end: Option<u64>,
    /// Delivered / delivered-CE counters at the start of the observation window.
    old_delivered: u64,
    old_delivered_ce: u64,
    /// A reduction is allowed again once `snd_una ≥ cwr_end` (at most once per window).
    cwr_end: u64,
    negotiated: EcnMode,
    /// Number of ECN reductions applied.
    pub ecn_reductions: u64,
}

impl Dctcp {
    pub fn new(cfg: DctcpConfig) -> Dctcp {
        let reno = Reno::new(RenoConfig {
            mss: cfg.mss,
            initial_cwnd_pkts: cfg.initial_cwnd_pkts,
            abe: false,
            ecn: true,
        });
        let ect = if cfg.ect1 { Ecn::Ect1 } else { Ecn::Ect0 };
        Dctcp {
            cfg,
            reno,
            alpha: cfg.alpha_init.clamp(0.0, 1.0),
            window_end: None,
            old_delivered: 0,
            old_delivered_ce: 0,
            cwr_end: 0,
            negotiated: EcnMode::Accurate { ect },
            ecn_reductions: 0,
        }
    }
    /// Start with a given window in bytes (tests).
    pub fn with_window(cfg: DctcpConfig, cwnd: u64, ssthresh: u64) -> Dctcp {
        let mut d = Dctcp::new(cfg);
        d.reno = Reno::with_window(
            RenoConfig {
                mss: cfg.mss,
                initial_cwnd_pkts: cfg.initial_cwnd_pkts,
                abe: false,
                ecn: true,
            },
            cwnd,
            ssthresh,
        );
        d
    }
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
    pub fn cwnd_f64(&self) -> f64 {
        self.reno.cwnd_f64()
    }
    fn ect(&self) -> Ecn {
        if self.cfg.ect1 {
            Ecn::Ect1
        } else {
            Ecn::Ect0
        }
    }
}

impl CongestionControl for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }
    fn ecn_request(&self) -> EcnMode {
        EcnMode::Accurate { ect: self.ect() }
    }
    fn on_ecn_negotiated(&mut self, mode: EcnMode) {
        // Classic ECN still works (the ECE-per-packet DCTCP receiver, RFC 8257 §3.2); with
        // no ECN at all DCTCP is plain Reno on loss.
        self.negotiated = match mode {
            EcnMode::Accurate { .. } => EcnMode::Accurate { ect: self.ect() },
            m => m,
        };
    }
    fn data_ecn(&self) -> Ecn {
        self.negotiated.data_codepoint()
    }
    fn on_ack(&mut self, s: &AckSample) {
        // RFC 8257 §3.3: at the end of each observation window (SND.UNA > WindowEnd)
        // M = marked/acked; alpha = (1 − g)·alpha + g·M; WindowEnd = SND.NXT.
        match self.window_end {
            None => {
                self.window_end = Some(s.snd_nxt);
                self.old_delivered = s.delivered_pkts.saturating_sub(s.acked_pkts);
                self.old_delivered_ce = s.delivered_ce_pkts.saturating_sub(s.ce_pkts.max(s.ece as u64));
            }
            Some(end) if s.snd_una > end => {
                let acked = s.delivered_pkts.saturating_sub(self.old_delivered);
                let marked = s.delivered_ce_pkts.saturating_sub(self.old_delivered_ce).min(acked);
                if acked > 0 {
                    let m = marked as f64 / acked as f64;
                    self.alpha = ((1.0 - G) * self.alpha + G * m).clamp(0.0, 1.0);
                }
                self.old_delivered = s.delivered_pkts;
                self.old_delivered_ce = s.delivered_ce_pkts;
                self.window_end = Some(s.snd_nxt);
            }
            _ => {}
        }
        // Growth as Reno; frozen during CWR and recovery (no AI in CWR: the DCTCP behaviour that
        // item 4/ of `tcp_prague.c`'s header comment contrasts with Prague's).
        self.reno.on_ack(s);
    }
    fn on_ecn_congestion(&mut self, s: &AckSample) {
        if matches!(self.negotiated, EcnMode::Off) {
            return;
        }
        // RFC 8257 §3.3: at most once per window of data.
        if s.snd_una < self.cwr_end {
            return;
        }
        self.cwr_end = s.snd_nxt;
        if s.mss > 0 {
            self.reno.on_ack(&AckSample {
                mss: s.mss,
                cwnd_limited: false,
                ..*s
            });
        }
        self.reno.reduce_to(self.reno.cwnd_f64() * (1.0 - self.alpha / 2.0));
        self.ecn_reductions += 1;
    }
    fn on_loss(&mut self, now: Time, bytes_in_flight: u64) {
        self.reno.on_loss(now, bytes_in_flight);
    }
    fn on_recovery_exit(&mut self, now: Time) {
        self.reno.on_recovery_exit(now);
    }
    fn on_rto(&mut self, now: Time) {
        self.reno.on_rto(now);
    }
    fn on_undo(&mut self, now: Time) {
        self.reno.on_undo(now);
    }
    fn on_idle_restart(&mut self, now: Time, idle: Dur, rto: Dur) {
        self.reno.on_idle_restart(now, idle, rto);
    }
    fn cwnd(&self) -> u64 {
        self.reno.cwnd()
    }
    fn ssthresh(&self) -> u64 {
        self.reno.ssthresh()
    }
    fn info(&self) -> CcInfo {
        CcInfo {
            alpha: Some(self.alpha),
            rate_mode: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use l4s_core::Dur;

    #[test]
    fn alpha_follows_rfc_formula_over_scripted_windows() {
        let script = [0usize, 5, 20, 10, 0, 1, 3, 20, 0, 7];
        let mut expect = 1.0f64;
        // Exactness check on an isolated, hand-driven sequence:
        let mut d = Dctcp::new(DctcpConfig {
            mss: 1000,
            ..Default::default()
        });
        let mut delivered = 0u64;
        let mut ce = 0u64;
        let mut una = 0u64;
        let mut nxt = 10_000u64;
        // First ACK initialises WindowEnd = nxt.
        let mk = |now: u64, una: u64, nxt: u64, del: u64, ce: u64| AckSample {
            now: Time::from_millis(now),
            acked_bytes: 1000,
            acked_pkts: 1,
            snd_una: una,
            snd_nxt: nxt,
            delivered_pkts: del,
            delivered_ce_pkts: ce,
            mss: 1000,
            cwnd_limited: false,
            ..Default::default()
        };
        d.on_ack(&mk(0, 0, nxt, 0, 0));
        for (w, &k) in script.iter().enumerate() {
            // 10 packets per window, k.min(10) of them marked.
            let k = k.min(10) as u64;
            for i in 0..10u64 {
                delivered += 1;
                una += 1000;
                if i < k {
                    ce += 1;
                }
                if i == 9 {
                    // The last ACK of the window moves SND.UNA past WindowEnd.
                    una = nxt + 1;
                    nxt += 10_000;
                }
                d.on_ack(&mk(w as u64, una, nxt, delivered, ce));
            }
            expect = (1.0 - G) * expect + G * (k as f64 / 10.0);
            assert!(
                (d.alpha() - expect).abs() < 1e-12,
                "window {w}: {} vs {expect}",
                d.alpha()
            );
        }
    }

    #[test]
    fn reduction_once_per_window() {
        let mut d = Dctcp::with_window(
            DctcpConfig {
                mss: 1000,
                alpha_init: 0.5,
                ..Default::default()
            },
            40_000,
            40_000,
        );
        let mut s = sample(Time::ZERO, 1000);
        s.snd_una = 0;
        s.snd_nxt = 40_000;
        d.on_ecn_congestion(&s);
        assert_eq!(d.cwnd(), 30_000); // 40 000·(1 − 0.5/2)
        s.snd_una = 20_000;
        d.on_ecn_congestion(&s); // same window: ignored
        assert_eq!(d.cwnd(), 30_000);
        s.snd_una = 40_000;
        s.snd_nxt = 70_000;
        d.on_ecn_congestion(&s);
        assert_eq!(d.cwnd(), 22_500);
        assert_eq!(d.ecn_reductions, 2);
    }

    #[test]
    fn ecn_codepoint_configurable_and_loss_like_reno() {
        let d = Dctcp::new(DctcpConfig::default());
        assert_eq!(d.ecn_request(), EcnMode::Accurate { ect: Ecn::Ect0 });
        assert_eq!(d.data_ecn(), Ecn::Ect0);
        let mut d1 = Dctcp::new(DctcpConfig {
            ect1: true,
            ..Default::default()
        });
        assert_eq!(d1.data_ecn(), Ecn::Ect1);
        d1.on_ecn_negotiated(EcnMode::Off);
        assert_eq!(d1.data_ecn(), Ecn::NotEct);
        let mut l = Dctcp::with_window(
            DctcpConfig {
                mss: 1000,
                ..Default::default()
            },
            40_000,
            u64::MAX,
        );
        l.on_loss(Time::ZERO, 40_000);
        assert_eq!(l.cwnd(), 20_000);
    }

    #[test]
    fn full_marking_converges_alpha_to_one_and_halves() {
        let mut d = Dctcp::with_window(
            DctcpConfig {
                mss: 1000,
                alpha_init: 0.0,
                ..Default::default()
            },
            40_000,
            40_000,
        );
        let mut clock = AckClock::new(1000, Dur::from_millis(10));
        for _ in 0..200 {
            clock.round(&mut d, |_| true);
        }
        assert!(d.alpha() > 0.99, "{}", d.alpha());
        // One reduction per round: cwnd at the floor.
        assert_eq!(d.cwnd(), 2000);
        // No AI during CWR: with everything marked the window never grows.
        let _ = clock.cwr_entries;
    }
}
