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
//! Differences from docsis-ns3: one service flow per modem (Proactive Grant Service, the
//! split of grants between a Classic and a Low-Latency flow and the CM's own request shaper
//! are not modelled yet); a peak rate that is not set does not limit (docsis-ns3 grants
//! nothing without one); an idle modem's first contention opportunity is drawn when its
//! data arrives (the same law as drawing one per MAP all along).

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
}

impl DocsisUpstream {
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
        Derived {
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

    /// Check the parameters; the error names the key and what was expected.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if ![25_000, 50_000].contains(&self.subcarrier_spacing_hz) {
            return Err((
                "subcarrier_spacing",
                format!(
                    "expected \"25kHz\" or \"50kHz\" (DOCSIS 3.1 OFDMA), found {} Hz",
                    self.subcarrier_spacing_hz
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

/// A packet the CM took from its queue for a grant, with what measurement needs of it.
struct Taken<P> {
    pkt: P,
    /// MAC-frame bytes, and those not yet sent.
    mac: u64,
    left: u64,
    sub: QueueId,
    sojourn: Dur,
    marked: bool,
}

/// A grant in a MAP: its first minislot in the interval and its length.
#[derive(Clone, Copy, Debug)]
struct Grant {
    start: u64,
    len: u64,
}

/// What the model does at a time of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// The CMTS builds MAP `m`.
    GenMap(u64),
    /// The CM learns MAP `m`.
    MapKnown(u64),
    /// The CM sends a request (contention or piggybacked).
    Request,
    /// The CM takes packets for MAP `m`'s grant.
    Prepare(u64),
    /// Frame `j` of MAP `m`'s grant is sent.
    Frame(u64, u64),
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
    /// CM: packets taken for grants, the bytes of them already given a grant
    /// (`scheduled`), the bytes the current grant may still send, and its unused bytes.
    device: VecDeque<Taken<P>>,
    device_bytes: u64,
    scheduled: u64,
    eligible: u64,
    /// CM: requests sent and not yet covered by grants (bytes, oldest first).
    pipeline: VecDeque<u64>,
    /// CM: grants known and not yet prepared, and grants being sent: MAP index → grant.
    known: BTreeMap<u64, Grant>,
    sending: BTreeMap<u64, Grant>,
    /// The MAP the CM will learn next (its chain of MapKnown events), if it runs.
    next_known: Option<u64>,
    /// CMTS: requests in flight (arrival, bytes), requested bytes not yet granted, the
    /// MAPs it has built (index → grant), and the next MAP it will build.
    in_flight: VecDeque<(Time, u64)>,
    requested: u64,
    built: BTreeMap<u64, Grant>,
    next_gen: Option<u64>,
    /// CMTS token buckets (bytes) and when they were last filled.
    msr_tokens: f64,
    peak_tokens: f64,
    filled: Option<Time>,
    /// When data reached an idle CM, until its first grant starts.
    asked_at: Option<Time>,
    stats: LinkStats,
}

impl<P: LinkPacket + 'static> DocsisUpstreamLink<P> {
    pub fn new(cfg: DocsisUpstream, delay: Dur, aqm: &AqmConfig, fault: Option<Fault>, rng: Rng) -> Self {
        let d = cfg.derived();
        let seed = rng.clone().next_u64();
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
            device: VecDeque::new(),
            device_bytes: 0,
            scheduled: 0,
            eligible: 0,
            pipeline: VecDeque::new(),
            known: BTreeMap::new(),
            sending: BTreeMap::new(),
            next_known: None,
            in_flight: VecDeque::new(),
            requested: 0,
            built: BTreeMap::new(),
            next_gen: None,
            msr_tokens: 0.0,
            peak_tokens: 0.0,
            filled: None,
            asked_at: None,
            stats: LinkStats::default(),
            cfg,
        };
        link.msr_tokens = link.msr_bucket();
        link.peak_tokens = link.peak_bucket();
        link
    }

    pub fn derived(&self) -> Derived {
        self.d
    }

    fn inflate(r: Rate) -> f64 {
        // docsis-ns3 truncates the inflated rate to whole bits per second.
        (r.bits_per_sec() as f64 * (MEAN_PACKET + MAC_HEADER as f64) / MEAN_PACKET).floor() / 8.0
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

    /// MAC-frame bytes of a packet (docsis-ns3 `GetUsMacFrameSize`).
    fn mac_bytes(pkt: &P) -> u64 {
        u64::from(pkt.wire_len().saturating_sub(ETH_HEADER)).max(46) + 18 + MAC_HEADER
    }

    /// MAC bytes the CM holds: its queue and what it took for grants and has not sent.
    fn held(&self) -> u64 {
        // The queue discipline counts frames; add the MAC framing per packet.
        let q = self.queue.qdisc.len_bytes()
            + self.queue.qdisc.len_packets() as u64 * (18 + MAC_HEADER - ETH_HEADER as u64);
        q + self.device_bytes
    }

    fn active(&self) -> bool {
        self.queue.qdisc.len_packets() > 0
            || !self.device.is_empty()
            || !self.pipeline.is_empty()
            || !self.known.is_empty()
    }

    /// The CM sends a request for what it holds beyond its outstanding requests and its
    /// next grant (docsis-ns3 `MakeRequest`).
    fn make_request(&mut self, now: Time) {
        let next_grant = self.known.values().next().map_or(0, |g| g.len * self.d.minislot_bytes);
        let covered = self.pipeline.iter().sum::<u64>() + next_grant;
        let held = self.held();
        if held <= covered {
            return;
        }
        let bytes = held - covered;
        self.pipeline.push_back(bytes);
        self.stats.scheduling_requests += 1;
        let arrives = now + self.d.request_delay;
        self.in_flight.push_back((arrives, bytes));
        // The CMTS builds the first MAP it can from then on.
        let mut m = self.map_of(arrives);
        while self.start_of(m) < arrives + self.d.map_lead {
            m += 1;
        }
        if self.next_gen.is_none_or(|g| g > m) {
            if let Some(g) = self.next_gen {
                self.agenda.retain(|_, e| *e != Ev::GenMap(g));
            }
            self.next_gen = Some(m);
            let t = self.start_of(m) - self.d.map_lead;
            self.at(t, Ev::GenMap(m));
        }
    }

    /// The CMTS builds MAP `m` (docsis-ns3 `GenerateMap`, `Allocate`, `ScheduleGrant`).
    fn gen_map(&mut self, m: u64, now: Time) {
        while self.in_flight.front().is_some_and(|r| r.0 <= now) {
            if let Some((_, b)) = self.in_flight.pop_front() {
                self.requested += b;
            }
        }
        // Token buckets: filled for the time since the last MAP (the first: one interval).
        let dt = self.filled.map_or(self.d.map, |f| now.since(f)).as_secs_f64();
        self.filled = Some(now);
        if let Some(r) = self.cfg.max_sustained_rate {
            self.msr_tokens = (self.msr_tokens + (dt * Self::inflate(r)).floor()).min(self.msr_bucket());
        }
        if let Some(r) = self.cfg.peak_rate {
            self.peak_tokens = (self.peak_tokens + (dt * Self::inflate(r)).floor()).min(self.peak_bucket());
        }
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
        let tokens = self.msr_tokens.min(self.peak_tokens);
        let by_tokens = if tokens.is_infinite() {
            u64::MAX
        } else {
            (tokens.max(0.0) / ms as f64).ceil() as u64
        };
        let len = self.requested.div_ceil(ms).min(by_tokens).min(free);
        if len > 0 {
            let start = self.rng.below(per_map - len + 1);
            self.built.insert(m, Grant { start, len });
            let bytes = (len * ms) as f64;
            self.requested = self.requested.saturating_sub(len * ms);
            self.msr_tokens = (self.msr_tokens - bytes).max(0.0);
            self.peak_tokens = (self.peak_tokens - bytes).max(0.0);
            self.stats.grants += 1;
            self.stats.blocks += 1;
            self.stats.block_bytes += len * ms;
        }
        self.next_gen = None;
        if self.requested > 0 || !self.in_flight.is_empty() {
            self.next_gen = Some(m + 1);
            let t = self.start_of(m + 1) - self.d.map_lead;
            self.at(t, Ev::GenMap(m + 1));
        }
    }

    /// The CM learns MAP `m` (docsis-ns3 `HandleMapMsg`): its grant, and the request it
    /// plans in that interval.
    fn map_known(&mut self, m: u64, now: Time) {
        self.next_known = None;
        let grant = self.built.remove(&m);
        if let Some(g) = grant {
            // The grant covers the oldest requests.
            let mut covered = g.len * self.d.minislot_bytes;
            while covered > 0 {
                let Some(r) = self.pipeline.front_mut() else { break };
                if *r <= covered {
                    covered -= *r;
                    self.pipeline.pop_front();
                } else {
                    *r -= covered;
                    covered = 0;
                }
            }
            self.known.insert(m, g);
            let first = g.start / self.d.minislots_per_frame;
            let last = (g.start + g.len - 1) / self.d.minislots_per_frame;
            // Burst preparation (one frame, 135 µs by default) before the grant's first frame;
            // the piggybacked request goes first.
            let prep = Time(
                self.frame_time(m, first)
                    .as_nanos()
                    .saturating_sub(self.d.frame.as_nanos())
                    .max(now.as_nanos()),
            );
            self.at(prep, Ev::Request);
            self.at(prep, Ev::Prepare(m));
            for j in first..=last {
                let t = self.frame_time(m, j);
                self.at(t, Ev::Frame(m, j));
            }
        } else {
            let k = self.rng.below(self.d.frames_per_map);
            let t = self.frame_time(m, k);
            self.at(t, Ev::Request);
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

    /// Data reached an idle CM at `now`: its contention opportunity in this interval if it
    /// is still ahead, and the MAPs from the next one on.
    fn wake_up(&mut self, now: Time) {
        let n = self.map_of(now);
        let k = self.rng.below(self.d.frames_per_map);
        let t = self.frame_time(n, k);
        if t >= now {
            self.at(t, Ev::Request);
        }
        self.schedule_known(n + 1, now);
    }

    /// Take packets for MAP `m`'s grant (docsis-ns3 `PrepareBurst`).
    fn prepare(&mut self, m: u64, now: Time) {
        let Some(g) = self.known.remove(&m) else { return };
        let bytes = g.len * self.d.minislot_bytes;
        while self.device_bytes - self.scheduled < bytes {
            let Some(d) = self.queue.qdisc.dequeue(now, &mut self.queue.drops) else {
                break;
            };
            let left = Self::mac_bytes(&d.pkt);
            self.device_bytes += left;
            self.device.push_back(Taken {
                pkt: d.pkt,
                mac: left,
                left,
                sub: d.queue,
                sojourn: d.sojourn,
                marked: d.marked,
            });
        }
        let add = bytes.min(self.device_bytes - self.scheduled);
        self.scheduled += add;
        self.eligible += add;
        // The grant's unused bytes go back to the sustained-rate bucket.
        let unused = bytes - add;
        if unused > 0 && self.cfg.max_sustained_rate.is_some() {
            self.msr_tokens += unused as f64;
        }
        if add == 0 {
            self.stats.grants_unused += 1;
        }
        self.sending.insert(m, g);
    }

    /// Send frame `j` of MAP `m`'s grant (docsis-ns3 `SendFrame`).
    fn frame(&mut self, m: u64, j: u64, io: &mut Io<'_, P>) {
        let Some(g) = self.sending.get(&m).copied() else { return };
        let per = self.d.minislots_per_frame;
        let lo = (j * per).max(g.start);
        let hi = ((j + 1) * per).min(g.start + g.len);
        let mut budget = (hi.saturating_sub(lo) * self.d.minislot_bytes).min(self.eligible);
        let t = self.frame_time(m, j);
        if budget == 0 {
            return;
        }
        if let Some(at) = self.asked_at.take() {
            self.stats.record_grant_delay(t.since(at));
        }
        self.eligible -= budget;
        self.stats.block_bytes_used += budget;
        while budget > 0 {
            let Some(head) = self.device.front_mut() else { break };
            let k = budget.min(head.left);
            head.left -= k;
            budget -= k;
            self.device_bytes -= k;
            self.scheduled -= k;
            if head.left == 0 {
                let Some(tx) = self.device.pop_front() else { break };
                io.departed(&Departure {
                    pkt: &tx.pkt,
                    queue: 0,
                    sub: tx.sub,
                    sojourn: tx.sojourn,
                    start: t,
                    // Link time at the service flow's rate (for the utilisation).
                    serialisation: self.nominal_rate().tx_time(tx.mac),
                    marked: tx.marked,
                });
                self.line.push(tx.pkt, t + self.d.data_delay + self.delay, io, ARRIVE);
            }
        }
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
                Ev::Request => self.make_request(t),
                Ev::Prepare(m) => self.prepare(m, t),
                Ev::Frame(m, j) => {
                    self.frame(m, j, io);
                    let per = self.d.minislots_per_frame;
                    if self.sending.get(&m).is_some_and(|g| (g.start + g.len - 1) / per == j) {
                        self.sending.remove(&m);
                        // Bytes the grant could not carry are lost to the CM.
                        self.eligible = 0;
                        self.scheduled = self.scheduled.min(self.device_bytes);
                    }
                }
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
        self.known.clear();
        self.sending.clear();
        self.built.clear();
        self.in_flight.clear();
        self.pipeline.clear();
        self.requested = 0;
        self.next_known = None;
        self.next_gen = None;
        self.scheduled = 0;
        self.eligible = 0;
        self.armed = None;
        if self.active() {
            self.wake_up(io.now.max(origin));
        }
        self.rationalize(io);
    }

    fn send(&mut self, _from: Port, _to: Port, mut pkt: P, io: &mut Io<'_, P>) {
        self.origin.provisional(io.now);
        self.rationalize(io);
        let was_idle = !self.active();
        apply_fault(self.fault, self.origin.started(), io.now, &mut pkt);
        self.queue.enqueue(pkt, io);
        self.queue.qdisc.drain_enqueue_drops(&mut self.queue.drops);
        if was_idle && self.active() {
            self.asked_at = Some(io.now);
            self.wake_up(io.now);
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
        // Backlogged: every grant was used.
        let s = link.stats();
        assert!(s.grants > 1000 && s.grants_unused == 0, "{s:?}");
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
}
