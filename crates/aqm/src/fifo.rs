//! Tail-drop FIFO (Linux `pfifo` / `bfifo` plus a time limit). No marking.
//!
//! An arriving packet is dropped when any configured limit would be exceeded:
//! * packets: the queue already holds `limit` packets;
//! * bytes: `backlog + len > limit_bytes`;
//! * time: the packet at the head has already waited `>= limit_time`. This uses the head's
//!   current sojourn (a measured quantity) rather than a backlog/rate estimate, because a
//!   sans-IO queue does not know the link rate; with a constant-rate link both agree to
//!   within one packet's transmission time.

use l4s_core::{Dur, QueuePacket, Time};

use crate::config::FifoConfig;
use crate::qdisc::{Dequeued, Dropped, Enqueued, Qdisc, QueueId, QueueStats};
use crate::single::{dequeued, queued, FifoLimits, TimestampedQueue};

/// Tail-drop FIFO.
pub struct Fifo<P> {
    q: TimestampedQueue<P>,
    limits: FifoLimits,
}

impl<P: QueuePacket> Fifo<P> {
    pub fn new(cfg: &FifoConfig) -> Self {
        Fifo {
            q: TimestampedQueue::new(),
            limits: FifoLimits::new(cfg.limit, cfg.limit_bytes, cfg.limit_time),
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
        if !self.limits.admit(&self.q, len, now) {
            return self.q.reject(pkt);
        }
        self.q.push(pkt, len, now, ());
        queued(false)
    }
    fn dequeue(&mut self, now: Time, _drops: &mut Vec<Dropped<P>>) -> Option<Dequeued<P>> {
        let (pkt, ts, ()) = self.q.pop_send()?;
        Some(dequeued(pkt, now - ts, false))
    }
    /// An empty FIFO that admits the packet releases it at once, with no sojourn: the
    /// counts of its enqueue and dequeue, without going through the queue.
    fn enqueue_dequeue(
        &mut self,
        pkt: P,
        now: Time,
        drops: &mut Vec<Dropped<P>>,
    ) -> Result<Option<Dequeued<P>>, Dropped<P>> {
        if self.q.len() > 0 {
            return crate::qdisc::enqueue_then_dequeue(self, pkt, now, drops);
        }
        let len = pkt.wire_len() as u64;
        if !self.limits.admit(&self.q, len, now) {
            return Err(self.q.stats.overlimit_drop(pkt));
        }
        self.q.stats.on_enqueue(len);
        self.q.stats.on_leave(len);
        self.q.stats.on_send(len);
        Ok(Some(dequeued(pkt, Dur::ZERO, false)))
    }
    fn next_timeout(&self) -> Option<Time> {
        None
    }
    fn on_timeout(&mut self, _now: Time) {}
    fn len_packets(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.q.bytes()
    }
    fn stats(&self) -> Vec<(QueueId, QueueStats)> {
        vec![(QueueId::Single, self.q.stats)]
    }
}
