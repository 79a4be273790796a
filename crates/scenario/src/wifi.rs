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
    mcs_for_signal, AccessCategory, Band, BssConfig, ChannelConfig, EdcaParams, GuardInterval, MarkingRule, PhyMode,
    ScanConfig, Scheduler, Standard, StationConfig, StationLink, WifiError, MAX_LINKS,
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
    // The categories given a table of their own (whose keys can be blamed).
    let mut given = [false; 4];
    for ac in AccessCategory::ALL {
        let k = ac.to_string().to_ascii_lowercase();
        let Some(v) = table.remove(&k) else { continue };
        given[ac as usize] = true;
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
            let blame = if given[ac as usize] {
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

/// The PHY keys of one link: each from the link's table if set there, else the station's.
struct PhyKeys<'a> {
    bandwidth: Option<u16>,
    nss: Option<u8>,
    mcs: Option<u8>,
    signal: Option<f64>,
    guard_interval: Option<&'a str>,
    frame_error_rate: Option<f64>,
}

/// A link's PHY mode and frame error rate; `at_of(key)` is where `key` was set.
fn parse_phy(
    cx: &ErrCtx,
    at: &[Seg],
    at_of: &dyn Fn(&str) -> Vec<Seg>,
    standard: Standard,
    k: &PhyKeys<'_>,
) -> Result<(PhyMode, f64), ScenarioError> {
    let bandwidth = k.bandwidth.unwrap_or(80);
    let gi = match k.guard_interval.unwrap_or("0.8us") {
        "0.4us" => GuardInterval::Ns400,
        "0.8us" => GuardInterval::Ns800,
        "1.6us" => GuardInterval::Ns1600,
        "3.2us" => GuardInterval::Ns3200,
        other => {
            return Err(cx.at(
                &at_of("guard_interval"),
                format!("unknown guard interval {other:?}: expected \"0.4us\", \"0.8us\", \"1.6us\" or \"3.2us\""),
            ))
        }
    };
    let (mcs, mcs_key) = match (k.mcs, k.signal) {
        (Some(_), Some(_)) => {
            return Err(cx.at(
                &at_of("signal"),
                "set either `mcs` or `signal` (which picks the MCS), not both",
            ))
        }
        (Some(m), None) => (m, "mcs"),
        (None, Some(s)) if !s.is_finite() => {
            return Err(cx.at(
                &at_of("signal"),
                format!("expected a received signal level in dBm, such as -55, found {s}"),
            ))
        }
        (None, Some(s)) => {
            let m = mcs_for_signal(standard, bandwidth, s).ok_or_else(|| {
                cx.at(
                    &at_of("signal"),
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
    let mode = PhyMode::new(standard, bandwidth, k.nss.unwrap_or(2), mcs, gi).map_err(|e| {
        let k = if e.parameter == "mcs" {
            mcs_key
        } else {
            key_of(e.parameter)
        };
        cx.at(&at_of(k), format!("expected {}, found {}", e.expected, e.found))
    })?;
    let fer = k.frame_error_rate.unwrap_or(0.0);
    if !(0.0..1.0).contains(&fer) {
        return Err(cx.at(
            &at_of("frame_error_rate"),
            format!("expected a probability in [0, 1), found {fer}"),
        ));
    }
    Ok((mode, fer))
}

/// The name of a standard as a scenario spells it.
fn standard_key(s: Standard) -> &'static str {
    match s {
        Standard::Vht => "\"ac\" (802.11ac)",
        Standard::He => "\"ax\" (802.11ax)",
        Standard::Eht => "\"be\" (802.11be)",
    }
}

/// A channel's band: "2.4", "5" or "6".
fn parse_band(cx: &ErrCtx, at: &[Seg], band: &str) -> Result<Band, ScenarioError> {
    match band {
        "2.4" => Ok(Band::B2g4),
        "5" => Ok(Band::B5),
        "6" => Ok(Band::B6),
        other => Err(cx.at(
            at,
            format!("unknown band {other:?}: expected \"2.4\", \"5\" or \"6\" (GHz)"),
        )),
    }
}

fn parse_station(
    cx: &ErrCtx,
    at: &[Seg],
    st: &StationTable,
    channels: &[ChannelConfig],
) -> Result<StationConfig, ScenarioError> {
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
    let names = || {
        channels
            .iter()
            .map(|c| format!("{:?}", c.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let find = |at: &[Seg], name: &str| {
        channels.iter().position(|c| c.name == name).ok_or_else(|| {
            cx.at(
                at,
                format!(
                    "the BSS has no channel {name:?}: expected one of its `channels`: {}",
                    names()
                ),
            )
        })
    };
    let station_at = |k: &str| join(at, &[key(k)]);
    let station_keys = PhyKeys {
        bandwidth: st.bandwidth,
        nss: st.nss,
        mcs: st.mcs,
        signal: st.signal,
        guard_interval: st.guard_interval.as_deref(),
        frame_error_rate: st.frame_error_rate,
    };
    // (channel, its key path, the link's key path, mode, frame error rate, where `bandwidth` was set)
    let mut links = Vec::new();
    match &st.links {
        None => {
            let ch = match &st.channel {
                None => 0,
                Some(name) => find(&station_at("channel"), name)?,
            };
            let (mode, fer) = parse_phy(cx, at, &station_at, standard, &station_keys)?;
            links.push((ch, station_at("channel"), mode, fer, station_at("bandwidth")));
        }
        Some(ls) => {
            if st.channel.is_some() {
                return Err(cx.at(
                    &station_at("channel"),
                    "set either `channel` (a single-link station) or `links`, not both",
                ));
            }
            if ls.is_empty() {
                return Err(cx.at(
                    &station_at("links"),
                    "expected at least one link, such as [{ channel = \"6g\", mcs = 9 }]",
                ));
            }
            for (i, l) in ls.iter().enumerate() {
                let lat = join(at, &[key("links"), Seg::Index(i)]);
                let ch = find(&join(&lat, &[key("channel")]), &l.channel)?;
                if links
                    .iter()
                    .any(|x: &(usize, Vec<Seg>, PhyMode, f64, Vec<Seg>)| x.0 == ch)
                {
                    return Err(cx.at(
                        &join(&lat, &[key("channel")]),
                        format!(
                            "a second link on channel {:?}: expected one link per channel",
                            l.channel
                        ),
                    ));
                }
                let keys = PhyKeys {
                    bandwidth: l.bandwidth.or(st.bandwidth),
                    nss: l.nss.or(st.nss),
                    mcs: if l.mcs.is_some() || l.signal.is_some() {
                        l.mcs
                    } else {
                        st.mcs
                    },
                    signal: if l.mcs.is_some() || l.signal.is_some() {
                        l.signal
                    } else {
                        st.signal
                    },
                    guard_interval: l.guard_interval.as_deref().or(st.guard_interval.as_deref()),
                    frame_error_rate: l.frame_error_rate.or(st.frame_error_rate),
                };
                let set_on_link = |k: &str| match k {
                    "bandwidth" => l.bandwidth.is_some(),
                    "nss" => l.nss.is_some(),
                    "mcs" | "signal" => l.mcs.is_some() || l.signal.is_some(),
                    "guard_interval" => l.guard_interval.is_some(),
                    "frame_error_rate" => l.frame_error_rate.is_some(),
                    _ => false,
                };
                let at_of = |k: &str| {
                    if set_on_link(k) {
                        join(&lat, &[key(k)])
                    } else {
                        station_at(k)
                    }
                };
                let (mode, fer) = parse_phy(cx, &lat, &at_of, standard, &keys)?;
                links.push((ch, join(&lat, &[key("channel")]), mode, fer, at_of("bandwidth")));
            }
        }
    }
    // The standard and the bands: 802.11ac is 5 GHz only (IEEE 802.11-2020 21.1.1), the
    // 6 GHz band takes HE (802.11ax-2021 26.17) and EHT, 320 MHz is EHT in 6 GHz only
    // (802.11be 36.1.1), 2.4 GHz channels are at most 40 MHz; multi-link operation is an
    // EHT MLD's (802.11be 35.3).
    for (ch, ch_at, mode, _, bw_at) in &links {
        let band = channels[*ch].band;
        if !band.carries(standard) {
            return Err(cx.at(
                ch_at,
                format!(
                    "channel {:?} is in the {band} band, which a {} station lacks: expected a 5 GHz channel, or standard \"ax\" or \"be\"",
                    channels[*ch].name,
                    standard_key(standard)
                ),
            ));
        }
        let max = band.max_bandwidth(standard);
        if mode.bandwidth_mhz() > max {
            return Err(cx.at(
                bw_at,
                format!(
                    "expected at most {max} MHz for {} in the {band} band of channel {:?}{}, found {}",
                    standard_key(standard),
                    channels[*ch].name,
                    if band != Band::B6 && standard == Standard::Eht {
                        " (320 MHz is 6 GHz only)"
                    } else {
                        ""
                    },
                    mode.bandwidth_mhz()
                ),
            ));
        }
    }
    if links.len() > 1 && standard != Standard::Eht {
        return Err(cx.at(
            &station_at("links"),
            format!(
                "multi-link operation is 802.11be's: expected standard = \"be\" for {} links, found {}",
                links.len(),
                standard_key(standard)
            ),
        ));
    }
    let tid_to_link = match &st.tid_to_link {
        None => None,
        Some(map) => {
            let map_at = station_at("tid_to_link");
            if links.len() < 2 {
                return Err(cx.at(
                    &map_at,
                    "a TID-to-link mapping needs a multi-link station: expected `links` on two or more channels",
                ));
            }
            let own: u16 = links.iter().map(|l| 1u16 << l.0).fold(0, |a, b| a | b);
            let mut masks = [own; 4];
            for (k, chans) in map {
                let kat = join(&map_at, &[key(k)]);
                let ac = category(k).ok_or_else(|| {
                    cx.at(
                        &kat,
                        format!("unknown access category {k:?}: expected \"BK\", \"BE\", \"VI\" or \"VO\""),
                    )
                })?;
                if chans.is_empty() {
                    return Err(cx.at(&kat, "expected one or more of the station's channels, found none"));
                }
                let mut m = 0u16;
                for name in chans {
                    let c = find(&kat, name)?;
                    if own & (1 << c) == 0 {
                        return Err(cx.at(
                            &kat,
                            format!("the station has no link on channel {name:?}: expected channels of its `links`"),
                        ));
                    }
                    m |= 1 << c;
                }
                masks[ac as usize] = m;
            }
            Some(masks)
        }
    };
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
        links: links
            .into_iter()
            .map(|(channel, _, mode, frame_error_rate, _)| StationLink {
                channel,
                mode,
                frame_error_rate,
            })
            .collect(),
        scan,
        tid_to_link,
    })
}

/// The BSS's channels: `channels`, or one 5 GHz channel.
fn parse_channels(cx: &ErrCtx, at: &[Seg], w: &WifiTable) -> Result<Vec<ChannelConfig>, ScenarioError> {
    let Some(list) = &w.channels else {
        return Ok(vec![ChannelConfig::default()]);
    };
    let cat = join(at, &[key("channels")]);
    if list.is_empty() || list.len() > MAX_LINKS {
        return Err(cx.at(
            &cat,
            format!(
                "expected 1 to {MAX_LINKS} channels, such as [{{ name = \"5g\", band = \"5\" }}], found {}",
                list.len()
            ),
        ));
    }
    let mut out: Vec<ChannelConfig> = Vec::new();
    for (i, c) in list.iter().enumerate() {
        let cat = join(&cat, &[Seg::Index(i)]);
        if c.name.trim().is_empty() || out.iter().any(|o| o.name == c.name) {
            return Err(cx.at(
                &join(&cat, &[key("name")]),
                format!("expected a non-empty name used by one channel only, found {:?}", c.name),
            ));
        }
        out.push(ChannelConfig {
            name: c.name.clone(),
            band: parse_band(cx, &join(&cat, &[key("band")]), &c.band)?,
        });
    }
    Ok(out)
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
    let channels = parse_channels(cx, at, &w)?;
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
        stations.push(parse_station(cx, &sp, st, &channels)?);
    }
    let fifo = AqmConfig::Fifo(FifoConfig::default());
    let ap_aqm = parse_aqm(cx, &join(at, &[key("aqm")]), w.aqm, fifo.clone())?;
    let sta_aqm = parse_aqm(cx, &join(at, &[key("station_aqm")]), w.station_aqm, fifo)?;
    let mut cfg = BssConfig::new(stations, ap_aqm, sta_aqm);
    cfg.channels = channels;
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
        Some("enqueue") => MarkingRule::Enqueue,
        Some(other) => {
            return Err(cx.at(
                &join(at, &[key("marking")]),
                format!("unknown marking rule {other:?}: expected \"dequeue\", \"pending-dequeue\" or \"enqueue\""),
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
                Some(st.data_rate()),
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
                cell: None,
            });
            links.push(l);
        }
    }
    Ok(())
}
