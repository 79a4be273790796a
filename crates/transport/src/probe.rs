//! Constant-rate probe flows for latency and loss measurement: [`ProbeSender`] emits
//! fixed-size packets at a fixed packet rate with a chosen ECN codepoint; [`ProbeReceiver`]
//! counts them (loss from sequence gaps with reordering correction, duplicates ignored, CE)
//! and keeps the one-way delay of the last packet.

use l4s_core::{Dur, Ecn, Time};
use serde::Deserialize;

use crate::endpoint::{Endpoint, EndpointStats, Transmit};

/// The probe header: a sequence number (0, 1, 2, ...) and the send time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeHeader {
    pub seq: u64,
    pub sent_at: Time,
}

/// Probe sender configuration.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProbeConfig {
    /// Packets per second (> 0).
    pub pps: u32,
    /// Frame size in bytes.
    pub size: u32,
    /// ECN codepoint of every packet.
    pub ecn: Ecn,
    /// Delay of the first packet after creation.
    pub start: Dur,
    /// Stop after this many packets (`None`: until `close`).
    pub count: Option<u64>,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig {
            pps: 64,
            size: 200,
            ecn: Ecn::Ect1,
            start: Dur::ZERO,
            count: None,
        }
    }
}

/// Emits packet k at `t0 + start + k·(1 s / pps)` (computed from k, so no drift).
#[derive(Debug, Clone)]
pub struct ProbeSender {
    cfg: ProbeConfig,
    t0: Time,
    next_seq: u64,
    stop_at: Option<Time>,
    sent_bytes: u64,
}

impl ProbeSender {
    pub fn new(cfg: ProbeConfig, now: Time) -> ProbeSender {
        ProbeSender {
            t0: now + cfg.start,
            cfg,
            next_seq: 0,
            stop_at: None,
            sent_bytes: 0,
        }
    }

    fn send_time(&self, k: u64) -> Time {
        let pps = self.cfg.pps.max(1) as u128;
        let off = (k as u128 * 1_000_000_000 / pps).min(u64::MAX as u128) as u64;
        self.t0 + Dur(off)
    }

    fn next_time(&self) -> Option<Time> {
        if self.cfg.count.is_some_and(|c| self.next_seq >= c) {
            return None;
        }
        let t = self.send_time(self.next_seq);
        if self.stop_at.is_some_and(|s| t >= s) {
            return None;
        }
        Some(t)
    }

    /// Packets sent so far.
    pub fn sent(&self) -> u64 {
        self.next_seq
    }
}

impl Endpoint for ProbeSender {
    type Header = ProbeHeader;

    fn handle_packet(&mut self, _now: Time, _h: &ProbeHeader, _size: u32, _ecn: Ecn) {}

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit<ProbeHeader>> {
        let t = self.next_time()?;
        if t > now {
            return None;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.sent_bytes += self.cfg.size as u64;
        Some(Transmit {
            header: ProbeHeader { seq, sent_at: now },
            size: self.cfg.size,
            ecn: self.cfg.ecn,
        })
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.next_time()
    }

    fn handle_timeout(&mut self, _now: Time) {}

    fn close(&mut self, now: Time) {
        self.stop_at = Some(self.stop_at.map_or(now, |s| s.min(now)));
    }

    fn stats(&self) -> EndpointStats {
        EndpointStats {
            sent_packets: self.next_seq,
            sent_bytes: self.sent_bytes,
            ecn_mode: "none",
            finished: self.next_time().is_none(),
            ..EndpointStats::default()
        }
    }
}

/// Width of the duplicate-detection window behind the highest sequence number seen.
const WINDOW: u64 = 4096;

/// Counts probe packets. Loss = (highest seq + 1) − unique packets received, so a late
/// (reordered) packet that fills a gap is no longer counted lost. Packets older than
/// 4096 sequence numbers behind the highest are counted `too_late` and ignored.
#[derive(Debug, Clone)]
pub struct ProbeReceiver {
    /// Bitmap of the last `WINDOW` sequence numbers (bit for seq s at s % WINDOW).
    seen: Vec<u64>,
    max_seq: Option<u64>,
    unique: u64,
    duplicates: u64,
    reordered: u64,
    too_late: u64,
    ce: u64,
    bytes: u64,
    last_owd: Option<Dur>,
}

impl Default for ProbeReceiver {
    fn default() -> Self {
        Self::new()
    }
}

impl ProbeReceiver {
    pub fn new() -> ProbeReceiver {
        ProbeReceiver {
            seen: vec![0; (WINDOW / 64) as usize],
            max_seq: None,
            unique: 0,
            duplicates: 0,
            reordered: 0,
            too_late: 0,
            ce: 0,
            bytes: 0,
            last_owd: None,
        }
    }
    fn bit(&self, s: u64) -> bool {
        let i = s % WINDOW;
        self.seen[(i / 64) as usize] >> (i % 64) & 1 == 1
    }
    fn set(&mut self, s: u64, v: bool) {
        let i = s % WINDOW;
        let w = &mut self.seen[(i / 64) as usize];
        if v {
            *w |= 1 << (i % 64)
        } else {
            *w &= !(1 << (i % 64))
        }
    }
    /// Unique packets received.
    pub fn received(&self) -> u64 {
        self.unique
    }
    /// Packets missing below the highest sequence number seen.
    pub fn lost(&self) -> u64 {
        self.max_seq
            .map_or(0, |m| m.saturating_add(1).saturating_sub(self.unique + self.too_late))
    }
    /// Packets that arrived after a higher sequence number.
    pub fn reordered(&self) -> u64 {
        self.reordered
    }
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }
    pub fn ce(&self) -> u64 {
        self.ce
    }
    /// One-way delay of the last packet (`now − sent_at`), taken once.
    pub fn take_owd_sample(&mut self) -> Option<Dur> {
        self.last_owd.take()
    }
}

impl Endpoint for ProbeReceiver {
    type Header = ProbeHeader;

    fn handle_packet(&mut self, now: Time, h: &ProbeHeader, size: u32, ecn: Ecn) {
        let s = h.seq;
        match self.max_seq {
            Some(m) if s <= m => {
                if m - s >= WINDOW {
                    self.too_late += 1;
                    return;
                }
                if self.bit(s) {
                    self.duplicates += 1;
                    return;
                }
                self.reordered += 1;
            }
            _ => {
                // Advance the window, clearing bits of sequence numbers now entering it.
                let from = self.max_seq.map_or(0, |m| m.saturating_add(1));
                if s - from >= WINDOW {
                    self.seen.iter_mut().for_each(|w| *w = 0);
                } else {
                    for x in from..s {
                        self.set(x, false);
                    }
                }
                self.max_seq = Some(s);
            }
        }
        self.set(s, true);
        self.unique += 1;
        self.bytes += size as u64;
        if ecn == Ecn::Ce {
            self.ce += 1;
        }
        self.last_owd = Some(now - h.sent_at);
    }

    fn poll_transmit(&mut self, _now: Time) -> Option<Transmit<ProbeHeader>> {
        None
    }

    fn poll_timeout(&self) -> Option<Time> {
        None
    }

    fn handle_timeout(&mut self, _now: Time) {}

    fn stats(&self) -> EndpointStats {
        EndpointStats {
            received_packets: self.unique,
            lost_packets: self.lost(),
            ce_packets: self.ce,
            delivered_bytes: self.bytes,
            ecn_mode: "none",
            ..EndpointStats::default()
        }
    }

    fn take_rtt_sample(&mut self) -> Option<Dur> {
        None
    }
}
