//! RFC 8888 congestion control feedback (CCFB): an RTCP transport-layer feedback packet
//! (RTPFB, PT = 205, FMT = 11) reporting, per RTP sequence number, whether the packet
//! arrived, its ECN codepoint and its arrival time offset (RFC 8888 §3.1).
//!
//! ```text
//!  0                   1                   2                   3
//! |V=2|P| FMT=11  |   PT = 205    |          length               |
//! |                 SSRC of RTCP packet sender                    |
//! |                   SSRC of 1st RTP Stream                      |
//! |          begin_seq            |          num_reports          |
//! |R|ECN|  Arrival time offset    | ...                           |
//! ...  (padded to 32 bits)
//! |                        Report Timestamp                       |
//! ```
//!
//! * `length` is the packet length in 32-bit words minus one (RFC 3550 §6.4.1).
//! * ATO: 13 bits, arrival time *before* the report timestamp in 1/1024 s;
//!   [`ATO_OVER_RANGE`] (0x1FFE) for more than 8189/1024 s, [`ATO_UNAVAILABLE`] (0x1FFF)
//!   when unknown or after the report timestamp. With R = 0 the ECN and ATO bits are 0.
//! * `num_reports`: the RFC's text makes the block cover begin_seq..=begin_seq+num_reports,
//!   errata 8166 says the count; both conventions are supported ([`CountConvention`]).
//!   Sequence numbers wrap at 65 535.
//! * Report Timestamp: the middle 32 bits of an NTP timestamp (Q16 seconds, RFC 3550 §4).
//!
//! [`decode`] checks every length and field and returns an error, never panics, on any
//! byte string.

use crate::config::CountConvention;
use l4s_core::{Dur, Ecn};
use std::fmt;

/// RTCP packet type RTPFB (RFC 4585).
pub const PT_RTPFB: u8 = 205;
/// Feedback message type of CCFB (RFC 8888 §3.1).
pub const FMT_CCFB: u8 = 11;
/// ATO value meaning "more than 8189/1024 s before the report timestamp".
pub const ATO_OVER_RANGE: u16 = 0x1FFE;
/// ATO value meaning "unavailable" (or after the report timestamp).
pub const ATO_UNAVAILABLE: u16 = 0x1FFF;
/// Most metric blocks per SSRC (RFC 8888 §3.1: at most 16 384 reports).
pub const MAX_REPORTS: usize = 16_384;

/// One per-packet metric block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metric {
    /// R bit: the packet arrived.
    pub received: bool,
    /// Its ECN codepoint (Not-ECT when not received).
    pub ecn: Ecn,
    /// Arrival time offset in 1/1024 s (13 bits; 0 when not received).
    pub ato: u16,
}

impl Metric {
    /// A not-received entry.
    pub const LOST: Metric = Metric {
        received: false,
        ecn: Ecn::NotEct,
        ato: 0,
    };

    /// The arrival offset, `None` for the sentinels.
    pub fn offset(&self) -> Option<Dur> {
        if !self.received || self.ato >= ATO_OVER_RANGE {
            None
        } else {
            Some(ato_to_dur(self.ato))
        }
    }

    fn to_u16(self) -> u16 {
        if !self.received {
            return 0;
        }
        0x8000 | (u16::from(self.ecn.bits()) << 13) | (self.ato & 0x1FFF)
    }

    fn from_u16(v: u16) -> Metric {
        Metric {
            received: v & 0x8000 != 0,
            ecn: Ecn::from_bits(((v >> 13) & 3) as u8),
            ato: v & 0x1FFF,
        }
    }
}

/// Encode an arrival offset in 1/1024 s, rounded to nearest, with the over-range sentinel.
pub fn dur_to_ato(d: Dur) -> u16 {
    let units = (u128::from(d.as_nanos()) * 1024 + 500_000_000) / 1_000_000_000;
    if units > 0x1FFD {
        ATO_OVER_RANGE
    } else {
        units as u16
    }
}

/// Decode a (non-sentinel) ATO value.
pub fn ato_to_dur(ato: u16) -> Dur {
    Dur::from_nanos(u64::from(ato) * 1_000_000_000 / 1024)
}

/// Metrics of one RTP stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SsrcBlock {
    pub ssrc: u32,
    /// RTP sequence number of the first metric.
    pub begin_seq: u16,
    /// One metric per sequence number from `begin_seq` (wrapping).
    pub metrics: Vec<Metric>,
}

/// A whole CCFB packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CcfbReport {
    pub sender_ssrc: u32,
    pub blocks: Vec<SsrcBlock>,
    /// Middle 32 bits of NTP time when the report was made (Q16 seconds).
    pub report_timestamp: u32,
}

/// Why a byte string is not a valid CCFB packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Shorter than a header plus the report timestamp (12 bytes).
    TooShort(usize),
    /// RTP/RTCP version not 2.
    BadVersion(u8),
    /// Not PT 205 / FMT 11.
    NotCcfb { pt: u8, fmt: u8 },
    /// The `length` field does not match the bytes (`declared` bytes vs `actual`).
    BadLength { declared: usize, actual: usize },
    /// The padding count is 0 or exceeds the packet.
    BadPadding(u8),
    /// An SSRC block runs past the report timestamp.
    TruncatedBlock { at: usize },
    /// `num_reports` above 16 384.
    TooManyReports(usize),
    /// Count−1 convention with a block whose field cannot be decoded.
    BadCount,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::TooShort(n) => write!(f, "CCFB packet of {n} bytes is shorter than 12"),
            DecodeError::BadVersion(v) => write!(f, "RTCP version {v}, expected 2"),
            DecodeError::NotCcfb { pt, fmt } => write!(f, "PT {pt} FMT {fmt}, expected PT 205 FMT 11"),
            DecodeError::BadLength { declared, actual } => {
                write!(f, "length field says {declared} bytes, packet has {actual}")
            }
            DecodeError::BadPadding(p) => write!(f, "invalid padding count {p}"),
            DecodeError::TruncatedBlock { at } => write!(f, "SSRC block at byte {at} is truncated"),
            DecodeError::TooManyReports(n) => write!(f, "{n} reports in one block, at most 16384"),
            DecodeError::BadCount => write!(f, "invalid num_reports"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Bytes of the encoded packet.
pub fn encoded_len(r: &CcfbReport) -> usize {
    8 + r
        .blocks
        .iter()
        .filter(|b| !b.metrics.is_empty())
        .map(|b| 8 + b.metrics.len().div_ceil(2) * 4)
        .sum::<usize>()
        + 4
}

/// Append the encoding of `r` to `out`. Blocks with no metrics are left out (the
/// count−1 convention cannot express them); metrics beyond [`MAX_REPORTS`] per block are
/// truncated.
pub fn encode(r: &CcfbReport, conv: CountConvention, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0x80 | FMT_CCFB, PT_RTPFB, 0, 0]);
    out.extend_from_slice(&r.sender_ssrc.to_be_bytes());
    for b in &r.blocks {
        let n = b.metrics.len().min(MAX_REPORTS);
        if n == 0 {
            continue;
        }
        out.extend_from_slice(&b.ssrc.to_be_bytes());
        out.extend_from_slice(&b.begin_seq.to_be_bytes());
        let field = match conv {
            CountConvention::Count => n,
            CountConvention::CountMinusOne => n - 1,
        } as u16;
        out.extend_from_slice(&field.to_be_bytes());
        for m in &b.metrics[..n] {
            out.extend_from_slice(&m.to_u16().to_be_bytes());
        }
        if n % 2 == 1 {
            out.extend_from_slice(&[0, 0]);
        }
    }
    out.extend_from_slice(&r.report_timestamp.to_be_bytes());
    let words = ((out.len() - start) / 4 - 1) as u16;
    out[start + 2..start + 4].copy_from_slice(&words.to_be_bytes());
}

/// Encode into a new vector.
pub fn encode_vec(r: &CcfbReport, conv: CountConvention) -> Vec<u8> {
    let mut v = Vec::with_capacity(encoded_len(r));
    encode(r, conv, &mut v);
    v
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Decode one CCFB packet. Never panics.
pub fn decode(b: &[u8], conv: CountConvention) -> Result<CcfbReport, DecodeError> {
    if b.len() < 12 {
        return Err(DecodeError::TooShort(b.len()));
    }
    let v = b[0] >> 6;
    if v != 2 {
        return Err(DecodeError::BadVersion(v));
    }
    let fmt = b[0] & 0x1F;
    let pt = b[1];
    if pt != PT_RTPFB || fmt != FMT_CCFB {
        return Err(DecodeError::NotCcfb { pt, fmt });
    }
    let declared = (usize::from(be16(b, 2)) + 1) * 4;
    if declared != b.len() {
        return Err(DecodeError::BadLength {
            declared,
            actual: b.len(),
        });
    }
    let mut end = b.len();
    if b[0] & 0x20 != 0 {
        let p = b[end - 1];
        if p == 0 || usize::from(p) > end - 12 || !p.is_multiple_of(4) {
            return Err(DecodeError::BadPadding(p));
        }
        end -= usize::from(p);
    }
    let sender_ssrc = be32(b, 4);
    let ts_at = end - 4;
    let report_timestamp = be32(b, ts_at);
    let mut blocks = Vec::new();
    let mut at = 8;
    while at < ts_at {
        if at + 8 > ts_at {
            return Err(DecodeError::TruncatedBlock { at });
        }
        let ssrc = be32(b, at);
        let begin_seq = be16(b, at + 4);
        let field = usize::from(be16(b, at + 6));
        let n = match conv {
            CountConvention::Count => field,
            CountConvention::CountMinusOne => field + 1,
        };
        if n > MAX_REPORTS {
            return Err(DecodeError::TooManyReports(n));
        }
        let body = n.div_ceil(2) * 4;
        if at + 8 + body > ts_at {
            return Err(DecodeError::TruncatedBlock { at });
        }
        let metrics = (0..n).map(|i| Metric::from_u16(be16(b, at + 8 + 2 * i))).collect();
        blocks.push(SsrcBlock {
            ssrc,
            begin_seq,
            metrics,
        });
        at += 8 + body;
    }
    Ok(CcfbReport {
        sender_ssrc,
        blocks,
        report_timestamp,
    })
}

/// The middle 32 bits of an NTP-format timestamp for `t` nanoseconds of a local clock
/// (Q16 seconds; wraps every 65 536 s).
pub fn ntp_mid32(t_ns: u64) -> u32 {
    let secs = t_ns / 1_000_000_000;
    let frac = ((t_ns % 1_000_000_000) << 16) / 1_000_000_000;
    ((secs << 16) | frac) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(received: bool, ecn: Ecn, ato: u16) -> Metric {
        if received {
            Metric { received, ecn, ato }
        } else {
            Metric::LOST
        }
    }

    fn sample(n: usize, begin: u16) -> CcfbReport {
        let metrics = (0..n)
            .map(|i| match i % 5 {
                0 => m(true, Ecn::Ect1, (i * 7) as u16 & 0x1FFF),
                1 => m(true, Ecn::Ce, ATO_OVER_RANGE),
                2 => m(false, Ecn::NotEct, 0),
                3 => m(true, Ecn::Ect0, ATO_UNAVAILABLE),
                _ => m(true, Ecn::NotEct, 0),
            })
            .collect();
        CcfbReport {
            sender_ssrc: 0xDEAD_BEEF,
            blocks: vec![
                SsrcBlock {
                    ssrc: 7,
                    begin_seq: begin,
                    metrics,
                },
                SsrcBlock {
                    ssrc: 9,
                    begin_seq: 1,
                    metrics: vec![m(true, Ecn::Ect1, 3)],
                },
            ],
            report_timestamp: 0x1234_5678,
        }
    }

    #[test]
    fn round_trip_both_conventions_with_sentinels_and_wrap() {
        for conv in [CountConvention::Count, CountConvention::CountMinusOne] {
            for n in [1usize, 2, 3, 32, 33] {
                let r = sample(n, 65_530);
                let bytes = encode_vec(&r, conv);
                assert_eq!(bytes.len(), encoded_len(&r));
                assert_eq!(bytes.len() % 4, 0);
                // Header: V=2, FMT=11, PT=205, length in words − 1.
                assert_eq!(bytes[0], 0x80 | 11);
                assert_eq!(bytes[1], 205);
                assert_eq!((usize::from(be16(&bytes, 2)) + 1) * 4, bytes.len());
                // num_reports as written.
                let field = be16(&bytes, 14);
                match conv {
                    CountConvention::Count => assert_eq!(usize::from(field), n),
                    CountConvention::CountMinusOne => assert_eq!(usize::from(field), n - 1),
                }
                let d = decode(&bytes, conv).unwrap();
                assert_eq!(d, r, "n = {n} {conv:?}");
                // The block starting at 65 530 covers ... 65 535, 0, 1 ...
                let last = d.blocks[0].begin_seq.wrapping_add(n as u16 - 1);
                assert_eq!(last, 65_530u16.wrapping_add(n as u16 - 1));
            }
        }
        // Odd count: 3 metrics = 6 bytes, padded to 8: header 8 + block 8+8 + block 8+4 + ts 4.
        let r = sample(3, 0);
        assert_eq!(encode_vec(&r, CountConvention::Count).len(), 8 + 16 + 12 + 4);
    }

    #[test]
    fn conventions_disagree_by_one() {
        let r = sample(4, 100);
        let bytes = encode_vec(&r, CountConvention::CountMinusOne);
        // Read with the other convention: the block claims one more report than exists,
        // which runs into the next block, so the parse differs or fails; never panics.
        let other = decode(&bytes, CountConvention::Count);
        assert_ne!(other.as_ref().ok(), Some(&r));
    }

    #[test]
    fn ato_encoding() {
        assert_eq!(dur_to_ato(Dur::ZERO), 0);
        assert_eq!(dur_to_ato(Dur::from_millis(1000)), 1024);
        // 1/1024 s = 976 562.5 ns: rounds to nearest.
        assert_eq!(dur_to_ato(Dur::from_nanos(976_562)), 1);
        assert_eq!(dur_to_ato(Dur::from_nanos(488_281)), 0);
        assert_eq!(dur_to_ato(Dur::from_millis(7_997)), 8189);
        assert_eq!(dur_to_ato(Dur::from_secs(8)), ATO_OVER_RANGE);
        assert_eq!(dur_to_ato(Dur::from_secs(9)), ATO_OVER_RANGE);
        assert_eq!(ato_to_dur(1024), Dur::from_secs(1));
        assert_eq!(m(true, Ecn::Ce, ATO_UNAVAILABLE).offset(), None);
        assert_eq!(m(true, Ecn::Ce, ATO_OVER_RANGE).offset(), None);
        assert_eq!(m(true, Ecn::Ce, 2).offset(), Some(Dur::from_nanos(1_953_125)));
        assert_eq!(ntp_mid32(1_500_000_000), (1 << 16) | 0x8000);
    }

    #[test]
    fn rejects_bad_packets() {
        let r = sample(5, 10);
        let good = encode_vec(&r, CountConvention::Count);
        assert!(matches!(
            decode(&good[..11], CountConvention::Count),
            Err(DecodeError::TooShort(11))
        ));
        let mut b = good.clone();
        b[0] = 0x40 | 11;
        assert_eq!(decode(&b, CountConvention::Count), Err(DecodeError::BadVersion(1)));
        let mut b = good.clone();
        b[1] = 206;
        assert!(matches!(
            decode(&b, CountConvention::Count),
            Err(DecodeError::NotCcfb { .. })
        ));
        // Truncated by 4 bytes: the length field no longer matches.
        assert!(matches!(
            decode(&good[..good.len() - 4], CountConvention::Count),
            Err(DecodeError::BadLength { .. })
        ));
        // A block claiming 1000 reports.
        let mut b = good.clone();
        b[14..16].copy_from_slice(&1000u16.to_be_bytes());
        assert!(matches!(
            decode(&b, CountConvention::Count),
            Err(DecodeError::TruncatedBlock { at: 8 })
        ));
    }

    #[test]
    fn random_and_truncated_bytes_never_panic() {
        let mut rng = l4s_core::Rng::new(8888);
        let good = encode_vec(&sample(40, 65_500), CountConvention::Count);
        let mut ok = 0;
        for i in 0..50_000 {
            let bytes: Vec<u8> = match i % 3 {
                0 => {
                    let n = rng.below(200) as usize;
                    (0..n).map(|_| rng.next_u32() as u8).collect()
                }
                1 => good[..rng.below(good.len() as u64 + 1) as usize].to_vec(),
                _ => {
                    // A valid header and length with garbage inside.
                    let mut b = good.clone();
                    for _ in 0..4 {
                        let at = 2 + rng.below(b.len() as u64 - 2) as usize;
                        b[at] = rng.next_u32() as u8;
                    }
                    b
                }
            };
            for conv in [CountConvention::Count, CountConvention::CountMinusOne] {
                if let Ok(r) = decode(&bytes, conv) {
                    ok += 1;
                    assert!(r.blocks.iter().all(|b| b.metrics.len() <= MAX_REPORTS));
                }
            }
        }
        // Some corrupted-but-well-formed packets decode; most garbage does not.
        assert!(ok > 0 && ok < 100_000, "{ok}");
    }
}
