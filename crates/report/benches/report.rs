//! Benchmark (not a test): synthetic 10-minute, 6-flow results directories, with 100 ms
//! snapshots (6 000 rows per flow) and with 10 ms snapshots (60 000 rows per flow, which
//! the charts reduce to the pixel grid). Prints render time and report size; the goals are
//! < 1 s and < 5 MB.

use std::time::Instant;

fn case(interval_s: f64) {
    let dir = std::env::temp_dir().join(format!("l4s-report-bench-{}-{}", std::process::id(), interval_s));
    let s = l4s_report::synth::summary_with_flows(6, 600.0, &|i| format!("flow-{i}"));
    l4s_report::synth::write_results_dir(&dir, &s, interval_s, 1).expect("write synthetic results");
    let mut times = Vec::new();
    let mut size = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let html = l4s_report::render_report(&dir).expect("render");
        times.push(t.elapsed().as_secs_f64());
        size = html.len();
    }
    let t = Instant::now();
    l4s_report::write_report(&dir).expect("write");
    let wt = t.elapsed().as_secs_f64();
    times.sort_by(f64::total_cmp);
    let rows = (600.0 / interval_s).round() as u64;
    println!(
        "report: 10 min, 6 flows, {:.0} ms snapshots ({} rows per flow): render median {:.1} ms (min {:.1}, max {:.1}), \
         write_report {:.1} ms, size {:.2} MB ({} bytes){}",
        interval_s * 1e3,
        rows,
        times[2] * 1e3,
        times[0] * 1e3,
        times[4] * 1e3,
        wt * 1e3,
        size as f64 / 1e6,
        size,
        if times[2] < 1.0 && size < 5_000_000 { "" } else { "  ** over budget (1 s, 5 MB) **" }
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    case(0.1);
    case(0.01);
}
