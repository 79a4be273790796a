//! The runner library as a front end other than the `l4s` command uses it.

use l4s_lab::{run_text, Caller, Error, ErrorKind, NoProgress, Progress, Run, RunOptions, Simulator};
use std::path::{Path, PathBuf};

const TINY: &str = r#"[scenario]
name = "tiny"
duration = "3s"
warmup = "1s"
[topology]
type = "dumbbell"
rate = "20Mbit"
rtt = "20ms"
aqm = { kind = "dualpi2" }
[[flows]]
name = "p"
type = "tcp"
cc = "prague"
[[flows]]
name = "probe"
type = "probe"
ecn = "ect1"

[[variants]]
name = "l4s"

[[variants]]
name = "fifo"
set = { "topology.aqm" = { kind = "fifo", limit = 200 } }
"#;

/// A fresh folder for one test, removed when the returned guard drops (pass or fail).
fn tmp(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("l4s-lab-{tag}-"))
        .tempdir()
        .unwrap()
}

#[derive(Default)]
struct Seen {
    variants: Vec<String>,
    started: usize,
    times: usize,
    finished: Vec<PathBuf>,
}

impl Progress for Seen {
    fn variant(&mut self, name: &str) {
        self.variants.push(name.to_string());
    }
    fn started(&mut self, _: l4s_core::Dur, backend: &str) {
        assert_eq!(backend, "sim");
        self.started += 1;
    }
    fn time(&mut self, _: l4s_core::Time) {
        self.times += 1;
    }
    fn finished(&mut self, r: &Run) {
        self.finished.push(r.dir.clone());
    }
}

#[test]
fn variants_run_into_their_directories_with_a_comparison() {
    let d_guard = tmp("variants");
    let d = d_guard.path();
    let opts = RunOptions {
        out: Some(d.join("out")),
        report: false,
        command: vec!["test".into()],
        ..RunOptions::default()
    };
    let mut seen = Seen::default();
    let runs = run_text(TINY, Path::new("tiny.toml"), &mut Simulator, &opts, &mut seen).unwrap();
    assert_eq!(seen.variants, ["l4s", "fifo"]);
    assert_eq!(seen.started, 2);
    assert!(seen.times >= 6, "progress every simulated second: {}", seen.times);
    assert_eq!(runs.runs.len(), 2);
    for (r, name) in runs.runs.iter().zip(["l4s", "fifo"]) {
        assert_eq!(r.variant.as_deref(), Some(name));
        assert_eq!(r.dir, d.join("out").join(name));
        assert_eq!(r.stats.backend, "sim");
        assert!(r.stats.events.is_some_and(|e| e > 1000));
        assert!(r.stats.live.is_none());
        assert!(r.report.is_none(), "no report asked for");
        // What the library returns is what it wrote.
        let written: serde_json::Value =
            serde_json::from_slice(&std::fs::read(r.dir.join("summary.json")).unwrap()).unwrap();
        assert_eq!(written, serde_json::to_value(&r.summary).unwrap());
        let info: serde_json::Value =
            serde_json::from_slice(&std::fs::read(r.dir.join("run-info.json")).unwrap()).unwrap();
        assert_eq!(info["backend"], "sim");
        assert_eq!(info["command"], serde_json::json!(["test"]));
        assert!(info["events"].as_u64().unwrap() > 1000);
        assert_eq!(std::fs::read_to_string(r.dir.join("scenario.toml")).unwrap(), TINY);
        for f in [
            "snapshots-flows.parquet",
            "snapshots-queues.parquet",
            "distributions.parquet",
        ] {
            assert!(r.dir.join(f).exists(), "{f}");
        }
    }
    assert_eq!(seen.finished, [d.join("out/l4s"), d.join("out/fifo")]);
    let (page, table) = runs.compare.unwrap();
    assert_eq!(page, d.join("out/compare.html"));
    assert!(page.exists() && table.contains("fifo"), "{table}");
    // The DualPI2 run keeps the probe's delay far below the 200-packet FIFO's.
    let owd = |i: usize| runs.runs[i].summary.flows[1].owd_ms.p99;
    assert!(owd(0) < owd(1), "{} vs {}", owd(0), owd(1));
    // A comparison page is never written into a run's results, nor over a directory.
    let dirs: Vec<PathBuf> = runs.runs.iter().map(|r| r.dir.clone()).collect();
    let summary = std::fs::read(dirs[0].join("summary.json")).unwrap();
    for out in [dirs[0].join("summary.json"), dirs[0].join("c.html"), d.join("out")] {
        let e = l4s_lab::compare(&dirs, &out).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Input, "{}: {}", out.display(), e.message);
    }
    assert_eq!(std::fs::read(dirs[0].join("summary.json")).unwrap(), summary);
    assert!(!dirs[0].join("c.html").exists());
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn bad_input_is_an_input_error_and_leaves_nothing() {
    let d_guard = tmp("bad");
    let d = d_guard.path();
    let run = |text: &str, opts: &RunOptions| {
        run_text(text, Path::new("bad.toml"), &mut Simulator, opts, &mut NoProgress).unwrap_err()
    };
    let opts = RunOptions {
        out: Some(d.join("out")),
        ..RunOptions::default()
    };
    let e = run(&TINY.replace("20Mbit", "0Mbit"), &opts);
    assert_eq!((e.kind, e.exit_code()), (ErrorKind::Input, 2));
    assert!(
        e.message.contains("bad.toml:") && e.message.contains("topology.rate"),
        "{e}"
    );
    let e = run(
        TINY,
        &RunOptions {
            variants: vec!["nope".into()],
            ..opts.clone()
        },
    );
    assert!(
        e.message.contains("no variant \"nope\"") && e.message.contains("l4s, fifo"),
        "{e}"
    );
    // A foreign directory is never replaced.
    std::fs::create_dir_all(d.join("mine")).unwrap();
    std::fs::write(d.join("mine/thesis.tex"), "x").unwrap();
    let one = TINY.split("[[variants]]").next().unwrap();
    let e = run(
        one,
        &RunOptions {
            out: Some(d.join("mine")),
            ..opts.clone()
        },
    );
    assert_eq!(e.kind, ErrorKind::Input, "{e}");
    assert!(d.join("mine/thesis.tex").exists());
    assert!(!d.join("out").exists());
    let _ = std::fs::remove_dir_all(d);
}

/// `--seed` and `--duration` are applied and checked once, before anything is created: a
/// duration not longer than the warm-up leaves no directory at all (not even the parents
/// of `--out`), with or without variants.
#[test]
fn a_bad_duration_is_refused_before_any_directory_is_created() {
    let d_guard = tmp("duration");
    let d = d_guard.path();
    let one = TINY.split("[[variants]]").next().unwrap();
    for (text, says) in [
        (
            one,
            "tiny.toml: --duration 1s: not longer than the file's warm-up (1s); give a longer duration or a shorter warm-up",
        ),
        (
            TINY,
            "tiny.toml: variant l4s: --duration 1s: not longer than the file's warm-up (1s); give a longer duration or a shorter warm-up",
        ),
    ] {
        let opts = RunOptions {
            duration: Some(l4s_core::Dur::from_secs(1)),
            out: Some(d.join("parent/out")),
            ..RunOptions::default()
        };
        let e = run_text(text, Path::new("tiny.toml"), &mut Simulator, &opts, &mut NoProgress).unwrap_err();
        assert_eq!((e.kind, e.exit_code()), (ErrorKind::Input, 2));
        assert_eq!(e.message, says);
        assert!(!d.join("parent").exists(), "a results directory was created");
    }
    let opts = RunOptions {
        duration: Some(l4s_core::Dur::ZERO),
        out: Some(d.join("parent/out")),
        ..RunOptions::default()
    };
    let e = run_text(one, Path::new("tiny.toml"), &mut Simulator, &opts, &mut NoProgress).unwrap_err();
    assert_eq!(
        (e.kind, e.message.as_str()),
        (ErrorKind::Input, "tiny.toml: the duration must be above zero")
    );
    assert!(!d.join("parent").exists());
    // A warm-up set for the run, from Python: said so, in its words.
    let opts = RunOptions {
        duration: Some(l4s_core::Dur::from_secs(2)),
        set: vec![("scenario.warmup".into(), "\"2500ms\"".into())],
        caller: Caller::Python,
        out: Some(d.join("parent/out")),
        ..RunOptions::default()
    };
    let e = run_text(one, Path::new("tiny.toml"), &mut Simulator, &opts, &mut NoProgress).unwrap_err();
    assert_eq!(
        e.message,
        "tiny.toml: duration='2s': not longer than the warm-up set for the run (2.5s); give a longer duration or a shorter warm-up"
    );
    assert!(!d.join("parent").exists());
    // A good override is the run's: in the summary and in the run's statistics.
    let opts = RunOptions {
        seed: Some(9),
        duration: Some(l4s_core::Dur::from_secs(2)),
        out: Some(d.join("parent/out")),
        report: false,
        ..RunOptions::default()
    };
    let runs = run_text(one, Path::new("tiny.toml"), &mut Simulator, &opts, &mut NoProgress).unwrap();
    let r = &runs.runs[0];
    assert_eq!(r.stats.duration, l4s_core::Dur::from_secs(2));
    assert_eq!((r.summary.scenario.seed, r.summary.scenario.duration_s), (9, 2.0));
    let _ = std::fs::remove_dir_all(d);
}

/// A scenario a program built and ran with `run_scenario` has results like any other,
/// with the overrides applied, and no `scenario.toml` when there is no text behind it.
#[test]
fn a_scenario_without_text_runs_and_keeps_no_empty_copy() {
    let d_guard = tmp("no-text");
    let d = d_guard.path();
    let one = TINY.split("[[variants]]").next().unwrap();
    let sc = l4s_scenario::load_str(one, Path::new("tiny.toml")).unwrap();
    let opts = RunOptions {
        seed: Some(3),
        report: false,
        ..RunOptions::default()
    };
    let out = d.join("r");
    let r = l4s_lab::run_scenario(sc.clone(), None, &mut Simulator, &opts, &out, &mut NoProgress).unwrap();
    assert_eq!(r.summary.scenario.seed, 3);
    assert!(out.join("summary.json").exists() && !out.join("scenario.toml").exists());
    assert!(r.report.is_none() && r.png.is_none());
    let r = l4s_lab::run_scenario(sc, Some(one.as_bytes()), &mut Simulator, &opts, &out, &mut NoProgress).unwrap();
    assert_eq!(std::fs::read_to_string(r.dir.join("scenario.toml")).unwrap(), one);
    let _ = std::fs::remove_dir_all(d);
}

/// A sink that cannot be written after the simulation ran is an output error (exit 1),
/// not bad input (exit 2, which says nothing was run).
#[test]
fn a_failing_output_is_an_output_error() {
    use l4s_lab::{Backend, Outputs};
    struct Full;
    impl std::io::Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("no space left on device"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let one = TINY.split("[[variants]]").next().unwrap();
    let sc = l4s_scenario::load_str(one, Path::new("tiny.toml")).unwrap();
    let outputs = Outputs {
        distributions: Some(Box::new(Full)),
        ..Outputs::default()
    };
    let e = Simulator.run(sc, outputs, &mut |_| {}).unwrap_err();
    assert_eq!((e.kind, e.exit_code()), (ErrorKind::Output, 1));
    assert_eq!(e.message, "cannot write distributions: no space left on device");
}

#[test]
fn exit_codes_follow_the_kind() {
    for (k, code) in [
        (ErrorKind::Input, 2),
        (ErrorKind::Privilege, 2),
        (ErrorKind::Setup, 1),
        (ErrorKind::Run, 1),
        (ErrorKind::Output, 1),
        (ErrorKind::Interrupted, 130),
    ] {
        assert_eq!(Error::new(k, "x").exit_code(), code, "{k:?}");
    }
}

#[test]
fn a_results_directory_holding_a_users_files_is_never_replaced_and_two_runs_do_not_mix() {
    let d_guard = tmp("ours");
    let d = d_guard.path();
    let out = d.join("out");
    let opts = RunOptions {
        out: Some(out.clone()),
        report: false,
        variants: vec!["l4s".into()],
        ..RunOptions::default()
    };
    let run = |o: &RunOptions| run_text(TINY, Path::new("tiny.toml"), &mut Simulator, o, &mut NoProgress);
    run(&opts).unwrap();
    let l4s = out.join("l4s");
    assert!(l4s.join(".l4s-results").is_file());
    // A rerun replaces our own results...
    run(&opts).unwrap();
    // ...but not once the user keeps notes and plots in them.
    std::fs::write(l4s.join("NOTES.md"), "mine").unwrap();
    std::fs::create_dir_all(l4s.join("plots")).unwrap();
    std::fs::write(l4s.join("plots/p.svg"), "mine").unwrap();
    let summary = std::fs::read(l4s.join("summary.json")).unwrap();
    let e = run(&opts).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Input);
    assert!(
        e.message.contains("holds files l4s did not write (NOTES.md, plots/)")
            && e.message.contains("write the results elsewhere (--out)"),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(l4s.join("NOTES.md")).unwrap(), "mine");
    assert_eq!(std::fs::read_to_string(l4s.join("plots/p.svg")).unwrap(), "mine");
    assert_eq!(std::fs::read(l4s.join("summary.json")).unwrap(), summary);
    // A run into a directory another run is writing is refused at once.
    std::fs::remove_file(l4s.join("NOTES.md")).unwrap();
    std::fs::remove_dir_all(l4s.join("plots")).unwrap();
    let held = l4s_metrics::results::ResultsDir::create(&l4s).unwrap();
    let e = run(&opts).unwrap_err();
    assert!(e.message.contains("another l4s run is writing"), "{e}");
    drop(held);
    run(&opts).unwrap();
    let _ = std::fs::remove_dir_all(d);
}

/// A run asked from Python is told about its options in Python's words (`variant=`,
/// `out=`, `set["KEY"]`), one from `l4s` in its flags.
#[test]
fn messages_name_the_options_as_the_caller_gave_them() {
    let d_guard = tmp("caller");
    let d = d_guard.path();
    let mine = d.join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("NOTES.md"), "mine").unwrap();
    // TINY without its variants: one run.
    let one = &TINY[..TINY.find("[[variants]]").unwrap()];
    let file = d.join("a-file");
    std::fs::write(&file, "mine").unwrap();
    let err = |caller: Caller, text: &str, o: RunOptions| {
        let o = RunOptions {
            caller,
            report: false,
            ..o
        };
        run_text(text, Path::new("tiny.toml"), &mut Simulator, &o, &mut NoProgress)
            .unwrap_err()
            .message
    };
    let cases: [(&str, RunOptions, &str, &str); 5] = [
        (
            TINY,
            RunOptions {
                variants: vec!["nope".into()],
                ..RunOptions::default()
            },
            "--variant: tiny.toml has no variant \"nope\"",
            "variant=: tiny.toml has no variant \"nope\"",
        ),
        (
            TINY,
            RunOptions {
                out: Some(mine.clone()),
                ..RunOptions::default()
            },
            "writes a folder per variant there: move them elsewhere, or choose another folder with --out",
            "writes a folder per variant there: move them elsewhere, or choose another folder with out=",
        ),
        (
            one,
            RunOptions {
                out: Some(mine.clone()),
                ..RunOptions::default()
            },
            "is not an l4s-lab results directory (no .l4s-results): write the results elsewhere (--out)",
            "is not an l4s-lab results directory (no .l4s-results): write the results elsewhere (out=)",
        ),
        (
            TINY,
            RunOptions {
                set: vec![("topology.rat".into(), "5".into())],
                ..RunOptions::default()
            },
            "(set by --set topology.rat)",
            "(set by set['topology.rat'])",
        ),
        (
            TINY,
            RunOptions {
                out: Some(file.clone()),
                ..RunOptions::default()
            },
            "a-file exists and is not a directory; choose another folder with --out",
            "a-file exists and is not a directory; choose another folder with out=",
        ),
    ];
    for (text, o, cli, python) in cases {
        let (c, p) = (err(Caller::Cli, text, o.clone()), err(Caller::Python, text, o));
        assert!(c.contains(cli), "{c}");
        assert!(p.contains(python), "{p}");
        assert!(!p.contains("--"), "a flag in Python's message: {p}");
    }
    assert_eq!(std::fs::read_to_string(mine.join("NOTES.md")).unwrap(), "mine");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
}

/// The simulator, failing the runs of a FIFO (the second variant of TINY): a run of the
/// variants interrupted part-way.
struct FailFifo;
impl l4s_lab::Backend for FailFifo {
    fn name(&self) -> &'static str {
        "sim"
    }
    fn preflight(&self, _: &l4s_scenario::Scenario) -> Result<(), Error> {
        Ok(())
    }
    fn run(
        &mut self,
        sc: l4s_scenario::Scenario,
        outputs: l4s_lab::Outputs,
        progress: &mut dyn FnMut(l4s_core::Time),
    ) -> Result<(l4s_metrics::summary::Summary, l4s_lab::RunStats), Error> {
        if sc.links.iter().any(|l| l.bottleneck && l.aqm.kind() == "fifo") {
            return Err(Error::new(ErrorKind::Interrupted, "interrupted"));
        }
        Simulator.run(sc, outputs, progress)
    }
}

#[test]
fn an_interrupted_variant_run_leaves_an_incomplete_set_that_compare_and_the_report_name() {
    let d_guard = tmp("set");
    let d = d_guard.path();
    let out = d.join("out");
    let opts = RunOptions {
        out: Some(out.clone()),
        report: false,
        ..RunOptions::default()
    };
    let runs = run_text(TINY, Path::new("tiny.toml"), &mut Simulator, &opts, &mut NoProgress).unwrap();
    let m = l4s_report::variant_set::VariantSet::read(&out).unwrap();
    assert!(m.complete);
    assert_eq!(
        (m.variants.clone(), m.done.clone()),
        (
            vec!["l4s".to_string(), "fifo".into()],
            vec!["l4s".to_string(), "fifo".into()]
        )
    );
    assert!(!runs.compare.unwrap().1.contains("warning"));
    for v in ["l4s", "fifo"] {
        let info: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join(v).join("run-info.json")).unwrap()).unwrap();
        assert_eq!(info["variant_set"], m.set.as_str());
    }
    // Again, interrupted at the second variant: l4s is new, fifo is the first run's.
    let e = run_text(TINY, Path::new("tiny.toml"), &mut FailFifo, &opts, &mut NoProgress).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Interrupted);
    let m2 = l4s_report::variant_set::VariantSet::read(&out).unwrap();
    assert!(!m2.complete && m2.set != m.set);
    assert_eq!(m2.done, ["l4s"]);
    assert_eq!(m2.stopped, None, "failed, not stopped: nothing of fifo was written");
    let dirs = vec![out.join("l4s"), out.join("fifo")];
    let page = d.join("cmp.html");
    let table = l4s_lab::compare(&dirs, &page).unwrap();
    assert!(
        table.contains("warning: the variant set in")
            && table.contains("is incomplete: 1 of 2 variants written in full; not written: fifo, so a directory of that name there may hold an earlier run's results"),
        "{table}"
    );
    assert!(
        table.contains("fifo is not from the latest run of tiny.toml"),
        "{table}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("These runs may not belong together") && html.contains("is incomplete"));
    let report = l4s_report::write_report(&out.join("fifo")).unwrap();
    let html = std::fs::read_to_string(report).unwrap();
    assert!(html.contains("not from the latest run"), "the report says so too");
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn a_stopped_simulation_writes_its_results_up_to_then_marked_incomplete() {
    let d_guard = tmp("stop");
    let d = d_guard.path();
    let out = d.join("out");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let opts = RunOptions {
        out: Some(out.clone()),
        stop: Some(stop),
        ..RunOptions::default()
    };
    let runs = run_text(TINY, Path::new("tiny.toml"), &mut Simulator, &opts, &mut NoProgress).unwrap();
    // Stopped in the first variant: the second does not start, nothing is compared.
    assert_eq!(runs.runs.len(), 1);
    assert!(runs.compare.is_none());
    let r = &runs.runs[0];
    assert!(!r.summary.complete);
    let reached = r.summary.reached_s.unwrap();
    assert!(reached > 0.0 && reached < 3.0, "{reached}");
    assert_eq!(r.summary.scenario.duration_s, 3.0);
    assert!(r.stats.duration.as_secs_f64() < 3.0);
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(r.dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(written["complete"], false);
    assert_eq!(written["reached_s"], reached);
    let v = r.summary.verdict.as_ref().unwrap();
    assert!(
        v.findings
            .iter()
            .any(|f| f.code == "incomplete" && f.text.contains("stopped at")),
        "{v:?}"
    );
    let html = std::fs::read_to_string(r.dir.join("report.html")).unwrap();
    assert!(html.contains("the run was stopped at"));
    let m = l4s_report::variant_set::VariantSet::read(&out).unwrap();
    assert!(!m.complete && m.done.is_empty());
    // The manifest names the variant stopped, whose directory this run wrote, apart from
    // the one not run, whose directory (if any) is an earlier run's.
    assert_eq!(m.stopped.as_deref(), Some("l4s"));
    let table = l4s_lab::compare(&[out.join("l4s")], &d.join("cmp.html")).unwrap();
    assert!(
        table.contains(
            "is incomplete: 0 of 2 variants written in full; l4s was interrupted and holds what it reached, marked incomplete; not written: fifo, so a directory of that name there may hold an earlier run's results: run the scenario again"
        ),
        "{table}"
    );
    // A complete run has neither key.
    let full = run_text(
        TINY,
        Path::new("tiny.toml"),
        &mut Simulator,
        &RunOptions {
            out: Some(d.join("full")),
            report: false,
            ..RunOptions::default()
        },
        &mut NoProgress,
    )
    .unwrap();
    let text = std::fs::read_to_string(full.runs[0].dir.join("summary.json")).unwrap();
    assert!(!text.contains("\"complete\"") && !text.contains("reached_s"));
    let _ = std::fs::remove_dir_all(d);
}

/// What a run said before it started.
#[derive(Default)]
struct Notes(Vec<String>);

impl Progress for Notes {
    fn notice(&mut self, m: &str) {
        self.0.push(m.to_string());
    }
}

#[test]
fn the_time_series_estimate_counts_the_queues_a_run_reports_not_its_links() {
    // 2 000 probes through a dumbbell: 8 002 links, of which only the bottleneck's two
    // directions have a queue (the access wires only delay). 10 s every 10 ms: 1 000 rows
    // of 2 002 flows and queues, about 220 bytes each.
    let mut text = String::from(
        "[scenario]\nname = \"many\"\nduration = \"10s\"\n[topology]\ntype = \"dumbbell\"\nrate = \"1Gbit\"\nrtt = \"20ms\"\naqm = { kind = \"dualpi2\" }\n",
    );
    for i in 0..2000 {
        text.push_str(&format!("[[flows]]\nname = \"p{i}\"\ntype = \"probe\"\n"));
    }
    let d_guard = tmp("estimate");
    let opts = RunOptions {
        out: Some(d_guard.path().join("o")),
        report: false,
        snapshot_interval: l4s_core::Dur::from_millis(10),
        stop: Some(std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true))),
        ..RunOptions::default()
    };
    let mut notes = Notes::default();
    run_text(&text, Path::new("many.toml"), &mut Simulator, &opts, &mut notes).unwrap();
    let note = notes
        .0
        .iter()
        .find(|n| n.contains("MB of time series"))
        .expect("a note on the time series");
    assert!(note.contains("about 440 MB"), "{note}");
}

#[test]
fn a_run_says_before_it_starts_when_it_will_be_long_or_write_much_and_refuses_a_tiny_interval() {
    let d_guard = tmp("notices");
    let d = d_guard.path();
    let long = TINY
        .replace("duration = \"3s\"", "duration = \"100000s\"")
        .replace("rate = \"20Mbit\"", "rate = \"1Gbit\"");
    // Stopped at once: only what is said before it starts matters here.
    let opts = RunOptions {
        out: Some(d.join("o")),
        report: false,
        variants: vec!["l4s".into()],
        snapshot_interval: l4s_core::Dur::from_millis(1),
        stop: Some(std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true))),
        ..RunOptions::default()
    };
    let mut notes = Notes::default();
    run_text(&long, Path::new("long.toml"), &mut Simulator, &opts, &mut notes).unwrap();
    assert_eq!(notes.0.len(), 2, "{:?}", notes.0);
    assert!(
        notes.0[0].contains("MB of time series")
            && notes.0[0].contains("--snapshot-interval 1s or --snapshot-interval 0 writes less"),
        "{}",
        notes.0[0]
    );
    // From Python, in its keywords.
    let mut py_notes = Notes::default();
    let py_opts = RunOptions {
        caller: Caller::Python,
        out: Some(d.join("py")),
        ..opts.clone()
    };
    run_text(&long, Path::new("long.toml"), &mut Simulator, &py_opts, &mut py_notes).unwrap();
    assert!(
        py_notes.0[0].contains("snapshots='1s' or snapshots=None writes less"),
        "{}",
        py_notes.0[0]
    );
    assert!(
        notes.0[1].contains("hours of wall time") && notes.0[1].contains("Ctrl-C"),
        "{}",
        notes.0[1]
    );
    // Timers that fire whatever the traffic count too: a 1 us PI update (the shortest a
    // scenario may ask for) makes a 100 000 s run of a 20 Mbit/s link take hours more
    // than its packets do, and a rate schedule that repeats every 2 ns a 60 s one.
    for (what, text) in [
        (
            "tupdate",
            TINY.replace("duration = \"3s\"", "duration = \"100000s\"")
                .replace("{ kind = \"dualpi2\" }", "{ kind = \"dualpi2\", tupdate = \"1us\" }"),
        ),
        (
            "schedule",
            TINY.replace("duration = \"3s\"", "duration = \"60s\"").replace(
                "rtt = \"20ms\"",
                "rtt = \"20ms\"\nrate_schedule = { steps = [{ at = \"1ns\", rate = \"1Mbit\" }], repeat = \"2ns\" }",
            ),
        ),
    ] {
        let mut n = Notes::default();
        let o = RunOptions {
            out: Some(d.join(what)),
            snapshot_interval: l4s_core::Dur::ZERO,
            ..opts.clone()
        };
        run_text(&text, Path::new("timers.toml"), &mut Simulator, &o, &mut n).unwrap();
        assert_eq!(n.0.len(), 1, "{what}: {:?}", n.0);
        assert!(
            n.0[0].contains("hours of wall time") && n.0[0].contains("timer events"),
            "{what}: {}",
            n.0[0]
        );
    }
    // The shipped 60 s scenario says nothing.
    let mut quiet = Notes::default();
    let o = RunOptions {
        out: Some(d.join("q")),
        report: false,
        variants: vec!["l4s".into()],
        ..RunOptions::default()
    };
    run_text(TINY, Path::new("tiny.toml"), &mut Simulator, &o, &mut quiet).unwrap();
    assert!(quiet.0.is_empty());
    // A duration given for the run that ends before a flow starts: said before it runs
    // (the file's own duration refuses such a flow).
    let late = TINY.replace("name = \"probe\"", "name = \"probe\"\nstart = \"2s\"");
    let mut n = Notes::default();
    let o = RunOptions {
        duration: Some(l4s_core::Dur::from_millis(1500)),
        caller: Caller::Python,
        ..o
    };
    run_text(&late, Path::new("late.toml"), &mut Simulator, &o, &mut n).unwrap();
    assert_eq!(
        n.0,
        ["flow \"probe\" starts at 2s, and this run ends at 1.5s (duration='1.5s'): it will send nothing"]
    );
    // An interval below a millisecond is refused before anything is written.
    let bad = RunOptions {
        out: Some(d.join("b")),
        snapshot_interval: l4s_core::Dur(1),
        ..RunOptions::default()
    };
    let e = run_text(TINY, Path::new("tiny.toml"), &mut Simulator, &bad, &mut NoProgress).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Input);
    assert!(
        e.message
            .contains("--snapshot-interval 1ns: the time series is written at most every 1ms"),
        "{e}"
    );
    let py = RunOptions {
        caller: Caller::Python,
        ..bad.clone()
    };
    let e = run_text(TINY, Path::new("tiny.toml"), &mut Simulator, &py, &mut NoProgress).unwrap_err();
    assert!(e.message.starts_with("snapshots= 1ns: "), "{e}");
    assert!(!d.join("b").join("l4s").exists());
    let _ = std::fs::remove_dir_all(d);
}

/// A variant run that fails or is interrupted before its first variant is written leaves
/// no `--out` folder behind (issue 13 item 25).
#[test]
fn a_variant_run_stopped_before_its_first_variant_leaves_no_empty_out() {
    let d_guard = tmp("first-stopped");
    let d = d_guard.path();
    let out = d.join("out");
    let opts = RunOptions {
        out: Some(out.clone()),
        report: false,
        ..RunOptions::default()
    };
    // The fifo variant first: it is the one that fails.
    let i = TINY.find("[[variants]]").unwrap();
    let swapped = format!(
        "{}[[variants]]\nname = \"fifo\"\nset = {{ \"topology.aqm\" = {{ kind = \"fifo\", limit = 200 }} }}\n\n[[variants]]\nname = \"l4s\"\n",
        &TINY[..i]
    );
    let e = run_text(&swapped, Path::new("tiny.toml"), &mut FailFifo, &opts, &mut NoProgress).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Interrupted);
    assert!(!out.exists(), "{:?}", std::fs::read_dir(&out).map(|r| r.count()));
    let _ = std::fs::remove_dir_all(d);
}

/// A run with a Wi-Fi BSS: its report has the station table, the airtime chart and the
/// access-delay charts; `distributions.csv` has each station's access-delay distribution.
#[test]
fn a_wifi_run_reports_airtime_and_access_delay() {
    let d_guard = tmp("wifi");
    let d = d_guard.path();
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/wifi-multi-client.toml"))
            .unwrap()
            .replace("duration = \"60s\"", "duration = \"7s\"")
            .replace("warmup = \"10s\"", "warmup = \"1s\"");
    let opts = RunOptions {
        out: Some(d.join("out")),
        variants: vec!["dualq-classic".into()],
        ..RunOptions::default()
    };
    let runs = run_text(
        &text,
        Path::new("wifi-multi-client.toml"),
        &mut Simulator,
        &opts,
        &mut NoProgress,
    )
    .unwrap();
    let r = &runs.runs[0];
    let w = &r.summary.wifi[0];
    assert_eq!(w.stations.len(), 4);
    let total: f64 = w
        .stations
        .iter()
        .map(|s| s.down.airtime_share + s.up.airtime_share)
        .sum();
    assert!(total > 0.3 && total <= 1.0, "{total}");
    // The laptop's downlink access delay as a whole distribution, whose median is the
    // summary's.
    let laptop = &w.stations[0];
    let p = laptop.down.access_delay_ms.as_ref().expect("access delay percentiles");
    assert_eq!(Some(p.p50), laptop.down.access_delay_p50_ms);
    assert!(p.count > 100 && p.p50 <= p.p99 && p.p99 <= p.max, "{p:?}");
    let csv = std::fs::read_to_string(r.dir.join("distributions.csv")).unwrap();
    let rows: Vec<(f64, f64)> = csv
        .lines()
        .filter(|l| l.starts_with("access_delay,wifi/laptop/down,"))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[2].parse().unwrap(), f[3].parse().unwrap())
        })
        .collect();
    assert!(rows.len() > 20, "{}", rows.len());
    assert!(rows.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    let median = rows.iter().find(|r| r.1 >= 0.5).unwrap().0;
    assert!((median - p.p50).abs() <= 0.02 * p.p50 + 0.001, "{median} vs {}", p.p50);
    let html = std::fs::read_to_string(r.dir.join("report.html")).unwrap();
    assert!(html.contains("<h3>Wi-Fi wifi</h3>"));
    assert!(html.contains("Airtime per station of Wi-Fi wifi"));
    assert!(html.contains("MAC access delay per station of Wi-Fi wifi"));
    assert!(html.contains("MAC access delay, Wi-Fi wifi"));
    // Stacked bars: one per station and direction.
    assert!(html.matches("<rect x=").count() >= 8);
    let _ = std::fs::remove_dir_all(d);
}

/// A set of variants and a single run never write into each other's folders, a person's
/// own page is never replaced by a comparison, and [`l4s_lab::check_file`] finds what a
/// run would refuse without making anything.
#[test]
fn variants_and_single_runs_keep_out_of_each_others_folders_and_a_users_page() {
    use l4s_lab::{check_file, compare};
    let d_guard = tmp("folders");
    let d = d_guard.path();
    let single = &TINY[..TINY.find("[[variants]]").unwrap()];
    let opts = |out: &Path| RunOptions {
        out: Some(out.to_path_buf()),
        report: false,
        ..RunOptions::default()
    };
    let run = |text: &str, out: &Path| {
        run_text(
            text,
            Path::new("tiny.toml"),
            &mut Simulator,
            &opts(out),
            &mut NoProgress,
        )
    };

    // An input error that says `says`.
    let refused = |r: Result<(), Error>, says: &str| {
        let e = r.expect_err("refused");
        assert_eq!(e.kind, ErrorKind::Input);
        assert!(e.message.contains(says), "{e}\n  expected: {says}");
    };

    // Variants into one run's results: refused before anything is written.
    let same = d.join("same");
    run(single, &same).unwrap();
    let summary = std::fs::read(same.join("summary.json")).unwrap();
    refused(
        run(TINY, &same).map(|_| ()),
        "holds the results of one run (summary.json)",
    );
    assert!(!same.join("l4s").exists() && !same.join("variants.json").exists());
    assert_eq!(std::fs::read(same.join("summary.json")).unwrap(), summary);

    // One run into a set of variants: refused, the set untouched.
    let set = d.join("set");
    run(TINY, &set).unwrap();
    let manifest = std::fs::read(set.join("variants.json")).unwrap();
    refused(run(single, &set).map(|_| ()), "holds a set of variants (variants.json)");
    assert!(!set.join("summary.json").exists());
    assert_eq!(std::fs::read(set.join("variants.json")).unwrap(), manifest);
    // The set's own comparison page is replaced by a rerun.
    run(TINY, &set).unwrap();
    assert_ne!(std::fs::read(set.join("variants.json")).unwrap(), manifest);

    // A person's compare.html in the folder: refused, nothing written there.
    let u = d.join("u");
    std::fs::create_dir_all(&u).unwrap();
    std::fs::write(u.join("compare.html"), "MY OWN PAGE").unwrap();
    refused(
        run(TINY, &u).map(|_| ()),
        "compare.html exists and is not a page l4s-lab wrote",
    );
    assert_eq!(std::fs::read_to_string(u.join("compare.html")).unwrap(), "MY OWN PAGE");
    assert_eq!(std::fs::read_dir(&u).unwrap().count(), 1);

    // A folder of a person's own files: refused, nothing written there.
    std::fs::remove_file(u.join("compare.html")).unwrap();
    std::fs::write(u.join("a.txt"), "mine").unwrap();
    std::fs::create_dir(u.join("notes")).unwrap();
    refused(
        run(TINY, &u).map(|_| ()),
        "u holds files l4s did not write (a.txt, notes/)",
    );
    assert_eq!(std::fs::read_dir(&u).unwrap().count(), 2);
    // A folder that cannot be made is named.
    let plain = d.join("plain.txt");
    std::fs::write(&plain, "x").unwrap();
    refused(
        run(single, &plain.join("sub")).map(|_| ()),
        &format!("{}: cannot create the folder: ", plain.display()),
    );
    // A set's own folder, with an earlier set's variant and a stale temporary folder of
    // ours, is run into again.
    // A set being written into the folder holds it: a second is refused at once.
    let held = l4s_metrics::results::FolderLock::take(&set).unwrap();
    refused(run(TINY, &set).map(|_| ()), "another l4s run is writing");
    drop(held);
    std::fs::create_dir(set.join(".l4s.tmp-1")).unwrap();
    std::fs::create_dir(set.join("compare-png")).unwrap();
    std::fs::write(set.join("compare-png/delay.png"), "png").unwrap();
    run(TINY, &set).unwrap();
    // A file of the user's among those charts is named, and kept.
    std::fs::write(set.join("compare-png/mine.txt"), "mine").unwrap();
    refused(
        run(TINY, &set).map(|_| ()),
        "holds files l4s did not write (compare-png/mine.txt)",
    );
    assert_eq!(
        std::fs::read_to_string(set.join("compare-png/mine.txt")).unwrap(),
        "mine"
    );
    std::fs::remove_file(set.join("compare-png/mine.txt")).unwrap();

    // `compare` replaces a page of ours, never a person's file.
    let dirs = [set.join("l4s"), set.join("fifo")];
    let page = d.join("page.html");
    compare(&dirs, &page).unwrap();
    compare(&dirs, &page).unwrap();
    let mine = d.join("mine.html");
    std::fs::write(&mine, "<!DOCTYPE html>\n<html><title>mine</title>").unwrap();
    refused(compare(&dirs, &mine).map(|_| ()), "is not a page l4s-lab wrote");
    assert_eq!(
        std::fs::read_to_string(&mine).unwrap(),
        "<!DOCTYPE html>\n<html><title>mine</title>"
    );

    // check_file: the run's own checks, and nothing made.
    let file = d.join("tiny.toml");
    std::fs::write(&file, TINY).unwrap();
    let fresh = d.join("fresh");
    // The folder it would write, which it does not make.
    assert_eq!(check_file(&file, &Simulator, &opts(&fresh)).unwrap(), fresh);
    assert!(!fresh.exists());
    refused(
        check_file(&file, &Simulator, &opts(&same)).map(|_| ()),
        "holds the results of one run",
    );
    let odd = RunOptions {
        snapshot_interval: l4s_core::Dur::from_micros(1500),
        ..opts(&fresh)
    };
    refused(
        check_file(&file, &Simulator, &odd).map(|_| ()),
        "expected a whole number of milliseconds",
    );
    std::fs::write(&file, "[scenario\n").unwrap();
    refused(check_file(&file, &Simulator, &opts(&fresh)).map(|_| ()), "tiny.toml:1");
    assert!(!fresh.exists());
    let _ = std::fs::remove_dir_all(d);
}
