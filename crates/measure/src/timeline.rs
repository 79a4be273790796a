//! The per-packet timeline (`--packets`): one record per data packet, joining the end
//! hosts' view (send time, arrival or loss, ECN sent and received) with every queue it
//! crossed (sub-queue, sojourn, the queue's decision). Each backend joins its own events
//! into [`PacketRow`]s (the simulator by packet, the live testbed by flow and sequence
//! number) and hands them to a [`TimelineSink`] as packets finish, so memory holds only
//! the packets in flight; [`ParquetTimeline`] writes `packets.parquet`.

use l4s_aqm::QueueId;
use l4s_core::{Dur, Ecn, Time};
use std::io;

/// Queues recorded per packet (as many as `packets.parquet` has columns for).
pub use l4s_metrics::parquet::MAX_HOPS;

/// What a queue did with a packet (the same type the Parquet timeline writes).
pub use l4s_metrics::parquet::Decision;

/// One queue a packet crossed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    /// Index of the link in the scenario's link list.
    pub link: u32,
    pub subqueue: QueueId,
    pub sojourn: Dur,
    pub decision: Decision,
}

/// The life of one data packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketRow {
    /// Index of the flow in the scenario.
    pub flow: u32,
    /// Transport sequence number (TCP: first payload byte; UDP Prague and probes: packet).
    pub seq: u64,
    pub size: u32,
    pub sent: Time,
    pub arrival: Option<Time>,
    pub lost: bool,
    pub ecn_sent: Ecn,
    pub ecn_received: Option<Ecn>,
    pub hops: [Option<Hop>; MAX_HOPS],
}

/// Where finished records go.
pub trait TimelineSink {
    fn row(&mut self, r: &PacketRow) -> io::Result<()>;
    fn finish(self: Box<Self>) -> io::Result<()>;
}

/// A [`TimelineSink`] writing Parquet (`packets.parquet`) with
/// [`l4s_metrics::parquet::PacketTimelineWriter`]. Packets still in flight when the run
/// ends are left out: the file's `lost` column is true exactly for packets a queue dropped.
pub struct ParquetTimeline<W: io::Write + Send> {
    w: l4s_metrics::parquet::PacketTimelineWriter<W>,
}

impl<W: io::Write + Send> ParquetTimeline<W> {
    /// `flows` and `links` are the scenario's flow and link names, in scenario order.
    pub fn new<F: AsRef<str>, L: AsRef<str>>(w: W, flows: &[F], links: &[L]) -> io::Result<Self> {
        Ok(ParquetTimeline {
            w: l4s_metrics::parquet::PacketTimelineWriter::new(w, flows, links)?,
        })
    }
}

impl<W: io::Write + Send> TimelineSink for ParquetTimeline<W> {
    fn row(&mut self, r: &PacketRow) -> io::Result<()> {
        use l4s_metrics::parquet as pq;
        if r.arrival.is_none() && !r.lost {
            return Ok(()); // in flight at the end of the run
        }
        let mut hops = [None; pq::MAX_HOPS];
        for (slot, h) in hops.iter_mut().zip(r.hops.iter()) {
            *slot = h.map(|h| pq::HopRecord {
                queue: h.link,
                subqueue: match h.subqueue {
                    QueueId::L => pq::SubQueue::L,
                    QueueId::C => pq::SubQueue::C,
                    QueueId::Single => pq::SubQueue::Single,
                },
                sojourn: Some(h.sojourn),
                decision: h.decision,
            });
        }
        self.w.push(&pq::PacketRecord {
            flow: r.flow,
            seq: r.seq,
            size: r.size,
            sent: r.sent,
            arrival: r.arrival,
            ecn_sent: r.ecn_sent,
            ecn_received: r.ecn_received,
            hops,
        })
    }
    fn finish(self: Box<Self>) -> io::Result<()> {
        self.w.finish().map(|_| ())
    }
}
