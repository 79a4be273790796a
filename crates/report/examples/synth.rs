//! `cargo run -p l4s-report --example synth -- DIR [FLOWS] [SECONDS] [INTERVAL_S]` writes a
//! synthetic results directory (all columns, distributions.csv) and its report.html.

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = a.first() else {
        eprintln!("usage: synth DIR [FLOWS] [SECONDS] [INTERVAL_S]");
        std::process::exit(2);
    };
    let flows = a.get(1).and_then(|v| v.parse().ok()).unwrap_or(4);
    let secs = a.get(2).and_then(|v| v.parse().ok()).unwrap_or(60.0);
    let iv = a.get(3).and_then(|v| v.parse().ok()).unwrap_or(0.1);
    let s = l4s_report::synth::summary_with_flows(flows, secs, &|i| {
        format!("{}-{}", if i % 2 == 0 { "prague" } else { "cubic" }, i / 2)
    });
    let dir = std::path::Path::new(dir);
    if let Err(e) = l4s_report::synth::write_results_dir(dir, &s, iv, 1) {
        eprintln!("error: {}: {e}", dir.display());
        std::process::exit(1);
    }
    match l4s_report::write_report(dir) {
        Ok(p) => println!("wrote {}", p.display()),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
