//! CoDel (RFC 8289), following the RFC 8289 §5 pseudo-code and Linux `include/net/codel_impl.h`.
//!
//! * A packet's sojourn below `target`, or at most one MTU left in the queue (RFC 8289 §5.4
//!   `maxpacket`; Linux uses the device MTU), resets `first_above_time`.
//! * Dropping starts once the sojourn has stayed at or above `target` for a whole `interval`
//!   (`now > first_above_time`, strict as in Linux).
//! * In the dropping state the next drop is due at `drop_next = prev + interval / sqrt(count)`
//!   (RFC 8289 §5.5 control law). This implementation uses `f64::sqrt`, as the RFC's
//!   pseudo-code does; Linux uses a Newton-iterated 16-bit reciprocal square root (a
//!   difference of < 0.1 %).
//! * Re-entering the dropping state soon (within 16 intervals) after leaving it resumes at
//!   `count = count − lastcount` (RFC 8289 §5.5).
//! * With ECN on, an ECN-capable packet is CE-marked instead of dropped (RFC 8289 §5.6; Linux
//!   marks and keeps the packet, the mark counts as the "drop" of the control law).
//! * Optional `ce_threshold` (Linux, used by FQ-CoDel): additionally mark ECT packets whose
//!   sojourn exceeds it.

use std::collections::VecDeque;

use l4s_core::{Dur, Ecn, QueuePacket, Time};

use crate::config::CodelConfig;
use crate::qdisc::{Dequeued, Dropped, Enqueued, Qdisc, QueueId, QueueStats};
use crate::single::{dequeued, queued};

pub(crate) struct CodelEntry<P> {
    pub pkt: P,
    pub ts: Time,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct CodelParams {
    pub target: Dur,
    pub interval: Dur,
    pub mtu: u64,
    pub ecn: bool,
    pub ce_threshold: Option<Dur>,
}

/// Totals of the whole discipline, updated when a packet leaves a (sub-)queue.
#[derive(Default, Debug)]
pub(crate) struct Totals {
    pub packets: usize,
    pub bytes: u64,
    pub mem: u64,
}

/// CoDel's per-queue state (RFC 8289 §5.3).
#[derive(Clone, Debug, Default)]
pub struct CodelVars {
    pub count: u32,
    pub lastcount: u32,
    pub dropping: bool,
    pub first_above_time: Option<Time>,
    pub drop_next: Time,
    /// Sojourn of the last packet examined.
    pub ldelay: Dur,
}

/// RFC 8289 control law: `t + interval / sqrt(count)`.
pub fn control_law(t: Time, interval: Dur, count: u32) -> Time {
    let c = count.max(1) as f64;
    t + Dur((interval.as_nanos() as f64 / c.sqrt()) as u64)
}

/// Append `pkt`, stamped `now`, to `q`, counting it in `tot` and `stats`; returns its wire
/// length. The inverse of [`pop`].
#[inline]
pub(crate) fn push<P: QueuePacket>(
    q: &mut VecDeque<CodelEntry<P>>,
    tot: &mut Totals,
    stats: &mut QueueStats,
    pkt: P,
    now: Time,
) -> u64 {
    let len = pkt.wire_len() as u64;
    tot.packets += 1;
    tot.bytes += len;
    tot.mem += pkt.mem_size() as u64;
    stats.on_enqueue(len);
    q.push_back(CodelEntry { pkt, ts: now });
    len
}

/// Remove the head of `q` from `tot` and from the backlog in `stats` (not counted as sent).
#[inline]
pub(crate) fn pop<P: QueuePacket>(
    q: &mut VecDeque<CodelEntry<P>>,
    tot: &mut Totals,
    stats: &mut QueueStats,
) -> Option<CodelEntry<P>> {
    let e = q.pop_front()?;
    let len = e.pkt.wire_len() as u64;
    tot.packets -= 1;
    tot.bytes -= len;
    tot.mem = tot.mem.saturating_sub(e.pkt.mem_size() as u64);
    stats.on_leave(len);
    Some(e)
}

/// Mark CE: (ok, newly).
#[inline]
fn mark<P: QueuePacket>(pkt: &mut P) -> (bool, bool) {
    let was = pkt.ecn() == Ecn::Ce;
    let ok = pkt.set_ce();
    (ok, ok && !was)
}

impl CodelVars {
    fn should_drop<P: QueuePacket>(
        &mut self,
        e: Option<&CodelEntry<P>>,
        p: &CodelParams,
        backlog: u64,
        now: Time,
    ) -> bool {
        let Some(e) = e else {
            self.first_above_time = None;
            return false;
        };
        self.ldelay = now - e.ts;
        if self.ldelay < p.target || backlog <= p.mtu {
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + p.interval);
                false
            }
            Some(t) => now > t,
        }
    }

    /// One CoDel dequeue from `q` (RFC 8289 §5.5, Linux `codel_dequeue`). Returns the packet
    /// to send and whether this call set CE on it.
    pub(crate) fn dequeue<P: QueuePacket>(
        &mut self,
        p: &CodelParams,
        q: &mut VecDeque<CodelEntry<P>>,
        tot: &mut Totals,
        now: Time,
        drops: &mut Vec<Dropped<P>>,
        stats: &mut QueueStats,
    ) -> Option<(CodelEntry<P>, bool)> {
        let Some(first) = pop(q, tot, stats) else {
            // RFC 8289 §5.4 `dodequeue`: an empty queue resets first_above_time.
            self.first_above_time = None;
            self.dropping = false;
            return None;
        };
        let mut cur = Some(first);
        let mut marked = false;
        let drop = self.should_drop(cur.as_ref(), p, tot.bytes, now);
        let drop_pkt = |e: CodelEntry<P>, stats: &mut QueueStats, drops: &mut Vec<Dropped<P>>| {
            drops.push(stats.congestion_drop(e.pkt, now - e.ts));
        };
        if self.dropping {
            if !drop {
                self.dropping = false;
            } else {
                while self.dropping && now >= self.drop_next {
                    let Some(mut e) = cur.take() else { break };
                    self.count = self.count.saturating_add(1);
                    if p.ecn {
                        let (ok, newly) = mark(&mut e.pkt);
                        if ok {
                            marked |= newly;
                            self.drop_next = control_law(self.drop_next, p.interval, self.count);
                            cur = Some(e);
                            break;
                        }
                    }
                    drop_pkt(e, stats, drops);
                    cur = pop(q, tot, stats);
                    if !self.should_drop(cur.as_ref(), p, tot.bytes, now) {
                        self.dropping = false;
                    } else {
                        self.drop_next = control_law(self.drop_next, p.interval, self.count);
                    }
                }
            }
        } else if drop {
            if let Some(mut e) = cur.take() {
                let (ok, newly) = if p.ecn { mark(&mut e.pkt) } else { (false, false) };
                if ok {
                    marked |= newly;
                    cur = Some(e);
                } else {
                    drop_pkt(e, stats, drops);
                    cur = pop(q, tot, stats);
                    self.should_drop(cur.as_ref(), p, tot.bytes, now);
                }
            }
            self.dropping = true;
            let delta = self.count.wrapping_sub(self.lastcount);
            if delta > 1 && delta < u32::MAX / 2 && now - self.drop_next < p.interval * 16 {
                self.count = delta;
            } else {
                self.count = 1;
            }
            self.lastcount = self.count;
            self.drop_next = control_law(now, p.interval, self.count);
        }
        let mut e = cur?;
        if let Some(th) = p.ce_threshold {
            if self.ldelay > th && e.pkt.ecn().is_ect() {
                let (_, newly) = mark(&mut e.pkt);
                marked |= newly;
            }
        }
        if marked {
            stats.marks += 1;
        }
        stats.on_send(e.pkt.wire_len() as u64);
        Some((e, marked))
    }
}

/// Single-queue CoDel.
pub struct Codel<P> {
    q: VecDeque<CodelEntry<P>>,
    params: CodelParams,
    vars: CodelVars,
    limit: usize,
    tot: Totals,
    stats: QueueStats,
}

impl<P: QueuePacket> Codel<P> {
    pub fn new(cfg: &CodelConfig) -> Self {
        Codel {
            q: VecDeque::new(),
            params: CodelParams {
                target: cfg.target,
                interval: cfg.interval,
                mtu: cfg.mtu as u64,
                ecn: cfg.ecn,
                ce_threshold: None,
            },
            vars: CodelVars::default(),
            limit: cfg.limit.max(1) as usize,
            tot: Totals::default(),
            stats: QueueStats::default(),
        }
    }
    /// The control state (for tests and monitoring).
    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }
}

impl<P: QueuePacket> Qdisc<P> for Codel<P> {
    fn kind(&self) -> &'static str {
        "codel"
    }
    fn queue_ids(&self) -> &'static [QueueId] {
        &[QueueId::Single]
    }
    fn enqueue(&mut self, pkt: P, now: Time) -> Enqueued<P> {
        if self.q.len() >= self.limit {
            return Enqueued::Dropped(self.stats.overlimit_drop(pkt));
        }
        push(&mut self.q, &mut self.tot, &mut self.stats, pkt, now);
        queued(false)
    }
    fn dequeue(&mut self, now: Time, drops: &mut Vec<Dropped<P>>) -> Option<Dequeued<P>> {
        let (e, marked) = self
            .vars
            .dequeue(&self.params, &mut self.q, &mut self.tot, now, drops, &mut self.stats)?;
        Some(dequeued(e.pkt, now - e.ts, marked))
    }
    fn next_timeout(&self) -> Option<Time> {
        None
    }
    fn on_timeout(&mut self, _now: Time) {}
    fn len_packets(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.tot.bytes
    }
    fn stats(&self) -> Vec<(QueueId, QueueStats)> {
        vec![(QueueId::Single, self.stats)]
    }
}
