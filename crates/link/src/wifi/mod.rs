//! The arithmetic of an IEEE 802.11 access link, without IO: PHY rates and PPDU durations
//! ([`phy`]), and the MAC's sizes and airtime of one frame exchange ([`airtime`]); and the
//! Wi-Fi BSS built on them as a [`crate::Link`] ([`bss`]), on one channel or, with
//! 802.11be multi-link operation, several.
//!
//! * [`edca`]: EDCA channel access: the contention of access categories of several devices
//!   on one channel (AIFS, backoff, freezing, internal collisions, retries), computed
//!   lazily, validated against [`bianchi`], Bianchi's model of saturated contention.
//! * [`block_ack`]: BlockAck agreement bookkeeping: the originator's window with
//!   retransmissions, retry limit and MSDU lifetime (and, for a multi-link device, MPDUs
//!   held for the link whose TXOP is under way), and the recipient's reordering buffer.
//!
//! Three PHYs are modelled, single-user and full-bandwidth (no OFDMA, MU-MIMO, STBC or DCM):
//!
//! * VHT (802.11ac, IEEE 802.11-2020 clause 21): 20/40/80/160 MHz, VHT-MCS 0–9, 0.8 or
//!   0.4 µs guard interval, BCC coding;
//! * HE (802.11ax, IEEE 802.11ax-2021 clause 27): HE SU PPDUs, 20/40/80/160 MHz, HE-MCS 0–11,
//!   0.8/1.6/3.2 µs guard interval, LDPC coding;
//! * EHT (802.11be, IEEE 802.11be clause 36): EHT MU PPDUs carrying one user (the "EHT SU"
//!   transmission), 20–320 MHz, EHT-MCS 0–13, LDPC coding.
//!
//! Control frames (Ack, BlockAck, RTS, CTS) go at non-HT (clause 17 OFDM) rates. Timing is
//! that of the 5 and 6 GHz bands: 9 µs slots, 16 µs SIFS, no signal extension. Durations
//! are exact integers of nanoseconds (a 0.8 µs-GI HE symbol is 13 600 ns).
//!
//! Every constructor validates its parameters and returns a [`WifiError`] naming the
//! parameter and what was expected; nothing here panics on what a caller passes.
//!
//! ## Where this model and ns-3 differ
//!
//! ns-3's `wifi` module (`VhtPhy`, `HePhy`, `EhtPhy`) was used to check behaviour. Where it
//! departs from the standard, this model follows the standard:
//!
//! * **VHT-SIG-B.** ns-3 leaves VHT-SIG-B out of VHT SU PPDUs (it adds it to VHT MU PPDUs
//!   only); every VHT PPDU carries it (clause 21, the VHT PPDU format), so a 1-stream VHT
//!   preamble is 40 µs here and 36 µs in ns-3.
//! * **Short GI.** With a 0.4 µs GI, the standard's VHT TXTIME rounds the data field up to
//!   a multiple of 4 µs (21.4.3); ns-3 counts N_SYM × 3.6 µs.
//! * **Excluded VHT-MCSs.** ns-3 forbids MCS 9 at 20 MHz for every stream count but 3, and
//!   MCS 6 at 80 MHz with 3 streams. The standard's tables (21.5) also allow 20 MHz MCS 9
//!   with 6 streams, and exclude MCS 6 at 80 MHz with 7 streams, MCS 9 at 80 MHz with
//!   6 streams and MCS 9 at 160 MHz with 3 streams; this model has the standard's list.
//! * **BCC encoders.** ns-3 derives VHT's N_ES from the rate (one encoder per 540 Mb/s at
//!   0.8 µs GI) plus a table of exceptions; that table gives 7 and 11 encoders at 160 MHz,
//!   8 streams, MCS 5 and 8, which leave a fraction of a bit per encoder. Here N_ES is the
//!   smallest count from the same rate rule that divides N_DBPS and N_CBPS, which agrees
//!   with every other entry of ns-3's table and gives 8 and 12 there.
//! * **HE-LTF and EHT-LTF.** ns-3 counts 8 µs per HE-LTF whatever the guard interval (a 2x
//!   LTF with a 1.6 µs GI). In the standard an LTF symbol is its size (1x 3.2 µs, 2x 6.4 µs,
//!   4x 12.8 µs) plus the data field's GI; the size is a parameter here, by default 2x with
//!   a 0.8 or 1.6 µs GI and 4x with 3.2 µs. A 1-stream HE preamble is 43.2 µs with a 0.8 µs
//!   GI (ns-3: 44 µs) and 44 µs with 1.6 µs.
//! * **Coding.** ns-3 counts 6 tail bits of one BCC encoder in HE and EHT data fields. Here
//!   HE and EHT are LDPC-coded (mandatory above 20 MHz and for MCS 10 and up), without tail
//!   bits: N_SYM = ⌈(16 + 8·L) / N_DBPS⌉, leaving out the LDPC extra symbol segment that the
//!   encoder sometimes adds. Either way the difference is at most one symbol.
//! * **N_DBPS.** Where N_CBPS × R is not an integer (1024-QAM 5/6 on 980 or 1960 data
//!   subcarriers), the standard's tables list it rounded down (27.5: 8166 bits at 80 MHz,
//!   MCS 11, 1 stream, hence 600.4 Mb/s); ns-3 keeps the fraction.
//! * **EHT-SIG.** ns-3 sizes EHT-SIG as a copy of HE-SIG-B sent at VHT-MCS min(MCS, 5),
//!   which for an SU transmission is one 4 µs symbol at most data MCSs. The standard's
//!   EHT-SIG for a non-OFDMA transmission is one 52-bit block (20-bit common field, 22-bit
//!   user field, CRC, tail) at the EHT-SIG-MCS of U-SIG: two symbols at EHT-MCS 0 (the
//!   default here), one at EHT-MCS 1 or 3, four at EHT-MCS 15.
//! * **Packet extension.** ns-3 has none; here it is a parameter, 0 by default.

pub mod airtime;
pub mod bianchi;
pub mod block_ack;
pub mod bss;
pub mod edca;
pub mod phy;

pub use airtime::{fit_ampdu, mpdu_bytes, plan_exchange, Ampdu, AmpduLimits, Exchange, ExchangeConfig, Response};
pub use bss::{
    ac_of_dscp, mcs_for_signal, Band, Bss, BssConfig, ChannelConfig, EdcafStats, LinkStats, MarkingRule, ScanConfig,
    Scheduler, StationConfig, StationLink, StationStats, MAX_LINKS,
};
pub use edca::{AccessCategory, EdcaParams};
pub use phy::{BasicRates, EhtSigMcs, GuardInterval, LtfSize, NonHtRate, PhyMode, Standard};

use std::fmt;

/// A parameter out of range, or a combination the standard does not allow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WifiError {
    /// The parameter at fault (`"nss"`, `"mcs"`, `"bandwidth"`, ...).
    pub parameter: &'static str,
    /// What was expected.
    pub expected: String,
    /// What was given.
    pub found: String,
}

impl WifiError {
    pub(crate) fn new(parameter: &'static str, expected: impl Into<String>, found: impl fmt::Display) -> WifiError {
        WifiError {
            parameter,
            expected: expected.into(),
            found: found.to_string(),
        }
    }
}

impl fmt::Display for WifiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: expected {}, found {}",
            self.parameter, self.expected, self.found
        )
    }
}

impl std::error::Error for WifiError {}

/// A distribution of non-negative integers (MAC access delays in µs) in constant memory:
/// an HDR histogram with 2 significant digits up to an hour.
#[derive(Clone, Debug)]
pub struct Histogram(hdrhistogram::Histogram<u64>);

impl Default for Histogram {
    fn default() -> Self {
        // Bounds 1..3.6e9 with 2 digits are valid, so this cannot fail.
        Histogram(hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000, 2).expect("valid histogram bounds"))
    }
}

impl Histogram {
    pub fn record(&mut self, v: u64) {
        self.0.saturating_record(v);
    }
    pub fn len(&self) -> u64 {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// The value at quantile `q` (0 to 1), 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        self.0.value_at_quantile(q)
    }
    pub fn mean(&self) -> f64 {
        self.0.mean()
    }
    /// The HDR histogram itself (µs).
    pub fn hdr(&self) -> &hdrhistogram::Histogram<u64> {
        &self.0
    }
    /// What was recorded after `base` (an earlier copy of this histogram): this one less
    /// `base`'s counts.
    pub fn since(&self, base: &Histogram) -> Histogram {
        let mut h = self.clone();
        // Both come from `Default` with the same bounds, and `base` holds no more in any
        // bucket than `self` did later; otherwise the whole history is kept.
        if h.0.subtract(&base.0).is_err() {
            return self.clone();
        }
        h
    }
}

/// What a BSS counted, for measurement: per station (with its PHY mode) and per EDCAF.
#[derive(Clone, Debug)]
pub struct BssStats {
    pub stations: Vec<StationReport>,
    pub edcafs: Vec<EdcafReport>,
}

/// One station's counters and PHY mode (its first link's).
#[derive(Clone, Debug)]
pub struct StationReport {
    pub name: String,
    pub mode: PhyMode,
    pub stats: StationStats,
    /// Its links, in the order of `stats.links`.
    pub links: Vec<LinkReport>,
}

/// One link of a station: its channel and PHY mode there.
#[derive(Clone, Debug)]
pub struct LinkReport {
    pub channel: String,
    pub band: Band,
    pub mode: PhyMode,
}

/// One EDCAF's counters: the access point's (`station` None) or a station's.
#[derive(Clone, Debug)]
pub struct EdcafReport {
    pub station: Option<String>,
    pub category: AccessCategory,
    pub stats: EdcafStats,
    /// Its channel's name, in a BSS of several channels.
    pub channel: Option<String>,
}
