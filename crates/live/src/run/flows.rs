//! The flows of a live run: the kernel settings their TCP needs, their ports and meters,
//! and their threads (receivers and packet taps before time 0, senders after).

use super::{
    app_initiator, data_sender, initial_window, listen_node, GRACE, LINUX_INITIAL_WINDOW, MAX_GRACE, SENDER_SYSCTLS,
};
use crate::endpoints::{self, Clock, EndAt, FlowCtx, UdpReceiver, UdpSender};
use crate::meter::{flow_meter, SharedMeter, Window};
use crate::topology::Built;
use crate::udp::EcnUdpSocket;
use crate::LiveError;
use l4s_core::{Dur, Ecn, Time};
use l4s_scenario::{FlowKind, Scenario};
use l4s_transport::probe::{ProbeReceiver, ProbeSender};
use l4s_transport::udp_prague::{UdpPragueReceiver, UdpPragueSender};
use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Per-namespace kernel TCP settings: ECN negotiation (RFC 3168) on or off where the flows
/// open connections, the window restart after idle and tail loss probes as their senders
/// say (on is the kernel's default and the simulator's), and the routes' initial windows.
pub(super) fn configure_kernel_tcp(sc: &Scenario, built: &Built) -> Result<(), LiveError> {
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
    for f in &sc.flows {
        let Some((node, cfg)) = data_sender(f) else { continue };
        for s in SENDER_SYSCTLS.iter().filter(|s| !(s.on)(cfg)) {
            built.nodes[node].sysctl(s.sysctl, "0")?;
        }
    }
    // Initial windows other than Linux's 10 segments: `initcwnd` on the sender's route to
    // the receiver, and `initrwnd` on the receiver's route back so that its first window
    // lets them through (preflight checked that flows on one route agree).
    let mut metrics: BTreeMap<(usize, usize), Vec<(&str, u32)>> = BTreeMap::new();
    for f in &sc.flows {
        let Some((src, dst, iw)) = initial_window(f) else {
            continue;
        };
        if iw == LINUX_INITIAL_WINDOW {
            continue;
        }
        for (at, to, metric) in [(src, dst, "initcwnd"), (dst, src, "initrwnd")] {
            let m = metrics.entry((at, to)).or_default();
            if !m.iter().any(|(k, _)| *k == metric) {
                m.push((metric, iw));
            }
        }
    }
    for ((at, to), m) in metrics {
        route_metrics(&built.nodes[at], built.node_addr[to], &m)?;
    }
    Ok(())
}

/// Give `ns` a host route to `to` by the gateway and device of the route it has now, with
/// the metrics `m` (`initcwnd 32`).
fn route_metrics(ns: &l4s_fwd::netns::Netns, to: std::net::IpAddr, m: &[(&str, u32)]) -> Result<(), LiveError> {
    let dst = to.to_string();
    let now = ns.ip(&["route", "get", &dst])?;
    let words: Vec<&str> = now.split_whitespace().collect();
    let after = |k: &str| {
        words
            .iter()
            .position(|w| *w == k)
            .and_then(|i| words.get(i + 1))
            .copied()
    };
    let Some(dev) = after("dev") else {
        return Err(LiveError::run(format!(
            "`ip route get {dst}` named no device: {}",
            now.trim()
        )));
    };
    let host = format!("{dst}/{}", if to.is_ipv4() { 32 } else { 128 });
    let values: Vec<String> = m.iter().map(|(_, v)| v.to_string()).collect();
    let mut args = vec!["route", "replace", host.as_str()];
    if let Some(via) = after("via") {
        args.extend(["via", via]);
    }
    args.extend(["dev", dev]);
    for ((k, _), v) in m.iter().zip(&values) {
        args.extend([*k, v.as_str()]);
    }
    ns.ip(&args)?;
    Ok(())
}

/// Kernel TCP carries the flow's data (tcp flows and every application kind but query).
pub(super) fn kernel_tcp(f: &l4s_scenario::Flow) -> bool {
    match &f.kind {
        FlowKind::Tcp { .. } => true,
        FlowKind::App { cfg } => cfg.kind != l4s_apps::AppKind::Query,
        _ => false,
    }
}

/// The port each flow listens on: its own `port`, moved up past one another flow already
/// uses at the same node and transport.
pub(super) fn listen_ports(sc: &Scenario) -> Vec<u16> {
    let mut used: BTreeMap<(usize, bool, u16), usize> = BTreeMap::new();
    let mut ports = Vec::new();
    for (i, f) in sc.flows.iter().enumerate() {
        let (node, tcp) = (listen_node(f), kernel_tcp(f));
        let mut p = if f.port == 0 { 5000 } else { f.port };
        while used.contains_key(&(node, tcp, p)) {
            p = p.wrapping_add(1).max(1024);
        }
        used.insert((node, tcp, p), i);
        ports.push(p);
    }
    ports
}

/// Each flow's meter, on the run's statistics window.
pub(super) fn flow_meters(sc: &Scenario, window: Window) -> Vec<SharedMeter> {
    sc.flows
        .iter()
        .map(|f| {
            // Kernel TCP flows are measured on the wire by the taps, where a retransmission
            // is a send again: their time series has no per-interval loss.
            let mut m = flow_meter(window, f.latency_budget, !matches!(f.kind, FlowKind::Tcp { .. }));
            match &f.kind {
                FlowKind::Media { params } => {
                    m.media = Some(Box::new(l4s_measure::MediaMeter::for_params(
                        params,
                        sc.path_delay(f.src, f.dst),
                        window,
                    )));
                }
                FlowKind::App { .. } => m.app = Some(Box::new(l4s_measure::AppMeter::new(window))),
                _ => {}
            }
            SharedMeter::new(m)
        })
        .collect()
}

/// An endpoint thread (the result is whether it could enter its namespace).
type Thread = JoinHandle<Result<(), l4s_fwd::FwdError>>;

/// A receiver or tap says it is up (or why not), by flow index.
type Ready = (usize, Result<(), String>);

/// The endpoint threads of a run.
pub(super) struct FlowThreads<'a> {
    sc: &'a Scenario,
    built: &'a Built,
    ports: &'a [u16],
    meters: &'a [SharedMeter],
    clock: Clock,
    end: Time,
    /// When the receivers stop: a grace period after `end`, which the run may lengthen.
    recv_end: EndAt,
    /// Endpoint threads stop on this (the caller's `stop` only asks the run to end).
    stop: Arc<AtomicBool>,
    timeline: Option<Sender<crate::timeline::Event>>,
    receivers: Vec<Thread>,
    senders: Vec<Thread>,
    ready: (Sender<Ready>, Receiver<Ready>),
    expected_ready: usize,
}

impl<'a> FlowThreads<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        sc: &'a Scenario,
        built: &'a Built,
        ports: &'a [u16],
        meters: &'a [SharedMeter],
        clock: Clock,
        end: Time,
        timeline: Option<Sender<crate::timeline::Event>>,
    ) -> FlowThreads<'a> {
        FlowThreads {
            sc,
            built,
            ports,
            meters,
            clock,
            end,
            recv_end: EndAt::fixed(end + GRACE),
            stop: Arc::new(AtomicBool::new(false)),
            timeline,
            receivers: Vec::new(),
            senders: Vec::new(),
            ready: channel(),
            expected_ready: 0,
        }
    }

    /// Let the receivers read until `grace` after the end: at least [`GRACE`], at most
    /// [`MAX_GRACE`].
    pub fn receivers_grace(&self, grace: Dur) {
        let t = self.end + grace.clamp(GRACE, MAX_GRACE);
        if t > self.recv_end.get() {
            self.recv_end.set(t);
        }
    }

    fn ctx(&self, i: usize, recv: bool) -> FlowCtx {
        let f = &self.sc.flows[i];
        let end = self.end;
        FlowCtx {
            index: i as u32,
            name: f.name.clone(),
            clock: self.clock,
            start: Time(f.start.as_nanos()),
            stop: f.stop.map(|s| Time(s.as_nanos())).unwrap_or(end).min(end),
            end: if recv { self.recv_end.clone() } else { EndAt::fixed(end) },
            stop_flag: self.stop.clone(),
            meter: self.meters[i].clone(),
            ipv6: self.built.ipv6,
            timeline: self.timeline.clone(),
        }
    }

    /// Bind every flow's receiving side in its namespace (servers of application flows
    /// listen at their source).
    pub fn start_receivers(&mut self) -> Result<(), LiveError> {
        for (i, f) in self.sc.flows.iter().enumerate() {
            let ctx = self.ctx(i, true);
            let node = listen_node(f);
            let bind = SocketAddr::new(self.built.node_addr[node], self.ports[i]);
            let ready = self.ready.0.clone();
            let kind = f.kind.clone();
            let h = self.built.nodes[node].spawn("l4s-rx", move || receive(i, ctx, kind, bind, ready))?;
            self.receivers.push(h);
            self.expected_ready += 1;
        }
        Ok(())
    }

    /// Packet taps for kernel TCP flows and TCP applications, on both sides, opened before
    /// time 0. Returns how the timeline finds each flow's segments.
    pub fn start_taps(&mut self) -> Result<Vec<(u32, crate::tap::Match)>, LiveError> {
        let (built, ports) = (self.built, self.ports);
        let mut matches = Vec::new();
        for (i, f) in self.sc.flows.iter().enumerate() {
            let server = SocketAddr::new(built.node_addr[listen_node(f)], ports[i]);
            let flow_match = match &f.kind {
                FlowKind::Tcp { .. } => crate::tap::Match::ToServer(server),
                FlowKind::App { cfg } if cfg.kind == l4s_apps::AppKind::Sync => crate::tap::Match::ToServer(server),
                FlowKind::App { cfg } if cfg.kind != l4s_apps::AppKind::Query => {
                    crate::tap::Match::FromServer(server, built.node_addr[f.dst])
                }
                _ => continue,
            };
            matches.push((i as u32, flow_match));
            let inflight = crate::tap::SharedInFlight::default();
            let sender = crate::tap::Side::Sender {
                src: built.node_addr[f.src],
            };
            for (node, side) in [(f.src, sender), (f.dst, crate::tap::Side::Receiver)] {
                let ctx = self.ctx(i, true);
                let ready = self.ready.0.clone();
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
                self.receivers.push(h);
                self.expected_ready += 1;
            }
        }
        Ok(matches)
    }

    /// Wait until every receiver and tap is up (5 s at most each).
    pub fn wait_ready(&mut self) -> Result<(), LiveError> {
        let mut error = None;
        for _ in 0..std::mem::take(&mut self.expected_ready) {
            match self.ready.1.recv_timeout(std::time::Duration::from_secs(5)) {
                Ok((_, Ok(()))) => {}
                Ok((i, Err(e))) => {
                    error.get_or_insert(format!("flow {:?}: {e}", self.sc.flows[i].name));
                }
                Err(_) => {
                    error.get_or_insert("a receiver did not start within 5 s".to_string());
                    break;
                }
            }
        }
        error.map_or(Ok(()), |e| Err(LiveError::setup(e)))
    }

    /// Start every flow's sending side (application clients at the destination, sync
    /// sources at the source); each waits for its flow's start time. Endpoints that draw
    /// random numbers are seeded as in the simulator ([`Scenario::flow_seed`]).
    pub fn start_senders(&mut self) -> Result<(), LiveError> {
        for (i, f) in self.sc.flows.iter().enumerate() {
            let ctx = self.ctx(i, false);
            let dst = SocketAddr::new(self.built.node_addr[listen_node(f)], self.ports[i]);
            let bind = SocketAddr::new(self.built.node_addr[f.src], 0);
            let (kind, nominal) = (f.kind.clone(), f.nominal_ecn);
            let node = match &f.kind {
                FlowKind::App { .. } => app_initiator(f),
                _ => f.src,
            };
            let seed = self.sc.flow_seed(i);
            let h = self.built.nodes[node].spawn("l4s-tx", move || send(ctx, kind, dst, bind, nominal, seed))?;
            self.senders.push(h);
        }
        Ok(())
    }

    /// Tell every endpoint thread to stop now.
    pub fn abort(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Wait for the senders (they end at the end of the run), then the receivers and taps
    /// (a grace period later, for packets still in flight).
    pub fn join(&mut self) {
        for h in self.senders.drain(..).chain(self.receivers.drain(..)) {
            let _ = h.join();
        }
    }
}

impl Drop for FlowThreads<'_> {
    fn drop(&mut self) {
        // An early return (a setup error) stops every endpoint thread and waits for it.
        if !self.senders.is_empty() || !self.receivers.is_empty() {
            self.abort();
            self.join();
        }
    }
}

/// A flow's receiving side on its thread: bind, say so, serve until the end.
fn receive(i: usize, ctx: FlowCtx, kind: FlowKind, bind: SocketAddr, ready: Sender<Ready>) {
    let failed = |what: &str, e: std::io::Error| {
        let _ = ready.send((i, Err(format!("{what} {bind}: {e}"))));
    };
    match kind {
        FlowKind::App { cfg } => {
            let listen = if cfg.kind == l4s_apps::AppKind::Query {
                EcnUdpSocket::bind(bind).map(crate::apps::Listen::Udp)
            } else {
                TcpListener::bind(bind).and_then(|l| {
                    endpoints::prepare_tcp(l.as_fd(), &cfg.cc, endpoints::TcpOpts::of(&cfg.tcp))?;
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
                Err(e) => failed("listening on", e),
            }
        }
        FlowKind::Tcp { .. } => match TcpListener::bind(bind) {
            Ok(l) => {
                let _ = ready.send((i, Ok(())));
                endpoints::run_tcp_receiver(&ctx, l);
            }
            Err(e) => failed("listening on", e),
        },
        FlowKind::Media { params } => match EcnUdpSocket::bind(bind) {
            Ok(s) => {
                let _ = ready.send((i, Ok(())));
                let ep = l4s_media::MediaReceiver::new(&params, ctx.clock.now());
                crate::media::run_media_receiver(&ctx, s, ep);
            }
            Err(e) => failed("binding", e),
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
            Err(e) => failed("binding", e),
        },
    }
}

/// A flow's sending side on its thread.
fn send(ctx: FlowCtx, kind: FlowKind, dst: SocketAddr, bind: SocketAddr, nominal: Ecn, seed: u64) {
    let socket = || {
        EcnUdpSocket::bind(bind)
            .map_err(|e| ctx.meter.fail(format!("flow {}: binding {bind}: {e}", ctx.name)))
            .ok()
    };
    match kind {
        FlowKind::App { cfg } if cfg.kind == l4s_apps::AppKind::Sync => {
            crate::apps::run_sync_source(&ctx, &cfg, dst, seed)
        }
        FlowKind::App { cfg } => crate::apps::run_app_client(&ctx, &cfg, dst),
        FlowKind::Tcp { cc, bytes, sender, .. } => {
            endpoints::run_tcp_sender(&ctx, dst, &cc, endpoints::TcpOpts::of(&sender), bytes, nominal)
        }
        FlowKind::UdpPrague { sender, .. } => {
            if let Some(s) = socket() {
                let ep = UdpSender::Prague(Box::new(UdpPragueSender::new(sender, ctx.start)));
                endpoints::run_udp_sender(&ctx, s, dst, ep)
            }
        }
        FlowKind::Probe { sender, .. } => {
            if let Some(s) = socket() {
                let ep = UdpSender::Probe(Box::new(ProbeSender::new(sender, ctx.start)));
                endpoints::run_udp_sender(&ctx, s, dst, ep)
            }
        }
        FlowKind::Media { params } => {
            if let Some(s) = socket() {
                // The simulator's seed for the flow's endpoints (scene complexity).
                let ep = l4s_media::MediaSender::new(&params, l4s_core::Rng::new(seed), ctx.clock.now());
                crate::media::run_media_sender(&ctx, s, dst, ep)
            }
        }
    }
}
