//! [`TcpReceiver`], the receiving side of a connection: it answers the SYN and chooses the
//! ECN feedback mode (RFC 3168 §6.1.1, RFC 9768 §3.1), keeps out-of-order ranges,
//! acknowledges with delayed ACKs (RFC 5681 §4.2), SACK blocks (RFC 2018 §4) and timestamp
//! echo (RFC 7323 §4.3), and feeds ECN back: ECE (RFC 3168 §6.1.3) or the AccECN counters
//! in ACE and the option, with change- and increment-triggered ACKs (RFC 9768 §3.2).

use std::collections::VecDeque;

use l4s_core::{Ecn, Time};

use super::accecn::{
    handshake_ace, AccEcnOption, ACCECN_CEP_INIT, ACCECN_EB_INIT, ACCECN_FIELD_MASK, ACCECN_OPTION_BYTES,
};
use super::config::TcpReceiverConfig;
use super::segment::{ts_encode, SackBlock, TcpFlags, TcpSegment, ACK_SIZE, SYN_SIZE};
use crate::endpoint::{Endpoint, EndpointStats, Transmit};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RcvState {
    Listen,
    SynRcvd,
    Established,
}

/// Out-of-order ranges the receiver keeps; segments that would create more are dropped
/// (bounds memory against a hostile peer).
const MAX_OOO_RANGES: usize = 4096;

/// ECN feedback mode agreed by the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RcvEcn {
    Off,
    Classic,
    Accurate,
}

impl RcvEcn {
    pub fn name(self) -> &'static str {
        match self {
            RcvEcn::Off => "none",
            RcvEcn::Classic => "classic",
            RcvEcn::Accurate => "accecn",
        }
    }
}

/// The receiving side of a connection: answers the SYN, acknowledges data with delayed
/// ACKs (RFC 5681 §4.2), SACK (RFC 2018), timestamps (RFC 7323) and ECN feedback
/// (RFC 3168 §6.1.3 ECE, or RFC 9768 AccECN counters).
#[derive(Debug)]
pub struct TcpReceiver {
    cfg: TcpReceiverConfig,
    state: RcvState,
    mode: RcvEcn,
    synack_pending: bool,
    synack_flags: TcpFlags,
    irs: u64,
    rcv_nxt: u64,
    ooo: VecDeque<(u64, u64)>,
    sack_hist: [u64; 4],
    sack_hist_n: usize,
    ack_pending: bool,
    ack_at: Option<Time>,
    unacked_segs: u32,
    ce_unacked: u32,
    last_ce: bool,
    ece_pending: bool,
    r_cep: u32,
    r_ceb: u32,
    r_e0b: u32,
    r_e1b: u32,
    ts_recent: u64,
    last_ack_sent: u64,
    sent_packets: u64,
    sent_bytes: u64,
    received_packets: u64,
    ce_packets: u64,
    acks_sent: u64,
}

impl TcpReceiver {
    pub fn new(cfg: TcpReceiverConfig) -> TcpReceiver {
        TcpReceiver {
            cfg,
            state: RcvState::Listen,
            mode: RcvEcn::Off,
            synack_pending: false,
            synack_flags: TcpFlags::NONE,
            irs: 0,
            rcv_nxt: 0,
            ooo: VecDeque::new(),
            sack_hist: [0; 4],
            sack_hist_n: 0,
            ack_pending: false,
            ack_at: None,
            unacked_segs: 0,
            ce_unacked: 0,
            last_ce: false,
            ece_pending: false,
            r_cep: ACCECN_CEP_INIT,
            r_ceb: 0,
            r_e0b: ACCECN_EB_INIT,
            r_e1b: ACCECN_EB_INIT,
            ts_recent: 0,
            last_ack_sent: 0,
            sent_packets: 0,
            sent_bytes: 0,
            received_packets: 0,
            ce_packets: 0,
            acks_sent: 0,
        }
    }

    pub fn ecn_mode(&self) -> RcvEcn {
        self.mode
    }
    /// AccECN receiver counters `(r.cep, r.e0b, r.e1b, r.ceb)` (RFC 9768 §3.2.1).
    pub fn accecn_counters(&self) -> (u32, u32, u32, u32) {
        (self.r_cep, self.r_e0b, self.r_e1b, self.r_ceb)
    }
    /// Next byte expected.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    /// Payload bytes delivered in order.
    pub fn delivered_bytes(&self) -> u64 {
        if self.state == RcvState::Listen {
            0
        } else {
            self.rcv_nxt.saturating_sub(self.irs.saturating_add(1))
        }
    }
    /// RFC 3168: ECE is being echoed.
    pub fn ece_pending(&self) -> bool {
        self.ece_pending
    }
    /// ACKs sent (excluding the SYN-ACK).
    pub fn acks_sent(&self) -> u64 {
        self.acks_sent
    }

    /// RFC 9768 §3.1.1 / RFC 3168 §6.1.1: choose the feedback mode from the SYN's flags.
    fn negotiate(&mut self, syn: &TcpSegment, ecn: Ecn) {
        let ace = syn.flags.ace();
        self.mode = if ace & 0b100 != 0 && self.cfg.accecn {
            RcvEcn::Accurate
        } else if (ace == 0b111 || ace == 0b011) && self.cfg.ecn {
            RcvEcn::Classic
        } else {
            RcvEcn::Off
        };
        self.synack_flags = TcpFlags::SYN | TcpFlags::ACK;
        match self.mode {
            RcvEcn::Accurate => self.synack_flags = self.synack_flags.with_ace(handshake_ace(ecn)),
            RcvEcn::Classic => self.synack_flags = self.synack_flags | TcpFlags::ECE,
            RcvEcn::Off => {}
        }
    }

    fn insert_ooo(&mut self, s: u64, e: u64) {
        let i = self.ooo.partition_point(|r| r.1 < s);
        let mut j = i;
        let (mut ns, mut ne) = (s, e);
        while j < self.ooo.len() && self.ooo[j].0 <= ne {
            ns = ns.min(self.ooo[j].0);
            ne = ne.max(self.ooo[j].1);
            j += 1;
        }
        if j > i {
            self.ooo[i] = (ns, ne);
            self.ooo.drain(i + 1..j);
        } else {
            self.ooo.insert(i, (ns, ne));
        }
        // Remember the most recent arrival first (RFC 2018 §4).
        let n = self.sack_hist_n.min(3);
        self.sack_hist.copy_within(0..n, 1);
        self.sack_hist[0] = s;
        self.sack_hist_n = (self.sack_hist_n + 1).min(4);
    }

    fn ooo_block_of(&self, x: u64) -> Option<(u64, u64)> {
        let i = self.ooo.partition_point(|r| r.1 <= x);
        self.ooo.get(i).copied().filter(|r| r.0 <= x)
    }

    fn build_ack(&mut self, now: Time) -> Transmit<TcpSegment> {
        let mut h = TcpSegment {
            seq: 1,
            ack: self.rcv_nxt,
            flags: TcpFlags::ACK,
            ts_val: ts_encode(now),
            ts_ecr: self.ts_recent,
            wnd: self.cfg.rwnd.min(u32::MAX as u64) as u32,
            ..TcpSegment::default()
        };
        // SACK: blocks containing the most recent arrivals first, then the highest others.
        let mut n = 0usize;
        let mut push = |h: &mut TcpSegment, b: (u64, u64)| {
            if n < 3 && !h.sack[..n].iter().any(|x| x.start == b.0) {
                h.sack[n] = SackBlock { start: b.0, end: b.1 };
                n += 1;
            }
        };
        for k in 0..self.sack_hist_n {
            if let Some(b) = self.ooo_block_of(self.sack_hist[k]) {
                push(&mut h, b);
            }
        }
        for b in self.ooo.iter().rev().take(3) {
            push(&mut h, *b);
        }
        h.sack_count = n as u8;
        let mut size = ACK_SIZE;
        if n > 0 {
            size += (2 + 8 * n as u32).div_ceil(4) * 4;
        }
        match self.mode {
            RcvEcn::Classic => h.flags.set(TcpFlags::ECE, self.ece_pending),
            RcvEcn::Accurate => {
                h.flags = h.flags.with_ace((self.r_cep & 7) as u8);
                h.accecn = Some(AccEcnOption {
                    e0b: self.r_e0b & ACCECN_FIELD_MASK,
                    ceb: self.r_ceb & ACCECN_FIELD_MASK,
                    e1b: self.r_e1b & ACCECN_FIELD_MASK,
                });
                size += ACCECN_OPTION_BYTES;
            }
            RcvEcn::Off => {}
        }
        self.ack_pending = false;
        self.ack_at = None;
        self.unacked_segs = 0;
        self.ce_unacked = 0;
        self.last_ack_sent = self.rcv_nxt;
        self.sent_packets += 1;
        self.sent_bytes += size as u64;
        self.acks_sent += 1;
        Transmit {
            header: h,
            size,
            ecn: Ecn::NotEct,
        }
    }
}

impl Endpoint for TcpReceiver {
    type Header = TcpSegment;

    fn handle_packet(&mut self, now: Time, h: &TcpSegment, _size: u32, ecn: Ecn) {
        self.received_packets += 1;
        if ecn == Ecn::Ce {
            self.ce_packets += 1;
        }
        if h.flags.contains(TcpFlags::SYN) {
            if h.flags.contains(TcpFlags::ACK) {
                return;
            }
            if self.state == RcvState::Listen {
                self.negotiate(h, ecn);
                self.irs = h.seq;
                self.rcv_nxt = h.seq.saturating_add(1);
                self.last_ack_sent = self.rcv_nxt;
                self.state = RcvState::SynRcvd;
            }
            if self.state == RcvState::SynRcvd && h.seq == self.irs {
                self.ts_recent = h.ts_val;
                self.synack_pending = true;
            }
            return;
        }
        if self.state == RcvState::Listen || !h.flags.contains(TcpFlags::ACK) {
            return;
        }
        if self.state == RcvState::SynRcvd {
            self.state = RcvState::Established;
            self.synack_pending = false;
        }
        let len = h.len as u64;
        // ECN feedback state (counts every non-SYN packet, RFC 9768 §3.2.2.2).
        match self.mode {
            RcvEcn::Accurate => match ecn {
                Ecn::Ce => {
                    self.r_cep = self.r_cep.wrapping_add(1);
                    self.r_ceb = self.r_ceb.wrapping_add(h.len);
                }
                Ecn::Ect0 => self.r_e0b = self.r_e0b.wrapping_add(h.len),
                Ecn::Ect1 => self.r_e1b = self.r_e1b.wrapping_add(h.len),
                Ecn::NotEct => {}
            },
            RcvEcn::Classic => {
                // RFC 3168 §6.1.3: stop ECE on CWR, (re)start it on CE (CE wins if both).
                if len > 0 && h.flags.contains(TcpFlags::CWR) {
                    self.ece_pending = false;
                }
                if ecn == Ecn::Ce {
                    self.ece_pending = true;
                }
            }
            RcvEcn::Off => {}
        }
        if len == 0 {
            return;
        }
        // RFC 7323 §4.3: TS.Recent from the segment that starts at or before Last.ACK.sent.
        if h.ts_val != 0 && h.seq <= self.last_ack_sent {
            self.ts_recent = h.ts_val;
        }
        let end = h.seq.saturating_add(len);
        let mut immediate = !self.cfg.delayed_ack;
        if end <= self.rcv_nxt {
            // Duplicate: ACK at once (RFC 5681 §4.2).
            immediate = true;
        } else if h.seq <= self.rcv_nxt {
            let had_hole = !self.ooo.is_empty();
            self.rcv_nxt = end;
            while let Some(&(s, e)) = self.ooo.front() {
                if s > self.rcv_nxt {
                    break;
                }
                self.rcv_nxt = self.rcv_nxt.max(e);
                self.ooo.pop_front();
            }
            if had_hole {
                // Filling (part of) a hole: ACK at once (RFC 5681 §4.2).
                immediate = true;
            } else {
                self.unacked_segs += 1;
                if self.unacked_segs >= self.cfg.ack_every.max(1) {
                    immediate = true;
                }
            }
        } else if h.seq < self.rcv_nxt.saturating_add(self.cfg.rwnd) && self.ooo.len() < MAX_OOO_RANGES {
            // Out of order: ACK at once with SACK (RFC 5681 §4.2, RFC 2018 §4).
            self.insert_ooo(h.seq, end.min(self.rcv_nxt.saturating_add(self.cfg.rwnd)));
            immediate = true;
        } else {
            immediate = true;
        }
        if self.mode == RcvEcn::Accurate {
            // RFC 9768 §3.2.2.5.1: change- and increment-triggered ACKs.
            if ecn == Ecn::Ce {
                self.ce_unacked += 1;
                if (!self.last_ce && self.cfg.accecn_change_ack)
                    || self.ce_unacked >= self.cfg.accecn_ce_ack_n.clamp(1, 7)
                {
                    immediate = true;
                }
            }
            self.last_ce = ecn == Ecn::Ce;
        }
        if immediate {
            self.ack_pending = true;
        } else if self.ack_at.is_none() {
            self.ack_at = Some(now + self.cfg.ack_delay);
        }
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit<TcpSegment>> {
        if self.synack_pending {
            self.synack_pending = false;
            self.sent_packets += 1;
            self.sent_bytes += SYN_SIZE as u64;
            return Some(Transmit {
                header: TcpSegment {
                    seq: 0,
                    ack: self.rcv_nxt,
                    flags: self.synack_flags,
                    ts_val: ts_encode(now),
                    ts_ecr: self.ts_recent,
                    wnd: self.cfg.rwnd.min(u32::MAX as u64) as u32,
                    ..TcpSegment::default()
                },
                size: SYN_SIZE,
                ecn: Ecn::NotEct,
            });
        }
        if self.ack_pending && self.state == RcvState::Established {
            return Some(self.build_ack(now));
        }
        None
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.ack_at
    }

    fn handle_timeout(&mut self, now: Time) {
        if self.ack_at.is_some_and(|t| t <= now) {
            self.ack_at = None;
            self.ack_pending = true;
        }
    }

    fn stats(&self) -> EndpointStats {
        EndpointStats {
            sent_packets: self.sent_packets,
            sent_bytes: self.sent_bytes,
            delivered_bytes: self.delivered_bytes(),
            received_packets: self.received_packets,
            ce_packets: self.ce_packets,
            ecn_mode: self.mode.name(),
            ..EndpointStats::default()
        }
    }
}
