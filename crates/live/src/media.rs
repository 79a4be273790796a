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

use crate::datagram::LiveEndpoint;
use crate::endpoints::FlowCtx;
use crate::meter::LiveFlow;
use crate::udp::EcnUdpSocket;
use crate::wire;
use l4s_core::{Ecn, Time};
use l4s_media::{FrameDone, MediaHeader, MediaReceiver, MediaSender};
use l4s_transport::{Endpoint, Transmit};
use std::net::SocketAddr;

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

/// A media sender on the wire: numbers its data packets for the timeline.
struct Send {
    ep: MediaSender,
    seq: u64,
}

/// A media receiver on the wire: hands the frames it completes to the flow's meter.
struct Recv {
    ep: MediaReceiver,
    frames: Vec<FrameDone>,
}

impl LiveEndpoint for Send {
    type Header = MediaHeader;
    fn handle_packet(&mut self, now: Time, h: &MediaHeader, size: u32, ecn: Ecn) {
        self.ep.handle_packet(now, h, size, ecn);
    }
    fn poll_transmit(&mut self, now: Time) -> Option<Transmit<MediaHeader>> {
        self.ep.poll_transmit(now)
    }
    fn poll_timeout(&self) -> Option<Time> {
        self.ep.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Time) {
        self.ep.handle_timeout(now);
    }
    fn close(&mut self, now: Time) {
        self.ep.close(now);
    }
    fn decode(&self, ctx: &FlowCtx, b: &[u8]) -> Option<(Time, Option<u32>, MediaHeader)> {
        decode(ctx, b).map(|(sent, _, h)| (sent, None, h))
    }
    fn encode(
        &mut self,
        ctx: &FlowCtx,
        t: &Transmit<MediaHeader>,
        sent: Time,
        out: &mut [u8],
    ) -> Option<(usize, Option<u64>)> {
        let len = encode(ctx, &t.header, t.size, self.seq as u32, sent, out)?;
        if !matches!(t.header, MediaHeader::Data(_)) {
            return Some((len, None));
        }
        self.seq += 1;
        Some((len, Some(self.seq - 1)))
    }
    fn measure(&mut self, m: &mut LiveFlow, at: Time, _sent: Time, _frame: u32, _ecn: Ecn, _h: &MediaHeader) {
        if let Some(r) = self.ep.take_rtt_sample() {
            m.on_rtt(at, r);
        }
    }
    fn report(&self, m: &mut LiveFlow, now: Time) {
        m.on_sender_stats(now, self.ep.stats());
        if let Some(mm) = m.media.as_mut() {
            mm.on_sender(now, self.ep.media_stats());
        }
    }
}

impl LiveEndpoint for Recv {
    type Header = MediaHeader;
    fn handle_packet(&mut self, now: Time, h: &MediaHeader, size: u32, ecn: Ecn) {
        self.ep.handle_packet(now, h, size, ecn);
    }
    fn poll_transmit(&mut self, now: Time) -> Option<Transmit<MediaHeader>> {
        self.ep.poll_transmit(now)
    }
    fn poll_timeout(&self) -> Option<Time> {
        self.ep.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Time) {
        self.ep.handle_timeout(now);
    }
    fn close(&mut self, _now: Time) {}
    fn decode(&self, ctx: &FlowCtx, b: &[u8]) -> Option<(Time, Option<u32>, MediaHeader)> {
        // Media data only.
        decode(ctx, b)
            .filter(|(_, _, h)| matches!(h, MediaHeader::Data(_)))
            .map(|(sent, seq32, h)| (sent, Some(seq32), h))
    }
    fn encode(
        &mut self,
        ctx: &FlowCtx,
        t: &Transmit<MediaHeader>,
        sent: Time,
        out: &mut [u8],
    ) -> Option<(usize, Option<u64>)> {
        encode(ctx, &t.header, t.size, 0, sent, out).map(|len| (len, None))
    }
    fn measure(&mut self, m: &mut LiveFlow, at: Time, sent: Time, frame: u32, ecn: Ecn, _h: &MediaHeader) {
        self.ep.drain_frames(&mut self.frames);
        m.on_arrival(at, sent, frame, ecn);
        if let Some(mm) = m.media.as_mut() {
            for f in self.frames.drain(..) {
                mm.on_frame(&f);
            }
            mm.highest_seen = self.ep.highest_frame_seen();
        }
    }
}

/// Run a media sender from `ctx.start` to the end of the run: media to `dst`, RFC 8888
/// feedback read from the same socket (see [`crate::datagram`]).
pub fn run_media_sender(ctx: &FlowCtx, sock: EcnUdpSocket, dst: SocketAddr, ep: MediaSender) {
    crate::datagram::run_sender(ctx, sock, dst, Send { ep, seq: 0 });
}

/// Run a media receiver until the end of the run: measure every media packet, hand the
/// completed frames to the flow's frame meters and send the RFC 8888 feedback back to
/// where the media came from (see [`crate::datagram`]).
pub fn run_media_receiver(ctx: &FlowCtx, sock: EcnUdpSocket, ep: MediaReceiver) {
    crate::datagram::run_receiver(ctx, sock, Recv { ep, frames: Vec::new() });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoints::Clock;
    use crate::meter::{flow_meter, MediaMeter, SharedMeter, Window};
    use l4s_core::Dur;
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
            end: crate::endpoints::EndAt::fixed(Time::from_secs(1)),
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

    /// The longest a thread that asks to sleep 1 ms at a time overslept while `stop` is
    /// unset. A host that holds such a thread back for milliseconds holds the flow's pacing
    /// and receiving threads back too, and SCReAM takes what it then measures for queueing
    /// delay: the flow's timing is the host's. (Its mean says little: a thread that only
    /// sleeps wakes promptly on a busy host most of the time.)
    fn host_stall_probe(stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Dur> {
        std::thread::spawn(move || {
            let mut worst = std::time::Duration::ZERO;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let t = std::time::Instant::now();
                std::thread::sleep(std::time::Duration::from_millis(1));
                worst = worst.max(t.elapsed().saturating_sub(std::time::Duration::from_millis(1)));
            }
            Dur::from_nanos(worst.as_nanos() as u64)
        })
    }

    /// One run of a 60 fps SCReAM flow over loopback, with the host's worst stall meanwhile.
    fn media_on_loopback(secs: u64) -> (SharedMeter, l4s_media::FrameSummary, Dur) {
        let end = Time::from_secs(secs);
        let window = Window { start: Time::ZERO, end };
        let params = l4s_media::MediaParams::profile("cloud-gaming", "scream", true).unwrap();
        let mut fm = flow_meter(window, None, true);
        fm.media = Some(Box::new(MediaMeter::for_params(&params, Dur::ZERO, window)));
        let ctx = FlowCtx {
            index: 1,
            name: "game".into(),
            clock: Clock::start(),
            start: Time::ZERO,
            stop: end,
            end: crate::endpoints::EndAt::fixed(end),
            stop_flag: Arc::new(AtomicBool::new(false)),
            meter: SharedMeter::new(fm),
            ipv6: false,
            timeline: None,
        };
        let probe_stop = Arc::new(AtomicBool::new(false));
        let probe = host_stall_probe(probe_stop.clone());
        let rx = EcnUdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let dst = rx.local_addr().unwrap();
        let tx = EcnUdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let c2 = ctx.clone();
        let p2 = params.clone();
        let h = std::thread::spawn(move || run_media_receiver(&c2, rx, MediaReceiver::new(&p2, Time::ZERO)));
        let snd = MediaSender::new(&params, l4s_core::Rng::new(1), ctx.clock.now());
        run_media_sender(&ctx, tx, dst, snd);
        h.join().unwrap();
        probe_stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let stall = probe.join().unwrap();
        let fs = {
            let m = ctx.meter.lock();
            let mm = m.media.as_ref().unwrap();
            mm.frames
                .finish_with_seen(end, mm.baseline.map(|b| b.frames_encoded), mm.highest_seen)
        };
        (ctx.meter, fs, stall)
    }

    /// A 60 fps SCReAM flow over loopback (no bottleneck) for 2 s: about 120 frames, each
    /// delivered within about a frame interval, and the sender's target is sampled.
    ///
    /// The frame delay and the counts of timed events hold on a host that gives the flow's
    /// threads their time: a run that misses them while a thread sleeping 1 ms at a time was
    /// held back over 3 ms is measured again (up to three runs); if the host held every run
    /// back, only what does not depend on its timing is asserted.
    #[test]
    fn media_flow_on_loopback_delivers_every_frame() {
        let within = |m: &LiveFlow, fs: &l4s_media::FrameSummary| {
            let mm = m.media.as_ref().unwrap();
            // 60 fps for 2 s: 120 frames, minus the last few still in the encoder at the end.
            (110..=121).contains(&fs.frames_complete)
                // No queue, but the sender paces each frame's packets (at start-up rates a
                // frame takes ~10 ms to send): the frame delay stays within one frame
                // interval (16.7 ms) at the median and a few ms more at p99.
                && fs.delay_p50 < Dur::from_micros(16_667)
                && fs.delay_p99 < Dur::from_millis(25)
                && fs.stall_time == Dur::ZERO
                && mm.targets.count >= 150
                && mm.latest.is_some_and(|l| l.feedback_reports >= 100)
                && m.rtt.count() > 50
        };
        let mut quiet = true;
        let mut attempt = 0;
        let (shared, fs) = loop {
            let (shared, fs, stall) = media_on_loopback(2);
            let m = shared.lock();
            assert!(m.error.is_none(), "{:?}", m.error);
            if within(&m, &fs) || stall <= Dur::from_millis(3) {
                drop(m);
                break (shared, fs);
            }
            println!("run {attempt} missed a band while the host held a thread back {stall}: {fs:?}");
            attempt += 1;
            if attempt == 3 {
                println!("the host held every run back; the timing bands are not asserted");
                quiet = false;
                drop(m);
                break (shared, fs);
            }
        };
        let m = shared.lock();
        let mm = m.media.as_ref().unwrap();
        assert!(
            !quiet || within(&m, &fs),
            "{fs:?} targets {} rtt {}",
            mm.targets.count,
            m.rtt.count()
        );
        // Whatever the host's timing: ECT(1) from the first packet, and nothing lost.
        assert_eq!(m.first_ecn, Some(Ecn::Ect1));
        assert!(
            m.received >= 200 && m.received + 5 >= m.sent,
            "{} of {}",
            m.received,
            m.sent
        );
    }
}
