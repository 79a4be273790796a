//! Inline SVG charts generated in Rust: axes with ticks and units, a legend, a title,
//! guide lines, warm-up shading, and downsampling to the pixel grid so that a long run
//! stays small (at most two points per pixel column for a line).
//!
//! The SVG carries no `xmlns` attribute (HTML5 inline SVG does not need it), so the report
//! contains no URL at all.

use crate::fmt::esc;
use l4s_metrics::fixed::{fixed, push_fixed};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Chart width in px (the viewBox; the page scales it to fit).
pub const WIDTH: f64 = 960.0;
pub const MARGIN_LEFT: f64 = 72.0;
pub const MARGIN_RIGHT: f64 = 24.0;
/// Plot width in px = pixel columns used by the downsampling.
pub const PLOT_WIDTH: f64 = WIDTH - MARGIN_LEFT - MARGIN_RIGHT;

/// Twelve colours that stay apart for colour-blind readers as far as twelve can
/// (Tableau 10 plus two).
pub const PALETTE: [&str; 12] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#79706e",
    "#17becf", "#8c564b",
];

/// FNV-1a, a stable hash (unlike `DefaultHasher`, it never changes between Rust releases).
pub fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Colours for flow names. A name's preferred colour is `PALETTE[hash(name) % 12]`, so the
/// same name gets the same colour in every report; when two names of one report (or one
/// comparison) collide, the later one in sorted order takes the next free colour. Past twelve
/// names, colours come from the hash as a hue.
#[derive(Clone, Debug, Default)]
pub struct Palette {
    map: BTreeMap<String, String>,
}

impl Palette {
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> Palette {
        let mut sorted: Vec<&str> = names.into_iter().collect();
        sorted.sort_unstable();
        sorted.dedup();
        let mut used = [false; PALETTE.len()];
        let mut map = BTreeMap::new();
        for n in sorted {
            let h = fnv1a(n);
            let start = (h % PALETTE.len() as u64) as usize;
            let free = (0..PALETTE.len())
                .map(|k| (start + k) % PALETTE.len())
                .find(|i| !used[*i]);
            let c = match free {
                Some(i) => {
                    used[i] = true;
                    PALETTE[i].to_string()
                }
                None => format!("hsl({},60%,45%)", (h >> 16) % 360),
            };
            map.insert(n.to_string(), c);
        }
        Palette { map }
    }
    /// The colour of `name` (names not given to [`Palette::new`] get their preferred colour).
    pub fn color(&self, name: &str) -> String {
        self.map
            .get(name)
            .cloned()
            .unwrap_or_else(|| PALETTE[(fnv1a(name) % PALETTE.len() as u64) as usize].into())
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    Linear,
    Log10,
}

/// An axis: `label` includes the unit, e.g. "time (s)".
#[derive(Clone, Debug)]
pub struct Axis {
    pub label: String,
    pub min: f64,
    pub max: f64,
    pub scale: Scale,
    /// Tick labels at given positions instead of computed ones (categories): see
    /// [`Axis::categories`].
    pub labels: Vec<(f64, String)>,
}

impl Axis {
    pub fn linear(label: &str, min: f64, max: f64) -> Axis {
        let (min, max) = sane_range(min, max, false);
        Axis {
            label: label.into(),
            min,
            max,
            scale: Scale::Linear,
            labels: Vec::new(),
        }
    }
    /// A linear axis of categories: category `i` sits at `i`, labelled with its name (at
    /// most `max_chars` characters, longer names end in "…").
    pub fn categories(label: &str, names: &[String], max_chars: usize) -> Axis {
        let mut a = Axis::linear(label, -0.5, names.len().max(1) as f64 - 0.5);
        a.labels = names
            .iter()
            .enumerate()
            .map(|(i, n)| (i as f64, truncate(n, max_chars)))
            .collect();
        a
    }
    pub fn log(label: &str, min: f64, max: f64) -> Axis {
        let (min, max) = sane_range(min, max, true);
        Axis {
            label: label.into(),
            min,
            max,
            scale: Scale::Log10,
            labels: Vec::new(),
        }
    }
    fn t(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => v,
            Scale::Log10 => v.log10(),
        }
    }
    /// Position of `v` in 0..1 along the axis (outside for values out of range; NaN for
    /// non-positive values on a log axis).
    pub fn frac(&self, v: f64) -> f64 {
        self.fracs()(v)
    }
    /// [`Axis::frac`] with the axis's ends transformed once, for many values (on a log axis
    /// each end is a logarithm).
    fn fracs(&self) -> impl Fn(f64) -> f64 + '_ {
        let (a, b) = (self.t(self.min), self.t(self.max));
        move |v| {
            if self.scale == Scale::Log10 && v <= 0.0 {
                return f64::NAN;
            }
            (self.t(v) - a) / (b - a)
        }
    }
    /// The value at position `f` (0..1) along the axis: the inverse of [`Axis::frac`].
    pub fn at(&self, f: f64) -> f64 {
        let (a, b) = (self.t(self.min), self.t(self.max));
        let t = a + f * (b - a);
        match self.scale {
            Scale::Linear => t,
            Scale::Log10 => 10f64.powf(t),
        }
    }
}

/// `s` cut to at most `max` characters, ending in "…" when cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}

fn sane_range(min: f64, max: f64, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (min, max);
    if log {
        if !(lo > 0.0 && lo.is_finite()) {
            lo = 1e-6;
        }
        if !(hi.is_finite() && hi > lo) {
            hi = lo * 10.0;
        }
    } else {
        if !lo.is_finite() {
            lo = 0.0;
        }
        if !hi.is_finite() || hi <= lo {
            hi = if lo == 0.0 { 1.0 } else { lo + lo.abs().max(1e-9) };
        }
    }
    (lo, hi)
}

/// What a layer draws.
#[derive(Clone, Debug)]
pub enum Mark {
    /// A line; downsampled to the min and max point of each pixel column.
    Line {
        pts: Vec<(f64, f64)>,
        width: f64,
        dash: Option<&'static str>,
    },
    /// A filled band between two series with the same x (min–max); downsampled to the
    /// column minimum of `lo` and maximum of `hi`.
    Band {
        lo: Vec<(f64, f64)>,
        hi: Vec<(f64, f64)>,
        opacity: f64,
    },
    /// A filled area between two series with the same x (stacked throughput); downsampled
    /// to the column mean of each, so stacked areas stay adjacent.
    Area { lo: Vec<(f64, f64)>, hi: Vec<(f64, f64)> },
    /// A filled circle of `radius` px at each point (not downsampled: for a few points).
    Points { pts: Vec<(f64, f64)>, radius: f64 },
    /// A vertical error bar from `lo` to `hi` at each `(x, lo, hi)`, with caps 8 px wide
    /// (not downsampled: for a few bars).
    ErrorBars { bars: Vec<(f64, f64, f64)>, width: f64 },
    /// A filled bar from `lo` to `hi` at each `(x, lo, hi)`, `width` wide in x-axis units
    /// (stacked bars: one layer per part).
    Bars { bars: Vec<(f64, f64, f64)>, width: f64 },
}

#[derive(Clone, Debug)]
pub struct Layer {
    /// Legend text (escaped when drawn).
    pub name: String,
    pub color: String,
    pub mark: Mark,
    /// Show in the legend (several layers of one flow share one entry).
    pub legend: bool,
}

/// A horizontal (`horizontal = true`, at y = value) or vertical guide line with a label.
#[derive(Clone, Debug)]
pub struct Guide {
    pub horizontal: bool,
    pub value: f64,
    pub label: String,
}

#[derive(Clone, Debug)]
pub struct Chart {
    /// Title (escaped when drawn); should name the scenario, the seed and the units.
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub layers: Vec<Layer>,
    pub guides: Vec<Guide>,
    /// Shaded x-range with a label (the warm-up, excluded from the statistics).
    pub shade: Option<(f64, f64, String)>,
    /// Height of the plot area in px.
    pub plot_height: f64,
    /// Extra legend entries (text, dash) drawn in grey, e.g. line styles of runs.
    pub legend_styles: Vec<(String, Option<&'static str>)>,
    /// A second panel drawn under this one on the same x axis (its own `x` and `title`
    /// are not used; its layers join the legend), as in a latency-under-load chart.
    pub below: Option<Box<Chart>>,
}

impl Chart {
    pub fn new(title: String, x: Axis, y: Axis) -> Chart {
        Chart {
            title,
            x,
            y,
            layers: Vec::new(),
            guides: Vec::new(),
            shade: None,
            plot_height: 240.0,
            legend_styles: Vec::new(),
            below: None,
        }
    }

    /// True if at least one layer (of either panel) has a point to draw.
    pub fn has_data(&self) -> bool {
        self.below.as_ref().is_some_and(|b| b.has_data())
            || self.layers.iter().any(|l| match &l.mark {
                Mark::Line { pts, .. } => pts.iter().any(|p| p.0.is_finite() && p.1.is_finite()),
                Mark::Band { lo, hi, .. } | Mark::Area { lo, hi } => !lo.is_empty() && !hi.is_empty(),
                Mark::Points { pts, .. } => pts.iter().any(|p| p.0.is_finite() && p.1.is_finite()),
                Mark::ErrorBars { bars, .. } | Mark::Bars { bars, .. } => bars
                    .iter()
                    .any(|b| b.0.is_finite() && b.1.is_finite() && b.2.is_finite()),
            })
    }

    /// Render as an `<svg>` element. `id` must be unique in the page (clip path id).
    pub fn to_svg(&self, id: &str) -> String {
        let mut s = String::with_capacity(16 * 1024);
        self.write_svg(id, &mut s);
        s
    }

    /// [`Chart::to_svg`] appended to `s`: a page writes its charts straight into itself.
    pub fn write_svg(&self, id: &str, s: &mut String) {
        let title = self.title_lines();
        let extra = 17.0 * (title.len() as f64 - 1.0);
        let legend = self.legend_layout(36.0 + extra);
        let top = 34.0 + extra + legend.1;
        let (t, b) = (top, top + self.plot_height);
        // A panel below: 14 px apart, the x axis labelled under it only.
        let lower = self.below.as_ref().map(|c| (c, b + 14.0, b + 14.0 + c.plot_height));
        let height = lower.map_or(b, |l| l.2) + 48.0;
        let _ = write!(
            s,
            "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} {height}\" width=\"{WIDTH}\" height=\"{height}\" role=\"img\" aria-label=\"{}\">",
            esc(&self.title),
            height = fixed(height, 0)
        );
        let _ = write!(s, "<title>{}</title>", esc(&self.title));
        for (i, line) in title.iter().enumerate() {
            let _ = write!(
                s,
                "<text class=\"title\" x=\"{MARGIN_LEFT}\" y=\"{}\">{}</text>",
                fixed(18.0 + 17.0 * i as f64, 0),
                esc(line)
            );
        }
        s.push_str(&legend.0);
        self.panel(s, id, &self.x, (t, b), lower.is_none());
        if let Some((c, t2, b2)) = lower {
            c.panel(s, &format!("{id}-below"), &self.x, (t2, b2), true);
        }
        s.push_str("</svg>");
    }

    /// Draw this chart's plot area between `t` and `b` px on the x axis `x`: shading,
    /// grid, axes (x tick labels and title only when `x_labels`), data and guides.
    fn panel(&self, s: &mut String, id: &str, x_axis: &Axis, (t, b): (f64, f64), x_labels: bool) {
        // Coordinates go through `fixed`: the text of `{:.1}` without the standard
        // formatter's exact conversion (about 1 700 instructions a number in a report).
        let ph = b - t;
        let (l, r) = (MARGIN_LEFT, WIDTH - MARGIN_RIGHT);
        let (fx, fy) = (x_axis.fracs(), self.y.fracs());
        let px = |v: f64| l + fx(v) * (r - l);
        let py = |v: f64| b - fy(v) * (b - t);
        let _ = write!(
            s,
            "<defs><clipPath id=\"clip-{id}\"><rect x=\"{l}\" y=\"{t}\" width=\"{}\" height=\"{ph}\"/></clipPath></defs>",
            fixed(r - l, 1),
            t = fixed(t, 1),
            ph = fixed(ph, 1)
        );
        // Warm-up shading (its label goes on top of the data, at the end).
        let shade = self
            .shade
            .as_ref()
            .map(|(a, z, label)| (px(*a).clamp(l, r), px(*z).clamp(l, r), label))
            .filter(|(xa, xz, _)| xz > xa);
        if let Some((xa, xz, _)) = shade {
            let _ = write!(
                s,
                "<rect class=\"shade\" x=\"{xa}\" y=\"{t}\" width=\"{}\" height=\"{ph}\"/>",
                fixed(xz - xa, 1),
                xa = fixed(xa, 1),
                t = fixed(t, 1),
                ph = fixed(ph, 1)
            );
        }
        // Grid and ticks.
        let xt = ticks(x_axis);
        let yt = ticks(&self.y);
        s.push_str("<g class=\"grid\">");
        for (v, _) in &xt {
            let x = px(*v);
            let _ = write!(
                s,
                "<line x1=\"{x}\" y1=\"{t}\" x2=\"{x}\" y2=\"{b}\"/>",
                x = fixed(x, 1),
                t = fixed(t, 1),
                b = fixed(b, 1)
            );
        }
        for (v, _) in &yt {
            let y = py(*v);
            let _ = write!(
                s,
                "<line x1=\"{l}\" y1=\"{y}\" x2=\"{r}\" y2=\"{y}\"/>",
                y = fixed(y, 1)
            );
        }
        s.push_str("</g><g class=\"axis\">");
        let _ = write!(
            s,
            "<rect x=\"{l}\" y=\"{t}\" width=\"{}\" height=\"{ph}\" fill=\"none\"/>",
            fixed(r - l, 1),
            t = fixed(t, 1),
            ph = fixed(ph, 1)
        );
        for (v, lab) in &xt {
            let x = px(*v);
            let _ = write!(
                s,
                "<line x1=\"{x}\" y1=\"{b}\" x2=\"{x}\" y2=\"{}\"/>",
                fixed(b + 5.0, 1),
                x = fixed(x, 1),
                b = fixed(b, 1)
            );
            if x_labels {
                let _ = write!(
                    s,
                    "<text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                    fixed(b + 18.0, 1),
                    esc(lab),
                    x = fixed(x, 1)
                );
            }
        }
        for (v, lab) in &yt {
            let y = py(*v);
            let _ = write!(
                s,
                "<line x1=\"{}\" y1=\"{y}\" x2=\"{l}\" y2=\"{y}\"/><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                fixed(l - 5.0, 1),
                fixed(l - 8.0, 1),
                fixed(y + 4.0, 1),
                esc(lab),
                y = fixed(y, 1)
            );
        }
        if x_labels {
            let _ = write!(
                s,
                "<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                fixed((l + r) / 2.0, 1),
                fixed(b + 38.0, 1),
                esc(&x_axis.label)
            );
        }
        let _ = write!(
            s,
            "<text class=\"label\" transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
            fixed((t + b) / 2.0, 1),
            esc(&self.y.label)
        );
        s.push_str("</g>");
        // Data.
        let _ = write!(s, "<g clip-path=\"url(#clip-{id})\">");
        for layer in &self.layers {
            let color = esc(&layer.color);
            match &layer.mark {
                Mark::Line { pts, width, dash } => {
                    for seg in segments(pts) {
                        let d = downsample_line(seg, x_axis, &self.y, PLOT_WIDTH as usize);
                        if d.is_empty() {
                            continue;
                        }
                        let _ = write!(s, "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"{width}\"");
                        if let Some(da) = dash {
                            let _ = write!(s, " stroke-dasharray=\"{da}\"");
                        }
                        s.push_str(" points=\"");
                        for (x, y) in &d {
                            push_point(s, px(*x), py(*y));
                            s.push(' ');
                        }
                        s.pop();
                        s.push_str("\"/>");
                    }
                }
                Mark::Band { lo, hi, opacity } => {
                    for (sl, sh) in segments(lo).into_iter().zip(segments(hi)) {
                        let (dl, dh) = downsample_band(sl, sh, x_axis, &self.y, PLOT_WIDTH as usize, false);
                        area_path(s, &dl, &dh, &color, *opacity, &px, &py);
                    }
                }
                Mark::Area { lo, hi } => {
                    let (dl, dh) = downsample_band(lo, hi, x_axis, &self.y, PLOT_WIDTH as usize, true);
                    area_path(s, &dl, &dh, &color, 0.85, &px, &py);
                }
                Mark::Points { pts, radius } => {
                    // A scatter has a point per snapshot: coordinates by `push_fixed`, the
                    // same text as `{:.1}` without the exact conversion's cost.
                    let tail = format!("\" r=\"{radius}\" fill=\"{color}\"/>");
                    for (x, y) in pts {
                        let (cx, cy) = (px(*x), py(*y));
                        if cx.is_finite() && cy.is_finite() {
                            s.push_str("<circle cx=\"");
                            push_fixed(s, cx, 1);
                            s.push_str("\" cy=\"");
                            push_fixed(s, cy, 1);
                            s.push_str(&tail);
                        }
                    }
                }
                Mark::Bars { bars, width } => {
                    for (x, lo, hi) in bars {
                        let (x0, x1, y0, y1) = (px(x - width / 2.0), px(x + width / 2.0), py(*lo), py(*hi));
                        if x0.is_finite() && x1.is_finite() && y0.is_finite() && y1.is_finite() {
                            let _ = write!(
                                s,
                                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{color}\" fill-opacity=\"0.85\"/>",
                                fixed(x0.min(x1), 1),
                                fixed(y0.min(y1), 1),
                                fixed((x1 - x0).abs(), 1),
                                fixed((y0 - y1).abs(), 1)
                            );
                        }
                    }
                }
                Mark::ErrorBars { bars, width } => {
                    let mut d = String::new();
                    for (x, lo, hi) in bars {
                        let (cx, y0, y1) = (px(*x), py(*lo), py(*hi));
                        if cx.is_finite() && y0.is_finite() && y1.is_finite() {
                            let _ = write!(
                                d,
                                "M{cx},{y0}V{y1}M{},{y0}H{}M{},{y1}H{}",
                                fixed(cx - 4.0, 1),
                                fixed(cx + 4.0, 1),
                                fixed(cx - 4.0, 1),
                                fixed(cx + 4.0, 1),
                                cx = fixed(cx, 1),
                                y0 = fixed(y0, 1),
                                y1 = fixed(y1, 1),
                            );
                        }
                    }
                    if !d.is_empty() {
                        let _ = write!(
                            s,
                            "<path fill=\"none\" stroke=\"{color}\" stroke-width=\"{width}\" d=\"{d}\"/>"
                        );
                    }
                }
            }
        }
        s.push_str("</g>");
        // Guides on top.
        for g in &self.guides {
            if g.horizontal {
                let y = py(g.value);
                if y.is_finite() && y >= t - 0.5 && y <= b + 0.5 {
                    let _ = write!(
                        s,
                        "<line class=\"guide\" x1=\"{l}\" y1=\"{y}\" x2=\"{r}\" y2=\"{y}\"/><text class=\"guidelabel\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                        fixed(r - 4.0, 1),
                        fixed(y - 3.0, 1),
                        esc(&g.label),
                        y = fixed(y, 1)
                    );
                }
            } else {
                let x = px(g.value);
                if x.is_finite() && x >= l - 0.5 && x <= r + 0.5 {
                    // Right of the line; left of it when the label would leave the chart
                    // (10 px text, about 6 px a character).
                    let fits = x + 3.0 + 6.0 * g.label.chars().count() as f64 <= WIDTH;
                    let _ = write!(
                        s,
                        "<line class=\"guide\" x1=\"{x}\" y1=\"{t}\" x2=\"{x}\" y2=\"{b}\"/><text class=\"guidelabel\" x=\"{}\" y=\"{}\"{}>{}</text>",
                        fixed(if fits { x + 3.0 } else { x - 3.0 }, 1),
                        fixed(t + 24.0, 1),
                        if fits { "" } else { " text-anchor=\"end\"" },
                        esc(&g.label),
                        x = fixed(x, 1),
                        t = fixed(t, 1),
                        b = fixed(b, 1)
                    );
                }
            }
        }
        // The warm-up's label above the plot area, over the shade's left end: inside it,
        // a line along the top of the range (the capacity at 95 % of the throughput axis)
        // ran through the text, and the shade can be narrower than its label. The legend's
        // last line is 20 px above the plot area, room for 10 px text.
        if let Some((xa, _, label)) = shade.filter(|(_, _, label)| !label.is_empty()) {
            let _ = write!(
                s,
                "<text class=\"shadelabel\" x=\"{}\" y=\"{}\">{}</text>",
                fixed(xa, 1),
                fixed(t - 4.0, 1),
                esc(label)
            );
        }
    }

    /// The title in lines that fit the chart's width (13 px semibold: about 7.6 px a
    /// character): split before its " — " suffix (scenario, seed, run), then at spaces.
    fn title_lines(&self) -> Vec<String> {
        let fits = ((WIDTH - MARGIN_LEFT - 8.0) / 7.6) as usize;
        if self.title.chars().count() <= fits {
            return vec![self.title.clone()];
        }
        let mut parts: Vec<String> = match self.title.rsplit_once(" — ") {
            Some((a, b)) => vec![a.to_string(), format!("— {b}")],
            None => vec![self.title.clone()],
        };
        // Wrap what is still too long at spaces.
        let mut out = Vec::new();
        for p in parts.drain(..) {
            let mut line = String::new();
            for w in p.split(' ') {
                if !line.is_empty() && line.chars().count() + 1 + w.chars().count() > fits {
                    out.push(std::mem::take(&mut line));
                }
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(w);
            }
            out.push(line);
        }
        out
    }

    /// Legend entries laid out in rows from `y0` (the first row's baseline) under the
    /// title: (svg, height used).
    fn legend_layout(&self, y0: f64) -> (String, f64) {
        let mut entries: Vec<(String, String, Option<&'static str>, f64)> = Vec::new();
        // One entry per name and colour, in the order of the first: a chart of 10 000
        // flows has as many lines.
        let mut seen: std::collections::HashSet<(&str, &str)> = std::collections::HashSet::new();
        let below = self.below.iter().flat_map(|b| b.layers.iter());
        for l in self.layers.iter().chain(below).filter(|l| l.legend) {
            if !seen.insert((l.name.as_str(), l.color.as_str())) {
                continue;
            }
            // Swatch opacity for filled marks (0 for a line).
            let (dash, filled) = match &l.mark {
                Mark::Line { dash, .. } => (*dash, 0.0),
                Mark::Band { opacity, .. } => (None, (opacity * 1.6).min(1.0)),
                Mark::Area { .. } | Mark::Bars { .. } => (None, 0.85),
                Mark::Points { .. } | Mark::ErrorBars { .. } => (None, 0.0),
            };
            entries.push((l.name.clone(), l.color.clone(), dash, filled));
        }
        for (name, dash) in &self.legend_styles {
            entries.push((name.clone(), "#444".into(), *dash, 0.0));
        }
        if entries.is_empty() {
            return (String::new(), 0.0);
        }
        let mut s = String::from("<g class=\"legend\">");
        let (mut x, mut y) = (MARGIN_LEFT, y0);
        for (name, color, dash, filled) in &entries {
            let w = 34.0 + 6.5 * name.chars().count().min(60) as f64 + 14.0;
            if x + w > WIDTH - MARGIN_RIGHT && x > MARGIN_LEFT {
                x = MARGIN_LEFT;
                y += 18.0;
            }
            let color = esc(color);
            if *filled > 0.0 {
                let _ = write!(
                    s,
                    "<rect x=\"{x}\" y=\"{}\" width=\"24\" height=\"10\" fill=\"{color}\" fill-opacity=\"{filled}\"/>",
                    fixed(y - 9.0, 1),
                    x = fixed(x, 1)
                );
            } else {
                let _ = write!(
                    s,
                    "<line x1=\"{x}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{color}\" stroke-width=\"2.5\"{}/>",
                    fixed(y - 4.0, 1),
                    fixed(x + 24.0, 1),
                    fixed(y - 4.0, 1),
                    dash.map(|d| format!(" stroke-dasharray=\"{d}\"")).unwrap_or_default(),
                    x = fixed(x, 1)
                );
            }
            let label: String = name.chars().take(60).collect();
            let _ = write!(
                s,
                "<text x=\"{}\" y=\"{y}\">{}</text>",
                fixed(x + 30.0, 1),
                esc(&label),
                y = fixed(y, 1)
            );
            x += w;
        }
        s.push_str("</g>");
        (s, y - y0 + 22.0)
    }
}

/// Embed chart `c` in the page `out` as inline SVG with `id`, then a line break: where its
/// SVG is in `out`, for a page that keeps its figures (the PNG export draws them again).
/// Written straight into the page: a chart built in a string of its own, copied in and
/// kept beside it, was held twice.
pub(crate) fn embed(out: &mut String, c: &Chart, id: &str) -> std::ops::Range<usize> {
    let start = out.len();
    c.write_svg(id, out);
    let end = out.len();
    out.push('\n');
    start..end
}

fn area_path(
    s: &mut String,
    lo: &[(f64, f64)],
    hi: &[(f64, f64)],
    color: &str,
    opacity: f64,
    px: &dyn Fn(f64) -> f64,
    py: &dyn Fn(f64) -> f64,
) {
    if lo.is_empty() || hi.is_empty() {
        return;
    }
    let _ = write!(
        s,
        "<path fill=\"{color}\" fill-opacity=\"{opacity}\" stroke=\"none\" d=\""
    );
    for (i, (x, y)) in hi.iter().enumerate() {
        s.push(if i == 0 { 'M' } else { 'L' });
        push_point(s, px(*x), py(*y));
    }
    for (x, y) in lo.iter().rev() {
        s.push('L');
        push_point(s, px(*x), py(*y));
    }
    s.push_str("Z\"/>");
}

/// "x,y" in px, to 0.1 px.
fn push_point(s: &mut String, x: f64, y: f64) {
    push_fixed(s, x, 1);
    s.push(',');
    push_fixed(s, y, 1);
}

/// Split a series at its break markers (points with a non-finite coordinate). When a series
/// has many breaks (more than one per eight pixel columns), the breaks are ignored and the
/// points joined, so that a sparse series cannot turn into thousands of tiny lines.
pub fn segments(pts: &[(f64, f64)]) -> Vec<&[(f64, f64)]> {
    let bad = |p: &(f64, f64)| !(p.0.is_finite() && p.1.is_finite());
    let segs: Vec<&[(f64, f64)]> = pts.split(bad).filter(|s| !s.is_empty()).collect();
    if segs.len() <= (PLOT_WIDTH as usize) / 8 {
        segs
    } else {
        // downsample_line drops the markers, so one slice with everything joins the pieces.
        vec![pts]
    }
}

/// A series of (x, y) points.
pub type Points = Vec<(f64, f64)>;
type MinMax = ((f64, f64), (f64, f64));

/// Keep, for each of `cols` pixel columns, the minimum and the maximum point (in x order).
/// Points with a non-finite coordinate, or non-positive on a log axis, are dropped. A series
/// that already fits (≤ 2 points per column) is returned unchanged.
pub fn downsample_line(pts: &[(f64, f64)], x: &Axis, y: &Axis, cols: usize) -> Vec<(f64, f64)> {
    let (fx, fy) = (x.fracs(), y.fracs());
    let ok = |p: &(f64, f64)| fx(p.0).is_finite() && fy(p.1).is_finite();
    let cols = cols.max(1);
    if pts.len() <= 2 * cols {
        return pts.iter().copied().filter(ok).collect();
    }
    // (min point, max point) per column.
    let mut bins: Vec<Option<MinMax>> = vec![None; cols];
    for p in pts.iter().filter(|p| ok(p)) {
        let c = col_of(fx(p.0), cols);
        let e = bins[c].get_or_insert((*p, *p));
        if p.1 < e.0 .1 {
            e.0 = *p;
        }
        if p.1 > e.1 .1 {
            e.1 = *p;
        }
    }
    let mut out = Vec::with_capacity(2 * cols);
    for (mn, mx) in bins.into_iter().flatten() {
        if mn == mx {
            out.push(mn);
        } else if mn.0 <= mx.0 {
            out.push(mn);
            out.push(mx);
        } else {
            out.push(mx);
            out.push(mn);
        }
    }
    out
}

fn col_of(frac: f64, cols: usize) -> usize {
    ((frac * cols as f64).floor().max(0.0) as usize).min(cols - 1)
}

/// Downsample a band or area to one point per column for each edge: min of `lo` and max of
/// `hi` (band), or the mean of each (area). x of a column point is the mean x of its points.
pub fn downsample_band(
    lo: &[(f64, f64)],
    hi: &[(f64, f64)],
    x: &Axis,
    y: &Axis,
    cols: usize,
    mean: bool,
) -> (Points, Points) {
    let cols = cols.max(1);
    let (fx, fy) = (x.fracs(), y.fracs());
    let ok = |p: &(f64, f64)| fx(p.0).is_finite() && fy(p.1).is_finite();
    if lo.len() <= cols && hi.len() <= cols {
        return (
            lo.iter().copied().filter(ok).collect(),
            hi.iter().copied().filter(ok).collect(),
        );
    }
    let run = |pts: &[(f64, f64)], upper: bool| -> Vec<(f64, f64)> {
        // (sum x, n, agg y, sum y)
        let mut bins: Vec<(f64, usize, f64, f64)> = vec![(0.0, 0, f64::NAN, 0.0); cols];
        for p in pts.iter().filter(|p| ok(p)) {
            let c = col_of(fx(p.0), cols);
            let b = &mut bins[c];
            b.0 += p.0;
            b.1 += 1;
            b.3 += p.1;
            b.2 = if b.2.is_nan() {
                p.1
            } else if upper {
                b.2.max(p.1)
            } else {
                b.2.min(p.1)
            };
        }
        bins.into_iter()
            .filter(|b| b.1 > 0)
            .map(|b| (b.0 / b.1 as f64, if mean { b.3 / b.1 as f64 } else { b.2 }))
            .collect()
    };
    (run(lo, false), run(hi, true))
}

/// Nice tick positions and labels for an axis.
pub fn ticks(a: &Axis) -> Vec<(f64, String)> {
    if !a.labels.is_empty() {
        return a
            .labels
            .iter()
            .filter(|(v, _)| *v >= a.min && *v <= a.max)
            .map(|(v, l)| (*v, l.clone()))
            .collect();
    }
    match a.scale {
        Scale::Linear => {
            let span = a.max - a.min;
            let raw = span / 6.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 2.5, 5.0, 10.0]
                .iter()
                .map(|m| m * mag)
                .find(|s| span / s <= 7.0)
                .unwrap_or(10.0 * mag);
            if !(step.is_finite() && step > 0.0) {
                return Vec::new();
            }
            // 2.5 needs one more decimal than its magnitude (7.5, 0.25); 25 does not.
            let decimals = (-step.log10().floor()).max(0.0) as usize + usize::from(step / mag == 2.5 && step < 10.0);
            let first = (a.min / step).ceil() as i64;
            let mut out = Vec::new();
            let mut k = first;
            loop {
                let v = k as f64 * step;
                if v > a.max + step * 1e-9 || out.len() > 20 {
                    break;
                }
                let v = if v.abs() < step * 1e-9 { 0.0 } else { v };
                out.push((v, format!("{v:.decimals$}")));
                k += 1;
            }
            out
        }
        Scale::Log10 => {
            let lo = a.min.log10().floor() as i32;
            let hi = a.max.log10().ceil() as i32;
            let stride = ((hi - lo) / 8 + 1).max(1);
            let inside = |v: f64| v >= a.min * 0.999 && v <= a.max * 1.001;
            let decades: Vec<(f64, String)> = (lo..=hi)
                .filter(|e| (e - lo) % stride == 0)
                .map(|e| (10f64.powi(e), e))
                .filter(|(v, _)| inside(*v))
                .map(|(v, e)| (v, pow10_label(e)))
                .collect();
            if decades.len() >= 3 {
                return decades;
            }
            // Less than two decades: 1, 2 and 5 times each power of ten.
            (lo..=hi)
                .flat_map(|e| [1.0, 2.0, 5.0].map(|m| (m, e)))
                .map(|(m, e)| (m * 10f64.powi(e), e))
                .filter(|(v, _)| inside(*v))
                .map(|(v, e)| {
                    let label = if e >= 0 {
                        format!("{v:.0}")
                    } else {
                        format!("{v:.*}", (-e) as usize)
                    };
                    (v, label)
                })
                .collect()
        }
    }
}

fn pow10_label(e: i32) -> String {
    match e {
        -2..=0 => format!("{}", 10f64.powi(e)),
        1..=3 => format!("{}", 10f64.powi(e) as i64),
        _ => {
            const SUP: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
            let mut s = String::from("10");
            if e < 0 {
                s.push('⁻');
            }
            for d in e.unsigned_abs().to_string().chars() {
                s.push(SUP[d.to_digit(10).unwrap_or(0) as usize]);
            }
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palette_is_stable_and_distinct() {
        let p = Palette::new(["prague", "cubic", "probe-l4s", "probe-classic"]);
        // Independent of the order names are given in; a name alone gets its preferred colour.
        let q = Palette::new(["probe-classic", "cubic", "probe-l4s", "prague"]);
        for n in ["prague", "cubic", "probe-l4s", "probe-classic"] {
            assert_eq!(p.color(n), q.color(n));
        }
        assert_eq!(
            Palette::new(["prague"]).color("prague"),
            PALETTE[(fnv1a("prague") % 12) as usize]
        );
        let cs: std::collections::BTreeSet<String> = ["prague", "cubic", "probe-l4s", "probe-classic"]
            .iter()
            .map(|n| p.color(n))
            .collect();
        assert_eq!(cs.len(), 4);
        let many: Vec<String> = (0..12).map(|i| format!("f{i}")).collect();
        let p = Palette::new(many.iter().map(|s| s.as_str()));
        let cs: std::collections::BTreeSet<String> = many.iter().map(|n| p.color(n)).collect();
        assert_eq!(cs.len(), 12);
    }

    #[test]
    fn downsampling_bounds_points_and_keeps_extremes() {
        let pts: Vec<(f64, f64)> = (0..60_000)
            .map(|i| (i as f64 * 0.01, ((i * 7919) % 1000) as f64))
            .collect();
        let x = Axis::linear("time (s)", 0.0, 600.0);
        let y = Axis::linear("ms", 0.0, 1000.0);
        let d = downsample_line(&pts, &x, &y, PLOT_WIDTH as usize);
        assert!(d.len() <= 2 * PLOT_WIDTH as usize && d.len() <= 2000, "{}", d.len());
        assert!(d.len() >= PLOT_WIDTH as usize);
        let max = d.iter().map(|p| p.1).fold(f64::MIN, f64::max);
        let min = d.iter().map(|p| p.1).fold(f64::MAX, f64::min);
        assert_eq!((min, max), (0.0, 999.0));
        assert!(d.windows(2).all(|w| w[0].0 <= w[1].0), "x order kept");
        let (lo, hi) = downsample_band(&pts, &pts, &x, &y, 864, false);
        assert!(lo.len() <= 864 && hi.len() <= 864);
    }

    #[test]
    fn ticks_are_round() {
        let t: Vec<String> = ticks(&Axis::linear("", 0.0, 60.0)).into_iter().map(|t| t.1).collect();
        assert_eq!(t, ["0", "10", "20", "30", "40", "50", "60"]);
        let t: Vec<String> = ticks(&Axis::log("", 1e-5, 1.0)).into_iter().map(|t| t.1).collect();
        assert_eq!(t, ["10⁻⁵", "10⁻⁴", "10⁻³", "0.01", "0.1", "1"]);
        let t: Vec<String> = ticks(&Axis::log("", 22.0, 600.0)).into_iter().map(|t| t.1).collect();
        assert_eq!(t, ["50", "100", "200", "500"]);
        let t: Vec<String> = ticks(&Axis::log("", 0.015, 0.3)).into_iter().map(|t| t.1).collect();
        assert_eq!(t, ["0.02", "0.05", "0.1", "0.2"]);
        let t: Vec<String> = ticks(&Axis::linear("", 0.0, 1.0)).into_iter().map(|t| t.1).collect();
        assert_eq!(t.first().map(|s| s.as_str()), Some("0.0"));
        assert!(ticks(&Axis::linear("", f64::NAN, f64::NAN)).len() >= 2);
        // A step of 2.5 keeps its half (7.5, not "8").
        let t: Vec<String> = ticks(&Axis::linear("", 5.0, 20.0)).into_iter().map(|t| t.1).collect();
        assert_eq!(t, ["5.0", "7.5", "10.0", "12.5", "15.0", "17.5", "20.0"]);
        let t: Vec<String> = ticks(&Axis::linear("", 0.0, 150.0)).into_iter().map(|t| t.1).collect();
        assert_eq!(t, ["0", "25", "50", "75", "100", "125", "150"]);
    }

    #[test]
    fn svg_has_title_axes_and_a_polyline() {
        let mut c = Chart::new(
            "t <x>".into(),
            Axis::linear("time (s)", 0.0, 10.0),
            Axis::linear("delay (ms)", 0.0, 5.0),
        );
        c.layers.push(Layer {
            name: "a&b".into(),
            color: "#000".into(),
            mark: Mark::Line {
                pts: vec![(0.0, 1.0), (10.0, 2.0)],
                width: 1.5,
                dash: None,
            },
            legend: true,
        });
        let s = c.to_svg("x1");
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert!(s.contains("<title>t &lt;x&gt;</title>"));
        assert!(s.contains("a&amp;b"));
        assert!(s.contains("time (s)") && s.contains("delay (ms)"));
        assert_eq!(s.matches("<polyline").count(), 1);
        assert!(!s.contains("http"));
    }

    /// The warm-up's label is above the plot area, where no data is drawn, so that a line
    /// along the top of the range (the capacity at 95 % of the axis) does not run through
    /// it; the shade itself is under the data.
    #[test]
    fn the_warm_up_label_is_above_the_plot_area() {
        let mut c = Chart::new(
            "t".into(),
            Axis::linear("time (s)", 0.0, 10.0),
            Axis::linear("throughput (Mbit/s)", 0.0, 10.5),
        );
        c.shade = Some((0.0, 2.0, "warm-up (not in the statistics)".into()));
        c.layers.push(Layer {
            name: "capacity".into(),
            color: "#000".into(),
            mark: Mark::Line {
                pts: vec![(0.0, 10.0), (10.0, 10.0)],
                width: 1.5,
                dash: None,
            },
            legend: true,
        });
        let s = c.to_svg("w");
        let attr = |at: usize, name: &str| -> f64 {
            let from = s[at..].find(&format!(" {name}=\"")).unwrap() + at + name.len() + 3;
            s[from..from + s[from..].find('"').unwrap()].parse().unwrap()
        };
        let shade = s.find("<rect class=\"shade\"").unwrap();
        let label = s.find("<text class=\"shadelabel\"").unwrap();
        let legend_text = s
            .find("<g class=\"legend\">")
            .and_then(|g| s[g..].find("<text").map(|i| i + g))
            .unwrap();
        let (top, base) = (attr(shade, "y"), attr(label, "y"));
        assert_eq!((attr(label, "x"), base), (MARGIN_LEFT, top - 4.0), "{s}");
        // 10 px text between the legend's last line (its descenders, 3 px) and the plot.
        assert!(base - 10.0 > attr(legend_text, "y") + 3.0, "{s}");
        assert!(shade < s.find("<polyline").unwrap(), "{s}");
        // A panel whose shade has no label (the lower one of a pair) gets none.
        c.shade = Some((0.0, 2.0, String::new()));
        assert!(!c.to_svg("w").contains("shadelabel"));
    }
}
