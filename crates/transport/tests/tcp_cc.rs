//! The TCP endpoints driving the real controllers of `l4s-cc`, and a hot-path performance
//! check of the scoreboard at 1 Gbit/s.

mod common;

use common::{MiniReno, Net, PathCfg};
use l4s_cc::{build, CcParams, EcnMode};
use l4s_core::{Dur, Rate, Time};
use l4s_transport::tcp::*;
use l4s_transport::Endpoint;

fn net(
    cc: &str,
    rate: Rate,
    one_way: Dur,
    fwd_extra: impl FnOnce(&mut PathCfg),
) -> Net<TcpSegment, TcpSender, TcpReceiver> {
    let cc = build(cc, &CcParams::default()).unwrap();
    let s = TcpSender::new(TcpConfig::default(), cc, Time::ZERO);
    let r = TcpReceiver::new(TcpReceiverConfig::default());
    let mut fwd = PathCfg {
        rate,
        delay: one_way,
        queue_limit: 4_000_000,
        ..Default::default()
    };
    fwd_extra(&mut fwd);
    let rev = PathCfg {
        delay: one_way,
        ..Default::default()
    };
    Net::new(s, r, fwd, rev)
}

fn goodput(n: &mut Net<TcpSegment, TcpSender, TcpReceiver>, from: Time, to: Time) -> f64 {
    n.run_until(from, |_| false);
    n.fwd.reset_qdelay();
    let d0 = n.r.stats().delivered_bytes;
    n.run_until(to, |_| false);
    (n.r.stats().delivered_bytes - d0) as f64 * 8.0 / (to - from).as_secs_f64()
}

/// Prague over a 1 ms step-marking L4S queue: full rate, sub-millisecond mean queue, no
/// loss, exact AccECN feedback; paced and unpaced, with and without
/// `TcpConfig::paced_is_cwnd_limited`. Prague's pacing rate is cwnd·MTU/srtt but, as in
/// Linux, the schedule advances by each packet's payload only, so a paced Prague sends
/// MTU/MSS (3.6 %) faster than its window and fills it: it is cwnd-limited, and grows,
/// even without the flag.
#[test]
fn prague_over_l4s_step_marking_low_delay() {
    for (pacing, paced_is_cwnd_limited) in [(true, true), (false, true), (true, false)] {
        let cc = build("prague", &CcParams::default()).unwrap();
        let cfg = TcpConfig {
            pacing,
            paced_is_cwnd_limited,
            ..Default::default()
        };
        let s = TcpSender::new(cfg, cc, Time::ZERO);
        let r = TcpReceiver::new(TcpReceiverConfig::default());
        let fwd = PathCfg {
            rate: Rate::mbps(100),
            delay: Dur::from_millis(10),
            ce_step: Some(Dur::from_millis(1)),
            ..Default::default()
        };
        let rev = PathCfg {
            delay: Dur::from_millis(10),
            ..Default::default()
        };
        let mut n = Net::new(s, r, fwd, rev);
        let g = goodput(&mut n, Time::from_secs(3), Time::from_secs(8));
        let util = g / (100e6 * 1448.0 / 1514.0);
        let q = n.fwd.mean_qdelay();
        let ss = n.s.stats();
        eprintln!(
            "prague (pacing {pacing}, paced_is_cwnd_limited {paced_is_cwnd_limited}): util {util:.3} mean q {q} max q {} ce {} events {} alpha {:?}",
            n.fwd.max_qdelay, ss.ce_packets, ss.congestion_events, ss.alpha
        );
        assert_eq!(ss.ecn_mode, "accecn");
        assert!(util > 0.9, "utilisation {util:.3}");
        assert!(q < Dur::from_millis(3), "mean queue delay {q}");
        assert_eq!(n.fwd.drops(), 0);
        assert!(ss.ce_packets > 0);
        assert_eq!(ss.retransmits, 0);
        // Once everything is acknowledged, the sender has heard of every CE mark.
        n.s.close(n.now);
        n.run_until(Time::from_secs(10), |n| n.s.stats().finished);
        assert!(n.s.stats().finished);
        assert_eq!(n.s.stats().ce_packets, n.r.stats().ce_packets);
        assert_eq!(n.r.stats().ce_packets, n.fwd.ce_marks);
    }
}

#[test]
fn reno_cubic_classic_ecn_full_rate() {
    for cc in ["reno", "cubic"] {
        // Step threshold ≥ BDP (20 ms), so that halving keeps the link busy.
        let mut n = net(cc, Rate::mbps(50), Dur::from_millis(10), |f| {
            f.ce_step = Some(Dur::from_millis(25))
        });
        let g = goodput(&mut n, Time::from_secs(3), Time::from_secs(10));
        let util = g / (50e6 * 1448.0 / 1514.0);
        let ss = n.s.stats();
        eprintln!(
            "{cc}: util {util:.3} mean q {} events {}",
            n.fwd.mean_qdelay(),
            ss.congestion_events
        );
        assert_eq!(ss.ecn_mode, "classic");
        assert!(util > 0.9, "{cc}: utilisation {util:.3}");
        assert_eq!(n.fwd.drops(), 0);
        assert_eq!(ss.retransmits, 0);
    }
}

#[test]
fn reno_random_loss_rate_near_mathis() {
    let p = 0.01;
    let mut n = net("reno", Rate::mbps(200), Dur::from_millis(10), |f| {
        f.loss = p;
        f.seed = 5;
    });
    let g = goodput(&mut n, Time::from_secs(5), Time::from_secs(40));
    let rtt = 0.02;
    let mathis = 1.22 * 1448.0 * 8.0 / (rtt * p.sqrt());
    let ratio = g / mathis;
    eprintln!(
        "reno p=1%: {:.2} Mb/s, Mathis {:.2} Mb/s, ratio {ratio:.2}",
        g / 1e6,
        mathis / 1e6
    );
    assert!((0.6..1.4).contains(&ratio), "ratio {ratio:.2}");
    assert_eq!(n.s.rto_count(), 0);
}

/// Hot path: a 5000-packet fixed window at 1 Gbit/s with 0.1 % random loss. Every byte
/// arrives, retransmissions match drops, and the endpoints handle packets fast.
#[test]
fn one_gbit_large_window_scoreboard_is_fast() {
    let (mut cc, _log) = MiniReno::new(EcnMode::Off);
    cc.fixed = true;
    cc.cwnd = 5000 * 1448;
    let total = 150_000_000u64;
    let s = TcpSender::new(
        TcpConfig {
            bytes: Some(total),
            ..Default::default()
        },
        Box::new(cc),
        Time::ZERO,
    );
    let r = TcpReceiver::new(TcpReceiverConfig::default());
    let fwd = PathCfg {
        rate: Rate::gbps(1),
        delay: Dur::from_millis(20),
        loss: 0.001,
        seed: 11,
        ..Default::default()
    };
    let rev = PathCfg {
        delay: Dur::from_millis(20),
        ..Default::default()
    };
    let mut n = Net::new(s, r, fwd, rev);
    let t0 = std::time::Instant::now();
    n.run_until(Time::from_secs(20), |n| n.s.stats().finished);
    let wall = t0.elapsed().as_secs_f64();
    let ss = n.s.stats();
    let pkts = ss.sent_packets + n.r.stats().sent_packets;
    eprintln!(
        "1 Gbit/s: sim {} wall {wall:.2} s, {pkts} packets, {:.2} M packets/s, drops {} rtx {}",
        n.now,
        pkts as f64 / wall / 1e6,
        n.fwd.drops(),
        ss.retransmits
    );
    assert!(ss.finished);
    assert_eq!(n.r.stats().delivered_bytes, total);
    let drops = n.fwd.drops() as f64;
    assert!((ss.retransmits as f64 - drops).abs() <= 0.2 * drops + 2.0);
    assert_eq!(n.s.rto_count(), 0);
    assert!(wall < 15.0, "too slow: {wall:.1} s");
}
