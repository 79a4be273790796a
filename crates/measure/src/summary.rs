//! `summary.json` from the meters of a finished run, the same for both backends.

use crate::{FlowMeter, QueueMeter, Window};
use l4s_core::{Dur, Ecn};
use l4s_metrics::hist::{ratio, round6};
use l4s_metrics::summary::*;
use l4s_metrics::LatencyHist;
use l4s_scenario::{FlowKind, Scenario};
use l4s_transport::EndpointStats;
use std::collections::BTreeMap;

/// What a flow's summary needs beside its meter.
pub struct FlowEnd {
    /// The sender's statistics at the end and when the window opened.
    pub sender: EndpointStats,
    pub sender_base: EndpointStats,
    /// Application payload delivered in order in the window (bytes).
    pub goodput_bytes: u64,
}

/// What a queue's summary needs beside its meter.
pub struct QueueEnd {
    /// The queue's name: its link's, or `link/label` for one of several queues of a link
    /// (see [`queue_name`]).
    pub name: String,
    /// Index of the scenario link it belongs to.
    pub link: usize,
    pub aqm: String,
    /// The rate in force at the end (0: unlimited).
    pub rate_bps: u64,
    /// The radio side (cellular links, links with HARQ): see [`radio_summary`].
    pub radio: Option<RadioSummary>,
    /// Queue Protection: see [`queue_protection_summary`].
    pub queue_protection: Option<QueueProtectionSummary>,
    /// The flows (scenario indices, sorted) whose data packets the backend saw this queue
    /// forward, where it kept them; otherwise the summary takes them from the routes when
    /// the queue is its link's only one.
    pub data_flows: Option<Vec<usize>>,
}

/// The summary of Queue Protection's counters, with each sanctioned flow named by
/// `name_of` (from its [`l4s_core::QueuePacket::flow_hash`] and destination port).
pub fn queue_protection_summary(
    s: &l4s_aqm::QpStats,
    name_of: impl Fn(u32, Option<u16>) -> String,
) -> QueueProtectionSummary {
    let mut flows: Vec<SanctionedFlow> = s
        .flows
        .iter()
        .map(|(h, r)| SanctionedFlow {
            flow: name_of(*h, r.dst_port),
            packets: r.packets,
            bytes: r.bytes,
            first_s: round6(r.first.as_secs_f64()),
            last_s: round6(r.last.as_secs_f64()),
            max_score_ms: round6(r.max_score.as_millis_f64()),
            max_qdelay_ms: round6(r.max_qdelay.as_millis_f64()),
        })
        .collect();
    flows.sort_by(|a, b| b.packets.cmp(&a.packets).then_with(|| a.flow.cmp(&b.flow)));
    QueueProtectionSummary {
        critical_ql_ms: round6(s.critical_ql.as_millis_f64()),
        checked_packets: s.checked_packets,
        sanctioned_packets: s.sanctioned_packets,
        sanctioned_bytes: s.sanctioned_bytes,
        default_bucket_collisions: s.default_bucket_collisions,
        flows,
    }
}

/// The capacity of scenario link `spec` over `window`, sampled every 10 ms; `None` for a
/// link whose capacity stays the same (or that has none).
pub fn capacity_summary(spec: &l4s_scenario::Link, window: Window) -> Option<CapacitySummary> {
    spec.rate?;
    if spec.schedule.is_empty() && spec.trace.is_none() {
        return None;
    }
    let end = Dur(window.end.as_nanos());
    let step = Dur::from_millis(10);
    let (mut sum, mut n, mut lo, mut hi) = (0.0, 0u64, f64::MAX, 0.0f64);
    let mut t = Dur(window.start.as_nanos()) + step;
    while t <= end {
        let r = spec.rate_at(t, end).map_or(0.0, |r| r.bits_per_sec() as f64);
        sum += r;
        n += 1;
        lo = lo.min(r);
        hi = hi.max(r);
        t += step;
    }
    (n > 0 && hi > lo).then(|| CapacitySummary {
        mean_bps: round6(sum / n as f64),
        min_bps: lo,
        max_bps: hi,
    })
}

/// The radio summary of scenario link `spec` from its link model's counters at the end of
/// the window (`now`) and when it opened (`base`); `None` for a link without a radio side.
pub fn radio_summary(
    spec: &l4s_scenario::Link,
    now: &l4s_link::LinkStats,
    base: &l4s_link::LinkStats,
) -> Option<RadioSummary> {
    let direction = match (&spec.ran, spec.harq) {
        _ if spec.docsis.is_some() => "upstream",
        _ if spec.docsis_downstream.is_some() => "downstream",
        (Some((_, l4s_link::RanDirection::Downlink)), _) => "downlink",
        (Some((_, l4s_link::RanDirection::Uplink)), _) => "uplink",
        (None, Some(_)) => "wire",
        (None, None) => return None,
    };
    Some(radio_summary_of(direction, now, base))
}

/// The radio summary of one radio direction (`"downlink"`, `"uplink"`, `"upstream"`,
/// `"downstream"` or `"wire"`) from its counters at the end of the window and when it
/// opened: a link's, or one UE direction's of a cell ([`l4s_link::Link::queue_link_stats`]).
pub fn radio_summary_of(
    direction: &'static str,
    now: &l4s_link::LinkStats,
    base: &l4s_link::LinkStats,
) -> RadioSummary {
    let d = |f: fn(&l4s_link::LinkStats) -> u64| f(now).saturating_sub(f(base));
    let offered = d(|s| s.block_bytes);
    let uplink = matches!(direction, "uplink" | "upstream").then(|| {
        let hist: Vec<u64> = now
            .grant_delay_ms
            .iter()
            .zip(&base.grant_delay_ms)
            .map(|(a, b)| a.saturating_sub(*b))
            .collect();
        let n = d(|s| s.grant_delays);
        // The upper edge of the bucket holding quantile q.
        let quantile = |q: f64| {
            let want = (q * n as f64).ceil().max(1.0) as u64;
            let mut seen = 0;
            hist.iter()
                .position(|c| {
                    seen += c;
                    seen >= want
                })
                .map(|i| (i + 1) as f64)
        };
        UplinkSummary {
            scheduling_requests: d(|s| s.scheduling_requests),
            grants: d(|s| s.grants),
            grants_unused: d(|s| s.grants_unused),
            configured_grants_used: d(|s| s.configured_grants_used),
            pgs_grants: d(|s| s.pgs_grants),
            pgs_grants_unused: d(|s| s.pgs_grants_unused),
            grant_delays: n,
            grant_delay_mean_ms: (n > 0).then(|| round6(d(|s| s.grant_delay_ns) as f64 / n as f64 / 1e6)),
            grant_delay_p50_ms: if n > 0 { quantile(0.5) } else { None },
            grant_delay_p99_ms: if n > 0 { quantile(0.99) } else { None },
        }
    });
    RadioSummary {
        direction: direction.into(),
        blocks: d(|s| s.blocks),
        block_fill: if offered > 0 {
            round6(d(|s| s.block_bytes_used) as f64 / offered as f64)
        } else {
            0.0
        },
        harq_retransmissions: d(|s| s.harq_retransmissions),
        shaper_limited_share: {
            let n = d(|s| s.shaper_decisions);
            (n > 0).then(|| round6(d(|s| s.shaper_limited) as f64 / n as f64))
        },
        uplink,
    }
}

/// The name a queue is reported under: its link's name for a link's only (unlabelled)
/// queue, `link/label` otherwise (a Wi-Fi access point's queue per station and access
/// category, say).
pub fn queue_name(link: &str, label: &str) -> String {
    if label.is_empty() {
        link.to_string()
    } else {
        format!("{link}/{label}")
    }
}

/// The whole summary. `flows` are the scenario's flows' meters and ends, in scenario
/// order; `queues` the links' queues, in scenario order (bottlenecks are listed first).
pub fn summary(
    sc: &Scenario,
    backend: &str,
    seed: u64,
    window: Window,
    flows: &[(&FlowMeter, FlowEnd)],
    queues: &[(&QueueMeter, QueueEnd)],
) -> Summary {
    let secs = window.secs();
    let per_sec = |x: f64| if secs > 0.0 { round6(x / secs) } else { 0.0 };
    let mut out_flows = Vec::new();
    let mut classes: BTreeMap<String, (u32, f64, LatencyHist, LatencyHist)> = BTreeMap::new();
    for (spec, (m, end)) in sc.flows.iter().zip(flows) {
        let (snd, bs) = (&end.sender, &end.sender_base);
        let ecn = m.first_ecn.unwrap_or(spec.nominal_ecn);
        let class = if ecn == Ecn::Ect1 { "L4S" } else { "classic" };
        let (cc, feedback) = match &spec.kind {
            FlowKind::Tcp { cc, .. } => (cc.clone(), snd.ecn_mode.to_string()),
            FlowKind::UdpPrague { .. } => ("udp-prague".to_string(), "udp-prague".to_string()),
            FlowKind::Probe { .. } => ("none".to_string(), "none".to_string()),
            FlowKind::Media { params } => (params.controller.name().to_string(), "rfc8888".to_string()),
            // A query is one UDP packet each way: its `cc` only chose the codepoint.
            FlowKind::App { cfg } if cfg.kind == l4s_apps::AppKind::Query => ("none".to_string(), "none".to_string()),
            FlowKind::App { cfg } => (cfg.cc.clone(), snd.ecn_mode.to_string()),
        };
        let throughput = per_sec(m.received_bytes as f64 * 8.0);
        let e = classes
            .entry(class.to_string())
            .or_insert_with(|| (0, 0.0, LatencyHist::new(), LatencyHist::new()));
        e.0 += 1;
        e.1 += throughput;
        e.2.merge(&m.owd);
        e.3.merge(&m.rtt);
        let lost = m.lost();
        out_flows.push(FlowSummary {
            name: spec.name.clone(),
            kind: spec.kind.type_name().to_string(),
            cc,
            ecn: ecn.name().to_string(),
            ecn_feedback: if feedback.is_empty() { "none".into() } else { feedback },
            class: class.to_string(),
            src: sc.nodes[spec.src].name.clone(),
            dst: sc.nodes[spec.dst].name.clone(),
            base_rtt_ms: round6(sc.base_rtt(spec.src, spec.dst).as_millis_f64()),
            throughput_bps: throughput,
            goodput_bps: per_sec(end.goodput_bytes as f64 * 8.0),
            owd_ms: m.owd.percentiles_ms(),
            rtt_ms: if matches!(spec.kind, FlowKind::Probe { .. }) {
                None
            } else {
                Some(m.rtt.percentiles_ms())
            },
            sent_packets: m.sent,
            lost_packets: lost,
            loss_fraction: ratio(lost, m.sent),
            latency_budget_ms: spec.latency_budget.map(|b| round6(b.as_millis_f64())),
            late_packets: m.late,
            effective_loss_fraction: ratio(lost + m.late, m.sent),
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
            media: match (&spec.kind, m.media.as_deref()) {
                (FlowKind::Media { params }, Some(mm)) => Some(crate::appmetrics::media_summary(
                    params,
                    &crate::appmetrics::MediaWindow {
                        frames: mm.frames.finish_with_seen(
                            window.end,
                            mm.baseline.map(|b| b.frames_encoded),
                            mm.highest_seen,
                        ),
                        delay: &mm.delay,
                        targets: &mm.targets,
                        sender_end: mm.latest.unwrap_or_default(),
                        sender_start: mm.baseline.unwrap_or_default(),
                        secs,
                    },
                )),
                _ => None,
            },
            app: match (&spec.kind, m.app.as_deref()) {
                (FlowKind::App { cfg }, Some(a)) => Some(crate::appmetrics::app_summary(cfg, &a.kinds)),
                _ => None,
            },
            // Set with the run's fairness by `Summary::assemble`.
            share_of_equal: None,
        });
    }
    let mut order: Vec<&(&QueueMeter, QueueEnd)> = queues.iter().collect();
    // Bottlenecks first, the slowest of them first (the rate at the end; a link whose
    // capacity changes by its configured or mean rate), then the rest, each group in
    // scenario order. A shared medium's queues (a Wi-Fi BSS's, a cell's) stay together
    // where its first link, the one that is reported as its bottleneck, goes.
    order.sort_by_key(|(_, e)| {
        let l = &sc.links[e.link];
        let l = l.medium.as_ref().and_then(|m| sc.links.get(m.owner)).unwrap_or(l);
        let rate = l.rate.map_or(u64::MAX, |r| r.bits_per_sec());
        (!l.bottleneck, if l.bottleneck { rate } else { 0 })
    });
    // Per scenario link: how many of `queues` belong to it, and the flows (in scenario
    // order) whose data the routes send over it; once, not per queue.
    let mut queues_on = vec![0usize; sc.links.len()];
    for (_, e) in queues {
        if let Some(n) = queues_on.get_mut(e.link) {
            *n += 1;
        }
    }
    let mut data_over: Vec<Vec<usize>> = vec![Vec::new(); sc.links.len()];
    for (i, f) in sc.flows.iter().enumerate() {
        for l in sc.routes.path(f.src, f.dst) {
            if let Some(v) = data_over.get_mut(l) {
                v.push(i);
            }
        }
    }
    let mut out_queues = Vec::new();
    for (q, end) in order {
        let spec = &sc.links[end.link];
        let mut subqueues = BTreeMap::new();
        let mut tot = crate::SubCounts::default();
        for ((id, h), c) in q.subqueues.iter().zip(&q.sojourn).zip(&q.counts) {
            tot.enqueued_packets += c.enqueued_packets;
            tot.dequeued_packets += c.dequeued_packets;
            tot.marks += c.marks;
            tot.drops += c.drops;
            tot.overlimit_drops += c.overlimit_drops;
            subqueues.insert(
                id.name().to_string(),
                SubQueueSummary {
                    sojourn_ms: h.percentiles_ms(),
                    enqueued_packets: c.enqueued_packets,
                    dequeued_packets: c.dequeued_packets,
                    dequeued_bytes: c.dequeued_bytes,
                    marks: c.marks,
                    drops: c.drops,
                    overlimit_drops: c.overlimit_drops,
                },
            );
        }
        out_queues.push(QueueSummary {
            name: end.name.clone(),
            from: sc.nodes[spec.from].name.clone(),
            to: sc.nodes[spec.to].name.clone(),
            aqm: end.aqm.clone(),
            rate_bps: end.rate_bps,
            utilization: if secs > 0.0 {
                round6((q.busy.as_secs_f64() / secs).min(1.0))
            } else {
                0.0
            },
            sojourn_ms: q.sojourn_all().percentiles_ms(),
            enqueued_packets: tot.enqueued_packets,
            dequeued_packets: tot.dequeued_packets,
            marks: tot.marks,
            drops: tot.drops,
            overlimit_drops: tot.overlimit_drops,
            mean_probability: q.mean_probability().map(round6),
            subqueues,
            // The routes say which flows cross a link, not which of a link's several queues
            // (a Wi-Fi station's) their packets take: that only a backend that saw them knows.
            data_flows: match &end.data_flows {
                Some(seen) => Some(
                    seen.iter()
                        .filter_map(|&f| sc.flows.get(f))
                        .map(|f| f.name.clone())
                        .collect(),
                ),
                None => (queues_on.get(end.link) == Some(&1))
                    .then(|| data_over[end.link].iter().map(|&f| sc.flows[f].name.clone()).collect()),
            },
            radio: end.radio.clone(),
            capacity: capacity_summary(spec, window),
            queue_protection: end.queue_protection.clone(),
        });
    }
    Summary::assemble(
        ScenarioInfo {
            name: sc.name.clone(),
            description: sc.description.clone(),
            file: sc.file.clone(),
            backend: backend.into(),
            seed,
            duration_s: round6(Dur(window.end.as_nanos()).as_secs_f64()),
            warmup_s: round6(Dur(window.start.as_nanos()).as_secs_f64()),
            stats_window_s: round6(secs),
        },
        out_flows,
        out_queues,
        classes,
    )
}

/// Station `st`'s MAC access delays (µs) in direction `d` (0 down, 1 up) since `base`, its
/// counters when the window opened.
fn window_access_delay(
    st: &l4s_link::wifi::StationReport,
    base: Option<&l4s_link::wifi::StationStats>,
    d: usize,
) -> l4s_link::wifi::Histogram {
    match base {
        Some(b) => st.stats.access_delay_us[d].since(&b.access_delay_us[d]),
        None => st.stats.access_delay_us[d].clone(),
    }
}

/// The MAC access delays of BSS `name` over the window, per station and direction, named
/// `<name>/<station>/<down|up>` (for `distributions.csv`).
pub fn wifi_access_delays(
    name: &str,
    now: &l4s_link::wifi::BssStats,
    base: Option<&l4s_link::wifi::BssStats>,
) -> Vec<(String, l4s_link::wifi::Histogram)> {
    let mut out = Vec::new();
    for (i, st) in now.stations.iter().enumerate() {
        let b = base.and_then(|b| b.stations.get(i)).map(|r| &r.stats);
        for (d, dir) in ["down", "up"].into_iter().enumerate() {
            out.push((format!("{name}/{}/{dir}", st.name), window_access_delay(st, b, d)));
        }
    }
    out
}

/// What BSS `name` did between `base` (its counters when the window opened) and `now`,
/// over `secs` of window.
pub fn wifi_summary(
    name: &str,
    now: &l4s_link::wifi::BssStats,
    base: Option<&l4s_link::wifi::BssStats>,
    secs: f64,
) -> l4s_metrics::summary::WifiSummary {
    use l4s_metrics::summary::{
        WifiCategorySummary, WifiDirectionSummary, WifiLinkDirectionSummary, WifiLinkSummary, WifiStationSummary,
    };
    // Per-link figures only for a BSS of several channels (one channel: one link each).
    let multi = now.edcafs.iter().any(|e| e.channel.is_some());
    let stations = now
        .stations
        .iter()
        .enumerate()
        .map(|(i, st)| {
            let b = base.and_then(|b| b.stations.get(i)).map(|r| &r.stats);
            let dir = |d: usize| {
                let minus = |f: fn(&l4s_link::wifi::StationStats) -> [u64; 2]| {
                    f(&st.stats)[d].saturating_sub(b.map_or(0, |b| f(b)[d]))
                };
                let ppdus = minus(|s| s.ppdus);
                let mpdus = minus(|s| s.mpdus);
                let h = window_access_delay(st, b, d);
                let q = |x: f64| (!h.is_empty()).then(|| round6(h.quantile(x) as f64 / 1_000.0));
                WifiDirectionSummary {
                    airtime_share: if secs > 0.0 {
                        round6(minus(|s| s.airtime_ns) as f64 / 1e9 / secs)
                    } else {
                        0.0
                    },
                    ppdus,
                    mpdus_per_ampdu: if ppdus > 0 {
                        round6(mpdus as f64 / ppdus as f64)
                    } else {
                        0.0
                    },
                    retries: minus(|s| s.retries),
                    retry_drops: minus(|s| s.retry_drops),
                    access_delay_p50_ms: q(0.5),
                    access_delay_p99_ms: q(0.99),
                    access_delay_ms: (!h.is_empty()).then(|| l4s_metrics::Percentiles {
                        count: h.len(),
                        mean: round6(h.mean() / 1_000.0),
                        p50: round6(h.quantile(0.5) as f64 / 1_000.0),
                        p90: round6(h.quantile(0.9) as f64 / 1_000.0),
                        p99: round6(h.quantile(0.99) as f64 / 1_000.0),
                        p999: round6(h.quantile(0.999) as f64 / 1_000.0),
                        p9999: round6(h.quantile(0.9999) as f64 / 1_000.0),
                        max: round6(h.quantile(1.0) as f64 / 1_000.0),
                    }),
                }
            };
            WifiStationSummary {
                station: st.name.clone(),
                phy: st.mode.to_string(),
                phy_rate_bps: st.mode.data_rate().bits_per_sec(),
                down: dir(0),
                up: dir(1),
                off_channel_s: round6(
                    st.stats
                        .off_channel_ns
                        .saturating_sub(b.map_or(0, |b| b.off_channel_ns)) as f64
                        / 1e9,
                ),
                dwells: st.stats.dwells.saturating_sub(b.map_or(0, |b| b.dwells)),
                links: if multi {
                    st.links
                        .iter()
                        .enumerate()
                        .map(|(k, l)| {
                            let now_l = st.stats.links.get(k).cloned().unwrap_or_default();
                            let base_l = b.and_then(|b| b.links.get(k)).cloned().unwrap_or_default();
                            let dir = |d: usize| WifiLinkDirectionSummary {
                                airtime_share: if secs > 0.0 {
                                    round6(now_l.airtime_ns[d].saturating_sub(base_l.airtime_ns[d]) as f64 / 1e9 / secs)
                                } else {
                                    0.0
                                },
                                ppdus: now_l.ppdus[d].saturating_sub(base_l.ppdus[d]),
                                mpdus: now_l.mpdus[d].saturating_sub(base_l.mpdus[d]),
                            };
                            WifiLinkSummary {
                                channel: l.channel.clone(),
                                band: l.band.to_string(),
                                phy: l.mode.to_string(),
                                phy_rate_bps: l.mode.data_rate().bits_per_sec(),
                                down: dir(0),
                                up: dir(1),
                            }
                        })
                        .collect()
                } else {
                    Vec::new()
                },
            }
        })
        .collect();
    let categories = now
        .edcafs
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let b = base.and_then(|b| b.edcafs.get(i)).map(|r| r.stats).unwrap_or_default();
            WifiCategorySummary {
                device: e.station.clone().unwrap_or_else(|| "AP".into()),
                category: e.category.to_string(),
                txops: e.stats.txops.saturating_sub(b.txops),
                collisions: e.stats.collisions.saturating_sub(b.collisions),
                internal_collisions: e.stats.internal_collisions.saturating_sub(b.internal_collisions),
                channel: e.channel.clone(),
            }
        })
        .collect();
    l4s_metrics::summary::WifiSummary {
        name: name.to_string(),
        stations,
        categories,
    }
}
