//! [`TcpConfig`] and [`TcpReceiverConfig`]: what a scenario may set for each side of a
//! connection (MSS, RFC 6298 timer bounds, pacing, RFC 8985 tail loss probes, RFC 5681
//! delayed ACKs, the ECN modes accepted and RFC 9768 §3.2.2.5.1 ACK triggers), with their
//! defaults.

use l4s_core::Dur;
use serde::Deserialize;

/// Sender configuration. Durations deserialize from text such as `"200ms"`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    /// Path maximum segment size (payload bytes). 1448 gives 1514-byte frames.
    pub mss: u32,
    /// Bytes to transfer; `None` = bulk until `close`.
    pub bytes: Option<u64>,
    /// Lower bound of the RTO (RFC 6298 §2.4 says 1 s; Linux uses 200 ms).
    pub min_rto: Dur,
    /// Upper bound of the RTO including backoff (RFC 6298 §2.5: at least 60 s).
    pub max_rto: Dur,
    /// RTO before the first RTT sample (RFC 6298 §2.1).
    pub initial_rto: Dur,
    /// Clock granularity G in RTO = SRTT + max(G, 4·RTTVAR).
    pub clock_granularity: Dur,
    /// Initial SYN retransmission timeout (RFC 6298 §2.1: 1 s), doubled per retry.
    pub syn_rto: Dur,
    /// SYN transmissions that carry the ECN setup flags before falling back to a plain SYN
    /// (RFC 3168 §6.1.1.1, RFC 9768 §3.1.4).
    pub ecn_syn_attempts: u32,
    /// Pace when the controller gives a pacing rate.
    pub pacing: bool,
    /// Fewest segments a paced burst carries (Linux `tcp_min_tso_segs`, 2). A burst (one
    /// TSO/GSO skb in Linux) leaves back to back and the next one waits for all of it at
    /// the pacing rate. Controllers that size their own bursts (TCP Prague's `tso_segs`:
    /// 2^-12 s of data, at least 1 segment) ignore this and `pacing_burst_time`.
    pub pacing_burst_pkts: u32,
    /// Time worth of data at the pacing rate in one burst (Linux `tcp_tso_autosize`:
    /// `sk_pacing_rate >> sk_pacing_shift`, 2^-10 s); a burst is the larger of this and
    /// `pacing_burst_pkts`.
    pub pacing_burst_time: Dur,
    /// Count "data ready, cwnd open, but held back by pacing" as cwnd-limited in
    /// `AckSample::cwnd_limited`. The pacing rate is derived from cwnd (cwnd/srtt), so such a
    /// sender is limited by its window, not by the application. Without this, a controller
    /// whose pacing spreads exactly its window over srtt keeps its flight just below cwnd
    /// and, if it grows only when cwnd-limited, never grows (TCP Prague escapes that only
    /// because its schedule advances by the payload while its rate counts whole packets). Linux TCP Prague v0.7's
    /// `prague_update_cwnd` grows only when `tcp_is_cwnd_limited` (L4STeam/linux
    /// `net/ipv4/tcp_prague.c`, `MODULE_VERSION("0.7")`), but there the packets that the fq
    /// qdisc holds back for pacing (and TSQ) already count as in flight, so a paced flow
    /// with data waiting is cwnd-limited: this flag is that host queue's effect.
    pub paced_is_cwnd_limited: bool,
    /// Tail loss probes (RFC 8985 §7).
    pub tlp: bool,
    /// Restart the window after an idle period longer than the RTO (Linux
    /// `net.ipv4.tcp_slow_start_after_idle`, default on; RFC 2861 and RFC 5681 §4.1): when
    /// new data is sent with nothing in flight, the controller's `on_idle_restart` runs
    /// (Reno, CUBIC and DCTCP restart; TCP Prague keeps its window, as in Linux).
    pub slow_start_after_idle: bool,
    /// WCDelAckT: extra PTO allowance when one segment is in flight (RFC 8985 §7.2).
    pub tlp_delack: Dur,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1448,
            bytes: None,
            min_rto: Dur::from_millis(200),
            max_rto: Dur::from_secs(60),
            initial_rto: Dur::from_secs(1),
            clock_granularity: Dur::from_millis(1),
            syn_rto: Dur::from_secs(1),
            ecn_syn_attempts: 2,
            pacing: true,
            pacing_burst_pkts: 2,
            pacing_burst_time: Dur::from_nanos(976_563),
            paced_is_cwnd_limited: true,
            tlp: true,
            tlp_delack: Dur::from_millis(200),
            slow_start_after_idle: true,
        }
    }
}

/// Receiver configuration.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpReceiverConfig {
    /// Accept AccECN (RFC 9768).
    pub accecn: bool,
    /// Accept classic ECN (RFC 3168).
    pub ecn: bool,
    /// Advertised receive window in bytes.
    pub rwnd: u64,
    /// Delay ACKs (RFC 5681 §4.2, RFC 1122 §4.2.3.2).
    pub delayed_ack: bool,
    /// ACK at least every this many in-order segments.
    pub ack_every: u32,
    /// Delayed-ACK timer.
    pub ack_delay: Dur,
    /// AccECN change-triggered ACK: ACK at once when a CE packet follows a non-CE one
    /// (RFC 9768 §3.2.2.5.1, a SHOULD).
    pub accecn_change_ack: bool,
    /// AccECN increment-triggered ACK: ACK once this many CE marks accumulated (n = 2 while
    /// data is unacknowledged, RFC 9768 §3.2.2.5.1).
    pub accecn_ce_ack_n: u32,
}

impl Default for TcpReceiverConfig {
    fn default() -> Self {
        TcpReceiverConfig {
            accecn: true,
            ecn: true,
            rwnd: 64 * 1024 * 1024,
            delayed_ack: true,
            ack_every: 2,
            ack_delay: Dur::from_millis(40),
            accecn_change_ack: true,
            accecn_ce_ack_n: 2,
        }
    }
}
