//! No false ECN validation failure: every shipped scenario and variant, none of which has a
//! `fault`, run at seed 2, must end with no flow whose ECN validation failed. Nothing on
//! these paths rewrites the ECN field, so a failure is a sender mistaking congestion
//! marking for mangling (and then turning a TCP Prague flow into a loss-based classic one,
//! and the report blaming the path). The same is asserted of the runs at each scenario's
//! own seed and at seed 7 by `golden.rs`, which makes them anyway.
//!
//! Runs without a report and without snapshots.
//!
//! It failed before the all-CE rule of the TCP sender's ECN validation discounted rounds
//! whose marks a queue explains (`ECN_VALIDATION_QUEUE_DELAY`): TCP Prague's `web`
//! connections in `xr-varying-bandwidth` variant `l4s` declared all-CE mangling during the
//! 5 Mbit/s periods at seeds 1, 2 and 7.

mod common;

use l4s_core::Dur;
use l4s_lab::{run_text, NoProgress, RunOptions, Simulator};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn no_shipped_scenario_fails_ecn_validation() {
    let tmp = std::env::temp_dir().join(format!("l4s-validation-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 9, "shipped scenarios not found: {files:?}");
    let (mut runs, mut failed) = (0, Vec::new());
    for f in files {
        let rel = format!("scenarios/{}", f.file_name().unwrap().to_string_lossy());
        let text = std::fs::read_to_string(&f).unwrap();
        common::assert_no_fault(&rel, &text);
        let opts = RunOptions {
            seed: Some(2),
            report: false,
            snapshot_interval: Dur::ZERO,
            out: Some(tmp.join(format!("{}-2", rel.replace('/', "_")))),
            command: Vec::new(),
            ..RunOptions::default()
        };
        let set = run_text(&text, &f, &mut Simulator, &opts, &mut NoProgress).unwrap_or_else(|e| panic!("{rel}: {e}"));
        for r in set.runs {
            runs += 1;
            failed.extend(common::validation_failures(&rel, "2", &r));
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(runs >= 20, "only {runs} runs");
    assert!(
        failed.is_empty(),
        "{} flows of {runs} healthy runs failed ECN validation:\n{}",
        failed.len(),
        failed.join("\n")
    );
}
