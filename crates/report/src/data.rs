//! Reading a results directory: `summary.json` (required) and the optional
//! `snapshots-flows.csv`, `snapshots-queues.csv` and `distributions.csv`.
//!
//! Columns are found by header name. A column that is absent, or a cell that is empty,
//! reads as NaN ("not applicable"); charts skip NaN points. A malformed row is an error
//! that names the file and the line.

use crate::csv;
use crate::ReportError;
use l4s_metrics::summary::{Summary, SCHEMA_VERSION};
use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Columns of `snapshots-flows.csv` after `time_s,flow`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowCol {
    ThroughputBps,
    Packets,
    CeFraction,
    OwdMinMs,
    OwdMeanMs,
    OwdP99Ms,
    OwdMaxMs,
    Lost,
    CwndBytes,
    SrttMs,
    PacingBps,
    Alpha,
    /// Media: complete frames, late frames, stall time and the largest frame delay in the
    /// interval; the encoder target at the snapshot.
    Frames,
    FramesLate,
    StallMs,
    FrameDelayMaxMs,
    TargetBps,
    /// Applications: completions in the interval and the longest of them.
    Completions,
    CompletionMaxMs,
}

impl FlowCol {
    pub const ALL: [FlowCol; 19] = [
        FlowCol::ThroughputBps,
        FlowCol::Packets,
        FlowCol::CeFraction,
        FlowCol::OwdMinMs,
        FlowCol::OwdMeanMs,
        FlowCol::OwdP99Ms,
        FlowCol::OwdMaxMs,
        FlowCol::Lost,
        FlowCol::CwndBytes,
        FlowCol::SrttMs,
        FlowCol::PacingBps,
        FlowCol::Alpha,
        FlowCol::Frames,
        FlowCol::FramesLate,
        FlowCol::StallMs,
        FlowCol::FrameDelayMaxMs,
        FlowCol::TargetBps,
        FlowCol::Completions,
        FlowCol::CompletionMaxMs,
    ];
    pub fn header(self) -> &'static str {
        match self {
            FlowCol::ThroughputBps => "throughput_bps",
            FlowCol::Packets => "packets",
            FlowCol::CeFraction => "ce_fraction",
            FlowCol::OwdMinMs => "owd_min_ms",
            FlowCol::OwdMeanMs => "owd_mean_ms",
            FlowCol::OwdP99Ms => "owd_p99_ms",
            FlowCol::OwdMaxMs => "owd_max_ms",
            FlowCol::Lost => "lost",
            FlowCol::CwndBytes => "cwnd_bytes",
            FlowCol::SrttMs => "srtt_ms",
            FlowCol::PacingBps => "pacing_bps",
            FlowCol::Alpha => "alpha",
            FlowCol::Frames => "frames",
            FlowCol::FramesLate => "frames_late",
            FlowCol::StallMs => "stall_ms",
            FlowCol::FrameDelayMaxMs => "frame_delay_max_ms",
            FlowCol::TargetBps => "target_bps",
            FlowCol::Completions => "completions",
            FlowCol::CompletionMaxMs => "completion_max_ms",
        }
    }
}

/// Columns of `snapshots-queues.csv` after `time_s,queue`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueCol {
    BacklogPackets,
    BacklogBytes,
    SojournMeanMs,
    SojournMaxMs,
    SojournMaxLMs,
    SojournMaxCMs,
    Utilization,
    Probability,
    Marks,
    Drops,
    /// The link's capacity in the interval (a schedule's rate, a trace's or a process's).
    RateBps,
}

impl QueueCol {
    pub const ALL: [QueueCol; 11] = [
        QueueCol::BacklogPackets,
        QueueCol::BacklogBytes,
        QueueCol::SojournMeanMs,
        QueueCol::SojournMaxMs,
        QueueCol::SojournMaxLMs,
        QueueCol::SojournMaxCMs,
        QueueCol::Utilization,
        QueueCol::Probability,
        QueueCol::Marks,
        QueueCol::Drops,
        QueueCol::RateBps,
    ];
    pub fn header(self) -> &'static str {
        match self {
            QueueCol::BacklogPackets => "backlog_packets",
            QueueCol::BacklogBytes => "backlog_bytes",
            QueueCol::SojournMeanMs => "sojourn_mean_ms",
            QueueCol::SojournMaxMs => "sojourn_max_ms",
            QueueCol::SojournMaxLMs => "sojourn_max_l_ms",
            QueueCol::SojournMaxCMs => "sojourn_max_c_ms",
            QueueCol::Utilization => "utilization",
            QueueCol::Probability => "probability",
            QueueCol::Marks => "marks",
            QueueCol::Drops => "drops",
            QueueCol::RateBps => "rate_bps",
        }
    }
}

/// The time series of one flow or one queue: `time_s` and one vector per column, either as
/// long as `time_s` (NaN = no value in that row) or empty when the column has no value in
/// any row (not applicable to this flow, or absent from the file): a probe has no cwnd, no
/// media and no application columns, and a run may have 10 000 probes.
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub name: String,
    pub time_s: Vec<f64>,
    pub values: Vec<Vec<f64>>,
}

impl Series {
    fn new(name: &str, ncol: usize) -> Series {
        Series {
            name: name.to_string(),
            time_s: Vec::new(),
            values: vec![Vec::new(); ncol],
        }
    }
    /// Values of flow column `c` (use on flow series).
    pub fn flow(&self, c: FlowCol) -> &[f64] {
        let i = FlowCol::ALL.iter().position(|x| *x == c).unwrap_or(0);
        self.values.get(i).map(|v| v.as_slice()).unwrap_or(&[])
    }
    /// Values of queue column `c` (use on queue series).
    pub fn queue(&self, c: QueueCol) -> &[f64] {
        let i = QueueCol::ALL.iter().position(|x| *x == c).unwrap_or(0);
        self.values.get(i).map(|v| v.as_slice()).unwrap_or(&[])
    }
    /// `(t, v)` pairs of a column for drawing: NaN cells are left out, and where the series has
    /// a gap (a run of NaN cells, or a time step over three times the median step, e.g. a
    /// flow that stopped and restarted) a `(t, NaN)` marker tells the chart to break the line.
    pub fn points(&self, col: &[f64]) -> Vec<(f64, f64)> {
        let n = self.time_s.len().min(col.len());
        let mut steps: Vec<f64> = self.time_s[..n]
            .windows(2)
            .map(|w| w[1] - w[0])
            .filter(|d| *d > 0.0)
            .collect();
        let median = if steps.is_empty() {
            f64::INFINITY
        } else {
            let m = steps.len() / 2;
            *steps.select_nth_unstable_by(m, f64::total_cmp).1
        };
        let mut out: Vec<(f64, f64)> = Vec::with_capacity(n);
        let mut prev_t = f64::NAN;
        let mut gap = false;
        for (t, v) in self.time_s[..n].iter().zip(&col[..n]) {
            if !v.is_finite() {
                gap = true;
                continue;
            }
            if let Some(last) = out.last() {
                if (gap || *t - prev_t > 3.0 * median) && last.1.is_finite() {
                    out.push((prev_t, f64::NAN));
                }
            }
            out.push((*t, *v));
            prev_t = *t;
            gap = false;
        }
        out
    }
}

/// `snapshots-flows.csv` and `snapshots-queues.csv`, grouped by flow / queue in order of
/// first appearance. Either file may be absent (empty vector).
#[derive(Clone, Debug, Default)]
pub struct Snapshots {
    pub flows: Vec<Series>,
    pub queues: Vec<Series>,
}

impl Snapshots {
    pub fn flow(&self, name: &str) -> Option<&Series> {
        self.flows.iter().find(|s| s.name == name)
    }
    pub fn queue(&self, name: &str) -> Option<&Series> {
        self.queues.iter().find(|s| s.name == name)
    }
    /// Read the snapshot files of a results directory; `Ok(None)` if neither exists.
    pub fn load(dir: &Path) -> Result<Option<Snapshots>, ReportError> {
        let f = read_optional(&dir.join("snapshots-flows.csv"))?;
        let q = read_optional(&dir.join("snapshots-queues.csv"))?;
        if f.is_none() && q.is_none() {
            return Ok(None);
        }
        let mut s = Snapshots::default();
        if let Some((path, text)) = f {
            let hdr: Vec<&str> = FlowCol::ALL.iter().map(|c| c.header()).collect();
            s.flows = parse_series(&path, &text, "flow", &hdr)?;
        }
        if let Some((path, text)) = q {
            let hdr: Vec<&str> = QueueCol::ALL.iter().map(|c| c.header()).collect();
            s.queues = parse_series(&path, &text, "queue", &hdr)?;
        }
        Ok(Some(s))
    }
}

fn parse_series(path: &Path, text: &str, key: &str, cols: &[&str]) -> Result<Vec<Series>, ReportError> {
    let mut out: Vec<Series> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut last = usize::MAX; // series of the previous row
    csv::scan(
        path,
        text,
        |h| {
            let found = format!("found: {}", csv::truncate(&h.join(","), 200));
            let need = |name: &str| csv::column(path, h, name, &found);
            let idx: Vec<Option<usize>> = cols.iter().map(|c| h.iter().position(|x| x == c)).collect();
            Ok((need("time_s")?, need(key)?, idx))
        },
        |(ti, ki, idx), line, row| {
            let (ti, ki) = (*ti, *ki);
            let name = csv::field(path, line, key, &row[ki])?;
            // Rows come by time, then in the same order of series at every time: most
            // often a row belongs to the series after the previous row's, or (a file of one
            // series, or one written series by series) to the same.
            let next = if last.wrapping_add(1) < out.len() { last + 1 } else { 0 };
            let si = if next < out.len() && out[next].name == name {
                next
            } else if last < out.len() && out[last].name == name {
                last
            } else if let Some(i) = by_name.get(name) {
                *i
            } else {
                out.push(Series::new(name, cols.len()));
                by_name.insert(name.to_string(), out.len() - 1);
                out.len() - 1
            };
            last = si;
            let time = csv::num(path, line, "time_s", &row[ti])?;
            if time.is_nan() {
                return Err(ReportError::Csv {
                    path: path.to_path_buf(),
                    line,
                    reason: "column time_s: expected a time in seconds, found an empty cell".into(),
                });
            }
            let s = &mut out[si];
            let rows = s.time_s.len();
            s.time_s.push(time);
            for (ci, i) in idx.iter().enumerate() {
                // An absent column stays empty.
                let Some(i) = i else { continue };
                let v = csv::num(path, line, cols[ci], &row[*i])?;
                let col = &mut s.values[ci];
                // A column stays empty until its first value; then it gets a NaN for each
                // row before and a cell for every row after.
                if col.is_empty() {
                    if v.is_nan() {
                        continue;
                    }
                    col.resize(rows, f64::NAN);
                }
                col.push(v);
            }
            Ok(())
        },
    )?;
    Ok(out)
}

/// Which distribution a `distributions.csv` row belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DistKind {
    Owd,
    Rtt,
    Sojourn,
    /// A media flow's frame delay (first packet sent to last packet received).
    FrameDelay,
    /// A Wi-Fi station's MAC access delay in one direction (`<bss>/<station>/<down|up>`).
    AccessDelay,
}

/// One sampled CDF: `(value_ms, cdf)` pairs sorted by value.
#[derive(Clone, Debug)]
pub struct Distribution {
    pub kind: DistKind,
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// `distributions.csv`: CDFs sampled from the HDR histograms.
#[derive(Clone, Debug, Default)]
pub struct Distributions {
    items: Vec<Distribution>,
    /// Where each kind and name is in `items`: a run of 10 000 flows has as many
    /// distributions, and the report looks each one up. One map per kind, so a lookup
    /// borrows the name instead of building a key.
    index: HashMap<DistKind, HashMap<String, usize>>,
}

impl Distributions {
    pub fn get(&self, kind: DistKind, name: &str) -> Option<&Distribution> {
        let &i = self.index.get(&kind)?.get(name)?;
        self.items.get(i)
    }

    /// Every distribution, in the order of their first rows in the file.
    pub fn items(&self) -> &[Distribution] {
        &self.items
    }
    /// Read `distributions.csv`; `Ok(None)` if the file does not exist.
    pub fn load(dir: &Path) -> Result<Option<Distributions>, ReportError> {
        let Some((path, text)) = read_optional(&dir.join("distributions.csv"))? else {
            return Ok(None);
        };
        let mut d = Distributions::default();
        csv::scan(
            &path,
            &text,
            |h| {
                let need = |name: &str| csv::column(&path, h, name, "expected kind,name,value_ms,cdf");
                Ok((need("kind")?, need("name")?, need("value_ms")?, need("cdf")?))
            },
            |&(ki, ni, vi, ci), line, row| {
                let bad = |reason: String| ReportError::Csv {
                    path: path.clone(),
                    line,
                    reason,
                };
                let kind = match csv::field(&path, line, "kind", &row[ki])?.trim() {
                    "owd" => DistKind::Owd,
                    "rtt" => DistKind::Rtt,
                    "sojourn" => DistKind::Sojourn,
                    "frame_delay" => DistKind::FrameDelay,
                    "access_delay" => DistKind::AccessDelay,
                    other => {
                        return Err(bad(format!(
                            "column kind: expected owd, rtt, sojourn, frame_delay or access_delay, found {:?}",
                            csv::truncate(other, 40)
                        )))
                    }
                };
                let v = csv::num(&path, line, "value_ms", &row[vi])?;
                let c = csv::num(&path, line, "cdf", &row[ci])?;
                if v.is_nan() || c.is_nan() {
                    return Err(bad("value_ms and cdf must both be numbers".into()));
                }
                if !(0.0..=1.0).contains(&c) {
                    return Err(bad(format!("column cdf: {c} is outside 0..1")));
                }
                if v < 0.0 {
                    return Err(bad(format!("column value_ms: {v} is negative")));
                }
                let name = csv::field(&path, line, "name", &row[ni])?;
                // Rows come grouped by distribution: most belong to the one before.
                match d.items.last_mut() {
                    Some(x) if x.kind == kind && x.name == name => x.points.push((v, c)),
                    _ => match d.index.get(&kind).and_then(|m| m.get(name)) {
                        Some(&i) => d.items[i].points.push((v, c)),
                        None => {
                            d.index.entry(kind).or_default().insert(name.to_string(), d.items.len());
                            d.items.push(Distribution {
                                kind,
                                name: name.to_string(),
                                points: vec![(v, c)],
                            });
                        }
                    },
                }
                Ok(())
            },
        )?;
        for x in &mut d.items {
            x.points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        }
        Ok(Some(d))
    }
}

/// Everything the report reads from one results directory.
#[derive(Clone, Debug)]
pub struct Results {
    pub dir: PathBuf,
    pub summary: Summary,
    pub snapshots: Option<Snapshots>,
    pub distributions: Option<Distributions>,
    /// Date the run started (UTC, `YYYY-MM-DD`), from `run-info.json` when present.
    pub run_date: Option<String>,
}

/// The run's date from `run-info.json` (`started_utc`), if the file exists and holds one.
/// The file is informational: a missing or malformed one only leaves the date out.
fn run_date(dir: &Path) -> Option<String> {
    let text = std::fs::read(dir.join("run-info.json")).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&text).ok()?;
    let d = v.get("started_utc")?.as_str()?.get(..10)?;
    let ok = d.len() == 10
        && d.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    ok.then(|| d.to_string())
}

impl Results {
    /// Load a results directory. Only `summary.json` is required.
    pub fn load(dir: &Path) -> Result<Results, ReportError> {
        let summary = load_summary(dir)?;
        Ok(Results {
            dir: dir.to_path_buf(),
            summary,
            snapshots: Snapshots::load(dir)?,
            distributions: Distributions::load(dir)?,
            run_date: run_date(dir),
        })
    }
}

/// Read and check `dir/summary.json`.
pub fn load_summary(dir: &Path) -> Result<Summary, ReportError> {
    let path = dir.join("summary.json");
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(ReportError::missing_summary(dir)),
        Err(e) => return Err(ReportError::Io { path, source: e }),
    };
    let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| ReportError::Summary {
        path: path.clone(),
        reason: format!("not valid JSON: {e}"),
    })?;
    match v.get("schema_version") {
        Some(n) if n.as_u64() == Some(SCHEMA_VERSION as u64) => {}
        Some(n) => {
            return Err(ReportError::UnsupportedSchema {
                path,
                found: csv::truncate(&n.to_string(), 40),
                supported: SCHEMA_VERSION,
            })
        }
        None => {
            return Err(ReportError::Summary {
                path,
                reason: "no schema_version: not an l4s-lab summary.json".into(),
            })
        }
    }
    Summary::from_json(&bytes).map_err(|reason| ReportError::Summary { path, reason })
}

/// Read a file as UTF-8 text; `Ok(None)` if it does not exist.
fn read_optional(path: &Path) -> Result<Option<(PathBuf, String)>, ReportError> {
    match fs::read(path) {
        Ok(b) => match String::from_utf8(b) {
            Ok(s) => Ok(Some((path.to_path_buf(), s))),
            Err(e) => {
                let upto = &e.as_bytes()[..e.utf8_error().valid_up_to()];
                let line = upto.iter().filter(|c| **c == b'\n').count() + 1;
                Err(ReportError::Csv {
                    path: path.to_path_buf(),
                    line,
                    reason: "not UTF-8 text".into(),
                })
            }
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ReportError::Io {
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

#[cfg(test)]
mod run_info_tests {
    use super::run_date;

    #[test]
    fn run_date_from_run_info() {
        let d = std::env::temp_dir().join(format!("l4s-runinfo-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        assert_eq!(run_date(&d), None, "no file, no date");
        for (text, want) in [
            (r#"{"started_utc": "2026-11-22T05:33:12Z"}"#, Some("2026-11-22")),
            (r#"{"started_utc": "yesterday"}"#, None),
            (r#"{"started_utc": 5}"#, None),
            ("{", None),
        ] {
            std::fs::write(d.join("run-info.json"), text).unwrap();
            assert_eq!(run_date(&d).as_deref(), want, "{text}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}

#[cfg(test)]
mod series_tests {
    use super::*;

    #[test]
    fn a_column_is_empty_until_its_first_value_and_full_from_then() {
        // Rows by time, flows in one order; `b` gets a cwnd from the second row on, `a` never;
        // `srtt_ms` is absent from the file.
        let text = "time_s,flow,throughput_bps,cwnd_bytes\n\
                    0.1,a,100,\n0.1,b,200,\n\
                    0.2,a,110,\n0.2,b,210,3000\n\
                    0.3,a,,\n0.3,b,220,\n\
                    0.4,a,130,\n0.4,b,230,5000\n";
        let cols = ["throughput_bps", "cwnd_bytes", "srtt_ms"];
        let s = parse_series(Path::new("snapshots-flows.csv"), text, "flow", &cols).unwrap();
        let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let (a, b) = (&s[0], &s[1]);
        assert_eq!(a.time_s, [0.1, 0.2, 0.3, 0.4]);
        assert_eq!(a.values[0].len(), 4);
        assert!(a.values[0][2].is_nan() && a.values[0][3] == 130.0);
        assert!(a.values[1].is_empty(), "no cwnd in any row of a");
        assert!(
            a.values[2].is_empty() && b.values[2].is_empty(),
            "srtt_ms is not in the file"
        );
        let cwnd = &b.values[1];
        assert_eq!(cwnd.len(), 4);
        assert!(cwnd[0].is_nan() && cwnd[1] == 3000.0 && cwnd[2].is_nan() && cwnd[3] == 5000.0);
        // Drawn, an empty column is as a column of NaN.
        assert!(a.points(&a.values[1]).is_empty());
        // A gap (the NaN at 0.3 s) breaks the line after 0.2 s.
        let p = b.points(cwnd);
        assert_eq!(p.len(), 3);
        assert_eq!((p[0], p[1].0, p[2]), ((0.2, 3000.0), 0.2, (0.4, 5000.0)));
        assert!(p[1].1.is_nan());
    }
}
