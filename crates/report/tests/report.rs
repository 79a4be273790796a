//! End-to-end tests on hand-built results directories (no simulator involved).

mod common;
use common::tmpdir;
use l4s_report::synth;
use l4s_report::{
    compare_table, compare_table_with, comparison, render_compare, render_compare_with, render_report, write_report,
    CompareOptions, ReportError,
};
use std::fs;
use std::path::Path;

fn svgs(html: &str) -> Vec<&str> {
    html.split("<svg")
        .skip(1)
        .map(|s| &s[..s.find("</svg>").expect("closed svg")])
        .collect()
}

/// Number of points of every polyline in an svg.
fn polyline_points(svg: &str) -> Vec<usize> {
    svg.split("<polyline")
        .skip(1)
        .map(|p| {
            let a = p.find("points=\"").unwrap() + 8;
            let b = a + p[a..].find('"').unwrap();
            p[a..b].split(' ').filter(|s| !s.is_empty()).count()
        })
        .collect()
}

fn title_of(svg: &str) -> &str {
    let a = svg.find("<title>").unwrap() + 7;
    &svg[a..a + svg[a..].find("</title>").unwrap()]
}

#[test]
fn full_report_is_self_contained_and_every_chart_has_data() {
    let dir_guard = tmpdir("full");
    let dir = dir_guard.path();
    let s = synth::healthy_dualpi2();
    synth::write_results_dir(dir, &s, 0.1, 3).unwrap();
    let html = render_report(dir).unwrap();
    assert!(!html.contains("http://") && !html.contains("https://"), "no URL at all");
    assert!(
        !html.contains("<script") && !html.contains("<link") && !html.contains("@import") && !html.contains("url(http")
    );
    let charts = svgs(&html);
    // Latency under load + 4 latency + CDF + CCDF (OWD) + sojourn CCDF + 2 throughput + 1
    // sojourn-over-time (the reverse queue never queues) + probability + utilisation + CE +
    // cwnd + srtt.
    assert_eq!(
        charts.len(),
        16,
        "{:?}",
        charts.iter().map(|c| title_of(c)).collect::<Vec<_>>()
    );
    for c in &charts {
        let pts = polyline_points(c);
        let has_path = c.contains("<path ") && c.contains(" d=\"M");
        assert!(
            pts.iter().any(|n| *n >= 2) || has_path,
            "chart without data: {}",
            title_of(c)
        );
        let t = title_of(c);
        assert!(
            t.contains("dumbbell-dualpi2, seed 1"),
            "title names scenario and seed: {t}"
        );
        assert!(
            t.contains("(ms")
                || t.contains("(%)")
                || t.contains("Mbit/s")
                || t.contains("kB")
                || t.contains("fraction"),
            "title has units: {t}"
        );
        assert!(
            c.contains("time (s)") || c.contains("delay (ms)") || c.contains("sojourn time (ms)"),
            "x axis with unit"
        );
    }
    // Content order: verdict, latency under load, tables, latency over time, distributions,
    // throughput, queues, ECN, cc state.
    let order = [
        "<h2>Verdict",
        "<h2>Latency under load",
        "<h3>Flows",
        "<h3>Queues",
        "<h2>One-way delay over time",
        "<h2>Delay distributions",
        "<h2>Throughput",
        "<h2>Queues over time",
        "<h2>ECN marking",
        "<h2>Congestion control state",
    ];
    let pos: Vec<usize> = order
        .iter()
        .map(|h| html.find(h).unwrap_or_else(|| panic!("{h} missing")))
        .collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]), "{pos:?}");
    assert!(html.contains("L4S working: L4S p99 10.4 ms vs classic 29.4 ms"));
    // The first chart: throughput over delay on one time axis, two panels in one svg, each
    // flow's throughput line and its mean and p99 delay lines, and the time axis labelled
    // once, under the lower panel.
    let lul = charts[0];
    assert!(title_of(lul).starts_with("Latency under load: throughput and one-way delay of every flow"));
    assert_eq!(lul.matches("<clipPath").count(), 2);
    assert_eq!(
        polyline_points(lul).len(),
        4 + 1 + 4 * 2,
        "flows, capacity, mean and p99 each"
    );
    assert_eq!(lul.matches(">time (s)<").count(), 1);
    assert!(lul.contains(">throughput (Mbit/s)<") && lul.contains(">one-way delay (ms)<"));
    // Latency over time: band + mean + p99 per flow.
    let lat: Vec<&&str> = charts
        .iter()
        .filter(|c| title_of(c).starts_with("One-way delay over time"))
        .collect();
    assert_eq!(lat.len(), 4);
    for c in lat {
        assert_eq!(polyline_points(c).len(), 2, "mean and p99 lines");
        assert_eq!(c.matches("<path fill").count(), 1, "one min–max band");
    }
    // Per-flow throughput: one line per flow; stacked: one area per flow.
    let per = charts
        .iter()
        .find(|c| title_of(c).starts_with("Throughput over time per flow"))
        .unwrap();
    // Four flows, and the bottleneck's capacity as a dashed line (its rate, constant here).
    assert_eq!(polyline_points(per).len(), 5);
    assert!(per.contains("capacity: bottleneck") && per.contains("#333333"), "{per}");
    let st = charts
        .iter()
        .find(|c| title_of(c).starts_with("Throughput over time, stacked"))
        .unwrap();
    assert_eq!(st.matches("<path fill").count(), 4);
    // cwnd: only the two bulk flows (probes have none).
    let cw = charts
        .iter()
        .find(|c| title_of(c).starts_with("Congestion window"))
        .unwrap();
    assert_eq!(polyline_points(cw).len(), 2);
    // Same colour for a flow everywhere: the table swatch colour appears in the charts.
    let a = html.find("class=\"sw\" style=\"background:").unwrap() + 29;
    let color = &html[a..a + 7];
    assert!(per.contains(&format!("stroke=\"{color}\"")) && st.contains(&format!("fill=\"{color}\"")));
    fs::remove_dir_all(dir).unwrap();
}

/// Twenty flows: time series per traffic class instead of one chart or line per flow, a
/// throughput axis scaled to what is drawn, titles wrapped to the chart's width, and the
/// run date the titles carry stated in the footer.
#[test]
fn many_flows_are_drawn_per_class_on_axes_that_fit_them() {
    let dir_guard = tmpdir("many");
    let dir = dir_guard.path();
    // 10 L4S and 10 classic flows of 5 Mbit/s each.
    let s = synth::summary_with_flows(20, 20.0, &|i| format!("flow-{i}"));
    synth::write_results_dir(dir, &s, 0.1, 4).unwrap();
    fs::write(dir.join("run-info.json"), r#"{"started_utc": "2026-11-27T05:00:00Z"}"#).unwrap();
    let html = render_report(dir).unwrap();
    let charts = svgs(&html);
    let lat: Vec<&&str> = charts
        .iter()
        .filter(|c| title_of(c).starts_with("One-way delay over time"))
        .collect();
    assert_eq!(lat.len(), 2, "one per class, not 20");
    assert!(
        title_of(lat[0]).contains("of the L4S (10 flows)"),
        "{}",
        title_of(lat[0])
    );
    assert!(
        title_of(lat[1]).contains("of the classic (10 flows)"),
        "{}",
        title_of(lat[1])
    );
    let per = charts
        .iter()
        .find(|c| title_of(c).starts_with("Throughput over time per class of flows"))
        .unwrap();
    assert_eq!(polyline_points(per).len(), 3, "two classes and the capacity");
    // The classes carry about 50 Mbit/s each of the 100: the axis ends near 100 (the
    // capacity, within twice the largest class), not at the sum of the stacked chart's
    // 20 flows, and its labels are Mbit/s.
    assert!(per.contains(">throughput (Mbit/s)<"));
    let lul = charts[0];
    assert!(title_of(lul).contains("of each class of flows"));
    assert_eq!(polyline_points(lul).len(), 2 + 1 + 2 * 2);
    // Every title line fits the 960 px chart: none longer than 115 characters.
    for c in &charts {
        for line in c.split("<text class=\"title\"").skip(1) {
            let a = line.find('>').unwrap() + 1;
            let text = &line[a..a + line[a..].find("</text>").unwrap()];
            assert!(text.chars().count() <= 115, "{text}");
        }
    }
    assert!(title_of(lul).contains("run 2026-11-27"));
    assert!(html.contains("The run date, 2026-11-27, is from run-info.json"));
    // The delay distributions and the per-flow columns over time are per class too: two
    // lines each (the classic one dashed), the columns' in a band from lowest to highest.
    let cdfs: Vec<&&str> = charts
        .iter()
        .filter(|c| title_of(c).contains("of one-way delay per class of flows, their packets pooled"))
        .collect();
    assert_eq!(cdfs.len(), 2, "CDF and CCDF");
    for c in &cdfs {
        assert_eq!(polyline_points(c).len(), 2, "{}", title_of(c));
        assert!(c.contains(">L4S (10 flows)<") && c.contains(">classic (10 flows)<"));
        assert_eq!(
            c.matches("stroke-dasharray=\"7 4\"").count(),
            2,
            "classic line and its legend"
        );
    }
    for start in ["CE-marked fraction", "Congestion window", "Smoothed RTT"] {
        let c = charts
            .iter()
            .find(|c| title_of(c).starts_with(start))
            .unwrap_or_else(|| panic!("a chart of {start}"));
        assert!(
            title_of(c).contains("per class of flows: mean of the flows"),
            "{}",
            title_of(c)
        );
        assert_eq!(polyline_points(c).len(), 2, "{}: a mean per class", title_of(c));
        assert_eq!(c.matches("<path fill").count(), 2, "{}: a band per class", title_of(c));
    }
    assert!(
        charts.iter().all(|c| !c.contains(">flow-19<")),
        "no flow drawn on its own"
    );
    // A comparison of two such runs overlays the classes, not the flows.
    let other_guard = tmpdir("many-b");
    synth::write_results_dir(other_guard.path(), &s, 0.1, 5).unwrap();
    let page = render_compare(&[dir.to_path_buf(), other_guard.path().to_path_buf()]).unwrap();
    assert!(page.contains("<h2>Per class of flows, runs overlaid</h2>"));
    let titles: Vec<&str> = svgs(&page).into_iter().map(title_of).collect();
    assert_eq!(titles.len(), 4, "{titles:?}");
    assert!(titles[0].starts_with("CDF of one-way delay per class of flows, their packets pooled"));
    assert!(titles[2].starts_with("CCDF of one-way delay of the L4S flows, their packets pooled"));
    assert!(titles[3].starts_with("CCDF of one-way delay of the classic flows, their packets pooled"));
    // Two classes by two runs on the charts of all runs; two runs on each class's.
    for (k, svg) in svgs(&page).into_iter().enumerate() {
        assert_eq!(
            polyline_points(svg).len(),
            if k < 2 { 4 } else { 2 },
            "{}",
            title_of(svg)
        );
    }
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn long_series_are_downsampled_to_the_pixel_grid() {
    let dir_guard = tmpdir("long");
    let dir = dir_guard.path();
    // 600 s at 10 ms: 60 000 rows per flow.
    let s = synth::summary_with_flows(2, 600.0, &|i| format!("f{i}"));
    synth::write_results_dir(dir, &s, 0.01, 5).unwrap();
    let html = render_report(dir).unwrap();
    let mut lines = 0;
    for c in svgs(&html) {
        for n in polyline_points(c) {
            assert!(n <= 2000, "{n} points in a polyline of {}", title_of(c));
            lines += 1;
        }
        for p in c.split("<path fill").skip(1) {
            let d = &p[p.find(" d=\"").unwrap()..];
            let n = d[..d.find("\"/>").unwrap()].matches(['M', 'L']).count();
            assert!(n <= 2 * 2000, "{n} points in an area of {}", title_of(c));
        }
    }
    assert!(lines > 10);
    let per = svgs(&html)
        .into_iter()
        .find(|c| title_of(c).starts_with("Throughput over time per flow"))
        .unwrap();
    let pts = polyline_points(per);
    // Two flows, then the capacity line.
    assert_eq!(pts.len(), 3);
    let pts = &pts[..2];
    assert!(
        pts.iter().all(|n| *n >= 800 && *n <= 2 * 864),
        "{pts:?}: min and max of each of the 864 pixel columns"
    );
    assert!(html.len() < 5_000_000, "{} bytes", html.len());
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn flow_names_are_escaped_everywhere() {
    let dir_guard = tmpdir("xss");
    let dir = dir_guard.path();
    let evil = "<script>alert(1)</script>";
    let mut s = synth::summary_with_flows(2, 20.0, &|i| if i == 0 { evil.to_string() } else { "a\"b'c&d".into() });
    s.scenario.name = "<img src=x onerror=alert(2)>".into();
    s.scenario.description = "</title><script>".into();
    synth::write_results_dir(dir, &s, 0.1, 1).unwrap();
    let html = render_report(dir).unwrap();
    assert!(!html.contains("<script"), "raw script tag in the report");
    if let Some(i) = html.find("<img") {
        panic!("raw img tag in the report: {}", &html[i.saturating_sub(200)..i + 50]);
    }
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("a&quot;b&#39;c&amp;d"));
    // Still charted: the escaped name is in the legends.
    assert!(
        svgs(&html)
            .iter()
            .filter(|c| c.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
            .count()
            >= 5
    );
    // Terminal table: control characters are neutralised.
    let mut s2 = s.clone();
    s2.flows[0].name = "x\u{1b}[31mred".into();
    let d2_guard = tmpdir("xss2");
    let d2 = d2_guard.path();
    synth::write_results_dir(d2, &s2, 0.1, 1).unwrap();
    let t = compare_table(&[d2.to_path_buf()]).unwrap();
    assert!(!t.contains('\u{1b}'));
    fs::remove_dir_all(dir).unwrap();
    fs::remove_dir_all(d2).unwrap();
}

#[test]
fn write_report_is_atomic_and_in_place() {
    let dir_guard = tmpdir("write");
    let dir = dir_guard.path();
    synth::write_results_dir(dir, &synth::healthy_dualpi2(), 0.5, 1).unwrap();
    let p = write_report(dir).unwrap();
    assert_eq!(p, dir.join("report.html"));
    let html = fs::read_to_string(&p).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    let left: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().contains("tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // A second write replaces the first.
    write_report(dir).unwrap();
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn summary_only_directory_renders_with_notes() {
    let dir_guard = tmpdir("only-summary");
    let dir = dir_guard.path();
    let s = synth::healthy_dualpi2();
    fs::write(dir.join("summary.json"), serde_json::to_vec(&s).unwrap()).unwrap();
    let html = render_report(dir).unwrap();
    assert!(html.contains("No snapshot files"));
    assert!(html.contains("distributions.csv is absent"));
    let charts = svgs(&html);
    assert_eq!(
        charts.len(),
        3,
        "OWD CDF + CCDF and sojourn CCDF from the summary's percentiles"
    );
    // Old-format snapshots (today's simulator: owd_max_ms only, no distributions).
    fs::write(dir.join("snapshots-flows.csv"), "time_s,flow,throughput_bps,packets,ce_fraction,owd_max_ms,cwnd_bytes,srtt_ms,pacing_bps,alpha\n0.100,prague,14292160,118,0.000000,10.571,115840,20.458,93852459,0.000000\n0.100,cubic,11869760,98,0.000000,13.653,115840,20.463,90577128,\n0.200,prague,83936160,693,0.906205,18.226,263536,25.867,82575601,0.144440\n0.200,cubic,15018880,124,0.000000,83.964,324352,72.304,71774708,\n").unwrap();
    let html = render_report(dir).unwrap();
    assert!(html.contains("carry only the per-interval maximum"));
    assert!(svgs(&html)
        .iter()
        .any(|c| title_of(c).starts_with("One-way delay over time of &#39;prague&#39;")));
    fs::remove_dir_all(dir).unwrap();
}

fn expect_err(dir: &Path) -> ReportError {
    match render_report(dir) {
        Ok(_) => panic!("expected an error for {}", dir.display()),
        Err(e) => e,
    }
}

/// Write `text` as the folder's `summary.json` and return the error the report gives.
fn summary_err(dir: &Path, text: &str) -> String {
    fs::write(dir.join("summary.json"), text).unwrap();
    expect_err(dir).to_string()
}

#[test]
fn bad_inputs_give_errors_that_name_the_file_and_line() {
    let dir_guard = tmpdir("bad");
    let dir = dir_guard.path();
    let e = expect_err(dir);
    assert!(matches!(e, ReportError::MissingSummary { .. }));
    assert!(e.to_string().contains("no summary.json"));
    // Nothing there, or the folder of a set of variants: said so.
    let e = expect_err(&dir.join("nowhere")).to_string();
    assert!(
        e.ends_with("nowhere: no such directory (give a results directory that `l4s run` wrote)"),
        "{e}"
    );
    let set = dir.join("set");
    for v in ["l4s", "classic"] {
        fs::create_dir_all(set.join(v)).unwrap();
        fs::write(set.join(v).join("summary.json"), "{}").unwrap();
    }
    fs::write(set.join("variants.json"), "{}").unwrap();
    let e = expect_err(&set).to_string();
    let (c, l) = (set.join("classic"), set.join("l4s"));
    assert!(
        e.ends_with(&format!(
            "set holds a set of variants (variants.json), a results directory each: give one or more of {} {}",
            c.display(),
            l.display()
        )),
        "{e}"
    );
    fs::remove_dir_all(&set).unwrap();

    let good = serde_json::to_string(&synth::healthy_dualpi2()).unwrap();
    fs::write(dir.join("summary.json"), &good[..good.len() / 2]).unwrap();
    let e = expect_err(dir);
    assert!(
        matches!(e, ReportError::Summary { .. }) && e.to_string().contains("summary.json: not valid JSON"),
        "{e}"
    );

    let version = |v: &str| good.replace("\"schema_version\":1", &format!("\"schema_version\":{v}"));
    let e = summary_err(dir, &version("2"));
    assert!(
        e.contains("schema_version 2 is not supported (this build reads 1)"),
        "{e}"
    );

    // Valid JSON that is not a summary: no version, or one that is not a number.
    for text in ["[1]", "{\"flows\":[]}", "3"] {
        let e = summary_err(dir, text);
        assert!(
            e.contains("no schema_version: not an l4s-lab summary.json"),
            "{text}: {e}"
        );
    }
    let e = summary_err(dir, &version("null"));
    assert!(e.contains("schema_version null is not supported"), "{e}");
    let e = summary_err(dir, &format!("{good} x"));
    assert!(e.contains("not valid JSON"), "{e}");
    let e = summary_err(dir, &good.replace("\"flows\":[", "\"flowz\":["));
    assert!(e.contains("does not match schema 1"), "{e}");

    fs::write(dir.join("summary.json"), &good).unwrap();
    let cases: [(&str, &str, usize, &str); 8] = [
        (
            "snapshots-flows.csv",
            "time_s,flow,throughput_bps\n0.1,a,5\n0.2,a\n",
            3,
            "expected 3 fields",
        ),
        (
            "snapshots-flows.csv",
            "time_s,flow,throughput_bps\n0.1,a,5\n0.2,a,fast\n",
            3,
            "column throughput_bps: expected a number, found \"fast\"",
        ),
        (
            "snapshots-flows.csv",
            "flow,throughput_bps\na,5\n",
            1,
            "no `time_s` column",
        ),
        ("snapshots-flows.csv", "", 1, "empty file"),
        (
            "snapshots-queues.csv",
            // The csv crate reads an unterminated quote as running to the end of the file,
            // so the row comes up short.
            "time_s,queue,utilization\n0.1,\"bottle,neck,0.5\n",
            2,
            "expected 3 fields",
        ),
        (
            "distributions.csv",
            "kind,name,value_ms,cdf\nowd,a,1.0,0.5\nowd,a,2.0,1.5\n",
            3,
            "cdf: 1.5 is outside 0..1",
        ),
        (
            "distributions.csv",
            "kind,name,value_ms,cdf\nlatency,a,1.0,0.5\n",
            2,
            "expected owd, rtt, sojourn, frame_delay or access_delay",
        ),
        (
            "snapshots-queues.csv",
            "time_s,queue\n\u{0}\u{ff}garbage\n",
            2,
            "expected 2 fields",
        ),
    ];
    for (file, text, line, what) in cases {
        for f in ["snapshots-flows.csv", "snapshots-queues.csv", "distributions.csv"] {
            let _ = fs::remove_file(dir.join(f));
        }
        fs::write(dir.join(file), text).unwrap();
        let e = expect_err(dir);
        let msg = e.to_string();
        match &e {
            ReportError::Csv { path, line: l, .. } => {
                assert_eq!(path, &dir.join(file));
                assert_eq!(*l, line, "{msg}");
            }
            other => panic!("{other:?}"),
        }
        assert!(
            msg.contains(file) && msg.contains(&format!("line {line}")) && msg.contains(what),
            "{msg}"
        );
    }
    // Invalid UTF-8.
    for f in ["snapshots-flows.csv", "snapshots-queues.csv", "distributions.csv"] {
        let _ = fs::remove_file(dir.join(f));
    }
    fs::write(dir.join("snapshots-flows.csv"), b"time_s,flow\n0.1,\xff\xfe\n").unwrap();
    assert!(expect_err(dir).to_string().contains("line 2: not UTF-8"));
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn truncated_and_garbage_files_never_panic() {
    let src_guard = tmpdir("trunc-src");
    let src = src_guard.path();
    let mut s = synth::healthy_dualpi2();
    s.scenario.duration_s = 3.0;
    synth::write_results_dir(src, &s, 0.1, 9).unwrap();
    let dir_guard = tmpdir("trunc");
    let dir = dir_guard.path();
    let files = [
        "summary.json",
        "snapshots-flows.csv",
        "snapshots-queues.csv",
        "distributions.csv",
    ];
    let orig: Vec<Vec<u8>> = files.iter().map(|f| fs::read(src.join(f)).unwrap()).collect();
    let mut rng = synth::Rng::new(42);
    let mut ok = 0;
    let mut err = 0;
    for round in 0..400 {
        for (f, b) in files.iter().zip(&orig) {
            fs::write(dir.join(f), b).unwrap();
        }
        let k = round % files.len();
        let mut b = orig[k].clone();
        match (round / 4) % 4 {
            0 => b.truncate((rng.next_f64() * b.len() as f64) as usize),
            1 => {
                for _ in 0..8 {
                    let i = (rng.next_f64() * b.len() as f64) as usize;
                    if i < b.len() {
                        b[i] = (rng.next_f64() * 256.0) as u8;
                    }
                }
            }
            2 => {
                let i = (rng.next_f64() * b.len() as f64) as usize;
                b.splice(i..i, b",,\"\n-1e309,NaN,inf,1e308,\n".iter().copied());
            }
            _ => {
                b = (0..(rng.next_f64() * 500.0) as usize)
                    .map(|_| (rng.next_f64() * 256.0) as u8)
                    .collect()
            }
        }
        fs::write(dir.join(files[k]), &b).unwrap();
        match render_report(dir) {
            Ok(h) => {
                assert!(h.ends_with("</html>\n"));
                ok += 1;
            }
            Err(e) => {
                assert!(
                    e.to_string().contains(files[k]) || e.to_string().contains("summary.json"),
                    "{e}"
                );
                err += 1;
            }
        }
    }
    assert!(ok > 0 && err > 0, "ok {ok}, err {err}");
    fs::remove_dir_all(dir).unwrap();
    fs::remove_dir_all(src).unwrap();
}

#[test]
fn extreme_values_render() {
    let dir_guard = tmpdir("extreme");
    let dir = dir_guard.path();
    let mut s = synth::healthy_dualpi2();
    s.flows[0].owd_ms = Default::default();
    s.flows[1].throughput_bps = 1e300;
    s.queues[0].utilization = -3.0;
    s.scenario.duration_s = 0.0;
    fs::write(dir.join("summary.json"), serde_json::to_vec(&s).unwrap()).unwrap();
    fs::write(
        dir.join("snapshots-flows.csv"),
        "time_s,flow,throughput_bps,owd_max_ms\n0,a,1e308,0\n0,a,1e308,0\n1e12,a,-5,1e200\n",
    )
    .unwrap();
    fs::write(dir.join("snapshots-queues.csv"), "time_s,queue,probability\n0,q,0\n").unwrap();
    fs::write(
        dir.join("distributions.csv"),
        "kind,name,value_ms,cdf\nowd,prague,0,0\nowd,prague,0,1\n",
    )
    .unwrap();
    let html = render_report(dir).unwrap();
    assert!(!html.contains("NaN") && !html.contains("inf,"), "no NaN coordinates");
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn compare_matches_flows_by_name_and_reports_differences() {
    let a_guard = tmpdir("cmp-a");
    let a = a_guard.path();
    let b_guard = tmpdir("cmp-b");
    let b = b_guard.path();
    let s1 = synth::healthy_dualpi2();
    let mut s2 = s1.clone();
    s2.scenario.name = "dumbbell-fifo".into();
    s2.flows[0].owd_ms.p50 += 100.0;
    s2.flows[0].owd_ms.p99 += 110.0;
    s2.flows[0].owd_ms.p999 += 120.0;
    s2.flows[0].throughput_bps = 29.11e6;
    s2.flows[0].loss_fraction = 0.0005;
    s2.flows.remove(3);
    let mut extra = s2.flows[2].clone();
    extra.name = "only-in-b".into();
    s2.flows.push(extra);
    synth::write_results_dir(a, &s1, 0.1, 1).unwrap();
    synth::write_results_dir(b, &s2, 0.1, 2).unwrap();
    let dirs = vec![a.to_path_buf(), b.to_path_buf()];
    let t = compare_table(&dirs).unwrap();
    let prague2 = t
        .lines()
        .find(|l| l.starts_with("prague ") && l.split_whitespace().nth(1) == Some("2"))
        .unwrap();
    for want in ["+100", "+110", "+120", "-40.44 Mbit/s", "+0.050 pp"] {
        assert!(prague2.contains(want), "{want} in {prague2}");
    }
    assert!(t.lines().next().unwrap().contains("[good] L4S working"));
    assert!(
        !t.contains("note:"),
        "complete runs over one window: nothing to note\n{t}"
    );
    let html = render_compare(&dirs).unwrap();
    assert!(!html.contains("http://") && !html.contains("https://"));
    assert!(html.contains("+100 (+980 %)"), "Δp50 with relative change");
    assert!(html.contains("Not in every run"));
    let charts = svgs(&html);
    for c in svgs(&html) {
        assert!(
            polyline_points(c).iter().any(|n| *n >= 2),
            "compare chart without a line: {}",
            title_of(c)
        );
    }
    // Overall CDF + CCDF, then one CCDF per flow name (5 names).
    assert_eq!(charts.len(), 2 + 5);
    // Shared x axis: every chart has the same x tick labels.
    // x tick labels and the x axis label (the y label, also centred, is left out).
    let ticks = |c: &str| -> String {
        let v: Vec<&str> = c
            .split("text-anchor=\"middle\">")
            .skip(1)
            .map(|p| &p[..p.find('<').unwrap()])
            .collect();
        v[..v.len() - 1].join(",")
    };
    let t0 = ticks(charts[0]);
    for c in &charts {
        assert_eq!(ticks(c), t0, "shared x axis: {}", title_of(c));
    }
    // Same colour per flow name in both runs; runs differ by dash.
    let all = charts[1];
    // The per-run flow tables give prague the same swatch colour in both runs.
    let swatches: Vec<&str> = html
        .match_indices("class=\"sw\" style=\"background:")
        .map(|(i, _)| &html[i + 29..i + 36])
        .collect();
    let prague_color = swatches[0];
    let n_flows_run1 = 4;
    assert_eq!(
        swatches[n_flows_run1], prague_color,
        "prague is first in both runs' tables"
    );
    assert!(
        all.matches(&format!("stroke=\"{prague_color}\"")).count() >= 3,
        "prague in both runs (+ legend)"
    );
    assert!(all.contains("stroke-dasharray=\"8 4\""));
    assert!(matches!(render_compare(&[]), Err(ReportError::NoRuns)));
    assert!(matches!(
        compare_table(&[a.join("nope")]),
        Err(ReportError::MissingSummary { .. })
    ));
    fs::remove_dir_all(a).unwrap();
    fs::remove_dir_all(b).unwrap();
}

#[test]
fn lines_break_where_a_flow_stops() {
    let dir_guard = tmpdir("gaps");
    let dir = dir_guard.path();
    let s = synth::healthy_dualpi2();
    fs::write(dir.join("summary.json"), serde_json::to_vec(&s).unwrap()).unwrap();
    let mut csv = String::from("time_s,flow,throughput_bps,owd_max_ms\n");
    for i in 1..=100 {
        let t = i as f64 * 0.1;
        // prague: present 0.1–3 s and 6–10 s (rows missing in between);
        // cubic: every row, but empty cells 4–5 s.
        if !(3.05..5.95).contains(&t) {
            csv.push_str(&format!("{t:.1},prague,50000000,10.5\n"));
        }
        let cell = if (4.05..5.05).contains(&t) {
            String::new()
        } else {
            "40000000".into()
        };
        csv.push_str(&format!("{t:.1},cubic,{cell},20\n"));
    }
    fs::write(dir.join("snapshots-flows.csv"), csv).unwrap();
    let html = render_report(dir).unwrap();
    let per = svgs(&html)
        .into_iter()
        .find(|c| title_of(c).starts_with("Throughput over time per flow"))
        .unwrap();
    assert_eq!(polyline_points(per).len(), 4, "two segments for each flow");
    let lat = svgs(&html)
        .into_iter()
        .find(|c| title_of(c).starts_with("One-way delay over time of &#39;prague"))
        .unwrap();
    assert_eq!(polyline_points(lat), vec![30, 41]);
    fs::remove_dir_all(dir).unwrap();
}

/// A run with a media flow and an application flow: their tables show the figures of the
/// summary, and the media charts are drawn from the snapshot columns.
#[test]
fn media_and_application_tables_and_charts() {
    let dir_guard = tmpdir("media");
    let dir = dir_guard.path();
    let mut s = synth::healthy_dualpi2();
    let mut p = s.flows[0].owd_ms;
    p.p50 = 23.5;
    p.p99 = 31.25;
    s.flows[0].media = Some(l4s_metrics::summary::MediaSummary {
        profile: "xr-h265".into(),
        controller: "scream".into(),
        l4s: true,
        fps: 60.0,
        frames_sent: 3000,
        frames_complete: 2990,
        frames_late: 17,
        frames_incomplete: 10,
        bad_frame_fraction: 27.0 / 3000.0,
        frame_delay_ms: p,
        deadline_ms: 16.666666,
        stall_time_s: 0.25,
        stall_fraction: 0.005,
        stall_gap_ms: 100.0,
        received_fps: 59.8,
        target_bitrate_mean_bps: 12.5e6,
        target_bitrate_min_bps: 5e6,
        target_bitrate_max_bps: 20e6,
        frames_discarded: 0,
        feedback_reports: 3000,
        feedback_malformed: 0,
        min_bitrate_bps: 2e6,
        max_bitrate_bps: 4e7,
        time_at_min_fraction: 0.0,
    });
    let mut c = std::collections::BTreeMap::new();
    c.insert(
        "page".to_string(),
        l4s_metrics::summary::CompletionSummary {
            count: 12,
            time_ms: p,
            bytes: 12_000_000,
            goodput_bps: 4.5e6,
        },
    );
    s.flows[1].app = Some(l4s_metrics::summary::AppSummary {
        app: "web".into(),
        completions: c,
    });
    synth::write_results_dir(dir, &s, 0.1, 3).unwrap();
    // Give the first flow media columns in its snapshots.
    let path = dir.join("snapshots-flows.csv");
    let text = fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().to_string();
    let cols: Vec<&str> = header.split(',').collect();
    let (ti, fi) = (
        cols.iter().position(|c| *c == "target_bps").unwrap(),
        cols.iter().position(|c| *c == "frames").unwrap(),
    );
    let mut out = header.clone() + "\n";
    for l in lines {
        let mut v: Vec<String> = l.split(',').map(String::from).collect();
        if v[1] == s.flows[0].name {
            v[ti] = "12500000".into();
            v[fi] = "6".into();
        }
        out += &(v.join(",") + "\n");
    }
    fs::write(&path, out).unwrap();
    let html = render_report(dir).unwrap();
    assert!(html.contains("<h3>Real-time media</h3>"));
    assert!(html.contains("xr-h265 / scream (L4S)"));
    assert!(
        html.contains("<td>23.5</td><td>31.25</td>") || html.contains("<td>23.50</td><td>31.25</td>"),
        "{}",
        &html[html.find("Real-time media").unwrap()..][..1500]
    );
    let media_part = &html[html.find("Real-time media").unwrap()..][..2000];
    assert!(
        media_part.contains("0.25 s (0.500 %)"),
        "stall time and fraction: {media_part}"
    );
    assert!(html.contains("<h3>Applications</h3>") && html.contains("web / "));
    let titles: Vec<String> = svgs(&html).iter().map(|c| title_of(c).to_string()).collect();
    assert!(
        titles.iter().any(|t| t.starts_with("Encoder target bitrate")),
        "{titles:?}"
    );
    assert!(
        titles
            .iter()
            .any(|t| t.starts_with("Complete frames received per second")),
        "{titles:?}"
    );
    // 6 frames per 100 ms interval are 60 frames per second on the chart's axis.
    let fps = svgs(&html)
        .into_iter()
        .find(|c| title_of(c).starts_with("Complete frames"))
        .unwrap();
    assert!(
        fps.contains(">60<") || fps.contains(">60.0<") || fps.contains(">63<"),
        "axis reaches 60 frames/s"
    );
}

/// `compare` on runs with a media flow and an application flow: their frame delays, late
/// or incomplete frames, stalls and completion times side by side with differences from
/// run 1, in the terminal table and the page; runs named by their labels; the delay axis
/// on a log scale on request; one label per run or an error that says so.
#[test]
fn compare_shows_media_and_application_metrics_with_labels() {
    let mk = |tag: &str, frame_p99: f64, bad: f64, page_p50: f64| {
        let d_guard = tmpdir(tag);
        let d = d_guard.path();
        let mut s = synth::healthy_dualpi2();
        let mut p = s.flows[0].owd_ms;
        p.p50 = 20.0;
        p.p99 = frame_p99;
        p.p999 = frame_p99 + 5.0;
        s.flows[0].media = Some(synth::media(3600, bad, 0.01, p));
        let mut t = s.flows[1].owd_ms;
        t.p50 = page_p50;
        t.p99 = 2.0 * page_p50;
        t.max = 3.0 * page_p50;
        s.flows[1].app = Some(l4s_metrics::summary::AppSummary {
            app: "web".into(),
            completions: [(
                "page".to_string(),
                l4s_metrics::summary::CompletionSummary {
                    count: 12,
                    time_ms: t,
                    bytes: 4_800_000,
                    goodput_bps: 8e6,
                },
            )]
            .into_iter()
            .collect(),
        });
        synth::write_results_dir(d, &s, 0.1, 2).unwrap();
        d_guard
    };
    let a = mk("cmp-media-a", 31.5, 0.02, 400.0);
    let b = mk("cmp-media-b", 95.0, 0.25, 1250.0);
    let dirs = vec![a.path().to_path_buf(), b.path().to_path_buf()];
    let opts = CompareOptions {
        labels: vec!["L4S, Wi-Fi".into(), "classic, Wi-Fi".into()],
        log_x: true,
    };
    let t = compare_table_with(&dirs, &opts).unwrap();
    assert!(
        t.contains("run 1: L4S, Wi-Fi [") && t.contains("run 2: classic, Wi-Fi ["),
        "{t}"
    );
    let media = &t[t.find("real-time media").expect("media table")..];
    let row = media.lines().find(|l| l.contains("2 classic, Wi-Fi")).unwrap();
    // Frame delay p99 95 ms, +63.5 ms against run 1; 25 % late or incomplete, +23 pp.
    assert!(
        row.contains("95.00") && row.contains("+63.5") && row.contains("25.0 %") && row.contains("+23.000 pp"),
        "{row}"
    );
    let apps = &t[t.find("applications: completion times").expect("apps table")..];
    let row = apps.lines().find(|l| l.contains("2 classic, Wi-Fi")).unwrap();
    // Pages: p50 1250 ms, +850 against run 1; p99 2500, +1700.
    assert!(
        row.contains("page") && row.contains("1250") && row.contains("+850") && row.contains("+1700"),
        "{row}"
    );
    let (html, figures) = render_compare_with(&dirs, &opts).unwrap();
    assert!(html.contains("<h3>Real-time media</h3>") && html.contains("<h3>Applications: completion times</h3>"));
    assert!(html.contains("Verdict of run 1: L4S, Wi-Fi"));
    // Per-run tables include the media and application tables of each run.
    assert_eq!(html.matches("<h3>Real-time media</h3>").count(), 1 + 2);
    // Every chart's delay axis is logarithmic, and the PNG export gets every chart.
    assert_eq!(figures.len(), svgs(&html).len());
    for (_, svg) in &figures {
        assert!(svg.contains("one-way delay (ms), log scale"), "{svg}");
    }
    // One reading of the runs gives the same table, page and charts as the two calls.
    let both = comparison(&dirs, &opts).unwrap();
    assert_eq!((both.table, both.html, both.figures), (t, html, figures));
    // Without the option, no log axis and no labels.
    let plain = render_compare(&dirs).unwrap();
    assert!(!plain.contains("one-way delay (ms), log scale<"));
    assert!(plain.contains("cmp-media-a (dumbbell-dualpi2, seed 1)"));
    let e = compare_table_with(
        &dirs,
        &CompareOptions {
            labels: vec!["one".into()],
            log_x: false,
        },
    )
    .unwrap_err();
    assert!(matches!(e, ReportError::Labels { labels: 1, runs: 2 }), "{e}");
    assert!(e.to_string().contains("--label given 1 times for 2 runs"));
    assert!(!compare_table(&dirs).unwrap().contains("L4S, Wi-Fi"));
    fs::remove_dir_all(&a).unwrap();
    fs::remove_dir_all(&b).unwrap();
}

#[test]
fn the_terminal_comparison_notes_a_run_stopped_early_other_windows_and_no_flow_in_common() {
    let (a_guard, b_guard, c_guard) = (tmpdir("note-a"), tmpdir("note-b"), tmpdir("note-c"));
    let (a, b, c) = (a_guard.path(), b_guard.path(), c_guard.path());
    let s1 = synth::healthy_dualpi2();
    let (w, dur) = (s1.scenario.warmup_s, s1.scenario.duration_s);
    // Stopped early, at 80 % of the run.
    let mut s2 = s1.clone();
    s2.complete = false;
    s2.reached_s = Some(w + (dur - w) * 0.8);
    synth::write_results_dir(a, &s1, 0.1, 1).unwrap();
    synth::write_results_dir(b, &s2, 0.1, 2).unwrap();
    let t = compare_table(&[a.to_path_buf(), b.to_path_buf()]).unwrap();
    let r = s2.reached_s.unwrap();
    for want in [
        format!(
            "note: run 2 was stopped at {r:.1} s of {dur:.1} s (marked incomplete): its figures cover {w:.1}–{r:.1} s"
        ),
        format!("note: the runs' figures cover different windows: run 1 {w:.1}–{dur:.1} s, run 2 {w:.1}–{r:.1} s"),
    ] {
        assert!(t.contains(&want), "{want}\n{t}");
    }
    assert!(!t.contains("nothing to set side by side"));
    // No flow of one name in both: said so.
    let mut s3 = s1.clone();
    for f in &mut s3.flows {
        f.name = format!("other-{}", f.name);
    }
    synth::write_results_dir(c, &s3, 0.1, 3).unwrap();
    let t = compare_table(&[a.to_path_buf(), c.to_path_buf()]).unwrap();
    assert!(
        t.contains("note: no flow is in more than one run (flows are matched by name): nothing to set side by side"),
        "{t}"
    );
    assert!(!t.contains("different windows") && !t.contains("stopped at"), "{t}");
}
