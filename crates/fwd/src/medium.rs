//! The forwarder of a shared medium: one link model with a port per device, driven in real
//! time between pairs of interfaces (a Wi-Fi BSS, [`l4s_link::wifi::Bss`], or a cell of several
//! UEs, [`l4s_link::Cell`]).
//!
//! ```text
//!   AP node ─ap0─┐                     ┌─st0─ station 0
//!   AP node ─ap1─┤  [ one Bss model ]  ├─st1─ station 1
//!        ...     ┘  port 0 │ port s+1  └ ...
//! ```
//!
//! Station `s` is reached through its own pair of interfaces, the one towards the access
//! point's node and the one towards the station's node, each pair a layer-2 segment of its
//! own (hosts on both sides share its subnet; ARP and NDP cross it as frames of the
//! model's lowest access category). A frame read on the access point's side of pair `s`
//! enters the model at port 0 for port `s + 1` (downlink); one read on the station's side
//! enters at port `s + 1` for port 0 (uplink). The model decides when each leaves: a frame
//! delivered at port `s + 1` goes out on the station's side of pair `s`, one delivered at
//! port 0 on the access point's side of the pair it came in on ([`Frame::ingress`]). Every
//! station contends for the one channel the model simulates, so a real TCP flow to one
//! station sees the contention, aggregation and retransmissions the others cause.
//!
//! The driver is the two-port forwarder's ([`crate::router`]): frames enter the model at
//! the kernel's receive time (never before the model's clock), its wake-ups run from a
//! timer heap on CLOCK_MONOTONIC, delivered frames go out when the model says they leave
//! (their lateness recorded), and every passage through a queue is a [`PacketRecord`]
//! whose `direction` is the input the frame came in on: `2s` for station `s`'s downlink,
//! `2s + 1` for its uplink; `link_queue` is the model's queue.
//!
//! A model that wakes late (a busy host) keeps its own timeline: the channel's accesses
//! and PPDUs happen at the model's times and the frames go out as soon as the thread runs.
//! The frames that queued in the kernel meanwhile enter in the order of their times with
//! the wake-ups that fell due: each after those due by its receive time, so a TXOP takes
//! the frames that had come by its start, neither fewer nor more.
//!
//! # Memory
//!
//! One [`BufferPool`] for the model, capped at every queue discipline's packet limit, the
//! frames the MAC holds (a BlockAck window per queue) and one receive batch per input.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use l4s_core::{Dur, Rng, Time};
use l4s_link::{Action, Io, Link, LinkConfig, LinkStats, Port, Timers};

use crate::afpacket::{monotonic_now, precise_timers, IoMode, PacketSocket, MAX_POLLED};
use crate::error::FwdError;
use crate::packet::{BufferPool, Frame};
use crate::port::{Input, Output};
use crate::router::{
    aqm_packet_limit, go_realtime, wait_for_work, DirObserver, DirectionStats, DirectionStatus, PacketRecord,
    QueueTrack, RouterStats, RouterStatus, Sink,
};

/// The most stations one medium forwarder serves (two interfaces each, every one polled).
pub const MAX_PAIRS: usize = MAX_POLLED / 2;

/// What the medium forwarder runs.
#[derive(Clone, Debug, PartialEq)]
pub struct MediumConfig {
    /// Per station in the model's port order (station `s` is port `s + 1`): the interface
    /// towards the access point's node and the one towards the station's node.
    pub pairs: Vec<(String, String)>,
    /// The model ([`LinkConfig::wifi`] set).
    pub link: LinkConfig,
    /// Seed of the model's random sources.
    pub seed: u64,
    pub io: IoMode,
    /// Frames read per system call and input (1 to 1024).
    pub batch: usize,
    /// Waits shorter than this are busy-polled.
    pub spin: Dur,
    /// How often `on_status` is called.
    pub status_interval: Dur,
    /// SCHED_FIFO priority of the forwarding thread (see [`crate::RouterConfig`]).
    pub realtime_priority: Option<u8>,
    /// The measurement window from the origin: the model's Wi-Fi counters are taken at its
    /// start and end ([`RouterStats::wifi`]).
    pub window: Option<(Dur, Dur)>,
}

impl MediumConfig {
    /// A medium over these pairs with defaults for the rest.
    pub fn new(pairs: Vec<(String, String)>, link: LinkConfig) -> MediumConfig {
        MediumConfig {
            pairs,
            link,
            seed: 1,
            io: IoMode::Batched,
            batch: 64,
            spin: Dur::ZERO,
            status_interval: Dur::from_secs(1),
            realtime_priority: Some(10),
            window: None,
        }
    }

    /// Check every field; the error names the field and what was expected.
    pub fn validate(&self) -> Result<(), FwdError> {
        if self.pairs.is_empty() || self.pairs.len() > MAX_PAIRS {
            return Err(FwdError::config(
                "pairs",
                format!(
                    "expected 1 to {MAX_PAIRS} stations' interface pairs, found {}",
                    self.pairs.len()
                ),
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, (a, b)) in self.pairs.iter().enumerate() {
            for name in [a, b] {
                crate::netns::check_ifname(name).map_err(|_| {
                    FwdError::config(
                        &format!("pairs[{i}]"),
                        format!("expected an interface name, found {name:?}"),
                    )
                })?;
                if !seen.insert(name.as_str()) {
                    return Err(FwdError::config(
                        &format!("pairs[{i}]"),
                        format!("expected every interface once, found {name:?} twice"),
                    ));
                }
            }
        }
        let stations = match (&self.link.wifi, &self.link.cell) {
            (Some(w), _) => {
                w.validate().map_err(|e| {
                    FwdError::config(
                        &format!("link wifi {}", e.parameter),
                        format!("expected {}, found {}", e.expected, e.found),
                    )
                })?;
                w.stations.len()
            }
            (None, Some(c)) => {
                c.validate()
                    .map_err(|(k, m)| FwdError::config(&format!("link cell {k}"), m))?;
                c.ues.len()
            }
            (None, None) => {
                return Err(FwdError::config(
                    "link",
                    "expected a shared medium (a Wi-Fi BSS or a cell of several UEs)",
                ))
            }
        };
        if stations != self.pairs.len() {
            return Err(FwdError::config(
                "pairs",
                format!(
                    "expected one interface pair per station or UE of the medium ({stations}), found {}",
                    self.pairs.len()
                ),
            ));
        }
        crate::router::check_driver(self.batch, self.realtime_priority, self.status_interval)
    }
}

/// Per input: its reader and the counters of the status line.
struct Side {
    input: Input,
    output: Output,
    last_rx_bytes: u64,
    last_tx_bytes: u64,
    last_late: u64,
}

/// The model and everything that feeds it.
struct Medium {
    link: Box<dyn Link<Frame>>,
    timers: Timers,
    actions: Vec<Action<Frame>>,
    pool: BufferPool,
    sides: Vec<Side>,
    tracks: Vec<QueueTrack>,
    frames: Vec<Frame>,
    /// The latest time handed to the model.
    model_now: Time,
    stations: usize,
}

impl Medium {
    /// The input of station `s`'s downlink (the access point's side) and uplink.
    fn socket_out(&self, port: Port, pkt: &Frame) -> usize {
        if port == 0 {
            // Back on the access point's side of the pair it came in on.
            usize::from(pkt.ingress) & !1
        } else {
            2 * (port - 1) + 1
        }
    }

    fn call(
        &mut self,
        socks: &[PacketSocket],
        now: Time,
        sink: &mut Sink<'_>,
        f: impl FnOnce(&mut dyn Link<Frame>, &mut Io<'_, Frame>),
    ) {
        self.model_now = self.model_now.max(now);
        let mut obs = DirObserver {
            pool: &mut self.pool,
            tracks: &mut self.tracks,
            sink,
        };
        f(&mut *self.link, &mut Io::new(now, &mut self.actions, &mut obs));
        let mut actions = std::mem::take(&mut self.actions);
        for a in actions.drain(..) {
            match a {
                Action::Wake { timer, at } => self.timers.push(timer, at),
                Action::Deliver { port, pkt, due } => {
                    let out = self.socket_out(port, &pkt);
                    match (self.sides.get_mut(out), socks.get(out)) {
                        (Some(side), Some(sock)) => side.output.send(sock, &mut self.pool, pkt, due),
                        _ => self.pool.put(pkt.into_buffer()),
                    }
                }
            }
        }
        self.actions = actions;
    }

    /// Read what waits on every input and send each frame into the model at its entry
    /// time, after the model's wake-ups due by then: a thread held back finds frames that
    /// queued in the kernel while the model's accesses fell due, and the model takes both in
    /// the order of their times. Returns whether an input may have more waiting.
    fn receive(&mut self, socks: &[PacketSocket], mode: IoMode, sink: &mut Sink<'_>) -> Result<bool, FwdError> {
        let mut more = false;
        for (i, sock) in socks.iter().enumerate() {
            let now = monotonic_now();
            let mut frames = std::mem::take(&mut self.frames);
            let res = self.sides[i]
                .input
                .receive(sock, mode, &mut self.pool, now, &mut frames);
            let (from, to) = if i % 2 == 0 { (0, i / 2 + 1) } else { (i / 2 + 1, 0) };
            for mut frame in frames.drain(..) {
                frame.ingress = i as u16;
                let at = frame.arrival.max(self.model_now);
                self.timers(socks, at, sink);
                self.call(socks, at, sink, |l, io| l.send(from, to, frame, io));
            }
            self.frames = frames;
            more |= self.sides[i].input.may_have_more(res?);
        }
        Ok(more)
    }

    /// Run the model's wake-ups due by `upto`, each at its own time (never before the
    /// model's clock).
    fn timers(&mut self, socks: &[PacketSocket], upto: Time, sink: &mut Sink<'_>) {
        while let Some((timer, at)) = self.timers.pop_due(upto) {
            let now = at.max(self.model_now);
            self.call(socks, now, sink, |l, io| l.handle_timeout(timer, at, io));
        }
    }

    fn next_event(&self) -> Option<Time> {
        self.sides
            .iter()
            .filter_map(|s| s.output.retry_at())
            .chain(self.timers.next())
            .min()
    }

    /// The model's queues of direction `d` (input `d`): station `d / 2`'s downlink queues
    /// for even `d`, its uplink queues for odd `d`.
    fn queues_of(&self, d: usize) -> std::ops::Range<usize> {
        let per_dir = self.link.queues().len() / 2;
        let per_station = per_dir / self.stations.max(1);
        let base = (d % 2) * per_dir + (d / 2) * per_station;
        base..base + per_station
    }

    fn name(socks: &[PacketSocket], d: usize) -> (String, String) {
        let from = socks[d].ifname().to_string();
        let to = socks[d ^ 1].ifname().to_string();
        (from, to)
    }

    /// The radio counters of direction `d`: its queues' own where the model keeps them per
    /// direction (a cell's UEs), else the whole model's (`total`).
    fn direction_link_stats(&self, d: usize, total: LinkStats) -> LinkStats {
        let mut sum = LinkStats::default();
        let mut any = false;
        for q in self.queues_of(d) {
            if let Some((s, _)) = self.link.queue_link_stats(q) {
                sum += s;
                any = true;
            }
        }
        if any {
            sum
        } else {
            total
        }
    }

    fn status(&mut self, socks: &[PacketSocket], interval: Dur) -> Vec<DirectionStatus> {
        let secs = interval.as_secs_f64().max(1e-9);
        let total = self.link.stats();
        let mut out = Vec::with_capacity(socks.len());
        for d in 0..socks.len() {
            let mut queues = Vec::new();
            for q in self.queues_of(d) {
                let stats = self.link.queue_stats(q);
                for t in self.tracks.iter_mut().filter(|t| t.queue == q) {
                    queues.push(t.status(&stats));
                }
            }
            // Direction d's frames go out on the other interface of its pair.
            let tx_bytes = self.sides[d ^ 1].output.tx_bytes;
            let late_now = self.sides[d ^ 1].output.lateness.over_1ms();
            let side = &mut self.sides[d];
            let rx_rate = l4s_core::Rate(((side.input.rx_bytes - side.last_rx_bytes) as f64 * 8.0 / secs) as u64);
            let tx_rate = l4s_core::Rate(((tx_bytes - side.last_tx_bytes) as f64 * 8.0 / secs) as u64);
            side.last_rx_bytes = side.input.rx_bytes;
            side.last_tx_bytes = tx_bytes;
            let late = late_now - side.last_late.min(late_now);
            side.last_late = late_now;
            let (from, to) = Self::name(socks, d);
            let link = self.direction_link_stats(d, total);
            out.push(DirectionStatus {
                name: format!("{from}->{to}"),
                rate: None,
                rx_rate,
                tx_rate,
                probability: None,
                queues,
                late,
                link,
            });
        }
        out
    }

    fn stats(&self, socks: &[PacketSocket]) -> Vec<DirectionStats> {
        let total = self.link.stats();
        (0..socks.len())
            .map(|d| {
                let ls = self.direction_link_stats(d, total);
                let mut queues = Vec::new();
                for q in self.queues_of(d) {
                    let stats = self.link.queue_stats(q);
                    let label = &self.link.queues()[q].label;
                    for t in self.tracks.iter().filter(|t| t.queue == q) {
                        queues.push(t.report(&stats, label.clone()));
                    }
                }
                let (input, output) = (&self.sides[d].input, &self.sides[d ^ 1].output);
                let (from, to) = Self::name(socks, d);
                DirectionStats {
                    name: format!("{from}->{to}"),
                    from,
                    to,
                    link: ls,
                    queue_protection: None,
                    rate_bps: 0,
                    delay_ms: 0.0,
                    final_rate_bps: 0,
                    rate_changes_applied: 0,
                    rate_schedule: Vec::new(),
                    rate_repeat_s: None,
                    aqm: self.link.queues().first().map_or("none", |q| q.aqm),
                    wire_losses: ls.wire_losses,
                    rx_packets: input.rx_packets,
                    rx_bytes: input.rx_bytes,
                    tx_packets: output.tx_packets,
                    tx_bytes: output.tx_bytes,
                    non_ip_packets: input.non_ip,
                    malformed: input.malformed_counts(),
                    oversize_drops: input.oversize,
                    no_buffer_drops: input.no_buffer,
                    kernel_drops: input.kernel_drops,
                    tx_retries: output.tx_retries,
                    tx_errors: output.tx_errors,
                    pacer_forfeits: 0,
                    pacer_forfeit_ns: 0,
                    lateness: output.lateness.stats(),
                    unstamped: input.unstamped,
                    peak_buffers: self.pool.peak(),
                    buffer_limit: self.pool.max(),
                    queues,
                    probability: Vec::new(),
                }
            })
            .collect()
    }
}

/// Forward through the medium until `stop` is set. `origin` holds the CLOCK_MONOTONIC
/// instant (ns) of time 0, `u64::MAX` until it is known (the model starts then, and the
/// measurement window counts from it); `on_status` is called every status interval; every
/// passage through a queue goes to `sink`.
pub fn run_medium(
    cfg: &MediumConfig,
    stop: &AtomicBool,
    origin: &AtomicU64,
    on_status: &mut dyn FnMut(&RouterStatus),
    sink: &mut dyn FnMut(&PacketRecord),
) -> Result<RouterStats, FwdError> {
    cfg.validate()?;
    let mut socks = Vec::with_capacity(cfg.pairs.len() * 2);
    for (a, b) in &cfg.pairs {
        socks.push(PacketSocket::open(a)?);
        socks.push(PacketSocket::open(b)?);
    }
    let mtu = socks.iter().map(|s| s.mtu()).max().unwrap_or(1500);
    let buf_size = (mtu as usize + 14 + 8).div_ceil(64) * 64;
    let link: Box<dyn Link<Frame>> = l4s_link::build(&cfg.link, Rng::derive(cfg.seed, 0));
    if link.ports() != cfg.pairs.len() + 1 {
        return Err(FwdError::config(
            "link",
            format!(
                "the model has {} ports, expected one per station and the access point's ({})",
                link.ports(),
                cfg.pairs.len() + 1
            ),
        ));
    }
    let wifi = cfg.link.wifi.as_deref();
    let window_room = wifi.map_or(0, |w| usize::from(w.ba_window));
    let per_queue = wifi.map_or(aqm_packet_limit(&cfg.link.aqm), |w| {
        aqm_packet_limit(&w.ap_aqm).max(aqm_packet_limit(&w.sta_aqm))
    });
    let limit = link.queues().len() * (per_queue + window_room) + socks.len() * (cfg.batch + 2);
    let tracks = link
        .queues()
        .iter()
        .enumerate()
        .flat_map(|(q, info)| info.subqueues.iter().map(move |&id| QueueTrack::new(q, id)))
        .collect();
    let mut m = Medium {
        stations: cfg.pairs.len(),
        link,
        timers: Timers::default(),
        actions: Vec::new(),
        pool: BufferPool::new(buf_size, limit, (cfg.batch * 2).min(limit)),
        sides: socks
            .iter()
            .map(|_| Side {
                input: Input::new(cfg.batch, buf_size),
                output: Output::new(),
                last_rx_bytes: 0,
                last_tx_bytes: 0,
                last_late: 0,
            })
            .collect(),
        tracks,
        frames: Vec::with_capacity(cfg.batch),
        model_now: Time::ZERO,
    };
    precise_timers();
    let realtime = go_realtime(cfg.realtime_priority);
    let fds: Vec<_> = socks.iter().map(|s| s.raw_fd()).collect();
    let start = monotonic_now();
    let mut next_status = start + cfg.status_interval;
    let mut last_status = start;
    let mut t0: Option<Time> = None;
    let mut wifi_base = None;
    let mut wifi_end = None;
    let mut sink: Sink<'_> = Some(sink);
    while !stop.load(Ordering::Relaxed) {
        if t0.is_none() {
            if let Some(o) = Some(origin.load(Ordering::Acquire)).filter(|&t| t != u64::MAX) {
                let o = Time(o);
                let now = monotonic_now().max(o);
                m.call(&socks, now, &mut sink, |l, io| l.start(o, io));
                t0 = Some(o);
            }
        }
        let more = m.receive(&socks, cfg.io, &mut sink)?;
        let now = monotonic_now();
        for (side, sock) in m.sides.iter_mut().zip(&socks) {
            side.output.flush(sock, &mut m.pool, now);
        }
        // With frames still unread the model's clock stays at the last one read: the next
        // pass reads the rest before later wake-ups run.
        m.timers(&socks, if more { m.model_now } else { now }, &mut sink);
        if let (Some(o), Some((from, to))) = (t0, cfg.window) {
            if wifi_base.is_none() && now >= o + from {
                wifi_base = Some(m.link.wifi_stats());
            }
            if wifi_end.is_none() && now >= o + to {
                wifi_end = m.link.wifi_stats();
            }
        }
        if now >= next_status {
            for (side, sock) in m.sides.iter_mut().zip(&socks) {
                side.input.kernel_drops += sock.kernel_drops();
            }
            let status = RouterStatus {
                elapsed: now.since(start),
                directions: m.status(&socks, now.since(last_status)),
            };
            on_status(&status);
            last_status = now;
            next_status = now + cfg.status_interval;
        }
        let mut wake = next_status;
        if let Some(t) = m.next_event() {
            wake = wake.min(t);
        }
        wait_for_work(&fds, wake, t0.is_some(), cfg.spin);
    }
    let end = monotonic_now();
    for (side, sock) in m.sides.iter_mut().zip(&socks) {
        side.input.kernel_drops += sock.kernel_drops();
    }
    let wifi = wifi_end
        .or_else(|| m.link.wifi_stats())
        .map(|e| (wifi_base.flatten(), e));
    Ok(RouterStats {
        started_ns: start.as_nanos(),
        duration_s: end.since(start).as_secs_f64(),
        realtime,
        directions: m.stats(&socks),
        wifi,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4s_aqm::{AqmConfig, FifoConfig};
    use l4s_link::wifi::{BssConfig, StationConfig};

    fn bss(n: usize) -> LinkConfig {
        use l4s_link::wifi::phy::{GuardInterval, PhyMode, Standard};
        let mode = PhyMode::new(Standard::He, 80, 2, 9, GuardInterval::Ns800).unwrap();
        let stations = (0..n).map(|i| StationConfig::new(format!("sta{i}"), mode)).collect();
        let fifo = AqmConfig::Fifo(FifoConfig::default());
        let mut l = LinkConfig::new(None, Dur::ZERO, fifo.clone());
        l.wifi = Some(std::sync::Arc::new(BssConfig::new(stations, fifo.clone(), fifo)));
        l
    }

    fn pairs(n: usize) -> Vec<(String, String)> {
        (0..n).map(|i| (format!("a{i}"), format!("b{i}"))).collect()
    }

    #[test]
    fn a_medium_needs_one_pair_per_station_each_interface_once() {
        assert!(MediumConfig::new(pairs(2), bss(2)).validate().is_ok());
        let e = MediumConfig::new(pairs(3), bss(2)).validate().unwrap_err().to_string();
        assert!(
            e.contains("pairs") && e.contains("one interface pair per station"),
            "{e}"
        );
        let mut p = pairs(2);
        p[1].1 = "a0".into();
        let e = MediumConfig::new(p, bss(2)).validate().unwrap_err().to_string();
        assert!(e.contains("pairs[1]") && e.contains("\"a0\" twice"), "{e}");
        let e = MediumConfig::new(pairs(MAX_PAIRS + 1), bss(MAX_PAIRS + 1))
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("1 to {MAX_PAIRS}")), "{e}");
        let fifo = AqmConfig::Fifo(FifoConfig::default());
        let e = MediumConfig::new(pairs(1), LinkConfig::new(None, Dur::ZERO, fifo))
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("shared medium"), "{e}");
    }

    #[test]
    fn frames_delivered_at_the_access_point_go_back_on_the_pair_they_came_in_on() {
        let link: Box<dyn Link<Frame>> = l4s_link::build(&bss(3), Rng::new(1));
        let m = Medium {
            link,
            timers: Timers::default(),
            actions: Vec::new(),
            pool: BufferPool::new(64, 4, 0),
            sides: Vec::new(),
            tracks: Vec::new(),
            frames: Vec::new(),
            model_now: Time::ZERO,
            stations: 3,
        };
        let mut f = vec![0u8; 60];
        f[12] = 0x88;
        f[13] = 0xb5;
        let mut frame = Frame::new(f.into_boxed_slice(), 60, Time::ZERO).unwrap();
        // Uplink of station 2 came in on input 5; down to station 1 leaves on input 3.
        frame.ingress = 5;
        assert_eq!(m.socket_out(0, &frame), 4);
        assert_eq!(m.socket_out(2, &frame), 3);
        assert_eq!(m.socket_out(3, &frame), 5);
        // Station 1's downlink queues, then its uplink queues.
        let per = m.link.queues().len() / 6;
        assert_eq!(m.queues_of(2), per..2 * per);
        assert!(m.link.queues()[m.queues_of(2).start].label.starts_with("down/sta1/"));
        assert!(m.link.queues()[m.queues_of(3).start].label.starts_with("up/sta1/"));
    }
}
