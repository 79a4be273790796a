//! The testbed's forwarders: one thread per wire namespace, each the real-time driver of
//! its segment's two link models, and the queue meters fed from their per-packet records.

use crate::meter::Window;
use crate::topology::{Built, Element, ElementKind, MediumElement};
use crate::LiveError;
use l4s_aqm::{DropReason, QueueId};
use l4s_core::Time;
use l4s_fwd::packet::Frame;
use l4s_fwd::router::Decision;
use l4s_fwd::{PacketRecord, RouterStats, RouterStatus};
use l4s_scenario::Scenario;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// What a forwarder thread returns: its statistics, or the error that stopped it.
type Join = JoinHandle<Result<Result<RouterStats, String>, l4s_fwd::FwdError>>;

/// Per-queue measurement from a forwarder's records: the shared
/// [`l4s_measure::QueueMeter`] fed on the run's clock, and what the forwarder's status says
/// of the queue now.
#[derive(Debug)]
pub(super) struct QueueMeter {
    pub meter: l4s_measure::QueueMeter,
    /// CLOCK_MONOTONIC at run time 0.
    mono0: u64,
    pub backlog_packets: u64,
    pub backlog_bytes: u64,
    pub probability: Option<f64>,
    /// The link model's counters at the first status after the window opened.
    pub link_base: Option<l4s_link::LinkStats>,
}

impl QueueMeter {
    fn new(window: Window, subqueues: &'static [QueueId]) -> QueueMeter {
        QueueMeter {
            meter: l4s_measure::QueueMeter::new(window, subqueues, true),
            mono0: u64::MAX,
            backlog_packets: 0,
            backlog_bytes: 0,
            probability: None,
            link_base: None,
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

pub(super) type SharedQueue = Arc<Mutex<QueueMeter>>;

pub(super) fn lockq(q: &SharedQueue) -> MutexGuard<'_, QueueMeter> {
    q.lock().unwrap_or_else(|p| p.into_inner())
}

/// A queue of the run: its scenario link, the name it is reported under, its meter.
pub(super) struct LiveQueue {
    pub link: usize,
    pub name: String,
    /// The model's queue discipline where it is not the link's own (a Wi-Fi BSS's).
    pub aqm: Option<&'static str>,
    pub meter: SharedQueue,
}

/// The forwarder threads of a run.
pub(super) struct Forwarders {
    handles: Vec<(String, Join)>,
    stop: Arc<AtomicBool>,
    /// CLOCK_MONOTONIC at time 0, `u64::MAX` until the run's clock starts.
    origin: Arc<AtomicU64>,
    pub queues: Vec<LiveQueue>,
}

impl Forwarders {
    /// Start a forwarder in every wire namespace. Records of data packets go to `timeline`
    /// (`--packets`).
    pub fn start(
        sc: &Scenario,
        built: &Built,
        window: Window,
        timeline: Option<&Sender<crate::timeline::Event>>,
    ) -> Result<Forwarders, LiveError> {
        let mut f = Forwarders {
            handles: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
            origin: Arc::new(AtomicU64::new(u64::MAX)),
            queues: Vec::new(),
        };
        for el in &built.elements {
            if let Err(e) = f.start_one(sc, built, el, window, timeline) {
                f.stop();
                return Err(e);
            }
        }
        Ok(f)
    }

    fn start_one(
        &mut self,
        sc: &Scenario,
        built: &Built,
        el: &Element,
        window: Window,
        timeline: Option<&Sender<crate::timeline::Event>>,
    ) -> Result<(), LiveError> {
        let cfg = match &el.kind {
            ElementKind::Pair(cfg) => cfg.clone(),
            ElementKind::Medium(m) => return self.start_medium(el, m, window, timeline),
        };
        let seg = &built.segments[el.segment];
        // A meter per queue of each direction's link model (a wire has one, or none
        // without a rate), indexed as the forwarder's records name them.
        let mut metas: [Vec<SharedQueue>; 2] = Default::default();
        for (dir, (link, cfg)) in [(seg.ab, &cfg.ab), (seg.ba, &cfg.ba)].into_iter().enumerate() {
            let model = l4s_link::build::<Frame>(cfg, l4s_core::Rng::new(0));
            for q in model.queues() {
                let name = l4s_measure::summary::queue_name(&sc.links[link].name, &q.label);
                metas[dir].push(self.meter(link, name, None, q.subqueues, window));
            }
        }
        let stop = self.stop.clone();
        let mono0 = self.origin.clone();
        let origin = self.origin.clone();
        let tl = timeline.cloned();
        // Scenario link of each direction, if it has a queue (a rate).
        let hop_link: [Option<u32>; 2] = [seg.ab, seg.ba].map(|l| sc.links[l].rate.map(|_| l as u32));
        let name = format!("forwarder on {}", sc.links[seg.ab].name);
        let h = el.ns.spawn("l4s-fwd", move || {
            let mut on_status = |s: &RouterStatus| {
                // The status is the first queue's (a wire's only one).
                for (d, m) in s.directions.iter().zip(&metas) {
                    if let Some(m) = m.first() {
                        let mut q = lockq(m);
                        q.backlog_packets = d.queues.iter().map(|x| x.backlog_packets).sum();
                        q.backlog_bytes = d.queues.iter().map(|x| x.backlog_bytes).sum();
                        q.probability = d.probability;
                        let opened = q
                            .run_time(l4s_fwd::afpacket::monotonic_now())
                            .is_some_and(|t| t >= window.start);
                        if opened && q.link_base.is_none() {
                            q.link_base = Some(d.link);
                        }
                    }
                }
            };
            let mut set = false;
            let mut sink = |r: &PacketRecord| {
                if !set {
                    let t0 = mono0.load(Ordering::Acquire);
                    if t0 == u64::MAX {
                        return;
                    }
                    for m in metas.iter().flatten() {
                        lockq(m).mono0 = t0;
                    }
                    set = true;
                }
                if let (Some(tl), Some(link)) = (&tl, hop_link.get(r.direction as usize).copied().flatten()) {
                    timeline_hop(tl, r, link);
                }
                if let Some(m) = metas
                    .get(r.direction as usize)
                    .and_then(|m| m.get(r.link_queue as usize))
                {
                    lockq(m).record(r);
                }
            };
            // The links' schedules and faults count from time 0 (u64::MAX until it is fixed).
            l4s_fwd::run_recording_with_origin(&cfg, &stop, &origin, &mut on_status, &mut sink)
                .map_err(|e| e.to_string())
        })?;
        self.handles.push((name, h));
        Ok(())
    }

    /// A new queue of the run on scenario link `link`, and its meter.
    fn meter(
        &mut self,
        link: usize,
        name: String,
        aqm: Option<&'static str>,
        subqueues: &'static [QueueId],
        window: Window,
    ) -> SharedQueue {
        let meter = Arc::new(Mutex::new(QueueMeter::new(window, subqueues)));
        self.queues.push(LiveQueue {
            link,
            name,
            aqm,
            meter: meter.clone(),
        });
        meter
    }

    /// The forwarder of a Wi-Fi BSS: a meter per queue of its model, reported under the
    /// BSS's name on the link that owns it (as the simulator reports them).
    fn start_medium(
        &mut self,
        el: &Element,
        m: &MediumElement,
        window: Window,
        timeline: Option<&Sender<crate::timeline::Event>>,
    ) -> Result<(), LiveError> {
        let model = l4s_link::build::<Frame>(&m.cfg.link, l4s_core::Rng::new(0));
        let per_dir = model.queues().len() / 2;
        let per_station = per_dir / m.stations.len().max(1);
        // A cell's queues are each one UE direction's, with its own radio counters, and
        // are reported under that direction's scenario link (port u + 1 is station u);
        // a BSS's under its owner.
        let cell = m.cfg.link.cell.is_some();
        let link_of = |q: usize| match model.queue_ports(q) {
            Some((0, to)) => m.stations.get(to.wrapping_sub(1)).map_or(m.owner, |st| st.down),
            Some((from, _)) => m.stations.get(from - 1).map_or(m.owner, |st| st.up),
            None => m.owner,
        };
        let mut metas: Vec<(SharedQueue, usize)> = Vec::new();
        for (i, q) in model.queues().iter().enumerate() {
            let name = l4s_measure::summary::queue_name(&m.name, &q.label);
            let meter = self.meter(link_of(i), name, Some(q.aqm), q.subqueues, window);
            metas.push((meter, q.subqueues.len()));
        }
        // Input d is station d / 2's downlink (even) or uplink (odd): its scenario link and
        // its queues.
        let hop_link: Vec<u32> = m.stations.iter().flat_map(|s| [s.down as u32, s.up as u32]).collect();
        let queues_of = move |d: usize| {
            let base = (d % 2) * per_dir + (d / 2) * per_station;
            base..base + per_station
        };
        let cfg = m.cfg.clone();
        let (stop, mono0, origin) = (self.stop.clone(), self.origin.clone(), self.origin.clone());
        let tl = timeline.cloned();
        let name = format!("forwarder of the shared medium {}", m.name);
        let h = el.ns.spawn("l4s-fwd", move || {
            let mut on_status = |s: &RouterStatus| {
                for (d, dir) in s.directions.iter().enumerate() {
                    let mut statuses = dir.queues.iter();
                    for q in queues_of(d) {
                        let Some((meter, subs)) = metas.get(q) else {
                            continue;
                        };
                        let mut meter = lockq(meter);
                        meter.backlog_packets = 0;
                        meter.backlog_bytes = 0;
                        if cell && meter.link_base.is_none() {
                            let opened = meter
                                .run_time(l4s_fwd::afpacket::monotonic_now())
                                .is_some_and(|t| t >= window.start);
                            if opened {
                                meter.link_base = Some(dir.link);
                            }
                        }
                        for st in statuses.by_ref().take(*subs) {
                            meter.backlog_packets += st.backlog_packets;
                            meter.backlog_bytes += st.backlog_bytes;
                        }
                    }
                }
            };
            let mut set = false;
            let mut sink = |r: &PacketRecord| {
                if !set {
                    let t0 = mono0.load(Ordering::Acquire);
                    if t0 == u64::MAX {
                        return;
                    }
                    for (meter, _) in &metas {
                        lockq(meter).mono0 = t0;
                    }
                    set = true;
                }
                if let (Some(tl), Some(&link)) = (&tl, hop_link.get(r.direction as usize)) {
                    timeline_hop(tl, r, link);
                }
                if let Some((meter, _)) = metas.get(r.link_queue as usize) {
                    lockq(meter).record(r);
                }
            };
            l4s_fwd::medium::run_medium(&cfg, &stop, &origin, &mut on_status, &mut sink).map_err(|e| e.to_string())
        })?;
        self.handles.push((name, h));
        Ok(())
    }

    /// A forwarder that failed to start (no permission, an interface missing) ends at once:
    /// call after giving them time to open their sockets.
    pub fn check_started(&mut self) -> Result<(), LiveError> {
        let Some(i) = self.handles.iter().position(|(_, h)| h.is_finished()) else {
            return Ok(());
        };
        let results = self.stop();
        let (name, r) = &results[i];
        Err(LiveError::setup(format!(
            "{name} stopped at start: {}",
            r.as_ref().err().cloned().unwrap_or_default()
        )))
    }

    /// Time 0 of the run is `mono0` (CLOCK_MONOTONIC): queue meters start counting, the
    /// links' schedules and faults start.
    pub fn set_origin(&self, mono0: u64) {
        self.origin.store(mono0, Ordering::Release);
    }

    /// Stop every forwarder; each one's name and statistics (or why it failed).
    pub fn stop(&mut self) -> Vec<(String, Result<RouterStats, String>)> {
        self.stop.store(true, Ordering::Relaxed);
        self.handles
            .drain(..)
            .map(|(name, h)| {
                let r = match h.join() {
                    Ok(Ok(x)) => x,
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err("panicked".to_string()),
                };
                (name, r)
            })
            .collect()
    }
}

impl Drop for Forwarders {
    fn drop(&mut self) {
        // Whatever way a run ends, its forwarder threads stop before the testbed goes.
        self.stop();
    }
}

/// A data packet's passage through a queue, for the packet timeline: datagram flows by
/// their flow and sequence number, kernel TCP segments by addresses, ports and sequence.
fn timeline_hop(tl: &Sender<crate::timeline::Event>, r: &PacketRecord, link: u32) {
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
