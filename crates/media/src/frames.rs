//! Per-frame metrics: frame delay, late frames, stalls and received frame rate.
//!
//! Definitions (the ones `summary.json` and the report use):
//!
//! * **Frame delay** = time from the first packet of the frame being sent to the last
//!   packet of the frame being received (`completed − first_sent`).
//! * **Late frame**: a complete frame with `completed > first_sent + base_owd + deadline`.
//!   The expected display time is capture (= first packet sent) plus the path's base
//!   one-way delay; the frame may arrive up to `deadline` (default one frame interval)
//!   after it.
//! * **Stall**: a gap between consecutive complete frames (also from the meter's start to
//!   the first frame, and from the last frame to the end) longer than `stall_gap` counts
//!   wholly as stall time. `stall_fraction = stall time / (end − start)`.
//! * **Frame rate** = complete frames per second.
//! * **Incomplete frames**: frames not all of whose packets were received by the end. A
//!   frame is declared incomplete once a later frame completes, or at
//!   [`FrameMeter::finish_with_seen`] if the receiver saw part of it. A frame completing
//!   after a later one (reordering) is counted complete and no longer incomplete. Frames
//!   are numbered from the window's first frame when the caller knows it (the sender's
//!   count of frames encoded when the window opened, `first_in_window`): then a frame of
//!   the window that never completes is incomplete even if no frame before it, or none at
//!   all, completed. Without it the first complete frame is the meter's baseline and the
//!   frames before it are not counted (a meter started mid-flow knows nothing of them; a
//!   loss of the very first frames then shows only as stall time from the start).
//! * **Window**: a meter started at `start` counts (complete, incomplete, late, delay) only
//!   frames captured at or after `start`, the frames the sender's `frames_encoded` counts
//!   over the same window, so `complete + incomplete ≤ frames encoded`. A frame captured
//!   before `start` that completes inside the window still ends a stall gap (it is shown),
//!   and fixes the numbering baseline, but is not counted. Without this a meter opened
//!   while earlier frames were queued counted those frames too (and every frame number
//!   between them and the first in-window frame), more than were encoded in the window.
//!
//! Percentiles come from a histogram of the delays with 3 significant digits (relative
//! error ≤ 0.1 %, never under-reported), as every other delay percentile of the lab: its
//! memory does not grow with the run (a vector of every delay grew by 8 bytes a frame,
//! 1.7 MB an hour at 60 fps). The mean and the maximum are exact.

use hdrhistogram::Histogram;
use l4s_core::{Dur, Time};

/// The largest frame delay the histogram tells apart (an hour, in ns); longer ones count
/// as an hour in the percentiles (the maximum stays exact).
const HIGHEST_NS: u64 = 3_600_000_000_000;

/// A frame all of whose packets arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameDone {
    /// Frame number (0, 1, 2, ... in capture order).
    pub frame: u64,
    /// When the encoder captured the frame.
    pub captured: Time,
    /// When the first packet of the frame was sent (≈ capture + encode).
    pub first_sent: Time,
    /// When the last missing packet of the frame arrived.
    pub completed: Time,
    /// RTP bytes of the frame.
    pub bytes: u32,
    /// Packets of the frame.
    pub packets: u32,
}

impl FrameDone {
    /// Frame delay: first packet sent → last packet received.
    pub fn delay(&self) -> Dur {
        self.completed - self.first_sent
    }
}

/// Parameters of a [`FrameMeter`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameMeterConfig {
    pub frame_interval: Dur,
    /// Lateness allowance after the expected display time (default: one frame interval).
    pub deadline: Dur,
    /// Gaps longer than this between complete frames are stalls.
    pub stall_gap: Dur,
    /// Base (propagation) one-way delay of the path.
    pub base_owd: Dur,
}

/// Measurements over one snapshot interval ([`FrameMeter::interval`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameInterval {
    pub start: Time,
    pub end: Time,
    /// Complete frames in the interval.
    pub frames: u64,
    /// Late frames among them.
    pub late: u64,
    /// Frames declared incomplete in the interval.
    pub incomplete: u64,
    /// Stall time that fell in the interval.
    pub stall_time: Dur,
    /// Complete frames per second over the interval.
    pub fps: f64,
    /// Largest frame delay in the interval (zero without frames).
    pub max_delay: Dur,
    /// Mean frame delay in the interval (zero without frames).
    pub mean_delay: Dur,
}

/// Whole-run frame statistics ([`FrameMeter::finish`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameSummary {
    pub frames_complete: u64,
    pub frames_late: u64,
    pub frames_incomplete: u64,
    pub delay_p50: Dur,
    pub delay_p90: Dur,
    pub delay_p99: Dur,
    pub delay_p999: Dur,
    pub delay_max: Dur,
    pub delay_mean: Dur,
    pub stall_time: Dur,
    /// Stall time / (end − start), in [0, 1].
    pub stall_fraction: f64,
    /// Complete frames per second over the run.
    pub mean_fps: f64,
    /// Frames late or incomplete / (complete + incomplete) frames: the fraction of the
    /// window's frames the receiver did not have in time (0 without frames; 1 when no frame
    /// completed but some were seen).
    pub late_fraction: f64,
}

/// Streaming per-frame meter for one media flow.
#[derive(Clone, Debug)]
pub struct FrameMeter {
    cfg: FrameMeterConfig,
    start: Time,
    /// Completion time of the last complete frame (or the start).
    last_complete: Time,
    /// Stall time has been accounted up to here.
    stall_until: Time,
    stall_total: Dur,
    /// Highest complete frame number + 1 (frames below it that did not complete are
    /// incomplete).
    next_expected: u64,
    any_frame: bool,
    /// `next_expected` was set by a frame captured before the window.
    pre_window_baseline: bool,
    /// The number of the first frame counted, when it was the baseline (no frame captured
    /// before the window completed before it): frames of the window before it are only
    /// known incomplete once the window's first frame is known.
    first_counted: Option<u64>,
    /// Frames numbered below `first_counted` that completed (reordered): not incomplete.
    below_first: u64,
    complete: u64,
    late: u64,
    incomplete: u64,
    delays: Histogram<u64>,
    delay_max: Dur,
    delay_sum: u128,
    // current interval
    iv_start: Time,
    iv_frames: u64,
    iv_late: u64,
    iv_incomplete: u64,
    iv_stall: Dur,
    iv_max: Dur,
    iv_sum: u128,
}

impl FrameMeter {
    pub fn new(cfg: FrameMeterConfig, start: Time) -> FrameMeter {
        FrameMeter {
            cfg,
            start,
            last_complete: start,
            stall_until: start,
            stall_total: Dur::ZERO,
            next_expected: 0,
            any_frame: false,
            pre_window_baseline: false,
            first_counted: None,
            below_first: 0,
            complete: 0,
            late: 0,
            incomplete: 0,
            // Auto-resizing (the counts cover up to the largest delay recorded); 3 digits
            // is a precision hdrhistogram accepts: this cannot fail.
            delays: Histogram::new(3).expect("valid histogram precision"),
            delay_max: Dur::ZERO,
            delay_sum: 0,
            iv_start: start,
            iv_frames: 0,
            iv_late: 0,
            iv_incomplete: 0,
            iv_stall: Dur::ZERO,
            iv_max: Dur::ZERO,
            iv_sum: 0,
        }
    }

    pub fn config(&self) -> &FrameMeterConfig {
        &self.cfg
    }

    /// True if `f` completed after its deadline.
    pub fn is_late(&self, f: &FrameDone) -> bool {
        f.completed > f.first_sent + self.cfg.base_owd + self.cfg.deadline
    }

    /// Account the stall of the open gap up to `t` if the gap is a stall.
    fn account_stall(&mut self, t: Time) {
        if t - self.last_complete > self.cfg.stall_gap {
            let from = self.stall_until.max(self.last_complete);
            let d = t - from;
            self.stall_total += d;
            self.iv_stall += d;
            self.stall_until = t;
        }
    }

    /// A frame completed (call in completion order).
    pub fn on_frame(&mut self, f: &FrameDone) {
        let t = f.completed.max(self.last_complete);
        self.account_stall(t);
        self.last_complete = t;
        if f.captured < self.start {
            // Captured before the window: shown (ends a stall), not counted; frames up to
            // it are not the window's either.
            if !self.any_frame || f.frame >= self.next_expected {
                self.next_expected = f.frame.saturating_add(1);
                self.pre_window_baseline = true;
            }
            return;
        }
        if !self.any_frame || f.frame >= self.next_expected {
            // Frames between the last complete one and this one never completed. The first
            // frame the meter sees is its baseline (it may start mid-flow).
            let gap = if self.any_frame || self.pre_window_baseline {
                f.frame - self.next_expected
            } else {
                0
            };
            if !self.any_frame && !self.pre_window_baseline {
                self.first_counted = Some(f.frame);
            }
            self.incomplete = self.incomplete.saturating_add(gap);
            self.iv_incomplete = self.iv_incomplete.saturating_add(gap);
            self.next_expected = f.frame.saturating_add(1);
        } else if self.first_counted.is_some_and(|b| f.frame < b) {
            // Before the baseline: never declared incomplete, a leading gap less.
            self.below_first += 1;
        } else {
            // A frame declared incomplete completed after all (reordering).
            self.incomplete = self.incomplete.saturating_sub(1);
        }
        self.any_frame = true;
        self.complete += 1;
        self.iv_frames += 1;
        if self.is_late(f) {
            self.late += 1;
            self.iv_late += 1;
        }
        let d = f.delay();
        // `record` grows the auto-resizing counts (see `LatencyHist::record`).
        let v = d.as_nanos().clamp(1, HIGHEST_NS);
        if self.delays.record(v).is_err() {
            self.delays.saturating_record(v);
        }
        self.delay_max = self.delay_max.max(d);
        self.delay_sum += u128::from(d.as_nanos());
        self.iv_sum += u128::from(d.as_nanos());
        self.iv_max = self.iv_max.max(d);
    }

    /// Close the current snapshot interval at `now` and start the next.
    pub fn interval(&mut self, now: Time) -> FrameInterval {
        self.account_stall(now);
        let span = now - self.iv_start;
        let out = FrameInterval {
            start: self.iv_start,
            end: now,
            frames: self.iv_frames,
            late: self.iv_late,
            incomplete: self.iv_incomplete,
            stall_time: self.iv_stall,
            fps: if span.is_zero() {
                0.0
            } else {
                self.iv_frames as f64 / span.as_secs_f64()
            },
            max_delay: self.iv_max,
            mean_delay: if self.iv_frames == 0 {
                Dur::ZERO
            } else {
                Dur::from_nanos((self.iv_sum / u128::from(self.iv_frames)) as u64)
            },
        };
        self.iv_start = now;
        self.iv_frames = 0;
        self.iv_late = 0;
        self.iv_incomplete = 0;
        self.iv_stall = Dur::ZERO;
        self.iv_max = Dur::ZERO;
        self.iv_sum = 0;
        out
    }

    /// Statistics of the run ending at `end`, counting only the frames that completed and
    /// the gaps between them.
    pub fn finish(&self, end: Time) -> FrameSummary {
        self.finish_with_seen(end, None, None)
    }

    /// As [`FrameMeter::finish`], also counting as incomplete every frame of the window
    /// that never completed: those from `first_in_window`, the number of the window's first
    /// frame (the sender's count of frames encoded when the window opened), to the first
    /// complete one, and those after the last complete one up to `highest_seen`, the
    /// highest frame of which the receiver got at least one packet
    /// ([`crate::MediaReceiver::highest_frame_seen`]). With no complete frame, every frame
    /// from `first_in_window` to `highest_seen` is incomplete. Frames after `highest_seen`
    /// may still be in flight and are not counted.
    pub fn finish_with_seen(&self, end: Time, first_in_window: Option<u64>, highest_seen: Option<u64>) -> FrameSummary {
        let mut stall = self.stall_total;
        let end = end.max(self.start);
        if end - self.last_complete > self.cfg.stall_gap {
            stall += end - self.stall_until.max(self.last_complete);
        }
        let mut incomplete = self.incomplete;
        // Frames of the window before the first one counted.
        if let (Some(first), Some(b)) = (first_in_window, self.first_counted) {
            incomplete += b.saturating_sub(first).saturating_sub(self.below_first);
        }
        // The next frame not yet accounted for: after the last complete one, or the
        // window's first frame if none completed.
        let next = if self.any_frame || self.pre_window_baseline {
            Some(self.next_expected)
        } else {
            first_in_window
        };
        if let (Some(h), Some(next)) = (highest_seen, next) {
            if h >= next {
                incomplete = incomplete.saturating_add((h - next).saturating_add(1));
            }
        }
        let q = |p: f64| -> Dur {
            if self.delays.is_empty() {
                return Dur::ZERO;
            }
            Dur::from_nanos(self.delays.value_at_quantile(p)).min(self.delay_max)
        };
        let run = end - self.start;
        FrameSummary {
            frames_complete: self.complete,
            frames_late: self.late,
            frames_incomplete: incomplete,
            delay_p50: q(0.50),
            delay_p90: q(0.90),
            delay_p99: q(0.99),
            delay_p999: q(0.999),
            delay_max: self.delay_max,
            delay_mean: if self.complete == 0 {
                Dur::ZERO
            } else {
                Dur::from_nanos((self.delay_sum / u128::from(self.complete)) as u64)
            },
            stall_time: stall,
            stall_fraction: if run.is_zero() {
                0.0
            } else {
                (stall.as_secs_f64() / run.as_secs_f64()).min(1.0)
            },
            mean_fps: if run.is_zero() {
                0.0
            } else {
                self.complete as f64 / run.as_secs_f64()
            },
            late_fraction: if self.complete + incomplete == 0 {
                0.0
            } else {
                (self.late + incomplete) as f64 / (self.complete + incomplete) as f64
            },
        }
    }
}
