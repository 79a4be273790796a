//! Every system call of l4s-fwd, behind safe functions: the crate's one module with `unsafe`.
//! l4s-live builds its own system calls on the common ones here ([`socket`],
//! [`setsockopt_int`], [`ppoll`], [`set_timer_slack`], [`cvt`], [`cvt_len`],
//! [`empty_msghdr`]).
//!
//! The rest of the crate is `#![deny(unsafe_code)]` and reaches the kernel only through
//! here. The wrappers follow what `nix` and `rustix` offer, without the dependency:
//!
//! * descriptors are [`OwnedFd`] (closed on drop; [`socket`] is the only place one is made
//!   from a raw number) or borrowed as [`BorrowedFd`] for the length of a call;
//! * failures are [`io::Result`], with `errno` read right after the failing call;
//! * memory crosses as slices, values or types built here ([`SockaddrLl`], [`MmsgScratch`]),
//!   never as pointers, so the kernel only ever writes into memory the call borrows
//!   mutably, and never more of it than the length passed with it;
//! * options that could make the kernel keep a pointer or change more than the calling
//!   thread are not offered: socket options take an `int` ([`setsockopt_int`]) or a value
//!   built here, `setns` joins network namespaces only ([`setns_net`]), `prctl` sets the
//!   timer slack only ([`set_timer_slack`]).
//!
//! So no argument a caller can pass makes one of these functions undefined behaviour; every
//! `unsafe` block says why in its `SAFETY:` comment. Flags are passed through unchanged.
#![deny(clippy::undocumented_unsafe_blocks)]

use std::ffi::CStr;
use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use libc::c_int;

/// `-1` (or any negative return) as the `errno` it set.
pub fn cvt(rc: c_int) -> io::Result<c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// [`cvt`] for calls that return a byte count.
pub fn cvt_len(n: libc::ssize_t) -> io::Result<usize> {
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

// ------------------------------------------------------------------------------------------
// Interfaces and sockets
// ------------------------------------------------------------------------------------------

/// The index of interface `name` in the calling thread's network namespace,
/// `if_nametoindex(3)`. `Err` (`ENODEV`) when there is no such interface.
pub fn if_nametoindex(name: &CStr) -> io::Result<u32> {
    // SAFETY: `name` is a NUL-terminated string that lives across the call, which only
    // reads it.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(index)
    }
}

/// A new socket, `socket(2)`, owned by the returned [`OwnedFd`] (closed when it drops).
pub fn socket(domain: c_int, ty: c_int, protocol: c_int) -> io::Result<OwnedFd> {
    // SAFETY: socket(2) takes only integers.
    let raw = cvt(unsafe { libc::socket(domain, ty, protocol) })?;
    // SAFETY: on success `raw` is a descriptor the kernel just created for this call, so
    // nothing else in the process owns it; the OwnedFd becomes its only owner.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// A link-layer address, `struct sockaddr_ll` of `packet(7)`: what an AF_PACKET socket is
/// bound to, and where a received frame came from.
#[derive(Clone, Copy)]
pub struct SockaddrLl(libc::sockaddr_ll);

impl SockaddrLl {
    /// The address of interface `ifindex` for frames of EtherType `protocol` (host byte
    /// order; `ETH_P_ALL` for every frame), as `bind(2)` takes it.
    pub fn new(ifindex: i32, protocol: u16) -> SockaddrLl {
        SockaddrLl(libc::sockaddr_ll {
            sll_family: libc::AF_PACKET as u16,
            sll_protocol: protocol.to_be(),
            sll_ifindex: ifindex,
            ..EMPTY_SOCKADDR_LL
        })
    }
}

/// An all-zero `sockaddr_ll` (room for the kernel to write a sender's address into).
const EMPTY_SOCKADDR_LL: libc::sockaddr_ll = libc::sockaddr_ll {
    sll_family: 0,
    sll_protocol: 0,
    sll_ifindex: 0,
    sll_hatype: 0,
    sll_pkttype: 0,
    sll_halen: 0,
    sll_addr: [0; 8],
};

/// Bind an AF_PACKET socket to a link-layer address, `bind(2)` (see `packet(7)`).
pub fn bind_ll(fd: BorrowedFd<'_>, addr: &SockaddrLl) -> io::Result<()> {
    // SAFETY: the pointer and length describe the sockaddr_ll borrowed for the call, which
    // the kernel only reads.
    cvt(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr.0 as *const libc::sockaddr_ll).cast::<libc::sockaddr>(),
            size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// Set an `int`-valued socket option, `setsockopt(2)` (see `socket(7)`, `packet(7)`).
pub fn setsockopt_int(fd: BorrowedFd<'_>, level: c_int, name: c_int, value: c_int) -> io::Result<()> {
    // SAFETY: the kernel reads `size_of::<c_int>()` bytes from `value` on this stack frame;
    // an option of another type fails with EINVAL, and an int cannot make the kernel keep a
    // pointer into our memory.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const c_int).cast::<libc::c_void>(),
            size_of::<c_int>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// Add a membership of `mr_type` (e.g. `PACKET_MR_PROMISC`) on interface `ifindex` to an
/// AF_PACKET socket: `setsockopt(2)` with `SOL_PACKET`, `PACKET_ADD_MEMBERSHIP` and a
/// `struct packet_mreq` without address (see `packet(7)`).
pub fn packet_add_membership(fd: BorrowedFd<'_>, ifindex: i32, mr_type: u16) -> io::Result<()> {
    let mreq = libc::packet_mreq {
        mr_ifindex: ifindex,
        mr_type,
        mr_alen: 0,
        mr_address: [0; 8],
    };
    // SAFETY: the pointer and length describe `mreq` on this stack frame, which the kernel
    // only reads.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            (&mreq as *const libc::packet_mreq).cast::<libc::c_void>(),
            size_of::<libc::packet_mreq>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// The counters of an AF_PACKET socket since the last read, which resets them:
/// `getsockopt(2)` with `SOL_PACKET`, `PACKET_STATISTICS` (see `packet(7)`).
pub fn packet_statistics(fd: BorrowedFd<'_>) -> io::Result<libc::tpacket_stats> {
    let mut st = libc::tpacket_stats {
        tp_packets: 0,
        tp_drops: 0,
    };
    let mut len = size_of::<libc::tpacket_stats>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes (the size of `st`, borrowed mutably for
    // the call) into `st` and the written length into `len`.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            (&mut st as *mut libc::tpacket_stats).cast::<libc::c_void>(),
            &mut len,
        )
    })?;
    Ok(st)
}

/// The MTU of interface `name`: `ioctl(2)` `SIOCGIFMTU` on any socket `fd` (see
/// `netdevice(7)`). `Err` (`InvalidInput`) for a name of `IFNAMSIZ` bytes or more.
pub fn interface_mtu(fd: BorrowedFd<'_>, name: &str) -> io::Result<i32> {
    if name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "interface name too long"));
    }
    let mut ifr = libc::ifreq {
        ifr_name: [0; libc::IFNAMSIZ],
        ifr_ifru: libc::__c_anonymous_ifr_ifru { ifru_mtu: 0 },
    };
    for (d, s) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    // SAFETY: SIOCGIFMTU reads the NUL-terminated name (shorter than IFNAMSIZ, checked
    // above) of the ifreq borrowed mutably for the call and writes its `ifru_mtu`.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFMTU, &mut ifr) })?;
    // SAFETY: every member of the union is plain integers; `ifru_mtu` was initialised above
    // and the kernel wrote it.
    Ok(unsafe { ifr.ifr_ifru.ifru_mtu })
}

// ------------------------------------------------------------------------------------------
// Sending and receiving
// ------------------------------------------------------------------------------------------

/// Read one datagram into `buf`, `recv(2)`; its length, at most `buf.len()` unless `flags`
/// has `MSG_TRUNC`.
pub fn recv(fd: BorrowedFd<'_>, buf: &mut [u8], flags: c_int) -> io::Result<usize> {
    // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`, borrowed mutably for
    // the call.
    cvt_len(unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), flags) })
}

/// Send `buf` as one datagram (frame), `send(2)`; the bytes sent.
pub fn send(fd: BorrowedFd<'_>, buf: &[u8], flags: c_int) -> io::Result<usize> {
    // SAFETY: the kernel reads `buf.len()` bytes from `buf`, borrowed for the call.
    cvt_len(unsafe { libc::send(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len(), flags) })
}

/// What the kernel said about one received datagram besides its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvMeta {
    /// Its length: at most the buffer's, or its true length if `MSG_TRUNC` was passed.
    pub len: usize,
    /// `MSG_TRUNC` in `msg_flags`: it was longer than the buffer.
    pub truncated: bool,
    /// `sll_pkttype` of the sender's address (`PACKET_HOST`, `PACKET_OUTGOING`, ...; 0 for
    /// sockets of other families).
    pub pkttype: u8,
    /// Its `SCM_TIMESTAMPNS` control message (with `SO_TIMESTAMPNS` on), CLOCK_REALTIME in
    /// nanoseconds. `None` without one, with a zero stamp, or with the control data
    /// truncated (`MSG_CTRUNC`).
    pub realtime_ns: Option<i128>,
}

/// Control-message room for one `SCM_TIMESTAMPNS` (a `cmsghdr` and a `timespec`), aligned
/// for `cmsghdr`.
const CTRL_LEN: usize = 64;
#[derive(Clone, Copy)]
#[repr(C, align(8))]
struct CtrlBuf([u8; CTRL_LEN]);

const _: () = assert!(std::mem::align_of::<CtrlBuf>() >= std::mem::align_of::<libc::cmsghdr>());

/// A `msghdr` with no buffers attached (`recvmsg(2)`'s header, filled in before each call).
pub fn empty_msghdr() -> libc::msghdr {
    // SAFETY: msghdr is integers and raw pointers (plus, on some C libraries, padding
    // integers), for all of which all-zero bytes are a valid value (null pointers, 0).
    unsafe { std::mem::zeroed() }
}

/// A header for one datagram into `buf`, sender address into `addr`, control data into `ctrl`.
fn msghdr_for(iov: &mut libc::iovec, addr: &mut libc::sockaddr_ll, ctrl: &mut CtrlBuf) -> libc::msghdr {
    let mut msg = empty_msghdr();
    msg.msg_name = (addr as *mut libc::sockaddr_ll).cast();
    msg.msg_namelen = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctrl.0.as_mut_ptr().cast();
    msg.msg_controllen = CTRL_LEN as _;
    msg
}

/// The `SCM_TIMESTAMPNS` stamp in the control data of `msg` (CLOCK_REALTIME, ns), if any.
///
/// # Safety
///
/// `msg` was made by [`msghdr_for`] and filled by a `recvmsg` or `recvmmsg` that returned,
/// and its [`CtrlBuf`] is still alive: the kernel wrote `msg_controllen` (<= [`CTRL_LEN`])
/// bytes of it.
// `msg_controllen` and `cmsg_len` are `size_t` in glibc but `socklen_t` in musl.
#[allow(clippy::unnecessary_cast)]
unsafe fn scm_timestampns(msg: &libc::msghdr) -> Option<i128> {
    if msg.msg_control.is_null() || msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return None;
    }
    let controllen = (msg.msg_controllen as usize).min(CTRL_LEN);
    // SAFETY: by this function's contract, `msg_control` points to a live CtrlBuf (aligned
    // for cmsghdr) of which the kernel wrote the first `msg_controllen` (<= CTRL_LEN) bytes.
    // CMSG_FIRSTHDR and CMSG_NXTHDR only return headers that lie within those bytes (or
    // null); a header's data is read only when its `cmsg_len` says a whole timespec follows
    // it and ends within those bytes, and read unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let need = libc::CMSG_LEN(size_of::<libc::timespec>() as u32) as usize;
                let data_end = c as usize - msg.msg_control as usize + (*c).cmsg_len as usize;
                if ((*c).cmsg_len as usize) < need || data_end > controllen {
                    return None;
                }
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                if ts.tv_sec == 0 && ts.tv_nsec == 0 {
                    return None;
                }
                return Some(ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128);
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    None
}

/// Read one datagram into `buf`, `recvmsg(2)`, with its sender's link-layer address and its
/// receive time (see [`RecvMeta`]).
pub fn recvmsg(fd: BorrowedFd<'_>, buf: &mut [u8], flags: c_int) -> io::Result<RecvMeta> {
    let mut addr = EMPTY_SOCKADDR_LL;
    let mut ctrl = CtrlBuf([0; CTRL_LEN]);
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut msg = msghdr_for(&mut iov, &mut addr, &mut ctrl);
    // SAFETY: `msg` describes `buf` (borrowed mutably, with its true length), `addr` and
    // `ctrl` (locals, with their sizes), all alive and not otherwise used during the call;
    // the kernel writes only within those lengths and into `msg`.
    let n = cvt_len(unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, flags) })?;
    Ok(RecvMeta {
        len: n,
        truncated: msg.msg_flags & libc::MSG_TRUNC != 0,
        pkttype: addr.sll_pkttype,
        // SAFETY: `msg` was made by `msghdr_for` and filled by the call that just returned;
        // its control buffer `ctrl` is still alive.
        realtime_ns: unsafe { scm_timestampns(&msg) },
    })
}

/// The headers, addresses and control buffers of [`recvmmsg`], allocated once for up to
/// `cap` datagrams per call.
pub struct MmsgScratch {
    msgs: Vec<libc::mmsghdr>,
    iov: Vec<libc::iovec>,
    addrs: Vec<libc::sockaddr_ll>,
    ctrl: Vec<CtrlBuf>,
}

impl MmsgScratch {
    /// Room for `cap` datagrams per call (at least 1).
    pub fn new(cap: usize) -> MmsgScratch {
        let cap = cap.max(1);
        MmsgScratch {
            msgs: (0..cap)
                .map(|_| libc::mmsghdr {
                    msg_hdr: empty_msghdr(),
                    msg_len: 0,
                })
                .collect(),
            iov: (0..cap)
                .map(|_| libc::iovec {
                    iov_base: std::ptr::null_mut(),
                    iov_len: 0,
                })
                .collect(),
            addrs: vec![EMPTY_SOCKADDR_LL; cap],
            ctrl: vec![CtrlBuf([0; CTRL_LEN]); cap],
        }
    }

    /// The most datagrams one call reads.
    pub fn cap(&self) -> usize {
        self.msgs.len()
    }
}

// SAFETY: the raw pointers inside (into the scratch's own vectors and the caller's buffers)
// are written by `recvmmsg` before its system call and read only by it, during and right
// after that call, while it holds `&mut MmsgScratch` and the buffers; at any other time they
// are never dereferenced, so the scratch may move to another thread.
unsafe impl Send for MmsgScratch {}

/// Read up to `min(bufs.len(), scratch.cap())` datagrams, one per buffer, with one
/// `recvmmsg(2)` (no timeout). `out` is cleared and gets one [`RecvMeta`] per filled buffer,
/// in order; returns how many. Nothing is called for no buffers (`Ok(0)`).
pub fn recvmmsg(
    fd: BorrowedFd<'_>,
    bufs: &mut [Box<[u8]>],
    scratch: &mut MmsgScratch,
    flags: c_int,
    out: &mut Vec<RecvMeta>,
) -> io::Result<usize> {
    out.clear();
    let n = bufs.len().min(scratch.cap());
    if n == 0 {
        return Ok(0);
    }
    let MmsgScratch { msgs, iov, addrs, ctrl } = scratch;
    let slots = msgs
        .iter_mut()
        .zip(iov.iter_mut())
        .zip(addrs.iter_mut())
        .zip(ctrl.iter_mut());
    for ((((m, v), a), c), buf) in slots.zip(bufs.iter_mut()) {
        *v = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        *m = libc::mmsghdr {
            msg_hdr: msghdr_for(v, a, c),
            msg_len: 0,
        };
    }
    // SAFETY: the first `n` headers (n <= msgs.len()) each describe one of `bufs` (borrowed
    // mutably, with its true length) and that index's iovec, address and control buffer in
    // `scratch` (borrowed mutably, heap storage that does not move during the call), all
    // distinct; the kernel writes only within those lengths and into the headers. A null
    // timeout is allowed.
    let got = cvt(unsafe {
        libc::recvmmsg(
            fd.as_raw_fd(),
            msgs.as_mut_ptr(),
            n as libc::c_uint,
            flags,
            std::ptr::null_mut(),
        )
    })? as usize;
    for (m, a) in msgs.iter().zip(addrs.iter()).take(got.min(n)) {
        out.push(RecvMeta {
            len: m.msg_len as usize,
            truncated: m.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
            pkttype: a.sll_pkttype,
            // SAFETY: a header of this call, made by `msghdr_for`, after the call returned;
            // its control buffer is in `scratch`, still borrowed.
            realtime_ns: unsafe { scm_timestampns(&m.msg_hdr) },
        });
    }
    Ok(out.len())
}

// ------------------------------------------------------------------------------------------
// Time, waiting, scheduling
// ------------------------------------------------------------------------------------------

/// A clock of `clock_gettime(2)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// `CLOCK_MONOTONIC`.
    Monotonic,
    /// `CLOCK_REALTIME`.
    Realtime,
}

/// The time on `clock`, `clock_gettime(2)`. These clocks always exist on Linux; were one
/// unreadable the time would read as zero.
#[inline]
pub fn clock_gettime(clock: Clock) -> libc::timespec {
    let id = match clock {
        Clock::Monotonic => libc::CLOCK_MONOTONIC,
        Clock::Realtime => libc::CLOCK_REALTIME,
    };
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into `ts`, borrowed mutably for the call.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts
}

/// Wait until one of `fds` has one of its `events` or `timeout` passed, `ppoll(2)` (no
/// signal mask change); the number of entries with `revents` set (0: timed out).
///
/// The descriptors are plain numbers: polling never reads, writes or closes through them,
/// so a stale one only reports `POLLNVAL` (or the readiness of whatever file now has that
/// number), never undefined behaviour.
pub fn ppoll(fds: &mut [libc::pollfd], timeout: &libc::timespec) -> io::Result<usize> {
    // SAFETY: the kernel reads and writes `fds.len()` pollfds in `fds`, borrowed mutably
    // for the call, and reads `timeout`; a null signal mask is allowed.
    let n = cvt(unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout, std::ptr::null()) })?;
    Ok(n as usize)
}

/// Set the calling thread's timer slack to `ns` nanoseconds: `prctl(2)` with
/// `PR_SET_TIMERSLACK`.
pub fn set_timer_slack(ns: libc::c_ulong) -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes an integer and changes only the calling thread's
    // timer slack.
    cvt(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns) })?;
    Ok(())
}

/// Give the calling thread scheduling `policy` (e.g. `SCHED_FIFO`) at `priority`,
/// `sched_setscheduler(2)` for pid 0.
pub fn sched_setscheduler(policy: c_int, priority: c_int) -> io::Result<()> {
    let p = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: the kernel reads the sched_param borrowed for the call.
    cvt(unsafe { libc::sched_setscheduler(0, policy, &p) })?;
    Ok(())
}

// ------------------------------------------------------------------------------------------
// Files, namespaces, processes
// ------------------------------------------------------------------------------------------

/// Apply or remove an advisory lock on the open file `fd`, `flock(2)` (`operation`:
/// `LOCK_EX | LOCK_NB`, ...). A lock that is held elsewhere fails with `EWOULDBLOCK`.
pub fn flock(fd: BorrowedFd<'_>, operation: c_int) -> io::Result<()> {
    // SAFETY: flock takes integers and acts only on the lock of the open file.
    cvt(unsafe { libc::flock(fd.as_raw_fd(), operation) })?;
    Ok(())
}

/// Move the calling thread into the network namespace `fd` refers to (a
/// `/run/netns/NAME` or `/proc/PID/ns/net` file), `setns(2)` with `CLONE_NEWNET`. The rest of
/// the process stays where it was.
pub fn setns_net(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: setns takes integers; with CLONE_NEWNET it changes only which network
    // namespace the calling thread's new sockets belong to, and fails with EINVAL for a
    // descriptor of anything but a network namespace.
    cvt(unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) })?;
    Ok(())
}

/// Send signal `sig` to process `pid`, `kill(2)`.
pub fn kill(pid: libc::pid_t, sig: c_int) -> io::Result<()> {
    // SAFETY: kill takes integers and touches no memory of this process.
    cvt(unsafe { libc::kill(pid, sig) })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixDatagram;

    #[test]
    fn clocks_read() {
        let a = clock_gettime(Clock::Monotonic);
        let b = clock_gettime(Clock::Monotonic);
        assert!((b.tv_sec, b.tv_nsec) >= (a.tv_sec, a.tv_nsec));
        // After 2020.
        assert!(clock_gettime(Clock::Realtime).tv_sec > 1_577_836_800);
    }

    #[test]
    fn link_layer_addresses() {
        let SockaddrLl(a) = SockaddrLl::new(7, libc::ETH_P_ALL as u16);
        assert_eq!(a.sll_family, libc::AF_PACKET as u16);
        assert_eq!(a.sll_ifindex, 7);
        assert_eq!(a.sll_protocol, (libc::ETH_P_ALL as u16).to_be());
        assert_eq!(
            (a.sll_hatype, a.sll_pkttype, a.sll_halen, a.sll_addr),
            (0, 0, 0, [0; 8])
        );
    }

    #[test]
    fn interfaces_by_name() {
        let lo = if_nametoindex(c"lo").unwrap();
        assert!(lo >= 1);
        assert!(if_nametoindex(c"l4s-no-such-if").is_err());
        let s = socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0).unwrap();
        assert!(interface_mtu(s.as_fd(), "lo").unwrap() > 0);
        assert!(interface_mtu(s.as_fd(), "l4s-no-such-if").is_err());
        let long = interface_mtu(s.as_fd(), "a-name-of-16-chr").unwrap_err();
        assert_eq!(long.kind(), io::ErrorKind::InvalidInput);
        // Not an AF_PACKET socket.
        assert!(packet_statistics(s.as_fd()).is_err());
    }

    /// A datagram socket pair whose receiver stamps datagrams (AF_UNIX honours
    /// SO_TIMESTAMPNS like AF_PACKET does).
    fn stamped_pair() -> (UnixDatagram, UnixDatagram) {
        let (tx, rx) = UnixDatagram::pair().unwrap();
        setsockopt_int(rx.as_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).unwrap();
        (tx, rx)
    }

    fn realtime_ns() -> i128 {
        let t = clock_gettime(Clock::Realtime);
        t.tv_sec as i128 * 1_000_000_000 + t.tv_nsec as i128
    }

    #[test]
    fn recvmsg_gives_length_truncation_and_stamp() {
        let (tx, rx) = stamped_pair();
        let before = realtime_ns();
        assert_eq!(send(tx.as_fd(), &[7u8; 100], 0).unwrap(), 100);
        let mut small = [0u8; 10];
        let m = recvmsg(rx.as_fd(), &mut small, libc::MSG_DONTWAIT | libc::MSG_TRUNC).unwrap();
        assert_eq!((m.len, m.truncated), (100, true));
        assert_eq!(small, [7u8; 10]);
        let stamp = m.realtime_ns.expect("SCM_TIMESTAMPNS");
        assert!(stamp >= before - 1_000_000 && stamp <= realtime_ns());
        // Nothing left: EAGAIN.
        let e = recvmsg(rx.as_fd(), &mut small, libc::MSG_DONTWAIT).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EAGAIN));
        // Without SO_TIMESTAMPNS there is no stamp.
        let (tx, rx) = UnixDatagram::pair().unwrap();
        send(tx.as_fd(), b"x", 0).unwrap();
        let mut buf = [0u8; 4];
        let m = recvmsg(rx.as_fd(), &mut buf, libc::MSG_DONTWAIT).unwrap();
        assert_eq!((m.len, m.truncated, m.realtime_ns), (1, false, None));
    }

    #[test]
    fn recvmmsg_fills_buffers_in_order() {
        let (tx, rx) = stamped_pair();
        let mut scratch = MmsgScratch::new(4);
        let mut bufs: Vec<Box<[u8]>> = (0..6).map(|_| vec![0u8; 8].into_boxed_slice()).collect();
        let mut out = Vec::new();
        // Nothing waiting.
        let e = recvmmsg(rx.as_fd(), &mut bufs, &mut scratch, libc::MSG_DONTWAIT, &mut out).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EAGAIN));
        for (i, len) in [3usize, 8, 20, 1, 5].into_iter().enumerate() {
            send(tx.as_fd(), &vec![i as u8 + 1; len], 0).unwrap();
        }
        // At most `cap` per call, even with more buffers.
        let got = recvmmsg(
            rx.as_fd(),
            &mut bufs,
            &mut scratch,
            libc::MSG_DONTWAIT | libc::MSG_TRUNC,
            &mut out,
        )
        .unwrap();
        assert_eq!(got, 4);
        let lens: Vec<(usize, bool)> = out.iter().map(|m| (m.len, m.truncated)).collect();
        assert_eq!(lens, [(3, false), (8, false), (20, true), (1, false)]);
        assert!(out.iter().all(|m| m.realtime_ns.is_some()));
        assert_eq!(&bufs[0][..3], &[1, 1, 1]);
        assert_eq!(&bufs[2][..], &[3u8; 8]);
        assert_eq!(bufs[3][0], 4);
        // Fewer buffers than datagrams, then none at all.
        let got = recvmmsg(rx.as_fd(), &mut bufs[..1], &mut scratch, libc::MSG_DONTWAIT, &mut out).unwrap();
        assert_eq!((got, out[0].len), (1, 5));
        let got = recvmmsg(rx.as_fd(), &mut [], &mut scratch, libc::MSG_DONTWAIT, &mut out).unwrap();
        assert_eq!((got, out.len()), (0, 0));
        // The scratch may move to another thread.
        std::thread::spawn(move || scratch.cap()).join().unwrap();
    }

    #[test]
    fn ppoll_reports_readable() {
        let (tx, rx) = UnixDatagram::pair().unwrap();
        let ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000,
        };
        let mut p = [libc::pollfd {
            fd: rx.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        assert_eq!(ppoll(&mut p, &ts).unwrap(), 0);
        send(tx.as_fd(), b"x", 0).unwrap();
        assert_eq!(ppoll(&mut p, &ts).unwrap(), 1);
        assert_ne!(p[0].revents & libc::POLLIN, 0);
        let mut b = [0u8; 4];
        assert_eq!(recv(rx.as_fd(), &mut b, libc::MSG_DONTWAIT).unwrap(), 1);
        assert!(recv(rx.as_fd(), &mut b, libc::MSG_DONTWAIT).is_err());
        // A number that is no descriptor: POLLNVAL, not an error.
        let mut p = [libc::pollfd {
            fd: 1 << 28,
            events: libc::POLLIN,
            revents: 0,
        }];
        assert_eq!(ppoll(&mut p, &ts).unwrap(), 1);
        assert_ne!(p[0].revents & libc::POLLNVAL, 0);
    }

    #[test]
    fn flock_is_exclusive_between_open_files() {
        let path = std::env::temp_dir().join(format!("l4s-fwd-sys-flock-{}", std::process::id()));
        let a = std::fs::File::create(&path).unwrap();
        let b = std::fs::File::open(&path).unwrap();
        flock(a.as_fd(), libc::LOCK_EX | libc::LOCK_NB).unwrap();
        let e = flock(b.as_fd(), libc::LOCK_EX | libc::LOCK_NB).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EWOULDBLOCK));
        drop(a);
        flock(b.as_fd(), libc::LOCK_EX | libc::LOCK_NB).unwrap();
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn thread_and_process_calls() {
        set_timer_slack(1).unwrap();
        // Signal 0 only checks that the process exists.
        kill(std::process::id() as libc::pid_t, 0).unwrap();
        // Not a valid SCHED_FIFO priority.
        let e = sched_setscheduler(libc::SCHED_FIFO, 1000).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
        std::thread::spawn(|| {
            // Joining our own namespace (needs CAP_SYS_ADMIN) changes nothing; a file that
            // is no namespace is refused.
            let own = std::fs::File::open("/proc/self/ns/net").unwrap();
            if let Err(e) = setns_net(own.as_fd()) {
                assert_eq!(e.raw_os_error(), Some(libc::EPERM));
            }
            let not_ns = std::fs::File::open("/proc/self/status").unwrap();
            assert!(setns_net(not_ns.as_fd()).is_err());
        })
        .join()
        .unwrap();
    }
}
