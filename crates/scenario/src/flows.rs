//! Building the typed endpoint configurations of each flow type.

use crate::error::{ErrCtx, ScenarioError, Seg};
use crate::load::typed;
use crate::{FlowKind, TcpEcn};
use l4s_cc::factory::CcParams;
use l4s_core::Ecn;
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

pub(crate) fn udp_prague(
    cx: &ErrCtx,
    fp: &[Seg],
    sender: Option<toml::Table>,
    receiver: Option<toml::Table>,
) -> Result<(FlowKind, Ecn), ScenarioError> {
    let sender = match sender {
        Some(t) => typed(cx, &join(fp, "sender"), t)?,
        None => Default::default(),
    };
    let receiver = match receiver {
        Some(t) => typed(cx, &join(fp, "receiver"), t)?,
        None => Default::default(),
    };
    Ok((FlowKind::UdpPrague { sender, receiver }, Ecn::Ect1))
}

pub(crate) fn probe(
    cx: &ErrCtx,
    fp: &[Seg],
    pps: f64,
    size: u32,
    ecn: Ecn,
    sender: Option<toml::Table>,
) -> Result<(FlowKind, Ecn), ScenarioError> {
    let mut cfg: l4s_transport::probe::ProbeConfig = match sender {
        Some(t) => typed(cx, &join(fp, "sender"), t)?,
        None => Default::default(),
    };
    cfg.pps = pps.round().max(1.0) as u32;
    cfg.size = size;
    cfg.ecn = ecn;
    Ok((FlowKind::Probe { sender: cfg }, ecn))
}
