//! The Low Latency DOCSIS dual queue (`kind = "docsis-dualq"`) on a 50 Mbit/s bottleneck
//! with 20 ms RTT, end to end: DOCSIS-PIE holds a classic TCP near its 10 ms target, the
//! IAQM holds TCP Prague near MAXTH, the coupling shares the link between them, and the
//! scheduler leaves Classic its tenth against an unresponsive LL flow.

mod common;
use common::*;

const DQ: &str = "{ kind = \"docsis-dualq\", max_rate = \"50Mbit\" }";

#[test]
fn docsis_pie_holds_cubic_near_its_10ms_target() {
    let s = run_toml(&dumbbell(
        "50Mbit",
        "20ms",
        DQ,
        "40s",
        "10s",
        &tcp("cubic", "cubic", ""),
    ));
    let why = brief(&s);
    eprintln!("{why}");
    let q = queue(&s, "bottleneck");
    let c = &q.subqueues["C"];
    assert!(c.sojourn_ms.mean >= 5.0 && c.sojourn_ms.mean <= 20.0, "{why}");
    assert!(q.utilization >= 0.9, "{why}");
}

#[test]
fn iaqm_holds_prague_near_maxth() {
    let s = run_toml(&dumbbell(
        "50Mbit",
        "20ms",
        DQ,
        "30s",
        "10s",
        &tcp("prague", "prague", ""),
    ));
    let why = brief(&s);
    eprintln!("{why}");
    let q = queue(&s, "bottleneck");
    let l = &q.subqueues["L"];
    // MAXTH at 50 Mbit/s is 1.164 ms (MINTH is two 2000-byte frames, 640 µs).
    assert!(l.sojourn_ms.p99 <= 1.6, "{why}");
    assert!(l.sojourn_ms.p50 >= 0.2, "{why}");
    assert!(q.utilization >= 0.9, "{why}");
}

fn prague_over_cubic(aqm: &str, rtt: &str) -> f64 {
    let s = run_toml(&dumbbell(
        "50Mbit",
        rtt,
        aqm,
        "60s",
        "20s",
        &(tcp("cubic", "cubic", "") + &tcp("prague", "prague", "")),
    ));
    let r = flow(&s, "prague").throughput_bps / flow(&s, "cubic").throughput_bps;
    eprintln!("{aqm} {rtt}: Prague/CUBIC {r:.2}: {}", brief(&s));
    r
}

/// The coupling p_CL = 2·√p_C is DualPI2's law, so with DOCSIS-PIE's drop probability
/// taken per 1514-byte packet the split matches DualPI2's (2.1 at 20 ms, CUBIC paying
/// for the 10–15 ms of classic queue in its RTT). DOCSIS-PIE scales the drop probability
/// by size / `mean_pkt_size` (1024 B by default), so a 1514-byte classic flow sees 1.48×
/// the p_C the coupling uses, and gets less: 2.6–3.0 at 20 ms (measured), 1.7 at 60 ms.
#[test]
fn coupling_shares_between_cubic_and_prague() {
    let pi2 = prague_over_cubic("{ kind = \"dualpi2\" }", "20ms");
    let per_frame = prague_over_cubic(
        "{ kind = \"docsis-dualq\", max_rate = \"50Mbit\", mean_pkt_size = 1514 }",
        "20ms",
    );
    let dflt = prague_over_cubic(DQ, "20ms");
    assert!(
        (per_frame / pi2 - 1.0).abs() <= 0.25,
        "{per_frame} against DualPI2's {pi2}"
    );
    assert!((1.1..=1.8).contains(&(dflt / per_frame)), "{dflt} against {per_frame}");
    let long = prague_over_cubic(DQ, "60ms");
    assert!((0.5..=2.0).contains(&long), "{long}");
}

#[test]
fn classic_keeps_its_tenth_against_an_unresponsive_ll_flow() {
    let pps = 50e6 / (1514.0 * 8.0);
    let aqm = "{ kind = \"docsis-dualq\", max_rate = \"50Mbit\", queue_protection = { enabled = false } }";
    let s = run_toml(&dumbbell(
        "50Mbit",
        "20ms",
        aqm,
        "20s",
        "5s",
        &(probe("ll", pps, "1514B", "ect1", "") + &probe("classic", pps, "1514B", "not-ect", "")),
    ));
    let why = brief(&s);
    eprintln!("{why}");
    let q = queue(&s, "bottleneck");
    let (c, l) = (
        q.subqueues["C"].dequeued_bytes as f64,
        q.subqueues["L"].dequeued_bytes as f64,
    );
    let share = c / (c + l);
    // 26/256 = 10.2 %.
    assert!((0.095..=0.11).contains(&share), "classic share {share}: {why}");
}
