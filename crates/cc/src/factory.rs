//! Construct a window-based controller by name (scenario files say `cc = "prague"`).

use crate::api::CongestionControl;
use crate::cubic::{Cubic, CubicConfig, Hystart};
use crate::dctcp::{Dctcp, DctcpConfig};
use crate::prague::{Prague, PragueConfig};
use crate::reno::{Reno, RenoConfig};

/// Names accepted by [`build`].
pub const NAMES: &[&str] = &["reno", "cubic", "dctcp", "prague"];

/// Common construction parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CcParams {
    /// Path MSS in bytes (payload).
    pub mss: u32,
    /// Initial window in segments (RFC 6928: 10).
    pub initial_cwnd_pkts: u32,
    /// DCTCP marks ECT(1) instead of ECT(0).
    pub ect1_for_dctcp: bool,
    /// RFC 8511 ABE for Reno (β_ecn 0.8) and CUBIC (0.85).
    pub abe: bool,
    /// Reno/CUBIC request classic ECN (RFC 3168); false = Not-ECT, loss only.
    pub classic_ecn: bool,
    /// CUBIC uses Linux's β = 717/1024.
    pub cubic_linux_beta: bool,
    /// CUBIC: how slow start may end before the first loss.
    pub hystart: Hystart,
    /// Prague: use the v0.6 behaviour (alpha from 1, RTT-independence after 500 rounds).
    pub prague_v06: bool,
    /// Prague: allow the rate-based mode at small windows (v0.7 `cwnd_mode` = 2).
    pub prague_rate_mode: bool,
}

impl Default for CcParams {
    fn default() -> Self {
        CcParams {
            mss: 1448,
            initial_cwnd_pkts: 10,
            ect1_for_dctcp: false,
            abe: false,
            classic_ecn: true,
            cubic_linux_beta: false,
            hystart: Hystart::Off,
            prague_v06: false,
            prague_rate_mode: true,
        }
    }
}

/// Build the controller `name` (case-insensitive). The error lists the valid names.
pub fn build(name: &str, p: &CcParams) -> Result<Box<dyn CongestionControl>, String> {
    let cc: Box<dyn CongestionControl> = match name.to_ascii_lowercase().as_str() {
        "reno" | "newreno" => Box::new(Reno::new(RenoConfig {
            mss: p.mss,
            initial_cwnd_pkts: p.initial_cwnd_pkts,
            abe: p.abe,
            ecn: p.classic_ecn,
        })),
        "cubic" => Box::new(Cubic::new(CubicConfig {
            mss: p.mss,
            initial_cwnd_pkts: p.initial_cwnd_pkts,
            linux_beta: p.cubic_linux_beta,
            fast_convergence: true,
            abe: p.abe,
            ecn: p.classic_ecn,
            hystart: p.hystart,
        })),
        "dctcp" => Box::new(Dctcp::new(DctcpConfig {
            mss: p.mss,
            initial_cwnd_pkts: p.initial_cwnd_pkts,
            ect1: p.ect1_for_dctcp,
            alpha_init: 1.0,
        })),
        "prague" => {
            let mut c = if p.prague_v06 {
                PragueConfig::v06()
            } else {
                PragueConfig::default()
            };
            c.mss = p.mss;
            c.initial_cwnd_pkts = p.initial_cwnd_pkts;
            c.rate_mode = p.prague_rate_mode;
            Box::new(Prague::new(c))
        }
        _ => {
            return Err(format!(
                "unknown congestion control {name:?}; expected one of: {}",
                NAMES.join(", ")
            ))
        }
    };
    Ok(cc)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn builds_every_name_and_rejects_others() {
        for n in NAMES {
            let cc = build(n, &CcParams::default()).unwrap();
            assert_eq!(cc.name(), *n);
            assert_eq!(cc.cwnd(), 10 * 1448);
        }
        let e = build("bbr", &CcParams::default()).unwrap_err();
        assert!(e.contains("reno, cubic, dctcp, prague"), "{e}");
    }
}
