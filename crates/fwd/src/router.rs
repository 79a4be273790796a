//! The forwarder: two interfaces, two directions, each with its own AQM object and pacer.
//!
//! ```text
//!   interface a ──recv──▶ [AQM a→b] ──pacer(rate_ab)──▶ send ──▶ interface b
//!   interface a ◀──send── pacer(rate_ba) ◀──[AQM b→a] ◀──recv── interface b
//! ```
//!
//! The forwarder is a transparent layer-2 bump in the wire: it needs no addresses, ARP and
//! NDP cross it (unclassified, Not-ECT), and hosts on both sides share one subnet. The AQM
//! is any [`l4s_aqm::AqmConfig`] (DualPI2 and every baseline), built inside each
//! direction's link by [`l4s_link::build`] and driven with the real clock
//! ([`crate::afpacket::monotonic_now`], CLOCK_MONOTONIC in ns) exactly as the simulator
//! drives it with the virtual one.
//!
//! # The links
//!
//! Each direction is an [`l4s_link`] model, the very object the simulator drives: by
//! default a [`l4s_link::Wired`] link (a faulty middlebox, the AQM, a serialiser at the
//! link rate with its [`l4s_link::RateSchedule`], a propagation delay line), optionally
//! inside a loss model. The forwarder is its real-time driver: a frame read from the
//! input goes in with the kernel's receive time, the link's wake-up requests are kept in
//! a [`l4s_link::Timers`] heap and run when due, and a frame the link delivers is sent on
//! the output, its lateness (now minus when the model says it leaves) recorded. The wired
//! link's serialiser starts a packet at `max(link free, its arrival, now − max_lag)`: when
//! the forwarder wakes late (the scheduler, a busy core) the next packets start back to
//! back from where the link should have been, so the long-run rate is exact; after a
//! stall longer than `max_lag` (default 2 ms) the missed time is forfeited rather than sent
//! as a burst.
//!
//! A link's behaviour over time (rate schedule, fault) counts from an origin:
//! [`RouterConfig::schedule_origin`], the start of forwarding when that is `None`, or an
//! instant the caller publishes later through [`run_recording_with_origin`] (the live
//! testbed fixes its time 0 only after the forwarder is up). Until then the links run at
//! their configured rates without faults. A periodic schedule is a function of time, so it
//! holds for as long as the forwarder runs.
//!
//! An output that is busy keeps its frames, in order, and is tried again every 20 µs for
//! up to 100 ms after the frame was due; then the frame counts as a send error.
//!
//! Waits shorter than `spin` are busy-polled (non-blocking reads), longer ones sleep in
//! `ppoll(2)` with a nanosecond timeout and 1 ns timer slack.
//!
//! # Memory
//!
//! Frames live in fixed-size buffers from a per-direction [`BufferPool`] capped at the AQM's
//! packet limit plus one receive batch plus the frame on the wire, plus, on a link with a
//! propagation delay, [`MAX_IN_FLIGHT`] frames on the wire; the buffers are reused, so the
//! hot path does not allocate. When all are out, incoming frames are read into a scratch
//! buffer and dropped (`no_buffer_drops`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hdrhistogram::Histogram;
use l4s_aqm::{AqmConfig, DropReason, QueueId};
use l4s_core::{Dur, Ecn, QueuePacket, Rate, Rng, Time};
use l4s_link::{Action, Departure, Io, Link, LinkConfig, Loss, LossKind, Observer, Timers};
use serde::Serialize;

use crate::afpacket::{monotonic_now, precise_timers, wait_readable, IoMode, PacketSocket};
use crate::error::FwdError;
use crate::packet::{BufferPool, Frame, IpInfo};
use crate::port::{Input, Output};

/// What the forwarder runs. Build it with [`RouterConfig::new`] and adjust fields.
#[derive(Clone, Debug, PartialEq)]
pub struct RouterConfig {
    /// Interface on side A (in the namespace of the calling thread).
    pub a: String,
    /// Interface on side B.
    pub b: String,
    /// The A→B link: rate, delay, queue, fault, rate schedule, loss (see [`l4s_link`]).
    pub ab: LinkConfig,
    /// The B→A link.
    pub ba: LinkConfig,
    /// CLOCK_MONOTONIC instant the links' behaviour over time counts from; `None`: when
    /// forwarding starts. (Ignored by [`run_recording_with_origin`], which is given the
    /// origin at run time.)
    pub schedule_origin: Option<Time>,
    /// Seed of the links' random sources (A→B gets stream 0, B→A stream 1).
    pub seed: u64,
    /// How frames are read.
    pub io: IoMode,
    /// Frames read per system call and direction (1 to 1024).
    pub batch: usize,
    /// Waits shorter than this are busy-polled. Default zero: under SCHED_FIFO a spinning
    /// thread hits the kernel's real-time throttling (`kernel.sched_rt_runtime_us`) and is
    /// then stopped for tens of milliseconds, which costs far more than `ppoll` wake-ups.
    pub spin: Dur,
    /// How often `on_status` is called and the probability is sampled.
    pub status_interval: Dur,
    /// Run the forwarding thread under SCHED_FIFO at this priority (1 to 99) so that other
    /// work on the host (compilers, traffic generators) does not delay the pacer; `None`
    /// keeps the normal scheduler. Without the privilege (CAP_SYS_NICE) the forwarder runs
    /// on and says so in [`RouterStats::realtime`].
    pub realtime_priority: Option<u8>,
}

/// The slowest and fastest link rate the forwarder accepts.
pub const RATE_RANGE: (u64, u64) = (8_000, 100_000_000_000);

/// Frames a link with a propagation delay may hold on its wire (beyond them the forwarder
/// has no buffer and drops, counted as `no_buffer_drops`): 200 000 frames is 2 s of a
/// 1 Gbit/s link in full-size frames.
pub const MAX_IN_FLIGHT: usize = 200_000;

impl RouterConfig {
    /// Both directions at `rate` with the same AQM, no delay; defaults for the rest.
    pub fn new(a: &str, b: &str, rate: Rate, aqm: AqmConfig) -> RouterConfig {
        RouterConfig {
            a: a.to_string(),
            b: b.to_string(),
            ab: LinkConfig::new(Some(rate), Dur::ZERO, aqm.clone()),
            ba: LinkConfig::new(Some(rate), Dur::ZERO, aqm),
            schedule_origin: None,
            seed: 1,
            io: IoMode::Batched,
            batch: 64,
            spin: Dur::ZERO,
            status_interval: Dur::from_secs(1),
            realtime_priority: Some(10),
        }
    }

    /// Check every field; the error names the field and what was expected.
    pub fn validate(&self) -> Result<(), FwdError> {
        crate::netns::check_ifname(&self.a)
            .map_err(|_| FwdError::config("in", format!("expected an interface name, found {:?}", self.a)))?;
        crate::netns::check_ifname(&self.b)
            .map_err(|_| FwdError::config("out", format!("expected an interface name, found {:?}", self.b)))?;
        if self.a == self.b {
            return Err(FwdError::config(
                "out",
                format!("expected an interface other than the input {:?}", self.a),
            ));
        }
        let (lo, hi) = RATE_RANGE;
        let in_range = |r: Rate| (lo..=hi).contains(&r.bits_per_sec());
        for (dir, key, l) in [("ab", "rate", &self.ab), ("ba", "rate-back", &self.ba)] {
            if let Some(r) = l.rate.filter(|r| !in_range(*r)) {
                return Err(FwdError::config(
                    key,
                    format!("expected a rate from 8kbit to 100Gbit, found {r}"),
                ));
            }
            if let Err((k, m)) = l.schedule.validate() {
                return Err(FwdError::config(&format!("rate_schedule_{dir} {k}"), m));
            }
            if let Some((i, (_, r))) = l.schedule.steps.iter().enumerate().find(|(_, (_, r))| !in_range(*r)) {
                return Err(FwdError::config(
                    &format!("rate_schedule_{dir} steps[{i}]"),
                    format!("expected a rate from 8kbit to 100Gbit, found {r}"),
                ));
            }
            if !l.schedule.is_empty() && l.rate.is_none() {
                return Err(FwdError::config(
                    &format!("rate_schedule_{dir}"),
                    "a rate schedule needs a link rate to start from",
                ));
            }
            l.aqm
                .validate()
                .map_err(|e| FwdError::config(&format!("aqm ({dir}) {}", e.key), e.message))?;
            if let Some(l4s_link::LossModel::GilbertElliott(ge)) = &l.loss {
                ge.validate()
                    .map_err(|(k, m)| FwdError::config(&format!("loss ({dir}) {k}"), m))?;
            }
        }
        check_driver(self.batch, self.realtime_priority, self.status_interval)
    }
}

/// The checks of a forwarder's driving settings: frames per read, the SCHED_FIFO priority,
/// the status interval.
pub(crate) fn check_driver(batch: usize, realtime_priority: Option<u8>, status_interval: Dur) -> Result<(), FwdError> {
    if !(1..=1024).contains(&batch) {
        return Err(FwdError::config(
            "batch",
            format!("expected 1 to 1024 frames, found {batch}"),
        ));
    }
    if realtime_priority.is_some_and(|p| !(1..=99).contains(&p)) {
        return Err(FwdError::config(
            "realtime_priority",
            "expected a SCHED_FIFO priority from 1 to 99",
        ));
    }
    if status_interval < Dur::from_millis(10) {
        return Err(FwdError::config("status_interval", "expected at least 10ms"));
    }
    Ok(())
}

/// The packet limit of a discipline (what bounds the buffer pool).
pub fn aqm_packet_limit(cfg: &AqmConfig) -> usize {
    match cfg {
        AqmConfig::Fifo(c) => c.limit as usize,
        AqmConfig::DualPi2(c) => c.limit as usize,
        AqmConfig::Pie(c) => c.limit as usize,
        AqmConfig::Codel(c) => c.limit as usize,
        AqmConfig::FqCodel(c) => c.limit as usize,
        AqmConfig::ClassicEcn(c) => c.limit as usize,
        AqmConfig::L4sMarker(c) => c.limit as usize,
        // Byte buffers: as many 256-byte packets as both hold, and some.
        AqmConfig::DocsisDualq(c) => {
            let (classic, ll) = c.buffers();
            ((classic + ll) / 256 + 64) as usize
        }
    }
}

/// What a queue did with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// Forwarded unchanged.
    Pass,
    /// Forwarded with CE set by this queue.
    Mark,
    /// Dropped (AQM or buffer limit).
    Drop,
    /// Lost on the wire after the queue (a loss model such as Gilbert–Elliott).
    Lost,
}

/// One packet's passage through the bottleneck, for the per-packet timeline. Plain data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PacketRecord {
    /// When the decision took effect: the end of serialisation (hand-over to the output
    /// interface) for forwarded packets, the drop time for dropped ones. CLOCK_MONOTONIC ns.
    pub time: Time,
    /// When the frame entered the link: the kernel's receive time on the input interface
    /// (when it was read, for a frame the kernel gave no time for).
    pub arrival: Time,
    /// 0 = A→B, 1 = B→A.
    pub direction: u8,
    /// Which of the direction's link queues (`l4s_link::Link::queues`; 0 on a wire), and
    /// its sub-queue.
    pub link_queue: u16,
    pub queue: QueueId,
    /// Enqueue to dequeue (to the drop for AQM drops; zero for drops at enqueue).
    pub sojourn: Dur,
    /// How long the frame occupied the link (its serialisation at the rate in force when it
    /// started); zero for dropped frames.
    pub serialisation: Dur,
    /// Frame length in bytes.
    pub size: u32,
    pub ecn_in: Ecn,
    pub ecn_out: Ecn,
    pub decision: Decision,
    pub drop_reason: Option<DropReason>,
    /// Addresses, protocol and ports (`None` for non-IP frames).
    pub ip: Option<IpInfo>,
    /// The first bytes of the transport payload (where endpoints carry sequence numbers).
    pub payload: [u8; 16],
    /// How many of `payload` are valid.
    pub payload_len: u8,
    /// The sequence number of a TCP segment that carries data (`None` for pure ACKs and
    /// everything else): how the live testbed finds kernel TCP segments in these records.
    pub tcp_seq: Option<u32>,
}

/// Sojourn percentiles of one queue, in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SojournSummary {
    pub samples: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl SojournSummary {
    pub fn from_hist(h: &Histogram<u64>) -> SojournSummary {
        if h.is_empty() {
            return SojournSummary::default();
        }
        let us = |ns: u64| ns as f64 / 1e3;
        SojournSummary {
            samples: h.len(),
            mean_us: h.mean() / 1e3,
            p50_us: us(h.value_at_quantile(0.5)),
            p90_us: us(h.value_at_quantile(0.9)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        }
    }
}

/// Counters and sojourn distribution of one sub-queue.
#[derive(Clone, Debug, Serialize)]
pub struct QueueReport {
    /// `L`, `C` or `single`.
    pub queue: &'static str,
    /// The model's label of the queue (`down/laptop/BE` on a Wi-Fi medium; empty on a wire).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub label: String,
    #[serde(skip)]
    pub id: QueueId,
    pub enqueued_packets: u64,
    pub enqueued_bytes: u64,
    pub dequeued_packets: u64,
    pub dequeued_bytes: u64,
    pub marks: u64,
    pub drops: u64,
    pub overlimit_drops: u64,
    pub backlog_packets: u64,
    pub sojourn: SojournSummary,
    /// Sojourn in ns of every dequeued packet.
    #[serde(skip)]
    pub sojourn_hist: Histogram<u64>,
}

/// Everything counted for one direction.
#[derive(Clone, Debug, Serialize)]
pub struct DirectionStats {
    /// `a->b` style: `<in>-><out>`.
    pub name: String,
    /// The link model's own counters at the end (reported by the caller's summary).
    #[serde(skip)]
    pub link: l4s_link::LinkStats,
    /// Queue Protection's counters at the end, where the queue has it (reported by the
    /// caller's summary, which can name the flows).
    #[serde(skip)]
    pub queue_protection: Option<l4s_aqm::QpStats>,
    pub from: String,
    pub to: String,
    /// The configured rate (the rate at the start); 0 for a link without a rate.
    pub rate_bps: u64,
    /// The propagation delay, ms.
    pub delay_ms: f64,
    /// The rate at the end, after the schedule's changes.
    pub final_rate_bps: u64,
    /// Scheduled rate changes that took effect (with a repeat, each period's return to
    /// `rate_bps` counts as one).
    pub rate_changes_applied: u64,
    /// The rate schedule as configured: (seconds after the origin, bit/s), offsets within
    /// the period when `rate_repeat_s` is set.
    pub rate_schedule: Vec<(f64, u64)>,
    /// The schedule's repeat period in seconds (each period starts at `rate_bps`), if any.
    pub rate_repeat_s: Option<f64>,
    /// The queue discipline ("none" for a link without a rate).
    pub aqm: &'static str,
    /// Frames lost on the wire by the loss model.
    pub wire_losses: u64,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Non-IP frames forwarded unclassified.
    pub non_ip_packets: u64,
    /// Malformed IP frames dropped, per reason.
    pub malformed: BTreeMap<&'static str, u64>,
    /// Frames longer than the buffer (GRO/LRO super-packets, MTU mismatch), dropped.
    pub oversize_drops: u64,
    /// Frames dropped because every buffer was in use.
    pub no_buffer_drops: u64,
    /// Frames the kernel dropped before we could read them (socket buffer full).
    pub kernel_drops: u64,
    /// Sends that found the output busy and were retried.
    pub tx_retries: u64,
    /// Frames that could not be sent.
    pub tx_errors: u64,
    /// Times the pacer woke more than `max_lag` late with packets waiting, and the link time
    /// it gave up (ns) rather than bursting.
    pub pacer_forfeits: u64,
    pub pacer_forfeit_ns: u64,
    /// How late frames were handed to the output after their serialisation ended on the
    /// emulated link (the host's scheduling, or an output that was busy): the forwarder's
    /// own share of every delay a run measures.
    pub lateness: crate::lateness::LatenessStats,
    /// Frames the kernel gave no usable receive time for (timed from when they were read).
    pub unstamped: u64,
    /// Most frame buffers in existence at once, and the cap.
    pub peak_buffers: usize,
    pub buffer_limit: usize,
    pub queues: Vec<QueueReport>,
    /// (seconds since start, probability) at every status interval.
    pub probability: Vec<(f64, f64)>,
}

/// The statistics of a whole run.
#[derive(Clone, Debug, Serialize)]
pub struct RouterStats {
    /// CLOCK_MONOTONIC at the start, ns.
    pub started_ns: u64,
    pub duration_s: f64,
    /// Whether the thread ran under SCHED_FIFO, or why not.
    pub realtime: String,
    pub directions: Vec<DirectionStats>,
    /// A Wi-Fi medium's counters ([`crate::medium`]): at the start of the measurement
    /// window (if it was reached) and at its end (or when forwarding stopped, if earlier).
    #[serde(skip)]
    pub wifi: Option<(Option<l4s_link::wifi::BssStats>, l4s_link::wifi::BssStats)>,
}

/// One queue in the live status.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueStatus {
    pub queue: QueueId,
    pub backlog_packets: u64,
    /// Frame bytes in the queue (Ethernet header included).
    pub backlog_bytes: u64,
    /// Sojourn percentiles over the last interval (zero if nothing left the queue).
    pub delay_p50: Dur,
    pub delay_p99: Dur,
    /// Over the last interval.
    pub marks: u64,
    pub drops: u64,
}

/// One direction in the live status.
#[derive(Clone, Debug, PartialEq)]
pub struct DirectionStatus {
    pub name: String,
    /// The link rate in force now (`None`: unlimited).
    pub rate: Option<Rate>,
    /// Over the last interval.
    pub rx_rate: Rate,
    pub tx_rate: Rate,
    pub probability: Option<f64>,
    pub queues: Vec<QueueStatus>,
    /// Frames handed to the output more than 1 ms after they were due, over the last
    /// interval: the host held the forwarder back (see [`crate::lateness`]).
    pub late: u64,
    /// The link model's own counters now (a cellular link's blocks and grants, say).
    pub link: l4s_link::LinkStats,
}

/// What `on_status` receives once per status interval.
#[derive(Clone, Debug, PartialEq)]
pub struct RouterStatus {
    pub elapsed: Dur,
    pub directions: Vec<DirectionStatus>,
}

impl std::fmt::Display for RouterStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:>7.1}s", self.elapsed.as_secs_f64())?;
        for d in &self.directions {
            match d.rate {
                Some(r) => write!(f, " | {} at {r} in {} out {}", d.name, d.rx_rate, d.tx_rate)?,
                None => write!(f, " | {} unlimited in {} out {}", d.name, d.rx_rate, d.tx_rate)?,
            }
            if let Some(p) = d.probability {
                write!(f, " p'={p:.3}")?;
            }
            for q in &d.queues {
                write!(
                    f,
                    " [{} q={} p50={:.2}ms p99={:.2}ms mark={} drop={}]",
                    q.queue.name(),
                    q.backlog_packets,
                    q.delay_p50.as_millis_f64(),
                    q.delay_p99.as_millis_f64(),
                    q.marks,
                    q.drops
                )?;
            }
            if d.late > 0 {
                write!(f, " LATE>1ms={}", d.late)?;
            }
        }
        Ok(())
    }
}

/// The sojourn histograms of one sub-queue of one of a model's queues.
pub(crate) struct QueueTrack {
    /// The model's queue ([`Link::queues`] index) and the sub-queue.
    pub queue: usize,
    pub id: QueueId,
    pub hist: Histogram<u64>,
    /// The sojourns since the last status line ([`INTERVAL_DIGITS`]).
    pub interval: Histogram<u64>,
    pub last_marks: u64,
    pub last_drops: u64,
}

impl QueueTrack {
    pub fn new(queue: usize, id: QueueId) -> QueueTrack {
        QueueTrack {
            queue,
            id,
            hist: sojourn_hist(WHOLE_RUN_DIGITS),
            interval: sojourn_hist(INTERVAL_DIGITS),
            last_marks: 0,
            last_drops: 0,
        }
    }

    /// The interval's sojourn p50 and p99 (zero if nothing left), then a new interval.
    pub fn take_interval(&mut self) -> (Dur, Dur) {
        let q = if self.interval.is_empty() {
            (Dur::ZERO, Dur::ZERO)
        } else {
            (
                Dur(self.interval.value_at_quantile(0.5)),
                Dur(self.interval.value_at_quantile(0.99)),
            )
        };
        self.interval.reset();
        q
    }

    /// The status line's figures, from the model's counters of this track's queue; the
    /// marks and drops since the last call.
    pub fn status(&mut self, stats: &[(QueueId, l4s_aqm::QueueStats)]) -> QueueStatus {
        let s = stats
            .iter()
            .find(|(id, _)| *id == self.id)
            .map(|x| x.1)
            .unwrap_or_default();
        let (delay_p50, delay_p99) = self.take_interval();
        let st = QueueStatus {
            queue: self.id,
            backlog_packets: s.backlog_packets,
            backlog_bytes: s.backlog_bytes,
            delay_p50,
            delay_p99,
            marks: s.marks - self.last_marks.min(s.marks),
            drops: s.drops - self.last_drops.min(s.drops),
        };
        self.last_marks = s.marks;
        self.last_drops = s.drops;
        st
    }

    /// The final report, from the model's counters of this track's queue (`label`: the
    /// queue's, empty on a wire).
    pub fn report(&self, stats: &[(QueueId, l4s_aqm::QueueStats)], label: String) -> QueueReport {
        let s = stats
            .iter()
            .find(|(id, _)| *id == self.id)
            .map(|x| x.1)
            .unwrap_or_default();
        QueueReport {
            queue: self.id.name(),
            label,
            id: self.id,
            enqueued_packets: s.enqueued_packets,
            enqueued_bytes: s.enqueued_bytes,
            dequeued_packets: s.dequeued_packets,
            dequeued_bytes: s.dequeued_bytes,
            marks: s.marks,
            drops: s.drops,
            overlimit_drops: s.overlimit_drops,
            backlog_packets: s.backlog_packets,
            sojourn: SojournSummary::from_hist(&self.hist),
            sojourn_hist: self.hist.clone(),
        }
    }
}

/// A queue's sojourn histogram, 1 ns to 100 s. The whole run's ([`WHOLE_RUN_DIGITS`]) feeds
/// the statistics at the end; a status line's ([`INTERVAL_DIGITS`]) covers one interval.
pub(crate) fn sojourn_hist(significant_digits: u8) -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000_000, significant_digits).expect("constant bounds are valid")
}

/// Significant digits of a queue's whole-run sojourn histogram.
pub(crate) const WHOLE_RUN_DIGITS: u8 = 3;

/// Significant digits of a status line's sojourn histogram: p50 and p99 within 1 %, as the
/// simulator's snapshot p99. Reading its quantiles and resetting it for the next interval
/// happen inside the forwarding loop, between two packets (every 100 ms in a live run): at 3
/// digits it held 28 672 counters (224 KiB), and a status line took 1 to 4 ms in a test
/// build on this project's test machine, holding back the packets due meanwhile. At 2
/// digits it holds 3 968 (31 KiB).
pub(crate) const INTERVAL_DIGITS: u8 = 2;

pub(crate) type Sink<'a> = Option<&'a mut dyn FnMut(&PacketRecord)>;

/// The sequence number of a TCP segment with a payload.
fn tcp_data_seq(frame: &[u8], ip: &IpInfo) -> Option<u32> {
    if ip.protocol != 6 || ip.payload_offset? >= ip.l3_end {
        return None;
    }
    let l4 = ip.l4_offset? as usize;
    let b = frame.get(l4 + 4..l4 + 8)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn record_of(
    dir: u8,
    f: &Frame,
    time: Time,
    (link_queue, queue): (usize, QueueId),
    sojourn: Dur,
    serialisation: Dur,
    decision: Decision,
    reason: Option<DropReason>,
) -> PacketRecord {
    let ip = f.ip().copied();
    let mut payload = [0u8; 16];
    let mut payload_len = 0;
    if let Some(off) = ip.and_then(|i| i.payload_offset.map(|o| (o as usize, i.l3_end as usize))) {
        let (start, end) = off;
        if let Some(p) = f.bytes().get(start..end.min(start + 16)) {
            payload[..p.len()].copy_from_slice(p);
            payload_len = p.len() as u8;
        }
    }
    PacketRecord {
        tcp_seq: ip.and_then(|i| tcp_data_seq(f.bytes(), &i)),
        time,
        arrival: f.arrival,
        direction: dir,
        link_queue: link_queue as u16,
        queue,
        sojourn,
        serialisation,
        size: f.len() as u32,
        ecn_in: f.ecn_in,
        ecn_out: f.ecn(),
        decision,
        drop_reason: reason,
        ip,
        payload,
        payload_len,
    }
}

/// What the forwarder measures of a link model: per-queue sojourn histograms, the
/// per-packet records (their direction is the input the frame came in on,
/// [`Frame::ingress`]), and the buffers of lost frames back to the pool.
pub(crate) struct DirObserver<'a, 'b> {
    pub pool: &'a mut BufferPool,
    pub tracks: &'a mut [QueueTrack],
    pub sink: &'a mut Sink<'b>,
}

impl Observer<Frame> for DirObserver<'_, '_> {
    fn departed(&mut self, _now: Time, d: &Departure<'_, Frame>) {
        if let Some(t) = self.tracks.iter_mut().find(|t| t.queue == d.queue && t.id == d.sub) {
            let ns = d.sojourn.as_nanos().max(1);
            let _ = t.hist.record(ns);
            let _ = t.interval.record(ns);
        }
        if let Some(s) = self.sink.as_mut() {
            let decision = if d.marked { Decision::Mark } else { Decision::Pass };
            s(&record_of(
                d.pkt.ingress as u8,
                d.pkt,
                d.start + d.serialisation,
                (d.queue, d.sub),
                d.sojourn,
                d.serialisation,
                decision,
                None,
            ));
        }
    }

    fn lost(&mut self, now: Time, l: Loss<Frame>) {
        if let Some(s) = self.sink.as_mut() {
            let (queue, decision, reason) = match l.kind {
                LossKind::Queue { queue, sub, reason } => ((queue, sub), Decision::Drop, Some(reason)),
                LossKind::Wire => ((0, QueueId::Single), Decision::Lost, None),
            };
            s(&record_of(
                l.pkt.ingress as u8,
                &l.pkt,
                now,
                queue,
                l.sojourn,
                Dur::ZERO,
                decision,
                reason,
            ));
        }
        self.pool.put(l.pkt.into_buffer());
    }
}

/// One direction: input and output socket indices, the link, its timers, buffers, counters.
struct Direction {
    index: u8,
    name: String,
    from: String,
    to: String,
    rx: usize,
    tx: usize,
    cfg: LinkConfig,
    link: Box<dyn Link<Frame>>,
    /// The link's wake-up requests.
    timers: Timers,
    /// What the link asked for in the current call.
    actions: Vec<Action<Frame>>,
    pool: BufferPool,
    input: Input,
    output: Output,
    /// Frames just read (reused).
    frames: Vec<Frame>,
    tracks: Vec<QueueTrack>,
    /// Late frames at the last status.
    last_late: u64,
    last_rx_bytes: u64,
    last_tx_bytes: u64,
    probability: Vec<(f64, f64)>,
}

impl Direction {
    #[allow(clippy::too_many_arguments)]
    fn new(
        index: u8,
        from: &str,
        to: &str,
        rx: usize,
        tx: usize,
        cfg: &LinkConfig,
        rng: Rng,
        buf_size: usize,
        batch: usize,
    ) -> Direction {
        let link: Box<dyn Link<Frame>> = l4s_link::build(cfg, rng);
        let mut limit = batch + 2;
        if cfg.rate.is_some() {
            limit += aqm_packet_limit(&cfg.aqm);
        }
        if !cfg.delay.is_zero() {
            limit += MAX_IN_FLIGHT;
        }
        let tracks = link
            .queues()
            .first()
            .map(|q| q.subqueues)
            .unwrap_or(&[])
            .iter()
            .map(|&id| QueueTrack::new(0, id))
            .collect();
        Direction {
            index,
            name: format!("{from}->{to}"),
            from: from.to_string(),
            to: to.to_string(),
            rx,
            tx,
            cfg: cfg.clone(),
            link,
            timers: Timers::default(),
            actions: Vec::new(),
            pool: BufferPool::new(buf_size, limit, (batch * 2).min(limit)),
            input: Input::new(batch, buf_size),
            output: Output::new(),
            frames: Vec::with_capacity(batch),
            tracks,
            last_late: 0,
            last_rx_bytes: 0,
            last_tx_bytes: 0,
            probability: Vec::new(),
        }
    }

    /// Call into the link at `now`, then carry out what it asked for: wake-ups into the
    /// timer heap, delivered frames to the output.
    fn call(
        &mut self,
        out: &PacketSocket,
        now: Time,
        sink: &mut Sink<'_>,
        f: impl FnOnce(&mut dyn Link<Frame>, &mut Io<'_, Frame>),
    ) {
        let mut obs = DirObserver {
            pool: &mut self.pool,
            tracks: &mut self.tracks,
            sink,
        };
        f(&mut *self.link, &mut Io::new(now, &mut self.actions, &mut obs));
        let mut actions = std::mem::take(&mut self.actions);
        for a in actions.drain(..) {
            match a {
                Action::Wake { timer, at } => self.timers.push(timer, at),
                Action::Deliver { pkt, due, .. } => self.output(out, pkt, due),
            }
        }
        self.actions = actions;
    }

    /// Time 0 of the run: the links' schedules and faults count from `origin`.
    fn start(&mut self, out: &PacketSocket, origin: Time, sink: &mut Sink<'_>) {
        let now = monotonic_now();
        self.call(out, now, sink, |l, io| l.start(origin, io));
    }

    /// Send a frame the link delivered.
    fn output(&mut self, sock: &PacketSocket, f: Frame, due: Time) {
        self.output.send(sock, &mut self.pool, f, due);
    }

    /// Try the frames the output refused again, in order.
    fn flush_backlog(&mut self, sock: &PacketSocket, now: Time) {
        self.output.flush(sock, &mut self.pool, now);
    }

    /// Run the link's wake-ups that are due.
    fn timers(&mut self, out: &PacketSocket, now: Time, sink: &mut Sink<'_>) {
        while let Some((timer, at)) = self.timers.pop_due(now) {
            self.call(out, now, sink, |l, io| l.handle_timeout(timer, at, io));
        }
    }

    /// Read what is waiting on the input and send each frame into the link at its entry
    /// time.
    fn receive(
        &mut self,
        sock: &PacketSocket,
        out: &PacketSocket,
        mode: IoMode,
        now: Time,
        sink: &mut Sink<'_>,
    ) -> Result<usize, FwdError> {
        let mut frames = std::mem::take(&mut self.frames);
        let res = self.input.receive(sock, mode, &mut self.pool, now, &mut frames);
        for mut frame in frames.drain(..) {
            frame.ingress = u16::from(self.index);
            let arrival = frame.arrival;
            self.call(out, arrival, sink, |l, io| l.send(0, 1, frame, io));
        }
        self.frames = frames;
        res
    }

    /// The next time this direction has work, if any.
    fn next_event(&self) -> Option<Time> {
        match (self.timers.next(), self.output.retry_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The last interval's figures and the rate in force now.
    fn status(&mut self, interval: Dur, elapsed: Dur) -> DirectionStatus {
        let secs = interval.as_secs_f64().max(1e-9);
        let rx_rate = Rate(((self.input.rx_bytes - self.last_rx_bytes) as f64 * 8.0 / secs) as u64);
        let tx_rate = Rate(((self.output.tx_bytes - self.last_tx_bytes) as f64 * 8.0 / secs) as u64);
        self.last_rx_bytes = self.input.rx_bytes;
        self.last_tx_bytes = self.output.tx_bytes;
        let queued = !self.link.queues().is_empty();
        let probability = if queued { self.link.probability(0) } else { None };
        if let Some(p) = probability {
            self.probability.push((elapsed.as_secs_f64(), p));
        }
        let stats = if queued { self.link.queue_stats(0) } else { Vec::new() };
        let queues = self.tracks.iter_mut().map(|t| t.status(&stats)).collect();
        let late_now = self.output.lateness.over_1ms();
        let late = late_now - self.last_late;
        self.last_late = late_now;
        DirectionStatus {
            name: self.name.clone(),
            rate: self.link.rate(0, 1),
            rx_rate,
            tx_rate,
            probability,
            queues,
            late,
            link: self.link.stats(),
        }
    }

    fn stats(&self) -> DirectionStats {
        let queued = !self.link.queues().is_empty();
        let qs = if queued { self.link.queue_stats(0) } else { Vec::new() };
        let queues = self.tracks.iter().map(|t| t.report(&qs, String::new())).collect();
        let ls = self.link.stats();
        DirectionStats {
            name: self.name.clone(),
            from: self.from.clone(),
            to: self.to.clone(),
            rate_bps: self.cfg.rate.map_or(0, |r| r.bits_per_sec()),
            delay_ms: self.cfg.delay.as_millis_f64(),
            final_rate_bps: self.link.rate(0, 1).map_or(0, |r| r.bits_per_sec()),
            rate_changes_applied: ls.rate_changes,
            rate_schedule: self
                .cfg
                .schedule
                .steps
                .iter()
                .map(|(at, r)| (at.as_secs_f64(), r.bits_per_sec()))
                .collect(),
            rate_repeat_s: self.cfg.schedule.repeat.map(|p| p.as_secs_f64()),
            aqm: self.link.queues().first().map_or("none", |q| q.aqm),
            wire_losses: ls.wire_losses,
            rx_packets: self.input.rx_packets,
            rx_bytes: self.input.rx_bytes,
            tx_packets: self.output.tx_packets,
            tx_bytes: self.output.tx_bytes,
            non_ip_packets: self.input.non_ip,
            malformed: self.input.malformed_counts(),
            oversize_drops: self.input.oversize,
            no_buffer_drops: self.input.no_buffer,
            kernel_drops: self.input.kernel_drops,
            tx_retries: self.output.tx_retries,
            tx_errors: self.output.tx_errors,
            pacer_forfeits: ls.forfeits,
            pacer_forfeit_ns: ls.forfeit_ns,
            link: ls,
            queue_protection: if self.link.queues().is_empty() {
                None
            } else {
                self.link.queue_protection(0)
            },
            lateness: self.output.lateness.stats(),
            unstamped: self.input.unstamped,
            peak_buffers: self.pool.peak(),
            buffer_limit: self.pool.max(),
            queues,
            probability: self.probability.clone(),
        }
    }
}

/// Put the forwarding thread under SCHED_FIFO at `priority`, if given; what it runs under,
/// for [`RouterStats::realtime`].
pub(crate) fn go_realtime(priority: Option<u8>) -> String {
    match priority {
        None => "off".to_string(),
        Some(p) => match crate::afpacket::set_realtime(p) {
            Ok(()) => format!("SCHED_FIFO priority {p}"),
            Err(e) => format!("normal scheduler ({e})"),
        },
    }
}

/// Wait for the next thing to do: until `wake` or a readable socket, busy-polling waits up
/// to `spin`; until the origin is known (`started` false) look again within 1 ms; never
/// longer than 50 ms, so that a stop request is seen.
pub(crate) fn wait_for_work(fds: &[std::os::fd::RawFd], wake: Time, started: bool, spin: Dur) {
    let wake = if started {
        wake
    } else {
        wake.min(monotonic_now() + Dur::from_millis(1))
    };
    let now = monotonic_now();
    if wake > now {
        let wait = wake.since(now);
        if wait > spin {
            wait_readable(fds, wait.min(Dur::from_millis(50)).as_nanos());
        }
    }
}

/// Forward between `cfg.a` and `cfg.b` (in the calling thread's network namespace) until
/// `stop` is set; `on_status` is called every `cfg.status_interval`. Returns the statistics.
pub fn run(
    cfg: &RouterConfig,
    stop: &AtomicBool,
    on_status: &mut dyn FnMut(&RouterStatus),
) -> Result<RouterStats, FwdError> {
    run_inner(cfg, stop, None, on_status, None)
}

/// [`run`], and every packet's passage through a queue goes to `sink` (called on the
/// forwarding thread: keep it short, e.g. push into a channel or a buffered writer).
pub fn run_recording(
    cfg: &RouterConfig,
    stop: &AtomicBool,
    on_status: &mut dyn FnMut(&RouterStatus),
    sink: &mut dyn FnMut(&PacketRecord),
) -> Result<RouterStats, FwdError> {
    run_inner(cfg, stop, None, on_status, Some(sink))
}

/// [`run_recording`] with the rate schedule's origin given while the forwarder runs:
/// `origin` holds the CLOCK_MONOTONIC instant (ns) the rate changes count from, or
/// `u64::MAX` while it is not yet known (the directions keep their configured rates until
/// then, and changes already due when it becomes known apply to the next packet).
/// [`RouterConfig::schedule_origin`] is not used.
pub fn run_recording_with_origin(
    cfg: &RouterConfig,
    stop: &AtomicBool,
    origin: &AtomicU64,
    on_status: &mut dyn FnMut(&RouterStatus),
    sink: &mut dyn FnMut(&PacketRecord),
) -> Result<RouterStats, FwdError> {
    run_inner(cfg, stop, Some(origin), on_status, Some(sink))
}

fn run_inner(
    cfg: &RouterConfig,
    stop: &AtomicBool,
    origin_cell: Option<&AtomicU64>,
    on_status: &mut dyn FnMut(&RouterStatus),
    mut sink: Sink<'_>,
) -> Result<RouterStats, FwdError> {
    cfg.validate()?;
    let socks = [PacketSocket::open(&cfg.a)?, PacketSocket::open(&cfg.b)?];
    // Frames up to the larger MTU plus Ethernet and two VLAN tags, rounded up.
    let buf_size = (socks[0].mtu().max(socks[1].mtu()) as usize + 14 + 8).div_ceil(64) * 64;
    let mut dirs = [
        Direction::new(
            0,
            &cfg.a,
            &cfg.b,
            0,
            1,
            &cfg.ab,
            Rng::derive(cfg.seed, 0),
            buf_size,
            cfg.batch,
        ),
        Direction::new(
            1,
            &cfg.b,
            &cfg.a,
            1,
            0,
            &cfg.ba,
            Rng::derive(cfg.seed, 1),
            buf_size,
            cfg.batch,
        ),
    ];
    precise_timers();
    let realtime = go_realtime(cfg.realtime_priority);
    let fds = [socks[0].raw_fd(), socks[1].raw_fd()];
    let start = monotonic_now();
    let mut next_status = start + cfg.status_interval;
    let mut last_status = start;
    let fixed_origin = cfg.schedule_origin.unwrap_or(start);
    let mut started = false;
    while !stop.load(Ordering::Relaxed) {
        if !started {
            let origin = match origin_cell {
                None => Some(fixed_origin),
                Some(c) => Some(c.load(Ordering::Acquire)).filter(|&t| t != u64::MAX).map(Time),
            };
            if let Some(origin) = origin {
                for d in dirs.iter_mut() {
                    d.start(&socks[d.tx], origin, &mut sink);
                }
                started = true;
            }
        }
        let now = monotonic_now();
        for d in dirs.iter_mut() {
            d.receive(&socks[d.rx], &socks[d.tx], cfg.io, now, &mut sink)?;
        }
        let now = monotonic_now();
        for d in dirs.iter_mut() {
            d.flush_backlog(&socks[d.tx], now);
            d.timers(&socks[d.tx], now, &mut sink);
        }
        if now >= next_status {
            for d in dirs.iter_mut() {
                d.input.kernel_drops += socks[d.rx].kernel_drops();
            }
            let elapsed = now.since(start);
            let interval = now.since(last_status);
            let status = RouterStatus {
                elapsed,
                directions: dirs.iter_mut().map(|d| d.status(interval, elapsed)).collect(),
            };
            on_status(&status);
            last_status = now;
            next_status = now + cfg.status_interval;
        }
        let mut wake = next_status;
        for d in &dirs {
            if let Some(t) = d.next_event() {
                wake = wake.min(t);
            }
        }
        wait_for_work(&fds, wake, started, cfg.spin);
    }
    let end = monotonic_now();
    for d in dirs.iter_mut() {
        d.input.kernel_drops += socks[d.rx].kernel_drops();
    }
    Ok(RouterStats {
        started_ns: start.as_nanos(),
        duration_s: end.since(start).as_secs_f64(),
        realtime,
        directions: dirs.iter().map(|d| d.stats()).collect(),
        wifi: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4s_aqm::FifoConfig;

    fn fifo() -> AqmConfig {
        AqmConfig::Fifo(FifoConfig::default())
    }

    /// An IPv4 frame with a TCP header (sequence number `seq`) and `payload` bytes after it.
    fn tcp_frame(seq: u32, payload: usize) -> Frame {
        let mut f = vec![0u8; 14 + 20 + 20 + payload];
        f[12] = 0x08;
        let ip = &mut f[14..];
        ip[0] = 0x45;
        ip[1] = Ecn::Ect1.bits();
        ip[2..4].copy_from_slice(&((40 + payload) as u16).to_be_bytes());
        ip[8] = 64;
        ip[9] = 6;
        ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 0, 1, 2]);
        let tcp = &mut ip[20..];
        tcp[0..2].copy_from_slice(&40_000u16.to_be_bytes());
        tcp[2..4].copy_from_slice(&5201u16.to_be_bytes());
        tcp[4..8].copy_from_slice(&seq.to_be_bytes());
        tcp[12] = 5 << 4;
        let len = f.len();
        Frame::new(f.into_boxed_slice(), len, Time::ZERO).expect("a valid frame")
    }

    #[test]
    fn a_status_lines_sojourns_are_within_one_percent_from_a_small_histogram() {
        let mut t = QueueTrack::new(0, QueueId::Single);
        // 1 to 1000 us, one each; then one of 100 s, the top of the range.
        for us in 1..=1000u64 {
            t.interval.record(us * 1000).unwrap();
        }
        t.interval.record(100_000_000_000).unwrap();
        // What the forwarding loop reads and clears between two packets every interval.
        assert!(
            t.interval.distinct_values() <= 4096,
            "{} counters",
            t.interval.distinct_values()
        );
        let (p50, p99) = t.take_interval();
        for (got, want) in [(p50, 501_000.0), (p99, 991_000.0)] {
            let err = (got.as_nanos() as f64 - want).abs() / want;
            assert!(err <= 0.01, "{got:?} against {want} ns: {:.2} %", err * 100.0);
        }
        assert!(t.interval.is_empty(), "the next interval starts empty");
        assert_eq!(t.take_interval(), (Dur::ZERO, Dur::ZERO));
    }

    #[test]
    fn records_carry_the_sequence_number_of_tcp_data_segments_only() {
        let rec = |f: &Frame| {
            record_of(
                0,
                f,
                Time::ZERO,
                (0, QueueId::L),
                Dur::ZERO,
                Dur::ZERO,
                Decision::Pass,
                None,
            )
        };
        assert_eq!(rec(&tcp_frame(0xdead_beef, 1448)).tcp_seq, Some(0xdead_beef));
        assert_eq!(rec(&tcp_frame(7, 1)).tcp_seq, Some(7));
        // A pure ACK carries no data.
        assert_eq!(rec(&tcp_frame(7, 0)).tcp_seq, None);
        // UDP: no TCP sequence number.
        let mut udp = tcp_frame(7, 100).bytes().to_vec();
        udp[14 + 9] = 17;
        let len = udp.len();
        let udp = Frame::new(udp.into_boxed_slice(), len, Time::ZERO).expect("a valid frame");
        assert_eq!(rec(&udp).tcp_seq, None);
    }

    #[test]
    fn rate_schedule_is_validated_with_the_key_named() {
        let mut c = RouterConfig::new("a", "b", Rate::mbps(20), fifo());
        c.ab.schedule.steps = vec![(Dur::from_secs(2), Rate::mbps(5)), (Dur::from_secs(2), Rate::mbps(7))];
        c.validate()
            .expect("equal times are allowed (a repeat period can start with a step at 0)");
        c.ba.schedule.steps = vec![(Dur::from_secs(3), Rate::mbps(5)), (Dur::from_secs(1), Rate::mbps(7))];
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("rate_schedule_ba steps[1]") && e.contains("time order"),
            "{e}"
        );
        c.ba.schedule.steps = vec![(Dur::from_secs(1), Rate(100))];
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("rate_schedule_ba steps[0]") && e.contains("8kbit"), "{e}");
        c.ba.schedule.steps.clear();
        c.ba.rate = None;
        c.validate().expect("a direction without a rate is a delay line");
        c.ba.schedule.steps = vec![(Dur::from_secs(1), Rate::mbps(1))];
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("needs a link rate"), "{e}");
    }

    #[test]
    fn a_repeat_period_needs_changes_that_end_before_it() {
        let mut c = RouterConfig::new("a", "b", Rate::mbps(20), fifo());
        c.ba.schedule.repeat = Some(Dur::from_secs(2));
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("rate_schedule_ba repeat") && e.contains("found none"), "{e}");
        c.ba.schedule.steps = vec![(Dur::from_secs(1), Rate::mbps(5)), (Dur::from_secs(2), Rate::mbps(7))];
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("rate_schedule_ba repeat") && e.contains("longer than the last step"),
            "{e}"
        );
        c.ba.schedule.repeat = Some(Dur::from_millis(2001));
        c.validate().unwrap();
    }
}

#[cfg(test)]
mod status_tests {
    use super::*;

    #[test]
    fn the_status_line_names_late_frames_only_when_there_are_some() {
        let dir = |late| DirectionStatus {
            name: "a->b".into(),
            rate: Some(Rate::mbps(20)),
            rx_rate: Rate::mbps(25),
            tx_rate: Rate::mbps(20),
            probability: Some(0.05),
            queues: vec![QueueStatus {
                queue: QueueId::L,
                backlog_packets: 3,
                backlog_bytes: 4542,
                delay_p50: Dur::from_micros(150),
                delay_p99: Dur::from_micros(900),
                marks: 12,
                drops: 0,
            }],
            late,
            link: Default::default(),
        };
        let st = |late| RouterStatus {
            elapsed: Dur::from_millis(2500),
            directions: vec![dir(late)],
        };
        let quiet = st(0).to_string();
        assert!(
            quiet.contains("[L q=3 p50=0.15ms p99=0.90ms mark=12 drop=0]"),
            "{quiet}"
        );
        assert!(!quiet.contains("LATE"), "{quiet}");
        let held = st(42).to_string();
        assert!(held.ends_with("drop=0] LATE>1ms=42"), "{held}");
    }
}
