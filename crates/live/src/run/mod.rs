//! `l4s run SCENARIO --backend live`: build the topology, run the flows on real sockets
//! through the userspace bottleneck, and summarise the run in the simulator's format.
//!
//! Order of a run:
//! 1. Checks that need nothing built: root, `ip` and `ethtool`, the kernel's congestion
//!    controls for every TCP flow, per-namespace `tcp_ecn` consistency.
//! 2. The testbed ([`crate::topology::build`]), its forwarders started on
//!    threads inside the wire namespaces.
//! 3. Receivers bound in their namespaces, then the run clock starts (time 0 of the
//!    scenario) and senders start at their flows' start times.
//! 4. Every snapshot interval the main thread writes the time-series rows and reports
//!    progress; SIGINT/SIGTERM (the `stop` flag) ends the run early with
//!    [`LiveErrorKind::Interrupted`] and no summary.
//! 5. At the end, senders stop; receivers keep reading for a grace period so that packets in
//!    flight are not counted lost; then the elements stop and the testbed is deleted.
//!
//! Measurement: flows as in [`crate::meter`]; queues from the forwarder's per-packet
//! records (the same fields the simulator measures: sojourn per sub-queue, enqueues,
//! dequeues, marks, drops, busy time for the utilisation) within the statistics window.

mod flows;
mod forwarders;
mod results;

use crate::endpoints::{self, Clock};
use crate::meter::{SharedMeter, Window};
use crate::topology::{self, Built};
use crate::{LiveError, LiveErrorKind};
use flows::FlowThreads;
use forwarders::{lockq, Forwarders};
use l4s_core::{Dur, Ecn, Time};
use l4s_fwd::netns::RunId;
use l4s_metrics::summary::Summary;
use l4s_scenario::{FlowKind, Scenario};
use std::collections::BTreeMap;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Time the elements get to open their sockets before traffic starts.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(300);
/// How long receivers keep reading after the end, for packets still in flight: at least
/// this, longer behind a deep queue (see [`grace_for`]), at most [`MAX_GRACE`] (the taps
/// keep an unanswered send that long, `tap::MAX_WAIT`).
const GRACE: Dur = Dur::from_millis(500);
const MAX_GRACE: Dur = crate::tap::MAX_WAIT;

/// The receivers' grace period when the largest one-way delay a flow saw in the window
/// was `worst`, so that a packet still queued at the end is not counted lost (the
/// simulator counts only the packets it drops): twice that and 100 ms. The packets
/// arriving at the end were sent `worst` earlier; a queue fed at up to twice its rate
/// grows by at most that much delay in that time, so the last packet sent waits at most
/// twice `worst` (a queue fed faster fills to its limit, and then waits no longer than
/// what was seen).
fn grace_for(worst: Dur) -> Dur {
    worst * 2 + Dur::from_millis(100)
}

/// Where snapshots go: interval, flow rows, queue rows (the simulator's CSV layout).
pub type SnapshotSinks = (Dur, Box<dyn Write>, Box<dyn Write>);

/// Options of a live run.
pub struct LiveOptions {
    pub seed: Option<u64>,
    pub duration: Option<Dur>,
    /// Flows use IPv6 addresses.
    pub ipv6: bool,
    /// Time-series snapshots: interval, flow rows, queue rows (as the simulator's).
    pub snapshots: Option<SnapshotSinks>,
    /// Where to write `distributions.csv`.
    pub distributions: Option<Box<dyn Write>>,
    /// Set by SIGINT/SIGTERM: the run ends early with [`LiveErrorKind::Interrupted`].
    pub stop: Arc<AtomicBool>,
    /// Use this run id (default: a fresh one).
    pub run_id: Option<RunId>,
    /// Called once the testbed is up and the receivers listen, just before time 0, with
    /// the scenario's hosts: start other traffic there (e.g. `iperf3` with
    /// [`l4s_fwd::netns::Netns::command`]). The processes it returns are killed at the end.
    pub on_ready: Option<ReadyHook>,
    /// Record every data packet of the datagram flows (`packets.parquet`, see
    /// [`crate::timeline`]).
    pub timeline: Option<Box<dyn l4s_measure::timeline::TimelineSink>>,
}

/// See [`LiveOptions::on_ready`].
pub type ReadyHook = Box<dyn FnOnce(&[Host]) -> Result<Vec<std::process::Child>, String>>;

/// A scenario node in the live testbed.
#[derive(Clone, Debug)]
pub struct Host {
    /// The scenario's node name.
    pub name: String,
    pub ns: l4s_fwd::netns::Netns,
    /// The address other nodes reach it at.
    pub addr: IpAddr,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            seed: None,
            duration: None,
            ipv6: false,
            snapshots: None,
            distributions: None,
            stop: Arc::new(AtomicBool::new(false)),
            run_id: None,
            on_ready: None,
            timeline: None,
        }
    }
}

/// Facts about a live run for `run-info.json` (they vary between runs).
#[derive(Clone, Debug)]
pub struct LiveRunInfo {
    pub run_id: String,
    pub namespaces: usize,
    /// Packets the bottleneck queue(s) forwarded in the whole run.
    pub bottleneck_packets: u64,
    /// Per element: what it is and its counters, as JSON.
    pub elements: serde_json::Value,
    /// Per flow: addresses and ports used.
    pub flows: serde_json::Value,
    pub kernel: String,
    /// With `--packets`: rows written to `packets.parquet`, packets left out because they
    /// were in flight at the end, and arrivals that could not be joined to a send (see
    /// [`crate::timeline::Tracker::set_min_owd`]); null without.
    pub timeline: serde_json::Value,
    /// The TCP settings of the scenario that kernel TCP did not take ([`untaken_settings`]).
    pub untaken_settings: Vec<String>,
}

/// Does this process run as root?
pub fn is_root() -> bool {
    crate::sys::geteuid() == 0
}

/// The message for a missing privilege.
pub fn privilege_error() -> LiveError {
    LiveError {
        kind: LiveErrorKind::Privilege,
        message: format!(
            "the live backend builds network namespaces and raw sockets: it needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN and CAP_NET_RAW); run it as root, e.g. `sudo {}`",
            std::env::args().collect::<Vec<_>>().join(" ")
        ),
    }
}

/// Check what can be checked before building anything.
pub fn preflight(sc: &Scenario) -> Result<(), LiveError> {
    // The topology first: a scenario the testbed cannot build is refused whatever the host.
    crate::topology::segments(sc)?;
    let avail = endpoints::available_congestion_controls();
    if sc.flows.len() > crate::wire::MAX_FLOWS {
        return Err(LiveError::input(format!(
            "{} flows: the live backend carries at most {} (a 16-bit flow index on the wire)",
            sc.flows.len(),
            crate::wire::MAX_FLOWS
        )));
    }
    let mut sender_ecn: BTreeMap<usize, (bool, &str)> = BTreeMap::new();
    for f in &sc.flows {
        if let FlowKind::App { cfg } = &f.kind {
            if cfg.kind != l4s_apps::AppKind::Query {
                if !avail.iter().any(|a| a == &cfg.cc) {
                    return Err(LiveError::input(format!(
                        "flow {:?} asks for TCP congestion control {:?}, which this kernel does not offer (net.ipv4.tcp_available_congestion_control = {}); load its module (e.g. `modprobe tcp_{}`) or use --backend sim",
                        f.name,
                        cfg.cc,
                        avail.join(" "),
                        cfg.cc
                    )));
                }
                if matches!(
                    (cfg.cc.as_str(), cfg.ecn),
                    ("prague" | "dctcp", l4s_apps::AppEcn::Auto | l4s_apps::AppEcn::Accecn)
                ) {
                    return Err(LiveError::input(format!(
                        "flow {:?}: {} uses Accurate ECN, which the live backend's kernel TCP does not support; set ecn = \"off\" or use --backend sim",
                        f.name, cfg.cc
                    )));
                }
                // The node that opens the connections decides whether ECN is negotiated.
                let node = app_initiator(f);
                let wants = cfg.nominal_ecn() != Ecn::NotEct;
                if let Some((other, name)) = sender_ecn.get(&node) {
                    if *other != wants {
                        return Err(LiveError::input(format!(
                            "flows {name:?} and {:?} open TCP connections from the same node {:?} but one uses ECN and the other not; net.ipv4.tcp_ecn is per namespace: put them on different nodes",
                            f.name, sc.nodes[node].name
                        )));
                    }
                }
                sender_ecn.insert(node, (wants, f.name.as_str()));
            }
        }
        if let FlowKind::Tcp { cc, ecn, .. } = &f.kind {
            if !avail.iter().any(|a| a == cc) {
                return Err(LiveError::input(format!(
                    "flow {:?} asks for TCP congestion control {cc:?}, which this kernel does not offer (net.ipv4.tcp_available_congestion_control = {}); load its module (e.g. `modprobe tcp_{cc}`) or use --backend sim",
                    f.name,
                    avail.join(" ")
                )));
            }
            if *ecn == l4s_scenario::TcpEcn::Accurate {
                return Err(LiveError::input(format!(
                    "flow {:?}: Accurate ECN (ecn = \"accecn\") is not supported by the live backend's kernel TCP; use ecn = \"classic\" or \"off\"",
                    f.name
                )));
            }
            let wants = f.nominal_ecn != Ecn::NotEct;
            if let Some((other, name)) = sender_ecn.get(&f.src) {
                if *other != wants {
                    return Err(LiveError::input(format!(
                        "flows {name:?} and {:?} send TCP from the same node {:?} but one uses ECN and the other not; net.ipv4.tcp_ecn is per namespace: put them on different nodes",
                        f.name, sc.nodes[f.src].name
                    )));
                }
            }
            sender_ecn.insert(f.src, (wants, f.name.as_str()));
        }
    }
    // The sender settings kernel TCP takes from per-namespace sysctls.
    for s in SENDER_SYSCTLS {
        let mut seen: BTreeMap<usize, (bool, &str)> = BTreeMap::new();
        for f in &sc.flows {
            let Some((node, cfg)) = data_sender(f) else { continue };
            let on = (s.on)(cfg);
            if let Some((other, name)) = seen.get(&node) {
                if *other != on {
                    return Err(LiveError::input(format!(
                        "flows {name:?} and {:?} send TCP data from the same node {:?} but only one sets sender.{} = false; net.ipv4.{} is per namespace: put them on different nodes",
                        f.name,
                        sc.nodes[node].name,
                        s.key,
                        s.sysctl.rsplit('/').next().unwrap_or(s.sysctl)
                    )));
                }
            }
            seen.insert(node, (on, f.name.as_str()));
        }
    }
    // One initial window per route: flows from one node to another must agree.
    let mut windows: BTreeMap<(usize, usize), (u32, &str)> = BTreeMap::new();
    for f in &sc.flows {
        let Some((src, dst, iw)) = initial_window(f) else {
            continue;
        };
        if let Some((other, name)) = windows.get(&(src, dst)) {
            if *other != iw {
                return Err(LiveError::input(format!(
                    "flows {name:?} and {:?} send TCP data from node {:?} to node {:?} with initial windows of {other} and {iw} segments; Linux takes the initial window from the route (initcwnd), one per destination: put them on different nodes",
                    f.name, sc.nodes[src].name, sc.nodes[dst].name
                )));
            }
        }
        windows.insert((src, dst), (iw, f.name.as_str()));
    }
    Ok(())
}

/// The TCP settings a scenario wrote that the live backend's kernel TCP does not take, one
/// line per flow that has any (`flow "a": sender.min_rto = "1s", receiver.ack_delay =
/// "200ms"`). It takes `sender.pacing` and `sender.mss` up to the links' 1448 bytes
/// ([`endpoints::prepare_tcp`]), `sender.slow_start_after_idle` and `sender.tlp`
/// (per-namespace sysctls) and `cc_params.initial_cwnd` (the routes' `initcwnd` and
/// `initrwnd`), and `cc_params.hystart = true` or `"linux"` is what Linux's CUBIC does by
/// default; the rest of `sender`, `receiver` and `cc_params` (timer bounds, delayed ACKs, a
/// jumbo segment size, HyStart++, Prague's and CUBIC's variants) is the simulator's alone:
/// the kernel runs with its own settings, which the run should say rather than pass over.
pub fn untaken_settings(sc: &Scenario) -> Vec<String> {
    let taken = |key: &str, value: &str| match key {
        "sender.pacing" | "cc_params.initial_cwnd" => true,
        // A segment no larger than the testbed's 1500-byte links carry (`TcpOpts::of`).
        "sender.mss" => value.parse::<u32>().is_ok_and(|m| m <= endpoints::PATH_MSS),
        k if k
            .strip_prefix("sender.")
            .is_some_and(|k| SENDER_SYSCTLS.iter().any(|s| s.key == k)) =>
        {
            true
        }
        "cc_params.hystart" => matches!(value, "true" | "\"linux\""),
        _ => false,
    };
    sc.flows
        .iter()
        .filter(|f| match &f.kind {
            FlowKind::Tcp { .. } => true,
            FlowKind::App { cfg } => cfg.kind != l4s_apps::AppKind::Query,
            _ => false,
        })
        .filter_map(|f| {
            let left: Vec<String> = f
                .written
                .iter()
                .filter(|(k, v)| !taken(k, v))
                .map(|(k, v)| format!("{k} = {v}"))
                .collect();
            (!left.is_empty()).then(|| format!("flow {:?}: {}", f.name, left.join(", ")))
        })
        .collect()
}

/// A kernel TCP flow's data sender (its source: the server of downloads and responses, the
/// pusher of sync chunks) and the `sender` settings it runs with; `None` for other flows.
pub(super) fn data_sender(f: &l4s_scenario::Flow) -> Option<(usize, &l4s_transport::tcp::TcpConfig)> {
    match &f.kind {
        FlowKind::Tcp { sender, .. } => Some((f.src, sender)),
        FlowKind::App { cfg } if cfg.kind != l4s_apps::AppKind::Query => Some((f.src, &cfg.tcp)),
        _ => None,
    }
}

/// A `sender` setting that Linux keeps per network namespace: the testbed writes `0` to
/// the sysctl in the data sender's namespace when a flow turns the feature off (on is
/// Linux's default), and refuses two flows from one node that disagree.
pub(super) struct SenderSysctl {
    /// The key in the flow's `sender` table.
    pub key: &'static str,
    /// The sysctl, under /proc/sys.
    pub sysctl: &'static str,
    /// Whether the flow has the feature on.
    pub on: fn(&l4s_transport::tcp::TcpConfig) -> bool,
}

/// What kernel TCP takes from the `sender` table through sysctls:
/// * `slow_start_after_idle`: `net.ipv4.tcp_slow_start_after_idle` (`tcp_cwnd_restart`).
/// * `tlp`: `net.ipv4.tcp_early_retrans`, whose 0 turns tail loss probes (RFC 8985 §7)
///   off and 3, the default, on; Linux reads it only where it schedules a probe
///   (`tcp_schedule_loss_probe`) since RACK took the place of early retransmit (RFC 5827),
///   so it switches nothing else.
pub(super) const SENDER_SYSCTLS: [SenderSysctl; 2] = [
    SenderSysctl {
        key: "slow_start_after_idle",
        sysctl: "net/ipv4/tcp_slow_start_after_idle",
        on: |c| c.slow_start_after_idle,
    },
    SenderSysctl {
        key: "tlp",
        sysctl: "net/ipv4/tcp_early_retrans",
        on: |c| c.tlp,
    },
];

/// Linux's initial window when the route says nothing (`TCP_INIT_CWND`, RFC 6928).
pub(super) const LINUX_INITIAL_WINDOW: u32 = 10;

/// A kernel TCP flow's data sender, its data receiver and the initial window it asks for
/// in segments (`cc_params.initial_cwnd` of a `tcp` flow, `app.initial_cwnd` of an
/// application flow); `None` for other flows. Linux takes the initial window from the
/// sender's route to the receiver (`initcwnd`, `tcp_init_cwnd`), and the receiver's first
/// advertised window from its route back (`initrwnd`, `tcp_select_initial_window`: 10
/// segments without it), so a window above 10 needs both.
pub(super) fn initial_window(f: &l4s_scenario::Flow) -> Option<(usize, usize, u32)> {
    match &f.kind {
        FlowKind::Tcp { cc_params, .. } => Some((f.src, f.dst, cc_params.initial_cwnd_pkts)),
        FlowKind::App { cfg } if cfg.kind != l4s_apps::AppKind::Query => Some((f.src, f.dst, cfg.initial_cwnd)),
        _ => None,
    }
}

/// The node that opens an application flow's TCP connections: the destination (the
/// client) for every kind but sync, whose source pushes its chunks.
fn app_initiator(f: &l4s_scenario::Flow) -> usize {
    match &f.kind {
        FlowKind::App { cfg } if cfg.kind == l4s_apps::AppKind::Sync => f.src,
        _ => f.dst,
    }
}

/// The node whose socket listens for a flow: the source for application servers (every
/// kind but sync), else the destination.
fn listen_node(f: &l4s_scenario::Flow) -> usize {
    match &f.kind {
        FlowKind::App { cfg } if cfg.kind != l4s_apps::AppKind::Sync => f.src,
        _ => f.dst,
    }
}

/// Run `sc` live. `progress` is called with the run time every snapshot interval (at
/// least every 100 ms).
pub fn run(
    mut sc: Scenario,
    mut opts: LiveOptions,
    progress: &mut dyn FnMut(Time),
) -> Result<(Summary, LiveRunInfo), LiveError> {
    if !is_root() {
        return Err(privilege_error());
    }
    preflight(&sc)?;
    let untaken = untaken_settings(&sc);
    for line in &untaken {
        eprintln!("warning: the live backend's kernel TCP does not take these settings and runs with its own: {line}");
    }
    if !l4s_fwd::netns::ethtool_available() {
        return Err(LiveError {
            kind: LiveErrorKind::Privilege,
            message: "`ethtool` was not found: install it (`apt-get install ethtool`); the testbed switches segmentation and receive offloads off with it".into(),
        });
    }
    sc.apply_overrides(opts.seed, opts.duration).map_err(LiveError::input)?;
    let (seed, duration) = (sc.seed, sc.duration);
    let end = Time(duration.as_nanos());
    let window = Window {
        start: Time(sc.warmup.as_nanos()),
        end,
    };
    if let Some(id) = &opts.run_id {
        check_run_id_free(id)?;
    }
    let id = opts.run_id.clone().unwrap_or_else(RunId::generate);
    let built = topology::build(&sc, id, opts.ipv6, seed, duration)?;
    // From here on, `built.testbed` deletes everything when dropped (any return below).
    let result = run_built(&sc, &built, &mut opts, seed, window, progress);
    let ns_count = built.testbed.namespaces().len();
    let run_id = built.testbed.id().to_string();
    let cleanup = built.testbed.cleanup();
    let (summary, mut info) = result?;
    cleanup.map_err(|e| LiveError::run(format!("the run finished but cleaning up failed: {e}")))?;
    info.namespaces = ns_count;
    info.run_id = run_id;
    info.untaken_settings = untaken;
    Ok((summary, info))
}

/// Refuse a run id that a live run still holds (its lock is taken): its namespaces exist.
pub fn check_run_id_free(id: &RunId) -> Result<(), LiveError> {
    if l4s_fwd::netns::run_is_alive(id.as_str()) {
        return Err(LiveError::input(format!(
            "run id {id} is in use: a live run with it is still going (its namespaces are {}*); choose another --run-id, or stop that run (`l4s cleanup --run {id} --force` removes it)",
            id.prefix()
        )));
    }
    Ok(())
}

fn run_built(
    sc: &Scenario,
    built: &Built,
    opts: &mut LiveOptions,
    seed: u64,
    window: Window,
    progress: &mut dyn FnMut(Time),
) -> Result<(Summary, LiveRunInfo), LiveError> {
    flows::configure_kernel_tcp(sc, built)?;
    let ports = flows::listen_ports(sc);
    let (tl_tx, tl_rx) = std::sync::mpsc::channel::<crate::timeline::Event>();
    let mut tracker = opts.timeline.take().map(crate::timeline::Tracker::new);
    let tl_tx = tracker.as_ref().map(|_| tl_tx);
    // 1. The forwarders, given time to open their sockets.
    let mut fwd = Forwarders::start(sc, built, window, tl_tx.as_ref())?;
    std::thread::sleep(SETTLE);
    fwd.check_started()?;
    // 2. Receivers and taps, bound and listening before the clock starts.
    let clock = Clock::start();
    let meters = flows::flow_meters(sc, window);
    let mut threads = FlowThreads::new(sc, built, &ports, &meters, clock, window.end, tl_tx.clone());
    threads.start_receivers()?;
    let tcp_matches = threads.start_taps()?;
    if let Some(t) = tracker.as_mut() {
        t.set_tcp_flows(tcp_matches);
        // Data goes from a flow's source to its destination (servers are sources).
        t.set_min_owd(sc.flows.iter().map(|f| sc.path_delay(f.src, f.dst)).collect());
    }
    threads.wait_ready()?;
    let children = match opts.on_ready.take() {
        Some(hook) => {
            hook(&hosts(sc, built)).map_err(|e| LiveError::setup(format!("starting the extra traffic: {e}")))?
        }
        None => Vec::new(),
    };
    let _children = KillOnDrop(children);
    // 3. Time 0: queue meters start counting, senders start at their flows' start times.
    fwd.set_origin(clock.mono0());
    let cpu0 = results::cpu_times();
    threads.start_senders()?;
    // 4. Snapshots and progress on this thread until the end, or an interrupt.
    let mut snap = match opts.snapshots.take() {
        Some((interval, fw, qw)) => Some(
            l4s_measure::snapshot::Snapshots::new(interval.max(Dur::from_millis(10)), fw, qw)
                .map_err(|e| LiveError::run(format!("cannot write snapshots: {e}")))?,
        ),
        None => None,
    };
    let interval = snap.as_ref().map_or(Dur::from_millis(100), |s| s.interval);
    let mut next = Time::ZERO + interval;
    let stop = opts.stop.clone();
    let interrupted = loop {
        clock.sleep_until(next.min(window.end), &stop);
        let now = clock.now();
        if stop.load(Ordering::Relaxed) {
            threads.abort();
            break true;
        }
        if let Some(t) = tracker.as_mut() {
            // The timeline's send times are on the run clock; records' sojourns need none.
            while let Ok(ev) = tl_rx.try_recv() {
                t.handle(ev);
            }
            t.expire(now);
        }
        if now >= next {
            if let Some(snap) = snap.as_mut() {
                results::write_snapshot(sc, &meters, &fwd.queues, next, window.end, snap);
            }
            progress(next);
            next += interval;
        }
        // A host that held this thread back leaves intervals to catch up: every one up to
        // the end gets its row (late, with the meters as they are then), as the simulator
        // writes one per interval.
        if now >= window.end && next > window.end {
            break false;
        }
    };
    // 5. The end: senders, then receivers after their grace period, then the forwarders.
    let cpu1 = results::cpu_times();
    let worst = meters.iter().map(|m| m.lock().meter.owd.max_ns()).max().unwrap_or(0);
    threads.receivers_grace(grace_for(Dur(worst)));
    threads.join();
    drop(_children);
    let elements = fwd.stop();
    let mut timeline_info = serde_json::Value::Null;
    if let Some(mut t) = tracker.take() {
        drop(tl_tx);
        while let Ok(ev) = tl_rx.try_recv() {
            t.handle(ev);
        }
        timeline_info = serde_json::json!({
            "rows": t.written,
            // Neither arrived nor lost when the run ended: left out of the file, as in the
            // simulator.
            "in_flight_at_end": t.in_flight(),
            "ignored_arrivals": t.ignored_arrivals,
        });
        if !interrupted {
            t.finish()
                .map_err(|e| LiveError::run(format!("cannot write the packet timeline: {e}")))?;
        }
    }
    if interrupted {
        return Err(LiveError {
            kind: LiveErrorKind::Interrupted,
            message: "interrupted: the testbed was removed and no results were written".into(),
        });
    }
    if let Some(snap) = snap {
        snap.finish()
            .map_err(|e| LiveError::run(format!("cannot write snapshots: {e}")))?;
    }
    for (i, m) in meters.iter().enumerate() {
        if let Some(e) = &m.lock().error {
            return Err(LiveError::run(format!("flow {:?} failed: {e}", sc.flows[i].name)));
        }
    }
    let el = results::element_results(&elements, built, clock.mono0(), window)?;
    let steal = match (cpu0, cpu1) {
        (Some((s0, t0)), Some((s1, t1))) if t1 > t0 => Some(l4s_metrics::hist::round6(
            s1.saturating_sub(s0) as f64 / (t1 - t0) as f64,
        )),
        _ => None,
    };
    if let Some(mut w) = opts.distributions.take() {
        results::write_distributions(sc, &meters, &fwd.queues, &el, &mut *w)
            .and_then(|_| w.flush())
            .map_err(|e| LiveError::run(format!("cannot write distributions: {e}")))?;
    }
    let mut summary = results::summary(sc, built, &meters, &fwd.queues, &el, window, seed);
    summary.testbed = Some(results::testbed_check(&el.lateness, steal));
    let bottleneck_packets = fwd
        .queues
        .iter()
        .filter(|q| sc.links[q.link].bottleneck)
        .map(|q| lockq(&q.meter).meter.forwarded)
        .sum();
    Ok((
        summary,
        LiveRunInfo {
            run_id: String::new(),
            namespaces: 0,
            bottleneck_packets,
            elements: serde_json::Value::Array(el.elements),
            flows: serde_json::Value::Array(flows_json(sc, built, &ports, &meters)),
            timeline: timeline_info,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
            untaken_settings: Vec::new(),
        },
    ))
}

/// Per flow, for `run-info.json`: addresses and ports used, datagrams the host refused.
fn flows_json(sc: &Scenario, built: &Built, ports: &[u16], meters: &[SharedMeter]) -> Vec<serde_json::Value> {
    {
        sc.flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                serde_json::json!({
                    "flow": f.name,
                    "src": built.node_addr[f.src].to_string(),
                    // Where the destination listens; an application flow's server listens at
                    // its source instead (`listen`).
                    "dst": if listen_node(f) == f.dst {
                        SocketAddr::new(built.node_addr[f.dst], ports[i]).to_string()
                    } else {
                        built.node_addr[f.dst].to_string()
                    },
                    "listen": SocketAddr::new(built.node_addr[listen_node(f)], ports[i]).to_string(),
                    "send_errors": meters[i].lock().send_errors,
                })
            })
            .collect()
    }
}

/// The scenario's nodes as hosts of the testbed.
fn hosts(sc: &Scenario, built: &Built) -> Vec<Host> {
    sc.nodes
        .iter()
        .enumerate()
        .map(|(i, n)| Host {
            name: n.name.clone(),
            ns: built.nodes[i].clone(),
            addr: built.node_addr[i],
        })
        .collect()
}

/// Processes started for the run ([`LiveOptions::on_ready`]), killed when it ends.
struct KillOnDrop(Vec<std::process::Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Scenario {
        l4s_scenario::load_str(text, std::path::Path::new("untaken.toml")).unwrap()
    }

    #[test]
    fn settings_kernel_tcp_cannot_take_are_named_per_flow() {
        // The ns-3 mirror sets timer bounds and delayed ACKs that only the simulator's TCP
        // takes (its `tlp = false` kernel TCP takes).
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/bench-l4s-wired.toml");
        let sc = l4s_scenario::load_file(&p).unwrap();
        let names: Vec<&str> = sc.flows.iter().map(|f| f.name.as_str()).collect();
        let want: Vec<String> = names
            .iter()
            .map(|n| {
                format!(r#"flow "{n}": sender.min_rto = "1s", receiver.ack_delay = "200ms", receiver.rwnd = 750000"#)
            })
            .collect();
        assert_eq!(untaken_settings(&sc), want);
        let base = r#"
[scenario]
name = "u"
duration = "5s"
[topology]
type = "dumbbell"
rate = "10Mbit"
rtt = "20ms"
"#;
        // What kernel TCP takes, and a flow without settings, give nothing.
        let taken = format!(
            "{base}{}",
            r#"
[[flows]]
name = "c"
type = "tcp"
cc = "cubic"
sender = { pacing = false, slow_start_after_idle = false, tlp = false, mss = 1000 }
cc_params = { hystart = "linux" }
[[flows]]
name = "d"
type = "bulk"
cc = "cubic"
bytes = "10MB"
cc_params = { hystart = true }
[[flows]]
name = "u"
type = "udp-prague"
sender = { max_rate = "5Mbit" }
"#
        );
        assert_eq!(untaken_settings(&load(&taken)), Vec::<String>::new());
        // HyStart++ and Linux's CUBIC without HyStart are the simulator's (an initial window
        // the routes give).
        let not = taken
            .replace(r#"hystart = "linux""#, r#"hystart = "rfc9406", initial_cwnd = 20"#)
            .replace("mss = 1000", "mss = 8948")
            .replace("hystart = true", "hystart = false");
        assert_eq!(
            untaken_settings(&load(&not)),
            [
                r#"flow "c": sender.mss = 8948, cc_params.hystart = "rfc9406""#,
                r#"flow "d": cc_params.hystart = false"#
            ]
        );
    }
}
