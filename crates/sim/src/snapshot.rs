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
            for (i, q) in link.queues.iter_mut().enumerate() {
                q.snap_base = link.model.queue_stats(i);
                q.meter.snapshots = true;
            }
        }
        for fl in &mut self.flows {
            fl.meter.snapshots = true;
        }
        self.snapshots = Some(snap);
        self.q.push(self.now + interval, Ev::Snapshot);
        Ok(())
    }

    pub(crate) fn snapshot(&mut self) {
        self.catch_up_links();
        let Some(mut snap) = self.snapshots.take() else { return };
        let t = self.now;
        for (spec, fl) in self.scenario.flows.iter().zip(self.flows.iter_mut()) {
            fl.meter.sender = fl.ep[0].as_ref().map(|e| e.stats()).unwrap_or_default();
            if let (Some(mm), Some(Ep::MediaS(s))) = (fl.meter.media.as_mut(), fl.ep[0].as_ref()) {
                mm.latest = Some(s.media_stats());
            }
            snap.flow_row(t, &spec.name, &mut fl.meter);
        }
        for link in &mut self.links {
            for (i, q) in link.queues.iter_mut().enumerate() {
                let rate_bps = link.model.queue_rate_at(i, t).map_or(0, |r| r.bits_per_sec());
                // Marks and drops in the interval, from the queue's own counters.
                let now_stats = link.model.queue_stats(i);
                let (mut marks, mut drops) = (0, 0);
                for (id, st) in &now_stats {
                    let before = q.snap_base.iter().find(|(b, _)| b == id).map(|(_, s)| s);
                    let c = SubCounts::between(before, st);
                    marks += c.marks;
                    drops += c.drops;
                }
                let (backlog_packets, backlog_bytes) = link.model.backlog(i);
                let now = QueueNow {
                    backlog_packets,
                    backlog_bytes,
                    probability: link.model.probability(i),
                    marks,
                    drops,
                    rate_bps,
                };
                snap.queue_row(t, &q.name, &mut q.meter, now);
                q.snap_base = now_stats;
            }
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
            .links
            .iter()
            .flat_map(|l| l.queues.iter().map(|q| (q.name.as_str(), &q.meter)))
            .collect();
        let access: Vec<_> = self
            .links
            .iter()
            .enumerate()
            .filter_map(|(l, link)| {
                let now = link.model.wifi_stats()?;
                let name = self.scenario.links[l]
                    .medium
                    .as_ref()
                    .map_or(&self.scenario.links[l].name, |m| &m.name);
                Some(l4s_measure::summary::wifi_access_delays(
                    name,
                    &now,
                    link.wifi_base.as_deref(),
                ))
            })
            .flatten()
            .collect();
        l4s_measure::distributions::write(w, &flows, &queues, &access)
    }

    /// Flush the snapshot writers; returns the first error seen while writing.
    pub fn finish_snapshots(&mut self) -> io::Result<()> {
        match self.snapshots.take() {
            Some(s) => s.finish(),
            None => Ok(()),
        }
    }
}
