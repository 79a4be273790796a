//! The time series and distributions agree with the summary they sit beside.

mod common;
use common::*;
use l4s_core::Dur;
use std::io::Write;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);
impl Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
impl Buf {
    fn rows(&self) -> Vec<Vec<String>> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .map(|l| l.split(',').map(str::to_string).collect())
            .collect()
    }
}

#[test]
fn snapshots_and_distributions_match_the_summary() {
    let text = dumbbell(
        "40Mbit",
        "20ms",
        "{ kind = \"dualpi2\" }",
        "12s",
        "2s",
        &(tcp("prague", "prague", "")
            + &tcp("cubic", "cubic", "ecn = \"classic\"")
            + &probe("pr", 100.0, "200B", "ect1", "")),
    );
    let sc = l4s_scenario::load_str(&text, std::path::Path::new("t.toml")).unwrap();
    let (f, q, d) = (Buf::default(), Buf::default(), Buf::default());
    let opts = l4s_sim::RunOptions {
        seed: None,
        duration: None,
        snapshots: Some((Dur::from_millis(100), Box::new(f.clone()), Box::new(q.clone()))),
        distributions: Some(Box::new(d.clone())),
        pcap: None,
    };
    let (s, _) = l4s_sim::run(sc, opts, &mut |_| {}).unwrap();
    // Flow rows: 120 intervals x 3 flows, plus the header; every row as wide as the header.
    let fr = f.rows();
    assert_eq!(fr.len(), 1 + 120 * 3);
    assert!(fr.iter().all(|r| r.len() == fr[0].len()));
    let col = |name: &str| fr[0].iter().position(|c| c == name).unwrap();
    // Throughput over the statistics window (2..12 s) equals the summary's.
    for flow_name in ["prague", "cubic", "pr"] {
        let bits: f64 = fr[1..]
            .iter()
            .filter(|r| r[col("flow")] == flow_name && r[col("time_s")].parse::<f64>().unwrap() > 2.0 + 1e-9)
            .map(|r| r[col("throughput_bps")].parse::<f64>().unwrap() * 0.1)
            .sum();
        let want = flow(&s, flow_name).throughput_bps * 10.0;
        assert!((bits - want).abs() / want < 0.01, "{flow_name}: {bits} vs {want}");
        // The interval maxima bound the window's maximum.
        let max = fr[1..]
            .iter()
            .filter(|r| r[col("flow")] == flow_name && r[col("time_s")].parse::<f64>().unwrap() > 2.0 + 1e-9)
            .filter_map(|r| r[col("owd_max_ms")].parse::<f64>().ok())
            .fold(0.0, f64::max);
        assert!(
            (max - flow(&s, flow_name).owd_ms.max).abs() < 0.002,
            "{flow_name}: {max}"
        );
    }
    // Queue rows: marks per interval add up to the summary's marks.
    let qr = q.rows();
    let qc = |name: &str| qr[0].iter().position(|c| c == name).unwrap();
    let marks: u64 = qr[1..]
        .iter()
        .filter(|r| r[qc("queue")] == "bottleneck" && r[qc("time_s")].parse::<f64>().unwrap() > 2.0 + 1e-9)
        .map(|r| r[qc("marks")].parse::<u64>().unwrap())
        .sum();
    let qs = queue(&s, "bottleneck");
    assert!(marks.abs_diff(qs.marks) <= 2, "{marks} vs {}", qs.marks);
    // Distributions: the CDF reaches 0.99 at the summary's p99 (within HDR precision).
    let dr = d.rows();
    assert_eq!(dr[0], vec!["kind", "name", "value_ms", "cdf"]);
    for (kind, name, p99) in [
        ("owd", "pr", flow(&s, "pr").owd_ms.p99),
        ("sojourn", "bottleneck/L", qs.subqueues["L"].sojourn_ms.p99),
        ("sojourn", "bottleneck/C", qs.subqueues["C"].sojourn_ms.p99),
    ] {
        let pts: Vec<(f64, f64)> = dr
            .iter()
            .filter(|r| r[0] == kind && r[1] == name)
            .map(|r| (r[2].parse().unwrap(), r[3].parse().unwrap()))
            .collect();
        assert!(pts.len() > 50, "{kind} {name}");
        assert!(pts.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        let at = pts.iter().find(|p| p.1 >= 0.99).unwrap().0;
        assert!((at - p99).abs() <= 0.002 * p99 + 1e-6, "{kind} {name}: {at} vs {p99}");
        assert_eq!(pts.last().unwrap().1, 1.0);
    }
}
