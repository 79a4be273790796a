//! What the sender does with the receiver's segments: the SYN-ACK, which completes the
//! handshake and settles the ECN mode (RFC 3168 §6.1.1, RFC 9768 §3.1.2–3.1.5, §3.2.2.1),
//! and ACKs: the cumulative and SACK scoreboard update (RFC 2018, RFC 6675 §5), RACK's most
//! recently delivered segment (RFC 8985 §6.2), RTT samples (RFC 6298 §3 with Karn's rule,
//! RFC 7323 §4.1), ECE or AccECN feedback decoding (RFC 3168 §6.1.2, RFC 9768 §3.2.2),
//! leaving recovery, and the controller's ECN and ACK hooks.

use l4s_cc::{AckSample, EcnMode};
use l4s_core::{Dur, Ecn, Time};

use super::recovery::rack_sent_after;
use super::{CaState, Seg, SndState, TcpSender, LOST, RETRANS, SACKED};
use crate::endpoint::EcnFailure;
use crate::tcp::accecn::{
    ace_delta, ce_pkts_from_option, handshake_ace_decode, safe_ace_delta, ACCECN_CEP_INIT, ACCECN_FIELD_MASK,
};
use crate::tcp::segment::{ts_decode, SackBlock, TcpFlags, TcpSegment};

impl TcpSender {
    pub(super) fn on_synack(&mut self, now: Time, h: &TcpSegment, ecn: Ecn) {
        if h.ack != 1 {
            return;
        }
        if self.state == SndState::Established {
            // Our ACK of the SYN-ACK was lost: repeat it.
            self.ack_pending = true;
            return;
        }
        if let Some(t) = ts_decode(h.ts_ecr).filter(|t| *t <= now) {
            let r = now - t;
            self.rtt.on_sample(r);
            self.last_rtt = Some(r);
        }
        self.ts_recent = h.ts_val;
        self.snd_wnd = h.wnd as u64;
        let ace = h.flags.ace();
        self.mode = match self.requested {
            EcnMode::Accurate { .. } if self.syn_ecn_flags => match ace {
                0b000 | 0b111 => EcnMode::Off,
                0b001 => EcnMode::Classic,
                _ => {
                    // RFC 9768 §3.1.5 / §3.2.2.2: our SYN left Not-ECT; any other
                    // reported value is an invalid transition: keep feedback, send Not-ECT.
                    if handshake_ace_decode(ace).is_some_and(|e| e != Ecn::NotEct) {
                        self.ect_disabled = true;
                        // Nothing will be sent ECT, so nothing is left to validate; CE is
                        // still acted upon (RFC 9768 §3.2.2.2).
                        self.record_failure(now, EcnFailure::Remarked);
                    }
                    self.requested
                }
            },
            EcnMode::Classic if self.syn_ecn_flags && ace == 0b001 => EcnMode::Classic,
            _ => EcnMode::Off,
        };
        if self.is_accecn() && ecn == Ecn::Ce {
            // RFC 9768 §3.2.2.1: a CE-marked SYN-ACK raises r.cep from 5 to 6.
            self.r_cep = ACCECN_CEP_INIT + 1;
        }
        self.synack_ecn = ecn;
        self.cc.on_ecn_negotiated(self.mode);
        self.state = SndState::Established;
        self.syn_at = None;
        self.syn_pending = false;
        self.ack_pending = true;
        // The first data segments go unpaced (`pace_after_send`); the schedule then starts
        // with the credit of a sender that waited since time 0.
        self.pace_next = Time::ZERO;
    }

    pub(super) fn on_ack(&mut self, now: Time, h: &TcpSegment) {
        let ack = h.ack;
        // RFC 9293 §3.10.7.4: ignore ACKs of data not yet sent and old (stale) ACKs.
        if ack > self.snd_nxt || ack < self.snd_una {
            return;
        }
        self.snd_wnd = h.wnd as u64;
        if h.ts_val != 0 {
            self.ts_recent = h.ts_val;
        }
        let ts_ecr = ts_decode(h.ts_ecr);
        let prior_una = self.snd_una;
        let min_rtt = self.rtt.min_rtt().unwrap_or(Dur::ZERO);
        let mut acked_pkts = 0u64;
        let mut acked_bytes = 0u64;
        let (mut acked_ect_pkts, mut acked_ect_bytes) = (0u64, 0u64);
        // Most recently sent delivered segment (RACK_update, RFC 8985 §6.2 step 2).
        let mut best: Option<(Time, u64)> = None;
        let mut reorder = false;
        let fack = self.rack_fack;
        // Oldest newly delivered never-retransmitted segment (Karn), for the RTT sample.
        let mut oldest: Option<Time> = None;
        // `sacked`: delivered by a SACK block. With RFC 7323 receivers the echo on an ACK
        // carrying SACK for out-of-order data is that of the last in-order segment, so the
        // timestamp test of RFC 8985 §6.2 step 2 applies only to cumulative ACKs (deviation).
        let mut consider = |s: &Seg, sacked: bool, best: &mut Option<(Time, u64)>, oldest: &mut Option<Time>| {
            if s.flags & RETRANS != 0 {
                if now - s.xmit < min_rtt || (!sacked && ts_ecr.is_none_or(|e| e < s.xmit)) {
                    return;
                }
            } else {
                if s.end() < fack {
                    reorder = true;
                }
                if oldest.is_none_or(|o| s.xmit < o) {
                    *oldest = Some(s.xmit);
                }
            }
            if best.is_none_or(|(t, e)| rack_sent_after(s.xmit, s.end(), t, e)) {
                *best = Some((s.xmit, s.end()));
            }
        };

        // Cumulative acknowledgement.
        while let Some(s) = self.segs.front() {
            if s.end() > ack {
                break;
            }
            let s = *s;
            self.segs.pop_front();
            self.base += 1;
            if s.flags & SACKED != 0 {
                self.sacked_cnt = self.sacked_cnt.saturating_sub(1);
                continue;
            }
            if s.flags & LOST != 0 {
                self.lost_pending = self.lost_pending.saturating_sub(1);
            } else {
                self.bif = self.bif.saturating_sub(s.len as u64);
            }
            acked_pkts += 1;
            acked_bytes += s.len as u64;
            if matches!(s.ecn, Ecn::Ect0 | Ecn::Ect1) {
                acked_ect_pkts += 1;
                acked_ect_bytes += s.len as u64;
            }
            consider(&s, false, &mut best, &mut oldest);
        }
        self.snd_una = ack;

        // Selective acknowledgements (RFC 2018, RFC 6675 §5 scoreboard update).
        let mut new_cache = [SackBlock::default(); 3];
        let mut new_cache_n = 0;
        for b in h.sack_blocks() {
            let (s, e) = (b.start.max(self.snd_una), b.end.min(self.snd_nxt));
            if s >= e {
                continue;
            }
            new_cache[new_cache_n] = SackBlock { start: s, end: e };
            new_cache_n += 1;
            // Pieces of [s, e) not covered by the previous ACK's blocks.
            let mut cached = [(0u64, 0u64); 3];
            let mut nc = 0;
            for c in &self.sack_cache[..self.sack_cache_n] {
                if c.start < e && c.end > s {
                    cached[nc] = (c.start.max(s), c.end.min(e));
                    nc += 1;
                }
            }
            cached[..nc].sort_unstable();
            let mut pieces = [(0u64, 0u64); 4];
            let mut pos = s;
            for (k, c) in cached[..nc].iter().enumerate() {
                pieces[k] = (pos, c.0);
                pos = pos.max(c.1);
            }
            pieces[nc] = (pos, e);
            for &(ps, pe) in &pieces[..=nc] {
                if ps >= pe {
                    continue;
                }
                let mut i = self.segs.partition_point(|x| x.end() <= ps);
                while i < self.segs.len() {
                    let sg = self.segs[i];
                    if sg.seq >= pe {
                        break;
                    }
                    if sg.seq >= s && sg.end() <= e && sg.flags & SACKED == 0 {
                        if sg.flags & LOST != 0 {
                            self.lost_pending = self.lost_pending.saturating_sub(1);
                        } else {
                            self.bif = self.bif.saturating_sub(sg.len as u64);
                        }
                        self.segs[i].flags = (sg.flags | SACKED) & !LOST;
                        self.sacked_cnt += 1;
                        acked_pkts += 1;
                        acked_bytes += sg.len as u64;
                        if matches!(sg.ecn, Ecn::Ect0 | Ecn::Ect1) {
                            acked_ect_pkts += 1;
                            acked_ect_bytes += sg.len as u64;
                        }
                        consider(&sg, true, &mut best, &mut oldest);
                    }
                    i += 1;
                }
            }
        }
        self.sack_cache = new_cache;
        self.sack_cache_n = new_cache_n;
        if reorder {
            self.reordering_seen = true;
        }
        if let Some((t, e)) = best {
            if !self.rack_valid || rack_sent_after(t, e, self.rack_xmit, self.rack_end) {
                self.rack_valid = true;
                self.rack_xmit = t;
                self.rack_end = e;
                self.rack_rtt = now - t;
            }
            self.rack_fack = self.rack_fack.max(e);
        }

        // RTT sample (RFC 6298 §3, Karn): from the oldest newly delivered segment that was
        // never retransmitted, cumulatively or by SACK (as Linux `tcp_ack_update_rtt`);
        // otherwise from the timestamp echo of an ACK of new data (RFC 7323 §4.1).
        let mut rtt_sample = oldest.map(|t| now - t);
        if rtt_sample.is_none() && ack > prior_una {
            rtt_sample = ts_ecr.filter(|t| *t <= now).map(|t| now - t);
        }
        if let Some(r) = rtt_sample {
            self.rtt.on_sample(r);
            self.last_rtt = Some(r);
        }
        if ack > prior_una {
            self.backoff = 0;
        }

        // ECN feedback.
        let mss = self.mss_now();
        let (mut ce_pkts, mut ce_bytes, mut ece) = (0u64, 0u64, false);
        match self.mode {
            EcnMode::Classic => ece = h.flags.contains(TcpFlags::ECE),
            EcnMode::Accurate { .. } => {
                let ace = h.flags.ace();
                if !self.ace_checked {
                    self.ace_checked = true;
                    if ace == 0 {
                        // RFC 9768 §3.2.2.4: a zeroed ACE on the first ACK: ECN is broken on
                        // the path; send Not-ECT and ignore CE from now on.
                        self.ect_disabled = true;
                        self.mode = EcnMode::Off;
                        self.cc.on_ecn_negotiated(EcnMode::Off);
                        self.record_failure(now, EcnFailure::ImpossibleFeedback);
                    }
                }
                if self.is_accecn() {
                    let delta = ace_delta(ace, self.s_cep);
                    let mut fb = None;
                    let mut backwards = false;
                    if let Some(o) = h.accecn {
                        let d = |new: u32, old: u32| (new.wrapping_sub(old) & ACCECN_FIELD_MASK) as u64;
                        let (dceb, de0b, de1b) = (d(o.ceb, self.s_ceb), d(o.e0b, self.s_e0b), d(o.e1b, self.s_e1b));
                        // A delta of 2^23 or more (mod 2^24) is a counter going backwards: a
                        // superseded (reordered) ACK, whose feedback is skipped, or, on an ACK
                        // that advances snd_una (so cannot be older than one already
                        // processed), broken feedback.
                        if dceb.max(de0b).max(de1b) >= 1 << 23 {
                            backwards = ack > prior_una;
                        } else {
                            self.s_ceb = o.ceb & ACCECN_FIELD_MASK;
                            self.s_e0b = o.e0b & ACCECN_FIELD_MASK;
                            self.s_e1b = o.e1b & ACCECN_FIELD_MASK;
                            ce_pkts = ce_pkts_from_option(delta, dceb, mss);
                            ce_bytes = dceb;
                            fb = Some((de0b, de1b, dceb));
                        }
                    } else {
                        ce_pkts = safe_ace_delta(delta, acked_pkts);
                        ce_bytes = ce_pkts.saturating_mul(mss as u64);
                    }
                    self.s_cep = self.s_cep.wrapping_add(ce_pkts as u32);
                    if backwards {
                        if self.validating() {
                            self.fail_validation(now, EcnFailure::ImpossibleFeedback);
                        }
                    } else {
                        // An ACK that newly delivers two or more segments left the receiver when
                        // the newest of them arrived (RFC 5681 §4.2: at least every second
                        // segment; RFC 9768 §3.2.2.5.1: every second CE), so the newest one's
                        // RTT holds no delayed-ACK wait: path delay plus queueing.
                        let prompt_rtt = best.filter(|_| acked_pkts >= 2).map(|(t, _)| now - t);
                        self.validate_ecn(now, prompt_rtt, fb, ce_pkts, acked_ect_bytes, acked_ect_pkts);
                    }
                }
            }
            EcnMode::Off => {}
        }
        self.ce_packets += ce_pkts;
        if self.ce_ignored {
            // ECN validation failed: CE feedback is counted but no longer acted upon.
            ce_pkts = 0;
            ce_bytes = 0;
        }
        self.delivered_pkts += acked_pkts;
        self.delivered_ce_pkts += if ece { acked_pkts } else { ce_pkts };

        // Retransmission timer (RFC 6298 §5.2, §5.3).
        if self.snd_una >= self.snd_nxt {
            self.rto_at = None;
        } else if ack > prior_una {
            self.rto_at = Some(now + self.rto());
        }
        if self.tlp_end.is_some_and(|e| self.snd_una >= e) {
            self.tlp_end = None;
        }

        // Leave Recovery/Loss/CWR once the recovery point is acknowledged.
        let exit = match self.ca {
            CaState::Recovery | CaState::Loss => self.snd_una >= self.high_seq,
            CaState::Cwr => self.snd_una >= self.cwr_seq,
            CaState::Open => false,
        };
        if exit {
            self.ca = CaState::Open;
            self.cc.on_recovery_exit(now);
        }

        // Loss detection.
        if self.rack_detect(now) > 0 {
            self.enter_recovery_if_open(now);
        }

        let cwnd = self.cc.cwnd();
        let mut sample = AckSample {
            now,
            acked_bytes,
            acked_pkts,
            ce_pkts,
            ce_bytes,
            ece,
            rtt: rtt_sample,
            srtt: self.rtt.srtt().unwrap_or(Dur::ZERO),
            min_rtt: self.rtt.min_rtt().unwrap_or(Dur::ZERO),
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            bytes_in_flight: self.bif,
            delivered_pkts: self.delivered_pkts,
            delivered_ce_pkts: self.delivered_ce_pkts,
            mss,
            cwnd_limited: self.cwnd_limited || (self.cc.in_slow_start() && cwnd < 2 * self.max_bif),
            // Only fast recovery holds the window. The Loss state after an RTO is not a
            // reduction in progress: the RTO ended any RFC 6675 recovery (RFC 6675 §5.1),
            // cwnd was set to the loss window, and the sender "uses the slow start
            // algorithm to increase the window from 1 full-sized segment to the new value
            // of ssthresh" (RFC 5681 §3.1) while it retransmits what the RTO marked lost.
            // Linux likewise grows cwnd in TCP_CA_Loss: `tcp_in_cwnd_reduction` covers only
            // TCP_CA_CWR and TCP_CA_Recovery, so `tcp_cong_control` calls `tcp_cong_avoid`.
            in_recovery: self.ca == CaState::Recovery,
            in_cwr: self.ca == CaState::Cwr,
            paced: self.cc.reads_paced() && self.pacing_rate().is_some(),
        };

        // ECN congestion response, at most once per round trip (RFC 3168 §6.1.2, with a
        // CWR state as in Linux; RFC 9768 §1 leaves the response to congestion control).
        let ecn_signal = match self.mode {
            // Ignore an ECE that may predate our CWR (ACKs of data the receiver got before it
            // saw the CWR flag).
            EcnMode::Classic => ece && !self.send_cwr && ack >= self.cwr_sent_end,
            EcnMode::Accurate { .. } => ce_pkts > 0,
            EcnMode::Off => false,
        };
        if ecn_signal && self.ca == CaState::Open {
            self.ca = CaState::Cwr;
            self.cwr_seq = self.snd_nxt;
            self.congestion_events += 1;
            sample.in_cwr = true;
            self.cc.on_ecn_congestion(&sample);
            if self.mode == EcnMode::Classic {
                self.send_cwr = true;
            }
        }
        if acked_bytes > 0 || ce_pkts > 0 || ece {
            self.cc.on_ack(&sample);
        }
        self.arm_tlp(now);
    }
}
