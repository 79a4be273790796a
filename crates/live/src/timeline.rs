//! `--packets` on the live backend: one record per data packet of the datagram flows (UDP
//! Prague and probes), joining the sender's view (send time, ECN sent), every queue the
//! packet crossed (from the forwarder's per-packet records: sub-queue, sojourn, decision)
//! and the receiver's view (arrival time, ECN received). Written through the simulator's
//! [`TimelineSink`] (`packets.parquet`, the same columns).
//!
//! The three views come from different threads as [`Event`]s over a channel; the
//! [`Tracker`] (on the run's main thread) keeps only the packets in flight. A packet is
//! identified by its flow and the low 32 bits of its sequence number, which the forwarder
//! reads from the first 16 payload bytes ([`crate::wire::data_prefix`]). A record is written
//! when the packet arrives or is dropped; packets neither seen to arrive nor dropped within
//! [`LOST_AFTER`] of their send time are written as lost (lost outside the queues, e.g. a
//! full socket buffer). Kernel TCP flows are not recorded.

use l4s_aqm::QueueId;
use l4s_core::{Dur, Ecn, Time};
use l4s_sim::timeline::{Decision, Hop, PacketRow, TimelineSink, MAX_HOPS};
use std::collections::HashMap;
use std::io;

/// Packets not accounted for this long after their send time are written as lost.
pub const LOST_AFTER: Dur = Dur::from_secs(5);

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
}

/// Joins the events of each packet and writes its record.
pub struct Tracker {
    open: HashMap<(u32, u32), PacketRow>,
    sink: Box<dyn TimelineSink>,
    error: Option<io::Error>,
    /// Records written.
    pub written: u64,
}

impl Tracker {
    pub fn new(sink: Box<dyn TimelineSink>) -> Tracker {
        Tracker {
            open: HashMap::new(),
            sink,
            error: None,
            written: 0,
        }
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
                // A sequence number seen again after 2^32 packets: the old one is history.
                if let Some(old) = self.open.insert((flow, seq as u32), row) {
                    self.emit(PacketRow { lost: true, ..old });
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
                let Some(row) = self.open.get_mut(&(flow, seq32)) else {
                    return;
                };
                if let Some(slot) = row.hops.iter_mut().find(|h| h.is_none()) {
                    *slot = Some(Hop {
                        link,
                        subqueue,
                        sojourn,
                        decision,
                    });
                }
                if decision == Decision::Drop {
                    if let Some(mut r) = self.open.remove(&(flow, seq32)) {
                        r.lost = true;
                        self.emit(r);
                    }
                }
            }
            Event::Arrived { flow, seq32, at, ecn } => {
                if let Some(mut r) = self.open.remove(&(flow, seq32)) {
                    r.arrival = Some(at);
                    r.ecn_received = Some(ecn);
                    self.emit(r);
                }
            }
        }
    }

    /// Write packets sent before `now − LOST_AFTER` and never accounted for as lost.
    pub fn expire(&mut self, now: Time) {
        let Some(limit) = now.as_nanos().checked_sub(LOST_AFTER.as_nanos()) else {
            return;
        };
        let old: Vec<(u32, u32)> = self
            .open
            .iter()
            .filter(|(_, r)| r.sent.as_nanos() < limit)
            .map(|(k, _)| *k)
            .collect();
        let mut rows: Vec<PacketRow> = old.iter().filter_map(|k| self.open.remove(k)).collect();
        rows.sort_by_key(|r| (r.sent, r.flow, r.seq));
        for mut r in rows {
            r.lost = true;
            self.emit(r);
        }
    }

    /// Packets still open.
    pub fn in_flight(&self) -> usize {
        self.open.len()
    }

    /// Write what is still in flight (in send order, neither arrived nor lost) and close
    /// the sink; returns the first write error.
    pub fn finish(mut self) -> io::Result<()> {
        let mut rows: Vec<PacketRow> = self.open.drain().map(|(_, r)| r).collect();
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
}
