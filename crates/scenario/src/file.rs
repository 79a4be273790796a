//! The scenario file as written (serde structs, every table `deny_unknown_fields`).
//! `load.rs` (through [`crate::load_str`]) turns it into the validated [`crate::Scenario`].

use l4s_core::{Dur, Rate};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    pub scenario: ScenarioTable,
    pub topology: TopologyTable,
    #[serde(default)]
    pub flows: Vec<FlowTable>,
    /// Read by [`crate::variants`]; a single scenario ignores it.
    #[serde(default)]
    pub variants: Option<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioTable {
    pub name: Option<String>,
    #[serde(default)]
    pub description: String,
    pub duration: Dur,
    #[serde(default)]
    pub warmup: Dur,
    #[serde(default = "one")]
    pub seed: u64,
}

fn one() -> u64 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyTable {
    /// "dumbbell" or "custom".
    #[serde(rename = "type")]
    pub kind: String,
    // --- dumbbell ---
    /// Bottleneck rate.
    pub rate: Option<Rate>,
    /// One-way propagation delay of the bottleneck link itself.
    pub delay: Option<Dur>,
    /// Default base RTT of each flow.
    pub rtt: Option<Dur>,
    /// Rate of each sender's access link (default: unlimited, i.e. a pure delay line).
    pub access_rate: Option<Rate>,
    /// Bottleneck queue discipline (a table with `kind`).
    pub aqm: Option<toml::Table>,
    /// Reverse-direction (receiver to sender) rate; default the bottleneck rate.
    pub reverse_rate: Option<Rate>,
    /// Reverse-direction queue discipline; default a 1000-packet FIFO.
    pub reverse_aqm: Option<toml::Table>,
    /// A middlebox on the bottleneck's forward direction that rewrites ECN.
    pub fault: Option<FaultTable>,
    /// Changes of the bottleneck's forward rate over time.
    pub rate_schedule: Option<RateScheduleTable>,
    /// Loss on the bottleneck's forward wire.
    pub loss: Option<LossTable>,
    /// A Mahimahi capacity trace for the bottleneck's forward direction, instead of `rate`
    /// (a path, relative to the scenario file).
    pub trace: Option<String>,
    /// A capacity trace for the reverse direction, instead of `reverse_rate`.
    pub reverse_trace: Option<String>,
    /// A capacity process for the bottleneck's forward direction, instead of `rate`.
    pub capacity: Option<CapacityTable>,
    /// HARQ on the bottleneck's forward direction.
    pub harq: Option<HarqTable>,
    /// The bottleneck as a cellular link (forward = downlink, reverse = uplink).
    pub ran: Option<RanTable>,
    // --- custom ---
    #[serde(default)]
    pub nodes: Vec<NodeTable>,
    #[serde(default)]
    pub links: Vec<LinkTable>,
    /// Wi-Fi BSSs: an access point node and station nodes sharing one channel.
    #[serde(default)]
    pub wifi: Vec<WifiTable>,
    /// Cells: a base station node and UE nodes sharing its slots.
    #[serde(default)]
    pub cell: Vec<CellTable>,
}

/// `[[topology.cell]]`: a cell of several UEs (see `l4s_link::cell`), linking the base
/// station's node with each UE's node, all sharing the base station's slots.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellTable {
    pub name: Option<String>,
    /// The base station's node.
    pub base_station: String,
    pub ues: Vec<UeTable>,
    /// "pf" (proportional fair, the default) or "rr" (round robin).
    pub scheduler: Option<String>,
    /// The proportional-fair scheduler's averaging window (default 100 ms).
    pub pf_window: Option<Dur>,
    /// One-way delay beyond the radio (each direction).
    pub delay: Option<Dur>,
    /// The queue discipline of each UE's downlink RLC buffer, at the base station.
    pub aqm: Option<toml::Table>,
    /// The queue discipline of each UE's uplink RLC buffer.
    pub ue_aqm: Option<toml::Table>,
    /// The radio configuration all the UEs share.
    pub ran: Option<RanTable>,
}

/// One UE of a `[[topology.cell]]`: its node and its capacity each way if it had the whole
/// cell (its channel), as on a cellular link.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UeTable {
    pub node: String,
    pub rate: Option<Rate>,
    pub trace: Option<String>,
    pub capacity: Option<CapacityTable>,
    pub rate_schedule: Option<RateScheduleTable>,
    pub reverse_rate: Option<Rate>,
    pub reverse_trace: Option<String>,
    /// A configured uplink grant every this period (a whole number of slots).
    pub configured_grant: Option<Dur>,
    /// Its first occasion this long after the first uplink slot (whole slots, default 0).
    pub configured_grant_offset: Option<Dur>,
    /// The share of the slot's resources the configured grant takes (default 1).
    pub configured_grant_share: Option<f64>,
}

/// `[[topology.wifi]]`: a Wi-Fi BSS (see `l4s_link::wifi::bss`), linking the access point's
/// node with each station's node over one shared channel.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WifiTable {
    pub name: Option<String>,
    /// The access point's node.
    pub ap: String,
    pub stations: Vec<StationTable>,
    /// The queue discipline of each of the AP's per-station, per-category queues.
    pub aqm: Option<toml::Table>,
    /// The queue discipline of each of a station's per-category queues.
    pub station_aqm: Option<toml::Table>,
    /// The AP's EDCA parameters: a preset name or a table (`preset` and per-category
    /// tables `bk`, `be`, `vi`, `vo`).
    pub edca: Option<toml::Value>,
    /// The stations' EDCA parameters.
    pub station_edca: Option<toml::Value>,
    /// Where the L4S class (ECT(1) and CE) goes: "BE" or "VI" (default: by DSCP like
    /// everything else).
    pub l4s_category: Option<String>,
    /// "round-robin" (default) or "airtime".
    pub scheduler: Option<String>,
    pub max_ampdu_bytes: Option<u64>,
    pub ba_window: Option<u16>,
    /// "dequeue" (default: the queue disciplines mark at late dequeue) or "pending-dequeue".
    pub marking: Option<String>,
    /// The BSS's channels (multi-link operation): `[{ name = "5g", band = "5" }, ...]`;
    /// one 5 GHz channel by default.
    pub channels: Option<Vec<ChannelTable>>,
}

/// One channel of a `[[topology.wifi]]` BSS.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelTable {
    pub name: String,
    /// "2.4", "5" or "6" (GHz).
    pub band: String,
}

/// One link of a multi-link station: its channel and its PHY there (absent keys take the
/// station's).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StationLinkTable {
    pub channel: String,
    pub bandwidth: Option<u16>,
    pub nss: Option<u8>,
    pub mcs: Option<u8>,
    pub signal: Option<f64>,
    pub guard_interval: Option<String>,
    pub frame_error_rate: Option<f64>,
}

/// One station of a `[[topology.wifi]]` BSS.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StationTable {
    pub node: String,
    /// "ac", "ax" (default) or "be".
    pub standard: Option<String>,
    /// MHz (default 80).
    pub bandwidth: Option<u16>,
    /// Spatial streams (default 2).
    pub nss: Option<u8>,
    /// The MCS, or a `signal` level (dBm) that picks one.
    pub mcs: Option<u8>,
    pub signal: Option<f64>,
    /// "0.8us" (default), "1.6us", "3.2us", or "0.4us" for VHT.
    pub guard_interval: Option<String>,
    /// The probability that an MPDU to or from the station is received in error.
    pub frame_error_rate: Option<f64>,
    /// `scan = { period = "10s", dwell = "100ms", channels = 1, home = "200ms", offset = "5s" }`.
    pub scan: Option<ScanTable>,
    /// The channel of a single-link station (default: the BSS's first).
    pub channel: Option<String>,
    /// The links of a multi-link station (802.11be), instead of `channel`.
    pub links: Option<Vec<StationLinkTable>>,
    /// TID-to-link mapping of a multi-link station: `{ BE = ["6g"], VI = ["5g", "6g"] }`
    /// (a category left out goes on every link).
    pub tid_to_link: Option<std::collections::BTreeMap<String, Vec<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanTable {
    pub period: Dur,
    pub dwell: Dur,
    pub channels: Option<u32>,
    pub home: Option<Dur>,
    pub offset: Option<Dur>,
}

/// One access category's EDCA parameters in an `edca` table; absent keys keep the preset's.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdcaAcTable {
    pub aifsn: Option<u8>,
    pub cw_min: Option<u16>,
    pub cw_max: Option<u16>,
    /// "0s" for one exchange per TXOP.
    pub txop: Option<Dur>,
    pub retry_limit: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeTable {
    pub name: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkTable {
    pub name: Option<String>,
    pub from: String,
    pub to: String,
    /// Rate; absent = unlimited (a pure delay line with no queue).
    pub rate: Option<Rate>,
    #[serde(default)]
    pub delay: Dur,
    pub aqm: Option<toml::Table>,
    /// Also create the reverse direction (default true).
    #[serde(default = "yes")]
    pub bidirectional: bool,
    pub reverse_rate: Option<Rate>,
    pub reverse_delay: Option<Dur>,
    pub reverse_aqm: Option<toml::Table>,
    /// A middlebox in the forward direction that rewrites ECN.
    pub fault: Option<FaultTable>,
    /// Changes of the forward rate over time.
    pub rate_schedule: Option<RateScheduleTable>,
    /// Loss on the forward wire.
    pub loss: Option<LossTable>,
    /// A Mahimahi capacity trace for the forward direction, instead of `rate` (a path,
    /// relative to the scenario file).
    pub trace: Option<String>,
    /// A capacity trace for the reverse direction, instead of `reverse_rate`.
    pub reverse_trace: Option<String>,
    /// A capacity process for the forward direction, instead of `rate`.
    pub capacity: Option<CapacityTable>,
    /// HARQ on the forward direction.
    pub harq: Option<HarqTable>,
    /// `"wire"` (the default) or `"cellular"`: a radio link whose forward direction is the
    /// downlink (see `ran`).
    pub kind: Option<String>,
    /// The radio side of a cellular link.
    pub ran: Option<RanTable>,
    /// The upstream of a `kind = "docsis"` link (its reverse direction).
    pub docsis: Option<DocsisTable>,
}

/// `docsis = { map_interval = "1ms", peak_rate = "100Mbit", ... }`: the upstream channel and
/// service flow of a cable link (see `l4s_link::docsis`); the upstream's maximum sustained
/// rate is the link's `reverse_rate`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocsisTable {
    pub map_interval: Option<Dur>,
    pub subcarrier_spacing_khz: Option<u32>,
    pub cyclic_prefix: Option<u32>,
    pub symbols_per_frame: Option<u32>,
    pub subcarriers: Option<u32>,
    pub spectral_efficiency: Option<f64>,
    pub cmts_map_proc: Option<Dur>,
    pub distance_km: Option<f64>,
    pub ds_interleaver: Option<u32>,
    /// The downstream channel and service flow (its maximum sustained rate is the link's
    /// `rate`).
    pub ds_subcarrier_spacing_khz: Option<u32>,
    pub ds_cyclic_prefix: Option<u32>,
    pub ds_subcarriers: Option<u32>,
    pub ds_spectral_efficiency: Option<f64>,
    pub ds_peak_rate: Option<Rate>,
    pub ds_max_traffic_burst: Option<String>,
    pub max_traffic_burst: Option<String>,
    pub peak_rate: Option<Rate>,
    pub free_capacity: Option<Rate>,
    pub free_capacity_variation: Option<f64>,
    pub pgs_rate: Option<Rate>,
    pub pgs_interval: Option<Dur>,
}

/// `ran = { slot = "0.5ms", tdd = "DDDSU", sr_period = "5ms", ... }`: a cellular link's
/// slots, TDD pattern, HARQ and uplink scheduling (see `l4s_link::cellular`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RanTable {
    pub slot: Option<Dur>,
    pub tdd: Option<String>,
    pub special_dl_symbols: Option<u8>,
    pub share: Option<f64>,
    pub harq: Option<HarqTable>,
    pub sr_period: Option<Dur>,
    pub grant_delay: Option<Dur>,
    pub k2: Option<u32>,
    pub configured_grant: Option<Dur>,
    pub sr_grant: Option<String>,
    pub drx: Option<DrxTable>,
}

/// `drx = { cycle = "40ms", on_duration = "8ms", inactivity = "10ms", offset = "0ms",
/// short_cycle = "10ms", short_cycle_timer = 2 }`: the downlink's connected-mode DRX (see
/// `l4s_link::cellular`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DrxTable {
    pub cycle: Dur,
    pub on_duration: Dur,
    pub inactivity: Dur,
    pub offset: Option<Dur>,
    pub short_cycle: Option<Dur>,
    pub short_cycle_timer: Option<u32>,
}

/// `harq = { bler = 0.1, rtt = "8ms" }`: failed blocks sent again one HARQ round trip
/// later, delivered in order (see `l4s_link::harq`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarqTable {
    pub bler: f64,
    pub rtt: Dur,
}

/// `capacity = { process = "gaussian", mean = "10Mbit", std_dev = "3Mbit", step = "100ms",
/// min = "5Mbit", max = "20Mbit" }`: capacity over time drawn from the scenario's seed (see
/// `l4s_link::capacity`). Each process takes its own keys.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityTable {
    pub process: String,
    pub rate: Option<Rate>,
    pub steps: Option<Vec<RateStepTable>>,
    pub period: Option<Dur>,
    pub low: Option<Rate>,
    pub high: Option<Rate>,
    pub mean: Option<Rate>,
    pub std_dev: Option<Rate>,
    pub step: Option<Dur>,
    pub min: Option<Rate>,
    pub max: Option<Rate>,
    pub states: Option<Vec<MarkovStateTable>>,
    pub median: Option<Rate>,
    pub sigma: Option<f64>,
    pub phi: Option<f64>,
}

/// One state of a Markov-modulated capacity: `{ rate = "20Mbit", mean_stay = "2s" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkovStateTable {
    pub rate: Rate,
    pub mean_stay: Dur,
}

/// `loss = { model = "gilbert-elliott", loss_good = 0.0, loss_bad = 0.5, mean_good = "1s",
/// mean_bad = "20ms" }`: bursty loss on the wire (see `l4s_link::gilbert_elliott`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LossTable {
    pub model: String,
    pub loss_good: Option<f64>,
    pub loss_bad: Option<f64>,
    pub mean_good: Option<Dur>,
    pub mean_bad: Option<Dur>,
}

/// `rate_schedule = { steps = [{ at = "5s", rate = "5Mbit" }, ...], repeat = "10s" }`:
/// the link's rate becomes `rate` at each `at`; with `repeat`, the whole pattern (the
/// configured rate from 0, then the steps) starts again every `repeat`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateScheduleTable {
    pub steps: Vec<RateStepTable>,
    pub repeat: Option<Dur>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateStepTable {
    pub at: Dur,
    pub rate: Rate,
}

/// `fault = { kind = "bleach" | "remark" | "mark-all", start = "10s" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultTable {
    pub kind: String,
    #[serde(default)]
    pub start: Dur,
}

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowTable {
    pub name: String,
    /// Copies of this flow (default 1): `count = 3` makes flows `<name>-1` to `<name>-3`,
    /// each with its own seed.
    pub count: Option<u32>,
    /// "tcp", "udp-prague" or "probe".
    #[serde(rename = "type")]
    pub kind: String,
    /// Congestion controller (tcp).
    pub cc: Option<String>,
    /// tcp: ECN feedback "accecn" | "classic" | "off" (default per cc);
    /// probe: the codepoint sent ("ect1", "ect0", "not-ect", "ce").
    pub ecn: Option<String>,
    /// Base RTT (dumbbell).
    pub rtt: Option<Dur>,
    /// Sender and receiver nodes (custom topology).
    pub from: Option<String>,
    pub to: Option<String>,
    #[serde(default)]
    pub start: Dur,
    pub stop: Option<Dur>,
    /// Application data to send (tcp); absent = unlimited.
    pub bytes: Option<String>,
    /// Probe or cbr: packets per second.
    pub pps: Option<f64>,
    /// Named preset: a cbr flow's ("voip", "game"), a media flow's encoder profile
    /// ("cloud-gaming", "xr-h264", "xr-h265", "video-call").
    pub profile: Option<String>,
    /// Media settings overriding the profile (`type = "media"`).
    pub media: Option<toml::Table>,
    /// Application settings (`bulk`, `sync`, `request-response`, `web`, `query`).
    pub app: Option<toml::Table>,
    /// Probe: frame size ("200B").
    pub size: Option<String>,
    /// Latency budget: data packets delayed more than this count as late (and, for a
    /// real-time application, as lost).
    pub latency_budget: Option<Dur>,
    /// DSCP written in the IP header (classification rules).
    pub dscp: Option<u8>,
    /// Destination port (classification rules).
    pub port: Option<u16>,
    /// Congestion-control options (tcp): `ect1`, `abe`, `linux_beta`, `hystart`, `v06`, `rate_mode`,
    /// `initial_cwnd`.
    pub cc_params: Option<toml::Table>,
    /// Advanced sender knobs, passed to the endpoint's own config.
    pub sender: Option<toml::Table>,
    /// Advanced receiver knobs.
    pub receiver: Option<toml::Table>,
}
