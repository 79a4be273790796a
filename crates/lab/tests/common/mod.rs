//! What the tests of the runner share: for the campaign tests, a small scenario with an
//! L4S and a classic variant (runs of a few milliseconds) and a campaign over it of 32
//! runs (2 rates x 2 drawn RTTs x 2 groups x 2 seeds x 2 variants); for the tests that run
//! every shipped scenario (golden, validation), the check that none has a fault and the
//! flows of a run whose ECN validation failed.
#![allow(dead_code)]

use std::path::PathBuf;

/// Panics if scenario text `text` (file `rel`) has a fault (`fault = {...}` on a link, or
/// set by a variant) outside comments: the shipped scenarios are healthy paths, where an
/// ECN validation failure can only be a sender's mistake.
pub fn assert_no_fault(rel: &str, text: &str) {
    let has_fault = text
        .lines()
        .any(|l| l.split('#').next().unwrap_or("").contains("fault"));
    assert!(!has_fault, "{rel} has a fault: the shipped scenarios are healthy paths");
}

/// One line for each flow of `run` (of file `rel` at seed `tag`) whose ECN validation
/// failed: on a healthy path, a sender that took congestion marking for mangling.
pub fn validation_failures(rel: &str, tag: &str, run: &l4s_lab::Run) -> Vec<String> {
    run.summary
        .flows
        .iter()
        .filter(|fl| fl.ecn_validation == "failed")
        .map(|fl| {
            format!(
                "{rel}{}@seed={tag}: '{}' ({}) at {:?} s: {}",
                run.variant.as_ref().map(|v| format!("[{v}]")).unwrap_or_default(),
                fl.name,
                fl.cc,
                fl.ecn_failed_at_s,
                fl.ecn_failure.as_deref().unwrap_or("?")
            )
        })
        .collect()
}

pub const SCENARIO: &str = r#"[scenario]
name = "tiny"
duration = "3s"
warmup = "1s"
[topology]
type = "dumbbell"
rate = "20Mbit"
rtt = "20ms"
aqm = { kind = "dualpi2" }
[[flows]]
name = "bulk"
type = "tcp"
cc = "prague"
[[flows]]
name = "probe"
type = "probe"
ecn = "ect1"

[[variants]]
name = "l4s"

[[variants]]
name = "classic"
set = { "flows.bulk.cc" = "cubic", "flows.probe.ecn" = "not-ect" }
"#;

pub const CAMPAIGN: &str = r#"[campaign]
name = "t"
scenario = "s.toml"
baseline = "classic"
seeds = 2

[sweep]
"topology.rate" = ["10Mbit", "20Mbit"]

[sample]
count = 2
seed = 3
params = { "topology.rtt" = { uniform = ["5ms", "40ms"] } }

[[groups]]
name = "quiet"

[[groups]]
name = "busy"
set = { "flows.bulk.start" = "0.5s" }
"#;

/// A fresh folder holding `s.toml` (the scenario) and `c.toml` (`campaign`); returns the
/// folder (removed when it drops, pass or fail) and the campaign file.
pub fn setup(tag: &str, campaign: &str) -> (tempfile::TempDir, PathBuf) {
    let guard = tempfile::Builder::new()
        .prefix(&format!("l4s-campaign-{tag}-"))
        .tempdir()
        .unwrap();
    let d = guard.path();
    std::fs::write(d.join("s.toml"), SCENARIO).unwrap();
    std::fs::write(d.join("c.toml"), campaign).unwrap();
    let f = d.join("c.toml");
    (guard, f)
}
