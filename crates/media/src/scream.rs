//! SCReAM v2 (EricssonResearch/scream @c8f84c3 `ScreamV2Tx.cpp`, `ScreamV2TxStream.cpp`,
//! `ScreamTx.h`; draft-johansson-ccwg-rfc8298bis-screamv2): a self-clocked congestion window
//! over RTP packets, from which a media target bitrate is derived, with an L4S mode (ECT(1),
//! DCTCP/Prague-like `l4sAlpha` back-off) and a classic mode (loss, classic CE and a
//! delay-based "virtual CE" that keeps the network queue below half the 100 ms delay target).
//!
//! The controller is sans-IO: [`Scream::on_feedback`] takes one processed RFC 8888 report
//! ([`FeedbackEvent`]), [`Scream::update_rate`] recomputes the stream target on every
//! report and frame, [`Scream::on_frame`] updates `rateAdjustFactor` once per frame,
//! and the sender asks [`Scream::can_send`] and [`Scream::pacing_rate`].
//!
//! Rules, as SCReAM's code applies them on each RFC 8888 report (numbered here so that the
//! rest of this crate can refer to them; the SCReAM function is in brackets):
//! 1. (`incomingStandardizedFeedback`, `detectLoss`, `setLossEvent`) a CE event needs CE in
//!    the report and min(30 ms, sRtt) since the last congestion reaction; a detected loss is
//!    an event only while the loss rate (EWMA over packets, gain min(1/400, MSS/cwnd/2))
//!    exceeds 1 % or `queueDelayAvg` exceeds T/4 (sporadic loss on a short queue is
//!    ignored); loss takes precedence over CE;
//! 2. (`incomingStandardizedFeedback`) `l4sAlpha` at most every min(10 ms, sRtt):
//!    `F = marked/delivered`; F ≥ α: `α ← min(1, α + (F − α)/8)`, otherwise
//!    `α ← α·(1 − 1/128)`;
//! 3. (`incomingStandardizedFeedback`) virtual CE when `queueDelayAvg > T/2`:
//!    `vα = clamp((qdAvg − T/2)/(T/2), 0, 1) / max(1, sRtt/30 ms)`, reacted to as an L4S CE
//!    with α = vα;
//! 4. (`updateCwnd`) decrease: loss ×0.7; classic CE ×0.9; L4S CE `b = α/2`, ×0.25 if
//!    target < 0.8 × acked rate, ÷ max(1, sRtt/30 ms), and if queueDelay < T/4 also
//!    × max(0.25, sclI); `cwnd ← max(cwndMin, (1 − b)·cwnd)`; `cwndI` records the pre-cut
//!    window;
//! 5. (`updateCwnd`) increase: `inc = (bytesAcked − bytesCE)·MSS/cwnd · max(0.25, sclI) ·
//!    min(1, sRtt/25 ms) · (1 + 0.05·(cwnd/MSS)·postCongestionScale·sclI)`, applied only
//!    while `cwnd + inc ≤ MSS + 2·maxBytesInFlight` and the target is below its maximum;
//!    like SCReAM's `updateCwnd`, on every report, also after a decrease in the same
//!    report (the increase from that report's unmarked bytes is not dropped);
//! 6. (`updateCwnd`, `Stream::updateTargetBitrate`) rate: `R = 8·cwnd/min(sRtt + 1 ms, 0.2 s)
//!    · (1 − clamp(MSS/cwnd − 0.1, 0, 0.2)) / 1.1 · MSS/(MSS + 20)`; target =
//!    `clamp(R/(1 + rateAdjustFactor), min, max)`, recomputed on every report and frame
//!    (SCReAM's target hysteresis defaults to 0);
//! 7. (`updateCwnd`, `Stream::newMediaFrame`) pacing rate =
//!    `max(50 kbit/s, 1.5 · adaptiveScale · max(target, rtpRate))`; per frame,
//!    `rateAdjustFactor += (1/8) · 0.2 · (rtpQueueDelay − T_frame/2)/T_frame`, clamped to
//!    [0, 0.5] (it falls again while the RTP queue stays short);
//! 8. (`Stream::updateTargetBitrate`, `Stream::getTargetBitrate`; here in the sender) the RTP
//!    queue is discarded when its delay exceeds 0.1 s.
//!
//! The window is a hand brake, not the usual limit (SCReAM v2 README): a packet may leave
//! while `bytesInFlight + size ≤ cwnd · windowHeadroom + MSS`, with the adaptive
//! `windowHeadroom` ∈ [1.5, 3] (`maxWindowHeadroom`, `kMinWindowHeadroom`) following
//! `latencyDiffCwndScale` ([`Scream::can_send`]). `queueDelayAvg` (virtual CE) and
//! `latencyDiffCwndScale` follow `ScreamV2Tx.cpp`: updated at most every min(30 ms, sRtt),
//! the average with gain 1/4 upwards and replaced by a smaller sample at once; the scale from
//! the spread of the queue delay, which also damps an L4S back-off near the last known
//! maximum and the increase. The queue delay is sampled once per report (the newest packet
//! reported) where SCReAM takes one per packet.
//!
//! Not modelled (documented deviations from @c8f84c3): the rate policer protection (off by
//! default, `enableRatePolicerProtection`), SCReAM's CE-density scaling of F when pacing is
//! off (pacing is always on here), `targetRateScale` (it corrects encoders that miss their
//! target; ours meets it on average), the cwnd cap of `maxTotalBitrate` (off unless the
//! application sets it, as here). Loss detection
//! (`detectLoss`) lives in the sender, [`crate::endpoint`].
//!
//! SCReAM's own equations leave an L4S stream a small share beside TCP Prague: `l4sAlpha`
//! rises by 1/8 towards a sample but decays by only 1/128 per update, so with one report
//! per frame (a dozen packets at 7 Mbit/s) it settles several times above the marking
//! fraction, and between cuts the increase is damped to a quarter (`sclI` floor). The
//! published tests in which SCReAM took more than its share beside Prague (its
//! `test-record.md`, 2024) used a plain EWMA of gain 1/32 instead.

use l4s_core::{Dur, Rate, Time};

/// `ScreamTx.h` `kLossBeta` (`lossBeta`).
pub const LOSS_BETA: f64 = 0.7;
/// `ScreamTx.h` `kEcnCeBeta` (classic `ecnCeBeta`).
pub const ECN_CE_BETA: f64 = 0.9;
/// `ScreamTx.h` `kQueueDelayTargetMin` (seconds, despite the header's "ms").
pub const QUEUE_DELAY_TARGET: Dur = Dur::from_millis(100);
/// `ScreamV2Tx.cpp` `kL4sGUp`, `kL4sGDown`; initial `l4sAlpha` 0.1.
pub const L4S_ALPHA_GAIN_UP: f64 = 1.0 / 8.0;
pub const L4S_ALPHA_GAIN_DOWN: f64 = 1.0 / 128.0;
pub const L4S_ALPHA_INIT: f64 = 0.1;
/// `ScreamV2Tx.cpp` `kSrttVirtual`: virtual sRTT for RTT independence.
pub const VIRTUAL_RTT: Dur = Dur::from_millis(25);
/// `ScreamV2Tx.cpp` `updateCwnd`: an L4S CE event more than 100 × max(sRtt, 25 ms) after
/// the last congestion first caps cwnd at the recent maximum bytes in flight.
pub const LONG_CALM_RTTS: u64 = 100;
/// `ScreamV2Tx.cpp` `kMinCongestionBackOffInterval_ntp`: minimum interval between congestion
/// reactions (also bounded by sRtt).
pub const MIN_CONGESTION_INTERVAL: Dur = Dur::from_millis(30);
/// Rule 2: l4sAlpha update interval bound (10 ms in `incomingStandardizedFeedback`).
pub const ALPHA_INTERVAL: Dur = Dur::from_millis(10);
/// Initial sRTT (`ScreamV2Tx` constructor).
pub const SRTT_INIT: Dur = Dur::from_millis(50);
/// `ScreamTx.h` `kPacketPacingHeadRoom`, `kMaxAdaptivePacingRateScale`.
pub const PACING_HEADROOM: f64 = 1.5;
pub const MAX_ADAPTIVE_PACING_SCALE: f64 = 1.5;
/// `ScreamTx.h` `kBytesInFlightHeadRoom`.
pub const BYTES_IN_FLIGHT_HEADROOM: f64 = 2.0;
/// `ScreamTx.h` `kMultiplicativeIncreaseScalefactor`.
pub const MULTIPLICATIVE_INCREASE: f64 = 0.05;
/// `ScreamV2Tx.cpp` `kPostCongestionDelayRtts`: post-congestion ramp length in RTTs.
pub const POST_CONGESTION_RTTS: f64 = 200.0;
/// `ScreamV2Tx.cpp` `kPacketOverhead`: RTP + UDP overhead per packet in the rate equation.
pub const PACKET_OVERHEAD: f64 = 20.0;
/// Smallest pacing rate (rule 7, `updateCwnd`).
pub const MIN_PACING_RATE: Rate = Rate::kbps(50);
/// `ScreamTx.h` `kLossRateThreshold`: a detected loss is a congestion event only while the
/// loss rate (an EWMA per packet, gain min(threshold/4, MSS/cwnd/2)) exceeds it, or while
/// the queue delay average exceeds a quarter of the target (`setLossEvent`).
pub const LOSS_RATE_THRESHOLD: f64 = 0.01;
/// `ScreamV2TxStream.cpp` `kRateAdjustGain1`, `kRateAdjustGain2`: per frame,
/// `rateAdjustFactor += gain2 · gain1 · (rtpQueueDelay − T_frame/2) / T_frame`, clamped
/// to [0, 0.5].
pub const RAF_GAIN1: f64 = 0.2;
pub const RAF_GAIN2: f64 = 1.0 / 8.0;
/// `queueDelayAvg`: EWMA gain towards a larger sample, updated at most every
/// min(30 ms, sRtt); a smaller sample replaces the average at once (SCReAM's
/// `kQueueDelayAvgAlpha` and its fast-down rule in `ScreamV2Tx.cpp`).
pub const QDELAY_AVG_GAIN: f64 = 1.0 / 4.0;
/// `ScreamV2Tx.cpp` `kLatencyDiffThreshold` (10 ms), `kLatencyDiffAlpha` (1/32) and
/// `kQueueDelayMinMaxAlpha` (1/16): `latencyDiffCwndScale = clamp(1 − latencyDiffAvg /
/// 10 ms, 0, 1)`, with `latencyDiffAvg` an EWMA of the spread between a decaying maximum
/// and a rising minimum of the queue delay, updated at most every min(30 ms, sRtt).
pub const LATENCY_DIFF_THRESHOLD: f64 = 0.010;
pub const LATENCY_DIFF_GAIN: f64 = 1.0 / 32.0;
pub const QDELAY_MIN_MAX_GAIN: f64 = 1.0 / 16.0;
/// `maxWindowHeadroom` (a `ScreamV2Tx` constructor argument, default 3) and the adaptive floor
/// (`ScreamV2Tx.cpp` `kMinWindowHeadroom`): the sender may have up to
/// `cwnd · windowHeadroom + MSS` bytes in flight, with
/// `windowHeadroom = 1.5 + 1.5 · latencyDiffCwndScale` (`updateCwnd`). The window is
/// SCReAM v2's "hand brake", not the usual limit: the rate comes from cwnd/sRtt and the
/// pacer.
pub const MAX_WINDOW_HEADROOM: f64 = 3.0;
pub const MIN_WINDOW_HEADROOM: f64 = 1.5;
/// Upper bound of `rateAdjustFactor` (`ScreamV2TxStream.cpp`).
pub const RAF_MAX: f64 = 0.5;
/// Base OWD: minimum over 10 s buckets, 50 of them (`kBaseDelayUpdateInterval_ntp`,
/// `kBaseOwdHistSize`).
pub const BASE_OWD_BUCKET: Dur = Dur::from_secs(10);
pub const BASE_OWD_BUCKETS: usize = 50;
/// `maxBytesInFlight` restarts every 50 ms (`kSlowUpdateInterval_ntp`); the previous
/// interval's maximum is kept as `maxBytesInFlightPrev`, and the last 20 in
/// `maxBytesInFlightHist` (`kMaxBytesInFlightHistSize`).
const BIF_INTERVAL: Dur = Dur::from_millis(50);
const BIF_HIST: usize = 20;
/// `relFrameSizeHigh` (`Stream::newMediaFrame`, `ScreamTx.h`/`ScreamV2TxStream.cpp`): a
/// histogram of 50 bins over how far frames exceed the average frame size (up to 2 ×
/// average), decaying by 1/1024 per frame; its 80th percentile, once 50 frames were seen,
/// gives `relFrameSizeHigh` ∈ [1, 3).
const REL_FRAME_BINS: usize = 50;
const REL_FRAME_RANGE: f64 = 3.0;
const REL_FRAME_DECAY: f64 = 1.0 / 1024.0;
const REL_FRAME_PERCENTILE: f64 = 0.8;
const REL_FRAME_PREAMBLE: u64 = 50;

/// Parameters of one SCReAM instance (one video stream).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScreamParams {
    /// L4S mode (ECT(1), rule 4's α/2 back-off on CE).
    pub l4s: bool,
    /// Largest RTP packet, bytes (MSS).
    pub mss: u32,
    pub min_bitrate: Rate,
    pub max_bitrate: Rate,
    pub start_bitrate: Rate,
    pub frame_interval: Dur,
}

/// One processed feedback report, as the controller sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FeedbackEvent {
    pub now: Time,
    /// RTP bytes (and packets) newly reported received.
    pub bytes_acked: u64,
    pub pkts_acked: u64,
    /// Of them, CE-marked (zero when CE is not trusted).
    pub bytes_ce: u64,
    pub pkts_ce: u64,
    /// Packets newly declared lost.
    pub pkts_lost: u64,
    /// RTT sample from the newest acknowledged packet.
    pub rtt: Option<Dur>,
    /// One-way delay sample (may include a constant clock offset), ns.
    pub owd_ns: Option<i64>,
    /// Bytes in flight after the report.
    pub bytes_in_flight: u64,
}

/// What a report made the controller do (for tests and stats).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reaction {
    None,
    Loss,
    ClassicCe,
    L4sCe,
    VirtualCe,
}

/// SCReAM v2 sender state.
#[derive(Clone, Debug)]
pub struct Scream {
    p: ScreamParams,
    l4s: bool,
    mss: f64,
    cwnd: f64,
    cwnd_i: f64,
    cwnd_min: f64,
    srtt: Option<Dur>,
    // delay
    base_owd: [i64; BASE_OWD_BUCKETS],
    base_idx: usize,
    base_bucket_start: Time,
    queue_delay: Dur,
    queue_delay_avg: f64,
    last_qd_avg_update: Time,
    /// `queueDelayMaxAvg`, `queueDelayMinAvg`, `latencyDiffAvg`, `latencyDiffCwndScale`.
    qd_max_avg: f64,
    qd_min_avg: f64,
    latency_diff_avg: f64,
    latency_diff_scale: f64,
    window_headroom: f64,
    // L4S
    l4s_alpha: f64,
    alpha_last: Time,
    alpha_delivered: u64,
    alpha_marked: u64,
    // events
    last_congestion: Option<Time>,
    /// When the controller started (SCReAM's `lastCongestionDetectedT_ntp` starts at 0).
    started: Time,
    // bytes in flight history
    /// `maxBytesInFlight` (this interval), `maxBytesInFlightPrev`, and when this one began.
    bif_max: u64,
    bif_max_prev: u64,
    bif_interval_start: Time,
    bif_hist: [u64; BIF_HIST],
    bif_hist_idx: usize,
    /// `relFrameSizeHist`, frames seen, `frameSizePrev`, `relFrameSizeHigh`.
    rel_frame_hist: [f64; REL_FRAME_BINS],
    frames_seen: u64,
    frame_size_prev: f64,
    rel_frame_size_high: f64,
    // rate
    target: f64,
    rate_adjust_factor: f64,
    /// `lossRate`: EWMA over packets of "lost" (1) and "delivered" (0).
    loss_rate: f64,
    adaptive_pacing_scale: f64,
    acked_rate: f64,
    acked_bytes_window: u64,
    acked_window_start: Time,
    /// Reactions by kind.
    pub loss_events: u64,
    /// Losses detected while the loss rate and the queue delay were low (no reaction).
    pub losses_ignored: u64,
    pub ce_events: u64,
    pub virtual_ce_events: u64,
    pub last_reaction: Reaction,
}

impl Scream {
    pub fn new(p: ScreamParams, now: Time) -> Scream {
        let mss = f64::from(p.mss.max(100));
        let target = p.start_bitrate.0.clamp(p.min_bitrate.0, p.max_bitrate.0) as f64;
        let mut s = Scream {
            p,
            l4s: p.l4s,
            mss,
            cwnd: 0.0,
            cwnd_i: 1.0,
            cwnd_min: 2.0 * mss,
            srtt: None,
            base_owd: [i64::MAX; BASE_OWD_BUCKETS],
            base_idx: 0,
            base_bucket_start: now,
            queue_delay: Dur::ZERO,
            queue_delay_avg: 0.0,
            qd_max_avg: 0.0,
            qd_min_avg: 1000.0,
            latency_diff_avg: 0.0,
            latency_diff_scale: 1.0,
            last_qd_avg_update: now,
            window_headroom: MAX_WINDOW_HEADROOM,
            l4s_alpha: L4S_ALPHA_INIT,
            alpha_last: now,
            alpha_delivered: 0,
            alpha_marked: 0,
            last_congestion: None,
            started: now,
            bif_max: 0,
            bif_max_prev: 0,
            bif_interval_start: now,
            bif_hist: [0; BIF_HIST],
            bif_hist_idx: 0,
            rel_frame_hist: [0.0; REL_FRAME_BINS],
            frames_seen: 0,
            frame_size_prev: 0.0,
            rel_frame_size_high: 1.0,
            target,
            rate_adjust_factor: 0.0,
            loss_rate: 0.0,
            adaptive_pacing_scale: 1.0,
            acked_rate: 0.0,
            acked_bytes_window: 0,
            acked_window_start: now,
            loss_events: 0,
            losses_ignored: 0,
            ce_events: 0,
            virtual_ce_events: 0,
            last_reaction: Reaction::None,
        };
        // Start with the window that gives the start bitrate at the initial sRTT (rule 6
        // inverted), at least 3·MSS (`ScreamV2Tx.cpp` `kMinCwndMss`).
        s.cwnd = s.cwnd_for_rate(target, SRTT_INIT).max(3.0 * mss);
        s.cwnd_i = s.cwnd;
        s
    }

    /// The window giving rate `r` (bit/s) at `srtt` by rule 6, ignoring the small-window term.
    fn cwnd_for_rate(&self, r: f64, srtt: Dur) -> f64 {
        let rtt = (srtt + Dur::from_millis(1)).min(Dur::from_millis(200)).as_secs_f64();
        r * rtt * 1.1 * (self.mss + PACKET_OVERHEAD) / self.mss / 8.0
    }

    pub fn params(&self) -> &ScreamParams {
        &self.p
    }
    pub fn is_l4s(&self) -> bool {
        self.l4s
    }
    /// Leave L4S mode (ECN validation failed): from now on the classic rules apply and
    /// the caller passes no CE.
    pub fn disable_l4s(&mut self) {
        self.l4s = false;
    }
    pub fn cwnd(&self) -> u64 {
        self.cwnd as u64
    }
    pub fn cwnd_min(&self) -> u64 {
        self.cwnd_min as u64
    }
    pub fn srtt(&self) -> Dur {
        self.srtt.unwrap_or(SRTT_INIT)
    }
    pub fn l4s_alpha(&self) -> f64 {
        self.l4s_alpha
    }
    pub fn queue_delay(&self) -> Dur {
        self.queue_delay
    }
    pub fn queue_delay_avg(&self) -> Dur {
        Dur::from_secs_f64(self.queue_delay_avg)
    }
    /// Current stream target bitrate.
    pub fn target_bitrate(&self) -> Rate {
        Rate(self.target.round() as u64)
    }
    pub fn rate_adjust_factor(&self) -> f64 {
        self.rate_adjust_factor
    }
    /// max(`maxBytesInFlight`, `maxBytesInFlightPrev`): the largest bytes in flight over
    /// this and the previous 50 ms interval.
    pub fn max_bytes_in_flight(&self) -> u64 {
        self.bif_max.max(self.bif_max_prev)
    }

    /// Whether a packet of `size` bytes may be sent with `bytes_in_flight` outstanding:
    /// `bytesInFlight + size ≤ cwnd · windowHeadroom + MSS` (SCReAM's `isOkToTransmit`);
    /// at least one packet may always be in flight.
    pub fn can_send(&self, bytes_in_flight: u64, size: u32) -> bool {
        bytes_in_flight == 0
            || (bytes_in_flight + u64::from(size)) as f64 <= self.cwnd * self.window_headroom + self.mss
    }

    /// The current window headroom, in [1.5, 3].
    pub fn window_headroom(&self) -> f64 {
        self.window_headroom
    }

    /// `relFrameSizeHigh`: how large the larger frames are against the average, ≥ 1.
    pub fn rel_frame_size_high(&self) -> f64 {
        self.rel_frame_size_high
    }

    /// `latencyDiffCwndScale`, in [0, 1]: 1 while the queue delay holds steady, falling
    /// as its spread approaches 10 ms.
    pub fn latency_diff_scale(&self) -> f64 {
        self.latency_diff_scale
    }

    /// Rule 7: the pacing rate for a media rate `rtp_rate` (encoder output).
    pub fn pacing_rate(&self, rtp_rate: Rate) -> Rate {
        let r = PACING_HEADROOM * self.adaptive_pacing_scale * self.target.max(rtp_rate.0 as f64);
        Rate((r as u64).max(MIN_PACING_RATE.0))
    }

    /// Record bytes in flight after a send (for `maxBytesInFlight`).
    pub fn on_sent(&mut self, now: Time, bytes_in_flight: u64) {
        self.note_bif(now, bytes_in_flight);
    }

    fn note_bif(&mut self, now: Time, bif: u64) {
        if now - self.bif_interval_start > BIF_INTERVAL {
            // SCReAM's slow update (`updateCwnd`): the interval's maximum joins the history
            // and becomes the previous one (after a long silence both are stale, as in the
            // reference). Near the maximum bitrate cwnd may not exceed the largest flight of
            // the last second, or what the maximum bitrate needs with its largest frames.
            self.bif_hist[self.bif_hist_idx] = self.bif_max;
            self.bif_hist_idx = (self.bif_hist_idx + 1) % BIF_HIST;
            let max_rate = self.p.max_bitrate.0 as f64;
            if self.target > 0.95 * max_rate {
                let flight = self.bif_hist.iter().copied().max().unwrap_or(0).max(self.bif_max) as f64;
                let need =
                    PACING_HEADROOM * self.rel_frame_size_high * max_rate / 8.0 * (self.srtt().as_secs_f64() + 0.001);
                self.cwnd = self.cwnd.min(flight.max(need));
            }
            self.bif_max_prev = self.bif_max;
            self.bif_max = 0;
            self.bif_interval_start = now;
        }
        self.bif_max = self.bif_max.max(bif);
    }

    fn note_owd(&mut self, now: Time, owd: i64) {
        while now - self.base_bucket_start >= BASE_OWD_BUCKET {
            self.base_bucket_start += BASE_OWD_BUCKET;
            self.base_idx = (self.base_idx + 1) % BASE_OWD_BUCKETS;
            self.base_owd[self.base_idx] = i64::MAX;
            if now - self.base_bucket_start > BASE_OWD_BUCKET * BASE_OWD_BUCKETS as u64 {
                self.base_bucket_start = now;
            }
        }
        self.base_owd[self.base_idx] = self.base_owd[self.base_idx].min(owd);
        let base = self.base_owd.iter().copied().min().unwrap_or(owd);
        self.queue_delay = Dur::from_nanos(owd.saturating_sub(base).max(0) as u64);
    }

    /// `queueDelayAvg` and `latencyDiffCwndScale`, at most every min(30 ms, sRtt), from the
    /// queue delay's running maximum and minimum; the window headroom from the latter
    /// (SCReAM `ScreamV2Tx::incomingStandardizedFeedback` and `updateCwnd`).
    fn update_queue_delay_stats(&mut self, now: Time) {
        let qd = self.queue_delay.as_secs_f64();
        self.qd_min_avg = self.qd_min_avg.min(qd);
        self.qd_max_avg = self.qd_max_avg.max(qd).min(QUEUE_DELAY_TARGET.as_secs_f64());
        if now - self.last_qd_avg_update > self.congestion_interval() {
            if qd < self.queue_delay_avg {
                self.queue_delay_avg = qd;
            } else {
                self.queue_delay_avg += QDELAY_AVG_GAIN * (qd - self.queue_delay_avg);
            }
            let spread = (self.qd_max_avg - self.qd_min_avg).clamp(0.0, 2.0 * LATENCY_DIFF_THRESHOLD);
            self.latency_diff_avg += LATENCY_DIFF_GAIN * (spread - self.latency_diff_avg);
            self.latency_diff_scale = (1.0 - self.latency_diff_avg / LATENCY_DIFF_THRESHOLD).clamp(0.0, 1.0);
            // The maximum decays towards zero and the minimum rises towards it.
            self.qd_max_avg *= 1.0 - QDELAY_MIN_MAX_GAIN;
            self.qd_min_avg += QDELAY_MIN_MAX_GAIN * (self.qd_max_avg - self.qd_min_avg);
            self.last_qd_avg_update = now;
        }
        self.window_headroom =
            MIN_WINDOW_HEADROOM + (MAX_WINDOW_HEADROOM - MIN_WINDOW_HEADROOM) * self.latency_diff_scale;
    }

    /// min(30 ms, sRtt): the shortest interval between congestion reactions.
    pub fn congestion_interval(&self) -> Dur {
        MIN_CONGESTION_INTERVAL.min(self.srtt())
    }

    /// `sclI = clamp((8·(cwnd − cwndI)/cwndI)², 0.1, 1)`.
    pub fn scl_i(&self) -> f64 {
        let x = 8.0 * (self.cwnd - self.cwnd_i) / self.cwnd_i.max(1.0);
        (x * x).clamp(0.1, 1.0)
    }

    fn post_congestion_scale(&self, now: Time) -> f64 {
        match self.last_congestion {
            None => 1.0,
            Some(t) => {
                let ramp = self.srtt().as_secs_f64() * POST_CONGESTION_RTTS;
                ((now - t).as_secs_f64() / ramp.max(1e-3)).clamp(0.0, 1.0)
            }
        }
    }

    /// Process one feedback report (rules 1–5). Returns the reaction taken.
    pub fn on_feedback(&mut self, ev: &FeedbackEvent) -> Reaction {
        let now = ev.now;
        if let Some(rtt) = ev.rtt {
            self.srtt = Some(match self.srtt {
                None => rtt,
                Some(s) => Dur::from_nanos((s.as_nanos() * 7 + rtt.as_nanos()) / 8),
            });
        }
        if let Some(owd) = ev.owd_ns {
            self.note_owd(now, owd);
        }
        self.update_queue_delay_stats(now);
        self.note_bif(now, ev.bytes_in_flight);
        // Acked rate over ≥ 100 ms windows.
        self.acked_bytes_window += ev.bytes_acked;
        let w = now - self.acked_window_start;
        if w >= Dur::from_millis(100) {
            let r = self.acked_bytes_window as f64 * 8.0 / w.as_secs_f64();
            self.acked_rate = if self.acked_rate == 0.0 {
                r
            } else {
                0.5 * self.acked_rate + 0.5 * r
            };
            self.acked_bytes_window = 0;
            self.acked_window_start = now;
        }
        let srtt = self.srtt();

        // Rule 2: l4sAlpha.
        self.alpha_delivered += ev.pkts_acked;
        self.alpha_marked += ev.pkts_ce;
        if self.l4s && now - self.alpha_last >= ALPHA_INTERVAL.min(srtt) && self.alpha_delivered > 0 {
            let f = self.alpha_marked as f64 / self.alpha_delivered as f64;
            self.l4s_alpha = Self::alpha_step(self.l4s_alpha, f);
            self.alpha_delivered = 0;
            self.alpha_marked = 0;
            self.alpha_last = now;
        }

        // Rules 1 and 3: events, at most one reaction per min(30 ms, sRtt).
        let may_react = self
            .last_congestion
            .is_none_or(|t| now - t >= self.congestion_interval());
        let t_half = QUEUE_DELAY_TARGET.as_secs_f64() / 2.0;
        let rtt_scale = (srtt.as_secs_f64() / MIN_CONGESTION_INTERVAL.as_secs_f64()).max(1.0);
        // Rule 1's loss event (`setLossEvent`, `calculateLossRate`): each detected loss is
        // an event only if the loss rate before it exceeds 1 % or the queue delay average
        // exceeds T/4; then the loss rate takes the losses and the deliveries.
        let gain = (LOSS_RATE_THRESHOLD / 4.0).min(self.mss / self.cwnd.max(1.0) / 2.0);
        let mut loss_event = false;
        for _ in 0..ev.pkts_lost.min(1 << 16) {
            if self.loss_rate > LOSS_RATE_THRESHOLD || self.queue_delay_avg > QUEUE_DELAY_TARGET.as_secs_f64() / 4.0 {
                loss_event = true;
            }
            self.loss_rate += gain * (1.0 - self.loss_rate);
        }
        if ev.pkts_lost > 0 && !loss_event {
            self.losses_ignored += ev.pkts_lost;
        }
        self.loss_rate *= (1.0 - gain).powi(ev.pkts_acked.min(i32::MAX as u64) as i32);
        let mut reaction = Reaction::None;
        if may_react {
            if loss_event {
                reaction = Reaction::Loss;
            } else if ev.pkts_ce > 0 {
                reaction = if self.l4s { Reaction::L4sCe } else { Reaction::ClassicCe };
            } else if self.queue_delay_avg > t_half {
                reaction = Reaction::VirtualCe;
            }
        }
        let scl_pre = self.scl_i();
        // Rule 4: decrease.
        match reaction {
            Reaction::None => {}
            Reaction::Loss => {
                self.cwnd_i = self.cwnd;
                self.cwnd = (self.cwnd * LOSS_BETA).max(self.cwnd_min);
                self.loss_events += 1;
            }
            Reaction::ClassicCe => {
                self.cwnd_i = self.cwnd;
                self.cwnd = (self.cwnd * ECN_CE_BETA).max(self.cwnd_min);
                self.ce_events += 1;
            }
            Reaction::L4sCe | Reaction::VirtualCe => {
                let alpha = if reaction == Reaction::L4sCe {
                    self.l4s_alpha
                } else {
                    ((self.queue_delay_avg - t_half) / t_half).clamp(0.0, 1.0) / rtt_scale
                };
                let b = self.l4s_backoff(alpha, rtt_scale, reaction == Reaction::L4sCe);
                self.cwnd_i = self.cwnd;
                let calm = now - self.last_congestion.unwrap_or(self.started);
                if reaction == Reaction::L4sCe && calm > srtt.max(VIRTUAL_RTT) * LONG_CALM_RTTS {
                    // A long calm (the stream held by its maximum bitrate) may have let cwnd
                    // grow far above what was in flight: back to the previous interval's
                    // maximum first (`updateCwnd`, `maxBytesInFlightPrev`).
                    self.cwnd = self.cwnd.min(self.bif_max_prev as f64);
                }
                self.cwnd = ((1.0 - b) * self.cwnd).max(self.cwnd_min);
                if reaction == Reaction::L4sCe {
                    self.ce_events += 1;
                } else {
                    self.virtual_ce_events += 1;
                }
            }
        }
        if reaction != Reaction::None {
            self.last_congestion = Some(now);
            self.last_reaction = reaction;
        }
        // Rule 5: increase, from this report's unmarked bytes, on every report — also on one
        // that brought a reduction: SCReAM's `updateCwnd` applies the decrease and then the
        // increase from `bytesNewlyAcked − bytesNewlyAckedCe` in the same call, with the
        // `sclI` computed before the decrease (`scl_pre`).
        let acked = ev.bytes_acked.saturating_sub(ev.bytes_ce) as f64;
        if acked > 0.0 {
            let mut inc = acked * self.mss / self.cwnd.max(1.0);
            inc *= scl_pre.max(0.25);
            inc *= (srtt.as_secs_f64() / VIRTUAL_RTT.as_secs_f64()).min(1.0);
            // Less increase while the queue delay varies (`latencyDiffCwndScale`, ≥ 0.1).
            inc *= self.latency_diff_scale.clamp(0.1, 1.0);
            let pcs = self.post_congestion_scale(now);
            inc *= 1.0 + MULTIPLICATIVE_INCREASE * (self.cwnd / self.mss) * pcs * scl_pre;
            let limit = self.mss + BYTES_IN_FLIGHT_HEADROOM * self.max_bytes_in_flight() as f64;
            let below_max = self.target < self.p.max_bitrate.0 as f64;
            if self.cwnd + inc <= limit && below_max {
                self.cwnd += inc;
            }
        }
        reaction
    }

    /// Rule 2's step: fast attack (1/8) when F ≥ α, slow decay (×(1 − 1/128)) otherwise.
    pub fn alpha_step(alpha: f64, f: f64) -> f64 {
        if f >= alpha {
            (alpha + (f - alpha) * L4S_ALPHA_GAIN_UP).min(1.0)
        } else {
            alpha * (1.0 - L4S_ALPHA_GAIN_DOWN)
        }
    }

    /// Rule 4's back-off fraction for `alpha`, an L4S CE event's or a virtual one's: ≤ α/2.
    /// Only the L4S one is scaled down near the last known maximum and while the queue
    /// delay varies (`updateCwnd`).
    fn l4s_backoff(&self, alpha: f64, rtt_scale: f64, marked: bool) -> f64 {
        let mut b = alpha / 2.0;
        if self.target < 0.8 * self.acked_rate {
            b *= 0.25;
        }
        b /= rtt_scale;
        if marked && self.queue_delay < QUEUE_DELAY_TARGET / 4 {
            b *= self.scl_i().max(0.25);
            // "Counteract the limitation in CWND increase when queue delay varies"
            // (`updateCwnd`).
            b *= self.latency_diff_scale.clamp(0.25, 1.0);
        }
        b.clamp(0.0, 0.5)
    }

    /// Rules 6–7, on every report and frame (as SCReAM recomputes it in `updateCwnd` and
    /// `newMediaFrame`): the new stream target from the window and `rateAdjustFactor`, given
    /// the ratio of the last frame size to the mean frame size. Returns the target.
    pub fn update_rate(&mut self, frame_size_ratio: f64) -> Rate {
        self.adaptive_pacing_scale = if frame_size_ratio.is_finite() {
            frame_size_ratio.clamp(1.0, MAX_ADAPTIVE_PACING_SCALE)
        } else {
            1.0
        };
        let r = self.rate_from_cwnd();
        let share = r / (1.0 + self.rate_adjust_factor);
        let (min, max) = (self.p.min_bitrate.0 as f64, self.p.max_bitrate.0 as f64);
        self.target = share.clamp(min, max);
        self.target_bitrate()
    }

    /// Rule 7's `rateAdjustFactor`, once per video frame (`Stream::newMediaFrame` at the
    /// frame's marker): it integrates how far the RTP queue delay is from half a frame
    /// period, so it falls again when the queue stays short.
    /// Also `relFrameSizeHigh`, from the frame's RTP bytes `frame_bytes`.
    pub fn on_frame(&mut self, rtp_queue_delay: Dur, frame_bytes: f64) {
        let fp = self.p.frame_interval.as_secs_f64();
        if fp <= 0.0 {
            return;
        }
        self.frames_seen += 1;
        let avg = self.target * fp / 8.0;
        if frame_bytes > avg && avg > 0.0 {
            // Not more than this frame grew over the last one that exceeded the average
            // (against a sluggish encoder).
            let diff = (frame_bytes - avg).min(frame_bytes - self.frame_size_prev).max(0.0);
            self.frame_size_prev = frame_bytes;
            let bin = (diff / (avg * (REL_FRAME_RANGE - 1.0)) * REL_FRAME_BINS as f64) as usize;
            self.rel_frame_hist[bin.min(REL_FRAME_BINS - 1)] += 1.0;
            for h in &mut self.rel_frame_hist {
                *h *= 1.0 - REL_FRAME_DECAY;
            }
            if self.frames_seen > REL_FRAME_PREAMBLE {
                let mark = self.rel_frame_hist.iter().sum::<f64>() * REL_FRAME_PERCENTILE;
                let (mut ix, mut sum) = (1, self.rel_frame_hist[0]);
                while sum < mark && ix < REL_FRAME_BINS {
                    sum += self.rel_frame_hist[ix];
                    ix += 1;
                }
                self.rel_frame_size_high = 1.0 + (ix - 1) as f64 * (REL_FRAME_RANGE - 1.0) / REL_FRAME_BINS as f64;
            }
        }
        let error = RAF_GAIN1 * (rtp_queue_delay.as_secs_f64() - fp / 2.0) / fp;
        self.rate_adjust_factor = (self.rate_adjust_factor + error * RAF_GAIN2).clamp(0.0, RAF_MAX);
    }

    /// Rule 6's rate equation, bit/s.
    pub fn rate_from_cwnd(&self) -> f64 {
        let rtt = (self.srtt() + Dur::from_millis(1))
            .min(Dur::from_millis(200))
            .as_secs_f64();
        let small = (self.mss / self.cwnd.max(1.0) - 0.1).clamp(0.0, 0.2);
        8.0 * self.cwnd / rtt * (1.0 - small) / 1.1 * self.mss / (self.mss + PACKET_OVERHEAD)
    }

    /// Feedback stopped: collapse the window to the minimum (our guard against a dead
    /// reverse path; SCReAM's sender otherwise stays window-blocked).
    pub fn on_feedback_timeout(&mut self, now: Time) {
        self.cwnd_i = self.cwnd;
        self.cwnd = self.cwnd_min;
        self.last_congestion = Some(now);
        self.loss_events += 1;
        self.last_reaction = Reaction::Loss;
    }

    /// Force the state (unit tests).
    #[doc(hidden)]
    pub fn set_for_test(&mut self, cwnd: f64, alpha: f64, srtt: Dur) {
        self.cwnd = cwnd;
        self.cwnd_i = cwnd;
        self.l4s_alpha = alpha;
        self.srtt = Some(srtt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(l4s: bool) -> ScreamParams {
        ScreamParams {
            l4s,
            mss: 1200,
            min_bitrate: Rate::mbps(1),
            max_bitrate: Rate::mbps(40),
            start_bitrate: Rate::mbps(5),
            frame_interval: Dur::from_nanos(16_666_666),
        }
    }

    fn ev(t_ms: u64, acked_pkts: u64, ce_pkts: u64) -> FeedbackEvent {
        FeedbackEvent {
            now: Time::from_millis(t_ms),
            bytes_acked: acked_pkts * 1200,
            pkts_acked: acked_pkts,
            bytes_ce: ce_pkts * 1200,
            pkts_ce: ce_pkts,
            pkts_lost: 0,
            rtt: Some(Dur::from_millis(25)),
            owd_ns: Some(12_500_000),
            bytes_in_flight: 100_000,
        }
    }

    #[test]
    fn alpha_steps_exact() {
        // Fast attack: α + (F − α)/8.
        assert_eq!(Scream::alpha_step(0.1, 0.5), 0.1 + 0.4 / 8.0);
        assert_eq!(Scream::alpha_step(0.1, 0.1), 0.1);
        assert_eq!(Scream::alpha_step(0.9, 1.0), 0.9 + 0.1 / 8.0);
        // Slow decay: α·(1 − 1/128).
        assert_eq!(Scream::alpha_step(0.1, 0.0), 0.1 * 127.0 / 128.0);
        assert_eq!(Scream::alpha_step(0.5, 0.25), 0.5 * 127.0 / 128.0);
        // Through the controller: one update per min(10 ms, sRtt).
        let mut s = Scream::new(params(true), Time::ZERO);
        s.on_feedback(&ev(20, 10, 5)); // F = 0.5 over 20 ms ≥ 10 ms
        assert!((s.l4s_alpha() - (0.1 + 0.4 / 8.0)).abs() < 1e-12, "{}", s.l4s_alpha());
        let a1 = s.l4s_alpha();
        s.on_feedback(&ev(25, 10, 5)); // 5 ms later: accumulates, no update
        assert_eq!(s.l4s_alpha(), a1);
        s.on_feedback(&ev(30, 10, 0)); // F = 5/20 = 0.25 ≥ 0.15: attack
        assert!((s.l4s_alpha() - (a1 + (0.25 - a1) / 8.0)).abs() < 1e-12);
        let a2 = s.l4s_alpha();
        s.on_feedback(&ev(45, 10, 0)); // F = 0: decay
        assert!((s.l4s_alpha() - a2 * 127.0 / 128.0).abs() < 1e-12);
    }

    #[test]
    fn rel_frame_size_high_and_the_cap_near_the_maximum_bitrate() {
        // Frames alternating 1.5 and 2 × the average: the 2× ones grew 0.5 × average over the
        // last frame above the average (bin 12 of 50), the 1.5× ones not at all (bin 0); the
        // 80th percentile is bin 12: relFrameSizeHigh = 1 + 12 · 2/50.
        let mut s = Scream::new(params(true), Time::ZERO);
        let avg = s.target * s.p.frame_interval.as_secs_f64() / 8.0;
        for k in 0..200 {
            let f = if k % 2 == 0 { 1.5 } else { 2.0 };
            s.on_frame(Dur::ZERO, f * avg);
        }
        assert!(
            (s.rel_frame_size_high() - 1.48).abs() < 1e-12,
            "{}",
            s.rel_frame_size_high()
        );
        // Near the maximum bitrate, every 50 ms cwnd is capped at the larger of the last
        // second's largest flight and what the maximum bitrate needs with such frames:
        // 1.5 · 1.48 · 40 Mbit/s / 8 · (25 ms + 1 ms).
        s.set_for_test(1e6, 0.0, Dur::from_millis(25));
        s.target = s.p.max_bitrate.0 as f64;
        s.on_sent(Time::from_millis(10), 50_000);
        s.on_sent(Time::from_millis(70), 50_000);
        let need = 1.5 * 1.48 * 40e6 / 8.0 * 0.026;
        assert!((s.cwnd - need).abs() < 1.0, "{} vs {need}", s.cwnd);
        // Below 95 % of the maximum, no cap.
        s.set_for_test(1e6, 0.0, Dur::from_millis(25));
        s.target = 0.9 * s.p.max_bitrate.0 as f64;
        s.on_sent(Time::from_millis(130), 50_000);
        assert_eq!(s.cwnd, 1e6);
    }

    #[test]
    fn max_bytes_in_flight_spans_this_and_the_previous_50_ms() {
        // `maxBytesInFlight` restarts at each 50 ms slow update, the old value kept as
        // `maxBytesInFlightPrev`; the increase is limited by the larger of the two.
        let mut s = Scream::new(params(true), Time::ZERO);
        s.on_sent(Time::from_millis(10), 100_000);
        s.on_sent(Time::from_millis(40), 20_000);
        assert_eq!(s.max_bytes_in_flight(), 100_000);
        s.on_sent(Time::from_millis(70), 10_000); // a new interval: the old max is "prev"
        assert_eq!(s.max_bytes_in_flight(), 100_000);
        s.on_sent(Time::from_millis(130), 5_000); // two intervals on: forgotten
        assert_eq!(s.max_bytes_in_flight(), 10_000);
    }

    #[test]
    fn an_l4s_ce_event_after_a_long_calm_caps_cwnd_at_the_recent_flight() {
        // `updateCwnd`: more than 100 × max(sRtt, 25 ms) after the last congestion, an L4S CE
        // event first brings cwnd down to the recent maximum bytes in flight, then backs off.
        for (calm_ms, capped) in [(3_000u64, true), (2_000, false)] {
            let mut s = Scream::new(params(true), Time::ZERO);
            s.set_for_test(400_000.0, 0.2, Dur::from_millis(25));
            s.last_congestion = Some(Time::from_millis(100));
            // 100 000 B in flight on every report (ev), none marked, until just before the CE.
            let t_ce = 100 + calm_ms;
            for t in (t_ce - 900..t_ce).step_by(50) {
                s.on_feedback(&ev(t, 0, 0));
            }
            let before = s.cwnd() as f64;
            let r = s.on_feedback(&ev(t_ce, 4, 4));
            assert_eq!(r, Reaction::L4sCe);
            let after = s.cwnd() as f64;
            if capped {
                assert!(after <= 100_000.0, "{calm_ms} ms: {before} → {after}");
            } else {
                assert!(
                    after > 0.5 * before && after > 100_000.0,
                    "{calm_ms} ms: {before} → {after}"
                );
            }
        }
    }

    #[test]
    fn latency_diff_scale_follows_the_spread_of_the_queue_delay() {
        // `ScreamV2Tx.cpp`: every min(30 ms, sRtt) the spread between the decaying maximum
        // and the rising minimum of the queue delay (≤ 20 ms) enters an EWMA of gain 1/32;
        // latencyDiffCwndScale = clamp(1 − avg/10 ms, 0, 1); windowHeadroom = 1.5 + 1.5·scale.
        let run = |swing_ns: i64| {
            let mut s = Scream::new(params(true), Time::ZERO);
            let (mut max, mut min, mut avg) = (0.0f64, 1000.0f64, 0.0f64);
            let mut last = Time::ZERO;
            for k in 0..400u64 {
                let mut e = ev(k * 5, 4, 0);
                // The queue delay alternates between 0 and the swing every report.
                let q = if k % 2 == 1 { swing_ns } else { 0 };
                e.owd_ns = Some(12_500_000 + q);
                s.on_feedback(&e);
                // The reference arithmetic alongside (sRtt 25 ms: updates every > 25 ms).
                let qd = q as f64 / 1e9;
                min = min.min(qd);
                max = max.max(qd).min(0.1);
                if e.now - last > Dur::from_millis(25) {
                    avg += (((max - min).clamp(0.0, 0.02)) - avg) / 32.0;
                    max *= 15.0 / 16.0;
                    min += (max - min) / 16.0;
                    last = e.now;
                }
            }
            let want = (1.0 - avg / 0.01).clamp(0.0, 1.0);
            assert!(
                (s.latency_diff_scale() - want).abs() < 1e-9,
                "{} vs {want}",
                s.latency_diff_scale()
            );
            assert!((s.window_headroom() - (1.5 + 1.5 * want)).abs() < 1e-9);
            s.latency_diff_scale()
        };
        // A steady queue keeps the scale at 1; a 4 ms swing takes it to about 0.6, a 15 ms
        // swing to 0.
        assert_eq!(run(0), 1.0);
        let mid = run(4_000_000);
        assert!((0.5..0.7).contains(&mid), "{mid}");
        assert_eq!(run(15_000_000), 0.0);
    }

    #[test]
    fn one_reaction_per_min_30ms_srtt_and_backoff_at_most_half_alpha() {
        for srtt_ms in [10u64, 25, 60] {
            let mut s = Scream::new(params(true), Time::ZERO);
            s.set_for_test(200_000.0, 0.6, Dur::from_millis(srtt_ms));
            let gate = Dur::from_millis(30).min(Dur::from_millis(srtt_ms));
            let mut reactions = Vec::new();
            let mut prev = s.cwnd() as f64;
            for t in 0..300u64 {
                let mut e = ev(100 + t, 4, 4);
                e.rtt = Some(Dur::from_millis(srtt_ms));
                let r = s.on_feedback(&e);
                if r != Reaction::None {
                    let now = s.cwnd() as f64;
                    // Single step: cwnd·(1 − b) with b ≤ α/2 (α before this report's update
                    // is ≤ the α used, both ≤ 1).
                    assert!(now >= prev * (1.0 - s.l4s_alpha() / 2.0) - 1.0, "{prev} → {now}");
                    reactions.push(Time::from_millis(100 + t));
                }
                prev = s.cwnd() as f64;
            }
            assert!(reactions.len() > 3);
            for w in reactions.windows(2) {
                assert!(w[1] - w[0] >= gate, "srtt {srtt_ms}: reactions {} apart", w[1] - w[0]);
            }
            // Every CE report in a row (1 ms apart): exactly one reaction per gate.
            let expect = 300 / gate.as_nanos().div_ceil(1_000_000) as usize;
            assert!(reactions.len().abs_diff(expect) <= 1, "{} vs {expect}", reactions.len());
        }
    }

    #[test]
    fn loss_and_classic_ce_factors() {
        let mut s = Scream::new(params(false), Time::ZERO);
        s.set_for_test(100_000.0, 0.1, Dur::from_millis(25));
        // A sporadic loss at a low loss rate and a short queue is no event.
        let mut e = ev(50, 3, 0);
        e.pkts_lost = 1;
        assert_eq!(s.on_feedback(&e), Reaction::None);
        assert_eq!(s.losses_ignored, 1);
        // Once the loss rate exceeds 1 %, a loss is an event and takes precedence over CE
        // (every acknowledged packet CE-marked, so the report brings no increase and the
        // factor shows alone).
        s.set_for_test(100_000.0, 0.1, Dur::from_millis(25));
        let mut e = ev(100, 3, 3);
        e.pkts_lost = 10;
        assert_eq!(s.on_feedback(&e), Reaction::Loss);
        assert_eq!(s.cwnd(), 70_000);
        let r = s.on_feedback(&ev(200, 2, 2));
        assert_eq!(r, Reaction::ClassicCe);
        assert_eq!(s.cwnd(), 63_000);
        assert_eq!((s.loss_events, s.ce_events), (1, 1));
    }

    #[test]
    fn target_stays_in_bounds() {
        let mut s = Scream::new(params(true), Time::ZERO);
        let mut t = 0;
        let mut rng = l4s_core::Rng::new(3);
        for i in 0..20_000u64 {
            t += 1 + rng.below(5);
            let ce = if i % 1000 < 500 { rng.below(5) } else { 0 };
            let mut e = ev(t, 5, ce);
            e.pkts_lost = u64::from(rng.chance(0.01));
            e.bytes_in_flight = s.cwnd();
            s.on_feedback(&e);
            s.on_frame(Dur::from_millis(rng.below(30)), 10_000.0);
            let r = s.update_rate(1.2);
            assert!(r >= Rate::mbps(1) && r <= Rate::mbps(40), "{r}");
            assert!(s.cwnd() >= s.cwnd_min());
        }
    }

    #[test]
    fn virtual_ce_above_half_target() {
        let mut s = Scream::new(params(false), Time::ZERO);
        s.set_for_test(300_000.0, 0.0, Dur::from_millis(25));
        // Base OWD 10 ms, then 80 ms of queue delay: qdAvg climbs above 50 ms.
        let mut e = ev(0, 10, 0);
        e.owd_ns = Some(10_000_000);
        s.on_feedback(&e);
        let mut first = None;
        for t in 1..200u64 {
            let mut e = ev(t * 5, 10, 0);
            e.owd_ns = Some(90_000_000);
            if s.on_feedback(&e) == Reaction::VirtualCe && first.is_none() {
                first = Some(t * 5);
            }
        }
        assert_eq!(s.queue_delay(), Dur::from_millis(80));
        assert!(first.is_some(), "virtual CE must fire");
        assert!(s.virtual_ce_events >= 5);
        assert!(s.cwnd() < 300_000);
    }
}
