//! PNG export: every chart of the HTML report as one PNG file, for papers and slides.
//!
//! The PNGs are rasterised (with `resvg`) from the very SVG the report embeds: the inline SVG
//! gets the `xmlns` attribute an SVG file needs and the chart rules of the page's stylesheet
//! as a `<style>` element, and nothing else changes. Text is drawn with the system's fonts
//! (fontdb's `load_system_fonts`); with no font at all the text would silently vanish, so
//! that case is an error ([`ReportError::NoFonts`]).

use crate::data::Results;
use crate::html::{report_figures, SVG_CSS};
use crate::ReportError;
use resvg::tiny_skia::{Color, Pixmap, Transform};
use resvg::usvg::{self, fontdb};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Default `scale` of [`write_pngs`]: 2 device pixels per SVG pixel (a 960 px wide chart
/// becomes 1920 px), sharp enough for print.
pub const DEFAULT_PNG_SCALE: f32 = 2.0;

/// Largest PNG side accepted, in pixels (a guard against a mistyped scale).
const MAX_SIDE: f32 = 16_384.0;

/// Families tried, in order, when the fontconfig default for sans-serif is not installed.
const PREFERRED_FAMILIES: [&str; 6] = [
    "DejaVu Sans",
    "Liberation Sans",
    "Noto Sans",
    "Arial",
    "Helvetica",
    "FreeSans",
];

/// Write one PNG per chart of the report of results directory `dir` into `out_dir` (created
/// if needed), in page order, and return their paths.
///
/// File names are `NN-slug.png`: `NN` is the chart's position in the report (two digits, more
/// past 99 charts) and the slug comes from the title without the scenario suffix and units,
/// e.g. `01-one-way-delay-over-time-prague.png`. Names are unique and, like the bytes, the
/// same for the same results on the same machine. Each PNG is `scale` device pixels per SVG
/// pixel ([`DEFAULT_PNG_SCALE`] = 2.0) on a white background. Files are written atomically;
/// other files in `out_dir` are left alone.
///
/// Errors: those of [`Results::load`], [`ReportError::NoFonts`] when the system has no usable
/// font, [`ReportError::Png`] for a bad `scale` or a chart that cannot be rasterised, and
/// [`ReportError::Io`] naming the file that could not be written.
pub fn write_pngs(dir: &Path, out_dir: &Path, scale: f32) -> Result<Vec<PathBuf>, ReportError> {
    check_scale(out_dir, scale)?;
    let res = Results::load(dir)?;
    write_chart_pngs(&report_figures(&res), out_dir, scale)
}

fn check_scale(out_dir: &Path, scale: f32) -> Result<(), ReportError> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(ReportError::Png {
            path: out_dir.to_path_buf(),
            reason: format!("scale must be a finite number above 0, not {scale}"),
        });
    }
    Ok(())
}

/// Write charts given as `(title, inline svg)` (as [`Chart::to_svg`](crate::charts::Chart::to_svg)
/// draws them for a page, e.g. [`render_campaign_with_charts`](crate::campaign::render_campaign_with_charts))
/// as PNGs into `out_dir`, named and drawn as [`write_pngs`] does, and return their paths.
pub fn write_chart_pngs(figures: &[(String, String)], out_dir: &Path, scale: f32) -> Result<Vec<PathBuf>, ReportError> {
    check_scale(out_dir, scale)?;
    let mut opt = usvg::Options::default();
    let (db, family) = font_database()?;
    opt.fontdb = Arc::new(db);
    opt.font_family = family;
    fs::create_dir_all(out_dir).map_err(|source| ReportError::Io {
        path: out_dir.to_path_buf(),
        source,
    })?;
    let names = file_names(figures.iter().map(|f| f.0.as_str()));
    let mut written = Vec::with_capacity(figures.len());
    for ((_, svg), name) in figures.iter().zip(names) {
        let path = out_dir.join(name);
        let png = rasterise(&standalone_svg(svg), scale, &opt).map_err(|reason| ReportError::Png {
            path: path.clone(),
            reason,
        })?;
        write_atomic(&path, &png)?;
        written.push(path);
    }
    Ok(written)
}

/// The standalone copy of an inline chart: the `xmlns` attribute (which the inline SVG omits
/// on purpose, so the HTML report holds no URL) and the page's chart rules as `<style>`.
pub(crate) fn standalone_svg(svg: &str) -> String {
    let rest = svg.strip_prefix("<svg").unwrap_or(svg);
    // The opening tag's attribute values are escaped, so its first '>' closes it.
    let end = rest.find('>').map_or(rest.len(), |i| i + 1);
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\"{}<style>{}</style>{}",
        &rest[..end],
        SVG_CSS.trim_end(),
        &rest[end..]
    )
}

/// System fonts, with the generic families pointing at an installed family; returns the
/// database and that family. Fails when no font is installed (text would vanish).
fn font_database() -> Result<(fontdb::Database, String), ReportError> {
    let mut db = fontdb::Database::new();
    db.load_system_fonts();
    let installed = |db: &fontdb::Database, name: &str| {
        db.query(&fontdb::Query {
            families: &[fontdb::Family::Name(name)],
            ..Default::default()
        })
        .is_some()
    };
    // fontconfig's preferred sans-serif first (it may name a family that is not installed),
    // then well-known families, then any installed family (in name order, for stability).
    let fc = db.family_name(&fontdb::Family::SansSerif).to_string();
    let family = std::iter::once(fc.as_str())
        .chain(PREFERRED_FAMILIES)
        .find(|f| installed(&db, f))
        .map(str::to_string)
        .or_else(|| {
            let mut all: Vec<&str> = db
                .faces()
                .filter(|f| f.style == fontdb::Style::Normal)
                .filter_map(|f| f.families.first().map(|(n, _)| n.as_str()))
                .collect();
            all.sort_unstable();
            all.first().map(|s| s.to_string())
        })
        .ok_or(ReportError::NoFonts)?;
    // The charts ask for system-ui then sans-serif; usvg falls back to serif.
    db.set_sans_serif_family(family.clone());
    db.set_serif_family(family.clone());
    Ok((db, family))
}

/// Rasterise one standalone SVG at `scale` onto white and encode it as PNG.
fn rasterise(svg: &str, scale: f32, opt: &usvg::Options) -> Result<Vec<u8>, String> {
    let tree = usvg::Tree::from_str(svg, opt).map_err(|e| format!("invalid SVG: {e}"))?;
    let size = tree.size();
    let (w, h) = ((size.width() * scale).round(), (size.height() * scale).round());
    if w > MAX_SIDE || h > MAX_SIDE {
        return Err(format!(
            "{w} × {h} px is too large (at most {MAX_SIDE} px a side): use a smaller scale than {scale}"
        ));
    }
    let mut pixmap =
        Pixmap::new(w.max(1.0) as u32, h.max(1.0) as u32).ok_or_else(|| format!("cannot allocate {w} × {h} px"))?;
    pixmap.fill(Color::WHITE);
    resvg::render(&tree, Transform::from_scale(scale, scale), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| format!("PNG encoding failed: {e}"))
}

/// `NN-slug.png` for each title, in order (unique: `NN` is the position).
pub(crate) fn file_names<'a>(titles: impl ExactSizeIterator<Item = &'a str>) -> Vec<String> {
    let digits = titles.len().to_string().len().max(2);
    titles
        .enumerate()
        .map(|(i, t)| format!("{:0digits$}-{}.png", i + 1, slug(t)))
        .collect()
}

/// A file-name slug of a chart title: the part before " — " (the scenario and seed, the same
/// for every chart of a report), without parenthesised units and the words "of", "at" and
/// "the"; lower-case ASCII letters and digits joined by '-', at most 80 characters.
pub(crate) fn slug(title: &str) -> String {
    let head = title.split(" — ").next().unwrap_or(title);
    // Drop "(...)" groups outside quotes (a flow name may hold parentheses).
    let mut kept = String::with_capacity(head.len());
    let (mut depth, mut quoted) = (0usize, false);
    for c in head.chars() {
        match c {
            '\'' if depth == 0 => {
                quoted = !quoted;
                kept.push(' ');
            }
            '(' if !quoted => depth += 1,
            ')' if !quoted && depth > 0 => depth -= 1,
            _ if depth == 0 => kept.push(c),
            _ => {}
        }
    }
    let words: Vec<String> = kept
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_lowercase())
        .filter(|w| !matches!(w.as_str(), "of" | "at" | "the"))
        .collect();
    let mut s = String::new();
    for w in words {
        if !s.is_empty() && s.len() + 1 + w.len() > 80 {
            break;
        }
        if !s.is_empty() {
            s.push('-');
        }
        s.push_str(&w[..w.len().min(80)]);
    }
    if s.is_empty() {
        "chart".into()
    } else {
        s
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    l4s_metrics::results::write_file_atomic(path, bytes).map_err(|source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(
            slug("One-way delay over time of 'prague' (ms per snapshot interval) — dumbbell-dualpi2, seed 1"),
            "one-way-delay-over-time-prague"
        );
        assert_eq!(
            slug("CCDF of one-way delay per flow (ms), log scale — x, seed 1"),
            "ccdf-one-way-delay-per-flow-log-scale"
        );
        assert_eq!(
            slug("AQM congestion probability over time (DualPI2 p′, PIE p; fraction) — x"),
            "aqm-congestion-probability-over-time"
        );
        assert_eq!(
            slug("Queue sojourn over time at 'a (b)' (ms) — x"),
            "queue-sojourn-over-time-a-b"
        );
        assert_eq!(slug("(ms) — x, seed 1"), "chart");
        assert_eq!(slug("(ééé)"), "chart");
        assert!(slug(&"word ".repeat(100)).len() <= 80);
        assert_eq!(
            file_names(["A", "A"].into_iter()),
            ["01-a.png".to_string(), "02-a.png".to_string()]
        );
        assert_eq!(file_names(vec!["x"; 100].into_iter())[99], "100-x.png");
    }

    #[test]
    fn standalone_svg_adds_xmlns_and_style_only() {
        let inline = "<svg class=\"chart\" viewBox=\"0 0 960 300\" aria-label=\"a &gt; b\"><title>t</title></svg>";
        let s = standalone_svg(inline);
        assert!(s.starts_with(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" viewBox=\"0 0 960 300\" aria-label=\"a &gt; b\"><style>svg text{"
        ));
        assert!(s.ends_with("</style><title>t</title></svg>"));
        assert!(!inline.contains("xmlns"));
    }
}
