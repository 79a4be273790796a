//! The sans-IO queue-discipline interface, modelled on the Linux qdisc hooks
//! (enqueue / dequeue / timer / stats).
//!
//! A queue discipline is handed packets and the current time; it never reads a clock.
//! The simulator and the live forwarder drive the same objects.

use l4s_core::{Dur, QueuePacket, Time};

use crate::queue_protection::QpStats;

/// Which sub-queue of a discipline a packet is in (single-queue disciplines use `Single`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueueId {
    /// The only queue of a single-queue discipline (FIFO, PIE, CoDel; FQ-CoDel's flows are
    /// reported together as one).
    Single,
    /// DualPI2's low-latency (L4S) queue.
    L,
    /// DualPI2's classic queue.
    C,
}

impl QueueId {
    pub fn name(self) -> &'static str {
        match self {
            QueueId::Single => "single",
            QueueId::L => "L",
            QueueId::C => "C",
        }
    }
}

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// Buffer full (packet, byte, time or memory limit): tail drop at enqueue.
    Overlimit,
    /// The AQM's congestion signal fell on a packet that cannot be marked (Not-ECT), or
    /// ECN is off / disabled by overload.
    Congestion,
    /// DualPI2's L-queue step fell on a Not-ECT packet of the L4S class.
    StepNonEcn,
}

/// A packet the discipline dropped, handed back to the caller for accounting.
#[derive(Debug)]
pub struct Dropped<P> {
    pub pkt: P,
    pub reason: DropReason,
    pub queue: QueueId,
    /// Time spent queued before the drop (zero for drops at enqueue).
    pub sojourn: Dur,
}

/// Outcome of [`Qdisc::enqueue`].
#[derive(Debug)]
pub enum Enqueued<P> {
    /// Accepted into this sub-queue. `marked` is true if the AQM set CE at enqueue
    /// (possible only with early decisions, e.g. DualPI2 `drop_early`, PIE).
    Queued { queue: QueueId, marked: bool },
    /// Refused; the packet is handed back.
    Dropped(Dropped<P>),
}

/// A packet released for transmission.
#[derive(Debug)]
pub struct Dequeued<P> {
    pub pkt: P,
    pub queue: QueueId,
    /// Time from enqueue to this dequeue.
    pub sojourn: Dur,
    /// True if this discipline set CE on the packet (at enqueue or dequeue). A packet that
    /// arrived already CE is not counted as marked here.
    pub marked: bool,
}

/// Cumulative counters of one sub-queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    pub enqueued_packets: u64,
    pub enqueued_bytes: u64,
    pub dequeued_packets: u64,
    pub dequeued_bytes: u64,
    /// Packets this discipline set CE on (a packet counts once).
    pub marks: u64,
    /// Drops of every reason (overlimit + AQM).
    pub drops: u64,
    /// Of `drops`, those at the buffer limit.
    pub overlimit_drops: u64,
    /// Current backlog.
    pub backlog_packets: u64,
    pub backlog_bytes: u64,
}

/// A queue discipline, generic over the packet representation.
pub trait Qdisc<P: QueuePacket> {
    /// Short name as used in scenario files ("dualpi2", "fifo", "pie", "codel", "fq-codel", ...).
    fn kind(&self) -> &'static str;
    /// The sub-queues this discipline reports, in a fixed order (`[Single]` or `[L, C]`).
    fn queue_ids(&self) -> &'static [QueueId];
    /// Offer a packet at time `now`.
    fn enqueue(&mut self, pkt: P, now: Time) -> Enqueued<P>;
    /// Take the next packet to send at time `now`. Packets the AQM discards on the way are
    /// appended to `drops` (Linux "deferred drops").
    fn dequeue(&mut self, now: Time, drops: &mut Vec<Dropped<P>>) -> Option<Dequeued<P>>;
    /// [`Qdisc::enqueue`] then, if the packet was queued, [`Qdisc::dequeue`] at the same
    /// `now`: what a link whose serialiser is free asks of its queue when a packet comes.
    /// `Err` hands back a packet refused at enqueue; `Ok(None)` means nothing was released
    /// (what the dequeue discarded is in `drops`). A discipline that can answer without
    /// queueing the packet (an empty FIFO) overrides it with the same counts and result.
    fn enqueue_dequeue(
        &mut self,
        pkt: P,
        now: Time,
        drops: &mut Vec<Dropped<P>>,
    ) -> Result<Option<Dequeued<P>>, Dropped<P>> {
        enqueue_then_dequeue(self, pkt, now, drops)
    }
    /// When the discipline next wants [`Qdisc::on_timeout`] (DualPI2's and PIE's
    /// probability update timer); `None` if it has no timer.
    fn next_timeout(&self) -> Option<Time>;
    /// Run the timer work due at `now` and re-arm.
    fn on_timeout(&mut self, now: Time);
    /// Packets queued in all sub-queues.
    fn len_packets(&self) -> usize;
    /// Bytes queued in all sub-queues.
    fn len_bytes(&self) -> u64;
    /// Counters per sub-queue, in the order of [`Qdisc::queue_ids`].
    fn stats(&self) -> Vec<(QueueId, QueueStats)>;
    /// The discipline's current congestion probability for monitoring: DualPI2's base p',
    /// PIE's drop probability; `None` where there is none (FIFO, CoDel).
    fn probability(&self) -> Option<f64> {
        None
    }
    /// Move packets that were dropped *inside* [`Qdisc::enqueue`] but are not the offered
    /// packet (FQ-CoDel's "drop from the fattest flow" on overflow, RFC 8290 §4.1.1) into
    /// `out`. Disciplines that never do this keep the default no-op. Such drops are also
    /// flushed into the `drops` vector of the next [`Qdisc::dequeue`], so a caller that never
    /// calls this method still accounts for every packet.
    fn drain_enqueue_drops(&mut self, out: &mut Vec<Dropped<P>>) {
        let _ = out;
    }
    /// Queue Protection's counters (RFC 9957), where the discipline has it switched on.
    fn queue_protection(&self) -> Option<&QpStats> {
        None
    }
    /// Take the next packet of sub-queue `queue` only, for a MAC that serves each
    /// sub-queue on its own (a DOCSIS upstream grants its Classic and Low-Latency service
    /// flows separately). A discipline with one queue serves it whatever `queue` says.
    fn dequeue_from(&mut self, queue: QueueId, now: Time, drops: &mut Vec<Dropped<P>>) -> Option<Dequeued<P>> {
        let _ = queue;
        self.dequeue(now, drops)
    }
    /// Packets and bytes queued in sub-queue `queue` (all of them for a discipline with one
    /// queue).
    fn backlog_of(&self, queue: QueueId) -> (usize, u64) {
        let _ = queue;
        (self.len_packets(), self.len_bytes())
    }
    /// The MAC below holds `bytes` of sub-queue `queue` that it has taken and not yet sent
    /// (staged for a grant, or a packet sent in part); a discipline whose delay estimate
    /// must count them (the DOCSIS virtual queue's alignment) keeps the figure.
    fn staged(&mut self, queue: QueueId, bytes: u64) {
        let _ = (queue, bytes);
    }
}

/// [`Qdisc::enqueue`] then, if the packet was queued, [`Qdisc::dequeue`] at the same `now`:
/// what [`Qdisc::enqueue_dequeue`] does unless a discipline has a shorter way.
pub fn enqueue_then_dequeue<P: QueuePacket, Q: Qdisc<P> + ?Sized>(
    q: &mut Q,
    pkt: P,
    now: Time,
    drops: &mut Vec<Dropped<P>>,
) -> Result<Option<Dequeued<P>>, Dropped<P>> {
    match q.enqueue(pkt, now) {
        Enqueued::Queued { .. } => Ok(q.dequeue(now, drops)),
        Enqueued::Dropped(d) => Err(d),
    }
}
