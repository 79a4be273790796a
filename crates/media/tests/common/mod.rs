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
struct Pkt {
    hdr: MediaHeader,
    size: u32,
    ecn: Ecn,
}

#[derive(Clone, Debug)]
enum Ev {
    SenderTimer,
    ReceiverTimer,
    Departure,
    ToReceiver(Pkt),
    ToSender(Pkt),
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
    /// Delivered forward rate between `from` and `to`, bit/s.
    pub fn goodput(&self, from: Time, to: Time) -> f64 {
        let b: u64 = self
            .delivered
            .iter()
            .filter(|(t, _)| *t > from && *t <= to)
            .map(|&(_, b)| b)
            .sum();
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
                hdr: t.header,
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
                hdr: t.header,
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
                                if let MediaHeader::Feedback(fb) = &mut p.hdr {
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
                                if let MediaHeader::Feedback(fb) = &mut p.hdr {
                                    for _ in 0..3 {
                                        let i = self.rng.below(fb.bytes.len() as u64) as usize;
                                        fb.bytes[i] = self.rng.next_u32() as u8;
                                    }
                                }
                            }
                        }
                        RevFault::AllCe => {
                            if let MediaHeader::Feedback(fb) = &mut p.hdr {
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
        if self.queue.len() >= self.net.limit_pkts {
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
                Ev::ToReceiver(p) => {
                    self.delivered_acc += u64::from(p.size);
                    self.rx.handle_packet(t, &p.hdr, p.size, p.ecn);
                    self.rx.drain_frames(&mut self.trace.frames);
                    self.service_rx();
                }
                Ev::ToSender(p) => {
                    self.tx.handle_packet(t, &p.hdr, p.size, p.ecn);
                    self.service_tx();
                }
                Ev::RateChange(r) => {
                    self.net.rate = r;
                }
                Ev::Sample => {
                    let m = self.tx.media_stats();
                    self.trace.targets.push((t, m.target_bitrate, m.encoder_bitrate));
                    self.trace.delivered.push((t, self.delivered_acc));
                    self.delivered_acc = 0;
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
