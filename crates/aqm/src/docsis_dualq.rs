//! The Low Latency DOCSIS dual queue of one Aggregate Service Flow: a Classic service flow
//! under DOCSIS-PIE and a Low-Latency service flow under the immediate AQM (IAQM), coupled,
//! with a weighted scheduler between them and Queue Protection on the LL flow. DOCSIS 3.1
//! MULPI Annex M (DOCSIS-PIE, the RFC 8034 lineage), Annex N (the coupled dual queue and
//! IAQM), Annex O (queue delay estimates) and Annex P (Queue Protection, RFC 9957), as
//! CableLabs' docsis-ns3 models them (`DualQueueCoupledAqm`).
//!
//! * **Classification** (MULPI §7.7.3 default classifiers; docsis-ns3
//!   `DocsisLowLatencyPacketFilter`): ECT(1) and CE, and the DSCPs in `ll_dscp` (EF, 46, by
//!   default; deployments add NQB, 45, RFC 9956), go to the LL flow; everything else to
//!   Classic.
//! * **Classic: DOCSIS-PIE** every `tupdate` (16 ms): the queue delay is the Classic backlog
//!   over the Classic flow's share of the rate (`qdelayCoupledC`, Annex O: the aggregate
//!   rate less what the LL flow was served in the last interval, at most its weighted
//!   share); `p += α·(qdelay − target) + β·(qdelay − qdelay_old)` with the gains scaled down
//!   by the PIE table below 10 % and up above it, at most +2 % per update from 10 %, a
//!   2 % decay while both delays stay under 5 ms and +2 % above 200 ms, capped at
//!   `prob_low × mean_pkt_size / 64`. Drops at enqueue (DOCSIS-PIE does not mark), with the
//!   burst allowance (142 ms), the 1/3-buffer gate, the half-target gate and the
//!   de-randomisation between `prob_low` and `prob_high` of RFC 8034 §4.
//! * **Coupling**: p' = √p_C and p_CL = min(k·p', 1) with k = `coupling_factor` (2).
//! * **LL: IAQM** at enqueue: the LL queue delay is the LL backlog with the arriving packet
//!   over `max_rate` (`qdelayCoupledL`); the native probability is a ramp from MINTH =
//!   max(MAXTH − 2^`lg_range` ns, 2 frames of `max_frame_size` at `max_rate`) to MAXTH; the
//!   packet is marked with max(native, p_CL), drawn with `recur()`.
//! * **Queue Protection** (RFC 9957, [`crate::queue_protection`]) of each LL packet, after
//!   the IAQM; a sanctioned packet goes through the Classic enqueue instead (its CE mark, if
//!   any, stays).
//! * **Scheduler**: deficit round robin with a `quantum` of 1500 B split by the Scheduling
//!   Weight: the LL flow gets `weight`/256 of each round (230/256, about 90 %) and Classic
//!   the rest, so that a backlogged LL flow leaves Classic about 10 % (MULPI's Scheduling
//!   Weight is the LL flow's share of the aggregate; docsis-ns3's upstream scheduler splits
//!   minislots that way). docsis-ns3's `SelectLlQueue` instead gives Classic a whole quantum
//!   per round, an LL share of w/(1 + w) ≈ 47 %; this model follows MULPI.
//! * **Buffers**: Classic `classic_buffer` (default 100 ms at `max_rate`), LL `ll_buffer`
//!   (default 10 ms at `max_rate`, refused once less than a `max_frame_size` is left).
//!
//! Differences from docsis-ns3: sizes are the packets' wire lengths (docsis-ns3 counts
//! DOCSIS MAC headers in some places and not in others); the upstream virtual-queue
//! estimate (`qdelayCoupledV`, which needs the request–grant loop) is not modelled: the LL
//! delay is always `qdelayCoupledL`.

use std::collections::VecDeque;

use l4s_core::{Dur, Ecn, QueuePacket, Rate, Rng, Time};
use serde::{Deserialize, Serialize};

use crate::config::ConfigError;
use crate::dualpi2::ramp_probability;
use crate::qdisc::{Dequeued, DropReason, Dropped, Enqueued, Qdisc, QueueId, QueueStats};
use crate::queue_protection::{self, QpStats, QueueProtection, QueueProtectionConfig};

/// MIN_PKTSIZE of DOCSIS-PIE (bytes).
const MIN_PKTSIZE: f64 = 64.0;
/// LATENCY_LOW of DOCSIS-PIE: below it on two updates in a row, p decays.
const LATENCY_LOW: Dur = Dur::from_millis(5);
/// The cap on MINTH and MAXTH (65 535 µs).
const TH_CAP: Dur = Dur(65_535_000);

/// The ASF dual queue as written in a scenario (`kind = "docsis-dualq"`). Defaults are
/// MULPI's as docsis-ns3 sets them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DocsisDualqConfig {
    /// The Aggregate Service Flow's maximum sustained rate (AMSR): required.
    pub max_rate: Option<Rate>,
    /// The LL and Classic service flows' own maximum sustained rates, if set.
    pub ll_max_rate: Option<Rate>,
    pub classic_max_rate: Option<Rate>,
    /// Classic buffer in bytes; default 100 ms at `max_rate` (MULPI C.1.2.17).
    pub classic_buffer: Option<u64>,
    /// LL buffer in bytes; default 10 ms at `max_rate` (MULPI C.2.2.7.11.4).
    pub ll_buffer: Option<u64>,
    /// DOCSIS-PIE latency target (10 ms), update interval (16 ms) and gains (Hz).
    pub target: Dur,
    pub tupdate: Dur,
    pub alpha: f64,
    pub beta: f64,
    /// Burst allowance (142 ms) and the quiet time after which it re-arms (1 s).
    pub max_burst: Dur,
    pub burst_reset: Dur,
    pub mean_pkt_size: u32,
    pub prob_low: f64,
    pub prob_high: f64,
    /// IAQM: MAXTH (1 ms) and log2 of the ramp's range in ns (19).
    pub max_th: Dur,
    pub lg_range: u32,
    /// MAX_FRAME_SIZE (2000 B): the FLOOR of MINTH is two of them at `max_rate`.
    pub max_frame_size: u32,
    /// k (2).
    pub coupling_factor: f64,
    /// The LL flow's scheduling weight out of 256 (230), and the DRR quantum (1500 B).
    pub weight: u32,
    pub quantum: u32,
    /// DSCPs classified to the LL flow besides ECT(1) and CE (EF = 46).
    pub ll_dscp: Vec<u8>,
    /// Queue Protection of the LL flow (on by default; `enabled = false` turns it off).
    pub queue_protection: QueueProtectionConfig,
    /// How the LL queue delay is estimated: `"coupled-l"`, the LL backlog over `max_rate`
    /// (MULPI Annex N.3 for the downstream, the default), or `"coupled-v"`, a virtual
    /// queue served at `max_rate` and aligned with the actual queue every `vq_interval`
    /// (Annex N.3 for the upstream, where the queue also holds what waits for a grant).
    /// Unset: `coupled-v` on a DOCSIS link's upstream, `coupled-l` elsewhere.
    pub estimator: Option<LlEstimator>,
    /// `coupled-v`: the modem's request–grant loop delay (the actual queue allowed to hold
    /// this long at `max_rate` without counting as queuing), how often the virtual queue
    /// is aligned (500 µs, half a MAP), and log2 of the inverse EWMA gain of the actual
    /// queue's average (7).
    pub loop_delay: Option<Dur>,
    pub vq_interval: Dur,
    pub lg_vq_ewma: u32,
    /// `coupled-v`: the LL flow's Proactive Grant Service, its guaranteed grant rate and
    /// interval (whole frames); a DOCSIS link sets them from its `docsis` table. The
    /// alignment then allows `loop_delay × (max_rate − pgs_rate) + pgs_rate ×
    /// pgs_interval` of actual queue (Annex O `calcAllowedAQ`).
    pub pgs_rate: Option<Rate>,
    pub pgs_interval: Option<Dur>,
}

/// The LL queue delay estimate (MULPI Annex O `qdelayCoupledL` / `qdelayCoupledV`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LlEstimator {
    #[default]
    CoupledL,
    CoupledV,
}

impl Default for DocsisDualqConfig {
    fn default() -> Self {
        DocsisDualqConfig {
            max_rate: None,
            ll_max_rate: None,
            classic_max_rate: None,
            classic_buffer: None,
            ll_buffer: None,
            target: Dur::from_millis(10),
            tupdate: Dur::from_millis(16),
            alpha: 0.25,
            beta: 2.5,
            max_burst: Dur::from_millis(142),
            burst_reset: Dur::from_secs(1),
            mean_pkt_size: 1024,
            prob_low: 0.85,
            prob_high: 8.5,
            max_th: Dur::from_millis(1),
            lg_range: 19,
            max_frame_size: 2000,
            coupling_factor: 2.0,
            weight: 230,
            quantum: 1500,
            ll_dscp: vec![46],
            queue_protection: QueueProtectionConfig::default(),
            estimator: None,
            loop_delay: None,
            vq_interval: Dur::from_micros(500),
            lg_vq_ewma: 7,
            pgs_rate: None,
            pgs_interval: None,
        }
    }
}

impl DocsisDualqConfig {
    /// The buffers in bytes as configured or defaulted: (Classic, LL).
    pub fn buffers(&self) -> (u64, u64) {
        let rate = self.max_rate.filter(|r| r.bits_per_sec() > 0).unwrap_or(Rate::bps(1));
        let bytes_in = |d: Dur| rate.bytes_in(d).max(1);
        (
            self.classic_buffer
                .unwrap_or_else(|| bytes_in(Dur::from_millis(100)))
                .max(1),
            self.ll_buffer.unwrap_or_else(|| bytes_in(Dur::from_millis(10))).max(1),
        )
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let e = |k: &str, m: String| Err(ConfigError::new(k, m));
        match self.max_rate {
            None => {
                return e(
                    "max_rate",
                    "required: the aggregate service flow's rate, such as \"50Mbit\"".into(),
                )
            }
            Some(r) if r.bits_per_sec() == 0 => return e("max_rate", "expected a rate greater than zero".into()),
            _ => {}
        }
        for (k, r) in [
            ("ll_max_rate", self.ll_max_rate),
            ("classic_max_rate", self.classic_max_rate),
        ] {
            if r.is_some_and(|r| r.bits_per_sec() == 0) {
                return e(k, "expected a rate greater than zero".into());
            }
        }
        for (k, b) in [("classic_buffer", self.classic_buffer), ("ll_buffer", self.ll_buffer)] {
            if b == Some(0) {
                return e(k, "expected at least 1 byte".into());
            }
        }
        crate::config::update_period("tupdate", self.tupdate)?;
        for (k, d) in [("target", self.target), ("max_th", self.max_th)] {
            if d.is_zero() {
                return e(k, "expected a duration greater than zero".into());
            }
        }
        for (k, v) in [
            ("alpha", self.alpha),
            ("beta", self.beta),
            ("prob_low", self.prob_low),
            ("prob_high", self.prob_high),
        ] {
            if !v.is_finite() || v <= 0.0 {
                return e(k, format!("expected a finite number greater than zero, found {v}"));
            }
        }
        if self.prob_high < self.prob_low {
            return e("prob_high", format!("expected at least prob_low ({})", self.prob_low));
        }
        if !(self.coupling_factor.is_finite() && (0.0..=25.5).contains(&self.coupling_factor)) {
            return e(
                "coupling_factor",
                format!("expected a number from 0 to 25.5, found {}", self.coupling_factor),
            );
        }
        if !(1..=255).contains(&self.weight) {
            return e(
                "weight",
                format!("expected an integer from 1 to 255 (of 256), found {}", self.weight),
            );
        }
        if self.quantum == 0 {
            return e("quantum", "expected at least 1 byte".into());
        }
        if self.mean_pkt_size == 0 {
            return e("mean_pkt_size", "expected at least 1 byte".into());
        }
        if self.max_frame_size == 0 {
            return e("max_frame_size", "expected at least 1 byte".into());
        }
        if self.lg_range > 25 {
            return e(
                "lg_range",
                format!("expected an integer from 0 to 25, found {}", self.lg_range),
            );
        }
        let ll = self.buffers().1;
        if ll <= self.max_frame_size as u64 {
            let key = if self.ll_buffer.is_some() {
                "ll_buffer"
            } else {
                "max_rate"
            };
            return e(
                key,
                format!(
                    "the LL buffer ({ll} B, 10 ms at max_rate unless ll_buffer is set) must exceed max_frame_size ({} B): \
                     set ll_buffer, or a higher max_rate",
                    self.max_frame_size
                ),
            );
        }
        if self.estimator == Some(LlEstimator::CoupledV) {
            if self.loop_delay.is_none() {
                return e(
                    "loop_delay",
                    "estimator = \"coupled-v\" needs the modem's request–grant loop delay, such as \"3.6ms\" (set by a docsis link's upstream)".into(),
                );
            }
            if self.vq_interval.is_zero() {
                return e("vq_interval", "expected a duration greater than zero".into());
            }
            if self.lg_vq_ewma > 16 {
                return e(
                    "lg_vq_ewma",
                    format!("expected an integer from 0 to 16, found {}", self.lg_vq_ewma),
                );
            }
        }
        if let Some(d) = self.ll_dscp.iter().find(|d| **d > 63) {
            return e("ll_dscp", format!("expected DSCP values from 0 to 63, found {d}"));
        }
        self.queue_protection.validate()
    }
}

/// MAX_RATE of the LL flow: min(AMSR, MSR_L) (docsis-ns3 `InitializeParams`).
fn min_rate(amsr: Rate, msr_l: Option<Rate>) -> Rate {
    match msr_l {
        Some(l) if l.bits_per_sec() < amsr.bits_per_sec() => l,
        _ => amsr,
    }
}

/// DOCSIS-PIE's burst state (MULPI Annex M).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BurstState {
    None,
    InBurst,
    Protecting,
}

/// MULPI Annex O `qdelayCoupledV` and its alignment (docsis-ns3 `QDelayCoupledV`,
/// `AlignVq`, `DecreaseVq`).
struct VirtualQueue {
    vq: f64,
    at: Time,
    avg: f64,
    allowed: f64,
    gain: f64,
    interval: Dur,
    next: Time,
}

struct Entry<P> {
    pkt: P,
    ts: Time,
    marked: bool,
}

/// The ASF dual queue; see the module documentation.
pub struct DocsisDualq<P> {
    max_rate: Rate,
    ll_max_rate: Option<Rate>,
    classic_max_rate: Option<Rate>,
    classic_buffer: u64,
    ll_buffer: u64,
    target: Dur,
    tupdate: Dur,
    alpha: f64,
    beta: f64,
    max_burst: Dur,
    burst_reset_limit: u64,
    mean_pkt_size: f64,
    prob_low: f64,
    prob_high: f64,
    min_th: Dur,
    range: Dur,
    max_frame_size: u64,
    coupling_factor: f64,
    weight: f64,
    quantum: f64,
    ll_dscp: u64,
    rng: Rng,
    l: VecDeque<Entry<P>>,
    c: VecDeque<Entry<P>>,
    l_bytes: u64,
    c_bytes: u64,
    /// LL bytes the modem below has taken for grants and not yet sent.
    staged_l: u64,
    /// DOCSIS-PIE state.
    p_c: f64,
    base: f64,
    p_cl: f64,
    qdelay_c: Dur,
    prev_qdelay: Dur,
    accu_prob: f64,
    burst_allowance: Dur,
    burst: BurstState,
    burst_reset: u64,
    /// LL bits served since the last update (Annex O `interval_BitsL`).
    interval_bits_l: u64,
    recur_count: f64,
    /// DRR state: which queues still have a turn this round, and their deficits.
    turn_l: bool,
    turn_c: bool,
    deficit_l: f64,
    deficit_c: f64,
    next_timer: Time,
    /// `coupled-v`: the virtual queue (ns) as of `vq_at`, the actual queue's average
    /// (bytes), the loop allowance (bytes) and the next alignment.
    virtual_q: Option<VirtualQueue>,
    qp: Option<QueueProtection>,
    stats_l: QueueStats,
    stats_c: QueueStats,
}

impl<P: QueuePacket> DocsisDualq<P> {
    /// Never panics on an unvalidated configuration: a missing or zero rate stands at
    /// 1 bit/s, other values are clamped.
    pub fn new(cfg: &DocsisDualqConfig, rng: Rng) -> Self {
        let max_rate = cfg.max_rate.filter(|r| r.bits_per_sec() > 0).unwrap_or(Rate::bps(1));
        // MAX_RATE for the IAQM: min(AMSR, MSR_L).
        let ll_max_rate = cfg.ll_max_rate.filter(|r| r.bits_per_sec() > 0);
        let iaqm_rate = min_rate(max_rate, ll_max_rate);
        let range = Dur(1u64 << cfg.lg_range.min(25));
        let floor = iaqm_rate.tx_time(2 * cfg.max_frame_size as u64).min(TH_CAP);
        let min_th = cfg.max_th.saturating_sub(range).max(floor);
        let max_th = (min_th + range).min(TH_CAP);
        let (classic_buffer, ll_buffer) = cfg.buffers();
        let qp = cfg
            .queue_protection
            .enabled
            .then(|| QueueProtection::new(&cfg.queue_protection, max_th));
        let tupdate = cfg.tupdate.max(Dur(1));
        DocsisDualq {
            max_rate,
            ll_max_rate,
            classic_max_rate: cfg.classic_max_rate.filter(|r| r.bits_per_sec() > 0),
            classic_buffer,
            ll_buffer,
            target: cfg.target,
            tupdate,
            alpha: cfg.alpha,
            beta: cfg.beta,
            max_burst: cfg.max_burst,
            burst_reset_limit: cfg.burst_reset.as_nanos() / tupdate.as_nanos(),
            mean_pkt_size: cfg.mean_pkt_size.max(1) as f64,
            prob_low: cfg.prob_low,
            prob_high: cfg.prob_high,
            min_th,
            range: max_th - min_th,
            max_frame_size: cfg.max_frame_size as u64,
            coupling_factor: cfg.coupling_factor,
            weight: cfg.weight.clamp(1, 255) as f64 / 256.0,
            quantum: cfg.quantum.max(1) as f64,
            ll_dscp: cfg.ll_dscp.iter().filter(|d| **d < 64).fold(0, |m, d| m | (1u64 << d)),
            rng,
            l: VecDeque::new(),
            c: VecDeque::new(),
            l_bytes: 0,
            c_bytes: 0,
            staged_l: 0,
            p_c: 0.0,
            base: 0.0,
            p_cl: 0.0,
            qdelay_c: Dur::ZERO,
            prev_qdelay: Dur::ZERO,
            accu_prob: 0.0,
            burst_allowance: Dur::ZERO,
            burst: BurstState::None,
            burst_reset: 0,
            interval_bits_l: 0,
            recur_count: 0.0,
            turn_l: false,
            turn_c: false,
            deficit_l: 0.0,
            deficit_c: 0.0,
            next_timer: Time::ZERO + tupdate,
            virtual_q: (cfg.estimator == Some(LlEstimator::CoupledV)).then(|| VirtualQueue {
                vq: 0.0,
                at: Time::ZERO,
                avg: 0.0,
                allowed: {
                    let ggr = cfg
                        .pgs_rate
                        .map_or(0.0, |r| r.bytes_per_sec().min(iaqm_rate.bytes_per_sec()));
                    let ggi = cfg.pgs_interval.unwrap_or(Dur::ZERO).as_secs_f64();
                    (iaqm_rate.bytes_per_sec() - ggr) * cfg.loop_delay.unwrap_or(Dur::ZERO).as_secs_f64() + ggr * ggi
                },
                gain: 0.5f64.powi(cfg.lg_vq_ewma.min(16) as i32),
                interval: cfg.vq_interval.max(Dur(1)),
                next: Time::ZERO + cfg.vq_interval.max(Dur(1)),
            }),
            qp,
            stats_l: QueueStats::default(),
            stats_c: QueueStats::default(),
        }
    }

    /// The IAQM ramp: (MINTH, MAXTH).
    pub fn thresholds(&self) -> (Dur, Dur) {
        (self.min_th, self.min_th + self.range)
    }
    /// The Classic drop probability p_C, the base p' = √p_C and the coupled p_CL.
    pub fn probabilities(&self) -> (f64, f64, f64) {
        (self.p_c, self.base, self.p_cl)
    }
    /// Test hook: force p_C (and p', p_CL from it) until the next update.
    pub fn set_classic_probability(&mut self, p: f64) {
        self.p_c = p.max(0.0);
        self.base = self.p_c.sqrt();
        self.p_cl = (self.base * self.coupling_factor).min(1.0);
    }
    /// The buffers in bytes: (Classic, LL).
    pub fn buffers(&self) -> (u64, u64) {
        (self.classic_buffer, self.ll_buffer)
    }

    fn is_ll(&self, pkt: &P) -> bool {
        matches!(pkt.ecn(), Ecn::Ect1 | Ecn::Ce) || {
            let d = pkt.dscp();
            d < 64 && self.ll_dscp & (1u64 << d) != 0
        }
    }

    /// RFC 9332 Appendix A `recur()`, as docsis-ns3 `Recur`.
    fn recur(&mut self, p: f64) -> bool {
        self.recur_count += p.clamp(0.0, 1.0);
        if self.recur_count > 1.0 {
            self.recur_count -= 1.0;
            true
        } else {
            false
        }
    }

    /// DOCSIS-PIE's random early drop decision at a Classic enqueue (docsis-ns3
    /// `DropEarly`, MULPI Annex M).
    fn drop_early(&mut self, size: u64) -> bool {
        if !self.burst_allowance.is_zero() {
            return false;
        }
        if self.p_c == 0.0 {
            self.accu_prob = 0.0;
        }
        if self.burst == BurstState::None {
            if self.c_bytes < self.classic_buffer / 3 {
                return false;
            }
            self.burst = BurstState::InBurst;
        }
        let p = (self.p_c * size as f64 / self.mean_pkt_size).min(self.prob_low);
        self.accu_prob += p;
        let u = self.rng.next_f64();
        if (self.prev_qdelay.as_secs_f64() < 0.5 * self.target.as_secs_f64() && self.p_c < 0.2)
            || self.c_bytes as f64 <= 2.0 * self.mean_pkt_size
        {
            return false;
        }
        let drop = if self.accu_prob < self.prob_low {
            false
        } else if self.accu_prob >= self.prob_high {
            true
        } else {
            u <= p
        };
        if !drop {
            return false;
        }
        self.accu_prob = 0.0;
        if self.burst == BurstState::InBurst {
            self.burst = BurstState::Protecting;
            self.burst_allowance = self.max_burst;
        }
        true
    }

    /// The Classic enqueue: PIE's early drop, then the buffer.
    fn classic_enqueue(&mut self, pkt: P, now: Time, marked: bool) -> Enqueued<P> {
        let len = pkt.wire_len() as u64;
        let reason = if self.drop_early(len) {
            Some(DropReason::Congestion)
        } else if self.c_bytes + len > self.classic_buffer {
            Some(DropReason::Overlimit)
        } else {
            None
        };
        match reason {
            Some(reason) => self.refuse(pkt, QueueId::C, reason),
            None => self.admit(pkt, QueueId::C, now, marked),
        }
    }

    /// The LL enqueue: IAQM, Queue Protection, then the buffer.
    fn ll_enqueue(&mut self, mut pkt: P, now: Time) -> Enqueued<P> {
        let len = pkt.wire_len() as u64;
        let rate = self.iaqm_rate();
        let qdelay = match &mut self.virtual_q {
            None => rate.tx_time(self.l_bytes + len),
            Some(v) => {
                // Drained in real time, filled by this packet at the rate.
                v.vq = (v.vq - now.since(v.at).as_nanos() as f64).max(0.0) + rate.tx_time(len).as_nanos() as f64;
                v.at = now;
                Dur(v.vq as u64)
            }
        };
        let native = ramp_probability(qdelay, self.min_th, self.range);
        let mut marked = false;
        if self.recur(native.max(self.p_cl.min(1.0))) {
            let was_ce = pkt.ecn() == Ecn::Ce;
            marked = pkt.set_ce() && !was_ce;
        }
        if let Some(qp) = &mut self.qp {
            if qp.protect(&pkt, qdelay, native, now) == queue_protection::Verdict::Sanction {
                if let Some(v) = &mut self.virtual_q {
                    v.vq = (v.vq - rate.tx_time(len).as_nanos() as f64).max(0.0);
                }
                return self.classic_enqueue(pkt, now, marked);
            }
        }
        // `qL.byte_length() < CONFIG_BUFFER_SIZE − MAX_FRAME_SIZE` (Annex N).
        let room = self.ll_buffer.saturating_sub(self.max_frame_size);
        let full = match &self.virtual_q {
            None => self.l_bytes >= room,
            // `qdelay < (CONFIG_BUFFER_SIZE − MAX_FRAME_SIZE) × 8 / MAX_RATE`.
            Some(v) => v.vq >= rate.tx_time(room).as_nanos() as f64,
        };
        if full || self.l_bytes + len > self.ll_buffer {
            // A packet dropped leaves the virtual queue too (docsis-ns3 `DecreaseVq`).
            if let Some(v) = &mut self.virtual_q {
                v.vq = (v.vq - rate.tx_time(len).as_nanos() as f64).max(0.0);
            }
            return self.refuse(pkt, QueueId::L, DropReason::Overlimit);
        }
        self.admit(pkt, QueueId::L, now, marked)
    }

    /// Queue a packet in `queue` and count it.
    fn admit(&mut self, pkt: P, queue: QueueId, now: Time, marked: bool) -> Enqueued<P> {
        let len = pkt.wire_len() as u64;
        let (q, bytes, s) = if queue == QueueId::L {
            (&mut self.l, &mut self.l_bytes, &mut self.stats_l)
        } else {
            (&mut self.c, &mut self.c_bytes, &mut self.stats_c)
        };
        *bytes += len;
        s.enqueued_packets += 1;
        s.enqueued_bytes += len;
        s.backlog_packets += 1;
        s.backlog_bytes += len;
        q.push_back(Entry { pkt, ts: now, marked });
        Enqueued::Queued { queue, marked }
    }

    /// Drop a packet at enqueue and count it against `queue`.
    fn refuse(&mut self, pkt: P, queue: QueueId, reason: DropReason) -> Enqueued<P> {
        let s = if queue == QueueId::L {
            &mut self.stats_l
        } else {
            &mut self.stats_c
        };
        s.drops += 1;
        if reason == DropReason::Overlimit {
            s.overlimit_drops += 1;
        }
        Enqueued::Dropped(Dropped {
            pkt,
            reason,
            queue,
            sojourn: Dur::ZERO,
        })
    }

    /// MAX_RATE of the LL flow: min(AMSR, MSR_L).
    fn iaqm_rate(&self) -> Rate {
        min_rate(self.max_rate, self.ll_max_rate)
    }

    /// Annex O `qdelayCoupledC`: the Classic backlog over the rate the Classic flow gets.
    fn qdelay_coupled_c(&self) -> Dur {
        let amsr = self.max_rate.bits_per_sec() as f64;
        let mut r_l = self.weight * amsr;
        if let Some(l) = self.ll_max_rate {
            r_l = r_l.min(l.bits_per_sec() as f64);
        }
        r_l = r_l.min(self.interval_bits_l as f64 / self.tupdate.as_secs_f64());
        let mut r_c = amsr - r_l;
        if let Some(c) = self.classic_max_rate {
            r_c = r_c.min(c.bits_per_sec() as f64);
        }
        if r_c <= 0.0 {
            return Dur::ZERO;
        }
        Dur::from_secs_f64(self.c_bytes as f64 * 8.0 / r_c)
    }

    /// Take the head of the LL queue (`from_l`) or of the Classic queue, and count it.
    fn take(&mut self, from_l: bool, now: Time) -> Option<Dequeued<P>> {
        let (e, queue) = if from_l {
            (self.l.pop_front()?, QueueId::L)
        } else {
            (self.c.pop_front()?, QueueId::C)
        };
        let len = e.pkt.wire_len() as u64;
        let s = if from_l {
            self.l_bytes -= len;
            self.interval_bits_l += 8 * len;
            &mut self.stats_l
        } else {
            self.c_bytes -= len;
            &mut self.stats_c
        };
        s.backlog_packets -= 1;
        s.backlog_bytes -= len;
        s.dequeued_packets += 1;
        s.dequeued_bytes += len;
        if e.marked {
            s.marks += 1;
        }
        Some(Dequeued {
            pkt: e.pkt,
            queue,
            sojourn: now - e.ts,
            marked: e.marked,
        })
    }

    /// DRR between the two flows (docsis-ns3 `SelectLlQueue`): true for LL.
    fn pick_ll(&mut self) -> bool {
        loop {
            if !self.turn_l && !self.turn_c {
                self.turn_l = true;
                self.turn_c = true;
                self.deficit_l += self.quantum * self.weight;
                self.deficit_c += self.quantum * (1.0 - self.weight);
            }
            if self.turn_l {
                if let Some(h) = self.l.front() {
                    let size = h.pkt.wire_len() as f64;
                    if size <= self.deficit_l {
                        self.deficit_l -= size;
                        return true;
                    }
                    self.turn_l = false;
                    if self.c.is_empty() {
                        self.deficit_l = 0.0;
                        return true;
                    }
                }
            } else if self.c.is_empty() {
                self.deficit_l = 0.0;
                return true;
            }
            if let Some(h) = self.c.front() {
                let size = h.pkt.wire_len() as f64;
                if size <= self.deficit_c {
                    self.deficit_c -= size;
                    return false;
                }
                self.turn_c = false;
                if self.l.is_empty() {
                    self.deficit_c = 0.0;
                    return false;
                }
            }
        }
    }
}

impl<P: QueuePacket> Qdisc<P> for DocsisDualq<P> {
    fn kind(&self) -> &'static str {
        "docsis-dualq"
    }

    fn queue_ids(&self) -> &'static [QueueId] {
        &[QueueId::L, QueueId::C]
    }

    fn enqueue(&mut self, pkt: P, now: Time) -> Enqueued<P> {
        if self.is_ll(&pkt) {
            self.ll_enqueue(pkt, now)
        } else {
            self.classic_enqueue(pkt, now, false)
        }
    }

    fn dequeue(&mut self, now: Time, _drops: &mut Vec<Dropped<P>>) -> Option<Dequeued<P>> {
        if self.l.is_empty() && self.c.is_empty() {
            return None;
        }
        let from_l = self.pick_ll();
        self.take(from_l, now)
    }

    /// Upstream, the CMTS shares grants between the two service flows (by the Scheduling
    /// Weight, MULPI §7.7); the modem fills each flow's grant from that flow's queue.
    fn dequeue_from(&mut self, queue: QueueId, now: Time, _drops: &mut Vec<Dropped<P>>) -> Option<Dequeued<P>> {
        self.take(queue == QueueId::L, now)
    }

    fn backlog_of(&self, queue: QueueId) -> (usize, u64) {
        if queue == QueueId::L {
            (self.l.len(), self.l_bytes)
        } else {
            (self.c.len(), self.c_bytes)
        }
    }

    fn staged(&mut self, queue: QueueId, bytes: u64) {
        if queue == QueueId::L {
            self.staged_l = bytes;
        }
    }

    fn next_timeout(&self) -> Option<Time> {
        Some(match &self.virtual_q {
            Some(v) => self.next_timer.min(v.next),
            None => self.next_timer,
        })
    }

    /// DOCSIS-PIE's update (docsis-ns3 `CalculateDropProb`).
    fn on_timeout(&mut self, now: Time) {
        let rate = self.iaqm_rate();
        if let Some(v) = &mut self.virtual_q {
            if now >= v.next {
                // docsis-ns3 `AlignVq`: the actual LL queue's average over the loop
                // allowance, as a delay at the rate, if it exceeds the virtual queue.
                v.avg += v.gain * ((self.l_bytes + self.staged_l) as f64 - v.avg);
                if v.avg > v.allowed {
                    let excess = (v.avg - v.allowed) / rate.bytes_per_sec() * 1e9;
                    v.vq = v.vq.max(excess);
                }
                v.next = now + v.interval;
            }
            if now < self.next_timer {
                return;
            }
        }
        self.qdelay_c = self.qdelay_coupled_c();
        self.interval_bits_l = 0;
        let (q, q_old, target) = (self.qdelay_c, self.prev_qdelay, self.target);
        if !self.burst_allowance.is_zero() {
            self.p_c = 0.0;
            self.base = 0.0;
        } else {
            let mut p = self.alpha * (q.as_secs_f64() - target.as_secs_f64())
                + self.beta * (q.as_secs_f64() - q_old.as_secs_f64());
            let d = self.p_c;
            p /= if d < 0.000001 {
                2048.0
            } else if d < 0.00001 {
                512.0
            } else if d < 0.0001 {
                128.0
            } else if d < 0.001 {
                32.0
            } else if d < 0.01 {
                8.0
            } else if d < 0.1 {
                2.0
            } else if d < 1.0 {
                0.5
            } else if d < 10.0 {
                0.125
            } else {
                0.03125
            };
            if d >= 0.1 && p > 0.02 {
                p = 0.02;
            }
            let mut drop = d + p;
            if q < LATENCY_LOW && q_old < LATENCY_LOW {
                drop *= 0.98;
            } else if q > Dur::from_millis(200) {
                drop += 0.02;
            }
            self.p_c = drop.max(0.0).min(self.prob_low * self.mean_pkt_size / MIN_PKTSIZE);
            self.base = self.p_c.sqrt();
        }
        self.p_cl = (self.base * self.coupling_factor).min(1.0);
        self.burst_allowance = if self.burst_allowance < self.tupdate {
            Dur::ZERO
        } else {
            self.burst_allowance - self.tupdate
        };
        let half = target.as_secs_f64() * 0.5;
        if q.as_secs_f64() < half && q_old.as_secs_f64() < half && self.p_c == 0.0 && self.burst_allowance.is_zero() {
            match self.burst {
                BurstState::Protecting => {
                    self.burst = BurstState::InBurst;
                    self.burst_reset = 0;
                }
                BurstState::InBurst => {
                    self.burst_reset += 1;
                    if self.burst_reset > self.burst_reset_limit {
                        self.burst_reset = 0;
                        self.burst = BurstState::None;
                    }
                }
                BurstState::None => {}
            }
        } else if self.burst == BurstState::InBurst {
            self.burst_reset = 0;
        }
        self.prev_qdelay = q;
        self.next_timer = now + self.tupdate;
    }

    fn len_packets(&self) -> usize {
        self.l.len() + self.c.len()
    }

    fn len_bytes(&self) -> u64 {
        self.l_bytes + self.c_bytes
    }

    fn stats(&self) -> Vec<(QueueId, QueueStats)> {
        vec![(QueueId::L, self.stats_l), (QueueId::C, self.stats_c)]
    }

    /// The base probability p' = √p_C (as DualPI2 reports p'), at most 1: DOCSIS-PIE's
    /// p_C is per packet of `mean_pkt_size` and may exceed 1 (up to `prob_low` × its size
    /// over 64 B).
    fn probability(&self) -> Option<f64> {
        Some(self.base.min(1.0))
    }

    fn queue_protection(&self) -> Option<&QpStats> {
        self.qp.as_ref().map(|q| q.stats())
    }
}
