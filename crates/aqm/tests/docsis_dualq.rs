//! The Low Latency DOCSIS dual queue (`docsis-dualq`): derived defaults, classification,
//! the IAQM ramp, the coupling, the weighted scheduler, DOCSIS-PIE's update and Queue
//! Protection, each with numbers.

mod common;

use common::{pkt, TestPkt};
use l4s_aqm::{DocsisDualq, DocsisDualqConfig, Enqueued, Qdisc, QueueId};
use l4s_core::{Dur, Ecn, Rate, Rng, Time};

fn cfg(mbit: u64) -> DocsisDualqConfig {
    DocsisDualqConfig {
        max_rate: Some(Rate::mbps(mbit)),
        ..Default::default()
    }
}

fn q(c: &DocsisDualqConfig) -> DocsisDualq<TestPkt> {
    DocsisDualq::new(c, Rng::new(1))
}

fn sized(ecn: Ecn, len: u32, hash: u32) -> TestPkt {
    TestPkt {
        len,
        mem: len,
        hash,
        ..pkt(ecn)
    }
}

#[test]
fn derived_thresholds_and_buffers() {
    // 200 Mbit/s: FLOOR = 2 × 2000 B = 160 µs < 1 ms − 2^19 ns, so MINTH = 475.712 µs.
    let d = q(&cfg(200));
    assert_eq!(d.thresholds(), (Dur(1_000_000 - 524_288), Dur::from_millis(1)));
    // 50 Mbit/s: FLOOR = 640 µs sets MINTH; MAXTH = MINTH + 2^19 ns.
    let d = q(&cfg(50));
    assert_eq!(d.thresholds(), (Dur(640_000), Dur(640_000 + 524_288)));
    // Buffers: Classic 100 ms, LL 10 ms at the aggregate rate.
    assert_eq!(d.buffers(), (625_000, 62_500));
    assert!(cfg(50).validate().is_ok());
    // Too slow for one frame in 10 ms of LL buffer: the error names the rate.
    assert_eq!(cfg(1).validate().unwrap_err().key, "max_rate");
    assert_eq!(DocsisDualqConfig::default().validate().unwrap_err().key, "max_rate");
}

#[test]
fn classification_ecn_and_dscp() {
    let mut c = cfg(50);
    c.ll_dscp = vec![45, 46];
    let mut d = q(&c);
    let cases = [
        (Ecn::Ect1, 0, QueueId::L),
        (Ecn::Ce, 0, QueueId::L),
        (Ecn::Ect0, 0, QueueId::C),
        (Ecn::NotEct, 0, QueueId::C),
        (Ecn::NotEct, 46, QueueId::L),
        (Ecn::NotEct, 45, QueueId::L),
        (Ecn::Ect0, 34, QueueId::C),
    ];
    for (ecn, dscp, want) in cases {
        let p = TestPkt { dscp, ..pkt(ecn) };
        match d.enqueue(p, Time::ZERO) {
            Enqueued::Queued { queue, .. } => assert_eq!(queue, want, "{ecn:?} dscp {dscp}"),
            Enqueued::Dropped(_) => panic!("dropped"),
        }
    }
}

/// Marks among `n` ECT(1) packets of 100 B enqueued in a row into an empty LL queue (each
/// of its own flow): packet k finds k packets ahead of it.
fn marks_building_up(d: &mut DocsisDualq<TestPkt>, n: u32) -> Vec<bool> {
    (0..n)
        .map(|k| {
            matches!(
                d.enqueue(sized(Ecn::Ect1, 100, k), Time::ZERO),
                Enqueued::Queued { marked: true, .. }
            )
        })
        .collect()
}

#[test]
fn iaqm_ramp_marks_in_proportion_between_minth_and_maxth() {
    // 200 Mbit/s: 100 B take 4 µs. Packet k's delay estimate is (k + 1) × 4 µs.
    let mut d = q(&cfg(200));
    let (min_th, max_th) = d.thresholds();
    let marks = marks_building_up(&mut d, 400);
    let delay = |k: usize| Dur((k as u64 + 1) * 4_000);
    // None below MINTH, all from MAXTH on.
    assert!(marks.iter().enumerate().all(|(k, m)| delay(k) > min_th || !m));
    assert!(marks.iter().enumerate().all(|(k, m)| delay(k) < max_th || *m));
    // In between, recur() hits as often as the ramp says: within one mark of the sum.
    let want: f64 = (0..400)
        .map(|k| l4s_aqm::dualpi2::ramp_probability(delay(k), min_th, max_th - min_th))
        .filter(|p| *p < 1.0)
        .sum();
    let got = marks
        .iter()
        .enumerate()
        .filter(|(k, m)| **m && delay(*k) < max_th)
        .count() as f64;
    assert!((got - want).abs() <= 1.0, "{got} marks, ramp sums to {want}");
    assert!(want > 60.0);
}

/// Marking fraction of `n` LL packets arriving one at a time to an empty queue.
fn marked_alone(d: &mut DocsisDualq<TestPkt>, n: u32) -> f64 {
    let mut drops = Vec::new();
    let mut marked = 0;
    for k in 0..n {
        if let Enqueued::Queued { marked: true, .. } = d.enqueue(sized(Ecn::Ect1, 100, k), Time::ZERO) {
            marked += 1;
        }
        d.dequeue(Time::ZERO, &mut drops);
    }
    marked as f64 / n as f64
}

#[test]
fn coupling_marks_ll_with_k_times_the_base_probability() {
    let mut d = q(&cfg(200));
    d.set_classic_probability(0.04);
    let (p_c, base, p_cl) = d.probabilities();
    assert_eq!(p_c, 0.04);
    assert!((base - 0.2).abs() < 1e-12 && (p_cl - 0.4).abs() < 1e-12);
    // An empty LL queue: only the coupled probability, drawn with recur(): 40 % exactly.
    let f = marked_alone(&mut d, 1000);
    assert!((f - 0.4).abs() <= 0.001, "{f}");
}

#[test]
fn scheduler_gives_ll_its_weight_and_classic_the_rest() {
    let mut d = q(&DocsisDualqConfig {
        queue_protection: l4s_aqm::QueueProtectionConfig {
            enabled: false,
            ..Default::default()
        },
        classic_buffer: Some(10_000_000),
        ll_buffer: Some(10_000_000),
        ..cfg(50)
    });
    for i in 0..3000 {
        d.enqueue(sized(Ecn::Ect1, 1500, i), Time::ZERO);
        d.enqueue(sized(Ecn::NotEct, 1500, i), Time::ZERO);
    }
    let mut drops = Vec::new();
    let mut l = 0;
    for _ in 0..2560 {
        if d.dequeue(Time::ZERO, &mut drops).unwrap().queue == QueueId::L {
            l += 1;
        }
    }
    // 230/256 of 2560 = 2300.
    assert!((2298..=2302).contains(&l), "{l}");
    // With the LL queue empty, Classic takes every turn.
    let mut d2 = q(&cfg(50));
    for i in 0..10 {
        d2.enqueue(sized(Ecn::NotEct, 1500, i), Time::ZERO);
    }
    for _ in 0..10 {
        assert_eq!(d2.dequeue(Time::ZERO, &mut drops).unwrap().queue, QueueId::C);
    }
}

#[test]
fn docsis_pie_raises_p_with_a_standing_classic_queue_and_decays_it_when_empty() {
    let mut d = q(&cfg(50));
    // 30 ms of Classic backlog at 50 Mbit/s (the LL flow idle: Classic gets the whole rate).
    for i in 0..124 {
        d.enqueue(sized(Ecn::NotEct, 1512, i), Time::ZERO);
    }
    let mut t = Time::ZERO;
    for _ in 0..20 {
        t = d.next_timeout().unwrap();
        d.on_timeout(t);
    }
    let (p_c, base, p_cl) = d.probabilities();
    assert!(p_c > 0.001, "{p_c}");
    assert!((base - p_c.sqrt()).abs() < 1e-12 && (p_cl - (2.0 * base).min(1.0)).abs() < 1e-12);
    // Empty the queue: p decays by 2 % per update (both delays under 5 ms) once the
    // derivative term is past.
    let mut drops = Vec::new();
    while d.dequeue(t, &mut drops).is_some() {}
    let before = {
        t = d.next_timeout().unwrap();
        d.on_timeout(t);
        d.probabilities().0
    };
    t = d.next_timeout().unwrap();
    d.on_timeout(t);
    let after = d.probabilities().0;
    // α·(0 − 10 ms) scaled down by the table, then × 0.98.
    assert!(after < 0.98 * before + 1e-12, "{before} -> {after}");
}

#[test]
fn queue_protection_is_on_by_default_and_redirects_a_queue_builder() {
    let mut d = q(&cfg(50));
    assert!(d.queue_protection().is_some());
    // A 1500-byte ECT(1) flow arriving faster than it is served fills the LL queue past
    // MAXTH; once its score is over CRITICALqLSCORE it is sent to Classic.
    let mut drops = Vec::new();
    let mut to_c = 0;
    for i in 0..200u64 {
        let now = Time(i * 120_000); // 100 Mbit/s of 1500 B
        if let Enqueued::Queued { queue: QueueId::C, .. } = d.enqueue(sized(Ecn::Ect1, 1500, 7), now) {
            to_c += 1;
        }
        if i % 2 == 0 {
            d.dequeue(now, &mut drops);
        }
    }
    let s = d.queue_protection().unwrap();
    assert_eq!(s.sanctioned_packets, to_c);
    assert!(to_c > 50, "{to_c}");
    assert_eq!(s.flows.keys().copied().collect::<Vec<_>>(), vec![7]);
    // Off: nothing is redirected.
    let mut off = q(&DocsisDualqConfig {
        queue_protection: l4s_aqm::QueueProtectionConfig {
            enabled: false,
            ..Default::default()
        },
        ..cfg(50)
    });
    assert!(off.queue_protection().is_none());
    for i in 0..40u64 {
        let r = off.enqueue(sized(Ecn::Ect1, 1500, 7), Time(i * 120_000));
        assert!(!matches!(r, Enqueued::Queued { queue: QueueId::C, .. }));
    }
}
