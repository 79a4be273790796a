//! Media flow configuration: what a scenario file's media table deserializes into
//! ([`MediaConfig`]), the built-in profiles, and the resolved, validated parameters
//! ([`MediaParams`]) the endpoints are built from.
//!
//! Every profile value can be overridden; an unset (`None`) override takes the profile's
//! value. [`MediaConfig::resolve`] checks the result against the run length and returns
//! `Err((key, message))` naming the offending key and what was expected.

use l4s_core::{Dur, Ecn, Rate};
use serde::{Deserialize, Deserializer};
use std::fmt;

/// Profile names accepted by `profile`.
pub const PROFILES: &[&str] = &["cloud-gaming", "xr-h264", "xr-h265", "video-call"];
/// Controller names accepted by `controller`.
pub const CONTROLLERS: &[&str] = &["scream", "rt-prague"];
/// Largest supported frame rate (RT-Prague carries `fps` in a byte, udp_prague's `fps_tp`).
pub const MAX_FPS: u32 = 255;
/// Ethernet + IPv4 + UDP header bytes added to an RTP packet on the wire.
pub const UDP_OVERHEAD: u32 = 14 + 20 + 8;
/// RTP fixed header (RFC 3550 §5.1), counted inside `packet_size`.
pub const RTP_HEADER: u32 = 12;

/// When the receiver sends an RFC 8888 report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FeedbackInterval {
    #[default]
    /// After the last packet of each video frame (the RTP marker bit, as SCReAM's receiver
    /// does), with a fallback timer of one frame interval when that packet is lost.
    PerFrame,
    /// Every given interval while packets arrive.
    Every(Dur),
}

impl fmt::Display for FeedbackInterval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FeedbackInterval::PerFrame => write!(f, "frame"),
            FeedbackInterval::Every(d) => write!(f, "{d}"),
        }
    }
}

impl<'de> Deserialize<'de> for FeedbackInterval {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)
            .map_err(|_| serde::de::Error::custom("expected \"frame\" or a duration as text such as \"10ms\""))?;
        let t = s.trim();
        if t.eq_ignore_ascii_case("frame") || t.eq_ignore_ascii_case("per-frame") {
            return Ok(FeedbackInterval::PerFrame);
        }
        l4s_core::units::parse_dur(t).map(FeedbackInterval::Every).map_err(|e| {
            serde::de::Error::custom(format!(
                "expected \"frame\" or a duration such as \"10ms\", got \"{t}\" ({e})"
            ))
        })
    }
}

/// How RFC 8888's `num_reports` field is written and read (RFC 8888 §3.1, errata 8166).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum CountConvention {
    /// `num_reports` is the number of metric blocks (errata 8166; libwebrtc).
    #[default]
    #[serde(rename = "count")]
    Count,
    /// `num_reports` is the number of metric blocks minus one (the RFC's original
    /// inclusive range begin_seq..=begin_seq+num_reports; SCReAM).
    #[serde(rename = "count-minus-one")]
    CountMinusOne,
}

impl CountConvention {
    pub fn name(self) -> &'static str {
        match self {
            CountConvention::Count => "count",
            CountConvention::CountMinusOne => "count-minus-one",
        }
    }
}

/// The rate controller of a media sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Controller {
    /// SCReAM v2 (EricssonResearch/scream `ScreamV2Tx`), L4S mode when `l4s`.
    Scream,
    /// udp_prague's controller in frame mode (`GetCCInfoVideo`).
    RtPrague,
}

impl Controller {
    pub fn name(self) -> &'static str {
        match self {
            Controller::Scream => "scream",
            Controller::RtPrague => "rt-prague",
        }
    }
}

/// A media flow as written in a scenario file. Unset values take the profile's.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MediaConfig {
    /// One of [`PROFILES`].
    pub profile: String,
    /// One of [`CONTROLLERS`].
    pub controller: String,
    /// `true`: send ECT(1) and react as an L4S sender; `false`: classic (SCReAM with L4S
    /// off, or RT-Prague on its loss-only path), sending `ecn`.
    pub l4s: bool,
    /// Codepoint of a classic sender: `not-ect` (default) or `ect0`. An L4S sender sends
    /// ECT(1); setting anything else with `l4s = true` is an error.
    pub ecn: Option<Ecn>,
    /// Frames per second (1..=255).
    pub fps: Option<u32>,
    pub min_bitrate: Option<Rate>,
    pub max_bitrate: Option<Rate>,
    /// Encoder bitrate at the start (default: the profile's).
    pub start_bitrate: Option<Rate>,
    /// Time between key frames; `"0s"` means only the first frame is a key frame.
    pub keyframe_interval: Option<Dur>,
    /// Size of a key frame relative to a delta frame at the same bitrate (≥ 1).
    pub key_ratio: Option<f64>,
    /// Amplitude of the scene-complexity variation of frame sizes, in [0, 0.9].
    pub complexity: Option<f64>,
    /// Time scale of the scene-complexity variation.
    pub scene_period: Option<Dur>,
    /// Delay between a new controller target and the encoder producing it.
    pub reaction_delay: Option<Dur>,
    /// Send audio packets beside the video (not rate-controlled).
    pub audio: Option<bool>,
    /// Audio packet interval (default 20 ms).
    pub audio_interval: Option<Dur>,
    /// Audio RTP packet size, bytes.
    pub audio_size: Option<u32>,
    /// Largest RTP packet (UDP payload incl. the 12 B RTP header), bytes.
    pub packet_size: Option<u32>,
    /// `"frame"` or a duration such as `"10ms"`.
    pub feedback: FeedbackInterval,
    /// Also send a report once this many packets arrived unreported (SCReAM's receiver
    /// reports every 16 packets, `ScreamRx`'s default `ackDiff`); 0 = only the `feedback`
    /// cadence.
    pub feedback_packets: u32,
    /// RFC 8888 `num_reports` convention: `"count"` (default) or `"count-minus-one"`.
    pub rfc8888_count_convention: CountConvention,
    /// A frame is late if it completes more than this after its expected display time
    /// (capture + base one-way delay). Default: one frame interval.
    pub frame_deadline: Option<Dur>,
    /// A gap between complete frames longer than this is a stall.
    pub stall_gap: Dur,
    /// RT-Prague frame budget (≤ 1/fps; default 60 % of the frame interval, i.e. 10 ms at
    /// 60 fps as in udp_prague's example).
    pub frame_budget: Option<Dur>,
    /// SCReAM's RTP queue is discarded when its oldest packet waited longer (`kMaxRtpQueueDelay`:
    /// 100 ms).
    pub max_rtp_queue_delay: Dur,
}

impl Default for MediaConfig {
    fn default() -> Self {
        MediaConfig {
            profile: "cloud-gaming".into(),
            controller: "scream".into(),
            l4s: true,
            ecn: None,
            fps: None,
            min_bitrate: None,
            max_bitrate: None,
            start_bitrate: None,
            keyframe_interval: None,
            key_ratio: None,
            complexity: None,
            scene_period: None,
            reaction_delay: None,
            audio: None,
            audio_interval: None,
            audio_size: None,
            packet_size: None,
            feedback: FeedbackInterval::PerFrame,
            feedback_packets: 16,
            rfc8888_count_convention: CountConvention::Count,
            frame_deadline: None,
            stall_gap: Dur::from_millis(100),
            frame_budget: None,
            max_rtp_queue_delay: Dur::from_millis(100),
        }
    }
}

/// Resolved and validated parameters of a media flow.
#[derive(Clone, Debug, PartialEq)]
pub struct MediaParams {
    pub profile: &'static str,
    pub controller: Controller,
    pub l4s: bool,
    /// Codepoint sent (ECT(1) for L4S; Not-ECT or ECT(0) for classic).
    pub ecn: Ecn,
    pub fps: u32,
    /// 1 s / fps (rounded down to the nanosecond).
    pub frame_interval: Dur,
    pub min_bitrate: Rate,
    pub max_bitrate: Rate,
    pub start_bitrate: Rate,
    pub keyframe_interval: Dur,
    pub key_ratio: f64,
    pub complexity: f64,
    pub scene_period: Dur,
    pub reaction_delay: Dur,
    /// `Some` when audio is on.
    pub audio: Option<AudioParams>,
    pub packet_size: u32,
    pub feedback: FeedbackInterval,
    /// Report after this many unreported packets (0 = off).
    pub feedback_packets: u32,
    pub count_convention: CountConvention,
    pub frame_deadline: Dur,
    pub stall_gap: Dur,
    pub frame_budget: Dur,
    pub max_rtp_queue_delay: Dur,
}

/// A constant-rate audio stream beside the video.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AudioParams {
    pub interval: Dur,
    /// RTP packet size, bytes.
    pub size: u32,
}

/// A built-in profile: defaults for one kind of application.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Profile {
    pub name: &'static str,
    pub fps: u32,
    pub min_bitrate: Rate,
    pub max_bitrate: Rate,
    pub start_bitrate: Rate,
    pub keyframe_interval: Dur,
    pub key_ratio: f64,
    pub complexity: f64,
    pub scene_period: Dur,
    pub reaction_delay: Dur,
    pub audio: bool,
}

/// The built-in profiles.
///
/// * `cloud-gaming`: 60 fps, 2–40 Mbit/s. Game streamers send intra refresh or rare key
///   frames (a key frame is a visible latency spike), so one key frame every 10 s with a
///   modest 3:1 ratio; fast-moving scenes vary strongly (complexity 0.3). The encoder
///   reacts within about one frame (hardware encoders re-target per frame): 20 ms.
/// * `xr-h264`: 60 fps, 5–40 Mbit/s. Remote-rendered XR uses short GOPs to recover from
///   loss quickly: a key frame every 2 s with the larger H.264 ratio 5:1; scenes follow
///   head motion, complexity 0.2; reaction 20 ms.
/// * `xr-h265`: 60 fps, 2.5–20 Mbit/s (HEVC needs about half the bits of H.264 for the same
///   quality); key frames every 2 s at 4:1 (HEVC intra coding is relatively more efficient
///   than its inter coding gain suggests, so the ratio is a bit lower); reaction 20 ms.
/// * `video-call`: 30 fps, 0.3–4 Mbit/s with 20 ms audio packets of 160 B (Opus at about
///   48 kbit/s plus RTP). Conferencing encoders send a key frame rarely (on loss or join):
///   every 10 s at 4:1; talking heads vary little (complexity 0.1); software encoders
///   re-target more slowly: 100 ms.
pub const PROFILE_TABLE: &[Profile] = &[
    Profile {
        name: "cloud-gaming",
        fps: 60,
        min_bitrate: Rate::mbps(2),
        max_bitrate: Rate::mbps(40),
        start_bitrate: Rate::mbps(5),
        keyframe_interval: Dur::from_secs(10),
        key_ratio: 3.0,
        complexity: 0.3,
        scene_period: Dur::from_millis(500),
        reaction_delay: Dur::from_millis(20),
        audio: false,
    },
    Profile {
        name: "xr-h264",
        fps: 60,
        min_bitrate: Rate::mbps(5),
        max_bitrate: Rate::mbps(40),
        start_bitrate: Rate::mbps(10),
        keyframe_interval: Dur::from_secs(2),
        key_ratio: 5.0,
        complexity: 0.2,
        scene_period: Dur::from_secs(1),
        reaction_delay: Dur::from_millis(20),
        audio: false,
    },
    Profile {
        name: "xr-h265",
        fps: 60,
        min_bitrate: Rate::kbps(2_500),
        max_bitrate: Rate::mbps(20),
        start_bitrate: Rate::mbps(5),
        keyframe_interval: Dur::from_secs(2),
        key_ratio: 4.0,
        complexity: 0.2,
        scene_period: Dur::from_secs(1),
        reaction_delay: Dur::from_millis(20),
        audio: false,
    },
    Profile {
        name: "video-call",
        fps: 30,
        min_bitrate: Rate::kbps(300),
        max_bitrate: Rate::mbps(4),
        start_bitrate: Rate::kbps(1_000),
        keyframe_interval: Dur::from_secs(10),
        key_ratio: 4.0,
        complexity: 0.1,
        scene_period: Dur::from_secs(2),
        reaction_delay: Dur::from_millis(100),
        audio: true,
    },
];

/// Default audio packet interval and size.
pub const AUDIO_INTERVAL: Dur = Dur::from_millis(20);
pub const AUDIO_SIZE: u32 = 160;
/// Default largest RTP packet (SCReAM's recommended MSS, `kRecommendedMss`).
pub const PACKET_SIZE: u32 = 1200;

fn err(key: &str, msg: impl Into<String>) -> (String, String) {
    (key.to_string(), msg.into())
}

impl MediaConfig {
    /// Resolve the profile and overrides and validate them against the run length `run`.
    ///
    /// Err((key, message)) names the key (`profile`, `controller`, `min_bitrate`, `fps`,
    /// `feedback`, ...) and what was expected.
    pub fn resolve(&self, run: Dur) -> Result<MediaParams, (String, String)> {
        let prof = PROFILE_TABLE.iter().find(|p| p.name == self.profile).ok_or_else(|| {
            err(
                "profile",
                format!(
                    "unknown profile \"{}\"; expected one of {}",
                    self.profile,
                    PROFILES.join(", ")
                ),
            )
        })?;
        let controller = match self.controller.as_str() {
            "scream" => Controller::Scream,
            "rt-prague" => Controller::RtPrague,
            other => {
                return Err(err(
                    "controller",
                    format!(
                        "unknown controller \"{other}\"; expected one of {}",
                        CONTROLLERS.join(", ")
                    ),
                ))
            }
        };
        let ecn = match (self.l4s, self.ecn) {
            (true, None | Some(Ecn::Ect1)) => Ecn::Ect1,
            (true, Some(e)) => {
                return Err(err(
                    "ecn",
                    format!(
                        "an L4S media flow sends ect1, got {}; set l4s = false for a classic flow",
                        e.name()
                    ),
                ))
            }
            (false, None | Some(Ecn::NotEct)) => Ecn::NotEct,
            (false, Some(Ecn::Ect0)) => Ecn::Ect0,
            (false, Some(e)) => {
                return Err(err(
                    "ecn",
                    format!("a classic media flow sends not-ect or ect0, got {}", e.name()),
                ))
            }
        };
        let fps = self.fps.unwrap_or(prof.fps);
        if fps == 0 || fps > MAX_FPS {
            return Err(err("fps", format!("expected a frame rate in 1..={MAX_FPS}, got {fps}")));
        }
        let frame_interval = Dur::from_nanos(1_000_000_000 / u64::from(fps));
        let min_bitrate = self.min_bitrate.unwrap_or(prof.min_bitrate);
        let max_bitrate = self.max_bitrate.unwrap_or(prof.max_bitrate);
        if min_bitrate.bits_per_sec() < 10_000 {
            return Err(err(
                "min_bitrate",
                format!("expected at least 10kbit, got {min_bitrate}"),
            ));
        }
        if min_bitrate > max_bitrate {
            return Err(err(
                "min_bitrate",
                format!(
                    "min_bitrate {min_bitrate} is above max_bitrate {max_bitrate}; expected min_bitrate <= max_bitrate"
                ),
            ));
        }
        if max_bitrate > Rate::gbps(10) {
            return Err(err(
                "max_bitrate",
                format!("expected at most 10Gbit, got {max_bitrate}"),
            ));
        }
        let start_bitrate = match self.start_bitrate {
            Some(s) if s < min_bitrate || s > max_bitrate => {
                return Err(err(
                    "start_bitrate",
                    format!("expected a rate in [min_bitrate {min_bitrate}, max_bitrate {max_bitrate}], got {s}"),
                ))
            }
            Some(s) => s,
            None => Rate(prof.start_bitrate.bits_per_sec().clamp(min_bitrate.0, max_bitrate.0)),
        };
        let keyframe_interval = self.keyframe_interval.unwrap_or(prof.keyframe_interval);
        if !keyframe_interval.is_zero() && keyframe_interval < frame_interval {
            return Err(err(
                "keyframe_interval",
                format!("expected \"0s\" (no periodic key frames) or at least one frame interval ({frame_interval}), got {keyframe_interval}"),
            ));
        }
        let key_ratio = self.key_ratio.unwrap_or(prof.key_ratio);
        if !(1.0..=50.0).contains(&key_ratio) {
            return Err(err(
                "key_ratio",
                format!("expected a ratio in [1, 50], got {key_ratio}"),
            ));
        }
        let complexity = self.complexity.unwrap_or(prof.complexity);
        if !(0.0..=0.9).contains(&complexity) {
            return Err(err(
                "complexity",
                format!("expected an amplitude in [0, 0.9], got {complexity}"),
            ));
        }
        let scene_period = self.scene_period.unwrap_or(prof.scene_period);
        if scene_period < frame_interval {
            return Err(err(
                "scene_period",
                format!("expected at least one frame interval ({frame_interval}), got {scene_period}"),
            ));
        }
        let reaction_delay = self.reaction_delay.unwrap_or(prof.reaction_delay);
        if reaction_delay > Dur::from_secs(10) {
            return Err(err(
                "reaction_delay",
                format!("expected at most 10s, got {reaction_delay}"),
            ));
        }
        let packet_size = self.packet_size.unwrap_or(PACKET_SIZE);
        if !(200..=9000).contains(&packet_size) {
            return Err(err(
                "packet_size",
                format!("expected 200..=9000 bytes, got {packet_size}"),
            ));
        }
        let audio = if self.audio.unwrap_or(prof.audio) {
            let interval = self.audio_interval.unwrap_or(AUDIO_INTERVAL);
            if interval < Dur::from_millis(1) || interval > Dur::from_secs(1) {
                return Err(err("audio_interval", format!("expected 1ms..=1s, got {interval}")));
            }
            let size = self.audio_size.unwrap_or(AUDIO_SIZE);
            if size < RTP_HEADER + 1 || size > packet_size {
                return Err(err(
                    "audio_size",
                    format!(
                        "expected {}..={packet_size} bytes (at most packet_size), got {size}",
                        RTP_HEADER + 1
                    ),
                ));
            }
            Some(AudioParams { interval, size })
        } else {
            if self.audio_interval.is_some() {
                return Err(err("audio_interval", "set only when audio is on (audio = true)"));
            }
            if self.audio_size.is_some() {
                return Err(err("audio_size", "set only when audio is on (audio = true)"));
            }
            None
        };
        match self.feedback {
            FeedbackInterval::Every(d) if d.is_zero() => {
                return Err(err(
                    "feedback",
                    "expected \"frame\" or a positive duration such as \"10ms\", got 0",
                ))
            }
            FeedbackInterval::Every(d) if d > run => {
                return Err(err(
                    "feedback",
                    format!(
                    "feedback interval {d} is longer than the run ({run}); expected \"frame\" or a duration below it"
                ),
                ))
            }
            _ => {}
        }
        if self.feedback_packets as u64 > crate::endpoint::MAX_REPORT_COVER {
            return Err(err(
                "feedback_packets",
                format!(
                    "expected 0 (off) or at most {} packets, got {}",
                    crate::endpoint::MAX_REPORT_COVER,
                    self.feedback_packets
                ),
            ));
        }
        let frame_deadline = self.frame_deadline.unwrap_or(frame_interval);
        if frame_deadline.is_zero() {
            return Err(err("frame_deadline", "expected a positive duration"));
        }
        if self.stall_gap.is_zero() {
            return Err(err("stall_gap", "expected a positive duration such as \"100ms\""));
        }
        let frame_budget = match self.frame_budget {
            Some(b) if b.is_zero() || b > frame_interval => {
                return Err(err(
                    "frame_budget",
                    format!("expected a positive duration up to one frame interval ({frame_interval}), got {b}"),
                ))
            }
            Some(b) => b,
            None => Dur::from_nanos(600_000_000 / u64::from(fps)),
        };
        if self.frame_budget.is_some() && controller != Controller::RtPrague {
            return Err(err("frame_budget", "applies only to controller = \"rt-prague\""));
        }
        if self.max_rtp_queue_delay < frame_interval {
            return Err(err(
                "max_rtp_queue_delay",
                format!(
                    "expected at least one frame interval ({frame_interval}), got {}",
                    self.max_rtp_queue_delay
                ),
            ));
        }
        Ok(MediaParams {
            profile: prof.name,
            controller,
            l4s: self.l4s,
            ecn,
            fps,
            frame_interval,
            min_bitrate,
            max_bitrate,
            start_bitrate,
            keyframe_interval,
            key_ratio,
            complexity,
            scene_period,
            reaction_delay,
            audio,
            packet_size,
            feedback: self.feedback,
            feedback_packets: self.feedback_packets,
            count_convention: self.rfc8888_count_convention,
            frame_deadline,
            stall_gap: self.stall_gap,
            frame_budget,
            max_rtp_queue_delay: self.max_rtp_queue_delay,
        })
    }
}

impl MediaParams {
    /// The parameters of `profile` with every default (panics never; unknown names give
    /// the error of [`MediaConfig::resolve`]).
    pub fn profile(profile: &str, controller: &str, l4s: bool) -> Result<MediaParams, (String, String)> {
        MediaConfig {
            profile: profile.into(),
            controller: controller.into(),
            l4s,
            ..Default::default()
        }
        .resolve(Dur::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<MediaConfig, String> {
        toml::from_str::<MediaConfig>(s).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_profiles() {
        for name in PROFILES {
            let p = MediaParams::profile(name, "scream", true).unwrap();
            assert_eq!(p.profile, *name);
            assert!(p.min_bitrate < p.max_bitrate);
            assert!(p.start_bitrate >= p.min_bitrate && p.start_bitrate <= p.max_bitrate);
            assert_eq!(p.ecn, Ecn::Ect1);
            assert_eq!(p.frame_deadline, p.frame_interval);
        }
        let v = MediaParams::profile("video-call", "rt-prague", false).unwrap();
        assert_eq!(v.fps, 30);
        assert_eq!(
            v.audio,
            Some(AudioParams {
                interval: Dur::from_millis(20),
                size: 160
            })
        );
        assert_eq!(v.ecn, Ecn::NotEct);
        assert_eq!(v.frame_budget, Dur::from_nanos(20_000_000));
        let g = MediaParams::profile("cloud-gaming", "scream", true).unwrap();
        assert_eq!(g.fps, 60);
        assert_eq!(g.max_bitrate, Rate::mbps(40));
        assert_eq!(g.frame_interval, Dur::from_nanos(16_666_666));
    }

    #[test]
    fn parses_overrides() {
        let c = parse(
            r#"profile = "xr-h265"
               controller = "rt-prague"
               fps = 90
               max_bitrate = "30Mbit"
               feedback = "10ms"
               rfc8888_count_convention = "count-minus-one"
               frame_budget = "5ms""#,
        )
        .unwrap();
        let p = c.resolve(Dur::from_secs(10)).unwrap();
        assert_eq!(p.fps, 90);
        assert_eq!(p.max_bitrate, Rate::mbps(30));
        assert_eq!(p.feedback, FeedbackInterval::Every(Dur::from_millis(10)));
        assert_eq!(p.count_convention, CountConvention::CountMinusOne);
        assert_eq!(p.frame_budget, Dur::from_millis(5));
        assert_eq!(
            parse("feedback = \"frame\"").unwrap().feedback,
            FeedbackInterval::PerFrame
        );
        assert!(parse("feedback = \"soon\"")
            .unwrap_err()
            .contains("expected \"frame\" or a duration"));
        assert!(parse("bogus = 1").unwrap_err().contains("bogus"));
    }

    #[test]
    fn bad_input_names_the_key() {
        let run = Dur::from_secs(10);
        let bad = |s: &str| parse(s).unwrap().resolve(run).unwrap_err();
        let (k, m) = bad("profile = \"foo\"");
        assert_eq!(k, "profile");
        assert_eq!(
            m,
            "unknown profile \"foo\"; expected one of cloud-gaming, xr-h264, xr-h265, video-call"
        );
        let (k, m) = bad("min_bitrate = \"50Mbit\"\nmax_bitrate = \"10Mbit\"");
        assert_eq!(k, "min_bitrate");
        assert!(m.contains("min_bitrate <= max_bitrate"), "{m}");
        let (k, m) = bad("fps = 0");
        assert_eq!(k, "fps");
        assert!(m.contains("1..=255"), "{m}");
        let (k, m) = bad("feedback = \"20s\"");
        assert_eq!(k, "feedback");
        assert!(m.contains("longer than the run"), "{m}");
        assert_eq!(bad("controller = \"gcc\"").0, "controller");
        assert_eq!(bad("ecn = \"ect0\"").0, "ecn");
        assert_eq!(bad("l4s = false\necn = \"ect1\"").0, "ecn");
        assert_eq!(bad("key_ratio = 0.5").0, "key_ratio");
        assert_eq!(bad("complexity = 1.5").0, "complexity");
        assert_eq!(bad("packet_size = 50").0, "packet_size");
        assert_eq!(bad("start_bitrate = \"100Mbit\"").0, "start_bitrate");
        assert_eq!(
            bad("controller = \"rt-prague\"\nframe_budget = \"50ms\"").0,
            "frame_budget"
        );
        assert_eq!(bad("stall_gap = \"0s\"").0, "stall_gap");
        assert_eq!(bad("audio = false\naudio_size = 100").0, "audio_size");
    }
}
