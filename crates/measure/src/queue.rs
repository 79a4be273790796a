//! Per-queue meters: the sojourn of every packet that leaves a queue (per sub-queue, such
//! as DualPI2's L and C), the link time the queue's packets used, and counters, within the
//! statistics window and since the last snapshot.

use crate::Window;
use l4s_aqm::{QueueId, QueueStats};
use l4s_core::{Dur, Time};
use l4s_metrics::LatencyHist;

/// Counters of one sub-queue over the window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubCounts {
    pub enqueued_packets: u64,
    pub dequeued_packets: u64,
    pub dequeued_bytes: u64,
    pub marks: u64,
    /// Drops of every reason, and of those the ones at the buffer limit.
    pub drops: u64,
    pub overlimit_drops: u64,
}

impl SubCounts {
    /// The counters between two readings of a queue's own statistics.
    pub fn between(base: Option<&QueueStats>, now: &QueueStats) -> SubCounts {
        let b = base.copied().unwrap_or_default();
        SubCounts {
            enqueued_packets: now.enqueued_packets - b.enqueued_packets.min(now.enqueued_packets),
            dequeued_packets: now.dequeued_packets.saturating_sub(b.dequeued_packets),
            dequeued_bytes: now.dequeued_bytes.saturating_sub(b.dequeued_bytes),
            marks: now.marks.saturating_sub(b.marks),
            drops: now.drops.saturating_sub(b.drops),
            overlimit_drops: now.overlimit_drops.saturating_sub(b.overlimit_drops),
        }
    }
}

/// Since the last snapshot (the whole run).
#[derive(Clone, Debug, Default)]
pub struct QueueInterval {
    /// Longest sojourn per sub-queue.
    pub max: Vec<Dur>,
    pub sum: Dur,
    pub dequeued: u64,
    pub busy: Dur,
    /// Marks and drops (backends that count them from events).
    pub marks: u64,
    pub drops: u64,
}

/// One queue's meters.
#[derive(Clone, Debug)]
pub struct QueueMeter {
    pub window: Window,
    /// Keep the per-interval figures of the time series.
    pub snapshots: bool,
    /// The sub-queues, in the queue discipline's order.
    pub subqueues: &'static [QueueId],
    /// Sojourn of the packets that left each sub-queue in the window.
    pub sojourn: Vec<LatencyHist>,
    /// Counters per sub-queue over the window.
    pub counts: Vec<SubCounts>,
    /// Link time used by the packets that left in the window.
    pub busy: Dur,
    /// Samples of the AQM's probability in the window.
    pub prob_sum: f64,
    pub prob_samples: u64,
    /// Packets that left the queue in the whole run.
    pub forwarded: u64,
    pub interval: QueueInterval,
}

impl QueueMeter {
    pub fn new(window: Window, subqueues: &'static [QueueId], snapshots: bool) -> QueueMeter {
        let n = subqueues.len();
        QueueMeter {
            window,
            snapshots,
            subqueues,
            sojourn: (0..n).map(|_| LatencyHist::new()).collect(),
            counts: vec![SubCounts::default(); n],
            busy: Dur::ZERO,
            prob_sum: 0.0,
            prob_samples: 0,
            forwarded: 0,
            interval: QueueInterval {
                max: vec![Dur::ZERO; n],
                ..Default::default()
            },
        }
    }

    /// Index of a sub-queue (the first for an unknown one).
    #[inline]
    pub fn index(&self, sub: QueueId) -> usize {
        self.subqueues.iter().position(|&q| q == sub).unwrap_or(0)
    }

    /// A packet of `bytes` left sub-queue `sub` at `t` after `sojourn`, using `busy` of link
    /// time; `marked` if the queue set CE on it.
    #[inline]
    pub fn on_dequeue(&mut self, t: Time, sub: QueueId, sojourn: Dur, busy: Dur, bytes: u32, marked: bool) {
        let i = self.index(sub);
        self.forwarded += 1;
        if self.snapshots {
            let iv = &mut self.interval;
            iv.max[i] = iv.max[i].max(sojourn);
            iv.sum += sojourn;
            iv.dequeued += 1;
            iv.busy += busy;
            iv.marks += marked as u64;
        }
        if self.window.contains(t) {
            self.sojourn[i].record(sojourn);
            self.busy += busy;
            let c = &mut self.counts[i];
            c.dequeued_packets += 1;
            c.dequeued_bytes += bytes as u64;
            c.marks += marked as u64;
        }
    }

    /// A packet entered sub-queue `sub` at `t`.
    #[inline]
    pub fn on_enqueue(&mut self, t: Time, sub: QueueId) {
        if self.window.contains(t) {
            let i = self.index(sub);
            self.counts[i].enqueued_packets += 1;
        }
    }

    /// A packet was dropped from sub-queue `sub` at `t` (`overlimit`: at the buffer limit).
    #[inline]
    pub fn on_drop(&mut self, t: Time, sub: QueueId, overlimit: bool) {
        self.interval.drops += 1;
        if self.window.contains(t) {
            let i = self.index(sub);
            self.counts[i].drops += 1;
            self.counts[i].overlimit_drops += overlimit as u64;
        }
    }

    /// One sample of the AQM's probability at `t`.
    #[inline]
    pub fn sample_probability(&mut self, t: Time, p: f64) {
        if self.window.contains(t) {
            self.prob_sum += p;
            self.prob_samples += 1;
        }
    }

    /// The window's counters from the queue's own statistics, read when the window opened
    /// and now (a backend that can read them exactly).
    pub fn set_counts_from_stats(&mut self, base: &[(QueueId, QueueStats)], now: &[(QueueId, QueueStats)]) {
        for (q, st) in now {
            let i = self.index(*q);
            let b = base.iter().find(|(x, _)| x == q).map(|(_, s)| s);
            self.counts[i] = SubCounts::between(b, st);
        }
    }

    /// Mean of the probability samples in the window.
    pub fn mean_probability(&self) -> Option<f64> {
        (self.prob_samples > 0).then(|| self.prob_sum / self.prob_samples as f64)
    }

    /// The sojourns of all sub-queues together.
    pub fn sojourn_all(&self) -> LatencyHist {
        let mut all = LatencyHist::new();
        for h in &self.sojourn {
            all.merge(h);
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_what_leaves_in_the_window_and_keeps_the_interval() {
        let w = Window {
            start: Time::from_secs(1),
            end: Time::from_secs(2),
        };
        let mut q = QueueMeter::new(w, &[QueueId::L, QueueId::C], true);
        let ms = Dur::from_millis;
        q.on_dequeue(Time::from_millis(500), QueueId::C, ms(20), ms(1), 1500, false);
        q.on_dequeue(Time::from_millis(1500), QueueId::L, ms(1), ms(1), 1500, true);
        q.on_dequeue(Time::from_millis(1600), QueueId::C, ms(30), ms(1), 1000, false);
        q.on_drop(Time::from_millis(1700), QueueId::C, true);
        q.on_enqueue(Time::from_millis(1800), QueueId::L);
        assert_eq!(q.forwarded, 3);
        assert_eq!((q.sojourn[0].count(), q.sojourn[1].count()), (1, 1));
        assert_eq!(q.busy, ms(2));
        assert_eq!(q.counts[0].marks, 1);
        assert_eq!(
            (
                q.counts[1].dequeued_bytes,
                q.counts[1].drops,
                q.counts[1].overlimit_drops
            ),
            (1000, 1, 1)
        );
        assert_eq!(q.counts[0].enqueued_packets, 1);
        assert_eq!(
            (q.interval.max[1], q.interval.dequeued, q.interval.drops),
            (ms(30), 3, 1)
        );
        assert_eq!(q.sojourn_all().count(), 2);
        q.sample_probability(Time::from_millis(1500), 0.2);
        q.sample_probability(Time::from_millis(2500), 0.9);
        assert_eq!(q.mean_probability(), Some(0.2));
    }
}
