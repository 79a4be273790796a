//! `l4s campaign`: run a campaign file into its store, say where a store stands, and
//! rebuild its tables and its page.
//!
//! The doc comments below are the command's help texts (clap), written for a terminal:
//! `<campaign name>` is meant literally.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use clap::Subcommand;
use l4s_lab::campaign::{self, CampaignOptions, CampaignProgress, Plan, PlannedRun};
use l4s_lab::Error;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Subcommand)]
pub enum CampaignCmd {
    /// Run a campaign file: every run its store lacks, on every core, then the tables
    /// (index.parquet, pairs.parquet) and the page (campaign.html). Started again after an
    /// interrupt, it runs only what is missing. Ctrl-C stops starting runs (a second one
    /// exits at once).
    Run {
        /// Campaign file (TOML), e.g. campaigns/dualpi2-sweep.toml
        file: PathBuf,
        /// Runs at once (default, or 0: every core)
        #[arg(long, short)]
        jobs: Option<usize>,
        /// The store (default: results/campaigns/<campaign name>)
        #[arg(long)]
        out: Option<PathBuf>,
        /// The store holds another campaign's plan: make this file's plan the store's,
        /// keeping the runs both share
        #[arg(long)]
        update: bool,
        /// Print only the store's path
        #[arg(long, short)]
        quiet: bool,
        /// Make the campaign K times larger: K times the sampled draws (homes), or the
        /// seeds when it samples nothing (its store: results/campaigns/<name>-xK)
        #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        scale: u32,
        /// Where the runs go: `sim` (the simulator, every core) or `live` (the live
        /// testbed, one run at a time, the variants of a pair back to back; needs root)
        #[arg(long, value_enum, default_value = "sim")]
        backend: crate::args::BackendArg,
    },
    /// Say what a campaign store holds: runs done, running, failed and missing, and the
    /// disk per run.
    Status {
        /// The campaign store
        dir: PathBuf,
    },
    /// Build index.parquet and pairs.parquet again from a store's completed runs.
    Tables {
        /// The campaign store
        dir: PathBuf,
    },
    /// Build the campaign's page, DIR/campaign.html, from a store's completed runs: a
    /// verdict per group, the paired differences, summary statistics with bootstrap
    /// intervals, and each metric against each parameter.
    Report {
        /// The campaign store
        dir: PathBuf,
        /// Also write every chart as a PNG into DIR/png/ (needs a system font)
        #[arg(long)]
        png: bool,
        /// Metrics to show, as columns of index.parquet; `*` matches any text
        /// (default: flow.*.owd_p99_ms, flow.*.frame_delay_p99_ms, flow.*.*_time_p99_ms)
        #[arg(long = "metric", value_name = "PATTERN")]
        metrics: Vec<String>,
    },
}

pub fn main(cmd: &CampaignCmd) -> ExitCode {
    match cmd {
        CampaignCmd::Run {
            file,
            jobs,
            out,
            update,
            quiet,
            scale,
            backend,
        } => run(file, *jobs, out.clone(), *update, *quiet, *scale, *backend),
        CampaignCmd::Status { dir } => match campaign::status(dir) {
            Ok(s) => {
                print_status(&s);
                ExitCode::SUCCESS
            }
            Err(e) => crate::fail(&e),
        },
        CampaignCmd::Tables { dir } => match campaign::write_tables(dir) {
            Ok(t) => {
                println!("{} ({} rows)", t.index.display(), t.index_rows);
                println!("{} ({} rows)", t.pairs.display(), t.pair_rows);
                ExitCode::SUCCESS
            }
            Err(e) => crate::fail(&e),
        },
        CampaignCmd::Report { dir, png, metrics } => {
            let opts = campaign::report::ReportOptions {
                png: *png,
                metrics: metrics.clone(),
            };
            match campaign::report::write_report_with(dir, &opts) {
                Ok(w) => {
                    println!("{}", w.html.display());
                    if *png {
                        println!("{} charts as PNG in {}", w.pngs.len(), dir.join("png").display());
                    }
                    for n in &w.notes {
                        eprintln!("note: {n}");
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => crate::fail(&e),
            }
        }
    }
}

fn print_status(s: &campaign::Status) {
    println!("campaign {} in {}", s.name, s.dir.display());
    println!(
        "  {} runs in the plan ({} distinct): {} done, {} running, {} failed, {} missing",
        s.runs,
        s.unique_runs,
        s.done,
        s.running,
        s.failed.len(),
        s.missing
    );
    println!(
        "  {}; last started {} with l4s {}",
        if s.active {
            "a process is running it now"
        } else {
            "no process is running it"
        },
        s.updated_utc,
        s.l4s_version
    );
    if s.done > 0 {
        println!(
            "  runs on disk: {:.1} MB, {:.1} kB per run",
            s.run_bytes as f64 / 1e6,
            s.bytes_per_run() as f64 / 1e3
        );
    }
    if s.other_runs > 0 {
        println!(
            "  {} more runs on disk ({:.1} MB) are of an earlier plan (kept by --update; not in the tables)",
            s.other_runs,
            s.other_bytes as f64 / 1e6
        );
    }
    for (k, msg) in s.failed.iter().take(5) {
        println!("  failed {k}: {}", msg.lines().next().unwrap_or(""));
    }
    if s.failed.len() > 5 {
        println!("  ... and {} more failed (DIR/failed/)", s.failed.len() - 5);
    }
}

/// Progress on a terminal (a bar), or a line every tenth of the runs.
struct Shell {
    quiet: bool,
    bar: indicatif::ProgressBar,
    todo: usize,
    seen: usize,
    failed: usize,
}

impl CampaignProgress for Shell {
    fn planned(&mut self, plan: &Plan, dir: &Path, todo: usize, unique: usize) {
        self.todo = todo;
        if self.quiet {
            return;
        }
        println!(
            "campaign {}: {} ({} distinct, {} x {} x {}); {} in the store, {} to run; store {}",
            plan.name,
            count(plan.runs.len(), "run"),
            unique,
            count(plan.points.len(), "point"),
            count(plan.seeds.len(), "seed"),
            count(plan.variants.len(), "variant"),
            unique - todo,
            todo,
            dir.display()
        );
        if std::io::stderr().is_terminal() && todo > 0 {
            let b = indicatif::ProgressBar::new(todo as u64);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "  {bar:30.cyan/blue} {pos}/{len} runs {msg} elapsed {elapsed} eta {eta}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            self.bar = b;
        }
    }
    fn finished(&mut self, run: &PlannedRun, result: &Result<Duration, Error>) {
        self.seen += 1;
        if let Err(e) = result {
            self.failed += 1;
            if !self.quiet {
                self.bar
                    .suspend(|| eprintln!("run {} (seed {}) failed: {e}", run.key, run.seed));
            }
        }
        self.bar.set_position(self.seen as u64);
        if self.failed > 0 {
            self.bar.set_message(format!("({} failed)", self.failed));
        }
        if !self.quiet && self.bar.is_hidden() && self.todo >= 10 && self.seen.is_multiple_of(self.todo / 10) {
            println!("  {}/{} runs", self.seen, self.todo);
        }
    }
}

fn run(
    file: &Path,
    jobs: Option<usize>,
    out: Option<PathBuf>,
    update: bool,
    quiet: bool,
    scale: u32,
    backend: crate::args::BackendArg,
) -> ExitCode {
    let live = backend == crate::args::BackendArg::Live;
    // A live run removes its testbed on SIGINT/SIGTERM (and ends the campaign below).
    let mut backend: Box<dyn l4s_lab::Backend> = if live {
        match l4s_lab::Live::interruptible(std::time::Duration::from_secs(10)) {
            Ok(l) => Box::new(l),
            Err(e) => return crate::fail(&e),
        }
    } else {
        Box::new(l4s_lab::Simulator)
    };
    // The first SIGINT/SIGTERM stops starting runs; the runs under way finish and the
    // tables are written. A second one exits at once (no run is half-written: each is
    // renamed into place when complete).
    // Live: the testbed's own handler removes everything on a second signal.
    let stop = match crate::shell::interrupt_flag(!live) {
        Ok(s) => s,
        Err(e) => return crate::fail(&e),
    };
    let opts = CampaignOptions {
        jobs: jobs.unwrap_or(if live { 1 } else { 0 }),
        out,
        update,
        stop: Some(stop),
        ..CampaignOptions::default()
    };
    let mut shell = Shell {
        quiet,
        bar: indicatif::ProgressBar::hidden(),
        todo: 0,
        seen: 0,
        failed: 0,
    };
    let spec = match campaign::spec::load(file).and_then(|s| s.scaled(scale)) {
        Ok(s) => s,
        Err(e) => return crate::fail(&e.into()),
    };
    let res = campaign::run_spec(spec, &mut *backend, &opts, &mut shell);
    shell.bar.finish_and_clear();
    let o = match res {
        Ok(o) => o,
        Err(e) => return crate::fail(&e),
    };
    if quiet {
        println!("{}", o.dir.display());
    } else {
        println!(
            "{} of {} distinct runs done ({} now, {} before) in {:.1} s wall; {} failed",
            o.done,
            o.unique_runs,
            o.ran,
            o.already_done,
            o.wall.as_secs_f64(),
            o.failed.len()
        );
        if o.ran > 0 {
            println!(
                "  per run: {:.3} s, {:.1} kB on disk",
                o.run_wall.as_secs_f64() / o.ran as f64,
                o.ran_bytes as f64 / o.ran as f64 / 1e3
            );
        }
        println!("index: {} ({} rows)", o.tables.index.display(), o.tables.index_rows);
        println!("pairs: {} ({} rows)", o.tables.pairs.display(), o.tables.pair_rows);
        if let Ok(p) = &o.report {
            println!("report: {}", p.display());
        }
    }
    // The runs and tables are kept: a page that could not be made is only a warning
    // (`l4s campaign report DIR` makes it again).
    if let Err(e) = &o.report {
        eprintln!("warning: no campaign.html: {e}");
    }
    for n in &o.report_notes {
        eprintln!("note: {n}");
    }
    if o.interrupted {
        eprintln!(
            "interrupted: {} of {} runs done; run the same command again to run the rest",
            o.done, o.unique_runs
        );
        return ExitCode::from(130);
    }
    if !o.failed.is_empty() {
        eprintln!(
            "error: {} runs failed (why: {}/failed/); run the same command again to try them again",
            o.failed.len(),
            o.dir.display()
        );
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// `n` and the noun, in the plural unless `n` is 1: "1 variant", "4 runs".
fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}
