//! A single-queue classic-ECN AQM (kind `"classic-ecn"`): the bottleneck RFC 9330 §4.3 and
//! RFC 9331 §C.1 warn about, where L4S and Classic traffic share one queue and ECT(1) is
//! treated exactly like ECT(0) (RFC 3168 semantics).
//!
//! * One FIFO, every packet in it (no classifier).
//! * A PI controller on the sojourn of the head packet, sampled every `tupdate`, with the
//!   RFC 9332 Appendix A float update `p' += alpha·(qdelay − target) + beta·(qdelay − prev)`
//!   clamped to [0, 1] (target 15 ms, tupdate 16 ms, 0.16 / 3.2 Hz as Linux DualPI2).
//! * At dequeue, a signal with probability p = p'² (the PI2 square law, RFC 9332 §2.5.1 and
//!   De Schepper et al. "PI2"): an ECT(0), ECT(1) or CE packet is marked CE, a Not-ECT packet
//!   (or every packet when `ecn = false`) is dropped. Above p = 25 % (p' > 0.5) ECN is disabled
//!   and ECT packets are dropped too (RFC 3168 §7 overload; the same threshold as
//!   DualPI2's Classic overload for k = 2).
//! * No signal while fewer than 2 MTU are queued (as Linux DualPI2 and PIE).

use l4s_core::{Dur, Ecn, QueuePacket, Rng, Time};

use crate::config::ClassicEcnConfig;
use crate::qdisc::{Dequeued, Dropped, Enqueued, Qdisc, QueueId, QueueStats};
use crate::single::{dequeued, queued, TimestampedQueue};

/// Single-queue classic-ECN PI² AQM.
pub struct ClassicEcn<P> {
    q: TimestampedQueue<P>,
    rng: Rng,
    target: Dur,
    tupdate: Dur,
    alpha: f64,
    beta: f64,
    limit: usize,
    ecn: bool,
    mtu: u64,
    p: f64,
    prev_qdelay: Dur,
    next_timer: Time,
}

impl<P: QueuePacket> ClassicEcn<P> {
    pub fn new(cfg: &ClassicEcnConfig, rng: Rng) -> Self {
        let g = |x: f64| if x.is_finite() && x > 0.0 { x } else { 0.0 };
        let tupdate = if cfg.tupdate.is_zero() { Dur(1) } else { cfg.tupdate };
        ClassicEcn {
            q: TimestampedQueue::new(),
            rng,
            target: cfg.target,
            tupdate,
            alpha: g(cfg.alpha),
            beta: g(cfg.beta),
            limit: cfg.limit.max(1) as usize,
            ecn: cfg.ecn,
            mtu: cfg.mtu.max(1) as u64,
            p: 0.0,
            prev_qdelay: Dur::ZERO,
            next_timer: Time::ZERO + tupdate,
        }
    }
    /// Test hook: force the base probability p' (the signal probability is p'²).
    pub fn set_base_prob(&mut self, p: f64) {
        self.p = if p.is_finite() { p.clamp(0.0, 1.0) } else { 0.0 };
    }
    /// The base probability p'.
    pub fn base_prob(&self) -> f64 {
        self.p
    }
}

impl<P: QueuePacket> Qdisc<P> for ClassicEcn<P> {
    fn kind(&self) -> &'static str {
        "classic-ecn"
    }
    fn queue_ids(&self) -> &'static [QueueId] {
        &[QueueId::Single]
    }
    fn enqueue(&mut self, pkt: P, now: Time) -> Enqueued<P> {
        if self.q.len() >= self.limit {
            return self.q.reject(pkt);
        }
        let len = pkt.wire_len() as u64;
        self.q.push(pkt, len, now, ());
        queued(false)
    }
    fn dequeue(&mut self, now: Time, drops: &mut Vec<Dropped<P>>) -> Option<Dequeued<P>> {
        loop {
            let (mut pkt, ts, ()) = self.q.pop()?;
            let len = pkt.wire_len() as u64;
            let sojourn = now - ts;
            let mut marked = false;
            if self.q.bytes() >= 2 * self.mtu && self.p > 0.0 {
                let pc = self.p * self.p;
                if self.rng.next_f64() < pc {
                    let was_ce = pkt.ecn() == Ecn::Ce;
                    if self.ecn && pc <= 0.25 && pkt.ecn().is_ect() && pkt.set_ce() {
                        marked = !was_ce;
                    } else {
                        drops.push(self.q.stats.congestion_drop(pkt, sojourn));
                        continue;
                    }
                }
            }
            self.q.stats.on_send(len);
            if marked {
                self.q.stats.marks += 1;
            }
            return Some(dequeued(pkt, sojourn, marked));
        }
    }
    fn next_timeout(&self) -> Option<Time> {
        Some(self.next_timer)
    }
    fn on_timeout(&mut self, now: Time) {
        let qdelay = self.q.head_time().map(|ts| now - ts).unwrap_or(Dur::ZERO);
        self.p = crate::dualpi2::pi2_update_rfc(
            self.p,
            qdelay.as_secs_f64(),
            self.prev_qdelay.as_secs_f64(),
            self.target.as_secs_f64(),
            self.alpha,
            self.beta,
        );
        self.prev_qdelay = qdelay;
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
    /// The signal probability p'² (what a flow experiences).
    fn probability(&self) -> Option<f64> {
        Some(self.p * self.p)
    }
}
