//! [`AppReceiver`]: where an application flow's data is consumed (the client of a
//! download, the server of a sync upload), at the flow's destination node. It runs the
//! schedule, issues the requests and queries, retries them, and measures completions.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use l4s_core::{Dur, Ecn, Time};
use l4s_transport::tcp::{RttEstimator, TcpReceiver, TcpReceiverConfig};
use l4s_transport::{Endpoint, EndpointStats, Transmit};

use crate::config::{AppConfig, AppKind, MIN_FRAME};
use crate::header::{AppHeader, Completion, CompletionKind};
use crate::stats::add_counters;

/// Default first retry timeout of a request or query that has no answer yet: 1 s.
///
/// A request is the first packet of an exchange, sent before anything is known of the
/// path, which is the situation of RFC 6298 §2.1 (an initial RTO of 1 s before the first
/// RTT measurement). After the first answered request the timeout follows the RFC 6298 §2
/// estimator over request → first-answer samples (Karn: only from requests sent once,
/// RFC 6298 §3), so on a path with a standing queue the timeout grows with the queue
/// instead of firing spuriously, and on a short path a lost request is repaired after
/// about [`MIN_TIMEOUT`] rather than a second. Each retry of the same request doubles it
/// (RFC 6298 §5.5), up to [`MAX_TIMEOUT`].
pub const DEFAULT_TIMEOUT: Dur = Dur::from_secs(1);
/// Lower bound of the adaptive timeout: 200 ms, the minimum RTO of Linux TCP (and of this
/// project's TCP sender), which absorbs delayed-ACK and scheduling noise in the samples.
/// A configured `timeout` below it lowers it.
pub const MIN_TIMEOUT: Dur = Dur::from_millis(200);
/// Upper bound of the timeout with backoff (RFC 6298 §2.5: at least 60 s).
pub const MAX_TIMEOUT: Dur = Dur::from_secs(60);

/// Control packets waiting to be sent; beyond this, resets for unknown connections are
/// dropped (a faulty path could otherwise grow the queue without bound).
const MAX_OUT: usize = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    Transfer,
    Response,
    Object { page: u32 },
}

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

/// sync: chunk boundaries and their offer times.
#[derive(Debug, Default)]
struct Chunks {
    size: u64,
    /// Index of the next chunk to complete.
    next: u64,
    offered: BTreeMap<u64, Time>,
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
    chunks: Option<Chunks>,
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
            chunks: None,
        }
    }
}

struct Page {
    started: Time,
    remaining: usize,
    bytes: u64,
    retries: u32,
}

struct Qry {
    started: Time,
    bytes: u32,
    retries: u32,
    retry_at: Time,
}

/// How instances follow each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loop {
    /// A new instance every D.
    Open(Dur),
    /// The next instance D after the previous one completed.
    Closed(Dur),
}

/// The destination of an application flow.
pub struct AppReceiver {
    cfg: AppConfig,
    rcv_cfg: TcpReceiverConfig,
    ecn: Ecn,
    request_size: u32,
    lp: Loop,
    instances: Option<u32>,
    closed: bool,
    conns: BTreeMap<u32, DstConn>,
    next_conn: u32,
    next_id: u32,
    cursor: u32,
    out: VecDeque<(AppHeader, u32)>,
    rto: RttEstimator,
    next_at: Option<Time>,
    started: u32,
    completed: u32,
    pages: BTreeMap<u32, Page>,
    next_page: u32,
    persistent_conn: Option<u32>,
    queries: BTreeMap<u32, Qry>,
    query_timers: BTreeSet<(Time, u32)>,
    completions: Vec<Completion>,
    gone: EndpointStats,
    own: EndpointStats,
    first_mode: &'static str,
}

impl AppReceiver {
    /// The destination of the app described by `cfg` (validated by the caller), started at
    /// `now`: the first instance starts at `now` (poll it, or its timer, then).
    pub fn new(cfg: &AppConfig, now: Time) -> AppReceiver {
        let (_, rcv_cfg) = cfg.tcp_setup();
        let initial = cfg.timeout.unwrap_or(DEFAULT_TIMEOUT);
        let lp = match (cfg.repeat, cfg.think) {
            (Some(d), _) => Loop::Open(d),
            (None, t) => Loop::Closed(t.unwrap_or(Dur::ZERO)),
        };
        let mut r = AppReceiver {
            rcv_cfg,
            ecn: cfg.nominal_ecn(),
            request_size: cfg.request_wire_size().max(MIN_FRAME),
            lp,
            instances: cfg.instances(),
            closed: false,
            conns: BTreeMap::new(),
            next_conn: 0,
            next_id: 0,
            cursor: 0,
            out: VecDeque::new(),
            rto: RttEstimator::new(initial, MIN_TIMEOUT.min(initial), MAX_TIMEOUT, Dur::from_millis(1)),
            next_at: Some(now),
            started: 0,
            completed: 0,
            pages: BTreeMap::new(),
            next_page: 0,
            persistent_conn: None,
            queries: BTreeMap::new(),
            query_timers: BTreeSet::new(),
            completions: Vec::new(),
            gone: EndpointStats::default(),
            own: EndpointStats::default(),
            first_mode: "none",
            cfg: cfg.clone(),
        };
        if cfg.kind == AppKind::Sync {
            // The source opens connection 0 and pushes chunks; nothing to request.
            let mut c = DstConn::new(&r.rcv_cfg);
            c.chunks = Some(Chunks {
                size: cfg.chunk.map_or(1, |s| s.0.max(1)),
                ..Chunks::default()
            });
            r.conns.insert(0, c);
            r.next_conn = 1;
            r.next_at = None;
        }
        r
    }

    /// Completions since the last call, appended to `out` in the order they happened.
    pub fn drain_completions(&mut self, out: &mut Vec<Completion>) {
        out.append(&mut self.completions);
    }

    /// Instances (transfers, requests, pages, queries; chunks for sync) completed so far.
    pub fn completed(&self) -> u32 {
        self.completed
    }

    /// Instances started so far.
    pub fn started(&self) -> u32 {
        self.started
    }

    /// Open connections (for tests and inspection).
    pub fn open_connections(&self) -> usize {
        self.conns.len()
    }

    /// The current request timeout before backoff (see [`DEFAULT_TIMEOUT`]).
    pub fn request_timeout(&self) -> Dur {
        self.rto.rto()
    }

    fn timeout_with_backoff(&self, backoff: u32) -> Dur {
        (self.rto.rto() * (1u64 << backoff.min(16))).min(MAX_TIMEOUT)
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
        let timeout = self.timeout_with_backoff(0);
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

    fn more_instances(&self) -> bool {
        !self.closed && self.instances.is_none_or(|n| self.started < n)
    }

    fn start_instance(&mut self, now: Time) {
        let last = self.instances.is_some_and(|n| self.started + 1 >= n);
        self.started += 1;
        match self.cfg.kind {
            AppKind::Bulk => {
                let c = self.alloc_conn();
                let bytes = self.cfg.bytes.map_or(0, |s| s.0);
                self.request(now, c, bytes, true, Unit::Transfer);
            }
            AppKind::RequestResponse => {
                let bytes = self.cfg.response.map_or(0, |s| s.0);
                if self.cfg.persistent.unwrap_or(true) {
                    let c = match self.persistent_conn.filter(|c| self.conns.contains_key(c)) {
                        Some(c) => c,
                        None => {
                            let c = self.alloc_conn();
                            self.persistent_conn = Some(c);
                            c
                        }
                    };
                    self.request(now, c, bytes, last, Unit::Response);
                } else {
                    let c = self.alloc_conn();
                    self.request(now, c, bytes, true, Unit::Response);
                }
            }
            AppKind::Web => {
                let objects = self.cfg.page_objects();
                let page = self.next_page;
                self.next_page = self.next_page.wrapping_add(1);
                self.pages.insert(
                    page,
                    Page {
                        started: now,
                        remaining: objects.len(),
                        bytes: 0,
                        retries: 0,
                    },
                );
                let m = (self.cfg.connections.unwrap_or(6).max(1) as usize).min(objects.len());
                let conns: Vec<u32> = (0..m).map(|_| self.alloc_conn()).collect();
                // Objects are distributed round robin; each connection fetches its share in
                // order, one request at a time.
                for (i, &b) in objects.iter().enumerate() {
                    if let Some(c) = self.conns.get_mut(&conns[i % m]) {
                        c.planned.push_back(b);
                    }
                }
                for c in conns {
                    self.request_next_object(now, c, page);
                }
            }
            AppKind::Query => {
                let id = self.alloc_id();
                let bytes = self.cfg.response.map_or(256, |s| s.0) as u32;
                let retry_at = now + self.timeout_with_backoff(0);
                self.queries.insert(
                    id,
                    Qry {
                        started: now,
                        bytes,
                        retries: 0,
                        retry_at,
                    },
                );
                self.query_timers.insert((retry_at, id));
                let size = self.request_size;
                self.push_out(AppHeader::Query { id, bytes }, size);
            }
            AppKind::Sync => {}
        }
        // Open loop: the next start follows the schedule, not the (possibly late) call.
        let scheduled = self.next_at.unwrap_or(now).min(now);
        self.next_at = match self.lp {
            Loop::Open(d) if self.more_instances() => Some(scheduled + d),
            _ => None,
        };
    }

    fn request_next_object(&mut self, now: Time, conn: u32, page: u32) {
        let Some(c) = self.conns.get_mut(&conn) else { return };
        let Some(b) = c.planned.pop_front() else { return };
        let close = c.planned.is_empty();
        self.request(now, conn, b, close, Unit::Object { page });
    }

    fn instance_done(&mut self, now: Time) {
        self.completed += 1;
        if self.cfg.kind == AppKind::Sync {
            // The source paces the chunks; nothing to schedule here.
            return;
        }
        if let Loop::Closed(think) = self.lp {
            if self.more_instances() && self.next_at.is_none() {
                self.next_at = Some(now + think);
            }
        }
    }

    fn complete(&mut self, what: CompletionKind, started: Time, now: Time, bytes: u64, retries: u32) {
        self.completions.push(Completion {
            what,
            started,
            completed: now,
            bytes,
            retries,
        });
    }

    /// Evidence, completions and follow-up requests on connection `conn` after a packet.
    fn progress(&mut self, now: Time, conn: u32) {
        loop {
            let timeout = self.timeout_with_backoff(0);
            let Some(c) = self.conns.get_mut(&conn) else { return };
            let delivered = c.tcp.delivered_bytes();
            if let Some(ch) = c.chunks.as_mut() {
                // sync: chunks complete in order.
                let mut done = Vec::new();
                while delivered >= (ch.next + 1).saturating_mul(ch.size) {
                    let started = ch.offered.remove(&ch.next).unwrap_or(now);
                    done.push((started, ch.size));
                    ch.next += 1;
                }
                for (started, size) in done {
                    self.complete(CompletionKind::Chunk, started, now, size, 0);
                    self.instance_done(now);
                }
                return;
            }
            let Some(front) = c.resp.front_mut() else { return };
            if !front.arrived && ((front.nth == 0 && c.syn_seen) || delivered > c.base) {
                front.arrived = true;
                c.retry_at = None;
                c.backoff = 0;
                if front.sample_ok && front.retries == 0 {
                    self.rto.on_sample(now - front.started);
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
            match r.unit {
                Unit::Transfer => {
                    self.complete(CompletionKind::Transfer, r.started, now, r.bytes, r.retries);
                    self.instance_done(now);
                }
                Unit::Response => {
                    self.complete(CompletionKind::Response, r.started, now, r.bytes, r.retries);
                    self.instance_done(now);
                }
                Unit::Object { page } => {
                    self.complete(CompletionKind::Object, r.started, now, r.bytes, r.retries);
                    let mut page_done = None;
                    if let Some(p) = self.pages.get_mut(&page) {
                        p.remaining = p.remaining.saturating_sub(1);
                        p.bytes += r.bytes;
                        p.retries += r.retries;
                        if p.remaining == 0 {
                            page_done = Some((p.started, p.bytes, p.retries));
                        }
                    }
                    if let Some((started, bytes, retries)) = page_done {
                        self.pages.remove(&page);
                        self.complete(CompletionKind::Page, started, now, bytes, retries);
                        self.instance_done(now);
                    }
                    if !self.closed {
                        self.request_next_object(now, conn, page);
                    }
                }
            }
        }
    }

    fn on_reply(&mut self, now: Time, id: u32, bytes: u32) {
        let Some(q) = self.queries.remove(&id) else { return };
        self.query_timers.remove(&(q.retry_at, id));
        if q.retries == 0 {
            self.rto.on_sample(now - q.started);
        }
        self.own.delivered_bytes += bytes as u64;
        self.complete(CompletionKind::Query, q.started, now, q.bytes as u64, q.retries);
        self.instance_done(now);
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
            let timeout = self.timeout_with_backoff(backoff);
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
        while let Some(&(t, id)) = self.query_timers.first() {
            if t > now {
                break;
            }
            self.query_timers.pop_first();
            let size = self.request_size;
            let Some(q) = self.queries.get_mut(&id) else { continue };
            q.retries += 1;
            let backoff = q.retries;
            let bytes = q.bytes;
            let timeout = self.timeout_with_backoff(backoff);
            if let Some(q) = self.queries.get_mut(&id) {
                q.retry_at = now + timeout;
            }
            self.query_timers.insert((now + timeout, id));
            self.push_out(AppHeader::Query { id, bytes }, size);
        }
        // The schedule.
        while self.next_at.is_some_and(|t| t <= now) && self.more_instances() {
            self.start_instance(now);
        }
        if !self.more_instances() {
            self.next_at = None;
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
                if let (Some(t), Some(ch)) = (offered, c.chunks.as_mut()) {
                    // The segment holds the first byte of a chunk: remember its offer time.
                    let idx = seg.seq.saturating_sub(1).div_ceil(ch.size);
                    if idx >= ch.next && ch.offered.len() < 1024 {
                        ch.offered.entry(idx).or_insert(t);
                    }
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
        if self.next_at.is_some_and(|t| t <= now) {
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
        for (k, c) in self.conns.range_mut(cursor..) {
            if let Some(t) = c.tcp.poll_transmit(now) {
                found = Some((*k, t));
                break;
            }
        }
        if found.is_none() {
            for (k, c) in self.conns.range_mut(..cursor) {
                if let Some(t) = c.tcp.poll_transmit(now) {
                    found = Some((*k, t));
                    break;
                }
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
        let mut t = self.next_at;
        let mut take = |x: Option<Time>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |y: Time| y.min(x)));
            }
        };
        take(self.query_timers.first().map(|x| x.0));
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
        self.closed = true;
        self.next_at = None;
        self.query_timers.clear();
        self.queries.clear();
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
        s.finished = self.closed || self.instances.is_some_and(|n| self.completed >= n);
        s
    }
}
