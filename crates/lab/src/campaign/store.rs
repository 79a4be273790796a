//! The campaign store: one folder that holds a campaign's plan, its runs (each under its
//! key, written complete or not at all) and its tables.
//!
//! ```text
//! DIR/campaign.json        the marker: name, plan digest, version (written last)
//! DIR/campaign.toml        the campaign file, DIR/scenario.toml its scenario
//! DIR/plan.json            every point and run of the plan
//! DIR/runs/ab/abcd…/       one results directory per run key (summary.json, distributions)
//! DIR/failed/abcd….txt     why a run failed (it is tried again on the next start)
//! DIR/index.parquet, pairs.parquet
//! DIR/.lock                held by the process running the campaign
//! ```
//!
//! A store is only ever written by l4s: a folder without `campaign.json` that is not empty
//! is refused, and only our own files in it are replaced.

use super::plan::Plan;
use crate::Error;
use l4s_metrics::results::write_file_atomic;
use l4s_metrics::summary::Summary;
use serde::{Deserialize, Serialize};
use std::fs::{self, File};
use std::path::{Path, PathBuf};

/// The file that marks a folder as a campaign store.
pub const MARKER: &str = "campaign.json";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Marker {
    pub format: u32,
    pub name: String,
    pub digest: String,
    pub created_utc: String,
    pub updated_utc: String,
    pub l4s_version: String,
    pub runs: usize,
    pub unique_runs: usize,
}

/// An open store, locked for this process.
pub struct Store {
    pub dir: PathBuf,
    _lock: File,
}

fn io(dir: &Path, e: std::io::Error) -> Error {
    Error::output(format!("campaign store {}: {e}", dir.display()))
}

fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Lock the store for this process: one campaign process per store at a time. The lock is
/// the kernel's (`flock`), so it is released however the process ends.
fn lock(dir: &Path) -> Result<File, Error> {
    let f = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(".lock"))
        .map_err(|e| io(dir, e))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(fs::TryLockError::WouldBlock) => Err(Error::input(format!(
            "{}: another l4s process is running this campaign (it holds {}); wait for it to end or stop it",
            dir.display(),
            dir.join(".lock").display()
        ))),
        Err(fs::TryLockError::Error(e)) => Err(io(dir, e)),
    }
}

/// Is the store in use by a running campaign (its lock held)?
pub fn active(dir: &Path) -> bool {
    let Ok(f) = File::options().write(true).open(dir.join(".lock")) else {
        return false;
    };
    matches!(f.try_lock(), Err(fs::TryLockError::WouldBlock))
}

/// Read a store's marker, refusing a folder that is not a store.
pub fn marker(dir: &Path) -> Result<Marker, Error> {
    let p = dir.join(MARKER);
    let bytes = fs::read(&p).map_err(|e| {
        Error::input(if !dir.exists() {
            format!(
                "{}: no such directory (give the store a campaign run wrote)",
                dir.display()
            )
        } else if e.kind() == std::io::ErrorKind::NotFound {
            format!("{}: not an l4s-lab campaign store (no {MARKER})", dir.display())
        } else {
            format!(
                "{}: not an l4s-lab campaign store (cannot read {MARKER}: {e})",
                dir.display()
            )
        })
    })?;
    serde_json::from_slice(&bytes).map_err(|e| Error::input(format!("{}: not a campaign marker: {e}", p.display())))
}

/// Read a store's plan.
pub fn read_plan(dir: &Path) -> Result<Plan, Error> {
    let p = dir.join("plan.json");
    let bytes = fs::read(&p).map_err(|e| Error::input(format!("{}: cannot read the plan: {e}", p.display())))?;
    let plan: Plan = serde_json::from_slice(&bytes)
        .map_err(|e| Error::input(format!("{}: not a campaign plan: {e}", p.display())))?;
    if plan.format != super::plan::FORMAT {
        return Err(Error::input(format!(
            "{}: plan format {} (this build reads {})",
            p.display(),
            plan.format,
            super::plan::FORMAT
        )));
    }
    Ok(plan)
}

impl Store {
    /// Open (or make) the store of `plan` at `dir`. A store of another plan is refused
    /// unless `update`: then this plan becomes the store's, and the runs the two share are
    /// kept (they are keyed by their effective scenario).
    pub fn open(
        dir: &Path,
        plan: &Plan,
        campaign_text: &str,
        scenario_text: &str,
        update: bool,
        caller: crate::Caller,
    ) -> Result<Store, Error> {
        let out = caller.option("out");
        crate::check_folder_kind(dir, caller)?;
        if dir.exists() {
            let empty = fs::read_dir(dir).map_err(|e| io(dir, e))?.next().is_none();
            if !empty && !dir.join(MARKER).is_file() {
                return Err(Error::input(format!(
                    "{} exists and is not an l4s-lab campaign store (no {MARKER}); choose another folder with {out}",
                    dir.display()
                )));
            }
        }
        fs::create_dir_all(dir.join("runs")).map_err(|e| io(dir, e))?;
        let lock = lock(dir)?;
        let mut created = now();
        if dir.join(MARKER).is_file() {
            let m = marker(dir)?;
            created = m.created_utc.clone();
            if m.digest != plan.digest && !update {
                return Err(Error::input(format!(
                    "{} holds the runs of another campaign ({:?}, plan {}; this campaign's plan is {}): \
                     choose another folder with {out}, or give {} to make this campaign the store's (the runs both share are kept)",
                    dir.display(),
                    m.name,
                    m.digest,
                    plan.digest,
                    caller.switch("update")
                )));
            }
        }
        let w = |name: &str, bytes: &[u8]| write_file_atomic(&dir.join(name), bytes).map_err(|e| io(dir, e));
        w("campaign.toml", campaign_text.as_bytes())?;
        w("scenario.toml", scenario_text.as_bytes())?;
        let plan_json = serde_json::to_vec(plan).map_err(|e| Error::output(e.to_string()))?;
        w("plan.json", &plan_json)?;
        let marker = Marker {
            format: super::plan::FORMAT,
            name: plan.name.clone(),
            digest: plan.digest.clone(),
            created_utc: created,
            updated_utc: now(),
            l4s_version: env!("CARGO_PKG_VERSION").into(),
            runs: plan.runs.len(),
            unique_runs: plan.unique_runs().len(),
        };
        w(MARKER, &serde_json::to_vec_pretty(&marker).unwrap_or_default())?;
        Ok(Store {
            dir: dir.to_path_buf(),
            _lock: lock,
        })
    }

    pub fn run_dir(&self, key: &str) -> PathBuf {
        run_dir(&self.dir, key)
    }

    /// Record why a run failed (it is tried again on the next start).
    pub fn fail(&self, key: &str, message: &str) {
        let d = self.dir.join("failed");
        let _ = fs::create_dir_all(&d);
        let _ = write_file_atomic(&d.join(format!("{key}.txt")), message.as_bytes());
    }

    /// Forget an earlier failure of a run that has now succeeded.
    pub fn clear_failure(&self, key: &str) {
        let _ = fs::remove_file(self.dir.join("failed").join(format!("{key}.txt")));
    }

    /// Is the run complete? A folder whose summary does not read is not: it is removed
    /// (it is ours, under its key) and the run is done again.
    pub fn check_done(&self, key: &str) -> bool {
        let d = self.run_dir(key);
        if !d.exists() {
            return false;
        }
        if load_summary(&self.dir, key).is_ok() && d.join("run-info.json").is_file() {
            return true;
        }
        let _ = fs::remove_dir_all(&d);
        false
    }
}

/// A run's results directory in the store `dir`.
pub fn run_dir(dir: &Path, key: &str) -> PathBuf {
    dir.join("runs").join(&key[..2.min(key.len())]).join(key)
}

/// A run's summary.
pub fn load_summary(dir: &Path, key: &str) -> Result<Summary, String> {
    let p = run_dir(dir, key).join("summary.json");
    let bytes = fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    Summary::from_json(&bytes).map_err(|e| format!("{}: {e}", p.display()))
}

/// What a store holds of its plan.
#[derive(Clone, Debug)]
pub struct Status {
    pub dir: PathBuf,
    pub name: String,
    /// Runs in the plan, and distinct runs (two runs of a plan may be the same run).
    pub runs: usize,
    pub unique_runs: usize,
    pub done: usize,
    /// Runs whose last try failed, with the reason.
    pub failed: Vec<(String, String)>,
    /// Runs being written now (only while a process holds the store).
    pub running: usize,
    pub missing: usize,
    /// A campaign process holds the store.
    pub active: bool,
    /// Bytes of the runs on disk, and per completed run.
    pub run_bytes: u64,
    /// Completed runs in the store that are not in its plan (kept from an earlier plan
    /// when the store was given another with `--update`; not in the tables), and their
    /// bytes.
    pub other_runs: usize,
    pub other_bytes: u64,
    pub l4s_version: String,
    pub updated_utc: String,
}

impl Status {
    pub fn bytes_per_run(&self) -> u64 {
        self.run_bytes.checked_div(self.done as u64).unwrap_or(0)
    }
}

/// Say what is done, running, failed and missing in the store at `dir`.
pub fn status(dir: &Path) -> Result<Status, Error> {
    let m = marker(dir)?;
    let plan = read_plan(dir)?;
    let active = active(dir);
    let uniq = plan.unique_runs();
    let mut done = 0;
    let mut failed = Vec::new();
    let mut running = 0;
    let mut missing = 0;
    let mut run_bytes = 0;
    // One walk of the runs' folders: `.KEY.tmp-PID` folders are runs being written (while a
    // process holds the store), and a completed run not in the plan is one an earlier
    // plan kept.
    let planned: std::collections::HashSet<&str> = uniq.iter().map(|r| r.key.as_str()).collect();
    let mut in_progress = std::collections::HashSet::new();
    let (mut other_runs, mut other_bytes) = (0, 0);
    for shard in fs::read_dir(dir.join("runs")).into_iter().flatten().flatten() {
        for e in fs::read_dir(shard.path()).into_iter().flatten().flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if let Some(rest) = n.strip_prefix('.') {
                if let Some(k) = rest.split(".tmp-").next().filter(|_| active) {
                    in_progress.insert(k.to_string());
                }
            } else if !planned.contains(n.as_str()) && e.path().join("summary.json").is_file() {
                other_runs += 1;
                other_bytes += dir_bytes(&e.path());
            }
        }
    }
    for r in &uniq {
        let d = run_dir(dir, &r.key);
        if d.join("summary.json").is_file() {
            done += 1;
            run_bytes += dir_bytes(&d);
        } else if in_progress.contains(&r.key) {
            running += 1;
        } else if let Ok(msg) = fs::read_to_string(dir.join("failed").join(format!("{}.txt", r.key))) {
            failed.push((r.key.clone(), msg));
        } else {
            missing += 1;
        }
    }
    Ok(Status {
        dir: dir.to_path_buf(),
        name: m.name,
        runs: plan.runs.len(),
        unique_runs: uniq.len(),
        done,
        failed,
        running,
        missing,
        active,
        run_bytes,
        other_runs,
        other_bytes,
        l4s_version: m.l4s_version,
        updated_utc: m.updated_utc,
    })
}

/// Bytes of the files in a folder and below.
pub fn dir_bytes(d: &Path) -> u64 {
    let mut n = 0;
    for e in fs::read_dir(d).into_iter().flatten().flatten() {
        match e.metadata() {
            Ok(m) if m.is_dir() => n += dir_bytes(&e.path()),
            Ok(m) => n += m.len(),
            Err(_) => {}
        }
    }
    n
}
