//! Time series written while a run goes: one CSV row per flow and per queue every interval
//! (default 100 ms), streamed to the writers, so memory does not grow with run length.
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

use crate::{FlowMeter, QueueMeter};
use l4s_aqm::QueueId;
use l4s_core::{Dur, Time};
use l4s_metrics::fixed::push_fixed;
use std::fmt::Write as _;
use std::io::{self, Write};

/// The header of `snapshots-flows.csv`.
pub const FLOWS_HEADER: &str = "time_s,flow,throughput_bps,packets,ce_fraction,owd_min_ms,owd_mean_ms,owd_p99_ms,owd_max_ms,lost,cwnd_bytes,srtt_ms,pacing_bps,alpha,ecn_mode,ce_echoed,frames,frames_late,stall_ms,frame_delay_max_ms,target_bps,completions,completion_max_ms";
/// The header of `snapshots-queues.csv`.
pub const QUEUES_HEADER: &str = "time_s,queue,backlog_packets,backlog_bytes,sojourn_mean_ms,sojourn_max_ms,sojourn_max_l_ms,sojourn_max_c_ms,utilization,probability,marks,drops,rate_bps";

/// What a queue's row needs beside its meter, read from the queue at the snapshot.
#[derive(Clone, Copy, Debug, Default)]
pub struct QueueNow {
    pub backlog_packets: u64,
    pub backlog_bytes: u64,
    pub probability: Option<f64>,
    /// Marks and drops in the interval.
    pub marks: u64,
    pub drops: u64,
    /// The rate in force (0: unlimited).
    pub rate_bps: u64,
}

/// The two time-series writers of a run.
pub struct Snapshots {
    pub interval: Dur,
    flows: Box<dyn Write>,
    queues: Box<dyn Write>,
    /// The first write error, reported at the end of the run.
    error: Option<io::Error>,
    /// The row being written, kept for the next (rows were built with `format!` and a
    /// `String` per cell: a quarter of the cost of the snapshots in a run).
    row: String,
}

/// Append `,` and then `v`.
fn cell(row: &mut String, v: impl std::fmt::Display) {
    row.push(',');
    // Writing to a String cannot fail.
    let _ = write!(row, "{v}");
}

/// Append `,` and then `v` with `decimals` decimals.
fn cell_fixed(row: &mut String, v: f64, decimals: u8) {
    row.push(',');
    push_fixed(row, v, decimals);
}

/// Append `,` and then `v` with `decimals` decimals if there is one (an empty cell if not).
fn cell_opt(row: &mut String, v: Option<f64>, decimals: u8) {
    row.push(',');
    if let Some(v) = v {
        push_fixed(row, v, decimals);
    }
}

impl Snapshots {
    /// Rows every `interval` to these writers (headers written now).
    pub fn new(interval: Dur, mut flows: Box<dyn Write>, mut queues: Box<dyn Write>) -> io::Result<Snapshots> {
        if interval.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "snapshot interval must be above zero",
            ));
        }
        writeln!(flows, "{FLOWS_HEADER}")?;
        writeln!(queues, "{QUEUES_HEADER}")?;
        Ok(Snapshots {
            interval,
            flows,
            queues,
            error: None,
            row: String::new(),
        })
    }

    fn keep(&mut self, r: io::Result<()>) {
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }

    /// The row of flow `name` at `t`, from its meter (the sender's latest statistics in
    /// [`FlowMeter::sender`], a media sender's in [`crate::MediaMeter::latest`]); starts the
    /// meter's next interval.
    pub fn flow_row(&mut self, t: Time, name: &str, m: &mut FlowMeter) {
        let secs = self.interval.as_secs_f64();
        let owd = m.interval.owd.figures(0.99);
        let st = &m.sender;
        let iv = &m.interval;
        let ce = if iv.packets > 0 {
            iv.ce as f64 / iv.packets as f64
        } else {
            0.0
        };
        // Delay columns stay empty when nothing arrived in the interval.
        let ms = |ns: f64| (owd.count > 0).then_some(ns / 1e6);
        let row = &mut self.row;
        row.clear();
        push_fixed(row, t.as_secs_f64(), 3);
        row.push(',');
        row.push_str(name);
        cell_fixed(row, iv.bytes as f64 * 8.0 / secs, 0);
        cell(row, iv.packets);
        cell_fixed(row, ce, 6);
        cell_opt(row, ms(owd.min_ns as f64), 3);
        cell_opt(row, ms(owd.mean_ns), 3);
        cell_opt(row, ms(owd.quantile_ns as f64), 3);
        cell_opt(row, ms(owd.max_ns as f64), 3);
        cell(row, m.interval_lost());
        cell(row, st.cwnd);
        cell_fixed(row, st.srtt.as_millis_f64(), 3);
        row.push(',');
        if let Some(r) = st.pacing_rate {
            let _ = write!(row, "{}", r.bits_per_sec());
        }
        cell_opt(row, st.alpha, 6);
        cell(row, if st.ecn_mode.is_empty() { "none" } else { st.ecn_mode });
        cell(row, st.ce_packets);
        if let Some(mm) = m.media.as_mut() {
            let fi = mm.snap.interval(t);
            cell(row, fi.frames);
            cell(row, fi.late);
            cell_fixed(row, fi.stall_time.as_millis_f64(), 3);
            cell_opt(row, (fi.frames > 0).then(|| fi.max_delay.as_millis_f64()), 3);
            row.push(',');
            if let Some(s) = mm.latest {
                let _ = write!(row, "{}", s.target_bitrate.bits_per_sec());
            }
            row.push_str(",,");
        } else if let Some(a) = m.app.as_mut() {
            row.push_str(",,,,,");
            cell(row, a.snap_count);
            cell_opt(row, (a.snap_count > 0).then(|| a.snap_max.as_millis_f64()), 3);
            a.snap_count = 0;
            a.snap_max = Dur::ZERO;
        } else {
            row.push_str(",,,,,,,");
        }
        row.push('\n');
        let r = self.flows.write_all(self.row.as_bytes());
        self.keep(r);
        m.interval.clear();
    }

    /// The row of queue `name` at `t`, from its meter and what the queue says now; starts the
    /// meter's next interval.
    pub fn queue_row(&mut self, t: Time, name: &str, q: &mut QueueMeter, now: QueueNow) {
        let secs = self.interval.as_secs_f64();
        let iv = &q.interval;
        let all = iv.max.iter().copied().max().unwrap_or_default();
        let sub = |id: QueueId| {
            q.subqueues
                .iter()
                .position(|&x| x == id)
                .map_or(Dur::ZERO, |i| iv.max[i])
        };
        let mean = if iv.dequeued > 0 {
            iv.sum.as_millis_f64() / iv.dequeued as f64
        } else {
            0.0
        };
        let row = &mut self.row;
        row.clear();
        push_fixed(row, t.as_secs_f64(), 3);
        row.push(',');
        row.push_str(name);
        cell(row, now.backlog_packets);
        cell(row, now.backlog_bytes);
        cell_fixed(row, mean, 3);
        cell_fixed(row, all.as_millis_f64(), 3);
        cell_fixed(row, sub(QueueId::L).as_millis_f64(), 3);
        cell_fixed(row, sub(QueueId::C).as_millis_f64(), 3);
        cell_fixed(row, (iv.busy.as_secs_f64() / secs).min(1.0), 4);
        cell_opt(row, now.probability, 6);
        cell(row, now.marks);
        cell(row, now.drops);
        cell(row, now.rate_bps);
        row.push('\n');
        let r = self.queues.write_all(self.row.as_bytes());
        self.keep(r);
        let n = q.subqueues.len();
        q.interval = crate::queue::QueueInterval {
            max: vec![Dur::ZERO; n],
            ..Default::default()
        };
    }

    /// Flush the writers; the first error seen while writing, if any.
    pub fn finish(mut self) -> io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.flows.flush()?;
        self.queues.flush()
    }
}
