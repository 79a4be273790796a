//! The forwarder: two interfaces, two directions, each with its own AQM object and pacer.
//!
//! ```text
//!   interface a ──recv──▶ [AQM a→b] ──pacer(rate_ab)──▶ send ──▶ interface b
//!   interface a ◀──send── pacer(rate_ba) ◀──[AQM b→a] ◀──recv── interface b
//! ```
//!
//! The forwarder is a transparent layer-2 bump in the wire: it needs no addresses, ARP and
//! NDP cross it (unclassified, Not-ECT), and hosts on both sides share one subnet. The AQM
//! is any [`l4s_aqm::AqmConfig`] (DualPI2 and every baseline), built with
//! [`l4s_aqm::build`] and driven with the real clock ([`crate::afpacket::monotonic_now`],
//! CLOCK_MONOTONIC in ns) exactly as the simulator drives it with the virtual one.
//!
//! # The pacer
//!
//! Each direction is a link of the configured rate, modelled like the simulator's: when the
//! link is free the AQM is asked for a packet, the packet is then "on the wire" for
//! `size·8/rate` and handed to the output interface when its serialisation ends; the link is
//! free again at that moment. A packet's serialisation starts at
//! `max(link free, its arrival, now − max_lag)`: when the forwarder wakes late (the scheduler,
//! a busy core) the next packets start back-to-back from where the link should have been,
//! so the long-run rate is exact; after a stall longer than `max_lag` (default 2 ms) the
//! missed time is forfeited rather than sent as a burst.
//!
//! # Rate schedules
//!
//! Each direction's rate can change over the run ([`RouterConfig::rate_changes_ab`] and
//! [`RouterConfig::rate_changes_ba`]: offsets from a schedule origin and the new rate), the
//! live counterpart of the simulator's link rate changes and with the same rule: the packet
//! being serialised when a change falls due finishes at the old rate, and the next packet is
//! serialised at the rate in force when its serialisation starts. The change is applied by
//! the pacer between packets, so an idle link simply picks up the new rate with its next
//! packet. The origin is [`RouterConfig::schedule_origin`], the start of forwarding when
//! that is `None`, or an instant the caller publishes later through
//! [`run_recording_with_origin`] (the live testbed fixes its time 0 only after the forwarder
//! is up); until the origin is known the directions run at their configured rates.
//!
//! A schedule can repeat ([`RouterConfig::rate_repeat_ab`], `rate_repeat_ba`): at every
//! multiple of the period the link returns to its configured rate and the changes (offsets
//! within the period) apply anew. The rate in force is a function of the serialisation start
//! alone (the last change due within the current period), so a periodic schedule needs no
//! expansion and holds for as long as the forwarder runs.
//!
//! Waits shorter than `spin` are busy-polled (non-blocking reads), longer ones sleep in
//! `ppoll(2)` with a nanosecond timeout and 1 ns timer slack.
//!
//! # Memory
//!
//! Frames live in fixed-size buffers from a per-direction [`BufferPool`] capped at the AQM's
//! packet limit plus one receive batch plus the frame on the wire; the buffers are reused, so
//! the hot path does not allocate. When all are out (possible only if the AQM holds its
//! limit), incoming frames are read into a scratch buffer and dropped (`no_buffer_drops`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hdrhistogram::Histogram;
use l4s_aqm::{AqmConfig, Dequeued, DropReason, Dropped, Enqueued, Qdisc, QueueId};
use l4s_core::{Dur, Ecn, QueuePacket, Rate, Rng, Time};
use serde::Serialize;

use crate::afpacket::{monotonic_now, precise_timers, wait_readable, IoMode, PacketSocket, Received, RecvScratch};
use crate::error::FwdError;
use crate::packet::{BufferPool, Frame, IpInfo, Malformed};

/// What the forwarder runs. Build it with [`RouterConfig::new`] and adjust fields.
#[derive(Clone, Debug, PartialEq)]
pub struct RouterConfig {
    /// Interface on side A (in the namespace of the calling thread).
    pub a: String,
    /// Interface on side B.
    pub b: String,
    /// Rate of the A→B link.
    pub rate_ab: Rate,
    /// Rate of the B→A link.
    pub rate_ba: Rate,
    /// Rate changes of the A→B link: (time after the schedule origin, new rate), in
    /// non-decreasing time order; empty keeps `rate_ab` for the whole run. See the module
    /// documentation (rate schedules).
    pub rate_changes_ab: Vec<(Dur, Rate)>,
    /// Rate changes of the B→A link, as `rate_changes_ab`.
    pub rate_changes_ba: Vec<(Dur, Rate)>,
    /// Period after which the A→B schedule starts again: the link returns to `rate_ab` at
    /// every multiple of it and `rate_changes_ab` (then offsets within the period, all
    /// before its end) apply anew. `None`: the changes apply once.
    pub rate_repeat_ab: Option<Dur>,
    /// Period of the B→A schedule, as `rate_repeat_ab`.
    pub rate_repeat_ba: Option<Dur>,
    /// CLOCK_MONOTONIC instant the rate changes count from; `None`: when forwarding starts.
    /// (Ignored by [`run_recording_with_origin`], which is given the origin at run time.)
    pub schedule_origin: Option<Time>,
    pub aqm_ab: AqmConfig,
    pub aqm_ba: AqmConfig,
    /// Seed of the AQMs' random sources (A→B gets stream 0, B→A stream 1).
    pub seed: u64,
    /// How frames are read.
    pub io: IoMode,
    /// Frames read per system call and direction (1 to 1024).
    pub batch: usize,
    /// Waits shorter than this are busy-polled. Default zero: under SCHED_FIFO a spinning
    /// thread hits the kernel's real-time throttling (`kernel.sched_rt_runtime_us`) and is
    /// then stopped for tens of milliseconds, which costs far more than `ppoll` wake-ups.
    pub spin: Dur,
    /// Longest lateness the pacer makes up for by sending back-to-back.
    pub max_lag: Dur,
    /// How often `on_status` is called and the probability is sampled.
    pub status_interval: Dur,
    /// Run the forwarding thread under SCHED_FIFO at this priority (1 to 99) so that other
    /// work on the host (compilers, traffic generators) does not delay the pacer; `None`
    /// keeps the normal scheduler. Without the privilege (CAP_SYS_NICE) the forwarder runs
    /// on and says so in [`RouterStats::realtime`].
    pub realtime_priority: Option<u8>,
}

impl RouterConfig {
    /// Both directions at `rate` with the same AQM; defaults for the rest.
    pub fn new(a: &str, b: &str, rate: Rate, aqm: AqmConfig) -> RouterConfig {
        RouterConfig {
            a: a.to_string(),
            b: b.to_string(),
            rate_ab: rate,
            rate_ba: rate,
            rate_changes_ab: Vec::new(),
            rate_changes_ba: Vec::new(),
            rate_repeat_ab: None,
            rate_repeat_ba: None,
            schedule_origin: None,
            aqm_ab: aqm.clone(),
            aqm_ba: aqm,
            seed: 1,
            io: IoMode::Batched,
            batch: 64,
            spin: Dur::ZERO,
            max_lag: Dur::from_millis(2),
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
        for (key, r) in [("rate", self.rate_ab), ("rate-back", self.rate_ba)] {
            if r.bits_per_sec() < 8_000 || r.bits_per_sec() > 100_000_000_000 {
                return Err(FwdError::config(
                    key,
                    format!("expected a rate from 8kbit to 100Gbit, found {r}"),
                ));
            }
        }
        for (key, changes) in [
            ("rate_changes_ab", &self.rate_changes_ab),
            ("rate_changes_ba", &self.rate_changes_ba),
        ] {
            for (i, (at, r)) in changes.iter().enumerate() {
                if r.bits_per_sec() < 8_000 || r.bits_per_sec() > 100_000_000_000 {
                    return Err(FwdError::config(
                        &format!("{key}[{i}]"),
                        format!("expected a rate from 8kbit to 100Gbit, found {r}"),
                    ));
                }
                if i > 0 && *at < changes[i - 1].0 {
                    return Err(FwdError::config(
                        &format!("{key}[{i}]"),
                        format!("expected changes in time order, found {at} after {}", changes[i - 1].0),
                    ));
                }
            }
        }
        for (key, repeat, changes) in [
            ("rate_repeat_ab", self.rate_repeat_ab, &self.rate_changes_ab),
            ("rate_repeat_ba", self.rate_repeat_ba, &self.rate_changes_ba),
        ] {
            let Some(period) = repeat else { continue };
            let Some(&(last, _)) = changes.last() else {
                return Err(FwdError::config(
                    key,
                    "expected rate changes to repeat, found an empty schedule",
                ));
            };
            if period <= last {
                return Err(FwdError::config(
                    key,
                    format!("expected a period longer than the last change ({last}), found {period}"),
                ));
            }
        }
        for (key, c) in [("aqm (a->b)", &self.aqm_ab), ("aqm (b->a)", &self.aqm_ba)] {
            c.validate()
                .map_err(|e| FwdError::config(&format!("{key} {}", e.key), e.message))?;
        }
        if !(1..=1024).contains(&self.batch) {
            return Err(FwdError::config(
                "batch",
                format!("expected 1 to 1024 frames, found {}", self.batch),
            ));
        }
        if self.realtime_priority.is_some_and(|p| !(1..=99).contains(&p)) {
            return Err(FwdError::config(
                "realtime_priority",
                "expected a SCHED_FIFO priority from 1 to 99",
            ));
        }
        if self.status_interval < Dur::from_millis(10) {
            return Err(FwdError::config("status_interval", "expected at least 10ms"));
        }
        Ok(())
    }
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
}

/// One packet's passage through the bottleneck, for the per-packet timeline. Plain data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PacketRecord {
    /// When the decision took effect: the end of serialisation (hand-over to the output
    /// interface) for forwarded packets, the drop time for dropped ones. CLOCK_MONOTONIC ns.
    pub time: Time,
    /// When the frame was read from the input interface.
    pub arrival: Time,
    /// 0 = A→B, 1 = B→A.
    pub direction: u8,
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
    pub from: String,
    pub to: String,
    /// The configured rate (the rate at the start).
    pub rate_bps: u64,
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
    pub aqm: &'static str,
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
    /// The link rate in force now.
    pub rate: Rate,
    /// Over the last interval.
    pub rx_rate: Rate,
    pub tx_rate: Rate,
    pub probability: Option<f64>,
    pub queues: Vec<QueueStatus>,
    /// Frames handed to the output more than 1 ms after they were due, over the last
    /// interval: the host held the forwarder back (see [`crate::lateness`]).
    pub late: u64,
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
            write!(f, " | {} at {} in {} out {}", d.name, d.rate, d.rx_rate, d.tx_rate)?;
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

struct QueueTrack {
    id: QueueId,
    hist: Histogram<u64>,
    interval: Histogram<u64>,
    last_marks: u64,
    last_drops: u64,
}

fn new_hist() -> Histogram<u64> {
    // 1 ns to 100 s, 3 significant digits.
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("constant bounds are valid")
}

/// One direction: input socket index, AQM, pacer, buffers, counters.
struct Direction {
    index: u8,
    name: String,
    from: String,
    to: String,
    rx: usize,
    tx: usize,
    qdisc: Box<dyn Qdisc<Frame>>,
    aqm_kind: &'static str,
    /// The configured rate, and the one in force.
    base_rate: Rate,
    rate: Rate,
    /// Scheduled changes (offset from the origin, or within the period), the repeat period,
    /// and how many changes have taken effect.
    schedule: Vec<(Dur, Rate)>,
    repeat: Option<Dur>,
    changes_applied: u64,
    next_free: Time,
    on_wire: Option<Frame>,
    retry_at: Option<Time>,
    pool: BufferPool,
    batch: usize,
    staging: Vec<Box<[u8]>>,
    results: Vec<Received>,
    scratch: RecvScratch,
    spare: Box<[u8]>,
    drops: Vec<Dropped<Frame>>,
    queues: Vec<QueueTrack>,
    rx_packets: u64,
    rx_bytes: u64,
    tx_packets: u64,
    tx_bytes: u64,
    non_ip: u64,
    malformed: [u64; 6],
    oversize: u64,
    no_buffer: u64,
    kernel_drops: u64,
    tx_retries: u64,
    tx_errors: u64,
    pacer_forfeits: u64,
    pacer_forfeit_ns: u64,
    lateness: crate::lateness::Lateness,
    /// The latest enqueue time so far.
    last_enqueue: Time,
    unstamped: u64,
    /// Late frames at the last status.
    last_late: u64,
    last_rx_bytes: u64,
    last_tx_bytes: u64,
    probability: Vec<(f64, f64)>,
}

type Sink<'a> = Option<&'a mut dyn FnMut(&PacketRecord)>;

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
fn record_of(
    dir: u8,
    f: &Frame,
    time: Time,
    queue: QueueId,
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

impl Direction {
    #[allow(clippy::too_many_arguments)]
    fn new(
        index: u8,
        from: &str,
        to: &str,
        rx: usize,
        tx: usize,
        rate: Rate,
        schedule: &[(Dur, Rate)],
        repeat: Option<Dur>,
        aqm: &AqmConfig,
        rng: Rng,
        buf_size: usize,
        batch: usize,
    ) -> Direction {
        let qdisc: Box<dyn Qdisc<Frame>> = l4s_aqm::build(aqm, rng);
        let limit = aqm_packet_limit(aqm) + batch + 2;
        let queues = qdisc
            .queue_ids()
            .iter()
            .map(|&id| QueueTrack {
                id,
                hist: new_hist(),
                interval: new_hist(),
                last_marks: 0,
                last_drops: 0,
            })
            .collect();
        Direction {
            index,
            name: format!("{from}->{to}"),
            from: from.to_string(),
            to: to.to_string(),
            rx,
            tx,
            aqm_kind: qdisc.kind(),
            qdisc,
            base_rate: rate,
            rate,
            schedule: schedule.to_vec(),
            repeat,
            changes_applied: 0,
            next_free: Time::ZERO,
            on_wire: None,
            retry_at: None,
            pool: BufferPool::new(buf_size, limit, (batch * 2).min(limit)),
            batch,
            staging: Vec::with_capacity(batch),
            results: Vec::with_capacity(batch),
            scratch: RecvScratch::new(batch),
            spare: vec![0u8; buf_size].into_boxed_slice(),
            drops: Vec::with_capacity(64),
            queues,
            rx_packets: 0,
            rx_bytes: 0,
            tx_packets: 0,
            tx_bytes: 0,
            non_ip: 0,
            malformed: [0; 6],
            oversize: 0,
            no_buffer: 0,
            kernel_drops: 0,
            tx_retries: 0,
            tx_errors: 0,
            pacer_forfeits: 0,
            pacer_forfeit_ns: 0,
            lateness: crate::lateness::Lateness::new(),
            last_enqueue: Time::ZERO,
            unstamped: 0,
            last_late: 0,
            last_rx_bytes: 0,
            last_tx_bytes: 0,
            probability: Vec::new(),
        }
    }

    fn track(&mut self, q: QueueId) -> Option<&mut QueueTrack> {
        self.queues.iter_mut().find(|t| t.id == q)
    }

    fn dropped(&mut self, d: Dropped<Frame>, now: Time, sink: &mut Sink<'_>) {
        if let Some(s) = sink.as_mut() {
            s(&record_of(
                self.index,
                &d.pkt,
                now,
                d.queue,
                d.sojourn,
                Dur::ZERO,
                Decision::Drop,
                Some(d.reason),
            ));
        }
        self.pool.put(d.pkt.into_buffer());
    }

    /// One frame read into `buf` (already counted as received) at `now`; `stamp` is the
    /// kernel's receive time, which the frame's arrival and its queue time count from (a
    /// frame that waited in the socket while this thread was held back has queued that
    /// long already). Enqueue times never go backwards, so each queue stays in order.
    fn accept(&mut self, buf: Box<[u8]>, len: usize, stamp: Option<Time>, now: Time, sink: &mut Sink<'_>) {
        if stamp.is_none() {
            self.unstamped += 1;
        }
        let arrival = stamp.unwrap_or(now).min(now).max(self.last_enqueue);
        self.last_enqueue = arrival;
        match Frame::new(buf, len, arrival) {
            Err((buf, m)) => {
                self.malformed[m.index()] += 1;
                self.pool.put(buf);
            }
            Ok(frame) => {
                if frame.ip().is_none() {
                    self.non_ip += 1;
                }
                if let Enqueued::Dropped(d) = self.qdisc.enqueue(frame, arrival) {
                    self.dropped(d, now, sink);
                }
                let mut extra = std::mem::take(&mut self.drops);
                self.qdisc.drain_enqueue_drops(&mut extra);
                for d in extra.drain(..) {
                    self.dropped(d, now, sink);
                }
                self.drops = extra;
            }
        }
    }

    /// Read what is waiting on the input, up to a few batches.
    fn receive(
        &mut self,
        sock: &PacketSocket,
        mode: IoMode,
        now: Time,
        sink: &mut Sink<'_>,
    ) -> Result<usize, FwdError> {
        let mut total = 0;
        for _ in 0..4 {
            let got = match mode {
                IoMode::Batched => self.receive_batch(sock, now, sink)?,
                IoMode::Single => self.receive_single(sock, now, sink)?,
            };
            total += got;
            if got < self.scratch_cap() {
                break;
            }
        }
        Ok(total)
    }

    fn scratch_cap(&self) -> usize {
        self.batch
    }

    fn receive_batch(&mut self, sock: &PacketSocket, now: Time, sink: &mut Sink<'_>) -> Result<usize, FwdError> {
        let want = self.batch;
        while self.staging.len() < want {
            match self.pool.get() {
                Some(b) => self.staging.push(b),
                None => break,
            }
        }
        if self.staging.is_empty() {
            // Every buffer is queued: read into the spare one and drop.
            let mut n = 0;
            while let Some(r) = sock.recv_one(&mut self.spare)? {
                if let Received::Frame(len) | Received::Oversize(len) = r {
                    self.rx_packets += 1;
                    self.rx_bytes += len as u64;
                    self.no_buffer += 1;
                }
                n += 1;
                if n >= want {
                    break;
                }
            }
            return Ok(n);
        }
        let mut results = std::mem::take(&mut self.results);
        let res = sock.recv_batch(&mut self.staging, &mut self.scratch, &mut results);
        let got = results.len();
        // Take the filled buffers off the front of the staging area, in order (an empty
        // boxed slice does not allocate).
        for (i, r) in results.iter().enumerate() {
            let buf = std::mem::take(&mut self.staging[i]);
            let stamp = self.scratch.stamp(i);
            self.handle_rx(buf, *r, stamp, now, sink);
        }
        self.staging.drain(..got);
        self.results = results;
        res?;
        Ok(got)
    }

    fn handle_rx(&mut self, buf: Box<[u8]>, r: Received, stamp: Option<Time>, now: Time, sink: &mut Sink<'_>) {
        match r {
            Received::Skip => self.pool.put(buf),
            Received::Oversize(len) => {
                self.rx_packets += 1;
                self.rx_bytes += len as u64;
                self.oversize += 1;
                self.pool.put(buf);
            }
            Received::Frame(len) => {
                self.rx_packets += 1;
                self.rx_bytes += len as u64;
                self.accept(buf, len, stamp, now, sink);
            }
        }
    }

    fn receive_single(&mut self, sock: &PacketSocket, now: Time, sink: &mut Sink<'_>) -> Result<usize, FwdError> {
        let want = self.batch;
        let mut n = 0;
        while n < want {
            let Some(mut buf) = self.pool.get() else {
                return self.receive_batch(sock, now, sink).map(|m| n + m);
            };
            match sock.recv_one_at(&mut buf) {
                Ok(Some((r, stamp))) => {
                    n += 1;
                    self.handle_rx(buf, r, stamp, now, sink);
                }
                Ok(None) => {
                    self.pool.put(buf);
                    break;
                }
                Err(e) => {
                    self.pool.put(buf);
                    return Err(e);
                }
            }
        }
        Ok(n)
    }

    fn timers(&mut self, now: Time) {
        if self.qdisc.next_timeout().is_some_and(|t| t <= now) {
            self.qdisc.on_timeout(now);
        }
    }

    /// The rate in force at `t` and how many scheduled changes are due by then (with a
    /// repeat, each period's return to the configured rate counts as one). `origin` is the
    /// instant the schedule counts from; the configured rate holds while it is unknown or
    /// still ahead. A function of `t` alone: a periodic schedule needs no expansion, and a
    /// link idle for many periods costs nothing to catch up.
    fn scheduled(&self, t: Time, origin: Option<Time>) -> (Rate, u64) {
        let Some(origin) = origin.filter(|&o| t >= o && !self.schedule.is_empty()) else {
            return (self.base_rate, 0);
        };
        let elapsed = t.since(origin);
        let (periods, within) = match self.repeat {
            Some(p) if p.0 > 0 => (elapsed.0 / p.0, Dur(elapsed.0 % p.0)),
            _ => (0, elapsed),
        };
        let due = self.schedule.partition_point(|&(at, _)| at <= within);
        let rate = due.checked_sub(1).map_or(self.base_rate, |i| self.schedule[i].1);
        let per_period = self.schedule.len() as u64 + 1;
        (rate, periods.saturating_mul(per_period).saturating_add(due as u64))
    }

    /// Apply the scheduled rate changes due at or before `t` (a serialisation start; these
    /// never go backwards).
    fn apply_rate_changes(&mut self, t: Time, origin: Option<Time>) {
        if origin.is_none() {
            return;
        }
        (self.rate, self.changes_applied) = self.scheduled(t, origin);
    }

    /// Hand finished packets to the output and start the next ones. `origin` is the
    /// instant the rate schedule counts from, if known.
    fn transmit(&mut self, sock: &PacketSocket, now: Time, max_lag: Dur, origin: Option<Time>, sink: &mut Sink<'_>) {
        loop {
            if let Some(f) = self.on_wire.take() {
                if now < self.next_free || self.retry_at.is_some_and(|t| now < t) {
                    self.on_wire = Some(f);
                    return;
                }
                match sock.send(f.bytes()) {
                    Ok(true) => {
                        self.lateness.record(now.since(self.next_free).as_nanos());
                        self.tx_packets += 1;
                        self.tx_bytes += f.len() as u64;
                        self.retry_at = None;
                        self.pool.put(f.into_buffer());
                    }
                    Ok(false) if now.since(self.next_free) < Dur::from_millis(100) => {
                        // The output is busy: keep the link occupied and try again shortly.
                        self.tx_retries += 1;
                        self.retry_at = Some(now + Dur::from_micros(20));
                        self.on_wire = Some(f);
                        return;
                    }
                    Ok(false) | Err(_) => {
                        self.tx_errors += 1;
                        self.retry_at = None;
                        self.pool.put(f.into_buffer());
                    }
                }
            }
            if self.qdisc.len_packets() == 0 {
                return;
            }
            let mut drops = std::mem::take(&mut self.drops);
            let d = self.qdisc.dequeue(now, &mut drops);
            for x in drops.drain(..) {
                self.dropped(x, now, sink);
            }
            self.drops = drops;
            let Some(Dequeued {
                pkt,
                queue,
                sojourn,
                marked,
            }) = d
            else {
                return;
            };
            let catch_up_from = Time(now.0.saturating_sub(max_lag.0));
            if self.next_free >= pkt.arrival && catch_up_from > self.next_free {
                // Woken too late to make it all up: forfeit link time rather than burst.
                self.pacer_forfeits += 1;
                self.pacer_forfeit_ns += catch_up_from.since(self.next_free).as_nanos();
            }
            let start = self.next_free.max(pkt.arrival).max(catch_up_from);
            // The previous packet finished at the old rate; this one goes at the rate in
            // force when it starts (as the simulator's link).
            self.apply_rate_changes(start, origin);
            let serialisation = self.rate.tx_time(pkt.len() as u64);
            self.next_free = start + serialisation;
            if let Some(t) = self.track(queue) {
                let ns = sojourn.as_nanos().max(1);
                let _ = t.hist.record(ns);
                let _ = t.interval.record(ns);
            }
            if let Some(s) = sink.as_mut() {
                let decision = if marked { Decision::Mark } else { Decision::Pass };
                s(&record_of(
                    self.index,
                    &pkt,
                    self.next_free,
                    queue,
                    sojourn,
                    serialisation,
                    decision,
                    None,
                ));
            }
            self.on_wire = Some(pkt);
        }
    }

    /// The next time this direction has work, if any.
    fn next_event(&self, now: Time) -> Option<Time> {
        let mut t = self.qdisc.next_timeout();
        let mut take = |x: Time| t = Some(t.map_or(x, |y: Time| y.min(x)));
        if self.on_wire.is_some() {
            take(self.next_free.max(self.retry_at.unwrap_or(Time::ZERO)));
        } else if self.qdisc.len_packets() > 0 {
            take(self.next_free.max(now));
        }
        t
    }

    /// The last interval's figures, and the rate in force at `now` (an idle link has not
    /// applied a change that fell due yet, but shows it).
    fn status(&mut self, interval: Dur, elapsed: Dur, now: Time, origin: Option<Time>) -> DirectionStatus {
        let secs = interval.as_secs_f64().max(1e-9);
        let rx_rate = Rate(((self.rx_bytes - self.last_rx_bytes) as f64 * 8.0 / secs) as u64);
        let tx_rate = Rate(((self.tx_bytes - self.last_tx_bytes) as f64 * 8.0 / secs) as u64);
        self.last_rx_bytes = self.rx_bytes;
        self.last_tx_bytes = self.tx_bytes;
        let probability = self.qdisc.probability();
        if let Some(p) = probability {
            self.probability.push((elapsed.as_secs_f64(), p));
        }
        let stats = self.qdisc.stats();
        let mut queues = Vec::new();
        for t in &mut self.queues {
            let s = stats
                .iter()
                .find(|(id, _)| *id == t.id)
                .map(|x| x.1)
                .unwrap_or_default();
            let (p50, p99) = if t.interval.is_empty() {
                (Dur::ZERO, Dur::ZERO)
            } else {
                (
                    Dur(t.interval.value_at_quantile(0.5)),
                    Dur(t.interval.value_at_quantile(0.99)),
                )
            };
            queues.push(QueueStatus {
                queue: t.id,
                backlog_packets: s.backlog_packets,
                backlog_bytes: s.backlog_bytes,
                delay_p50: p50,
                delay_p99: p99,
                marks: s.marks - t.last_marks.min(s.marks),
                drops: s.drops - t.last_drops.min(s.drops),
            });
            t.last_marks = s.marks;
            t.last_drops = s.drops;
            t.interval.reset();
        }
        let late = self.lateness.over_1ms() - self.last_late;
        self.last_late = self.lateness.over_1ms();
        DirectionStatus {
            name: self.name.clone(),
            rate: self.scheduled(now, origin).0,
            rx_rate,
            tx_rate,
            probability,
            queues,
            late,
        }
    }

    fn stats(&self) -> DirectionStats {
        let qs = self.qdisc.stats();
        let queues = self
            .queues
            .iter()
            .map(|t| {
                let s = qs.iter().find(|(id, _)| *id == t.id).map(|x| x.1).unwrap_or_default();
                QueueReport {
                    queue: t.id.name(),
                    id: t.id,
                    enqueued_packets: s.enqueued_packets,
                    enqueued_bytes: s.enqueued_bytes,
                    dequeued_packets: s.dequeued_packets,
                    dequeued_bytes: s.dequeued_bytes,
                    marks: s.marks,
                    drops: s.drops,
                    overlimit_drops: s.overlimit_drops,
                    backlog_packets: s.backlog_packets,
                    sojourn: SojournSummary::from_hist(&t.hist),
                    sojourn_hist: t.hist.clone(),
                }
            })
            .collect();
        DirectionStats {
            name: self.name.clone(),
            from: self.from.clone(),
            to: self.to.clone(),
            rate_bps: self.base_rate.bits_per_sec(),
            final_rate_bps: self.rate.bits_per_sec(),
            rate_changes_applied: self.changes_applied,
            rate_schedule: self
                .schedule
                .iter()
                .map(|(at, r)| (at.as_secs_f64(), r.bits_per_sec()))
                .collect(),
            rate_repeat_s: self.repeat.map(|p| p.as_secs_f64()),
            aqm: self.aqm_kind,
            rx_packets: self.rx_packets,
            rx_bytes: self.rx_bytes,
            tx_packets: self.tx_packets,
            tx_bytes: self.tx_bytes,
            non_ip_packets: self.non_ip,
            malformed: Malformed::ALL
                .iter()
                .map(|m| (m.name(), self.malformed[m.index()]))
                .collect(),
            oversize_drops: self.oversize,
            no_buffer_drops: self.no_buffer,
            kernel_drops: self.kernel_drops,
            tx_retries: self.tx_retries,
            tx_errors: self.tx_errors,
            pacer_forfeits: self.pacer_forfeits,
            pacer_forfeit_ns: self.pacer_forfeit_ns,
            lateness: self.lateness.stats(),
            unstamped: self.unstamped,
            peak_buffers: self.pool.peak(),
            buffer_limit: self.pool.max(),
            queues,
            probability: self.probability.clone(),
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
            cfg.rate_ab,
            &cfg.rate_changes_ab,
            cfg.rate_repeat_ab,
            &cfg.aqm_ab,
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
            cfg.rate_ba,
            &cfg.rate_changes_ba,
            cfg.rate_repeat_ba,
            &cfg.aqm_ba,
            Rng::derive(cfg.seed, 1),
            buf_size,
            cfg.batch,
        ),
    ];
    precise_timers();
    let realtime = match cfg.realtime_priority {
        None => "off".to_string(),
        Some(p) => match crate::afpacket::set_realtime(p) {
            Ok(()) => format!("SCHED_FIFO priority {p}"),
            Err(e) => format!("normal scheduler ({e})"),
        },
    };
    let fds = [socks[0].raw_fd(), socks[1].raw_fd()];
    let start = monotonic_now();
    let mut next_status = start + cfg.status_interval;
    let mut last_status = start;
    let fixed_origin = cfg.schedule_origin.unwrap_or(start);
    while !stop.load(Ordering::Relaxed) {
        let origin = match origin_cell {
            None => Some(fixed_origin),
            Some(c) => Some(c.load(Ordering::Acquire)).filter(|&t| t != u64::MAX).map(Time),
        };
        let now = monotonic_now();
        for d in dirs.iter_mut() {
            d.receive(&socks[d.rx], cfg.io, now, &mut sink)?;
        }
        let now = monotonic_now();
        for d in dirs.iter_mut() {
            d.timers(now);
            d.transmit(&socks[d.tx], now, cfg.max_lag, origin, &mut sink);
        }
        if now >= next_status {
            for d in dirs.iter_mut() {
                d.kernel_drops += socks[d.rx].kernel_drops();
            }
            let elapsed = now.since(start);
            let interval = now.since(last_status);
            let status = RouterStatus {
                elapsed,
                directions: dirs
                    .iter_mut()
                    .map(|d| d.status(interval, elapsed, now, origin))
                    .collect(),
            };
            on_status(&status);
            last_status = now;
            next_status = now + cfg.status_interval;
        }
        let mut wake = next_status;
        for d in &dirs {
            if let Some(t) = d.next_event(now) {
                wake = wake.min(t);
            }
        }
        let now = monotonic_now();
        if wake > now {
            let wait = wake.since(now);
            if wait > cfg.spin {
                // Sleep until the event or a readable socket; cap so that `stop` is seen.
                wait_readable(&fds, wait.min(Dur::from_millis(50)).as_nanos());
            }
        }
    }
    let end = monotonic_now();
    for d in dirs.iter_mut() {
        d.kernel_drops += socks[d.rx].kernel_drops();
    }
    Ok(RouterStats {
        started_ns: start.as_nanos(),
        duration_s: end.since(start).as_secs_f64(),
        realtime,
        directions: dirs.iter().map(|d| d.stats()).collect(),
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
    fn records_carry_the_sequence_number_of_tcp_data_segments_only() {
        let rec = |f: &Frame| record_of(0, f, Time::ZERO, QueueId::L, Dur::ZERO, Dur::ZERO, Decision::Pass, None);
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
        c.rate_changes_ab = vec![(Dur::from_secs(2), Rate::mbps(5)), (Dur::from_secs(2), Rate::mbps(7))];
        c.validate()
            .expect("equal times are allowed (a repeat period can start with a step at 0)");
        c.rate_changes_ba = vec![(Dur::from_secs(3), Rate::mbps(5)), (Dur::from_secs(1), Rate::mbps(7))];
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("rate_changes_ba[1]") && e.contains("time order"), "{e}");
        c.rate_changes_ba = vec![(Dur::from_secs(1), Rate(100))];
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("rate_changes_ba[0]") && e.contains("8kbit"), "{e}");
    }

    #[test]
    fn rate_changes_apply_at_serialisation_start_once_the_origin_is_known() {
        let sched = [(Dur::from_secs(2), Rate::mbps(5)), (Dur::from_secs(4), Rate::mbps(10))];
        let mut d = Direction::new(
            0,
            "a",
            "b",
            0,
            1,
            Rate::mbps(20),
            &sched,
            None,
            &fifo(),
            Rng::new(1),
            2048,
            8,
        );
        let origin = Time::from_secs(100);
        // Unknown origin: the configured rate stays.
        d.apply_rate_changes(Time::from_secs(1_000), None);
        assert_eq!(d.rate, Rate::mbps(20));
        // Just before the first change: still 20 Mbit/s (1500 B take 600 µs).
        d.apply_rate_changes(Time(origin.0 + 2_000_000_000 - 1), Some(origin));
        assert_eq!(d.rate.tx_time(1500), Dur::from_micros(600));
        // At the change: 5 Mbit/s (2.4 ms per 1500 B).
        d.apply_rate_changes(Time(origin.0 + 2_000_000_000), Some(origin));
        assert_eq!(d.rate.tx_time(1500), Dur::from_micros(2400));
        // Long after both: the last one holds, and both count as applied.
        d.apply_rate_changes(Time::from_secs(200), Some(origin));
        assert_eq!(d.rate, Rate::mbps(10));
        let st = d.stats();
        assert_eq!(
            (st.rate_bps, st.final_rate_bps, st.rate_changes_applied),
            (20_000_000, 10_000_000, 2)
        );
    }

    #[test]
    fn a_repeating_schedule_restarts_from_the_configured_rate_every_period() {
        // 20 Mbit/s, 5 from 1 s, 10 from 1.5 s, the whole pattern again every 2 s.
        let sched = [
            (Dur::from_secs(1), Rate::mbps(5)),
            (Dur::from_millis(1500), Rate::mbps(10)),
        ];
        let mut d = Direction::new(
            0,
            "a",
            "b",
            0,
            1,
            Rate::mbps(20),
            &sched,
            Some(Dur::from_secs(2)),
            &fifo(),
            Rng::new(1),
            2048,
            8,
        );
        let o = Time::from_secs(100);
        let at = |ms: u64| Time(o.0 + ms * 1_000_000);
        for (ms, mbps, applied) in [
            (0, 20, 0),
            (999, 20, 0),
            (1000, 5, 1),
            (1499, 5, 1),
            (1500, 10, 2),
            (1999, 10, 2),
            (2000, 20, 3),
            (3000, 5, 4),
            (3600, 10, 5),
            (4000, 20, 6),
        ] {
            assert_eq!(d.scheduled(at(ms), Some(o)), (Rate::mbps(mbps), applied), "at {ms} ms");
        }
        // A day on (43 200 periods of 3 changes each), with nothing expanded or replayed.
        assert_eq!(
            d.scheduled(at(86_400_000 + 1_200), Some(o)),
            (Rate::mbps(5), 43_200 * 3 + 1)
        );
        // Before the origin, and while it is unknown: the configured rate.
        assert_eq!(d.scheduled(Time::from_secs(99), Some(o)), (Rate::mbps(20), 0));
        assert_eq!(d.scheduled(at(1200), None), (Rate::mbps(20), 0));
        d.apply_rate_changes(at(3600), Some(o));
        assert_eq!(d.rate.tx_time(1500), Dur::from_micros(1200));
        // The status shows the rate in force now, even on an idle link that has not
        // applied it yet; the line prints it.
        let st = d.status(Dur::from_secs(1), Dur::from_millis(4100), at(4100), Some(o));
        assert_eq!(st.rate, Rate::mbps(20));
        let line = RouterStatus {
            elapsed: Dur::from_millis(4100),
            directions: vec![st],
        }
        .to_string();
        assert!(line.contains("a->b at 20.000Mbit in "), "{line}");
        // The statistics carry the schedule as configured.
        let st = d.stats();
        assert_eq!(
            (st.final_rate_bps, st.rate_changes_applied, st.rate_repeat_s),
            (10_000_000, 5, Some(2.0))
        );
        assert_eq!(st.rate_schedule, vec![(1.0, 5_000_000), (1.5, 10_000_000)]);
    }

    #[test]
    fn a_repeat_period_needs_changes_that_end_before_it() {
        let mut c = RouterConfig::new("a", "b", Rate::mbps(20), fifo());
        c.rate_repeat_ba = Some(Dur::from_secs(2));
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("rate_repeat_ba") && e.contains("empty schedule"), "{e}");
        c.rate_changes_ba = vec![(Dur::from_secs(1), Rate::mbps(5)), (Dur::from_secs(2), Rate::mbps(7))];
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("rate_repeat_ba") && e.contains("longer than the last change"),
            "{e}"
        );
        c.rate_repeat_ba = Some(Dur::from_millis(2001));
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
            rate: Rate::mbps(20),
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
