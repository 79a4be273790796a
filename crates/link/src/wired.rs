//! One direction of a wire: port 0 to port 1.
//!
//! ```text
//!   port 0 ──▶ [fault] ──▶ [queue discipline] ──▶ serialiser (rate, schedule) ──▶ delay line ──▶ port 1
//! ```
//!
//! * **Fault**: a middlebox that rewrites the ECN field of every packet entering the link
//!   from its start time on ([`crate::fault`]), before the queue classifies it.
//! * **Queue**: any [`l4s_aqm::Qdisc`] (DualPI2 and the baselines), fed and drained with
//!   the time the driver passes in.
//! * **Serialiser**: when the link is free the queue is asked for a packet, which then
//!   occupies the link for `size·8/rate` at the rate in force when its serialisation starts
//!   ([`crate::schedule`]: a packet being serialised when the rate changes finishes at the
//!   old rate). A serialisation starts at `max(link free, the packet's arrival, now −
//!   max_lag)`: a driver that was woken late (a real-time one) starts the next packets
//!   back to back from where the link should have been, so the long-run rate stays exact;
//!   after a stall longer than `max_lag` the missed link time is forfeited (counted in
//!   [`LinkStats`]) rather than sent as a burst. In virtual time the driver is never late
//!   and a serialisation always starts now.
//! * **Delay line**: every packet then takes the constant propagation delay. Constant
//!   delays keep the order, so the line is a FIFO and only its head has a wake-up.
//!
//! A link without a rate has no queue and no serialiser: a pure delay line, or, without a
//! delay either, a packet leaves the moment it enters.
//!
//! The serialiser, the delay line, the queue discipline and the rate schedule each ask
//! for their own wake-ups ([`TX_DONE`], [`ARRIVE`], [`QDISC`], [`RATE`]), so that the
//! simulator orders simultaneous events exactly as they were caused. A packet's
//! serialisation is computed when it starts: on a link with a delay the packet goes on
//! the delay line then, due at the end of its serialisation plus the delay, and the
//! serialiser asks to be woken at that end only when a packet is waiting for it (a link
//! that is not congested costs one wake-up per packet, its arrival, not two). On a link
//! without a delay the packet leaves at the end of its serialisation, from the one
//! wake-up that also starts the next.
//!
//! **Packets handed on before they arrive** (the simulator's fast path). A driver that
//! knows where every packet of a link goes next may ask the link to deliver each one at
//! the start of its serialisation, with its arrival time as `due`
//! ([`Link::deliver_early`]), and hand it at once to the next link with
//! [`Link::send_at`]. A wire with a rate keeps such a packet in an inbox, ordered by due
//! time, and takes it into its queue as [`Link::send`] would have at `due`, with `due` as
//! the time, at the first call after it (any call of the driver, a wake-up of its own or
//! [`Link::catch_up`]). That is exact whenever the link is serialising at `due`: nothing
//! else can reach the queue discipline before that call, and the call takes the inbox
//! first. When the link is not serialising it asks to be woken at `due` ([`INBOX`]). A
//! bottleneck that is always busy thus takes its arrivals without a wake-up each. A wire
//! without a rate but with a delay takes such a packet at once: it leaves `delay` after it
//! comes whatever else comes, so it goes on the delay line then, in order of arrival among
//! packets given by several senders (or on to the next link, early, in turn). Of what
//! is due at the same instant, the packets handed on for it come first: a packet that
//! arrives as the serialiser falls free is in the queue when the next one is chosen.
//!
//! **Steps left until they matter** ([`Link::defer_steps`]). On a wire with a delay that
//! does not deliver early, a packet leaves only after the step that started it, by the
//! whole delay. Such a wire may leave its own steps (the end of a serialisation that a
//! packet waits for, the queue discipline's timer, a packet of the inbox coming due)
//! until the next call of any kind, and take them then, in order of time, each with its
//! own time as the clock: packets of the inbox first, then the queue discipline's timer,
//! then the end of a serialisation. Nothing outside the link sees its state in between
//! (the driver catches it up before every query), so the queue sees the same arrivals,
//! timers and departures at the same times. The wire asks to be woken only when a packet
//! leaves: at the head of the delay line or, idle, at the arrival at port 1 of the
//! inbox's first packet (which starts the moment it comes). No later step can make a
//! packet leave earlier: what starts later leaves later. A bottleneck with a delay thus
//! costs one wake-up per packet, its departure, not two.

use crate::stage::{apply_fault, insert_by_due, DelayLine, Queue};
use crate::{Departure, Fault, Io, Link, LinkPacket, LinkStats, Port, QueueInfo, RateSchedule, Timer};
use l4s_aqm::{AqmConfig, Dequeued, QueueId, QueueStats};
use l4s_core::{Dur, Rate, Rng, Time};
use std::collections::VecDeque;

/// A packet finished its serialisation.
pub const TX_DONE: Timer = 0;
/// The head of the delay line reaches port 1.
pub const ARRIVE: Timer = 1;
/// The queue discipline's timer (PI probability update).
pub const QDISC: Timer = 2;
/// The next change of the rate schedule.
pub const RATE: Timer = 3;
/// The first packet of the inbox arrives while the link is idle.
pub const INBOX: Timer = 4;

/// One direction of a wire; see the module documentation.
pub struct Wired<P> {
    /// The configured rate (`None`: no queue, no serialiser).
    base_rate: Option<Rate>,
    /// The rate in force.
    rate: Option<Rate>,
    schedule: RateSchedule,
    delay: Dur,
    fault: Option<Fault>,
    max_lag: Dur,
    queue: Queue<P>,
    /// Time 0 of the run, once known.
    origin: Option<Time>,
    /// When the link is free again (the end of the last serialisation).
    free_at: Time,
    /// A [`TX_DONE`] wake-up is asked for at `free_at`.
    tx_wake: bool,
    /// Packets on the wire.
    line: DelayLine<P>,
    stats: LinkStats,
    /// Packets given before they arrive ([`Link::send_at`]), by due time; ties in the
    /// order they were given.
    inbox: VecDeque<(Time, P)>,
    /// The earliest [`INBOX`] wake-up asked for and not yet due; with deferred steps,
    /// the earliest wake-up asked for a departure.
    inbox_wake: Option<Time>,
    /// Deliver at the start of serialisation ([`Link::deliver_early`]).
    early_out: bool,
    /// Leave the link's own steps until the next call ([`Link::defer_steps`]).
    deferred: bool,
}

impl<P: LinkPacket + 'static> Wired<P> {
    /// A wire with the given rate (`None`: unlimited), propagation delay, queue, fault,
    /// rate schedule and catch-up limit; `rng` seeds the queue discipline.
    pub fn new(
        rate: Option<Rate>,
        delay: Dur,
        aqm: &AqmConfig,
        fault: Option<Fault>,
        schedule: RateSchedule,
        max_lag: Dur,
        rng: Rng,
    ) -> Wired<P> {
        Wired {
            base_rate: rate,
            rate,
            schedule,
            delay,
            fault,
            max_lag,
            queue: Queue::new(aqm, rng),
            origin: None,
            free_at: Time::ZERO,
            tx_wake: false,
            line: DelayLine::default(),
            stats: LinkStats::default(),
            inbox: VecDeque::new(),
            inbox_wake: None,
            early_out: false,
            deferred: false,
        }
    }

    /// Start serialising the next packet if the queue has one.
    fn start_tx(&mut self, io: &mut Io<'_, P>) {
        let dequeued = self.queue.qdisc.dequeue(io.now, &mut self.queue.drops);
        self.begin_tx(dequeued, io);
    }

    /// Serialise `dequeued`, the packet the queue released now (if any), then report the
    /// queue's drops and ask for its timer.
    #[inline]
    fn begin_tx(&mut self, dequeued: Option<Dequeued<P>>, io: &mut Io<'_, P>) {
        let now = io.now;
        // Read where the queue discipline returned it, field by field: moved out whole, it was
        // copied in 16-byte words that straddled the callee's own stores, and the copy waited
        // for them.
        if let Some(d) = &dequeued {
            let arrival = Time(now.as_nanos().saturating_sub(d.sojourn.as_nanos()));
            let catch_up_from = Time(now.as_nanos().saturating_sub(self.max_lag.as_nanos()));
            if self.free_at >= arrival && catch_up_from > self.free_at {
                // Woken too late to make it all up: forfeit link time rather than burst.
                self.stats.forfeits += 1;
                self.stats.forfeit_ns += catch_up_from.since(self.free_at).as_nanos();
            }
            let start = self.free_at.max(arrival).max(catch_up_from);
            let serialisation = self.rate.unwrap_or(Rate::ZERO).tx_time(d.pkt.wire_len() as u64);
            self.free_at = start + serialisation;
            io.departed(&Departure {
                pkt: &d.pkt,
                queue: 0,
                sub: d.queue,
                sojourn: d.sojourn,
                start,
                serialisation,
                marked: d.marked,
            });
        }
        if let Some(Dequeued { pkt, .. }) = dequeued {
            if self.early_out {
                io.deliver(1, pkt, self.free_at + self.delay);
                self.wake_tx(io);
            } else if self.delay.is_zero() {
                // The packet being serialised waits on the line (empty otherwise, as the
                // link has no delay) for the wake-up that ends it.
                self.line.hold(pkt, self.free_at);
                self.wake_tx(io);
            } else if self.deferred {
                // Left on the line until a call at or after its arrival.
                self.line.hold(pkt, self.free_at + self.delay);
                self.wake_tx(io);
            } else {
                self.line.push(pkt, self.free_at + self.delay, io, ARRIVE);
                self.wake_tx(io);
            }
        }
        self.queue.flush_drops(io);
        self.arm_qdisc(io);
    }

    /// Ask for the queue discipline's timer; with deferred steps only note it.
    fn arm_qdisc(&mut self, io: &mut Io<'_, P>) {
        if self.deferred {
            self.queue.note_timer();
        } else {
            self.queue.arm(io, QDISC);
        }
    }

    /// Without a delay, the packet on the line is the one being serialised.
    fn serialising(&self) -> bool {
        self.delay.is_zero() && !self.line.is_empty()
    }

    /// Without a rate: `pkt`, which comes at `came` (now, or later when given early),
    /// reaches port 1 `delay` after, with the fault in force when it came. On the line it
    /// goes behind the packets due no later, so packets given early and packets that come
    /// now keep the order of their arrival.
    fn propagate(&mut self, mut pkt: P, came: Time, io: &mut Io<'_, P>) {
        apply_fault(self.fault, self.origin, came, &mut pkt);
        if self.delay.is_zero() {
            io.deliver(1, pkt, came);
        } else if self.early_out {
            io.deliver(1, pkt, came + self.delay);
        } else {
            self.line.insert(pkt, came + self.delay, io, ARRIVE);
        }
    }

    /// A packet enters the link now ([`Link::send`] after the inbox).
    fn enter(&mut self, mut pkt: P, io: &mut Io<'_, P>) {
        let now = io.now;
        if self.rate.is_none() {
            return self.propagate(pkt, now, io);
        }
        apply_fault(self.fault, self.origin, now, &mut pkt);
        if !self.serialising() && self.free_at <= now {
            // The serialiser is free: the queue takes the packet and releases its next at
            // once (an empty FIFO passes it straight through).
            if let Some(dequeued) = self.queue.enqueue_dequeue(pkt, io) {
                self.begin_tx(dequeued, io);
            }
        } else if self.queue.enqueue(pkt, io) {
            self.wake_tx(io);
        }
        // Disciplines that push out other packets on arrival (FQ-CoDel overflow).
        self.queue.qdisc.drain_enqueue_drops(&mut self.queue.drops);
        self.queue.flush_drops(io);
        self.arm_qdisc(io);
    }

    /// Take in the inbox's packets due by now, each at its due time.
    fn absorb(&mut self, io: &mut Io<'_, P>) {
        let now = io.now;
        while self.inbox.front().is_some_and(|(due, _)| *due <= now) {
            let Some((due, pkt)) = self.inbox.pop_front() else {
                break;
            };
            // The link was serialising at `due` (or `due` is now): nothing has touched
            // the queue since, so it takes the packet as it would have then.
            io.now = due;
            self.enter(pkt, io);
        }
        io.now = now;
    }

    /// Ask to be woken when the inbox's first packet arrives, unless a wake-up of the
    /// serialiser comes first (it takes the inbox, or asks again).
    fn arm_inbox(&mut self, io: &mut Io<'_, P>) {
        let Some(&(due, _)) = self.inbox.front() else { return };
        if self.tx_wake || self.inbox_wake.is_some_and(|w| w <= due) {
            return;
        }
        self.inbox_wake = Some(due);
        io.wake(INBOX, due);
    }

    /// Ask to be woken when the link is free if a packet is waiting for it, or (without a
    /// delay) to hand on the one being serialised.
    fn wake_tx(&mut self, io: &mut Io<'_, P>) {
        if !self.tx_wake && (self.serialising() || self.queue.qdisc.len_packets() > 0) {
            self.tx_wake = true;
            // With deferred steps the end of the serialisation is taken by the next call.
            if !self.deferred {
                io.wake(TX_DONE, self.free_at);
            }
        }
    }

    /// With deferred steps: take every step due by now in order of time (packets of the
    /// inbox, then the queue discipline's timer, then the end of a serialisation, at
    /// equal times), each with its own time as the clock.
    fn advance(&mut self, io: &mut Io<'_, P>) {
        let now = io.now;
        enum Step {
            Inbox,
            Timer,
            Tx,
        }
        loop {
            // The earliest step, the first of these kinds at equal times.
            let mut next = self.inbox.front().map(|(due, _)| (*due, Step::Inbox));
            if let Some(t) = self.queue.noted_timer() {
                if next.as_ref().is_none_or(|(n, _)| t < *n) {
                    next = Some((t, Step::Timer));
                }
            }
            if self.tx_wake && next.as_ref().is_none_or(|(n, _)| self.free_at < *n) {
                next = Some((self.free_at, Step::Tx));
            }
            let Some((t, step)) = next.filter(|(t, _)| *t <= now) else {
                break;
            };
            io.now = t;
            match step {
                Step::Inbox => {
                    if let Some((_, pkt)) = self.inbox.pop_front() {
                        self.enter(pkt, io);
                    }
                }
                Step::Timer => {
                    // A discipline's timer drops nothing (`Qdisc::on_timeout`).
                    self.queue.run_timer(t);
                    self.queue.note_timer();
                }
                Step::Tx => {
                    self.tx_wake = false;
                    self.start_tx(io);
                }
            }
        }
        io.now = now;
    }

    /// With deferred steps: hand on the packets of the line that have arrived, and ask to
    /// be woken when the next one leaves: the line's head, or (the link idle) the inbox's
    /// first packet, which starts when it comes.
    fn leave(&mut self, io: &mut Io<'_, P>) {
        let now = io.now;
        while let Some(due) = self.line.head_due().filter(|d| *d <= now) {
            if let Some((_, pkt)) = self.line.take() {
                io.deliver(1, pkt, due);
            }
        }
        let next = match (self.line.head_due(), self.inbox.front()) {
            (Some(head), _) => Some(head),
            (None, Some((due, pkt))) => {
                let rate = self.rate.unwrap_or(Rate::ZERO);
                Some(*due + rate.tx_time(pkt.wire_len() as u64) + self.delay)
            }
            (None, None) => None,
        };
        if let Some(at) = next {
            if self.inbox_wake.is_none_or(|w| w > at) {
                self.inbox_wake = Some(at);
                io.wake(ARRIVE, at);
            }
        }
    }
}

impl<P: LinkPacket + 'static> Link<P> for Wired<P> {
    fn ports(&self) -> usize {
        2
    }

    fn start(&mut self, origin: Time, io: &mut Io<'_, P>) {
        self.origin = Some(origin);
        if self.base_rate.is_some() {
            if let Some(first) = self.schedule.first_change() {
                io.wake(RATE, origin + first);
            }
        }
        self.arm_qdisc(io);
    }

    fn send(&mut self, _from: Port, _to: Port, pkt: P, io: &mut Io<'_, P>) {
        if self.deferred {
            self.advance(io);
            self.enter(pkt, io);
            return self.leave(io);
        }
        self.absorb(io);
        self.enter(pkt, io);
        self.arm_inbox(io);
    }

    fn accepts_early(&self) -> bool {
        self.base_rate.is_some() || !self.delay.is_zero()
    }

    fn send_at(&mut self, from: Port, to: Port, pkt: P, due: Time, io: &mut Io<'_, P>) {
        if due <= io.now {
            return self.send(from, to, pkt, io);
        }
        if self.base_rate.is_none() {
            // A delay line: the packet reaches port 1 `delay` after it comes, whatever
            // else comes, so it goes on the line (or on, early) at once.
            return self.propagate(pkt, due, io);
        }
        // After the packets due no later (usually the last: arrivals come in order).
        insert_by_due(&mut self.inbox, due, pkt);
        if self.deferred {
            return self.leave(io);
        }
        self.arm_inbox(io);
    }

    fn catch_up(&mut self, io: &mut Io<'_, P>) {
        if self.deferred {
            self.advance(io);
            return self.leave(io);
        }
        self.absorb(io);
        self.arm_inbox(io);
    }

    fn deliver_early(&mut self) -> bool {
        self.early_out = true;
        true
    }

    fn defer_steps(&mut self) -> bool {
        self.deferred = self.base_rate.is_some() && !self.delay.is_zero() && !self.early_out;
        self.deferred
    }

    fn pass_through(&self) -> Option<Dur> {
        // `send` → `enter` → `propagate` of such a wire: the fault (none) and a delivery
        // at `now + delay`.
        (self.early_out && self.base_rate.is_none() && self.fault.is_none() && !self.delay.is_zero())
            .then_some(self.delay)
    }

    fn delay_line(&self) -> Option<Dur> {
        // `send` and `send_at` → `propagate` → `DelayLine::insert` at `max(now, due) +
        // delay`; the wake-up → `DelayLine::arrive`. Without a rate nothing else runs.
        (!self.early_out && self.base_rate.is_none() && self.fault.is_none() && !self.delay.is_zero())
            .then_some(self.delay)
    }

    fn handle_timeout(&mut self, timer: Timer, at: Time, io: &mut Io<'_, P>) {
        if self.deferred {
            if self.inbox_wake == Some(at) {
                self.inbox_wake = None;
            }
            self.advance(io);
            if timer == RATE {
                self.timeout(timer, at, io);
            }
            return self.leave(io);
        }
        self.absorb(io);
        self.timeout(timer, at, io);
        self.arm_inbox(io);
    }

    fn queues(&self) -> &[QueueInfo] {
        if self.base_rate.is_some() {
            &self.queue.info
        } else {
            &[]
        }
    }

    one_queue_queries!();

    fn rate(&self, _from: Port, _to: Port) -> Option<Rate> {
        self.rate
    }

    fn stats(&self) -> LinkStats {
        self.stats
    }
}

impl<P: LinkPacket + 'static> Wired<P> {
    /// A wake-up of the serialiser, the delay line, the queue discipline, the rate
    /// schedule or the inbox.
    fn timeout(&mut self, timer: Timer, at: Time, io: &mut Io<'_, P>) {
        match timer {
            TX_DONE => {
                self.tx_wake = false;
                let done = if self.delay.is_zero() { self.line.take() } else { None };
                // A packet that came when the link fell free may have started already.
                if self.free_at <= io.now {
                    self.start_tx(io);
                } else {
                    self.wake_tx(io);
                }
                if let Some((end, pkt)) = done {
                    io.deliver(1, pkt, end);
                }
            }
            ARRIVE => self.line.arrive(io, ARRIVE),
            QDISC => self.queue.on_timer(at, io, QDISC),
            RATE => {
                let (Some(base), Some(origin)) = (self.base_rate, self.origin) else {
                    return;
                };
                let t = at.since(origin);
                let (rate, applied) = self.schedule.at(base, t);
                self.rate = Some(rate);
                self.stats.rate_changes = applied;
                if let Some(next) = self.schedule.next_change_after(t) {
                    io.wake(RATE, origin + next);
                }
            }
            INBOX if self.inbox_wake == Some(at) => self.inbox_wake = None,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{drive, Pkt, Seen};
    use crate::{Action, FaultKind};
    use l4s_aqm::FifoConfig;
    use l4s_core::Ecn;

    pub(super) fn pkt(id: u64, size: u32) -> Pkt {
        Pkt {
            id,
            size,
            ecn: Ecn::Ect1,
        }
    }

    pub(super) fn fifo(limit: u32) -> AqmConfig {
        AqmConfig::Fifo(FifoConfig {
            limit,
            ..Default::default()
        })
    }

    /// 12 Mbit/s (1500 B in 1 ms) with `delay`, a FIFO of `limit` packets, no fault, no
    /// schedule, 2 ms of catch-up.
    pub(super) fn wire(delay: Dur, limit: u32) -> Wired<Pkt> {
        Wired::new(
            Some(Rate::mbps(12)),
            delay,
            &fifo(limit),
            None,
            RateSchedule::default(),
            Dur::from_millis(2),
            Rng::new(1),
        )
    }

    #[test]
    fn packets_are_serialised_back_to_back_then_delayed() {
        // 12 Mbit/s: 1500 B take 1 ms; 5 ms of propagation.
        let mut w = wire(Dur::from_millis(5), 100);
        let offers = (0..3).map(|i| (Time::ZERO, 0, 1, pkt(i, 1500))).collect();
        let mut seen = Seen::default();
        let out = drive(&mut w, offers, Time::from_secs(1), &mut seen);
        let times: Vec<u64> = out.iter().map(|o| o.0.as_nanos() / 1_000_000).collect();
        assert_eq!(times, [6, 7, 8]);
        assert!(out.iter().all(|o| o.1 == 1));
        // Sojourns: 0, 1 ms, 2 ms.
        let soj: Vec<u64> = seen.departed.iter().map(|d| d.2.as_nanos() / 1_000_000).collect();
        assert_eq!(soj, [0, 1, 2]);
    }

    #[test]
    fn the_serialiser_is_woken_only_for_a_packet_that_waits() {
        // 12 Mbit/s, 5 ms: 1500 B take 1 ms. Three packets 2 ms apart find the link free;
        // then a burst of three at 10 ms, two of which wait.
        let mut w: Wired<Pkt> = wire(Dur::from_millis(5), 100);
        let mut actions = Vec::new();
        let mut seen = Seen::default();
        let mut wakes = |w: &mut Wired<Pkt>, at: Time, id| {
            w.send(0, 1, pkt(id, 1500), &mut Io::new(at, &mut actions, &mut seen));
            let n = |t| {
                actions
                    .iter()
                    .filter(|a| matches!(a, Action::Wake { timer, .. } if *timer == t))
                    .count()
            };
            let counts = (n(TX_DONE), n(ARRIVE));
            actions.clear();
            counts
        };
        // Free link, empty line: the packet's arrival is the only wake-up.
        assert_eq!(wakes(&mut w, Time::ZERO, 0), (0, 1));
        // Free link, a packet still on the line ahead: none.
        assert_eq!(wakes(&mut w, Time::from_millis(2), 1), (0, 0));
        assert_eq!(wakes(&mut w, Time::from_millis(4), 2), (0, 0));
        assert_eq!(w.free_at, Time::from_millis(5));
        // A burst: the first starts at once, the second asks for the end of the first,
        // the third waits behind it without a wake-up of its own.
        assert_eq!(wakes(&mut w, Time::from_millis(10), 3), (0, 0));
        assert_eq!(wakes(&mut w, Time::from_millis(10), 4), (1, 0));
        assert_eq!(wakes(&mut w, Time::from_millis(10), 5), (0, 0));
        assert_eq!(w.free_at, Time::from_millis(11));
        // A packet comes just as the first ends, before the wake-up: the second starts
        // then, and the wake-up that follows at the same instant starts nothing early but
        // asks for the end of the second.
        let t11 = Time::from_millis(11);
        assert_eq!(wakes(&mut w, t11, 6), (0, 0));
        assert_eq!(w.free_at, Time::from_millis(12));
        w.handle_timeout(TX_DONE, t11, &mut Io::new(t11, &mut actions, &mut seen));
        assert_eq!(w.free_at, Time::from_millis(12));
        assert!(matches!(actions[..], [Action::Wake { timer: TX_DONE, at }] if at == Time::from_millis(12)));
        // Each waited until the link was free: sojourns 0, 0, 0, 0, 1 ms (4, from 10 to 11).
        let soj: Vec<u64> = seen.departed.iter().map(|d| d.2.as_nanos() / 1_000).collect();
        assert_eq!(soj, [0, 0, 0, 0, 1_000]);
    }

    #[test]
    fn without_a_delay_one_wake_up_per_packet_ends_it_and_starts_the_next() {
        let mut w: Wired<Pkt> = wire(Dur::ZERO, 100);
        let mut actions = Vec::new();
        let mut seen = Seen::default();
        for i in 0..3 {
            w.send(0, 1, pkt(i, 1500), &mut Io::new(Time::ZERO, &mut actions, &mut seen));
        }
        let (mut wakes, mut out) = (0, Vec::new());
        let mut due = vec![];
        loop {
            for a in actions.drain(..) {
                match a {
                    Action::Wake { timer, at } => {
                        assert_eq!(timer, TX_DONE);
                        wakes += 1;
                        due.push(at);
                    }
                    Action::Deliver { pkt, due, .. } => out.push((pkt.id, due)),
                }
            }
            let Some(at) = due.pop() else { break };
            w.handle_timeout(TX_DONE, at, &mut Io::new(at, &mut actions, &mut seen));
        }
        assert_eq!(wakes, 3);
        let ms = |n| Time::from_millis(n);
        assert_eq!(out, [(0, ms(1)), (1, ms(2)), (2, ms(3))]);
    }

    #[test]
    fn a_full_queue_drops_and_the_observer_owns_the_packet() {
        let mut w = wire(Dur::ZERO, 2);
        // One on the wire, two queued, the fourth dropped.
        let offers = (0..4).map(|i| (Time::ZERO, 0, 1, pkt(i, 1500))).collect();
        let mut seen = Seen::default();
        let out = drive(&mut w, offers, Time::from_secs(1), &mut seen);
        assert_eq!(out.len(), 3);
        assert_eq!(seen.lost.len(), 1);
        assert_eq!(seen.lost[0].1, 3);
        assert!(matches!(seen.lost[0].2, crate::LossKind::Queue { queue: 0, .. }));
    }

    #[test]
    fn the_rate_follows_its_schedule_between_packets() {
        // 12 Mbit/s, 1.2 Mbit/s from 10 ms: a packet started before the change keeps the
        // old rate; the next one takes ten times as long.
        let schedule = RateSchedule {
            steps: vec![(Dur::from_millis(10), Rate::kbps(1200))],
            ..Default::default()
        };
        let mut w = Wired::new(
            Some(Rate::mbps(12)),
            Dur::ZERO,
            &fifo(100),
            None,
            schedule,
            Dur::from_millis(2),
            Rng::new(1),
        );
        let offers = vec![
            (Time::from_micros(9_500), 0, 1, pkt(0, 1500)),
            (Time::from_micros(9_600), 0, 1, pkt(1, 1500)),
        ];
        let mut seen = Seen::default();
        let out = drive(&mut w, offers, Time::from_secs(1), &mut seen);
        assert_eq!(out[0].0, Time::from_micros(10_500));
        assert_eq!(out[1].0, Time::from_micros(20_500));
        assert_eq!(w.rate(0, 1), Some(Rate::kbps(1200)));
        assert_eq!(w.stats().rate_changes, 1);
    }

    #[test]
    fn a_fault_rewrites_ecn_from_its_start() {
        let mut w: Wired<Pkt> = Wired::new(
            None,
            Dur::ZERO,
            &fifo(100),
            Some(Fault {
                kind: FaultKind::Bleach,
                start: Dur::from_millis(5),
            }),
            RateSchedule::default(),
            Dur::from_millis(2),
            Rng::new(1),
        );
        let offers = vec![
            (Time::from_millis(1), 0, 1, pkt(0, 100)),
            (Time::from_millis(6), 0, 1, pkt(1, 100)),
        ];
        let out = drive(&mut w, offers, Time::from_secs(1), &mut Seen::default());
        assert_eq!(out[0].2.ecn, Ecn::Ect1);
        assert_eq!(out[1].2.ecn, Ecn::NotEct);
        assert!(w.queues().is_empty(), "a link without a rate has no queue");
    }

    #[test]
    fn a_late_driver_catches_up_within_max_lag_and_forfeits_beyond() {
        let mut w = wire(Dur::ZERO, 100);
        let mut actions = Vec::new();
        let mut seen = Seen::default();
        macro_rules! io {
            ($t:expr) => {
                &mut Io::new($t, &mut actions, &mut seen)
            };
        }
        w.start(Time::ZERO, io!(Time::ZERO));
        for i in 0..3 {
            w.send(0, 1, pkt(i, 1500), io!(Time::ZERO));
        }
        // Woken 1.5 ms after the first packet ended (1 ms): the second one started at 1 ms.
        w.handle_timeout(TX_DONE, Time::from_millis(1), io!(Time::from_micros(2_500)));
        assert_eq!(w.free_at, Time::from_millis(2));
        assert_eq!(w.stats().forfeits, 0);
        // Woken 5 ms late: only the last 2 ms are made up.
        w.handle_timeout(TX_DONE, Time::from_millis(2), io!(Time::from_millis(7)));
        assert_eq!(w.free_at, Time::from_millis(6));
        assert_eq!(
            (w.stats().forfeits, w.stats().forfeit_ns),
            (1, Dur::from_millis(3).as_nanos())
        );
        let due: Vec<Time> = actions
            .iter()
            .filter_map(|a| match a {
                crate::Action::Deliver { due, .. } => Some(*due),
                _ => None,
            })
            .collect();
        assert_eq!(due, [Time::from_millis(1), Time::from_millis(2)]);
    }
}

#[cfg(test)]
mod pi_tests {
    use super::*;
    use crate::testutil::{Pkt, Seen};
    use crate::{Action, Timers};
    use l4s_aqm::DualPi2Config;
    use l4s_core::Ecn;

    /// Drive an overloaded DualPI2 link as a real-time driver does: woken `late` after each
    /// due time, packets entering at their arrival times. The PI controller must run.
    fn overloaded(late: Dur) -> f64 {
        let mut w: Wired<Pkt> = Wired::new(
            Some(Rate::mbps(10)),
            Dur::ZERO,
            &AqmConfig::DualPi2(DualPi2Config::default()),
            None,
            RateSchedule::default(),
            Dur::from_millis(2),
            Rng::new(1),
        );
        let mut timers = Timers::default();
        let mut actions = Vec::new();
        let mut seen = Seen::default();
        w.start(Time::ZERO, &mut Io::new(Time::ZERO, &mut actions, &mut seen));
        // 20 Mbit/s of 1500-byte classic packets: one every 600 µs, for 2 s.
        let mut next_pkt = Time::ZERO;
        let mut id = 0;
        let end = Time::from_secs(2);
        let mut now = Time::ZERO;
        while now < end {
            for a in actions.drain(..) {
                if let Action::Wake { timer, at } = a {
                    timers.push(timer, at);
                }
            }
            let due = timers.next().unwrap_or(end).min(next_pkt);
            now = (due + late).max(now);
            while next_pkt <= now {
                w.send(
                    0,
                    1,
                    Pkt {
                        id,
                        size: 1500,
                        ecn: Ecn::Ect0,
                    },
                    &mut Io::new(next_pkt, &mut actions, &mut seen),
                );
                id += 1;
                next_pkt += Dur::from_micros(600);
            }
            for a in actions.drain(..) {
                if let Action::Wake { timer, at } = a {
                    timers.push(timer, at);
                }
            }
            while let Some((timer, at)) = timers.pop_due(now) {
                w.handle_timeout(timer, at, &mut Io::new(now, &mut actions, &mut seen));
                for a in actions.drain(..) {
                    if let Action::Wake { timer, at } = a {
                        timers.push(timer, at);
                    }
                }
            }
        }
        w.probability(0).unwrap()
    }

    #[test]
    fn the_pi_controller_runs_for_a_late_driver() {
        for late in [Dur::ZERO, Dur::from_micros(50), Dur::from_micros(500)] {
            let p = overloaded(late);
            assert!(p > 0.05, "late {late}: p' = {p}");
        }
    }
}

/// Packets given before they arrive ([`Link::send_at`], [`Link::deliver_early`]).
#[cfg(test)]
mod early_tests {
    use super::tests::{fifo, pkt, wire};
    use super::*;
    use crate::testutil::{drive_early, Pkt, Seen};
    use crate::{Action, FaultKind};
    use l4s_aqm::DualPi2Config;
    use l4s_core::Ecn;

    /// A DualPI2 wire of 12 Mbit/s with `delay`.
    fn dualpi2_wire(delay: Dur) -> Wired<Pkt> {
        Wired::new(
            Some(Rate::mbps(12)),
            delay,
            &AqmConfig::DualPi2(DualPi2Config::default()),
            None,
            RateSchedule::default(),
            Dur::from_millis(2),
            Rng::new(7),
        )
    }

    /// Bursts of ECT(1) and not-ECT packets of mixed sizes at odd nanoseconds, so that no
    /// arrival coincides with the end of a serialisation: busy stretches, idle gaps and a
    /// queue deep enough for DualPI2 to mark and drop.
    fn bursty_offers() -> Vec<(Time, u64, u32, Ecn)> {
        let mut x: u64 = 12345;
        let mut next = || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            x >> 33
        };
        let mut t = 0u64;
        let mut out = Vec::new();
        for id in 0..3000 {
            // Mostly back to back at 2-3 times the rate, now and then a gap of up to 40 ms.
            t += if next() % 50 == 0 {
                next() % 40_000_000
            } else {
                next() % 400_000
            } + 1;
            let size = 64 + (next() % 1437) as u32;
            let ecn = if next() % 2 == 0 { Ecn::Ect1 } else { Ecn::NotEct };
            out.push((Time(t), id, size, ecn));
        }
        out
    }

    /// Run `w` over `offers` in virtual time, each given at `given(its time)`: deliveries
    /// (time, id), what the observer saw, and the wake-ups it asked for and got.
    fn run_offers(
        w: &mut Wired<Pkt>,
        offers: &[(Time, u64, u32, Ecn)],
        given: impl Fn(Time) -> Time,
    ) -> (Vec<(Time, u64, Ecn)>, Seen, usize) {
        let mut seen = Seen::default();
        let offers = offers
            .iter()
            .map(|&(t, id, size, ecn)| (given(t), t, 0, 1, Pkt { id, size, ecn }))
            .collect();
        let (out, wakeups) = drive_early(w, offers, Time::from_secs(60), &mut seen);
        (
            out.into_iter().map(|(t, _, p)| (t, p.id, p.ecn)).collect(),
            seen,
            wakeups,
        )
    }

    #[test]
    fn packets_given_early_leave_exactly_as_if_given_when_they_arrive() {
        let offers = bursty_offers();
        for delay in [Dur::ZERO, Dur::from_millis(1)] {
            let (out_now, seen_now, calls_now) = run_offers(&mut dualpi2_wire(delay), &offers, |t| t);
            // Each handed on 5 ms ahead, as a 5 ms access link with early delivery does.
            let (out_early, seen_early, calls_early) = run_offers(&mut dualpi2_wire(delay), &offers, |t| {
                Time(t.as_nanos().saturating_sub(5_000_000))
            });
            assert_eq!(out_now.len() + seen_now.lost.len(), offers.len());
            assert!(
                seen_now.lost.len() > 10,
                "the queue overflowed or DualPI2 dropped: {}",
                seen_now.lost.len()
            );
            assert_eq!(out_early, out_now, "delay {delay}");
            assert_eq!(seen_early.departed, seen_now.departed);
            assert_eq!(seen_early.lost, seen_now.lost);
            // In a simulator each arrival given when it happens is an event; given early,
            // only those that find the link idle take a wake-up (about one in three here).
            let events_now = calls_now + offers.len();
            assert!(
                calls_early + offers.len() / 2 < events_now,
                "delay {delay}: {calls_early} wake-ups early against {events_now} events"
            );
            println!("delay {delay}: {calls_early} wake-ups early against {events_now} events");
        }
    }

    /// A DualPI2 wire of 12 Mbit/s and 1 ms whose rate falls to 3 Mbit/s from 20 to 30 s
    /// and rises to 30 Mbit/s from 40 s, with its steps deferred or not.
    fn scheduled_wire(defer: bool) -> Wired<Pkt> {
        let schedule = RateSchedule {
            steps: vec![
                (Dur::from_secs(20), Rate::mbps(3)),
                (Dur::from_secs(30), Rate::mbps(12)),
                (Dur::from_secs(40), Rate::mbps(30)),
            ],
            ..Default::default()
        };
        let mut w = Wired::new(
            Some(Rate::mbps(12)),
            Dur::from_millis(1),
            &AqmConfig::DualPi2(DualPi2Config::default()),
            None,
            schedule,
            Dur::from_millis(2),
            Rng::new(7),
        );
        if defer {
            assert!(w.defer_steps());
        }
        w
    }

    #[test]
    fn a_wire_that_defers_its_steps_gives_the_same_departures_drops_and_marks() {
        let offers = bursty_offers();
        let early = |t: Time| Time(t.as_nanos().saturating_sub(5_000_000));
        // The reference: every step a wake-up of its own, each packet given on arrival.
        let (out_ref, seen_ref, calls_ref) = run_offers(&mut scheduled_wire(false), &offers, |t| t);
        assert!(seen_ref.lost.len() > 10, "DualPI2 dropped: {}", seen_ref.lost.len());
        let marks = out_ref.iter().filter(|o| o.2 == Ecn::Ce).count();
        assert!(marks > 10, "DualPI2 marked: {marks}");
        for (given_early, name) in [(false, "given on arrival"), (true, "given 5 ms early")] {
            let given = |t: Time| if given_early { early(t) } else { t };
            let (out, seen, calls) = run_offers(&mut scheduled_wire(true), &offers, given);
            assert_eq!(out, out_ref, "{name}");
            assert_eq!(seen.departed, seen_ref.departed, "{name}");
            assert_eq!(seen.lost, seen_ref.lost, "{name}");
            // One wake-up per departure, and one for each of the three rate changes: no
            // serialiser, queue-timer or inbox wake-ups.
            assert!(
                calls <= out.len() + 3,
                "{name}: {calls} wake-ups for {} departures (reference {calls_ref})",
                out.len()
            );
            println!(
                "{name}: {calls} wake-ups for {} departures, reference {calls_ref}",
                out.len()
            );
        }
        // Without a delay, or delivering early, a wire keeps its steps.
        assert!(!dualpi2_wire(Dur::ZERO).defer_steps());
        let mut w = dualpi2_wire(Dur::from_millis(1));
        w.deliver_early();
        assert!(!w.defer_steps());
    }

    /// A 5 ms delay line without a rate, with `fault`.
    fn delay_line(fault: Option<Fault>) -> Wired<Pkt> {
        Wired::new(
            None,
            Dur::from_millis(5),
            &fifo(10),
            fault,
            RateSchedule::default(),
            Dur::ZERO,
            Rng::new(1),
        )
    }

    #[test]
    fn only_a_wire_that_only_delays_and_delivers_early_passes_through() {
        let with = |rate: Option<Rate>, delay: u64, fault: Option<Fault>, early: bool| {
            let mut w: Wired<Pkt> = Wired::new(
                rate,
                Dur::from_millis(delay),
                &fifo(10),
                fault,
                RateSchedule::default(),
                Dur::ZERO,
                Rng::new(1),
            );
            if early {
                assert!(w.deliver_early());
            }
            w.pass_through()
        };
        assert_eq!(with(None, 5, None, true), Some(Dur::from_millis(5)));
        // It holds its packets until they arrive, has a serialiser, a fault, or no delay.
        assert_eq!(with(None, 5, None, false), None);
        assert_eq!(with(Some(Rate::mbps(10)), 5, None, true), None);
        let bleach = Fault {
            kind: FaultKind::Bleach,
            start: Dur::ZERO,
        };
        assert_eq!(with(None, 5, Some(bleach), true), None);
        assert_eq!(with(None, 0, None, true), None);
    }

    #[test]
    fn a_wire_that_only_delays_keeps_its_line_as_delay_line_says() {
        let ms = Time::from_millis;
        let mut line = delay_line(None);
        assert_eq!(line.delay_line(), Some(Dur::from_millis(5)));
        // Every call's actions, as (wake-up time or delivery time, packet delivered).
        let mut seen = Seen::default();
        let mut call = |now: u64, f: &mut dyn FnMut(&mut Wired<Pkt>, &mut Io<'_, Pkt>)| {
            let mut actions = Vec::new();
            f(&mut line, &mut Io::new(ms(now), &mut actions, &mut seen));
            actions
                .into_iter()
                .map(|a| match a {
                    Action::Wake { timer, at } => {
                        assert_eq!(timer, crate::DELAY_LINE_ARRIVE);
                        (at.as_nanos() / 1_000_000, None)
                    }
                    Action::Deliver { port, pkt, due } => {
                        assert_eq!(port, 1);
                        (due.as_nanos() / 1_000_000, Some(pkt.id))
                    }
                })
                .collect::<Vec<_>>()
        };
        // Given at 0 ms, due at 4: at port 1 at 9, the first, so a wake-up.
        assert_eq!(
            call(0, &mut |w, io| w.send_at(0, 1, pkt(0, 100), ms(4), io)),
            [(9, None)]
        );
        // Given at 1 ms, due at 2: at 7, the new first.
        assert_eq!(
            call(1, &mut |w, io| w.send_at(0, 1, pkt(1, 100), ms(2), io)),
            [(7, None)]
        );
        // Sent at 1 ms: at 6, the new first.
        assert_eq!(call(1, &mut |w, io| w.send(0, 1, pkt(2, 100), io)), [(6, None)]);
        // Given at 1 ms, due at 0 (past): it comes now, at 6 too, behind the one due no
        // later. Then one at 13, behind everything.
        assert_eq!(call(1, &mut |w, io| w.send_at(0, 1, pkt(3, 100), ms(0), io)), []);
        assert_eq!(call(1, &mut |w, io| w.send_at(0, 1, pkt(4, 100), ms(8), io)), []);
        // At each wake-up the first due leaves, after the next one's wake-up is asked for.
        let arrive = |w: &mut Wired<Pkt>, io: &mut Io<'_, Pkt>| w.handle_timeout(crate::DELAY_LINE_ARRIVE, io.now, io);
        assert_eq!(call(6, &mut |w, io| arrive(w, io)), [(6, None), (6, Some(2))]);
        assert_eq!(call(6, &mut |w, io| arrive(w, io)), [(7, None), (6, Some(3))]);
        assert_eq!(call(7, &mut |w, io| arrive(w, io)), [(9, None), (7, Some(1))]);
        // A wake-up that finds nothing due does nothing.
        assert_eq!(call(7, &mut |w, io| arrive(w, io)), []);
        assert_eq!(call(9, &mut |w, io| arrive(w, io)), [(13, None), (9, Some(0))]);
        assert_eq!(call(13, &mut |w, io| arrive(w, io)), [(13, Some(4))]);
        // Not a wire that delivers early, has a serialiser, a fault, or no delay.
        let mut early = delay_line(None);
        assert!(early.deliver_early());
        assert_eq!(early.delay_line(), None);
        let bleach = Fault {
            kind: FaultKind::Bleach,
            start: Dur::from_secs(10),
        };
        assert_eq!(delay_line(Some(bleach)).delay_line(), None);
        let wire = |rate: Option<Rate>, delay: u64| {
            let w: Wired<Pkt> = Wired::new(
                rate,
                Dur::from_millis(delay),
                &fifo(10),
                None,
                RateSchedule::default(),
                Dur::ZERO,
                Rng::new(1),
            );
            w.delay_line()
        };
        assert_eq!(wire(Some(Rate::mbps(10)), 5), None);
        assert_eq!(wire(None, 0), None);
        assert_eq!(wire(None, 5), Some(Dur::from_millis(5)));
    }

    /// 1000-byte packets from port 0 to 1, as (given, due, id) in milliseconds, for
    /// [`drive_early`].
    fn early_offers(offers: &[(u64, u64, u64)]) -> Vec<(Time, Time, Port, Port, Pkt)> {
        offers
            .iter()
            .map(|&(given, due, id)| (Time::from_millis(given), Time::from_millis(due), 0, 1, pkt(id, 1000)))
            .collect()
    }

    #[test]
    fn a_delay_line_takes_packets_early_from_several_senders_and_keeps_their_arrival_order() {
        // A 5 ms line with no rate, whose ECN fault starts at 10 ms. Two senders hand on
        // packets before they come: at 0 ms those due at 4, 8 and 12 ms, then at 1 ms
        // those due at 2, 9 and 12 ms (a tie with the first sender's last).
        let mut line = delay_line(Some(Fault {
            kind: FaultKind::Bleach,
            start: Dur::from_millis(10),
        }));
        assert!(line.accepts_early());
        let offers = early_offers(&[(0, 4, 0), (0, 8, 1), (0, 12, 2), (1, 2, 3), (1, 9, 4), (1, 12, 5)]);
        let mut seen = Seen::default();
        let (out, wakeups) = drive_early(&mut line, offers, Time::from_secs(1), &mut seen);
        let got: Vec<_> = out
            .iter()
            .map(|(t, _, p)| (t.as_nanos() / 1_000_000, p.id, p.ecn))
            .collect();
        // Each 5 ms after it came, in the order they come (a tie in the order given);
        // bleached from 10 ms on, by when it came, not when it was given.
        assert_eq!(
            got,
            [
                (7, 3, Ecn::Ect1),
                (9, 0, Ecn::Ect1),
                (13, 1, Ecn::Ect1),
                (14, 4, Ecn::Ect1),
                (17, 2, Ecn::NotEct),
                (17, 5, Ecn::NotEct),
            ]
        );
        // One wake-up per packet, and one that finds nothing due: the first head's, at
        // 9 ms, asked for before the packet due at 7 ms came in ahead of it.
        assert_eq!(wakeups, 7);
    }

    #[test]
    fn a_delay_line_keeps_arrival_order_between_packets_given_early_and_packets_that_come_now() {
        // A 5 ms line: one sender hands on at 0 a packet that comes at 10 ms; another's
        // packet comes at 8 ms without notice. The later one given arrives first.
        let mut line = delay_line(None);
        let mut seen = Seen::default();
        let (out, _) = drive_early(
            &mut line,
            early_offers(&[(0, 10, 0), (8, 8, 1)]),
            Time::from_secs(1),
            &mut seen,
        );
        let got: Vec<_> = out.iter().map(|(t, _, p)| (t.as_nanos() / 1_000_000, p.id)).collect();
        assert_eq!(got, [(13, 1), (15, 0)]);
    }

    #[test]
    fn a_link_that_delivers_early_hands_on_each_packet_as_its_serialisation_starts() {
        // 12 Mbit/s, 5 ms: three 1500-byte packets at 0 leave at 6, 7 and 8 ms.
        let mut w = wire(Dur::from_millis(5), 100);
        assert!(w.deliver_early());
        let mut actions = Vec::new();
        let mut seen = Seen::default();
        for i in 0..3 {
            w.send(0, 1, pkt(i, 1500), &mut Io::new(Time::ZERO, &mut actions, &mut seen));
        }
        let due: Vec<_> = actions
            .iter()
            .filter_map(|a| match a {
                Action::Deliver { pkt, due, .. } => Some((pkt.id, due.as_nanos() / 1_000_000)),
                _ => None,
            })
            .collect();
        assert_eq!(due, [(0, 6)]);
        // The second starts at the wake-up that ends the first, and goes on at once.
        assert!(matches!(actions[..], [_, Action::Wake { timer: TX_DONE, at }] if at == Time::from_millis(1)));
        actions.clear();
        let t1 = Time::from_millis(1);
        w.handle_timeout(TX_DONE, t1, &mut Io::new(t1, &mut actions, &mut seen));
        assert!(
            matches!(&actions[..], [Action::Deliver { pkt, due, .. }, Action::Wake { timer: TX_DONE, .. }] if pkt.id == 1 && *due == Time::from_millis(7))
        );
        // A rate-less delay line hands on at once too.
        let mut line: Wired<Pkt> = Wired::new(
            None,
            Dur::from_millis(5),
            &fifo(10),
            None,
            RateSchedule::default(),
            Dur::ZERO,
            Rng::new(1),
        );
        assert!(line.accepts_early());
        line.deliver_early();
        actions.clear();
        line.send(0, 1, pkt(9, 100), &mut Io::new(t1, &mut actions, &mut seen));
        assert!(matches!(&actions[..], [Action::Deliver { due, .. }] if *due == Time::from_millis(6)));
    }
}
