//! End-to-end checks of scenario features: operator classification rules, UDP Prague
//! frame mode, multi-hop paths, flow start/stop.

mod common;
use common::*;

/// An operator rule sends DSCP 45 (NQB) to the L queue: a Not-ECT probe marked NQB sees
/// L4S latency while the same probe without the DSCP waits in the classic queue.
#[test]
fn dscp_rule_puts_nqb_traffic_in_the_l_queue() {
    let flows = tcp("cubic", "cubic", "ecn = \"classic\"")
        + &probe("nqb", 64.0, "200B", "not-ect", "dscp = 45")
        + &probe("plain", 64.0, "200B", "not-ect", "");
    let s = run_toml(&dumbbell(
        "50Mbit",
        "20ms",
        "{ kind = \"dualpi2\", l4s_dscp = [45] }",
        "30s",
        "10s",
        &flows,
    ));
    let why = brief(&s);
    eprintln!("dscp_rule: {why}");
    let nqb = flow(&s, "nqb");
    let plain = flow(&s, "plain");
    assert!(nqb.owd_ms.p99 <= 10.0 + 3.0, "{why}");
    assert!(plain.owd_ms.p50 >= 10.0 + 8.0, "{why}");
    // Without the rule both wait in C.
    let s2 = run_toml(&dumbbell(
        "50Mbit",
        "20ms",
        "{ kind = \"dualpi2\" }",
        "30s",
        "10s",
        &flows,
    ));
    assert!(flow(&s2, "nqb").owd_ms.p50 >= 10.0 + 8.0, "{}", brief(&s2));
}

/// UDP Prague frame mode (RT-Prague, udp_prague `GetCCInfoVideo`): 60 fps with a 10 ms budget sends
/// each frame at the controller's rate and then idles, so the flow uses about
/// budget/interval = 60 % of what its rate would carry, with L4S delay.
#[test]
fn udp_prague_frame_mode_runs_with_low_delay() {
    let flows = "[[flows]]\nname = \"rt\"\ntype = \"udp-prague\"\nsender = { fps = 60, frame_budget = \"10ms\" }\n\n";
    let s = run_toml(&dumbbell(
        "20Mbit",
        "20ms",
        "{ kind = \"dualpi2\" }",
        "30s",
        "10s",
        flows,
    ));
    let why = brief(&s);
    eprintln!("frame_mode: {why}");
    let f = flow(&s, "rt");
    assert!(f.throughput_bps > 5e6 && f.throughput_bps < 19e6, "{why}");
    assert!(f.owd_ms.p99 <= 10.0 + 3.0, "{why}");
    assert_eq!(f.class, "L4S");
}

/// The shipped multi-hop scenario: traffic from the server to the laptop crosses three
/// links; the 50 Mbit/s DualPI2 access link is the bottleneck, the base RTT is the sum of
/// the link delays both ways (2 × (5 + 4 + 1) ms), and the L4S flows keep L4S latency.
#[test]
fn multi_hop_path() {
    let s = run_file("scenarios/multi-hop.toml");
    let why = brief(&s);
    eprintln!("multi_hop: {why}");
    let p = flow(&s, "prague-download");
    assert_eq!(p.base_rtt_ms, 20.0);
    assert_eq!(p.src, "server");
    assert_eq!(p.dst, "laptop");
    let access = queue(&s, "access");
    assert!(access.utilization >= 0.95, "{why}");
    assert!(queue(&s, "core-link").utilization < 0.5, "{why}");
    assert!(access.subqueues["L"].sojourn_ms.p99 <= 2.0, "{why}");
    assert!(flow(&s, "probe-l4s").owd_ms.p99 <= 10.0 + 3.0, "{why}");
    // Bottleneck queues are listed first.
    assert!(s.queues[0].name == "core-link" || s.queues[0].name == "access");
}

/// Flows start and stop on time: a flow that stops at 5 s carries nothing in a window
/// that begins at 8 s, and one that starts at 5 s takes the whole link.
#[test]
fn flows_start_and_stop() {
    let flows = tcp("early", "prague", "stop = \"5s\"") + &tcp("late", "prague", "start = \"5s\"");
    let s = run_toml(&dumbbell(
        "20Mbit",
        "20ms",
        "{ kind = \"dualpi2\" }",
        "15s",
        "8s",
        &flows,
    ));
    let why = brief(&s);
    let early = flow(&s, "early");
    let late = flow(&s, "late");
    assert_eq!(early.sent_packets, 0, "{why}");
    assert_eq!(early.throughput_bps, 0.0, "{why}");
    assert!(late.throughput_bps >= 0.9 * 20e6, "{why}");
    // A finite transfer completes and stops by itself.
    let s = run_toml(&dumbbell(
        "20Mbit",
        "20ms",
        "{ kind = \"dualpi2\" }",
        "10s",
        "0s",
        &tcp("f", "prague", "bytes = \"1MB\""),
    ));
    let f = flow(&s, "f");
    assert!(
        (f.goodput_bps * 10.0 / 8.0 - 1e6).abs() < 2000.0,
        "delivered {} B: {}",
        f.goodput_bps * 10.0 / 8.0,
        brief(&s)
    );
}

/// Late packets count as lost (issue 3, part 3). Over an idle 10 Mbit/s path with 20 ms
/// RTT a 200 B probe's one-way delay is exactly 10 ms + 160 us of serialisation, so a
/// 10.1 ms budget makes every packet late and a 10.2 ms budget none.
#[test]
fn late_packets_count_as_lost() {
    // Staggered starts so that the probes never queue behind each other.
    let flows = probe(
        "tight",
        50.0,
        "200B",
        "ect1",
        "latency_budget = \"10.1ms\"\nstart = \"1ms\"",
    ) + &probe(
        "loose",
        50.0,
        "200B",
        "ect1",
        "latency_budget = \"10.2ms\"\nstart = \"3ms\"",
    ) + &probe("none", 50.0, "200B", "ect1", "start = \"5ms\"");
    let s = run_toml(&dumbbell(
        "10Mbit",
        "20ms",
        "{ kind = \"dualpi2\" }",
        "11s",
        "1s",
        &flows,
    ));
    let tight = flow(&s, "tight");
    // 50 pkt/s over the 10 s window (packets in flight at the edges may shift one).
    assert!(
        (499..=501).contains(&tight.received_packets),
        "{}",
        tight.received_packets
    );
    assert_eq!(tight.owd_ms.p50, 10.16);
    assert_eq!(tight.owd_ms.max, 10.16);
    assert_eq!(tight.late_packets, tight.received_packets);
    assert_eq!(tight.lost_packets, 0);
    assert!((tight.effective_loss_fraction - tight.received_packets as f64 / tight.sent_packets as f64).abs() < 1e-6);
    assert_eq!(tight.latency_budget_ms, Some(10.1));
    // Throughput over the window, by hand: 50 packets/s × 200 B × 8 = 80 kbit/s (± one
    // packet at the window's edges).
    assert!(
        (tight.throughput_bps - 80_000.0).abs() <= 200.0 * 8.0 / 10.0,
        "{}",
        tight.throughput_bps
    );
    let loose = flow(&s, "loose");
    assert!(loose.owd_ms.max <= 10.2 + 1e-9, "{}", loose.owd_ms.max);
    assert_eq!(loose.late_packets, 0);
    assert_eq!(loose.effective_loss_fraction, loose.loss_fraction);
    let none = flow(&s, "none");
    assert_eq!(none.latency_budget_ms, None);
    assert_eq!(none.late_packets, 0);
}

/// A bottleneck whose rate follows a schedule (issue 4 part 8, varying bandwidth): the
/// delivered rate follows each step, and with `repeat` the pattern starts again from the
/// configured rate. An unresponsive 36 Mbit/s load keeps the link saturated throughout.
#[test]
fn rate_schedule_steps_the_bottleneck() {
    let text = dumbbell(
        "20Mbit",
        "20ms",
        "{ kind = \"fifo\", limit = 100 }",
        "12s",
        "0s",
        &probe("load", 3000.0, "1514B", "not-ect", ""),
    )
    .replace(
        "aqm = {",
        "rate_schedule = { steps = [{ at = \"2s\", rate = \"5Mbit\" }, { at = \"4s\", rate = \"10Mbit\" }], repeat = \"6s\" }\naqm = {",
    );
    let sc = l4s_scenario::load_str(&text, std::path::Path::new("t.toml")).unwrap();
    // The changes over the run, one after the other (the schedule ends with the run).
    let sched = sc.links[0].schedule.clone().ending_at(sc.duration);
    let base = sc.links[0].rate.unwrap();
    let changes: Vec<(u64, u64)> = std::iter::successors(sched.first_change(), |t| sched.next_change_after(*t))
        .map(|t| {
            (
                t.as_millis_f64() as u64,
                sched.rate_at(base, t).bits_per_sec() / 1_000_000,
            )
        })
        .collect();
    assert_eq!(changes, vec![(2000, 5), (4000, 10), (6000, 20), (8000, 5), (10000, 10)]);
    let rows = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let opts = l4s_sim::RunOptions {
        timeline: Some(Box::new(Rows(rows.clone()))),
        ..Default::default()
    };
    let (s, _) = l4s_sim::run(sc, opts, &mut |_| {}).unwrap();
    let rows = rows.lock().unwrap();
    // Delivered Mbit/s in [a, b) seconds, from the arrival times.
    let rate = |a: f64, b: f64| {
        let bytes: u64 = rows
            .iter()
            .filter(|r| r.arrival.is_some_and(|t| (a..b).contains(&t.as_secs_f64())))
            .map(|r| r.size as u64)
            .sum();
        bytes as f64 * 8.0 / (b - a) / 1e6
    };
    // The link is saturated; allow 0.5 s after each step for the queue to settle.
    for (a, b, want) in [
        (1.0, 2.0, 20.0),
        (2.5, 4.0, 5.0),
        (4.5, 6.0, 10.0),
        (6.5, 8.0, 20.0),
        (8.5, 10.0, 5.0),
        (10.5, 12.0, 10.0),
    ] {
        let got = rate(a, b);
        assert!(
            (got - want).abs() <= 0.01 * want,
            "[{a}, {b}) s: {got:.2} Mbit/s, schedule says {want}; {}",
            brief(&s)
        );
    }
}

/// `cbr` flows: the VoIP and game presets send at their nominal rates and are measured
/// like probes (one-way delay per packet).
#[test]
fn cbr_presets_send_at_their_rates() {
    let flows = "[[flows]]\nname = \"voice\"\ntype = \"cbr\"\nprofile = \"voip\"\necn = \"ect1\"\n\n[[flows]]\nname = \"game\"\ntype = \"cbr\"\nprofile = \"game\"\npps = 120\n";
    let s = run_toml(&dumbbell("10Mbit", "20ms", "{ kind = \"dualpi2\" }", "5s", "1s", flows));
    let v = flow(&s, "voice");
    assert_eq!(v.kind, "cbr");
    assert_eq!(v.class, "L4S");
    // 50 packets/s of 214 B = 85.6 kbit/s.
    assert!((v.throughput_bps - 85_600.0).abs() < 1_000.0, "{}", v.throughput_bps);
    let g = flow(&s, "game");
    // pps overrides the preset: 120 packets/s of 300 B = 288 kbit/s.
    assert!((g.throughput_bps - 288_000.0).abs() < 3_000.0, "{}", g.throughput_bps);
    assert!(v.owd_ms.p99 < 11.0 && v.owd_ms.p50 >= 10.0, "{:?}", v.owd_ms);
}
