//! CUBIC (RFC 9438) with classic ECN treated as loss (RFC 9438 §4.6 / RFC 3168 §6.1.2).
//!
//! Units: the window is in bytes (`f64`); the cubic function works in segments of the
//! current MSS and seconds, as RFC 9438 §4.2 writes it. Slow start is RFC 5681 with
//! ABC L = 2 (shared with [`crate::reno`]). By default slow start ends at the first loss
//! or ECN echo (RFC 5681, which RFC 9438 §4.10 allows); [`Hystart`] chooses an earlier
//! exit: Linux's HyStart (`tcp_cubic.c`, on by default in Linux) or HyStart++ (RFC 9406,
//! which RFC 9438 §4.10 recommends).

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
    /// Slow-start exit before the first loss; off by default.
    pub hystart: Hystart,
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
            hystart: Hystart::Off,
        }
    }
}

/// How CUBIC may leave slow start before the first loss.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hystart {
    /// Only at the first loss or ECN echo (RFC 5681).
    #[default]
    Off,
    /// Linux's HyStart (`tcp_cubic.c`, `hystart_detect` = ACK train and delay), as the
    /// Linux CUBIC that live runs use has it by default.
    Linux,
    /// HyStart++ (RFC 9406).
    Rfc9406,
}

/// Linux `hystart_low_window`: HyStart looks only at windows of at least 16 packets.
const LHS_LOW_WINDOW: f64 = 16.0;
/// Linux `hystart_ack_delta_us`: ACKs at most 2 ms apart make a train.
const LHS_ACK_DELTA: Dur = Dur::from_millis(2);
/// Linux `HYSTART_MIN_SAMPLES`: RTT samples per round before the delay test.
const LHS_MIN_SAMPLES: u32 = 8;
/// Linux `HYSTART_DELAY_MIN`/`MAX`: the delay test's threshold, an eighth of the minimum
/// RTT, is clamped to [4 ms, 16 ms].
const LHS_DELAY_MIN: Dur = Dur::from_millis(4);
const LHS_DELAY_MAX: Dur = Dur::from_millis(16);
/// Linux `hystart_ack_delay`: at most 1 ms of cushion for TSO/GRO, the time of four
/// 64 KB GSO packets (`sk_gso_max_size` of a veth) at the pacing rate.
const LHS_ACK_CUSHION_MAX: Dur = Dur::from_millis(1);
const LHS_GSO_MAX_SIZE: f64 = 65_536.0;
/// Linux `cubictcp_acked`: delay samples in the first second (HZ) of an epoch after a
/// reduction are not used.
const LHS_EPOCH_QUIET: Dur = Dur::from_secs(1);

/// Linux HyStart state (`struct bictcp`: `delay_min`, `found`, `round_start`, `end_seq`,
/// `last_ack`, `curr_rtt`, `sample_cnt`).
#[derive(Clone, Copy, Debug, Default)]
struct LinuxHystart {
    found: bool,
    /// Smallest RTT sample (`delay_min`).
    delay_min: Option<Dur>,
    round_start: Time,
    last_ack: Time,
    /// The round ends when an ACK passes this sequence number; `None`: at the next ACK.
    end_seq: Option<u64>,
    /// Smallest RTT sample of this round.
    curr_rtt: Option<Dur>,
    sample_cnt: u32,
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
    lhs: LinuxHystart,
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
            lhs: LinuxHystart::default(),
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

    /// Linux `cubictcp_acked` and `hystart_update` (net/ipv4/tcp_cubic.c): every ACK with
    /// an RTT sample updates the minimum RTT; in slow start, a window of at least 16
    /// packets ends it (ssthresh = cwnd) when a train of ACKs, each within 2 ms of the
    /// last, has lasted longer than the minimum RTT plus a TSO cushion since the round
    /// began (half of that when the sender does not pace), or when the smallest of a
    /// round's RTT samples after the first 8 exceeds the minimum by an eighth of it,
    /// clamped to [4 ms, 16 ms]. A round ends when an ACK passes the `snd_nxt` of its
    /// start.
    fn linux_hystart_acked(&mut self, s: &AckSample) {
        let Some(rtt) = s.rtt else { return };
        if self.t_epoch.is_some_and(|t| s.now.since(t) < LHS_EPOCH_QUIET) {
            return;
        }
        let delay = rtt.max(Dur(1_000));
        let delay_min = self.lhs.delay_min.map_or(delay, |d| d.min(delay));
        self.lhs.delay_min = Some(delay_min);
        if self.lhs.found || (self.cwnd as u64) >= self.ssthresh {
            return;
        }
        // `hystart_ack_delay`, from the pacing rate Linux keeps (`tcp_update_pacing_rate`).
        let cushion = CongestionControl::pacing_rate(&*self, s.srtt, s.bytes_in_flight)
            .filter(|r| r.0 > 0)
            .map_or(Dur::ZERO, |r| {
                Dur::from_secs_f64(LHS_GSO_MAX_SIZE * 4.0 / r.bytes_per_sec()).min(LHS_ACK_CUSHION_MAX)
            });
        let low_window = self.cwnd / f64::from(self.mss) < LHS_LOW_WINDOW;
        let h = &mut self.lhs;
        if h.end_seq.is_none_or(|e| s.snd_una > e) {
            // `bictcp_hystart_reset`.
            h.round_start = s.now;
            h.last_ack = s.now;
            h.end_seq = Some(s.snd_nxt);
            h.curr_rtt = None;
            h.sample_cnt = 0;
        }
        if low_window {
            return;
        }
        let mut found = false;
        // ACK train.
        if s.now.since(h.last_ack) <= LHS_ACK_DELTA {
            h.last_ack = s.now;
            let mut threshold = delay_min + cushion;
            if !s.paced {
                threshold = threshold / 2;
            }
            if s.now.since(h.round_start) > threshold {
                found = true;
            }
        }
        // Delay increase.
        h.curr_rtt = Some(h.curr_rtt.map_or(delay, |c| c.min(delay)));
        if h.sample_cnt < LHS_MIN_SAMPLES {
            h.sample_cnt += 1;
        } else if h
            .curr_rtt
            .is_some_and(|c| c > delay_min + (delay_min / 8).clamp(LHS_DELAY_MIN, LHS_DELAY_MAX))
        {
            found = true;
        }
        if found {
            h.found = true;
            self.ssthresh = self.cwnd as u64;
        }
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
    fn reads_paced(&self) -> bool {
        // `hystart_update`: the ACK-train threshold is halved when the socket is not paced.
        self.cfg.hystart == Hystart::Linux
    }
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
        if self.cfg.hystart == Hystart::Linux {
            // `pkts_acked` runs for every ACK, before the window grows.
            self.linux_hystart_acked(s);
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
            if self.cfg.hystart == Hystart::Rfc9406 && self.hystart_ack(s) {
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
        // Linux `cubictcp_state` on TCP_CA_Loss: `bictcp_reset` (HyStart may find the exit
        // again, from a new minimum RTT) and a new round at the next ACK.
        self.lhs = LinuxHystart::default();
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
            hystart: Hystart::Rfc9406,
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

    /// Slow start from 10 packets of 1000 B under Linux's HyStart, fed an ACK per packet
    /// `gap` apart with the RTT `rtt(round)`, until it ends: the ssthresh it set, in
    /// packets, and the round it did so in. A round begins at the first ACK past the
    /// `snd_nxt` of the last one's start, so the rounds begin at 20, 41, 83, 167, 335 and
    /// 671 packets (each has its window plus one ACKs, and each ACK adds a packet).
    fn linux_hystart_exit(gap: Dur, paced: bool, rtt: impl Fn(u32) -> Dur) -> Option<(u64, u32)> {
        let mut c = Cubic::new(CubicConfig {
            mss: 1000,
            hystart: Hystart::Linux,
            ..Default::default()
        });
        let mut t = Time::from_secs(1);
        let (mut una, mut nxt) = (0u64, c.cwnd());
        let mut round = 0;
        for _ in 0..100_000 {
            t += gap;
            una += 1000;
            if una > nxt {
                round += 1;
                nxt = una + c.cwnd();
            }
            c.on_ack(&AckSample {
                now: t,
                acked_bytes: 1000,
                acked_pkts: 1,
                rtt: Some(rtt(round)),
                srtt: rtt(round),
                snd_una: una,
                snd_nxt: nxt,
                mss: 1000,
                cwnd_limited: true,
                paced,
                ..Default::default()
            });
            if !c.in_slow_start() {
                assert_eq!(c.reductions, 0);
                assert!(c.cwnd() >= c.ssthresh());
                return Some((c.ssthresh() / 1000, round));
            }
        }
        None
    }

    #[test]
    fn linux_hystart_ends_slow_start_on_a_delay_increase_of_an_eighth_clamped_to_4_ms() {
        // ACKs 3 ms apart never make a train. From round 4 on, the RTT is 40 ms plus `up`;
        // the threshold is 40 ms + max(40/8, 4) = 45 ms, crossed by the smallest of a
        // round's first 9 samples.
        let ms = Dur::from_millis;
        let run = |up: Dur| linux_hystart_exit(ms(3), false, |r| if r < 4 { ms(40) } else { ms(40) + up });
        // Round 4 begins at 167 packets and ends slow start at its 9th ACK, the first
        // after 8 samples: ssthresh is the window before that ACK, 167 + 8.
        assert_eq!(run(Dur::from_micros(5_100)), Some((175, 4)));
        assert_eq!(run(Dur::from_micros(4_900)), None, "below the threshold: no exit");
        // A 400 ms path: the threshold is clamped to 16 ms, not 50.
        let far = |up: Dur| linux_hystart_exit(ms(3), false, |r| if r < 4 { ms(400) } else { ms(400) + up });
        assert!(far(ms(17)).is_some());
        assert_eq!(far(ms(15)), None);
    }

    #[test]
    fn linux_hystart_ends_slow_start_when_an_ack_train_outlasts_half_the_minimum_rtt() {
        // A constant 40 ms RTT and ACKs 0.1 ms apart (120 Mbit/s of 1500 B): a round's
        // train of n ACKs lasts n·0.1 ms. Unpaced, the threshold is (40 ms + 1 ms of TSO
        // cushion)/2 = 20.5 ms: a round
        // ends slow start at the ACK 20.6 ms after its first, its 207th, so the first round
        // of more than 206 ACKs (5, from 335 packets) with ssthresh 335 + 206.
        let ms = Dur::from_millis;
        let gap = Dur::from_micros(100);
        assert_eq!(linux_hystart_exit(gap, false, |_| ms(40)), Some((541, 5)));
        // Paced, the threshold is the whole 41 ms: round 6 (671 packets), at its 412th ACK.
        assert_eq!(linux_hystart_exit(gap, true, |_| ms(40)), Some((1082, 6)));
        // ACKs more than 2 ms apart are no train: without a delay increase, no exit.
        assert_eq!(linux_hystart_exit(Dur::from_micros(2_100), false, |_| ms(40)), None);
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
