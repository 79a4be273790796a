//! The udp_prague congestion controller (`PragueCC` of L4STeam/udp_prague `prague_cc.h` and
//! `prague_cc.cpp` @e8e3435), an application-level Prague (RFC 9331 §4).
//!
//! Integer arithmetic as upstream, with the same units:
//! * time: `i64` microseconds (the wire clocks are wrapping `i32` µs that never read 0);
//! * rates: bytes per second;
//! * the window `fractional_window` in µB (bytes × 10^6, so that B/s × µs = µB);
//! * alpha and probabilities: 2^-20 fixed point (`PROB_SHIFT` = 20);
//! * counters: wrapping `i32` as on the wire, compared by signed difference.
//!
//! Differences from upstream, all for robustness against a misbehaving peer: ACKs whose
//! counters claim more packets than were sent (or more CE than received) are rejected like
//! stale ones; the lost count is clamped to what was sent; divisions are guarded (upstream
//! divides by zero when an alpha window holds only losses, or when srtt is 0); all products
//! are computed in `i128` and saturate.

use l4s_core::{Ecn, Time};

/// `prague_cc.h`: `PRAGUE_INITMTU`.
pub const MAX_PACKET_SIZE: u32 = 1400;
/// `prague_cc.h`: `PRAGUE_MINMTU`.
pub const MIN_PACKET_SIZE: i64 = 150;
/// `prague_cc.h`: `PRAGUE_INITWIN`.
pub const INIT_WINDOW_PKTS: u32 = 10;
/// `prague_cc.h`: `PRAGUE_MINRATE`, 100 kb/s in B/s.
pub const MIN_RATE: i64 = 12_500;
/// `prague_cc.h`: `PRAGUE_MAXRATE`, 100 Gb/s in B/s.
pub const MAX_RATE: i64 = 12_500_000_000;
/// `prague_cc.cpp`: `REF_RTT`, µs.
pub const REF_RTT_US: i64 = 25_000;
/// `prague_cc.cpp`: `PROB_SHIFT`.
pub const PROB_SHIFT: u32 = 20;
/// 1.0 in 2^-20 units.
pub const MAX_PROB: i64 = 1 << PROB_SHIFT;
/// `prague_cc.cpp`: `ALPHA_SHIFT`, alpha gain 1/16.
pub const ALPHA_SHIFT: u32 = 4;
/// `prague_cc.cpp`: growth constants `MIN_STEP`, `RATE_STEP`, `QUEUE_GROWTH`.
pub const MIN_STEP: i64 = 7;
pub const RATE_STEP: i64 = 1_920_000;
pub const QUEUE_GROWTH_US: i64 = 1_000;
/// `prague_cc.cpp`: `BURST_TIME`, µs.
pub const BURST_TIME_US: i64 = 250;
pub const MIN_PKT_BURST: i64 = 1;
pub const MIN_PKT_WIN: i64 = 2;
/// `prague_cc.cpp`: `RATE_OFFSET`, ±3 %.
pub const RATE_OFFSET: i64 = 3;
pub const MIN_FRAME_WIN: i64 = 2;

/// Parameters (the `PragueCC` constructor arguments).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UdpPragueParams {
    /// Largest packet (UDP payload) size, bytes.
    pub max_packet_size: u32,
    /// Frames per second (frame mode, 1..=255); 0 = bulk mode.
    pub fps: u32,
    /// Frame budget, µs (≤ 1/fps).
    pub frame_budget_us: i64,
    /// Initial, minimum and maximum rate, B/s.
    pub init_rate: i64,
    pub min_rate: i64,
    pub max_rate: i64,
    pub init_window_pkts: u32,
    /// Apply the ±3 % probe of `GetCCInfo` to the bulk pacing rate.
    pub rate_probe: bool,
}

impl Default for UdpPragueParams {
    fn default() -> Self {
        UdpPragueParams {
            max_packet_size: MAX_PACKET_SIZE,
            fps: 0,
            frame_budget_us: 0,
            init_rate: MIN_RATE,
            min_rate: MIN_RATE,
            max_rate: MAX_RATE,
            init_window_pkts: INIT_WINDOW_PKTS,
            rate_probe: true,
        }
    }
}

/// `prague_cc.h` `cs_tp` (`m_cc_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcState {
    Init,
    CongAvoid,
    InLoss,
    InCwr,
}

/// `prague_cc.h` `cca_tp` (`m_cca_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcaMode {
    Window,
    Rate,
}

/// What the sender needs to send (`GetCCInfo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcOutput {
    /// Pacing rate, B/s (with the ±3 % probe in bulk mode).
    pub pacing_rate: i64,
    /// Packets allowed in flight.
    pub packet_window: i64,
    /// Packets per pacing burst.
    pub packet_burst: i64,
    /// UDP payload size, bytes.
    pub packet_size: i64,
}

/// `GetCCInfoVideo` (frame mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameOutput {
    pub pacing_rate: i64,
    /// Bytes of the next frame.
    pub frame_size: i64,
    /// Frames allowed in flight.
    pub frame_window: i64,
    pub packet_burst: i64,
    pub packet_size: i64,
}

fn sat(x: i128) -> i64 {
    x.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}
fn div_round(a: i128, d: i128) -> i128 {
    if d == 0 {
        return i64::MAX as i128;
    }
    (a + d / 2) / d
}
/// Wrapping signed difference of two wire counters/clocks.
fn wdiff(a: i32, b: i32) -> i64 {
    i64::from(a.wrapping_sub(b))
}

/// Convert a [`Time`] to the µs wire clock (wrapping `i32`, never 0).
pub fn wire_time(now: Time) -> i32 {
    let t = (now.as_nanos() / 1_000) as u32 as i32;
    if t == 0 {
        1
    } else {
        t
    }
}

/// The udp_prague sender-side controller (plus the timestamp echo state shared by both ends).
#[derive(Clone, Debug)]
pub struct UdpPragueCc {
    p: UdpPragueParams,
    ref_rtt: i64,
    frame_interval: i64,
    // both ends
    ts_remote: i32,
    rtt: i64,
    srtt: i64,
    vrtt: i64,
    r_prev_ts: i32,
    // sender: last echoed counters
    packets_received: i32,
    packets_ce: i32,
    packets_lost: i32,
    packets_sent: i32,
    error_l4s: bool,
    // alpha window
    alpha_ts: i64,
    alpha_packets_received: i32,
    alpha_packets_ce: i32,
    alpha_packets_sent: i32,
    // loss
    loss_ts: i64,
    loss_cca: CcaMode,
    lost_window: i64,
    lost_rate: i64,
    loss_packets_lost: i32,
    loss_packets_sent: i32,
    lost_rtts_to_growth: i64,
    // cwr
    cwr_ts: i64,
    cwr_packets_sent: i32,
    // state
    cc_state: CcState,
    cca_mode: CcaMode,
    rtts_to_growth: i64,
    alpha: i64,
    pacing_rate: i64,
    fractional_window: i64,
    packet_size: i64,
    packet_burst: i64,
    packet_window: i64,
    /// Loss reductions and CE reductions applied.
    pub loss_events: u64,
    pub ce_events: u64,
    /// Alpha updates performed.
    pub alpha_updates: u64,
}

impl UdpPragueCc {
    /// `PragueCC::PragueCC` at time `now`.
    pub fn new(p: UdpPragueParams, now: Time) -> UdpPragueCc {
        let mut p = p;
        p.max_packet_size = p.max_packet_size.max(MIN_PACKET_SIZE as u32);
        p.min_rate = p.min_rate.max(1);
        p.max_rate = p.max_rate.max(p.min_rate);
        p.init_rate = p.init_rate.clamp(p.min_rate, p.max_rate);
        let fps = p.fps.min(255);
        let frame_interval = if fps > 0 { 1_000_000 / i64::from(fps) } else { 0 };
        if fps > 0 {
            p.frame_budget_us = if p.frame_budget_us <= 0 {
                frame_interval
            } else {
                p.frame_budget_us.min(frame_interval)
            };
        }
        p.fps = fps;
        // `get_ref_rtt`: in frame mode the reference RTT is the frame interval.
        let ref_rtt = if fps > 0 { frame_interval.max(1) } else { REF_RTT_US };
        let now_us = (now.as_nanos() / 1000) as i64;
        let mut cc = UdpPragueCc {
            p,
            ref_rtt,
            frame_interval,
            ts_remote: 0,
            rtt: 0,
            srtt: 0,
            vrtt: 0,
            r_prev_ts: 0,
            packets_received: 0,
            packets_ce: 0,
            packets_lost: 0,
            packets_sent: 0,
            error_l4s: false,
            alpha_ts: now_us,
            alpha_packets_received: 0,
            alpha_packets_ce: 0,
            alpha_packets_sent: 0,
            loss_ts: 0,
            loss_cca: CcaMode::Window,
            lost_window: 0,
            lost_rate: 0,
            loss_packets_lost: 0,
            loss_packets_sent: 0,
            lost_rtts_to_growth: 0,
            cwr_ts: 0,
            cwr_packets_sent: 0,
            cc_state: CcState::Init,
            cca_mode: CcaMode::Window,
            rtts_to_growth: p.init_rate / RATE_STEP + MIN_STEP,
            alpha: 0,
            pacing_rate: p.init_rate,
            fractional_window: i64::from(p.init_window_pkts) * i64::from(p.max_packet_size) * 1_000_000,
            packet_size: 0,
            packet_burst: 0,
            packet_window: 0,
            loss_events: 0,
            ce_events: 0,
            alpha_updates: 0,
        };
        cc.packet_size =
            (cc.pacing_rate * ref_rtt / 1_000_000 / MIN_PKT_WIN).clamp(MIN_PACKET_SIZE, i64::from(p.max_packet_size));
        cc.packet_burst = (cc.pacing_rate * BURST_TIME_US / 1_000_000 / cc.packet_size).max(MIN_PKT_BURST);
        cc.packet_window = ((cc.fractional_window / 1_000_000 + cc.packet_size - 1) / cc.packet_size).max(MIN_PKT_WIN);
        cc
    }

    fn now_us(now: Time) -> i64 {
        ((now.as_nanos() / 1000) as i64).max(1)
    }

    /// `PacketReceived`: an ACK (or, at a receiver, a data packet) carrying the peer's
    /// `timestamp` and our echoed one arrived. Returns false for an older timestamp.
    /// Updates rtt/srtt (EWMA 1/8) and vrtt = max(srtt, ref_rtt) (`PacketReceived`).
    pub fn packet_received(&mut self, now: Time, timestamp: i32, echoed_ts: i32) -> bool {
        if self.cc_state != CcState::Init && wdiff(self.r_prev_ts, timestamp) > 0 {
            return false;
        }
        let ts = wire_time(now);
        self.ts_remote = ts.wrapping_sub(timestamp);
        if echoed_ts != 0 {
            let rtt = wdiff(ts, echoed_ts);
            if rtt >= 0 {
                self.rtt_sample(rtt);
            }
        }
        self.vrtt = self.srtt.max(self.ref_rtt);
        self.r_prev_ts = timestamp;
        true
    }

    /// `RFC8888Received`: the RTT of each packet an RFC 8888 report newly reports
    /// received (µs), in report order, each smoothed into `srtt` with gain 1/8 (the first
    /// ever sets it). The RFC 8888 mode has no timestamp echo, so `PacketReceived` and its
    /// stale-timestamp check are not used; `ack_received`'s counters reject stale reports.
    pub fn rfc8888_received(&mut self, rtts_us: &[i64]) {
        for &rtt in rtts_us {
            self.rtt_sample(rtt);
            self.vrtt = self.srtt.max(self.ref_rtt);
        }
    }

    /// One RTT sample (µs) into `rtt` and `srtt`: EWMA of gain 1/8, or the first sample
    /// as it is (both `PacketReceived` and `RFC8888Received`).
    fn rtt_sample(&mut self, rtt: i64) {
        self.rtt = rtt;
        if self.cc_state != CcState::Init {
            self.srtt += (rtt - self.srtt) >> 3;
        } else {
            self.srtt = rtt;
        }
    }

    /// `ACKReceived`; the numbered steps in the body follow upstream's order. Returns the
    /// packets in flight after the ACK, or `None` if the ACK was stale or invalid and ignored.
    pub fn ack_received(
        &mut self,
        now: Time,
        packets_received: i32,
        packets_ce: i32,
        packets_lost: i32,
        packets_sent: i32,
        error_l4s: bool,
    ) -> Option<i64> {
        // Rule 1: stale (counters cannot go down) or impossible.
        let d_recv = wdiff(packets_received, self.packets_received);
        let d_ce = wdiff(packets_ce, self.packets_ce);
        if d_recv < 0 || d_ce < 0 {
            return None;
        }
        if wdiff(packets_sent, packets_received) < 0 || d_ce > d_recv {
            return None;
        }
        // Clamp the (signed) lost count into [0, sent − received].
        let max_lost = wdiff(packets_sent, packets_received);
        let packets_lost = if packets_lost < 0 {
            0
        } else {
            i64::from(packets_lost).min(max_lost) as i32
        };

        let srtt = self.srtt.max(1);
        let pacing_interval = self.packet_size * 1_000_000 / self.pacing_rate.max(1);
        // Rule 2: first ACK.
        if self.cc_state == CcState::Init {
            self.fractional_window = sat(i128::from(srtt) * i128::from(self.pacing_rate));
            self.cc_state = CcState::CongAvoid;
        }
        // Rule 3: mode choice.
        if srtt <= 2000 || srtt <= pacing_interval {
            self.cca_mode = CcaMode::Rate;
        } else {
            if self.cca_mode == CcaMode::Rate {
                self.fractional_window = sat(i128::from(srtt) * i128::from(self.pacing_rate));
            }
            self.cca_mode = CcaMode::Window;
        }
        let ts = Self::now_us(now);
        let vrtt = self.vrtt.max(self.ref_rtt);

        // Rule 4: alpha, once a window and a vrtt have passed.
        if wdiff(packets_received.wrapping_add(packets_lost), self.alpha_packets_sent) > 0
            && ts - self.alpha_ts - vrtt >= 0
        {
            let d_r = wdiff(packets_received, self.alpha_packets_received);
            if d_r > 0 {
                let d_c = wdiff(packets_ce, self.alpha_packets_ce).clamp(0, d_r);
                let prob = (d_c << PROB_SHIFT) / d_r;
                if self.frame_interval > 0 {
                    // `get_alpha_shift`: gain 1/G with G = 16·25 ms/frame_interval.
                    let num = i128::from(prob - self.alpha) * i128::from(self.frame_interval);
                    self.alpha += sat(num / i128::from(16 * REF_RTT_US));
                } else {
                    self.alpha += (prob - self.alpha) >> ALPHA_SHIFT;
                }
                self.alpha = self.alpha.clamp(0, MAX_PROB);
                self.alpha_updates += 1;
            }
            self.alpha_packets_sent = packets_sent;
            self.alpha_packets_ce = packets_ce;
            self.alpha_packets_received = packets_received;
            self.alpha_ts = ts;
            if self.rtts_to_growth > 0 {
                self.rtts_to_growth -= 1;
            }
        }

        // Rule 5: undo.
        if (self.lost_window > 0 || self.lost_rate > 0) && wdiff(self.loss_packets_lost, packets_lost) >= 0 {
            self.cca_mode = self.loss_cca;
            if self.cca_mode == CcaMode::Rate {
                self.pacing_rate = self.pacing_rate.saturating_add(self.lost_rate);
                self.lost_rate = 0;
            } else {
                self.fractional_window = self.fractional_window.saturating_add(self.lost_window);
                self.lost_window = 0;
            }
            self.rtts_to_growth = (self.rtts_to_growth - self.lost_rtts_to_growth).max(0);
            self.lost_rtts_to_growth = 0;
            self.cc_state = CcState::CongAvoid;
        }

        // Rule 6: leave in_loss.
        if self.cc_state == CcState::InLoss
            && wdiff(packets_received.wrapping_add(packets_lost), self.loss_packets_sent) > 0
            && ts - self.loss_ts - vrtt >= 0
        {
            self.cc_state = CcState::CongAvoid;
        }

        // Rule 7: loss.
        if self.cc_state != CcState::InLoss && wdiff(self.packets_lost, packets_lost) < 0 {
            let max_pkt = i64::from(self.p.max_packet_size);
            let rtts = sat(
                i128::from(self.pacing_rate / 2 / max_pkt) * i128::from(REF_RTT_US) / i128::from(vrtt)
                    * i128::from(REF_RTT_US)
                    / 1_000_000,
            );
            self.lost_rtts_to_growth = self
                .lost_rtts_to_growth
                .saturating_add(rtts - self.rtts_to_growth)
                .min(rtts);
            self.rtts_to_growth = rtts;
            if self.cca_mode == CcaMode::Window {
                self.lost_window = self.fractional_window / 2;
                self.fractional_window -= self.lost_window;
            } else {
                self.lost_rate = self.pacing_rate / 2;
                self.pacing_rate -= self.lost_rate;
            }
            self.cc_state = CcState::InLoss;
            self.loss_cca = self.cca_mode;
            self.loss_packets_sent = packets_sent;
            self.loss_ts = ts;
            self.loss_packets_lost = self.packets_lost;
            self.loss_events += 1;
        }

        // Rule 8: increase for unmarked ACKs.
        let acks = d_recv - d_ce;
        if self.cc_state != CcState::InLoss && acks > 0 {
            let max_pkt = i64::from(self.p.max_packet_size);
            let mut increment = sat(i128::from(self.pacing_rate) * i128::from(QUEUE_GROWTH_US) / 1_000_000);
            if increment < max_pkt || self.rtts_to_growth > 0 {
                increment = max_pkt;
            }
            if self.cca_mode == CcaMode::Window {
                let divisor = i128::from(vrtt) * i128::from(vrtt);
                let scaler = div_round(i128::from(srtt) * 1_000_000 * i128::from(srtt), divisor);
                let increase = div_round(
                    i128::from(acks) * i128::from(self.packet_size) * scaler * 1_000_000,
                    i128::from(self.fractional_window.max(1)),
                );
                self.fractional_window =
                    sat(i128::from(self.fractional_window) + increase.saturating_mul(i128::from(increment)));
            } else {
                let divisor = i128::from(self.packet_size) * 1_000_000;
                let invscaler = div_round(i128::from(self.pacing_rate) * i128::from(vrtt), divisor).max(1);
                let increase = div_round(i128::from(acks) * i128::from(increment) * 1_000_000, i128::from(vrtt));
                self.pacing_rate = sat(i128::from(self.pacing_rate) + div_round(increase, invscaler));
            }
        }

        // Leave in_cwr.
        if self.cc_state == CcState::InCwr
            && wdiff(packets_received.wrapping_add(packets_lost), self.cwr_packets_sent) > 0
            && ts - self.cwr_ts - vrtt >= 0
        {
            self.cc_state = CcState::CongAvoid;
        }

        // Rule 9: CE reduction.
        if self.cc_state == CcState::CongAvoid && d_ce > 0 {
            self.rtts_to_growth = self.pacing_rate / RATE_STEP + MIN_STEP;
            if self.cca_mode == CcaMode::Window {
                self.fractional_window -=
                    sat((i128::from(self.fractional_window) * i128::from(self.alpha)) >> (PROB_SHIFT + 1));
            } else {
                self.pacing_rate -= sat((i128::from(self.pacing_rate) * i128::from(self.alpha)) >> (PROB_SHIFT + 1));
            }
            self.cc_state = CcState::InCwr;
            self.cwr_packets_sent = packets_sent;
            self.cwr_ts = ts;
            self.ce_events += 1;
        }

        // Rule 10: derived outputs.
        if self.cca_mode != CcaMode::Rate {
            self.pacing_rate = self.fractional_window / srtt;
        }
        self.pacing_rate = self.pacing_rate.clamp(self.p.min_rate, self.p.max_rate);
        self.fractional_window = sat(i128::from(self.pacing_rate) * i128::from(srtt)).max(1);
        self.update_outputs(vrtt);

        self.packets_received = packets_received;
        self.packets_ce = packets_ce;
        self.packets_lost = packets_lost;
        self.packets_sent = packets_sent;
        if error_l4s {
            self.error_l4s = true;
        }
        Some(self.inflight(packets_sent))
    }

    fn update_outputs(&mut self, vrtt: i64) {
        let max_pkt = i64::from(self.p.max_packet_size);
        self.packet_size = sat(i128::from(self.pacing_rate) * i128::from(vrtt) / 1_000_000 / i128::from(MIN_PKT_WIN))
            .clamp(MIN_PACKET_SIZE, max_pkt);
        self.packet_burst =
            sat(i128::from(self.pacing_rate) * i128::from(BURST_TIME_US) / 1_000_000 / i128::from(self.packet_size))
                .max(MIN_PKT_BURST);
        self.packet_window = sat(i128::from(self.fractional_window) * i128::from(100 + RATE_OFFSET)
            / 100_000_000
            / i128::from(self.packet_size)
            + 1)
        .max(MIN_PKT_WIN);
    }

    /// Packets in flight given `packets_sent`, from the last accepted ACK.
    pub fn inflight(&self, packets_sent: i32) -> i64 {
        wdiff(packets_sent, self.packets_received.wrapping_add(self.packets_lost)).max(0)
    }

    /// `ResetCCInfo`, on a send timeout / RTO.
    pub fn reset(&mut self, now: Time) {
        let ts = Self::now_us(now);
        self.cc_state = CcState::Init;
        self.cca_mode = CcaMode::Window;
        self.alpha_ts = ts;
        self.alpha = 0;
        self.pacing_rate = self.p.init_rate;
        self.fractional_window = i64::from(self.p.max_packet_size) * 1_000_000;
        self.packet_burst = MIN_PKT_BURST;
        self.packet_size = i64::from(self.p.max_packet_size);
        self.packet_window = MIN_PKT_WIN;
        self.rtts_to_growth = self.pacing_rate / RATE_STEP + MIN_STEP;
        self.lost_rtts_to_growth = 0;
    }

    /// `GetTimeInfo`: our timestamp, the defrosted echo of the peer's, and the ECN
    /// codepoint (`GetTimeInfo`: Not-ECT once the peer reported `error_L4S`).
    pub fn time_info(&self, now: Time) -> (i32, i32, Ecn) {
        let ts = wire_time(now);
        let echoed = if self.ts_remote != 0 {
            ts.wrapping_sub(self.ts_remote)
        } else {
            0
        };
        (ts, echoed, if self.error_l4s { Ecn::NotEct } else { Ecn::Ect1 })
    }

    /// `GetCCInfo`: the ±3 % probe, + in the first half-vrtt after an alpha
    /// update and − in the second.
    pub fn cc_info(&self, now: Time) -> CcOutput {
        let rate = if !self.p.rate_probe {
            self.pacing_rate
        } else if Self::now_us(now) - self.alpha_ts - (self.vrtt.max(self.ref_rtt) >> 1) >= 0 {
            self.pacing_rate * 100 / (100 + RATE_OFFSET)
        } else {
            sat(i128::from(self.pacing_rate) * i128::from(100 + RATE_OFFSET) / 100)
        };
        CcOutput {
            pacing_rate: rate.max(1),
            packet_window: self.packet_window,
            packet_burst: self.packet_burst,
            packet_size: self.packet_size,
        }
    }

    /// `GetCCInfoVideo`.
    pub fn cc_info_video(&self) -> FrameOutput {
        let budget_bytes = sat(i128::from(self.pacing_rate) * i128::from(self.p.frame_budget_us) / 1_000_000);
        let frame_size = self.packet_size.max(budget_bytes);
        let frame_window =
            (sat(i128::from(self.packet_window) * i128::from(self.packet_size)) / frame_size.max(1)).max(MIN_FRAME_WIN);
        FrameOutput {
            pacing_rate: self.pacing_rate,
            frame_size,
            frame_window,
            packet_burst: self.packet_burst,
            packet_size: self.packet_size,
        }
    }

    pub fn params(&self) -> &UdpPragueParams {
        &self.p
    }
    /// Frame interval in µs (0 in bulk mode).
    pub fn frame_interval_us(&self) -> i64 {
        self.frame_interval
    }
    pub fn state(&self) -> CcState {
        self.cc_state
    }
    pub fn cca_mode(&self) -> CcaMode {
        self.cca_mode
    }
    /// Alpha in 2^-20 units.
    pub fn alpha_fixed(&self) -> i64 {
        self.alpha
    }
    pub fn alpha(&self) -> f64 {
        self.alpha as f64 / MAX_PROB as f64
    }
    /// Unprobed pacing rate, B/s.
    pub fn pacing_rate(&self) -> i64 {
        self.pacing_rate
    }
    /// The window in µB.
    pub fn fractional_window(&self) -> i64 {
        self.fractional_window
    }
    pub fn packet_size(&self) -> i64 {
        self.packet_size
    }
    pub fn packet_burst(&self) -> i64 {
        self.packet_burst
    }
    pub fn packet_window(&self) -> i64 {
        self.packet_window
    }
    pub fn srtt_us(&self) -> i64 {
        self.srtt
    }
    pub fn vrtt_us(&self) -> i64 {
        self.vrtt.max(self.ref_rtt)
    }
    pub fn rtt_us(&self) -> i64 {
        self.rtt
    }
    pub fn rtts_to_growth(&self) -> i64 {
        self.rtts_to_growth
    }
    pub fn error_l4s(&self) -> bool {
        self.error_l4s
    }
    /// Last accepted echoed counters (received, CE, lost).
    pub fn echoed(&self) -> (i32, i32, i32) {
        (self.packets_received, self.packets_ce, self.packets_lost)
    }
    /// Time of the last alpha update, µs.
    pub fn alpha_ts_us(&self) -> i64 {
        self.alpha_ts
    }
    /// Force the rate (tests of the derived outputs); re-derives all outputs.
    pub fn set_rate_for_test(&mut self, rate: i64, srtt_us: i64) {
        self.srtt = srtt_us.max(1);
        self.vrtt = self.srtt.max(self.ref_rtt);
        self.pacing_rate = rate.clamp(self.p.min_rate, self.p.max_rate);
        self.fractional_window = sat(i128::from(self.pacing_rate) * i128::from(self.srtt)).max(1);
        if self.cc_state == CcState::Init {
            self.cc_state = CcState::CongAvoid;
        }
        self.update_outputs(self.vrtt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4s_core::Dur;

    /// Drive the controller directly: an ACK at `t_ms` reporting the given counters,
    /// with a fixed RTT.
    struct Drive {
        cc: UdpPragueCc,
        ts: i32,
        rtt: Dur,
    }
    impl Drive {
        fn new(p: UdpPragueParams, rtt_ms: u64) -> Drive {
            Drive {
                cc: UdpPragueCc::new(p, Time::ZERO),
                ts: 0,
                rtt: Dur::from_millis(rtt_ms),
            }
        }
        fn ack(&mut self, t_us: u64, recv: i32, ce: i32, lost: i32, sent: i32) -> Option<i64> {
            let now = Time::from_micros(t_us);
            self.ts += 1;
            self.cc.packet_received(now, self.ts, wire_time(now - self.rtt));
            self.cc.ack_received(now, recv, ce, lost, sent, false)
        }
    }

    #[test]
    fn initial_outputs() {
        let cc = UdpPragueCc::new(UdpPragueParams::default(), Time::ZERO);
        assert_eq!(cc.pacing_rate(), 12_500);
        assert_eq!(cc.packet_size(), 156);
        assert_eq!(cc.packet_burst(), 1);
        assert_eq!(cc.rtts_to_growth(), 7);
        assert_eq!(cc.state(), CcState::Init);
        assert_eq!(cc.time_info(Time::from_millis(3)), (3000, 0, Ecn::Ect1));
    }

    #[test]
    fn alpha_ewma_gated_by_vrtt_and_window() {
        let mut d = Drive::new(UdpPragueParams::default(), 10);
        // First ACK: init → cong_avoid, alpha window starts at t = 0.
        d.ack(10_000, 0, 0, 0, 5).unwrap();
        // A window has passed (recv 10 > alpha_sent 0) but only 20 ms < vrtt 25 ms.
        d.ack(20_000, 10, 10, 0, 20).unwrap();
        assert_eq!(d.cc.alpha_fixed(), 0);
        // 25 ms passed: p = 10/10 → alpha = 1/16 exactly.
        d.ack(25_000, 10, 10, 0, 20).unwrap();
        assert_eq!(d.cc.alpha_fixed(), MAX_PROB / 16);
        // 30 ms later but the window (received + lost > 20 sent at the update) has not passed.
        d.ack(55_000, 20, 10, 0, 40).unwrap();
        assert_eq!(d.cc.alpha_fixed(), MAX_PROB / 16);
        d.ack(56_000, 21, 10, 0, 40).unwrap();
        // p = 0/11: alpha = 1/16·15/16.
        assert_eq!(d.cc.alpha_fixed(), (MAX_PROB / 16) - ((MAX_PROB / 16) >> 4));
        assert_eq!(d.cc.alpha_updates, 2);
    }

    #[test]
    fn ce_reduction_once_per_vrtt_and_window() {
        let mut d = Drive::new(UdpPragueParams::default(), 40);
        d.ack(40_000, 1, 0, 0, 10).unwrap();
        d.cc.alpha = MAX_PROB / 2;
        let w0 = d.cc.fractional_window();
        d.ack(41_000, 2, 1, 0, 10).unwrap();
        assert_eq!(d.cc.state(), CcState::InCwr);
        assert_eq!(d.cc.ce_events, 1);
        let w1 = d.cc.fractional_window();
        // W·(1 − α/2) = 0.75·W (plus at most the rounding of W = rate·srtt).
        assert!((w1 as f64 / w0 as f64 - 0.75).abs() < 0.01, "{w0} → {w1}");
        // More CE within the vrtt (40 ms) and the window: no reduction.
        d.ack(60_000, 12, 5, 0, 20).unwrap();
        assert_eq!(d.cc.ce_events, 1);
        // vrtt passed but window (sent at entry = 10) … passed too → next CE reduces.
        d.ack(82_000, 13, 6, 0, 20).unwrap();
        assert_eq!(d.cc.ce_events, 2);
        assert!(d.cc.rtts_to_growth() >= MIN_STEP);
    }

    #[test]
    fn loss_halves_once_then_undo_restores() {
        let mut d = Drive::new(UdpPragueParams::default(), 30);
        d.ack(30_000, 1, 0, 0, 10).unwrap();
        d.ack(31_000, 5, 0, 0, 10).unwrap();
        let w0 = d.cc.fractional_window();
        d.ack(32_000, 6, 0, 1, 10).unwrap();
        assert_eq!(d.cc.state(), CcState::InLoss);
        assert_eq!(d.cc.loss_events, 1);
        let w1 = d.cc.fractional_window();
        assert!((w1 as f64 / w0 as f64 - 0.5).abs() < 0.01);
        // Further losses in the same episode: no second halving, no growth.
        d.ack(33_000, 7, 0, 3, 10).unwrap();
        assert_eq!(d.cc.loss_events, 1);
        assert!((d.cc.fractional_window() - w1).abs() <= w1 / 100);
        // The lost count falls back to the pre-loss value (reordering): undo.
        d.ack(34_000, 10, 0, 0, 10).unwrap();
        assert_eq!(d.cc.state(), CcState::CongAvoid);
        assert!(d.cc.fractional_window() >= w0 * 99 / 100);
    }

    #[test]
    fn rate_mode_at_tiny_rtt_and_switch_back() {
        let mut d = Drive::new(UdpPragueParams::default(), 1);
        d.ack(1_000, 1, 0, 0, 10).unwrap();
        assert_eq!(d.cc.cca_mode(), CcaMode::Rate);
        let r0 = d.cc.pacing_rate();
        d.ack(2_000, 5, 0, 0, 10).unwrap();
        assert!(d.cc.pacing_rate() > r0, "rate-mode AI");
        d.rtt = Dur::from_millis(60);
        for i in 0..40 {
            d.ack(3_000 + i * 1000, 6 + i as i32, 0, 0, 60).unwrap();
        }
        // srtt ≫ pacing interval: back to window mode, rate continuous.
        assert_eq!(d.cc.cca_mode(), CcaMode::Window);
    }

    #[test]
    fn stale_and_impossible_acks_are_ignored() {
        let mut d = Drive::new(UdpPragueParams::default(), 20);
        d.ack(20_000, 10, 2, 0, 20).unwrap();
        assert!(d.ack(21_000, 9, 2, 0, 20).is_none(), "received went down");
        assert!(d.ack(22_000, 11, 1, 0, 20).is_none(), "CE went down");
        assert!(d.ack(23_000, 30, 2, 0, 20).is_none(), "more received than sent");
        assert!(d.ack(24_000, 11, 9, 0, 20).is_none(), "more CE than received");
        assert_eq!(
            d.ack(25_000, 11, 2, 1000, 20),
            Some(0),
            "lost clamped to sent − received"
        );
        assert_eq!(d.cc.echoed(), (11, 2, 9));
    }

    #[test]
    fn probe_plus_then_minus_three_percent() {
        let mut d = Drive::new(UdpPragueParams::default(), 10);
        d.ack(10_000, 1, 0, 0, 2).unwrap();
        d.ack(30_000, 3, 0, 0, 4).unwrap(); // alpha update at 30 ms (vrtt 25 ms passed)
        let r = d.cc.pacing_rate();
        assert_eq!(d.cc.alpha_ts_us(), 30_000);
        assert_eq!(d.cc.cc_info(Time::from_micros(35_000)).pacing_rate, r * 103 / 100);
        assert_eq!(d.cc.cc_info(Time::from_micros(43_000)).pacing_rate, r * 100 / 103);
        let p = UdpPragueParams {
            rate_probe: false,
            ..Default::default()
        };
        let cc = UdpPragueCc::new(p, Time::ZERO);
        assert_eq!(cc.cc_info(Time::from_micros(1)).pacing_rate, 12_500);
    }

    #[test]
    fn frame_mode_parameters() {
        let p = UdpPragueParams {
            fps: 50,
            frame_budget_us: 100_000,
            ..Default::default()
        };
        let mut cc = UdpPragueCc::new(p, Time::ZERO);
        assert_eq!(cc.frame_interval_us(), 20_000);
        assert_eq!(cc.params().frame_budget_us, 20_000, "budget clamped to 1/fps");
        // ref_rtt = frame interval: 12 500 B/s·20 ms/2 = 125 → 150 B.
        assert_eq!(cc.packet_size(), 150);
        cc.set_rate_for_test(1_000_000, 10_000);
        let v = cc.cc_info_video();
        assert_eq!(v.frame_size, 20_000);
        assert_eq!(v.packet_size, 1400);
        assert!(v.frame_window >= 2);
        // Alpha gain 1/G, G = 16·25 ms/20 ms = 20.
        let mut d = Drive {
            cc: UdpPragueCc::new(p, Time::ZERO),
            ts: 0,
            rtt: Dur::from_millis(5),
        };
        d.ack(5_000, 1, 0, 0, 2).unwrap();
        d.ack(25_000, 2, 1, 0, 2).unwrap();
        // p = 1/2 over the window since t = 0: alpha = 0.5/20.
        assert_eq!(d.cc.alpha_fixed(), (MAX_PROB / 2) / 20);
    }

    #[test]
    fn reset_on_rto() {
        let mut d = Drive::new(UdpPragueParams::default(), 10);
        d.ack(10_000, 1, 0, 0, 2).unwrap();
        d.cc.set_rate_for_test(5_000_000, 10_000);
        d.cc.alpha = 1000;
        d.cc.reset(Time::from_secs(1));
        assert_eq!(d.cc.state(), CcState::Init);
        assert_eq!(d.cc.pacing_rate(), 12_500);
        assert_eq!(d.cc.alpha_fixed(), 0);
        assert_eq!(d.cc.packet_window(), 2);
        assert_eq!(d.cc.fractional_window(), 1400 * 1_000_000);
    }
}
