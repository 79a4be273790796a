//! The interface between a reliable-transport sender and its congestion controller,
//! in the spirit of Linux `tcp_congestion_ops`: small hooks, the controller owns the
//! window (cwnd, ssthresh) and the pacing rate, the transport owns sequence numbers,
//! loss detection, the CWR/Recovery states and timers.

use l4s_core::{Dur, Ecn, Rate, Time};

/// ECN feedback negotiated (or requested) for a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EcnMode {
    /// No ECN: data is sent Not-ECT; only loss signals congestion.
    Off,
    /// RFC 3168: data sent ECT(0); the receiver echoes ECE until CWR; the sender reacts at
    /// most once per round trip.
    Classic,
    /// Accurate ECN (RFC 9768): the receiver feeds back CE packet and byte counts; the
    /// sender marks its data with `ect` (ECT(1) for L4S, ECT(0) for data-centre DCTCP).
    Accurate { ect: Ecn },
}

impl EcnMode {
    /// What a classic controller (Reno, CUBIC) asks for: RFC 3168 ECN when enabled.
    pub fn classic_if(enabled: bool) -> EcnMode {
        if enabled {
            EcnMode::Classic
        } else {
            EcnMode::Off
        }
    }
    /// The codepoint data carries under this mode: Not-ECT without ECN, ECT(0) under
    /// RFC 3168 (§5), the negotiated ECT under AccECN.
    pub fn data_codepoint(self) -> Ecn {
        match self {
            EcnMode::Off => Ecn::NotEct,
            EcnMode::Classic => Ecn::Ect0,
            EcnMode::Accurate { ect } => ect,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            EcnMode::Off => "none",
            EcnMode::Classic => "classic",
            EcnMode::Accurate { .. } => "accecn",
        }
    }
}

/// What the transport learnt from one incoming ACK, after it updated its own state.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckSample {
    pub now: Time,
    /// Bytes newly acknowledged (cumulatively or by SACK) by this ACK.
    pub acked_bytes: u64,
    /// Packets newly acknowledged by this ACK.
    pub acked_pkts: u64,
    /// Packets newly reported CE by this ACK (AccECN ACE/counter delta; 0 under RFC 3168).
    pub ce_pkts: u64,
    /// Payload bytes newly reported CE (AccECN byte counters when present, else an estimate).
    pub ce_bytes: u64,
    /// RFC 3168: this ACK carries ECE.
    pub ece: bool,
    /// RTT measured from this ACK, if any (Karn: never from a retransmitted segment).
    pub rtt: Option<Dur>,
    /// Smoothed RTT (RFC 6298) after this sample.
    pub srtt: Dur,
    /// Minimum RTT seen on the connection.
    pub min_rtt: Dur,
    /// Oldest unacknowledged byte after processing.
    pub snd_una: u64,
    /// Next byte to be sent.
    pub snd_nxt: u64,
    /// Bytes in flight after processing (sent, not acknowledged, not marked lost).
    pub bytes_in_flight: u64,
    /// Cumulative packets delivered (acknowledged) on the connection.
    pub delivered_pkts: u64,
    /// Cumulative packets delivered that were CE-marked (AccECN), or whose ACK carried ECE.
    pub delivered_ce_pkts: u64,
    /// Sender maximum segment size (payload bytes) currently in use.
    pub mss: u32,
    /// True if the sender was limited by the congestion window (not by the application)
    /// when it last sent (Linux `tcp_is_cwnd_limited`).
    pub cwnd_limited: bool,
    /// The transport is in loss recovery.
    pub in_recovery: bool,
    /// The transport is in CWR (an ECN reduction this round trip).
    pub in_cwr: bool,
    /// The transport paces its segments at the controller's rate (Linux: a
    /// `sk_pacing_status` other than `SK_PACING_NONE`). Only for a controller that reads
    /// it ([`CongestionControl::reads_paced`]); `false` for the others.
    pub paced: bool,
}

/// Optional controller internals for monitoring and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CcInfo {
    /// DCTCP/Prague alpha (EWMA of the marked fraction), 0..=1.
    pub alpha: Option<f64>,
    /// Prague: true while in rate-based mode.
    pub rate_mode: bool,
}

/// Linux `tcp_cwnd_restart` on a window in bytes: `ssthresh` becomes
/// `max(ssthresh, ¾·cwnd)` (`tcp_current_ssthresh`; out of any reduction, as a connection
/// with nothing in flight is), and the window halves ⌈idle/rto⌉ − 1 times (once for 1 to
/// 2 RTOs of idle), but not below `min(iw, cwnd)`. Returns (cwnd, ssthresh).
pub fn idle_restart(cwnd: u64, ssthresh: u64, iw: u64, idle: Dur, rto: Dur) -> (u64, u64) {
    let ssthresh = ssthresh.max(cwnd / 2 + cwnd / 4);
    let restart = iw.min(cwnd);
    let mut c = cwnd;
    let mut left = idle.as_nanos();
    let rto = rto.as_nanos().max(1);
    while left > rto && c > restart {
        left -= rto;
        c /= 2;
    }
    (c.max(restart), ssthresh)
}

/// A window-based congestion controller for a reliable byte stream.
pub trait CongestionControl: Send + std::fmt::Debug {
    /// Name as used in scenario files and results: "reno", "cubic", "dctcp", "prague".
    fn name(&self) -> &'static str;
    /// The ECN feedback this controller asks for at connection set-up.
    fn ecn_request(&self) -> EcnMode;
    /// Told what was negotiated. E.g. Prague without AccECN falls back to Reno behaviour
    /// and Not-ECT (`tcp_prague.c` `prague_init` → `prague-reno`).
    fn on_ecn_negotiated(&mut self, mode: EcnMode);
    /// ECN codepoint for data packets now.
    fn data_ecn(&self) -> Ecn;
    /// Every ACK that acknowledges new data or carries new ECN feedback.
    fn on_ack(&mut self, s: &AckSample);
    /// ECN congestion feedback (ECE under RFC 3168, a CE increase under AccECN) arrived while
    /// the transport was neither in CWR nor in Recovery. The transport calls this at most
    /// once per round trip and then stays in CWR until `snd_una` passes the `snd_nxt` of entry.
    fn on_ecn_congestion(&mut self, s: &AckSample);
    /// The transport entered fast recovery after detecting loss (at most once per window).
    fn on_loss(&mut self, now: Time, bytes_in_flight: u64);
    /// The transport left Recovery or CWR and is back in Open.
    fn on_recovery_exit(&mut self, now: Time);
    /// The retransmission timer expired.
    fn on_rto(&mut self, now: Time);
    /// The last reduction was spurious (e.g. detected by D-SACK or timestamps): undo it.
    fn on_undo(&mut self, now: Time);
    /// The connection sent no data for `idle`, longer than its retransmission timeout
    /// `rto`, and has new data to send with nothing in flight: Linux `tcp_cwnd_restart`
    /// (RFC 2861; the restart window of RFC 5681 §4.1), which Linux applies
    /// (`net.ipv4.tcp_slow_start_after_idle`, on by default) only to controllers without
    /// their own `cong_control` — see [`idle_restart`]. The default keeps the window, as
    /// Linux does for TCP Prague (checked against L4STeam/linux `net/ipv4/tcp_prague.c`
    /// v0.7: `.cong_control = prague_cong_control`) and BBR.
    fn on_idle_restart(&mut self, _now: Time, _idle: Dur, _rto: Dur) {}
    /// Congestion window in bytes.
    fn cwnd(&self) -> u64;
    /// Slow-start threshold in bytes.
    fn ssthresh(&self) -> u64;
    fn in_slow_start(&self) -> bool {
        self.cwnd() < self.ssthresh()
    }
    /// Pacing rate to use now, `None` to send unpaced. The default is Linux's
    /// `tcp_update_pacing_rate` (net/ipv4/tcp_input.c): cwnd/srtt times
    /// `tcp_pacing_ss_ratio` (200 %) while cwnd is below half of ssthresh, else
    /// `tcp_pacing_ca_ratio` (120 %).
    fn pacing_rate(&self, srtt: Dur, _bytes_in_flight: u64) -> Option<Rate> {
        if srtt.is_zero() {
            return None;
        }
        let factor = if self.cwnd() < self.ssthresh() / 2 { 2.0 } else { 1.2 };
        Some(Rate::from_bytes_per_sec(
            self.cwnd() as f64 * factor / srtt.as_secs_f64(),
        ))
    }
    /// Whether this controller reads [`AckSample::paced`] (CUBIC's Linux HyStart does). A
    /// transport works it out only then: it takes the pacing rate, which for Prague is
    /// arithmetic at every ACK that the ACK itself then makes stale.
    fn reads_paced(&self) -> bool {
        false
    }
    /// Whether [`CongestionControl::pacing_rate`] reads the flight it is given. The default
    /// rate does not: like Linux's `sk_pacing_rate`, it follows from the controller's state
    /// and the RTT alone, so a transport may keep it until either changes.
    fn pacing_reads_flight(&self) -> bool {
        false
    }
    /// Segments the transport may send back to back as one burst at `pacing_rate` (Linux's
    /// `tso_segs` hook of `tcp_congestion_ops`); `None` lets the transport size its bursts
    /// itself (Linux `tcp_tso_autosize`).
    fn tso_segs(&self) -> Option<u32> {
        None
    }
    /// [`CongestionControl::pacing_rate`] and [`CongestionControl::tso_segs`] in one call, for
    /// a transport that asks for both after each change; a controller whose burst follows
    /// from its pacing rate (Prague's) works the rate out once. The values must be those of
    /// the two calls.
    fn pacing_and_tso_segs(&self, srtt: Dur, bytes_in_flight: u64) -> (Option<Rate>, Option<u32>) {
        (self.pacing_rate(srtt, bytes_in_flight), self.tso_segs())
    }
    /// A smaller segment size the controller wants (Prague below ~1 Mbit/s); `None` = path MSS.
    fn mss(&self) -> Option<u32> {
        None
    }
    fn info(&self) -> CcInfo {
        CcInfo::default()
    }
}

#[cfg(test)]
mod idle_tests {
    use super::*;

    #[test]
    fn idle_restart_follows_linux_tcp_cwnd_restart() {
        let ms = Dur::from_millis;
        let (iw, rto) = (14_480, ms(200));
        // ⌈idle/rto⌉ − 1 halvings: 250 ms → 1, 450 ms → 2, 400 ms → 1 (exactly 2 RTOs).
        assert_eq!(idle_restart(160_000, 50_000, iw, ms(250), rto), (80_000, 120_000));
        assert_eq!(idle_restart(160_000, 50_000, iw, ms(450), rto).0, 40_000);
        assert_eq!(idle_restart(160_000, 50_000, iw, ms(400), rto).0, 80_000);
        // Never below the initial window, and a window smaller than it stays.
        assert_eq!(idle_restart(160_000, 50_000, iw, Dur::from_secs(10), rto).0, iw);
        assert_eq!(
            idle_restart(8_000, 50_000, iw, Dur::from_secs(10), rto),
            (8_000, 50_000)
        );
        // ssthresh keeps the larger of itself and ¾ cwnd; infinite stays infinite.
        assert_eq!(idle_restart(160_000, 200_000, iw, ms(250), rto).1, 200_000);
        assert_eq!(idle_restart(160_000, u64::MAX, iw, ms(250), rto).1, u64::MAX);
    }
}
