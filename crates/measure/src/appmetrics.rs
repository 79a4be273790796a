//! The `media` and `app` sections of a flow's summary, from the accumulators of
//! [`crate::MediaMeter`] and [`crate::AppMeter`].

use l4s_apps::{Completion, CompletionKind};
use l4s_metrics::hist::{ratio, round6};
use l4s_metrics::summary::{AppSummary, CompletionSummary, MediaSummary};
use l4s_metrics::LatencyHist;
use std::collections::BTreeMap;

/// Samples of an encoder's target bitrate (taken every 10 ms in the window).
#[derive(Clone, Debug)]
pub struct TargetSamples {
    pub sum: f64,
    pub min: f64,
    pub max: f64,
    pub count: u64,
    /// The encoder's minimum bitrate (0: unknown), and the samples at it.
    pub floor: f64,
    pub at_floor: u64,
}

impl Default for TargetSamples {
    fn default() -> Self {
        TargetSamples {
            sum: 0.0,
            min: f64::INFINITY,
            max: 0.0,
            count: 0,
            floor: 0.0,
            at_floor: 0,
        }
    }
}

impl TargetSamples {
    /// Samples of an encoder whose minimum bitrate is `floor_bps`.
    pub fn with_floor(floor_bps: f64) -> TargetSamples {
        TargetSamples {
            floor: floor_bps,
            ..Default::default()
        }
    }

    pub fn record(&mut self, bps: f64) {
        self.sum += bps;
        self.min = self.min.min(bps);
        self.max = self.max.max(bps);
        self.count += 1;
        // The controllers clamp the target to the floor: equal up to the rounding of a
        // bit/s rate.
        if self.floor > 0.0 && bps <= self.floor * 1.001 {
            self.at_floor += 1;
        }
    }
}

/// Completions per kind: time histogram, bytes, and the sum of per-completion goodputs.
pub type CompletionStats = BTreeMap<CompletionKind, (LatencyHist, u64, f64)>;

/// Count one completion (the caller decides whether it belongs to the window).
pub fn record_completion(stats: &mut CompletionStats, c: &Completion) {
    let t = c.completed - c.started;
    let e = stats.entry(c.what).or_insert_with(|| (LatencyHist::new(), 0, 0.0));
    e.0.record(t);
    e.1 += c.bytes;
    if !t.is_zero() {
        e.2 += c.bytes as f64 * 8.0 / t.as_secs_f64();
    }
}

/// The `app` section from a flow's completions.
pub fn app_summary(cfg: &l4s_apps::AppConfig, stats: &CompletionStats) -> AppSummary {
    let completions = stats
        .iter()
        .map(|(k, (h, bytes, gsum))| {
            let n = h.count();
            (
                k.name().to_string(),
                CompletionSummary {
                    count: n,
                    time_ms: h.percentiles_ms(),
                    bytes: *bytes,
                    goodput_bps: if n > 0 { round6(gsum / n as f64) } else { 0.0 },
                },
            )
        })
        .collect();
    AppSummary {
        app: cfg.kind.name().to_string(),
        completions,
    }
}

/// What a media flow measured over the statistics window.
pub struct MediaWindow<'a> {
    /// The window's frame statistics (`FrameMeter::finish_with_seen`).
    pub frames: l4s_media::FrameSummary,
    /// Frame delays of the window's complete frames.
    pub delay: &'a LatencyHist,
    pub targets: &'a TargetSamples,
    /// The sender's media counters at the end and when the window opened.
    pub sender_end: l4s_media::MediaSenderStats,
    pub sender_start: l4s_media::MediaSenderStats,
    /// Length of the window, seconds.
    pub secs: f64,
}

/// The `media` section of a flow.
pub fn media_summary(params: &l4s_media::MediaParams, w: &MediaWindow) -> MediaSummary {
    let (fs, now, base) = (&w.frames, &w.sender_end, &w.sender_start);
    let frames_sent = now.frames_encoded.saturating_sub(base.frames_encoded);
    let (tmean, tmin) = if w.targets.count > 0 {
        (w.targets.sum / w.targets.count as f64, w.targets.min)
    } else {
        (0.0, 0.0)
    };
    MediaSummary {
        profile: params.profile.to_string(),
        controller: params.controller.name().to_string(),
        l4s: params.l4s,
        fps: params.fps as f64,
        frames_sent,
        frames_complete: fs.frames_complete,
        frames_late: fs.frames_late,
        frames_incomplete: fs.frames_incomplete,
        bad_frame_fraction: ratio(
            fs.frames_late + fs.frames_incomplete,
            frames_sent.max(fs.frames_complete),
        ),
        frame_delay_ms: w.delay.percentiles_ms(),
        deadline_ms: round6(params.frame_deadline.as_millis_f64()),
        stall_time_s: round6(fs.stall_time.as_secs_f64()),
        stall_fraction: round6(fs.stall_fraction),
        stall_gap_ms: round6(params.stall_gap.as_millis_f64()),
        received_fps: if w.secs > 0.0 {
            round6(fs.frames_complete as f64 / w.secs)
        } else {
            0.0
        },
        target_bitrate_mean_bps: round6(tmean),
        target_bitrate_min_bps: round6(tmin),
        target_bitrate_max_bps: round6(w.targets.max),
        frames_discarded: now.frames_skipped.saturating_sub(base.frames_skipped)
            + now.rtp_queue_discards.saturating_sub(base.rtp_queue_discards),
        feedback_reports: now.feedback_reports.saturating_sub(base.feedback_reports),
        feedback_malformed: now.feedback_malformed.saturating_sub(base.feedback_malformed),
        min_bitrate_bps: params.min_bitrate.bits_per_sec() as f64,
        max_bitrate_bps: params.max_bitrate.bits_per_sec() as f64,
        time_at_min_fraction: ratio(w.targets.at_floor, w.targets.count),
    }
}
