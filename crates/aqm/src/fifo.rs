//! Tail-drop FIFO (Linux `pfifo` / `bfifo` plus a time limit). No marking.
//!
//! An arriving packet is dropped when any configured limit would be exceeded:
//! * packets: the queue already holds `limit` packets;
//! * bytes: `backlog + len > limit_bytes`;
//! * time: the packet at the head has already waited `>= limit_time`. This uses the head's
//!   current sojourn (a measured quantity) rather than a backlog/rate estimate, because a
//!   sans-IO queue does not know the link rate; with a constant-rate link both agree to
//!   within one packet's transmission time.

use std::collections::VecDeque;

use l4s_core::{Dur, QueuePacket, Time};

use crate::config::FifoConfig;
use crate::qdisc::{Dequeued, DropReason, Dropped, Enqueued, Qdisc, QueueId, QueueStats};

/// Tail-drop FIFO.
pub struct Fifo<P> {
    q: VecDeque<(P, Time)>,
    limit: u64,
    limit_bytes: u64,
    limit_time: Option<Dur>,
    bytes: u64,
    stats: QueueStats,
}

impl<P: QueuePacket> Fifo<P> {
    pub fn new(cfg: &FifoConfig) -> Self {
        Fifo {
            q: VecDeque::new(),
            limit: cfg.limit.max(1) as u64,
            limit_bytes: cfg.limit_bytes.unwrap_or(u64::MAX).max(1),
            limit_time: cfg.limit_time,
            bytes: 0,
            stats: QueueStats::default(),
        }
    }
}

impl<P: QueuePacket> Qdisc<P> for Fifo<P> {
    fn kind(&self) -> &'static str {
        "fifo"
    }
    fn queue_ids(&self) -> &'static [QueueId] {
        &[QueueId::Single]
    }
    fn enqueue(&mut self, pkt: P, now: Time) -> Enqueued<P> {
        let len = pkt.wire_len() as u64;
        let time_full = match (self.limit_time, self.q.front()) {
            (Some(lt), Some((_, ts))) => now - *ts >= lt,
            _ => false,
        };
        if self.q.len() as u64 >= self.limit || self.bytes + len > self.limit_bytes || time_full {
            self.stats.drops += 1;
            self.stats.overlimit_drops += 1;
            return Enqueued::Dropped(Dropped {
                pkt,
                reason: DropReason::Overlimit,
                queue: QueueId::Single,
                sojourn: Dur::ZERO,
            });
        }
        self.bytes += len;
        self.stats.enqueued_packets += 1;
        self.stats.enqueued_bytes += len;
        self.stats.backlog_packets += 1;
        self.stats.backlog_bytes += len;
        self.q.push_back((pkt, now));
        Enqueued::Queued {
            queue: QueueId::Single,
            marked: false,
        }
    }
    fn dequeue(&mut self, now: Time, _drops: &mut Vec<Dropped<P>>) -> Option<Dequeued<P>> {
        let (pkt, ts) = self.q.pop_front()?;
        let len = pkt.wire_len() as u64;
        self.bytes -= len;
        self.stats.dequeued_packets += 1;
        self.stats.dequeued_bytes += len;
        self.stats.backlog_packets -= 1;
        self.stats.backlog_bytes -= len;
        Some(Dequeued {
            pkt,
            queue: QueueId::Single,
            sojourn: now - ts,
            marked: false,
        })
    }
    fn next_timeout(&self) -> Option<Time> {
        None
    }
    fn on_timeout(&mut self, _now: Time) {}
    fn len_packets(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
    fn stats(&self) -> Vec<(QueueId, QueueStats)> {
        vec![(QueueId::Single, self.stats)]
    }
}
