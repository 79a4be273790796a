//! [`AppReceiver`]: where an application flow's data is consumed (the client of a
//! download, the server of a sync upload), at the flow's destination node. It runs the
//! [`Schedule`], issues the requests and queries, retries them, and measures completions.

use std::collections::VecDeque;

use l4s_core::{Ecn, Time};
use l4s_transport::tcp::{TcpReceiver, TcpReceiverConfig};
use l4s_transport::{Endpoint, EndpointStats, Transmit};

use crate::config::{AppConfig, AppKind, MIN_FRAME};
use crate::conns::Conns;
use crate::header::{AppHeader, Completion};
use crate::schedule::{next_object, Instance, Schedule, Unit};
use crate::stats::add_counters;

/// Control packets waiting to be sent; beyond this, resets for unknown connections are
/// dropped (a faulty path could otherwise grow the queue without bound).
const MAX_OUT: usize = 4096;

/// One expected response on a connection.
#[derive(Clone, Copy, Debug)]
struct Resp {
    id: u32,
    nth: u32,
    bytes: u64,
    close: bool,
    /// First transmission of the request.
    started: Time,
    /// The request was at the head of its connection when first sent, and never retried:
    /// its first answer is an RTT sample.
    sample_ok: bool,
    retries: u32,
    /// Evidence that the request arrived (the SYN it triggered, or its first byte).
    arrived: bool,
    unit: Unit,
}

/// One TCP connection at the destination.
struct DstConn {
    tcp: TcpReceiver,
    syn_seen: bool,
    /// Responses expected, in `nth` order.
    resp: VecDeque<Resp>,
    /// Delivered-byte offset at which the front response starts.
    base: u64,
    next_nth: u32,
    /// web: object sizes still to request on this connection, in order.
    planned: VecDeque<u64>,
    /// The request with `close` was issued: nothing more will be asked on this connection.
    closing: bool,
    /// Retry deadline of the front response's request, if it has no evidence yet.
    retry_at: Option<Time>,
    backoff: u32,
}

impl DstConn {
    fn new(cfg: &TcpReceiverConfig) -> DstConn {
        DstConn {
            tcp: TcpReceiver::new(cfg.clone()),
            syn_seen: false,
            resp: VecDeque::new(),
            base: 0,
            next_nth: 0,
            planned: VecDeque::new(),
            closing: false,
            retry_at: None,
            backoff: 0,
        }
    }
}

/// The destination of an application flow.
pub struct AppReceiver {
    cfg: AppConfig,
    rcv_cfg: TcpReceiverConfig,
    ecn: Ecn,
    request_size: u32,
    sched: Schedule,
    conns: Conns<DstConn>,
    next_conn: u32,
    next_id: u32,
    cursor: u32,
    out: VecDeque<(AppHeader, u32)>,
    persistent_conn: Option<u32>,
    gone: EndpointStats,
    own: EndpointStats,
    first_mode: &'static str,
}

impl AppReceiver {
    /// The destination of the app described by `cfg` (validated by the caller), started at
    /// `now`: the first instance starts at `now` (poll it, or its timer, then).
    pub fn new(cfg: &AppConfig, now: Time) -> AppReceiver {
        let (_, rcv_cfg) = cfg.tcp_setup();
        let mut r = AppReceiver {
            rcv_cfg,
            ecn: cfg.nominal_ecn(),
            request_size: cfg.request_wire_size().max(MIN_FRAME),
            sched: Schedule::new(cfg, now),
            conns: Conns::default(),
            next_conn: 0,
            next_id: 0,
            cursor: 0,
            out: VecDeque::new(),
            persistent_conn: None,
            gone: EndpointStats::default(),
            own: EndpointStats::default(),
            first_mode: "none",
            cfg: cfg.clone(),
        };
        if cfg.kind == AppKind::Sync {
            // The source opens connection 0 and pushes chunks; nothing to request.
            r.conns.insert(0, DstConn::new(&r.rcv_cfg));
            r.next_conn = 1;
        }
        r
    }

    /// Completions since the last call, appended to `out` in the order they happened.
    pub fn drain_completions(&mut self, out: &mut Vec<Completion>) {
        self.sched.drain_completions(out);
    }

    /// Instances (transfers, requests, pages, queries; chunks for sync) completed so far.
    pub fn completed(&self) -> u32 {
        self.sched.completed()
    }

    /// Instances started so far.
    pub fn started(&self) -> u32 {
        self.sched.started()
    }

    /// Open connections (for tests and inspection).
    pub fn open_connections(&self) -> usize {
        self.conns.len()
    }

    /// The current request timeout before backoff (see [`crate::DEFAULT_TIMEOUT`]).
    pub fn request_timeout(&self) -> l4s_core::Dur {
        self.sched.request_timeout()
    }

    fn alloc_conn(&mut self) -> u32 {
        while self.conns.contains_key(&self.next_conn) {
            self.next_conn = self.next_conn.wrapping_add(1);
        }
        let c = self.next_conn;
        self.next_conn = self.next_conn.wrapping_add(1);
        self.conns.insert(c, DstConn::new(&self.rcv_cfg));
        c
    }

    fn alloc_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        id
    }

    fn push_out(&mut self, h: AppHeader, size: u32) {
        self.out.push_back((h, size));
    }

    fn request_header(conn: u32, r: &Resp) -> AppHeader {
        AppHeader::Request {
            conn,
            id: r.id,
            nth: r.nth,
            bytes: r.bytes,
            close: r.close,
        }
    }

    /// Ask for `bytes` on connection `conn` (which exists).
    fn request(&mut self, now: Time, conn: u32, bytes: u64, close: bool, unit: Unit) {
        let id = self.alloc_id();
        let timeout = self.sched.timeout(0);
        let size = self.request_size;
        let Some(c) = self.conns.get_mut(&conn) else { return };
        let r = Resp {
            id,
            nth: c.next_nth,
            bytes,
            close,
            started: now,
            sample_ok: c.resp.is_empty(),
            retries: 0,
            arrived: false,
            unit,
        };
        c.next_nth += 1;
        if close {
            c.closing = true;
        }
        if c.resp.is_empty() {
            c.retry_at = Some(now + timeout);
            c.backoff = 0;
        }
        c.resp.push_back(r);
        self.out.push_back((Self::request_header(conn, &r), size));
    }

    /// Start an instance the schedule says is due.
    fn start_instance(&mut self, now: Time, instance: Instance) {
        match instance {
            Instance::Transfer { bytes } => {
                let c = self.alloc_conn();
                self.request(now, c, bytes, true, Unit::Transfer);
            }
            Instance::Response {
                bytes,
                persistent,
                close,
            } => {
                let c = match self
                    .persistent_conn
                    .filter(|c| persistent && self.conns.contains_key(c))
                {
                    Some(c) => c,
                    None => {
                        let c = self.alloc_conn();
                        if persistent {
                            self.persistent_conn = Some(c);
                        }
                        c
                    }
                };
                self.request(now, c, bytes, close, Unit::Response);
            }
            Instance::Page { page, conns: plans } => {
                let conns: Vec<u32> = plans.iter().map(|_| self.alloc_conn()).collect();
                for (k, plan) in conns.iter().zip(plans) {
                    if let Some(c) = self.conns.get_mut(k) {
                        c.planned = plan;
                    }
                }
                for c in conns {
                    self.request_next_object(now, c, page);
                }
            }
            Instance::Query { id, bytes } => {
                let size = self.request_size;
                self.push_out(AppHeader::Query { id, bytes }, size);
            }
        }
    }

    fn request_next_object(&mut self, now: Time, conn: u32, page: u32) {
        let Some(c) = self.conns.get_mut(&conn) else { return };
        let Some((b, close)) = next_object(&mut c.planned) else {
            return;
        };
        self.request(now, conn, b, close, Unit::Object { page });
    }

    /// Evidence, completions and follow-up requests on connection `conn` after a packet.
    fn progress(&mut self, now: Time, conn: u32) {
        loop {
            let timeout = self.sched.timeout(0);
            let Some(c) = self.conns.get_mut(&conn) else { return };
            let delivered = c.tcp.delivered_bytes();
            if self.cfg.kind == AppKind::Sync {
                // sync: chunks complete in order.
                self.sched.chunks_delivered(now, delivered);
                return;
            }
            let Some(front) = c.resp.front_mut() else { return };
            if !front.arrived && ((front.nth == 0 && c.syn_seen) || delivered > c.base) {
                front.arrived = true;
                c.retry_at = None;
                c.backoff = 0;
                if front.sample_ok && front.retries == 0 {
                    self.sched.rtt_sample(now - front.started);
                }
            }
            if delivered < c.base.saturating_add(front.bytes) {
                return;
            }
            let r = *front;
            c.resp.pop_front();
            c.base += r.bytes;
            // The next response, if any, is now at the head: time its request from now.
            match c.resp.front_mut() {
                Some(n) if !n.arrived && delivered <= c.base => {
                    c.retry_at = Some(now + timeout);
                    c.backoff = 0;
                }
                _ => c.retry_at = None,
            }
            self.sched.done(now, r.unit, r.started, r.bytes, r.retries);
            if let Unit::Object { page } = r.unit {
                if !self.sched.is_stopped() {
                    self.request_next_object(now, conn, page);
                }
            }
        }
    }

    fn on_reply(&mut self, now: Time, id: u32, bytes: u32) {
        if self.sched.on_reply(now, id).is_some() {
            self.own.delivered_bytes += bytes as u64;
        }
    }

    fn fire_timers(&mut self, now: Time) {
        // Requests without an answer.
        let due: Vec<u32> = self
            .conns
            .iter()
            .filter(|(_, c)| c.retry_at.is_some_and(|t| t <= now))
            .map(|(k, _)| *k)
            .collect();
        for k in due {
            let size = self.request_size;
            let backoff = self.conns.get(&k).map_or(0, |c| c.backoff + 1);
            let timeout = self.sched.timeout(backoff);
            let Some(c) = self.conns.get_mut(&k) else { continue };
            let Some(front) = c.resp.front_mut() else {
                c.retry_at = None;
                continue;
            };
            front.retries += 1;
            let h = Self::request_header(k, front);
            c.backoff = backoff;
            c.retry_at = Some(now + timeout);
            self.out.push_back((h, size));
        }
        // Queries without a reply.
        while let Some((id, bytes)) = self.sched.poll_query_retry(now) {
            let size = self.request_size;
            self.push_out(AppHeader::Query { id, bytes }, size);
        }
        // The schedule.
        while let Some(instance) = self.sched.poll_start(now) {
            self.start_instance(now, instance);
        }
    }

    /// Remove connections that are done: everything asked was delivered, nothing more will
    /// be asked, and the TCP receiver has nothing left to send.
    fn gc(&mut self) {
        let done: Vec<u32> = self
            .conns
            .iter()
            .filter(|(_, c)| c.closing && c.resp.is_empty() && c.planned.is_empty() && c.tcp.poll_timeout().is_none())
            .map(|(k, _)| *k)
            .collect();
        for k in done {
            if let Some(c) = self.conns.remove(&k) {
                add_counters(&mut self.gone, &c.tcp.stats());
            }
        }
    }
}

impl Endpoint for AppReceiver {
    type Header = AppHeader;

    fn handle_packet(&mut self, now: Time, header: &AppHeader, size: u32, ecn: Ecn) {
        match *header {
            AppHeader::Tcp { conn, ref seg, offered } => {
                let Some(c) = self.conns.get_mut(&conn) else {
                    // A connection this side never asked for or has closed: reset it.
                    self.own.received_packets += 1;
                    if self.out.len() < MAX_OUT {
                        self.push_out(AppHeader::Reset { conn }, MIN_FRAME);
                    }
                    return;
                };
                let syn = seg.flags.contains(l4s_transport::tcp::TcpFlags::SYN);
                c.tcp.handle_packet(now, seg, size, ecn);
                if syn {
                    c.syn_seen = true;
                }
                if let (Some(t), AppKind::Sync) = (offered, self.cfg.kind) {
                    // The segment holds the first byte of a chunk: remember its offer time.
                    let idx = seg.seq.saturating_sub(1).div_ceil(self.sched.chunk_size());
                    self.sched.chunk_offered(idx, t);
                }
                if self.first_mode == "none" && c.tcp.ecn_mode().name() != "none" {
                    self.first_mode = c.tcp.ecn_mode().name();
                }
                self.progress(now, conn);
            }
            AppHeader::Reply { id, bytes } => {
                self.own.received_packets += 1;
                if ecn == Ecn::Ce {
                    self.own.ce_packets += 1;
                }
                self.on_reply(now, id, bytes);
            }
            AppHeader::Request { .. } | AppHeader::Reset { .. } | AppHeader::Query { .. } => {
                self.own.received_packets += 1;
            }
        }
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit<AppHeader>> {
        if self.sched.next_start().is_some_and(|t| t <= now) {
            self.fire_timers(now);
        }
        if let Some((header, size)) = self.out.pop_front() {
            self.own.sent_packets += 1;
            self.own.sent_bytes += size as u64;
            return Some(Transmit {
                header,
                size,
                ecn: self.ecn,
            });
        }
        let cursor = self.cursor;
        let mut found = None;
        for (k, c) in self.conns.round_robin_mut(cursor) {
            if let Some(t) = c.tcp.poll_transmit(now) {
                found = Some((k, t));
                break;
            }
        }
        if let Some((k, t)) = found {
            self.cursor = k.wrapping_add(1);
            return Some(Transmit {
                header: AppHeader::Tcp {
                    conn: k,
                    seg: t.header,
                    offered: None,
                },
                size: t.size,
                ecn: t.ecn,
            });
        }
        // Nothing left to send anywhere: finished connections can go.
        self.gc();
        None
    }

    fn poll_timeout(&self) -> Option<Time> {
        let mut t = self.sched.poll_timeout();
        let mut take = |x: Option<Time>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |y: Time| y.min(x)));
            }
        };
        for c in self.conns.values() {
            take(c.retry_at);
            take(c.tcp.poll_timeout());
        }
        t
    }

    fn handle_timeout(&mut self, now: Time) {
        for c in self.conns.values_mut() {
            if c.tcp.poll_timeout().is_some_and(|t| t <= now) {
                c.tcp.handle_timeout(now);
            }
        }
        self.fire_timers(now);
    }

    fn close(&mut self, _now: Time) {
        // No new instances and no more retries; responses under way are still received.
        self.sched.close();
        for c in self.conns.values_mut() {
            c.retry_at = None;
            c.planned.clear();
        }
        self.out.retain(|(h, _)| matches!(h, AppHeader::Reset { .. }));
    }

    fn stats(&self) -> EndpointStats {
        let mut s = self.gone;
        add_counters(&mut s, &self.own);
        for c in self.conns.values() {
            add_counters(&mut s, &c.tcp.stats());
        }
        s.ecn_mode = self.first_mode;
        s.finished = self.sched.finished();
        s
    }
}
