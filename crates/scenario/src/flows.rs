//! Building the typed endpoint configurations of each flow type.

use crate::error::{ErrCtx, ScenarioError, Seg};
use crate::load::typed;
use crate::{FlowKind, TcpEcn};
use l4s_cc::cubic::Hystart;
use l4s_cc::factory::CcParams;
use l4s_core::{Dur, Ecn};
use serde::Deserialize;

fn key(k: &str) -> Seg {
    Seg::Key(k.to_string())
}

fn join(base: &[Seg], k: &str) -> Vec<Seg> {
    let mut v = base.to_vec();
    v.push(key(k));
    v
}

/// `cc_params` as written in a scenario.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CcParamsFile {
    /// DCTCP: mark data ECT(1) (L4S data-centre use) instead of ECT(0).
    ect1: Option<bool>,
    /// RFC 8511 ABE for Reno/CUBIC.
    abe: Option<bool>,
    /// CUBIC: Linux β = 717/1024.
    linux_beta: Option<bool>,
    /// CUBIC: how slow start may end before the first loss (`true` or "linux": Linux's
    /// HyStart; "rfc9406": HyStart++; `false`: only at a loss).
    hystart: Option<toml::Value>,
    /// Prague: v0.6 behaviour.
    v06: Option<bool>,
    /// Prague: rate-based mode at small windows (default true).
    rate_mode: Option<bool>,
    /// Initial window in segments (RFC 6928: 10).
    initial_cwnd: Option<u32>,
}

/// `cc_params` of a flow whose controller is `cc`, with the path MSS `mss`.
fn cc_params_of(
    cx: &ErrCtx,
    fp: &[Seg],
    cc: &str,
    mss: u32,
    cc_params: Option<toml::Table>,
) -> Result<CcParams, ScenarioError> {
    let file: CcParamsFile = match cc_params {
        Some(t) => typed(cx, &join(fp, "cc_params"), t)?,
        None => CcParamsFile::default(),
    };
    let mut p = CcParams {
        mss,
        ..CcParams::default()
    };
    if let Some(n) = file.initial_cwnd {
        if n == 0 {
            return Err(cx.at(
                &[fp, &[key("cc_params"), key("initial_cwnd")]].concat(),
                "expected at least 1 segment",
            ));
        }
        p.initial_cwnd_pkts = n;
    }
    let only = |k: &str, set: bool, ccs: &[&str]| -> Result<(), ScenarioError> {
        if set && !ccs.contains(&cc) {
            return Err(cx.at(
                &[fp, &[key("cc_params"), key(k)]].concat(),
                format!("`{k}` applies to {} only", ccs.join(" and ")),
            ));
        }
        Ok(())
    };
    only("ect1", file.ect1.is_some(), &["dctcp"])?;
    only("abe", file.abe.is_some(), &["reno", "cubic"])?;
    only("linux_beta", file.linux_beta.is_some(), &["cubic"])?;
    only("hystart", file.hystart.is_some(), &["cubic"])?;
    only("v06", file.v06.is_some(), &["prague"])?;
    only("rate_mode", file.rate_mode.is_some(), &["prague"])?;
    p.ect1_for_dctcp = file.ect1.unwrap_or(false);
    p.abe = file.abe.unwrap_or(false);
    p.cubic_linux_beta = file.linux_beta.unwrap_or(false);
    // `true` is Linux's HyStart, as `hystart=1` of Linux's `tcp_cubic` module.
    p.hystart = match &file.hystart {
        None => Hystart::Off,
        Some(toml::Value::Boolean(false)) => Hystart::Off,
        Some(toml::Value::Boolean(true)) => Hystart::Linux,
        Some(toml::Value::String(n)) if n == "linux" => Hystart::Linux,
        Some(toml::Value::String(n)) if n == "rfc9406" => Hystart::Rfc9406,
        Some(v) => {
            return Err(cx.at(
                &[fp, &[key("cc_params"), key("hystart")]].concat(),
                format!("expected true, false, \"linux\" or \"rfc9406\", not {v}"),
            ))
        }
    };
    p.prague_v06 = file.v06.unwrap_or(false);
    p.prague_rate_mode = file.rate_mode.unwrap_or(true);
    Ok(p)
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn tcp(
    cx: &ErrCtx,
    fp: &[Seg],
    cc: String,
    ecn: TcpEcn,
    bytes: Option<u64>,
    cc_params: Option<toml::Table>,
    sender: Option<toml::Table>,
    receiver: Option<toml::Table>,
) -> Result<(FlowKind, Ecn), ScenarioError> {
    let sender: l4s_transport::tcp::TcpConfig = match sender {
        Some(t) => typed(cx, &join(fp, "sender"), t)?,
        None => Default::default(),
    };
    let mut receiver: l4s_transport::tcp::TcpReceiverConfig = match receiver {
        Some(t) => typed(cx, &join(fp, "receiver"), t)?,
        None => Default::default(),
    };
    check_tcp(cx, fp, &sender, &receiver)?;
    let mut p = cc_params_of(cx, fp, &cc, sender.mss, cc_params)?;
    let ecn_at = join(fp, "ecn");
    let nominal = match cc.as_str() {
        "prague" | "dctcp" => {
            match ecn {
                TcpEcn::Auto | TcpEcn::Accurate => {}
                TcpEcn::Classic => {
                    return Err(cx.at(&ecn_at, format!("{cc} needs Accurate ECN feedback: use ecn = \"accecn\" (or \"off\" for a receiver without AccECN)")));
                }
                // The receiver does not offer AccECN: the sender falls back (Prague: to
                // Reno behaviour and Not-ECT, as `tcp_prague.c` `prague_init` → `prague-reno`).
                TcpEcn::Off => receiver.accecn = false,
            }
            if ecn == TcpEcn::Off {
                Ecn::NotEct
            } else if cc == "prague" || p.ect1_for_dctcp {
                Ecn::Ect1
            } else {
                Ecn::Ect0
            }
        }
        _ => match ecn {
            TcpEcn::Auto | TcpEcn::Off => {
                p.classic_ecn = false;
                Ecn::NotEct
            }
            TcpEcn::Classic => {
                p.classic_ecn = true;
                Ecn::Ect0
            }
            TcpEcn::Accurate => {
                return Err(cx.at(
                    &ecn_at,
                    format!("{cc} responds to classic ECN only: use ecn = \"classic\" or \"off\""),
                ));
            }
        },
    };
    Ok((
        FlowKind::Tcp {
            cc,
            ecn,
            bytes,
            sender,
            receiver,
            cc_params: p,
        },
        nominal,
    ))
}

/// Impossible TCP endpoint settings are refused before anything runs.
fn check_tcp(
    cx: &ErrCtx,
    fp: &[Seg],
    s: &l4s_transport::tcp::TcpConfig,
    r: &l4s_transport::tcp::TcpReceiverConfig,
) -> Result<(), ScenarioError> {
    let snd = |k: &str| [fp, &[key("sender"), key(k)]].concat();
    let rcv = |k: &str| [fp, &[key("receiver"), key(k)]].concat();
    if !(64..=8948).contains(&s.mss) {
        return Err(cx.at(
            &snd("mss"),
            format!(
                "expected a segment size from 64 to 8948 bytes (a frame of at most 9014 B), found {}",
                s.mss
            ),
        ));
    }
    for (k, d) in [
        ("min_rto", s.min_rto),
        ("max_rto", s.max_rto),
        ("initial_rto", s.initial_rto),
        ("syn_rto", s.syn_rto),
    ] {
        if d < Dur::from_micros(100) {
            return Err(cx.at(&snd(k), format!("expected at least 100us, found {d}")));
        }
    }
    if s.min_rto > s.max_rto {
        return Err(cx.at(
            &snd("min_rto"),
            format!("min_rto ({}) is above max_rto ({})", s.min_rto, s.max_rto),
        ));
    }
    if s.pacing_burst_pkts == 0 {
        return Err(cx.at(&snd("pacing_burst_pkts"), "expected at least 1 packet"));
    }
    if r.ack_every == 0 {
        return Err(cx.at(&rcv("ack_every"), "expected at least 1 (ACK every segment)"));
    }
    if r.rwnd < s.mss as u64 {
        return Err(cx.at(
            &rcv("rwnd"),
            format!(
                "expected a receive window of at least one segment ({} B), found {}",
                s.mss, r.rwnd
            ),
        ));
    }
    if !(1..=7).contains(&r.accecn_ce_ack_n) {
        return Err(cx.at(
            &rcv("accecn_ce_ack_n"),
            format!(
                "expected 1 to 7 CE marks (RFC 9768 §3.2.2.5.1), found {}",
                r.accecn_ce_ack_n
            ),
        ));
    }
    Ok(())
}

pub(crate) fn udp_prague(
    cx: &ErrCtx,
    fp: &[Seg],
    sender: Option<toml::Table>,
    receiver: Option<toml::Table>,
) -> Result<(FlowKind, Ecn), ScenarioError> {
    let sender: l4s_transport::udp_prague::UdpPragueConfig = match sender {
        Some(t) => typed(cx, &join(fp, "sender"), t)?,
        None => Default::default(),
    };
    let receiver: l4s_transport::udp_prague::UdpPragueReceiverConfig = match receiver {
        Some(t) => typed(cx, &join(fp, "receiver"), t)?,
        None => Default::default(),
    };
    let s = [fp, &[key("sender")]].concat();
    let at = |k: &str| join(&s, k);
    if !(150..=8972).contains(&sender.max_packet_size) {
        return Err(cx.at(
            &at("max_packet_size"),
            format!(
                "expected a UDP payload from 150 to 8972 bytes, found {}",
                sender.max_packet_size
            ),
        ));
    }
    for (k, r) in [
        ("init_rate", sender.init_rate),
        ("min_rate", sender.min_rate),
        ("max_rate", sender.max_rate),
    ] {
        if r.bits_per_sec() == 0 {
            return Err(cx.at(&at(k), "expected a rate above zero"));
        }
    }
    if sender.min_rate > sender.max_rate {
        return Err(cx.at(
            &at("min_rate"),
            format!("min_rate ({}) is above max_rate ({})", sender.min_rate, sender.max_rate),
        ));
    }
    if sender.init_rate < sender.min_rate || sender.init_rate > sender.max_rate {
        return Err(cx.at(
            &at("init_rate"),
            format!(
                "expected init_rate between min_rate ({}) and max_rate ({})",
                sender.min_rate, sender.max_rate
            ),
        ));
    }
    if sender.fps > 255 {
        return Err(cx.at(
            &at("fps"),
            format!("expected 0 (bulk) or 1 to 255 frames per second, found {}", sender.fps),
        ));
    }
    if sender.fps > 0 && sender.frame_budget > Dur::from_secs_f64(1.0 / sender.fps as f64) {
        return Err(cx.at(
            &at("frame_budget"),
            format!(
                "the frame budget ({}) is longer than a frame interval at {} fps",
                sender.frame_budget, sender.fps
            ),
        ));
    }
    if sender.fps == 0 && !sender.frame_budget.is_zero() {
        return Err(cx.at(&at("frame_budget"), "a frame budget needs frame mode: set `fps`"));
    }
    if sender.send_timeout.is_zero() {
        return Err(cx.at(&at("send_timeout"), "expected a timeout above zero, such as \"1s\""));
    }
    if sender.init_window == 0 {
        return Err(cx.at(&at("init_window"), "expected at least 1 packet"));
    }
    if receiver.ack_every == 0 {
        return Err(cx.at(
            &[fp, &[key("receiver"), key("ack_every")]].concat(),
            "expected at least 1 (ACK every packet)",
        ));
    }
    Ok((FlowKind::UdpPrague { sender, receiver }, Ecn::Ect1))
}

pub(crate) fn probe(
    cx: &ErrCtx,
    fp: &[Seg],
    pps: f64,
    size: u32,
    ecn: Ecn,
    profile: Option<String>,
    sender: Option<toml::Table>,
) -> Result<(FlowKind, Ecn), ScenarioError> {
    let mut cfg: l4s_transport::probe::ProbeConfig = match sender {
        Some(t) => typed(cx, &join(fp, "sender"), t)?,
        None => Default::default(),
    };
    cfg.pps = pps.round().max(1.0) as u32;
    cfg.size = size;
    cfg.ecn = ecn;
    Ok((FlowKind::Probe { sender: cfg, profile }, ecn))
}

/// A `type = "media"` flow: the flow-level `profile`, `cc` (the rate controller) and `ecn`
/// ("ect1": L4S; "not-ect" or "ect0": classic) plus the `[flows.media]` overrides, resolved
/// by [`l4s_media::MediaConfig::resolve`].
pub(crate) fn media(
    cx: &ErrCtx,
    fp: &[Seg],
    profile: Option<String>,
    cc: Option<String>,
    ecn: Option<String>,
    table: Option<toml::Table>,
    duration: Dur,
) -> Result<(FlowKind, Ecn), ScenarioError> {
    let mut t = table.unwrap_or_default();
    let mp = join(fp, "media");
    // Flow-level keys fill the media table (the same setting in both places is ambiguous);
    // errors about them point at the flow-level key the user wrote.
    let mut lifted: Vec<(String, String)> = Vec::new();
    let profile = profile.or_else(|| (!t.contains_key("profile")).then(String::new));
    let mut lift = |flow_key: &str, media_key: &str, v: Option<toml::Value>| -> Result<(), ScenarioError> {
        if let Some(v) = v {
            lifted.push((media_key.to_string(), flow_key.to_string()));
            if t.contains_key(media_key) {
                return Err(cx.at(
                    &join(&mp, media_key),
                    format!("set either the flow's `{flow_key}` or `media.{media_key}`, not both"),
                ));
            }
            t.insert(media_key.to_string(), v);
        }
        Ok(())
    };
    if profile.as_deref() == Some("") {
        return Err(cx.at(
            fp,
            format!(
                "required key `profile` is missing: one of {}",
                l4s_media::PROFILES
                    .iter()
                    .map(|p| format!("{p:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    lift("profile", "profile", profile.map(toml::Value::String))?;
    lift("cc", "controller", cc.map(toml::Value::String))?;
    match ecn.as_deref() {
        None => {}
        Some("ect1") | Some("l4s") => lift("ecn", "l4s", Some(toml::Value::Boolean(true)))?,
        Some(e @ ("not-ect" | "off" | "ect0")) => {
            lift("ecn", "l4s", Some(toml::Value::Boolean(false)))?;
            let code = if e == "ect0" { "ect0" } else { "not-ect" };
            lift("ecn", "ecn", Some(toml::Value::String(code.into())))?;
        }
        Some(other) => {
            return Err(cx.at(
                &join(fp, "ecn"),
                format!("unknown ECN setting {other:?} for a media flow: expected \"ect1\" (L4S), \"ect0\" or \"not-ect\" (classic)"),
            ))
        }
    }
    let cfg: l4s_media::MediaConfig = typed(cx, &mp, t)?;
    let params = cfg.resolve(duration).map_err(|(k, msg)| {
        let at = match lifted.iter().find(|(m, _)| *m == k) {
            Some((_, flow_key)) => join(fp, flow_key),
            None => join(&mp, &k),
        };
        cx.at(&at, msg)
    })?;
    let ecn = params.ecn;
    Ok((
        FlowKind::Media {
            params: Box::new(params),
        },
        ecn,
    ))
}

/// An application flow (`type = "bulk" | "sync" | "request-response" | "web" | "query"`):
/// the flow-level `cc`, `ecn`, `bytes`, `sender` (TCP sender knobs) and `receiver` plus
/// the `[flows.app]` table, validated by [`l4s_apps::AppConfig::validate`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn app(
    cx: &ErrCtx,
    fp: &[Seg],
    kind: &str,
    cc: Option<String>,
    ecn: Option<String>,
    bytes: Option<String>,
    sender: Option<toml::Table>,
    receiver: Option<toml::Table>,
    cc_params: Option<toml::Table>,
    table: Option<toml::Table>,
    duration: Dur,
) -> Result<(FlowKind, Ecn), ScenarioError> {
    let mut t = table.unwrap_or_default();
    let ap = join(fp, "app");
    if t.contains_key("kind") {
        return Err(cx.at(&join(&ap, "kind"), "the application kind is the flow's `type`"));
    }
    t.insert("kind".into(), toml::Value::String(kind.to_string()));
    let mut lifted: Vec<(String, String)> = Vec::new();
    let written: Vec<String> = t.keys().cloned().collect();
    for (flow_key, app_key, v) in [
        ("cc", "cc", cc.map(toml::Value::String)),
        ("ecn", "ecn", ecn.map(toml::Value::String)),
        ("bytes", "bytes", bytes.map(toml::Value::String)),
        ("sender", "tcp", sender.map(toml::Value::Table)),
        ("receiver", "receiver", receiver.map(toml::Value::Table)),
    ] {
        if let Some(v) = v {
            if t.contains_key(app_key) {
                return Err(cx.at(
                    &join(&ap, app_key),
                    format!("set either the flow's `{flow_key}` or `app.{app_key}`, not both"),
                ));
            }
            lifted.push((app_key.to_string(), flow_key.to_string()));
            t.insert(app_key.to_string(), v);
        }
    }
    if t.contains_key("seed") {
        return Err(cx.at(
            &join(&ap, "seed"),
            "the application's random source is derived from the run's seed: set `seed` in [scenario]",
        ));
    }
    // Errors about a key the user wrote (or should write) at the flow level point there:
    // a lifted key, or a missing one that has a flow-level spelling.
    let flow_level = [
        ("bytes", "bytes"),
        ("cc", "cc"),
        ("ecn", "ecn"),
        ("tcp", "sender"),
        ("receiver", "receiver"),
    ];
    let relocate = |k: &str| -> Vec<Seg> {
        let first = k.split('.').next().unwrap_or(k);
        let at_flow = lifted
            .iter()
            .find(|(a, _)| a == first)
            .map(|(_, f)| f.as_str())
            .or_else(|| {
                (!written.iter().any(|w| w == first))
                    .then(|| flow_level.iter().find(|(a, _)| *a == first).map(|(_, f)| *f))
                    .flatten()
            });
        match at_flow {
            Some(flow_key) => {
                let mut p = join(fp, flow_key);
                p.extend(k.split('.').skip(1).map(key));
                p
            }
            None => {
                let mut p = ap.clone();
                p.extend(k.split('.').map(key));
                p
            }
        }
    };
    let mut cfg: l4s_apps::AppConfig = typed(cx, &ap, t).map_err(|mut e| {
        // serde names the path inside the app table; map lifted keys back.
        for (a, flow_key) in &lifted {
            let inside = format!("{}.{a}", crate::error::path_string(&ap));
            if let Some(rest) = e.key.strip_prefix(&inside) {
                e.key = format!("{}.{flow_key}{rest}", crate::error::path_string(fp));
            }
        }
        e
    })?;
    cfg.validate(duration).map_err(|(k, msg)| cx.at(&relocate(&k), msg))?;
    if let Some(t) = cc_params {
        let at = |k: &str| [fp, &[key("cc_params"), key(k)]].concat();
        if cfg.kind == l4s_apps::AppKind::Query {
            return Err(cx.at(&join(fp, "cc_params"), "a query flow has no congestion control to set"));
        }
        if t.contains_key("initial_cwnd") {
            return Err(cx.at(
                &at("initial_cwnd"),
                "an application flow's initial window is `app.initial_cwnd`",
            ));
        }
        if t.contains_key("ect1") {
            return Err(cx.at(&at("ect1"), "`ect1` applies to `tcp` flows only"));
        }
        cfg.cc_params = Some(cc_params_of(cx, fp, &cfg.cc, cfg.tcp.mss, Some(t))?);
    }
    let ecn = cfg.nominal_ecn();
    Ok((FlowKind::App { cfg: Box::new(cfg) }, ecn))
}
