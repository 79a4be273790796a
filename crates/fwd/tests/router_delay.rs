//! `l4s router --delay 20ms --delay-back 5ms` between real veths in namespaces the test
//! makes itself (needs root; CI runs as root; a non-root run skips with a message): a
//! sparse UDP stream each way arrives its direction's delay late, never earlier, with the
//! forwarder configured exactly as the command line does it.
#![cfg(feature = "cli")]

mod common;

use std::time::Duration;

use clap::Parser;
use common::*;
use l4s_fwd::afpacket::monotonic_now;
use l4s_fwd::cli::{router_config, RouterArgs};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    r: RouterArgs,
}

/// One-way delays (ms) of `n` datagrams sent every 10 ms from `tx` to `rx` (`to`), the
/// send time in the payload on the host's one clock.
fn one_way(tx: &std::net::UdpSocket, rx: &std::net::UdpSocket, to: &str, n: u64) -> Vec<f64> {
    rx.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 64];
    for _ in 0..n {
        let sent = monotonic_now().as_nanos();
        tx.send_to(&sent.to_be_bytes(), to).unwrap();
        if let Ok(8) = rx.recv(&mut buf) {
            let at = monotonic_now().as_nanos();
            let t = u64::from_be_bytes(buf[..8].try_into().unwrap());
            out.push((at - t) as f64 / 1e6);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    out
}

#[test]
fn router_delays_each_direction_from_the_command_line() {
    if !root() {
        return;
    }
    let cli = Cli::try_parse_from([
        "l4s",
        "--in",
        "ra",
        "--out",
        "rb",
        "--rate",
        "50Mbit",
        "--delay",
        "20ms",
        "--delay-back",
        "5ms",
    ])
    .unwrap();
    let cfg = router_config(&cli.r).unwrap();
    let bed = testbed();
    let fwd = Fwd::start(&bed.r, cfg, false);
    let (a, b) = (
        udp_in(&bed.a, &format!("{A_V4}:9200")),
        udp_in(&bed.b, &format!("{B_V4}:9201")),
    );
    let there = one_way(&a, &b, &format!("{B_V4}:9201"), 50);
    let back = one_way(&b, &a, &format!("{A_V4}:9200"), 50);
    let stats = fwd.finish();
    for (name, d, want) in [("A→B", there, 20.0), ("B→A", back, 5.0)] {
        let mut s = d.clone();
        s.sort_by(f64::total_cmp);
        assert!(s.len() >= 45, "{name}: {} of 50 arrived", s.len());
        let (min, p50) = (s[0], s[s.len() / 2]);
        println!("router delay {name}: min {min:.3} ms, p50 {p50:.3} ms (configured {want} ms)");
        // Never before its delay (a 64-byte frame takes 10 µs at 50 Mbit/s); a host that
        // held the forwarder back can only add, and the self-check says by how much.
        assert!(min >= want, "{name}: {min} ms");
        let late_ms = stats
            .directions
            .iter()
            .map(|d| d.lateness.max_us / 1e3)
            .fold(0.0, f64::max);
        assert!(
            p50 < want + 1.0 + late_ms,
            "{name}: p50 {p50} ms, forwarder lateness up to {late_ms} ms"
        );
    }
    assert_eq!(stats.directions[0].delay_ms, 20.0);
    assert_eq!(stats.directions[1].delay_ms, 5.0);
}
