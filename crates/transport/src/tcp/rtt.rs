//! [`RttEstimator`]: smoothed RTT, RTT variation, minimum RTT and the retransmission
//! timeout of RFC 6298 §2, in integer nanoseconds. The sender applies the backoff
//! (RFC 6298 §5.5).

use l4s_core::Dur;

/// RFC 6298 §2 retransmission timeout estimator with integer nanoseconds.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Dur>,
    rttvar: Dur,
    min_rtt: Option<Dur>,
    latest: Option<Dur>,
    initial_rto: Dur,
    min_rto: Dur,
    max_rto: Dur,
    granularity: Dur,
}

impl RttEstimator {
    pub fn new(initial_rto: Dur, min_rto: Dur, max_rto: Dur, granularity: Dur) -> RttEstimator {
        RttEstimator {
            srtt: None,
            rttvar: Dur::ZERO,
            min_rtt: None,
            latest: None,
            initial_rto,
            min_rto,
            max_rto: max_rto.max(min_rto),
            granularity,
        }
    }
    /// RFC 6298 §2.2 (first sample: SRTT = R, RTTVAR = R/2) and §2.3
    /// (RTTVAR ← 3/4·RTTVAR + 1/4·|SRTT − R|, then SRTT ← 7/8·SRTT + 1/8·R).
    pub fn on_sample(&mut self, r: Dur) {
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let diff = if s > r { s - r } else { r - s };
                self.rttvar = Dur((3 * self.rttvar.0 as u128 + diff.0 as u128).div_ceil(4) as u64);
                self.srtt = Some(Dur((7 * s.0 as u128 + r.0 as u128).div_ceil(8) as u64));
            }
        }
    }
    /// RTO = SRTT + max(G, 4·RTTVAR), clamped to [min_rto, max_rto]; the initial RTO before
    /// any sample (RFC 6298 §2.1, §2.4, §2.5). Backoff is applied by the caller.
    pub fn rto(&self) -> Dur {
        match self.srtt {
            None => self.initial_rto,
            Some(s) => (s + self.granularity.max(self.rttvar * 4))
                .max(self.min_rto)
                .min(self.max_rto),
        }
    }
    pub fn srtt(&self) -> Option<Dur> {
        self.srtt
    }
    pub fn rttvar(&self) -> Dur {
        self.rttvar
    }
    pub fn min_rtt(&self) -> Option<Dur> {
        self.min_rtt
    }
    pub fn latest(&self) -> Option<Dur> {
        self.latest
    }
}
