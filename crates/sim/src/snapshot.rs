//! Time series written while the simulation runs, and the distributions at its end, with
//! the shared writers of [`l4s_measure`] (see [`l4s_measure::snapshot`] for the columns).

use crate::endpoints::Ep;
use crate::events::Ev;
use crate::world::Sim;
use l4s_core::Dur;
use l4s_measure::snapshot::{QueueNow, Snapshots};
use l4s_measure::SubCounts;
use std::io::{self, Write};

impl Sim {
    /// Stream snapshots every `interval` to the two writers (headers written now).
    pub fn enable_snapshots(&mut self, interval: Dur, flows: Box<dyn Write>, queues: Box<dyn Write>) -> io::Result<()> {
        let snap = Snapshots::new(interval, flows, queues)?;
        for link in &mut self.links {
            link.snap_base = link.model.queue_stats(0);
            link.meter.snapshots = true;
        }
        for fl in &mut self.flows {
            fl.meter.snapshots = true;
        }
        self.snapshots = Some(snap);
        self.q.push(self.now + interval, Ev::Snapshot);
        Ok(())
    }

    pub(crate) fn snapshot(&mut self) {
        let Some(mut snap) = self.snapshots.take() else { return };
        let t = self.now;
        for (spec, fl) in self.scenario.flows.iter().zip(self.flows.iter_mut()) {
            fl.meter.sender = fl.ep[0].as_ref().map(|e| e.stats()).unwrap_or_default();
            if let (Some(mm), Some(Ep::MediaS(s))) = (fl.meter.media.as_mut(), fl.ep[0].as_ref()) {
                mm.latest = Some(s.media_stats());
            }
            snap.flow_row(t, &spec.name, &mut fl.meter);
        }
        for (spec, link) in self.scenario.links.iter().zip(self.links.iter_mut()) {
            if !link.queued() {
                continue;
            }
            // Marks and drops in the interval, from the queue's own counters.
            let now_stats = link.model.queue_stats(0);
            let (mut marks, mut drops) = (0, 0);
            for (q, st) in &now_stats {
                let before = link.snap_base.iter().find(|(b, _)| b == q).map(|(_, s)| s);
                let c = SubCounts::between(before, st);
                marks += c.marks;
                drops += c.drops;
            }
            let (backlog_packets, backlog_bytes) = link.model.backlog(0);
            let now = QueueNow {
                backlog_packets,
                backlog_bytes,
                probability: link.model.probability(0),
                marks,
                drops,
                rate_bps: link.model.rate(0, 1).map_or(0, |r| r.bits_per_sec()),
            };
            snap.queue_row(t, &spec.name, &mut link.meter, now);
            link.snap_base = now_stats;
        }
        let next = self.now + snap.interval;
        if next <= self.end {
            self.q.push(next, Ev::Snapshot);
        }
        self.snapshots = Some(snap);
    }

    /// Write `distributions.csv` (see [`l4s_measure::distributions`]).
    pub fn write_distributions(&self, w: &mut dyn Write) -> io::Result<()> {
        let flows: Vec<(&str, &l4s_measure::FlowMeter)> = self
            .scenario
            .flows
            .iter()
            .zip(&self.flows)
            .map(|(s, f)| (s.name.as_str(), &f.meter))
            .collect();
        let queues: Vec<(&str, &l4s_measure::QueueMeter)> = self
            .scenario
            .links
            .iter()
            .zip(&self.links)
            .filter(|(_, l)| l.queued())
            .map(|(s, l)| (s.name.as_str(), &l.meter))
            .collect();
        l4s_measure::distributions::write(w, &flows, &queues)
    }

    /// Flush the snapshot writers; returns the first error seen while writing.
    pub fn finish_snapshots(&mut self) -> io::Result<()> {
        match self.snapshots.take() {
            Some(s) => s.finish(),
            None => Ok(()),
        }
    }
}
