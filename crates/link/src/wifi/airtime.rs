//! MAC sizes and the airtime of one frame exchange: MPDUs for IP packets, A-MPDUs that fit
//! the limits of a PPDU, control frames, and the channel time of
//! AIFS + backoff + [RTS, SIFS, CTS, SIFS] + PPDU + SIFS + Ack or BlockAck.
//!
//! * An IP packet of L bytes becomes an MSDU of L + 8 (LLC/SNAP) and a QoS Data MPDU of
//!   L + 8 + 26 (MAC header) + 4 (FCS), plus 4 with an HT Control field.
//! * A VHT, HE or EHT PPDU always carries an A-MPDU (9.7): each MPDU follows a 4-byte
//!   delimiter, and every subframe but the last is padded to a multiple of 4 bytes. Its
//!   length without the end-of-frame padding (APEP_LENGTH) sets the PPDU's data symbols.
//! * An A-MPDU is limited by the standard's longest A-MPDU, a configured cap (a peer's
//!   Maximum A-MPDU Length Exponent, e.g. 65 535 bytes), the Block Ack window, and time:
//!   aPPDUMaxTime, and when a TXOP limit is set, the TXOP less protection, SIFS and the
//!   response.
//! * A single MPDU (with nothing outstanding) is acknowledged by an Ack; more than one by a
//!   compressed BlockAck whose bitmap covers the agreement's window (64, 256, 512 or 1024
//!   bits, as ns-3's `BlockAckAgreement` sizes it).

use super::phy::{BasicRates, NonHtRate, PhyMode, Standard, A_PPDU_MAX_TIME, SIFS, SLOT};
use super::WifiError;
use l4s_core::Dur;

/// MAC header of a QoS Data frame between a station and its access point.
pub const QOS_DATA_HEADER_BYTES: u64 = 26;
/// HT Control field, present in QoS Data frames that carry link adaptation or HE/EHT
/// control information.
pub const HT_CONTROL_BYTES: u64 = 4;
/// LLC/SNAP header that precedes an IP packet in an MSDU.
pub const LLC_SNAP_BYTES: u64 = 8;
pub const FCS_BYTES: u64 = 4;
/// The longest MSDU (LLC/SNAP header and IP packet).
pub const MAX_MSDU_BYTES: u64 = 2304;
/// MPDU delimiter of an A-MPDU subframe.
pub const DELIMITER_BYTES: u64 = 4;
/// Control frames with their FCS.
pub const ACK_BYTES: u64 = 14;
pub const CTS_BYTES: u64 = 14;
pub const RTS_BYTES: u64 = 20;
pub const BLOCK_ACK_REQ_BYTES: u64 = 24;
/// The unit of the TXOP Limit field of the EDCA Parameter Set.
pub const TXOP_LIMIT_UNIT: Dur = Dur::from_micros(32);

/// AIFS\[AC\] = SIFS + AIFSN\[AC\] × slot (43 µs for best effort's AIFSN of 3).
pub fn aifs(aifsn: u8) -> Dur {
    SIFS + SLOT * u64::from(aifsn)
}

/// The mean backoff drawn uniformly from 0..=`cw` slots: `cw` / 2 slots (67.5 µs for a
/// CWmin of 15).
pub fn mean_backoff(cw: u16) -> Dur {
    SLOT * u64::from(cw) / 2
}

/// A TXOP limit given in units of 32 µs, as the EDCA Parameter Set carries it; 0 (no limit
/// beyond one frame exchange) is `None`.
pub fn txop_limit(units: u16) -> Option<Dur> {
    (units > 0).then(|| TXOP_LIMIT_UNIT * u64::from(units))
}

/// The size of a compressed BlockAck frame whose bitmap covers a window of `window` MPDUs:
/// 32 bytes (64-bit bitmap), 56 (256), 88 (512) or 152 (1024): 20 bytes of header, BA
/// Control and Starting Sequence Control, the bitmap, and the FCS.
pub fn block_ack_bytes(window: u16) -> Result<u64, WifiError> {
    let bitmap_bits = [64, 256, 512, 1024]
        .into_iter()
        .find(|b| (1..=*b).contains(&window))
        .ok_or_else(|| WifiError::new("ba_window", "1 to 1024 MPDUs", window))?;
    Ok(20 + u64::from(bitmap_bits) / 8 + FCS_BYTES)
}

/// The QoS Data MPDU that carries an IP packet of `ip_bytes`: 1538 bytes for a 1500-byte
/// packet, 1542 with an HT Control field. The packet must fit an MSDU (1 to 2296 bytes).
pub fn mpdu_bytes(ip_bytes: u32, ht_control: bool) -> Result<u64, WifiError> {
    let ip = u64::from(ip_bytes);
    if ip == 0 || ip + LLC_SNAP_BYTES > MAX_MSDU_BYTES {
        return Err(WifiError::new(
            "ip_bytes",
            format!(
                "1 to {} bytes (an MSDU of at most {MAX_MSDU_BYTES})",
                MAX_MSDU_BYTES - LLC_SNAP_BYTES
            ),
            ip,
        ));
    }
    Ok(ip + LLC_SNAP_BYTES + QOS_DATA_HEADER_BYTES + FCS_BYTES + if ht_control { HT_CONTROL_BYTES } else { 0 })
}

/// What bounds an A-MPDU, besides the packets queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmpduLimits {
    /// A cap on the A-MPDU's length in bytes; the standard's own
    /// ([`Standard::max_ampdu_bytes`]) applies too.
    pub max_bytes: u64,
    /// The Block Ack window: MPDUs per A-MPDU, at most [`Standard::max_ba_window`].
    pub ba_window: u16,
    /// A cap on the PPDU's duration; [`A_PPDU_MAX_TIME`] applies too.
    pub max_time: Dur,
    /// MPDUs carry an HT Control field.
    pub ht_control: bool,
}

impl AmpduLimits {
    /// The standard's limits: its longest A-MPDU and Block Ack window, aPPDUMaxTime, no HT
    /// Control field.
    pub fn new(standard: Standard) -> AmpduLimits {
        AmpduLimits {
            max_bytes: standard.max_ampdu_bytes(),
            ba_window: standard.max_ba_window(),
            max_time: A_PPDU_MAX_TIME,
            ht_control: false,
        }
    }

    /// The limits in force for `standard`: (bytes, window, time).
    fn effective(&self, standard: Standard) -> Result<(u64, u16, Dur), WifiError> {
        if self.max_bytes == 0 {
            return Err(WifiError::new("max_bytes", "a positive A-MPDU length", 0));
        }
        if !(1..=standard.max_ba_window()).contains(&self.ba_window) {
            return Err(WifiError::new(
                "ba_window",
                format!("1 to {} MPDUs for {standard}", standard.max_ba_window()),
                self.ba_window,
            ));
        }
        if self.max_time.is_zero() {
            return Err(WifiError::new("max_time", "a positive PPDU duration", self.max_time));
        }
        Ok((
            self.max_bytes.min(standard.max_ampdu_bytes()),
            self.ba_window,
            self.max_time.min(A_PPDU_MAX_TIME),
        ))
    }
}

/// An A-MPDU: how many MPDUs, its length without end-of-frame padding, and the PPDU that
/// carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ampdu {
    pub mpdus: usize,
    pub bytes: u64,
    pub ppdu: Dur,
}

/// The longest A-MPDU of the queued IP packets (`packets`, their sizes in bytes, head
/// first) within `limits`, taken in order: it ends before the first packet that would break
/// a limit. No packets make an empty A-MPDU; a first packet that breaks a limit alone, or a
/// packet too large for an MSDU, is an error.
pub fn fit_ampdu<I>(mode: &PhyMode, packets: I, limits: &AmpduLimits) -> Result<Ampdu, WifiError>
where
    I: IntoIterator<Item = u32>,
{
    let (max_bytes, window, max_time) = limits.effective(mode.standard())?;
    let mut fit = Ampdu {
        mpdus: 0,
        bytes: 0,
        ppdu: Dur::ZERO,
    };
    let mut padded = 0;
    for (i, ip) in packets.into_iter().take(usize::from(window)).enumerate() {
        let mpdu = mpdu_bytes(ip, limits.ht_control).map_err(|e| WifiError {
            parameter: "packets",
            expected: format!("IP packets of {}", e.expected),
            found: format!("{ip} bytes (packet {i})"),
        })?;
        let bytes = padded + DELIMITER_BYTES + mpdu;
        let ppdu = mode.ppdu_duration(bytes);
        let broken = if bytes > max_bytes {
            Some((
                "max_bytes",
                format!("an A-MPDU of at most {max_bytes} bytes"),
                format!("{bytes} bytes"),
            ))
        } else if ppdu > max_time {
            Some(("max_time", format!("a PPDU of at most {max_time}"), ppdu.to_string()))
        } else {
            None
        };
        if let Some((parameter, expected, found)) = broken {
            if fit.mpdus == 0 {
                let found = format!("{found} for the first packet ({ip} bytes) at {mode}");
                return Err(WifiError::new(parameter, expected, found));
            }
            break;
        }
        padded = bytes.next_multiple_of(4);
        fit = Ampdu {
            mpdus: i + 1,
            bytes,
            ppdu,
        };
    }
    Ok(fit)
}

/// How one exchange is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExchangeConfig {
    /// AIFSN of the access category, 1 to 15 (best effort: 3).
    pub aifsn: u8,
    /// Backoff before the exchange, e.g. [`mean_backoff`].
    pub backoff: Dur,
    /// Protect the PPDU with RTS/CTS.
    pub rts_cts: bool,
    /// The BSS's basic rate set, for the CTS's rate.
    pub basic_rates: BasicRates,
    /// The rate of the RTS.
    pub rts_rate: NonHtRate,
    /// The rate of the Ack or BlockAck.
    pub response_rate: NonHtRate,
    /// A Block Ack agreement is in place; without one, each PPDU carries one MPDU.
    pub ba_agreement: bool,
    /// Limits of the A-MPDU (its `max_time` applies with or without a TXOP limit).
    pub limits: AmpduLimits,
    /// The TXOP limit of the access category, if any: protection, PPDU, SIFS and response
    /// must fit in it.
    pub txop_limit: Option<Dur>,
}

impl ExchangeConfig {
    /// Best effort without contention: AIFSN 3, the mean backoff of CWmin 15 (7.5 slots), no
    /// RTS/CTS, the mandatory rates as basic rates with RTS and response at the control
    /// response rate for `mode`, a Block Ack agreement, the standard's limits, no TXOP limit.
    pub fn new(mode: &PhyMode) -> ExchangeConfig {
        let basic_rates = BasicRates::MANDATORY;
        let response_rate = mode.control_response_rate(basic_rates);
        ExchangeConfig {
            aifsn: 3,
            backoff: mean_backoff(15),
            rts_cts: false,
            basic_rates,
            rts_rate: response_rate,
            response_rate,
            ba_agreement: true,
            limits: AmpduLimits::new(mode.standard()),
            txop_limit: None,
        }
    }
}

/// The frame that acknowledges a PPDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Response {
    Ack,
    /// A compressed BlockAck of this many bytes ([`block_ack_bytes`]).
    BlockAck {
        bytes: u64,
    },
}

impl Response {
    pub fn bytes(self) -> u64 {
        match self {
            Response::Ack => ACK_BYTES,
            Response::BlockAck { bytes } => bytes,
        }
    }
}

/// One frame exchange and its parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exchange {
    pub aifs: Dur,
    pub backoff: Dur,
    /// RTS + SIFS + CTS + SIFS, or zero.
    pub protection: Dur,
    pub ampdu: Ampdu,
    pub response: Response,
    /// The response frame's own duration.
    pub response_duration: Dur,
}

impl Exchange {
    /// The TXOP: from the start of the first frame (RTS or data) to the end of the response.
    pub fn txop(&self) -> Dur {
        self.protection + self.ampdu.ppdu + SIFS + self.response_duration
    }

    /// The channel time of the exchange: AIFS + backoff + the TXOP.
    pub fn airtime(&self) -> Dur {
        self.aifs + self.backoff + self.txop()
    }
}

/// The exchange that sends as much of the queue (`packets`, IP packet sizes, head first) as
/// `cfg` allows in one PPDU at `mode`. Errors: `aifsn`, `ba_window`, `max_bytes` or
/// `max_time` out of range; `packets` empty or holding a packet too large for an MSDU; the
/// first packet alone breaking `max_bytes`, `max_time` or `txop_limit`.
pub fn plan_exchange<I>(mode: &PhyMode, packets: I, cfg: &ExchangeConfig) -> Result<Exchange, WifiError>
where
    I: IntoIterator<Item = u32>,
    I::IntoIter: Clone,
{
    if !(1..=15).contains(&cfg.aifsn) {
        return Err(WifiError::new("aifsn", "1 to 15", cfg.aifsn));
    }
    let (_, window, _) = cfg.limits.effective(mode.standard())?;
    let packets = packets.into_iter();
    let protection = if cfg.rts_cts {
        let cts_rate = cfg.basic_rates.control_response_rate(cfg.rts_rate);
        cfg.rts_rate.frame_duration(RTS_BYTES) + SIFS + cts_rate.frame_duration(CTS_BYTES) + SIFS
    } else {
        Dur::ZERO
    };
    // The PPDU's time budget when `response` follows it.
    let budget = |response: Response| -> Option<Dur> {
        match cfg.txop_limit {
            None => Some(cfg.limits.max_time),
            Some(limit) => {
                let overhead = protection + SIFS + cfg.response_rate.frame_duration(response.bytes());
                (limit > overhead).then(|| (limit - overhead).min(cfg.limits.max_time))
            }
        }
    };
    let exchange = |ampdu: Ampdu, response: Response| Exchange {
        aifs: aifs(cfg.aifsn),
        backoff: cfg.backoff,
        protection,
        ampdu,
        response,
        response_duration: cfg.response_rate.frame_duration(response.bytes()),
    };

    let block_ack = Response::BlockAck {
        bytes: block_ack_bytes(window)?,
    };
    if cfg.ba_agreement && window > 1 {
        if let Some(max_time) = budget(block_ack) {
            let limits = AmpduLimits { max_time, ..cfg.limits };
            if let Ok(ampdu) = fit_ampdu(mode, packets.clone(), &limits) {
                if ampdu.mpdus > 1 {
                    return Ok(exchange(ampdu, block_ack));
                }
            }
        }
    }
    // One MPDU, acknowledged by an Ack.
    let max_time = budget(Response::Ack).ok_or_else(|| {
        let overhead = protection + SIFS + cfg.response_rate.frame_duration(ACK_BYTES);
        WifiError::new(
            "txop_limit",
            format!("more than the {overhead} of protection, SIFS and Ack"),
            cfg.txop_limit.unwrap_or(Dur::ZERO),
        )
    })?;
    let limits = AmpduLimits {
        max_time,
        ba_window: 1,
        ..cfg.limits
    };
    let ampdu = fit_ampdu(mode, packets, &limits).map_err(|e| match e.parameter {
        "max_time" if cfg.txop_limit.is_some() => WifiError {
            parameter: "txop_limit",
            ..e
        },
        _ => e,
    })?;
    if ampdu.mpdus == 0 {
        return Err(WifiError::new("packets", "at least one queued packet", "none"));
    }
    Ok(exchange(ampdu, Response::Ack))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wifi::phy::GuardInterval::*;
    use crate::wifi::phy::Standard::*;
    use crate::wifi::phy::{GuardInterval, LtfSize};

    fn mode(s: Standard, bw: u16, nss: u8, mcs: u8, gi: GuardInterval) -> PhyMode {
        PhyMode::new(s, bw, nss, mcs, gi).unwrap_or_else(|e| panic!("{e}"))
    }

    fn us(d: Dur) -> f64 {
        d.as_nanos() as f64 / 1e3
    }

    #[test]
    fn mpdu_and_ampdu_sizes() {
        assert_eq!(mpdu_bytes(1500, false).unwrap(), 1538);
        assert_eq!(mpdu_bytes(1500, true).unwrap(), 1542);
        assert_eq!(mpdu_bytes(2296, false).unwrap(), 2334);
        for bad in [0, 2297] {
            assert_eq!(mpdu_bytes(bad, false).unwrap_err().parameter, "ip_bytes");
        }
        // Subframes of 4 + 1538 = 1542 bytes are padded to 1544, except the last.
        let m = mode(He, 80, 2, 11, Ns800);
        let a = fit_ampdu(&m, [1500; 3], &AmpduLimits::new(He)).unwrap();
        assert_eq!((a.mpdus, a.bytes), (3, 1544 * 2 + 1542));
        assert_eq!(a.ppdu, m.ppdu_duration(a.bytes));
        // Unpadded sizes pad to 4: 4 + 138 = 142 -> 144.
        let a = fit_ampdu(&m, [100, 100], &AmpduLimits::new(He)).unwrap();
        assert_eq!(a.bytes, 144 + 142);
        let empty = fit_ampdu(&m, [], &AmpduLimits::new(He)).unwrap();
        assert_eq!((empty.mpdus, empty.bytes, empty.ppdu), (0, 0, Dur::ZERO));
        let ht = AmpduLimits {
            ht_control: true,
            ..AmpduLimits::new(He)
        };
        assert_eq!(fit_ampdu(&m, [1500], &ht).unwrap().bytes, 4 + 1542);
    }

    #[test]
    fn control_frame_sizes_and_timing() {
        assert_eq!(block_ack_bytes(64).unwrap(), 32);
        assert_eq!(block_ack_bytes(1).unwrap(), 32);
        assert_eq!(block_ack_bytes(256).unwrap(), 56);
        assert_eq!(block_ack_bytes(512).unwrap(), 88);
        assert_eq!(block_ack_bytes(1024).unwrap(), 152);
        assert_eq!(block_ack_bytes(0).unwrap_err().parameter, "ba_window");
        assert_eq!(block_ack_bytes(1025).unwrap_err().parameter, "ba_window");
        assert_eq!(aifs(3), Dur::from_micros(43));
        assert_eq!(aifs(2), Dur::from_micros(34));
        assert_eq!(mean_backoff(15), Dur::from_nanos(67_500));
        assert_eq!(txop_limit(94), Some(Dur::from_micros(3008)));
        assert_eq!(txop_limit(0), None);
        assert_eq!(A_PPDU_MAX_TIME, Dur::from_micros(5484));
    }

    /// A saturated HE best-effort station without contention: 1500-byte IP packets (1538-byte
    /// MPDUs, no HT Control), mean backoff 7.5 slots, AIFS 43 us, responses at 24 Mb/s, no
    /// RTS. HE-LTFs are 2x with the 0.8 us GI (7.2 us each), so the preambles are 43.2 us
    /// (1 stream) and 50.4 us (2 streams) where a hand count at 8 us per LTF gives 44 and 52.
    #[test]
    fn saturated_he_txop_table() {
        let plan = |m: PhyMode, max_bytes: u64, ba_window: u16| {
            let mut cfg = ExchangeConfig::new(&m);
            cfg.response_rate = NonHtRate::Mbps24;
            cfg.limits.max_bytes = max_bytes;
            cfg.limits.ba_window = ba_window;
            plan_exchange(&m, std::iter::repeat_n(1500, 2000), &cfg).unwrap()
        };
        let big = He.max_ampdu_bytes();
        let check = |e: &Exchange, mpdus: usize, ppdu_us: f64| {
            assert_eq!(e.ampdu.mpdus, mpdus);
            assert!((us(e.ampdu.ppdu) - ppdu_us).abs() < 1e-6, "{} us", us(e.ampdu.ppdu));
        };

        // HE20 1 SS MCS 0, one MPDU: ⌈(16 + 8 × 1542) / 117⌉ = 106 symbols, 1484.8 us
        // (≈1486 with a 44 us preamble). A single MPDU is acknowledged by an Ack (28 us),
        // not a BlockAck: 43 + 67.5 + 1484.8 + 16 + 28 = 1639.3 us (1644 with a 32-byte
        // BlockAck and 8 us LTFs).
        let m = mode(He, 20, 1, 0, Ns800);
        let e = plan(m, 1542, 64);
        check(&e, 1, 1484.8);
        assert_eq!(e.response, Response::Ack);
        assert_eq!(us(e.airtime()), 1639.3);
        // The standard's rate for that Ack is 6 Mb/s (MCS 0's non-HT reference rate), 44 us.
        let faithful = plan_exchange(&m, [1500], &ExchangeConfig::new(&m)).unwrap();
        assert_eq!(us(faithful.response_duration), 44.0);
        assert_eq!(us(faithful.airtime()), 1655.3);

        // HE20 1 SS MCS 0 within aPPDUMaxTime: 3 MPDUs (4630 bytes), 317 symbols, 4354.4 us.
        let e = plan(m, big, 64);
        check(&e, 3, 4354.4);
        assert_eq!(e.response, Response::BlockAck { bytes: 32 });
        assert_eq!(us(e.airtime()), 43.0 + 67.5 + 4354.4 + 16.0 + 32.0);
        // HE20 1 SS MCS 7 within aPPDUMaxTime: 37 MPDUs, 391 symbols, 5360.8 us (38 would
        // take 5510.4 us).
        let m = mode(He, 20, 1, 7, Ns800);
        check(&plan(m, big, 64), 37, 5360.8);
        assert_eq!(m.ppdu_duration(1544 * 37 + 1542), Dur::from_nanos(5_510_400));
        // HE80 1 SS MCS 7, 65 535-byte A-MPDUs: 42 MPDUs (64 846 bytes), 106 symbols,
        // 1484.8 us.
        let e = plan(mode(He, 80, 1, 7, Ns800), 65_535, 64);
        check(&e, 42, 1484.8);
        assert_eq!(e.ampdu.bytes, 64_846);
        // HE80 2 SS MCS 9, window 256: 256 MPDUs (395 262 bytes), ⌈3162112 / 13066⌉ = 243
        // symbols, 3355.2 us (3356.8 with a 52 us preamble); the BlockAck has a 256-bit
        // bitmap.
        let e = plan(mode(He, 80, 2, 9, Ns800), big, 256);
        check(&e, 256, 3355.2);
        assert_eq!(e.response, Response::BlockAck { bytes: 56 });
        // HE80 2 SS MCS 11, window 256: 194 symbols, 2688.8 us (2690.4 with 52 us).
        check(&plan(mode(He, 80, 2, 11, Ns800), big, 256), 256, 2688.8);
    }

    #[test]
    fn txop_limit_bounds_the_ampdu() {
        // Video's 3.008 ms TXOP at HE20 MCS 7: the PPDU gets 3008 - 16 - 32 = 2960 us; 20
        // MPDUs take 2926.4 us, 21 would take 3062.4.
        let m = mode(He, 20, 1, 7, Ns800);
        let mut cfg = ExchangeConfig::new(&m);
        cfg.limits.ba_window = 64;
        cfg.txop_limit = txop_limit(94);
        let e = plan_exchange(&m, [1500; 100], &cfg).unwrap();
        assert_eq!(e.ampdu.mpdus, 20);
        assert_eq!(us(e.ampdu.ppdu), 2926.4);
        assert!(e.txop() <= Dur::from_micros(3008));
        // With RTS/CTS at 24 Mb/s (28 + 16 + 28 + 16 = 88 us) fewer fit.
        cfg.rts_cts = true;
        let e = plan_exchange(&m, [1500; 100], &cfg).unwrap();
        assert_eq!(us(e.protection), 88.0);
        assert_eq!(e.ampdu.mpdus, 19);
        assert!(e.txop() <= Dur::from_micros(3008));
        // A TXOP too short for even one MPDU (300 - 88 - 16 - 28 = 168 us < 192.8 us), and
        // one too short for protection, SIFS and Ack.
        cfg.txop_limit = Some(Dur::from_micros(300));
        assert_eq!(plan_exchange(&m, [1500], &cfg).unwrap_err().parameter, "txop_limit");
        cfg.txop_limit = Some(Dur::from_micros(100));
        assert_eq!(plan_exchange(&m, [1500], &cfg).unwrap_err().parameter, "txop_limit");
    }

    #[test]
    fn exchange_variants() {
        let m = mode(Eht, 80, 2, 13, Ns800).with_ltf(LtfSize::X4).unwrap();
        let mut cfg = ExchangeConfig::new(&m);
        assert_eq!(cfg.response_rate, NonHtRate::Mbps24);
        assert_eq!(cfg.limits.ba_window, 1024);
        // EHT's 1024-MPDU window: a 152-byte BlockAck (72 us at 24 Mb/s).
        let e = plan_exchange(&m, [1500; 2000], &cfg).unwrap();
        assert_eq!(e.response, Response::BlockAck { bytes: 152 });
        assert_eq!(us(e.response_duration), 72.0);
        assert!(e.ampdu.ppdu <= A_PPDU_MAX_TIME && e.ampdu.mpdus > 256);
        // Without a Block Ack agreement: one MPDU, Ack.
        cfg.ba_agreement = false;
        let e = plan_exchange(&m, [1500; 10], &cfg).unwrap();
        assert_eq!((e.ampdu.mpdus, e.response), (1, Response::Ack));
        // VHT: a 64-MPDU window.
        let v = mode(Vht, 80, 2, 9, Ns400);
        let e = plan_exchange(&v, [1500; 100], &ExchangeConfig::new(&v)).unwrap();
        assert_eq!((e.ampdu.mpdus, e.response), (64, Response::BlockAck { bytes: 32 }));
    }

    #[test]
    fn invalid_exchanges_are_named() {
        let m = mode(He, 20, 1, 0, Ns800);
        let cfg = ExchangeConfig::new(&m);
        let err = |cfg: &ExchangeConfig, packets: &[u32]| plan_exchange(&m, packets.iter().copied(), cfg).unwrap_err();
        assert_eq!(err(&cfg, &[]).parameter, "packets");
        let e = err(&cfg, &[3000]);
        assert_eq!(e.parameter, "packets");
        assert!(e.to_string().contains("packet 0"), "{e}");
        assert_eq!(err(&ExchangeConfig { aifsn: 0, ..cfg }, &[1500]).parameter, "aifsn");
        assert_eq!(err(&ExchangeConfig { aifsn: 16, ..cfg }, &[1500]).parameter, "aifsn");
        let limits = |l: AmpduLimits| ExchangeConfig { limits: l, ..cfg };
        for (l, name) in [
            (
                AmpduLimits {
                    ba_window: 0,
                    ..cfg.limits
                },
                "ba_window",
            ),
            (
                AmpduLimits {
                    ba_window: 257,
                    ..cfg.limits
                },
                "ba_window",
            ),
            (
                AmpduLimits {
                    max_bytes: 0,
                    ..cfg.limits
                },
                "max_bytes",
            ),
            (
                AmpduLimits {
                    max_bytes: 1000,
                    ..cfg.limits
                },
                "max_bytes",
            ),
            (
                AmpduLimits {
                    max_time: Dur::ZERO,
                    ..cfg.limits
                },
                "max_time",
            ),
            (
                AmpduLimits {
                    max_time: Dur::from_micros(500),
                    ..cfg.limits
                },
                "max_time",
            ),
        ] {
            assert_eq!(err(&limits(l), &[1500]).parameter, name);
        }
        let v = mode(Vht, 20, 1, 0, Ns800);
        let e = fit_ampdu(&v, [1500], &AmpduLimits::new(He)).unwrap_err();
        assert_eq!(e.parameter, "ba_window");
        assert!(e.to_string().contains("1 to 64 MPDUs for VHT"), "{e}");
    }
}
