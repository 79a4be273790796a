//! What a live run reports: the time series as it goes, and at the end the forwarders'
//! statistics, the run's self-check, the distributions and the summary, from the shared
//! measurement layer.

use super::forwarders::{lockq, LiveQueue};
use crate::meter::{SharedMeter, Window};
use crate::topology::{Built, ElementKind};
use l4s_core::{Dur, Time};
use l4s_fwd::RouterStats;
use l4s_metrics::hist::round6;
use l4s_metrics::summary::{Summary, TestbedCheck};
use l4s_scenario::Scenario;
use std::collections::BTreeMap;
use std::io::Write;

/// What the forwarders reported: each one's statistics as JSON (for `run-info.json`), every
/// direction's lateness (the self-check), and the mean AQM probability over the window per
/// scenario link.
pub(super) struct ElementResults {
    pub elements: Vec<serde_json::Value>,
    pub lateness: Vec<l4s_fwd::lateness::LatenessStats>,
    pub probs: BTreeMap<usize, (f64, u64)>,
    /// Each scenario link's model counters at the end.
    pub link_stats: BTreeMap<usize, l4s_link::LinkStats>,
    /// Each scenario link's Queue Protection counters at the end, where it has them.
    pub queue_protection: BTreeMap<usize, l4s_aqm::QpStats>,
    /// Each Wi-Fi BSS: its name, its counters at the window's start (if reached) and end.
    pub wifi: Vec<(String, Option<l4s_link::wifi::BssStats>, l4s_link::wifi::BssStats)>,
}

/// Gather the forwarders' results (`mono0`: CLOCK_MONOTONIC at time 0); a forwarder that
/// failed fails the run.
pub(super) fn element_results(
    results: &[(String, Result<RouterStats, String>)],
    built: &Built,
    mono0: u64,
    window: Window,
) -> Result<ElementResults, crate::LiveError> {
    let mut out = ElementResults {
        elements: Vec::new(),
        lateness: Vec::new(),
        probs: BTreeMap::new(),
        link_stats: BTreeMap::new(),
        queue_protection: BTreeMap::new(),
        wifi: Vec::new(),
    };
    for ((name, r), el) in results.iter().zip(&built.elements) {
        let st = r
            .as_ref()
            .map_err(|e| crate::LiveError::run(format!("{name} failed: {e}")))?;
        out.elements.push(serde_json::json!({"element": name, "stats": st}));
        out.lateness.extend(st.directions.iter().map(|d| d.lateness));
        // Mean probability over the window, from the forwarder's samples.
        let links: Vec<usize> = match &el.kind {
            ElementKind::Pair(_) => {
                let seg = &built.segments[el.segment];
                vec![seg.ab, seg.ba]
            }
            ElementKind::Medium(m) => {
                if let Some((base, end)) = &st.wifi {
                    out.wifi.push((m.name.clone(), base.clone(), end.clone()));
                }
                m.stations.iter().flat_map(|s| [s.down, s.up]).collect()
            }
        };
        for (d, link) in st.directions.iter().zip(links) {
            out.link_stats.insert(link, d.link);
            if let Some(qp) = &d.queue_protection {
                // The forwarder's clock is CLOCK_MONOTONIC: count sanctions from time 0.
                let mut qp = qp.clone();
                let rel = |t: Time| Time(t.as_nanos().saturating_sub(mono0));
                for r in qp.flows.values_mut() {
                    (r.first, r.last) = (rel(r.first), rel(r.last));
                }
                out.queue_protection.insert(link, qp);
            }
            for (secs, p) in &d.probability {
                let t = st.started_ns as f64 + secs * 1e9 - mono0 as f64;
                if t >= window.start.as_nanos() as f64 && t <= window.end.as_nanos() as f64 {
                    let e = out.probs.entry(link).or_insert((0.0, 0));
                    e.0 += p;
                    e.1 += 1;
                }
            }
        }
    }
    Ok(out)
}

/// CPU time of the whole machine from the first line of `/proc/stat`: (steal, total), in
/// clock ticks. `None` where the file or the steal column is missing.
pub(super) fn cpu_times() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    parse_cpu_line(text.lines().next()?)
}

fn parse_cpu_line(line: &str) -> Option<(u64, u64)> {
    let mut it = line.split_whitespace();
    if it.next()? != "cpu" {
        return None;
    }
    // user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is
    // already counted in user and nice.
    let v: Vec<u64> = it.take(8).map(|x| x.parse().ok()).collect::<Option<_>>()?;
    (v.len() == 8).then(|| (v[7], v.iter().sum()))
}

/// The run's self-check from every element direction's lateness.
pub(super) fn testbed_check(lateness: &[l4s_fwd::lateness::LatenessStats], cpu_steal: Option<f64>) -> TestbedCheck {
    let packets: u64 = lateness.iter().map(|l| l.packets).sum();
    let late: u64 = lateness.iter().map(|l| l.over_1ms).sum();
    let worst = |f: fn(&l4s_fwd::lateness::LatenessStats) -> f64| {
        round6(lateness.iter().filter(|l| l.packets > 0).map(f).fold(0.0, f64::max) / 1e3)
    };
    let late_share = ratio(late, packets);
    TestbedCheck {
        packets,
        late_over_1ms: late,
        late_share: round6(late_share),
        worst_p99_ms: worst(|l| l.p99_us),
        worst_p999_ms: worst(|l| l.p999_us),
        max_ms: worst(|l| l.max_us),
        cpu_steal,
        disrupted: late_share > TestbedCheck::DISRUPTED_SHARE,
    }
}

/// One row per flow and per queue at run time `t` (`end`: the end of the run).
pub(super) fn write_snapshot(
    sc: &Scenario,
    meters: &[SharedMeter],
    queues: &[LiveQueue],
    t: Time,
    end: Time,
    snap: &mut l4s_measure::snapshot::Snapshots,
) {
    for (f, m) in sc.flows.iter().zip(meters) {
        snap.flow_row(t, &f.name, &mut m.lock());
    }
    for q in queues {
        let mut m = lockq(&q.meter);
        let now = l4s_measure::snapshot::QueueNow {
            backlog_packets: m.backlog_packets,
            backlog_bytes: m.backlog_bytes,
            probability: m.probability,
            marks: m.meter.interval.marks,
            drops: m.meter.interval.drops,
            rate_bps: sc.links[q.link]
                .rate_at(Dur(t.as_nanos()), Dur(end.as_nanos()))
                .map_or(0, |r| r.bits_per_sec()),
        };
        snap.queue_row(t, &q.name, &mut m.meter, now);
    }
}

pub(super) fn write_distributions(
    sc: &Scenario,
    meters: &[SharedMeter],
    queues: &[LiveQueue],
    el: &ElementResults,
    w: &mut dyn Write,
) -> std::io::Result<()> {
    let flows: Vec<_> = meters.iter().map(|m| m.lock()).collect();
    let qs: Vec<_> = queues.iter().map(|q| lockq(&q.meter)).collect();
    let flows: Vec<(&str, &l4s_measure::FlowMeter)> = sc
        .flows
        .iter()
        .zip(&flows)
        .map(|(f, m)| (f.name.as_str(), &m.meter))
        .collect();
    let qs: Vec<(&str, &l4s_measure::QueueMeter)> = queues
        .iter()
        .zip(&qs)
        .map(|(q, m)| (q.name.as_str(), &m.meter))
        .collect();
    let access: Vec<_> = el
        .wifi
        .iter()
        .flat_map(|(name, base, end)| l4s_measure::summary::wifi_access_delays(name, end, base.as_ref()))
        .collect();
    l4s_measure::distributions::write(w, &flows, &qs, &access)
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        round6(a as f64 / b as f64)
    }
}

pub(super) fn summary(
    sc: &Scenario,
    built: &Built,
    meters: &[SharedMeter],
    queues: &[LiveQueue],
    el: &ElementResults,
    window: Window,
    seed: u64,
) -> Summary {
    let (probs, link_stats) = (&el.probs, &el.link_stats);
    // A queue sees a flow as a hash of its 5-tuple: name a sanctioned flow by the port its
    // server listens on, the destination of its packets towards the server.
    let ports = super::flows::listen_ports(sc);
    let name_of = |h: u32, port: Option<u16>| {
        port.and_then(|p| ports.iter().position(|&q| q == p))
            .map(|i| sc.flows[i].name.clone())
            .unwrap_or_else(|| match port {
                Some(p) => format!("{h:08x} (port {p})"),
                None => format!("{h:08x}"),
            })
    };
    let flows: Vec<_> = meters.iter().map(|m| m.lock()).collect();
    let mut qs: Vec<_> = queues.iter().map(|q| lockq(&q.meter)).collect();
    let oh = if built.ipv6 { 62 } else { 42 };
    let flows: Vec<(&l4s_measure::FlowMeter, l4s_measure::summary::FlowEnd)> = sc
        .flows
        .iter()
        .zip(&flows)
        .map(|(f, m)| {
            // Kernel TCP carries the data (tcp flows and every application kind but query):
            // the bytes its receiving application read; datagram flows deliver what
            // arrives, headers off.
            let goodput_bytes = if super::flows::kernel_tcp(f) {
                m.goodput_bytes
            } else {
                m.received_bytes.saturating_sub(m.received * oh)
            };
            (
                &m.meter,
                l4s_measure::summary::FlowEnd {
                    sender: m.sender,
                    sender_base: m.sender_base.unwrap_or_default(),
                    goodput_bytes,
                },
            )
        })
        .collect();
    for (q, m) in queues.iter().zip(qs.iter_mut()) {
        if let Some(&(sum, n)) = probs.get(&q.link) {
            m.meter.prob_sum = sum;
            m.meter.prob_samples = n;
        }
    }
    let qs: Vec<(&l4s_measure::QueueMeter, l4s_measure::summary::QueueEnd)> = queues
        .iter()
        .zip(&qs)
        .map(|(q, m)| {
            let spec = &sc.links[q.link];
            (
                &m.meter,
                l4s_measure::summary::QueueEnd {
                    name: q.name.clone(),
                    link: q.link,
                    aqm: q.aqm.unwrap_or(spec.aqm.kind()).to_string(),
                    // The rate at the end of the run, as the simulator reports it (a trace's
                    // mean).
                    rate_bps: if spec.trace.is_some() {
                        spec.rate
                    } else {
                        spec.rate_at(Dur(window.end.as_nanos()), Dur(window.end.as_nanos()))
                    }
                    .map_or(0, |r| r.bits_per_sec()),
                    // Counted from the first status after the window opened (within the
                    // status interval of its start).
                    radio: link_stats.get(&q.link).and_then(|end| {
                        l4s_measure::summary::radio_summary(spec, end, &m.link_base.unwrap_or_default())
                    }),
                    queue_protection: el
                        .queue_protection
                        .get(&q.link)
                        .map(|s| l4s_measure::summary::queue_protection_summary(s, name_of)),
                    // The forwarder does not tell flows apart; the routes say for a link's
                    // only queue.
                    data_flows: None,
                },
            )
        })
        .collect();
    let mut summary = l4s_measure::summary::summary(sc, "live", seed, window, &flows, &qs);
    for (name, base, end) in &el.wifi {
        summary.wifi.push(l4s_measure::summary::wifi_summary(
            name,
            end,
            base.as_ref(),
            window.secs(),
        ));
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4s_fwd::lateness::LatenessStats;

    #[test]
    fn steal_from_proc_stat() {
        assert_eq!(
            parse_cpu_line("cpu  2397245 834 182638 1944567 15693 0 22330 6336 0 0"),
            Some((6336, 2397245 + 834 + 182638 + 1944567 + 15693 + 22330 + 6336))
        );
        // Old kernels without the steal column, and other lines, give nothing.
        assert_eq!(parse_cpu_line("cpu  1 2 3 4 5 6 7"), None);
        assert_eq!(parse_cpu_line("cpu0 1 2 3 4 5 6 7 8"), None);
        assert_eq!(parse_cpu_line("cpu  1 2 x 4 5 6 7 8"), None);
    }

    #[test]
    fn testbed_check_flags_more_than_one_late_packet_in_a_thousand() {
        let el = |packets, over_1ms, p999_us, max_us| LatenessStats {
            packets,
            p50_us: 15.0,
            p99_us: 40.0,
            p999_us,
            max_us,
            over_1ms,
            over_1ms_total_ms: over_1ms as f64 * 2.0,
        };
        let clean = testbed_check(
            &[
                el(10_000, 5, 300.0, 2500.0),
                el(0, 0, 0.0, 0.0),
                el(10_000, 5, 200.0, 1800.0),
            ],
            Some(0.0),
        );
        assert_eq!((clean.packets, clean.late_over_1ms), (20_000, 10));
        assert!(!clean.disrupted, "{clean:?}");
        assert_eq!(
            (clean.worst_p99_ms, clean.worst_p999_ms, clean.max_ms),
            (0.04, 0.3, 2.5)
        );
        let bad = testbed_check(&[el(10_000, 30, 2600.0, 3000.0), el(10_000, 0, 100.0, 200.0)], None);
        assert!((bad.late_share - 0.0015).abs() < 1e-12 && bad.disrupted, "{bad:?}");
        assert_eq!(bad.cpu_steal, None);
        assert!(!testbed_check(&[], None).disrupted);
    }
}
