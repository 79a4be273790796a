//! [`AppSender`]: the data source of an application flow (the server of a download, the
//! uploader of a sync), at the flow's source node.

use std::collections::{BTreeMap, VecDeque};

use l4s_core::{Dur, Ecn, Rng, Time};
use l4s_transport::tcp::{TcpConfig, TcpSender};
use l4s_transport::{EcnValidation, Endpoint, EndpointStats, Transmit};

use crate::config::{AppConfig, AppKind, MAX_UDP_PAYLOAD, MIN_FRAME, UDP_OVERHEAD};
use crate::conns::Conns;
use crate::header::AppHeader;
use crate::schedule::ChunkSource;
use crate::stats::{add_counters, SeenIds};

/// Requests held for a connection ahead of an earlier one that has not arrived (a lost or
/// reordered request); more are dropped (bounds memory against a faulty path) and come
/// back as retries.
const MAX_EARLY_REQUESTS: usize = 1024;
/// Replies waiting to be sent; more queries are dropped (a server under overload).
const MAX_PENDING_REPLIES: usize = 4096;
/// Unknown connections for which requests with `nth > 0` are held until their `nth = 0`
/// request opens them; the oldest is forgotten beyond this (it was a stale duplicate, or
/// comes back as a retry).
const MAX_UNOPENED: usize = 256;

/// One TCP connection of the source.
struct SrcConn {
    tcp: TcpSender,
    /// Next request position to serve; requests are served in `nth` order.
    next_nth: u32,
    /// Requests that arrived ahead of `next_nth`: nth → (bytes, close).
    early: BTreeMap<u32, (u64, bool)>,
    /// sync: first sequence number of each chunk not yet acknowledged and its offer time.
    marks: VecDeque<(u64, Time)>,
}

impl SrcConn {
    fn new(cfg: &AppConfig, now: Time) -> Result<SrcConn, String> {
        let tcp_cfg = TcpConfig {
            bytes: Some(0),
            ..cfg.tcp.clone()
        };
        let mut tcp = TcpSender::new(tcp_cfg, cfg.build_cc()?, now);
        tcp.set_persistent(true);
        Ok(SrcConn {
            tcp,
            next_nth: 0,
            early: BTreeMap::new(),
            marks: VecDeque::new(),
        })
    }

    /// Serve the request at `next_nth` and those held behind it. Returns the number served.
    fn serve(&mut self, nth: u32, bytes: u64, close: bool) -> u64 {
        if nth < self.next_nth || self.early.contains_key(&nth) {
            return 0;
        }
        if nth > self.next_nth {
            if self.early.len() < MAX_EARLY_REQUESTS {
                self.early.insert(nth, (bytes, close));
            }
            return 0;
        }
        let mut served = 0;
        let (mut bytes, mut close) = (bytes, close);
        loop {
            self.tcp.offer(bytes);
            self.next_nth += 1;
            served += 1;
            if close {
                // "Connection: close": finished once everything offered is acknowledged.
                self.tcp.set_persistent(false);
            }
            match self.early.remove(&self.next_nth) {
                Some((b, c)) => (bytes, close) = (b, c),
                None => break,
            }
        }
        served
    }
}

/// The source of an application flow. It serves requests (bulk, request-response, web:
/// each request's response on its connection, opening the connection with the request
/// that has `nth = 0`), answers queries, and drives sync chunks itself (a
/// [`ChunkSource`]). It needs no knowledge of the request schedule: the
/// [`crate::AppReceiver`] at the destination issues the requests.
pub struct AppSender {
    cfg: AppConfig,
    ecn: Ecn,
    conns: Conns<SrcConn>,
    /// Requests for connections not open yet with `nth > 0`, held for the `nth = 0` one.
    unopened: VecDeque<(u32, u32, u64, bool)>,
    /// Connection to poll first (round robin across connections).
    cursor: u32,
    replies: VecDeque<(u32, u32)>,
    closed: bool,
    /// Requests served (distinct) and query ids seen (distinct), for `finished`.
    served: u64,
    queries_seen: SeenIds,
    /// Requests (or queries) the whole schedule issues, if finite.
    expected: Option<u64>,
    /// sync: the chunks and the pauses between them.
    source: Option<ChunkSource>,
    /// Counters of connections already removed, and of replies.
    gone: EndpointStats,
    own: EndpointStats,
    /// ECN validation: the first failure on any connection, else the first connection's.
    first_validation: Option<EcnValidation>,
    failure: Option<EcnValidation>,
    first_mode: &'static str,
    last_rtt: Option<Dur>,
    /// cwnd/srtt/pacing/alpha shown when no connection is open (of the last busy one).
    shown: EndpointStats,
}

impl AppSender {
    /// The source of the app described by `cfg` (validated by the caller), started at `now`.
    /// The random source (sync pauses) is seeded from `cfg.seed`.
    pub fn new(cfg: &AppConfig, now: Time) -> Result<AppSender, String> {
        AppSender::with_rng(cfg, now, Rng::new(cfg.seed))
    }

    /// As [`AppSender::new`] with the caller's random source.
    pub fn with_rng(cfg: &AppConfig, now: Time, rng: Rng) -> Result<AppSender, String> {
        // Build one controller now, so that a bad name fails here and not at the first request.
        cfg.build_cc()?;
        let per_instance = match cfg.kind {
            AppKind::Web => cfg.page_objects().len() as u64,
            _ => 1,
        };
        let mut s = AppSender {
            cfg: cfg.clone(),
            ecn: cfg.nominal_ecn(),
            conns: Conns::default(),
            unopened: VecDeque::new(),
            cursor: 0,
            replies: VecDeque::new(),
            closed: false,
            served: 0,
            queries_seen: SeenIds::default(),
            expected: cfg.instances().map(|n| n as u64 * per_instance),
            source: None,
            gone: EndpointStats::default(),
            own: EndpointStats::default(),
            first_validation: None,
            failure: None,
            first_mode: "none",
            last_rtt: None,
            shown: EndpointStats::default(),
        };
        if cfg.kind == AppKind::Sync {
            s.conns.insert(0, SrcConn::new(cfg, now)?);
            s.source = Some(ChunkSource::new(cfg, rng, now));
            s.offer_chunk(now);
        }
        Ok(s)
    }

    /// Open connections (for tests and inspection).
    pub fn open_connections(&self) -> usize {
        self.conns.len()
    }

    /// The TCP sender of connection `conn`, if open.
    pub fn connection(&self, conn: u32) -> Option<&TcpSender> {
        self.conns.get(&conn).map(|c| &c.tcp)
    }

    /// sync: chunks offered so far.
    pub fn chunks_offered(&self) -> u64 {
        self.source.as_ref().map_or(0, |s| s.chunks_offered())
    }

    /// sync: offer the chunk that is due on connection 0, marking its first byte.
    fn offer_chunk(&mut self, now: Time) {
        let (Some(c), Some(src)) = (self.conns.get_mut(&0), self.source.as_mut()) else {
            return;
        };
        let first = 1 + src.offered_bytes();
        let Some(chunk) = src.poll_offer(now) else { return };
        c.marks.push_back((first, now));
        c.tcp.offer(chunk);
        if src.all_offered() {
            c.tcp.set_persistent(false);
        }
    }

    /// sync: once the chunk offered last is acknowledged, the next is due after a pause.
    fn sync_progress(&mut self, now: Time) {
        let (Some(c), Some(src)) = (self.conns.get(&0), self.source.as_mut()) else {
            return;
        };
        src.acked(now, c.tcp.acked_bytes());
    }

    fn on_request(&mut self, now: Time, conn: u32, nth: u32, bytes: u64, close: bool) -> Result<(), String> {
        if self.closed || !matches!(self.cfg.kind, AppKind::Bulk | AppKind::RequestResponse | AppKind::Web) {
            return Ok(());
        }
        if !self.conns.contains_key(&conn) {
            if nth > 0 {
                // The request that opens the connection has not arrived: hold this one.
                if !self.unopened.iter().any(|r| r.0 == conn && r.1 == nth) {
                    if self.unopened.len() >= MAX_UNOPENED {
                        self.unopened.pop_front();
                    }
                    self.unopened.push_back((conn, nth, bytes, close));
                }
                return Ok(());
            }
            let mut c = SrcConn::new(&self.cfg, now)?;
            // Requests held for this connection.
            let mut k = 0;
            while k < self.unopened.len() {
                if self.unopened[k].0 == conn {
                    if let Some((_, n, b, cl)) = self.unopened.remove(k) {
                        c.early.insert(n, (b, cl));
                    }
                } else {
                    k += 1;
                }
            }
            self.conns.insert(conn, c);
        }
        if let Some(c) = self.conns.get_mut(&conn) {
            self.served += c.serve(nth, bytes, close);
        }
        Ok(())
    }

    fn remove(&mut self, conn: u32) {
        if let Some(c) = self.conns.remove(&conn) {
            self.note(&c.tcp);
            let cs = c.tcp.stats();
            add_counters(&mut self.gone, &cs);
            self.shown = cs;
        }
    }

    fn note(&mut self, tcp: &TcpSender) {
        let v = tcp.ecn_validation();
        if self.first_validation.is_none() && v != EcnValidation::NotApplicable {
            self.first_validation = Some(v);
        }
        if self.failure.is_none() && v.is_failed() {
            self.failure = Some(v);
        }
    }

    /// Remove finished connections (non-persistent, everything acknowledged).
    fn gc(&mut self) {
        let done: Vec<u32> = self
            .conns
            .iter()
            .filter(|(_, c)| c.tcp.stats().finished && c.early.is_empty())
            .map(|(k, _)| *k)
            .collect();
        for k in done {
            self.remove(k);
        }
    }

    fn wrap(&mut self, conn: u32, t: Transmit<l4s_transport::tcp::TcpSegment>) -> Transmit<AppHeader> {
        let mut offered = None;
        if t.header.len > 0 {
            if let Some(c) = self.conns.get_mut(&conn) {
                let acked = 1 + c.tcp.acked_bytes();
                while c.marks.front().is_some_and(|m| m.0 < acked) {
                    c.marks.pop_front();
                }
                let (s, e) = (t.header.seq, t.header.seq + t.header.len as u64);
                offered = c.marks.iter().find(|m| m.0 >= s && m.0 < e).map(|m| m.1);
            }
        }
        Transmit {
            header: AppHeader::Tcp {
                conn,
                seg: t.header,
                offered,
            },
            size: t.size,
            ecn: t.ecn,
        }
    }
}

impl Endpoint for AppSender {
    type Header = AppHeader;

    fn handle_packet(&mut self, now: Time, header: &AppHeader, size: u32, ecn: Ecn) {
        self.own.received_packets += 1;
        match *header {
            AppHeader::Tcp { conn, ref seg, .. } => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.tcp.handle_packet(now, seg, size, ecn);
                    if let Some(r) = c.tcp.take_rtt_sample() {
                        self.last_rtt = Some(r);
                    }
                    if c.tcp.ecn_validation().is_failed() && self.failure.is_none() {
                        self.failure = Some(c.tcp.ecn_validation());
                    }
                }
                self.sync_progress(now);
            }
            AppHeader::Request {
                conn,
                nth,
                bytes,
                close,
                ..
            } => {
                // A controller that cannot be built was rejected in `new`.
                let _ = self.on_request(now, conn, nth, bytes, close);
            }
            AppHeader::Reset { conn } => self.remove(conn),
            AppHeader::Query { id, bytes } => {
                if !self.closed && self.cfg.kind == AppKind::Query && self.replies.len() < MAX_PENDING_REPLIES {
                    self.queries_seen.insert(id);
                    // A DNS server answers every copy of a query (it keeps no state).
                    self.replies.push_back((id, bytes.min(MAX_UDP_PAYLOAD as u32)));
                }
            }
            AppHeader::Reply { .. } => {}
        }
        self.gc();
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit<AppHeader>> {
        if let Some((id, bytes)) = self.replies.pop_front() {
            let size = (UDP_OVERHEAD + bytes).max(MIN_FRAME);
            self.own.sent_packets += 1;
            self.own.sent_bytes += size as u64;
            return Some(Transmit {
                header: AppHeader::Reply { id, bytes },
                size,
                ecn: self.ecn,
            });
        }
        if self.conns.is_empty() {
            return None;
        }
        // Round robin: from the cursor to the end, then from the start.
        let cursor = self.cursor;
        let mut found = None;
        for (k, c) in self.conns.round_robin_mut(cursor) {
            if let Some(t) = c.tcp.poll_transmit(now) {
                found = Some((k, t));
                break;
            }
        }
        let (k, t) = found?;
        if self.first_mode == "none" {
            self.first_mode = self.conns.get(&k).map_or("none", |c| c.tcp.ecn_mode().name());
        }
        self.cursor = k.wrapping_add(1);
        Some(self.wrap(k, t))
    }

    fn poll_timeout(&self) -> Option<Time> {
        let mut t = self.source.as_ref().and_then(|s| s.next_offer());
        for c in self.conns.values() {
            if let Some(x) = c.tcp.poll_timeout() {
                t = Some(t.map_or(x, |y| y.min(x)));
            }
        }
        t
    }

    fn handle_timeout(&mut self, now: Time) {
        for c in self.conns.values_mut() {
            if c.tcp.poll_timeout().is_some_and(|t| t <= now) {
                c.tcp.handle_timeout(now);
            }
        }
        self.offer_chunk(now);
        self.gc();
    }

    fn close(&mut self, now: Time) {
        self.closed = true;
        if let Some(src) = self.source.as_mut() {
            src.close();
        }
        self.replies.clear();
        self.unopened.clear();
        for c in self.conns.values_mut() {
            c.tcp.close(now);
            c.early.clear();
        }
        self.gc();
    }

    fn stats(&self) -> EndpointStats {
        let mut s = self.gone;
        add_counters(&mut s, &self.own);
        let mut busiest: Option<(u64, EndpointStats, EcnValidation)> = None;
        let mut first_validation = self.first_validation;
        for c in self.conns.values() {
            let cs = c.tcp.stats();
            add_counters(&mut s, &cs);
            let v = c.tcp.ecn_validation();
            if first_validation.is_none() && v != EcnValidation::NotApplicable {
                first_validation = Some(v);
            }
            let bif = c.tcp.bytes_in_flight();
            if busiest.as_ref().is_none_or(|b| bif > b.0) {
                busiest = Some((bif, cs, v));
            }
        }
        let shown = busiest.map_or(self.shown, |b| b.1);
        s.cwnd = shown.cwnd;
        s.srtt = shown.srtt;
        s.pacing_rate = shown.pacing_rate;
        s.alpha = shown.alpha;
        s.ecn_mode = if self.first_mode != "none" {
            self.first_mode
        } else {
            shown.ecn_mode
        };
        if s.ecn_mode.is_empty() {
            s.ecn_mode = "none";
        }
        s.ecn_validation = self.failure.or(first_validation).unwrap_or_default();
        let schedule_done = match self.cfg.kind {
            AppKind::Sync => self.source.as_ref().is_some_and(|s| s.all_offered()),
            AppKind::Query => self.expected.is_some_and(|n| self.queries_seen.count() >= n),
            _ => self.expected.is_some_and(|n| self.served >= n),
        };
        s.finished = (self.closed || schedule_done)
            && self.replies.is_empty()
            && self.conns.values().all(|c| c.tcp.stats().finished);
        s
    }

    fn take_rtt_sample(&mut self) -> Option<Dur> {
        self.last_rtt.take()
    }
}
