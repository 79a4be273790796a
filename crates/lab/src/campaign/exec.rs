//! Running a campaign's plan: what the store lacks, on every core (the simulator) or one
//! run after the other (the live testbed, whose runs must not share the host).

use super::plan::{Plan, PlannedRun};
use super::store::Store;
use super::tables::{self, Tables};
use crate::{run_scenario, Backend, Error, ErrorKind, NoProgress, RunOptions, Simulator};
use l4s_core::Dur;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How to run a campaign.
#[derive(Clone, Debug)]
pub struct CampaignOptions {
    /// Runs at once (simulator only); 0 uses every core.
    pub jobs: usize,
    /// The store (default `results/campaigns/<name>`).
    pub out: Option<PathBuf>,
    /// Make this campaign the store's when the store holds another plan.
    pub update: bool,
    /// Set to stop: runs under way finish, no new run starts.
    pub stop: Option<Arc<AtomicBool>>,
    /// The command recorded in each run's `run-info.json`.
    pub command: Vec<String>,
}

impl Default for CampaignOptions {
    fn default() -> Self {
        CampaignOptions {
            jobs: 0,
            out: None,
            update: false,
            stop: None,
            command: std::env::args().collect(),
        }
    }
}

/// What a front end is told while a campaign runs.
pub trait CampaignProgress {
    /// The plan is made and the store open: `todo` runs are missing of `unique`.
    fn planned(&mut self, _plan: &Plan, _dir: &Path, _todo: usize, _unique: usize) {}
    /// A run ended: its wall time, or its error.
    fn finished(&mut self, _run: &PlannedRun, _result: &Result<Duration, Error>) {}
}

/// Tells nothing.
pub struct NoCampaignProgress;
impl CampaignProgress for NoCampaignProgress {}

/// A campaign's outcome.
#[derive(Debug)]
pub struct Outcome {
    pub dir: PathBuf,
    pub name: String,
    /// Runs in the plan, and distinct runs.
    pub runs: usize,
    pub unique_runs: usize,
    /// Done before this start, and done now.
    pub already_done: usize,
    pub ran: usize,
    /// Complete in the store now.
    pub done: usize,
    /// Runs that failed now, with why.
    pub failed: Vec<(String, String)>,
    /// Stopped before the end ([`CampaignOptions::stop`]).
    pub interrupted: bool,
    pub tables: Tables,
    /// Wall time of the whole campaign, and the sum of its runs' own wall times.
    pub wall: Duration,
    pub run_wall: Duration,
    /// Bytes of the runs done now, on disk.
    pub ran_bytes: u64,
}

/// Run the campaign in `file` into its store: only the runs the store lacks, then the
/// tables. Bad input (the campaign, its scenario, any value) is refused before anything
/// is written.
pub fn run(
    file: &Path,
    backend: &mut dyn Backend,
    opts: &CampaignOptions,
    progress: &mut dyn CampaignProgress,
) -> Result<Outcome, Error> {
    let t0 = Instant::now();
    let (spec, plan) = super::load(file)?;
    let jobs = match opts.jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    if backend.name() != "sim" && opts.jobs > 1 {
        return Err(Error::input(format!(
            "--jobs {}: {} runs go one at a time (runs at once would share the host and disturb each other)",
            opts.jobs,
            backend.name()
        )));
    }
    let scenario_text = std::fs::read_to_string(spec.scenario_path()).map_err(|e| {
        Error::input(format!(
            "{}: cannot read the scenario file: {e}",
            spec.scenario_path().display()
        ))
    })?;
    // A live host that cannot run a variant is refused before anything is written.
    for r in plan.unique_runs().into_iter().take(plan.variants.len() * 2) {
        let sc = l4s_scenario::load_str(&plan.run_text(r), Path::new(&plan.scenario_file))?;
        backend.preflight(&sc)?;
    }
    let dir = opts.out.clone().unwrap_or_else(|| super::default_dir(&spec));
    let store = Store::open(&dir, &plan, &spec.text, &scenario_text, opts.update)?;
    let unique = plan.unique_runs();
    let todo: Vec<&PlannedRun> = unique.iter().copied().filter(|r| !store.check_done(&r.key)).collect();
    let already_done = unique.len() - todo.len();
    progress.planned(&plan, &dir, todo.len(), unique.len());

    let run_opts = RunOptions {
        seed: None,
        duration: None,
        snapshot_interval: spec.outputs.snapshots.unwrap_or(Dur::ZERO),
        pcap: false,
        pcap_ipv6: false,
        packets: spec.outputs.packets,
        report: spec.outputs.report,
        png: false,
        out: None,
        variants: Vec::new(),
        command: opts.command.clone(),
        keep_csv: false,
    };
    let stop = opts.stop.clone().unwrap_or_default();
    let mut failed = Vec::new();
    let mut ran = 0;
    let mut run_wall = Duration::ZERO;
    let mut ran_bytes = 0;
    let mut tally = |r: &PlannedRun, res: Result<Duration, Error>, progress: &mut dyn CampaignProgress| {
        match &res {
            Ok(w) => {
                ran += 1;
                run_wall += *w;
                ran_bytes += super::store::dir_bytes(&store.run_dir(&r.key));
                store.clear_failure(&r.key);
            }
            Err(e) => {
                store.fail(&r.key, &e.message);
                failed.push((r.key.clone(), e.message.clone()));
            }
        }
        progress.finished(r, &res);
    };
    if jobs == 1 || backend.name() != "sim" {
        for r in &todo {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let res = one(&plan, &store, r, backend, &run_opts);
            tally(r, res, progress);
        }
    } else {
        let next = AtomicUsize::new(0);
        let (tx, rx) = mpsc::channel::<(usize, Result<Duration, Error>)>();
        std::thread::scope(|s| {
            for _ in 0..jobs.min(todo.len()) {
                let tx = tx.clone();
                let (next, todo, plan, store, run_opts, stop) = (&next, &todo, &plan, &store, &run_opts, &stop);
                s.spawn(move || loop {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(r) = todo.get(i) else { break };
                    let res = one(plan, store, r, &mut Simulator, run_opts);
                    if tx.send((i, res)).is_err() {
                        break;
                    }
                });
            }
            drop(tx);
            for (i, res) in rx {
                tally(todo[i], res, progress);
            }
        });
    }
    let interrupted = stop.load(Ordering::SeqCst);
    let tables = tables::write(&dir, &plan)?;
    let done = unique
        .iter()
        .filter(|r| store.run_dir(&r.key).join("summary.json").is_file())
        .count();
    Ok(Outcome {
        dir,
        name: plan.name.clone(),
        runs: plan.runs.len(),
        unique_runs: unique.len(),
        already_done,
        ran,
        done,
        failed,
        interrupted,
        tables,
        wall: t0.elapsed(),
        run_wall,
        ran_bytes,
    })
}

/// One run into its folder of the store.
fn one(
    plan: &Plan,
    store: &Store,
    r: &PlannedRun,
    backend: &mut dyn Backend,
    opts: &RunOptions,
) -> Result<Duration, Error> {
    let text = plan.run_text(r);
    let sc = l4s_scenario::load_str(&text, Path::new(&plan.scenario_file))?;
    let t = Instant::now();
    run_scenario(
        sc,
        Some(text.as_bytes()),
        backend,
        opts,
        &store.run_dir(&r.key),
        &mut NoProgress,
    )
    .map_err(|e| {
        Error::new(
            if e.kind == ErrorKind::Input {
                ErrorKind::Run
            } else {
                e.kind
            },
            e.message,
        )
    })?;
    Ok(t.elapsed())
}
