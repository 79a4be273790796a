//! # l4s-sim
//!
//! A deterministic discrete-event simulator. It drives the very same sans-IO queue
//! disciplines (`l4s-aqm`), congestion controllers (`l4s-cc`) and endpoints
//! (`l4s-transport`) that the live testbed drives with a real clock.
//!
//! * Time is integer nanoseconds; events with equal times run in insertion order, so the
//!   same scenario and seed give byte-identical results.
//! * A link is a queue discipline, a serialiser at the link rate and a delay line. Packets
//!   on the wire sit in a per-link FIFO (delays are constant per link, so arrival order is
//!   send order) and only the head has an event: no packet lives in the event heap.
//! * Measurement is streaming (HDR histograms, counters); nothing grows with run length.

#![forbid(unsafe_code)]

pub mod capture;
pub mod endpoints;
pub mod events;
pub mod packet;
pub mod snapshot;
mod summary;
pub mod timeline;
pub mod world;

pub use world::Sim;

use l4s_core::{Dur, Time};
use l4s_metrics::summary::Summary;
use l4s_scenario::Scenario;

/// Where snapshots go: interval, flow rows, queue rows (see [`snapshot`]).
pub use l4s_measure::SnapshotSinks;

/// Options of one run. The four sinks are those of [`l4s_measure::Outputs`], which
/// converts into options without overrides (`RunOptions::from(outputs)`).
#[derive(Default)]
pub struct RunOptions {
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// Overrides the scenario's duration (longer than its warm-up).
    pub duration: Option<Dur>,
    /// Stream time-series snapshots: interval, flow rows, queue rows (see [`snapshot`]).
    pub snapshots: Option<SnapshotSinks>,
    /// Where to write `distributions.csv` at the end of the run.
    pub distributions: Option<Box<dyn std::io::Write>>,
    /// Record the bottleneck egress as pcap (writer, IPv6 addresses).
    pub pcap: Option<(Box<dyn std::io::Write>, bool)>,
    /// Record every data packet's life (see [`timeline`]).
    pub timeline: Option<Box<dyn timeline::TimelineSink>>,
    /// Set to stop the run at the time reached (see [`l4s_measure::Outputs::stop`]).
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl From<l4s_measure::Outputs> for RunOptions {
    fn from(o: l4s_measure::Outputs) -> RunOptions {
        RunOptions {
            seed: None,
            duration: None,
            snapshots: o.snapshots,
            distributions: o.distributions,
            pcap: o.pcap,
            timeline: o.timeline,
            stop: o.stop,
        }
    }
}

/// What a finished run reports beside its summary.
#[derive(Clone, Debug)]
pub struct RunStats {
    pub events: u64,
    /// Packets the bottleneck link(s) transmitted during the whole run.
    pub bottleneck_packets: u64,
    pub simulated: Dur,
}

/// Why [`run`] failed: its input (an override that does not fit the scenario; nothing was
/// run) or its outputs (a sink could not be written; the run itself was complete).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    Input(String),
    Output(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Input(m) | RunError::Output(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RunError {}

/// Simulate a scenario to its end.
pub fn run(
    scenario: Scenario,
    opts: RunOptions,
    progress: &mut dyn FnMut(Time),
) -> Result<(Summary, RunStats), RunError> {
    let mut sim = Sim::new(scenario, opts.seed, opts.duration).map_err(RunError::Input)?;
    let out = RunError::Output;
    if let Some((interval, flows, queues)) = opts.snapshots {
        sim.enable_snapshots(interval, flows, queues)
            .map_err(|e| out(format!("cannot write snapshots: {e}")))?;
    }
    if let Some((w, ipv6)) = opts.pcap {
        sim.enable_pcap(w, ipv6)
            .map_err(|e| out(format!("cannot write the pcap: {e}")))?;
    }
    if let Some(sink) = opts.timeline {
        sim.enable_timeline(sink);
    }
    sim.run_until_stopped(progress, opts.stop.as_deref());
    sim.finish_timeline()
        .map_err(|e| out(format!("cannot write the packet timeline: {e}")))?;
    sim.finish_pcap()
        .map_err(|e| out(format!("cannot write the pcap: {e}")))?;
    sim.finish_snapshots()
        .map_err(|e| out(format!("cannot write snapshots: {e}")))?;
    if let Some(mut w) = opts.distributions {
        sim.write_distributions(&mut *w)
            .and_then(|_| w.flush())
            .map_err(|e| out(format!("cannot write distributions: {e}")))?;
    }
    let stats = RunStats {
        events: sim.events_processed(),
        bottleneck_packets: sim.bottleneck_packets(),
        simulated: Dur(sim.end.as_nanos()),
    };
    let mut summary = sim.summary();
    if let Some(reached) = sim.interrupted_at {
        summary.complete = false;
        summary.reached_s = Some(l4s_metrics::hist::round6(reached.as_secs_f64()));
        // The scenario's duration stays what was asked for; the window ends where it stopped.
        summary.scenario.duration_s = l4s_metrics::hist::round6(sim.scenario.duration.as_secs_f64());
    }
    Ok((summary, stats))
}

impl Sim {
    /// Packets transmitted so far by the links marked as bottlenecks.
    pub fn bottleneck_packets(&self) -> u64 {
        self.scenario
            .links
            .iter()
            .zip(&self.links)
            .filter(|(s, _)| s.bottleneck)
            .map(|(_, l)| {
                l.model
                    .queue_stats(0)
                    .iter()
                    .map(|(_, s)| s.dequeued_packets)
                    .sum::<u64>()
            })
            .sum()
    }
}
