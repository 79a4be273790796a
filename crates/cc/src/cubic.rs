//! CUBIC (RFC 9438) with classic ECN treated as loss (RFC 9438 §4.6 / RFC 3168 §6.1.2).
//!
//! Units: the window is in bytes (`f64`); the cubic function works in segments of the
//! current MSS and seconds, as RFC 9438 §4.2 writes it. Slow start is RFC 5681 with
//! ABC L = 2 (shared with [`crate::reno`]). HyStart++ (RFC 9406) is not implemented
//! (RFC 9438 §4.10 recommends it; this uses the RFC 5681 slow start that it also allows).

use crate::api::{AckSample, CcInfo, CongestionControl, EcnMode};
use l4s_core::{Dur, Ecn, Time};

/// RFC 9438 §4.1: C = 0.4 segments/s³.
pub const C: f64 = 0.4;
/// RFC 9438 §4.6: β_cubic = 0.7.
pub const BETA: f64 = 0.7;
/// Linux `tcp_cubic.c` beta = 717/1024.
pub const BETA_LINUX: f64 = 717.0 / 1024.0;
/// ABE β for CUBIC on ECN (RFC 8511 §3: ≈0.85).
pub const BETA_ECN_ABE: f64 = 0.85;

/// Parameters of [`Cubic`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubicConfig {
    pub mss: u32,
    pub initial_cwnd_pkts: u32,
    /// Use Linux's β = 717/1024 instead of RFC 9438's 0.7.
    pub linux_beta: bool,
    /// RFC 9438 §4.7 fast convergence.
    pub fast_convergence: bool,
    /// RFC 8511 ABE on ECN (β_ecn = 0.85).
    pub abe: bool,
    /// HyStart++ (RFC 9406) slow-start exit; off by default.
    pub hystart: bool,
    /// Request classic ECN.
    pub ecn: bool,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            mss: 1448,
            initial_cwnd_pkts: 10,
            linux_beta: false,
            fast_convergence: true,
            abe: false,
            ecn: true,
            hystart: false,
        }
    }
}

/// RFC 9406 §4.3 constants.
const HS_MIN_RTT_THRESH: Dur = Dur::from_millis(4);
const HS_MAX_RTT_THRESH: Dur = Dur::from_millis(16);
const HS_MIN_RTT_DIVISOR: u64 = 8;
const HS_N_RTT_SAMPLE: u32 = 8;
const HS_CSS_GROWTH_DIVISOR: f64 = 4.0;
const HS_CSS_ROUNDS: u32 = 5;

/// HyStart++ state (RFC 9406 §4.2).
#[derive(Clone, Copy, Debug, Default)]
struct HyStart {
    window_end: Option<u64>,
    last_round_min_rtt: Option<Dur>,
    current_round_min_rtt: Option<Dur>,
    rtt_sample_count: u32,
    /// `Some(baseline)` while in Conservative Slow Start.
    css_baseline_min_rtt: Option<Dur>,
    css_rounds: u32,
}

#[derive(Clone, Copy, Debug)]
struct Saved {
    cwnd: f64,
    ssthresh: u64,
    w_max: f64,
    cwnd_prior: f64,
    k: f64,
    t_epoch: Option<Time>,
    cwnd_epoch: f64,
    w_est: f64,
}

/// CUBIC congestion control.
#[derive(Clone, Debug)]
pub struct Cubic {
    cfg: CubicConfig,
    mss: u32,
    beta: f64,
    /// Window in bytes.
    cwnd: f64,
    ssthresh: u64,
    /// W_max in segments (RFC 9438 §4.2).
    w_max: f64,
    /// cwnd_prior in segments (§4.3).
    cwnd_prior: f64,
    /// K in seconds (§4.2 eq. 2).
    k: f64,
    /// Start of the current congestion-avoidance epoch (§4.2).
    t_epoch: Option<Time>,
    /// cwnd at the start of the epoch, segments.
    cwnd_epoch: f64,
    /// Reno-friendly estimate W_est in segments (§4.3).
    w_est: f64,
    /// Start of an application-limited period, excluded from t (§4.2).
    app_limited_since: Option<Time>,
    saved: Option<Saved>,
    hs: HyStart,
    negotiated: EcnMode,
    pub reductions: u64,
}

impl Cubic {
    pub fn new(cfg: CubicConfig) -> Cubic {
        let mss = cfg.mss.max(1);
        Cubic {
            cfg,
            mss,
            beta: if cfg.linux_beta { BETA_LINUX } else { BETA },
            cwnd: f64::from(cfg.initial_cwnd_pkts.max(1)) * f64::from(mss),
            ssthresh: u64::MAX,
            w_max: 0.0,
            cwnd_prior: 0.0,
            k: 0.0,
            t_epoch: None,
            cwnd_epoch: 0.0,
            w_est: 0.0,
            app_limited_since: None,
            saved: None,
            hs: HyStart::default(),
            negotiated: if cfg.ecn { EcnMode::Classic } else { EcnMode::Off },
            reductions: 0,
        }
    }

    /// Start in congestion avoidance with `cwnd_pkts` segments (tests, fallbacks).
    pub fn with_window(cfg: CubicConfig, cwnd_pkts: f64) -> Cubic {
        let mut c = Cubic::new(cfg);
        c.cwnd = cwnd_pkts * f64::from(c.mss);
        c.ssthresh = c.cwnd as u64;
        c
    }

    fn segs(&self) -> f64 {
        self.cwnd / f64::from(self.mss)
    }
    /// Window in segments (unrounded).
    pub fn cwnd_segments(&self) -> f64 {
        self.segs()
    }
    /// K in seconds (RFC 9438 §4.2 eq. 2).
    pub fn k(&self) -> f64 {
        self.k
    }
    /// W_max in segments.
    pub fn w_max(&self) -> f64 {
        self.w_max
    }
    /// W_est in segments.
    pub fn w_est(&self) -> f64 {
        self.w_est
    }
    /// W_cubic(t) in segments, RFC 9438 §4.2 eq. 1.
    pub fn w_cubic(&self, t: f64) -> f64 {
        C * (t - self.k).powi(3) + self.w_max
    }
    /// α_cubic = 3(1−β)/(1+β) (RFC 9438 §4.3 eq. 4).
    pub fn alpha_cubic(&self) -> f64 {
        3.0 * (1.0 - self.beta) / (1.0 + self.beta)
    }

    fn save(&mut self) {
        self.saved = Some(Saved {
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            w_max: self.w_max,
            cwnd_prior: self.cwnd_prior,
            k: self.k,
            t_epoch: self.t_epoch,
            cwnd_epoch: self.cwnd_epoch,
            w_est: self.w_est,
        });
    }

    /// RFC 9438 §4.6 multiplicative decrease and §4.7 fast convergence.
    fn congestion_event(&mut self, beta: f64) {
        self.save();
        let cwnd = self.segs();
        self.cwnd_prior = cwnd;
        self.w_max = if self.cfg.fast_convergence && cwnd < self.w_max {
            cwnd * (1.0 + beta) / 2.0
        } else {
            cwnd
        };
        let new = (cwnd * beta).max(2.0);
        self.ssthresh = (new * f64::from(self.mss)) as u64;
        self.cwnd = new * f64::from(self.mss);
        self.t_epoch = None;
        self.hs = HyStart::default();
        self.reductions += 1;
    }

    fn ca_increase(&mut self, s: &AckSample) {
        let now = s.now;
        let seg = f64::from(self.mss);
        let acked = s.acked_bytes as f64 / seg;
        if acked <= 0.0 {
            return;
        }
        let cwnd = self.segs();
        let epoch = match self.t_epoch {
            Some(t) => t,
            None => {
                // §4.2: a new epoch starts at the first ACK in congestion avoidance.
                self.t_epoch = Some(now);
                self.cwnd_epoch = cwnd;
                self.w_est = cwnd;
                if self.w_max <= cwnd {
                    // No loss yet (left slow start by ssthresh) or above the old maximum.
                    self.k = 0.0;
                    self.w_max = cwnd;
                } else {
                    self.k = ((self.w_max - cwnd) / C).cbrt();
                }
                now
            }
        };
        let t = now.since(epoch).as_secs_f64();
        let rtt = if s.srtt.is_zero() {
            s.rtt.unwrap_or(Dur::ZERO)
        } else {
            s.srtt
        }
        .as_secs_f64();
        // §4.3 Reno-friendly region: W_est += α·acked/cwnd; α = 1 once W_est ≥ cwnd_prior.
        let alpha = if self.w_est >= self.cwnd_prior {
            1.0
        } else {
            self.alpha_cubic()
        };
        self.w_est += alpha * acked / cwnd;
        if self.w_cubic(t) < self.w_est {
            self.cwnd = self.w_est * seg;
            return;
        }
        // §4.4/4.5: target = W_cubic(t + RTT) clamped to [cwnd, 1.5·cwnd];
        // cwnd += (target − cwnd)/cwnd per acked segment.
        let target = self.w_cubic(t + rtt).clamp(cwnd, 1.5 * cwnd);
        self.cwnd += (target - cwnd) / cwnd * acked * seg;
    }
}

impl Cubic {
    /// True while in HyStart++ Conservative Slow Start.
    pub fn in_css(&self) -> bool {
        self.hs.css_baseline_min_rtt.is_some()
    }

    /// RFC 9406 §4.2 per-ACK processing in slow start; returns true in CSS.
    fn hystart_ack(&mut self, s: &AckSample) -> bool {
        let hs = &mut self.hs;
        // Round boundaries: a round ends when the ACK covers windowEnd.
        let new_round = match hs.window_end {
            None => true,
            Some(end) => s.snd_una >= end,
        };
        if new_round {
            if hs.css_baseline_min_rtt.is_some() {
                hs.css_rounds += 1;
            }
            hs.window_end = Some(s.snd_nxt);
            hs.last_round_min_rtt = hs.current_round_min_rtt;
            hs.current_round_min_rtt = None;
            hs.rtt_sample_count = 0;
        }
        if let Some(rtt) = s.rtt {
            hs.current_round_min_rtt = Some(hs.current_round_min_rtt.map_or(rtt, |m| m.min(rtt)));
            hs.rtt_sample_count += 1;
        }
        match hs.css_baseline_min_rtt {
            None => {
                if let (true, Some(cur), Some(last)) = (
                    hs.rtt_sample_count >= HS_N_RTT_SAMPLE,
                    hs.current_round_min_rtt,
                    hs.last_round_min_rtt,
                ) {
                    let thresh = (last / HS_MIN_RTT_DIVISOR)
                        .max(HS_MIN_RTT_THRESH)
                        .min(HS_MAX_RTT_THRESH);
                    if cur >= last + thresh {
                        hs.css_baseline_min_rtt = Some(cur);
                        hs.css_rounds = 0;
                    }
                }
            }
            Some(base) => {
                if hs.current_round_min_rtt.is_some_and(|c| c < base) && hs.rtt_sample_count >= HS_N_RTT_SAMPLE {
                    // Spurious: back to standard slow start.
                    hs.css_baseline_min_rtt = None;
                } else if hs.css_rounds >= HS_CSS_ROUNDS {
                    // Enter congestion avoidance.
                    hs.css_baseline_min_rtt = None;
                    self.ssthresh = self.cwnd as u64;
                    return false;
                }
            }
        }
        self.hs.css_baseline_min_rtt.is_some()
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
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
        if s.mss > 0 {
            self.mss = s.mss;
        }
        if !s.cwnd_limited {
            self.app_limited_since.get_or_insert(s.now);
            return;
        }
        if let Some(since) = self.app_limited_since.take() {
            // §4.2: t excludes application-limited periods.
            if let Some(t) = self.t_epoch.as_mut() {
                *t += s.now.since(since);
            }
        }
        if s.in_recovery || s.in_cwr {
            return;
        }
        if (self.cwnd as u64) < self.ssthresh {
            let seg = f64::from(self.mss);
            let mut inc = (s.acked_bytes as f64).min(2.0 * seg);
            if self.cfg.hystart && self.hystart_ack(s) {
                inc /= HS_CSS_GROWTH_DIVISOR;
            }
            self.cwnd = (self.cwnd + inc).min(self.ssthresh as f64);
            return;
        }
        self.ca_increase(s);
    }
    fn on_ecn_congestion(&mut self, s: &AckSample) {
        if s.mss > 0 {
            self.mss = s.mss;
        }
        // RFC 9438 §4.6: respond to ECN-Echo as to loss (ABE option: β = 0.85).
        let beta = if self.cfg.abe { BETA_ECN_ABE } else { self.beta };
        self.congestion_event(beta);
    }
    fn on_loss(&mut self, _now: Time, _bytes_in_flight: u64) {
        self.congestion_event(self.beta);
    }
    fn on_recovery_exit(&mut self, _now: Time) {}
    fn on_rto(&mut self, _now: Time) {
        // §4.8: as a congestion event, then cwnd = 1 segment and slow start to ssthresh.
        self.congestion_event(self.beta);
        self.cwnd = f64::from(self.mss);
    }
    fn on_idle_restart(&mut self, _now: Time, idle: Dur, rto: Dur) {
        // The cubic epoch needs no shift here: the idle period is application-limited,
        // which §4.2 already excludes from t (Linux: CA_EVENT_TX_START).
        let iw = u64::from(self.cfg.initial_cwnd_pkts.max(1)) * u64::from(self.mss);
        let (c, s) = crate::api::idle_restart(self.cwnd as u64, self.ssthresh, iw, idle, rto);
        self.cwnd = c as f64;
        self.ssthresh = s;
    }
    fn on_undo(&mut self, _now: Time) {
        // §4.9: restore the state saved before the spurious reduction.
        if let Some(sv) = self.saved.take() {
            self.cwnd = self.cwnd.max(sv.cwnd);
            self.ssthresh = sv.ssthresh;
            self.w_max = sv.w_max;
            self.cwnd_prior = sv.cwnd_prior;
            self.k = sv.k;
            self.t_epoch = sv.t_epoch;
            self.cwnd_epoch = sv.cwnd_epoch;
            self.w_est = sv.w_est;
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
    fn loss_at_100_gives_70_and_k() {
        let mut c = Cubic::with_window(
            CubicConfig {
                mss: 1000,
                ..Default::default()
            },
            100.0,
        );
        c.on_loss(Time::ZERO, 100_000);
        assert_eq!(c.cwnd(), 70_000);
        assert_eq!(c.w_max(), 100.0);
        // K is set at the start of the next epoch (first ACK in CA).
        let mut clock = AckClock::new(1000, Dur::from_millis(100));
        clock.round(&mut c, |_| false);
        assert!((c.k() - 75f64.cbrt()).abs() < 1e-3, "K = {}", c.k());
        assert!((c.k() - 4.217).abs() < 1e-3);
    }

    #[test]
    fn back_at_w_max_after_k() {
        let mut c = Cubic::with_window(
            CubicConfig {
                mss: 1000,
                ..Default::default()
            },
            100.0,
        );
        c.on_loss(Time::ZERO, 100_000);
        let rtt = Dur::from_millis(100);
        let mut clock = AckClock::new(1000, rtt);
        let mut reached = None;
        let mut concave_ok = true;
        for _ in 0..100 {
            clock.round(&mut c, |_| false);
            if c.cwnd_segments() > 100.0 + 1e-9 && reached.is_none() {
                reached = Some(clock.now);
            }
            if reached.is_none() && c.cwnd_segments() < 69.99 {
                concave_ok = false;
            }
        }
        assert!(concave_ok);
        // The epoch starts with the first ACK (one RTT after the loss).
        let t = reached.expect("never reached W_max").as_secs_f64() - rtt.as_secs_f64();
        let k = 75f64.cbrt();
        assert!(
            (t - k).abs() <= rtt.as_secs_f64() + 1e-9,
            "reached W_max at {t}, K = {k}"
        );
        // It keeps growing (convex region) afterwards.
        assert!(c.cwnd_segments() > 110.0, "{}", c.cwnd_segments());
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut c = Cubic::with_window(
            CubicConfig {
                mss: 1000,
                ..Default::default()
            },
            100.0,
        );
        c.on_loss(Time::ZERO, 0); // W_max = 100, cwnd = 70
        c.on_loss(Time::ZERO, 0); // cwnd 70 < W_max: W_max = 70·1.7/2 = 59.5, cwnd 49
        assert!((c.w_max() - 59.5).abs() < 1e-9, "{}", c.w_max());
        assert_eq!(c.cwnd(), 49_000);
        let mut nf = Cubic::with_window(
            CubicConfig {
                mss: 1000,
                fast_convergence: false,
                ..Default::default()
            },
            100.0,
        );
        nf.on_loss(Time::ZERO, 0);
        nf.on_loss(Time::ZERO, 0);
        assert!((nf.w_max() - 70.0).abs() < 1e-9);
    }

    #[test]
    fn reno_friendly_region_at_small_windows() {
        // W_max = 10 segments, RTT 10 ms: W_cubic grows far slower than Reno would.
        let mut c = Cubic::with_window(
            CubicConfig {
                mss: 1000,
                ..Default::default()
            },
            10.0,
        );
        c.on_loss(Time::ZERO, 0);
        assert_eq!(c.cwnd(), 7_000);
        let rtt = Dur::from_millis(10);
        let mut clock = AckClock::new(1000, rtt);
        clock.round(&mut c, |_| false); // epoch starts
        let epoch = clock.now;
        for _ in 0..20 {
            clock.round(&mut c, |_| false);
        }
        let t = clock.now.since(epoch).as_secs_f64();
        let wc = c.w_cubic(t);
        // Reno-friendly: α_cubic per RTT up to cwnd_prior (10), then 1 per RTT.
        // 3/0.529 ≈ 5.7 RTTs to reach 10, then ≈ 15 RTTs at +1: ≈ 25 segments.
        let w = c.cwnd_segments();
        assert!(w > wc + 5.0, "cwnd {w} should follow W_est, W_cubic = {wc}");
        assert!((21.0..=27.0).contains(&w), "cwnd {w}");
        assert!((c.w_est() - w).abs() < 1e-9);
    }

    #[test]
    fn ecn_as_loss_and_abe_and_undo() {
        let s = sample(Time::ZERO, 1000);
        let mut c = Cubic::with_window(
            CubicConfig {
                mss: 1000,
                ..Default::default()
            },
            100.0,
        );
        c.on_ecn_congestion(&s);
        assert_eq!(c.cwnd(), 70_000);
        c.on_undo(Time::ZERO);
        assert_eq!(c.cwnd(), 100_000);
        let mut a = Cubic::with_window(
            CubicConfig {
                mss: 1000,
                abe: true,
                ..Default::default()
            },
            100.0,
        );
        a.on_ecn_congestion(&s);
        assert_eq!(a.cwnd(), 85_000);
        let mut l = Cubic::with_window(
            CubicConfig {
                mss: 1000,
                linux_beta: true,
                ..Default::default()
            },
            1024.0,
        );
        l.on_loss(Time::ZERO, 0);
        assert_eq!(l.cwnd(), 717_000);
        l.on_rto(Time::ZERO);
        assert_eq!(l.cwnd(), 1000);
    }

    #[test]
    fn hystart_plus_plus_exits_on_rtt_increase() {
        // The RTT jumps from 40 to 60 ms after 300 ACKs (a queue builds).
        let mut c = Cubic::new(CubicConfig {
            mss: 1000,
            hystart: true,
            ..Default::default()
        });
        let mut t = Time::ZERO;
        let (mut una, mut nxt) = (0u64, 10_000u64);
        let mut css_seen = false;
        for i in 0..20_000 {
            t += Dur::from_micros(100);
            let rtt = if i < 300 {
                Dur::from_millis(40)
            } else {
                Dur::from_millis(60)
            };
            una += 1000;
            if una >= nxt {
                nxt = una + c.cwnd();
            }
            let s = AckSample {
                now: t,
                acked_bytes: 1000,
                acked_pkts: 1,
                rtt: Some(rtt),
                srtt: rtt,
                snd_una: una,
                snd_nxt: nxt,
                mss: 1000,
                cwnd_limited: true,
                ..Default::default()
            };
            c.on_ack(&s);
            css_seen |= c.in_css();
            if !c.in_slow_start() {
                break;
            }
        }
        assert!(css_seen, "entered CSS");
        assert!(!c.in_slow_start(), "left slow start without a loss");
        assert_eq!(c.reductions, 0);
        // Without HyStart++ the same ACK stream stays in slow start.
        let plain = Cubic::new(CubicConfig {
            mss: 1000,
            ..Default::default()
        });
        assert!(plain.in_slow_start());
    }

    #[test]
    fn slow_start_doubles() {
        let mut c = Cubic::new(CubicConfig {
            mss: 1000,
            ..Default::default()
        });
        let mut clock = AckClock::new(1000, Dur::from_millis(50));
        clock.round(&mut c, |_| false);
        clock.round(&mut c, |_| false);
        assert_eq!(c.cwnd(), 40_000);
    }
}
