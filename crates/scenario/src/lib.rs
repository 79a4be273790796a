//! # l4s-scenario
//!
//! One scenario file describes a network, its bottleneck and its traffic; the simulator
//! (and later the live testbed) runs it. This crate parses TOML into a validated
//! [`Scenario`], and every problem becomes a [`ScenarioError`] naming the file, the line,
//! the key path and what was expected, before anything runs.
//!
//! The format is documented in `docs/scenarios.md`.

pub mod error;
pub mod file;
mod flows;
mod load;
pub mod variants;

pub use error::ScenarioError;
pub use load::{load_file, load_str};
pub use variants::{load_variants, variants_of, Variant};

use l4s_aqm::config::AqmConfig;
use l4s_core::{Dur, Ecn, Rate};

/// A validated scenario, with the topology expanded into nodes and unidirectional links.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    /// The file it came from, as given.
    pub file: String,
    pub duration: Dur,
    pub warmup: Dur,
    pub seed: u64,
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    pub flows: Vec<Flow>,
}

#[derive(Debug, Clone)]
pub struct Node {
    pub name: String,
}

/// One direction of a link: the queue at `from` feeding a wire to `to`.
#[derive(Debug, Clone)]
pub struct Link {
    pub name: String,
    pub from: usize,
    pub to: usize,
    /// `None` = unlimited rate: a pure delay line without a queue.
    pub rate: Option<Rate>,
    pub delay: Dur,
    pub aqm: AqmConfig,
    /// True for the link(s) the scenario calls its bottleneck (reported first).
    pub bottleneck: bool,
    /// A middlebox that rewrites the ECN field of packets entering this link.
    pub fault: Option<Fault>,
    /// Rate changes over the run, in time order, expanded from the scenario's
    /// `rate_schedule` (empty: the rate is constant).
    pub rate_changes: Vec<(Dur, Rate)>,
}

/// What a faulty middlebox does to the ECN field (RFC 9331 §5 forbids all three; they
/// exist on real paths and an L4S sender must detect them, RFC 9000 §13.4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// Clear the ECN field: ECT(0), ECT(1) and CE become Not-ECT.
    Bleach,
    /// Rewrite ECT(1) to ECT(0).
    Remark,
    /// Set CE on every ECN-capable packet.
    MarkAll,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    pub kind: FaultKind,
    /// From this time on (before it the middlebox is harmless).
    pub start: Dur,
}

/// ECN feedback a TCP flow asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpEcn {
    /// What the controller asks for (AccECN for prague and dctcp, off for reno and cubic).
    Auto,
    Off,
    Classic,
    Accurate,
}

#[derive(Debug, Clone)]
pub enum FlowKind {
    Tcp {
        cc: String,
        ecn: TcpEcn,
        bytes: Option<u64>,
        sender: l4s_transport::tcp::TcpConfig,
        receiver: l4s_transport::tcp::TcpReceiverConfig,
        cc_params: l4s_cc::factory::CcParams,
    },
    UdpPrague {
        sender: l4s_transport::udp_prague::UdpPragueConfig,
        receiver: l4s_transport::udp_prague::UdpPragueReceiverConfig,
    },
    /// Real-time media: an encoder with a profile, a rate controller (SCReAM v2 or
    /// RT-Prague) and RFC 8888 feedback.
    Media { params: Box<l4s_media::MediaParams> },
    /// Application traffic over TCP connections or UDP queries, with completion times.
    App { cfg: Box<l4s_apps::AppConfig> },
    /// A constant-rate stream measured packet by packet: a probe, or a `cbr` flow
    /// (`profile` names its preset).
    Probe {
        sender: l4s_transport::probe::ProbeConfig,
        profile: Option<String>,
    },
}

impl FlowKind {
    pub fn type_name(&self) -> &'static str {
        match self {
            FlowKind::Media { .. } => "media",
            FlowKind::App { cfg } => cfg.kind.name(),
            FlowKind::Tcp { .. } => "tcp",
            FlowKind::UdpPrague { .. } => "udp-prague",
            FlowKind::Probe { profile: None, .. } => "probe",
            FlowKind::Probe { profile: Some(_), .. } => "cbr",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Flow {
    pub name: String,
    pub src: usize,
    pub dst: usize,
    pub start: Dur,
    pub stop: Option<Dur>,
    pub dscp: u8,
    pub port: u16,
    /// One-way delay above which a data packet counts as late.
    pub latency_budget: Option<Dur>,
    pub kind: FlowKind,
    /// The codepoint the flow's data is expected to carry (for reports before it runs).
    pub nominal_ecn: Ecn,
}
