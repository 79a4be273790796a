//! `l4s run --backend live` end to end (needs root; CI runs as root; outside CI a non-root
//! run skips with a message). Each test names its own run id, and a guard removes that
//! run's namespaces even when an assertion fails, so tests never see each other's.
//!
//! * SIGKILL mid-run leaves the namespaces behind; `l4s cleanup --run ID` removes them all.
//! * SIGINT mid-run cleans up by itself, exits 130 and writes no results.
//! * Cross-validation (issue 5 part 6): the same 30 s scenario run in the simulator and
//!   live agrees on the L4S probe's p99 one-way delay (±1 ms), the classic probe's median
//!   (±25 %), the bottleneck utilisation (±5 %) and the verdict.
//! * Timing bands are asserted on a host that kept the testbed's timing. Every live run
//!   carries its self-check (`summary.testbed`: how late the testbed's own elements handed
//!   packets on); a run that misses a band on a host that held the testbed back is measured
//!   again, and if the host held it back in every run (a virtual machine whose hypervisor
//!   takes its CPU in millisecond slices, as CI's did once), only what host lateness does
//!   not change is asserted, and the test says so. A run that misses on a quiet host twice
//!   fails ([`measure_live`]).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn l4s() -> Command {
    Command::new(env!("CARGO_BIN_EXE_l4s"))
}

fn is_root() -> bool {
    if l4s_live::run::is_root() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the live tests need root (CI runs as root)"
    );
    eprintln!("skipped: the live tests need root");
    false
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// A fresh folder for one test, removed when the returned guard drops (pass or fail).
fn tmpdir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("l4s-cli-live-{tag}-"))
        .tempdir()
        .unwrap()
}

/// A run id unique to this test process and tag.
fn run_id(tag: u32) -> String {
    format!(
        "{:08x}",
        (std::process::id().wrapping_mul(2_654_435_761)) ^ tag.wrapping_mul(0x9e37_79b9)
    )
}

fn namespaces(id: &str) -> Vec<String> {
    let prefix = l4s_fwd::netns::RunId::parse(id).unwrap().prefix();
    let all = l4s_fwd::netns::list_netns().unwrap();
    all.into_iter().filter(|n| n.starts_with(&prefix)).collect()
}

/// Live runs of this file run one at a time: the cross-validation measures delays to a
/// fraction of a millisecond and must not share the two cores with another testbed.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// A live measurement against its bands, given the run's self-check (how late the
/// testbed's own elements handed packets on; `summary.testbed`).
enum Measured<T> {
    /// Within the bands.
    Within(T),
    /// No run was within the bands, and the host held the testbed back: the tails describe
    /// the host as much as the network, so only what that does not change can be asserted.
    Disrupted(T, l4s_metrics::summary::TestbedCheck),
}

/// Runs `attempt` (one live run, its figures and its summary) until `miss` finds nothing
/// out of band, at most three times. A run that misses on a host that held the testbed
/// back (the self-check's `disrupted`) is measured again; a run that misses on a quiet
/// host is measured once more too (a hiccup below the self-check's threshold), but a
/// second such miss fails the test. Every miss is printed with the self-check.
fn measure_live<T>(
    what: &str,
    mut attempt: impl FnMut(u32) -> (T, l4s_metrics::summary::Summary),
    miss: impl Fn(&T) -> Option<String>,
) -> Measured<T> {
    let mut quiet_misses = 0;
    let mut n = 0;
    loop {
        let (t, summary) = attempt(n);
        let check = summary
            .testbed
            .clone()
            .expect("a live summary carries the testbed self-check");
        assert!(check.packets > 0, "{what}: the self-check timed no packet: {check:?}");
        let Some(why) = miss(&t) else {
            return Measured::Within(t);
        };
        println!("{what}: live run {n} missed a band ({why}); testbed self-check {check:?}");
        if !check.disrupted {
            quiet_misses += 1;
            assert!(
                quiet_misses < 2,
                "{what}: missed on a quiet host twice: {why}; self-check {check:?}"
            );
        }
        n += 1;
        if n == 3 {
            if !check.disrupted {
                panic!("{what}: missed on a quiet host: {why}; self-check {check:?}");
            }
            println!("{what}: the host held the testbed back in every run; asserting what that does not change");
            return Measured::Disrupted(t, check);
        }
    }
}

/// The simulator's run of `scenario` into `d/sim`, and its summary.
fn run_sim(scenario: &Path, d: &Path) -> l4s_metrics::summary::Summary {
    let o = l4s()
        .arg("run")
        .arg(scenario)
        .args(["-q", "--out"])
        .arg(d.join("sim"))
        .output()
        .unwrap();
    assert!(o.status.success(), "sim: {}", String::from_utf8_lossy(&o.stderr));
    summary(&d.join("sim"))
}

/// One live run of `scenario` (`tag`: the test's own run id; `attempt`: which measurement)
/// into `d/live{attempt}`, checked to exit cleanly and leave no namespace behind: its
/// summary, run id and results directory.
fn run_live(scenario: &Path, d: &Path, tag: u32, attempt: u32) -> (l4s_metrics::summary::Summary, String, PathBuf) {
    let id = run_id(tag + 100 * attempt);
    let _guard = Cleanup(id.clone());
    let out = d.join(format!("live{attempt}"));
    let o = l4s()
        .arg("run")
        .arg(scenario)
        .args(["-q", "--backend", "live", "--run-id", &id, "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "live: {}", String::from_utf8_lossy(&o.stderr));
    assert!(namespaces(&id).is_empty());
    (summary(&out), id, out)
}

/// Removes the run's namespaces on drop (also when the test fails).
struct Cleanup(String);
impl Drop for Cleanup {
    fn drop(&mut self) {
        // Forced: a run a failed test left going is this test's own.
        let _ = l4s().args(["cleanup", "--force", "--run", &self.0]).output();
    }
}

const XVAL: &str = r#"# Cross-validation scenario (issue 5 part 6).
[scenario]
name = "xval"
description = "UDP Prague + CUBIC (classic ECN) through 50 Mbit/s DualPI2, 20 ms base RTT"
duration = "30s"
warmup = "10s"
seed = 1

[topology]
type = "dumbbell"
rate = "50Mbit"
rtt = "20ms"

[topology.aqm]
kind = "dualpi2"

[[flows]]
name = "prague"
type = "udp-prague"

[[flows]]
name = "cubic"
type = "tcp"
cc = "cubic"
ecn = "classic"
# The defaults, written: kernel TCP takes the one and says it cannot take the other.
sender = { min_rto = "200ms", pacing = true }

[[flows]]
name = "probe-l4s"
type = "probe"
pps = 64
size = "200B"
ecn = "ect1"

[[flows]]
name = "probe-classic"
type = "probe"
pps = 64
size = "200B"
ecn = "not-ect"
"#;

/// Start a long live run and wait until its testbed is up and traffic flows.
fn start_long_run(d: &Path, id: &str) -> Child {
    let f = d.join("long.toml");
    std::fs::write(&f, XVAL.replace("duration = \"30s\"", "duration = \"120s\"")).unwrap();
    let child = l4s()
        .args(["run"])
        .arg(&f)
        .args(["--backend", "live", "--run-id", id, "--out"])
        .arg(d.join("out"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // dumbbell with 4 flows: 2 + 8 host/router nodes and 5 wire namespaces.
    let t0 = Instant::now();
    while namespaces(id).len() < 15 {
        assert!(t0.elapsed() < Duration::from_secs(30), "the testbed did not come up");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    child
}

fn wait_exit(c: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Some(s) = c.try_wait().unwrap() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn leftovers(d: &Path) -> Vec<String> {
    std::fs::read_dir(d)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".out") || n == "out")
        .collect()
}

#[test]
fn live_run_killed_then_cleanup_leaves_nothing() {
    if !is_root() {
        return;
    }
    let _one = serial();
    let d_guard = tmpdir("kill");
    let d = d_guard.path();
    let id = run_id(1);
    let _guard = Cleanup(id.clone());
    let mut c = start_long_run(d, &id);
    // While the run goes on, cleanup keeps it (its process holds the run's lock).
    let o = l4s().args(["cleanup", "--run", &id]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains(&format!("kept run {id} (15 namespaces")) && out.contains("--force"),
        "{out}"
    );
    assert!(!out.contains("removed"), "{out}");
    assert_eq!(namespaces(&id).len(), 15);
    assert!(c.try_wait().unwrap().is_none(), "the run goes on");
    c.kill().unwrap(); // SIGKILL: no chance to clean up
    c.wait().unwrap();
    let left = namespaces(&id);
    assert_eq!(left.len(), 15, "a killed run leaves its namespaces: {left:?}");
    let o = l4s().args(["cleanup", "--run", &id]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out} {}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(out.matches("removed namespace").count(), 15, "{out}");
    assert!(namespaces(&id).is_empty(), "left after cleanup: {:?}", namespaces(&id));
    assert!(!d.join("out").exists(), "results of a killed run");
    let _ = std::fs::remove_dir_all(d);
    // A second cleanup finds nothing; a bad id is refused.
    let o = l4s().args(["cleanup", "--run", &id]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("nothing to remove"));
    let o = l4s().args(["cleanup", "--run", "../etc"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("8 lowercase hex digits"));
}

#[test]
fn live_run_interrupted_cleans_up_and_writes_no_results() {
    if !is_root() {
        return;
    }
    let _one = serial();
    let d_guard = tmpdir("sigint");
    let d = d_guard.path();
    let id = run_id(2);
    let _guard = Cleanup(id.clone());
    let mut c = start_long_run(d, &id);
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc_kill(c.id() as i32, 2) }, 0);
    let st = wait_exit(&mut c, Duration::from_secs(20)).expect("the run did not stop on SIGINT");
    assert_eq!(st.code(), Some(130), "exit status after SIGINT");
    assert!(namespaces(&id).is_empty(), "left behind: {:?}", namespaces(&id));
    assert!(leftovers(d).is_empty(), "half-written results: {:?}", leftovers(d));
    let _ = std::fs::remove_dir_all(d);
}

fn summary(dir: &Path) -> l4s_metrics::summary::Summary {
    l4s_metrics::summary::Summary::from_json(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn live_and_sim_agree_on_the_cross_validation_scenario() {
    if !is_root() {
        return;
    }
    let _one = serial();
    let d_guard = tmpdir("xval");
    let d = d_guard.path();
    let f = d.join("xval.toml");
    std::fs::write(&f, XVAL).unwrap();
    let s = run_sim(&f, d);
    assert!(s.testbed.is_none(), "the simulator has no testbed self-check");
    let p = |x: &l4s_metrics::summary::Summary, n: &str| x.flows.iter().find(|f| f.name == n).unwrap().clone();
    let measured = measure_live(
        "cross-validation",
        |attempt| {
            let (l, id, out) = run_live(&f, d, 3, attempt);
            ((l.clone(), id, out), l)
        },
        |(l, _, _)| {
            let dl4s = (p(l, "probe-l4s").owd_ms.p99 - p(&s, "probe-l4s").owd_ms.p99).abs();
            let dcl = (p(l, "probe-classic").owd_ms.p50 - p(&s, "probe-classic").owd_ms.p50).abs()
                / p(&s, "probe-classic").owd_ms.p50;
            let du = (l.queues[0].utilization - s.queues[0].utilization).abs() / s.queues[0].utilization;
            let dc = (p(l, "cubic").owd_ms.p50 - p(&s, "cubic").owd_ms.p50).abs() / p(&s, "cubic").owd_ms.p50;
            (dl4s > 1.0 || dcl > 0.25 || du > 0.05 || dc > 0.25).then(|| {
                format!(
                    "L4S probe p99 off by {dl4s:.3} ms, classic probe p50 by {:.1} %, utilisation by {:.1} %, cubic p50 by {:.1} %",
                    dcl * 100.0,
                    du * 100.0,
                    dc * 100.0
                )
            })
        },
    );
    let ((l, id, live_dir), disrupted) = match measured {
        Measured::Within(x) => (x, None),
        Measured::Disrupted(x, c) => (x, Some(c)),
    };
    assert_eq!(
        (s.scenario.backend.as_str(), l.scenario.backend.as_str()),
        ("sim", "live")
    );
    let flow = p;
    let (sl, ll) = (flow(&s, "probe-l4s"), flow(&l, "probe-l4s"));
    let (sc, lc) = (flow(&s, "probe-classic"), flow(&l, "probe-classic"));
    let (su, lu) = (s.queues[0].utilization, l.queues[0].utilization);
    let vs = l4s_report::verdict(&s, None);
    let vl = l4s_report::verdict(&l, None);
    let report = format!(
        "L4S probe p99 OWD sim {:.3} live {:.3} ms; classic probe p50 sim {:.3} live {:.3} ms; utilisation sim {su:.4} live {lu:.4}; \
         C sojourn mean sim {:.2} live {:.2} ms; L p99 sim {:.3} live {:.3} ms; throughput prague sim {:.2} live {:.2} Mbit/s, cubic sim {:.2} live {:.2} Mbit/s; \
         verdict sim {:?} {:?} / live {:?} {:?}; self-check {:?}",
        sl.owd_ms.p99,
        ll.owd_ms.p99,
        sc.owd_ms.p50,
        lc.owd_ms.p50,
        s.queues[0].subqueues["C"].sojourn_ms.mean,
        l.queues[0].subqueues["C"].sojourn_ms.mean,
        s.queues[0].subqueues["L"].sojourn_ms.p99,
        l.queues[0].subqueues["L"].sojourn_ms.p99,
        flow(&s, "prague").throughput_bps / 1e6,
        flow(&l, "prague").throughput_bps / 1e6,
        flow(&s, "cubic").throughput_bps / 1e6,
        flow(&l, "cubic").throughput_bps / 1e6,
        vs.level,
        vs.headline,
        vl.level,
        vl.headline,
        l.testbed,
    );
    println!("cross-validation: {report}");
    assert!(ll.owd_ms.count > 1000 && sl.owd_ms.count > 1000, "{report}");
    // Host lateness cannot fool ECN validation: UDP Prague stays L4S-capable.
    let lp = flow(&l, "prague");
    assert_eq!(
        (lp.class.as_str(), lp.ecn_validation.as_str()),
        ("L4S", "capable"),
        "{report}"
    );
    // The run-info says which backend ran, and the live part names the testbed.
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(live_dir.join("run-info.json")).unwrap()).unwrap();
    assert_eq!(info["backend"], "live");
    assert_eq!(info["live"]["run_id"], id.as_str());
    assert_eq!(info["live"]["namespaces"], 15);
    assert_eq!(
        info["live"]["untaken_settings"],
        serde_json::json!([r#"flow "cubic": sender.min_rto = "200ms""#])
    );
    assert!(live_dir.join("report.html").exists() && live_dir.join("snapshots-queues.csv").exists());
    if let Some(c) = disrupted {
        // The host's lateness is in every delay and every control loop (a hypervisor that
        // takes half the CPU time leaves the link a third used): no figure of the network
        // can be compared, but the verdict must say why.
        assert!(c.disrupted && vl.has("testbed-timing"), "{report}");
        println!("cross-validation: not compared (the host held the testbed back in every run): {report}");
        let _ = std::fs::remove_dir_all(d);
        return;
    }
    // The same finding (the headline before its numbers), e.g. "L4S working".
    let finding = |h: &str| h.split(':').next().unwrap_or_default().to_string();
    assert_eq!(finding(&vs.headline), finding(&vl.headline), "verdict: {report}");
    assert!((ll.owd_ms.p99 - sl.owd_ms.p99).abs() <= 1.0, "L4S probe p99: {report}");
    assert!(
        (lc.owd_ms.p50 - sc.owd_ms.p50).abs() <= 0.25 * sc.owd_ms.p50,
        "classic probe median: {report}"
    );
    assert!((lu - su).abs() <= 0.05 * su, "utilisation: {report}");
    // Kernel CUBIC's own packets (measured on the wire by the packet taps) sit in the same
    // classic queue as the classic probe.
    let (st, lt) = (flow(&s, "cubic"), flow(&l, "cubic"));
    println!(
        "cross-validation: cubic OWD p50 sim {:.3} live {:.3} ms, CE fraction sim {:.5} live {:.5}",
        st.owd_ms.p50, lt.owd_ms.p50, st.ce_fraction, lt.ce_fraction
    );
    assert!(lt.owd_ms.count > 1000, "{report}");
    assert!(
        (lt.owd_ms.p50 - st.owd_ms.p50).abs() <= 0.25 * st.owd_ms.p50,
        "cubic median OWD sim {} live {}",
        st.owd_ms.p50,
        lt.owd_ms.p50
    );
    // A run within the bands can still carry the self-check's warning, which alone raises
    // the level.
    if !vl.has("testbed-timing") {
        assert_eq!(vs.level, vl.level, "verdict: {report}");
    }
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn reflect_and_ecn_check_commands_on_loopback() {
    // No root needed: loopback only.
    let port = {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        s.local_addr().unwrap().port()
    };
    let mut refl = l4s()
        .args(["reflect", "--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let o = l4s()
        .args([
            "ecn-check",
            &format!("127.0.0.1:{port}"),
            "--probes",
            "3",
            "--wait",
            "500ms",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("12 of 12 probes answered"), "{out}");
    assert!(out.contains("L4S: OK"), "{out}");
    // SIGTERM stops the reflector cleanly with its counters.
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc_kill(refl.id() as i32, 15) }, 0);
    let st = wait_exit(&mut refl, Duration::from_secs(5)).expect("reflector did not stop");
    assert!(st.success());
    let mut text = String::new();
    std::io::Read::read_to_string(refl.stdout.as_mut().unwrap(), &mut text).unwrap();
    assert!(text.contains("stopped: 12 replies, 0 malformed"), "{text}");
    // Nobody there: exit 1 and a message that says what to check.
    let o = l4s()
        .args([
            "ecn-check",
            &format!("127.0.0.1:{port}"),
            "--probes",
            "2",
            "--wait",
            "200ms",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let all = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(all.contains("l4s reflect"), "{all}");
    // Bad input: exit 2.
    for args in [
        vec!["ecn-check", "no-such-host.invalid"],
        vec!["ecn-check", "127.0.0.1", "--size", "10"],
        vec!["reflect", "--listen", "not-an-address"],
        vec!["reflect", "--rate", "0"],
    ] {
        let o = l4s().args(&args).output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn live_refuses_what_it_cannot_run_before_building_anything() {
    if !is_root() {
        return;
    }
    let d_guard = tmpdir("refuse");
    let d = d_guard.path();
    let f = d.join("p.toml");
    // TCP Prague: this kernel offers reno, bbr and cubic only.
    std::fs::write(
        &f,
        XVAL.replace("type = \"udp-prague\"", "type = \"tcp\"\ncc = \"prague\""),
    )
    .unwrap();
    let o = l4s()
        .arg("run")
        .arg(&f)
        .args(["--backend", "live", "--out"])
        .arg(d.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let avail = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap();
    if !avail.split_whitespace().any(|c| c == "prague") {
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("flow \"prague\"") && err.contains("\"prague\""), "{err}");
        assert!(err.contains("cubic"), "names the available ones: {err}");
    }
    // Options the live backend cannot honour.
    let o = l4s()
        .arg("run")
        .arg(&f)
        .args(["--backend", "live", "--pcap"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--pcap is not available with --backend live"));
    // Without root: the capability and the fix are named (setpriv drops to nobody).
    if Command::new("setpriv").arg("--version").output().is_ok() {
        let o = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_l4s"))
            .arg("run")
            .arg(&f)
            .args(["--backend", "live", "--out", "/tmp/never-written"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("needs root") && err.contains("CAP_NET_ADMIN") && err.contains("sudo"),
            "{err}"
        );
        let o = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_l4s"))
            .arg("cleanup")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&o.stderr).contains("needs root"));
    }
    assert!(leftovers(d).is_empty(), "{:?}", leftovers(d));
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn live_packets_parquet_joins_sends_queue_records_and_arrivals() {
    use arrow_array::Array;
    if !is_root() {
        return;
    }
    let _one = serial();
    let d_guard = tmpdir("packets");
    let d = d_guard.path();
    let f = d.join("p.toml");
    let text = XVAL
        .replace("duration = \"30s\"", "duration = \"5s\"")
        .replace("warmup = \"10s\"", "warmup = \"0s\"");
    std::fs::write(&f, text).unwrap();
    let id = run_id(4);
    let _guard = Cleanup(id.clone());
    let out = d.join("res");
    let o = l4s()
        .arg("run")
        .arg(&f)
        .args(["-q", "--packets", "--backend", "live", "--run-id", &id, "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let file = std::fs::File::open(out.join("packets.parquet")).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    /// Per flow name: rows, lost rows, rows marked by the bottleneck, CE arrivals (and those
    /// arriving by the end of the run), arrivals earlier than the propagation delay, rows
    /// that crossed a queue.
    #[derive(Default, Debug)]
    struct Count {
        rows: u64,
        /// Rows of packets sent by the end of the run (5 s), and the lost ones among them.
        sent_in_window: u64,
        lost_in_window: u64,
        lost: u64,
        marked: u64,
        ce_in: u64,
        ce_in_window: u64,
        after_end: u64,
        bad_delay: u64,
        /// (seq, sent, arrival) of the first rows with a bad delay.
        bad_examples: Vec<(u64, u64, u64)>,
        hopped: u64,
    }
    let mut by_flow: std::collections::BTreeMap<String, Count> = Default::default();
    for batch in reader {
        let b = batch.unwrap();
        let l = b.column_by_name("lost").unwrap();
        let l = l.as_any().downcast_ref::<arrow_array::BooleanArray>().unwrap();
        let dict = |name: &str| {
            let c = b.column_by_name(name).unwrap().clone();
            let d = arrow_array::cast::as_dictionary_array::<arrow_array::types::Int32Type>(c.as_ref()).clone();
            let values = d
                .values()
                .as_any()
                .downcast_ref::<arrow_array::StringArray>()
                .unwrap()
                .clone();
            d.keys()
                .iter()
                .map(|k| k.map(|k| values.value(k as usize).to_string()))
                .collect::<Vec<_>>()
        };
        let flow = dict("flow");
        let dec = dict("hop0_decision");
        let q = dict("hop0_queue");
        assert!(q.iter().flatten().all(|n| n == "bottleneck"), "{q:?}");
        let ecn = dict("ecn_received");
        let sent = b.column_by_name("sent_ns").unwrap();
        let sent = sent.as_any().downcast_ref::<arrow_array::UInt64Array>().unwrap();
        let arr = b.column_by_name("arrival_ns").unwrap();
        let arr = arr.as_any().downcast_ref::<arrow_array::UInt64Array>().unwrap();
        let seqs = b.column_by_name("seq").unwrap();
        let seqs = seqs.as_any().downcast_ref::<arrow_array::UInt64Array>().unwrap();
        for i in 0..b.num_rows() {
            let c = by_flow.entry(flow[i].clone().unwrap()).or_default();
            c.rows += 1;
            c.lost += l.value(i) as u64;
            if sent.value(i) <= 5_000_000_000 {
                c.sent_in_window += 1;
                c.lost_in_window += l.value(i) as u64;
            }
            c.marked += (dec[i].as_deref() == Some("mark")) as u64;
            c.hopped += dec[i].is_some() as u64;
            let ce = ecn[i].as_deref() == Some("ce");
            c.ce_in += ce as u64;
            // Every arrival is at least the 10 ms one-way propagation delay after its send.
            if arr.is_valid(i) && arr.value(i) < sent.value(i) + 10_000_000 {
                c.bad_delay += 1;
                if c.bad_examples.len() < 5 {
                    c.bad_examples.push((seqs.value(i), sent.value(i), arr.value(i)));
                }
            }
            if arr.is_valid(i) && arr.value(i) > 5_000_000_000 {
                c.after_end += 1;
            } else if ce {
                c.ce_in_window += 1;
            }
        }
    }
    let s = summary(&out);
    println!("packets.parquet by flow: {by_flow:?}");
    // run-info.json counts the rows, and the arrivals too soon after any send to join.
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run-info.json")).unwrap()).unwrap();
    let tl = &info["live"]["timeline"];
    println!("run-info timeline: {tl}");
    assert_eq!(tl["rows"].as_u64(), Some(by_flow.values().map(|c| c.rows).sum::<u64>()));
    assert!(tl["ignored_arrivals"].as_u64().is_some());
    // Packets neither arrived nor lost at the end are left out (a host that stalls near
    // the end leaves some): the summary counted their sends.
    let left_out = tl["in_flight_at_end"].as_u64().unwrap();
    assert!(left_out <= 100, "{left_out} packets in flight at the end");
    for f in &s.flows {
        let c = by_flow
            .get(&f.name)
            .unwrap_or_else(|| panic!("no rows for flow {}", f.name));
        let (sent, lost_s, ce) = (f.sent_packets, f.lost_packets, f.ce_packets);
        println!(
            "{}: {} rows ({} crossed the queue), {} lost, {} marked, {} CE ({} by the end); summary: {sent} sent, {lost_s} lost, {ce} CE",
            f.name, c.rows, c.hopped, c.lost, c.marked, c.ce_in, c.ce_in_window
        );
        // Every packet sent in the run (kernel TCP: every data segment the sender's tap saw,
        // with retransmissions) has its row; rows also cover what kernel TCP sends after the
        // end, while the receivers drain.
        assert!(
            c.sent_in_window + left_out >= sent && c.sent_in_window <= sent + 10,
            "{}: {} rows sent by the end for {sent} sent",
            f.name,
            c.sent_in_window
        );
        // Every row was seen in the bottleneck's records, but those lost before it (none here).
        assert!(
            c.hopped + 5 >= c.rows,
            "{}: {} of {} rows crossed the queue",
            f.name,
            c.hopped,
            c.rows
        );
        assert_eq!(c.bad_delay, 0, "{}: {:?}", f.name, c.bad_examples);
        assert!(
            c.lost_in_window <= lost_s + 5 && lost_s <= c.lost_in_window + left_out + 5,
            "{}: lost rows {} vs {lost_s}",
            f.name,
            c.lost_in_window
        );
        // Every CE arrival was marked by the bottleneck (no other marker).
        assert_eq!(c.marked, c.ce_in, "{}: marked rows vs CE arrivals", f.name);
        // The summary counts CE arrivals within the window; rows also cover packets that
        // were in flight at the end and arrived during the receivers' grace period.
        assert_eq!(
            c.ce_in_window, ce,
            "{}: CE rows arriving by the end vs the summary",
            f.name
        );
    }
    // The ECN-capable flows were marked: UDP Prague in L, CUBIC (classic ECN) in C.
    for name in ["prague", "cubic"] {
        assert!(by_flow[name].marked > 0, "{name}: {:?}", by_flow[name]);
    }
    // The queue snapshots carry the backlog in bytes as well as packets (frames of 54 to
    // 1514 bytes), and CUBIC keeps a standing queue in C.
    let csv = std::fs::read_to_string(out.join("snapshots-queues.csv")).unwrap();
    let (mut rows, mut busy) = (0, 0);
    for line in csv.lines().skip(1) {
        let cols: Vec<&str> = line.split(',').collect();
        let packets: u64 = cols[2].parse().unwrap();
        let bytes: u64 = cols[3].parse().unwrap_or_else(|_| panic!("backlog_bytes in {line:?}"));
        assert!(packets * 54 <= bytes && bytes <= packets * 1514, "{line}");
        if cols[1] == "bottleneck" {
            rows += 1;
            busy += (packets > 0) as u32;
        }
    }
    // One row per 100 ms interval of the 5 s run, even when the host held the run back
    // (late rows are written when it catches up).
    assert!(
        rows == 50 && busy >= rows / 2,
        "{rows} snapshots, {busy} with a backlog"
    );
    let _ = std::fs::remove_dir_all(d);
}

const MEDIA: &str = r#"# A 60 fps L4S cloud game (SCReAM v2, ECT(1)) alone on a 30 Mbit/s DualPI2 dumbbell.
[scenario]
name = "media-live"
duration = "12s"
warmup = "2s"
seed = 1

[topology]
type = "dumbbell"
rate = "30Mbit"
rtt = "20ms"
aqm = { kind = "dualpi2" }

[[flows]]
name = "game"
type = "media"
profile = "cloud-gaming"
cc = "scream"
ecn = "ect1"
"#;

/// A media flow live against the same scenario in the simulator: received frame rate,
/// frame delay, the L queue and ECN validation.
#[test]
fn live_media_flow_delivers_frames_like_the_simulator() {
    if !is_root() {
        return;
    }
    let _one = serial();
    let d_guard = tmpdir("media");
    let d = d_guard.path();
    let f = d.join("media.toml");
    std::fs::write(&f, MEDIA).unwrap();
    let s = run_sim(&f, d);
    let figures = |l: &l4s_metrics::summary::Summary| {
        let (sf, lf) = (&s.flows[0], &l.flows[0]);
        let (sm, lm) = (sf.media.as_ref().unwrap(), lf.media.as_ref().unwrap());
        format!(
            "received fps sim {:.2} live {:.2}; frames sent/complete/late/incomplete sim {}/{}/{}/{} live {}/{}/{}/{}; \
             frame delay p50 sim {:.2} live {:.2} ms, p99 sim {:.2} live {:.2} ms; stall live {:.3} s; \
             target mean sim {:.2} live {:.2} Mbit/s; throughput sim {:.2} live {:.2} Mbit/s; \
             L sojourn p99 sim {:.3} live {:.3} ms; CE fraction sim {:.4} live {:.4}; ecn sim {} live {}; feedback reports live {}; \
             self-check {:?}",
            sm.received_fps,
            lm.received_fps,
            sm.frames_sent,
            sm.frames_complete,
            sm.frames_late,
            sm.frames_incomplete,
            lm.frames_sent,
            lm.frames_complete,
            lm.frames_late,
            lm.frames_incomplete,
            sm.frame_delay_ms.p50,
            lm.frame_delay_ms.p50,
            sm.frame_delay_ms.p99,
            lm.frame_delay_ms.p99,
            lm.stall_time_s,
            sm.target_bitrate_mean_bps / 1e6,
            lm.target_bitrate_mean_bps / 1e6,
            sf.throughput_bps / 1e6,
            lf.throughput_bps / 1e6,
            s.queues[0].subqueues["L"].sojourn_ms.p99,
            l.queues[0].subqueues["L"].sojourn_ms.p99,
            sf.ce_fraction,
            lf.ce_fraction,
            sf.ecn_validation,
            lf.ecn_validation,
            lm.feedback_reports,
            l.testbed,
        )
    };
    // The timing bands (a quiet host): 60 fps received; frame delay p99 under one frame
    // interval (16.7 ms) + the 10 ms one-way base delay + 5 ms; the median within 3 ms of the
    // simulator's; the L queue's p99 within 2 ms of the simulator's (which is 4.2 ms here:
    // SCReAM's frame bursts against the 1 ms marking step; live adds scheduling noise,
    // measured 2.1 to 5.2 ms).
    let timing = |l: &l4s_metrics::summary::Summary| {
        let (sm, lm) = (s.flows[0].media.as_ref().unwrap(), l.flows[0].media.as_ref().unwrap());
        (lm.received_fps - 60.0).abs() <= 1.5
            && lm.frame_delay_ms.p99 < 16.7 + 10.0 + 5.0
            && lm.frames_incomplete <= 2
            && lm.stall_time_s < 0.2
            && l.queues[0].subqueues["L"].sojourn_ms.p99 <= s.queues[0].subqueues["L"].sojourn_ms.p99 + 2.0
            && (lm.frame_delay_ms.p50 - sm.frame_delay_ms.p50).abs() <= 3.0
    };
    let measured = measure_live(
        "media",
        |attempt| {
            let (l, _, out) = run_live(&f, d, 5, attempt);
            ((l.clone(), out), l)
        },
        |(l, _)| (!timing(l)).then(|| figures(l)),
    );
    let ((l, out), disrupted) = match measured {
        Measured::Within(x) => (x, None),
        Measured::Disrupted(x, c) => (x, Some(c)),
    };
    let report = figures(&l);
    println!("media live vs sim: {report}");
    let (lf, lm) = (&l.flows[0], l.flows[0].media.as_ref().unwrap());
    assert_eq!(lf.class, "L4S", "{report}");
    assert_eq!(lf.ecn_validation, "capable", "{report}");
    assert!(lm.feedback_reports > 0 && lm.feedback_malformed == 0, "{report}");
    // No frame arrives sooner than the 10 ms one-way base delay, on any host.
    assert!(lm.frame_delay_ms.p50 >= 10.0, "{report}");
    if let Some(c) = &disrupted {
        // Late hand-offs are in every frame's delay and in the rate controller's loop: the
        // verdict must say so; the timing is not compared.
        assert!(l4s_report::verdict(&l, None).has("testbed-timing"), "{report}; {c:?}");
        println!("media: timing not compared (the host held the testbed back in every run)");
    } else {
        assert!(lm.feedback_reports > 500, "{report}");
        assert!(timing(&l), "{report}");
    }
    let snaps = std::fs::read_to_string(out.join("snapshots-flows.csv")).unwrap();
    let header: Vec<&str> = snaps.lines().next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let frames: u64 = snaps
        .lines()
        .skip(1)
        .filter_map(|r| r.split(',').nth(col("frames")).and_then(|v| v.parse::<u64>().ok()))
        .sum();
    // Every frame of the run (warm-up included) is in the time series.
    assert!(
        frames >= lm.frames_complete + 100,
        "{frames} frames in the snapshots; {report}"
    );
    let _ = std::fs::remove_dir_all(d);
}

const APPS: &str = r#"# Request/response and a bulk transfer over an idle 100 Mbit/s FIFO dumbbell, 20 ms RTT.
[scenario]
name = "apps-live"
duration = "6s"
warmup = "0s"
seed = 1

[topology]
type = "dumbbell"
rate = "100Mbit"
rtt = "20ms"
aqm = { kind = "fifo", limit = 2000 }

[[flows]]
name = "rr-persistent"
type = "request-response"
app = { response = "1000B", think = "100ms", count = 20 }

[[flows]]
name = "rr-new"
type = "request-response"
app = { response = "1000B", persistent = false, think = "100ms", count = 20 }

[[flows]]
name = "bulk"
type = "bulk"
bytes = "25MB"
start = "3s"
"#;

/// Application flows live: a small response over a persistent connection takes one RTT,
/// over a new connection two (SYN/SYN-ACK, then request/response); a bulk transfer takes
/// about bytes / rate.
#[test]
fn live_app_flows_complete_in_round_trips_and_bytes_over_rate() {
    if !is_root() {
        return;
    }
    let _one = serial();
    let d_guard = tmpdir("apps");
    let d = d_guard.path();
    let f = d.join("apps.toml");
    std::fs::write(&f, APPS).unwrap();
    let c = |l: &l4s_metrics::summary::Summary, flow: &str, kind: &str| {
        l.flows
            .iter()
            .find(|f| f.name == flow)
            .unwrap()
            .app
            .as_ref()
            .unwrap()
            .completions
            .get(kind)
            .cloned()
            // None completed in the window (a transfer a held-back host slowed past the end).
            .unwrap_or(l4s_metrics::summary::CompletionSummary {
                count: 0,
                time_ms: Default::default(),
                bytes: 0,
                goodput_bps: 0.0,
            })
    };
    let figures = |l: &l4s_metrics::summary::Summary| {
        let (p, n, b) = (
            c(l, "rr-persistent", "response"),
            c(l, "rr-new", "response"),
            c(l, "bulk", "transfer"),
        );
        let report = format!(
            "persistent: {} completions p50 {:.2} max {:.2} ms; new connection: {} p50 {:.2} max {:.2} ms; \
             bulk 25 MB: {} transfer in {:.1} ms ({:.2} Mbit/s goodput)",
            p.count,
            p.time_ms.p50,
            p.time_ms.max,
            n.count,
            n.time_ms.p50,
            n.time_ms.max,
            b.count,
            b.time_ms.max,
            b.goodput_bps / 1e6
        );
        (p, n, b, report)
    };
    let measured = measure_live(
        "apps",
        |attempt| {
            let (l, _, out) = run_live(&f, d, 6, attempt);
            ((l.clone(), out), l)
        },
        |(l, _)| {
            let (p, n, b, report) = figures(l);
            // 1 RTT (20 ms) plus serialisation of 1 kB and scheduling: 20 to 23 ms; 2 RTT
            // with a new connection; 25 MB at 100 Mbit/s is 2.0 s of payload, and slow
            // start (≈ 0.1 s) and header overhead (≈ 3 %) come on top.
            let within = (p.count, n.count, b.count) == (20, 20, 1)
                && (20.0..=23.0).contains(&p.time_ms.p50)
                && (40.0..=44.0).contains(&n.time_ms.p50)
                && b.time_ms.max > 2000.0
                && b.time_ms.max < 2600.0;
            (!within).then_some(report)
        },
    );
    let ((l, out), disrupted) = match measured {
        Measured::Within(x) => (x, None),
        Measured::Disrupted(x, c) => (x, Some(c)),
    };
    let (p, n, b, report) = figures(&l);
    println!("apps live: {report}; self-check {:?}", l.testbed);
    // Every request is answered on any host; the 25 MB transfer (from 3 s of a 6 s run)
    // may not finish in time on a host that held the testbed back in every run.
    assert_eq!((p.count, n.count), (20, 20), "{report}");
    assert!(b.count == 1 || (disrupted.is_some() && b.count == 0), "{report}");
    // The round trips cannot be fewer on any host, and the transfer cannot beat the rate.
    assert!(
        p.time_ms.p50 >= 20.0 && n.time_ms.p50 >= 40.0 && (b.count == 0 || b.time_ms.max > 2000.0),
        "{report}"
    );
    if let Some(c) = &disrupted {
        // Late hand-offs add to every round trip and stall the transfer: the verdict must
        // say so; the times are not compared.
        assert!(l4s_report::verdict(&l, None).has("testbed-timing"), "{report}; {c:?}");
        println!("apps: times not compared (the host held the testbed back in every run)");
    } else {
        assert!(
            p.time_ms.p50 <= 23.0 && n.time_ms.p50 <= 44.0 && b.time_ms.max < 2600.0,
            "{report}"
        );
    }
    let snaps = std::fs::read_to_string(out.join("snapshots-flows.csv")).unwrap();
    let header: Vec<&str> = snaps.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "completions").unwrap();
    let total: u64 = snaps
        .lines()
        .skip(1)
        .filter_map(|r| r.split(',').nth(col).and_then(|v| v.parse::<u64>().ok()))
        .sum();
    assert_eq!(total, 40 + b.count, "completions in the time series: {report}");
    // The packet taps follow application connections too (server port to any client
    // port): the download's data packets have a one-way delay between the 10 ms of
    // propagation and that plus the full 2000-packet FIFO (2000 frames of 1514 bytes:
    // 242.2 ms at 100 Mbit/s). The simulated CUBIC fills it (252.4 ms); kernel CUBIC's
    // windows kept it below 136 ms unpaced and to 143.7 ms paced (a CI run), under it either way.
    // Its throughput and goodput are measured, so the verdict does not mistake an
    // application flow for a silent one.
    let bulk = l.flows.iter().find(|f| f.name == "bulk").unwrap();
    assert!(bulk.received_packets > 10_000, "{} packets", bulk.received_packets);
    // (When the host held this run's testbed back, the FIFO drained slower than the link
    // rate, by the link time the pacer forfeited, so its delay is not bounded then.)
    let held_back = l.testbed.as_ref().is_some_and(|t| t.disrupted);
    assert!(
        bulk.owd_ms.p50 >= 10.0 && (held_back || bulk.owd_ms.max < 10.0 + 242.2 + 5.0),
        "{:?}",
        bulk.owd_ms
    );
    assert!(
        bulk.throughput_bps > 10e6 && bulk.goodput_bps > 10e6,
        "{} {}",
        bulk.throughput_bps,
        bulk.goodput_bps
    );
    let _ = std::fs::remove_dir_all(d);
}

/// A campaign on the live testbed: one run at a time, the variants of a pair back to back
/// with their order alternating pair by pair; an L4S probe behind DualPI2 against a
/// classic one behind a FIFO in every pair.
#[test]
fn a_live_campaign_runs_its_pairs_back_to_back_in_alternating_order() {
    if !is_root() {
        return;
    }
    let _one = serial();
    let d_guard = tmpdir("campaign");
    let d = d_guard.path();
    std::fs::write(
        d.join("s.toml"),
        r#"[scenario]
name = "live-campaign"
duration = "3s"
warmup = "1s"
[topology]
type = "dumbbell"
rate = "20Mbit"
rtt = "20ms"
aqm = { kind = "dualpi2" }
[[flows]]
name = "bulk"
type = "udp-prague"
[[flows]]
name = "probe"
type = "probe"
ecn = "ect1"
[[variants]]
name = "l4s"
[[variants]]
name = "classic"
set = { "flows.probe.ecn" = "not-ect", "topology.aqm" = { kind = "fifo", limit = 200 } }
"#,
    )
    .unwrap();
    std::fs::write(
        d.join("c.toml"),
        "[campaign]\nname = \"lc\"\nscenario = \"s.toml\"\nbaseline = \"classic\"\nseeds = 2\n",
    )
    .unwrap();
    let store = d.join("store");
    let o = l4s()
        .args(["campaign", "run", "--backend", "live"])
        .arg(d.join("c.toml"))
        .arg("--out")
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Runs --jobs > 1 live are refused.
    let o = l4s()
        .args(["campaign", "run", "--backend", "live", "--jobs", "2"])
        .arg(d.join("c.toml"))
        .arg("--out")
        .arg(d.join("other"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("one at a time"));

    let plan: serde_json::Value = serde_json::from_slice(&std::fs::read(store.join("plan.json")).unwrap()).unwrap();
    let runs = plan["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    let info = |key: &str| -> (String, serde_json::Value, f64) {
        let rd = store.join("runs").join(&key[..2]).join(key);
        let i: serde_json::Value = serde_json::from_slice(&std::fs::read(rd.join("run-info.json")).unwrap()).unwrap();
        let s: serde_json::Value = serde_json::from_slice(&std::fs::read(rd.join("summary.json")).unwrap()).unwrap();
        let p99 = s["flows"][1]["owd_ms"]["p99"].as_f64().unwrap();
        (
            i["started_utc"].as_str().unwrap().to_string(),
            i["backend"].clone(),
            p99,
        )
    };
    // Plan order is run order: pair 0 runs l4s then classic, pair 1 classic then l4s.
    let mut started = Vec::new();
    for r in runs {
        let (t, backend, _) = info(r["key"].as_str().unwrap());
        assert_eq!(backend, "live");
        started.push(t);
    }
    let mut sorted = started.clone();
    sorted.sort();
    assert_eq!(started, sorted, "the runs ran in plan order");
    assert_eq!(runs[0]["variant"], 0);
    assert_eq!(runs[2]["variant"], 1, "the second pair starts with the other variant");
    for pair in runs.chunks(2) {
        let p99 = |r: &serde_json::Value| info(r["key"].as_str().unwrap()).2;
        let (l4s, classic) = if pair[0]["variant"] == 0 {
            (p99(&pair[0]), p99(&pair[1]))
        } else {
            (p99(&pair[1]), p99(&pair[0]))
        };
        assert!(l4s < classic, "pair: L4S probe p99 {l4s} ms, classic {classic} ms");
    }
}
