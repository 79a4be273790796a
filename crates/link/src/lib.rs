//! # l4s-link
//!
//! Sans-IO link models: what lies between two nodes of a scenario, as one object that the
//! simulator's event loop and the live forwarder's pacer drive the same way. A link is
//! handed packets and the current time; it hands back packets that leave it and the times
//! it wants to be woken. It never reads a clock, opens a socket or keeps global state, and
//! randomness comes from an [`l4s_core::Rng`] handed to its constructor (the shape of the
//! queue disciplines behind [`l4s_aqm::Qdisc`], one level up).
//!
//! * [`Link`]: the trait. A link has numbered *ports* where nodes attach (a wire has two;
//!   a shared medium such as a Wi-Fi cell one per station and one for the access point)
//!   and any number of *queues* that the measurement layer reports.
//! * [`Io`]: what a link writes to while it runs: [`Action::Deliver`] (a packet leaves at
//!   a port), [`Action::Wake`] (call [`Link::handle_timeout`] at a time), and the
//!   [`Observer`] that measurement hangs on (packets leaving a queue, packets lost).
//! * [`wired::Wired`]: one direction of a wire: a faulty middlebox ([`fault`]), a queue
//!   discipline, a serialiser at the link rate with its [`schedule::RateSchedule`], and a
//!   propagation delay line.
//! * [`trace::TraceLink`]: one direction of a trace-driven link: capacity as Mahimahi's
//!   delivery opportunities, replayed from a [`trace::Trace`].
//! * [`capacity::CapacityProcess`]: capacity over time drawn from a seed (constant, steps,
//!   sawtooth, clipped Gaussian, Markov-modulated with outages, log-rate AR(1)), as a
//!   [`trace::Trace`] to replay.
//! * [`cellular::Cellular`]: one direction of a cellular radio link: the RLC buffer, slots
//!   and transport blocks, a TDD pattern, and the uplink's request–grant loop.
//! * [`gilbert_elliott::GilbertElliott`]: bursty loss on the wire (two-state Markov
//!   chain), around any other link.
//! * [`harq::Harq`]: HARQ retransmissions of failed blocks with RLC in-order delivery,
//!   around any other link.
//! * [`config::LinkConfig`] and [`build`]: a link from its scenario description.
//!
//! ## Why wake-ups are requested by reason
//!
//! A link asks to be woken with a timer number of its own (the wired link has one for the
//! end of the serialisation, one for the head of the delay line, one for the queue
//! discipline's timer and one for the rate schedule) rather than offering one
//! `poll_timeout`. The simulator turns each request into an event in its queue at once, so
//! that simultaneous events run in the order they were caused (the deterministic
//! tie-breaking by insertion order of the simulator), and a run is byte-identical however
//! many links it has. A real-time driver keeps the requests in a small heap and calls the
//! link for each one that is due ([`Timers`]). A link ignores a wake-up it no longer needs
//! (a superseded request), so drivers need not cancel anything.

#![forbid(unsafe_code)]

/// The queue and rate queries of a decorator (a link around another, in `self.inner`),
/// answered by the link it wraps.
macro_rules! delegate_queries {
    () => {
        fn ports(&self) -> usize {
            self.inner.ports()
        }
        fn queues(&self) -> &[QueueInfo] {
            self.inner.queues()
        }
        fn queue_stats(&self, q: usize) -> Vec<(QueueId, QueueStats)> {
            self.inner.queue_stats(q)
        }
        fn backlog(&self, q: usize) -> (u64, u64) {
            self.inner.backlog(q)
        }
        fn probability(&self, q: usize) -> Option<f64> {
            self.inner.probability(q)
        }
        fn queue_protection(&self, q: usize) -> Option<l4s_aqm::QpStats> {
            self.inner.queue_protection(q)
        }
        fn rate(&self, from: Port, to: Port) -> Option<Rate> {
            self.inner.rate(from, to)
        }
        fn rate_at(&self, from: Port, to: Port, t: Time) -> Option<Rate> {
            self.inner.rate_at(from, to, t)
        }
    };
}

/// The queue queries of a link with one queue stage (`self.queue`, a `stage::Queue`).
macro_rules! one_queue_queries {
    () => {
        fn queue_stats(&self, _q: usize) -> Vec<(QueueId, QueueStats)> {
            self.queue.stats()
        }
        fn backlog(&self, _q: usize) -> (u64, u64) {
            self.queue.backlog()
        }
        fn probability(&self, _q: usize) -> Option<f64> {
            self.queue.qdisc.probability()
        }
        fn queue_protection(&self, _q: usize) -> Option<l4s_aqm::QpStats> {
            self.queue.qdisc.queue_protection().cloned()
        }
    };
}

/// The wake-ups and queue list of a link driven by its own grid of times (slots, trace
/// opportunities, an agenda): `$tick` runs `self.rationalize(io)` (the wake-up it asked for
/// last is then spent), `ARRIVE` delivers the delay line's head, `QDISC` runs the queue
/// discipline's timer. The link has `armed`, `line` and `queue`.
macro_rules! ticked_link_timeouts {
    ($tick:path) => {
        fn handle_timeout(&mut self, timer: Timer, at: Time, io: &mut Io<'_, P>) {
            match timer {
                $tick => {
                    if self.armed == Some(at) {
                        self.armed = None;
                    }
                    self.rationalize(io);
                }
                ARRIVE => self.line.arrive(io, ARRIVE),
                QDISC => self.queue.on_timer(at, io, QDISC),
                _ => {}
            }
        }

        fn queues(&self) -> &[QueueInfo] {
            &self.queue.info
        }
    };
}

mod bucket;
pub mod capacity;
pub mod cell;
pub mod cellular;
pub mod config;
pub mod docsis;
pub mod docsis_downstream;
pub mod fault;
pub mod gilbert_elliott;
pub mod harq;
pub mod schedule;
mod stage;
pub mod trace;
pub mod wifi;
pub mod wired;

pub use capacity::{CapacityProcess, MarkovState};
pub use cell::{Cell, CellConfig, CellScheduler, CellUe, ConfiguredGrant};
pub use cellular::{Cellular, RanCapacity, RanConfig, RanDirection, SlotKind, UplinkScheduling};
pub use config::{build, LinkConfig, LossModel};
pub use docsis::{DocsisUpstream, DocsisUpstreamLink};
pub use docsis_downstream::{DocsisDownstream, DocsisDownstreamLink};
pub use fault::{Fault, FaultKind};
pub use gilbert_elliott::{GilbertElliott, GilbertElliottConfig};
pub use harq::{Harq, HarqConfig};
pub use schedule::RateSchedule;
pub use stage::insert_by_due;
pub use trace::{Trace, TraceError, TraceLink};
pub use wired::Wired;

use l4s_aqm::{DropReason, QueueId, QueueStats};
use l4s_core::{Dur, Ecn, QueuePacket, Rate, Time};

/// A port of a link: where a node attaches.
pub type Port = usize;

/// A link's own timer number (see [`Action::Wake`]).
pub type Timer = u16;

/// What a link needs of a packet beyond what a queue needs.
pub trait LinkPacket: QueuePacket {
    /// Rewrite the ECN field, as a faulty middlebox does (see [`fault`]).
    fn set_ecn(&mut self, ecn: Ecn);
}

/// What a link asks of its driver.
#[derive(Clone, Copy, Debug)]
pub enum Action<P> {
    /// `pkt` leaves the link at `port`. `due` is when it leaves in the model; a driver that
    /// was woken late hands it on now and may count the lateness.
    Deliver { port: Port, pkt: P, due: Time },
    /// Call [`Link::handle_timeout`] with `timer` and `at` at time `at` (at once if it is
    /// already past).
    Wake { timer: Timer, at: Time },
}

/// A packet leaving one of a link's queues to be sent.
#[derive(Debug)]
pub struct Departure<'a, P> {
    pub pkt: &'a P,
    /// Which of the link's queues ([`Link::queues`]).
    pub queue: usize,
    /// The queue discipline's sub-queue.
    pub sub: QueueId,
    /// Time from enqueue to this dequeue.
    pub sojourn: Dur,
    /// When its serialisation starts, and how long it occupies the link (at the rate in
    /// force then).
    pub start: Time,
    pub serialisation: Dur,
    /// The queue discipline set CE on it.
    pub marked: bool,
}

/// Where a packet was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossKind {
    /// Dropped by a queue: at its buffer limit or by its AQM.
    Queue {
        queue: usize,
        sub: QueueId,
        reason: DropReason,
    },
    /// Lost on the wire after it was sent (a loss model such as
    /// [`gilbert_elliott::GilbertElliott`]).
    Wire,
}

/// A packet a link lost, handed to the [`Observer`] (which owns it from then on).
#[derive(Debug)]
pub struct Loss<P> {
    pub pkt: P,
    pub kind: LossKind,
    /// Time spent queued before the drop (zero for drops at enqueue and on the wire).
    pub sojourn: Dur,
}

/// Measurement's view of a link: told of every packet leaving a queue and every packet lost.
pub trait Observer<P> {
    fn departed(&mut self, now: Time, d: &Departure<'_, P>);
    fn lost(&mut self, now: Time, l: Loss<P>);
}

/// The current time and where a link's output goes, for one call into the link.
pub struct Io<'a, P> {
    pub now: Time,
    actions: &'a mut Vec<Action<P>>,
    observer: &'a mut dyn Observer<P>,
}

impl<'a, P> Io<'a, P> {
    /// Actions are appended to `actions` in the order the link takes them.
    pub fn new(now: Time, actions: &'a mut Vec<Action<P>>, observer: &'a mut dyn Observer<P>) -> Io<'a, P> {
        Io { now, actions, observer }
    }
    #[inline]
    pub fn deliver(&mut self, port: Port, pkt: P, due: Time) {
        self.actions.push(Action::Deliver { port, pkt, due });
    }
    #[inline]
    pub fn wake(&mut self, timer: Timer, at: Time) {
        self.actions.push(Action::Wake { timer, at });
    }
    #[inline]
    pub fn departed(&mut self, d: &Departure<'_, P>) {
        self.observer.departed(self.now, d);
    }
    #[inline]
    pub fn lost(&mut self, l: Loss<P>) {
        self.observer.lost(self.now, l);
    }
    /// The actions taken so far in this call and before it (a decorator such as
    /// [`gilbert_elliott::GilbertElliott`] rewrites those its inner link took).
    pub fn actions_mut(&mut self) -> &mut Vec<Action<P>> {
        self.actions
    }
}

/// One of a link's queues, as measurement reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueInfo {
    /// Empty for a link's only queue (it is reported under the link's name); otherwise
    /// appended to it (`link/label`).
    pub label: String,
    /// The queue discipline's kind ("dualpi2", "fifo", ...).
    pub aqm: &'static str,
    /// Its sub-queues, in a fixed order.
    pub subqueues: &'static [QueueId],
}

/// A sans-IO link model; see the crate documentation.
///
/// The calls: [`Link::start`] once, [`Link::send`] for every packet a node puts on the
/// link and [`Link::handle_timeout`] for every [`Action::Wake`] when it falls due, each
/// with an [`Io`] holding the current time (never earlier than in the previous call). The
/// simulator starts every link at time 0 before anything else; a live forwarder carries
/// packets before the run's clock is fixed and starts its links then, with an origin a
/// little in the past.
pub trait Link<P: LinkPacket> {
    /// Number of ports.
    fn ports(&self) -> usize;
    /// Time 0 of the run is `origin`: behaviour over time (rate schedules, faults) counts
    /// from it. Until it is called the link runs with its configured rate and no fault.
    fn start(&mut self, origin: Time, io: &mut Io<'_, P>);
    /// A node at port `from` puts `pkt` on the link towards the node at port `to`.
    fn send(&mut self, from: Port, to: Port, pkt: P, io: &mut Io<'_, P>);
    /// A wake-up this link asked for with `timer` at `at` is due (`io.now >= at`).
    fn handle_timeout(&mut self, timer: Timer, at: Time, io: &mut Io<'_, P>);
    /// The queues measurement reports, in a fixed order.
    fn queues(&self) -> &[QueueInfo];
    /// Counters of queue `q`'s sub-queues, in the order of [`QueueInfo::subqueues`].
    fn queue_stats(&self, q: usize) -> Vec<(QueueId, QueueStats)>;
    /// Packets and bytes waiting in queue `q`.
    fn backlog(&self, q: usize) -> (u64, u64);
    /// Queue `q`'s congestion probability for monitoring (DualPI2's p', PIE's), if any.
    fn probability(&self, q: usize) -> Option<f64>;
    /// Queue `q`'s Queue Protection counters (RFC 9957), where its discipline has it on.
    fn queue_protection(&self, q: usize) -> Option<l4s_aqm::QpStats> {
        let _ = q;
        None
    }
    /// The rate from port `from` to port `to` in force now (`None`: unlimited).
    fn rate(&self, from: Port, to: Port) -> Option<Rate>;
    /// The capacity from `from` to `to` at time `t`, for monitoring over time: the rate in
    /// force, or what a link whose capacity varies within a rate (a trace) offered just
    /// before `t`.
    fn rate_at(&self, from: Port, to: Port, t: Time) -> Option<Rate> {
        let _ = t;
        self.rate(from, to)
    }
    /// The rate queue `q` feeds (as [`Link::rate`]): the link's from port 0 to port 1
    /// unless its queues feed different ports (a cell's UEs).
    fn queue_rate(&self, q: usize) -> Option<Rate> {
        let _ = q;
        self.rate(0, 1)
    }
    /// The capacity queue `q` feeds at time `t` (as [`Link::rate_at`]).
    fn queue_rate_at(&self, q: usize, t: Time) -> Option<Rate> {
        let _ = q;
        self.rate_at(0, 1, t)
    }
    /// What the link counted (a driver reports it).
    fn stats(&self) -> LinkStats {
        LinkStats::default()
    }
    /// A Wi-Fi BSS's counters per station and access category ([`wifi::bss`]).
    fn wifi_stats(&self) -> Option<wifi::BssStats> {
        None
    }
    /// The radio counters of queue `q`'s direction where a link holds several radio
    /// directions (a cell of several UEs, [`cell`]), and which way it goes; `None` where
    /// [`Link::stats`] speaks for the whole link.
    fn queue_link_stats(&self, q: usize) -> Option<(LinkStats, RanDirection)> {
        let _ = q;
        None
    }
    /// The ports `(from, to)` of the packets queue `q` holds where each queue of the link
    /// carries one direction between two of its ports (a cell: one UE's downlink or
    /// uplink), so that it is reported under that direction's scenario link; `None` where
    /// the queue is the whole link's.
    fn queue_ports(&self, q: usize) -> Option<(Port, Port)> {
        let _ = q;
        None
    }

    // ---- packets handed on before they arrive (the simulator's fast path) ----

    /// Whether the model takes packets before they reach it ([`Link::send_at`]).
    fn accepts_early(&self) -> bool {
        false
    }
    /// A node at port `from` will put `pkt` on the link at `due`, later than `io.now`:
    /// the model behaves as if [`Link::send`] were called then. It keeps the packet until
    /// then, or until a later moment at which it can tell that nothing else has touched it
    /// in between, and asks for a wake-up at `due` if nothing else of its own comes first.
    /// Only called on a model whose [`Link::accepts_early`] is true.
    fn send_at(&mut self, from: Port, to: Port, pkt: P, due: Time, io: &mut Io<'_, P>) {
        debug_assert!(false, "send_at on a model that does not accept early packets");
        let _ = due;
        self.send(from, to, pkt, io);
    }
    /// Take in the packets given to [`Link::send_at`] that are due by `io.now`, and take
    /// the steps left until now ([`Link::defer_steps`]), so that the queries
    /// ([`Link::queue_stats`], [`Link::backlog`], ...) see them.
    fn catch_up(&mut self, io: &mut Io<'_, P>) {
        let _ = io;
    }
    /// From now on, deliver each packet at port 1 as soon as the model knows when it
    /// arrives there (the start of its serialisation), with that time as `due` (later
    /// than `io.now`), instead of holding it until then. The driver asks this only of a
    /// link every packet of which it can hand on to a model that
    /// [`Link::accepts_early`]. Whether the model does.
    fn deliver_early(&mut self) -> bool {
        false
    }
    /// From now on the model may leave its own steps (the end of a serialisation, the
    /// queue discipline's timer, a packet of [`Link::send_at`] coming due) until the next
    /// call of any kind, which takes them first, each at its own time, and it asks to be
    /// woken only when a packet leaves it. The driver asks this only if it calls
    /// [`Link::catch_up`] before every query, and the model does it only where every
    /// packet leaves after the step that sent it on its way (a wire with a rate and a
    /// delay that does not [`Link::deliver_early`]). Whether the model does.
    fn defer_steps(&mut self) -> bool {
        false
    }
    /// The constant delay after which a model that [`Link::deliver_early`]s delivers every
    /// packet given to it by [`Link::send`], unchanged, when that is all it does (no rate,
    /// queue, fault or loss, and nothing counted): the driver may then hand such a packet
    /// on itself, due that much later, without calling the model (the simulator does so
    /// for a wire that no packet reaches by [`Link::send_at`]). `None` for any other model.
    fn pass_through(&self) -> Option<Dur> {
        None
    }
    /// The constant delay of a model that does nothing but delay, and delivers packets one
    /// at a time (no rate, queue, fault or loss, nothing counted, not delivering early): a
    /// packet given to it by [`Link::send`] or by [`Link::send_at`] due at `due` reaches
    /// port 1 at `delay` after `max(now, due)`, behind every packet due no later, and the
    /// model asks for one wake-up ([`DELAY_LINE_ARRIVE`]) when a packet becomes the first
    /// due, then, at each wake-up at which the first is due, asks for the next one's
    /// before it delivers the first. The driver may keep such a line itself, without
    /// calling the model, as long as it asks for the same wake-ups (the simulator does so
    /// for a wire into its packets' destination). `None` for any other model.
    fn delay_line(&self) -> Option<Dur> {
        None
    }
}

/// The wake-up of a [`Link::delay_line`]'s first packet.
pub const DELAY_LINE_ARRIVE: Timer = wired::ARRIVE;

/// A link that carries nothing: every packet put on it is reported lost on the wire, and it
/// has no queue. The simulator gives it to a link whose packets another link's model
/// carries (one crossing a shared medium), and [`build`] makes it of a configuration that
/// its model refuses.
#[derive(Clone, Copy, Debug, Default)]
pub struct Inert;

impl<P: LinkPacket> Link<P> for Inert {
    fn ports(&self) -> usize {
        2
    }
    fn start(&mut self, _origin: Time, _io: &mut Io<'_, P>) {}
    fn send(&mut self, _from: Port, _to: Port, pkt: P, io: &mut Io<'_, P>) {
        io.lost(Loss {
            pkt,
            kind: LossKind::Wire,
            sojourn: Dur::ZERO,
        });
    }
    fn handle_timeout(&mut self, _timer: Timer, _at: Time, _io: &mut Io<'_, P>) {}
    fn queues(&self) -> &[QueueInfo] {
        &[]
    }
    fn queue_stats(&self, _q: usize) -> Vec<(QueueId, QueueStats)> {
        Vec::new()
    }
    fn backlog(&self, _q: usize) -> (u64, u64) {
        (0, 0)
    }
    fn probability(&self, _q: usize) -> Option<f64> {
        None
    }
    fn rate(&self, _from: Port, _to: Port) -> Option<Rate> {
        None
    }
}

/// Counters a link keeps beside its queues'.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Times a serialisation started more than its catch-up limit after the link was free
    /// with a packet waiting (a real-time driver that was woken late), and the link time
    /// given up (ns) rather than sent as a burst; zero in virtual time.
    pub forfeits: u64,
    pub forfeit_ns: u64,
    /// Scheduled rate changes that took effect.
    pub rate_changes: u64,
    /// Packets lost on the wire (a loss model).
    pub wire_losses: u64,
    /// Transport blocks a cellular link sent ([`cellular`]), the bytes they could carry and
    /// the bytes they carried.
    pub blocks: u64,
    pub block_bytes: u64,
    pub block_bytes_used: u64,
    /// HARQ retransmissions of blocks ([`harq`]).
    pub harq_retransmissions: u64,
    /// Uplink: scheduling requests sent, grants made (dynamic and for SRs), grants that
    /// found the UE with nothing to send, and configured-grant occasions used.
    pub scheduling_requests: u64,
    pub grants: u64,
    pub grants_unused: u64,
    pub configured_grants_used: u64,
    /// DOCSIS Proactive Grant Service grants (counted in `grants` too), and those that found
    /// the Low-Latency flow with nothing to send.
    pub pgs_grants: u64,
    pub pgs_grants_unused: u64,
    /// DOCSIS service-flow shaping: the MAPs (upstream) or OFDM symbols (downstream) that
    /// had data waiting, and those in which the token buckets held some of it back.
    pub shaper_decisions: u64,
    pub shaper_limited: u64,
    /// Uplink grant delays (from data reaching an idle UE to the start of its granted
    /// slot): how many, their sum (ns), and a histogram in 1 ms buckets (the last one holds
    /// everything longer).
    pub grant_delays: u64,
    pub grant_delay_ns: u64,
    pub grant_delay_ms: [u64; cellular::GRANT_DELAY_BUCKETS],
}

impl std::ops::AddAssign for LinkStats {
    /// The counters of two links (or directions) together.
    fn add_assign(&mut self, o: LinkStats) {
        self.forfeits += o.forfeits;
        self.forfeit_ns += o.forfeit_ns;
        self.rate_changes += o.rate_changes;
        self.wire_losses += o.wire_losses;
        self.blocks += o.blocks;
        self.block_bytes += o.block_bytes;
        self.block_bytes_used += o.block_bytes_used;
        self.harq_retransmissions += o.harq_retransmissions;
        self.scheduling_requests += o.scheduling_requests;
        self.grants += o.grants;
        self.grants_unused += o.grants_unused;
        self.configured_grants_used += o.configured_grants_used;
        self.pgs_grants += o.pgs_grants;
        self.pgs_grants_unused += o.pgs_grants_unused;
        self.shaper_decisions += o.shaper_decisions;
        self.shaper_limited += o.shaper_limited;
        self.grant_delays += o.grant_delays;
        self.grant_delay_ns += o.grant_delay_ns;
        for (a, b) in self.grant_delay_ms.iter_mut().zip(o.grant_delay_ms) {
            *a += b;
        }
    }
}

impl LinkStats {
    /// Count one grant delay (data reaching an idle sender to the start of its grant) in
    /// the total and the 1 ms histogram.
    pub fn record_grant_delay(&mut self, d: Dur) {
        self.grant_delays += 1;
        self.grant_delay_ns += d.as_nanos();
        let b = ((d.as_nanos() / 1_000_000) as usize).min(cellular::GRANT_DELAY_BUCKETS - 1);
        self.grant_delay_ms[b] += 1;
    }
}

/// Wake-ups a real-time driver keeps for a link: the requests in time order, the earliest
/// first. Superseded requests stay until due and are handed to the link, which ignores
/// them.
#[derive(Debug, Default)]
pub struct Timers {
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(Time, u64, Timer)>>,
    seq: u64,
}

impl Timers {
    pub fn push(&mut self, timer: Timer, at: Time) {
        self.seq += 1;
        self.heap.push(std::cmp::Reverse((at, self.seq, timer)));
    }
    /// The earliest request.
    pub fn next(&self) -> Option<Time> {
        self.heap.peek().map(|r| r.0 .0)
    }
    /// The earliest request if it is due at `now`.
    pub fn pop_due(&mut self, now: Time) -> Option<(Timer, Time)> {
        match self.heap.peek() {
            Some(r) if r.0 .0 <= now => self.heap.pop().map(|r| (r.0 .2, r.0 .0)),
            _ => None,
        }
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    //! A packet and a driver for the models' unit tests.
    use super::*;

    /// A tail-drop FIFO deep enough never to drop in a model's unit test.
    pub fn deep_fifo() -> l4s_aqm::AqmConfig {
        l4s_aqm::AqmConfig::Fifo(l4s_aqm::FifoConfig {
            limit: 100_000,
            ..Default::default()
        })
    }

    #[derive(Clone, Debug, PartialEq)]
    pub struct Pkt {
        pub id: u64,
        pub size: u32,
        pub ecn: Ecn,
    }

    /// A full-size (1514-byte frame) ECT(1) packet.
    pub fn pkt(id: u64) -> Pkt {
        Pkt {
            id,
            size: 1514,
            ecn: Ecn::Ect1,
        }
    }

    impl QueuePacket for Pkt {
        fn wire_len(&self) -> u32 {
            self.size
        }
        fn ecn(&self) -> Ecn {
            self.ecn
        }
        fn set_ce(&mut self) -> bool {
            if self.ecn.is_ect() {
                self.ecn = Ecn::Ce;
                true
            } else {
                false
            }
        }
        fn flow_hash(&self) -> u32 {
            0
        }
    }

    impl LinkPacket for Pkt {
        fn set_ecn(&mut self, ecn: Ecn) {
            self.ecn = ecn;
        }
    }

    /// What the observer saw.
    #[derive(Default)]
    pub struct Seen {
        pub departed: Vec<(Time, u64, Dur)>,
        pub lost: Vec<(Time, u64, LossKind)>,
    }

    impl Observer<Pkt> for Seen {
        fn departed(&mut self, now: Time, d: &Departure<'_, Pkt>) {
            self.departed.push((now, d.pkt.id, d.sojourn));
        }
        fn lost(&mut self, now: Time, l: Loss<Pkt>) {
            self.lost.push((now, l.pkt.id, l.kind));
        }
    }

    /// Drives a link in virtual time: packets offered at given times, every wake-up run
    /// when due; returns each delivery (time, port, packet).
    pub fn drive(
        link: &mut dyn Link<Pkt>,
        offers: Vec<(Time, Port, Port, Pkt)>,
        until: Time,
        seen: &mut dyn Observer<Pkt>,
    ) -> Vec<(Time, Port, Pkt)> {
        drive_started(link, (Time::ZERO, Time::ZERO), offers, until, seen)
    }

    /// As [`drive`], with [`Link::start`] called at `start.0` with origin `start.1`, as a
    /// real-time driver does: packets may come before it (a forwarder runs before the
    /// run's time 0).
    pub fn drive_started(
        link: &mut dyn Link<Pkt>,
        start: (Time, Time),
        offers: Vec<(Time, Port, Port, Pkt)>,
        until: Time,
        seen: &mut dyn Observer<Pkt>,
    ) -> Vec<(Time, Port, Pkt)> {
        let offers = offers.into_iter().map(|(t, from, to, p)| (t, t, from, to, p)).collect();
        drive_from(link, start, offers, until, seen).0
    }

    /// As [`drive`], with each offer `(given, due, from, to, packet)` handed over at
    /// `given` and arriving at `due` ([`Link::send_at`] when that is later, as a simulator
    /// hands on a packet whose upstream started it). Also returns how many wake-ups the
    /// link asked for and got.
    pub fn drive_early(
        link: &mut dyn Link<Pkt>,
        offers: Vec<(Time, Time, Port, Port, Pkt)>,
        until: Time,
        seen: &mut dyn Observer<Pkt>,
    ) -> (Vec<(Time, Port, Pkt)>, usize) {
        drive_from(link, (Time::ZERO, Time::ZERO), offers, until, seen)
    }

    fn drive_from(
        link: &mut dyn Link<Pkt>,
        start: (Time, Time),
        mut offers: Vec<(Time, Time, Port, Port, Pkt)>,
        until: Time,
        seen: &mut dyn Observer<Pkt>,
    ) -> (Vec<(Time, Port, Pkt)>, usize) {
        offers.sort_by_key(|o| o.0);
        let mut offers = std::collections::VecDeque::from(offers);
        let mut timers = Timers::default();
        let mut actions = Vec::new();
        let mut out = Vec::new();
        let mut wakeups = 0;
        let handle = |actions: &mut Vec<Action<Pkt>>, timers: &mut Timers, out: &mut Vec<_>, now| {
            for a in actions.drain(..) {
                match a {
                    Action::Deliver { port, pkt, due } => {
                        assert_eq!(due, now, "a virtual-time driver is never late");
                        out.push((now, port, pkt));
                    }
                    Action::Wake { timer, at } => timers.push(timer, at.max(now)),
                }
            }
        };
        let mut started = false;
        loop {
            let next_offer = offers.front().map(|o| o.0);
            let next_timer = timers.next();
            let next_start = (!started).then_some(start.0);
            let now = [next_offer, next_timer, next_start].into_iter().flatten().min();
            let Some(now) = now else { break };
            if now > until {
                break;
            }
            let mut io = Io::new(now, &mut actions, seen);
            if next_start == Some(now) {
                started = true;
                link.start(start.1, &mut io);
            } else if next_timer == Some(now) {
                wakeups += 1;
                let (timer, at) = timers.pop_due(now).expect("due");
                link.handle_timeout(timer, at, &mut io);
            } else {
                let (_, due, from, to, p) = offers.pop_front().expect("offer");
                if due > now {
                    link.send_at(from, to, p, due, &mut io);
                } else {
                    link.send(from, to, p, &mut io);
                }
            }
            handle(&mut actions, &mut timers, &mut out, now);
        }
        (out, wakeups)
    }
}
