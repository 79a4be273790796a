//! AF_PACKET sockets bound to one interface: the forwarder's I/O.
//!
//! # Why AF_PACKET with `recvmmsg`, and not a ring, AF_XDP or TUN
//!
//! * **TUN** sits at layer 3 on one side only: it cannot bridge two existing interfaces
//!   (`l4s router --in eth0 --out eth1`), and it needs routes and addresses set up around it.
//! * **AF_XDP** is the fastest, but needs an XDP program loaded (BPF tooling, a recent kernel,
//!   driver support; on veth only the generic/copy mode), which is far more machinery than a
//!   1 Gbit/s target needs.
//! * **AF_PACKET** works on any Ethernet-like interface, at layer 2 (so ARP and NDP cross the
//!   bottleneck unchanged and the forwarder is a transparent bump in the wire), with nothing
//!   but `CAP_NET_RAW`. Reading in batches with `recvmmsg(2)` amortises the system call over
//!   up to [`crate::router::RouterConfig::batch`] frames, into buffers of the forwarder's own
//!   pool, so no copy out of a ring is needed when a frame is queued for milliseconds.
//!
//! Both read paths are implemented ([`IoMode::Batched`], [`IoMode::Single`]) and measured by
//! `cargo bench -p l4s-fwd` (veth, 1514-byte frames, DualPI2, 2-core host busy with other
//! builds, load average 5): batched 287 000 frames/s (3.5 Gbit/s) forwarded, one `recv` per
//! frame 184 000 frames/s (2.2 Gbit/s). In both runs the forwarder kept up with everything
//! the single UDP sender offered (294 000 and 189 000 frames/s), so these are lower bounds;
//! both clear the 83 000 frames/s (1 Gbit/s) target by a wide margin, and batching is the
//! default because it needs fewer system calls per frame. A PACKET_MMAP RX ring (not
//! implemented) would save the copy into the pool buffer, but a frame held in a queue for
//! milliseconds must leave the ring anyway, which is the usual case at a bottleneck.
//!
//! Sends go out one frame per `send(2)` as the pacer releases them (they are spaced in time,
//! so there is nothing to batch), with `PACKET_QDISC_BYPASS`: the userspace AQM is the queue.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use crate::error::FwdError;
use crate::sys;

/// How frames are read from the socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IoMode {
    /// Up to `batch` frames per `recvmmsg(2)`.
    #[default]
    Batched,
    /// One `recv(2)` per frame.
    Single,
}

/// An AF_PACKET socket bound to one interface, receiving every frame that arrives on it
/// (promiscuous, outgoing frames ignored), non-blocking.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    ifname: String,
    ifindex: i32,
    mtu: u32,
}

const CAP_HINT: &str = "CAP_NET_RAW";

/// What one receive produced for one buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received {
    /// A frame of this many bytes.
    Frame(usize),
    /// A frame longer than the buffer (GRO/LRO super-packet or MTU mismatch); its true length.
    Oversize(usize),
    /// Nothing to keep (a frame this host sent, which the kernel loops back to packet
    /// sockets on some kernels).
    Skip,
}

/// The index of interface `ifname` in the calling thread's network namespace, or an error
/// at `key` (the option that named it) saying there is none.
pub fn interface_index(ifname: &str, key: &str) -> Result<i32, FwdError> {
    crate::netns::check_ifname(ifname)?;
    let cname = std::ffi::CString::new(ifname).map_err(|_| FwdError::config(key, "contains a NUL byte"))?;
    let Ok(ifindex) = sys::if_nametoindex(&cname) else {
        return Err(FwdError::config(
            key,
            format!("no interface named {ifname:?} in this network namespace (see `ip link`)"),
        ));
    };
    Ok(ifindex as i32)
}

impl PacketSocket {
    /// Open and bind a socket on `ifname` in the calling thread's network namespace.
    pub fn open(ifname: &str) -> Result<PacketSocket, FwdError> {
        let ifindex = interface_index(ifname, "interface")?;
        let proto = (libc::ETH_P_ALL as u16).to_be() as i32;
        let fd = sys::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            proto,
        )
        .map_err(|e| FwdError::from_os(format!("opening an AF_PACKET socket on {ifname}"), e, CAP_HINT))?;
        let fdb = fd.as_fd();
        sys::bind_ll(fdb, &sys::SockaddrLl::new(ifindex, libc::ETH_P_ALL as u16))
            .map_err(|e| FwdError::from_os(format!("binding an AF_PACKET socket to {ifname}"), e, CAP_HINT))?;
        // Frames to other hosts' MACs must reach us on real NICs too.
        sys::packet_add_membership(fdb, ifindex, libc::PACKET_MR_PROMISC as u16)
            .map_err(|e| FwdError::from_os(format!("promiscuous mode on {ifname}"), e, CAP_HINT))?;
        // Optional tunings: older kernels lack some; the forwarder also filters outgoing
        // frames itself.
        let _ = sys::setsockopt_int(fdb, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, 1);
        let _ = sys::setsockopt_int(fdb, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, 1);
        // The kernel's receive time of every frame (see `RxStamp`): without it a frame that
        // waited in the socket while the thread was held back would look younger.
        let _ = sys::setsockopt_int(fdb, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1);
        let buf: libc::c_int = 8 << 20;
        if sys::setsockopt_int(fdb, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, buf).is_err() {
            let _ = sys::setsockopt_int(fdb, libc::SOL_SOCKET, libc::SO_RCVBUF, buf);
        }
        if sys::setsockopt_int(fdb, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, buf).is_err() {
            let _ = sys::setsockopt_int(fdb, libc::SOL_SOCKET, libc::SO_SNDBUF, buf);
        }
        let mtu = interface_mtu(fdb, ifname)?;
        let s = PacketSocket {
            fd,
            ifname: ifname.to_string(),
            ifindex,
            mtu,
        };
        s.drain();
        Ok(s)
    }

    pub fn ifname(&self) -> &str {
        &self.ifname
    }
    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }
    /// The interface MTU (IP bytes; frames are up to 14 + 8 bytes longer with VLAN tags).
    pub fn mtu(&self) -> u32 {
        self.mtu
    }
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Discard whatever queued before the socket was bound.
    fn drain(&self) {
        let mut b = [0u8; 64];
        while sys::recv(self.fd.as_fd(), &mut b, libc::MSG_DONTWAIT).is_ok() {}
    }

    /// Read one frame into `buf` without blocking. `Ok(None)`: nothing waiting.
    pub fn recv_one(&self, buf: &mut [u8]) -> Result<Option<Received>, FwdError> {
        Ok(self.recv_one_at(buf)?.map(|(r, _)| r))
    }

    /// [`PacketSocket::recv_one`], with the kernel's receive time of the frame on
    /// CLOCK_MONOTONIC when it gave one.
    pub fn recv_one_at(&self, buf: &mut [u8]) -> Result<Option<(Received, Option<l4s_core::Time>)>, FwdError> {
        let m = match sys::recvmsg(self.fd.as_fd(), buf, libc::MSG_DONTWAIT | libc::MSG_TRUNC) {
            Ok(m) => m,
            Err(e) => {
                return match e.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
                    _ => Err(FwdError::io(format!("reading from {}", self.ifname), e)),
                }
            }
        };
        let stamp = RxStamp::now().of(m.realtime_ns);
        // With MSG_TRUNC the length is the frame's own, so `m.len > buf.len()` already says
        // it was cut.
        Ok(Some((classify_rx(m.len, buf.len(), m.pkttype, false), stamp)))
    }

    /// Read up to `bufs.len()` frames, one per buffer, with one `recvmmsg(2)`. Results go
    /// to `out` (cleared first), one per filled buffer, in order.
    pub fn recv_batch(
        &self,
        bufs: &mut [Box<[u8]>],
        scratch: &mut RecvScratch,
        out: &mut Vec<Received>,
    ) -> Result<(), FwdError> {
        out.clear();
        if bufs.is_empty() {
            return Ok(());
        }
        let flags = libc::MSG_DONTWAIT | libc::MSG_TRUNC;
        if let Err(e) = sys::recvmmsg(self.fd.as_fd(), bufs, &mut scratch.mmsg, flags, &mut scratch.meta) {
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(()),
                _ => Err(FwdError::io(format!("reading from {}", self.ifname), e)),
            };
        }
        let clock = RxStamp::now();
        scratch.stamps.clear();
        for (m, buf) in scratch.meta.iter().zip(bufs.iter()) {
            scratch.stamps.push(clock.of(m.realtime_ns));
            out.push(classify_rx(m.len, buf.len(), m.pkttype, m.truncated));
        }
        Ok(())
    }

    /// Send one frame without blocking. `Ok(false)`: the device is busy (EAGAIN/ENOBUFS),
    /// try again later.
    pub fn send(&self, frame: &[u8]) -> Result<bool, FwdError> {
        let Err(e) = sys::send(self.fd.as_fd(), frame, libc::MSG_DONTWAIT) else {
            return Ok(true);
        };
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::ENOBUFS) | Some(libc::EINTR) => Ok(false),
            _ => Err(FwdError::io(
                format!("writing {} bytes to {}", frame.len(), self.ifname),
                e,
            )),
        }
    }

    /// Frames the kernel dropped because this socket's receive buffer was full (since the
    /// last call; reading resets the kernel counter).
    pub fn kernel_drops(&self) -> u64 {
        sys::packet_statistics(self.fd.as_fd()).map_or(0, |st| st.tp_drops as u64)
    }
}

impl AsFd for PacketSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

fn classify_rx(n: usize, cap: usize, pkttype: u8, trunc: bool) -> Received {
    if pkttype == libc::PACKET_OUTGOING {
        Received::Skip
    } else if trunc || n > cap {
        Received::Oversize(n)
    } else {
        Received::Frame(n)
    }
}

/// The kernel's receive time of a frame (`SO_TIMESTAMPNS`: CLOCK_REALTIME, taken when the
/// frame reached the interface's receive path) brought onto CLOCK_MONOTONIC, the clock of
/// the forwarder and the testbed. Both clocks are read once per batch; a stamp later than
/// now or more than a second old (the real-time clock was set meanwhile) is not used.
///
/// The two clocks cannot be read at one instant. The real-time clock is read between two
/// reads of the monotonic one and paired with the second, so a frame's time on the
/// monotonic clock is never earlier than when it came, only later by the time between the
/// reads: a frame moved earlier would leave a delay line before its delay had passed. When
/// the thread is preempted between the reads (a busy host), they are taken again, up to
/// [`RxStamp::TRIES`] times, and the closest pair is kept.
#[derive(Clone, Copy, Debug)]
pub struct RxStamp {
    real_ns: i128,
    mono_ns: i128,
}

impl RxStamp {
    /// Reads of the pair of clocks, at most, to find two close enough.
    pub const TRIES: usize = 4;
    /// Two monotonic reads this close (ns) bracket the real-time read well enough.
    pub const CLOSE_NS: i128 = 20_000;

    pub fn now() -> RxStamp {
        RxStamp::read_with(|clock| {
            let ts = sys::clock_gettime(clock);
            ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128
        })
    }

    /// The pair from `read` (a clock's time in ns), as [`RxStamp::now`] takes it.
    pub fn read_with(mut read: impl FnMut(sys::Clock) -> i128) -> RxStamp {
        let mut best: Option<(i128, RxStamp)> = None;
        for _ in 0..Self::TRIES {
            let before = read(sys::Clock::Monotonic);
            let real_ns = read(sys::Clock::Realtime);
            let mono_ns = read(sys::Clock::Monotonic);
            let gap = mono_ns - before;
            if best.is_none_or(|(g, _)| gap < g) {
                best = Some((gap, RxStamp { real_ns, mono_ns }));
            }
            if gap <= Self::CLOSE_NS {
                break;
            }
        }
        best.map_or(RxStamp { real_ns: 0, mono_ns: 0 }, |(_, s)| s)
    }

    /// CLOCK_REALTIME − CLOCK_MONOTONIC (ns) as read: a real-time stamp minus this is on
    /// the monotonic clock, never earlier than it should be.
    pub fn offset(&self) -> i128 {
        self.real_ns - self.mono_ns
    }

    /// A CLOCK_REALTIME stamp (ns) on CLOCK_MONOTONIC, if plausible.
    pub fn to_monotonic(&self, real_ns: i128) -> Option<l4s_core::Time> {
        let age = self.real_ns - real_ns;
        (0..=1_000_000_000)
            .contains(&age)
            .then(|| l4s_core::Time((self.mono_ns - age).max(0) as u64))
    }

    /// A received frame's stamp ([`sys::RecvMeta::realtime_ns`]) on CLOCK_MONOTONIC, if it
    /// had one and it is plausible.
    fn of(&self, realtime_ns: Option<i128>) -> Option<l4s_core::Time> {
        realtime_ns.and_then(|ns| self.to_monotonic(ns))
    }
}

/// The `recvmmsg` bookkeeping, allocated once.
pub struct RecvScratch {
    mmsg: sys::MmsgScratch,
    meta: Vec<sys::RecvMeta>,
    stamps: Vec<Option<l4s_core::Time>>,
}

impl RecvScratch {
    /// The kernel's receive time (CLOCK_MONOTONIC) of frame `i` of the last batch.
    pub fn stamp(&self, i: usize) -> Option<l4s_core::Time> {
        self.stamps.get(i).copied().flatten()
    }
}

impl RecvScratch {
    pub fn new(cap: usize) -> RecvScratch {
        let cap = cap.max(1);
        RecvScratch {
            mmsg: sys::MmsgScratch::new(cap),
            meta: Vec::with_capacity(cap),
            stamps: Vec::with_capacity(cap),
        }
    }
}

fn interface_mtu(fd: BorrowedFd<'_>, ifname: &str) -> Result<u32, FwdError> {
    let mtu = sys::interface_mtu(fd, ifname).map_err(|e| FwdError::io(format!("reading the MTU of {ifname}"), e))?;
    Ok(mtu.max(68) as u32)
}

/// CLOCK_MONOTONIC in nanoseconds as an [`l4s_core::Time`]: the clock the forwarder, its
/// records and the live endpoints on this host share.
#[inline]
pub fn monotonic_now() -> l4s_core::Time {
    let ts = sys::clock_gettime(sys::Clock::Monotonic);
    l4s_core::Time(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Wait until one of `fds` (at most [`MAX_POLLED`]; any beyond are not watched) is readable
/// or `timeout_ns` passed (`ppoll(2)`, nanosecond timeout). Returns whether something is
/// readable.
pub fn wait_readable(fds: &[RawFd], timeout_ns: u64) -> bool {
    let idle = libc::pollfd {
        fd: -1,
        events: 0,
        revents: 0,
    };
    let mut p = [idle; MAX_POLLED];
    let n = fds.len().min(MAX_POLLED);
    for (slot, &fd) in p.iter_mut().zip(&fds[..n]) {
        *slot = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
    }
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    matches!(sys::ppoll(&mut p[..n], &ts), Ok(n) if n > 0)
}

/// The most descriptors [`wait_readable`] watches.
pub const MAX_POLLED: usize = 64;

/// Ask for precise timer wake-ups on this thread (the default slack is 50 µs).
pub fn precise_timers() {
    let _ = sys::set_timer_slack(1);
}

/// Put the calling thread under SCHED_FIFO at `priority` (Linux limits such threads to 95 %
/// of each second by default, `kernel.sched_rt_runtime_us`, so a busy forwarder cannot lock
/// up the host).
pub fn set_realtime(priority: u8) -> Result<(), FwdError> {
    sys::sched_setscheduler(libc::SCHED_FIFO, priority as libc::c_int)
        .map_err(|e| FwdError::from_os("real-time scheduling of the forwarder", e, "CAP_SYS_NICE"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receive_stamps_move_onto_the_monotonic_clock() {
        let c = RxStamp {
            real_ns: 1_700_000_000_000_000_000,
            mono_ns: 5_000_000_000,
        };
        // 250 µs before the clocks were read.
        assert_eq!(
            c.to_monotonic(1_700_000_000_000_000_000 - 250_000),
            Some(l4s_core::Time(5_000_000_000 - 250_000))
        );
        assert_eq!(
            c.to_monotonic(1_700_000_000_000_000_000),
            Some(l4s_core::Time(5_000_000_000))
        );
        // From the future, or older than a second (the real-time clock was set): not used.
        assert_eq!(c.to_monotonic(1_700_000_000_000_000_001), None);
        assert_eq!(c.to_monotonic(1_700_000_000_000_000_000 - 1_000_000_001), None);
        // Read from the real clocks, a stamp just taken lands at or just before now.
        let now = RxStamp::now();
        let t = now.to_monotonic(now.real_ns - 1000).unwrap();
        assert_eq!(t.0 as i128, now.mono_ns - 1000);
    }

    /// Clocks read by a thread that runs 1 µs per read, preempted for `stalls[i]` µs
    /// (before, after) its i-th read of the real-time clock: (the pair, the reads made).
    fn read_stalled(stalls: &[(i128, i128)]) -> (RxStamp, usize) {
        let (mut t, mut reads, mut real_reads) = (5_000_000_000i128, 0, 0);
        let s = RxStamp::read_with(|clock| {
            reads += 1;
            t += 1_000;
            match clock {
                sys::Clock::Monotonic => t,
                sys::Clock::Realtime => {
                    let (before, after) = stalls.get(real_reads).copied().unwrap_or((0, 0));
                    real_reads += 1;
                    t += before * 1_000;
                    let real = REAL + t;
                    t += after * 1_000;
                    real
                }
            }
        });
        (s, reads)
    }

    const REAL: i128 = 1_700_000_000_000_000_000;

    #[test]
    fn a_stall_between_the_clock_reads_never_moves_a_frame_earlier_than_it_came() {
        // A frame stamped at true time T on the real-time clock (REAL + T) must land at T or
        // later on the monotonic one (T): the fake clocks share their time base.
        let came = 5_000_000_000i128 - 300_000;
        let land = |s: RxStamp| s.to_monotonic(REAL + came).unwrap().0 as i128 - came;
        // No stall: one try, a microsecond late.
        let (s, reads) = read_stalled(&[]);
        assert_eq!((reads, land(s)), (3, 1_000));
        // Preempted 400 µs before the real-time read: paired with the monotonic read before
        // the stall the frame would land 400 µs early, and a delay line would let it go that
        // much before its delay. Read again, and a microsecond late.
        let (s, reads) = read_stalled(&[(400, 0)]);
        assert_eq!((reads, land(s)), (6, 1_000));
        // Preempted after the real-time read at every try: the closest pair (300 µs), late
        // by that much, never early.
        let (s, reads) = read_stalled(&[(0, 400), (0, 300), (0, 500), (0, 350)]);
        assert_eq!((reads, land(s)), (3 * RxStamp::TRIES, 301_000));
    }
}
