//! Link rate schedules on the live testbed (needs root; CI runs as root; outside CI a
//! non-root run skips with a message). Each test uses its own run id, and the testbed guard
//! deletes its namespaces on every return path, panics included.
//!
//! * A FIFO bottleneck stepping 20 → 5 → 10 Mbit/s every 2 s under an unresponsive
//!   36 Mbit/s load (the live twin of the simulator's `rate_schedule_steps_the_bottleneck`)
//!   delivers each step's rate, measured from the flow snapshots' `throughput_bps`.
//! * `scenarios/xr-varying-bandwidth.toml` passes the live preflight and its testbed builds,
//!   with the schedule on the bottleneck's forwarder.

mod common;
use common::{no_namespaces_left, root};
use l4s_core::{Dur, Rate};
use l4s_fwd::netns::RunId;
use l4s_live::LiveOptions;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// A writer whose bytes the test reads afterwards.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);
impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
impl Shared {
    /// CSV rows as maps from the header's column names.
    fn rows(&self) -> Vec<std::collections::BTreeMap<String, String>> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        let mut lines = text.lines();
        let head: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
        lines
            .map(|l| {
                head.iter()
                    .zip(l.split(','))
                    .map(|(h, v)| (h.to_string(), v.to_string()))
                    .collect()
            })
            .collect()
    }
}

const STEPS: &str = r#"[scenario]
name = "live-rate-schedule"
duration = "6s"
warmup = "0s"
seed = 1

[topology]
type = "dumbbell"
rate = "20Mbit"
rtt = "2ms"
rate_schedule = { steps = [{ at = "2s", rate = "5Mbit" }, { at = "4s", rate = "10Mbit" }] }
aqm = { kind = "fifo", limit = 100 }

[[flows]]
name = "load"
type = "probe"
pps = 3000
size = "1514B"
ecn = "not-ect"
"#;

#[test]
fn live_fifo_follows_the_rate_schedule_step_by_step() {
    if !root() {
        return;
    }
    let sc = l4s_scenario::load_str(STEPS, Path::new("live-rate-schedule.toml")).unwrap();
    let id = RunId::generate();
    let (flows, queues) = (Shared::default(), Shared::default());
    let opts = LiveOptions {
        run_id: Some(id.clone()),
        snapshots: Some((Dur::from_millis(250), Box::new(flows.clone()), Box::new(queues.clone()))),
        ..LiveOptions::default()
    };
    let result = l4s_live::run(sc, opts, &mut |_| {});
    no_namespaces_left(&id);
    let (summary, info) = result.unwrap();
    let at = |r: &std::collections::BTreeMap<String, String>, k: &str| -> f64 {
        r.get(k)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("column {k} in {r:?}"))
    };
    let load: Vec<(f64, f64)> = flows
        .rows()
        .iter()
        .filter(|r| r.get("flow").is_some_and(|f| f == "load"))
        .map(|r| (at(r, "time_s"), at(r, "throughput_bps")))
        .collect();
    // Mean delivered Mbit/s over the snapshots covering [a, b) s (a row at t covers the
    // 250 ms before t); 0.5 s after each step are left for the queue to settle.
    let mean = |a: f64, b: f64| {
        let xs: Vec<f64> = load
            .iter()
            .filter(|(t, _)| *t > a + 0.2 && *t <= b + 1e-6)
            .map(|x| x.1)
            .collect();
        assert!(xs.len() >= 5, "snapshots in [{a}, {b}): {load:?}");
        xs.iter().sum::<f64>() / xs.len() as f64 / 1e6
    };
    let fwd = info
        .elements
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["element"] == "forwarder on bottleneck");
    let dirs = &fwd.unwrap_or_else(|| panic!("{}", info.elements))["stats"]["directions"];
    // Link time the pacer forfeited (woken over 2 ms late with frames waiting: a host
    // that held the forwarder back) is not delivered; none on a quiet host. At most all of
    // it falls in one window.
    let forfeited_s = dirs[0]["pacer_forfeit_ns"].as_u64().unwrap() as f64 / 1e9;
    let mut got = Vec::new();
    for (a, b, want) in [(0.5, 2.0, 20.0), (2.5, 4.0, 5.0), (4.5, 6.0, 10.0)] {
        let m = mean(a, b);
        println!("live rate schedule: [{a}, {b}) s delivered {m:.3} Mbit/s, schedule {want}");
        got.push((a, b, m, want));
    }
    for (a, b, m, want) in got {
        let short = want * forfeited_s / (b - a - 0.2);
        assert!(
            m <= 1.03 * want && m >= 0.97 * want - short,
            "[{a}, {b}) s: {m:.3} Mbit/s delivered, the schedule says {want} ({forfeited_s:.4} s forfeited); all: {load:?}"
        );
    }
    // The queue snapshots report the rate in force, and the summary the final one (as the
    // simulator does).
    let rates: Vec<(f64, f64)> = queues
        .rows()
        .iter()
        .filter(|r| r.get("queue").is_some_and(|q| q == "bottleneck"))
        .map(|r| (at(r, "time_s"), at(r, "rate_bps")))
        .collect();
    for (t, want) in [(1.0, 20e6), (3.0, 5e6), (5.0, 10e6)] {
        let r = rates
            .iter()
            .find(|x| (x.0 - t).abs() < 1e-6)
            .unwrap_or_else(|| panic!("{rates:?}"));
        assert_eq!(r.1, want, "queue rate_bps at {t} s");
    }
    let q = &summary.queues[0];
    assert_eq!((q.name.as_str(), q.rate_bps), ("bottleneck", 10_000_000));
    let window = summary.scenario.stats_window_s;
    assert!(
        q.utilization + forfeited_s / window > 0.97,
        "saturated link, utilisation {} ({forfeited_s:.4} s forfeited)",
        q.utilization
    );
    // The forwarder applied both changes on the bottleneck direction and none on the way back.
    assert_eq!(dirs[0]["rate_changes_applied"], 2, "{dirs}");
    assert_eq!(dirs[0]["rate_bps"], 20_000_000u64);
    assert_eq!(dirs[0]["final_rate_bps"], 10_000_000u64);
    assert_eq!(dirs[1]["rate_changes_applied"], 0, "{dirs}");
}

#[test]
fn xr_varying_bandwidth_is_accepted_and_builds_with_its_schedule() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/xr-varying-bandwidth.toml");
    let variants = l4s_scenario::load_variants(&path).unwrap();
    let (_, sc) = variants
        .into_iter()
        .find(|(n, _)| n.as_deref() == Some("classic"))
        .expect("the classic variant");
    let bottleneck = sc.links.iter().position(|l| l.name == "bottleneck").unwrap();
    let sched = sc.links[bottleneck].schedule.clone();
    let want: Vec<(Dur, Rate)> = sched.steps.clone();
    assert_eq!(
        want,
        [(Dur::from_secs(4), Rate::mbps(5)), (Dur::from_secs(8), Rate::mbps(12))],
        "20/5/12 Mbit/s every 4 s"
    );
    assert_eq!(sched.repeat, Some(Dur::from_secs(12)));
    if !root() {
        return;
    }
    // The classic variant uses CUBIC, which every kernel has, and so does the L4S stream
    // beside classic background (the all-L4S variant needs kernel TCP Prague).
    l4s_live::run::preflight(&sc).unwrap();
    let beside = l4s_scenario::load_variants(&path)
        .unwrap()
        .into_iter()
        .find(|(n, _)| n.as_deref() == Some("l4s-classic-background"))
        .expect("the l4s-classic-background variant")
        .1;
    l4s_live::run::preflight(&beside).unwrap();
    let id = RunId::generate();
    let built = l4s_live::topology::build(&sc, id.clone(), false, 1, sc.duration);
    let built = built.unwrap();
    let seg = built.segments.iter().position(|s| s.ab == bottleneck).unwrap();
    let cfg = built
        .elements
        .iter()
        .find(|e| e.segment == seg)
        .and_then(|e| e.router().cloned())
        .expect("a forwarder on the bottleneck");
    built.testbed.cleanup().unwrap();
    no_namespaces_left(&id);
    assert_eq!((cfg.ab.rate, cfg.ba.rate), (Some(Rate::mbps(20)), Some(Rate::mbps(20))));
    assert_eq!(cfg.ab.schedule.steps, want);
    assert_eq!(cfg.ab.schedule.repeat, Some(Dur::from_secs(12)));
    assert_eq!(cfg.ab.schedule.end, Some(sc.duration));
    assert!(cfg.ba.schedule.is_empty());
}
