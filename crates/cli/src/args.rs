//! The command line of `l4s`.
//!
//! The doc comments below are the command's help texts (clap), written for a terminal, not
//! for rustdoc: `[::]`, `[[variants]]` and `<scenario name>` are meant literally.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use clap::{Parser, Subcommand};
use l4s_core::units::parse_dur;
use l4s_core::Dur;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "l4s",
    version,
    about = "l4s-lab: simulate and measure L4S (RFC 9330/9331/9332) networks"
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Run a scenario (in the simulator, or live with --backend live), print a summary and
    /// write a results directory.
    Run(RunArgs),
    /// The userspace L4S bottleneck between two existing interfaces, both directions
    /// (needs root; see docs/live.md).
    Router(l4s_fwd::cli::RouterArgs),
    /// Remove the network namespaces and interfaces that killed live runs left behind
    /// (names starting with l4s-; runs still going are kept unless --force; needs root),
    /// and the temporary directories and unheld locks killed runs left under results/.
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
        /// A label for each run, in the order of the directories (repeatable), e.g.
        /// --label "L4S, Wi-Fi" --label "classic, Wi-Fi"
        #[arg(long = "label", value_name = "LABEL")]
        labels: Vec<String>,
        /// Draw the delay axis of the distribution charts on a log scale
        #[arg(long)]
        log_x: bool,
        /// Also export every chart of the page as a PNG, into the folder <page name>-png
        /// beside it (compare-png by default)
        #[arg(long)]
        png: bool,
    },
    /// Campaigns: thousands of paired runs of one scenario over swept and sampled
    /// parameters, resumable, with tables for pandas and polars (docs/campaigns.md).
    #[command(subcommand)]
    Campaign(crate::campaign::CampaignCmd),
    /// Capacity traces in Mahimahi's format.
    #[command(subcommand)]
    Trace(TraceCmd),
    /// Check a scenario file without running it.
    Check {
        /// Scenario files (TOML); each is checked, every variant of each
        #[arg(required = true, num_args = 1..)]
        scenarios: Vec<PathBuf>,
        /// Set a scenario key as in [[variants]], e.g. --set topology.rate=50Mbit
        /// (repeatable; VALUE is TOML, or else a string)
        #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set_arg)]
        set: Vec<(String, String)>,
        /// The warm-up (statistics start after it), e.g. 5s: as --set scenario.warmup=5s
        #[arg(long, value_parser = parse_dur)]
        warmup: Option<Dur>,
        /// Print each scenario as parsed: rates in bit/s, durations, every link direction
        /// with its queue (parameters that differ from the defaults), every flow's route
        #[arg(long)]
        show: bool,
    },
    /// Answer `l4s ecn-check` probes: a UDP reflector that reports the ECN codepoint each
    /// probe arrived with and replies with the codepoint the probe was sent with. Never an
    /// amplifier (a reply is no larger than its request; per-source rate limit). Stops on
    /// Ctrl-C or SIGTERM.
    Reflect(l4s_live::cli::ReflectArgs),
    /// Check whether ECT(1) (L4S) and CE survive the path to an `l4s reflect` and back:
    /// probes marked Not-ECT, ECT(0), ECT(1) and CE; per direction the verdict says
    /// whether ECT(1) survives, is bleached or remarked, and whether CE is seen.
    /// Exit status 0 if ECT(1) survives both ways, 1 if not (or no reply), 2 on bad input.
    EcnCheck(l4s_live::cli::EcnCheckArgs),
}

#[derive(Subcommand)]
pub enum TraceCmd {
    /// Write the capacity a scenario's link draws from its `capacity` process (for the
    /// run's seed and duration) as a Mahimahi trace, to replay it elsewhere (`trace =
    /// "FILE"`, or mm-link).
    Generate {
        /// Scenario file (TOML) with a link that has a `capacity` process
        scenario: PathBuf,
        /// The link (default: the first with a `capacity` process)
        #[arg(long)]
        link: Option<String>,
        /// Draw with this seed instead of the scenario's
        #[arg(long)]
        seed: Option<u64>,
        /// Draw this long instead of the scenario's duration, e.g. 120s
        #[arg(long, value_parser = parse_duration_arg)]
        duration: Option<Dur>,
        /// The trace file to write (refused if it exists)
        #[arg(long, short)]
        out: PathBuf,
    },
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// Scenario files (TOML), e.g. scenarios/dumbbell-dualpi2.toml; several run one after
    /// the other, each into results/<its name>
    #[arg(required = true, num_args = 1..)]
    pub scenarios: Vec<PathBuf>,
    /// Set a scenario key as in [[variants]], e.g. --set topology.rate=50Mbit or
    /// --set flows.bulk.cc=cubic (repeatable; applied after a variant's own keys; VALUE is
    /// TOML, or else a string)
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set_arg)]
    pub set: Vec<(String, String)>,
    /// The warm-up (statistics start after it), e.g. 5s: as --set scenario.warmup=5s
    #[arg(long, value_parser = parse_dur)]
    pub warmup: Option<Dur>,
    /// Results directory (default: results/<scenario name>). An earlier l4s-lab
    /// results directory there is replaced; any other existing path is refused.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Random seed (overrides the scenario's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Simulated duration (overrides the scenario's `duration`), e.g. 10s. It must exceed
    /// the warm-up; a flow that would start after the shortened end does not run (said
    /// before the run starts, and the verdict says it was silent), where `--set
    /// scenario.duration=...` refuses it.
    #[arg(long, value_parser = parse_duration_arg)]
    pub duration: Option<Dur>,
    /// Print only the results paths (each run's directory, and the comparison page of a
    /// file with variants).
    #[arg(long, short)]
    pub quiet: bool,
    /// Print the summary (summary.json) on stdout instead of tables: one object, or for a
    /// file with variants an object of the variants' summaries by name.
    #[arg(long)]
    pub json: bool,
    /// Exit with status 3 when a run's verdict is at least this bad: `warn` (a WARNING or
    /// a PROBLEM) or `problem` (a PROBLEM); for CI pipelines.
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub fail_on: Option<FailOn>,
    /// Interval of the time-series snapshots written beside summary.json
    /// (snapshots-flows.csv, snapshots-queues.csv); 0 turns them off.
    #[arg(long, default_value = "100ms", value_parser = parse_interval_arg)]
    pub snapshot_interval: Dur,
    /// Write the bottleneck's egress as bottleneck.pcap (Wireshark/tshark).
    #[arg(long)]
    pub pcap: bool,
    /// IPv6: addresses in the pcap (sim, with --pcap), or flows over IPv6 (live).
    #[arg(long)]
    pub ipv6: bool,
    /// Where the scenario runs: `sim` (the deterministic simulator) or `live` (real
    /// packets in network namespaces through the userspace bottleneck; needs root).
    #[arg(long, value_enum, default_value = "sim")]
    pub backend: BackendArg,
    /// Live runs: the run id (8 lowercase hex digits) that names the testbed's namespaces
    /// (l4s-ID-...), for `l4s cleanup --run ID`; default a fresh one, printed at the start.
    #[arg(long, requires = "backend")]
    pub run_id: Option<String>,
    /// Write one row per data packet to packets.parquet: send and arrival times, ECN
    /// sent and received, and each queue crossed (sub-queue, sojourn, AQM decision).
    #[arg(long)]
    pub packets: bool,
    /// Also export every chart of the report as a PNG into DIR/png (for papers).
    #[arg(long)]
    pub png: bool,
    /// Run only this variant of a scenario with [[variants]] (repeatable; in file order),
    /// e.g. the ones a live host can run.
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Warn,
    Problem,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendArg {
    Sim,
    Live,
}

/// A snapshot interval: a duration, or `0` / `off` for none.
fn parse_interval_arg(s: &str) -> Result<Dur, String> {
    match s.trim() {
        "0" | "off" | "none" => Ok(Dur::ZERO),
        other => {
            let d = parse_dur(other)?;
            match l4s_lab::snapshot_interval_error(d) {
                Some(why) => Err(format!("{why}; 0 turns it off")),
                None => Ok(d),
            }
        }
    }
}

/// `KEY=VALUE` of `--set`.
fn parse_set_arg(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!(
            "expected KEY=VALUE with a scenario key path, such as topology.rate=50Mbit, found {s:?}"
        )),
    }
}

/// `--set` with `--warmup` folded in.
pub fn sets(set: &[(String, String)], warmup: Option<Dur>) -> Vec<(String, String)> {
    let mut v = set.to_vec();
    if let Some(w) = warmup {
        v.push(("scenario.warmup".into(), format!("\"{}ns\"", w.as_nanos())));
    }
    v
}

fn parse_duration_arg(s: &str) -> Result<Dur, String> {
    let d = parse_dur(s)?;
    if d.is_zero() {
        return Err("expected a duration above zero".into());
    }
    Ok(d)
}
