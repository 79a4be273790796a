//! Bookkeeping shared by the single-queue disciplines (FIFO, PIE, CoDel, classic-ECN and the
//! flow queues of FQ-CoDel).
//!
//! * [`QueueStats`] counter updates for a packet that joins the backlog, leaves it, is sent,
//!   or is dropped (tail drop at the limit, or an AQM congestion drop), each drop handed back as
//!   the [`Dropped`] record of [`QueueId::Single`].
//! * [`TimestampedQueue`]: a FIFO of packets stamped with their enqueue time (plus an optional
//!   per-packet tag `M`) that keeps its byte count and its [`QueueStats`] in step with the
//!   packets it holds.
//!
//! Every packet passes through these helpers, so they are `#[inline]` and never allocate
//! (the `VecDeque` grows only to the queue's high-water mark).

use std::collections::VecDeque;

use l4s_core::{Dur, QueuePacket, Time};

use crate::qdisc::{Dequeued, DropReason, Dropped, Enqueued, QueueId, QueueStats};

impl QueueStats {
    /// A packet of `len` bytes was accepted into the backlog.
    #[inline]
    pub(crate) fn on_enqueue(&mut self, len: u64) {
        self.enqueued_packets += 1;
        self.enqueued_bytes += len;
        self.backlog_packets += 1;
        self.backlog_bytes += len;
    }

    /// A packet of `len` bytes left the backlog (to be sent, or dropped at dequeue).
    #[inline]
    pub(crate) fn on_leave(&mut self, len: u64) {
        self.backlog_packets -= 1;
        self.backlog_bytes -= len;
    }

    /// A packet of `len` bytes that left the backlog is released for transmission.
    #[inline]
    pub(crate) fn on_send(&mut self, len: u64) {
        self.dequeued_packets += 1;
        self.dequeued_bytes += len;
    }

    /// Count a drop at the buffer limit and build its record (tail drop: zero sojourn).
    #[inline]
    pub(crate) fn overlimit_drop<P>(&mut self, pkt: P) -> Dropped<P> {
        self.drops += 1;
        self.overlimit_drops += 1;
        Dropped {
            pkt,
            reason: DropReason::Overlimit,
            queue: QueueId::Single,
            sojourn: Dur::ZERO,
        }
    }

    /// Count a drop by the AQM's congestion signal and build its record.
    #[inline]
    pub(crate) fn congestion_drop<P>(&mut self, pkt: P, sojourn: Dur) -> Dropped<P> {
        self.drops += 1;
        Dropped {
            pkt,
            reason: DropReason::Congestion,
            queue: QueueId::Single,
            sojourn,
        }
    }
}

/// The outcome of an accepted enqueue into a single-queue discipline.
#[inline]
pub(crate) fn queued<P>(marked: bool) -> Enqueued<P> {
    Enqueued::Queued {
        queue: QueueId::Single,
        marked,
    }
}

/// A packet released for transmission from a single-queue discipline.
#[inline]
pub(crate) fn dequeued<P>(pkt: P, sojourn: Dur, marked: bool) -> Dequeued<P> {
    Dequeued {
        pkt,
        queue: QueueId::Single,
        sojourn,
        marked,
    }
}

/// A tail-drop FIFO's limits: packets, bytes, and the time the head has waited.
pub(crate) struct FifoLimits {
    packets: u64,
    bytes: u64,
    time: Option<Dur>,
}

impl FifoLimits {
    pub(crate) fn new(packets: u32, bytes: Option<u64>, time: Option<Dur>) -> FifoLimits {
        FifoLimits {
            packets: packets.max(1) as u64,
            bytes: bytes.unwrap_or(u64::MAX).max(1),
            time,
        }
    }

    /// Whether a packet of `len` bytes arriving at `now` fits in `q`: it is dropped when
    /// the queue already holds `packets`, when `bytes` would be exceeded, or when the head
    /// has waited `time` or longer.
    pub(crate) fn admit<P: QueuePacket, M>(&self, q: &TimestampedQueue<P, M>, len: u64, now: Time) -> bool {
        let time_full = match (self.time, q.head_time()) {
            (Some(lt), Some(ts)) => now - ts >= lt,
            _ => false,
        };
        (q.len() as u64) < self.packets && q.bytes() + len <= self.bytes && !time_full
    }
}

/// One FIFO of `(packet, enqueue time, tag)` with its backlog in bytes and its counters.
///
/// `M` is a per-packet tag kept alongside (PIE remembers whether it marked the packet at
/// enqueue); `()` costs nothing.
pub(crate) struct TimestampedQueue<P, M = ()> {
    q: VecDeque<(P, Time, M)>,
    bytes: u64,
    /// Counters of this queue; marks and congestion drops are counted by the discipline.
    pub(crate) stats: QueueStats,
}

impl<P: QueuePacket, M> TimestampedQueue<P, M> {
    pub(crate) fn new() -> Self {
        TimestampedQueue {
            q: VecDeque::new(),
            bytes: 0,
            stats: QueueStats::default(),
        }
    }

    /// Packets queued.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.q.len()
    }

    /// Bytes queued (sum of `wire_len`).
    #[inline]
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Enqueue time of the head packet.
    #[inline]
    pub(crate) fn head_time(&self) -> Option<Time> {
        self.q.front().map(|&(_, ts, _)| ts)
    }

    /// Tail drop at the buffer limit: count it and hand the packet back.
    #[inline]
    pub(crate) fn reject(&mut self, pkt: P) -> Enqueued<P> {
        Enqueued::Dropped(self.stats.overlimit_drop(pkt))
    }

    /// Append `pkt` of `len = pkt.wire_len()` bytes (the caller has it at hand for its limit
    /// test), stamped `now`, counting it as enqueued.
    #[inline]
    pub(crate) fn push(&mut self, pkt: P, len: u64, now: Time, tag: M) {
        debug_assert_eq!(len, pkt.wire_len() as u64);
        self.bytes += len;
        self.stats.on_enqueue(len);
        self.q.push_back((pkt, now, tag));
    }

    /// Remove the head packet from the backlog without counting it as sent (the caller then
    /// either drops it or calls [`QueueStats::on_send`]).
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(P, Time, M)> {
        let e = self.q.pop_front()?;
        let len = e.0.wire_len() as u64;
        self.bytes -= len;
        self.stats.on_leave(len);
        Some(e)
    }

    /// Remove the head packet and count it as sent.
    #[inline]
    pub(crate) fn pop_send(&mut self) -> Option<(P, Time, M)> {
        let e = self.pop()?;
        self.stats.on_send(e.0.wire_len() as u64);
        Some(e)
    }
}
