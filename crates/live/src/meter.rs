//! Per-flow measurement of a live run, shared between a flow's sender and receiver threads.
//!
//! The counters mirror the simulator's (`crates/sim/src/measure.rs`) so that the summary
//! has the same meaning on both backends: one-way delay of data packets arriving in the
//! statistics window, sender RTT samples taken in the window, data packets sent in the
//! window, and so on. Memory is fixed (HDR histograms and counters).

use l4s_core::{Dur, Ecn, Time};
use l4s_metrics::LatencyHist;
use l4s_transport::EndpointStats;
use std::sync::{Arc, Mutex, MutexGuard};

/// The statistics window `[start, end]` of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start: Time,
    pub end: Time,
}

impl Window {
    #[inline]
    pub fn contains(&self, t: Time) -> bool {
        t >= self.start && t <= self.end
    }
    pub fn secs(&self) -> f64 {
        self.end.as_nanos().saturating_sub(self.start.as_nanos()) as f64 / 1e9
    }
}

/// One flow's meters.
#[derive(Debug)]
pub struct FlowMeter {
    pub window: Window,
    pub budget: Option<Dur>,
    /// One-way delay of data packets that arrived in the window.
    pub owd: LatencyHist,
    /// Sender RTT samples taken in the window.
    pub rtt: LatencyHist,
    /// Data packets sent in the window.
    pub sent: u64,
    /// Data packets sent in the window that arrived (at any time): `sent − this` is the
    /// loss of datagram flows.
    pub arrived_of_sent: u64,
    /// Data arrivals in the window, their frame bytes, CE marks and late packets.
    pub received: u64,
    pub received_bytes: u64,
    pub ce: u64,
    pub late: u64,
    /// Application payload delivered in the window (bytes).
    pub goodput_bytes: u64,
    pub first_ecn: Option<Ecn>,
    /// The sender's latest statistics, and those at the start of the window.
    pub sender: EndpointStats,
    pub sender_base: Option<EndpointStats>,
    /// Since the last snapshot (whole run).
    pub snap_bytes: u64,
    pub snap_pkts: u64,
    pub snap_ce: u64,
    pub snap_sent: u64,
    pub snap_arrived_of_sent: u64,
    pub snap_owd: LatencyHist,
    /// The flow could not run (e.g. a socket error): the first error, reported at the end.
    pub error: Option<String>,
    /// Datagrams the sender's socket refused (full buffer, ICMP error): lost before the
    /// network, counted as sent.
    pub send_errors: u64,
}

impl FlowMeter {
    pub fn new(window: Window, budget: Option<Dur>) -> FlowMeter {
        FlowMeter {
            window,
            budget,
            owd: LatencyHist::new(),
            rtt: LatencyHist::new(),
            sent: 0,
            arrived_of_sent: 0,
            received: 0,
            received_bytes: 0,
            ce: 0,
            late: 0,
            goodput_bytes: 0,
            first_ecn: None,
            sender: EndpointStats::default(),
            sender_base: None,
            snap_bytes: 0,
            snap_pkts: 0,
            snap_ce: 0,
            snap_sent: 0,
            snap_arrived_of_sent: 0,
            snap_owd: LatencyHist::coarse(),
            error: None,
            send_errors: 0,
        }
    }

    /// A data packet left the sender at `t` with `ecn`.
    #[inline]
    pub fn on_send(&mut self, t: Time, ecn: Ecn) {
        self.first_ecn.get_or_insert(ecn);
        self.snap_sent += 1;
        if self.window.contains(t) {
            self.sent += 1;
        }
    }

    /// A data packet of `frame_bytes` sent at `sent` arrived at `now` with `ecn`.
    #[inline]
    pub fn on_arrival(&mut self, now: Time, sent: Time, frame_bytes: u32, ecn: Ecn) {
        let owd = now.since(sent);
        let ce = ecn == Ecn::Ce;
        self.snap_bytes += frame_bytes as u64;
        self.snap_pkts += 1;
        self.snap_ce += ce as u64;
        self.snap_owd.record(owd);
        self.snap_arrived_of_sent += 1;
        if self.window.contains(sent) {
            self.arrived_of_sent += 1;
        }
        if self.window.contains(now) {
            if self.budget.is_some_and(|b| owd > b) {
                self.late += 1;
            }
            self.owd.record(owd);
            self.received += 1;
            self.received_bytes += frame_bytes as u64;
            self.ce += ce as u64;
        }
    }

    /// Stream bytes (TCP) the receiving application read at `now` (the frames themselves
    /// are counted by the packet taps through [`FlowMeter::on_arrival`]).
    #[inline]
    pub fn on_stream_bytes(&mut self, now: Time, payload: u64) {
        if self.window.contains(now) {
            self.goodput_bytes += payload;
        }
    }

    /// An RTT sample at `now`.
    #[inline]
    pub fn on_rtt(&mut self, now: Time, rtt: Dur) {
        if self.window.contains(now) {
            self.rtt.record(rtt);
        }
    }

    /// The sender's statistics at `now` (the first call in the window sets the baseline).
    pub fn on_sender_stats(&mut self, now: Time, st: EndpointStats) {
        if self.sender_base.is_none() && now >= self.window.start {
            // The last statistics before the window opened are the baseline.
            self.sender_base = Some(if now == self.window.start { st } else { self.sender });
        }
        self.sender = st;
    }

    /// Datagram loss over the window: data sent in it that never arrived.
    pub fn lost(&self) -> u64 {
        self.sent.saturating_sub(self.arrived_of_sent)
    }
}

/// A meter shared by the threads of one flow.
#[derive(Clone, Debug)]
pub struct SharedMeter(Arc<Mutex<FlowMeter>>);

impl SharedMeter {
    pub fn new(m: FlowMeter) -> SharedMeter {
        SharedMeter(Arc::new(Mutex::new(m)))
    }
    /// Lock it; a thread that panicked while holding the lock left consistent counters
    /// (each update is a few additions), so the poison is ignored.
    pub fn lock(&self) -> MutexGuard<'_, FlowMeter> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// Record the first error of the flow.
    pub fn fail(&self, e: impl Into<String>) {
        let mut m = self.lock();
        if m.error.is_none() {
            m.error = Some(e.into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_and_loss_accounting() {
        let w = Window {
            start: Time::from_secs(1),
            end: Time::from_secs(3),
        };
        let mut m = FlowMeter::new(w, Some(Dur::from_millis(10)));
        // Sent before the window, arrives in it: delay counted, loss not.
        m.on_send(Time::from_millis(999), Ecn::Ect1);
        m.on_arrival(Time::from_millis(1005), Time::from_millis(999), 100, Ecn::Ect1);
        // Sent in the window: one arrives late and CE, one is lost.
        m.on_send(Time::from_millis(1500), Ecn::Ect1);
        m.on_arrival(Time::from_millis(1520), Time::from_millis(1500), 100, Ecn::Ce);
        m.on_send(Time::from_millis(1600), Ecn::Ect1);
        assert_eq!(m.first_ecn, Some(Ecn::Ect1));
        assert_eq!((m.sent, m.received, m.ce, m.late, m.lost()), (2, 2, 1, 1, 1));
        assert_eq!(m.owd.count(), 2);
        assert_eq!(m.owd.max_ns(), 20_000_000);
        assert_eq!(m.received_bytes, 200);
        assert_eq!((m.snap_pkts, m.snap_sent), (2, 3));
        // Baseline: the statistics before the window.
        let st = |n| EndpointStats {
            sent_packets: n,
            ..Default::default()
        };
        m.on_sender_stats(Time::from_millis(500), st(5));
        m.on_sender_stats(Time::from_millis(1010), st(9));
        assert_eq!(m.sender_base.unwrap().sent_packets, 5);
        assert_eq!(m.sender.sent_packets, 9);
        m.on_rtt(Time::from_millis(100), Dur::from_millis(50));
        m.on_rtt(Time::from_millis(2000), Dur::from_millis(30));
        assert_eq!(m.rtt.count(), 1);
        m.on_stream_bytes(Time::from_millis(2000), 1000);
        m.on_stream_bytes(Time::from_millis(4000), 1000);
        assert_eq!(m.goodput_bytes, 1000);
    }
}
