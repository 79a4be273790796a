//! Any byte string as a run of media datagrams (a 2-byte length before each): the media
//! wire decoder, the RFC 8888 decoder (both count conventions), the media receiver fed the
//! data packets and the media sender fed the reports must never panic, and the receiver
//! must never count more incomplete frames than the encoder can have captured by then
//! (hostile frame numbers are dropped: `MediaReceiver::plausible_frame`).
#![no_main]

use l4s_core::{Dur, Ecn, Rng, Time};
use l4s_media::config::CountConvention;
use l4s_media::{rfc8888, wire, FrameMeter, FrameMeterConfig, MediaHeader, MediaParams, MediaReceiver, MediaSender};
use l4s_transport::Endpoint;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for conv in [CountConvention::Count, CountConvention::CountMinusOne] {
        let _ = rfc8888::decode(data, conv);
    }
    let p = MediaParams::profile("cloud-gaming", "scream", true).expect("profile");
    let mut rx = MediaReceiver::new(&p, Time::ZERO);
    let mut tx = MediaSender::new(&p, Rng::new(1), Time::ZERO);
    let mut meter = FrameMeter::new(
        FrameMeterConfig {
            frame_interval: p.frame_interval,
            deadline: p.frame_interval,
            stall_gap: Dur::from_millis(100),
            base_owd: Dur::ZERO,
        },
        Time::ZERO,
    );
    let mut frames = Vec::new();
    let mut now = Time::ZERO;
    let mut rest = data;
    while rest.len() >= 2 {
        let len = (u16::from_be_bytes([rest[0], rest[1]]) as usize).min(rest.len() - 2);
        let (b, tail) = rest[2..].split_at(len);
        rest = tail;
        now += Dur::from_millis(1);
        // Keep the sender sending so that reports can match packets in flight.
        while let Some(t) = tx.poll_transmit(now) {
            if let MediaHeader::Data(_) = t.header {
                rx.handle_packet(now, &t.header, t.size, t.ecn);
            }
        }
        tx.handle_timeout(now);
        if let Ok(h) = wire::decode(b) {
            match h {
                MediaHeader::Data(_) => rx.handle_packet(now, &h, b.len() as u32, Ecn::Ect1),
                MediaHeader::Feedback(_) => tx.handle_packet(now, &h, b.len() as u32, Ecn::Ect1),
            }
        }
        while let Some(t) = rx.poll_transmit(now) {
            tx.handle_packet(now, &t.header, t.size, t.ecn);
        }
        rx.drain_frames(&mut frames);
        for f in frames.drain(..) {
            meter.on_frame(&f);
        }
    }
    let s = meter.finish_with_seen(now, Some(0), rx.highest_frame_seen());
    let bound = (now + l4s_media::endpoint::FRAME_CLOCK_SLACK).as_nanos() / p.frame_interval.as_nanos() + 2;
    assert!(s.frames_incomplete <= bound, "{} incomplete frames by {now}", s.frames_incomplete);
});
