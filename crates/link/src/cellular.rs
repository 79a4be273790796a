//! One direction of a cellular radio link (LTE or 5G NR) between a base station and one
//! phone (UE): the RLC buffer with its queue discipline, service on the slot grid in
//! transport blocks, a TDD pattern, and for the uplink the request–grant loop of an idle
//! UE. HARQ with RLC in-order delivery goes around it ([`crate::harq`]).
//!
//! ```text
//!   port 0 ──▶ [fault] ──▶ [RLC buffer: queue discipline] ──▶ transport block per slot ──▶ delay line ──▶ port 1
//! ```
//!
//! **Slots.** Time is cut into slots of 1 ms (LTE's TTI, NR at 15 kHz subcarrier spacing),
//! 0.5, 0.25 or 0.125 ms (NR at 30, 60 and 120 kHz; 3GPP TS 38.211 §4.3.2: 14 OFDM symbols
//! a slot, 2^µ slots a millisecond). The scheduler serves a UE only at slot starts: it takes
//! what is in the RLC buffer then into one transport block (RLC segments a packet across
//! blocks when it does not fit, TS 38.322 §5.2.2.2), and the block arrives at the slot's end;
//! a packet leaves when the block carrying its last byte does. A packet that arrives at a
//! slot's start (or later) waits for the next slot: the block was built before it.
//!
//! **Capacity.** The direction's capacity (a rate with its schedule, or a trace, or a
//! process drawn as a trace) is the *mean* rate the UE gets in that direction; each slot
//! in which the direction may send carries the capacity of its own span of time, scaled up
//! by the share of slots the pattern gives the direction, so that one TDD period carries
//! exactly what the capacity offers over it. A slot in which the scheduler finds the buffer
//! empty is wasted, as an idle delivery opportunity of a trace is. Bytes are counted as IP
//! packets (PDCP SDUs: the frame less its Ethernet header); RLC, MAC and PDCP headers are
//! taken to be part of the capacity. `share` < 1 gives the slot to this UE only with that
//! probability (other users of the cell), so the UE's mean rate is `share` × capacity.
//!
//! **HARQ** (TS 38.321 §5.3.2, §5.4.2; RLC AM reassembly and in-sequence delivery, TS
//! 38.322 §5.2.3): each block fails its first transmission with the block error rate and
//! each retransmission independently again, so a block arrives `k` HARQ round trips late
//! with probability `bler^k·(1 − bler)`. A packet is reassembled when the last of the
//! blocks that carried its segments has arrived, and RLC hands packets on in order, so a
//! packet behind a retransmitted block waits for it. Nothing is lost (see
//! [`crate::harq`] for the same law on other links).
//!
//! **TDD.** A pattern such as `DDDSU` (the usual 2.5 ms pattern at 30 kHz) repeats from
//! time 0: `D` slots carry downlink, `U` slots uplink, and the special slot `S` carries
//! `special_dl_symbols` of its 14 symbols as downlink (TS 38.213 §11.1 slot formats; its
//! uplink symbols carry control only here, not data). Without a pattern the link is FDD:
//! every slot carries both directions.
//!
//! **Uplink scheduling** (TS 38.321 §5.4.4 scheduling request, §5.4.5 buffer status
//! reporting, TS 38.214 §6.1.2.1 for K2):
//! * a UE may send only in an uplink slot it was granted. Each block carries a buffer
//!   status report (BSR): the bytes left in the UE after it, as the Short BSR's level
//!   ([`short_bsr_reading`]). The base station learns it at the block's end and from then
//!   on grants uplink slots while its estimate of the UE's
//!   backlog (the last report less the grants it has made since) is above zero. It decides
//!   the grant of slot `x` at `x − K2` slots (the DCI), with what it knew then;
//! * data arriving at a UE whose buffer was empty triggers a regular BSR. If the UE holds
//!   a grant for a later slot the report goes there; otherwise it sends a scheduling request
//!   (SR) at its next SR occasion (every `sr_period`, in an uplink slot; an occasion that
//!   falls on a slot without uplink is skipped), the base station sends a grant
//!   `grant_delay` after it, and the UE sends in the first uplink slot at least K2 slots
//!   after that. The first packet of an idle UE therefore waits
//!   `grant_delay + (K2 + 1)·slot` plus a uniform share of the SR period (FDD);
//! * with `configured_grant` (TS 38.321 §5.8.2) the UE may also send in an uplink slot
//!   every configured period without asking; it then never needs an SR.
//!
//! Grant sizes follow the capacity, as a downlink block does, except that the grant that
//! answers an SR may be configured smaller (`sr_grant`): the base station does not know
//! the UE's buffer yet, and how much it grants then is its own choice (TS 38.321 leaves
//! it open). The grant delay counted in
//! [`LinkStats::grant_delay_ms`] is the time from the arrival of the data that made an idle
//! UE ask to the start of the slot it was granted.
//!
//! **DRX** (TS 38.321 §5.7, connected mode; parameters as in TS 38.331 `DRX-Config`): a
//! UE with DRX listens for the base station's assignments only in its Active Time, so the
//! downlink may serve it only in slots that start then. Active Time is the on-duration,
//! which starts every `cycle` at `offset` (counted from time 0, as the slots are) and lasts
//! `on_duration`, and the `inactivity` that follows every slot in which the UE was given a
//! new downlink block (the inactivity timer, started at the slot rather than after its
//! control symbols: a difference of at most three symbols). With a short cycle, when the
//! inactivity timer runs out the on-durations start every short cycle (at `offset` modulo
//! it) for `drx-ShortCycleTimer` short cycles, then every long cycle again. Data that
//! arrives for a sleeping UE waits for its next on-duration; a UE that keeps receiving more
//! often than every `inactivity` stays awake. HARQ retransmissions are not held back (the
//! UE's retransmission timers keep it listening for them). The uplink is not gated: a
//! pending SR is Active Time, and each grant restarts the inactivity timer, so a UE with
//! uplink data is awake for its grants; that one direction's traffic also keeps the other
//! direction awake (one UE, one DRX) is not modelled, nor the DRX Command MAC CE.

use crate::stage::{apply_fault, DelayLine, Origin, Queue};
use crate::trace::OPPORTUNITY_BYTES;
use crate::{
    Departure, Fault, HarqConfig, Io, Link, LinkPacket, LinkStats, Port, QueueInfo, RateSchedule, Timer, Trace,
};
use l4s_aqm::{AqmConfig, QueueId, QueueStats};
use l4s_core::{Dur, Rate, Rng, Time, ETH_HEADER};
use std::collections::VecDeque;
use std::sync::Arc;

/// The next slot the link may use is due.
pub const SLOT: Timer = 0;
/// The head of the delay line arrives.
pub const ARRIVE: Timer = 1;
/// The queue discipline's timer.
pub const QDISC: Timer = 2;

/// OFDM symbols in a slot with the normal cyclic prefix (TS 38.211 §4.3.2).
pub const SYMBOLS_PER_SLOT: u8 = 14;

/// Slot lengths the model accepts: LTE's 1 ms TTI and NR's numerologies µ = 0..3.
pub const SLOT_LENGTHS: [Dur; 4] = [
    Dur::from_millis(1),
    Dur::from_micros(500),
    Dur::from_micros(250),
    Dur::from_micros(125),
];

/// Buckets of the grant-delay histogram, 1 ms each; the last one counts everything above.
pub const GRANT_DELAY_BUCKETS: usize = 32;

/// What a slot of a TDD pattern carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotKind {
    Down,
    Special,
    Up,
}

/// Which way a cellular link carries data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RanDirection {
    /// Base station to UE: scheduled whenever data waits.
    Downlink,
    /// UE to base station: only in granted slots.
    Uplink,
}

/// The uplink's request–grant loop.
#[derive(Clone, Debug, PartialEq)]
pub struct UplinkScheduling {
    /// Time between SR occasions, a whole number of slots.
    pub sr_period: Dur,
    /// From the SR to the grant (the DCI) at the base station.
    pub grant_delay: Dur,
    /// Slots from the grant to the uplink slot it is for (TS 38.214 K2; 0..=32).
    pub k2: u32,
    /// A configured grant every this period (a whole number of slots), if any.
    pub configured_grant: Option<Dur>,
    /// The size of the grant that answers an SR, in bytes, if the base station gives a
    /// small one (it does not know the UE's buffer yet); `None`: a full block.
    pub sr_grant: Option<u64>,
}

impl Default for UplinkScheduling {
    fn default() -> Self {
        UplinkScheduling {
            sr_period: Dur::from_millis(5),
            grant_delay: Dur::from_millis(1),
            k2: 2,
            configured_grant: None,
            sr_grant: None,
        }
    }
}

/// The radio side of a cellular link; see the module documentation.
#[derive(Clone, Debug, PartialEq)]
pub struct RanConfig {
    pub slot: Dur,
    /// The TDD pattern, repeated from time 0; empty for FDD.
    pub tdd: Vec<SlotKind>,
    /// Downlink symbols of a special slot, of [`SYMBOLS_PER_SLOT`].
    pub special_dl_symbols: u8,
    /// Probability that a slot the direction may use is given to this UE, in (0, 1].
    pub share: f64,
    /// HARQ on both directions.
    pub harq: Option<HarqConfig>,
    pub uplink: UplinkScheduling,
    /// Discontinuous reception of the downlink, if configured.
    pub drx: Option<Drx>,
}

impl Default for RanConfig {
    fn default() -> Self {
        RanConfig {
            slot: Dur::from_micros(500),
            tdd: Vec::new(),
            special_dl_symbols: 10,
            share: 1.0,
            harq: None,
            uplink: UplinkScheduling::default(),
            drx: None,
        }
    }
}

/// The tops of the Short BSR's buffer size levels 1 to 30, in bytes (TS 38.321 Table
/// 6.1.3.1-1); level 0 is an empty buffer and level 31 anything above 150 000 bytes.
pub const SHORT_BSR_LEVELS: [u64; 30] = [
    10, 14, 20, 28, 38, 53, 74, 102, 142, 198, 276, 384, 535, 745, 1038, 1446, 2014, 2806, 3909, 5446, 7587, 10570,
    14726, 20516, 28581, 39818, 55474, 77284, 107669, 150000,
];

/// What the base station learns from a buffer status report of `bytes`: a UE with one
/// logical channel group sends the Short BSR (TS 38.321 §5.4.5, §6.1.3.1), whose 5-bit
/// level gives a range; the base station takes its top, and for the open last range its
/// bottom, 150 001 bytes (all it knows).
pub fn short_bsr_reading(bytes: u64) -> u64 {
    if bytes == 0 {
        return 0;
    }
    SHORT_BSR_LEVELS
        .iter()
        .copied()
        .find(|&top| bytes <= top)
        .unwrap_or(150_001)
}

/// Connected-mode DRX (TS 38.321 §5.7); see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Drx {
    /// `drx-LongCycle`.
    pub cycle: Dur,
    /// `drx-StartOffset`: where in the cycle the on-duration starts.
    pub offset: Dur,
    /// `drx-onDurationTimer`.
    pub on_duration: Dur,
    /// `drx-InactivityTimer`.
    pub inactivity: Dur,
    /// `drx-ShortCycle` and `drx-ShortCycleTimer` (in short cycles), if configured.
    pub short: Option<(Dur, u32)>,
}

/// `drx-ShortCycle`'s values (TS 38.331), in milliseconds.
pub const DRX_SHORT_CYCLES_MS: [u64; 23] = [
    2, 3, 4, 5, 6, 7, 8, 10, 14, 16, 20, 30, 32, 35, 40, 64, 80, 128, 160, 256, 320, 512, 640,
];

/// The values TS 38.331 `DRX-Config` allows, in milliseconds: `drx-LongCycle`,
/// `drx-onDurationTimer` (its millisecond choices) and `drx-InactivityTimer`.
pub const DRX_CYCLES_MS: [u64; 20] = [
    10, 20, 32, 40, 60, 64, 70, 80, 128, 160, 256, 320, 512, 640, 1024, 1280, 2048, 2560, 5120, 10240,
];
pub const DRX_ON_DURATIONS_MS: [u64; 24] = [
    1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 40, 50, 60, 80, 100, 200, 300, 400, 500, 600, 800, 1000, 1200, 1600,
];
pub const DRX_INACTIVITY_MS: [u64; 23] = [
    0, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 40, 50, 60, 80, 100, 200, 300, 500, 750, 1280, 1920, 2560,
];

impl Drx {
    /// Check against TS 38.331's choices; the error names the key and what was expected.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let ms = |d: Dur| d.as_nanos().is_multiple_of(1_000_000).then(|| d.as_nanos() / 1_000_000);
        let one_of = |key: &'static str, d: Dur, allowed: &[u64]| match ms(d) {
            Some(v) if allowed.contains(&v) => Ok(()),
            _ => Err((
                key,
                format!(
                    "expected one of TS 38.331's values, {} ms; found {d}",
                    allowed.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
                ),
            )),
        };
        one_of("drx.cycle", self.cycle, &DRX_CYCLES_MS)?;
        one_of("drx.on_duration", self.on_duration, &DRX_ON_DURATIONS_MS)?;
        one_of("drx.inactivity", self.inactivity, &DRX_INACTIVITY_MS)?;
        if self.on_duration > self.cycle {
            return Err((
                "drx.on_duration",
                format!(
                    "expected at most the cycle ({}); found {}",
                    self.cycle, self.on_duration
                ),
            ));
        }
        if ms(self.offset).is_none() || self.offset >= self.cycle {
            return Err((
                "drx.offset",
                format!(
                    "expected a whole number of milliseconds below the cycle ({}); found {}",
                    self.cycle, self.offset
                ),
            ));
        }
        if let Some((short, cycles)) = self.short {
            one_of("drx.short_cycle", short, &DRX_SHORT_CYCLES_MS)?;
            if !self.cycle.as_nanos().is_multiple_of(short.as_nanos()) {
                return Err((
                    "drx.short_cycle",
                    format!(
                        "expected a divisor of the cycle ({}), as TS 38.331 requires; found {short}",
                        self.cycle
                    ),
                ));
            }
            if !(1..=16).contains(&cycles) {
                return Err((
                    "drx.short_cycle_timer",
                    format!("expected 1 to 16 short cycles (TS 38.331); found {cycles}"),
                ));
            }
        }
        Ok(())
    }

    /// How far `since` is past the last start of a cycle of length `c` (the on-durations of
    /// the short cycle start at the offset modulo it).
    fn phase(&self, since: Dur, c: u64) -> u64 {
        phase(since, c, self.offset.as_nanos())
    }

    /// Whether an on-duration runs at `since` after the origin, with the short cycle in use
    /// over `short_from..short_until` (after the inactivity timer ran out).
    fn on(&self, since: Dur, (short_from, short_until): (Dur, Dur)) -> bool {
        let on = self.on_duration.as_nanos();
        if self.phase(since, self.cycle.as_nanos()) < on {
            return true;
        }
        let Some((short, _)) = self.short else { return false };
        // The last short-cycle start at or before `since`, if the short cycle was in use then.
        let p = self.phase(since, short.as_nanos());
        let start = Dur(since.as_nanos() - p.min(since.as_nanos()));
        p < on && start >= short_from && start < short_until
    }

    /// The first on-duration start at or after `since`.
    fn next_on(&self, since: Dur, (short_from, short_until): (Dur, Dur)) -> Dur {
        let offset = self.offset.as_nanos();
        let long = next_from(since, self.cycle.as_nanos(), offset);
        let Some((short, _)) = self.short else { return long };
        // The first short-cycle start from `since` on while the short cycle is in use.
        let s = next_from(since.max(short_from), short.as_nanos(), offset);
        if s < short_until {
            s.min(long)
        } else {
            long
        }
    }
}

/// How far `t` is past the last time that is `offset` modulo `c`.
fn phase(t: Dur, c: u64, offset: u64) -> u64 {
    (t.as_nanos() % c + c - offset % c) % c
}

/// The first time at or after `t` that is `offset` modulo `c`.
fn next_from(t: Dur, c: u64, offset: u64) -> Dur {
    let p = phase(t, c, offset);
    Dur(t.as_nanos() + if p == 0 { 0 } else { c - p })
}

/// A TDD pattern from its letters (`D`, `S`, `U`; `"fdd"` or nothing for FDD).
pub fn parse_tdd(s: &str) -> Result<Vec<SlotKind>, String> {
    if s.is_empty() || s.eq_ignore_ascii_case("fdd") {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for c in s.chars() {
        out.push(match c.to_ascii_uppercase() {
            'D' => SlotKind::Down,
            'S' => SlotKind::Special,
            'U' => SlotKind::Up,
            _ => {
                return Err(format!(
                "{s:?}: expected a TDD pattern of the letters D, S and U (such as \"DDDSU\"), or \"fdd\"; found {c:?}"
            ))
            }
        });
    }
    if out.len() > 320 {
        return Err(format!(
            "{s:?}: a TDD pattern of at most 320 slots (80 ms at 0.25 ms slots)"
        ));
    }
    if !out.contains(&SlotKind::Up) {
        return Err(format!("{s:?}: the pattern has no uplink slot (U)"));
    }
    if !out.iter().any(|k| *k != SlotKind::Up) {
        return Err(format!("{s:?}: the pattern has no downlink slot (D or S)"));
    }
    Ok(out)
}

/// The greatest common divisor of `a` and `b` (`a` when `b` is 0).
pub(crate) fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The SR periodicities of TS 38.331 `SchedulingRequestResourceConfig`
/// (`periodicityAndOffset`) that are whole slots: `sl1` to `sl640` (`sym2` and `sym6or7`
/// recur within a slot, which the model's slot grid cannot show).
pub const SR_PERIOD_SLOTS: [u64; 13] = [1, 2, 4, 5, 8, 10, 16, 20, 40, 80, 160, 320, 640];

/// The longest configured-grant period of TS 38.331 `ConfiguredGrantConfig`
/// (`periodicity`: 640 × 14 symbols at 15 kHz, 5120 × 14 at 120 kHz; `periodicityExt`:
/// up to 640 slots at 15 kHz, 5120 at 120 kHz): 640 ms at every numerology.
pub const MAX_CONFIGURED_GRANT: Dur = Dur::from_millis(640);

/// Whether `d` is a whole, non-zero number of slots.
pub(crate) fn whole_slots(d: Dur, slot: Dur) -> bool {
    !d.is_zero() && d.as_nanos().is_multiple_of(slot.as_nanos())
}

impl RanConfig {
    /// Check the parameters; the error names the key and what was expected.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if !SLOT_LENGTHS.contains(&self.slot) {
            return Err((
                "slot",
                format!("expected a slot of \"1ms\" (LTE, NR 15 kHz), \"0.5ms\" (30 kHz), \"0.25ms\" (60 kHz) or \"0.125ms\" (120 kHz); found {}", self.slot),
            ));
        }
        if self.special_dl_symbols > SYMBOLS_PER_SLOT {
            return Err((
                "special_dl_symbols",
                format!(
                    "expected at most {SYMBOLS_PER_SLOT} symbols, found {}",
                    self.special_dl_symbols
                ),
            ));
        }
        if !(self.share > 0.0 && self.share <= 1.0) {
            return Err((
                "share",
                format!("expected a probability in (0, 1], found {}", self.share),
            ));
        }
        if let Some(h) = &self.harq {
            h.validate()?;
        }
        if let Some(d) = &self.drx {
            d.validate()?;
            if !self.drx_meets_downlink(d) {
                return Err((
                    "drx.offset",
                    format!(
                        "the on-duration ({} from {} every {}) never starts a downlink slot of the pattern: the UE could never be reached",
                        d.on_duration, d.offset, d.cycle
                    ),
                ));
            }
        }
        let u = &self.uplink;
        if !(whole_slots(u.sr_period, self.slot)
            && SR_PERIOD_SLOTS.contains(&(u.sr_period.as_nanos() / self.slot.as_nanos())))
        {
            return Err((
                "sr_period",
                format!(
                    "expected one of TS 38.331's SR periodicities, {} slots of {}; found {}",
                    SR_PERIOD_SLOTS.map(|n| n.to_string()).join(", "),
                    self.slot,
                    u.sr_period
                ),
            ));
        }
        if u.k2 > 32 {
            return Err(("k2", format!("expected K2 in 0..=32 slots (TS 38.214), found {}", u.k2)));
        }
        if u.sr_grant == Some(0) {
            return Err((
                "sr_grant",
                "expected a grant of at least 1 byte, such as \"100B\"".to_string(),
            ));
        }
        if let Some(p) = u.configured_grant {
            if !whole_slots(p, self.slot) || p > MAX_CONFIGURED_GRANT {
                return Err((
                    "configured_grant",
                    format!(
                        "expected a period of a whole number of {} slots, at most {MAX_CONFIGURED_GRANT} (TS 38.331), found {p}",
                        self.slot
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Whether some on-duration of `drx` holds the start of a slot that carries downlink.
    /// Pattern and cycle repeat together after `pattern / gcd(pattern, cycle)` cycles.
    fn drx_meets_downlink(&self, drx: &Drx) -> bool {
        let w = self.weights(RanDirection::Downlink);
        let slot = self.slot.as_nanos();
        let period = w.len() as u64 * slot;
        (0..period / gcd(period, drx.cycle.as_nanos())).any(|k| {
            let from = k * drx.cycle.as_nanos() + drx.offset.as_nanos();
            (0..drx.on_duration.as_nanos().div_ceil(slot))
                .any(|i| w[((from / slot + i) % w.len() as u64) as usize] > 0.0)
        })
    }

    /// The first uplink slot of the pattern: SR and configured-grant occasions count from
    /// it (0 for FDD).
    pub(crate) fn first_up(&self) -> u64 {
        self.tdd.iter().position(|k| *k == SlotKind::Up).unwrap_or(0) as u64
    }

    /// The weight of each slot of the pattern for `dir` (1 for a full slot), one entry for
    /// FDD.
    pub(crate) fn weights(&self, dir: RanDirection) -> Vec<f64> {
        if self.tdd.is_empty() {
            return vec![1.0];
        }
        self.tdd
            .iter()
            .map(|k| match (dir, k) {
                (RanDirection::Downlink, SlotKind::Down) | (RanDirection::Uplink, SlotKind::Up) => 1.0,
                (RanDirection::Downlink, SlotKind::Special) => {
                    f64::from(self.special_dl_symbols) / f64::from(SYMBOLS_PER_SLOT)
                }
                _ => 0.0,
            })
            .collect()
    }
}

/// Where a cellular direction's capacity comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum RanCapacity {
    /// A rate, changed over time by its schedule.
    Rate { rate: Rate, schedule: RateSchedule },
    /// Delivery opportunities of [`OPPORTUNITY_BYTES`] ([`crate::trace`]).
    Trace(Arc<Trace>),
    /// The rate in each millisecond (bit/s; a [`crate::CapacityProcess`]'s draw), the last
    /// one holding after the end.
    PerMs(Arc<Vec<f64>>),
}

impl RanCapacity {
    /// IP bytes the capacity offers in the slot `[s, s + slot)` after the origin, and the
    /// link time they stand for (for the utilisation). A trace's opportunities at `m` ms
    /// are the capacity of the millisecond that ends there, spread evenly over its slots
    /// (slots divide a millisecond), standing for the time since the trace's previous
    /// distinct time, as in [`crate::trace`].
    fn bytes(&self, s: Dur, slot: Dur) -> (f64, Dur) {
        match self {
            RanCapacity::Rate { rate, schedule } => {
                (schedule.rate_at(*rate, s).bytes_per_sec() * slot.as_secs_f64(), slot)
            }
            RanCapacity::Trace(t) => {
                let m = s.as_nanos() / 1_000_000 + 1;
                let (n, time) = t.at_ms(m);
                let share = slot.as_nanos() as f64 / 1e6;
                (n as f64 * f64::from(OPPORTUNITY_BYTES) * share, time.mul_f64(share))
            }
            RanCapacity::PerMs(r) => (Self::per_ms(r, s) / 8.0 * slot.as_secs_f64(), slot),
        }
    }

    fn per_ms(r: &[f64], t: Dur) -> f64 {
        let k = (t.as_nanos() / 1_000_000) as usize;
        r.get(k).or(r.last()).copied().unwrap_or(0.0)
    }

    fn rate_at(&self, t: Dur) -> Rate {
        match self {
            RanCapacity::Rate { rate, schedule } => schedule.rate_at(*rate, t),
            RanCapacity::Trace(tr) => tr.capacity_before(t, crate::trace::CAPACITY_WINDOW),
            RanCapacity::PerMs(r) => {
                let end = t.as_nanos() / 1_000_000;
                let from = end.saturating_sub(crate::trace::CAPACITY_WINDOW.as_nanos() / 1_000_000);
                let n = (end - from).max(1);
                let sum: f64 = (from..end.max(from + 1))
                    .map(|k| Self::per_ms(r, Dur::from_millis(k)))
                    .sum();
                Rate::bps((sum / n as f64) as u64)
            }
        }
    }
}

/// A packet RLC is carrying in segments.
struct InTransit<P> {
    pkt: P,
    left: u64,
    /// When the last block carrying a segment of it arrives (HARQ included).
    ready: Time,
    start: Time,
    sub: QueueId,
    sojourn: Dur,
    marked: bool,
    busy: Dur,
}

/// The uplink's view of grants, and the base station's of the UE.
#[derive(Default)]
struct Grants {
    /// Buffer status reports sent, not yet used by the base station: when they arrive, the
    /// bytes reported, and the slot of the block that carried them.
    reports: VecDeque<(Time, u64, u64)>,
    /// The base station's estimate of the UE's backlog not covered by grants.
    estimate: i64,
    /// Grants have been decided for every uplink slot below this one.
    decided: u64,
    /// Dynamic grants decided and not yet used: slot, size in bytes, and the share of the
    /// slot's resources (1 for a UE alone; less in a shared cell, [`crate::cell`]).
    granted: VecDeque<(u64, u64, f64)>,
    /// The slot an SR was granted, not yet used.
    sr_grant: Option<u64>,
    /// An SR is pending, to go at the first SR occasion from this slot on.
    sr_pending: Option<u64>,
    /// When the data arrived that made the UE ask (SR), until it is sent.
    asked_at: Option<Time>,
}

/// One direction of a cellular link; see the module documentation.
pub struct Cellular<P> {
    dir: RanDirection,
    cfg: RanConfig,
    capacity: RanCapacity,
    weights: Vec<f64>,
    /// Pattern length over the sum of the weights: how much more than its own span of
    /// capacity a full slot carries.
    scale: f64,
    delay: Dur,
    fault: Option<Fault>,
    queue: Queue<P>,
    line: DelayLine<P>,
    rng: Rng,
    origin: Origin,
    tx: Option<InTransit<P>>,
    /// Fraction of a byte of capacity carried to the next block.
    carry: f64,
    /// HARQ's draws, and when RLC handed on the last packet (in order).
    harq_rng: Rng,
    last_out: Time,
    /// The next slot to consider.
    next: u64,
    armed: Option<Time>,
    grants: Grants,
    /// Slots between configured grants (0: none), the first one's offset from the first
    /// uplink slot, and the share of a slot's resources each takes (1 on a link of one UE;
    /// a shared cell's UE may be given less).
    cg_slots: u64,
    cg_offset: u64,
    cg_share: f64,
    /// Slots between SR occasions.
    sr_slots: u64,
    /// The first uplink slot of the pattern: SR and configured-grant occasions count from
    /// it.
    first_up: u64,
    /// With DRX, when the inactivity timer started by the last downlink block runs out.
    awake_until: Option<Time>,
    /// One UE of a shared cell ([`crate::cell`]): the cell decides the grants and which
    /// slots it is served in.
    in_cell: bool,
    stats: LinkStats,
}

impl<P: LinkPacket + 'static> Cellular<P> {
    pub fn new(
        dir: RanDirection,
        cfg: RanConfig,
        capacity: RanCapacity,
        delay: Dur,
        aqm: &AqmConfig,
        fault: Option<Fault>,
        rng: Rng,
    ) -> Cellular<P> {
        let weights = cfg.weights(dir);
        let sum: f64 = weights.iter().sum();
        let scale = if sum > 0.0 { weights.len() as f64 / sum } else { 0.0 };
        let slot = cfg.slot.as_nanos().max(1);
        let cg_slots = cfg.uplink.configured_grant.map_or(0, |p| p.as_nanos() / slot);
        let sr_slots = (cfg.uplink.sr_period.as_nanos() / slot).max(1);
        let first_up = cfg.first_up();
        let seed = rng.clone().next_u64();
        let draw = Rng::derive(seed, 0x0052_414e);
        let harq_rng = Rng::derive(seed, 0x4a52);
        Cellular {
            dir,
            cfg,
            capacity,
            weights,
            scale,
            delay,
            fault,
            queue: Queue::new(aqm, rng),
            line: DelayLine::default(),
            rng: draw,
            origin: Origin::default(),
            tx: None,
            carry: 0.0,
            harq_rng,
            last_out: Time::ZERO,
            next: 0,
            armed: None,
            grants: Grants::default(),
            cg_slots,
            cg_offset: 0,
            cg_share: 1.0,
            sr_slots,
            first_up,
            awake_until: None,
            in_cell: false,
            stats: LinkStats::default(),
        }
    }

    /// This direction is one UE's of a shared cell ([`crate::cell`]), which decides its
    /// grants and the slots it is served in.
    pub(crate) fn set_in_cell(&mut self) {
        self.in_cell = true;
    }

    /// A configured grant of `share` of an uplink slot every `slots` slots from `offset`
    /// after the first uplink slot (a shared cell's UE; checked by
    /// [`crate::cell::ConfiguredGrant::validate`]).
    pub(crate) fn set_configured_grant(&mut self, slots: u64, offset: u64, share: f64) {
        self.cg_slots = slots;
        self.cg_offset = offset;
        self.cg_share = share;
    }

    fn origin(&self) -> Time {
        self.origin.get()
    }

    /// Before [`Link::start`] the slot grid counts from the first packet ([`Origin`]).
    pub(crate) fn provisional_origin(&mut self, now: Time) {
        if self.origin.provisional(now) {
            self.next = 0;
            self.grants.decided = 0;
        }
    }

    pub(crate) fn start_of(&self, n: u64) -> Time {
        self.origin() + Dur(n.saturating_mul(self.cfg.slot.as_nanos()))
    }

    /// The first slot starting strictly after `t`.
    pub(crate) fn slot_after(&self, t: Time) -> u64 {
        if t < self.origin() {
            return 0;
        }
        t.since(self.origin()).as_nanos() / self.cfg.slot.as_nanos() + 1
    }

    fn weight(&self, n: u64) -> f64 {
        self.weights[(n % self.weights.len() as u64) as usize]
    }

    /// The first slot from `n` on that carries this direction.
    pub(crate) fn usable_from(&self, mut n: u64) -> u64 {
        while self.weight(n) == 0.0 {
            n += 1;
        }
        n
    }

    /// The first slot from `n` on in which this direction may serve the UE: one that
    /// carries it and, on a downlink with DRX, starts in the UE's Active Time.
    pub(crate) fn schedulable_from(&self, n: u64) -> u64 {
        let mut n = self.usable_from(n);
        let Some(drx) = self.cfg.drx.filter(|_| self.dir == RanDirection::Downlink) else {
            return n;
        };
        loop {
            let t = self.start_of(n);
            let since = t.since(self.origin());
            let short = self.short_window(&drx);
            if self.awake_until.is_some_and(|a| t < a) || drx.on(since, short) {
                return n;
            }
            // Asleep: the next on-duration starts on a slot boundary (whole milliseconds).
            let on = self.origin() + drx.next_on(since, short);
            n = self.usable_from(self.slot_after(Time(on.as_nanos().saturating_sub(1))));
        }
    }

    /// When the short DRX cycle is in use, after the origin: from the end of the inactivity
    /// timer for `drx-ShortCycleTimer` short cycles (empty before any downlink block).
    fn short_window(&self, drx: &Drx) -> (Dur, Dur) {
        match (drx.short, self.awake_until) {
            (Some((c, k)), Some(awake_until)) => {
                let from = Dur(awake_until.as_nanos().saturating_sub(self.origin().as_nanos()));
                (from, from + Dur(c.as_nanos() * u64::from(k)))
            }
            _ => (Dur::ZERO, Dur::ZERO),
        }
    }

    /// Bytes of a transport block in slot `n` (before the carried fraction), and the link
    /// time it stands for: its slot's (or its trace's) scaled up as its capacity is.
    pub(crate) fn block(&self, n: u64) -> (f64, Dur) {
        let s = self.start_of(n).since(self.origin());
        let (bytes, time) = self.capacity.bytes(s, self.cfg.slot);
        let k = self.scale * self.weight(n);
        (bytes * k, time.mul_f64(k))
    }

    /// The block of the grant that answers an SR in slot `n`: a full one, or as small as
    /// configured, standing for its share of the slot.
    pub(crate) fn sr_block(&self, n: u64) -> (f64, Dur) {
        let (bytes, time) = self.block(n);
        match self.cfg.uplink.sr_grant {
            Some(cap) if (cap as f64) < bytes => (cap as f64, time.mul_f64(cap as f64 / bytes)),
            _ => (bytes, time),
        }
    }

    fn block_bytes(&self, n: u64) -> f64 {
        self.block(n).0
    }

    pub(crate) fn has_data(&self) -> bool {
        self.tx.is_some() || self.queue.qdisc.len_packets() > 0
    }

    pub(crate) fn backlog_bytes(&self) -> u64 {
        self.tx.as_ref().map_or(0, |t| t.left) + self.queue.qdisc.len_bytes()
    }

    /// Whether uplink slot `n` is one of the UE's configured-grant occasions.
    fn is_cg(&self, n: u64) -> bool {
        let first = self.first_up + self.cg_offset;
        self.cg_slots > 0 && n >= first && (n - first).is_multiple_of(self.cg_slots) && self.weight(n) > 0.0
    }

    /// The share of uplink slot `n` the UE's configured grant takes (0: not an occasion).
    pub(crate) fn cg_share_at(&self, n: u64) -> f64 {
        if self.is_cg(n) {
            self.cg_share
        } else {
            0.0
        }
    }

    fn is_sr_occasion(&self, n: u64) -> bool {
        n >= self.first_up && (n - self.first_up).is_multiple_of(self.sr_slots) && self.weight(n) > 0.0
    }

    /// The base station's grant decisions for every uplink slot whose DCI time is at or
    /// before `t`, in order, each with the reports that had arrived by then.
    fn decide_until(&mut self, t: Time) {
        let k2 = Dur(self.cfg.slot.as_nanos() * u64::from(self.cfg.uplink.k2));
        loop {
            let x = self.usable_from(self.grants.decided);
            let dci = Time(self.start_of(x).as_nanos().saturating_sub(k2.as_nanos()));
            if dci > t {
                return;
            }
            self.absorb_reports(dci);
            if self.grants.estimate <= 0 && self.grants.reports.is_empty() {
                // Nothing to grant until a report arrives: skip to the slots decided at `t`.
                let n = self.slot_after(t + k2).max(x + 1);
                self.grants.decided = n;
                return;
            }
            self.grants.decided = x + 1;
            if self.grants.estimate > 0 && (self.cfg.share >= 1.0 || self.rng.chance(self.cfg.share)) {
                let size = self.block_bytes(x) as u64;
                if size > 0 {
                    self.grants.granted.push_back((x, size, 1.0));
                    self.stats.grants += 1;
                    self.grants.estimate -= size as i64;
                }
            }
        }
    }

    /// Take in the buffer status reports that reached the base station by `dci`: its
    /// estimate of the backlog is then the last one less what it has granted since.
    pub(crate) fn absorb_reports(&mut self, dci: Time) {
        while self.grants.reports.front().is_some_and(|r| r.0 <= dci) {
            if let Some((_, bytes, slot)) = self.grants.reports.pop_front() {
                let covered: u64 = self.grants.granted.iter().filter(|g| g.0 > slot).map(|g| g.1).sum();
                let sr: u64 = match self.grants.sr_grant {
                    Some(s) if s > slot => self.sr_block(s).0 as u64,
                    _ => 0,
                };
                self.grants.estimate = bytes as i64 - covered as i64 - sr as i64;
            }
        }
    }

    /// The base station's estimate of the UE's backlog not yet granted, and whether
    /// reports are on their way to it.
    pub(crate) fn grant_need(&self) -> (i64, bool) {
        (self.grants.estimate, !self.grants.reports.is_empty())
    }

    /// The slot of the grant that answers the UE's SR, if one is held.
    pub(crate) fn sr_grant_slot(&self) -> Option<u64> {
        self.grants.sr_grant
    }

    /// Move the grant that answers the SR to slot `x` (the cell had no room in its slot).
    pub(crate) fn move_sr_grant(&mut self, x: u64) {
        self.grants.sr_grant = Some(x);
    }

    /// Grant `share` of slot `x`'s resources, `bytes` of them, for this UE (a shared
    /// cell's decision). `from_sr`: the grant that answers its SR, counted when the SR was
    /// sent; a dynamic grant is taken off the base station's estimate.
    pub(crate) fn grant(&mut self, x: u64, bytes: u64, share: f64, from_sr: bool) {
        if from_sr {
            self.grants.sr_grant = None;
        } else {
            self.stats.grants += 1;
            self.grants.estimate -= bytes as i64;
        }
        match self.grants.granted.back_mut() {
            Some(g) if g.0 == x => {
                g.1 += bytes;
                g.2 += share;
            }
            _ => self.grants.granted.push_back((x, bytes, share)),
        }
    }

    /// Whether the UE holds a grant for a slot after `n`.
    fn holds_grant_after(&self, n: u64) -> bool {
        self.cg_slots > 0 || self.grants.granted.iter().any(|g| g.0 > n) || self.grants.sr_grant.is_some_and(|s| s > n)
    }

    /// Serve every slot up to now in order, then ask for the next one that may carry
    /// something.
    fn rationalize(&mut self, io: &mut Io<'_, P>) {
        let now = io.now;
        loop {
            if !self.has_data() {
                self.next = self.next.max(self.slot_after(now));
                break;
            }
            let n = self.schedulable_from(self.next);
            if self.start_of(n) > now {
                break;
            }
            self.next = n + 1;
            match self.dir {
                RanDirection::Downlink => {
                    if self.cfg.share >= 1.0 || self.rng.chance(self.cfg.share) {
                        self.serve_down(n, 1.0, io);
                    }
                }
                RanDirection::Uplink => self.uplink_slot(n, io),
            }
        }
        self.queue.flush_drops(io);
        self.queue.arm(io, QDISC);
        if let Some(t) = self.next_slot().map(|n| self.start_of(n)) {
            if self.armed != Some(t) {
                self.armed = Some(t);
                io.wake(SLOT, t);
            }
        }
    }

    /// `share` of the block of slot `n`: the bytes and the link time they stand for.
    fn block_share(&self, n: u64, share: f64) -> (f64, Dur) {
        let (bytes, time) = self.block(n);
        if share >= 1.0 {
            (bytes, time)
        } else {
            (bytes * share, time.mul_f64(share))
        }
    }

    /// Serve the UE in downlink slot `n` with `share` of its resources (1: all of them);
    /// with DRX a block given to it restarts its inactivity timer.
    pub(crate) fn serve_down(&mut self, n: u64, share: f64, io: &mut Io<'_, P>) {
        let block = self.block_share(n, share);
        if self.serve(n, block, io) {
            if let Some(drx) = self.cfg.drx {
                self.awake_until = Some(self.start_of(n) + drx.inactivity);
            }
        }
    }

    /// After a run of slots up to `next` (exclusive) driven by a shared cell: report the
    /// queue discipline's drops and ask for its timer.
    pub(crate) fn settle(&mut self, next: u64, io: &mut Io<'_, P>) {
        self.pass(next);
        self.queue.flush_drops(io);
        self.queue.arm(io, QDISC);
    }

    /// The slots below `next` are over (a shared cell served them).
    pub(crate) fn pass(&mut self, next: u64) {
        self.next = self.next.max(next);
    }

    /// The head of the delay line is due (its `ARRIVE` wake-up).
    pub(crate) fn arrive(&mut self, io: &mut Io<'_, P>) {
        self.line.arrive(io, ARRIVE);
    }

    /// The queue discipline's timer asked for at `at` is due.
    pub(crate) fn qdisc_timer(&mut self, at: Time, io: &mut Io<'_, P>) {
        self.queue.on_timer(at, io, QDISC);
    }

    /// The queue discipline's counters, backlog, probability and Queue Protection.
    pub(crate) fn queue(&self) -> (&dyn l4s_aqm::Qdisc<P>, &QueueInfo) {
        (&*self.queue.qdisc, &self.queue.info[0])
    }

    /// Time 0 of the run is `origin` (see [`Link::start`]), without serving any slot.
    pub(crate) fn reset(&mut self, origin: Time, now: Time) {
        // Slots count from `origin` from now on. A live forwarder may have carried packets
        // on a provisional grid before ([`Origin`]): what was counted in its slots
        // (grants, a pending SR) does not carry over, and a UE that holds data asks again
        // at its next SR occasion, as one does when its grants are released.
        self.origin.start(origin);
        self.next = if now < origin { 0 } else { self.slot_after(now) };
        self.awake_until = None;
        let asked_at = self.grants.asked_at;
        self.grants = Grants {
            decided: self.next,
            ..Grants::default()
        };
        if self.dir == RanDirection::Uplink && self.has_data() {
            self.grants.sr_pending = Some(self.next);
            self.grants.asked_at = Some(asked_at.unwrap_or(now));
        }
        self.armed = None;
    }

    /// Put `pkt` in the RLC buffer. On the uplink, data reaching an empty buffer triggers a
    /// regular BSR: it goes in a grant the UE holds, or the UE asks with an SR. (A UE of a
    /// shared cell has had the cell's decisions up to now made before.)
    pub(crate) fn accept(&mut self, mut pkt: P, io: &mut Io<'_, P>) {
        let was_empty = !self.has_data();
        apply_fault(self.fault, self.origin.started(), io.now, &mut pkt);
        self.queue.enqueue(pkt, io);
        self.queue.qdisc.drain_enqueue_drops(&mut self.queue.drops);
        if self.dir == RanDirection::Uplink && was_empty && self.has_data() {
            let now_slot = self.slot_after(io.now).saturating_sub(1);
            if !self.in_cell {
                self.decide_until(io.now);
            }
            if !self.holds_grant_after(now_slot) && self.grants.sr_pending.is_none() {
                self.grants.sr_pending = Some(self.slot_after(io.now));
                self.grants.asked_at = Some(io.now);
            }
        }
    }

    /// The slot at which the direction may next use a slot, if it has anything to send.
    pub(crate) fn next_slot(&self) -> Option<u64> {
        if !self.has_data() {
            return None;
        }
        if self.dir == RanDirection::Downlink {
            return Some(self.schedulable_from(self.next));
        }
        let n = self.usable_from(self.next);
        // The uplink: the next slot where a grant is held, a decision may give one, or an
        // SR occasion comes.
        let g = &self.grants;
        let mut best = u64::MAX;
        if let Some(&(x, _, _)) = g.granted.front() {
            best = best.min(x);
        }
        if let Some(x) = g.sr_grant {
            best = best.min(x);
        }
        if g.estimate > 0 || !g.reports.is_empty() {
            best = best.min(n);
        }
        if let Some(from) = g.sr_pending {
            let mut x = self.usable_from(from.max(n));
            while !self.is_sr_occasion(x) {
                x = self.usable_from(x + 1);
            }
            best = best.min(x);
        }
        if let Some(x) = self.next_cg_from(n) {
            best = best.min(x);
        }
        (best != u64::MAX).then(|| best.max(n))
    }

    /// The first configured-grant occasion at or after slot `n`, if the UE has a configured
    /// grant (one that reaches an uplink slot, as validated).
    pub(crate) fn next_cg_from(&self, n: u64) -> Option<u64> {
        if self.cg_slots == 0 {
            return None;
        }
        let mut x = self.usable_from(n);
        while !self.is_cg(x) {
            x = self.usable_from(x + 1);
        }
        Some(x)
    }

    /// Uplink slot `n` has come: send an SR if one is due, and send data if the slot is
    /// granted.
    pub(crate) fn uplink_slot(&mut self, n: u64, io: &mut Io<'_, P>) {
        let start = self.start_of(n);
        if !self.in_cell {
            self.decide_until(start);
        }
        // Grants for slots that passed while the UE had nothing to send were wasted.
        while self.grants.granted.front().is_some_and(|g| g.0 < n) {
            self.grants.granted.pop_front();
            self.stats.grants_unused += 1;
        }
        if self.grants.sr_grant.is_some_and(|s| s < n) {
            self.grants.sr_grant = None;
            self.stats.grants_unused += 1;
        }
        let mut granted = false;
        let mut share = 1.0;
        if let Some(&(x, _, s)) = self.grants.granted.front() {
            if x == n {
                self.grants.granted.pop_front();
                granted = true;
                share = s;
            }
        }
        let mut only_sr = false;
        if self.grants.sr_grant == Some(n) {
            self.grants.sr_grant = None;
            only_sr = !granted;
            granted = true;
        }
        if !granted && self.is_cg(n) {
            granted = true;
            share = self.cg_share;
            self.stats.configured_grants_used += 1;
        }
        if granted {
            // The grant was sized from the same capacity when it was made.
            let block = if only_sr {
                self.sr_block(n)
            } else {
                self.block_share(n, share)
            };
            self.grants.sr_pending = None;
            if let Some(at) = self.grants.asked_at.take() {
                self.stats.record_grant_delay(start.since(at));
            }
            self.serve(n, block, io);
            let left = short_bsr_reading(self.backlog_bytes());
            self.grants.reports.push_back((start + self.cfg.slot, left, n));
            return;
        }
        if let Some(from) = self.grants.sr_pending {
            if n >= from && self.is_sr_occasion(n) {
                self.grants.sr_pending = None;
                if self.holds_grant_after(n) {
                    // A grant came meanwhile: the report goes there (TS 38.321 §5.4.4
                    // cancels the pending SR).
                    return;
                }
                self.stats.scheduling_requests += 1;
                let k2 = Dur(self.cfg.slot.as_nanos() * u64::from(self.cfg.uplink.k2));
                let earliest = start + self.cfg.uplink.grant_delay + k2;
                let x = self.usable_from(self.slot_after(Time(earliest.as_nanos().saturating_sub(1))));
                self.grants.sr_grant = Some(x);
                self.stats.grants += 1;
            }
        }
    }

    /// Fill slot `n`'s block of `bytes` (and the carried fraction), standing for
    /// `stands_for` of link time, from the RLC buffer; whether a block was sent.
    fn serve(&mut self, n: u64, (bytes, stands_for): (f64, Dur), io: &mut Io<'_, P>) -> bool {
        let t = self.start_of(n);
        let end = t + self.cfg.slot;
        let total = bytes + self.carry;
        let mut budget = total.floor() as u64;
        self.carry = total - budget as f64;
        if budget == 0 {
            return false;
        }
        let offered = budget;
        self.stats.blocks += 1;
        let mut arrives = end;
        if let Some(h) = self.cfg.harq {
            let (k, extra) = h.draw(&mut self.harq_rng);
            self.stats.harq_retransmissions += k;
            arrives = end + extra;
        }
        while budget > 0 {
            if self.tx.is_none() {
                let Some(d) = self.queue.qdisc.dequeue(t, &mut self.queue.drops) else {
                    break;
                };
                let left = u64::from(d.pkt.wire_len().saturating_sub(ETH_HEADER).max(1));
                self.tx = Some(InTransit {
                    pkt: d.pkt,
                    left,
                    ready: Time::ZERO,
                    start: t,
                    sub: d.queue,
                    sojourn: d.sojourn,
                    marked: d.marked,
                    busy: Dur::ZERO,
                });
            }
            let Some(tx) = self.tx.as_mut() else { break };
            let k = budget.min(tx.left);
            tx.left -= k;
            budget -= k;
            tx.ready = tx.ready.max(arrives);
            tx.busy += Dur(stands_for.as_nanos() * k / offered);
            if tx.left == 0 {
                let Some(tx) = self.tx.take() else { break };
                io.departed(&Departure {
                    pkt: &tx.pkt,
                    queue: 0,
                    sub: tx.sub,
                    sojourn: tx.sojourn,
                    start: tx.start,
                    serialisation: tx.busy,
                    marked: tx.marked,
                });
                let out = tx.ready.max(self.last_out);
                self.last_out = out;
                self.line.push(tx.pkt, out + self.delay, io, ARRIVE);
            }
        }
        self.stats.block_bytes += offered;
        self.stats.block_bytes_used += offered - budget;
        true
    }
}

impl<P: LinkPacket + 'static> Link<P> for Cellular<P> {
    fn ports(&self) -> usize {
        2
    }

    fn start(&mut self, origin: Time, io: &mut Io<'_, P>) {
        self.reset(origin, io.now);
        self.rationalize(io);
    }

    fn send(&mut self, _from: Port, _to: Port, pkt: P, io: &mut Io<'_, P>) {
        self.provisional_origin(io.now);
        // The blocks of the slots up to now were built before this packet arrived.
        self.rationalize(io);
        self.accept(pkt, io);
        self.rationalize(io);
    }

    ticked_link_timeouts!(SLOT);

    one_queue_queries!();

    fn rate(&self, _from: Port, _to: Port) -> Option<Rate> {
        let r = match &self.capacity {
            RanCapacity::Rate { rate, .. } => *rate,
            RanCapacity::Trace(t) => t.mean_rate(),
            RanCapacity::PerMs(r) => Rate::bps((r.iter().sum::<f64>() / r.len().max(1) as f64) as u64),
        };
        Some(Rate::bps((r.bits_per_sec() as f64 * self.cfg.share) as u64))
    }

    fn rate_at(&self, _from: Port, _to: Port, t: Time) -> Option<Rate> {
        let since = Dur(t.as_nanos().saturating_sub(self.origin().as_nanos()));
        let r = self.capacity.rate_at(since);
        Some(Rate::bps((r.bits_per_sec() as f64 * self.cfg.share) as u64))
    }

    fn stats(&self) -> LinkStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{deep_fifo, drive, pkt, Pkt, Seen};
    use l4s_core::Ecn;

    fn link(dir: RanDirection, cfg: RanConfig, mbps: u64, delay_ms: u64) -> Cellular<Pkt> {
        let cap = RanCapacity::Rate {
            rate: Rate::mbps(mbps),
            schedule: RateSchedule::default(),
        };
        Cellular::new(
            dir,
            cfg,
            cap,
            Dur::from_millis(delay_ms),
            &deep_fifo(),
            None,
            Rng::new(7),
        )
    }

    /// Offers `n` packets at once at time 0 and returns the delivery times.
    fn saturate(l: &mut Cellular<Pkt>, n: u64, secs: u64) -> Vec<Time> {
        let offers = (0..n).map(|i| (Time::ZERO, 0, 1, pkt(i))).collect();
        drive(l, offers, Time::from_secs(secs), &mut Seen::default())
            .into_iter()
            .map(|o| o.0)
            .collect()
    }

    fn ns_in_slot(t: Time, slot: Dur, delay: Dur) -> u64 {
        (t.as_nanos() - delay.as_nanos()) % slot.as_nanos()
    }

    #[test]
    fn an_fdd_downlink_carries_its_rate_in_blocks_that_arrive_at_slot_ends() {
        let mut l = link(RanDirection::Downlink, RanConfig::default(), 12, 5);
        // 12 Mbit/s, 0.5 ms slots: 750 bytes a block, two blocks a packet of 1500.
        let out = saturate(&mut l, 2_000, 2);
        // Packets that arrive at a slot's start wait for the next slot: the first block is
        // slot 1's, [0.5, 1) ms, and the first packet is complete at the end of slot 2.
        assert_eq!(out[0], Time::from_micros(6_500));
        let in_a_second = out.iter().filter(|t| **t <= Time::from_micros(1_005_500)).count();
        assert_eq!(in_a_second, 1_000, "12 Mbit/s moves 1000 packets of 1500 B a second");
        for t in &out {
            assert_eq!(ns_in_slot(*t, Dur::from_micros(500), Dur::from_millis(5)), 0, "{t}");
        }
        let s = l.stats();
        assert_eq!(s.block_bytes_used, 2_000 * 1500);
    }

    #[test]
    fn a_tdd_pattern_keeps_the_mean_and_sends_only_in_its_slots() {
        let cfg = RanConfig {
            tdd: parse_tdd("DDDSU").expect("pattern"),
            ..RanConfig::default()
        };
        for dir in [RanDirection::Downlink, RanDirection::Uplink] {
            let mut l = link(dir, cfg.clone(), 20, 0);
            let out = saturate(&mut l, 20_000, 3);
            // Count what arrived in the second second (the uplink's first SR is long over).
            let n = out
                .iter()
                .filter(|t| **t > Time::from_secs(1) && **t <= Time::from_secs(2))
                .count();
            let mbps = n as f64 * 1500.0 * 8.0 / 1e6;
            assert!((mbps - 20.0).abs() < 0.1, "{dir:?}: {mbps} Mbit/s");
            for t in &out {
                // Slot ends: the slot's index in the pattern is (end/slot − 1) mod 5.
                let k = (t.as_nanos() / 500_000 - 1) % 5;
                match dir {
                    RanDirection::Downlink => assert!(k <= 3, "{dir:?} at {t}: slot {k}"),
                    RanDirection::Uplink => assert_eq!(k, 4, "{dir:?} at {t}"),
                }
            }
        }
    }

    #[test]
    fn a_trace_of_one_gives_one_opportunity_each_millisecond() {
        let t = Arc::new(Trace::new(vec![1]).expect("trace"));
        let mut l: Cellular<Pkt> = Cellular::new(
            RanDirection::Downlink,
            RanConfig::default(),
            RanCapacity::Trace(t),
            Dur::ZERO,
            &deep_fifo(),
            None,
            Rng::new(1),
        );
        let out = saturate(&mut l, 5_000, 2);
        let n = out.iter().filter(|t| **t <= Time::from_secs(1)).count() as u64;
        // 1504 bytes a millisecond, spread over its two slots: 752 bytes a block, and the
        // 1999 blocks that end by 1 s carry 1002.2 packets of 1500 bytes.
        assert_eq!(n, 1_002, "{n}");
        assert!(out.iter().all(|t| t.as_nanos() % 500_000 == 0));
        assert_eq!(l.stats().block_bytes, 4_000 * 752);
    }

    /// An idle UE's first packet waits for the SR occasion, the grant delay, K2 and its
    /// slot: uniform on [K, K + T_SR] with K = grant_delay + (K2 + 1)·slot (FDD).
    #[test]
    fn an_idle_ue_waits_for_an_sr_occasion_and_its_grant() {
        let cfg = RanConfig {
            uplink: UplinkScheduling {
                sr_period: Dur::from_millis(10),
                grant_delay: Dur::from_millis(2),
                k2: 4,
                configured_grant: None,
                sr_grant: None,
            },
            ..RanConfig::default()
        };
        let mut l = link(RanDirection::Uplink, cfg, 50, 0);
        let mut rng = Rng::new(5);
        let n = 4_000u64;
        let sent: Vec<Time> = (0..n)
            .map(|i| Time::from_millis(100 * i) + Dur(rng.below(50_000_000)))
            .collect();
        let offers = sent
            .iter()
            .enumerate()
            .map(|(i, t)| (*t, 0, 1, pkt(i as u64)))
            .collect();
        let out = drive(&mut l, offers, Time::from_secs(1_000), &mut Seen::default());
        assert_eq!(out.len() as u64, n);
        let k = 2.0 + 5.0 * 0.5;
        let mut d: Vec<f64> = out
            .iter()
            .map(|o| (o.0.as_nanos() - sent[o.2.id as usize].as_nanos()) as f64 / 1e6)
            .collect();
        d.sort_by(f64::total_cmp);
        assert!(
            d[0] >= k && d[d.len() - 1] <= k + 10.0,
            "{} .. {}",
            d[0],
            d[d.len() - 1]
        );
        let mean = d.iter().sum::<f64>() / d.len() as f64;
        assert!((mean - (k + 5.0)).abs() < 0.25, "mean {mean}");
        for (q, want) in [(0.25, k + 2.5), (0.5, k + 5.0), (0.75, k + 7.5)] {
            let got = d[(q * d.len() as f64) as usize];
            assert!((got - want).abs() < 0.6, "quantile {q}: {got} ms, uniform gives {want}");
        }
        let s = l.stats();
        assert_eq!(s.scheduling_requests, n);
        assert_eq!(s.grant_delays, n);
        let mean_grant = s.grant_delay_ns as f64 / s.grant_delays as f64 / 1e6;
        assert!((mean_grant - (k - 0.5 + 5.0)).abs() < 0.25, "{mean_grant}");
    }

    #[test]
    fn a_backlogged_ue_asks_once_and_is_granted_from_its_reports() {
        let mut l = link(RanDirection::Uplink, RanConfig::default(), 10, 0);
        let out = saturate(&mut l, 1_000, 3);
        assert_eq!(out.len(), 1_000);
        let s = l.stats();
        assert_eq!(s.scheduling_requests, 1, "{s:?}");
        // 1000 packets at 10 Mbit/s take 1.2 s; the grants follow the reports closely.
        let last = out[out.len() - 1].as_secs_f64();
        assert!((1.2..1.21).contains(&last), "{last}");
        assert!(
            s.grants_unused <= u64::from(RanConfig::default().uplink.k2) + 1,
            "{s:?}"
        );
    }

    #[test]
    fn a_configured_grant_spares_the_scheduling_request() {
        let cfg = RanConfig {
            uplink: UplinkScheduling {
                configured_grant: Some(Dur::from_millis(1)),
                ..UplinkScheduling::default()
            },
            ..RanConfig::default()
        };
        let mut l = link(RanDirection::Uplink, cfg, 50, 0);
        let offers = (0..1_000u64)
            .map(|i| (Time::from_millis(20 * i) + Dur(123_456 * (i % 7)), 0, 1, pkt(i)))
            .collect();
        let out = drive(&mut l, offers, Time::from_secs(100), &mut Seen::default());
        assert_eq!(out.len(), 1_000);
        for o in &out {
            let d = o.0.as_nanos() - (20_000_000 * o.2.id + 123_456 * (o.2.id % 7));
            assert!(d <= 1_500_000, "{d} ns: at most a period and a slot");
        }
        assert_eq!(l.stats().scheduling_requests, 0);
    }

    /// BLER 0.1, HARQ RTT 8 ms: a packet spread over two blocks is late if either block
    /// is, and RLC delivers in order; lightly loaded, so that nothing waits behind another.
    #[test]
    fn harq_delays_a_packet_until_all_its_blocks_arrive() {
        let cfg = RanConfig {
            harq: Some(HarqConfig {
                bler: 0.1,
                rtt: Dur::from_millis(8),
            }),
            ..RanConfig::default()
        };
        // 12 Mbit/s: a 1500-byte packet takes two blocks of 750.
        let mut l = link(RanDirection::Downlink, cfg, 12, 0);
        let n = 20_000u64;
        let offers = (0..n)
            .map(|i| (Time::from_millis(50 * i) + Dur(100), 0, 1, pkt(i)))
            .collect();
        let out = drive(&mut l, offers, Time::from_secs(2_000), &mut Seen::default());
        assert_eq!(out.len() as u64, n, "HARQ loses nothing");
        // Without HARQ a packet arriving just after a slot start leaves at the end of the
        // second slot after: 1.4999 ms.
        let added: Vec<u64> = out
            .iter()
            .map(|o| o.0.as_nanos() - 50_000_000 * o.2.id - 100 - 1_499_900)
            .collect();
        // A failed first block arrives at 1 ms + 8 ms, half a millisecond after the second:
        // whole HARQ round trips, or half a millisecond less.
        assert!(
            added
                .iter()
                .all(|a| a % 8_000_000 == 0 || (a + 500_000) % 8_000_000 == 0),
            "{:?}",
            &added[..10]
        );
        let late = added.iter().filter(|a| **a > 0).count() as f64 / n as f64;
        // Late if either of two blocks needed a retransmission: 1 − 0.9² = 19 %.
        assert!((late - 0.19).abs() < 0.012, "{late}");
        let s = l.stats();
        assert_eq!(s.blocks, 2 * n);
        let per_block = s.harq_retransmissions as f64 / s.blocks as f64;
        assert!((per_block - 0.1 / 0.9).abs() < 0.01, "{per_block}");
    }

    /// 12 Mbit/s FDD downlink, 0.5 ms slots, 5 ms delay, DRX with a 40 ms cycle and an
    /// 8 ms on-duration from 0.
    fn drx_downlink(inactivity_ms: u64) -> Cellular<Pkt> {
        let cfg = RanConfig {
            drx: Some(Drx {
                cycle: Dur::from_millis(40),
                offset: Dur::ZERO,
                on_duration: Dur::from_millis(8),
                inactivity: Dur::from_millis(inactivity_ms),
                short: None,
            }),
            ..RanConfig::default()
        };
        cfg.validate().expect("valid");
        link(RanDirection::Downlink, cfg, 12, 5)
    }

    /// The start of the first 0.5 ms slot strictly after `t`.
    fn next_slot(t: Time) -> Time {
        Time((t.as_nanos() / 500_000 + 1) * 500_000)
    }

    #[test]
    fn drx_holds_data_for_a_sleeping_ue_until_its_next_on_duration() {
        // One packet every 97.3 ms (longer than the inactivity timer): each finds the UE
        // asleep unless it comes in an on-duration, at phases spread over the cycle.
        let mut l = drx_downlink(10);
        let arrivals: Vec<Time> = (0..400).map(|k| Time(k * 97_300_000 + 123_400)).collect();
        let offers = arrivals
            .iter()
            .enumerate()
            .map(|(i, &t)| (t, 0, 1, pkt(i as u64)))
            .collect();
        let out = drive(&mut l, offers, Time::from_secs(40), &mut Seen::default());
        assert_eq!(out.len(), arrivals.len());
        let mut waits = Vec::new();
        for ((t_out, _, p), &t) in out.iter().zip(&arrivals) {
            let s = next_slot(t);
            let phase = s.as_nanos() % 40_000_000;
            // Its first block goes in the first slot of an on-duration; two blocks a packet.
            let first = if phase < 8_000_000 {
                s
            } else {
                s + Dur(40_000_000 - phase)
            };
            assert_eq!(*t_out, first + Dur::from_millis(6), "packet {}", p.id);
            waits.push(first.since(s).as_secs_f64() * 1e3);
        }
        // Asleep 32 ms of every 40: a wait of 0 with probability 0.2, else uniform on
        // (0, 32] ms, 12.8 ms on average.
        let mean = waits.iter().sum::<f64>() / waits.len() as f64;
        let max = waits.iter().cloned().fold(0.0, f64::max);
        let awake = waits.iter().filter(|w| **w == 0.0).count() as f64 / waits.len() as f64;
        println!("DRX wait: mean {mean:.2} ms, longest {max:.1} ms, {awake:.3} in an on-duration");
        assert!((mean - 12.8).abs() < 1.5, "mean DRX wait {mean:.2} ms");
        assert!(max <= 32.0, "longest DRX wait {max} ms");
        assert!((awake - 0.2).abs() < 0.05, "{awake:.3} found the UE in its on-duration");
    }

    #[test]
    fn drx_keeps_a_ue_awake_that_receives_more_often_than_its_inactivity_timer() {
        // A packet every 5 ms from 9 ms on, just after the first on-duration: the first
        // waits for the next one (40 ms); from then on the inactivity timer (10 ms) never
        // runs out. Without it (0 ms) every packet outside an on-duration waits again.
        let arrivals: Vec<Time> = (0..200).map(|k| Time(9_000_000 + k * 5_000_000 + 123_400)).collect();
        let offers = || {
            arrivals
                .iter()
                .enumerate()
                .map(|(i, &t)| (t, 0, 1, pkt(i as u64)))
                .collect()
        };
        let out = drive(
            &mut drx_downlink(10),
            offers(),
            Time::from_secs(2),
            &mut Seen::default(),
        );
        assert_eq!(out[0].0, Time::from_millis(46));
        // Once the backlog of the first wait is gone (2.4 Mbit/s offered of 12), each packet
        // leaves in the two slots after it arrives.
        for ((t_out, _, _), &t) in out.iter().zip(&arrivals).skip(20) {
            assert_eq!(*t_out, next_slot(t) + Dur::from_millis(6));
        }
        let outside = |out: &[(Time, Port, Pkt)]| {
            // The slot of each packet's last block starts 5.5 ms before it arrives.
            out.iter()
                .filter(|o| (o.0.as_nanos() - 5_500_000) % 40_000_000 >= 8_000_000)
                .count()
        };
        assert!(
            outside(&out) > 120,
            "{} of 200 served outside an on-duration",
            outside(&out)
        );
        let out = drive(&mut drx_downlink(0), offers(), Time::from_secs(2), &mut Seen::default());
        assert_eq!(out.len(), 200);
        assert_eq!(outside(&out), 0, "without an inactivity timer only on-durations serve");
    }

    #[test]
    fn after_its_inactivity_timer_a_ue_with_a_short_cycle_wakes_every_short_cycle_for_a_while() {
        // Long cycle 40 ms, short cycle 10 ms for two cycles, on-duration 2 ms, inactivity
        // 4 ms; 200-byte packets take one 0.5 ms slot, then the 5 ms delay.
        let cfg = RanConfig {
            drx: Some(Drx {
                cycle: Dur::from_millis(40),
                offset: Dur::ZERO,
                on_duration: Dur::from_millis(2),
                inactivity: Dur::from_millis(4),
                short: Some((Dur::from_millis(10), 2)),
            }),
            ..RanConfig::default()
        };
        cfg.validate().expect("valid");
        let small = |id, at_us: u64| {
            (
                Time(at_us * 1000),
                0,
                1,
                Pkt {
                    id,
                    size: 200,
                    ecn: Ecn::Ect1,
                },
            )
        };
        let offers = vec![
            small(0, 100),    // in the long cycle's on-duration: slot 0.5 ms; awake to 4.5
            small(1, 5_100),  // short cycle over 4.5..24.5 ms: its on-duration at 10
            small(2, 14_600), // awake to 14, short cycle over 14..34: at 20
            small(3, 24_600), // awake to 24, short cycle over 24..44: at 30
            small(4, 55_100), // the short cycle ended at 54: the long one's next, at 80
        ];
        let mut l = link(RanDirection::Downlink, cfg.clone(), 12, 5);
        let out: Vec<u64> = drive(&mut l, offers.clone(), Time::from_secs(1), &mut Seen::default())
            .iter()
            .map(|o| o.0.as_nanos() / 100_000)
            .collect();
        assert_eq!(out, [60, 155, 255, 355, 855], "delivery times in 0.1 ms");
        // Without the short cycle each waits for the long cycle's next on-duration.
        let long_only = RanConfig {
            drx: cfg.drx.map(|d| Drx { short: None, ..d }),
            ..cfg
        };
        let mut l = link(RanDirection::Downlink, long_only, 12, 5);
        let out: Vec<u64> = drive(&mut l, offers, Time::from_secs(1), &mut Seen::default())
            .iter()
            .map(|o| o.0.as_nanos() / 100_000)
            .collect();
        assert_eq!(out, [60, 455, 455, 455, 855]);
    }

    #[test]
    fn drx_parameters_are_those_of_ts_38_331() {
        let bad = |f: &dyn Fn(&mut Drx), tdd: &str, slot_ms: u64| {
            let mut d = Drx {
                cycle: Dur::from_millis(40),
                offset: Dur::ZERO,
                on_duration: Dur::from_millis(8),
                inactivity: Dur::from_millis(10),
                short: None,
            };
            f(&mut d);
            RanConfig {
                slot: Dur::from_millis(slot_ms),
                tdd: parse_tdd(tdd).expect("pattern"),
                drx: Some(d),
                ..RanConfig::default()
            }
            .validate()
            .err()
            .map(|e| e.0)
        };
        assert_eq!(bad(&|_| {}, "fdd", 1), None);
        assert_eq!(bad(&|d| d.cycle = Dur::from_millis(30), "fdd", 1), Some("drx.cycle"));
        assert_eq!(
            bad(&|d| d.on_duration = Dur::from_millis(7), "fdd", 1),
            Some("drx.on_duration")
        );
        assert_eq!(
            bad(&|d| d.inactivity = Dur::from_millis(7), "fdd", 1),
            Some("drx.inactivity")
        );
        assert_eq!(
            bad(
                &|d| {
                    d.cycle = Dur::from_millis(10);
                    d.on_duration = Dur::from_millis(20)
                },
                "fdd",
                1
            ),
            Some("drx.on_duration")
        );
        assert_eq!(bad(&|d| d.offset = Dur::from_millis(40), "fdd", 1), Some("drx.offset"));
        assert_eq!(bad(&|d| d.offset = Dur::from_micros(500), "fdd", 1), Some("drx.offset"));
        // A 1 ms on-duration that always falls on the pattern's uplink slot.
        let on_up = |d: &mut Drx| {
            d.cycle = Dur::from_millis(10);
            d.offset = Dur::from_millis(9);
            d.on_duration = Dur::from_millis(1);
        };
        assert_eq!(bad(&on_up, "DDDDDDDDDU", 1), Some("drx.offset"));
        let short = |c: u64, k: u32| move |d: &mut Drx| d.short = Some((Dur::from_millis(c), k));
        assert_eq!(bad(&short(10, 2), "fdd", 1), None);
        assert_eq!(bad(&short(9, 2), "fdd", 1), Some("drx.short_cycle"));
        assert_eq!(bad(&short(16, 2), "fdd", 1), Some("drx.short_cycle"));
        assert_eq!(bad(&short(10, 0), "fdd", 1), Some("drx.short_cycle_timer"));
        assert_eq!(bad(&short(10, 17), "fdd", 1), Some("drx.short_cycle_timer"));
        assert_eq!(bad(&on_up, "DDDDDDDDUD", 1), None);
    }

    #[test]
    fn the_base_station_reads_a_short_bsr_as_the_top_of_its_range() {
        assert_eq!(short_bsr_reading(0), 0);
        assert_eq!(short_bsr_reading(1), 10);
        assert_eq!(short_bsr_reading(10), 10);
        assert_eq!(short_bsr_reading(11), 14);
        assert_eq!(short_bsr_reading(3000), 3909);
        assert_eq!(short_bsr_reading(150_000), 150_000);
        assert_eq!(short_bsr_reading(150_001), 150_001);
        assert_eq!(short_bsr_reading(5_000_000), 150_001);
        // The levels grow by at most 40 % (TS 38.321 Table 6.1.3.1-1).
        assert!(SHORT_BSR_LEVELS
            .windows(2)
            .all(|w| w[1] > w[0] && w[1] * 10 <= w[0] * 14 + 10));
        // Two packets (3000 IP bytes) on a 10 Mbit/s uplink, blocks of 625 bytes: after the
        // SR's block 2375 bytes are left, read as 2806, so the base station grants five more
        // slots where four carry the rest. Read exactly, the grants would match the blocks.
        let mut l = link(RanDirection::Uplink, RanConfig::default(), 10, 0);
        assert_eq!(saturate(&mut l, 2, 1).len(), 2);
        let s = l.stats();
        assert_eq!((s.grants, s.blocks, s.block_bytes_used), (6, 5, 3000), "{s:?}");
    }

    #[test]
    fn a_small_grant_after_the_sr_costs_the_rest_of_the_packet_a_report_cycle() {
        // SR every 10 ms, the grant 2 ms later, K2 = 4, 0.5 ms slots, 50 Mbit/s (blocks of
        // 3125 bytes). Answered with a full block, a 1500-byte packet leaves in the granted
        // slot; with 100 bytes, the rest waits for the report at that slot's end and a grant
        // K2 slots after it: (K2 + 1) slots, 2.5 ms, later.
        let one = |sr_grant: Option<u64>| {
            let cfg = RanConfig {
                uplink: UplinkScheduling {
                    sr_period: Dur::from_millis(10),
                    grant_delay: Dur::from_millis(2),
                    k2: 4,
                    sr_grant,
                    ..UplinkScheduling::default()
                },
                ..RanConfig::default()
            };
            cfg.validate().expect("valid");
            let mut l = link(RanDirection::Uplink, cfg, 50, 0);
            let out = drive(
                &mut l,
                vec![(Time(1_234_000), 0, 1, pkt(0))],
                Time::from_secs(1),
                &mut Seen::default(),
            );
            (out[0].0, l.stats())
        };
        let (full, s_full) = one(None);
        let (small, s_small) = one(Some(100));
        assert_eq!(small.since(full), Dur::from_micros(2500));
        assert_eq!((s_full.grants, s_full.blocks), (1, 1));
        assert_eq!((s_small.grants, s_small.blocks, s_small.block_bytes_used), (2, 2, 1500));
        assert_eq!(s_small.block_bytes, 100 + 3125);
        // The SR occasion at 10 ms, its grant for the slot at 10 + 2 + 4 x 0.5 = 14 ms.
        assert_eq!(full, Time::from_micros(14_500));
    }

    #[test]
    fn bad_parameters_name_their_key() {
        let bad = |f: &dyn Fn(&mut RanConfig)| {
            let mut c = RanConfig::default();
            f(&mut c);
            c.validate().expect_err("refused").0
        };
        assert_eq!(bad(&|c| c.slot = Dur::from_micros(300)), "slot");
        assert_eq!(bad(&|c| c.uplink.sr_period = Dur::from_micros(700)), "sr_period");
        // Whole slots, but not one of TS 38.331's periodicities (a period of years once
        // made a run take as long as its slots to reach the first occasion).
        assert_eq!(bad(&|c| c.uplink.sr_period = Dur::from_millis(3)), "sr_period");
        assert_eq!(bad(&|c| c.uplink.sr_period = Dur::from_millis(1280)), "sr_period");
        assert_eq!(bad(&|c| c.uplink.sr_period = Dur::from_secs(999_999_999)), "sr_period");
        for sl in SR_PERIOD_SLOTS {
            let mut c = RanConfig {
                slot: Dur::from_micros(500),
                ..Default::default()
            };
            c.uplink.sr_period = Dur::from_micros(500 * sl);
            assert!(c.validate().is_ok(), "{sl} slots");
        }
        assert_eq!(
            bad(&|c| c.uplink.configured_grant = Some(Dur::from_millis(641))),
            "configured_grant"
        );
        assert_eq!(bad(&|c| c.share = 0.0), "share");
        assert_eq!(bad(&|c| c.uplink.k2 = 40), "k2");
        assert_eq!(bad(&|c| c.uplink.sr_grant = Some(0)), "sr_grant");
        assert_eq!(
            bad(&|c| c.uplink.configured_grant = Some(Dur::from_micros(600))),
            "configured_grant"
        );
        assert_eq!(
            bad(&|c| {
                c.harq = Some(HarqConfig {
                    bler: 1.0,
                    rtt: Dur::from_millis(8),
                })
            }),
            "bler"
        );
        assert!(parse_tdd("DDXU").is_err());
        assert!(parse_tdd("DDD").is_err());
        assert!(parse_tdd("UU").is_err());
        assert_eq!(parse_tdd("fdd"), Ok(vec![]));
    }
}
