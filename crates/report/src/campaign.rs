//! The page of a campaign, `campaign.html`: many paired runs of one scenario, each
//! configuration (variant) against the campaign's baseline, point by point and seed by
//! seed. Self-contained like `report.html` (inline CSS and SVG, no script, no URL).
//!
//! This module draws and words; it computes no statistic. Its caller (l4s-lab's campaign
//! report) reads the store, computes the statistics and fills a [`CampaignPage`]; the page
//! shows, in order: the title and what the store holds (a warning when runs are missing),
//! a verdict per group, the empirical CDF of each paired difference, the summary
//! statistics, and each metric against each parameter that takes several values.
//!
//! Metric names are the columns of the campaign's `index.parquet` (`flow.<name>.owd_p99_ms`,
//! `queue.<name>.sojourn_p99_ms`, `class.L4S.throughput_bps`, ...). Their unit and which
//! way is better come from the name's suffix ([`Unit::of`], [`Better::of`]).

use crate::charts::{truncate, Axis, Chart, Guide, Layer, Mark, PALETTE};
use crate::figures::{rate_unit, RUN_DASHES};
use crate::fmt::{count, esc};
use crate::html::head;
use std::fmt::Write as _;

/// Everything the campaign page shows.
#[derive(Clone, Debug, Default)]
pub struct CampaignPage {
    pub name: String,
    pub description: String,
    /// The store's folder, as given.
    pub store: String,
    /// Configurations (variant names; `""` for a scenario without variants).
    pub variants: Vec<String>,
    /// The variant every other one is compared with.
    pub baseline: Option<String>,
    /// Points (combinations of swept and sampled values and a group) and seeds per point.
    pub points: usize,
    pub seeds: usize,
    /// The groups in plan order (one named "all" for a campaign without groups).
    pub groups: Vec<GroupCount>,
    /// Pairs (a point and a seed) in the plan, and those whose every variant is done.
    pub pairs: usize,
    pub pairs_done: usize,
    /// Distinct runs in the plan, done, and failed at their last try.
    pub runs_planned: usize,
    pub runs_done: usize,
    pub runs_failed: usize,
    /// A campaign process held the store when the page was made.
    pub active: bool,
    /// Remarks shown under the title (such as runs whose summary did not read).
    pub notes: Vec<String>,
    /// The statistics of each chosen metric.
    pub metrics: Vec<MetricStats>,
    /// Each parameter with several values, and the chosen metrics against it.
    pub params: Vec<ParamCharts>,
    pub method: Method,
    /// What made the page, e.g. "l4s-lab 0.1.0".
    pub generator: String,
}

/// A group's name and its pairs: in the plan, and with every variant done.
#[derive(Clone, Debug, Default)]
pub struct GroupCount {
    pub name: String,
    pub pairs: usize,
    pub pairs_done: usize,
}

/// How the statistics were made (the page states it).
#[derive(Clone, Debug)]
pub struct Method {
    /// Confidence level and resamples of the bootstrap intervals of the mean.
    pub level: f64,
    pub resamples: usize,
    /// Quantile bins of a sampled parameter with more distinct values than this.
    pub bins: usize,
}

impl Default for Method {
    fn default() -> Self {
        Method {
            level: 0.95,
            resamples: 2000,
            bins: 8,
        }
    }
}

/// Summary statistics of a sample (computed by the caller).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SampleStats {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    pub p90: f64,
    pub q25: f64,
    pub q75: f64,
    pub iqr: f64,
    /// Sample standard deviation; `None` for a single value.
    pub sd: Option<f64>,
    /// Bootstrap confidence interval of the mean, at [`Method::level`].
    pub ci: Option<(f64, f64)>,
}

/// One metric's statistics, group by group.
#[derive(Clone, Debug, Default)]
pub struct MetricStats {
    /// The column name, such as `flow.bulk.owd_p99_ms`.
    pub metric: String,
    pub groups: Vec<GroupStats>,
}

/// One metric in one group.
#[derive(Clone, Debug, Default)]
pub struct GroupStats {
    pub group: String,
    /// Each variant's values, over the pairs where every variant has the metric (over all
    /// its runs when the campaign has no baseline), in variant order.
    pub values: Vec<(String, Option<SampleStats>)>,
    /// Each other variant against the baseline.
    pub diffs: Vec<PairedDiff>,
}

/// The paired difference `variant − baseline` of a metric in a group.
#[derive(Clone, Debug, Default)]
pub struct PairedDiff {
    pub variant: String,
    /// Over the pairs where both have the metric.
    pub stats: SampleStats,
    /// Empirical CDF: ascending distinct differences, fraction of pairs at or below.
    pub ecdf: Vec<(f64, f64)>,
    /// Pairs where the difference is below zero, and above zero (the rest are ties).
    pub below: usize,
    pub above: usize,
}

/// A parameter that takes several values, and the chosen metrics against it.
#[derive(Clone, Debug, Default)]
pub struct ParamCharts {
    /// The scenario key path, such as `topology.rate`.
    pub param: String,
    /// The x axis label with its unit, such as "topology.rate (Mbit/s)".
    pub axis: String,
    /// For a parameter whose values are text: the values; x is a value's index.
    pub categories: Vec<String>,
    /// A logarithmic x axis.
    pub log: bool,
    /// How the x values were formed (each swept value, quantile bins of the draws, ...).
    pub note: String,
    pub metrics: Vec<ParamMetric>,
}

/// A metric against a parameter: one series per variant and group.
#[derive(Clone, Debug, Default)]
pub struct ParamMetric {
    pub metric: String,
    pub series: Vec<ParamSeries>,
}

#[derive(Clone, Debug, Default)]
pub struct ParamSeries {
    pub variant: String,
    pub group: String,
    pub points: Vec<ParamPoint>,
}

/// The mean of a metric over the runs at one parameter value (or bin), with its bootstrap
/// confidence interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ParamPoint {
    pub x: f64,
    pub n: usize,
    pub mean: f64,
    pub ci: Option<(f64, f64)>,
}

/// Which way is better for a metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
    /// Neither is better (a count, a utilisation): the page says which way it moved.
    Either,
}

impl Better {
    /// From the name's suffix: `_ms` and `_fraction`, lower is better; `_bps` and `_fps`,
    /// higher is better; anything else, neither.
    pub fn of(metric: &str) -> Better {
        if metric.ends_with("_ms") || metric.ends_with("_fraction") {
            Better::Lower
        } else if metric.ends_with("_bps") || metric.ends_with("_fps") {
            Better::Higher
        } else {
            Better::Either
        }
    }
    /// Is a difference of this sign an improvement (`None`: neither way is better, or 0)?
    pub fn improves(self, d: f64) -> Option<bool> {
        match self {
            Better::Either => None,
            _ if d == 0.0 || !d.is_finite() => None,
            Better::Lower => Some(d < 0.0),
            Better::Higher => Some(d > 0.0),
        }
    }
}

/// The unit of a metric, from its name's suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Ms,
    Bps,
    /// A fraction in [0, 1], shown in %.
    Fraction,
    Fps,
    Number,
}

impl Unit {
    pub fn of(metric: &str) -> Unit {
        if metric.ends_with("_ms") {
            Unit::Ms
        } else if metric.ends_with("_bps") {
            Unit::Bps
        } else if metric.ends_with("_fraction") || metric.ends_with(".utilization") {
            Unit::Fraction
        } else if metric.ends_with("_fps") {
            Unit::Fps
        } else {
            Unit::Number
        }
    }
}

/// A metric in words: `flow.bulk.owd_p99_ms` is "p99 one-way delay of 'bulk'".
pub fn metric_label(metric: &str) -> String {
    let (owner, what) = split_metric(metric);
    match owner {
        Some(o) => format!("{what} {o}"),
        None => what,
    }
}

/// (owner, quantity): ("of 'bulk'", "p99 one-way delay").
fn split_metric(metric: &str) -> (Option<String>, String) {
    let (kind, rest) = metric.split_once('.').unwrap_or(("", metric));
    let (name, m) = match rest.rsplit_once('.') {
        Some((n, m)) => (Some(n), m),
        None => (None, rest),
    };
    let owner = name.map(|n| match kind {
        "flow" => format!("of '{n}'"),
        "queue" => format!("at queue '{n}'"),
        "class" => format!("of class {n}"),
        _ => format!("of {kind} '{n}'"),
    });
    (owner, quantity(m))
}

/// The quantity of a metric's last part: `owd_p99_ms` is "p99 one-way delay".
fn quantity(m: &str) -> String {
    for (suffix, stat) in [
        ("_p999_ms", "p99.9"),
        ("_p99_ms", "p99"),
        ("_p90_ms", "p90"),
        ("_p50_ms", "median"),
        ("_mean_ms", "mean"),
        ("_max_ms", "maximum"),
    ] {
        if let Some(base) = m.strip_suffix(suffix) {
            let what = match base {
                "owd" => "one-way delay".to_string(),
                "rtt" => "RTT".to_string(),
                "sojourn" => "sojourn time".to_string(),
                "frame_delay" => "frame delay".to_string(),
                b => match b.strip_suffix("_time") {
                    Some(k) => format!("{} completion time", k.replace('_', " ")),
                    None => b.replace('_', " "),
                },
            };
            return format!("{stat} {what}");
        }
    }
    match m {
        "throughput_bps" => "throughput".into(),
        "goodput_bps" => "goodput".into(),
        "loss_fraction" => "loss".into(),
        "ce_fraction" => "CE-marked fraction".into(),
        "retransmits" => "retransmissions".into(),
        "ecn_validation_failed" => "failed ECN validation".into(),
        "bad_frame_fraction" => "late or incomplete frames".into(),
        "stall_fraction" => "stall time".into(),
        "received_fps" => "received frame rate".into(),
        "target_bitrate_mean_bps" => "mean encoder target".into(),
        "utilization" => "utilisation".into(),
        m => match m.strip_suffix("_count") {
            Some(k) => format!("{} completions", k.replace('_', " ")),
            None => m.replace('_', " "),
        },
    }
}

/// Display units of one metric: values times `k` in `unit`, differences in `dunit`.
struct Disp {
    k: f64,
    unit: &'static str,
    dunit: &'static str,
}

impl Disp {
    /// The display of `unit` for values up to `max_abs` (rates pick their prefix from it).
    fn new(unit: Unit, max_abs: f64) -> Disp {
        match unit {
            Unit::Ms => Disp {
                k: 1.0,
                unit: "ms",
                dunit: "ms",
            },
            Unit::Bps => {
                let (div, u) = rate_unit(if max_abs.is_finite() { max_abs } else { 0.0 });
                Disp {
                    k: 1.0 / div,
                    unit: u,
                    dunit: u,
                }
            }
            Unit::Fraction => Disp {
                k: 100.0,
                unit: "%",
                dunit: "percentage points",
            },
            Unit::Fps => Disp {
                k: 1.0,
                unit: "frames/s",
                dunit: "frames/s",
            },
            Unit::Number => Disp {
                k: 1.0,
                unit: "",
                dunit: "",
            },
        }
    }
    fn v(&self, x: f64) -> String {
        num(x * self.k)
    }
    fn d(&self, x: f64) -> String {
        signed(x * self.k)
    }
    /// A difference with its unit ("-21.43 ms", "+0.5000 percentage points").
    fn du(&self, x: f64) -> String {
        with_unit(self.d(x), self.dunit)
    }
    /// "(ms)" for a label, or nothing.
    fn paren(&self, diff: bool) -> String {
        let u = if diff { self.dunit } else { self.unit };
        if u.is_empty() {
            String::new()
        } else {
            format!(" ({u})")
        }
    }
}

fn with_unit(s: String, unit: &str) -> String {
    if unit.is_empty() || s == "–" {
        s
    } else {
        format!("{s} {unit}")
    }
}

/// A number with 4 significant digits, at most 6 decimals ("21.43", "0.2330", "1235").
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let d = (3 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{x:.d$}");
    // "-0.000" reads as zero.
    if s.trim_start_matches('-').chars().all(|c| c == '0' || c == '.') {
        "0".into()
    } else {
        s
    }
}

/// [`num`] with its sign ("+1.234", "-0.5000", "0").
pub fn signed(x: f64) -> String {
    let s = num(x);
    if x > 0.0 && s != "0" {
        format!("+{s}")
    } else {
        s
    }
}

/// `k` of `n` as a percentage that never rounds to 0 % or 100 % unless it is.
fn share(k: usize, n: usize) -> String {
    if n == 0 {
        return "–".into();
    }
    let p = k as f64 / n as f64 * 100.0;
    if k > 0 && p < 0.5 {
        "<1 %".into()
    } else if k < n && p >= 99.5 {
        ">99 %".into()
    } else {
        format!("{p:.0} %")
    }
}

fn level_pct(level: f64) -> String {
    let p = level * 100.0;
    if p == p.round() {
        format!("{p:.0} %")
    } else {
        format!("{p} %")
    }
}

/// The largest magnitude among a metric's values and differences (for a rate's prefix).
fn max_abs(m: &MetricStats) -> f64 {
    m.groups
        .iter()
        .flat_map(|g| {
            g.values
                .iter()
                .filter_map(|(_, s)| s.as_ref())
                .map(|s| s.mean.abs().max(s.p90.abs()))
                .chain(g.diffs.iter().map(|d| d.stats.mean.abs().max(d.stats.p90.abs())))
        })
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
}

/// The colour of the `i`-th variant or group: the palette in order, so that the first
/// few are as far apart as the palette allows (blue, orange, red, ...).
fn nth_color(i: usize) -> String {
    PALETTE[i % PALETTE.len()].to_string()
}

/// Charts embedded so far: (title, svg), in page order.
struct Figures<'a> {
    out: &'a mut String,
    list: Vec<(String, String)>,
}

impl Figures<'_> {
    fn push(&mut self, c: &Chart) {
        let id = format!("k{}", self.list.len() + 1);
        let at = crate::charts::embed(self.out, c, &id);
        self.list
            .push((c.title.clone(), self.out.get(at).unwrap_or_default().to_string()));
    }
}

/// Chart titles are cut to what fits the chart's width.
const TITLE_CHARS: usize = 118;

/// Render the campaign page: one self-contained HTML file.
pub fn render_campaign(page: &CampaignPage) -> String {
    render_campaign_with_charts(page).0
}

/// [`render_campaign`] and its charts, `(title, inline svg)` in page order, for
/// [`write_chart_pngs`](crate::write_chart_pngs).
pub fn render_campaign_with_charts(page: &CampaignPage) -> (String, Vec<(String, String)>) {
    let mut out = String::with_capacity(256 * 1024);
    head(&mut out, &format!("l4s-lab campaign — {}", page.name));
    header(&mut out, page);
    out.push_str("<h2>Verdict</h2>");
    verdicts(&mut out, page);
    let mut figs = Figures {
        out: &mut out,
        list: Vec::new(),
    };
    differences(&mut figs, page);
    stats_tables(figs.out, page);
    param_charts(&mut figs, page);
    let charts = figs.list;
    method(&mut out, page);
    let _ = write!(
        out,
        "<footer>Generated by {} from the campaign store alone (its plan.json and each completed run's summary.json). \
         The same store gives the same page. Self-contained: no script, font, stylesheet or network access.</footer>\n</body></html>\n",
        esc(&page.generator)
    );
    (out, charts)
}

fn variants_text(page: &CampaignPage) -> String {
    let names: Vec<String> = page
        .variants
        .iter()
        .map(|v| {
            if v.is_empty() {
                "(the scenario)".to_string()
            } else {
                v.clone()
            }
        })
        .collect();
    match &page.baseline {
        Some(b) => format!(
            "{} configurations ({}); each is compared with the baseline {b} in the same pair",
            page.variants.len(),
            names.join(", ")
        ),
        None if page.variants.len() == 1 && names[0] == "(the scenario)" => "one configuration".to_string(),
        None if page.variants.len() == 1 => format!("one configuration, {}", names[0]),
        None => format!("{} configurations ({})", page.variants.len(), names.join(", ")),
    }
}

fn header(out: &mut String, page: &CampaignPage) {
    let _ = write!(out, "<header><h1>Campaign {}</h1>", esc(&page.name));
    if !page.description.trim().is_empty() {
        let _ = write!(out, "<p class=\"meta\">{}</p>", esc(page.description.trim()));
    }
    let groups = if page.groups.len() > 1 {
        format!(
            " in {} groups ({})",
            page.groups.len(),
            page.groups
                .iter()
                .map(|g| g.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else {
        String::new()
    };
    // Pairs only where there is something to pair.
    let paired = page.variants.len() > 1;
    let _ = writeln!(
        out,
        "<p class=\"meta\">{} points{} × {} seeds = {} {} of {}.</p>\
         <p class=\"meta\">{} of {} distinct runs done{} · store <code>{}</code></p></header>",
        count(page.points as u64),
        esc(&groups),
        count(page.seeds as u64),
        count(page.pairs as u64),
        if paired { "pairs" } else { "runs" },
        esc(&variants_text(page)),
        count(page.runs_done as u64),
        count(page.runs_planned as u64),
        if paired {
            format!(
                "; {} of {} pairs complete",
                count(page.pairs_done as u64),
                count(page.pairs as u64)
            )
        } else {
            String::new()
        },
        esc(&page.store)
    );
    if page.runs_done < page.runs_planned {
        let missing = page.runs_planned - page.runs_done;
        let _ = writeln!(
            out,
            "<section class=\"verdict warn\"><p class=\"headline\">Incomplete campaign: {} of {} runs done ({} missing{}){}.</p>\
             <p>The statistics below cover the {} only, so they may not represent the whole campaign. \
             {}</p></section>",
            count(page.runs_done as u64),
            count(page.runs_planned as u64),
            count(missing as u64),
            if page.runs_failed > 0 {
                format!(", of which {} failed at their last try", count(page.runs_failed as u64))
            } else {
                String::new()
            },
            if page.active {
                "; a campaign process is running it now"
            } else {
                ""
            },
            if paired {
                format!("{} complete pairs", count(page.pairs_done as u64))
            } else {
                format!("{} completed runs", count(page.runs_done as u64))
            },
            if page.active {
                "This page is made again when that process ends."
            } else {
                "Run <code>l4s campaign run</code> with the same campaign file again to finish it: it runs only what is missing."
            }
        );
    }
    for n in &page.notes {
        let _ = write!(out, "<p class=\"missing\">{}</p>", esc(n));
    }
}

/// One verdict line of a paired difference: (level, badge, html).
fn verdict_line(metric: &str, d: &PairedDiff, baseline: &str, level: f64) -> (&'static str, &'static str, String) {
    let better = Better::of(metric);
    let disp = Disp::new(Unit::of(metric), d.stats.mean.abs().max(d.stats.median.abs()));
    let n = d.stats.n;
    let label = esc(&metric_label(metric));
    let v = esc(&d.variant);
    let (down, up) = (share(d.below, n), share(d.above, n));
    let pairs = format!("{} pairs against {}", count(n as u64), esc(baseline));
    let other = |k: usize, verb: &str, s: &str| {
        if k > 0 {
            format!(" ({verb} it in {s})")
        } else {
            String::new()
        }
    };
    // Led by the way the median moved.
    let m = d.stats.median;
    let body = if m < 0.0 {
        format!(
            "<b>{v}</b> lowered the {label} in {down} of {pairs}{}",
            other(d.above, "raised", &up)
        )
    } else if m > 0.0 {
        format!(
            "<b>{v}</b> raised the {label} in {up} of {pairs}{}",
            other(d.below, "lowered", &down)
        )
    } else {
        format!("<b>{v}</b> lowered the {label} in {down} and raised it in {up} of {pairs}")
    };
    let ci = d
        .stats
        .ci
        .map(|(lo, hi)| format!(" ({} CI {} to {})", level_pct(level), disp.d(lo), disp.d(hi)))
        .unwrap_or_default();
    let text = format!(
        "{body}; median difference {}, mean {}{ci}",
        esc(&disp.du(d.stats.median)),
        esc(&disp.du(d.stats.mean)),
    );
    let (lvl, badge) = match better.improves(m) {
        Some(true) => ("good", "better"),
        Some(false) => ("bad", "worse"),
        None if better == Better::Either && m != 0.0 => ("note", "changed"),
        None => ("note", "same"),
    };
    (lvl, badge, text)
}

fn verdicts(out: &mut String, page: &CampaignPage) {
    let Some(base) = &page.baseline else {
        out.push_str(
            "<p class=\"meta\">One configuration, so no paired comparison: the tables below give its values.</p>",
        );
        return;
    };
    if page.metrics.is_empty() {
        out.push_str(if page.pairs_done == 0 {
            "<p class=\"missing\">No metric to compare yet: no pair is complete.</p>"
        } else {
            "<p class=\"missing\">No metric to compare: none of the completed runs has a metric that the campaign's `metrics` patterns match.</p>"
        });
        return;
    }
    for g in &page.groups {
        let mut lines = Vec::new();
        for m in &page.metrics {
            let Some(gs) = m.groups.iter().find(|x| x.group == g.name) else {
                continue;
            };
            for d in gs.diffs.iter().filter(|d| d.stats.n > 0) {
                lines.push(verdict_line(&m.metric, d, base, page.method.level));
            }
        }
        let goods = lines.iter().filter(|l| l.0 == "good").count();
        let bads = lines.iter().filter(|l| l.0 == "bad").count();
        let level = if lines.is_empty() || goods + bads == 0 {
            "warn"
        } else if bads == 0 {
            "good"
        } else if goods == 0 {
            "bad"
        } else {
            "warn"
        };
        let title = if page.groups.len() > 1 {
            format!("Group {}: ", g.name)
        } else {
            String::new()
        };
        let _ = write!(
            out,
            "<section class=\"verdict {level}\" data-group=\"{}\"><p class=\"headline\">{}{} of {} pairs complete</p>",
            esc(&g.name),
            esc(&title),
            count(g.pairs_done as u64),
            count(g.pairs as u64)
        );
        if lines.is_empty() {
            out.push_str("<p>No complete pair in this group yet.</p>");
        } else {
            out.push_str("<ul class=\"warnings\">");
            for (lvl, badge, text) in &lines {
                let _ = write!(out, "<li><span class=\"sev {lvl}\">{badge}</span>{text}</li>");
            }
            out.push_str("</ul>");
        }
        out.push_str("</section>\n");
    }
    let _ = write!(
        out,
        "<p class=\"meta\">Better and worse follow the median paired difference: lower is better for delays (<code>_ms</code>) and fractions \
         (<code>_fraction</code>), higher for rates (<code>_bps</code>, <code>_fps</code>). The interval is the {} bootstrap \
         confidence interval of the mean difference.</p>",
        level_pct(page.method.level)
    );
}

/// Step points of an ECDF from `x0` to `x1` (the axis range).
fn ecdf_steps(ecdf: &[(f64, f64)], x0: f64, x1: f64) -> Vec<(f64, f64)> {
    let mut pts = vec![(x0, 0.0)];
    let mut prev = 0.0;
    for &(x, f) in ecdf {
        pts.push((x, prev));
        pts.push((x, f));
        prev = f;
    }
    pts.push((x1, prev));
    pts
}

fn differences(figs: &mut Figures, page: &CampaignPage) {
    let Some(base) = &page.baseline else { return };
    let any = page
        .metrics
        .iter()
        .any(|m| m.groups.iter().any(|g| g.diffs.iter().any(|d| !d.ecdf.is_empty())));
    if !any {
        return;
    }
    figs.out.push_str("<h2>Paired differences</h2>");
    let _ = write!(
        figs.out,
        "<p class=\"meta\">A pair is one point and seed run with each configuration. Each curve is the empirical CDF of the \
         difference configuration − {} over the pairs of one group; left of the dashed line at 0 the configuration's \
         value is the lower. The legend gives, per group, the share of pairs where it did better and the number of pairs.</p>",
        esc(base)
    );
    let gcolor = |g: &str| nth_color(page.groups.iter().position(|x| x.name == g).unwrap_or(0));
    for m in &page.metrics {
        let better = Better::of(&m.metric);
        let disp = Disp::new(Unit::of(&m.metric), max_abs(m));
        for v in page.variants.iter().filter(|v| Some(*v) != page.baseline.as_ref()) {
            let diffs: Vec<(&str, &PairedDiff)> = m
                .groups
                .iter()
                .filter_map(|g| {
                    g.diffs
                        .iter()
                        .find(|d| &d.variant == v && !d.ecdf.is_empty())
                        .map(|d| (g.group.as_str(), d))
                })
                .collect();
            if diffs.is_empty() {
                continue;
            }
            let xs = diffs.iter().flat_map(|(_, d)| d.ecdf.iter().map(|p| p.0 * disp.k));
            let (mut lo, mut hi) = (0.0f64, 0.0f64);
            for x in xs.filter(|x| x.is_finite()) {
                lo = lo.min(x);
                hi = hi.max(x);
            }
            let pad = ((hi - lo) * 0.04).max(1e-9);
            let (x0, x1) = (lo - pad, hi + pad);
            let diff_name = format!("{v} − {base}");
            let title = truncate(
                &format!(
                    "Paired difference {diff_name} of the {}{}: ECDF per group",
                    metric_label(&m.metric),
                    disp.paren(true)
                ),
                TITLE_CHARS,
            );
            let mut c = Chart::new(
                title,
                Axis::linear(&truncate(&format!("{diff_name}{}", disp.paren(true)), 70), x0, x1),
                Axis::linear("fraction of pairs", 0.0, 1.0),
            );
            c.plot_height = 220.0;
            for (g, d) in &diffs {
                let pts: Vec<(f64, f64)> = d.ecdf.iter().map(|(x, f)| (x * disp.k, *f)).collect();
                let improved = match better {
                    Better::Lower => format!("{} lower", share(d.below, d.stats.n)),
                    Better::Higher => format!("{} higher", share(d.above, d.stats.n)),
                    Better::Either => format!("{} higher", share(d.above, d.stats.n)),
                };
                let verb = if better == Better::Either { "" } else { " (better)" };
                let name = if page.groups.len() > 1 {
                    format!("{g}: {improved}{verb}, n = {}", d.stats.n)
                } else {
                    format!("{improved}{verb}, n = {}", d.stats.n)
                };
                c.layers.push(Layer {
                    name,
                    color: gcolor(g),
                    mark: Mark::Line {
                        pts: ecdf_steps(&pts, x0, x1),
                        width: 1.8,
                        dash: None,
                    },
                    legend: true,
                });
            }
            c.guides.push(Guide {
                horizontal: false,
                value: 0.0,
                label: "0: no difference".into(),
            });
            c.guides.push(Guide {
                horizontal: true,
                value: 0.5,
                label: "median".into(),
            });
            figs.push(&c);
        }
    }
}

fn stats_cells(out: &mut String, s: &SampleStats, disp: &Disp, diff: bool) {
    let f = |x: f64| if diff { disp.d(x) } else { disp.v(x) };
    let ci =
        s.ci.map(|(lo, hi)| format!("{} … {}", f(lo), f(hi)))
            .unwrap_or_else(|| "–".into());
    let _ = write!(
        out,
        "<td data-stat=\"n\">{}</td><td data-stat=\"mean\">{}</td><td data-stat=\"ci\">{}</td><td data-stat=\"median\">{}</td>\
         <td data-stat=\"p90\">{}</td><td data-stat=\"iqr\">{}</td><td data-stat=\"sd\">{}</td>",
        count(s.n as u64),
        esc(&f(s.mean)),
        esc(&ci),
        esc(&f(s.median)),
        esc(&f(s.p90)),
        esc(&disp.v(s.iqr)),
        esc(&s.sd.map(|x| disp.v(x)).unwrap_or_else(|| "–".into())),
    );
}

fn stats_tables(out: &mut String, page: &CampaignPage) {
    if page.metrics.is_empty() {
        return;
    }
    out.push_str("<h2>Summary statistics</h2>");
    let _ = write!(
        out,
        "<p class=\"meta\">Per metric and group: {}. Percentiles interpolate linearly between closest ranks (numpy's default); sd is the sample standard \
         deviation (n − 1); the {} CI is a percentile bootstrap interval of the mean.</p>",
        if page.baseline.is_some() {
            "each configuration's values over the pairs where every configuration has the metric, then the paired \
             difference (bold) over the pairs where both have it"
        } else {
            "each configuration's values over its completed runs"
        },
        level_pct(page.method.level)
    );
    let multi = page.groups.len() > 1;
    for m in &page.metrics {
        let disp = Disp::new(Unit::of(&m.metric), max_abs(m));
        let _ = write!(
            out,
            "<h3>{}{}</h3><p class=\"meta\"><code>{}</code></p><table data-metric=\"{}\"><tr>{}<th class=\"l\">configuration</th><th>n</th><th>mean</th>\
             <th>{} CI of the mean</th><th>median</th><th>p90</th><th>IQR</th><th>sd</th></tr>",
            esc(&capitalise(&metric_label(&m.metric))),
            esc(&disp.paren(false)),
            esc(&m.metric),
            esc(&m.metric),
            if multi { "<th class=\"w\">group</th>" } else { "" },
            level_pct(page.method.level)
        );
        for g in m
            .groups
            .iter()
            .filter(|g| !g.diffs.is_empty() || g.values.iter().any(|(_, s)| s.is_some()))
        {
            let mut first = true;
            let mut row = |out: &mut String, kind: &str, name: &str, s: Option<&SampleStats>, diff: bool| {
                let _ = write!(
                    out,
                    "<tr class=\"{}{}\" data-group=\"{}\" data-row=\"{kind}\" data-variant=\"{}\">",
                    if first && multi { "first" } else { "" },
                    if diff { " diff" } else { "" },
                    esc(&g.group),
                    esc(name)
                );
                if multi {
                    let _ = write!(
                        out,
                        "<td class=\"w\">{}</td>",
                        if first { esc(&g.group) } else { String::new() }
                    );
                }
                first = false;
                let label = if diff {
                    format!("{name} − {}", page.baseline.as_deref().unwrap_or(""))
                } else if name.is_empty() {
                    "(the scenario)".to_string()
                } else {
                    name.to_string()
                };
                let _ = write!(out, "<td class=\"w\">{}</td>", esc(&label));
                match s {
                    Some(s) => stats_cells(out, s, &disp, diff),
                    None => out.push_str(
                        "<td data-stat=\"n\">0</td><td data-stat=\"mean\">–</td><td>–</td><td>–</td><td>–</td><td>–</td><td>–</td>",
                    ),
                }
                out.push_str("</tr>");
            };
            for (v, s) in &g.values {
                row(out, "value", v, s.as_ref(), false);
            }
            for d in &g.diffs {
                row(out, "difference", &d.variant, Some(&d.stats), true);
            }
        }
        out.push_str("</table>");
    }
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn param_charts(figs: &mut Figures, page: &CampaignPage) {
    if page.params.iter().all(|p| p.metrics.is_empty()) {
        return;
    }
    figs.out.push_str("<h2>Against the parameters</h2>");
    let _ = write!(
        figs.out,
        "<p class=\"meta\">Each metric against each parameter that takes several values: per configuration{}, the mean over \
         the runs at that value (all seeds, and every value of the other parameters) with its {} bootstrap confidence \
         interval as an error bar. Series are shifted sideways a little so their bars do not overlap.</p>",
        if page.groups.len() > 1 {
            " (colour) and group (line style)"
        } else {
            " (colour)"
        },
        level_pct(page.method.level)
    );
    let vcolor = |v: &str| nth_color(page.variants.iter().position(|x| x == v).unwrap_or(0));
    let group_dash = |g: &str| {
        let i = page.groups.iter().position(|x| x.name == g).unwrap_or(0);
        RUN_DASHES[i % RUN_DASHES.len()]
    };
    for p in &page.params {
        if p.metrics.is_empty() {
            continue;
        }
        let _ = write!(figs.out, "<h3><code>{}</code></h3>", esc(&p.param));
        if !p.note.is_empty() {
            let _ = write!(figs.out, "<p class=\"meta\">{}</p>", esc(&p.note));
        }
        let truncated = p
            .categories
            .iter()
            .any(|c| c.chars().count() > cat_chars(p.categories.len()));
        if truncated {
            let list: Vec<String> = p
                .categories
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{}: {c}", i + 1))
                .collect();
            let _ = write!(
                figs.out,
                "<p class=\"meta\">Values, left to right: {}</p>",
                esc(&list.join("; "))
            );
        }
        for pm in &p.metrics {
            if let Some(c) = param_chart(page, p, pm, &vcolor, &group_dash) {
                figs.push(&c);
            }
        }
    }
}

/// Characters of a category label: what fits its share of the plot width.
fn cat_chars(n: usize) -> usize {
    ((crate::charts::PLOT_WIDTH / n.max(1) as f64) / 6.5)
        .floor()
        .clamp(4.0, 40.0) as usize
}

fn param_chart(
    page: &CampaignPage,
    p: &ParamCharts,
    pm: &ParamMetric,
    vcolor: &dyn Fn(&str) -> String,
    group_dash: &dyn Fn(&str) -> Option<&'static str>,
) -> Option<Chart> {
    let unit = Unit::of(&pm.metric);
    let all: Vec<&ParamPoint> = pm.series.iter().flat_map(|s| s.points.iter()).collect();
    let max_abs = all
        .iter()
        .map(|q| q.mean.abs())
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let disp = Disp::new(unit, max_abs);
    let ys: Vec<f64> = all
        .iter()
        .flat_map(|q| {
            let (lo, hi) = q.ci.unwrap_or((q.mean, q.mean));
            [q.mean, lo, hi]
        })
        .map(|y| y * disp.k)
        .filter(|y| y.is_finite())
        .collect();
    if ys.is_empty() {
        return None;
    }
    let (ymin, ymax) = ys.iter().fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(*y), b.max(*y)));
    let ypad = ((ymax - ymin) * 0.08).max(ymax.abs() * 0.02).max(1e-9);
    let y = Axis::linear(
        &truncate(
            &format!("{}{}", capitalise(&split_metric(&pm.metric).1), disp.paren(false)),
            40,
        ),
        ymin - ypad,
        ymax + ypad,
    );
    let xs: Vec<f64> = all.iter().map(|q| q.x).filter(|x| x.is_finite()).collect();
    let x = if !p.categories.is_empty() {
        Axis::categories(&p.axis, &p.categories, cat_chars(p.categories.len()))
    } else {
        let (lo, hi) = xs.iter().fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
        if p.log && lo > 0.0 {
            let k = (hi / lo).powf(0.05).max(1.05);
            Axis::log(&p.axis, lo / k, hi * k)
        } else {
            let pad = ((hi - lo) * 0.05).max(hi.abs() * 0.05).max(1e-9);
            Axis::linear(&p.axis, lo - pad, hi + pad)
        }
    };
    let title = truncate(
        &format!(
            "{}{} against {}: mean and {} CI",
            capitalise(&metric_label(&pm.metric)),
            disp.paren(false),
            p.param,
            level_pct(page.method.level)
        ),
        TITLE_CHARS,
    );
    let mut c = Chart::new(title, x, y);
    c.plot_height = 220.0;
    // Sideways shift of series j of m, in axis fractions.
    let m = pm.series.len().max(1);
    let mut distinct = xs.clone();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    let step = (0.4 / (distinct.len().max(1) * m) as f64).min(0.006);
    // The legend: each variant's colour, solid (the line style is the group's).
    let mut named: Vec<&str> = Vec::new();
    for s in pm.series.iter().filter(|_| page.variants.len() > 1) {
        if !named.contains(&s.variant.as_str()) {
            named.push(&s.variant);
            c.layers.push(Layer {
                name: if s.variant.is_empty() {
                    "(the scenario)".to_string()
                } else {
                    s.variant.clone()
                },
                color: vcolor(&s.variant),
                mark: Mark::Line {
                    pts: Vec::new(),
                    width: 1.6,
                    dash: None,
                },
                legend: true,
            });
        }
    }
    for (j, s) in pm.series.iter().enumerate() {
        let shift = (j as f64 - (m as f64 - 1.0) / 2.0) * step;
        let xa = c.x.clone();
        let at = |x: f64| xa.at(xa.frac(x) + shift);
        let color = vcolor(&s.variant);
        let dash = if page.groups.len() > 1 {
            group_dash(&s.group)
        } else {
            None
        };
        let pts: Vec<(f64, f64)> = s.points.iter().map(|q| (at(q.x), q.mean * disp.k)).collect();
        let bars: Vec<(f64, f64, f64)> = s
            .points
            .iter()
            .filter_map(|q| q.ci.map(|(lo, hi)| (at(q.x), lo * disp.k, hi * disp.k)))
            .collect();
        c.layers.push(Layer {
            name: String::new(),
            color: color.clone(),
            mark: Mark::Line {
                pts: pts.clone(),
                width: 1.6,
                dash,
            },
            legend: false,
        });
        c.layers.push(Layer {
            name: String::new(),
            color: color.clone(),
            mark: Mark::ErrorBars { bars, width: 1.3 },
            legend: false,
        });
        c.layers.push(Layer {
            name: String::new(),
            color,
            mark: Mark::Points { pts, radius: 3.2 },
            legend: false,
        });
    }
    if page.groups.len() > 1 {
        c.legend_styles = page
            .groups
            .iter()
            .map(|g| (format!("group {}", g.name), group_dash(&g.name)))
            .collect();
    }
    c.has_data().then_some(c)
}

fn method(out: &mut String, page: &CampaignPage) {
    let m = &page.method;
    let _ = write!(
        out,
        "<h2>Method</h2><ul class=\"meta\">\
         <li>Every configuration of a point runs with the same seed (a pair); the difference is taken within each pair, \
         so what the point and seed fix (the random draws of the scenario) cancels out.</li>\
         <li>Percentiles (median, p90, quartiles) interpolate linearly between the closest ranks: \
         numpy's default, <code>np.percentile(x, q)</code>. sd is the sample standard deviation (divisor n − 1, \
         pandas' <code>Series.std()</code>), – for a single value. Missing values are left out.</li>\
         <li>Confidence intervals of a mean are {} percentile bootstrap intervals (Efron &amp; Tibshirani 1993, §13.3): \
         {} resamples with replacement, drawn from a fixed seed, so the same store gives the same intervals. They are \
         a little narrow for small n.</li>\
         <li>A parameter's chart has a point per swept value; a sampled parameter with more than {} distinct values is cut \
         into {} bins holding equal numbers of draws (quantile bins), each drawn at the median of its values.</li>\
         <li>Metrics are the columns of <code>index.parquet</code>; <code>pairs.parquet</code> holds every paired \
         difference shown here.</li></ul>",
        level_pct(m.level),
        count(m.resamples as u64),
        m.bins,
        m.bins
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(mean: f64, n: usize) -> SampleStats {
        SampleStats {
            n,
            mean,
            median: mean,
            p90: mean + 1.0,
            q25: mean - 1.0,
            q75: mean + 1.0,
            iqr: 2.0,
            sd: Some(1.5),
            ci: Some((mean - 0.5, mean + 0.5)),
        }
    }

    fn page() -> CampaignPage {
        let metric = "flow.bulk <b>.owd_p99_ms".to_string();
        let diff = PairedDiff {
            variant: "l4s".into(),
            stats: stats(-21.4321, 120),
            ecdf: vec![(-30.0, 0.25), (-20.0, 0.9), (2.0, 1.0)],
            below: 108,
            above: 12,
        };
        CampaignPage {
            name: "sweep".into(),
            description: "a <test> campaign".into(),
            store: "results/campaigns/sweep".into(),
            variants: vec!["l4s".into(), "classic".into()],
            baseline: Some("classic".into()),
            points: 8,
            seeds: 15,
            groups: vec![
                GroupCount {
                    name: "evening".into(),
                    pairs: 60,
                    pairs_done: 60,
                },
                GroupCount {
                    name: "night".into(),
                    pairs: 60,
                    pairs_done: 60,
                },
            ],
            pairs: 120,
            pairs_done: 118,
            runs_planned: 240,
            runs_done: 236,
            runs_failed: 1,
            metrics: vec![MetricStats {
                metric: metric.clone(),
                groups: ["evening", "night"]
                    .iter()
                    .map(|g| GroupStats {
                        group: g.to_string(),
                        values: vec![
                            ("l4s".into(), Some(stats(10.0, 120))),
                            ("classic".into(), Some(stats(31.4321, 120))),
                        ],
                        diffs: vec![diff.clone()],
                    })
                    .collect(),
            }],
            params: vec![ParamCharts {
                param: "topology.rate".into(),
                axis: "topology.rate (Mbit/s)".into(),
                note: "each swept value".into(),
                metrics: vec![ParamMetric {
                    metric,
                    series: vec![ParamSeries {
                        variant: "l4s".into(),
                        group: "evening".into(),
                        points: vec![
                            ParamPoint {
                                x: 10.0,
                                n: 30,
                                mean: 12.0,
                                ci: Some((11.0, 13.0)),
                            },
                            ParamPoint {
                                x: 20.0,
                                n: 30,
                                mean: 8.0,
                                ci: Some((7.5, 8.5)),
                            },
                        ],
                    }],
                }],
                ..ParamCharts::default()
            }],
            generator: "l4s-lab test".into(),
            ..CampaignPage::default()
        }
    }

    #[test]
    fn numbers_keep_four_significant_digits() {
        assert_eq!(num(21.4321), "21.43");
        assert_eq!(num(0.233), "0.2330");
        assert_eq!(num(1234.56), "1235");
        assert_eq!(num(-0.00001234), "-0.000012");
        assert_eq!(num(-0.0000001), "0");
        assert_eq!(num(f64::NAN), "–");
        assert_eq!(signed(1.5), "+1.500");
        assert_eq!(signed(-21.4321), "-21.43");
        assert_eq!(signed(0.0), "0");
        assert_eq!(share(119, 120), "99 %");
        assert_eq!(share(1999, 2000), ">99 %");
        assert_eq!(share(1, 1000), "<1 %");
        assert_eq!(share(112, 120), "93 %");
    }

    #[test]
    fn metrics_are_named_in_words_with_their_direction() {
        assert_eq!(metric_label("flow.bulk.owd_p99_ms"), "p99 one-way delay of 'bulk'");
        assert_eq!(metric_label("flow.a.b.frame_delay_p99_ms"), "p99 frame delay of 'a.b'");
        assert_eq!(
            metric_label("flow.web.page_time_p99_ms"),
            "p99 page completion time of 'web'"
        );
        assert_eq!(
            metric_label("queue.bottleneck.L.sojourn_p999_ms"),
            "p99.9 sojourn time at queue 'bottleneck.L'"
        );
        assert_eq!(metric_label("class.L4S.throughput_bps"), "throughput of class L4S");
        assert_eq!(Better::of("flow.a.loss_fraction"), Better::Lower);
        assert_eq!(Better::of("flow.a.received_fps"), Better::Higher);
        assert_eq!(Better::of("flow.a.retransmits"), Better::Either);
        assert_eq!(Better::Higher.improves(-1.0), Some(false));
        assert_eq!(Better::Lower.improves(0.0), None);
    }

    #[test]
    fn page_says_what_is_missing_escapes_names_and_draws_charts() {
        let html = render_campaign(&page());
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("Incomplete campaign: 236 of 240 runs done (4 missing, of which 1 failed"));
        assert!(html.contains("a &lt;test&gt; campaign"));
        assert!(!html.contains("bulk <b>"), "names are escaped");
        assert!(html.contains("<b>l4s</b> lowered the p99 one-way delay of &#39;bulk &lt;b&gt;&#39; in 90 % of 120 pairs against classic (raised it in 10 %); median difference -21.43 ms"));
        assert!(html.contains("data-stat=\"mean\">-21.43<"));
        assert!(html.contains("data-stat=\"mean\">31.43<"));
        let (_, charts) = render_campaign_with_charts(&page());
        // One ECDF and one parameter chart.
        assert_eq!(charts.len(), 2);
        assert!(charts[0].1.contains("0: no difference"));
        assert!(charts[1].1.contains("<circle") && charts[1].1.contains("V"));
        assert_eq!(html.matches("<svg").count(), 2);
        assert!(!html.contains("http") && !html.contains("<script"));
        let mut done = page();
        done.runs_done = done.runs_planned;
        assert!(!render_campaign(&done).contains("Incomplete"));
        // Nothing done yet: a page all the same.
        let empty = CampaignPage {
            runs_planned: 4,
            baseline: Some("classic".into()),
            ..CampaignPage::default()
        };
        let html = render_campaign(&empty);
        assert!(html.contains("Incomplete campaign") && html.contains("no pair is complete"));
        assert!(!html.contains("<svg"));
    }
}
