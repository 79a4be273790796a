//! The variants of one `l4s run` of a scenario file belong together: `variants.json` beside
//! their directories records the set (an id, the variants planned and those done, and
//! whether the set is complete), and each variant's `run-info.json` names its set. A run
//! interrupted part-way leaves an incomplete set, and its finished variants beside older
//! ones from an earlier run: a comparison or a report of such directories says so.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The manifest's file name, in the folder of the variants' directories.
pub const MANIFEST: &str = "variants.json";

/// `variants.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantSet {
    pub format: u32,
    /// Unique to one `l4s run` of the file; each variant's `run-info.json` has it as
    /// `variant_set`.
    pub set: String,
    pub scenario: String,
    pub file: String,
    pub started_utc: String,
    /// The variants the run set out to write, and those written so far.
    pub variants: Vec<String>,
    pub done: Vec<String>,
    pub complete: bool,
    /// The variant the run was interrupted in: its directory holds what it reached,
    /// marked incomplete (not in `done`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

impl VariantSet {
    /// Read the manifest in `dir`, if there is one that reads.
    pub fn read(dir: &Path) -> Option<VariantSet> {
        serde_json::from_slice(&std::fs::read(dir.join(MANIFEST)).ok()?).ok()
    }
}

/// The variant set a results directory's `run-info.json` names.
fn set_of(dir: &Path) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("run-info.json")).ok()?).ok()?;
    v.get("variant_set")?.as_str().map(str::to_string)
}

/// What a comparison or a report of `dirs` should warn about their variant sets: an
/// incomplete set, runs of different `l4s run`s of one file side by side, and a run that
/// is not of the latest set in its folder.
pub fn warnings(dirs: &[PathBuf]) -> Vec<String> {
    // A directory still being written (a hidden temporary one) is part of the set in
    // progress: nothing to say about it yet.
    let dirs: Vec<PathBuf> = dirs
        .iter()
        .filter(|d| !d.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
        .cloned()
        .collect();
    let dirs = &dirs[..];
    let mut out = Vec::new();
    let mut parents: Vec<PathBuf> = Vec::new();
    for d in dirs {
        if let Some(p) = d.parent().filter(|p| p.join(MANIFEST).is_file()) {
            if !parents.iter().any(|x| x == p) {
                parents.push(p.to_path_buf());
            }
        }
    }
    for p in &parents {
        let Some(m) = VariantSet::read(p) else { continue };
        if !m.complete {
            let missing: Vec<&str> = m
                .variants
                .iter()
                .filter(|v| !m.done.contains(v) && m.stopped.as_ref() != Some(*v))
                .map(String::as_str)
                .collect();
            let stopped = m
                .stopped
                .as_ref()
                .map(|v| format!("; {v} was interrupted and holds what it reached, marked incomplete"))
                .unwrap_or_default();
            let others = if missing.is_empty() {
                String::new()
            } else {
                format!(
                    "; not written: {}, so a directory of {} there may hold an earlier run's results",
                    missing.join(", "),
                    if missing.len() == 1 { "that name" } else { "those names" }
                )
            };
            out.push(format!(
                "the variant set in {} is incomplete: {} of {} variants written in full{stopped}{others}: run the scenario again",
                p.display(),
                m.done.len(),
                m.variants.len(),
            ));
        }
        let stale: Vec<String> = dirs
            .iter()
            .filter(|d| d.parent() == Some(p.as_path()))
            .filter(|d| set_of(d).as_deref() != Some(m.set.as_str()))
            .map(|d| d.display().to_string())
            .collect();
        if !stale.is_empty() {
            out.push(format!(
                "{} {} not from the latest run of {} (variant set {} in {}): the comparison mixes results of different runs",
                stale.join(", "),
                if stale.len() == 1 { "is" } else { "are" },
                m.file,
                m.set,
                p.join(MANIFEST).display()
            ));
        }
    }
    out
}
