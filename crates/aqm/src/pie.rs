//! PIE (RFC 8033), following Linux `net/sched/sch_pie.c` + `pie.h` with its defaults:
//! target 15 ms, tupdate 15 ms, alpha 0.125 Hz, beta 1.25 Hz, max_burst 150 ms, limit 1000
//! packets, ECN off, byte mode off, **`dq_rate_estimator` off**: the queue delay is the
//! sojourn of the last dequeued packet (its enqueue timestamp, RFC 8033 §5.2 "timestamp"
//! alternative; 0 when the queue went empty), and the burst allowance is consumed by the time
//! between dequeues (Linux), not per update as in the RFC 8033 §4.2 pseudo-code.
//!
//! * Enqueue (RFC 8033 §4.1, §5.1): tail drop at `limit`; otherwise the random early drop test
//!   (no drop while burst allowance remains; none when `qdelay < target/2` and `p < 20 %`;
//!   none with fewer than 2 MTU queued; RFC 8033 §4.4 de-randomisation via `accu_prob`
//!   between 0.85 and 8.5). If it fires and ECN is on and `p ≤ 10 %`, an ECN-capable packet is
//!   CE-marked instead of dropped (RFC 8033 §5.1 `mark_ecnth`).
//! * Update every `tupdate` (RFC 8033 §4.2, §5.3): `p += alpha·(qdelay − target) +
//!   beta·(qdelay − qdelay_old)`, with the gains divided by 2 below 10 % and by a further 4 per
//!   decade below 1 % (RFC 8033 §4.2 auto-tuning), at most +2 % per update above 10 %, +2 % when
//!   qdelay > 250 ms, ×(1 − 1/64) decay after two empty updates (RFC 8033 §4.2), and
//!   re-arming of the burst allowance once the queue has been quiet (RFC 8033 §4.3).
//!
//! Probabilities use Linux's fixed point (`2^56 − 1` = 1.0).

use l4s_core::{Dur, QueuePacket, Rng, Time};

use crate::config::PieConfig;
use crate::qdisc::{Dequeued, Dropped, Enqueued, Qdisc, QueueId, QueueStats};
use crate::single::{dequeued, queued, TimestampedQueue};

/// Linux `MAX_PROB` for PIE (`U64_MAX >> 8`).
pub const PIE_MAX_PROB: u64 = u64::MAX >> 8;

/// PIE.
pub struct Pie<P> {
    /// Tagged with whether PIE marked the packet at enqueue.
    q: TimestampedQueue<P, bool>,
    rng: Rng,
    target: Dur,
    tupdate: Dur,
    max_burst: Dur,
    limit: usize,
    ecn: bool,
    bytemode: bool,
    mtu: u64,
    /// Gains per ns in `PIE_MAX_PROB` units.
    alpha: u64,
    beta: u64,
    prob: u64,
    accu_prob: u64,
    burst_time: Dur,
    qdelay: Dur,
    qdelay_old: Dur,
    dq_tstamp: Option<Time>,
    next_timer: Time,
}

impl<P: QueuePacket> Pie<P> {
    pub fn new(cfg: &PieConfig, rng: Rng) -> Self {
        let per_ns = (PIE_MAX_PROB / 1_000_000_000) as f64;
        let gain = |g: f64| {
            if g.is_finite() && g > 0.0 {
                (g.min(32.0) * per_ns) as u64
            } else {
                0
            }
        };
        let tupdate = if cfg.tupdate.is_zero() { Dur(1) } else { cfg.tupdate };
        Pie {
            q: TimestampedQueue::new(),
            rng,
            target: cfg.target,
            tupdate,
            max_burst: cfg.max_burst,
            limit: cfg.limit.max(1) as usize,
            ecn: cfg.ecn,
            bytemode: cfg.bytemode,
            mtu: cfg.mtu.max(1) as u64,
            alpha: gain(cfg.alpha),
            beta: gain(cfg.beta),
            prob: 0,
            accu_prob: 0,
            burst_time: cfg.max_burst,
            qdelay: Dur::ZERO,
            qdelay_old: Dur::ZERO,
            dq_tstamp: None,
            next_timer: Time::ZERO + tupdate,
        }
    }

    /// Test hook: force the drop probability (fraction).
    pub fn set_prob(&mut self, p: f64) {
        self.prob = (p.clamp(0.0, 1.0) * PIE_MAX_PROB as f64) as u64;
    }
    /// Remaining burst allowance.
    pub fn burst_allowance(&self) -> Dur {
        self.burst_time
    }
    /// Test hook: set the remaining burst allowance.
    pub fn set_burst_allowance(&mut self, d: Dur) {
        self.burst_time = d;
    }
    /// The queue delay estimate the controller uses.
    pub fn qdelay(&self) -> Dur {
        self.qdelay
    }

    /// Linux `pie_drop_early`.
    fn drop_early(&mut self, packet_size: u64) -> bool {
        if !self.burst_time.is_zero() {
            return false;
        }
        if self.qdelay < self.target / 2 && self.prob < PIE_MAX_PROB / 5 {
            return false;
        }
        if self.q.bytes() < 2 * self.mtu {
            return false;
        }
        let local_prob = if self.bytemode && packet_size <= self.mtu {
            packet_size * (self.prob / self.mtu)
        } else {
            self.prob
        };
        if local_prob == 0 {
            self.accu_prob = 0;
        } else {
            self.accu_prob = self.accu_prob.saturating_add(local_prob);
        }
        if self.accu_prob < (PIE_MAX_PROB / 100) * 85 {
            return false;
        }
        if self.accu_prob >= (PIE_MAX_PROB / 2) * 17 {
            return true;
        }
        if (self.rng.next_u64() >> 8) < local_prob {
            self.accu_prob = 0;
            return true;
        }
        false
    }

    fn vars_init(&mut self) {
        self.burst_time = self.max_burst;
        self.dq_tstamp = None;
        self.accu_prob = 0;
    }
}

impl<P: QueuePacket> Qdisc<P> for Pie<P> {
    fn kind(&self) -> &'static str {
        "pie"
    }
    fn queue_ids(&self) -> &'static [QueueId] {
        &[QueueId::Single]
    }
    fn enqueue(&mut self, mut pkt: P, now: Time) -> Enqueued<P> {
        let len = pkt.wire_len() as u64;
        if self.q.len() >= self.limit {
            return self.q.reject(pkt);
        }
        let mut marked = false;
        if self.drop_early(len) {
            let was_ce = pkt.ecn() == l4s_core::Ecn::Ce;
            if self.ecn && self.prob <= PIE_MAX_PROB / 10 && pkt.set_ce() {
                marked = !was_ce;
            } else {
                return Enqueued::Dropped(self.q.stats.congestion_drop(pkt, Dur::ZERO));
            }
        }
        if marked {
            self.q.stats.marks += 1;
        }
        self.q.push(pkt, len, now, marked);
        queued(marked)
    }
    /// Linux `pie_process_dequeue` in timestamp mode.
    fn dequeue(&mut self, now: Time, _drops: &mut Vec<Dropped<P>>) -> Option<Dequeued<P>> {
        let (pkt, ts, marked) = self.q.pop_send()?;
        let sojourn = now - ts;
        self.qdelay = if self.q.bytes() == 0 { Dur::ZERO } else { sojourn };
        let dtime = self.dq_tstamp.map(|t| now - t).unwrap_or(Dur::ZERO);
        self.dq_tstamp = Some(now);
        if !dtime.is_zero() {
            self.burst_time = self.burst_time.saturating_sub(dtime);
        }
        Some(dequeued(pkt, sojourn, marked))
    }
    fn next_timeout(&self) -> Option<Time> {
        Some(self.next_timer)
    }
    /// Linux `pie_calculate_probability` (RFC 8033 §4.2).
    fn on_timeout(&mut self, now: Time) {
        const MAX: u64 = PIE_MAX_PROB;
        let qdelay = self.qdelay;
        let qdelay_old = self.qdelay_old;
        let mut update_prob = !(qdelay.is_zero() && self.q.bytes() != 0);
        let (mut a, mut b) = (self.alpha, self.beta);
        if self.prob < MAX / 10 {
            a >>= 1;
            b >>= 1;
            let mut power = 100u64;
            while self.prob < MAX / power && power <= 1_000_000 {
                a >>= 2;
                b >>= 2;
                power *= 10;
            }
        }
        let mut delta: i128 = a as i128 * (qdelay.as_nanos() as i128 - self.target.as_nanos() as i128)
            + b as i128 * (qdelay.as_nanos() as i128 - qdelay_old.as_nanos() as i128);
        if delta > (MAX / 50) as i128 && self.prob >= MAX / 10 {
            delta = ((MAX / 100) * 2) as i128;
        }
        if qdelay > Dur::from_millis(250) {
            delta += (MAX / 50) as i128;
        }
        let newp = self.prob as i128 + delta;
        self.prob = if newp > MAX as i128 {
            update_prob = false;
            MAX
        } else if newp < 0 {
            0
        } else {
            newp as u64
        };
        if qdelay.is_zero() && qdelay_old.is_zero() && update_prob {
            self.prob -= self.prob / 64;
        }
        if qdelay < self.target / 2 && qdelay_old < self.target / 2 && self.prob == 0 {
            self.vars_init();
        }
        self.qdelay_old = qdelay;
        self.next_timer = now + self.tupdate;
    }
    fn len_packets(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.q.bytes()
    }
    fn stats(&self) -> Vec<(QueueId, QueueStats)> {
        vec![(QueueId::Single, self.q.stats)]
    }
    fn probability(&self) -> Option<f64> {
        Some(self.prob as f64 / PIE_MAX_PROB as f64)
    }
}
