//! Packet taps for kernel TCP flows: the per-packet view the simulator has of its own TCP.
//!
//! Kernel TCP keeps its packets to itself, so the testbed watches them on the wire: a tap
//! in the sender's namespace sees every data segment leave (`PACKET_OUTGOING` on an
//! `AF_PACKET` socket), a tap in the receiver's namespace sees it arrive, and matching them
//! by sequence number gives each segment's one-way delay, its ECN field on arrival (CE
//! marks), the frame bytes delivered, and the segments that never arrived (loss), counted
//! with the same meters as the datagram flows ([`l4s_measure::FlowMeter`]).
//!
//! Times are the kernel's receive/transmit stamps (`SO_TIMESTAMPNS`, `CLOCK_REALTIME`)
//! converted to `CLOCK_MONOTONIC` with the offset between the two clocks taken when the tap
//! opens (read so that a stamp never moves earlier, [`RxStamp`]); a stamp that is missing or more than 100 ms from the time of reading is replaced
//! by the time of reading. A retransmitted segment is matched to its latest transmission.
//! Sequence numbers waiting for their arrival are kept for at most [`MAX_WAIT`] and
//! [`MAX_OPEN`] segments, so memory is bounded.

use crate::endpoints::{precise_timers, wait_fd, FlowCtx};
use crate::sys;
use l4s_core::{Dur, Ecn, Time};
use l4s_fwd::afpacket::{monotonic_now, RxStamp};
use l4s_fwd::packet::{parse, Parsed};
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};

/// A segment not seen to arrive within this time is lost.
pub const MAX_WAIT: Dur = Dur::from_secs(5);
/// Most segments waiting for their arrival per flow.
pub const MAX_OPEN: usize = 200_000;

/// An `AF_PACKET` socket on every interface of the calling thread's namespace.
#[derive(Debug)]
pub struct Tap {
    fd: OwnedFd,
    /// `CLOCK_REALTIME − CLOCK_MONOTONIC`, ns.
    offset: i128,
}

/// One captured frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Captured {
    pub len: usize,
    pub outgoing: bool,
    /// `CLOCK_MONOTONIC` ns of the kernel's stamp (or of the read).
    pub mono: u64,
}

impl Tap {
    pub fn open() -> io::Result<Tap> {
        let proto = (libc::ETH_P_ALL as u16).to_be() as i32;
        let fd = sys::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            proto,
        )?;
        for (name, v) in [(libc::SO_TIMESTAMPNS, 1), (libc::SO_RCVBUF, 8 << 20)] {
            sys::setsockopt_int(fd.as_fd(), libc::SOL_SOCKET, name, v)?;
        }
        // Read so that a stamp is never moved earlier than it was taken ([`RxStamp`]).
        let offset = RxStamp::now().offset();
        Ok(Tap { fd, offset })
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Read one frame without blocking; `None` when nothing is waiting.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<Captured>> {
        let r = sys::recvmsg_packet(self.fd.as_fd(), buf, libc::MSG_DONTWAIT);
        let now = monotonic_now().as_nanos();
        let (meta, pkttype) = match r {
            Ok(r) => r,
            Err(e) => {
                return match e.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
                    _ => Err(e),
                }
            }
        };
        let stamp = meta
            .timestampns
            .map(|ts| ts.sec as i128 * 1_000_000_000 + ts.nsec as i128);
        let mono = match stamp {
            Some(rt) => {
                let m = rt - self.offset;
                if (m - now as i128).abs() <= 100_000_000 && m > 0 {
                    m as u64
                } else {
                    now
                }
            }
            None => now,
        };
        Ok(Some(Captured {
            len: meta.len.min(buf.len()),
            outgoing: pkttype == libc::PACKET_OUTGOING,
            mono,
        }))
    }
}

/// What a tap needs to know of a TCP data segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub payload: u32,
    pub ecn: Ecn,
    /// Frame bytes (Ethernet header included, padding excluded).
    pub frame: u32,
}

/// The TCP data segment in a frame, if it is one (payload > 0).
pub fn tcp_segment(frame: &[u8]) -> Option<Segment> {
    let Parsed::Ip(ip) = parse(frame) else { return None };
    if ip.protocol != 6 {
        return None;
    }
    let l4 = ip.l4_offset? as usize;
    let payload_at = ip.payload_offset? as usize;
    let end = ip.l3_end as usize;
    let payload = end.checked_sub(payload_at)? as u32;
    if payload == 0 || frame.len() < l4 + 8 {
        return None;
    }
    let seq = u32::from_be_bytes([frame[l4 + 4], frame[l4 + 5], frame[l4 + 6], frame[l4 + 7]]);
    Some(Segment {
        src: ip.src_addr(),
        dst: ip.dst_addr(),
        src_port: ip.src_port?,
        dst_port: ip.dst_port?,
        seq,
        payload,
        ecn: ip.ecn,
        frame: end as u32,
    })
}

/// Send times of the segments in flight of one flow, shared by its two taps.
#[derive(Debug, Default)]
pub struct InFlight {
    sent: HashMap<u32, Time>,
}

pub type SharedInFlight = Arc<Mutex<InFlight>>;

fn lock(f: &SharedInFlight) -> std::sync::MutexGuard<'_, InFlight> {
    f.lock().unwrap_or_else(|p| p.into_inner())
}

impl InFlight {
    fn expire(&mut self, now: Time) {
        if let Some(limit) = now.as_nanos().checked_sub(MAX_WAIT.as_nanos()) {
            self.sent.retain(|_, t| t.as_nanos() >= limit);
        }
    }
}

/// Which side a tap watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Outgoing segments from `src` to the flow's destination.
    Sender { src: IpAddr },
    /// Incoming segments to the flow's destination.
    Receiver,
}

/// Which data segments belong to a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Match {
    /// Sent to a listening server (a `tcp` flow, a sync upload): destination address and port.
    ToServer(SocketAddr),
    /// Sent by a listening server to a client on any port (downloads, responses, pages):
    /// the server's address and port, and the client's address.
    FromServer(SocketAddr, IpAddr),
}

impl Match {
    fn matches(&self, s: &Segment) -> bool {
        self.matches_addrs(s.src, s.dst, s.src_port, s.dst_port)
    }

    /// Whether a segment with these addresses and ports belongs to the flow.
    pub fn matches_addrs(&self, src: IpAddr, dst: IpAddr, src_port: u16, dst_port: u16) -> bool {
        match *self {
            Match::ToServer(d) => dst == d.ip() && dst_port == d.port(),
            Match::FromServer(srv, client) => src == srv.ip() && src_port == srv.port() && dst == client,
        }
    }
}

/// Watch one side of a kernel TCP flow until the end of the run (`ctx.end`).
/// `tap` was opened in the side's namespace.
pub fn run_tcp_tap(ctx: &FlowCtx, tap: Tap, flow: Match, side: Side, inflight: SharedInFlight) {
    precise_timers();
    let _ = l4s_fwd::afpacket::set_realtime(10);
    let mut buf = vec![0u8; 65_536 + 64];
    let mut last_expire = Time::ZERO;
    loop {
        let now = ctx.clock.now();
        if ctx.done(now) {
            break;
        }
        loop {
            let c = match tap.recv(&mut buf) {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => {
                    ctx.meter.fail(format!("flow {}: packet tap: {e}", ctx.name));
                    return;
                }
            };
            let Some(s) = tcp_segment(&buf[..c.len]) else { continue };
            if !flow.matches(&s) {
                continue;
            }
            let t = ctx.clock.at_monotonic(c.mono);
            match side {
                Side::Sender { src } => {
                    if !c.outgoing || s.src != src {
                        continue;
                    }
                    let mut f = lock(&inflight);
                    if f.sent.len() < MAX_OPEN {
                        f.sent.insert(s.seq, t);
                    }
                    // Under the lock: the timeline hears of the send before the receiver's
                    // tap can match the arrival.
                    if let Some(tl) = &ctx.timeline {
                        let _ = tl.send(crate::timeline::Event::Sent {
                            flow: ctx.index,
                            seq: s.seq as u64,
                            size: s.frame,
                            sent: t,
                            ecn: s.ecn,
                        });
                    }
                    drop(f);
                    ctx.meter.lock().on_send(t, s.ecn);
                }
                Side::Receiver => {
                    if c.outgoing {
                        continue;
                    }
                    let sent = lock(&inflight).sent.remove(&s.seq);
                    if let Some(sent) = sent {
                        ctx.meter.lock().on_arrival(t, sent, s.frame, s.ecn);
                    }
                    if let Some(tl) = &ctx.timeline {
                        let _ = tl.send(crate::timeline::Event::Arrived {
                            flow: ctx.index,
                            seq32: s.seq,
                            at: t,
                            ecn: s.ecn,
                        });
                    }
                }
            }
        }
        if now.since(last_expire) >= Dur::from_secs(1) {
            last_expire = now;
            lock(&inflight).expire(now);
        }
        let _ = wait_fd(tap.raw_fd(), false, Dur::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(payload: usize, ecn: Ecn) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 20 + payload];
        f[12] = 0x08;
        let ip = &mut f[14..];
        ip[0] = 0x45;
        ip[1] = ecn.bits();
        ip[2..4].copy_from_slice(&((20 + 20 + payload) as u16).to_be_bytes());
        ip[8] = 64;
        ip[9] = 6;
        ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 0, 1, 2]);
        let tcp = &mut ip[20..];
        tcp[0..2].copy_from_slice(&40000u16.to_be_bytes());
        tcp[2..4].copy_from_slice(&5201u16.to_be_bytes());
        tcp[4..8].copy_from_slice(&123_456u32.to_be_bytes());
        tcp[12] = 5 << 4;
        f
    }

    #[test]
    fn data_segments_are_recognised_and_acks_are_not() {
        let s = tcp_segment(&frame(1000, Ecn::Ce)).unwrap();
        assert_eq!(s.seq, 123_456);
        assert_eq!(s.payload, 1000);
        assert_eq!(s.frame, 1054);
        assert_eq!(s.ecn, Ecn::Ce);
        assert_eq!(s.dst_port, 5201);
        assert_eq!(s.dst, "10.0.1.2".parse::<IpAddr>().unwrap());
        // A pure ACK (no payload), a UDP frame, garbage: not data segments.
        assert_eq!(tcp_segment(&frame(0, Ecn::Ect0)), None);
        let mut udp = frame(100, Ecn::NotEct);
        udp[14 + 9] = 17;
        assert_eq!(tcp_segment(&udp), None);
        for len in 0..80 {
            let _ = tcp_segment(&frame(100, Ecn::NotEct)[..len]);
        }
    }

    #[test]
    fn in_flight_entries_expire() {
        let mut f = InFlight::default();
        f.sent.insert(1, Time::from_secs(1));
        f.sent.insert(2, Time::from_secs(7));
        f.expire(Time::from_secs(8));
        assert_eq!(f.sent.len(), 1);
        assert!(f.sent.contains_key(&2));
    }
}
