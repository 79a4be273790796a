//! Time series written while the simulation runs: one CSV row per flow and per queue
//! every interval (default 100 ms). Rows are streamed to the writers, so memory does
//! not grow with run length.
//!
//! `snapshots-flows.csv`: `time_s, flow, throughput_bps, packets, ce_fraction,
//! owd_min_ms, owd_mean_ms, owd_p99_ms, owd_max_ms, lost, cwnd_bytes, srtt_ms,
//! pacing_bps, alpha, ecn_mode, ce_echoed, frames, frames_late, stall_ms,
//! frame_delay_max_ms, target_bps, completions, completion_max_ms` (ECN feedback
//! negotiated and CE marks the sender has been told of so far; delays of the data packets
//! that arrived in the interval; p99 from a 2-significant-digit histogram, ≤ 1 % error;
//! media flows: complete and late frames, stall time and the largest frame delay in the
//! interval, encoder target at the snapshot; application flows: completions in the
//! interval and the longest of them. Columns that do not apply are empty).
//! `snapshots-queues.csv`: `time_s, queue, backlog_packets, backlog_bytes,
//! sojourn_mean_ms, sojourn_max_ms (all sub-queues), sojourn_max_l_ms, sojourn_max_c_ms,
//! utilization, probability, marks, drops, rate_bps` (marks and drops set during the
//! interval; the link rate at the snapshot, which a `rate_schedule` changes).

use crate::events::Ev;
use crate::world::Sim;
use l4s_core::Dur;
use std::fmt::Write as _;
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
            "time_s,flow,throughput_bps,packets,ce_fraction,owd_min_ms,owd_mean_ms,owd_p99_ms,owd_max_ms,lost,cwnd_bytes,srtt_ms,pacing_bps,alpha,ecn_mode,ce_echoed,frames,frames_late,stall_ms,frame_delay_max_ms,target_bps,completions,completion_max_ms"
        )?;
        writeln!(queues, "time_s,queue,backlog_packets,backlog_bytes,sojourn_mean_ms,sojourn_max_ms,sojourn_max_l_ms,sojourn_max_c_ms,utilization,probability,marks,drops,rate_bps")?;
        for link in &mut self.links {
            link.meter.snap_last = link.model.queue_stats(0);
        }
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
            let h = &m.snap_owd;
            // Delay columns stay empty when nothing arrived in the interval.
            let d = |ns: f64| {
                if h.is_empty() {
                    String::new()
                } else {
                    format!("{:.3}", ns / 1e6)
                }
            };
            let mut extra = String::new();
            match (fl.media.as_mut(), fl.ep[0].as_ref()) {
                (Some(mm), sender) => {
                    let iv = mm.snap.interval(self.now);
                    let target = match sender {
                        Some(crate::endpoints::Ep::MediaS(s)) => {
                            s.media_stats().target_bitrate.bits_per_sec().to_string()
                        }
                        _ => String::new(),
                    };
                    let _ = write!(
                        extra,
                        ",{},{},{:.3},{},{target},,",
                        iv.frames,
                        iv.late,
                        iv.stall_time.as_millis_f64(),
                        if iv.frames > 0 {
                            format!("{:.3}", iv.max_delay.as_millis_f64())
                        } else {
                            String::new()
                        },
                    );
                }
                (None, _) => match fl.app.as_mut() {
                    Some(a) => {
                        let _ = write!(
                            extra,
                            ",,,,,,{},{}",
                            a.snap_count,
                            if a.snap_count > 0 {
                                format!("{:.3}", a.snap_max.as_millis_f64())
                            } else {
                                String::new()
                            }
                        );
                        a.snap_count = 0;
                        a.snap_max = Dur::ZERO;
                    }
                    None => extra.push_str(",,,,,,,"),
                },
            }
            res = res.and_then(|_| {
                writeln!(
                    snap.flows,
                    "{t:.3},{},{:.0},{},{ce:.6},{},{},{},{},{},{},{:.3},{},{},{},{}{extra}",
                    spec.name,
                    m.snap_bytes as f64 * 8.0 / secs,
                    m.snap_pkts,
                    d(h.min_ns() as f64),
                    d(h.mean_ns()),
                    d(h.quantile_ns(0.99) as f64),
                    d(h.max_ns() as f64),
                    m.snap_lost,
                    st.cwnd,
                    st.srtt.as_millis_f64(),
                    st.pacing_rate.map(|r| r.bits_per_sec().to_string()).unwrap_or_default(),
                    opt(st.alpha),
                    if st.ecn_mode.is_empty() { "none" } else { st.ecn_mode },
                    st.ce_packets,
                )
            });
            m.snap_bytes = 0;
            m.snap_pkts = 0;
            m.snap_ce = 0;
            m.snap_lost = 0;
            m.snap_owd.clear();
        }
        for (spec, link) in self.scenario.links.iter().zip(self.links.iter_mut()) {
            if !link.queued() {
                continue;
            }
            let m = &mut link.meter;
            let all = m.snap_sojourn_max.iter().copied().max().unwrap_or_default();
            let mean = if m.snap_dequeues > 0 {
                m.snap_sojourn_sum.as_millis_f64() / m.snap_dequeues as f64
            } else {
                0.0
            };
            let now_stats = link.model.queue_stats(0);
            let (mut marks, mut drops) = (0, 0);
            for (q, st) in &now_stats {
                let before = m
                    .snap_last
                    .iter()
                    .find(|(b, _)| b == q)
                    .map(|(_, s)| *s)
                    .unwrap_or_default();
                marks += st.marks.saturating_sub(before.marks);
                drops += st.drops.saturating_sub(before.drops);
            }
            res = res.and_then(|_| {
                writeln!(
                    snap.queues,
                    "{t:.3},{},{},{},{mean:.3},{:.3},{:.3},{:.3},{:.4},{},{marks},{drops},{}",
                    spec.name,
                    link.model.backlog(0).0,
                    link.model.backlog(0).1,
                    all.as_millis_f64(),
                    m.snap_sojourn_max[1].as_millis_f64(),
                    m.snap_sojourn_max[2].as_millis_f64(),
                    (m.snap_busy.as_secs_f64() / secs).min(1.0),
                    opt(link.model.probability(0)),
                    link.model.rate(0, 1).map(|r| r.bits_per_sec()).unwrap_or(0),
                )
            });
            m.snap_last = now_stats;
            m.snap_sojourn_max = [Dur::ZERO; 3];
            m.snap_sojourn_sum = Dur::ZERO;
            m.snap_dequeues = 0;
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

    /// Write `distributions.csv` (`kind,name,value_ms,cdf`): the cumulative distribution of
    /// each flow's one-way delay (`owd`) and RTT (`rtt`) and of each queue's sojourn
    /// (`sojourn`, name `link` for all sub-queues, `link/L` and `link/C` for DualPI2), over
    /// the statistics window, sampled from the HDR histograms ([`l4s_metrics::LatencyHist::cdf_points`]).
    pub fn write_distributions(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(w, "kind,name,value_ms,cdf")?;
        let mut put = |kind: &str, name: &str, h: &l4s_metrics::LatencyHist| -> io::Result<()> {
            for (v, f) in h.cdf_points() {
                writeln!(w, "{kind},{name},{:.6},{:.8}", v as f64 / 1e6, f)?;
            }
            Ok(())
        };
        for (spec, fl) in self.scenario.flows.iter().zip(&self.flows) {
            put("owd", &spec.name, &fl.meter.owd)?;
            put("rtt", &spec.name, &fl.meter.rtt)?;
            if let Some(m) = &fl.media {
                put("frame_delay", &spec.name, &m.delay)?;
            }
        }
        for (spec, link) in self.scenario.links.iter().zip(&self.links) {
            if !link.queued() {
                continue;
            }
            let ids = link.model.queues()[0].subqueues;
            let mut all = l4s_metrics::LatencyHist::new();
            for q in ids {
                all.merge(&link.meter.sojourn[crate::measure::qidx(*q)]);
            }
            put("sojourn", &spec.name, &all)?;
            if ids.len() > 1 {
                for q in ids {
                    put(
                        "sojourn",
                        &format!("{}/{}", spec.name, q.name()),
                        &link.meter.sojourn[crate::measure::qidx(*q)],
                    )?;
                }
            }
        }
        Ok(())
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
