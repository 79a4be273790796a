//! The campaign's page, `DIR/campaign.html`, made from the store alone: its marker, its
//! plan and the summary of every completed run (read with [`tables::metrics`], so the
//! page's numbers are those of `index.parquet` and `pairs.parquet`).
//!
//! The statistics ([`super::stats`]): per chosen metric and group, each variant's summary
//! statistics over the complete pairs, and the paired difference `variant − baseline`
//! (pairs as in `pairs.parquet`: the same pair, each variant against the plan's
//! baseline) with its empirical CDF; per parameter that takes several values, the mean of
//! each metric per variant and group at each value with its bootstrap interval. A sampled
//! numeric parameter with more than [`BINS`] distinct values is cut into [`BINS`] quantile
//! bins (equal numbers of distinct draws), each placed at the median of its values.
//! `l4s_report::campaign` draws the page.

use super::plan::Plan;
use super::stats::{self, Stats, BOOTSTRAP_RESAMPLES, CI_LEVEL};
use super::{store, tables};
use crate::Error;
use l4s_core::units;
use l4s_report::campaign::{
    CampaignPage, GroupCount, GroupStats, Method, MetricStats, PairedDiff, ParamCharts, ParamMetric, ParamPoint,
    ParamSeries, SampleStats,
};
use l4s_report::charts::fnv1a;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The metrics shown by default: every flow's p99 one-way delay, and the p99 frame delay
/// of media flows and p99 completion times of application flows where there are any.
pub const DEFAULT_METRICS: [&str; 3] = ["flow.*.owd_p99_ms", "flow.*.frame_delay_p99_ms", "flow.*.*_time_p99_ms"];

/// Quantile bins of a sampled parameter with more distinct values than this.
pub const BINS: usize = 8;

/// The group of a campaign without `[[groups]]`.
pub const ALL: &str = "all";

/// What the page shows.
#[derive(Clone, Debug, Default)]
pub struct ReportOptions {
    /// Also write every chart as a PNG into `DIR/png/`.
    pub png: bool,
    /// Metrics to show: column names of `index.parquet`, where `*` matches any text (such
    /// as `flow.*.throughput_bps`). Empty: [`DEFAULT_METRICS`].
    pub metrics: Vec<String>,
}

/// The files written.
#[derive(Clone, Debug)]
pub struct Written {
    pub html: PathBuf,
    /// The charts as PNG (with [`ReportOptions::png`]).
    pub pngs: Vec<PathBuf>,
    /// What the page notes about the store (runs left out, the campaign's metrics that
    /// match nothing), for the caller to say too.
    pub notes: Vec<String>,
}

/// Write `DIR/campaign.html` (atomically) for the store at `dir`, and with `png` each of
/// its charts as a PNG into `DIR/png/`. Returns the page's path.
pub fn write_report(dir: &Path, png: bool) -> Result<PathBuf, Error> {
    write_report_with(
        dir,
        &ReportOptions {
            png,
            ..ReportOptions::default()
        },
    )
    .map(|w| w.html)
}

/// [`write_report`] with a choice of metrics.
pub fn write_report_with(dir: &Path, opts: &ReportOptions) -> Result<Written, Error> {
    write(dir, opts, store::active(dir))
}

/// Write the page; `active`: another process is running the campaign (the page says so).
pub(crate) fn write(dir: &Path, opts: &ReportOptions, active: bool) -> Result<Written, Error> {
    let page = page_of(dir, &opts.metrics, active)?;
    let (html, charts) = l4s_report::campaign::render_campaign_with_charts(&page);
    let path = dir.join("campaign.html");
    l4s_metrics::results::write_file_atomic(&path, html.as_bytes())
        .map_err(|e| Error::output(format!("cannot write {}: {e}", path.display())))?;
    let pngs = if opts.png {
        l4s_report::write_chart_pngs(&charts, &dir.join("png"), l4s_report::DEFAULT_PNG_SCALE)
            .map_err(|e| Error::output(e.to_string()))?
    } else {
        Vec::new()
    };
    Ok(Written {
        html: path,
        pngs,
        notes: page.notes,
    })
}

/// Does `name` match `pattern`, where `*` matches any text (dots included)?
fn glob(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    true
}

/// Statistics with their bootstrap interval, as the page takes them. The interval's seed
/// comes from `label`, so every statistic has its own draws and the same store gives the
/// same page.
fn sample(values: &[f64], label: &str) -> Option<SampleStats> {
    let s: Stats = Stats::of(values)?;
    Some(SampleStats {
        n: s.n,
        mean: s.mean,
        median: s.median,
        p90: s.p90,
        q25: s.q25,
        q75: s.q75,
        iqr: s.iqr,
        sd: s.sd,
        ci: stats::bootstrap_mean_ci(values, CI_LEVEL, BOOTSTRAP_RESAMPLES, fnv1a(label)),
    })
}

/// A completed run's chosen metrics.
type Row = HashMap<String, f64>;

/// Build the page of the store at `dir` (`metrics` as in [`ReportOptions::metrics`]).
pub fn page(dir: &Path, metrics: &[String]) -> Result<CampaignPage, Error> {
    page_of(dir, metrics, store::active(dir))
}

fn page_of(dir: &Path, metrics: &[String], active: bool) -> Result<CampaignPage, Error> {
    let marker = store::marker(dir)?;
    let plan = store::read_plan(dir)?;
    // Asked for, else the campaign's own choice, else the defaults.
    let patterns: Vec<&str> = if !metrics.is_empty() {
        metrics.iter().map(String::as_str).collect()
    } else if !plan.metrics.is_empty() {
        plan.metrics.iter().map(String::as_str).collect()
    } else {
        DEFAULT_METRICS.to_vec()
    };
    let chosen = |m: &str| patterns.iter().any(|p| glob(p, m));

    // Every completed distinct run's chosen metrics, read once.
    let mut rows: HashMap<&str, Row> = HashMap::new();
    let mut names: Vec<String> = Vec::new();
    let (mut unreadable, mut failed) = (Vec::new(), 0);
    // Every metric of the first completed run, to name when none is chosen.
    let mut all: Vec<String> = Vec::new();
    let uniq = plan.unique_runs();
    for r in &uniq {
        if store::run_dir(dir, &r.key).join("summary.json").is_file() {
            match store::load_summary(dir, &r.key) {
                Ok(s) => {
                    let row: Row = tables::metrics(&s).into_iter().filter(|(k, _)| chosen(k)).collect();
                    // In the order of the summary (flows in scenario order), each once.
                    for (k, _) in tables::metrics(&s) {
                        if all.len() < 12 && rows.is_empty() {
                            all.push(k.clone());
                        }
                        if row.contains_key(&k) && !names.contains(&k) {
                            names.push(k);
                        }
                    }
                    rows.insert(r.key.as_str(), row);
                }
                Err(e) => unreadable.push(e),
            }
        } else if dir.join("failed").join(format!("{}.txt", r.key)).is_file() {
            failed += 1;
        }
    }

    // Groups in plan order, and each point's. A swept parameter whose values are names (a
    // labelled sweep such as the service under test, a controller's name; not numbers with
    // units, not tables) splits the groups too: "cdn-download · evening".
    let categorical: Vec<usize> = (0..plan.swept.min(plan.params.len()))
        .filter(|&i| {
            let vals: Vec<&str> = plan.points.iter().map(|p| p.values[i].as_str()).collect();
            vals.iter().all(|v| v.starts_with('"')) && tables::numeric(&vals).is_none()
        })
        .collect();
    let mut groups: Vec<String> = Vec::new();
    let point_group: Vec<usize> = plan
        .points
        .iter()
        .map(|p| {
            let mut parts: Vec<String> = categorical.iter().map(|&i| tables::text_cell(&p.values[i])).collect();
            parts.extend(p.group.clone());
            let g = if parts.is_empty() {
                ALL.to_string()
            } else {
                parts.join(" · ")
            };
            match groups.iter().position(|x| *x == g) {
                Some(i) => i,
                None => {
                    groups.push(g);
                    groups.len() - 1
                }
            }
        })
        .collect();
    if groups.is_empty() {
        groups.push(ALL.to_string());
    }

    // Pairs: the run of each variant (None until it is done).
    let nv = plan.variants.len();
    let mut pairs: BTreeMap<u32, (usize, Vec<Option<&Row>>)> = BTreeMap::new();
    for r in &plan.runs {
        let e = pairs
            .entry(r.pair)
            .or_insert_with(|| (point_group[r.point as usize], vec![None; nv]));
        e.1[r.variant as usize] = rows.get(r.key.as_str());
    }
    let mut counts: Vec<GroupCount> = groups
        .iter()
        .map(|g| GroupCount {
            name: g.clone(),
            ..GroupCount::default()
        })
        .collect();
    for (g, runs) in pairs.values() {
        counts[*g].pairs += 1;
        if runs.iter().all(Option::is_some) {
            counts[*g].pairs_done += 1;
        }
    }

    let metric_stats: Vec<MetricStats> = par_map(&names, |m| metric_stats(&plan, m, &groups, &pairs, &rows));
    let params = param_charts(dir, &plan, &names, &groups, &point_group, &rows);

    let mut notes = Vec::new();
    if !unreadable.is_empty() {
        notes.push(format!(
            "{} completed runs were left out: their summary.json does not read (the next `l4s campaign run` does them again); first: {}",
            unreadable.len(),
            unreadable[0]
        ));
    }
    if !rows.is_empty() && names.is_empty() && !metrics.is_empty() {
        // Asked for by name: a pattern that matches nothing is a mistake to say at once.
        return Err(Error::input(format!(
            "--metric {}: no metric of the completed runs matches; they are the columns of index.parquet, such as {}",
            patterns.join(", "),
            all.join(", ")
        )));
    }
    if !rows.is_empty() && names.is_empty() {
        notes.push(format!(
            "No completed run has a metric matching {}: the metrics are the columns of index.parquet.",
            patterns.join(", ")
        ));
    }
    Ok(CampaignPage {
        name: plan.name.clone(),
        description: plan.description.clone(),
        store: dir.display().to_string(),
        variants: plan.variants.clone(),
        baseline: plan.baseline.map(|b| plan.variants[b as usize].clone()),
        points: plan.points.len(),
        seeds: plan.seeds.len(),
        pairs: pairs.len(),
        pairs_done: counts.iter().map(|c| c.pairs_done).sum(),
        groups: counts,
        runs_planned: uniq.len(),
        runs_done: rows.len(),
        runs_failed: failed,
        active,
        notes,
        metrics: metric_stats,
        params,
        method: Method {
            level: CI_LEVEL,
            resamples: BOOTSTRAP_RESAMPLES,
            bins: BINS,
        },
        generator: format!(
            "l4s-lab {} (store of l4s {})",
            env!("CARGO_PKG_VERSION"),
            marker.l4s_version
        ),
    })
}

/// One metric, group by group: each variant's values over the pairs where every variant
/// has it, and each variant against the baseline over the pairs where both have it. A
/// campaign without a baseline: each variant's values over all its completed runs.
fn metric_stats(
    plan: &Plan,
    metric: &str,
    groups: &[String],
    pairs: &BTreeMap<u32, (usize, Vec<Option<&Row>>)>,
    rows: &HashMap<&str, Row>,
) -> MetricStats {
    let nv = plan.variants.len();
    let get = |r: &Option<&Row>| r.and_then(|r| r.get(metric).copied());
    let label = |g: &str, what: &str| format!("{metric}\u{0}{g}\u{0}{what}");
    let mut out = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        let in_group = || pairs.values().filter(move |(pg, _)| *pg == gi);
        let mut values = Vec::new();
        let mut diffs = Vec::new();
        match plan.baseline {
            Some(b) => {
                let b = b as usize;
                let mut per: Vec<Vec<f64>> = vec![Vec::new(); nv];
                for (_, runs) in in_group() {
                    let vals: Vec<Option<f64>> = runs.iter().map(get).collect();
                    if vals.iter().all(Option::is_some) {
                        for (v, x) in vals.iter().enumerate() {
                            per[v].push(x.unwrap_or(f64::NAN));
                        }
                    }
                }
                for (v, name) in plan.variants.iter().enumerate() {
                    values.push((name.clone(), sample(&per[v], &label(g, name))));
                }
                for (v, name) in plan.variants.iter().enumerate().filter(|(v, _)| *v != b) {
                    let d: Vec<f64> = in_group()
                        .filter_map(|(_, runs)| Some(get(&runs[v])? - get(&runs[b])?))
                        .collect();
                    let Some(stats) = sample(&d, &label(g, &format!("{name} - baseline"))) else {
                        continue;
                    };
                    diffs.push(PairedDiff {
                        variant: name.clone(),
                        stats,
                        ecdf: stats::ecdf(&d),
                        below: d.iter().filter(|x| **x < 0.0).count(),
                        above: d.iter().filter(|x| **x > 0.0).count(),
                    });
                }
            }
            None => {
                for (v, name) in plan.variants.iter().enumerate() {
                    let x: Vec<f64> = plan
                        .runs
                        .iter()
                        .filter(|r| r.variant as usize == v && pairs.get(&r.pair).is_some_and(|p| p.0 == gi))
                        .filter_map(|r| rows.get(r.key.as_str())?.get(metric).copied())
                        .collect();
                    values.push((name.clone(), sample(&x, &label(g, name))));
                }
            }
        }
        out.push(GroupStats {
            group: g.clone(),
            values,
            diffs,
        });
    }
    MetricStats {
        metric: metric.to_string(),
        groups: out,
    }
}

/// A parameter's values, as the x axis shows them.
enum ParamValues {
    /// Numbers in the axis' unit, and the unit.
    Num(Vec<f64>, &'static str),
    Text(Vec<String>),
}

/// The values of parameter `key` at each point (TOML text), as numbers in one unit when
/// every value is a number, a duration, a rate or a size (a value that reads as both a
/// rate and a size, such as `"64kB"`, is a rate when the key's last part names one).
fn param_values(key: &str, texts: &[&str]) -> ParamValues {
    if let Some(v) = texts
        .iter()
        .map(|t| t.parse::<f64>().ok())
        .collect::<Option<Vec<f64>>>()
    {
        return ParamValues::Num(v, "");
    }
    let inner: Option<Vec<&str>> = texts
        .iter()
        .map(|v| v.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
        .collect();
    if let Some(inner) = inner {
        let all = |f: &dyn Fn(&str) -> Option<f64>| inner.iter().map(|v| f(v)).collect::<Option<Vec<f64>>>();
        let max = |v: &[f64]| v.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        if let Some(s) = all(&|v| units::parse_dur(v).ok().map(|d| d.as_secs_f64())) {
            return if max(&s) < 10.0 {
                ParamValues::Num(s.iter().map(|x| x * 1e3).collect(), "ms")
            } else {
                ParamValues::Num(s, "s")
            };
        }
        let rates = all(&|v| units::parse_rate(v).ok().map(|r| r.0 as f64));
        let sizes = all(&|v| units::parse_bytes(v).ok().map(|b| b as f64));
        let last = key.rsplit('.').next().unwrap_or(key);
        let rate_key = last.contains("rate") || last.contains("capacity") || last.contains("bps");
        let pick = match (rates, sizes) {
            (Some(r), Some(_)) if rate_key => Some((r, true)),
            (_, Some(s)) => Some((s, false)),
            (Some(r), None) => Some((r, true)),
            (None, None) => None,
        };
        if let Some((v, is_rate)) = pick {
            let m = max(&v);
            let (div, unit) = if is_rate {
                if m >= 2e9 {
                    (1e9, "Gbit/s")
                } else if m >= 2e6 {
                    (1e6, "Mbit/s")
                } else if m >= 2e3 {
                    (1e3, "kbit/s")
                } else {
                    (1.0, "bit/s")
                }
            } else if m >= 2e6 {
                (1e6, "MB")
            } else if m >= 2e3 {
                (1e3, "kB")
            } else {
                (1.0, "bytes")
            };
            return ParamValues::Num(v.iter().map(|x| x / div).collect(), unit);
        }
    }
    ParamValues::Text(texts.iter().map(|t| text_cell(t)).collect())
}

/// A TOML value as text: a string without its quotes, anything else as written.
fn text_cell(v: &str) -> String {
    match format!("x = {v}").parse::<toml::Table>() {
        Ok(t) => match t.get("x") {
            Some(toml::Value::String(s)) => s.clone(),
            _ => v.to_string(),
        },
        Err(_) => v.to_string(),
    }
}

/// The swept parameters: the keys of `[sweep]` in the store's copy of the campaign file
/// (`None` if it does not read).
fn swept(dir: &Path) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(dir.join("campaign.toml")).ok()?;
    let t: toml::Table = text.parse().ok()?;
    Some(match t.get("sweep").and_then(|s| s.as_table()) {
        Some(s) => s.keys().cloned().collect(),
        None => Vec::new(),
    })
}

/// Each parameter with several values among the completed runs, and every metric against it.
fn param_charts(
    dir: &Path,
    plan: &Plan,
    metrics: &[String],
    groups: &[String],
    point_group: &[usize],
    rows: &HashMap<&str, Row>,
) -> Vec<ParamCharts> {
    let swept = swept(dir);
    let done: Vec<&super::plan::PlannedRun> = plan.runs.iter().filter(|r| rows.contains_key(r.key.as_str())).collect();
    let mut out = Vec::new();
    for (i, key) in plan.params.iter().enumerate() {
        let texts: Vec<&str> = plan.points.iter().map(|p| p.values[i].as_str()).collect();
        let values = param_values(key, &texts);
        // x of each point, and how x was formed.
        let (x_of, categories, axis, log, note): (Vec<f64>, Vec<String>, String, bool, String) = match values {
            ParamValues::Text(t) => {
                let mut cats: Vec<String> = Vec::new();
                let x = t
                    .iter()
                    .map(|c| match cats.iter().position(|x| x == c) {
                        Some(j) => j as f64,
                        None => {
                            cats.push(c.clone());
                            (cats.len() - 1) as f64
                        }
                    })
                    .collect();
                (x, cats, key.clone(), false, "A point per value.".into())
            }
            ParamValues::Num(v, unit) => {
                let axis = if unit.is_empty() {
                    key.clone()
                } else {
                    format!("{key} ({unit})")
                };
                let mut distinct: Vec<f64> = done.iter().map(|r| v[r.point as usize]).collect();
                distinct.sort_by(f64::total_cmp);
                distinct.dedup();
                let is_swept = swept.as_ref().map(|s| s.contains(key));
                let sampled = is_swept == Some(false) || (is_swept.is_none() && distinct.len() > BINS);
                let pos = distinct.first().is_some_and(|x| *x > 0.0);
                let log = pos && distinct.last().copied().unwrap_or(0.0) / distinct[0] >= 10.0;
                if sampled && distinct.len() > BINS {
                    // Quantile bins: equal numbers of distinct draws, at their median.
                    let m = distinct.len();
                    // Bin b holds the distinct values b·m/BINS .. (b + 1)·m/BINS.
                    let bin_of = |x: f64| {
                        let j = distinct.partition_point(|d| *d < x);
                        (0..BINS).find(|b| j < (b + 1) * m / BINS).unwrap_or(BINS - 1)
                    };
                    let centre: Vec<f64> = (0..BINS)
                        .map(|b| stats::percentile(&distinct[b * m / BINS..(b + 1) * m / BINS], 50.0))
                        .collect();
                    let x = v.iter().map(|x| centre[bin_of(*x)]).collect();
                    let note = format!(
                        "Sampled: its {m} distinct drawn values are cut into {BINS} quantile bins (equal numbers of draws); \
                         each bin is drawn at the median of its values."
                    );
                    (x, Vec::new(), axis, log, note)
                } else {
                    let note = if sampled {
                        "Sampled: a point per drawn value."
                    } else {
                        "Swept: a point per value."
                    };
                    (v, Vec::new(), axis, log, note.to_string())
                }
            }
        };
        let mut xs: Vec<f64> = done.iter().map(|r| x_of[r.point as usize]).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        if xs.len() < 2 {
            continue;
        }
        let pm = par_map(metrics, |metric| {
            let mut series = Vec::new();
            for (gi, g) in groups.iter().enumerate() {
                for (vi, variant) in plan.variants.iter().enumerate() {
                    // Values of the metric at each x, in x order.
                    let mut at: BTreeMap<u64, (f64, Vec<f64>)> = BTreeMap::new();
                    for r in done
                        .iter()
                        .filter(|r| r.variant as usize == vi && point_group[r.point as usize] == gi)
                    {
                        let Some(y) = rows[r.key.as_str()].get(metric) else {
                            continue;
                        };
                        let x = x_of[r.point as usize];
                        at.entry(order_key(x)).or_insert((x, Vec::new())).1.push(*y);
                    }
                    let points: Vec<ParamPoint> = at
                        .values()
                        .filter_map(|(x, ys)| {
                            let s = Stats::of(ys)?;
                            let label = format!("{metric}\u{0}{key}\u{0}{g}\u{0}{variant}\u{0}{x}");
                            Some(ParamPoint {
                                x: *x,
                                n: s.n,
                                mean: s.mean,
                                ci: stats::bootstrap_mean_ci(ys, CI_LEVEL, BOOTSTRAP_RESAMPLES, fnv1a(&label)),
                            })
                        })
                        .collect();
                    if !points.is_empty() {
                        series.push(ParamSeries {
                            variant: variant.clone(),
                            group: g.clone(),
                            points,
                        });
                    }
                }
            }
            ParamMetric {
                metric: metric.clone(),
                series,
            }
        });
        out.push(ParamCharts {
            param: key.clone(),
            axis,
            categories,
            log,
            note,
            metrics: pm.into_iter().filter(|m| !m.series.is_empty()).collect(),
        });
    }
    out
}

/// `f` of each item, in item order, on every core: the bootstrap intervals of a campaign
/// of many thousand pairs take a while.
fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let (f, next) = (&f, &next);
    let mut out: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        done.push((i, f(item)));
                    }
                    done
                })
            })
            .collect();
        for w in workers {
            for (i, r) in w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)) {
                out[i] = Some(r);
            }
        }
    });
    out.into_iter().map(|r| r.expect("every item is mapped")).collect()
}

/// A key that sorts like the number `x` (total order).
fn order_key(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_metric_names() {
        assert!(glob("flow.*.owd_p99_ms", "flow.bulk.owd_p99_ms"));
        assert!(glob("flow.*.owd_p99_ms", "flow.a.b.owd_p99_ms"));
        assert!(!glob("flow.*.owd_p99_ms", "flow.bulk.owd_p999_ms"));
        assert!(glob("flow.*.*_time_p99_ms", "flow.web.page_time_p99_ms"));
        assert!(!glob("flow.*.*_time_p99_ms", "flow.web.owd_p99_ms"));
        assert!(glob("queue.bottleneck.utilization", "queue.bottleneck.utilization"));
        assert!(!glob("a*a", "a"));
        assert!(glob("*", "anything"));
    }

    #[test]
    fn parameters_read_in_their_unit() {
        let num = |v: ParamValues| match v {
            ParamValues::Num(v, u) => (v, u),
            ParamValues::Text(t) => panic!("text {t:?}"),
        };
        assert_eq!(
            num(param_values("topology.rate", &["\"20Mbit\"", "\"1Gbit\""])),
            (vec![20.0, 1000.0], "Mbit/s")
        );
        assert_eq!(
            num(param_values("topology.rtt", &["\"10ms\"", "\"1s\""])),
            (vec![10.0, 1000.0], "ms")
        );
        assert_eq!(num(param_values("x.n", &["2", "2.5"])), (vec![2.0, 2.5], ""));
        assert_eq!(
            num(param_values("topology.buffer", &["\"64kB\"", "\"1MB\""])),
            (vec![64.0, 1000.0], "kB")
        );
        assert_eq!(
            num(param_values("links.a.rate", &["\"500kB\"", "\"1MB\""])),
            (vec![4.0, 8.0], "Mbit/s")
        );
        match param_values("flows.a.cc", &["\"prague\"", "{ kind = \"fifo\" }"]) {
            ParamValues::Text(t) => assert_eq!(t, ["prague", "{ kind = \"fifo\" }"]),
            ParamValues::Num(..) => panic!(),
        }
        let mut k: Vec<u64> = [3.0, -1.0, 0.0, -7.5, 2.0].iter().map(|x| order_key(*x)).collect();
        k.sort();
        assert_eq!(k, [-7.5, -1.0, 0.0, 2.0, 3.0].map(order_key));
    }
}
