//! The application schedule, shared by both backends: what an application does and when,
//! without any transport or clock of its own.
//!
//! The simulator's endpoints ([`crate::AppReceiver`], [`crate::AppSender`]) and the live
//! testbed's clients and servers on kernel sockets (`l4s-live`'s `apps` module) move the
//! bytes in their own way; this module decides, for both, everything that is not
//! transport:
//!
//! * [`Schedule`] (at the flow's destination, which consumes the data): when the next
//!   instance starts and what it consists of ([`Instance`]), the instances in progress
//!   (web pages, queries) and their [`Completion`]s, and what follows a completion;
//!   query timeouts and retries; sync chunk completions.
//! * [`ChunkSource`] (at a sync flow's source): chunk sizes, the pause after each chunk
//!   is acknowledged, drawn from the app's seeded [`Rng`], and the `count` of chunks.
//!
//! Both are sans-IO and clock-free: the caller passes the current time into every call and
//! asks when it next needs to be called ([`Schedule::poll_timeout`],
//! [`ChunkSource::next_offer`]), as for an [`l4s_transport::Endpoint`].
//!
//! ## Model
//!
//! Instances (transfers, requests, pages, queries) follow each other in one of two loops
//! (see [`crate::config`]): open loop, `repeat = D`, a new instance every D from the flow's
//! start whatever the previous ones are doing (an instance started late does not shift the
//! ones after it; several overdue instances start at once); closed loop, `think = D`
//! (default 0), the next instance D after the previous one completed. `count` bounds the
//! number of instances (default 1 without `repeat` or `think`, unbounded with either).
//!
//! * bulk: a new connection asking for `bytes`, the only request on it;
//! * request-response: a request for `response` bytes on the persistent connection (the
//!   last instance closes it) or on a new connection per request (`persistent = false`);
//! * web: a page of objects dealt round robin over `connections` new connections (at most
//!   one per object), each fetching its share in order, one request at a time, the last
//!   request on a connection closing it ([`next_object`]); a page completes with its last
//!   object;
//! * query: a query for a `response`-byte reply, retried after a timeout until answered;
//! * sync: no instances to start here: the source offers chunks ([`ChunkSource`]) and the
//!   destination completes them in order as their bytes arrive.
//!
//! A [`Completion`] runs from the instance's start (the first transmission of its request,
//! before the connection is opened when the instance opens one, so a new connection costs
//! the handshake's round trip) to the last byte of the unit delivered to the application;
//! a sync chunk runs from its offer at the source.
//!
//! Timeouts ([`DEFAULT_TIMEOUT`] says why 1 s, then adaptive): an RFC 6298 estimator over
//! request → first-answer samples (Karn's rule: only from requests sent once), doubled per
//! retry of the same request (RFC 6298 §5.5) up to [`MAX_TIMEOUT`].

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use l4s_core::{Dur, Rng, Time};
use l4s_transport::tcp::RttEstimator;

use crate::config::{AppConfig, AppKind};
use crate::header::{Completion, CompletionKind};

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

/// Chunks whose offer time arrived ahead of their completion that are remembered; later
/// ones complete timed from their last byte's arrival (bounds memory on a faulty path).
const MAX_OFFERED_CHUNKS: usize = 1024;

/// What a response on a connection is part of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// bulk: a whole transfer.
    Transfer,
    /// request-response: one exchange.
    Response,
    /// web: one object of page `page`.
    Object { page: u32 },
}

/// An instance to start now: what to ask for, on which connections.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Instance {
    /// bulk: ask for `bytes` on a new connection, the last request on it.
    Transfer { bytes: u64 },
    /// request-response: ask for `bytes`, on the persistent connection (opened if there is
    /// none) when `persistent`, else on a new connection. `close`: the last request on that
    /// connection.
    Response { bytes: u64, persistent: bool, close: bool },
    /// web: page `page`. One new connection per entry of `conns`, which holds the object
    /// sizes that connection fetches, in order, one request at a time ([`next_object`]),
    /// its objects timed as [`Unit::Object`] of this page.
    Page { page: u32, conns: Vec<VecDeque<u64>> },
    /// query: send query `id` asking for a reply of `bytes` payload bytes (a retry is
    /// asked for by [`Schedule::poll_query_retry`]).
    Query { id: u32, bytes: u32 },
}

/// The next object to request on a web connection whose remaining objects are `planned`:
/// its size, and whether it is the last request on the connection (`close`).
pub fn next_object(planned: &mut VecDeque<u64>) -> Option<(u64, bool)> {
    let b = planned.pop_front()?;
    Some((b, planned.is_empty()))
}

/// How instances follow each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loop {
    /// A new instance every D.
    Open(Dur),
    /// The next instance D after the previous one completed.
    Closed(Dur),
}

/// A web page in progress.
#[derive(Clone, Copy, Debug)]
struct Page {
    started: Time,
    remaining: usize,
    bytes: u64,
    retries: u32,
}

/// A query in progress.
#[derive(Clone, Copy, Debug)]
struct Qry {
    started: Time,
    bytes: u32,
    retries: u32,
    retry_at: Time,
}

/// The schedule of an application flow at its destination (see the module documentation).
///
/// Call [`Schedule::poll_start`] until it returns `None` whenever
/// [`Schedule::next_start`] is due and realise each [`Instance`]; report each unit whose
/// last byte arrived with [`Schedule::done`], query replies with [`Schedule::on_reply`],
/// sync chunks with [`Schedule::chunk_offered`] and [`Schedule::chunks_delivered`]; send
/// the retries [`Schedule::poll_query_retry`] asks for; collect the completions with
/// [`Schedule::drain_completions`].
#[derive(Clone, Debug)]
pub struct Schedule {
    kind: AppKind,
    lp: Loop,
    /// Instances to run: `None` = until the flow stops.
    instances: Option<u32>,
    /// No new instances (the flow stopped or the endpoint closed).
    stopped: bool,
    next_at: Option<Time>,
    started: u32,
    completed: u32,
    /// bulk: bytes per transfer; request-response: bytes per response.
    bytes: u64,
    persistent: bool,
    /// web: object sizes of a page, and the connections a page is fetched over.
    objects: Vec<u64>,
    connections: usize,
    pages: BTreeMap<u32, Page>,
    next_page: u32,
    /// query: reply payload bytes asked for.
    reply_bytes: u32,
    queries: BTreeMap<u32, Qry>,
    query_timers: BTreeSet<(Time, u32)>,
    next_query: u32,
    rto: RttEstimator,
    /// sync: chunk size, the index of the next chunk to complete, offer times known.
    chunk: u64,
    next_chunk: u64,
    chunk_offers: BTreeMap<u64, Time>,
    completions: Vec<Completion>,
}

impl Schedule {
    /// The schedule of the app described by `cfg` (validated by the caller), started at
    /// `now`: the first instance is due at `now` (none for sync).
    pub fn new(cfg: &AppConfig, now: Time) -> Schedule {
        let initial = cfg.timeout.unwrap_or(DEFAULT_TIMEOUT);
        let lp = match (cfg.repeat, cfg.think) {
            (Some(d), _) => Loop::Open(d),
            (None, t) => Loop::Closed(t.unwrap_or(Dur::ZERO)),
        };
        let objects = cfg.page_objects();
        Schedule {
            kind: cfg.kind,
            lp,
            instances: cfg.instances(),
            stopped: false,
            // sync: the source paces the chunks; nothing to start here.
            next_at: (cfg.kind != AppKind::Sync).then_some(now),
            started: 0,
            completed: 0,
            bytes: match cfg.kind {
                AppKind::Bulk => cfg.bytes.map_or(0, |s| s.0),
                _ => cfg.response.map_or(0, |s| s.0),
            },
            persistent: cfg.persistent.unwrap_or(true),
            connections: (cfg.connections.unwrap_or(6).max(1) as usize).min(objects.len()),
            objects,
            pages: BTreeMap::new(),
            next_page: 0,
            reply_bytes: cfg.response.map_or(256, |s| s.0) as u32,
            queries: BTreeMap::new(),
            query_timers: BTreeSet::new(),
            next_query: 0,
            rto: RttEstimator::new(initial, MIN_TIMEOUT.min(initial), MAX_TIMEOUT, Dur::from_millis(1)),
            chunk: cfg.chunk.map_or(1, |s| s.0.max(1)),
            next_chunk: 0,
            chunk_offers: BTreeMap::new(),
            completions: Vec::new(),
        }
    }

    /// When the next instance is due, if one is scheduled.
    pub fn next_start(&self) -> Option<Time> {
        self.next_at
    }

    /// The earliest of the next start and the next query retry.
    pub fn poll_timeout(&self) -> Option<Time> {
        match (self.next_at, self.next_query_retry()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn more(&self) -> bool {
        !self.stopped && self.instances.is_none_or(|n| self.started < n)
    }

    /// The instance to start now, if one is due; call again until `None` (an open loop
    /// that fell behind starts every overdue instance now).
    pub fn poll_start(&mut self, now: Time) -> Option<Instance> {
        let due = self.next_at.is_some_and(|t| t <= now) && self.more();
        if !due {
            if !self.more() {
                self.next_at = None;
            }
            return None;
        }
        let last = self.instances.is_some_and(|n| self.started + 1 >= n);
        let instance = match self.kind {
            AppKind::Bulk => Instance::Transfer { bytes: self.bytes },
            AppKind::RequestResponse => Instance::Response {
                bytes: self.bytes,
                persistent: self.persistent,
                // A request on its own connection is the last one there.
                close: last || !self.persistent,
            },
            AppKind::Web => {
                let page = self.next_page;
                self.next_page = self.next_page.wrapping_add(1);
                self.pages.insert(
                    page,
                    Page {
                        started: now,
                        remaining: self.objects.len(),
                        bytes: 0,
                        retries: 0,
                    },
                );
                // Objects are dealt round robin; each connection fetches its share in order.
                let m = self.connections;
                let mut conns = vec![VecDeque::new(); m];
                for (i, &b) in self.objects.iter().enumerate() {
                    conns[i % m].push_back(b);
                }
                Instance::Page { page, conns }
            }
            AppKind::Query => {
                let id = self.next_query;
                self.next_query = self.next_query.wrapping_add(1);
                let bytes = self.reply_bytes;
                let retry_at = now + self.timeout(0);
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
                Instance::Query { id, bytes }
            }
            // The source paces sync chunks: a sync schedule has no `next_at`, so it is never
            // due and starts no instances.
            AppKind::Sync => return None,
        };
        self.started += 1;
        // Open loop: the next start follows the schedule, not the (possibly late) call.
        let scheduled = self.next_at.unwrap_or(now).min(now);
        self.next_at = match self.lp {
            Loop::Open(d) if self.more() => Some(scheduled + d),
            _ => None,
        };
        Some(instance)
    }

    /// Start no more instances (the flow stopped); those under way go on: their responses
    /// and replies still complete them, and unanswered queries are still retried.
    pub fn stop(&mut self) {
        self.stopped = true;
        self.next_at = None;
    }

    /// As [`Schedule::stop`], and abandon the queries under way: no more retries, and a
    /// late reply completes nothing (the simulator's [`crate::AppReceiver`] on close).
    pub fn close(&mut self) {
        self.stop();
        self.query_timers.clear();
        self.queries.clear();
    }

    /// No new instances will start ([`Schedule::stop`] or [`Schedule::close`] was called).
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// The current request timeout before backoff (see [`DEFAULT_TIMEOUT`]).
    pub fn request_timeout(&self) -> Dur {
        self.rto.rto()
    }

    /// The timeout of a request or query after `backoff` retries.
    pub fn timeout(&self, backoff: u32) -> Dur {
        (self.rto.rto() * (1u64 << backoff.min(16))).min(MAX_TIMEOUT)
    }

    /// A request → first-answer sample of a request sent once (Karn) for the timeout.
    pub fn rtt_sample(&mut self, rtt: Dur) {
        self.rto.on_sample(rtt);
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

    fn instance_done(&mut self, now: Time) {
        self.completed += 1;
        if self.kind == AppKind::Sync {
            // The source paces the chunks; nothing to schedule here.
            return;
        }
        if let Loop::Closed(think) = self.lp {
            if self.more() && self.next_at.is_none() {
                self.next_at = Some(now + think);
            }
        }
    }

    /// The last byte of a response (of `unit`, asked for at `started`, `bytes` long, its
    /// request retried `retries` times) arrived at `now`: record its completion, the
    /// page's when it was a page's last object, and schedule the next instance after a
    /// completed one (closed loop). The caller asks for the connection's next web object
    /// ([`next_object`]) itself, unless the schedule [`Schedule::is_stopped`].
    pub fn done(&mut self, now: Time, unit: Unit, started: Time, bytes: u64, retries: u32) {
        match unit {
            Unit::Transfer => {
                self.complete(CompletionKind::Transfer, started, now, bytes, retries);
                self.instance_done(now);
            }
            Unit::Response => {
                self.complete(CompletionKind::Response, started, now, bytes, retries);
                self.instance_done(now);
            }
            Unit::Object { page } => {
                self.complete(CompletionKind::Object, started, now, bytes, retries);
                let mut page_done = None;
                if let Some(p) = self.pages.get_mut(&page) {
                    p.remaining = p.remaining.saturating_sub(1);
                    p.bytes += bytes;
                    p.retries += retries;
                    if p.remaining == 0 {
                        page_done = Some((p.started, p.bytes, p.retries));
                    }
                }
                if let Some((started, bytes, retries)) = page_done {
                    self.pages.remove(&page);
                    self.complete(CompletionKind::Page, started, now, bytes, retries);
                    self.instance_done(now);
                }
            }
        }
    }

    /// When the earliest unanswered query is due for a retry.
    pub fn next_query_retry(&self) -> Option<Time> {
        self.query_timers.first().map(|x| x.0)
    }

    /// A query whose retry is due at `now`: `(id, reply bytes)` to send again (call until
    /// `None`). Each retry doubles the query's timeout.
    pub fn poll_query_retry(&mut self, now: Time) -> Option<(u32, u32)> {
        while let Some(&(t, id)) = self.query_timers.first() {
            if t > now {
                return None;
            }
            self.query_timers.pop_first();
            let Some(q) = self.queries.get(&id) else { continue };
            let (retries, bytes) = (q.retries + 1, q.bytes);
            let retry_at = now + self.timeout(retries);
            if let Some(q) = self.queries.get_mut(&id) {
                q.retries = retries;
                q.retry_at = retry_at;
            }
            self.query_timers.insert((retry_at, id));
            return Some((id, bytes));
        }
        None
    }

    /// The reply to query `id` arrived at `now`: its completion (a duplicate or unknown
    /// reply is ignored). Returns the reply bytes the query asked for, if it was open.
    pub fn on_reply(&mut self, now: Time, id: u32) -> Option<u32> {
        let q = self.queries.remove(&id)?;
        self.query_timers.remove(&(q.retry_at, id));
        if q.retries == 0 {
            self.rto.on_sample(now - q.started);
        }
        self.complete(CompletionKind::Query, q.started, now, q.bytes as u64, q.retries);
        self.instance_done(now);
        Some(q.bytes)
    }

    /// sync: bytes per chunk.
    pub fn chunk_size(&self) -> u64 {
        self.chunk
    }

    /// sync: chunk `index` (from 0) was offered at the source at `at` (known from the
    /// framing that carries its first byte); its completion is timed from then.
    pub fn chunk_offered(&mut self, index: u64, at: Time) {
        if index >= self.next_chunk && self.chunk_offers.len() < MAX_OFFERED_CHUNKS {
            self.chunk_offers.entry(index).or_insert(at);
        }
    }

    /// sync: `delivered` bytes of chunk payload in all have arrived by `now`: complete the
    /// chunks that are whole, in order.
    pub fn chunks_delivered(&mut self, now: Time, delivered: u64) {
        while delivered >= (self.next_chunk + 1).saturating_mul(self.chunk) {
            let started = self.chunk_offers.remove(&self.next_chunk).unwrap_or(now);
            self.next_chunk += 1;
            let size = self.chunk;
            self.complete(CompletionKind::Chunk, started, now, size, 0);
            self.instance_done(now);
        }
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

    /// Every instance is complete, or none will start any more.
    pub fn finished(&self) -> bool {
        self.stopped || self.instances.is_some_and(|n| self.completed >= n)
    }
}

/// The chunks of a sync flow at its source: each of `chunk` bytes, the first offered at the
/// start, each next one `pause` (or a uniform draw in `[pause, pause_max]` from the app's
/// seeded [`Rng`]) after everything offered before was acknowledged, `count` in all
/// (default: until the flow stops).
#[derive(Clone, Debug)]
pub struct ChunkSource {
    chunk: u64,
    count: Option<u32>,
    pause: Dur,
    pause_max: Option<Dur>,
    rng: Rng,
    offered: u64,
    offered_bytes: u64,
    next: Option<Time>,
    closed: bool,
}

impl ChunkSource {
    /// The chunks of the sync app described by `cfg`, pauses drawn from `rng`; the first
    /// chunk is due at `now`.
    pub fn new(cfg: &AppConfig, rng: Rng, now: Time) -> ChunkSource {
        ChunkSource {
            chunk: cfg.chunk.map_or(0, |s| s.0),
            count: cfg.count,
            pause: cfg.pause.unwrap_or(Dur::ZERO),
            pause_max: cfg.pause_max,
            rng,
            offered: 0,
            offered_bytes: 0,
            next: Some(now),
            closed: false,
        }
    }

    /// When the next chunk is due, if it is scheduled (it is once the previous one was
    /// acknowledged).
    pub fn next_offer(&self) -> Option<Time> {
        self.next
    }

    /// The chunk to offer now, if one is due: its bytes.
    pub fn poll_offer(&mut self, now: Time) -> Option<u64> {
        if self.closed || self.next.is_none_or(|t| t > now) {
            return None;
        }
        self.offered += 1;
        self.offered_bytes += self.chunk;
        self.next = None;
        Some(self.chunk)
    }

    /// Every chunk of a bounded `count` was offered.
    pub fn all_offered(&self) -> bool {
        self.count.is_some_and(|n| self.offered >= n as u64)
    }

    /// Chunks offered so far.
    pub fn chunks_offered(&self) -> u64 {
        self.offered
    }

    /// Chunk bytes offered so far.
    pub fn offered_bytes(&self) -> u64 {
        self.offered_bytes
    }

    /// A chunk was offered and the next one waits for its acknowledgement.
    pub fn awaiting_ack(&self) -> bool {
        !self.closed && self.next.is_none() && !self.all_offered()
    }

    /// `acked` chunk bytes were acknowledged by `now`: once that is every byte offered,
    /// the next chunk is due after a pause.
    pub fn acked(&mut self, now: Time, acked: u64) {
        if self.awaiting_ack() && acked >= self.offered_bytes {
            let p = self.draw_pause();
            self.next = Some(now + p);
        }
    }

    fn draw_pause(&mut self) -> Dur {
        let lo = self.pause;
        match self.pause_max {
            Some(hi) if hi > lo => lo + Dur(self.rng.below(hi.0 - lo.0 + 1)),
            _ => lo,
        }
    }

    /// Offer no more chunks (the flow stopped).
    pub fn close(&mut self) {
        self.closed = true;
        self.next = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Size;

    fn ms(n: u64) -> Time {
        Time::from_millis(n)
    }

    #[test]
    fn open_loop_keeps_to_its_grid_and_count() {
        let mut c = AppConfig::new(AppKind::Bulk);
        c.bytes = Some(Size(1000));
        c.repeat = Some(Dur::from_millis(100));
        c.count = Some(3);
        let mut s = Schedule::new(&c, ms(0));
        assert_eq!(s.poll_start(ms(0)), Some(Instance::Transfer { bytes: 1000 }));
        assert_eq!(s.poll_start(ms(0)), None);
        assert_eq!(s.next_start(), Some(ms(100)));
        // Called late: two overdue instances start now, the grid is kept, the count ends it.
        assert!(s.poll_start(ms(250)).is_some());
        assert_eq!(s.next_start(), Some(ms(200)));
        assert!(s.poll_start(ms(250)).is_some());
        assert_eq!((s.poll_start(ms(250)), s.next_start(), s.started()), (None, None, 3));
    }

    #[test]
    fn closed_loop_thinks_after_a_completion_and_stop_ends_it() {
        let mut c = AppConfig::new(AppKind::RequestResponse);
        c.response = Some(Size(10));
        c.think = Some(Dur::from_millis(50));
        let mut s = Schedule::new(&c, ms(0));
        let i = s.poll_start(ms(0));
        assert_eq!(
            i,
            Some(Instance::Response {
                bytes: 10,
                persistent: true,
                close: false
            })
        );
        assert_eq!(s.next_start(), None);
        s.done(ms(20), Unit::Response, ms(0), 10, 0);
        assert_eq!(s.next_start(), Some(ms(70)));
        let mut out = Vec::new();
        s.drain_completions(&mut out);
        assert_eq!(
            (out.len(), out[0].what, out[0].duration()),
            (1, CompletionKind::Response, Dur::from_millis(20))
        );
        s.stop();
        assert_eq!((s.poll_start(ms(70)), s.next_start()), (None, None));
    }

    #[test]
    fn web_pages_deal_objects_round_robin_and_complete_with_the_last() {
        let mut c = AppConfig::new(AppKind::Web);
        c.object_sizes = Some(vec![Size(1), Size(2), Size(3)]);
        c.connections = Some(2);
        let mut s = Schedule::new(&c, ms(0));
        let Some(Instance::Page { page, mut conns }) = s.poll_start(ms(0)) else {
            panic!()
        };
        assert_eq!(conns, vec![VecDeque::from([1, 3]), VecDeque::from([2])]);
        assert_eq!(next_object(&mut conns[0]), Some((1, false)));
        assert_eq!(next_object(&mut conns[0]), Some((3, true)));
        assert_eq!(next_object(&mut conns[1]), Some((2, true)));
        for (b, t) in [(1, 5), (2, 6), (3, 9)] {
            s.done(ms(t), Unit::Object { page }, ms(0), b, 1);
        }
        let mut out = Vec::new();
        s.drain_completions(&mut out);
        let last = out.last().unwrap();
        assert_eq!(
            (out.len(), last.what, last.bytes, last.retries),
            (4, CompletionKind::Page, 6, 3)
        );
        assert!(s.finished());
    }

    #[test]
    fn queries_back_off_and_complete_with_their_retries() {
        let mut c = AppConfig::new(AppKind::Query);
        c.timeout = Some(Dur::from_millis(100));
        let mut s = Schedule::new(&c, ms(0));
        assert_eq!(s.poll_start(ms(0)), Some(Instance::Query { id: 0, bytes: 256 }));
        assert_eq!(s.next_query_retry(), Some(ms(100)));
        assert_eq!(s.poll_query_retry(ms(99)), None);
        assert_eq!(s.poll_query_retry(ms(100)), Some((0, 256)));
        assert_eq!(s.next_query_retry(), Some(ms(300)));
        assert_eq!(s.on_reply(ms(310), 0), Some(256));
        assert_eq!(s.on_reply(ms(311), 0), None);
        let mut out = Vec::new();
        s.drain_completions(&mut out);
        assert_eq!((out.len(), out[0].retries), (1, 1));
        // Karn: no sample from a retried query.
        assert_eq!(s.request_timeout(), Dur::from_millis(100));
    }

    #[test]
    fn chunks_pause_after_the_ack_and_complete_in_order() {
        let mut c = AppConfig::new(AppKind::Sync);
        c.chunk = Some(Size(100));
        c.pause = Some(Dur::from_millis(10));
        c.count = Some(2);
        let mut src = ChunkSource::new(&c, Rng::new(1), ms(0));
        assert_eq!(src.poll_offer(ms(0)), Some(100));
        src.acked(ms(5), 99);
        assert_eq!(src.next_offer(), None);
        src.acked(ms(6), 100);
        assert_eq!(src.next_offer(), Some(ms(16)));
        assert_eq!(src.poll_offer(ms(16)), Some(100));
        assert!(src.all_offered() && !src.awaiting_ack());

        let mut s = Schedule::new(&c, ms(0));
        assert_eq!(s.poll_start(ms(0)), None);
        s.chunk_offered(0, ms(0));
        s.chunk_offered(1, ms(16));
        s.chunks_delivered(ms(3), 150);
        s.chunks_delivered(ms(20), 200);
        let mut out = Vec::new();
        s.drain_completions(&mut out);
        let t: Vec<(Time, Time)> = out.iter().map(|c| (c.started, c.completed)).collect();
        assert_eq!(t, vec![(ms(0), ms(3)), (ms(16), ms(20))]);
        assert!(s.finished());
    }
}
