//! The live tools of the `l4s` command that are not runs: `l4s reflect`, `l4s ecn-check`
//! and `l4s cleanup` (crates/cli wires them in as subcommands).
//!
//! The arguments' doc comments are the commands' help texts (clap), written for a terminal:
//! `[::]:PORT` and `HOST[:PORT]` are meant literally.
#![allow(rustdoc::broken_intra_doc_links)]

use crate::ecncheck::{self, CheckConfig, ReflectorConfig, ReflectorStats};
use crate::udp::EcnUdpSocket;
use l4s_core::units::parse_dur;
use l4s_core::Dur;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

fn parse_positive_f64(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("expected a number above zero, found `{s}`")),
    }
}

fn parse_duration_arg(s: &str) -> Result<Dur, String> {
    let d = parse_dur(s)?;
    if d.is_zero() {
        return Err("expected a duration above zero".into());
    }
    Ok(d)
}

/// Arguments of `l4s reflect`.
#[derive(Clone, Debug, clap::Args)]
pub struct ReflectArgs {
    /// Address and UDP port to listen on ([::]:PORT listens on IPv4 and IPv6).
    #[arg(long, default_value = "[::]:4739")]
    pub listen: SocketAddr,
    /// Replies per second per source address.
    #[arg(long, default_value_t = 100.0, value_parser = parse_positive_f64)]
    pub rate: f64,
    /// Burst of replies a source may get at once.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub burst: u32,
    /// Print a line per answered source (at most one a second each).
    #[arg(long, short)]
    pub verbose: bool,
}

/// Arguments of `l4s ecn-check`.
#[derive(Clone, Debug, clap::Args)]
pub struct EcnCheckArgs {
    /// HOST[:PORT] of the reflector (default port 4739); IPv6 as [ADDR]:PORT.
    pub target: String,
    /// Probes per codepoint.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub probes: u32,
    /// Probe size in bytes (UDP payload).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(20..=1472))]
    pub size: u16,
    /// How long to wait for replies after the last probe, e.g. 2s.
    #[arg(long, default_value = "1s", value_parser = parse_duration_arg)]
    pub wait: Dur,
}

/// A flag that SIGINT and SIGTERM set (the command then stops cleanly).
pub fn stop_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // Registration fails only for forbidden signals; these two are allowed.
        let _ = signal_hook::flag::register(sig, flag.clone());
    }
    flag
}

/// `l4s reflect`: answer ECN probes until SIGINT or SIGTERM.
pub fn reflect_main(a: &ReflectArgs) -> ExitCode {
    let sock = match EcnUdpSocket::bind(a.listen) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot listen on {}: {e}", a.listen);
            return ExitCode::from(2);
        }
    };
    let stop = stop_flag();
    let cfg = ReflectorConfig {
        rate_per_source: a.rate,
        burst: a.burst,
        ..Default::default()
    };
    println!(
        "reflecting ECN probes on {} (at most {} replies/s per source); Ctrl-C stops",
        sock.local_addr()
            .map(|x| x.to_string())
            .unwrap_or_else(|_| a.listen.to_string()),
        a.rate
    );
    let mut last: HashMap<IpAddr, Instant> = HashMap::new();
    let verbose = a.verbose;
    let mut log = |src: SocketAddr, st: &ReflectorStats| {
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
    match ecncheck::serve(&sock, cfg, &stop, &mut log) {
        Ok(st) => {
            println!(
                "stopped: {} replies, {} malformed datagrams ignored, {} rate-limited, {} send errors",
                st.replies, st.malformed, st.rate_limited, st.send_errors
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: reflector on {}: {e}", a.listen);
            ExitCode::from(1)
        }
    }
}

/// `l4s ecn-check`: exit status 0 if ECT(1) survives both ways, 1 if not (or no reply), 2
/// on bad input.
pub fn ecn_check_main(a: &EcnCheckArgs) -> ExitCode {
    let addr = match ecncheck::resolve(&a.target) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let cfg = CheckConfig {
        probes: a.probes,
        size: a.size as usize,
        wait: std::time::Duration::from_nanos(a.wait.as_nanos()),
        ..Default::default()
    };
    match ecncheck::check(addr, cfg) {
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

/// What killed runs left in the results folders below `root` (`results/` by default):
/// their temporary directories and unheld locks.
fn cleanup_results(root: &Path) {
    match l4s_metrics::results::sweep_leftovers(root) {
        Ok(removed) => {
            for p in removed {
                println!("removed {} (left by a run that was killed)", p.display());
            }
        }
        Err(e) => eprintln!("warning: cleaning up {}: {e}", root.display()),
    }
}

/// `l4s cleanup`: remove what killed live runs left behind (`run`: one run's only);
/// runs still going are kept unless `force`.
pub fn cleanup_main(run: Option<&str>, force: bool) -> ExitCode {
    cleanup_results(Path::new("results"));
    if !crate::run::is_root() {
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
