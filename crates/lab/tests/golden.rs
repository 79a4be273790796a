//! No-change guard: every shipped scenario (and every variant), run through the runner
//! library at its own seed and at seed 7, must write the same `summary.json`, snapshot
//! CSVs and `distributions.csv`, byte for byte, as the digests in
//! `tests/golden/sim.sha256` (SHA-256; committed from 1791790, before the runner, the
//! measurement layer and the link models were split out of the simulator).
//!
//! A change that is meant to change results regenerates the file with
//! `L4S_GOLDEN_WRITE=1 cargo test -p l4s-lab --test golden` and says why in its commit.
//!
//! The same runs must also end with no flow whose ECN validation failed, as
//! `validation_no_false_failure.rs` asserts at seed 2: the shipped scenarios have no
//! fault, so a failure would be a sender mistaking congestion marking for mangling, and
//! regenerating the digests must not make one the expected result.

mod common;

use l4s_lab::{run_text, NoProgress, RunOptions, Simulator};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn hex(b: &[u8]) -> String {
    Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

const FILES: [&str; 4] = [
    "summary.json",
    "snapshots-flows.csv",
    "snapshots-queues.csv",
    "distributions.csv",
];

/// `name file -> digest` for every run, and the flows whose ECN validation failed.
fn digests(tmp: &Path) -> (BTreeMap<String, String>, Vec<String>) {
    // Scenarios are named relative to the repository (as the README runs them), and so
    // are the trace files they name. This binary's only test.
    std::env::set_current_dir(root()).unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 9, "shipped scenarios not found: {files:?}");
    let mut out = BTreeMap::new();
    let mut failed = Vec::new();
    for f in files {
        let rel = format!("scenarios/{}", f.file_name().unwrap().to_string_lossy());
        let text = std::fs::read_to_string(&f).unwrap();
        common::assert_no_fault(&rel, &text);
        for seed in [None, Some(7)] {
            let tag = seed.map(|s| s.to_string()).unwrap_or_else(|| "default".into());
            let opts = RunOptions {
                seed,
                report: false,
                out: Some(tmp.join(format!("{}-{tag}", rel.replace('/', "_")))),
                command: Vec::new(),
                ..RunOptions::default()
            };
            let runs = run_text(&text, Path::new(&rel), &mut Simulator, &opts, &mut NoProgress)
                .unwrap_or_else(|e| panic!("{rel}: {e}"));
            for r in runs.runs {
                failed.extend(common::validation_failures(&rel, &tag, &r));
                let name = format!(
                    "{rel}{}@seed={tag}",
                    r.variant.as_ref().map(|v| format!("[{v}]")).unwrap_or_default()
                );
                for file in FILES {
                    let bytes = std::fs::read(r.dir.join(file)).unwrap();
                    out.insert(format!("{name} {file}"), hex(&bytes));
                }
            }
        }
    }
    (out, failed)
}

#[test]
fn shipped_scenarios_give_the_committed_results() {
    let tmp = std::env::temp_dir().join(format!("l4s-golden-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let path = root().join("tests/golden/sim.sha256");
    let (got, failed) = digests(&tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(
        failed.is_empty(),
        "{} flows of the shipped scenarios' healthy runs failed ECN validation:\n{}",
        failed.len(),
        failed.join("\n")
    );
    let text: String = got.iter().map(|(k, v)| format!("{v}  {k}\n")).collect();
    if std::env::var_os("L4S_GOLDEN_WRITE").is_some() {
        std::fs::write(&path, text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let want: BTreeMap<String, String> = want
        .lines()
        .filter_map(|l| l.split_once("  ").map(|(d, k)| (k.to_string(), d.to_string())))
        .collect();
    let differ: BTreeSet<&String> = got
        .keys()
        .chain(want.keys())
        .filter(|k| got.get(*k) != want.get(*k))
        .collect();
    assert!(
        differ.is_empty(),
        "{} of {} outputs differ from {}:\n{}",
        differ.len(),
        got.len().max(want.len()),
        path.display(),
        differ.iter().map(|k| format!("  {k}")).collect::<Vec<_>>().join("\n")
    );
}
