//! Time series written while the simulation runs: one CSV row per flow and per queue
//! every interval (default 100 ms). Rows are streamed to the writers, so memory does
//! not grow with run length.
//!
//! `snapshots-flows.csv`: `time_s, flow, throughput_bps, packets, ce_fraction,
//! owd_max_ms, cwnd_bytes, srtt_ms, pacing_bps, alpha`.
//! `snapshots-queues.csv`: `time_s, queue, backlog_packets, backlog_bytes,
//! sojourn_max_ms (all sub-queues), sojourn_max_l_ms, sojourn_max_c_ms, utilization,
//! probability`.

use crate::events::Ev;
use crate::world::Sim;
use l4s_core::Dur;
use std::io::{self, Write};

pub struct Snapshots {
    pub interval: Dur,
    pub flows: Box<dyn Write>,
    pub queues: Box<dyn Write>,
    /// The first write error, reported at the end of the run.
    pub error: Option<io::Error>,
}

fn opt(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.6}")).unwrap_or_default()
}

impl Sim {
    /// Stream snapshots every `interval` to the two writers (headers written now).
    pub fn enable_snapshots(
        &mut self,
        interval: Dur,
        mut flows: Box<dyn Write>,
        mut queues: Box<dyn Write>,
    ) -> io::Result<()> {
        if interval.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "snapshot interval must be above zero",
            ));
        }
        writeln!(
            flows,
            "time_s,flow,throughput_bps,packets,ce_fraction,owd_max_ms,cwnd_bytes,srtt_ms,pacing_bps,alpha"
        )?;
        writeln!(queues, "time_s,queue,backlog_packets,backlog_bytes,sojourn_max_ms,sojourn_max_l_ms,sojourn_max_c_ms,utilization,probability")?;
        self.snapshots = Some(Snapshots {
            interval,
            flows,
            queues,
            error: None,
        });
        self.q.push(self.now + interval, Ev::Snapshot);
        Ok(())
    }

    pub(crate) fn snapshot(&mut self) {
        let Some(mut snap) = self.snapshots.take() else { return };
        let t = self.now.as_secs_f64();
        let secs = snap.interval.as_secs_f64();
        let mut res = Ok(());
        for (spec, fl) in self.scenario.flows.iter().zip(self.flows.iter_mut()) {
            let m = &mut fl.meter;
            let st = fl.ep[0].as_ref().map(|e| e.stats()).unwrap_or_default();
            let ce = if m.snap_pkts > 0 {
                m.snap_ce as f64 / m.snap_pkts as f64
            } else {
                0.0
            };
            res = res.and_then(|_| {
                writeln!(
                    snap.flows,
                    "{t:.3},{},{:.0},{},{ce:.6},{:.3},{},{:.3},{},{}",
                    spec.name,
                    m.snap_bytes as f64 * 8.0 / secs,
                    m.snap_pkts,
                    m.snap_owd_max.as_millis_f64(),
                    st.cwnd,
                    st.srtt.as_millis_f64(),
                    st.pacing_rate.map(|r| r.bits_per_sec().to_string()).unwrap_or_default(),
                    opt(st.alpha),
                )
            });
            m.snap_bytes = 0;
            m.snap_pkts = 0;
            m.snap_ce = 0;
            m.snap_owd_max = Dur::ZERO;
        }
        for (spec, link) in self.scenario.links.iter().zip(self.links.iter_mut()) {
            if link.rate.is_none() {
                continue;
            }
            let m = &mut link.meter;
            let all = m.snap_sojourn_max.iter().copied().max().unwrap_or_default();
            res = res.and_then(|_| {
                writeln!(
                    snap.queues,
                    "{t:.3},{},{},{},{:.3},{:.3},{:.3},{:.4},{}",
                    spec.name,
                    link.qdisc.len_packets(),
                    link.qdisc.len_bytes(),
                    all.as_millis_f64(),
                    m.snap_sojourn_max[1].as_millis_f64(),
                    m.snap_sojourn_max[2].as_millis_f64(),
                    (m.snap_busy.as_secs_f64() / secs).min(1.0),
                    opt(link.qdisc.probability()),
                )
            });
            m.snap_sojourn_max = [Dur::ZERO; 3];
            m.snap_busy = Dur::ZERO;
        }
        if let Err(e) = res {
            snap.error.get_or_insert(e);
        }
        let next = self.now + snap.interval;
        if next <= self.end {
            self.q.push(next, Ev::Snapshot);
        }
        self.snapshots = Some(snap);
    }

    /// Flush the snapshot writers; returns the first error seen while writing.
    pub fn finish_snapshots(&mut self) -> io::Result<()> {
        if let Some(mut s) = self.snapshots.take() {
            if let Some(e) = s.error.take() {
                return Err(e);
            }
            s.flows.flush()?;
            s.queues.flush()?;
        }
        Ok(())
    }
}
