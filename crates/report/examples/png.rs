//! `cargo run -p l4s-report --example png -- DIR [OUT_DIR] [SCALE]` writes one PNG per chart
//! of DIR's report into OUT_DIR (default DIR/png) at SCALE (default 2.0).

use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first().map(PathBuf::from) else {
        eprintln!("usage: png DIR [OUT_DIR] [SCALE]");
        std::process::exit(2);
    };
    let out = args.get(1).map(PathBuf::from).unwrap_or_else(|| dir.join("png"));
    let scale = match args.get(2).map(|s| s.parse::<f32>()) {
        None => l4s_report::DEFAULT_PNG_SCALE,
        Some(Ok(s)) => s,
        Some(Err(e)) => {
            eprintln!("error: SCALE: {e}");
            std::process::exit(2);
        }
    };
    let t = Instant::now();
    match l4s_report::write_pngs(&dir, &out, scale) {
        Ok(paths) => {
            for p in &paths {
                println!("{}", p.display());
            }
            eprintln!("{} PNGs in {:.2} s", paths.len(), t.elapsed().as_secs_f64());
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
