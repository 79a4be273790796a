//! Every system call of l4s-live, behind safe functions: the crate's one module with `unsafe`.
//!
//! The rest of the crate is `#![deny(unsafe_code)]` and reaches the kernel only through
//! here, std and l4s-fwd. The wrappers follow what `nix` and `rustix` offer, without the
//! dependency:
//!
//! * descriptors are [`OwnedFd`](std::os::fd::OwnedFd) (closed on drop; [`socket`], from
//!   l4s-fwd's `sys` like [`setsockopt_int`] and [`ppoll`], is the only
//!   place one is made from a raw number) or borrowed as [`BorrowedFd`] for the length of a call;
//! * failures are [`io::Result`], with `errno` read right after the failing call;
//! * memory crosses as slices, values or types built here ([`Tos`], [`RecvMeta`],
//!   [`Timespec`]) and addresses as std's [`SocketAddr`], never as pointers, so the kernel
//!   only ever writes into memory the call borrows mutably, and never more of it than the
//!   length passed with it;
//! * options that could make the kernel keep a pointer or change more than the calling
//!   thread are not offered: socket options take an `int` ([`setsockopt_int`]) or are named
//!   ([`set_tcp_congestion`], [`set_max_pacing_rate`], [`tcp_info`]), the one control
//!   message a datagram is sent with is its TOS / Traffic Class ([`Tos`]), `ioctl` reads a
//!   send queue's length only ([`send_queue_len`]) (the timer slack is l4s-fwd's
//!   `precise_timers`);
//! * control messages the kernel returns are read only within the bytes it wrote, each
//!   after its length is checked; unknown ones are skipped.
//!
//! So no argument a caller can pass makes one of these functions undefined behaviour; every
//! `unsafe` block says why in its `SAFETY:` comment. Flags are passed through unchanged.
#![deny(clippy::undocumented_unsafe_blocks)]

use std::io;
use std::mem::{align_of, size_of};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, BorrowedFd};

use libc::c_int;

// The common calls, shared with the forwarder.
use l4s_fwd::sys::{cvt, cvt_len, empty_msghdr};
pub use l4s_fwd::sys::{ppoll, setsockopt_int, socket};

// ------------------------------------------------------------------------------------------
// Sockets and their options
// ------------------------------------------------------------------------------------------

/// Give a TCP socket the congestion control `name` (e.g. `"prague"`, `"cubic"`):
/// `setsockopt(2)` with `IPPROTO_TCP`, `TCP_CONGESTION` and the name's bytes, without a
/// terminating NUL (see `tcp(7)`).
pub fn set_tcp_congestion(fd: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    // SAFETY: the pointer and length describe `name`, borrowed for the call; the kernel
    // copies at most that many bytes of it and keeps no pointer.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast::<libc::c_void>(),
            name.len() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// Cap a TCP socket's maximum segment size at `mss` bytes (`setsockopt(2)` with
/// `IPPROTO_TCP`, `TCP_MAXSEG`, see `tcp(7)`): Linux keeps it as the socket's `user_mss`,
/// which bounds the MSS it advertises and the one it sends with (`tcp_sync_mss`, the
/// options such as timestamps coming off it), and a listener's bounds its connections'.
pub fn set_tcp_maxseg(fd: BorrowedFd<'_>, mss: u32) -> io::Result<()> {
    let v = libc::c_int::try_from(mss).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, v)
}

/// Cap a socket's pacing rate at `bytes_per_sec`: `setsockopt(2)` with `SOL_SOCKET`,
/// `SO_MAX_PACING_RATE` and a 64-bit value (see `socket(7)`). Besides the cap, Linux (since
/// 4.13, `sock_setsockopt` in net/core/sock.c) then sets the socket's `sk_pacing_status` to
/// `SK_PACING_NEEDED` unless the value is `!0`, so that TCP paces its own packets
/// (`tcp_needs_internal_pacing`, net/ipv4/tcp_output.c) with no `fq` qdisc on the way:
/// [`PACE_UNCAPPED`] asks for that pacing at the congestion control's own rate.
pub fn set_max_pacing_rate(fd: BorrowedFd<'_>, bytes_per_sec: u64) -> io::Result<()> {
    // SAFETY: the kernel reads at most `size_of::<u64>()` bytes from `bytes_per_sec` on this
    // stack frame (an older kernel reads an int of them) and keeps no pointer to it.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            (&bytes_per_sec as *const u64).cast::<libc::c_void>(),
            size_of::<u64>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// A socket's pacing cap (`SO_MAX_PACING_RATE`, bytes per second; `u64::MAX` when none).
#[cfg(test)]
pub fn max_pacing_rate(fd: BorrowedFd<'_>) -> io::Result<u64> {
    let mut v: u64 = 0;
    let mut len = size_of::<u64>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` (8) bytes into `v`, borrowed mutably for the
    // call, and the written length into `len`.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            (&mut v as *mut u64).cast::<libc::c_void>(),
            &mut len,
        )
    })?;
    Ok(v)
}

/// The largest pacing cap that still turns on TCP's own pacing ([`set_max_pacing_rate`]):
/// `!0` means "no cap, no request".
pub const PACE_UNCAPPED: u64 = u64::MAX - 1;

/// Read a TCP socket's `struct tcp_info` into `buf` as the kernel lays it out
/// (`include/uapi/linux/tcp.h`): `getsockopt(2)` with `IPPROTO_TCP`, `TCP_INFO` (see
/// `tcp(7)`). The number of bytes written, at most `buf.len()`.
pub fn tcp_info(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    let mut len = buf.len().min(libc::socklen_t::MAX as usize) as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes (no more than `buf.len()`) into `buf`,
    // borrowed mutably for the call, and the written length into `len`.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast::<libc::c_void>(),
            &mut len,
        )
    })?;
    Ok((len as usize).min(buf.len()))
}

/// The bytes in a socket's send queue: `ioctl(2)` `TIOCOUTQ` (= `SIOCOUTQ`; for TCP, the
/// data not yet acknowledged, see `tcp(7)`).
pub fn send_queue_len(fd: BorrowedFd<'_>) -> io::Result<c_int> {
    let mut n: c_int = 0;
    // SAFETY: TIOCOUTQ / SIOCOUTQ writes one int (tty_ioctl(4), tcp(7), udp(7)) into `n`,
    // borrowed mutably for the call.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCOUTQ, &mut n) })?;
    Ok(n)
}

// ------------------------------------------------------------------------------------------
// IP socket addresses
// ------------------------------------------------------------------------------------------

/// An IPv4 or IPv6 address as the kernel takes it: `struct sockaddr_in` of `ip(7)` or
/// `struct sockaddr_in6` of `ipv6(7)`, whichever [`sockaddr_in`] wrote.
#[repr(C)]
union SockaddrIn {
    v4: libc::sockaddr_in,
    v6: libc::sockaddr_in6,
}

/// `a` as a `sockaddr_in` / `sockaddr_in6` and its length (the bytes of the union that
/// were written).
fn sockaddr_in(a: &SocketAddr) -> (SockaddrIn, libc::socklen_t) {
    match a {
        SocketAddr::V4(a) => (
            SockaddrIn {
                v4: libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: a.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from_ne_bytes(a.ip().octets()),
                    },
                    sin_zero: [0; 8],
                },
            },
            size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ),
        SocketAddr::V6(a) => (
            SockaddrIn {
                v6: libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: a.port().to_be(),
                    sin6_flowinfo: a.flowinfo().to_be(),
                    sin6_addr: libc::in6_addr {
                        s6_addr: a.ip().octets(),
                    },
                    sin6_scope_id: a.scope_id(),
                },
            },
            size_of::<libc::sockaddr_in6>() as libc::socklen_t,
        ),
    }
}

const _: () = assert!(size_of::<libc::sockaddr_storage>() >= size_of::<libc::sockaddr_in6>());
const _: () = assert!(align_of::<libc::sockaddr_storage>() >= align_of::<libc::sockaddr_in6>());
const _: () = assert!(align_of::<libc::sockaddr_storage>() >= align_of::<libc::sockaddr_in>());

/// An all-zero `sockaddr_storage` (room for the kernel to write a sender's address into).
fn empty_sockaddr_storage() -> libc::sockaddr_storage {
    // SAFETY: sockaddr_storage is integers only (family, padding, alignment member), for
    // which all-zero bytes are a valid value.
    unsafe { std::mem::zeroed() }
}

/// The IPv4 or IPv6 address the kernel wrote into `ss` (`len` bytes of it), as given
/// (IPv4-mapped IPv6 addresses stay IPv6). `None` for another family or a short length.
fn socket_addr(ss: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    match ss.ss_family as c_int {
        libc::AF_INET if len as usize >= size_of::<libc::sockaddr_in>() => {
            // SAFETY: `ss` is a whole, initialised sockaddr_storage, at least as large and as
            // aligned as sockaddr_in (asserted above), and sockaddr_in is integers only, so
            // its first bytes are a valid sockaddr_in.
            let sin = unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(sin.sin_port))))
        }
        libc::AF_INET6 if len as usize >= size_of::<libc::sockaddr_in6>() => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 = unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                u16::from_be(sin6.sin6_port),
                u32::from_be(sin6.sin6_flowinfo),
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Connect a socket to `addr`, `connect(2)`. On a non-blocking socket a TCP handshake
/// that is under way is `Err` with `EINPROGRESS` (see `connect(2)`).
pub fn connect(fd: BorrowedFd<'_>, addr: &SocketAddr) -> io::Result<()> {
    let (sa, len) = sockaddr_in(addr);
    // SAFETY: the pointer and length describe the written member of `sa`, a local that
    // lives across the call, which only reads it.
    cvt(unsafe { libc::connect(fd.as_raw_fd(), (&sa as *const SockaddrIn).cast::<libc::sockaddr>(), len) })?;
    Ok(())
}

// ------------------------------------------------------------------------------------------
// Datagrams with control messages
// ------------------------------------------------------------------------------------------

/// Control-message room for one datagram (a TOS or Traffic Class and a timestamp), aligned
/// for `cmsghdr`.
const CTRL_LEN: usize = 128;
#[derive(Clone, Copy)]
#[repr(C, align(8))]
struct CtrlBuf([u8; CTRL_LEN]);

const _: () = assert!(align_of::<CtrlBuf>() >= align_of::<libc::cmsghdr>());

/// The TOS / Traffic Class byte a datagram is sent with: the one control message of
/// [`sendmsg_tos`], an `int` (see `ip(7)`, `ipv6(7)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tos {
    /// `(IPPROTO_IP, IP_TOS)`: for IPv4 destinations, IPv4-mapped ones included (the
    /// kernel sends those on the IPv4 path, which reads only `SOL_IP` messages).
    Ip(c_int),
    /// `(IPPROTO_IPV6, IPV6_TCLASS)`: for IPv6 destinations.
    Ipv6(c_int),
}

/// Send `buf` as one datagram to `dst` with its TOS / Traffic Class set by a control
/// message, `sendmsg(2)` (see `ip(7)`, `ipv6(7)`); the bytes sent.
pub fn sendmsg_tos(fd: BorrowedFd<'_>, buf: &[u8], dst: &SocketAddr, tos: Tos, flags: c_int) -> io::Result<usize> {
    let (mut sa, salen) = sockaddr_in(dst);
    let (level, ty, value) = match tos {
        Tos::Ip(v) => (libc::IPPROTO_IP, libc::IP_TOS, v),
        Tos::Ipv6(v) => (libc::IPPROTO_IPV6, libc::IPV6_TCLASS, v),
    };
    let mut ctrl = CtrlBuf([0; CTRL_LEN]);
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr().cast_mut().cast(),
        iov_len: buf.len(),
    };
    let mut msg = empty_msghdr();
    msg.msg_name = (&mut sa as *mut SockaddrIn).cast();
    msg.msg_namelen = salen;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctrl.0.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE only computes a length.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<c_int>() as u32) } as _;
    // SAFETY: `msg_control` is `ctrl`, aligned for cmsghdr, of which `msg_controllen`
    // (CMSG_SPACE of an int, 16 or 24 bytes, < CTRL_LEN) bytes are in use; CMSG_FIRSTHDR
    // returns its start (or null), and the header and the int after it lie within those
    // bytes. The int is written unaligned.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        if c.is_null() {
            return Err(io::Error::other("no room for the TOS control message"));
        }
        (*c).cmsg_level = level;
        (*c).cmsg_type = ty;
        (*c).cmsg_len = libc::CMSG_LEN(size_of::<c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<c_int>(), value);
    }
    // SAFETY: `msg` describes `buf` (borrowed, with its true length; the kernel only reads
    // it although the iovec's pointer is `*mut`), `sa` with the length of its written
    // member and `ctrl` with the length of the message in it, all alive across the call.
    cvt_len(unsafe { libc::sendmsg(fd.as_raw_fd(), &msg, flags) })
}

/// A kernel timestamp as the kernel gave it (`struct timespec`; `CLOCK_REALTIME` for
/// `SO_TIMESTAMPNS`), unchecked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timespec {
    pub sec: i64,
    pub nsec: i64,
}

/// What the kernel said about one received datagram or frame besides its bytes and sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvMeta {
    /// What `recvmsg` returned: the bytes copied into the buffer, or with `MSG_TRUNC` in the
    /// flags the datagram's true length.
    pub len: usize,
    /// `MSG_TRUNC` in `msg_flags`: it was longer than the buffer.
    pub truncated: bool,
    /// The TOS / Traffic Class byte: the `(IPPROTO_IP, IP_TOS)` control message (one byte,
    /// with `IP_RECVTOS` on) or `(IPPROTO_IPV6, IPV6_TCLASS)` (an int, its low byte; with
    /// `IPV6_RECVTCLASS` on).
    pub tos: Option<u8>,
    /// The `(SOL_SOCKET, SCM_TIMESTAMPNS)` control message (with `SO_TIMESTAMPNS` on).
    pub timestampns: Option<Timespec>,
}

/// Where `recvmsg` may write a sender's address.
///
/// Only for C address structs made of integers, for which any bytes the kernel writes are
/// a valid value.
trait AddrBuf {}
impl AddrBuf for libc::sockaddr_storage {}
impl AddrBuf for libc::sockaddr_ll {}

/// `recvmsg(2)` of one datagram into `buf`, the sender's address into `addr`; with the
/// address length the kernel wrote.
fn recvmsg_into<A: AddrBuf>(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    addr: &mut A,
    flags: c_int,
) -> io::Result<(RecvMeta, libc::socklen_t)> {
    let mut ctrl = CtrlBuf([0; CTRL_LEN]);
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut msg = empty_msghdr();
    msg.msg_name = (addr as *mut A).cast();
    msg.msg_namelen = size_of::<A>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctrl.0.as_mut_ptr().cast();
    msg.msg_controllen = CTRL_LEN as _;
    // SAFETY: `msg` describes `buf` (borrowed mutably, with its true length), `addr`
    // (borrowed mutably, with its size; an AddrBuf takes any bytes) and `ctrl` (a local,
    // with its size), all alive and not otherwise used during the call; the kernel writes
    // only within those lengths and into `msg`.
    let n = cvt_len(unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, flags) })?;
    let (tos, timestampns) = read_cmsgs(&msg, &ctrl);
    let meta = RecvMeta {
        len: n,
        truncated: msg.msg_flags & libc::MSG_TRUNC != 0,
        tos,
        timestampns,
    };
    Ok((meta, msg.msg_namelen))
}

/// The TOS / Traffic Class and `SCM_TIMESTAMPNS` control messages in `ctrl`, the control
/// data `msg` (filled by a `recvmsg` that returned) points to. The last of each kind wins.
// `msg_controllen` and `cmsg_len` are `size_t` in glibc but `socklen_t` in musl.
#[allow(clippy::unnecessary_cast)]
fn read_cmsgs(msg: &libc::msghdr, ctrl: &CtrlBuf) -> (Option<u8>, Option<Timespec>) {
    let (mut tos, mut stamp) = (None, None);
    if msg.msg_control.cast_const() != ctrl.0.as_ptr().cast() {
        return (tos, stamp);
    }
    let controllen = (msg.msg_controllen as usize).min(CTRL_LEN);
    let mut walk = *msg;
    walk.msg_controllen = controllen as _;
    // SAFETY: `walk.msg_control` points to `ctrl` (checked above; borrowed, aligned for
    // cmsghdr), of which the kernel wrote the first `controllen` (<= CTRL_LEN) bytes.
    // CMSG_FIRSTHDR and CMSG_NXTHDR only return headers that lie within those bytes (or
    // null); a header's data is read only within the bytes its `cmsg_len` and `controllen`
    // both allow, after its length is checked, and read unaligned.
    unsafe {
        let base = ctrl.0.as_ptr() as usize;
        let hdr_len = libc::CMSG_LEN(0) as usize;
        let mut c = libc::CMSG_FIRSTHDR(&walk);
        while !c.is_null() {
            let room = controllen - (c as usize - base);
            let data_len = ((*c).cmsg_len as usize).min(room).saturating_sub(hdr_len);
            let data = libc::CMSG_DATA(c);
            match ((*c).cmsg_level, (*c).cmsg_type) {
                // IPv4: one byte (ip(7) `IP_RECVTOS`).
                (libc::IPPROTO_IP, libc::IP_TOS) if data_len >= 1 => tos = Some(*data),
                // IPv6: an int.
                (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) if data_len >= size_of::<c_int>() => {
                    tos = Some((std::ptr::read_unaligned(data.cast::<c_int>()) & 0xff) as u8)
                }
                (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) if data_len >= 1 => tos = Some(*data),
                (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS) if data_len >= size_of::<libc::timespec>() => {
                    let ts = std::ptr::read_unaligned(data.cast::<libc::timespec>());
                    stamp = Some(Timespec {
                        sec: ts.tv_sec as i64,
                        nsec: ts.tv_nsec as i64,
                    });
                }
                _ => {}
            }
            c = libc::CMSG_NXTHDR(&walk, c);
        }
    }
    (tos, stamp)
}

/// Read one datagram into `buf` from an IPv4 or IPv6 socket, `recvmsg(2)`, with its
/// TOS / Traffic Class and kernel timestamp (see [`RecvMeta`]) and its sender's address
/// (`None` if the kernel gave none of those families).
pub fn recvmsg_inet(fd: BorrowedFd<'_>, buf: &mut [u8], flags: c_int) -> io::Result<(RecvMeta, Option<SocketAddr>)> {
    let mut ss = empty_sockaddr_storage();
    let (meta, len) = recvmsg_into(fd, buf, &mut ss, flags)?;
    Ok((meta, socket_addr(&ss, len)))
}

/// Read one frame into `buf` from an AF_PACKET socket, `recvmsg(2)`, with its kernel
/// timestamp (see [`RecvMeta`]) and the `sll_pkttype` of its link-layer address
/// (`PACKET_HOST`, `PACKET_OUTGOING`, ...; see `packet(7)`).
pub fn recvmsg_packet(fd: BorrowedFd<'_>, buf: &mut [u8], flags: c_int) -> io::Result<(RecvMeta, u8)> {
    let mut sll = libc::sockaddr_ll {
        sll_family: 0,
        sll_protocol: 0,
        sll_ifindex: 0,
        sll_hatype: 0,
        sll_pkttype: 0,
        sll_halen: 0,
        sll_addr: [0; 8],
    };
    let (meta, _) = recvmsg_into(fd, buf, &mut sll, flags)?;
    Ok((meta, sll.sll_pkttype))
}

// ------------------------------------------------------------------------------------------
// Waiting, threads, processes
// ------------------------------------------------------------------------------------------

/// The effective user ID of the process, `geteuid(2)`.
pub fn geteuid() -> libc::uid_t {
    // SAFETY: geteuid takes nothing, touches no memory of this process and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream, UdpSocket};
    use std::os::fd::AsFd;
    use std::time::Duration;

    #[test]
    fn socket_addresses_round_trip() {
        for a in [
            "10.1.2.3:4567",
            "[2001:db8::7]:443",
            "[::ffff:192.0.2.1]:9",
            "[fe80::1%3]:80",
        ] {
            let a: SocketAddr = a.parse().unwrap();
            let a = match a {
                SocketAddr::V6(v6) => SocketAddr::V6(SocketAddrV6::new(*v6.ip(), v6.port(), 0x12345, v6.scope_id())),
                v4 => v4,
            };
            let (sa, len) = sockaddr_in(&a);
            let mut ss = empty_sockaddr_storage();
            // Copy the written bytes as the kernel would.
            let bytes = len as usize;
            let src = (&sa as *const SockaddrIn).cast::<u8>();
            let dst = (&mut ss as *mut libc::sockaddr_storage).cast::<u8>();
            // SAFETY: `len` bytes of `sa`'s written member into `ss`, which is larger;
            // the two do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(src, dst, bytes) };
            assert_eq!(socket_addr(&ss, len), Some(a));
            // A length too short for the family.
            assert_eq!(socket_addr(&ss, len - 1), None);
        }
        assert_eq!(socket_addr(&empty_sockaddr_storage(), 128), None);
    }

    fn bound(addr: &str) -> UdpSocket {
        let s = UdpSocket::bind(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        s
    }

    /// Receive on a blocking socket (read timeout set), retrying EINTR.
    fn recv_inet(s: &UdpSocket, buf: &mut [u8]) -> (RecvMeta, Option<SocketAddr>) {
        loop {
            match recvmsg_inet(s.as_fd(), buf, 0) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r.unwrap(),
            }
        }
    }

    #[test]
    fn tos_and_timestamps_cross_loopback() {
        for (local, tos) in [("127.0.0.1:0", Tos::Ip(0xb9)), ("[::1]:0", Tos::Ipv6(0xb9))] {
            let rx = bound(local);
            let tx = bound(local);
            let (level, name) = match tos {
                Tos::Ip(_) => (libc::IPPROTO_IP, libc::IP_RECVTOS),
                Tos::Ipv6(_) => (libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS),
            };
            setsockopt_int(rx.as_fd(), level, name, 1).unwrap();
            setsockopt_int(rx.as_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).unwrap();
            let dst = rx.local_addr().unwrap();
            assert_eq!(sendmsg_tos(tx.as_fd(), &[5u8; 30], &dst, tos, 0).unwrap(), 30);
            let mut buf = [0u8; 64];
            let (m, from) = recv_inet(&rx, &mut buf);
            assert_eq!((m.len, m.truncated, m.tos), (30, false, Some(0xb9)), "{local}");
            assert_eq!(from, Some(tx.local_addr().unwrap()));
            assert_eq!(&buf[..30], &[5u8; 30]);
            let ts = m.timestampns.expect("SCM_TIMESTAMPNS");
            assert!(ts.sec > 1_577_836_800 && (0..1_000_000_000).contains(&ts.nsec));
            // Truncated, and with MSG_TRUNC its true length.
            sendmsg_tos(tx.as_fd(), &[6u8; 30], &dst, tos, 0).unwrap();
            let mut small = [0u8; 4];
            let (m, _) = recvmsg_inet(rx.as_fd(), &mut small, libc::MSG_TRUNC).unwrap();
            assert_eq!((m.len, m.truncated), (30, true));
            // Nothing left: EAGAIN.
            let e = recvmsg_inet(rx.as_fd(), &mut buf, libc::MSG_DONTWAIT).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EAGAIN));
        }
        // Without IP_RECVTOS and SO_TIMESTAMPNS: no control messages.
        let (rx, tx) = (bound("127.0.0.1:0"), bound("127.0.0.1:0"));
        sendmsg_tos(tx.as_fd(), b"x", &rx.local_addr().unwrap(), Tos::Ip(1), 0).unwrap();
        let (m, _) = recv_inet(&rx, &mut [0u8; 8]);
        assert_eq!((m.len, m.tos, m.timestampns), (1, None, None));
        // An IPv6 destination from an IPv4 socket is the kernel's error, not ours.
        let e = sendmsg_tos(tx.as_fd(), b"x", &"[::1]:9".parse().unwrap(), Tos::Ipv6(0), 0).unwrap_err();
        assert!(e.raw_os_error().is_some());
    }

    #[test]
    fn tcp_calls() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let fd = socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0).unwrap();
        let e = set_tcp_congestion(fd.as_fd(), "l4s-no-such-cc").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        set_tcp_congestion(fd.as_fd(), "reno").unwrap();
        connect(fd.as_fd(), &l.local_addr().unwrap()).unwrap();
        let s = TcpStream::from(fd);
        let _peer = l.accept().unwrap();
        let mut info = [0u8; 256];
        let n = tcp_info(s.as_fd(), &mut info).unwrap();
        // tcpi_state (byte 0) is TCP_ESTABLISHED.
        assert!((104..=256).contains(&n), "{n}");
        assert_eq!(info[0], 1);
        // A short buffer gets as much as fits.
        assert_eq!(tcp_info(s.as_fd(), &mut [0u8; 8]).unwrap(), 8);
        assert_eq!(send_queue_len(s.as_fd()).unwrap(), 0);
        // Not TCP sockets.
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(tcp_info(u.as_fd(), &mut info).is_err());
        assert!(set_tcp_congestion(u.as_fd(), "reno").is_err());
        // A refused connection.
        let closed = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let fd = socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0).unwrap();
        let e = connect(fd.as_fd(), &closed).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ECONNREFUSED));
    }

    #[test]
    fn process_calls() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
        let euid: u32 = uid.split_whitespace().nth(2).unwrap().parse().unwrap();
        assert_eq!(geteuid(), euid);
    }

    /// Needs root (CAP_NET_RAW): an AF_PACKET socket sees a loopback datagram leave and
    /// arrive, with kernel stamps.
    #[test]
    fn packet_socket_sees_loopback() {
        if geteuid() != 0 {
            eprintln!("skipped: needs root");
            return;
        }
        let proto = (libc::ETH_P_ALL as u16).to_be() as c_int;
        let tap = socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, proto).unwrap();
        setsockopt_int(tap.as_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).unwrap();
        let (rx, tx) = (bound("127.0.0.1:0"), bound("127.0.0.1:0"));
        let marker = *b"l4s-live-sys-tap-marker";
        tx.send_to(&marker, rx.local_addr().unwrap()).unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 2048];
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while seen.len() < 2 && std::time::Instant::now() < deadline {
            let Ok((m, pkttype)) = recvmsg_packet(tap.as_fd(), &mut buf, libc::MSG_DONTWAIT) else {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            };
            let frame = &buf[..m.len.min(buf.len())];
            if frame.windows(marker.len()).any(|w| w == marker) {
                assert!(m.timestampns.is_some());
                seen.push(pkttype);
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, [libc::PACKET_HOST, libc::PACKET_OUTGOING]);
    }
}
