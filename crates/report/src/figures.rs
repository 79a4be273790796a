//! The report's charts, built from a loaded results directory. Each function returns
//! charts with data only (an empty chart is never drawn; the caller says what is missing).

use crate::charts::{Axis, Chart, Guide, Layer, Mark, Palette, Points};
use crate::data::{DistKind, FlowCol, QueueCol, Results, Series};
use crate::verdict::is_l4s;
use l4s_metrics::Percentiles;
use std::collections::{BTreeMap, HashSet};

pub const DASH_CLASSIC: &str = "7 4";
/// Line styles of runs 1, 2, 3, ... in a comparison: eight that tell apart at a glance
/// (solid, dashed, dotted, dash-dot, long dash, dash-dot-dot, short dash, long-short).
pub const RUN_DASHES: [Option<&str>; 8] = [
    None,
    Some("8 4"),
    Some("2 3"),
    Some("10 3 2 3"),
    Some("16 4"),
    Some("10 3 2 3 2 3"),
    Some("4 4"),
    Some("14 3 5 3"),
];

/// Names and units shared by the charts of one report.
pub struct Ctx<'a> {
    pub res: &'a Results,
    pub pal: &'a Palette,
    /// The names of the L4S flows: the charts ask of every flow, and a run may have
    /// 10 000 of them.
    l4s: HashSet<&'a str>,
}

impl<'a> Ctx<'a> {
    pub fn new(res: &'a Results, pal: &'a Palette) -> Ctx<'a> {
        let l4s = res
            .summary
            .flows
            .iter()
            .filter(|f| is_l4s(f))
            .map(|f| f.name.as_str())
            .collect();
        Ctx { res, pal, l4s }
    }

    pub fn suffix(&self) -> String {
        let sc = &self.res.summary.scenario;
        match &self.res.run_date {
            Some(d) => format!("{}, seed {}, run {d}", sc.name, sc.seed),
            None => format!("{}, seed {}", sc.name, sc.seed),
        }
    }
    fn time_axis(&self) -> Axis {
        let sc = &self.res.summary.scenario;
        let mut tmax = if sc.duration_s.is_finite() { sc.duration_s } else { 0.0 };
        if let Some(sn) = &self.res.snapshots {
            for s in sn.flows.iter().chain(sn.queues.iter()) {
                for t in &s.time_s {
                    tmax = tmax.max(*t);
                }
            }
        }
        Axis::linear("time (s)", 0.0, tmax)
    }
    fn shade(&self) -> Option<(f64, f64, String)> {
        let w = self.res.summary.scenario.warmup_s;
        (w.is_finite() && w > 0.0).then(|| (0.0, w, "warm-up (not in the statistics)".to_string()))
    }
    fn chart(&self, title: String, y: Axis) -> Chart {
        let mut c = Chart::new(format!("{title} — {}", self.suffix()), self.time_axis(), y);
        c.shade = self.shade();
        c
    }
    fn is_l4s_flow(&self, name: &str) -> bool {
        self.l4s.contains(name)
    }
    fn flow_dash(&self, name: &str) -> Option<&'static str> {
        (!self.is_l4s_flow(name)).then_some(DASH_CLASSIC)
    }
}

/// Flows drawn one by one up to this many; with more, time series are drawn per traffic
/// class (all L4S flows, all classic flows), so that 20 flows give two lines, not 20.
pub const MAX_FLOW_LINES: usize = 8;

/// A traffic class of flows: L4S (data sent ECT(1)) or classic, as the summary names it,
/// and how its series are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Class {
    /// The summary's name of the class (`FlowSummary::class`).
    pub name: &'static str,
    /// Whether its flows are L4S ([`crate::verdict::is_l4s`]).
    pub l4s: bool,
    color: &'static str,
}

/// The traffic classes, L4S first.
pub const CLASSES: [Class; 2] = [
    Class {
        name: "L4S",
        l4s: true,
        color: "#0b8a8a",
    },
    Class {
        name: "classic",
        l4s: false,
        color: "#d1495b",
    },
];

impl Class {
    /// The colour and dash of the class's lines.
    pub fn style(self) -> (String, Option<&'static str>) {
        (self.color.to_string(), (!self.l4s).then_some(DASH_CLASSIC))
    }
}

/// The flow series to draw: each flow, or with more than [`MAX_FLOW_LINES`] flows one
/// series per class ([`class_series`]). The bool says which.
pub fn drawn_flows(cx: &Ctx) -> (Vec<Series>, bool) {
    let Some(sn) = &cx.res.snapshots else {
        return (Vec::new(), false);
    };
    if sn.flows.len() <= MAX_FLOW_LINES {
        return (sn.flows.clone(), false);
    }
    (class_series(cx, &sn.flows), true)
}

/// The union of several series' snapshot times (matched to the microsecond), in order,
/// and where each time is in it.
struct Times {
    values: Vec<f64>,
    at: BTreeMap<i64, usize>,
}

impl Times {
    fn key(t: f64) -> i64 {
        (t * 1e6).round() as i64
    }

    fn of<'a>(series: impl IntoIterator<Item = &'a Series>) -> Times {
        let mut times: BTreeMap<i64, f64> = BTreeMap::new();
        for s in series {
            for t in &s.time_s {
                times.insert(Times::key(*t), *t);
            }
        }
        let at = times.keys().enumerate().map(|(i, k)| (*k, i)).collect();
        Times {
            values: times.into_values().collect(),
            at,
        }
    }

    /// The place of time `t` in the union.
    fn index(&self, t: f64) -> Option<usize> {
        self.at.get(&Times::key(t)).copied()
    }
}

/// One series per traffic class over the union of the flows' snapshot times: throughput
/// and packets summed, the mean one-way delay and the CE fraction weighted by packets, the
/// p99 and the maximum the largest of the class's flows, the minimum the smallest. Named
/// "L4S (n flows)" and "classic (n flows)".
pub fn class_series(cx: &Ctx, flows: &[Series]) -> Vec<Series> {
    let times = Times::of(flows);
    let n = times.values.len();
    let col = |c: FlowCol| FlowCol::ALL.iter().position(|x| *x == c).unwrap_or(0);
    let mut out = Vec::new();
    for class in CLASSES {
        let members: Vec<&Series> = flows.iter().filter(|s| cx.is_l4s_flow(&s.name) == class.l4s).collect();
        if members.is_empty() {
            continue;
        }
        let mut values = vec![vec![f64::NAN; n]; FlowCol::ALL.len()];
        // Weighted sums of the mean delay and the CE fraction, and their weights.
        let mut wsum = vec![[0.0f64; 3]; n];
        for s in &members {
            for (r, t) in s.time_s.iter().enumerate() {
                let Some(i) = times.index(*t) else { continue };
                let get = |c: FlowCol| s.flow(c).get(r).copied().unwrap_or(f64::NAN);
                let add = |v: &mut f64, x: f64| *v = if v.is_finite() { *v + x } else { x };
                for c in [FlowCol::ThroughputBps, FlowCol::Packets] {
                    let x = get(c);
                    if x.is_finite() {
                        add(&mut values[col(c)][i], x);
                    }
                }
                for (c, pick) in [
                    (FlowCol::OwdP99Ms, f64::max as fn(f64, f64) -> f64),
                    (FlowCol::OwdMaxMs, f64::max),
                    (FlowCol::OwdMinMs, f64::min),
                ] {
                    let x = get(c);
                    if x.is_finite() {
                        let v = &mut values[col(c)][i];
                        *v = if v.is_finite() { pick(*v, x) } else { x };
                    }
                }
                let w = get(FlowCol::Packets);
                let w = if w.is_finite() && w > 0.0 { w } else { 0.0 };
                let (m, ce) = (get(FlowCol::OwdMeanMs), get(FlowCol::CeFraction));
                if m.is_finite() && w > 0.0 {
                    wsum[i][0] += m * w;
                    wsum[i][2] += w;
                }
                if ce.is_finite() && w > 0.0 {
                    wsum[i][1] += ce * w;
                }
            }
        }
        for (i, [m, ce, w]) in wsum.iter().enumerate() {
            if *w > 0.0 {
                values[col(FlowCol::OwdMeanMs)][i] = m / w;
                values[col(FlowCol::CeFraction)][i] = ce / w;
            }
        }
        out.push(Series {
            name: format!("{} ({} flows)", class.name, members.len()),
            time_s: times.values.clone(),
            values,
        });
    }
    out
}

/// Colour and dash of a series [`drawn_flows`] gave: with `per_class`, a class of flows
/// (named by [`class_series`] after its class), else a flow.
fn flow_style(cx: &Ctx, name: &str, per_class: bool) -> (String, Option<&'static str>) {
    if per_class {
        let of = |c: &&Class| name.strip_prefix(c.name).is_some_and(|r| r.starts_with(" ("));
        if let Some(class) = CLASSES.iter().find(of) {
            return class.style();
        }
    }
    (cx.pal.color(name), cx.flow_dash(name))
}

/// The crusader-style latency-under-load chart: the throughput of every flow (and the
/// capacity) above, the one-way delay of every flow (mean per snapshot interval, and the
/// p99 dashed) below, on one time axis. Per class with more than [`MAX_FLOW_LINES`] flows.
pub fn latency_under_load(cx: &Ctx) -> Option<Chart> {
    let (flows, per_class) = drawn_flows(cx);
    let thr: Vec<&Series> = flows.iter().filter(|s| has(s, FlowCol::ThroughputBps)).collect();
    let owd: Vec<&Series> = flows
        .iter()
        .filter(|s| has(s, FlowCol::OwdMeanMs) || has(s, FlowCol::OwdMaxMs))
        .collect();
    if thr.is_empty() || owd.is_empty() {
        return None;
    }
    let caps = capacities(cx);
    let tmax = fmax(
        thr.iter()
            .flat_map(|s| after_warmup(cx, s, s.flow(FlowCol::ThroughputBps)))
            .chain(caps.iter().flat_map(|(_, p)| p.iter().map(|x| x.1))),
    );
    let (div, unit) = rate_unit(tmax);
    let what = if per_class { "each class of flows" } else { "every flow" };
    let mut top = cx.chart(
        format!("Latency under load: throughput and one-way delay of {what} ({unit}, ms)"),
        Axis::linear(&format!("throughput ({unit})"), 0.0, tmax / div * 1.05),
    );
    top.plot_height = 200.0;
    for s in &thr {
        let (color, dash) = flow_style(cx, &s.name, per_class);
        top.layers.push(line(
            &s.name,
            &color,
            scaled(s.points(s.flow(FlowCol::ThroughputBps)), 1.0 / div),
            1.4,
            dash,
            true,
        ));
    }
    for (name, pts) in caps {
        top.layers.push(line(
            &format!("capacity: {name}"),
            CAPACITY_COLOR,
            scaled(pts, 1.0 / div),
            1.6,
            Some("6,3"),
            true,
        ));
    }
    // The delay panel: the mean solid, the p99 thin and dashed in the same colour (the
    // flow's class then shows in the throughput panel's dash).
    let cols = [FlowCol::OwdMeanMs, FlowCol::OwdP99Ms, FlowCol::OwdMaxMs];
    let dmax = fmax(owd.iter().flat_map(|s| {
        let c = if has(s, FlowCol::OwdP99Ms) {
            FlowCol::OwdP99Ms
        } else {
            FlowCol::OwdMaxMs
        };
        after_warmup(cx, s, s.flow(c))
    }));
    if !dmax.is_finite() {
        return None;
    }
    let mut bottom = Chart::new(
        String::new(),
        top.x.clone(),
        Axis::linear("one-way delay (ms)", 0.0, dmax * 1.05),
    );
    // The warm-up is shaded in both panels and named in the upper one.
    bottom.shade = top.shade.clone().map(|(a, z, _)| (a, z, String::new()));
    bottom.plot_height = 200.0;
    for s in &owd {
        let (color, _) = flow_style(cx, &s.name, per_class);
        let (mean, tail) = if has(s, FlowCol::OwdMeanMs) {
            (
                FlowCol::OwdMeanMs,
                has(s, FlowCol::OwdP99Ms).then_some(FlowCol::OwdP99Ms),
            )
        } else {
            (cols[2], None)
        };
        bottom
            .layers
            .push(line(&s.name, &color, s.points(s.flow(mean)), 1.4, None, false));
        if let Some(t) = tail {
            bottom
                .layers
                .push(line(&s.name, &color, s.points(s.flow(t)), 0.9, Some("3 2"), false));
        }
    }
    top.legend_styles = vec![
        ("delay: mean per interval".to_string(), None),
        ("delay: p99 per interval".to_string(), Some("3 2")),
    ];
    top.below = Some(Box::new(bottom));
    top.has_data().then_some(top)
}

fn fmax(it: impl IntoIterator<Item = f64>) -> f64 {
    it.into_iter().filter(|v| v.is_finite()).fold(f64::NAN, f64::max)
}

fn line(name: &str, color: &str, pts: Vec<(f64, f64)>, width: f64, dash: Option<&'static str>, legend: bool) -> Layer {
    Layer {
        name: name.into(),
        color: color.into(),
        mark: Mark::Line { pts, width, dash },
        legend,
    }
}

fn scaled(pts: Vec<(f64, f64)>, k: f64) -> Vec<(f64, f64)> {
    pts.into_iter().map(|(t, v)| (t, v * k)).collect()
}

/// Divisor and unit for rates up to `max` bit/s.
pub fn rate_unit(max: f64) -> (f64, &'static str) {
    if max >= 2e9 {
        (1e9, "Gbit/s")
    } else if max >= 2e6 {
        (1e6, "Mbit/s")
    } else if max >= 2e3 {
        (1e3, "kbit/s")
    } else {
        (1.0, "bit/s")
    }
}

fn has(s: &Series, c: FlowCol) -> bool {
    s.flow(c).iter().any(|v| v.is_finite())
}

/// Values of a series inside the statistics window (after the warm-up), so that a
/// slow-start spike during the warm-up does not set the scale; all values if none are.
fn after_warmup<'a>(cx: &Ctx, s: &'a Series, vals: &'a [f64]) -> impl Iterator<Item = f64> + 'a {
    let w = cx.res.summary.scenario.warmup_s;
    let any = s.time_s.iter().any(|t| *t > w);
    s.time_s
        .iter()
        .zip(vals)
        .filter(move |(t, _)| !any || **t > w)
        .map(|(_, v)| *v)
}

/// One-way delay over time, one chart per flow with a shared y axis (scaled to the
/// statistics window; the warm-up is shaded and clipped): band min–max,
/// mean line, dashed p99 line (or the max line when that is all the snapshots have).
pub fn latency_over_time(cx: &Ctx) -> Vec<Chart> {
    let (flows, per_class) = drawn_flows(cx);
    let cols = [
        FlowCol::OwdMinMs,
        FlowCol::OwdMeanMs,
        FlowCol::OwdP99Ms,
        FlowCol::OwdMaxMs,
    ];
    let ymax = fmax(
        flows
            .iter()
            .flat_map(|s| cols.iter().flat_map(move |c| after_warmup(cx, s, s.flow(*c)))),
    );
    if !ymax.is_finite() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for s in &flows {
        let (color, _) = flow_style(cx, &s.name, per_class);
        let title = if per_class {
            format!(
                "One-way delay over time of the {} (ms per snapshot interval: range and worst p99 of its flows, packet-weighted mean)",
                s.name
            )
        } else {
            format!("One-way delay over time of '{}' (ms per snapshot interval)", s.name)
        };
        let mut c = cx.chart(title, Axis::linear("one-way delay (ms)", 0.0, ymax * 1.05));
        c.plot_height = 170.0;
        if has(s, FlowCol::OwdMinMs) && has(s, FlowCol::OwdMaxMs) {
            let (lo, hi) = band_pairs(s, FlowCol::OwdMinMs, FlowCol::OwdMaxMs);
            c.layers.push(Layer {
                name: "min–max".into(),
                color: color.clone(),
                mark: Mark::Band { lo, hi, opacity: 0.22 },
                legend: true,
            });
        } else if has(s, FlowCol::OwdMaxMs) {
            c.layers.push(line(
                "max",
                &color,
                s.points(s.flow(FlowCol::OwdMaxMs)),
                1.0,
                Some("1 2"),
                true,
            ));
        }
        if has(s, FlowCol::OwdMeanMs) {
            c.layers.push(line(
                "mean",
                &color,
                s.points(s.flow(FlowCol::OwdMeanMs)),
                1.6,
                None,
                true,
            ));
        }
        if has(s, FlowCol::OwdP99Ms) {
            c.layers.push(line(
                "p99",
                &color,
                s.points(s.flow(FlowCol::OwdP99Ms)),
                1.2,
                Some("5 3"),
                true,
            ));
        }
        if c.has_data() {
            out.push(c);
        }
    }
    out
}

/// (lo, hi) point lists over the rows where both are present.
fn band_pairs(s: &Series, lo: FlowCol, hi: FlowCol) -> (Points, Points) {
    // Where either edge is missing both are, so the two edges break at the same places.
    let (a, b) = (s.flow(lo), s.flow(hi));
    let both: Vec<bool> = a.iter().zip(b).map(|(x, y)| x.is_finite() && y.is_finite()).collect();
    let pick = |c: &[f64]| -> Vec<f64> {
        c.iter()
            .zip(&both)
            .map(|(v, ok)| if *ok { *v } else { f64::NAN })
            .collect()
    };
    (s.points(&pick(a)), s.points(&pick(b)))
}

/// CDF points of a flow's OWD (or a queue's sojourn): from distributions.csv when present,
/// else the summary's percentiles as knots. The bool says whether it is the sampled CDF.
pub fn dist_points(
    res: &Results,
    kind: DistKind,
    name: &str,
    p: Option<&Percentiles>,
) -> Option<(Vec<(f64, f64)>, bool)> {
    if let Some(d) = res.distributions.as_ref().and_then(|d| d.get(kind, name)) {
        if !d.points.is_empty() {
            return Some((d.points.clone(), true));
        }
    }
    let p = p.filter(|p| p.count > 0)?;
    let pts = vec![
        (p.p50, 0.5),
        (p.p90, 0.9),
        (p.p99, 0.99),
        (p.p999, 0.999),
        (p.p9999, 0.9999),
        (p.max, 1.0),
    ];
    Some((pts.into_iter().filter(|(v, _)| v.is_finite()).collect(), false))
}

/// The CDF of all the packets of several flows, `Σ wᵢ Fᵢ(x) / Σ wᵢ`, from each flow's
/// sampled CDF `Fᵢ` and weight `wᵢ` (its packet count). Each `Fᵢ` is taken as drawn: straight
/// lines between its points, 0 below the first and 1 from the last. The sum of such lines
/// is itself a line between the union of their points, so it is computed exactly there by
/// one sweep over every point in order of value (the cost of sorting them, whatever the
/// number of flows), and then thinned to where the CDF or its tail moves visibly.
pub fn pooled_cdf(parts: &[(&[(f64, f64)], f64)]) -> Vec<(f64, f64)> {
    let total: f64 = parts
        .iter()
        .filter(|(p, w)| !p.is_empty() && w.is_finite() && *w > 0.0)
        .map(|(_, w)| w)
        .sum();
    if total <= 0.0 {
        return Vec::new();
    }
    // (value, jump of the CDF there, change of its slope there).
    let mut ev: Vec<(f64, f64, f64)> = Vec::new();
    for (pts, w) in parts {
        if pts.is_empty() || !w.is_finite() || *w <= 0.0 {
            continue;
        }
        let w = w / total;
        let first = pts[0];
        ev.push((first.0, w * first.1, 0.0));
        for seg in pts.windows(2) {
            let ((x0, f0), (x1, f1)) = (seg[0], seg[1]);
            if x1 > x0 {
                let slope = w * (f1 - f0) / (x1 - x0);
                ev.push((x0, 0.0, slope));
                ev.push((x1, 0.0, -slope));
            } else {
                ev.push((x1, w * (f1 - f0), 0.0));
            }
        }
        let last = pts[pts.len() - 1];
        ev.push((last.0, w * (1.0 - last.1), 0.0));
    }
    ev.retain(|e| e.0.is_finite() && e.1.is_finite() && e.2.is_finite());
    ev.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out: Vec<(f64, f64)> = Vec::new();
    let (mut value, mut slope) = (0.0f64, 0.0f64);
    let mut i = 0;
    while i < ev.len() {
        let x = ev[i].0;
        if let Some(&(px, _)) = out.last() {
            value += slope * (x - px);
        }
        while i < ev.len() && ev[i].0 == x {
            value += ev[i].1;
            slope += ev[i].2;
            i += 1;
        }
        let prev = out.last().map_or(0.0, |p| p.1);
        out.push((x, value.clamp(prev, 1.0)));
    }
    // Every flow has ended at the last value: what rounding left is not a tail.
    if let Some(last) = out.last_mut() {
        last.1 = 1.0;
    }
    thin_cdf(out)
}

/// Keep the points of a CDF where it, its tail (`1 − F` on a log scale, down to 10⁻⁷) or
/// the value moves by more than a chart could show; the first and last stay.
fn thin_cdf(pts: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if pts.len() <= 2 {
        return pts;
    }
    let span = pts[pts.len() - 1].0 - pts[0].0;
    let tail = |f: f64| (1.0 - f).max(1e-7).log10();
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(pts.len().min(4096));
    out.push(pts[0]);
    for (k, &(x, f)) in pts.iter().enumerate().skip(1) {
        let (kx, kf) = out[out.len() - 1];
        if k == pts.len() - 1 || (f - kf).abs() >= 1e-3 || (tail(f) - tail(kf)).abs() >= 0.01 || x - kx >= span / 500.0
        {
            out.push((x, f));
        }
    }
    out
}

/// Per traffic class of a run's flows ("L4S", then "classic"): the CDF of all its packets'
/// one-way delays pooled from its flows ([`pooled_cdf`], each flow weighted by its packet
/// count), and how many flows it pools. The bool says whether every flow's CDF is the
/// sampled one (else some are the summary's percentiles, see [`dist_points`]).
pub fn class_owd_cdfs(res: &Results) -> (Vec<ClassCdf>, bool) {
    let mut exact = true;
    let mut out = Vec::new();
    for class in CLASSES {
        let mut parts = Vec::new();
        for f in res.summary.flows.iter().filter(|f| is_l4s(f) == class.l4s) {
            if let Some((pts, ex)) = dist_points(res, DistKind::Owd, &f.name, Some(&f.owd_ms)) {
                exact &= ex;
                parts.push((pts, f.owd_ms.count as f64));
            }
        }
        let borrowed: Vec<(&[(f64, f64)], f64)> = parts.iter().map(|(p, w)| (p.as_slice(), *w)).collect();
        let pooled = pooled_cdf(&borrowed);
        if !pooled.is_empty() {
            out.push(ClassCdf {
                class,
                flows: parts.len(),
                pts: pooled,
            });
        }
    }
    (out, exact)
}

/// A traffic class's pooled CDF ([`class_owd_cdfs`]).
pub struct ClassCdf {
    pub class: Class,
    /// How many flows it pools.
    pub flows: usize,
    pub pts: Vec<(f64, f64)>,
}

/// One line of a CDF/CCDF chart.
pub struct DistLine {
    pub label: String,
    pub color: String,
    pub dash: Option<&'static str>,
    pub pts: Vec<(f64, f64)>,
    pub legend: bool,
}

/// A CDF chart (linear axes; guides at p50, p90, p99) and a CCDF chart (log y down to the
/// smallest tail the data reach, at most 10⁻⁶; guides at p99, p99.9, p99.99) sharing one x axis.
pub fn cdf_ccdf(
    title: &str,
    xlabel: &str,
    suffix: &str,
    lines: &[DistLine],
    styles: &[(String, Option<&'static str>)],
) -> Vec<Chart> {
    cdf_ccdf_on(title, xlabel, suffix, lines, styles, None)
}

/// The x range (min, max with a 3 % margin) covering every line.
pub fn dist_xrange<'a>(lines: impl IntoIterator<Item = &'a DistLine>) -> Option<(f64, f64)> {
    let xs: Vec<f64> = lines
        .into_iter()
        .flat_map(|l| l.pts.iter().map(|p| p.0))
        .filter(|v| v.is_finite())
        .collect();
    let xmax = fmax(xs.iter().copied());
    let xmin = xs.iter().copied().fold(f64::NAN, f64::min);
    if !xmax.is_finite() {
        return None;
    }
    let pad = ((xmax - xmin) * 0.03).max(xmax.abs() * 1e-3);
    Some(((xmin - pad).max(0.0), xmax + pad))
}

/// The x range of distribution lines for a log axis: from a little below the smallest
/// positive value to a little above the largest.
pub fn dist_xrange_log<'a>(lines: impl IntoIterator<Item = &'a DistLine>) -> Option<(f64, f64)> {
    let xs: Vec<f64> = lines
        .into_iter()
        .flat_map(|l| l.pts.iter().map(|p| p.0))
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let xmax = fmax(xs.iter().copied());
    let xmin = xs.iter().copied().fold(f64::NAN, f64::min);
    (xmax.is_finite() && xmin.is_finite()).then(|| (xmin / 1.2, xmax * 1.2))
}

/// [`cdf_ccdf`] on a given x range (so that several charts share the axis).
pub fn cdf_ccdf_on(
    title: &str,
    xlabel: &str,
    suffix: &str,
    lines: &[DistLine],
    styles: &[(String, Option<&'static str>)],
    xrange: Option<(f64, f64)>,
) -> Vec<Chart> {
    cdf_ccdf_axes(title, xlabel, suffix, lines, styles, xrange, false)
}

/// [`cdf_ccdf_on`], with the x axis on a log scale when `log_x` (points at or below 0 are
/// left out there).
pub fn cdf_ccdf_axes(
    title: &str,
    xlabel: &str,
    suffix: &str,
    lines: &[DistLine],
    styles: &[(String, Option<&'static str>)],
    xrange: Option<(f64, f64)>,
    log_x: bool,
) -> Vec<Chart> {
    let range = if log_x {
        dist_xrange_log(lines)
    } else {
        dist_xrange(lines)
    };
    let Some((x0, x1)) = xrange.or(range) else {
        return Vec::new();
    };
    let x = if log_x {
        Axis::log(&format!("{xlabel}, log scale"), x0, x1)
    } else {
        Axis::linear(xlabel, x0, x1)
    };
    let keep = |p: &(f64, f64)| !log_x || p.0 > 0.0;
    let mut cdf = Chart::new(
        format!("CDF of {title} — {suffix}"),
        x.clone(),
        Axis::linear("fraction of packets ≤ x", 0.0, 1.0),
    );
    let tail = lines
        .iter()
        .flat_map(|l| l.pts.iter().map(|p| 1.0 - p.1))
        .filter(|v| *v > 0.0)
        .fold(1.0f64, f64::min)
        .max(1e-6);
    let ymin = 10f64.powf(tail.log10().floor()).min(1e-4);
    let mut ccdf = Chart::new(
        format!("CCDF of {title}, log scale — {suffix}"),
        x,
        Axis::log("fraction of packets > x (log)", ymin, 1.0),
    );
    for l in lines {
        let pts: Vec<(f64, f64)> = l.pts.iter().copied().filter(keep).collect();
        cdf.layers.push(line(&l.label, &l.color, pts, 1.8, l.dash, l.legend));
        let c: Vec<(f64, f64)> = l.pts.iter().filter(|p| keep(p)).map(|(v, p)| (*v, 1.0 - p)).collect();
        ccdf.layers.push(line(&l.label, &l.color, c, 1.8, l.dash, l.legend));
    }
    for (v, lab) in [(0.5, "p50"), (0.9, "p90"), (0.99, "p99")] {
        cdf.guides.push(Guide {
            horizontal: true,
            value: v,
            label: lab.into(),
        });
    }
    for (v, lab) in [(1e-2, "p99"), (1e-3, "p99.9"), (1e-4, "p99.99")] {
        ccdf.guides.push(Guide {
            horizontal: true,
            value: v,
            label: lab.into(),
        });
    }
    cdf.legend_styles = styles.to_vec();
    ccdf.legend_styles = styles.to_vec();
    [cdf, ccdf].into_iter().filter(|c| c.has_data()).collect()
}

/// OWD CDF and CCDF of every flow, L4S solid and classic dashed; with more than
/// [`MAX_FLOW_LINES`] flows, of each traffic class's packets pooled ([`class_owd_cdfs`]).
/// The bool says whether all lines come from distributions.csv (else some are percentile
/// knots from the summary).
pub fn owd_distributions(cx: &Ctx) -> (Vec<Chart>, bool) {
    let flows = &cx.res.summary.flows;
    if flows.len() > MAX_FLOW_LINES {
        let (classes, exact) = class_owd_cdfs(cx.res);
        let lines: Vec<DistLine> = classes
            .into_iter()
            .map(|c| {
                let (color, dash) = c.class.style();
                DistLine {
                    label: format!("{} ({} flows)", c.class.name, c.flows),
                    color,
                    dash,
                    pts: c.pts,
                    legend: true,
                }
            })
            .collect();
        let title = "one-way delay per class of flows, their packets pooled (ms)";
        return (cdf_ccdf(title, "one-way delay (ms)", &cx.suffix(), &lines, &[]), exact);
    }
    let mut lines = Vec::new();
    let mut exact = true;
    for f in flows {
        if let Some((pts, ex)) = dist_points(cx.res, DistKind::Owd, &f.name, Some(&f.owd_ms)) {
            exact &= ex;
            let label = format!("{} ({})", f.name, f.class);
            lines.push(DistLine {
                label,
                color: cx.pal.color(&f.name),
                dash: cx.flow_dash(&f.name),
                pts,
                legend: true,
            });
        }
    }
    (
        cdf_ccdf(
            "one-way delay per flow (ms)",
            "one-way delay (ms)",
            &cx.suffix(),
            &lines,
            &[],
        ),
        exact,
    )
}

/// Sojourn CCDF per queue and sub-queue (queues with any queueing only).
pub fn sojourn_distributions(cx: &Ctx) -> Vec<Chart> {
    let mut lines = Vec::new();
    let sub_color = |k: &str| match k {
        "L" => "#0b8a8a",
        "C" => "#d1495b",
        _ => "#555555",
    };
    for (qi, q) in cx.res.summary.queues.iter().enumerate() {
        if !q.sojourn_ms.max.is_finite() || q.sojourn_ms.max <= 0.0 {
            continue;
        }
        let dash = RUN_DASHES[qi % RUN_DASHES.len()];
        if let Some((pts, _)) = dist_points(cx.res, DistKind::Sojourn, &q.name, Some(&q.sojourn_ms)) {
            lines.push(DistLine {
                label: format!("{} (all)", q.name),
                color: "#555555".into(),
                dash,
                pts,
                legend: true,
            });
        }
        for (k, sq) in &q.subqueues {
            if k == "single" {
                continue;
            }
            let n = format!("{}/{k}", q.name);
            if let Some((pts, _)) = dist_points(cx.res, DistKind::Sojourn, &n, Some(&sq.sojourn_ms)) {
                lines.push(DistLine {
                    label: n,
                    color: sub_color(k).into(),
                    dash,
                    pts,
                    legend: true,
                });
            }
        }
    }
    let mut v = cdf_ccdf(
        "queue sojourn time (ms)",
        "sojourn time (ms)",
        &cx.suffix(),
        &lines,
        &[],
    );
    if v.len() == 2 {
        v.remove(0); // the CCDF tells more; keep the page short
    }
    v
}

/// The MAC access delay of each station of Wi-Fi BSS `w`, both directions (a colour per
/// station, the uplink dashed): from `distributions.csv`, or else the summary's
/// percentiles joined.
pub fn access_delay_distributions(cx: &Ctx, w: &l4s_metrics::summary::WifiSummary) -> Vec<Chart> {
    let pal = Palette::new(w.stations.iter().map(|s| s.station.as_str()));
    let mut lines = Vec::new();
    for st in &w.stations {
        for (dir, d, dash) in [("down", &st.down, None), ("up", &st.up, Some(DASH_CLASSIC))] {
            let name = format!("{}/{}/{dir}", w.name, st.station);
            if let Some((pts, _)) = dist_points(cx.res, DistKind::AccessDelay, &name, d.access_delay_ms.as_ref()) {
                lines.push(DistLine {
                    label: format!("{} {dir}link", st.station),
                    color: pal.color(&st.station),
                    dash,
                    pts,
                    legend: true,
                });
            }
        }
    }
    if lines.is_empty() {
        return Vec::new();
    }
    cdf_ccdf(
        &format!("MAC access delay, Wi-Fi {}", w.name),
        "access delay (ms)",
        &cx.suffix(),
        &lines,
        &[],
    )
}

/// Throughput over time: stacked areas (all flows) and one line per flow, sharing the y axis.
pub fn throughput(cx: &Ctx) -> Vec<Chart> {
    let (drawn, per_class) = drawn_flows(cx);
    let flows: Vec<&Series> = drawn.iter().filter(|s| has(s, FlowCol::ThroughputBps)).collect();
    if flows.is_empty() {
        return Vec::new();
    }
    // Stack on the union of times (µs keys), flows in file order.
    let times = Times::of(flows.iter().copied());
    let tv = &times.values;
    let mut cum = vec![0.0f64; tv.len()];
    let mut stacks = Vec::new();
    for s in &flows {
        let mut add = vec![0.0f64; tv.len()];
        for (t, v) in s.time_s.iter().zip(s.flow(FlowCol::ThroughputBps)) {
            if v.is_finite() {
                if let Some(i) = times.index(*t) {
                    add[i] += v.max(0.0);
                }
            }
        }
        let lo = cum.clone();
        for (c, a) in cum.iter_mut().zip(&add) {
            *c += a;
        }
        stacks.push((s.name.clone(), lo, cum.clone()));
    }
    let caps = capacities(cx);
    let total = fmax(
        cum.iter()
            .copied()
            .chain(caps.iter().flat_map(|(_, p)| p.iter().map(|x| x.1))),
    );
    let (div, unit) = rate_unit(total);
    let y = Axis::linear(&format!("throughput ({unit})"), 0.0, total / div * 1.05);
    let cap_layers: Vec<Layer> = caps
        .iter()
        .map(|(name, pts)| {
            line(
                &format!("capacity: {name}"),
                CAPACITY_COLOR,
                scaled(pts.clone(), 1.0 / div),
                1.6,
                Some("6,3"),
                true,
            )
        })
        .collect();
    let mut st = cx.chart(format!("Throughput over time, stacked ({unit})"), y);
    for (name, lo, hi) in stacks {
        let lo: Vec<(f64, f64)> = tv.iter().zip(&lo).map(|(t, v)| (*t, v / div)).collect();
        let hi: Vec<(f64, f64)> = tv.iter().zip(&hi).map(|(t, v)| (*t, v / div)).collect();
        st.layers.push(Layer {
            name: name.clone(),
            color: flow_style(cx, &name, per_class).0,
            mark: Mark::Area { lo, hi },
            legend: true,
        });
    }
    st.layers.extend(cap_layers.iter().cloned());
    // The lines on their own scale: the largest flow (after the warm-up) sets it, so that
    // 20 flows of 50 Mbit/s do not sit in the bottom 5 % of a 1 Gbit/s axis. The capacity
    // is drawn when it fits within twice that.
    let top = fmax(
        flows
            .iter()
            .flat_map(|s| after_warmup(cx, s, s.flow(FlowCol::ThroughputBps))),
    );
    let top = if top.is_finite() && top > 0.0 { top } else { total };
    let shown: Vec<&(String, Vec<(f64, f64)>)> = caps
        .iter()
        .filter(|(_, p)| fmax(p.iter().map(|x| x.1)) <= 2.0 * top)
        .collect();
    let top = fmax(std::iter::once(top).chain(shown.iter().flat_map(|(_, p)| p.iter().map(|x| x.1))));
    let (pdiv, punit) = rate_unit(top);
    let what = if per_class {
        "per class of flows, summed"
    } else {
        "per flow"
    };
    let mut per = cx.chart(
        format!("Throughput over time {what} ({punit})"),
        Axis::linear(&format!("throughput ({punit})"), 0.0, top / pdiv * 1.05),
    );
    for s in &flows {
        let pts = scaled(s.points(s.flow(FlowCol::ThroughputBps)), 1.0 / pdiv);
        let (color, dash) = flow_style(cx, &s.name, per_class);
        per.layers.push(line(&s.name, &color, pts, 1.3, dash, true));
    }
    for (name, pts) in shown {
        {
            per.layers.push(line(
                &format!("capacity: {name}"),
                CAPACITY_COLOR,
                scaled(pts.clone(), 1.0 / pdiv),
                1.6,
                Some("6,3"),
                true,
            ));
        }
    }
    vec![st, per]
}

/// The dashed line of a link's capacity under the throughput charts.
const CAPACITY_COLOR: &str = "#333333";

/// The capacity over time (bit/s) to draw under the throughput charts: every queue whose
/// capacity changes during the run (a rate schedule, a trace, a capacity process, a
/// cellular link), or else the first queue's (the bottleneck's), from the `rate_bps`
/// column of the queue snapshots.
fn capacities(cx: &Ctx) -> Vec<(String, Vec<(f64, f64)>)> {
    let Some(sn) = &cx.res.snapshots else { return Vec::new() };
    let order = cx.res.summary.queues.iter().map(|q| q.name.as_str());
    let series: Vec<&Series> = order.filter_map(|n| sn.queue(n)).collect();
    let with_rate = |s: &Series| s.queue(QueueCol::RateBps).iter().any(|v| v.is_finite() && *v > 0.0);
    let varies = |s: &Series| {
        let v = s.queue(QueueCol::RateBps).iter().filter(|v| v.is_finite());
        let (lo, hi) = v.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
        hi > lo
    };
    let varying: Vec<&Series> = series.iter().copied().filter(|s| with_rate(s) && varies(s)).collect();
    let chosen: Vec<&Series> = if varying.is_empty() {
        series.iter().copied().find(|s| with_rate(s)).into_iter().collect()
    } else {
        varying
    };
    chosen
        .into_iter()
        .map(|s| (s.name.clone(), s.points(s.queue(QueueCol::RateBps))))
        .collect()
}

/// Queue sojourn (max per interval, all / L / C, and mean) over time, one chart per queue
/// with queueing, shared y axis.
pub fn sojourn_over_time(cx: &Ctx) -> Vec<Chart> {
    let Some(sn) = &cx.res.snapshots else { return Vec::new() };
    let cols = [
        (QueueCol::SojournMaxMs, "max (all)", "#555555", None, 1.0),
        (QueueCol::SojournMaxLMs, "max L", "#0b8a8a", None, 1.3),
        (QueueCol::SojournMaxCMs, "max C", "#d1495b", None, 1.3),
        (QueueCol::SojournMeanMs, "mean (all)", "#222222", Some("5 3"), 1.2),
    ];
    let busy: Vec<&Series> = sn
        .queues
        .iter()
        .filter(|s| {
            cols.iter()
                // Queues that never held a packet for a microsecond (an idle reverse path) are left out.
                .any(|c| s.queue(c.0).iter().any(|v| v.is_finite() && *v >= 1e-3))
        })
        .collect();
    let ymax = fmax(
        busy.iter()
            .flat_map(|s| cols.iter().flat_map(move |c| after_warmup(cx, s, s.queue(c.0)))),
    );
    let mut out = Vec::new();
    for s in busy {
        let mut c = cx.chart(
            format!("Queue sojourn over time at '{}' (ms)", s.name),
            Axis::linear("sojourn time (ms)", 0.0, ymax * 1.05),
        );
        c.plot_height = 190.0;
        for (col, name, color, dash, w) in cols {
            let v = s.queue(col);
            // Skip sub-queue columns that are empty or all zero (single queues).
            if col != QueueCol::SojournMaxMs && !v.iter().any(|x| x.is_finite() && *x > 0.0) {
                continue;
            }
            c.layers.push(line(name, color, s.points(v), w, dash, true));
        }
        if c.has_data() {
            out.push(c);
        }
    }
    out
}

/// One line per queue of a queue column (AQM probability, utilisation).
pub fn queue_lines(
    cx: &Ctx,
    col: QueueCol,
    title: &str,
    ylabel: &str,
    k: f64,
    fixed_max: Option<f64>,
) -> Option<Chart> {
    let sn = cx.res.snapshots.as_ref()?;
    let qs: Vec<&Series> = sn
        .queues
        .iter()
        .filter(|s| s.queue(col).iter().any(|v| v.is_finite()))
        .collect();
    let ymax = fixed_max.unwrap_or_else(|| fmax(qs.iter().flat_map(|s| s.queue(col).iter().map(|v| v * k))) * 1.05);
    let mut c = cx.chart(title.into(), Axis::linear(ylabel, 0.0, ymax));
    for (i, s) in qs.iter().enumerate() {
        let color = ["#333333", "#7b3294", "#008837", "#c2a5cf"][i % 4];
        c.layers
            .push(line(&s.name, color, scaled(s.points(s.queue(col)), k), 1.3, None, true));
    }
    c.has_data().then_some(c)
}

/// One line per flow of a flow column (CE fraction, cwnd, srtt). Flows with no positive
/// value are left out (probes have no cwnd). With more than [`MAX_FLOW_LINES`] such flows,
/// per traffic class: the mean over its flows, in a band from the lowest to the highest.
pub fn flow_lines(cx: &Ctx, col: FlowCol, title: &str, ylabel: &str, k: f64, fixed_max: Option<f64>) -> Option<Chart> {
    let sn = cx.res.snapshots.as_ref()?;
    let fs: Vec<&Series> = sn
        .flows
        .iter()
        .filter(|s| s.flow(col).iter().any(|v| v.is_finite() && *v > 0.0))
        .collect();
    let ymax = fmax(fs.iter().flat_map(|s| s.flow(col).iter().map(|v| v * k)));
    let ymax = fixed_max.map(|m| (ymax * 1.05).min(m)).unwrap_or(ymax * 1.05);
    if fs.len() > MAX_FLOW_LINES {
        let title = format!("{title}, per class of flows: mean of the flows, band from the lowest to the highest");
        let mut c = cx.chart(title, Axis::linear(ylabel, 0.0, ymax));
        for sp in class_spread(cx, &fs, col) {
            let (color, dash) = sp.class.style();
            let at = |v: &[f64]| scaled(sp.series.points(v), k);
            c.layers.push(Layer {
                name: format!("{}: lowest–highest", sp.class.name),
                color: color.clone(),
                mark: Mark::Band {
                    lo: at(&sp.lo),
                    hi: at(&sp.hi),
                    opacity: 0.22,
                },
                legend: true,
            });
            let name = format!("{} ({} flows): mean", sp.class.name, sp.flows);
            c.layers.push(line(&name, &color, at(&sp.mean), 1.6, dash, true));
        }
        return c.has_data().then_some(c);
    }
    let mut c = cx.chart(title.into(), Axis::linear(ylabel, 0.0, ymax));
    for s in fs {
        c.layers.push(line(
            &s.name,
            &cx.pal.color(&s.name),
            scaled(s.points(s.flow(col)), k),
            1.2,
            cx.flow_dash(&s.name),
            true,
        ));
    }
    c.has_data().then_some(c)
}

/// One traffic class's spread of a flow column over time ([`class_spread`]).
struct Spread {
    class: Class,
    flows: usize,
    /// The union of the class's snapshot times (only `time_s` is used).
    series: Series,
    mean: Vec<f64>,
    lo: Vec<f64>,
    hi: Vec<f64>,
}

/// Per traffic class of `flows`, at each snapshot time of any of them: the mean, the lowest
/// and the highest value of `col` over the class's flows that have one then (NaN where none
/// has).
fn class_spread(cx: &Ctx, flows: &[&Series], col: FlowCol) -> Vec<Spread> {
    let mut out = Vec::new();
    for class in CLASSES {
        let members: Vec<&&Series> = flows.iter().filter(|s| cx.is_l4s_flow(&s.name) == class.l4s).collect();
        if members.is_empty() {
            continue;
        }
        let times = Times::of(members.iter().map(|s| **s));
        let n = times.values.len();
        let (mut sum, mut count) = (vec![0.0f64; n], vec![0u32; n]);
        let (mut lo, mut hi) = (vec![f64::NAN; n], vec![f64::NAN; n]);
        for s in &members {
            for (t, v) in s.time_s.iter().zip(s.flow(col)) {
                let Some(i) = times.index(*t) else { continue };
                if v.is_finite() {
                    sum[i] += v;
                    count[i] += 1;
                    lo[i] = if lo[i].is_finite() { lo[i].min(*v) } else { *v };
                    hi[i] = if hi[i].is_finite() { hi[i].max(*v) } else { *v };
                }
            }
        }
        let mean = sum
            .iter()
            .zip(&count)
            .map(|(s, c)| if *c > 0 { s / *c as f64 } else { f64::NAN })
            .collect();
        out.push(Spread {
            class,
            flows: members.len(),
            series: Series {
                name: class.name.to_string(),
                time_s: times.values,
                values: Vec::new(),
            },
            mean,
            lo,
            hi,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4s_core::Dur;
    use l4s_metrics::LatencyHist;

    /// The value at which a CDF given by points (joined by straight lines) reaches `q`.
    fn quantile(pts: &[(f64, f64)], q: f64) -> f64 {
        let k = pts.iter().position(|p| p.1 >= q).expect("the CDF reaches q");
        if k == 0 {
            return pts[0].0;
        }
        let ((x0, f0), (x1, f1)) = (pts[k - 1], pts[k]);
        x0 + (x1 - x0) * (q - f0) / (f1 - f0)
    }

    #[test]
    fn pooled_flows_weigh_by_their_packets_exactly_at_the_points() {
        // One flow uniform on 0..10 ms with 1 packet, one uniform on 10..20 with 3.
        let a = [(0.0, 0.0), (10.0, 1.0)];
        let b = [(10.0, 0.0), (20.0, 1.0)];
        let p = pooled_cdf(&[(&a, 1.0), (&b, 3.0)]);
        assert_eq!(p, [(0.0, 0.0), (10.0, 0.25), (20.0, 1.0)]);
        assert_eq!(quantile(&p, 0.625), 15.0);
        // Overlapping: the sum of the two lines at every point of either.
        let c = [(5.0, 0.5), (15.0, 1.0)];
        let p = pooled_cdf(&[(&a, 1.0), (&c, 1.0)]);
        assert_eq!(p, [(0.0, 0.0), (5.0, 0.5), (10.0, 0.875), (15.0, 1.0)]);
        // A flow with no packets, or no points, adds nothing; nothing at all gives nothing.
        assert_eq!(pooled_cdf(&[(&a, 2.0), (&b, 0.0), (&[], 5.0)]), a);
        assert!(pooled_cdf(&[(&a, 0.0)]).is_empty());
    }

    /// Fifty flows of different delays and packet counts, each reduced to its sampled CDF as
    /// the simulator writes it: their pooled CDF has the percentiles of one histogram of all
    /// their packets.
    #[test]
    fn pooled_sampled_cdfs_give_the_percentiles_of_all_the_packets() {
        let mut all = LatencyHist::new();
        let mut flows = Vec::new();
        let mut rng = l4s_core::Rng::new(12345);
        let mut rnd = || rng.next_f64();
        for i in 0..50u64 {
            let mut h = LatencyHist::new();
            // Flow i: 100 + 200 i packets, 10 + 0.2 i to 12 + 0.5 i ms, one in 200 three times as long.
            for _ in 0..100 + 200 * i {
                let lo = 10.0 + 0.2 * i as f64;
                let hi = 12.0 + 0.5 * i as f64;
                let mut ms = lo + (hi - lo) * rnd();
                if rnd() < 0.005 {
                    ms *= 3.0;
                }
                let d = Dur::from_nanos((ms * 1e6) as u64);
                h.record(d);
                all.record(d);
            }
            let pts: Vec<(f64, f64)> = h.cdf_points().iter().map(|(ns, f)| (*ns as f64 / 1e6, *f)).collect();
            flows.push((pts, h.count() as f64));
        }
        let parts: Vec<(&[(f64, f64)], f64)> = flows.iter().map(|(p, w)| (p.as_slice(), *w)).collect();
        let pooled = pooled_cdf(&parts);
        let want = all.percentiles_ms();
        for (q, w) in [(0.5, want.p50), (0.9, want.p90), (0.99, want.p99), (0.999, want.p999)] {
            let got = quantile(&pooled, q);
            println!("p{}: pooled {got:.4} ms, all packets {w:.4} ms", q * 100.0);
            assert!(
                (got / w - 1.0).abs() < 0.01,
                "p{}: pooled {got} ms, all packets {w} ms",
                q * 100.0
            );
        }
        // Weighing each flow alike instead misses the median by far more than that.
        let alike: Vec<(&[(f64, f64)], f64)> = flows.iter().map(|(p, _)| (p.as_slice(), 1.0)).collect();
        let got = quantile(&pooled_cdf(&alike), 0.5);
        assert!((got / want.p50 - 1.0).abs() > 0.05, "{got} against {}", want.p50);
        // Monotone, from the smallest value to 1, and thinned to a drawable size.
        assert!(pooled.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        assert_eq!(pooled.last().unwrap().1, 1.0);
        assert!(pooled.len() < 2000, "{} points", pooled.len());
    }
}
