//! A small closed-loop network for the media endpoints: one bottleneck (a rate, a FIFO and
//! either an L4S step marker or a plain drop-tail buffer), a base one-way delay each way,
//! and optional faults (ECN bleaching/remarking on the forward path, report loss,
//! corruption or ECN rewriting on the reverse path). Discrete events in a heap ordered by
//! (time, insertion), so runs are deterministic.

#![allow(dead_code)]

use l4s_core::{Dur, Ecn, Rate, Rng, Time};
use l4s_media::endpoint::{MediaHeader, MediaReceiver, MediaSender};
use l4s_media::{FrameDone, MediaParams};
use l4s_transport::Endpoint;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Aqm {
    /// Mark ECT(1)/CE packets CE when their sojourn exceeds the threshold (a 1 ms step
    /// as in DualPI2's L queue); classic packets are never marked.
    Step(Dur),
    /// Drop-tail only.
    DropTail,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FwdFault {
    Bleach,
    Remark,
    /// Drop the last packet (RTP marker) of every video frame: no frame completes.
    DropFrameTail,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RevFault {
    /// Drop each report with this probability.
    Drop(f64),
    /// Truncate each report, or corrupt its RTCP header, with this probability (what a
    /// receiver can detect: the report does not decode).
    Corrupt(f64),
    /// Overwrite 3 random bytes anywhere in each report with this probability (garbage that
    /// may still decode).
    Garbage(f64),
    /// Rewrite every reported ECN field to CE (a lying receiver or middlebox).
    AllCe,
}

pub struct Net {
    pub rate: Rate,
    pub aqm: Aqm,
    pub limit_pkts: usize,
    pub owd: Dur,
    /// (time, new rate)
    pub rate_changes: Vec<(Time, Rate)>,
    pub fwd_fault: Option<(Time, FwdFault)>,
    pub rev_fault: Option<(Time, RevFault)>,
}

impl Net {
    pub fn new(rate: Rate, aqm: Aqm, limit_pkts: usize, owd: Dur) -> Net {
        Net {
            rate,
            aqm,
            limit_pkts,
            owd,
            rate_changes: Vec::new(),
            fwd_fault: None,
            rev_fault: None,
        }
    }
}

#[derive(Clone, Debug)]
enum Payload {
    Media(MediaHeader),
    /// A packet of the competing bulk flow: its sequence number and send time.
    Bulk {
        seq: u64,
        sent: Time,
    },
}

#[derive(Clone, Debug)]
struct Pkt {
    hdr: Payload,
    size: u32,
    ecn: Ecn,
}

/// A competing window-based bulk flow modelled on TCP Prague v0.7 (L4STeam/linux
/// `tcp_prague.c`): ECT(1), 1500 B packets, per-packet ACKs, `alpha` EWMA (g = 1/16) once per round
/// and at most every 25 ms, at most one `cwnd·(1 − alpha/2)` reduction per round and per
/// 25 ms, additive increase of `min(1, (srtt/25 ms)²)` packets per RTT from unmarked ACKs,
/// slow start until the first CE (which halves the window, v0.7's first-CE rule with
/// alpha starting at 0). Enough of Prague to be the L4S competitor of S6, not a copy of it.
pub struct BulkFlow {
    pub mss: u32,
    pub cwnd: f64,
    pub alpha: f64,
    pub srtt: Option<Dur>,
    in_flight: u64,
    next_seq: u64,
    slow_start: bool,
    round_end: u64,
    round_pkts: u64,
    round_ce: u64,
    alpha_stamp: Time,
    cwr_end: u64,
    cwr_stamp: Time,
    saw_ce: bool,
    /// Bytes acknowledged (goodput accounting).
    pub acked_bytes: u64,
    pub reductions: u64,
}

const BULK_VRTT: Dur = Dur::from_millis(25);

impl BulkFlow {
    pub fn new() -> BulkFlow {
        BulkFlow {
            mss: 1500,
            cwnd: 10.0 * 1500.0,
            alpha: 0.0,
            srtt: None,
            in_flight: 0,
            next_seq: 0,
            slow_start: true,
            round_end: 0,
            round_pkts: 0,
            round_ce: 0,
            alpha_stamp: Time::ZERO,
            cwr_end: 0,
            cwr_stamp: Time::ZERO,
            saw_ce: false,
            acked_bytes: 0,
            reductions: 0,
        }
    }

    fn can_send(&self) -> bool {
        (self.in_flight + u64::from(self.mss)) as f64 <= self.cwnd
    }

    fn on_sent(&mut self) -> u64 {
        self.in_flight += u64::from(self.mss);
        let s = self.next_seq;
        self.next_seq += 1;
        s
    }

    fn on_ack(&mut self, now: Time, seq: u64, sent: Time, ce: bool) {
        let mss = f64::from(self.mss);
        self.in_flight = self.in_flight.saturating_sub(u64::from(self.mss));
        self.acked_bytes += u64::from(self.mss);
        let rtt = now - sent;
        self.srtt = Some(match self.srtt {
            None => rtt,
            Some(s) => Dur::from_nanos((s.as_nanos() * 7 + rtt.as_nanos()) / 8),
        });
        let srtt = self.srtt.unwrap_or(rtt);
        self.round_pkts += 1;
        self.round_ce += u64::from(ce);
        if ce && !self.saw_ce {
            self.saw_ce = true;
            self.slow_start = false;
            self.cwnd = (self.cwnd / 2.0).max(2.0 * mss);
            self.cwr_end = self.next_seq;
            self.cwr_stamp = now;
            self.alpha_stamp = now;
            self.round_end = self.next_seq;
            self.round_pkts = 0;
            self.round_ce = 0;
            self.reductions += 1;
            return;
        }
        // Alpha, once per round and at most every 25 ms.
        if self.saw_ce && seq >= self.round_end && now - self.alpha_stamp >= BULK_VRTT {
            let f = self.round_ce as f64 / self.round_pkts.max(1) as f64;
            self.alpha += (f - self.alpha) / 16.0;
            self.alpha_stamp = now;
            self.round_end = self.next_seq;
            self.round_pkts = 0;
            self.round_ce = 0;
        }
        // CWR: one reduction per round and per 25 ms.
        if ce && seq >= self.cwr_end && now - self.cwr_stamp >= BULK_VRTT {
            self.cwnd = (self.cwnd * (1.0 - self.alpha / 2.0)).max(2.0 * mss);
            self.cwr_end = self.next_seq;
            self.cwr_stamp = now;
            self.reductions += 1;
        }
        if !ce {
            if self.slow_start {
                self.cwnd += mss;
            } else {
                let r = srtt.as_secs_f64() / BULK_VRTT.as_secs_f64();
                self.cwnd += mss * mss / self.cwnd * (r * r).min(1.0);
            }
        }
    }
}

impl Default for BulkFlow {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Clone, Debug)]
enum Ev {
    SenderTimer,
    ReceiverTimer,
    Departure,
    ToReceiver(Pkt),
    ToSender(Pkt),
    /// An ACK of the bulk flow reaches its sender: (seq, send time, CE).
    BulkAck(u64, Time, bool),
    RateChange(Rate),
    Sample,
}

/// What a run recorded.
#[derive(Default)]
pub struct Trace {
    /// (dequeue time, sojourn) of every forward packet at the bottleneck.
    pub sojourn: Vec<(Time, Dur)>,
    /// (time, target bitrate, encoder bitrate) every 100 ms.
    pub targets: Vec<(Time, Rate, Rate)>,
    pub frames: Vec<FrameDone>,
    pub drops: u64,
    pub marks: u64,
    /// Forward bytes delivered to the receiver per 100 ms sample.
    pub delivered: Vec<(Time, u64)>,
    /// Send times of audio packets.
    pub audio_sent: Vec<Time>,
    /// Bulk-flow bytes delivered per 100 ms sample.
    pub bulk_delivered: Vec<(Time, u64)>,
    bulk_delivered_acc: u64,
}

impl Trace {
    pub fn sojourn_after(&self, t: Time) -> Vec<Dur> {
        let mut v: Vec<Dur> = self
            .sojourn
            .iter()
            .filter(|(at, _)| *at >= t)
            .map(|&(_, d)| d)
            .collect();
        v.sort();
        v
    }
    pub fn mean_target(&self, from: Time, to: Time) -> f64 {
        let v: Vec<f64> = self
            .targets
            .iter()
            .filter(|(t, _, _)| *t >= from && *t < to)
            .map(|(_, r, _)| r.0 as f64)
            .collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    }
    /// Delivered forward rate of the bulk flow between `from` and `to`, bit/s.
    pub fn bulk_goodput(&self, from: Time, to: Time) -> f64 {
        Self::rate(&self.bulk_delivered, from, to)
    }
    /// Delivered forward rate between `from` and `to`, bit/s.
    pub fn goodput(&self, from: Time, to: Time) -> f64 {
        Self::rate(&self.delivered, from, to)
    }
    fn rate(v: &[(Time, u64)], from: Time, to: Time) -> f64 {
        let b: u64 = v.iter().filter(|(t, _)| *t > from && *t <= to).map(|&(_, b)| b).sum();
        b as f64 * 8.0 / (to - from).as_secs_f64()
    }
}

pub fn pct(sorted: &[Dur], q: f64) -> Dur {
    if sorted.is_empty() {
        return Dur::ZERO;
    }
    let r = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[r - 1]
}

pub struct Sim {
    pub net: Net,
    pub tx: MediaSender,
    pub rx: MediaReceiver,
    pub trace: Trace,
    /// The competing bulk flow, if any ([`Sim::with_bulk`]).
    pub bulk: Option<BulkFlow>,
    now: Time,
    heap: BinaryHeap<Reverse<(Time, u64)>>,
    events: Vec<Option<Ev>>,
    free: Vec<usize>,
    seq: u64,
    // ids into `events`: (time, seq) → index stored in a side map via seq order
    slots: std::collections::HashMap<u64, usize>,
    tx_timer: Option<Time>,
    rx_timer: Option<Time>,
    queue: VecDeque<(Pkt, Time)>,
    busy: bool,
    rng: Rng,
    delivered_acc: u64,
}

impl Sim {
    pub fn new(p: &MediaParams, net: Net, seed: u64) -> Sim {
        let tx = MediaSender::new(p, Rng::new(seed), Time::ZERO);
        let rx = MediaReceiver::new(p, Time::ZERO);
        let mut s = Sim {
            net,
            tx,
            rx,
            trace: Trace::default(),
            bulk: None,
            now: Time::ZERO,
            heap: BinaryHeap::new(),
            events: Vec::new(),
            free: Vec::new(),
            seq: 0,
            slots: Default::default(),
            tx_timer: None,
            rx_timer: None,
            queue: VecDeque::new(),
            busy: false,
            rng: Rng::new(seed ^ 0xFEED),
            delivered_acc: 0,
        };
        for (t, r) in s.net.rate_changes.clone() {
            s.push(t, Ev::RateChange(r));
        }
        s.push(Time::ZERO, Ev::Sample);
        s.service_tx();
        s.service_rx();
        s
    }

    /// The same, with a Prague-like bulk flow ([`BulkFlow`]) starting at `start` through
    /// the same bottleneck (same base delays).
    pub fn with_bulk(p: &MediaParams, net: Net, seed: u64, start: Time) -> Sim {
        let mut s = Sim::new(p, net, seed);
        s.bulk = Some(BulkFlow::new());
        s.push(start, Ev::BulkAck(u64::MAX, start, false));
        s
    }

    fn service_bulk(&mut self) {
        while let Some(b) = self.bulk.as_mut() {
            if !b.can_send() {
                break;
            }
            let seq = b.on_sent();
            let size = b.mss;
            self.enqueue(Pkt {
                hdr: Payload::Bulk { seq, sent: self.now },
                size,
                ecn: Ecn::Ect1,
            });
        }
    }

    fn push(&mut self, t: Time, ev: Ev) {
        let idx = if let Some(i) = self.free.pop() {
            self.events[i] = Some(ev);
            i
        } else {
            self.events.push(Some(ev));
            self.events.len() - 1
        };
        self.seq += 1;
        self.slots.insert(self.seq, idx);
        self.heap.push(Reverse((t, self.seq)));
    }

    fn service_tx(&mut self) {
        while let Some(t) = self.tx.poll_transmit(self.now) {
            if let MediaHeader::Data(d) = &t.header {
                if d.is_audio {
                    self.trace.audio_sent.push(self.now);
                }
            }
            self.enqueue(Pkt {
                hdr: Payload::Media(t.header),
                size: t.size,
                ecn: t.ecn,
            });
        }
        if let Some(t) = self.tx.poll_timeout() {
            let t = if t <= self.now {
                self.now + Dur::from_nanos(1)
            } else {
                t
            };
            if self.tx_timer != Some(t) {
                self.tx_timer = Some(t);
                self.push(t, Ev::SenderTimer);
            }
        } else {
            self.tx_timer = None;
        }
    }

    fn service_rx(&mut self) {
        while let Some(t) = self.rx.poll_transmit(self.now) {
            let mut p = Pkt {
                hdr: Payload::Media(t.header),
                size: t.size,
                ecn: t.ecn,
            };
            if let Some((from, f)) = self.net.rev_fault {
                if self.now >= from {
                    match f {
                        RevFault::Drop(prob) => {
                            if self.rng.chance(prob) {
                                continue;
                            }
                        }
                        RevFault::Corrupt(prob) => {
                            if self.rng.chance(prob) {
                                if let Payload::Media(MediaHeader::Feedback(fb)) = &mut p.hdr {
                                    if self.rng.chance(0.5) {
                                        let n = self.rng.below(fb.bytes.len() as u64) as usize;
                                        fb.bytes.truncate(n);
                                    } else {
                                        // Version, FMT, PT or length.
                                        let i = self.rng.below(4) as usize;
                                        fb.bytes[i] ^= 1 << (1 + self.rng.below(7));
                                    }
                                }
                            }
                        }
                        RevFault::Garbage(prob) => {
                            if self.rng.chance(prob) {
                                if let Payload::Media(MediaHeader::Feedback(fb)) = &mut p.hdr {
                                    for _ in 0..3 {
                                        let i = self.rng.below(fb.bytes.len() as u64) as usize;
                                        fb.bytes[i] = self.rng.next_u32() as u8;
                                    }
                                }
                            }
                        }
                        RevFault::AllCe => {
                            if let Payload::Media(MediaHeader::Feedback(fb)) = &mut p.hdr {
                                rewrite_ce(&mut fb.bytes);
                            }
                        }
                    }
                }
            }
            let at = self.now + self.net.owd;
            self.push(at, Ev::ToSender(p));
        }
        if let Some(t) = self.rx.poll_timeout() {
            let t = if t <= self.now {
                self.now + Dur::from_nanos(1)
            } else {
                t
            };
            if self.rx_timer != Some(t) {
                self.rx_timer = Some(t);
                self.push(t, Ev::ReceiverTimer);
            }
        } else {
            self.rx_timer = None;
        }
    }

    fn enqueue(&mut self, mut p: Pkt) {
        if let Some((from, f)) = self.net.fwd_fault {
            if self.now >= from {
                p.ecn = match (f, p.ecn) {
                    (FwdFault::Bleach, _) => Ecn::NotEct,
                    (FwdFault::Remark, Ecn::Ect1) => Ecn::Ect0,
                    (_, e) => e,
                };
            }
        }
        let tail = matches!(&p.hdr, Payload::Media(MediaHeader::Data(d)) if !d.is_audio && d.marker);
        let drop_tail = tail && matches!(self.net.fwd_fault, Some((from, FwdFault::DropFrameTail)) if self.now >= from);
        if drop_tail || self.queue.len() >= self.net.limit_pkts {
            self.trace.drops += 1;
            return;
        }
        self.queue.push_back((p, self.now));
        if !self.busy {
            self.start_tx();
        }
    }

    fn start_tx(&mut self) {
        if let Some((p, _)) = self.queue.front() {
            self.busy = true;
            let d = self.net.rate.tx_time(u64::from(p.size));
            self.push(self.now + d, Ev::Departure);
        } else {
            self.busy = false;
        }
    }

    pub fn run_until(&mut self, end: Time) {
        while let Some(&Reverse((t, seq))) = self.heap.peek() {
            if t > end {
                break;
            }
            self.heap.pop();
            let idx = self.slots.remove(&seq).unwrap();
            let ev = self.events[idx].take().unwrap();
            self.free.push(idx);
            self.now = t;
            match ev {
                Ev::SenderTimer => {
                    if self.tx_timer == Some(t) {
                        self.tx_timer = None;
                        self.tx.handle_timeout(t);
                        self.service_tx();
                    }
                }
                Ev::ReceiverTimer => {
                    if self.rx_timer == Some(t) {
                        self.rx_timer = None;
                        self.rx.handle_timeout(t);
                        self.service_rx();
                    }
                }
                Ev::Departure => {
                    let (mut p, enq) = self.queue.pop_front().unwrap();
                    // Sojourn measured at the end of serialisation minus the packet's own
                    // transmission time (time spent waiting).
                    let own = self.net.rate.tx_time(u64::from(p.size));
                    let soj = (t - enq).saturating_sub(own);
                    self.trace.sojourn.push((t, soj));
                    if let Aqm::Step(th) = self.net.aqm {
                        if soj > th && p.ecn.is_l4s_id() {
                            p.ecn = Ecn::Ce;
                            self.trace.marks += 1;
                        }
                    }
                    let at = t + self.net.owd;
                    self.push(at, Ev::ToReceiver(p));
                    self.start_tx();
                }
                Ev::ToReceiver(p) => match p.hdr {
                    Payload::Media(h) => {
                        self.delivered_acc += u64::from(p.size);
                        self.rx.handle_packet(t, &h, p.size, p.ecn);
                        self.rx.drain_frames(&mut self.trace.frames);
                        self.service_rx();
                    }
                    Payload::Bulk { seq, sent } => {
                        self.trace.bulk_delivered_acc += u64::from(p.size);
                        let at = t + self.net.owd;
                        self.push(at, Ev::BulkAck(seq, sent, p.ecn == Ecn::Ce));
                    }
                },
                Ev::ToSender(p) => {
                    if let Payload::Media(h) = &p.hdr {
                        self.tx.handle_packet(t, h, p.size, p.ecn);
                    }
                    self.service_tx();
                }
                Ev::BulkAck(seq, sent, ce) => {
                    if seq != u64::MAX {
                        if let Some(b) = self.bulk.as_mut() {
                            b.on_ack(t, seq, sent, ce);
                        }
                    }
                    self.service_bulk();
                }
                Ev::RateChange(r) => {
                    self.net.rate = r;
                }
                Ev::Sample => {
                    let m = self.tx.media_stats();
                    self.trace.targets.push((t, m.target_bitrate, m.encoder_bitrate));
                    self.trace.delivered.push((t, self.delivered_acc));
                    self.delivered_acc = 0;
                    self.trace.bulk_delivered.push((t, self.trace.bulk_delivered_acc));
                    self.trace.bulk_delivered_acc = 0;
                    self.push(t + Dur::from_millis(100), Ev::Sample);
                }
            }
        }
        self.now = end;
    }

    pub fn now(&self) -> Time {
        self.now
    }
}

/// Set every received metric's ECN bits to CE in an encoded CCFB (blocks walked with the
/// count convention); leaves malformed bytes alone.
pub fn rewrite_ce(b: &mut [u8]) {
    if b.len() < 12 {
        return;
    }
    let ts_at = b.len() - 4;
    let mut at = 8;
    while at + 8 <= ts_at {
        let n = usize::from(u16::from_be_bytes([b[at + 6], b[at + 7]]));
        let body = n.div_ceil(2) * 4;
        if at + 8 + body > ts_at {
            return;
        }
        for i in 0..n {
            let o = at + 8 + 2 * i;
            if b[o] & 0x80 != 0 {
                b[o] |= 0x60;
            }
        }
        at += 8 + body;
    }
}
