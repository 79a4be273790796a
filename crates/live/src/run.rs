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

use crate::endpoints::{self, Clock, FlowCtx, UdpReceiver, UdpSender};
use crate::meter::{flow_meter, SharedMeter, Window};
use crate::topology::{self, Built};
use crate::udp::EcnUdpSocket;
use crate::{LiveError, LiveErrorKind};
use l4s_aqm::{DropReason, QueueId};
use l4s_core::{Dur, Ecn, Rate, Time};
use l4s_fwd::netns::RunId;
use l4s_fwd::router::Decision;
use l4s_fwd::{PacketRecord, RouterStats, RouterStatus};
use l4s_metrics::hist::round6;
use l4s_metrics::summary::*;
use l4s_scenario::{FlowKind, Scenario};
use l4s_transport::probe::{ProbeReceiver, ProbeSender};
use l4s_transport::udp_prague::{UdpPragueReceiver, UdpPragueSender};
use std::collections::BTreeMap;
use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Time the elements get to open their sockets before traffic starts.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(300);
/// How long receivers keep reading after the end, for packets still in flight.
const GRACE: Dur = Dur::from_millis(500);

/// Where snapshots go: interval, flow rows, queue rows (the simulator's CSV layout).
pub type SnapshotSinks = (Dur, Box<dyn Write>, Box<dyn Write>);

/// What an element thread returns: its result, or the error that stopped it.
type ElementJoin = JoinHandle<Result<Result<RouterStats, String>, l4s_fwd::FwdError>>;

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
}

/// Does this process run as root?
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
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
    // net.ipv4.tcp_slow_start_after_idle is per namespace too.
    let mut restart: BTreeMap<usize, (bool, &str)> = BTreeMap::new();
    for f in &sc.flows {
        let Some((node, on)) = idle_restart_of(f) else { continue };
        if let Some((other, name)) = restart.get(&node) {
            if *other != on {
                return Err(LiveError::input(format!(
                    "flows {name:?} and {:?} send TCP data from the same node {:?} but only one sets sender.slow_start_after_idle = false; net.ipv4.tcp_slow_start_after_idle is per namespace: put them on different nodes",
                    f.name, sc.nodes[node].name
                )));
            }
        }
        restart.insert(node, (on, f.name.as_str()));
    }
    Ok(())
}

/// A kernel TCP flow's data sender (its source: the server of downloads and responses, the
/// pusher of sync chunks) and whether it restarts its window after idle
/// (`sender.slow_start_after_idle`, per namespace in Linux); `None` for other flows.
fn idle_restart_of(f: &l4s_scenario::Flow) -> Option<(usize, bool)> {
    match &f.kind {
        FlowKind::Tcp { sender, .. } => Some((f.src, sender.slow_start_after_idle)),
        FlowKind::App { cfg } if cfg.kind != l4s_apps::AppKind::Query => Some((f.src, cfg.tcp.slow_start_after_idle)),
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

/// Per-queue measurement from the forwarder's records (one per direction of a forwarder):
/// the shared [`l4s_measure::QueueMeter`] fed on the run's clock, and what the forwarder's
/// status says of the queue now.
#[derive(Debug)]
struct QueueMeter {
    meter: l4s_measure::QueueMeter,
    /// CLOCK_MONOTONIC at run time 0.
    mono0: u64,
    backlog_packets: u64,
    backlog_bytes: u64,
    probability: Option<f64>,
}

impl QueueMeter {
    fn new(window: Window, subqueues: &'static [QueueId]) -> QueueMeter {
        QueueMeter {
            meter: l4s_measure::QueueMeter::new(window, subqueues, true),
            mono0: u64::MAX,
            backlog_packets: 0,
            backlog_bytes: 0,
            probability: None,
        }
    }
    fn run_time(&self, mono: Time) -> Option<Time> {
        mono.as_nanos().checked_sub(self.mono0).map(Time)
    }
    fn record(&mut self, r: &PacketRecord) {
        // Lost on the wire after it left the queue (counted as it left); or decided before
        // the run's time 0.
        let (Some(decided), false) = (self.run_time(r.time), r.decision == Decision::Lost) else {
            return;
        };
        let at_enqueue_drop = r.decision == Decision::Drop && r.drop_reason == Some(DropReason::Overlimit);
        if !at_enqueue_drop {
            if let Some(arrived) = self.run_time(r.arrival) {
                self.meter.on_enqueue(arrived, r.queue);
            }
        }
        match r.decision {
            // Link time at the rate in force when the frame started (rate schedules).
            Decision::Pass | Decision::Mark => self.meter.on_dequeue(
                decided,
                r.queue,
                r.sojourn,
                r.serialisation,
                r.size,
                r.decision == Decision::Mark,
            ),
            Decision::Drop | Decision::Lost => self.meter.on_drop(decided, r.queue, at_enqueue_drop),
        }
    }
}

type SharedQueue = Arc<Mutex<QueueMeter>>;

/// Sets its flags when dropped.
struct StopOnDrop(Vec<Arc<AtomicBool>>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        for f in &self.0 {
            f.store(true, Ordering::Relaxed);
        }
    }
}

fn lockq(q: &SharedQueue) -> std::sync::MutexGuard<'_, QueueMeter> {
    q.lock().unwrap_or_else(|p| p.into_inner())
}

/// A queue of the run: which scenario link, and its meter.
struct LiveQueue {
    link: usize,
    meter: SharedQueue,
}

/// Run `sc` live. `progress` is called with the run time every snapshot interval (at
/// least every 100 ms).
pub fn run(
    sc: Scenario,
    mut opts: LiveOptions,
    progress: &mut dyn FnMut(Time),
) -> Result<(Summary, LiveRunInfo), LiveError> {
    if !is_root() {
        return Err(privilege_error());
    }
    preflight(&sc)?;
    if !l4s_fwd::netns::ethtool_available() {
        return Err(LiveError {
            kind: LiveErrorKind::Privilege,
            message: "`ethtool` was not found: install it (`apt-get install ethtool`); the testbed switches segmentation and receive offloads off with it".into(),
        });
    }
    let seed = opts.seed.unwrap_or(sc.seed);
    let duration = opts.duration.unwrap_or(sc.duration);
    if sc.warmup >= duration {
        return Err(LiveError::input(format!(
            "warm-up {} is not shorter than the duration {duration}",
            sc.warmup
        )));
    }
    let end = Time(duration.as_nanos());
    let window = Window {
        start: Time(sc.warmup.as_nanos()),
        end,
    };
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
    Ok((summary, info))
}

fn run_built(
    sc: &Scenario,
    built: &Built,
    opts: &mut LiveOptions,
    seed: u64,
    window: Window,
    progress: &mut dyn FnMut(Time),
) -> Result<(Summary, LiveRunInfo), LiveError> {
    let end = window.end;
    let stop = opts.stop.clone();
    // Per-namespace ECN for kernel TCP (RFC 3168 negotiation on or off).
    for f in &sc.flows {
        let (initiator, acceptor, wants) = match &f.kind {
            FlowKind::Tcp { .. } => (f.src, f.dst, f.nominal_ecn != Ecn::NotEct),
            FlowKind::App { cfg } if cfg.kind != l4s_apps::AppKind::Query => {
                let i = app_initiator(f);
                (
                    i,
                    if i == f.src { f.dst } else { f.src },
                    cfg.nominal_ecn() != Ecn::NotEct,
                )
            }
            _ => continue,
        };
        let v = if wants { "1" } else { "0" };
        built.nodes[initiator].sysctl("net/ipv4/tcp_ecn", v)?;
        if wants {
            built.nodes[acceptor].sysctl("net/ipv4/tcp_ecn", "1")?;
        }
    }
    // Window restart after idle, as the flows' sender.slow_start_after_idle says (on is the
    // kernel's default and the simulator's).
    for f in &sc.flows {
        if let Some((node, false)) = idle_restart_of(f) {
            built.nodes[node].sysctl("net/ipv4/tcp_slow_start_after_idle", "0")?;
        }
    }
    let mut used_ports: BTreeMap<(usize, bool, u16), usize> = BTreeMap::new();
    let mut ports = Vec::new();
    for (i, f) in sc.flows.iter().enumerate() {
        let tcp = match &f.kind {
            FlowKind::Tcp { .. } => true,
            FlowKind::App { cfg } => cfg.kind != l4s_apps::AppKind::Query,
            _ => false,
        };
        let node = listen_node(f);
        let mut p = if f.port == 0 { 5000 } else { f.port };
        while used_ports.contains_key(&(node, tcp, p)) {
            p = p.wrapping_add(1).max(1024);
        }
        used_ports.insert((node, tcp, p), i);
        ports.push(p);
    }
    let (tl_tx, tl_rx) = std::sync::mpsc::channel::<crate::timeline::Event>();
    let mut tracker = opts.timeline.take().map(crate::timeline::Tracker::new);
    let tl_tx = tracker.as_ref().map(|_| tl_tx);
    // Queue meters need time 0; it is fixed once everything is ready, so they start with a
    // placeholder that is set below before any traffic flows.
    let mut queues: Vec<LiveQueue> = Vec::new();
    let elem_stop = Arc::new(AtomicBool::new(false));
    // Endpoint threads stop on this (the caller's `stop` only asks the run to end).
    let ep_stop = Arc::new(AtomicBool::new(false));
    // Whatever way this function returns, every thread it started is told to stop.
    let _stop_all = StopOnDrop(vec![elem_stop.clone(), ep_stop.clone()]);
    let mut elem_handles: Vec<(String, ElementJoin)> = Vec::new();
    let mono0_cell = Arc::new(std::sync::atomic::AtomicU64::new(u64::MAX));
    for el in &built.elements {
        {
            {
                let (ns, cfg) = (&el.ns, &el.cfg);
                let seg = &built.segments[el.segment];
                let mut metas = Vec::new();
                for (dir, link) in [(0u8, seg.ab), (1u8, seg.ba)] {
                    let ids = l4s_aqm::build::<l4s_fwd::packet::Frame>(&sc.links[link].aqm, l4s_core::Rng::new(0))
                        .queue_ids();
                    let m = Arc::new(Mutex::new(QueueMeter::new(window, ids)));
                    if sc.links[link].rate.is_some() {
                        queues.push(LiveQueue { link, meter: m.clone() });
                    }
                    metas.push((dir, m));
                }
                let cfg = cfg.clone();
                let st = elem_stop.clone();
                let mono0 = mono0_cell.clone();
                let origin = mono0_cell.clone();
                let tl = tl_tx.clone();
                // Scenario link of each direction, if it is a real queue (has a rate).
                let hop_link: [Option<u32>; 2] = [seg.ab, seg.ba].map(|l| sc.links[l].rate.map(|_| l as u32));
                let name = format!("forwarder on {}", sc.links[seg.ab].name);
                let h = ns.spawn("l4s-fwd", move || {
                    let mut on_status = |s: &RouterStatus| {
                        for (d, m) in s.directions.iter().zip(&metas) {
                            let mut q = lockq(&m.1);
                            q.backlog_packets = d.queues.iter().map(|x| x.backlog_packets).sum();
                            q.backlog_bytes = d.queues.iter().map(|x| x.backlog_bytes).sum();
                            q.probability = d.probability;
                        }
                    };
                    let mut set = false;
                    let mut sink = |r: &PacketRecord| {
                        if !set {
                            let t0 = mono0.load(Ordering::Acquire);
                            if t0 == u64::MAX {
                                return;
                            }
                            for (_, m) in &metas {
                                lockq(m).mono0 = t0;
                            }
                            set = true;
                        }
                        if let (Some(tl), Some(link)) = (&tl, hop_link.get(r.direction as usize).copied().flatten()) {
                            let p = &r.payload[..(r.payload_len as usize).min(r.payload.len())];
                            let decision = match r.decision {
                                Decision::Pass => l4s_measure::timeline::Decision::Pass,
                                Decision::Mark => l4s_measure::timeline::Decision::Mark,
                                Decision::Drop | Decision::Lost => l4s_measure::timeline::Decision::Drop,
                            };
                            if let (Some(seq), Some(ip)) = (r.tcp_seq, r.ip) {
                                if let (Some(src_port), Some(dst_port)) = (ip.src_port, ip.dst_port) {
                                    let _ = tl.send(crate::timeline::Event::TcpHop {
                                        src: ip.src_addr(),
                                        dst: ip.dst_addr(),
                                        src_port,
                                        dst_port,
                                        seq,
                                        link,
                                        subqueue: r.queue,
                                        sojourn: r.sojourn,
                                        decision,
                                    });
                                }
                            } else if let Some((flow, _, seq32)) = crate::wire::data_prefix(p) {
                                let _ = tl.send(crate::timeline::Event::Hop {
                                    flow,
                                    seq32,
                                    link,
                                    subqueue: r.queue,
                                    sojourn: r.sojourn,
                                    decision,
                                });
                            }
                        }
                        if let Some((_, m)) = metas.get(r.direction as usize) {
                            lockq(m).record(r);
                        }
                    };
                    // The rate schedule counts from time 0 (u64::MAX until it is fixed).
                    l4s_fwd::run_recording_with_origin(&cfg, &st, &origin, &mut on_status, &mut sink)
                        .map_err(|e| e.to_string())
                })?;
                elem_handles.push((name, h));
            }
        }
    }
    let stop_elements = |handles: Vec<(String, JoinHandle<_>)>| {
        elem_stop.store(true, Ordering::Relaxed);
        let mut out = Vec::new();
        for (name, h) in handles {
            let r: Result<Result<RouterStats, String>, l4s_fwd::FwdError> = match h.join() {
                Ok(r) => r,
                Err(_) => Ok(Err("panicked".to_string())),
            };
            out.push((
                name,
                match r {
                    Ok(x) => x,
                    Err(e) => Err(e.to_string()),
                },
            ));
        }
        out
    };
    std::thread::sleep(SETTLE);
    // An element that failed to start (no permission, an interface missing) ends at once.
    if let Some(i) = elem_handles.iter().position(|(_, h)| h.is_finished()) {
        let results = stop_elements(elem_handles);
        let (name, r) = &results[i];
        return Err(LiveError::setup(format!(
            "{name} stopped at start: {}",
            r.as_ref().err().cloned().unwrap_or_default()
        )));
    }

    // Receivers first (bound and listening), then the clock starts.
    let clock = Clock::start();
    let mono0 = clock.mono0();
    let meters: Vec<SharedMeter> = sc
        .flows
        .iter()
        .map(|f| {
            // Kernel TCP flows are measured on the wire by the taps, where a retransmission
            // is a send again: their time series has no per-interval loss.
            let mut m = flow_meter(window, f.latency_budget, !matches!(f.kind, FlowKind::Tcp { .. }));
            match &f.kind {
                FlowKind::Media { params } => {
                    let cfg = l4s_media::FrameMeterConfig {
                        frame_interval: params.frame_interval,
                        deadline: params.frame_deadline,
                        stall_gap: params.stall_gap,
                        base_owd: sc.path_delay(f.src, f.dst),
                    };
                    m.media = Some(Box::new(l4s_measure::MediaMeter::new(cfg, window)));
                }
                FlowKind::App { .. } => m.app = Some(Box::new(l4s_measure::AppMeter::new(window))),
                _ => {}
            }
            SharedMeter::new(m)
        })
        .collect();
    let mut rx_handles = Vec::new();
    let mut tx_handles = Vec::new();
    let mut tap_handles = Vec::new();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<(usize, Result<(), String>)>();
    let ctx_of = |i: usize, recv: bool| -> FlowCtx {
        let f = &sc.flows[i];
        let stop_t = f.stop.map(|s| Time(s.as_nanos())).unwrap_or(end).min(end);
        FlowCtx {
            index: i as u32,
            name: f.name.clone(),
            clock,
            start: Time(f.start.as_nanos()),
            stop: stop_t,
            end: if recv { end + GRACE } else { end },
            stop_flag: ep_stop.clone(),
            meter: meters[i].clone(),
            ipv6: built.ipv6,
            timeline: tl_tx.clone(),
        }
    };
    for (i, f) in sc.flows.iter().enumerate() {
        let ctx = ctx_of(i, true);
        let node = listen_node(f);
        let bind = SocketAddr::new(built.node_addr[node], ports[i]);
        let ready = ready_tx.clone();
        let kind = f.kind.clone();
        let h = built.nodes[node].spawn("l4s-rx", move || match kind {
            FlowKind::App { cfg } => {
                let listen = if cfg.kind == l4s_apps::AppKind::Query {
                    EcnUdpSocket::bind(bind).map(crate::apps::Listen::Udp)
                } else {
                    TcpListener::bind(bind).and_then(|l| {
                        crate::endpoints::set_congestion_control(l.as_raw_fd(), &cfg.cc)?;
                        Ok(crate::apps::Listen::Tcp(l))
                    })
                };
                match listen {
                    Ok(l) => {
                        let _ = ready.send((i, Ok(())));
                        match l {
                            crate::apps::Listen::Tcp(l) if cfg.kind == l4s_apps::AppKind::Sync => {
                                crate::apps::run_sync_sink(&ctx, &cfg, l)
                            }
                            l => crate::apps::run_app_server(&ctx, &cfg, l),
                        }
                    }
                    Err(e) => {
                        let _ = ready.send((i, Err(format!("listening on {bind}: {e}"))));
                    }
                }
            }
            FlowKind::Tcp { .. } => match TcpListener::bind(bind) {
                Ok(l) => {
                    let _ = ready.send((i, Ok(())));
                    endpoints::run_tcp_receiver(&ctx, l);
                }
                Err(e) => {
                    let _ = ready.send((i, Err(format!("listening on {bind}: {e}"))));
                }
            },
            FlowKind::Media { params } => match EcnUdpSocket::bind(bind) {
                Ok(s) => {
                    let _ = ready.send((i, Ok(())));
                    let ep = l4s_media::MediaReceiver::new(&params, ctx.clock.now());
                    crate::media::run_media_receiver(&ctx, s, ep);
                }
                Err(e) => {
                    let _ = ready.send((i, Err(format!("binding {bind}: {e}"))));
                }
            },
            other => match EcnUdpSocket::bind(bind) {
                Ok(s) => {
                    let _ = ready.send((i, Ok(())));
                    let ep = match other {
                        FlowKind::UdpPrague { receiver, .. } => {
                            UdpReceiver::Prague(Box::new(UdpPragueReceiver::new(receiver)))
                        }
                        _ => UdpReceiver::Probe(Box::new(ProbeReceiver::new())),
                    };
                    endpoints::run_udp_receiver(&ctx, s, ep);
                }
                Err(e) => {
                    let _ = ready.send((i, Err(format!("binding {bind}: {e}"))));
                }
            },
        })?;
        rx_handles.push(h);
    }
    // Packet taps for kernel TCP flows and TCP applications: both sides open before time 0.
    let mut tcp_matches = Vec::new();
    for (i, f) in sc.flows.iter().enumerate() {
        let flow_match = match &f.kind {
            FlowKind::Tcp { .. } => crate::tap::Match::ToServer(SocketAddr::new(built.node_addr[f.dst], ports[i])),
            FlowKind::App { cfg } if cfg.kind == l4s_apps::AppKind::Sync => {
                crate::tap::Match::ToServer(SocketAddr::new(built.node_addr[listen_node(f)], ports[i]))
            }
            FlowKind::App { cfg } if cfg.kind != l4s_apps::AppKind::Query => crate::tap::Match::FromServer(
                SocketAddr::new(built.node_addr[listen_node(f)], ports[i]),
                built.node_addr[f.dst],
            ),
            _ => continue,
        };
        tcp_matches.push((i as u32, flow_match));
        let inflight = crate::tap::SharedInFlight::default();
        for (node, side) in [
            (
                f.src,
                crate::tap::Side::Sender {
                    src: built.node_addr[f.src],
                },
            ),
            (f.dst, crate::tap::Side::Receiver),
        ] {
            let ctx = ctx_of(i, true);
            let ready = ready_tx.clone();
            let inflight = inflight.clone();
            let h = built.nodes[node].spawn("l4s-tap", move || match crate::tap::Tap::open() {
                Ok(tap) => {
                    let _ = ready.send((i, Ok(())));
                    crate::tap::run_tcp_tap(&ctx, tap, flow_match, side, inflight);
                }
                Err(e) => {
                    let _ = ready.send((i, Err(format!("opening a packet tap: {e}"))));
                }
            })?;
            tap_handles.push(h);
        }
    }
    if let Some(t) = tracker.as_mut() {
        t.set_tcp_flows(tcp_matches);
        // Data goes from a flow's source to its destination (servers are sources).
        t.set_min_owd(sc.flows.iter().map(|f| sc.path_delay(f.src, f.dst)).collect());
    }
    let expected_ready = sc.flows.len() + tap_handles.len();
    drop(ready_tx);
    let mut setup_error = None;
    for _ in 0..expected_ready {
        match ready_rx.recv_timeout(std::time::Duration::from_secs(5)) {
            Ok((_, Ok(()))) => {}
            Ok((i, Err(e))) => {
                setup_error.get_or_insert(format!("flow {:?}: {e}", sc.flows[i].name));
            }
            Err(_) => {
                setup_error.get_or_insert("a receiver did not start within 5 s".to_string());
                break;
            }
        }
    }
    if let Some(e) = setup_error {
        ep_stop.store(true, Ordering::Relaxed);
        for h in rx_handles.into_iter().chain(tap_handles) {
            let _ = h.join();
        }
        stop_elements(elem_handles);
        return Err(LiveError::setup(e));
    }
    let mut children = Vec::new();
    if let Some(hook) = opts.on_ready.take() {
        let hosts: Vec<Host> = sc
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| Host {
                name: n.name.clone(),
                ns: built.nodes[i].clone(),
                addr: built.node_addr[i],
            })
            .collect();
        match hook(&hosts) {
            Ok(c) => children = c,
            Err(e) => {
                ep_stop.store(true, Ordering::Relaxed);
                for h in rx_handles.into_iter().chain(tap_handles) {
                    let _ = h.join();
                }
                stop_elements(elem_handles);
                return Err(LiveError::setup(format!("starting the extra traffic: {e}")));
            }
        }
    }
    // Time 0: queue meters start counting.
    mono0_cell.store(mono0, Ordering::Release);
    let cpu0 = cpu_times();
    for (i, f) in sc.flows.iter().enumerate() {
        let ctx = ctx_of(i, false);
        let dst = SocketAddr::new(built.node_addr[listen_node(f)], ports[i]);
        let bind = SocketAddr::new(built.node_addr[f.src], 0);
        let kind = f.kind.clone();
        let nominal = f.nominal_ecn;
        // Application clients run at the destination (sync sources at the source).
        let node = match &f.kind {
            FlowKind::App { .. } => app_initiator(f),
            _ => f.src,
        };
        let h = built.nodes[node].spawn("l4s-tx", move || match kind {
            FlowKind::App { cfg } if cfg.kind == l4s_apps::AppKind::Sync => {
                let seed = l4s_core::Rng::derive(seed, 0x3000 + i as u64).next_u64();
                crate::apps::run_sync_source(&ctx, &cfg, dst, seed)
            }
            FlowKind::App { cfg } => crate::apps::run_app_client(&ctx, &cfg, dst),
            FlowKind::Tcp { cc, bytes, .. } => endpoints::run_tcp_sender(&ctx, dst, &cc, bytes, nominal),
            FlowKind::UdpPrague { sender, .. } => match EcnUdpSocket::bind(bind) {
                Ok(s) => {
                    let ep = UdpSender::Prague(Box::new(UdpPragueSender::new(sender, ctx.start)));
                    endpoints::run_udp_sender(&ctx, s, dst, ep)
                }
                Err(e) => ctx.meter.fail(format!("flow {}: binding {bind}: {e}", ctx.name)),
            },
            FlowKind::Probe { sender, .. } => match EcnUdpSocket::bind(bind) {
                Ok(s) => {
                    let ep = UdpSender::Probe(Box::new(ProbeSender::new(sender, ctx.start)));
                    endpoints::run_udp_sender(&ctx, s, dst, ep)
                }
                Err(e) => ctx.meter.fail(format!("flow {}: binding {bind}: {e}", ctx.name)),
            },
            FlowKind::Media { params } => match EcnUdpSocket::bind(bind) {
                Ok(s) => {
                    // The simulator's seed for the flow's endpoints (scene complexity).
                    let rng = l4s_core::Rng::new(l4s_core::Rng::derive(seed, 0x3000 + i as u64).next_u64());
                    let ep = l4s_media::MediaSender::new(&params, rng, ctx.clock.now());
                    crate::media::run_media_sender(&ctx, s, dst, ep)
                }
                Err(e) => ctx.meter.fail(format!("flow {}: binding {bind}: {e}", ctx.name)),
            },
        })?;
        tx_handles.push(h);
    }

    // Snapshots and progress on this thread.
    let interval = opts
        .snapshots
        .as_ref()
        .map(|s| s.0)
        .unwrap_or(Dur::from_millis(100))
        .max(Dur::from_millis(10));
    let mut snap = match opts.snapshots.take() {
        Some((_, fw, qw)) => Some(
            l4s_measure::snapshot::Snapshots::new(interval, fw, qw)
                .map_err(|e| LiveError::run(format!("cannot write snapshots: {e}")))?,
        ),
        None => None,
    };
    let mut next = Time::ZERO + interval;
    let mut interrupted = false;
    loop {
        clock.sleep_until(next.min(end), &stop);
        let now = clock.now();
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            ep_stop.store(true, Ordering::Relaxed);
            break;
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
                write_snapshot(sc, &meters, &queues, next, end, snap);
            }
            progress(next);
            next += interval;
        }
        if now >= end {
            break;
        }
    }
    let cpu1 = cpu_times();
    for h in tx_handles {
        let _ = h.join();
    }
    for h in rx_handles.into_iter().chain(tap_handles) {
        let _ = h.join();
    }
    for mut c in children {
        let _ = c.kill();
        let _ = c.wait();
    }
    let results = stop_elements(elem_handles);
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
    let mut elements = Vec::new();
    let mut router_stats = Vec::new();
    let mut lateness = Vec::new();
    for (name, r) in &results {
        match r {
            Err(e) => return Err(LiveError::run(format!("{name} failed: {e}"))),
            Ok(st) => {
                elements.push(serde_json::json!({"element": name, "stats": st}));
                lateness.extend(st.directions.iter().map(|d| d.lateness));
                router_stats.push(st.clone());
            }
        }
    }
    let steal = match (cpu0, cpu1) {
        (Some((s0, t0)), Some((s1, t1))) if t1 > t0 => Some(round6(s1.saturating_sub(s0) as f64 / (t1 - t0) as f64)),
        _ => None,
    };
    let check = testbed_check(&lateness, steal);
    // Mean probability over the window, from the forwarders' samples.
    let mut probs: BTreeMap<usize, (f64, u64)> = BTreeMap::new();
    for (el, st) in built.elements.iter().zip(&router_stats) {
        let seg = &built.segments[el.segment];
        for (d, link) in st.directions.iter().zip([seg.ab, seg.ba]) {
            for (secs, p) in &d.probability {
                let t = st.started_ns as f64 + secs * 1e9 - mono0 as f64;
                if t >= window.start.as_nanos() as f64 && t <= window.end.as_nanos() as f64 {
                    let e = probs.entry(link).or_insert((0.0, 0));
                    e.0 += p;
                    e.1 += 1;
                }
            }
        }
    }
    if let Some(mut w) = opts.distributions.take() {
        write_distributions(sc, &meters, &queues, &mut *w)
            .and_then(|_| w.flush())
            .map_err(|e| LiveError::run(format!("cannot write distributions: {e}")))?;
    }
    let mut summary = summary(sc, built, &meters, &queues, &probs, window, seed);
    summary.testbed = Some(check);
    let bottleneck_packets = queues
        .iter()
        .filter(|q| sc.links[q.link].bottleneck)
        .map(|q| lockq(&q.meter).meter.forwarded)
        .sum();
    let flows = sc
        .flows
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
        .collect();
    Ok((
        summary,
        LiveRunInfo {
            run_id: String::new(),
            namespaces: 0,
            bottleneck_packets,
            elements: serde_json::Value::Array(elements),
            flows: serde_json::Value::Array(flows),
            timeline: timeline_info,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
        },
    ))
}

/// CPU time of the whole machine from the first line of `/proc/stat`: (steal, total), in
/// clock ticks. `None` where the file or the steal column is missing.
fn cpu_times() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    parse_cpu_line(text.lines().next()?)
}

fn parse_cpu_line(line: &str) -> Option<(u64, u64)> {
    let mut it = line.split_whitespace();
    if it.next()? != "cpu" {
        return None;
    }
    // user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is
    // already counted in user and nice.
    let v: Vec<u64> = it.take(8).map(|x| x.parse().ok()).collect::<Option<_>>()?;
    (v.len() == 8).then(|| (v[7], v.iter().sum()))
}

/// The run's self-check from every element direction's lateness.
fn testbed_check(lateness: &[l4s_fwd::lateness::LatenessStats], cpu_steal: Option<f64>) -> TestbedCheck {
    let packets: u64 = lateness.iter().map(|l| l.packets).sum();
    let late: u64 = lateness.iter().map(|l| l.over_1ms).sum();
    let worst = |f: fn(&l4s_fwd::lateness::LatenessStats) -> f64| {
        round6(lateness.iter().filter(|l| l.packets > 0).map(f).fold(0.0, f64::max) / 1e3)
    };
    let late_share = ratio(late, packets);
    TestbedCheck {
        packets,
        late_over_1ms: late,
        late_share: round6(late_share),
        worst_p99_ms: worst(|l| l.p99_us),
        worst_p999_ms: worst(|l| l.p999_us),
        max_ms: worst(|l| l.max_us),
        cpu_steal,
        disrupted: late_share > TestbedCheck::DISRUPTED_SHARE,
    }
}

/// The rate of a scenario link at run time `t` (its `rate_schedule` applied).
fn rate_at(link: &l4s_scenario::Link, t: Time, end: Time) -> Option<Rate> {
    let sched = link.schedule.clone().ending_at(Dur(end.as_nanos()));
    link.rate.map(|base| sched.rate_at(base, Dur(t.as_nanos())))
}

/// One row per flow and per queue at run time `t` (`end`: the end of the run).
fn write_snapshot(
    sc: &Scenario,
    meters: &[SharedMeter],
    queues: &[LiveQueue],
    t: Time,
    end: Time,
    snap: &mut l4s_measure::snapshot::Snapshots,
) {
    for (f, m) in sc.flows.iter().zip(meters) {
        snap.flow_row(t, &f.name, &mut m.lock());
    }
    for q in queues {
        let mut m = lockq(&q.meter);
        let now = l4s_measure::snapshot::QueueNow {
            backlog_packets: m.backlog_packets,
            backlog_bytes: m.backlog_bytes,
            probability: m.probability,
            marks: m.meter.interval.marks,
            drops: m.meter.interval.drops,
            rate_bps: rate_at(&sc.links[q.link], t, end).map_or(0, |r| r.bits_per_sec()),
        };
        snap.queue_row(t, &sc.links[q.link].name, &mut m.meter, now);
    }
}

fn write_distributions(
    sc: &Scenario,
    meters: &[SharedMeter],
    queues: &[LiveQueue],
    w: &mut dyn Write,
) -> std::io::Result<()> {
    let flows: Vec<_> = meters.iter().map(|m| m.lock()).collect();
    let qs: Vec<_> = queues.iter().map(|q| lockq(&q.meter)).collect();
    let flows: Vec<(&str, &l4s_measure::FlowMeter)> = sc
        .flows
        .iter()
        .zip(&flows)
        .map(|(f, m)| (f.name.as_str(), &m.meter))
        .collect();
    let qs: Vec<(&str, &l4s_measure::QueueMeter)> = queues
        .iter()
        .zip(&qs)
        .map(|(q, m)| (sc.links[q.link].name.as_str(), &m.meter))
        .collect();
    l4s_measure::distributions::write(w, &flows, &qs)
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        round6(a as f64 / b as f64)
    }
}

fn summary(
    sc: &Scenario,
    built: &Built,
    meters: &[SharedMeter],
    queues: &[LiveQueue],
    probs: &BTreeMap<usize, (f64, u64)>,
    window: Window,
    seed: u64,
) -> Summary {
    let flows: Vec<_> = meters.iter().map(|m| m.lock()).collect();
    let mut qs: Vec<_> = queues.iter().map(|q| lockq(&q.meter)).collect();
    let oh = if built.ipv6 { 62 } else { 42 };
    let flows: Vec<(&l4s_measure::FlowMeter, l4s_measure::summary::FlowEnd)> = sc
        .flows
        .iter()
        .zip(&flows)
        .map(|(f, m)| {
            // Kernel TCP carries the data (tcp flows and every application kind but query):
            // the bytes its receiving application read; datagram flows deliver what
            // arrives, headers off.
            let tcp = match &f.kind {
                FlowKind::Tcp { .. } => true,
                FlowKind::App { cfg } => cfg.kind != l4s_apps::AppKind::Query,
                _ => false,
            };
            let goodput_bytes = if tcp {
                m.goodput_bytes
            } else {
                m.received_bytes.saturating_sub(m.received * oh)
            };
            (
                &m.meter,
                l4s_measure::summary::FlowEnd {
                    sender: m.sender,
                    sender_base: m.sender_base.unwrap_or_default(),
                    goodput_bytes,
                },
            )
        })
        .collect();
    for (q, m) in queues.iter().zip(qs.iter_mut()) {
        if let Some(&(sum, n)) = probs.get(&q.link) {
            m.meter.prob_sum = sum;
            m.meter.prob_samples = n;
        }
    }
    let qs: Vec<(&l4s_measure::QueueMeter, l4s_measure::summary::QueueEnd)> = queues
        .iter()
        .zip(&qs)
        .map(|(q, m)| {
            let spec = &sc.links[q.link];
            (
                &m.meter,
                l4s_measure::summary::QueueEnd {
                    link: q.link,
                    aqm: spec.aqm.kind().to_string(),
                    // The rate at the end of the run, as the simulator reports it.
                    rate_bps: rate_at(spec, window.end, window.end).map_or(0, |r| r.bits_per_sec()),
                },
            )
        })
        .collect();
    l4s_measure::summary::summary(sc, "live", seed, window, &flows, &qs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4s_fwd::lateness::LatenessStats;

    #[test]
    fn steal_from_proc_stat() {
        assert_eq!(
            parse_cpu_line("cpu  2397245 834 182638 1944567 15693 0 22330 6336 0 0"),
            Some((6336, 2397245 + 834 + 182638 + 1944567 + 15693 + 22330 + 6336))
        );
        // Old kernels without the steal column, and other lines, give nothing.
        assert_eq!(parse_cpu_line("cpu  1 2 3 4 5 6 7"), None);
        assert_eq!(parse_cpu_line("cpu0 1 2 3 4 5 6 7 8"), None);
        assert_eq!(parse_cpu_line("cpu  1 2 x 4 5 6 7 8"), None);
    }

    #[test]
    fn testbed_check_flags_more_than_one_late_packet_in_a_thousand() {
        let el = |packets, over_1ms, p999_us, max_us| LatenessStats {
            packets,
            p50_us: 15.0,
            p99_us: 40.0,
            p999_us,
            max_us,
            over_1ms,
            over_1ms_total_ms: over_1ms as f64 * 2.0,
        };
        let clean = testbed_check(
            &[
                el(10_000, 5, 300.0, 2500.0),
                el(0, 0, 0.0, 0.0),
                el(10_000, 5, 200.0, 1800.0),
            ],
            Some(0.0),
        );
        assert_eq!((clean.packets, clean.late_over_1ms), (20_000, 10));
        assert!(!clean.disrupted, "{clean:?}");
        assert_eq!(
            (clean.worst_p99_ms, clean.worst_p999_ms, clean.max_ms),
            (0.04, 0.3, 2.5)
        );
        let bad = testbed_check(&[el(10_000, 30, 2600.0, 3000.0), el(10_000, 0, 100.0, 200.0)], None);
        assert!((bad.late_share - 0.0015).abs() < 1e-12 && bad.disrupted, "{bad:?}");
        assert_eq!(bad.cpu_steal, None);
        assert!(!testbed_check(&[], None).disrupted);
    }
}
