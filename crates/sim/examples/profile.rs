//! Simulate one scenario with no outputs, for profilers (`valgrind --tool=callgrind`,
//! `perf record`): `cargo run --release -p l4s-sim --example profile -- FILE [SECONDS]`.

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(file) = args.next() else {
        eprintln!("usage: profile SCENARIO.toml [SECONDS]");
        std::process::exit(2);
    };
    let sc = l4s_scenario::load_file(std::path::Path::new(&file)).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    let duration = args
        .next()
        .map(|s| l4s_core::Dur::from_secs(s.parse().expect("SECONDS: a whole number")));
    let opts = l4s_sim::RunOptions {
        duration,
        ..Default::default()
    };
    match l4s_sim::run(sc, opts, &mut |_| {}) {
        Ok((_, st)) => println!("{} events, {} bottleneck packets", st.events, st.bottleneck_packets),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1)
        }
    }
}
