//! A faulty middlebox that rewrites the ECN field of the packets it forwards.
//!
//! RFC 9331 §5 forbids all three rewrites, yet they exist on real paths (old routers that
//! clear the whole TOS byte, policies that remark ECT(1) to ECT(0), AQMs that set CE on
//! everything), and an L4S sender must detect them and fall back (RFC 9331 §4.3, RFC 9000
//! §13.4.2). A link applies its fault to every packet that enters it from `start` on.

use l4s_core::{Dur, Ecn};

/// What a faulty middlebox does to the ECN field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// Clear the ECN field: ECT(0), ECT(1) and CE become Not-ECT.
    Bleach,
    /// Rewrite ECT(1) to ECT(0).
    Remark,
    /// Set CE on every ECN-capable packet.
    MarkAll,
}

impl FaultKind {
    /// The codepoint a packet carrying `ecn` leaves with.
    pub fn apply(self, ecn: Ecn) -> Ecn {
        match (self, ecn) {
            (FaultKind::Bleach, _) => Ecn::NotEct,
            (FaultKind::Remark, Ecn::Ect1) => Ecn::Ect0,
            (FaultKind::MarkAll, e) if e.is_ect() => Ecn::Ce,
            (_, e) => e,
        }
    }

    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Bleach => "bleach",
            FaultKind::Remark => "remark",
            FaultKind::MarkAll => "mark-all",
        }
    }

    /// Parse a scenario-file name.
    pub fn parse(s: &str) -> Option<FaultKind> {
        match s {
            "bleach" => Some(FaultKind::Bleach),
            "remark" => Some(FaultKind::Remark),
            "mark-all" => Some(FaultKind::MarkAll),
            _ => None,
        }
    }
}

/// A fault and when it starts (before it the middlebox is harmless).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    pub kind: FaultKind,
    /// From this time after the start of the run.
    pub start: Dur,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_fault_rewrites_what_rfc_9331_forbids_and_nothing_else() {
        use Ecn::*;
        for (k, input, out) in [
            (FaultKind::Bleach, Ect1, NotEct),
            (FaultKind::Bleach, Ce, NotEct),
            (FaultKind::Bleach, NotEct, NotEct),
            (FaultKind::Remark, Ect1, Ect0),
            (FaultKind::Remark, Ect0, Ect0),
            (FaultKind::Remark, Ce, Ce),
            (FaultKind::MarkAll, Ect0, Ce),
            (FaultKind::MarkAll, Ect1, Ce),
            (FaultKind::MarkAll, NotEct, NotEct),
        ] {
            assert_eq!(k.apply(input), out, "{k:?} on {input:?}");
        }
        for k in [FaultKind::Bleach, FaultKind::Remark, FaultKind::MarkAll] {
            assert_eq!(FaultKind::parse(k.name()), Some(k));
        }
        assert_eq!(FaultKind::parse("bleached"), None);
    }
}
