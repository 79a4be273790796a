//! The simulated network: nodes with static routes, unidirectional links (a queue
//! discipline, a serialiser at the link rate, a delay line), and the endpoints of each
//! flow. [`Sim::run`] processes events until the scenario's end.

use crate::endpoints::{Ep, Out};
use crate::events::{Ev, EventQueue};
use crate::packet::{Packet, Payloads};
use crate::timeline::Decision;
use l4s_aqm::{QueueId, QueueStats};
use l4s_core::{Dur, Rng, Time};
use l4s_link::{Action, Departure, Io, Link, Loss, LossKind, Observer, Timer};
use l4s_measure::{AppMeter, FlowMeter, LossCount, MediaMeter, QueueMeter, Window};
use l4s_scenario::Scenario;
use l4s_transport::EndpointStats;

/// How often AQM probabilities are sampled for the summary's `mean_probability`.
pub const SAMPLE_INTERVAL: Dur = Dur::from_millis(10);

/// A scenario link: its model (port 0 at the sending node, port 1 at the receiving one)
/// and its measurement.
pub(crate) struct LinkRt {
    pub to: u32,
    /// The link whose model carries this one's packets (itself, or the first link of the
    /// shared medium it crosses), and the ports they enter and leave it at.
    pub owner: u32,
    pub ports: (l4s_link::Port, l4s_link::Port),
    /// The node at each port of this link's own model.
    pub port_nodes: Vec<u32>,
    /// An ideal wire (no rate, delay, fault or loss): a packet put on it is at the far
    /// node at once, as the model would hand it on, without calling the model.
    pub ideal: bool,
    pub model: Box<dyn Link<Packet>>,
    /// One per queue of the model (`Link::queues`), with the name it is reported under.
    pub queues: Vec<QueueRt>,
    /// Recorded by `--pcap` (the scenario's bottleneck links).
    pub capture: bool,
    /// The model's counters when the window opened (boxed, as the next one: read once a
    /// run, they kept the fields read for every packet hundreds of bytes apart).
    pub stats_base: Box<l4s_link::LinkStats>,
    /// A Wi-Fi BSS's counters when the window opened.
    pub wifi_base: Option<Box<l4s_link::wifi::BssStats>>,
    /// The model delivers each packet when its serialisation starts, and the simulator
    /// hands it at once to the next link ([`Sim::hand_on`]).
    pub handoff: bool,
    /// A wire that only delays ([`Link::pass_through`]), that hands its packets on and
    /// that no link hands packets on to early: a packet put on it goes to the next link at
    /// once, due this much later, as the model would hand it on, without calling the model.
    pub pass: Option<l4s_core::Dur>,
    /// A wire that only delays ([`Link::delay_line`]) into its packets' destination: the
    /// simulator keeps its line, with the model's wake-ups, without calling the model.
    pub line: Option<Line>,
}

/// The packets on a [`Link::delay_line`] the simulator keeps, by due time at port 1.
pub(crate) struct Line {
    delay: l4s_core::Dur,
    /// Its [`LineGroup`].
    group: u32,
    /// Its packets, while its group does not hold them.
    q: std::collections::VecDeque<(Time, Packet)>,
    /// While its group holds its packets: how many, and the sequence number of the first
    /// one's wake-up (taken when it became the first, as the model's push would).
    held: u32,
    head_seq: u64,
}

/// Lines the simulator keeps that one link feeds, with one delay: their packets come in
/// the order of their due times, so while each comes due strictly after the one before,
/// one queue in that order holds them all (`merged`), each line's first packet is the
/// first of its line in it, and the event queue needs to hold only the wake-up of the
/// group's first packet: every other line's wake-up is due later, and goes in when its
/// packet becomes the group's first, under the sequence number it took when its packet
/// became its line's first. The events and their order are those of the lines kept one
/// by one; a shorter event queue is what it saves (at 1 Gbit/s with twenty flows, a
/// line's next wake-up went in behind about twenty others). A packet due no later than
/// the one before it ends the merge for good: each line takes its packets back and the
/// wake-ups not in the event queue go in.
#[derive(Default)]
pub(crate) struct LineGroup {
    merged: bool,
    fifo: std::collections::VecDeque<(Time, u32, Packet)>,
}

/// One queue of a link and its measurement.
pub(crate) struct QueueRt {
    pub name: String,
    pub meter: QueueMeter,
    /// The queue's own counters when the window opened, and at the last snapshot.
    pub window_base: Vec<(QueueId, QueueStats)>,
    pub snap_base: Vec<(QueueId, QueueStats)>,
    /// The radio counters of the queue's own direction (one UE's of a cell) when the
    /// window opened.
    pub radio_base: Option<l4s_link::LinkStats>,
    /// The flows whose data packets this queue forwarded, sorted: kept for a queue that is
    /// one of several of its model (a Wi-Fi station's), where the routes cannot tell.
    pub data_flows: Option<Vec<u32>>,
}

pub(crate) struct FlowRt {
    pub src: u32,
    pub dst: u32,
    /// Sender, receiver.
    pub ep: [Option<Ep>; 2],
    /// Time a timer last fired with no progress (guards a stuck endpoint).
    pub last_fire: [Time; 2],
    pub meter: FlowMeter,
    /// The receiver's statistics when the window opened (for the goodput).
    pub receiver_base: Option<EndpointStats>,
    /// Frames a media receiver completed and transfers an application receiver finished,
    /// on their way to the meter.
    pub frames: Vec<l4s_media::FrameDone>,
    pub completions: Vec<l4s_apps::Completion>,
}

/// A running simulation of one scenario.
pub struct Sim {
    pub(crate) now: Time,
    pub(crate) end: Time,
    pub(crate) window_start: Time,
    /// Where a stopped run ended ([`Sim::run_until_stopped`]).
    pub interrupted_at: Option<Time>,
    pub(crate) q: EventQueue,
    pub(crate) links: Vec<LinkRt>,
    /// The groups of the lines the simulator keeps ([`LinkRt::line`]).
    line_groups: Vec<LineGroup>,
    /// Where a packet at a node goes for its destination ([`Hop`]), for every pair of
    /// nodes (`hops[node · n + dst]`) while the routes are a full table; else empty.
    hops: Vec<Hop>,
    /// The number of nodes, the table's row length.
    hops_n: usize,
    /// The links that take packets before they arrive ([`Link::accepts_early`]), which are
    /// caught up before they are queried.
    early: Vec<usize>,
    /// Whether the links were asked to defer their own steps ([`Sim::defer_link_steps`]).
    steps_deferred: bool,
    pub(crate) flows: Vec<FlowRt>,
    pub(crate) scenario: Scenario,
    /// The actions of the link calls in progress (see [`Sim::with_link`]).
    actions: Vec<Action<Packet>>,
    /// The transport headers of the packets alive.
    pub(crate) payloads: Payloads,
    next_id: u64,
    pub(crate) in_window: bool,
    /// Packets that reached a node with no route to their destination (a bug if non-zero).
    pub(crate) unroutable: u64,
    pub(crate) snapshots: Option<l4s_measure::snapshot::Snapshots>,
    pub(crate) capture: Option<crate::capture::Capture>,
    pub(crate) tracker: Option<crate::timeline::Tracker>,
    /// The order of every event processed, folded into one number (tests compare runs
    /// event by event with it).
    #[cfg(test)]
    trail: u64,
}

impl Sim {
    /// Build the network of a validated scenario. `seed` overrides the scenario's seed and
    /// `duration` its length when given.
    pub fn new(mut scenario: Scenario, seed: Option<u64>, duration: Option<Dur>) -> Result<Sim, String> {
        scenario.apply_overrides(seed, duration)?;
        let end = Time(scenario.duration.as_nanos());
        let window_start = Time(scenario.warmup.as_nanos());
        let window = Window {
            start: window_start,
            end,
        };
        let mut links = Vec::with_capacity(scenario.links.len());
        for (i, l) in scenario.links.iter().enumerate() {
            let rng = Rng::derive(scenario.seed, 0x1000 + i as u64);
            // A link across a shared medium that another link owns has no model of its own.
            let shared = l.medium.as_ref().filter(|m| m.owner != i);
            let model: Box<dyn Link<Packet>> = match shared {
                Some(_) => Box::new(l4s_link::Inert),
                None => l4s_link::build(&l.config(scenario.duration), rng),
            };
            let reported = l.medium.as_ref().map_or(&l.name, |m| &m.name);
            let several = model.queues().len() > 1;
            let queues = model
                .queues()
                .iter()
                .map(|q| QueueRt {
                    name: l4s_measure::summary::queue_name(reported, &q.label),
                    meter: QueueMeter::new(window, q.subqueues, false),
                    window_base: Vec::new(),
                    snap_base: Vec::new(),
                    radio_base: None,
                    data_flows: several.then(Vec::new),
                })
                .collect();
            let (owner, ports, port_nodes) = match &l.medium {
                Some(m) => (
                    m.owner as u32,
                    (m.from, m.to),
                    m.nodes.iter().map(|&n| n as u32).collect(),
                ),
                None => (i as u32, (0, 1), vec![l.from as u32, l.to as u32]),
            };
            links.push(LinkRt {
                to: l.to as u32,
                owner,
                ports,
                port_nodes,
                ideal: l.medium.is_none()
                    && l.rate.is_none()
                    && l.delay.is_zero()
                    && l.fault.is_none()
                    && l.loss.is_none(),
                queues,
                model,
                capture: l.bottleneck,
                stats_base: Box::default(),
                wifi_base: None,
                handoff: false,
                pass: None,
                line: None,
            });
        }
        let (early, line_groups) = plan_handoffs(&scenario, &mut links);
        let hops = hop_table(&scenario, &links);
        let flows = scenario
            .flows
            .iter()
            .map(|f| {
                let mut meter = FlowMeter::new(window, f.latency_budget, LossCount::Dropped, false);
                match &f.kind {
                    l4s_scenario::FlowKind::Media { params } => {
                        meter.media = Some(Box::new(MediaMeter::for_params(
                            params,
                            scenario.path_delay(f.src, f.dst),
                            window,
                        )));
                    }
                    l4s_scenario::FlowKind::App { .. } => meter.app = Some(Box::new(AppMeter::new(window))),
                    _ => {}
                }
                FlowRt {
                    src: f.src as u32,
                    dst: f.dst as u32,
                    ep: [None, None],
                    last_fire: [Time::MAX, Time::MAX],
                    meter,
                    receiver_base: None,
                    frames: Vec::new(),
                    completions: Vec::new(),
                }
            })
            .collect();
        let mut sim = Sim {
            now: Time::ZERO,
            end,
            window_start,
            interrupted_at: None,
            q: EventQueue::with_flows(scenario.flows.len()),
            links,
            early,
            line_groups,
            hops,
            hops_n: scenario.nodes.len(),
            steps_deferred: false,
            flows,
            scenario,
            actions: Vec::new(),
            payloads: Payloads::default(),
            next_id: 0,
            in_window: false,
            unroutable: 0,
            snapshots: None,
            capture: None,
            tracker: None,
            #[cfg(test)]
            trail: 0,
        };
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
        // Time 0 of the run: the links' rate schedules and queue timers start.
        for l in 0..sim.links.len() {
            sim.with_link(l, |model, io| model.start(Time::ZERO, io));
        }
        Ok(sim)
    }

    /// Base (propagation-only) RTT of a flow's path.
    pub fn base_rtt(&self, flow: usize) -> Dur {
        let f = &self.flows[flow];
        self.scenario.base_rtt(f.src as usize, f.dst as usize)
    }

    /// Run to the end of the scenario. `progress` is called about every simulated second
    /// with the current simulated time.
    pub fn run(&mut self, progress: &mut dyn FnMut(Time)) {
        self.run_until_stopped(progress, None);
    }

    /// [`Sim::run`], ending early once `stop` is set (looked at every 65 536 events and
    /// every simulated second): the
    /// run then ends at the time reached, which [`Sim::interrupted_at`] records, and the
    /// results cover the statistics window up to it (from the start of the run when the
    /// warm-up had not ended).
    pub fn run_until_stopped(&mut self, progress: &mut dyn FnMut(Time), stop: Option<&std::sync::atomic::AtomicBool>) {
        self.defer_link_steps();
        let mut next_progress = Time::from_secs(1);
        let mut n: u32 = 0;
        while let Some((t, ev)) = self.q.pop_until(self.end) {
            self.now = t;
            #[cfg(test)]
            self.fold_trail(t, ev);
            n = n.wrapping_add(1);
            if (n & 0xffff == 0 || t >= next_progress)
                && stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
            {
                self.interrupted_at = Some(t);
                self.end = t;
                if t < self.window_start {
                    // The warm-up had not ended: the meters have counted from the start.
                    self.window_start = Time::ZERO;
                }
                break;
            }
            if t >= next_progress {
                progress(t);
                next_progress = Time(t.as_nanos() - t.as_nanos() % 1_000_000_000) + Dur::from_secs(1);
            }
            match ev {
                Ev::Link(l, timer) => self.link_timer(l as usize, timer),
                Ev::Endpoint(f, side) => self.endpoint_timer(f as usize, side as usize),
                Ev::FlowStart(f) => self.flow_start(f as usize),
                Ev::FlowStop(f) => self.flow_stop(f as usize),
                Ev::WindowStart => self.window_start_now(),
                Ev::Sample => self.sample(),
                Ev::Snapshot => self.snapshot(),
            }
        }
        self.now = self.end;
        // Every event due by the end ran: so do the arrivals due by then.
        self.catch_up_links();
        progress(self.end);
    }

    pub fn events_processed(&self) -> u64 {
        self.q.popped
    }

    #[cfg(test)]
    fn fold_trail(&mut self, t: Time, ev: Ev) {
        let (kind, a, b) = match ev {
            Ev::Link(l, timer) => (0, u64::from(l), u64::from(timer)),
            Ev::Endpoint(f, side) => (1, u64::from(f), u64::from(side)),
            Ev::FlowStart(f) => (2, u64::from(f), 0),
            Ev::FlowStop(f) => (3, u64::from(f), 0),
            Ev::WindowStart => (4, 0, 0),
            Ev::Sample => (5, 0, 0),
            Ev::Snapshot => (6, 0, 0),
        };
        for x in [t.as_nanos(), kind, a, b] {
            self.trail = (self.trail ^ x).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    // ---- links ----

    /// Call into link `l`'s model with the current time, then carry out what it asked for
    /// in order: wake-ups become events, departing packets go on to the next node.
    /// Actions are appended to one buffer; a delivery that leads into another link
    /// appends that link's actions after the rest and takes them off again before this
    /// call goes on with its own.
    #[inline]
    fn with_link(&mut self, l: usize, call: impl FnOnce(&mut dyn Link<Packet>, &mut Io<'_, Packet>)) {
        let now = self.now;
        let mark = self.actions.len();
        {
            let link = &mut self.links[l];
            let mut obs = LinkObs {
                link: l,
                queues: &mut link.queues,
                capture: if link.capture { self.capture.as_mut() } else { None },
                tracker: self.tracker.as_mut(),
                flows: &mut self.flows,
                scenario: &self.scenario,
                payloads: &mut self.payloads,
            };
            call(&mut *link.model, &mut Io::new(now, &mut self.actions, &mut obs));
        }
        let mut i = mark;
        while i < self.actions.len() {
            // Copied out rather than replaced by a placeholder: the buffer is cut back to
            // `mark` at the end anyway.
            let a = self.actions[i];
            i += 1;
            match a {
                Action::Wake { timer, at } => {
                    debug_assert!(at >= now, "link {l} asked to be woken in the past");
                    self.q.push(at.max(now), Ev::Link(l as u32, timer));
                }
                Action::Deliver { port, pkt, due } => {
                    debug_assert!(due >= now, "link {l} delivered a packet due at {due} at {now}");
                    let Some(&to) = self.links[l].port_nodes.get(port) else {
                        self.unroutable += 1;
                        self.payloads.free(pkt.payload);
                        continue;
                    };
                    if due > now && self.links[l].handoff {
                        self.hand_on(to, pkt, due);
                    } else {
                        self.node_receive(to, pkt);
                    }
                }
            }
        }
        self.actions.truncate(mark);
    }

    /// A packet that will reach `node` at `due` goes at once to the link it leaves on,
    /// which takes it then ([`Link::send_at`]); [`plan_handoffs`] made sure there is one.
    fn hand_on(&mut self, node: u32, pkt: Packet, due: Time) {
        // The next link takes packets early, so it is not an ideal wire nor one passed
        // through, and its hop is that link.
        match self.hop(node, pkt.dst) {
            Hop::Line(l) => self.line_enter(l as usize, due, pkt),
            Hop::Model(l) if self.links[l as usize].owner == l => {
                let (from, to) = self.links[l as usize].ports;
                self.with_link(l as usize, |model, io| model.send_at(from, to, pkt, due, io));
            }
            _ => self.hand_on_routed(node, pkt, due),
        }
    }

    /// [`Sim::hand_on`] by the routes, for what its hop does not say.
    #[cold]
    fn hand_on_routed(&mut self, node: u32, pkt: Packet, due: Time) {
        let Some(l) = self.scenario.routes.next_link(node as usize, pkt.dst as usize) else {
            self.unroutable += 1;
            self.payloads.free(pkt.payload);
            return;
        };
        if self.links[l].line.is_some() {
            return self.line_enter(l, due, pkt);
        }
        let (from, to) = self.links[l].ports;
        self.with_link(l, |model, io| model.send_at(from, to, pkt, due, io));
    }

    /// A packet that comes at `came` (now, or later when handed on early) onto link `l`'s
    /// line ([`LinkRt::line`]): due `delay` after, behind the packets due no later, with a
    /// wake-up if it is the first due, as the model asks for it.
    #[inline(never)]
    fn line_enter(&mut self, l: usize, came: Time, pkt: Packet) {
        let now = self.now;
        let Some(line) = self.links[l].line.as_mut() else {
            return;
        };
        let due = came.max(now) + line.delay;
        let g = &mut self.line_groups[line.group as usize];
        if g.merged {
            // Due with the one before only on the same line: then it becomes its line's
            // first as that one leaves, and takes its number then, as on its own line.
            if g.fifo
                .back()
                .is_none_or(|&(last, m, _)| last < due || (last == due && m as usize == l))
            {
                let first = g.fifo.is_empty();
                g.fifo.push_back((due, l as u32, pkt));
                line.held += 1;
                if line.held == 1 {
                    // The first of its line: its wake-up takes its number now, and goes
                    // in now if it is the group's first.
                    line.head_seq = self.q.take_seq();
                    if first {
                        self.q.push_keyed(due, line.head_seq, line_wake(l as u32));
                    }
                }
                return;
            }
            let group = line.group as usize;
            self.unmerge(group);
        }
        let Some(line) = self.links[l].line.as_mut() else {
            return;
        };
        if l4s_link::insert_by_due(&mut line.q, due, pkt) == 0 {
            self.q.push(due, line_wake(l as u32));
        }
    }

    /// The wake-up of link `l`'s line: if its first packet is due, ask for the next one's
    /// wake-up, then hand the first to the far node (as the model does, one per wake-up).
    fn line_arrive(&mut self, l: usize) {
        if let Some((to, pkt)) = self.line_take(l) {
            self.node_receive(to, pkt);
        }
    }

    /// [`Sim::line_arrive`] up to the hand-over: the packet and the node it goes to.
    #[inline]
    fn line_take(&mut self, l: usize) -> Option<(u32, Packet)> {
        let now = self.now;
        let link = &mut self.links[l];
        let line = link.line.as_mut()?;
        let to = link.to;
        let g = &mut self.line_groups[line.group as usize];
        if g.merged {
            // The group's one entry in the event queue, for its first packet, which is
            // line `l`'s first and due now.
            let (due, from, pkt) = g.fifo.pop_front()?;
            debug_assert!(from as usize == l && due <= now);
            line.held -= 1;
            if line.held > 0 {
                line.head_seq = self.q.take_seq();
            }
            if let Some(&(next, m, _)) = g.fifo.front() {
                let seq = self.links[m as usize].line.as_ref().map_or(0, |line| line.head_seq);
                self.q.push_keyed(next, seq, line_wake(m));
            }
            return Some((to, pkt));
        }
        if line.q.front().is_none_or(|(due, _)| *due > now) {
            return None;
        }
        let (_, pkt) = line.q.pop_front()?;
        if let Some(&(next, _)) = line.q.front() {
            self.q.push(next, line_wake(l as u32));
        }
        Some((to, pkt))
    }

    /// End group `g`'s merge: each line takes its packets back, in order, and the wake-up
    /// of each line's first packet goes into the event queue, but for the group's first,
    /// whose wake-up is there.
    #[cold]
    fn unmerge(&mut self, g: usize) {
        let group = &mut self.line_groups[g];
        group.merged = false;
        for (i, (due, l, pkt)) in std::mem::take(&mut group.fifo).into_iter().enumerate() {
            let Some(line) = self.links[l as usize].line.as_mut() else {
                continue;
            };
            if line.held > 0 {
                if i > 0 {
                    self.q.push_keyed(due, line.head_seq, line_wake(l));
                }
                line.held = 0;
            }
            line.q.push_back((due, pkt));
        }
    }

    /// Once, before the run: let the links that take packets early leave their own steps
    /// until they are called ([`Link::defer_steps`]), since [`Sim::catch_up_links`] brings
    /// them up to date before every query. Not a link whose departures go into the pcap,
    /// nor any link while the timeline records hops: those records are written in the
    /// order they are made, which must be the order of time.
    fn defer_link_steps(&mut self) {
        if std::mem::replace(&mut self.steps_deferred, true) || self.tracker.is_some() {
            return;
        }
        for &l in &self.early {
            let link = &mut self.links[l];
            if !(link.capture && self.capture.is_some()) {
                link.model.defer_steps();
            }
        }
    }

    /// Bring the links that take packets early up to now, before they are queried.
    pub(crate) fn catch_up_links(&mut self) {
        for i in 0..self.early.len() {
            let l = self.early[i];
            self.with_link(l, |model, io| model.catch_up(io));
        }
    }

    fn link_timer(&mut self, l: usize, timer: Timer) {
        if timer == l4s_link::DELAY_LINE_ARRIVE && self.links[l].line.is_some() {
            return self.line_arrive(l);
        }
        let at = self.now;
        self.with_link(l, |model, io| model.handle_timeout(timer, at, io));
    }

    /// Where a packet at `node` goes for `dst`: from the table, or resolved now.
    #[inline(always)]
    fn hop(&self, node: u32, dst: u32) -> Hop {
        let n = self.hops_n;
        match self.hops.get(node as usize * n + dst as usize) {
            Some(&h) if (dst as usize) < n => h,
            _ => resolve_hop(&self.scenario, &self.links, node, dst),
        }
    }

    /// A packet at a node goes where its [`Hop`] says.
    #[inline]
    fn take_hop(&mut self, hop: Hop, pkt: Packet) {
        match hop {
            Hop::Deliver => self.deliver(pkt),
            Hop::Unroutable => {
                self.unroutable += 1;
                self.payloads.free(pkt.payload);
            }
            Hop::Pass(l) => {
                let l = l as usize;
                let delay = self.links[l].pass.unwrap_or_default();
                self.pass_on(l, delay, pkt)
            }
            Hop::Line(l) => self.line_enter(l as usize, self.now, pkt),
            Hop::Model(l) => {
                let l = l as usize;
                let (owner, (from, to)) = (self.links[l].owner as usize, self.links[l].ports);
                self.with_link(owner, |model, io| model.send(from, to, pkt, io));
            }
        }
    }

    /// A packet put on a wire that only delays ([`LinkRt::pass`]) goes on to the next link,
    /// due `delay` later.
    #[inline(never)]
    fn pass_on(&mut self, l: usize, delay: l4s_core::Dur, pkt: Packet) {
        let to = self.links[l].to;
        let due = self.now + delay;
        self.hand_on(to, pkt, due);
    }

    fn node_receive(&mut self, node: u32, pkt: Packet) {
        let hop = self.hop(node, pkt.dst);
        self.take_hop(hop, pkt);
    }

    // ---- endpoints ----

    fn deliver(&mut self, pkt: Packet) {
        let f = pkt.flow as usize;
        let side = if pkt.forward { 1 } else { 0 };
        let now = self.now;
        if pkt.forward && pkt.is_data {
            self.track_arrival(&pkt);
            self.flows[f].meter.on_arrival(now, pkt.sent_at, pkt.size, pkt.ecn);
        }
        let fl = &mut self.flows[f];
        let Some(ep) = fl.ep[side].as_mut() else {
            self.payloads.free(pkt.payload);
            return;
        };
        ep.handle(now, self.payloads.get(pkt.payload), pkt.size, pkt.ecn);
        self.payloads.free(pkt.payload);
        if side == 0 {
            if let Some(rtt) = ep.take_rtt_sample() {
                fl.meter.on_rtt(now, rtt);
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
        let timeout = loop {
            let Some(ep) = self.flows[f].ep[side].as_mut() else {
                return;
            };
            match ep.poll_or_timeout(now, &mut self.payloads) {
                Ok(out) => self.emit(f, side, out),
                Err(timeout) => break timeout,
            }
        };
        let fl = &self.flows[f];
        let at = timeout.map(|t| {
            // Never schedule in the past; a timer that fires at the same instant twice
            // without progress is put 1 ns later so a stuck endpoint cannot hang the run.
            let at = t.max(now);
            if at == now && fl.last_fire[side] == now {
                now + Dur(1)
            } else {
                at
            }
        });
        self.q.arm(f as u32, side as u8, at);
    }

    /// Frames a media receiver completed and transfers an application receiver finished.
    #[inline]
    fn collect_app_events(&mut self, f: usize) {
        let fl = &mut self.flows[f];
        match (fl.ep[1].as_mut(), fl.meter.media.as_mut(), fl.meter.app.as_mut()) {
            (Some(Ep::MediaR(r)), Some(m), _) => {
                r.drain_frames(&mut fl.frames);
                for done in fl.frames.drain(..) {
                    m.on_frame(&done);
                }
            }
            (Some(Ep::AppR(r)), _, Some(a)) => {
                r.drain_completions(&mut fl.completions);
                for c in fl.completions.drain(..) {
                    a.on_completion(&c);
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
            fl.meter.on_send(now, out.ecn);
        }
        let payload = out.payload;
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
            payload,
        };
        self.next_id += 1;
        self.track_sent(&pkt);
        match self.hop(from, dst) {
            // No route from a node to itself.
            Hop::Deliver => {
                self.unroutable += 1;
                self.payloads.free(payload);
            }
            hop => self.take_hop(hop, pkt),
        }
    }

    fn endpoint_timer(&mut self, f: usize, side: usize) {
        let now = self.now;
        let fl = &mut self.flows[f];
        let Some(ep) = fl.ep[side].as_mut() else {
            return;
        };
        ep.handle_timeout(now);
        fl.last_fire[side] = now;
        self.service(f, side);
    }

    fn flow_start(&mut self, f: usize) {
        let now = self.now;
        let seed = self.scenario.flow_seed(f);
        match Ep::pair(&self.scenario.flows[f].kind, now, seed) {
            Ok((s, r)) => {
                self.flows[f].ep = [Some(s), Some(r)];
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
        self.catch_up_links();
        for fl in &mut self.flows {
            fl.meter.sender_base = fl.ep[0].as_ref().map(|e| e.stats());
            fl.receiver_base = fl.ep[1].as_ref().map(|e| e.stats());
            if let (Some(m), Some(Ep::MediaS(s))) = (fl.meter.media.as_mut(), fl.ep[0].as_ref()) {
                m.baseline = Some(s.media_stats());
            }
        }
        for link in &mut self.links {
            for (i, q) in link.queues.iter_mut().enumerate() {
                q.window_base = link.model.queue_stats(i);
                q.radio_base = link.model.queue_link_stats(i).map(|s| s.0);
            }
            *link.stats_base = link.model.stats();
            link.wifi_base = link.model.wifi_stats().map(Box::new);
        }
    }

    fn sample(&mut self) {
        self.catch_up_links();
        let now = self.now;
        for fl in &mut self.flows {
            if let (Some(m), Some(Ep::MediaS(s))) = (fl.meter.media.as_mut(), fl.ep[0].as_ref()) {
                m.sample_target(s.media_stats().target_bitrate.bits_per_sec() as f64);
            }
        }
        for link in &mut self.links {
            for (i, q) in link.queues.iter_mut().enumerate() {
                if let Some(p) = link.model.probability(i) {
                    q.meter.sample_probability(now, p);
                }
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

/// Where a packet at a node goes for its destination. The routes and what the simulator
/// does with each link (an ideal wire it crosses at once, a wire it passes through, a line
/// it keeps, a model it calls) are fixed for the run, so they are resolved once for every
/// pair of nodes, with the ideal wires on the way followed to where they lead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hop {
    /// The packet is at its destination.
    Deliver,
    /// No route (a bug if it happens).
    Unroutable,
    /// Onto link `l`, a wire that only delays ([`LinkRt::pass`]).
    Pass(u32),
    /// Onto link `l`, whose line the simulator keeps ([`LinkRt::line`]).
    Line(u32),
    /// Into link `l`'s model.
    Model(u32),
}

/// [`Hop`] of a packet at `node` for `dst`: the routes followed across ideal wires.
#[inline(never)]
fn resolve_hop(scenario: &Scenario, links: &[LinkRt], node: u32, dst: u32) -> Hop {
    let mut at = node;
    // Routes are shortest paths: a packet crosses each link at most once.
    for _ in 0..=links.len() {
        if at == dst {
            return Hop::Deliver;
        }
        let Some(l) = scenario.routes.next_link(at as usize, dst as usize) else {
            return Hop::Unroutable;
        };
        let link = &links[l];
        if link.ideal {
            at = link.to;
        } else if link.pass.is_some() {
            return Hop::Pass(l as u32);
        } else if link.line.is_some() {
            return Hop::Line(l as u32);
        } else {
            return Hop::Model(l as u32);
        }
    }
    Hop::Unroutable
}

/// Every pair's [`Hop`] while the routes are a full table ([`l4s_scenario::Routes`]); none
/// beyond (they are resolved per packet then).
fn hop_table(scenario: &Scenario, links: &[LinkRt]) -> Vec<Hop> {
    let n = scenario.nodes.len();
    if !scenario.routes.is_dense() {
        return Vec::new();
    }
    let mut hops = Vec::with_capacity(n * n);
    for node in 0..n as u32 {
        for dst in 0..n as u32 {
            hops.push(resolve_hop(scenario, links, node, dst));
        }
    }
    hops
}

/// The event that wakes link `l`'s delay line, kept by the simulator.
#[inline]
fn line_wake(l: u32) -> Ev {
    Ev::Link(l, l4s_link::DELAY_LINE_ARRIVE)
}

/// Which links hand their packets on as their serialisation starts: those whose every
/// packet goes on, at the far node, to a link that takes packets early (a wire with a
/// rate or a delay, not across a shared medium). Of the others a packet arrives at the far node when
/// it arrives, as before. The packets on a link are those of the flows whose path (either
/// way) crosses it; none may end at its far node. Returns the links that take packets
/// early.
fn plan_handoffs(scenario: &Scenario, links: &mut [LinkRt]) -> (Vec<usize>, Vec<LineGroup>) {
    let early: Vec<bool> = links
        .iter()
        .enumerate()
        .map(|(l, link)| scenario.links[l].medium.is_none() && !link.ideal && link.model.accepts_early())
        .collect();
    // None: no flow crosses the link; Some(false): some packet cannot be handed on.
    let mut can: Vec<Option<bool>> = vec![None; links.len()];
    // Links that follow one another on some flow's path.
    let mut followed: Vec<(usize, usize)> = Vec::new();
    // None: no flow crosses the link; Some(true): it is the last of every path it is on,
    // into the destination of every packet it carries.
    let mut last: Vec<Option<bool>> = vec![None; links.len()];
    for f in &scenario.flows {
        for (src, dst) in [(f.src, f.dst), (f.dst, f.src)] {
            let mut path = scenario.routes.path(src, dst).peekable();
            while let Some(a) = path.next() {
                // The next link of the path leaves the far node; there is none at `dst`.
                let next = path.peek().copied();
                let on = scenario.links[a].medium.is_none() && next.is_some_and(|b| early[b]);
                can[a] = Some(can[a].unwrap_or(true) && on);
                last[a] = Some(last[a].unwrap_or(true) && next.is_none());
                followed.extend(next.map(|b| (a, b)));
            }
        }
    }
    for (a, link) in links.iter_mut().enumerate() {
        if can[a] == Some(true) && !link.ideal {
            link.handoff = link.model.deliver_early();
        }
    }
    // A wire that only delays passes its packets on without its model if it hands them on
    // and none is handed to it early ([`Sim::hand_on`] gives those to the model, which
    // would add the delay to their due time; no shipped scenario has such a wire, and
    // looking for one at every hand-on cost 0.2 % on those that do not).
    let mut fed_early = vec![false; links.len()];
    for &(a, b) in &followed {
        fed_early[b] |= links[a].handoff;
    }
    for (a, link) in links.iter_mut().enumerate() {
        if link.handoff && !fed_early[a] && link.port_nodes.get(1) == Some(&link.to) {
            link.pass = link.model.pass_through();
        }
    }
    // A wire that only delays, into the destination of every packet it carries: the
    // simulator keeps its line (and it needs no catching up). Lines fed by one link, with
    // one delay, share a group.
    let mut feeds: Vec<Option<Option<usize>>> = vec![None; links.len()];
    for &(a, b) in &followed {
        feeds[b] = Some(match feeds[b] {
            None => Some(a),
            Some(f) => f.filter(|&f| f == a),
        });
    }
    let mut groups: Vec<LineGroup> = Vec::new();
    let mut by_feed: std::collections::HashMap<(usize, u64), usize> = std::collections::HashMap::new();
    for (a, link) in links.iter_mut().enumerate() {
        if last[a] == Some(true)
            && scenario.links[a].medium.is_none()
            && !link.ideal
            && !link.handoff
            && link.port_nodes.get(1) == Some(&link.to)
        {
            let Some(delay) = link.model.delay_line() else { continue };
            let mut new_group = || {
                groups.push(LineGroup::default());
                groups.len() - 1
            };
            let group = match feeds[a].flatten() {
                Some(f) => *by_feed.entry((f, delay.as_nanos())).or_insert_with(new_group),
                None => new_group(),
            };
            link.line = Some(Line {
                delay,
                group: group as u32,
                q: std::collections::VecDeque::new(),
                held: 0,
                head_seq: 0,
            });
        }
    }
    let early = (0..links.len())
        .filter(|&l| early[l] && links[l].line.is_none())
        .collect();
    // A line alone in its group stays on its own: there is nothing to merge.
    let mut size = vec![0usize; groups.len()];
    for line in links.iter().filter_map(|l| l.line.as_ref()) {
        size[line.group as usize] += 1;
    }
    for (g, n) in groups.iter_mut().zip(size) {
        g.merged = n > 1;
    }
    (early, groups)
}

/// What the simulator measures of a link's queue and losses: the queue's sojourn and busy
/// time, the flows' drops, the pcap of a bottleneck's egress and the packet timeline.
struct LinkObs<'a> {
    link: usize,
    queues: &'a mut [QueueRt],
    capture: Option<&'a mut crate::capture::Capture>,
    tracker: Option<&'a mut crate::timeline::Tracker>,
    flows: &'a mut [FlowRt],
    scenario: &'a Scenario,
    payloads: &'a mut Payloads,
}

impl Observer<Packet> for LinkObs<'_> {
    #[inline]
    fn departed(&mut self, now: Time, d: &Departure<'_, Packet>) {
        if let Some(q) = self.queues.get_mut(d.queue) {
            q.meter
                .on_dequeue(now, d.sub, d.sojourn, d.serialisation, d.pkt.size, d.marked);
            if let Some(seen) = q.data_flows.as_mut() {
                if d.pkt.forward && d.pkt.is_data {
                    if let Err(i) = seen.binary_search(&d.pkt.flow) {
                        seen.insert(i, d.pkt.flow);
                    }
                }
            }
        }
        if self.capture.is_some() || self.tracker.is_some() {
            self.record_departure(now, d);
        }
    }

    #[inline]
    fn lost(&mut self, now: Time, l: Loss<Packet>) {
        let pkt = &l.pkt;
        if pkt.forward && pkt.is_data {
            self.flows[pkt.flow as usize].meter.on_drop(now);
        }
        if self.tracker.is_some() {
            self.record_loss(&l);
        }
        self.payloads.free(pkt.payload);
    }
}

impl LinkObs<'_> {
    /// A departure into the pcap capture and the packet records (`--pcap`, `--packets`):
    /// out of line, so that the path of a run without them stays short.
    #[cold]
    #[inline(never)]
    fn record_departure(&mut self, now: Time, d: &Departure<'_, Packet>) {
        if let Some(cap) = self.capture.as_mut() {
            let f = &self.flows[d.pkt.flow as usize];
            let port = self.scenario.flows[d.pkt.flow as usize].port;
            cap.record(now, d.pkt, self.payloads.get(d.pkt.payload), f.src, f.dst, port);
        }
        if let Some(t) = self.tracker.as_mut() {
            let decision = if d.marked { Decision::Mark } else { Decision::Pass };
            t.hop(d.pkt, self.link, d.sub, d.sojourn, decision);
        }
    }

    /// A loss into the packet records (`--packets`).
    #[cold]
    #[inline(never)]
    fn record_loss(&mut self, l: &Loss<Packet>) {
        if let Some(t) = self.tracker.as_mut() {
            let sub = match l.kind {
                LossKind::Queue { sub, .. } => sub,
                LossKind::Wire => l4s_aqm::QueueId::Single,
            };
            t.hop(&l.pkt, self.link, sub, l.sojourn, Decision::Drop);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CUBIC and Reno (Not-ECT) from `a` over a 7 ms wire without a rate to the router,
    /// then a 20 Mbit/s DualPI2 bottleneck to `b`; `fault` is written on the first wire.
    fn net(fault: &str) -> Scenario {
        let text = format!(
            r#"[scenario]
name = "pass"
duration = "6s"
warmup = "1s"
seed = 3
[topology]
type = "custom"
[[topology.nodes]]
name = "a"
[[topology.nodes]]
name = "r"
[[topology.nodes]]
name = "b"
[[topology.links]]
from = "a"
to = "r"
delay = "7ms"
{fault}
[[topology.links]]
name = "bottleneck"
from = "r"
to = "b"
rate = "20Mbit"
delay = "3ms"
aqm = {{ kind = "dualpi2" }}
[[flows]]
name = "cubic"
type = "tcp"
cc = "cubic"
from = "a"
to = "b"
[[flows]]
name = "reno"
type = "tcp"
cc = "reno"
from = "a"
to = "b"
start = "300ms"
"#
        );
        l4s_scenario::load_str(&text, std::path::Path::new("pass.toml")).unwrap()
    }

    /// What a run of `sc` did: how its links were planned, its events (their number and
    /// the fold of their order) and its flows' and queues' results.
    struct Ran {
        pass: Vec<Option<Dur>>,
        lines: Vec<bool>,
        /// The group of each line the simulator keeps, and whether each group was still
        /// merged at the end.
        groups: Vec<Option<u32>>,
        merged: Vec<bool>,
        early: Vec<usize>,
        events: (u64, u64),
        results: String,
    }

    impl Ran {
        /// The same events in the same order (at least `events` of them), and the same
        /// results.
        fn same_as(&self, other: &Ran, events: u64) {
            assert_eq!(self.events, other.events);
            assert!(self.events.0 > events, "{:?} events", self.events);
            assert_eq!(self.results, other.results);
        }
    }

    fn run(sc: Scenario) -> Ran {
        run_lines(sc, true)
    }

    /// [`run`], with the lines the simulator keeps in groups (`merge`) or each on its own
    /// from the start.
    fn run_lines(sc: Scenario, merge: bool) -> Ran {
        let mut sim = Sim::new(sc, None, None).unwrap();
        let pass = sim.links.iter().map(|l| l.pass).collect();
        let lines = sim.links.iter().map(|l| l.line.is_some()).collect();
        let groups = sim.links.iter().map(|l| l.line.as_ref().map(|l| l.group)).collect();
        let early = sim.early.clone();
        if !merge {
            for g in 0..sim.line_groups.len() {
                sim.unmerge(g);
            }
        }
        sim.run(&mut |_| {});
        let s = sim.summary();
        Ran {
            pass,
            lines,
            groups,
            merged: sim.line_groups.iter().map(|g| g.merged).collect(),
            early,
            events: (sim.events_processed(), sim.trail),
            results: serde_json::to_string(&(&s.flows, &s.queues)).unwrap(),
        }
    }

    #[test]
    fn a_hop_follows_ideal_wires_to_where_they_lead_and_the_table_changes_nothing() {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/dumbbell-dualpi2.toml");
        let load = || {
            let mut sc = l4s_scenario::load_file(&file).unwrap();
            sc.apply_overrides(None, Some(Dur::from_secs(12))).unwrap();
            sc
        };
        let sc = load();
        let node = |name: &str| sc.nodes.iter().position(|n| n.name == name).unwrap() as u32;
        let link = |name: &str| sc.links.iter().position(|l| l.name == name).unwrap() as u32;
        let (src, dst, left, right) = (node("prague.src"), node("prague.dst"), node("left"), node("right"));
        let sim = Sim::new(sc.clone(), None, None).unwrap();
        assert_eq!(sim.hops.len(), sc.nodes.len() * sc.nodes.len());
        // Out of the sender onto its access wire, which only delays; at the router into
        // the bottleneck's model.
        assert_eq!(sim.hop(src, dst), Hop::Pass(link("prague.src->left")));
        assert_eq!(sim.hop(left, dst), Hop::Model(link("bottleneck")));
        // Out of the bottleneck across the ideal wire to the receiver: delivered there.
        assert!(sim.links[link("right->prague.dst") as usize].ideal);
        assert_eq!(sim.hop(right, dst), Hop::Deliver);
        // An ACK crosses the receiver's ideal wire into the reverse bottleneck, then onto
        // the line the simulator keeps back to the sender.
        assert_eq!(sim.hop(dst, src), Hop::Model(link("bottleneck-reverse")));
        assert_eq!(sim.hop(left, src), Hop::Line(link("left->prague.src")));
        // Beyond the table (a node or destination it does not hold): resolved the same way.
        assert_eq!(resolve_hop(&sim.scenario, &sim.links, dst, src), sim.hop(dst, src));
        assert_eq!(sim.hop(src, sc.nodes.len() as u32), Hop::Unroutable);
        // Resolved for every packet instead (as beyond 256 nodes): the same run.
        let with_table = run(load());
        let mut sim = Sim::new(load(), None, None).unwrap();
        sim.hops.clear();
        sim.run(&mut |_| {});
        let s = sim.summary();
        assert_eq!(sim.unroutable, 0);
        assert_eq!((sim.events_processed(), sim.trail), with_table.events);
        assert!(with_table.events.0 > 100_000, "{:?}", with_table.events);
        assert_eq!(
            serde_json::to_string(&(&s.flows, &s.queues)).unwrap(),
            with_table.results
        );
    }

    #[test]
    fn a_wire_that_only_delays_is_passed_through_as_its_model_would_hand_on() {
        // The same wire, once with a fault that clears the ECN field of packets that carry
        // none: it changes nothing, but the model must then be called.
        let fast = run(net(""));
        let slow = run(net(r#"fault = { kind = "bleach", start = "0s" }"#));
        assert_eq!(fast.pass[0], Some(Dur::from_millis(7)));
        assert_eq!(slow.pass[0], None);
        fast.same_as(&slow, 10_000);
    }

    /// Senders `a1` and `a2` reach `r` over wires with a rate and different delays, which
    /// hand their packets on early; `r` reaches `b` over a wire that only delays, into the
    /// destination of everything it carries (`final_wire` written on it), and the senders
    /// over wires that only delay.
    fn merging(final_wire: &str) -> Scenario {
        let text = format!(
            r#"[scenario]
name = "line"
duration = "6s"
warmup = "1s"
seed = 5
[topology]
type = "custom"
[[topology.nodes]]
name = "a1"
[[topology.nodes]]
name = "a2"
[[topology.nodes]]
name = "r"
[[topology.nodes]]
name = "b"
[[topology.links]]
bidirectional = false
from = "a1"
to = "r"
rate = "20Mbit"
delay = "9ms"
aqm = {{ kind = "dualpi2" }}
[[topology.links]]
bidirectional = false
from = "a2"
to = "r"
rate = "30Mbit"
delay = "2ms"
[[topology.links]]
bidirectional = false
from = "r"
to = "b"
delay = "4ms"
{final_wire}
[[topology.links]]
bidirectional = false
from = "b"
to = "r"
rate = "10Mbit"
delay = "4ms"
[[topology.links]]
bidirectional = false
from = "r"
to = "a1"
delay = "9ms"
[[topology.links]]
bidirectional = false
from = "r"
to = "a2"
delay = "2ms"
[[flows]]
name = "cubic"
type = "tcp"
cc = "cubic"
from = "a1"
to = "b"
[[flows]]
name = "reno"
type = "tcp"
cc = "reno"
from = "a2"
to = "b"
start = "200ms"
[[flows]]
name = "reno2"
type = "tcp"
cc = "reno"
from = "a2"
to = "b"
start = "700ms"
"#
        );
        l4s_scenario::load_str(&text, std::path::Path::new("line.toml")).unwrap()
    }

    #[test]
    fn a_wire_into_the_destination_that_only_delays_is_kept_as_its_model_would_keep_it() {
        // The same wire, once with a fault that clears the ECN field of packets that carry
        // none (every flow here is Not-ECT): it changes nothing, but the model must then
        // be called.
        let fast = run(merging(""));
        let slow = run(merging(r#"fault = { kind = "bleach", start = "0s" }"#));
        // r→b, r→a1 and r→a2; not the wires into the router.
        assert_eq!(fast.lines, [false, false, true, false, true, true]);
        assert_eq!(slow.lines, [false, false, false, false, true, true]);
        // Lines need no catching up: only the wires with a rate are.
        assert_eq!(fast.early, [0, 1, 3]);
        fast.same_as(&slow, 10_000);
    }

    /// The scenario in `text`, and its runs with the lines merged in groups and apart.
    fn merged_and_apart(text: &str) -> (Scenario, Ran, Ran) {
        let sc = || l4s_scenario::load_str(text, std::path::Path::new("lines.toml")).unwrap();
        (sc(), run_lines(sc(), true), run_lines(sc(), false))
    }

    #[test]
    fn lines_fed_by_one_link_share_one_entry_in_the_event_queue_and_change_nothing() {
        // Four flows through a dumbbell: the senders' access wires (6 ms, the receivers'
        // have no delay) take the ACKs from the reverse bottleneck.
        let text = r#"[scenario]
name = "lines"
duration = "4s"
warmup = "1s"
seed = 2
[topology]
type = "dumbbell"
rate = "40Mbit"
rtt = "12ms"
[topology.aqm]
kind = "dualpi2"
[[flows]]
name = "p1"
type = "tcp"
cc = "prague"
[[flows]]
name = "p2"
type = "tcp"
cc = "prague"
start = "300ms"
[[flows]]
name = "c1"
type = "tcp"
cc = "cubic"
start = "100ms"
[[flows]]
name = "r1"
type = "tcp"
cc = "reno"
start = "600ms"
"#;
        let (sc, merged, apart) = merged_and_apart(text);
        // One group of four lines, merged to the end.
        let names: Vec<_> = sc.links.iter().map(|l| l.name.clone()).collect();
        let grouped: Vec<_> = (0..names.len())
            .filter(|&l| merged.groups[l] == Some(0))
            .map(|l| &names[l])
            .collect();
        assert_eq!(
            grouped,
            ["left->p1.src", "left->p2.src", "left->c1.src", "left->r1.src"]
        );
        assert_eq!(merged.merged, [true]);
        assert_eq!(apart.merged, [false]);
        merged.same_as(&apart, 20_000);
    }

    #[test]
    fn a_group_of_lines_whose_packets_come_due_together_goes_apart_and_changes_nothing() {
        // Two downloads to `d1` and `d2` behind one Wi-Fi station: the AP's aggregates
        // reach the station at one instant and go on over two 20 ms wires, due together.
        // The first that carries packets of both ends the merge while packets of both
        // are on the wires.
        let text = r#"[scenario]
name = "ties"
duration = "3s"
warmup = "1s"
seed = 4
[topology]
type = "custom"
[[topology.nodes]]
name = "server"
[[topology.nodes]]
name = "ap"
[[topology.nodes]]
name = "sta"
[[topology.nodes]]
name = "d1"
[[topology.nodes]]
name = "d2"
[[topology.links]]
from = "server"
to = "ap"
rate = "200Mbit"
delay = "2ms"
[[topology.links]]
from = "sta"
to = "d1"
delay = "20ms"
[[topology.links]]
from = "sta"
to = "d2"
delay = "20ms"
[[topology.wifi]]
name = "wifi"
ap = "ap"
aqm = { kind = "dualpi2" }
[[topology.wifi.stations]]
node = "sta"
standard = "ax"
bandwidth = 80
nss = 2
signal = -55
[[flows]]
name = "one"
type = "tcp"
cc = "prague"
from = "server"
to = "d1"
[[flows]]
name = "two"
type = "tcp"
cc = "cubic"
from = "server"
to = "d2"
start = "50ms"
"#;
        let (sc, merged, apart) = merged_and_apart(text);
        let line = |l: &str| merged.groups[sc.links.iter().position(|k| k.name == l).unwrap()];
        assert!(
            line("sta->d1").is_some() && line("sta->d1") == line("sta->d2"),
            "{:?}",
            merged.groups
        );
        assert!(!merged.merged[line("sta->d1").unwrap() as usize]);
        merged.same_as(&apart, 10_000);
    }

    /// An event of [`script`]: its time, the line it woke (`usize::MAX` for another
    /// event) and the packet that line handed over.
    type Woken = (u64, usize, Option<u64>);

    /// Scripted packets onto the lines of the first group of `sc` (from `seed`), and
    /// one-off events between them, on a 1 µs grid so that many fall due together. For
    /// `rounds` rounds every packet comes due strictly after the one before or with it on
    /// the same line (so that a group stays merged); for `rounds` more also with it on
    /// another line; after that in any order. Returns the events in the order they came
    /// (time, the line woken or `usize::MAX`, the packet handed over) and whether the
    /// group was still merged after the first part and after the second.
    fn script(sc: Scenario, merge: bool, seed: u64, rounds: usize) -> (Vec<Woken>, [bool; 2]) {
        let mut sim = Sim::new(sc, None, None).unwrap();
        if !merge {
            sim.unmerge(0);
        }
        let lines: Vec<usize> = (0..sim.links.len())
            .filter(|&l| sim.links[l].line.as_ref().is_some_and(|line| line.group == 0))
            .collect();
        let delay = sim.links[lines[0]].line.as_ref().unwrap().delay.as_nanos();
        let mut x = seed;
        let mut rand = |n: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        const US: u64 = 1000;
        let (mut out, mut merged) = (Vec::new(), [false; 2]);
        let (mut now, mut feed, mut id, mut last) = (0u64, 0u64, 0u64, usize::MAX);
        let mut dues: Vec<u64> = Vec::new();
        let mut take = |sim: &mut Sim, at: Time, ev: Ev| {
            sim.now = at;
            match ev {
                Ev::Link(l, t) if t == l4s_link::DELAY_LINE_ARRIVE => {
                    let pkt = sim.line_take(l as usize).map(|(_, p)| p.id);
                    out.push((at.as_nanos(), l as usize, pkt));
                }
                _ => out.push((at.as_nanos(), usize::MAX, None)),
            }
        };
        for round in 0..3 * rounds {
            if round % rounds == 0 && round > 0 {
                merged[round / rounds - 1] = sim.line_groups[0].merged;
            }
            sim.now = Time(now);
            for _ in 0..rand(4) {
                // One feeder: each packet comes at or after the one before.
                let mut l = lines[rand(lines.len() as u64) as usize];
                let step = rand(3);
                if round < rounds && step == 0 && last != usize::MAX {
                    l = last;
                }
                feed = if round >= 2 * rounds && rand(4) == 0 {
                    feed.saturating_sub(rand(3) * US)
                } else {
                    feed.max(now) + step * US
                };
                let payload = sim.payloads.insert(crate::packet::Payload::Probe(Default::default()));
                let pkt = Packet {
                    id,
                    flow: 0,
                    forward: false,
                    dst: sim.links[l].to,
                    size: 64,
                    ecn: l4s_core::Ecn::NotEct,
                    ecn_sent: l4s_core::Ecn::NotEct,
                    dscp: 0,
                    dst_port: 0,
                    sent_at: Time(now),
                    is_data: false,
                    payload,
                };
                id += 1;
                last = l;
                sim.line_enter(l, Time(feed), pkt);
                dues.push(feed.max(now) + delay);
            }
            dues.retain(|&d| d > now);
            for _ in 0..rand(3) {
                // Due with a packet on the lines, or about when the packets that come now
                // are.
                let at = match dues.len() {
                    0 => now + delay + rand(6) * US,
                    n => dues[rand(n as u64) as usize],
                };
                sim.q.push(Time(at), Ev::Sample);
            }
            now += rand(4) * US;
            while let Some((at, ev)) = sim.q.pop_until(Time(now)) {
                take(&mut sim, at, ev);
            }
        }
        while let Some((at, ev)) = sim.q.pop_until(Time(u64::MAX)) {
            take(&mut sim, at, ev);
        }
        (out, merged)
    }

    #[test]
    fn a_merged_group_gives_each_wake_up_the_place_it_has_on_its_own_line() {
        let sc = || {
            let text = r#"[scenario]
name = "script"
duration = "2s"
[topology]
type = "dumbbell"
rate = "40Mbit"
rtt = "40us"
[[flows]]
name = "a"
type = "tcp"
cc = "reno"
[[flows]]
name = "b"
type = "tcp"
cc = "reno"
[[flows]]
name = "c"
type = "tcp"
cc = "reno"
"#;
            l4s_scenario::load_str(text, std::path::Path::new("script.toml")).unwrap()
        };
        let mut apart_after_ties = 0;
        for seed in 0..40 {
            let (merged, stayed) = script(sc(), true, seed, 300);
            let (apart, _) = script(sc(), false, seed, 300);
            assert!(stayed[0], "seed {seed}: the group went apart in the first part");
            apart_after_ties += usize::from(!stayed[1]);
            assert!(merged.iter().filter(|e| e.2.is_some()).count() > 600, "seed {seed}");
            // Wake-ups due with other events or with other lines' wake-ups.
            let ties = merged
                .windows(2)
                .filter(|w| w[0].0 == w[1].0 && w[0].1 != w[1].1)
                .count();
            assert!(ties > 50, "seed {seed}: {ties} ties");
            assert_eq!(merged, apart, "seed {seed}");
        }
        // The second part's packets due together on two lines end most merges.
        assert!(apart_after_ties > 30, "{apart_after_ties}");
    }
}
