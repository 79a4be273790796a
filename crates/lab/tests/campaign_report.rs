//! The campaign page, campaign.html: written at the end of a campaign and on demand, made
//! from the store alone, its numbers those of pairs.parquet, and an unfinished campaign
//! says so.

use arrow_array::{Array, Float64Array, StringArray};
use l4s_lab::campaign::{self, report, CampaignOptions, NoCampaignProgress};
use l4s_lab::{ErrorKind, Simulator};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

mod common;

/// The shared campaign, with a name and a description of its own.
fn setup(tag: &str) -> (tempfile::TempDir, PathBuf) {
    let c = common::CAMPAIGN.replace(
        "name = \"t\"",
        "name = \"rep\"\ndescription = \"L4S against classic on a small dumbbell\"",
    );
    common::setup(&format!("report-{tag}"), &c)
}
fn opts(out: &Path) -> CampaignOptions {
    CampaignOptions {
        jobs: 2,
        out: Some(out.to_path_buf()),
        ..CampaignOptions::default()
    }
}

/// (group, metric, difference) of every row of pairs.parquet.
fn pair_rows(p: &Path) -> Vec<(String, String, f64)> {
    let f = std::fs::File::open(p).unwrap();
    let mut out = Vec::new();
    for b in ParquetRecordBatchReaderBuilder::try_new(f).unwrap().build().unwrap() {
        let b = b.unwrap();
        let s = |n: &str| {
            b.column_by_name(n)
                .unwrap()
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap()
                .clone()
        };
        let (group, metric) = (s("group"), s("metric"));
        let diff = b
            .column_by_name("difference")
            .unwrap()
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap()
            .clone();
        for i in 0..b.num_rows() {
            assert!(!group.is_null(i));
            out.push((group.value(i).to_string(), metric.value(i).to_string(), diff.value(i)));
        }
    }
    out
}

/// The text of the cell `stat` in the row of `group` and `row` ("value" or "difference")
/// of `variant` in the table of `metric`.
fn cell<'a>(html: &'a str, metric: &str, group: &str, row: &str, variant: &str, stat: &str) -> &'a str {
    let t = html
        .find(&format!("<table data-metric=\"{metric}\">"))
        .unwrap_or_else(|| panic!("no table of {metric}"));
    let table = &html[t..t + html[t..].find("</table>").unwrap()];
    let r = table
        .find(&format!(
            "data-group=\"{group}\" data-row=\"{row}\" data-variant=\"{variant}\">"
        ))
        .unwrap_or_else(|| panic!("no {row} row of {variant} in group {group} of {metric}"));
    let tr = &table[r..r + table[r..].find("</tr>").unwrap()];
    let c = tr.find(&format!("data-stat=\"{stat}\">")).unwrap() + stat.len() + 13;
    &tr[c..c + tr[c..].find('<').unwrap()]
}

/// Does the printed number stand for `x` to its printed precision?
fn printed(s: &str, x: f64) -> bool {
    let v: f64 = s.parse().unwrap_or_else(|_| panic!("not a number: {s:?}"));
    let decimals = s.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
    (v - x).abs() <= 0.5 * 10f64.powi(-decimals) * (1.0 + 1e-9)
}

#[test]
fn the_page_of_a_campaign_holds_its_groups_metrics_charts_and_the_mean_paired_differences() {
    let (d_guard, f) = setup("full");
    let d = d_guard.path();
    let store = d.join("store");
    let out = campaign::run(&f, &mut Simulator, &opts(&store), &mut NoCampaignProgress).unwrap();
    assert_eq!(out.done, 32);
    let page = out.report.clone().expect("the page is written");
    assert_eq!(page, store.join("campaign.html"));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
    assert!(html.contains("<h1>Campaign rep</h1>"));
    assert!(html.contains("L4S against classic on a small dumbbell"));
    assert!(!html.contains("Incomplete"), "a complete campaign");
    assert!(html.contains("32 of 32 distinct runs done; 16 of 16 pairs complete"));
    for g in ["quiet", "busy"] {
        assert!(html.contains(&format!("data-group=\"{g}\"")), "group {g}");
    }
    for m in ["flow.bulk.owd_p99_ms", "flow.probe.owd_p99_ms"] {
        assert!(html.contains(&format!("<table data-metric=\"{m}\">")), "metric {m}");
    }
    assert!(html.contains("p99 one-way delay of &#39;probe&#39;"));
    // A verdict line per group and metric, an ECDF per metric, a chart per metric against
    // each of the two parameters.
    assert_eq!(html.matches("<span class=\"sev ").count(), 2 * 2, "verdict lines");
    assert_eq!(html.matches("<svg").count(), 2 + 2 * 2);
    assert!(html.contains("0: no difference"));
    assert!(!html.contains("<script") && !html.contains("http"));

    // The mean differences are those of pairs.parquet, to the printed precision.
    let rows = pair_rows(&out.tables.pairs);
    let mut checked = 0;
    for m in ["flow.bulk.owd_p99_ms", "flow.probe.owd_p99_ms"] {
        for g in ["quiet", "busy"] {
            let d: Vec<f64> = rows.iter().filter(|r| r.0 == g && r.1 == m).map(|r| r.2).collect();
            assert_eq!(d.len(), 8, "{m} {g}: 2 rates x 2 draws x 2 seeds");
            let mean = d.iter().sum::<f64>() / d.len() as f64;
            let shown = cell(&html, m, g, "difference", "l4s", "mean");
            assert!(printed(shown, mean), "{m} {g}: page {shown}, pairs.parquet {mean}");
            assert_eq!(cell(&html, m, g, "difference", "l4s", "n"), "8");
            checked += 1;
        }
    }
    assert_eq!(checked, 4);
    // Each variant's mean too, from the summaries.
    let (_, plan) = campaign::load(&f).unwrap();
    let probe = |v: u16, g: &str| {
        let x: Vec<f64> = plan
            .runs
            .iter()
            .filter(|r| r.variant == v && plan.points[r.point as usize].group.as_deref() == Some(g))
            .map(|r| {
                let s = campaign::store::load_summary(&store, &r.key).unwrap();
                s.flows.iter().find(|f| f.name == "probe").unwrap().owd_ms.p99
            })
            .collect();
        x.iter().sum::<f64>() / x.len() as f64
    };
    for (v, name) in [(0, "l4s"), (1, "classic")] {
        let shown = cell(&html, "flow.probe.owd_p99_ms", "busy", "value", name, "mean");
        assert!(printed(shown, probe(v, "busy")), "{name}: {shown}");
    }

    // Made again from the store alone: the same page; with PNGs, one per chart.
    std::fs::remove_file(&page).unwrap();
    let again = report::write_report_with(
        &store,
        &report::ReportOptions {
            png: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(std::fs::read_to_string(&again.html).unwrap(), html);
    assert_eq!(again.pngs.len(), 6);
    for p in &again.pngs {
        assert!(p.starts_with(store.join("png")));
        assert!(std::fs::read(p).unwrap().starts_with(b"\x89PNG"));
    }
    // Other metrics on demand.
    let thr = report::write_report_with(
        &store,
        &report::ReportOptions {
            metrics: vec!["flow.*.throughput_bps".into()],
            ..Default::default()
        },
    )
    .unwrap();
    let html = std::fs::read_to_string(thr.html).unwrap();
    assert!(html.contains("<table data-metric=\"flow.bulk.throughput_bps\">"));
    assert!(!html.contains("<table data-metric=\"flow.bulk.owd_p99_ms\">"));
    assert!(html.contains("throughput of &#39;bulk&#39;"));
    // A pattern asked for that matches nothing: refused, naming metrics that there are,
    // and the page stays as it was.
    let e = report::write_report_with(
        &store,
        &report::ReportOptions {
            metrics: vec!["nomatch.*".into()],
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Input);
    assert!(
        e.message
            .contains("--metric nomatch.*: no metric of the completed runs matches")
            && e.message.contains("flow.bulk."),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(store.join("campaign.html")).unwrap(), html);
    // Not a store: refused, naming the folder.
    let e = campaign::report::write_report(d, false).unwrap_err();
    assert_eq!(
        e.message,
        format!("{}: not an l4s-lab campaign store (no campaign.json)", d.display())
    );
    // Nothing there: said so, and nothing made.
    let gone = d.join("gone");
    let e = campaign::status(&gone).unwrap_err();
    assert_eq!(
        e.message,
        format!(
            "{}: no such directory (give the store a campaign run wrote)",
            gone.display()
        )
    );
    assert!(!gone.exists());
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn the_page_of_an_unfinished_campaign_says_it_is_incomplete() {
    let (d_guard, f) = setup("stopped");
    let d = d_guard.path();
    let store = d.join("store");
    let stop = Arc::new(AtomicBool::new(false));
    struct StopAfter(usize, Arc<AtomicBool>);
    impl campaign::CampaignProgress for StopAfter {
        fn finished(&mut self, _: &campaign::PlannedRun, _: &Result<std::time::Duration, l4s_lab::Error>) {
            self.0 = self.0.saturating_sub(1);
            if self.0 == 0 {
                self.1.store(true, Ordering::SeqCst);
            }
        }
    }
    let o = CampaignOptions {
        stop: Some(stop.clone()),
        jobs: 1,
        ..opts(&store)
    };
    let out = campaign::run(&f, &mut Simulator, &o, &mut StopAfter(5, stop)).unwrap();
    assert!(out.interrupted);
    // The sixth run was under way (simulated while the fifth was written) when the stop
    // came after the fifth: it is kept.
    assert_eq!(out.done, 6);
    let html = std::fs::read_to_string(out.report.unwrap()).unwrap();
    assert!(
        html.contains("Incomplete campaign: 6 of 32 runs done (26 missing)"),
        "{html}"
    );
    assert!(html.contains("3 of 16 pairs complete"), "pairs run back to back");
    assert!(html.contains("Run <code>l4s campaign run</code>"));
    let _ = std::fs::remove_dir_all(d);
}
