//! Plain-text tables for the terminal.

use crate::summary::Summary;
use std::fmt::Write;

fn rate(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{:.2} Gbit/s", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.2} Mbit/s", bps / 1e6)
    } else {
        format!("{:.1} kbit/s", bps / 1e3)
    }
}

fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn pct(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x < 0.001 {
        format!("{:.3}%", x * 100.0)
    } else {
        format!("{:.2}%", x * 100.0)
    }
}

/// Render rows as an aligned table (first row is the header).
pub fn render(rows: &[Vec<String>]) -> String {
    let ncol = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    let mut width = vec![0usize; ncol];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for (ri, r) in rows.iter().enumerate() {
        for (i, c) in r.iter().enumerate() {
            let pad = width[i] - c.chars().count();
            if i == 0 {
                let _ = write!(out, "{c}{}", " ".repeat(pad));
            } else {
                let _ = write!(out, "  {}{c}", " ".repeat(pad));
            }
        }
        out.push('\n');
        if ri == 0 {
            let total: usize = width.iter().sum::<usize>() + 2 * ncol.saturating_sub(1);
            out.push_str(&"-".repeat(total));
            out.push('\n');
        }
    }
    out
}

/// The flow and queue tables printed after a run.
pub fn summary_tables(s: &Summary) -> String {
    let mut out = String::new();
    let (from, to) = s.stats_window();
    let _ = writeln!(
        out,
        "{} — {} backend, seed {}, statistics over {from:.1}..{to:.1} s{}\n",
        s.scenario.name,
        s.scenario.backend,
        s.scenario.seed,
        if s.complete { "" } else { " (stopped early)" }
    );
    let budgets = s.flows.iter().any(|f| f.latency_budget_ms.is_some());
    let mut head: Vec<String> = [
        "flow",
        "class",
        "cc",
        "ecn",
        "throughput",
        "owd p50",
        "p99",
        "p99.9 ms",
        "loss",
        "CE",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if budgets {
        head.push("late+lost".into());
    }
    let mut rows = vec![head];
    for f in &s.flows {
        let mut row = vec![
            f.name.clone(),
            f.class.clone(),
            f.cc.clone(),
            f.ecn.clone(),
            rate(f.throughput_bps),
            ms(f.owd_ms.p50),
            ms(f.owd_ms.p99),
            ms(f.owd_ms.p999),
            pct(f.loss_fraction),
            pct(f.ce_fraction),
        ];
        if budgets {
            row.push(match f.latency_budget_ms {
                Some(b) => format!("{} (>{b} ms)", pct(f.effective_loss_fraction)),
                None => "-".into(),
            });
        }
        rows.push(row);
    }
    out.push_str(&render(&rows));
    out.push('\n');
    let mut rows = vec![
        ["queue", "aqm", "sub", "sojourn p50", "p99 ms", "marks", "drops", "util"]
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>(),
    ];
    for q in &s.queues {
        let multi = q.subqueues.len() > 1;
        rows.push(vec![
            q.name.clone(),
            q.aqm.clone(),
            if multi { "all".into() } else { "-".into() },
            ms(q.sojourn_ms.p50),
            ms(q.sojourn_ms.p99),
            q.marks.to_string(),
            q.drops.to_string(),
            pct(q.utilization),
        ]);
        if multi {
            for (id, sq) in &q.subqueues {
                rows.push(vec![
                    String::new(),
                    String::new(),
                    id.clone(),
                    ms(sq.sojourn_ms.p50),
                    ms(sq.sojourn_ms.p99),
                    sq.marks.to_string(),
                    sq.drops.to_string(),
                    String::new(),
                ]);
            }
        }
    }
    out.push_str(&render(&rows));
    for q in &s.queues {
        if let Some(r) = &q.radio {
            out.push_str(&radio_lines(&q.name, r));
        }
    }
    for q in &s.queues {
        if let Some(qp) = &q.queue_protection {
            out.push_str(&queue_protection_lines(&q.name, qp));
        }
    }
    for w in &s.wifi {
        out.push_str(&wifi_lines(w));
    }
    out
}

/// A Wi-Fi BSS: per station and direction its airtime, aggregation, retries and MAC
/// access delay; then the contention of each EDCAF that won a TXOP.
fn wifi_lines(w: &crate::summary::WifiSummary) -> String {
    let mut out = format!("\nWi-Fi {}:\n", w.name);
    let mut rows = vec![[
        "station",
        "dir",
        "PHY Mbit/s",
        "airtime",
        "MPDUs/A-MPDU",
        "retries",
        "drops",
        "access p50",
        "p99 ms",
        "off-channel s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect::<Vec<_>>()];
    let opt = |v: Option<f64>| v.map_or("-".to_string(), ms);
    for st in &w.stations {
        for (dir, d) in [("down", &st.down), ("up", &st.up)] {
            let first = dir == "down";
            rows.push(vec![
                if first { st.station.clone() } else { String::new() },
                dir.into(),
                if first {
                    format!("{:.1}", st.phy_rate_bps as f64 / 1e6)
                } else {
                    String::new()
                },
                pct(d.airtime_share),
                format!("{:.1}", d.mpdus_per_ampdu),
                d.retries.to_string(),
                d.retry_drops.to_string(),
                opt(d.access_delay_p50_ms),
                opt(d.access_delay_p99_ms),
                if first {
                    format!("{:.2}", st.off_channel_s)
                } else {
                    String::new()
                },
            ]);
        }
    }
    out.push_str(&render(&rows));
    // A BSS of several channels: how each station's frames split across its links.
    for st in w.stations.iter().filter(|st| !st.links.is_empty()) {
        let links: Vec<String> = st
            .links
            .iter()
            .map(|l| {
                format!(
                    "{} ({}, {:.1} Mbit/s) down {} in {} PPDUs / {} MPDUs, up {} in {} / {}",
                    l.channel,
                    l.band,
                    l.phy_rate_bps as f64 / 1e6,
                    pct(l.down.airtime_share),
                    l.down.ppdus,
                    l.down.mpdus,
                    pct(l.up.airtime_share),
                    l.up.ppdus,
                    l.up.mpdus
                )
            })
            .collect();
        let _ = writeln!(out, "  {} links: {}", st.station, links.join("; "));
    }
    let busy = w.edcaf_lines();
    if !busy.is_empty() {
        let _ = writeln!(out, "  {busy}");
    }
    out
}

/// What a cellular link's direction, a DOCSIS upstream or a wire with HARQ did: its blocks
/// (grants, for a DOCSIS upstream) and how full they went, HARQ, and the uplink's
/// requests, grants and grant delays.
fn radio_lines(queue: &str, r: &crate::summary::RadioSummary) -> String {
    let mut out = format!("\n{} of {queue}: ", r.direction);
    match (&r.uplink, r.direction == "upstream") {
        // A DOCSIS upstream's blocks are its grants.
        (Some(u), true) => {
            let _ = write!(out, "{} grants", u.grants);
            if u.pgs_grants > 0 {
                let _ = write!(out, " ({} PGS)", u.pgs_grants);
            }
            let _ = write!(
                out,
                ", {} found nothing to send, {} of their bytes used",
                u.grants_unused,
                pct(r.block_fill)
            );
        }
        (_, false) if r.direction == "downstream" => {
            let _ = write!(
                out,
                "{} OFDM symbols carried its data, {} of their bytes used",
                r.blocks,
                pct(r.block_fill)
            );
        }
        _ => {
            let _ = write!(out, "{} blocks, {} of their bytes used", r.blocks, pct(r.block_fill));
        }
    }
    if let Some(s) = r.shaper_limited_share {
        let unit = if r.direction == "downstream" { "symbols" } else { "MAPs" };
        let _ = write!(
            out,
            "; the shaper held data back in {} of the {unit} with data waiting",
            pct(s)
        );
    }
    if r.harq_retransmissions > 0 {
        let _ = write!(out, ", {} HARQ retransmissions", r.harq_retransmissions);
    }
    out.push('\n');
    if let Some(u) = &r.uplink {
        let _ = write!(out, "  {} requests", u.scheduling_requests);
        if r.direction != "upstream" {
            let _ = write!(out, "; {} grants, {} found nothing to send", u.grants, u.grants_unused);
        }
        if u.configured_grants_used > 0 {
            let _ = write!(out, "; {} configured grants used", u.configured_grants_used);
        }
        out.push('\n');
        if let (Some(mean), Some(p50), Some(p99)) = (u.grant_delay_mean_ms, u.grant_delay_p50_ms, u.grant_delay_p99_ms)
        {
            let _ = writeln!(
                out,
                "  grant delay ({} waits from data to its first grant): mean {} ms, p50 ≤ {} ms, p99 ≤ {} ms",
                u.grant_delays,
                ms(mean),
                p50,
                p99
            );
        }
    }
    out
}

/// Queue Protection's sanctions on one queue, a line per sanctioned flow (the five most
/// sanctioned; the summary holds them all).
fn queue_protection_lines(queue: &str, qp: &crate::summary::QueueProtectionSummary) -> String {
    let mut out = format!(
        "\nqueue protection on {queue} (CRITICALqL {} ms): {} of {} L packets sanctioned\n",
        ms(qp.critical_ql_ms),
        qp.sanctioned_packets,
        qp.checked_packets
    );
    for f in qp.flows.iter().take(5) {
        out.push_str(&format!(
            "  {}: {} packets, {:.2}..{:.2} s, score up to {} ms at L delay up to {} ms\n",
            f.flow,
            f.packets,
            f.first_s,
            f.last_s,
            ms(f.max_score_ms),
            ms(f.max_qdelay_ms)
        ));
    }
    if qp.flows.len() > 5 {
        out.push_str(&format!("  and {} more flows (summary.json)\n", qp.flows.len() - 5));
    }
    out
}
