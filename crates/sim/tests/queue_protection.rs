//! RFC 9957 Queue Protection on the bottleneck's DualPI2, end to end: an unresponsive
//! ECT(1) flow at 1.5× the link rate beside a TCP Prague flow and a 64 packet/s game flow
//! (ECT(1)). With QP, the hog is sanctioned (its packets redirected to C whenever the L
//! delay passes CRITICALqL), the responsive flows never are, and the game's delay stays
//! near CRITICALqL; without it the hog holds the L-queue at DualPI2's overload point.

mod common;
use common::*;

fn scenario(aqm: &str) -> String {
    let hog_pps = 1.5 * 50e6 / (1514.0 * 8.0);
    dumbbell(
        "50Mbit",
        "20ms",
        aqm,
        "20s",
        "5s",
        &(probe("hog", hog_pps, "1514B", "ect1", "start = \"5s\"")
            + &probe("game", 64.0, "200B", "ect1", "")
            + &tcp("prague", "prague", "")),
    )
}

#[test]
fn queue_protection_sanctions_the_unresponsive_flow() {
    let off = run_toml(&scenario("{ kind = \"dualpi2\" }"));
    let on = run_toml(&scenario("{ kind = \"dualpi2\", queue_protection = {} }"));
    let (why_off, why_on) = (brief(&off), brief(&on));
    eprintln!("without QP: {why_off}\nwith QP: {why_on}");
    assert!(queue(&off, "bottleneck").queue_protection.is_none());
    let qp = queue(&on, "bottleneck").queue_protection.clone().expect("QP summary");
    eprintln!("{qp:?}");
    assert_eq!(qp.critical_ql_ms, 1.0, "the step threshold by default");
    // The hog is named, and most sanctioned.
    let hog = &qp.flows[0];
    assert_eq!(hog.flow, "hog", "{qp:?}");
    assert!(hog.packets as f64 >= 0.95 * qp.sanctioned_packets as f64, "{qp:?}");
    assert!(hog.packets as f64 >= 0.05 * flow(&on, "hog").sent_packets as f64);
    // It starts at 5 s, is caught within 50 ms and sanctioned all along.
    assert!(hog.first_s >= 5.0 && hog.first_s < 5.05, "{hog:?}");
    assert!(hog.last_s > 19.0, "{hog:?}");
    // Sanctions happen only above CRITICALqL, with the score over the threshold.
    assert!(hog.max_qdelay_ms > 1.0 && hog.max_score_ms >= 4.0, "{hog:?}");
    // The game flow never is.
    assert!(qp.flows.iter().all(|f| f.flow != "game"), "{qp:?}");
    // The Prague flow's packets are sanctioned only while it builds a queue in slow start
    // and in the hog's first second, when the hog drives the L delay past CRITICALqL and
    // every packet there scores.
    if let Some(p) = qp.flows.iter().find(|f| f.flow == "prague") {
        assert!(p.last_s < 7.0, "{p:?}");
    }
    // The game flow's one-way delay: with QP it stays near the 10 ms base plus CRITICALqL
    // and a few frames; without, the hog holds L at DualPI2's overload point.
    let (g_off, g_on) = (flow(&off, "game").owd_ms.p99, flow(&on, "game").owd_ms.p99);
    assert!(g_off > 10.0 + 20.0, "{why_off}");
    assert!(g_on < 10.0 + 3.0, "{why_on}");
}

/// Responsive traffic only (two TCP Prague flows, the second from 10 s, and the game
/// flow) under DOCSIS's immediate AQM ramp with QP: sanctions are rare (a Prague flow's
/// queue-building bursts at start-up) and cost no throughput.
#[test]
fn responsive_flows_are_rarely_sanctioned_under_the_docsis_ramp() {
    let flows = probe("game", 64.0, "200B", "ect1", "")
        + &tcp("prague", "prague", "")
        + &tcp("prague2", "prague", "start = \"10s\"");
    let aqm = "{ kind = \"dualpi2\", step_mode = \"docsis\", max_rate = \"50Mbit\", queue_protection = {} }";
    let s = run_toml(&dumbbell("50Mbit", "20ms", aqm, "30s", "5s", &flows));
    let why = brief(&s);
    let q = queue(&s, "bottleneck");
    let qp = q.queue_protection.clone().unwrap();
    eprintln!("{why}\n{qp:?}");
    assert!(qp.flows.iter().all(|f| f.flow != "game"), "{qp:?}");
    // 90 of 122 648 packets (0.07 %) measured.
    assert!(
        qp.sanctioned_packets as f64 <= 0.002 * qp.checked_packets as f64,
        "{qp:?}"
    );
    assert!(q.utilization >= 0.95, "{why}");
    assert!(q.subqueues["L"].sojourn_ms.p99 <= 1.5, "{why}");
}

/// The same hog, game and Prague flows through the Low Latency DOCSIS dual queue, where
/// Queue Protection is on by default (MAXTH 1.164 ms at 50 Mbit/s).
#[test]
fn docsis_dual_queue_protects_the_game_flow_by_default() {
    let on = run_toml(&scenario("{ kind = \"docsis-dualq\", max_rate = \"50Mbit\" }"));
    let off = run_toml(&scenario(
        "{ kind = \"docsis-dualq\", max_rate = \"50Mbit\", queue_protection = { enabled = false } }",
    ));
    let (why_on, why_off) = (brief(&on), brief(&off));
    let qp = queue(&on, "bottleneck").queue_protection.clone().unwrap();
    eprintln!("with QP: {why_on}\nwithout: {why_off}\n{qp:?}");
    assert!(queue(&off, "bottleneck").queue_protection.is_none());
    assert_eq!(qp.flows[0].flow, "hog", "{qp:?}");
    assert!(
        qp.flows[0].packets as f64 >= 0.95 * qp.sanctioned_packets as f64,
        "{qp:?}"
    );
    assert!(qp.flows.iter().all(|f| f.flow != "game"), "{qp:?}");
    let (g_on, g_off) = (flow(&on, "game").owd_ms.p99, flow(&off, "game").owd_ms.p99);
    assert!(g_on < 10.0 + 3.0, "{why_on}");
    assert!(g_off > 10.0 + 5.0, "{why_off}");
}
