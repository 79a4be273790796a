//! A scenario as it was parsed, in words: what `l4s check --show` prints, so that a person
//! sees what will run (rates in bit/s, durations, the expanded topology, each flow's route)
//! rather than what they meant to write.

use crate::{FlowKind, Link, Scenario};
use l4s_aqm::config::AqmConfig;
use std::fmt::Write;

/// The parsed scenario, one line per node list, link and flow.
pub fn describe(sc: &Scenario) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scenario {:?}: {} simulated, statistics from {}, seed {}",
        sc.name, sc.duration, sc.warmup, sc.seed
    );
    let names: Vec<&str> = sc.nodes.iter().map(|n| n.name.as_str()).collect();
    let _ = writeln!(out, "nodes ({}): {}", names.len(), names.join(", "));
    let _ = writeln!(out, "links ({}), one direction each:", sc.links.len());
    for l in &sc.links {
        let _ = writeln!(out, "  {}", link(sc, l));
    }
    let _ = writeln!(out, "flows ({}):", sc.flows.len());
    for f in &sc.flows {
        let what = match &f.kind {
            FlowKind::Tcp { cc, .. } => format!("tcp {cc}"),
            FlowKind::UdpPrague { .. } => "udp-prague".to_string(),
            FlowKind::Media { params } => format!("media {}", params.controller.name()),
            FlowKind::App { cfg } => format!("{} over {}", cfg.kind.name(), cfg.cc),
            FlowKind::Probe { sender, profile } => format!(
                "{} {} packets/s of {} B",
                profile.as_deref().map_or("probe", |_| "cbr"),
                sender.pps,
                sender.size
            ),
        };
        let path: Vec<&str> = std::iter::once(f.src)
            .chain(sc.routes.path(f.src, f.dst).map(|l| sc.links[l].to))
            .map(|n| sc.nodes[n].name.as_str())
            .collect();
        let stop = f.stop.map(|s| format!(" to {s}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "  {}: {what}, {}, from {}{stop}, base RTT {}, route {}",
            f.name,
            f.nominal_ecn.name(),
            f.start,
            sc.base_rtt(f.src, f.dst),
            path.join(" -> ")
        );
    }
    out
}

/// One link direction: its ends, capacity, delay, queue and what else it carries.
fn link(sc: &Scenario, l: &Link) -> String {
    let mut s = format!("{}: {} -> {}, ", l.name, sc.nodes[l.from].name, sc.nodes[l.to].name);
    match (l.rate, &l.trace, &l.capacity) {
        (None, _, _) => s += "unlimited (a delay line)",
        (Some(r), None, _) => {
            let _ = write!(s, "{} bit/s", r.bits_per_sec());
            if !l.schedule.is_empty() {
                let _ = write!(s, " then {}", l.schedule);
            }
        }
        (Some(r), Some(_), Some(_)) => {
            let _ = write!(
                s,
                "a capacity process drawn for the run (mean {} bit/s)",
                r.bits_per_sec()
            );
        }
        (Some(r), Some(t), None) => {
            let _ = write!(
                s,
                "a trace of {} opportunities over {} (mean {} bit/s)",
                t.times_ms().len(),
                t.period(),
                r.bits_per_sec()
            );
        }
    }
    let _ = write!(s, ", delay {}", l.delay);
    // A Wi-Fi station's links queue in the BSS: at the AP (from port 0) or the station.
    let bss = l.medium.as_ref().and_then(|m| {
        let cfg = sc.links.get(m.owner)?.medium.as_ref()?.wifi.as_deref()?;
        Some(if m.from == 0 { &cfg.ap_aqm } else { &cfg.sta_aqm })
    });
    if l.rate.is_some() {
        let _ = write!(s, ", queue {}", aqm(bss.unwrap_or(&l.aqm)));
    }
    if let Some((ran, dir)) = &l.ran {
        let tdd: String = ran
            .tdd
            .iter()
            .map(|k| match k {
                l4s_link::SlotKind::Down => 'D',
                l4s_link::SlotKind::Special => 'S',
                l4s_link::SlotKind::Up => 'U',
            })
            .collect();
        let _ = write!(
            s,
            ", cellular {} (slot {}, {}",
            match dir {
                l4s_link::RanDirection::Downlink => "downlink",
                l4s_link::RanDirection::Uplink => "uplink",
            },
            ran.slot,
            if tdd.is_empty() {
                "FDD".to_string()
            } else {
                format!("TDD {tdd}")
            }
        );
        if let Some(h) = &ran.harq {
            let _ = write!(s, ", HARQ BLER {} round trip {}", h.bler, h.rtt);
        }
        if *dir == l4s_link::RanDirection::Uplink {
            let u = &ran.uplink;
            let _ = write!(
                s,
                ", SR every {}, grant {} later, K2 {}",
                u.sr_period, u.grant_delay, u.k2
            );
            if let Some(p) = u.configured_grant {
                let _ = write!(s, ", configured grant every {p}");
            }
            if let Some(b) = u.sr_grant {
                let _ = write!(s, ", {b}-byte grant after an SR");
            }
        }
        if let (Some(d), l4s_link::RanDirection::Downlink) = (&ran.drx, dir) {
            let _ = write!(
                s,
                ", DRX every {} on for {} from {}, inactivity {}",
                d.cycle, d.on_duration, d.offset, d.inactivity
            );
            if let Some((c, k)) = d.short {
                let _ = write!(s, ", short cycle {c} for {k} cycles");
            }
        }
        if ran.share < 1.0 {
            let _ = write!(s, ", share {}", ran.share);
        }
        s += ")";
    }
    if let Some(h) = &l.harq {
        let _ = write!(s, ", HARQ BLER {} round trip {}", h.bler, h.rtt);
    }
    if let Some(crate::LossModel::GilbertElliott(g)) = &l.loss {
        let _ = write!(s, ", Gilbert-Elliott loss {:.4} in the long run", g.stationary_loss());
    }
    if let Some(f) = &l.fault {
        let _ = write!(s, ", fault {:?} from {}", f.kind, f.start);
    }
    if let Some((m, c)) = l.medium.as_ref().and_then(|m| Some((m, m.cell.as_deref()?))) {
        let _ = write!(
            s,
            ", in cell {:?} of {} UEs ({})",
            m.name,
            c.ues.len(),
            match c.scheduler {
                l4s_link::CellScheduler::RoundRobin => "round robin".to_string(),
                l4s_link::CellScheduler::ProportionalFair { window } => format!("proportional fair over {window}"),
            }
        );
        // A UE's uplink: its configured grant.
        let ue = m.from.checked_sub(1).and_then(|u| c.ues.get(u));
        if let Some(cg) = ue.and_then(|u| u.configured_grant) {
            let _ = write!(s, ", configured grant of {} of a slot every {}", cg.share, cg.period);
            if !cg.offset.is_zero() {
                let _ = write!(s, " from {} after the first uplink slot", cg.offset);
            }
        }
    }
    if l.bottleneck {
        s += " [bottleneck]";
    }
    s
}

/// A queue discipline: its kind and the parameters that differ from the kind's defaults.
fn aqm(a: &AqmConfig) -> String {
    let (Ok(toml::Value::Table(mine)), Some(Ok(toml::Value::Table(def)))) = (
        toml::Value::try_from(a),
        AqmConfig::default_for_kind(a.kind()).map(toml::Value::try_from),
    ) else {
        return a.kind().to_string();
    };
    let changed: Vec<String> = mine
        .iter()
        .filter(|(k, v)| k.as_str() != "kind" && def.get(k.as_str()) != Some(*v))
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    if changed.is_empty() {
        format!("{} (defaults)", a.kind())
    } else {
        format!("{} {{ {} }}", a.kind(), changed.join(", "))
    }
}
