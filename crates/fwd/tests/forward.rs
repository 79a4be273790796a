//! The forwarder between real veths in namespaces (needs root; skipped with a message
//! without): rate accuracy, ECN marking and rewriting, drops of Not-ECT, added delay,
//! malformed frames, bounded memory.

mod common;

use std::time::{Duration, Instant};

use common::*;
use l4s_aqm::{AqmConfig, DualPi2Config};
use l4s_core::Rate;
use l4s_fwd::router::RouterConfig;

fn dualpi2() -> AqmConfig {
    AqmConfig::DualPi2(DualPi2Config::default())
}

/// Count datagrams at B over a window after a warm-up; the delivered frame rate must be
/// within 1 % of the configured rate.
fn rate_check(mbps: u64) -> f64 {
    let bed = testbed();
    let rate = Rate::mbps(mbps);
    // Tail drop keeps the queue from ever emptying under overload, so this measures the
    // pacer alone (an AQM that empties the queue now and then lowers the utilisation).
    let fifo = AqmConfig::Fifo(l4s_aqm::FifoConfig {
        limit: (rate.bytes_in(l4s_core::Dur::from_millis(20)) / 1514).max(50) as u32,
        ..Default::default()
    });
    let fwd = Fwd::start(&bed.r, RouterConfig::new("ra", "rb", rate, fifo), false);
    let rx = udp_in(&bed.b, &format!("{B_V4}:9000"));
    rx.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let tx = udp_in(&bed.a, &format!("{A_V4}:0"));
    let payload = 1472; // 1514-byte frames
    let total = Duration::from_millis(3500);
    let sender =
        std::thread::spawn(move || blast(&tx, &format!("{B_V4}:9000"), payload, mbps as f64 * 1e6 * 1.25, total));
    let start = Instant::now();
    let (w0, w1) = (Duration::from_millis(700), Duration::from_millis(3200));
    let mut buf = [0u8; 2048];
    let mut n = 0u64;
    let mut all = 0u64;
    let (mut first, mut last) = (None, None);
    while start.elapsed() < total {
        if let Ok(len) = rx.recv(&mut buf) {
            assert_eq!(len, payload);
            all += 1;
            let t = start.elapsed();
            if t >= w0 && t <= w1 {
                if first.is_none() {
                    first = Some(t);
                } else {
                    n += 1;
                    last = Some(t);
                }
            }
        }
    }
    sender.join().unwrap();
    let stats = fwd.finish();
    let secs = (last.unwrap() - first.unwrap()).as_secs_f64();
    let got = n as f64 * 1514.0 * 8.0 / secs;
    let err = got / rate.bits_per_sec() as f64 - 1.0;
    let d = &stats.directions[0];
    eprintln!(
        "{mbps} Mbit/s: delivered {:.3} Mbit/s ({:+.3} %), received {all}, rx {} tx {} drops {:?}",
        got / 1e6,
        err * 100.0,
        d.rx_packets,
        d.tx_packets,
        d.queues.iter().map(|q| q.drops).collect::<Vec<_>>()
    );
    eprintln!(
        "realtime: {}, forfeits {} ({} us), tx retries {}, tx errors {}, kernel drops {}",
        stats.realtime,
        d.pacer_forfeits,
        d.pacer_forfeit_ns / 1000,
        d.tx_retries,
        d.tx_errors,
        d.kernel_drops
    );
    assert!(
        d.queues.iter().map(|q| q.drops).sum::<u64>() > 0,
        "the sender must overload the link"
    );
    err
}

#[test]
fn delivered_rate_within_one_percent() {
    if !root() {
        return;
    }
    for mbps in [10, 100, 500] {
        let err = rate_check(mbps);
        assert!(err.abs() < 0.01, "{mbps} Mbit/s: off by {:.3} %", err * 100.0);
    }
}
