//! FQ-CoDel (RFC 8290, Linux `sch_fq_codel` defaults).
//!
//! * Packets are hashed to one of `flows` (1024) queues by [`QueuePacket::flow_hash`]
//!   (Linux `reciprocal_scale(hash, flows)`; RFC 8290 §4.1.1).
//! * Deficit round robin with a *new* and an *old* list (RFC 8290 §4.2): a queue that becomes
//!   active joins the new list with `deficit = quantum`; a queue whose deficit is exhausted gets
//!   `quantum` more and moves to the tail of the old list; a new queue that empties moves to the
//!   old list if that is non-empty (anti-starvation, RFC 8290 §4.2), otherwise leaves.
//! * Each queue runs its own CoDel ([`crate::codel`]); the "at most one MTU queued" guard uses
//!   the total backlog, like Linux.
//! * Overflow (`limit` packets or `memory_limit` bytes of `mem_size`): Linux `fq_codel_drop`
//!   drops from the head of the fattest queue (by bytes) until half its backlog or 64 packets
//!   are gone (RFC 8290 §4.1.1 says "drop from the fattest queue"). Those drops are reported
//!   through [`Qdisc::drain_enqueue_drops`] (or flushed into the next dequeue's `drops`); if the
//!   arriving packet itself was among them (its own queue was the fattest), `enqueue` returns it
//!   as dropped.
//! * ECN is on by default (Linux), `ce_threshold` optional. Reported as one queue
//!   ([`QueueId::Single`]).

use std::collections::VecDeque;

use l4s_core::{QueuePacket, Time};

use crate::codel::{pop, push, CodelEntry, CodelParams, CodelVars, Totals};
use crate::config::FqCodelConfig;
use crate::qdisc::{Dequeued, Dropped, Enqueued, Qdisc, QueueId, QueueStats};
use crate::single::{dequeued, queued};

const DROP_BATCH: usize = 64;

#[derive(Clone, Copy, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

struct Flow<P> {
    q: VecDeque<CodelEntry<P>>,
    bytes: u64,
    deficit: i64,
    vars: CodelVars,
    list: List,
}

/// FQ-CoDel.
pub struct FqCodel<P> {
    flows: Vec<Flow<P>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    params: CodelParams,
    quantum: i64,
    limit: usize,
    memory_limit: u64,
    tot: Totals,
    stats: QueueStats,
    pending_drops: Vec<Dropped<P>>,
}

impl<P: QueuePacket> FqCodel<P> {
    pub fn new(cfg: &FqCodelConfig) -> Self {
        let n = cfg.flows.clamp(1, 65_536) as usize;
        FqCodel {
            flows: (0..n)
                .map(|_| Flow {
                    q: VecDeque::new(),
                    bytes: 0,
                    deficit: 0,
                    vars: CodelVars::default(),
                    list: List::None,
                })
                .collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            params: CodelParams {
                target: cfg.target,
                interval: cfg.interval,
                mtu: cfg.mtu as u64,
                ecn: cfg.ecn,
                ce_threshold: cfg.ce_threshold,
            },
            quantum: cfg.quantum.max(1) as i64,
            limit: cfg.limit.max(1) as usize,
            memory_limit: cfg.memory_limit.max(1),
            tot: Totals::default(),
            stats: QueueStats::default(),
            pending_drops: Vec::new(),
        }
    }

    /// The flow queue a hash maps to (Linux `reciprocal_scale`).
    pub fn flow_index(&self, hash: u32) -> usize {
        ((hash as u64 * self.flows.len() as u64) >> 32) as usize
    }

    /// Packets queued in flow queue `idx`.
    pub fn flow_len(&self, idx: usize) -> usize {
        self.flows.get(idx).map(|f| f.q.len()).unwrap_or(0)
    }

    /// Linux `fq_codel_drop`: drop from the head of the fattest flow. Returns the flow index.
    fn drop_fattest(&mut self) -> usize {
        let mut fat = 0;
        let mut max = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if f.bytes > max {
                max = f.bytes;
                fat = i;
            }
        }
        let threshold = max / 2;
        let mut dropped_len = 0u64;
        let mut n = 0;
        let flow = &mut self.flows[fat];
        while let Some(e) = pop(&mut flow.q, &mut self.tot, &mut self.stats) {
            let len = e.pkt.wire_len() as u64;
            flow.bytes -= len;
            self.pending_drops.push(self.stats.overlimit_drop(e.pkt));
            dropped_len += len;
            n += 1;
            if n >= DROP_BATCH || dropped_len >= threshold {
                break;
            }
        }
        fat
    }
}

impl<P: QueuePacket> Qdisc<P> for FqCodel<P> {
    fn kind(&self) -> &'static str {
        "fq-codel"
    }
    fn queue_ids(&self) -> &'static [QueueId] {
        &[QueueId::Single]
    }
    fn enqueue(&mut self, pkt: P, now: Time) -> Enqueued<P> {
        let idx = self.flow_index(pkt.flow_hash());
        let flow = &mut self.flows[idx];
        let len = push(&mut flow.q, &mut self.tot, &mut self.stats, pkt, now);
        flow.bytes += len;
        if flow.list == List::None {
            flow.list = List::New;
            flow.deficit = self.quantum;
            self.new_flows.push_back(idx as u32);
        }
        if self.tot.packets <= self.limit && self.tot.mem <= self.memory_limit {
            return queued(false);
        }
        // Overflow. Drops come from the head of the fattest queue; the packet just appended
        // (at the tail of its own queue) was dropped only if that whole queue went, and then it
        // is the last pending drop.
        let fat = self.drop_fattest();
        if fat == idx && self.flows[idx].q.is_empty() {
            if let Some(d) = self.pending_drops.pop() {
                self.stats.enqueued_packets -= 1;
                self.stats.enqueued_bytes -= len;
                return Enqueued::Dropped(d);
            }
        }
        queued(false)
    }

    fn drain_enqueue_drops(&mut self, out: &mut Vec<Dropped<P>>) {
        out.append(&mut self.pending_drops);
    }

    /// RFC 8290 §4.2 (Linux `fq_codel_dequeue`).
    fn dequeue(&mut self, now: Time, drops: &mut Vec<Dropped<P>>) -> Option<Dequeued<P>> {
        if !self.pending_drops.is_empty() {
            drops.append(&mut self.pending_drops);
        }
        loop {
            let (idx, from_new) = if let Some(&i) = self.new_flows.front() {
                (i as usize, true)
            } else if let Some(&i) = self.old_flows.front() {
                (i as usize, false)
            } else {
                return None;
            };
            let flow = &mut self.flows[idx];
            if flow.deficit <= 0 {
                flow.deficit += self.quantum;
                flow.list = List::Old;
                if from_new {
                    self.new_flows.pop_front();
                } else {
                    self.old_flows.pop_front();
                }
                self.old_flows.push_back(idx as u32);
                continue;
            }
            let bytes_before = self.tot.bytes;
            let r = flow
                .vars
                .dequeue(&self.params, &mut flow.q, &mut self.tot, now, drops, &mut self.stats);
            flow.bytes -= bytes_before - self.tot.bytes;
            match r {
                None => {
                    if from_new {
                        self.new_flows.pop_front();
                    } else {
                        self.old_flows.pop_front();
                    }
                    if from_new && !self.old_flows.is_empty() {
                        flow.list = List::Old;
                        self.old_flows.push_back(idx as u32);
                    } else {
                        flow.list = List::None;
                    }
                    continue;
                }
                Some((e, marked)) => {
                    flow.deficit -= e.pkt.wire_len() as i64;
                    return Some(dequeued(e.pkt, now - e.ts, marked));
                }
            }
        }
    }
    fn next_timeout(&self) -> Option<Time> {
        None
    }
    fn on_timeout(&mut self, _now: Time) {}
    fn len_packets(&self) -> usize {
        self.tot.packets
    }
    fn len_bytes(&self) -> u64 {
        self.tot.bytes
    }
    fn stats(&self) -> Vec<(QueueId, QueueStats)> {
        vec![(QueueId::Single, self.stats)]
    }
}
