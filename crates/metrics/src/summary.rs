//! The `summary.json` schema. Documented in `docs/results.md`; bump
//! [`SCHEMA_VERSION`] on any incompatible change.
//!
//! Only deterministic content goes here (no wall-clock times, no host names), so that the
//! same scenario and seed give a byte-identical file (DESIGN.md principle 3).

use crate::hist::Percentiles;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the `summary.json` layout.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Summary {
    pub schema_version: u32,
    pub tool: ToolInfo,
    pub scenario: ScenarioInfo,
    pub flows: Vec<FlowSummary>,
    pub queues: Vec<QueueSummary>,
    /// Aggregates per traffic class ("L4S", "classic"): throughput and delay of all
    /// flows of that class merged.
    pub classes: Vec<ClassSummary>,
    /// Live runs only: how well the host kept the testbed's own timing (absent for the
    /// simulator, whose timing is exact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub testbed: Option<TestbedCheck>,
    /// False for a run stopped before its end (Ctrl-C): its figures cover the statistics
    /// window up to `reached_s`. Written only when false.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub complete: bool,
    /// Where a stopped run ended (s); absent for a complete run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reached_s: Option<f64>,
    /// The verdict on the run, as the terminal and `report.html` give it, for scripts
    /// (absent in summaries written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<VerdictSummary>,
    /// How evenly the capacity-seeking flows shared (see [`Fairness`]); absent with fewer
    /// than two such flows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairness: Option<Fairness>,
    /// What each Wi-Fi BSS did in the statistics window (absent without one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wifi: Vec<WifiSummary>,
}

/// A Wi-Fi BSS in the statistics window: per station and per EDCAF.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct WifiSummary {
    pub name: String,
    pub stations: Vec<WifiStationSummary>,
    pub categories: Vec<WifiCategorySummary>,
}

/// One station: its PHY, both directions of its traffic, and its time off the channel.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct WifiStationSummary {
    pub station: String,
    /// The PHY mode ("HE 80 MHz 2SS MCS 7 ...") and its data rate.
    pub phy: String,
    pub phy_rate_bps: u64,
    /// Frames from the access point to the station, and from the station.
    pub down: WifiDirectionSummary,
    pub up: WifiDirectionSummary,
    /// Time off the channel (scanning) and the dwells begun.
    pub off_channel_s: f64,
    pub dwells: u64,
    /// In a BSS of several channels (multi-link operation), the station's traffic on each
    /// of its links; absent in a BSS of one channel.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<WifiLinkSummary>,
}

/// One link of a station: its channel, PHY and the share of its frames it carried.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct WifiLinkSummary {
    /// The channel's name and band ("5 GHz").
    pub channel: String,
    pub band: String,
    pub phy: String,
    pub phy_rate_bps: u64,
    pub down: WifiLinkDirectionSummary,
    pub up: WifiLinkDirectionSummary,
}

/// One direction of a station's frames on one link.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct WifiLinkDirectionSummary {
    /// The share of the window the link's channel spent on these TXOPs (collisions
    /// included).
    pub airtime_share: f64,
    pub ppdus: u64,
    /// MPDUs carried (retransmissions included).
    pub mpdus: u64,
}

/// One direction of a station's frames.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct WifiDirectionSummary {
    /// The share of the window the channel spent on TXOPs of this direction (collisions
    /// included).
    pub airtime_share: f64,
    pub ppdus: u64,
    /// MPDUs per A-MPDU (retransmissions included); 0 without a PPDU.
    pub mpdus_per_ampdu: f64,
    /// MPDU retransmissions, and MPDUs dropped at the retry limit.
    pub retries: u64,
    pub retry_drops: u64,
    /// MAC access delay (a queue's head having something to send to its TXOP starting),
    /// ms; `null` without a TXOP.
    pub access_delay_p50_ms: Option<f64>,
    pub access_delay_p99_ms: Option<f64>,
    /// Its distribution's percentiles, ms (`distributions.csv` has the whole of it, kind
    /// `access_delay`, name `<bss>/<station>/<down|up>`); absent without a TXOP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_delay_ms: Option<crate::hist::Percentiles>,
}

/// One EDCAF: the access point's or a station's, for one access category.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct WifiCategorySummary {
    /// "AP" or the station's name.
    pub device: String,
    /// "BK", "BE", "VI" or "VO".
    pub category: String,
    pub txops: u64,
    /// TXOPs that collided with another device's, and internal collisions lost to a
    /// higher category of the same device.
    pub collisions: u64,
    pub internal_collisions: u64,
    /// The channel of this EDCAF, in a BSS of several channels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
}

impl WifiCategorySummary {
    /// One line of it: `AP BE on 6g: 757 TXOPs, 80 collided, 3 internal collisions` (the
    /// channel with several, internal collisions when there were some).
    pub fn describe(&self) -> String {
        let mut line = format!("{} {}", self.device, self.category);
        if let Some(ch) = &self.channel {
            line += &format!(" on {ch}");
        }
        line += &format!(": {} TXOPs, {} collided", self.txops, self.collisions);
        if self.internal_collisions > 0 {
            line += &format!(", {} internal collisions", self.internal_collisions);
        }
        line
    }
}

impl WifiSummary {
    /// Every EDCAF that won the channel, described, `; ` between them (empty if none did).
    pub fn edcaf_lines(&self) -> String {
        let busy: Vec<String> = self
            .categories
            .iter()
            .filter(|c| c.txops > 0)
            .map(WifiCategorySummary::describe)
            .collect();
        busy.join("; ")
    }
}

/// How evenly the capacity-seeking flows of a run shared: TCP and UDP Prague flows, bulk
/// transfers, and media flows whose mean encoder target stayed below 95 % of their maximum
/// bitrate (one at its maximum wants no more). Request–response, web, query and sync flows,
/// probes and constant-rate flows are demand-limited and not counted. A flow that stops
/// before the window ends (a `bytes` limit) counts with its throughput over the window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fairness {
    /// Flows counted.
    pub flows: u32,
    /// Their mean throughput, bit/s: each flow's `share_of_equal` is its throughput over this.
    pub equal_share_bps: f64,
    /// Jain's index over the counted flows' throughputs, (Σx)² / (n·Σx²): 1 when all are
    /// equal, 1/n when one takes everything.
    pub jain: f64,
    /// The same per traffic class ("L4S", "classic") with at least two counted flows.
    pub classes: BTreeMap<String, ClassFairness>,
}

/// [`Fairness`] within one traffic class.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassFairness {
    pub flows: u32,
    pub jain: f64,
}

/// Whether a flow counts in [`Fairness`].
pub fn seeks_capacity(f: &FlowSummary) -> bool {
    match f.kind.as_str() {
        "tcp" | "udp-prague" | "bulk" => true,
        "media" => f
            .media
            .as_ref()
            .is_none_or(|m| m.max_bitrate_bps <= 0.0 || m.target_bitrate_mean_bps < 0.95 * m.max_bitrate_bps),
        _ => false,
    }
}

/// Jain's fairness index of `x` (1 for an empty or all-zero list).
pub fn jain_index(x: &[f64]) -> f64 {
    let (sum, sq) = x.iter().fold((0.0, 0.0), |(s, q), v| (s + v, q + v * v));
    if x.is_empty() || sq <= 0.0 {
        1.0
    } else {
        sum * sum / (x.len() as f64 * sq)
    }
}

impl Fairness {
    /// The fairness of `flows`, and each counted flow's `share_of_equal` set; `None` (and
    /// no shares) with fewer than two counted flows.
    pub fn compute(flows: &mut [FlowSummary]) -> Option<Fairness> {
        let counted: Vec<usize> = (0..flows.len()).filter(|&i| seeks_capacity(&flows[i])).collect();
        if counted.len() < 2 {
            return None;
        }
        let thr: Vec<f64> = counted.iter().map(|&i| flows[i].throughput_bps).collect();
        let equal = thr.iter().sum::<f64>() / thr.len() as f64;
        for &i in &counted {
            flows[i].share_of_equal = Some(if equal > 0.0 {
                crate::hist::round6(flows[i].throughput_bps / equal)
            } else {
                1.0
            });
        }
        let mut by_class: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for &i in &counted {
            by_class
                .entry(flows[i].class.clone())
                .or_default()
                .push(flows[i].throughput_bps);
        }
        Some(Fairness {
            flows: counted.len() as u32,
            equal_share_bps: crate::hist::round6(equal),
            jain: crate::hist::round6(jain_index(&thr)),
            classes: by_class
                .into_iter()
                .filter(|(_, v)| v.len() >= 2)
                .map(|(c, v)| {
                    (
                        c,
                        ClassFairness {
                            flows: v.len() as u32,
                            jain: crate::hist::round6(jain_index(&v)),
                        },
                    )
                })
                .collect(),
        })
    }
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// The verdict of a run: its level, its headline and each finding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VerdictSummary {
    /// "good", "warn" or "bad".
    pub level: String,
    pub headline: String,
    pub findings: Vec<Finding>,
}

/// One finding of a verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable, for scripts (e.g. "bleached-ecn", "starvation", "testbed-timing").
    pub code: String,
    /// "note", "warn" or "bad".
    pub severity: String,
    pub text: String,
}

/// The self-check of a live run: how late the testbed's own elements (the forwarders'
/// pacers and the delay lines) handed packets on after they were due, and the CPU time
/// the hypervisor took from this machine ("steal") during the run. Lateness adds to every
/// delay the run measures; when more than [`TestbedCheck::DISRUPTED_SHARE`] of the
/// packets left over 1 ms late, the tails (p99 and beyond) describe the host as much as
/// the network, and `disrupted` is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TestbedCheck {
    /// Packet hand-offs the elements timed (a packet crossing three elements counts three
    /// times).
    pub packets: u64,
    /// Of these, left more than 1 ms late.
    pub late_over_1ms: u64,
    pub late_share: f64,
    /// The worst element direction's p99 and p99.9 lateness, and the largest seen (ms).
    pub worst_p99_ms: f64,
    pub worst_p999_ms: f64,
    pub max_ms: f64,
    /// Share of this machine's CPU time stolen by the hypervisor over the run
    /// (`/proc/stat`), if the kernel reports it.
    pub cpu_steal: Option<f64>,
    pub disrupted: bool,
}

impl TestbedCheck {
    /// More than one packet in 1000 over 1 ms late moves a p99.9 by the lateness.
    pub const DISRUPTED_SHARE: f64 = 0.001;
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ScenarioInfo {
    pub name: String,
    pub description: String,
    /// Path of the scenario file as given on the command line.
    pub file: String,
    pub backend: String,
    pub seed: u64,
    pub duration_s: f64,
    /// Statistics cover [warmup_s, duration_s].
    pub warmup_s: f64,
    pub stats_window_s: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FlowSummary {
    pub name: String,
    /// "tcp", "udp-prague" or "probe".
    pub kind: String,
    /// Congestion controller ("prague", "cubic", ... ; "udp-prague"; "none" for probes).
    pub cc: String,
    /// ECN codepoint the sender put on its data packets at the start ("ect1", "ect0", "not-ect").
    pub ecn: String,
    /// ECN feedback negotiated ("accecn", "classic", "none", "udp-prague").
    pub ecn_feedback: String,
    /// "L4S" when the data is sent ECT(1), otherwise "classic".
    pub class: String,
    pub src: String,
    pub dst: String,
    /// Propagation RTT of the flow's path (no queueing, no serialisation), ms.
    pub base_rtt_ms: f64,
    /// Bits per second of the flow's data packets arriving at the receiver (frame bytes)
    /// during the statistics window.
    pub throughput_bps: f64,
    /// Application payload delivered in order to the receiver during the window, bit/s.
    pub goodput_bps: f64,
    /// One-way delay of data packets (sender's transmit to receiver's arrival), ms.
    pub owd_ms: Percentiles,
    /// RTT samples measured by the sender, ms; `null` for flows without feedback.
    pub rtt_ms: Option<Percentiles>,
    /// Data packets sent during the window (including retransmissions).
    pub sent_packets: u64,
    /// Data packets of this flow dropped in the network during the window.
    pub lost_packets: u64,
    /// `lost_packets / sent_packets`.
    pub loss_fraction: f64,
    /// The flow's latency budget, if it declared one (ms).
    #[serde(default)]
    pub latency_budget_ms: Option<f64>,
    /// Data packets that arrived with a one-way delay above the budget.
    #[serde(default)]
    pub late_packets: u64,
    /// `(lost_packets + late_packets) / sent_packets`: for a real-time application a late
    /// packet is as good as lost. Equals `loss_fraction` without a budget.
    #[serde(default)]
    pub effective_loss_fraction: f64,
    pub retransmits: u64,
    pub received_packets: u64,
    pub ce_packets: u64,
    /// Fraction of the flow's data packets that arrived CE-marked.
    pub ce_fraction: f64,
    /// Congestion reductions the sender made during the window.
    pub congestion_events: u64,
    /// The sender's ECN validation at the end of the run: "not-applicable", "testing",
    /// "capable" or "failed" (RFC 9000 §13.4.2-style checks; AccECN for TCP, error_L4S
    /// for udp_prague).
    #[serde(default)]
    pub ecn_validation: String,
    /// When validation failed (s from the start of the run), and why ("bleached",
    /// "remarked", "all-ce", "impossible-feedback", "not-ect1").
    #[serde(default)]
    pub ecn_failed_at_s: Option<f64>,
    #[serde(default)]
    pub ecn_failure: Option<String>,
    /// Per-frame metrics of a real-time media flow (`type = "media"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<MediaSummary>,
    /// Completion times of an application flow (`bulk`, `sync`, `request-response`,
    /// `web`, `query`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<AppSummary>,
    /// The flow's throughput over the mean of the capacity-seeking flows' (see
    /// [`Fairness`]); absent for flows not counted there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_of_equal: Option<f64>,
}

/// What a real-time media flow's users judge it by, over the statistics window.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MediaSummary {
    /// Encoder profile ("cloud-gaming", "xr-h264", "xr-h265", "video-call").
    pub profile: String,
    /// Rate controller ("scream", "rt-prague"), with L4S on or off.
    pub controller: String,
    pub l4s: bool,
    /// Configured frame rate.
    pub fps: f64,
    /// Frames the encoder produced in the window.
    pub frames_sent: u64,
    /// Frames whose every packet arrived.
    pub frames_complete: u64,
    /// Complete frames that arrived after their deadline.
    pub frames_late: u64,
    /// Frames with at least one packet missing.
    pub frames_incomplete: u64,
    /// `(frames_late + frames_incomplete) / frames_sent`.
    pub bad_frame_fraction: f64,
    /// First packet sent to last packet received, complete frames, ms.
    pub frame_delay_ms: Percentiles,
    /// A frame is late when it completes more than `deadline_ms` after its first packet
    /// was sent plus the path's one-way propagation delay.
    pub deadline_ms: f64,
    /// Time with no new complete frame for longer than `stall_gap_ms`.
    pub stall_time_s: f64,
    pub stall_fraction: f64,
    pub stall_gap_ms: f64,
    /// Complete frames per second received.
    pub received_fps: f64,
    /// Encoder target bitrate over the window (time-weighted mean, min, max), bit/s.
    pub target_bitrate_mean_bps: f64,
    pub target_bitrate_min_bps: f64,
    pub target_bitrate_max_bps: f64,
    /// Sender-side queue discards (SCReAM RTP queue over 100 ms) and skipped frames.
    pub frames_discarded: u64,
    /// Feedback reports the sender received, and of those the malformed ones it ignored.
    pub feedback_reports: u64,
    pub feedback_malformed: u64,
    /// The encoder's configured bitrate range, bit/s (0 in summaries written before they
    /// were recorded).
    #[serde(default)]
    pub min_bitrate_bps: f64,
    #[serde(default)]
    pub max_bitrate_bps: f64,
    /// Fraction of the window's target samples (every 10 ms) at the encoder's minimum
    /// bitrate: the rate controller could not get more than its floor.
    #[serde(default)]
    pub time_at_min_fraction: f64,
}

/// Completion times of an application flow, per kind of completion.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AppSummary {
    /// Application kind ("bulk", "sync", "request-response", "web", "query").
    pub app: String,
    /// By completion kind ("transfer", "chunk", "object", "page", "query"), those that
    /// started and completed in the window.
    pub completions: BTreeMap<String, CompletionSummary>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CompletionSummary {
    pub count: u64,
    /// Start (request sent, transfer begun) to last byte delivered, ms.
    pub time_ms: Percentiles,
    /// Bytes of the completed units.
    pub bytes: u64,
    /// Mean over completions of bytes·8/time, bit/s.
    pub goodput_bps: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QueueSummary {
    /// Link name, e.g. "bottleneck" or "r1->r2".
    pub name: String,
    pub from: String,
    pub to: String,
    /// Queue discipline kind ("dualpi2", "fifo", ...).
    pub aqm: String,
    pub rate_bps: u64,
    /// Fraction of the window the link spent transmitting.
    pub utilization: f64,
    /// Sojourn time of every packet dequeued during the window, all sub-queues merged, ms.
    pub sojourn_ms: Percentiles,
    pub enqueued_packets: u64,
    pub dequeued_packets: u64,
    /// CE marks set by the AQM.
    pub marks: u64,
    /// All drops (AQM + buffer limit).
    pub drops: u64,
    pub overlimit_drops: u64,
    /// Mean of the AQM's congestion probability sampled every millisecond (DualPI2 p',
    /// PIE p), if the AQM has one.
    pub mean_probability: Option<f64>,
    /// Per sub-queue ("L" and "C" for DualPI2; "single" otherwise).
    pub subqueues: BTreeMap<String, SubQueueSummary>,
    /// The flows whose data packets the routes send through this queue, in scenario order
    /// (their feedback goes the other way). Absent for a queue that is one of several of its
    /// link (the routes do not say which of them a packet takes), and in summaries written
    /// before it was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_flows: Option<Vec<String>>,
    /// The radio side of a cellular link, or of a link with HARQ, over the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub radio: Option<RadioSummary>,
    /// The capacity over the window, for a link whose capacity changes (a rate schedule, a
    /// trace, a capacity process): `rate_bps` is then only its value at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacitySummary>,
    /// What Queue Protection (RFC 9957) did, where the queue has it on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_protection: Option<QueueProtectionSummary>,
}

/// Queue Protection of a low-latency queue (RFC 9957) over the whole run, warm-up
/// included: a sanction is an event worth seeing whenever it happens.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct QueueProtectionSummary {
    /// CRITICALqL: the L-queue delay above which it sanctions.
    pub critical_ql_ms: f64,
    /// Packets it checked (every packet classified to the L-queue).
    pub checked_packets: u64,
    /// Packets it redirected to the Classic queue, and their bytes.
    pub sanctioned_packets: u64,
    pub sanctioned_bytes: u64,
    /// Flows that found no free bucket and shared the default bucket with another.
    pub default_bucket_collisions: u64,
    /// Every flow sanctioned at least once, the most sanctioned first.
    pub flows: Vec<SanctionedFlow>,
}

/// One flow Queue Protection sanctioned.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct SanctionedFlow {
    /// The scenario flow's name, with " (feedback)" for its reverse direction; in the live
    /// testbed, where a queue sees a 5-tuple hash, the hash in hex where no flow matches.
    pub flow: String,
    pub packets: u64,
    pub bytes: u64,
    /// First and last sanction, seconds from the start of the run.
    pub first_s: f64,
    pub last_s: f64,
    /// The largest queuing score and L-queue delay at a sanction.
    pub max_score_ms: f64,
    pub max_qdelay_ms: f64,
}

/// A link's capacity over the statistics window, sampled every 10 ms (bit/s).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct CapacitySummary {
    pub mean_bps: f64,
    pub min_bps: f64,
    pub max_bps: f64,
}

/// What a cellular link (or a link with HARQ) did in the statistics window.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RadioSummary {
    /// "downlink", "uplink", "wire" for a wired link with HARQ, "upstream" for a DOCSIS
    /// upstream (its blocks are grants: `blocks` counts them, `block_fill` is the share of
    /// granted bytes the modem used, and `uplink` its requests, grants and grant delays), or
    /// "downstream" for a DOCSIS downstream (its blocks are the OFDM symbols that carried
    /// the modem's data, `block_fill` the share of their capacity it used).
    pub direction: String,
    /// Transport blocks sent (cellular links), and the share of their bytes that carried
    /// data (the rest was padding: the buffer ran dry within the block).
    pub blocks: u64,
    pub block_fill: f64,
    /// A DOCSIS direction's shaping: the share of the MAPs (upstream) or OFDM symbols
    /// (downstream) with data waiting in which the service flow's token buckets (maximum
    /// sustained rate and burst, peak rate) held some of it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shaper_limited_share: Option<f64>,
    /// HARQ retransmissions of blocks, and per block sent (or per packet delivered, for a
    /// wired link).
    pub harq_retransmissions: u64,
    /// The uplink's request–grant loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uplink: Option<UplinkSummary>,
}

/// An uplink's scheduling in the statistics window.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct UplinkSummary {
    pub scheduling_requests: u64,
    /// Grants the base station made (dynamic, and for scheduling requests), and those
    /// that found the UE with nothing to send.
    pub grants: u64,
    pub grants_unused: u64,
    pub configured_grants_used: u64,
    /// DOCSIS Proactive Grant Service: grants made without requests (counted in `grants`
    /// too), and those that found the Low-Latency flow with nothing to send.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pgs_grants: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pgs_grants_unused: u64,
    /// Grant delays: from data reaching an idle UE to the start of the slot granted for
    /// it; percentiles are the upper edges of 1 ms buckets (`null` when there was none).
    pub grant_delays: u64,
    pub grant_delay_mean_ms: Option<f64>,
    pub grant_delay_p50_ms: Option<f64>,
    pub grant_delay_p99_ms: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SubQueueSummary {
    pub sojourn_ms: Percentiles,
    pub enqueued_packets: u64,
    pub dequeued_packets: u64,
    pub dequeued_bytes: u64,
    pub marks: u64,
    pub drops: u64,
    pub overlimit_drops: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClassSummary {
    pub class: String,
    pub flows: u32,
    pub throughput_bps: f64,
    pub owd_ms: Percentiles,
    /// RTT samples of the class's senders merged (empty for probe-only classes).
    #[serde(default)]
    pub rtt_ms: Percentiles,
}

/// Per-class accumulator of a backend while it builds a summary: flows, summed
/// throughput, merged OWD and RTT histograms.
pub type ClassTotals = BTreeMap<String, (u32, f64, crate::LatencyHist, crate::LatencyHist)>;

impl Summary {
    /// The statistics window the figures cover (s): from the warm-up's end to the run's,
    /// or, for a run stopped early, to the time it reached (from 0 if that was still in the
    /// warm-up, whose meters then counted from the start).
    pub fn stats_window(&self) -> (f64, f64) {
        let sc = &self.scenario;
        match self.reached_s.filter(|_| !self.complete) {
            None => (sc.warmup_s, sc.duration_s),
            Some(r) if r < sc.warmup_s => (0.0, r),
            Some(r) => (sc.warmup_s, r),
        }
    }

    /// Assemble a summary (either backend) from its parts; the classes come from the
    /// per-class totals.
    pub fn assemble(
        scenario: ScenarioInfo,
        mut flows: Vec<FlowSummary>,
        queues: Vec<QueueSummary>,
        classes: ClassTotals,
    ) -> Summary {
        let classes = classes
            .into_iter()
            .map(|(class, (n, thr, h, rtt))| ClassSummary {
                class,
                flows: n,
                throughput_bps: crate::hist::round6(thr),
                owd_ms: h.percentiles_ms(),
                rtt_ms: rtt.percentiles_ms(),
            })
            .collect();
        let fairness = Fairness::compute(&mut flows);
        Summary {
            schema_version: SCHEMA_VERSION,
            tool: ToolInfo {
                name: "l4s-lab".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            scenario,
            flows,
            queues,
            classes,
            testbed: None,
            complete: true,
            reached_s: None,
            verdict: None,
            fairness,
            wifi: Vec::new(),
        }
    }

    /// Read a `summary.json`, refusing other schema versions with a clear message.
    pub fn from_json(bytes: &[u8]) -> Result<Summary, String> {
        let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| format!("not valid JSON: {e}"))?;
        match v.get("schema_version").and_then(|x| x.as_u64()) {
            Some(n) if n == SCHEMA_VERSION as u64 => {}
            Some(n) => {
                return Err(format!(
                    "schema_version {n} is not supported (this build reads {SCHEMA_VERSION})"
                ))
            }
            None => return Err("no schema_version: not an l4s-lab summary.json".into()),
        }
        serde_json::from_value(v).map_err(|e| format!("does not match schema {SCHEMA_VERSION}: {e}"))
    }
}

/// Serde: leave a zero counter out.
fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn refuses_other_versions_and_garbage() {
        assert!(Summary::from_json(b"{").unwrap_err().contains("not valid JSON"));
        assert!(Summary::from_json(b"{}").unwrap_err().contains("no schema_version"));
        assert!(Summary::from_json(b"{\"schema_version\": 99}")
            .unwrap_err()
            .contains("99 is not supported"));
        assert!(Summary::from_json(b"{\"schema_version\": 1}")
            .unwrap_err()
            .contains("does not match"));
    }
}
