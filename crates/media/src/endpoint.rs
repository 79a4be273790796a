//! The media sender and receiver ([`l4s_transport::Endpoint`] implementations).
//!
//! **Sender** ([`MediaSender`]): the encoder ([`crate::source::Encoder`]) captures a frame
//! every `1/fps`; the frame is packetised into RTP packets of at most `packet_size` bytes
//! and put on the RTP queue; packets leave the queue
//! * with SCReAM: while the congestion window allows (`bytes in flight + size ≤ cwnd ·
//!   windowHeadroom + MSS`, self-clocking; [`crate::scream::Scream::can_send`]) at the pacing
//!   rate `1.5 × target` (SCReAM rule 7 in [`crate::scream`]); the queue is discarded and a
//!   key frame requested when its oldest packet waited longer than `max_rtp_queue_delay`
//!   (rule 8);
//! * with RT-Prague: at the controller's pacing rate in bursts of `packet_burst` packets
//!   (`udp_prague_sender.cpp`, `GetCCInfoVideo`); a frame starts when the previous one is
//!   fully sent and at most `frame_window` complete frames are in flight, its later bursts
//!   go while it still fits in the window, and a frame that cannot start waits for room
//!   until the next capture tick, which replaces it (the encoder skips it);
//!   (udp_prague also gates single packets by its packet window; with per-frame feedback
//!   that would stall a frame until the fallback report, so frames are gated instead.)
//!
//! Audio packets (video-call) are sent at their tick without waiting for the window or the
//! pacer (they are small and not rate-controlled) and are counted in flight like video.
//!
//! Each RFC 8888 report is decoded (malformed ones are counted in
//! [`MediaSenderStats::feedback_malformed`] and ignored); every reported packet is matched
//! to the packet log by extending its 16-bit sequence number; newly received packets,
//! their CE marks, the RTT (`now − send time − ATO` of the newest packet) and the one-way
//! delay (`report timestamp − ATO − send time`) drive the controller. Losses: with SCReAM
//! as its `detectLoss` finds them (a packet below the highest acknowledged sequence number
//! leaves the flight; one not acknowledged is lost once it was sent more than 30 ms, plus
//! how much older its frame is, before the packet acknowledged last, or once it is more
//! than 512 below the highest acknowledged), whatever the reports covered; with RT-Prague
//! as udp_prague's sender finds them (a packet a report gives as not received is lost at
//! once, and taken back if a later report has it), while packets before a report's
//! `begin_seq` that no received report covered (their reports were lost) leave the flight
//! without a congestion signal.
//!
//! **ECN validation** (RFC 9000 §13.4.2 style): while L4S, every reported
//! packet that was sent ECT(1) must come back ECT(1) or CE. Not-ECT means bleaching
//! ([`EcnFailure::Bleached`]), ECT(0) remarking ([`EcnFailure::Remarked`]); a report of a
//! sequence number never sent, or of an ECN-capable codepoint for a packet sent Not-ECT, is
//! [`EcnFailure::ImpossibleFeedback`]. The first ECT(1) arrival makes the path
//! `Capable`. On failure the sender sends Not-ECT, ignores CE from then on and runs the
//! classic reaction (SCReAM with L4S off; RT-Prague's `error_L4S` path).
//!
//! **Receiver** ([`MediaReceiver`]): records each packet's arrival time and ECN, assembles
//! frames ([`MediaReceiver::drain_frames`]) and sends a report after each frame's last
//! packet (marker) — with a fallback of one frame interval when that packet is lost — or
//! every `N` ms while packets arrive; and, like SCReAM's receiver (`ScreamRx` `ackDiff`), also
//! after every `feedback_packets` (16) unreported packets. A report covers the sequence numbers
//! since the last report plus an overlap of the 32 before (as SCReAM covers the last 32,
//! `kReportedRtpPackets`), at most 1024.

use crate::config::{Controller, CountConvention, FeedbackInterval, MediaParams, RTP_HEADER, UDP_OVERHEAD};
use crate::frames::FrameDone;
use crate::rfc8888::{self, CcfbReport, Metric, SsrcBlock};
use crate::rt_prague::{RtFeedback, RtPrague};
use crate::scream::{FeedbackEvent, Scream, ScreamParams};
use crate::source::{max_payload, packetise, Encoder};
use l4s_core::{Dur, Ecn, Rate, Rng, Time};
use l4s_transport::{EcnFailure, EcnValidation, Endpoint, EndpointStats, Transmit};
use std::collections::{BTreeMap, VecDeque};

/// SSRC of the video stream.
pub const VIDEO_SSRC: u32 = 0x4C34_5601;
/// SSRC of the audio stream.
pub const AUDIO_SSRC: u32 = 0x4C34_5602;
/// SSRC of the receiver (RTCP sender).
pub const RECEIVER_SSRC: u32 = 0x4C34_52FF;
/// SCReAM's reorder time (`ScreamTx.h` `kReorderTime`): a packet is lost when one sent this much
/// later (beyond the age difference of their frames) has been acknowledged.
pub const REORDER_TIME: Dur = Dur::from_millis(30);
/// No valid feedback for this long with packets in flight: everything in flight is
/// declared lost and the controller resets (udp_prague's 1 s send timeout, `SND_TIMEOUT`).
pub const FEEDBACK_TIMEOUT: Dur = Dur::from_secs(1);
/// Sequence numbers re-reported from before the last report (SCReAM's 32).
pub const REPORT_OVERLAP: u64 = 32;
/// Most sequence numbers per report and stream.
pub const MAX_REPORT_COVER: u64 = 1024;
const RX_RING: usize = 2048;
/// Packet-log entries kept per stream before the oldest unresolved are forced lost.
const MAX_LOG: usize = 32_768;
/// Frames being assembled at the receiver before the oldest is forgotten.
const MAX_PARTIAL_FRAMES: usize = 4096;
/// How far ahead of the receiver's clock a frame number may be (see
/// `MediaReceiver::plausible_frame`).
pub const FRAME_CLOCK_SLACK: Dur = Dur::from_secs(10);

/// A media (RTP) packet's header. No heap allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MediaData {
    /// [`VIDEO_SSRC`] or [`AUDIO_SSRC`].
    pub ssrc: u32,
    /// RTP sequence number (per SSRC, wraps at 65 535).
    pub seq: u16,
    /// Video frame number (audio: audio packet number).
    pub frame: u64,
    /// Index of this packet in its frame, and the frame's packet count.
    pub index: u32,
    pub count: u32,
    /// Encoded bytes of the frame (RTP payloads).
    pub frame_bytes: u32,
    /// When the frame's first packet was sent.
    pub frame_first_sent: Time,
    /// When the encoder captured the frame (audio: the packet's send time); lets a frame
    /// meter tell frames captured before its window from those captured in it.
    pub captured: Time,
    /// When this packet was sent.
    pub sent_at: Time,
    pub is_audio: bool,
    /// RTP marker bit: the last packet of the frame.
    pub marker: bool,
    pub key: bool,
}

/// An RFC 8888 CCFB report as bytes (a faulty path may truncate or corrupt it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Feedback {
    pub bytes: Vec<u8>,
}

/// What media endpoints exchange.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MediaHeader {
    Data(MediaData),
    Feedback(Feedback),
}

/// Media-specific sender counters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MediaSenderStats {
    /// The controller's current target bitrate.
    pub target_bitrate: Rate,
    /// The bitrate the encoder currently produces (target after the reaction delay).
    pub encoder_bitrate: Rate,
    pub frames_encoded: u64,
    /// Frames the encoder did not produce because the sender had no room (RT-Prague).
    pub frames_skipped: u64,
    pub key_frames: u64,
    /// RTP queue discards (SCReAM rule 8), and the packets they dropped.
    pub rtp_queue_discards: u64,
    pub rtp_queue_discarded_packets: u64,
    /// Delay of the oldest packet in the RTP queue now.
    pub rtp_queue_delay: Dur,
    pub rtp_queue_packets: u64,
    /// Feedback reports received and processed.
    pub feedback_reports: u64,
    /// Reports that did not decode or were implausible (counted and ignored).
    pub feedback_malformed: u64,
    /// Reports older than one already processed (reordered on the reverse path; ignored).
    pub feedback_stale: u64,
    /// Feedback timeouts (no valid report for 1 s with packets in flight).
    pub feedback_timeouts: u64,
    /// Probes sent while window-blocked without feedback.
    pub probes: u64,
    /// Packets no received report ever covered (their reports were lost); not counted as
    /// lost.
    pub unreported_packets: u64,
    pub audio_packets: u64,
    /// Sending ECT(1) and reacting as L4S now.
    pub l4s_active: bool,
    /// SCReAM's network queue-delay estimate (zero for RT-Prague).
    pub queue_delay: Dur,
    pub bytes_in_flight: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PktState {
    InFlight,
    Acked,
    Lost,
    /// Never covered by a received report (its reports were lost): out of flight, no
    /// congestion signal.
    Unreported,
}

#[derive(Clone, Copy, Debug)]
struct SentPkt {
    size: u32,
    sent_at: Time,
    /// Capture time of its frame (its RTP timestamp).
    captured: Time,
    /// Its bytes count in `bytes_in_flight` (SCReAM stops counting a packet once a later
    /// one is acknowledged, before it is declared lost or acknowledged itself).
    counted: bool,
    ecn: Ecn,
    state: PktState,
}

#[derive(Clone, Debug)]
struct TxStream {
    ssrc: u32,
    /// Extended sequence number of the next packet (the first is 0).
    next_ext: u64,
    log: VecDeque<SentPkt>,
    /// Extended sequence number of `log[0]`.
    log_base: u64,
    /// Remember packets counted lost so that a later report can take the loss back
    /// (RT-Prague, as udp_prague's `pkts_stat` does), for [`LOST_MEMORY`] packets.
    keep_lost: bool,
    /// Send time of the last packet acknowledged and the latest capture time among those
    /// acknowledged (SCReAM's per-stream `timeTxAck_ntp` and `timeStampAckHigh`).
    ack_tx: Option<Time>,
    ack_captured_high: Time,
    /// Highest extended sequence number acknowledged (SCReAM's `highestSeqNr`).
    ack_high: Option<u64>,
}

impl SentPkt {
    /// Take the packet's bytes out of `bif` once.
    fn uncount(&mut self, bif: &mut u64) {
        if self.counted {
            self.counted = false;
            *bif = bif.saturating_sub(u64::from(self.size));
        }
    }
}

/// SCReAM's loss window: a packet this many sequence numbers below the highest acknowledged
/// one that was never acknowledged is lost (`detectLoss`, 512 below `hiSeqAck`).
const LOSS_WINDOW: u64 = 512;

/// How many packets after one counted lost a report may still take the loss back
/// (udp_prague remembers 65 536, its `PKT_BUFFER_SIZE`; a report that late is rare).
const LOST_MEMORY: u64 = 4096;

impl TxStream {
    fn new(ssrc: u32, keep_lost: bool) -> TxStream {
        TxStream {
            ssrc,
            next_ext: 0,
            log: VecDeque::new(),
            log_base: 0,
            keep_lost,
            ack_tx: None,
            ack_captured_high: Time::ZERO,
            ack_high: None,
        }
    }
    /// Extend a reported 16-bit sequence number around the highest sent. `Err(())` if it
    /// lies ahead of the highest sent (never sent).
    fn extend(&self, seq: u16) -> Result<Option<u64>, ()> {
        if self.next_ext == 0 {
            return Err(());
        }
        let highest = self.next_ext - 1;
        let d = (highest as u16).wrapping_sub(seq) as i16;
        if d < 0 {
            return Err(());
        }
        Ok(highest.checked_sub(d as u64))
    }
    fn get_mut(&mut self, ext: u64) -> Option<&mut SentPkt> {
        let i = ext.checked_sub(self.log_base)?;
        self.log.get_mut(usize::try_from(i).ok()?)
    }
    fn prune(&mut self) {
        let keep = |s: &TxStream, p: &SentPkt| {
            p.state == PktState::InFlight
                || (s.keep_lost && p.state == PktState::Lost && s.next_ext - s.log_base <= LOST_MEMORY)
        };
        while self.log.front().is_some_and(|p| !keep(self, p)) {
            self.log.pop_front();
            self.log_base += 1;
        }
    }
}

/// What [`MediaSender::frame_gate`] decides for a frame whose capture tick has come.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Gate {
    Send,
    /// Send it as a probe although the frame window is full.
    Probe,
    /// Its slot has passed while it waited: skip it.
    Skip,
    /// Wait for room.
    Hold,
}

#[derive(Clone, Copy, Debug)]
struct Queued {
    frame: u64,
    index: u32,
    count: u32,
    /// RTP packet size (payload + RTP header).
    size: u32,
    frame_bytes: u32,
    enqueued: Time,
    key: bool,
}

#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)]
enum Ctrl {
    Scream(Scream),
    RtPrague(RtPrague),
}

enum Plausible {
    Yes,
    Stale,
    No,
}

/// Per-report totals.
#[derive(Clone, Copy, Debug, Default)]
struct ReportTally {
    acked_pkts: u64,
    acked_bytes: u64,
    ce_pkts: u64,
    ce_bytes: u64,
    unlost: u64,
    lost_pkts: u64,
    newest: Option<(u64, u32, Time, u16)>, // (ext, ssrc, sent_at, ato)
}

/// The media sender.
#[derive(Clone, Debug)]
pub struct MediaSender {
    p: MediaParams,
    enc: Encoder,
    ctrl: Ctrl,
    video: TxStream,
    audio: TxStream,
    queue: VecDeque<Queued>,
    /// First-send time of the frame currently being sent.
    frame_first_sent: Option<(u64, Time)>,
    next_send: Time,
    /// Scratch: the RTT of each packet the report being handled newly reports received.
    report_rtts: Vec<Dur>,
    burst_start: Time,
    inburst: i64,
    burst_bytes: u64,
    /// RT-Prague: frames in flight (frame number, extended seq of its last packet).
    frames_in_flight: VecDeque<(u64, u64)>,
    next_audio: Option<Time>,
    audio_no: u64,
    bytes_in_flight: u64,
    ecn: Ecn,
    validation: EcnValidation,
    ce_trusted: bool,
    last_progress: Time,
    /// Latest time seen (for stats).
    last_now: Time,
    closed: bool,
    rtt_sample: Option<Dur>,
    mean_frame_bytes: f64,
    last_frame_bytes: f64,
    /// When the last valid report arrived (or the sender started).
    last_report: Time,
    /// Probes sent since the last valid report, and when the last one left.
    probes_unanswered: u32,
    last_probe: Time,
    probes: u64,
    /// Report timestamp of the last accepted report and when it arrived.
    last_rts: Option<(u32, Time)>,
    stale: u64,
    /// Age of the oldest queued packet when the last frame was captured.
    queue_age_at_capture: Dur,
    rtp_rate: f64,
    /// Packets sent on both streams (RT-Prague's `packets_sent`).
    packets_sent: u64,
    // counters
    sent_packets: u64,
    sent_bytes: u64,
    acked_pkts: u64,
    acked_bytes: u64,
    lost_pkts: u64,
    ce_pkts: u64,
    reports: u64,
    malformed: u64,
    discards: u64,
    discarded_pkts: u64,
    frames_skipped: u64,
    /// A frame whose tick has come waits for room in RT-Prague's frame window.
    frame_held: bool,
    audio_packets: u64,
    feedback_timeouts: u64,
    unreported_pkts: u64,
}

impl MediaSender {
    pub fn new(p: &MediaParams, rng: Rng, now: Time) -> MediaSender {
        let ctrl = match p.controller {
            Controller::Scream => Ctrl::Scream(Scream::new(
                ScreamParams {
                    l4s: p.l4s,
                    mss: p.packet_size,
                    min_bitrate: p.min_bitrate,
                    max_bitrate: p.max_bitrate,
                    start_bitrate: p.start_bitrate,
                    frame_interval: p.frame_interval,
                },
                now,
            )),
            Controller::RtPrague => Ctrl::RtPrague(RtPrague::new(p, now)),
        };
        let mut enc = Encoder::new(p, rng, now);
        let target = match &ctrl {
            Ctrl::Scream(s) => s.target_bitrate(),
            Ctrl::RtPrague(r) => r.target_bitrate(),
        };
        enc.set_target(now, target);
        let start_frame = p.start_bitrate.bytes_per_sec() / f64::from(p.fps);
        MediaSender {
            enc,
            ctrl,
            video: TxStream::new(VIDEO_SSRC, p.controller == Controller::RtPrague),
            audio: TxStream::new(AUDIO_SSRC, p.controller == Controller::RtPrague),
            queue: VecDeque::new(),
            frame_first_sent: None,
            next_send: now,
            report_rtts: Vec::new(),
            burst_start: now,
            inburst: 0,
            burst_bytes: 0,
            frames_in_flight: VecDeque::new(),
            next_audio: p.audio.map(|_| now),
            audio_no: 0,
            bytes_in_flight: 0,
            ecn: p.ecn,
            validation: if p.l4s {
                EcnValidation::Testing
            } else {
                EcnValidation::NotApplicable
            },
            ce_trusted: p.ecn.is_ect(),
            last_progress: now,
            last_now: now,
            closed: false,
            rtt_sample: None,
            mean_frame_bytes: start_frame,
            queue_age_at_capture: Dur::ZERO,
            last_rts: None,
            stale: 0,
            last_report: now,
            probes_unanswered: 0,
            last_probe: now,
            probes: 0,
            last_frame_bytes: start_frame,
            rtp_rate: p.start_bitrate.0 as f64,
            packets_sent: 0,
            sent_packets: 0,
            sent_bytes: 0,
            acked_pkts: 0,
            acked_bytes: 0,
            lost_pkts: 0,
            ce_pkts: 0,
            reports: 0,
            malformed: 0,
            discards: 0,
            discarded_pkts: 0,
            frames_skipped: 0,
            frame_held: false,
            audio_packets: 0,
            feedback_timeouts: 0,
            unreported_pkts: 0,
            p: p.clone(),
        }
    }

    pub fn params(&self) -> &MediaParams {
        &self.p
    }

    /// The SCReAM controller, if that is the one in use.
    pub fn scream(&self) -> Option<&Scream> {
        match &self.ctrl {
            Ctrl::Scream(s) => Some(s),
            Ctrl::RtPrague(_) => None,
        }
    }

    /// The RT-Prague controller, if that is the one in use.
    pub fn rt_prague(&self) -> Option<&RtPrague> {
        match &self.ctrl {
            Ctrl::RtPrague(r) => Some(r),
            Ctrl::Scream(_) => None,
        }
    }

    /// The controller's current target bitrate.
    pub fn target_bitrate(&self) -> Rate {
        match &self.ctrl {
            Ctrl::Scream(s) => s.target_bitrate(),
            Ctrl::RtPrague(r) => r.target_bitrate(),
        }
    }

    fn rtp_queue_delay(&self, now: Time) -> Dur {
        self.queue.front().map_or(Dur::ZERO, |q| now - q.enqueued)
    }

    pub fn media_stats(&self) -> MediaSenderStats {
        MediaSenderStats {
            target_bitrate: self.target_bitrate(),
            encoder_bitrate: self.enc.bitrate(),
            frames_encoded: self.enc.frames_encoded,
            frames_skipped: self.frames_skipped,
            key_frames: self.enc.key_frames,
            rtp_queue_discards: self.discards,
            rtp_queue_discarded_packets: self.discarded_pkts,
            rtp_queue_delay: self.rtp_queue_delay(self.last_now),
            rtp_queue_packets: self.queue.len() as u64,
            feedback_reports: self.reports,
            feedback_malformed: self.malformed,
            feedback_stale: self.stale,
            feedback_timeouts: self.feedback_timeouts,
            probes: self.probes,
            unreported_packets: self.unreported_pkts,
            audio_packets: self.audio_packets,
            l4s_active: self.ecn == Ecn::Ect1,
            queue_delay: self.scream().map_or(Dur::ZERO, |s| s.queue_delay()),
            bytes_in_flight: self.bytes_in_flight,
        }
    }

    /// ECN validation failed at `now` for `reason`: send Not-ECT, ignore CE, go classic.
    fn fail_validation(&mut self, now: Time, reason: EcnFailure) {
        if self.validation.is_failed() || self.validation == EcnValidation::NotApplicable {
            return;
        }
        self.validation = EcnValidation::Failed { at: now, reason };
        self.ecn = Ecn::NotEct;
        self.ce_trusted = false;
        match &mut self.ctrl {
            Ctrl::Scream(s) => s.disable_l4s(),
            Ctrl::RtPrague(r) => r.set_error_l4s(),
        }
    }

    /// Check one reported codepoint against the one sent (RFC 9000 §13.4.2.1-style).
    pub fn check_ecn(sent: Ecn, reported: Ecn) -> Result<bool, EcnFailure> {
        match (sent, reported) {
            (Ecn::Ect1, Ecn::Ect1) => Ok(true),
            (Ecn::Ect1, Ecn::Ce) => Ok(false),
            (Ecn::Ect1, Ecn::NotEct) => Err(EcnFailure::Bleached),
            (Ecn::Ect1, Ecn::Ect0) => Err(EcnFailure::Remarked),
            (Ecn::NotEct, Ecn::NotEct) => Ok(false),
            (Ecn::NotEct, _) => Err(EcnFailure::ImpossibleFeedback),
            // ECT(0) is not sent by an L4S sender; judge it like RFC 9000 would.
            (Ecn::Ect0, Ecn::Ect0 | Ecn::Ce) => Ok(false),
            (Ecn::Ect0, Ecn::NotEct) => Err(EcnFailure::Bleached),
            (Ecn::Ect0, Ecn::Ect1) => Err(EcnFailure::Remarked),
            (Ecn::Ce, _) => Ok(false),
        }
    }

    fn controller_ecn(&self) -> Ecn {
        self.ecn
    }

    /// Encoder frames, audio ticks, RTP queue discard and feedback timeout up to `now`.
    fn advance(&mut self, now: Time) {
        self.last_now = self.last_now.max(now);
        if self.closed {
            self.check_feedback_timeout(now);
            return;
        }
        self.frame_held = false;
        while self.enc.next_frame_time() <= now {
            match self.frame_gate(now) {
                Gate::Send => self.on_frame_tick(now),
                Gate::Probe => {
                    self.note_probe(now);
                    self.on_frame_tick(now);
                }
                Gate::Skip => {
                    self.enc.skip_frame(now);
                    self.frames_skipped += 1;
                }
                Gate::Hold => {
                    self.frame_held = true;
                    break;
                }
            }
        }
        if self.p.controller == Controller::Scream {
            if let Some(front) = self.queue.front() {
                if now - front.enqueued > self.p.max_rtp_queue_delay {
                    // SCReAM rule 8 (`Stream::updateTargetBitrate`): discard the RTP queue and
                    // ask for a key frame.
                    self.discards += 1;
                    self.discarded_pkts += self.queue.len() as u64;
                    self.queue.clear();
                    self.enc.request_key_frame();
                }
            }
        }
        self.check_feedback_timeout(now);
    }

    fn check_feedback_timeout(&mut self, now: Time) {
        if self.bytes_in_flight == 0 || now - self.last_progress < FEEDBACK_TIMEOUT {
            return;
        }
        self.feedback_timeouts += 1;
        for s in [&mut self.video, &mut self.audio] {
            for pkt in s.log.iter_mut().filter(|p| p.state == PktState::InFlight) {
                pkt.state = PktState::Lost;
                self.lost_pkts += 1;
            }
            s.prune();
        }
        self.bytes_in_flight = 0;
        self.frames_in_flight.clear();
        self.last_progress = now;
        match &mut self.ctrl {
            Ctrl::Scream(s) => s.on_feedback_timeout(now),
            Ctrl::RtPrague(r) => r.reset(now),
        }
        let t = self.target_bitrate();
        self.enc.set_target(now, t);
    }

    /// Forget the frames in flight that are no longer: every packet of theirs was
    /// acknowledged or counted lost.
    fn refresh_frames_in_flight(&mut self) {
        while let Some(&(_, last)) = self.frames_in_flight.front() {
            if self.in_flight(last) {
                break;
            }
            self.frames_in_flight.pop_front();
        }
    }

    /// RT-Prague's frame window (`udp_prague_sender.cpp`, real-time mode): a frame starts
    /// when the previous one is fully sent and at most `frame_window` complete frames are
    /// in flight (`frame_inflight <= frame_window`, with `is_sending` still 0). A frame
    /// that cannot start waits, and starts as soon as an acknowledgement frees room; the
    /// next capture tick replaces it (udp_prague advances its frame number to the current
    /// frame time), and the one it replaces counts as skipped. With the window full and
    /// nothing else to send, a probe frame may go after 2·sRTT + 10 ms of silence
    /// ([`Self::probe_time`]). SCReAM always encodes.
    fn frame_gate(&mut self, now: Time) -> Gate {
        let window = match &self.ctrl {
            Ctrl::RtPrague(r) => r.video().frame_window.max(1) as usize,
            Ctrl::Scream(_) => return Gate::Send,
        };
        self.refresh_frames_in_flight();
        let full = self.frames_in_flight.len() > window;
        if !full && self.queue.is_empty() {
            return Gate::Send;
        }
        if full && self.queue.is_empty() && self.may_probe(now) {
            return Gate::Probe;
        }
        if self.enc.next_frame_time() + self.p.frame_interval <= now {
            Gate::Skip
        } else {
            Gate::Hold
        }
    }

    fn on_frame_tick(&mut self, now: Time) {
        let rt_packet = match &self.ctrl {
            Ctrl::RtPrague(r) => Some(r.video().packet_size.clamp(150, i64::from(self.p.packet_size)) as u32),
            Ctrl::Scream(_) => None,
        };
        // The RTP queue delay SCReAM's rateAdjustFactor watches (rule 7,
        // `Stream::newMediaFrame`): the age of what is left of earlier frames when a new frame
        // is captured. A paced frame normally drains within 2/3 of a frame interval (pacing at
        // 1.5 × target), so a leftover means the encoder produces more than the window lets
        // out. (Sampling the age at arbitrary instants would count the normal pacing of a frame
        // as queueing.)
        let capture = self.enc.next_frame_time();
        self.queue_age_at_capture = self.queue.front().map_or(Dur::ZERO, |q| capture - q.enqueued);
        let Some(f) = self.enc.poll_frame(now) else {
            return;
        };
        let pkt_size = rt_packet.unwrap_or(self.p.packet_size).max(RTP_HEADER + 1);
        let (n, size_of) = packetise(f.bytes, max_payload(pkt_size));
        if let Ctrl::Scream(s) = &mut self.ctrl {
            s.on_frame(
                self.queue_age_at_capture,
                f64::from(f.bytes) + f64::from(n * RTP_HEADER),
            );
        }
        for i in 0..n {
            self.queue.push_back(Queued {
                frame: f.number,
                index: i,
                count: n,
                size: size_of(i) + RTP_HEADER,
                frame_bytes: f.bytes,
                enqueued: f.captured,
                key: f.key,
            });
        }
        let b = f64::from(f.bytes);
        self.last_frame_bytes = b;
        self.mean_frame_bytes += (b - self.mean_frame_bytes) / 16.0;
        self.rtp_rate += (b * 8.0 * f64::from(self.p.fps) - self.rtp_rate) / 8.0;
        if self.p.controller == Controller::RtPrague {
            // A frame starts a fresh pacing schedule at its tick.
            self.inburst = 0;
            self.burst_bytes = 0;
            self.next_send = self.next_send.max(f.captured);
        }
        self.update_target(now);
    }

    fn update_target(&mut self, now: Time) {
        let ratio = self.last_frame_bytes / self.mean_frame_bytes.max(1.0);
        let t = match &mut self.ctrl {
            Ctrl::Scream(s) => s.update_rate(ratio),
            Ctrl::RtPrague(r) => r.target_bitrate(),
        };
        self.enc.set_target(now, t);
    }

    /// When a window-blocked sender may send one probe: no valid report for
    /// 2·sRTT + 10 ms (like a QUIC probe timeout, RFC 9002 §6.2). The probe makes the receiver send a new
    /// report, whose 32-packet overlap re-covers a lost one; without it a lost last report
    /// leaves the window full until the 1 s feedback timeout.
    /// Unanswered probes back off exponentially (×2 each).
    fn probe_time(&self) -> Option<Time> {
        let srtt = match &self.ctrl {
            Ctrl::Scream(s) => s.srtt(),
            Ctrl::RtPrague(r) => Dur::from_micros(r.cc().srtt_us().max(0) as u64),
        };
        let pto = (srtt * 2 + Dur::from_millis(10)) * (1u64 << self.probes_unanswered.min(6));
        let base = if self.probes_unanswered == 0 {
            self.last_report
        } else {
            self.last_probe
        };
        Some(base + pto)
    }

    fn note_probe(&mut self, now: Time) {
        self.probes_unanswered += 1;
        self.last_probe = now;
        self.probes += 1;
    }

    fn may_probe(&self, now: Time) -> bool {
        self.probe_time().is_some_and(|t| now >= t)
    }

    fn pacing_rate(&self) -> Rate {
        match &self.ctrl {
            Ctrl::Scream(s) => s.pacing_rate(Rate(self.rtp_rate.max(0.0) as u64)),
            Ctrl::RtPrague(r) => r.pacing_rate(),
        }
    }

    fn window_open(&self, q: &Queued) -> bool {
        match &self.ctrl {
            Ctrl::Scream(s) => s.can_send(self.bytes_in_flight, q.size),
            // udp_prague sends a frame's packets while `is_sending + complete frames in
            // flight <= frame_window`: its first burst with up to the window in flight, the
            // rest only while the frame itself still fits.
            Ctrl::RtPrague(r) => {
                let window = r.video().frame_window.max(1) as usize;
                let done = self
                    .frames_in_flight
                    .iter()
                    .filter(|&&(_, last)| !self.in_flight(last))
                    .count();
                let complete = self.frames_in_flight.len() - done;
                if q.index == 0 {
                    complete <= window
                } else {
                    complete < window
                }
            }
        }
    }

    /// Whether the video packet `ext` is still in flight.
    fn in_flight(&self, ext: u64) -> bool {
        ext.checked_sub(self.video.log_base)
            .and_then(|k| self.video.log.get(k as usize))
            .is_some_and(|p| p.state == PktState::InFlight)
    }

    fn record_sent(&mut self, audio: bool, size: u32, captured: Time, now: Time) -> u64 {
        let ecn = self.controller_ecn();
        let s = if audio { &mut self.audio } else { &mut self.video };
        let ext = s.next_ext;
        s.next_ext += 1;
        s.log.push_back(SentPkt {
            size,
            sent_at: now,
            captured,
            counted: true,
            ecn,
            state: PktState::InFlight,
        });
        if s.log.len() > MAX_LOG {
            if let Some(old) = s.log.front_mut() {
                if old.state == PktState::InFlight {
                    old.state = PktState::Lost;
                    old.uncount(&mut self.bytes_in_flight);
                    self.lost_pkts += 1;
                }
            }
            s.prune();
        }
        if self.bytes_in_flight == 0 {
            self.last_progress = now;
        }
        self.bytes_in_flight += u64::from(size);
        self.packets_sent += 1;
        self.sent_packets += 1;
        self.sent_bytes += u64::from(size + UDP_OVERHEAD);
        if let Ctrl::Scream(sc) = &mut self.ctrl {
            sc.on_sent(now, self.bytes_in_flight);
        }
        ext
    }

    fn send_audio(&mut self, now: Time) -> Option<Transmit<MediaHeader>> {
        let a = self.p.audio?;
        let t = self.next_audio?;
        if t > now {
            return None;
        }
        self.next_audio = Some(t + a.interval);
        let ext = self.record_sent(true, a.size, now, now);
        let no = self.audio_no;
        self.audio_no += 1;
        self.audio_packets += 1;
        Some(Transmit {
            header: MediaHeader::Data(MediaData {
                ssrc: AUDIO_SSRC,
                seq: ext as u16,
                frame: no,
                index: 0,
                count: 1,
                frame_bytes: a.size - RTP_HEADER,
                frame_first_sent: now,
                captured: now,
                sent_at: now,
                is_audio: true,
                marker: true,
                key: false,
            }),
            size: a.size + UDP_OVERHEAD,
            ecn: self.ecn,
        })
    }

    fn send_video(&mut self, now: Time) -> Option<Transmit<MediaHeader>> {
        let q = *self.queue.front()?;
        if now < self.next_send {
            return None;
        }
        if !self.window_open(&q) {
            if !self.may_probe(now) {
                return None;
            }
            self.note_probe(now);
        }
        self.queue.pop_front();
        let first_sent = match self.frame_first_sent {
            Some((f, t)) if f == q.frame => t,
            _ => {
                self.frame_first_sent = Some((q.frame, now));
                now
            }
        };
        let ext = self.record_sent(false, q.size, q.enqueued, now);
        let rate = self.pacing_rate();
        let wire = u64::from(q.size + UDP_OVERHEAD);
        let last = q.index + 1 == q.count;
        match &self.ctrl {
            Ctrl::Scream(_) => {
                // Per-packet pacing; a late wake-up does not earn a burst.
                let base = if now > self.next_send + Dur::from_millis(1) {
                    now
                } else {
                    self.next_send.max(now.min(self.next_send))
                };
                self.next_send = base + rate.tx_time(wire);
            }
            Ctrl::RtPrague(r) => {
                // udp_prague paces what it hands to the socket, the UDP payload
                // (`packet_size` at the pacing rate), not the frame on the wire.
                let payload = u64::from(q.size);
                let burst = r.video().packet_burst.max(1);
                if self.inburst == 0 {
                    let late = now - self.next_send;
                    self.burst_start = if late <= rate.tx_time(payload * burst as u64) {
                        self.next_send
                    } else {
                        now
                    };
                }
                self.inburst += 1;
                self.burst_bytes += payload;
                if self.inburst >= burst || last {
                    self.next_send = self.burst_start + rate.tx_time(self.burst_bytes);
                    self.burst_start = self.next_send;
                    self.inburst = 0;
                    self.burst_bytes = 0;
                }
                if last {
                    self.frames_in_flight.push_back((q.frame, ext));
                }
            }
        }
        Some(Transmit {
            header: MediaHeader::Data(MediaData {
                ssrc: VIDEO_SSRC,
                seq: ext as u16,
                frame: q.frame,
                index: q.index,
                count: q.count,
                frame_bytes: q.frame_bytes,
                frame_first_sent: first_sent,
                captured: q.enqueued,
                sent_at: now,
                is_audio: false,
                marker: last,
                key: q.key,
            }),
            size: q.size + UDP_OVERHEAD,
            ecn: self.ecn,
        })
    }

    /// Checks of a report that decoded but may still be corrupt (bytes flipped by a faulty
    /// path, which RTCP over UDP without a checksum would let through):
    /// * its timestamp must not be older than the last accepted report's (else stale) and
    ///   must have advanced like our clock, within 1 s;
    /// * no packet may be reported as arriving before it was sent (ATO larger than the
    ///   time since sending).
    fn plausible(&self, now: Time, r: &CcfbReport) -> Plausible {
        if let Some((rts, at)) = self.last_rts {
            let d_rts = r.report_timestamp.wrapping_sub(rts) as i32;
            if d_rts < 0 {
                return Plausible::Stale;
            }
            let d_rts = Dur::from_nanos(i64::from(d_rts) as u64 * 1_000_000_000 / 65_536);
            let d_local = now - at;
            if d_rts > d_local + Dur::from_secs(1) || d_local > d_rts + Dur::from_secs(1) {
                return Plausible::No;
            }
        }
        for b in &r.blocks {
            let stream = match b.ssrc {
                VIDEO_SSRC => &self.video,
                AUDIO_SSRC => &self.audio,
                _ => continue,
            };
            for (i, m) in b.metrics.iter().enumerate() {
                let Some(off) = m.offset() else { continue };
                let Ok(Some(ext)) = stream.extend(b.begin_seq.wrapping_add(i as u16)) else {
                    continue;
                };
                let Some(pkt) = ext
                    .checked_sub(stream.log_base)
                    .and_then(|k| stream.log.get(k as usize))
                else {
                    continue;
                };
                // ATO is rounded to 1/1024 s: allow one unit.
                if off > (now - pkt.sent_at) + rfc8888::ato_to_dur(1) {
                    return Plausible::No;
                }
            }
        }
        Plausible::Yes
    }

    /// Process one decoded report at `now`.
    fn on_report(&mut self, now: Time, r: &CcfbReport) {
        let mut tally = ReportTally::default();
        self.report_rtts.clear();
        let validating = matches!(self.validation, EcnValidation::Testing | EcnValidation::Capable);
        let mut failure: Option<EcnFailure> = None;
        let mut capable = false;
        let ce_trusted = self.ce_trusted;
        // udp_prague's RFC 8888 sender (`rfc8888ack_t::get_frame_stat`, pkt_format.h) counts a
        // packet lost as soon as a report covers it as not received and takes the loss back
        // if a later report has it received; it has no reorder time. SCReAM waits for its
        // `detectLoss` rules below. (udp_prague also counts lost the packets of a report
        // that was itself lost, because its receiver reports each packet once; ours covers
        // at least the last 32 packets, and with RT-Prague a packet no received report
        // covered gives no signal.)
        let at_once = matches!(self.ctrl, Ctrl::RtPrague(_));
        for b in &r.blocks {
            let stream = if b.ssrc == VIDEO_SSRC {
                &mut self.video
            } else if b.ssrc == AUDIO_SSRC {
                &mut self.audio
            } else {
                continue;
            };
            let ssrc = stream.ssrc;
            // RT-Prague: packets before the block that no received report covered never will
            // be, and give no signal (`Unreported`). SCReAM keeps every packet that was not
            // acknowledged until its `detectLoss` rules below declare it lost, whatever the
            // reports covered.
            if let Some(begin) = stream.extend(b.begin_seq).ok().flatten().filter(|_| at_once) {
                let n = begin.saturating_sub(stream.log_base).min(stream.log.len() as u64) as usize;
                for pkt in stream.log.iter_mut().take(n) {
                    if pkt.state == PktState::InFlight {
                        pkt.state = PktState::Unreported;
                        pkt.uncount(&mut self.bytes_in_flight);
                        self.unreported_pkts += 1;
                    }
                }
            }
            for (i, m) in b.metrics.iter().enumerate() {
                let seq = b.begin_seq.wrapping_add(i as u16);
                if !m.received {
                    let ext = stream.extend(seq).ok().flatten().filter(|_| at_once);
                    if let Some(pkt) = ext.and_then(|e| stream.get_mut(e)) {
                        if pkt.state == PktState::InFlight {
                            pkt.state = PktState::Lost;
                            pkt.uncount(&mut self.bytes_in_flight);
                            tally.lost_pkts += 1;
                        }
                    }
                    continue;
                }
                let ext = match stream.extend(seq) {
                    Err(()) => {
                        failure.get_or_insert(EcnFailure::ImpossibleFeedback);
                        continue;
                    }
                    Ok(None) => continue,
                    Ok(Some(e)) => e,
                };
                let Some(pkt) = stream.get_mut(ext) else {
                    continue; // resolved and forgotten
                };
                if validating && pkt.state == PktState::InFlight {
                    match Self::check_ecn(pkt.ecn, m.ecn) {
                        Ok(c) => capable |= c,
                        Err(f) => {
                            failure.get_or_insert(f);
                        }
                    }
                }
                let ce = m.ecn == Ecn::Ce && ce_trusted && pkt.ecn.is_ect();
                if matches!(pkt.state, PktState::InFlight | PktState::Lost) && m.ato < rfc8888::ATO_OVER_RANGE {
                    // A new RTT sample: this packet's (udp_prague's `get_frame_stat`).
                    if let Some(r) = (now - pkt.sent_at).checked_sub_dur(rfc8888::ato_to_dur(m.ato)) {
                        self.report_rtts.push(r.max(Dur::from_micros(1)));
                    }
                }
                let newly = (pkt.state != PktState::Acked).then_some((pkt.sent_at, pkt.captured));
                match pkt.state {
                    PktState::InFlight => {
                        pkt.state = PktState::Acked;
                        pkt.uncount(&mut self.bytes_in_flight);
                        tally.acked_pkts += 1;
                        tally.acked_bytes += u64::from(pkt.size);
                        if ce {
                            tally.ce_pkts += 1;
                            tally.ce_bytes += u64::from(pkt.size);
                        }
                    }
                    PktState::Lost => {
                        // Reported after we declared it lost (reordering): un-count.
                        pkt.state = PktState::Acked;
                        tally.unlost += 1;
                    }
                    PktState::Acked => {}
                    PktState::Unreported => {
                        pkt.state = PktState::Acked;
                        self.unreported_pkts = self.unreported_pkts.saturating_sub(1);
                    }
                }
                if m.ato < rfc8888::ATO_OVER_RANGE && tally.newest.is_none_or(|(_, _, t, _)| pkt.sent_at > t) {
                    tally.newest = Some((ext, ssrc, pkt.sent_at, m.ato));
                }
                if let Some((sent, captured)) = newly {
                    stream.ack_tx = Some(sent);
                    stream.ack_captured_high = stream.ack_captured_high.max(captured);
                    stream.ack_high = Some(stream.ack_high.map_or(ext, |h| h.max(ext)));
                }
            }
        }
        if let Some(f) = failure {
            self.fail_validation(now, f);
        } else if capable && self.validation == EcnValidation::Testing {
            self.validation = EcnValidation::Capable;
        }
        // Loss, SCReAM's `detectLoss` (ScreamV2Tx.cpp), per stream, with three rules:
        // - the received edge: a packet below the highest acknowledged sequence number no
        //   longer counts in flight ("advances the send window, similar to what SACK does");
        // - a packet not acknowledged is lost once it was sent more than the reorder time,
        //   plus how much older its frame is than the newest frame acknowledged
        //   (`tsDiffCorrection`: a frame's packets leave in a burst at its capture tick),
        //   before the packet acknowledged last; with sending that keeps up with capture
        //   this rarely fires;
        // - a packet more than 512 sequence numbers below the highest acknowledged one is
        //   "lost forever" (`kMaxTxPackets` window).
        for s in [&mut self.video, &mut self.audio] {
            let (Some(ack_tx), Some(high)) = (s.ack_tx, s.ack_high) else {
                s.prune();
                continue;
            };
            if !at_once {
                let captured_high = s.ack_captured_high;
                let edge = (high + 1).saturating_sub(s.log_base);
                let forever = high.saturating_sub(LOSS_WINDOW).saturating_sub(s.log_base);
                for (k, pkt) in s.log.iter_mut().enumerate() {
                    let k = k as u64;
                    if k >= edge {
                        break;
                    }
                    if pkt.state != PktState::InFlight {
                        continue;
                    }
                    pkt.uncount(&mut self.bytes_in_flight);
                    if k < forever || pkt.sent_at + REORDER_TIME + (captured_high - pkt.captured) < ack_tx {
                        pkt.state = PktState::Lost;
                        tally.lost_pkts += 1;
                    }
                }
            }
            s.prune();
        }
        self.acked_pkts += tally.acked_pkts;
        self.acked_bytes += tally.acked_bytes;
        self.ce_pkts += tally.ce_pkts;
        self.lost_pkts = (self.lost_pkts + tally.lost_pkts).saturating_sub(tally.unlost);
        let rtt = tally.newest.and_then(|(_, _, sent, ato)| {
            let ato = rfc8888::ato_to_dur(ato);
            let rtt = (now - sent).checked_sub_dur(ato)?;
            Some(rtt.max(Dur::from_micros(1)))
        });
        let owd_ns = tally.newest.map(|(_, _, sent, ato)| {
            let q16 = r
                .report_timestamp
                .wrapping_sub(u32::from(ato) * 64)
                .wrapping_sub(rfc8888::ntp_mid32(sent.as_nanos())) as i32;
            i64::from(q16) * 1_000_000_000 / 65_536
        });
        if let Some(rtt) = rtt {
            self.rtt_sample = Some(rtt);
        }
        if tally.acked_pkts > 0 || tally.lost_pkts > 0 {
            self.last_progress = now;
        }
        match &mut self.ctrl {
            Ctrl::Scream(s) => {
                s.on_feedback(&FeedbackEvent {
                    now,
                    bytes_acked: tally.acked_bytes,
                    pkts_acked: tally.acked_pkts,
                    bytes_ce: tally.ce_bytes,
                    pkts_ce: tally.ce_pkts,
                    pkts_lost: tally.lost_pkts,
                    rtt,
                    owd_ns,
                    bytes_in_flight: self.bytes_in_flight,
                });
            }
            Ctrl::RtPrague(rt) => {
                rt.on_feedback(
                    now,
                    &RtFeedback {
                        rtts: &self.report_rtts,
                        d_received: (tally.acked_pkts + tally.unlost) as i64,
                        d_ce: tally.ce_pkts as i64,
                        d_lost: tally.lost_pkts as i64 - tally.unlost as i64,
                        packets_sent: self.packets_sent as u32 as i32,
                    },
                );
            }
        }
        self.update_target(now);
    }
}

/// `Dur` helpers local to this module.
trait DurExt {
    fn checked_sub_dur(self, o: Dur) -> Option<Dur>;
}
impl DurExt for Dur {
    fn checked_sub_dur(self, o: Dur) -> Option<Dur> {
        self.as_nanos().checked_sub(o.as_nanos()).map(Dur::from_nanos)
    }
}

impl Endpoint for MediaSender {
    type Header = MediaHeader;

    fn handle_packet(&mut self, now: Time, header: &MediaHeader, _size: u32, _ecn: Ecn) {
        let MediaHeader::Feedback(fb) = header else {
            return;
        };
        match rfc8888::decode(&fb.bytes, self.p.count_convention) {
            Ok(r) => match self.plausible(now, &r) {
                Plausible::Yes => {
                    self.reports += 1;
                    self.last_report = now;
                    self.probes_unanswered = 0;
                    self.last_rts = Some((r.report_timestamp, now));
                    self.on_report(now, &r);
                }
                Plausible::Stale => self.stale += 1,
                Plausible::No => self.malformed += 1,
            },
            Err(_) => self.malformed += 1,
        }
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit<MediaHeader>> {
        self.advance(now);
        if self.closed {
            return None;
        }
        if let Some(t) = self.send_audio(now) {
            return Some(t);
        }
        self.send_video(now)
    }

    fn poll_timeout(&self) -> Option<Time> {
        if self.closed {
            return (self.bytes_in_flight > 0).then_some(self.last_progress + FEEDBACK_TIMEOUT);
        }
        // A frame held back by RT-Prague's frame window waits for an acknowledgement (a
        // packet), a probe, or the next tick that replaces it.
        let mut t = self.enc.next_frame_time();
        if self.frame_held {
            t += self.p.frame_interval;
            if let Some(pt) = self.probe_time().filter(|_| self.queue.is_empty()) {
                t = t.min(pt);
            }
        }
        if let Some(a) = self.next_audio {
            t = t.min(a);
        }
        if let Some(q) = self.queue.front() {
            if self.window_open(q) {
                t = t.min(self.next_send);
            } else if let Some(pt) = self.probe_time() {
                t = t.min(pt.max(self.next_send));
            }
            if self.p.controller == Controller::Scream {
                t = t.min(q.enqueued + self.p.max_rtp_queue_delay + Dur::from_nanos(1));
            }
        }
        if self.bytes_in_flight > 0 {
            t = t.min(self.last_progress + FEEDBACK_TIMEOUT);
        }
        Some(t)
    }

    fn handle_timeout(&mut self, now: Time) {
        self.advance(now);
    }

    fn close(&mut self, _now: Time) {
        self.closed = true;
        self.queue.clear();
        self.next_audio = None;
    }

    fn stats(&self) -> EndpointStats {
        let (cwnd, srtt, alpha, events) = match &self.ctrl {
            Ctrl::Scream(s) => (
                s.cwnd(),
                s.srtt(),
                Some(s.l4s_alpha()),
                s.loss_events + s.ce_events + s.virtual_ce_events,
            ),
            Ctrl::RtPrague(r) => (
                (r.cc().fractional_window().max(0) / 1_000_000) as u64,
                Dur::from_micros(r.cc().srtt_us().max(0) as u64),
                Some(r.cc().alpha()),
                r.cc().loss_events + r.cc().ce_events,
            ),
        };
        EndpointStats {
            sent_packets: self.sent_packets,
            sent_bytes: self.sent_bytes,
            retransmits: 0,
            lost_packets: self.lost_pkts,
            delivered_bytes: self.acked_bytes,
            received_packets: self.reports,
            ce_packets: self.ce_pkts,
            cwnd,
            srtt,
            pacing_rate: Some(self.pacing_rate()),
            alpha,
            ecn_mode: "rfc8888",
            congestion_events: events + self.feedback_timeouts,
            finished: self.closed && self.bytes_in_flight == 0,
            ecn_validation: self.validation,
        }
    }

    fn take_rtt_sample(&mut self) -> Option<Dur> {
        self.rtt_sample.take()
    }
}

// ------------------------------------------------------------------------------------------
// Receiver

#[derive(Clone, Copy, Debug)]
struct RxSlot {
    ext: i64,
    arrival: Time,
    ecn: Ecn,
}

#[derive(Clone, Debug)]
struct RxStream {
    ssrc: u32,
    first: i64,
    highest: Option<i64>,
    /// Highest extended seq covered by the last report.
    reported: Option<i64>,
    ring: Vec<RxSlot>,
    received: u64,
}

impl RxStream {
    fn new(ssrc: u32) -> RxStream {
        RxStream {
            ssrc,
            first: 0,
            highest: None,
            reported: None,
            ring: Vec::new(),
            received: 0,
        }
    }
    fn extend(&self, seq: u16) -> i64 {
        match self.highest {
            None => i64::from(seq) + (1 << 20),
            Some(h) => h + i64::from(seq.wrapping_sub(h as u16) as i16),
        }
    }
    /// Record an arrival; false for a duplicate.
    fn record(&mut self, seq: u16, now: Time, ecn: Ecn) -> bool {
        if self.ring.is_empty() {
            self.ring = vec![
                RxSlot {
                    ext: -1,
                    arrival: Time::ZERO,
                    ecn: Ecn::NotEct
                };
                RX_RING
            ];
        }
        let ext = self.extend(seq);
        let slot = &mut self.ring[ext.rem_euclid(RX_RING as i64) as usize];
        if slot.ext == ext {
            return false;
        }
        if self.highest.is_some_and(|h| ext <= h - RX_RING as i64) {
            return false; // too old to report
        }
        *slot = RxSlot { ext, arrival: now, ecn };
        match self.highest {
            None => {
                self.first = ext;
                self.highest = Some(ext);
            }
            Some(h) => {
                self.highest = Some(h.max(ext));
                self.first = self.first.min(ext);
            }
        }
        self.received += 1;
        true
    }
    fn unreported(&self) -> bool {
        match (self.highest, self.reported) {
            (Some(h), Some(r)) => h > r,
            (Some(_), None) => true,
            _ => false,
        }
    }
    fn block(&mut self, now: Time) -> Option<SsrcBlock> {
        let h = self.highest?;
        let lo = (h - MAX_REPORT_COVER as i64 + 1).max(self.first);
        let begin = match self.reported {
            Some(r) => (r + 1).min(h - REPORT_OVERLAP as i64 + 1).max(lo),
            None => lo,
        };
        let metrics = (begin..=h)
            .map(|ext| {
                let s = &self.ring[ext.rem_euclid(RX_RING as i64) as usize];
                if s.ext == ext {
                    Metric {
                        received: true,
                        ecn: s.ecn,
                        ato: if s.arrival <= now {
                            rfc8888::dur_to_ato(now - s.arrival)
                        } else {
                            rfc8888::ATO_UNAVAILABLE
                        },
                    }
                } else {
                    Metric::LOST
                }
            })
            .collect();
        self.reported = Some(h);
        Some(SsrcBlock {
            ssrc: self.ssrc,
            begin_seq: begin as u16,
            metrics,
        })
    }
    /// Packets missing between the first and the highest.
    fn lost(&self) -> u64 {
        self.highest
            .map_or(0, |h| ((h - self.first + 1) as u64).saturating_sub(self.received))
    }
}

#[derive(Clone, Copy, Debug)]
struct FrameAsm {
    first_sent: Time,
    captured: Time,
    count: u32,
    got: u32,
    bytes: u32,
}

/// The media receiver.
#[derive(Clone, Debug)]
pub struct MediaReceiver {
    feedback: FeedbackInterval,
    feedback_packets: u32,
    unreported: u32,
    frame_interval: Dur,
    conv: CountConvention,
    fb_ecn: Ecn,
    video: RxStream,
    audio: RxStream,
    frames: BTreeMap<u64, FrameAsm>,
    done: Vec<FrameDone>,
    highest_complete: Option<u64>,
    highest_seen: Option<u64>,
    report_due: bool,
    fb_deadline: Option<Time>,
    // stats
    sent_packets: u64,
    sent_bytes: u64,
    received_packets: u64,
    received_bytes: u64,
    ce_packets: u64,
    duplicates: u64,
    /// Data packets dropped for a frame number the sender cannot have reached yet.
    implausible: u64,
    frames_complete: u64,
}

impl MediaReceiver {
    pub fn new(p: &MediaParams, _now: Time) -> MediaReceiver {
        MediaReceiver {
            feedback: p.feedback,
            feedback_packets: p.feedback_packets,
            unreported: 0,
            frame_interval: p.frame_interval,
            conv: p.count_convention,
            fb_ecn: if p.l4s { Ecn::Ect1 } else { Ecn::NotEct },
            video: RxStream::new(VIDEO_SSRC),
            audio: RxStream::new(AUDIO_SSRC),
            frames: BTreeMap::new(),
            done: Vec::new(),
            highest_complete: None,
            highest_seen: None,
            report_due: false,
            fb_deadline: None,
            sent_packets: 0,
            sent_bytes: 0,
            received_packets: 0,
            received_bytes: 0,
            ce_packets: 0,
            duplicates: 0,
            implausible: 0,
            frames_complete: 0,
        }
    }

    /// Frames completed since the last call, in completion order.
    pub fn drain_frames(&mut self, out: &mut Vec<FrameDone>) {
        out.append(&mut self.done);
    }

    /// Highest video frame of which at least one packet arrived.
    pub fn highest_frame_seen(&self) -> Option<u64> {
        self.highest_seen
    }

    /// Data packets dropped because their frame number lies beyond what the sender can
    /// have encoded by their arrival (see [`MediaReceiver::handle_packet`]).
    pub fn implausible_packets(&self) -> u64 {
        self.implausible
    }

    /// Frames completed so far.
    pub fn frames_complete(&self) -> u64 {
        self.frames_complete
    }

    /// Video and audio packets missing (sequence gaps).
    pub fn lost_packets(&self) -> u64 {
        self.video.lost() + self.audio.lost()
    }

    /// Whether a frame number read from the wire can be one the encoder has reached by
    /// `now`: it numbers frames from 0, starts no earlier than time 0 and captures one per
    /// frame interval, so frame `n` is captured at `n` intervals or later;
    /// [`FRAME_CLOCK_SLACK`] allows for sender and receiver clocks read at different
    /// instants (live). A number beyond that is from a broken or hostile sender and would
    /// otherwise count its distance as incomplete frames.
    fn plausible_frame(&self, now: Time, frame: u64) -> bool {
        let iv = self.frame_interval.as_nanos().max(1);
        frame <= (now + FRAME_CLOCK_SLACK).as_nanos() / iv + 1
    }

    fn on_video(&mut self, now: Time, d: &MediaData) {
        self.highest_seen = Some(self.highest_seen.map_or(d.frame, |h| h.max(d.frame)));
        if self.highest_complete.is_some_and(|h| d.frame.saturating_add(64) < h) {
            return; // far too late to matter
        }
        if self.frames.len() >= MAX_PARTIAL_FRAMES && !self.frames.contains_key(&d.frame) {
            // Memory stays bounded when frames keep arriving incomplete: forget the oldest.
            self.frames.pop_first();
        }
        let e = self.frames.entry(d.frame).or_insert(FrameAsm {
            first_sent: d.frame_first_sent,
            captured: d.captured,
            count: d.count.max(1),
            got: 0,
            bytes: d.frame_bytes,
        });
        e.got += 1;
        e.first_sent = e.first_sent.min(d.frame_first_sent);
        if e.got >= e.count {
            let f = FrameDone {
                frame: d.frame,
                captured: e.captured,
                first_sent: e.first_sent,
                completed: now,
                bytes: e.bytes,
                packets: e.count,
            };
            self.frames.remove(&d.frame);
            self.done.push(f);
            self.frames_complete += 1;
            self.highest_complete = Some(self.highest_complete.map_or(d.frame, |h| h.max(d.frame)));
            if let Some(h) = self.highest_complete {
                // Partial frames far behind the newest complete one will not complete.
                while let Some((&k, _)) = self.frames.first_key_value() {
                    if k.saturating_add(64) < h {
                        self.frames.remove(&k);
                    } else {
                        break;
                    }
                }
            }
        }
    }
}

impl Endpoint for MediaReceiver {
    type Header = MediaHeader;

    fn handle_packet(&mut self, now: Time, header: &MediaHeader, size: u32, ecn: Ecn) {
        let MediaHeader::Data(d) = header else {
            return;
        };
        if !d.is_audio && !self.plausible_frame(now, d.frame) {
            self.implausible += 1;
            return;
        }
        let stream = if d.ssrc == AUDIO_SSRC {
            &mut self.audio
        } else if d.ssrc == VIDEO_SSRC {
            &mut self.video
        } else {
            return;
        };
        if !stream.record(d.seq, now, ecn) {
            self.duplicates += 1;
            return;
        }
        self.received_packets += 1;
        self.received_bytes += u64::from(size.saturating_sub(UDP_OVERHEAD));
        if ecn == Ecn::Ce {
            self.ce_packets += 1;
        }
        if !d.is_audio {
            self.on_video(now, d);
        }
        self.unreported += 1;
        if self.feedback_packets > 0 && self.unreported >= self.feedback_packets {
            self.report_due = true;
        }
        match self.feedback {
            FeedbackInterval::PerFrame => {
                if d.marker && !d.is_audio {
                    self.report_due = true;
                } else if self.fb_deadline.is_none() {
                    self.fb_deadline = Some(now + self.frame_interval);
                }
            }
            FeedbackInterval::Every(iv) => {
                if self.fb_deadline.is_none() {
                    self.fb_deadline = Some(now + iv);
                }
            }
        }
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Transmit<MediaHeader>> {
        if self.fb_deadline.is_some_and(|t| t <= now) {
            self.report_due = true;
        }
        if !self.report_due {
            return None;
        }
        self.report_due = false;
        self.fb_deadline = None;
        self.unreported = 0;
        if !self.video.unreported() && !self.audio.unreported() {
            return None;
        }
        let mut blocks = Vec::with_capacity(2);
        for s in [&mut self.video, &mut self.audio] {
            if s.unreported() {
                if let Some(b) = s.block(now) {
                    blocks.push(b);
                }
            }
        }
        let report = CcfbReport {
            sender_ssrc: RECEIVER_SSRC,
            blocks,
            report_timestamp: rfc8888::ntp_mid32(now.as_nanos()),
        };
        let bytes = rfc8888::encode_vec(&report, self.conv);
        let size = UDP_OVERHEAD + bytes.len() as u32;
        self.sent_packets += 1;
        self.sent_bytes += u64::from(size);
        Some(Transmit {
            header: MediaHeader::Feedback(Feedback { bytes }),
            size,
            ecn: self.fb_ecn,
        })
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.fb_deadline
    }

    fn handle_timeout(&mut self, now: Time) {
        if self.fb_deadline.is_some_and(|t| t <= now) {
            self.report_due = true;
        }
    }

    fn stats(&self) -> EndpointStats {
        EndpointStats {
            sent_packets: self.sent_packets,
            sent_bytes: self.sent_bytes,
            lost_packets: self.lost_packets(),
            delivered_bytes: self.received_bytes,
            received_packets: self.received_packets,
            ce_packets: self.ce_packets,
            ecn_mode: "rfc8888",
            ..Default::default()
        }
    }
}
