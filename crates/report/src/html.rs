//! The self-contained HTML report: verdict first, then tables, then charts. One file, inline
//! CSS and inline SVG, no script, no font, no URL, so it opens offline and can be mailed.

use crate::charts::{Chart, Palette};
use crate::data::{FlowCol, QueueCol, Results};
use crate::figures::{self, Ctx};
use crate::fmt::{count, esc, ms_fine as ms, pct, rate};
use crate::verdict::{verdict, Verdict, SAMPLES_P999, SAMPLES_P9999};
use crate::ReportError;
use l4s_metrics::Percentiles;
use std::fmt::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The chart rules (every selector starts with `svg `): the page's CSS and the `<style>` of a
/// standalone chart (PNG export) share them.
macro_rules! svg_css {
    () => {
        r#"svg text{font:11px system-ui,sans-serif;fill:#333}svg .title{font-size:13px;font-weight:600}svg .label{font-size:12px}
svg .grid line{stroke:#eee}svg .axis line,svg .axis rect{stroke:#888}svg .shade{fill:#f2f2f2}svg .shadelabel{fill:#888;font-size:10px}
svg .guide{stroke:#999;stroke-dasharray:3 3}svg .guidelabel{fill:#777;font-size:10px;paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}
"#
    };
}
pub(crate) const SVG_CSS: &str = svg_css!();

pub(crate) const CSS: &str = concat!(
    r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1000px;padding:16px;color:#222;background:#fff}
h1{font-size:22px;margin:8px 0 2px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:3px}h3{font-size:15px;margin:16px 0 6px}
.meta{color:#555;margin:2px 0}
.verdict{border-radius:6px;padding:10px 14px;margin:14px 0;border-left:6px solid}
.verdict.good{background:#eaf6ec;border-color:#2e7d32}.verdict.warn{background:#fff6e0;border-color:#e6a100}.verdict.bad{background:#fdecea;border-color:#c62828}
.headline{font-size:17px;font-weight:600;margin:4px 0 8px}
.warnings{margin:0;padding-left:18px}.warnings li{margin:4px 0}
.sev{display:inline-block;min-width:38px;font:600 11px monospace;text-transform:uppercase;border-radius:3px;padding:0 4px;margin-right:6px;text-align:center}
.sev.bad{background:#c62828;color:#fff}.sev.warn{background:#e6a100;color:#000}.sev.note{background:#ccc;color:#000}.sev.good{background:#2e7d32;color:#fff}
code{font:12px monospace;color:#555}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px;display:block;max-width:100%;overflow-x:auto}
th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}th{background:#f4f4f4;font-weight:600}
td.l,th.l{text-align:left}tr.sub td{color:#555}.thin{color:#999}
td.w,th.w{text-align:left;white-space:normal;overflow-wrap:anywhere;max-width:220px}tr.diff td{font-weight:600}tr.first td{border-top:1px solid #ccc}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;vertical-align:-1px}
svg.chart{display:block;width:100%;height:auto;margin:6px 0 14px}
"#,
    svg_css!(),
    r#".missing{color:#8a6d00;background:#fffbe6;padding:6px 10px;border-radius:4px}
footer{margin-top:30px;color:#777;font-size:12px;border-top:1px solid #ddd;padding-top:8px}
"#
);

/// Read a results directory and render the report as one HTML string.
pub fn render_report(dir: &Path) -> Result<String, ReportError> {
    let res = Results::load(dir)?;
    Ok(render_results(&res))
}

/// Render `dir/report.html` and write it atomically (a temporary file renamed into place).
/// Returns the path written.
pub fn write_report(dir: &Path) -> Result<PathBuf, ReportError> {
    let html = render_report(dir)?;
    let path = dir.join("report.html");
    l4s_metrics::results::write_file_atomic(&path, html.as_bytes()).map_err(|source| ReportError::Io {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// Palette over every flow name the results mention (summary and snapshots).
pub(crate) fn palette_for<'a>(runs: impl IntoIterator<Item = &'a Results>) -> Palette {
    let mut names: Vec<&str> = Vec::new();
    for r in runs {
        names.extend(r.summary.flows.iter().map(|f| f.name.as_str()));
        if let Some(s) = &r.snapshots {
            names.extend(s.flows.iter().map(|f| f.name.as_str()));
        }
    }
    Palette::new(names)
}

/// How every page l4s-lab writes begins, up to its title (which begins with "l4s-lab ").
const HEAD: &str = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>";

pub(crate) fn head(out: &mut String, title: &str) {
    debug_assert!(title.starts_with("l4s-lab "), "{title}");
    let _ = writeln!(out, "{HEAD}{}</title><style>{CSS}</style></head><body>", esc(title));
}

/// Whether a file that begins with `start` is a page l4s-lab wrote (a report, a
/// comparison or a campaign's page), and so may be replaced by a new one; a person's own
/// page is not.
pub fn is_l4s_page(start: &[u8]) -> bool {
    start
        .strip_prefix(HEAD.as_bytes())
        .is_some_and(|rest| rest.starts_with(b"l4s-lab "))
}

pub(crate) fn verdict_html(out: &mut String, v: &Verdict) {
    let _ = write!(
        out,
        "<section class=\"verdict {}\"><p class=\"headline\">{}</p>",
        v.level.as_str(),
        esc(&v.headline)
    );
    if !v.warnings.is_empty() {
        out.push_str("<ul class=\"warnings\">");
        for w in &v.warnings {
            let _ = write!(
                out,
                "<li><span class=\"sev {0}\">{0}</span>{1} <code>{2}</code></li>",
                w.severity.as_str(),
                esc(&w.text),
                esc(w.code)
            );
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>\n");
}

/// A percentile cell, greyed with a dagger when it rests on too few samples.
fn pcell(v: f64, count: u64, need: u64) -> String {
    if count > 0 && count < need {
        format!(
            "<td class=\"thin\" title=\"only {} samples: in effect the maximum\">{}†</td>",
            count,
            esc(&ms(v))
        )
    } else {
        format!("<td>{}</td>", esc(&ms(v)))
    }
}

fn pct_cells(p: &Percentiles, full: bool) -> String {
    let mut s = String::new();
    if p.count == 0 {
        let n = if full { 6 } else { 3 };
        for _ in 0..n {
            s.push_str("<td class=\"thin\">–</td>");
        }
        return s;
    }
    let _ = write!(s, "<td>{}</td>", ms(p.p50));
    if full {
        let _ = write!(s, "<td>{}</td>", ms(p.p90));
    }
    let _ = write!(s, "<td>{}</td>", ms(p.p99));
    s.push_str(&pcell(p.p999, p.count, SAMPLES_P999));
    if full {
        s.push_str(&pcell(p.p9999, p.count, SAMPLES_P9999));
        let _ = write!(s, "<td>{}</td>", ms(p.max));
    }
    s
}

pub(crate) fn flows_table(out: &mut String, res: &Results, pal: &Palette) {
    let s = &res.summary;
    out.push_str("<h3>Flows</h3><table><tr><th class=\"l\">flow</th><th class=\"l\">class</th><th class=\"l\">cc</th><th class=\"l\">ecn / feedback</th><th>throughput</th><th>OWD p50 ms</th><th>p90</th><th>p99</th><th>p99.9</th><th>p99.99</th><th>max</th><th>RTT p99 ms</th><th>loss</th><th>CE</th></tr>");
    for f in &s.flows {
        let _ = write!(
            out,
            "<tr><td class=\"l\"><span class=\"sw\" style=\"background:{}\"></span>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{} / {}</td><td>{}</td>{}<td>{}</td><td title=\"{} of {} packets\">{}</td><td title=\"{} of {} packets\">{}</td></tr>",
            esc(&pal.color(&f.name)),
            esc(&f.name),
            esc(&f.class),
            esc(&f.cc),
            esc(&f.ecn),
            esc(&f.ecn_feedback),
            esc(&rate(f.throughput_bps)),
            pct_cells(&f.owd_ms, true),
            f.rtt_ms.as_ref().map(|r| ms(r.p99)).unwrap_or_else(|| "–".into()),
            count(f.lost_packets),
            count(f.sent_packets),
            esc(&pct(f.loss_fraction)),
            count(f.ce_packets),
            count(f.received_packets),
            esc(&pct(f.ce_fraction)),
        );
    }
    out.push_str("</table>");
    if !s.classes.is_empty() {
        out.push_str("<h3>Traffic classes</h3><table><tr><th class=\"l\">class</th><th>flows</th><th>throughput</th><th>OWD p50 ms</th><th>p90</th><th>p99</th><th>p99.9</th><th>p99.99</th><th>max</th></tr>");
        for c in &s.classes {
            let _ = write!(
                out,
                "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td>{}</tr>",
                esc(&c.class),
                c.flows,
                esc(&rate(c.throughput_bps)),
                pct_cells(&c.owd_ms, true)
            );
        }
        out.push_str("</table>");
    }
}

/// Per-frame metrics of the media flows (nothing when there are none).
pub(crate) fn media_table(out: &mut String, res: &Results, pal: &Palette) {
    let flows: Vec<_> = res
        .summary
        .flows
        .iter()
        .filter_map(|f| f.media.as_ref().map(|m| (f, m)))
        .collect();
    if flows.is_empty() {
        return;
    }
    out.push_str("<h3>Real-time media</h3><table><tr><th class=\"l\">flow</th><th class=\"l\">profile / controller</th><th>fps sent / received</th><th>frame delay p50 ms</th><th>p99</th><th>p99.9</th><th>late</th><th>incomplete</th><th>stall</th><th title=\"hover a value for the minimum and maximum\">target mean</th><th class=\"l\">ECN</th></tr>");
    for (f, m) in flows {
        let _ = write!(
            out,
            "<tr><td class=\"l\"><span class=\"sw\" style=\"background:{}\"></span>{}</td><td class=\"l\">{} / {}{}</td><td>{} / {}</td>{}<td title=\"{} of {} complete frames later than {} ms after the expected display time\">{}</td><td>{}</td><td title=\"no new frame for more than {} ms\">{:.2} s ({})</td><td title=\"min {}, max {}\">{}</td><td class=\"l\">{}</td></tr>",
            esc(&pal.color(&f.name)),
            esc(&f.name),
            esc(&m.profile),
            esc(&m.controller),
            if m.l4s { " (L4S)" } else { " (classic)" },
            fnum(m.fps),
            fnum(m.received_fps),
            pct_cells(&m.frame_delay_ms, false),
            count(m.frames_late),
            count(m.frames_complete),
            fnum(m.deadline_ms),
            count(m.frames_late),
            count(m.frames_incomplete),
            fnum(m.stall_gap_ms),
            m.stall_time_s,
            esc(&pct(m.stall_fraction)),
            esc(&rate(m.target_bitrate_min_bps)),
            esc(&rate(m.target_bitrate_max_bps)),
            esc(&rate(m.target_bitrate_mean_bps)),
            esc(&match (&f.ecn_failure, f.ecn_failed_at_s) {
                (Some(r), Some(t)) => format!("validation failed at {t:.2} s ({r})"),
                _ if f.ecn_validation.is_empty() => "–".to_string(),
                _ => f.ecn_validation.clone(),
            }),
        );
    }
    out.push_str("</table>");
}

/// Completion times of the application flows (nothing when there are none).
pub(crate) fn apps_table(out: &mut String, res: &Results, pal: &Palette) {
    let flows: Vec<_> = res
        .summary
        .flows
        .iter()
        .filter_map(|f| f.app.as_ref().map(|a| (f, a)))
        .collect();
    if flows.is_empty() {
        return;
    }
    out.push_str("<h3>Applications</h3><table><tr><th class=\"l\">flow</th><th class=\"l\">app / cc</th><th class=\"l\">completed</th><th>count</th><th>time p50 ms</th><th>p99</th><th>p99.9</th><th>max</th><th>mean goodput</th></tr>");
    for (f, a) in flows {
        if a.completions.is_empty() {
            let _ = write!(
                out,
                "<tr><td class=\"l\"><span class=\"sw\" style=\"background:{}\"></span>{}</td><td class=\"l\">{} / {}</td><td class=\"l\">none in the statistics window</td><td>0</td><td class=\"thin\">–</td><td class=\"thin\">–</td><td class=\"thin\">–</td><td class=\"thin\">–</td><td class=\"thin\">–</td></tr>",
                esc(&pal.color(&f.name)),
                esc(&f.name),
                esc(&a.app),
                esc(&f.cc),
            );
        }
        for (i, (kind, c)) in a.completions.iter().enumerate() {
            let _ = write!(
                out,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td>{}<td>{}</td><td>{}</td></tr>",
                if i == 0 {
                    format!("<span class=\"sw\" style=\"background:{}\"></span>{}", esc(&pal.color(&f.name)), esc(&f.name))
                } else {
                    String::new()
                },
                if i == 0 { esc(&format!("{} / {}", a.app, f.cc)) } else { String::new() },
                esc(kind),
                count(c.count),
                pct_cells(&c.time_ms, false),
                if c.count > 0 { ms(c.time_ms.max) } else { "–".into() },
                esc(&rate(c.goodput_bps)),
            );
        }
    }
    out.push_str("</table>");
}

pub(crate) fn queues_table(out: &mut String, res: &Results) {
    let s = &res.summary;
    if s.queues.is_empty() {
        return;
    }
    out.push_str("<h3>Queues</h3><table><tr><th class=\"l\">queue</th><th class=\"l\">aqm</th><th class=\"l\">sub-queue</th><th>rate</th><th>sojourn p50 ms</th><th>p99</th><th>p99.9</th><th>marks</th><th>drops</th><th>utilisation</th><th>mean prob.</th></tr>");
    for q in &s.queues {
        let _ = write!(
            out,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">all</td><td>{}</td>{}<td>{}</td><td title=\"{} at the buffer limit\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(&q.name),
            esc(&q.aqm),
            esc(&match &q.capacity {
                // A capacity that changed: its mean and range over the window.
                Some(c) => format!("{} ({}–{})", rate(c.mean_bps), rate(c.min_bps), rate(c.max_bps)),
                None => rate(q.rate_bps as f64),
            }),
            pct_cells(&q.sojourn_ms, false),
            count(q.marks),
            count(q.overlimit_drops),
            count(q.drops),
            esc(&pct(q.utilization)),
            q.mean_probability.map(|p| format!("{p:.4}")).unwrap_or_else(|| "–".into()),
        );
        for (k, sq) in q.subqueues.iter().filter(|(k, _)| k.as_str() != "single") {
            let _ = write!(
                out,
                "<tr class=\"sub\"><td class=\"l\"></td><td class=\"l\"></td><td class=\"l\">{}</td><td></td>{}<td>{}</td><td>{}</td><td></td><td></td></tr>",
                esc(k),
                pct_cells(&sq.sojourn_ms, false),
                count(sq.marks),
                count(sq.drops),
            );
        }
    }
    out.push_str("</table><p class=\"meta\">† rests on too few samples for that percentile (fewer than 1 000 for p99.9, 10 000 for p99.99): read it as the maximum.</p>");
    for q in &s.queues {
        let Some(qp) = &q.queue_protection else { continue };
        let _ = write!(
            out,
            "<h3>Queue Protection on {}</h3><p class=\"meta\">RFC 9957: CRITICALqL {} ms; {} of {} L-queue packets redirected to the Classic queue ({} default-bucket collisions).</p>",
            esc(&q.name),
            qp.critical_ql_ms,
            count(qp.sanctioned_packets),
            count(qp.checked_packets),
            count(qp.default_bucket_collisions),
        );
        if qp.flows.is_empty() {
            continue;
        }
        out.push_str("<table><tr><th class=\"l\">flow</th><th>packets</th><th>bytes</th><th>first s</th><th>last s</th><th>max score ms</th><th>max L delay ms</th></tr>");
        for f in &qp.flows {
            let _ = write!(
                out,
                "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.2}</td><td>{:.2}</td></tr>",
                esc(&f.flow),
                count(f.packets),
                count(f.bytes),
                f.first_s,
                f.last_s,
                f.max_score_ms,
                f.max_qdelay_ms,
            );
        }
        out.push_str("</table>");
    }
}

/// Each Wi-Fi BSS: a table per station and direction, the airtime chart (stacked down and
/// up per station), the MAC access delay's p50 to p99 per station and direction, and its
/// distributions (CDF and CCDF).
fn wifi_section(ch: &mut Charts, cx: &Ctx) {
    use crate::charts::{Axis, Layer, Mark};
    let s = &cx.res.summary;
    for w in &s.wifi {
        let _ = write!(ch.out, "<h3>Wi-Fi {}</h3>", esc(&w.name));
        ch.out.push_str("<table><tr><th class=\"l\">station</th><th class=\"l\">PHY</th><th class=\"l\">direction</th><th>airtime</th><th>PPDUs</th><th>MPDUs per A-MPDU</th><th>retries</th><th>drops at the retry limit</th><th>access delay p50 ms</th><th>p99</th><th>off-channel s</th></tr>");
        let opt = |v: Option<f64>| v.map_or("–".to_string(), ms);
        for st in &w.stations {
            for (dir, d) in [("down", &st.down), ("up", &st.up)] {
                let first = dir == "down";
                let _ = write!(
                    ch.out,
                    "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{dir}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    if first { esc(&st.station) } else { String::new() },
                    if first { esc(&format!("{} ({})", st.phy, rate(st.phy_rate_bps as f64))) } else { String::new() },
                    esc(&pct(d.airtime_share)),
                    count(d.ppdus),
                    d.mpdus_per_ampdu,
                    count(d.retries),
                    count(d.retry_drops),
                    opt(d.access_delay_p50_ms),
                    opt(d.access_delay_p99_ms),
                    if first { format!("{:.2}", st.off_channel_s) } else { String::new() },
                );
            }
        }
        ch.out.push_str("</table>");
        if w.stations.iter().any(|st| !st.links.is_empty()) {
            // Several channels: each station's frames per link.
            ch.out.push_str("<table><tr><th class=\"l\">station</th><th class=\"l\">link</th><th class=\"l\">PHY</th><th>airtime down</th><th>PPDUs</th><th>MPDUs</th><th>airtime up</th><th>PPDUs</th><th>MPDUs</th></tr>");
            for st in &w.stations {
                for (i, l) in st.links.iter().enumerate() {
                    let _ = write!(
                        ch.out,
                        "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        if i == 0 { esc(&st.station) } else { String::new() },
                        esc(&format!("{} ({})", l.channel, l.band)),
                        esc(&format!("{} ({})", l.phy, rate(l.phy_rate_bps as f64))),
                        esc(&pct(l.down.airtime_share)),
                        count(l.down.ppdus),
                        count(l.down.mpdus),
                        esc(&pct(l.up.airtime_share)),
                        count(l.up.ppdus),
                        count(l.up.mpdus),
                    );
                }
            }
            ch.out.push_str("</table>");
        }
        let busy = w.edcaf_lines();
        if !busy.is_empty() {
            let _ = write!(ch.out, "<p class=\"meta\">{}</p>", esc(&busy));
        }
        let names: Vec<String> = w.stations.iter().map(|s| s.station.clone()).collect();
        let pal = Palette::new(["down", "up"]);
        let sc = &s.scenario;
        let top = w
            .stations
            .iter()
            .map(|s| 100.0 * (s.down.airtime_share + s.up.airtime_share))
            .fold(0.0, f64::max);
        let mut air = Chart::new(
            format!(
                "Airtime per station of Wi-Fi {} (% of the window), {}, seed {}",
                w.name, sc.name, sc.seed
            ),
            Axis::categories("station", &names, 14),
            Axis::linear("airtime (%)", 0.0, (top * 1.1).max(1.0)),
        );
        air.plot_height = 200.0;
        for (dir, part) in [("down", 0usize), ("up", 1)] {
            let bars = w
                .stations
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let down = 100.0 * s.down.airtime_share;
                    if part == 0 {
                        (i as f64, 0.0, down)
                    } else {
                        (i as f64, down, down + 100.0 * s.up.airtime_share)
                    }
                })
                .collect();
            air.layers.push(Layer {
                name: format!("{dir}link TXOPs"),
                color: pal.color(dir),
                mark: Mark::Bars { bars, width: 0.5 },
                legend: true,
            });
        }
        ch.push(&air);
        let delays: Vec<(usize, &str, f64, f64)> = w
            .stations
            .iter()
            .enumerate()
            .flat_map(|(i, s)| [(i, "down", &s.down), (i, "up", &s.up)])
            .filter_map(|(i, dir, d)| Some((i, dir, d.access_delay_p50_ms?, d.access_delay_p99_ms?)))
            .collect();
        if delays.is_empty() {
            continue;
        }
        let hi = delays.iter().map(|d| d.3).fold(0.0, f64::max);
        let lo = delays.iter().map(|d| d.2).fold(f64::MAX, f64::min);
        let mut acc = Chart::new(
            format!(
                "MAC access delay per station of Wi-Fi {}: p50 (dot) to p99 (bar top), ms, {}, seed {}",
                w.name, sc.name, sc.seed
            ),
            Axis::categories("station", &names, 14),
            Axis::log("access delay (ms)", (lo / 2.0).max(1e-3), hi * 2.0),
        );
        acc.plot_height = 200.0;
        for (dir, shift) in [("down", -0.12), ("up", 0.12)] {
            let mine: Vec<_> = delays.iter().filter(|d| d.1 == dir).collect();
            acc.layers.push(Layer {
                name: format!("{dir}link"),
                color: pal.color(dir),
                mark: Mark::ErrorBars {
                    bars: mine.iter().map(|d| (d.0 as f64 + shift, d.2, d.3)).collect(),
                    width: 1.5,
                },
                legend: true,
            });
            acc.layers.push(Layer {
                name: format!("{dir}link"),
                color: pal.color(dir),
                mark: Mark::Points {
                    pts: mine.iter().map(|d| (d.0 as f64 + shift, d.2)).collect(),
                    radius: 3.0,
                },
                legend: false,
            });
        }
        ch.push(&acc);
        for c in &figures::access_delay_distributions(cx, w) {
            ch.push(c);
        }
    }
}

struct Charts<'a> {
    out: &'a mut String,
    n: usize,
    prefix: &'a str,
    /// Every chart embedded so far, in page order: (title, where its inline svg is in `out`).
    figures: Vec<(String, Range<usize>)>,
}

impl Charts<'_> {
    fn push(&mut self, c: &Chart) {
        self.n += 1;
        let id = format!("{}{}", self.prefix, self.n);
        let at = crate::charts::embed(self.out, c, &id);
        self.figures.push((c.title.clone(), at));
    }
    fn missing(&mut self, text: &str) {
        let _ = write!(self.out, "<p class=\"missing\">{}</p>", esc(text));
    }
}

/// Render a loaded results directory.
pub fn render_results(res: &Results) -> String {
    render_with_figures(res).0
}

/// The charts of the report of `res`, in page order: (title, inline svg exactly as embedded).
pub(crate) fn report_figures(res: &Results) -> Vec<(String, String)> {
    let (page, figures) = render_with_figures(res);
    figures
        .into_iter()
        .map(|(title, at)| (title, page.get(at).unwrap_or_default().to_string()))
        .collect()
}

/// The report and the charts it embeds, so that the PNG export draws the very same charts.
fn render_with_figures(res: &Results) -> (String, Vec<(String, Range<usize>)>) {
    let s = &res.summary;
    let sc = &s.scenario;
    let window = s.stats_window();
    let pal = palette_for([res]);
    let cx = Ctx::new(res, &pal);
    let v = verdict(s, res.snapshots.as_ref());
    let mut out = String::with_capacity(512 * 1024);
    head(&mut out, &format!("l4s-lab report — {}, seed {}", sc.name, sc.seed));
    let _ = writeln!(
        out,
        "<header><h1>{}</h1><p class=\"meta\">{}</p><p class=\"meta\">backend {} · seed {} · {} s simulated · statistics over {}–{} s · scenario file <code>{}</code></p></header>",
        esc(&sc.name),
        esc(&sc.description),
        esc(&sc.backend),
        sc.seed,
        match s.reached_s.filter(|_| !s.complete) {
            Some(r) => format!("{} of {}", fnum(r), fnum(sc.duration_s)),
            None => fnum(sc.duration_s),
        },
        fnum(window.0),
        fnum(window.1),
        esc(&sc.file)
    );
    out.push_str("<h2>Verdict</h2>");
    verdict_html(&mut out, &v);
    // A variant whose set was not finished, or was replaced by a later run in part.
    let vs = crate::variant_set::warnings(std::slice::from_ref(&res.dir));
    if !vs.is_empty() {
        out.push_str("<section class=\"verdict warn\"><ul class=\"warnings\">");
        for w in &vs {
            let _ = write!(out, "<li><span class=\"sev warn\">warn</span>{}</li>", esc(w));
        }
        out.push_str("</ul></section>\n");
    }

    let mut ch = Charts {
        out: &mut out,
        n: 0,
        prefix: "c",
        figures: Vec::new(),
    };
    let no_snaps = "No snapshot files (snapshots-flows.csv, snapshots-queues.csv) in this results directory: \
                    time series are omitted. Run with --snapshot-interval above 0 to get them.";
    // The run at a glance, as crusader draws it: throughput and delay on one time axis.
    ch.out.push_str("<h2>Latency under load</h2>");
    match figures::latency_under_load(&cx) {
        Some(c) => ch.push(&c),
        None => ch.missing(if res.snapshots.is_none() {
            no_snaps
        } else {
            "The flow snapshots have no throughput or one-way delay columns."
        }),
    }

    ch.out.push_str("<h2>Summary</h2>");
    flows_table(ch.out, res, &pal);
    media_table(ch.out, res, &pal);
    apps_table(ch.out, res, &pal);
    queues_table(ch.out, res);
    wifi_section(&mut ch, &cx);

    ch.out.push_str("<h2>One-way delay over time</h2>");
    let lat = figures::latency_over_time(&cx);
    if res.snapshots.is_none() {
        ch.missing(no_snaps);
    } else if lat.is_empty() {
        ch.missing(
            "The flow snapshots have no one-way delay columns (owd_min_ms, owd_mean_ms, owd_p99_ms, owd_max_ms).",
        );
    } else {
        let full = res.snapshots.as_ref().is_some_and(|sn| {
            sn.flows
                .iter()
                .any(|f| f.flow(FlowCol::OwdMinMs).iter().any(|v| v.is_finite()))
        });
        if !full {
            ch.missing("These snapshots carry only the per-interval maximum one-way delay (no owd_min_ms, owd_mean_ms, owd_p99_ms columns): the dotted line is that maximum.");
        }
        for c in &lat {
            ch.push(c);
        }
    }

    ch.out.push_str("<h2>Delay distributions</h2>");
    let (dist, exact) = figures::owd_distributions(&cx);
    if !exact {
        ch.missing("distributions.csv is absent or lacks some flows: those curves join the summary's percentiles (p50, p90, p99, p99.9, p99.99, max) with straight lines, so they show the tail's shape only at those points.");
    }
    for c in &dist {
        ch.push(c);
    }
    for c in &figures::sojourn_distributions(&cx) {
        ch.push(c);
    }

    ch.out.push_str("<h2>Throughput</h2>");
    let thr = figures::throughput(&cx);
    if thr.is_empty() {
        ch.missing(if res.snapshots.is_none() {
            no_snaps
        } else {
            "The flow snapshots have no throughput_bps column."
        });
    }
    for c in &thr {
        ch.push(c);
    }

    ch.out.push_str("<h2>Queues over time</h2>");
    let soj = figures::sojourn_over_time(&cx);
    if res.snapshots.is_none() {
        ch.missing(no_snaps);
    } else if soj.is_empty() {
        ch.missing("No queue built up during the run (every sojourn snapshot is 0), or the queue snapshots have no sojourn columns.");
    }
    for c in &soj {
        ch.push(c);
    }
    let suffix = cx.suffix();
    if let Some(c) = figures::queue_lines(
        &cx,
        QueueCol::Probability,
        "AQM congestion probability over time (DualPI2 p′, PIE p; fraction)",
        "probability",
        1.0,
        None,
    ) {
        ch.push(&c);
    }
    if let Some(c) = figures::queue_lines(
        &cx,
        QueueCol::Utilization,
        "Link utilisation over time (%)",
        "utilisation (%)",
        100.0,
        Some(105.0),
    ) {
        ch.push(&c);
    }

    ch.out.push_str("<h2>ECN marking</h2>");
    match figures::flow_lines(
        &cx,
        FlowCol::CeFraction,
        "CE-marked fraction of arriving packets over time (%)",
        "CE-marked (%)",
        100.0,
        Some(100.0),
    ) {
        Some(c) => ch.push(&c),
        None if res.snapshots.is_some() => ch.missing("No packet arrived CE-marked in any snapshot interval."),
        None => ch.missing(no_snaps),
    }

    if res.summary.flows.iter().any(|f| f.media.is_some()) {
        ch.out.push_str("<h2>Real-time media over time</h2>");
        // Frames per snapshot interval become frames per second.
        let per_s = res
            .snapshots
            .as_ref()
            .and_then(|sn| sn.flows.first())
            .and_then(|f| Some(f.time_s.get(1)? - f.time_s.first()?))
            .filter(|d| *d > 0.0)
            .map(|d| 1.0 / d)
            .unwrap_or(1.0);
        let mut any = false;
        for (col, title, label, k) in [
            (
                FlowCol::TargetBps,
                "Encoder target bitrate over time (Mbit/s)",
                "target (Mbit/s)",
                1e-6,
            ),
            (
                FlowCol::Frames,
                "Complete frames received per second",
                "frames/s",
                per_s,
            ),
            (
                FlowCol::FrameDelayMaxMs,
                "Largest frame delay per interval (ms)",
                "frame delay (ms)",
                1.0,
            ),
            (FlowCol::StallMs, "Stall time per interval (ms)", "stall (ms)", 1.0),
        ] {
            if let Some(c) = figures::flow_lines(&cx, col, title, label, k, None) {
                ch.push(&c);
                any = true;
            }
        }
        if !any {
            ch.missing(if res.snapshots.is_none() {
                no_snaps
            } else {
                "The flow snapshots have no media columns (frames, target_bps)."
            });
        }
    }

    ch.out.push_str("<h2>Congestion control state</h2>");
    let mut any = false;
    for (col, title, label, k) in [
        (
            FlowCol::CwndBytes,
            "Congestion window over time (kB)",
            "cwnd (kB)",
            1e-3,
        ),
        (FlowCol::SrttMs, "Smoothed RTT over time (ms)", "srtt (ms)", 1.0),
    ] {
        if let Some(c) = figures::flow_lines(&cx, col, title, label, k, None) {
            ch.push(&c);
            any = true;
        }
    }
    if !any {
        ch.missing(if res.snapshots.is_none() {
            no_snaps
        } else {
            "The flow snapshots have no cwnd_bytes or srtt_ms values."
        });
    }
    let figures = ch.figures;

    let mut files = vec!["summary.json"];
    if res.snapshots.is_some() {
        files.push("snapshots-*.csv");
    }
    if res.distributions.is_some() {
        files.push("distributions.csv");
    }
    let _ = write!(
        out,
        "<footer>Generated by l4s-report {} from the results directory alone ({}; summary schema {}, written by {} {}). \
         Charts: {}; times are {} from the start of the run. {} Long series are reduced to the minimum and maximum of each \
         pixel column, so no spike is lost. The file is self-contained: no script, font, stylesheet or network access.</footer>\n</body></html>\n",
        env!("CARGO_PKG_VERSION"),
        esc(&files.join(", ")),
        s.schema_version,
        esc(&s.tool.name),
        esc(&s.tool.version),
        esc(&suffix),
        if sc.backend == "live" { "wall-clock time" } else { "simulated time" },
        match &res.run_date {
            Some(d) => format!(
                "The run date, {}, is from run-info.json: summary.json records none, so that the same scenario and \
                 seed give the same file.",
                esc(d)
            ),
            None => "No run date is known (no run-info.json): summary.json records none, so that the same scenario \
                     and seed give the same file."
                .to_string(),
        },
    );
    (out, figures)
}

pub(crate) fn fnum(x: f64) -> String {
    if !x.is_finite() {
        "–".into()
    } else if x == x.round() {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}
