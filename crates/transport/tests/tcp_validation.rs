//! ECN validation of the AccECN TCP sender (RFC 9768 §3.2.2.1 and §3.2.2.3 sender checks, the
//! RFC 9000 §13.4.2.1 checks): a clean path reaches Capable; bleaching, remarking, all-CE
//! mangling and impossible feedback fail validation, after which the sender sends Not-ECT,
//! ignores CE and its controller falls back to non-ECN (classic) behaviour.

mod common;

use common::{MiniReno, Net, PathCfg};
use l4s_cc::factory::{build, CcParams};
use l4s_cc::{CongestionControl, EcnMode};
use l4s_core::{Dur, Ecn, Rate, Rng, Time};
use l4s_transport::endpoint::{EcnFailure, EcnValidation};
use l4s_transport::tcp::*;
use l4s_transport::{Endpoint, EndpointStats, Transmit};

/// A middlebox right behind the sender: from `from` on, it rewrites the IP-ECN field of
/// data segments with `f`. It also logs what the sender itself emitted.
struct Middlebox {
    s: TcpSender,
    from: Time,
    f: fn(Ecn) -> Ecn,
    /// (time, payload length, ECN as sent by the sender) of every data segment.
    sent: Vec<(Time, u32, Ecn)>,
    /// End sequence of the first data segment whose field was rewritten, and when the
    /// sender first got a cumulative ACK covering it (the first feedback about the fault).
    first_rewritten_end: Option<u64>,
    first_feedback: Option<Time>,
    /// Strip the AccECN option from ACKs on their way back (the sender then has only ACE).
    strip_option: bool,
}

impl Middlebox {
    fn new(s: TcpSender, from: Time, f: fn(Ecn) -> Ecn) -> Self {
        Middlebox {
            s,
            from,
            f,
            sent: Vec::new(),
            first_rewritten_end: None,
            first_feedback: None,
            strip_option: false,
        }
    }
}

impl Endpoint for Middlebox {
    type Header = TcpSegment;
    fn handle_packet(&mut self, now: Time, h: &TcpSegment, size: u32, ecn: Ecn) {
        if self.first_feedback.is_none() && self.first_rewritten_end.is_some_and(|e| h.ack >= e) {
            self.first_feedback = Some(now);
        }
        let mut h = *h;
        if self.strip_option {
            h.accecn = None;
        }
        self.s.handle_packet(now, &h, size, ecn)
    }
    fn poll_transmit(&mut self, now: Time) -> Option<Transmit<TcpSegment>> {
        let mut t = self.s.poll_transmit(now)?;
        if t.header.len > 0 {
            self.sent.push((now, t.header.len, t.ecn));
            if now >= self.from {
                let e = (self.f)(t.ecn);
                if e != t.ecn && self.first_rewritten_end.is_none() {
                    self.first_rewritten_end = Some(t.header.seq + t.header.len as u64);
                }
                t.ecn = e;
            }
        }
        Some(t)
    }
    fn poll_timeout(&self) -> Option<Time> {
        self.s.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Time) {
        self.s.handle_timeout(now)
    }
    fn close(&mut self, now: Time) {
        self.s.close(now)
    }
    fn stats(&self) -> EndpointStats {
        self.s.stats()
    }
    fn take_rtt_sample(&mut self) -> Option<Dur> {
        self.s.take_rtt_sample()
    }
}

fn bleach(_: Ecn) -> Ecn {
    Ecn::NotEct
}
fn remark(e: Ecn) -> Ecn {
    if e == Ecn::Ect1 {
        Ecn::Ect0
    } else {
        e
    }
}
fn mark_ect(e: Ecn) -> Ecn {
    if e.is_ect() {
        Ecn::Ce
    } else {
        e
    }
}
/// A broken box that sets CE on everything, Not-ECT included.
fn mark_everything(_: Ecn) -> Ecn {
    Ecn::Ce
}
fn identity(e: Ecn) -> Ecn {
    e
}

const RTT: Dur = Dur::from_millis(20);

/// 10 Mb/s, 20 ms base RTT, L4S step marking at 1 ms of queue, no loss.
fn paths() -> (PathCfg, PathCfg) {
    (
        PathCfg {
            rate: Rate::mbps(10),
            delay: RTT / 2,
            ce_step: Some(Dur::from_millis(1)),
            ..Default::default()
        },
        PathCfg {
            delay: RTT / 2,
            ..Default::default()
        },
    )
}

fn accecn_sender(cc: Box<dyn CongestionControl>) -> TcpSender {
    TcpSender::new(TcpConfig::default(), cc, Time::ZERO)
}

fn mini_reno() -> Box<dyn CongestionControl> {
    let (mut cc, _) = MiniReno::new(EcnMode::Accurate { ect: Ecn::Ect1 });
    cc.pacing = None;
    Box::new(cc)
}

/// MiniReno with a fixed window of `pkts` segments (10 stays below the 17-segment BDP of
/// [`paths`], so most packets arrive unmarked).
fn fixed_reno(pkts: u64) -> Box<dyn CongestionControl> {
    let (mut cc, _) = MiniReno::new(EcnMode::Accurate { ect: Ecn::Ect1 });
    cc.pacing = None;
    cc.fixed = true;
    cc.cwnd = pkts * 1448;
    Box::new(cc)
}

fn prague() -> Box<dyn CongestionControl> {
    build("prague", &CcParams::default()).unwrap()
}

type TestNet = Net<TcpSegment, Middlebox, TcpReceiver>;

fn net(cc: Box<dyn CongestionControl>, from: Time, f: fn(Ecn) -> Ecn) -> TestNet {
    let (fwd, rev) = paths();
    Net::new(
        Middlebox::new(accecn_sender(cc), from, f),
        TcpReceiver::new(TcpReceiverConfig::default()),
        fwd,
        rev,
    )
}

/// Run until validation fails (or `end`); returns the failure time, reason and the SRTT then.
fn run_to_failure(n: &mut TestNet, end: Time) -> (Time, EcnFailure, Dur) {
    n.run_until(end, |n| n.s.s.ecn_validation().is_failed());
    let (at, reason) = failure(n).expect("validation failed");
    (at, reason, n.s.stats().srtt)
}

/// The failure came within one RTT of the first feedback about a rewritten segment.
fn assert_within_rtt_of_feedback(n: &TestNet, at: Time, srtt: Dur) {
    let fb = n.s.first_feedback.expect("feedback about the rewritten segments");
    assert!(
        at >= fb && at <= fb + srtt,
        "failed at {at}, first feedback {fb}, srtt {srtt}"
    );
}

fn failure(n: &TestNet) -> Option<(Time, EcnFailure)> {
    match n.s.s.ecn_validation() {
        EcnValidation::Failed { at, reason } => Some((at, reason)),
        _ => None,
    }
}

#[test]
fn names() {
    assert_eq!(EcnValidation::default(), EcnValidation::NotApplicable);
    assert_eq!(EndpointStats::default().ecn_validation, EcnValidation::NotApplicable);
    assert_eq!(EcnValidation::NotApplicable.name(), "not-applicable");
    assert_eq!(EcnValidation::Testing.name(), "testing");
    assert_eq!(EcnValidation::Capable.name(), "capable");
    let f = EcnValidation::Failed {
        at: Time::ZERO,
        reason: EcnFailure::Bleached,
    };
    assert_eq!(f.name(), "failed");
    let names: Vec<_> = [
        EcnFailure::Bleached,
        EcnFailure::Remarked,
        EcnFailure::AllCe,
        EcnFailure::ImpossibleFeedback,
    ]
    .iter()
    .map(|r| r.name())
    .collect();
    assert_eq!(names, ["bleached", "remarked", "all-ce", "impossible-feedback"]);
}

#[test]
fn clean_path_reaches_capable_and_stays_ect1() {
    for (name, cc) in [("mini-reno", mini_reno()), ("prague", prague())] {
        let mut n = net(cc, Time::MAX, identity);
        let mut capable_at = None;
        n.run_until(Time::from_secs(5), |n| {
            if capable_at.is_none() && n.s.s.ecn_validation() == EcnValidation::Capable {
                capable_at = Some(n.now);
            }
            false
        });
        let capable_at = capable_at.unwrap_or_else(|| panic!("{name}: never Capable"));
        assert!(
            capable_at < Time::ZERO + RTT * 4,
            "{name}: Capable only at {capable_at}"
        );
        assert_eq!(n.s.s.ecn_validation(), EcnValidation::Capable, "{name}");
        assert_eq!(n.s.stats().ecn_validation, EcnValidation::Capable, "{name}");
        assert!(n.s.sent.len() > 300, "{name}: {}", n.s.sent.len());
        assert!(n.s.sent.iter().all(|x| x.2 == Ecn::Ect1), "{name}");
        // The step AQM marked and the sender reacted: CE feedback was in use throughout.
        assert!(n.fwd.ce_marks > 50, "{name}: {}", n.fwd.ce_marks);
        assert!(n.s.stats().congestion_events > 10, "{name}");
        // (ACKs still in flight at the cut-off may hold the last few.)
        let (sc, rc) = (n.s.stats().ce_packets, n.r.stats().ce_packets);
        assert!(sc <= rc && sc + 8 >= rc, "{name}: {sc} vs {rc}");
    }
}

#[test]
fn lossy_path_with_ack_loss_and_random_marking_stays_capable() {
    let (mut cc, _) = MiniReno::new(EcnMode::Accurate { ect: Ecn::Ect1 });
    cc.fixed = true;
    cc.cwnd = 40 * 1448;
    let s = TcpSender::new(
        TcpConfig {
            bytes: Some(5_000_000),
            ..Default::default()
        },
        Box::new(cc),
        Time::ZERO,
    );
    let fwd = PathCfg {
        rate: Rate::mbps(20),
        delay: Dur::from_millis(5),
        ce_prob: 0.3,
        loss: 0.02,
        seed: 7,
        ..Default::default()
    };
    let rev = PathCfg {
        delay: Dur::from_millis(5),
        loss: 0.3,
        seed: 8,
        ..Default::default()
    };
    let mut n = Net::new(s, TcpReceiver::new(TcpReceiverConfig::default()), fwd, rev);
    n.run_until(Time::from_secs(60), |n| n.s.stats().finished);
    assert!(n.s.stats().finished);
    assert!(n.s.stats().retransmits > 20);
    assert_eq!(n.s.ecn_validation(), EcnValidation::Capable);
}

#[test]
fn bleaching_fails_within_a_round_trip_and_stops_ect() {
    let from = Time::from_secs(2);
    let mut n = net(fixed_reno(10), from, bleach);
    let (at, reason, srtt) = run_to_failure(&mut n, Time::from_secs(4));
    assert_eq!(reason, EcnFailure::Bleached);
    assert_within_rtt_of_feedback(&n, at, srtt);
    assert!(at > from && at <= from + srtt * 2, "failed at {at}, srtt {srtt}");
    n.run_until(Time::from_secs(4), |_| false);
    assert!(n.s.sent.iter().filter(|x| x.0 < from).all(|x| x.2 == Ecn::Ect1));
    let later: Vec<_> = n.s.sent.iter().filter(|x| x.0 > at).collect();
    assert!(later.len() > 500, "{}", later.len());
    assert!(later.iter().all(|x| x.2 == Ecn::NotEct));
    assert_eq!(n.s.stats().ecn_validation.name(), "failed");
    // Feedback mode is still AccECN: only the codepoint and the CE response change.
    assert_eq!(n.s.stats().ecn_mode, "accecn");
}

#[test]
fn remarking_fails_with_remarked() {
    let from = Time::from_secs(2);
    let mut n = net(fixed_reno(10), from, remark);
    let (at, reason, srtt) = run_to_failure(&mut n, Time::from_secs(4));
    assert_eq!(reason, EcnFailure::Remarked);
    // The first ACK reporting ECT(0) bytes fails it.
    assert_eq!(Some(at), n.s.first_feedback);
    assert!(at > from && at <= from + srtt * 2, "failed at {at}, srtt {srtt}");
    n.run_until(Time::from_secs(4), |_| false);
    assert!(n.s.sent.iter().filter(|x| x.0 > at).all(|x| x.2 == Ecn::NotEct));
    // Remarking from the very start fails too, before ever being Capable.
    let mut n = net(mini_reno(), Time::ZERO, remark);
    let mut was_capable = false;
    n.run_until(Time::from_secs(1), |n| {
        was_capable |= n.s.s.ecn_validation() == EcnValidation::Capable;
        false
    });
    assert!(!was_capable);
    assert_eq!(failure(&n).map(|f| f.1), Some(EcnFailure::Remarked));
}

#[test]
fn all_ce_from_the_start_fails_after_eight_rounds_of_feedback() {
    let mut n = net(mini_reno(), Time::ZERO, mark_ect);
    let mut was_capable = false;
    let mut first_ack: Option<Time> = None;
    n.run_until(Time::from_secs(3), |n| {
        was_capable |= n.s.s.ecn_validation() == EcnValidation::Capable;
        if first_ack.is_none() && n.s.s.snd_una() > 1 {
            first_ack = Some(n.now);
        }
        n.s.s.ecn_validation().is_failed()
    });
    assert!(!was_capable);
    let (at, reason) = failure(&n).expect("validation failed");
    assert_eq!(reason, EcnFailure::AllCe);
    // ECN_VALIDATION_ALL_CE_ROUNDS (8) complete rounds of ACKs after the first ACK of data,
    // each at least one base RTT; allow a ninth for queueing.
    assert_eq!(ECN_VALIDATION_ALL_CE_ROUNDS, 8);
    let srtt = n.s.stats().srtt;
    let first_ack = first_ack.unwrap();
    eprintln!("all-CE: first ACK {first_ack}, failed at {at}, srtt {srtt}");
    assert!(at >= first_ack + RTT * 8, "failed at {at}, first ACK {first_ack}");
    assert!(
        at <= first_ack + srtt * 9,
        "failed at {at}, first ACK {first_ack}, srtt {srtt}"
    );
    n.run_until(Time::from_secs(3), |_| false);
    assert!(n.s.sent.iter().filter(|x| x.0 > at).all(|x| x.2 == Ecn::NotEct));
}

#[test]
fn after_failure_ce_is_ignored() {
    // A box that CE-marks everything (Not-ECT too): CE keeps arriving after the fallback.
    let (mut cc, log) = MiniReno::new(EcnMode::Accurate { ect: Ecn::Ect1 });
    cc.fixed = true;
    cc.cwnd = 20 * 1448;
    let mut n = net(Box::new(cc), Time::ZERO, mark_everything);
    n.run_until(Time::from_secs(1), |n| n.s.s.ecn_validation().is_failed());
    let (at, reason) = failure(&n).expect("validation failed");
    assert_eq!(reason, EcnFailure::AllCe);
    let before = n.s.stats();
    let ecn_events_before = log.lock().unwrap().ecn_events.len();
    assert!(before.congestion_events >= 1, "CE was acted upon while testing");
    assert_eq!(log.lock().unwrap().negotiated, Some(EcnMode::Off));
    n.run_until(Time::from_secs(3), |_| false);
    let after = n.s.stats();
    assert!(after.ce_packets > before.ce_packets + 1000, "CE still fed back");
    assert_eq!(after.congestion_events, before.congestion_events);
    assert_eq!(log.lock().unwrap().ecn_events.len(), ecn_events_before);
    assert_eq!(after.ecn_validation, EcnValidation::Failed { at, reason });
}

#[test]
fn prague_falls_back_and_stops_sending_ect1() {
    for (f, from, want) in [
        (bleach as fn(Ecn) -> Ecn, Time::from_secs(2), EcnFailure::Bleached),
        (remark, Time::from_secs(2), EcnFailure::Remarked),
        (mark_ect, Time::ZERO, EcnFailure::AllCe),
    ] {
        let mut n = net(prague(), from, f);
        let (at, reason, srtt) = run_to_failure(&mut n, Time::from_secs(4));
        assert_eq!(reason, want);
        if want != EcnFailure::AllCe {
            assert_within_rtt_of_feedback(&n, at, srtt);
        }
        n.run_until(Time::from_secs(4), |_| false);
        assert_eq!(n.s.s.cc().data_ecn(), Ecn::NotEct, "{want:?}: Prague fell back to Reno");
        let later: Vec<_> = n.s.sent.iter().filter(|x| x.0 > at).collect();
        assert!(later.len() > 200, "{want:?}: {}", later.len());
        assert!(later.iter().all(|x| x.2 == Ecn::NotEct), "{want:?}");
        assert!(n.s.stats().delivered_bytes > 1_000_000);
    }
}

#[test]
fn classic_and_no_ecn_are_not_applicable() {
    for req in [EcnMode::Classic, EcnMode::Off] {
        let (cc, _) = MiniReno::boxed(req);
        let (fwd, rev) = paths();
        let mut n = Net::new(
            TcpSender::new(TcpConfig::default(), cc, Time::ZERO),
            TcpReceiver::new(TcpReceiverConfig::default()),
            fwd,
            rev,
        );
        n.run_until(Time::from_secs(1), |_| false);
        assert!(n.s.stats().delivered_bytes > 100_000);
        assert_eq!(n.s.ecn_validation(), EcnValidation::NotApplicable, "{req:?}");
        assert_eq!(n.s.stats().ecn_validation, EcnValidation::NotApplicable);
    }
    // AccECN requested but the receiver only speaks classic ECN.
    let (fwd, rev) = paths();
    let mut n = Net::new(
        accecn_sender(mini_reno()),
        TcpReceiver::new(TcpReceiverConfig {
            accecn: false,
            ..Default::default()
        }),
        fwd,
        rev,
    );
    n.run_until(Time::from_secs(1), |_| false);
    assert_eq!(n.s.ecn_mode().name(), "classic");
    assert_eq!(n.s.ecn_validation(), EcnValidation::NotApplicable);
    // Receivers never validate.
    assert_eq!(n.r.stats().ecn_validation, EcnValidation::NotApplicable);
}

/// Hand-driven connection: handshake, then `k` ECT(1) segments delivered to the receiver,
/// returning the receiver's ACK for the caller to tamper with.
fn hand_driven(k: usize) -> (TcpSender, TcpReceiver, Transmit<TcpSegment>) {
    let mut s = accecn_sender(mini_reno());
    let mut r = TcpReceiver::new(TcpReceiverConfig {
        delayed_ack: false,
        ..Default::default()
    });
    let t = Time::ZERO;
    let syn = s.poll_transmit(t).unwrap();
    r.handle_packet(t, &syn.header, syn.size, syn.ecn);
    let sa = r.poll_transmit(t).unwrap();
    s.handle_packet(t, &sa.header, sa.size, sa.ecn);
    let ack = s.poll_transmit(t).unwrap();
    r.handle_packet(t, &ack.header, ack.size, ack.ecn);
    let mut last = None;
    for _ in 0..k {
        let d = s.poll_transmit(Time::from_millis(1)).unwrap();
        assert_eq!(d.ecn, Ecn::Ect1);
        r.handle_packet(Time::from_millis(2), &d.header, d.size, d.ecn);
        last = r.poll_transmit(Time::from_millis(2));
    }
    assert_eq!(s.ecn_validation(), EcnValidation::Testing);
    (s, r, last.unwrap())
}

#[test]
fn impossible_feedback_fails() {
    // More CE bytes than were ever sent.
    let (mut s, _, mut a) = hand_driven(2);
    a.header.accecn = Some(AccEcnOption {
        e0b: 1,
        ceb: 1_000_000,
        e1b: 1,
    });
    s.handle_packet(Time::from_millis(3), &a.header, a.size, a.ecn);
    assert!(matches!(
        s.ecn_validation(),
        EcnValidation::Failed {
            reason: EcnFailure::ImpossibleFeedback,
            ..
        }
    ));
    // A counter going backwards on an ACK that advances snd_una.
    let (mut s, _, mut a) = hand_driven(2);
    a.header.accecn = Some(AccEcnOption { e0b: 1, ceb: 0, e1b: 0 });
    s.handle_packet(Time::from_millis(3), &a.header, a.size, a.ecn);
    assert!(matches!(
        s.ecn_validation(),
        EcnValidation::Failed {
            reason: EcnFailure::ImpossibleFeedback,
            ..
        }
    ));
    // An honest ACK validates.
    let (mut s, _, a) = hand_driven(2);
    s.handle_packet(Time::from_millis(3), &a.header, a.size, a.ecn);
    assert_eq!(s.ecn_validation(), EcnValidation::Capable);
    // A zeroed ACE on the first ACK.
    let (mut s, _, mut a) = hand_driven(1);
    a.header.flags = a.header.flags.with_ace(0);
    s.handle_packet(Time::from_millis(3), &a.header, a.size, a.ecn);
    assert!(matches!(
        s.ecn_validation(),
        EcnValidation::Failed {
            reason: EcnFailure::ImpossibleFeedback,
            ..
        }
    ));
}

#[test]
fn stale_reordered_ack_is_ignored_not_failed() {
    let (mut s, mut r, a1) = hand_driven(2);
    // Two more segments; the receiver's next ACK is newer than `a1`.
    let d = s.poll_transmit(Time::from_millis(4)).unwrap();
    r.handle_packet(Time::from_millis(5), &d.header, d.size, d.ecn);
    let a2 = r.poll_transmit(Time::from_millis(5)).unwrap();
    s.handle_packet(Time::from_millis(6), &a2.header, a2.size, a2.ecn);
    assert_eq!(s.ecn_validation(), EcnValidation::Capable);
    let counters = s.accecn_counters();
    // `a1` arriving late as it is would be discarded (its ack is below snd_una); with the
    // current ack but its older counters it is superseded feedback that advances nothing.
    let mut stale = a1.header;
    stale.ack = a2.header.ack;
    s.handle_packet(Time::from_millis(7), &stale, a1.size, a1.ecn);
    assert_eq!(s.ecn_validation(), EcnValidation::Capable);
    assert_eq!(s.accecn_counters(), counters);
    assert_eq!(s.stats().congestion_events, 0);
}

#[test]
fn handshake_mangling_is_recorded_but_ce_still_counts() {
    let mut s = accecn_sender(mini_reno());
    let mut r = TcpReceiver::new(TcpReceiverConfig::default());
    let syn = s.poll_transmit(Time::ZERO).unwrap();
    // The SYN left Not-ECT but arrived ECT(0).
    r.handle_packet(Time::ZERO, &syn.header, syn.size, Ecn::Ect0);
    let sa = r.poll_transmit(Time::ZERO).unwrap();
    s.handle_packet(Time::ZERO, &sa.header, sa.size, sa.ecn);
    assert!(matches!(
        s.ecn_validation(),
        EcnValidation::Failed {
            reason: EcnFailure::Remarked,
            ..
        }
    ));
    let _ack = s.poll_transmit(Time::ZERO).unwrap();
    let d = s.poll_transmit(Time::ZERO).unwrap();
    assert_eq!(d.ecn, Ecn::NotEct);
}

#[test]
fn random_feedback_never_panics() {
    let mut rng = Rng::new(9);
    for round in 0..30u64 {
        let (mut s, _, a) = hand_driven(1 + (round % 4) as usize);
        let mut now = Time::from_millis(3);
        for _ in 0..500 {
            now += Dur(rng.below(2_000_000));
            let mut h = a.header;
            h.ack = match rng.below(3) {
                0 => h.ack,
                1 => rng.next_u64(),
                _ => s.snd_una() + rng.below(3000),
            };
            h.flags = h.flags.with_ace(rng.below(8) as u8);
            h.accecn = if rng.chance(0.7) {
                Some(AccEcnOption {
                    e0b: rng.next_u32(),
                    ceb: rng.next_u32(),
                    e1b: rng.next_u32(),
                })
            } else {
                None
            };
            s.handle_packet(now, &h, a.size, Ecn::from_bits(rng.below(4) as u8));
            while s.poll_transmit(now).is_some() {}
            if s.poll_timeout().is_some_and(|t| t <= now) {
                s.handle_timeout(now);
            }
            let _ = s.stats();
        }
    }
}

#[test]
fn without_the_option_ace_packet_counts_still_catch_all_ce() {
    // Clean path, option stripped: no byte counters, so nothing can be validated (Testing),
    // but nothing fails and CE still works.
    let mut n = net(mini_reno(), Time::MAX, identity);
    n.s.strip_option = true;
    n.run_until(Time::from_secs(3), |_| false);
    assert_eq!(n.s.s.ecn_validation(), EcnValidation::Testing);
    assert!(n.s.sent.iter().all(|x| x.2 == Ecn::Ect1));
    assert!(n.s.stats().congestion_events > 5);
    // All-CE with the option stripped: the ACE packet counts show it.
    let mut n = net(mini_reno(), Time::ZERO, mark_ect);
    n.s.strip_option = true;
    let (_, reason, _) = run_to_failure(&mut n, Time::from_secs(3));
    assert_eq!(reason, EcnFailure::AllCe);
}
