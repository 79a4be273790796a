//! UDP Prague endpoints (L4STeam/udp_prague @e8e3435: `prague_cc.cpp`, `pkt_format.h` and the
//! example `udp_prague_sender.cpp` / `udp_prague_receiver.cpp`).
//!
//! [`UdpPragueSender`] runs the [`UdpPragueCc`] controller behind the example app's send
//! loop (`udp_prague_sender.cpp`): send while `inflight < packet_window` and the pacer allows,
//! in bursts of `packet_burst` packets, then wait until `burst_start + burst_bytes/rate`; when
//! window-blocked, wait for an ACK for at most `send_timeout` (1 s) before resetting the
//! controller (`SND_TIMEOUT`, `ResetCCInfo`). Bulk mode sends until [`Endpoint::close`]; frame
//! mode (`GetCCInfoVideo`) sends one frame of `frame_size` bytes per tick of `1/fps`, paced at
//! the rate, then idles.
//!
//! [`UdpPragueReceiver`] keeps the counters of `DataReceivedSequence` and echoes them on every
//! N-th packet.
//!
//! Wire sizes (Ethernet frames): data = 14 + 20 + 8 + `packet_size` (the UDP payload
//! includes the 13 B (bulk) or 25 B (frame) udp_prague header, `pkt_format.h`);
//! ACK = 14 + 20 + 8 + 26.
//! Timestamps are the wrapping `i32` µs wire clock, never 0; counters are wrapping `i32`.
//! Nothing here panics on any header from a peer.

use crate::endpoint::{Endpoint, EndpointStats, Transmit};
use l4s_cc::udp_prague::{wire_time, UdpPragueCc, UdpPragueParams, MIN_PACKET_SIZE};
use l4s_core::{Dur, Ecn, Rate, Time};
use serde::Deserialize;
use std::collections::VecDeque;

/// Ethernet + IPv4 + UDP header bytes added to the UDP payload.
pub const UDP_OVERHEAD: u32 = 14 + 20 + 8;
/// udp_prague ACK payload (`ackmessage_t`: type byte + 6 × i32 + u8).
pub const ACK_PAYLOAD: u32 = 26;
/// ACK frame size on the wire.
pub const ACK_WIRE_SIZE: u32 = UDP_OVERHEAD + ACK_PAYLOAD;

/// Frame-mode fields of a data packet (`framemessage_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    pub frame_nr: i32,
    /// Bytes of this frame sent before this packet.
    pub frame_sent: i32,
    pub frame_size: i32,
}

/// The udp_prague header (`pkt_format.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UdpPragueHeader {
    Data {
        /// Sequence number, from 1.
        seq: i32,
        timestamp: i32,
        echoed_ts: i32,
        frame: Option<FrameInfo>,
    },
    Ack {
        ack_seq: i32,
        timestamp: i32,
        echoed_ts: i32,
        packets_received: i32,
        packets_ce: i32,
        packets_lost: i32,
        error_l4s: bool,
    },
}

/// Sender configuration (scenario key names).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UdpPragueConfig {
    /// Largest UDP payload, bytes (`PRAGUE_INITMTU` 1400).
    pub max_packet_size: u32,
    pub init_rate: Rate,
    pub min_rate: Rate,
    pub max_rate: Rate,
    /// Initial window in packets (10).
    pub init_window: u32,
    /// ±3 % rate probing in bulk mode (`GetCCInfo`).
    pub rate_probe: bool,
    /// Frames per second (1..=255); 0 = bulk mode.
    pub fps: u32,
    /// Frame budget (≤ 1/fps); "0s" = the whole frame interval.
    pub frame_budget: Dur,
    /// Reset after this long window-blocked without an ACK (`SND_TIMEOUT`: 1 s).
    pub send_timeout: Dur,
}

impl Default for UdpPragueConfig {
    fn default() -> Self {
        UdpPragueConfig {
            max_packet_size: 1400,
            init_rate: Rate::kbps(100),
            min_rate: Rate::kbps(100),
            max_rate: Rate::gbps(100),
            init_window: 10,
            rate_probe: true,
            fps: 0,
            frame_budget: Dur::ZERO,
            send_timeout: Dur::from_secs(1),
        }
    }
}

impl UdpPragueConfig {
    /// The controller parameters (rates converted to B/s, times to µs).
    pub fn cc_params(&self) -> UdpPragueParams {
        let bps = |r: Rate| (r.bits_per_sec() / 8).min(i64::MAX as u64) as i64;
        UdpPragueParams {
            max_packet_size: self.max_packet_size.clamp(MIN_PACKET_SIZE as u32, 65_000),
            fps: self.fps.min(255),
            frame_budget_us: self.frame_budget.as_micros().min(i64::MAX as u64) as i64,
            init_rate: bps(self.init_rate),
            min_rate: bps(self.min_rate),
            max_rate: bps(self.max_rate),
            init_window_pkts: self.init_window.max(1),
            rate_probe: self.rate_probe,
        }
    }
}

/// Receiver configuration.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UdpPragueReceiverConfig {
    /// Send an ACK every N data packets (1 = every packet).
    pub ack_every: u32,
    /// With `ack_every > 1`: longest an ACK is held back.
    pub ack_delay: Dur,
}

impl Default for UdpPragueReceiverConfig {
    fn default() -> Self {
        UdpPragueReceiverConfig {
            ack_every: 1,
            ack_delay: Dur::from_millis(1),
        }
    }
}

fn wdiff(a: i32, b: i32) -> i64 {
    i64::from(a.wrapping_sub(b))
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    nr: i32,
    size: i64,
    sent: i64,
    last_seq: i32,
}

/// The udp_prague sender (`PragueCC` behind the loop of `udp_prague_sender.cpp`).
#[derive(Debug)]
pub struct UdpPragueSender {
    cfg: UdpPragueConfig,
    cc: UdpPragueCc,
    /// Last sequence number sent (= packets sent).
    packets_sent: i32,
    next_send: Time,
    burst_start: Time,
    inburst: i64,
    burst_bytes: u64,
    /// Last ACK accepted (or start / reset): the send timeout counts from here.
    last_progress: Time,
    /// After a timeout, packets up to here are no longer counted in flight.
    reset_mark: i32,
    closed: bool,
    /// Closed and the last in-flight packets were never reported within `send_timeout`.
    gave_up: bool,
    rtt_sample: Option<Dur>,
    // frame mode
    frame_interval: Dur,
    next_tick: Time,
    frame: Option<Frame>,
    frames_in_flight: VecDeque<(i32, i32)>,
    next_frame_nr: i32,
    // stats
    sent_packets: u64,
    sent_bytes: u64,
    acks_received: u64,
    /// When an ACK first echoed error_L4S (the sender then sends Not-ECT, `GetTimeInfo`).
    ecn_failed_at: Option<Time>,
    delivered_bytes: u64,
    last_payload: u64,
    timeouts: u64,
    /// Frames not started because the frame window was full.
    pub frames_skipped: u64,
    /// Frames started.
    pub frames_started: u64,
}

impl UdpPragueSender {
    pub fn new(cfg: UdpPragueConfig, now: Time) -> UdpPragueSender {
        let cc = UdpPragueCc::new(cfg.cc_params(), now);
        let fi = cc.frame_interval_us();
        let frame_interval = if fi > 0 { Dur::from_micros(fi as u64) } else { Dur::ZERO };
        UdpPragueSender {
            cfg,
            cc,
            packets_sent: 0,
            next_send: now,
            burst_start: now,
            inburst: 0,
            burst_bytes: 0,
            last_progress: now,
            reset_mark: 0,
            closed: false,
            gave_up: false,
            rtt_sample: None,
            frame_interval,
            next_tick: now,
            frame: None,
            frames_in_flight: VecDeque::new(),
            next_frame_nr: 1,
            sent_packets: 0,
            sent_bytes: 0,
            acks_received: 0,
            ecn_failed_at: None,
            delivered_bytes: 0,
            last_payload: 0,
            timeouts: 0,
            frames_skipped: 0,
            frames_started: 0,
        }
    }

    /// The controller (read-only).
    pub fn cc(&self) -> &UdpPragueCc {
        &self.cc
    }
    pub fn config(&self) -> &UdpPragueConfig {
        &self.cfg
    }
    /// A frame has bytes left to send.
    fn frame_pending(&self) -> bool {
        matches!(self.frame, Some(f) if f.sent < f.size)
    }
    fn frame_mode(&self) -> bool {
        !self.frame_interval.is_zero()
    }
    /// Packets sent and not yet reported received or lost.
    pub fn inflight(&self) -> i64 {
        let (r, _, l) = self.cc.echoed();
        let covered = r.wrapping_add(l);
        let base = if wdiff(self.reset_mark, covered) > 0 {
            self.reset_mark
        } else {
            covered
        };
        wdiff(self.packets_sent, base).max(0)
    }
    fn window_blocked(&self) -> bool {
        self.inflight() >= self.cc.packet_window().max(1)
    }
    fn finished(&self) -> bool {
        self.closed && (self.inflight() == 0 || self.gave_up)
    }
    /// Send timeouts (controller resets) so far.
    pub fn timeouts(&self) -> u64 {
        self.timeouts
    }

    /// Frame mode: start the frame due at the latest tick ≤ now (as the frame loop of
    /// `udp_prague_sender.cpp`).
    fn frame_ticks(&mut self, now: Time) {
        if !self.frame_mode() {
            return;
        }
        let mut due = false;
        while self.next_tick <= now {
            due = true;
            self.next_tick += self.frame_interval;
        }
        if !due {
            return;
        }
        let busy = self.frame_pending();
        if busy {
            // The previous frame is still being sent; this tick's frame is dropped.
            self.frames_skipped += 1;
            return;
        }
        // Frames whose last packet is covered by the feedback are no longer in flight.
        let (r, _, l) = self.cc.echoed();
        let covered = r.wrapping_add(l);
        while let Some(&(_, last)) = self.frames_in_flight.front() {
            if wdiff(covered, last) >= 0 || wdiff(self.reset_mark, last) >= 0 {
                self.frames_in_flight.pop_front();
            } else {
                break;
            }
        }
        let v = self.cc.cc_info_video();
        if self.frames_in_flight.len() as i64 >= v.frame_window {
            self.frames_skipped += 1;
            return;
        }
        let nr = self.next_frame_nr;
        self.next_frame_nr = self.next_frame_nr.wrapping_add(1);
        self.frame = Some(Frame {
            nr,
            size: v.frame_size.max(1),
            sent: 0,
            last_seq: self.packets_sent,
        });
        self.frames_started += 1;
        // A frame starts a fresh pacing schedule at its tick.
        self.inburst = 0;
        self.burst_bytes = 0;
        self.next_send = self.next_send.max(now);
    }
}

impl Endpoint for UdpPragueSender {
    type Header = UdpPragueHeader;

    fn handle_packet(&mut self, now: Time, header: &UdpPragueHeader, _size: u32, _ecn: Ecn) {
        let UdpPragueHeader::Ack {
            timestamp,
            echoed_ts,
            packets_received,
            packets_ce,
            packets_lost,
            error_l4s,
            ..
        } = *header
        else {
            return;
        };
        self.acks_received += 1;
        if error_l4s && self.ecn_failed_at.is_none() {
            self.ecn_failed_at = Some(now);
        }
        if !self.cc.packet_received(now, timestamp, echoed_ts) {
            return;
        }
        if echoed_ts != 0 && self.cc.rtt_us() >= 0 {
            self.rtt_sample = Some(Dur::from_micros(self.cc.rtt_us() as u64));
        }
        let (r0, _, _) = self.cc.echoed();
        if self
            .cc
            .ack_received(
                now,
                packets_received,
                packets_ce,
                packets_lost,
                self.packets_sent,
                error_l4s,
            )
            .is_some()
        {
            let (r1, _, _) = self.cc.echoed();
            let newly = wdiff(r1, r0).max(0) as u64;
            self.delivered_bytes = self
                .delivered_bytes
                .saturating_add(newly.saturating_mul(self.last_payload));
            self.last_progress = now;
        }
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit<UdpPragueHeader>> {
        if self.closed {
            return None;
        }
        self.frame_ticks(now);
        if self.frame_mode() && !self.frame_pending() {
            return None;
        }
        if self.window_blocked() || now < self.next_send {
            return None;
        }
        let (rate, burst, mut size) = if self.frame_mode() {
            let v = self.cc.cc_info_video();
            (v.pacing_rate, v.packet_burst, v.packet_size)
        } else {
            let o = self.cc.cc_info(now);
            (o.pacing_rate, o.packet_burst, o.packet_size)
        };
        let rate = Rate::from_bytes_per_sec(rate.max(1) as f64);
        if self.inburst == 0 {
            // Compensate a late wake-up by keeping the schedule, unless we were idle.
            let late = now.since(self.next_send);
            self.burst_start = if late <= rate.tx_time(size as u64 * burst.max(1) as u64) {
                self.next_send
            } else {
                now
            };
        }
        let frame = if let Some(f) = self.frame.as_mut() {
            let remaining = f.size - f.sent;
            // As `udp_prague_sender.cpp`: the last packet of a frame is the remainder, at least
            // `PRAGUE_MINMTU` (150 B).
            size = remaining.min(size).max(MIN_PACKET_SIZE);
            let info = FrameInfo {
                frame_nr: f.nr,
                frame_sent: f.sent.min(i64::from(i32::MAX)) as i32,
                frame_size: f.size.min(i64::from(i32::MAX)) as i32,
            };
            f.sent += size;
            f.last_seq = self.packets_sent.wrapping_add(1);
            if f.sent >= f.size {
                self.frames_in_flight.push_back((f.nr, f.last_seq));
            }
            Some(info)
        } else {
            None
        };
        self.packets_sent = self.packets_sent.wrapping_add(1);
        let (timestamp, echoed_ts, ecn) = self.cc.time_info(now);
        let payload = size.max(0) as u64;
        self.inburst += 1;
        self.burst_bytes += payload;
        if self.inburst >= burst.max(1) {
            self.next_send = self.burst_start + rate.tx_time(self.burst_bytes);
            self.burst_start = self.next_send;
            self.inburst = 0;
            self.burst_bytes = 0;
        }
        if self.frame.is_some_and(|f| f.sent >= f.size) && self.inburst > 0 {
            // End of frame: close the partial burst so the next frame's pacing is exact.
            self.next_send = self.burst_start + rate.tx_time(self.burst_bytes);
            self.inburst = 0;
            self.burst_bytes = 0;
        }
        self.last_payload = payload;
        let wire = UDP_OVERHEAD + payload.min(u64::from(u32::MAX - UDP_OVERHEAD)) as u32;
        self.sent_packets += 1;
        self.sent_bytes += u64::from(wire);
        if self.sent_packets == 1 {
            self.last_progress = now;
        }
        Some(Transmit {
            header: UdpPragueHeader::Data {
                seq: self.packets_sent,
                timestamp,
                echoed_ts,
                frame,
            },
            size: wire,
            ecn,
        })
    }

    fn poll_timeout(&self) -> Option<Time> {
        if self.closed {
            // Wait for the last feedback, at most `send_timeout` after the last progress.
            return (!self.finished()).then_some(self.last_progress + self.cfg.send_timeout);
        }
        let timeout = self.last_progress + self.cfg.send_timeout;
        if self.window_blocked() {
            let t = if self.frame_mode() {
                timeout.min(self.next_tick)
            } else {
                timeout
            };
            return Some(t);
        }
        if self.frame_mode() && !self.frame_pending() {
            return Some(self.next_tick);
        }
        Some(self.next_send)
    }

    fn handle_timeout(&mut self, now: Time) {
        if self.closed {
            if now >= self.last_progress + self.cfg.send_timeout {
                self.gave_up = true;
            }
            return;
        }
        if self.window_blocked() && now >= self.last_progress + self.cfg.send_timeout {
            // `SND_TIMEOUT` / `ResetCCInfo`: reset after 1 s window-blocked with no ACK.
            self.cc.reset(now);
            self.reset_mark = self.packets_sent;
            self.last_progress = now;
            self.timeouts += 1;
            self.inburst = 0;
            self.burst_bytes = 0;
            self.next_send = now;
        }
        self.frame_ticks(now);
    }

    fn close(&mut self, _now: Time) {
        self.closed = true;
    }

    fn stats(&self) -> EndpointStats {
        let (_, ce, lost) = self.cc.echoed();
        EndpointStats {
            sent_packets: self.sent_packets,
            sent_bytes: self.sent_bytes,
            retransmits: 0,
            lost_packets: lost.max(0) as u64,
            delivered_bytes: self.delivered_bytes,
            received_packets: self.acks_received,
            ce_packets: ce.max(0) as u64,
            cwnd: (self.cc.fractional_window().max(0) / 1_000_000) as u64,
            srtt: Dur::from_micros(self.cc.srtt_us().max(0) as u64),
            pacing_rate: Some(Rate::from_bytes_per_sec(self.cc.pacing_rate() as f64)),
            alpha: Some(self.cc.alpha()),
            ecn_mode: "udp-prague",
            ecn_validation: match self.ecn_failed_at {
                Some(at) => crate::EcnValidation::Failed {
                    at,
                    reason: crate::EcnFailure::NotEct1,
                },
                // An ACK without error_L4S: every packet so far arrived ECT(1) or CE.
                None if self.acks_received > 0 => crate::EcnValidation::Capable,
                None => crate::EcnValidation::Testing,
            },
            congestion_events: self.cc.loss_events + self.cc.ce_events + self.timeouts,
            finished: self.finished(),
        }
    }

    fn take_rtt_sample(&mut self) -> Option<Dur> {
        self.rtt_sample.take()
    }
}

/// The udp_prague receiver (`udp_prague_receiver.cpp`, `PragueCC::DataReceivedSequence`).
#[derive(Debug)]
pub struct UdpPragueReceiver {
    cfg: UdpPragueReceiverConfig,
    received: i32,
    ce: i32,
    lost: i32,
    error_l4s: bool,
    ts_remote: i32,
    r_prev_ts: i32,
    have_ts: bool,
    last_seq: i32,
    pending: u32,
    ack_due: Option<Time>,
    ack_ready: bool,
    // stats
    sent_packets: u64,
    sent_bytes: u64,
    received_packets: u64,
    ce_packets: u64,
    delivered_bytes: u64,
}

impl UdpPragueReceiver {
    pub fn new(cfg: UdpPragueReceiverConfig) -> UdpPragueReceiver {
        UdpPragueReceiver {
            cfg,
            received: 0,
            ce: 0,
            lost: 0,
            error_l4s: false,
            ts_remote: 0,
            r_prev_ts: 0,
            have_ts: false,
            last_seq: 0,
            pending: 0,
            ack_due: None,
            ack_ready: false,
            sent_packets: 0,
            sent_bytes: 0,
            received_packets: 0,
            ce_packets: 0,
            delivered_bytes: 0,
        }
    }
    /// The echoed counters (received, CE, lost, error_L4S).
    pub fn counters(&self) -> (i32, i32, i32, bool) {
        (self.received, self.ce, self.lost, self.error_l4s)
    }
}

impl Endpoint for UdpPragueReceiver {
    type Header = UdpPragueHeader;

    fn handle_packet(&mut self, now: Time, header: &UdpPragueHeader, size: u32, ecn: Ecn) {
        let UdpPragueHeader::Data { seq, timestamp, .. } = *header else {
            return;
        };
        // `DataReceivedSequence`.
        self.received = self.received.wrapping_add(1);
        let skipped = seq.wrapping_sub(self.received).wrapping_sub(self.lost);
        if skipped >= 0 {
            self.lost = self.lost.wrapping_add(skipped);
        } else if self.lost > 0 {
            self.lost -= 1;
        }
        match ecn {
            Ecn::Ce => self.ce = self.ce.wrapping_add(1),
            Ecn::Ect1 => {}
            _ => self.error_l4s = true,
        }
        // Freeze the peer timestamp (newer ones only).
        if !self.have_ts || wdiff(timestamp, self.r_prev_ts) >= 0 {
            self.ts_remote = wire_time(now).wrapping_sub(timestamp);
            self.r_prev_ts = timestamp;
            self.have_ts = true;
        }
        self.received_packets += 1;
        if ecn == Ecn::Ce {
            self.ce_packets += 1;
        }
        self.delivered_bytes += u64::from(size.saturating_sub(UDP_OVERHEAD));
        self.last_seq = seq;
        self.pending += 1;
        if self.pending >= self.cfg.ack_every.max(1) {
            self.ack_ready = true;
            self.ack_due = None;
        } else if self.ack_due.is_none() {
            self.ack_due = Some(now + self.cfg.ack_delay);
        }
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit<UdpPragueHeader>> {
        if !self.ack_ready {
            return None;
        }
        self.ack_ready = false;
        self.pending = 0;
        let timestamp = wire_time(now);
        // "Defrosted" echo: the peer's timestamp advanced by our hold time.
        let echoed_ts = if self.have_ts {
            timestamp.wrapping_sub(self.ts_remote)
        } else {
            0
        };
        let echoed_ts = if echoed_ts == 0 && self.have_ts { 1 } else { echoed_ts };
        self.sent_packets += 1;
        self.sent_bytes += u64::from(ACK_WIRE_SIZE);
        Some(Transmit {
            header: UdpPragueHeader::Ack {
                ack_seq: self.last_seq,
                timestamp,
                echoed_ts,
                packets_received: self.received,
                packets_ce: self.ce,
                packets_lost: self.lost,
                error_l4s: self.error_l4s,
            },
            size: ACK_WIRE_SIZE,
            ecn: Ecn::Ect1,
        })
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.ack_due
    }

    fn handle_timeout(&mut self, now: Time) {
        if let Some(t) = self.ack_due {
            if now >= t {
                self.ack_due = None;
                self.ack_ready = true;
            }
        }
    }

    fn stats(&self) -> EndpointStats {
        EndpointStats {
            sent_packets: self.sent_packets,
            sent_bytes: self.sent_bytes,
            lost_packets: self.lost.max(0) as u64,
            delivered_bytes: self.delivered_bytes,
            received_packets: self.received_packets,
            ce_packets: self.ce_packets,
            ecn_mode: "udp-prague",
            ..Default::default()
        }
    }
}
