//! A real browser opens report.html and campaign.html from disk with the network blocked:
//! no console messages, every chart drew data, and (campaign.html) nothing is wider than
//! the page at 1000 px. Screenshots are kept as artifacts in target/test-artifacts/
//! (report.png, campaign.png).

use std::path::PathBuf;
use std::process::Command;

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"].into_iter().find(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    })
}

/// The browser, or `None` (the test is skipped with a warning) where none is installed;
/// CI must have one.
fn browser_for(test: &str) -> Option<&'static str> {
    let b = chromium();
    if b.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "Chromium (Debian package chromium) is required in CI"
        );
        eprintln!("warning: chromium not installed; skipping {test}");
    }
    b
}

/// Headless, logging the console to stderr, with its profile in `dir` and no network:
/// every host resolves to nothing and any proxy use fails.
fn headless(c: &mut Command, dir: &std::path::Path) {
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", dir.join("profile").display()))
    .arg("--host-resolver-rules=MAP * ~NOTFOUND")
    .arg("--proxy-server=127.0.0.1:9");
}

/// A fresh directory named `tag` under the temporary directory with `scenario` in it as
/// `s.toml`, run by `l4s run -q` into `res/`: (the directory, the results).
fn run_scenario(tag: &str, scenario: &str) -> (PathBuf, PathBuf) {
    let d = std::env::temp_dir().join(format!("{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("s.toml"), scenario).unwrap();
    let out = d.join("res");
    let o = Command::new(env!("CARGO_BIN_EXE_l4s"))
        .arg("run")
        .arg(d.join("s.toml"))
        .arg("--out")
        .arg(&out)
        .arg("-q")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (d, out)
}

const SCENARIO: &str = r#"[scenario]
name = "browser"
duration = "6s"
warmup = "1s"

[topology]
type = "dumbbell"
rate = "20Mbit"
rtt = "20ms"
aqm = { kind = "dualpi2" }

[[flows]]
name = "prague"
type = "tcp"
cc = "prague"

[[flows]]
name = "cubic <b>&amp;</b>"
type = "tcp"
cc = "cubic"
ecn = "classic"

[[flows]]
name = "probe"
type = "probe"
ecn = "ect1"
"#;

#[test]
fn report_renders_in_a_real_browser() {
    let Some(browser) = browser_for("report_renders_in_a_real_browser") else {
        return;
    };
    let (d, out) = run_scenario("l4s-browser", SCENARIO);
    let report = out.join("report.html");
    assert!(report.is_file());
    let url = format!("file://{}", report.display());
    let artifacts = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("report.png");
    let _ = std::fs::remove_file(&shot);
    let common = |c: &mut Command| headless(c, &d);
    let mut c = Command::new(browser);
    common(&mut c);
    let dom = c.arg("--dump-dom").arg(&url).output().unwrap();
    assert!(dom.status.success(), "{}", String::from_utf8_lossy(&dom.stderr));
    let log = String::from_utf8_lossy(&dom.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    let html = String::from_utf8_lossy(&dom.stdout);
    // Every chart has drawn content.
    let svgs: Vec<&str> = html
        .split("<svg")
        .skip(1)
        .map(|s| s.split("</svg>").next().unwrap_or(""))
        .collect();
    assert!(svgs.len() >= 8, "only {} charts", svgs.len());
    for (i, s) in svgs.iter().enumerate() {
        let drawn = s.contains("<path") || s.contains("<polyline") || s.contains("<polygon") || s.contains("<rect");
        assert!(drawn, "chart {i} has no drawn content");
    }
    // The flow name with markup shows as text, not markup.
    assert!(
        html.contains("cubic &lt;b&gt;&amp;amp;&lt;/b&gt;"),
        "flow name not escaped"
    );
    assert!(html.contains("L4S working") || html.contains("Verdict"));
    let mut c = Command::new(browser);
    common(&mut c);
    let s = c
        .arg("--window-size=1300,4000")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .unwrap();
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.len() > 50_000 && png.starts_with(b"\x89PNG"),
        "screenshot of {} bytes",
        png.len()
    );
    let _ = std::fs::remove_dir_all(&d);
}

const CAMPAIGN_SCENARIO: &str = r#"[scenario]
name = "browser-campaign"
duration = "3s"
warmup = "1s"

[topology]
type = "dumbbell"
rate = "20Mbit"
rtt = "20ms"
aqm = { kind = "dualpi2" }

[[flows]]
name = "bulk <b>&amp;</b>"
type = "tcp"
cc = "prague"

[[flows]]
name = "probe"
type = "probe"
ecn = "ect1"

[[variants]]
name = "l4s"

[[variants]]
name = "classic"
set = { "flows.bulk <b>&amp;</b>.cc" = "cubic", "flows.probe.ecn" = "not-ect" }
"#;

const CAMPAIGN: &str = r#"[campaign]
name = "browser"
scenario = "s.toml"
baseline = "classic"
seeds = 2

[sweep]
"topology.rate" = ["10Mbit", "20Mbit"]
"topology.aqm" = [{ kind = "dualpi2" }, { kind = "dualpi2", step_mode = "l4steam" }]

[sample]
count = 10
seed = 1
params = { "topology.rtt" = { uniform = ["5ms", "40ms"] } }

[[groups]]
name = "evening"

[[groups]]
name = "night"
"#;

/// Measures the page as laid out at 1000 px: the page does not scroll sideways, no table is
/// wider than the text column, and every chart's text lies inside its chart. Added to a
/// copy of the page only (the page itself has no script).
const LAYOUT_PROBE: &str = r#"<script>
const out = [];
const root = document.documentElement;
if (root.scrollWidth > window.innerWidth + 1) out.push("page " + root.scrollWidth + " px wide at " + window.innerWidth);
const column = document.body.getBoundingClientRect().right - parseFloat(getComputedStyle(document.body).paddingRight);
document.querySelectorAll("table").forEach((t, i) => {
  const r = t.getBoundingClientRect().right;
  if (r > column + 1) out.push("table " + i + " ends at " + r + " px, the column at " + column);
});
document.querySelectorAll("svg").forEach((s, i) => {
  const b = s.getBoundingClientRect();
  if (b.height < 50) out.push("chart " + i + " is " + b.height + " px high");
  s.querySelectorAll("text").forEach(t => {
    const r = t.getBoundingClientRect();
    if (r.width > 0 && (r.left < b.left - 1 || r.right > b.right + 1 || r.top < b.top - 1 || r.bottom > b.bottom + 1))
      out.push("chart " + i + ": text '" + t.textContent + "' leaves the chart");
  });
});
const p = document.createElement("pre");
p.id = "layout";
p.textContent = "LAYOUT[" + out.join(" | ") + "]";
document.body.appendChild(p);
</script>"#;

#[test]
fn campaign_page_renders_in_a_real_browser() {
    let Some(browser) = browser_for("campaign_page_renders_in_a_real_browser") else {
        return;
    };
    let d = std::env::temp_dir().join(format!("l4s-browser-campaign-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("s.toml"), CAMPAIGN_SCENARIO).unwrap();
    std::fs::write(d.join("c.toml"), CAMPAIGN).unwrap();
    let store = d.join("store");
    let o = Command::new(env!("CARGO_BIN_EXE_l4s"))
        .args(["campaign", "run"])
        .arg(d.join("c.toml"))
        .arg("--out")
        .arg(&store)
        .args(["-j", "2"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = store.join("campaign.html");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(&format!("report: {}", page.display())),
        "the run says where the page is: {stdout}"
    );
    // `l4s campaign report` makes it again, with the PNGs.
    let o = Command::new(env!("CARGO_BIN_EXE_l4s"))
        .args(["campaign", "report", "--png"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with(&page.display().to_string()));
    assert!(store.join("png").read_dir().unwrap().count() >= 8);

    let artifacts = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("campaign.png");
    let _ = std::fs::remove_file(&shot);
    let common = |c: &mut Command| headless(c, &d);
    let url = format!("file://{}", page.display());
    let mut c = Command::new(browser);
    common(&mut c);
    let dom = c.arg("--dump-dom").arg(&url).output().unwrap();
    assert!(dom.status.success(), "{}", String::from_utf8_lossy(&dom.stderr));
    let log = String::from_utf8_lossy(&dom.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    let html = String::from_utf8_lossy(&dom.stdout);
    // Every chart has drawn content: ECDFs of 2 metrics, and each metric against 3
    // parameters.
    let svgs: Vec<&str> = html
        .split("<svg")
        .skip(1)
        .map(|s| s.split("</svg>").next().unwrap_or(""))
        .collect();
    assert_eq!(svgs.len(), 2 + 2 * 3, "charts");
    for (i, s) in svgs.iter().enumerate() {
        assert!(s.contains("<polyline"), "chart {i} has no line");
    }
    assert!(
        html.contains("bulk &lt;b&gt;&amp;amp;&lt;/b&gt;"),
        "flow name not escaped"
    );
    assert!(!html.contains("bulk <b>"), "flow name not escaped");
    for g in ["evening", "night"] {
        assert!(html.contains(&format!("Group {g}:")), "verdict of group {g}");
    }
    assert!(html.contains("Summary statistics") && html.contains("topology.aqm"));

    // Laid out at 1000 px: nothing sticks out.
    let found = layout_problems(browser, &common, &page, &d);
    assert!(found.is_empty(), "layout: {found}");

    let mut c = Command::new(browser);
    common(&mut c);
    let s = c
        .arg("--window-size=1000,4000")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .unwrap();
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.len() > 50_000 && png.starts_with(b"\x89PNG"),
        "screenshot of {} bytes",
        png.len()
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// What [`LAYOUT_PROBE`] finds wrong with `page` laid out in a 1000 px window (empty if
/// nothing): the probe runs in a copy of the page in `dir`.
fn layout_problems(
    browser: &str,
    common: &dyn Fn(&mut Command),
    page: &std::path::Path,
    dir: &std::path::Path,
) -> String {
    let probe = dir.join("probe.html");
    let text = std::fs::read_to_string(page).unwrap();
    std::fs::write(&probe, text.replace("</body>", &format!("{LAYOUT_PROBE}</body>"))).unwrap();
    let mut c = Command::new(browser);
    common(&mut c);
    let dom = c
        .arg("--window-size=1000,3000")
        .arg("--dump-dom")
        .arg(format!("file://{}", probe.display()))
        .output()
        .unwrap();
    assert!(dom.status.success(), "{}", String::from_utf8_lossy(&dom.stderr));
    let html = String::from_utf8_lossy(&dom.stdout);
    let marker = "<pre id=\"layout\">LAYOUT[";
    let start = html.find(marker).expect("the layout probe ran") + marker.len();
    html[start..start + html[start..].find(']').unwrap()].to_string()
}

/// A scenario with six flows of long names, as two variants: its report and the
/// comparison page fit a 1000 px window (no table wider than the text column, no chart
/// title or label outside its chart).
const WIDE_SCENARIO: &str = r#"[scenario]
name = "browser-wide-names-for-the-layout-test"
duration = "4s"
warmup = "1s"

[topology]
type = "dumbbell"
rate = "30Mbit"
rtt = "20ms"
aqm = { kind = "dualpi2" }

[[flows]]
name = "prague-bulk-download-with-a-long-name"
type = "tcp"
cc = "prague"

[[flows]]
name = "cubic-bulk-download-with-a-long-name"
type = "tcp"
cc = "cubic"

[[flows]]
name = "video-call-from-the-living-room"
type = "media"
profile = "video-call"

[[flows]]
name = "web-browsing-of-the-household"
type = "web"
cc = "cubic"
app = { objects = 10, object_size = "20kB", repeat = "1s" }

[[flows]]
name = "probe-l4s-measuring-latency"
type = "probe"
ecn = "ect1"

[[flows]]
name = "probe-classic-measuring-latency"
type = "probe"

[[variants]]
name = "l4s"

[[variants]]
name = "classic-with-a-long-variant-name"
set = { "topology.aqm" = { kind = "fifo", limit = 300 } }
"#;

#[test]
fn report_and_compare_pages_fit_a_1000_px_window() {
    let Some(browser) = browser_for("report_and_compare_pages_fit_a_1000_px_window") else {
        return;
    };
    let (d, out) = run_scenario("l4s-browser-wide", WIDE_SCENARIO);
    let common = |c: &mut Command| headless(c, &d);
    for page in [out.join("l4s").join("report.html"), out.join("compare.html")] {
        assert!(page.is_file(), "{}", page.display());
        let found = layout_problems(browser, &common, &page, &d);
        assert!(found.is_empty(), "{}: {found}", page.display());
    }
    let _ = std::fs::remove_dir_all(&d);
}
