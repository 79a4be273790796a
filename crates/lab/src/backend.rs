//! The seam between the runner and where a scenario runs: the deterministic simulator or
//! the live testbed. Both take the same validated scenario (with its routes resolved by
//! `l4s-scenario`), feed the same measurement layer (`l4s-measure`) and hand back the
//! same summary; what differs is said in [`RunStats`].

use crate::Error;
use l4s_core::{Dur, Time};
use l4s_measure::Outputs;
use l4s_metrics::summary::Summary;
use l4s_scenario::Scenario;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Told a live run's id before its testbed is built.
pub type OnStart = Box<dyn FnMut(&l4s_fwd::netns::RunId)>;

/// What a backend measured of its own run, beside the summary.
#[derive(Clone, Debug)]
pub struct RunStats {
    /// "sim" or "live".
    pub backend: &'static str,
    /// Length of the run (simulated or real time).
    pub duration: Dur,
    /// Packets the bottleneck queue(s) forwarded in the whole run.
    pub bottleneck_packets: u64,
    /// Simulator events processed (the simulator only).
    pub events: Option<u64>,
    /// Facts of a live run (run id, namespaces, kernel, elements, flows).
    pub live: Option<l4s_live::LiveRunInfo>,
}

/// Where a scenario runs.
pub trait Backend {
    /// "sim" or "live".
    fn name(&self) -> &'static str;
    /// Refuse what this backend cannot run before anything is created.
    fn preflight(&self, sc: &Scenario) -> Result<(), Error>;
    /// Run `sc` to its end, streaming the outputs; `progress` is called with the run's time
    /// as it goes. The scenario's seed and duration are the run's: overrides are applied
    /// before ([`crate::apply_overrides`]).
    fn run(
        &mut self,
        sc: Scenario,
        outputs: Outputs,
        progress: &mut dyn FnMut(Time),
    ) -> Result<(Summary, RunStats), Error>;
}

/// The deterministic discrete-event simulator (`l4s-sim`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Simulator;

impl Backend for Simulator {
    fn name(&self) -> &'static str {
        "sim"
    }
    fn preflight(&self, _sc: &Scenario) -> Result<(), Error> {
        Ok(())
    }
    fn run(
        &mut self,
        sc: Scenario,
        outputs: Outputs,
        progress: &mut dyn FnMut(Time),
    ) -> Result<(Summary, RunStats), Error> {
        let (summary, st) = l4s_sim::run(sc, outputs.into(), progress).map_err(|e| match e {
            l4s_sim::RunError::Input(m) => Error::input(m),
            l4s_sim::RunError::Output(m) => Error::output(m),
        })?;
        Ok((
            summary,
            RunStats {
                backend: "sim",
                // The time simulated: the scenario's duration, or less when stopped.
                duration: st.simulated,
                bottleneck_packets: st.bottleneck_packets,
                events: Some(st.events),
                live: None,
            },
        ))
    }
}

/// The live testbed (`l4s-live`): real packets in network namespaces; needs root.
pub struct Live {
    /// Flows over IPv6.
    pub ipv6: bool,
    /// The run id that names the namespaces (a fresh one per run when `None`).
    pub run_id: Option<l4s_fwd::netns::RunId>,
    /// Set by the caller (on SIGINT/SIGTERM, say): the run ends early, the testbed is
    /// removed and [`crate::ErrorKind::Interrupted`] is returned.
    pub stop: Arc<AtomicBool>,
    /// Told each run's id before the testbed is built (so that a user can remove what a
    /// killed run left with `l4s cleanup --run ID`).
    pub on_start: Option<OnStart>,
}

impl Default for Live {
    fn default() -> Self {
        Live {
            ipv6: false,
            run_id: None,
            stop: Arc::new(AtomicBool::new(false)),
            on_start: None,
        }
    }
}

impl Live {
    /// A live backend that a person can interrupt: the process's first SIGINT or SIGTERM
    /// sets [`Live::stop`], so the run ends, its testbed is removed and no results are
    /// written; if the run has not ended `grace` later, or on a second signal, whatever is
    /// still registered is removed and the process exits with status 128 + the signal.
    /// This installs the process's signal handlers: call it once per process.
    pub fn interruptible(grace: std::time::Duration) -> Result<Live, Error> {
        let live = Live::default();
        l4s_fwd::netns::install_signal_cleanup(Some(live.stop.clone()), grace)
            .map_err(|e| Error::new(crate::ErrorKind::Setup, e.to_string()))?;
        Ok(live)
    }
}

impl Backend for Live {
    fn name(&self) -> &'static str {
        "live"
    }
    fn preflight(&self, sc: &Scenario) -> Result<(), Error> {
        if !l4s_live::run::is_root() {
            return Err(l4s_live::run::privilege_error().into());
        }
        if let Some(id) = &self.run_id {
            l4s_live::run::check_run_id_free(id).map_err(Error::from)?;
        }
        l4s_live::run::preflight(sc).map_err(Error::from)
    }
    fn run(
        &mut self,
        sc: Scenario,
        outputs: Outputs,
        progress: &mut dyn FnMut(Time),
    ) -> Result<(Summary, RunStats), Error> {
        if outputs.pcap.is_some() {
            return Err(Error::input(
                "--pcap is not available with --backend live (the forwarder's records carry no payload to write; capture on the testbed's interfaces with tcpdump instead)",
            ));
        }
        let duration = sc.duration;
        let id = self.run_id.clone().unwrap_or_else(l4s_fwd::netns::RunId::generate);
        if let Some(f) = self.on_start.as_mut() {
            f(&id);
        }
        let opts = l4s_live::LiveOptions {
            seed: None,
            duration: None,
            ipv6: self.ipv6,
            snapshots: outputs.snapshots,
            distributions: outputs.distributions,
            stop: self.stop.clone(),
            run_id: Some(id),
            on_ready: None,
            timeline: outputs.timeline,
        };
        let (summary, info) = l4s_live::run(sc, opts, progress)?;
        Ok((
            summary,
            RunStats {
                backend: "live",
                duration,
                bottleneck_packets: info.bottleneck_packets,
                events: None,
                live: Some(info),
            },
        ))
    }
}
