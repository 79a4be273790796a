//! `cargo bench -p l4s-fwd` (root): forwarding through the userspace DualPI2 on veths.
//!
//! 1. Throughput with 1514-byte frames and an unreachable rate (10 Gbit/s), for both read
//!    paths (recvmmsg batches, one recv per frame): frames/s the forwarder hands on.
//! 2. Added delay at low load: 1000 frames/s at 1 Gbit/s; one-way delay A→B through the
//!    forwarder minus the same over a direct veth pair, p50/p99.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::*;
use l4s_aqm::{AqmConfig, DualPi2Config};
use l4s_core::Rate;
use l4s_fwd::afpacket::IoMode;
use l4s_fwd::netns::{RunId, Testbed, VethEnd};
use l4s_fwd::router::RouterConfig;

fn throughput(io: IoMode) {
    let bed = testbed();
    let mut cfg = RouterConfig::new("ra", "rb", Rate::gbps(10), AqmConfig::DualPi2(DualPi2Config::default()));
    cfg.io = io;
    let fwd = Fwd::start(&bed.r, cfg, false);
    let tx = udp_in(&bed.a, &format!("{A_V4}:0"));
    let buf = [0u8; 1472];
    let start = Instant::now();
    let mut sent = 0u64;
    while start.elapsed() < Duration::from_secs(3) {
        for _ in 0..64 {
            if tx.send_to(&buf, format!("{B_V4}:9")).is_ok() {
                sent += 1;
            }
        }
    }
    let stats = fwd.finish();
    let d = &stats.directions[0];
    let secs = stats.duration_s;
    println!(
        "throughput {io:?}: offered {:.0} frames/s, forwarded {:.0} frames/s = {:.3} Gbit/s (1514 B), kernel drops {}, {}",
        sent as f64 / 3.0,
        d.tx_packets as f64 / secs,
        d.tx_bytes as f64 * 8.0 / secs / 1e9,
        d.kernel_drops,
        stats.realtime
    );
}

fn one_way(tx: &std::net::UdpSocket, rx: &std::net::UdpSocket, to: &str, n: usize) -> Vec<f64> {
    let mut v = Vec::with_capacity(n);
    let mut buf = [0u8; 1500];
    rx.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    for _ in 0..n {
        let t0 = Instant::now();
        tx.send_to(&[0u8; 1472], to).unwrap();
        if rx.recv(&mut buf).is_ok() {
            v.push(t0.elapsed().as_secs_f64() * 1e6);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v
}

fn pct(v: &[f64], q: f64) -> f64 {
    v[((v.len() - 1) as f64 * q) as usize]
}

fn added_delay() {
    // Through the forwarder.
    let bed = testbed();
    let fwd = Fwd::start(
        &bed.r,
        RouterConfig::new("ra", "rb", Rate::gbps(1), AqmConfig::DualPi2(DualPi2Config::default())),
        false,
    );
    let tx = udp_in(&bed.a, &format!("{A_V4}:0"));
    let rx = udp_in(&bed.b, &format!("{B_V4}:9100"));
    realtime();
    let through = one_way(&tx, &rx, &format!("{B_V4}:9100"), 3000);
    drop(fwd);
    // Direct veth.
    let mut tb = Testbed::new(RunId::generate());
    let a = tb.add_netns("da").unwrap();
    let b = tb.add_netns("db").unwrap();
    tb.add_veth(VethEnd { ns: &a, name: "a0" }, VethEnd { ns: &b, name: "b0" })
        .unwrap();
    for (ns, i, ip) in [(&a, "a0", "198.18.1.1/24"), (&b, "b0", "198.18.1.2/24")] {
        ns.disable_offloads(i).unwrap();
        ns.add_addr(i, ip).unwrap();
        ns.link_up(i).unwrap();
    }
    let tx = udp_in(&a, "198.18.1.1:0");
    let rx = udp_in(&b, "198.18.1.2:9100");
    let _ = one_way(&tx, &rx, "198.18.1.2:9100", 50);
    let direct = one_way(&tx, &rx, "198.18.1.2:9100", 3000);
    let ser = 1514.0 * 8.0 / 1e9 * 1e6;
    println!(
        "one-way delay at low load (1000 frames/s, 1 Gbit/s): direct veth p50 {:.1} us p99 {:.1} us; \
         through the forwarder p50 {:.1} us p99 {:.1} us; added (minus {ser:.1} us serialisation): p50 {:.1} us, p99 {:.1} us",
        pct(&direct, 0.5),
        pct(&direct, 0.99),
        pct(&through, 0.5),
        pct(&through, 0.99),
        pct(&through, 0.5) - pct(&direct, 0.5) - ser,
        pct(&through, 0.99) - pct(&direct, 0.99) - ser
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if !root() {
        return;
    }
    throughput(IoMode::Batched);
    throughput(IoMode::Single);
    added_delay();
}
