//! Running a campaign's plan: what the store lacks, on every core (the simulator) or one
//! run after the other (the live testbed, whose runs must not share the host).

use super::plan::{Plan, PlannedRun};
use super::spec::Spec;
use super::store::Store;
use super::tables::{self, Tables};
use crate::{apply_overrides, run_scenario, Backend, Error, ErrorKind, NoProgress, Ran, RunOptions, Simulator};
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
    /// Who asked for the campaign: how its messages name these options.
    pub caller: crate::Caller,
}

impl Default for CampaignOptions {
    fn default() -> Self {
        CampaignOptions {
            jobs: 0,
            out: None,
            update: false,
            stop: None,
            command: std::env::args().collect(),
            caller: crate::Caller::Cli,
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
    /// The campaign's page, `DIR/campaign.html` ([`super::report`]), or why it could not
    /// be written (the runs and tables are kept all the same).
    pub report: Result<PathBuf, String>,
    /// What the page notes ([`super::report::Written::notes`]).
    pub report_notes: Vec<String>,
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
    let spec = super::spec::load(file)?;
    run_spec(spec, backend, opts, progress)
}

/// [`run`] for a campaign already read ([`super::spec::parse`] of text from elsewhere).
pub fn run_spec(
    spec: Spec,
    backend: &mut dyn Backend,
    opts: &CampaignOptions,
    progress: &mut dyn CampaignProgress,
) -> Result<Outcome, Error> {
    let jobs = match opts.jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    if backend.name() != "sim" && opts.jobs > 1 {
        return Err(Error::input(format!(
            "{}: {} runs go one at a time (runs at once would share the host and disturb each other)",
            opts.caller.option_number("jobs", opts.jobs),
            backend.name()
        )));
    }
    let session = Session::open(spec, &*backend, opts)?;
    progress.planned(&session.plan, &session.dir, session.todo.len(), session.unique);
    let stop = opts.stop.clone().unwrap_or_default();
    let todo = session.todo.clone();
    if jobs == 1 || backend.name() != "sim" {
        let todo = match (session.spec.gap, backend.name()) {
            (Some(gap), name) if name != "sim" => session.with_stale_partners(&todo, gap),
            _ => todo,
        };
        let mut done = |i: usize, res: Result<Duration, Error>| {
            let r = &session.plan.runs[i];
            session.record(r, &res);
            progress.finished(r, &res);
        };
        if backend.name() == "sim" {
            session.pipelined(todo.into_iter(), backend, &stop, &mut done);
        } else {
            // A live run has the host to itself: nothing is written beside it.
            for i in todo {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                done(i, session.run_here(&session.plan.runs[i], backend));
            }
        }
    } else {
        let next = AtomicUsize::new(0);
        let (tx, rx) = mpsc::channel::<(usize, Result<Duration, Error>)>();
        std::thread::scope(|s| {
            for _ in 0..jobs.min(todo.len()) {
                let tx = tx.clone();
                let (next, todo, session, stop) = (&next, &todo, &session, &stop);
                s.spawn(move || {
                    let runs = std::iter::from_fn(|| todo.get(next.fetch_add(1, Ordering::SeqCst)).copied());
                    session.pipelined(runs, &mut Simulator, stop, &mut |ri, res| {
                        // The receiver outlives every worker.
                        let _ = tx.send((ri, res));
                    });
                });
            }
            drop(tx);
            for (ri, res) in rx {
                session.record(&session.plan.runs[ri], &res);
                progress.finished(&session.plan.runs[ri], &res);
            }
        });
    }
    session.finish(stop.load(Ordering::SeqCst))
}

/// A campaign being run: its plan, its store (locked), what is left to do and what was
/// done. [`run`] drives one on this machine; another executor (the Python package's Ray
/// executor) runs [`Session::todo`] elsewhere with [`run_to_files`] and hands the files
/// back through [`Session::store_files`].
pub struct Session {
    pub spec: Spec,
    pub plan: Plan,
    pub dir: PathBuf,
    store: Store,
    run_opts: RunOptions,
    /// Indices into `plan.runs` of the distinct runs the store lacked when opened.
    pub todo: Vec<usize>,
    pub unique: usize,
    t0: Instant,
    tally: std::sync::Mutex<Tally>,
}

/// What the runs of this start came to.
#[derive(Default)]
struct Tally {
    ran: usize,
    failed: Vec<(String, String)>,
    run_wall: Duration,
    ran_bytes: u64,
}

impl Session {
    /// Expand the campaign, check that `backend` can run its variants, and open (or make)
    /// its store. Nothing is written on bad input.
    pub fn open(spec: Spec, backend: &dyn Backend, opts: &CampaignOptions) -> Result<Session, Error> {
        let t0 = Instant::now();
        let plan = super::plan::build(&spec)?;
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
        let store = Store::open(&dir, &plan, &spec.text, &scenario_text, opts.update, opts.caller)?;
        let mut seen = std::collections::HashSet::new();
        let mut unique = 0;
        let mut todo = Vec::new();
        for (i, r) in plan.runs.iter().enumerate() {
            if !seen.insert(r.key.as_str()) {
                continue;
            }
            unique += 1;
            if !store.check_done(&r.key) {
                todo.push(i);
            }
        }
        let run_opts = spec.outputs.run_options(opts.command.clone(), opts.caller);
        Ok(Session {
            spec,
            plan,
            dir,
            store,
            run_opts,
            todo,
            unique,
            t0,
            tally: Default::default(),
        })
    }

    /// `todo` with, before the missing runs of each pair, the pair's completed runs that
    /// ended more than `gap` ago: on the live testbed the runs of a pair must follow each
    /// other closely (the network and the host drift), so a pair a restart would split is
    /// run again whole. A run whose end cannot be read counts as stale.
    fn with_stale_partners(&self, todo: &[usize], gap: Dur) -> Vec<usize> {
        let pending: std::collections::HashSet<u32> = todo.iter().map(|&i| self.plan.runs[i].pair).collect();
        let todo_set: std::collections::HashSet<usize> = todo.iter().copied().collect();
        let now = std::time::SystemTime::now();
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for (i, r) in self.plan.runs.iter().enumerate() {
            if !pending.contains(&r.pair) || !seen.insert(r.key.as_str()) {
                continue;
            }
            if todo_set.contains(&i) {
                out.push(i);
                continue;
            }
            let ended = std::fs::read(self.store.run_dir(&r.key).join("run-info.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .and_then(|v| {
                    let start = humantime::parse_rfc3339(v["started_utc"].as_str()?).ok()?;
                    Some(start + Duration::from_secs_f64(v["wall_seconds"].as_f64()?.max(0.0)))
                });
            let stale = match ended {
                Some(t) => now.duration_since(t).is_ok_and(|d| d > Duration::from_nanos(gap.0)),
                None => true,
            };
            if stale {
                out.push(i);
            }
        }
        out
    }

    /// The runs left to do, in plan order (pairs back to back).
    pub fn todo(&self) -> impl Iterator<Item = &PlannedRun> {
        self.todo.iter().map(|&i| &self.plan.runs[i])
    }

    /// What each run keeps (the campaign's `[outputs]`).
    pub fn run_options(&self) -> &RunOptions {
        &self.run_opts
    }

    /// Run `r` on this machine into its folder of the store.
    pub fn run_here(&self, r: &PlannedRun, backend: &mut dyn Backend) -> Result<Duration, Error> {
        self.simulate_here(r, backend)?.write(self)
    }

    /// The first half of [`Session::run_here`]: run `r`, its results not written yet.
    fn simulate_here(&self, r: &PlannedRun, backend: &mut dyn Backend) -> Result<Simulated, Error> {
        let text = self.plan.run_text(r);
        let mut sc = l4s_scenario::load_str(&text, Path::new(&self.plan.scenario_file))?;
        let t0 = Instant::now();
        apply_overrides(&mut sc, self.run_opts.seed, self.run_opts.duration)
            .and_then(|()| {
                crate::simulate(
                    sc,
                    backend,
                    &self.run_opts,
                    &self.store.run_dir(&r.key),
                    &mut NoProgress,
                )
            })
            .map(|ran| Simulated { ran, text, t0 })
            .map_err(run_error)
    }

    /// Run `runs` one after the other with `backend` (the simulator), each run's results
    /// written on a thread of their own while the next one runs: writing them waits mostly
    /// for the disk (a few `fsync`s, from a fraction of a millisecond to several on a busy
    /// disk), and a run's directory is still committed only once every file in it is synced.
    /// `done` hears of every run in the order of `runs`, once it is committed or failed.
    fn pipelined(
        &self,
        runs: impl Iterator<Item = usize>,
        backend: &mut dyn Backend,
        stop: &AtomicBool,
        done: &mut dyn FnMut(usize, Result<Duration, Error>),
    ) {
        std::thread::scope(|s| {
            let mut writing: Option<(usize, std::thread::ScopedJoinHandle<'_, Result<Duration, Error>>)> = None;
            for i in runs {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let ran = self.simulate_here(&self.plan.runs[i], backend);
                if let Some((w, h)) = writing.take() {
                    done(w, joined(h));
                }
                match ran {
                    Ok(ran) => writing = Some((i, s.spawn(move || ran.write(self)))),
                    Err(e) => done(i, Err(e)),
                }
            }
            if let Some((w, h)) = writing {
                done(w, joined(h));
            }
        });
    }

    /// Store the files of `r` run elsewhere ([`run_to_files`]): written beside the run's
    /// folder and renamed into it when complete.
    pub fn store_files(&self, r: &PlannedRun, files: &[(String, Vec<u8>)]) -> Result<(), Error> {
        if !files.iter().any(|(n, _)| n == l4s_metrics::results::MARKER) {
            return Err(Error::output(format!(
                "run {}: no {} came back",
                r.key,
                l4s_metrics::results::MARKER
            )));
        }
        let target = self.store.run_dir(&r.key);
        let cannot = |e: std::io::Error| Error::output(format!("cannot write {}: {e}", target.display()));
        let dir = l4s_metrics::results::ResultsDir::create_with(&target, false).map_err(cannot)?;
        for (name, bytes) in files {
            if name.is_empty() || name.contains('/') || name.contains('\\') || name.starts_with('.') {
                return Err(Error::output(format!("run {}: refused the file name {name:?}", r.key)));
            }
            dir.write(name, bytes).map_err(cannot)?;
        }
        dir.commit().map_err(cannot)?;
        Ok(())
    }

    /// Count a run's outcome, and keep (or forget) why it failed.
    pub fn record(&self, r: &PlannedRun, res: &Result<Duration, Error>) {
        let mut t = self.tally.lock().unwrap_or_else(|p| p.into_inner());
        match res {
            Ok(w) => {
                t.ran += 1;
                t.run_wall += *w;
                t.ran_bytes += super::store::dir_bytes(&self.store.run_dir(&r.key));
                self.store.clear_failure(&r.key);
            }
            Err(e) => {
                self.store.fail(&r.key, &e.message);
                t.failed.push((r.key.clone(), e.message.clone()));
            }
        }
    }

    /// Build the tables and the page from everything in the store, release it, and say
    /// what was done.
    pub fn finish(self, interrupted: bool) -> Result<Outcome, Error> {
        let tables = tables::write(&self.dir, &self.plan)?;
        // This process holds the store: no other is running the campaign.
        let (report, report_notes) = match super::report::write(&self.dir, &Default::default(), false) {
            Ok(w) => (Ok(w.html), w.notes),
            Err(e) => (Err(e.message), Vec::new()),
        };
        let t = self.tally.into_inner().unwrap_or_else(|p| p.into_inner());
        let uniq = self.plan.unique_runs();
        let done = uniq
            .iter()
            .filter(|r| self.store.run_dir(&r.key).join(l4s_metrics::results::MARKER).is_file())
            .count();
        Ok(Outcome {
            name: self.plan.name.clone(),
            runs: self.plan.runs.len(),
            unique_runs: self.unique,
            already_done: self.unique - self.todo.len(),
            ran: t.ran,
            done,
            failed: t.failed,
            interrupted,
            tables,
            wall: self.t0.elapsed(),
            run_wall: t.run_wall,
            ran_bytes: t.ran_bytes,
            report,
            report_notes,
            dir: self.dir,
        })
    }
}

/// A run of the campaign simulated, its results not written yet.
struct Simulated {
    ran: Ran,
    text: String,
    t0: Instant,
}

impl Simulated {
    /// Write the results into the run's folder of `session`'s store and commit it; the
    /// run's wall time, from the start of its simulation.
    fn write(self, session: &Session) -> Result<Duration, Error> {
        self.ran
            .write(Some(self.text.as_bytes()), &session.run_opts, None)
            .map_err(run_error)?;
        Ok(self.t0.elapsed())
    }
}

/// What a thread that wrote a run's results came to.
fn joined(h: std::thread::ScopedJoinHandle<'_, Result<Duration, Error>>) -> Result<Duration, Error> {
    h.join()
        .unwrap_or_else(|_| Err(Error::output("writing a run's results failed (a bug)")))
}

/// A run's scenario was checked when the campaign was planned: what fails now is the run.
fn run_error(e: Error) -> Error {
    Error::new(
        if e.kind == ErrorKind::Input {
            ErrorKind::Run
        } else {
            e.kind
        },
        e.message,
    )
}

/// Run one effective scenario (a run's text, [`Plan::run_text`]) with the options of a
/// campaign, and return its results directory's files (name, bytes): what a worker on
/// another machine sends back to the campaign's store. The files are written in a
/// temporary folder first, which is removed.
pub fn run_to_files(text: &str, scenario_file: &Path, opts: &RunOptions) -> Result<Vec<(String, Vec<u8>)>, Error> {
    let sc = l4s_scenario::load_str(text, scenario_file)?;
    static N: AtomicUsize = AtomicUsize::new(0);
    let tmp = std::env::temp_dir().join(format!(
        "l4s-run-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let res = run_scenario(sc, Some(text.as_bytes()), &mut Simulator, opts, &tmp, &mut NoProgress).and_then(|_| {
        let mut files = Vec::new();
        let rd = std::fs::read_dir(&tmp).map_err(|e| Error::output(format!("{}: {e}", tmp.display())))?;
        for e in rd.flatten() {
            // Not the owner mark: the store's folder gets its own.
            if e.path().is_file() && !e.file_name().to_string_lossy().starts_with('.') {
                let bytes = std::fs::read(e.path()).map_err(|e| Error::output(e.to_string()))?;
                files.push((e.file_name().to_string_lossy().into_owned(), bytes));
            }
        }
        files.sort();
        Ok(files)
    });
    let _ = std::fs::remove_dir_all(&tmp);
    res
}
