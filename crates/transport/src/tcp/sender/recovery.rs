//! Loss detection and the timers behind it: finding the next segment to retransmit, the
//! RACK reordering window and loss scan over the scoreboard (RFC 8985 §6.2), entering fast
//! recovery (RFC 6675 §5), tail loss probes (RFC 8985 §7.2–7.3) and the retransmission
//! timeout (RFC 6298 §5.4–5.6, RFC 5681 §3.1).

use l4s_core::{Dur, Time};

use super::{CaState, TcpSender, LOST, RETRANS, SACKED};
use crate::endpoint::Transmit;
use crate::tcp::segment::TcpSegment;

/// RACK_sent_after (RFC 8985 §6.2 step 2): whether the segment sent at `t1` ending at
/// `end1` was sent after the one sent at `t2` ending at `end2`. Segments sent at the same
/// time (one burst, one timestamp) are ordered by their end sequence number.
pub(super) fn rack_sent_after(t1: Time, end1: u64, t2: Time, end2: u64) -> bool {
    t1 > t2 || (t1 == t2 && end1 > end2)
}

impl TcpSender {
    pub(super) fn next_lost(&mut self) -> Option<u64> {
        if self.lost_pending == 0 {
            return None;
        }
        let end = self.end_idx();
        let mut i = self.retx_next.max(self.base);
        while i < end {
            if self.segs[self.idx(i)].flags & LOST != 0 {
                self.retx_next = i;
                return Some(i);
            }
            i += 1;
        }
        self.retx_next = end;
        self.lost_pending = 0;
        None
    }

    fn mark_lost(&mut self, abs: u64) -> bool {
        let i = self.idx(abs);
        let s = &mut self.segs[i];
        if s.flags & (SACKED | LOST) != 0 {
            return false;
        }
        s.flags |= LOST;
        self.bif = self.bif.saturating_sub(s.len as u64);
        self.lost_pending += 1;
        self.retx_next = self.retx_next.min(abs);
        self.lost_packets += 1;
        true
    }

    /// RACK reordering window (RFC 8985 §6.2 step 4, without the D-SACK multiplier):
    /// zero if no reordering was seen and we are in recovery or ≥ 3 segments are SACKed,
    /// else min_rtt/4 capped at SRTT.
    fn reo_wnd(&self) -> Dur {
        if !self.reordering_seen && (self.ca != CaState::Open && self.ca != CaState::Cwr || self.sacked_cnt >= 3) {
            return Dur::ZERO;
        }
        let m = self.rtt.min_rtt().unwrap_or(Dur::ZERO) / 4;
        m.min(self.rtt.srtt().unwrap_or(m))
    }

    /// RACK_detect_loss (RFC 8985 §6.2 step 5). Returns segments newly marked lost and
    /// arms the reordering timer for the earliest segment that may still be lost.
    pub(super) fn rack_detect(&mut self, now: Time) -> u64 {
        self.reo_at = None;
        if !self.rack_valid {
            return 0;
        }
        let reo = self.reo_wnd();
        let wait = self.rack_rtt + reo;
        let mut lost = 0;
        let mut timeout: Option<Time> = None;
        // First transmissions, in sequence = time order.
        let end = self.end_idx();
        let mut p = self.orig_ptr.max(self.base);
        while p < end {
            let s = self.segs[self.idx(p)];
            if s.flags & (SACKED | LOST | RETRANS) != 0 {
                p += 1;
                continue;
            }
            if !rack_sent_after(self.rack_xmit, self.rack_end, s.xmit, s.end()) {
                break;
            }
            let deadline = s.xmit + wait;
            if deadline <= now {
                if self.mark_lost(p) {
                    lost += 1;
                }
                p += 1;
            } else {
                timeout = Some(deadline);
                break;
            }
        }
        self.orig_ptr = p;
        // Retransmissions, in time order.
        while let Some(&(abs, xmit)) = self.retx_q.front() {
            if abs < self.base {
                self.retx_q.pop_front();
                continue;
            }
            let s = self.segs[self.idx(abs)];
            if s.xmit != xmit || s.flags & (SACKED | LOST) != 0 {
                self.retx_q.pop_front();
                continue;
            }
            if !rack_sent_after(self.rack_xmit, self.rack_end, s.xmit, s.end()) {
                break;
            }
            let deadline = s.xmit + wait;
            if deadline <= now {
                if self.mark_lost(abs) {
                    lost += 1;
                }
                self.retx_q.pop_front();
            } else {
                timeout = Some(timeout.map_or(deadline, |t| t.min(deadline)));
                break;
            }
        }
        self.reo_at = timeout;
        lost
    }

    pub(super) fn enter_recovery_if_open(&mut self, now: Time) {
        if matches!(self.ca, CaState::Open | CaState::Cwr) {
            self.ca = CaState::Recovery;
            self.high_seq = self.snd_nxt;
            self.congestion_events += 1;
            self.tlp_at = None;
            self.cc.on_loss(now, self.bif);
        }
    }

    /// RFC 8985 §7.2: schedule a probe timeout 2·SRTT after the last send or ACK.
    pub(super) fn arm_tlp(&mut self, now: Time) {
        self.tlp_at = None;
        if !self.cfg.tlp || self.tlp_end.is_some() || !matches!(self.ca, CaState::Open | CaState::Cwr) || self.bif == 0
        {
            return;
        }
        let Some(srtt) = self.rtt.srtt() else { return };
        let mut pto = srtt * 2;
        if self.bif <= self.mss_now() as u64 {
            pto = pto.max(srtt + srtt / 2 + self.cfg.tlp_delack);
        }
        pto = pto.max(Dur::from_millis(10));
        // Linux `tcp_schedule_loss_probe`: never later than the RTO would fire.
        let t = now + pto;
        self.tlp_at = Some(self.rto_at.map_or(t, |r| t.min(r)));
    }

    /// RFC 8985 §7.3: send one new segment if possible, else retransmit the highest
    /// unacknowledged segment; then re-arm the RTO.
    pub(super) fn send_probe(&mut self, now: Time) -> Option<Transmit<TcpSegment>> {
        let len = self.new_data_len();
        let t = if len > 0 {
            self.send_new(now, len)
        } else {
            let end = self.end_idx();
            let mut i = end;
            loop {
                if i == self.base {
                    return None;
                }
                i -= 1;
                if self.segs[self.idx(i)].flags & SACKED == 0 {
                    break;
                }
            }
            self.retransmit(now, i)
        };
        self.tlp_count += 1;
        self.tlp_end = Some(self.snd_nxt);
        self.rto_at = Some(now + self.rto());
        Some(t)
    }

    /// RFC 6298 §5.4–5.6 and RFC 5681 §3.1: back off, tell the controller, mark everything
    /// outstanding lost and retransmit from `snd_una` (go-back-N through the scoreboard).
    pub(super) fn on_rto(&mut self, now: Time) {
        self.rto_at = None;
        self.tlp_at = None;
        self.tlp_pending = false;
        self.tlp_end = None;
        self.reo_at = None;
        if self.snd_una >= self.snd_nxt {
            return;
        }
        self.rto_count += 1;
        self.backoff = (self.backoff + 1).min(30);
        self.congestion_events += 1;
        self.cc.on_rto(now);
        let end = self.end_idx();
        for abs in self.base..end {
            self.mark_lost(abs);
        }
        self.retx_q.clear();
        self.orig_ptr = end;
        self.retx_next = self.base;
        self.ca = CaState::Loss;
        self.high_seq = self.snd_nxt;
        self.rto_at = Some(now + self.rto());
    }
}
