//! `l4s campaign` end to end: a campaign killed part-way (SIGKILL) and started again ends
//! with exactly the runs of an uninterrupted campaign, none done twice; Ctrl-C stops it
//! with exit status 130; `status` says where it stands.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn l4s() -> Command {
    Command::new(env!("CARGO_BIN_EXE_l4s"))
}

/// A fresh folder for one test, removed when the returned guard drops (pass or fail).
fn tmpdir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("l4s-cli-campaign-{tag}-"))
        .tempdir()
        .unwrap()
}

const SCENARIO: &str = r#"[scenario]
name = "tiny"
duration = "8s"
warmup = "1s"
[topology]
type = "dumbbell"
rate = "50Mbit"
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

const CAMPAIGN: &str = r#"[campaign]
name = "kill"
scenario = "s.toml"
baseline = "classic"
seeds = 5
[sweep]
"topology.rtt" = ["10ms", "20ms", "40ms", "80ms"]
"#;

fn setup(tag: &str) -> (tempfile::TempDir, PathBuf) {
    let d_guard = tmpdir(tag);
    let d = d_guard.path();
    std::fs::write(d.join("s.toml"), SCENARIO).unwrap();
    std::fs::write(d.join("c.toml"), CAMPAIGN).unwrap();
    let f = d.join("c.toml");
    (d_guard, f)
}

/// Every completed run of a store: key -> (summary.json, run-info.json).
fn runs(store: &Path) -> BTreeMap<String, (Vec<u8>, Vec<u8>)> {
    let mut out = BTreeMap::new();
    for shard in std::fs::read_dir(store.join("runs")).unwrap().flatten() {
        for r in std::fs::read_dir(shard.path()).unwrap().flatten() {
            let name = r.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let s = std::fs::read(r.path().join("summary.json")).unwrap();
            let i = std::fs::read(r.path().join("run-info.json")).unwrap();
            out.insert(name, (s, i));
        }
    }
    out
}

fn count_done(store: &Path) -> usize {
    std::fs::read_dir(store.join("runs"))
        .map(|rd| {
            rd.flatten()
                .flat_map(|s| std::fs::read_dir(s.path()).into_iter().flatten().flatten())
                .filter(|r| !r.file_name().to_string_lossy().starts_with('.'))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn a_campaign_killed_and_started_again_ends_with_the_runs_of_an_uninterrupted_one() {
    let (d_guard, f) = setup("kill");
    let d = d_guard.path();
    // The reference: the whole campaign at once.
    let whole = d.join("whole");
    let o = l4s()
        .args(["campaign", "run"])
        .arg(&f)
        .arg("--out")
        .arg(&whole)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let reference = runs(&whole);
    assert_eq!(reference.len(), 40);

    // The same campaign, killed with SIGKILL once some runs are done.
    let store = d.join("store");
    let mut child = l4s()
        .args(["campaign", "run", "--jobs", "1", "-q"])
        .arg(&f)
        .arg("--out")
        .arg(&store)
        .spawn()
        .unwrap();
    let t = Instant::now();
    while count_done(&store) < 8 && t.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = runs(&store);
    assert!(
        before.len() >= 8 && before.len() < 40,
        "{} runs before the kill",
        before.len()
    );
    let st = l4s().args(["campaign", "status"]).arg(&store).output().unwrap();
    let st = String::from_utf8_lossy(&st.stdout).into_owned();
    assert!(
        st.contains(&format!("{} done", before.len())) && st.contains("no process is running it"),
        "{st}"
    );

    let o = l4s()
        .args(["campaign", "run"])
        .arg(&f)
        .arg("--out")
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!("({} now, {} before)", 40 - before.len(), before.len())),
        "{out}"
    );
    let after = runs(&store);
    // Exactly the runs of the uninterrupted campaign, each summary byte for byte.
    assert_eq!(after.keys().collect::<Vec<_>>(), reference.keys().collect::<Vec<_>>());
    for (k, (s, _)) in &after {
        assert_eq!(s, &reference[k].0, "run {k} differs from the uninterrupted campaign's");
    }
    // None done twice: the runs finished before the kill are untouched.
    for (k, (_, info)) in &before {
        assert_eq!(&after[k].1, info, "run {k} was done again");
    }
    // No leftovers of the killed process.
    for shard in std::fs::read_dir(store.join("runs")).unwrap().flatten() {
        for r in std::fs::read_dir(shard.path()).unwrap().flatten() {
            assert!(
                !r.file_name().to_string_lossy().starts_with('.'),
                "left over: {:?}",
                r.path()
            );
        }
    }
}

#[test]
fn ctrl_c_stops_starting_runs_exits_130_and_a_restart_finishes() {
    let (d_guard, f) = setup("sigint");
    let d = d_guard.path();
    let store = d.join("store");
    let child = l4s()
        .args(["campaign", "run", "--jobs", "1"])
        .arg(&f)
        .arg("--out")
        .arg(&store)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while count_done(&store) < 3 && t.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(2));
    }
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("interrupted:") && err.contains("run the same command again"),
        "{err}"
    );
    let done = count_done(&store);
    assert!(done < 40, "{done}");
    assert!(
        store.join("index.parquet").is_file(),
        "the tables of what is done are written"
    );
    let o = l4s()
        .args(["campaign", "run"])
        .arg(&f)
        .arg("--out")
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(count_done(&store), 40);
}

#[test]
fn bad_campaigns_exit_2_naming_the_file_line_and_key() {
    let (d_guard, f) = setup("bad");
    let d = d_guard.path();
    std::fs::write(&f, CAMPAIGN.replace("\"topology.rtt\"", "\"topology.rtx\"")).unwrap();
    let o = l4s()
        .args(["campaign", "run"])
        .arg(&f)
        .arg("--out")
        .arg(d.join("store"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("{}:7: sweep.\"topology.rtx\":", f.display())) && err.contains("unknown field `rtx`"),
        "{err}"
    );
    assert!(!d.join("store").exists());
}

/// The campaign's own metrics that match no column of its runs: `campaign run` and
/// `campaign report` say so on the terminal (the page alone said it before), and exit 0,
/// the runs and tables being complete.
#[test]
fn a_campaigns_metrics_that_match_nothing_are_noted_on_the_terminal() {
    let (d_guard, f) = setup("metrics");
    let d = d_guard.path();
    let c = "[campaign]\nname = \"m\"\nscenario = \"s.toml\"\nbaseline = \"classic\"\nseeds = 1\nmetrics = [\"flows.nope.*\"]\n";
    std::fs::write(&f, c).unwrap();
    let store = d.join("store");
    let says =
        "note: No completed run has a metric matching flows.nope.*: the metrics are the columns of index.parquet.";
    let o = l4s()
        .args(["campaign", "run"])
        .arg(&f)
        .args(["--jobs", "1", "--out"])
        .arg(&store)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(count_done(&store), 2);
    assert!(err.lines().any(|l| l == says), "{err}");
    let o = l4s().args(["campaign", "report"]).arg(&store).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.lines().any(|l| l == says), "{err}");
    // A campaign whose metrics match: nothing to note.
    std::fs::write(&f, c.replace("flows.nope.*", "flow.bulk.*")).unwrap();
    let o = l4s()
        .args(["campaign", "run"])
        .arg(&f)
        .args(["--jobs", "1", "--update", "--out"])
        .arg(&store)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("note:"), "{err}");
}

/// `--scale 0` is refused as the flag's value, before the campaign file is read.
#[test]
fn a_scale_of_zero_is_refused_as_the_flags_value() {
    let (d_guard, f) = setup("scale");
    let d = d_guard.path();
    let o = l4s()
        .args(["campaign", "run", "--scale", "0"])
        .arg(&f)
        .arg("--out")
        .arg(d.join("store"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("invalid value '0' for '--scale <K>'"), "{err}");
    assert!(!err.contains("c.toml"), "{err}");
    assert!(!d.join("store").exists());
}
