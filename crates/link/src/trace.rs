//! A trace-driven link: capacity as a list of delivery opportunities, in the format and
//! with the semantics of Mahimahi's `mm-link` (Netravali et al., USENIX ATC 2015;
//! `src/frontend/link_queue.cc` of ravinet/mahimahi).
//!
//! ```text
//!   port 0 ──▶ [fault] ──▶ [queue discipline] ──▶ delivery opportunities (trace) ──▶ delay line ──▶ port 1
//! ```
//!
//! **The trace** ([`Trace`]): one integer per line, a time in milliseconds from the start of
//! the trace; each line is one chance to move [`OPPORTUNITY_BYTES`] off the queue, and a
//! time repeated on several lines gives several chances in that millisecond. Times never
//! decrease and the last one is above zero. A trace of the single line `1` is one full
//! packet per millisecond: 12 Mbit/s of 1500-byte IP packets.
//!
//! **Service**, as `LinkQueue::rationalize` does it:
//! * at each opportunity time up to [`OPPORTUNITY_BYTES`] are taken from the packet at the
//!   head of the line (dequeued from the queue discipline when the opportunity reaches it);
//! * bytes of an opportunity that the packet did not need carry the next packet on, in the
//!   same opportunity; a packet larger than one opportunity spans several;
//! * a packet leaves at the time of the opportunity that completes it, then takes the
//!   link's propagation delay;
//! * an opportunity that finds the queue empty is lost: it does not accumulate, and a
//!   packet that arrives at an opportunity's time (or after it) waits for the next one
//!   (mm-link serves the opportunities up to now before it enqueues an arrival);
//! * at the end of the trace it starts again, shifted by the trace's last time.
//!
//! Bytes are counted as Mahimahi counts them, the IP datagram as read from its TUN device:
//! a packet's [`l4s_core::QueuePacket::wire_len`] less the Ethernet header
//! ([`l4s_core::ETH_HEADER`]).
//!
//! The link reports as busy, for the utilisation, the share of each opportunity's time it
//! used (an opportunity lasts from the previous distinct time in the trace to its own,
//! split evenly among the opportunities at that time), as its rate the trace's mean, and
//! as its rate at a time the capacity of the [`CAPACITY_WINDOW`] before it.
//! A real-time driver woken late serves every opportunity that has passed, in order, as
//! mm-link does when its event loop was held up.

use crate::stage::{apply_fault, DelayLine, Origin, Queue};
use crate::{Departure, Fault, Io, Link, LinkPacket, LinkStats, Port, QueueInfo, Timer};
use l4s_aqm::{AqmConfig, QueueId, QueueStats};
use l4s_core::{Dur, Rate, Rng, Time, ETH_HEADER};
use std::io::BufRead;
use std::sync::Arc;

/// Bytes one delivery opportunity moves: mm-link's `PACKET_SIZE`, the largest TUN payload
/// (a 1500-byte IP packet and four bytes more, which carry the start of the next packet).
pub const OPPORTUNITY_BYTES: u32 = 1504;

/// Most opportunities a trace may hold (4 bytes each in memory, 256 MiB in all; a file of
/// about 600 MB). Mahimahi's longest shipped traces hold a few million.
pub const MAX_OPPORTUNITIES: usize = 64 << 20;

/// The window over which [`Link::rate_at`] reports the capacity of a trace.
pub const CAPACITY_WINDOW: Dur = Dur::from_millis(100);

/// The next delivery opportunity is due.
pub const OPPORTUNITY: Timer = 0;
/// The head of the delay line reaches port 1.
pub const ARRIVE: Timer = 1;
/// The queue discipline's timer.
pub const QDISC: Timer = 2;

/// A capacity trace: delivery opportunity times in milliseconds, not decreasing, the last
/// one above zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    ms: Vec<u32>,
}

/// Why a trace could not be read: the line (1-based, when it is about one) and what was
/// expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub line: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "line {l}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for TraceError {}

impl Trace {
    /// A trace from its opportunity times (checked as a file's are).
    pub fn new(ms: Vec<u32>) -> Result<Trace, TraceError> {
        let err = |line: Option<usize>, m: &str| TraceError {
            line,
            message: m.to_string(),
        };
        if ms.is_empty() {
            return Err(err(
                None,
                "no delivery opportunities: expected one time in milliseconds per line",
            ));
        }
        if ms.len() > MAX_OPPORTUNITIES {
            return Err(err(
                None,
                &format!("more than {MAX_OPPORTUNITIES} delivery opportunities"),
            ));
        }
        if let Some(i) = ms.windows(2).position(|w| w[1] < w[0]) {
            return Err(err(
                Some(i + 2),
                &format!(
                    "{} is before the previous time, {}: times must not decrease",
                    ms[i + 1],
                    ms[i]
                ),
            ));
        }
        if ms[ms.len() - 1] == 0 {
            return Err(err(
                Some(ms.len()),
                "the last time is 0: a trace must last a nonzero number of milliseconds",
            ));
        }
        Ok(Trace { ms })
    }

    /// Read a trace in Mahimahi's format, line by line (a file is never held whole in
    /// memory; its opportunities take 4 bytes each). Blank lines are refused, as mm-link
    /// refuses them.
    pub fn read(r: impl BufRead) -> Result<Trace, TraceError> {
        let mut ms = Vec::new();
        for (i, line) in r.lines().enumerate() {
            let line = line.map_err(|e| TraceError {
                line: Some(i + 1),
                message: format!("cannot read: {e}"),
            })?;
            let t = line.trim();
            let v: u32 = t.parse().map_err(|_| TraceError {
                line: Some(i + 1),
                message: if t.is_empty() {
                    "an empty line: expected a time in milliseconds".into()
                } else {
                    format!("{t:?} is not a time in whole milliseconds")
                },
            })?;
            if ms.len() == MAX_OPPORTUNITIES {
                return Err(TraceError {
                    line: Some(i + 1),
                    message: format!("more than {MAX_OPPORTUNITIES} delivery opportunities"),
                });
            }
            ms.push(v);
        }
        Trace::new(ms)
    }

    /// The opportunity times, in milliseconds.
    pub fn times_ms(&self) -> &[u32] {
        &self.ms
    }

    /// The trace's length: its last time, after which it starts again.
    pub fn period(&self) -> Dur {
        Dur::from_millis(self.period_ms())
    }

    fn period_ms(&self) -> u64 {
        u64::from(self.ms[self.ms.len() - 1])
    }

    /// Mean capacity over one period, in bytes of IP packets.
    pub fn mean_rate(&self) -> Rate {
        let bits = self.ms.len() as u64 * u64::from(OPPORTUNITY_BYTES) * 8;
        Rate::bps(bits * 1000 / self.period_ms())
    }

    /// Opportunities at or before `t_ms` from the start, the trace looping.
    pub(crate) fn count_upto(&self, t_ms: u64) -> u64 {
        let p = self.period_ms();
        let lp = t_ms / p;
        let within = t_ms - lp * p;
        lp * self.ms.len() as u64 + self.ms.partition_point(|&m| u64::from(m) <= within) as u64
    }

    /// The opportunities at exactly `m` ms from the start (the trace looping), and the time
    /// they stand for together (from the previous distinct time in the trace to `m`).
    pub(crate) fn at_ms(&self, m: u64) -> (u64, Dur) {
        let before = if m == 0 { 0 } else { self.count_upto(m - 1) };
        let n = self.count_upto(m) - before;
        if n == 0 {
            return (0, Dur::ZERO);
        }
        let i = (before % self.ms.len() as u64) as usize;
        (n, Dur(self.opportunity_time(i).as_nanos() * n))
    }

    /// The capacity the trace offers in the `window` before `t` (from its start), as a rate
    /// of IP bytes: how the capacity moves over time, for monitoring.
    pub fn capacity_before(&self, t: Dur, window: Dur) -> Rate {
        let t_ms = t.as_nanos() / 1_000_000;
        let w_ms = (window.as_nanos() / 1_000_000).clamp(1, t_ms.max(1));
        let n = self.count_upto(t_ms) - self.count_upto(t_ms.saturating_sub(w_ms));
        Rate::bps(n * u64::from(OPPORTUNITY_BYTES) * 8 * 1000 / w_ms)
    }

    /// Index and loop of the first opportunity strictly after `t` ms from the start.
    fn first_after(&self, t_ms: u64) -> (usize, u64) {
        let p = self.period_ms();
        let lp = t_ms / p;
        let within = t_ms - lp * p;
        let i = self.ms.partition_point(|&m| u64::from(m) <= within);
        if i == self.ms.len() {
            (0, lp + 1)
        } else {
            (i, lp)
        }
    }

    /// The time one opportunity stands for: from the previous distinct time in the trace
    /// to its own, shared among the opportunities at its time.
    fn opportunity_time(&self, i: usize) -> Dur {
        let t = self.ms[i];
        let lo = self.ms.partition_point(|&m| m < t);
        let hi = self.ms.partition_point(|&m| m <= t);
        let prev = if lo == 0 { 0 } else { self.ms[lo - 1] };
        Dur(u64::from(t - prev) * 1_000_000 / (hi - lo) as u64)
    }
}

/// One direction of a trace-driven link; see the module documentation.
pub struct TraceLink<P> {
    trace: Arc<Trace>,
    delay: Dur,
    fault: Option<Fault>,
    queue: Queue<P>,
    /// Time 0 of the run (the trace starts there), once known.
    origin: Origin,
    /// The next opportunity: its index and its loop of the trace.
    next: (usize, u64),
    /// The packet being carried: bytes still to move, the opportunity that took it from the
    /// queue, its departure facts, and the link time it used so far.
    tx: Option<InTransit<P>>,
    /// The opportunity time a wake-up was asked for.
    armed: Option<Time>,
    line: DelayLine<P>,
    stats: LinkStats,
}

struct InTransit<P> {
    pkt: P,
    left: u32,
    start: Time,
    sub: QueueId,
    sojourn: Dur,
    marked: bool,
    busy: Dur,
}

impl<P: LinkPacket + 'static> TraceLink<P> {
    /// A trace-driven link with the given trace, propagation delay, queue and fault; `rng`
    /// seeds the queue discipline.
    pub fn new(trace: Arc<Trace>, delay: Dur, aqm: &AqmConfig, fault: Option<Fault>, rng: Rng) -> TraceLink<P> {
        TraceLink {
            trace,
            delay,
            fault,
            queue: Queue::new(aqm, rng),
            origin: Origin::default(),
            next: (0, 0),
            tx: None,
            armed: None,
            line: DelayLine::default(),
            stats: LinkStats::default(),
        }
    }

    fn origin(&self) -> Time {
        self.origin.get()
    }

    fn at(&self, (i, lp): (usize, u64)) -> Time {
        let ms = lp * self.trace.period_ms() + u64::from(self.trace.ms[i]);
        self.origin() + Dur::from_millis(ms)
    }

    fn advance(&mut self) {
        let (i, lp) = self.next;
        self.next = if i + 1 == self.trace.ms.len() {
            (0, lp + 1)
        } else {
            (i + 1, lp)
        };
    }

    /// Serve every opportunity up to `now` in order (an idle link skips them: they are
    /// lost), then ask for the next one if there is anything to carry.
    fn rationalize(&mut self, io: &mut Io<'_, P>) {
        let now = io.now;
        loop {
            let t = self.at(self.next);
            if t > now {
                break;
            }
            if self.tx.is_none() && self.queue.qdisc.len_packets() == 0 {
                let since = now.since(self.origin()).as_nanos() / 1_000_000;
                self.next = self.trace.first_after(since);
                break;
            }
            let i = self.next.0;
            self.advance();
            self.serve(t, i, io);
        }
        self.queue.flush_drops(io);
        self.queue.arm(io, QDISC);
        if self.tx.is_some() || self.queue.qdisc.len_packets() > 0 {
            let t = self.at(self.next);
            if self.armed != Some(t) {
                self.armed = Some(t);
                io.wake(OPPORTUNITY, t);
            }
        }
    }

    /// One opportunity at `t` (trace index `i`): move up to [`OPPORTUNITY_BYTES`].
    fn serve(&mut self, t: Time, i: usize, io: &mut Io<'_, P>) {
        let slot = self.trace.opportunity_time(i);
        let mut budget = OPPORTUNITY_BYTES;
        while budget > 0 {
            if self.tx.is_none() {
                let Some(d) = self.queue.qdisc.dequeue(io.now, &mut self.queue.drops) else {
                    return;
                };
                let bytes = d.pkt.wire_len().saturating_sub(ETH_HEADER).max(1);
                self.tx = Some(InTransit {
                    pkt: d.pkt,
                    left: bytes,
                    start: t,
                    sub: d.queue,
                    sojourn: d.sojourn,
                    marked: d.marked,
                    busy: Dur::ZERO,
                });
            }
            let Some(tx) = self.tx.as_mut() else { return };
            let n = budget.min(tx.left);
            tx.left -= n;
            budget -= n;
            tx.busy += Dur(slot.as_nanos() * u64::from(n) / u64::from(OPPORTUNITY_BYTES));
            if tx.left == 0 {
                let Some(tx) = self.tx.take() else { return };
                io.departed(&Departure {
                    pkt: &tx.pkt,
                    queue: 0,
                    sub: tx.sub,
                    sojourn: tx.sojourn,
                    start: tx.start,
                    serialisation: tx.busy,
                    marked: tx.marked,
                });
                self.line.push(tx.pkt, t + self.delay, io, ARRIVE);
            }
        }
    }
}

impl<P: LinkPacket + 'static> Link<P> for TraceLink<P> {
    fn ports(&self) -> usize {
        2
    }

    fn start(&mut self, origin: Time, io: &mut Io<'_, P>) {
        self.origin.start(origin);
        let since = io.now.as_nanos().saturating_sub(origin.as_nanos()) / 1_000_000;
        self.next = if io.now < origin {
            (0, 0)
        } else {
            self.trace.first_after(since)
        };
        self.armed = None;
        self.rationalize(io);
    }

    fn send(&mut self, _from: Port, _to: Port, mut pkt: P, io: &mut Io<'_, P>) {
        // Before the start the trace runs from the first packet ([`Origin`]).
        self.origin.provisional(io.now);
        // mm-link serves the opportunities up to now before it takes an arrival.
        self.rationalize(io);
        apply_fault(self.fault, self.origin.started(), io.now, &mut pkt);
        self.queue.enqueue(pkt, io);
        self.queue.qdisc.drain_enqueue_drops(&mut self.queue.drops);
        self.rationalize(io);
    }

    ticked_link_timeouts!(OPPORTUNITY);

    one_queue_queries!();

    fn rate(&self, _from: Port, _to: Port) -> Option<Rate> {
        Some(self.trace.mean_rate())
    }

    fn rate_at(&self, _from: Port, _to: Port, t: Time) -> Option<Rate> {
        let since = Dur(t.as_nanos().saturating_sub(self.origin().as_nanos()));
        Some(self.trace.capacity_before(since, CAPACITY_WINDOW))
    }

    fn stats(&self) -> LinkStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{drive, Pkt, Seen};
    use l4s_aqm::FifoConfig;
    use l4s_core::Ecn;

    fn trace(ms: &[u32]) -> Arc<Trace> {
        Arc::new(Trace::new(ms.to_vec()).unwrap())
    }

    /// A frame carrying an IP packet of `ip` bytes.
    fn pkt(id: u64, ip: u32) -> Pkt {
        Pkt {
            id,
            size: ip + ETH_HEADER,
            ecn: Ecn::Ect1,
        }
    }

    fn link(t: Arc<Trace>, delay_ms: u64) -> TraceLink<Pkt> {
        let fifo = AqmConfig::Fifo(FifoConfig {
            limit: 100_000,
            ..Default::default()
        });
        TraceLink::new(t, Dur::from_millis(delay_ms), &fifo, None, Rng::new(1))
    }

    fn ms(t: Time) -> f64 {
        t.as_nanos() as f64 / 1e6
    }

    #[test]
    fn a_trace_is_read_as_mm_link_reads_it_and_bad_ones_are_refused_with_their_line() {
        let t = Trace::read("1\n".as_bytes()).unwrap();
        assert_eq!(t.times_ms(), [1]);
        assert_eq!(t.period(), Dur::from_millis(1));
        // One 1504-byte opportunity per millisecond.
        assert_eq!(t.mean_rate(), Rate::bps(12_032_000));
        assert_eq!(trace(&[2, 2, 5]).mean_rate(), Rate::bps(3 * 1504 * 8 * 1000 / 5));
        for (text, line, says) in [
            ("", None, "no delivery opportunities"),
            ("1\n3\n2\n", Some(3), "2 is before the previous time, 3"),
            ("1\nfive\n", Some(2), "\"five\" is not a time in whole milliseconds"),
            ("1\n-4\n", Some(2), "\"-4\" is not a time"),
            ("1\n\n2\n", Some(2), "an empty line"),
            ("0\n0\n", Some(2), "the last time is 0"),
        ] {
            let e = Trace::read(text.as_bytes()).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.message.starts_with(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn the_capacity_over_time_counts_the_opportunities_of_the_window_before() {
        // 20 opportunities a millisecond for 500 ms, then 5, looping every second.
        let mut ms = Vec::new();
        for t in 1..=1000u32 {
            ms.extend(std::iter::repeat_n(t, if t <= 500 { 20 } else { 5 }));
        }
        let t = Trace::new(ms).unwrap();
        let mbps = |x: Rate| x.bits_per_sec() as f64 / 1e6;
        let w = CAPACITY_WINDOW;
        assert_eq!(
            mbps(t.capacity_before(Dur::from_millis(400), w)),
            20.0 * 1504.0 * 8.0 / 1000.0
        );
        assert_eq!(
            mbps(t.capacity_before(Dur::from_millis(900), w)),
            5.0 * 1504.0 * 8.0 / 1000.0
        );
        // Across the loop: 1400 ms is 400 ms into the second period.
        assert_eq!(
            t.capacity_before(Dur::from_millis(1400), w),
            t.capacity_before(Dur::from_millis(400), w)
        );
        // Half a window in each regime.
        assert_eq!(
            mbps(t.capacity_before(Dur::from_millis(550), w)),
            12.5 * 1504.0 * 8.0 / 1000.0
        );
        // A link reports it at a time, counted from its origin.
        let mut l: TraceLink<Pkt> = link(Arc::new(t), 0);
        let (mut actions, mut seen) = (Vec::new(), Seen::default());
        l.start(
            Time::from_secs(5),
            &mut Io::new(Time::from_secs(5), &mut actions, &mut seen),
        );
        assert_eq!(
            l.rate_at(0, 1, Time::from_millis(5_900)),
            Some(Rate::bps(5 * 1504 * 8 * 1000))
        );
    }

    #[test]
    fn a_saturated_trace_of_one_moves_1504_bytes_each_millisecond() {
        // 2000 packets of 1500 B queued at 0: by 1000 ms, 1000 opportunities have moved
        // 1 504 000 bytes, that is 1002 whole packets (1000 bytes of the next are moved).
        let mut l = link(trace(&[1]), 0);
        let offers = (0..2000).map(|i| (Time::ZERO, 0, 1, pkt(i, 1500))).collect();
        let mut seen = Seen::default();
        let out = drive(&mut l, offers, Time::from_millis(1000), &mut seen);
        assert_eq!(out.len(), 1002);
        // Departures at whole milliseconds, in order; two packets complete every 376 ms
        // (where the 4 bytes left over have added up to a packet).
        assert!(out.iter().all(|o| o.0.as_nanos() % 1_000_000 == 0));
        assert!(out.windows(2).all(|w| w[0].2.id + 1 == w[1].2.id));
        assert_eq!(ms(out[0].0), 1.0);
        assert_eq!(ms(out[1001].0), 1000.0);
        // Conservation: bytes delivered never exceed the opportunities' bytes.
        for (k, o) in out.iter().enumerate() {
            let opportunities = o.0.as_nanos() / 1_000_000;
            assert!(
                (k as u64 + 1) * 1500 <= opportunities * 1504,
                "packet {k} at {}",
                ms(o.0)
            );
        }
        assert_eq!(seen.departed.len(), 1002);
    }

    /// What a queue meter takes for link time: each packet's share of the opportunities it
    /// used.
    #[test]
    fn the_link_is_busy_for_the_share_of_each_opportunity_it_used() {
        struct Busy(Vec<Dur>);
        impl crate::Observer<Pkt> for Busy {
            fn departed(&mut self, _: Time, d: &Departure<'_, Pkt>) {
                self.0.push(d.serialisation);
            }
            fn lost(&mut self, _: Time, _: crate::Loss<Pkt>) {}
        }
        // Opportunities at 4, 4 and 10 ms: those at 4 ms stand for 2 ms each, the one at
        // 10 ms for 6 ms.
        let mut l = link(trace(&[4, 4, 10]), 0);
        let (mut actions, mut busy) = (Vec::new(), Busy(Vec::new()));
        l.start(Time::ZERO, &mut Io::new(Time::ZERO, &mut actions, &mut busy));
        l.send(0, 1, pkt(0, 1504), &mut Io::new(Time::ZERO, &mut actions, &mut busy));
        l.send(0, 1, pkt(1, 752), &mut Io::new(Time::ZERO, &mut actions, &mut busy));
        for t in [4, 10] {
            l.handle_timeout(
                OPPORTUNITY,
                Time::from_millis(t),
                &mut Io::new(Time::from_millis(t), &mut actions, &mut busy),
            );
        }
        // A whole opportunity at 4 ms, then half of the second one.
        assert_eq!(busy.0, [Dur::from_millis(2), Dur::from_millis(1)]);
        // The rate the link reports is the trace's mean: 3 opportunities in 10 ms.
        assert_eq!(l.rate(0, 1), Some(Rate::bps(3 * 1504 * 8 * 100)));
    }

    #[test]
    fn an_idle_opportunity_is_lost_and_an_arrival_waits_for_the_next_time_in_the_trace() {
        // One opportunity per millisecond, 7 ms of propagation.
        let mut l = link(trace(&[1]), 7);
        let offers = vec![
            (Time::from_micros(500), 0, 1, pkt(0, 1500)),
            // At an opportunity's very time: mm-link has served it already.
            (Time::from_millis(5), 0, 1, pkt(1, 1500)),
            (Time::from_micros(5_300), 0, 1, pkt(2, 100)),
            // After 4.7 idle milliseconds: the idle opportunities did not accumulate.
            (Time::from_micros(10_500), 0, 1, pkt(3, 1500)),
            (Time::from_micros(10_500), 0, 1, pkt(4, 1500)),
        ];
        let out = drive(&mut l, offers, Time::from_secs(1), &mut Seen::default());
        let got: Vec<(u64, f64)> = out.iter().map(|o| (o.2.id, ms(o.0))).collect();
        // Packets 1 and 2 share the opportunity at 6 ms (1500 + 4 bytes of packet 2),
        // packet 2's last 96 bytes go at 7 ms.
        assert_eq!(got, [(0, 8.0), (1, 13.0), (2, 14.0), (3, 18.0), (4, 19.0)]);
    }

    #[test]
    fn repeated_times_share_a_millisecond_and_the_trace_loops_shifted_by_its_length() {
        // Opportunities at 2, 2, 5, then 7, 7, 10, ...; each leaves 4 bytes more for the next.
        let t = trace(&[2, 2, 5]);
        let mut l = link(t, 0);
        let offers = (0..6).map(|i| (Time::ZERO, 0, 1, pkt(i, 1500))).collect();
        let out = drive(&mut l, offers, Time::from_secs(1), &mut Seen::default());
        let times: Vec<f64> = out.iter().map(|o| ms(o.0)).collect();
        assert_eq!(times, [2.0, 2.0, 5.0, 7.0, 7.0, 10.0]);
    }

    #[test]
    fn a_packet_larger_than_an_opportunity_spans_several() {
        let mut l = link(trace(&[1]), 0);
        let offers = vec![(Time::ZERO, 0, 1, pkt(0, 4000)), (Time::ZERO, 0, 1, pkt(1, 500))];
        let mut seen = Seen::default();
        let out = drive(&mut l, offers, Time::from_secs(1), &mut seen);
        // 4000 B take three opportunities (1504 + 1504 + 992); 512 B are left at 3 ms for
        // the next packet of 500 B.
        let got: Vec<(u64, f64)> = out.iter().map(|o| (o.2.id, ms(o.0))).collect();
        assert_eq!(got, [(0, 3.0), (1, 3.0)]);
        assert_eq!(seen.departed[0].0, Time::from_millis(3));
    }

    #[test]
    fn a_late_real_time_driver_gets_every_passed_opportunity_in_order() {
        let mut l = link(trace(&[1]), 0);
        let (mut actions, mut seen) = (Vec::new(), Seen::default());
        l.start(Time::ZERO, &mut Io::new(Time::ZERO, &mut actions, &mut seen));
        for i in 0..3 {
            l.send(
                0,
                1,
                pkt(i, 1500),
                &mut Io::new(Time::from_micros(100), &mut actions, &mut seen),
            );
        }
        actions.clear();
        // Woken at 10 ms for the 1 ms opportunity: the three packets leave with their due times.
        l.handle_timeout(
            OPPORTUNITY,
            Time::from_millis(1),
            &mut Io::new(Time::from_millis(10), &mut actions, &mut seen),
        );
        let due: Vec<f64> = actions
            .iter()
            .filter_map(|a| match a {
                crate::Action::Deliver { due, .. } => Some(ms(*due)),
                _ => None,
            })
            .collect();
        assert_eq!(due, [1.0, 2.0, 3.0]);
        // Nothing left to carry: no wake-up asked for.
        assert!(!actions
            .iter()
            .any(|a| matches!(a, crate::Action::Wake { timer: OPPORTUNITY, .. })));
    }
}
