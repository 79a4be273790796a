//! Building the typed endpoint configurations of each flow type.

use crate::error::{ErrCtx, ScenarioError, Seg};
use crate::load::typed;
use crate::{FlowKind, TcpEcn};
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
    /// Prague: v0.6 behaviour.
    v06: Option<bool>,
    /// Prague: rate-based mode at small windows (default true).
    rate_mode: Option<bool>,
    /// Initial window in segments (RFC 6928: 10).
    initial_cwnd: Option<u32>,
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
    let file: CcParamsFile = match cc_params {
        Some(t) => typed(cx, &join(fp, "cc_params"), t)?,
        None => CcParamsFile::default(),
    };
    let mut p = CcParams {
        mss: sender.mss,
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
        if set && !ccs.contains(&cc.as_str()) {
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
    only("v06", file.v06.is_some(), &["prague"])?;
    only("rate_mode", file.rate_mode.is_some(), &["prague"])?;
    p.ect1_for_dctcp = file.ect1.unwrap_or(false);
    p.abe = file.abe.unwrap_or(false);
    p.cubic_linux_beta = file.linux_beta.unwrap_or(false);
    p.prague_v06 = file.v06.unwrap_or(false);
    p.prague_rate_mode = file.rate_mode.unwrap_or(true);
    let ecn_at = join(fp, "ecn");
    let nominal = match cc.as_str() {
        "prague" | "dctcp" => {
            match ecn {
                TcpEcn::Auto | TcpEcn::Accurate => {}
                TcpEcn::Classic => {
                    return Err(cx.at(&ecn_at, format!("{cc} needs Accurate ECN feedback: use ecn = \"accecn\" (or \"off\" for a receiver without AccECN)")));
                }
                // The receiver does not offer AccECN: the sender falls back (Prague: to
                // Reno behaviour and Not-ECT, endpoints.md §1.3 rule 7).
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
