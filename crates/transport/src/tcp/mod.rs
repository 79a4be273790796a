//! A sans-IO TCP-like reliable byte stream: [`TcpSender`] (bulk or byte-count data, SACK,
//! RACK-TLP, RTO, pacing, RFC 3168 or AccECN feedback) and [`TcpReceiver`] (delayed ACKs,
//! SACK, ECE/AccECN feedback, timestamp echo).
//!
//! The model follows RFC 9293 (TCP), with these simplifications for a laboratory:
//!
//! * Sequence numbers are `u64` bytes and never wrap. The sender's ISN is 0, its SYN
//!   consumes sequence number 0 and data starts at 1. The receiver sends no data (ISN 0,
//!   its SYN-ACK consumes 0, its ACKs carry `seq = 1`).
//! * No FIN: a byte-count transfer is complete when every byte is acknowledged
//!   (`stats().finished`). No window scaling or PAWS; the advertised window is a plain
//!   number of bytes.
//! * Timestamps (RFC 7323) are nanoseconds of the sender's clock **plus one**, so that the
//!   value 0 means "no timestamp".
//! * Wire sizes: data frame = 14 (Ethernet) + 20 (IP) + 32 (TCP with the timestamp option)
//!   plus payload, so MSS 1448 gives 1514 B. SYN/SYN-ACK 74 B. Pure ACK 66 B plus the SACK option
//!   (12/20/28 B for 1/2/3 blocks) plus 12 B when the AccECN option is present. The receiver
//!   puts the AccECN option on *every* ACK: the simulator has no option-space pressure, so
//!   the 40-byte TCP option limit is not enforced (RFC 9768 §3.2.3 lets an implementation
//!   choose how often to send the option).
//!
//! Loss detection is RACK-TLP (RFC 8985), as RFC 9331 §4.3 prefers for L4S, over a SACK
//! scoreboard (RFC 2018, RFC 6675 "pipe"), plus the RFC 6298 retransmission timer.
//!
//! ECN choices:
//!
//! * RFC 3168 (§6.1): ECE+CWR on the SYN, ECE on the SYN-ACK; data ECT per the controller
//!   (normally ECT(0)); retransmissions, SYNs and pure ACKs Not-ECT (§6.1.4–6.1.5). The
//!   receiver sets ECE on every ACK from a CE arrival until a data segment with CWR arrives.
//!   The sender enters CWR at most once per round trip and ignores ECE on ACKs that do not
//!   yet cover its last CWR segment (they may predate it).
//! * AccECN (RFC 9768 §3): AE+CWR+ECE on the SYN, handshake encoding on the SYN-ACK and on
//!   the client's ACK of it, counters r.cep = 5, r.e0b = r.e1b = 1, r.ceb = 0, ACE on every
//!   non-SYN segment, the option on every ACK, change- and increment-triggered ACKs. The
//!   sender decodes ACE with the option's CE byte counter (or the safe-Δ rule without it),
//!   never sends CWR as a signal, keeps ECT on retransmissions (ECN++, RFC 8311 §4.3) and
//!   sends its pure ACKs ECT(1) only when its data is ECT(1). Mangling of the SYN's ECN
//!   field disables ECT (feedback still used); a zeroed ACE on the first ACK turns ECN off.
//!   The SYN-ACK does not carry the option, and the sender's segments carry none.
//! * ECN validation (AccECN only; [`TcpSender::ecn_validation`], `EndpointStats::ecn_validation`;
//!   RFC 9768 §3.2.2.3 sender checks with the RFC 9000 §13.4.2.1 checks transposed to the
//!   option's byte counters). `Testing` from the first ECT data segment. Per ACK carrying the
//!   option: Δe0b > 0 with nothing sent ECT(0) (or Δe1b > 0 with nothing sent ECT(1)) is `Remarked`;
//!   ECT bytes newly acknowledged (cumulatively or by SACK) not covered by the rises of
//!   e1b/e0b (the codepoints sent) plus ceb, summed over the connection, by more than
//!   [`ECN_VALIDATION_TOLERANCE_SEGS`] segments is `Bleached` (any surplus is capped at the
//!   unacknowledged data, so duplicates cannot bank credit); more CE packets than packets
//!   sent, more bytes of a codepoint than were sent with it, or a counter going backwards on
//!   an ACK that advances snd_una is `ImpossibleFeedback` (a backwards counter on an ACK
//!   that advances nothing is a superseded ACK and its feedback is skipped); every
//!   acknowledged ECT packet CE for [`ECN_VALIDATION_ALL_CE_ROUNDS`] rounds after the first
//!   ACK, counting only rounds whose RTT samples free of delayed-ACK waits stay within
//!   [`ECN_VALIDATION_QUEUE_DELAY`] of the smallest and of the previous round's (no queue
//!   explains their marks), is `AllCe`
//!   (this check also works from ACE packet counts when the option is absent; the byte
//!   checks need the option). `Capable` at the first ACK whose option shows a rise in the
//!   ECT counter of the codepoint sent. On failure the sender sends Not-ECT, ignores CE
//!   (still counted in `ce_packets`) and calls `on_ecn_negotiated(EcnMode::Off)` so Prague
//!   becomes prague-reno; the feedback mode stays "accecn". A mangled handshake and a
//!   zeroed first ACE are also recorded as failures (`Remarked`, `ImpossibleFeedback`).
//!   Classic and no-ECN connections report `NotApplicable`. No re-validation later.
//!
//! Not implemented: FIN/close handshake, zero-window probing (persist timer), PAWS,
//! D-SACK, spurious-retransmission undo (`on_undo` is never called), RFC 8985 §7.4 TLP
//! loss detection, PRR (RFC 6937: during recovery the sender sends while pipe < cwnd,
//! RFC 6675 style), RFC 6298 §5.7 (3 s RTO after a retransmitted SYN: timestamps give an
//! unambiguous handshake RTT instead).

mod accecn;
mod config;
mod receiver;
mod rtt;
mod segment;
mod sender;

pub use accecn::{
    ace_delta, ce_pkts_from_option, handshake_ace, handshake_ace_decode, safe_ace_delta, AccEcnOption,
    AccEcnOptionFields, AccEcnOrder, ACCECN_CEP_INIT, ACCECN_EB_INIT, ACCECN_FIELD_MASK, ACCECN_OPTION_BYTES,
};
pub use config::{TcpConfig, TcpReceiverConfig};
pub use receiver::{RcvEcn, TcpReceiver};
pub use rtt::RttEstimator;
pub use segment::{SackBlock, TcpFlags, TcpSegment, ACK_SIZE, DATA_OVERHEAD, SYN_SIZE};
pub use sender::{
    CaState, TcpSender, ECN_VALIDATION_ALL_CE_ROUNDS, ECN_VALIDATION_QUEUE_DELAY, ECN_VALIDATION_TOLERANCE_SEGS,
};
