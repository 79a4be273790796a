//! No-change guard for the verdict: the full verdict (headline, level, and every warning's
//! code, severity and text, in order) of a varied set of summaries, compared with
//! `tests/fixtures/verdict/expected.txt`.
//!
//! The inputs are
//!
//! * `tests/fixtures/verdict/runs/*/summary.json`: every shipped scenario and variant run
//!   by the simulator at its own seed (1) and at seed 7 (`l4s run scenarios/X.toml --seed N`),
//!   stored minified. For two runs whose warnings gain snapshot detail (`dumbbell-fifo`:
//!   no CE marks; `xr-varying-bandwidth` variant `l4s`: link not saturated, seed 1) the
//!   `snapshots-*.csv` are kept too, cut down to the columns the verdict reads;
//! * hand-built variations of `synth::healthy_dualpi2()`, one or more per rule;
//! * pseudo-random summaries (a fixed seed) that push every field the rules read across
//!   its thresholds, with and without synthetic snapshots.
//!
//! The expected file was captured from the verdict code before it was split into a table
//! of rules; a refactor must leave it unchanged. To re-capture it after an intended change
//! of the verdict, run with `L4S_BLESS_VERDICT=1` and review the diff.

use l4s_metrics::summary::Summary;
use l4s_report::data::load_summary;
use l4s_report::synth::{self, Rng};
use l4s_report::{verdict, Snapshots, Verdict};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/verdict")
}

fn render(out: &mut String, v: &Verdict) {
    let _ = writeln!(out, "level: {}", v.level.as_str());
    let _ = writeln!(out, "headline: {}", v.headline);
    for w in &v.warnings {
        let _ = writeln!(out, "- [{}] {}: {}", w.severity.as_str(), w.code, w.text);
    }
}

/// One case: its verdict without snapshots, then with them (when there are any).
fn case(out: &mut String, name: &str, s: &Summary, snaps: Option<&Snapshots>) {
    let _ = writeln!(out, "== {name}");
    let plain = verdict(s, None);
    render(out, &plain);
    if let Some(sn) = snaps {
        let with = verdict(s, Some(sn));
        if with == plain {
            let _ = writeln!(out, "with snapshots: the same");
        } else {
            let _ = writeln!(out, "with snapshots:");
            render(out, &with);
        }
    }
    out.push('\n');
}

/// Hand-built variations of the healthy synthetic run, each aimed at one rule or edge.
fn hand_built() -> Vec<(String, Summary)> {
    let h = synth::healthy_dualpi2;
    let mut v: Vec<(String, Summary)> = vec![("healthy".into(), h())];
    let mut add = |name: &str, f: &dyn Fn(&mut Summary)| {
        let mut s = h();
        f(&mut s);
        v.push((name.into(), s));
    };
    add("silent-flow", &|s| s.flows[1].received_packets = 0);
    add("all-silent", &|s| {
        for f in &mut s.flows {
            f.received_packets = 0;
        }
    });
    add("fifo-no-marking", &|s| {
        for f in &mut s.flows {
            f.ce_packets = 0;
            f.ce_fraction = 0.0;
            f.owd_ms.p99 = 129.0;
        }
        for c in &mut s.classes {
            c.owd_ms.p99 = 129.0;
        }
        s.queues[0].aqm = "fifo".into();
        s.queues[0].subqueues.clear();
    });
    add("no-marking-just-under", &|s| {
        s.flows[0].ce_packets = 0;
        s.flows[0].owd_ms.p99 = 15.2;
    });
    add("no-marking-just-over", &|s| {
        s.flows[0].ce_packets = 0;
        s.flows[0].owd_ms.p99 = 15.3;
    });
    add("marked-but-queued", &|s| {
        s.flows[0].owd_ms.p99 = 22.6;
        s.classes[0].owd_ms.p99 = 22.6;
    });
    add("bleached-losses", &|s| {
        s.flows[0].ce_packets = 0;
        s.flows[0].ce_fraction = 0.0;
        s.flows[0].lost_packets = 120;
    });
    add("bleached-losses-fifo", &|s| {
        s.flows[0].ce_packets = 0;
        s.flows[0].lost_packets = 120;
        s.queues[0].aqm = "fifo".into();
    });
    add("bleached-empty-l", &|s| {
        s.queues[0].subqueues.get_mut("L").unwrap().enqueued_packets = 0
    });
    add("bleached-both", &|s| {
        s.flows[0].ce_packets = 0;
        s.flows[0].lost_packets = 120;
        s.flows[2].ce_packets = 0;
        s.flows[2].lost_packets = 3;
        s.queues[0].subqueues.get_mut("L").unwrap().enqueued_packets = 0;
        let mut q = s.queues[0].clone();
        q.name = "second".into();
        s.queues.push(q);
    });
    add("validation-failed", &|s| {
        s.flows[0].ecn_validation = "failed".into();
        s.flows[0].ecn_failed_at_s = Some(10.016);
        s.flows[0].ecn_failure = Some("bleached".into());
        s.flows[2].ecn_validation = "failed".into();
    });
    add("media-late", &|s| {
        let d = s.flows[0].owd_ms;
        s.flows[0].media = Some(synth::media(3000, 410.0 / 3000.0, 0.0, d));
        s.flows[1].media = Some(synth::media(3000, 0.0, 0.05, d));
        s.flows[2].media = Some(synth::media(99, 0.5, 0.5, d));
        s.flows[3].media = Some(synth::media(3000, 40.0 / 3000.0, 0.0199, d));
    });
    add("ce-saturated", &|s| s.flows[0].ce_fraction = 0.97);
    add("not-saturated", &|s| s.queues[0].utilization = 0.79);
    add("not-saturated-idle-l4s", &|s| {
        for f in &mut s.flows {
            f.ce_packets = 0;
            f.ce_fraction = 0.0;
        }
        s.queues[0].utilization = 0.3;
    });
    add("reverse-first", &|s| s.queues.swap(0, 1));
    add("equal-utilisation", &|s| {
        s.queues.swap(0, 1);
        s.queues[1].utilization = 0.024712;
    });
    add("l4s-starves-ratio", &|s| {
        s.flows[0].throughput_bps = 81e6;
        s.flows[1].throughput_bps = 19e6;
    });
    add("l4s-starves-share", &|s| {
        let mut p = s.flows[0].clone();
        p.name = "prague-2".into();
        s.flows.push(p);
        let mut c = s.flows[1].clone();
        c.name = "cubic-2".into();
        s.flows.push(c);
        s.flows[0].throughput_bps = 40e6;
        s.flows[4].throughput_bps = 40e6;
        s.flows[1].throughput_bps = 18e6;
        s.flows[5].throughput_bps = 2e6;
    });
    add("classic-starves-l4s", &|s| {
        s.flows[0].throughput_bps = 10e6;
        s.flows[1].throughput_bps = 90e6;
    });
    add("classic-starves-l4s-share", &|s| {
        let mut p = s.flows[0].clone();
        p.name = "prague-2".into();
        s.flows.push(p);
        s.flows[0].throughput_bps = 1e6;
        s.flows[4].throughput_bps = 50e6;
        s.flows[1].throughput_bps = 50e6;
    });
    add("starves-zero-classic", &|s| s.flows[1].throughput_bps = 0.0);
    add("all-zero-throughput", &|s| {
        for f in &mut s.flows {
            f.throughput_bps = 0.0;
        }
    });
    add("few-samples", &|s| {
        s.flows[2].owd_ms.count = 3200;
        s.flows[3].owd_ms.count = 800;
        s.flows[0].rtt_ms.as_mut().unwrap().count = 999;
        s.queues[0].sojourn_ms.count = 9999;
        s.queues[0].subqueues.get_mut("L").unwrap().sojourn_ms.count = 1000;
        s.queues[1].subqueues.get_mut("single").unwrap().sojourn_ms.count = 5;
    });
    add("testbed-calm", &|s| {
        s.testbed = Some(synth::testbed_check(false, Some(0.031)))
    });
    add("testbed-disrupted", &|s| {
        s.testbed = Some(synth::testbed_check(true, Some(0.031)))
    });
    add("testbed-disrupted-no-steal", &|s| {
        s.testbed = Some(synth::testbed_check(true, Some(0.0009)))
    });
    add("testbed-disrupted-steal-unknown", &|s| {
        s.testbed = Some(synth::testbed_check(true, None))
    });
    add("many-flows-unmarked", &|s| {
        let p = s.flows[0].clone();
        s.flows.clear();
        for i in 0..9 {
            let mut f = p.clone();
            f.name = format!("prague-{i}");
            f.ce_packets = 0;
            f.ce_fraction = 0.0;
            f.owd_ms.p99 = 40.0 + i as f64;
            s.flows.push(f);
        }
        s.classes.truncate(1);
    });
    add("classic-only", &|s| {
        s.flows.retain(|f| f.class != "L4S");
        s.classes.retain(|c| c.class != "L4S");
    });
    add("l4s-only", &|s| {
        s.flows.retain(|f| f.class == "L4S");
        s.classes.retain(|c| c.class == "L4S");
    });
    add("no-classes", &|s| s.classes.clear());
    add("no-subqueues", &|s| s.queues[0].subqueues.clear());
    add("nothing", &|s| {
        s.flows.clear();
        s.classes.clear();
        s.queues.clear();
    });
    add("degenerate", &|s| {
        for f in &mut s.flows {
            f.throughput_bps = 0.0;
            f.base_rtt_ms = f64::NAN;
            f.received_packets = 0;
        }
        s.queues[0].rate_bps = 0;
        s.queues[0].utilization = f64::NAN;
    });
    add("slow-link-tolerance", &|s| {
        s.queues[0].rate_bps = 1_000_000;
        s.flows[0].ce_packets = 0;
        s.flows[0].owd_ms.p99 = 38.0;
    });
    add("everything", &|s| {
        s.flows[0].ce_packets = 0;
        s.flows[0].ce_fraction = 0.99;
        s.flows[0].lost_packets = 7;
        s.flows[0].owd_ms.p99 = 60.0;
        s.flows[0].ecn_validation = "failed".into();
        s.flows[2].owd_ms.p99 = 30.0;
        s.flows[2].owd_ms.count = 500;
        s.flows[3].received_packets = 0;
        let d = s.flows[1].owd_ms;
        s.flows[1].media = Some(synth::media(3000, 0.3, 0.1, d));
        s.flows[0].throughput_bps = 95e6;
        s.flows[1].throughput_bps = 1e6;
        s.queues[0].utilization = 0.5;
        s.queues[0].subqueues.get_mut("L").unwrap().enqueued_packets = 0;
        s.testbed = Some(synth::testbed_check(true, Some(0.2)));
    });
    v
}

fn pick<T: Copy>(rng: &mut Rng, xs: &[T]) -> T {
    xs[((rng.next_f64() * xs.len() as f64) as usize).min(xs.len() - 1)]
}

fn chance(rng: &mut Rng, p: f64) -> bool {
    rng.next_f64() < p
}

/// A summary whose every field a rule reads is drawn from values on and around the
/// thresholds.
fn random_summary(rng: &mut Rng) -> Summary {
    let base = synth::healthy_dualpi2();
    let mut s = base.clone();
    s.scenario.warmup_s = pick(rng, &[0.0, 2.0, 10.0]);
    s.scenario.duration_s = pick(rng, &[10.0, 30.0, 60.0]);
    let counts = [0u64, 5, 999, 1000, 3200, 9999, 10_000, 287_093];
    let n = pick(rng, &[0usize, 1, 2, 3, 4, 5, 7]);
    s.flows.clear();
    for k in 0..n {
        let mut f = base.flows[pick(rng, &[0usize, 1, 2, 3])].clone();
        f.name = format!("{}-{k}", f.name);
        if chance(rng, 0.2) {
            f.class = if f.class == "L4S" {
                "classic".into()
            } else {
                "L4S".into()
            };
        }
        if chance(rng, 0.2) {
            f.ecn = pick(rng, &["ect1", "ect0", "not-ect"]).into();
        }
        if chance(rng, 0.15) {
            f.kind = pick(rng, &["probe", "tcp", "udp-prague"]).into();
            f.cc = pick(rng, &["none", "prague", "cubic"]).into();
        }
        f.base_rtt_ms = pick(rng, &[20.0, 20.0, 80.0, 0.0, f64::NAN]);
        let excess = pick(rng, &[0.0, 0.3, 2.0, 5.2, 5.3, 5.5, 12.6, 50.0, 119.0]);
        f.owd_ms.p99 = f.base_rtt_ms.max(0.0) / 2.0 + excess;
        f.owd_ms.count = pick(rng, &counts);
        if let Some(r) = &mut f.rtt_ms {
            r.count = pick(rng, &counts);
        }
        f.received_packets = pick(rng, &[0u64, 50, 99, 100, 5000, 287_093]);
        f.ce_packets = if chance(rng, 0.4) {
            0
        } else {
            (rng.next_f64() * f.received_packets as f64) as u64
        };
        f.ce_fraction = pick(rng, &[0.0, 0.02, 0.5, 0.949, 0.95, 0.97, 1.0]);
        f.lost_packets = pick(rng, &[0u64, 0, 1, 120]);
        f.throughput_bps =
            pick(rng, &[0.0, 1e6, 2e6, 19e6, 30e6, 40e6, 81e6, 1e9 / 3.0]) * (0.9 + 0.2 * rng.next_f64());
        if chance(rng, 0.1) {
            f.ecn_validation = "failed".into();
            f.ecn_failed_at_s = pick(rng, &[None, Some(3.25), Some(10.016)]);
            f.ecn_failure = pick(rng, &[None, Some("bleached"), Some("all-ce"), Some("remarked")]).map(String::from);
        }
        if chance(rng, 0.15) {
            let d = f.owd_ms;
            f.media = Some(synth::media(
                pick(rng, &[50, 99, 100, 3000]),
                pick(rng, &[0.0, 0.05, 0.0999, 0.1, 0.4]),
                pick(rng, &[0.0, 0.0199, 0.02, 0.3]),
                d,
            ));
        }
        s.flows.push(f);
    }
    let nq = pick(rng, &[0usize, 1, 2, 2, 3]);
    s.queues.clear();
    for k in 0..nq {
        let mut q = base.queues[pick(rng, &[0usize, 0, 1])].clone();
        q.name = format!("{}-{k}", q.name);
        q.aqm = pick(rng, &["dualpi2", "dualpi2", "fifo", "fq-codel", "pie"]).into();
        q.rate_bps = pick(rng, &[0u64, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000]);
        q.utilization = pick(rng, &[f64::NAN, 0.3, 0.79, 0.7999, 0.8, 0.95, 0.999881]);
        q.dequeued_packets = pick(rng, &[50u64, 100, 418_319]);
        q.sojourn_ms.count = pick(rng, &counts);
        if let Some(l) = q.subqueues.get_mut("L") {
            if chance(rng, 0.3) {
                l.enqueued_packets = 0;
            }
            l.sojourn_ms.count = pick(rng, &counts);
        }
        if chance(rng, 0.15) {
            q.subqueues.clear();
        }
        s.queues.push(q);
    }
    if chance(rng, 0.3) {
        s.classes.clear();
    } else {
        for c in &mut s.classes {
            c.owd_ms.count = pick(rng, &[0u64, 5, 287_093]);
            c.owd_ms.p99 = pick(rng, &[10.4, 15.3, 29.4, 129.0]);
        }
    }
    if chance(rng, 0.25) {
        s.testbed = Some(synth::testbed_check(
            chance(rng, 0.7),
            pick(rng, &[None, Some(0.0005), Some(0.031)]),
        ));
    }
    s
}

/// Every case, rendered.
fn render_all() -> String {
    let mut out = String::new();
    // Real runs, in name order.
    let runs = fixtures().join("runs");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&runs)
        .expect("tests/fixtures/verdict/runs")
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 28, "every shipped scenario and variant at two seeds");
    for d in &dirs {
        let s = load_summary(d).unwrap();
        let snaps = Snapshots::load(d).unwrap();
        let name = format!("run {}", d.file_name().unwrap().to_string_lossy());
        case(&mut out, &name, &s, snaps.as_ref());
    }
    // Hand-built, each also with synthetic snapshots.
    for (name, s) in hand_built() {
        let snaps = synth::snapshots(&s, s.scenario.duration_s, 0.1, 7);
        case(&mut out, &format!("synth {name}"), &s, Some(&snaps));
    }
    // Pseudo-random.
    let mut rng = Rng::new(2026);
    for i in 0..100 {
        let s = random_summary(&mut rng);
        let snaps = synth::snapshots(&s, s.scenario.duration_s, 0.5, i);
        case(&mut out, &format!("random {i}"), &s, Some(&snaps));
    }
    out
}

#[test]
fn verdicts_match_the_captured_fixture() {
    let got = render_all();
    let path = fixtures().join("expected.txt");
    if std::env::var_os("L4S_BLESS_VERDICT").is_some() {
        fs::write(&path, &got).unwrap();
        return;
    }
    let want = fs::read_to_string(&path).expect("tests/fixtures/verdict/expected.txt");
    if got != want {
        let (g, w): (Vec<&str>, Vec<&str>) = (got.lines().collect(), want.lines().collect());
        let i = g
            .iter()
            .zip(&w)
            .position(|(a, b)| a != b)
            .unwrap_or(g.len().min(w.len()));
        let case = w[..i.min(w.len())]
            .iter()
            .rev()
            .find(|l| l.starts_with("== "))
            .unwrap_or(&"(start)");
        panic!(
            "verdict changed in {case}, line {}:\n  expected: {}\n  got:      {}",
            i + 1,
            w.get(i).unwrap_or(&"(end)"),
            g.get(i).unwrap_or(&"(end)")
        );
    }
}
