//! Campaigns through the library: the plan, bad input, the keyed store, resuming, the
//! tables.

use arrow_array::{Array, Float64Array, StringArray, UInt32Array, UInt64Array};
use l4s_lab::campaign::{self, CampaignOptions, NoCampaignProgress};
use l4s_lab::{ErrorKind, NoProgress, RunOptions, Simulator};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::collections::HashMap;
use std::path::Path;

mod common;
use common::{setup, CAMPAIGN, SCENARIO};

fn opts(out: &Path, jobs: usize) -> CampaignOptions {
    CampaignOptions {
        jobs,
        out: Some(out.to_path_buf()),
        ..CampaignOptions::default()
    }
}

fn read_table(p: &Path) -> Vec<arrow_array::RecordBatch> {
    let f = std::fs::File::open(p).unwrap();
    ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

#[test]
fn a_plan_pairs_every_variant_of_a_point_with_one_seed_and_alternates_their_order() {
    let (_guard, f) = setup("plan", CAMPAIGN);
    let (_, plan) = campaign::load(&f).unwrap();
    // 2 rates x 2 draws x 2 groups = 8 points, x 2 seeds = 16 pairs of 2 variants.
    assert_eq!(plan.points.len(), 8);
    assert_eq!(plan.runs.len(), 32);
    assert_eq!(plan.unique_runs().len(), 32);
    assert_eq!(plan.params, vec!["topology.rate", "topology.rtt"]);
    assert_eq!(plan.variants, vec!["l4s", "classic"]);
    assert_eq!(plan.baseline, Some(1));
    for pair in plan.runs.chunks(2) {
        assert_eq!(pair[0].pair, pair[1].pair);
        assert_eq!((pair[0].point, pair[0].seed), (pair[1].point, pair[1].seed));
        assert_ne!(pair[0].variant, pair[1].variant);
        // Even pairs run l4s first, odd pairs classic first.
        assert_eq!(pair[0].variant, if pair[0].pair % 2 == 0 { 0 } else { 1 }, "{pair:?}");
    }
    // A draw is the same "home" in every group and grid cell.
    let rtts: Vec<&str> = plan.points.iter().map(|p| p.values[1].as_str()).collect();
    assert_eq!(rtts[0], rtts[1], "the two groups of draw 0 share its RTT");
    assert_ne!(rtts[0], rtts[2], "draws differ");
    assert_eq!(rtts[0], rtts[4], "the draw is the same at the other rate");
    for p in &plan.points {
        let ms = l4s_core::units::parse_dur(p.values[1].trim_matches('"'))
            .unwrap()
            .as_secs_f64()
            * 1e3;
        assert!((5.0..40.0).contains(&ms), "{ms}");
    }
    // The effective scenario has the point's values and the run's seed.
    let r = plan.runs.iter().find(|r| r.point == 1 && r.seed == 2).unwrap();
    let text = plan.run_text(r);
    let sc = l4s_scenario::load_str(&text, Path::new("s.toml")).unwrap();
    assert_eq!(sc.seed, r.seed);
    let p = &plan.points[r.point as usize];
    assert!(text.contains(&format!("rate = {}", p.values[0])), "{text}");
    assert_eq!(p.group.as_deref(), Some("busy"));
    assert!(text.contains("start = \"0.5s\""));
    // The same file gives the same plan and keys.
    let (_, again) = campaign::load(&f).unwrap();
    assert_eq!(again.digest, plan.digest);
    assert_eq!(again.runs, plan.runs);
}

/// `campaign.duration` holds for every run, also over a variant that sets its own: the
/// two runs of a pair have one length.
#[test]
fn the_campaigns_duration_holds_over_a_variants_own() {
    let campaign = CAMPAIGN.replace("seeds = 2\n", "seeds = 2\nduration = \"2500ms\"\n");
    let (d_guard, f) = setup("duration", &campaign);
    let d = d_guard.path();
    std::fs::write(
        d.join("s.toml"),
        SCENARIO.replace(
            "name = \"l4s\"\n",
            "name = \"l4s\"\nset = { \"scenario.duration\" = \"2s\" }\n",
        ),
    )
    .unwrap();
    let (_, plan) = campaign::load(&f).unwrap();
    assert_eq!(plan.runs.len(), 32);
    for r in &plan.runs {
        let sc = l4s_scenario::load_str(&plan.run_text(r), Path::new("s.toml")).unwrap();
        assert_eq!(sc.duration, l4s_core::Dur::from_millis(2500), "{r:?}");
    }
    // Without it, the variant's own duration stands.
    std::fs::write(&f, CAMPAIGN).unwrap();
    let (_, plan) = campaign::load(&f).unwrap();
    let lengths: std::collections::BTreeSet<u64> = plan
        .runs
        .iter()
        .map(|r| {
            l4s_scenario::load_str(&plan.run_text(r), Path::new("s.toml"))
                .unwrap()
                .duration
                .as_nanos()
        })
        .collect();
    assert_eq!(lengths.into_iter().collect::<Vec<_>>(), [2_000_000_000, 3_000_000_000]);
    let _ = std::fs::remove_dir_all(d);
}

/// `campaign.warmup` holds for every run, also over a variant that sets its own, and lets
/// a campaign run shorter than the scenario's own warm-up.
#[test]
fn the_campaigns_warmup_holds_over_a_variants_own() {
    let campaign = CAMPAIGN.replace("seeds = 2\n", "seeds = 2\nduration = \"0.8s\"\nwarmup = \"200ms\"\n");
    let (d_guard, f) = setup("warmup", &campaign.replace("\"0.5s\"", "\"0.3s\""));
    let d = d_guard.path();
    std::fs::write(
        d.join("s.toml"),
        SCENARIO.replace(
            "name = \"l4s\"\n",
            "name = \"l4s\"\nset = { \"scenario.warmup\" = \"0.1s\" }\n",
        ),
    )
    .unwrap();
    let (_, plan) = campaign::load(&f).unwrap();
    assert_eq!(plan.runs.len(), 32);
    for r in &plan.runs {
        let sc = l4s_scenario::load_str(&plan.run_text(r), Path::new("s.toml")).unwrap();
        assert_eq!(
            (sc.warmup, sc.duration),
            (l4s_core::Dur::from_millis(200), l4s_core::Dur::from_millis(800)),
            "{r:?}"
        );
    }
    // Without campaign.warmup, the file's 1 s warm-up does not fit in 0.8 s.
    std::fs::write(&f, campaign.replace("warmup = \"200ms\"\n", "")).unwrap();
    let e = campaign::load(&f).unwrap_err();
    assert!(
        e.message
            .contains("campaign.duration: \"0.8s\" makes the scenario invalid"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn bad_campaigns_are_refused_naming_the_file_line_and_key() {
    let cases: [(&str, &str, &str, usize, &str); 16] = [
        (
            "seeds = 2\n",
            "seeds = 2\nduration = \"2s\"\nwarmup = \"2s\"\n",
            "campaign.warmup",
            7,
            "the warm-up (2s) must be shorter than campaign.duration (2s)",
        ),
        (
            "seeds = 2\n",
            "seeds = 2\nwarmup = \"3s\"\n",
            "campaign.warmup",
            6,
            "\"3s\" makes the scenario invalid",
        ),
        (
            "seeds = 2\n",
            "seeds = 2\nwarmup = \"soon\"\n",
            "campaign.warmup",
            6,
            "expected a duration",
        ),
        (
            "seeds = 2\n\n[sweep]\n\"topology.rate\" = [\"10Mbit\", \"20Mbit\"]",
            "seeds = 2\nwarmup = \"1s\"\n\n[sweep]\n\"scenario.warmup\" = [\"1s\", \"2s\"]",
            "sweep.\"scenario.warmup\"",
            9,
            "campaign.warmup sets every run's warm-up",
        ),
        (
            "seeds = 2\n\n[sweep]\n\"topology.rate\" = [\"10Mbit\", \"20Mbit\"]",
            "seeds = 2\nduration = \"2s\"\n\n[sweep]\n\"scenario.duration\" = [\"2s\", \"3s\"]",
            "sweep.\"scenario.duration\"",
            9,
            "campaign.duration sets every run's duration",
        ),
        (
            "seeds = 2\n",
            "seeds = 2\nvariants = []\n",
            "campaign.variants",
            6,
            "the list is empty",
        ),
        (
            "baseline = \"classic\"",
            "baseline = \"classic\"\nvariants = [\"l4s\", \"nosuch\"]",
            "campaign.variants",
            5,
            "has no variant \"nosuch\"",
        ),
        (
            "count = 2",
            "count = 4000000000",
            "sample.count",
            11,
            "expected 1 to 10000000 draws",
        ),
        (
            "\"topology.rtt\" = { uniform = [\"5ms\", \"40ms\"] }",
            "\"flows.bulk.count\" = { uniform = [-9223372036854775808, 9223372036854775807] }",
            "sample.params.\"flows.bulk.count\"",
            13,
            "integer bounds from",
        ),
        (
            "seeds = 2\n",
            "seeds = 2\nduration = \"1s\"\n",
            "campaign.duration",
            6,
            "makes the scenario invalid",
        ),
        (
            "\"topology.rate\" = [\"10Mbit\", \"20Mbit\"]",
            "\"topology.rat\" = [\"10Mbit\", \"20Mbit\"]",
            "sweep.\"topology.rat\"",
            8,
            "unknown field `rat`",
        ),
        (
            "\"topology.rate\" = [\"10Mbit\", \"20Mbit\"]",
            "\"topology.rate\" = [\"10Mbit\", 20]",
            "sweep.\"topology.rate\"",
            8,
            "the value 20 makes the scenario invalid",
        ),
        (
            "[\"5ms\", \"40ms\"]",
            "[\"40ms\", \"5ms\"]",
            "sample.params.\"topology.rtt\"",
            13,
            "is empty",
        ),
        (
            "baseline = \"classic\"",
            "baseline = \"nope\"",
            "campaign.baseline",
            4,
            "not a variant",
        ),
        (
            "baseline = \"classic\"\n",
            "",
            "campaign.baseline",
            1,
            "required with several variants",
        ),
        (
            "scenario = \"s.toml\"",
            "scenario = \"missing.toml\"",
            "campaign.scenario",
            3,
            "cannot read",
        ),
    ];
    for (from, to, key, line, msg) in cases {
        let (d_guard, f) = setup("bad", &CAMPAIGN.replace(from, to));
        let d = d_guard.path();
        let e = campaign::run(&f, &mut Simulator, &opts(&d.join("store"), 1), &mut NoCampaignProgress).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Input, "{e}");
        assert_eq!(e.exit_code(), 2);
        let want = format!("{}:{line}: {key}: ", f.display());
        assert!(e.message.starts_with(&want), "expected {want:?} in: {e}");
        assert!(e.message.contains(msg), "expected {msg:?} in: {e}");
        assert!(!d.join("store").exists(), "nothing is written on bad input");
    }
    // The campaign's duration is blamed with the point's own error, not the base's.
    let text = CAMPAIGN
        .replace("seeds = 2\n", "seeds = 2\nduration = \"0.9s\"\n")
        .replace(
            "\"topology.rate\" = [\"10Mbit\", \"20Mbit\"]",
            "\"scenario.warmup\" = [\"0.5s\"]",
        )
        .replace("\"flows.bulk.start\" = \"0.5s\"", "\"flows.bulk.start\" = \"0.95s\"");
    let (d_guard, f) = setup("bad-duration", &text);
    let d = d_guard.path();
    let e = campaign::run(&f, &mut Simulator, &opts(&d.join("store"), 1), &mut NoCampaignProgress).unwrap_err();
    let want = format!(
        "{}:6: campaign.duration: \"0.9s\" makes the scenario invalid with scenario.warmup = \"0.5s\", topology.rtt = ",
        f.display()
    );
    assert!(e.message.starts_with(&want), "expected {want:?} in: {e}");
    assert!(e.message.contains(", flows.bulk.start = \"0.95s\": "), "{e}");
    assert!(
        e.message.contains("the flow starts at 950ms but the run ends at 900ms"),
        "{e}"
    );
    assert!(!e.message.contains("warm-up"), "{e}");
    // Two values that fail together are blamed together, with the point's own error, not
    // one of them with the error it has beside the file's other values.
    let text = CAMPAIGN.replace(
        "\"topology.rate\" = [\"10Mbit\", \"20Mbit\"]",
        "\"scenario.duration\" = [\"0.8s\"]\n\"scenario.warmup\" = [\"0.9s\"]",
    );
    let (d_guard, f) = setup("bad-together", &text);
    let d = d_guard.path();
    let e = campaign::run(&f, &mut Simulator, &opts(&d.join("store"), 1), &mut NoCampaignProgress).unwrap_err();
    assert!(
        e.message
            .contains("together, scenario.duration = \"0.8s\", scenario.warmup = \"0.9s\""),
        "{e}"
    );
    assert!(e.message.contains("(900ms)") && !e.message.contains("(1s)"), "{e}");
    // A sweep too large to hold is refused before its grid is made: 1.6 x 10^9 runs.
    let many = |unit: &str| {
        (1..=10_000)
            .map(|k| format!("\"{k}{unit}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let text = CAMPAIGN.replace(
        "\"topology.rate\" = [\"10Mbit\", \"20Mbit\"]",
        &format!(
            "\"topology.rate\" = [{}]\n\"flows.bulk.start\" = [{}]",
            many("kbit"),
            many("us")
        ),
    );
    let (d_guard, f) = setup("bad-size", &text);
    let d = d_guard.path();
    let e = campaign::run(&f, &mut Simulator, &opts(&d.join("store"), 1), &mut NoCampaignProgress).unwrap_err();
    assert!(
        e.message
            .contains("campaign: 1600000000 runs: a campaign holds at most 10000000"),
        "{e}"
    );
    // Without variants, a baseline has nothing to name.
    let (d_guard, f) = setup("bad-baseline", CAMPAIGN);
    let d = d_guard.path();
    let plain = SCENARIO.split("[[variants]]").next().unwrap();
    std::fs::write(d.join("s.toml"), plain).unwrap();
    let e = campaign::run(&f, &mut Simulator, &opts(&d.join("store"), 1), &mut NoCampaignProgress).unwrap_err();
    assert!(
        e.message.contains("campaign.baseline: ") && e.message.contains("has no [[variants]] to compare"),
        "{e}"
    );
    // An error of the scenario itself is the scenario's.
    let (d_guard, f) = setup("bad-scenario", CAMPAIGN);
    let d = d_guard.path();
    std::fs::write(d.join("s.toml"), SCENARIO.replace("cc = \"prague\"", "cc = \"bogus\"")).unwrap();
    let e = campaign::run(&f, &mut Simulator, &opts(&d.join("store"), 1), &mut NoCampaignProgress).unwrap_err();
    assert!(e.message.contains("s.toml:"), "{e}");
    assert!(e.message.contains("bogus"), "{e}");
    // A scenario given where a campaign belongs, and the other way round, is named for
    // what it is, at its first table, with the command that runs it.
    let (d_guard, f) = setup("scenario-as-campaign", SCENARIO);
    let d = d_guard.path();
    let e = campaign::run(&f, &mut Simulator, &opts(&d.join("store"), 1), &mut NoCampaignProgress).unwrap_err();
    let first = SCENARIO.lines().position(|l| l.trim() == "[scenario]").unwrap() + 1;
    let at = e.location.as_ref().unwrap();
    assert_eq!(
        (at.file.as_path(), at.key.as_str(), at.line),
        (f.as_path(), "scenario", Some(first)),
        "{e}"
    );
    assert!(
        e.message
            .contains("this is a scenario file, not a campaign: run it with `l4s run`"),
        "{e}"
    );
    assert!(!d.join("store").exists());
    let e = l4s_scenario::load_str(CAMPAIGN, &d.join("c.toml")).unwrap_err();
    let first = CAMPAIGN.lines().position(|l| l.trim() == "[campaign]").unwrap() + 1;
    assert_eq!((e.key.as_str(), e.line), ("campaign", Some(first)), "{e}");
    assert!(
        e.message
            .contains("this is a campaign file, not a scenario: run it with `l4s campaign run`"),
        "{e}"
    );
    // A file that is neither keeps the loader's own words.
    let e = l4s_scenario::load_str("[other]\nx = 1\n", &d.join("c.toml")).unwrap_err();
    assert!(e.message.contains("unknown field `other`"), "{e}");
    std::fs::write(&f, "[other]\nx = 1\n").unwrap();
    let e = campaign::run(&f, &mut Simulator, &opts(&d.join("store"), 1), &mut NoCampaignProgress).unwrap_err();
    assert!(e.message.contains("unknown field `other`"), "{e}");
}

#[test]
fn a_campaign_stores_each_run_once_identical_to_the_run_alone_and_resumes_what_is_missing() {
    let (d_guard, f) = setup("resume", CAMPAIGN);
    let d = d_guard.path();
    let store = d.join("store");
    let out = campaign::run(&f, &mut Simulator, &opts(&store, 2), &mut NoCampaignProgress).unwrap();
    assert_eq!((out.unique_runs, out.ran, out.done, out.already_done), (32, 32, 32, 0));
    assert!(out.failed.is_empty() && !out.interrupted);
    let (_, plan) = campaign::load(&f).unwrap();
    // Lean runs: the summary and the distributions (Parquet), the scenario, run-info.
    let rd = campaign::store::run_dir(&store, &plan.runs[0].key);
    let mut files: Vec<String> = std::fs::read_dir(&rd)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            ".l4s-results",
            "distributions.parquet",
            "run-info.json",
            "scenario.toml",
            "summary.json"
        ]
    );
    // Each run's summary is byte-identical to the same scenario run alone.
    for r in plan.runs.iter().step_by(7) {
        let text = std::fs::read_to_string(campaign::store::run_dir(&store, &r.key).join("scenario.toml")).unwrap();
        assert_eq!(text, plan.run_text(r));
        let alone = d.join(format!("alone-{}", r.key));
        let ro = RunOptions {
            out: Some(alone.clone()),
            report: false,
            ..RunOptions::default()
        };
        l4s_lab::run_text(
            &text,
            Path::new(&plan.scenario_file),
            &mut Simulator,
            &ro,
            &mut NoProgress,
        )
        .unwrap();
        assert_eq!(
            std::fs::read(alone.join("summary.json")).unwrap(),
            std::fs::read(campaign::store::run_dir(&store, &r.key).join("summary.json")).unwrap(),
            "run {} differs from the same run alone",
            r.key
        );
    }
    // Started again: nothing to do.
    let again = campaign::run(&f, &mut Simulator, &opts(&store, 2), &mut NoCampaignProgress).unwrap();
    assert_eq!((again.ran, again.already_done, again.done), (0, 32, 32));
    // A missing run and a half-written one (its summary cut short) are done again; the
    // others are not touched.
    let info = |k: &str| std::fs::read(campaign::store::run_dir(&store, k).join("run-info.json")).unwrap();
    let kept = info(&plan.runs[5].key);
    std::fs::remove_dir_all(campaign::store::run_dir(&store, &plan.runs[0].key)).unwrap();
    let half = campaign::store::run_dir(&store, &plan.runs[1].key).join("summary.json");
    let bytes = std::fs::read(&half).unwrap();
    std::fs::write(&half, &bytes[..bytes.len() / 2]).unwrap();
    let again = campaign::run(&f, &mut Simulator, &opts(&store, 1), &mut NoCampaignProgress).unwrap();
    assert_eq!((again.ran, again.already_done, again.done), (2, 30, 32));
    assert_eq!(std::fs::read(&half).unwrap(), bytes, "the half-written run is redone");
    assert_eq!(info(&plan.runs[5].key), kept, "a complete run is never done twice");
    let st = campaign::status(&store).unwrap();
    assert_eq!(
        (st.done, st.missing, st.running, st.failed.len(), st.active),
        (32, 0, 0, 0, false)
    );
    assert!(
        st.bytes_per_run() > 5_000 && st.bytes_per_run() < 60_000,
        "{}",
        st.bytes_per_run()
    );
}

#[test]
fn jobs_do_not_change_results_and_the_tables_hold_exact_pair_differences() {
    let (d_guard, f) = setup("tables", CAMPAIGN);
    let d = d_guard.path();
    let one = campaign::run(&f, &mut Simulator, &opts(&d.join("one"), 1), &mut NoCampaignProgress).unwrap();
    let two = campaign::run(&f, &mut Simulator, &opts(&d.join("two"), 2), &mut NoCampaignProgress).unwrap();
    let (_, plan) = campaign::load(&f).unwrap();
    for r in &plan.runs {
        let a = std::fs::read(campaign::store::run_dir(&one.dir, &r.key).join("summary.json")).unwrap();
        let b = std::fs::read(campaign::store::run_dir(&two.dir, &r.key).join("summary.json")).unwrap();
        assert_eq!(a, b);
    }
    assert_eq!(
        std::fs::read(&one.tables.index).unwrap(),
        std::fs::read(&two.tables.index).unwrap()
    );

    // index.parquet: one row per run, parameters in SI units, metrics per flow and queue.
    let idx = read_table(&two.tables.index);
    let rows: usize = idx.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, 32);
    let b = &idx[0];
    let col = |n: &str| b.column_by_name(n).unwrap_or_else(|| panic!("no column {n}")).clone();
    let rate = col("topology.rate");
    let rate = rate.as_any().downcast_ref::<Float64Array>().unwrap();
    let rtt = col("topology.rtt");
    let rtt = rtt.as_any().downcast_ref::<Float64Array>().unwrap();
    let key = col("run");
    let key = key.as_any().downcast_ref::<StringArray>().unwrap();
    let thr = col("flow.bulk.throughput_bps");
    let thr = thr.as_any().downcast_ref::<Float64Array>().unwrap();
    let group = col("group");
    let group = group.as_any().downcast_ref::<StringArray>().unwrap();
    for i in 0..b.num_rows() {
        assert!(rate.value(i) == 10e6 || rate.value(i) == 20e6);
        assert!((0.005..0.040).contains(&rtt.value(i)));
        assert!(["quiet", "busy"].contains(&group.value(i)));
        let s = campaign::store::load_summary(&two.dir, key.value(i)).unwrap();
        assert_eq!(thr.value(i), s.flows[0].throughput_bps);
        // A 10 or 20 Mbit/s link mostly used by the bulk flow.
        assert!(
            thr.value(i) > 0.5 * rate.value(i),
            "{} of {}",
            thr.value(i),
            rate.value(i)
        );
    }
    for name in [
        "queue.bottleneck.sojourn_p99_ms",
        "flow.probe.owd_p99_ms",
        "class.L4S.throughput_bps",
        "seed",
        "pair",
        "variant",
    ] {
        assert!(b.column_by_name(name).is_some(), "no column {name}");
    }

    // pairs.parquet: l4s against classic per pair and metric, exactly.
    let pairs = read_table(&two.tables.pairs);
    let mut by_pair: HashMap<u32, (String, String)> = HashMap::new();
    for r in &plan.runs {
        let e = by_pair.entry(r.pair).or_default();
        if r.variant == 0 {
            e.0 = r.key.clone();
        } else {
            e.1 = r.key.clone();
        }
    }
    let mut checked = 0;
    for b in &pairs {
        let pair = b
            .column_by_name("pair")
            .unwrap()
            .as_any()
            .downcast_ref::<UInt32Array>()
            .unwrap()
            .clone();
        let seed = b
            .column_by_name("seed")
            .unwrap()
            .as_any()
            .downcast_ref::<UInt64Array>()
            .unwrap()
            .clone();
        let metric = b
            .column_by_name("metric")
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap()
            .clone();
        let variant = b
            .column_by_name("variant")
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap()
            .clone();
        let get = |n: &str| {
            b.column_by_name(n)
                .unwrap()
                .as_any()
                .downcast_ref::<Float64Array>()
                .unwrap()
                .clone()
        };
        let (v, bv, diff) = (get("value"), get("baseline_value"), get("difference"));
        for i in 0..b.num_rows() {
            assert_eq!(variant.value(i), "l4s");
            let (l4s, classic) = &by_pair[&pair.value(i)];
            let sl = campaign::store::load_summary(&two.dir, l4s).unwrap();
            let sc = campaign::store::load_summary(&two.dir, classic).unwrap();
            assert_eq!(sl.scenario.seed, seed.value(i));
            let find = |s: &l4s_metrics::summary::Summary| {
                campaign::tables::metrics(s)
                    .into_iter()
                    .find(|(k, _)| k == metric.value(i))
                    .map(|(_, x)| x)
                    .unwrap()
            };
            assert_eq!(v.value(i), find(&sl));
            assert_eq!(bv.value(i), find(&sc));
            assert_eq!(diff.value(i), find(&sl) - find(&sc));
            assert!(!diff.is_null(i));
            checked += 1;
        }
    }
    assert!(checked > 16 * 20, "{checked} pair rows");
}

#[test]
fn a_store_is_ours_alone_and_holds_one_campaign_unless_updated() {
    let (d_guard, f) = setup("store", CAMPAIGN);
    let d = d_guard.path();
    // A folder of the user's is never used.
    let theirs = d.join("theirs");
    std::fs::create_dir_all(&theirs).unwrap();
    std::fs::write(theirs.join("thesis.tex"), "mine").unwrap();
    let e = campaign::run(&f, &mut Simulator, &opts(&theirs, 1), &mut NoCampaignProgress).unwrap_err();
    assert!(e.message.contains("not an l4s-lab campaign store"), "{e}");
    assert_eq!(std::fs::read_to_string(theirs.join("thesis.tex")).unwrap(), "mine");
    assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 1);

    let store = d.join("store");
    campaign::run(&f, &mut Simulator, &opts(&store, 2), &mut NoCampaignProgress).unwrap();
    // Another campaign into the same store is refused...
    std::fs::write(&f, CAMPAIGN.replace("\"20Mbit\"]", "\"20Mbit\", \"30Mbit\"]")).unwrap();
    let e = campaign::run(&f, &mut Simulator, &opts(&store, 2), &mut NoCampaignProgress).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Input);
    assert!(
        e.message.contains("holds the runs of another campaign") && e.message.contains("--update"),
        "{e}"
    );
    // ...unless told: the runs both share are kept, only the new ones run.
    let o = CampaignOptions {
        update: true,
        ..opts(&store, 2)
    };
    let out = campaign::run(&f, &mut Simulator, &o, &mut NoCampaignProgress).unwrap();
    assert_eq!((out.unique_runs, out.already_done, out.ran), (48, 32, 16));
    assert_eq!(campaign::status(&store).unwrap().other_runs, 0);
    // Back to the first plan: its 32 runs are all there; the 16 of the larger plan are
    // kept, counted apart, and left out of the tables.
    std::fs::write(&f, CAMPAIGN).unwrap();
    let out = campaign::run(&f, &mut Simulator, &o, &mut NoCampaignProgress).unwrap();
    assert_eq!((out.unique_runs, out.already_done, out.ran), (32, 32, 0));
    assert_eq!(out.tables.index_rows, 32);
    let st = campaign::status(&store).unwrap();
    assert_eq!((st.unique_runs, st.done, st.missing, st.other_runs), (32, 32, 0, 16));
    assert!(
        st.other_bytes > 16 * 1000 && st.run_bytes > 0,
        "{} {}",
        st.other_bytes,
        st.run_bytes
    );
    std::fs::write(&f, CAMPAIGN.replace("\"20Mbit\"]", "\"20Mbit\", \"30Mbit\"]")).unwrap();
    let out = campaign::run(&f, &mut Simulator, &o, &mut NoCampaignProgress).unwrap();
    assert_eq!((out.already_done, out.ran), (48, 0));
    // One process per store: a second is refused while the first holds it.
    let (_, plan) = campaign::load(&f).unwrap();
    let held = campaign::store::Store::open(&store, &plan, "", "", false, l4s_lab::Caller::Cli).unwrap();
    let e = campaign::run(&f, &mut Simulator, &opts(&store, 1), &mut NoCampaignProgress).unwrap_err();
    assert!(
        e.message.contains("another l4s process is running this campaign"),
        "{e}"
    );
    assert!(campaign::status(&store).unwrap().active);
    // A run being written (its `.KEY.tmp-PID` folder) counts as running while a process
    // holds the store, and as missing once none does.
    let key = &plan.unique_runs()[0].key;
    let run = campaign::store::run_dir(&store, key);
    std::fs::remove_dir_all(&run).unwrap();
    std::fs::create_dir(run.with_file_name(format!(".{key}.tmp-4242"))).unwrap();
    let st = campaign::status(&store).unwrap();
    assert_eq!((st.done, st.running, st.missing, st.other_runs), (47, 1, 0, 0));
    drop(held);
    let st = campaign::status(&store).unwrap();
    assert!(!st.active);
    assert_eq!((st.done, st.running, st.missing, st.other_runs), (47, 0, 1, 0));
}

#[test]
fn stopping_a_campaign_starts_no_new_run_and_a_restart_finishes_it() {
    let (d_guard, f) = setup("stop", CAMPAIGN);
    let d = d_guard.path();
    let store = d.join("store");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    struct StopAfter(usize, std::sync::Arc<std::sync::atomic::AtomicBool>);
    impl campaign::CampaignProgress for StopAfter {
        fn finished(&mut self, _: &campaign::PlannedRun, _: &Result<std::time::Duration, l4s_lab::Error>) {
            self.0 = self.0.saturating_sub(1);
            if self.0 == 0 {
                self.1.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
    }
    let o = CampaignOptions {
        stop: Some(stop.clone()),
        ..opts(&store, 1)
    };
    let out = campaign::run(&f, &mut Simulator, &o, &mut StopAfter(5, stop.clone())).unwrap();
    assert!(out.interrupted);
    // A run's results are written while the next one simulates, so the fifth is told
    // finished once the sixth has run: that one was under way when the stop came, and it
    // is kept. No seventh starts.
    assert_eq!((out.ran, out.done), (6, 6));
    assert_eq!(out.tables.index_rows, 6, "the tables hold what is done");
    let st = campaign::status(&store).unwrap();
    assert_eq!((st.done, st.missing), (6, 26));
    let out = campaign::run(&f, &mut Simulator, &opts(&store, 2), &mut NoCampaignProgress).unwrap();
    assert_eq!((out.ran, out.already_done, out.done), (26, 6, 32));
}

/// The simulator under another name (`"live"`: the executor treats it as a testbed whose
/// runs take real time, one at a time, and `gap` applies), logging each run it starts and
/// failing the `fail`-th (none with 0).
struct Wrapped {
    name: &'static str,
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    runs: usize,
    fail: usize,
}
impl Wrapped {
    fn live() -> Wrapped {
        Wrapped {
            name: "live",
            log: Default::default(),
            runs: 0,
            fail: 0,
        }
    }
}
impl l4s_lab::Backend for Wrapped {
    fn name(&self) -> &'static str {
        self.name
    }
    fn preflight(&self, _: &l4s_scenario::Scenario) -> Result<(), l4s_lab::Error> {
        Ok(())
    }
    fn run(
        &mut self,
        sc: l4s_scenario::Scenario,
        outputs: l4s_lab::Outputs,
        progress: &mut dyn FnMut(l4s_core::Time),
    ) -> Result<(l4s_metrics::summary::Summary, l4s_lab::RunStats), l4s_lab::Error> {
        self.runs += 1;
        self.log.lock().unwrap().push(format!("run {}", self.runs));
        if self.runs == self.fail {
            return Err(l4s_lab::Error::new(ErrorKind::Run, "the planned failure"));
        }
        Simulator.run(sc, outputs, progress)
    }
}

#[test]
fn on_a_testbed_a_pair_split_by_more_than_the_gap_is_run_again_whole() {
    let small = CAMPAIGN
        .replace(
            "\"topology.rate\" = [\"10Mbit\", \"20Mbit\"]",
            "\"topology.rate\" = [\"10Mbit\"]",
        )
        .replace("count = 2", "count = 1")
        .replace("seeds = 2", "seeds = 1")
        .replace(
            "[[groups]]\nname = \"busy\"\nset = { \"flows.bulk.start\" = \"0.5s\" }\n",
            "",
        );
    for (gap, backend_live, redone) in [
        (Some("1ms"), true, true),
        (None, true, false),
        (Some("1ms"), false, false),
    ] {
        let text = match gap {
            Some(g) => small.replace("seeds = 1", &format!("seeds = 1\ngap = \"{g}\"")),
            None => small.clone(),
        };
        let (d_guard, f) = setup("gap", &text);
        let d = d_guard.path();
        let store = d.join("store");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        struct StopNow(std::sync::Arc<std::sync::atomic::AtomicBool>);
        impl campaign::CampaignProgress for StopNow {
            fn finished(&mut self, _: &campaign::PlannedRun, _: &Result<std::time::Duration, l4s_lab::Error>) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let o = CampaignOptions {
            stop: Some(stop.clone()),
            ..opts(&store, 1)
        };
        // Half a pair done, as a testbed leaves it when stopped after its first run (the
        // simulator would have run the second while the first was written).
        let first = campaign::run(&f, &mut Wrapped::live(), &o, &mut StopNow(stop)).unwrap();
        let mut live = Wrapped::live();
        let backend: &mut dyn l4s_lab::Backend = if backend_live { &mut live } else { &mut Simulator };
        assert_eq!((first.unique_runs, first.ran), (2, 1), "one pair of two runs, one done");
        let (_, plan) = campaign::load(&f).unwrap();
        let done_key = &plan.runs[0].key;
        let info = std::fs::read(campaign::store::run_dir(&store, done_key).join("run-info.json")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let again = campaign::run(&f, backend, &opts(&store, 1), &mut NoCampaignProgress).unwrap();
        assert_eq!(again.done, 2);
        let info2 = std::fs::read(campaign::store::run_dir(&store, done_key).join("run-info.json")).unwrap();
        if redone {
            assert_eq!(again.ran, 2, "gap {gap:?}: the pair is run again whole");
        } else {
            assert_eq!(again.ran, 1, "gap {gap:?}, live {backend_live}: only the missing run");
            assert_eq!(info, info2, "the done run is kept");
        }
    }
}

#[test]
fn a_run_is_written_while_the_next_one_runs_and_every_run_is_told_in_order() {
    let (d_guard, f) = setup("pipelined", CAMPAIGN);
    let d = d_guard.path();
    let store = d.join("store");
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    struct Told(std::sync::Arc<std::sync::Mutex<Vec<String>>>, Vec<String>);
    impl campaign::CampaignProgress for Told {
        fn finished(&mut self, r: &campaign::PlannedRun, res: &Result<std::time::Duration, l4s_lab::Error>) {
            self.0.lock().unwrap().push(format!("told {}", res.is_ok()));
            self.1.push(r.key.clone());
        }
    }
    let mut backend = Wrapped {
        name: "sim",
        log: log.clone(),
        runs: 0,
        fail: 3,
    };
    let mut told = Told(log.clone(), Vec::new());
    let out = campaign::run(&f, &mut backend, &opts(&store, 1), &mut told).unwrap();
    let (_, plan) = campaign::load(&f).unwrap();
    let mut seen = std::collections::HashSet::new();
    let keys: Vec<String> = plan
        .runs
        .iter()
        .filter(|r| seen.insert(r.key.clone()))
        .map(|r| r.key.clone())
        .collect();
    assert_eq!(keys.len(), 32);
    assert_eq!(told.1, keys, "every run is told, in the order of the plan");
    assert_eq!((out.ran, out.done, out.failed.len()), (31, 31, 1));
    assert_eq!(out.failed[0].0, keys[2], "the third run failed");
    assert!(
        !campaign::store::run_dir(&store, &keys[2]).exists(),
        "a failed run leaves no folder"
    );
    let log = log.lock().unwrap().clone();
    // Run k + 1 starts before run k is told (its results were being written); the failed
    // run is told at once, after the run before it, and the run after it has none to wait
    // for.
    let mut expect = vec!["run 1".to_string()];
    for k in 2..=32 {
        expect.push(format!("run {k}"));
        match k {
            3 => {
                expect.push("told true".into());
                expect.push("told false".into());
            }
            4 => {}
            _ => expect.push("told true".into()),
        }
    }
    expect.push("told true".into());
    assert_eq!(log, expect);
    // What is stored is what a run alone writes (the test above compares the files).
    let again = campaign::run(&f, &mut Simulator, &opts(&store, 1), &mut NoCampaignProgress).unwrap();
    assert_eq!((again.ran, again.already_done, again.done), (1, 31, 32));
}
