//! The header the two endpoints exchange: [`TcpFlags`] (RFC 9293 §3.1, with RFC 9768's AE
//! bit and ACE field), [`SackBlock`] (RFC 2018 §3) and [`TcpSegment`], whose RFC 7323
//! timestamps are nanoseconds of the sender's clock plus one; and the frame sizes of data
//! segments, pure ACKs and SYNs.

use l4s_core::Time;

use super::accecn::AccEcnOption;

/// Ethernet + IP + TCP header (with timestamps) bytes of a data frame: 14 + 20 + 32.
pub const DATA_OVERHEAD: u32 = 14 + 20 + 32;
/// A pure ACK without SACK or AccECN options.
pub const ACK_SIZE: u32 = DATA_OVERHEAD;
/// A SYN or SYN-ACK (MSS, SACK-permitted, timestamps, window scale: 40 option bytes).
pub const SYN_SIZE: u32 = 14 + 20 + 40;

/// TCP header flags (RFC 9293 §3.1; AE is RFC 9768's former NS bit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TcpFlags(pub u16);

impl TcpFlags {
    pub const NONE: TcpFlags = TcpFlags(0);
    pub const FIN: TcpFlags = TcpFlags(0x001);
    pub const SYN: TcpFlags = TcpFlags(0x002);
    pub const ACK: TcpFlags = TcpFlags(0x010);
    /// ECN-Echo (RFC 3168 §6.1); the least significant bit of the AccECN ACE field.
    pub const ECE: TcpFlags = TcpFlags(0x040);
    /// Congestion Window Reduced (RFC 3168 §6.1); the middle bit of ACE.
    pub const CWR: TcpFlags = TcpFlags(0x080);
    /// Accurate ECN (RFC 9768 §3, bit 7 of byte 13); the most significant bit of ACE.
    pub const AE: TcpFlags = TcpFlags(0x100);

    pub fn contains(self, f: TcpFlags) -> bool {
        self.0 & f.0 == f.0
    }
    pub fn set(&mut self, f: TcpFlags, on: bool) {
        if on {
            self.0 |= f.0
        } else {
            self.0 &= !f.0
        }
    }
    /// The 3-bit ACE field (AE, CWR, ECE) of RFC 9768 §3.2.2.
    pub fn ace(self) -> u8 {
        (self.contains(Self::AE) as u8) << 2 | (self.contains(Self::CWR) as u8) << 1 | self.contains(Self::ECE) as u8
    }
    /// These flags with the ACE field replaced by the 3 LSBs of `ace`.
    pub fn with_ace(mut self, ace: u8) -> TcpFlags {
        self.set(Self::AE, ace & 4 != 0);
        self.set(Self::CWR, ace & 2 != 0);
        self.set(Self::ECE, ace & 1 != 0);
        self
    }
}

impl std::ops::BitOr for TcpFlags {
    type Output = TcpFlags;
    fn bitor(self, o: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | o.0)
    }
}

/// One SACK block `[start, end)` (RFC 2018 §3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// The TCP header the two endpoints exchange. `Copy`, no heap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpSegment {
    /// First sequence number of the segment (the SYN's own number for a SYN).
    pub seq: u64,
    /// Payload length in bytes.
    pub len: u32,
    /// Cumulative acknowledgement: next byte expected (valid when `ACK` is set).
    pub ack: u64,
    pub flags: TcpFlags,
    /// Number of valid entries in `sack`.
    pub sack_count: u8,
    /// SACK blocks, most recent first (RFC 2018 §4).
    pub sack: [SackBlock; 3],
    /// AccECN option, if present.
    pub accecn: Option<AccEcnOption>,
    /// RFC 7323 TSval: sender clock in ns + 1 (0 = absent).
    pub ts_val: u64,
    /// RFC 7323 TSecr: echoed TSval (0 = none).
    pub ts_ecr: u64,
    /// Receive window in bytes.
    pub wnd: u32,
}

impl TcpSegment {
    /// Valid SACK blocks.
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..(self.sack_count as usize).min(3)]
    }
}

pub(super) fn ts_encode(now: Time) -> u64 {
    now.0.saturating_add(1)
}
pub(super) fn ts_decode(v: u64) -> Option<Time> {
    v.checked_sub(1).map(Time)
}
