//! Frame metrics on hand-built traces: exact delays, late frames, stalls and frame rate.

use l4s_core::{Dur, Time};
use l4s_media::{FrameDone, FrameMeter, FrameMeterConfig};

fn ms(x: u64) -> Time {
    Time::from_millis(x)
}

fn cfg() -> FrameMeterConfig {
    // 50 fps (20 ms), deadline one frame interval, stall gap 100 ms, base OWD 10 ms.
    FrameMeterConfig {
        frame_interval: Dur::from_millis(20),
        deadline: Dur::from_millis(20),
        stall_gap: Dur::from_millis(100),
        base_owd: Dur::from_millis(10),
    }
}

fn frame(n: u64, sent: u64, done: u64) -> FrameDone {
    FrameDone {
        frame: n,
        captured: ms(sent),
        first_sent: ms(sent),
        completed: ms(done),
        bytes: 1000,
        packets: 1,
    }
}

/// 10 frames every 20 ms with delays 15, 16, ..., 24 ms, then frame 10 at 45 ms delay
/// (late: > 10 + 20 ms), over a 1 s run starting at 0 with frames from 0 to 200 ms.
#[test]
fn delays_late_and_rate() {
    let mut m = FrameMeter::new(cfg(), Time::ZERO);
    for n in 0..10 {
        m.on_frame(&frame(n, 20 * n, 20 * n + 15 + n));
    }
    m.on_frame(&frame(10, 200, 245));
    let s = m.finish(ms(300));
    assert_eq!(s.frames_complete, 11);
    assert_eq!(s.frames_late, 1);
    assert_eq!(s.frames_incomplete, 0);
    // Delays sorted: 15..=24, 45. Nearest rank: p50 = 6th = 20 ms, p90 = 10th = 24 ms,
    // p99 = 11th = 45 ms; from a histogram of 3 significant digits, at most 0.1 % above
    // and never below. The maximum is exact.
    for (got, want) in [(s.delay_p50, 20), (s.delay_p90, 24), (s.delay_p99, 45)] {
        let want = Dur::from_millis(want);
        assert!(
            got >= want && got.as_nanos() <= want.as_nanos() * 1001 / 1000,
            "{got} for {want}"
        );
    }
    assert_eq!(s.delay_max, Dur::from_millis(45));
    // Mean = (15+...+24 + 45)/11 = (195 + 45)/11.
    assert_eq!(s.delay_mean, Dur::from_nanos(240_000_000 / 11));
    assert!((s.mean_fps - 11.0 / 0.3).abs() < 1e-9);
    // No gap longer than 100 ms: 0→15, ... 204→245, 245→300 (55 ms).
    assert_eq!(s.stall_time, Dur::ZERO);
    assert_eq!(s.stall_fraction, 0.0);
    // A frame exactly at the deadline is not late (completed = sent + 10 + 20).
    assert!(!m.is_late(&frame(20, 400, 430)));
    assert!(m.is_late(&frame(20, 400, 431)));
}

/// Stalls at the start, in the middle and at the end count wholly.
#[test]
fn stalls_at_start_middle_and_end() {
    let mut m = FrameMeter::new(cfg(), ms(1000));
    // First frame 150 ms after the start: a 150 ms stall.
    m.on_frame(&frame(0, 1130, 1150));
    // Regular frames to 1250.
    for n in 1..=5 {
        m.on_frame(&frame(n, 1130 + 20 * n, 1150 + 20 * n));
    }
    // Gap 1250 → 1370 (120 ms > 100): stall 120 ms.
    m.on_frame(&frame(6, 1350, 1370));
    // Gap 1370 → 1470 (exactly 100 ms): not a stall.
    m.on_frame(&frame(7, 1450, 1470));
    // End at 2000: 530 ms since the last frame: stall.
    let s = m.finish(ms(2000));
    assert_eq!(s.stall_time, Dur::from_millis(150 + 120 + 530));
    assert!((s.stall_fraction - 0.8).abs() < 1e-12);
    assert_eq!(s.frames_complete, 8);
    assert!((s.mean_fps - 8.0).abs() < 1e-12);
    assert_eq!(s.frames_late, 0);
}

/// Frames that never complete: gaps before a later complete frame, and (with the
/// receiver's highest frame seen) frames after the last complete one at the end.
#[test]
fn incomplete_frames() {
    let mut m = FrameMeter::new(cfg(), Time::ZERO);
    m.on_frame(&frame(0, 0, 20));
    m.on_frame(&frame(1, 20, 40));
    // Frames 2 and 3 lost.
    m.on_frame(&frame(4, 80, 100));
    assert_eq!(m.finish(ms(120)).frames_incomplete, 2);
    // Frame 3 completes after all (reordered): no longer incomplete.
    m.on_frame(&frame(3, 60, 105));
    assert_eq!(m.finish(ms(120)).frames_incomplete, 1);
    assert_eq!(m.finish(ms(120)).frames_complete, 4);
    // The receiver saw parts of frames 5 and 6 but they never completed.
    assert_eq!(m.finish_with_seen(ms(200), None, Some(6)).frames_incomplete, 3);
    assert_eq!(m.finish_with_seen(ms(200), None, Some(4)).frames_incomplete, 1);
}

/// Snapshot intervals split a stall across the intervals it spans and add up to the total.
#[test]
fn intervals_split_stalls_and_sum_to_total() {
    let mut m = FrameMeter::new(cfg(), Time::ZERO);
    m.on_frame(&frame(0, 0, 20));
    m.on_frame(&frame(1, 20, 40));
    let a = m.interval(ms(100));
    assert_eq!((a.frames, a.late, a.stall_time), (2, 0, Dur::ZERO));
    assert!((a.fps - 20.0).abs() < 1e-9);
    assert_eq!(a.max_delay, Dur::from_millis(20));
    // No frame from 40 ms to 400 ms: the gap exceeds 100 ms at 140 ms; at 200 ms the
    // interval holds the stall so far (40 → 200).
    let b = m.interval(ms(200));
    assert_eq!((b.frames, b.stall_time), (0, Dur::from_millis(160)));
    m.on_frame(&frame(2, 360, 400));
    let c = m.interval(ms(500));
    assert_eq!(c.frames, 1);
    assert_eq!(c.stall_time, Dur::from_millis(200));
    assert_eq!(c.max_delay, Dur::from_millis(40));
    assert_eq!(c.late, 1, "40 ms > 10 + 20 ms");
    let s = m.finish(ms(500));
    assert_eq!(s.stall_time, a.stall_time + b.stall_time + c.stall_time);
    assert_eq!(s.stall_time, Dur::from_millis(360));
}

/// A meter opened while earlier frames are still queued at the sender (the simulator's
/// statistics window opening mid-flow) counts only frames captured in its window: before,
/// frames 40–49 (captured before the window, completing after it opened) were counted
/// complete and a discarded one incomplete, so complete + incomplete exceeded the frames
/// the encoder produced in the window.
#[test]
fn window_counts_only_frames_captured_in_it() {
    let start = 1000;
    let mut m = FrameMeter::new(cfg(), ms(start));
    // Frames 40..=49 captured at 800..980 ms, delivered late (RTP queue) from 1005 ms on;
    // frame 45 was discarded at the sender.
    for n in (40..50).filter(|&n| n != 45) {
        let cap = 800 + 20 * (n - 40);
        let mut f = frame(n, cap, 1005 + 5 * (n - 40));
        f.first_sent = ms(cap + 150);
        m.on_frame(&f);
    }
    // In-window frames 50..=74 captured 1000..1480 ms; 60 and 61 discarded, 74 seen only
    // in part at the end.
    for n in (50..74).filter(|n| !(60..=61).contains(n)) {
        let cap = start + 20 * (n - 50);
        m.on_frame(&frame(n, cap, cap + 30));
    }
    let s = m.finish_with_seen(ms(1500), None, Some(74));
    let encoded_in_window = 25; // frames 50..=74
    assert_eq!(s.frames_complete, 22);
    assert_eq!(s.frames_incomplete, 3, "60, 61 and the partial 74");
    assert_eq!(s.frames_complete + s.frames_incomplete, encoded_in_window);
    // The pre-window frames ended the start-up gap (no stall) but add no delay samples:
    // every counted delay is 30 ms.
    assert_eq!(s.stall_time, Dur::ZERO);
    assert_eq!(s.delay_max, Dur::from_millis(30));
    assert_eq!(s.frames_late, 0);
}

/// A stream whose every frame loses a packet: the receiver sees packets of every frame but
/// completes none. Every frame of the window the receiver saw part of is incomplete (frames
/// 50..=99 of a window whose first frame is 50; 100..=102 were never seen), and every one
/// of them counts as late or incomplete. Before, with no complete frame to number from,
/// none was counted: 0 incomplete and a late fraction of 0.
#[test]
fn every_frame_losing_a_packet_is_incomplete() {
    let m = FrameMeter::new(cfg(), ms(1000));
    let s = m.finish_with_seen(ms(2000), Some(50), Some(99));
    assert_eq!(s.frames_complete, 0);
    assert_eq!(s.frames_incomplete, 50);
    assert_eq!(s.late_fraction, 1.0);
    assert_eq!(s.stall_time, Dur::from_millis(1000));
}

/// Frames of the window lost before the first one that completes: with the window's first
/// frame known they are incomplete too (one of them completing late is not), and the
/// late-or-incomplete fraction counts them. Without it the meter numbers from the first
/// complete frame.
#[test]
fn frames_lost_before_the_first_complete_one_are_incomplete() {
    let mut m = FrameMeter::new(cfg(), ms(1000));
    // Window frames 50..=59 captured 1000..1180 ms; 50..=54 lost, 55..=59 complete in 30 ms.
    for n in 55..60 {
        let cap = 1000 + 20 * (n - 50);
        m.on_frame(&frame(n, cap, cap + 30));
    }
    assert_eq!(m.finish_with_seen(ms(1200), None, Some(59)).frames_incomplete, 0);
    let s = m.finish_with_seen(ms(1200), Some(50), Some(59));
    assert_eq!((s.frames_complete, s.frames_incomplete), (5, 5));
    assert_eq!(s.late_fraction, 0.5);
    // Frame 52 completes after all (reordered), 60 ms late: 4 incomplete, 1 late.
    m.on_frame(&frame(52, 1040, 1200));
    let s = m.finish_with_seen(ms(1200), Some(50), Some(59));
    assert_eq!((s.frames_complete, s.frames_incomplete, s.frames_late), (6, 4, 1));
    assert_eq!(s.late_fraction, 0.5);
}
