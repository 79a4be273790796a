//! The ECN field (RFC 3168 §5; L4S identifier per RFC 9331 §4).

use serde::{Deserialize, Serialize};
use std::fmt;

/// The two-bit ECN codepoint of an IP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[repr(u8)]
pub enum Ecn {
    /// 0b00: not ECN-capable.
    #[default]
    #[serde(rename = "not-ect")]
    NotEct = 0,
    /// 0b01: ECT(1), the L4S identifier (RFC 9331).
    #[serde(rename = "ect1")]
    Ect1 = 1,
    /// 0b10: ECT(0), classic ECN-capable.
    #[serde(rename = "ect0")]
    Ect0 = 2,
    /// 0b11: Congestion Experienced.
    #[serde(rename = "ce")]
    Ce = 3,
}

impl Ecn {
    /// Decode the low two bits of a TOS / Traffic Class byte.
    pub fn from_bits(bits: u8) -> Ecn {
        match bits & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
    /// The two-bit wire value.
    pub fn bits(self) -> u8 {
        self as u8
    }
    /// ECT(0), ECT(1) or CE.
    pub fn is_ect(self) -> bool {
        self != Ecn::NotEct
    }
    /// ECT(1) or CE: what a node treats as L4S (RFC 9331 §5.1).
    pub fn is_l4s_id(self) -> bool {
        self.bits() & 1 == 1
    }
    /// The name used in scenario files and results.
    pub fn name(self) -> &'static str {
        match self {
            Ecn::NotEct => "not-ect",
            Ecn::Ect1 => "ect1",
            Ecn::Ect0 => "ect0",
            Ecn::Ce => "ce",
        }
    }
    /// Parse a scenario-file name (`not-ect`, `ect0`, `ect1`, `ce`, plus common aliases).
    pub fn parse(s: &str) -> Option<Ecn> {
        match s
            .to_ascii_lowercase()
            .replace(['_', '(', ')'], "-")
            .trim_end_matches('-')
        {
            "not-ect" | "notect" | "none" | "off" => Some(Ecn::NotEct),
            "ect1" | "ect-1" | "l4s" => Some(Ecn::Ect1),
            "ect0" | "ect-0" | "classic" => Some(Ecn::Ect0),
            "ce" => Some(Ecn::Ce),
            _ => None,
        }
    }
}

impl fmt::Display for Ecn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn bits_round_trip() {
        for b in 0..4u8 {
            assert_eq!(Ecn::from_bits(b).bits(), b);
        }
        assert!(Ecn::Ect1.is_l4s_id() && Ecn::Ce.is_l4s_id());
        assert!(!Ecn::Ect0.is_l4s_id() && !Ecn::NotEct.is_l4s_id());
        assert_eq!(Ecn::parse("ECT(1)"), Some(Ecn::Ect1));
        assert_eq!(Ecn::parse("not-ect"), Some(Ecn::NotEct));
        assert_eq!(Ecn::parse("bogus"), None);
    }
}
