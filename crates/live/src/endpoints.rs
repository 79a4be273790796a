//! Flow endpoints on real sockets, driven by the real clock.
//!
//! * **UDP Prague and probes**: the very same sans-IO objects the simulator drives
//!   (`l4s_transport::udp_prague::{UdpPragueSender, UdpPragueReceiver}`,
//!   `l4s_transport::probe::{ProbeSender, ProbeReceiver}`), fed with [`Clock::now`] and
//!   real datagrams ([`crate::wire`]) on [`EcnUdpSocket`]s that set the ECN field per
//!   packet. Waiting uses `ppoll(2)` with nanosecond timeouts and a 1 ns timer slack, so
//!   the pacing of UDP Prague keeps its schedule to within tens of microseconds.
//! * **Kernel TCP**: a socket with `TCP_CONGESTION` set before `connect` and a receiver
//!   that reads as fast as it can. `TCP_INFO` is sampled every 10 ms for the RTT
//!   (`tcpi_rtt`, the kernel's smoothed RTT), the window, retransmissions and the CE marks
//!   the sender was told of (`tcpi_delivered_ce`). Its packets are measured on the wire by
//!   [`crate::tap`].
//!
//! Every endpoint runs on its own thread that joined the flow's namespace before opening
//! its socket. Threads stop at the flow's stop time, at the end of the run, or when the
//! run's stop flag is set (SIGINT/SIGTERM), whichever comes first.

use crate::datagram::LiveEndpoint;
use crate::meter::{LiveFlow, SharedMeter};
use crate::sys;
use crate::udp::EcnUdpSocket;
use crate::wire::{self, Body, Datagram};
use l4s_core::{Dur, Ecn, Time};
use l4s_transport::probe::{ProbeReceiver, ProbeSender};
use l4s_transport::udp_prague::{UdpPragueReceiver, UdpPragueSender};
use l4s_transport::{Endpoint, EndpointStats, Transmit};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The run's clock: monotonic nanoseconds since the run started (`CLOCK_MONOTONIC`,
/// shared by every namespace of the host).
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    /// `CLOCK_MONOTONIC` at time 0, ns.
    mono0: u64,
}

impl Clock {
    pub fn start() -> Clock {
        Clock {
            mono0: l4s_fwd::afpacket::monotonic_now().as_nanos(),
        }
    }
    pub fn now(&self) -> Time {
        self.at_monotonic(l4s_fwd::afpacket::monotonic_now().as_nanos())
    }
    /// `CLOCK_MONOTONIC` at time 0, ns (the forwarder's records use that clock).
    pub fn mono0(&self) -> u64 {
        self.mono0
    }
    /// The run time of a `CLOCK_MONOTONIC` reading (0 before the start).
    pub fn at_monotonic(&self, ns: u64) -> Time {
        Time(ns.saturating_sub(self.mono0))
    }
    /// Sleep until `t` (or until `stop` is set; checked every 50 ms).
    pub fn sleep_until(&self, t: Time, stop: &AtomicBool) {
        loop {
            let now = self.now();
            if now >= t || stop.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_nanos(t.since(now).as_nanos().min(50_000_000)));
        }
    }
}

/// What every endpoint thread of a flow knows.
#[derive(Clone, Debug)]
pub struct FlowCtx {
    pub index: u32,
    pub name: String,
    pub clock: Clock,
    /// When the sender starts and stops offering data.
    pub start: Time,
    pub stop: Time,
    /// End of the run: every thread returns by then. A receiver's may move later while it
    /// runs (its grace period for packets still in flight, see [`EndAt`]).
    pub end: EndAt,
    pub stop_flag: Arc<AtomicBool>,
    pub meter: SharedMeter,
    pub ipv6: bool,
    /// Where data packets' sends and arrivals go for `packets.parquet`.
    pub timeline: Option<std::sync::mpsc::Sender<crate::timeline::Event>>,
}

impl FlowCtx {
    /// The run has reached its end, or was stopped.
    pub(crate) fn done(&self, now: Time) -> bool {
        now >= self.end.get() || self.stop_flag.load(Ordering::Relaxed)
    }
}

/// When a flow's thread returns, shared with the run so that it can be moved later.
#[derive(Clone, Debug)]
pub struct EndAt(Arc<std::sync::atomic::AtomicU64>);

impl EndAt {
    pub fn fixed(t: Time) -> EndAt {
        EndAt(Arc::new(std::sync::atomic::AtomicU64::new(t.as_nanos())))
    }
    pub fn get(&self) -> Time {
        Time(self.0.load(Ordering::Relaxed))
    }
    /// Move it to `t` (every clone sees it).
    pub fn set(&self, t: Time) {
        self.0.store(t.as_nanos(), Ordering::Relaxed);
    }
}

pub use l4s_fwd::afpacket::precise_timers;

/// Wait until `fd` is readable (or writable with `write`) or `timeout` passes.
pub fn wait_fd(fd: RawFd, write: bool, timeout: Dur) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd,
        events: if write { libc::POLLOUT } else { libc::POLLIN },
        revents: 0,
    };
    Ok(poll(std::slice::from_mut(&mut p), timeout)? > 0)
}

/// Wait until one of `fds` is ready or `timeout` passes: how many are ready (0 when a
/// signal cut the wait short).
pub(crate) fn poll(fds: &mut [libc::pollfd], timeout: Dur) -> io::Result<usize> {
    let ns = timeout.as_nanos();
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    match sys::ppoll(fds, &ts) {
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
        r => r,
    }
}

/// A non-blocking call that found nothing to do (or a signal that cut it short): try again
/// after the next wait.
pub(crate) fn would_block(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// A receive on a UDP socket that found no datagram: [`would_block`], or the ICMP port
/// unreachable that an earlier send drew, which Linux reports on the socket's next call
/// (RFC 1122 §4.1.3.3); the peer's socket may not be open yet, or be closed already.
pub(crate) fn no_datagram(e: &io::Error) -> bool {
    would_block(e) || e.kind() == io::ErrorKind::ConnectionRefused
}

/// Longest wait of an endpoint thread between checks of the stop flag and the flow's
/// times, and the interval of a sender's statistics reports.
pub(crate) const TICK: Dur = Dur::from_millis(10);

/// The sender side of a datagram flow.
pub enum UdpSender {
    Prague(Box<UdpPragueSender>),
    Probe(Box<ProbeSender>),
}

/// The receiver side of a datagram flow.
pub enum UdpReceiver {
    Prague(Box<UdpPragueReceiver>),
    Probe(Box<ProbeReceiver>),
}

/// A datagram of this flow: `(send time, seq32 of a data packet, body)`.
fn decode_body(ctx: &FlowCtx, b: &[u8]) -> Option<(Time, Option<u32>, Body)> {
    let d = wire::decode(b).filter(|d| d.flow == ctx.index)?;
    Some((d.sent, wire::data_prefix(b).map(|p| p.2), d.body))
}

/// Encode a body into a payload of the size the endpoint asked for.
fn encode_body(ctx: &FlowCtx, t: &Transmit<Body>, sent: Time, out: &mut [u8]) -> Option<usize> {
    let len = wire::payload_len(t.size, ctx.ipv6).min(out.len());
    let d = Datagram {
        flow: ctx.index,
        sent,
        body: t.header,
    };
    wire::encode(&d, &mut out[..len]).then_some(len)
}

macro_rules! each {
    ($ty:ident, $self:expr, $e:ident => $body:expr) => {
        match $self {
            $ty::Prague($e) => $body,
            $ty::Probe($e) => $body,
        }
    };
}

impl LiveEndpoint for UdpSender {
    type Header = Body;
    fn handle_packet(&mut self, now: Time, h: &Body, size: u32, ecn: Ecn) {
        if let (UdpSender::Prague(e), Body::Prague(h)) = (self, h) {
            e.handle_packet(now, h, size, ecn);
        }
    }
    fn poll_transmit(&mut self, now: Time) -> Option<Transmit<Body>> {
        match self {
            UdpSender::Prague(e) => e.poll_transmit(now).map(|t| Transmit {
                header: Body::Prague(t.header),
                size: t.size,
                ecn: t.ecn,
            }),
            UdpSender::Probe(e) => e.poll_transmit(now).map(|t| Transmit {
                header: Body::Probe(t.header),
                size: t.size,
                ecn: t.ecn,
            }),
        }
    }
    fn poll_timeout(&self) -> Option<Time> {
        each!(UdpSender, self, e => e.poll_timeout())
    }
    fn handle_timeout(&mut self, now: Time) {
        each!(UdpSender, self, e => e.handle_timeout(now))
    }
    fn close(&mut self, now: Time) {
        each!(UdpSender, self, e => e.close(now))
    }
    fn decode(&self, ctx: &FlowCtx, b: &[u8]) -> Option<(Time, Option<u32>, Body)> {
        // Feedback only: a sender's own kind of data is never its input.
        decode_body(ctx, b).map(|(sent, _, body)| (sent, None, body))
    }
    fn encode(
        &mut self,
        ctx: &FlowCtx,
        t: &Transmit<Body>,
        sent: Time,
        out: &mut [u8],
    ) -> Option<(usize, Option<u64>)> {
        let len = encode_body(ctx, t, sent, out)?;
        let seq = match t.header {
            Body::Probe(h) => h.seq,
            Body::Prague(l4s_transport::udp_prague::UdpPragueHeader::Data { seq, .. }) => seq as u32 as u64,
            Body::Prague(_) => return Some((len, None)),
        };
        Some((len, Some(seq)))
    }
    fn measure(&mut self, m: &mut LiveFlow, at: Time, _sent: Time, _frame: u32, _ecn: Ecn, _h: &Body) {
        if let Some(r) = each!(UdpSender, self, e => e.take_rtt_sample()) {
            m.on_rtt(at, r);
        }
    }
    fn report(&self, m: &mut LiveFlow, now: Time) {
        m.on_sender_stats(now, each!(UdpSender, self, e => e.stats()));
    }
}

impl LiveEndpoint for UdpReceiver {
    type Header = Body;
    fn handle_packet(&mut self, now: Time, h: &Body, size: u32, ecn: Ecn) {
        match (self, h) {
            (UdpReceiver::Prague(e), Body::Prague(h)) => e.handle_packet(now, h, size, ecn),
            (UdpReceiver::Probe(e), Body::Probe(h)) => e.handle_packet(now, h, size, ecn),
            _ => {}
        }
    }
    fn poll_transmit(&mut self, now: Time) -> Option<Transmit<Body>> {
        match self {
            UdpReceiver::Prague(e) => e.poll_transmit(now).map(|t| Transmit {
                header: Body::Prague(t.header),
                size: t.size,
                ecn: t.ecn,
            }),
            UdpReceiver::Probe(_) => None,
        }
    }
    fn poll_timeout(&self) -> Option<Time> {
        match self {
            UdpReceiver::Prague(e) => e.poll_timeout(),
            UdpReceiver::Probe(_) => None,
        }
    }
    fn handle_timeout(&mut self, now: Time) {
        if let UdpReceiver::Prague(e) = self {
            e.handle_timeout(now);
        }
    }
    fn close(&mut self, _now: Time) {}
    fn decode(&self, ctx: &FlowCtx, b: &[u8]) -> Option<(Time, Option<u32>, Body)> {
        // Data of this receiver's kind only.
        decode_body(ctx, b).filter(|(_, _, body)| {
            matches!(
                (self, body),
                (UdpReceiver::Prague(_), Body::Prague(_)) | (UdpReceiver::Probe(_), Body::Probe(_))
            )
        })
    }
    fn encode(
        &mut self,
        ctx: &FlowCtx,
        t: &Transmit<Body>,
        sent: Time,
        out: &mut [u8],
    ) -> Option<(usize, Option<u64>)> {
        encode_body(ctx, t, sent, out).map(|len| (len, None))
    }
    fn measure(&mut self, m: &mut LiveFlow, at: Time, sent: Time, frame: u32, ecn: Ecn, _h: &Body) {
        m.on_arrival(at, sent, frame, ecn);
    }
}

/// Run a datagram sender from `ctx.start` to the end of the run (see [`crate::datagram`]).
pub fn run_udp_sender(ctx: &FlowCtx, sock: EcnUdpSocket, dst: SocketAddr, ep: UdpSender) {
    crate::datagram::run_sender(ctx, sock, dst, ep);
}

/// Run a datagram receiver until the end of the run (see [`crate::datagram`]).
pub fn run_udp_receiver(ctx: &FlowCtx, sock: EcnUdpSocket, ep: UdpReceiver) {
    crate::datagram::run_receiver(ctx, sock, ep);
}

// ------------------------------------------------------------------------------------------
// Kernel TCP
// ------------------------------------------------------------------------------------------

/// The congestion controls this host's kernel offers
/// (`net.ipv4.tcp_available_congestion_control`).
pub fn available_congestion_controls() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Fields of the kernel's `struct tcp_info` the testbed uses, read by offset from what
/// `getsockopt(TCP_INFO)` returned (older kernels return a shorter struct; missing fields
/// are `None`/0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpInfo {
    pub ca_state: u8,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    /// Smoothed RTT, µs.
    pub rtt_us: u32,
    pub snd_ssthresh: u32,
    /// Congestion window, segments.
    pub snd_cwnd: u32,
    pub total_retrans: u32,
    /// Bytes/s.
    pub pacing_rate: u64,
    pub bytes_acked: u64,
    pub data_segs_out: u32,
    pub unacked: u32,
    /// Packets delivered with CE marks (the sender's view from ECE/AccECN feedback).
    pub delivered_ce: Option<u32>,
    /// `TCPI_OPT_ECN` is set: ECN was negotiated on this connection.
    pub ecn_negotiated: bool,
}

/// `TCPI_OPT_ECN` in `tcpi_options`.
const TCPI_OPT_ECN: u8 = 8;

/// Read `TCP_INFO`.
pub fn tcp_info(fd: BorrowedFd<'_>) -> io::Result<TcpInfo> {
    let mut b = [0u8; 256];
    let n = sys::tcp_info(fd, &mut b)?;
    let u32_at = |o: usize| (o + 4 <= n).then(|| u32::from_ne_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]));
    let u64_at = |o: usize| {
        (o + 8 <= n).then(|| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[o..o + 8]);
            u64::from_ne_bytes(x)
        })
    };
    // Offsets of include/uapi/linux/tcp.h `struct tcp_info`.
    Ok(TcpInfo {
        ca_state: if n > 1 { b[1] } else { 0 },
        ecn_negotiated: n > 5 && b[5] & TCPI_OPT_ECN != 0,
        snd_mss: u32_at(16).unwrap_or(0),
        rcv_mss: u32_at(20).unwrap_or(0),
        unacked: u32_at(24).unwrap_or(0),
        rtt_us: u32_at(68).unwrap_or(0),
        snd_ssthresh: u32_at(76).unwrap_or(0),
        snd_cwnd: u32_at(80).unwrap_or(0),
        total_retrans: u32_at(100).unwrap_or(0),
        pacing_rate: u64_at(104).unwrap_or(0),
        bytes_acked: u64_at(120).unwrap_or(0),
        data_segs_out: u32_at(156).unwrap_or(0),
        delivered_ce: u32_at(196),
    })
}

/// Linux `TCP_CA_CWR`, `TCP_CA_Recovery` and `TCP_CA_Loss`: the window was reduced.
fn reducing(ca_state: u8) -> bool {
    (2..=4).contains(&ca_state)
}

/// The bytes of the TCP timestamps option (RFC 7323 §3, padded), which Linux negotiates by
/// default and takes off every segment's payload.
pub const TIMESTAMPS_OPTION: u32 = 12;

/// The payload of a full segment on the testbed's 1500-byte links with TCP timestamps:
/// 1500 - 20 (IPv4) - 20 (TCP) - [`TIMESTAMPS_OPTION`]. The simulator's default `mss` is
/// this too.
pub const PATH_MSS: u32 = 1500 - 20 - 20 - TIMESTAMPS_OPTION;

/// What a kernel TCP socket takes from the scenario's `sender` table before its handshake
/// ([`prepare_tcp`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpOpts {
    /// The kernel's own pacing (`sender.pacing`).
    pub pacing: bool,
    /// `TCP_MAXSEG`: a smaller segment than the path's (`sender.mss` below [`PATH_MSS`],
    /// plus the [`TIMESTAMPS_OPTION`], which Linux takes off `user_mss`).
    pub maxseg: Option<u32>,
}

impl TcpOpts {
    /// The options of a sender with these settings. An `mss` above the path's cannot be
    /// had on 1500-byte links; `l4s_live::run::untaken_settings` names it.
    pub fn of(cfg: &l4s_transport::tcp::TcpConfig) -> TcpOpts {
        TcpOpts {
            pacing: cfg.pacing,
            maxseg: (cfg.mss < PATH_MSS).then_some(cfg.mss + TIMESTAMPS_OPTION),
        }
    }
}

/// A TCP connection to `dst` with congestion control `cc` and the sender's `opts`
/// ([`prepare_tcp`]), set before the handshake.
pub fn tcp_connect(dst: SocketAddr, cc: &str, opts: TcpOpts, timeout: Dur) -> io::Result<TcpStream> {
    let stream = tcp_connect_start(dst, cc, opts)?;
    let fd = stream.as_raw_fd();
    if !wait_fd(fd, true, timeout)? {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("connecting to {dst} timed out"),
        ));
    }
    if let Some(e) = stream.take_error()? {
        return Err(e);
    }
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// Start a non-blocking connection to `dst` with congestion control `cc` and the sender's
/// `opts` (set before the SYN, [`prepare_tcp`]): the socket becomes writable when the
/// handshake is over (then check `take_error`).
pub fn tcp_connect_start(dst: SocketAddr, cc: &str, opts: TcpOpts) -> io::Result<TcpStream> {
    let fam = if dst.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    let stream = TcpStream::from(sys::socket(fam, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0)?);
    prepare_tcp(stream.as_fd(), cc, opts)?;
    stream.set_nonblocking(true)?;
    if let Err(e) = sys::connect(stream.as_fd(), &dst) {
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    Ok(stream)
}

/// Give a TCP socket what the scenario's sender asks for, as the simulator's TCP has it
/// (a listener's is inherited by the connections it accepts):
///
/// * congestion control `cc` (`TCP_CONGESTION`);
/// * with `pacing` (the sender's `pacing`, on by default), the kernel's own pacing at the
///   rate its congestion control sets (`tcp_update_pacing_rate`, or the controller's, as
///   Prague's), as the simulator paces: `SO_MAX_PACING_RATE` with no cap
///   (`sys::set_max_pacing_rate`). Linux paces a controller that asks for it (Prague,
///   BBR) on its own, and any other (CUBIC, Reno, DCTCP) only behind an `fq` qdisc; the
///   testbed's hosts have none, so without this a CUBIC sender would leave in bursts that
///   the simulator's does not. Without `pacing` a controller that paces itself still does;
/// * with `maxseg`, segments of that size less the timestamps option (`TCP_MAXSEG`,
///   `sys::set_tcp_maxseg`), as the simulator's `mss`.
pub fn prepare_tcp(fd: BorrowedFd<'_>, cc: &str, opts: TcpOpts) -> io::Result<()> {
    sys::set_tcp_congestion(fd, cc).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "cannot use congestion control {cc:?} ({e}); this kernel offers: {}",
                available_congestion_controls().join(", ")
            ),
        )
    })?;
    if opts.pacing {
        sys::set_max_pacing_rate(fd, sys::PACE_UNCAPPED)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot turn on TCP pacing (SO_MAX_PACING_RATE): {e}")))?;
    }
    if let Some(m) = opts.maxseg {
        sys::set_tcp_maxseg(fd, m).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot set the segment size to {m} (TCP_MAXSEG): {e}"),
            )
        })?;
    }
    Ok(())
}

/// What the TCP sender knows of its connection, as [`EndpointStats`].
fn tcp_stats(i: &TcpInfo, written: u64, congestion_events: u64, ecn: bool, finished: bool) -> EndpointStats {
    EndpointStats {
        sent_packets: i.data_segs_out as u64,
        retransmits: i.total_retrans as u64,
        lost_packets: i.total_retrans as u64,
        // tcpi_bytes_acked counts the SYN and FIN too.
        delivered_bytes: i.bytes_acked.saturating_sub(1).min(written),
        ce_packets: i.delivered_ce.unwrap_or(0) as u64,
        cwnd: i.snd_cwnd as u64 * i.snd_mss as u64,
        srtt: Dur::from_micros(i.rtt_us as u64),
        pacing_rate: (i.pacing_rate > 0 && i.pacing_rate < u64::MAX / 8)
            .then(|| l4s_core::Rate::bps(i.pacing_rate.saturating_mul(8))),
        alpha: None,
        ecn_mode: if ecn { "classic" } else { "none" },
        congestion_events,
        finished,
        ..EndpointStats::default()
    }
}

/// Run a kernel TCP sender: connect at the flow's start (congestion control `cc`, the
/// sender's `opts`, [`prepare_tcp`]), write until `bytes` are sent or the flow stops,
/// sampling `TCP_INFO` every 10 ms.
pub fn run_tcp_sender(ctx: &FlowCtx, dst: SocketAddr, cc: &str, opts: TcpOpts, bytes: Option<u64>, nominal: Ecn) {
    precise_timers();
    ctx.clock.sleep_until(ctx.start, &ctx.stop_flag);
    if ctx.done(ctx.clock.now()) {
        return;
    }
    let mut s = match tcp_connect(dst, cc, opts, Dur::from_secs(3)) {
        Ok(s) => s,
        Err(e) => {
            ctx.meter.fail(format!("flow {}: connecting to {dst}: {e}", ctx.name));
            return;
        }
    };
    let fd = s.as_raw_fd();
    if let Err(e) = s.set_nonblocking(true) {
        ctx.meter.fail(format!("flow {}: {e}", ctx.name));
        return;
    }
    let chunk = vec![0u8; 128 * 1024];
    let mut written = 0u64;
    let mut last_sample = Time::ZERO;
    let mut events = 0u64;
    let mut prev_reducing = false;
    let mut shut = false;
    ctx.meter.lock().first_ecn = Some(nominal);
    loop {
        let now = ctx.clock.now();
        if ctx.done(now) {
            break;
        }
        let want = match bytes {
            Some(b) => b.saturating_sub(written),
            None => u64::MAX,
        };
        if now >= ctx.stop || want == 0 {
            if !shut {
                let _ = s.shutdown(std::net::Shutdown::Write);
                shut = true;
            }
        } else {
            match s.write(&chunk[..(want.min(chunk.len() as u64)) as usize]) {
                Ok(n) => written += n as u64,
                Err(e) if would_block(&e) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    ctx.meter.fail(format!("flow {}: sending: {e}", ctx.name));
                    return;
                }
            }
        }
        let now = ctx.clock.now();
        if now.since(last_sample) >= TICK {
            last_sample = now;
            if let Ok(i) = tcp_info(s.as_fd()) {
                let red = reducing(i.ca_state);
                if red && !prev_reducing {
                    events += 1;
                }
                prev_reducing = red;
                let finished = shut && i.unacked == 0;
                let mut m = ctx.meter.lock();
                if i.rtt_us > 0 && !shut {
                    m.on_rtt(now, Dur::from_micros(i.rtt_us as u64));
                }
                m.on_sender_stats(now, tcp_stats(&i, written, events, i.ecn_negotiated, finished));
                if finished {
                    break;
                }
            }
        }
        let wait = TICK.min(ctx.end.get().since(now));
        if !shut {
            let _ = wait_fd(fd, true, wait);
        } else {
            std::thread::sleep(std::time::Duration::from_nanos(wait.as_nanos()));
        }
    }
    if let Ok(i) = tcp_info(s.as_fd()) {
        let now = ctx.clock.now();
        ctx.meter.lock().on_sender_stats(
            now,
            tcp_stats(&i, written, events, i.ecn_negotiated, shut && i.unacked == 0),
        );
    }
}

/// Run a kernel TCP receiver on `listener` until the end of the run: accept one
/// connection and read everything.
pub fn run_tcp_receiver(ctx: &FlowCtx, listener: TcpListener) {
    if let Err(e) = listener.set_nonblocking(true) {
        ctx.meter.fail(format!("flow {}: {e}", ctx.name));
        return;
    }
    let mut conn = None;
    while conn.is_none() {
        let now = ctx.clock.now();
        if ctx.done(now) {
            return;
        }
        match listener.accept() {
            Ok((c, _)) => conn = Some(c),
            Err(e) if would_block(&e) => {
                let _ = wait_fd(
                    listener.as_raw_fd(),
                    false,
                    Dur::from_millis(50).min(ctx.end.get().since(now)),
                );
            }
            Err(e) => {
                ctx.meter.fail(format!("flow {}: accepting: {e}", ctx.name));
                return;
            }
        }
    }
    let Some(mut c) = conn else { return };
    let _ = c.set_nonblocking(true);
    let fd = c.as_raw_fd();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let now = ctx.clock.now();
        if ctx.done(now) {
            break;
        }
        match c.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let now = ctx.clock.now();
                ctx.meter.lock().on_stream_bytes(now, n as u64);
            }
            Err(e) if would_block(&e) || e.kind() == io::ErrorKind::Interrupted => {
                let _ = wait_fd(fd, false, Dur::from_millis(50).min(ctx.end.get().since(now)));
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => break,
            Err(e) => {
                ctx.meter.fail(format!("flow {}: receiving: {e}", ctx.name));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::{flow_meter, Window};

    fn ctx(index: u32, secs: u64) -> FlowCtx {
        let clock = Clock::start();
        let end = Time::from_secs(secs);
        FlowCtx {
            index,
            name: format!("f{index}"),
            clock,
            start: Time::ZERO,
            stop: end,
            end: EndAt::fixed(end),
            stop_flag: Arc::new(AtomicBool::new(false)),
            meter: SharedMeter::new(flow_meter(Window { start: Time::ZERO, end }, None, true)),
            ipv6: false,
            timeline: None,
        }
    }

    #[test]
    fn probe_flow_on_loopback() {
        let c = ctx(3, 1);
        let rx = EcnUdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let dst = rx.local_addr().unwrap();
        let tx = EcnUdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let cfg = l4s_transport::probe::ProbeConfig {
            pps: 200,
            size: 200,
            ecn: Ecn::Ect1,
            ..Default::default()
        };
        let c2 = c.clone();
        let h =
            std::thread::spawn(move || run_udp_receiver(&c2, rx, UdpReceiver::Probe(Box::new(ProbeReceiver::new()))));
        run_udp_sender(
            &c,
            tx,
            dst,
            UdpSender::Probe(Box::new(ProbeSender::new(cfg, c.clock.now()))),
        );
        h.join().unwrap();
        let m = c.meter.lock();
        assert!(m.error.is_none(), "{:?}", m.error);
        // 200 packets/s for 1 s: 200 (±2 at the edges), all ECT(1), delays far below 5 ms.
        assert!((198..=201).contains(&m.sent), "sent {}", m.sent);
        assert!(m.received + 2 >= m.sent, "received {} of {}", m.received, m.sent);
        assert_eq!(m.first_ecn, Some(Ecn::Ect1));
        assert_eq!(m.ce, 0);
        assert!(
            m.owd.quantile_ns(0.5) < 5_000_000,
            "median OWD {} ns",
            m.owd.quantile_ns(0.5)
        );
        assert_eq!(m.received_bytes, m.received * 200);
    }

    #[test]
    fn udp_prague_on_loopback_fills_its_max_rate() {
        let c = ctx(1, 2);
        let rx = EcnUdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let dst = rx.local_addr().unwrap();
        let tx = EcnUdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let cfg = l4s_transport::udp_prague::UdpPragueConfig {
            max_rate: l4s_core::Rate::mbps(20),
            ..Default::default()
        };
        let c2 = c.clone();
        let h = std::thread::spawn(move || {
            run_udp_receiver(
                &c2,
                rx,
                UdpReceiver::Prague(Box::new(UdpPragueReceiver::new(Default::default()))),
            )
        });
        run_udp_sender(
            &c,
            tx,
            dst,
            UdpSender::Prague(Box::new(UdpPragueSender::new(cfg, c.clock.now()))),
        );
        h.join().unwrap();
        let m = c.meter.lock();
        assert!(m.error.is_none(), "{:?}", m.error);
        let rate = m.received_bytes as f64 * 8.0 / 2.0;
        // No bottleneck but its own max_rate: it ramps up to 20 Mbit/s within the 2 s.
        assert!(rate > 5e6 && rate < 21e6, "rate {rate}");
        assert!(m.rtt.count() > 100, "RTT samples {}", m.rtt.count());
        assert!(m.sender.ecn_validation == l4s_transport::EcnValidation::Capable);
        assert_eq!(m.first_ecn, Some(Ecn::Ect1));
    }

    /// The options of a sender that only says whether it paces.
    fn paced(pacing: bool) -> TcpOpts {
        TcpOpts { pacing, maxseg: None }
    }

    #[test]
    fn kernel_tcp_sends_segments_of_the_senders_mss() {
        // The simulator's `mss` is a full segment's payload; with timestamps the kernel's
        // is TCP_MAXSEG less 12. On loopback (a 64 KB path MTU) only the option bounds it,
        // on a connection and on what a listener accepts.
        let mut cfg = l4s_transport::tcp::TcpConfig::default();
        assert_eq!(TcpOpts::of(&cfg).maxseg, None, "the path's own 1448");
        cfg.mss = 1000;
        let opts = TcpOpts::of(&cfg);
        assert_eq!(
            opts,
            TcpOpts {
                pacing: true,
                maxseg: Some(1012)
            }
        );
        cfg.mss = 8948;
        assert_eq!(TcpOpts::of(&cfg).maxseg, None, "above the path's: not to be had");
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        prepare_tcp(l.as_fd(), "cubic", opts).unwrap();
        let mut c = tcp_connect(l.local_addr().unwrap(), "cubic", opts, Dur::from_secs(3)).unwrap();
        let (mut a, _) = l.accept().unwrap();
        c.write_all(&[0u8; 100_000]).unwrap();
        a.write_all(&[0u8; 100_000]).unwrap();
        for (who, fd) in [("connection", c.as_fd()), ("accepted", a.as_fd())] {
            assert_eq!(tcp_info(fd).unwrap().snd_mss, 1000, "{who}");
        }
        // Without the option loopback's segments are far larger.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = tcp_connect(l.local_addr().unwrap(), "cubic", paced(true), Dur::from_secs(3)).unwrap();
        assert!(tcp_info(c.as_fd()).unwrap().snd_mss > 30_000);
    }

    /// Bytes a CUBIC connection on loopback delivers in its first `secs`, its socket
    /// prepared with `pacing` and, if given, capped at `cap` bytes per second.
    fn loopback_transfer(pacing: bool, cap: Option<u64>, secs: f64) -> u64 {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let dst = l.local_addr().unwrap();
        let s = tcp_connect(dst, "cubic", paced(pacing), Dur::from_secs(3)).unwrap();
        if let Some(cap) = cap {
            sys::set_max_pacing_rate(s.as_fd(), cap).unwrap();
        }
        let (mut c, _) = l.accept().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs);
        let tx = std::thread::spawn(move || {
            let mut s = s;
            let chunk = vec![0u8; 64 * 1024];
            while std::time::Instant::now() < deadline {
                if s.write_all(&chunk).is_err() {
                    break;
                }
            }
        });
        let mut buf = vec![0u8; 1 << 20];
        let mut n = 0u64;
        loop {
            match c.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(k) if std::time::Instant::now() <= deadline => n += k as u64,
                Ok(_) => {}
            }
        }
        tx.join().unwrap();
        n
    }

    #[test]
    fn kernel_tcp_is_paced_as_the_sender_asks() {
        // The option as the scenario's `pacing` leaves it, on a connection and a listener
        // (inherited by what it accepts).
        for pacing in [true, false] {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            prepare_tcp(l.as_fd(), "cubic", paced(pacing)).unwrap();
            let c = tcp_connect(l.local_addr().unwrap(), "reno", paced(pacing), Dur::from_secs(3)).unwrap();
            let (a, _) = l.accept().unwrap();
            let want = if pacing { sys::PACE_UNCAPPED } else { u64::MAX };
            for fd in [c.as_fd(), a.as_fd(), l.as_fd()] {
                assert_eq!(sys::max_pacing_rate(fd).unwrap(), want, "pacing {pacing}");
            }
        }
        // This kernel paces TCP itself once the option is set, with no fq qdisc: capped at
        // 4 MB/s, CUBIC on loopback (64 KB segments) moves no more than the cap allows
        // after its first 10 segments, which leave unpaced; uncapped, pacing does not hold
        // it back (loopback moves hundreds of MB/s, and far more than the cap under load).
        let cap = 4_000_000u64;
        let allowed = cap as f64 + 12.0 * 65_536.0;
        // Bytes read after the second are not counted, so a host that held the reader back
        // shows fewer: measured again then (never more than the cap allows).
        let mut paced = 0;
        for _ in 0..3 {
            paced = loopback_transfer(true, Some(cap), 1.0);
            assert!(paced as f64 <= allowed, "{paced} bytes in 1 s at a cap of {cap} B/s");
            if paced as f64 >= 0.5 * cap as f64 {
                break;
            }
        }
        assert!(
            paced as f64 >= 0.5 * cap as f64,
            "{paced} bytes in 1 s at a cap of {cap} B/s, three times"
        );
        let free = loopback_transfer(true, None, 0.5);
        assert!(free as f64 > 1.5 * cap as f64, "{free} bytes in 0.5 s, uncapped");
    }

    #[test]
    fn tcp_flow_on_loopback_and_missing_cc() {
        let c = ctx(2, 1);
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let dst = l.local_addr().unwrap();
        let c2 = c.clone();
        let h = std::thread::spawn(move || run_tcp_receiver(&c2, l));
        run_tcp_sender(&c, dst, "cubic", paced(true), Some(5_000_000), Ecn::NotEct);
        h.join().unwrap();
        let m = c.meter.lock();
        assert!(m.error.is_none(), "{:?}", m.error);
        assert_eq!(m.goodput_bytes, 5_000_000);
        assert_eq!(m.sender.delivered_bytes, 5_000_000);
        assert!(m.sender.finished);
        drop(m);
        let err = tcp_connect(dst, "no-such-cc", paced(true), Dur::from_secs(1))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no-such-cc") && err.contains("cubic"), "{err}");
    }
}
