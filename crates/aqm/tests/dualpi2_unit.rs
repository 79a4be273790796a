//! Deterministic properties of DualPI2, checked against Linux `sch_dualpi2.c` (v6.18) and the
//! RFC 9332 Appendix A pseudo-code (sections 1–10 and 12 below; setting CE on the wire, 11,
//! is in `ecn_rewrite.rs`).

mod common;
use common::*;

use l4s_aqm::config::{gain_nl_to_internal, DualPi2Config, EcnMask};
use l4s_aqm::dualpi2::{pi2_update_linux, pi2_update_rfc, Classifier, Step, TrafficClass};
use l4s_aqm::{DropReason, DualPi2, Enqueued, Qdisc, QueueId, MAX_PROB};
use l4s_core::{Dur, Ecn, Rng, Time};

fn dp(cfg: DualPi2Config) -> DualPi2<TestPkt> {
    DualPi2::new(&cfg, Rng::new(1))
}

const ALL_ECN: [Ecn; 4] = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce];

// ---- 1. Classification -----------------------------------------------------------------

#[test]
fn classification_table_for_every_mask() {
    // Rows: Not-ECT, ECT(1), ECT(0), CE; masks as Linux `TC_DUALPI2_ECN_MASK_*` (mask 1:
    // RFC 9331 §5.1).
    let expect = [
        (EcnMask::L4sEct, [QueueId::C, QueueId::L, QueueId::C, QueueId::L]),
        (EcnMask::ClaEct, [QueueId::C, QueueId::C, QueueId::L, QueueId::L]),
        (EcnMask::AnyEct, [QueueId::C, QueueId::L, QueueId::L, QueueId::L]),
    ];
    for (mask, queues) in expect {
        let mut q = dp(DualPi2Config {
            ecn_mask: mask,
            ..Default::default()
        });
        for (ecn, want) in ALL_ECN.iter().zip(queues) {
            let got = queued(&q.enqueue(pkt(*ecn), Time::ZERO));
            assert_eq!(got, Some(want), "mask {mask:?} ecn {ecn:?}");
        }
    }
}

#[test]
fn classification_override() {
    let c = Classifier::new(EcnMask::L4sEct, &[], &[], &[]);
    for ecn in [Ecn::NotEct, Ecn::Ect0] {
        assert_eq!(c.classify_with_override(ecn, Some(1)), TrafficClass::L4s);
        assert_eq!(c.classify_with_override(ecn, Some(2)), TrafficClass::Llll);
        assert_eq!(c.classify_with_override(ecn, Some(7)), TrafficClass::Classic);
        assert_eq!(c.classify_with_override(ecn, Some(0)), TrafficClass::Classic);
        assert_eq!(c.classify_with_override(ecn, None), TrafficClass::Classic);
    }
    assert_eq!(c.classify_with_override(Ecn::Ect1, Some(0)), TrafficClass::L4s);
    assert_eq!(c.classify_with_override(Ecn::Ect1, Some(2)), TrafficClass::L4s);
}

#[test]
fn classification_operator_rules() {
    let cfg = DualPi2Config {
        l4s_dscp: vec![45],
        l4s_ports: vec![53],
        llll_dscp: vec![46],
        ..Default::default()
    };
    let c = Classifier::new(cfg.ecn_mask, &cfg.l4s_dscp, &cfg.llll_dscp, &cfg.l4s_ports);
    let mk = |ecn, dscp, port| TestPkt { dscp, port, ..pkt(ecn) };
    assert_eq!(c.classify(&mk(Ecn::NotEct, 45, None)), TrafficClass::L4s);
    assert_eq!(c.classify(&mk(Ecn::Ect0, 0, Some(53))), TrafficClass::L4s);
    assert_eq!(c.classify(&mk(Ecn::NotEct, 46, Some(53))), TrafficClass::Llll);
    assert_eq!(c.classify(&mk(Ecn::NotEct, 0, Some(80))), TrafficClass::Classic);
    assert_eq!(c.classify(&mk(Ecn::Ect0, 44, None)), TrafficClass::Classic);
    // ECT(1) is L4S whatever the rules say.
    assert_eq!(c.classify(&mk(Ecn::Ect1, 46, None)), TrafficClass::L4s);
    let mut q = dp(cfg);
    assert_eq!(
        queued(&q.enqueue(mk(Ecn::NotEct, 45, None), Time::ZERO)),
        Some(QueueId::L)
    );
    assert_eq!(
        queued(&q.enqueue(mk(Ecn::NotEct, 0, Some(53)), Time::ZERO)),
        Some(QueueId::L)
    );
    assert_eq!(
        queued(&q.enqueue(mk(Ecn::NotEct, 0, Some(54)), Time::ZERO)),
        Some(QueueId::C)
    );
}

// ---- 2. Defaults -------------------------------------------------------------------------

#[test]
fn linux_defaults() {
    let q = dp(DualPi2Config::default());
    let p = q.params();
    assert_eq!(p.limit, 10_000);
    assert_eq!(p.target, Dur(15_000_000));
    assert_eq!(p.tupdate, Dur(16_000_000));
    assert_eq!((p.alpha_nl, p.beta_nl), (41, 819));
    assert_eq!((p.alpha_i, p.beta_i), (44, 879));
    assert_eq!((gain_nl_to_internal(41), gain_nl_to_internal(819)), (44, 879));
    assert_eq!(p.step, Step::Time(Dur(1_000_000)));
    assert_eq!(p.min_qlen_step, 0);
    assert_eq!(p.coupling_factor, 2);
    assert!(p.drop_overload);
    assert!(!p.drop_early);
    assert_eq!((p.wc, p.wl), (10, 90));
    assert_eq!(p.credit_init, -80 * 1514);
    assert_eq!(q.credit(), -121_120);
    assert_eq!(p.memory_limit, 30_280_000);
    assert_eq!(p.mtu, 1514);
    assert!((p.alpha_hz() - 0.160071).abs() < 1e-6, "{}", p.alpha_hz());
    assert!((p.beta_hz() - 3.197783).abs() < 1e-6, "{}", p.beta_hz());
    assert_eq!(q.next_timeout(), Some(Time(16_000_000)));
    assert_eq!(q.prob(), 0);
}

#[test]
fn rtt_derivation_overrides_gains() {
    let cfg = DualPi2Config {
        max_rtt: Some(Dur::from_millis(100)),
        typical_rtt: Some(Dur::from_millis(15)),
        ..Default::default()
    };
    cfg.validate().unwrap();
    let d = l4s_aqm::derive_from_rtt(cfg.max_rtt, cfg.typical_rtt).unwrap().unwrap();
    assert_eq!(d.target, Dur::from_millis(15));
    assert_eq!(d.tupdate, Dur::from_millis(15));
    assert!((d.alpha - 0.15).abs() < 1e-12 && (d.beta - 3.0).abs() < 1e-12);
    let p = dp(cfg).params().clone();
    assert_eq!((p.target, p.tupdate), (Dur::from_millis(15), Dur::from_millis(15)));
    assert_eq!((p.alpha_nl, p.beta_nl), (38, 768)); // 0.15×256 = 38.4, 3.0×256 = 768
                                                    // Only max_rtt: typical = max/6.
    let d = l4s_aqm::derive_from_rtt(Some(Dur::from_millis(60)), None)
        .unwrap()
        .unwrap();
    assert_eq!(d.typical_rtt, Dur::from_millis(10));
    // Only typical: max = typical × 6.
    let d = l4s_aqm::derive_from_rtt(None, Some(Dur::from_millis(10)))
        .unwrap()
        .unwrap();
    assert_eq!(d.max_rtt, Dur::from_millis(60));
    assert_eq!(
        l4s_aqm::derive_from_rtt(Some(Dur::from_millis(10)), Some(Dur::from_millis(20)))
            .unwrap_err()
            .key,
        "typical_rtt"
    );
    assert_eq!(
        l4s_aqm::derive_from_rtt(Some(Dur::from_secs(100)), None)
            .unwrap_err()
            .key,
        "max_rtt"
    );
}

// ---- 3. PI golden vectors ----------------------------------------------------------------

#[test]
fn pi_golden_vector_linux_integer() {
    let mut q = dp(DualPi2Config::default());
    assert_eq!(queued(&q.enqueue(pkt(Ecn::NotEct), ms(24))), Some(QueueId::C));
    let expect: [u32; 10] = [
        0, 105062500, 331000000, 567937500, 815875000, 1074812500, 1344750000, 1625687500, 1917625000, 2220562500,
    ];
    // Tick 1 (16 ms) precedes the arrival: the saturating `now − ts` gives qdelay 0, exactly
    // as if the packet were not there yet.
    let mut got = Vec::new();
    for n in 1..=10u64 {
        assert_eq!(q.next_timeout(), Some(ms(16 * n)));
        q.on_timeout(ms(16 * n));
        got.push(q.prob());
    }
    assert_eq!(got, expect);
    assert!((q.prob() as f64 / MAX_PROB as f64 - 0.517015).abs() < 1e-6);
    assert!(q.overloaded());
    assert_eq!(q.next_timeout(), Some(ms(160 + 16)));
}

#[test]
fn pi_golden_vector_pure_function() {
    let mut p = 0u32;
    let mut last = Dur::ZERO;
    let mut got = Vec::new();
    for n in 1..=10u64 {
        let qd = Dur::from_millis((16 * n).saturating_sub(24));
        p = pi2_update_linux(p, qd, last, Dur::from_millis(15), 44, 879, true, 2);
        last = qd;
        got.push(p);
    }
    assert_eq!(
        got,
        [0, 105062500, 331000000, 567937500, 815875000, 1074812500, 1344750000, 1625687500, 1917625000, 2220562500]
    );
}

#[test]
fn pi_golden_vector_rfc_float() {
    let expect = [
        0.0, 0.02448, 0.07712, 0.13232, 0.19008, 0.25040, 0.31328, 0.37872, 0.44672, 0.51728,
    ];
    let mut p = 0.0;
    let mut prev = 0.0;
    for (i, want) in expect.iter().enumerate() {
        let n = i as f64 + 1.0;
        let qd = ((16.0 * n - 24.0) / 1000.0f64).max(0.0);
        p = pi2_update_rfc(p, qd, prev, 0.015, 0.16, 3.2);
        prev = qd;
        assert!((p - want).abs() < 1e-9, "tick {}: {p} vs {want}", i + 1);
    }
}

// ---- 4. Decay ----------------------------------------------------------------------------

#[test]
fn decay_reaches_zero_after_209_ticks() {
    let mut q = dp(DualPi2Config::default());
    q.set_prob(MAX_PROB / 2);
    let mut prev = q.prob();
    for tick in 1..=400u64 {
        q.on_timeout(ms(16 * tick));
        if prev > 0 {
            assert_eq!(prev - q.prob(), prev.min(10_312_500), "tick {tick}");
        }
        if tick == 208 {
            assert!(q.prob() > 0);
        }
        if tick >= 209 {
            assert_eq!(q.prob(), 0, "tick {tick}");
        }
        prev = q.prob();
    }
    assert_eq!((0.5f64 / 0.0024).ceil() as u32, 209);
}

// ---- 5. Saturation -----------------------------------------------------------------------

#[test]
fn saturation_without_drop_overload_caps_at_max_over_k() {
    let mut q = dp(DualPi2Config {
        drop_overload: false,
        ..Default::default()
    });
    q.enqueue(pkt(Ecn::NotEct), Time::ZERO);
    let mut max = 0;
    for tick in 1..=200u64 {
        q.on_timeout(ms(16 * tick)); // standing queue up to 3.2 s
        max = max.max(q.prob());
        assert!(q.prob() <= MAX_PROB / 2);
        assert!(!q.overloaded());
    }
    assert_eq!(max, 2_147_483_647);
    assert_eq!(q.prob(), 2_147_483_647);
}

#[test]
fn saturation_with_drop_overload_reaches_max_without_wrapping() {
    let mut q = dp(DualPi2Config::default());
    q.enqueue(pkt(Ecn::NotEct), Time::ZERO);
    let mut prev = 0;
    for tick in 1..=400u64 {
        q.on_timeout(ms(16 * tick));
        if tick > 2 {
            assert!(q.prob() >= prev, "wrapped at tick {tick}");
        }
        prev = q.prob();
    }
    assert_eq!(q.prob(), MAX_PROB);
    // Extreme inputs do not overflow either.
    assert_eq!(
        pi2_update_linux(MAX_PROB, Dur::MAX, Dur::ZERO, Dur::ZERO, u32::MAX, u32::MAX, true, 2),
        MAX_PROB
    );
    assert_eq!(
        pi2_update_linux(5, Dur::ZERO, Dur::MAX, Dur::MAX, u32::MAX, u32::MAX, true, 2),
        0
    );
}

// ---- 6. Probability maps -----------------------------------------------------------------

#[test]
fn probability_maps() {
    let mut q = dp(DualPi2Config::default());
    q.set_prob_f64(0.2);
    assert!((q.p_c() - 0.04).abs() < 1e-9 && (q.p_cl() - 0.4).abs() < 1e-9);
    assert!(!q.overloaded());
    let mut q4 = dp(DualPi2Config {
        coupling_factor: 4,
        ..Default::default()
    });
    q4.set_prob_f64(0.2);
    assert!((q4.p_c() - 0.04).abs() < 1e-9 && (q4.p_cl() - 0.8).abs() < 1e-9);
    q.set_prob_f64(0.6);
    assert!(q.overloaded() && q.p_cl() > 1.0);
    for i in 0..=100 {
        let p = i as f64 / 200.0; // up to 0.5: never overloaded with k = 2
        q.set_prob_f64(p);
        assert!(!q.overloaded());
        assert!((q.p_c() - (q.p_cl() / 2.0).powi(2)).abs() < 1e-12);
        assert!((q.probability().unwrap() - p).abs() < 1e-9);
    }
}

// ---- 7. 2-MTU floor ----------------------------------------------------------------------

#[test]
fn two_mtu_floor() {
    let mut q = dp(DualPi2Config::default());
    q.set_prob(MAX_PROB);
    let mut drops = Vec::new();
    // Two packets: after removal the backlog is 1514 then 0, both below 2 × MTU.
    for _ in 0..2 {
        q.enqueue(pkt(Ecn::NotEct), Time::ZERO);
    }
    assert!(q.dequeue(Time::ZERO, &mut drops).is_some());
    assert!(q.dequeue(Time::ZERO, &mut drops).is_some());
    assert!(drops.is_empty());
    // Three packets: the first leaves 3028 = 2 MTU behind and is dropped; the next one leaves
    // 1514 and passes.
    for i in 0..3 {
        q.enqueue(pkt_id(Ecn::NotEct, i), Time::ZERO);
    }
    let d = q.dequeue(Time::ZERO, &mut drops).unwrap();
    assert_eq!(d.pkt.id, 1);
    assert_eq!(drops.len(), 1);
    assert_eq!(
        (drops[0].pkt.id, drops[0].reason, drops[0].queue),
        (0, DropReason::Congestion, QueueId::C)
    );
    assert!(q.dequeue(Time::ZERO, &mut drops).is_some());
    assert_eq!(drops.len(), 1);
    // With an ECT(0) packet at p' = 1 (overload) Classic drops even ECT.
    for _ in 0..3 {
        q.enqueue(pkt(Ecn::Ect0), Time::ZERO);
    }
    q.dequeue(Time::ZERO, &mut drops);
    assert_eq!(drops.len(), 2);
}

// ---- 8. Step -----------------------------------------------------------------------------

#[test]
fn step_time_mode_is_strict() {
    let mut q = dp(DualPi2Config::default());
    let mut drops = Vec::new();
    q.enqueue(pkt(Ecn::Ect1), Time::ZERO);
    let d = q.dequeue(Time(1_000_000), &mut drops).unwrap();
    assert!(!d.marked && d.pkt.ecn == Ecn::Ect1);
    assert_eq!(d.sojourn, Dur(1_000_000));
    q.enqueue(pkt(Ecn::Ect1), Time::ZERO);
    let d = q.dequeue(Time(1_000_001), &mut drops).unwrap();
    assert!(d.marked && d.pkt.ecn == Ecn::Ce);
    assert_eq!(q.xstats().step_marks, 1);
    assert_eq!(q.stats()[0].1.marks, 1);
    // Already-CE packets stay CE but are not counted as marked by us.
    q.enqueue(pkt(Ecn::Ce), Time::ZERO);
    let d = q.dequeue(Time(2_000_000), &mut drops).unwrap();
    assert!(!d.marked && d.pkt.ecn == Ecn::Ce);
    assert!(drops.is_empty());
}

#[test]
fn step_drops_not_ect_l4s_class_and_spares_llll() {
    let mut q = dp(DualPi2Config {
        l4s_dscp: vec![45],
        llll_dscp: vec![46],
        ..Default::default()
    });
    let mut drops = Vec::new();
    q.enqueue(
        TestPkt {
            dscp: 45,
            ..pkt(Ecn::NotEct)
        },
        Time::ZERO,
    );
    assert!(q.dequeue(ms(2), &mut drops).is_none());
    assert_eq!(drops.len(), 1);
    assert_eq!((drops[0].reason, drops[0].queue), (DropReason::StepNonEcn, QueueId::L));
    // LLLL: never marked or dropped, not even with a high p' and a long sojourn.
    q.set_prob_f64(0.45);
    for _ in 0..50 {
        q.enqueue(
            TestPkt {
                dscp: 46,
                ..pkt(Ecn::Ect0)
            },
            Time::ZERO,
        );
        q.enqueue(
            TestPkt {
                dscp: 46,
                ..pkt(Ecn::NotEct)
            },
            Time::ZERO,
        );
    }
    drops.clear();
    let mut n = 0;
    while let Some(d) = q.dequeue(ms(100), &mut drops) {
        assert!(!d.marked);
        assert_ne!(d.pkt.ecn, Ecn::Ce);
        n += 1;
    }
    assert_eq!(n, 100);
    assert!(drops.is_empty());
}

#[test]
fn step_min_qlen_step() {
    let mut q = dp(DualPi2Config {
        min_qlen_step: Some(3),
        ..Default::default()
    });
    for i in 0..5 {
        q.enqueue(pkt_id(Ecn::Ect1, i), Time::ZERO);
    }
    let mut drops = Vec::new();
    let marked: Vec<bool> = (0..5).map(|_| q.dequeue(ms(5), &mut drops).unwrap().marked).collect();
    // Packets 0, 1, 2 found 0, 1, 2 packets in L; 3 and 4 found 3 and 4.
    assert_eq!(marked, [false, false, false, true, true]);
}

/// Five L4S packets enqueued together at `Time::ZERO`, dequeued at 5 ms: which are marked.
fn marks_of_five(cfg: DualPi2Config) -> Vec<bool> {
    let mut q = dp(cfg);
    for i in 0..5 {
        q.enqueue(pkt_id(Ecn::Ect1, i), Time::ZERO);
    }
    let mut drops = Vec::new();
    (0..5).map(|_| q.dequeue(ms(5), &mut drops).unwrap().marked).collect()
}

#[test]
fn step_modes_guard_a_lone_packet_differently() {
    use l4s_aqm::StepMode;
    // Upstream Linux (min_qlen_step 0): every packet past 1 ms is marked, even the first.
    assert_eq!(marks_of_five(DualPi2Config::default()), [true; 5]);
    // L4STeam: only packets that found more than one packet in L (`qlen > 1`).
    let l4t = DualPi2Config {
        step_mode: StepMode::L4steam,
        ..Default::default()
    };
    assert_eq!(dp(l4t.clone()).params().min_qlen_step, 2);
    assert_eq!(marks_of_five(l4t), [false, false, true, true, true]);
    // DOCSIS at 10 Mbit/s: FLOOR = 2 × 1514 B = 2.42 ms, ramp to 2.95 ms on the backlog the
    // arriving packet sees (1.21 ms per frame): 1.2 and 2.4 ms unmarked, 3.6 ms and up
    // p = 1, which recur() turns into a hit from the second such packet on.
    let docsis = DualPi2Config {
        step_mode: StepMode::Docsis,
        max_rate: Some(l4s_core::Rate::mbps(10)),
        ..Default::default()
    };
    let p = dp(docsis.clone()).params().clone();
    assert_eq!(p.docsis_min_th, l4s_core::Rate::mbps(10).tx_time(2 * 1514));
    assert_eq!(p.docsis_range, Dur(1 << 19));
    assert_eq!(marks_of_five(docsis), [false, false, false, true, true]);
    // At 100 Mbit/s the floor is below MAXTH − range: MINTH = 1 ms − 2^19 ns.
    let fast = l4s_aqm::dualpi2::docsis_thresholds(Some(l4s_core::Rate::mbps(100)), 1514);
    assert_eq!(fast, (Dur::from_millis(1) - Dur(1 << 19), Dur(1 << 19)));
}

#[test]
fn step_packet_mode() {
    let mut q = dp(DualPi2Config {
        step_thresh_packets: Some(2),
        ..Default::default()
    });
    assert_eq!(q.params().step, Step::Packets(2));
    for _ in 0..5 {
        q.enqueue(pkt(Ecn::Ect1), Time::ZERO);
    }
    let mut drops = Vec::new();
    // L lengths after removal: 4, 3, 2, 1, 0 — marked iff > 2. The sojourn is irrelevant.
    let marked: Vec<bool> = (0..5).map(|_| q.dequeue(ms(50), &mut drops).unwrap().marked).collect();
    assert_eq!(marked, [true, true, false, false, false]);
}

#[test]
fn rfc_ramp_marking() {
    use l4s_aqm::dualpi2::ramp_probability;
    let (min, range) = (Dur::from_micros(800), Dur::from_micros(400));
    assert_eq!(ramp_probability(Dur::from_micros(800), min, range), 0.0);
    assert!((ramp_probability(Dur::from_micros(1000), min, range) - 0.5).abs() < 1e-12);
    assert_eq!(ramp_probability(Dur::from_micros(1200), min, range), 1.0);
    let mut q = dp(DualPi2Config {
        marking: l4s_aqm::Marking::Ramp,
        recur: true,
        ..Default::default()
    });
    let mut drops = Vec::new();
    // Beyond maxTh: marked while more than Th_len = 1 packet remains after removal.
    for _ in 0..4 {
        q.enqueue(pkt(Ecn::Ect1), Time::ZERO);
    }
    let marked: Vec<bool> = (0..4).map(|_| q.dequeue(ms(2), &mut drops).unwrap().marked).collect();
    assert_eq!(marked, [true, true, false, false]);
    // In the middle of the ramp with recur: exactly every other packet.
    for _ in 0..102 {
        q.enqueue(pkt(Ecn::Ect1), Time::ZERO);
    }
    let n = (0..100)
        .filter(|_| q.dequeue(Time::from_micros(1000), &mut drops).unwrap().marked)
        .count();
    assert!((49..=50).contains(&n), "{n}");
}

// ---- 9. WRR ------------------------------------------------------------------------------

fn fill_both(q: &mut DualPi2<TestPkt>, n: usize) {
    for _ in 0..n {
        q.enqueue(pkt(Ecn::Ect1), Time::ZERO);
        q.enqueue(pkt(Ecn::NotEct), Time::ZERO);
    }
}

#[test]
fn wrr_sequence_and_shares() {
    let mut q = dp(DualPi2Config::default());
    fill_both(&mut q, 1000);
    let mut drops = Vec::new();
    let mut s = String::new();
    for _ in 0..1000 {
        let d = q.dequeue(Time::ZERO, &mut drops).unwrap();
        s.push(if d.queue == QueueId::L { 'L' } else { 'C' });
    }
    assert_eq!(&s[..30], "LLLLLLLLLCLLLLLLLLLCLLLLLLLLLC");
    assert_eq!(s, "LLLLLLLLLC".repeat(100));
    assert_eq!(s.matches('C').count(), 100);
    assert!(drops.is_empty());
}

#[test]
fn wrr_extremes() {
    let mut drops = Vec::new();
    let mut q = dp(DualPi2Config {
        classic_protection: 0,
        ..Default::default()
    });
    fill_both(&mut q, 50);
    for _ in 0..50 {
        assert_eq!(q.dequeue(Time::ZERO, &mut drops).unwrap().queue, QueueId::L);
    }
    assert_eq!(q.dequeue(Time::ZERO, &mut drops).unwrap().queue, QueueId::C);
    let mut q = dp(DualPi2Config {
        classic_protection: 100,
        ..Default::default()
    });
    fill_both(&mut q, 50);
    for _ in 0..50 {
        assert_eq!(q.dequeue(Time::ZERO, &mut drops).unwrap().queue, QueueId::C);
    }
    assert_eq!(q.dequeue(Time::ZERO, &mut drops).unwrap().queue, QueueId::L);
}

#[test]
fn wrr_credit_rules() {
    let mut drops = Vec::new();
    let mut q = dp(DualPi2Config::default());
    let init = q.params().credit_init;
    // Only one queue backlogged: the credit does not move.
    for _ in 0..20 {
        q.enqueue(pkt(Ecn::Ect1), Time::ZERO);
    }
    for _ in 0..20 {
        q.dequeue(Time::ZERO, &mut drops).unwrap();
        assert_eq!(q.credit(), init);
    }
    for _ in 0..20 {
        q.enqueue(pkt(Ecn::NotEct), Time::ZERO);
    }
    for _ in 0..20 {
        q.dequeue(Time::ZERO, &mut drops).unwrap();
        assert_eq!(q.credit(), init);
    }
    // Both backlogged: the credit moves; an empty dequeue resets it.
    fill_both(&mut q, 3);
    for _ in 0..3 {
        q.dequeue(Time::ZERO, &mut drops).unwrap();
    }
    assert_eq!(q.credit(), init + 3 * 10 * 1514);
    while q.dequeue(Time::ZERO, &mut drops).is_some() {}
    assert_eq!(q.credit(), init);
}

#[test]
fn wrr_aqm_drops_leave_credit_unchanged() {
    let mut q = dp(DualPi2Config {
        llll_dscp: vec![46],
        ..Default::default()
    });
    for _ in 0..20 {
        q.enqueue(
            TestPkt {
                dscp: 46,
                ..pkt(Ecn::NotEct)
            },
            Time::ZERO,
        ); // LLLL: exempt
        q.enqueue(pkt(Ecn::NotEct), Time::ZERO); // Classic Not-ECT: dropped at p' = 1
    }
    q.set_prob(MAX_PROB);
    let mut drops = Vec::new();
    for _ in 0..9 {
        assert_eq!(q.dequeue(Time::ZERO, &mut drops).unwrap().queue, QueueId::L);
    }
    let after_9_l = q.credit();
    assert_eq!(after_9_l, -121_120 + 9 * 10 * 1514);
    // Credit > 0 picks C; every C packet is dropped (backlog stays >= 2 MTU thanks to L), the
    // credit does not move, so C keeps being picked until it is empty.
    let d = q.dequeue(Time::ZERO, &mut drops).unwrap();
    assert_eq!(d.queue, QueueId::L);
    assert_eq!(drops.len(), 20);
    assert!(drops
        .iter()
        .all(|d| d.queue == QueueId::C && d.reason == DropReason::Congestion));
    assert_eq!(q.credit(), after_9_l); // the L packet was sent with C empty: change 0
}

// ---- 10. Limits --------------------------------------------------------------------------

#[test]
fn packet_limit() {
    let mut q = dp(DualPi2Config::default());
    for i in 0..10_000u64 {
        assert!(queued(&q.enqueue(pkt(if i % 2 == 0 { Ecn::Ect1 } else { Ecn::NotEct }), ms(1))).is_some());
    }
    match q.enqueue(pkt(Ecn::NotEct), ms(2)) {
        Enqueued::Dropped(d) => {
            assert_eq!(
                (d.reason, d.queue, d.sojourn),
                (DropReason::Overlimit, QueueId::C, Dur::ZERO)
            );
        }
        _ => panic!("10001st packet accepted"),
    }
    assert_eq!(q.len_packets(), 10_000);
    assert_eq!(q.c_head_ts(), Some(ms(1)));
    assert_eq!(q.xstats().drops_overlimit, 1);
    assert_eq!(q.xstats().maxq, 9_999);
    let st = q.stats();
    assert_eq!(st[1].1.overlimit_drops, 1);
    assert_eq!(st[1].1.enqueued_packets, 5_000);
}

#[test]
fn memory_limit_uses_mem_size() {
    let mut q = dp(DualPi2Config {
        memlimit: Some(10_000),
        ..Default::default()
    });
    let big = TestPkt {
        mem: 3000,
        len: 100,
        ..pkt(Ecn::NotEct)
    };
    for _ in 0..3 {
        assert!(queued(&q.enqueue(big.clone(), Time::ZERO)).is_some());
    }
    assert_eq!(q.memory_used(), 9000);
    assert!(matches!(q.enqueue(big.clone(), Time::ZERO), Enqueued::Dropped(d) if d.reason == DropReason::Overlimit));
    // A small one still fits exactly.
    assert!(queued(&q.enqueue(TestPkt { mem: 1000, ..big }, Time::ZERO)).is_some());
    assert_eq!(q.xstats().max_memory_used, 10_000);
}

#[test]
fn drop_early_drops_at_enqueue() {
    let mut q = dp(DualPi2Config {
        drop_early: true,
        ..Default::default()
    });
    q.set_prob(MAX_PROB);
    let mut queued_n = 0;
    let mut early = 0;
    for _ in 0..100 {
        match q.enqueue(pkt(Ecn::NotEct), Time::ZERO) {
            Enqueued::Queued { .. } => queued_n += 1,
            Enqueued::Dropped(d) => {
                assert_eq!(d.reason, DropReason::Congestion);
                early += 1;
            }
        }
    }
    // The first two arrive below the 2-MTU floor; everything else is dropped at enqueue.
    assert_eq!((queued_n, early), (2, 98));
    let mut drops = Vec::new();
    assert!(q.dequeue(Time::ZERO, &mut drops).is_some());
    assert!(q.dequeue(Time::ZERO, &mut drops).is_some());
    assert!(drops.is_empty());
    // L4S at enqueue in overload: marked (or dropped) before queueing.
    let mut q = dp(DualPi2Config {
        drop_early: true,
        ..Default::default()
    });
    for _ in 0..2 {
        q.enqueue(pkt(Ecn::NotEct), Time::ZERO);
    }
    q.set_prob_f64(0.3);
    let marked = (0..1000)
        .filter(|_| {
            matches!(
                q.enqueue(pkt(Ecn::Ect1), Time::ZERO),
                Enqueued::Queued { marked: true, .. }
            )
        })
        .count();
    assert!((520..680).contains(&marked), "{marked}");
}

// ---- 12. Head timestamps -----------------------------------------------------------------

#[test]
fn head_timestamp_bookkeeping() {
    let mut q = dp(DualPi2Config::default());
    assert_eq!((q.l_head_ts(), q.c_head_ts()), (None, None));
    q.enqueue(pkt(Ecn::NotEct), ms(5));
    q.enqueue(pkt(Ecn::NotEct), ms(7));
    q.enqueue(pkt(Ecn::Ect1), ms(6));
    assert_eq!((q.l_head_ts(), q.c_head_ts()), (Some(ms(6)), Some(ms(5))));
    let mut drops = Vec::new();
    let d = q.dequeue(ms(8), &mut drops).unwrap();
    assert_eq!((d.queue, d.sojourn), (QueueId::L, Dur::from_millis(2)));
    assert_eq!(q.l_head_ts(), None);
    q.dequeue(ms(8), &mut drops).unwrap();
    assert_eq!(q.c_head_ts(), Some(ms(7)));
    q.dequeue(ms(8), &mut drops).unwrap();
    assert_eq!(q.c_head_ts(), None);
    // Empty queues add no delay to the PI.
    q.on_timeout(ms(16));
    assert_eq!(q.last_qdelay(), Dur::ZERO);
    assert_eq!(q.prob(), 0);
    // PI input: max(L, C) head sojourn (Linux) vs C head only (RFC).
    q.enqueue(pkt(Ecn::Ect1), ms(20));
    q.on_timeout(ms(32));
    assert_eq!(q.last_qdelay(), Dur::from_millis(12));
    let mut r = dp(DualPi2Config {
        pi_input: l4s_aqm::PiInput::ClassicHead,
        ..Default::default()
    });
    r.enqueue(pkt(Ecn::Ect1), ms(20));
    r.on_timeout(ms(32));
    assert_eq!(r.last_qdelay(), Dur::ZERO);
}
