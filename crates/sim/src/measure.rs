//! Streaming measurement inside the simulator: histograms and counters, no per-packet
//! storage, so memory is independent of run length.

use crate::packet::Packet;
use l4s_aqm::{QueueId, QueueStats};
use l4s_core::{Dur, Ecn, Time};
use l4s_metrics::LatencyHist;
use l4s_transport::EndpointStats;

pub(crate) struct FlowMeter {
    pub started: bool,
    /// One-way delay of data packets that arrived in the window.
    pub owd: LatencyHist,
    /// Sender RTT samples taken in the window.
    pub rtt: LatencyHist,
    pub sent: u64,
    pub lost: u64,
    pub received: u64,
    pub received_bytes: u64,
    pub ce: u64,
    /// Data packets that arrived later than the flow's latency budget.
    pub late: u64,
    pub budget: Option<Dur>,
    /// Codepoint of the first data packet sent.
    pub first_ecn: Option<Ecn>,
    /// Endpoint statistics at the start of the window (sender, receiver).
    pub baseline: [Option<EndpointStats>; 2],
    /// Since the last snapshot (whole run, not only the window).
    pub snap_bytes: u64,
    pub snap_pkts: u64,
    pub snap_ce: u64,
    pub snap_lost: u64,
    /// One-way delays in the current snapshot interval (reset each interval).
    pub snap_owd: LatencyHist,
}

impl Default for FlowMeter {
    fn default() -> Self {
        FlowMeter {
            started: false,
            owd: LatencyHist::new(),
            rtt: LatencyHist::new(),
            sent: 0,
            lost: 0,
            received: 0,
            received_bytes: 0,
            ce: 0,
            late: 0,
            budget: None,
            first_ecn: None,
            baseline: [None, None],
            snap_bytes: 0,
            snap_pkts: 0,
            snap_ce: 0,
            snap_lost: 0,
            snap_owd: LatencyHist::coarse(),
        }
    }
}

impl FlowMeter {
    #[inline]
    pub fn on_send(&mut self, in_window: bool, ecn: Ecn) {
        if self.first_ecn.is_none() {
            self.first_ecn = Some(ecn);
        }
        if in_window {
            self.sent += 1;
        }
    }
    /// Every data arrival, for snapshots.
    #[inline]
    pub fn on_arrival_any(&mut self, now: Time, p: &Packet) {
        self.snap_bytes += p.size as u64;
        self.snap_pkts += 1;
        self.snap_ce += (p.ecn == Ecn::Ce) as u64;
        self.snap_owd.record(now - p.sent_at);
    }
    #[inline]
    pub fn on_arrival(&mut self, now: Time, p: &Packet) {
        let owd = now - p.sent_at;
        if self.budget.is_some_and(|b| owd > b) {
            self.late += 1;
        }
        self.owd.record(owd);
        self.received += 1;
        self.received_bytes += p.size as u64;
        if p.ecn == Ecn::Ce {
            self.ce += 1;
        }
    }
}

/// Per sub-queue index: Single, L, C.
pub(crate) fn qidx(q: QueueId) -> usize {
    match q {
        QueueId::Single => 0,
        QueueId::L => 1,
        QueueId::C => 2,
    }
}

#[derive(Default)]
pub(crate) struct LinkMeter {
    pub sojourn: [LatencyHist; 3],
    /// Time spent serialising packets dequeued in the window.
    pub busy: Dur,
    pub baseline: Vec<(QueueId, QueueStats)>,
    pub prob_sum: f64,
    pub prob_samples: u64,
    /// Since the last snapshot: largest sojourn per sub-queue, sum and count of
    /// sojourns, busy time, and the discipline's counters at the last snapshot.
    pub snap_sojourn_max: [Dur; 3],
    pub snap_sojourn_sum: Dur,
    pub snap_dequeues: u64,
    pub snap_busy: Dur,
    pub snap_last: Vec<(QueueId, QueueStats)>,
}

impl LinkMeter {
    #[inline]
    pub fn on_dequeue(&mut self, q: QueueId, sojourn: Dur, tx_time: Dur) {
        self.sojourn[qidx(q)].record(sojourn);
        self.busy += tx_time;
    }
    /// Every dequeue, for snapshots.
    #[inline]
    pub fn on_dequeue_any(&mut self, q: QueueId, sojourn: Dur, tx_time: Dur) {
        let i = qidx(q);
        self.snap_sojourn_max[i] = self.snap_sojourn_max[i].max(sojourn);
        self.snap_sojourn_sum += sojourn;
        self.snap_dequeues += 1;
        self.snap_busy += tx_time;
    }
}

/// Per-frame measurement of a media flow: whole-run and per-snapshot frame meters fed
/// with the frames the receiver completes, and the encoder target sampled over time.
pub(crate) struct MediaMeter {
    pub cfg: l4s_media::FrameMeterConfig,
    /// Statistics window (created when the window opens).
    pub window: Option<l4s_media::FrameMeter>,
    /// Frame delays of the window's complete frames (HDR, like every other delay).
    pub delay: LatencyHist,
    /// From the start of the run, closed at every snapshot.
    pub snap: l4s_media::FrameMeter,
    pub buf: Vec<l4s_media::FrameDone>,
    /// Encoder target bitrate sampled every [`crate::world::SAMPLE_INTERVAL`] in the window.
    pub targets: crate::appmetrics::TargetSamples,
    /// Sender counters when the window opened.
    pub baseline: Option<l4s_media::MediaSenderStats>,
}

impl MediaMeter {
    pub fn new(cfg: l4s_media::FrameMeterConfig) -> MediaMeter {
        MediaMeter {
            cfg,
            window: None,
            delay: LatencyHist::new(),
            snap: l4s_media::FrameMeter::new(cfg, Time::ZERO),
            buf: Vec::new(),
            targets: Default::default(),
            baseline: None,
        }
    }
    pub fn on_frames(&mut self) {
        for f in self.buf.drain(..) {
            self.snap.on_frame(&f);
            if let Some(w) = self.window.as_mut() {
                w.on_frame(&f);
                self.delay.record(f.delay());
            }
        }
    }
    pub fn sample_target(&mut self, bps: f64) {
        self.targets.record(bps);
    }
}

/// Completion times of an application flow, per kind of completion.
#[derive(Default)]
pub(crate) struct AppMeter {
    pub buf: Vec<l4s_apps::Completion>,
    /// Completions that started in the window.
    pub kinds: crate::appmetrics::CompletionStats,
    /// Since the last snapshot: completions and the longest.
    pub snap_count: u64,
    pub snap_max: Dur,
}

impl AppMeter {
    pub fn on_completions(&mut self, window_start: Time, in_window: bool) {
        for c in self.buf.drain(..) {
            let t = c.completed - c.started;
            self.snap_count += 1;
            self.snap_max = self.snap_max.max(t);
            if in_window && c.started >= window_start {
                crate::appmetrics::record_completion(&mut self.kinds, &c);
            }
        }
    }
}
