//! [`TcpSender`], the sending side of a connection: the handshake with ECN negotiation
//! (RFC 3168 §6.1.1, RFC 9768 §3.1), segmentation within the congestion and receive
//! windows, pacing, the SACK scoreboard (RFC 2018, RFC 6675), RACK-TLP loss detection
//! (RFC 8985), the retransmission timer (RFC 6298), the ECN congestion response and
//! AccECN feedback decoding (RFC 3168 §6.1.2, RFC 9768 §3.2.2), and AccECN validation.
//!
//! This file holds the sender's state, its public accessors, the transmit path (new data,
//! retransmissions, pacing, ECN codepoints, idle restart) and the [`Endpoint`] glue. ACK
//! and SYN-ACK processing is in `ack.rs`, loss detection, TLP and RTO in `recovery.rs`,
//! and AccECN validation in `ecn_validation.rs`.

mod ack;
mod ecn_validation;
mod recovery;

use std::collections::VecDeque;

use l4s_cc::{CongestionControl, EcnMode};
use l4s_core::{Dur, Ecn, Rate, Time};

use self::ecn_validation::EcnValidator;
pub use self::ecn_validation::{
    ECN_VALIDATION_ALL_CE_ROUNDS, ECN_VALIDATION_QUEUE_DELAY, ECN_VALIDATION_TOLERANCE_SEGS,
};
use crate::endpoint::{EcnValidation, Endpoint, EndpointStats, Transmit};
use crate::tcp::accecn::{handshake_ace, ACCECN_CEP_INIT, ACCECN_EB_INIT};
use crate::tcp::config::TcpConfig;
use crate::tcp::rtt::RttEstimator;
use crate::tcp::segment::{ts_encode, SackBlock, TcpFlags, TcpSegment, ACK_SIZE, DATA_OVERHEAD, SYN_SIZE};

/// Per-segment scoreboard record.
#[derive(Clone, Copy, Debug)]
struct Seg {
    seq: u64,
    xmit: Time,
    len: u32,
    flags: u8,
    /// IP-ECN field of the latest transmission.
    ecn: Ecn,
}
const SACKED: u8 = 1;
const LOST: u8 = 2;
const RETRANS: u8 = 4;

impl Seg {
    fn end(&self) -> u64 {
        self.seq + self.len as u64
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SndState {
    SynSent,
    Established,
}

/// Congestion state (Linux `tcp_ca_state` subset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaState {
    Open,
    /// ECN reduction in progress (RFC 3168 §6.1.2): until `snd_una` ≥ `snd_nxt` at entry.
    Cwr,
    /// Fast recovery after loss detection (RFC 6675 §5): until `snd_una` ≥ recovery point.
    Recovery,
    /// After an RTO, until everything outstanding at the RTO is acknowledged (Linux
    /// `TCP_CA_Loss`). Every segment outstanding and not SACKed was marked lost and is
    /// retransmitted as the window allows, SACKed ones skipped (RFC 6675 §5.1); the window
    /// grows in slow start from the loss window meanwhile (RFC 5681 §3.1), so this state
    /// is not reported to the controller as recovery (`AckSample::in_recovery`).
    Loss,
}

/// The sending side of a connection.
///
/// Loss detection: RACK (RFC 8985 §6) over a per-segment scoreboard kept in a `VecDeque`
/// indexed by segment number. The scan for lost segments walks two time-ordered sequences
/// (first transmissions in sequence order, and a FIFO of retransmissions) with pointers
/// that only move forward, so detection is amortised O(1) per ACK. SACK blocks are applied
/// with a binary search plus a cache of the previous ACK's blocks (like Linux's
/// `recv_sack_cache`), so repeated blocks cost O(log n). Tail loss probes follow
/// RFC 8985 §7.2–7.3. Not implemented: RFC 8985 §7.4 TLP loss detection (a tail loss
/// repaired by the probe alone is not reported to the controller), D-SACK and spurious
/// retransmission undo (`on_undo` is never called).
#[derive(Debug)]
pub struct TcpSender {
    cfg: TcpConfig,
    cc: Cc,
    state: SndState,
    requested: EcnMode,
    mode: EcnMode,
    /// AccECN: send Not-ECT (handshake mangling or zeroed ACE) (RFC 9768 §3.2.2.3-4).
    ect_disabled: bool,
    ace_checked: bool,
    /// ECN validation (see [`TcpSender::ecn_validation`]).
    validation: EcnValidation,
    /// Validation failed: CE feedback is no longer acted upon.
    ce_ignored: bool,
    val: EcnValidator,

    syn_pending: bool,
    syn_at: Option<Time>,
    syn_rto: Dur,
    syn_sent: u32,
    syn_ecn_flags: bool,
    ack_pending: bool,
    synack_ecn: Ecn,

    snd_una: u64,
    snd_nxt: u64,
    snd_wnd: u64,
    app_limit: u64,
    /// [`TcpSender::set_persistent`]: idle with everything acknowledged is not `finished`.
    persistent: bool,
    /// [`Endpoint::close`] was called.
    closed: bool,

    segs: VecDeque<Seg>,
    base: u64,
    bif: u64,
    sacked_cnt: u64,
    lost_pending: u64,
    retx_next: u64,
    orig_ptr: u64,
    retx_q: VecDeque<(u64, Time)>,
    sack_cache: [SackBlock; 3],
    sack_cache_n: usize,

    rack_valid: bool,
    rack_xmit: Time,
    rack_end: u64,
    rack_rtt: Dur,
    rack_fack: u64,
    reordering_seen: bool,

    ca: CaState,
    high_seq: u64,
    cwr_seq: u64,
    send_cwr: bool,
    cwr_sent_end: u64,

    rtt: RttEstimator,
    backoff: u32,
    rto_at: Option<Time>,
    tlp_at: Option<Time>,
    reo_at: Option<Time>,
    tlp_pending: bool,
    tlp_end: Option<u64>,
    /// Linux `tcp_wstamp_ns`: the earliest departure time of the next burst (EDT pacing).
    pace_next: Time,
    /// Idle time before the current burst that may still shorten its spacing
    /// (`tcp_update_skb_after_send`'s credit).
    pace_credit: Dur,
    /// Segments the current burst may still carry back to back, and when it started: a
    /// burst is what Linux sends as one TSO/GSO skb.
    burst_left: u32,
    burst_at: Time,
    /// Data segments sent, new and retransmitted (Linux `data_segs_out`).
    data_segs_out: u64,
    /// Linux `tcp_cwnd_validate` state: cwnd-limited at some point in the current window,
    /// the largest flight in it, and the `snd_nxt` that ends it.
    cwnd_limited: bool,
    max_bif: u64,
    cwnd_usage_seq: u64,
    ts_recent: u64,

    r_cep: u32,
    s_cep: u32,
    s_ceb: u32,
    s_e0b: u32,
    s_e1b: u32,

    delivered_pkts: u64,
    delivered_ce_pkts: u64,
    last_rtt: Option<Dur>,

    sent_packets: u64,
    sent_bytes: u64,
    received_packets: u64,
    retransmits: u64,
    lost_packets: u64,
    ce_packets: u64,
    congestion_events: u64,
    rto_count: u64,
    tlp_count: u64,
    /// When a data segment (new or retransmitted) was last sent (Linux `lsndtime`).
    last_data_sent: Option<Time>,
    /// The `last_data_sent` an idle restart was applied for (once per idle period).
    restarted_after: Option<Time>,
    idle_restarts: u64,
}

impl TcpSender {
    /// A sender that will open the connection with a SYN at the first `poll_transmit`.
    pub fn new(cfg: TcpConfig, cc: Box<dyn CongestionControl>, now: Time) -> TcpSender {
        let requested = cc.ecn_request();
        let rtt = RttEstimator::new(cfg.initial_rto, cfg.min_rto, cfg.max_rto, cfg.clock_granularity);
        let app_limit = match cfg.bytes {
            Some(b) => 1u64.saturating_add(b),
            None => u64::MAX,
        };
        TcpSender {
            syn_rto: cfg.syn_rto,
            cfg,
            cc: Cc::new(cc),
            state: SndState::SynSent,
            requested,
            mode: EcnMode::Off,
            ect_disabled: false,
            ace_checked: false,
            validation: EcnValidation::NotApplicable,
            ce_ignored: false,
            val: EcnValidator::default(),
            syn_pending: true,
            syn_at: None,
            syn_sent: 0,
            syn_ecn_flags: false,
            ack_pending: false,
            synack_ecn: Ecn::NotEct,
            snd_una: 1,
            snd_nxt: 1,
            snd_wnd: 64 * 1024 * 1024,
            app_limit,
            persistent: false,
            closed: false,
            segs: VecDeque::new(),
            base: 0,
            bif: 0,
            sacked_cnt: 0,
            lost_pending: 0,
            retx_next: 0,
            orig_ptr: 0,
            retx_q: VecDeque::new(),
            sack_cache: [SackBlock::default(); 3],
            sack_cache_n: 0,
            rack_valid: false,
            rack_xmit: Time::ZERO,
            rack_end: 0,
            rack_rtt: Dur::ZERO,
            rack_fack: 0,
            reordering_seen: false,
            ca: CaState::Open,
            high_seq: 0,
            cwr_seq: 0,
            send_cwr: false,
            cwr_sent_end: 0,
            rtt,
            backoff: 0,
            rto_at: None,
            tlp_at: None,
            reo_at: None,
            tlp_pending: false,
            tlp_end: None,
            pace_next: now,
            pace_credit: Dur::ZERO,
            burst_left: 0,
            burst_at: now,
            data_segs_out: 0,
            cwnd_limited: false,
            max_bif: 0,
            cwnd_usage_seq: 0,
            ts_recent: 0,
            r_cep: ACCECN_CEP_INIT,
            s_cep: ACCECN_CEP_INIT,
            s_ceb: 0,
            s_e0b: ACCECN_EB_INIT,
            s_e1b: ACCECN_EB_INIT,
            delivered_pkts: 0,
            delivered_ce_pkts: 0,
            last_rtt: None,
            sent_packets: 0,
            sent_bytes: 0,
            received_packets: 0,
            retransmits: 0,
            lost_packets: 0,
            ce_packets: 0,
            congestion_events: 0,
            rto_count: 0,
            tlp_count: 0,
            last_data_sent: None,
            restarted_after: None,
            idle_restarts: 0,
        }
    }

    /// Offer `bytes` more application bytes (a response, a chunk, an object) for sending
    /// after those offered so far: raises the application limit of a connection created
    /// with a byte count (`TcpConfig::bytes = Some(n)`, `n` may be 0). Data flows as soon as
    /// the window and pacing allow; after an idle period the flight restarts with the
    /// current cwnd (no RFC 5681 §4.1 restart window: the controllers have no idle hook).
    /// Ignored after [`Endpoint::close`] and on a bulk connection (`bytes = None`), which
    /// has no limit to raise.
    pub fn offer(&mut self, bytes: u64) {
        if self.closed || self.app_limit == u64::MAX {
            return;
        }
        self.app_limit = self.app_limit.saturating_add(bytes).min(u64::MAX - 1);
    }
    /// A persistent connection (HTTP keep-alive, a sync session) is not `finished` while
    /// idle with everything acknowledged, since more data may be offered; it finishes once
    /// [`Endpoint::close`] was called and every byte is acknowledged.
    pub fn set_persistent(&mut self, on: bool) {
        self.persistent = on;
    }
    /// Application bytes offered so far (`None` for a bulk connection without a limit).
    pub fn offered_bytes(&self) -> Option<u64> {
        (self.app_limit != u64::MAX).then(|| self.app_limit.saturating_sub(1))
    }
    /// Application bytes acknowledged cumulatively.
    pub fn acked_bytes(&self) -> u64 {
        self.snd_una.saturating_sub(1)
    }

    /// The negotiated ECN feedback (`EcnMode::Off` until the handshake completes).
    pub fn ecn_mode(&self) -> EcnMode {
        self.mode
    }
    /// True once the SYN-ACK has been received.
    pub fn is_established(&self) -> bool {
        self.state == SndState::Established
    }
    pub fn ca_state(&self) -> CaState {
        self.ca
    }
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }
    pub fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }
    pub fn bytes_in_flight(&self) -> u64 {
        self.bif
    }
    /// The RTO in force now, including exponential backoff (RFC 6298 §5.5).
    pub fn rto(&self) -> Dur {
        (self.rtt.rto() * (1u64 << self.backoff.min(30))).min(self.cfg.max_rto)
    }
    pub fn rtt_estimator(&self) -> &RttEstimator {
        &self.rtt
    }
    /// Retransmission timeouts that fired (after the handshake).
    pub fn rto_count(&self) -> u64 {
        self.rto_count
    }
    /// Tail loss probes sent.
    pub fn tlp_count(&self) -> u64 {
        self.tlp_count
    }
    /// Window restarts after idle periods ([`TcpConfig::slow_start_after_idle`]).
    pub fn idle_restarts(&self) -> u64 {
        self.idle_restarts
    }
    /// AccECN sender counters `(s.cep, s.ceb, s.e0b, s.e1b)`.
    pub fn accecn_counters(&self) -> (u32, u32, u32, u32) {
        (self.s_cep, self.s_ceb, self.s_e0b, self.s_e1b)
    }
    pub fn cc(&self) -> &dyn CongestionControl {
        &*self.cc
    }
    /// ECN validation state (AccECN only; classic and no-ECN connections report
    /// `NotApplicable`).
    pub fn ecn_validation(&self) -> EcnValidation {
        self.validation
    }

    fn mss_now(&self) -> u32 {
        let m = self.cfg.mss.max(64);
        self.cc.mss().map_or(m, |c| c.clamp(64, m))
    }

    fn is_accecn(&self) -> bool {
        matches!(self.mode, EcnMode::Accurate { .. })
    }

    fn idx(&self, abs: u64) -> usize {
        (abs - self.base) as usize
    }
    fn end_idx(&self) -> u64 {
        self.base + self.segs.len() as u64
    }

    /// Bytes of new data that may be sent now (application, receive window, SWS avoidance).
    fn new_data_len(&self) -> u32 {
        let limit = self.app_limit.min(self.snd_una.saturating_add(self.snd_wnd));
        if self.snd_nxt >= limit {
            return 0;
        }
        let mss = self.mss_now();
        let len = (limit - self.snd_nxt).min(mss as u64) as u32;
        // RFC 9293 §3.8.6.2.1: no small segment because of the window unless idle.
        if len < mss && self.snd_nxt + (len as u64) < self.app_limit && self.bif > 0 {
            return 0;
        }
        len
    }

    fn cwnd_allows(&self, len: u32) -> bool {
        self.bif == 0 || self.bif + len as u64 <= self.cc.cwnd()
    }

    #[inline]
    fn pacing_rate(&self) -> Option<Rate> {
        if !self.cfg.pacing {
            return None;
        }
        let srtt = self.rtt.srtt()?;
        self.cc.pacing_rate(srtt, self.bif).filter(|r| r.0 > 0)
    }

    fn data_ecn(&self, retransmission: bool) -> Ecn {
        match self.mode {
            EcnMode::Off => Ecn::NotEct,
            // RFC 3168 §6.1.5: retransmitted data packets are not ECT.
            EcnMode::Classic if retransmission => Ecn::NotEct,
            EcnMode::Classic => self.cc.data_ecn(),
            // AccECN / L4S: ECN++ (RFC 8311 §4.3 experiment) keeps ECT on retransmissions.
            EcnMode::Accurate { .. } if self.ect_disabled => Ecn::NotEct,
            EcnMode::Accurate { .. } => self.cc.data_ecn(),
        }
    }

    /// ECN of pure ACKs: Not-ECT, except under AccECN when the controller sends ECT(1)
    /// data (Prague's ECN++ on control packets, `tcp_prague.c` `TCP_CONG_WANTS_ECT_1`; RFC 9331
    /// Appendix A.2.1).
    fn ack_ecn(&self) -> Ecn {
        if self.is_accecn() && !self.ect_disabled && self.cc.data_ecn() == Ecn::Ect1 {
            Ecn::Ect1
        } else {
            Ecn::NotEct
        }
    }

    /// Segments per burst at `rate`: the controller's own (`tso_segs`), else Linux's
    /// `tcp_tso_autosize`: `pacing_burst_time` worth of data at the pacing rate
    /// (`sk_pacing_rate >> sk_pacing_shift`), at least `pacing_burst_pkts`
    /// (`tcp_min_tso_segs`). Linux's extra 64 KB for paths under 512 µs
    /// (`tcp_tso_rtt_log`) is left out.
    fn burst_segs(&self, rate: Rate) -> u32 {
        match self.cc.tso_segs() {
            Some(n) => n.max(1),
            None => {
                let auto = rate.bytes_in(self.cfg.pacing_burst_time) / u64::from(self.mss_now().max(1));
                (auto.min(u64::from(u32::MAX)) as u32)
                    .max(self.cfg.pacing_burst_pkts)
                    .max(1)
            }
        }
    }

    /// True while the burst begun at `now` may carry another segment without waiting.
    fn in_burst(&self, now: Time) -> bool {
        self.burst_left > 0 && self.burst_at == now
    }

    /// Linux EDT pacing after a data segment of `len` payload bytes
    /// (`tcp_update_skb_after_send`, net/ipv4/tcp_output.c): the schedule advances by the
    /// payload's time at the pacing rate (the rate counts whole packets, the spacing only
    /// their payload), less up to half of it for time the sender was late (the "OS jitter"
    /// credit); the first 9 data segments leave it alone (`data_segs_out >= 10`, from
    /// sch_fq not pacing the first 10). A burst of [`Self::burst_segs`] segments (one
    /// TSO/GSO skb) leaves at once, and the next waits for the whole burst.
    fn pace_after_send(&mut self, now: Time, len: u32, rate: Rate) {
        if self.in_burst(now) {
            self.burst_left -= 1;
        } else {
            // `tcp_transmit_skb`: tcp_wstamp_ns = max(tcp_wstamp_ns, now); the credit is
            // how far that moved it.
            self.pace_credit = now.since(self.pace_next);
            self.pace_next = self.pace_next.max(now);
            self.burst_left = self.burst_segs(rate) - 1;
            self.burst_at = now;
        }
        if self.data_segs_out < 10 {
            return;
        }
        let t = rate.tx_time(u64::from(len));
        let cut = (t / 2).min(self.pace_credit);
        self.pace_credit -= cut;
        self.pace_next += t - cut;
    }

    fn data_segment(&mut self, now: Time, seq: u64, len: u32, retransmission: bool) -> Transmit<TcpSegment> {
        self.last_data_sent = Some(now);
        let mut flags = TcpFlags::ACK;
        match self.mode {
            EcnMode::Accurate { .. } => flags = flags.with_ace((self.r_cep & 7) as u8),
            EcnMode::Classic if self.send_cwr && !retransmission => {
                // RFC 3168 §6.1.2: CWR on the first new data segment after the reduction.
                flags = flags | TcpFlags::CWR;
                self.send_cwr = false;
                self.cwr_sent_end = seq + len as u64;
            }
            _ => {}
        }
        let size = DATA_OVERHEAD + len;
        self.sent_packets += 1;
        self.sent_bytes += size as u64;
        self.data_segs_out += 1;
        if let Some(rate) = self.pacing_rate() {
            self.pace_after_send(now, len, rate);
        }
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rto());
        }
        let ecn = self.data_ecn(retransmission);
        self.val.on_send(ecn, len);
        self.on_data_ecn(ecn);
        Transmit {
            header: TcpSegment {
                seq,
                len,
                ack: 1,
                flags,
                ts_val: ts_encode(now),
                ts_ecr: self.ts_recent,
                wnd: u32::MAX,
                ..TcpSegment::default()
            },
            size,
            ecn,
        }
    }

    fn send_new(&mut self, now: Time, len: u32) -> Transmit<TcpSegment> {
        let seq = self.snd_nxt;
        self.snd_nxt += len as u64;
        self.segs.push_back(Seg {
            seq,
            xmit: now,
            len,
            flags: 0,
            ecn: Ecn::NotEct,
        });
        self.bif += len as u64;
        let t = self.data_segment(now, seq, len, false);
        if let Some(s) = self.segs.back_mut() {
            s.ecn = t.ecn;
        }
        t
    }

    fn retransmit(&mut self, now: Time, abs: u64) -> Transmit<TcpSegment> {
        let i = self.idx(abs);
        let s = &mut self.segs[i];
        if s.flags & LOST != 0 {
            s.flags &= !LOST;
            self.lost_pending = self.lost_pending.saturating_sub(1);
            self.bif += s.len as u64;
        }
        s.flags |= RETRANS;
        s.xmit = now;
        let (seq, len) = (s.seq, s.len);
        self.retx_q.push_back((abs, now));
        if abs == self.base {
            // Linux `tcp_xmit_retransmit_queue`: re-arm the RTO when the head is resent.
            self.rto_at = Some(now + self.rto());
        }
        self.retransmits += 1;
        let t = self.data_segment(now, seq, len, true);
        self.segs[i].ecn = t.ecn;
        t
    }

    /// Linux `tcp_cwnd_validate`: remember for a whole window whether the sender was
    /// cwnd-limited (RFC 7661 spirit), else track the largest flight.
    fn cwnd_validate(&mut self, limited_now: bool) {
        if self.snd_una >= self.cwnd_usage_seq || limited_now || (!self.cwnd_limited && self.bif > self.max_bif) {
            self.cwnd_limited = limited_now;
            self.max_bif = self.bif;
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    /// Linux `tcp_slow_start_after_idle_check`: new data to send, nothing in flight, and no
    /// data sent for longer than the RTO: the controller restarts its window, once per
    /// idle period. Whether it restarted the window now.
    fn restart_after_idle(&mut self, now: Time) -> bool {
        if !self.cfg.slow_start_after_idle || self.snd_una != self.snd_nxt {
            return false;
        }
        let Some(last) = self.last_data_sent else { return false };
        let (idle, rto) = (now.since(last), self.rto());
        if idle > rto && self.restarted_after != Some(last) {
            self.restarted_after = Some(last);
            self.cc.on_idle_restart(now, idle, rto);
            self.idle_restarts += 1;
            return true;
        }
        false
    }

    /// What [`Endpoint::poll_timeout`] answers after a poll that had nothing to send for
    /// the reason `wait`.
    #[inline]
    fn timeout_after(&self, wait: Wait) -> Option<Time> {
        let timeout = match wait {
            Wait::Ask => return self.poll_timeout(),
            Wait::Recovery => self.recovery_timeout(),
            Wait::Pacing => earliest(self.recovery_timeout(), Some(self.pace_next)),
        };
        debug_assert_eq!(timeout, self.poll_timeout(), "the timer known from the poll");
        timeout
    }

    /// The earliest of the retransmission, loss-probe and reordering timers.
    fn recovery_timeout(&self) -> Option<Time> {
        earliest(earliest(self.rto_at, self.tlp_at), self.reo_at)
    }

    /// [`Endpoint::poll_transmit`] or [`Endpoint::poll_transmit_or_timeout`], as `A`
    /// answers: the latter with the timer from what the poll found out when there is
    /// nothing to send now ([`TcpSender::timeout_after`]).
    #[inline(always)]
    fn next_transmit<A: Answer>(&mut self, now: Time) -> A {
        if self.state == SndState::SynSent {
            if !self.syn_pending {
                return A::wait(self, Wait::Ask);
            }
            self.syn_pending = false;
            self.syn_sent += 1;
            self.syn_ecn_flags = self.syn_sent <= self.cfg.ecn_syn_attempts;
            let mut flags = TcpFlags::SYN;
            if self.syn_ecn_flags {
                match self.requested {
                    EcnMode::Off => {}
                    EcnMode::Classic => flags = flags | TcpFlags::ECE | TcpFlags::CWR,
                    EcnMode::Accurate { .. } => flags = flags | TcpFlags::AE | TcpFlags::ECE | TcpFlags::CWR,
                }
            }
            self.syn_at = Some(now + self.syn_rto);
            self.sent_packets += 1;
            self.sent_bytes += SYN_SIZE as u64;
            return A::send(Transmit {
                header: TcpSegment {
                    seq: 0,
                    flags,
                    ts_val: ts_encode(now),
                    wnd: u32::MAX,
                    ..TcpSegment::default()
                },
                size: SYN_SIZE,
                ecn: Ecn::NotEct,
            });
        }
        if self.ack_pending {
            self.ack_pending = false;
            let mut flags = TcpFlags::ACK;
            if self.is_accecn() {
                // RFC 9768 §3.2.2.1: the ACK of the SYN-ACK feeds back its IP-ECN field.
                flags = flags.with_ace(handshake_ace(self.synack_ecn));
            }
            self.sent_packets += 1;
            self.sent_bytes += ACK_SIZE as u64;
            let ecn = self.ack_ecn();
            self.val.on_send(ecn, 0);
            return A::send(Transmit {
                header: TcpSegment {
                    seq: self.snd_nxt,
                    ack: 1,
                    flags,
                    ts_val: ts_encode(now),
                    ts_ecr: self.ts_recent,
                    wnd: u32::MAX,
                    ..TcpSegment::default()
                },
                size: ACK_SIZE,
                ecn,
            });
        }
        if self.tlp_pending {
            self.tlp_pending = false;
            if let Some(t) = self.send_probe(now) {
                return A::send(t);
            }
        }
        let lost = self.next_lost();
        let len = match lost {
            Some(abs) => self.segs[self.idx(abs)].len,
            None => self.new_data_len(),
        };
        // Without a lost segment, `lost_pending` is 0 now (`next_lost`), so that
        // `poll_timeout` asks `new_data_len`, which gives `len` again unless the window
        // was restarted; with one it asks about a whole MSS.
        let known = lost.is_none();
        if len == 0 {
            return A::wait(self, if known { Wait::Recovery } else { Wait::Ask });
        }
        // New data only (`&&` leaves the call out for a retransmission): the window
        // restarts after an idle period.
        let known = known && !self.restart_after_idle(now);
        if !self.cwnd_allows(len) {
            self.cwnd_validate(true);
            self.burst_left = 0;
            return A::wait(self, if known { Wait::Recovery } else { Wait::Ask });
        }
        if self.pacing_rate().is_some() && self.pace_next > now && !self.in_burst(now) {
            if self.cfg.paced_is_cwnd_limited {
                self.cwnd_validate(true);
            }
            return A::wait(self, if known { Wait::Pacing } else { Wait::Ask });
        }
        let t = match lost {
            Some(abs) => self.retransmit(now, abs),
            None => self.send_new(now, len),
        };
        self.cwnd_validate(self.bif + self.mss_now() as u64 > self.cc.cwnd());
        self.arm_tlp(now);
        A::send(t)
    }

    fn finished(&self) -> bool {
        self.state == SndState::Established
            && self.app_limit != u64::MAX
            && self.snd_una >= self.app_limit
            && (!self.persistent || self.closed)
    }
}

/// The earlier of two optional deadlines.
#[inline]
fn earliest(a: Option<Time>, b: Option<Time>) -> Option<Time> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// What [`TcpSender::next_transmit`] answers: [`Endpoint::poll_transmit`]'s or
/// [`Endpoint::poll_transmit_or_timeout`]'s type, each built where it is returned.
trait Answer {
    fn send(t: Transmit<TcpSegment>) -> Self;
    fn wait(sender: &TcpSender, why: Wait) -> Self;
}

impl Answer for Option<Transmit<TcpSegment>> {
    #[inline(always)]
    fn send(t: Transmit<TcpSegment>) -> Self {
        Some(t)
    }
    #[inline(always)]
    fn wait(_: &TcpSender, _: Wait) -> Self {
        None
    }
}

impl Answer for Result<Transmit<TcpSegment>, Option<Time>> {
    #[inline(always)]
    fn send(t: Transmit<TcpSegment>) -> Self {
        Ok(t)
    }
    #[inline(always)]
    fn wait(sender: &TcpSender, why: Wait) -> Self {
        Err(sender.timeout_after(why))
    }
}

/// Why [`TcpSender::next_transmit`] has nothing to send now, as far as that tells what
/// [`Endpoint::poll_timeout`] answers next.
enum Wait {
    /// It does not tell: ask.
    Ask,
    /// The earliest recovery timer ([`TcpSender::recovery_timeout`]): no new data, or the
    /// window is full.
    Recovery,
    /// That, or the pacing release if sooner: the window allows the next segment.
    Pacing,
}

impl Endpoint for TcpSender {
    type Header = TcpSegment;

    fn handle_packet(&mut self, now: Time, h: &TcpSegment, _size: u32, ecn: Ecn) {
        self.received_packets += 1;
        if h.flags.contains(TcpFlags::SYN) {
            if h.flags.contains(TcpFlags::ACK) {
                self.on_synack(now, h, ecn);
            }
            return;
        }
        if self.state != SndState::Established || !h.flags.contains(TcpFlags::ACK) {
            return;
        }
        if self.is_accecn() && ecn == Ecn::Ce {
            // RFC 9768 §3.2.2.2: r.cep counts every CE packet, control packets included.
            self.r_cep = self.r_cep.wrapping_add(1);
        }
        self.on_ack(now, h);
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit<TcpSegment>> {
        self.next_transmit(now)
    }

    fn poll_transmit_or_timeout(&mut self, now: Time) -> Result<Transmit<TcpSegment>, Option<Time>> {
        self.next_transmit(now)
    }

    fn poll_timeout(&self) -> Option<Time> {
        if self.state == SndState::SynSent {
            return self.syn_at;
        }
        let t = self.recovery_timeout();
        if self.pacing_rate().is_some() {
            let len = if self.lost_pending > 0 {
                self.mss_now()
            } else {
                self.new_data_len()
            };
            if len > 0 && self.cwnd_allows(len) {
                return earliest(t, Some(self.pace_next));
            }
        }
        t
    }

    fn handle_timeout(&mut self, now: Time) {
        if self.state == SndState::SynSent {
            if self.syn_at.is_some_and(|t| t <= now) {
                // RFC 6298 §5.5 applied to the SYN; Karn: the SYN RTT is then taken from
                // timestamps, which are unambiguous.
                self.syn_at = None;
                self.syn_pending = true;
                self.syn_rto = (self.syn_rto * 2).min(self.cfg.max_rto);
            }
            return;
        }
        if self.reo_at.is_some_and(|t| t <= now) {
            self.reo_at = None;
            if self.rack_detect(now) > 0 {
                self.enter_recovery_if_open(now);
            }
        }
        let tlp_due = self.tlp_at.is_some_and(|t| t <= now)
            && self.tlp_end.is_none()
            && self.bif > 0
            && matches!(self.ca, CaState::Open | CaState::Cwr);
        if self.tlp_at.is_some_and(|t| t <= now) {
            self.tlp_at = None;
        }
        if tlp_due {
            // The probe goes first; sending it re-arms the RTO (RFC 8985 §7.3).
            self.tlp_pending = true;
        } else if self.rto_at.is_some_and(|t| t <= now) {
            self.on_rto(now);
        }
    }

    fn close(&mut self, _now: Time) {
        self.closed = true;
        self.app_limit = self.app_limit.min(self.snd_nxt);
    }

    fn stats(&self) -> EndpointStats {
        EndpointStats {
            sent_packets: self.sent_packets,
            sent_bytes: self.sent_bytes,
            retransmits: self.retransmits,
            lost_packets: self.lost_packets,
            delivered_bytes: self.snd_una.saturating_sub(1),
            received_packets: self.received_packets,
            ce_packets: self.ce_packets,
            cwnd: self.cc.cwnd(),
            srtt: self.rtt.srtt().unwrap_or(Dur::ZERO),
            pacing_rate: self.pacing_rate(),
            alpha: self.cc.info().alpha,
            ecn_mode: self.mode.name(),
            congestion_events: self.congestion_events,
            finished: self.finished(),
            ecn_validation: self.validation,
        }
    }

    fn take_rtt_sample(&mut self) -> Option<Dur> {
        self.last_rtt.take()
    }
}

/// A pacing rate [`Cc`] keeps: the epoch and RTT it was asked with, the flight if the
/// controller read it ([`CongestionControl::pacing_reads_flight`]), and the rate.
type PacingKept = (u64, Dur, Option<u64>, Option<Rate>);

/// The congestion controller, with its pacing rate, burst size, window and segment size kept
/// until it may have changed: the sender asks for them several times per segment (to send,
/// to pace, for the next wake-up), each a call through the trait object, and Prague's rate
/// takes some arithmetic. Any mutable access to the controller
/// ([`DerefMut`](std::ops::DerefMut)) forgets them; the rate is also keyed by the RTT it was
/// asked with, and by the flight if the controller reads it. The values are the
/// controller's own, unchanged.
struct Cc {
    inner: Box<dyn CongestionControl>,
    /// Counts mutable accesses.
    epoch: u64,
    /// (epoch, srtt, bytes in flight if read) → pacing rate.
    pacing: std::cell::Cell<Option<PacingKept>>,
    /// epoch → TSO segments.
    tso: std::cell::Cell<Option<(u64, Option<u32>)>>,
    /// epoch → window and segment size, asked for several times per segment sent.
    window: std::cell::Cell<Option<(u64, u64, Option<u32>)>>,
}

impl Cc {
    fn new(inner: Box<dyn CongestionControl>) -> Cc {
        Cc {
            inner,
            epoch: 0,
            pacing: Default::default(),
            tso: Default::default(),
            window: Default::default(),
        }
    }

    /// The controller's [`CongestionControl::cwnd`], kept for the epoch.
    #[inline]
    fn cwnd(&self) -> u64 {
        match self.window.get() {
            Some((e, cwnd, _)) if e == self.epoch => cwnd,
            _ => self.ask_window().0,
        }
    }

    /// The controller's [`CongestionControl::mss`], kept for the epoch.
    #[inline]
    fn mss(&self) -> Option<u32> {
        match self.window.get() {
            Some((e, _, mss)) if e == self.epoch => mss,
            _ => self.ask_window().1,
        }
    }

    #[inline(never)]
    fn ask_window(&self) -> (u64, Option<u32>) {
        let (cwnd, mss) = (self.inner.cwnd(), self.inner.mss());
        self.window.set(Some((self.epoch, cwnd, mss)));
        (cwnd, mss)
    }

    #[inline]
    fn pacing_rate(&self, srtt: Dur, bytes_in_flight: u64) -> Option<Rate> {
        match self.pacing.get() {
            Some((e, r, b, rate)) if e == self.epoch && r == srtt && b.is_none_or(|b| b == bytes_in_flight) => rate,
            _ => self.ask_pacing_rate(srtt, bytes_in_flight),
        }
    }

    /// The pacing rate from the controller, kept; with the burst size, unless kept for this
    /// epoch: a sender that paces asks for both after each change, and Prague's come from
    /// one rate. Out of line, so that the kept rate's test inlines where it is asked.
    #[inline(never)]
    fn ask_pacing_rate(&self, srtt: Dur, bytes_in_flight: u64) -> Option<Rate> {
        let rate = match self.tso.get() {
            Some((e, _)) if e == self.epoch => self.inner.pacing_rate(srtt, bytes_in_flight),
            _ => {
                let (rate, tso) = self.inner.pacing_and_tso_segs(srtt, bytes_in_flight);
                self.tso.set(Some((self.epoch, tso)));
                rate
            }
        };
        let flight = self.inner.pacing_reads_flight().then_some(bytes_in_flight);
        self.pacing.set(Some((self.epoch, srtt, flight, rate)));
        rate
    }

    fn tso_segs(&self) -> Option<u32> {
        match self.tso.get() {
            Some((e, n)) if e == self.epoch => n,
            _ => {
                let n = self.inner.tso_segs();
                self.tso.set(Some((self.epoch, n)));
                n
            }
        }
    }
}

impl std::ops::Deref for Cc {
    type Target = dyn CongestionControl;
    fn deref(&self) -> &Self::Target {
        &*self.inner
    }
}

impl std::ops::DerefMut for Cc {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.epoch += 1;
        &mut *self.inner
    }
}

impl std::fmt::Debug for Cc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}
