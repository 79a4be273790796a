//! Application flows (`bulk`, `sync`, `request-response`, `web`, `query`) on kernel
//! sockets, with the schedule semantics of [`l4s_apps::AppConfig`] and the completions of
//! [`l4s_apps::Completion`] (the simulator runs the same kinds over its TCP model).
//!
//! The schedule is not implemented here: the client runs the app's
//! [`l4s_apps::Schedule`] and the sync source its [`l4s_apps::ChunkSource`], the sans-IO
//! components the simulator's endpoints run too (when each instance starts, what it asks
//! for on which connections, the seeded pauses, query timeouts and retries, what counts as
//! a completion). This module only moves their bytes over kernel TCP and UDP.
//!
//! Roles, as in the simulator: the flow's **source** holds the data (the server of a
//! download); the **destination** consumes it and runs the schedule.
//!
//! * bulk, request-response, web: a TCP server at the source (`TCP_CONGESTION` set on the
//!   listener, which the connections it accepts inherit) answers requests; a client at the
//!   destination opens the connections (non-blocking, the flow's congestion control) and
//!   issues requests: bulk = one new connection per transfer asking for `bytes`;
//!   request-response = `request` bytes answered by `response` bytes over one persistent
//!   connection (pipelined in open loop) or a new one per request; web = a page of
//!   objects over `connections` new parallel connections, objects dealt round robin and
//!   fetched in order on each.
//! * sync: the source connects to the destination and sends `count` chunks, each offered
//!   `pause` (or a uniform draw in `[pause, pause_max]`) after the previous one was
//!   acknowledged (the socket's send queue, `SIOCOUTQ`, is empty).
//! * query: UDP request/reply with the app's codepoint, retried on an RFC 6298 timeout
//!   ([`l4s_apps::DEFAULT_TIMEOUT`] first, then adaptive, doubled per retry).
//!
//! A completion runs from the start of the instance (before the connection is opened
//! when the instance opens one, so a new connection costs the handshake's round trip) to
//! its last byte read by the client.
//!
//! Where kernel sockets make the live run differ from the simulator's (each is said again
//! where it happens):
//! * requests travel in the connection's byte stream, so kernel TCP repairs their loss and
//!   the client never re-sends one (completions of TCP units report 0 retries; queries
//!   are retried as in the simulator);
//! * the sync source learns that a chunk was acknowledged from an empty send queue
//!   (`SIOCOUTQ`, polled every millisecond), and frames each chunk with a header that
//!   carries its offer time (the simulator marks the segment instead);
//! * at the flow's stop the client starts no more instances (see [`run_app_client`]).
//!
//! Requests on the wire (client → server), [`REQUEST_HEADER`] bytes then zero padding to
//! the configured request size:
//! ```text
//! 0   2       3       4           8                16
//! | "AQ" | ver=1 | flags | len u32 | response u64 | padding to len
//! ```
//! flags: bit 0 = last request on the connection (the server closes after answering).
//! The response is `response` bytes of zeros. Sync chunks (source → destination) are
//! preceded by `"AC", ver, 0, 0 u32, offered_ns u64`. Queries and replies are
//! `"AU", ver, type (1 query, 2 reply), id u32, bytes u32, 0 u32`, padded to the request
//! size (queries) or the reply size (replies). Servers close a connection that sends
//! anything else; nothing here panics on what arrives.

use crate::endpoints::{
    no_datagram, poll, precise_timers, tcp_connect_start, tcp_info, would_block, FlowCtx, TcpOpts, TICK,
};
use crate::sys;
use crate::udp::EcnUdpSocket;
use l4s_apps::schedule::{next_object, ChunkSource, Instance, Schedule, Unit};
use l4s_apps::{AppConfig, AppKind, Completion};
use l4s_core::{Dur, Ecn, Rng, Time};
use l4s_transport::EndpointStats;
use std::collections::{BTreeMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};

pub const VERSION: u8 = 1;
/// Bytes of a request's header (the smallest request).
pub const REQUEST_HEADER: usize = 16;
/// Bytes of a sync chunk's header.
pub const CHUNK_HEADER: usize = 16;
/// Bytes of a query or reply header.
pub const QUERY_HEADER: usize = 16;
const QUERY: u8 = 1;
const REPLY: u8 = 2;

/// A request for `response` bytes, padded to `len` bytes (at least [`REQUEST_HEADER`]).
pub fn encode_request(len: usize, response: u64, close: bool) -> Vec<u8> {
    let len = len.clamp(REQUEST_HEADER, u32::MAX as usize);
    let mut b = vec![0u8; len];
    b[0..2].copy_from_slice(b"AQ");
    b[2] = VERSION;
    b[3] = close as u8;
    b[4..8].copy_from_slice(&(len as u32).to_be_bytes());
    b[8..16].copy_from_slice(&response.to_be_bytes());
    b
}

/// A request header: `(total length, response bytes, close)`, or why it is not one.
pub fn decode_request(b: &[u8; REQUEST_HEADER]) -> Result<(u32, u64, bool), String> {
    if &b[0..2] != b"AQ" || b[2] != VERSION || b[3] > 1 {
        return Err(format!("not a request header: {:02x?}", &b[..4]));
    }
    let len = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
    if (len as usize) < REQUEST_HEADER {
        return Err(format!(
            "request length {len} below its header's {REQUEST_HEADER} bytes"
        ));
    }
    let mut r = [0u8; 8];
    r.copy_from_slice(&b[8..16]);
    Ok((len, u64::from_be_bytes(r), b[3] == 1))
}

/// A query or reply datagram: header then zero padding to `len`.
pub fn encode_query(kind_reply: bool, id: u32, bytes: u32, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len.max(QUERY_HEADER)];
    b[0..2].copy_from_slice(b"AU");
    b[2] = VERSION;
    b[3] = if kind_reply { REPLY } else { QUERY };
    b[4..8].copy_from_slice(&id.to_be_bytes());
    b[8..12].copy_from_slice(&bytes.to_be_bytes());
    b
}

/// `(is_reply, id, bytes)` of a query or reply datagram.
pub fn decode_query(b: &[u8]) -> Option<(bool, u32, u32)> {
    if b.len() < QUERY_HEADER || &b[0..2] != b"AU" || b[2] != VERSION || !matches!(b[3], QUERY | REPLY) {
        return None;
    }
    Some((
        b[3] == REPLY,
        u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        u32::from_be_bytes([b[8], b[9], b[10], b[11]]),
    ))
}

fn pfd(fd: RawFd, write: bool) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN | if write { libc::POLLOUT } else { 0 },
        revents: 0,
    }
}

/// Bytes in a TCP socket's send queue not yet acknowledged (`SIOCOUTQ`).
fn unacked_bytes(fd: BorrowedFd<'_>) -> io::Result<u64> {
    Ok(sys::send_queue_len(fd)?.max(0) as u64)
}

static ZEROS: [u8; 64 * 1024] = [0u8; 64 * 1024];

/// Aggregated `TCP_INFO` of the data sender's connections, reported as the flow's
/// sender statistics.
#[derive(Default)]
struct SenderInfo {
    closed_retrans: u64,
    closed_segs: u64,
    ecn: bool,
}

impl SenderInfo {
    fn report(&mut self, ctx: &FlowCtx, now: Time, fds: &[BorrowedFd<'_>], sample_rtt: bool) {
        let (mut retrans, mut segs, mut cwnd, mut srtt) = (self.closed_retrans, self.closed_segs, 0u64, Dur::ZERO);
        for &fd in fds {
            if let Ok(i) = tcp_info(fd) {
                retrans += i.total_retrans as u64;
                segs += i.data_segs_out as u64;
                self.ecn |= i.ecn_negotiated;
                if i.snd_cwnd as u64 * i.snd_mss as u64 > cwnd {
                    cwnd = i.snd_cwnd as u64 * i.snd_mss as u64;
                    srtt = Dur::from_micros(i.rtt_us as u64);
                }
            }
        }
        let mut m = ctx.meter.lock();
        if sample_rtt && !srtt.is_zero() {
            m.on_rtt(now, srtt);
        }
        m.on_sender_stats(
            now,
            EndpointStats {
                sent_packets: segs,
                retransmits: retrans,
                lost_packets: retrans,
                cwnd,
                srtt,
                ecn_mode: if self.ecn { "classic" } else { "none" },
                ..EndpointStats::default()
            },
        );
    }
    fn closing(&mut self, fd: BorrowedFd<'_>) {
        if let Ok(i) = tcp_info(fd) {
            self.closed_retrans += i.total_retrans as u64;
            self.closed_segs += i.data_segs_out as u64;
            self.ecn |= i.ecn_negotiated;
        }
    }
}

// ------------------------------------------------------------------------------------------
// Server (the source of bulk, request-response and web; the reflector of queries)
// ------------------------------------------------------------------------------------------

struct ServerConn {
    s: TcpStream,
    hdr: Vec<u8>,
    /// Padding of the current request still to read.
    skip: u64,
    /// Responses to write: bytes left, close after.
    out: VecDeque<(u64, bool)>,
    shut: bool,
}

/// What a server listens on.
pub enum Listen {
    Tcp(TcpListener),
    Udp(EcnUdpSocket),
}

/// Run the server of an application flow at its source until `ctx.end`: answer every
/// request on every connection, or every query, with zeros of the size asked for, until
/// the flow's stop (`ctx.stop`). From then on it sends nothing new, as the simulator's
/// source, closed at the stop, ignores requests and queries and sends no data it had not
/// sent yet; what kernel TCP already holds in a socket's send buffer still goes out (as for
/// a `tcp` flow's sender).
pub fn run_app_server(ctx: &FlowCtx, cfg: &AppConfig, listen: Listen) {
    precise_timers();
    match listen {
        Listen::Udp(sock) => run_query_server(ctx, cfg, sock),
        Listen::Tcp(l) => run_tcp_server(ctx, cfg, l),
    }
}

fn run_query_server(ctx: &FlowCtx, cfg: &AppConfig, sock: EcnUdpSocket) {
    if let Err(e) = sock.set_nonblocking(true) {
        ctx.meter.fail(format!("flow {}: {e}", ctx.name));
        return;
    }
    let ecn = cfg.nominal_ecn();
    ctx.meter.lock().first_ecn = Some(ecn);
    let mut buf = vec![0u8; 65_536];
    loop {
        let now = ctx.clock.now();
        if ctx.done(now) {
            return;
        }
        loop {
            let got = match sock.recv_from(&mut buf) {
                Ok(g) => g,
                Err(e) if no_datagram(&e) => break,
                Err(e) => {
                    ctx.meter.fail(format!("flow {}: receiving queries: {e}", ctx.name));
                    return;
                }
            };
            let Some((false, id, bytes)) = decode_query(&buf[..got.len]) else {
                continue;
            };
            if ctx.clock.now() >= ctx.stop {
                continue;
            }
            let len = (bytes as u64).min(l4s_apps::config::MAX_UDP_PAYLOAD) as usize;
            let reply = encode_query(true, id, bytes, len);
            let sent = ctx.clock.now();
            ctx.meter.lock().on_send(sent, ecn);
            let _ = sock.send_to(&reply, got.from, ecn);
        }
        let now = ctx.clock.now();
        let _ = crate::endpoints::wait_fd(sock.as_raw_fd(), false, TICK.min(ctx.end.get().since(now)));
    }
}

fn run_tcp_server(ctx: &FlowCtx, cfg: &AppConfig, l: TcpListener) {
    if let Err(e) = l.set_nonblocking(true) {
        ctx.meter.fail(format!("flow {}: {e}", ctx.name));
        return;
    }
    ctx.meter.lock().first_ecn = Some(cfg.nominal_ecn());
    let mut conns: Vec<ServerConn> = Vec::new();
    let mut info = SenderInfo::default();
    let mut last_sample: Option<Time> = None;
    let mut inb = vec![0u8; 64 * 1024];
    let mut fds = Vec::new();
    loop {
        let now = ctx.clock.now();
        if ctx.done(now) {
            break;
        }
        loop {
            match l.accept() {
                Ok((s, _)) => {
                    if s.set_nonblocking(true).is_ok() {
                        conns.push(ServerConn {
                            s,
                            hdr: Vec::with_capacity(REQUEST_HEADER),
                            skip: 0,
                            out: VecDeque::new(),
                            shut: false,
                        });
                    }
                }
                Err(e) if would_block(&e) => break,
                Err(e) => {
                    ctx.meter.fail(format!("flow {}: accepting: {e}", ctx.name));
                    return;
                }
            }
        }
        let answering = ctx.clock.now() < ctx.stop;
        let mut i = 0;
        while i < conns.len() {
            let keep = serve(&mut conns[i], &mut inb, answering);
            if keep {
                i += 1;
            } else {
                let c = conns.swap_remove(i);
                info.closing(c.s.as_fd());
            }
        }
        let now = ctx.clock.now();
        if last_sample.is_none_or(|t| now.since(t) >= TICK) {
            last_sample = Some(now);
            let busy: Vec<BorrowedFd<'_>> = conns.iter().map(|c| c.s.as_fd()).collect();
            let sending = conns.iter().any(|c| !c.out.is_empty());
            info.report(ctx, now, &busy, sending);
        }
        fds.clear();
        fds.push(pfd(l.as_raw_fd(), false));
        for c in &conns {
            fds.push(pfd(c.s.as_raw_fd(), !c.out.is_empty()));
        }
        if let Err(e) = poll(&mut fds, TICK.min(ctx.end.get().since(now))) {
            ctx.meter.fail(format!("flow {}: {e}", ctx.name));
            return;
        }
    }
    let fds: Vec<BorrowedFd<'_>> = conns.iter().map(|c| c.s.as_fd()).collect();
    info.report(ctx, ctx.clock.now(), &fds, false);
}

/// Read requests and write responses on one server connection (drop them unless
/// `answering`); false when it is done.
fn serve(c: &mut ServerConn, inb: &mut [u8], answering: bool) -> bool {
    // Read what arrived: request headers and their padding.
    loop {
        match c.s.read(inb) {
            Ok(0) => return !c.out.is_empty() && !c.shut,
            Ok(n) => {
                let mut p = &inb[..n];
                while !p.is_empty() {
                    if c.skip > 0 {
                        let k = (c.skip.min(p.len() as u64)) as usize;
                        c.skip -= k as u64;
                        p = &p[k..];
                        continue;
                    }
                    let k = (REQUEST_HEADER - c.hdr.len()).min(p.len());
                    c.hdr.extend_from_slice(&p[..k]);
                    p = &p[k..];
                    if c.hdr.len() == REQUEST_HEADER {
                        let mut h = [0u8; REQUEST_HEADER];
                        h.copy_from_slice(&c.hdr);
                        c.hdr.clear();
                        match decode_request(&h) {
                            Ok((len, bytes, close)) => {
                                c.skip = len as u64 - REQUEST_HEADER as u64;
                                c.out.push_back((bytes, close));
                            }
                            // Not our protocol: drop the connection.
                            Err(_) => return false,
                        }
                    }
                }
            }
            Err(e) if would_block(&e) => break,
            Err(_) => return false,
        }
    }
    if !answering {
        // The flow stopped: what was not written yet is never sent (the connection stays
        // open, so the client does not take it for a server that closed early).
        c.out.clear();
    }
    // Write responses in order.
    while let Some((left, close)) = c.out.front_mut() {
        if *left == 0 {
            let close = *close;
            c.out.pop_front();
            if close {
                let _ = c.s.shutdown(std::net::Shutdown::Write);
                c.shut = true;
            }
            continue;
        }
        let k = (*left).min(ZEROS.len() as u64) as usize;
        match c.s.write(&ZEROS[..k]) {
            Ok(n) => *left -= n as u64,
            Err(e) if would_block(&e) => break,
            Err(_) => return false,
        }
    }
    true
}

// ------------------------------------------------------------------------------------------
// Client (the destination of bulk, request-response, web and query)
// ------------------------------------------------------------------------------------------

struct Resp {
    bytes: u64,
    got: u64,
    started: Time,
    unit: Unit,
}

struct ClientConn {
    s: TcpStream,
    connected: bool,
    out: Vec<u8>,
    out_pos: usize,
    resp: VecDeque<Resp>,
    /// web: object sizes still to request on this connection, in order.
    planned: VecDeque<u64>,
    closing: bool,
}

/// The client side of an application flow: realises the instances of the app's
/// [`Schedule`] on kernel sockets and reports its completions to the flow's meter.
struct Client<'a> {
    ctx: &'a FlowCtx,
    cfg: &'a AppConfig,
    server: SocketAddr,
    sched: Schedule,
    conns: BTreeMap<u32, ClientConn>,
    next_conn: u32,
    persistent: Option<u32>,
    udp: Option<EcnUdpSocket>,
    completions: Vec<Completion>,
}

impl Client<'_> {
    /// Hand the completions the schedule recorded to the flow's meter.
    fn report(&mut self) {
        self.sched.drain_completions(&mut self.completions);
        report_completions(self.ctx, &mut self.completions);
    }

    fn open(&mut self) -> io::Result<u32> {
        let s = tcp_connect_start(self.server, &self.cfg.cc, TcpOpts::of(&self.cfg.tcp))?;
        let id = self.next_conn;
        self.next_conn = self.next_conn.wrapping_add(1);
        self.conns.insert(
            id,
            ClientConn {
                s,
                connected: false,
                out: Vec::new(),
                out_pos: 0,
                resp: VecDeque::new(),
                planned: VecDeque::new(),
                closing: false,
            },
        );
        Ok(id)
    }

    fn request(&mut self, now: Time, conn: u32, bytes: u64, close: bool, unit: Unit) {
        let req = encode_request(self.cfg.request_bytes() as usize, bytes, close);
        if let Some(c) = self.conns.get_mut(&conn) {
            c.out.extend_from_slice(&req);
            c.closing |= close;
            c.resp.push_back(Resp {
                bytes,
                got: 0,
                started: now,
                unit,
            });
        }
    }

    fn next_object(&mut self, now: Time, conn: u32, page: u32) {
        let Some(c) = self.conns.get_mut(&conn) else { return };
        let Some((b, close)) = next_object(&mut c.planned) else {
            return;
        };
        self.request(now, conn, b, close, Unit::Object { page });
    }

    /// Start an instance the schedule says is due: open its connections and queue its
    /// requests, or send its query.
    fn start(&mut self, now: Time, instance: Instance) -> io::Result<()> {
        match instance {
            Instance::Transfer { bytes } => {
                let c = self.open()?;
                self.request(now, c, bytes, true, Unit::Transfer);
            }
            Instance::Response {
                bytes,
                persistent,
                close,
            } => {
                let c = match self.persistent.filter(|c| persistent && self.conns.contains_key(c)) {
                    Some(c) => c,
                    None => {
                        let c = self.open()?;
                        if persistent {
                            self.persistent = Some(c);
                        }
                        c
                    }
                };
                self.request(now, c, bytes, close, Unit::Response);
            }
            Instance::Page { page, conns } => {
                let mut ids = Vec::with_capacity(conns.len());
                for plan in conns {
                    let id = self.open()?;
                    if let Some(c) = self.conns.get_mut(&id) {
                        c.planned = plan;
                    }
                    ids.push(id);
                }
                for id in ids {
                    self.next_object(now, id, page);
                }
            }
            Instance::Query { id, bytes } => self.send_query(id, bytes),
        }
        Ok(())
    }

    fn send_query(&self, id: u32, bytes: u32) {
        if let Some(u) = &self.udp {
            let q = encode_query(false, id, bytes, self.cfg.request_bytes() as usize);
            let _ = u.send_to(&q, self.server, self.cfg.nominal_ecn());
        }
    }

    /// Read, write and complete on connection `id`; false when it is finished.
    fn service(&mut self, id: u32, now: Time, inb: &mut [u8]) -> Result<bool, String> {
        let Some(c) = self.conns.get_mut(&id) else {
            return Ok(false);
        };
        if !c.connected {
            match c.s.take_error() {
                Ok(Some(e)) | Err(e) => return Err(format!("connecting to {}: {e}", self.server)),
                Ok(None) => {}
            }
            match c.s.peer_addr() {
                Ok(_) => c.connected = true,
                Err(_) => return Ok(true), // still connecting
            }
        }
        while c.out_pos < c.out.len() {
            match c.s.write(&c.out[c.out_pos..]) {
                Ok(n) => c.out_pos += n,
                Err(e) if would_block(&e) => break,
                Err(e) => return Err(format!("sending a request: {e}")),
            }
        }
        if c.out_pos == c.out.len() {
            c.out.clear();
            c.out_pos = 0;
        }
        let mut done: Vec<(Unit, Time, u64)> = Vec::new();
        let mut eof = false;
        loop {
            match c.s.read(inb) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => {
                    self.ctx.meter.lock().on_stream_bytes(now, n as u64);
                    let mut n = n as u64;
                    while n > 0 {
                        let Some(f) = c.resp.front_mut() else {
                            return Err("the server sent more than was asked for".into());
                        };
                        let k = n.min(f.bytes - f.got);
                        f.got += k;
                        n -= k;
                        if f.got == f.bytes {
                            done.push((f.unit, f.started, f.bytes));
                            c.resp.pop_front();
                        }
                    }
                }
                Err(e) if would_block(&e) => break,
                Err(e) => return Err(format!("receiving: {e}")),
            }
        }
        // Zero-byte responses complete as soon as they reach the front.
        while c.resp.front().is_some_and(|f| f.bytes == 0) {
            if let Some(f) = c.resp.pop_front() {
                done.push((f.unit, f.started, 0));
            }
        }
        let finished = c.closing && c.resp.is_empty() && c.planned.is_empty();
        if eof && !c.resp.is_empty() {
            return Err("the server closed a connection with responses outstanding".into());
        }
        for (unit, started, bytes) in done {
            // No retries: a request travels in the connection's byte stream, which kernel
            // TCP retransmits; the application never sends it again (the simulator's
            // requests are packets of their own, retried by the app).
            self.sched.done(now, unit, started, bytes, 0);
            if let Unit::Object { page } = unit {
                if !self.sched.is_stopped() {
                    self.next_object(now, id, page);
                }
            }
        }
        self.report();
        let finished = finished
            && self
                .conns
                .get(&id)
                .is_some_and(|c| c.resp.is_empty() && c.planned.is_empty());
        Ok(!(finished || eof))
    }

    fn on_reply(&mut self, now: Time, id: u32) {
        if let Some(bytes) = self.sched.on_reply(now, id) {
            self.ctx.meter.lock().on_stream_bytes(now, bytes as u64);
            self.report();
        }
    }

    fn retry_queries(&mut self, now: Time) {
        while let Some((id, bytes)) = self.sched.poll_query_retry(now) {
            self.send_query(id, bytes);
        }
    }
}

/// Record `completions` in the flow's meter and empty the list.
fn report_completions(ctx: &FlowCtx, completions: &mut Vec<Completion>) {
    if completions.is_empty() {
        return;
    }
    if let Some(a) = ctx.meter.lock().app.as_mut() {
        for c in completions.iter() {
            a.on_completion(c);
        }
    }
    completions.clear();
}

/// Run the client of an application flow at its destination from `ctx.start`: start
/// instances on the configured schedule against the server at `server` and record every
/// completion in the flow's [`crate::meter::AppMeter`].
pub fn run_app_client(ctx: &FlowCtx, cfg: &AppConfig, server: SocketAddr) {
    precise_timers();
    ctx.clock.sleep_until(ctx.start, &ctx.stop_flag);
    let udp = if cfg.kind == AppKind::Query {
        let bind = SocketAddr::new(
            if server.is_ipv4() {
                std::net::Ipv4Addr::UNSPECIFIED.into()
            } else {
                std::net::Ipv6Addr::UNSPECIFIED.into()
            },
            0,
        );
        match EcnUdpSocket::bind(bind).and_then(|s| s.set_nonblocking(true).map(|_| s)) {
            Ok(s) => Some(s),
            Err(e) => {
                ctx.meter.fail(format!("flow {}: binding a UDP socket: {e}", ctx.name));
                return;
            }
        }
    } else {
        None
    };
    let mut cl = Client {
        ctx,
        cfg,
        server,
        // The schedule runs from the flow's start, as the simulator's does: a late wake-up
        // starts the first instance late but does not shift an open loop's grid.
        sched: Schedule::new(cfg, ctx.start),
        conns: BTreeMap::new(),
        next_conn: 0,
        persistent: None,
        udp,
        completions: Vec::new(),
    };
    let mut inb = vec![0u8; 256 * 1024];
    let mut fds = Vec::new();
    let mut ids = Vec::new();
    loop {
        let now = ctx.clock.now();
        if ctx.done(now) {
            return;
        }
        if now >= ctx.stop {
            // No new instances after the flow's stop (those under way still complete, and
            // unanswered queries are still retried). The simulator's destination keeps
            // its schedule running, but its source, closed at the stop, ignores requests
            // and queries, so no instance started after the stop completes there either;
            // here a new connection would still be handshaken by the server's kernel.
            cl.sched.stop();
        }
        while let Some(instance) = cl.sched.poll_start(now) {
            if let Err(e) = cl.start(now, instance) {
                ctx.meter
                    .fail(format!("flow {}: connecting to {server}: {e}", ctx.name));
                return;
            }
        }
        ids.clear();
        ids.extend(cl.conns.keys().copied());
        for &id in &ids {
            let now = ctx.clock.now();
            match cl.service(id, now, &mut inb) {
                Ok(true) => {}
                Ok(false) => {
                    cl.conns.remove(&id);
                }
                Err(e) => {
                    ctx.meter.fail(format!("flow {}: {e}", ctx.name));
                    return;
                }
            }
        }
        if let Some(u) = cl.udp.take() {
            loop {
                match u.recv_from(&mut inb) {
                    Ok(g) => {
                        let at = g.arrival(ctx.clock.now());
                        if let Some((true, id, _)) = decode_query(&inb[..g.len]) {
                            ctx.meter.lock().on_arrival(
                                at,
                                at,
                                crate::wire::frame_len(g.len, server.is_ipv6()),
                                g.ecn().unwrap_or(Ecn::NotEct),
                            );
                            cl.on_reply(at, id);
                        }
                    }
                    Err(e) if no_datagram(&e) => break,
                    Err(e) => {
                        ctx.meter.fail(format!("flow {}: receiving replies: {e}", ctx.name));
                        return;
                    }
                }
            }
            cl.udp = Some(u);
            cl.retry_queries(ctx.clock.now());
        }
        let now = ctx.clock.now();
        let mut wake = now + TICK;
        if let Some(t) = cl.sched.poll_timeout() {
            wake = wake.min(t.max(now));
        }
        wake = wake.min(ctx.end.get());
        fds.clear();
        for c in cl.conns.values() {
            fds.push(pfd(c.s.as_raw_fd(), !c.connected || c.out_pos < c.out.len()));
        }
        if let Some(u) = &cl.udp {
            fds.push(pfd(u.as_raw_fd(), false));
        }
        if wake > now {
            if let Err(e) = poll(&mut fds, wake.since(now)) {
                ctx.meter.fail(format!("flow {}: {e}", ctx.name));
                return;
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// Sync: the source pushes chunks to the destination
// ------------------------------------------------------------------------------------------

/// Run the source of a sync flow: connect to `dst` at the flow's start and send the chunks
/// of the app's [`ChunkSource`], each offered a pause after the previous one was
/// acknowledged. `seed` draws the pauses between `pause` and `pause_max` (the simulator
/// seeds the same flow's source alike, so both draw the same pauses).
pub fn run_sync_source(ctx: &FlowCtx, cfg: &AppConfig, dst: SocketAddr, seed: u64) {
    precise_timers();
    ctx.clock.sleep_until(ctx.start, &ctx.stop_flag);
    let done = |now: Time| ctx.done(now);
    if done(ctx.clock.now()) {
        return;
    }
    let s = match tcp_connect_start(dst, &cfg.cc, TcpOpts::of(&cfg.tcp)) {
        Ok(s) => s,
        Err(e) => {
            ctx.meter.fail(format!("flow {}: connecting to {dst}: {e}", ctx.name));
            return;
        }
    };
    let mut s = s;
    let fd = s.as_raw_fd();
    ctx.meter.lock().first_ecn = Some(cfg.nominal_ecn());
    let mut src = ChunkSource::new(cfg, Rng::new(seed), ctx.start);
    let mut info = SenderInfo::default();
    let mut last_sample: Option<Time> = None;
    // Bytes of the current chunk (after its header) still to write.
    let mut left = 0u64;
    let mut hdr: Option<[u8; CHUNK_HEADER]> = None;
    loop {
        let now = ctx.clock.now();
        if done(now) {
            break;
        }
        if now >= ctx.stop {
            // The flow stopped: no more chunks, and what of the current one was not
            // written yet is never sent (the simulator's source, closed at the stop, sends
            // no data it had not sent yet).
            src.close();
            hdr = None;
            left = 0;
        }
        let written = left == 0 && hdr.is_none();
        if written && src.awaiting_ack() && unacked_bytes(s.as_fd()).unwrap_or(0) == 0 {
            // Kernel TCP tells how much of what was written is unacknowledged
            // (`SIOCOUTQ`), not which bytes: the next chunk waits until that is nothing,
            // i.e. until every chunk byte offered so far was acknowledged.
            src.acked(now, src.offered_bytes());
        }
        if written {
            if let Some(bytes) = src.poll_offer(now) {
                let mut h = [0u8; CHUNK_HEADER];
                h[0..2].copy_from_slice(b"AC");
                h[2] = VERSION;
                h[8..16].copy_from_slice(&now.as_nanos().to_be_bytes());
                hdr = Some(h);
                left = bytes;
            }
        }
        let mut blocked = false;
        if let Some(h) = hdr {
            match s.write(&h) {
                // The header is 16 bytes: a short write on a fresh chunk is taken as a
                // failure to keep the framing simple.
                Ok(n) if n == CHUNK_HEADER => hdr = None,
                Ok(_) => {
                    ctx.meter
                        .fail(format!("flow {}: short write of a chunk header", ctx.name));
                    return;
                }
                Err(e) if would_block(&e) || e.kind() == io::ErrorKind::NotConnected => blocked = true,
                Err(e) => {
                    ctx.meter.fail(format!("flow {}: sending: {e}", ctx.name));
                    return;
                }
            }
        }
        while hdr.is_none() && left > 0 && !blocked {
            let k = left.min(ZEROS.len() as u64) as usize;
            match s.write(&ZEROS[..k]) {
                Ok(n) => left -= n as u64,
                Err(e) if would_block(&e) => blocked = true,
                Err(e) => {
                    ctx.meter.fail(format!("flow {}: sending: {e}", ctx.name));
                    return;
                }
            }
        }
        let now = ctx.clock.now();
        if last_sample.is_none_or(|t| now.since(t) >= TICK) {
            last_sample = Some(now);
            info.report(ctx, now, &[s.as_fd()], left > 0);
        }
        // Waiting for the acknowledgement is polled every millisecond.
        let waiting = left == 0 && hdr.is_none() && src.awaiting_ack();
        let mut wake = now + if waiting { Dur::from_millis(1) } else { TICK };
        if let Some(t) = src.next_offer() {
            wake = wake.min(t.max(now));
        }
        wake = wake.min(ctx.end.get());
        let mut f = [pfd(fd, left > 0 || hdr.is_some())];
        f[0].events &= !libc::POLLIN;
        if wake > now {
            let _ = poll(&mut f, wake.since(now));
        }
    }
    info.report(ctx, ctx.clock.now(), &[s.as_fd()], false);
}

/// Run the destination of a sync flow: accept the source's connection and time every
/// chunk from its offer (the header's time) to its last byte, with the app's
/// [`Schedule`].
pub fn run_sync_sink(ctx: &FlowCtx, cfg: &AppConfig, l: TcpListener) {
    if let Err(e) = l.set_nonblocking(true) {
        ctx.meter.fail(format!("flow {}: {e}", ctx.name));
        return;
    }
    let mut sched = Schedule::new(cfg, ctx.start);
    let chunk = sched.chunk_size();
    let mut conn: Option<TcpStream> = None;
    let mut inb = vec![0u8; 256 * 1024];
    let mut hdr: Vec<u8> = Vec::with_capacity(CHUNK_HEADER);
    // Payload bytes of the current chunk still to read (0: a chunk header is next), the
    // chunk headers read, and the payload bytes read in all.
    let mut in_chunk = 0u64;
    let mut headers = 0u64;
    let mut payload = 0u64;
    let mut completions = Vec::new();
    loop {
        let now = ctx.clock.now();
        if ctx.done(now) {
            return;
        }
        let Some(c) = conn.as_mut() else {
            match l.accept() {
                Ok((c, _)) => {
                    let _ = c.set_nonblocking(true);
                    conn = Some(c);
                }
                Err(e) if would_block(&e) => {
                    let _ = crate::endpoints::wait_fd(l.as_raw_fd(), false, TICK.min(ctx.end.get().since(now)));
                }
                Err(e) => {
                    ctx.meter.fail(format!("flow {}: accepting: {e}", ctx.name));
                    return;
                }
            }
            continue;
        };
        match c.read(&mut inb) {
            Ok(0) => return,
            Ok(n) => {
                let now = ctx.clock.now();
                let mut p = &inb[..n];
                while !p.is_empty() {
                    if in_chunk == 0 {
                        let k = (CHUNK_HEADER - hdr.len()).min(p.len());
                        hdr.extend_from_slice(&p[..k]);
                        p = &p[k..];
                        if hdr.len() == CHUNK_HEADER {
                            if &hdr[0..2] != b"AC" || hdr[2] != VERSION {
                                ctx.meter
                                    .fail(format!("flow {}: the sync stream lost its framing", ctx.name));
                                return;
                            }
                            let mut t = [0u8; 8];
                            t.copy_from_slice(&hdr[8..16]);
                            sched.chunk_offered(headers, Time(u64::from_be_bytes(t)));
                            headers += 1;
                            in_chunk = chunk;
                            hdr.clear();
                        }
                    } else {
                        let k = in_chunk.min(p.len() as u64);
                        in_chunk -= k;
                        payload += k;
                        p = &p[k as usize..];
                        ctx.meter.lock().on_stream_bytes(now, k);
                        sched.chunks_delivered(now, payload);
                        sched.drain_completions(&mut completions);
                        report_completions(ctx, &mut completions);
                    }
                }
            }
            Err(e) if would_block(&e) => {
                let _ = crate::endpoints::wait_fd(c.as_raw_fd(), false, TICK.min(ctx.end.get().since(now)));
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return,
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
    use crate::endpoints::Clock;
    use crate::meter::{flow_meter, AppMeter, SharedMeter, Window};
    use l4s_apps::{CompletionKind, Size};
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    /// A flow that stops at `stop` in a run of `secs`.
    fn ctx(stop: Time, secs: u64) -> FlowCtx {
        let end = Time::from_secs(secs);
        let window = Window { start: Time::ZERO, end };
        let mut m = flow_meter(window, None, true);
        m.app = Some(Box::new(AppMeter::new(window)));
        FlowCtx {
            index: 0,
            name: "app".into(),
            clock: Clock::start(),
            start: Time::ZERO,
            stop,
            end: crate::endpoints::EndAt::fixed(end),
            stop_flag: Arc::new(AtomicBool::new(false)),
            meter: SharedMeter::new(m),
            ipv6: false,
            timeline: None,
        }
    }

    /// Run `cfg` over loopback for `secs`; the completions per kind: (count, max ms, bytes).
    fn run(cfg: AppConfig, secs: u64) -> (FlowCtx, BTreeMap<CompletionKind, (u64, f64, u64)>) {
        run_stopping(cfg, Time::from_secs(secs), secs)
    }

    /// As [`run`] for a flow that stops at `stop`.
    fn run_stopping(cfg: AppConfig, stop: Time, secs: u64) -> (FlowCtx, BTreeMap<CompletionKind, (u64, f64, u64)>) {
        cfg.validate(Dur::from_secs(secs)).unwrap();
        let c = ctx(stop, secs);
        let srv = {
            let c = c.clone();
            let cfg = cfg.clone();
            if cfg.kind == AppKind::Query {
                let u = EcnUdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
                let addr = u.local_addr().unwrap();
                (
                    std::thread::spawn(move || run_app_server(&c, &cfg, Listen::Udp(u))),
                    addr,
                )
            } else {
                let l = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = l.local_addr().unwrap();
                if cfg.kind == AppKind::Sync {
                    (std::thread::spawn(move || run_sync_sink(&c, &cfg, l)), addr)
                } else {
                    (
                        std::thread::spawn(move || run_app_server(&c, &cfg, Listen::Tcp(l))),
                        addr,
                    )
                }
            }
        };
        if cfg.kind == AppKind::Sync {
            run_sync_source(&c, &cfg, srv.1, 1);
        } else {
            run_app_client(&c, &cfg, srv.1);
        }
        srv.0.join().unwrap();
        let m = c.meter.lock();
        assert!(m.error.is_none(), "{:?}", m.error);
        let out = m
            .app
            .as_ref()
            .unwrap()
            .kinds
            .iter()
            .map(|(k, (h, b, _))| (*k, (h.count(), h.max_ns() as f64 / 1e6, *b)))
            .collect();
        drop(m);
        (c, out)
    }

    #[test]
    fn request_and_query_framing_round_trips_and_refuses_garbage() {
        let r = encode_request(300, 1 << 40, true);
        assert_eq!(r.len(), 300);
        let mut h = [0u8; REQUEST_HEADER];
        h.copy_from_slice(&r[..REQUEST_HEADER]);
        assert_eq!(decode_request(&h), Ok((300, 1 << 40, true)));
        assert_eq!(encode_request(3, 5, false).len(), REQUEST_HEADER);
        h[3] = 7;
        assert!(decode_request(&h).is_err());
        h[3] = 0;
        h[4..8].copy_from_slice(&5u32.to_be_bytes());
        assert!(decode_request(&h).unwrap_err().contains("below"));
        let q = encode_query(false, 9, 256, 64);
        assert_eq!(q.len(), 64);
        assert_eq!(decode_query(&q), Some((false, 9, 256)));
        assert_eq!(decode_query(&encode_query(true, 1, 2, 0)), Some((true, 1, 2)));
        assert_eq!(decode_query(&q[..15]), None);
        let mut bad = q.clone();
        bad[3] = 3;
        assert_eq!(decode_query(&bad), None);
    }

    #[test]
    fn request_response_persistent_and_new_connections_on_loopback() {
        let mut cfg = AppConfig::new(AppKind::RequestResponse);
        cfg.response = Some(Size(20_000));
        cfg.think = Some(Dur::from_millis(20));
        cfg.count = Some(10);
        // 10 exchanges of 20 kB on loopback: each well under 5 ms. Wall time on a loaded
        // host can hold one back (7.2 ms once in CI beside other work): measured again,
        // up to three times, before it counts as slow.
        let mut slowest = Vec::new();
        for _ in 0..3 {
            let (c, k) = run(cfg.clone(), 1);
            assert_eq!(k[&CompletionKind::Response].0, 10, "{k:?}");
            assert_eq!(k[&CompletionKind::Response].2, 200_000);
            assert_eq!(c.meter.lock().goodput_bytes, 200_000);
            slowest.push(k[&CompletionKind::Response].1);
            if k[&CompletionKind::Response].1 < 5.0 {
                break;
            }
        }
        assert!(
            slowest.last().is_some_and(|&ms| ms < 5.0),
            "slowest exchange of each try, ms: {slowest:?}"
        );
        cfg.persistent = Some(false);
        cfg.think = None;
        cfg.repeat = Some(Dur::from_millis(50));
        cfg.count = None;
        let (_, k) = run(cfg, 1);
        // Open loop every 50 ms for 1 s: 20 starts, the last ones may end after the run.
        assert!((18..=20).contains(&k[&CompletionKind::Response].0), "{k:?}");
    }

    #[test]
    fn bulk_web_query_and_sync_on_loopback() {
        let mut bulk = AppConfig::new(AppKind::Bulk);
        bulk.bytes = Some(Size(20_000_000));
        let (_, k) = run(bulk, 2);
        assert_eq!(k[&CompletionKind::Transfer].0, 1, "{k:?}");
        assert_eq!(k[&CompletionKind::Transfer].2, 20_000_000);
        assert!(k[&CompletionKind::Transfer].1 < 1000.0, "{k:?}");

        let mut web = AppConfig::new(AppKind::Web);
        web.objects = Some(10);
        web.object_size = Some(Size(30_000));
        web.connections = Some(3);
        web.think = Some(Dur::from_millis(100));
        web.count = Some(3);
        let (_, k) = run(web, 1);
        assert_eq!(k[&CompletionKind::Page].0, 3, "{k:?}");
        assert_eq!(k[&CompletionKind::Object].0, 30, "{k:?}");
        assert_eq!(k[&CompletionKind::Page].2, 900_000);

        let mut q = AppConfig::new(AppKind::Query);
        q.repeat = Some(Dur::from_millis(10));
        q.count = Some(50);
        q.response = Some(Size(500));
        let (c, k) = run(q, 1);
        assert_eq!(
            k[&CompletionKind::Query],
            (50, k[&CompletionKind::Query].1, 25_000),
            "{k:?}"
        );
        assert!(k[&CompletionKind::Query].1 < 5.0, "{k:?}");
        assert_eq!(c.meter.lock().received, 50);

        let mut sync = AppConfig::new(AppKind::Sync);
        sync.chunk = Some(Size(1_000_000));
        sync.pause = Some(Dur::from_millis(100));
        sync.count = Some(4);
        let (c, k) = run(sync, 1);
        assert_eq!(k[&CompletionKind::Chunk].0, 4, "{k:?}");
        assert_eq!(c.meter.lock().goodput_bytes, 4_000_000);
    }

    #[test]
    fn nothing_starts_or_is_answered_after_the_flow_stops() {
        // Queries every 10 ms from 0 to the stop at 300 ms: 30, none after it.
        let mut q = AppConfig::new(AppKind::Query);
        q.repeat = Some(Dur::from_millis(10));
        let (_, k) = run_stopping(q, Time::from_millis(300), 1);
        assert!((29..=30).contains(&k[&CompletionKind::Query].0), "{k:?}");

        // A stopped server reads requests but answers none (the simulator's closed source
        // ignores them); before the stop it answers.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        s.set_nonblocking(true).unwrap();
        let mut c = ServerConn {
            s,
            hdr: Vec::new(),
            skip: 0,
            out: VecDeque::new(),
            shut: false,
        };
        let mut inb = vec![0u8; 4096];
        let fd = c.s.as_raw_fd();
        client.write_all(&encode_request(300, 1000, false)).unwrap();
        assert!(crate::endpoints::wait_fd(fd, false, Dur::from_secs(1)).unwrap());
        assert!(serve(&mut c, &mut inb, false));
        assert!(c.out.is_empty() && c.hdr.is_empty() && c.skip == 0);
        client.write_all(&encode_request(300, 1000, false)).unwrap();
        assert!(crate::endpoints::wait_fd(fd, false, Dur::from_secs(1)).unwrap());
        assert!(serve(&mut c, &mut inb, true));
        // Exactly the second response arrives.
        client
            .set_read_timeout(Some(std::time::Duration::from_millis(200)))
            .unwrap();
        let mut got = 0;
        while let Ok(n @ 1..) = client.read(&mut inb) {
            got += n;
        }
        assert_eq!(got, 1000);
    }
}
