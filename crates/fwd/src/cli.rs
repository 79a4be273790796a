//! `l4s router`: the userspace L4S bottleneck between two existing interfaces.
//!
//! crates/cli wires [`RouterArgs`] in as a subcommand and calls [`router_main`].
//!
//! ```text
//! sudo l4s router --in eth0 --out eth1 --rate 50Mbit --rate-back 10Mbit \
//!      --aqm dualpi2 --set target=10ms --set step_thresh=1ms --stats stats.json
//! # An "Internet" 40 ms away (20 ms each way) behind a 20/5 Mbit/s access.
//! sudo l4s router --in eth0 --out eth1 --rate 20Mbit --rate-back 5Mbit --delay 20ms
//! # Bandwidth that varies: 20 Mbit/s, 5 from 4 s, 12 from 8 s, and again every 12 s.
//! sudo l4s router --in eth0 --out eth1 --rate 20Mbit \
//!      --rate-schedule 4s=5Mbit,8s=12Mbit,repeat=12s
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use l4s_aqm::AqmConfig;
use l4s_core::units::{parse_dur, parse_rate};
use l4s_core::{Dur, Rate};

use crate::afpacket::IoMode;
use crate::error::FwdError;
use crate::netns::{ethtool_available, Netns};
use crate::router::{run, RouterConfig, RouterStats, RATE_RANGE};
use l4s_link::RateSchedule;

/// Arguments of `l4s router`.
#[derive(Clone, Debug, clap::Args)]
#[command(about = "Run the userspace L4S bottleneck between two interfaces (both directions)")]
pub struct RouterArgs {
    /// Interface on side A (e.g. the LAN side).
    #[arg(long = "in", value_name = "IF_A")]
    pub input: String,
    /// Interface on side B (e.g. the uplink).
    #[arg(long = "out", value_name = "IF_B")]
    pub output: String,
    /// Rate of the A→B direction, e.g. 50Mbit.
    #[arg(long, value_parser = parse_rate_arg)]
    pub rate: Rate,
    /// Rate of the B→A direction (default: the same as --rate).
    #[arg(long = "rate-back", value_parser = parse_rate_arg)]
    pub rate_back: Option<Rate>,
    /// Rate changes of the A→B direction as AT=RATE steps after the start of forwarding,
    /// offsets strictly increasing, e.g. 4s=5Mbit,8s=12Mbit (5 Mbit/s from 4 s, 12 from 8 s).
    /// With repeat=PERIOD (e.g. 4s=5Mbit,8s=12Mbit,repeat=12s) the pattern starts again from
    /// --rate every PERIOD for as long as the router runs; the steps must lie within it.
    #[arg(long = "rate-schedule", value_name = "SPEC", value_parser = parse_rate_schedule)]
    pub rate_schedule: Option<RateSchedule>,
    /// Rate changes of the B→A direction, as --rate-schedule (the pattern starts from
    /// --rate-back, or --rate).
    #[arg(long = "rate-schedule-back", value_name = "SPEC", value_parser = parse_rate_schedule)]
    pub rate_schedule_back: Option<RateSchedule>,
    /// Propagation delay of the A→B direction, after its queue, e.g. 20ms (the testbed's
    /// delay line; no netem needed). Constant: there is no jitter option.
    #[arg(long, value_parser = parse_dur_arg, default_value = "0ms")]
    pub delay: Dur,
    /// Propagation delay of the B→A direction (default: the same as --delay).
    #[arg(long = "delay-back", value_parser = parse_dur_arg)]
    pub delay_back: Option<Dur>,
    /// Queue discipline: dualpi2, fifo, pie, codel, fq-codel, classic-ecn or l4s-marker.
    #[arg(long, default_value = "dualpi2")]
    pub aqm: String,
    /// A parameter of the discipline as KEY=VALUE, as in scenario files (repeatable), e.g.
    /// --set target=10ms --set limit=5000.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// A parameter for the B→A direction only (repeatable); --set applies to both.
    #[arg(long = "set-back", value_name = "KEY=VALUE")]
    pub set_back: Vec<String>,
    /// Write the statistics as JSON to this file on exit (default: print them to stdout).
    #[arg(long, value_name = "FILE")]
    pub stats: Option<PathBuf>,
    /// Status line interval.
    #[arg(long = "status-interval", default_value = "1s", value_parser = parse_dur_arg)]
    pub status_interval: Dur,
    /// No status lines.
    #[arg(long, short)]
    pub quiet: bool,
    /// Seed of the AQMs' random sources.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Read frames one per system call instead of in batches.
    #[arg(long = "no-batch")]
    pub no_batch: bool,
    /// Do not ask for real-time (SCHED_FIFO) scheduling.
    #[arg(long = "no-realtime")]
    pub no_realtime: bool,
}

fn parse_rate_arg(s: &str) -> Result<Rate, String> {
    parse_rate(s)
}

fn parse_dur_arg(s: &str) -> Result<Dur, String> {
    parse_dur(s)
}

/// Parse a rate schedule such as `4s=5Mbit,8s=12Mbit` or `4s=5Mbit,8s=12Mbit,repeat=12s`
/// (durations and rates as in scenario files). The error says what was expected and what
/// was found; clap puts the flag's name in front of it.
pub fn parse_rate_schedule(spec: &str) -> Result<RateSchedule, String> {
    let mut steps: Vec<(Dur, Rate)> = Vec::new();
    let mut repeat = None;
    for part in spec.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(format!(
                "expected AT=RATE steps such as 4s=5Mbit separated by commas, found an empty element in {spec:?}"
            ));
        }
        let Some((k, v)) = part.split_once('=').map(|(k, v)| (k.trim(), v.trim())) else {
            return Err(format!("expected AT=RATE such as 4s=5Mbit, found {part:?}"));
        };
        if k == "repeat" {
            if repeat.is_some() {
                return Err(format!(
                    "expected at most one repeat=PERIOD, found a second one in {spec:?}"
                ));
            }
            repeat = Some(parse_dur(v).map_err(|e| format!("repeat: {e}"))?);
            continue;
        }
        let at = parse_dur(k).map_err(|e| format!("{part:?}: the time: {e}"))?;
        let rate = parse_rate(v).map_err(|e| format!("{part:?}: the rate: {e}"))?;
        if at == Dur::ZERO {
            return Err(format!(
                "{part:?}: expected a time after the start (above 0s; the rate at the start is --rate)"
            ));
        }
        if let Some(&(prev, _)) = steps.last() {
            if at <= prev {
                return Err(format!(
                    "{part:?}: expected times in increasing order, found {at} after {prev}"
                ));
            }
        }
        let (lo, hi) = RATE_RANGE;
        if !(lo..=hi).contains(&rate.bits_per_sec()) {
            return Err(format!("{part:?}: expected a rate from 8kbit to 100Gbit, found {rate}"));
        }
        steps.push((at, rate));
    }
    let Some(&(last, _)) = steps.last() else {
        return Err(format!(
            "expected at least one AT=RATE step such as 4s=5Mbit, found {spec:?}"
        ));
    };
    if let Some(p) = repeat {
        if p <= last {
            return Err(format!(
                "expected a repeat period longer than the last step ({last}), found repeat={p}"
            ));
        }
    }
    Ok(RateSchedule {
        steps,
        repeat,
        end: None,
    })
}

/// A `KEY=VALUE` as a JSON value: numbers and booleans as such, lists in brackets
/// (`l4s_dscp=[45,46]`), everything else (durations such as `15ms`) as text.
fn json_value(v: &str) -> serde_json::Value {
    if let Ok(x) = serde_json::from_str::<serde_json::Value>(v) {
        if x.is_number() || x.is_boolean() || x.is_array() {
            return x;
        }
    }
    serde_json::Value::String(v.to_string())
}

/// The discipline `kind` with `KEY=VALUE` overrides, validated.
pub fn aqm_from_args(kind: &str, sets: &[String]) -> Result<AqmConfig, FwdError> {
    if AqmConfig::default_for_kind(kind).is_none() {
        return Err(FwdError::config(
            "aqm",
            format!("expected one of {}, found {kind:?}", l4s_aqm::KINDS.join(", ")),
        ));
    }
    let mut obj = serde_json::Map::new();
    obj.insert("kind".into(), serde_json::Value::String(kind.to_string()));
    for s in sets {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| FwdError::config("set", format!("expected KEY=VALUE such as target=10ms, found {s:?}")))?;
        obj.insert(k.trim().to_string(), json_value(v.trim()));
    }
    let cfg: AqmConfig = serde_json::from_value(serde_json::Value::Object(obj))
        .map_err(|e| FwdError::config("set", format!("{kind}: {e}")))?;
    cfg.validate()
        .map_err(|e| FwdError::config(&format!("set {}", e.key), e.message))?;
    Ok(cfg)
}

/// Build the forwarder configuration from the arguments.
pub fn router_config(args: &RouterArgs) -> Result<RouterConfig, FwdError> {
    let aqm_ab = aqm_from_args(&args.aqm, &args.set)?;
    let mut back = args.set.clone();
    back.extend(args.set_back.iter().cloned());
    let aqm_ba = aqm_from_args(&args.aqm, &back)?;
    let mut cfg = RouterConfig::new(&args.input, &args.output, args.rate, aqm_ab);
    cfg.ba.aqm = aqm_ba;
    cfg.ba.rate = Some(args.rate_back.unwrap_or(args.rate));
    cfg.ab.delay = args.delay;
    cfg.ba.delay = args.delay_back.unwrap_or(args.delay);
    if let Some(s) = &args.rate_schedule {
        cfg.ab.schedule = s.clone();
    }
    if let Some(s) = &args.rate_schedule_back {
        cfg.ba.schedule = s.clone();
    }
    cfg.seed = args.seed;
    cfg.status_interval = args.status_interval;
    if args.no_batch {
        cfg.io = IoMode::Single;
    }
    if args.no_realtime {
        cfg.realtime_priority = None;
    }
    cfg.validate()?;
    Ok(cfg)
}

/// Offload warnings for an interface (empty when all is well).
pub fn offload_warnings(ifname: &str) -> Vec<String> {
    if !ethtool_available() {
        return vec![format!(
            "cannot check segmentation/receive offloads on {ifname}: `ethtool` is not installed \
             (apt-get install ethtool); if TSO/GSO/GRO are on, the bottleneck sees merged super-packets"
        )];
    }
    match Netns::current().offloads(ifname) {
        Ok(o) => {
            let on: Vec<&str> = o
                .iter()
                .filter(|f| {
                    f.on && !f.fixed
                        && matches!(
                            f.name.as_str(),
                            "tcp-segmentation-offload"
                                | "generic-segmentation-offload"
                                | "generic-receive-offload"
                                | "large-receive-offload"
                        )
                })
                .map(|f| f.name.as_str())
                .collect();
            if on.is_empty() {
                Vec::new()
            } else {
                vec![format!(
                    "{} on {ifname}: the bottleneck would see merged super-packets (dropped as oversize) \
                     and pace them wrongly; switch them off with `ethtool -K {ifname} tso off gso off gro off lro off`",
                    on.join(", ")
                )]
            }
        }
        Err(e) => vec![format!("cannot check offloads on {ifname}: {e}")],
    }
}

/// A human summary of the statistics.
pub fn summary(stats: &RouterStats) -> String {
    let mut s = format!("l4s router: {:.1} s, {}\n", stats.duration_s, stats.realtime);
    for d in &stats.directions {
        s.push_str(&format!(
            "  {} ({} at {}): in {} pkts / {} B, out {} pkts / {} B, malformed {}, oversize {}, no buffer {}, kernel drops {}\n",
            d.name,
            d.aqm,
            Rate(d.rate_bps),
            d.rx_packets,
            d.rx_bytes,
            d.tx_packets,
            d.tx_bytes,
            d.malformed.values().sum::<u64>(),
            d.oversize_drops,
            d.no_buffer_drops,
            d.kernel_drops
        ));
        if !d.rate_schedule.is_empty() {
            let sched = RateSchedule {
                steps: d
                    .rate_schedule
                    .iter()
                    .map(|&(at, r)| (Dur::from_secs_f64(at), Rate(r)))
                    .collect(),
                repeat: d.rate_repeat_s.map(Dur::from_secs_f64),
                end: None,
            };
            s.push_str(&format!(
                "    rate schedule {sched}: {} changes applied, rate at the end {}\n",
                d.rate_changes_applied,
                Rate(d.final_rate_bps)
            ));
        }
        for q in &d.queues {
            s.push_str(&format!(
                "    {:<6} enq {} deq {} marks {} drops {} sojourn p50 {:.3} ms p99 {:.3} ms max {:.3} ms\n",
                q.queue,
                q.enqueued_packets,
                q.dequeued_packets,
                q.marks,
                q.drops,
                q.sojourn.p50_us / 1e3,
                q.sojourn.p99_us / 1e3,
                q.sojourn.max_us / 1e3
            ));
        }
    }
    s
}

/// Run `l4s router` until SIGINT or SIGTERM. Exit code 0 on a clean stop, 2 for bad
/// arguments, 1 for anything else (missing privilege included, with the fix named).
pub fn router_main(args: &RouterArgs) -> ExitCode {
    let cfg = match router_config(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("l4s router: {e}");
            return ExitCode::from(2);
        }
    };
    // Both interfaces first: the offload check of one that is not there would only
    // say that ethtool failed.
    for (key, ifname) in [("in", &cfg.a), ("out", &cfg.b)] {
        if let Err(e) = crate::afpacket::interface_index(ifname, key) {
            eprintln!("l4s router: {e}");
            return ExitCode::from(2);
        }
    }
    for w in offload_warnings(&cfg.a).into_iter().chain(offload_warnings(&cfg.b)) {
        eprintln!("l4s router: warning: {w}");
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(sig, stop.clone()) {
            eprintln!("l4s router: cannot install a handler for signal {sig}: {e}");
            return ExitCode::from(1);
        }
    }
    let quiet = args.quiet;
    let res = run(&cfg, &stop, &mut |st| {
        if !quiet {
            eprintln!("{st}");
        }
    });
    let stats = match res {
        Ok(s) => s,
        Err(e) => {
            eprintln!("l4s router: {e}");
            return ExitCode::from(if matches!(e, FwdError::Config { .. }) { 2 } else { 1 });
        }
    };
    eprint!("{}", summary(&stats));
    let json = match serde_json::to_string_pretty(&stats) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("l4s router: cannot encode the statistics: {e}");
            return ExitCode::from(1);
        }
    };
    match &args.stats {
        Some(p) => {
            if let Err(e) = std::fs::write(p, json + "\n") {
                eprintln!("l4s router: writing {}: {e}", p.display());
                return ExitCode::from(1);
            }
            eprintln!("l4s router: statistics written to {}", p.display());
        }
        None => println!("{json}"),
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        r: RouterArgs,
    }

    fn args(v: &[&str]) -> Result<RouterArgs, clap::Error> {
        let mut all = vec!["l4s"];
        all.extend_from_slice(v);
        Cli::try_parse_from(all).map(|c| c.r)
    }

    #[test]
    fn arguments_build_a_config() {
        let a = args(&[
            "--in",
            "eth0",
            "--out",
            "eth1",
            "--rate",
            "50Mbit",
            "--rate-back",
            "10Mbit",
            "--set",
            "target=10ms",
            "--set",
            "limit=5000",
            "--set-back",
            "step_thresh=2ms",
        ])
        .unwrap();
        let c = router_config(&a).unwrap();
        assert_eq!((c.ab.rate, c.ba.rate), (Some(Rate::mbps(50)), Some(Rate::mbps(10))));
        let (AqmConfig::DualPi2(ab), AqmConfig::DualPi2(ba)) = (&c.ab.aqm, &c.ba.aqm) else {
            panic!()
        };
        assert_eq!((ab.target, ab.limit), (Dur::from_millis(10), 5000));
        assert_eq!((ba.target, ba.step_thresh), (Dur::from_millis(10), Dur::from_millis(2)));
        assert_ne!(ab.step_thresh, Dur::from_millis(2));
        let a = args(&[
            "--in",
            "a",
            "--out",
            "b",
            "--rate",
            "1Gbit",
            "--aqm",
            "fq-codel",
            "--no-batch",
        ])
        .unwrap();
        let c = router_config(&a).unwrap();
        assert_eq!(c.ab.aqm.kind(), "fq-codel");
        assert_eq!(c.io, IoMode::Single);
        assert_eq!((c.ab.delay, c.ba.delay), (Dur::ZERO, Dur::ZERO));
        // A delay each way; the way back defaults to the way there.
        let base = ["--in", "a", "--out", "b", "--rate", "20Mbit", "--delay", "20ms"];
        let c = router_config(&args(&base).unwrap()).unwrap();
        assert_eq!((c.ab.delay, c.ba.delay), (Dur::from_millis(20), Dur::from_millis(20)));
        let c = router_config(&args(&[&base[..], &["--delay-back", "5ms"]].concat()).unwrap()).unwrap();
        assert_eq!((c.ab.delay, c.ba.delay), (Dur::from_millis(20), Dur::from_millis(5)));
        assert!(args(&[&base[..6], &["--delay", "soon"]].concat()).is_err());
    }

    #[test]
    fn bad_arguments_name_the_key() {
        let e = |v: &[&str]| router_config(&args(v).unwrap()).unwrap_err().to_string();
        assert!(e(&["--in", "a", "--out", "b", "--rate", "1Mbit", "--aqm", "red"]).contains("aqm: expected one of"));
        assert!(e(&["--in", "a", "--out", "b", "--rate", "1Mbit", "--set", "target"]).contains("KEY=VALUE"));
        assert!(e(&["--in", "a", "--out", "b", "--rate", "1Mbit", "--set", "bogus=1"]).contains("bogus"));
        assert!(e(&["--in", "a", "--out", "b", "--rate", "1Mbit", "--set", "target=0ms"]).contains("target"));
        assert!(e(&["--in", "a", "--out", "a", "--rate", "1Mbit"]).contains("out"));
        assert!(e(&["--in", "a", "--out", "b", "--rate", "1kbit"]).contains("rate"));
        assert!(args(&["--in", "a", "--out", "b", "--rate", "fast"]).is_err());
    }

    #[test]
    fn rate_schedules_parse_to_exact_steps() {
        let ms = Dur::from_millis;
        assert_eq!(
            parse_rate_schedule("4s=5Mbit,8s=12Mbit").unwrap(),
            RateSchedule {
                steps: vec![(Dur::from_secs(4), Rate::mbps(5)), (Dur::from_secs(8), Rate::mbps(12))],
                repeat: None,
                end: None,
            }
        );
        // Spaces around elements, repeat anywhere, other units.
        let s = parse_rate_schedule(" 250ms = 1.5Mbit , repeat=12s, 1.5s=500kbit,2s=1Gbit").unwrap();
        assert_eq!(
            s.steps,
            vec![
                (ms(250), Rate(1_500_000)),
                (ms(1500), Rate(500_000)),
                (Dur::from_secs(2), Rate::gbps(1))
            ]
        );
        assert_eq!(s.repeat, Some(Dur::from_secs(12)));
        assert_eq!(
            s.to_string(),
            "250ms=1.500Mbit,1.5s=500.000kbit,2s=1.000Gbit,repeat=12s"
        );
        // The edges of the forwarder's rate range are accepted.
        let s = parse_rate_schedule("1ms=8kbit,2ms=100Gbit,repeat=3ms").unwrap();
        assert_eq!(s.steps, vec![(ms(1), Rate(8_000)), (ms(2), Rate(100_000_000_000))]);
        assert_eq!(s.repeat, Some(ms(3)));
        // Both directions reach the forwarder's configuration.
        let a = args(&[
            "--in",
            "a",
            "--out",
            "b",
            "--rate",
            "20Mbit",
            "--rate-back",
            "4Mbit",
            "--rate-schedule",
            "4s=5Mbit,8s=12Mbit,repeat=12s",
            "--rate-schedule-back",
            "1s=1Mbit",
        ])
        .unwrap();
        let c = router_config(&a).unwrap();
        assert_eq!(
            c.ab.schedule.steps,
            [(Dur::from_secs(4), Rate::mbps(5)), (Dur::from_secs(8), Rate::mbps(12))]
        );
        assert_eq!(c.ab.schedule.repeat, Some(Dur::from_secs(12)));
        assert_eq!(c.ba.schedule.steps, [(Dur::from_secs(1), Rate::mbps(1))]);
        assert_eq!(
            (c.ba.schedule.repeat, c.ab.rate, c.ba.rate),
            (None, Some(Rate::mbps(20)), Some(Rate::mbps(4)))
        );
        // Without the flags nothing changes.
        let c = router_config(&args(&["--in", "a", "--out", "b", "--rate", "20Mbit"]).unwrap()).unwrap();
        assert!(c.ab.schedule.is_empty() && c.ba.schedule.is_empty());
    }

    #[test]
    fn bad_rate_schedules_name_the_flag_and_what_was_expected() {
        let cases: [(&str, &str); 16] = [
            ("4s:5Mbit", r#"expected AT=RATE such as 4s=5Mbit, found "4s:5Mbit""#),
            ("", "found an empty element"),
            ("4s=5Mbit,,8s=1Mbit", "found an empty element"),
            ("4s=5Mbit,", "found an empty element"),
            ("repeat=10s", "expected at least one AT=RATE step"),
            ("4=5Mbit", "the time: expected a duration"),
            ("4s=5", "the rate: expected a rate"),
            ("4s=fast", "the rate: expected a rate"),
            ("-1s=5Mbit", "the time: expected a duration"),
            ("0s=5Mbit", "expected a time after the start"),
            (
                "4s=5Mbit,4s=6Mbit",
                "expected times in increasing order, found 4s after 4s",
            ),
            (
                "4s=5Mbit,2s=6Mbit",
                "expected times in increasing order, found 2s after 4s",
            ),
            ("4s=7999bit", "expected a rate from 8kbit to 100Gbit"),
            ("4s=101Gbit", "expected a rate from 8kbit to 100Gbit"),
            (
                "4s=5Mbit,8s=1Mbit,repeat=8s",
                "expected a repeat period longer than the last step (8s), found repeat=8s",
            ),
            ("4s=5Mbit,repeat=5s,repeat=6s", "expected at most one repeat=PERIOD"),
        ];
        for flag in ["--rate-schedule", "--rate-schedule-back"] {
            for (spec, want) in cases {
                // `--flag=SPEC`, so that a SPEC starting with '-' reaches the parser.
                let arg = format!("{flag}={spec}");
                let e = args(&["--in", "a", "--out", "b", "--rate", "20Mbit", &arg])
                    .map(|_| ())
                    .expect_err(spec)
                    .to_string();
                assert!(e.contains(&format!("for '{flag} <SPEC>'")), "{flag} {spec:?}: {e}");
                assert!(e.contains(want), "{flag} {spec:?}: {e}");
            }
        }
        // The parser alone: an error, not a panic, for odd input.
        for spec in [
            "=",
            "=5Mbit",
            "4s=",
            "repeat=",
            "repeat=x",
            "4s=5Mbit,repeat=0s",
            "\u{1F600}=1",
        ] {
            assert!(parse_rate_schedule(spec).is_err(), "{spec:?}");
        }
    }
}
