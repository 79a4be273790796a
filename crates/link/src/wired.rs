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

use crate::stage::{apply_fault, DelayLine, Queue};
use crate::{Departure, Fault, Io, Link, LinkPacket, LinkStats, Port, QueueInfo, RateSchedule, Timer};
use l4s_aqm::{AqmConfig, QueueId, QueueStats};
use l4s_core::{Dur, Rate, Rng, Time};

/// A packet finished its serialisation.
pub const TX_DONE: Timer = 0;
/// The head of the delay line reaches port 1.
pub const ARRIVE: Timer = 1;
/// The queue discipline's timer (PI probability update).
pub const QDISC: Timer = 2;
/// The next change of the rate schedule.
pub const RATE: Timer = 3;

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
        }
    }

    /// Start serialising the next packet if the queue has one.
    fn start_tx(&mut self, io: &mut Io<'_, P>) {
        let now = io.now;
        if let Some(d) = self.queue.qdisc.dequeue(now, &mut self.queue.drops) {
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
            if self.delay.is_zero() {
                // The packet being serialised waits on the line (empty otherwise, as the
                // link has no delay) for the wake-up that ends it.
                self.line.hold(d.pkt, self.free_at);
                self.wake_tx(io);
            } else {
                self.line.push(d.pkt, self.free_at + self.delay, io, ARRIVE);
                self.wake_tx(io);
            }
        }
        self.queue.flush_drops(io);
        self.queue.arm(io, QDISC);
    }

    /// Without a delay, the packet on the line is the one being serialised.
    fn serialising(&self) -> bool {
        self.delay.is_zero() && !self.line.is_empty()
    }

    /// Ask to be woken when the link is free if a packet is waiting for it, or (without a
    /// delay) to hand on the one being serialised.
    fn wake_tx(&mut self, io: &mut Io<'_, P>) {
        if !self.tx_wake && (self.serialising() || self.queue.qdisc.len_packets() > 0) {
            self.tx_wake = true;
            io.wake(TX_DONE, self.free_at);
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
        self.queue.arm(io, QDISC);
    }

    fn send(&mut self, _from: Port, _to: Port, mut pkt: P, io: &mut Io<'_, P>) {
        let now = io.now;
        apply_fault(self.fault, self.origin, now, &mut pkt);
        if self.rate.is_none() {
            if self.delay.is_zero() {
                io.deliver(1, pkt, now);
            } else {
                self.line.push(pkt, now + self.delay, io, ARRIVE);
            }
            return;
        }
        if self.queue.enqueue(pkt, io) {
            if !self.serialising() && self.free_at <= now {
                self.start_tx(io);
            } else {
                self.wake_tx(io);
            }
        }
        // Disciplines that push out other packets on arrival (FQ-CoDel overflow).
        self.queue.qdisc.drain_enqueue_drops(&mut self.queue.drops);
        self.queue.flush_drops(io);
        self.queue.arm(io, QDISC);
    }

    fn handle_timeout(&mut self, timer: Timer, at: Time, io: &mut Io<'_, P>) {
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
            _ => {}
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{drive, Pkt, Seen};
    use crate::{Action, FaultKind};
    use l4s_aqm::FifoConfig;
    use l4s_core::Ecn;

    fn pkt(id: u64, size: u32) -> Pkt {
        Pkt {
            id,
            size,
            ecn: Ecn::Ect1,
        }
    }

    fn fifo(limit: u32) -> AqmConfig {
        AqmConfig::Fifo(FifoConfig {
            limit,
            ..Default::default()
        })
    }

    /// 12 Mbit/s (1500 B in 1 ms) with `delay`, a FIFO of `limit` packets, no fault, no
    /// schedule, 2 ms of catch-up.
    fn wire(delay: Dur, limit: u32) -> Wired<Pkt> {
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
