//! # l4s-lab
//!
//! The runner library: a scenario and options in, a committed results directory and its
//! summary out. The `l4s` command is a thin shell over it (argument parsing, the progress
//! bar, printing), and so is any other front end, such as a Python package or a campaign
//! runner.
//!
//! ```no_run
//! use l4s_lab::{run_file, RunOptions, Simulator};
//! let runs = run_file(
//!     std::path::Path::new("scenarios/dumbbell-dualpi2.toml"),
//!     &mut Simulator,
//!     &RunOptions::default(),
//!     &mut l4s_lab::NoProgress,
//! )
//! .unwrap();
//! for r in &runs.runs {
//!     println!("{}: {}", r.dir.display(), r.summary.flows[0].throughput_bps);
//! }
//! ```
//!
//! * [`run_file`] / [`run_text`]: a scenario file (or its text) with its `[[variants]]`:
//!   each variant into its own directory and a comparison page of all of them.
//! * [`run_scenario`]: one validated scenario into one results directory.
//! * [`Backend`]: where a scenario runs, [`Simulator`] or [`Live`].
//! * [`compare`]: several results directories side by side.
//!
//! A results directory is written beside its final place and renamed into it when
//! complete ([`l4s_metrics::results::ResultsDir`]): a failed or interrupted run leaves
//! nothing half-written, and only an earlier l4s-lab results directory is ever replaced.

#![forbid(unsafe_code)]

mod backend;
pub mod campaign;
mod error;

pub use backend::{Backend, Live, RunStats, Simulator};
pub use error::{Error, ErrorKind, Location};
pub use l4s_measure::{Outputs, SnapshotSinks};
pub use l4s_scenario::Caller;

use l4s_core::{Dur, Time};
use l4s_metrics::results::{table_file, ResultsDir, TABLES};
use l4s_metrics::summary::Summary;
use l4s_scenario::Scenario;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The shortest interval of the time series: its rows carry millisecond times.
pub const MIN_SNAPSHOT_INTERVAL: Dur = Dur::from_millis(1);

/// Why `d` cannot be the interval of the time series, if it cannot: the rows carry times in
/// whole milliseconds, so an interval must be a whole number of them (1.5 ms would give
/// rows at 0.002, 0.003, 0.004, 0.006 s: uneven steps that are not the interval asked for).
/// Zero, for no time series, is allowed.
pub fn snapshot_interval_error(d: Dur) -> Option<String> {
    if d.is_zero() {
        return None;
    }
    if d < MIN_SNAPSHOT_INTERVAL {
        return Some(format!(
            "{d}: the time series is written at most every {MIN_SNAPSHOT_INTERVAL} (its rows have millisecond times)"
        ));
    }
    if !d.as_nanos().is_multiple_of(MIN_SNAPSHOT_INTERVAL.as_nanos()) {
        return Some(format!(
            "{d}: expected a whole number of milliseconds (the time series' rows have millisecond times)"
        ));
    }
    None
}

/// Bottleneck packets the simulator forwards per wall-clock second on a machine of this
/// project's kind (`cargo bench -p l4s-sim`: 0.95–1.2 M): what the expected wall time of a
/// long run is estimated from.
const SIM_PACKETS_PER_SECOND: f64 = 1.0e6;

/// Events the simulator handles per wall-clock second (`cargo bench -p l4s-sim`: about
/// 8 M): what the wall time of timers that fire regardless of traffic is estimated from.
const SIM_EVENTS_PER_SECOND: f64 = 8.0e6;

/// What a person should know before a run starts: the size of its time series when it is
/// large, and its expected wall time when it is long (the simulator only).
fn notices(sc: &Scenario, opts: &RunOptions, backend: &str) -> Vec<String> {
    let mut out = Vec::new();
    // The loader refuses such a flow in the file's own duration; a shorter duration given
    // for the run leaves it out, which the verdict reports as a silent flow.
    if let Some(d) = opts.duration {
        for f in sc.flows.iter().filter(|f| f.start >= d) {
            out.push(format!(
                "flow {:?} starts at {}, and this run ends at {} ({}): it will send nothing",
                f.name,
                f.start,
                d,
                opts.caller.option_value("duration", &d.to_string())
            ));
        }
    }
    let secs = sc.duration.as_secs_f64();
    if !opts.snapshot_interval.is_zero() {
        // About 110 bytes a row in CSV, and about as much again as Parquet.
        let estimate =
            |queues: usize| secs / opts.snapshot_interval.as_secs_f64() * (sc.flows.len() + queues) as f64 * 220.0;
        // At most one queue a link, or several on a shared medium (Wi-Fi, a cell); only
        // when that could be much, the links' models say how many queues they report
        // (a wire that only delays has none: a dumbbell of 10 000 flows has 40 002 links
        // and two queues).
        let mut bytes = estimate(sc.links.len());
        if bytes > 100e6 {
            let queues = sc
                .links
                .iter()
                .enumerate()
                .filter(|(i, l)| l.medium.as_ref().is_none_or(|m| m.owner == *i))
                .map(|(_, l)| {
                    l4s_link::build::<l4s_sim::packet::Packet>(&l.config(sc.duration), l4s_core::Rng::new(0))
                        .queues()
                        .len()
                })
                .sum();
            bytes = estimate(queues);
        }
        if bytes > 100e6 {
            let less = format!(
                "{} or {}",
                opts.caller.option_value("snapshot-interval", "1s"),
                opts.caller.option_off("snapshot-interval")
            );
            out.push(format!(
                "this run will write about {:.0} MB of time series (a row per flow and queue every {}); {less} writes less",
                bytes / 1e6,
                opts.snapshot_interval
            ));
        }
    }
    if backend == "sim" {
        let bits: f64 = sc
            .links
            .iter()
            .filter(|l| l.bottleneck)
            .filter_map(|l| l.rate)
            .map(|r| r.bits_per_sec() as f64)
            .sum();
        let packets = bits * secs / (1500.0 * 8.0) / SIM_PACKETS_PER_SECOND;
        // Timers that fire whatever the traffic: each AQM's periodic update and each rate
        // schedule's changes, one event each.
        let timers: f64 = sc
            .links
            .iter()
            .filter(|l| l.rate.is_some())
            .map(|l| {
                let aqm = l
                    .aqm
                    .update_interval()
                    .map_or(0.0, |t| 1.0 / t.as_secs_f64().max(1e-12));
                let schedule = match l.schedule.repeat {
                    Some(p) => l.schedule.steps.len() as f64 / p.as_secs_f64().max(1e-12),
                    None => 0.0,
                };
                aqm + schedule
            })
            .sum();
        let timer_wall = timers * secs / SIM_EVENTS_PER_SECOND;
        let wall = packets + timer_wall;
        if wall > 3600.0 {
            let why = if timer_wall > packets {
                format!(
                    "{} simulated with {:.3e} timer events per simulated second from AQM update intervals and rate schedules, about 8 M events per second here",
                    sc.duration, timers
                )
            } else {
                format!(
                    "{} simulated at {:.0} Mbit/s of bottlenecks, about 1 M packets per second here",
                    sc.duration,
                    bits / 1e6
                )
            };
            out.push(format!(
                "this run is expected to take about {:.1} hours of wall time ({why}); Ctrl-C stops it and keeps the results up to then",
                wall / 3600.0,
            ));
        }
    }
    out
}

/// How to run and what to write.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// Overrides the scenario's duration.
    pub duration: Option<Dur>,
    /// Interval of the time series (`snapshots-*.csv`); zero writes none.
    pub snapshot_interval: Dur,
    /// Write the bottleneck's egress as `bottleneck.pcap` (the simulator), with IPv6
    /// addresses when `pcap_ipv6`.
    pub pcap: bool,
    pub pcap_ipv6: bool,
    /// Write `packets.parquet`, one row per data packet.
    pub packets: bool,
    /// Build `report.html` (default), and every chart as a PNG in `png/`.
    pub report: bool,
    pub png: bool,
    /// The results directory (default `results/<scenario name>`). For a file with
    /// variants, the directory of the variants' directories.
    pub out: Option<PathBuf>,
    /// Run only these variants of a file with `[[variants]]` (in file order).
    pub variants: Vec<String>,
    /// The command recorded in `run-info.json`.
    pub command: Vec<String>,
    /// Keep the time series and distributions as CSV beside their Parquet (default); a
    /// campaign keeps only the Parquet.
    pub keep_csv: bool,
    /// Lock the results directory while the run writes it (default), so that a second run
    /// into it is refused; a campaign, which locks its whole store, does not.
    pub lock_out: bool,
    /// Scenario keys to set in every run (`--set KEY=VALUE`: the paths of `[[variants]]`,
    /// applied after a variant's own keys; a value that is not TOML is a string).
    pub set: Vec<(String, String)>,
    /// Set (by a Ctrl-C handler, say) to stop the simulator at the time reached: the run's
    /// results are written up to then and marked incomplete (`summary.json` `complete:
    /// false`, `reached_s`), and no further variant starts.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Who asked for the run: how its messages name these options.
    pub caller: Caller,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            seed: None,
            duration: None,
            snapshot_interval: Dur::from_millis(100),
            pcap: false,
            pcap_ipv6: false,
            packets: false,
            report: true,
            png: false,
            out: None,
            variants: Vec::new(),
            command: std::env::args().collect(),
            keep_csv: true,
            lock_out: true,
            set: Vec::new(),
            stop: None,
            caller: Caller::Cli,
        }
    }
}

/// One finished run.
#[derive(Debug)]
pub struct Run {
    /// The variant, for a file with `[[variants]]`.
    pub variant: Option<String>,
    /// The committed results directory.
    pub dir: PathBuf,
    pub summary: Summary,
    pub stats: RunStats,
    /// Wall-clock time of the run itself.
    pub wall: std::time::Duration,
    /// `report.html`, or why it could not be built (the results are kept either way).
    pub report: Option<Result<PathBuf, String>>,
    /// With `png`: the directory of the charts as PNG, or why they could not be drawn
    /// (the results and `report.html` are kept either way).
    pub png: Option<Result<PathBuf, String>>,
}

/// The runs of a scenario file, and the comparison of its variants.
#[derive(Debug)]
pub struct Runs {
    pub runs: Vec<Run>,
    /// With variants: the comparison page and the difference table (against the first).
    pub compare: Option<(PathBuf, String)>,
}

/// What a front end is told while runs go.
pub trait Progress {
    /// A variant starts.
    fn variant(&mut self, _name: &str) {}
    /// A run of `total` starts on `backend`.
    fn started(&mut self, _total: Dur, _backend: &str) {}
    /// The run has reached `t`.
    fn time(&mut self, _t: Time) {}
    /// Something a person should know before the run goes on (a large output, a long run).
    fn notice(&mut self, _message: &str) {}
    /// A run finished and its results are committed.
    fn finished(&mut self, _run: &Run) {}
}

/// Tells nothing.
pub struct NoProgress;
impl Progress for NoProgress {}

/// Run a scenario file, with its variants if it has `[[variants]]`.
pub fn run_file(
    path: &Path,
    backend: &mut dyn Backend,
    opts: &RunOptions,
    progress: &mut dyn Progress,
) -> Result<Runs, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::input(format!("{}: cannot read the scenario file: {e}", path.display())))?;
    run_text(&text, path, backend, opts, progress)
}

/// Check a scenario file as [`run_file`] would before running it, with the same options
/// and backend, and run nothing: the file, its variants, the overrides, what the backend
/// can run, and the results directories it would write. A front end given several files
/// checks them all first, so that a mistake in the last is not found after hours of the
/// first. Returns the folder the run would write: its results directory, or the folder
/// of its variants (so that the front end can refuse two files that would write one).
pub fn check_file(path: &Path, backend: &dyn Backend, opts: &RunOptions) -> Result<PathBuf, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::input(format!("{}: cannot read the scenario file: {e}", path.display())))?;
    Ok(match plan(&text, path, backend, opts)? {
        Plan::One(_, out) => out,
        Plan::Variants(_, base) => base,
    })
}

/// What [`run_text`] will run, checked before anything is created.
enum Plan {
    /// A scenario without variants, into its results directory.
    One(Box<Scenario>, PathBuf),
    /// Variants, each into a folder of `base`.
    Variants(Vec<(Option<String>, Scenario)>, PathBuf),
}

/// The runs `text` asks for with these options, and the checks each would make before
/// running ([`pre_run_check`]); for variants, also the folder that holds them.
fn plan(text: &str, path: &Path, backend: &dyn Backend, opts: &RunOptions) -> Result<Plan, Error> {
    let mut variants = l4s_scenario::variants_with(text, path, &opts.set, opts.caller)?;
    if !opts.variants.is_empty() {
        let names: Vec<String> = variants.iter().filter_map(|v| v.0.clone()).collect();
        if names.is_empty() {
            return Err(Error::input(format!(
                "{}: {} has no [[variants]]",
                opts.caller.option("variant"),
                path.display()
            )));
        }
        if let Some(bad) = opts.variants.iter().find(|v| !names.contains(v)) {
            return Err(Error::input(format!(
                "{}: {} has no variant {bad:?}; expected one of {}",
                opts.caller.option("variant"),
                path.display(),
                names.join(", ")
            )));
        }
        variants.retain(|v| v.0.as_ref().is_some_and(|n| opts.variants.contains(n)));
    }
    // --seed and --duration, applied and checked once, before anything is created; the
    // variants hold one copy of each capacity draw they share.
    for k in 0..variants.len() {
        let (earlier, rest) = variants.split_at_mut(k);
        let (name, sc) = &mut rest[0];
        let variant = name.as_ref().map(|n| format!("variant {n}: ")).unwrap_or_default();
        sc.apply_overrides(opts.seed, opts.duration).map_err(|e| {
            Error::input(match e {
                // Worded here, where the option and the file are known.
                l4s_scenario::OverrideError::NotAfterWarmup { duration, warmup } => {
                    let whose = if opts.set.iter().any(|(k, _)| k == "scenario.warmup") {
                        "the warm-up set for the run"
                    } else {
                        "the file's warm-up"
                    };
                    format!(
                        "{}: {variant}{}: not longer than {whose} ({warmup}); give a longer duration or a shorter warm-up",
                        path.display(),
                        opts.caller.option_value("duration", &duration.to_string()),
                    )
                }
                e => format!("{}: {variant}{e}", path.display()),
            })
        })?;
        sc.share_draws(earlier.iter().map(|(_, s)| s));
    }
    if variants.len() == 1 && variants[0].0.is_none() {
        let sc = variants.remove(0).1;
        let out = opts
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from("results").join(&sc.name));
        pre_run_check(&sc, backend, opts, &out)?;
        return Ok(Plan::One(Box::new(sc), out));
    }
    // A variant this backend cannot run is refused before any runs, naming those that can.
    let refused: Vec<(String, Error)> = variants
        .iter()
        .filter_map(|(n, sc)| Some((n.clone().unwrap_or_default(), backend.preflight(sc).err()?)))
        .collect();
    if let Some((_, first)) = refused.first() {
        let mut msg: Vec<String> = refused.iter().map(|(n, e)| format!("variant {n}: {e}")).collect();
        let ok: Vec<String> = variants
            .iter()
            .filter_map(|(n, _)| n.clone())
            .filter(|n| refused.iter().all(|(r, _)| r != n))
            .map(|n| opts.caller.option_value("variant", &n))
            .collect();
        if !ok.is_empty() {
            msg.push(format!(
                "the variants that can run {} here: {}",
                backend.name(),
                ok.join(" ")
            ));
        }
        return Err(Error::new(first.kind, msg.join("\n")));
    }
    let base = opts
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(&variants[0].1.name));
    check_variant_folder(&base, opts.caller)?;
    for (name, sc) in &variants {
        pre_run_check(sc, backend, opts, &base.join(name.as_deref().unwrap_or_default()))?;
    }
    Ok(Plan::Variants(variants, base))
}

/// The results folder was refused (`why`, which ends by saying to write the results
/// elsewhere): with the option that chooses another.
fn out_refused(why: impl std::fmt::Display, caller: Caller) -> Error {
    Error::input(format!("{why} ({})", caller.option("out")))
}

/// A folder was refused (`why`): with the option that chooses another.
pub(crate) fn choose_another(why: impl std::fmt::Display, caller: Caller) -> Error {
    Error::input(format!("{why}; choose another folder with {}", caller.option("out")))
}

/// Refuse `dir` as a folder to write into when it is a symbolic link to nothing, or
/// exists and is not a directory.
pub(crate) fn check_folder_kind(dir: &Path, caller: Caller) -> Result<(), Error> {
    if let Some(why) = l4s_metrics::results::dangling_link(dir) {
        return Err(choose_another(why, caller));
    }
    if dir.exists() && !dir.is_dir() {
        return Err(choose_another(
            format_args!("{} exists and is not a directory", dir.display()),
            caller,
        ));
    }
    Ok(())
}

/// Whether `base` may hold a set of variants: a folder, or nothing yet, that is not one
/// run's results directory, whose `variants.json` and `compare.html` (which the set
/// writes) are ours if they are there.
fn check_variant_folder(base: &Path, caller: Caller) -> Result<(), Error> {
    use l4s_metrics::results::{MARKER, OWNER_MARK};
    let out = caller.option("out");
    check_folder_kind(base, caller)?;
    if !base.exists() {
        return Ok(());
    }
    if base.join(OWNER_MARK).exists() || base.join(MARKER).exists() {
        return Err(Error::input(format!(
            "{} holds the results of one run ({MARKER}), and a scenario with [[variants]] writes a folder per variant there: move it elsewhere, or choose another folder with {out}",
            base.display()
        )));
    }
    let manifest = base.join(l4s_report::variant_set::MANIFEST);
    if manifest.exists() && l4s_report::variant_set::VariantSet::read(base).is_none() {
        return Err(Error::input(format!(
            "{} exists and is not an l4s-lab variant manifest; choose another folder with {out}",
            manifest.display()
        )));
    }
    let page = base.join(COMPARE_PAGE);
    if foreign_page(&page) {
        return Err(Error::input(format!(
            "{} exists and is not a page l4s-lab wrote: move it elsewhere, or choose another folder with {out}",
            page.display()
        )));
    }
    // Beside those two, only results directories (a variant's, of this set or an earlier
    // one) and a run's own lock and temporary folders.
    let foreign = l4s_metrics::results::foreign_entries(base, |name, path, is_dir| {
        name == l4s_report::variant_set::MANIFEST
            || name == COMPARE_PAGE
            || (name.starts_with('.') && (name.ends_with(".lock") || name.contains(".tmp-")))
            || (is_dir && (path.join(OWNER_MARK).is_file() || path.join(MARKER).is_file()))
            // `l4s compare --png` of the set's page: its charts beside it (what else is
            // in there is named below).
            || (name == "compare-png" && is_dir)
    });
    let foreign = l4s_metrics::results::with_foreign_charts(foreign, base, "compare-png");
    if !foreign.is_empty() {
        return Err(Error::input(format!(
            "{} holds files l4s did not write ({}), and a scenario with [[variants]] writes a folder per variant there: move them elsewhere, or choose another folder with {out}",
            base.display(),
            foreign.join(", ")
        )));
    }
    Ok(())
}

/// Whether something is at `path` that is not a page l4s-lab wrote (and so must not be
/// replaced by one).
fn foreign_page(path: &Path) -> bool {
    use std::io::Read;
    if !path.exists() {
        return false;
    }
    let mut start = Vec::with_capacity(256);
    let read = std::fs::File::open(path).and_then(|f| f.take(256).read_to_end(&mut start));
    read.is_err() || !l4s_report::html::is_l4s_page(&start)
}

/// The comparison page a set of variants writes beside their folders.
const COMPARE_PAGE: &str = "compare.html";

/// Run scenario text (`path` names it in messages and results), with its variants.
pub fn run_text(
    text: &str,
    path: &Path,
    backend: &mut dyn Backend,
    opts: &RunOptions,
    progress: &mut dyn Progress,
) -> Result<Runs, Error> {
    let (variants, base) = match plan(text, path, backend, opts)? {
        Plan::One(sc, out) => {
            let run = run_applied(*sc, Some(text.as_bytes()), backend, opts, &out, progress, None)?;
            return Ok(Runs {
                runs: vec![run],
                compare: None,
            });
        }
        Plan::Variants(variants, base) => (variants, base),
    };
    // The set's folder is ours while the set is written: a second set into it at once is
    // refused, as a second run into one results directory is.
    let _lock = l4s_metrics::results::FolderLock::take(&base).map_err(|e| out_refused(e, opts.caller))?;
    // The manifest of this set of variants: which runs belong together, and whether the
    // set is complete (an interrupted run leaves it incomplete, its finished variants beside
    // an earlier run's).
    let manifest_path = base.join(l4s_report::variant_set::MANIFEST);
    let now = std::time::SystemTime::now();
    let mut manifest = l4s_report::variant_set::VariantSet {
        format: 1,
        set: format!(
            "{:x}-{:x}",
            now.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()),
            std::process::id()
        ),
        scenario: variants[0].1.name.clone(),
        file: path.display().to_string(),
        started_utc: humantime::format_rfc3339_seconds(now).to_string(),
        variants: variants.iter().map(|(n, _)| n.clone().unwrap_or_default()).collect(),
        done: Vec::new(),
        complete: false,
        stopped: None,
    };
    let write_manifest = |m: &l4s_report::variant_set::VariantSet| -> Result<(), Error> {
        std::fs::create_dir_all(&base).map_err(|e| Error::output(format!("cannot write {}: {e}", base.display())))?;
        write_new(&manifest_path, &serde_json::to_vec_pretty(m).unwrap_or_default())
    };
    let (created_base, created_manifest) = (!base.exists(), !manifest_path.exists());
    write_manifest(&manifest)?;
    let mut runs = Vec::new();
    for (name, sc) in variants {
        let name = name.unwrap_or_default();
        progress.variant(&name);
        let run = run_applied(
            sc,
            Some(text.as_bytes()),
            backend,
            opts,
            &base.join(&name),
            progress,
            Some(&manifest.set),
        );
        let mut run = match run {
            Ok(r) => r,
            Err(e) => {
                // Failed or interrupted before any variant was written: take back this
                // set's manifest, and the folder if this run made it and it is empty.
                if runs.is_empty() && created_manifest {
                    let _ = std::fs::remove_file(&manifest_path);
                    if created_base {
                        let _ = std::fs::remove_dir(&base);
                    }
                }
                return Err(e);
            }
        };
        let stopped = !run.summary.complete;
        if stopped {
            manifest.stopped = Some(name.clone());
        } else {
            manifest.done.push(name.clone());
            manifest.complete = manifest.done.len() == manifest.variants.len();
        }
        write_manifest(&manifest)?;
        run.variant = Some(name);
        runs.push(run);
        if stopped {
            // Stopped: the set stays incomplete and is not compared.
            return Ok(Runs { runs, compare: None });
        }
    }
    let dirs: Vec<PathBuf> = runs.iter().map(|r| r.dir.clone()).collect();
    let page = base.join(COMPARE_PAGE);
    // The variants' results are written and kept: a comparison that fails now is an
    // output error, not bad input.
    let table = compare(&dirs, &page).map_err(|e| Error::output(e.message))?;
    Ok(Runs {
        runs,
        compare: Some((page, table)),
    })
}

/// Apply the `seed` and `duration` overrides of [`RunOptions`] to a scenario
/// ([`Scenario::apply_overrides`]) as an input error. The runner applies them
/// once, before anything is created; a front end that calls [`Backend::run`] itself
/// applies them first.
pub fn apply_overrides(sc: &mut Scenario, seed: Option<u64>, duration: Option<Dur>) -> Result<(), Error> {
    sc.apply_overrides(seed, duration).map_err(Error::input)
}

/// Run one validated scenario into the results directory `out`, with the overrides of
/// `opts` ([`apply_overrides`]). `scenario_text` is kept as `scenario.toml` beside the
/// results; a scenario built by a program, with no text, has none.
pub fn run_scenario(
    mut sc: Scenario,
    scenario_text: Option<&[u8]>,
    backend: &mut dyn Backend,
    opts: &RunOptions,
    out: &Path,
    progress: &mut dyn Progress,
) -> Result<Run, Error> {
    apply_overrides(&mut sc, opts.seed, opts.duration)?;
    run_applied(sc, scenario_text, backend, opts, out, progress, None)
}

/// [`run_scenario`] for a scenario whose overrides are applied; `variant_set` names the
/// set of variants the run belongs to (recorded in `run-info.json`).
fn run_applied(
    sc: Scenario,
    scenario_text: Option<&[u8]>,
    backend: &mut dyn Backend,
    opts: &RunOptions,
    out: &Path,
    progress: &mut dyn Progress,
    variant_set: Option<&str>,
) -> Result<Run, Error> {
    let ran = simulate(sc, backend, opts, out, progress)?;
    let run = ran.write(scenario_text, opts, variant_set)?;
    progress.finished(&run);
    Ok(run)
}

/// A run whose results are not written yet ([`Ran::write`]): its results directory, open,
/// with the files the run itself wrote (the time series, the distributions), and the
/// summary. Dropped unwritten, the directory goes and nothing is left.
pub(crate) struct Ran {
    dir: ResultsDir,
    summary: Summary,
    stats: RunStats,
    started: std::time::SystemTime,
    elapsed: std::time::Duration,
}

/// What a run checks before it makes anything: the options against the backend, that the
/// backend can run `sc`, and that `out` is nothing or an earlier l4s-lab results directory
/// holding only its own files ([`ResultsDir::create`] checks that again as it takes it).
fn pre_run_check(sc: &Scenario, backend: &dyn Backend, opts: &RunOptions, out: &Path) -> Result<(), Error> {
    if opts.pcap && backend.name() != "sim" {
        return Err(Error::input(
            "--pcap is not available with --backend live (the forwarder's records carry no payload to write; capture on the testbed's interfaces with tcpdump instead)",
        ));
    }
    backend.preflight(sc)?;
    if let Some(why) = snapshot_interval_error(opts.snapshot_interval) {
        return Err(Error::input(format!(
            "{} {why}",
            opts.caller.option("snapshot-interval")
        )));
    }
    if out.join(l4s_report::variant_set::MANIFEST).is_file() {
        return Err(Error::input(format!(
            "{} holds a set of variants ({}), and a single run writes one results directory there: move it elsewhere, or choose another folder with {}",
            out.display(),
            l4s_report::variant_set::MANIFEST,
            opts.caller.option("out")
        )));
    }
    if let Some(why) = l4s_metrics::results::dangling_link(out) {
        return Err(choose_another(why, opts.caller));
    }
    if out.exists() {
        if let Some(why) = l4s_metrics::results::foreign_content(out) {
            return Err(out_refused(why, opts.caller));
        }
    }
    Ok(())
}

/// The first half of [`run_applied`]: check, open the results directory and run.
pub(crate) fn simulate(
    sc: Scenario,
    backend: &mut dyn Backend,
    opts: &RunOptions,
    out: &Path,
    progress: &mut dyn Progress,
) -> Result<Ran, Error> {
    // Refuse what cannot run, and a foreign output path, before spending time running.
    // A plan has checked this already for `run_text`; it is checked again here because
    // `run_scenario` (campaigns, the Python package) comes without a plan, and because the
    // last of a set of variants may start hours after its plan, when its folder can have
    // changed.
    pre_run_check(&sc, backend, opts, out)?;
    for n in notices(&sc, opts, backend.name()) {
        progress.notice(&n);
    }
    let dir = ResultsDir::create_with(out, opts.lock_out).map_err(|e| out_refused(e, opts.caller))?;
    let cannot = |e: std::io::Error| Error::output(format!("cannot write results to {}: {e}", out.display()));
    let open = |name: &str| -> std::io::Result<Box<dyn Write>> {
        Ok(Box::new(std::io::BufWriter::new(std::fs::File::create(
            dir.path(name),
        )?)))
    };
    let [flows_csv, queues_csv, distributions_csv] = TABLES.map(|t| table_file(t, "csv"));
    let mut outputs = Outputs {
        distributions: Some(open(&distributions_csv).map_err(cannot)?),
        stop: opts.stop.clone(),
        ..Default::default()
    };
    if !opts.snapshot_interval.is_zero() {
        outputs.snapshots = Some((
            opts.snapshot_interval,
            open(&flows_csv).map_err(cannot)?,
            open(&queues_csv).map_err(cannot)?,
        ));
    }
    if opts.packets {
        let flows: Vec<&str> = sc.flows.iter().map(|f| f.name.as_str()).collect();
        let links: Vec<&str> = sc.links.iter().map(|l| l.name.as_str()).collect();
        let sink = std::fs::File::create(dir.path("packets.parquet"))
            .and_then(|f| l4s_measure::timeline::ParquetTimeline::new(std::io::BufWriter::new(f), &flows, &links));
        outputs.timeline = Some(Box::new(sink.map_err(cannot)?));
    }
    if opts.pcap {
        outputs.pcap = Some((open("bottleneck.pcap").map_err(cannot)?, opts.pcap_ipv6));
    }
    progress.started(sc.duration, backend.name());
    let wall = Instant::now();
    let started = std::time::SystemTime::now();
    let (summary, stats) = backend.run(sc, outputs, &mut |t| progress.time(t))?;
    Ok(Ran {
        dir,
        summary,
        stats,
        started,
        elapsed: wall.elapsed(),
    })
}

impl Ran {
    /// The second half of [`run_applied`]: the verdict, `summary.json` and the files beside
    /// it, the Parquet copies and the report, every file synced, and the directory
    /// committed. Takes no backend: a campaign writes one run's results while the next runs.
    pub(crate) fn write(
        self,
        scenario_text: Option<&[u8]>,
        opts: &RunOptions,
        variant_set: Option<&str>,
    ) -> Result<Run, Error> {
        let Ran {
            dir,
            mut summary,
            stats,
            started,
            elapsed,
        } = self;
        // Named in errors, up to the commit that moves the directory there.
        let out = dir.target().to_path_buf();
        let cannot = |e: std::io::Error| Error::output(format!("cannot write results to {}: {e}", out.display()));
        // The verdict, from the summary alone: summary.json must not depend on which outputs
        // were written (a campaign's lean run stores the same summary as the run alone).
        // report.html gives the same findings and adds per-interval detail from the time
        // series when they were written.
        summary.verdict = Some(l4s_report::verdict(&summary, None).to_summary());
        let json = serde_json::to_vec_pretty(&summary)
            .map_err(|e| Error::output(format!("cannot serialise the summary: {e}")))?;
        let mut info = run_info(&stats, started, elapsed, &opts.command);
        if let (Some(set), Some(o)) = (variant_set, info.as_object_mut()) {
            o.insert("variant_set".into(), set.into());
        }
        let info = serde_json::to_vec_pretty(&info).unwrap_or_default();
        // Written now, for the report to read; synced to the disk on a thread of their own
        // while the report and the Parquet copies are made (three waits for the disk, 0.3 to
        // 0.9 ms each here and more on a busy disk, were on the way to the end of every run),
        // with the files the run itself wrote (the time series and distributions, when they
        // are kept, the packet records and the capture). The commit syncs whatever is not.
        dir.write_unsynced("summary.json", &json).map_err(cannot)?;
        let mut unsynced = vec!["summary.json".to_string(), "run-info.json".to_string()];
        if let Some(t) = scenario_text {
            dir.write_unsynced("scenario.toml", t).map_err(cannot)?;
            unsynced.push("scenario.toml".to_string());
        }
        dir.write_unsynced("run-info.json", &info).map_err(cannot)?;
        if opts.keep_csv {
            unsynced.extend(TABLES.map(|t| table_file(t, "csv")));
        }
        unsynced.extend(["packets.parquet", "bottleneck.pcap"].map(String::from));
        let sync = || {
            unsynced
                .iter()
                .filter(|f| dir.path(f).exists())
                .try_for_each(|f| dir.sync(f))
        };
        // The time series and distributions also as Parquet, for pandas and polars, on a
        // thread of their own while the report is built: both only read the CSVs.
        let parquet = || -> Result<(), Error> {
            for name in TABLES {
                let csv = dir.path(&table_file(name, "csv"));
                if csv.exists() {
                    let file = table_file(name, "parquet");
                    // Synced by the conversion.
                    l4s_metrics::parquet::csv_to_parquet(&csv, &dir.path(&file))
                        .map_err(|e| Error::output(format!("cannot write results to {}: {e}", out.display())))?;
                    dir.synced(&file);
                }
            }
            Ok(())
        };
        // The report reads only the results directory, as `l4s report DIR` does later. A
        // report that cannot be built does not cost the results: they are kept and the failure
        // is reported. It is written synced (`write_file_atomic`).
        let report = || {
            opts.report.then(|| {
                let r = l4s_report::write_report(dir.dir()).map_err(|e| e.to_string());
                if r.is_ok() {
                    dir.synced("report.html");
                }
                r
            })
        };
        let (synced, parquet, report) = std::thread::scope(|s| {
            let f = s.spawn(sync);
            let p = s.spawn(parquet);
            let r = report();
            (f.join(), p.join(), r)
        });
        synced
            .unwrap_or_else(|_| Err(std::io::Error::other("syncing the results failed (a bug)")))
            .map_err(cannot)?;
        parquet.unwrap_or_else(|_| Err(Error::output("the Parquet conversion failed (a bug)".to_string())))?;
        let png = (opts.png && report.as_ref().is_some_and(|r| r.is_ok())).then(|| {
            l4s_report::write_pngs(dir.dir(), &dir.dir().join("png"), l4s_report::DEFAULT_PNG_SCALE)
                .map_err(|e| e.to_string())
        });
        // Without the CSVs (a campaign's lean runs) only once the report has read them.
        if !opts.keep_csv {
            for name in TABLES {
                let csv = dir.path(&table_file(name, "csv"));
                if csv.exists() {
                    std::fs::remove_file(&csv).map_err(cannot)?;
                }
            }
        }
        let written = dir.commit().map_err(cannot)?;
        let run = Run {
            variant: None,
            report: report.map(|r| r.map(|_| written.join("report.html"))),
            png: png.map(|r| r.map(|_| written.join("png"))),
            dir: written,
            summary,
            stats,
            wall: elapsed,
        };
        Ok(run)
    }
}

/// `run-info.json`: facts about this execution that would break byte-identical summaries
/// (the date, the wall time, the host).
fn run_info(
    stats: &RunStats,
    started: std::time::SystemTime,
    wall: std::time::Duration,
    command: &[String],
) -> serde_json::Value {
    let mut info = serde_json::json!({
        "started_utc": humantime::format_rfc3339_seconds(started).to_string(),
        "wall_seconds": (wall.as_secs_f64() * 1e3).round() / 1e3,
        "bottleneck_packets": stats.bottleneck_packets,
        "l4s_version": env!("CARGO_PKG_VERSION"),
        "command": command,
        "backend": stats.backend,
    });
    let Some(obj) = info.as_object_mut() else {
        return info;
    };
    if let Some(events) = stats.events {
        obj.insert("events".into(), events.into());
    }
    if let Some(li) = &stats.live {
        obj.insert(
            "live".into(),
            serde_json::json!({
                "run_id": li.run_id,
                "namespaces": li.namespaces,
                "kernel": li.kernel,
                "flows": li.flows,
                "elements": li.elements,
                "timeline": li.timeline,
                "untaken_settings": li.untaken_settings,
            }),
        );
    }
    info
}

/// Put several results directories side by side: write the comparison page to `out` (beside
/// it first, then renamed: never a half-written page) and return the difference table
/// against the first directory.
pub fn compare(dirs: &[PathBuf], out: &Path) -> Result<String, Error> {
    compare_with(dirs, out, &l4s_report::CompareOptions::default(), false).map(|(t, _)| t)
}

/// [`compare`] with run labels and a log delay axis (`opts`); with `png`, also every chart
/// of the page as a PNG in the folder `<page name>-png` beside it (returned). That folder
/// may hold only PNGs: one with anything else is not ours and is refused.
pub fn compare_with(
    dirs: &[PathBuf],
    out: &Path,
    opts: &l4s_report::CompareOptions,
    png: bool,
) -> Result<(String, Option<PathBuf>), Error> {
    // Never over a run's results: not into a results directory, not over a directory.
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if parent.join(l4s_metrics::results::MARKER).exists() {
        return Err(Error::input(format!(
            "--out {}: that is inside a results directory ({} holds {}); write the comparison page elsewhere",
            out.display(),
            parent.display(),
            l4s_metrics::results::MARKER
        )));
    }
    if out.is_dir() {
        return Err(Error::input(format!(
            "--out {} is a directory: give the comparison page's file name, such as compare.html",
            out.display()
        )));
    }
    if foreign_page(out) {
        return Err(Error::input(format!(
            "--out {} exists and is not a page l4s-lab wrote: move it elsewhere, or choose another --out",
            out.display()
        )));
    }
    let png_dir = png.then(|| {
        let stem = out
            .file_stem()
            .map_or("compare".into(), |s| s.to_string_lossy().into_owned());
        out.with_file_name(format!("{stem}-png"))
    });
    if let Some(d) = &png_dir {
        if let Ok(entries) = std::fs::read_dir(d) {
            let foreign = entries
                .flatten()
                .find(|e| e.path().extension().is_none_or(|x| x != "png") || e.path().is_dir());
            if let Some(e) = foreign {
                return Err(Error::input(format!(
                    "--png: {} holds {}, which is not a chart of ours: move it, or write the page elsewhere with --out",
                    d.display(),
                    e.file_name().to_string_lossy()
                )));
            }
        }
    }
    let c = l4s_report::comparison(dirs, opts)?;
    write_new(out, c.html.as_bytes())?;
    if let Some(d) = &png_dir {
        l4s_report::write_chart_pngs(&c.figures, d, l4s_report::DEFAULT_PNG_SCALE)?;
    }
    Ok((c.table, png_dir))
}

/// Write the capacity trace that link `link` of the scenario in `file` draws from its
/// `capacity` process (the first such link when `link` is `None`), for the run's seed and
/// duration with these overrides, to `out` in Mahimahi's format: one delivery time in
/// milliseconds per line. An existing `out` is never overwritten; the file is written
/// beside it and renamed, so it is never half-written.
pub fn generate_trace(
    file: &Path,
    link: Option<&str>,
    seed: Option<u64>,
    duration: Option<Dur>,
    out: &Path,
) -> Result<std::sync::Arc<l4s_link::Trace>, Error> {
    let mut sc = l4s_scenario::load_file(file)?;
    // A trace has no warm-up: any duration above zero may be drawn.
    sc.warmup = Dur::ZERO;
    apply_overrides(&mut sc, seed, duration)?;
    let l = match link {
        Some(name) => sc.links.iter().find(|l| l.name == name).ok_or_else(|| {
            let names: Vec<&str> = sc.links.iter().map(|l| l.name.as_str()).collect();
            Error::input(format!(
                "--link {name}: {} has no such link (its links: {})",
                file.display(),
                names.join(", ")
            ))
        })?,
        None => sc.links.iter().find(|l| l.capacity.is_some()).ok_or_else(|| {
            Error::input(format!(
                "{}: no link has a `capacity` process to draw a trace from",
                file.display()
            ))
        })?,
    };
    let (Some(_), Some(trace)) = (&l.capacity, &l.trace) else {
        return Err(Error::input(format!(
            "--link {}: the link has no `capacity` process to draw a trace from",
            l.name
        )));
    };
    if out.exists() {
        return Err(Error::input(format!(
            "{} exists: give a new file with --out",
            out.display()
        )));
    }
    let mut text = String::with_capacity(trace.times_ms().len() * 6);
    for t in trace.times_ms() {
        text.push_str(&t.to_string());
        text.push('\n');
    }
    write_new(out, text.as_bytes())?;
    Ok(trace.clone())
}

/// Write a file the runner makes beside the results (never half-written).
/// Its folder is made if it is missing, as `--out` makes a results directory's.
fn write_new(out: &Path, bytes: &[u8]) -> Result<(), Error> {
    let cannot = |e: std::io::Error| Error::output(format!("cannot write {}: {e}", out.display()));
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(cannot)?;
    }
    l4s_metrics::results::write_file_atomic(out, bytes).map_err(cannot)
}
