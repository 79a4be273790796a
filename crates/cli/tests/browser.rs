//! A real browser opens report.html from disk with the network blocked: no console
//! messages, every chart drew data. A screenshot is kept as an artifact in
//! target/test-artifacts/report.png.

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
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "Chromium (Debian package chromium) is required in CI"
        );
        eprintln!("warning: chromium not installed; skipping report_renders_in_a_real_browser");
        return;
    };
    let d = std::env::temp_dir().join(format!("l4s-browser-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("s.toml"), SCENARIO).unwrap();
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
    let report = out.join("report.html");
    assert!(report.is_file());
    let url = format!("file://{}", report.display());
    let artifacts = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("report.png");
    let _ = std::fs::remove_file(&shot);
    // No network: every host resolves to nothing and any proxy use fails.
    let common = |c: &mut Command| {
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", d.join("profile").display()))
        .arg("--host-resolver-rules=MAP * ~NOTFOUND")
        .arg("--proxy-server=127.0.0.1:9");
    };
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
