//! Reading the ECN field and setting CE in raw IP headers (as Linux `IP_ECN_set_ce` and
//! `IP6_ECN_set_ce` in `include/net/inet_ecn.h`), for the live forwarder. Every function takes a byte slice and never panics: short or malformed input
//! gives an error (or Not-ECT when reading).
//!
//! * IPv4 (RFC 3168 §5, RFC 791): ECN is the low two bits of the TOS byte (offset 1). CE is set
//!   only on an ECN-capable packet (`tos & 3 != 0`); the header checksum (offset 10) is updated
//!   incrementally with RFC 1624 eqn. 3, `HC' = ~(~HC + ~m + m')`, where m/m' are the 16-bit
//!   word at offset 0 before and after. This equals Linux `IP_ECN_set_ce`.
//! * IPv6 (RFC 8200 §7): ECN is bits 4–5 of byte 1; `byte1 |= 0x30`. There is no header
//!   checksum, and transport checksums do not cover the Traffic Class.
//! * A node never re-marks Not-ECT (RFC 3168 §5) and never changes ECT(0)/ECT(1) into anything
//!   but CE (RFC 9331 §5).

use l4s_core::Ecn;

/// Why a buffer could not be rewritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RewriteError {
    /// Shorter than the fixed header (or than the IPv4 IHL says).
    Truncated,
    /// The version nibble is neither 4 nor 6, or the IPv4 IHL is below 5.
    NotIp,
}

impl std::fmt::Display for RewriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RewriteError::Truncated => f.write_str("truncated IP header"),
            RewriteError::NotIp => f.write_str("not an IPv4 or IPv6 header"),
        }
    }
}

impl std::error::Error for RewriteError {}

/// One's-complement 16-bit addition with end-around carry.
#[inline]
pub fn ones_add(a: u16, b: u16) -> u16 {
    let s = a as u32 + b as u32;
    ((s & 0xFFFF) + (s >> 16)) as u16
}

/// RFC 1624 eqn. 3: the new checksum after word `m` became `m_new`.
#[inline]
pub fn checksum_update(hc: u16, m: u16, m_new: u16) -> u16 {
    !ones_add(ones_add(!hc, !m), m_new)
}

/// The one's-complement sum of a buffer's 16-bit big-endian words (an odd last byte is padded).
pub fn ones_sum(data: &[u8]) -> u16 {
    let mut s: u32 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        s += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [b] = chunks.remainder() {
        s += (*b as u32) << 8;
    }
    while s > 0xFFFF {
        s = (s & 0xFFFF) + (s >> 16);
    }
    s as u16
}

/// The IPv4 header checksum computed from scratch (the checksum field is treated as zero).
pub fn ipv4_header_checksum(hdr: &[u8]) -> Result<u16, RewriteError> {
    let ihl = ipv4_header_len(hdr)?;
    let h = &hdr[..ihl];
    let s = ones_add(ones_add(ones_sum(&h[..10]), ones_sum(&h[12..])), 0);
    Ok(!s)
}

fn ipv4_header_len(hdr: &[u8]) -> Result<usize, RewriteError> {
    let first = *hdr.first().ok_or(RewriteError::Truncated)?;
    if first >> 4 != 4 {
        return Err(RewriteError::NotIp);
    }
    let ihl = (first & 0x0F) as usize * 4;
    if ihl < 20 {
        return Err(RewriteError::NotIp);
    }
    if hdr.len() < ihl {
        return Err(RewriteError::Truncated);
    }
    Ok(ihl)
}

/// Set CE in an IPv4 header. `Ok(true)`: the packet now carries CE (it was ECT(0), ECT(1) or
/// already CE, which is left untouched); `Ok(false)`: Not-ECT, nothing changed.
pub fn ipv4_set_ce(hdr: &mut [u8]) -> Result<bool, RewriteError> {
    ipv4_header_len(hdr)?;
    let tos = hdr[1];
    match tos & 3 {
        0 => return Ok(false),
        3 => return Ok(true),
        _ => {}
    }
    let m = u16::from_be_bytes([hdr[0], hdr[1]]);
    let new_tos = tos | 3;
    let m_new = u16::from_be_bytes([hdr[0], new_tos]);
    let hc = u16::from_be_bytes([hdr[10], hdr[11]]);
    let hc_new = checksum_update(hc, m, m_new);
    hdr[1] = new_tos;
    hdr[10..12].copy_from_slice(&hc_new.to_be_bytes());
    Ok(true)
}

/// Set CE in an IPv6 header (`byte1 |= 0x30` when the ECN field is non-zero).
pub fn ipv6_set_ce(hdr: &mut [u8]) -> Result<bool, RewriteError> {
    if hdr.len() < 40 {
        return Err(RewriteError::Truncated);
    }
    if hdr[0] >> 4 != 6 {
        return Err(RewriteError::NotIp);
    }
    if (hdr[1] >> 4) & 3 == 0 {
        return Ok(false);
    }
    hdr[1] |= 0x30;
    Ok(true)
}

/// Set CE in an IP packet of either version (dispatch on the version nibble).
pub fn ip_set_ce(pkt: &mut [u8]) -> Result<bool, RewriteError> {
    match pkt.first().map(|b| b >> 4) {
        None => Err(RewriteError::Truncated),
        Some(4) => ipv4_set_ce(pkt),
        Some(6) => ipv6_set_ce(pkt),
        Some(_) => Err(RewriteError::NotIp),
    }
}

/// Rewrite the ECN field of an IP packet of either version to `ecn`, as a faulty middlebox
/// does (bleaching, remarking; RFC 9331 §5 forbids both, the testbed plays them): the IPv4
/// header checksum is updated incrementally (RFC 1624 eqn. 3). `Ok(true)` if the field
/// changed.
pub fn ip_set_ecn(pkt: &mut [u8], ecn: Ecn) -> Result<bool, RewriteError> {
    match pkt.first().map(|b| b >> 4) {
        None => Err(RewriteError::Truncated),
        Some(4) => {
            ipv4_header_len(pkt)?;
            let new_tos = (pkt[1] & !3) | ecn.bits();
            if new_tos == pkt[1] {
                return Ok(false);
            }
            let m = u16::from_be_bytes([pkt[0], pkt[1]]);
            let m_new = u16::from_be_bytes([pkt[0], new_tos]);
            let hc = u16::from_be_bytes([pkt[10], pkt[11]]);
            pkt[1] = new_tos;
            pkt[10..12].copy_from_slice(&checksum_update(hc, m, m_new).to_be_bytes());
            Ok(true)
        }
        Some(6) => {
            if pkt.len() < 40 {
                return Err(RewriteError::Truncated);
            }
            let new = (pkt[1] & 0xCF) | (ecn.bits() << 4);
            let changed = new != pkt[1];
            pkt[1] = new;
            Ok(changed)
        }
        Some(_) => Err(RewriteError::NotIp),
    }
}

/// The ECN field of an IP packet; Not-ECT for anything that is not a complete IP header
/// (as Linux `dualpi2_read_ect`: such packets go to the C-queue and can only be dropped).
pub fn ip_ecn(pkt: &[u8]) -> Ecn {
    match pkt.first().map(|b| b >> 4) {
        Some(4) if ipv4_header_len(pkt).is_ok() => Ecn::from_bits(pkt[1]),
        Some(6) if pkt.len() >= 40 => Ecn::from_bits(pkt[1] >> 4),
        _ => Ecn::NotEct,
    }
}

/// The DSCP of an IP packet (0 when unparsable).
pub fn ip_dscp(pkt: &[u8]) -> u8 {
    match pkt.first().map(|b| b >> 4) {
        Some(4) if ipv4_header_len(pkt).is_ok() => pkt[1] >> 2,
        Some(6) if pkt.len() >= 40 => ((pkt[0] & 0x0F) << 2) | (pkt[1] >> 6),
        _ => 0,
    }
}

/// Offset of the IP header in an Ethernet frame (EtherType 0x0800 / 0x86DD, one or two
/// 802.1Q/802.1ad tags skipped), or `None`.
pub fn ethernet_ip_offset(frame: &[u8]) -> Option<usize> {
    let mut off = 12;
    for _ in 0..3 {
        let et = u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]);
        match et {
            0x0800 | 0x86DD => return Some(off + 2),
            0x8100 | 0x88A8 => off += 4,
            _ => return None,
        }
    }
    None
}

/// [`ip_set_ce`] on the IP packet inside an Ethernet frame.
pub fn ethernet_set_ce(frame: &mut [u8]) -> Result<bool, RewriteError> {
    let off = ethernet_ip_offset(frame).ok_or(RewriteError::NotIp)?;
    ip_set_ce(frame.get_mut(off..).ok_or(RewriteError::Truncated)?)
}
