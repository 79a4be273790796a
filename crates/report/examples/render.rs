//! `cargo run -p l4s-report --example render -- DIR` writes DIR/report.html;
//! with several directories it prints the text comparison and writes compare.html here.

use std::path::PathBuf;

fn main() {
    let dirs: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let result = if dirs.len() == 1 {
        l4s_report::write_report(&dirs[0]).map(|p| println!("wrote {}", p.display()))
    } else {
        l4s_report::compare_table(&dirs).and_then(|t| {
            print!("{t}");
            let html = l4s_report::render_compare(&dirs)?;
            std::fs::write("compare.html", html).map_err(|source| l4s_report::ReportError::Io {
                path: "compare.html".into(),
                source,
            })?;
            println!("wrote compare.html");
            Ok(())
        })
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
