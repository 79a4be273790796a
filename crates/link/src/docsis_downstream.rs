//! The downstream of a DOCSIS 3.1 cable link (CMTS to cable modem): the CMTS's queue, its
//! service-flow shaping and the OFDM channel's symbol clock and pipeline, as CableLabs'
//! docsis-ns3 models them (`CmtsNetDevice::HandleSymbolBoundary`, `SendSymbol`,
//! `CmNetDevice::StartDecoding`), after DOCSIS 3.1 PHYv3.1 §7.5 (the downstream OFDM
//! channel) and MULPI Annex C.2.2.7 (the QoS parameters of a service flow).
//!
//! ```text
//!   port 0 ──▶ [fault] ──▶ [CMTS queue: queue discipline] ──▶ symbols, shaped ──▶ pipeline ──▶ delay line ──▶ port 1
//! ```
//!
//! **Symbols.** An OFDM symbol lasts 1/`subcarrier_spacing` plus a cyclic prefix of
//! `cyclic_prefix` samples at 204.8 MHz (20 µs + 2.5 µs = 22.5 µs by default). It carries
//! the payload of the LDPC codewords that fit its subcarriers: a codeword of 16 200 bits
//! (2025 B) takes 2025 × 8 / `spectral_efficiency` subcarriers, and each needs a next
//! codeword pointer of 48 bits on 12 subcarriers (16-QAM), so a symbol holds
//! (subcarriers − 12) / (2025 × 8 / efficiency + 12) codewords of 1777 payload bytes,
//! 99 % filled on average, less the upstream's MAP messages (docsis-ns3
//! `GetDsSymbolCapacity`): 4816 B per 22.5 µs, 1.71 Gbit/s, with the defaults (3745
//! subcarriers at 12 bit/s/Hz).
//!
//! **Shaping** (MULPI Annex C.2.2.7.2, C.2.2.7.3 and C.2.2.7.10). The service flow's
//! maximum sustained rate (the link's `rate`) fills a bucket of `max_traffic_burst` bytes
//! (by default 100 ms at the rate), its peak rate a bucket of one maximum PDU (1532 B);
//! both count DOCSIS MAC frames (the Ethernet frame, at least 64 B, and a 10 B MAC
//! header), and a symbol carries at most what both hold.
//!
//! **Timing.** At each symbol boundary while it has data, the CMTS decides how many bytes
//! the symbol after next carries and takes the packets that need from its queue (the
//! queue discipline's dequeue), continuing a packet split at the previous symbol first
//! (continuous concatenation and fragmentation). The bytes are encoded one symbol
//! (CmtsDsPipelineFactor) before they are sent, take a symbol on the wire, half the
//! plant's round trip to reach the modem, and the modem decodes them one symbol
//! (CmDsPipelineFactor) plus the interleaver's (M − 1) symbols later: a packet reaches the
//! modem 5 symbols plus 40 µs (152.5 µs) after the boundary at which its last byte was
//! scheduled.
//!
//! Differences from docsis-ns3: tokens are taken when bytes are scheduled (docsis-ns3
//! takes them a symbol later, when the bytes are sent, so a symbol boundary may schedule
//! bytes the previous one already counted on), and kept as fractions of a byte (docsis-ns3
//! truncates each refill to whole bytes); a peak rate that is not set does not limit;
//! the other users of the channel are not modelled (docsis-ns3's downstream free capacity
//! is always the whole symbol); the propagation delay is half the plant's round trip
//! (docsis-ns3's channel has none).

use crate::bucket::TokenBucket;
use crate::docsis::{mac_frame_bytes, DocsisUpstream, Taken};
use crate::stage::{apply_fault, DelayLine, Origin, Queue};
use crate::{Departure, Fault, Io, Link, LinkPacket, LinkStats, Port, QueueInfo, Timer};
use l4s_aqm::{AqmConfig, QueueId, QueueStats};
use l4s_core::{Dur, Rate, Rng, Time};

/// The next symbol boundary is due.
pub const STEP: Timer = 0;
/// The head of the delay line arrives.
pub const ARRIVE: Timer = 1;
/// The queue discipline's timer.
pub const QDISC: Timer = 2;

/// The downstream DOCSIS MAC header (bytes; docsis-ns3 `DsMacHdrSize`).
pub const DS_MAC_HEADER: u64 = 10;
/// The peak-rate bucket: one maximum PDU (docsis-ns3 `MaxPdu`).
pub const MAX_PDU: u64 = 1532;
/// Symbols from a boundary to the symbol sent: CmtsDsPipelineFactor.
const CMTS_PIPELINE: u64 = 1;
/// Symbols the modem takes to decode: CmDsPipelineFactor.
const CM_PIPELINE: u64 = 1;
/// LDPC codeword: 16 200 bits coded (2025 B), 1777 B of payload; the next codeword pointer
/// is 48 bits at 4 bits per subcarrier; codewords are 99 % full on average.
const CODEWORD_BYTES: f64 = 2025.0;
const CODEWORD_PAYLOAD: f64 = 1777.0;
const NCP_SUBCARRIERS: f64 = 48.0 / 4.0;
const CODEWORD_FILL: f64 = 0.99;
/// The upstream load the MAP messages describe (docsis-ns3 `AverageUsUtilization` and
/// `AverageUsBurst`): a tenth of the upstream's capacity in grants of 150 B, each a 4 B
/// information element after a 46 B MAP header.
const US_UTILISATION: f64 = 0.1;
const US_BURST: f64 = 150.0;

/// The downstream channel and service flow of one cable modem; see the module
/// documentation.
#[derive(Clone, Debug, PartialEq)]
pub struct DocsisDownstream {
    /// OFDM subcarrier spacing: 25 or 50 kHz.
    pub subcarrier_spacing_hz: u32,
    /// Cyclic prefix in samples at 204.8 MHz: 192, 256, 512, 768 or 1024.
    pub cyclic_prefix: u32,
    pub subcarriers: u32,
    /// Bits per subcarrier per symbol of the codewords (12: 4096-QAM).
    pub spectral_efficiency: f64,
    /// Interleaver depth M.
    pub interleaver: u32,
    /// Plant distance (km): the round trip is distance / 10^5 s.
    pub distance_km: f64,
    /// The service flow's maximum sustained rate and traffic burst, and its peak rate.
    pub max_sustained_rate: Option<Rate>,
    pub max_traffic_burst: Option<u64>,
    pub peak_rate: Option<Rate>,
    /// The upstream MAP messages the channel carries (docsis-ns3 `GetAvgMapDatarate`).
    pub map_rate: Rate,
}

impl Default for DocsisDownstream {
    fn default() -> Self {
        DocsisDownstream::beside(&DocsisUpstream::default())
    }
}

/// Times and sizes derived from a [`DocsisDownstream`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DsDerived {
    pub symbol: Dur,
    /// Payload bytes per symbol.
    pub symbol_bytes: u64,
    pub capacity: Rate,
    /// From the symbol boundary that schedules a packet's last byte to its arrival.
    pub latency: Dur,
}

impl DocsisDownstream {
    /// The downstream beside an upstream: the same plant, downstream channel parameters
    /// and MAP messages; no shaping.
    pub fn beside(up: &DocsisUpstream) -> DocsisDownstream {
        let u = up.derived();
        // docsis-ns3 `GetAvgMapDatarate`: one upstream channel.
        let grants_per_sec = u.capacity.bits_per_sec() as f64 * US_UTILISATION / (8.0 * US_BURST);
        let map_bytes = 46.0 + 4.0 * grants_per_sec * u.map.as_secs_f64();
        DocsisDownstream {
            subcarrier_spacing_hz: up.ds_subcarrier_spacing_hz,
            cyclic_prefix: up.ds_cyclic_prefix,
            subcarriers: 3745,
            spectral_efficiency: 12.0,
            interleaver: up.ds_interleaver,
            distance_km: up.distance_km,
            max_sustained_rate: None,
            max_traffic_burst: None,
            peak_rate: None,
            map_rate: Rate::from_bytes_per_sec(map_bytes / u.map.as_secs_f64().max(1e-9)),
        }
    }

    /// Codewords per symbol (docsis-ns3 `GetDsCodewordsPerSymbol`).
    fn codewords(&self) -> f64 {
        let per_codeword = CODEWORD_BYTES * 8.0 / self.spectral_efficiency.max(1e-9);
        (f64::from(self.subcarriers) - NCP_SUBCARRIERS) / (per_codeword + NCP_SUBCARRIERS)
    }

    pub fn derived(&self) -> DsDerived {
        let scs = f64::from(self.subcarrier_spacing_hz.max(1));
        let symbol = Dur::from_secs_f64(1.0 / scs + f64::from(self.cyclic_prefix) / 204.8e6).max(Dur(1));
        let overhead = self.map_rate.bytes_per_sec() * symbol.as_secs_f64();
        let symbol_bytes = (self.codewords() * CODEWORD_FILL * CODEWORD_PAYLOAD - overhead)
            .round()
            .max(0.0) as u64;
        let rtt = Dur::from_secs_f64(self.distance_km.max(0.0) / 1e5);
        let symbols = CMTS_PIPELINE + 1 + CM_PIPELINE + u64::from(self.interleaver.saturating_sub(1));
        DsDerived {
            symbol,
            symbol_bytes,
            capacity: Rate::from_bytes_per_sec(symbol_bytes as f64 / symbol.as_secs_f64()),
            latency: Dur(symbol.as_nanos() * symbols) + rtt / 2,
        }
    }

    /// Check the parameters; the error names the key and what was expected.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if ![25_000, 50_000].contains(&self.subcarrier_spacing_hz) {
            return Err((
                "subcarrier_spacing",
                format!(
                    "expected 25 or 50 (kHz, DOCSIS 3.1 downstream OFDM), found {}",
                    f64::from(self.subcarrier_spacing_hz) / 1000.0
                ),
            ));
        }
        if ![192, 256, 512, 768, 1024].contains(&self.cyclic_prefix) {
            return Err((
                "cyclic_prefix",
                format!(
                    "expected 192, 256, 512, 768 or 1024 samples, found {}",
                    self.cyclic_prefix
                ),
            ));
        }
        // A 192 MHz channel at most.
        let most = 192_000_000 / self.subcarrier_spacing_hz;
        if self.subcarriers == 0 || self.subcarriers > most {
            return Err((
                "subcarriers",
                format!(
                    "expected 1 to {most} active subcarriers (192 MHz at {} kHz), found {}",
                    self.subcarrier_spacing_hz / 1000,
                    self.subcarriers
                ),
            ));
        }
        if !(self.spectral_efficiency.is_finite() && self.spectral_efficiency > 0.0 && self.spectral_efficiency <= 16.0)
        {
            return Err((
                "spectral_efficiency",
                format!(
                    "expected bits per subcarrier in (0, 16], found {}",
                    self.spectral_efficiency
                ),
            ));
        }
        if !(1..=32).contains(&self.interleaver) {
            return Err((
                "interleaver",
                format!("expected an interleaver depth from 1 to 32, found {}", self.interleaver),
            ));
        }
        let d = self.derived();
        if d.symbol_bytes == 0 {
            return Err((
                "subcarriers",
                format!(
                    "{} subcarriers at {} bit/s/Hz carry no whole codeword's payload beside the MAP messages",
                    self.subcarriers, self.spectral_efficiency
                ),
            ));
        }
        for (k, r) in [
            ("max_sustained_rate", self.max_sustained_rate),
            ("peak_rate", self.peak_rate),
        ] {
            if r.is_some_and(|r| r.bits_per_sec() == 0) {
                return Err((k, "expected a rate greater than zero".into()));
            }
        }
        if let Some(m) = self.max_sustained_rate.filter(|m| *m > d.capacity) {
            return Err((
                "max_sustained_rate",
                format!(
                    "expected at most the downstream channel's capacity ({}), found {m}",
                    d.capacity
                ),
            ));
        }
        if let (Some(p), Some(m)) = (self.peak_rate, self.max_sustained_rate) {
            if p < m {
                return Err((
                    "peak_rate",
                    format!("expected at least the maximum sustained rate ({m}), found {p}"),
                ));
            }
        }
        if self.max_traffic_burst.is_some_and(|b| b < MAX_PDU) {
            return Err((
                "max_traffic_burst",
                format!(
                    "expected at least one maximum PDU ({MAX_PDU} B), found {} B",
                    self.max_traffic_burst.unwrap_or(0)
                ),
            ));
        }
        Ok(())
    }
}

/// The downstream of one cable modem; see the module documentation.
pub struct DocsisDownstreamLink<P> {
    cfg: DocsisDownstream,
    d: DsDerived,
    delay: Dur,
    fault: Option<Fault>,
    queue: Queue<P>,
    line: DelayLine<P>,
    origin: Origin,
    /// The packet split across symbols, with its bytes left.
    frag: Option<Taken<P>>,
    /// Token buckets (bytes) and the time they were filled to (which may run ahead of
    /// now: the symbols that only carry a split packet's middle are counted in advance).
    msr: TokenBucket,
    peak: TokenBucket,
    filled: Time,
    /// The symbol boundary the link is to be woken at, and the last one it handled.
    armed: Option<Time>,
    done: Option<Time>,
    stats: LinkStats,
}

impl<P: LinkPacket + 'static> DocsisDownstreamLink<P> {
    pub fn new(cfg: DocsisDownstream, delay: Dur, aqm: &AqmConfig, fault: Option<Fault>, rng: Rng) -> Self {
        let d = cfg.derived();
        let mut link = DocsisDownstreamLink {
            d,
            delay,
            fault,
            queue: Queue::new(aqm, rng),
            line: DelayLine::default(),
            origin: Origin::default(),
            frag: None,
            msr: TokenBucket::new(None, 0.0),
            peak: TokenBucket::new(None, 0.0),
            filled: Time::ZERO,
            armed: None,
            done: None,
            stats: LinkStats::default(),
            cfg,
        };
        link.msr = TokenBucket::new(
            link.cfg.max_sustained_rate.map(|r| r.bytes_per_sec()),
            link.msr_bucket(),
        );
        link.peak = TokenBucket::new(link.cfg.peak_rate.map(|r| r.bytes_per_sec()), link.peak_bucket());
        link
    }

    pub fn derived(&self) -> DsDerived {
        self.d
    }

    /// The sustained-rate bucket: `max_traffic_burst`, by default 100 ms at the rate.
    fn msr_bucket(&self) -> f64 {
        match self.cfg.max_sustained_rate {
            None => f64::INFINITY,
            Some(r) => self.cfg.max_traffic_burst.map_or(r.bytes_per_sec() * 0.1, |b| b as f64),
        }
    }

    fn peak_bucket(&self) -> f64 {
        if self.cfg.peak_rate.is_some() {
            MAX_PDU as f64
        } else {
            f64::INFINITY
        }
    }

    /// Fill the buckets up to `t` (nothing if they are filled past it).
    fn fill(&mut self, t: Time) {
        if t <= self.filled {
            return;
        }
        let dt = t.since(self.filled).as_secs_f64();
        self.msr.fill(dt, false);
        self.peak.fill(dt, false);
        self.filled = t;
    }

    /// Whole bytes the next symbol may carry, by the channel and the buckets.
    fn budget(&self) -> u64 {
        let b = self
            .msr
            .tokens()
            .min(self.peak.tokens())
            .min(self.d.symbol_bytes as f64);
        if b >= 1.0 {
            b.floor() as u64
        } else {
            0
        }
    }

    fn spend(&mut self, bytes: u64) {
        self.msr.take(bytes as f64);
        self.peak.take(bytes as f64);
    }

    /// The first symbol boundary at or after `t` that has not been handled (a packet
    /// that arrives as a boundary is handled waits for the next).
    fn boundary_from(&self, t: Time) -> Time {
        let o = self.origin.get();
        let s = self.d.symbol.as_nanos();
        let k = t.as_nanos().saturating_sub(o.as_nanos()).div_ceil(s);
        let b = o + Dur(k * s);
        if self.done.is_some_and(|d| d >= b) {
            b + self.d.symbol
        } else {
            b
        }
    }

    fn has_work(&self) -> bool {
        self.frag.is_some() || self.queue.qdisc.len_packets() > 0
    }

    fn arm(&mut self, at: Time, io: &mut Io<'_, P>) {
        if self.armed.is_none_or(|a| at < a) {
            self.armed = Some(at);
            io.wake(STEP, at);
        }
    }

    /// The boundary at `t`: schedule this symbol's bytes, send off the packets whose last
    /// byte it holds, and wake at the next boundary where a packet ends or starts.
    fn symbol(&mut self, t: Time, io: &mut Io<'_, P>) {
        self.done = Some(t);
        self.fill(t);
        let mut budget = self.budget();
        let waiting = self.has_work();
        let arrive = t + self.d.latency + self.delay;
        let serialisation_rate = self.cfg.max_sustained_rate.unwrap_or(self.d.capacity);
        let mut used = 0;
        while budget > 0 {
            let mut tx = match self.frag.take() {
                Some(f) => f,
                None => {
                    let Some(d) = self.queue.qdisc.dequeue(t, &mut self.queue.drops) else {
                        break;
                    };
                    let mac = mac_frame_bytes(&d.pkt, DS_MAC_HEADER);
                    Taken {
                        pkt: d.pkt,
                        mac,
                        left: mac,
                        sub: d.queue,
                        sojourn: d.sojourn,
                        marked: d.marked,
                    }
                }
            };
            let k = budget.min(tx.left);
            tx.left -= k;
            budget -= k;
            used += k;
            if tx.left > 0 {
                self.frag = Some(tx);
                break;
            }
            io.departed(&Departure {
                pkt: &tx.pkt,
                queue: 0,
                sub: tx.sub,
                sojourn: tx.sojourn,
                start: t,
                serialisation: serialisation_rate.tx_time(tx.mac),
                marked: tx.marked,
            });
            self.line.push(tx.pkt, arrive, io, ARRIVE);
        }
        self.spend(used);
        self.count_symbol(used);
        if waiting {
            // Held back: data still waits, and the buckets, not the symbol, ran out.
            self.count_shaping(self.has_work() && budget == 0 && used < self.d.symbol_bytes);
        }
        if !self.has_work() {
            return;
        }
        // The symbols that carry only the middle of the split packet change nothing that
        // can be seen: count them now and wake where it ends.
        let s = self.d.symbol;
        let mut next = t + s;
        loop {
            self.fill(next);
            let b = self.budget();
            match &mut self.frag {
                Some(f) if b < f.left => {
                    f.left -= b;
                    self.spend(b);
                    self.count_symbol(b);
                    self.count_shaping(b < self.d.symbol_bytes);
                    next += s;
                }
                _ => break,
            }
        }
        self.arm(next, io);
    }

    /// A symbol that carried `used` bytes of this modem's data (the link's `blocks`).
    fn count_symbol(&mut self, used: u64) {
        if used > 0 {
            self.stats.blocks += 1;
            self.stats.block_bytes += self.d.symbol_bytes;
            self.stats.block_bytes_used += used;
        }
    }

    /// A symbol with data waiting; `limited`: the buckets held some of it back.
    fn count_shaping(&mut self, limited: bool) {
        self.stats.shaper_decisions += 1;
        if limited {
            self.stats.shaper_limited += 1;
        }
    }

    fn settle(&mut self, io: &mut Io<'_, P>) {
        self.queue.flush_drops(io);
        self.queue.arm(io, QDISC);
    }
}

impl<P: LinkPacket + 'static> Link<P> for DocsisDownstreamLink<P> {
    fn ports(&self) -> usize {
        2
    }

    fn start(&mut self, origin: Time, io: &mut Io<'_, P>) {
        // Symbols count from `origin` from now on.
        self.origin.start(origin);
        self.armed = None;
        self.done = None;
        if self.has_work() {
            let at = self.boundary_from(io.now.max(self.filled));
            self.arm(at, io);
        }
        self.settle(io);
    }

    fn send(&mut self, _from: Port, _to: Port, mut pkt: P, io: &mut Io<'_, P>) {
        if self.origin.provisional(io.now) {
            self.filled = io.now;
        }
        apply_fault(self.fault, self.origin.started(), io.now, &mut pkt);
        self.queue.enqueue(pkt, io);
        self.queue.qdisc.drain_enqueue_drops(&mut self.queue.drops);
        if self.armed.is_none() && self.has_work() {
            let at = self.boundary_from(io.now.max(self.filled));
            self.arm(at, io);
        }
        self.settle(io);
    }

    fn handle_timeout(&mut self, timer: Timer, at: Time, io: &mut Io<'_, P>) {
        match timer {
            STEP if self.armed == Some(at) => {
                self.armed = None;
                self.symbol(at, io);
                self.settle(io);
            }
            ARRIVE => self.line.arrive(io, ARRIVE),
            QDISC => self.queue.on_timer(at, io, QDISC),
            _ => {}
        }
    }

    fn queues(&self) -> &[QueueInfo] {
        &self.queue.info
    }

    one_queue_queries!();

    fn rate(&self, _from: Port, _to: Port) -> Option<Rate> {
        Some(self.cfg.max_sustained_rate.unwrap_or(self.d.capacity))
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

    fn link(msr: Option<Rate>, peak: Option<Rate>) -> DocsisDownstreamLink<Pkt> {
        let cfg = DocsisDownstream {
            max_sustained_rate: msr,
            peak_rate: peak,
            ..DocsisDownstream::default()
        };
        cfg.validate().expect("valid");
        DocsisDownstreamLink::new(cfg, Dur::ZERO, &deep_fifo(), None, Rng::new(1))
    }

    fn pkt(id: u64, size: u32) -> Pkt {
        Pkt {
            id,
            size,
            ecn: Ecn::NotEct,
        }
    }

    #[test]
    fn derived_defaults_match_docsis_ns3() {
        let d = DocsisDownstream::default().derived();
        // 20 µs + 512 / 204.8 MHz.
        assert_eq!(d.symbol, Dur::from_nanos(22_500));
        // (3745 − 12) / (1350 + 12) codewords × 0.99 × 1777 = 4821.7 B, less 5.5 B of MAPs.
        assert_eq!(d.symbol_bytes, 4816);
        assert!(
            (d.capacity.bits_per_sec() as f64 / 1e9 - 1.712).abs() < 0.001,
            "{}",
            d.capacity
        );
        // 5 symbols (pipeline, air, decoding, interleaver 2) and 40 µs of plant.
        assert_eq!(d.latency, Dur::from_nanos(5 * 22_500 + 40_000));
    }

    #[test]
    fn an_idle_packet_waits_for_the_next_symbol_then_the_pipeline() {
        // Packets at random phases of the symbol clock: delivered 152.5 µs after the next
        // boundary, so 152.5 to 175 µs after they arrive.
        let mut l = link(Some(Rate::mbps(200)), None);
        let mut rng = Rng::new(7);
        let offers: Vec<_> = (0..500)
            .map(|i| {
                let t = Time::from_micros(1000 * i + 1) + Dur::from_nanos(rng.below(22_500));
                (t, 0, 1, pkt(i, 1514))
            })
            .collect();
        let sent: Vec<Time> = offers.iter().map(|o| o.0).collect();
        let mut seen = Seen::default();
        let out = drive(&mut l, offers, Time::from_secs(1), &mut seen);
        assert_eq!(out.len(), 500);
        let delays: Vec<f64> = out
            .iter()
            .map(|(t, _, p)| t.since(sent[p.id as usize]).as_secs_f64() * 1e6)
            .collect();
        let lo = delays.iter().cloned().fold(f64::MAX, f64::min);
        let hi = delays.iter().cloned().fold(0.0, f64::max);
        let mean = delays.iter().sum::<f64>() / delays.len() as f64;
        // 1514 B + 4 B FCS + 10 B MAC header fit one symbol and the 20 ms bucket.
        assert!(lo >= 152.5 && hi <= 175.0, "{lo}..{hi}");
        assert!((mean - 163.75).abs() < 1.0, "mean {mean}");
        // Each packet found the buckets full: nothing held back.
        let st = l.stats();
        assert_eq!((st.shaper_decisions, st.shaper_limited), (500, 0), "{st:?}");
    }

    #[test]
    fn shaping_holds_the_sustained_rate_and_the_peak_rate() {
        // A backlog of 1514 B packets: 1528 B on the wire each.
        for (msr, peak, burst, want) in [
            // The sustained rate after the 100 ms bucket.
            (Rate::mbps(100), None, None, 100.0),
            // A 4 kB bucket: the sustained rate from the start.
            (Rate::mbps(300), None, Some(4000), 300.0),
            // The peak bucket (one PDU) refilled at 400 Mbit/s (1125 B a symbol) while the
            // sustained bucket (1 GB) lasts.
            (Rate::mbps(300), Some(Rate::mbps(400)), Some(1_000_000_000), 400.0),
            // A peak of 1 Gbit/s would give 2812 B a symbol: the one-PDU bucket keeps it
            // to 1532 B a symbol, 545 Mbit/s.
            (Rate::mbps(300), Some(Rate::gbps(1)), Some(1_000_000_000), 544.7),
        ] {
            let cfg = DocsisDownstream {
                max_sustained_rate: Some(msr),
                peak_rate: peak,
                max_traffic_burst: burst,
                ..DocsisDownstream::default()
            };
            cfg.validate().expect("valid");
            let mut l: DocsisDownstreamLink<Pkt> =
                DocsisDownstreamLink::new(cfg, Dur::ZERO, &deep_fifo(), None, Rng::new(1));
            let offers: Vec<_> = (0..60_000).map(|i| (Time::ZERO, 0, 1, pkt(i, 1514))).collect();
            let mut seen = Seen::default();
            let out = drive(&mut l, offers, Time::from_millis(1100), &mut seen);
            // Whole packets delivered between 0.6 and 1.1 s.
            let n = out.iter().filter(|(t, _, _)| *t > Time::from_millis(600)).count() as f64;
            let mbps = n * 1528.0 * 8.0 / 0.5 / 1e6;
            assert!(
                (mbps - want).abs() / want < 0.01,
                "{msr} {peak:?}: {mbps} Mbit/s, want {want}"
            );
            // In order, none lost.
            assert!(out.windows(2).all(|w| w[0].2.id < w[1].2.id));
            assert!(seen.lost.is_empty());
            // Backlogged all along: the buckets held data back in nearly every symbol.
            let st = l.stats();
            let share = st.shaper_limited as f64 / st.shaper_decisions as f64;
            assert!(st.shaper_decisions > 40_000 && share > 0.95, "{st:?}");
        }
    }

    #[test]
    fn the_first_hundred_milliseconds_ride_the_burst() {
        // With the default bucket (100 ms at 100 Mbit/s = 1.25 MB) a backlog leaves at the
        // channel's rate until the bucket is empty (1.25 MB at 1.71 Gbit/s less the
        // 100 Mbit/s refill: 6.2 ms), then at 100 Mbit/s.
        let mut l = link(Some(Rate::mbps(100)), None);
        let offers: Vec<_> = (0..5_000).map(|i| (Time::ZERO, 0, 1, pkt(i, 1514))).collect();
        let mut seen = Seen::default();
        let out = drive(&mut l, offers, Time::from_millis(100), &mut seen);
        let by_6ms = out.iter().filter(|(t, _, _)| *t <= Time::from_millis(6)).count();
        let by_20ms = out.iter().filter(|(t, _, _)| *t <= Time::from_millis(20)).count();
        // Arrivals by 6 ms left in the 260 symbols from 0 to 5.85 ms: 4816 B each carry
        // 819.5 frames of 1528 B (the driver offers the first packet alone to the symbol
        // at 0, so 817).
        assert!((812..=822).contains(&by_6ms), "{by_6ms}");
        // The bucket is empty at 6.2 ms; by 20 ms (symbols to 19.85 ms) the flow has had
        // the bucket and 19.85 ms at the rate: 1.25 MB + 248 kB, 980.4 frames.
        assert!(by_20ms.abs_diff(980) <= 2, "{by_6ms} {by_20ms}");
    }

    #[test]
    fn packets_split_across_symbols_arrive_when_their_last_byte_is_sent() {
        // At 20 Mbit/s a symbol carries 56.25 B of tokens: a 1528 B frame takes 27.2
        // symbols once the bucket (4 kB) is spent, and the queue's dequeue happens at the
        // symbol its first byte goes in.
        let cfg = DocsisDownstream {
            max_sustained_rate: Some(Rate::mbps(20)),
            max_traffic_burst: Some(MAX_PDU),
            ..DocsisDownstream::default()
        };
        let mut l: DocsisDownstreamLink<Pkt> =
            DocsisDownstreamLink::new(cfg, Dur::ZERO, &deep_fifo(), None, Rng::new(1));
        let offers: Vec<_> = (0..200).map(|i| (Time::ZERO, 0, 1, pkt(i, 1514))).collect();
        let mut seen = Seen::default();
        let out = drive(&mut l, offers, Time::from_secs(1), &mut seen);
        assert_eq!(out.len(), 200);
        let gaps: Vec<f64> = out
            .windows(2)
            .skip(5)
            .map(|w| w[1].0.since(w[0].0).as_secs_f64() * 1e6)
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        // 1528 B at 20 Mbit/s: 611.2 µs, on a 22.5 µs grid.
        assert!((mean - 611.2).abs() < 1.0, "{mean}");
        assert!(
            gaps.iter().all(|g| (g / 22.5 - (g / 22.5).round()).abs() < 1e-6),
            "on the symbol grid"
        );
        // Every byte counted once, in about 200 × 27.2 symbols less the bucket's.
        let st = l.stats();
        assert_eq!(st.block_bytes_used, 200 * 1528);
        assert!((5370..=5440).contains(&st.blocks), "{}", st.blocks);
    }

    #[test]
    fn bad_settings_are_named() {
        let bad = [
            (
                DocsisDownstream {
                    subcarrier_spacing_hz: 40_000,
                    ..Default::default()
                },
                "subcarrier_spacing",
            ),
            (
                DocsisDownstream {
                    cyclic_prefix: 300,
                    ..Default::default()
                },
                "cyclic_prefix",
            ),
            (
                DocsisDownstream {
                    subcarriers: 4000,
                    ..Default::default()
                },
                "subcarriers",
            ),
            (
                DocsisDownstream {
                    max_sustained_rate: Some(Rate::gbps(2)),
                    ..Default::default()
                },
                "max_sustained_rate",
            ),
            (
                DocsisDownstream {
                    max_sustained_rate: Some(Rate::mbps(200)),
                    peak_rate: Some(Rate::mbps(100)),
                    ..Default::default()
                },
                "peak_rate",
            ),
            (
                DocsisDownstream {
                    max_sustained_rate: Some(Rate::mbps(200)),
                    max_traffic_burst: Some(100),
                    ..Default::default()
                },
                "max_traffic_burst",
            ),
            (
                DocsisDownstream {
                    interleaver: 0,
                    ..Default::default()
                },
                "interleaver",
            ),
        ];
        for (cfg, key) in bad {
            assert_eq!(cfg.validate().map_err(|e| e.0), Err(key), "{cfg:?}");
        }
    }
}
