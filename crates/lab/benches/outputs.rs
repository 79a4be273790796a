//! Output benchmark: `cargo bench -p l4s-lab --bench outputs`.
//!
//! What writing the results costs a run: `dumbbell-dualpi2` (60 s, 100 Mbit/s) run as
//! `l4s run` runs it (summary, snapshots every 100 ms, distributions, their Parquet copies
//! and the report, into a results directory), against the same simulation with no outputs
//! at all. Both in this process, interleaved, each first in turn; the share of the outputs from the best
//! times, and the median of the shares of each pair, which a noisy host disturbs less
//! (target: the outputs at most 10 % of the run). Then a campaign's lean run (summary and
//! distributions only, as Parquet; no snapshots, no report), started, run and written into
//! its directory, against the same simulation alone (target: at most 5 % more).
//! `--quick` (or L4S_BENCH_QUICK=1) runs 20 s, twice.

use l4s_lab::{Backend, NoProgress, Outputs, RunOptions, Simulator};
use std::path::Path;
use std::time::Instant;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick") || std::env::var("L4S_BENCH_QUICK").is_ok();
    let (reps, duration) = if quick {
        // Beyond the scenario's 10 s warm-up.
        (2, Some(l4s_core::Dur::from_secs(20)))
    } else {
        (
            std::env::var("L4S_BENCH_REPS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(15),
            None,
        )
    };
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/dumbbell-dualpi2.toml");
    let text = std::fs::read(&file).expect("scenario");
    let load = || {
        let mut sc = l4s_scenario::load_file(&file).expect("scenario");
        sc.apply_overrides(None, duration).expect("duration");
        sc
    };
    let out = std::env::temp_dir().join(format!("l4s-bench-outputs-{}", std::process::id()));
    let opts = RunOptions {
        command: Vec::new(),
        ..RunOptions::default()
    };
    // What a campaign with no `[outputs]` gives each of its runs.
    let lean_opts = l4s_lab::campaign::spec::OutputsSpec::default().run_options(Vec::new(), l4s_lab::Caller::Cli);
    let (mut alone, mut whole, mut shares) = (f64::MAX, f64::MAX, Vec::new());
    let (mut lean_best, mut lean_extra) = (f64::MAX, Vec::new());
    let simulate = || {
        let sc = load();
        let t = Instant::now();
        Simulator.run(sc, Outputs::default(), &mut |_| {}).expect("run");
        t.elapsed().as_secs_f64()
    };
    let with_outputs = || {
        let sc = load();
        let t = Instant::now();
        let run = l4s_lab::run_scenario(sc, Some(&text), &mut Simulator, &opts, &out, &mut NoProgress).expect("run");
        assert!(run.report.is_some_and(|r| r.is_ok()), "the report was written");
        t.elapsed().as_secs_f64()
    };
    let lean = || {
        let sc = load();
        let t = Instant::now();
        let run =
            l4s_lab::run_scenario(sc, Some(&text), &mut Simulator, &lean_opts, &out, &mut NoProgress).expect("run");
        assert!(run.dir.join("distributions.parquet").is_file() && !run.dir.join("distributions.csv").exists());
        t.elapsed().as_secs_f64()
    };
    for i in 0..reps {
        // Each first in turn, so that none gains from its place.
        let (a, w, l) = match i % 3 {
            0 => (simulate(), with_outputs(), lean()),
            1 => {
                let w = with_outputs();
                let l = lean();
                (simulate(), w, l)
            }
            _ => {
                let l = lean();
                let a = simulate();
                (a, with_outputs(), l)
            }
        };
        alone = alone.min(a);
        whole = whole.min(w);
        lean_best = lean_best.min(l);
        shares.push((w - a) / w * 100.0);
        lean_extra.push((l - a) / a * 100.0);
    }
    lean_extra.sort_by(f64::total_cmp);
    shares.sort_by(f64::total_cmp);
    let _ = std::fs::remove_dir_all(&out);
    println!(
        "outputs: dumbbell-dualpi2, {}: simulation alone {alone:.3} s, with every default output {whole:.3} s (best of {reps}): the outputs take {:.1} % of the run, median of the pairs {:.1} % (target <= 10 %)",
        duration.map_or("60 s".to_string(), |d| d.to_string()),
        (whole - alone) / whole * 100.0,
        shares[shares.len() / 2]
    );
    println!(
        "lean run: dumbbell-dualpi2, {}: simulation alone {alone:.3} s, started, run and written as a campaign's lean run {lean_best:.3} s (best of {reps}): {:+.1} %, median of the pairs {:+.1} % (target <= 5 %)",
        duration.map_or("60 s".to_string(), |d| d.to_string()),
        (lean_best - alone) / alone * 100.0,
        lean_extra[lean_extra.len() / 2]
    );
}
