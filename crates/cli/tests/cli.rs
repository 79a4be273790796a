//! The `l4s` binary end to end: a good run writes results; bad scenarios fail before
//! simulating with exit status 2, an error naming file, line and key, and no results.

use std::path::{Path, PathBuf};
use std::process::Command;

fn l4s() -> Command {
    Command::new(env!("CARGO_BIN_EXE_l4s"))
}

/// A fresh folder for one test, removed when the returned guard drops (pass or fail).
fn tmpdir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("l4s-cli-{tag}-"))
        .tempdir()
        .unwrap()
}

const GOOD: &str = r#"[scenario]
name = "tiny"
duration = "3s"
warmup = "1s"

[topology]
type = "dumbbell"
rate = "20Mbit"
rtt = "20ms"

[topology.aqm]
kind = "dualpi2"
step_thresh = "1ms"

[[flows]]
name = "p"
type = "tcp"
cc = "prague"

[[flows]]
name = "probe"
type = "probe"
pps = 50
ecn = "ect1"
"#;

/// Run with a scenario text; returns (status, stderr, out dir, the folder that holds it).
fn run_text(tag: &str, text: &str) -> (i32, String, PathBuf, tempfile::TempDir) {
    let d_guard = tmpdir(tag);
    let d = d_guard.path();
    let f = d.join("bad.toml");
    std::fs::write(&f, text).unwrap();
    let out = d.join("out");
    let o = l4s().arg("run").arg(&f).arg("--out").arg(&out).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        out,
        d_guard,
    )
}

fn assert_bad(tag: &str, text: &str, line: usize, key: &str, says: &str) {
    let (code, err, out, _guard) = run_text(tag, text);
    assert_eq!(code, 2, "{tag}: exit status; stderr: {err}");
    assert!(
        err.contains(&format!("bad.toml:{line}: ")),
        "{tag}: no file:line {line} in {err:?}"
    );
    assert!(err.contains(key), "{tag}: key {key:?} not named in {err:?}");
    assert!(err.contains(says), "{tag}: {says:?} not in {err:?}");
    assert!(!out.exists(), "{tag}: a results directory was left behind");
    let leftovers: Vec<_> = std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "bad.toml")
        .collect();
    assert!(leftovers.is_empty(), "{tag}: left {leftovers:?}");
    assert!(!err.contains("panicked"), "{tag}: {err}");
}

#[test]
fn good_run_writes_summary() {
    let d_guard = tmpdir("good");
    let d = d_guard.path();
    let f = d.join("tiny.toml");
    std::fs::write(&f, GOOD).unwrap();
    let out = d.join("res");
    let o = l4s()
        .arg("run")
        .arg(&f)
        .arg("--out")
        .arg(&out)
        .arg("--seed")
        .arg("3")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout} {}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("sojourn p50"), "{stdout}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["scenario"]["seed"], 3);
    assert_eq!(v["flows"][0]["name"], "p");
    for k in ["p50", "p90", "p99", "p999", "max", "mean"] {
        assert!(v["flows"][0]["owd_ms"][k].is_number(), "owd_ms.{k}");
        assert!(v["flows"][0]["rtt_ms"][k].is_number(), "rtt_ms.{k}");
        assert!(v["queues"][0]["sojourn_ms"][k].is_number());
        assert!(v["queues"][0]["subqueues"]["L"]["sojourn_ms"][k].is_number());
    }
    for k in [
        "throughput_bps",
        "sent_packets",
        "lost_packets",
        "retransmits",
        "ce_fraction",
    ] {
        assert!(v["flows"][0][k].is_number(), "{k}");
    }
    for k in ["marks", "drops", "utilization"] {
        assert!(v["queues"][0][k].is_number(), "{k}");
    }
    assert!(out.join("scenario.toml").exists());
    // --duration overrides.
    let o = l4s()
        .arg("run")
        .arg(&f)
        .arg("--out")
        .arg(&out)
        .arg("--duration")
        .arg("2s")
        .arg("-q")
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(v["scenario"]["duration_s"], 2.0);
}

#[test]
fn unknown_key() {
    assert_bad(
        "unknown",
        &GOOD.replace("warmup = \"1s\"", "warmup = \"1s\"\ndurration = \"5s\""),
        5,
        "scenario",
        "unknown field `durration`",
    );
    assert_bad(
        "unknown-aqm",
        &GOOD.replace("step_thresh = \"1ms\"", "step_treshold = \"1ms\""),
        13,
        "topology.aqm",
        "step_treshold",
    );
}

#[test]
fn bad_unit() {
    assert_bad(
        "unit",
        &GOOD.replace("rate = \"20Mbit\"", "rate = \"20 furlongs\""),
        8,
        "topology.rate",
        "unknown unit",
    );
    assert_bad(
        "unit-aqm",
        &GOOD.replace("step_thresh = \"1ms\"", "step_thresh = \"1 fortnight\""),
        13,
        "topology.aqm.step_thresh",
        "duration",
    );
    assert_bad(
        "bare-number",
        &GOOD.replace("duration = \"3s\"", "duration = 3"),
        3,
        "scenario.duration",
        "duration",
    );
}

#[test]
fn zero_or_negative_rate() {
    assert_bad(
        "zero",
        &GOOD.replace("rate = \"20Mbit\"", "rate = \"0Mbit\""),
        8,
        "topology.rate",
        "above zero",
    );
    assert_bad(
        "negative",
        &GOOD.replace("rate = \"20Mbit\"", "rate = \"-20Mbit\""),
        8,
        "topology.rate",
        "rate",
    );
}

#[test]
fn missing_node() {
    let text = r#"[scenario]
duration = "5s"

[topology]
type = "custom"

[[topology.nodes]]
name = "a"

[[topology.nodes]]
name = "b"

[[topology.links]]
from = "a"
to = "b"
rate = "10Mbit"

[[flows]]
name = "f"
type = "tcp"
cc = "reno"
from = "a"
to = "c"
"#;
    assert_bad("node", text, 23, "flows[0].to", "no node named \"c\"");
}

#[test]
fn impossible_values() {
    assert_bad(
        "step",
        &GOOD.replace("step_thresh = \"1ms\"", "step_thresh = \"20ms\""),
        13,
        "topology.aqm.step_thresh",
        "target",
    );
    assert_bad(
        "qp-zero",
        &GOOD.replace(
            "step_thresh = \"1ms\"",
            "step_thresh = \"1ms\"\nqueue_protection = { critical_ql_score = \"0ms\" }",
        ),
        14,
        "topology.aqm.queue_protection.critical_ql_score",
        "greater than zero",
    );
    assert_bad(
        "qp-unknown",
        &GOOD.replace(
            "step_thresh = \"1ms\"",
            "step_thresh = \"1ms\"\nqueue_protection = { threshold = \"1ms\" }",
        ),
        14,
        "threshold",
        "unknown field",
    );
    assert_bad(
        "docsis-rate",
        &GOOD.replace("kind = \"dualpi2\"\nstep_thresh = \"1ms\"", "kind = \"docsis-dualq\""),
        11,
        "topology.aqm.max_rate",
        "required",
    );
    assert_bad(
        "docsis-slow",
        &GOOD.replace(
            "kind = \"dualpi2\"\nstep_thresh = \"1ms\"",
            "kind = \"docsis-dualq\"\nmax_rate = \"1Mbit\"",
        ),
        13,
        "topology.aqm.max_rate",
        "max_frame_size",
    );
    assert_bad(
        "warmup",
        &GOOD.replace("warmup = \"1s\"", "warmup = \"10s\""),
        4,
        "scenario.warmup",
        "shorter than the duration",
    );
    assert_bad(
        "cc",
        &GOOD.replace("cc = \"prague\"", "cc = \"vegas\""),
        18,
        "flows[0].cc",
        "unknown congestion control",
    );
    assert_bad(
        "kind",
        &GOOD.replace("kind = \"dualpi2\"", "kind = \"red\""),
        12,
        "topology.aqm.kind",
        "unknown queue discipline",
    );
    assert_bad(
        "syntax",
        &GOOD.replace("[topology]", "[topology"),
        6,
        "",
        "not valid TOML",
    );
}

/// Queue Protection's sanctions reach the terminal table and the report, by flow name.
#[test]
fn queue_protection_is_reported_by_flow() {
    let d_guard = tmpdir("qp");
    let d = d_guard.path();
    let f = d.join("qp.toml");
    let text = GOOD.replace("step_thresh = \"1ms\"", "step_thresh = \"1ms\"\nqueue_protection = {}")
        + "\n[[flows]]\nname = \"hog\"\ntype = \"probe\"\npps = 2500\nsize = \"1514B\"\necn = \"ect1\"\n";
    std::fs::write(&f, text).unwrap();
    let out = d.join("res");
    let o = l4s().arg("run").arg(&f).arg("--out").arg(&out).output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout} {}", String::from_utf8_lossy(&o.stderr));
    assert!(
        stdout.contains("queue protection on bottleneck (CRITICALqL 1.00 ms)"),
        "{stdout}"
    );
    assert!(stdout.contains("\n  hog: "), "{stdout}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Queue Protection on bottleneck"));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let qp = &v["queues"][0]["queue_protection"];
    assert_eq!(qp["flows"][0]["flow"], "hog", "{qp}");
    assert!(qp["sanctioned_packets"].as_u64().unwrap() > 0);
    let _ = std::fs::remove_dir_all(d);
}

const DOCSIS: &str = r#"[scenario]
name = "cable"
duration = "3s"

[topology]
type = "custom"

[[topology.nodes]]
name = "cmts"
[[topology.nodes]]
name = "home"

[[topology.links]]
from = "cmts"
to = "home"
kind = "docsis"
rate = "100Mbit"
reverse_rate = "20Mbit"
reverse_aqm = { kind = "docsis-dualq", max_rate = "20Mbit" }
docsis = { map_interval = "2ms", peak_rate = "40Mbit" }

[[flows]]
name = "up"
type = "probe"
from = "home"
to = "cmts"
"#;

/// A cable link's upstream: bad values fail with the file, line and key; a good one runs.
#[test]
fn docsis_link_bad_input_and_a_run() {
    assert_bad(
        "docsis-map",
        &DOCSIS.replace("map_interval = \"2ms\"", "map_interval = \"100us\""),
        20,
        "topology.links[0].docsis.map_interval",
        "at least one OFDMA frame",
    );
    // The key counts kHz, and so does the message.
    assert_bad(
        "docsis-scs",
        &DOCSIS.replace(
            "map_interval = \"2ms\"",
            "map_interval = \"2ms\", subcarrier_spacing_khz = 30",
        ),
        20,
        "topology.links[0].docsis.subcarrier_spacing_khz",
        "expected 25 or 50 (kHz, DOCSIS 3.1 OFDMA), found 30",
    );
    assert_bad(
        "docsis-ds-scs",
        &DOCSIS.replace(
            "map_interval = \"2ms\"",
            "map_interval = \"2ms\", ds_subcarrier_spacing_khz = 30",
        ),
        20,
        "topology.links[0].docsis.ds_subcarrier_spacing_khz",
        "expected 25 or 50 (kHz, DOCSIS 3.1 downstream OFDM), found 30",
    );
    assert_bad(
        "docsis-peak",
        &DOCSIS.replace("peak_rate = \"40Mbit\"", "peak_rate = \"10Mbit\""),
        20,
        "topology.links[0].docsis.peak_rate",
        "maximum sustained rate",
    );
    assert_bad(
        "docsis-msr",
        &DOCSIS.replace("reverse_rate = \"20Mbit\"\n", ""),
        13,
        "topology.links[0]",
        "reverse_rate",
    );
    assert_bad(
        "docsis-oneway",
        &DOCSIS.replace("kind = \"docsis\"", "kind = \"docsis\"\nbidirectional = false"),
        17,
        "topology.links[0].bidirectional",
        "both directions",
    );
    assert_bad(
        "docsis-pgs-capacity",
        &DOCSIS
            .replace("reverse_rate = \"20Mbit\"", "reverse_rate = \"1Gbit\"")
            .replace(
                "peak_rate = \"40Mbit\"",
                "peak_rate = \"1Gbit\", pgs_rate = \"700Mbit\", pgs_interval = \"135us\"",
            ),
        20,
        "topology.links[0].docsis.pgs_rate",
        "upstream capacity",
    );
    assert_bad(
        "docsis-pgs-fifo",
        &DOCSIS
            .replace("peak_rate = \"40Mbit\"", "peak_rate = \"40Mbit\", pgs_rate = \"2Mbit\"")
            .replace(
                "reverse_aqm = { kind = \"docsis-dualq\", max_rate = \"20Mbit\" }",
                "reverse_aqm = { kind = \"fifo\" }",
            ),
        20,
        "topology.links[0].docsis.pgs_rate",
        "docsis-dualq",
    );
    // The downstream: its rate, channel and shaping.
    assert_bad(
        "docsis-ds-msr",
        &DOCSIS.replace("rate = \"100Mbit\"\n", ""),
        13,
        "topology.links[0]",
        "`rate`",
    );
    assert_bad(
        "docsis-ds-capacity",
        &DOCSIS.replace("rate = \"100Mbit\"", "rate = \"3Gbit\""),
        17,
        "topology.links[0].rate",
        "downstream channel's capacity",
    );
    assert_bad(
        "docsis-ds-peak",
        &DOCSIS.replace(
            "peak_rate = \"40Mbit\"",
            "peak_rate = \"40Mbit\", ds_peak_rate = \"50Mbit\"",
        ),
        20,
        "topology.links[0].docsis.ds_peak_rate",
        "maximum sustained rate",
    );
    assert_bad(
        "docsis-ds-cp",
        &DOCSIS.replace(
            "peak_rate = \"40Mbit\"",
            "peak_rate = \"40Mbit\", ds_cyclic_prefix = 300",
        ),
        20,
        "topology.links[0].docsis.ds_cyclic_prefix",
        "192, 256, 512, 768 or 1024",
    );
    let (code, err, out, _guard) = run_text("docsis-good", DOCSIS);
    assert_eq!(code, 0, "{err}");
    // The upstream's grants and grant delays are printed under the queue table.
    let d_guard = tmpdir("docsis-table");
    let d = d_guard.path();
    let f = d.join("docsis.toml");
    std::fs::write(&f, DOCSIS).unwrap();
    let o = l4s()
        .arg("run")
        .arg(&f)
        .arg("--out")
        .arg(d.join("res"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}");
    assert!(stdout.contains("\nupstream of cmts->home-reverse: "), "{stdout}");
    assert!(stdout.contains("found nothing to send"), "{stdout}");
    assert!(stdout.contains("  grant delay ("), "{stdout}");
    // The probe's replies come back on the downstream's symbols.
    assert!(stdout.contains("\ndownstream of cmts->home: "), "{stdout}");
    assert!(stdout.contains("OFDM symbols carried its data"), "{stdout}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(v["queues"][0]["name"], "cmts->home-reverse", "{v}");
}

#[test]
fn missing_file_and_foreign_out_dir() {
    let o = l4s().arg("run").arg("/nonexistent/x.toml").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/x.toml"));
    // Refuse to overwrite a directory we did not write.
    let d_guard = tmpdir("foreign");
    let d = d_guard.path();
    let f = d.join("tiny.toml");
    std::fs::write(&f, GOOD).unwrap();
    let foreign = d.join("mine");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("thesis.tex"), "x").unwrap();
    let o = l4s().arg("run").arg(&f).arg("--out").arg(&foreign).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(Path::new(&foreign.join("thesis.tex")).exists());
}

/// Two separate processes with the same scenario and seed write byte-identical results
/// (no per-process randomness such as hash-map ordering leaks into the output).
#[test]
fn separate_processes_write_identical_results() {
    let d_guard = tmpdir("det");
    let d = d_guard.path();
    let f = d.join("tiny.toml");
    std::fs::write(&f, GOOD).unwrap();
    let mut outs = Vec::new();
    for i in 0..2 {
        let out = d.join(format!("r{i}"));
        let o = l4s()
            .arg("run")
            .arg(&f)
            .arg("--out")
            .arg(&out)
            .arg("-q")
            .output()
            .unwrap();
        assert!(o.status.success());
        outs.push(out);
    }
    for file in ["summary.json", "snapshots-flows.csv", "snapshots-queues.csv"] {
        let a = std::fs::read(outs[0].join(file)).unwrap();
        let b = std::fs::read(outs[1].join(file)).unwrap();
        assert!(!a.is_empty());
        assert_eq!(a, b, "{file} differs between runs");
    }
}

/// `--pcap` writes the bottleneck egress; tshark reads it and sees exactly the packets,
/// ECN codepoints and CE marks that summary.json reports for the bottleneck.
#[test]
fn pcap_matches_the_summary() {
    let have_tshark = Command::new("tshark")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !have_tshark {
        assert!(
            std::env::var_os("CI").is_none(),
            "tshark (Debian package) is required in CI"
        );
        eprintln!("warning: tshark not installed; skipping pcap_matches_the_summary");
        return;
    }
    let d_guard = tmpdir("pcap");
    let d = d_guard.path();
    let f = d.join("p.toml");
    // Zero warm-up: the summary's window is the whole run, like the capture.
    let text = GOOD.replace("warmup = \"1s\"", "warmup = \"0s\"")
        + "\n[[flows]]\nname = \"c\"\ntype = \"tcp\"\ncc = \"cubic\"\necn = \"classic\"\n\n[[flows]]\nname = \"old\"\ntype = \"probe\"\npps = 50\necn = \"not-ect\"\n";
    std::fs::write(&f, text).unwrap();
    let out = d.join("res");
    let o = l4s()
        .arg("run")
        .arg(&f)
        .arg("--out")
        .arg(&out)
        .arg("--pcap")
        .arg("-q")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let pcap = out.join("bottleneck.pcap");
    let t = Command::new("tshark")
        .arg("-n")
        .arg("-r")
        .arg(&pcap)
        .args(["-T", "fields", "-e", "ip.dsfield.ecn"])
        .output()
        .unwrap();
    assert!(t.status.success(), "{}", String::from_utf8_lossy(&t.stderr));
    let mut n = [0u64; 4];
    for l in String::from_utf8_lossy(&t.stdout).lines() {
        n[l.trim().parse::<usize>().expect("an ECN value per packet")] += 1;
    }
    let malformed = Command::new("tshark")
        .arg("-n")
        .arg("-r")
        .arg(&pcap)
        .args(["-Y", "_ws.malformed"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&malformed.stdout).trim().is_empty(),
        "malformed packets in the capture"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let q = &v["queues"][0];
    assert_eq!(q["name"], "bottleneck");
    let g = |x: &serde_json::Value| x.as_u64().unwrap();
    assert_eq!(n.iter().sum::<u64>(), g(&q["dequeued_packets"]), "packets {n:?}");
    assert_eq!(n[3], g(&q["marks"]), "CE marks {n:?}");
    let (l, c) = (&q["subqueues"]["L"], &q["subqueues"]["C"]);
    assert_eq!(n[1] + g(&l["marks"]), g(&l["dequeued_packets"]), "L queue {n:?}");
    assert_eq!(n[0] + n[2] + g(&c["marks"]), g(&c["dequeued_packets"]), "C queue {n:?}");
    assert!(
        n[0] > 0 && n[1] > 0 && n[2] > 0 && n[3] > 0,
        "every codepoint present: {n:?}"
    );
}

/// `l4s report DIR` rebuilds report.html from the results alone; `l4s compare` puts runs
/// side by side; both refuse a directory that holds no results with status 2.
#[test]
fn report_and_compare_commands() {
    let d_guard = tmpdir("reportcmd");
    let d = d_guard.path();
    let f = d.join("tiny.toml");
    std::fs::write(&f, GOOD).unwrap();
    let fifo = d.join("fifo.toml");
    std::fs::write(
        &fifo,
        GOOD.replace("kind = \"dualpi2\"\nstep_thresh = \"1ms\"", "kind = \"fifo\""),
    )
    .unwrap();
    let (a, b) = (d.join("a"), d.join("b"));
    for (sc, out) in [(&f, &a), (&fifo, &b)] {
        let o = l4s()
            .arg("run")
            .arg(sc)
            .arg("--out")
            .arg(out)
            .arg("-q")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(out.join("report.html").is_file());
    }
    std::fs::remove_file(a.join("report.html")).unwrap();
    let o = l4s().arg("report").arg(&a).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(a.join("report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("tiny"));
    let page = d.join("cmp.html");
    let o = l4s()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .arg("--out")
        .arg(&page)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(table.contains("probe") && table.contains('Δ'), "{table}");
    assert!(std::fs::read_to_string(&page).unwrap().contains("<svg"));
    assert!(!d.join("cmp-png").exists(), "PNGs only with --png");
    // Labels, a log delay axis, and the charts as PNGs beside the page.
    let o = l4s()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--label", "DualPI2", "--label", "FIFO", "--log-x", "--png", "--out"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("run 1: DualPI2 [") && out.contains("run 2: FIFO ["),
        "{out}"
    );
    assert!(
        out.contains(&format!("charts as PNG in {}", d.join("cmp-png").display())),
        "{out}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    let pngs = std::fs::read_dir(d.join("cmp-png")).unwrap().count();
    assert_eq!(pngs, html.matches("<svg").count(), "one PNG per chart");
    assert!(html.contains("one-way delay (ms), log scale"));
    // A label per run, and a PNG folder holding something of the user's, are refused.
    let o = l4s()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--label", "only one", "--out"])
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--label given 1 times for 2 runs"));
    std::fs::write(d.join("cmp-png").join("notes.txt"), "mine").unwrap();
    let o = l4s()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--png", "--out"])
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("notes.txt") && err.contains("not a chart of ours"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("cmp-png").join("notes.txt")).unwrap(),
        "mine"
    );
    // Bad input: a directory without results.
    let empty = d.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    for args in [
        vec!["report".to_string()],
        vec!["compare".to_string(), a.display().to_string()],
    ] {
        let o = l4s().args(&args).arg(&empty).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("summary.json") && !err.contains("panicked"), "{err}");
    }
    assert!(!empty.join("report.html").exists());
}

/// The verdict's warnings fire on runs built to trigger them and stay silent on the
/// healthy DualPI2 dumbbell (only the note on thin p99.99 statistics remains).
#[test]
fn verdict_on_real_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let d_guard = tmpdir("verdict");
    let d = d_guard.path();
    let run = |scenario: &Path, tag: &str| -> String {
        let o = l4s()
            .arg("run")
            .arg(scenario)
            .arg("--out")
            .arg(d.join(tag))
            .arg("--snapshot-interval")
            .arg("0")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let ok = run(&root.join("scenarios/dumbbell-dualpi2.toml"), "dualpi2");
    assert!(ok.starts_with("OK: L4S working"), "{ok}");
    assert!(!ok.contains("[warn]") && !ok.contains("[bad]"), "{ok}");
    let fifo = run(&root.join("scenarios/dumbbell-fifo.toml"), "fifo");
    assert!(fifo.starts_with("PROBLEM:"), "{fifo}");
    assert!(
        fifo.contains("[bad] No CE marks on ECT(1) traffic while delay builds"),
        "{fifo}"
    );
    // A sender held back by a small receive window never saturates the link.
    let unsat = d.join("unsat.toml");
    std::fs::write(
        &unsat,
        GOOD.replace("rate = \"20Mbit\"", "rate = \"100Mbit\"")
            .replace("cc = \"prague\"", "cc = \"prague\"\nreceiver = { rwnd = 20000 }"),
    )
    .unwrap();
    let u = run(&unsat, "unsat");
    assert!(u.contains("[warn] No link was saturated"), "{u}");
}

/// `--packets` writes packets.parquet (one row per finished data packet) and every run
/// writes its snapshots and distributions as Parquet too.
#[test]
fn packets_parquet() {
    use arrow_array::Array;
    let d_guard = tmpdir("packets");
    let d = d_guard.path();
    let f = d.join("p.toml");
    let text = GOOD.replace("warmup = \"1s\"", "warmup = \"0s\"")
        + "\n[[flows]]\nname = \"old\"\ntype = \"tcp\"\ncc = \"reno\"\necn = \"off\"\n";
    std::fs::write(&f, text).unwrap();
    let out = d.join("res");
    let o = l4s()
        .arg("run")
        .arg(&f)
        .arg("--out")
        .arg(&out)
        .arg("--packets")
        .arg("-q")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for name in [
        "snapshots-flows.parquet",
        "snapshots-queues.parquet",
        "distributions.parquet",
    ] {
        assert!(out.join(name).is_file(), "{name}");
    }
    let file = std::fs::File::open(out.join("packets.parquet")).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let (mut rows, mut lost, mut marked) = (0u64, 0u64, 0u64);
    for batch in reader {
        let b = batch.unwrap();
        rows += b.num_rows() as u64;
        let l = b.column_by_name("lost").unwrap();
        let l = l.as_any().downcast_ref::<arrow_array::BooleanArray>().unwrap();
        lost += l.iter().filter(|v| *v == Some(true)).count() as u64;
        let dec = b.column_by_name("hop0_decision").unwrap();
        let dec = arrow_array::cast::as_dictionary_array::<arrow_array::types::Int32Type>(dec.as_ref());
        let values = dec
            .values()
            .as_any()
            .downcast_ref::<arrow_array::StringArray>()
            .unwrap();
        marked += dec
            .keys()
            .iter()
            .flatten()
            .filter(|k| values.value(*k as usize) == "mark")
            .count() as u64;
    }
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let sum = |k: &str| {
        v["flows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f[k].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(lost, sum("lost_packets"), "lost rows");
    assert!(lost > 0, "the Not-ECT Reno flow must lose packets");
    // Every data packet sent appears, except those still in flight at the end.
    let sent = sum("sent_packets");
    assert!(
        rows <= sent && rows + 200 >= sent,
        "{rows} rows for {sent} packets sent"
    );
    let marks = v["queues"][0]["marks"].as_u64().unwrap();
    assert!(
        marked <= marks && marked + 20 >= marks,
        "{marked} marked rows vs {marks} marks"
    );
}

/// `l4s report` / `compare` on a missing directory, another schema version or a truncated
/// summary say what is wrong and exit 2.
#[test]
fn report_bad_input() {
    let d_guard = tmpdir("reportbad");
    let d = d_guard.path();
    let f = d.join("tiny.toml");
    std::fs::write(&f, GOOD).unwrap();
    let good = d.join("good");
    assert!(l4s()
        .arg("run")
        .arg(&f)
        .arg("--out")
        .arg(&good)
        .arg("-q")
        .output()
        .unwrap()
        .status
        .success());
    let summary = std::fs::read_to_string(good.join("summary.json")).unwrap();
    let mk = |name: &str, text: &str| {
        let p = d.join(name);
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("summary.json"), text).unwrap();
        p
    };
    let other = mk(
        "v99",
        &summary.replacen("\"schema_version\": 1", "\"schema_version\": 99", 1),
    );
    let cut = mk("cut", &summary[..summary.len() / 2]);
    let cases = [
        (d.join("nope"), "no such directory"),
        (other.clone(), "schema_version 99"),
        (cut.clone(), "summary.json"),
    ];
    for (dir, says) in &cases {
        for args in [
            vec!["report".to_string()],
            vec!["compare".to_string(), good.display().to_string()],
        ] {
            let o = l4s().args(&args).arg(dir).output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?} {}: {err}", dir.display());
            assert!(err.contains(says) && err.contains(&*dir.display().to_string()), "{err}");
            assert!(!err.contains("panicked"), "{err}");
        }
        assert!(!dir.join("report.html").exists());
    }
}

/// A scenario with [[variants]] runs each into DIR/<variant>/ and ends with compare.html;
/// `--variant` picks some of them (in file order); an unknown name is refused with the
/// names there are.
#[test]
fn variants_run_into_their_directories_and_can_be_picked() {
    let d_guard = tmpdir("variants");
    let d = d_guard.path();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/xr-varying-bandwidth.toml");
    let dirs = |out: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(out)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let out = d.join("all");
    let o = l4s()
        .arg("run")
        .arg(&file)
        .args(["-q", "--duration", "6s", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        dirs(&out),
        [
            "classic",
            "compare.html",
            "l4s",
            "l4s-classic-background",
            "variants.json"
        ]
    );
    let out = d.join("picked");
    let o = l4s()
        .arg("run")
        .arg(&file)
        .args([
            "-q",
            "--duration",
            "6s",
            "--variant",
            "l4s-classic-background",
            "--variant",
            "classic",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        dirs(&out),
        ["classic", "compare.html", "l4s-classic-background", "variants.json"]
    );
    // The web flow ran over CUBIC in both picked variants.
    for v in ["classic", "l4s-classic-background"] {
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join(v).join("summary.json")).unwrap()).unwrap();
        let web = s["flows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == "web")
            .unwrap();
        assert_eq!(web["cc"], "cubic", "{v}: {web}");
    }
    // One variant picked: no table of one run beside nothing, but how to compare it.
    let one = d.join("one");
    let o = l4s()
        .arg("run")
        .arg(&file)
        .args(["--duration", "6s", "--variant", "classic", "--out"])
        .arg(&one)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!text.contains("side by side"), "{text}");
    assert!(
        text.contains(&format!(
            "one variant ran (classic): set it beside another's results with `l4s compare {} DIR`",
            one.join("classic").display()
        )),
        "{text}"
    );
    assert_eq!(dirs(&one), ["classic", "compare.html", "variants.json"]);
    // Unknown variant: exit 2, the names there are, nothing written.
    let o = l4s()
        .arg("run")
        .arg(&file)
        .args(["--variant", "l4s-only", "--out"])
        .arg(d.join("bad"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("\"l4s-only\"") && err.contains("l4s, classic, l4s-classic-background"),
        "{err}"
    );
    assert!(!d.join("bad").exists());
    // A scenario without variants.
    let plain = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/dumbbell-dualpi2.toml");
    let o = l4s()
        .arg("run")
        .arg(&plain)
        .args(["--variant", "l4s"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("has no [[variants]]"));
    let _ = std::fs::remove_dir_all(d);
}

/// Live, a variant the host cannot run (kernel TCP Prague missing) is refused before
/// anything runs, naming the variants that can. (Skipped on a kernel with TCP Prague,
/// where the command would run all three live.)
#[test]
fn live_variants_the_host_cannot_run_are_refused_naming_the_others() {
    let avail = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap_or_default();
    if avail.split_whitespace().any(|c| c == "prague") {
        eprintln!("skipped: this kernel has TCP Prague");
        return;
    }
    let d_guard = tmpdir("live-variants");
    let d = d_guard.path();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/xr-varying-bandwidth.toml");
    let o = l4s()
        .arg("run")
        .arg(&file)
        .args(["--backend", "live", "--out"])
        .arg(d.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("variant l4s: flow \"web\"") && err.contains("\"prague\""),
        "{err}"
    );
    assert!(
        err.contains("can run live here: --variant classic --variant l4s-classic-background"),
        "{err}"
    );
    assert!(!d.join("out").exists());
    let _ = std::fs::remove_dir_all(d);
}

/// `l4s trace generate` writes what a link's capacity process draws for the run, and a
/// scenario that replays that file with `trace` gets the very same opportunities.
#[test]
fn trace_generate_writes_a_link_capacity_that_replays_as_drawn() {
    let d_guard = tmpdir("trace-generate");
    let d = d_guard.path();
    let sc = r#"[scenario]
name = "cell"
duration = "20s"
[topology]
type = "dumbbell"
rtt = "40ms"
capacity = { process = "ar1", median = "10Mbit", sigma = 0.15, phi = 0.95, step = "100ms", min = "2Mbit", max = "40Mbit" }
[[flows]]
name = "f"
type = "udp-prague"
"#;
    std::fs::write(d.join("cell.toml"), sc).unwrap();
    let out = d.join("cell.down");
    let o = l4s()
        .args(["trace", "generate"])
        .arg(d.join("cell.toml"))
        .args(["--seed", "5", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains("delivery opportunities over"), "{said}");
    let text = std::fs::read_to_string(&out).unwrap();
    let written = l4s_link::Trace::read(text.as_bytes()).unwrap();
    // 20 s of capacity around 10 Mbit/s: some 16 600 opportunities, the last near 20 s.
    assert!(
        (8_000..40_000).contains(&written.times_ms().len()),
        "{}",
        written.times_ms().len()
    );
    assert!(*written.times_ms().last().unwrap() > 19_000);
    // Replayed with `trace`, it is what the process drew for that seed.
    let mut drawn = l4s_scenario::load_file(&d.join("cell.toml")).unwrap();
    drawn.apply_overrides(Some(5), None).unwrap();
    let replay = sc.replace(
        "capacity = { process = \"ar1\", median = \"10Mbit\", sigma = 0.15, phi = 0.95, step = \"100ms\", min = \"2Mbit\", max = \"40Mbit\" }",
        "trace = \"cell.down\"",
    );
    std::fs::write(d.join("replay.toml"), replay).unwrap();
    let replayed = l4s_scenario::load_file(&d.join("replay.toml")).unwrap();
    assert_eq!(replayed.links[0].trace, drawn.links[0].trace);
    // An existing file is never overwritten; a link without a process is refused.
    let again = l4s()
        .args(["trace", "generate"])
        .arg(d.join("cell.toml"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists"));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), text);
    let wrong = l4s()
        .args(["trace", "generate"])
        .arg(d.join("cell.toml"))
        .args(["--link", "f.src->left", "--out"])
        .arg(d.join("x"))
        .output()
        .unwrap();
    assert_eq!(wrong.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("has no `capacity` process"));
    // A trace has no warm-up: 2 s is drawn though the scenario warms up for 5 s; into a
    // folder that is made for it.
    std::fs::write(
        d.join("warm.toml"),
        sc.replace("duration = \"20s\"", "duration = \"20s\"\nwarmup = \"5s\""),
    )
    .unwrap();
    let short = d.join("new/short.down");
    let o = l4s()
        .args(["trace", "generate"])
        .arg(d.join("warm.toml"))
        .args(["--duration", "2s", "--out"])
        .arg(&short)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t = l4s_link::Trace::read(std::fs::read(&short).unwrap().as_slice()).unwrap();
    assert!(
        (1_900..=2_000).contains(t.times_ms().last().unwrap()),
        "{:?}",
        t.times_ms().last()
    );
    // Beyond what 32-bit milliseconds count: the whole reason, with the run's length.
    let o = l4s()
        .args(["trace", "generate"])
        .arg(d.join("cell.toml"))
        .args(["--duration", "100000h", "--out"])
        .arg(d.join("long.down"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.trim_end()
            .ends_with("cannot count in its 32-bit milliseconds over the run's 360000000s"),
        "{err}"
    );
    assert!(!d.join("long.down").exists());
    let _ = std::fs::remove_dir_all(d);
}

/// The queue snapshots of a link whose capacity is drawn (here steps of 20 and 5 Mbit/s)
/// carry the capacity over time, and a classic flow's queue delay grows when it falls.
/// `l4s check --show` prints the scenario as parsed: rates in bit/s, the queue's changed
/// parameters, routes and base RTTs.
#[test]
fn check_show_prints_the_scenario_as_parsed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let o = l4s()
        .current_dir(&root)
        .args([
            "check",
            "--show",
            "scenarios/multi-hop.toml",
            "--set",
            "topology.links.access.aqm.target=10ms",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    for want in [
        "core-link: core -> home, 200000000 bit/s, delay 4ms, queue fifo { limit = 2000 } [bottleneck]",
        "access: home -> laptop, 50000000 bit/s, delay 1ms, queue dualpi2 { target = \"10ms\" } [bottleneck]",
        "prague-download: tcp prague, ect1, from 0s, base RTT 20ms, route server -> core -> home -> laptop",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    // A Wi-Fi station's links show the BSS's queues: the AP's, and the station's own.
    let o = l4s()
        .current_dir(&root)
        .args(["check", "--show", "scenarios/wifi-cloud-gaming.toml"])
        .args([
            "--set",
            "topology.wifi.wifi.station_aqm={ kind = \"fifo\", limit = 50 }",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    for want in [
        "wifi/laptop/down: ap -> laptop, 144117647 bit/s, delay 0s, queue dualpi2 (defaults) [bottleneck]",
        "wifi/laptop/up: laptop -> ap, 144117647 bit/s, delay 0s, queue fifo { limit = 50 }",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
}

#[test]
fn snapshots_follow_a_drawn_capacity_over_time() {
    let d_guard = tmpdir("capacity-snapshots");
    let d = d_guard.path();
    let sc = r#"[scenario]
name = "steps"
duration = "8s"
[topology]
type = "dumbbell"
rtt = "20ms"
aqm = { kind = "fifo", limit = 400 }
capacity = { process = "steps", steps = [{ at = "0s", rate = "20Mbit" }, { at = "4s", rate = "5Mbit" }], period = "8s" }
[[flows]]
name = "bulk"
type = "tcp"
cc = "cubic"
"#;
    std::fs::write(d.join("s.toml"), sc).unwrap();
    let out = d.join("r");
    let o = l4s()
        .arg("run")
        .arg(d.join("s.toml"))
        .args(["-q", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("snapshots-queues.csv")).unwrap();
    let mut rows = Vec::new();
    for line in csv.lines().skip(1) {
        let c: Vec<&str> = line.split(',').collect();
        if c[1] == "bottleneck" {
            rows.push((
                c[0].parse::<f64>().unwrap(),
                c[12].parse::<f64>().unwrap(),
                c[4].parse::<f64>().unwrap(),
            ));
        }
    }
    // The capacity of the 100 ms before each row: 20 and 5 Mbit/s of IP packets, within
    // one 1504-byte opportunity (0.12 Mbit/s over 100 ms).
    let at = |t: f64| rows.iter().find(|r| (r.0 - t).abs() < 1e-6).copied().unwrap();
    assert!((at(3.0).1 - 20e6).abs() <= 120_320.0, "{:?}", at(3.0));
    assert!((at(7.0).1 - 5e6).abs() <= 120_320.0, "{:?}", at(7.0));
    // CUBIC fills the 400-packet FIFO: its delay is about four times as long at 5 Mbit/s.
    let mean_delay = |from: f64, to: f64| {
        let v: Vec<f64> = rows.iter().filter(|r| r.0 > from && r.0 <= to).map(|r| r.2).collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    let (fast, slow) = (mean_delay(2.0, 4.0), mean_delay(6.0, 8.0));
    assert!(
        slow > 2.5 * fast,
        "queue delay {fast:.1} ms at 20 Mbit/s, {slow:.1} ms at 5 Mbit/s"
    );
    // The summary gives the capacity over the window, not just its value at the end, and
    // the report draws it under the throughput charts.
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let cap = &s["queues"][0]["capacity"];
    let mean = cap["mean_bps"].as_f64().unwrap();
    assert!((mean - 12.5e6).abs() < 0.1e6, "{cap}");
    assert!((cap["min_bps"].as_f64().unwrap() - 5e6).abs() <= 120_320.0, "{cap}");
    assert!((cap["max_bps"].as_f64().unwrap() - 20e6).abs() <= 120_320.0, "{cap}");
    // The reverse draws its own capacity from the same process.
    assert!(
        s["queues"][1]["capacity"]["mean_bps"].as_f64().is_some(),
        "{}",
        s["queues"][1]
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for q in ["bottleneck", "bottleneck-reverse"] {
        let line = format!("capacity: {q}<");
        assert_eq!(
            html.matches(&line).count(),
            3,
            "{q}: latency-under-load, stacked and per-flow charts"
        );
    }
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn scripts_get_the_verdict_in_the_summary_json_on_stdout_and_an_exit_status() {
    let d_guard = tmpdir("scripts");
    let d = d_guard.path();
    let good = d.join("good.toml");
    std::fs::write(&good, GOOD).unwrap();
    // The same traffic through a FIFO: L4S traffic that gets no marks while delay builds.
    let bad = d.join("bad.toml");
    std::fs::write(
        &bad,
        GOOD.replace(
            "kind = \"dualpi2\"\nstep_thresh = \"1ms\"",
            "kind = \"fifo\"\nlimit = 300",
        ),
    )
    .unwrap();
    let run = |f: &Path, out: &str, args: &[&str]| {
        l4s()
            .arg("run")
            .arg(f)
            .arg("--out")
            .arg(d.join(out))
            .args(args)
            .output()
            .unwrap()
    };
    // --json: the summary, with its verdict, and nothing else on stdout.
    let o = run(&good, "g", &["--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is the summary");
    assert_eq!(v["verdict"]["level"], "good", "{}", v["verdict"]);
    assert!(v["verdict"]["headline"].as_str().unwrap().contains("L4S working"));
    let file = std::fs::read(d.join("g/summary.json")).unwrap();
    assert_eq!(v, serde_json::from_slice::<serde_json::Value>(&file).unwrap());
    // The very text of summary.json, its keys in its order.
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim_end(),
        String::from_utf8_lossy(&file).trim_end()
    );
    // --fail-on: exit 3 when the verdict is that bad, 0 otherwise.
    let o = run(&bad, "b", &["-q", "--fail-on", "problem"]);
    assert_eq!(o.status.code(), Some(3), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("fail-on:"));
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join("b/summary.json")).unwrap()).unwrap();
    assert_eq!(s["verdict"]["level"], "bad");
    let codes: Vec<&str> = s["verdict"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert!(!codes.is_empty(), "a PROBLEM names its findings");
    assert_eq!(run(&good, "g", &["-q", "--fail-on", "warn"]).status.code(), Some(0));
    // -q with variants: only the paths, each one that exists.
    let both = d.join("both.toml");
    std::fs::write(
        &both,
        format!("{GOOD}\n[[variants]]\nname = \"pi2\"\n\n[[variants]]\nname = \"fifo\"\nset = {{ \"topology.aqm\" = {{ kind = \"fifo\", limit = 300 }} }}\n"),
    )
    .unwrap();
    let o = run(&both, "v", &["-q"]);
    assert!(o.status.success());
    let lines: Vec<String> = String::from_utf8_lossy(&o.stdout).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    for l in &lines {
        assert!(Path::new(l).exists(), "{l:?} is not a path");
    }
    let o = run(&both, "v", &["--json", "--fail-on", "problem"]);
    assert_eq!(o.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.starts_with("{\n  \"pi2\": {\n    \"schema_version\"") && text.contains("\"fifo\": {"),
        "the variants in the file's order (pi2 before fifo), each summary in its own"
    );
    assert_eq!(v["pi2"]["verdict"]["level"], "good");
    assert_eq!(v["fifo"]["verdict"]["level"], "bad");
}

#[test]
fn names_with_terminal_escapes_are_printed_harmless() {
    let d_guard = tmpdir("escapes");
    let d = d_guard.path();
    let f = d.join("e.toml");
    std::fs::write(&f, GOOD.replace("name = \"p\"", "name = \"p\\u001b[31mRED\"")).unwrap();
    let o = l4s().arg("run").arg(&f).arg("--out").arg(d.join("o")).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains('\u{1b}'), "an escape reached the terminal");
    assert!(out.contains("p\u{fffd}[31mRED"), "{out}");
}

#[test]
fn ctrl_c_stops_a_simulation_writes_what_it_reached_and_exits_130() {
    let d_guard = tmpdir("sigint");
    let d = d_guard.path();
    let f = d.join("long.toml");
    std::fs::write(&f, GOOD.replace("duration = \"3s\"", "duration = \"3600s\"")).unwrap();
    let out = d.join("out");
    let child = l4s()
        .arg("run")
        .arg(&f)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("interrupted at") && err.contains("marked incomplete"),
        "{err}"
    );
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["complete"], false);
    let reached = s["reached_s"].as_f64().unwrap();
    assert!(reached > 1.0 && reached < 3600.0, "{reached}");
    assert_eq!(s["scenario"]["duration_s"], 3600.0);
    assert!(out.join("report.html").is_file() && out.join("distributions.csv").is_file());
    // The tables and the report name the window the figures cover, not the one planned.
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        said.contains(&format!("statistics over 1.0..{reached:.1} s (stopped early)")),
        "{said}"
    );
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        page.contains(" of 3600 s simulated · statistics over 1–"),
        "report header"
    );
    assert!(!page.contains("statistics over 1–3600 s"));
    // Two signals: the second exits at once, leaving no results directory half-written.
    let out2 = d.join("out2");
    let child = l4s()
        .arg("run")
        .arg(&f)
        .arg("--out")
        .arg(&out2)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1000));
    let pid = child.id().to_string();
    for _ in 0..2 {
        assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
        // Later than a signal delivered again (GNU `timeout`'s, below).
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    let t = std::time::Instant::now();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130));
    assert!(t.elapsed() < std::time::Duration::from_secs(5));
    assert!(
        !out2.exists() || out2.join("summary.json").is_file(),
        "no half-written results"
    );
    // GNU `timeout` signals the run and then its process group: the run gets SIGINT twice
    // at once, which is one interrupt, not two (the results are written, as on Ctrl-C).
    let out3 = d.join("out3");
    let o = Command::new("timeout")
        .args(["--preserve-status", "-s", "INT", "1.5"])
        .arg(env!("CARGO_BIN_EXE_l4s"))
        .arg("run")
        .arg(&f)
        .arg("--out")
        .arg(&out3)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(
        err.contains("interrupted at") && err.contains("marked incomplete"),
        "{err}"
    );
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(out3.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["complete"], false);
}

#[test]
fn set_and_warmup_change_keys_and_several_files_run_or_check_in_one_command() {
    let d_guard = tmpdir("set");
    let d = d_guard.path();
    let a = d.join("a.toml");
    let b = d.join("b.toml");
    std::fs::write(&a, GOOD).unwrap();
    std::fs::write(&b, GOOD.replace("name = \"tiny\"", "name = \"tiny-b\"")).unwrap();
    // --set with a plain string, a TOML number and a table; --warmup.
    let o = l4s()
        .arg("run")
        .arg(&a)
        .arg("--out")
        .arg(d.join("o"))
        .args(["--set", "topology.rate=10Mbit", "--set", "flows.probe.pps=20"])
        .args([
            "--set",
            "topology.aqm={ kind = \"fifo\", limit = 100 }",
            "--warmup",
            "2s",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["queues"][0]["rate_bps"], 10_000_000);
    assert_eq!(s["queues"][0]["aqm"], "fifo");
    assert_eq!(s["scenario"]["warmup_s"], 2.0);
    // 20 probes a second of 200 B (the default size).
    assert!(
        (s["flows"][1]["throughput_bps"].as_f64().unwrap() - 20.0 * 8.0 * 200.0).abs() < 3000.0,
        "{}",
        s["flows"][1]
    );
    // A bad key names --set and the key; a bad value names the scenario key.
    let o = l4s()
        .arg("check")
        .arg(&a)
        .args(["--set", "topology.rat=1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("topology.rat: unknown field `rat`") && err.contains("(set by --set topology.rat)"),
        "{err}"
    );
    let o = l4s()
        .arg("check")
        .arg(&a)
        .args(["--set", "flows.nope.cc=cubic"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--set flows.nope.cc: no flow named \"nope\""));
    // Lines are the file's as written: a value a set replaced is at its line (even after
    // a set that added a line above it); a key only a set wrote has no line in the file.
    for (sets, says) in [
        (vec!["topology.rtt=abc"], "a.toml:9: topology.rtt: expected a duration"),
        (
            vec!["topology.aqm.target=5ms", "flows.p.cc=nope"],
            "a.toml:18: flows[0].cc: unknown congestion control \"nope\"",
        ),
        (
            vec!["topology.aqm.target=abc"],
            "a.toml: topology.aqm.target: expected a duration",
        ),
        (
            vec!["topology.aqm.bogus=1"],
            "a.toml: topology.aqm: unknown field `bogus`",
        ),
    ] {
        let mut c = l4s();
        c.arg("check").arg(&a);
        for s in &sets {
            c.args(["--set", s]);
        }
        let o = c.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{sets:?}: {err}");
    }
    // A warm-up given as --warmup is blamed on --warmup; as --set, on that set.
    let out = d.join("w");
    let out = out.to_str().unwrap();
    for (flags, by) in [
        (vec!["check", "--warmup", "500s"], "(set by --warmup)"),
        (vec!["run", "--warmup", "500s", "--out", out], "(set by --warmup)"),
        (
            vec!["check", "--set", "scenario.warmup=500s"],
            "(set by --set scenario.warmup)",
        ),
    ] {
        let o = l4s().arg(flags[0]).arg(&a).args(&flags[1..]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("the warm-up (500s) must be shorter") && err.contains(by),
            "{err}"
        );
        assert!(!d.join("w").exists());
    }
    let o = l4s().arg("check").arg(&a).args(["--set", "novalue"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("expected KEY=VALUE"));
    // Several files: each checked; each run into results/<its name> (here via cwd).
    let o = l4s().arg("check").arg(&a).arg(&b).output().unwrap();
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 2);
    let o = l4s()
        .current_dir(d)
        .args(["run", "-q", "a.toml", "b.toml"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(d.join("results/tiny/summary.json").is_file() && d.join("results/tiny-b/summary.json").is_file());
    let o = l4s()
        .arg("run")
        .arg(&a)
        .arg(&b)
        .arg("--out")
        .arg(d.join("x"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("several scenario files"));
    // A mistake in the last file stops the command before the first runs.
    let later = d.join("later");
    std::fs::create_dir_all(&later).unwrap();
    std::fs::write(later.join("a.toml"), GOOD).unwrap();
    std::fs::write(later.join("c.toml"), "[scenario\n").unwrap();
    let o = l4s()
        .current_dir(&later)
        .args(["run", "-q", "a.toml", "c.toml"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("c.toml:1: not valid TOML"));
    assert!(!later.join("results").exists());
    // Two files of one name would write one folder, the second over the first: refused
    // before either runs.
    std::fs::write(later.join("same.toml"), GOOD).unwrap();
    let o = l4s()
        .current_dir(&later)
        .args(["run", "-q", "a.toml", "same.toml"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("a.toml and same.toml both write results/tiny: give them different names (scenario.name)"),
        "{err}"
    );
    assert!(!later.join("results").exists());
    // --json is one document: for one file.
    let o = l4s()
        .current_dir(d)
        .args(["run", "--json", "a.toml", "b.toml"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--json prints one JSON document for one scenario file"));
    assert!(o.stdout.is_empty());
}

#[test]
fn absurd_intervals_and_durations_get_plain_messages() {
    let d_guard = tmpdir("absurd");
    let d = d_guard.path();
    let f = d.join("a.toml");
    std::fs::write(&f, GOOD).unwrap();
    let o = l4s()
        .arg("run")
        .arg(&f)
        .args(["--snapshot-interval", "1ns"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("at most every 1ms"));
    // Rows carry millisecond times: 1.5 ms would step 1, 2, 1, 2 ms.
    let o = l4s()
        .arg("run")
        .arg(&f)
        .args(["--snapshot-interval", "1.5ms"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("expected a whole number of milliseconds"));
    let o = l4s()
        .arg("run")
        .arg(&f)
        .args(["--duration", "1e400s"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is too large") && !err.contains("negative"), "{err}");
}

#[test]
fn bad_wifi_values() {
    // A Wi-Fi BSS whose station asks for an MCS its standard lacks, EDCA values outside
    // 802.11's ranges, a scan dwell longer than its period: exit 2 naming file, line, key.
    let bss = |station: &str, bss: &str| {
        format!(
            r#"[scenario]
duration = "2s"

[topology]
type = "custom"

[[topology.nodes]]
name = "ap"

[[topology.nodes]]
name = "sta"

[[topology.wifi]]
ap = "ap"
{bss}

[[topology.wifi.stations]]
node = "sta"
{station}

[[flows]]
name = "f"
type = "tcp"
cc = "reno"
from = "ap"
to = "sta"
"#
        )
    };
    assert_bad(
        "wifi-mcs",
        &bss("standard = \"ac\"\nmcs = 10", ""),
        20,
        "topology.wifi[0].stations[0].mcs",
        "0 to 9 for VHT",
    );
    assert_bad(
        "wifi-cw",
        &bss("mcs = 7", "edca = { be = { cw_max = 100 } }"),
        15,
        "topology.wifi[0].edca.be.cw_max",
        "2^k - 1",
    );
    assert_bad(
        "wifi-aifsn",
        &bss("mcs = 7", "station_edca = { vo = { aifsn = 1 } }"),
        15,
        "topology.wifi[0].station_edca.vo.aifsn",
        "2 to 15 for a non-AP STA",
    );
    assert_bad(
        "wifi-txop",
        &bss("mcs = 7", "edca = { be = { txop = \"10ms\" } }"),
        15,
        "topology.wifi[0].edca.be.txop",
        "at most 8.16ms",
    );
    assert_bad(
        "wifi-scan",
        &bss("mcs = 7\nscan = { period = \"100ms\", dwell = \"200ms\" }", ""),
        20,
        "topology.wifi[0].stations[0].scan.dwell",
        "shorter than its period",
    );
    // Multi-link operation: bands the standard lacks, 320 MHz outside 6 GHz, several links
    // without 802.11be.
    let two = "channels = [{ name = \"5g\", band = \"5\" }, { name = \"6g\", band = \"6\" }]";
    assert_bad(
        "wifi-band",
        &bss("standard = \"ac\"\nmcs = 7\nchannel = \"6g\"", two),
        21,
        "topology.wifi[0].stations[0].channel",
        "6 GHz band, which a \"ac\" (802.11ac) station lacks",
    );
    assert_bad(
        "wifi-320",
        &bss("standard = \"be\"\nbandwidth = 320\nmcs = 7\nchannel = \"5g\"", two),
        20,
        "topology.wifi[0].stations[0].bandwidth",
        "at most 160 MHz",
    );
    assert_bad(
        "wifi-mlo-standard",
        &bss("mcs = 7\nlinks = [{ channel = \"5g\" }, { channel = \"6g\" }]", two),
        20,
        "topology.wifi[0].stations[0].links",
        "expected standard = \"be\"",
    );
}

/// A reader that went away (`l4s run ... | head`) ends the command quietly with the status
/// a shell gives a process that SIGPIPE ended, 141, where printing panicked; a run it
/// ends leaves its results whole or not at all.
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    let d = tmpdir("pipe");
    let f = d.path().join("s.toml");
    std::fs::write(&f, GOOD).unwrap();
    let out = d.path().join("out");
    let runs: [Vec<&std::ffi::OsStr>; 2] = [
        vec!["check".as_ref(), f.as_os_str()],
        vec!["run".as_ref(), "--out".as_ref(), out.as_os_str(), f.as_os_str()],
    ];
    for args in runs {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = l4s().args(&args).stdout(writer).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(141), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
    }
    let mut left: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert!(left == ["s.toml"] || left == ["out", "s.toml"], "{left:?}");
    if left.len() == 2 {
        assert!(out.join("summary.json").is_file() && out.join("report.html").is_file());
    }
}

/// `l4s router` between interfaces that are not there says so, at the option that named
/// the first, before any check of their offloads (which would only say ethtool failed).
#[test]
fn the_router_names_a_missing_interface_first() {
    let o = l4s()
        .args([
            "router",
            "--in",
            "l4s-none-a0",
            "--out",
            "l4s-none-b0",
            "--rate",
            "10Mbit",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "l4s router: in: no interface named \"l4s-none-a0\" in this network namespace (see `ip link`)"
    );
}
