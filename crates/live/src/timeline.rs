//! `--packets` on the live backend: one record per data packet, joining the sender's view
//! (send time, ECN sent), every queue the packet crossed (from the forwarder's per-packet
//! records: sub-queue, sojourn, decision) and the receiver's view (arrival time, ECN
//! received). Written through the simulator's [`TimelineSink`] (`packets.parquet`, the same
//! columns).
//!
//! The three views come from different threads as [`Event`]s over a channel; the
//! [`Tracker`] (on the run's main thread) keeps only the packets in flight. A packet is
//! identified by its flow and the low 32 bits of its sequence number:
//! * datagram flows (UDP Prague, probes, media, cbr, queries): the endpoints' own sequence
//!   number, which the forwarder reads from the first 16 payload bytes
//!   ([`crate::wire::data_prefix`]);
//! * kernel TCP (`tcp` flows and TCP applications): the TCP sequence number of the segment's
//!   first byte, seen by the packet taps ([`crate::tap`]) and in the forwarder's records
//!   ([`l4s_fwd::router::PacketRecord::tcp_seq`]), which are told apart by flow with the
//!   taps' [`Match`]es ([`Event::TcpHop`]). A retransmission opens a new record behind the
//!   earlier transmission's: packets of a flow keep their order through a path, so a
//!   queue's record for that sequence number goes to the oldest transmission that has not
//!   crossed that queue yet, and an arrival to the oldest one still open (when the first
//!   copy arrives after all, it is not mistaken for the retransmission).
//!
//! A record is written when the packet arrives or is dropped; packets neither seen to arrive
//! nor dropped within [`LOST_AFTER`] of their send time are written as lost (lost outside the
//! queues, e.g. a full socket buffer).

use crate::tap::Match;
use l4s_aqm::QueueId;
use l4s_core::{Dur, Ecn, Time};
use l4s_measure::timeline::{Decision, Hop, PacketRow, TimelineSink, MAX_HOPS};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::IpAddr;

/// Packets not accounted for this long after their send time are written as lost.
pub const LOST_AFTER: Dur = Dur::from_secs(5);
/// How long a hop or an arrival that came before its packet's send is kept for it.
pub const EARLY_KEEP: Dur = Dur::from_secs(1);
/// Most packets with early events kept.
pub const MAX_EARLY: usize = 100_000;

/// One view of a packet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Event {
    Sent {
        flow: u32,
        seq: u64,
        size: u32,
        sent: Time,
        ecn: Ecn,
    },
    Hop {
        flow: u32,
        seq32: u32,
        link: u32,
        subqueue: QueueId,
        sojourn: Dur,
        decision: Decision,
    },
    Arrived {
        flow: u32,
        seq32: u32,
        at: Time,
        ecn: Ecn,
    },
    /// A forwarder record of a TCP data segment: its flow is found from the addresses and
    /// ports ([`Tracker::set_tcp_flows`]).
    TcpHop {
        src: IpAddr,
        dst: IpAddr,
        src_port: u16,
        dst_port: u16,
        seq: u32,
        link: u32,
        subqueue: QueueId,
        sojourn: Dur,
        decision: Decision,
    },
}

/// Joins the events of each packet and writes its record.
pub struct Tracker {
    /// The oldest open transmission of each (flow, sequence number).
    open: HashMap<(u32, u32), PacketRow>,
    /// Later transmissions of the same (retransmissions), oldest first.
    later: HashMap<(u32, u32), VecDeque<PacketRow>>,
    /// The kernel TCP flows and which segments are theirs.
    tcp_flows: Vec<(u32, Match)>,
    /// Hops and arrivals handled before their packet's send: the views come from different
    /// threads, and a packet tap reads a segment's transmission after the fact, so a
    /// forwarder on a path without delay may report the segment first. Applied when the
    /// send comes; forgotten [`EARLY_KEEP`] after they came (by the time of [`Self::expire`]).
    early: HashMap<(u32, u32), (Time, Vec<Event>)>,
    /// The time of the last [`Self::expire`].
    now: Time,
    /// Per flow, the least time a packet can take from send to arrival (propagation).
    min_owd: Vec<Dur>,
    sink: Box<dyn TimelineSink>,
    error: Option<io::Error>,
    /// Records written.
    pub written: u64,
    /// Arrivals ignored because they came sooner after the send than the path allows.
    pub ignored_arrivals: u64,
}

impl Tracker {
    pub fn new(sink: Box<dyn TimelineSink>) -> Tracker {
        Tracker {
            open: HashMap::new(),
            later: HashMap::new(),
            tcp_flows: Vec::new(),
            early: HashMap::new(),
            now: Time::ZERO,
            min_owd: Vec::new(),
            sink,
            error: None,
            written: 0,
            ignored_arrivals: 0,
        }
    }

    /// The kernel TCP flows (index, segments of theirs), for [`Event::TcpHop`]s. Set before
    /// the first event is handled; hops of segments no flow claims are ignored.
    pub fn set_tcp_flows(&mut self, flows: Vec<(u32, Match)>) {
        self.tcp_flows = flows;
    }

    /// Per flow index, the propagation delay of its path: an arrival sooner than 90 % of it
    /// after the oldest open send cannot be that packet's (it is that of an earlier copy
    /// whose send was not seen, e.g. when a packet tap fell behind a stalled host) and is
    /// ignored rather than joined.
    pub fn set_min_owd(&mut self, min_owd: Vec<Dur>) {
        self.min_owd = min_owd;
    }

    fn emit(&mut self, r: PacketRow) {
        if self.error.is_none() {
            match self.sink.row(&r) {
                Ok(()) => self.written += 1,
                Err(e) => self.error = Some(e),
            }
        }
    }

    pub fn handle(&mut self, ev: Event) {
        match ev {
            Event::Sent {
                flow,
                seq,
                size,
                sent,
                ecn,
            } => {
                let row = PacketRow {
                    flow,
                    seq,
                    size,
                    sent,
                    arrival: None,
                    lost: false,
                    ecn_sent: ecn,
                    ecn_received: None,
                    hops: [None; MAX_HOPS],
                };
                // A TCP retransmission (or a sequence number seen again after 2^32 packets)
                // waits behind the transmissions still open.
                match self.open.entry((flow, seq as u32)) {
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(row);
                    }
                    std::collections::hash_map::Entry::Occupied(_) => {
                        self.later.entry((flow, seq as u32)).or_default().push_back(row);
                    }
                }
                if let Some((_, evs)) = self.early.remove(&(flow, seq as u32)) {
                    for ev in evs {
                        self.handle(ev);
                    }
                }
            }
            Event::TcpHop {
                src,
                dst,
                src_port,
                dst_port,
                seq,
                link,
                subqueue,
                sojourn,
                decision,
            } => {
                let flow = self
                    .tcp_flows
                    .iter()
                    .find(|(_, m)| m.matches_addrs(src, dst, src_port, dst_port))
                    .map(|(f, _)| *f);
                if let Some(flow) = flow {
                    self.handle(Event::Hop {
                        flow,
                        seq32: seq,
                        link,
                        subqueue,
                        sojourn,
                        decision,
                    });
                }
            }
            Event::Hop {
                flow,
                seq32,
                link,
                subqueue,
                sojourn,
                decision,
            } => {
                let key = (flow, seq32);
                let not_crossed = |r: &PacketRow| r.hops.iter().flatten().all(|h| h.link != link);
                // 0: the oldest open transmission; i > 0: later[i - 1].
                let at = match self.open.get(&key) {
                    None => None,
                    Some(r) if not_crossed(r) => Some(0),
                    Some(_) => self
                        .later
                        .get(&key)
                        .and_then(|l| l.iter().position(not_crossed))
                        .map(|i| i + 1),
                };
                let Some(at) = at else {
                    self.keep_early(flow, seq32, ev);
                    return;
                };
                let row = match at {
                    0 => self.open.get_mut(&key),
                    i => self.later.get_mut(&key).and_then(|l| l.get_mut(i - 1)),
                };
                let Some(row) = row else { return };
                if let Some(slot) = row.hops.iter_mut().find(|h| h.is_none()) {
                    *slot = Some(Hop {
                        link,
                        subqueue,
                        sojourn,
                        decision,
                    });
                }
                if decision == Decision::Drop {
                    let r = match at {
                        0 => self.take_oldest(key),
                        i => self.later.get_mut(&key).and_then(|l| l.remove(i - 1)),
                    };
                    if let Some(mut r) = r {
                        r.lost = true;
                        self.emit(r);
                    }
                }
            }
            Event::Arrived { flow, seq32, at, ecn } => {
                if let Some(r) = self.open.get(&(flow, seq32)) {
                    let min = self.min_owd.get(flow as usize).map_or(0, |d| d.as_nanos() / 10 * 9);
                    if at.as_nanos() < r.sent.as_nanos().saturating_add(min) {
                        self.ignored_arrivals += 1;
                        return;
                    }
                }
                if let Some(mut r) = self.take_oldest((flow, seq32)) {
                    r.arrival = Some(at);
                    r.ecn_received = Some(ecn);
                    self.emit(r);
                } else {
                    self.keep_early(flow, seq32, ev);
                }
            }
        }
    }

    /// Remove the oldest open transmission of `key`; the next one, if any, takes its place.
    fn take_oldest(&mut self, key: (u32, u32)) -> Option<PacketRow> {
        let r = self.open.remove(&key)?;
        if let Some(l) = self.later.get_mut(&key) {
            if let Some(next) = l.pop_front() {
                self.open.insert(key, next);
            }
            if l.is_empty() {
                self.later.remove(&key);
            }
        }
        Some(r)
    }

    fn keep_early(&mut self, flow: u32, seq32: u32, ev: Event) {
        if self.early.len() < MAX_EARLY || self.early.contains_key(&(flow, seq32)) {
            let e = self
                .early
                .entry((flow, seq32))
                .or_insert_with(|| (self.now, Vec::new()));
            if e.1.len() < 2 * MAX_HOPS {
                e.1.push(ev);
            }
        }
    }

    /// Write packets sent before `now − LOST_AFTER` and never accounted for as lost.
    pub fn expire(&mut self, now: Time) {
        self.now = now;
        if let Some(limit) = now.as_nanos().checked_sub(EARLY_KEEP.as_nanos()) {
            self.early.retain(|_, (t, _)| t.as_nanos() >= limit);
        }
        let Some(limit) = now.as_nanos().checked_sub(LOST_AFTER.as_nanos()) else {
            return;
        };
        let old: Vec<(u32, u32)> = self
            .open
            .iter()
            .filter(|(_, r)| r.sent.as_nanos() < limit)
            .map(|(k, _)| *k)
            .collect();
        let mut rows = Vec::new();
        for k in old {
            while self.open.get(&k).is_some_and(|r| r.sent.as_nanos() < limit) {
                rows.extend(self.take_oldest(k));
            }
        }
        rows.sort_by_key(|r| (r.sent, r.flow, r.seq));
        for mut r in rows {
            r.lost = true;
            self.emit(r);
        }
    }

    /// Packets still open.
    pub fn in_flight(&self) -> usize {
        self.open.len() + self.later.values().map(VecDeque::len).sum::<usize>()
    }

    /// Write what is still in flight (in send order, neither arrived nor lost) and close
    /// the sink; returns the first write error.
    pub fn finish(mut self) -> io::Result<()> {
        let mut rows: Vec<PacketRow> = self.open.drain().map(|(_, r)| r).collect();
        rows.extend(self.later.drain().flat_map(|(_, l)| l));
        rows.sort_by_key(|r| (r.sent, r.flow, r.seq));
        for r in rows {
            self.emit(r);
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.sink.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    struct Mem(Arc<Mutex<Vec<PacketRow>>>);
    impl TimelineSink for Mem {
        fn row(&mut self, r: &PacketRow) -> io::Result<()> {
            self.0.lock().unwrap().push(*r);
            Ok(())
        }
        fn finish(self: Box<Self>) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn joins_send_hops_and_arrival() {
        let rows = Arc::new(Mutex::new(Vec::new()));
        let mut t = Tracker::new(Box::new(Mem(rows.clone())));
        let sent = |seq: u64, ms: u64| Event::Sent {
            flow: 1,
            seq,
            size: 200,
            sent: Time::from_millis(ms),
            ecn: Ecn::Ect1,
        };
        let hop = |seq32: u32, decision| Event::Hop {
            flow: 1,
            seq32,
            link: 0,
            subqueue: QueueId::L,
            sojourn: Dur::from_micros(300),
            decision,
        };
        t.handle(sent(0, 0));
        t.handle(sent(1, 1));
        t.handle(sent(2, 2));
        t.handle(hop(0, Decision::Mark));
        t.handle(Event::Arrived {
            flow: 1,
            seq32: 0,
            at: Time::from_millis(11),
            ecn: Ecn::Ce,
        });
        t.handle(hop(1, Decision::Drop));
        // Unknown packets (another flow's, or an ACK) are ignored.
        t.handle(hop(99, Decision::Pass));
        assert_eq!(t.in_flight(), 1);
        t.expire(Time::from_millis(100));
        assert_eq!(t.in_flight(), 1, "not yet expired");
        t.expire(Time::from_secs(6));
        assert_eq!(t.in_flight(), 0);
        t.finish().unwrap();
        let r = rows.lock().unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].arrival, Some(Time::from_millis(11)));
        assert_eq!(r[0].ecn_received, Some(Ecn::Ce));
        assert_eq!(r[0].hops[0].unwrap().decision, Decision::Mark);
        assert!(r[1].lost && r[1].hops[0].unwrap().decision == Decision::Drop);
        assert!(r[2].lost && r[2].hops[0].is_none() && r[2].seq == 2);
    }

    #[test]
    fn hops_and_arrivals_before_the_send_are_applied_when_it_comes() {
        let rows = Arc::new(Mutex::new(Vec::new()));
        let mut t = Tracker::new(Box::new(Mem(rows.clone())));
        let sent = |seq: u64| Event::Sent {
            flow: 0,
            seq,
            size: 100,
            sent: Time::from_millis(1),
            ecn: Ecn::Ect1,
        };
        let hop = |seq32| Event::Hop {
            flow: 0,
            seq32,
            link: 1,
            subqueue: QueueId::L,
            sojourn: Dur::from_micros(50),
            decision: Decision::Mark,
        };
        // Packet 5: the forwarder and the receiver report before the sender does.
        t.handle(hop(5));
        t.handle(Event::Arrived {
            flow: 0,
            seq32: 5,
            at: Time::from_millis(3),
            ecn: Ecn::Ce,
        });
        assert_eq!(t.in_flight(), 0);
        t.handle(sent(5));
        assert_eq!(t.in_flight(), 0, "joined and written");
        // Packet 7 (a path of 10 ms): the arrival of an earlier copy whose send was not seen
        // comes 2 ms after this send: not joined; this copy's own arrival is.
        t.set_min_owd(vec![Dur::from_millis(10)]);
        t.handle(Event::Arrived {
            flow: 0,
            seq32: 7,
            at: Time::from_millis(2),
            ecn: Ecn::Ect1,
        });
        t.handle(sent(7));
        t.handle(Event::Arrived {
            flow: 0,
            seq32: 7,
            at: Time::from_millis(3),
            ecn: Ecn::Ect1,
        });
        assert_eq!((t.in_flight(), t.ignored_arrivals), (1, 2));
        t.handle(Event::Arrived {
            flow: 0,
            seq32: 7,
            at: Time::from_millis(12),
            ecn: Ecn::Ect1,
        });
        assert_eq!(t.in_flight(), 0);
        // Packet 6: a stray hop that no send claims within EARLY_KEEP is forgotten.
        t.handle(hop(6));
        t.expire(Time::from_millis(100));
        assert_eq!(t.early.len(), 1);
        t.expire(Time::from_millis(1_200));
        assert!(t.early.is_empty());
        t.handle(sent(6));
        t.finish().unwrap();
        let r = rows.lock().unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(
            (r[0].seq, r[0].arrival, r[0].ecn_received),
            (5, Some(Time::from_millis(3)), Some(Ecn::Ce))
        );
        assert_eq!(r[0].hops[0].unwrap().decision, Decision::Mark);
        assert_eq!((r[1].seq, r[1].arrival), (7, Some(Time::from_millis(12))));
        assert!(r[2].seq == 6 && r[2].hops[0].is_none() && r[2].arrival.is_none());
    }

    #[test]
    fn tcp_segments_are_joined_by_flow_and_sequence_number() {
        let rows = Arc::new(Mutex::new(Vec::new()));
        let mut t = Tracker::new(Box::new(Mem(rows.clone())));
        let client: IpAddr = "10.0.0.1".parse().unwrap();
        let server: IpAddr = "10.0.1.2".parse().unwrap();
        // Flow 3 uploads to server:5201; flow 4 downloads from server:8080 to the client.
        t.set_tcp_flows(vec![
            (3, Match::ToServer(std::net::SocketAddr::new(server, 5201))),
            (4, Match::FromServer(std::net::SocketAddr::new(server, 8080), client)),
        ]);
        let sent = |flow: u32, seq: u32, ms: u64| Event::Sent {
            flow,
            seq: seq as u64,
            size: 1514,
            sent: Time::from_millis(ms),
            ecn: Ecn::Ect0,
        };
        let hop = |src, dst, sp, dp, seq, decision| Event::TcpHop {
            src,
            dst,
            src_port: sp,
            dst_port: dp,
            seq,
            link: 2,
            subqueue: QueueId::C,
            sojourn: Dur::from_millis(4),
            decision,
        };
        let arrived = |flow: u32, seq32: u32, ms: u64| Event::Arrived {
            flow,
            seq32,
            at: Time::from_millis(ms),
            ecn: Ecn::Ce,
        };
        // The same sequence number in both flows (parallel connections can share one).
        t.handle(sent(3, 1000, 1));
        t.handle(sent(4, 1000, 2));
        t.handle(hop(client, server, 40_000, 5201, 1000, Decision::Mark));
        t.handle(hop(server, client, 8080, 51_000, 1000, Decision::Pass));
        // A segment of neither flow (another port) is ignored.
        t.handle(hop(client, server, 40_000, 9999, 1000, Decision::Drop));
        t.handle(arrived(3, 1000, 15));
        t.handle(arrived(4, 1000, 16));
        // A retransmission: the first transmission was dropped, the second arrives.
        t.handle(sent(3, 2448, 20));
        t.handle(hop(client, server, 40_001, 5201, 2448, Decision::Drop));
        t.handle(sent(3, 2448, 60));
        t.handle(hop(client, server, 40_001, 5201, 2448, Decision::Pass));
        t.handle(arrived(3, 2448, 75));
        assert_eq!(t.in_flight(), 0);
        // A spurious retransmission: the first copy waited in the queue (50 ms), the
        // retransmission went 40 ms later; both arrive, each matched to its own send.
        t.handle(sent(3, 3896, 100));
        t.handle(sent(3, 3896, 140));
        assert_eq!(t.in_flight(), 2);
        t.handle(Event::TcpHop {
            src: client,
            dst: server,
            src_port: 40_001,
            dst_port: 5201,
            seq: 3896,
            link: 2,
            subqueue: QueueId::C,
            sojourn: Dur::from_millis(50),
            decision: Decision::Pass,
        });
        t.handle(hop(client, server, 40_001, 5201, 3896, Decision::Pass));
        t.handle(arrived(3, 3896, 160));
        t.handle(arrived(3, 3896, 165));
        assert_eq!(t.in_flight(), 0);
        t.finish().unwrap();
        let r = rows.lock().unwrap();
        assert_eq!(r.len(), 6);
        let (first, second) = (&r[4], &r[5]);
        assert_eq!(
            (first.sent, first.arrival),
            (Time::from_millis(100), Some(Time::from_millis(160)))
        );
        assert_eq!(first.hops[0].unwrap().sojourn, Dur::from_millis(50));
        assert_eq!(
            (second.sent, second.arrival),
            (Time::from_millis(140), Some(Time::from_millis(165)))
        );
        assert_eq!(second.hops[0].unwrap().sojourn, Dur::from_millis(4));
        assert!(!first.lost && !second.lost);
        let (up, down) = (&r[0], &r[1]);
        assert_eq!((up.flow, up.seq, up.arrival), (3, 1000, Some(Time::from_millis(15))));
        assert_eq!(up.hops[0].unwrap().decision, Decision::Mark);
        assert_eq!(up.hops[0].unwrap().link, 2);
        assert_eq!((down.flow, down.arrival), (4, Some(Time::from_millis(16))));
        assert_eq!(down.hops[0].unwrap().decision, Decision::Pass);
        assert!(down.hops[1].is_none());
        assert!(r[2].lost && r[2].sent == Time::from_millis(20));
        assert_eq!(r[2].hops[0].unwrap().decision, Decision::Drop);
        assert!(!r[3].lost && r[3].sent == Time::from_millis(60) && r[3].hops[0].unwrap().decision == Decision::Pass);
    }
}
