//! Configuration of every discipline, as written in scenario files.
//!
//! Each struct deserializes on its own from a TOML/JSON table (`deny_unknown_fields`, every
//! field optional with the Linux default), so the scenario loader can pick the struct by the
//! `kind` key. Durations are text with a unit (`"15ms"`), see [`l4s_core::units`].
//!
//! Call `validate()` before building: it names the offending key and says what was expected.
//! Constructors never panic on an unvalidated configuration either; they clamp impossible
//! values to the nearest valid one.

use l4s_core::{Dur, QueuePacket, Rate, Rng, FRAME_MTU};
use serde::{Deserialize, Serialize};
use std::fmt;

use crate::docsis_dualq::DocsisDualqConfig;
use crate::qdisc::Qdisc;
use crate::queue_protection::QueueProtectionConfig;

/// A configuration value that cannot work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The field name as written in the scenario file, e.g. `"step_thresh"`.
    pub key: String,
    /// What was expected.
    pub message: String,
}

impl ConfigError {
    pub fn new(key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError {
            key: key.to_string(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

impl std::error::Error for ConfigError {}

fn err<T>(key: &str, msg: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError::new(key, msg))
}

fn positive_dur(key: &str, d: Dur) -> Result<(), ConfigError> {
    if d.is_zero() {
        return err(key, "expected a duration greater than zero, such as \"15ms\"");
    }
    Ok(())
}

/// A controller's update period: at least 1 µs, the unit Linux takes it in
/// (`TCA_DUALPI2_TUPDATE`, `TCA_PIE_TUPDATE`; sch_dualpi2 and sch_pie refuse 0). Shorter
/// ones would wake the run a thousand times or more per microsecond.
pub(crate) fn update_period(key: &str, d: Dur) -> Result<(), ConfigError> {
    if d < Dur::from_micros(1) {
        return err(key, format!("expected at least 1us, such as \"15ms\", found {d}"));
    }
    Ok(())
}

/// A frame MTU (Linux `psched_mtu`: the device MTU plus its link-layer header): from the
/// smallest Ethernet frame, 64 bytes, to the largest IP packet with its header, 65535.
fn frame_mtu(v: u32) -> Result<(), ConfigError> {
    if !(64..=65_535).contains(&v) {
        return err(
            "mtu",
            format!("expected a frame MTU from 64 to 65535 bytes, such as 1514, found {v}"),
        );
    }
    Ok(())
}

fn positive_f64(key: &str, v: f64) -> Result<(), ConfigError> {
    if !v.is_finite() || v <= 0.0 {
        return err(key, format!("expected a finite number greater than zero, found {v}"));
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------
// DualPI2
// ------------------------------------------------------------------------------------------

/// Which ECN codepoints send a packet to the L-queue (Linux `ecn_mask`, tested first in
/// `dualpi2_skb_classify`; RFC 9331 §5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum EcnMask {
    /// Mask 1: ECT(1) and CE (RFC 9331 §5.1). Linux default.
    #[default]
    L4sEct,
    /// Mask 2: ECT(0) and CE (not exposed by tc).
    ClaEct,
    /// Mask 3: any ECT (data-centre DCTCP only; never on the Internet, RFC 9331 §5.1).
    AnyEct,
}

impl EcnMask {
    /// The two-bit mask applied to the ECN field.
    pub fn bits(self) -> u8 {
        match self {
            EcnMask::L4sEct => 1,
            EcnMask::ClaEct => 2,
            EcnMask::AnyEct => 3,
        }
    }
}

/// The L-queue's native AQM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Marking {
    /// Linux: step at `step_thresh` (time or packets).
    #[default]
    Step,
    /// RFC 9332 Appendix A: linear ramp from `min_th` over `range`, suppressed while the
    /// L-queue holds `th_len` packets or fewer.
    Ramp,
}

/// Which deployed DualPI2 the L-queue's native AQM follows where they differ: whether a
/// lone L4S packet can be marked. Below about 12 Mbit/s a 1514-byte frame takes longer to
/// serialise than the 1 ms step, so a packet queued behind one frame already exceeds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum StepMode {
    /// Upstream Linux (`net/sched/sch_dualpi2.c`, v6.17+, `skb_apply_step`): the step applies
    /// when the L-queue holds at least `min_qlen_step` packets at enqueue (default 0: always,
    /// so a lone packet is marked once its sojourn exceeds `step_thresh`).
    #[default]
    LinuxUpstream,
    /// L4STeam's out-of-tree kernels (`github.com/L4STeam/linux`, `dualpi2_qdisc_enqueue`):
    /// the step applies only when the L-queue already holds more than one packet at enqueue
    /// (`qlen > 1`, upstream's `min_qlen_step = 2`); no `min_qlen_step` parameter.
    L4steam,
    /// DOCSIS 3.1 immediate AQM (MULPI Annex N as modelled by CableLabs' docsis-ns3,
    /// `DualQueueCoupledAqm::InitializeParams`/`CalcProbNative`): at enqueue, a ramp on the
    /// L backlog in bytes (arriving packet included) over `max_rate`, from
    /// `max(1 ms − 2^19 ns, 2 frames at max_rate)` over 2^19 ns, with `recur()` draws.
    Docsis,
}

/// The delay fed to the PI controller, where Linux `calculate_probability` and the RFC 9332
/// Appendix A.1 pseudo-code differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum PiInput {
    /// Linux: max(L head sojourn, C head sojourn).
    #[default]
    Max,
    /// RFC 9332 Appendix A: C head sojourn only.
    ClassicHead,
}

/// DualPI2 (RFC 9332, Linux `sch_dualpi2`). Defaults are the Linux ones.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DualPi2Config {
    /// Packets in L + C together (tail drop when `qlen >= limit`).
    pub limit: u32,
    /// Bytes of [`QueuePacket::mem_size`]; `None` = `limit × 2 × mtu`, saturating at u32::MAX
    /// like Linux.
    pub memlimit: Option<u64>,
    pub target: Dur,
    pub tupdate: Dur,
    /// Integral gain in Hz; `None` = Linux default 41/256 Hz. Truncated to 1/256 Hz like tc.
    pub alpha: Option<f64>,
    /// Proportional gain in Hz; `None` = Linux default 819/256 Hz.
    pub beta: Option<f64>,
    /// iproute2 helper (`tc/q_dualpi2.c` `dualpi2_parse_opt`): derive target/tupdate/alpha/beta
    /// from RTTs.
    pub max_rtt: Option<Dur>,
    pub typical_rtt: Option<Dur>,
    /// Step threshold in time mode (strictly greater sojourn is marked).
    pub step_thresh: Dur,
    /// When set, the step is in packets (L-queue length after removal) and `step_thresh` is ignored.
    pub step_thresh_packets: Option<u32>,
    /// Which deployed implementation's native-AQM guard to follow ([`StepMode`]).
    pub step_mode: StepMode,
    /// Upstream Linux's minimum L-queue length (packets, at enqueue) for the step to apply;
    /// `None` = 0. Only with `step_mode = "linux-upstream"`.
    pub min_qlen_step: Option<u32>,
    /// DOCSIS `MAX_RATE` (the service flow's rate), required by `step_mode = "docsis"`.
    pub max_rate: Option<Rate>,
    pub coupling_factor: u32,
    pub drop_overload: bool,
    pub drop_early: bool,
    /// WRR weight of the C-queue in percent (0..=100).
    pub classic_protection: u32,
    pub ecn_mask: EcnMask,
    /// Frame MTU in bytes (Linux `psched_mtu`): 2-MTU floor, WRR credit, default memlimit.
    pub mtu: u32,
    /// DSCPs classified to the L-queue as class L4S (e.g. 45 = NQB).
    pub l4s_dscp: Vec<u8>,
    /// Destination ports classified to the L-queue as class L4S (e.g. 53).
    pub l4s_ports: Vec<u16>,
    /// DSCPs classified to the L-queue as class LLLL (no AQM at all).
    pub llll_dscp: Vec<u8>,
    pub marking: Marking,
    /// Ramp start (RFC 9332 Appendix A `minTh`, 800 µs).
    pub min_th: Dur,
    /// Ramp width (RFC `range`, 400 µs).
    pub range: Dur,
    /// Ramp suppression length in packets (RFC `Th_len`, 1 packet).
    pub th_len: u32,
    /// RFC 9332 deterministic `recur()` instead of random draws.
    pub recur: bool,
    pub pi_input: PiInput,
    /// RFC 9957 Queue Protection of the L-queue: packets of a flow that builds a queue in it
    /// are sent to the C-queue instead ([`crate::queue_protection`]). Off when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_protection: Option<Box<QueueProtectionConfig>>,
}

impl Default for DualPi2Config {
    fn default() -> Self {
        DualPi2Config {
            limit: 10_000,
            memlimit: None,
            target: Dur::from_millis(15),
            tupdate: Dur::from_millis(16),
            alpha: None,
            beta: None,
            max_rtt: None,
            typical_rtt: None,
            step_thresh: Dur::from_millis(1),
            step_thresh_packets: None,
            step_mode: StepMode::LinuxUpstream,
            min_qlen_step: None,
            max_rate: None,
            coupling_factor: 2,
            drop_overload: true,
            drop_early: false,
            classic_protection: 10,
            ecn_mask: EcnMask::L4sEct,
            mtu: FRAME_MTU,
            l4s_dscp: Vec::new(),
            l4s_ports: Vec::new(),
            llll_dscp: Vec::new(),
            marking: Marking::Step,
            min_th: Dur::from_micros(800),
            range: Dur::from_micros(400),
            th_len: 1,
            recur: false,
            pi_input: PiInput::Max,
            queue_protection: None,
        }
    }
}

/// Linux default netlink alpha (Hz × 256).
pub const DEFAULT_ALPHA_NL: u32 = 41;
/// Linux default netlink beta (Hz × 256).
pub const DEFAULT_BETA_NL: u32 = 819;
/// Largest netlink gain Linux accepts.
pub const MAX_GAIN_NL: u32 = (1 << 31) - 1;

/// Netlink gain (Hz × 256, as tc sends it) → kernel internal gain (Linux
/// `dualpi2_scale_alpha_beta`):
/// `((nl × (2^32 − 1)) >> 2) / 1e9`. 41 → 44, 819 → 879.
pub fn gain_nl_to_internal(nl: u32) -> u32 {
    let v = ((nl as u64 * 0xFFFF_FFFF) >> 2) / 1_000_000_000;
    v.min(u32::MAX as u64) as u32
}

/// Gain in Hz → netlink units, truncated like iproute2 (`alpha × 256`). A relative 1e-9 is
/// added before truncating so that values such as `0.3 / 0.1` (2.9999999999999996 in binary
/// floating point) give the intended 768, not 767.
pub fn gain_hz_to_nl(hz: f64) -> u32 {
    if !hz.is_finite() || hz <= 0.0 {
        return 0;
    }
    (hz * 256.0 * (1.0 + 1e-9)).min(u32::MAX as f64) as u32
}

/// The PI parameters derived from RTTs (iproute2 `max_rtt` / `typical_rtt`, `tc/q_dualpi2.c`
/// `dualpi2_parse_opt`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RttDerived {
    pub max_rtt: Dur,
    pub typical_rtt: Dur,
    pub target: Dur,
    pub tupdate: Dur,
    /// Hz.
    pub alpha: f64,
    /// Hz.
    pub beta: f64,
}

/// iproute2's derivation: fill in the missing RTT (`typical = max(max/6, 1 µs)`,
/// `max = typical × 6`), then `target = typical`, `tupdate = max(min(typical, max/3), 1 µs)`,
/// `alpha = 0.1 × tupdate / max²`, `beta = 0.3 / max` (RFC 9332 §A.1 formulas).
/// Returns `Ok(None)` when neither RTT is given. Errors name `typical_rtt` (typical > max or
/// zero) or `max_rtt` (zero, or gains below 1/256 Hz, which iproute2 refuses).
pub fn derive_from_rtt(max_rtt: Option<Dur>, typical_rtt: Option<Dur>) -> Result<Option<RttDerived>, ConfigError> {
    let (max, typ) = match (max_rtt, typical_rtt) {
        (None, None) => return Ok(None),
        (Some(m), None) => (m, (m / 6).max(Dur::from_micros(1))),
        (None, Some(t)) => (t * 6, t),
        (Some(m), Some(t)) => (m, t),
    };
    if max.is_zero() {
        return err("max_rtt", "expected a round-trip time greater than zero");
    }
    if typ.is_zero() {
        return err("typical_rtt", "expected a round-trip time greater than zero");
    }
    if typ > max {
        return err(
            "typical_rtt",
            format!("expected typical_rtt <= max_rtt ({max}), found {typ}"),
        );
    }
    let tupdate = typ.min(max / 3).max(Dur::from_micros(1));
    let m = max.as_secs_f64();
    let alpha = 0.1 * tupdate.as_secs_f64() / (m * m);
    let beta = 0.3 / m;
    if gain_hz_to_nl(alpha) < 1 || gain_hz_to_nl(beta) < 1 {
        return err(
            "max_rtt",
            format!(
                "the derived gains (alpha {alpha:.6} Hz, beta {beta:.6} Hz) are below 1/256 Hz; use a smaller max_rtt"
            ),
        );
    }
    Ok(Some(RttDerived {
        max_rtt: max,
        typical_rtt: typ,
        target: typ,
        tupdate,
        alpha,
        beta,
    }))
}

impl DualPi2Config {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.limit == 0 {
            return err("limit", "expected at least 1 packet");
        }
        if self.memlimit == Some(0) {
            return err("memlimit", "expected at least 1 byte");
        }
        frame_mtu(self.mtu)?;
        let derived = derive_from_rtt(self.max_rtt, self.typical_rtt)?;
        update_period("tupdate", self.tupdate)?;
        positive_dur("target", self.target)?;
        for (key, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            if let Some(v) = v {
                positive_f64(key, v)?;
                let nl = gain_hz_to_nl(v);
                if nl < 1 {
                    return err(key, format!("expected at least 1/256 Hz (0.00390625), found {v}"));
                }
                if nl > MAX_GAIN_NL {
                    return err(
                        key,
                        format!("expected at most {} Hz, found {v}", MAX_GAIN_NL as f64 / 256.0),
                    );
                }
            }
        }
        let target = derived.map(|d| d.target).unwrap_or(self.target);
        if self.marking == Marking::Step && self.step_thresh_packets.is_none() && self.step_thresh > target {
            return err(
                "step_thresh",
                format!(
                    "expected a step threshold no larger than the PI target ({target}), found {}",
                    self.step_thresh
                ),
            );
        }
        if self.step_mode != StepMode::LinuxUpstream && self.min_qlen_step.is_some() {
            return err(
                "min_qlen_step",
                "only with step_mode = \"linux-upstream\" (\"l4steam\" fixes the guard at more than one \
                 queued packet; \"docsis\" has none)",
            );
        }
        if self.step_mode != StepMode::LinuxUpstream && self.marking == Marking::Ramp {
            return err(
                "step_mode",
                "expected \"linux-upstream\" with marking = \"ramp\" (the RFC 9332 ramp has its own `th_len` guard)",
            );
        }
        match (self.step_mode, self.max_rate) {
            (StepMode::Docsis, None) => {
                return err(
                    "max_rate",
                    "step_mode = \"docsis\" needs the service flow's rate, such as max_rate = \"10Mbit\"",
                )
            }
            (StepMode::Docsis, Some(r)) if r.bits_per_sec() == 0 => {
                return err("max_rate", "expected a rate greater than zero")
            }
            (StepMode::Docsis, _) => {}
            (_, Some(_)) => return err("max_rate", "only with step_mode = \"docsis\""),
            _ => {}
        }
        if self.marking == Marking::Ramp {
            positive_dur("range", self.range)?;
            if self.min_th > target {
                return err(
                    "min_th",
                    format!("expected a ramp start no larger than the PI target ({target})"),
                );
            }
        }
        if self.coupling_factor == 0 || self.coupling_factor > 255 {
            return err(
                "coupling_factor",
                format!("expected an integer from 1 to 255, found {}", self.coupling_factor),
            );
        }
        if self.classic_protection > 100 {
            return err(
                "classic_protection",
                format!("expected a percentage from 0 to 100, found {}", self.classic_protection),
            );
        }
        for (key, list) in [("l4s_dscp", &self.l4s_dscp), ("llll_dscp", &self.llll_dscp)] {
            if let Some(d) = list.iter().find(|d| **d > 63) {
                return err(key, format!("expected DSCP values from 0 to 63, found {d}"));
            }
        }
        if let Some(qp) = &self.queue_protection {
            qp.validate()?;
            if qp.critical_ql.is_none() && self.step_thresh_packets.is_some() && self.marking == Marking::Step {
                return err(
                    "queue_protection.critical_ql",
                    "a step in packets has no delay threshold to default to: set critical_ql, such as \"1ms\"",
                );
            }
        }
        Ok(())
    }
}

// ------------------------------------------------------------------------------------------
// Baselines
// ------------------------------------------------------------------------------------------

/// Tail-drop FIFO.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FifoConfig {
    /// Packets (drop on arrival when `len >= limit`).
    pub limit: u32,
    /// Bytes (drop on arrival when `bytes + len > limit_bytes`).
    pub limit_bytes: Option<u64>,
    /// Drop on arrival when the head packet has already waited `>= limit_time`.
    pub limit_time: Option<Dur>,
}

impl Default for FifoConfig {
    fn default() -> Self {
        FifoConfig {
            limit: 1000,
            limit_bytes: None,
            limit_time: None,
        }
    }
}

impl FifoConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.limit == 0 {
            return err("limit", "expected at least 1 packet");
        }
        if self.limit_bytes == Some(0) {
            return err("limit_bytes", "expected at least 1 byte");
        }
        if let Some(t) = self.limit_time {
            positive_dur("limit_time", t)?;
        }
        Ok(())
    }
}

/// An L4S marker on one FIFO (see [`crate::l4s_marker`]): the buffer limits of a
/// [`FifoConfig`], and a step (`threshold`) or a ramp (`min_th`, `range`) on sojourn time
/// for ECT(1) packets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct L4sMarkerConfig {
    pub limit: u32,
    pub limit_bytes: Option<u64>,
    pub limit_time: Option<Dur>,
    pub marking: Marking,
    /// Step: mark ECT(1) packets whose sojourn is above this.
    pub threshold: Option<Dur>,
    /// Ramp: marking probability 0 at `min_th`, 1 at `min_th + range`.
    pub min_th: Option<Dur>,
    pub range: Option<Dur>,
}

impl Default for L4sMarkerConfig {
    fn default() -> Self {
        L4sMarkerConfig {
            limit: 1000,
            limit_bytes: None,
            limit_time: None,
            marking: Marking::Step,
            threshold: None,
            min_th: None,
            range: None,
        }
    }
}

impl L4sMarkerConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        FifoConfig {
            limit: self.limit,
            limit_bytes: self.limit_bytes,
            limit_time: self.limit_time,
        }
        .validate()?;
        match self.marking {
            Marking::Step => {
                let Some(t) = self.threshold else {
                    return err(
                        "threshold",
                        "a step marker needs its threshold, such as threshold = \"5ms\" (a RAN marker has no standard value)",
                    );
                };
                positive_dur("threshold", t)?;
                for (k, v) in [("min_th", self.min_th), ("range", self.range)] {
                    if v.is_some() {
                        return err(k, "belongs to marking = \"ramp\"; a step takes `threshold`");
                    }
                }
            }
            Marking::Ramp => {
                if self.threshold.is_some() {
                    return err(
                        "threshold",
                        "belongs to marking = \"step\"; a ramp takes `min_th` and `range`",
                    );
                }
                let (Some(_), Some(r)) = (self.min_th, self.range) else {
                    return err(
                        if self.min_th.is_none() { "min_th" } else { "range" },
                        "a ramp needs `min_th` and `range`, such as min_th = \"2ms\", range = \"3ms\"",
                    );
                };
                positive_dur("range", r)?;
            }
        }
        Ok(())
    }
}

/// PIE (RFC 8033, Linux `sch_pie` defaults, `dq_rate_estimator` off).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PieConfig {
    pub target: Dur,
    pub tupdate: Dur,
    /// Hz (RFC 8033: 0.125).
    pub alpha: f64,
    /// Hz (RFC 8033: 1.25).
    pub beta: f64,
    pub max_burst: Dur,
    /// Packets.
    pub limit: u32,
    pub ecn: bool,
    pub bytemode: bool,
    /// Frame MTU (2-MTU floor, byte mode).
    pub mtu: u32,
}

impl Default for PieConfig {
    fn default() -> Self {
        PieConfig {
            target: Dur::from_millis(15),
            tupdate: Dur::from_millis(15),
            alpha: 0.125,
            beta: 1.25,
            max_burst: Dur::from_millis(150),
            limit: 1000,
            ecn: false,
            bytemode: false,
            mtu: FRAME_MTU,
        }
    }
}

impl PieConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        positive_dur("target", self.target)?;
        update_period("tupdate", self.tupdate)?;
        positive_f64("alpha", self.alpha)?;
        positive_f64("beta", self.beta)?;
        if self.alpha > 32.0 {
            return err("alpha", "expected at most 32 Hz");
        }
        if self.beta > 32.0 {
            return err("beta", "expected at most 32 Hz");
        }
        if self.limit == 0 {
            return err("limit", "expected at least 1 packet");
        }
        frame_mtu(self.mtu)?;
        Ok(())
    }
}

/// CoDel (RFC 8289).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CodelConfig {
    pub target: Dur,
    pub interval: Dur,
    /// Packets.
    pub limit: u32,
    pub ecn: bool,
    /// Frame MTU: no drop while at most one MTU is queued (RFC 8289 §5.4 `maxpacket`).
    pub mtu: u32,
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig {
            target: Dur::from_millis(5),
            interval: Dur::from_millis(100),
            limit: 1000,
            ecn: false,
            mtu: FRAME_MTU,
        }
    }
}

impl CodelConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        positive_dur("target", self.target)?;
        positive_dur("interval", self.interval)?;
        if self.target > self.interval {
            return err(
                "target",
                format!("expected a target no larger than the interval ({})", self.interval),
            );
        }
        if self.limit == 0 {
            return err("limit", "expected at least 1 packet");
        }
        frame_mtu(self.mtu)
    }
}

/// Linux `FQ_CODEL_QUANTUM_MAX` (`include/uapi/linux/pkt_sched.h`).
const FQ_CODEL_QUANTUM_MAX: u32 = 1 << 20;

/// FQ-CoDel (RFC 8290, Linux `sch_fq_codel` defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FqCodelConfig {
    pub target: Dur,
    pub interval: Dur,
    /// Packets in all flow queues together.
    pub limit: u32,
    /// Number of flow queues.
    pub flows: u32,
    /// DRR quantum in bytes.
    pub quantum: u32,
    pub ecn: bool,
    /// Mark ECT packets whose sojourn exceeds this (Linux `ce_threshold`).
    pub ce_threshold: Option<Dur>,
    /// Bytes of [`QueuePacket::mem_size`] (Linux default 32 MB).
    pub memory_limit: u64,
    pub mtu: u32,
}

impl Default for FqCodelConfig {
    fn default() -> Self {
        FqCodelConfig {
            target: Dur::from_millis(5),
            interval: Dur::from_millis(100),
            limit: 10_240,
            flows: 1024,
            quantum: FRAME_MTU,
            ecn: true,
            ce_threshold: None,
            memory_limit: 32 << 20,
            mtu: FRAME_MTU,
        }
    }
}

impl FqCodelConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        positive_dur("target", self.target)?;
        positive_dur("interval", self.interval)?;
        if self.target > self.interval {
            return err(
                "target",
                format!("expected a target no larger than the interval ({})", self.interval),
            );
        }
        if self.limit == 0 {
            return err("limit", "expected at least 1 packet");
        }
        if self.flows == 0 || self.flows > 65_536 {
            return err(
                "flows",
                format!("expected from 1 to 65536 flow queues, found {}", self.flows),
            );
        }
        // Linux `fq_codel_change` (since 5.14): a quantum below 256 is raised to 256, one
        // above `FQ_CODEL_QUANTUM_MAX` (1 MiB) refused.
        if !(256..=FQ_CODEL_QUANTUM_MAX).contains(&self.quantum) {
            return err(
                "quantum",
                format!(
                    "expected a quantum from 256 to {FQ_CODEL_QUANTUM_MAX} bytes, such as 1514 (Linux raises a \
                     smaller one to 256 and refuses a larger one), found {}",
                    self.quantum
                ),
            );
        }
        if self.memory_limit == 0 {
            return err("memory_limit", "expected at least 1 byte");
        }
        frame_mtu(self.mtu)
    }
}

/// A single-queue classic-ECN AQM (PI² on sojourn): the RFC 9330 §4.3 / RFC 9331 §C.1 case of
/// a bottleneck that treats ECT(1) like ECT(0).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClassicEcnConfig {
    pub target: Dur,
    pub tupdate: Dur,
    /// Hz.
    pub alpha: f64,
    /// Hz.
    pub beta: f64,
    /// Packets.
    pub limit: u32,
    pub ecn: bool,
    pub mtu: u32,
}

impl Default for ClassicEcnConfig {
    fn default() -> Self {
        ClassicEcnConfig {
            target: Dur::from_millis(15),
            tupdate: Dur::from_millis(16),
            alpha: 0.16,
            beta: 3.2,
            limit: 10_000,
            ecn: true,
            mtu: FRAME_MTU,
        }
    }
}

impl ClassicEcnConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        positive_dur("target", self.target)?;
        update_period("tupdate", self.tupdate)?;
        positive_f64("alpha", self.alpha)?;
        positive_f64("beta", self.beta)?;
        if self.limit == 0 {
            return err("limit", "expected at least 1 packet");
        }
        frame_mtu(self.mtu)?;
        Ok(())
    }
}

// ------------------------------------------------------------------------------------------
// The discipline chosen by a scenario
// ------------------------------------------------------------------------------------------

/// The kinds a scenario may name, in the order of [`AqmConfig`]'s variants.
pub const KINDS: &[&str] = &[
    "fifo",
    "dualpi2",
    "pie",
    "codel",
    "fq-codel",
    "classic-ecn",
    "l4s-marker",
    "docsis-dualq",
];

/// One discipline and its parameters.
///
/// Also (de)serializable as one table with a `kind` key (`{ kind = "dualpi2", target = "15ms" }`),
/// for callers that prefer that to choosing the struct themselves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum AqmConfig {
    #[serde(rename = "fifo")]
    Fifo(FifoConfig),
    #[serde(rename = "dualpi2")]
    DualPi2(DualPi2Config),
    #[serde(rename = "pie")]
    Pie(PieConfig),
    #[serde(rename = "codel")]
    Codel(CodelConfig),
    #[serde(rename = "fq-codel")]
    FqCodel(FqCodelConfig),
    #[serde(rename = "classic-ecn")]
    ClassicEcn(ClassicEcnConfig),
    #[serde(rename = "l4s-marker")]
    L4sMarker(L4sMarkerConfig),
    #[serde(rename = "docsis-dualq")]
    DocsisDualq(Box<DocsisDualqConfig>),
}

impl AqmConfig {
    /// The period of the discipline's own update timer, which runs whatever the traffic
    /// (the PI controllers' `tupdate`); `None` for disciplines driven by packets only.
    pub fn update_interval(&self) -> Option<Dur> {
        match self {
            AqmConfig::DualPi2(c) => Some(c.tupdate),
            AqmConfig::Pie(c) => Some(c.tupdate),
            AqmConfig::ClassicEcn(c) => Some(c.tupdate),
            AqmConfig::DocsisDualq(c) => Some(c.tupdate),
            AqmConfig::Fifo(_) | AqmConfig::Codel(_) | AqmConfig::FqCodel(_) | AqmConfig::L4sMarker(_) => None,
        }
    }

    /// The scenario-file name of this kind (one of [`KINDS`]).
    pub fn kind(&self) -> &'static str {
        match self {
            AqmConfig::Fifo(_) => "fifo",
            AqmConfig::DualPi2(_) => "dualpi2",
            AqmConfig::Pie(_) => "pie",
            AqmConfig::Codel(_) => "codel",
            AqmConfig::FqCodel(_) => "fq-codel",
            AqmConfig::ClassicEcn(_) => "classic-ecn",
            AqmConfig::L4sMarker(_) => "l4s-marker",
            AqmConfig::DocsisDualq(_) => "docsis-dualq",
        }
    }

    /// The default configuration of a kind, `None` for an unknown name.
    pub fn default_for_kind(kind: &str) -> Option<AqmConfig> {
        Some(match kind {
            "fifo" => AqmConfig::Fifo(FifoConfig::default()),
            "dualpi2" => AqmConfig::DualPi2(DualPi2Config::default()),
            "pie" => AqmConfig::Pie(PieConfig::default()),
            "codel" => AqmConfig::Codel(CodelConfig::default()),
            "fq-codel" => AqmConfig::FqCodel(FqCodelConfig::default()),
            "classic-ecn" => AqmConfig::ClassicEcn(ClassicEcnConfig::default()),
            "l4s-marker" => AqmConfig::L4sMarker(L4sMarkerConfig::default()),
            "docsis-dualq" => AqmConfig::DocsisDualq(Box::default()),
            _ => return None,
        })
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        match self {
            AqmConfig::Fifo(c) => c.validate(),
            AqmConfig::DualPi2(c) => c.validate(),
            AqmConfig::Pie(c) => c.validate(),
            AqmConfig::Codel(c) => c.validate(),
            AqmConfig::FqCodel(c) => c.validate(),
            AqmConfig::ClassicEcn(c) => c.validate(),
            AqmConfig::L4sMarker(c) => c.validate(),
            AqmConfig::DocsisDualq(c) => c.validate(),
        }
    }
}

/// Build the discipline. Does not validate (call [`AqmConfig::validate`] first, or use
/// [`try_build`]); an invalid configuration is clamped, never a panic.
pub fn build<P: QueuePacket + 'static>(cfg: &AqmConfig, rng: Rng) -> Box<dyn Qdisc<P>> {
    match cfg {
        AqmConfig::Fifo(c) => Box::new(crate::fifo::Fifo::new(c)),
        AqmConfig::DualPi2(c) => Box::new(crate::dualpi2::DualPi2::new(c, rng)),
        AqmConfig::Pie(c) => Box::new(crate::pie::Pie::new(c, rng)),
        AqmConfig::Codel(c) => Box::new(crate::codel::Codel::new(c)),
        AqmConfig::FqCodel(c) => Box::new(crate::fq_codel::FqCodel::new(c)),
        AqmConfig::ClassicEcn(c) => Box::new(crate::classic_ecn::ClassicEcn::new(c, rng)),
        AqmConfig::L4sMarker(c) => Box::new(crate::l4s_marker::L4sMarker::new(c, rng)),
        AqmConfig::DocsisDualq(c) => Box::new(crate::docsis_dualq::DocsisDualq::new(c, rng)),
    }
}

/// [`AqmConfig::validate`] then [`build`].
pub fn try_build<P: QueuePacket + 'static>(cfg: &AqmConfig, rng: Rng) -> Result<Box<dyn Qdisc<P>>, ConfigError> {
    cfg.validate()?;
    Ok(build(cfg, rng))
}
