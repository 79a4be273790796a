//! The simulated network: nodes with static routes, unidirectional links (a queue
//! discipline, a serialiser at the link rate, a delay line), and the endpoints of each
//! flow. [`Sim::run`] processes events until the scenario's end.

use crate::endpoints::{Ep, Out};
use crate::events::{Ev, EventQueue};
use crate::measure::{FlowMeter, LinkMeter};
use crate::packet::Packet;
use crate::timeline::Decision;
use l4s_aqm::{Dropped, Enqueued, Qdisc};
use l4s_core::{Dur, Rate, Rng, Time};
use l4s_scenario::Scenario;
use std::collections::VecDeque;

const NO_ROUTE: u32 = u32::MAX;

/// How often AQM probabilities are sampled for the summary's `mean_probability`.
pub const SAMPLE_INTERVAL: Dur = Dur::from_millis(10);

pub(crate) struct LinkRt {
    pub from: u32,
    pub to: u32,
    pub rate: Option<Rate>,
    pub delay: Dur,
    pub qdisc: Box<dyn Qdisc<Packet>>,
    /// Packet being serialised.
    pub tx: Option<Packet>,
    /// Packets on the wire, in arrival order.
    pub line: VecDeque<(Time, Packet)>,
    /// Deadline of the queue discipline's pending timer event.
    pub timer_at: Option<Time>,
    pub meter: LinkMeter,
    /// Recorded by `--pcap` (the scenario's bottleneck links).
    pub capture: bool,
    /// A middlebox rewriting the ECN field of packets entering the link.
    pub fault: Option<l4s_scenario::Fault>,
    /// Index of the next entry of the scenario link's `rate_changes`.
    pub next_rate_change: usize,
}

pub(crate) struct FlowRt {
    pub src: u32,
    pub dst: u32,
    /// Sender, receiver.
    pub ep: [Option<Ep>; 2],
    /// Deadline of each side's pending timer event.
    pub timer_at: [Option<Time>; 2],
    /// Time a timer last fired with no progress (guards a stuck endpoint).
    pub last_fire: [Time; 2],
    pub meter: FlowMeter,
    /// Media flows: per-frame measurement.
    pub media: Option<Box<crate::measure::MediaMeter>>,
    /// Application flows: completion times.
    pub app: Option<Box<crate::measure::AppMeter>>,
}

/// A running simulation of one scenario.
pub struct Sim {
    pub(crate) now: Time,
    pub(crate) end: Time,
    pub(crate) window_start: Time,
    pub(crate) q: EventQueue,
    /// routes[node][dst] = link index.
    routes: Vec<Vec<u32>>,
    pub(crate) links: Vec<LinkRt>,
    pub(crate) flows: Vec<FlowRt>,
    pub(crate) scenario: Scenario,
    drops: Vec<Dropped<Packet>>,
    next_id: u64,
    pub(crate) in_window: bool,
    /// Packets that reached a node with no route to their destination (a bug if non-zero).
    pub(crate) unroutable: u64,
    pub(crate) snapshots: Option<crate::snapshot::Snapshots>,
    pub(crate) capture: Option<crate::capture::Capture>,
    pub(crate) tracker: Option<crate::timeline::Tracker>,
}

impl Sim {
    /// Build the network of a validated scenario. `seed` overrides the scenario's seed and
    /// `duration` its length when given.
    pub fn new(mut scenario: Scenario, seed: Option<u64>, duration: Option<Dur>) -> Result<Sim, String> {
        if let Some(s) = seed {
            scenario.seed = s;
        }
        if let Some(d) = duration {
            if d.is_zero() {
                return Err("the duration must be above zero".into());
            }
            scenario.duration = d;
            if scenario.warmup >= d {
                return Err(format!(
                    "--duration {d} is not longer than the scenario's warm-up ({})",
                    scenario.warmup
                ));
            }
        }
        let n = scenario.nodes.len();
        let mut links = Vec::with_capacity(scenario.links.len());
        for (i, l) in scenario.links.iter().enumerate() {
            let rng = Rng::derive(scenario.seed, 0x1000 + i as u64);
            links.push(LinkRt {
                from: l.from as u32,
                to: l.to as u32,
                rate: l.rate,
                delay: l.delay,
                qdisc: l4s_aqm::config::build(&l.aqm, rng),
                tx: None,
                line: VecDeque::new(),
                timer_at: None,
                meter: LinkMeter::default(),
                capture: l.bottleneck,
                fault: l.fault,
                next_rate_change: 0,
            });
        }
        let routes = compute_routes(n, &links);
        let flows = scenario
            .flows
            .iter()
            .map(|f| FlowRt {
                src: f.src as u32,
                dst: f.dst as u32,
                ep: [None, None],
                timer_at: [None, None],
                last_fire: [Time::MAX, Time::MAX],
                meter: FlowMeter {
                    budget: f.latency_budget,
                    ..FlowMeter::default()
                },
                media: None,
                app: match f.kind {
                    l4s_scenario::FlowKind::App { .. } => Some(Box::default()),
                    _ => None,
                },
            })
            .collect();
        let end = Time(scenario.duration.as_nanos());
        let window_start = Time(scenario.warmup.as_nanos());
        let mut sim = Sim {
            now: Time::ZERO,
            end,
            window_start,
            q: EventQueue::default(),
            routes,
            links,
            flows,
            scenario,
            drops: Vec::new(),
            next_id: 0,
            in_window: false,
            unroutable: 0,
            snapshots: None,
            capture: None,
            tracker: None,
        };
        for i in 0..sim.flows.len() {
            if let l4s_scenario::FlowKind::Media { params } = &sim.scenario.flows[i].kind {
                let f = &sim.flows[i];
                let cfg = l4s_media::FrameMeterConfig {
                    frame_interval: params.frame_interval,
                    deadline: params.frame_deadline,
                    stall_gap: params.stall_gap,
                    base_owd: sim.path_delay(f.src, f.dst),
                };
                sim.flows[i].media = Some(Box::new(crate::measure::MediaMeter::new(cfg)));
            }
        }
        // The window opens before anything else happening at the same instant, so that a
        // zero warm-up counts the very first packet.
        sim.q.push(window_start, Ev::WindowStart);
        for i in 0..sim.flows.len() {
            let f = &sim.scenario.flows[i];
            sim.q.push(Time(f.start.as_nanos()), Ev::FlowStart(i as u32));
            if let Some(stop) = f.stop {
                sim.q.push(Time(stop.as_nanos()), Ev::FlowStop(i as u32));
            }
        }
        sim.q.push(window_start, Ev::Sample);
        for (l, link) in sim.scenario.links.iter().enumerate() {
            if let Some((at, _)) = link.rate_changes.first() {
                sim.q.push(Time(at.as_nanos()), Ev::RateChange(l as u32));
            }
        }
        for l in 0..sim.links.len() {
            sim.arm_qdisc_timer(l);
        }
        Ok(sim)
    }

    /// Base (propagation-only) RTT of a flow's path.
    pub fn base_rtt(&self, flow: usize) -> Dur {
        let f = &self.flows[flow];
        self.path_delay(f.src, f.dst) + self.path_delay(f.dst, f.src)
    }

    fn path_delay(&self, mut at: u32, dst: u32) -> Dur {
        let mut d = Dur::ZERO;
        let mut hops = 0;
        while at != dst && hops <= self.links.len() {
            let l = self.routes[at as usize][dst as usize];
            if l == NO_ROUTE {
                break;
            }
            d += self.links[l as usize].delay;
            at = self.links[l as usize].to;
            hops += 1;
        }
        d
    }

    /// Run to the end of the scenario. `progress` is called about every simulated second
    /// with the current simulated time.
    pub fn run(&mut self, progress: &mut dyn FnMut(Time)) {
        let mut next_progress = Time::from_secs(1);
        while let Some((t, ev)) = self.q.pop_until(self.end) {
            self.now = t;
            if t >= next_progress {
                progress(t);
                next_progress = Time(t.as_nanos() - t.as_nanos() % 1_000_000_000) + Dur::from_secs(1);
            }
            match ev {
                Ev::TxDone(l) => self.tx_done(l as usize),
                Ev::Arrive(l) => self.arrive(l as usize),
                Ev::QdiscTimer(l) => self.qdisc_timer(l as usize),
                Ev::Endpoint(f, side) => self.endpoint_timer(f as usize, side as usize),
                Ev::FlowStart(f) => self.flow_start(f as usize),
                Ev::FlowStop(f) => self.flow_stop(f as usize),
                Ev::WindowStart => self.window_start_now(),
                Ev::Sample => self.sample(),
                Ev::Snapshot => self.snapshot(),
                Ev::RateChange(l) => self.rate_change(l as usize),
            }
        }
        self.now = self.end;
        progress(self.end);
    }

    pub fn events_processed(&self) -> u64 {
        self.q.popped
    }

    // ---- links ----

    /// The next scheduled rate of link `l` takes effect. The packet being serialised
    /// finishes at the old rate; the next one goes at the new rate.
    fn rate_change(&mut self, l: usize) {
        let changes = &self.scenario.links[l].rate_changes;
        let link = &mut self.links[l];
        if let Some(&(_, rate)) = changes.get(link.next_rate_change) {
            link.rate = Some(rate);
            link.next_rate_change += 1;
            if let Some(&(at, _)) = changes.get(link.next_rate_change) {
                self.q.push(Time(at.as_nanos()), Ev::RateChange(l as u32));
            }
        }
    }

    fn arm_qdisc_timer(&mut self, l: usize) {
        let link = &mut self.links[l];
        if let Some(t) = link.qdisc.next_timeout() {
            if link.timer_at != Some(t) {
                link.timer_at = Some(t);
                self.q.push(t.max(self.now), Ev::QdiscTimer(l as u32));
            }
        } else {
            link.timer_at = None;
        }
    }

    fn qdisc_timer(&mut self, l: usize) {
        if self.links[l].timer_at != Some(self.now) {
            return; // superseded
        }
        self.links[l].timer_at = None;
        self.links[l].qdisc.on_timeout(self.now);
        self.arm_qdisc_timer(l);
    }

    /// A packet enters link `l` at its sending node.
    fn link_send(&mut self, l: usize, mut pkt: Packet) {
        let now = self.now;
        let link = &mut self.links[l];
        if let Some(f) = link.fault {
            if now.as_nanos() >= f.start.as_nanos() {
                apply_fault(f.kind, &mut pkt);
            }
        }
        if link.rate.is_none() {
            if link.delay.is_zero() {
                let to = link.to;
                self.node_receive(to, pkt);
            } else {
                let at = now + link.delay;
                link.line.push_back((at, pkt));
                if link.line.len() == 1 {
                    self.q.push(at, Ev::Arrive(l as u32));
                }
            }
            return;
        }
        match link.qdisc.enqueue(pkt, now) {
            Enqueued::Queued { .. } => {
                if link.tx.is_none() {
                    self.start_tx(l);
                }
            }
            Enqueued::Dropped(d) => {
                let in_window = self.in_window;
                self.account_drop(&d.pkt, in_window);
                self.track_hop(&d.pkt, l, d.queue, d.sojourn, Decision::Drop);
            }
        }
        // Disciplines that push out other packets on arrival (FQ-CoDel overflow).
        self.links[l].qdisc.drain_enqueue_drops(&mut self.drops);
        self.flush_drops(l);
        self.arm_qdisc_timer(l);
    }

    fn account_drop(&mut self, pkt: &Packet, in_window: bool) {
        if pkt.forward && pkt.is_data {
            let m = &mut self.flows[pkt.flow as usize].meter;
            m.snap_lost += 1;
            if in_window {
                m.lost += 1;
            }
        }
    }

    fn start_tx(&mut self, l: usize) {
        let now = self.now;
        let in_window = self.in_window;
        let snapshots = self.snapshots.is_some();
        let link = &mut self.links[l];
        let got = link.qdisc.dequeue(now, &mut self.drops);
        if let Some(d) = got {
            let rate = link.rate.unwrap_or(Rate::ZERO);
            let tx_time = rate.tx_time(d.pkt.size as u64);
            if in_window {
                link.meter.on_dequeue(d.queue, d.sojourn, tx_time);
            }
            if snapshots {
                link.meter.on_dequeue_any(d.queue, d.sojourn, tx_time);
            }
            let capture = link.capture && self.capture.is_some();
            if capture {
                self.capture_packet(&d.pkt);
            }
            let decision = if d.marked { Decision::Mark } else { Decision::Pass };
            self.track_hop(&d.pkt, l, d.queue, d.sojourn, decision);
            let link = &mut self.links[l];
            link.tx = Some(d.pkt);
            self.q.push(now + tx_time, Ev::TxDone(l as u32));
        }
        self.flush_drops(l);
        self.arm_qdisc_timer(l);
    }

    /// Account the packets link `l`'s discipline dropped.
    fn flush_drops(&mut self, l: usize) {
        if !self.drops.is_empty() {
            let in_window = self.in_window;
            let mut drops = std::mem::take(&mut self.drops);
            for d in drops.drain(..) {
                self.account_drop(&d.pkt, in_window);
                self.track_hop(&d.pkt, l, d.queue, d.sojourn, Decision::Drop);
            }
            self.drops = drops;
        }
    }

    fn tx_done(&mut self, l: usize) {
        let now = self.now;
        let link = &mut self.links[l];
        let Some(pkt) = link.tx.take() else { return };
        if link.delay.is_zero() {
            let to = link.to;
            self.start_tx(l);
            self.node_receive(to, pkt);
            return;
        }
        let at = now + link.delay;
        link.line.push_back((at, pkt));
        if link.line.len() == 1 {
            self.q.push(at, Ev::Arrive(l as u32));
        }
        self.start_tx(l);
    }

    fn arrive(&mut self, l: usize) {
        let link = &mut self.links[l];
        let Some((_, pkt)) = link.line.pop_front() else {
            return;
        };
        if let Some((next, _)) = link.line.front() {
            self.q.push(*next, Ev::Arrive(l as u32));
        }
        let to = link.to;
        self.node_receive(to, pkt);
    }

    fn node_receive(&mut self, node: u32, pkt: Packet) {
        if pkt.dst == node {
            self.deliver(pkt);
            return;
        }
        let l = self.routes[node as usize][pkt.dst as usize];
        if l == NO_ROUTE {
            self.unroutable += 1;
            return;
        }
        self.link_send(l as usize, pkt);
    }

    // ---- endpoints ----

    fn deliver(&mut self, pkt: Packet) {
        let f = pkt.flow as usize;
        let side = if pkt.forward { 1 } else { 0 };
        let now = self.now;
        if pkt.forward && pkt.is_data {
            self.track_arrival(&pkt);
            let snapshots = self.snapshots.is_some();
            let m = &mut self.flows[f].meter;
            if snapshots {
                m.on_arrival_any(now, &pkt);
            }
            if self.in_window {
                m.on_arrival(now, &pkt);
            }
        }
        let fl = &mut self.flows[f];
        let Some(ep) = fl.ep[side].as_mut() else {
            return;
        };
        ep.handle(now, &pkt.payload, pkt.size, pkt.ecn);
        if side == 0 {
            if let Some(rtt) = ep.take_rtt_sample() {
                if self.in_window {
                    fl.meter.rtt.record(rtt);
                }
            }
        }
        self.service(f, side);
    }

    /// Collect everything an endpoint wants to send now and re-arm its timer.
    fn service(&mut self, f: usize, side: usize) {
        let now = self.now;
        if side == 1 {
            self.collect_app_events(f);
        }
        loop {
            let Some(ep) = self.flows[f].ep[side].as_mut() else {
                return;
            };
            let Some(out) = ep.poll(now) else { break };
            self.emit(f, side, out);
        }
        let fl = &mut self.flows[f];
        let Some(ep) = fl.ep[side].as_ref() else {
            return;
        };
        match ep.poll_timeout() {
            Some(t) => {
                // Never schedule in the past; a timer that fires at the same instant twice
                // without progress is pushed 1 ns later so a stuck endpoint cannot hang the run.
                let mut at = t.max(now);
                if at == now && fl.last_fire[side] == now {
                    at = now + Dur(1);
                }
                if fl.timer_at[side] != Some(at) {
                    fl.timer_at[side] = Some(at);
                    self.q.push(at, Ev::Endpoint(f as u32, side as u8));
                }
            }
            None => fl.timer_at[side] = None,
        }
    }

    /// Frames a media receiver completed and transfers an application receiver finished.
    #[inline]
    fn collect_app_events(&mut self, f: usize) {
        let (window_start, in_window) = (self.window_start, self.in_window);
        let fl = &mut self.flows[f];
        match (fl.ep[1].as_mut(), fl.media.as_mut(), fl.app.as_mut()) {
            (Some(Ep::MediaR(r)), Some(m), _) => {
                r.drain_frames(&mut m.buf);
                if !m.buf.is_empty() {
                    m.on_frames();
                }
            }
            (Some(Ep::AppR(r)), _, Some(a)) => {
                r.drain_completions(&mut a.buf);
                if !a.buf.is_empty() {
                    a.on_completions(window_start, in_window);
                }
            }
            _ => {}
        }
    }

    fn emit(&mut self, f: usize, side: usize, out: Out) {
        let now = self.now;
        let spec = &self.scenario.flows[f];
        let fl = &mut self.flows[f];
        let forward = side == 0;
        let (from, dst) = if forward { (fl.src, fl.dst) } else { (fl.dst, fl.src) };
        if forward && out.is_data {
            fl.meter.on_send(self.in_window, out.ecn);
        }
        let pkt = Packet {
            id: self.next_id,
            flow: f as u32,
            forward,
            dst,
            size: out.size,
            ecn: out.ecn,
            ecn_sent: out.ecn,
            dscp: spec.dscp,
            dst_port: spec.port,
            sent_at: now,
            is_data: out.is_data,
            payload: out.payload,
        };
        self.next_id += 1;
        self.track_sent(&pkt);
        let l = self.routes[from as usize][dst as usize];
        if l == NO_ROUTE {
            self.unroutable += 1;
            return;
        }
        self.link_send(l as usize, pkt);
    }

    fn endpoint_timer(&mut self, f: usize, side: usize) {
        let now = self.now;
        let fl = &mut self.flows[f];
        if fl.timer_at[side] != Some(now) {
            return; // superseded
        }
        fl.timer_at[side] = None;
        let Some(ep) = fl.ep[side].as_mut() else {
            return;
        };
        ep.handle_timeout(now);
        fl.last_fire[side] = now;
        self.service(f, side);
    }

    fn flow_start(&mut self, f: usize) {
        let now = self.now;
        let seed = Rng::derive(self.scenario.seed, 0x3000 + f as u64).next_u64();
        match Ep::pair(&self.scenario.flows[f].kind, now, seed) {
            Ok((s, r)) => {
                self.flows[f].ep = [Some(s), Some(r)];
                self.flows[f].meter.started = true;
                self.service(f, 0);
                self.service(f, 1);
            }
            Err(e) => {
                // Names were validated when the scenario was loaded; keep going without this flow.
                eprintln!("warning: flow {:?} could not start: {e}", self.scenario.flows[f].name);
            }
        }
    }

    fn flow_stop(&mut self, f: usize) {
        let now = self.now;
        if let Some(ep) = self.flows[f].ep[0].as_mut() {
            ep.close(now);
        }
        self.service(f, 0);
    }

    fn window_start_now(&mut self) {
        self.in_window = true;
        for fl in &mut self.flows {
            let base = [
                fl.ep[0].as_ref().map(|e| e.stats()),
                fl.ep[1].as_ref().map(|e| e.stats()),
            ];
            fl.meter.baseline = base;
            if let Some(m) = fl.media.as_mut() {
                m.window = Some(l4s_media::FrameMeter::new(m.cfg, self.window_start));
                if let Some(Ep::MediaS(s)) = fl.ep[0].as_ref() {
                    m.baseline = Some(s.media_stats());
                }
            }
        }
        for link in &mut self.links {
            link.meter.baseline = link.qdisc.stats();
        }
    }

    fn sample(&mut self) {
        for fl in &mut self.flows {
            if let (Some(m), Some(Ep::MediaS(s))) = (fl.media.as_mut(), fl.ep[0].as_ref()) {
                m.sample_target(s.media_stats().target_bitrate.bits_per_sec() as f64);
            }
        }
        for link in &mut self.links {
            if let Some(p) = link.qdisc.probability() {
                link.meter.prob_sum += p;
                link.meter.prob_samples += 1;
            }
        }
        let next = self.now + SAMPLE_INTERVAL;
        if next <= self.end {
            self.q.push(next, Ev::Sample);
        }
    }

    /// Link index by name.
    pub fn link_index(&self, name: &str) -> Option<usize> {
        self.scenario.links.iter().position(|l| l.name == name)
    }
}

/// A faulty middlebox rewrites the ECN field (RFC 9331 §5 forbids each of these).
fn apply_fault(kind: l4s_scenario::FaultKind, pkt: &mut Packet) {
    use l4s_core::Ecn;
    use l4s_scenario::FaultKind;
    pkt.ecn = match (kind, pkt.ecn) {
        (FaultKind::Bleach, _) => Ecn::NotEct,
        (FaultKind::Remark, Ecn::Ect1) => Ecn::Ect0,
        (FaultKind::MarkAll, e) if e.is_ect() => Ecn::Ce,
        (_, e) => e,
    };
}

/// Shortest-hop routes, ties broken by link order (deterministic).
fn compute_routes(n: usize, links: &[LinkRt]) -> Vec<Vec<u32>> {
    let mut routes = vec![vec![NO_ROUTE; n]; n];
    for (src, row) in routes.iter_mut().enumerate() {
        // BFS from src; remember the first link taken.
        let mut first = vec![NO_ROUTE; n];
        let mut seen = vec![false; n];
        seen[src] = true;
        let mut q = VecDeque::new();
        for (i, l) in links.iter().enumerate() {
            if l.from as usize == src && !seen[l.to as usize] {
                seen[l.to as usize] = true;
                first[l.to as usize] = i as u32;
                q.push_back(l.to as usize);
            }
        }
        while let Some(x) = q.pop_front() {
            for l in links.iter() {
                if l.from as usize == x && !seen[l.to as usize] {
                    seen[l.to as usize] = true;
                    first[l.to as usize] = first[x];
                    q.push_back(l.to as usize);
                }
            }
        }
        *row = first;
    }
    routes
}
