//! Statistical properties of DualPI2 with a forced p': the mark and drop fractions that follow
//! from p_C = p'² and p_CL = k·p' (RFC 9332 §2.4) and from Linux's overload rule
//! (`dualpi2_classic_marking`, `dualpi2_scalable_marking`).

mod common;
use common::*;

use l4s_aqm::config::DualPi2Config;
use l4s_aqm::{DualPi2, Qdisc, QueueId};
use l4s_core::{Dur, Ecn, Rng, Time};

const N: usize = 100_000;

/// Push `N` packets of one codepoint through a DualPI2 with p' forced to `p`, keeping the
/// backlog at or above 2 MTU after every removal. Returns (marked, dropped, passed) and the
/// sequence of hit/miss per processed packet (hit = marked or dropped).
fn run(cfg: DualPi2Config, p: f64, ecn: Ecn, dscp: u8, seed: u64) -> (usize, usize, usize, Vec<bool>) {
    let mut q: DualPi2<TestPkt> = DualPi2::new(
        &DualPi2Config {
            step_thresh: Dur::MAX,
            limit: 1000,
            ..cfg
        },
        Rng::new(seed),
    );
    // 64 packets are queued before each dequeue, so that a run of drops inside one dequeue
    // call never brings the backlog below the 2-MTU floor.
    q.set_prob_f64(p);
    let mut drops = Vec::new();
    let (mut marked, mut dropped, mut passed) = (0, 0, 0);
    let mut seq = Vec::with_capacity(N);
    let mut sent = 0;
    while passed + dropped < N {
        while q.len_packets() < 64 {
            q.enqueue(
                TestPkt {
                    dscp,
                    ..pkt_id(ecn, sent)
                },
                Time::ZERO,
            );
            sent += 1;
        }
        drops.clear();
        let d = q.dequeue(Time::ZERO, &mut drops);
        for _ in &drops {
            if passed + dropped < N {
                dropped += 1;
                seq.push(true);
            }
        }
        if let Some(d) = d {
            if passed + dropped < N {
                passed += 1;
                if d.marked {
                    marked += 1;
                }
                seq.push(d.marked);
                assert_eq!(d.marked, d.pkt.ecn == Ecn::Ce && ecn != Ecn::Ce);
            }
        }
    }
    (marked, dropped, passed, seq)
}

fn frac(x: usize) -> f64 {
    x as f64 / N as f64
}

#[test]
fn classic_ect0_marks_p_squared() {
    let (m, d, _, _) = run(DualPi2Config::default(), 0.3, Ecn::Ect0, 0, 1);
    assert_eq!(d, 0);
    assert!((frac(m) - 0.09).abs() <= 0.005, "{}", frac(m));
}

#[test]
fn classic_not_ect_drops_p_squared() {
    let (m, d, _, _) = run(DualPi2Config::default(), 0.3, Ecn::NotEct, 0, 2);
    assert_eq!(m, 0);
    assert!((frac(d) - 0.09).abs() <= 0.005, "{}", frac(d));
}

#[test]
fn l4s_ect1_marks_k_p() {
    let (m, d, _, _) = run(DualPi2Config::default(), 0.3, Ecn::Ect1, 0, 3);
    assert_eq!(d, 0);
    assert!((frac(m) - 0.60).abs() <= 0.01, "{}", frac(m));
}

#[test]
fn l4s_not_ect_override_drops_k_p() {
    let cfg = DualPi2Config {
        l4s_dscp: vec![45],
        ..Default::default()
    };
    let (m, d, _, _) = run(cfg, 0.3, Ecn::NotEct, 45, 4);
    assert_eq!(m, 0);
    assert!((frac(d) - 0.60).abs() <= 0.01, "{}", frac(d));
}

#[test]
fn overload_l4s_drops_p_squared_and_marks_all_survivors() {
    let (m, d, passed, _) = run(DualPi2Config::default(), 0.6, Ecn::Ect1, 0, 5);
    assert!((frac(d) - 0.36).abs() <= 0.01, "{}", frac(d));
    assert_eq!(m, passed, "every survivor is marked");
}

#[test]
fn overload_classic_ect0_drops_and_never_marks() {
    let (m, d, _, _) = run(DualPi2Config::default(), 0.6, Ecn::Ect0, 0, 6);
    assert!((frac(d) - 0.36).abs() <= 0.01, "{}", frac(d));
    assert_eq!(m, 0);
}

#[test]
fn overflow_mode_never_reaches_overload() {
    // drop_overload = false: the timer caps p' at 1/k; with p' = 0.5 L4S is marked ~100 %.
    let (m, d, _, _) = run(
        DualPi2Config {
            drop_overload: false,
            ..Default::default()
        },
        0.5,
        Ecn::Ect1,
        0,
        7,
    );
    assert_eq!(d, 0);
    assert!(frac(m) > 0.999, "{}", frac(m));
}

/// With `recur`, hits after every prefix of n packets are within one of n·p (the accumulator
/// stays in [0, 1]), so over the whole run they are ⌊n·p⌋ or one off.
fn assert_recur_exact(seq: &[bool], p: f64) {
    let mut h = 0usize;
    for (i, hit) in seq.iter().enumerate() {
        h += *hit as usize;
        let np = (i + 1) as f64 * p;
        assert!(
            (h as f64 - np).abs() <= 1.0 + 1e-6,
            "after {} packets: {h} hits vs {np}",
            i + 1
        );
    }
    let np = (seq.len() as f64 * p).floor() as usize;
    assert!(h == np || h + 1 == np || h == np + 1, "{h} vs {np}");
}

#[test]
fn recur_counts_are_exact() {
    let cfg = DualPi2Config {
        recur: true,
        ..Default::default()
    };
    let (m, _, _, seq) = run(cfg.clone(), 0.3, Ecn::Ect0, 0, 8);
    assert_recur_exact(&seq, 0.09);
    assert!(m.abs_diff(9000) <= 1, "{m}");
    let (m, _, _, seq) = run(cfg.clone(), 0.3, Ecn::Ect1, 0, 9);
    assert_recur_exact(&seq, 0.6);
    assert!(m.abs_diff(60_000) <= 1, "{m}");
    let (_, d, _, seq) = run(cfg, 0.3, Ecn::NotEct, 0, 10);
    assert_recur_exact(&seq, 0.09);
    assert!(d.abs_diff(9000) <= 1, "{d}");
}

#[test]
fn statistics_counters_agree() {
    let mut q: DualPi2<TestPkt> = DualPi2::new(&DualPi2Config::default(), Rng::new(11));
    q.set_prob_f64(0.3);
    for i in 0..2000 {
        q.enqueue(pkt_id(if i % 2 == 0 { Ecn::Ect1 } else { Ecn::Ect0 }, i), Time::ZERO);
    }
    let mut drops = Vec::new();
    let mut marks = [0u64; 2];
    while let Some(d) = q.dequeue(Time::ZERO, &mut drops) {
        marks[(d.queue == QueueId::C) as usize] += d.marked as u64;
    }
    let st = q.stats();
    assert_eq!(st[0].1.marks, marks[0]);
    assert_eq!(st[1].1.marks, marks[1]);
    assert_eq!(st[0].1.dequeued_packets + st[1].1.dequeued_packets, 2000);
    assert_eq!(st[0].1.backlog_packets + st[1].1.backlog_packets, 0);
    assert_eq!(q.xstats().ecn_mark, marks[0] + marks[1]);
}
