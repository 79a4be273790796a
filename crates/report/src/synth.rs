//! Synthetic results for tests, benchmarks and demos: a hand-built healthy DualPI2
//! `Summary` (numbers from `scenarios/dumbbell-dualpi2.toml`, seed 1) and a writer of
//! whole results directories of any length and flow count. Deterministic (no clock, a
//! fixed xorshift generator).

use crate::data::{FlowCol, QueueCol, Series, Snapshots};
use l4s_metrics::summary::{MediaSummary, Summary, TestbedCheck};
use l4s_metrics::Percentiles;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::Path;

#[allow(clippy::too_many_arguments)]
fn pct(count: u64, mean: f64, p50: f64, p90: f64, p99: f64, p999: f64, p9999: f64, max: f64) -> Value {
    json!({"count": count, "mean": mean, "p50": p50, "p90": p90, "p99": p99, "p999": p999, "p9999": p9999, "max": max})
}

#[allow(clippy::too_many_arguments)]
fn flow(
    name: &str,
    kind: &str,
    cc: &str,
    ecn: &str,
    class: &str,
    thr: f64,
    owd: Value,
    rtt: Value,
    recv: u64,
    ce: u64,
) -> Value {
    json!({
        "name": name, "kind": kind, "cc": cc, "ecn": ecn,
        "ecn_feedback": if kind == "probe" { "none" } else if ecn == "ect1" { "accecn" } else { "classic" },
        "class": class, "src": format!("{name}.src"), "dst": format!("{name}.dst"),
        "base_rtt_ms": 20.0, "throughput_bps": thr, "goodput_bps": thr * 0.956,
        "owd_ms": owd, "rtt_ms": rtt, "sent_packets": recv, "lost_packets": 0, "loss_fraction": 0.0,
        "retransmits": 0, "received_packets": recv, "ce_packets": ce,
        "ce_fraction": if recv > 0 { ce as f64 / recv as f64 } else { 0.0 },
        "congestion_events": ce / 5,
    })
}

/// A healthy Prague + CUBIC run through a 100 Mbit/s DualPI2 bottleneck, with two probes.
/// Every statistic has at least 10 000 samples, so no rule should fire.
pub fn healthy_dualpi2() -> Summary {
    let l_owd = pct(287_093, 10.2056, 10.2072, 10.2892, 10.3547, 10.3629, 10.3711, 10.4059);
    let c_owd = pct(124_826, 22.7463, 23.6093, 27.9839, 29.4420, 30.3104, 30.6708, 30.9082);
    let v = json!({
        "schema_version": 1,
        "tool": {"name": "l4s-lab", "version": "0.1.0"},
        "scenario": {"name": "dumbbell-dualpi2", "description": "Prague + CUBIC through a 100 Mbit/s DualPI2 bottleneck",
                     "file": "scenarios/dumbbell-dualpi2.toml", "backend": "sim", "seed": 1,
                     "duration_s": 60.0, "warmup_s": 10.0, "stats_window_s": 50.0},
        "flows": [
            flow("prague", "tcp", "prague", "ect1", "L4S", 69.55e6, l_owd.clone(),
                 pct(145_197, 20.38, 20.38, 20.48, 20.55, 20.61, 20.68, 20.86), 287_093, 7_212),
            flow("cubic", "tcp", "cubic", "ect0", "classic", 30.24e6, c_owd.clone(),
                 pct(62_418, 33.15, 34.01, 38.37, 39.81, 40.70, 40.93, 41.03), 124_826, 34),
            flow("probe-l4s", "probe", "none", "ect1", "L4S", 102_400.0,
                 pct(12_800, 10.15, 10.15, 10.26, 10.33, 10.37, 10.37, 10.37), Value::Null, 12_800, 280),
            flow("probe-classic", "probe", "none", "not-ect", "classic", 102_400.0,
                 pct(12_800, 22.99, 23.90, 28.07, 29.57, 30.61, 30.61, 30.61), Value::Null, 12_800, 0),
        ],
        "queues": [
            {"name": "bottleneck", "from": "left", "to": "right", "aqm": "dualpi2", "rate_bps": 100_000_000u64,
             "utilization": 0.999881, "sojourn_ms": pct(418_319, 3.93, 0.1105, 15.46, 18.71, 19.94, 20.43, 20.79),
             "enqueued_packets": 418_287, "dequeued_packets": 418_319, "marks": 7_316, "drops": 0, "overlimit_drops": 0,
             "mean_probability": 0.012743,
             "subqueues": {
                "C": {"sojourn_ms": pct(128_026, 12.63, 13.51, 17.86, 19.33, 20.19, 20.66, 20.79),
                      "enqueued_packets": 127_994, "dequeued_packets": 128_026, "dequeued_bytes": 189_626_564u64,
                      "marks": 34, "drops": 0, "overlimit_drops": 0},
                "L": {"sojourn_ms": pct(290_293, 0.0851, 0.0803, 0.1645, 0.2326, 0.2460, 0.3154, 0.3542),
                      "enqueued_packets": 290_293, "dequeued_packets": 290_293, "dequeued_bytes": 435_298_802u64,
                      "marks": 7_282, "drops": 0, "overlimit_drops": 0}}},
            {"name": "bottleneck-reverse", "from": "right", "to": "left", "aqm": "fifo", "rate_bps": 100_000_000u64,
             "utilization": 0.024712, "sojourn_ms": pct(207_615, 0.0, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6, 0.0),
             "enqueued_packets": 207_615, "dequeued_packets": 207_615, "marks": 0, "drops": 0, "overlimit_drops": 0,
             "mean_probability": null,
             "subqueues": {"single": {"sojourn_ms": pct(207_615, 0.0, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6, 0.0),
                      "enqueued_packets": 207_615, "dequeued_packets": 207_615, "dequeued_bytes": 15_445_014u64,
                      "marks": 0, "drops": 0, "overlimit_drops": 0}}}
        ],
        "classes": [
            {"class": "L4S", "flows": 2, "throughput_bps": 69.65e6, "owd_ms": l_owd},
            {"class": "classic", "flows": 2, "throughput_bps": 30.34e6, "owd_ms": c_owd},
        ],
    });
    // The literal above matches schema 1; a mismatch is a bug in this file, caught by every test.
    serde_json::from_value(v).expect("synthetic summary matches the schema")
}

/// A media flow's summary: a cloud-gaming stream (SCReAM, L4S, 60 fps, 2–30 Mbit/s) that
/// sent `frames_sent` frames, with the given bad-frame and stall fractions and frame delay.
/// Every frame counts as complete and on time whatever the fractions say (the verdict
/// reads only the fractions); override the counts with `..` where they matter.
pub fn media(
    frames_sent: u64,
    bad_frame_fraction: f64,
    stall_fraction: f64,
    frame_delay_ms: Percentiles,
) -> MediaSummary {
    MediaSummary {
        profile: "cloud-gaming".into(),
        controller: "scream".into(),
        l4s: true,
        fps: 60.0,
        frames_sent,
        frames_complete: frames_sent,
        frames_late: 0,
        frames_incomplete: 0,
        bad_frame_fraction,
        frame_delay_ms,
        deadline_ms: 16.7,
        stall_time_s: 0.0,
        stall_fraction,
        stall_gap_ms: 100.0,
        received_fps: 59.8,
        target_bitrate_mean_bps: 2e7,
        target_bitrate_min_bps: 1e7,
        target_bitrate_max_bps: 3e7,
        frames_discarded: 0,
        feedback_reports: 3000,
        feedback_malformed: 0,
        min_bitrate_bps: 2e6,
        max_bitrate_bps: 3e7,
        time_at_min_fraction: 0.0,
    }
}

/// A live testbed's timing self-check: 600 of 120 000 hand-offs over 1 ms late (0.5 %,
/// worst p99 0.9 ms, p99.9 2.6 ms, max 4.1 ms), with the given verdict and CPU steal.
pub fn testbed_check(disrupted: bool, cpu_steal: Option<f64>) -> TestbedCheck {
    TestbedCheck {
        packets: 120_000,
        late_over_1ms: 600,
        late_share: 0.005,
        worst_p99_ms: 0.9,
        worst_p999_ms: 2.6,
        max_ms: 4.1,
        cpu_steal,
        disrupted,
    }
}

/// A small deterministic generator (xorshift64*).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Plausible snapshot series for the flows and queues of `s`.
pub fn snapshots(s: &Summary, duration_s: f64, interval_s: f64, seed: u64) -> Snapshots {
    let mut rng = Rng::new(seed);
    let n = (duration_s / interval_s).round().max(0.0) as usize;
    let mut out = Snapshots::default();
    for f in &s.flows {
        let mut sr = Series {
            name: f.name.clone(),
            time_s: Vec::with_capacity(n),
            values: vec![Vec::new(); FlowCol::ALL.len()],
        };
        let bulk = f.kind != "probe";
        let base = f.base_rtt_ms / 2.0;
        let q = (f.owd_ms.p99 - base).max(0.0);
        for i in 1..=n {
            let t = i as f64 * interval_s;
            let wave = 0.5 + 0.5 * (t * 0.7 + f.name.len() as f64).sin();
            let x = rng.next_f64();
            let min = base + q * 0.1 * x;
            let mean = base + q * (0.3 + 0.4 * wave);
            let p99 = base + q * (0.8 + 0.2 * x);
            let max = p99 + q * 0.1 * rng.next_f64();
            let thr = f.throughput_bps * (0.8 + 0.4 * rng.next_f64());
            let vals = [
                thr,
                (thr * interval_s / 12_000.0).round(),
                f.ce_fraction * 2.0 * rng.next_f64(),
                min,
                mean,
                p99,
                max,
                0.0,
                if bulk { 60_000.0 + 60_000.0 * wave } else { f64::NAN },
                if bulk { 2.0 * mean } else { f64::NAN },
                if bulk { thr * 1.2 } else { f64::NAN },
                if f.cc == "prague" { 0.1 * wave } else { f64::NAN },
            ];
            sr.time_s.push(t);
            // Media and application columns do not apply to the synthetic flows.
            for c in 0..FlowCol::ALL.len() {
                sr.values[c].push(vals.get(c).copied().unwrap_or(f64::NAN));
            }
        }
        out.flows.push(sr);
    }
    for qs in &s.queues {
        let mut sr = Series {
            name: qs.name.clone(),
            time_s: Vec::with_capacity(n),
            values: vec![Vec::new(); QueueCol::ALL.len()],
        };
        let dual = qs.subqueues.contains_key("L");
        for i in 1..=n {
            let t = i as f64 * interval_s;
            let x = rng.next_f64();
            let wave = 0.5 + 0.5 * (t * 0.5).sin();
            let c = qs.sojourn_ms.p99 * (0.5 + 0.5 * wave);
            let l = if dual { 0.2 + 0.3 * x } else { f64::NAN };
            let vals = [
                (c * 10.0).round(),
                (c * 10.0).round() * 1500.0,
                c * 0.5,
                c,
                l,
                if dual { c } else { f64::NAN },
                (qs.utilization * (0.95 + 0.1 * x)).min(1.0),
                qs.mean_probability.map(|p| p * 2.0 * wave).unwrap_or(f64::NAN),
                (qs.marks as f64 / n.max(1) as f64).round(),
                0.0,
                qs.rate_bps as f64,
            ];
            sr.time_s.push(t);
            for (c, v) in vals.iter().enumerate() {
                sr.values[c].push(*v);
            }
        }
        debug_assert_eq!(QueueCol::ALL.len(), 11);
        out.queues.push(sr);
    }
    out
}

fn cell(v: f64) -> String {
    if v.is_finite() {
        let s = format!("{v:.8}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        String::new()
    }
}

fn csv_name(n: &str) -> String {
    if n.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", n.replace('"', "\"\""))
    } else {
        n.to_string()
    }
}

/// A summary with `flows` bulk flows alternating Prague (L4S) and CUBIC (classic), named
/// by `name(i)`, of the given duration.
pub fn summary_with_flows(flows: usize, duration_s: f64, name: &dyn Fn(usize) -> String) -> Summary {
    let base = healthy_dualpi2();
    let mut s = base.clone();
    s.scenario.duration_s = duration_s;
    s.scenario.stats_window_s = duration_s - s.scenario.warmup_s;
    s.flows.clear();
    for i in 0..flows {
        let mut f = base.flows[i % 2].clone();
        f.name = name(i);
        f.src = format!("{}.src", f.name);
        f.dst = format!("{}.dst", f.name);
        f.throughput_bps = 100e6 / flows as f64;
        s.flows.push(f);
    }
    s
}

/// Write a complete results directory (summary.json, both snapshot files and
/// distributions.csv) for `s`, with snapshots every `interval_s` over `duration_s`.
pub fn write_results_dir(dir: &Path, s: &Summary, interval_s: f64, seed: u64) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let json = serde_json::to_vec_pretty(s).map_err(io::Error::other)?;
    fs::write(dir.join("summary.json"), json)?;
    let snaps = snapshots(s, s.scenario.duration_s, interval_s, seed);
    write_snapshots(dir, &snaps)?;
    let mut d = String::from("kind,name,value_ms,cdf\n");
    for f in &s.flows {
        dist_rows(&mut d, "owd", &f.name, &f.owd_ms);
        if let Some(r) = &f.rtt_ms {
            dist_rows(&mut d, "rtt", &f.name, r);
        }
    }
    for q in &s.queues {
        dist_rows(&mut d, "sojourn", &q.name, &q.sojourn_ms);
        for (k, sq) in &q.subqueues {
            if k != "single" {
                dist_rows(&mut d, "sojourn", &format!("{}/{k}", q.name), &sq.sojourn_ms);
            }
        }
    }
    fs::write(dir.join("distributions.csv"), d)
}

/// Write `snapshots-flows.csv` and `snapshots-queues.csv` (all columns).
pub fn write_snapshots(dir: &Path, snaps: &Snapshots) -> io::Result<()> {
    let mut f = String::from("time_s,flow");
    for c in FlowCol::ALL {
        f.push(',');
        f.push_str(c.header());
    }
    f.push('\n');
    let n = snaps.flows.iter().map(|s| s.time_s.len()).max().unwrap_or(0);
    for i in 0..n {
        for s in &snaps.flows {
            if let Some(t) = s.time_s.get(i) {
                let _ = write!(f, "{t:.3},{}", csv_name(&s.name));
                for c in &s.values {
                    let _ = write!(f, ",{}", cell(c[i]));
                }
                f.push('\n');
            }
        }
    }
    fs::write(dir.join("snapshots-flows.csv"), f)?;
    let mut q = String::from("time_s,queue");
    for c in QueueCol::ALL {
        q.push(',');
        q.push_str(c.header());
    }
    q.push('\n');
    let n = snaps.queues.iter().map(|s| s.time_s.len()).max().unwrap_or(0);
    for i in 0..n {
        for s in &snaps.queues {
            if let Some(t) = s.time_s.get(i) {
                let _ = write!(q, "{t:.3},{}", csv_name(&s.name));
                for c in &s.values {
                    let _ = write!(q, ",{}", cell(c[i]));
                }
                q.push('\n');
            }
        }
    }
    fs::write(dir.join("snapshots-queues.csv"), q)
}

/// Log-spaced CDF samples through the percentile points of `p` (a stand-in for the HDR
/// histogram the simulator samples).
fn dist_rows(out: &mut String, kind: &str, name: &str, p: &l4s_metrics::Percentiles) {
    let knots = [
        (0.0, p.p50 * 0.9),
        (0.5, p.p50),
        (0.9, p.p90),
        (0.99, p.p99),
        (0.999, p.p999),
        (0.9999, p.p9999),
        (1.0, p.max),
    ];
    for i in 0..=60 {
        // ccdf from 1 to 1e-6, log-spaced
        let ccdf = 10f64.powf(-6.0 * i as f64 / 60.0);
        let cdf = 1.0 - ccdf;
        let mut v = p.max;
        for w in knots.windows(2) {
            if cdf <= w[1].0 {
                let f = if w[1].0 > w[0].0 {
                    (cdf - w[0].0) / (w[1].0 - w[0].0)
                } else {
                    1.0
                };
                v = w[0].1 + f * (w[1].1 - w[0].1);
                break;
            }
        }
        let _ = writeln!(out, "{kind},{},{},{}", csv_name(name), cell(v.max(0.0)), cell(cdf));
    }
    let _ = writeln!(out, "{kind},{},{},1", csv_name(name), cell(p.max.max(0.0)));
}
