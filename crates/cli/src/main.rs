//! `l4s`: run an L4S scenario and write its results.
//!
//! Exit status: 0 on success, 2 when the scenario or the command line is wrong (nothing
//! is run and no results directory is left behind), 1 when the run itself fails.

use clap::{Parser, Subcommand};
use l4s_core::units::parse_dur;
use l4s_core::Dur;
use l4s_metrics::results::ResultsDir;
use l4s_metrics::table::summary_tables;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "l4s",
    version,
    about = "l4s-lab: simulate and measure L4S (RFC 9330/9331/9332) networks"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario (in the simulator, or live with --backend live), print a summary and
    /// write a results directory.
    Run(RunArgs),
    /// The userspace L4S bottleneck between two existing interfaces, both directions
    /// (needs root; see docs/live.md).
    Router(l4s_fwd::cli::RouterArgs),
    /// Remove the network namespaces and interfaces that killed live runs left behind
    /// (names starting with l4s-); runs still going are kept unless --force; needs root.
    Cleanup {
        /// Only this run's (the 8-hex-digit id printed by the run), instead of every run's.
        #[arg(long)]
        run: Option<String>,
        /// Also remove the namespaces of runs that are still going (their process holds
        /// /run/l4s-lab/ID.lock): they lose their testbed.
        #[arg(long)]
        force: bool,
    },
    /// Rebuild DIR/report.html from a results directory alone.
    Report {
        /// Results directory (holds summary.json)
        dir: PathBuf,
        /// Also export every chart as a PNG into DIR/png (for papers).
        #[arg(long)]
        png: bool,
    },
    /// Put several runs side by side: a difference table here and an HTML page with
    /// overlaid distributions.
    Compare {
        /// Results directories; differences are relative to the first
        #[arg(required = true, num_args = 2..)]
        dirs: Vec<PathBuf>,
        /// Where to write the comparison page
        #[arg(long, default_value = "compare.html")]
        out: PathBuf,
    },
    /// Check a scenario file without running it.
    Check {
        /// Scenario file (TOML)
        scenario: PathBuf,
    },
    /// Answer `l4s ecn-check` probes: a UDP reflector that reports the ECN codepoint each
    /// probe arrived with and replies with the codepoint the probe was sent with. Never an
    /// amplifier (a reply is no larger than its request; per-source rate limit). Stops on
    /// Ctrl-C or SIGTERM.
    Reflect {
        /// Address and UDP port to listen on ([::]:PORT listens on IPv4 and IPv6).
        #[arg(long, default_value = "[::]:4739")]
        listen: std::net::SocketAddr,
        /// Replies per second per source address.
        #[arg(long, default_value_t = 100.0, value_parser = parse_positive_f64)]
        rate: f64,
        /// Burst of replies a source may get at once.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
        burst: u32,
        /// Print a line per answered source (at most one a second each).
        #[arg(long, short)]
        verbose: bool,
    },
    /// Check whether ECT(1) (L4S) and CE survive the path to an `l4s reflect` and back:
    /// probes marked Not-ECT, ECT(0), ECT(1) and CE; per direction the verdict says
    /// whether ECT(1) survives, is bleached or remarked, and whether CE is seen.
    /// Exit status 0 if ECT(1) survives both ways, 1 if not (or no reply), 2 on bad input.
    EcnCheck {
        /// HOST[:PORT] of the reflector (default port 4739); IPv6 as [ADDR]:PORT.
        target: String,
        /// Probes per codepoint.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        probes: u32,
        /// Probe size in bytes (UDP payload).
        #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(20..=1472))]
        size: u16,
        /// How long to wait for replies after the last probe, e.g. 2s.
        #[arg(long, default_value = "1s", value_parser = parse_duration_arg)]
        wait: Dur,
    },
}

fn parse_positive_f64(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("expected a number above zero, found `{s}`")),
    }
}

/// A flag that SIGINT and SIGTERM set (the command then stops cleanly).
fn stop_flag() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Registration fails only for forbidden signals; these two are allowed.
        let _ = signal_hook::flag::register(sig, flag.clone());
    }
    flag
}

fn reflect(listen: std::net::SocketAddr, rate: f64, burst: u32, verbose: bool) -> ExitCode {
    let sock = match l4s_live::udp::EcnUdpSocket::bind(listen) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot listen on {listen}: {e}");
            return ExitCode::from(2);
        }
    };
    let stop = stop_flag();
    let cfg = l4s_live::ecncheck::ReflectorConfig {
        rate_per_source: rate,
        burst,
        ..Default::default()
    };
    println!(
        "reflecting ECN probes on {} (at most {rate} replies/s per source); Ctrl-C stops",
        sock.local_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| listen.to_string())
    );
    let mut last: std::collections::HashMap<std::net::IpAddr, Instant> = std::collections::HashMap::new();
    let mut log = |src: std::net::SocketAddr, st: &l4s_live::ecncheck::ReflectorStats| {
        if !verbose {
            return;
        }
        let now = Instant::now();
        if last
            .get(&src.ip())
            .is_none_or(|t| now.duration_since(*t).as_secs() >= 1)
        {
            if last.len() > 10_000 {
                last.clear();
            }
            last.insert(src.ip(), now);
            println!("probe from {src} ({} replies so far)", st.replies);
        }
    };
    match l4s_live::ecncheck::serve(&sock, cfg, &stop, &mut log) {
        Ok(st) => {
            println!(
                "stopped: {} replies, {} malformed datagrams ignored, {} rate-limited, {} send errors",
                st.replies, st.malformed, st.rate_limited, st.send_errors
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: reflector on {listen}: {e}");
            ExitCode::from(1)
        }
    }
}

fn ecn_check(target: &str, probes: u32, size: u16, wait: Dur) -> ExitCode {
    let addr = match l4s_live::ecncheck::resolve(target) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let cfg = l4s_live::ecncheck::CheckConfig {
        probes,
        size: size as usize,
        wait: std::time::Duration::from_nanos(wait.as_nanos()),
        ..Default::default()
    };
    match l4s_live::ecncheck::check(addr, cfg) {
        Ok(r) => {
            print!("{r}");
            if r.l4s_ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

#[derive(clap::Args)]
struct RunArgs {
    /// Scenario file (TOML), e.g. scenarios/dumbbell-dualpi2.toml
    scenario: PathBuf,
    /// Results directory (default: results/<scenario name>). An earlier l4s-lab
    /// results directory there is replaced; any other existing path is refused.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Random seed (overrides the scenario's `seed`).
    #[arg(long)]
    seed: Option<u64>,
    /// Simulated duration (overrides the scenario's `duration`), e.g. 10s.
    #[arg(long, value_parser = parse_duration_arg)]
    duration: Option<Dur>,
    /// Print only the results path.
    #[arg(long, short)]
    quiet: bool,
    /// Interval of the time-series snapshots written beside summary.json
    /// (snapshots-flows.csv, snapshots-queues.csv); 0 turns them off.
    #[arg(long, default_value = "100ms", value_parser = parse_interval_arg)]
    snapshot_interval: Dur,
    /// Write the bottleneck's egress as bottleneck.pcap (Wireshark/tshark).
    #[arg(long)]
    pcap: bool,
    /// IPv6: addresses in the pcap (sim, with --pcap), or flows over IPv6 (live).
    #[arg(long)]
    ipv6: bool,
    /// Where the scenario runs: `sim` (the deterministic simulator) or `live` (real
    /// packets in network namespaces through the userspace bottleneck; needs root).
    #[arg(long, value_enum, default_value = "sim")]
    backend: Backend,
    /// Live runs: the run id (8 lowercase hex digits) that names the testbed's namespaces
    /// (l4s-ID-...), for `l4s cleanup --run ID`; default a fresh one, printed at the start.
    #[arg(long, requires = "backend")]
    run_id: Option<String>,
    /// Write one row per data packet to packets.parquet: send and arrival times, ECN
    /// sent and received, and each queue crossed (sub-queue, sojourn, AQM decision).
    #[arg(long)]
    packets: bool,
    /// Also export every chart of the report as a PNG into DIR/png (for papers).
    #[arg(long)]
    png: bool,
    /// Run only this variant of a scenario with [[variants]] (repeatable; in file order),
    /// e.g. the ones a live host can run.
    #[arg(long = "variant", value_name = "NAME")]
    variants: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Backend {
    Sim,
    Live,
}

/// A snapshot interval: a duration, or `0` / `off` for none.
fn parse_interval_arg(s: &str) -> Result<Dur, String> {
    match s.trim() {
        "0" | "off" | "none" => Ok(Dur::ZERO),
        other => parse_dur(other),
    }
}

fn parse_duration_arg(s: &str) -> Result<Dur, String> {
    let d = parse_dur(s)?;
    if d.is_zero() {
        return Err("expected a duration above zero".into());
    }
    Ok(d)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Report { dir, png } => {
            let r = l4s_report::write_report(&dir).and_then(|p| {
                println!("{}", p.display());
                if png {
                    let files = l4s_report::write_pngs(&dir, &dir.join("png"), l4s_report::DEFAULT_PNG_SCALE)?;
                    println!("{} charts as PNG in {}", files.len(), dir.join("png").display());
                }
                Ok(())
            });
            match r {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Cmd::Compare { dirs, out } => compare(&dirs, &out),
        Cmd::Check { scenario } => match l4s_scenario::load_variants(&scenario) {
            Ok(v) => {
                for (name, s) in &v {
                    println!(
                        "{}{}: ok ({} nodes, {} links, {} flows, {} simulated)",
                        scenario.display(),
                        name.as_ref().map(|n| format!(" [variant {n}]")).unwrap_or_default(),
                        s.nodes.len(),
                        s.links.len(),
                        s.flows.len(),
                        s.duration
                    );
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
        Cmd::Run(args) => run(&args),
        Cmd::Router(args) => l4s_fwd::cli::router_main(&args),
        Cmd::Cleanup { run, force } => cleanup(run.as_deref(), force),
        Cmd::Reflect {
            listen,
            rate,
            burst,
            verbose,
        } => reflect(listen, rate, burst, verbose),
        Cmd::EcnCheck {
            target,
            probes,
            size,
            wait,
        } => ecn_check(&target, probes, size, wait),
    }
}

/// `l4s cleanup`: remove what killed live runs left behind.
fn cleanup(run: Option<&str>, force: bool) -> ExitCode {
    if !l4s_live::run::is_root() {
        eprintln!(
            "error: removing network namespaces needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN): run `sudo {}`",
            std::env::args().collect::<Vec<_>>().join(" ")
        );
        return ExitCode::from(2);
    }
    let pattern = match run {
        None => format!("{}*", l4s_fwd::netns::NS_PREFIX),
        Some(id) => match l4s_fwd::netns::RunId::parse(id) {
            Ok(id) => format!("{}*", id.prefix()),
            Err(e) => {
                eprintln!("error: --run: {e}");
                return ExitCode::from(2);
            }
        },
    };
    match l4s_fwd::netns::cleanup_all(&pattern, force) {
        Ok(r) => {
            if r.namespaces.is_empty() && r.links.is_empty() && r.kept.is_empty() {
                println!("nothing to remove");
            } else {
                for n in &r.namespaces {
                    println!("removed namespace {n}");
                }
                for l in &r.links {
                    println!("removed interface {l}");
                }
            }
            for (id, n) in &r.kept {
                println!(
                    "kept run {id} ({n} namespaces and interfaces): it is still going (a process holds {}/{id}.lock); stop it, or remove them anyway with --force",
                    l4s_fwd::netns::RUN_LOCK_DIR
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn compare(dirs: &[PathBuf], out: &Path) -> ExitCode {
    let table = match l4s_report::compare_table(dirs) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let html = match l4s_report::render_compare(dirs) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    print!("{table}");
    // Write beside, then rename: never a half-written page.
    let tmp = out.with_extension("html.tmp");
    if let Err(e) = std::fs::write(&tmp, html).and_then(|_| std::fs::rename(&tmp, out)) {
        let _ = std::fs::remove_file(&tmp);
        eprintln!("error: cannot write {}: {e}", out.display());
        return ExitCode::from(1);
    }
    println!("comparison: {}", out.display());
    ExitCode::SUCCESS
}

/// Print the verdict: a headline, then warnings that explain themselves.
fn print_verdict(v: &l4s_report::Verdict) {
    let tag = match v.level {
        l4s_report::Level::Good => "OK",
        l4s_report::Level::Warn => "WARNING",
        l4s_report::Level::Bad => "PROBLEM",
    };
    println!("{tag}: {}", v.headline);
    for w in &v.warnings {
        println!("  - [{}] {}", w.severity.as_str(), w.text);
    }
    println!();
}

fn run(a: &RunArgs) -> ExitCode {
    let path = a.scenario.as_path();
    let (out, quiet) = (a.out.clone(), a.quiet);
    let live = a.backend == Backend::Live;
    if !live && a.ipv6 && !a.pcap {
        eprintln!("error: --ipv6 applies to --pcap in the simulator (or to --backend live)");
        return ExitCode::from(2);
    }
    if live && a.pcap {
        eprintln!("error: --pcap is not available with --backend live (the forwarder's records carry no payload to write; capture on the testbed's interfaces with tcpdump instead)");
        return ExitCode::from(2);
    }
    let mut variants = match l4s_scenario::load_variants(path) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if !a.variants.is_empty() {
        let names: Vec<String> = variants.iter().filter_map(|v| v.0.clone()).collect();
        if names.is_empty() {
            eprintln!("error: --variant: {} has no [[variants]]", path.display());
            return ExitCode::from(2);
        }
        if let Some(bad) = a.variants.iter().find(|v| !names.contains(v)) {
            eprintln!(
                "error: --variant: {} has no variant {bad:?}; expected one of {}",
                path.display(),
                names.join(", ")
            );
            return ExitCode::from(2);
        }
        variants.retain(|v| v.0.as_ref().is_some_and(|n| a.variants.contains(n)));
    }
    if variants.len() == 1 && variants[0].0.is_none() {
        let sc = variants.into_iter().next().map(|v| v.1).expect("one scenario");
        return run_scenario(a, sc, out);
    }
    // Live: a variant this host cannot run (say, kernel TCP Prague missing) is refused
    // before any runs, naming the variants that can.
    if live {
        let refused: Vec<(String, String)> = variants
            .iter()
            .filter_map(|(n, sc)| {
                let e = l4s_live::run::preflight(sc).err()?;
                Some((n.clone().unwrap_or_default(), e.to_string()))
            })
            .collect();
        if !refused.is_empty() {
            for (n, e) in &refused {
                eprintln!("error: variant {n}: {e}");
            }
            let ok: Vec<String> = variants
                .iter()
                .filter_map(|(n, _)| n.clone())
                .filter(|n| refused.iter().all(|(r, _)| r != n))
                .map(|n| format!("--variant {n}"))
                .collect();
            if !ok.is_empty() {
                eprintln!("the variants that can run live here: {}", ok.join(" "));
            }
            return ExitCode::from(2);
        }
    }
    // Variants: each run goes into its own directory under the scenario's, then a
    // comparison of all of them (the first is the reference).
    let base = out.unwrap_or_else(|| PathBuf::from("results").join(&variants[0].1.name));
    if base.exists() && !base.is_dir() {
        eprintln!(
            "error: {} exists and is not a directory; choose another --out",
            base.display()
        );
        return ExitCode::from(2);
    }
    let mut dirs = Vec::new();
    for (name, sc) in variants {
        let name = name.unwrap_or_default();
        if !quiet {
            println!("\n=== variant {name} ===");
        }
        let dir = base.join(&name);
        let code = run_scenario(a, sc, Some(dir.clone()));
        if code != ExitCode::SUCCESS {
            return code;
        }
        dirs.push(dir);
    }
    if !quiet {
        println!(
            "\n=== variants side by side (differences against {}) ===",
            dirs[0].display()
        );
    }
    compare(&dirs, &base.join("compare.html"))
}

/// Run one scenario (a file, or one of its variants) and write its results directory.
fn run_scenario(a: &RunArgs, sc: l4s_scenario::Scenario, out: Option<PathBuf>) -> ExitCode {
    let path = a.scenario.as_path();
    let (seed, duration, quiet, snap) = (a.seed, a.duration, a.quiet, a.snapshot_interval);
    let (pcap, packets) = (a.pcap.then_some(a.ipv6), a.packets);
    let live = a.backend == Backend::Live;
    if live {
        // Refuse what cannot run before creating anything.
        if !l4s_live::run::is_root() {
            eprintln!("error: {}", l4s_live::run::privilege_error());
            return ExitCode::from(2);
        }
        if let Err(e) = l4s_live::run::preflight(&sc) {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    }
    let scenario_text = std::fs::read(path).unwrap_or_default();
    let out = out.unwrap_or_else(|| PathBuf::from("results").join(&sc.name));
    // Refuse a foreign output path before spending time simulating.
    let dir = match ResultsDir::create(&out) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let total = duration.unwrap_or(sc.duration);
    let tty = std::io::stderr().is_terminal() && !quiet;
    let wall = Instant::now();
    let started = std::time::SystemTime::now();
    // A progress bar on a terminal (simulated time, wall time, ETA); nothing otherwise.
    let bar = if tty {
        let b = indicatif::ProgressBar::new(total.as_nanos() / 1_000_000);
        b.set_style(
            indicatif::ProgressStyle::with_template(if live {
                "  {bar:30.cyan/blue} live {msg} of {prefix}  eta {eta}"
            } else {
                "  {bar:30.cyan/blue} simulated {msg} of {prefix}  wall {elapsed_precise}  eta {eta}"
            })
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b.set_prefix(format!("{:.1} s", total.as_secs_f64()));
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut progress = |t: l4s_core::Time| {
        bar.set_position(t.as_nanos() / 1_000_000);
        bar.set_message(format!("{:.1} s", t.as_secs_f64()));
    };
    let open = |name: &str| -> std::io::Result<Box<dyn Write>> {
        Ok(Box::new(std::io::BufWriter::new(std::fs::File::create(
            dir.path(name),
        )?)))
    };
    let distributions = match open("distributions.csv") {
        Ok(w) => Some(w),
        Err(e) => {
            eprintln!("error: cannot write results to {}: {e}", out.display());
            return ExitCode::from(1);
        }
    };
    let snapshots = if snap.is_zero() {
        None
    } else {
        match open("snapshots-flows.csv").and_then(|f| Ok((f, open("snapshots-queues.csv")?))) {
            Ok((f, q)) => Some((snap, f, q)),
            Err(e) => {
                eprintln!("error: cannot write results to {}: {e}", out.display());
                return ExitCode::from(1);
            }
        }
    };
    let timeline: Option<Box<dyn l4s_sim::timeline::TimelineSink>> = if packets {
        let flows: Vec<&str> = sc.flows.iter().map(|f| f.name.as_str()).collect();
        let links: Vec<&str> = sc.links.iter().map(|l| l.name.as_str()).collect();
        let sink = std::fs::File::create(dir.path("packets.parquet"))
            .and_then(|f| l4s_sim::timeline::ParquetTimeline::new(std::io::BufWriter::new(f), &flows, &links));
        match sink {
            Ok(s) => Some(Box::new(s)),
            Err(e) => {
                eprintln!("error: cannot write results to {}: {e}", out.display());
                return ExitCode::from(1);
            }
        }
    } else {
        None
    };
    let pcap = match pcap {
        None => None,
        Some(ipv6) => match open("bottleneck.pcap") {
            Ok(w) => Some((w, ipv6)),
            Err(e) => {
                eprintln!("error: cannot write results to {}: {e}", out.display());
                return ExitCode::from(1);
            }
        },
    };
    let (summary, stats, live_info) = if live {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        // The first SIGINT/SIGTERM ends the run (the testbed is removed, no results are
        // written); if it has not ended 10 s later, or on a second signal, everything is
        // removed and the process exits.
        if let Err(e) = l4s_fwd::netns::install_signal_cleanup(Some(stop.clone()), std::time::Duration::from_secs(10)) {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
        let id = match a.run_id.as_deref().map(l4s_fwd::netns::RunId::parse) {
            None => l4s_fwd::netns::RunId::generate(),
            Some(Ok(id)) => id,
            Some(Err(e)) => {
                eprintln!("error: --run-id: {e}");
                return ExitCode::from(2);
            }
        };
        if !quiet {
            eprintln!(
                "live run {id}: namespaces {}* (removed at the end; after a kill: l4s cleanup --run {id})",
                id.prefix()
            );
        }
        let opts = l4s_live::LiveOptions {
            seed,
            duration,
            ipv6: a.ipv6,
            snapshots,
            distributions,
            stop,
            run_id: Some(id),
            on_ready: None,
            timeline,
        };
        match l4s_live::run(sc, opts, &mut progress) {
            Ok((summary, info)) => {
                let stats = l4s_sim::RunStats {
                    events: 0,
                    bottleneck_packets: info.bottleneck_packets,
                    simulated: total,
                };
                (summary, stats, Some(info))
            }
            Err(e) => {
                bar.finish_and_clear();
                eprintln!("error: {e}");
                return ExitCode::from(match e.kind {
                    l4s_live::LiveErrorKind::Input | l4s_live::LiveErrorKind::Privilege => 2,
                    l4s_live::LiveErrorKind::Interrupted => 130,
                    _ => 1,
                });
            }
        }
    } else {
        let opts = l4s_sim::RunOptions {
            seed,
            duration,
            snapshots,
            distributions,
            pcap,
            timeline,
        };
        match l4s_sim::run(sc, opts, &mut progress) {
            Ok((s, st)) => (s, st, None),
            Err(e) => {
                bar.finish_and_clear();
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    };
    let elapsed = wall.elapsed();
    bar.finish_and_clear();
    let json = match serde_json::to_vec_pretty(&summary) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("error: cannot serialise the summary: {e}");
            return ExitCode::from(1);
        }
    };
    // Facts about this execution that would break byte-identical summaries (the date,
    // the wall time) live in their own file.
    let mut info = serde_json::json!({
        "started_utc": humantime::format_rfc3339_seconds(started).to_string(),
        "wall_seconds": (elapsed.as_secs_f64() * 1e3).round() / 1e3,
        "events": stats.events,
        "bottleneck_packets": stats.bottleneck_packets,
        "l4s_version": env!("CARGO_PKG_VERSION"),
        "command": std::env::args().collect::<Vec<_>>(),
        "backend": if live { "live" } else { "sim" },
    });
    if let (Some(li), Some(obj)) = (&live_info, info.as_object_mut()) {
        obj.insert(
            "live".into(),
            serde_json::json!({
                "run_id": li.run_id,
                "namespaces": li.namespaces,
                "kernel": li.kernel,
                "flows": li.flows,
                "elements": li.elements,
                "timeline": li.timeline,
            }),
        );
    }
    let info = serde_json::to_vec_pretty(&info).unwrap_or_default();
    let written = dir
        .write("summary.json", &json)
        .and_then(|_| dir.write("scenario.toml", &scenario_text))
        .and_then(|_| dir.write("run-info.json", &info));
    if let Err(e) = written {
        eprintln!("error: cannot write results to {}: {e}", out.display());
        return ExitCode::from(1);
    }
    // The time series and distributions also as Parquet, for pandas and polars.
    for name in ["snapshots-flows", "snapshots-queues", "distributions"] {
        let csv = dir.path(&format!("{name}.csv"));
        if csv.exists() {
            if let Err(e) = l4s_metrics::parquet::csv_to_parquet(&csv, &dir.path(&format!("{name}.parquet"))) {
                eprintln!("error: cannot write results to {}: {e}", out.display());
                return ExitCode::from(1);
            }
        }
    }
    // The report reads only the results directory, as `l4s report DIR` does later. A
    // report that cannot be built does not cost the results: they are kept and the
    // failure is reported.
    let report = l4s_report::write_report(dir.dir()).and_then(|p| {
        if a.png {
            l4s_report::write_pngs(dir.dir(), &dir.dir().join("png"), l4s_report::DEFAULT_PNG_SCALE)?;
        }
        Ok(p)
    });
    let written = match dir.commit() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: cannot write results to {}: {e}", out.display());
            return ExitCode::from(1);
        }
    };
    if quiet {
        println!("{}", written.display());
    } else {
        print_verdict(&l4s_report::verdict(&summary, None));
        print!("{}", summary_tables(&summary));
        if let Some(li) = &live_info {
            println!(
                "\nlive run {} ({} namespaces, kernel {}): {:.1} s in {:.2} s wall, {} bottleneck packets",
                li.run_id,
                li.namespaces,
                li.kernel,
                stats.simulated.as_secs_f64(),
                elapsed.as_secs_f64(),
                stats.bottleneck_packets
            );
        } else {
            println!(
                "\nsimulated {:.1} s in {:.2} s wall ({} events, {:.1} M events/s, {} bottleneck packets)",
                stats.simulated.as_secs_f64(),
                elapsed.as_secs_f64(),
                stats.events,
                stats.events as f64 / elapsed.as_secs_f64().max(1e-9) / 1e6,
                stats.bottleneck_packets
            );
        }
        println!("results: {}", written.join("summary.json").display());
        if report.is_ok() {
            println!("report:  {}", written.join("report.html").display());
        }
    }
    if let Err(e) = report {
        eprintln!("error: the results are written, but report.html could not be built: {e}");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
