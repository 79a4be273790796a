//! `l4s_lab._native`: the runner library and campaigns for Python. The Python package
//! (`python/l4s_lab`) wraps these functions; `_native.pyi` documents them for editors.
//!
//! Every error of the Rust side arrives as `l4s_lab.L4sError`, with the message and, when
//! the problem is in a scenario or campaign file, its `file`, `line` and `key`. Runs
//! release the GIL; a campaign run here checks for Ctrl-C every 100 ms and stops starting
//! runs when one comes (`KeyboardInterrupt` is raised once the runs under way finish).

#![forbid(unsafe_code)]

use l4s_lab::campaign::{self, CampaignOptions, Session};
use l4s_lab::{Caller, Error, ErrorKind, RunOptions, Simulator};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;

// Named by its full module path, so that it pickles (a process pool hands it back) and
// tracebacks name it as Python code imports it.
create_exception!(
    l4s_lab._native,
    L4sError,
    PyException,
    "An error from l4s-lab: bad input (with `file`, `line` and `key` when it is in a file), or a run or its results that failed (`kind`)."
);

/// The Python exception for an error of the runner.
fn py_err(py: Python<'_>, e: Error) -> PyErr {
    let err = L4sError::new_err(e.message.clone());
    let v = err.value(py);
    let _ = v.setattr("kind", e.kind.name());
    let _ = v.setattr("exit_code", e.exit_code());
    let (file, line, key) = match &e.location {
        Some(l) => (
            Some(l.file.display().to_string()),
            l.line,
            Some(l.key.clone()).filter(|k| !k.is_empty()),
        ),
        None => (None, None, None),
    };
    let _ = v.setattr("file", file);
    let _ = v.setattr("line", line);
    let _ = v.setattr("key", key);
    err
}

/// A JSON value (from Python's json.dumps) as a TOML value.
fn json_to_toml(v: &serde_json::Value, at: &str) -> Result<toml::Value, Error> {
    Ok(match v {
        serde_json::Value::Null => {
            return Err(Error::input(format!(
                "{at}: None has no TOML form; leave the key out instead"
            )))
        }
        serde_json::Value::Bool(b) => toml::Value::Boolean(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        serde_json::Value::String(s) => toml::Value::String(s.clone()),
        serde_json::Value::Array(a) => toml::Value::Array(
            a.iter()
                .enumerate()
                .map(|(i, x)| json_to_toml(x, &format!("{at}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        serde_json::Value::Object(o) => {
            let mut t = toml::Table::new();
            for (k, x) in o {
                t.insert(k.clone(), json_to_toml(x, &format!("{at}.{k}"))?);
            }
            toml::Value::Table(t)
        }
    })
}

/// The TOML text of a campaign or scenario given as a dict (JSON text from Python).
#[pyfunction]
fn toml_text(py: Python<'_>, json: &str) -> PyResult<String> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| py_err(py, Error::input(format!("not a table of keys: {e}"))))?;
    let t = json_to_toml(&v, "").map_err(|e| py_err(py, e))?;
    toml::to_string(&t).map_err(|e| py_err(py, Error::input(format!("cannot write it as TOML: {e}"))))
}

/// The keys of `set` (a JSON object of dotted key paths, as in `[[variants]]`), each with
/// its value as TOML.
fn set_keys(set_json: &str) -> Result<Vec<(String, toml_edit::Item)>, Error> {
    let set: serde_json::Map<String, serde_json::Value> = serde_json::from_str(set_json)
        .map_err(|e| Error::input(format!("set: expected a dict of \"dotted.key\": value ({e})")))?;
    set.iter()
        .map(|(k, v)| {
            let tv = json_to_toml(v, &Caller::Python.set_key(k))?;
            let item = tv
                .to_string()
                .parse::<toml_edit::Value>()
                .map(toml_edit::Item::Value)
                .map_err(|e| Error::input(format!("{}: {e}", Caller::Python.set_key(k))))?;
            Ok((k.clone(), item))
        })
        .collect()
}

/// The scenario text of one run: the variant chosen, then `set` applied over its keys, as
/// `l4s run --variant V --set K=V` applies them.
fn effective_text(text: &str, file: &Path, set_json: &str, variant: Option<&str>) -> Result<String, Error> {
    let doc: toml_edit::DocumentMut = match text.parse() {
        Ok(d) => d,
        Err(_) => {
            l4s_scenario::load_str(text, file)?;
            return Err(Error::input(format!("{}: not valid TOML", file.display())));
        }
    };
    let set = set_keys(set_json)?;
    let mut texts = l4s_scenario::variant_texts(doc, file)?;
    let names: Vec<String> = texts.iter().filter_map(|(n, _)| n.clone()).collect();
    let chosen = match variant {
        None if names.is_empty() => texts.remove(0).1,
        None => {
            return Err(Error::input(format!(
                "{} has variants ({}): name one with variant=..., or use run_variants()",
                file.display(),
                names.join(", ")
            )))
        }
        Some(v) => texts
            .into_iter()
            .find(|(n, _)| n.as_deref() == Some(v))
            .map(|(_, t)| t)
            .ok_or_else(|| {
                if names.is_empty() {
                    Error::input(format!("variant={v:?}: {} has no [[variants]]", file.display()))
                } else {
                    Error::input(format!(
                        "variant={v:?}: {} has no such variant; expected one of {}",
                        file.display(),
                        names.join(", ")
                    ))
                }
            })?,
    };
    if set.is_empty() {
        return Ok(chosen);
    }
    Ok(l4s_scenario::load_with_sets(&chosen, file, &set, Caller::Python)?.0)
}

/// What the thread of [`interruptible`]'s work sends the thread that waits for it.
enum Msg<T> {
    /// A notice, to raise as a warning; the work goes on once the sender hears back.
    Note(String, Sender<()>),
    Done(T),
}

/// A run's progress as the Python package hears it: each notice is raised as a warning by
/// the thread that waits for the run, before the run goes on; in a set of variants, with
/// the variant's name.
struct Notices {
    say: Box<dyn Fn(String) + Send>,
    variant: Option<String>,
}

impl l4s_lab::Progress for Notices {
    fn variant(&mut self, name: &str) {
        self.variant = Some(name.to_string());
    }
    fn notice(&mut self, message: &str) {
        (self.say)(match &self.variant {
            Some(v) if !v.is_empty() => format!("variant {v}: {message}"),
            _ => message.to_string(),
        });
    }
}

/// Run `work` on a thread of its own while this one waits with the GIL released, looking
/// for Ctrl-C every 100 ms; on one, `stop` is set (the work ends early) and the signal's
/// error is returned beside the work's result. Each notice the work gives its [`Notices`]
/// is raised as a `UserWarning` at the user's line (`l4s_lab._errors.warn`) while the work
/// waits; a warning that the user's filters make an error stops the work as Ctrl-C does.
fn interruptible<T: Send + 'static>(
    py: Python<'_>,
    stop: &Arc<AtomicBool>,
    what: &str,
    work: impl FnOnce(Notices) -> T + Send + 'static,
) -> PyResult<(T, Option<PyErr>)> {
    use std::sync::mpsc::{channel, RecvTimeoutError};
    let (tx, mut rx) = channel::<Msg<T>>();
    let to_waiter = tx.clone();
    let say = Box::new(move |m| {
        let (ack_tx, ack) = channel();
        if to_waiter.send(Msg::Note(m, ack_tx)).is_ok() {
            // An error here is the waiter gone without answering (after a second Ctrl-C):
            // the work goes on to its stop.
            let _ = ack.recv();
        }
    });
    let notices = Notices { say, variant: None };
    let worker = std::thread::spawn(move || {
        let _ = tx.send(Msg::Done(work(notices)));
    });
    let mut interrupted = None;
    let res = loop {
        // The receiver goes with the wait and comes back (it is Send, not Sync).
        let (got, back) = py.detach(move || (rx.recv_timeout(std::time::Duration::from_millis(100)), rx));
        rx = back;
        match got {
            Ok(Msg::Done(r)) => break Some(r),
            // The senders are gone without a result: the work panicked.
            Err(RecvTimeoutError::Disconnected) => break None,
            Ok(Msg::Note(m, ack)) => {
                let warned = py
                    .import("l4s_lab._errors")
                    .and_then(|e| e.getattr("warn")?.call1((m,)).map(|_| ()));
                if let (Err(e), None) = (warned, &interrupted) {
                    stop.store(true, Ordering::SeqCst);
                    interrupted = Some(e);
                }
                let _ = ack.send(());
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        if let Err(e) = py.check_signals() {
            if interrupted.is_some() {
                // A second Ctrl-C: back to Python at once. The work, told to stop by the
                // first, ends at its next step on its own (a run's results directory is
                // committed whole or not at all).
                return Err(e);
            }
            stop.store(true, Ordering::SeqCst);
            interrupted = Some(e);
        }
    };
    let _ = worker.join();
    let res = res.ok_or_else(|| py_err(py, Error::new(ErrorKind::Run, format!("the {what}'s thread panicked"))))?;
    Ok((res, interrupted))
}

/// A finished run as Python sees it.
fn run_dict<'py>(py: Python<'py>, r: &l4s_lab::Run) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("variant", r.variant.clone())?;
    d.set_item("dir", r.dir.display().to_string())?;
    d.set_item("wall_s", r.wall.as_secs_f64())?;
    d.set_item("events", r.stats.events)?;
    d.set_item("bottleneck_packets", r.stats.bottleneck_packets)?;
    d.set_item("complete", r.summary.complete)?;
    d.set_item(
        "report",
        match &r.report {
            Some(Ok(p)) => Some(p.display().to_string()),
            _ => None,
        },
    )?;
    Ok(d)
}

/// The variant names of a scenario file (empty without `[[variants]]`).
#[pyfunction]
#[pyo3(signature = (path, text=None))]
fn variant_names(py: Python<'_>, path: &str, text: Option<&str>) -> PyResult<Vec<String>> {
    let file = PathBuf::from(path);
    let text = match text {
        Some(t) => t.to_string(),
        None => read(&file).map_err(|e| py_err(py, e))?,
    };
    let doc: toml_edit::DocumentMut = text.parse().map_err(|_| {
        py_err(
            py,
            l4s_scenario::load_str(&text, &file)
                .err()
                .map_or(Error::input("not TOML"), Error::from),
        )
    })?;
    let v = l4s_scenario::variant_texts(doc, &file).map_err(|e| py_err(py, e.into()))?;
    Ok(v.into_iter().filter_map(|(n, _)| n).collect())
}

fn read(file: &Path) -> Result<String, Error> {
    std::fs::read_to_string(file)
        .map_err(|e| Error::input(format!("{}: cannot read the scenario file: {e}", file.display())))
}

/// Run one scenario (a variant of it, with `set` applied) into the results directory
/// `out`, in this process. Returns the summary (JSON text) and facts of the run.
#[pyfunction]
#[pyo3(signature = (path, out, text=None, set_json="{}", variant=None, seed=None, duration=None, snapshots=Some("100ms"), report=false, packets=false))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    path: &str,
    out: &str,
    text: Option<&str>,
    set_json: &str,
    variant: Option<&str>,
    seed: Option<u64>,
    duration: Option<&str>,
    snapshots: Option<&str>,
    report: bool,
    packets: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let file = PathBuf::from(path);
    let prep = || -> Result<(String, RunOptions), Error> {
        let text = match text {
            Some(t) => t.to_string(),
            None => read(&file)?,
        };
        let eff = effective_text(&text, &file, set_json, variant)?;
        let opts = run_options(
            (seed, duration, snapshots, report, packets),
            out,
            vec!["python".into(), "l4s_lab.run".into(), path.to_string()],
        )?;
        Ok((eff, opts))
    };
    let (eff, opts) = prep().map_err(|e| py_err(py, e))?;
    let runs = run_interruptible(py, eff, file, opts)?;
    run_dict(py, &runs.runs[0])
}

/// The options of a run from Python's arguments: seed, duration, snapshots, report,
/// packets.
fn run_options(
    (seed, duration, snapshots, report, packets): (Option<u64>, Option<&str>, Option<&str>, bool, bool),
    out: &str,
    command: Vec<String>,
) -> Result<RunOptions, Error> {
    Ok(RunOptions {
        seed,
        duration: run_duration(duration)?,
        snapshot_interval: snapshot_interval(snapshots)?,
        report,
        packets,
        out: Some(PathBuf::from(out)),
        command,
        caller: Caller::Python,
        ..RunOptions::default()
    })
}

/// [`l4s_lab::run_text`] on a thread of its own, stopped by Ctrl-C ([`interruptible`]):
/// the run's results are written, then the signal's error is raised.
fn run_interruptible(py: Python<'_>, text: String, file: PathBuf, mut opts: RunOptions) -> PyResult<l4s_lab::Runs> {
    let stop = Arc::new(AtomicBool::new(false));
    opts.stop = Some(stop.clone());
    let (res, interrupted) = interruptible(py, &stop, "run", move |mut notices| {
        l4s_lab::run_text(&text, &file, &mut Simulator, &opts, &mut notices)
    })?;
    let runs = res.map_err(|e| py_err(py, e))?;
    match interrupted {
        Some(e) => Err(e),
        None => Ok(runs),
    }
}

/// Run every variant of a scenario (or the scenario, without variants) as `l4s run` does,
/// into `out`: a folder per variant with `variants.json` and `compare.html` beside them,
/// refused where `l4s run` refuses it. `set` applies over each variant's own keys.
/// Returns `runs` (one dict each, as [`run`]'s) and `compare` (the page, or None).
#[pyfunction]
#[pyo3(signature = (path, out, text=None, set_json="{}", seed=None, duration=None, snapshots=Some("100ms"), report=false, packets=false))]
#[allow(clippy::too_many_arguments)]
fn run_set<'py>(
    py: Python<'py>,
    path: &str,
    out: &str,
    text: Option<&str>,
    set_json: &str,
    seed: Option<u64>,
    duration: Option<&str>,
    snapshots: Option<&str>,
    report: bool,
    packets: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let file = PathBuf::from(path);
    let prep = || -> Result<(String, RunOptions), Error> {
        let text = match text {
            Some(t) => t.to_string(),
            None => read(&file)?,
        };
        let set = set_keys(set_json)?
            .into_iter()
            .map(|(k, v)| (k, v.to_string().trim().to_string()))
            .collect();
        let opts = run_options(
            (seed, duration, snapshots, report, packets),
            out,
            vec!["python".into(), "l4s_lab.run_variants".into(), path.to_string()],
        )?;
        Ok((text, RunOptions { set, ..opts }))
    };
    let (text, opts) = prep().map_err(|e| py_err(py, e))?;
    let runs = run_interruptible(py, text, file, opts)?;
    let d = PyDict::new(py);
    let list = PyList::empty(py);
    for r in &runs.runs {
        list.append(run_dict(py, r)?)?;
    }
    d.set_item("runs", list)?;
    d.set_item("compare", runs.compare.as_ref().map(|(p, _)| p.display().to_string()))?;
    Ok(d)
}

/// `duration=`: a run's length, or the scenario's.
fn run_duration(duration: Option<&str>) -> Result<Option<l4s_core::Dur>, Error> {
    duration
        .map(|d| l4s_core::units::parse_dur(d).map_err(|e| Error::input(format!("duration='{d}': {e}"))))
        .transpose()
}

/// `snapshots=`: the time series' interval, or none.
fn snapshot_interval(snapshots: Option<&str>) -> Result<l4s_core::Dur, Error> {
    match snapshots {
        None => Ok(l4s_core::Dur::ZERO),
        Some(s) => l4s_core::units::parse_dur(s).map_err(|e| {
            // `l4s run --snapshot-interval 0` turns them off; here None does.
            let off = if s.trim() == "0" {
                "; snapshots=None turns the time series off"
            } else {
                ""
            };
            Error::input(format!("snapshots='{s}': {e}{off}"))
        }),
    }
}

/// The campaign file's text and path: from a file, or TOML text for a campaign given as a
/// dict (its relative paths count from `base`).
fn campaign_spec(py: Python<'_>, path: Option<&str>, text: Option<&str>) -> PyResult<campaign::Spec> {
    let r = match (path, text) {
        (Some(p), None) => campaign::spec::load(Path::new(p)),
        (p, Some(t)) => campaign::spec::parse(t, Path::new(p.unwrap_or("<campaign>"))),
        (None, None) => return Err(py_err(py, Error::input("give a campaign file or a campaign"))),
    };
    r.map_err(|e| py_err(py, e.into()))
}

fn outcome<'py>(py: Python<'py>, o: &campaign::Outcome) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("dir", o.dir.display().to_string())?;
    d.set_item("name", &o.name)?;
    d.set_item("runs", o.runs)?;
    d.set_item("unique_runs", o.unique_runs)?;
    d.set_item("already_done", o.already_done)?;
    d.set_item("ran", o.ran)?;
    d.set_item("done", o.done)?;
    d.set_item("failed", o.failed.clone())?;
    d.set_item("interrupted", o.interrupted)?;
    d.set_item("index", o.tables.index.display().to_string())?;
    d.set_item("pairs", o.tables.pairs.display().to_string())?;
    d.set_item("wall_s", o.wall.as_secs_f64())?;
    d.set_item("run_wall_s", o.run_wall.as_secs_f64())?;
    d.set_item("ran_bytes", o.ran_bytes)?;
    d.set_item("notes", o.report_notes.clone())?;
    Ok(d)
}

/// Run a campaign on this machine (`jobs` runs at once, 0 = every core). Ctrl-C stops
/// starting runs; the runs under way finish, the tables are written and
/// `KeyboardInterrupt` is raised.
#[pyfunction]
#[pyo3(signature = (path=None, text=None, out=None, jobs=0, update=false))]
fn campaign_run<'py>(
    py: Python<'py>,
    path: Option<&str>,
    text: Option<&str>,
    out: Option<&str>,
    jobs: usize,
    update: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let spec = campaign_spec(py, path, text)?;
    let stop = Arc::new(AtomicBool::new(false));
    let opts = CampaignOptions {
        jobs,
        out: out.map(PathBuf::from),
        update,
        stop: Some(stop.clone()),
        command: vec!["python".into(), "l4s_lab.campaign.run".into()],
        caller: Caller::Python,
    };
    let (res, interrupted) = interruptible(py, &stop, "campaign", move |_| {
        campaign::run_spec(spec, &mut Simulator, &opts, &mut campaign::NoCampaignProgress)
    })?;
    let o = res.map_err(|e| py_err(py, e))?;
    if let Some(e) = interrupted {
        return Err(e);
    }
    outcome(py, &o)
}

/// Where a store stands (`l4s campaign status`).
#[pyfunction]
fn campaign_status<'py>(py: Python<'py>, dir: &str) -> PyResult<Bound<'py, PyDict>> {
    let s = campaign::status(Path::new(dir)).map_err(|e| py_err(py, e))?;
    let d = PyDict::new(py);
    d.set_item("dir", s.dir.display().to_string())?;
    d.set_item("name", &s.name)?;
    d.set_item("runs", s.runs)?;
    d.set_item("unique_runs", s.unique_runs)?;
    d.set_item("done", s.done)?;
    d.set_item("running", s.running)?;
    d.set_item("failed", s.failed.clone())?;
    d.set_item("missing", s.missing)?;
    d.set_item("active", s.active)?;
    d.set_item("run_bytes", s.run_bytes)?;
    d.set_item("bytes_per_run", s.bytes_per_run())?;
    d.set_item("other_runs", s.other_runs)?;
    d.set_item("other_bytes", s.other_bytes)?;
    d.set_item("l4s_version", &s.l4s_version)?;
    Ok(d)
}

/// Build a store's tables again; returns (index, pairs) paths.
#[pyfunction]
fn campaign_tables(py: Python<'_>, dir: &str) -> PyResult<(String, String)> {
    let t = campaign::write_tables(Path::new(dir)).map_err(|e| py_err(py, e))?;
    Ok((t.index.display().to_string(), t.pairs.display().to_string()))
}

/// A campaign opened for an executor that runs its missing runs elsewhere (Ray): the
/// store is locked while this object lives.
#[pyclass(module = "l4s_lab._native")]
struct CampaignSession {
    inner: Option<Session>,
}

impl CampaignSession {
    fn session(&self, py: Python<'_>) -> PyResult<&Session> {
        self.inner
            .as_ref()
            .ok_or_else(|| py_err(py, Error::input("this campaign session is finished")))
    }
}

#[pymethods]
impl CampaignSession {
    #[new]
    #[pyo3(signature = (path=None, text=None, out=None, update=false))]
    fn new(py: Python<'_>, path: Option<&str>, text: Option<&str>, out: Option<&str>, update: bool) -> PyResult<Self> {
        let spec = campaign_spec(py, path, text)?;
        let opts = CampaignOptions {
            out: out.map(PathBuf::from),
            update,
            command: vec!["python".into(), "l4s_lab.campaign.run".into(), "executor=ray".into()],
            caller: Caller::Python,
            ..CampaignOptions::default()
        };
        let s = Session::open(spec, &Simulator, &opts).map_err(|e| py_err(py, e))?;
        Ok(CampaignSession { inner: Some(s) })
    }

    /// The store's folder.
    #[getter]
    fn dir(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.session(py)?.dir.display().to_string())
    }

    /// The runs the store lacks: dicts with `index` (into the plan), `key`, `seed`,
    /// `variant`, `pair` and `text` (the effective scenario).
    fn todo<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let s = self.session(py)?;
        let l = PyList::empty(py);
        for &i in &s.todo {
            let r = &s.plan.runs[i];
            let d = PyDict::new(py);
            d.set_item("index", i)?;
            d.set_item("key", &r.key)?;
            d.set_item("seed", r.seed)?;
            d.set_item("variant", &s.plan.variants[r.variant as usize])?;
            d.set_item("pair", r.pair)?;
            d.set_item("text", s.plan.run_text(r))?;
            l.append(d)?;
        }
        Ok(l)
    }

    /// The scenario file the runs' texts refer to (for trace files and messages).
    #[getter]
    fn scenario_file(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.session(py)?.plan.scenario_file.clone())
    }

    /// What each run keeps: a dict for `run_to_files`.
    fn outputs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let o = self.session(py)?.run_options();
        let d = PyDict::new(py);
        d.set_item("snapshot_interval_ns", o.snapshot_interval.as_nanos())?;
        d.set_item("report", o.report)?;
        d.set_item("packets", o.packets)?;
        Ok(d)
    }

    /// Store the files of run `index` that came back from a worker.
    fn store_files(&self, py: Python<'_>, index: usize, files: Vec<(String, Vec<u8>)>) -> PyResult<()> {
        let s = self.session(py)?;
        let r = s
            .plan
            .runs
            .get(index)
            .ok_or_else(|| py_err(py, Error::input(format!("no run {index} in the plan"))))?
            .clone();
        let res = py.detach(|| s.store_files(&r, &files));
        s.record(&r, &res.clone().map(|_| std::time::Duration::ZERO));
        res.map_err(|e| py_err(py, e))
    }

    /// Record that run `index` failed, and why (it is tried again on the next start).
    fn fail(&self, py: Python<'_>, index: usize, message: &str) -> PyResult<()> {
        let s = self.session(py)?;
        let r = s
            .plan
            .runs
            .get(index)
            .ok_or_else(|| py_err(py, Error::input(format!("no run {index} in the plan"))))?
            .clone();
        s.record(&r, &Err(Error::new(ErrorKind::Run, message)));
        Ok(())
    }

    /// Write the tables, release the store and return the outcome.
    #[pyo3(signature = (interrupted=false))]
    fn finish<'py>(&mut self, py: Python<'py>, interrupted: bool) -> PyResult<Bound<'py, PyDict>> {
        let s = self
            .inner
            .take()
            .ok_or_else(|| py_err(py, Error::input("this campaign session is finished")))?;
        let o = py.detach(|| s.finish(interrupted)).map_err(|e| py_err(py, e))?;
        outcome(py, &o)
    }
}

/// Run one effective scenario with a campaign's outputs and return its results
/// directory's files as (name, bytes): the task a Ray worker runs.
#[pyfunction]
fn run_to_files<'py>(
    py: Python<'py>,
    text: &str,
    scenario_file: &str,
    outputs: Bound<'py, PyDict>,
) -> PyResult<Vec<(String, Bound<'py, PyBytes>)>> {
    let get_bool = |k: &str| -> PyResult<bool> {
        Ok(match outputs.get_item(k)? {
            Some(v) => v.extract()?,
            None => false,
        })
    };
    let snap: u64 = match outputs.get_item("snapshot_interval_ns")? {
        Some(v) => v.extract()?,
        None => 0,
    };
    let opts = RunOptions {
        snapshot_interval: l4s_core::Dur(snap),
        report: get_bool("report")?,
        packets: get_bool("packets")?,
        keep_csv: false,
        lock_out: false,
        command: vec!["python".into(), "l4s_lab.campaign".into(), "worker".into()],
        caller: Caller::Python,
        ..RunOptions::default()
    };
    let files = py
        .detach(|| campaign::run_to_files(text, Path::new(scenario_file), &opts))
        .map_err(|e| py_err(py, e))?;
    Ok(files.into_iter().map(|(n, b)| (n, PyBytes::new(py, &b))).collect())
}

/// Summary statistics of a sample, as the campaign report computes them (numpy's linear
/// percentiles, sample standard deviation with divisor n - 1); `None` without values.
#[pyfunction]
fn stats<'py>(py: Python<'py>, values: Vec<f64>) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Some(s) = campaign::stats::Stats::of(&values) else {
        return Ok(None);
    };
    let d = PyDict::new(py);
    d.set_item("n", s.n)?;
    d.set_item("mean", s.mean)?;
    d.set_item("median", s.median)?;
    d.set_item("p90", s.p90)?;
    d.set_item("q25", s.q25)?;
    d.set_item("q75", s.q75)?;
    d.set_item("iqr", s.iqr)?;
    d.set_item("sd", s.sd)?;
    Ok(Some(d))
}

/// An `L4sError` of `kind` (see `ErrorKind::name`) for the Python layer to raise, shaped as
/// the runner's own: its `exit_code` is the one `l4s` gives for that kind.
#[pyfunction]
#[pyo3(signature = (message, kind="input", file=None))]
fn make_error(py: Python<'_>, message: String, kind: &str, file: Option<String>) -> PyResult<Py<PyAny>> {
    let Some(kind) = ErrorKind::from_name(kind) else {
        let names: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.name()).collect();
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "kind={kind:?}: expected one of {}",
            names.join(", ")
        )));
    };
    let mut e = Error::new(kind, message);
    e.location = file.map(|f| l4s_lab::Location {
        file: f.into(),
        line: None,
        key: String::new(),
    });
    Ok(py_err(py, e).into_value(py).into_any())
}

/// The percentile-bootstrap confidence interval of the mean (deterministic for a seed).
#[pyfunction]
#[pyo3(signature = (values, level=0.95, resamples=2000, seed=1))]
fn bootstrap_mean_ci(values: Vec<f64>, level: f64, resamples: usize, seed: u64) -> Option<(f64, f64)> {
    campaign::stats::bootstrap_mean_ci(&values, level, resamples, seed)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let error_type = m.py().get_type::<L4sError>();
    // What an L4sError made by hand holds: the attributes the package's own errors set.
    for name in ["kind", "exit_code", "file", "line", "key"] {
        error_type.setattr(name, m.py().None())?;
    }
    m.add("L4sError", error_type)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_set, m)?)?;
    m.add_function(wrap_pyfunction!(variant_names, m)?)?;
    m.add_function(wrap_pyfunction!(toml_text, m)?)?;
    m.add_function(wrap_pyfunction!(campaign_run, m)?)?;
    m.add_function(wrap_pyfunction!(campaign_status, m)?)?;
    m.add_function(wrap_pyfunction!(campaign_tables, m)?)?;
    m.add_function(wrap_pyfunction!(run_to_files, m)?)?;
    m.add_function(wrap_pyfunction!(stats, m)?)?;
    m.add_function(wrap_pyfunction!(bootstrap_mean_ci, m)?)?;
    m.add_function(wrap_pyfunction!(make_error, m)?)?;
    m.add_class::<CampaignSession>()?;
    Ok(())
}
