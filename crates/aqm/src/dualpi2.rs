//! DualPI2: the Dual-Queue Coupled AQM of RFC 9332, bit-compatible with Linux
//! `net/sched/sch_dualpi2.c` (v6.18) by default, with the RFC 9332 Appendix A variants as
//! options.
//!
//! * Classifier (RFC 9331 §5.1, Linux `dualpi2_skb_classify`): `ecn & ecn_mask != 0` → class L4S;
//!   otherwise the operator rules ([`Classifier`], the equivalent of Linux's `skb->priority` /
//!   tc filter override) choose L4S or LLLL; otherwise Classic.
//! * Two FIFOs scheduled by Linux's credit-based WRR ("C-protection", weights wc/wl = 10/90).
//! * One base probability p' updated by a PI controller every `tupdate` with Linux's exact
//!   integer arithmetic (gains scaled by `2^32 − 1 / 1e9 × 64`, division by 64 truncating the
//!   magnitude). Classic packets see p'² (two independent draws), L4S packets k·p'.
//! * The L-queue's native AQM: Linux's step (default, 1 ms, strict `>`) or the RFC 9332
//!   Appendix A ramp (`minTh` 800 µs, `range` 400 µs, `Th_len` 1 packet). `step_mode` picks
//!   whose guard against marking a lone packet applies: upstream Linux (`min_qlen_step`,
//!   default none), L4STeam's kernels (more than one packet queued) or DOCSIS's immediate
//!   AQM (a byte-based ramp whose start is floored at two frames' serialisation time).
//! * Overload (k·p' > 1): with `drop_overload`, L4S packets are dropped with p'² and every
//!   survivor is marked; Classic ECT packets are dropped instead of marked (RFC 9332 §4.2.3,
//!   Appendix A.2). Without it, p' is capped at 1/k.
//!
//! Differences from the RFC 9332 Appendix A pseudo-code (all selectable, Linux is default):
//! the PI input is max(L, C) head sojourn (RFC: C head only, [`PiInput::ClassicHead`]); the
//! native L AQM is a step without a length guard by default (RFC: ramp with `Th_len`); random draws
//! (RFC: `recur`, option `recur`); a 2-MTU floor on the total backlog below which nothing is
//! signalled (RFC: none); limits in packets plus memory (RFC: bytes). With `marking = ramp`
//! the ramp is drawn after the coupled draw instead of in a single draw of
//! max(p'_L, p_CL): the hit probability is 1 − (1 − p_CL)(1 − p'_L) instead of
//! max(p_CL, p'_L), equal whenever either is 0 or 1.
//!
//! Differences from Linux: memory accounting uses the caller's [`QueuePacket::mem_size`]
//! (Linux: `skb->truesize`); the PI update uses 128-bit saturating arithmetic where Linux
//! truncates the scaled delta to u32 (identical in every realistic range).

use std::collections::VecDeque;

use l4s_core::{Dur, Ecn, QueuePacket, Rate, Rng, Time};

use crate::config::{
    derive_from_rtt, gain_hz_to_nl, gain_nl_to_internal, DualPi2Config, EcnMask, Marking, PiInput, StepMode,
    DEFAULT_ALPHA_NL, DEFAULT_BETA_NL, MAX_GAIN_NL,
};
use crate::qdisc::{Dequeued, DropReason, Dropped, Enqueued, Qdisc, QueueId, QueueStats};
use crate::queue_protection::{self, QpStats, QueueProtection};

/// p' = 1.0 in Linux's fixed point.
pub const MAX_PROB: u32 = u32::MAX;

/// The traffic class of a packet (Linux `DUALPI2_C_*` in `sch_dualpi2.c`, set by
/// `dualpi2_skb_classify`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TrafficClass {
    /// C-queue, p'² signal.
    Classic,
    /// L-queue, k·p' signal plus the native step/ramp.
    L4s,
    /// L-queue, exempt from every AQM action (only the limits apply).
    Llll,
}

impl TrafficClass {
    /// Linux override minor number: 0 = Classic, 1 = L4S, 2 = LLLL, anything else = Classic.
    pub fn from_override(minor: u32) -> TrafficClass {
        match minor {
            1 => TrafficClass::L4s,
            2 => TrafficClass::Llll,
            _ => TrafficClass::Classic,
        }
    }
    pub fn queue(self) -> QueueId {
        match self {
            TrafficClass::Classic => QueueId::C,
            _ => QueueId::L,
        }
    }
}

/// The DualPI2 classifier: ECN field and `ecn_mask` first, then the operator rules.
#[derive(Clone, Debug)]
pub struct Classifier {
    mask: u8,
    l4s_dscp: u64,
    llll_dscp: u64,
    l4s_ports: Vec<u16>,
}

impl Classifier {
    /// DSCPs above 63 are ignored.
    pub fn new(mask: EcnMask, l4s_dscp: &[u8], llll_dscp: &[u8], l4s_ports: &[u16]) -> Classifier {
        let bitmap = |l: &[u8]| l.iter().filter(|d| **d < 64).fold(0u64, |m, d| m | (1u64 << d));
        Classifier {
            mask: mask.bits(),
            l4s_dscp: bitmap(l4s_dscp),
            llll_dscp: bitmap(llll_dscp),
            l4s_ports: l4s_ports.to_vec(),
        }
    }

    /// As Linux `dualpi2_skb_classify`: ECN test, else `override` (Linux priority minor),
    /// else Classic. An ECT(1) packet cannot be forced into C by an override (the ECN test
    /// comes first).
    pub fn classify_with_override(&self, ecn: Ecn, override_minor: Option<u32>) -> TrafficClass {
        if ecn.bits() & self.mask != 0 {
            return TrafficClass::L4s;
        }
        override_minor
            .map(TrafficClass::from_override)
            .unwrap_or(TrafficClass::Classic)
    }

    /// The operator rule for a packet the ECN test did not send to L: LLLL DSCPs first, then
    /// L4S DSCPs and destination ports.
    pub fn rule(&self, dscp: u8, dst_port: Option<u16>) -> Option<u32> {
        let bit = if dscp < 64 { 1u64 << dscp } else { 0 };
        if self.llll_dscp & bit != 0 {
            return Some(2);
        }
        if self.l4s_dscp & bit != 0 {
            return Some(1);
        }
        if let Some(p) = dst_port {
            if self.l4s_ports.contains(&p) {
                return Some(1);
            }
        }
        None
    }

    pub fn classify<P: QueuePacket>(&self, pkt: &P) -> TrafficClass {
        let ecn = pkt.ecn();
        if ecn.bits() & self.mask != 0 {
            return TrafficClass::L4s;
        }
        if self.l4s_dscp | self.llll_dscp == 0 && self.l4s_ports.is_empty() {
            return TrafficClass::Classic;
        }
        self.classify_with_override(ecn, self.rule(pkt.dscp(), pkt.dst_port()))
    }
}

/// Step threshold of the L-queue (Linux `step_thresh` with `step_in_packets`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Mark when the packet's sojourn is strictly greater than this.
    Time(Dur),
    /// Mark when the L-queue length after removal is strictly greater than this.
    Packets(u32),
}

/// The parameters as the running qdisc uses them (after RTT derivation, Linux scaling and
/// clamping).
#[derive(Clone, Debug, PartialEq)]
pub struct DualPi2Params {
    pub limit: u32,
    pub memory_limit: u64,
    pub target: Dur,
    pub tupdate: Dur,
    /// Netlink gains (Hz × 256) and the kernel's internal gains.
    pub alpha_nl: u32,
    pub beta_nl: u32,
    pub alpha_i: u32,
    pub beta_i: u32,
    pub step: Step,
    pub step_mode: StepMode,
    /// The L-queue length at enqueue from which the native AQM applies (resolved from the
    /// step mode: upstream `min_qlen_step`, L4STeam 2, DOCSIS 0).
    pub min_qlen_step: u32,
    /// DOCSIS mode: `MAX_RATE`, and the ramp's resolved `MINTH` and range.
    pub max_rate: Option<Rate>,
    pub docsis_min_th: Dur,
    pub docsis_range: Dur,
    pub coupling_factor: u32,
    pub drop_overload: bool,
    pub drop_early: bool,
    /// C weight and L weight in percent.
    pub wc: u32,
    pub wl: u32,
    /// `mtu × (wc − wl)`.
    pub credit_init: i64,
    pub mtu: u32,
    pub marking: Marking,
    pub min_th: Dur,
    pub range: Dur,
    pub th_len: u32,
    pub recur: bool,
    pub pi_input: PiInput,
}

impl DualPi2Params {
    /// Resolve a configuration. Never fails: invalid values (which `validate()` rejects) are
    /// clamped; an invalid RTT pair is ignored.
    pub fn from_config(cfg: &DualPi2Config) -> DualPi2Params {
        let limit = cfg.limit.max(1);
        let mtu = cfg.mtu.max(1);
        let memory_limit = cfg
            .memlimit
            .unwrap_or_else(|| (limit as u64 * 2 * mtu as u64).min(u32::MAX as u64))
            .max(1);
        let nl = |hz: Option<f64>, def: u32| hz.map(gain_hz_to_nl).unwrap_or(def).clamp(1, MAX_GAIN_NL);
        let (mut target, mut tupdate) = (cfg.target, cfg.tupdate);
        let (mut alpha_nl, mut beta_nl) = (nl(cfg.alpha, DEFAULT_ALPHA_NL), nl(cfg.beta, DEFAULT_BETA_NL));
        if let Ok(Some(d)) = derive_from_rtt(cfg.max_rtt, cfg.typical_rtt) {
            target = d.target;
            tupdate = d.tupdate;
            alpha_nl = nl(Some(d.alpha), DEFAULT_ALPHA_NL);
            beta_nl = nl(Some(d.beta), DEFAULT_BETA_NL);
        }
        // Linux stores tupdate and the step in u32 ns, saturating (≈ 4.29 s).
        let tupdate = Dur(tupdate.as_nanos().clamp(1, u32::MAX as u64));
        let step = match cfg.step_thresh_packets {
            Some(p) => Step::Packets(p),
            None => Step::Time(Dur(cfg.step_thresh.as_nanos().min(u32::MAX as u64))),
        };
        let wc = cfg.classic_protection.min(100);
        let wl = 100 - wc;
        let min_qlen_step = match cfg.step_mode {
            StepMode::LinuxUpstream => cfg.min_qlen_step.unwrap_or(0),
            // `qdisc_qlen(q->l_queue) > 1` in L4STeam's `dualpi2_qdisc_enqueue`.
            StepMode::L4steam => 2,
            StepMode::Docsis => 0,
        };
        let max_rate = cfg.max_rate.filter(|r| r.bits_per_sec() > 0);
        let (docsis_min_th, docsis_range) = docsis_thresholds(max_rate, mtu);
        DualPi2Params {
            limit,
            memory_limit,
            target,
            tupdate,
            alpha_nl,
            beta_nl,
            alpha_i: gain_nl_to_internal(alpha_nl),
            beta_i: gain_nl_to_internal(beta_nl),
            step,
            step_mode: cfg.step_mode,
            min_qlen_step,
            max_rate,
            docsis_min_th,
            docsis_range,
            coupling_factor: cfg.coupling_factor.clamp(1, 255),
            drop_overload: cfg.drop_overload,
            drop_early: cfg.drop_early,
            wc,
            wl,
            credit_init: mtu as i64 * (wc as i64 - wl as i64),
            mtu,
            marking: cfg.marking,
            min_th: cfg.min_th,
            range: cfg.range,
            th_len: cfg.th_len,
            recur: cfg.recur,
            pi_input: cfg.pi_input,
        }
    }

    /// Effective integral gain in Hz (`alpha_i / 64 × 1e9 / MAX_PROB`).
    pub fn alpha_hz(&self) -> f64 {
        self.alpha_i as f64 / 64.0 * 1e9 / MAX_PROB as f64
    }
    /// Effective proportional gain in Hz.
    pub fn beta_hz(&self) -> f64 {
        self.beta_i as f64 / 64.0 * 1e9 / MAX_PROB as f64
    }
}

/// DOCSIS immediate-AQM ramp thresholds (MINTH, range) for `MAX_RATE` and a frame of `mtu`
/// bytes, as docsis-ns3 `DualQueueCoupledAqm::InitializeParams` derives them from the MULPI
/// defaults (MAXTH 1 ms, LG_RANGE 19): FLOOR = 2 frames at MAX_RATE (capped at 65.535 ms),
/// MINTH = max(MAXTH − range, FLOOR), MAXTH = min(MINTH + range, 65.535 ms).
pub fn docsis_thresholds(max_rate: Option<Rate>, mtu: u32) -> (Dur, Dur) {
    const CAP: Dur = Dur(65_535_000);
    let range = Dur(1 << 19);
    let floor = max_rate
        .map(|r| r.tx_time(2 * mtu as u64).min(CAP))
        .unwrap_or(Dur::ZERO);
    let min_th = (Dur::from_millis(1) - range).max(floor);
    let max_th = (min_th + range).min(CAP);
    (min_th, max_th - min_th)
}

/// One step of the Linux integer PI2 update (`calculate_probability`), as a pure function.
///
/// `delta = (qdelay − target)·alpha_i + (qdelay − last_qdelay)·beta_i` (ns × internal gain),
/// `prob += delta / 64` with the magnitude truncated, saturating in [0, MAX_PROB], then capped at
/// `MAX_PROB / k` when `drop_overload` is off. Tupdate does not appear (RFC 9332 §A.1 folds it
/// into alpha).
#[allow(clippy::too_many_arguments)]
pub fn pi2_update_linux(
    prob: u32,
    qdelay: Dur,
    last_qdelay: Dur,
    target: Dur,
    alpha_i: u32,
    beta_i: u32,
    drop_overload: bool,
    k: u32,
) -> u32 {
    let q = qdelay.as_nanos() as i128;
    let delta =
        (q - target.as_nanos() as i128) * alpha_i as i128 + (q - last_qdelay.as_nanos() as i128) * beta_i as i128;
    // Rust's integer division truncates toward zero: the magnitude is truncated both ways.
    let new = (prob as i128 + delta / 64).clamp(0, MAX_PROB as i128) as u32;
    if drop_overload {
        new
    } else {
        new.min(MAX_PROB / k.max(1))
    }
}

/// One step of the RFC 9332 Appendix A (Figure 6) floating-point PI update:
/// `p' += alpha·(qdelay − target) + beta·(qdelay − prev)`, kept within [0, 1]; delays in
/// seconds, gains in Hz.
pub fn pi2_update_rfc(p: f64, qdelay_s: f64, prev_s: f64, target_s: f64, alpha_hz: f64, beta_hz: f64) -> f64 {
    (p + alpha_hz * (qdelay_s - target_s) + beta_hz * (qdelay_s - prev_s)).clamp(0.0, 1.0)
}

/// RFC 9332 Appendix A `laqm()`: the native L ramp.
pub fn ramp_probability(sojourn: Dur, min_th: Dur, range: Dur) -> f64 {
    if sojourn <= min_th {
        0.0
    } else if range.is_zero() || sojourn >= min_th + range {
        1.0
    } else {
        (sojourn - min_th).as_nanos() as f64 / range.as_nanos() as f64
    }
}

/// RFC 9332 Appendix A `recur()`: a deterministic accumulator that hits once every 1/p calls.
#[inline]
fn recur(count: &mut f64, p: f64) -> bool {
    *count += p;
    if *count > 1.0 {
        *count -= 1.0;
        true
    } else {
        false
    }
}

/// DualPI2-specific counters (Linux `tc_dualpi2_xstats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DualPi2Stats {
    /// Successful `mark_ce` calls (Linux `ecn_mark`; a packet marked by PI and step counts twice).
    pub ecn_mark: u64,
    /// Packets marked by the L-queue step or ramp.
    pub step_marks: u64,
    /// Largest total queue length seen at an enqueue (sampled before adding).
    pub maxq: u32,
    pub max_memory_used: u64,
    pub drops_overlimit: u64,
    /// PI (coupled) drops, at enqueue or dequeue.
    pub drops_pi: u64,
    /// Step/ramp drops of Not-ECT L4S-class packets.
    pub drops_step: u64,
}

struct Entry<P> {
    pkt: P,
    ts: Time,
    class: TrafficClass,
    apply_step: bool,
    marked: bool,
}

enum Verdict {
    Pass { marked: bool },
    Drop,
}

/// Sets CE. Returns (packet now carries CE, it was not CE before).
#[inline]
fn mark_ce<P: QueuePacket>(pkt: &mut P) -> (bool, bool) {
    let was_ce = pkt.ecn() == Ecn::Ce;
    let ok = pkt.set_ce();
    (ok, ok && !was_ce)
}

/// The DualPI2 queue discipline.
pub struct DualPi2<P> {
    p: DualPi2Params,
    classifier: Classifier,
    rng: Rng,
    l: VecDeque<Entry<P>>,
    c: VecDeque<Entry<P>>,
    l_head_ts: Option<Time>,
    c_head_ts: Option<Time>,
    prob: u32,
    last_qdelay: Dur,
    credit: i64,
    memory_used: u64,
    backlog_bytes: u64,
    next_timer: Time,
    recur_c: f64,
    recur_l: f64,
    recur_ramp: f64,
    stats_l: QueueStats,
    stats_c: QueueStats,
    xstats: DualPi2Stats,
    qp: Option<QueueProtection>,
}

impl<P: QueuePacket> DualPi2<P> {
    /// A DualPI2 whose clock starts at 0: the first PI update is due at `tupdate`.
    pub fn new(cfg: &DualPi2Config, rng: Rng) -> Self {
        Self::with_start(cfg, rng, Time::ZERO)
    }

    /// A DualPI2 created at `now` (first PI update at `now + tupdate`, like Linux's init).
    pub fn with_start(cfg: &DualPi2Config, rng: Rng, now: Time) -> Self {
        let p = DualPi2Params::from_config(cfg);
        let classifier = Classifier::new(cfg.ecn_mask, &cfg.l4s_dscp, &cfg.llll_dscp, &cfg.l4s_ports);
        let qp = cfg
            .queue_protection
            .as_ref()
            .filter(|q| q.enabled)
            .map(|q| QueueProtection::new(q, native_full_marking_delay(&p)));
        DualPi2 {
            qp,
            classifier,
            rng,
            l: VecDeque::new(),
            c: VecDeque::new(),
            l_head_ts: None,
            c_head_ts: None,
            prob: 0,
            last_qdelay: Dur::ZERO,
            credit: p.credit_init,
            memory_used: 0,
            backlog_bytes: 0,
            next_timer: now + p.tupdate,
            recur_c: 0.0,
            recur_l: 0.0,
            recur_ramp: 0.0,
            stats_l: QueueStats::default(),
            stats_c: QueueStats::default(),
            xstats: DualPi2Stats::default(),
            p,
        }
    }

    pub fn params(&self) -> &DualPi2Params {
        &self.p
    }
    pub fn classifier(&self) -> &Classifier {
        &self.classifier
    }
    /// p' in Linux fixed point (MAX_PROB = 1.0).
    pub fn prob(&self) -> u32 {
        self.prob
    }
    /// Test hook: force p' (Linux fixed point). Honoured until the next PI update.
    pub fn set_prob(&mut self, prob: u32) {
        self.prob = prob;
    }
    /// Test hook: force p' as a fraction in [0, 1].
    pub fn set_prob_f64(&mut self, p: f64) {
        self.prob = (p.clamp(0.0, 1.0) * MAX_PROB as f64) as u32;
    }
    pub fn last_qdelay(&self) -> Dur {
        self.last_qdelay
    }
    /// The WRR credit (≤ 0 selects L).
    pub fn credit(&self) -> i64 {
        self.credit
    }
    pub fn memory_used(&self) -> u64 {
        self.memory_used
    }
    pub fn l_head_ts(&self) -> Option<Time> {
        self.l_head_ts
    }
    pub fn c_head_ts(&self) -> Option<Time> {
        self.c_head_ts
    }
    pub fn l_len(&self) -> usize {
        self.l.len()
    }
    pub fn c_len(&self) -> usize {
        self.c.len()
    }
    pub fn xstats(&self) -> DualPi2Stats {
        self.xstats
    }
    /// Classic probability p_C = p'² as a fraction.
    pub fn p_c(&self) -> f64 {
        let p = self.prob as f64 / MAX_PROB as f64;
        p * p
    }
    /// Coupled L probability p_CL = k·p' as a fraction (may exceed 1: overload).
    pub fn p_cl(&self) -> f64 {
        self.prob as f64 / MAX_PROB as f64 * self.p.coupling_factor as f64
    }
    /// k·p' > 1 (Linux `pl > MAX_PROB`).
    pub fn overloaded(&self) -> bool {
        self.prob as u64 * self.p.coupling_factor as u64 > MAX_PROB as u64
    }

    /// Linux `roll`: `rand <= p`, hit probability (p + 1) / 2^32.
    #[inline]
    fn roll(&mut self, p: u32) -> bool {
        self.rng.next_u32() <= p
    }

    /// Linux `must_drop` (with `dualpi2_classic_marking` and `dualpi2_scalable_marking`), or
    /// the RFC 9332 Appendix A `recur` variant.
    fn must_drop(&mut self, pkt: &mut P, class: TrafficClass) -> Verdict {
        if self.backlog_bytes < 2 * self.p.mtu as u64 || class == TrafficClass::Llll {
            return Verdict::Pass { marked: false };
        }
        let p = self.prob;
        let pl = p as u64 * self.p.coupling_factor as u64;
        let overload = pl > MAX_PROB as u64;
        let pf = p as f64 / MAX_PROB as f64;
        let mark = |s: &mut Self, pkt: &mut P| {
            let (ok, newly) = mark_ce(pkt);
            if ok {
                s.xstats.ecn_mark += 1;
            }
            newly
        };
        match class {
            TrafficClass::Classic => {
                let hit = if self.p.recur {
                    recur(&mut self.recur_c, pf * pf)
                } else {
                    self.roll(p) && self.roll(p)
                };
                if hit {
                    if overload || pkt.ecn() == Ecn::NotEct {
                        return Verdict::Drop;
                    }
                    return Verdict::Pass {
                        marked: mark(self, pkt),
                    };
                }
                Verdict::Pass { marked: false }
            }
            TrafficClass::L4s => {
                if overload {
                    if self.p.drop_overload {
                        let hit = if self.p.recur {
                            recur(&mut self.recur_l, pf * pf)
                        } else {
                            self.roll(p) && self.roll(p)
                        };
                        if hit {
                            return Verdict::Drop;
                        }
                    }
                    return Verdict::Pass {
                        marked: mark(self, pkt),
                    };
                }
                let hit = if self.p.recur {
                    recur(&mut self.recur_l, pl as f64 / MAX_PROB as f64)
                } else {
                    self.roll(pl as u32)
                };
                if hit {
                    if pkt.ecn() == Ecn::NotEct {
                        return Verdict::Drop;
                    }
                    return Verdict::Pass {
                        marked: mark(self, pkt),
                    };
                }
                Verdict::Pass { marked: false }
            }
            TrafficClass::Llll => Verdict::Pass { marked: false },
        }
    }

    /// DOCSIS immediate AQM at enqueue of an L4S packet (already counted in the L backlog):
    /// the L backlog in bytes over `MAX_RATE`, on the ramp, drawn with `recur()` (docsis-ns3 `DoEnqueue`,
    /// `QDelayCoupledL`, `CalcProbNative`, `Iaqm`; the coupled k·p' is still drawn at dequeue).
    fn docsis_iaqm(&mut self) -> bool {
        let Some(rate) = self.p.max_rate else { return false };
        let qdelay = rate.tx_time(self.stats_l.backlog_bytes);
        let pr = ramp_probability(qdelay, self.p.docsis_min_th, self.p.docsis_range);
        pr > 0.0 && recur(&mut self.recur_ramp, pr.min(1.0))
    }

    /// The native L AQM (Linux `do_step_aqm` step, or the RFC 9332 Appendix A ramp). `sojourn` of the packet, L length
    /// after its removal.
    fn native_l(&mut self, e: &mut Entry<P>, sojourn: Dur) -> Verdict {
        if !e.apply_step {
            return Verdict::Pass { marked: false };
        }
        let hit = match self.p.marking {
            // DOCSIS decided at enqueue; `apply_step` carries the outcome.
            _ if self.p.step_mode == StepMode::Docsis => true,
            Marking::Step => match self.p.step {
                Step::Time(th) => sojourn > th,
                Step::Packets(n) => self.l.len() as u64 > n as u64,
            },
            Marking::Ramp => {
                if self.l.len() as u64 <= self.p.th_len as u64 {
                    false
                } else {
                    let pr = ramp_probability(sojourn, self.p.min_th, self.p.range);
                    if pr >= 1.0 {
                        true
                    } else if pr <= 0.0 {
                        false
                    } else if self.p.recur {
                        recur(&mut self.recur_ramp, pr)
                    } else {
                        self.rng.next_f64() < pr
                    }
                }
            }
        };
        if !hit {
            return Verdict::Pass { marked: false };
        }
        if e.pkt.ecn() == Ecn::NotEct {
            return Verdict::Drop;
        }
        let (ok, newly) = mark_ce(&mut e.pkt);
        if ok {
            self.xstats.ecn_mark += 1;
            self.xstats.step_marks += 1;
        }
        Verdict::Pass { marked: newly }
    }

    /// RFC 9957 Queue Protection of an L-queue packet at enqueue (after the limits, as
    /// docsis-ns3 `DualQueueCoupledAqm::DoEnqueue` calls `QueueProtect`). The L-queue delay
    /// is the backlog with this packet over `max_rate` where the rate is known (DOCSIS's
    /// `qdelayCoupledL`, RFC 9957 §4.2.3), else the L head's sojourn (the delay Linux's step
    /// acts on); `probNative` is the native L AQM's probability at that delay.
    fn protect(&mut self, pkt: &P, class: TrafficClass, now: Time) -> queue_protection::Verdict {
        if class == TrafficClass::Classic || self.qp.is_none() {
            return queue_protection::Verdict::Pass;
        }
        let qdelay = match self.p.max_rate {
            Some(rate) => rate.tx_time(self.stats_l.backlog_bytes + pkt.wire_len() as u64),
            None => self.l_head_ts.map(|t| now - t).unwrap_or(Dur::ZERO),
        };
        let prob_native = self.native_probability(qdelay);
        match &mut self.qp {
            Some(qp) => qp.protect(pkt, qdelay, prob_native, now),
            None => queue_protection::Verdict::Pass,
        }
    }

    /// The native L AQM's marking probability at an L-queue delay (RFC 9957's
    /// `probNative`): the DOCSIS ramp, the RFC 9332 ramp (0 while the L-queue holds
    /// `th_len` packets or fewer), or the step as 0 or 1.
    fn native_probability(&self, qdelay: Dur) -> f64 {
        if self.p.step_mode == StepMode::Docsis {
            return ramp_probability(qdelay, self.p.docsis_min_th, self.p.docsis_range);
        }
        match self.p.marking {
            Marking::Ramp if self.l.len() as u64 <= self.p.th_len as u64 => 0.0,
            Marking::Ramp => ramp_probability(qdelay, self.p.min_th, self.p.range),
            Marking::Step => {
                let hit = match self.p.step {
                    Step::Time(th) => qdelay > th,
                    Step::Packets(n) => self.l.len() as u64 > n as u64,
                };
                if hit {
                    1.0
                } else {
                    0.0
                }
            }
        }
    }

    fn qstats(&mut self, q: QueueId) -> &mut QueueStats {
        if q == QueueId::L {
            &mut self.stats_l
        } else {
            &mut self.stats_c
        }
    }
}

impl<P: QueuePacket> Qdisc<P> for DualPi2<P> {
    fn kind(&self) -> &'static str {
        "dualpi2"
    }

    fn queue_ids(&self) -> &'static [QueueId] {
        &[QueueId::L, QueueId::C]
    }

    /// In Linux's order (`dualpi2_qdisc_enqueue`, `dualpi2_enqueue_skb`): classify, limits
    /// (before any AQM and before timestamping),
    /// optional early PI decision, timestamp and queue.
    fn enqueue(&mut self, mut pkt: P, now: Time) -> Enqueued<P> {
        let class = self.classifier.classify(&pkt);
        let queue = class.queue();
        let len = pkt.wire_len() as u64;
        let mem = pkt.mem_size() as u64;
        let qlen = self.l.len() + self.c.len();
        if qlen as u64 >= self.p.limit as u64 || self.memory_used + mem > self.p.memory_limit {
            self.xstats.drops_overlimit += 1;
            let s = self.qstats(queue);
            s.drops += 1;
            s.overlimit_drops += 1;
            return Enqueued::Dropped(Dropped {
                pkt,
                reason: DropReason::Overlimit,
                queue,
                sojourn: Dur::ZERO,
            });
        }
        let (class, queue) = match self.protect(&pkt, class, now) {
            queue_protection::Verdict::Pass => (class, queue),
            queue_protection::Verdict::Sanction => (TrafficClass::Classic, QueueId::C),
        };
        let mut marked = false;
        if self.p.drop_early {
            match self.must_drop(&mut pkt, class) {
                Verdict::Drop => {
                    self.xstats.drops_pi += 1;
                    self.qstats(queue).drops += 1;
                    return Enqueued::Dropped(Dropped {
                        pkt,
                        reason: DropReason::Congestion,
                        queue,
                        sojourn: Dur::ZERO,
                    });
                }
                Verdict::Pass { marked: m } => marked = m,
            }
        }
        self.memory_used += mem;
        self.xstats.max_memory_used = self.xstats.max_memory_used.max(self.memory_used);
        self.xstats.maxq = self.xstats.maxq.max(qlen as u32);
        self.backlog_bytes += len;
        let s = self.qstats(queue);
        s.enqueued_packets += 1;
        s.enqueued_bytes += len;
        s.backlog_packets += 1;
        s.backlog_bytes += len;
        if class == TrafficClass::Classic {
            self.c.push_back(Entry {
                pkt,
                ts: now,
                class,
                apply_step: false,
                marked,
            });
            if self.c_head_ts.is_none() {
                self.c_head_ts = Some(now);
            }
        } else {
            let mut apply_step = class == TrafficClass::L4s && self.l.len() as u64 >= self.p.min_qlen_step as u64;
            if apply_step && self.p.step_mode == StepMode::Docsis {
                apply_step = self.docsis_iaqm();
            }
            self.l.push_back(Entry {
                pkt,
                ts: now,
                class,
                apply_step,
                marked,
            });
            if self.l_head_ts.is_none() {
                self.l_head_ts = Some(now);
            }
        }
        Enqueued::Queued { queue, marked }
    }

    /// As Linux `__dualpi2_qdisc_dequeue` and `dequeue_packet`: WRR pick, PI decision
    /// (unless `drop_early`), native L AQM, credit update only for packets actually sent.
    fn dequeue(&mut self, now: Time, drops: &mut Vec<Dropped<P>>) -> Option<Dequeued<P>> {
        loop {
            let c_len = self.c.len();
            let pick_l = !self.l.is_empty() && (c_len == 0 || self.credit <= 0);
            let picked = if pick_l {
                self.l.pop_front().map(|e| (e, true))
            } else {
                self.c.pop_front().map(|e| (e, false))
            };
            let Some((mut e, from_l)) = picked else {
                self.credit = self.p.credit_init;
                return None;
            };
            let len = e.pkt.wire_len() as u64;
            let change = if from_l {
                self.l_head_ts = self.l.front().map(|x| x.ts);
                if c_len > 0 {
                    self.p.wc as i64 * len as i64
                } else {
                    0
                }
            } else {
                self.c_head_ts = self.c.front().map(|x| x.ts);
                if !self.l.is_empty() {
                    -(self.p.wl as i64) * len as i64
                } else {
                    0
                }
            };
            self.backlog_bytes -= len;
            self.memory_used = self.memory_used.saturating_sub(e.pkt.mem_size() as u64);
            let queue = if from_l { QueueId::L } else { QueueId::C };
            {
                let s = self.qstats(queue);
                s.backlog_packets -= 1;
                s.backlog_bytes -= len;
            }
            let sojourn = now - e.ts;
            if !self.p.drop_early {
                match self.must_drop(&mut e.pkt, e.class) {
                    Verdict::Drop => {
                        self.xstats.drops_pi += 1;
                        self.qstats(queue).drops += 1;
                        drops.push(Dropped {
                            pkt: e.pkt,
                            reason: DropReason::Congestion,
                            queue,
                            sojourn,
                        });
                        continue;
                    }
                    Verdict::Pass { marked } => e.marked |= marked,
                }
            }
            if from_l {
                match self.native_l(&mut e, sojourn) {
                    Verdict::Drop => {
                        self.xstats.drops_step += 1;
                        self.qstats(queue).drops += 1;
                        drops.push(Dropped {
                            pkt: e.pkt,
                            reason: DropReason::StepNonEcn,
                            queue,
                            sojourn,
                        });
                        continue;
                    }
                    Verdict::Pass { marked } => e.marked |= marked,
                }
            }
            self.credit += change;
            let s = self.qstats(queue);
            s.dequeued_packets += 1;
            s.dequeued_bytes += len;
            if e.marked {
                s.marks += 1;
            }
            return Some(Dequeued {
                pkt: e.pkt,
                queue,
                sojourn,
                marked: e.marked,
            });
        }
    }

    fn next_timeout(&self) -> Option<Time> {
        Some(self.next_timer)
    }

    /// The PI2 update (Linux `calculate_probability`), re-armed at `now + tupdate` like
    /// Linux's `dualpi2_timer`.
    fn on_timeout(&mut self, now: Time) {
        let qd_c = self.c_head_ts.map(|t| now - t).unwrap_or(Dur::ZERO);
        let qd_l = self.l_head_ts.map(|t| now - t).unwrap_or(Dur::ZERO);
        let qdelay = match self.p.pi_input {
            PiInput::Max => qd_c.max(qd_l),
            PiInput::ClassicHead => qd_c,
        };
        self.prob = pi2_update_linux(
            self.prob,
            qdelay,
            self.last_qdelay,
            self.p.target,
            self.p.alpha_i,
            self.p.beta_i,
            self.p.drop_overload,
            self.p.coupling_factor,
        );
        self.last_qdelay = qdelay;
        self.next_timer = now + self.p.tupdate;
    }

    fn len_packets(&self) -> usize {
        self.l.len() + self.c.len()
    }

    fn len_bytes(&self) -> u64 {
        self.backlog_bytes
    }

    fn stats(&self) -> Vec<(QueueId, QueueStats)> {
        vec![(QueueId::L, self.stats_l), (QueueId::C, self.stats_c)]
    }

    /// p' as a fraction.
    fn probability(&self) -> Option<f64> {
        Some(self.prob as f64 / MAX_PROB as f64)
    }

    fn queue_protection(&self) -> Option<&QpStats> {
        self.qp.as_ref().map(|q| q.stats())
    }
}

/// The L-queue delay at which the native AQM marks every packet: Queue Protection's
/// default CRITICALqL (RFC 9957 §4.1: MAXTH). DOCSIS: MAXTH; RFC 9332 ramp: `min_th +
/// range`; Linux step: `step_thresh` (a step in packets has none: validation asks for
/// `critical_ql`, and 1 ms stands in for an unvalidated configuration).
fn native_full_marking_delay(p: &DualPi2Params) -> Dur {
    if p.step_mode == StepMode::Docsis {
        return p.docsis_min_th + p.docsis_range;
    }
    match (p.marking, p.step) {
        (Marking::Ramp, _) => p.min_th + p.range,
        (Marking::Step, Step::Time(th)) => th,
        (Marking::Step, Step::Packets(_)) => Dur::from_millis(1),
    }
}
