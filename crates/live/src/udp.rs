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
//!   clock at `recvmsg` can be corrected to the arrival time ([`Received::arrival_mono`]).
//!
//! Nothing here panics on what arrives from the network: control messages are checked
//! for length before they are read, and unknown ones are skipped.

use l4s_core::Ecn;
use std::io;
use std::mem::{size_of, zeroed};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// Room for the control messages of one datagram (TOS or TCLASS, and a timestamp).
const CMSG_SPACE: usize = 128;

/// Control-message buffer with the alignment `cmsghdr` needs.
#[repr(C, align(8))]
struct CmsgBuf([u8; CMSG_SPACE]);

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
    /// A monotonic reading taken right after `recvmsg`, moved back by the time the datagram
    /// sat in the socket buffer: the monotonic time of its arrival in the kernel.
    pub fn arrival_mono(&self, mono_after_recv: Duration) -> Duration {
        mono_after_recv.saturating_sub(self.queued)
    }
}

/// A UDP socket with per-packet ECN.
#[derive(Debug)]
pub struct EcnUdpSocket {
    sock: UdpSocket,
    v6: bool,
    dscp: u8,
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn setsockopt_int(fd: RawFd, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> io::Result<()> {
    // SAFETY: a valid pointer to a c_int of the stated length.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &v as *const libc::c_int as *const libc::c_void,
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

/// `SocketAddr` as a `sockaddr_storage` and its length.
pub(crate) fn to_sockaddr(a: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all-zero is a valid value.
    let mut ss: libc::sockaddr_storage = unsafe { zeroed() };
    let len = match a {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in and suitably aligned.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in, sin) };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo().to_be(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in6, sin6) };
            size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// The address in a `sockaddr_storage` the kernel filled, IPv4-mapped IPv6 as IPv4.
pub(crate) fn from_sockaddr(ss: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET if len as usize >= size_of::<libc::sockaddr_in>() => {
            // SAFETY: family and length checked.
            let sin: &libc::sockaddr_in = unsafe { &*(ss as *const _ as *const libc::sockaddr_in) };
            let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(sin.sin_port))))
        }
        libc::AF_INET6 if len as usize >= size_of::<libc::sockaddr_in6>() => {
            // SAFETY: family and length checked.
            let sin6: &libc::sockaddr_in6 = unsafe { &*(ss as *const _ as *const libc::sockaddr_in6) };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            let port = u16::from_be(sin6.sin6_port);
            Some(match ip.to_ipv4_mapped() {
                Some(v4) => SocketAddr::V4(SocketAddrV4::new(v4, port)),
                None => SocketAddr::V6(SocketAddrV6::new(
                    ip,
                    port,
                    u32::from_be(sin6.sin6_flowinfo),
                    sin6.sin6_scope_id,
                )),
            })
        }
        _ => None,
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
            setsockopt_int(s.as_raw_fd(), libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, 0).ok();
            s
        } else {
            UdpSocket::bind(addr)?
        };
        EcnUdpSocket::from_std(sock)
    }

    /// Wrap an existing socket, switching on TOS/TCLASS and timestamp reporting.
    pub fn from_std(sock: UdpSocket) -> io::Result<EcnUdpSocket> {
        let v6 = sock.local_addr()?.is_ipv6();
        let fd = sock.as_raw_fd();
        if v6 {
            setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, 1)?;
            // IPv4 datagrams on a dual-stack socket report IP_TOS; a v6-only socket refuses
            // nothing here, so failure only means the socket is v6-only.
            let _ = setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_RECVTOS, 1);
        } else {
            setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_RECVTOS, 1)?;
        }
        setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
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
    /// The underlying std socket.
    pub fn std(&self) -> &UdpSocket {
        &self.sock
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
        let (mut ss, sslen) = to_sockaddr(&dst);
        let tos: libc::c_int = ((self.dscp << 2) | ecn.bits()) as libc::c_int;
        let mut cbuf = CmsgBuf([0; CMSG_SPACE]);
        let mut iov = libc::iovec {
            iov_base: buf.as_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        // SAFETY: msghdr is plain old data.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        msg.msg_name = &mut ss as *mut _ as *mut libc::c_void;
        msg.msg_namelen = sslen;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.0.as_mut_ptr() as *mut libc::c_void;
        // SAFETY: CMSG_SPACE is a pure computation.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<libc::c_int>() as u32) } as _;
        // SAFETY: the control buffer holds one int-sized message (checked: CMSG_SPACE(4)
        // is far below CMSG_SPACE bytes), aligned by CmsgBuf.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            if c.is_null() {
                return Err(io::Error::other("no room for the TOS control message"));
            }
            if v4_path {
                (*c).cmsg_level = libc::IPPROTO_IP;
                (*c).cmsg_type = libc::IP_TOS;
            } else {
                (*c).cmsg_level = libc::IPPROTO_IPV6;
                (*c).cmsg_type = libc::IPV6_TCLASS;
            }
            (*c).cmsg_len = libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut libc::c_int, tos);
        }
        loop {
            // SAFETY: msg points at live buffers for the duration of the call.
            let r = unsafe { libc::sendmsg(self.sock.as_raw_fd(), &msg, 0) };
            if r >= 0 {
                return Ok(r as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// Receive one datagram into `buf`, with its ECN field and kernel timestamp.
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<Received> {
        // SAFETY: sockaddr_storage and msghdr are plain old data.
        let mut ss: libc::sockaddr_storage = unsafe { zeroed() };
        let mut cbuf = CmsgBuf([0; CMSG_SPACE]);
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        let mut msg: libc::msghdr = unsafe { zeroed() };
        let n = loop {
            msg.msg_name = &mut ss as *mut _ as *mut libc::c_void;
            msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = cbuf.0.as_mut_ptr() as *mut libc::c_void;
            msg.msg_controllen = CMSG_SPACE as _;
            msg.msg_flags = 0;
            // SAFETY: every pointer in msg refers to a live buffer of the stated size.
            let r = unsafe { libc::recvmsg(self.sock.as_raw_fd(), &mut msg, 0) };
            if r >= 0 {
                break r as usize;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        };
        let now_real = realtime_now();
        let from = from_sockaddr(&ss, msg.msg_namelen)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "datagram without a sender address"))?;
        let mut tos = None;
        let mut stamp = None;
        // SAFETY: the CMSG_* macros walk the buffer the kernel filled, bounded by
        // msg_controllen; each payload is read only after its length is checked.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                let level = (*c).cmsg_level;
                let ty = (*c).cmsg_type;
                let data_len = ((*c).cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize);
                let data = libc::CMSG_DATA(c);
                match (level, ty) {
                    // IPv4: one byte (ip(7) `IP_RECVTOS`).
                    (libc::IPPROTO_IP, libc::IP_TOS) if data_len >= 1 => tos = Some(*data),
                    // IPv6: an int.
                    (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) if data_len >= size_of::<libc::c_int>() => {
                        tos = Some((std::ptr::read_unaligned(data as *const libc::c_int) & 0xff) as u8)
                    }
                    (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) if data_len >= 1 => tos = Some(*data),
                    (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS) if data_len >= size_of::<libc::timespec>() => {
                        let ts = std::ptr::read_unaligned(data as *const libc::timespec);
                        if ts.tv_sec >= 0 && (0..1_000_000_000).contains(&ts.tv_nsec) {
                            stamp = Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
                        }
                    }
                    _ => {}
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        Ok(Received {
            len: n.min(buf.len()),
            truncated: msg.msg_flags & libc::MSG_TRUNC != 0,
            from,
            tos,
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
