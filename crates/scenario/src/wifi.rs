//! `[[topology.wifi]]`: a Wi-Fi BSS, expanded into one link each way between the access
//! point's node and each station's node, all crossing one shared model
//! ([`l4s_link::wifi::Bss`]).

use crate::error::{ErrCtx, Seg};
use crate::file::{EdcaAcTable, StationTable, WifiTable};
use crate::load::{join, key, parse_aqm, typed, NodeLookup};
use crate::{Link, MediumPort, ScenarioError};
use l4s_aqm::config::{AqmConfig, FifoConfig};
use l4s_core::Dur;
use l4s_link::wifi::{
    mcs_for_signal, AccessCategory, BssConfig, EdcaParams, GuardInterval, MarkingRule, PhyMode, ScanConfig, Scheduler,
    Standard, StationConfig, WifiError,
};
use std::sync::Arc;

/// The presets an `edca` key may name.
const PRESETS: &str = "\"default\", \"ieee\", \"latency-2.5ms\", \"latency-1ms\" or \"latency-0.25ms\"";

/// The longest TXOP limit a scenario may set: 255 × 32 µs.
const MAX_TXOP: Dur = Dur::from_micros(8_160);

/// The parameters of a preset for the access point (`ap`) or the stations.
///
/// * `default`: hostapd's own set at the AP (`tx_queue_data*`), the standard's default
///   EDCA Parameter Set at a station (IEEE 802.11-2020 Table 9-155);
/// * `ieee`: Table 9-155 for both;
/// * `latency-2.5ms`, `latency-1ms`, `latency-0.25ms`: best effort with a fixed CW of 63,
///   AIFSN 1 and a TXOP limit of 2.528, 1 or 0.25 ms (the latency-optimised sets of the
///   WBA/CableLabs L4S Wi-Fi study), the other categories as `ieee`. AIFSN 1 is for an
///   access point only (a station's AIFSN is at least 2, 802.11-2020 9.4.2.28).
fn preset(name: &str, ap: bool) -> Option<[EdcaParams; 4]> {
    let ieee = AccessCategory::ALL.map(EdcaParams::non_ap_sta);
    let latency = |txop_us: u64| {
        let mut p = ieee;
        p[AccessCategory::BestEffort as usize] = EdcaParams {
            aifsn: 1,
            cw_min: 63,
            cw_max: 63,
            txop_limit: Some(Dur::from_micros(txop_us)),
            ..ieee[AccessCategory::BestEffort as usize]
        };
        p
    };
    Some(match name {
        "default" if ap => AccessCategory::ALL.map(EdcaParams::hostapd_ap),
        "default" | "ieee" => ieee,
        "latency-2.5ms" => latency(2_528),
        "latency-1ms" => latency(1_000),
        "latency-0.25ms" => latency(250),
        _ => return None,
    })
}

fn category(name: &str) -> Option<AccessCategory> {
    Some(match name.to_ascii_uppercase().as_str() {
        "BK" => AccessCategory::Background,
        "BE" => AccessCategory::BestEffort,
        "VI" => AccessCategory::Video,
        "VO" => AccessCategory::Voice,
        _ => return None,
    })
}

/// The key in a scenario of a parameter a Wi-Fi check names.
fn key_of(parameter: &str) -> &str {
    match parameter {
        "txop_limit" => "txop",
        "guard_interval" => "guard_interval",
        "bandwidth" => "bandwidth",
        other => other.rsplit('.').next().unwrap_or(other),
    }
}

fn wifi_err(cx: &ErrCtx, at: &[Seg], e: &WifiError) -> ScenarioError {
    cx.at(
        &join(at, &[key(key_of(e.parameter))]),
        format!("expected {}, found {}", e.expected, e.found),
    )
}

/// An `edca` value: a preset name, or a table with an optional `preset` and per-category
/// tables.
fn parse_edca(cx: &ErrCtx, at: &[Seg], value: Option<toml::Value>, ap: bool) -> Result<[EdcaParams; 4], ScenarioError> {
    let who = if ap { "the access point" } else { "a station" };
    let (name, mut table) = match value {
        None => ("default".to_string(), toml::Table::new()),
        Some(toml::Value::String(s)) => (s, toml::Table::new()),
        Some(toml::Value::Table(mut t)) => {
            let name = match t.remove("preset") {
                None => "default".to_string(),
                Some(toml::Value::String(s)) => s,
                Some(_) => {
                    return Err(cx.at(
                        &join(at, &[key("preset")]),
                        format!("expected a preset name: {PRESETS}"),
                    ))
                }
            };
            (name, t)
        }
        Some(_) => {
            return Err(cx.at(
                at,
                format!(
                    "expected a preset name ({PRESETS}) or a table with `preset` and `bk`, `be`, `vi`, `vo` tables"
                ),
            ))
        }
    };
    let name_at = if table.is_empty() {
        at.to_vec()
    } else {
        join(at, &[key("preset")])
    };
    let mut params = preset(&name, ap)
        .ok_or_else(|| cx.at(&name_at, format!("unknown EDCA preset {name:?}: expected {PRESETS}")))?;
    for ac in AccessCategory::ALL {
        let k = ac.to_string().to_ascii_lowercase();
        let Some(v) = table.remove(&k) else { continue };
        let ac_at = join(at, &[key(&k)]);
        let toml::Value::Table(t) = v else {
            return Err(cx.at(
                &ac_at,
                "expected a table such as { aifsn = 2, cw_min = 15, cw_max = 1023, txop = \"2.528ms\" }",
            ));
        };
        let t: EdcaAcTable = typed(cx, &ac_at, t)?;
        let p = &mut params[ac as usize];
        if let Some(a) = t.aifsn {
            p.aifsn = a;
        }
        if let Some(c) = t.cw_min {
            p.cw_min = c;
        }
        if let Some(c) = t.cw_max {
            p.cw_max = c;
        }
        if let Some(d) = t.txop {
            p.txop_limit = (!d.is_zero()).then_some(d);
        }
        if let Some(r) = t.retry_limit {
            p.retry_limit = r;
        }
    }
    if let Some(k) = table.keys().next() {
        return Err(cx.at(
            &join(at, &[key(k)]),
            "unknown key: expected `preset`, `bk`, `be`, `vi` or `vo`",
        ));
    }
    for ac in AccessCategory::ALL {
        let p = &params[ac as usize];
        let ac_at = join(at, &[key(&ac.to_string().to_ascii_lowercase())]);
        let role = if ap {
            l4s_link::wifi::edca::Role::Ap
        } else {
            l4s_link::wifi::edca::Role::NonApSta
        };
        if let Err(e) = p.validate(role) {
            let why = format!("{ac} at {who}: expected {}, found {}", e.expected, e.found);
            let blame = if table_given(&name_at, at) {
                join(&ac_at, &[key(key_of(e.parameter))])
            } else {
                at.to_vec()
            };
            return Err(cx.at(&blame, why));
        }
        if let Some(l) = p.txop_limit.filter(|l| *l > MAX_TXOP) {
            return Err(cx.at(
                &join(&ac_at, &[key("txop")]),
                format!("{ac} at {who}: expected a TXOP limit of at most {MAX_TXOP} (255 x 32 us), found {l}"),
            ));
        }
    }
    Ok(params)
}

/// Whether the `edca` value was a table (its keys can be blamed) rather than a name.
fn table_given(name_at: &[Seg], at: &[Seg]) -> bool {
    name_at.len() != at.len()
}

fn parse_station(cx: &ErrCtx, at: &[Seg], st: &StationTable) -> Result<StationConfig, ScenarioError> {
    let standard = match st.standard.as_deref().unwrap_or("ax") {
        "ac" => Standard::Vht,
        "ax" => Standard::He,
        "be" => Standard::Eht,
        other => {
            return Err(cx.at(
                &join(at, &[key("standard")]),
                format!("unknown standard {other:?}: expected \"ac\", \"ax\" or \"be\""),
            ))
        }
    };
    let bandwidth = st.bandwidth.unwrap_or(80);
    let gi = match st.guard_interval.as_deref().unwrap_or("0.8us") {
        "0.4us" => GuardInterval::Ns400,
        "0.8us" => GuardInterval::Ns800,
        "1.6us" => GuardInterval::Ns1600,
        "3.2us" => GuardInterval::Ns3200,
        other => {
            return Err(cx.at(
                &join(at, &[key("guard_interval")]),
                format!("unknown guard interval {other:?}: expected \"0.4us\", \"0.8us\", \"1.6us\" or \"3.2us\""),
            ))
        }
    };
    let (mcs, mcs_key) = match (st.mcs, st.signal) {
        (Some(_), Some(_)) => {
            return Err(cx.at(
                &join(at, &[key("signal")]),
                "set either `mcs` or `signal` (which picks the MCS), not both",
            ))
        }
        (Some(m), None) => (m, "mcs"),
        (None, Some(s)) => {
            let m = mcs_for_signal(standard, bandwidth, s).ok_or_else(|| {
                cx.at(
                    &join(at, &[key("signal")]),
                    format!(
                        "{s} dBm is below MCS 0's sensitivity at {bandwidth} MHz ({} dBm): the station could not associate",
                        -82.0 + 3.0 * f64::from((bandwidth / 20).max(1)).log2()
                    ),
                )
            })?;
            (m, "signal")
        }
        (None, None) => {
            return Err(cx.at(
                at,
                "a station needs an `mcs` or a `signal` level in dBm (which picks the MCS)",
            ))
        }
    };
    let mode = PhyMode::new(standard, bandwidth, st.nss.unwrap_or(2), mcs, gi).map_err(|e| {
        let k = if e.parameter == "mcs" {
            mcs_key
        } else {
            key_of(e.parameter)
        };
        cx.at(
            &join(at, &[key(k)]),
            format!("expected {}, found {}", e.expected, e.found),
        )
    })?;
    let fer = st.frame_error_rate.unwrap_or(0.0);
    if !(0.0..1.0).contains(&fer) {
        return Err(cx.at(
            &join(at, &[key("frame_error_rate")]),
            format!("expected a probability in [0, 1), found {fer}"),
        ));
    }
    let scan = match &st.scan {
        None => None,
        Some(s) => {
            let scan = ScanConfig {
                period: s.period,
                dwell: s.dwell,
                channels: s.channels.unwrap_or(1),
                home: s.home.unwrap_or(Dur::ZERO),
                offset: s.offset.unwrap_or(Dur::ZERO),
            };
            scan.validate().map_err(|e| {
                let k = e.parameter.rsplit('.').next().unwrap_or(e.parameter);
                cx.at(
                    &join(at, &[key("scan"), key(k)]),
                    format!("expected {}, found {}", e.expected, e.found),
                )
            })?;
            Some(scan)
        }
    };
    Ok(StationConfig {
        name: st.node.clone(),
        mode,
        frame_error_rate: fer,
        scan,
    })
}

/// Add BSS `w` (at key path `at`): one link down and one up per station. `dscps` are the
/// scenario's flows' DSCPs: each category they map to is carried.
pub(crate) fn add_wifi(
    cx: &ErrCtx,
    at: &[Seg],
    w: WifiTable,
    lookup: &NodeLookup,
    links: &mut Vec<Link>,
    dscps: &[u8],
) -> Result<(), ScenarioError> {
    let name = w.name.clone().unwrap_or_else(|| "wifi".into());
    if name.trim().is_empty() || name.contains('/') {
        return Err(cx.at(&join(at, &[key("name")]), "expected a non-empty name without '/'"));
    }
    if links
        .iter()
        .any(|l| l.name == name || l.medium.as_ref().is_some_and(|m| m.name == name))
    {
        return Err(cx.at(
            &join(at, &[key("name")]),
            format!("the name {name:?} is already used by a link or BSS"),
        ));
    }
    let ap = lookup(&join(at, &[key("ap")]), &w.ap)?;
    if w.stations.is_empty() {
        return Err(cx.at(
            &join(at, &[key("stations")]),
            "a BSS needs at least one [[topology.wifi.stations]] entry",
        ));
    }
    let mut stations = Vec::new();
    let mut nodes = vec![ap];
    for (i, st) in w.stations.iter().enumerate() {
        let sp = join(at, &[key("stations"), Seg::Index(i)]);
        let n = lookup(&join(&sp, &[key("node")]), &st.node)?;
        if nodes.contains(&n) {
            return Err(cx.at(
                &join(&sp, &[key("node")]),
                format!(
                    "node {:?} is already in this BSS (as the access point or another station)",
                    st.node
                ),
            ));
        }
        nodes.push(n);
        stations.push(parse_station(cx, &sp, st)?);
    }
    let fifo = AqmConfig::Fifo(FifoConfig::default());
    let ap_aqm = parse_aqm(cx, &join(at, &[key("aqm")]), w.aqm, fifo.clone())?;
    let sta_aqm = parse_aqm(cx, &join(at, &[key("station_aqm")]), w.station_aqm, fifo)?;
    let mut cfg = BssConfig::new(stations, ap_aqm, sta_aqm);
    cfg.ap_edca = parse_edca(cx, &join(at, &[key("edca")]), w.edca, true)?;
    cfg.sta_edca = parse_edca(cx, &join(at, &[key("station_edca")]), w.station_edca, false)?;
    if let Some(c) = &w.l4s_category {
        cfg.l4s_category = Some(category(c).ok_or_else(|| {
            cx.at(
                &join(at, &[key("l4s_category")]),
                format!("unknown access category {c:?}: expected \"BK\", \"BE\", \"VI\" or \"VO\""),
            )
        })?);
    }
    let mut cats: Vec<AccessCategory> = dscps.iter().map(|&d| l4s_link::wifi::ac_of_dscp(d)).collect();
    cats.extend(cfg.l4s_category);
    cats.push(AccessCategory::BestEffort);
    cats.sort();
    cats.dedup();
    cfg.categories = cats;
    cfg.scheduler = match w.scheduler.as_deref() {
        None | Some("round-robin") => Scheduler::RoundRobin,
        Some("airtime") => Scheduler::AirtimeFair,
        Some(other) => {
            return Err(cx.at(
                &join(at, &[key("scheduler")]),
                format!("unknown scheduler {other:?}: expected \"round-robin\" or \"airtime\""),
            ))
        }
    };
    cfg.marking = match w.marking.as_deref() {
        None | Some("dequeue") => MarkingRule::Dequeue,
        Some("pending-dequeue") => MarkingRule::PendingDequeue,
        Some(other) => {
            return Err(cx.at(
                &join(at, &[key("marking")]),
                format!("unknown marking rule {other:?}: expected \"dequeue\" or \"pending-dequeue\""),
            ))
        }
    };
    if let Some(b) = w.max_ampdu_bytes {
        cfg.max_ampdu_bytes = b;
    }
    if let Some(b) = w.ba_window {
        cfg.ba_window = b;
    }
    cfg.validate().map_err(|e| wifi_err(cx, at, &e))?;
    let cfg = Arc::new(cfg);
    let nodes = Arc::new(nodes);
    let owner = links.len();
    for (s, st) in cfg.stations.iter().enumerate() {
        let n = nodes[s + 1];
        for (from, to, port_from, port_to, dir) in [(ap, n, 0, s + 1, "down"), (n, ap, s + 1, 0, "up")] {
            if links.iter().any(|x| x.from == from && x.to == to) {
                return Err(cx.at(
                    &join(at, &[key("stations"), Seg::Index(s)]),
                    format!("there is already a link between {:?} and {:?}", w.ap, st.name),
                ));
            }
            let mut l = Link::wire(
                format!("{name}/{}/{dir}", st.name),
                from,
                to,
                Some(st.mode.data_rate()),
                Dur::ZERO,
                AqmConfig::Fifo(FifoConfig::default()),
            );
            l.bottleneck = links.len() == owner;
            l.medium = Some(MediumPort {
                name: name.clone(),
                owner,
                from: port_from,
                to: port_to,
                nodes: nodes.clone(),
                wifi: (links.len() == owner).then(|| cfg.clone()),
            });
            links.push(l);
        }
    }
    Ok(())
}
