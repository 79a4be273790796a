//! `l4s`: run an L4S scenario and write its results; a thin shell over the runner library
//! `l4s-lab` (arguments, the progress bar, printing).
//!
//! Exit status: 0 on success, 2 when the scenario or the command line is wrong (nothing
//! is run and no results directory is left behind), 130 after an interrupt, 1 when the
//! run itself fails, 3 when `--fail-on` is given and a run's verdict is that bad.

#![forbid(unsafe_code)]

mod args;
mod campaign;
mod shell;

use args::{BackendArg, Cli, Cmd, RunArgs, TraceCmd};
use clap::Parser;
use l4s_lab::{Backend, Live, RunOptions, Simulator};
use shell::Shell;
use std::process::ExitCode;

fn main() -> ExitCode {
    // A reader that goes away (`l4s run ... | head`) makes the next `println!` panic with
    // EPIPE, since Rust ignores SIGPIPE. That is no error of ours to report: the panic
    // unwinds (a live run's guards remove its namespaces on the way), says nothing, and
    // the exit status is the shell's for a process that SIGPIPE ended, 128 + 13.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !is_broken_pipe(info.payload()) {
            default_hook(info);
        }
    }));
    match std::panic::catch_unwind(command) {
        Ok(code) => code,
        Err(p) if is_broken_pipe(&*p) => ExitCode::from(141),
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// Whether a panic is the standard library's on printing to a closed pipe.
fn is_broken_pipe(payload: &(dyn std::any::Any + Send)) -> bool {
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("");
    message.starts_with("failed printing to std") && message.contains("(os error 32)")
}

fn command() -> ExitCode {
    match Cli::parse().cmd {
        Cmd::Run(args) => run(&args),
        Cmd::Report { dir, png } => {
            let r = l4s_report::write_report(&dir).and_then(|p| {
                println!("{}", p.display());
                if png {
                    let files = l4s_report::write_pngs(&dir, &dir.join("png"), l4s_report::DEFAULT_PNG_SCALE)?;
                    println!("{} charts as PNG in {}", files.len(), dir.join("png").display());
                }
                Ok(())
            });
            r.map_or_else(|e| fail(&l4s_lab::Error::from(e)), |_| ExitCode::SUCCESS)
        }
        Cmd::Compare {
            dirs,
            out,
            labels,
            log_x,
            png,
        } => {
            let opts = l4s_report::CompareOptions { labels, log_x };
            match l4s_lab::compare_with(&dirs, &out, &opts, png) {
                Ok((table, pngs)) => {
                    print!("{table}");
                    println!("comparison: {}", out.display());
                    if let Some(d) = pngs {
                        println!("charts as PNG in {}", d.display());
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e),
            }
        }
        Cmd::Trace(TraceCmd::Generate {
            scenario,
            link,
            seed,
            duration,
            out,
        }) => match l4s_lab::generate_trace(&scenario, link.as_deref(), seed, duration, &out) {
            Ok(t) => {
                println!(
                    "{}: {} delivery opportunities over {}, mean {}",
                    out.display(),
                    t.times_ms().len(),
                    t.period(),
                    t.mean_rate()
                );
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        },
        Cmd::Check {
            scenarios,
            set,
            warmup,
            show,
        } => {
            let sets = args::sets(&set, warmup);
            let mut code = ExitCode::SUCCESS;
            for scenario in &scenarios {
                let v = std::fs::read_to_string(scenario)
                    .map_err(|e| {
                        l4s_lab::Error::input(format!("{}: cannot read the scenario file: {e}", scenario.display()))
                    })
                    .and_then(|t| {
                        l4s_scenario::variants_with(&t, scenario, &sets, l4s_lab::Caller::Cli)
                            .map_err(l4s_lab::Error::from)
                    });
                match v {
                    Ok(v) => {
                        for (name, s) in &v {
                            println!(
                                "{}{}: ok ({} nodes, {} links, {} flows, {} simulated)",
                                scenario.display(),
                                name.as_ref().map(|n| format!(" [variant {n}]")).unwrap_or_default(),
                                s.nodes.len(),
                                s.links.len(),
                                s.flows.len(),
                                s.duration
                            );
                            if show {
                                print!("{}", l4s_scenario::describe(s));
                            }
                        }
                    }
                    Err(e) => code = fail(&as_given(e, &set, warmup)),
                }
            }
            code
        }
        Cmd::Campaign(c) => campaign::main(&c),
        Cmd::Router(args) => l4s_fwd::cli::router_main(&args),
        Cmd::Cleanup { run, force } => l4s_live::cli::cleanup_main(run.as_deref(), force),
        Cmd::Reflect(args) => l4s_live::cli::reflect_main(&args),
        Cmd::EcnCheck(args) => l4s_live::cli::ecn_check_main(&args),
    }
}

fn fail(e: &l4s_lab::Error) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(e.exit_code())
}

fn run(a: &RunArgs) -> ExitCode {
    if a.scenarios.len() > 1 && a.out.is_some() {
        return fail(&l4s_lab::Error::input(
            "--out names one results directory: with several scenario files, leave it out (each goes to results/<its name>)",
        ));
    }
    if a.scenarios.len() > 1 && a.json {
        return fail(&l4s_lab::Error::input(
            "--json prints one JSON document for one scenario file: with several, run each with --json on its own (or read each results/<name>/summary.json)",
        ));
    }
    // The simulator: the first SIGINT/SIGTERM stops the run at the time reached, whose
    // results are written marked incomplete (exit 130); a second one exits at once. The
    // live testbed installs its own handler in run_one.
    let stop = if a.backend == BackendArg::Live {
        None
    } else {
        match shell::interrupt_flag(true) {
            Ok(s) => Some(s),
            Err(e) => return fail(&e),
        }
    };
    // Every file is checked before the first runs: a mistake in the last must not wait
    // for the runs before it.
    if a.scenarios.len() > 1 {
        let opts = run_options(a, None);
        let check: Box<dyn Backend> = if a.backend == BackendArg::Live {
            Box::new(Live {
                ipv6: a.ipv6,
                ..Live::default()
            })
        } else {
            Box::new(Simulator)
        };
        let mut writes: Vec<(std::path::PathBuf, &std::path::Path)> = Vec::new();
        for f in &a.scenarios {
            let out = match l4s_lab::check_file(f, &*check, &opts) {
                Ok(out) => out,
                Err(e) => return fail(&e),
            };
            // The second would replace the first's results.
            if let Some((_, earlier)) = writes.iter().find(|(o, _)| *o == out) {
                return fail(&l4s_lab::Error::input(format!(
                    "{} and {} both write {}: give them different names (scenario.name), or run them one at a time with --out",
                    earlier.display(),
                    f.display(),
                    out.display()
                )));
            }
            writes.push((out, f));
        }
    }
    for f in &a.scenarios {
        let code = run_one(a, f, stop.clone());
        if code != ExitCode::SUCCESS {
            return code;
        }
    }
    ExitCode::SUCCESS
}

/// The runner's options from `l4s run`'s arguments.
fn run_options(a: &RunArgs, stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>) -> RunOptions {
    RunOptions {
        seed: a.seed,
        duration: a.duration,
        snapshot_interval: a.snapshot_interval,
        pcap: a.pcap,
        pcap_ipv6: a.ipv6,
        packets: a.packets,
        png: a.png,
        out: a.out.clone(),
        variants: a.variants.clone(),
        set: args::sets(&a.set, a.warmup),
        stop,
        ..RunOptions::default()
    }
}

fn run_one(
    a: &RunArgs,
    scenario: &std::path::Path,
    stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
) -> ExitCode {
    let live = a.backend == BackendArg::Live;
    if !live && a.ipv6 && !a.pcap {
        eprintln!("error: --ipv6 applies to --pcap in the simulator (or to --backend live)");
        return ExitCode::from(2);
    }
    // The simulator: the first SIGINT/SIGTERM stops the run at the time reached, whose
    // results are written marked incomplete (exit 130); a second one exits at once (the
    // results directory is written beside its place, so nothing half-written is left
    // there). The live testbed installs its own handler below.
    let opts = run_options(a, stop);
    let mut backend: Box<dyn Backend> = if live {
        let run_id = match a.run_id.as_deref().map(l4s_fwd::netns::RunId::parse) {
            None => None,
            Some(Ok(id)) => Some(id),
            Some(Err(e)) => return fail(&l4s_lab::Error::input(format!("--run-id: {e}"))),
        };
        // The first SIGINT/SIGTERM ends the run (the testbed is removed, no results are
        // written); if it has not ended 10 s later, or on a second signal, everything is
        // removed and the process exits.
        let live = match Live::interruptible(std::time::Duration::from_secs(10)) {
            Ok(l) => l,
            Err(e) => return fail(&e),
        };
        let quiet = a.quiet;
        Box::new(Live {
            ipv6: a.ipv6,
            run_id,
            on_start: Some(Box::new(move |id| {
                if !quiet {
                    eprintln!(
                        "live run {id}: namespaces {}* (removed at the end; after a kill: l4s cleanup --run {id})",
                        id.prefix()
                    );
                }
            })),
            ..live
        })
    } else {
        Box::new(Simulator)
    };
    let mut shell = Shell {
        quiet: a.quiet || a.json,
        json: a.json,
        bar: indicatif::ProgressBar::hidden(),
    };
    match l4s_lab::run_file(scenario, &mut *backend, &opts, &mut shell) {
        Ok(runs) => {
            if a.json {
                // As summary.json writes it (its keys in its order); variants in the file's.
                let text = match &runs.compare {
                    None => serde_json::to_string_pretty(&runs.runs[0].summary),
                    Some(_) => serde_json::to_string_pretty(&shell::InOrder(
                        runs.runs
                            .iter()
                            .map(|r| (r.variant.clone().unwrap_or_default(), &r.summary))
                            .collect(),
                    )),
                };
                match text {
                    Ok(t) => println!("{t}"),
                    Err(e) => return fail(&l4s_lab::Error::output(format!("cannot print the summary: {e}"))),
                }
            } else if let Some((page, table)) = &runs.compare {
                if a.quiet {
                    println!("{}", page.display());
                } else if let [one] = runs.runs.as_slice() {
                    // One variant picked: its tables are above, and a table of one run
                    // beside nothing would repeat them.
                    println!(
                        "\none variant ran ({}): set it beside another's results with `l4s compare {} DIR`",
                        one.variant.as_deref().unwrap_or_default(),
                        one.dir.display()
                    );
                } else {
                    println!(
                        "\n=== variants side by side (differences against {}) ===",
                        runs.runs[0].dir.display()
                    );
                    print!("{}", shell::clean(table));
                    println!("comparison: {}", page.display());
                }
            }
            for r in &runs.runs {
                if let Some(Err(e)) = &r.report {
                    eprintln!("error: the results are written, but report.html could not be built: {e}");
                    return ExitCode::from(1);
                }
                if let Some(Err(e)) = &r.png {
                    eprintln!(
                        "error: the results and report.html are written, but the PNG charts could not be drawn: {e}"
                    );
                    return ExitCode::from(1);
                }
            }
            // Stopped by a signal: what was written, and how to finish.
            if let Some(r) = runs.runs.iter().find(|r| !r.summary.complete) {
                eprintln!(
                    "interrupted at {:.1} s of {:.1} s: results up to then written to {} (marked incomplete); run again for the whole run",
                    r.summary.reached_s.unwrap_or(0.0),
                    r.summary.scenario.duration_s,
                    r.dir.display()
                );
                return ExitCode::from(130);
            }
            // --fail-on: the worst verdict of the runs against the threshold.
            let rank = |l: &str| match l {
                "good" => 0,
                "warn" => 1,
                _ => 2,
            };
            if let Some(f) = a.fail_on {
                let need = match f {
                    args::FailOn::Warn => 1,
                    args::FailOn::Problem => 2,
                };
                let worst = runs
                    .runs
                    .iter()
                    .filter_map(|r| r.summary.verdict.as_ref().map(|v| (rank(&v.level), r)))
                    .max_by_key(|(k, _)| *k);
                if let Some((k, r)) = worst.filter(|(k, _)| *k >= need) {
                    let v = r
                        .summary
                        .verdict
                        .as_ref()
                        .map(|v| v.headline.clone())
                        .unwrap_or_default();
                    eprintln!(
                        "fail-on: {} is {} ({}): exit 3",
                        r.dir.display(),
                        ["good", "warn", "bad"][k],
                        shell::clean(&v)
                    );
                    return ExitCode::from(3);
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            shell.bar.finish_and_clear();
            fail(&as_given(e, &a.set, a.warmup))
        }
    }
}

/// `--warmup` reaches the scenario as a set of `scenario.warmup` ([`args::sets`]): an
/// error that blames that set names `--warmup`, as the user gave it, unless a
/// `--set scenario.warmup` was given too.
fn as_given(mut e: l4s_lab::Error, set: &[(String, String)], warmup: Option<l4s_core::Dur>) -> l4s_lab::Error {
    if warmup.is_some() && !set.iter().any(|(k, _)| k == "scenario.warmup") {
        e.message = e
            .message
            .replace(&l4s_lab::Caller::Cli.set_key("scenario.warmup"), "--warmup");
    }
    e
}
