//! Packets from the wire that no honest sender produces: a media receiver drops a data
//! packet whose frame number the encoder cannot have reached by its arrival, so one hostile
//! packet cannot make it report 4.6·10^18 incomplete frames (or, in a debug build, panic
//! on overflow), nor hide the real frames behind a far-ahead "complete" one.

use l4s_core::{Dur, Ecn, Time};
use l4s_media::endpoint::{FRAME_CLOCK_SLACK, VIDEO_SSRC};
use l4s_media::{wire, FrameMeter, FrameMeterConfig, MediaData, MediaHeader, MediaParams, MediaReceiver};
use l4s_transport::Endpoint;

fn packet(seq: u16, frame: u64, at: Time) -> MediaHeader {
    MediaHeader::Data(MediaData {
        ssrc: VIDEO_SSRC,
        seq,
        frame,
        index: 0,
        count: 1,
        frame_bytes: 1000,
        frame_first_sent: at,
        captured: at,
        sent_at: at,
        is_audio: false,
        marker: true,
        key: false,
    })
}

#[test]
fn a_frame_number_from_the_future_is_dropped() {
    let p = MediaParams::profile("cloud-gaming", "scream", true).unwrap();
    let iv = p.frame_interval;
    let mut rx = MediaReceiver::new(&p, Time::ZERO);
    let at = |n: u64| Time::ZERO + iv * n + Dur::from_millis(5);
    let mut seq = 0u16;
    let mut deliver = |rx: &mut MediaReceiver, frame: u64, now: Time| {
        // Through the wire format, as the live receiver reads it.
        let mut buf = [0u8; 128];
        let n = wire::encode(&packet(seq, frame, now), &mut buf).unwrap();
        let h = wire::decode(&buf[..n]).unwrap();
        rx.handle_packet(now, &h, 1200, Ecn::Ect1);
        seq = seq.wrapping_add(1);
    };
    for n in 0..10 {
        deliver(&mut rx, n, at(n));
    }
    // Hostile: far ahead (the reported 4.6·10^18), the largest number, and one just beyond
    // the slack; all "complete" single-packet frames.
    let now = at(10);
    let limit = (now + FRAME_CLOCK_SLACK).as_nanos() / iv.as_nanos() + 1;
    for f in [4_600_000_000_000_000_000, u64::MAX, limit + 1] {
        deliver(&mut rx, f, now);
    }
    assert_eq!(rx.implausible_packets(), 3);
    assert_eq!(rx.highest_frame_seen(), Some(9));
    for n in 10..20 {
        deliver(&mut rx, n, at(n));
    }
    // The real frames after the hostile ones still complete.
    assert_eq!(rx.frames_complete(), 20);
    // A number within the slack (a sender whose clock runs ahead) is kept.
    deliver(&mut rx, limit, now);
    assert_eq!(rx.implausible_packets(), 3);
    assert_eq!(rx.highest_frame_seen(), Some(limit));
    let mut frames = Vec::new();
    rx.drain_frames(&mut frames);
    let mut m = FrameMeter::new(
        FrameMeterConfig {
            frame_interval: iv,
            deadline: iv,
            stall_gap: Dur::from_millis(100),
            base_owd: Dur::ZERO,
        },
        Time::ZERO,
    );
    for f in &frames {
        m.on_frame(f);
    }
    let s = m.finish_with_seen(at(20), Some(0), rx.highest_frame_seen());
    // Frames 20..limit never arrived: bounded by the slack, not by the hostile numbers.
    assert!(s.frames_incomplete <= limit, "{s:?}");
}
