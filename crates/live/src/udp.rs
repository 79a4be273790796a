//! UDP sockets that set the ECN field per packet and read it on arrival.
//!
//! Linux only (RFC 10055, formerly draft-ietf-tsvwg-udp-ecn; ip(7), ipv6(7)):
//!
//! * **Send.** Every datagram carries a control message with the whole TOS / Traffic
//!   Class byte: `(IPPROTO_IP, IP_TOS)` for IPv4 destinations, including IPv4-mapped
//!   destinations of a dual-stack IPv6 socket (the kernel sends those through the IPv4
//!   path, which reads only `SOL_IP` messages), and `(IPPROTO_IPV6, IPV6_TCLASS)` for IPv6.
//!   Both are `int`s. The DSCP set with [`EcnUdpSocket::set_dscp`] is kept in the upper six
//!   bits, so that marking ECN never clears a DSCP (RFC 3168 §5, RFC 9331 §4).
//! * **Receive.** `IP_RECVTOS` (and, on IPv6 sockets, `IPV6_RECVTCLASS` as well as
//!   `IP_RECVTOS` for IPv4-mapped arrivals) is switched on at creation; `recvmsg` then
//!   returns `(IPPROTO_IP, IP_TOS)` as **one byte** or `(IPPROTO_IPV6, IPV6_TCLASS)` as an
//!   **int**; the ECN field is the low two bits (RFC 3168 §5).
//! * **Kernel receive timestamps.** `SO_TIMESTAMPNS` is on: the kernel stamps each datagram
//!   with `CLOCK_REALTIME` when it arrives, and [`Received::queued`] tells how long it then
//!   waited in the socket buffer, so that a one-way delay measured with the monotonic
//!   clock at `recvmsg` can be corrected to the arrival time ([`Received::arrival`]).
//!
//! Nothing here panics on what arrives from the network: control messages are checked
//! for length before they are read, and unknown ones are skipped.

use crate::sys;
use l4s_core::{Ecn, Time};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::Duration;

/// One received datagram's metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// Payload bytes copied into the buffer.
    pub len: usize,
    /// The datagram was longer than the buffer (`MSG_TRUNC`); `len` bytes were kept.
    pub truncated: bool,
    /// The sender's address (IPv4-mapped addresses are returned as IPv4).
    pub from: SocketAddr,
    /// The whole TOS / Traffic Class byte, if the kernel reported it.
    pub tos: Option<u8>,
    /// `CLOCK_REALTIME` at which the kernel received the datagram (`SO_TIMESTAMPNS`).
    pub kernel_rx_realtime: Option<Duration>,
    /// How long the datagram waited in the socket buffer before `recvmsg` returned it
    /// (realtime at return minus the kernel stamp; zero if unknown or negative).
    pub queued: Duration,
}

impl Received {
    /// The ECN field, if the kernel reported the TOS / Traffic Class byte.
    pub fn ecn(&self) -> Option<Ecn> {
        self.tos.map(Ecn::from_bits)
    }
    /// A reading of the run's clock taken right after `recvmsg`, moved back by the time
    /// the datagram sat in the socket buffer: when it arrived in the kernel, not when this
    /// thread got round to it.
    pub fn arrival(&self, now_after_recv: Time) -> Time {
        Time(now_after_recv.as_nanos().saturating_sub(self.queued.as_nanos() as u64))
    }
}

/// A UDP socket with per-packet ECN.
#[derive(Debug)]
pub struct EcnUdpSocket {
    sock: UdpSocket,
    v6: bool,
    dscp: u8,
}

/// An IPv4-mapped IPv6 address as the IPv4 address it maps.
fn unmap(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::V4(SocketAddrV4::new(v4, v6.port())),
            None => a,
        },
        v4 => v4,
    }
}

fn realtime_now() -> Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}

impl EcnUdpSocket {
    /// Bind a socket. An unspecified IPv6 address (`[::]:port`) gives a dual-stack socket
    /// (`IPV6_V6ONLY` off) that sends and receives IPv4 too.
    pub fn bind(addr: SocketAddr) -> io::Result<EcnUdpSocket> {
        let sock = if addr.is_ipv6() && addr.ip().is_unspecified() {
            // std sets no IPV6_V6ONLY; make dual-stack explicit whatever the sysctl says.
            let s = UdpSocket::bind(addr)?;
            sys::setsockopt_int(s.as_fd(), libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, 0).ok();
            s
        } else {
            UdpSocket::bind(addr)?
        };
        EcnUdpSocket::from_std(sock)
    }

    /// Wrap an existing socket, switching on TOS/TCLASS and timestamp reporting.
    pub fn from_std(sock: UdpSocket) -> io::Result<EcnUdpSocket> {
        let v6 = sock.local_addr()?.is_ipv6();
        let fd = sock.as_fd();
        if v6 {
            sys::setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, 1)?;
            // IPv4 datagrams on a dual-stack socket report IP_TOS; a v6-only socket refuses
            // nothing here, so failure only means the socket is v6-only.
            let _ = sys::setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_RECVTOS, 1);
        } else {
            sys::setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_RECVTOS, 1)?;
        }
        sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
        Ok(EcnUdpSocket { sock, v6, dscp: 0 })
    }

    /// Keep this DSCP (0..=63) in the upper six bits of every datagram's TOS byte.
    pub fn set_dscp(&mut self, dscp: u8) -> io::Result<()> {
        if dscp > 63 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a DSCP is 0..=63, got {dscp}"),
            ));
        }
        self.dscp = dscp;
        Ok(())
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }
    pub fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        self.sock.set_read_timeout(d)
    }
    pub fn set_nonblocking(&self, nb: bool) -> io::Result<()> {
        self.sock.set_nonblocking(nb)
    }

    /// Send one datagram to `dst` with ECN field `ecn`. On an IPv6 socket an IPv4 `dst` is
    /// sent as IPv4-mapped.
    pub fn send_to(&self, buf: &[u8], dst: SocketAddr, ecn: Ecn) -> io::Result<usize> {
        let dst = match (self.v6, dst) {
            (true, SocketAddr::V4(a)) => SocketAddr::V6(SocketAddrV6::new(a.ip().to_ipv6_mapped(), a.port(), 0, 0)),
            (false, SocketAddr::V6(a)) => match a.ip().to_ipv4_mapped() {
                Some(v4) => SocketAddr::V4(SocketAddrV4::new(v4, a.port())),
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("cannot send to {dst} from an IPv4 socket"),
                    ))
                }
            },
            _ => dst,
        };
        // The kernel takes the IPv4 path for IPv4 and IPv4-mapped destinations.
        let v4_path = match dst {
            SocketAddr::V4(_) => true,
            SocketAddr::V6(a) => a.ip().to_ipv4_mapped().is_some(),
        };
        let tos = ((self.dscp << 2) | ecn.bits()) as libc::c_int;
        let tos = if v4_path {
            sys::Tos::Ip(tos)
        } else {
            sys::Tos::Ipv6(tos)
        };
        loop {
            match sys::sendmsg_tos(self.sock.as_fd(), buf, &dst, tos, 0) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return r,
            }
        }
    }

    /// Receive one datagram into `buf`, with its ECN field and kernel timestamp.
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<Received> {
        let (meta, from) = loop {
            match sys::recvmsg_inet(self.sock.as_fd(), buf, 0) {
                Ok(r) => break r,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        let now_real = realtime_now();
        let from = from
            .map(unmap)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "datagram without a sender address"))?;
        let stamp = meta
            .timestampns
            .filter(|ts| ts.sec >= 0 && (0..1_000_000_000).contains(&ts.nsec))
            .map(|ts| Duration::new(ts.sec as u64, ts.nsec as u32));
        Ok(Received {
            len: meta.len.min(buf.len()),
            truncated: meta.truncated,
            from,
            tos: meta.tos,
            kernel_rx_realtime: stamp,
            queued: stamp.map(|s| now_real.saturating_sub(s)).unwrap_or_default(),
        })
    }
}

impl AsRawFd for EcnUdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

/// The loopback address of a family.
pub fn loopback(v6: bool) -> IpAddr {
    if v6 {
        IpAddr::V6(Ipv6Addr::LOCALHOST)
    } else {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Ecn; 4] = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce];

    fn round_trip(rx: &EcnUdpSocket, tx: &EcnUdpSocket, dst: SocketAddr, dscp: u8) {
        rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut buf = [0u8; 64];
        for (i, e) in ALL.iter().enumerate() {
            let payload = [i as u8; 20];
            assert_eq!(tx.send_to(&payload, dst, *e).unwrap(), 20);
            let r = rx.recv_from(&mut buf).unwrap();
            assert_eq!(r.len, 20);
            assert!(!r.truncated);
            assert_eq!(&buf[..20], &payload);
            assert_eq!(r.ecn(), Some(*e), "sent {e} to {dst}");
            assert_eq!(r.tos.unwrap() >> 2, dscp, "DSCP kept beside ECN");
            assert_eq!(r.from.port(), tx.local_addr().unwrap().port());
            assert!(r.kernel_rx_realtime.is_some(), "kernel timestamp");
            assert!(r.queued < Duration::from_secs(1), "{:?}", r.queued);
        }
    }

    #[test]
    fn all_four_codepoints_v4() {
        let rx = EcnUdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut tx = EcnUdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        round_trip(&rx, &tx, rx.local_addr().unwrap(), 0);
        tx.set_dscp(46).unwrap();
        round_trip(&rx, &tx, rx.local_addr().unwrap(), 46);
        assert!(tx.set_dscp(64).is_err());
    }

    #[test]
    fn all_four_codepoints_v6() {
        let rx = EcnUdpSocket::bind("[::1]:0".parse().unwrap()).unwrap();
        let tx = EcnUdpSocket::bind("[::1]:0".parse().unwrap()).unwrap();
        round_trip(&rx, &tx, rx.local_addr().unwrap(), 0);
    }

    #[test]
    fn all_four_codepoints_dual_stack() {
        // A dual-stack receiver gets IPv4 (as IPv4-mapped) and IPv6 datagrams.
        let rx = EcnUdpSocket::bind("[::]:0".parse().unwrap()).unwrap();
        let port = rx.local_addr().unwrap().port();
        let tx4 = EcnUdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        round_trip(&rx, &tx4, SocketAddr::new(loopback(false), port), 0);
        let tx6 = EcnUdpSocket::bind("[::1]:0".parse().unwrap()).unwrap();
        round_trip(&rx, &tx6, SocketAddr::new(loopback(true), port), 0);
        // A dual-stack sender reaches an IPv4 receiver (IP_TOS cmsg on the v4 path).
        let rx4 = EcnUdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let txd = EcnUdpSocket::bind("[::]:0".parse().unwrap()).unwrap();
        round_trip(&rx4, &txd, rx4.local_addr().unwrap(), 0);
        // ... and the source it reports is plain IPv4.
        txd.send_to(b"x", rx4.local_addr().unwrap(), Ecn::Ect1).unwrap();
        let mut b = [0u8; 8];
        let r = rx4.recv_from(&mut b).unwrap();
        assert!(r.from.is_ipv4());
        // An IPv4 socket refuses a real IPv6 destination with an error, not a panic.
        assert!(tx4
            .send_to(b"x", "[::1]:9".parse().unwrap(), Ecn::Ect0)
            .unwrap_err()
            .to_string()
            .contains("IPv4 socket"));
    }

    #[test]
    fn truncation_is_reported() {
        let rx = EcnUdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let tx = EcnUdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        tx.send_to(&[7u8; 100], rx.local_addr().unwrap(), Ecn::Ce).unwrap();
        let mut small = [0u8; 10];
        let r = rx.recv_from(&mut small).unwrap();
        assert_eq!(r.len, 10);
        assert!(r.truncated);
        assert_eq!(r.ecn(), Some(Ecn::Ce));
    }
}
