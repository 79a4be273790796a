//! AccECN validation of the sender (the sender checks of RFC 9768 §3.2.2.1 and §3.2.2.3, with
//! the RFC 9000 §13.4.2.1 checks transposed to the AccECN option's byte counters; the `tcp`
//! module docs give the rules):
//! the tolerances, the per-connection bookkeeping [`EcnValidator`], the checks run for each
//! ACK and the fallback to Not-ECT when they fail. Every change of the sender's
//! [`EcnValidation`] state is made here: the start of testing, success, and failure (also
//! the handshake and zeroed-ACE failures that `ack.rs` detects).

use l4s_cc::EcnMode;
use l4s_core::{Dur, Ecn, Time};

use super::TcpSender;
use crate::endpoint::{EcnFailure, EcnValidation};

/// Tolerance of the AccECN byte-counter checks, in segments of the current MSS. The
/// option's counters count bytes as they *arrive*, while the sender credits bytes as they are
/// *acknowledged* (cumulatively or by SACK), so the two are not perfectly aligned: a
/// receiver that updates its counters lazily (GRO/LRO, counters sampled before the last
/// segments of an aggregate) or a truncated option can lag the acknowledgement by a
/// segment or two. Three segments absorb that while still failing a bleached or remarked
/// path after four unmarked-but-acknowledged segments (well within one RTT of feedback at
/// any useful rate). The same slack applies to "more bytes reported than were sent".
pub const ECN_VALIDATION_TOLERANCE_SEGS: u64 = 3;
/// Rounds after which a path that CE-marked every acknowledged ECT packet fails validation
/// as all-CE mangling (RFC 9768 §3.2.2.3 suggests checking the first three or four rounds).
/// Counted as complete rounds of acknowledgements (each at least min_rtt long) *after* the
/// first ACK of data, so 4 means about 4 RTTs of all-CE feedback after the first ACK, 5 RTTs
/// after the first data segment. 3 is too eager: in the simulator (`l4s-sim` system test
/// `four_prague_flows_keep_l_queue_short`) a Prague flow joining three others at
/// 100 Mbit/s behind DualPI2 legitimately had its first 21 packets CE-marked (the others'
/// overshoot kept the L queue above the step) and saw its first unmarked ACK ~3.3 RTTs
/// after its first ACK.
/// Raised from RFC 9768's suggested 3–4 to 8: at 4 the margin in that scenario was about
/// 14 ms, and a false fallback (an L4S flow turning into a loss-based classic one) costs far more
/// than detecting real all-CE mangling a few RTTs later.
pub const ECN_VALIDATION_ALL_CE_ROUNDS: u32 = 8;
/// Queueing delay that explains a round of continuous CE. A round of acknowledgements
/// counts towards [`ECN_VALIDATION_ALL_CE_ROUNDS`] only if it shows that the path held no
/// such queue: its smallest prompt RTT sample (from an ACK that delivered two or more
/// segments, so it left the receiver when the newest arrived, without a delayed-ACK wait)
/// within this much of the smallest prompt RTT of the connection, and within this much of
/// the previous round's (a queue that drains round by round sets a new minimum every round
/// and explains their marks too).
///
/// CE signals a queue (RFC 3168 §5, RFC 9330 §5.2), and the L4S AQMs mark *every* packet
/// only above a queueing delay of at least 1 ms: Linux DualPI2's step (`step_thresh`, 1 ms),
/// the RFC 9332 Appendix A ramp (minTh + range, 1.2 ms) and DOCSIS's immediate AQM (MAXTH
/// 1 ms, raised at low rates). When even the least-queued packet of a round waited longer
/// than that, the queue explains every CE of the round, which then says nothing about
/// mangling: at 5 Mbit/s a page load's new connections meet the queue built by their
/// siblings' initial windows and are marked throughout their first rounds on a healthy
/// path. A round whose ACKs each delivered one segment shows nothing either way (each may
/// have waited for the receiver's delayed-ACK timer) and does not count. A box that sets CE
/// on every ECT packet of a path without such a queue leaves the prompt RTT at its minimum
/// and still fails, [`ECN_VALIDATION_ALL_CE_ROUNDS`] rounds after its own start-up queue
/// has settled; one behind a queue that keeps changing, or mangling a connection that only
/// ever has one segment in flight, goes undetected.
/// (RFC 9768 §3.2.2.3 leaves how to detect continuous CE open; Linux's AccECN checks only
/// the handshake and the ACE field, so a Linux sender never detects it.)
pub const ECN_VALIDATION_QUEUE_DELAY: Dur = Dur::from_millis(1);

/// AccECN validation bookkeeping (RFC 9768 §3.2.2.3 sender checks, with the RFC 9000
/// §13.4.2.1 checks and quic-go's `ecnTracker.HandleNewlyAcked` ones (counters going
/// backwards, all-CE mangling) transposed to the AccECN byte counters).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct EcnValidator {
    /// Packets sent after the SYN (data including retransmissions, pure ACKs).
    sent_pkts: u64,
    /// Payload bytes sent (all codepoints) and per ECT codepoint.
    sent_bytes: u64,
    sent_ect0_bytes: u64,
    sent_ect1_bytes: u64,
    /// Data was ever sent with ECT(0) / ECT(1).
    sent_ect0: bool,
    sent_ect1: bool,
    /// Sums of the feedback deltas.
    fb_ce_pkts: u64,
    fb_ceb: u64,
    fb_e0b: u64,
    fb_e1b: u64,
    /// ECT data packets newly acknowledged while validating.
    acked_ect_pkts: u64,
    /// Counter rises (ECT of the codepoints sent, plus CE) minus acknowledged ECT bytes;
    /// capped above by the unacknowledged data, since arrivals not yet acknowledged are the
    /// only honest source of surplus.
    balance: i64,
    /// Completed rounds of all-CE feedback unexplained by queueing (see
    /// [`ECN_VALIDATION_QUEUE_DELAY`]) while testing, the `snd_nxt` that ends the current one (0 = not
    /// started) and when it began. A round ends when `snd_una` passes its end *and* at least
    /// min_rtt has elapsed, so that a partial first round (a paced initial window) does
    /// not count as a whole one.
    rounds: u32,
    round_end: u64,
    round_start: Time,
    /// Smallest prompt RTT (see [`TcpSender::validate_ecn`]) of the current round (`None`:
    /// none yet).
    round_min_rtt: Option<Dur>,
    /// Smallest prompt RTT while validating: unlike the connection's min RTT (which the
    /// handshake's small segments may set) it includes a full segment's serialisation.
    data_min_rtt: Option<Dur>,
    /// The previous round's smallest prompt RTT.
    prev_round_min_rtt: Option<Dur>,
}

impl EcnValidator {
    pub(super) fn on_send(&mut self, ecn: Ecn, len: u32) {
        self.sent_pkts = self.sent_pkts.saturating_add(1);
        let len = len as u64;
        self.sent_bytes = self.sent_bytes.saturating_add(len);
        if len == 0 {
            return;
        }
        match ecn {
            Ecn::Ect0 => {
                self.sent_ect0 = true;
                self.sent_ect0_bytes = self.sent_ect0_bytes.saturating_add(len);
            }
            Ecn::Ect1 => {
                self.sent_ect1 = true;
                self.sent_ect1_bytes = self.sent_ect1_bytes.saturating_add(len);
            }
            Ecn::NotEct | Ecn::Ce => {}
        }
    }
}

impl TcpSender {
    /// True while the sender is checking its ECN feedback: ECT data was sent and
    /// validation has not failed (`Testing` or `Capable`).
    pub(super) fn validating(&self) -> bool {
        matches!(self.validation, EcnValidation::Testing | EcnValidation::Capable)
    }

    /// A data segment leaves with `ecn`: on an AccECN connection the first ECT one starts
    /// validation (`NotApplicable` → `Testing`).
    pub(super) fn on_data_ecn(&mut self, ecn: Ecn) {
        if self.validation == EcnValidation::NotApplicable && self.is_accecn() && ecn.is_ect() && ecn != Ecn::Ce {
            self.validation = EcnValidation::Testing;
        }
    }

    /// Record that ECN validation failed at `now` for `reason`, unless it already had (the
    /// first failure is the one reported). Returns whether this was the first failure.
    /// Only the state: what the sender does about it is the caller's (see
    /// [`TcpSender::fail_validation`]; the handshake and zeroed-ACE failures of `ack.rs`
    /// handle ECT and the controller themselves).
    pub(super) fn record_failure(&mut self, now: Time, reason: EcnFailure) -> bool {
        if self.validation.is_failed() {
            return false;
        }
        self.validation = EcnValidation::Failed { at: now, reason };
        true
    }

    /// Validation failed: send Not-ECT, ignore CE from now on and let the controller fall
    /// back to its non-ECN behaviour (Prague → Reno, like `tcp_prague.c`'s `prague-reno`).
    pub(super) fn fail_validation(&mut self, now: Time, reason: EcnFailure) {
        if !self.record_failure(now, reason) {
            return;
        }
        self.ect_disabled = true;
        self.ce_ignored = true;
        self.cc.on_ecn_negotiated(EcnMode::Off);
    }

    /// The AccECN validation checks for one ACK. `fb` holds the option's deltas
    /// `(Δe0b, Δe1b, Δceb)` when the ACK carried a (non-stale) option; `ce_pkts` is the CE
    /// packet delta; `acked_ect_*` what this ACK newly acknowledged of ECT data;
    /// `prompt_rtt` the RTT of the newest segment this ACK delivered when the ACK cannot
    /// have waited for the receiver's delayed-ACK timer (it delivered two or more segments).
    pub(super) fn validate_ecn(
        &mut self,
        now: Time,
        prompt_rtt: Option<Dur>,
        fb: Option<(u64, u64, u64)>,
        ce_pkts: u64,
        acked_ect_bytes: u64,
        acked_ect_pkts: u64,
    ) {
        if !self.validating() {
            return;
        }
        let tol = ECN_VALIDATION_TOLERANCE_SEGS * self.mss_now() as u64;
        let min_rtt = self.rtt.min_rtt().unwrap_or(Dur::ZERO);
        let v = &mut self.val;
        v.acked_ect_pkts = v.acked_ect_pkts.saturating_add(acked_ect_pkts);
        v.balance = v.balance.saturating_sub(acked_ect_bytes.min(i64::MAX as u64) as i64);
        v.fb_ce_pkts = v.fb_ce_pkts.saturating_add(ce_pkts);
        let mut rose = false;
        let mut failure = None;
        if let Some((de0b, de1b, dceb)) = fb {
            v.fb_e0b = v.fb_e0b.saturating_add(de0b);
            v.fb_e1b = v.fb_e1b.saturating_add(de1b);
            v.fb_ceb = v.fb_ceb.saturating_add(dceb);
            let mut cover = dceb;
            if v.sent_ect0 {
                cover += de0b;
            }
            if v.sent_ect1 {
                cover += de1b;
            }
            v.balance = v.balance.saturating_add(cover as i64);
            // RFC 9000 §13.4.2.1: a codepoint never sent reported as received.
            if (de0b > 0 && !v.sent_ect0) || (de1b > 0 && !v.sent_ect1) {
                failure = Some(EcnFailure::Remarked);
            } else if v.balance < -(tol as i64) {
                // RFC 9000 §13.4.2.1: ΔECT + ΔCE short of the ECT bytes acknowledged.
                failure = Some(EcnFailure::Bleached);
            }
            rose = (v.sent_ect1 && de1b > 0) || (v.sent_ect0 && de0b > 0);
            let outstanding = self.snd_nxt.saturating_sub(self.snd_una).min(i64::MAX as u64) as i64;
            v.balance = v.balance.min(outstanding);
        }
        // RFC 9000 §13.4.2.1's check that no count exceeds what was sent, in totals (also
        // catches counters that jumped): more CE packets than packets sent, or more bytes of a
        // codepoint than were sent with it.
        if v.fb_ce_pkts > v.sent_pkts
            || v.fb_ceb > v.sent_bytes.saturating_add(tol)
            || v.fb_e0b > v.sent_ect0_bytes.saturating_add(tol)
            || v.fb_e1b > v.sent_ect1_bytes.saturating_add(tol)
        {
            failure = Some(EcnFailure::ImpossibleFeedback);
        }
        if failure.is_none() && self.validation == EcnValidation::Testing {
            // quic-go's mangling check / RFC 9768 §3.2.2.3: every acknowledged ECT packet
            // CE-marked for the first rounds. Testing ends at the first unmarked ECT arrival
            // (`rose`).
            // A round counts only if a prompt RTT shows no queue to explain its marks (see
            // ECN_VALIDATION_QUEUE_DELAY).
            if let Some(r) = prompt_rtt {
                v.round_min_rtt = Some(v.round_min_rtt.map_or(r, |m| m.min(r)));
                v.data_min_rtt = Some(v.data_min_rtt.map_or(r, |m| m.min(r)));
            }
            if v.round_end == 0 {
                if acked_ect_pkts > 0 {
                    v.round_end = self.snd_nxt;
                    v.round_start = now;
                    v.round_min_rtt = prompt_rtt;
                }
            } else if self.snd_una >= v.round_end && now >= v.round_start + min_rtt {
                let base = v.data_min_rtt.unwrap_or(min_rtt);
                let d = ECN_VALIDATION_QUEUE_DELAY;
                // No queue beyond the least seen, and none draining: a queue that empties
                // round by round (each round a new minimum) also explains the marks.
                let unexplained = v
                    .round_min_rtt
                    .is_some_and(|r| r <= base + d && v.prev_round_min_rtt.is_some_and(|p| r + d >= p && r <= p + d));
                if v.round_min_rtt.is_some() {
                    v.prev_round_min_rtt = v.round_min_rtt;
                }
                if unexplained {
                    v.rounds += 1;
                }
                v.round_end = self.snd_nxt;
                v.round_start = now;
                v.round_min_rtt = None;
            }
            if !rose
                && v.rounds >= ECN_VALIDATION_ALL_CE_ROUNDS
                && v.acked_ect_pkts > 0
                && v.fb_ce_pkts >= v.acked_ect_pkts
            {
                failure = Some(EcnFailure::AllCe);
            }
        }
        match failure {
            Some(reason) => self.fail_validation(now, reason),
            None if rose && self.validation == EcnValidation::Testing => self.validation = EcnValidation::Capable,
            None => {}
        }
    }
}
