//! `--packets`: one record per data packet, joining the end hosts' view (send time,
//! arrival or loss, ECN sent and received) with every queue it crossed (sub-queue,
//! sojourn, the AQM's decision). Records are handed to a [`TimelineSink`] as packets
//! finish, so memory holds only the packets in flight.
//!
//! Only data packets of the forward direction are tracked. At most [`MAX_HOPS`] queues
//! are recorded per packet (the first ones crossed). Packets still in flight when the run
//! ends are written last, in send order, with neither an arrival nor `lost`.

use crate::packet::{Packet, Payload};
use crate::world::Sim;
use l4s_aqm::QueueId;
use l4s_core::Dur;
pub use l4s_measure::timeline::{Decision, Hop, PacketRow, ParquetTimeline, TimelineSink, MAX_HOPS};
use l4s_transport::udp_prague::UdpPragueHeader;
use std::collections::HashMap;
use std::io;

pub(crate) struct Tracker {
    open: HashMap<u64, PacketRow>,
    sink: Box<dyn TimelineSink>,
    error: Option<io::Error>,
}

fn seq_of(payload: &Payload) -> u64 {
    match payload {
        Payload::Tcp(s) => s.seq,
        Payload::UdpPrague(UdpPragueHeader::Data { seq, .. }) => *seq as u64,
        Payload::UdpPrague(_) => 0,
        Payload::Probe(h) => h.seq,
        Payload::Media(l4s_media::MediaHeader::Data(d)) => d.seq as u64,
        Payload::Media(_) => 0,
        Payload::App(h) => match *h {
            l4s_apps::AppHeader::Tcp { seg, .. } => seg.seq,
            l4s_apps::AppHeader::Reply { id, .. } => id as u64,
            _ => 0,
        },
        Payload::Free => 0,
    }
}

impl Tracker {
    fn emit(&mut self, r: PacketRow) {
        if self.error.is_none() {
            if let Err(e) = self.sink.row(&r) {
                self.error = Some(e);
            }
        }
    }
    fn add_hop(row: &mut PacketRow, hop: Hop) {
        if let Some(slot) = row.hops.iter_mut().find(|h| h.is_none()) {
            *slot = Some(hop);
        }
    }

    /// Packet `p` passed (or was dropped by) a queue of link `link`.
    #[inline]
    pub(crate) fn hop(&mut self, p: &Packet, link: usize, subqueue: QueueId, sojourn: Dur, decision: Decision) {
        let hop = Hop {
            link: link as u32,
            subqueue,
            sojourn,
            decision,
        };
        if decision == Decision::Drop {
            if let Some(mut row) = self.open.remove(&p.id) {
                Tracker::add_hop(&mut row, hop);
                row.lost = true;
                self.emit(row);
            }
        } else if let Some(row) = self.open.get_mut(&p.id) {
            Tracker::add_hop(row, hop);
        }
    }
}

impl Sim {
    /// Record every data packet's life into `sink`.
    pub fn enable_timeline(&mut self, sink: Box<dyn TimelineSink>) {
        self.tracker = Some(Tracker {
            open: HashMap::new(),
            sink,
            error: None,
        });
    }

    #[inline]
    pub(crate) fn track_sent(&mut self, p: &Packet) {
        if let Some(t) = self.tracker.as_mut() {
            if p.forward && p.is_data {
                t.open.insert(
                    p.id,
                    PacketRow {
                        flow: p.flow,
                        seq: seq_of(self.payloads.get(p.payload)),
                        size: p.size,
                        sent: p.sent_at,
                        arrival: None,
                        lost: false,
                        ecn_sent: p.ecn_sent,
                        ecn_received: None,
                        hops: [None; MAX_HOPS],
                    },
                );
            }
        }
    }

    #[inline]
    pub(crate) fn track_arrival(&mut self, p: &Packet) {
        if let Some(t) = self.tracker.as_mut() {
            if let Some(mut row) = t.open.remove(&p.id) {
                row.arrival = Some(self.now);
                row.ecn_received = Some(p.ecn);
                t.emit(row);
            }
        }
    }

    /// Write the packets still in flight (in send order) and close the sink.
    pub fn finish_timeline(&mut self) -> io::Result<()> {
        let Some(mut t) = self.tracker.take() else {
            return Ok(());
        };
        let mut rest: Vec<(u64, PacketRow)> = t.open.drain().collect();
        rest.sort_by_key(|(id, _)| *id);
        for (_, r) in rest {
            t.emit(r);
        }
        if let Some(e) = t.error.take() {
            return Err(e);
        }
        t.sink.finish()
    }
}
