//! Turning the meters of a finished run into the `summary.json` structure.

use crate::measure::qidx;
use crate::world::Sim;
use l4s_aqm::QueueStats;
use l4s_core::Ecn;
use l4s_metrics::hist::round6;
use l4s_metrics::summary::*;
use l4s_metrics::LatencyHist;
use l4s_scenario::FlowKind;
use std::collections::BTreeMap;

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        round6(a as f64 / b as f64)
    }
}

fn diff(now: &QueueStats, base: Option<&QueueStats>) -> QueueStats {
    let b = base.copied().unwrap_or_default();
    QueueStats {
        enqueued_packets: now.enqueued_packets - b.enqueued_packets.min(now.enqueued_packets),
        enqueued_bytes: now.enqueued_bytes.saturating_sub(b.enqueued_bytes),
        dequeued_packets: now.dequeued_packets.saturating_sub(b.dequeued_packets),
        dequeued_bytes: now.dequeued_bytes.saturating_sub(b.dequeued_bytes),
        marks: now.marks.saturating_sub(b.marks),
        drops: now.drops.saturating_sub(b.drops),
        overlimit_drops: now.overlimit_drops.saturating_sub(b.overlimit_drops),
        backlog_packets: now.backlog_packets,
        backlog_bytes: now.backlog_bytes,
    }
}

impl Sim {
    /// The results of the run so far (call after [`Sim::run`]).
    pub fn summary(&self) -> Summary {
        let sc = &self.scenario;
        let window = (self.end.as_nanos().saturating_sub(self.window_start.as_nanos())) as f64 / 1e9;
        let per_sec = |x: f64| {
            if window > 0.0 {
                round6(x / window)
            } else {
                0.0
            }
        };
        let mut flows = Vec::new();
        let mut classes: BTreeMap<String, (u32, f64, LatencyHist, LatencyHist)> = BTreeMap::new();
        for (i, (spec, fl)) in sc.flows.iter().zip(&self.flows).enumerate() {
            let m = &fl.meter;
            let snd = fl.ep[0].as_ref().map(|e| e.stats()).unwrap_or_default();
            let rcv = fl.ep[1].as_ref().map(|e| e.stats()).unwrap_or_default();
            let [bs, br] = &m.baseline;
            let bs = bs.unwrap_or_default();
            let br = br.unwrap_or_default();
            let ecn = m.first_ecn.unwrap_or(spec.nominal_ecn);
            let class = if ecn == Ecn::Ect1 { "L4S" } else { "classic" };
            let (cc, feedback) = match &spec.kind {
                FlowKind::Tcp { cc, .. } => (cc.clone(), snd.ecn_mode.to_string()),
                FlowKind::UdpPrague { .. } => ("udp-prague".to_string(), "udp-prague".to_string()),
                FlowKind::Probe { .. } => ("none".to_string(), "none".to_string()),
                FlowKind::Media { params } => (params.controller.name().to_string(), "rfc8888".to_string()),
                FlowKind::App { cfg } => (cfg.cc.clone(), snd.ecn_mode.to_string()),
            };
            let throughput = per_sec(m.received_bytes as f64 * 8.0);
            let owd = m.owd.percentiles_ms();
            let e = classes
                .entry(class.to_string())
                .or_insert_with(|| (0, 0.0, LatencyHist::new(), LatencyHist::new()));
            e.0 += 1;
            e.1 += throughput;
            e.2.merge(&m.owd);
            e.3.merge(&m.rtt);
            flows.push(FlowSummary {
                name: spec.name.clone(),
                kind: spec.kind.type_name().to_string(),
                cc,
                ecn: ecn.name().to_string(),
                ecn_feedback: if feedback.is_empty() { "none".into() } else { feedback },
                class: class.to_string(),
                src: sc.nodes[spec.src].name.clone(),
                dst: sc.nodes[spec.dst].name.clone(),
                base_rtt_ms: round6(self.base_rtt(i).as_millis_f64()),
                throughput_bps: throughput,
                goodput_bps: per_sec(rcv.delivered_bytes.saturating_sub(br.delivered_bytes) as f64 * 8.0),
                owd_ms: owd,
                rtt_ms: if matches!(spec.kind, FlowKind::Probe { .. }) {
                    None
                } else {
                    Some(m.rtt.percentiles_ms())
                },
                sent_packets: m.sent,
                lost_packets: m.lost,
                loss_fraction: ratio(m.lost, m.sent),
                latency_budget_ms: spec.latency_budget.map(|b| round6(b.as_millis_f64())),
                late_packets: m.late,
                effective_loss_fraction: ratio(m.lost + m.late, m.sent),
                retransmits: snd.retransmits.saturating_sub(bs.retransmits),
                received_packets: m.received,
                ce_packets: m.ce,
                ce_fraction: ratio(m.ce, m.received),
                congestion_events: snd.congestion_events.saturating_sub(bs.congestion_events),
                ecn_validation: snd.ecn_validation.name().to_string(),
                ecn_failed_at_s: match snd.ecn_validation {
                    l4s_transport::EcnValidation::Failed { at, .. } => Some(round6(at.as_secs_f64())),
                    _ => None,
                },
                ecn_failure: match snd.ecn_validation {
                    l4s_transport::EcnValidation::Failed { reason, .. } => Some(reason.name().to_string()),
                    _ => None,
                },
                media: self.media_summary(i),
                app: self.app_summary(i),
            });
        }
        let mut queues = Vec::new();
        let mut order: Vec<usize> = (0..self.links.len()).filter(|&l| self.links[l].queued()).collect();
        // Bottlenecks first, then the rest in scenario order.
        order.sort_by_key(|&l| !sc.links[l].bottleneck);
        for l in order {
            let link = &self.links[l];
            let spec = &sc.links[l];
            let now_stats = link.model.queue_stats(0);
            let mut all = LatencyHist::new();
            let mut subqueues = BTreeMap::new();
            let mut tot = QueueStats::default();
            for (qid, st) in &now_stats {
                let base = link.meter.baseline.iter().find(|(b, _)| b == qid).map(|(_, s)| s);
                let d = diff(st, base);
                let h = &link.meter.sojourn[qidx(*qid)];
                all.merge(h);
                tot.enqueued_packets += d.enqueued_packets;
                tot.dequeued_packets += d.dequeued_packets;
                tot.marks += d.marks;
                tot.drops += d.drops;
                tot.overlimit_drops += d.overlimit_drops;
                subqueues.insert(
                    qid.name().to_string(),
                    SubQueueSummary {
                        sojourn_ms: h.percentiles_ms(),
                        enqueued_packets: d.enqueued_packets,
                        dequeued_packets: d.dequeued_packets,
                        dequeued_bytes: d.dequeued_bytes,
                        marks: d.marks,
                        drops: d.drops,
                        overlimit_drops: d.overlimit_drops,
                    },
                );
            }
            let busy = link.meter.busy.as_secs_f64();
            queues.push(QueueSummary {
                name: spec.name.clone(),
                from: sc.nodes[spec.from].name.clone(),
                to: sc.nodes[spec.to].name.clone(),
                aqm: link.model.queues()[0].aqm.to_string(),
                rate_bps: link.model.rate(0, 1).map(|r| r.bits_per_sec()).unwrap_or(0),
                utilization: if window > 0.0 {
                    round6((busy / window).min(1.0))
                } else {
                    0.0
                },
                sojourn_ms: all.percentiles_ms(),
                enqueued_packets: tot.enqueued_packets,
                dequeued_packets: tot.dequeued_packets,
                marks: tot.marks,
                drops: tot.drops,
                overlimit_drops: tot.overlimit_drops,
                mean_probability: if link.meter.prob_samples > 0 {
                    Some(round6(link.meter.prob_sum / link.meter.prob_samples as f64))
                } else {
                    None
                },
                subqueues,
            });
        }
        Summary::assemble(
            ScenarioInfo {
                name: sc.name.clone(),
                description: sc.description.clone(),
                file: sc.file.clone(),
                backend: "sim".into(),
                seed: sc.seed,
                duration_s: round6(self.end.as_secs_f64()),
                warmup_s: round6(self.window_start.as_secs_f64()),
                stats_window_s: round6(window),
            },
            flows,
            queues,
            classes,
        )
    }
}

impl Sim {
    /// Per-frame metrics of media flow `i` over the statistics window.
    fn media_summary(&self, i: usize) -> Option<l4s_metrics::summary::MediaSummary> {
        let FlowKind::Media { params } = &self.scenario.flows[i].kind else {
            return None;
        };
        let fl = &self.flows[i];
        let m = fl.media.as_ref()?;
        let (rcv, snd) = match (&fl.ep[1], &fl.ep[0]) {
            (Some(crate::endpoints::Ep::MediaR(r)), Some(crate::endpoints::Ep::MediaS(s))) => (Some(r), Some(s)),
            _ => (None, None),
        };
        let fs = m
            .window
            .as_ref()
            .map(|w| w.finish_with_seen(self.end, rcv.and_then(|r| r.highest_frame_seen())))
            .unwrap_or_default();
        let window = (self.end.as_nanos().saturating_sub(self.window_start.as_nanos())) as f64 / 1e9;
        Some(crate::appmetrics::media_summary(
            params,
            &crate::appmetrics::MediaWindow {
                frames: fs,
                delay: &m.delay,
                targets: &m.targets,
                sender_end: snd.map(|s| s.media_stats()).unwrap_or_default(),
                sender_start: m.baseline.unwrap_or_default(),
                secs: window,
            },
        ))
    }

    /// Completion times of application flow `i` over the statistics window.
    fn app_summary(&self, i: usize) -> Option<l4s_metrics::summary::AppSummary> {
        let FlowKind::App { cfg } = &self.scenario.flows[i].kind else {
            return None;
        };
        let a = self.flows[i].app.as_ref()?;
        Some(crate::appmetrics::app_summary(cfg, &a.kinds))
    }
}
