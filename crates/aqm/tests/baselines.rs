//! FIFO, PIE, CoDel, FQ-CoDel and the classic-ECN AQM.

mod common;
use common::*;

use l4s_aqm::codel::control_law;
use l4s_aqm::config::{ClassicEcnConfig, CodelConfig, FifoConfig, FqCodelConfig, PieConfig};
use l4s_aqm::{ClassicEcn, Codel, DropReason, Enqueued, Fifo, FqCodel, Pie, Qdisc, QueueId};
use l4s_core::{Dur, Ecn, Rng, Time};

fn is_dropped(e: &Enqueued<TestPkt>) -> bool {
    matches!(e, Enqueued::Dropped(d) if d.reason == DropReason::Overlimit)
}

// ---- FIFO --------------------------------------------------------------------------------

#[test]
fn fifo_packet_limit() {
    let mut q: Fifo<TestPkt> = Fifo::new(&FifoConfig {
        limit: 5,
        ..Default::default()
    });
    for _ in 0..5 {
        assert!(!is_dropped(&q.enqueue(pkt(Ecn::NotEct), Time::ZERO)));
    }
    assert!(is_dropped(&q.enqueue(pkt(Ecn::NotEct), Time::ZERO)));
    assert_eq!(q.len_packets(), 5);
    let mut drops = Vec::new();
    q.dequeue(Time::ZERO, &mut drops).unwrap();
    assert!(!is_dropped(&q.enqueue(pkt(Ecn::NotEct), Time::ZERO)));
    assert_eq!(q.stats()[0].1.overlimit_drops, 1);
    assert_eq!(q.stats()[0].1.drops, 1);
}

/// `enqueue_dequeue` on an empty FIFO passes the packet through with the counts, the
/// result and the drops of an enqueue then a dequeue at the same time; on a FIFO with a
/// backlog it releases the head, as they do.
#[test]
fn fifo_enqueue_dequeue_is_enqueue_then_dequeue() {
    let configs = [
        FifoConfig::default(),
        // A byte limit below the packet: refused even when empty.
        FifoConfig {
            limit: 10,
            limit_bytes: Some(999),
            limit_time: None,
        },
        FifoConfig {
            limit: 2,
            limit_bytes: Some(2000),
            limit_time: Some(Dur::from_millis(1)),
        },
    ];
    let mut sent_refused = Vec::new();
    for cfg in configs {
        let (mut fast, mut slow): (Fifo<TestPkt>, Fifo<TestPkt>) = (Fifo::new(&cfg), Fifo::new(&cfg));
        let (mut d_fast, mut d_slow) = (Vec::new(), Vec::new());
        // Empty at 0 and 5 ms; then with one packet queued (3 ms in), then with two.
        let plan: [(u64, usize); 4] = [(0, 0), (5, 0), (8, 1), (9, 2)];
        for (i, &(t, backlog)) in plan.iter().enumerate() {
            let now = ms(t);
            for k in 0..backlog {
                let p = TestPkt {
                    len: 1000,
                    ..pkt_id(Ecn::Ect1, 100 * i as u64 + k as u64)
                };
                let (a, b) = (fast.enqueue(p.clone(), ms(t - 3)), slow.enqueue(p, ms(t - 3)));
                assert_eq!(queued(&a), queued(&b));
            }
            let p = TestPkt {
                len: 1000,
                ..pkt_id(Ecn::Ect0, i as u64)
            };
            let got = fast.enqueue_dequeue(p.clone(), now, &mut d_fast);
            let want = match slow.enqueue(p, now) {
                Enqueued::Queued { .. } => Ok(slow.dequeue(now, &mut d_slow)),
                Enqueued::Dropped(d) => Err(d),
            };
            let sum = |r: &Result<Option<l4s_aqm::Dequeued<TestPkt>>, l4s_aqm::Dropped<TestPkt>>| match r {
                Ok(Some(d)) => format!("sent {} after {} marked {}", d.pkt.id, d.sojourn, d.marked),
                Ok(None) => "none".to_string(),
                Err(d) => format!("dropped {} {:?}", d.pkt.id, d.reason),
            };
            assert_eq!(sum(&got), sum(&want), "{cfg:?} at {t} ms");
            assert_eq!(fast.stats(), slow.stats(), "{cfg:?} at {t} ms");
            assert_eq!(
                (fast.len_packets(), fast.len_bytes()),
                (slow.len_packets(), slow.len_bytes())
            );
            while let (Some(a), Some(b)) = (fast.dequeue(now, &mut d_fast), slow.dequeue(now, &mut d_slow)) {
                assert_eq!((a.pkt.id, a.sojourn), (b.pkt.id, b.sojourn));
            }
            assert_eq!(fast.len_packets() + slow.len_packets(), 0);
        }
        assert!(d_fast.is_empty() && d_slow.is_empty());
        let st = fast.stats()[0].1;
        sent_refused.push((st.dequeued_packets, st.overlimit_drops));
    }
    // All sent; all refused by the byte limit; the two that came behind a head waiting
    // beyond the time limit refused.
    assert_eq!(sent_refused, [(7, 0), (0, 7), (5, 2)]);
}

#[test]
fn fifo_byte_limit() {
    let mut q: Fifo<TestPkt> = Fifo::new(&FifoConfig {
        limit: 1000,
        limit_bytes: Some(3000),
        limit_time: None,
    });
    let p = TestPkt {
        len: 1000,
        ..pkt(Ecn::Ect0)
    };
    for _ in 0..3 {
        assert!(!is_dropped(&q.enqueue(p.clone(), Time::ZERO)));
    }
    assert_eq!(q.len_bytes(), 3000);
    assert!(is_dropped(&q.enqueue(TestPkt { len: 1, ..p.clone() }, Time::ZERO)));
    let mut drops = Vec::new();
    q.dequeue(Time::ZERO, &mut drops).unwrap();
    assert!(is_dropped(&q.enqueue(TestPkt { len: 1001, ..p.clone() }, Time::ZERO)));
    assert!(!is_dropped(&q.enqueue(p, Time::ZERO)));
}

#[test]
fn fifo_time_limit_uses_head_sojourn() {
    let mut q: Fifo<TestPkt> = Fifo::new(&FifoConfig {
        limit_time: Some(Dur::from_millis(10)),
        ..Default::default()
    });
    assert!(!is_dropped(&q.enqueue(pkt(Ecn::NotEct), Time::ZERO)));
    assert!(!is_dropped(&q.enqueue(pkt(Ecn::NotEct), Time(9_999_999))));
    assert!(is_dropped(&q.enqueue(pkt(Ecn::NotEct), ms(10))));
    let mut drops = Vec::new();
    let d = q.dequeue(ms(10), &mut drops).unwrap();
    assert_eq!(d.sojourn, Dur::from_millis(10));
    assert!(!d.marked);
    // The new head arrived at 9.999999 ms.
    assert!(!is_dropped(&q.enqueue(pkt(Ecn::NotEct), ms(10))));
    assert!(is_dropped(&q.enqueue(pkt(Ecn::NotEct), Time(19_999_999))));
}

// ---- PIE ---------------------------------------------------------------------------------

#[test]
fn pie_probability_rises_with_standing_queue_and_decays_when_empty() {
    let mut q: Pie<TestPkt> = Pie::new(
        &PieConfig {
            limit: 100_000,
            ..Default::default()
        },
        Rng::new(3),
    );
    let mut drops = Vec::new();
    // A 1 packet/ms link with 2 arrivals/ms: the queue (and sojourn) keeps growing.
    let mut samples = Vec::new();
    let mut t = Time::ZERO;
    for step in 1..=600u64 {
        t = ms(step);
        q.enqueue(pkt(Ecn::NotEct), t);
        q.enqueue(pkt(Ecn::NotEct), t);
        q.dequeue(t, &mut drops);
        while q.next_timeout().unwrap() <= t {
            let nt = q.next_timeout().unwrap();
            q.on_timeout(nt);
            samples.push(q.probability().unwrap());
        }
    }
    assert!(q.qdelay() > Dur::from_millis(15));
    // Once the sojourn exceeds the target, p rises at every update.
    let first_rise = samples.iter().position(|p| *p > 0.0).unwrap();
    assert!(first_rise < 5, "{first_rise}");
    for w in samples[first_rise..].windows(2) {
        assert!(w[1] > w[0], "{samples:?}");
    }
    let peak = *samples.last().unwrap();
    assert!(peak > 0.1, "{peak}");
    // Drain the queue, then no traffic: p decays at every update down to 0.
    while q.dequeue(t, &mut drops).is_some() {}
    let mut prev = peak;
    let mut reached_zero = false;
    for _ in 0..2000 {
        let nt = q.next_timeout().unwrap();
        q.on_timeout(nt);
        let p = q.probability().unwrap();
        assert!(p <= prev);
        if prev > 0.0 {
            assert!(p < prev);
        }
        prev = p;
        if p == 0.0 {
            reached_zero = true;
            break;
        }
    }
    assert!(reached_zero);
}

#[test]
fn pie_marks_ect_below_ten_percent_and_drops_above() {
    for (ecn_on, p, ecn, expect_marks) in [
        (true, 0.05, Ecn::Ect0, true),
        (true, 0.05, Ecn::Ect1, true),
        (true, 0.05, Ecn::NotEct, false),
        (true, 0.15, Ecn::Ect0, false),
        (false, 0.05, Ecn::Ect0, false),
    ] {
        let mut q: Pie<TestPkt> = Pie::new(
            &PieConfig {
                limit: 100_000,
                ecn: ecn_on,
                ..Default::default()
            },
            Rng::new(4),
        );
        let mut drops = Vec::new();
        for _ in 0..100 {
            q.enqueue(pkt(Ecn::NotEct), Time::ZERO);
        }
        // One dequeue with a 20 ms sojourn sets qdelay above target/2.
        q.dequeue(ms(20), &mut drops);
        q.set_burst_allowance(Dur::ZERO);
        q.set_prob(p);
        let (mut marks, mut cong_drops) = (0, 0);
        let n = 20_000;
        for _ in 0..n {
            match q.enqueue(pkt(ecn), ms(20)) {
                Enqueued::Queued { marked, .. } => marks += marked as usize,
                Enqueued::Dropped(d) => {
                    assert_eq!(d.reason, DropReason::Congestion);
                    cong_drops += 1;
                }
            }
        }
        // RFC 8033 §4.4 de-randomisation: no signal until accu_prob reaches 0.85, then one with
        // probability p per packet: a mean gap of about 0.85/p + 1/p packets.
        let signals = (marks + cong_drops) as f64 / n as f64;
        let want = p / 1.85;
        assert!(
            (signals - want).abs() < 0.15 * want,
            "{ecn_on} {p} {ecn:?}: {signals} vs {want}"
        );
        if expect_marks {
            assert_eq!(cong_drops, 0);
        } else {
            assert_eq!(marks, 0);
        }
    }
}

#[test]
fn pie_burst_allowance_protects_initial_burst() {
    let mut q: Pie<TestPkt> = Pie::new(
        &PieConfig {
            limit: 100_000,
            ..Default::default()
        },
        Rng::new(5),
    );
    assert_eq!(q.burst_allowance(), Dur::from_millis(150));
    q.set_prob(0.5);
    for _ in 0..1000 {
        assert!(matches!(
            q.enqueue(pkt(Ecn::NotEct), Time::ZERO),
            Enqueued::Queued { .. }
        ));
    }
}

// ---- CoDel -------------------------------------------------------------------------------

/// 50 packets are queued at 1 ms spacing, then each ms one arrives and one is dequeued: every
/// packet has a 50 ms sojourn (minus 1 ms per packet CoDel discards). Returns the drop times.
fn codel_run(ecn: bool, pkt_ecn: Ecn, until_ms: u64) -> (Vec<Time>, Vec<Time>) {
    let mut q: Codel<TestPkt> = Codel::new(&CodelConfig {
        ecn,
        ..Default::default()
    });
    for i in 0..50 {
        q.enqueue(pkt(pkt_ecn), ms(i));
    }
    let mut drops = Vec::new();
    let (mut drop_times, mut mark_times) = (Vec::new(), Vec::new());
    for t in 50..until_ms {
        q.enqueue(pkt(pkt_ecn), ms(t));
        drops.clear();
        let d = q.dequeue(ms(t), &mut drops).unwrap();
        for _ in &drops {
            drop_times.push(ms(t));
        }
        if d.marked {
            mark_times.push(ms(t));
        }
    }
    (drop_times, mark_times)
}

#[test]
fn codel_waits_a_full_interval_then_follows_control_law() {
    let (drops, marks) = codel_run(false, Ecn::NotEct, 600);
    assert!(marks.is_empty());
    // Above target from the first dequeue at 50 ms: first_above_time = 150 ms; dropping starts
    // at the first dequeue strictly after it.
    assert_eq!(drops[0], ms(151));
    // Drop k+1 is due interval/sqrt(k) after drop k's schedule; dequeues happen every 1 ms.
    let mut sched = drops[0];
    for (k, w) in drops.windows(2).enumerate() {
        sched = control_law(sched, Dur::from_millis(100), k as u32 + 1);
        assert!(
            w[1] >= sched && w[1] < sched + Dur::from_millis(1),
            "drop {}: {} vs {}",
            k + 2,
            w[1],
            sched
        );
    }
    assert!(drops.len() >= 6, "{}", drops.len());
    // Spacings shrink as 100/sqrt(count) ms: 100, 70.7, 57.7, 50, ...
    let gaps: Vec<f64> = drops.windows(2).map(|w| (w[1] - w[0]).as_millis_f64()).collect();
    for (k, g) in gaps.iter().enumerate() {
        let want = 100.0 / ((k + 1) as f64).sqrt();
        assert!((g - want).abs() <= 1.0, "gap {k}: {g} vs {want}");
    }
}

#[test]
fn codel_marks_instead_of_dropping_with_ecn() {
    let (drops, marks) = codel_run(true, Ecn::Ect0, 600);
    assert!(drops.is_empty());
    assert_eq!(marks[0], ms(151));
    // Marking does not shrink the queue, so the schedule is exactly the control law.
    let mut sched = marks[0];
    for (k, w) in marks.windows(2).enumerate() {
        sched = control_law(sched, Dur::from_millis(100), k as u32 + 1);
        assert!(w[1] >= sched && w[1] < sched + Dur::from_millis(1));
    }
    // Not-ECT packets are still dropped with ECN on.
    let (drops, marks) = codel_run(true, Ecn::NotEct, 600);
    assert!(marks.is_empty() && drops[0] == ms(151));
}

#[test]
fn codel_never_drops_below_target() {
    let mut q: Codel<TestPkt> = Codel::new(&CodelConfig::default());
    let mut drops = Vec::new();
    for t in 0..5000u64 {
        q.enqueue(pkt(Ecn::NotEct), Time::from_micros(t * 1000));
        q.enqueue(pkt(Ecn::NotEct), Time::from_micros(t * 1000));
        q.dequeue(Time::from_micros(t * 1000 + 4999), &mut drops);
        q.dequeue(Time::from_micros(t * 1000 + 4999), &mut drops);
    }
    assert!(drops.is_empty());
}

// ---- FQ-CoDel ----------------------------------------------------------------------------

#[test]
fn fq_codel_isolates_sparse_flow() {
    let mut q: FqCodel<TestPkt> = FqCodel::new(&FqCodelConfig::default());
    let (bulk, sparse) = (0u32, 0x8000_0000u32);
    assert_ne!(q.flow_index(bulk), q.flow_index(sparse));
    for i in 0..1000 {
        q.enqueue(
            TestPkt {
                hash: bulk,
                ..pkt_id(Ecn::NotEct, i)
            },
            Time::ZERO,
        );
    }
    let tx = Dur::from_nanos(121_120); // 1514 B at 100 Mbit/s
    let mut drops = Vec::new();
    let mut t = Time::ZERO;
    let mut next_sparse = ms(5);
    let (mut sparse_max, mut bulk_sojourns, mut sparse_n) = (Dur::ZERO, Vec::new(), 0);
    while t < ms(500) {
        if t >= next_sparse {
            q.enqueue(
                TestPkt {
                    hash: sparse,
                    ..pkt(Ecn::NotEct)
                },
                t,
            );
            next_sparse += Dur::from_millis(10);
        }
        // Keep the bulk flow backlogged.
        if q.flow_len(q.flow_index(bulk)) < 900 {
            q.enqueue(
                TestPkt {
                    hash: bulk,
                    ..pkt(Ecn::NotEct)
                },
                t,
            );
        }
        if let Some(d) = q.dequeue(t, &mut drops) {
            assert_eq!(d.queue, QueueId::Single);
            if d.pkt.hash == sparse {
                sparse_max = sparse_max.max(d.sojourn);
                sparse_n += 1;
            } else {
                bulk_sojourns.push(d.sojourn);
            }
        }
        t += tx;
    }
    assert!(sparse_n >= 45, "{sparse_n}");
    // A sparse packet waits at most for the packet in transmission (one slot of 121 us).
    assert!(sparse_max <= tx, "{sparse_max}");
    bulk_sojourns.sort();
    let median = bulk_sojourns[bulk_sojourns.len() / 2];
    assert!(median > Dur::from_millis(20), "{median}");
    assert!(!drops.is_empty(), "CoDel should act on the bulk queue");
    assert!(drops.iter().all(|d| d.pkt.hash == bulk));
}

#[test]
fn fq_codel_drr_equal_bytes() {
    let mut q: FqCodel<TestPkt> = FqCodel::new(&FqCodelConfig::default());
    let (a, b) = (1u32 << 20, 3u32 << 30);
    for _ in 0..2000 {
        q.enqueue(
            TestPkt {
                hash: a,
                len: 1514,
                ..pkt(Ecn::NotEct)
            },
            Time::ZERO,
        );
    }
    for _ in 0..8000 {
        q.enqueue(
            TestPkt {
                hash: b,
                len: 300,
                ..pkt(Ecn::NotEct)
            },
            Time::ZERO,
        );
    }
    let mut drops = Vec::new();
    let (mut ba, mut bb) = (0i64, 0i64);
    let quantum = 1514i64;
    for i in 0..3000 {
        let d = q.dequeue(Time::ZERO, &mut drops).unwrap();
        if d.pkt.hash == a {
            ba += d.pkt.len as i64;
            // Right after flow A's packet its round is done: B has had the same quantum count.
            assert!((ba - bb).abs() <= quantum, "dequeue {i}: {ba} vs {bb}");
        } else {
            bb += d.pkt.len as i64;
        }
        assert!((ba - bb).abs() <= quantum + 1514, "dequeue {i}: {ba} vs {bb}");
    }
    assert!(ba > 400_000 && bb > 400_000);
    assert!((ba - bb).abs() <= quantum, "{ba} vs {bb}");
    assert!(drops.is_empty());
}

#[test]
fn fq_codel_overflow_drops_from_fattest_flow() {
    let mut q: FqCodel<TestPkt> = FqCodel::new(&FqCodelConfig {
        limit: 100,
        ..Default::default()
    });
    let (fat, thin) = (0u32, 0x8000_0000u32);
    for i in 0..90 {
        q.enqueue(
            TestPkt {
                hash: fat,
                ..pkt_id(Ecn::NotEct, i)
            },
            Time::ZERO,
        );
    }
    for i in 0..10 {
        q.enqueue(
            TestPkt {
                hash: thin,
                ..pkt_id(Ecn::NotEct, 1000 + i)
            },
            Time::ZERO,
        );
    }
    // The 101st packet (thin flow) is accepted; the fat flow loses packets from its head
    // (half of its backlog, at most 64 packets).
    assert!(matches!(
        q.enqueue(
            TestPkt {
                hash: thin,
                ..pkt_id(Ecn::NotEct, 2000)
            },
            Time::ZERO
        ),
        Enqueued::Queued { .. }
    ));
    let mut pending = Vec::new();
    q.drain_enqueue_drops(&mut pending);
    assert_eq!(pending.len(), 45);
    assert!(pending
        .iter()
        .enumerate()
        .all(|(i, d)| d.pkt.id == i as u64 && d.reason == DropReason::Overlimit));
    assert_eq!(q.len_packets(), 56);
    assert_eq!(q.flow_len(q.flow_index(thin)), 11);
    assert_eq!(q.stats()[0].1.overlimit_drops, 45);
}

#[test]
fn fq_codel_ce_threshold_marks_ect() {
    let mut q: FqCodel<TestPkt> = FqCodel::new(&FqCodelConfig {
        ce_threshold: Some(Dur::from_millis(1)),
        ..Default::default()
    });
    for _ in 0..3 {
        q.enqueue(pkt(Ecn::Ect1), Time::ZERO);
    }
    q.enqueue(pkt(Ecn::NotEct), Time::ZERO);
    let mut drops = Vec::new();
    let a = q.dequeue(Time(1_000_000), &mut drops).unwrap();
    assert!(!a.marked);
    let b = q.dequeue(Time(1_000_001), &mut drops).unwrap();
    assert!(b.marked && b.pkt.ecn == Ecn::Ce);
    q.dequeue(Time(1_000_001), &mut drops).unwrap();
    let c = q.dequeue(ms(2), &mut drops).unwrap();
    assert!(!c.marked && c.pkt.ecn == Ecn::NotEct);
    assert!(drops.is_empty());
}

// ---- classic-ecn -------------------------------------------------------------------------

#[test]
fn classic_ecn_marks_ect1_like_ect0() {
    let mut res = Vec::new();
    for ecn in [Ecn::Ect0, Ecn::Ect1, Ecn::NotEct] {
        let mut q: ClassicEcn<TestPkt> = ClassicEcn::new(
            &ClassicEcnConfig {
                limit: 100_000,
                ..Default::default()
            },
            Rng::new(7),
        );
        q.set_base_prob(0.4); // signal probability 0.16
        let n = 50_000;
        for _ in 0..n + 64 {
            assert_eq!(queued(&q.enqueue(pkt(ecn), Time::ZERO)), Some(QueueId::Single));
        }
        let mut drops = Vec::new();
        let mut marks = 0;
        let mut seen = 0;
        while seen < n {
            let d = q.dequeue(Time::ZERO, &mut drops).unwrap();
            marks += d.marked as usize;
            seen = q.stats()[0].1.dequeued_packets as usize + drops.len();
        }
        let m = marks as f64 / seen as f64;
        let dr = drops.len() as f64 / seen as f64;
        res.push((m, dr));
    }
    let (m0, d0) = res[0];
    let (m1, d1) = res[1];
    let (mn, dn) = res[2];
    assert!((m0 - 0.16).abs() < 0.01 && d0 == 0.0, "{m0} {d0}");
    assert!((m1 - 0.16).abs() < 0.01 && d1 == 0.0, "{m1} {d1}");
    assert!((m1 - m0).abs() < 0.01);
    assert!(mn == 0.0 && (dn - 0.16).abs() < 0.01, "{mn} {dn}");
}

#[test]
fn classic_ecn_pi_controls_sojourn() {
    let mut q: ClassicEcn<TestPkt> = ClassicEcn::new(&ClassicEcnConfig::default(), Rng::new(8));
    q.enqueue(pkt(Ecn::Ect1), Time::ZERO);
    // A standing 1-packet queue older than the target raises p' at every update.
    let mut prev = 0.0;
    for n in 2..8u64 {
        q.on_timeout(ms(16 * n));
        assert!(q.base_prob() > prev);
        prev = q.base_prob();
    }
    assert!((q.probability().unwrap() - prev * prev).abs() < 1e-12);
    let mut drops = Vec::new();
    q.dequeue(ms(400), &mut drops).unwrap();
    for n in 26..200u64 {
        q.on_timeout(ms(16 * n));
    }
    assert_eq!(q.base_prob(), 0.0);
    // Overload (p'² > 25 %): ECN disabled, ECT dropped.
    q.set_base_prob(0.8);
    for _ in 0..1000 {
        q.enqueue(pkt(Ecn::Ect1), Time::ZERO);
    }
    let mut marked = 0;
    while let Some(d) = q.dequeue(Time::ZERO, &mut drops) {
        marked += d.marked as usize;
    }
    assert_eq!(marked, 0);
    assert!(drops.len() > 500);
}
