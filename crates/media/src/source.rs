//! The media source: a video encoder model (sans-IO, deterministic with the [`Rng`] passed
//! in) and its packetiser.
//!
//! * Frames are captured every `1/fps` (frame k at `start + k·10^9/fps` ns, so no drift).
//! * The encoder bitrate follows the controller's target after `reaction_delay`, clamped to
//!   [min, max] ([`Encoder::set_target`]).
//! * Mean frame size `B = bitrate / 8 / fps`. Key frames come every `keyframe_interval`
//!   (N frames) and on request; with a key:delta size ratio r, a delta frame is
//!   `d = N·B / (r + N − 1)` and a key frame `r·d`, so the mean over a key-frame period is
//!   exactly `B`.
//! * Scene complexity: a slowly varying multiplier `1 + c·(0.8·s(t) + 0.2·ε)`, where
//!   `s(t) ∈ [−1, 1]` is value noise (random points every `scene_period`, linearly
//!   interpolated) and `ε` a per-frame uniform jitter in [−1, 1].
//! * Rate control like an encoder's VBV buffer: the difference between the bytes produced
//!   and the nominal bytes is paid back over [`VBV_WINDOW`], so the mean bitrate over a few
//!   seconds equals the target while individual frames vary. Delta frames stay within
//!   [`Encoder::delta_bounds`].

use crate::config::{MediaParams, RTP_HEADER};
use l4s_core::{Dur, Rate, Rng, Time};
use std::collections::VecDeque;

/// Time over which the encoder's rate control pays back a size deviation.
pub const VBV_WINDOW: Dur = Dur::from_secs(1);
/// Smallest encoded frame, bytes.
pub const MIN_FRAME_BYTES: u32 = 64;
/// Most pending target changes kept (older ones are merged).
const MAX_PENDING: usize = 256;

/// One encoded video frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodedFrame {
    /// Frame number, 0, 1, 2, ...
    pub number: u64,
    /// Encoded bytes (RTP payload, without RTP headers).
    pub bytes: u32,
    pub key: bool,
    /// Capture time.
    pub captured: Time,
    /// The encoder bitrate the frame was sized for.
    pub bitrate: Rate,
}

/// The encoder model.
#[derive(Clone, Debug)]
pub struct Encoder {
    fps: u64,
    min: Rate,
    max: Rate,
    keyframe_frames: u64,
    key_ratio: f64,
    complexity: f64,
    scene_period: Dur,
    reaction_delay: Dur,
    rng: Rng,
    /// Capture time of frame 0 (moved on by skipped frames).
    start: Time,
    /// Origin of the scene-complexity clock.
    origin: Time,
    bitrate: Rate,
    pending: VecDeque<(Time, Rate)>,
    frame_no: u64,
    frames_since_key: u64,
    key_requested: bool,
    // scene value noise: points at k·scene_period
    scene_k: u64,
    scene_a: f64,
    scene_b: f64,
    /// Bytes produced minus nominal bytes (VBV debt).
    debt: f64,
    /// Frames produced.
    pub frames_encoded: u64,
    pub key_frames: u64,
    pub bytes_encoded: u64,
}

impl Encoder {
    pub fn new(p: &MediaParams, mut rng: Rng, start: Time) -> Encoder {
        let fps = u64::from(p.fps.max(1));
        let keyframe_frames = if p.keyframe_interval.is_zero() {
            0
        } else {
            (u128::from(p.keyframe_interval.as_nanos()) * u128::from(fps) / 1_000_000_000).max(1) as u64
        };
        let scene_a = rng.next_f64() * 2.0 - 1.0;
        let scene_b = rng.next_f64() * 2.0 - 1.0;
        Encoder {
            fps,
            min: p.min_bitrate,
            max: p.max_bitrate,
            keyframe_frames,
            key_ratio: p.key_ratio,
            complexity: p.complexity,
            scene_period: p.scene_period.max(Dur::from_millis(1)),
            reaction_delay: p.reaction_delay,
            rng,
            start,
            origin: start,
            bitrate: Rate(p.start_bitrate.0.clamp(p.min_bitrate.0, p.max_bitrate.0)),
            pending: VecDeque::new(),
            frame_no: 0,
            frames_since_key: 0,
            // Frame 0 is a key frame: the first of the periodic ones, or a requested one
            // when there are no periodic key frames.
            key_requested: keyframe_frames == 0,
            scene_k: 0,
            scene_a,
            scene_b,
            debt: 0.0,
            frames_encoded: 0,
            key_frames: 0,
            bytes_encoded: 0,
        }
    }

    /// Capture time of frame `k`.
    pub fn capture_time(&self, k: u64) -> Time {
        let off = (u128::from(k) * 1_000_000_000 / u128::from(self.fps)).min(u128::from(u64::MAX)) as u64;
        self.start + Dur::from_nanos(off)
    }

    /// When the next frame is captured.
    pub fn next_frame_time(&self) -> Time {
        self.capture_time(self.frame_no)
    }

    /// The controller asks for `target` at `now`; the encoder produces it from
    /// `now + reaction_delay`.
    pub fn set_target(&mut self, now: Time, target: Rate) {
        let t = Rate(target.0.clamp(self.min.0, self.max.0));
        if self.pending.back().map_or(self.bitrate, |&(_, r)| r) == t {
            return;
        }
        let at = now + self.reaction_delay;
        if self.pending.len() >= MAX_PENDING {
            if let Some(last) = self.pending.back_mut() {
                *last = (last.0.max(at), t);
            }
        } else {
            self.pending.push_back((at, t));
        }
    }

    /// The next frame will be a key frame (RTP queue discard, SCReAM rule 8 in [`crate::scream`]).
    pub fn request_key_frame(&mut self) {
        self.key_requested = true;
    }

    /// The bitrate the encoder produces now.
    pub fn bitrate(&self) -> Rate {
        self.bitrate
    }

    /// Apply the targets whose reaction delay has passed by `now`.
    fn apply_targets(&mut self, now: Time) {
        while let Some(&(at, r)) = self.pending.front() {
            if at > now {
                break;
            }
            self.bitrate = r;
            self.pending.pop_front();
        }
    }

    /// Scene value noise s(t) ∈ [−1, 1].
    fn scene(&mut self, t: Time) -> f64 {
        let p = self.scene_period.as_nanos();
        let since = (t - self.origin).as_nanos();
        let k = since / p;
        while self.scene_k < k {
            self.scene_a = self.scene_b;
            self.scene_b = self.rng.next_f64() * 2.0 - 1.0;
            self.scene_k += 1;
        }
        let frac = (since % p) as f64 / p as f64;
        self.scene_a + (self.scene_b - self.scene_a) * frac
    }

    /// Mean delta-frame bytes at `bitrate` (key frames excluded, §module doc).
    pub fn delta_mean(&self, bitrate: Rate) -> f64 {
        let b = bitrate.bytes_per_sec() / self.fps as f64;
        if self.keyframe_frames == 0 {
            b
        } else {
            let n = self.keyframe_frames as f64;
            n * b / (self.key_ratio + n - 1.0)
        }
    }

    /// Bounds of a delta frame at `bitrate`: `[d·(1 − c)/2, d·(1 + c)·2]`.
    pub fn delta_bounds(&self, bitrate: Rate) -> (u32, u32) {
        let d = self.delta_mean(bitrate);
        let lo = (d * (1.0 - self.complexity) / 2.0).max(f64::from(MIN_FRAME_BYTES));
        let hi = (d * (1.0 + self.complexity) * 2.0).max(lo);
        (lo as u32, hi.ceil() as u32)
    }

    /// The frame captured at or before `now`, if one is due. Call until `None`.
    pub fn poll_frame(&mut self, now: Time) -> Option<EncodedFrame> {
        let captured = self.next_frame_time();
        if captured > now {
            return None;
        }
        self.apply_targets(captured);
        let s = self.scene(captured);
        let eps = self.rng.next_f64() * 2.0 - 1.0;
        let mult = 1.0 + self.complexity * (0.8 * s + 0.2 * eps);
        let d = self.delta_mean(self.bitrate);
        let periodic =
            self.keyframe_frames > 0 && (self.frame_no == 0 || self.frames_since_key + 1 >= self.keyframe_frames);
        let key = self.key_requested || periodic;
        let nominal = if key { d * self.key_ratio } else { d };
        // VBV pay-back of earlier deviations.
        let frames_window = (VBV_WINDOW.as_secs_f64() * self.fps as f64).max(1.0);
        let mut size = nominal * mult - self.debt / frames_window;
        let (lo, hi) = self.delta_bounds(self.bitrate);
        let (lo, hi) = if key {
            (f64::from(lo) * self.key_ratio, f64::from(hi) * self.key_ratio)
        } else {
            (f64::from(lo), f64::from(hi))
        };
        size = size.clamp(lo, hi);
        let bytes = size.round().clamp(f64::from(MIN_FRAME_BYTES), f64::from(u32::MAX / 2)) as u32;
        if self.key_requested && !periodic {
            // An extra key frame is a cost the rate control pays back like any deviation.
            self.debt += f64::from(bytes) - d;
        } else {
            self.debt += f64::from(bytes) - nominal;
        }
        // Forget debts the encoder could never pay back (e.g. after a large rate drop).
        self.debt = self.debt.clamp(-4.0 * d * frames_window, 4.0 * d * frames_window);
        if key {
            self.frames_since_key = 0;
            self.key_frames += 1;
        } else {
            self.frames_since_key += 1;
        }
        self.key_requested = false;
        let f = EncodedFrame {
            number: self.frame_no,
            bytes,
            key,
            captured,
            bitrate: self.bitrate,
        };
        self.frame_no += 1;
        self.frames_encoded += 1;
        self.bytes_encoded += u64::from(bytes);
        Some(f)
    }

    /// Skip the frame due at or before `now` without encoding it (the sender had no room
    /// for it). Returns true if a frame was due.
    pub fn skip_frame(&mut self, now: Time) -> bool {
        let captured = self.next_frame_time();
        if captured > now {
            return false;
        }
        self.apply_targets(captured);
        // The skipped frame's capture slot passes; its number is not used, so frame
        // numbers stay contiguous for the receiver.
        self.start += Dur::from_nanos(1_000_000_000 / self.fps);
        true
    }
}

/// RTP payload bytes per packet for `packet_size`-byte RTP packets.
pub fn max_payload(packet_size: u32) -> u32 {
    packet_size.saturating_sub(RTP_HEADER).max(1)
}

/// Number of packets and the payload of packet `i` when `bytes` are split evenly into
/// packets of at most `max_payload` bytes (the last ones one byte smaller if uneven).
pub fn packetise(bytes: u32, max_payload: u32) -> (u32, impl Fn(u32) -> u32) {
    let mp = max_payload.max(1);
    let n = bytes.div_ceil(mp).max(1);
    let base = bytes / n;
    let extra = bytes % n;
    (n, move |i: u32| base + u32::from(i < extra))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{MediaConfig, PROFILES};

    fn params(profile: &str) -> MediaParams {
        MediaParams::profile(profile, "scream", true).unwrap()
    }

    /// Bytes produced over `secs` at a fixed target.
    fn run(p: &MediaParams, target: Rate, secs: u64, seed: u64) -> (u64, Vec<EncodedFrame>) {
        let mut e = Encoder::new(p, Rng::new(seed), Time::ZERO);
        e.set_target(Time::ZERO, target);
        // Skip the reaction delay: apply at once.
        e.apply_targets(Time::ZERO + p.reaction_delay);
        let mut frames = Vec::new();
        let end = Time::from_secs(secs);
        loop {
            let t = e.next_frame_time();
            if t >= end {
                break;
            }
            frames.push(e.poll_frame(t).unwrap());
        }
        (frames.iter().map(|f| u64::from(f.bytes)).sum(), frames)
    }

    #[test]
    fn mean_bitrate_within_5_percent_across_profiles() {
        for name in PROFILES {
            let p = params(name);
            let target = Rate((p.min_bitrate.0 + p.max_bitrate.0) / 2);
            for seed in 1..=5 {
                let (bytes, frames) = run(&p, target, 10, seed);
                assert_eq!(frames.len() as u32, 10 * p.fps);
                let mean = bytes as f64 * 8.0 / 10.0;
                let err = mean / target.0 as f64 - 1.0;
                assert!(err.abs() < 0.05, "{name} seed {seed}: {mean} vs {target} ({err:+.3})");
            }
        }
    }

    #[test]
    fn key_frames_by_ratio_and_sizes_in_bounds() {
        // No scene variation: a key frame is exactly key_ratio × a delta frame.
        let c = MediaConfig {
            profile: "xr-h264".into(),
            complexity: Some(0.0),
            ..Default::default()
        };
        let p = c.resolve(Dur::MAX).unwrap();
        let (_, frames) = run(&p, Rate::mbps(20), 10, 3);
        let keys: Vec<_> = frames.iter().filter(|f| f.key).collect();
        // Frame 0 plus one every 2 s (120 frames) → frames 0, 120, 240, ... 540.
        assert_eq!(keys.len(), 5, "{:?}", keys.iter().map(|f| f.number).collect::<Vec<_>>());
        assert_eq!(keys[1].number, 120);
        let delta = frames[200].bytes as f64;
        let ratio = keys[2].bytes as f64 / delta;
        assert!((ratio - 5.0).abs() < 0.05, "ratio {ratio}");
        // d = N·B/(r + N − 1) with B = 20e6/8/60, N = 120, r = 5.
        let d = 120.0 * (20e6 / 8.0 / 60.0) / (5.0 + 119.0);
        assert!((delta - d).abs() <= 1.0, "{delta} vs {d}");

        // With variation: every delta frame within its bounds, and frames do vary.
        let p = params("cloud-gaming");
        let e = Encoder::new(&p, Rng::new(1), Time::ZERO);
        let (lo, hi) = e.delta_bounds(Rate::mbps(20));
        let (_, frames) = run(&p, Rate::mbps(20), 10, 9);
        let deltas: Vec<u32> = frames.iter().filter(|f| !f.key).map(|f| f.bytes).collect();
        assert!(deltas.iter().all(|&b| b >= lo && b <= hi), "bounds {lo}..{hi}");
        let min = *deltas.iter().min().unwrap() as f64;
        let max = *deltas.iter().max().unwrap() as f64;
        assert!(max / min > 1.3, "complexity 0.3 varies frame sizes: {min}..{max}");
    }

    #[test]
    fn follows_target_after_reaction_delay() {
        let p = params("video-call"); // reaction delay 100 ms, 30 fps
        let mut e = Encoder::new(&p, Rng::new(5), Time::ZERO);
        let mut t = Time::ZERO;
        let mut seen = Vec::new();
        while t < Time::from_secs(2) {
            if t == Time::from_millis(1000) {
                e.set_target(t, Rate::mbps(3));
            }
            if let Some(f) = e.poll_frame(t) {
                seen.push(f);
            }
            t += Dur::from_millis(1);
        }
        // Before 1.1 s the start bitrate (1 Mbit/s), from 1.1 s the new target.
        for f in &seen {
            let expect = if f.captured >= Time::from_millis(1100) {
                Rate::mbps(3)
            } else {
                Rate::mbps(1)
            };
            assert_eq!(f.bitrate, expect, "frame {} at {}", f.number, f.captured);
        }
        // Clamped to [min, max].
        e.set_target(t, Rate::mbps(100));
        e.apply_targets(t + Dur::from_secs(1));
        assert_eq!(e.bitrate(), Rate::mbps(4));
        e.set_target(t, Rate::kbps(1));
        e.apply_targets(t + Dur::from_secs(2));
        assert_eq!(e.bitrate(), Rate::kbps(300));
    }

    #[test]
    fn packetiser_splits_evenly() {
        let (n, size) = packetise(2500, 1188);
        assert_eq!(n, 3);
        assert_eq!((size(0), size(1), size(2)), (834, 833, 833));
        let (n, size) = packetise(1188, 1188);
        assert_eq!((n, size(0)), (1, 1188));
        let (n, size) = packetise(0, 1188);
        assert_eq!((n, size(0)), (1, 0));
    }
}
