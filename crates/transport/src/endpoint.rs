//! The sans-IO endpoint interface, after quinn-proto: the caller hands in packets and
//! the time, polls for packets to send, and asks when it should next call back.

use l4s_core::{Dur, Ecn, Rate, Time};

/// A packet an endpoint wants sent.
#[derive(Clone, Debug, PartialEq)]
pub struct Transmit<H> {
    /// Transport header (what the peer endpoint needs to process the packet).
    pub header: H,
    /// Size on the wire in bytes, as an Ethernet frame (IP + transport headers + payload + 14).
    pub size: u32,
    /// ECN codepoint to send with.
    pub ecn: Ecn,
}

/// Counters and current state an endpoint exposes for measurement.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EndpointStats {
    /// Packets this endpoint transmitted (data or ACKs), including retransmissions.
    pub sent_packets: u64,
    pub sent_bytes: u64,
    /// Data packets retransmitted.
    pub retransmits: u64,
    /// Packets the endpoint itself declared lost (sender's view).
    pub lost_packets: u64,
    /// Application payload bytes delivered in order (receiver) or acknowledged (sender).
    pub delivered_bytes: u64,
    /// Packets received.
    pub received_packets: u64,
    /// Packets received with CE (receiver) / CE packets reported by feedback (sender).
    pub ce_packets: u64,
    /// Congestion window in bytes (senders with a window).
    pub cwnd: u64,
    /// Smoothed RTT (senders).
    pub srtt: Dur,
    /// Current pacing rate, if paced.
    pub pacing_rate: Option<Rate>,
    /// Prague / DCTCP alpha.
    pub alpha: Option<f64>,
    /// ECN feedback in use: "none", "classic", "accecn", "udp-prague".
    pub ecn_mode: &'static str,
    /// Congestion events the sender reacted to (loss or ECN reductions).
    pub congestion_events: u64,
    /// The sender has finished (all data acknowledged, or stopped) and wants no more calls.
    pub finished: bool,
    /// ECN validation of the path (senders that validate; others report `NotApplicable`).
    pub ecn_validation: EcnValidation,
}

/// Outcome of a sender's ECN validation (RFC 9768 §3.2.2.3 AccECN sender checks, RFC 9000
/// §13.4.2-style validation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EcnValidation {
    /// No validation: ECN not used, classic RFC 3168 feedback, or an endpoint without it.
    #[default]
    NotApplicable,
    /// ECT is being sent and the feedback has not yet shown it arriving intact.
    Testing,
    /// The feedback showed ECT arriving unchanged (and is consistent so far).
    Capable,
    /// Validation failed at `at`: the sender stopped sending ECT and ignores CE.
    Failed { at: Time, reason: EcnFailure },
}

impl EcnValidation {
    pub fn name(self) -> &'static str {
        match self {
            EcnValidation::NotApplicable => "not-applicable",
            EcnValidation::Testing => "testing",
            EcnValidation::Capable => "capable",
            EcnValidation::Failed { .. } => "failed",
        }
    }
    /// True once validation has failed.
    pub fn is_failed(self) -> bool {
        matches!(self, EcnValidation::Failed { .. })
    }
}

/// Why ECN validation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnFailure {
    /// ECT packets arrived Not-ECT (the ECT(1)/ECT(0) and CE counters did not cover the
    /// acknowledged ECT bytes).
    Bleached,
    /// A codepoint never sent was reported (ECT(1) → ECT(0) remarking, or an invalid
    /// transition of the handshake's ECN field).
    Remarked,
    /// Every acknowledged ECT packet was CE-marked for the first 3 rounds.
    AllCe,
    /// Feedback that cannot be true: more CE than was sent, a counter going backwards, or a
    /// zeroed ACE on the first ACK.
    ImpossibleFeedback,
    /// udp_prague's receiver saw a packet that was neither ECT(1) nor CE and latched
    /// `error_L4S` (bleaching or remarking; its one-bit feedback does not say which).
    NotEct1,
}

impl EcnFailure {
    pub fn name(self) -> &'static str {
        match self {
            EcnFailure::Bleached => "bleached",
            EcnFailure::Remarked => "remarked",
            EcnFailure::AllCe => "all-ce",
            EcnFailure::ImpossibleFeedback => "impossible-feedback",
            EcnFailure::NotEct1 => "not-ect1",
        }
    }
}

/// A sans-IO endpoint (sender or receiver of one flow).
pub trait Endpoint {
    /// The transport header this endpoint exchanges with its peer.
    type Header: Clone + std::fmt::Debug;
    /// A packet from the peer arrived at `now` with wire `size` and ECN field `ecn`.
    fn handle_packet(&mut self, now: Time, header: &Self::Header, size: u32, ecn: Ecn);
    /// The next packet to send now, if any. Call until it returns `None`.
    fn poll_transmit(&mut self, now: Time) -> Option<Transmit<Self::Header>>;
    /// When [`Endpoint::handle_timeout`] should next be called (retransmission, delayed
    /// ACK or pacing release). `None` if nothing is pending.
    fn poll_timeout(&self) -> Option<Time>;
    /// [`Endpoint::poll_transmit`], and when it has nothing to send, the
    /// [`Endpoint::poll_timeout`] asked right after it: a caller that drains an endpoint
    /// and then sets its timer calls this until it returns `Err`. An endpoint may answer
    /// from what the failed poll already found out, but must answer exactly as the two
    /// calls would.
    #[inline]
    fn poll_transmit_or_timeout(&mut self, now: Time) -> Result<Transmit<Self::Header>, Option<Time>> {
        match self.poll_transmit(now) {
            Some(t) => Ok(t),
            None => Err(self.poll_timeout()),
        }
    }
    /// Timers due at `now` fire.
    fn handle_timeout(&mut self, now: Time);
    /// The application stops offering new data (flow stop time); in-flight data may still
    /// be retransmitted and acknowledged.
    fn close(&mut self, _now: Time) {}
    /// Counters and state for measurement.
    fn stats(&self) -> EndpointStats;
    /// The RTT sample taken from the last handled packet, if any (taken once).
    fn take_rtt_sample(&mut self) -> Option<Dur> {
        None
    }
}
