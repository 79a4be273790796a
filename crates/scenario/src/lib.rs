//! # l4s-scenario
//!
//! One scenario file describes a network, its bottleneck and its traffic; the simulator
//! and the live testbed run it. This crate parses TOML into a validated
//! [`Scenario`], and every problem becomes a [`ScenarioError`] naming the file, the line,
//! the key path and what was expected, before anything runs.
//!
//! The format is documented in `docs/scenarios.md`.

#![forbid(unsafe_code)]

mod caller;
mod cell;
mod describe;
pub mod error;
pub mod file;
mod flows;
mod load;
pub mod routes;
pub mod variants;
mod wifi;

pub use caller::Caller;
pub use describe::describe;
pub use error::{OverrideError, ScenarioError};
pub use l4s_link::{Fault, FaultKind, LossModel, RateSchedule};
pub use load::{load_file, load_str, other_kind, parse_toml, FileKind};
pub use routes::Routes;
pub use variants::{load_variants, load_with_sets, set_path, variant_texts, variants_of, variants_with, Variant};

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
    /// Shortest routes between the nodes over the links, computed once when the scenario
    /// is loaded; both backends forward along them.
    pub routes: Routes,
}

impl Scenario {
    /// Propagation delay from node `from` to node `to` along the routes.
    pub fn path_delay(&self, from: usize, to: usize) -> Dur {
        self.routes
            .path(from, to)
            .fold(Dur::ZERO, |d, l| d + self.links[l].delay)
    }

    /// Propagation RTT between two nodes (the sum of the link delays there and back).
    pub fn base_rtt(&self, a: usize, b: usize) -> Dur {
        self.path_delay(a, b) + self.path_delay(b, a)
    }

    /// The seed of flow `i`'s endpoints and application (derived from the run's seed):
    /// both backends draw a flow's randomness from it.
    pub fn flow_seed(&self, i: usize) -> u64 {
        l4s_core::Rng::derive(self.seed, 0x3000 + i as u64).next_u64()
    }

    /// Apply a run's overrides (`--seed`, `--duration`): the duration must be above zero
    /// and longer than the warm-up. Every backend applies them through here, so a run
    /// means the same thing in each.
    pub fn apply_overrides(&mut self, seed: Option<u64>, duration: Option<Dur>) -> Result<(), OverrideError> {
        if let Some(s) = seed {
            self.seed = s;
        }
        if let Some(d) = duration {
            if d.is_zero() {
                return Err(OverrideError::ZeroDuration);
            }
            if self.warmup >= d {
                return Err(OverrideError::NotAfterWarmup {
                    duration: d,
                    warmup: self.warmup,
                });
            }
            self.duration = d;
        }
        if seed.is_some() || duration.is_some() {
            self.draw_capacities().map_err(OverrideError::Draw)?;
        }
        Ok(())
    }

    /// Draw every `capacity` link's trace for this run: as long as the run, from the run's
    /// seed and the link's index, so both backends replay the same capacity.
    pub fn draw_capacities(&mut self) -> Result<(), String> {
        self.draw(true)
    }

    /// Draw what a `capacity` link does not hold yet: the loader has drawn each direction's
    /// own process already (for its seed, index and duration, as [`Scenario::draw_capacities`]
    /// would), but not a reverse direction's draw of its forward's process, nor a cellular
    /// link's rate per millisecond.
    pub(crate) fn draw_missing_capacities(&mut self) -> Result<(), String> {
        self.draw(false)
    }

    /// Draw each `capacity` link's trace and (for a cellular link) its rate per
    /// millisecond: every one `again`, else only those not held.
    fn draw(&mut self, again: bool) -> Result<(), String> {
        for i in 0..self.links.len() {
            let Some(p) = &self.links[i].capacity else { continue };
            let seed = l4s_core::Rng::derive(self.seed, 0x5000 + i as u64).next_u64();
            let gives = |e| {
                format!(
                    "link {}: its capacity process gives {e} over the run's {}",
                    self.links[i].name, self.duration
                )
            };
            let held = &self.links[i];
            let trace = match &held.trace {
                Some(t) if !again => t.clone(),
                _ => std::sync::Arc::new(p.trace(self.duration, seed).map_err(gives)?),
            };
            // A cellular link serves a process at its rate in each millisecond, not in
            // whole delivery opportunities (see `l4s_link::cellular`).
            let rates = match &held.rates {
                _ if held.ran.is_none() => None,
                Some(r) if !again => Some(r.clone()),
                _ => Some(std::sync::Arc::new(p.rates(self.duration, seed).map_err(gives)?)),
            };
            let link = &mut self.links[i];
            link.rate = Some(trace.mean_rate());
            link.trace = Some(trace);
            link.rates = rates;
        }
        self.gather_cells();
        Ok(())
    }

    /// Hold the capacity draws of `earlier` scenarios instead of this one's own where they
    /// are the same draw: the same process on the link of the same index, with the same
    /// seed and duration (and a rate per millisecond kept or not alike), is drawn the same
    /// ([`Scenario::draw_capacities`] is deterministic). The variants of one file then hold
    /// one copy of a draw they share, which for a long cellular run is most of its memory
    /// (a rate per millisecond and every delivery opportunity).
    pub fn share_draws<'a>(&mut self, earlier: impl IntoIterator<Item = &'a Scenario>) {
        let mut shared = false;
        for e in earlier {
            if e.seed != self.seed || e.duration != self.duration || e.links.len() != self.links.len() {
                continue;
            }
            for (mine, theirs) in self.links.iter_mut().zip(&e.links) {
                let same = mine.capacity.is_some()
                    && mine.capacity == theirs.capacity
                    && mine.ran.is_some() == theirs.ran.is_some()
                    && theirs.trace.is_some();
                let already = match (&mine.trace, &theirs.trace) {
                    (Some(a), Some(b)) => std::sync::Arc::ptr_eq(a, b),
                    _ => false,
                };
                if same && !already {
                    mine.trace = theirs.trace.clone();
                    mine.rates = theirs.rates.clone();
                    shared = true;
                }
            }
        }
        if shared {
            self.gather_cells();
        }
    }

    /// Give each cell of several UEs the capacities its links hold as drawn for this run
    /// (a UE's downlink and uplink are links of their own, each with its capacity).
    fn gather_cells(&mut self) {
        for owner in 0..self.links.len() {
            let Some(m) = self.links[owner].medium.as_ref().filter(|m| m.owner == owner) else {
                continue;
            };
            let Some(cell) = m.cell.as_deref() else { continue };
            let mut cfg = cell.clone();
            let members: Vec<usize> = (0..self.links.len())
                .filter(|&k| self.links[k].medium.as_ref().is_some_and(|m| m.owner == owner))
                .collect();
            for &k in &members {
                let Some(m) = self.links[k].medium.as_ref() else {
                    continue;
                };
                let cap = self.links[k].config(self.duration).ran_capacity();
                match (m.from, m.to) {
                    (0, to) => {
                        if let Some(ue) = cfg.ues.get_mut(to.wrapping_sub(1)) {
                            ue.down = cap;
                        }
                    }
                    (from, _) => {
                        if let Some(ue) = cfg.ues.get_mut(from - 1) {
                            ue.up = cap;
                        }
                    }
                }
            }
            let cfg = std::sync::Arc::new(cfg);
            for k in members {
                if let Some(m) = self.links[k].medium.as_mut() {
                    m.cell = Some(cfg.clone());
                }
            }
        }
    }
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
    /// Changes of the rate over the run (empty: the rate is constant), from the scenario's
    /// `rate_schedule`.
    pub schedule: RateSchedule,
    /// Loss on the wire (`loss`).
    pub loss: Option<LossModel>,
    /// Capacity as Mahimahi delivery opportunities (`trace`, or drawn from `capacity`);
    /// `rate` is then the trace's mean.
    pub trace: Option<std::sync::Arc<l4s_link::Trace>>,
    /// The process `trace` was drawn from (`capacity`), drawn again when the run's seed or
    /// duration changes.
    pub capacity: Option<l4s_link::CapacityProcess>,
    /// HARQ retransmissions with in-order delivery (`harq`).
    pub harq: Option<l4s_link::HarqConfig>,
    /// A cellular radio link in this direction (`kind = "cellular"`, `ran`).
    pub ran: Option<(l4s_link::RanConfig, l4s_link::RanDirection)>,
    /// A cellular link's capacity process as its rate in each millisecond of the run
    /// (bit/s), drawn with `trace`.
    pub rates: Option<std::sync::Arc<Vec<f64>>>,
    /// The upstream of a DOCSIS link (its reverse direction): the request–grant loop, with
    /// the service flow's maximum sustained rate.
    pub docsis: Option<l4s_link::DocsisUpstream>,
    /// The downstream of a DOCSIS link (its forward direction): the CMTS's symbols and
    /// shaping, with the service flow's maximum sustained rate.
    pub docsis_downstream: Option<l4s_link::DocsisDownstream>,
    /// This direction crosses a shared medium (a Wi-Fi BSS) whose model all its links share.
    pub medium: Option<MediumPort>,
}

/// Where a link crosses a shared medium: the medium's model belongs to its first link
/// (`owner`, which carries the model's configuration in [`Link::config`]); packets enter
/// it at port `from` and leave at port `to`; `nodes[p]` is the node at port `p`.
#[derive(Debug, Clone)]
pub struct MediumPort {
    /// The medium's name (its queues are reported under it).
    pub name: String,
    pub owner: usize,
    pub from: usize,
    pub to: usize,
    pub nodes: std::sync::Arc<Vec<usize>>,
    /// The owner's model configuration: a Wi-Fi BSS, or a cell of several UEs.
    pub wifi: Option<std::sync::Arc<l4s_link::wifi::BssConfig>>,
    pub cell: Option<std::sync::Arc<l4s_link::CellConfig>>,
}

impl Link {
    /// A plain wire from `from` to `to`: this rate (or none: a pure delay line), delay and
    /// queue; not a bottleneck, no fault, schedule, loss, trace, HARQ or radio.
    pub fn wire(name: String, from: usize, to: usize, rate: Option<Rate>, delay: Dur, aqm: AqmConfig) -> Link {
        Link {
            name,
            from,
            to,
            rate,
            delay,
            aqm,
            bottleneck: false,
            fault: None,
            schedule: RateSchedule::default(),
            loss: None,
            trace: None,
            capacity: None,
            harq: None,
            ran: None,
            rates: None,
            docsis: None,
            docsis_downstream: None,
            medium: None,
        }
    }

    /// The capacity at run time `t` (`end`: the end of the run), as the link model reports
    /// it for monitoring: the `rate_schedule` applied, or what a trace offered in the
    /// [`l4s_link::trace::CAPACITY_WINDOW`] before `t`.
    pub fn rate_at(&self, t: Dur, end: Dur) -> Option<Rate> {
        if let Some(tr) = &self.trace {
            return Some(tr.capacity_before(t, l4s_link::trace::CAPACITY_WINDOW));
        }
        let sched = self.schedule.clone().ending_at(end);
        self.rate.map(|base| sched.rate_at(base, t))
    }

    /// What the link model is built from. The schedule ends at `end`, the end of the run.
    pub fn config(&self, end: Dur) -> l4s_link::LinkConfig {
        l4s_link::LinkConfig {
            fault: self.fault,
            schedule: self.schedule.clone().ending_at(end),
            loss: self.loss,
            trace: self.trace.clone(),
            harq: self.harq,
            ran: self.ran.clone(),
            rates: self.rates.clone(),
            docsis: self.docsis.clone(),
            docsis_downstream: self.docsis_downstream.clone(),
            wifi: self.medium.as_ref().and_then(|m| m.wifi.clone()),
            cell: self.medium.as_ref().and_then(|m| m.cell.clone()),
            ..l4s_link::LinkConfig::new(self.rate, self.delay, self.aqm.clone())
        }
    }
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
    /// What the scenario wrote in the flow's `sender`, `receiver` and `cc_params` tables:
    /// `("sender.min_rto", "\"1s\"")`, by table, then by key. A backend that cannot take a
    /// setting (the live backend's kernel TCP) says which.
    pub written: Vec<(String, String)>,
}
