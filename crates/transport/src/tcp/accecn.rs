//! Accurate ECN (RFC 9768 §3) pieces that sender and receiver share: the counters' initial
//! values (§3.2.1), the AccECN option's 24-bit fields, its two field orders and its wire
//! encoding (§3.2.3), the handshake encoding of the ACE field (§3.1.2, §3.2.2.1), and the
//! ACE arithmetic that turns feedback into a CE packet count (§3.2.2.2, §3.2.2.5.2,
//! Appendix A.2). The sender's checks of this feedback (ECN validation) are part of the
//! sender.

use l4s_core::Ecn;

/// Bytes the AccECN option adds to a segment (length 11, padded to 12).
pub const ACCECN_OPTION_BYTES: u32 = 12;
/// Mask of the 24-bit AccECN option fields (RFC 9768 §3.2.3).
pub const ACCECN_FIELD_MASK: u32 = 0x00FF_FFFF;

/// Initial value of the AccECN CE packet counter `r.cep` / `s.cep` (RFC 9768 §3.2.1).
pub const ACCECN_CEP_INIT: u32 = 5;
/// Initial value of the AccECN ECT(0)/ECT(1) byte counters (RFC 9768 §3.2.1).
pub const ACCECN_EB_INIT: u32 = 1;

/// The AccECN option's three 24-bit byte counters (RFC 9768 §3.2.3). Order on the wire
/// depends on the option kind; here they are named.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AccEcnOption {
    /// Payload bytes received ECT(0), mod 2^24.
    pub e0b: u32,
    /// Payload bytes received CE, mod 2^24.
    pub ceb: u32,
    /// Payload bytes received ECT(1), mod 2^24.
    pub e1b: u32,
}

/// Field order of the AccECN option (RFC 9768 §3.2.3): kind 172 (AccECN0) carries
/// EE0B, ECEB, EE1B; kind 174 (AccECN1) carries EE1B, ECEB, EE0B.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccEcnOrder {
    /// Kind 172.
    Order0,
    /// Kind 174.
    Order1,
}

impl AccEcnOrder {
    pub fn kind(self) -> u8 {
        match self {
            AccEcnOrder::Order0 => 172,
            AccEcnOrder::Order1 => 174,
        }
    }
}

/// A decoded AccECN option: fields absent from a truncated option are `None` ("unchanged").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccEcnOptionFields {
    pub e0b: Option<u32>,
    pub ceb: Option<u32>,
    pub e1b: Option<u32>,
}

impl AccEcnOption {
    /// Wire encoding (RFC 9768 §3.2.3) with the first `fields` (0..=3) counters, 24-bit
    /// big-endian each: length 2, 5, 8 or 11. Returns the buffer and the length used.
    pub fn encode(&self, order: AccEcnOrder, fields: usize) -> ([u8; 11], usize) {
        let n = fields.min(3);
        let vals = match order {
            AccEcnOrder::Order0 => [self.e0b, self.ceb, self.e1b],
            AccEcnOrder::Order1 => [self.e1b, self.ceb, self.e0b],
        };
        let mut b = [0u8; 11];
        let len = 2 + 3 * n;
        b[0] = order.kind();
        b[1] = len as u8;
        for (k, v) in vals.iter().take(n).enumerate() {
            b[2 + 3 * k] = (v >> 16) as u8;
            b[3 + 3 * k] = (v >> 8) as u8;
            b[4 + 3 * k] = *v as u8;
        }
        (b, len)
    }

    /// Parse an option starting at its kind byte; `None` if the kind or length is invalid.
    pub fn decode(b: &[u8]) -> Option<AccEcnOptionFields> {
        let (&kind, &len) = (b.first()?, b.get(1)?);
        let order = match kind {
            172 => AccEcnOrder::Order0,
            174 => AccEcnOrder::Order1,
            _ => return None,
        };
        let len = len as usize;
        if !matches!(len, 2 | 5 | 8 | 11) || b.len() < len {
            return None;
        }
        let mut vals = [None; 3];
        for (k, v) in vals.iter_mut().enumerate().take((len - 2) / 3) {
            let o = 2 + 3 * k;
            *v = Some((b[o] as u32) << 16 | (b[o + 1] as u32) << 8 | b[o + 2] as u32);
        }
        Some(match order {
            AccEcnOrder::Order0 => AccEcnOptionFields {
                e0b: vals[0],
                ceb: vals[1],
                e1b: vals[2],
            },
            AccEcnOrder::Order1 => AccEcnOptionFields {
                e1b: vals[0],
                ceb: vals[1],
                e0b: vals[2],
            },
        })
    }
}

/// ACE value a SYN-ACK carries to feed back the IP-ECN field of the SYN it answers
/// (RFC 9768 §3.1.2, Table 2): Not-ECT 010, ECT(1) 011, ECT(0) 100, CE 110. The client's
/// ACK of the SYN-ACK uses the same encoding for the SYN-ACK's ECN field (§3.2.2.1, Table 3).
pub fn handshake_ace(ecn: Ecn) -> u8 {
    match ecn {
        Ecn::NotEct => 0b010,
        Ecn::Ect1 => 0b011,
        Ecn::Ect0 => 0b100,
        Ecn::Ce => 0b110,
    }
}

/// Inverse of [`handshake_ace`]; `None` for values that do not encode an IP-ECN field.
pub fn handshake_ace_decode(ace: u8) -> Option<Ecn> {
    match ace & 7 {
        0b010 => Some(Ecn::NotEct),
        0b011 => Some(Ecn::Ect1),
        0b100 => Some(Ecn::Ect0),
        0b110 => Some(Ecn::Ce),
        _ => None,
    }
}

/// `Δ = (ACE − s.cep) mod 8` (RFC 9768 §3.2.2.2).
pub fn ace_delta(ace: u8, s_cep: u32) -> u32 {
    (ace as u32).wrapping_sub(s_cep) & 7
}

/// The safest CE count consistent with an ACE delta `delta` when the ACK may cover `d`
/// newly delivered packets and no AccECN option disambiguates: for `d ≥ 8`,
/// `Δ_safe = d − ((d − Δ) mod 8)`; otherwise `Δ` (RFC 9768 §3.2.2.5.2, Appendix A.2.1).
pub fn safe_ace_delta(delta: u32, d: u64) -> u64 {
    let delta = (delta & 7) as u64;
    if d >= 8 {
        d - ((d - delta) % 8)
    } else {
        delta
    }
}

/// CE packets implied by an ACE delta and, when the option is present, the CE byte
/// delta: the count `Δ + 8k` closest to `ce_bytes / mss` from above `Δ`.
pub fn ce_pkts_from_option(delta: u32, ce_bytes: u64, mss: u32) -> u64 {
    let delta = (delta & 7) as u64;
    let est = ce_bytes.div_ceil(mss.max(1) as u64);
    if est > delta {
        delta + 8 * ((est - delta + 4) / 8)
    } else {
        delta
    }
}
