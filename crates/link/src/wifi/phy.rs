//! PHY rates and PPDU durations of single-user VHT, HE and EHT transmissions, and the
//! non-HT (clause 17 OFDM) rates and durations of control frames.
//!
//! A [`PhyMode`] is a validated transmit vector: standard, bandwidth, spatial streams, MCS,
//! guard interval, and for HE/EHT the LTF size (and EHT-SIG-MCS, packet extension). From it
//! come the data bits per symbol and the data rate, the preamble, and the duration of a PPDU
//! carrying a PSDU (an A-MPDU) of a given length.
//!
//! * N_CBPS = N_SD × N_BPSCS × N_SS and N_DBPS = ⌊N_CBPS × R⌋ (21.5, 27.5, 36.5); data
//!   rate = N_DBPS / T_SYM with T_SYM = 3.2 µs + GI (VHT) or 12.8 µs + GI (HE, EHT).
//! * N_SYM = ⌈(16 + 8·L + 6·N_ES) / N_DBPS⌉ for VHT (BCC, N_ES encoders) and
//!   ⌈(16 + 8·L) / N_DBPS⌉ for HE and EHT (LDPC, no tail bits; the LDPC extra symbol
//!   segment is not modelled), L being the PSDU's pre-EOF length (APEP_LENGTH).
//! * TXTIME = preamble + N_SYM × T_SYM + T_PE. With a 0.4 µs GI the VHT data field is
//!   rounded up to a multiple of 4 µs (21.4.3).
//!
//! The preambles, field by field (µs):
//!
//! | PPDU | fields |
//! |---|---|
//! | VHT | L-STF 8, L-LTF 8, L-SIG 4, VHT-SIG-A 8, VHT-STF 4, N_LTF × VHT-LTF 4, VHT-SIG-B 4 |
//! | HE SU | L-STF 8, L-LTF 8, L-SIG 4, RL-SIG 4, HE-SIG-A 8, HE-STF 4, N_LTF × (HE-LTF + GI) |
//! | EHT MU, one user | L-STF 8, L-LTF 8, L-SIG 4, RL-SIG 4, U-SIG 8, N_SIG × EHT-SIG 4, EHT-STF 4, N_LTF × (EHT-LTF + GI) |
//!
//! N_LTF is 1, 2, 4, 4, 6, 6, 8, 8 for 1 to 8 streams. An HE or EHT LTF symbol is its size
//! (1x 3.2 µs, 2x 6.4 µs, 4x 12.8 µs) plus the data field's GI. N_SIG is the number of
//! EHT-SIG symbols that carry the 52 bits of a non-OFDMA EHT-SIG (common field 20, user
//! field 22, CRC 4, tail 6) at the EHT-SIG-MCS. See the module documentation of
//! [`crate::wifi`] for where ns-3 counts these differently.

use super::WifiError;
use l4s_core::{Dur, Rate};
use std::fmt;

/// aSlotTime of the OFDM PHYs (clause 17 and its successors) in the 5 and 6 GHz bands.
pub const SLOT: Dur = Dur::from_micros(9);
/// aSIFSTime in the 5 and 6 GHz bands.
pub const SIFS: Dur = Dur::from_micros(16);
/// aPPDUMaxTime of HT-mixed, VHT, HE and EHT PPDUs: the longest PPDU an L-SIG LENGTH of
/// 4095 octets at 6 Mb/s can cover, 20 µs + ⌈(4095 + 3) / 3⌉ × 4 µs = 5.484 ms.
pub const A_PPDU_MAX_TIME: Dur = Dur::from_micros(5484);

/// L-STF, L-LTF and L-SIG: the non-HT preamble that every PPDU here starts with.
const LEGACY_PREAMBLE: Dur = Dur::from_micros(20);
/// One 3.2 µs + 0.8 µs OFDM symbol: L-SIG, RL-SIG, SIG-A/U-SIG halves, VHT-LTF, EHT-SIG.
const SYMBOL_4US: Dur = Dur::from_micros(4);
/// Service field bits before the PSDU.
const SERVICE_BITS: u64 = 16;
/// Tail bits per BCC encoder.
const TAIL_BITS: u64 = 6;
/// Bits per EHT-SIG of a non-OFDMA transmission with one user: common field (20) and user
/// field (22), jointly encoded with a 4-bit CRC and 6 tail bits.
const EHT_SIG_SU_BITS: u64 = 20 + 22 + 4 + 6;

/// The PHY of a transmission.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Standard {
    /// Very High Throughput, 802.11ac (IEEE 802.11-2020 clause 21).
    Vht,
    /// High Efficiency, 802.11ax (IEEE 802.11ax-2021 clause 27).
    He,
    /// Extremely High Throughput, 802.11be (IEEE 802.11be clause 36).
    Eht,
}

impl Standard {
    /// The highest MCS index: 9, 11 and 13.
    pub const fn max_mcs(self) -> u8 {
        match self {
            Standard::Vht => 9,
            Standard::He => 11,
            Standard::Eht => 13,
        }
    }

    /// The longest A-MPDU (pre-EOF) in octets a PPDU can carry.
    pub const fn max_ampdu_bytes(self) -> u64 {
        match self {
            Standard::Vht => 1_048_575,
            Standard::He => 6_500_631,
            Standard::Eht => 15_523_200,
        }
    }

    /// The largest Block Ack window (buffer size) of an agreement.
    pub const fn max_ba_window(self) -> u16 {
        match self {
            Standard::Vht => 64,
            Standard::He => 256,
            Standard::Eht => 1024,
        }
    }

    /// The channel widths, MHz.
    pub const fn bandwidths(self) -> &'static [u16] {
        match self {
            Standard::Vht | Standard::He => &[20, 40, 80, 160],
            Standard::Eht => &[20, 40, 80, 160, 320],
        }
    }

    /// The guard intervals of the data field.
    pub const fn guard_intervals(self) -> &'static [GuardInterval] {
        match self {
            Standard::Vht => &[GuardInterval::Ns800, GuardInterval::Ns400],
            Standard::He | Standard::Eht => &[GuardInterval::Ns800, GuardInterval::Ns1600, GuardInterval::Ns3200],
        }
    }
}

impl fmt::Display for Standard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Standard::Vht => "VHT",
            Standard::He => "HE",
            Standard::Eht => "EHT",
        })
    }
}

/// The guard interval of the data field: 0.8 or 0.4 µs (VHT's short GI) before a 3.2 µs
/// VHT symbol; 0.8, 1.6 or 3.2 µs before a 12.8 µs HE or EHT symbol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GuardInterval {
    Ns400,
    Ns800,
    Ns1600,
    Ns3200,
}

impl GuardInterval {
    pub const fn duration(self) -> Dur {
        Dur::from_nanos(match self {
            GuardInterval::Ns400 => 400,
            GuardInterval::Ns800 => 800,
            GuardInterval::Ns1600 => 1600,
            GuardInterval::Ns3200 => 3200,
        })
    }
}

impl fmt::Display for GuardInterval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GuardInterval::Ns400 => "0.4us",
            GuardInterval::Ns800 => "0.8us",
            GuardInterval::Ns1600 => "1.6us",
            GuardInterval::Ns3200 => "3.2us",
        })
    }
}

/// The size of an HE-LTF or EHT-LTF symbol, before its guard interval.
///
/// An HE SU PPDU pairs 1x or 2x with a 0.8 µs GI, 2x with 1.6 µs and 4x with 3.2 µs (4x with
/// 0.8 µs needs DCM and STBC, not modelled); an EHT MU PPDU pairs 2x or 4x with 0.8 µs, 2x
/// with 1.6 µs and 4x with 3.2 µs (the GI+LTF Size field of HE-SIG-A and of EHT-SIG).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LtfSize {
    /// 3.2 µs.
    X1,
    /// 6.4 µs.
    X2,
    /// 12.8 µs.
    X4,
}

impl LtfSize {
    pub const fn duration(self) -> Dur {
        Dur::from_nanos(match self {
            LtfSize::X1 => 3_200,
            LtfSize::X2 => 6_400,
            LtfSize::X4 => 12_800,
        })
    }
}

impl fmt::Display for LtfSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LtfSize::X1 => "1x",
            LtfSize::X2 => "2x",
            LtfSize::X4 => "4x",
        })
    }
}

/// The MCS of EHT-SIG, announced in U-SIG: EHT-MCS 0, 1, 3, or 15 (BPSK with DCM). EHT-SIG
/// symbols are 4 µs with 52 data subcarriers per 20 MHz, so they carry 26, 52, 104 and 13
/// bits, and the 52 bits of a single user's EHT-SIG take 2, 1, 1 and 4 symbols.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EhtSigMcs {
    Mcs0,
    Mcs1,
    Mcs3,
    Mcs15,
}

impl EhtSigMcs {
    /// Data bits per EHT-SIG symbol.
    pub const fn bits_per_symbol(self) -> u64 {
        match self {
            EhtSigMcs::Mcs0 => 26,
            EhtSigMcs::Mcs1 => 52,
            EhtSigMcs::Mcs3 => 104,
            EhtSigMcs::Mcs15 => 13,
        }
    }

    /// EHT-SIG symbols of a non-OFDMA transmission to one user.
    pub const fn su_symbols(self) -> u64 {
        EHT_SIG_SU_BITS.div_ceil(self.bits_per_symbol())
    }
}

/// Modulation and coding of an MCS index (the same for VHT, HE and EHT up to their highest
/// index): bits per subcarrier, coding rate as a fraction, and the non-HT reference rate
/// that a control response is measured against.
const MODULATION: [(u64, u64, u64, NonHtRate); 14] = [
    (1, 1, 2, NonHtRate::Mbps6),   // BPSK 1/2
    (2, 1, 2, NonHtRate::Mbps12),  // QPSK 1/2
    (2, 3, 4, NonHtRate::Mbps18),  // QPSK 3/4
    (4, 1, 2, NonHtRate::Mbps24),  // 16-QAM 1/2
    (4, 3, 4, NonHtRate::Mbps36),  // 16-QAM 3/4
    (6, 2, 3, NonHtRate::Mbps48),  // 64-QAM 2/3
    (6, 3, 4, NonHtRate::Mbps54),  // 64-QAM 3/4
    (6, 5, 6, NonHtRate::Mbps54),  // 64-QAM 5/6
    (8, 3, 4, NonHtRate::Mbps54),  // 256-QAM 3/4
    (8, 5, 6, NonHtRate::Mbps54),  // 256-QAM 5/6
    (10, 3, 4, NonHtRate::Mbps54), // 1024-QAM 3/4
    (10, 5, 6, NonHtRate::Mbps54), // 1024-QAM 5/6
    (12, 3, 4, NonHtRate::Mbps54), // 4096-QAM 3/4
    (12, 5, 6, NonHtRate::Mbps54), // 4096-QAM 5/6
];

/// VHT-MCSs that the standard's tables (802.11-2020 21.5) mark as not valid: those whose
/// N_DBPS, or N_DBPS or N_CBPS per BCC encoder, would not be an integer.
fn vht_excluded(bandwidth_mhz: u16, nss: u8, mcs: u8) -> bool {
    matches!(
        (bandwidth_mhz, mcs, nss),
        (20, 9, 1 | 2 | 4 | 5 | 7 | 8) | (80, 6, 3 | 7) | (80, 9, 6) | (160, 9, 3)
    )
}

/// A validated single-user transmit vector; see the [module documentation](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PhyMode {
    standard: Standard,
    bandwidth_mhz: u16,
    nss: u8,
    mcs: u8,
    gi: GuardInterval,
    ltf: Option<LtfSize>,
    eht_sig_mcs: Option<EhtSigMcs>,
    packet_extension: Dur,
}

impl PhyMode {
    /// A transmit vector with the default LTF size (2x with a 0.8 or 1.6 µs GI, 4x with
    /// 3.2 µs), EHT-SIG at EHT-MCS 0 and no packet extension.
    ///
    /// Errors name the parameter: `nss` (1 to 8), `bandwidth` (20/40/80/160 MHz, and 320 MHz
    /// for EHT), `mcs` (0 to [`Standard::max_mcs`], and for VHT not one of the excluded
    /// combinations), `guard_interval` (0.8 or 0.4 µs for VHT, 0.8/1.6/3.2 µs for HE and EHT).
    pub fn new(
        standard: Standard,
        bandwidth_mhz: u16,
        nss: u8,
        mcs: u8,
        gi: GuardInterval,
    ) -> Result<PhyMode, WifiError> {
        if !(1..=8).contains(&nss) {
            return Err(WifiError::new("nss", "1 to 8 spatial streams", nss));
        }
        if !standard.bandwidths().contains(&bandwidth_mhz) {
            let list: Vec<String> = standard.bandwidths().iter().map(u16::to_string).collect();
            return Err(WifiError::new(
                "bandwidth",
                format!("{} MHz for {standard}", list.join("/")),
                format!("{bandwidth_mhz} MHz"),
            ));
        }
        if mcs > standard.max_mcs() {
            return Err(WifiError::new(
                "mcs",
                format!("0 to {} for {standard}", standard.max_mcs()),
                mcs,
            ));
        }
        if !standard.guard_intervals().contains(&gi) {
            let list: Vec<String> = standard.guard_intervals().iter().map(|g| g.to_string()).collect();
            return Err(WifiError::new(
                "guard_interval",
                format!("{} for {standard}", list.join(" or ")),
                gi,
            ));
        }
        if standard == Standard::Vht && vht_excluded(bandwidth_mhz, nss, mcs) {
            return Err(WifiError::new(
                "mcs",
                format!(
                    "a VHT-MCS valid at {bandwidth_mhz} MHz with {nss} spatial streams (802.11-2020 21.5 \
                     excludes MCS 9 at 20 MHz except with 3 or 6 streams, MCS 6 at 80 MHz with 3 or 7, \
                     MCS 9 at 80 MHz with 6 and MCS 9 at 160 MHz with 3)"
                ),
                mcs,
            ));
        }
        let ltf = match (standard, gi) {
            (Standard::Vht, _) => None,
            (_, GuardInterval::Ns3200) => Some(LtfSize::X4),
            _ => Some(LtfSize::X2),
        };
        Ok(PhyMode {
            standard,
            bandwidth_mhz,
            nss,
            mcs,
            gi,
            ltf,
            eht_sig_mcs: (standard == Standard::Eht).then_some(EhtSigMcs::Mcs0),
            packet_extension: Dur::ZERO,
        })
    }

    /// The same mode with another HE-LTF or EHT-LTF size; it must pair with the GI (see
    /// [`LtfSize`]). VHT has no choice of LTF.
    pub fn with_ltf(mut self, ltf: LtfSize) -> Result<PhyMode, WifiError> {
        use GuardInterval::*;
        use LtfSize::*;
        let (ok, pairs) = match self.standard {
            Standard::Vht => return Err(WifiError::new("ltf", "no LTF size for VHT (a VHT-LTF is 4 us)", ltf)),
            Standard::He => (
                matches!((ltf, self.gi), (X1 | X2, Ns800) | (X2, Ns1600) | (X4, Ns3200)),
                "1x or 2x with a 0.8us GI, 2x with 1.6us, 4x with 3.2us",
            ),
            Standard::Eht => (
                matches!((ltf, self.gi), (X2 | X4, Ns800) | (X2, Ns1600) | (X4, Ns3200)),
                "2x or 4x with a 0.8us GI, 2x with 1.6us, 4x with 3.2us",
            ),
        };
        if !ok {
            return Err(WifiError::new(
                "ltf",
                format!("an {} LTF size that pairs with the GI: {pairs}", self.standard),
                format!("{ltf} with a {} GI", self.gi),
            ));
        }
        self.ltf = Some(ltf);
        Ok(self)
    }

    /// The same mode with a packet extension after the data field: 0, 4, 8, 12 or 16 µs for
    /// HE, up to 20 µs for EHT, none for VHT.
    pub fn with_packet_extension(mut self, pe: Dur) -> Result<PhyMode, WifiError> {
        let max = match self.standard {
            Standard::Vht => Dur::ZERO,
            Standard::He => Dur::from_micros(16),
            Standard::Eht => Dur::from_micros(20),
        };
        if pe > max || !pe.as_nanos().is_multiple_of(4_000) {
            return Err(WifiError::new(
                "packet_extension",
                format!("a multiple of 4 us up to {max} for {}", self.standard),
                pe,
            ));
        }
        self.packet_extension = pe;
        Ok(self)
    }

    /// The same EHT mode with EHT-SIG at another EHT-SIG-MCS.
    pub fn with_eht_sig_mcs(mut self, mcs: EhtSigMcs) -> Result<PhyMode, WifiError> {
        if self.standard != Standard::Eht {
            return Err(WifiError::new(
                "eht_sig_mcs",
                "an EHT mode (only EHT PPDUs have EHT-SIG)",
                self.standard,
            ));
        }
        self.eht_sig_mcs = Some(mcs);
        Ok(self)
    }

    pub fn standard(&self) -> Standard {
        self.standard
    }
    pub fn bandwidth_mhz(&self) -> u16 {
        self.bandwidth_mhz
    }
    pub fn nss(&self) -> u8 {
        self.nss
    }
    pub fn mcs(&self) -> u8 {
        self.mcs
    }
    pub fn guard_interval(&self) -> GuardInterval {
        self.gi
    }
    /// The HE-LTF or EHT-LTF size (`None` for VHT).
    pub fn ltf(&self) -> Option<LtfSize> {
        self.ltf
    }
    /// The EHT-SIG-MCS (`None` but for EHT).
    pub fn eht_sig_mcs(&self) -> Option<EhtSigMcs> {
        self.eht_sig_mcs
    }
    pub fn packet_extension(&self) -> Dur {
        self.packet_extension
    }

    /// N_SD: data subcarriers (VHT 52/108/234/468; HE and EHT 234/468/980/1960/3920 for
    /// 20/40/80/160/320 MHz).
    pub fn data_subcarriers(&self) -> u64 {
        let i = match self.bandwidth_mhz {
            20 => 0,
            40 => 1,
            80 => 2,
            160 => 3,
            _ => 4,
        };
        match self.standard {
            Standard::Vht => [52, 108, 234, 468, 468][i],
            Standard::He | Standard::Eht => [234, 468, 980, 1960, 3920][i],
        }
    }

    /// N_CBPS: coded bits per data symbol, all streams.
    pub fn coded_bits_per_symbol(&self) -> u64 {
        self.data_subcarriers() * MODULATION[self.mcs as usize].0 * u64::from(self.nss)
    }

    /// N_DBPS: data bits per data symbol, all streams, ⌊N_CBPS × R⌋.
    pub fn data_bits_per_symbol(&self) -> u64 {
        let (_, num, den, _) = MODULATION[self.mcs as usize];
        self.coded_bits_per_symbol() * num / den
    }

    /// T_SYM of the data field: 3.2 µs (VHT) or 12.8 µs (HE, EHT) plus the GI.
    pub fn symbol_duration(&self) -> Dur {
        let base = match self.standard {
            Standard::Vht => Dur::from_nanos(3_200),
            Standard::He | Standard::Eht => Dur::from_nanos(12_800),
        };
        base + self.gi.duration()
    }

    /// The PHY data rate N_DBPS / T_SYM, to the nearest bit per second.
    pub fn data_rate(&self) -> Rate {
        let t = u128::from(self.symbol_duration().as_nanos());
        let bps = (u128::from(self.data_bits_per_symbol()) * 1_000_000_000 + t / 2) / t;
        Rate::bps(bps.min(u128::from(u64::MAX)) as u64)
    }

    /// N_ES, the BCC encoders of a VHT data field (`None` for LDPC-coded HE and EHT): one per
    /// 2160 data bits per symbol (540 Mb/s at a 0.8 µs GI), raised to the smallest count that
    /// divides both N_DBPS and N_CBPS.
    pub fn bcc_encoders(&self) -> Option<u64> {
        if self.standard != Standard::Vht {
            return None;
        }
        let (ndbps, ncbps) = (self.data_bits_per_symbol(), self.coded_bits_per_symbol());
        let first = ndbps.div_ceil(2160).max(1);
        Some(
            (first..=ndbps)
                .find(|n| ndbps.is_multiple_of(*n) && ncbps.is_multiple_of(*n))
                .unwrap_or(first),
        )
    }

    /// N_LTF: VHT-, HE- or EHT-LTF symbols for the stream count (1, 2, 4, 4, 6, 6, 8, 8).
    pub fn ltf_symbols(&self) -> u64 {
        match self.nss {
            1 => 1,
            2 => 2,
            3 | 4 => 4,
            5 | 6 => 6,
            _ => 8,
        }
    }

    /// Everything before the data field; see the table in the [module documentation](self).
    pub fn preamble(&self) -> Dur {
        let n_ltf = self.ltf_symbols();
        let he_ltf = self.ltf.map_or(Dur::ZERO, |l| l.duration() + self.gi.duration());
        match self.standard {
            // VHT-SIG-A (2 symbols), VHT-STF, VHT-LTFs, VHT-SIG-B.
            Standard::Vht => LEGACY_PREAMBLE + SYMBOL_4US * (2 + 1 + n_ltf + 1),
            // RL-SIG, HE-SIG-A (2 symbols), HE-STF, HE-LTFs.
            Standard::He => LEGACY_PREAMBLE + SYMBOL_4US * (1 + 2 + 1) + he_ltf * n_ltf,
            // RL-SIG, U-SIG (2 symbols), EHT-SIG, EHT-STF, EHT-LTFs.
            Standard::Eht => {
                let sig = self.eht_sig_mcs.map_or(0, EhtSigMcs::su_symbols);
                LEGACY_PREAMBLE + SYMBOL_4US * (1 + 2 + sig + 1) + he_ltf * n_ltf
            }
        }
    }

    /// N_SYM: data symbols for a PSDU of `psdu_bytes` (the A-MPDU's pre-EOF length).
    pub fn data_symbols(&self, psdu_bytes: u64) -> u64 {
        let tail = self.bcc_encoders().map_or(0, |n| TAIL_BITS * n);
        let bits = u128::from(SERVICE_BITS + tail) + 8 * u128::from(psdu_bytes);
        bits.div_ceil(u128::from(self.data_bits_per_symbol()))
            .min(u128::from(u64::MAX)) as u64
    }

    /// TXTIME of a PPDU carrying `psdu_bytes`: preamble, data field, packet extension.
    pub fn ppdu_duration(&self, psdu_bytes: u64) -> Dur {
        let n_sym = u128::from(self.data_symbols(psdu_bytes));
        let t_sym = u128::from(self.symbol_duration().as_nanos());
        let data = if self.gi == GuardInterval::Ns400 {
            // 21.4.3: T_SYML × ⌈T_SYMS × N_SYM / T_SYML⌉, T_SYML = 4 µs.
            let t_syml = u128::from(SYMBOL_4US.as_nanos());
            (t_sym * n_sym).div_ceil(t_syml) * t_syml
        } else {
            t_sym * n_sym
        };
        self.preamble() + Dur::from_nanos(data.min(u128::from(u64::MAX)) as u64) + self.packet_extension
    }

    /// The non-HT reference rate of the MCS: what a control response to this PPDU is
    /// measured against (BPSK 1/2 6 Mb/s, QPSK 1/2 12, QPSK 3/4 18, 16-QAM 1/2 24,
    /// 16-QAM 3/4 36, 64-QAM 2/3 48, anything above 54).
    pub fn non_ht_reference_rate(&self) -> NonHtRate {
        MODULATION[self.mcs as usize].3
    }

    /// The rate of a control response (Ack, BlockAck, CTS) to this PPDU with the BSS's basic
    /// rate set; see [`BasicRates::control_response_rate`].
    pub fn control_response_rate(&self, basic: BasicRates) -> NonHtRate {
        basic.control_response_rate(self.non_ht_reference_rate())
    }
}

impl fmt::Display for PhyMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} MHz {}SS MCS {} GI {}",
            self.standard, self.bandwidth_mhz, self.nss, self.mcs, self.gi
        )?;
        if let Some(ltf) = self.ltf {
            write!(f, " {ltf} LTF")?;
        }
        Ok(())
    }
}

/// A non-HT (clause 17 OFDM, 20 MHz) rate, at which control frames are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NonHtRate {
    Mbps6,
    Mbps9,
    Mbps12,
    Mbps18,
    Mbps24,
    Mbps36,
    Mbps48,
    Mbps54,
}

impl NonHtRate {
    /// All eight, slowest first.
    pub const ALL: [NonHtRate; 8] = [
        NonHtRate::Mbps6,
        NonHtRate::Mbps9,
        NonHtRate::Mbps12,
        NonHtRate::Mbps18,
        NonHtRate::Mbps24,
        NonHtRate::Mbps36,
        NonHtRate::Mbps48,
        NonHtRate::Mbps54,
    ];

    pub fn from_mbps(mbps: u32) -> Result<NonHtRate, WifiError> {
        NonHtRate::ALL.into_iter().find(|r| r.mbps() == mbps).ok_or_else(|| {
            WifiError::new(
                "non_ht_rate",
                "6, 9, 12, 18, 24, 36, 48 or 54 Mb/s",
                format!("{mbps} Mb/s"),
            )
        })
    }

    pub const fn mbps(self) -> u32 {
        match self {
            NonHtRate::Mbps6 => 6,
            NonHtRate::Mbps9 => 9,
            NonHtRate::Mbps12 => 12,
            NonHtRate::Mbps18 => 18,
            NonHtRate::Mbps24 => 24,
            NonHtRate::Mbps36 => 36,
            NonHtRate::Mbps48 => 48,
            NonHtRate::Mbps54 => 54,
        }
    }

    pub const fn rate(self) -> Rate {
        Rate::mbps(self.mbps() as u64)
    }

    /// N_DBPS of a 4 µs symbol.
    pub const fn data_bits_per_symbol(self) -> u64 {
        self.mbps() as u64 * 4
    }

    /// TXTIME of a non-HT PPDU carrying `bytes` (a control frame with its FCS):
    /// 20 µs + 4 µs × ⌈(16 + 8·bytes + 6) / N_DBPS⌉ (clause 17; no signal extension in
    /// the 5 and 6 GHz bands).
    pub fn frame_duration(self, bytes: u64) -> Dur {
        let bits = u128::from(SERVICE_BITS + TAIL_BITS) + 8 * u128::from(bytes);
        let n_sym = bits.div_ceil(u128::from(self.data_bits_per_symbol()));
        LEGACY_PREAMBLE + SYMBOL_4US * (n_sym.min(u128::from(u64::MAX)) as u64)
    }
}

impl fmt::Display for NonHtRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} Mb/s", self.mbps())
    }
}

/// A BSS's basic rate set (BSSBasicRateSet) of non-HT rates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BasicRates(u8);

impl BasicRates {
    /// The OFDM PHY's mandatory rates, 6, 12 and 24 Mb/s: a common basic rate set, and the
    /// fallback when no basic rate is low enough.
    pub const MANDATORY: BasicRates = BasicRates(1 << 0 | 1 << 2 | 1 << 4);

    pub fn new(rates: &[NonHtRate]) -> BasicRates {
        BasicRates(rates.iter().fold(0, |set, r| set | 1 << *r as u8))
    }

    pub fn contains(self, rate: NonHtRate) -> bool {
        self.0 & 1 << rate as u8 != 0
    }

    /// The rate of a control response to a frame whose rate (or, for an HT/VHT/HE/EHT PPDU,
    /// non-HT reference rate) is `eliciting`: the highest basic rate not above it, or if
    /// there is none, the highest mandatory rate not above it (802.11-2020, "Rate selection
    /// for control response frames").
    pub fn control_response_rate(self, eliciting: NonHtRate) -> NonHtRate {
        let highest = |set: BasicRates| {
            NonHtRate::ALL
                .into_iter()
                .rev()
                .find(|r| set.contains(*r) && *r <= eliciting)
        };
        highest(self)
            .or_else(|| highest(BasicRates::MANDATORY))
            .unwrap_or(NonHtRate::Mbps6)
    }
}

impl Default for BasicRates {
    fn default() -> BasicRates {
        BasicRates::MANDATORY
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use GuardInterval::*;
    use Standard::*;

    fn mode(s: Standard, bw: u16, nss: u8, mcs: u8, gi: GuardInterval) -> PhyMode {
        PhyMode::new(s, bw, nss, mcs, gi).unwrap_or_else(|e| panic!("{e}"))
    }

    fn mbps(m: &PhyMode) -> f64 {
        m.data_rate().bits_per_sec() as f64 / 1e6
    }

    fn us(d: Dur) -> f64 {
        d.as_nanos() as f64 / 1e3
    }

    #[track_caller]
    fn assert_mbps(m: &PhyMode, want: f64) {
        let got = mbps(m);
        assert!((got - want).abs() <= 0.05, "{m}: {got:.3} Mb/s, expected {want}");
    }

    #[test]
    fn symbol_durations_are_exact() {
        assert_eq!(mode(He, 20, 1, 0, Ns800).symbol_duration(), Dur::from_nanos(13_600));
        assert_eq!(mode(He, 20, 1, 0, Ns1600).symbol_duration(), Dur::from_nanos(14_400));
        assert_eq!(mode(Eht, 20, 1, 0, Ns3200).symbol_duration(), Dur::from_nanos(16_000));
        assert_eq!(mode(Vht, 20, 1, 0, Ns800).symbol_duration(), Dur::from_nanos(4_000));
        assert_eq!(mode(Vht, 20, 1, 0, Ns400).symbol_duration(), Dur::from_nanos(3_600));
    }

    #[test]
    fn he_rates() {
        for (bw, nss, mcs, want) in [
            (20, 1, 0, 8.6),
            (20, 1, 7, 86.0),
            (20, 1, 11, 143.4),
            (20, 2, 11, 286.8),
            (80, 1, 7, 360.3),
            (80, 1, 11, 600.4),
            (80, 2, 11, 1201.0),
        ] {
            assert_mbps(&mode(He, bw, nss, mcs, Ns800), want);
        }
        // 80 MHz, 2 streams, MCS 9: N_DBPS = ⌊980 × 8 × 2 × 5/6⌋ = 13066, 960.74 Mb/s (the
        // standard's table value); 960.8 would need the unrounded 13066.7 bits.
        let m = mode(He, 80, 2, 9, Ns800);
        assert_eq!(m.data_bits_per_symbol(), 13_066);
        assert_mbps(&m, 960.7);
        // The 1.6 and 3.2 us GIs scale by 13.6/14.4 and 13.6/16.
        for (bw, nss, mcs) in [(20, 1, 0), (20, 1, 11), (80, 2, 9), (80, 2, 11), (160, 4, 7)] {
            let base = mbps(&mode(He, bw, nss, mcs, Ns800));
            assert_mbps(&mode(He, bw, nss, mcs, Ns1600), base * 13.6 / 14.4);
            assert_mbps(&mode(He, bw, nss, mcs, Ns3200), base * 13.6 / 16.0);
        }
        // 160 MHz is twice 80 MHz (1960 = 2 × 980 data subcarriers).
        for nss in 1..=8 {
            for mcs in 0..=11 {
                let (m80, m160) = (mode(He, 80, nss, mcs, Ns800), mode(He, 160, nss, mcs, Ns800));
                assert_eq!(m160.data_subcarriers(), 2 * m80.data_subcarriers());
                assert!((mbps(&m160) - 2.0 * mbps(&m80)).abs() <= 0.1, "{m160}");
            }
        }
    }

    #[test]
    fn eht_rates() {
        assert_mbps(&mode(Eht, 80, 2, 12, Ns800), 1297.1);
        assert_mbps(&mode(Eht, 80, 2, 13, Ns800), 1441.2);
        // EHT-MCS 0–11 are HE's.
        assert_eq!(
            mode(Eht, 160, 3, 11, Ns800).data_rate(),
            mode(He, 160, 3, 11, Ns800).data_rate()
        );
        // 320 MHz: 3920 data subcarriers; 1 stream MCS 13 = 39200 bits / 13.6 us.
        let m = mode(Eht, 320, 1, 13, Ns800);
        assert_eq!(m.data_subcarriers(), 3920);
        assert_mbps(&m, 2882.4);
        let e = PhyMode::new(He, 320, 1, 0, Ns800).unwrap_err();
        assert_eq!(e.parameter, "bandwidth");
    }

    #[test]
    fn vht_rates() {
        for (bw, nss, mcs, lgi, sgi) in [
            (80, 1, 9, 390.0, 433.3),
            (80, 2, 9, 780.0, 866.7),
            (20, 1, 7, 65.0, 72.2),
            (20, 3, 9, 260.0, 288.9),
            (160, 8, 9, 6240.0, 6933.3),
        ] {
            assert_mbps(&mode(Vht, bw, nss, mcs, Ns800), lgi);
            assert_mbps(&mode(Vht, bw, nss, mcs, Ns400), sgi);
        }
        assert_eq!(PhyMode::new(Vht, 20, 1, 9, Ns800).unwrap_err().parameter, "mcs");
        assert!(PhyMode::new(Vht, 20, 6, 9, Ns800).is_ok());
    }

    #[test]
    fn vht_excluded_combinations_are_the_standards() {
        let mut excluded = Vec::new();
        for &bw in Vht.bandwidths() {
            for nss in 1..=8 {
                for mcs in 0..=9 {
                    match PhyMode::new(Vht, bw, nss, mcs, Ns800) {
                        Ok(m) => {
                            let (_, num, den, _) = MODULATION[mcs as usize];
                            assert!(
                                (m.coded_bits_per_symbol() * num).is_multiple_of(den),
                                "{m}: N_DBPS is whole"
                            );
                        }
                        Err(e) => {
                            assert_eq!(e.parameter, "mcs");
                            excluded.push((bw, nss, mcs));
                        }
                    }
                }
            }
        }
        let mut want = vec![(80, 3, 6), (80, 7, 6), (80, 6, 9), (160, 3, 9)];
        want.extend([1, 2, 4, 5, 7, 8].map(|n| (20, n, 9)));
        want.sort();
        excluded.sort();
        assert_eq!(excluded, want);
    }

    #[test]
    fn vht_bcc_encoders() {
        assert_eq!(mode(Vht, 20, 1, 0, Ns800).bcc_encoders(), Some(1));
        assert_eq!(mode(Vht, 80, 1, 9, Ns800).bcc_encoders(), Some(1));
        assert_eq!(mode(Vht, 80, 4, 9, Ns800).bcc_encoders(), Some(3));
        assert_eq!(mode(Vht, 160, 8, 9, Ns800).bcc_encoders(), Some(12));
        // ns-3's exceptions to its one-per-540-Mb/s rule come out of the integrality rule...
        for (bw, nss, mcs, n_es) in [
            (80, 7, 2, 3),
            (80, 7, 7, 6),
            (80, 7, 8, 6),
            (80, 8, 7, 6),
            (160, 4, 7, 6),
            (160, 5, 8, 8),
            (160, 6, 7, 8),
            (160, 7, 3, 4),
            (160, 7, 4, 6),
            (160, 7, 5, 7),
            (160, 7, 7, 9),
            (160, 7, 8, 12),
            (160, 7, 9, 12),
        ] {
            assert_eq!(
                mode(Vht, bw, nss, mcs, Ns800).bcc_encoders(),
                Some(n_es),
                "{bw} {nss} {mcs}"
            );
        }
        // ...and where ns-3 keeps the rule's 7 and 11, N_DBPS (14976, 22464) is not a
        // multiple of them: 8 and 12 encoders.
        assert_eq!(mode(Vht, 160, 8, 5, Ns800).bcc_encoders(), Some(8));
        assert_eq!(mode(Vht, 160, 8, 8, Ns800).bcc_encoders(), Some(12));
        // Every valid VHT mode's encoders split its bits evenly.
        for &bw in Vht.bandwidths() {
            for nss in 1..=8 {
                for m in (0..=9).filter_map(|mcs| PhyMode::new(Vht, bw, nss, mcs, Ns800).ok()) {
                    let n = m.bcc_encoders().unwrap();
                    assert!(
                        m.data_bits_per_symbol() % n == 0 && m.coded_bits_per_symbol() % n == 0,
                        "{m}"
                    );
                }
            }
        }
        assert_eq!(mode(He, 20, 1, 0, Ns800).bcc_encoders(), None);
    }

    #[test]
    fn preambles() {
        let p = |m: PhyMode| us(m.preamble());
        assert_eq!(p(mode(Vht, 80, 1, 9, Ns800)), 40.0);
        assert_eq!(p(mode(Vht, 80, 2, 9, Ns400)), 44.0);
        assert_eq!(p(mode(Vht, 80, 3, 9, Ns800)), 52.0);
        assert_eq!(p(mode(Vht, 160, 8, 9, Ns800)), 68.0);
        // HE: 36 us + N_LTF × (LTF + GI). With a 2x LTF and a 1.6 us GI, 8 us per LTF (what
        // ns-3 counts at every GI): 44 and 52 us.
        assert_eq!(p(mode(He, 20, 1, 0, Ns1600)), 44.0);
        assert_eq!(p(mode(He, 20, 2, 0, Ns1600)), 52.0);
        // The default 0.8 us GI with a 2x LTF: 7.2 us per LTF.
        assert_eq!(p(mode(He, 20, 1, 0, Ns800)), 43.2);
        assert_eq!(p(mode(He, 20, 2, 0, Ns800)), 50.4);
        assert_eq!(p(mode(He, 20, 1, 0, Ns800).with_ltf(LtfSize::X1).unwrap()), 40.0);
        assert_eq!(p(mode(He, 20, 1, 0, Ns3200)), 52.0);
        assert_eq!(p(mode(He, 20, 4, 0, Ns800)), 64.8);
        // EHT: 40 us + EHT-SIG + N_LTF × (LTF + GI); EHT-SIG at EHT-MCS 0 is two symbols.
        let eht = mode(Eht, 320, 1, 13, Ns800);
        assert_eq!(eht.eht_sig_mcs(), Some(EhtSigMcs::Mcs0));
        assert_eq!(p(eht), 51.2);
        assert_eq!(p(eht.with_eht_sig_mcs(EhtSigMcs::Mcs1).unwrap()), 47.2);
        assert_eq!(p(eht.with_eht_sig_mcs(EhtSigMcs::Mcs3).unwrap()), 47.2);
        assert_eq!(p(eht.with_eht_sig_mcs(EhtSigMcs::Mcs15).unwrap()), 59.2);
        assert_eq!(p(mode(Eht, 80, 2, 13, Ns800).with_ltf(LtfSize::X4).unwrap()), 71.2);
    }

    #[test]
    fn ppdu_durations() {
        // VHT 80 MHz 1 SS MCS 9, 1542-byte PSDU: 16 + 12336 + 6 bits over 1560 = 8 symbols.
        let m = mode(Vht, 80, 1, 9, Ns800);
        assert_eq!(m.data_symbols(1542), 8);
        assert_eq!(m.ppdu_duration(1542), Dur::from_micros(40 + 32));
        // Short GI: 9 symbols of 3.6 us are 32.4 us, rounded up to 36 us (ns-3: 32.4 us).
        let m = mode(Vht, 20, 1, 0, Ns400);
        assert_eq!(m.data_symbols(26), 9);
        assert_eq!(m.ppdu_duration(26), Dur::from_micros(40 + 36));
        assert_eq!(m.data_symbols(32), 11);
        assert_eq!(m.ppdu_duration(32), Dur::from_micros(40 + 40));
        // HE 20 MHz 1 SS MCS 0, one 1538-byte MPDU in an A-MPDU (1542 bytes): no tail
        // bits, ⌈12352 / 117⌉ = 106 symbols of 13.6 us.
        let m = mode(He, 20, 1, 0, Ns800);
        assert_eq!(m.data_symbols(1542), 106);
        assert_eq!(m.ppdu_duration(1542), Dur::from_nanos(43_200 + 106 * 13_600));
        let pe = m.with_packet_extension(Dur::from_micros(16)).unwrap();
        assert_eq!(pe.ppdu_duration(1542), m.ppdu_duration(1542) + Dur::from_micros(16));
        // An empty PSDU still has its SERVICE field.
        assert_eq!(m.data_symbols(0), 1);
        // Huge lengths saturate instead of overflowing.
        assert!(m.ppdu_duration(u64::MAX) > Dur::from_secs(1));
    }

    #[test]
    fn non_ht_control_frames() {
        let d = |mbps: u32, bytes: u64| us(NonHtRate::from_mbps(mbps).unwrap().frame_duration(bytes));
        assert_eq!(d(24, 14), 28.0); // Ack
        assert_eq!(d(24, 32), 32.0); // compressed BlockAck, 64-bit bitmap
        assert_eq!(d(24, 56), 40.0); // 256-bit bitmap
        assert_eq!(d(6, 14), 44.0);
        assert_eq!(d(24, 152), 72.0); // 1024-bit bitmap
        assert_eq!(d(24, 20), 28.0); // RTS
        assert_eq!(d(54, 14), 24.0);
        assert_eq!(NonHtRate::Mbps54.data_bits_per_symbol(), 216);
        assert_eq!(NonHtRate::from_mbps(11).unwrap_err().parameter, "non_ht_rate");
    }

    #[test]
    fn control_response_rates() {
        let basic = BasicRates::MANDATORY;
        assert_eq!(BasicRates::default(), basic);
        let r = |mcs| mode(He, 20, 1, mcs, Ns800).control_response_rate(basic);
        assert_eq!(r(0), NonHtRate::Mbps6); // BPSK 1/2: reference 6 Mb/s
        assert_eq!(r(1), NonHtRate::Mbps12);
        assert_eq!(r(2), NonHtRate::Mbps12); // QPSK 3/4: reference 18 Mb/s
        assert_eq!(r(7), NonHtRate::Mbps24);
        assert_eq!(r(11), NonHtRate::Mbps24);
        let all = BasicRates::new(&NonHtRate::ALL);
        assert_eq!(
            mode(Eht, 80, 1, 13, Ns800).control_response_rate(all),
            NonHtRate::Mbps54
        );
        assert_eq!(mode(Vht, 80, 1, 5, Ns800).control_response_rate(all), NonHtRate::Mbps48);
        // No basic rate low enough: the highest mandatory rate that is.
        let high = BasicRates::new(&[NonHtRate::Mbps24, NonHtRate::Mbps54]);
        assert_eq!(high.control_response_rate(NonHtRate::Mbps18), NonHtRate::Mbps12);
        assert_eq!(
            BasicRates::new(&[]).control_response_rate(NonHtRate::Mbps6),
            NonHtRate::Mbps6
        );
    }

    #[test]
    fn invalid_parameters_are_named() {
        let err = |s, bw, nss, mcs, gi| PhyMode::new(s, bw, nss, mcs, gi).unwrap_err();
        for nss in [0, 9] {
            let e = err(He, 20, nss, 0, Ns800);
            assert_eq!(e.parameter, "nss");
            assert!(e.to_string().starts_with("nss: expected 1 to 8"), "{e}");
        }
        assert_eq!(err(Vht, 20, 1, 10, Ns800).parameter, "mcs");
        assert_eq!(err(He, 20, 1, 12, Ns800).parameter, "mcs");
        assert_eq!(err(Eht, 20, 1, 14, Ns800).parameter, "mcs");
        assert_eq!(err(Vht, 20, 1, 0, Ns1600).parameter, "guard_interval");
        assert_eq!(err(Vht, 20, 1, 0, Ns3200).parameter, "guard_interval");
        assert_eq!(err(He, 20, 1, 0, Ns400).parameter, "guard_interval");
        assert_eq!(err(Eht, 20, 1, 0, Ns400).parameter, "guard_interval");
        for (s, bw) in [(Vht, 320), (He, 320), (Eht, 10), (He, 0), (Vht, 60)] {
            let e = err(s, bw, 1, 0, Ns800);
            assert_eq!(e.parameter, "bandwidth", "{s} {bw}");
            assert!(e.to_string().contains(&format!("found {bw} MHz")), "{e}");
        }
        let he = mode(He, 20, 1, 0, Ns1600);
        assert_eq!(he.with_ltf(LtfSize::X1).unwrap_err().parameter, "ltf");
        assert_eq!(he.with_ltf(LtfSize::X4).unwrap_err().parameter, "ltf");
        assert_eq!(
            mode(He, 20, 1, 0, Ns800).with_ltf(LtfSize::X4).unwrap_err().parameter,
            "ltf"
        );
        assert_eq!(
            mode(Eht, 20, 1, 0, Ns800).with_ltf(LtfSize::X1).unwrap_err().parameter,
            "ltf"
        );
        assert_eq!(
            mode(Vht, 20, 1, 0, Ns800).with_ltf(LtfSize::X2).unwrap_err().parameter,
            "ltf"
        );
        assert_eq!(
            he.with_packet_extension(Dur::from_micros(20)).unwrap_err().parameter,
            "packet_extension"
        );
        assert_eq!(
            he.with_packet_extension(Dur::from_micros(5)).unwrap_err().parameter,
            "packet_extension"
        );
        assert!(mode(Eht, 20, 1, 0, Ns800)
            .with_packet_extension(Dur::from_micros(20))
            .is_ok());
        let vht = mode(Vht, 20, 1, 0, Ns800);
        assert_eq!(
            vht.with_packet_extension(Dur::from_micros(4)).unwrap_err().parameter,
            "packet_extension"
        );
        assert_eq!(
            he.with_eht_sig_mcs(EhtSigMcs::Mcs1).unwrap_err().parameter,
            "eht_sig_mcs"
        );
    }
}
