//! Capacity traces on links: read relative to the scenario file, instead of a rate, and
//! bad ones refused with the trace's own line and the key that names it.

use std::path::Path;

/// A fresh folder with `traces/` in it for one test, removed when the returned guard drops
/// (pass or fail).
fn dir(tag: &str) -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix(&format!("l4s-scenario-trace-{tag}-"))
        .tempdir()
        .unwrap();
    std::fs::create_dir_all(d.path().join("traces")).unwrap();
    d
}

const DUMBBELL: &str = "[scenario]\nduration = \"3s\"\n[topology]\ntype = \"dumbbell\"\nrtt = \"20ms\"\nTOPO\n[[flows]]\nname = \"f\"\ntype = \"udp-prague\"\n";

fn load(d: &Path, topo: &str) -> Result<l4s_scenario::Scenario, String> {
    let f = d.join("s.toml");
    let text = DUMBBELL.replace("TOPO", topo);
    std::fs::write(&f, &text).unwrap();
    l4s_scenario::load_file(&f).map_err(|e| e.to_string())
}

#[test]
fn a_dumbbell_bottleneck_replays_a_trace_named_relative_to_the_scenario() {
    let d_guard = dir("ok");
    let d = d_guard.path();
    // Two opportunities every 3 ms; the reverse direction replays its own trace.
    std::fs::write(d.join("traces/down"), "3\n3\n").unwrap();
    std::fs::write(d.join("traces/up"), "1\n").unwrap();
    let sc = load(d, "trace = \"traces/down\"\nreverse_trace = \"traces/up\"").unwrap();
    let fwd = &sc.links[0];
    let t = fwd.trace.as_ref().expect("the bottleneck has the trace");
    assert_eq!(t.times_ms(), [3, 3]);
    // The rate that stands for it is its mean: 2 × 1504 bytes per 3 ms.
    assert_eq!(fwd.rate.unwrap().bits_per_sec(), 2 * 1504 * 8 * 1000 / 3);
    let cfg = fwd.config(sc.duration);
    assert!(cfg.trace.is_some() && cfg.schedule.steps.is_empty());
    let rev = &sc.links[1];
    assert_eq!(rev.trace.as_ref().unwrap().times_ms(), [1]);
    assert_eq!(rev.rate.unwrap().bits_per_sec(), 12_032_000);
    // Without reverse_trace, the reverse direction replays the forward trace.
    let sc = load(d, "trace = \"traces/down\"").unwrap();
    assert_eq!(sc.links[1].trace.as_ref().unwrap().times_ms(), [3, 3]);
    // A rate still gives a plain wire.
    let sc = load(d, "rate = \"10Mbit\"").unwrap();
    assert!(sc.links[0].trace.is_none() && sc.links[1].trace.is_none());
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn a_custom_link_takes_a_trace_instead_of_its_rate() {
    let d_guard = dir("custom");
    let d = d_guard.path();
    std::fs::write(d.join("cell.down"), "1\n2\n2\n").unwrap();
    let text = r#"[scenario]
duration = "3s"
[topology]
type = "custom"
[[topology.nodes]]
name = "server"
[[topology.nodes]]
name = "phone"
[[topology.links]]
name = "cell"
from = "server"
to = "phone"
delay = "10ms"
trace = "cell.down"
reverse_rate = "5Mbit"
aqm = { kind = "dualpi2" }
[[flows]]
name = "f"
type = "udp-prague"
from = "server"
to = "phone"
"#;
    let f = d.join("c.toml");
    std::fs::write(&f, text).unwrap();
    let sc = l4s_scenario::load_file(&f).unwrap();
    assert!(sc.links[0].trace.is_some() && sc.links[0].bottleneck);
    assert!(sc.links[1].trace.is_none());
    assert_eq!(sc.links[1].rate.unwrap().bits_per_sec(), 5_000_000);
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn bad_traces_are_refused_with_the_file_the_line_and_the_key() {
    let d_guard = dir("bad");
    let d = d_guard.path();
    std::fs::write(d.join("decreasing"), "1\n5\n4\n").unwrap();
    std::fs::write(d.join("words"), "1\nten\n").unwrap();
    std::fs::write(d.join("empty"), "").unwrap();
    std::fs::write(d.join("zero"), "0\n").unwrap();
    std::fs::write(d.join("ok"), "1\n").unwrap();
    let tr = |name: &str| d.join(name).display().to_string();
    for (topo, says) in [
        (
            "trace = \"decreasing\"".to_string(),
            format!(
                "topology.trace: {}:3: 4 is before the previous time, 5",
                tr("decreasing")
            ),
        ),
        (
            "trace = \"words\"".to_string(),
            format!(
                "topology.trace: {}:2: \"ten\" is not a time in whole milliseconds",
                tr("words")
            ),
        ),
        (
            "trace = \"empty\"".to_string(),
            format!("topology.trace: {}: no delivery opportunities", tr("empty")),
        ),
        (
            "trace = \"zero\"".to_string(),
            format!("topology.trace: {}:1: the last time is 0", tr("zero")),
        ),
        (
            "trace = \"missing\"".to_string(),
            format!("topology.trace: cannot read the trace file {}", tr("missing")),
        ),
        (
            "trace = \"ok\"\nrate = \"10Mbit\"".to_string(),
            "topology.rate: a direction with a `trace` takes its capacity from it: remove `rate`".to_string(),
        ),
        (
            "trace = \"ok\"\nrate_schedule = { steps = [{ at = \"1s\", rate = \"5Mbit\" }] }".to_string(),
            "topology.rate_schedule: a direction with a `trace` takes its capacity over time from it".to_string(),
        ),
        (
            "rate = \"10Mbit\"\nreverse_trace = \"ok\"\nreverse_rate = \"1Mbit\"".to_string(),
            "topology.reverse_rate: a direction with a `reverse_trace` takes its capacity from it".to_string(),
        ),
    ] {
        let e = load(d, &topo).unwrap_err();
        assert!(e.starts_with(&format!("{}:", d.join("s.toml").display())), "{e}");
        assert!(e.contains(&says), "{topo}: {e}\n  expected: {says}");
    }
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn a_capacity_process_is_drawn_for_the_run_and_again_for_another_seed() {
    let d_guard = dir("capacity");
    let d = d_guard.path();
    let gauss = "capacity = { process = \"gaussian\", mean = \"10Mbit\", std_dev = \"3Mbit\", step = \"100ms\", min = \"5Mbit\", max = \"20Mbit\" }";
    let sc = load(d, gauss).unwrap();
    let l = &sc.links[0];
    assert!(matches!(l.capacity, Some(l4s_link::CapacityProcess::Gaussian { .. })));
    let t = l.trace.clone().unwrap();
    // 3 s of a clipped Gaussian around 10 Mbit/s, redrawn every 100 ms.
    let mean = l.rate.unwrap().bits_per_sec() as f64;
    assert!((7e6..13e6).contains(&mean), "{mean}");
    assert!(*t.times_ms().last().unwrap() <= 3000);
    // The reverse direction draws its own capacity from the same process.
    assert_eq!(sc.links[1].capacity, l.capacity);
    assert!(sc.links[1].trace.is_some() && sc.links[1].trace.as_deref() != Some(&*t));
    // The loaded scenario holds each draw as the run would make it: the loader's own for
    // the forward direction, a draw for the reverse's index for the reverse.
    let mut again = sc.clone();
    again.draw_capacities().unwrap();
    for (a, b) in sc.links.iter().zip(&again.links) {
        assert_eq!((a.rate, &a.trace, &a.rates), (b.rate, &b.trace, &b.rates), "{}", a.name);
    }
    // The same seed draws the same; --seed draws again, and --duration draws as long.
    let mut same = load(d, gauss).unwrap();
    same.apply_overrides(None, None).unwrap();
    assert_eq!(same.links[0].trace.as_deref(), Some(&*t));
    let mut other = sc.clone();
    other.apply_overrides(Some(99), None).unwrap();
    assert_ne!(other.links[0].trace.as_deref(), Some(&*t));
    let mut longer = sc.clone();
    longer
        .apply_overrides(None, Some(l4s_core::Dur::from_secs(10)))
        .unwrap();
    assert!(*longer.links[0].trace.as_ref().unwrap().times_ms().last().unwrap() > 9000);
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn bad_capacity_processes_name_their_key() {
    let d_guard = dir("bad-capacity");
    let d = d_guard.path();
    std::fs::write(d.join("ok"), "1\n").unwrap();
    for (topo, says) in [
        (
            "capacity = { process = \"brownian\" }",
            "topology.capacity.process: unknown capacity process \"brownian\"",
        ),
        (
            "capacity = { process = \"constant\", rate = \"5Mbit\", phi = 0.5 }",
            "topology.capacity.phi: `phi` does not apply to process \"constant\"",
        ),
        (
            "capacity = { process = \"sawtooth\", low = \"5Mbit\", period = \"1s\" }",
            "topology.capacity: required key `high` is missing for process \"sawtooth\"",
        ),
        (
            "capacity = { process = \"gaussian\", mean = \"10Mbit\", std_dev = \"3Mbit\", step = \"100ms\", min = \"20Mbit\", max = \"5Mbit\" }",
            "topology.capacity.min: min (20.000Mbit) is above max (5.000Mbit)",
        ),
        (
            "capacity = { process = \"ar1\", median = \"10Mbit\", sigma = 0.1, phi = 1.5, step = \"100ms\", min = \"1Mbit\", max = \"50Mbit\" }",
            "topology.capacity.phi: 1.5 is outside [0, 1)",
        ),
        (
            "capacity = { process = \"constant\", rate = \"5Mbit\" }\ntrace = \"ok\"",
            "topology.capacity: a direction takes its capacity from a `trace` or a `capacity` process, not both",
        ),
        (
            "capacity = { process = \"constant\", rate = \"5Mbit\" }\nrate = \"5Mbit\"",
            "topology.rate: a direction with a `capacity` takes its capacity from it: remove `rate`",
        ),
        (
            "capacity = { process = \"markov\", states = [{ rate = \"20Mbit\", mean_stay = \"1s\" }, { rate = \"5Mbit\", mean_stay = \"1ns\" }] }",
            "topology.capacity.states: every state needs a mean stay of at least 1ms (the process is sampled every millisecond), found 1ns",
        ),
        (
            "capacity = { process = \"gaussian\", mean = \"10Mbit\", std_dev = \"3Mbit\", step = \"500us\", min = \"5Mbit\", max = \"20Mbit\" }",
            "topology.capacity.step: expected at least 1ms (the process is sampled every millisecond), found 500us",
        ),
    ] {
        let e = load(d, topo).unwrap_err();
        assert!(e.contains(says), "{topo}: {e}\n  expected: {says}");
        assert!(e.starts_with(&format!("{}:", d.join("s.toml").display())), "{e}");
    }
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn harq_is_read_and_checked_with_its_key() {
    let d_guard = dir("harq");
    let d = d_guard.path();
    let sc = load(d, "rate = \"10Mbit\"\nharq = { bler = 0.1, rtt = \"8ms\" }").unwrap();
    let h = sc.links[0].harq.unwrap();
    assert_eq!((h.bler, h.rtt), (0.1, l4s_core::Dur::from_millis(8)));
    assert_eq!(sc.links[0].config(sc.duration).harq, Some(h));
    assert!(sc.links[1].harq.is_none());
    let e = load(d, "rate = \"10Mbit\"\nharq = { bler = 1.0, rtt = \"8ms\" }").unwrap_err();
    assert!(
        e.contains("topology.harq.bler: expected a block error rate in [0, 0.99]"),
        "{e}"
    );
    let e = load(d, "rate = \"10Mbit\"\nharq = { bler = 0.1, rtt = \"0ms\" }").unwrap_err();
    assert!(e.contains("topology.harq.rtt:"), "{e}");
    // 584 years made `k·rtt` overflow in a build with overflow checks.
    let long = "rate = \"10Mbit\"\nharq = { bler = 0.1, rtt = \"18446744073709551615ns\" }";
    let e = load(d, long).unwrap_err();
    assert!(
        e.contains("topology.harq.rtt: expected a HARQ round trip above zero and at most 1s"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn a_run_longer_than_a_trace_counts_is_refused_at_once() {
    // The process is drawn for the whole run when the scenario is loaded: a duration of
    // centuries once made it ask for 147 TB, and the process aborted.
    let d_guard = dir("too-long");
    let d = d_guard.path();
    let f = d.join("s.toml");
    let text = DUMBBELL
        .replace("duration = \"3s\"", "duration = \"18446744073709551615ns\"")
        .replace("TOPO", "capacity = { process = \"constant\", rate = \"5Mbit\" }");
    std::fs::write(&f, &text).unwrap();
    let e = l4s_scenario::load_file(&f).unwrap_err().to_string();
    assert!(
        e.contains("topology.capacity: the process gives times beyond 4294967.294s, which a trace cannot count in its 32-bit milliseconds over the run's "),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(d);
}
