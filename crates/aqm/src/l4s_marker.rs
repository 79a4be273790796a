//! An L4S marker on one FIFO (kind `"l4s-marker"`): the marking a radio access network
//! applies in its RLC buffer, where the queue is one per bearer and the base station
//! knows the radio state (Brunello et al., "Low Latency Low Loss Scalable Throughput in 5G
//! Networks", IEEE VTC2021-Spring), and what Linux's `fq_codel` does per flow with
//! `ce_threshold_ect1`.
//!
//! * One FIFO, with the limits of a `fifo` (packets, bytes, and the head's sojourn).
//! * At dequeue, an L4S packet (ECT(1), or CE: RFC 9331 §5.1 classifies CE as L4S) is
//!   marked CE when its sojourn is above `threshold` (`marking = "step"`), or with a
//!   probability rising linearly from 0 at `min_th` to 1 at `min_th + range`
//!   (`marking = "ramp"`, the shape of RFC 9332 Appendix A's native L4S AQM).
//! * Every other packet is only ever dropped at the buffer's limit: a classic flow sees a
//!   drop-tail queue, as behind a RAN buffer without AQM.
//!
//! A marking threshold has no standard value in a RAN, so the scenario gives it.

use l4s_core::{Dur, Ecn, QueuePacket, Rng, Time};

use crate::config::{L4sMarkerConfig, Marking};
use crate::qdisc::{Dequeued, Dropped, Enqueued, Qdisc, QueueId, QueueStats};
use crate::single::{dequeued, queued, FifoLimits, TimestampedQueue};

/// Single-FIFO L4S marker.
pub struct L4sMarker<P> {
    q: TimestampedQueue<P>,
    rng: Rng,
    limits: FifoLimits,
    marking: Marking,
    /// Step: the threshold; ramp: where the ramp starts, and its width.
    from: Dur,
    range: Dur,
}

impl<P: QueuePacket> L4sMarker<P> {
    pub fn new(cfg: &L4sMarkerConfig, rng: Rng) -> Self {
        let (from, range) = match cfg.marking {
            Marking::Step => (cfg.threshold.unwrap_or(Dur::from_millis(5)), Dur::ZERO),
            Marking::Ramp => (
                cfg.min_th.unwrap_or(Dur::from_millis(2)),
                cfg.range.unwrap_or(Dur::from_millis(3)),
            ),
        };
        L4sMarker {
            q: TimestampedQueue::new(),
            rng,
            limits: FifoLimits::new(cfg.limit, cfg.limit_bytes, cfg.limit_time),
            marking: cfg.marking,
            from,
            range,
        }
    }

    /// The marking probability of an L4S packet that waited `sojourn`.
    fn mark_probability(&self, sojourn: Dur) -> f64 {
        match self.marking {
            Marking::Step => f64::from(u8::from(sojourn > self.from)),
            Marking::Ramp if sojourn <= self.from => 0.0,
            Marking::Ramp if self.range.is_zero() => 1.0,
            Marking::Ramp => ((sojourn - self.from).as_secs_f64() / self.range.as_secs_f64()).min(1.0),
        }
    }
}

impl<P: QueuePacket> Qdisc<P> for L4sMarker<P> {
    fn kind(&self) -> &'static str {
        "l4s-marker"
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
        let (mut pkt, ts, ()) = self.q.pop_send()?;
        let sojourn = now - ts;
        let mut marked = false;
        if pkt.ecn() == Ecn::Ect1 {
            let p = self.mark_probability(sojourn);
            // A ramp draws; a step (0 or 1) does not use the generator.
            if p >= 1.0 || (p > 0.0 && self.rng.next_f64() < p) {
                marked = pkt.set_ce();
            }
        }
        if marked {
            self.q.stats.marks += 1;
        }
        Some(dequeued(pkt, sojourn, marked))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct P(Ecn);
    impl QueuePacket for P {
        fn wire_len(&self) -> u32 {
            1514
        }
        fn ecn(&self) -> Ecn {
            self.0
        }
        fn set_ce(&mut self) -> bool {
            if self.0.is_ect() {
                self.0 = Ecn::Ce;
                true
            } else {
                false
            }
        }
        fn flow_hash(&self) -> u32 {
            0
        }
    }

    fn ms(x: u64) -> Time {
        Time::from_millis(x)
    }

    /// Enqueue one packet at 0 and dequeue it after `wait` ms: whether it was marked.
    fn marked(q: &mut L4sMarker<P>, ecn: Ecn, wait: u64) -> bool {
        let _ = q.enqueue(P(ecn), ms(0));
        q.dequeue(ms(wait), &mut Vec::new()).expect("queued").marked
    }

    #[test]
    fn a_step_marks_l4s_packets_above_the_threshold_and_nothing_else() {
        let cfg = L4sMarkerConfig {
            threshold: Some(Dur::from_millis(5)),
            ..Default::default()
        };
        let mut q = L4sMarker::new(&cfg, Rng::new(1));
        assert!(!marked(&mut q, Ecn::Ect1, 5));
        assert!(marked(&mut q, Ecn::Ect1, 6));
        // CE is L4S but already marked: not counted again.
        assert!(!marked(&mut q, Ecn::Ce, 50));
        for e in [Ecn::Ect0, Ecn::NotEct] {
            assert!(!marked(&mut q, e, 500), "{e:?}");
        }
        assert_eq!(q.stats()[0].1.marks, 1);
    }

    #[test]
    fn a_ramp_marks_in_proportion_between_its_ends() {
        let cfg = L4sMarkerConfig {
            marking: Marking::Ramp,
            min_th: Some(Dur::from_millis(2)),
            range: Some(Dur::from_millis(4)),
            ..Default::default()
        };
        let mut q = L4sMarker::new(&cfg, Rng::new(3));
        for (wait, want) in [(2u64, 0.0), (3, 0.25), (4, 0.5), (5, 0.75), (6, 1.0), (9, 1.0)] {
            let n = 20_000;
            let m = (0..n).filter(|_| marked(&mut q, Ecn::Ect1, wait)).count() as f64 / n as f64;
            assert!((m - want).abs() < 0.015, "{wait} ms: {m} against {want}");
        }
    }

    #[test]
    fn the_buffer_limits_drop_every_kind_alike() {
        let cfg = L4sMarkerConfig {
            limit: 2,
            threshold: Some(Dur::from_millis(1)),
            ..Default::default()
        };
        let mut q = L4sMarker::new(&cfg, Rng::new(1));
        for e in [Ecn::Ect1, Ecn::NotEct] {
            assert!(matches!(q.enqueue(P(e), ms(0)), Enqueued::Queued { .. }));
        }
        assert!(matches!(q.enqueue(P(Ecn::Ect1), ms(0)), Enqueued::Dropped(_)));
    }
}
