//! PNG export: one PNG per chart of the HTML report, of the right size, not blank, with
//! stable names and bytes; no panic on results directories that lack optional files.

mod common;
use common::tmpdir;
use l4s_report::synth;
use l4s_report::{render_report, write_pngs, ReportError, DEFAULT_PNG_SCALE};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];

/// The opening tags of the report's charts, in page order.
fn svg_tags(html: &str) -> Vec<&str> {
    html.split("<svg").skip(1).map(|s| &s[..s.find('>').unwrap()]).collect()
}

fn attr(tag: &str, name: &str) -> f64 {
    let key = format!(" {name}=\"");
    let a = tag.find(&key).unwrap_or_else(|| panic!("no {name} in {tag}")) + key.len();
    tag[a..a + tag[a..].find('"').unwrap()].parse().unwrap()
}

/// (width, height) from the IHDR chunk, which must come first.
fn ihdr(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], &SIGNATURE, "PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

/// Decoded RGBA pixels, width and height.
fn decode(bytes: &[u8]) -> (Vec<[u8; 4]>, u32, u32) {
    let mut reader = png::Decoder::new(bytes).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgba);
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let px = buf[..info.buffer_size()]
        .chunks_exact(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect();
    (px, info.width, info.height)
}

fn names(paths: &[PathBuf]) -> Vec<String> {
    paths
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// Check every PNG against the chart it comes from: count, names, size, content.
fn check(dir: &Path, out: &Path, scale: f32) -> Vec<PathBuf> {
    let html = render_report(dir).unwrap();
    let tags = svg_tags(&html);
    let paths = write_pngs(dir, out, scale).unwrap();
    assert_eq!(paths.len(), tags.len(), "one PNG per chart of the report");
    let ns = names(&paths);
    assert_eq!(
        ns.iter().collect::<BTreeSet<_>>().len(),
        ns.len(),
        "unique names: {ns:?}"
    );
    let mut on_disk: Vec<String> = fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    assert_eq!(on_disk, ns, "exactly these files, no temporary left");
    for (i, (path, tag)) in paths.iter().zip(&tags).enumerate() {
        let name = &ns[i];
        assert!(
            name.starts_with(&format!("{:02}-", i + 1)) && name.ends_with(".png"),
            "{name}"
        );
        let slug = &name[3..name.len() - 4];
        assert!(
            !slug.is_empty()
                && slug
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{name}"
        );
        assert_eq!(path.parent().unwrap(), out);
        let bytes = fs::read(path).unwrap();
        let (w, h) = ihdr(&bytes);
        let (sw, sh) = (attr(tag, "width"), attr(tag, "height"));
        assert_eq!(
            w,
            (sw * scale as f64).round() as u32,
            "{name}: width = svg width × scale"
        );
        assert_eq!(
            h,
            (sh * scale as f64).round() as u32,
            "{name}: height = svg height × scale"
        );
        let (px, dw, dh) = decode(&bytes);
        assert_eq!((dw, dh), (w, h));
        assert_eq!(px.len(), (w * h) as usize);
        assert!(px.iter().all(|p| p[3] == 255), "{name}: opaque (white background)");
        let colours: BTreeSet<[u8; 4]> = px.iter().copied().collect();
        assert!(colours.len() > 16, "{name}: only {} distinct colours", colours.len());
        let ink = px.iter().filter(|p| p[..3] != [255, 255, 255]).count();
        assert!(ink * 100 > px.len(), "{name}: {ink} of {} pixels drawn", px.len());
        // Styled as on the page: an unstyled chart fills the warm-up shade and legend black.
        let black = px.iter().filter(|p| p[..3].iter().all(|c| *c < 40)).count();
        assert!(black * 50 < px.len(), "{name}: {black} of {} pixels black", px.len());
        // The title (13 px bold #333 at y = 18) is drawn, so fonts were found: dark pixels in
        // the top 24 SVG px, right of the left margin.
        let top = (24.0 * scale) as u32;
        let dark = (0..top)
            .flat_map(|y| (0..w).map(move |x| (x, y)))
            .filter(|&(x, y)| {
                let p = px[(y * w + x) as usize];
                x as f32 >= 70.0 * scale && p[0] < 110 && p[1] < 110 && p[2] < 110
            })
            .count();
        assert!(
            dark as f32 > 200.0 * scale * scale,
            "{name}: title text missing ({dark} dark pixels)"
        );
    }
    paths
}

#[test]
fn one_png_per_chart_sized_by_scale_and_not_blank() {
    let dir_guard = tmpdir("full");
    let dir = dir_guard.path();
    synth::write_results_dir(dir, &synth::healthy_dualpi2(), 0.1, 3).unwrap();
    let paths = check(dir, &dir.join("png"), DEFAULT_PNG_SCALE);
    assert_eq!(paths.len(), 16);
    assert_eq!(DEFAULT_PNG_SCALE, 2.0);
    let ns = names(&paths);
    assert_eq!(
        ns[0],
        "01-latency-under-load-throughput-and-one-way-delay-every-flow.png"
    );
    assert_eq!(ns[1], "02-one-way-delay-over-time-prague.png");
    assert_eq!(ns[5], "06-cdf-one-way-delay-per-flow.png");
    assert_eq!(ns[15], "16-smoothed-rtt-over-time.png");
    // A 960 px chart is 1920 px wide at the default scale, 960 px at 1, 480 px at 0.5.
    assert_eq!(ihdr(&fs::read(&paths[0]).unwrap()).0, 1920);
    for (scale, width) in [(1.0, 960), (0.5, 480)] {
        let out = dir.join(format!("png-{scale}"));
        let p = check(dir, &out, scale);
        assert_eq!(names(&p), ns, "names do not depend on the scale");
        assert_eq!(ihdr(&fs::read(&p[0]).unwrap()).0, width);
    }
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn names_and_bytes_are_stable_across_runs() {
    let dir_guard = tmpdir("stable");
    let dir = dir_guard.path();
    synth::write_results_dir(dir, &synth::healthy_dualpi2(), 0.1, 3).unwrap();
    let a = write_pngs(dir, &dir.join("a"), 2.0).unwrap();
    let b = write_pngs(dir, &dir.join("b"), 2.0).unwrap();
    assert_eq!(names(&a), names(&b));
    for (x, y) in a.iter().zip(&b) {
        assert!(fs::read(x).unwrap() == fs::read(y).unwrap(), "{} differs", x.display());
    }
    // Writing again into the same directory replaces the files with the same bytes.
    let first: Vec<Vec<u8>> = a.iter().map(|p| fs::read(p).unwrap()).collect();
    let again = write_pngs(dir, &dir.join("a"), 2.0).unwrap();
    assert_eq!(again, a);
    assert_eq!(fs::read_dir(dir.join("a")).unwrap().count(), a.len());
    for (p, bytes) in again.iter().zip(&first) {
        assert!(&fs::read(p).unwrap() == bytes);
    }
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn missing_optional_files_and_bad_arguments_do_not_panic() {
    let dir_guard = tmpdir("partial");
    let dir = dir_guard.path();
    let s = synth::healthy_dualpi2();
    // Summary only: the three distribution charts from the summary's percentiles.
    fs::write(dir.join("summary.json"), serde_json::to_vec(&s).unwrap()).unwrap();
    assert_eq!(check(dir, &dir.join("png-summary"), 1.0).len(), 3);
    // Today's simulator's flow snapshots (owd_max_ms only), no queue snapshots, no distributions.
    fs::write(dir.join("snapshots-flows.csv"), "time_s,flow,throughput_bps,packets,ce_fraction,owd_max_ms,cwnd_bytes,srtt_ms\n0.100,prague,14292160,118,0.000000,10.571,115840,20.458\n0.100,cubic,11869760,98,0.000000,13.653,115840,20.463\n0.200,prague,83936160,693,0.906205,18.226,263536,25.867\n0.200,cubic,15018880,124,0.000000,83.964,324352,72.304\n").unwrap();
    let n = check(dir, &dir.join("png-flows"), 1.0).len();
    assert!(n > 3, "{n}");
    // Flow snapshots with a header only.
    fs::write(dir.join("snapshots-flows.csv"), "time_s,flow,owd_max_ms\n").unwrap();
    check(dir, &dir.join("png-empty"), 1.0);

    // Not a results directory: the report's error, and nothing written.
    let empty_guard = tmpdir("not-results");
    let empty = empty_guard.path();
    let out = empty.join("png");
    assert!(matches!(
        write_pngs(empty, &out, 2.0),
        Err(ReportError::MissingSummary { .. })
    ));
    assert!(!out.exists());
    // Scales that make no sense or a picture too large: an error naming the problem.
    for scale in [0.0, -1.0, f32::NAN, f32::INFINITY, 100.0] {
        match write_pngs(dir, &dir.join("png-bad"), scale) {
            Err(e @ ReportError::Png { .. }) => assert!(e.to_string().contains("scale"), "{e}"),
            other => panic!("scale {scale}: {other:?}"),
        }
    }
    fs::remove_dir_all(dir).unwrap();
    fs::remove_dir_all(empty).unwrap();
}
