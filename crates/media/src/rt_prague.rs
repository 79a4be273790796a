//! RT-Prague: udp_prague's controller ([`UdpPragueCc`]) in frame mode (L4STeam/udp_prague README
//! "Frame mode", `GetCCInfoVideo`), driven from RFC 8888 feedback instead of udp_prague's own
//! ACKs.
//!
//! * The cumulative counters udp_prague's receiver echoes (`DataReceivedSequence`: received,
//!   CE, lost) are derived by the sender from the per-packet reports: a packet reported
//!   received adds to `received` (and to `CE` if marked and CE is trusted); a packet the
//!   sender declares lost (reorder window, as for SCReAM) adds to `lost`, and a "lost" packet
//!   reported later un-counts the loss, like udp_prague's reordering rule.
//! * RTT (as for udp_prague's RFC 8888-like ACK, `rfc8888ack_t`):
//!   `RTT = now − ATO − send_time` of the newest reported packet. It is handed to the
//!   controller as an echoed timestamp `wire_time(now − RTT)`, so `PacketReceived` computes
//!   exactly that RTT.
//! * The report timestamp (µs of the receiver's clock) is the peer timestamp, so a report
//!   older than the last one is stale (as in `PacketReceived` / `ACKReceived`).
//! * Frame mode: `frame_size = max(packet_size, rate·frame_budget)`, frames are paced at
//!   the rate in bursts and at most `frame_window` frames are in flight. The encoder's
//!   target is `frame_size × fps` (bit/s). The controller's rate limits are the media
//!   limits divided by `budget·fps`, so that the target spans [min_bitrate, max_bitrate].
//! * ECN validation failure (or a classic flow) passes `error_L4S`, after which the
//!   controller's `GetTimeInfo` sends Not-ECT and, with no CE trusted, only its loss
//!   halving is left.

use crate::config::MediaParams;
use l4s_cc::udp_prague::{FrameOutput, UdpPragueCc, UdpPragueParams};
use l4s_core::{Dur, Ecn, Rate, Time};

/// One processed report, as RT-Prague sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtFeedback<'a> {
    /// The RTT of each packet the report newly reports received (now − the packet's send
    /// time − its RFC 8888 arrival time offset), in report order.
    pub rtts: &'a [Dur],
    /// Packets newly reported received, and CE-marked among them.
    pub d_received: i64,
    pub d_ce: i64,
    /// Change of the lost count (negative when "lost" packets were reported after all).
    pub d_lost: i64,
    /// All packets sent so far (wrapping).
    pub packets_sent: i32,
}

/// The RT-Prague controller of a media sender.
#[derive(Clone, Debug)]
pub struct RtPrague {
    cc: UdpPragueCc,
    fps: u32,
    received: i32,
    ce: i32,
    lost: i32,
    error_l4s: bool,
    /// Reports the controller rejected as stale or inconsistent.
    pub rejected: u64,
    /// Scratch: a report's RTT samples in µs.
    rtt_us: Vec<i64>,
}

/// Rate limit of the controller (B/s) giving media bitrate `r` at `budget` per frame.
fn cc_rate(r: Rate, budget: Dur, fps: u32) -> i64 {
    let frac = budget.as_secs_f64() * f64::from(fps.max(1));
    (r.bytes_per_sec() / frac.max(1e-6))
        .round()
        .clamp(1.0, i64::MAX as f64 / 4.0) as i64
}

impl RtPrague {
    pub fn new(p: &MediaParams, now: Time) -> RtPrague {
        let params = UdpPragueParams {
            max_packet_size: p.packet_size,
            fps: p.fps,
            frame_budget_us: p.frame_budget.as_micros().max(1) as i64,
            init_rate: cc_rate(p.start_bitrate, p.frame_budget, p.fps),
            min_rate: cc_rate(p.min_bitrate, p.frame_budget, p.fps),
            max_rate: cc_rate(p.max_bitrate, p.frame_budget, p.fps),
            init_window_pkts: l4s_cc::udp_prague::INIT_WINDOW_PKTS,
            rate_probe: false,
        };
        RtPrague {
            cc: UdpPragueCc::new(params, now),
            fps: p.fps,
            received: 0,
            ce: 0,
            lost: 0,
            error_l4s: !p.l4s,
            rejected: 0,
            rtt_us: Vec::new(),
        }
    }

    pub fn cc(&self) -> &UdpPragueCc {
        &self.cc
    }

    /// ECN validation failed: send Not-ECT from now on.
    pub fn set_error_l4s(&mut self) {
        self.error_l4s = true;
    }
    pub fn error_l4s(&self) -> bool {
        self.error_l4s
    }

    /// The codepoint to send (`GetTimeInfo`): ECT(1) until `error_L4S`.
    pub fn ecn(&self) -> Ecn {
        if self.error_l4s {
            Ecn::NotEct
        } else {
            Ecn::Ect1
        }
    }

    /// One RFC 8888 report at `now`, as udp_prague's sender takes one in real-time mode:
    /// the counters always move; with at least one new RTT sample, each sample is smoothed
    /// in (`RFC8888Received`) and then the controller runs (`ACKReceived`); a report that
    /// newly reports nothing received leaves the controller alone. Returns false if the
    /// controller rejected the report as stale or inconsistent.
    pub fn on_feedback(&mut self, now: Time, f: &RtFeedback<'_>) -> bool {
        let RtFeedback {
            rtts,
            d_received,
            d_ce,
            d_lost,
            packets_sent,
        } = *f;
        self.received = self
            .received
            .wrapping_add(d_received.clamp(0, i64::from(i32::MAX)) as i32);
        self.ce = self.ce.wrapping_add(d_ce.clamp(0, i64::from(i32::MAX)) as i32);
        self.lost = (i64::from(self.lost) + d_lost).clamp(0, i64::from(i32::MAX)) as i32;
        if rtts.is_empty() {
            return true;
        }
        self.rtt_us.clear();
        self.rtt_us
            .extend(rtts.iter().map(|r| r.as_micros().min(i32::MAX as u64) as i64));
        self.cc.rfc8888_received(&self.rtt_us);
        let ok = self
            .cc
            .ack_received(now, self.received, self.ce, self.lost, packets_sent, self.error_l4s)
            .is_some();
        if !ok {
            self.rejected += 1;
        }
        ok
    }

    /// `GetCCInfoVideo`.
    pub fn video(&self) -> FrameOutput {
        self.cc.cc_info_video()
    }

    /// The encoder target: frame_size × fps.
    pub fn target_bitrate(&self) -> Rate {
        let v = self.cc.cc_info_video();
        Rate(
            (v.frame_size.max(0) as u64)
                .saturating_mul(8)
                .saturating_mul(u64::from(self.fps)),
        )
    }

    /// Pacing rate.
    pub fn pacing_rate(&self) -> Rate {
        Rate::from_bytes_per_sec(self.cc.pacing_rate() as f64)
    }

    /// Send timeout: reset the controller (`ResetCCInfo`).
    pub fn reset(&mut self, now: Time) {
        self.cc.reset(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MediaParams;

    #[test]
    fn target_spans_media_limits() {
        let p = MediaParams::profile("cloud-gaming", "rt-prague", true).unwrap();
        let rt = RtPrague::new(&p, Time::ZERO);
        // start 5 Mbit/s: rate = 5e6/8/(0.01·60) B/s, frame = rate·10 ms → 5 Mbit/s.
        let t = rt.target_bitrate().0 as f64;
        assert!((t / 5e6 - 1.0).abs() < 0.01, "{t}");
        assert_eq!(rt.ecn(), Ecn::Ect1);
        let c = MediaParams::profile("cloud-gaming", "rt-prague", false).unwrap();
        assert_eq!(RtPrague::new(&c, Time::ZERO).ecn(), Ecn::NotEct);
    }

    fn fb(rtts: &[Dur], d_received: i64, d_ce: i64, sent: i32) -> RtFeedback<'_> {
        RtFeedback {
            rtts,
            d_received,
            d_ce,
            d_lost: 0,
            packets_sent: sent,
        }
    }

    #[test]
    fn ce_reduces_and_clean_reports_grow() {
        let p = MediaParams::profile("cloud-gaming", "rt-prague", true).unwrap();
        let mut rt = RtPrague::new(&p, Time::ZERO);
        let rtts = [Dur::from_millis(20); 10];
        let mut sent = 0i32;
        let mut t = Time::ZERO;
        for _ in 1..=100 {
            t += Dur::from_millis(10);
            sent += 10;
            assert!(rt.on_feedback(t, &fb(&rtts, 10, 0, sent)));
        }
        let grown = rt.target_bitrate();
        assert!(grown > Rate::mbps(5), "{grown}");
        // Every packet CE-marked for a while: alpha rises and the rate falls.
        for _ in 101..=200 {
            t += Dur::from_millis(10);
            sent += 10;
            rt.on_feedback(t, &fb(&rtts, 10, 10, sent));
        }
        assert!(rt.target_bitrate() < grown, "{} !< {grown}", rt.target_bitrate());
        assert!(rt.cc().ce_events > 1);
    }

    /// As udp_prague's sender in RFC 8888 mode: every packet's RTT is smoothed in with
    /// gain 1/8, so a report of 8 packets moves srtt 1 − (7/8)^8 ≈ 66 % of the way (one
    /// sample per report moved it 12.5 %); a report with nothing newly received leaves
    /// the controller alone while its counters still count.
    #[test]
    fn every_reported_packet_is_an_rtt_sample() {
        let p = MediaParams::profile("cloud-gaming", "rt-prague", true).unwrap();
        let mut rt = RtPrague::new(&p, Time::ZERO);
        let mut t = Time::from_millis(10);
        assert!(rt.on_feedback(t, &fb(&[Dur::from_millis(20)], 1, 0, 1)));
        assert_eq!(rt.cc().srtt_us(), 20_000);
        t += Dur::from_millis(10);
        assert!(rt.on_feedback(t, &fb(&[Dur::from_millis(60); 8], 8, 0, 9)));
        let moved = (rt.cc().srtt_us() - 20_000) as f64 / 40_000.0;
        assert!((moved - (1.0 - (7.0f64 / 8.0).powi(8))).abs() < 0.01, "{moved}");
        let before = rt.cc().srtt_us();
        t += Dur::from_millis(10);
        assert!(rt.on_feedback(t, &fb(&[], 0, 0, 12)));
        assert_eq!(rt.cc().srtt_us(), before);
    }
}
