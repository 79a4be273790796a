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
        timeline: None,
        stop: None,
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

/// The per-packet timeline joins the hosts' view with the queues': on a dumbbell each
/// delivered packet's one-way delay is exactly the access delay + its recorded bottleneck
/// sojourn + its serialisation time; lost packets end in a drop; marks match the queue.
#[test]
fn packet_timeline_is_consistent() {
    let text = dumbbell(
        "20Mbit",
        "20ms",
        "{ kind = \"dualpi2\" }",
        "6s",
        "0s",
        &(tcp("prague", "prague", "")
            + &tcp("cubic", "cubic", "ecn = \"off\"")
            + &probe("pr", 100.0, "200B", "ect1", "")),
    );
    let sc = l4s_scenario::load_str(&text, std::path::Path::new("t.toml")).unwrap();
    let bottleneck = sc.links.iter().position(|l| l.name == "bottleneck").unwrap() as u32;
    let rows = Arc::new(Mutex::new(Vec::new()));
    let opts = l4s_sim::RunOptions {
        timeline: Some(Box::new(Rows(rows.clone()))),
        ..Default::default()
    };
    let (s, _) = l4s_sim::run(sc, opts, &mut |_| {}).unwrap();
    let rows = rows.lock().unwrap();
    let sent: u64 = s.flows.iter().map(|f| f.sent_packets).sum();
    assert_eq!(rows.len() as u64, sent, "one row per data packet sent");
    let (mut delivered, mut lost, mut marked) = (0u64, 0u64, 0u64);
    for r in rows.iter() {
        let Some(hop) = r.hops[0] else {
            // Still on the access link or waiting in the queue when the run ended.
            assert!(
                !r.lost && r.arrival.is_none() && r.sent > l4s_core::Time::from_millis(5_900),
                "{r:?}"
            );
            continue;
        };
        assert_eq!(hop.link, bottleneck);
        assert!(r.hops[1].is_none());
        if hop.decision == l4s_sim::timeline::Decision::Mark {
            marked += 1;
            assert!(r.ecn_received.is_none() || r.ecn_received == Some(l4s_core::Ecn::Ce));
        }
        if r.lost {
            lost += 1;
            assert_eq!(hop.decision, l4s_sim::timeline::Decision::Drop);
            assert!(r.arrival.is_none());
        } else if let Some(a) = r.arrival {
            delivered += 1;
            let tx = l4s_core::Rate::mbps(20).tx_time(r.size as u64);
            assert_eq!(a - r.sent, Dur::from_millis(10) + hop.sojourn + tx, "{r:?}");
        }
    }
    assert_eq!(lost, s.flows.iter().map(|f| f.lost_packets).sum::<u64>());
    assert!(lost > 0, "the Not-ECT CUBIC flow must see drops");
    assert!(delivered + lost <= sent && delivered as f64 > 0.95 * sent as f64);
    // Handshake packets that are ECT can be marked too; data marks match within a few.
    assert!(
        marked.abs_diff(queue(&s, "bottleneck").marks) <= 4,
        "{marked} vs {}",
        queue(&s, "bottleneck").marks
    );
}
