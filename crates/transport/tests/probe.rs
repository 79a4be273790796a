//! Probe flow tests: exact emission schedule, loss/reorder/duplicate accounting, OWD.

mod common;

use common::{Net, PathCfg};
use l4s_core::{Dur, Ecn, Rate, Time};
use l4s_transport::probe::*;
use l4s_transport::Endpoint;

fn run_sender(cfg: ProbeConfig, until: Time) -> Vec<(Time, ProbeHeader, u32, Ecn)> {
    let mut s = ProbeSender::new(cfg, Time::ZERO);
    let mut out = Vec::new();
    let mut now = Time::ZERO;
    loop {
        while let Some(t) = s.poll_transmit(now) {
            out.push((now, t.header, t.size, t.ecn));
        }
        match s.poll_timeout() {
            Some(t) if t < until => {
                assert!(t >= now);
                now = t;
                s.handle_timeout(now);
            }
            _ => break,
        }
    }
    out
}

#[test]
fn sender_emits_exactly_rate_times_duration() {
    let sent = run_sender(ProbeConfig::default(), Time::from_secs(10));
    assert_eq!(sent.len(), 640);
    for (k, (t, h, size, ecn)) in sent.iter().enumerate() {
        assert_eq!(h.seq, k as u64);
        assert_eq!(h.sent_at, *t);
        assert_eq!(*t, Time(k as u64 * 1_000_000_000 / 64));
        assert_eq!(*size, 200);
        assert_eq!(*ecn, Ecn::Ect1);
    }
    // 3 pkt/s does not divide 1 s: still exactly 30 in 10 s, no drift.
    let cfg = ProbeConfig {
        pps: 3,
        size: 100,
        ecn: Ecn::NotEct,
        start: Dur::from_millis(5),
        count: None,
    };
    let sent = run_sender(cfg, Time::from_secs(10));
    assert_eq!(sent.len(), 30);
    assert_eq!(sent[0].0, Time::from_millis(5));
    assert_eq!(sent[29].0, Time(5_000_000 + 29_000_000_000 / 3));
    // count limit and close.
    let sent = run_sender(
        ProbeConfig {
            count: Some(7),
            ..Default::default()
        },
        Time::from_secs(10),
    );
    assert_eq!(sent.len(), 7);
    let mut s = ProbeSender::new(ProbeConfig::default(), Time::ZERO);
    assert!(s.poll_transmit(Time::ZERO).is_some());
    s.close(Time::from_millis(20));
    assert!(s.poll_transmit(Time::from_millis(16)).is_some());
    assert!(s.poll_transmit(Time::from_millis(40)).is_none());
    assert_eq!(s.poll_timeout(), None);
    assert!(s.stats().finished);
    assert_eq!(s.stats().sent_packets, 2);
}

#[test]
fn receiver_counts_loss_reordering_duplicates_ce() {
    let mut r = ProbeReceiver::new();
    let h = |seq| ProbeHeader {
        seq,
        sent_at: Time::from_millis(seq),
    };
    let arrivals = [
        (0, Ecn::Ect1),
        (1, Ecn::Ce),
        (3, Ecn::Ect1),
        (2, Ecn::Ect1),
        (5, Ecn::Ce),
        (5, Ecn::Ce),
        (7, Ecn::Ect1),
    ];
    for (seq, ecn) in arrivals {
        r.handle_packet(Time::from_millis(seq + 10), &h(seq), 200, ecn);
    }
    assert_eq!(r.received(), 6);
    assert_eq!(r.duplicates(), 1);
    assert_eq!(r.reordered(), 1);
    assert_eq!(r.lost(), 2, "4 and 6 missing");
    assert_eq!(r.ce(), 2);
    assert_eq!(r.take_owd_sample(), Some(Dur::from_millis(10)));
    assert_eq!(r.take_owd_sample(), None);
    // Late arrival of 4 corrects the loss count.
    r.handle_packet(Time::from_millis(30), &h(4), 200, Ecn::Ect1);
    assert_eq!(r.lost(), 1);
    assert_eq!(r.reordered(), 2);
    let st = r.stats();
    assert_eq!((st.received_packets, st.lost_packets, st.ce_packets), (7, 1, 2));
    assert!(r.poll_transmit(Time::ZERO).is_none());
    assert_eq!(r.poll_timeout(), None);
    // A big jump forward and packets far in the past do not break the window.
    r.handle_packet(Time::from_secs(1), &h(100_000), 200, Ecn::Ect1);
    r.handle_packet(Time::from_secs(1), &h(6), 200, Ecn::Ect1);
    r.handle_packet(Time::from_secs(1), &h(99_999), 200, Ecn::Ect1);
    r.handle_packet(Time::from_secs(1), &h(99_999), 200, Ecn::Ect1);
    assert_eq!(r.received(), 9);
    assert_eq!(r.duplicates(), 2);
    r.handle_packet(
        Time::from_secs(1),
        &ProbeHeader {
            seq: u64::MAX,
            sent_at: Time::MAX,
        },
        200,
        Ecn::Ect1,
    );
    r.handle_packet(
        Time::from_secs(1),
        &ProbeHeader {
            seq: u64::MAX,
            sent_at: Time::MAX,
        },
        200,
        Ecn::Ect1,
    );
    assert_eq!(r.duplicates(), 3);
    let _ = r.lost();
}

#[test]
fn probe_through_lossy_path_counts_every_drop() {
    let s = ProbeSender::new(
        ProbeConfig {
            pps: 1000,
            ..Default::default()
        },
        Time::ZERO,
    );
    let r = ProbeReceiver::new();
    let fwd = PathCfg {
        rate: Rate::mbps(10),
        delay: Dur::from_millis(15),
        loss: 0.05,
        ce_prob: 0.1,
        seed: 9,
        ..Default::default()
    };
    let mut net = Net::new(s, r, fwd, PathCfg::default());
    net.run_until(Time::from_secs(10) - Dur(1), |_| false);
    net.s.close(net.now);
    net.run_until(Time::from_secs(11), |_| false);
    assert_eq!(net.s.sent(), 10_000);
    // Every drop below the highest sequence number received is counted as lost.
    let drops = net.fwd.drops();
    assert!(drops > 400, "{drops}");
    assert_eq!(net.r.received() + drops, 10_000);
    assert!(net.r.lost() <= drops && net.r.lost() + 5 >= drops);
    assert_eq!(net.r.ce(), net.fwd.ce_marks);
    assert_eq!(net.r.reordered(), 0);
    // One-way delay = propagation + serialisation of 200 B at 10 Mbit/s (no queue at 1.6 Mbit/s).
    assert_eq!(
        net.r.take_owd_sample(),
        Some(Dur::from_millis(15) + Rate::mbps(10).tx_time(200))
    );
}

#[test]
fn probe_config_deserializes() {
    let c: ProbeConfig = toml::from_str("pps = 100\necn = \"ect0\"\nstart = \"1s\"").unwrap();
    assert_eq!(c.pps, 100);
    assert_eq!(c.ecn, Ecn::Ect0);
    assert_eq!(c.start, Dur::from_secs(1));
    assert_eq!(c.size, 200);
    assert!(toml::from_str::<ProbeConfig>("rate = 1").is_err());
}
