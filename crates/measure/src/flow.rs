//! Per-flow meters. A backend reports each data packet's send and arrival (with its send
//! time, so one-way delays are exact), the drops it sees, RTT samples, the sender's
//! statistics, and for media and application flows the frames and completions; the meter
//! keeps what falls in the statistics window and, for the time series, what happened since
//! the last snapshot.

use crate::Window;
use l4s_apps::Completion;
use l4s_core::{Dur, Ecn, Time};
use l4s_media::{FrameDone, FrameMeter, FrameMeterConfig, MediaSenderStats};
use l4s_metrics::{IntervalDelays, LatencyHist};
use l4s_transport::EndpointStats;

/// How a backend knows a flow's lost data packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossCount {
    /// It sees every drop ([`FlowMeter::on_drop`]): lost = dropped in the window.
    Dropped,
    /// It sees sends and arrivals only: lost = sent in the window and never arrived. With
    /// `per_interval`, the time series counts the same per interval; without, its `lost`
    /// column is 0 (retransmitted segments counted twice as sent make a per-interval
    /// difference meaningless for kernel TCP).
    Missing { per_interval: bool },
}

/// Since the last snapshot (the whole run, not only the window).
#[derive(Debug, Default)]
pub struct FlowInterval {
    pub bytes: u64,
    pub packets: u64,
    pub ce: u64,
    pub sent: u64,
    pub arrived_of_sent: u64,
    pub dropped: u64,
    /// One-way delays (as a histogram of 2 significant digits gives them).
    pub owd: IntervalDelays,
}

impl FlowInterval {
    /// Start a new interval.
    pub fn clear(&mut self) {
        self.bytes = 0;
        self.packets = 0;
        self.ce = 0;
        self.sent = 0;
        self.arrived_of_sent = 0;
        self.dropped = 0;
        self.owd.clear();
    }
}

/// One flow's meters.
#[derive(Debug)]
pub struct FlowMeter {
    pub window: Window,
    pub loss: LossCount,
    /// Keep the per-interval figures of the time series.
    pub snapshots: bool,
    /// One-way delay above which a data packet counts as late.
    pub budget: Option<Dur>,
    /// One-way delay of data packets that arrived in the window.
    pub owd: LatencyHist,
    /// Sender RTT samples taken in the window.
    pub rtt: LatencyHist,
    /// Data packets sent in the window (retransmissions included).
    pub sent: u64,
    /// Data packets dropped in the window ([`LossCount::Dropped`]).
    pub dropped: u64,
    /// Data packets sent in the window that arrived, at any time ([`LossCount::Missing`]).
    pub arrived_of_sent: u64,
    /// Data arrivals in the window, their frame bytes, CE marks and late packets.
    pub received: u64,
    pub received_bytes: u64,
    pub ce: u64,
    pub late: u64,
    /// Application payload delivered in the window, for backends that count it at the
    /// receiving socket.
    pub goodput_bytes: u64,
    /// Codepoint of the first data packet sent.
    pub first_ecn: Option<Ecn>,
    /// The sender's statistics: the latest, and those when the window opened.
    pub sender: EndpointStats,
    pub sender_base: Option<EndpointStats>,
    pub interval: FlowInterval,
    pub media: Option<Box<MediaMeter>>,
    pub app: Option<Box<AppMeter>>,
}

impl FlowMeter {
    pub fn new(window: Window, budget: Option<Dur>, loss: LossCount, snapshots: bool) -> FlowMeter {
        FlowMeter {
            window,
            loss,
            snapshots,
            budget,
            owd: LatencyHist::new(),
            rtt: LatencyHist::new(),
            sent: 0,
            dropped: 0,
            arrived_of_sent: 0,
            received: 0,
            received_bytes: 0,
            ce: 0,
            late: 0,
            goodput_bytes: 0,
            first_ecn: None,
            sender: EndpointStats::default(),
            sender_base: None,
            interval: FlowInterval::default(),
            media: None,
            app: None,
        }
    }

    /// A data packet left the sender at `t` with `ecn`.
    #[inline]
    pub fn on_send(&mut self, t: Time, ecn: Ecn) {
        self.first_ecn.get_or_insert(ecn);
        if self.snapshots {
            self.interval.sent += 1;
        }
        if self.window.contains(t) {
            self.sent += 1;
        }
    }

    /// A data packet of `frame_bytes` sent at `sent` arrived at `now` with `ecn`.
    #[inline]
    pub fn on_arrival(&mut self, now: Time, sent: Time, frame_bytes: u32, ecn: Ecn) {
        let owd = now.since(sent);
        let ce = ecn == Ecn::Ce;
        if self.snapshots {
            let iv = &mut self.interval;
            iv.bytes += frame_bytes as u64;
            iv.packets += 1;
            iv.ce += ce as u64;
            iv.owd.record(owd);
            iv.arrived_of_sent += 1;
        }
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

    /// A data packet was dropped in the network at `t`.
    #[inline]
    pub fn on_drop(&mut self, t: Time) {
        self.interval.dropped += 1;
        if self.window.contains(t) {
            self.dropped += 1;
        }
    }

    /// An RTT sample at `now`.
    #[inline]
    pub fn on_rtt(&mut self, now: Time, rtt: Dur) {
        if self.window.contains(now) {
            self.rtt.record(rtt);
        }
    }

    /// Stream bytes the receiving application read at `now`.
    #[inline]
    pub fn on_stream_bytes(&mut self, now: Time, payload: u64) {
        if self.window.contains(now) {
            self.goodput_bytes += payload;
        }
    }

    /// The sender's statistics sampled at `now`; the last sample before the window opens
    /// (or the one at its start) is the baseline.
    pub fn on_sender_stats(&mut self, now: Time, st: EndpointStats) {
        if self.sender_base.is_none() && now >= self.window.start {
            self.sender_base = Some(if now == self.window.start { st } else { self.sender });
        }
        self.sender = st;
    }

    /// Data lost in the window.
    pub fn lost(&self) -> u64 {
        match self.loss {
            LossCount::Dropped => self.dropped,
            LossCount::Missing { .. } => self.sent.saturating_sub(self.arrived_of_sent),
        }
    }

    /// Data lost since the last snapshot.
    pub fn interval_lost(&self) -> u64 {
        match self.loss {
            LossCount::Dropped => self.interval.dropped,
            LossCount::Missing { per_interval: true } => {
                self.interval.sent.saturating_sub(self.interval.arrived_of_sent)
            }
            LossCount::Missing { per_interval: false } => 0,
        }
    }
}

/// Interval between samples of a media encoder's target bitrate.
pub const TARGET_SAMPLE: Dur = Dur::from_millis(10);

/// Per-frame measurement of a media flow: the frames the receiver completes feed a
/// whole-window [`FrameMeter`] (frames that complete in the window) and a per-snapshot one
/// (every frame); the encoder's target bitrate is sampled every [`TARGET_SAMPLE`] in the
/// window.
#[derive(Clone, Debug)]
pub struct MediaMeter {
    pub window: Window,
    pub frames: FrameMeter,
    /// Frame delays of the window's complete frames.
    pub delay: LatencyHist,
    /// From the start of the run, closed at every snapshot.
    pub snap: FrameMeter,
    pub targets: crate::appmetrics::TargetSamples,
    last_sample: Option<Time>,
    /// The sender's media counters when the window opened, and the latest (`None` before
    /// the sender's first report).
    pub baseline: Option<MediaSenderStats>,
    pub latest: Option<MediaSenderStats>,
    /// Highest video frame of which the receiver saw a packet (for incomplete frames).
    pub highest_seen: Option<u64>,
}

impl MediaMeter {
    /// The meter of a media flow with `params` whose path has `base_owd` of one-way
    /// propagation delay: frame metrics with the profile's deadline and stall gap, and
    /// target samples that know the encoder's minimum bitrate.
    pub fn for_params(params: &l4s_media::MediaParams, base_owd: Dur, window: Window) -> MediaMeter {
        let cfg = FrameMeterConfig {
            frame_interval: params.frame_interval,
            deadline: params.frame_deadline,
            stall_gap: params.stall_gap,
            base_owd,
        };
        let mut m = MediaMeter::new(cfg, window);
        m.targets = crate::appmetrics::TargetSamples::with_floor(params.min_bitrate.bits_per_sec() as f64);
        m
    }

    pub fn new(cfg: FrameMeterConfig, window: Window) -> MediaMeter {
        MediaMeter {
            window,
            frames: FrameMeter::new(cfg, window.start),
            delay: LatencyHist::new(),
            snap: FrameMeter::new(cfg, Time::ZERO),
            targets: Default::default(),
            last_sample: None,
            baseline: None,
            latest: None,
            highest_seen: None,
        }
    }

    /// A frame the receiver completed (in completion order).
    pub fn on_frame(&mut self, f: &FrameDone) {
        self.snap.on_frame(f);
        if self.window.contains(f.completed) {
            self.frames.on_frame(f);
            self.delay.record(f.delay());
        }
    }

    /// One sample of the encoder's target bitrate (a backend that samples on its own
    /// schedule).
    pub fn sample_target(&mut self, bps: f64) {
        self.targets.record(bps);
    }

    /// The sender's media counters at `now` (a backend that reports often): the baseline
    /// at the window's start, and a target sample every [`TARGET_SAMPLE`] in the window.
    pub fn on_sender(&mut self, now: Time, st: MediaSenderStats) {
        if self.baseline.is_none() && now >= self.window.start {
            self.baseline = Some(if now == self.window.start {
                st
            } else {
                self.latest.unwrap_or_default()
            });
        }
        self.latest = Some(st);
        if self.window.contains(now) && self.last_sample.is_none_or(|t| now.since(t) >= TARGET_SAMPLE) {
            self.last_sample = Some(now);
            self.targets.record(st.target_bitrate.bits_per_sec() as f64);
        }
    }
}

/// Completion times of an application flow per kind: a completion counts in the summary if
/// it started in the window and ended by its end.
#[derive(Clone, Debug)]
pub struct AppMeter {
    pub window: Window,
    /// Per kind: completion times, bytes, sum of per-completion goodputs (bit/s).
    pub kinds: crate::appmetrics::CompletionStats,
    /// Since the last snapshot: completions and the longest.
    pub snap_count: u64,
    pub snap_max: Dur,
}

impl AppMeter {
    pub fn new(window: Window) -> AppMeter {
        AppMeter {
            window,
            kinds: Default::default(),
            snap_count: 0,
            snap_max: Dur::ZERO,
        }
    }

    pub fn on_completion(&mut self, c: &Completion) {
        let t = c.completed.since(c.started);
        self.snap_count += 1;
        self.snap_max = self.snap_max.max(t);
        if c.started >= self.window.start && c.completed <= self.window.end {
            crate::appmetrics::record_completion(&mut self.kinds, c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4s_apps::CompletionKind;

    fn window(a: u64, b: u64) -> Window {
        Window {
            start: Time::from_secs(a),
            end: Time::from_secs(b),
        }
    }

    #[test]
    fn window_and_loss_accounting() {
        let mut m = FlowMeter::new(
            window(1, 3),
            Some(Dur::from_millis(10)),
            LossCount::Missing { per_interval: true },
            true,
        );
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
        assert_eq!((m.interval.packets, m.interval.sent, m.interval_lost()), (2, 3, 1));
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

    #[test]
    fn drops_are_the_loss_of_a_backend_that_sees_them() {
        let mut m = FlowMeter::new(window(1, 3), None, LossCount::Dropped, true);
        for t in [500, 1500, 2500, 3500] {
            m.on_send(Time::from_millis(t), Ecn::NotEct);
            m.on_drop(Time::from_millis(t + 1));
        }
        assert_eq!((m.sent, m.lost(), m.interval_lost()), (2, 2, 4));
        let m = FlowMeter::new(window(1, 3), None, LossCount::Missing { per_interval: false }, true);
        assert_eq!(m.interval_lost(), 0);
    }

    fn frame(n: u64, captured_ms: u64, done_ms: u64) -> FrameDone {
        FrameDone {
            frame: n,
            captured: Time::from_millis(captured_ms),
            first_sent: Time::from_millis(captured_ms),
            completed: Time::from_millis(done_ms),
            bytes: 10_000,
            packets: 8,
        }
    }

    #[test]
    fn media_meter_counts_the_window_and_samples_the_target() {
        let w = window(1, 2);
        let cfg = FrameMeterConfig {
            frame_interval: Dur::from_micros(16_667),
            deadline: Dur::from_micros(16_667),
            stall_gap: Dur::from_millis(100),
            base_owd: Dur::from_millis(10),
        };
        let mut m = MediaMeter::new(cfg, w);
        // Before the window: only the snapshot meter sees it.
        m.on_frame(&frame(0, 900, 915));
        // In the window: 20 frames 50 ms apart, 15 ms delay; one 40 ms (late: > 10 + 16.7).
        for i in 0..20u64 {
            let c = 1000 + 50 * i;
            m.on_frame(&frame(1 + i, c, c + if i == 5 { 40 } else { 15 }));
        }
        // After the window.
        m.on_frame(&frame(21, 2000, 2015));
        let fs = m.frames.finish_with_seen(w.end, None, Some(21));
        assert_eq!((fs.frames_complete, fs.frames_late), (20, 1));
        assert_eq!(m.delay.count(), 20);
        assert_eq!(m.delay.max_ns(), 40_000_000);
        assert_eq!(m.snap.interval(Time::from_secs(3)).frames, 22);
        let st = |bps| MediaSenderStats {
            target_bitrate: l4s_core::Rate::bps(bps),
            frames_encoded: bps / 1000,
            ..Default::default()
        };
        m.on_sender(Time::from_millis(995), st(1_000_000));
        // Samples at most every 10 ms, only in the window.
        for ms in (1000..=1100).step_by(5) {
            m.on_sender(Time::from_millis(ms), st(2_000_000 + ms * 1000));
        }
        m.on_sender(Time::from_millis(2500), st(9_000_000));
        assert_eq!(
            m.baseline.unwrap().frames_encoded,
            3000,
            "the counters at the window start"
        );
        assert_eq!(m.targets.count, 11);
        assert_eq!((m.targets.min, m.targets.max), (3_000_000.0, 3_100_000.0));
        assert_eq!(m.latest.unwrap().frames_encoded, 9000);
    }

    #[test]
    fn app_meter_counts_completions_that_start_in_the_window() {
        let mut a = AppMeter::new(window(1, 3));
        let c = |s: u64, e: u64, what| Completion {
            what,
            started: Time::from_millis(s),
            completed: Time::from_millis(e),
            bytes: 1_000_000,
            retries: 0,
        };
        a.on_completion(&c(900, 1100, CompletionKind::Transfer)); // started before
        a.on_completion(&c(1000, 1500, CompletionKind::Transfer)); // 16 Mbit/s
        a.on_completion(&c(2000, 2250, CompletionKind::Transfer)); // 32 Mbit/s
        a.on_completion(&c(2900, 3100, CompletionKind::Transfer)); // ends after
        a.on_completion(&c(1200, 1210, CompletionKind::Response));
        assert_eq!((a.snap_count, a.snap_max), (5, Dur::from_millis(500)));
        let (h, bytes, gsum) = &a.kinds[&CompletionKind::Transfer];
        assert_eq!((h.count(), *bytes), (2, 2_000_000));
        assert!((gsum - 48e6).abs() < 1.0, "{gsum}");
        assert_eq!(a.kinds[&CompletionKind::Response].0.count(), 1);
    }
}
