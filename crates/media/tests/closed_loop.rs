//! Closed-loop behaviour of the media senders over a simple bottleneck (tests/common): SCReAM
//! (L4S, classic, capacity halving), RT-Prague frame mode, and ECN validation (RFC 9000
//! §13.4.2 style).

mod common;

use common::*;
use l4s_core::{Dur, Ecn, Rate, Time};
use l4s_media::{FrameMeter, FrameMeterConfig, MediaConfig, MediaParams};
use l4s_transport::{EcnFailure, EcnValidation, Endpoint};

fn params(s: &str) -> MediaParams {
    toml::from_str::<MediaConfig>(s)
        .unwrap()
        .resolve(Dur::from_secs(60))
        .unwrap()
}

const OWD: Dur = Dur::from_micros(12_500); // 25 ms base RTT
const STEP_1MS: Aqm = Aqm::Step(Dur::from_millis(1));

/// A smooth (CBR-like) encoder that can exceed the link: the set-up of the SCReAM tests below.
const SMOOTH: &str =
    "profile = \"cloud-gaming\"\nmax_bitrate = \"60Mbit\"\ncomplexity = 0.0\nkeyframe_interval = \"0s\"";

/// SCReAM L4S at 50 Mbit/s, 25 ms RTT, 1 ms step marking.
///
/// Measured: p99 queue delay 1.08 ms, mean target 34.2 Mbit/s (68 % of capacity; wire
/// goodput 72 %), no RTP queue discard. The target derived from SCReAM's design (its rate
/// from cwnd and sRtt, less what L4S costs through the window headroom) is ≥ 70 %; this model
/// sits just below it because (a) cwnd counts RTP bytes, 3.4 % below the wire bytes the link
/// carries, (b) rule 6 divides by 1.1 and by (MSS + 20)/MSS, and (c) the target moves only
/// by more than +5 % (our hysteresis choice). The assertion is the measured value with a
/// margin, not that derived band.
#[test]
fn scream_l4s_50mbit_low_queue_and_high_rate() {
    let p = params(SMOOTH);
    let mut s = Sim::new(&p, Net::new(Rate::mbps(50), STEP_1MS, 10_000, OWD), 1);
    s.run_until(Time::from_secs(5));
    let discards_at_5s = s.tx.media_stats().rtp_queue_discards;
    s.run_until(Time::from_secs(20));
    let soj = s.trace.sojourn_after(Time::from_secs(5));
    let p99 = pct(&soj, 0.99);
    assert!(p99 <= Dur::from_millis(5), "p99 queue delay {p99}");
    let mean = s.trace.mean_target(Time::from_secs(5), Time::from_secs(20));
    assert!(mean >= 0.65 * 50e6, "mean target {:.1} Mbit/s", mean / 1e6);
    assert!(mean <= 50e6, "target above capacity: {mean}");
    let goodput = s.trace.goodput(Time::from_secs(5), Time::from_secs(20));
    assert!(goodput >= 0.68 * 50e6, "goodput {:.1} Mbit/s", goodput / 1e6);
    assert_eq!(
        s.tx.media_stats().rtp_queue_discards,
        discards_at_5s,
        "no RTP queue discards after 5 s"
    );
    assert_eq!(s.tx.stats().ecn_validation, EcnValidation::Capable);
    assert!(s.trace.marks > 100, "the marker was exercised");
    assert_eq!(s.trace.drops, 0);
}

/// Capacity halving 50 → 25 Mbit/s at 10 s: the target falls below the new capacity
/// within 1 s and stays there, with at most one RTP queue discard.
#[test]
fn scream_l4s_capacity_halving() {
    let p = params(SMOOTH);
    let mut net = Net::new(Rate::mbps(50), STEP_1MS, 10_000, OWD);
    net.rate_changes.push((Time::from_secs(10), Rate::mbps(25)));
    let mut s = Sim::new(&p, net, 2);
    s.run_until(Time::from_secs(10));
    let before = s.trace.mean_target(Time::from_secs(5), Time::from_secs(10));
    assert!(before > 25e6, "the target must start above the new capacity: {before}");
    let discards = s.tx.media_stats().rtp_queue_discards;
    s.run_until(Time::from_secs(16));
    let below: Vec<_> = s
        .trace
        .targets
        .iter()
        .filter(|(t, _, _)| *t > Time::from_secs(10))
        .map(|&(t, r, _)| (t, r))
        .collect();
    let first = below
        .iter()
        .find(|(_, r)| *r < Rate::mbps(25))
        .map(|(t, _)| *t)
        .unwrap();
    assert!(first <= Time::from_secs(11), "target below 25 Mbit/s only at {first}");
    for &(t, r) in below.iter().filter(|(t, _)| *t >= Time::from_secs(11)) {
        assert!(r < Rate::mbps(25), "target {r} at {t}");
    }
    assert!(s.tx.media_stats().rtp_queue_discards - discards <= 1);
    // Queue delay after re-convergence stays low.
    let p99 = pct(&s.trace.sojourn_after(Time::from_secs(11)), 0.99);
    assert!(p99 <= Dur::from_millis(5), "{p99}");
}

/// No ECN, deep FIFO (1000 packets ≈ 200 ms at 50 Mbit/s): the delay-based virtual CE (SCReAM
/// rule 3, acting above T/2) keeps the mean queue delay below T/2 + 10 ms = 60 ms while the
/// link stays busy.
/// Measured: mean 36.8 ms, p99 53.9 ms, goodput 50.0 Mbit/s.
#[test]
fn scream_classic_deep_fifo_keeps_queue_below_60ms() {
    let p = params(&format!("{SMOOTH}\nl4s = false"));
    assert_eq!(p.ecn, Ecn::NotEct);
    let mut s = Sim::new(&p, Net::new(Rate::mbps(50), Aqm::DropTail, 1000, OWD), 3);
    s.run_until(Time::from_secs(30));
    let soj = s.trace.sojourn_after(Time::from_secs(10));
    let mean = Dur::from_nanos(soj.iter().map(|d| d.as_nanos()).sum::<u64>() / soj.len() as u64);
    assert!(mean < Dur::from_millis(60), "mean queue delay {mean}");
    assert!(
        mean > Dur::from_millis(10),
        "a classic sender does build some queue: {mean}"
    );
    let goodput = s.trace.goodput(Time::from_secs(10), Time::from_secs(30));
    assert!(goodput > 0.9 * 50e6, "goodput {goodput}");
    assert!(s.tx.scream().unwrap().virtual_ce_events > 10);
    assert_eq!(s.tx.stats().ecn_validation, EcnValidation::NotApplicable);
}

/// RT-Prague in frame mode (udp_prague `GetCCInfoVideo`) converges: after the ramp the target stays within ±10 %
/// of its mean, the L4S queue stays short, and the wire rate stays below capacity.
///
/// Measured: mean target 31.7 Mbit/s (frame_size·fps with a 10 ms budget, pacing ≈ 55
/// Mbit/s within a frame), p99 queue 1.2 ms, goodput 30.9 Mbit/s, 6.8 % of the frames
/// skipped. With srtt 25 ms and a 10 ms budget a frame stays in flight for ≈ 2.1 frame
/// intervals while `frame_window = packet_window·packet_size/frame_size` = ⌊2.6⌋ = 2
/// (udp_prague's own frame window rule); as in `udp_prague_sender.cpp` a frame still starts
/// with 2 complete frames in flight (`frame_inflight <= frame_window`), and one that finds
/// the window full starts as soon as an acknowledgement frees room, so only a frame whose
/// room does not come before the next tick is skipped. (Skipping every frame that found
/// the window full at its tick, and starting one only below the window, skipped a third.)
#[test]
fn rt_prague_frame_mode_converges() {
    let p = params("profile = \"cloud-gaming\"\ncontroller = \"rt-prague\"\nmax_bitrate = \"60Mbit\"");
    let mut s = Sim::new(&p, Net::new(Rate::mbps(50), STEP_1MS, 10_000, OWD), 4);
    s.run_until(Time::from_secs(20));
    let tail: Vec<f64> = s
        .trace
        .targets
        .iter()
        .filter(|(t, _, _)| *t >= Time::from_secs(5))
        .map(|(_, r, _)| r.0 as f64)
        .collect();
    let mean = tail.iter().sum::<f64>() / tail.len() as f64;
    assert!(mean > 20e6 && mean < 50e6, "mean target {mean}");
    for &x in &tail {
        assert!((x / mean - 1.0).abs() < 0.10, "target {x} vs mean {mean}");
    }
    let p99 = pct(&s.trace.sojourn_after(Time::from_secs(5)), 0.99);
    assert!(p99 <= Dur::from_millis(5), "{p99}");
    let goodput = s.trace.goodput(Time::from_secs(5), Time::from_secs(20));
    assert!(goodput < 50e6 && goodput > 15e6, "{goodput}");
    let m = s.tx.media_stats();
    let skipped = m.frames_skipped as f64 / (m.frames_skipped + m.frames_encoded) as f64;
    eprintln!(
        "rt-prague frame mode: mean target {:.1} Mbit/s, p99 queue {p99}, goodput {:.1} Mbit/s, skipped {:.1} %",
        mean / 1e6,
        goodput / 1e6,
        skipped * 100.0
    );
    assert!((0.02..0.15).contains(&skipped), "skipped fraction {skipped}");
    let cc = s.tx.rt_prague().unwrap().cc();
    assert!(cc.ce_events > 50 && cc.alpha() > 0.0 && cc.alpha() < 0.2);
}

/// Per-frame metrics end to end: an L4S flow with spare capacity delivers every frame,
/// none late, no stall; a classic flow behind a 1000-packet FIFO has much larger frame
/// delays (measured at 30 Mbit/s: p99 33.6 ms with 119 late frames vs 91.8 ms with 867
/// late frames of 900).
#[test]
fn frame_metrics_l4s_vs_classic_fifo() {
    let run = |toml_s: &str, aqm: Aqm, limit: usize| {
        let p = params(toml_s);
        let mut s = Sim::new(&p, Net::new(Rate::mbps(30), aqm, limit, OWD), 5);
        s.run_until(Time::from_secs(20));
        let mut m = FrameMeter::new(
            FrameMeterConfig {
                frame_interval: p.frame_interval,
                deadline: p.frame_deadline,
                stall_gap: p.stall_gap,
                base_owd: OWD,
            },
            Time::from_secs(5),
        );
        for f in s.trace.frames.iter().filter(|f| f.first_sent >= Time::from_secs(5)) {
            m.on_frame(f);
        }
        (m.finish(Time::from_secs(20)), s)
    };
    let (l4s, s) = run("profile = \"cloud-gaming\"", STEP_1MS, 10_000);
    // (30 Mbit/s link: both flows are capacity-limited, so the FIFO fills.)
    assert_eq!(l4s.frames_incomplete, 0);
    assert_eq!(l4s.stall_time, Dur::ZERO);
    assert!((l4s.mean_fps - 60.0).abs() < 0.5, "{}", l4s.mean_fps);
    // p99 frame delay under one frame interval plus the base RTT plus 5 ms.
    let bound = p_frame(&s) + Dur::from_millis(25) + Dur::from_millis(5);
    assert!(l4s.delay_p99 < bound, "L4S p99 frame delay {} ≥ {bound}", l4s.delay_p99);
    let (classic, _) = run("profile = \"cloud-gaming\"\nl4s = false", Aqm::DropTail, 1000);
    assert!(
        classic.delay_p99.as_nanos() > 2 * l4s.delay_p99.as_nanos(),
        "classic {} vs L4S {}",
        classic.delay_p99,
        l4s.delay_p99
    );
    assert!(classic.frames_late > l4s.frames_late);
}

fn p_frame(s: &Sim) -> Dur {
    s.tx.params().frame_interval
}

/// Table-driven ECN validation (§5.3, RFC 9000 §13.4.2 style) for both controllers.
#[test]
fn ecn_validation_table() {
    struct Case {
        name: &'static str,
        fault: Option<FwdFault>,
        expect: Option<EcnFailure>,
    }
    let cases = [
        Case {
            name: "clean path",
            fault: None,
            expect: None,
        },
        Case {
            name: "bleaching",
            fault: Some(FwdFault::Bleach),
            expect: Some(EcnFailure::Bleached),
        },
        Case {
            name: "remarking",
            fault: Some(FwdFault::Remark),
            expect: Some(EcnFailure::Remarked),
        },
    ];
    for controller in ["scream", "rt-prague"] {
        for c in &cases {
            let p = params(&format!("profile = \"video-call\"\ncontroller = \"{controller}\""));
            let mut net = Net::new(Rate::mbps(20), STEP_1MS, 10_000, OWD);
            let fault_at = Time::from_secs(2);
            net.fwd_fault = c.fault.map(|f| (fault_at, f));
            let mut s = Sim::new(&p, net, 6);
            s.run_until(Time::from_secs(1));
            assert_eq!(
                s.tx.stats().ecn_validation,
                EcnValidation::Capable,
                "{controller} {}",
                c.name
            );
            s.run_until(Time::from_secs(5));
            let v = s.tx.stats().ecn_validation;
            match c.expect {
                None => {
                    assert_eq!(v, EcnValidation::Capable, "{controller} {}", c.name);
                    assert!(s.tx.media_stats().l4s_active);
                }
                Some(reason) => {
                    let EcnValidation::Failed { at, reason: got } = v else {
                        panic!("{controller} {}: {v:?}", c.name);
                    };
                    assert_eq!(got, reason, "{controller} {}", c.name);
                    // Detected from the first report covering a faulted packet: within one
                    // RTT plus one report interval (frame 33 ms, audio 20 ms) of the fault
                    // (measured: 46 ms for SCReAM, 45 ms for RT-Prague).
                    assert!(
                        at >= fault_at && at <= fault_at + Dur::from_millis(25 + 34),
                        "{controller} {}: at {at}",
                        c.name
                    );
                    assert!(!s.tx.media_stats().l4s_active);
                    // Everything sent after the failure is Not-ECT.
                    let t = s.tx.poll_transmit(s.now());
                    if let Some(t) = t {
                        assert_eq!(t.ecn, Ecn::NotEct);
                    }
                }
            }
        }
    }
}

/// After a failure no CE is trusted: a reverse path that rewrites every report to CE
/// changes neither the CE count nor the rate (scenario S7 of docs/validation.md).
#[test]
fn ce_ignored_after_validation_failure() {
    for controller in ["scream", "rt-prague"] {
        let p = params(&format!("profile = \"video-call\"\ncontroller = \"{controller}\""));
        let mut net = Net::new(Rate::mbps(20), STEP_1MS, 10_000, OWD);
        net.fwd_fault = Some((Time::from_secs(2), FwdFault::Bleach));
        net.rev_fault = Some((Time::from_secs(3), RevFault::AllCe));
        let mut s = Sim::new(&p, net, 7);
        s.run_until(Time::from_secs(3));
        assert!(s.tx.stats().ecn_validation.is_failed(), "{controller}");
        let ce = s.tx.stats().ce_packets;
        let before = s.trace.mean_target(Time::from_millis(2500), Time::from_secs(3));
        s.run_until(Time::from_secs(8));
        assert_eq!(s.tx.stats().ce_packets, ce, "{controller}: CE counted after failure");
        let after = s.trace.mean_target(Time::from_secs(6), Time::from_secs(8));
        assert!(
            after >= 0.9 * before,
            "{controller}: target fell on untrusted CE: {before} → {after}"
        );
    }
    // Control: the same lying reverse path on a validated L4S flow does cut the rate.
    let p = params("profile = \"video-call\"");
    let mut net = Net::new(Rate::mbps(20), STEP_1MS, 10_000, OWD);
    net.rev_fault = Some((Time::from_secs(3), RevFault::AllCe));
    let mut s = Sim::new(&p, net, 7);
    s.run_until(Time::from_secs(8));
    assert!(s.tx.stats().ce_packets > 100);
    let before = s.trace.mean_target(Time::from_secs(2), Time::from_secs(3));
    let last = s.trace.targets.last().unwrap().1;
    // All-CE drives the window to its floor (2·MSS) and the target to that window's rate
    // (rule 6 at 2·1200 B and sRtt ≈ 25 ms: ≈ 0.53 Mbit/s), from several Mbit/s.
    let sc = s.tx.scream().unwrap();
    assert_eq!(sc.cwnd(), sc.cwnd_min());
    assert!(before > 2e6, "{before}");
    assert!(
        last.0 as f64 <= 1.05 * sc.rate_from_cwnd() && last <= Rate::kbps(600),
        "all-CE drives L4S SCReAM to its minimum window: {last}"
    );
}

/// A report for a sequence number never sent is impossible feedback.
#[test]
fn impossible_feedback_fails_validation() {
    use l4s_media::endpoint::{Feedback, MediaHeader, VIDEO_SSRC};
    use l4s_media::rfc8888::{encode_vec, CcfbReport, Metric, SsrcBlock};
    let p = params("profile = \"video-call\"");
    let mut s = Sim::new(&p, Net::new(Rate::mbps(20), STEP_1MS, 10_000, OWD), 8);
    s.run_until(Time::from_millis(500));
    assert_eq!(s.tx.stats().ecn_validation, EcnValidation::Capable);
    let sent = s.tx.stats().sent_packets;
    let bogus = CcfbReport {
        sender_ssrc: 1,
        blocks: vec![SsrcBlock {
            ssrc: VIDEO_SSRC,
            begin_seq: (sent + 100) as u16,
            metrics: vec![Metric {
                received: true,
                ecn: Ecn::Ect1,
                ato: 0,
            }],
        }],
        report_timestamp: l4s_media::rfc8888::ntp_mid32(s.now().as_nanos()),
    };
    let bytes = encode_vec(&bogus, p.count_convention);
    let now = s.now();
    s.tx.handle_packet(now, &MediaHeader::Feedback(Feedback { bytes }), 100, Ecn::NotEct);
    assert_eq!(
        s.tx.stats().ecn_validation,
        EcnValidation::Failed {
            at: now,
            reason: EcnFailure::ImpossibleFeedback
        }
    );
}

/// Malformed or truncated reports from a faulty reverse path are counted and ignored;
/// the flow keeps working on the intact ones. Lost reports likewise.
#[test]
fn malformed_and_lost_feedback_is_survived() {
    for controller in ["scream", "rt-prague"] {
        let p = params(&format!("profile = \"cloud-gaming\"\ncontroller = \"{controller}\""));
        let mut net = Net::new(Rate::mbps(30), STEP_1MS, 10_000, OWD);
        net.rev_fault = Some((Time::from_secs(1), RevFault::Corrupt(0.3)));
        let mut s = Sim::new(&p, net, 9);
        s.run_until(Time::from_secs(10));
        let m = s.tx.media_stats();
        let sent = s.rx.stats().sent_packets;
        assert!(m.feedback_malformed > 100, "{controller}: {m:?}");
        // Every report the receiver sent was counted, except the few still on the wire.
        let counted = m.feedback_reports + m.feedback_malformed + m.feedback_stale;
        assert!(
            counted <= sent && counted + 4 >= sent,
            "{controller}: {counted} of {sent}"
        );
        assert!(
            m.l4s_active,
            "{controller}: undecodable reports must not fail ECN validation"
        );
        // SCReAM, as its reference (`detectLoss`), counts a packet that no received report
        // acknowledged lost once 512 newer ones are: the packets of a lost or unreadable
        // report that the next one does not cover again (ours covers at least the last 32)
        // are losses to it, and it backs off. RT-Prague's missing reports give no signal.
        let floor = if controller == "scream" { 0.15 } else { 0.3 };
        let mean = s.trace.mean_target(Time::from_secs(5), Time::from_secs(10));
        eprintln!(
            "{controller}, 30 % of reports corrupted: mean target {:.2} Mbit/s",
            mean / 1e6
        );
        assert!(mean > floor * 30e6, "{controller}: target {mean}");
        let p99 = pct(&s.trace.sojourn_after(Time::from_secs(5)), 0.99);
        assert!(p99 <= Dur::from_millis(5), "{controller}: {p99}");

        let mut net = Net::new(Rate::mbps(30), STEP_1MS, 10_000, OWD);
        net.rev_fault = Some((Time::from_secs(1), RevFault::Drop(0.3)));
        let mut s = Sim::new(&p, net, 10);
        s.run_until(Time::from_secs(10));
        let mean = s.trace.mean_target(Time::from_secs(5), Time::from_secs(10));
        eprintln!(
            "{controller}, 30 % of reports lost: mean target {:.2} Mbit/s",
            mean / 1e6
        );
        assert!(
            mean > floor * 30e6,
            "{controller}: target {mean} with 30 % report loss {:?} {:?}",
            s.tx.media_stats(),
            s.tx.stats()
        );
        assert_eq!(s.tx.media_stats().feedback_timeouts, 0, "{controller}");
    }
}

/// Garbage inside reports (bytes overwritten, which may still decode): never a panic, and
/// the flow keeps delivering frames (it may fall back to classic on impossible feedback,
/// which is what a lying path deserves).
#[test]
fn garbage_feedback_never_stalls_the_flow() {
    for controller in ["scream", "rt-prague"] {
        let p = params(&format!("profile = \"cloud-gaming\"\ncontroller = \"{controller}\""));
        let mut net = Net::new(Rate::mbps(30), STEP_1MS, 10_000, OWD);
        net.rev_fault = Some((Time::from_secs(1), RevFault::Garbage(0.3)));
        let mut s = Sim::new(&p, net, 13);
        s.run_until(Time::from_secs(10));
        let late = s
            .trace
            .frames
            .iter()
            .filter(|f| f.completed >= Time::from_secs(8))
            .count();
        assert!(
            late > 20,
            "{controller}: {late} frames in the last 2 s (a stall would be 0)"
        );
        let m = s.tx.media_stats();
        let counted = m.feedback_reports + m.feedback_malformed + m.feedback_stale;
        let sent = s.rx.stats().sent_packets;
        assert!(
            counted <= sent && counted + 4 >= sent,
            "{controller}: {counted} of {sent}"
        );
    }
}

/// video-call emits audio every 20 ms exactly, not rate-controlled, beside the video.
#[test]
fn video_call_audio_every_20ms() {
    let p = params("profile = \"video-call\"");
    let mut s = Sim::new(&p, Net::new(Rate::mbps(2), STEP_1MS, 10_000, OWD), 11);
    s.run_until(Time::from_millis(999));
    assert_eq!(s.trace.audio_sent.len(), 50);
    for w in s.trace.audio_sent.windows(2) {
        assert_eq!(w[1] - w[0], Dur::from_millis(20));
    }
    // Audio keeps its cadence even on a congested path.
    s.run_until(Time::from_millis(9_999));
    assert_eq!(s.trace.audio_sent.len(), 500);
    assert_eq!(s.tx.media_stats().audio_packets, 500);
}

/// Both RFC 8888 count conventions and both feedback cadences work end to end.
#[test]
fn feedback_conventions_and_cadences() {
    for extra in [
        "rfc8888_count_convention = \"count-minus-one\"",
        "feedback = \"10ms\"\nfeedback_packets = 0",
        "feedback = \"frame\"\nfeedback_packets = 0",
    ] {
        let p = params(&format!("profile = \"xr-h265\"\n{extra}"));
        let mut s = Sim::new(&p, Net::new(Rate::mbps(20), STEP_1MS, 10_000, OWD), 12);
        s.run_until(Time::from_secs(10));
        let m = s.tx.media_stats();
        assert_eq!(m.feedback_malformed, 0, "{extra}");
        assert!(m.feedback_reports >= 500, "{extra}: {}", m.feedback_reports);
        let mean = s.trace.mean_target(Time::from_secs(5), Time::from_secs(10));
        assert!(mean > 8e6 && mean <= 20e6, "{extra}: {mean}");
        assert_eq!(s.tx.stats().lost_packets, 0, "{extra}");
    }
}

/// End to end, a stream whose every video frame loses its last packet (the marker): no
/// frame completes, and every frame of the window the receiver saw part of is incomplete,
/// numbered from the sender's count of frames encoded when the window opened. Before, a
/// meter with no complete frame counted none of them (0 incomplete, late fraction 0).
#[test]
fn frames_that_never_complete_are_incomplete() {
    let p = params("profile = \"cloud-gaming\"");
    let mut net = Net::new(Rate::mbps(30), STEP_1MS, 10_000, OWD);
    net.fwd_fault = Some((Time::ZERO, FwdFault::DropFrameTail));
    let mut s = Sim::new(&p, net, 7);
    let (start, end) = (Time::from_secs(1), Time::from_secs(6));
    s.run_until(start);
    let first = s.tx.media_stats().frames_encoded;
    s.run_until(end);
    let encoded = s.tx.media_stats().frames_encoded - first;
    assert!(s.trace.frames.is_empty(), "{} frames completed", s.trace.frames.len());
    let m = FrameMeter::new(
        FrameMeterConfig {
            frame_interval: p.frame_interval,
            deadline: p.frame_deadline,
            stall_gap: p.stall_gap,
            base_owd: OWD,
        },
        start,
    );
    let highest = s.rx.highest_frame_seen().unwrap();
    let fs = m.finish_with_seen(end, Some(first), Some(highest));
    assert_eq!(fs.frames_complete, 0);
    assert_eq!(fs.frames_incomplete, highest + 1 - first);
    assert!(
        fs.frames_incomplete + 2 >= encoded && fs.frames_incomplete <= encoded,
        "{} incomplete of {encoded} encoded",
        fs.frames_incomplete
    );
    assert_eq!(fs.late_fraction, 1.0);
    assert_eq!(fs.stall_fraction, 1.0);
}

/// RT-Prague paces what udp_prague hands to its socket, the UDP payload, at the pacing
/// rate: a frame's bursts start `burst payload / pacing rate` apart (the Ethernet, IP and
/// UDP headers do not count).
#[test]
fn rt_prague_paces_the_udp_payload() {
    let p = params(&format!("{SMOOTH}\ncontroller = \"rt-prague\""));
    let mut tx = l4s_media::MediaSender::new(&p, l4s_core::Rng::new(1), Time::ZERO);
    let rate = tx.rt_prague().unwrap().pacing_rate();
    let burst = tx.rt_prague().unwrap().video().packet_burst.max(1) as usize;
    // The first frame, polled at every wake-up: (time, UDP payload) of each packet.
    let mut sent: Vec<(Time, u64)> = Vec::new();
    let mut now = Time::ZERO;
    while sent.len() < 4 * burst {
        while let Some(t) = tx.poll_transmit(now) {
            // The frame on the wire less Ethernet (14), IP (20) and UDP (8).
            sent.push((now, u64::from(t.size) - 42));
        }
        now = tx.poll_timeout().expect("a frame to send").max(now + Dur(1));
    }
    for b in 1..4 {
        let start = sent[b * burst].0;
        let prev = sent[(b - 1) * burst].0;
        let bytes: u64 = sent[(b - 1) * burst..b * burst].iter().map(|s| s.1).sum();
        let want = rate.tx_time(bytes);
        assert!(
            (start.as_nanos() as i64 - prev.as_nanos() as i64 - want.as_nanos() as i64).abs() <= 1_000,
            "burst {b}: {} apart, {bytes} payload bytes take {want} at {rate}",
            start - prev
        );
    }
}

/// udp_prague's RFC 8888 sender counts a packet lost as soon as a report covers it as not
/// received and takes the loss back when a later report has it received (`get_frame_stat`,
/// pkt_format.h); SCReAM waits until a packet sent `kReorderTime` (30 ms) later is
/// reported.
#[test]
fn rt_prague_counts_a_reported_gap_lost_at_once_and_takes_it_back() {
    for (controller, at_once) in [("rt-prague", true), ("scream", false)] {
        let p = params(&format!("{SMOOTH}\ncontroller = \"{controller}\""));
        let mut tx = l4s_media::MediaSender::new(&p, l4s_core::Rng::new(1), Time::ZERO);
        let mut now = Time::ZERO;
        let mut sent = 0;
        while sent < 12 {
            while tx.poll_transmit(now).is_some() {
                sent += 1;
            }
            now = tx.poll_timeout().expect("more to send").max(now + Dur(1));
        }
        let report = |tx: &mut l4s_media::MediaSender, at: Time, begin: u16, got: &[bool]| {
            feed_video_report(tx, &p, at, begin, got.iter().copied(), Ecn::Ect1);
            tx.stats().lost_packets
        };
        let t = now + Dur::from_millis(20);
        // Packets 0–5 reported, 2 missing: lost at once for RT-Prague only.
        let lost = report(&mut tx, t, 0, &[true, true, false, true, true, true]);
        assert_eq!(lost, u64::from(at_once), "{controller}: a reported gap");
        // Packet 2 turns up in the next report: the loss is taken back.
        assert_eq!(
            report(&mut tx, t + Dur::from_millis(1), 2, &[true]),
            0,
            "{controller}: reordered"
        );
        // A report that begins at 9 never covered 6–8 (their report was lost): no loss signal
        // with either controller.
        assert_eq!(
            report(&mut tx, t + Dur::from_millis(2), 9, &[true]),
            0,
            "{controller}: unreported"
        );
    }
}

/// SCReAM's `detectLoss` (ScreamV2Tx.cpp @c8f84c3): a packet below the highest acknowledged
/// sequence number leaves the flight at once (the "received edge"), and one that is never
/// acknowledged is lost once 512 newer ones are, whatever the reports covered.
#[test]
fn scream_detects_loss_as_its_reference_does() {
    // Acknowledge everything sent so far (packet 2 only if `with_2`), 10 ms apart, until
    // `upto` packets went out; (bytes in flight after the first report, lost at the end).
    let run = |with_2: bool, upto: u64| {
        let p = params(&format!("{SMOOTH}\ncontroller = \"scream\""));
        let mut tx = l4s_media::MediaSender::new(&p, l4s_core::Rng::new(1), Time::ZERO);
        let (mut now, mut sent, mut acked) = (Time::ZERO, 0u64, 0u64);
        let mut first_bif = None;
        while acked < upto {
            while tx.poll_transmit(now).is_some() {
                sent += 1;
            }
            now += Dur::from_millis(10);
            if sent > acked {
                let got = (acked..sent).map(|q| q != 2 || with_2);
                feed_video_report(&mut tx, &p, now, acked as u16, got, Ecn::NotEct);
                acked = sent;
                first_bif.get_or_insert(tx.media_stats().bytes_in_flight);
            }
        }
        (first_bif.unwrap(), tx.stats().lost_packets, acked)
    };
    // The first report leaves packet 2 out of the flight as if it had been acknowledged
    // (before, it stayed in flight until declared lost).
    let (bif_missing, lost_early, _) = run(false, 100);
    let (bif_all, lost_none, _) = run(true, 100);
    assert_eq!(bif_missing, bif_all);
    assert_eq!(lost_none, 0);
    // Packet 2 is declared lost once, by the 30 ms rule here (this window-limited sender
    // falls behind its frames' ticks) or at the latest 512 packets on.
    let (_, lost, acked) = run(false, 600);
    assert!(acked > 514, "{acked}");
    assert!(lost_early <= 1);
    assert_eq!(lost, 1);
}

/// Hand `tx` an RFC 8888 report at `at` for its video packets from `begin`, one per entry
/// of `received`, each with ECN `ecn` and no arrival-time offset.
fn feed_video_report(
    tx: &mut l4s_media::MediaSender,
    p: &MediaParams,
    at: Time,
    begin: u16,
    received: impl Iterator<Item = bool>,
    ecn: Ecn,
) {
    use l4s_media::endpoint::{Feedback, MediaHeader, VIDEO_SSRC};
    use l4s_media::rfc8888::{encode_vec, CcfbReport, Metric, SsrcBlock};
    let r = CcfbReport {
        sender_ssrc: 1,
        blocks: vec![SsrcBlock {
            ssrc: VIDEO_SSRC,
            begin_seq: begin,
            metrics: received.map(|received| Metric { received, ecn, ato: 0 }).collect(),
        }],
        report_timestamp: l4s_media::rfc8888::ntp_mid32(at.as_nanos()),
    };
    let bytes = encode_vec(&r, p.count_convention);
    tx.handle_packet(at, &MediaHeader::Feedback(Feedback { bytes }), 100, Ecn::NotEct);
}
