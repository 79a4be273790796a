//! Comparing runs: overlaid CDF/CCDF on shared axes (flows matched by name keep their
//! colours, runs differ by line style) and differences relative to the first run.

use crate::data::{DistKind, Results};
use crate::figures::{self, DistLine, RUN_DASHES};
use crate::fmt::{dms, esc, ms_fine as ms, pct, rate};
use crate::html::{apps_table, flows_table, head, media_table, palette_for, queues_table, verdict_html};
use crate::verdict::verdict;
use crate::ReportError;
use l4s_metrics::summary::FlowSummary;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;

fn load_all(dirs: &[PathBuf]) -> Result<Vec<Results>, ReportError> {
    if dirs.is_empty() {
        return Err(ReportError::NoRuns);
    }
    dirs.iter().map(|d| Results::load(d)).collect()
}

/// How to compare: the runs' labels and the scale of the distributions' delay axis.
#[derive(Clone, Debug, Default)]
pub struct CompareOptions {
    /// A label per run, in the order of the directories (`l4s compare --label`); empty:
    /// each run is named by its directory, scenario and seed.
    pub labels: Vec<String>,
    /// Draw the delay axis of the CDF and CCDF charts on a log scale (`--log-x`), for runs
    /// whose delays differ by orders of magnitude.
    pub log_x: bool,
}

impl CompareOptions {
    fn label(&self, i: usize) -> Option<&str> {
        self.labels.get(i).map(String::as_str)
    }
}

fn run_label(i: usize, r: &Results, opts: &CompareOptions) -> String {
    if let Some(l) = opts.label(i) {
        return format!("run {}: {l}", i + 1);
    }
    let base = r
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| r.dir.display().to_string());
    format!(
        "run {}: {} ({}, seed {})",
        i + 1,
        base,
        r.summary.scenario.name,
        r.summary.scenario.seed
    )
}

/// The runs, with labels checked against them.
fn load_with(dirs: &[PathBuf], opts: &CompareOptions) -> Result<Vec<Results>, ReportError> {
    if !opts.labels.is_empty() && opts.labels.len() != dirs.len() {
        return Err(ReportError::Labels {
            labels: opts.labels.len(),
            runs: dirs.len(),
        });
    }
    load_all(dirs)
}

fn dash(i: usize) -> Option<&'static str> {
    RUN_DASHES[i % RUN_DASHES.len()]
}

/// The runs with each run's flows by name, and every flow name in order of first
/// appearance across the runs. Flows are matched across runs by name for every row and
/// chart, and a run may hold 10 000 flows: a search of the list for each would take
/// seconds. Built once per comparison and handed to every table and chart.
struct ByName<'a> {
    runs: &'a [Results],
    maps: Vec<HashMap<&'a str, &'a FlowSummary>>,
    names: Vec<&'a str>,
}

impl<'a> ByName<'a> {
    fn new(runs: &'a [Results]) -> ByName<'a> {
        let mut seen = HashSet::new();
        let mut names = Vec::new();
        for r in runs {
            for f in &r.summary.flows {
                if seen.insert(f.name.as_str()) {
                    names.push(f.name.as_str());
                }
            }
        }
        ByName {
            runs,
            maps: runs
                .iter()
                .map(|r| r.summary.flows.iter().map(|f| (f.name.as_str(), f)).collect())
                .collect(),
            names,
        }
    }

    /// Flow `name` of run `run`.
    fn get(&self, run: usize, name: &str) -> Option<&'a FlowSummary> {
        self.maps.get(run).and_then(|m| m.get(name)).copied()
    }
}

/// One difference row: a flow of run `k` against the same flow of the first run.
pub struct Delta {
    pub flow: String,
    pub run: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub throughput_bps: f64,
    /// Difference of loss fractions (multiply by 100 for percentage points).
    pub loss: f64,
}

fn delta(run: usize, a: &FlowSummary, b: &FlowSummary) -> Delta {
    Delta {
        flow: b.name.clone(),
        run,
        p50_ms: b.owd_ms.p50 - a.owd_ms.p50,
        p99_ms: b.owd_ms.p99 - a.owd_ms.p99,
        p999_ms: b.owd_ms.p999 - a.owd_ms.p999,
        throughput_bps: b.throughput_bps - a.throughput_bps,
        loss: b.loss_fraction - a.loss_fraction,
    }
}

/// Differences of every flow of runs 2.. that also exists (by name) in run 1.
pub fn deltas(runs: &[Results]) -> Vec<Delta> {
    deltas_of(&ByName::new(runs))
}

fn deltas_of(by: &ByName) -> Vec<Delta> {
    let mut out = Vec::new();
    for (k, r) in by.runs.iter().enumerate().skip(1) {
        for f in &r.summary.flows {
            if let Some(a) = by.get(0, &f.name) {
                out.push(delta(k, a, f));
            }
        }
    }
    out
}

fn rel(d: f64, base: f64) -> String {
    if base.abs() > 0.0 && d.is_finite() && base.is_finite() {
        format!("{:+.0} %", d / base * 100.0)
    } else {
        "–".into()
    }
}

fn drate(d: f64) -> String {
    if !d.is_finite() {
        "–".into()
    } else if d >= 0.0 {
        format!("+{}", rate(d))
    } else {
        format!("-{}", rate(-d))
    }
}

fn dpp(d: f64) -> String {
    if !d.is_finite() {
        "–".into()
    } else {
        format!("{:+.3} pp", d * 100.0)
    }
}

/// Render an HTML comparison of several results directories (the first is the reference).
pub fn render_compare(dirs: &[PathBuf]) -> Result<String, ReportError> {
    Ok(render_compare_with(dirs, &CompareOptions::default())?.0)
}

/// [`render_compare`] with options; also returns the page's charts as `(title, inline
/// svg)` for [`crate::write_chart_pngs`] (`l4s compare --png`).
pub fn render_compare_with(
    dirs: &[PathBuf],
    opts: &CompareOptions,
) -> Result<(String, Vec<(String, String)>), ReportError> {
    let runs = load_with(dirs, opts)?;
    let warnings = crate::variant_set::warnings(dirs);
    Ok(page_of(&ByName::new(&runs), &warnings, opts))
}

/// A comparison's terminal table ([`compare_table_with`]), its page and the page's charts
/// ([`render_compare_with`]).
pub struct Comparison {
    pub table: String,
    pub html: String,
    /// `(title, inline svg)` of each chart, for [`crate::write_chart_pngs`].
    pub figures: Vec<(String, String)>,
}

/// The table and the page of a comparison from one reading of the runs: reading them is
/// most of the work (a run of 10 000 flows has a million snapshot rows).
pub fn comparison(dirs: &[PathBuf], opts: &CompareOptions) -> Result<Comparison, ReportError> {
    let runs = load_with(dirs, opts)?;
    let warnings = crate::variant_set::warnings(dirs);
    let by = ByName::new(&runs);
    let table = table_of(&by, &warnings, opts);
    let (html, figures) = page_of(&by, &warnings, opts);
    Ok(Comparison { table, html, figures })
}

fn page_of(by: &ByName, warnings: &[String], opts: &CompareOptions) -> (String, Vec<(String, String)>) {
    let runs = by.runs;
    let pal = palette_for(runs.iter());
    let mut out = String::with_capacity(256 * 1024);
    head(&mut out, &format!("l4s-lab comparison of {} runs", runs.len()));
    let _ = write!(
        out,
        "<header><h1>Comparison of {} runs</h1><p class=\"meta\">Differences are relative to run 1. Flows are matched by name and keep their colour; runs differ by line style.</p></header>",
        runs.len()
    );
    if !warnings.is_empty() {
        out.push_str("<section class=\"verdict warn\"><p class=\"headline\">These runs may not belong together</p><ul class=\"warnings\">");
        for w in warnings {
            let _ = write!(out, "<li><span class=\"sev warn\">warn</span>{}</li>", esc(w));
        }
        out.push_str("</ul></section>\n");
    }
    out.push_str("<h2>Runs</h2><table><tr><th class=\"l\">run</th><th class=\"l\">label</th><th class=\"l w\">directory</th><th class=\"l\">scenario</th><th>seed</th><th>duration s</th><th class=\"l\">line</th></tr>");
    for (i, r) in runs.iter().enumerate() {
        let sc = &r.summary.scenario;
        let style = match dash(i) {
            None => "solid".to_string(),
            Some(d) => format!("dashes {d}"),
        };
        let _ = write!(
            out,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l w\"><code>{}</code></td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
            i + 1,
            esc(opts.label(i).unwrap_or("–")),
            esc(&r.dir.display().to_string()),
            esc(&sc.name),
            sc.seed,
            crate::html::fnum(sc.duration_s),
            esc(&style)
        );
    }
    out.push_str("</table>");
    for (i, r) in runs.iter().enumerate() {
        let _ = write!(out, "<h3>Verdict of {}</h3>", esc(&run_label(i, r, opts)));
        verdict_html(&mut out, &verdict(&r.summary, r.snapshots.as_ref()));
    }

    out.push_str("<h2>Differences from run 1</h2>");
    diff_table_html(&mut out, by);
    // Real-time media and applications: what the media scenarios are about.
    let media = media_rows(by, opts);
    if media.len() > 1 {
        out.push_str("<h3>Real-time media</h3>");
        rows_html(&mut out, &media);
    }
    let apps = app_rows(by, opts);
    if apps.len() > 1 {
        out.push_str("<h3>Applications: completion times</h3>");
        rows_html(&mut out, &apps);
    }

    out.push_str("<h2>One-way delay distributions, all runs</h2>");
    let suffix = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            format!(
                "run {}: {}, seed {}",
                i + 1,
                r.summary.scenario.name,
                r.summary.scenario.seed
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let styles: Vec<(String, Option<&'static str>)> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (run_label(i, r, opts), dash(i)))
        .collect();
    let mut all = Vec::new();
    let mut exact = true;
    // With more flows than a chart can tell apart, each run's traffic classes, their
    // packets pooled; else each flow. Each group's lines, by their places in `all`.
    let per_class = by.names.len() > figures::MAX_FLOW_LINES;
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    if per_class {
        let pooled: Vec<_> = runs
            .iter()
            .map(|r| {
                let (classes, ex) = figures::class_owd_cdfs(r);
                exact &= ex;
                classes
            })
            .collect();
        for class in figures::CLASSES {
            let mut places = Vec::new();
            for (i, classes) in pooled.iter().enumerate() {
                let Some(c) = classes.iter().find(|c| c.class == class) else {
                    continue;
                };
                places.push(all.len());
                all.push(DistLine {
                    label: class.name.to_string(),
                    color: class.style().0,
                    dash: dash(i),
                    pts: c.pts.clone(),
                    legend: places.len() == 1,
                });
            }
            if !places.is_empty() {
                groups.push((format!("the {} flows, their packets pooled", class.name), places));
            }
        }
    } else {
        for &name in &by.names {
            let mut places = Vec::new();
            for (i, r) in runs.iter().enumerate() {
                let Some(f) = by.get(i, name) else {
                    continue;
                };
                if let Some((pts, ex)) = figures::dist_points(r, DistKind::Owd, name, Some(&f.owd_ms)) {
                    exact &= ex;
                    places.push(all.len());
                    all.push(DistLine {
                        label: name.to_string(),
                        color: pal.color(name),
                        dash: dash(i),
                        pts,
                        legend: places.len() == 1,
                    });
                }
            }
            if !places.is_empty() {
                groups.push((format!("'{name}'"), places));
            }
        }
    }
    if !exact {
        let _ = write!(out, "<p class=\"missing\">{}</p>", esc("Some runs have no distributions.csv: their curves join the summary's percentiles (p50 … max) with straight lines."));
    }
    let xr = if opts.log_x {
        figures::dist_xrange_log(all.iter())
    } else {
        figures::dist_xrange(all.iter())
    };
    let mut figs: Vec<(String, String)> = Vec::new();
    let mut push = |out: &mut String, c: &crate::charts::Chart| {
        let at = crate::charts::embed(out, c, &format!("k{}", figs.len() + 1));
        figs.push((c.title.clone(), out.get(at).unwrap_or_default().to_string()));
    };
    let what = if per_class {
        "one-way delay per class of flows, their packets pooled (ms)"
    } else {
        "one-way delay per flow (ms)"
    };
    for c in figures::cdf_ccdf_axes(what, "one-way delay (ms)", &suffix, &all, &styles, xr, opts.log_x) {
        push(&mut out, &c);
    }
    let _ = write!(
        out,
        "<h2>Per {}, runs overlaid</h2><p class=\"meta\">Every chart below uses the same axes.</p>",
        if per_class { "class of flows" } else { "flow" }
    );
    for (name, places) in &groups {
        let lines: Vec<DistLine> = places
            .iter()
            .map(|&k| &all[k])
            .map(|l| DistLine {
                label: l.label.clone(),
                color: l.color.clone(),
                dash: l.dash,
                pts: l.pts.clone(),
                legend: l.legend,
            })
            .collect();
        let title = format!("one-way delay of {name} (ms)");
        let charts = figures::cdf_ccdf_axes(&title, "one-way delay (ms)", &suffix, &lines, &styles, xr, opts.log_x);
        if let Some(c) = charts.into_iter().nth(1) {
            push(&mut out, &c);
        }
    }

    out.push_str("<h2>Summary tables per run</h2>");
    for (i, r) in runs.iter().enumerate() {
        let _ = write!(out, "<h3>{}</h3>", esc(&run_label(i, r, opts)));
        flows_table(&mut out, r, &pal);
        media_table(&mut out, r, &pal);
        apps_table(&mut out, r, &pal);
        queues_table(&mut out, r);
    }
    let _ = write!(
        out,
        "<footer>Generated by l4s-report {} from the results directories alone. Self-contained: no script, font, stylesheet or network access.</footer>\n</body></html>\n",
        env!("CARGO_PKG_VERSION")
    );
    (out, figs)
}

/// Rows of a comparison table: a header, then one row per flow and run (cells as text).
type Rows = Vec<Vec<String>>;

/// Per media flow and run: frame delay percentiles, the share of frames late or
/// incomplete, incomplete frames, stalls, and the encoder's mean target, with the p99
/// frame delay and that share against run 1. Only the header when no run has a media flow.
fn media_rows(by: &ByName, opts: &CompareOptions) -> Rows {
    let mut rows = vec![[
        "flow",
        "run",
        "frame delay p50",
        "p99",
        "p99.9 ms",
        "Δp99",
        "late or incomplete",
        "Δ",
        "incomplete",
        "stall",
        "target mean",
    ]
    .map(String::from)
    .to_vec()];
    for &name in &by.names {
        let base = by.get(0, name).and_then(|f| f.media.as_ref());
        for i in 0..by.runs.len() {
            let Some(m) = by.get(i, name).and_then(|f| f.media.as_ref()) else {
                continue;
            };
            let late = |m: &l4s_metrics::summary::MediaSummary| m.bad_frame_fraction;
            let d = base.filter(|_| i > 0);
            rows.push(vec![
                sanitize(name),
                run_name(i, opts),
                ms(m.frame_delay_ms.p50),
                ms(m.frame_delay_ms.p99),
                ms(m.frame_delay_ms.p999),
                d.map(|b| dms(m.frame_delay_ms.p99 - b.frame_delay_ms.p99))
                    .unwrap_or_default(),
                pct(late(m)),
                d.map(|b| dpp(late(m) - late(b))).unwrap_or_default(),
                m.frames_incomplete.to_string(),
                format!("{:.2} s ({})", m.stall_time_s, pct(m.stall_fraction)),
                rate(m.target_bitrate_mean_bps),
            ]);
        }
    }
    rows
}

/// Per application flow, completion kind and run: how many completed and their times
/// (p50, p99, max), with the p50 and p99 against run 1. Only the header when no run has
/// an application flow.
fn app_rows(by: &ByName, opts: &CompareOptions) -> Rows {
    let mut rows = vec![[
        "flow",
        "run",
        "completed",
        "count",
        "time p50",
        "p99",
        "max ms",
        "Δp50",
        "Δp99",
    ]
    .map(String::from)
    .to_vec()];
    for &name in &by.names {
        let base = by.get(0, name).and_then(|f| f.app.as_ref());
        for i in 0..by.runs.len() {
            let Some(a) = by.get(i, name).and_then(|f| f.app.as_ref()) else {
                continue;
            };
            for (kind, c) in &a.completions {
                let b = base.filter(|_| i > 0).and_then(|b| b.completions.get(kind));
                let some = c.count > 0;
                rows.push(vec![
                    sanitize(name),
                    run_name(i, opts),
                    sanitize(kind),
                    c.count.to_string(),
                    if some { ms(c.time_ms.p50) } else { "–".into() },
                    if some { ms(c.time_ms.p99) } else { "–".into() },
                    if some { ms(c.time_ms.max) } else { "–".into() },
                    b.filter(|b| some && b.count > 0)
                        .map(|b| dms(c.time_ms.p50 - b.time_ms.p50))
                        .unwrap_or_default(),
                    b.filter(|b| some && b.count > 0)
                        .map(|b| dms(c.time_ms.p99 - b.time_ms.p99))
                        .unwrap_or_default(),
                ]);
            }
        }
    }
    rows
}

/// A run as the tables name it: its number, and its label if it has one.
fn run_name(i: usize, opts: &CompareOptions) -> String {
    match opts.label(i) {
        Some(l) => format!("{} {}", i + 1, sanitize(l)),
        None => (i + 1).to_string(),
    }
}

fn rows_html(out: &mut String, rows: &Rows) {
    out.push_str("<table>");
    for (k, row) in rows.iter().enumerate() {
        out.push_str("<tr>");
        for (j, cell) in row.iter().enumerate() {
            let (tag, class) = (
                if k == 0 { "th" } else { "td" },
                if j == 0 { " class=\"l\"" } else { "" },
            );
            let _ = write!(out, "<{tag}{class}>{}</{tag}>", esc(cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

fn diff_table_html(out: &mut String, by: &ByName) {
    let runs = by.runs;
    if runs.len() < 2 {
        out.push_str("<p class=\"meta\">Only one run: nothing to compare.</p>");
        return;
    }
    out.push_str("<table><tr><th class=\"l\">flow</th><th>run</th><th>Δ OWD p50 ms</th><th>Δ p99 ms</th><th>Δ p99.9 ms</th><th>Δ throughput</th><th>Δ loss</th></tr>");
    for d in deltas_of(by) {
        let Some(a) = by.get(0, &d.flow) else {
            continue;
        };
        let _ = write!(
            out,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{} ({})</td><td>{} ({})</td><td>{} ({})</td><td>{} ({})</td><td>{}</td></tr>",
            esc(&d.flow),
            d.run + 1,
            esc(&dms(d.p50_ms)),
            esc(&rel(d.p50_ms, a.owd_ms.p50)),
            esc(&dms(d.p99_ms)),
            esc(&rel(d.p99_ms, a.owd_ms.p99)),
            esc(&dms(d.p999_ms)),
            esc(&rel(d.p999_ms, a.owd_ms.p999)),
            esc(&drate(d.throughput_bps)),
            esc(&rel(d.throughput_bps, a.throughput_bps)),
            esc(&dpp(d.loss)),
        );
    }
    out.push_str("</table>");
    let unmatched: Vec<String> = runs
        .iter()
        .enumerate()
        .flat_map(|(i, r)| {
            r.summary
                .flows
                .iter()
                .filter(|f| (0..runs.len()).any(|o| by.get(o, &f.name).is_none()))
                .map(move |f| format!("'{}' (run {})", f.name, i + 1))
        })
        .collect();
    if !unmatched.is_empty() {
        let _ = write!(
            out,
            "<p class=\"meta\">Not in every run, so compared only where present: {}.</p>",
            esc(&unmatched.join(", "))
        );
    }
}

/// A plain-text comparison for the terminal: one line per run, then per flow and run the
/// OWD percentiles, throughput and loss with differences relative to run 1.
pub fn compare_table(dirs: &[PathBuf]) -> Result<String, ReportError> {
    compare_table_with(dirs, &CompareOptions::default())
}

/// [`compare_table`] with run labels; media and application flows get their own tables.
pub fn compare_table_with(dirs: &[PathBuf], opts: &CompareOptions) -> Result<String, ReportError> {
    let runs = load_with(dirs, opts)?;
    Ok(table_of(&ByName::new(&runs), &crate::variant_set::warnings(dirs), opts))
}

fn table_of(by: &ByName, warnings: &[String], opts: &CompareOptions) -> String {
    let mut out = String::new();
    for w in warnings {
        let _ = writeln!(out, "warning: {}", sanitize(w));
    }
    out.push_str(&compare_table_of(by, opts));
    for (title, rows) in [
        ("real-time media", media_rows(by, opts)),
        ("applications: completion times", app_rows(by, opts)),
    ] {
        if rows.len() > 1 {
            let _ = writeln!(out, "\n{title}");
            out.push_str(&l4s_metrics::table::render(&rows));
        }
    }
    out
}

/// What the terminal must say beside the figures: runs stopped early (their figures cover
/// less than the run), statistics windows that differ between the runs, and runs that
/// share no flow (nothing to set side by side).
fn window_notes(by: &ByName) -> Vec<String> {
    let runs = by.runs;
    let mut out = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        if !r.summary.complete {
            let (from, to) = r.summary.stats_window();
            out.push(format!(
                "run {} was stopped at {to:.1} s of {:.1} s (marked incomplete): its figures cover {from:.1}–{to:.1} s",
                i + 1,
                r.summary.scenario.duration_s
            ));
        }
    }
    let windows: Vec<(f64, f64)> = runs.iter().map(|r| r.summary.stats_window()).collect();
    if windows.iter().any(|w| *w != windows[0]) {
        let each: Vec<String> = windows
            .iter()
            .enumerate()
            .map(|(i, (a, b))| format!("run {} {a:.1}–{b:.1} s", i + 1))
            .collect();
        out.push(format!(
            "the runs' figures cover different windows: {}",
            each.join(", ")
        ));
    }
    if runs.len() > 1
        && by
            .names
            .iter()
            .all(|n| (0..runs.len()).filter(|&i| by.get(i, n).is_some()).count() < 2)
    {
        out.push("no flow is in more than one run (flows are matched by name): nothing to set side by side".into());
    }
    out
}

fn compare_table_of(by: &ByName, opts: &CompareOptions) -> String {
    let runs = by.runs;
    let mut out = String::new();
    for (i, r) in runs.iter().enumerate() {
        let v = verdict(&r.summary, r.snapshots.as_ref());
        let _ = writeln!(
            out,
            "{} [{}] {}",
            sanitize(&run_label(i, r, opts)),
            v.level.as_str(),
            sanitize(&v.headline)
        );
    }
    for n in window_notes(by) {
        let _ = writeln!(out, "note: {n}");
    }
    out.push('\n');
    let mut rows = vec![[
        "flow",
        "run",
        "owd p50",
        "p99",
        "p99.9 ms",
        "Δp50",
        "Δp99",
        "Δp99.9",
        "throughput",
        "Δthroughput",
        "loss",
        "Δloss",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect::<Vec<_>>()];
    for &name in &by.names {
        let base = by.get(0, name);
        for i in 0..runs.len() {
            let Some(f) = by.get(i, name) else {
                continue;
            };
            let d = match (i, base) {
                (0, _) | (_, None) => None,
                (_, Some(a)) => Some(delta(i, a, f)),
            };
            let dd = |g: &dyn Fn(&Delta) -> String| d.as_ref().map(g).unwrap_or_default();
            rows.push(vec![
                sanitize(name),
                run_name(i, opts),
                ms(f.owd_ms.p50),
                ms(f.owd_ms.p99),
                ms(f.owd_ms.p999),
                dd(&|d| dms(d.p50_ms)),
                dd(&|d| dms(d.p99_ms)),
                dd(&|d| dms(d.p999_ms)),
                rate(f.throughput_bps),
                dd(&|d| drate(d.throughput_bps)),
                pct(f.loss_fraction),
                dd(&|d| dpp(d.loss)),
            ]);
        }
    }
    out.push_str(&l4s_metrics::table::render(&rows));
    out
}

/// Terminal-safe text: control characters (escape sequences in a flow name) are replaced.
fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { '\u{FFFD}' } else { c }).collect()
}
