//! One driver for every datagram endpoint of the live testbed: the sans-IO endpoints the
//! simulator drives (UDP Prague, probes, SCReAM / RT-Prague media) on an
//! [`EcnUdpSocket`], fed with the run's clock.
//!
//! A sender waits for its flow's start, then, until the end of the run: reads the feedback
//! waiting on its socket (each datagram timed from when the kernel received it), runs the
//! endpoint's timer when due, sends everything the endpoint wants to send (the ECN field
//! set per packet), reports the endpoint's statistics every 10 ms, and sleeps in `ppoll(2)`
//! until a datagram arrives, the endpoint's next timer, or 10 ms, whichever is first. A
//! receiver does the same from the start of the run, measures each data packet on arrival
//! and sends its feedback to wherever the data came from. What differs between endpoint
//! kinds (their encoding on the wire, [`crate::wire`], and what is measured of a packet)
//! is the [`LiveEndpoint`] trait.

use crate::endpoints::{no_datagram, precise_timers, wait_fd, FlowCtx, TICK};
use crate::meter::LiveFlow;
use crate::udp::EcnUdpSocket;
use crate::wire;
use l4s_core::{Ecn, Time};
use l4s_transport::Transmit;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

/// A datagram endpoint as the live driver runs it: the sans-IO endpoint's hooks, its
/// encoding on the wire, and what is measured of it.
pub trait LiveEndpoint {
    type Header;
    fn handle_packet(&mut self, now: Time, h: &Self::Header, size: u32, ecn: Ecn);
    fn poll_transmit(&mut self, now: Time) -> Option<Transmit<Self::Header>>;
    fn poll_timeout(&self) -> Option<Time>;
    fn handle_timeout(&mut self, now: Time);
    fn close(&mut self, now: Time);
    /// A datagram of this flow for this endpoint: `(send time, the data packet's seq32,
    /// header)`; `None` to ignore it.
    fn decode(&self, ctx: &FlowCtx, b: &[u8]) -> Option<(Time, Option<u32>, Self::Header)>;
    /// Encode what the endpoint sends into `out` (zero-padded to the size it asked for):
    /// the payload length, and the data packet's sequence number (`None` for feedback).
    fn encode(
        &mut self,
        ctx: &FlowCtx,
        t: &Transmit<Self::Header>,
        sent: Time,
        out: &mut [u8],
    ) -> Option<(usize, Option<u64>)>;
    /// Measure a packet the endpoint has just handled (`frame`: its size on the wire).
    #[allow(clippy::too_many_arguments)]
    fn measure(&mut self, m: &mut LiveFlow, at: Time, sent: Time, frame: u32, ecn: Ecn, h: &Self::Header);
    /// Report the sender's statistics at `now` (receivers report nothing).
    fn report(&self, _m: &mut LiveFlow, _now: Time) {}
}

/// Run a datagram sender from `ctx.start` to the end of the run: data to `dst`, feedback
/// read from the same socket.
pub fn run_sender<E: LiveEndpoint>(ctx: &FlowCtx, sock: EcnUdpSocket, dst: SocketAddr, ep: E) {
    drive(ctx, sock, ep, Some(dst));
}

/// Run a datagram receiver until the end of the run: measure every data packet and send
/// the feedback the endpoint asks for back to where the data came from.
pub fn run_receiver<E: LiveEndpoint>(ctx: &FlowCtx, sock: EcnUdpSocket, ep: E) {
    drive(ctx, sock, ep, None);
}

fn drive<E: LiveEndpoint>(ctx: &FlowCtx, sock: EcnUdpSocket, mut ep: E, dst: Option<SocketAddr>) {
    precise_timers();
    if let Err(e) = sock.set_nonblocking(true) {
        ctx.meter.fail(format!("flow {}: {e}", ctx.name));
        return;
    }
    let sender = dst.is_some();
    if sender {
        ctx.clock.sleep_until(ctx.start, &ctx.stop_flag);
    }
    let mut out = vec![0u8; 65_536];
    let mut inb = vec![0u8; 65_536];
    // A receiver answers wherever the data came from.
    let mut peer = dst;
    let mut closed = !sender;
    let mut last_report: Option<Time> = None;
    let mut send_errors = 0u64;
    loop {
        let now = ctx.clock.now();
        if ctx.done(now) {
            break;
        }
        if !closed && now >= ctx.stop {
            ep.close(now);
            closed = true;
        }
        // What arrived first, so that what is sent next has the latest state.
        loop {
            let got = match sock.recv_from(&mut inb) {
                Ok(g) => g,
                Err(e) if no_datagram(&e) => break,
                Err(e) => {
                    ctx.meter.fail(format!("flow {}: receiving: {e}", ctx.name));
                    return;
                }
            };
            let at = got.arrival(ctx.clock.now());
            if got.truncated {
                continue;
            }
            let Some((sent, seq32, h)) = ep.decode(ctx, &inb[..got.len]) else {
                continue;
            };
            let ecn = got.ecn().unwrap_or(Ecn::NotEct);
            let frame = wire::frame_len(got.len, ctx.ipv6);
            ep.handle_packet(at, &h, frame, ecn);
            ep.measure(&mut ctx.meter.lock(), at, sent, frame, ecn, &h);
            if let (Some(tl), Some(seq32)) = (&ctx.timeline, seq32) {
                let _ = tl.send(crate::timeline::Event::Arrived {
                    flow: ctx.index,
                    seq32,
                    at,
                    ecn,
                });
            }
            if !sender {
                peer = Some(got.from);
            }
        }
        let now = ctx.clock.now();
        if ep.poll_timeout().is_some_and(|t| t <= now) {
            ep.handle_timeout(now);
        }
        while let Some(t) = ep.poll_transmit(now) {
            let Some(to) = peer else { break };
            let sent = ctx.clock.now();
            let Some((len, data_seq)) = ep.encode(ctx, &t, sent, &mut out) else {
                continue;
            };
            if let Some(seq) = data_seq {
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
            }
            // A full socket buffer or an ICMP error loses this datagram, as a drop would
            // (and a lost feedback packet is what the network would do too).
            if sock.send_to(&out[..len], to, t.ecn).is_err() {
                send_errors += 1;
            }
        }
        if sender && last_report.is_none_or(|l| now.since(l) >= TICK) {
            last_report = Some(now);
            ep.report(&mut ctx.meter.lock(), now);
        }
        let now = ctx.clock.now();
        let mut wake = now + TICK;
        if let Some(t) = ep.poll_timeout() {
            wake = wake.min(t.max(now));
        }
        if !closed {
            wake = wake.min(ctx.stop.max(now));
        }
        wake = wake.min(ctx.end.get());
        if wake > now {
            if let Err(e) = wait_fd(sock.as_raw_fd(), false, wake.since(now)) {
                ctx.meter.fail(format!("flow {}: {e}", ctx.name));
                return;
            }
        }
    }
    if sender {
        let mut m = ctx.meter.lock();
        ep.report(&mut m, ctx.clock.now());
        m.send_errors = send_errors;
    }
}
