//! The same scenario through both backends of the runner library.

use l4s_fwd::netns::RunId;
use l4s_lab::{Backend, Live, Outputs, Simulator};
use std::path::Path;

/// Root is needed; outside CI a non-root run skips with a message, in CI it fails.
fn root() -> bool {
    if l4s_live::run::is_root() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the live tests need root (CI runs as root)"
    );
    eprintln!("skipped: the live tests need root");
    false
}

/// No namespace of run `id` is left.
fn no_namespaces_left(id: &RunId) {
    let left: Vec<String> = l4s_fwd::netns::list_netns()
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with(&id.prefix()))
        .collect();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
}

/// Run `sc` live and `check` the summary. A run that misses the bands while the
/// self-check says the host held the testbed back is measured again (up to three runs);
/// one that misses them undisturbed fails the test.
fn live_until_measured(
    sc: &l4s_scenario::Scenario,
    check: impl Fn(&l4s_metrics::summary::Summary) -> Result<(), String>,
) {
    for attempt in 0.. {
        let id = RunId::generate();
        let mut live = Live {
            run_id: Some(id.clone()),
            ..Live::default()
        };
        let (live, _) = live.run(sc.clone(), Outputs::default(), &mut |_| {}).unwrap();
        no_namespaces_left(&id);
        let disrupted = live.testbed.as_ref().is_some_and(|t| t.disrupted);
        match check(&live) {
            Ok(()) => break,
            Err(e) if disrupted && attempt < 2 => println!("run {attempt}, held back: {e}"),
            Err(e) if disrupted => {
                println!("the host held every run back; the bands are not asserted: {e}");
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
}

fn scenario(text: &str) -> l4s_scenario::Scenario {
    l4s_scenario::load_str(text, Path::new("live-test.toml")).unwrap()
}

/// `text` with its dumbbell topology replaced by two nodes, `a` and `b`, joined by one
/// link, and every flow sent from `a` to `b`: flows that must agree on a per-node or
/// per-route kernel setting, sharing one (for `preflight`).
fn on_one_node(text: &str) -> l4s_scenario::Scenario {
    let from = text.find("type = \"dumbbell\"").expect("a dumbbell");
    let to = from + text[from..].find("\n[[flows]]").expect("flows");
    let custom = "type = \"custom\"\n[[topology.nodes]]\nname = \"a\"\n[[topology.nodes]]\nname = \"b\"\n[[topology.links]]\nfrom = \"a\"\nto = \"b\"\nrate = \"100Mbit\"\ndelay = \"10ms\"";
    let text = format!("{}{custom}{}", &text[..from], &text[to..]);
    scenario(&text.replace("cc = \"cubic\"\n", "cc = \"cubic\"\nfrom = \"a\"\nto = \"b\"\n"))
}

/// `sender.slow_start_after_idle = false` on a sync flow switches the kernel's window
/// restart off in its namespace (net.ipv4.tcp_slow_start_after_idle = 0): its chunks after
/// a pause then go at the grown window, while the default flow restarts (as the simulator
/// does, same scenario). Two flows on one node that disagree are refused.
#[test]
fn slow_start_after_idle_is_set_per_sender_live_as_in_the_simulator() {
    let text = r#"[scenario]
name = "idle-restart"
duration = "8s"
warmup = "1s"
[topology]
type = "dumbbell"
rate = "200Mbit"
rtt = "20ms"
aqm = { kind = "fifo", limit = 2000 }
[[flows]]
name = "restart"
type = "sync"
cc = "cubic"
app = { chunk = "300kB", pause = "600ms" }
[[flows]]
name = "no-restart"
type = "sync"
cc = "cubic"
sender = { slow_start_after_idle = false }
app = { chunk = "300kB", pause = "600ms" }
"#;
    // Refused: both on one node (a custom topology with one sender).
    let shared = on_one_node(text);
    let e = Live::default().preflight(&shared).unwrap_err().to_string();
    assert!(e.contains("slow_start_after_idle") && e.contains("\"a\""), "{e}");
    let sc = scenario(text);
    let p50 = |s: &l4s_metrics::summary::Summary, n: &str| {
        let f = s.flows.iter().find(|f| f.name == n).unwrap();
        let c = &f.app.as_ref().unwrap().completions["chunk"];
        assert!(c.count >= 5, "{n}: {} chunks", c.count);
        c.time_ms.p50
    };
    let (sim, _) = Simulator.run(sc.clone(), Outputs::default(), &mut |_| {}).unwrap();
    let (sim_on, sim_off) = (p50(&sim, "restart"), p50(&sim, "no-restart"));
    if !root() {
        return;
    }
    let id = RunId::generate();
    let mut live = Live {
        run_id: Some(id.clone()),
        ..Live::default()
    };
    let (live, _) = live.run(sc, Outputs::default(), &mut |_| {}).unwrap();
    no_namespaces_left(&id);
    let (live_on, live_off) = (p50(&live, "restart"), p50(&live, "no-restart"));
    println!(
        "300 kB chunks after 600 ms pauses, p50: restart {sim_on:.1} ms sim / {live_on:.1} ms live; no restart {sim_off:.1} ms sim / {live_off:.1} ms live"
    );
    // 207 segments, 12 ms of serialisation: with the grown window one way plus that and
    // the pacing spread (under 2 RTT); restarting from a quarter of the window or less
    // takes more slow-start rounds. (Measured: sim 22.5 vs 70.9 ms; live 30.3–30.4 vs
    // 50.7–92.5 ms over three runs.)
    for (on, off, who) in [(sim_on, sim_off, "sim"), (live_on, live_off, "live")] {
        assert!(off < 40.0, "{who}: no restart {off} ms");
        assert!(on > 1.4 * off && on > off + 10.0, "{who}: restart {on} ms vs {off} ms");
    }
}

/// `sender.tlp = false` switches tail loss probes (RFC 8985 §7) off live as in the
/// simulator: the testbed writes net.ipv4.tcp_early_retrans = 0 in that sender's namespace
/// (3, Linux's default, elsewhere). Responses of 8 kB over a link that loses every packet
/// for 5 ms (mean) about every 50 ms: a burst that takes a response's last segments
/// leaves nothing to trigger fast recovery, so without probes it waits for the
/// retransmission timeout (at least 200 ms), where a probe comes two RTTs after the last
/// ACK (RFC 8985 §7.2; plus a delayed-ACK allowance of 200 ms when one segment is left, in
/// both backends, so probes do not save every tail).
#[test]
fn tail_loss_probes_are_switched_per_sender_live_as_in_the_simulator() {
    let text = r#"[scenario]
name = "tlp"
duration = "31s"
warmup = "1s"
seed = 1
[topology]
type = "dumbbell"
rate = "50Mbit"
rtt = "20ms"
aqm = { kind = "fifo", limit = 1000 }
loss = { model = "gilbert-elliott", loss_good = 0.0, loss_bad = 1.0, mean_good = "50ms", mean_bad = "5ms" }
[[flows]]
name = "tlp"
type = "request-response"
cc = "cubic"
app = { response = "8kB", think = "20ms" }
[[flows]]
name = "no-tlp"
type = "request-response"
cc = "cubic"
sender = { tlp = false }
app = { response = "8kB", think = "20ms" }
"#;
    let sc = scenario(text);
    let times = |s: &l4s_metrics::summary::Summary, n: &str| {
        let f = s.flows.iter().find(|f| f.name == n).unwrap();
        let c = &f.app.as_ref().unwrap().completions["response"];
        (c.count, c.time_ms.mean, c.time_ms.p90, c.time_ms.p99)
    };
    // The tails a probe takes in about 2 RTT wait for the RTO without: the flow without
    // probes has RTOs in its p99, the one with probes none in its p90, and in the
    // simulator (seed 1) the one without takes longer on average. (Measured: simulated,
    // seeds 1-3, mean 42.1-53.3 ms with probes against 63.9-85.6 ms without; live, four
    // runs, 57.9-72.8 against 74.6-94.8 ms, p90 97-127 ms with probes, p99 590-848 ms
    // without. The live means are not asserted: a few RTOs in some 300 responses make
    // them, and one run that the host did not hold back measured 72.8 against 74.6 ms.
    // Live, the kernel's own count of probes is asserted instead, below.)
    let check = |s: &l4s_metrics::summary::Summary, means: bool| -> Result<(), String> {
        let ((n_on, on, p90_on, _), (n_off, off, _, p99_off)) = (times(s, "tlp"), times(s, "no-tlp"));
        let report = format!(
            "responses with probes: {n_on}, mean {on:.1} ms, p90 {p90_on:.1} ms; without: {n_off}, mean {off:.1} ms, p99 {p99_off:.1} ms"
        );
        println!("{report}");
        (n_on >= 200 && n_off >= 200 && (!means || off > 1.15 * on) && p90_on < 200.0 && p99_off > 250.0)
            .then_some(())
            .ok_or(report)
    };
    // Two flows that send from one node and disagree are refused.
    let shared = on_one_node(text);
    let e = Live::default().preflight(&shared).unwrap_err().to_string();
    assert!(
        e.contains("sender.tlp = false") && e.contains("tcp_early_retrans") && e.contains("\"a\""),
        "{e}"
    );
    let (sim, _) = Simulator.run(sc.clone(), Outputs::default(), &mut |_| {}).unwrap();
    check(&sim, true).unwrap();
    if !root() {
        return;
    }
    // The sysctl as each server's namespace has it, and the probes its kernel has sent
    // (TcpExt TCPLossProbes), read while the run goes on.
    let servers: Vec<(String, usize)> = sc.flows.iter().map(|f| (f.name.clone(), f.src)).collect();
    let id = RunId::generate();
    let mut seen: Vec<(String, String)> = Vec::new();
    let mut probes = vec![None; servers.len()];
    let mut live = Live {
        run_id: Some(id.clone()),
        ..Live::default()
    };
    let mut read = |_| {
        for (k, (name, node)) in servers.iter().enumerate() {
            let ns = l4s_fwd::netns::Netns::named(&format!("{}n{node}", id.prefix()));
            if seen.len() < servers.len() {
                let v = ns.read_sysctl("net/ipv4/tcp_early_retrans").unwrap();
                seen.push((name.clone(), v.trim().to_string()));
            }
            // The namespace is gone once the run is over: keep the last count read.
            if let Ok(Some(n)) = ns.run(|| loss_probes(&std::fs::read_to_string("/proc/thread-self/net/netstat").ok()?))
            {
                probes[k] = Some(n);
            }
        }
    };
    let (first, _) = live.run(sc.clone(), Outputs::default(), &mut read).unwrap();
    no_namespaces_left(&id);
    assert_eq!(
        seen,
        [
            ("tlp".to_string(), "3".to_string()),
            ("no-tlp".to_string(), "0".to_string())
        ]
    );
    println!("loss probes sent live: {probes:?} (tlp, no-tlp)");
    assert!(probes[0].is_some_and(|n| n >= 5), "{probes:?}");
    assert_eq!(probes[1], Some(0));
    // A run that misses the bands on a host that held it back is measured again.
    match check(&first, false) {
        Ok(()) => {}
        Err(_) if first.testbed.as_ref().is_some_and(|t| t.disrupted) => live_until_measured(&sc, |s| check(s, false)),
        Err(e) => panic!("{e}"),
    }
}

/// TcpExt TCPLossProbes of a `/proc/net/netstat` text: a line of names, then one of values.
fn loss_probes(netstat: &str) -> Option<u64> {
    let mut lines = netstat.lines().filter(|l| l.starts_with("TcpExt:"));
    let (names, values) = (lines.next()?, lines.next()?);
    let k = names.split_whitespace().position(|n| n == "TCPLossProbes")?;
    values.split_whitespace().nth(k)?.parse().ok()
}

/// An initial window other than Linux's 10 segments (`app.initial_cwnd`, a `tcp` flow's
/// `cc_params.initial_cwnd`) is the route's live: `initcwnd` on the sender's route to the
/// receiver and `initrwnd` on the receiver's route back. 40 kB responses (28 segments) on
/// new connections over 20 ms: with 10 segments they take the handshake and two rounds
/// (3 RTT), with 32 the handshake and one (2 RTT), plus serialisation and pacing.
/// (Measured: simulated 68.6 and 45.8 ms, live 69.8 and 46.7 ms in two runs.)
#[test]
fn the_initial_window_is_the_scenarios_live_as_in_the_simulator() {
    let text = r#"[scenario]
name = "iw"
duration = "11s"
warmup = "1s"
seed = 1
[topology]
type = "dumbbell"
rate = "100Mbit"
rtt = "20ms"
aqm = { kind = "fifo", limit = 1000 }
[[flows]]
name = "iw10"
type = "request-response"
cc = "cubic"
app = { response = "40kB", persistent = false, think = "100ms" }
[[flows]]
name = "iw32"
type = "request-response"
cc = "cubic"
app = { response = "40kB", persistent = false, think = "100ms", initial_cwnd = 32 }
"#;
    let sc = scenario(text);
    // Two flows from one node to another that disagree are refused.
    let shared = on_one_node(text);
    let e = Live::default().preflight(&shared).unwrap_err().to_string();
    assert!(
        e.contains("initial windows of 10 and 32") && e.contains("initcwnd"),
        "{e}"
    );
    let p50 = |s: &l4s_metrics::summary::Summary, n: &str| {
        let f = s.flows.iter().find(|f| f.name == n).unwrap();
        let c = &f.app.as_ref().unwrap().completions["response"];
        (c.count, c.time_ms.p50)
    };
    let check = |s: &l4s_metrics::summary::Summary| -> Result<(), String> {
        let ((n10, t10), (n32, t32)) = (p50(s, "iw10"), p50(s, "iw32"));
        let report =
            format!("40 kB on a new connection, p50: 10 segments {t10:.1} ms ({n10}), 32 segments {t32:.1} ms ({n32})");
        println!("{report}");
        (n10 >= 50 && n32 >= 50 && (60.0..75.0).contains(&t10) && (40.0..52.0).contains(&t32))
            .then_some(())
            .ok_or(report)
    };
    let (sim, _) = Simulator.run(sc.clone(), Outputs::default(), &mut |_| {}).unwrap();
    check(&sim).unwrap();
    if !root() {
        return;
    }
    live_until_measured(&sc, check);
}

/// `sender.mss` below the links' 1448 bytes is the kernel's segment size live
/// (`TCP_MAXSEG`, the timestamps option's 12 bytes added): 5 MB takes 3454 full segments of
/// the default and 5000 of 1000 bytes, in both backends.
#[test]
fn the_segment_size_is_the_scenarios_live_as_in_the_simulator() {
    let sc = scenario(
        r#"[scenario]
name = "mss"
duration = "4s"
warmup = "0s"
seed = 1
[topology]
type = "dumbbell"
rate = "50Mbit"
rtt = "20ms"
aqm = { kind = "fifo", limit = 1000 }
[[flows]]
name = "default"
type = "tcp"
cc = "cubic"
bytes = "5MB"
[[flows]]
name = "small"
type = "tcp"
cc = "cubic"
bytes = "5MB"
sender = { mss = 1000 }
"#,
    );
    let check = |backend: &str, s: &l4s_metrics::summary::Summary| {
        for (name, mss) in [("default", 1448u64), ("small", 1000)] {
            let f = s.flows.iter().find(|f| f.name == name).unwrap();
            let want = 5_000_000u64.div_ceil(mss);
            println!(
                "{backend} {name}: {} data packets received, {want} segments of {mss} B",
                f.received_packets
            );
            // (Within 2 %: the other size would be 45 % off.)
            assert!(
                f.received_packets.abs_diff(want) * 50 <= want,
                "{backend} {name}: {}",
                f.received_packets
            );
        }
    };
    let (sim, _) = Simulator.run(sc.clone(), Outputs::default(), &mut |_| {}).unwrap();
    check("sim", &sim);
    if !root() {
        return;
    }
    let id = RunId::generate();
    let mut live = Live {
        run_id: Some(id.clone()),
        ..Live::default()
    };
    let (live, _) = live.run(sc, Outputs::default(), &mut |_| {}).unwrap();
    no_namespaces_left(&id);
    check("live", &live);
}

/// A Gilbert–Elliott loss link, the link model added to prove the `Link` seam: the same
/// scenario in both backends loses the model's stationary share of 100 000 packets,
/// within 10 %. Probes at 10 000 packets/s over a 100 Mbit/s bottleneck (no queue), stays
/// of 2 ms (good, 1 % loss) and 0.5 ms (bad, 50 % loss): (2·0.01 + 0.5·0.5)/2.5 = 10.8 %,
/// about 4 000 stays in the bad state over the 10 s window.
const LOSSY: &str = r#"[scenario]
name = "gilbert-elliott"
duration = "11s"
warmup = "1s"
[topology]
type = "dumbbell"
rate = "100Mbit"
rtt = "10ms"
aqm = { kind = "fifo", limit = 1000 }
loss = { model = "gilbert-elliott", loss_good = 0.01, loss_bad = 0.5, mean_good = "2ms", mean_bad = "500us" }
[[flows]]
name = "probe"
type = "probe"
pps = 10000
size = "200B"
"#;

fn check_loss(backend: &str, s: &l4s_metrics::summary::Summary) {
    let f = &s.flows[0];
    let want = 0.108;
    println!(
        "gilbert-elliott {backend}: {} of {} lost = {:.4} (stationary {want})",
        f.lost_packets, f.sent_packets, f.loss_fraction
    );
    assert!(f.sent_packets >= 99_000, "{backend}: {} sent", f.sent_packets);
    assert!(
        (f.loss_fraction / want - 1.0).abs() < 0.1,
        "{backend}: loss {} against the stationary {want}",
        f.loss_fraction
    );
    // No queue drops: every loss is the wire's.
    assert_eq!(s.queues[0].drops, 0, "{backend}");
}

#[test]
fn gilbert_elliott_link_loses_its_stationary_share_in_both_backends() {
    let sc = scenario(LOSSY);
    let (sim, _) = Simulator.run(sc.clone(), Outputs::default(), &mut |_| {}).unwrap();
    check_loss("sim", &sim);
    if !root() {
        return;
    }
    let id = RunId::generate();
    let mut live = Live {
        run_id: Some(id.clone()),
        ..Live::default()
    };
    let (live, stats) = live.run(sc, Outputs::default(), &mut |_| {}).unwrap();
    no_namespaces_left(&id);
    check_loss("live", &live);
    // The forwarder on the bottleneck counted the model's losses.
    let elements = &stats.live.unwrap().elements;
    let wire: u64 = elements
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["stats"]["directions"].as_array().cloned().unwrap_or_default())
        .map(|d| d["wire_losses"].as_u64().unwrap_or(0))
        .sum();
    assert!(
        wire as f64 >= 0.9 * live.flows[0].lost_packets as f64,
        "{wire} wire losses"
    );
}

/// Probes at 1.45 times a 10 Mbit/s FIFO's rate for the last 2 s of the run leave about
/// 740 of its 1000 packets queued at the end, 0.9 s of delay, and nothing dropped. Neither
/// backend may count them lost: the simulator counts only what it drops; live receivers
/// read on after the end for about the worst one-way delay (500 ms would leave a few
/// hundred "lost").
#[test]
fn packets_still_queued_at_the_end_are_not_lost_in_either_backend() {
    let sc = scenario(
        r#"
[scenario]
duration = "5s"
warmup = "1s"
[topology]
type = "dumbbell"
rate = "10Mbit"
rtt = "10ms"
aqm = { kind = "fifo", limit = 1000 }
[[flows]]
name = "probe"
type = "probe"
pps = 1200
size = "1514B"
start = "3s"
"#,
    );
    let check = |backend: &str, s: &l4s_metrics::summary::Summary| -> Result<(), String> {
        let (f, q) = (&s.flows[0], &s.queues[0]);
        println!(
            "{backend}: {} sent, {} lost, owd max {:.0} ms, queue drops {}",
            f.sent_packets, f.lost_packets, f.owd_ms.max, q.drops
        );
        if q.drops > 0 {
            return Err(format!("{backend}: the queue dropped {} packets", q.drops));
        }
        // 2 s at 1200/s; the last arrivals in the window waited over 0.6 s, the last
        // packets sent 0.9 s (which 500 ms of grace would count lost: over 300 of them).
        if f.sent_packets < 2300 || f.owd_ms.max < 550.0 {
            return Err(format!(
                "{backend}: {} sent, owd max {} ms",
                f.sent_packets, f.owd_ms.max
            ));
        }
        if f.lost_packets != 0 {
            return Err(format!("{backend}: {} lost of {}", f.lost_packets, f.sent_packets));
        }
        Ok(())
    };
    let (sim, _) = Simulator.run(sc.clone(), Outputs::default(), &mut |_| {}).unwrap();
    check("sim", &sim).unwrap();
    if !root() {
        return;
    }
    live_until_measured(&sc, |live| check("live", live));
}

/// A trace-driven bottleneck (Mahimahi's format, one 1504-byte delivery opportunity per
/// millisecond): UDP Prague fills it in both backends, the same link model under each, and
/// gets the trace's capacity.
#[test]
fn a_trace_link_delivers_its_capacity_in_both_backends() {
    // Removed when it goes out of scope, also when a check below fails.
    let d = tempfile::Builder::new().prefix("l4s-lab-trace-").tempdir().unwrap();
    let trace = d.path().join("one-per-ms");
    std::fs::write(&trace, "1\n").unwrap();
    let text = format!(
        r#"[scenario]
name = "trace-link"
duration = "6s"
warmup = "1s"
[topology]
type = "dumbbell"
trace = "{}"
reverse_rate = "10Mbit"
rtt = "20ms"
aqm = {{ kind = "dualpi2" }}
[[flows]]
name = "bulk"
type = "udp-prague"
"#,
        trace.display()
    );
    let sc = scenario(&text);
    // 1 504 000 bytes of IP packets a second: 1002.7 packets of 1500 B, 12.14 Mbit/s of
    // 1514-byte frames.
    let capacity_frames_bps = 1_504_000.0 / 1500.0 * 1514.0 * 8.0;
    let check = |who: &str, s: &l4s_metrics::summary::Summary| -> Result<(), String> {
        let f = &s.flows[0];
        let q = &s.queues[0];
        println!(
            "trace link {who}: {:.3} Mbit/s, utilisation {:.4}, queue p99 {:.2} ms, CE {:.3}",
            f.throughput_bps / 1e6,
            q.utilization,
            q.sojourn_ms.p99,
            f.ce_fraction
        );
        assert_eq!(q.rate_bps, 12_032_000, "{who}: the trace's mean rate is reported");
        assert!(f.ce_fraction > 0.0, "{who}: the L queue marks");
        // An opportunity that finds the queue empty is lost, so UDP Prague's short L queue
        // leaves a few percent unused. Live, the sender runs in userspace and a busy host
        // wakes it late now and then, which leaves more opportunities empty than in the
        // simulator: on a host running 1.5 times slow, eight live runs measured 0.918 to
        // 0.951 (the simulator 0.967), and the testbed's self-check flagged only some of
        // them. The link is judged by the simulator's band; live, by a wider one.
        let (util, thr) = if who == "live" { (0.90, 0.90) } else { (0.95, 0.93) };
        if q.utilization > util
            && f.throughput_bps > thr * capacity_frames_bps
            && f.throughput_bps < 1.01 * capacity_frames_bps
        {
            Ok(())
        } else {
            Err(format!(
                "{who}: {} bit/s against {capacity_frames_bps}, utilisation {}",
                f.throughput_bps, q.utilization
            ))
        }
    };
    let (sim, _) = Simulator.run(sc.clone(), Outputs::default(), &mut |_| {}).unwrap();
    check("sim", &sim).unwrap();
    if root() {
        live_until_measured(&sc, |live| check("live", live));
    }
}

/// HARQ on the bottleneck (BLER 0.1, HARQ round trip 8 ms): a light probe stream's one-way
/// delay is the path's for most packets and a round trip more for about one in ten, in both
/// backends (the same link model).
#[test]
fn harq_delays_a_tenth_of_the_blocks_by_a_round_trip_in_both_backends() {
    let sc = scenario(
        r#"[scenario]
name = "harq"
duration = "11s"
warmup = "1s"
[topology]
type = "dumbbell"
rate = "50Mbit"
rtt = "20ms"
harq = { bler = 0.1, rtt = "8ms" }
[[flows]]
name = "probe"
type = "probe"
pps = 200
ecn = "ect1"
"#,
    );
    let check = |who: &str, s: &l4s_metrics::summary::Summary| {
        let f = &s.flows[0];
        let o = &f.owd_ms;
        println!(
            "harq {who}: OWD p50 {:.3} p90 {:.3} p99 {:.3} ms, lost {}",
            o.p50, o.p90, o.p99, f.lost_packets
        );
        assert_eq!(f.lost_packets, 0, "{who}: HARQ loses nothing");
        // 10 ms one way: most packets at the path's delay; 10 % of the blocks take one
        // round trip more, 1 % two and 0.1 % three, so the p99 lies at +8 or +16 ms. (A
        // host that held the live testbed back can only add to the median.)
        let held_back = s.testbed.as_ref().is_some_and(|t| t.disrupted);
        assert!(o.p50 < 10.6 || held_back, "{who}: {o:?}");
        assert!(o.p99 >= 17.9 && o.p99 < 30.0, "{who}: {o:?}");
    };
    let (sim, _) = Simulator.run(sc.clone(), Outputs::default(), &mut |_| {}).unwrap();
    check("sim", &sim);
    if root() {
        let id = RunId::generate();
        let mut live = Live {
            run_id: Some(id.clone()),
            ..Live::default()
        };
        let (live, _) = live.run(sc, Outputs::default(), &mut |_| {}).unwrap();
        no_namespaces_left(&id);
        check("live", &live);
    }
}

/// The shipped `cellular-video-call` (its L4S variant, 20 s): both backends run the same
/// cellular link model (slots, HARQ, the uplink's request–grant loop), so the call's
/// median one-way delay agrees within 25 % and its p99 within 50 %, each direction.
#[test]
fn the_cellular_video_call_agrees_between_the_backends() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/cellular-video-call.toml");
    let text = std::fs::read_to_string(&p).unwrap();
    let mut sc = l4s_scenario::variants_of(&text, &p)
        .unwrap()
        .into_iter()
        .find(|v| v.0.as_deref() == Some("l4s"))
        .unwrap()
        .1;
    sc.apply_overrides(None, Some(l4s_core::Dur::from_secs(20))).unwrap();
    let owd = |s: &l4s_metrics::summary::Summary, n: &str| {
        let f = s.flows.iter().find(|f| f.name == n).unwrap();
        (f.owd_ms.p50, f.owd_ms.p99)
    };
    // Both report the radio side: HARQ at its 10 % block error rate, and an idle phone's
    // grant delay, 4 ms + (K2 + 1) · 1 ms = 9 ms plus up to the 10 ms SR period.
    let radio = |who: &str, s: &l4s_metrics::summary::Summary| -> Result<(), String> {
        for q in &s.queues {
            let r = q
                .radio
                .as_ref()
                .ok_or_else(|| format!("{who}: {} has no radio summary", q.name))?;
            let per_block = r.harq_retransmissions as f64 / r.blocks as f64;
            if (per_block - 0.1 / 0.9).abs() >= 0.03 {
                return Err(format!("{who} {}: {r:?}", q.name));
            }
            if let Some(u) = &r.uplink {
                let mean = u.grant_delay_mean_ms.unwrap_or_default();
                println!(
                    "cellular call {who} {}: grant delay mean {mean:.2} ms, {} SRs",
                    q.name, u.scheduling_requests
                );
                if !(9.0..=19.0).contains(&mean) || u.scheduling_requests <= 50 {
                    return Err(format!("{who} {}: {u:?}", q.name));
                }
            }
        }
        Ok(())
    };
    let (sim, _) = Simulator.run(sc.clone(), Outputs::default(), &mut |_| {}).unwrap();
    radio("sim", &sim).unwrap();
    for n in ["call-ab", "call-ba"] {
        let (p50, p99) = owd(&sim, n);
        println!("cellular call {n} sim: OWD p50 {p50:.2} p99 {p99:.2} ms");
        // The path's 10 ms, HARQ and the uplink's grants (14 ms on average) at least.
        assert!(p50 > 15.0 && p99 < 150.0, "{n}: {p50} / {p99}");
    }
    if !root() {
        return;
    }
    live_until_measured(&sc, |live| {
        radio("live", live)?;
        let mut bad = Vec::new();
        for n in ["call-ab", "call-ba"] {
            let (s50, s99) = owd(&sim, n);
            let (l50, l99) = owd(live, n);
            println!("cellular call {n} live: OWD p50 {l50:.2} p99 {l99:.2} ms (sim {s50:.2} / {s99:.2})");
            if (l50 - s50).abs() > 0.25 * s50 || (l99 - s99).abs() > 0.5 * s99 {
                bad.push(format!("{n}: live {l50:.2}/{l99:.2} ms, sim {s50:.2}/{s99:.2} ms"));
            }
        }
        if bad.is_empty() {
            Ok(())
        } else {
            Err(bad.join("; "))
        }
    });
}

/// A live run asked for a run id that a running testbed holds is refused before anything
/// is built, with the id and what to do.
#[test]
fn a_run_id_in_use_is_refused_before_anything_is_built() {
    if !root() {
        return;
    }
    let id = RunId::generate();
    let mut other = l4s_fwd::netns::Testbed::new(id.clone());
    let _ns = other.add_netns("x").unwrap();
    let sc = scenario(
        "[scenario]\nduration = \"2s\"\n[topology]\ntype = \"dumbbell\"\nrate = \"10Mbit\"\nrtt = \"20ms\"\n[[flows]]\nname = \"p\"\ntype = \"probe\"\n",
    );
    let live = Live {
        run_id: Some(id.clone()),
        ..Live::default()
    };
    let e = live.preflight(&sc).unwrap_err().to_string();
    assert!(
        e.contains("is in use") && e.contains(id.as_str()) && e.contains("l4s cleanup"),
        "{e}"
    );
    drop(other);
    no_namespaces_left(&id);
}

/// RFC 9957 Queue Protection on the bottleneck's DualPI2: an unresponsive ECT(1) flow at
/// 1.5× the 20 Mbit/s link beside a 64 packet/s ECT(1) game flow. In both backends the
/// hog is sanctioned and named in the summary, the game flow never is, and the game's
/// delay through the bottleneck stays near CRITICALqL (DualPI2's 1 ms step; the DOCSIS
/// dual queue's MAXTH, 2.12 ms at 20 Mbit/s) rather than at the overload point.
const QP: &str = r#"
[scenario]
name = "qp"
duration = "6s"
warmup = "1s"
seed = 3

[topology]
type = "dumbbell"
rate = "20Mbit"
rtt = "10ms"
aqm = { kind = "dualpi2", queue_protection = {} }

[[flows]]
name = "hog"
type = "probe"
pps = 2477
size = "1514B"
ecn = "ect1"
start = "1s"

[[flows]]
name = "game"
type = "probe"
pps = 64
size = "200B"
ecn = "ect1"
"#;

fn check_qp(backend: &str, s: &l4s_metrics::summary::Summary) -> Result<(), String> {
    let q = s.queues.iter().find(|q| q.name == "bottleneck").unwrap();
    let qp = q.queue_protection.as_ref().ok_or(format!("{backend}: no QP summary"))?;
    let game = s.flows.iter().find(|f| f.name == "game").unwrap();
    let why = format!("{backend}: {qp:?}; game owd {:?}", game.owd_ms);
    println!("{why}");
    let hog = qp.flows.first().ok_or(format!("nothing sanctioned: {why}"))?;
    if hog.flow != "hog" || (hog.packets as f64) < 0.95 * qp.sanctioned_packets as f64 {
        return Err(format!("the hog is not the sanctioned flow: {why}"));
    }
    if hog.first_s < 1.0 || hog.first_s > 1.5 {
        return Err(format!("first sanction not within 0.5 s of the hog's start: {why}"));
    }
    if qp.flows.iter().any(|f| f.flow == "game") {
        return Err(format!("the game flow was sanctioned: {why}"));
    }
    // 5 ms one way plus CRITICALqL, a frame in service (0.6 ms at 20 Mbit/s) and the
    // frames that pass while the hog's score grows; the overload point is tens of ms.
    if game.owd_ms.p99 > 5.0 + 4.0 {
        return Err(format!("the game flow's p99 one-way delay is not protected: {why}"));
    }
    Ok(())
}

#[test]
fn queue_protection_sanctions_the_hog_in_both_backends() {
    // DualPI2 with Queue Protection, and the DOCSIS dual queue (where it is on by default).
    let docsis = QP.replace(
        "aqm = { kind = \"dualpi2\", queue_protection = {} }",
        "aqm = { kind = \"docsis-dualq\", max_rate = \"20Mbit\" }",
    );
    for text in [QP, docsis.as_str()] {
        let sc = scenario(text);
        let (sim, _) = Simulator.run(sc.clone(), Outputs::default(), &mut |_| {}).unwrap();
        check_qp("sim", &sim).unwrap();
        if !root() {
            return;
        }
        live_until_measured(&sc, |s| check_qp("live", s));
    }
}

/// A 60 packet/s game stream from a home behind a DOCSIS 3.1 cable modem (2 ms MAPs,
/// 20 Mbit/s upstream) to a server 10 ms beyond the CMTS: each packet finds the modem idle
/// and waits for a request–grant loop (1.9 to 8.3 ms, 5 ms on average under docsis-ns3's
/// rules). The same upstream model runs in both backends, so their one-way delays agree.
const CABLE_GAME: &str = r#"
[scenario]
name = "cable-game"
duration = "8s"
warmup = "2s"
seed = 1

[topology]
type = "custom"

[[topology.nodes]]
name = "home"
[[topology.nodes]]
name = "cmts"
[[topology.nodes]]
name = "server"

[[topology.links]]
name = "cable"
from = "cmts"
to = "home"
kind = "docsis"
rate = "200Mbit"
reverse_rate = "20Mbit"
reverse_aqm = { kind = "docsis-dualq", max_rate = "20Mbit" }
docsis = { map_interval = "2ms", peak_rate = "40Mbit" }

[[topology.links]]
from = "cmts"
to = "server"
delay = "10ms"

[[flows]]
name = "game"
type = "cbr"
profile = "game"
from = "home"
to = "server"
ecn = "ect1"
"#;

#[test]
fn the_docsis_upstream_delays_a_game_stream_alike_in_both_backends() {
    let sc = scenario(CABLE_GAME);
    let (sim, _) = Simulator.run(sc.clone(), Outputs::default(), &mut |_| {}).unwrap();
    let s = sim.flows[0].owd_ms;
    println!("sim: {s:?}");
    // The access delay: 10 ms to the server plus the loop (mean 5.03 ms, at most 8.28 ms).
    assert!((14.0..=16.5).contains(&s.p50), "{s:?}");
    assert!(s.max <= 10.0 + 8.3 + 0.1, "{s:?}");
    // The modem's summary: every packet found it idle, so each one's grant delay (arrival
    // to the start of the frame that carries it) is counted: 1.6 to 8 ms.
    let up = sim.queues.iter().find(|q| q.name == "cable-reverse").unwrap();
    let radio = up.radio.as_ref().expect("the upstream's summary");
    let ul = radio.uplink.as_ref().unwrap();
    println!("{radio:?}");
    assert_eq!(radio.direction, "upstream");
    assert!(ul.grants >= 350 && ul.grant_delays >= 350, "{ul:?}");
    let mean = ul.grant_delay_mean_ms.unwrap();
    assert!((3.5..=6.0).contains(&mean), "{ul:?}");
    agree_live(&sc, s);
}

/// The same game stream with Proactive Grant Service for the modem's LL flow (2 Mbit/s, a
/// minislot in every 135 µs frame): no request–grant loop, but a 328-byte MAC frame takes
/// 7 grants (what the modem requests for the rest is covered by the PGS grants that
/// follow). A packet waits at most a frame for a grant's preparation and one more to
/// its first grant, six frames to its last, and reaches the CMTS 310 µs after that frame
/// starts: 1.39 ms at most. Both backends agree.
#[test]
fn pgs_spares_a_game_stream_the_request_grant_loop_in_both_backends() {
    let sc = scenario(&CABLE_GAME.replace(
        "peak_rate = \"40Mbit\" }",
        "peak_rate = \"40Mbit\", pgs_rate = \"2Mbit\", pgs_interval = \"135us\" }",
    ));
    let (sim, _) = Simulator.run(sc.clone(), Outputs::default(), &mut |_| {}).unwrap();
    let s = sim.flows[0].owd_ms;
    println!("sim: {s:?}");
    assert!(s.p50 > 10.0 + 0.135 * 7.0 && s.max <= 10.0 + 1.39 + 0.01, "{s:?}");
    let up = sim.queues.iter().find(|q| q.name == "cable-reverse").unwrap();
    let ul = up
        .radio
        .as_ref()
        .and_then(|r| r.uplink.as_ref())
        .expect("the upstream's summary");
    println!("{ul:?}");
    // The modem still asks for what the next grant does not cover, about once a packet,
    // but the PGS grants that follow cover the request: no other grant is made.
    assert!(
        ul.scheduling_requests <= 2 * s.count && ul.grants == ul.pgs_grants,
        "{ul:?}"
    );
    // Every packet found the flow empty: its wait for the first grant that carries it is
    // at most two frames.
    assert!(
        ul.grant_delays >= s.count && ul.grant_delay_p99_ms == Some(1.0),
        "{ul:?}"
    );
    assert!(ul.pgs_grants > 40_000 && ul.pgs_grants_unused < ul.pgs_grants, "{ul:?}");
    agree_live(&sc, s);
}

/// A burst down a DOCSIS downstream shaped to 10 Mbit/s with a 1 MB traffic burst: 0.2 s
/// at 36 Mbit/s (900 kB) fits the bucket, so it crosses at the channel's pace with no
/// queue (a wire at 10 Mbit/s would queue half a second of it). Each packet waits for the
/// next 22.5 µs OFDM symbol and then 152.5 µs of pipeline, interleaver and plant. The same
/// downstream model runs in both backends, so their one-way delays agree.
#[test]
fn a_docsis_downstream_lets_a_burst_through_its_bucket_in_both_backends() {
    let sc = scenario(
        &CABLE_GAME
            .replace("duration = \"8s\"", "duration = \"4s\"")
            .replace("warmup = \"2s\"", "warmup = \"1s\"")
            .replace("rate = \"200Mbit\"", "rate = \"10Mbit\"")
            .replace("peak_rate = \"40Mbit\" }", "peak_rate = \"40Mbit\", ds_max_traffic_burst = \"1MB\" }")
            .replace(
                "name = \"game\"\ntype = \"cbr\"\nprofile = \"game\"\nfrom = \"home\"\nto = \"server\"",
                "name = \"burst\"\ntype = \"cbr\"\nprofile = \"game\"\npps = 3000\nsize = \"1500B\"\nstart = \"2s\"\nstop = \"2.2s\"\nfrom = \"server\"\nto = \"home\"",
            ),
    );
    let (sim, _) = Simulator.run(sc.clone(), Outputs::default(), &mut |_| {}).unwrap();
    let f = &sim.flows[0];
    let s = f.owd_ms;
    println!("sim: {s:?}");
    assert_eq!(f.name, "burst");
    assert!(s.count >= 590 && f.loss_fraction == 0.0, "{s:?}");
    assert!(
        s.p50 >= 10.0 + 0.1525 && s.max <= 10.0 + 0.1525 + 0.0225 + 0.01,
        "{s:?}"
    );
    let down = sim.queues.iter().find(|q| q.name == "cable").unwrap();
    let radio = down.radio.as_ref().expect("the downstream's summary");
    println!("{radio:?}");
    assert_eq!(radio.direction, "downstream");
    // One 1528-byte MAC frame per symbol: 1528 of 4816 bytes.
    assert!(
        radio.blocks >= 590 && (radio.block_fill - 1528.0 / 4816.0).abs() < 0.01,
        "{radio:?}"
    );
    agree_live(&sc, s);
}

/// `docsis-game-upload` as classic endpoints (the `classic-aqm` variant, 15 s): the game
/// stream beside a kernel CUBIC upload through the modem's request–grant loop and
/// DOCSIS-PIE. The game waits behind the upload's classic queue (about 10 ms, PIE's
/// target) and the loop; the live run agrees with the simulator (the L4S variant needs a
/// kernel with TCP Prague).
#[test]
fn docsis_game_upload_with_a_cubic_upload_agrees_in_both_backends() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/docsis-game-upload.toml");
    let mut sc = l4s_scenario::load_variants(&p)
        .unwrap()
        .into_iter()
        .find(|(n, _)| n.as_deref() == Some("classic-aqm"))
        .expect("variant classic-aqm")
        .1;
    sc.apply_overrides(None, Some(l4s_core::Dur::from_secs(15))).unwrap();
    let (sim, _) = Simulator.run(sc.clone(), Outputs::default(), &mut |_| {}).unwrap();
    let s = sim.flows[0].owd_ms;
    println!("sim: {s:?}");
    assert_eq!(sim.flows[0].name, "game");
    // 10 ms to the server, the loop (about 5 ms), PIE's 10 ms target and the sawtooth.
    assert!(s.p50 > 10.0 + 8.0 && s.p99 < 10.0 + 8.3 + 30.0, "{s:?}");
    agree_live(&sc, s);
}

/// Live (as root), the game's one-way delay agrees with the simulator's `s`: p50 within
/// 25 %, p99 within 50 %.
fn agree_live(sc: &l4s_scenario::Scenario, s: l4s_metrics::Percentiles) {
    if !root() {
        return;
    }
    live_until_measured(sc, |live| {
        let l = &live.flows[0].owd_ms;
        println!("live: {l:?}");
        let close = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * b;
        if close(l.p50, s.p50, 0.25) && close(l.p99, s.p99, 0.5) {
            Ok(())
        } else {
            Err(format!(
                "live p50 {} p99 {} against sim {} {}",
                l.p50, l.p99, s.p50, s.p99
            ))
        }
    });
}

/// The shipped `wifi-cloud-gaming` (its `dualq-classic` variant, which kernel TCP can run:
/// a CUBIC download beside the game, 20 s): both backends run the same BSS model (EDCA
/// contention, A-MPDUs, BlockAck retransmissions at the station's 10 % frame error rate,
/// DualPI2 per station and category at the AP), the live one between real namespaces, so
/// the game's median RTT agrees within 25 % and its p99 within 50 %, and the laptop's
/// downlink takes most of the air in both.
#[test]
fn the_wifi_cloud_game_agrees_between_the_backends() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/wifi-cloud-gaming.toml");
    let text = std::fs::read_to_string(&p).unwrap();
    let mut sc = l4s_scenario::variants_of(&text, &p)
        .unwrap()
        .into_iter()
        .find(|v| v.0.as_deref() == Some("dualq-classic"))
        .unwrap()
        .1;
    sc.apply_overrides(None, Some(l4s_core::Dur::from_secs(20))).unwrap();
    let rtt = |s: &l4s_metrics::summary::Summary| {
        let f = s.flows.iter().find(|f| f.name == "game").unwrap();
        let r = f.rtt_ms.unwrap_or(f.owd_ms);
        (r.p50, r.p99)
    };
    let airtime = |s: &l4s_metrics::summary::Summary| -> f64 {
        let w = s.wifi.first().expect("a Wi-Fi section");
        w.stations[0].down.airtime_share
    };
    let (sim, _) = Simulator.run(sc.clone(), Outputs::default(), &mut |_| {}).unwrap();
    let (s50, s99) = rtt(&sim);
    let s_air = airtime(&sim);
    println!("wifi game sim: RTT p50 {s50:.2} p99 {s99:.2} ms, laptop downlink airtime {s_air:.3}");
    // The 8 ms path, Wi-Fi access and the C queue's 15 ms target under the download.
    assert!(s50 > 8.0 && s99 < 200.0, "{s50} / {s99}");
    assert!(s_air > 0.5, "{s_air}");
    if !root() {
        return;
    }
    live_until_measured(&sc, |live| {
        let (l50, l99) = rtt(live);
        let l_air = airtime(live);
        println!("wifi game live: RTT p50 {l50:.2} p99 {l99:.2} ms (sim {s50:.2} / {s99:.2}), airtime {l_air:.3}");
        if (l50 - s50).abs() > 0.25 * s50 || (l99 - s99).abs() > 0.5 * s99 {
            return Err(format!("live {l50:.2}/{l99:.2} ms, sim {s50:.2}/{s99:.2} ms"));
        }
        if (l_air - s_air).abs() > 0.25 * s_air {
            return Err(format!("airtime live {l_air:.3}, sim {s_air:.3}"));
        }
        Ok(())
    });
}

/// Two stations of one BSS, live: a distant one (HE 20 MHz, 1 stream, MCS 0, 8.6 Mbit/s)
/// and a near one (HE 80 MHz, 2 streams, MCS 9, 960.8 Mbit/s), each sent more than it can
/// take by an unresponsive 1514-byte stream. With the default round-robin scheduler the
/// two get about as many TXOPs, so the slow one holds most of the air (the rate anomaly)
/// and the fast one gets a fraction of its rate. The live forwarder drives the one model
/// for both stations' interfaces: the airtime shares and the fast station's throughput
/// agree with the simulator's within 10 %.
#[test]
fn two_stations_share_one_channel_live_as_in_the_simulator() {
    let sc = scenario(
        r#"[scenario]
name = "wifi-anomaly"
duration = "8s"
warmup = "2s"
[topology]
type = "custom"
[[topology.nodes]]
name = "server"
[[topology.nodes]]
name = "ap"
[[topology.nodes]]
name = "far"
[[topology.nodes]]
name = "near"
[[topology.links]]
from = "server"
to = "ap"
delay = "2ms"
[[topology.wifi]]
name = "wifi"
ap = "ap"
aqm = { kind = "fifo", limit = 200 }
[[topology.wifi.stations]]
node = "far"
bandwidth = 20
nss = 1
mcs = 0
[[topology.wifi.stations]]
node = "near"
mcs = 9
[[flows]]
name = "to-far"
type = "probe"
from = "server"
to = "far"
pps = 1000
size = "1514B"
[[flows]]
name = "to-near"
type = "probe"
from = "server"
to = "near"
pps = 12000
size = "1514B"
"#,
    );
    let figures = |s: &l4s_metrics::summary::Summary| {
        let w = s.wifi.first().expect("a Wi-Fi section");
        let near = s.flows.iter().find(|f| f.name == "to-near").unwrap();
        (
            w.stations[0].down.airtime_share,
            w.stations[1].down.airtime_share,
            near.throughput_bps / 1e6,
        )
    };
    let (sim, _) = Simulator.run(sc.clone(), Outputs::default(), &mut |_| {}).unwrap();
    let (far, near, mbps) = figures(&sim);
    println!("wifi anomaly sim: airtime far {far:.3} near {near:.3}, near {mbps:.1} Mbit/s");
    assert!(far > 0.7 && near < 0.25, "{far} / {near}");
    assert!(mbps > 50.0 && mbps < 200.0, "{mbps}");
    if !root() {
        return;
    }
    live_until_measured(&sc, |live| {
        let (lf, ln, lm) = figures(live);
        println!("wifi anomaly live: airtime far {lf:.3} near {ln:.3}, near {lm:.1} Mbit/s");
        let close = |a: f64, b: f64| (a - b).abs() <= 0.1 * b;
        if close(lf, far) && close(ln, near) && close(lm, mbps) {
            Ok(())
        } else {
            Err(format!(
                "live {lf:.3}/{ln:.3}/{lm:.1}, sim {far:.3}/{near:.3}/{mbps:.1}"
            ))
        }
    });
}

/// A cell of two phones (`phones`) on base station `gnb`, 2 ms from a `server` and 2 ms
/// each way beyond the radio, round robin, 1 ms FDD slots, with `queue` (its `aqm` or
/// `ue_aqm` line), for 8 s after a 2 s warm-up: the text up to its UEs, which follow.
fn two_phone_cell(name: &str, phones: [&str; 2], queue: &str) -> String {
    format!(
        r#"[scenario]
name = "{name}"
duration = "8s"
warmup = "2s"
[topology]
type = "custom"
[[topology.nodes]]
name = "server"
[[topology.nodes]]
name = "gnb"
[[topology.nodes]]
name = "{}"
[[topology.nodes]]
name = "{}"
[[topology.links]]
from = "server"
to = "gnb"
delay = "2ms"
[[topology.cell]]
name = "cell"
base_station = "gnb"
scheduler = "rr"
delay = "2ms"
{queue}
ran = {{ slot = "1ms" }}"#,
        phones[0], phones[1]
    )
}

/// A cell of two phones: a game's input (200-byte packets 120 a second, so at every phase
/// of the slots) goes up from one
/// beside an upload that fills the other's uplink. Without a configured grant each input
/// packet finds the phone's buffer empty and asks: an SR at the next occasion (every 5 ms),
/// the grant 1 ms later, the slot K2 = 2 after it. With one (a quarter of every other
/// 1 ms slot) it waits for the next occasion only, and the upload keeps 1 - 0.25/2 of the
/// uplink, in the simulator and live (the same cell model drives the testbed's medium).
#[test]
fn a_configured_grant_spares_a_phones_input_the_request_in_a_shared_cell_live_as_in_the_simulator() {
    let text = two_phone_cell(
        "cell-cg",
        ["gamer", "uploader"],
        r#"ue_aqm = { kind = "fifo", limit = 200 }"#,
    ) + r#"
[[topology.cell.ues]]
node = "gamer"
rate = "40Mbit"
reverse_rate = "10Mbit"
CG
[[topology.cell.ues]]
node = "uploader"
rate = "40Mbit"
reverse_rate = "10Mbit"
[[flows]]
name = "input"
type = "probe"
from = "gamer"
to = "server"
pps = 120
size = "200B"
[[flows]]
name = "upload"
type = "probe"
from = "uploader"
to = "server"
pps = 1200
size = "1514B"
"#;
    let without = scenario(&text.replace("CG", ""));
    let with = scenario(&text.replace("CG", "configured_grant = \"2ms\"\nconfigured_grant_share = 0.25"));
    // The input's one-way delay p50 and p99, the upload's Mbit/s, and the gamer's uplink:
    // SRs and configured-grant occasions used.
    let figures = |s: &l4s_metrics::summary::Summary| {
        let f = |n: &str| s.flows.iter().find(|f| f.name == n).unwrap();
        let up = s
            .queues
            .iter()
            .find(|q| q.name == "cell/up/gamer")
            .and_then(|q| q.radio.as_ref())
            .and_then(|r| r.uplink.clone())
            .unwrap();
        (
            f("input").owd_ms.p50,
            f("input").owd_ms.p99,
            f("upload").throughput_bps / 1e6,
            up.scheduling_requests,
            up.configured_grants_used,
        )
    };
    let (sim0, _) = Simulator.run(without.clone(), Outputs::default(), &mut |_| {}).unwrap();
    let (sim1, _) = Simulator.run(with.clone(), Outputs::default(), &mut |_| {}).unwrap();
    let (p50_0, p99_0, up0, sr0, _) = figures(&sim0);
    let (p50_1, p99_1, up1, sr1, cg1) = figures(&sim1);
    println!("cell cg sim, without: input OWD p50 {p50_0:.2} p99 {p99_0:.2} ms, {sr0} SRs, upload {up0:.2} Mbit/s");
    println!("cell cg sim, with: input OWD p50 {p50_1:.2} p99 {p99_1:.2} ms, {sr1} SRs, {cg1} occasions used, upload {up1:.2} Mbit/s");
    // Without: 4 ms of path, then an SR wait (0-5 ms), 1 ms to the grant, K2 = 2 slots
    // and the slot itself: 8-13 ms. With: the next occasion (0-2 ms) and its slot, 5-7 ms.
    // 720 input packets in the 6 s window: each asks without, each takes an occasion with.
    assert!(sr0 >= 715 && sr1 == 0 && cg1 >= 715, "{sr0} {sr1} {cg1}");
    assert!(p50_0 > 8.0 && p99_0 < 14.0, "{p50_0} {p99_0}");
    assert!(p50_1 > 4.5 && p99_1 < 7.5, "{p50_1} {p99_1}");
    // The reservation is the upload's loss: 10 Mbit/s less an eighth, against less the
    // SR grants' full blocks (1250 bytes for 200, 120 a second: 1.2 Mbit/s) without one.
    assert!((up1 - 8.75).abs() < 0.35 && (up0 - 8.75).abs() < 0.35, "{up0} {up1}");
    if !root() {
        return;
    }
    for (sc, sim, name) in [(&without, &sim0, "without"), (&with, &sim1, "with")] {
        let (s50, s99, sup, ssr, scg) = figures(sim);
        live_until_measured(sc, |live| {
            let (l50, l99, lup, lsr, lcg) = figures(live);
            println!(
                "cell cg live, {name}: input OWD p50 {l50:.2} p99 {l99:.2} ms, {lsr} SRs, {lcg} occasions used, upload {lup:.2} Mbit/s"
            );
            let close = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * b;
            let counts = |a: u64, b: u64| (a as f64 - b as f64).abs() <= 0.1 * (b as f64).max(10.0);
            if close(l50, s50, 0.25)
                && close(l99, s99, 0.5)
                && close(lup, sup, 0.1)
                && counts(lsr, ssr)
                && counts(lcg, scg)
            {
                Ok(())
            } else {
                Err(format!(
                    "{name}: live {l50:.2}/{l99:.2} ms {lup:.2} Mbit/s {lsr} SRs {lcg} CG, sim {s50:.2}/{s99:.2} ms {sup:.2} Mbit/s {ssr} SRs {scg} CG"
                ))
            }
        });
    }
}

/// A cell of two phones under the round-robin scheduler, both downlinks overloaded by
/// probes: each phone gets every other slot, so the far phone (10 Mbit/s channel) carries
/// about 5 Mbit/s and the near one (40 Mbit/s) about 20, in the simulator and live (the
/// same cell model drives the live testbed's medium forwarder).
#[test]
fn two_phones_share_one_cell_live_as_in_the_simulator() {
    let sc = scenario(
        &(two_phone_cell("cell-rr", ["far", "near"], r#"aqm = { kind = "fifo", limit = 200 }"#)
            + r#"
[[topology.cell.ues]]
node = "far"
rate = "10Mbit"
[[topology.cell.ues]]
node = "near"
rate = "40Mbit"
[[flows]]
name = "to-far"
type = "probe"
from = "server"
to = "far"
pps = 4000
size = "1514B"
[[flows]]
name = "to-near"
type = "probe"
from = "server"
to = "near"
pps = 4000
size = "1514B"
"#),
    );
    let figures = |s: &l4s_metrics::summary::Summary| {
        let mbps = |n: &str| s.flows.iter().find(|f| f.name == n).unwrap().throughput_bps / 1e6;
        let blocks = |n: &str| {
            s.queues
                .iter()
                .find(|q| q.name == n)
                .and_then(|q| q.radio.as_ref())
                .map_or(0, |r| r.blocks)
        };
        (
            mbps("to-far"),
            mbps("to-near"),
            blocks("cell/down/far"),
            blocks("cell/down/near"),
        )
    };
    let (sim, _) = Simulator.run(sc.clone(), Outputs::default(), &mut |_| {}).unwrap();
    let (far, near, bf, bn) = figures(&sim);
    println!("cell rr sim: far {far:.2} Mbit/s in {bf} blocks, near {near:.2} Mbit/s in {bn} blocks");
    // Every other 1 ms slot of the 6 s window each; the throughput counts IP bytes of
    // 1500-byte packets as the capacity does, give or take the probes' own headers.
    assert!((2950..=3050).contains(&bf) && (2950..=3050).contains(&bn), "{bf} {bn}");
    assert!((near / far - 4.0).abs() < 0.1, "{far} {near}");
    assert!((far - 5.0).abs() < 0.25, "{far}");
    // Each UE's queue reports its own channel.
    let rate = |n: &str| sim.queues.iter().find(|q| q.name == n).map(|q| q.rate_bps);
    assert_eq!(rate("cell/down/far"), Some(10_000_000));
    assert_eq!(rate("cell/down/near"), Some(40_000_000));
    // ... and is reported between its own UE and the base station, as live.
    let ends = |s: &l4s_metrics::summary::Summary| -> Vec<(String, String, String)> {
        s.queues
            .iter()
            .map(|q| (q.name.clone(), q.from.clone(), q.to.clone()))
            .collect()
    };
    let mut sim_ends = ends(&sim);
    sim_ends.sort();
    let want = |n: &str, f: &str, t: &str| (n.to_string(), f.to_string(), t.to_string());
    assert!(
        sim_ends.contains(&want("cell/down/near", "gnb", "near")),
        "{sim_ends:?}"
    );
    assert!(sim_ends.contains(&want("cell/up/far", "far", "gnb")), "{sim_ends:?}");
    if !root() {
        return;
    }
    live_until_measured(&sc, |live| {
        let mut live_ends = ends(live);
        live_ends.sort();
        assert_eq!(live_ends, sim_ends);
        let (lf, ln, lbf, lbn) = figures(live);
        println!("cell rr live: far {lf:.2} Mbit/s in {lbf} blocks, near {ln:.2} Mbit/s in {lbn} blocks");
        let close = |a: f64, b: f64| (a - b).abs() <= 0.1 * b;
        if close(lf, far) && close(ln, near) && close(lbf as f64, bf as f64) && close(lbn as f64, bn as f64) {
            Ok(())
        } else {
            Err(format!(
                "live {lf:.2}/{ln:.2} in {lbf}/{lbn} blocks, sim {far:.2}/{near:.2} in {bf}/{bn}"
            ))
        }
    });
}
