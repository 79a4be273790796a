//! Media flows on real sockets: the sans-IO [`MediaSender`] and [`MediaReceiver`] the
//! simulator drives, fed with the real clock and datagrams on [`EcnUdpSocket`]s that set
//! the ECN field per packet, exactly as [`crate::endpoints`] runs UDP Prague.
//!
//! On the wire: the common live header ([`crate::wire`], kinds
//! [`wire::KIND_MEDIA_DATA`] and [`wire::KIND_MEDIA_FEEDBACK`]) followed by
//! `l4s_media::wire`'s encoding of the [`MediaHeader`], zero-padded to the packet size the
//! sender asked for. The receiver's completed frames go to the flow's
//! [`crate::meter::MediaMeter`]; the sender's media counters (target bitrate, frames
//! encoded) are reported to it every 10 ms.

use crate::endpoints::{precise_timers, wait_fd, FlowCtx};
use crate::udp::EcnUdpSocket;
use crate::wire;
use l4s_core::{Dur, Ecn, Time};
use l4s_media::{FrameDone, MediaHeader, MediaReceiver, MediaSender};
use l4s_transport::Endpoint;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

/// Longest wait between checks of the stop flag and the flow's times.
const TICK: Dur = Dur::from_millis(10);
/// Smallest media datagram payload: the live header and the media data header.
pub const MIN_MEDIA_PAYLOAD: usize = wire::COMMON_LEN + l4s_media::wire::DATA_LEN;

fn would_block(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

/// Encode a media datagram into `out`: the payload length, or `None` if it does not fit.
fn encode(ctx: &FlowCtx, h: &MediaHeader, size: u32, seq32: u32, sent: Time, out: &mut [u8]) -> Option<usize> {
    let need = wire::COMMON_LEN + l4s_media::wire::encoded_len(h);
    let len = wire::payload_len(size, ctx.ipv6).max(need);
    if len > out.len() {
        return None;
    }
    let kind = match h {
        MediaHeader::Data(_) => wire::KIND_MEDIA_DATA,
        MediaHeader::Feedback(_) => wire::KIND_MEDIA_FEEDBACK,
    };
    if !wire::encode_common(kind, ctx.index, sent, seq32, &mut out[..len]) {
        return None;
    }
    l4s_media::wire::encode(h, &mut out[wire::COMMON_LEN..len]).ok()?;
    Some(len)
}

/// Decode a media datagram of flow `ctx.index`: `(send time, seq32, header)`.
fn decode(ctx: &FlowCtx, b: &[u8]) -> Option<(Time, u32, MediaHeader)> {
    let (kind, flow, sent, seq32, rest) = wire::decode_common(b)?;
    if flow != ctx.index || !matches!(kind, wire::KIND_MEDIA_DATA | wire::KIND_MEDIA_FEEDBACK) {
        return None;
    }
    let h = l4s_media::wire::decode(rest).ok()?;
    // The kind and the media type must agree.
    match (&h, kind) {
        (MediaHeader::Data(_), wire::KIND_MEDIA_DATA) | (MediaHeader::Feedback(_), wire::KIND_MEDIA_FEEDBACK) => {
            Some((sent, seq32, h))
        }
        _ => None,
    }
}

/// Run a media sender from `ctx.start` to the end of the run: media to `dst`, RFC 8888
/// feedback read from the same socket.
pub fn run_media_sender(ctx: &FlowCtx, sock: EcnUdpSocket, dst: SocketAddr, mut ep: MediaSender) {
    precise_timers();
    if let Err(e) = sock.set_nonblocking(true) {
        ctx.meter.fail(format!("flow {}: {e}", ctx.name));
        return;
    }
    ctx.clock.sleep_until(ctx.start, &ctx.stop_flag);
    let mut out = vec![0u8; 65_536];
    let mut inb = vec![0u8; 65_536];
    let mut closed = false;
    let mut last_stats: Option<Time> = None;
    let mut send_errors = 0u64;
    let mut seq: u64 = 0;
    let report = |ep: &MediaSender, now: Time| {
        let mut m = ctx.meter.lock();
        m.on_sender_stats(now, ep.stats());
        if let Some(mm) = m.media.as_mut() {
            mm.on_sender(now, ep.media_stats());
        }
    };
    loop {
        let now = ctx.clock.now();
        if now >= ctx.end || ctx.stop_flag.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        if !closed && now >= ctx.stop {
            ep.close(now);
            closed = true;
        }
        loop {
            let got = match sock.recv_from(&mut inb) {
                Ok(g) => g,
                Err(e) if would_block(&e) || e.kind() == io::ErrorKind::ConnectionRefused => break,
                Err(e) => {
                    ctx.meter.fail(format!("flow {}: receiving feedback: {e}", ctx.name));
                    return;
                }
            };
            let at = Time(ctx.clock.now().as_nanos().saturating_sub(got.queued.as_nanos() as u64));
            if got.truncated {
                continue;
            }
            let Some((_, _, h)) = decode(ctx, &inb[..got.len]) else {
                continue;
            };
            ep.handle_packet(
                at,
                &h,
                wire::frame_len(got.len, ctx.ipv6),
                got.ecn().unwrap_or(Ecn::NotEct),
            );
            if let Some(r) = ep.take_rtt_sample() {
                ctx.meter.lock().on_rtt(at, r);
            }
        }
        let now = ctx.clock.now();
        if ep.poll_timeout().is_some_and(|t| t <= now) {
            ep.handle_timeout(now);
        }
        while let Some(t) = ep.poll_transmit(now) {
            let sent = ctx.clock.now();
            let data = matches!(t.header, MediaHeader::Data(_));
            let Some(len) = encode(ctx, &t.header, t.size, seq as u32, sent, &mut out) else {
                continue;
            };
            if data {
                ctx.meter.lock().on_send(sent, t.ecn);
                if let Some(tl) = &ctx.timeline {
                    let _ = tl.send(crate::timeline::Event::Sent {
                        flow: ctx.index,
                        seq,
                        size: wire::frame_len(len, ctx.ipv6),
                        sent,
                        ecn: t.ecn,
                    });
                }
                seq += 1;
            }
            // A full socket buffer or an ICMP error loses this datagram, as a drop would.
            if sock.send_to(&out[..len], dst, t.ecn).is_err() {
                send_errors += 1;
            }
        }
        if last_stats.is_none_or(|l| now.since(l) >= TICK) {
            last_stats = Some(now);
            report(&ep, now);
        }
        let now = ctx.clock.now();
        let mut wake = now + TICK;
        if let Some(t) = ep.poll_timeout() {
            wake = wake.min(t.max(now));
        }
        if !closed {
            wake = wake.min(ctx.stop.max(now));
        }
        wake = wake.min(ctx.end);
        if wake > now {
            if let Err(e) = wait_fd(sock.as_raw_fd(), false, wake.since(now)) {
                ctx.meter.fail(format!("flow {}: {e}", ctx.name));
                return;
            }
        }
    }
    report(&ep, ctx.clock.now());
    ctx.meter.lock().send_errors = send_errors;
}

/// Run a media receiver until the end of the run: measure every media packet, hand the
/// completed frames to the flow's frame meters and send the RFC 8888 feedback back to
/// where the media came from.
pub fn run_media_receiver(ctx: &FlowCtx, sock: EcnUdpSocket, mut ep: MediaReceiver) {
    precise_timers();
    if let Err(e) = sock.set_nonblocking(true) {
        ctx.meter.fail(format!("flow {}: {e}", ctx.name));
        return;
    }
    let mut inb = vec![0u8; 65_536];
    let mut out = vec![0u8; 65_536];
    let mut peer: Option<SocketAddr> = None;
    let mut frames: Vec<FrameDone> = Vec::new();
    loop {
        let now = ctx.clock.now();
        if now >= ctx.end || ctx.stop_flag.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        loop {
            let got = match sock.recv_from(&mut inb) {
                Ok(g) => g,
                Err(e) if would_block(&e) || e.kind() == io::ErrorKind::ConnectionRefused => break,
                Err(e) => {
                    ctx.meter.fail(format!("flow {}: receiving: {e}", ctx.name));
                    return;
                }
            };
            let at = Time(ctx.clock.now().as_nanos().saturating_sub(got.queued.as_nanos() as u64));
            if got.truncated {
                continue;
            }
            let Some((sent, seq32, h)) = decode(ctx, &inb[..got.len]) else {
                continue;
            };
            if !matches!(h, MediaHeader::Data(_)) {
                continue;
            }
            let ecn = got.ecn().unwrap_or(Ecn::NotEct);
            let frame = wire::frame_len(got.len, ctx.ipv6);
            ep.handle_packet(at, &h, frame, ecn);
            ep.drain_frames(&mut frames);
            {
                let mut m = ctx.meter.lock();
                m.on_arrival(at, sent, frame, ecn);
                if let Some(mm) = m.media.as_mut() {
                    for f in &frames {
                        mm.on_frame(f);
                    }
                    mm.highest_seen = ep.highest_frame_seen();
                }
            }
            frames.clear();
            if let Some(tl) = &ctx.timeline {
                let _ = tl.send(crate::timeline::Event::Arrived {
                    flow: ctx.index,
                    seq32,
                    at,
                    ecn,
                });
            }
            peer = Some(got.from);
        }
        let now = ctx.clock.now();
        if ep.poll_timeout().is_some_and(|t| t <= now) {
            ep.handle_timeout(now);
        }
        while let Some(t) = ep.poll_transmit(now) {
            let Some(to) = peer else { break };
            if let Some(len) = encode(ctx, &t.header, t.size, 0, ctx.clock.now(), &mut out) {
                // A lost report is what the network would do too.
                let _ = sock.send_to(&out[..len], to, t.ecn);
            }
        }
        let now = ctx.clock.now();
        let mut wake = (now + TICK).min(ctx.end);
        if let Some(t) = ep.poll_timeout() {
            wake = wake.min(t.max(now));
        }
        if wake > now {
            if let Err(e) = wait_fd(sock.as_raw_fd(), false, wake.since(now)) {
                ctx.meter.fail(format!("flow {}: {e}", ctx.name));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoints::Clock;
    use crate::meter::{flow_meter, MediaMeter, SharedMeter, Window};
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn media_datagrams_round_trip_and_foreign_ones_are_ignored() {
        let ctx = FlowCtx {
            index: 4,
            name: "m".into(),
            clock: Clock::start(),
            start: Time::ZERO,
            stop: Time::from_secs(1),
            end: Time::from_secs(1),
            stop_flag: Arc::new(AtomicBool::new(false)),
            meter: SharedMeter::new(flow_meter(
                Window {
                    start: Time::ZERO,
                    end: Time::from_secs(1),
                },
                None,
                true,
            )),
            ipv6: false,
            timeline: None,
        };
        let fb = MediaHeader::Feedback(l4s_media::Feedback { bytes: vec![7; 300] });
        let mut out = vec![0u8; 2000];
        // A feedback report is never cut to the (smaller) size the endpoint asked for.
        let len = encode(&ctx, &fb, 60, 0, Time(9), &mut out).unwrap();
        assert_eq!(len, wire::COMMON_LEN + 304);
        assert_eq!(decode(&ctx, &out[..len]), Some((Time(9), 0, fb.clone())));
        assert_eq!(decode(&ctx, &out[..len - 1]), None);
        let other = FlowCtx {
            index: 5,
            ..ctx.clone()
        };
        assert_eq!(decode(&other, &out[..len]), None);
        // A media data header under a feedback kind is refused.
        out[1] = wire::KIND_MEDIA_DATA;
        assert_eq!(decode(&ctx, &out[..len]), None);
        assert!(encode(&ctx, &fb, 60, 0, Time(9), &mut [0u8; 100]).is_none());
    }

    /// A 60 fps SCReAM flow over loopback (no bottleneck) for 2 s: about 120 frames, each
    /// delivered within about a frame interval, and the sender's target is sampled.
    #[test]
    fn media_flow_on_loopback_delivers_every_frame() {
        let secs = 2;
        let end = Time::from_secs(secs);
        let window = Window { start: Time::ZERO, end };
        let params = l4s_media::MediaParams::profile("cloud-gaming", "scream", true).unwrap();
        let mut fm = flow_meter(window, None, true);
        let cfg = l4s_media::FrameMeterConfig {
            frame_interval: params.frame_interval,
            deadline: params.frame_deadline,
            stall_gap: params.stall_gap,
            base_owd: Dur::ZERO,
        };
        fm.media = Some(Box::new(MediaMeter::new(cfg, window)));
        let ctx = FlowCtx {
            index: 1,
            name: "game".into(),
            clock: Clock::start(),
            start: Time::ZERO,
            stop: end,
            end,
            stop_flag: Arc::new(AtomicBool::new(false)),
            meter: SharedMeter::new(fm),
            ipv6: false,
            timeline: None,
        };
        let rx = EcnUdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let dst = rx.local_addr().unwrap();
        let tx = EcnUdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let c2 = ctx.clone();
        let p2 = params.clone();
        let h = std::thread::spawn(move || run_media_receiver(&c2, rx, MediaReceiver::new(&p2, Time::ZERO)));
        let snd = MediaSender::new(&params, l4s_core::Rng::new(1), ctx.clock.now());
        run_media_sender(&ctx, tx, dst, snd);
        h.join().unwrap();
        let m = ctx.meter.lock();
        assert!(m.error.is_none(), "{:?}", m.error);
        let mm = m.media.as_ref().unwrap();
        let fs = mm.frames.finish_with_seen(end, mm.highest_seen);
        // 60 fps for 2 s: 120 frames, minus the last few still in the encoder at the end.
        assert!((110..=121).contains(&fs.frames_complete), "{fs:?}");
        // No queue, but the sender paces each frame's packets (at start-up rates a frame
        // takes ~10 ms to send): the frame delay stays within one frame interval (16.7 ms)
        // at the median and a few ms more at p99.
        assert!(fs.delay_p50 < Dur::from_micros(16_667), "{fs:?}");
        assert!(fs.delay_p99 < Dur::from_millis(25), "{fs:?}");
        assert_eq!(fs.stall_time, Dur::ZERO, "{fs:?}");
        assert_eq!(m.first_ecn, Some(Ecn::Ect1));
        assert!(
            m.received >= 200 && m.received + 5 >= m.sent,
            "{} of {}",
            m.received,
            m.sent
        );
        assert!(mm.targets.count >= 150, "{}", mm.targets.count);
        let latest = mm.latest.unwrap();
        assert!(latest.feedback_reports >= 100, "{latest:?}");
        assert!(m.rtt.count() > 50, "RTT samples {}", m.rtt.count());
    }
}
