//! The upstream of a DOCSIS 3.1 cable link (cable modem to CMTS): the request–grant loop
//! on an OFDMA channel, as CableLabs' docsis-ns3 models it (`CmNetDevice`,
//! `CmtsUpstreamScheduler`, `DocsisNetDevice`), after DOCSIS 3.1 MULPI §7.2 (upstream
//! scheduling) and §7.2.3 (request and grant timing).
//!
//! ```text
//!   port 0 ──▶ [fault] ──▶ [CM queue: queue discipline] ──▶ granted minislots ──▶ CMTS ──▶ delay line ──▶ port 1
//! ```
//!
//! **Frames and minislots.** An OFDMA frame is `symbols_per_frame` symbols of 1/`subcarrier_spacing`
//! plus a cyclic prefix of `cyclic_prefix` samples at 102.4 MHz (6 × 22.5 µs = 135 µs by
//! default); a minislot is 400 kHz of subcarriers for one frame, carrying
//! floor(subcarriers × symbols × spectral efficiency × 0.8 / 8) bytes (48 B), and a frame has
//! subcarriers × spacing / 400 kHz of them (235). A MAP describes a whole number of frames,
//! the nearest to `map_interval` (2 ms → 15 frames = 2.025 ms).
//!
//! **Timing** (defaults in brackets): the CM needs CmMapProcTime = 600 µs + one frame ×
//! (symbols + 1) / symbols [757.5 µs] between receiving a MAP and the start of the interval
//! it describes; the CMTS builds the MAP `cmts_map_proc` [200 µs] before sending it, and it
//! travels the downstream interleaver ((M − 1) symbols [45 µs]), three downstream symbols
//! [67.5 µs] and half the round trip (`distance` / 10^5 s [40 µs]): the CMTS generates the MAP
//! of an interval starting at S at S − 1110 µs, from the requests that have reached it by
//! then. A request reaches the CMTS half a round trip plus three frames after the CM sends
//! it [445 µs]; data sent in a frame reach it at the end of the next frame plus half a round
//! trip (the CMTS's one-frame pipeline) [310 µs after the frame starts]. MinReqGntDelay,
//! the closest a request may come to the interval it is granted in, is derived as docsis-ns3
//! does [12 frames].
//!
//! **Requests.** When the CM learns a MAP (CmMapProcTime before its interval) it plans one
//! request in that interval: a contention request at a frame boundary drawn uniformly in
//! the interval if the MAP has no grant for it, else a piggybacked request one burst
//! preparation time (a frame) before its grant starts. A request asks for what the CM holds
//! (each packet as a DOCSIS MAC frame: max(IP length, 46) plus 18 B of Ethernet header and
//! FCS and 10 B of MAC header) less what it has requested and not yet been granted and its next
//! grant; nothing is asked when that is zero. Requests never collide (as in docsis-ns3).
//!
//! **Grants.** The CMTS keeps the bytes requested; each MAP it grants the minislots they
//! need, at most what the token buckets allow (maximum sustained rate with a bucket of
//! `max_traffic_burst`, peak rate with a bucket of 2 ms at that rate; both rates inflated by
//! (200 + 10) / 200 = 1.05 for MAC headers, the granted bytes taken from both) and at most
//! the capacity other modems leave free (`free_capacity` with ± `free_capacity_variation` %
//! drawn per MAP). The grant is one contiguous block placed at a uniformly random minislot
//! of the MAP interval so that it ends inside it. Bytes of a grant the CM leaves unused are
//! credited back to the sustained-rate bucket.
//!
//! **Transmission.** One frame before a grant starts the CM takes whole packets from its
//! queue until they cover the grant (later arrivals wait for the next grant); in each frame
//! of the grant it sends the next bytes of them, splitting a packet across frames and
//! grants (continuous concatenation and fragmentation); a packet leaves when the frame
//! holding its last byte does.
//!
//! **Two service flows.** Behind the DOCSIS dual queue (an Aggregate Service Flow, MULPI
//! §7.7) the modem has a Classic and a Low-Latency service flow, each with its
//! own requests, grants and staged packets, each filling its grants from its own queue.
//! The CMTS shares a MAP's best-effort minislots between them (docsis-ns3 `Allocate`): both
//! get what they asked for if it fits, else the LL flow gets `weight`/256 of them (the
//! ASF's Scheduling Weight, MULPI §7.7) and the Classic flow the rest, each never more than
//! it asked for. The LL grant comes first, the Classic one right after it.
//!
//! **Proactive Grant Service** (a MULPI §7.2.3 upstream scheduling service, with a
//! Guaranteed Grant Rate and a Guaranteed Grant Interval): the CMTS grants the LL flow
//! `pgs_rate` × 1.05 × `pgs_interval` bytes (rounded up to minislots) at the start of
//! every `pgs_interval` frames from the first MAP it builds, without requests, before and
//! beside the shaper (its bytes are taken from the token buckets, and unused ones given
//! back like any grant's). Further LL minislots are appended to the PGS grants, then
//! placed, with the Classic ones, in the gaps from the start of
//! the MAP (docsis-ns3 `ScheduleGrant`). The modem prepares every grant a frame ahead and
//! piggybacks its request there, so an LL packet waits at most one interval, plus a frame.
//!
//! Differences from docsis-ns3: a peak rate that is not set does not limit (docsis-ns3
//! grants nothing without one); an idle flow's first contention opportunity is drawn when its data arrives (the same law as drawing
//! one per MAP all along), and a contention request is planned only for a flow that holds
//! data; PGS grants count from the first MAP built after the run starts. The modem's own
//! request shaper (docsis-ns3 `ShapeRequest`) acts only when the Classic service flow has
//! a maximum sustained rate of its own, beside the aggregate's; here the service flows
//! share the aggregate's rates (`max_sustained_rate`, `peak_rate`), as in docsis-ns3's
//! examples, so it has nothing to do.

use crate::bucket::TokenBucket;
use crate::stage::{apply_fault, DelayLine, Origin, Queue};
use crate::{Departure, Fault, Io, Link, LinkPacket, LinkStats, Port, QueueInfo, Timer};
use l4s_aqm::{AqmConfig, QueueId, QueueStats};
use l4s_core::{Dur, Rate, Rng, Time, ETH_HEADER};
use std::collections::{BTreeMap, VecDeque};

/// The model's own agenda is due.
pub const STEP: Timer = 0;
/// The head of the delay line arrives.
pub const ARRIVE: Timer = 1;
/// The queue discipline's timer.
pub const QDISC: Timer = 2;

/// DOCSIS MAC header of an upstream data frame (bytes).
pub const MAC_HEADER: u64 = 10;
/// Mean packet size the CMTS assumes when it inflates rates for MAC headers (bytes).
const MEAN_PACKET: f64 = 200.0;
/// Width of a minislot (Hz).
const MINISLOT_HZ: f64 = 400e3;

/// Longest MAP interval a scenario may ask for.
pub const MAX_MAP_INTERVAL: Dur = Dur::from_millis(100);

/// The upstream channel and service flow of one cable modem; see the module documentation.
#[derive(Clone, Debug, PartialEq)]
pub struct DocsisUpstream {
    /// OFDMA subcarrier spacing: 25 or 50 kHz.
    pub subcarrier_spacing_hz: u32,
    /// Cyclic prefix in samples at 102.4 MHz.
    pub cyclic_prefix: u32,
    pub symbols_per_frame: u32,
    pub subcarriers: u32,
    /// Bits per second per hertz before the 80 % code rate.
    pub spectral_efficiency: f64,
    /// The MAP interval asked for; the actual one is a whole number of frames.
    pub map_interval: Dur,
    pub cmts_map_proc: Dur,
    /// Plant distance (km): the round trip is distance / 10^5 s.
    pub distance_km: f64,
    /// Downstream interleaver depth M, subcarrier spacing and cyclic prefix (samples at
    /// 204.8 MHz), for the MAP's path to the CM.
    pub ds_interleaver: u32,
    pub ds_subcarrier_spacing_hz: u32,
    pub ds_cyclic_prefix: u32,
    /// The service flow's maximum sustained rate and traffic burst, and its peak rate.
    pub max_sustained_rate: Option<Rate>,
    pub max_traffic_burst: Option<u64>,
    pub peak_rate: Option<Rate>,
    /// Capacity other modems leave free, and its variation per MAP (± %).
    pub free_capacity: Option<Rate>,
    pub free_capacity_variation: f64,
    /// Proactive Grant Service for the Low-Latency service flow: its guaranteed grant
    /// rate, and its guaranteed grant interval (whole frames; unset: one MAP interval).
    pub pgs_rate: Option<Rate>,
    pub pgs_interval: Option<Dur>,
}

impl Default for DocsisUpstream {
    fn default() -> Self {
        DocsisUpstream {
            subcarrier_spacing_hz: 50_000,
            cyclic_prefix: 256,
            symbols_per_frame: 6,
            subcarriers: 1880,
            spectral_efficiency: 10.0,
            map_interval: Dur::from_millis(2),
            cmts_map_proc: Dur::from_micros(200),
            distance_km: 8.0,
            ds_interleaver: 3,
            ds_subcarrier_spacing_hz: 50_000,
            ds_cyclic_prefix: 512,
            max_sustained_rate: None,
            max_traffic_burst: None,
            peak_rate: None,
            free_capacity: None,
            free_capacity_variation: 0.0,
            pgs_rate: None,
            pgs_interval: None,
        }
    }
}

/// Times and sizes derived from a [`DocsisUpstream`] (docsis-ns3 `DocsisNetDevice`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Derived {
    pub frame: Dur,
    pub minislots_per_frame: u64,
    pub minislot_bytes: u64,
    pub frames_per_map: u64,
    /// The actual MAP interval (whole frames).
    pub map: Dur,
    pub cm_map_proc: Dur,
    pub rtt: Dur,
    pub ds_symbol: Dur,
    pub ds_interleaver_delay: Dur,
    /// In frames.
    pub min_req_gnt_delay: u64,
    /// From a request leaving the CM to its arrival at the CMTS.
    pub request_delay: Dur,
    /// From the MAP's generation at the CMTS to the start of the interval it describes.
    pub map_lead: Dur,
    /// From the start of the frame holding a packet's last byte to its arrival at the CMTS.
    pub data_delay: Dur,
    /// Upstream capacity of the whole channel.
    pub capacity: Rate,
    /// The modem's estimate of its request–grant loop (docsis-ns3 `AddLoopDelayEstimate`:
    /// Alloc Start Time less Ack Time, that is MinReqGntDelay, plus one MAP interval).
    pub loop_delay: Dur,
    /// PGS: frames from one grant to the next, and minislots per grant (0 without PGS).
    pub pgs_frames: u64,
    pub pgs_minislots: u64,
}

impl DocsisUpstream {
    /// A rate inflated by (200 + 10) / 200 for MAC headers, in whole bits per second
    /// (docsis-ns3 truncates it).
    fn inflate_bps(r: Rate) -> f64 {
        (r.bits_per_sec() as f64 * (MEAN_PACKET + MAC_HEADER as f64) / MEAN_PACKET).floor()
    }

    /// The derived times and sizes.
    pub fn derived(&self) -> Derived {
        let scs = f64::from(self.subcarrier_spacing_hz.max(1));
        let k = u64::from(self.symbols_per_frame.max(1));
        let frame = Dur::from_secs_f64(k as f64 * (1.0 / scs + f64::from(self.cyclic_prefix) / 102.4e6)).max(Dur(1));
        let minislots_per_frame = ((f64::from(self.subcarriers) * scs / MINISLOT_HZ) as u64).max(1);
        let sc_per_minislot = (MINISLOT_HZ / scs) as u64;
        let minislot_bytes = ((sc_per_minislot * k) as f64 * self.spectral_efficiency * (0.8 / 8.0))
            .floor()
            .max(1.0) as u64;
        let frames_per_map = ((self.map_interval.as_nanos() as f64 / frame.as_nanos() as f64).round() as u64).max(1);
        let map = Dur(frame.as_nanos() * frames_per_map);
        let cm_map_proc = Dur::from_micros(600) + Dur(frame.as_nanos() * (k + 1) / k);
        let rtt = Dur::from_secs_f64(self.distance_km.max(0.0) / 1e5);
        let ds_scs = f64::from(self.ds_subcarrier_spacing_hz.max(1));
        let ds_symbol = Dur::from_secs_f64(1.0 / ds_scs + f64::from(self.ds_cyclic_prefix) / 204.8e6);
        let ds_interleaver_delay = Dur(ds_symbol.as_nanos() * u64::from(self.ds_interleaver.saturating_sub(1)));
        // docsis-ns3 `GetMinReqGntDelay`: the downstream pipeline (CMTS 1 + CM 1 + 1
        // symbols, counted without the cyclic prefix) and the upstream one (1 + 1 + 1 frames).
        let t = cm_map_proc + rtt + ds_interleaver_delay + self.cmts_map_proc;
        let min_req_gnt_delay = ((t.as_secs_f64() + 3.0 / ds_scs) / frame.as_secs_f64() + 3.0).ceil() as u64;
        let request_delay = rtt / 2 + Dur(frame.as_nanos() * 3);
        let map_lead =
            cm_map_proc + ds_interleaver_delay + Dur(ds_symbol.as_nanos() * 3) + rtt / 2 + self.cmts_map_proc;
        let data_delay = Dur(frame.as_nanos() * 2) + rtt / 2;
        let capacity = Rate::from_bytes_per_sec((minislot_bytes * minislots_per_frame) as f64 / frame.as_secs_f64());
        let loop_delay = Dur(frame.as_nanos() * min_req_gnt_delay) + map;
        // docsis-ns3 `CmtsUpstreamScheduler::Start`: the guaranteed rate inflated for MAC
        // headers, the interval floored to whole frames, each grant rounded up to minislots.
        let (pgs_frames, pgs_minislots) = match self.pgs_rate.filter(|r| r.bits_per_sec() > 0) {
            None => (0, 0),
            Some(r) => {
                let ggi = self.pgs_interval.unwrap_or(map);
                let frames = (ggi.as_nanos() / frame.as_nanos()).max(1);
                let bytes = ((Self::inflate_bps(r) / 8.0).floor() * (frames * frame.as_nanos()) as f64 / 1e9).ceil();
                (frames, (bytes as u64).div_ceil(minislot_bytes).max(1))
            }
        };
        Derived {
            pgs_frames,
            pgs_minislots,
            loop_delay,
            frame,
            minislots_per_frame,
            minislot_bytes,
            frames_per_map,
            map,
            cm_map_proc,
            rtt,
            ds_symbol,
            ds_interleaver_delay,
            min_req_gnt_delay,
            request_delay,
            map_lead,
            data_delay,
            capacity,
        }
    }

    /// Fit the modem's DOCSIS dual queue to this upstream where it does not say otherwise:
    /// the LL delay from the virtual queue aligned with the request–grant loop (MULPI
    /// Annex N.3 `qdelayCoupledV`), and the PGS rate and interval (whole frames) in its
    /// allowance (Annex O `calcAllowedAQ`). Any other queue discipline is left alone.
    pub fn fit_modem_queue(&self, aqm: &mut AqmConfig) {
        let AqmConfig::DocsisDualq(c) = aqm else {
            return;
        };
        let d = self.derived();
        c.estimator.get_or_insert(l4s_aqm::LlEstimator::CoupledV);
        c.loop_delay.get_or_insert(d.loop_delay);
        if self.pgs_rate.is_some() {
            c.pgs_rate = self.pgs_rate;
            c.pgs_interval = Some(Dur(d.frame.as_nanos() * d.pgs_frames));
        }
    }

    /// Check the parameters; the error names the key and what was expected.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if ![25_000, 50_000].contains(&self.subcarrier_spacing_hz) {
            return Err((
                "subcarrier_spacing",
                format!(
                    "expected 25 or 50 (kHz, DOCSIS 3.1 OFDMA), found {}",
                    f64::from(self.subcarrier_spacing_hz) / 1000.0
                ),
            ));
        }
        if !(6..=36).contains(&self.symbols_per_frame) {
            return Err((
                "symbols_per_frame",
                format!("expected 6 to 36 symbols, found {}", self.symbols_per_frame),
            ));
        }
        if self.subcarriers == 0 || self.subcarriers > 3800 {
            return Err((
                "subcarriers",
                format!("expected 1 to 3800 active subcarriers, found {}", self.subcarriers),
            ));
        }
        if !(self.spectral_efficiency.is_finite() && self.spectral_efficiency > 0.0 && self.spectral_efficiency <= 16.0)
        {
            return Err((
                "spectral_efficiency",
                format!(
                    "expected bits per second per hertz in (0, 16], found {}",
                    self.spectral_efficiency
                ),
            ));
        }
        // Well beyond the 1-2 ms CMTSs use; the scheduler walks a MAP's frames, so an
        // interval of years (a typo) would take as long as its frames to plan.
        if self.map_interval > MAX_MAP_INTERVAL {
            return Err((
                "map_interval",
                format!("expected at most {MAX_MAP_INTERVAL}, found {}", self.map_interval),
            ));
        }
        let d = self.derived();
        if self.map_interval < d.frame {
            return Err((
                "map_interval",
                format!(
                    "expected at least one OFDMA frame ({}), found {}",
                    d.frame, self.map_interval
                ),
            ));
        }
        if !(self.distance_km.is_finite() && (0.0..=160.0).contains(&self.distance_km)) {
            return Err((
                "distance",
                format!("expected a plant distance from 0 to 160 km, found {}", self.distance_km),
            ));
        }
        if self.ds_interleaver == 0 {
            return Err(("ds_interleaver", "expected an interleaver depth of at least 1".into()));
        }
        for (k, r) in [
            ("max_sustained_rate", self.max_sustained_rate),
            ("peak_rate", self.peak_rate),
            ("free_capacity", self.free_capacity),
        ] {
            if r.is_some_and(|r| r.bits_per_sec() == 0) {
                return Err((k, "expected a rate greater than zero".into()));
            }
        }
        if let (Some(p), Some(m)) = (self.peak_rate, self.max_sustained_rate) {
            if p < m {
                return Err((
                    "peak_rate",
                    format!("expected at least the maximum sustained rate ({m}), found {p}"),
                ));
            }
        }
        if self.max_traffic_burst == Some(0) {
            return Err(("max_traffic_burst", "expected at least 1 byte".into()));
        }
        if let Some(r) = self.pgs_rate {
            if r.bits_per_sec() == 0 {
                return Err(("pgs_rate", "expected a rate greater than zero".into()));
            }
            if let Some(m) = self.max_sustained_rate.filter(|m| r > *m) {
                return Err((
                    "pgs_rate",
                    format!("expected at most the upstream's maximum sustained rate ({m}), found {r}"),
                ));
            }
            if d.pgs_minislots > d.pgs_frames * d.minislots_per_frame {
                return Err((
                    "pgs_rate",
                    format!(
                        "expected at most the upstream capacity ({}, less 5 % for MAC headers), found {r}",
                        d.capacity
                    ),
                ));
            }
        }
        if let Some(i) = self.pgs_interval {
            if self.pgs_rate.is_none() {
                return Err(("pgs_interval", "needs `pgs_rate`, the guaranteed grant rate".into()));
            }
            if i < d.frame {
                return Err((
                    "pgs_interval",
                    format!("expected at least one OFDMA frame ({}), found {i}", d.frame),
                ));
            }
        }
        if !(self.free_capacity_variation.is_finite() && (0.0..=100.0).contains(&self.free_capacity_variation)) {
            return Err((
                "free_capacity_variation",
                format!(
                    "expected a percentage from 0 to 100, found {}",
                    self.free_capacity_variation
                ),
            ));
        }
        Ok(())
    }
}

/// MAC-frame bytes of a packet with a DOCSIS MAC header of `header` bytes: the Ethernet
/// frame of at least 64 bytes with its FCS (docsis-ns3 `GetUsMacFrameSize`,
/// `GetDsMacFrameSize`).
pub(crate) fn mac_frame_bytes<P: LinkPacket>(pkt: &P, header: u64) -> u64 {
    u64::from(pkt.wire_len().saturating_sub(ETH_HEADER)).max(46) + 18 + header
}

/// A packet a modem or a CMTS took from its queue to send, with what measurement needs of
/// it.
pub(crate) struct Taken<P> {
    pub(crate) pkt: P,
    /// MAC-frame bytes, and those not yet sent.
    pub(crate) mac: u64,
    pub(crate) left: u64,
    pub(crate) sub: QueueId,
    pub(crate) sojourn: Dur,
    pub(crate) marked: bool,
}

/// A grant in a MAP: its first minislot in the interval, its length, and whether it is a
/// Proactive Grant Service grant (perhaps extended by best-effort minislots).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Grant {
    start: u64,
    len: u64,
    pgs: bool,
}

/// The Classic service flow (the only one behind a queue discipline other than the
/// DOCSIS dual queue), and the Low-Latency one.
const CLASSIC: usize = 0;
const LOW_LATENCY: usize = 1;

/// What the model does at a time of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    /// The CMTS builds MAP `m`.
    GenMap(u64),
    /// The CM learns MAP `m`.
    MapKnown(u64),
    /// A service flow sends a request (contention or piggybacked).
    Request(usize),
    /// A service flow takes packets for its next grant (`pgs`: a PGS grant).
    Prepare { sf: usize, pgs: bool },
    /// A service flow sends `minislots` of its grants in the frame starting now.
    Frame { sf: usize, minislots: u64 },
}

/// One service flow of the modem: the CM's side (packets taken for grants, the transmit,
/// request and grant pipelines) and the CMTS's (requests in flight and not yet granted).
struct Flow<P> {
    /// The sub-queue it serves; `None`: the whole queue discipline.
    queue: Option<QueueId>,
    device: VecDeque<Taken<P>>,
    device_bytes: u64,
    /// Bytes prepared for grants and not yet sent, by the time they may go (the transmit
    /// pipeline).
    transmit: VecDeque<(Time, u64)>,
    /// Requests sent and not yet covered by grants (bytes, oldest first).
    requests: VecDeque<u64>,
    /// Grants learned and not yet prepared: (start of the first frame, bytes).
    grants: VecDeque<(Time, u64)>,
    /// The last MAP that gave the flow a grant.
    granted_map: Option<u64>,
    /// CMTS: requests in flight (arrival, bytes) and requested bytes not yet granted.
    in_flight: VecDeque<(Time, u64)>,
    requested: u64,
    /// When data reached the idle flow, until its first grant sends it.
    asked_at: Option<Time>,
}

impl<P> Flow<P> {
    fn new(queue: Option<QueueId>) -> Self {
        Flow {
            queue,
            device: VecDeque::new(),
            device_bytes: 0,
            transmit: VecDeque::new(),
            requests: VecDeque::new(),
            grants: VecDeque::new(),
            granted_map: None,
            in_flight: VecDeque::new(),
            requested: 0,
            asked_at: None,
        }
    }

    /// Bytes prepared for grants and not yet sent.
    fn scheduled(&self) -> u64 {
        self.transmit.iter().map(|e| e.1).sum()
    }

    /// Forget the request–grant state (the MAP grid moved); packets taken stay.
    fn reset(&mut self) {
        self.transmit.clear();
        self.requests.clear();
        self.grants.clear();
        self.granted_map = None;
        self.in_flight.clear();
        self.requested = 0;
    }
}

/// The upstream of one cable modem; see the module documentation.
pub struct DocsisUpstreamLink<P> {
    cfg: DocsisUpstream,
    d: Derived,
    delay: Dur,
    fault: Option<Fault>,
    queue: Queue<P>,
    line: DelayLine<P>,
    rng: Rng,
    origin: Origin,
    /// The agenda: (time, sequence) → event.
    agenda: BTreeMap<(Time, u64), Ev>,
    seq: u64,
    armed: Option<Time>,
    /// The service flows: Classic, and Low-Latency behind the DOCSIS dual queue.
    flows: Vec<Flow<P>>,
    /// The CMTS's share of best-effort grants for the LL flow, in 256ths.
    weight: u32,
    /// The MAP the CM will learn next (its chain of MapKnown events), if it runs.
    next_known: Option<u64>,
    /// CMTS: the MAPs it has built (index → grants per flow), and the next it will build.
    built: BTreeMap<u64, Vec<(usize, Grant)>>,
    next_gen: Option<u64>,
    /// CMTS: the frame PGS grants count from.
    pgs_anchor: u64,
    /// CMTS token buckets (bytes) and when they were last filled.
    msr: TokenBucket,
    peak: TokenBucket,
    filled: Option<Time>,
    stats: LinkStats,
}

impl<P: LinkPacket + 'static> DocsisUpstreamLink<P> {
    /// The modem's queue is `aqm`: behind the DOCSIS dual queue the modem has a Classic
    /// and a Low-Latency service flow, each with its own requests and grants, and the
    /// dual queue's `weight` shares best-effort grants between them; behind any other
    /// queue discipline it has one service flow.
    pub fn new(cfg: DocsisUpstream, delay: Dur, aqm: &AqmConfig, fault: Option<Fault>, rng: Rng) -> Self {
        let d = cfg.derived();
        let seed = rng.clone().next_u64();
        let (flows, weight) = match aqm {
            AqmConfig::DocsisDualq(c) => (
                vec![Flow::new(Some(QueueId::C)), Flow::new(Some(QueueId::L))],
                c.weight.clamp(1, 255),
            ),
            _ => (vec![Flow::new(None)], 0),
        };
        let mut link = DocsisUpstreamLink {
            d,
            delay,
            fault,
            queue: Queue::new(aqm, rng),
            line: DelayLine::default(),
            rng: Rng::derive(seed, 0x0d0c_5150),
            origin: Origin::default(),
            agenda: BTreeMap::new(),
            seq: 0,
            armed: None,
            flows,
            weight,
            next_known: None,
            built: BTreeMap::new(),
            next_gen: None,
            pgs_anchor: 0,
            msr: TokenBucket::new(None, 0.0),
            peak: TokenBucket::new(None, 0.0),
            filled: None,
            stats: LinkStats::default(),
            cfg,
        };
        link.msr = TokenBucket::new(link.cfg.max_sustained_rate.map(Self::inflate), link.msr_bucket());
        link.peak = TokenBucket::new(link.cfg.peak_rate.map(Self::inflate), link.peak_bucket());
        link
    }

    pub fn derived(&self) -> Derived {
        self.d
    }

    /// Whether the LL flow has Proactive Grant Service.
    fn pgs(&self) -> bool {
        self.d.pgs_minislots > 0 && self.flows.len() > LOW_LATENCY
    }

    /// A rate inflated for MAC headers, in bytes per second.
    fn inflate(r: Rate) -> f64 {
        DocsisUpstream::inflate_bps(r) / 8.0
    }

    /// The sustained-rate bucket: `max_traffic_burst`, by default 100 ms at the rate.
    fn msr_bucket(&self) -> f64 {
        match self.cfg.max_sustained_rate {
            None => f64::INFINITY,
            Some(r) => self
                .cfg
                .max_traffic_burst
                .map(|b| b as f64)
                .unwrap_or_else(|| Self::inflate(r) * 0.1),
        }
    }

    /// The peak-rate bucket: 2 ms at the rate.
    fn peak_bucket(&self) -> f64 {
        self.cfg.peak_rate.map_or(f64::INFINITY, |r| Self::inflate(r) * 0.002)
    }

    fn start_of(&self, m: u64) -> Time {
        self.origin.get() + Dur(self.d.map.as_nanos().saturating_mul(m))
    }

    fn frame_time(&self, m: u64, j: u64) -> Time {
        self.start_of(m) + Dur(self.d.frame.as_nanos() * j)
    }

    /// The MAP interval holding `t`.
    fn map_of(&self, t: Time) -> u64 {
        t.as_nanos().saturating_sub(self.origin.get().as_nanos()) / self.d.map.as_nanos().max(1)
    }

    fn minislots_per_map(&self) -> u64 {
        self.d.minislots_per_frame * self.d.frames_per_map
    }

    fn at(&mut self, t: Time, ev: Ev) {
        self.seq += 1;
        self.agenda.insert((t, self.seq), ev);
    }

    /// MAC bytes flow `f` holds: its queue and what it took for grants and has not sent.
    fn held(&self, f: usize) -> u64 {
        let fl = &self.flows[f];
        let (n, b) = match fl.queue {
            None => (self.queue.qdisc.len_packets(), self.queue.qdisc.len_bytes()),
            Some(q) => self.queue.qdisc.backlog_of(q),
        };
        // The queue discipline counts frames; add the MAC framing per packet.
        b + n as u64 * (18 + MAC_HEADER - ETH_HEADER as u64) + fl.device_bytes
    }

    fn flow_active(&self, f: usize) -> bool {
        let fl = &self.flows[f];
        let queued = match fl.queue {
            None => self.queue.qdisc.len_packets(),
            Some(q) => self.queue.qdisc.backlog_of(q).0,
        };
        queued > 0 || !fl.device.is_empty() || !fl.requests.is_empty() || !fl.grants.is_empty()
    }

    /// Whether the CM must follow the MAPs: a flow is busy, or PGS grants keep coming.
    fn active(&self) -> bool {
        self.pgs() || (0..self.flows.len()).any(|f| self.flow_active(f))
    }

    /// Flow `f` sends a request for what it holds beyond its outstanding requests and its
    /// next grant (docsis-ns3 `MakeRequest`).
    fn make_request(&mut self, f: usize, now: Time) {
        let held = self.held(f);
        let fl = &mut self.flows[f];
        let next_grant = fl.grants.front().map_or(0, |g| g.1);
        let covered = fl.requests.iter().sum::<u64>() + next_grant;
        if held <= covered {
            return;
        }
        let bytes = held - covered;
        fl.requests.push_back(bytes);
        let arrives = now + self.d.request_delay;
        fl.in_flight.push_back((arrives, bytes));
        self.stats.scheduling_requests += 1;
        // The CMTS builds the first MAP it can from then on.
        let mut m = self.map_of(arrives);
        while self.start_of(m) < arrives + self.d.map_lead {
            m += 1;
        }
        self.plan_gen_map(m);
    }

    /// Have the CMTS build MAP `m` unless it builds an earlier one first.
    fn plan_gen_map(&mut self, m: u64) {
        if self.next_gen.is_none_or(|g| g > m) {
            if let Some(g) = self.next_gen {
                self.agenda.retain(|_, e| *e != Ev::GenMap(g));
            }
            self.next_gen = Some(m);
            let t = Time(self.start_of(m).as_nanos().saturating_sub(self.d.map_lead.as_nanos()));
            self.at(t, Ev::GenMap(m));
        }
    }

    /// The frames of MAP `m` that start a PGS grant: every `pgs_frames` from the anchor.
    fn pgs_frames_of(&self, m: u64) -> impl Iterator<Item = u64> + '_ {
        let every = self.d.pgs_frames.max(1);
        (0..self.d.frames_per_map).filter(move |j| {
            let frame = m * self.d.frames_per_map + j;
            frame >= self.pgs_anchor && (frame - self.pgs_anchor).is_multiple_of(every)
        })
    }

    /// The CMTS's split of a MAP's best-effort minislots between the Classic and LL flows
    /// (docsis-ns3 `Allocate`): at most `available`, at least the `pgs` minislots already
    /// given to the LL flow; when both flows ask for more than their share, the LL flow
    /// gets `weight`/256 of the minislots.
    fn allocate(&self, available: u64, pgs: u64, c_req: u64, l_req: u64) -> (u64, u64) {
        let ms = self.d.minislot_bytes;
        let max_c = c_req.div_ceil(ms);
        let max_l = l_req.div_ceil(ms).max(pgs);
        if pgs >= max_l {
            return (available.saturating_sub(pgs).min(max_c), pgs);
        }
        let total = available.min(max_c + max_l).max(pgs);
        let lw = ((total as f64 * f64::from(self.weight) / 256.0) as u64).max(pgs);
        let cw = total - lw;
        match (max_l <= lw, max_c <= cw) {
            (true, true) => (max_c, max_l),
            (false, false) => (cw, lw),
            (true, false) => ((total - max_l).min(max_c), max_l),
            (false, true) => (max_c, (total - max_c).min(max_l)),
        }
    }

    /// Where the grants of a MAP go (docsis-ns3 `ScheduleGrant`): without PGS, the LL
    /// grant then the Classic one, back to back from a uniformly random minislot; with
    /// PGS, the PGS grants at their frames, the LL flow's further minislots appended to
    /// them, and what remains (LL, then Classic) in the gaps from the start of the MAP.
    fn place(&mut self, m: u64, c: u64, l: u64) -> Vec<(usize, Grant)> {
        let per_map = self.minislots_per_map();
        let mut out: Vec<(usize, Grant)> = Vec::new();
        if !self.pgs() {
            let start = self.rng.below(per_map - (c + l) + 1);
            if l > 0 {
                out.push((
                    LOW_LATENCY,
                    Grant {
                        start,
                        len: l,
                        pgs: false,
                    },
                ));
            }
            if c > 0 {
                out.push((
                    CLASSIC,
                    Grant {
                        start: start + l,
                        len: c,
                        pgs: false,
                    },
                ));
            }
            return out;
        }
        let per = self.d.minislots_per_frame;
        for j in self.pgs_frames_of(m) {
            {
                out.push((
                    LOW_LATENCY,
                    Grant {
                        start: j * per,
                        len: self.d.pgs_minislots.min(per_map - j * per),
                        pgs: true,
                    },
                ));
            }
        }
        let pgs_total: u64 = out.iter().map(|g| g.1.len).sum();
        let mut extra = l.saturating_sub(pgs_total);
        for i in 0..out.len() {
            let end = out[i].1.start + out[i].1.len;
            let next = out.get(i + 1).map_or(per_map, |g| g.1.start);
            let add = extra.min(next.saturating_sub(end));
            out[i].1.len += add;
            extra -= add;
        }
        for (sf, mut n) in [(LOW_LATENCY, extra), (CLASSIC, c)] {
            let mut cursor = 0;
            let mut gaps = Vec::new();
            for g in out.iter().map(|g| g.1).chain([Grant {
                start: per_map,
                len: 0,
                pgs: false,
            }]) {
                let take = n.min(g.start.saturating_sub(cursor));
                if take > 0 {
                    gaps.push((
                        sf,
                        Grant {
                            start: cursor,
                            len: take,
                            pgs: false,
                        },
                    ));
                    n -= take;
                }
                cursor = cursor.max(g.start + g.len);
            }
            out.extend(gaps);
            out.sort_by_key(|g| g.1.start);
        }
        out
    }

    /// The CMTS builds MAP `m` (docsis-ns3 `GenerateMap`).
    fn gen_map(&mut self, m: u64, now: Time) {
        for fl in &mut self.flows {
            while fl.in_flight.front().is_some_and(|r| r.0 <= now) {
                if let Some((_, b)) = fl.in_flight.pop_front() {
                    fl.requested += b;
                }
            }
        }
        // Token buckets: filled for the time since the last MAP (the first: one interval).
        let dt = self.filled.map_or(self.d.map, |f| now.since(f)).as_secs_f64();
        self.filled = Some(now);
        self.msr.fill(dt, true);
        self.peak.fill(dt, true);
        let per_map = self.minislots_per_map();
        let free = match self.cfg.free_capacity {
            None => per_map,
            Some(r) => {
                let max = (r.bytes_per_sec() * self.d.map.as_secs_f64()).round();
                let w = (self.cfg.free_capacity_variation / 100.0 * max).floor();
                let draw = if w > 0.0 {
                    max + (self.rng.next_f64() * 2.0 - 1.0) * w
                } else {
                    max
                };
                ((draw.max(0.0) / self.d.minislot_bytes as f64).round() as u64).min(per_map)
            }
        };
        let ms = self.d.minislot_bytes;
        // PGS grants: every `pgs_frames` frames, not limited by tokens or free capacity.
        let pgs = if self.pgs() {
            self.pgs_frames_of(m).count() as u64 * self.d.pgs_minislots
        } else {
            0
        };
        let tokens = self.msr.tokens().min(self.peak.tokens());
        let by_tokens = if tokens.is_infinite() {
            u64::MAX
        } else {
            (tokens.max(0.0) / ms as f64).ceil() as u64
        };
        let c_req = self.flows[CLASSIC].requested;
        let l_req = self.flows.get(LOW_LATENCY).map_or(0, |f| f.requested);
        if c_req > 0 || l_req > 0 {
            // What the flows asked for beyond PGS, and what the channel leaves free.
            self.stats.shaper_decisions += 1;
            let asked = c_req.div_ceil(ms) + l_req.div_ceil(ms).saturating_sub(pgs);
            if by_tokens < asked.min(free) {
                self.stats.shaper_limited += 1;
            }
        }
        let (c, l) = if by_tokens > 0 && (c_req > 0 || l_req > 0) {
            self.allocate(by_tokens.min(free), pgs, c_req, l_req)
        } else {
            (0, pgs)
        };
        if c + l > 0 {
            let grants = self.place(m, c, l);
            for (sf, g) in &grants {
                self.stats.grants += 1;
                self.stats.blocks += 1;
                self.stats.block_bytes += g.len * ms;
                if g.pgs {
                    self.stats.pgs_grants += 1;
                }
                let fl = &mut self.flows[*sf];
                fl.requested = fl.requested.saturating_sub(g.len * ms);
            }
            let bytes = ((c + l) * ms) as f64;
            self.msr.take_to_empty(bytes);
            self.peak.take_to_empty(bytes);
            self.built.insert(m, grants);
        }
        self.next_gen = None;
        if self.pgs() || self.flows.iter().any(|f| f.requested > 0 || !f.in_flight.is_empty()) {
            self.plan_gen_map(m + 1);
        }
    }

    /// The CM learns MAP `m` (docsis-ns3 `HandleMapMsg`, `ScheduleGrantEvents`): per
    /// flow, its grants, or else a contention request in that interval.
    fn map_known(&mut self, m: u64, now: Time) {
        self.next_known = None;
        let grants = self.built.remove(&m).unwrap_or_default();
        let per = self.d.minislots_per_frame;
        for f in 0..self.flows.len() {
            let mine: Vec<Grant> = grants.iter().filter(|g| g.0 == f).map(|g| g.1).collect();
            if mine.is_empty() {
                if self.held(f) > 0 {
                    let k = self.rng.below(self.d.frames_per_map);
                    let t = self.frame_time(m, k);
                    self.at(t, Ev::Request(f));
                }
                continue;
            }
            // The grants cover the oldest requests.
            let mut covered = mine.iter().map(|g| g.len).sum::<u64>() * self.d.minislot_bytes;
            let fl = &mut self.flows[f];
            fl.granted_map = Some(m);
            while covered > 0 {
                let Some(r) = fl.requests.front_mut() else { break };
                if *r <= covered {
                    covered -= *r;
                    fl.requests.pop_front();
                } else {
                    *r -= covered;
                    covered = 0;
                }
            }
            let mut frames: BTreeMap<u64, u64> = BTreeMap::new();
            for g in &mine {
                let first = g.start / per;
                let start = self.frame_time(m, first);
                self.flows[f].grants.push_back((start, g.len * self.d.minislot_bytes));
                // Burst preparation (one frame, 135 µs by default) before the grant's first
                // frame; the piggybacked request goes first.
                let prep = Time(
                    start
                        .as_nanos()
                        .saturating_sub(self.d.frame.as_nanos())
                        .max(now.as_nanos()),
                );
                self.at(prep, Ev::Request(f));
                self.at(prep, Ev::Prepare { sf: f, pgs: g.pgs });
                let mut lo = g.start;
                while lo < g.start + g.len {
                    let hi = ((lo / per + 1) * per).min(g.start + g.len);
                    *frames.entry(lo / per).or_default() += hi - lo;
                    lo = hi;
                }
            }
            for (j, minislots) in frames {
                let t = self.frame_time(m, j);
                self.at(t, Ev::Frame { sf: f, minislots });
            }
        }
        if self.active() {
            self.schedule_known(m + 1, now);
        }
    }

    fn schedule_known(&mut self, m: u64, now: Time) {
        if self.next_known.is_some() {
            return;
        }
        self.next_known = Some(m);
        let t = Time(
            self.start_of(m)
                .as_nanos()
                .saturating_sub(self.d.cm_map_proc.as_nanos()),
        )
        .max(now);
        self.at(t, Ev::MapKnown(m));
    }

    /// Data reached idle flow `f` at `now`: its contention opportunity in this interval if
    /// the interval has no grant for it and the opportunity is still ahead, and the MAPs
    /// from the next one on.
    fn wake_up(&mut self, f: usize, now: Time) {
        let n = self.map_of(now);
        if self.flows[f].granted_map != Some(n) {
            let k = self.rng.below(self.d.frames_per_map);
            let t = self.frame_time(n, k);
            if t >= now {
                self.at(t, Ev::Request(f));
            }
        }
        self.schedule_known(n + 1, now);
    }

    /// Flow `f` takes packets for its next grant (docsis-ns3 `PrepareBurst`).
    fn prepare(&mut self, f: usize, pgs: bool, now: Time) {
        let Some((start, bytes)) = self.flows[f].grants.pop_front() else {
            return;
        };
        let fl = &mut self.flows[f];
        let scheduled = fl.scheduled();
        while fl.device_bytes - scheduled < bytes {
            let d = match fl.queue {
                None => self.queue.qdisc.dequeue(now, &mut self.queue.drops),
                Some(q) => self.queue.qdisc.dequeue_from(q, now, &mut self.queue.drops),
            };
            let Some(d) = d else { break };
            let left = mac_frame_bytes(&d.pkt, MAC_HEADER);
            fl.device_bytes += left;
            fl.device.push_back(Taken {
                pkt: d.pkt,
                mac: left,
                left,
                sub: d.queue,
                sojourn: d.sojourn,
                marked: d.marked,
            });
        }
        let add = bytes.min(fl.device_bytes - scheduled);
        if add > 0 {
            fl.transmit.push_back((start, add));
        }
        // The grant's unused bytes go back to the sustained-rate bucket.
        let unused = bytes - add;
        if unused > 0 {
            self.msr.credit(unused as f64);
        }
        if add == 0 {
            self.stats.grants_unused += 1;
            if pgs {
                self.stats.pgs_grants_unused += 1;
            }
        }
        self.note_staged(f);
    }

    /// Tell the queue discipline what the LL flow holds outside it.
    fn note_staged(&mut self, f: usize) {
        if let Some(q) = self.flows[f].queue {
            self.queue.qdisc.staged(q, self.flows[f].device_bytes);
        }
    }

    /// Flow `f` sends `minislots` of its grants in the frame starting now (docsis-ns3
    /// `SendFrame`).
    fn frame(&mut self, f: usize, minislots: u64, now: Time, io: &mut Io<'_, P>) {
        let serialisation_rate = self.nominal_rate();
        let arrive = now + self.d.data_delay + self.delay;
        let fl = &mut self.flows[f];
        let eligible: u64 = fl.transmit.iter().take_while(|e| e.0 <= now).map(|e| e.1).sum();
        let mut budget = (minislots * self.d.minislot_bytes).min(eligible);
        if budget == 0 {
            return;
        }
        if let Some(at) = fl.asked_at.take() {
            self.stats.record_grant_delay(now.since(at));
        }
        self.stats.block_bytes_used += budget;
        let mut used = budget;
        while used > 0 {
            let Some(e) = fl.transmit.front_mut() else { break };
            let k = used.min(e.1);
            e.1 -= k;
            used -= k;
            if e.1 == 0 {
                fl.transmit.pop_front();
            }
        }
        while budget > 0 {
            let Some(head) = fl.device.front_mut() else { break };
            let k = budget.min(head.left);
            head.left -= k;
            budget -= k;
            fl.device_bytes -= k;
            if head.left == 0 {
                let Some(tx) = fl.device.pop_front() else { break };
                io.departed(&Departure {
                    pkt: &tx.pkt,
                    queue: 0,
                    sub: tx.sub,
                    sojourn: tx.sojourn,
                    start: now,
                    // Link time at the service flow's rate (for the utilisation).
                    serialisation: serialisation_rate.tx_time(tx.mac),
                    marked: tx.marked,
                });
                self.line.push(tx.pkt, arrive, io, ARRIVE);
            }
        }
        self.note_staged(f);
    }

    /// The rate the modem may send at: the channel's, at most the sustained rate and the
    /// free capacity.
    fn nominal_rate(&self) -> Rate {
        let mut r = self.d.capacity;
        for limit in [self.cfg.max_sustained_rate, self.cfg.free_capacity]
            .into_iter()
            .flatten()
        {
            r = r.min(limit);
        }
        r
    }

    /// Run the agenda up to now in time order, then ask for the next wake-up.
    fn rationalize(&mut self, io: &mut Io<'_, P>) {
        let now = io.now;
        while let Some((&(t, seq), &ev)) = self.agenda.iter().next() {
            if t > now {
                break;
            }
            self.agenda.remove(&(t, seq));
            match ev {
                Ev::GenMap(m) => self.gen_map(m, t),
                Ev::MapKnown(m) => self.map_known(m, t),
                Ev::Request(f) => self.make_request(f, t),
                Ev::Prepare { sf, pgs } => self.prepare(sf, pgs, t),
                Ev::Frame { sf, minislots } => self.frame(sf, minislots, t, io),
            }
        }
        self.queue.flush_drops(io);
        self.queue.arm(io, QDISC);
        if let Some(&(t, _)) = self.agenda.keys().next() {
            if self.armed != Some(t) {
                self.armed = Some(t);
                io.wake(STEP, t);
            }
        }
    }
}

impl<P: LinkPacket + 'static> Link<P> for DocsisUpstreamLink<P> {
    fn ports(&self) -> usize {
        2
    }

    fn start(&mut self, origin: Time, io: &mut Io<'_, P>) {
        // MAP intervals count from `origin` from now on: what was planned on a provisional
        // grid (a live forwarder's packets before the run's clock was fixed) is dropped, and
        // a modem that holds data asks again.
        self.origin.start(origin);
        self.agenda.clear();
        self.built.clear();
        for fl in &mut self.flows {
            fl.reset();
        }
        self.next_known = None;
        self.next_gen = None;
        self.armed = None;
        let now = io.now.max(origin);
        if self.pgs() {
            // The CMTS grants PGS from the first MAP it can build, from its first frame.
            let mut m = self.map_of(now);
            while self.start_of(m) < now + self.d.map_lead {
                m += 1;
            }
            self.pgs_anchor = m * self.d.frames_per_map;
            self.plan_gen_map(m);
            self.schedule_known(self.map_of(now) + 1, now);
        }
        for f in 0..self.flows.len() {
            if self.flow_active(f) {
                self.wake_up(f, now);
            }
        }
        self.rationalize(io);
    }

    fn send(&mut self, _from: Port, _to: Port, mut pkt: P, io: &mut Io<'_, P>) {
        self.origin.provisional(io.now);
        self.rationalize(io);
        // Per flow: whether it held data, and whether it was active at all.
        let mut idle = [(false, false); 2];
        for (f, i) in idle.iter_mut().enumerate().take(self.flows.len()) {
            *i = (self.held(f) == 0, !self.flow_active(f));
        }
        apply_fault(self.fault, self.origin.started(), io.now, &mut pkt);
        self.queue.enqueue(pkt, io);
        self.queue.qdisc.drain_enqueue_drops(&mut self.queue.drops);
        for (f, (empty, was_idle)) in idle.into_iter().enumerate().take(self.flows.len()) {
            if empty && self.held(f) > 0 {
                self.flows[f].asked_at = Some(io.now);
            }
            if was_idle && self.flow_active(f) {
                self.wake_up(f, io.now);
            }
        }
        self.rationalize(io);
    }

    ticked_link_timeouts!(STEP);

    one_queue_queries!();

    fn rate(&self, _from: Port, _to: Port) -> Option<Rate> {
        Some(self.nominal_rate())
    }

    fn stats(&self) -> LinkStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{deep_fifo, drive, Pkt, Seen};
    use l4s_core::Ecn;

    #[test]
    fn derived_defaults_match_docsis_ns3() {
        let d = DocsisUpstream::default().derived();
        assert_eq!(d.frame, Dur::from_nanos(135_000));
        assert_eq!((d.minislots_per_frame, d.minislot_bytes), (235, 48));
        assert_eq!((d.frames_per_map, d.map), (15, Dur::from_nanos(2_025_000)));
        assert_eq!(d.cm_map_proc, Dur::from_nanos(757_500));
        assert_eq!(d.rtt, Dur::from_micros(80));
        assert_eq!(d.ds_interleaver_delay, Dur::from_micros(45));
        assert_eq!(d.min_req_gnt_delay, 12);
        assert_eq!(d.request_delay, Dur::from_micros(445));
        assert_eq!(d.map_lead, Dur::from_nanos(1_110_000));
        assert!(
            (d.capacity.bits_per_sec() as f64 / 668.4e6 - 1.0).abs() < 1e-3,
            "{}",
            d.capacity
        );
        let one = DocsisUpstream {
            map_interval: Dur::from_millis(1),
            ..Default::default()
        }
        .derived();
        assert_eq!((one.frames_per_map, one.map), (7, Dur::from_nanos(945_000)));
        // A MAP shorter than a frame is refused by name.
        let bad = DocsisUpstream {
            map_interval: Dur::from_micros(100),
            ..Default::default()
        };
        assert_eq!(bad.validate().unwrap_err().0, "map_interval");
        // So is one of years (a run with it never got past its first MAP); 100 ms is the
        // longest.
        let bad = DocsisUpstream {
            map_interval: Dur::from_nanos(u64::MAX),
            ..Default::default()
        };
        let e = bad.validate().unwrap_err();
        assert_eq!(e.0, "map_interval");
        assert!(e.1.contains("at most 100ms"), "{}", e.1);
        let longest = DocsisUpstream {
            map_interval: MAX_MAP_INTERVAL,
            ..Default::default()
        };
        assert!(longest.validate().is_ok());
        let bad = DocsisUpstream {
            max_sustained_rate: Some(Rate::mbps(50)),
            peak_rate: Some(Rate::mbps(20)),
            ..Default::default()
        };
        assert_eq!(bad.validate().unwrap_err().0, "peak_rate");
    }

    /// Isolated 200-byte packets at an idle modem, one every 50 ms at a uniform phase:
    /// their delays to the CMTS.
    fn idle_delays(map: Dur) -> Vec<f64> {
        let cfg = DocsisUpstream {
            map_interval: map,
            ..Default::default()
        };
        let mut link = DocsisUpstreamLink::<Pkt>::new(cfg, Dur::ZERO, &deep_fifo(), None, Rng::new(5));
        let mut phase = Rng::new(9);
        let n = 4000u64;
        let offers: Vec<_> = (0..n)
            .map(|i| {
                let t = Time::from_millis(50 * i) + Dur(phase.below(10_000_000));
                (
                    t,
                    0,
                    1,
                    Pkt {
                        id: i,
                        size: 214,
                        ecn: Ecn::NotEct,
                    },
                )
            })
            .collect();
        let sent: Vec<Time> = offers.iter().map(|o| o.0).collect();
        let out = drive(&mut link, offers, Time::from_millis(50 * n + 100), &mut Seen::default());
        assert_eq!(out.len() as u64, n);
        out.iter()
            .map(|(at, _, p)| at.since(sent[p.id as usize]).as_millis_f64())
            .collect()
    }

    /// docsis-ns3's rules give an idle modem's first packet (arrival to the CMTS) a delay of
    /// 1.930 ms to 8.275 ms, mean 5.03 ms, with a 2 ms MAP, and 1.930 to 4.900 ms, mean
    /// 3.33 ms, with a 1 ms MAP (the request waits for a frame drawn uniformly in the MAP
    /// interval, needs 12 frames to be granted, and the grant lands anywhere in its MAP).
    #[test]
    fn idle_modem_access_delay_follows_the_request_grant_loop() {
        for (map, mean, max) in [(Dur::from_millis(2), 5.03, 8.275), (Dur::from_millis(1), 3.33, 4.900)] {
            let d = idle_delays(map);
            let m = d.iter().sum::<f64>() / d.len() as f64;
            let lo = d.iter().cloned().fold(f64::MAX, f64::min);
            let hi = d.iter().cloned().fold(0.0, f64::max);
            eprintln!("MAP {map}: mean {m:.3} ms, min {lo:.3}, max {hi:.3}");
            assert!((m - mean).abs() <= 0.3, "MAP {map}: mean {m}");
            assert!(lo >= 1.930 - 1e-6 && hi <= max + 1e-6, "MAP {map}: {lo}..{hi}");
        }
    }

    /// A backlogged modem shaped to 20 Mbit/s: the long-run rate stays within the 1.05
    /// header inflation of the sustained rate, and every grant is used.
    #[test]
    fn shaping_holds_the_sustained_rate() {
        let cfg = DocsisUpstream {
            max_sustained_rate: Some(Rate::mbps(20)),
            peak_rate: Some(Rate::mbps(40)),
            ..Default::default()
        };
        let mut link = DocsisUpstreamLink::<Pkt>::new(cfg, Dur::ZERO, &deep_fifo(), None, Rng::new(5));
        // 30 Mbit/s offered for 4 s.
        let gap = Rate::mbps(30).tx_time(1514);
        let n = (4e9 / gap.as_nanos() as f64) as u64;
        let offers: Vec<_> = (0..n)
            .map(|i| {
                (
                    Time(i * gap.as_nanos()),
                    0,
                    1,
                    Pkt {
                        id: i,
                        size: 1514,
                        ecn: Ecn::NotEct,
                    },
                )
            })
            .collect();
        let mut seen = Seen::default();
        let out = drive(&mut link, offers, Time::from_secs(4), &mut seen);
        // The MAC bytes of what left between 1 s and 4 s.
        let mac = (1514 - 14 + 28) as f64;
        let late = out.iter().filter(|(t, _, _)| *t >= Time::from_secs(1)).count() as f64;
        let rate = late * mac * 8.0 / 3.0;
        eprintln!("granted rate {:.2} Mbit/s", rate / 1e6);
        assert!((20e6 * 0.95..=20e6 * 1.05 * 1.01).contains(&rate), "{rate}");
        // Backlogged: every grant was used, and once the 100 ms bucket was spent the
        // shaper cut nearly every MAP's grant (the queue only grows).
        let s = link.stats();
        assert!(s.grants > 1000 && s.grants_unused == 0, "{s:?}");
        let share = s.shaper_limited as f64 / s.shaper_decisions as f64;
        assert!(s.shaper_decisions > 1900 && share > 0.9, "{s:?}");
    }

    /// A modem sending 15 Mbit/s steadily (below its 20 Mbit/s sustained rate): each packet
    /// waits in the modem for the grant its request earns, about a request–grant loop (12
    /// frames from request to MAP start, plus where in the MAP the grant falls), so the
    /// modem holds rate × loop of data.
    #[test]
    fn a_steady_sender_queues_about_one_request_grant_loop() {
        let cfg = DocsisUpstream {
            max_sustained_rate: Some(Rate::mbps(20)),
            ..Default::default()
        };
        let mut link = DocsisUpstreamLink::<Pkt>::new(cfg, Dur::ZERO, &deep_fifo(), None, Rng::new(5));
        let gap = Rate::mbps(15).tx_time(1514);
        let n = (3e9 / gap.as_nanos() as f64) as u64;
        let offers: Vec<_> = (0..n)
            .map(|i| {
                let p = Pkt {
                    id: i,
                    size: 1514,
                    ecn: Ecn::NotEct,
                };
                (Time(i * gap.as_nanos()), 0, 1, p)
            })
            .collect();
        let mut seen = Seen::default();
        let out = drive(&mut link, offers, Time::from_secs(4), &mut seen);
        assert_eq!(out.len() as u64, n);
        let soj: Vec<f64> = seen
            .departed
            .iter()
            .filter(|d| d.0 >= Time::from_secs(1))
            .map(|d| d.2.as_millis_f64())
            .collect();
        let mean = soj.iter().sum::<f64>() / soj.len() as f64;
        eprintln!("mean time in the modem's queue {mean:.3} ms");
        let map = DocsisUpstream::default().derived().map.as_millis_f64();
        assert!(mean >= map && mean <= 3.0 * map, "{mean} ms against a {map} ms MAP");
    }

    /// What a dual-queue modem did with two constant-rate streams (docsis-ns3's
    /// `delay-estimation` experiment): an ECT(1) one into the LL flow and a Not-ECT one into
    /// the Classic flow, `size`-byte packets, for 10 s at a 1 ms MAP, 50 Mbit/s sustained
    /// and 100 Mbit/s peak. Returns the share of LL packets marked CE after the first
    /// second, and the Classic and LL rates delivered (bit/s) and the link's counters.
    fn two_streams(ll: Rate, classic: Rate, pgs: Option<(Rate, Dur)>, qp: bool) -> (f64, f64, f64, LinkStats) {
        let amsr = Rate::mbps(50);
        let mut cfg = DocsisUpstream {
            map_interval: Dur::from_millis(1),
            max_sustained_rate: Some(amsr),
            peak_rate: Some(Rate::mbps(100)),
            ..Default::default()
        };
        if let Some((r, i)) = pgs {
            cfg.pgs_rate = Some(r);
            cfg.pgs_interval = Some(i);
        }
        cfg.validate().unwrap();
        let mut aqm = AqmConfig::DocsisDualq(Box::new(l4s_aqm::DocsisDualqConfig {
            max_rate: Some(amsr),
            queue_protection: l4s_aqm::QueueProtectionConfig {
                enabled: qp,
                ..Default::default()
            },
            ..Default::default()
        }));
        cfg.fit_modem_queue(&mut aqm);
        let mut link = DocsisUpstreamLink::<Pkt>::new(cfg, Dur::ZERO, &aqm, None, Rng::new(5));
        let size: u32 = 1000 + 14;
        let secs = 10u64;
        let mut offers = Vec::new();
        let mut id = 0;
        for (rate, ecn) in [(ll, Ecn::Ect1), (classic, Ecn::NotEct)] {
            if rate.bits_per_sec() == 0 {
                continue;
            }
            let gap = rate.tx_time(u64::from(size));
            let n = secs * 1_000_000_000 / gap.as_nanos();
            for i in 0..n {
                offers.push((Time(i * gap.as_nanos()), 0, 1, Pkt { id, size, ecn }));
                id += 1;
            }
        }
        let out = drive(&mut link, offers, Time::from_secs(secs), &mut Seen::default());
        let late: Vec<_> = out.iter().filter(|o| o.0 >= Time::from_secs(1)).collect();
        let ll_out: Vec<_> = late.iter().filter(|o| o.2.ecn != Ecn::NotEct).collect();
        let ce = ll_out.iter().filter(|o| o.2.ecn == Ecn::Ce).count() as f64 / ll_out.len().max(1) as f64;
        let span = (secs - 1) as f64;
        let bps = |n: usize| n as f64 * (size as f64) * 8.0 / span;
        let c_n = late.len() - ll_out.len();
        (ce, bps(c_n), bps(ll_out.len()), link.stats())
    }

    /// docsis-ns3's `delay-estimation` scenarios (1 ms MAP, 50 Mbit/s sustained): a
    /// well-behaved virtual queue keeps the LL delay estimate at its floor, so next to
    /// nothing is marked, while the LL stream fits the service flow, with or without PGS
    /// (scenarios 1–3, 7–11), and lets it grow when the stream does not fit (5, 12).
    #[test]
    fn virtual_queue_follows_the_delay_estimation_scenarios() {
        let ms = Dur::from_micros(1000);
        for (name, ll, c, pgs, fits) in [
            ("1", 49_900, 0, None, true),
            ("2", 44_900, 5_000, None, true),
            ("3", 24_900, 25_000, None, true),
            ("5", 52_200, 0, None, false),
            ("7", 49_900, 0, Some(10_000), true),
            ("9", 49_900, 0, Some(30_000), true),
            ("11", 49_900, 0, Some(49_900), true),
            ("12", 47_085, 7_300, Some(20_000), false),
        ] {
            let pgs = pgs.map(|r| (Rate::kbps(r), ms));
            let (ce, c_bps, l_bps, s) = two_streams(Rate::kbps(ll), Rate::kbps(c), pgs, true);
            eprintln!(
                "scenario {name}: LL marked {ce:.4}, Classic {:.2} Mbit/s, LL {:.2} Mbit/s, grants {} (PGS {})",
                c_bps / 1e6,
                l_bps / 1e6,
                s.grants,
                s.pgs_grants,
            );
            if fits {
                assert!(ce < 0.002, "scenario {name}: {ce}");
                // Both streams get through whole.
                assert!(
                    (l_bps / (ll as f64 * 1e3) - 1.0).abs() < 0.01,
                    "scenario {name}: {l_bps}"
                );
                assert!(
                    c == 0 || (c_bps / (c as f64 * 1e3) - 1.0).abs() < 0.01,
                    "scenario {name}: {c_bps}"
                );
            } else {
                assert!(ce > 0.5, "scenario {name}: {ce}");
            }
            if pgs.is_some() {
                // One PGS grant per interval (7 frames of 135 µs), over the 10 s.
                let n = 10e9 / (7.0 * 135e3);
                assert!((s.pgs_grants as f64 / n - 1.0).abs() < 0.01, "{}", s.pgs_grants);
            }
        }
    }

    /// An unresponsive LL stream of 60 Mbit/s and a Classic one of 20 ask for more than the
    /// 52.5 Mbit/s the shaper grants (Queue Protection off, so the LL stream stays in its
    /// flow); the CMTS gives the LL flow 230/256 of the best-effort minislots, so the
    /// Classic flow keeps about a tenth, no less.
    #[test]
    fn the_weight_leaves_the_classic_flow_its_share() {
        let (_, c_bps, l_bps, _) = two_streams(Rate::kbps(60_000), Rate::kbps(20_000), None, false);
        let total = c_bps + l_bps;
        eprintln!("Classic {:.2}, LL {:.2} Mbit/s", c_bps / 1e6, l_bps / 1e6);
        assert!((total / 52.5e6 - 1.0).abs() < 0.02, "{total}");
        let share = c_bps / total;
        assert!((0.09..0.12).contains(&share), "Classic share {share}");
    }

    /// A game's 64 packets a second (200 B, ECT(1)) with Proactive Grant Service of
    /// 16 Mbit/s (a 288-byte grant, enough for one packet, per interval): no request, the
    /// packet waits for the next grant's burst preparation (under one interval), one frame
    /// to its grant, and the CMTS has it two frames and half a round trip later. So with a
    /// grant every frame (135 µs) each packet takes 445 to 580 µs, mean 512 µs; with one
    /// per MAP (2.025 ms) at most a MAP more than that, mean about 1.46 ms.
    #[test]
    fn pgs_grants_the_low_latency_flow_without_requests() {
        let d = DocsisUpstream::default().derived();
        for (ggi, lo, hi, mean) in [
            (d.frame, 0.445, 0.580, 0.5125),
            (d.map, 0.445, 0.445 + 2.025, 0.445 + 1.0125),
        ] {
            let cfg = DocsisUpstream {
                max_sustained_rate: Some(Rate::mbps(50)),
                pgs_rate: Some(Rate::mbps(16)),
                pgs_interval: Some(ggi),
                ..Default::default()
            };
            cfg.validate().unwrap();
            let dd = cfg.derived();
            // 16.8 Mbit/s with MAC headers: 283.5 B a frame (6 minislots), 4253 B a MAP (89).
            assert_eq!(dd.pgs_minislots, if dd.pgs_frames == 1 { 6 } else { 89 }, "{dd:?}");
            let mut aqm = AqmConfig::DocsisDualq(Box::new(l4s_aqm::DocsisDualqConfig {
                max_rate: Some(Rate::mbps(50)),
                ..Default::default()
            }));
            cfg.fit_modem_queue(&mut aqm);
            let mut link = DocsisUpstreamLink::<Pkt>::new(cfg, Dur::ZERO, &aqm, None, Rng::new(5));
            let mut phase = Rng::new(9);
            let n = 640u64;
            let offers: Vec<_> = (0..n)
                .map(|i| {
                    let t = Time::from_millis(100) + Dur(15_625_000 * i + phase.below(1_000_000));
                    let p = Pkt {
                        id: i,
                        size: 214,
                        ecn: Ecn::Ect1,
                    };
                    (t, 0, 1, p)
                })
                .collect();
            let sent: Vec<Time> = offers.iter().map(|o| o.0).collect();
            let out = drive(&mut link, offers, Time::from_secs(11), &mut Seen::default());
            assert_eq!(out.len() as u64, n);
            let delays: Vec<f64> = out
                .iter()
                .map(|(at, _, p)| at.since(sent[p.id as usize]).as_millis_f64())
                .collect();
            let m = delays.iter().sum::<f64>() / delays.len() as f64;
            let (min, max) = (
                delays.iter().cloned().fold(f64::MAX, f64::min),
                delays.iter().cloned().fold(0.0, f64::max),
            );
            eprintln!("GGI {ggi}: access delay {min:.3}..{max:.3} ms, mean {m:.3}");
            assert!(min >= lo - 1e-6 && max <= hi + 1e-6, "{min}..{max}");
            assert!((m - mean).abs() < 0.05 * mean, "{m}");
            let s = link.stats();
            // No requests: every packet went in a PGS grant; the rest of them went unused.
            assert_eq!(s.scheduling_requests, 0);
            assert_eq!(s.pgs_grants, s.grants);
            assert!(s.pgs_grants - s.pgs_grants_unused >= n, "{s:?}");
        }
    }

    /// PGS is refused above the sustained rate, above what the channel can carry, and with
    /// an interval shorter than a frame.
    #[test]
    fn pgs_settings_are_checked() {
        let base = DocsisUpstream {
            max_sustained_rate: Some(Rate::mbps(50)),
            ..Default::default()
        };
        let bad = DocsisUpstream {
            pgs_rate: Some(Rate::mbps(60)),
            ..base.clone()
        };
        assert_eq!(bad.validate().unwrap_err().0, "pgs_rate");
        let bad = DocsisUpstream {
            max_sustained_rate: None,
            pgs_rate: Some(Rate::mbps(700)),
            ..base.clone()
        };
        assert!(bad.validate().unwrap_err().1.contains("capacity"));
        let bad = DocsisUpstream {
            pgs_rate: Some(Rate::mbps(5)),
            pgs_interval: Some(Dur::from_micros(100)),
            ..base
        };
        assert_eq!(bad.validate().unwrap_err().0, "pgs_interval");
    }
}
