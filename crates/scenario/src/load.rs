//! From text to a validated [`Scenario`].

use crate::error::{line_of, parse_path, path_string, ErrCtx, ScenarioError, Seg};
use crate::file::{File, FlowTable, LinkTable};
use crate::{Flow, Link, Node, Scenario, TcpEcn};
use l4s_aqm::config::{AqmConfig, FifoConfig};
use l4s_core::{units, Dur, Ecn, Rate};
use l4s_link::{CapacityProcess, MarkovState, Trace};
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Read and validate a scenario file.
pub fn load_file(path: &Path) -> Result<Scenario, ScenarioError> {
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
        file: path.to_path_buf(),
        line: None,
        key: String::new(),
        message: format!("cannot read the scenario file: {e}"),
    })?;
    load_str(&text, path)
}

/// Validate scenario text; `file` is used in error messages.
pub fn load_str(text: &str, file: &Path) -> Result<Scenario, ScenarioError> {
    let cx = ErrCtx { file, text };
    let raw: File = parse_toml(text, file).map_err(|e| other_kind(text, file, FileKind::Scenario).unwrap_or(e))?;
    build(&cx, raw)
}

/// The two kinds of file l4s-lab reads: a scenario (`[scenario]`, `[topology]`,
/// `[[flows]]`) and a campaign (`[campaign]`, which names its scenario).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Scenario,
    Campaign,
}

/// Where a file that did not load as `expected` is the other kind of file, the error
/// that says so and how to run it; `None` where it is not (the loader's own error stands).
/// Looked at only once loading failed, so a good file is parsed once.
pub fn other_kind(text: &str, file: &Path, expected: FileKind) -> Option<ScenarioError> {
    let top: toml::Table = text.parse().ok()?;
    let is_table = |k: &str| top.get(k).is_some_and(|v| v.is_table());
    let (key, message) = match expected {
        FileKind::Scenario if is_table("campaign") && !top.contains_key("scenario") => (
            "campaign",
            "this is a campaign file, not a scenario: run it with `l4s campaign run` (from Python, \
             `l4s_lab.campaign.run`), or run the scenario its `campaign.scenario` names",
        ),
        FileKind::Campaign if is_table("scenario") && !top.contains_key("campaign") => (
            "scenario",
            "this is a scenario file, not a campaign: run it with `l4s run` (from Python, \
             `l4s_lab.run`); a campaign file has a [campaign] table whose `scenario` names the \
             scenario file, and the keys to sweep (docs/campaigns.md)",
        ),
        _ => return None,
    };
    Some(ScenarioError {
        file: file.to_path_buf(),
        line: crate::error::locate(text, &parse_path(key)),
        key: key.to_string(),
        message: message.to_string(),
    })
}

/// Deserialize TOML text into `T` (a file's tables as serde structs), with errors that
/// name the file, the line and the key path (`flows[1].cc`). The campaign file uses it too.
pub fn parse_toml<T: DeserializeOwned>(text: &str, file: &Path) -> Result<T, ScenarioError> {
    let de = toml::de::Deserializer::parse(text).map_err(|e| ScenarioError {
        file: file.to_path_buf(),
        line: e.span().map(|s| line_of(text, s.start)),
        key: String::new(),
        message: format!("not valid TOML: {}", e.message().trim()),
    })?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let segs = parse_path(&path);
        let line = inner
            .span()
            .map(|s| line_of(text, s.start))
            .or_else(|| crate::error::locate(text, &segs));
        ScenarioError {
            file: file.to_path_buf(),
            line,
            key: if path == "." { String::new() } else { path_string(&segs) },
            message: friendly(inner.message()),
        }
    })
}

/// Make serde's wording a little more direct.
fn friendly(msg: &str) -> String {
    let mut m = msg.trim().to_string();
    // Not the name of a type of ours (`expected struct TopologyTable`): what to write.
    if let Some(at) = m.find(", expected struct ").or_else(|| m.find(", expected a map")) {
        m.truncate(at);
        m.push_str(", expected a table (a [section], or { key = value, ... })");
    }
    if let Some(rest) = m.strip_prefix("missing field ") {
        return format!("required key {rest} is missing");
    }
    // A bare number where a quantity with a unit is expected (`size = 200`).
    if (m.starts_with("invalid type: integer") || m.starts_with("invalid type: floating point"))
        && m.ends_with("expected a string")
    {
        return format!(
            "{m}: quantities are written as text with their unit, e.g. \"200B\" (a size), \"20ms\" (a \
             duration), \"10Mbit\" (a rate)"
        );
    }
    // Text where a count is expected (`packet_size = "1200B"`).
    if m.starts_with("invalid type: string")
        && ["u8", "u16", "u32", "u64", "usize", "i32", "i64", "f64", "an integer"]
            .iter()
            .any(|t| m.ends_with(&format!("expected {t}")))
    {
        return format!("{m}: this key is a plain number, written without quotes or a unit (e.g. 1200)");
    }
    m
}

pub(crate) fn key(k: &str) -> Seg {
    Seg::Key(k.to_string())
}

pub(crate) fn join(base: &[Seg], more: &[Seg]) -> Vec<Seg> {
    let mut v = base.to_vec();
    v.extend_from_slice(more);
    v
}

/// Deserialize a sub-table into a typed config, tracking the key path for errors.
pub(crate) fn typed<T: DeserializeOwned>(cx: &ErrCtx, at: &[Seg], table: toml::Table) -> Result<T, ScenarioError> {
    serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
        let sub = parse_path(&e.path().to_string());
        // The message alone: its Display adds the key again on a line of its own.
        let msg = friendly(e.into_inner().message());
        // Point at an unknown key itself when the message names it.
        let mut p = join(at, &sub);
        // For an unknown key, point at the key's line but name the table it sits in.
        if let Some(name) = msg.strip_prefix("unknown field `").and_then(|r| r.split('`').next()) {
            if p.last() != Some(&key(name)) {
                p.push(key(name));
            }
            let mut err = cx.at(&p, msg.clone());
            err.key = path_string(&p[..p.len() - 1]);
            return err;
        }
        cx.at(&p, msg)
    })
}

/// Parse an `aqm` table: `kind` chooses the discipline, the other keys are its parameters.
pub(crate) fn parse_aqm(
    cx: &ErrCtx,
    at: &[Seg],
    table: Option<toml::Table>,
    default: AqmConfig,
) -> Result<AqmConfig, ScenarioError> {
    let Some(mut t) = table else {
        return Ok(default);
    };
    let kind = match t.remove("kind") {
        Some(toml::Value::String(s)) => s,
        Some(_) => {
            return Err(cx.at(
                &join(at, &[key("kind")]),
                format!("expected a string, one of {}", kinds()),
            ))
        }
        None => return Err(cx.at(at, format!("required key `kind` is missing: one of {}", kinds()))),
    };
    let cfg = match kind.as_str() {
        "fifo" => AqmConfig::Fifo(typed(cx, at, t)?),
        "dualpi2" => AqmConfig::DualPi2(typed(cx, at, t)?),
        "pie" => AqmConfig::Pie(typed(cx, at, t)?),
        "codel" => AqmConfig::Codel(typed(cx, at, t)?),
        "fq-codel" | "fq_codel" => AqmConfig::FqCodel(typed(cx, at, t)?),
        "classic-ecn" => AqmConfig::ClassicEcn(typed(cx, at, t)?),
        "l4s-marker" => AqmConfig::L4sMarker(typed(cx, at, t)?),
        "docsis-dualq" => AqmConfig::DocsisDualq(Box::new(typed(cx, at, t)?)),
        other => {
            return Err(cx.at(
                &join(at, &[key("kind")]),
                format!("unknown queue discipline {other:?}: expected one of {}", kinds()),
            ))
        }
    };
    if let Err(e) = cfg.validate() {
        // A nested key (`queue_protection.critical_ql`) is a path of its own.
        return Err(cx.at(&join(at, &crate::error::parse_path(&e.key)), e.message));
    }
    Ok(cfg)
}

fn kinds() -> String {
    l4s_aqm::config::KINDS
        .iter()
        .map(|k| format!("\"{k}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A `fault` table: which ECN rewrite, from when.
fn parse_fault(
    cx: &ErrCtx,
    at: &[Seg],
    f: Option<&crate::file::FaultTable>,
    duration: Dur,
) -> Result<Option<crate::Fault>, ScenarioError> {
    let Some(f) = f else { return Ok(None) };
    let Some(kind) = crate::FaultKind::parse(&f.kind) else {
        return Err(cx.at(
            &join(at, &[key("kind")]),
            format!(
                "unknown fault {:?}: expected \"bleach\", \"remark\" or \"mark-all\"",
                f.kind
            ),
        ));
    };
    if f.start >= duration {
        return Err(cx.at(
            &join(at, &[key("start")]),
            format!("the fault starts at {} but the run ends at {duration}", f.start),
        ));
    }
    Ok(Some(crate::Fault { kind, start: f.start }))
}

/// A `rate_schedule` table: steps in time order before the end of the run, optionally
/// repeating.
fn parse_rate_schedule(
    cx: &ErrCtx,
    at: &[Seg],
    t: Option<&crate::file::RateScheduleTable>,
    base_rate: Option<Rate>,
    duration: Dur,
) -> Result<crate::RateSchedule, ScenarioError> {
    let Some(t) = t else {
        return Ok(crate::RateSchedule::default());
    };
    if base_rate.is_none() {
        return Err(cx.at(at, "a rate schedule needs a link `rate` to start from"));
    }
    if t.steps.is_empty() {
        return Err(cx.at(
            &join(at, &[key("steps")]),
            "expected at least one step, such as { at = \"5s\", rate = \"10Mbit\" }",
        ));
    }
    let mut last = None;
    for (i, s) in t.steps.iter().enumerate() {
        let sp = join(at, &[key("steps"), Seg::Index(i)]);
        check_rate(cx, &join(&sp, &[key("rate")]), Some(s.rate))?;
        if last.is_some_and(|l| s.at <= l) {
            return Err(cx.at(&join(&sp, &[key("at")]), "steps must be in increasing time order"));
        }
        if s.at >= duration {
            return Err(cx.at(
                &join(&sp, &[key("at")]),
                format!("the step is at {} but the run ends at {duration}", s.at),
            ));
        }
        last = Some(s.at);
    }
    if let Some(period) = t.repeat {
        let lastat = t.steps[t.steps.len() - 1].at;
        if period <= lastat {
            return Err(cx.at(
                &join(at, &[key("repeat")]),
                format!("the repeat period ({period}) must be longer than the last step ({lastat})"),
            ));
        }
    }
    Ok(crate::RateSchedule {
        steps: t.steps.iter().map(|s| (s.at, s.rate)).collect(),
        repeat: t.repeat,
        end: None,
    })
}

/// A `harq` table: the block error rate and the HARQ round trip, checked.
fn parse_harq(
    cx: &ErrCtx,
    at: &[Seg],
    t: Option<&crate::file::HarqTable>,
) -> Result<Option<l4s_link::HarqConfig>, ScenarioError> {
    let Some(t) = t else { return Ok(None) };
    let h = l4s_link::HarqConfig {
        bler: t.bler,
        rtt: t.rtt,
    };
    h.validate().map_err(|(k, m)| cx.at(&join(at, &[key(k)]), m))?;
    Ok(Some(h))
}

/// A cellular link's `ran` table (`None` and `cellular`: the defaults), checked; `harq`
/// is the link's own `harq` key, which a cellular link refuses (its HARQ is the RAN's).
pub(crate) fn parse_ran(
    cx: &ErrCtx,
    at: &[Seg],
    (cellular, t): (bool, Option<&crate::file::RanTable>),
    harq_given: bool,
) -> Result<Option<l4s_link::RanConfig>, ScenarioError> {
    if t.is_none() && !cellular {
        return Ok(None);
    }
    let rp = join(at, &[key("ran")]);
    if harq_given {
        return Err(cx.at(
            &join(at, &[key("harq")]),
            "a cellular link's HARQ covers both directions and belongs in its `ran` table: `ran = { harq = { bler = 0.1, rtt = \"4ms\" } }`",
        ));
    }
    let d = l4s_link::RanConfig::default();
    let Some(t) = t else { return Ok(Some(d)) };
    let tdd = match &t.tdd {
        None => Vec::new(),
        Some(s) => l4s_link::cellular::parse_tdd(s).map_err(|m| cx.at(&join(&rp, &[key("tdd")]), m))?,
    };
    let cfg = l4s_link::RanConfig {
        slot: t.slot.unwrap_or(d.slot),
        tdd,
        special_dl_symbols: t.special_dl_symbols.unwrap_or(d.special_dl_symbols),
        share: t.share.unwrap_or(d.share),
        harq: parse_harq(cx, &join(&rp, &[key("harq")]), t.harq.as_ref())?,
        uplink: l4s_link::UplinkScheduling {
            sr_period: t.sr_period.unwrap_or(d.uplink.sr_period),
            grant_delay: t.grant_delay.unwrap_or(d.uplink.grant_delay),
            k2: t.k2.unwrap_or(d.uplink.k2),
            configured_grant: t.configured_grant,
            sr_grant: match &t.sr_grant {
                None => None,
                Some(b) => Some(units::parse_bytes(b).map_err(|e| cx.at(&join(&rp, &[key("sr_grant")]), e))?),
            },
        },
        drx: match &t.drx {
            None => None,
            Some(d) => Some(l4s_link::cellular::Drx {
                cycle: d.cycle,
                offset: d.offset.unwrap_or(Dur::ZERO),
                on_duration: d.on_duration,
                inactivity: d.inactivity,
                short: match (d.short_cycle, d.short_cycle_timer) {
                    (None, None) => None,
                    (Some(c), Some(k)) => Some((c, k)),
                    (c, _) => {
                        let (given, missing) = if c.is_some() {
                            ("short_cycle", "short_cycle_timer")
                        } else {
                            ("short_cycle_timer", "short_cycle")
                        };
                        return Err(cx.at(
                            &join(&rp, &[key("drx"), key(missing)]),
                            format!("`{given}` needs `{missing}` too (TS 38.331 configures the short DRX cycle with both): e.g. short_cycle = \"10ms\", short_cycle_timer = 2"),
                        ));
                    }
                },
            }),
        },
    };
    cfg.validate().map_err(|(k, m)| cx.at(&join(&rp, &[key(k)]), m))?;
    Ok(Some(cfg))
}

/// A DOCSIS link's upstream and downstream (`kind = "docsis"`, or a `docsis` table):
/// checked, with the upstream's maximum sustained rate from `reverse_rate` and the
/// downstream's from `rate`, which it needs, as it needs its reverse direction.
fn parse_docsis(
    cx: &ErrCtx,
    at: &[Seg],
    l: &crate::file::LinkTable,
) -> Result<Option<(l4s_link::DocsisUpstream, l4s_link::DocsisDownstream)>, ScenarioError> {
    if l.kind.as_deref() != Some("docsis") && l.docsis.is_none() {
        return Ok(None);
    }
    if let Some(k) = l.kind.as_deref().filter(|k| *k != "docsis") {
        return Err(cx.at(
            &join(at, &[key("docsis")]),
            format!("a `docsis` table belongs to a `kind = \"docsis\"` link, not {k:?}"),
        ));
    }
    if !l.bidirectional {
        return Err(cx.at(
            &join(at, &[key("bidirectional")]),
            "a DOCSIS link has both directions: its forward direction is the downstream, its reverse the upstream",
        ));
    }
    let Some(msr) = l.reverse_rate else {
        return Err(cx.at(
            at,
            "a DOCSIS link needs `reverse_rate`: the upstream service flow's maximum sustained rate, such as \"20Mbit\"",
        ));
    };
    let Some(ds_msr) = l.rate else {
        return Err(cx.at(
            at,
            "a DOCSIS link needs `rate`: the downstream service flow's maximum sustained rate, such as \"200Mbit\"",
        ));
    };
    for (k, p) in [
        ("trace", l.trace.is_some()),
        ("capacity", l.capacity.is_some()),
        ("rate_schedule", l.rate_schedule.is_some()),
        ("reverse_trace", l.reverse_trace.is_some()),
        ("harq", l.harq.is_some()),
        ("ran", l.ran.is_some()),
    ] {
        if p {
            return Err(cx.at(&join(at, &[key(k)]), "does not apply to a DOCSIS link"));
        }
    }
    let d = l4s_link::DocsisUpstream::default();
    let dp = join(at, &[key("docsis")]);
    let mut cfg = l4s_link::DocsisUpstream {
        max_sustained_rate: Some(msr),
        ..d.clone()
    };
    if let Some(t) = &l.docsis {
        cfg.ds_subcarrier_spacing_hz = t
            .ds_subcarrier_spacing_khz
            .map_or(d.ds_subcarrier_spacing_hz, |k| k.saturating_mul(1000));
        cfg.ds_cyclic_prefix = t.ds_cyclic_prefix.unwrap_or(d.ds_cyclic_prefix);
        cfg.map_interval = t.map_interval.unwrap_or(d.map_interval);
        cfg.subcarrier_spacing_hz = t
            .subcarrier_spacing_khz
            .map_or(d.subcarrier_spacing_hz, |k| k.saturating_mul(1000));
        cfg.cyclic_prefix = t.cyclic_prefix.unwrap_or(d.cyclic_prefix);
        cfg.symbols_per_frame = t.symbols_per_frame.unwrap_or(d.symbols_per_frame);
        cfg.subcarriers = t.subcarriers.unwrap_or(d.subcarriers);
        cfg.spectral_efficiency = t.spectral_efficiency.unwrap_or(d.spectral_efficiency);
        cfg.cmts_map_proc = t.cmts_map_proc.unwrap_or(d.cmts_map_proc);
        cfg.distance_km = t.distance_km.unwrap_or(d.distance_km);
        cfg.ds_interleaver = t.ds_interleaver.unwrap_or(d.ds_interleaver);
        cfg.max_traffic_burst = match &t.max_traffic_burst {
            None => None,
            Some(s) => Some(units::parse_bytes(s).map_err(|e| cx.at(&join(&dp, &[key("max_traffic_burst")]), e))?),
        };
        cfg.peak_rate = t.peak_rate;
        cfg.free_capacity = t.free_capacity;
        cfg.free_capacity_variation = t.free_capacity_variation.unwrap_or(0.0);
        cfg.pgs_rate = t.pgs_rate;
        cfg.pgs_interval = t.pgs_interval;
        if cfg.pgs_rate.is_some()
            && !matches!(
                l.reverse_aqm
                    .as_ref()
                    .and_then(|a| a.get("kind"))
                    .and_then(|k| k.as_str()),
                Some("docsis-dualq")
            )
        {
            return Err(cx.at(
                &join(&dp, &[key("pgs_rate")]),
                "Proactive Grant Service grants the Low-Latency service flow: set `reverse_aqm = { kind = \"docsis-dualq\", ... }`",
            ));
        }
    }
    cfg.validate().map_err(|(k, m)| {
        if k == "max_sustained_rate" {
            cx.at(&join(at, &[key("reverse_rate")]), m)
        } else {
            let k = match k {
                "subcarrier_spacing" => "subcarrier_spacing_khz",
                "distance" => "distance_km",
                k => k,
            };
            cx.at(&join(&dp, &[key(k)]), m)
        }
    })?;
    let mut ds = l4s_link::DocsisDownstream {
        max_sustained_rate: Some(ds_msr),
        ..l4s_link::DocsisDownstream::beside(&cfg)
    };
    if let Some(t) = &l.docsis {
        ds.subcarriers = t.ds_subcarriers.unwrap_or(ds.subcarriers);
        ds.spectral_efficiency = t.ds_spectral_efficiency.unwrap_or(ds.spectral_efficiency);
        ds.peak_rate = t.ds_peak_rate;
        ds.max_traffic_burst = match &t.ds_max_traffic_burst {
            None => None,
            Some(s) => Some(units::parse_bytes(s).map_err(|e| cx.at(&join(&dp, &[key("ds_max_traffic_burst")]), e))?),
        };
    }
    ds.validate().map_err(|(k, m)| {
        if k == "max_sustained_rate" {
            cx.at(&join(at, &[key("rate")]), m)
        } else {
            let k = match k {
                "subcarrier_spacing" => "ds_subcarrier_spacing_khz",
                "cyclic_prefix" => "ds_cyclic_prefix",
                "subcarriers" => "ds_subcarriers",
                "spectral_efficiency" => "ds_spectral_efficiency",
                "interleaver" => "ds_interleaver",
                "peak_rate" => "ds_peak_rate",
                "max_traffic_burst" => "ds_max_traffic_burst",
                k => k,
            };
            cx.at(&join(&dp, &[key(k)]), m)
        }
    })?;
    Ok(Some((cfg, ds)))
}

/// A link's `kind`: whether it is cellular.
fn parse_link_kind(cx: &ErrCtx, at: &[Seg], kind: Option<&str>, ran_given: bool) -> Result<bool, ScenarioError> {
    match kind {
        None => Ok(ran_given),
        Some("docsis") if ran_given => Err(cx.at(&join(at, &[key("ran")]), "does not apply to a DOCSIS link")),
        Some("docsis") => Ok(false),
        Some("cellular") => Ok(true),
        Some("wire") if ran_given => Err(cx.at(
            &join(at, &[key("ran")]),
            "a `ran` table belongs to a `kind = \"cellular\"` link",
        )),
        Some("wire") => Ok(false),
        Some(other) => Err(cx.at(
            &join(at, &[key("kind")]),
            format!("unknown link kind {other:?}: expected \"wire\", \"cellular\" or \"docsis\""),
        )),
    }
}

/// A `loss` table: the model and its parameters.
fn parse_loss(
    cx: &ErrCtx,
    at: &[Seg],
    t: Option<&crate::file::LossTable>,
) -> Result<Option<crate::LossModel>, ScenarioError> {
    let Some(t) = t else { return Ok(None) };
    match t.model.as_str() {
        "gilbert-elliott" => {
            let need = |k: &str, v: Option<Dur>| {
                v.ok_or_else(|| {
                    cx.at(
                        at,
                        format!("required key `{k}` is missing: the mean stay in that state, such as \"20ms\""),
                    )
                })
            };
            let cfg = l4s_link::GilbertElliottConfig {
                loss_good: t.loss_good.unwrap_or(0.0),
                loss_bad: t.loss_bad.unwrap_or(1.0),
                mean_good: need("mean_good", t.mean_good)?,
                mean_bad: need("mean_bad", t.mean_bad)?,
            };
            if let Err((k, m)) = cfg.validate() {
                return Err(cx.at(&join(at, &[key(k)]), m));
            }
            Ok(Some(crate::LossModel::GilbertElliott(cfg)))
        }
        other => Err(cx.at(
            &join(at, &[key("model")]),
            format!("unknown loss model {other:?}: expected \"gilbert-elliott\""),
        )),
    }
}

/// A `trace` key: a Mahimahi capacity trace read from `path`, relative to the scenario
/// file's directory. A problem in the file names the trace's own line.
fn load_trace(cx: &ErrCtx, at: &[Seg], path: Option<&str>) -> Result<Option<Arc<Trace>>, ScenarioError> {
    let Some(p) = path else { return Ok(None) };
    let full = cx.file.parent().unwrap_or(std::path::Path::new("")).join(p);
    let file = std::fs::File::open(&full)
        .map_err(|e| cx.at(at, format!("cannot read the trace file {}: {e}", full.display())))?;
    let t = Trace::read(std::io::BufReader::new(file)).map_err(|e| {
        let line = e.line.map(|l| format!(":{l}")).unwrap_or_default();
        cx.at(
            at,
            format!(
                "{}{line}: {} (a Mahimahi trace: one delivery time in milliseconds per line, not decreasing, the last above 0)",
                full.display(),
                e.message
            ),
        )
    })?;
    Ok(Some(Arc::new(t)))
}

/// A direction's capacity: its `rate` or its `trace` (whose mean then stands for the rate),
/// never both; a trace has no rate schedule.
fn rate_or_trace(
    cx: &ErrCtx,
    at: &[Seg],
    (rate_key, rate): (&str, Option<Rate>),
    (trace_key, trace): (&str, Option<&str>),
    schedule_given: bool,
) -> Result<(Option<Rate>, Option<Arc<Trace>>), ScenarioError> {
    let trace = load_trace(cx, &join(at, &[key(trace_key)]), trace)?;
    rate_or_this_trace(cx, at, (rate_key, rate), (trace_key, trace), schedule_given)
}

/// A direction's capacity from `rate`, `trace` or `capacity` (one of them); the process
/// when it is drawn.
#[allow(clippy::type_complexity)]
fn capacity_of(
    cx: &ErrCtx,
    at: &[Seg],
    (rate, trace, capacity): (Option<Rate>, Option<&str>, Option<&crate::file::CapacityTable>),
    schedule_given: bool,
    (seed, link, duration): (u64, usize, Dur),
) -> Result<(Option<Rate>, Option<Arc<Trace>>, Option<CapacityProcess>), ScenarioError> {
    let ck = join(at, &[key("capacity")]);
    let Some((p, t)) = parse_capacity(cx, &ck, capacity, (seed, link), duration)? else {
        let (r, t) = rate_or_trace(cx, at, ("rate", rate), ("trace", trace), schedule_given)?;
        return Ok((r, t, None));
    };
    if trace.is_some() {
        return Err(cx.at(
            &ck,
            "a direction takes its capacity from a `trace` or a `capacity` process, not both",
        ));
    }
    let (r, t) = rate_or_this_trace(cx, at, ("rate", rate), ("capacity", Some(t)), schedule_given)?;
    Ok((r, t, Some(p)))
}

/// [`rate_or_trace`] for a trace already at hand (read, or drawn from a `capacity`).
fn rate_or_this_trace(
    cx: &ErrCtx,
    at: &[Seg],
    (rate_key, rate): (&str, Option<Rate>),
    (trace_key, trace): (&str, Option<Arc<Trace>>),
    schedule_given: bool,
) -> Result<(Option<Rate>, Option<Arc<Trace>>), ScenarioError> {
    let Some(t) = trace else {
        return Ok((rate, None));
    };
    if rate.is_some() {
        return Err(cx.at(
            &join(at, &[key(rate_key)]),
            format!("a direction with a `{trace_key}` takes its capacity from it: remove `{rate_key}`"),
        ));
    }
    if schedule_given {
        return Err(cx.at(
            &join(at, &[key("rate_schedule")]),
            format!("a direction with a `{trace_key}` takes its capacity over time from it: remove `rate_schedule`"),
        ));
    }
    Ok((Some(t.mean_rate()), Some(t)))
}

/// A `capacity` table: a process with its own keys, checked, and drawn for the scenario's
/// seed, the link's index and the duration, as a run draws it: the loaded scenario holds
/// this draw, and its mean stands for the rate (a run with another seed or duration draws
/// again: see [`crate::Scenario::draw_capacities`]).
fn parse_capacity(
    cx: &ErrCtx,
    at: &[Seg],
    t: Option<&crate::file::CapacityTable>,
    (seed, link): (u64, usize),
    duration: Dur,
) -> Result<Option<(CapacityProcess, Arc<Trace>)>, ScenarioError> {
    let Some(t) = t else { return Ok(None) };
    let need = |k: &str, v: bool, example: &str| {
        if v {
            Ok(())
        } else {
            Err(cx.at(
                at,
                format!(
                    "required key `{k}` is missing for process {:?}: such as {example}",
                    t.process
                ),
            ))
        }
    };
    let given = [
        ("rate", t.rate.is_some()),
        ("steps", t.steps.is_some()),
        ("period", t.period.is_some()),
        ("low", t.low.is_some()),
        ("high", t.high.is_some()),
        ("mean", t.mean.is_some()),
        ("std_dev", t.std_dev.is_some()),
        ("step", t.step.is_some()),
        ("min", t.min.is_some()),
        ("max", t.max.is_some()),
        ("states", t.states.is_some()),
        ("median", t.median.is_some()),
        ("sigma", t.sigma.is_some()),
        ("phi", t.phi.is_some()),
    ];
    let keys: &[&str] = match t.process.as_str() {
        "constant" => &["rate"],
        "steps" => &["steps", "period"],
        "sawtooth" => &["low", "high", "period"],
        "gaussian" => &["mean", "std_dev", "step", "min", "max"],
        "markov" => &["states"],
        "ar1" => &["median", "sigma", "phi", "step", "min", "max"],
        other => {
            return Err(cx.at(
                &join(at, &[key("process")]),
                format!("unknown capacity process {other:?}: expected \"constant\", \"steps\", \"sawtooth\", \"gaussian\", \"markov\" or \"ar1\""),
            ))
        }
    };
    for (k, present) in given {
        if present && !keys.contains(&k) {
            return Err(cx.at(
                &join(at, &[key(k)]),
                format!(
                    "`{k}` does not apply to process {:?} (its keys: {})",
                    t.process,
                    keys.join(", ")
                ),
            ));
        }
        if !present && keys.contains(&k) {
            need(k, false, "the example in docs/scenarios.md")?;
        }
    }
    let z = Rate::ZERO;
    let zd = Dur::ZERO;
    let p = match t.process.as_str() {
        "constant" => CapacityProcess::Constant {
            rate: t.rate.unwrap_or(z),
        },
        "steps" => CapacityProcess::Steps {
            steps: t.steps.iter().flatten().map(|s| (s.at, s.rate)).collect(),
            period: t.period.unwrap_or(zd),
        },
        "sawtooth" => CapacityProcess::Sawtooth {
            low: t.low.unwrap_or(z),
            high: t.high.unwrap_or(z),
            period: t.period.unwrap_or(zd),
        },
        "gaussian" => CapacityProcess::Gaussian {
            mean: t.mean.unwrap_or(z),
            std_dev: t.std_dev.unwrap_or(z),
            step: t.step.unwrap_or(zd),
            min: t.min.unwrap_or(z),
            max: t.max.unwrap_or(z),
        },
        "markov" => CapacityProcess::Markov {
            states: t
                .states
                .iter()
                .flatten()
                .map(|s| MarkovState {
                    rate: s.rate,
                    mean_stay: s.mean_stay,
                })
                .collect(),
        },
        _ => CapacityProcess::Ar1 {
            median: t.median.unwrap_or(z),
            sigma: t.sigma.unwrap_or(0.0),
            phi: t.phi.unwrap_or(0.0),
            step: t.step.unwrap_or(zd),
            min: t.min.unwrap_or(z),
            max: t.max.unwrap_or(z),
        },
    };
    p.validate().map_err(|(k, m)| cx.at(&join(at, &[key(k)]), m))?;
    // The seed a run draws it with (`Scenario::draw_capacities`).
    let seed = l4s_core::Rng::derive(seed, 0x5000 + link as u64).next_u64();
    let trace = p
        .trace(duration, seed)
        .map_err(|e| cx.at(at, format!("the process gives {e} over the run's {duration}")))?;
    Ok(Some((p, Arc::new(trace))))
}

/// The reverse direction's capacity: its own, or else the forward direction's trace
/// (replayed on its own), as a reverse rate defaults to the forward rate. A reverse that
/// draws the forward's `capacity` process for itself (`drawn`) holds only the forward's
/// mean rate until its own draw ([`crate::Scenario::draw_capacities`]).
fn reverse_capacity(
    given: (Option<Rate>, Option<Arc<Trace>>),
    forward: &Option<Arc<Trace>>,
    drawn: bool,
) -> (Option<Rate>, Option<Arc<Trace>>) {
    match (given, forward) {
        ((None, None), Some(t)) => (Some(t.mean_rate()), (!drawn).then(|| t.clone())),
        (g, _) => g,
    }
}

fn default_reverse_aqm() -> AqmConfig {
    AqmConfig::Fifo(FifoConfig::default())
}

fn check_rate(cx: &ErrCtx, at: &[Seg], r: Option<Rate>) -> Result<(), ScenarioError> {
    if let Some(r) = r {
        if r.bits_per_sec() == 0 {
            return Err(cx.at(at, "expected a rate above zero, such as \"100Mbit\""));
        }
    }
    Ok(())
}

/// The most copies one `[[flows]]` table may ask for (`count`).
pub const MAX_FLOW_COUNT: u32 = 10_000;

/// Expand each flow with `count = N` into N flows named `<name>-1` ... `<name>-N`; the
/// returned vector gives, for each expanded flow, the index of its table as written, so
/// that errors still point at that table.
fn expand_counts(cx: &ErrCtx, flows: &mut Vec<FlowTable>) -> Result<Vec<usize>, ScenarioError> {
    if flows.iter().all(|f| f.count.is_none()) {
        return Ok((0..flows.len()).collect());
    }
    let mut out = Vec::new();
    let mut origin = Vec::new();
    for (i, f) in std::mem::take(flows).into_iter().enumerate() {
        match f.count {
            None => {
                out.push(f);
                origin.push(i);
            }
            Some(n) if n == 0 || n > MAX_FLOW_COUNT => {
                return Err(cx.at(
                    &[key("flows"), Seg::Index(i), key("count")],
                    format!("expected 1 to {MAX_FLOW_COUNT} copies of the flow, found {n}"),
                ))
            }
            Some(n) => {
                for k in 1..=n {
                    let mut c = f.clone();
                    c.name = format!("{}-{k}", f.name);
                    c.count = None;
                    out.push(c);
                    origin.push(i);
                }
            }
        }
    }
    *flows = out;
    Ok(origin)
}

fn build(cx: &ErrCtx, mut raw: File) -> Result<Scenario, ScenarioError> {
    let origin = expand_counts(cx, &mut raw.flows)?;
    let sc = &raw.scenario;
    let (name, from_file) = match &sc.name {
        Some(n) if n.trim().is_empty() => return Err(cx.at_str("scenario.name", "expected a non-empty name")),
        Some(n) => (n.clone(), false),
        None => (
            cx.file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "scenario".into()),
            true,
        ),
    };
    // The name is the default results directory (results/<name>): it must stay one
    // directory inside results/, and not a hidden one.
    if name.contains(['/', '\\']) || name.starts_with('.') || name.chars().any(|c| c.is_control()) {
        return Err(cx.at_str(
            "scenario.name",
            format!(
                "{name:?}{}: a name cannot hold '/', '\\' or control characters or start with '.' (it names the results directory, results/<name>){}",
                if from_file { ", the file's name," } else { "" },
                if from_file { "; give the scenario a `name`" } else { "" }
            ),
        ));
    }
    if sc.duration.is_zero() {
        return Err(cx.at_str("scenario.duration", "expected a duration above zero, such as \"60s\""));
    }
    if sc.warmup >= sc.duration {
        return Err(cx.at_str(
            "scenario.warmup",
            format!(
                "the warm-up ({}) must be shorter than the duration ({})",
                sc.warmup, sc.duration
            ),
        ));
    }

    let mut nodes: Vec<Node> = Vec::new();
    let mut links: Vec<Link> = Vec::new();
    let mut flow_ends: Vec<(usize, usize)> = Vec::new();
    let topo = raw.topology;
    let tp = [key("topology")];

    // Flow names first: the dumbbell derives host names from them.
    let mut seen = BTreeMap::new();
    for (i, f) in raw.flows.iter().enumerate() {
        let at = [key("flows"), Seg::Index(origin[i]), key("name")];
        if f.name.trim().is_empty() {
            return Err(cx.at(&at, "expected a non-empty flow name"));
        }
        if let Some(j) = seen.insert(f.name.clone(), i) {
            return Err(cx.at(
                &at,
                format!("flow name {:?} is already used by flows[{}]", f.name, origin[j]),
            ));
        }
    }
    if raw.flows.is_empty() {
        return Err(cx.at_str("flows", "the scenario has no flows: add at least one [[flows]] table"));
    }

    match topo.kind.as_str() {
        "dumbbell" => {
            for (k, present) in [
                ("nodes", !topo.nodes.is_empty()),
                ("links", !topo.links.is_empty()),
                ("wifi", !topo.wifi.is_empty()),
                ("cell", !topo.cell.is_empty()),
            ] {
                if present {
                    return Err(cx.at(
                        &join(&tp, &[key(k)]),
                        "only a `type = \"custom\"` topology has nodes, links, Wi-Fi BSSs and cells",
                    ));
                }
            }
            check_rate(cx, &join(&tp, &[key("rate")]), topo.rate)?;
            let (rate, trace, capacity) = capacity_of(
                cx,
                &tp,
                (topo.rate, topo.trace.as_deref(), topo.capacity.as_ref()),
                topo.rate_schedule.is_some(),
                (sc.seed, links.len(), sc.duration),
            )?;
            let rate = rate.ok_or_else(|| {
                cx.at(
                    &tp,
                    "required key `rate` is missing: the bottleneck rate, such as \"100Mbit\" (or a capacity `trace` or `capacity` process)",
                )
            })?;
            // Without its own capacity the reverse draws its own from the same process.
            let reverse_process = match (&topo.reverse_rate, &topo.reverse_trace) {
                (None, None) => capacity.clone(),
                _ => None,
            };
            let (reverse_rate, reverse_trace) = reverse_capacity(
                rate_or_trace(
                    cx,
                    &tp,
                    ("reverse_rate", topo.reverse_rate),
                    ("reverse_trace", topo.reverse_trace.as_deref()),
                    false,
                )?,
                &trace,
                reverse_process.is_some(),
            );
            check_rate(cx, &join(&tp, &[key("reverse_rate")]), topo.reverse_rate)?;
            check_rate(cx, &join(&tp, &[key("access_rate")]), topo.access_rate)?;
            let bdelay = topo.delay.unwrap_or(Dur::ZERO);
            let aqm = parse_aqm(
                cx,
                &join(&tp, &[key("aqm")]),
                topo.aqm,
                AqmConfig::Fifo(FifoConfig::default()),
            )?;
            let raqm = parse_aqm(
                cx,
                &join(&tp, &[key("reverse_aqm")]),
                topo.reverse_aqm,
                default_reverse_aqm(),
            )?;
            let ran = parse_ran(cx, &tp, (false, topo.ran.as_ref()), topo.harq.is_some())?;
            nodes.push(Node { name: "left".into() });
            nodes.push(Node { name: "right".into() });
            links.push(Link {
                name: "bottleneck".into(),
                from: 0,
                to: 1,
                rate: Some(rate),
                delay: bdelay,
                aqm,
                bottleneck: true,
                fault: parse_fault(cx, &join(&tp, &[key("fault")]), topo.fault.as_ref(), sc.duration)?,
                schedule: parse_rate_schedule(
                    cx,
                    &join(&tp, &[key("rate_schedule")]),
                    topo.rate_schedule.as_ref(),
                    Some(rate),
                    sc.duration,
                )?,
                loss: parse_loss(cx, &join(&tp, &[key("loss")]), topo.loss.as_ref())?,
                trace,
                capacity,
                harq: parse_harq(cx, &join(&tp, &[key("harq")]), topo.harq.as_ref())?,
                ran: ran.clone().map(|r| (r, l4s_link::RanDirection::Downlink)),
                rates: None,
                docsis: None,
                docsis_downstream: None,
                medium: None,
            });
            links.push(Link {
                name: "bottleneck-reverse".into(),
                from: 1,
                to: 0,
                rate: Some(reverse_rate.unwrap_or(rate)),
                delay: bdelay,
                aqm: raqm,
                bottleneck: false,
                fault: None,
                schedule: Default::default(),
                loss: None,
                trace: reverse_trace,
                capacity: reverse_process,
                harq: None,
                ran: ran.map(|r| (r, l4s_link::RanDirection::Uplink)),
                rates: None,
                docsis: None,
                docsis_downstream: None,
                medium: None,
            });
            for (i, f) in raw.flows.iter().enumerate() {
                let fp = [key("flows"), Seg::Index(origin[i])];
                for k in ["from", "to"] {
                    let given = if k == "from" { f.from.is_some() } else { f.to.is_some() };
                    if given {
                        return Err(cx.at(&join(&fp, &[key(k)]), "a dumbbell flow has its own hosts: `from`/`to` belong to a custom topology (set `rtt` instead)"));
                    }
                }
                let rtt = f.rtt.or(topo.rtt).ok_or_else(|| {
                    cx.at(
                        &fp,
                        "no base RTT: set `rtt` on the flow or a default `rtt` in [topology], such as \"20ms\"",
                    )
                })?;
                let rtt_at = if f.rtt.is_some() {
                    join(&fp, &[key("rtt")])
                } else {
                    join(&tp, &[key("rtt")])
                };
                if rtt.is_zero() {
                    return Err(cx.at(&rtt_at, "expected a base RTT above zero"));
                }
                let half = Dur(rtt.as_nanos() / 2);
                if half < bdelay {
                    return Err(cx.at(
                        &rtt_at,
                        format!("base RTT {rtt} is shorter than twice the bottleneck delay ({bdelay})"),
                    ));
                }
                let access = half - bdelay;
                let s = nodes.len();
                nodes.push(Node {
                    name: format!("{}.src", f.name),
                });
                let d = nodes.len();
                nodes.push(Node {
                    name: format!("{}.dst", f.name),
                });
                let fifo = || AqmConfig::Fifo(FifoConfig::default());
                links.push(Link::wire(
                    format!("{}.src->left", f.name),
                    s,
                    0,
                    topo.access_rate,
                    access,
                    fifo(),
                ));
                links.push(Link::wire(
                    format!("left->{}.src", f.name),
                    0,
                    s,
                    topo.access_rate,
                    access,
                    fifo(),
                ));
                links.push(Link::wire(
                    format!("right->{}.dst", f.name),
                    1,
                    d,
                    None,
                    Dur::ZERO,
                    fifo(),
                ));
                links.push(Link::wire(
                    format!("{}.dst->right", f.name),
                    d,
                    1,
                    None,
                    Dur::ZERO,
                    fifo(),
                ));
                flow_ends.push((s, d));
            }
        }
        "custom" => {
            for (k, present) in [
                ("rate", topo.rate.is_some()),
                ("delay", topo.delay.is_some()),
                ("rtt", topo.rtt.is_some()),
                ("aqm", topo.aqm.is_some()),
                ("access_rate", topo.access_rate.is_some()),
                ("reverse_rate", topo.reverse_rate.is_some()),
                ("reverse_aqm", topo.reverse_aqm.is_some()),
                ("fault", topo.fault.is_some()),
                ("rate_schedule", topo.rate_schedule.is_some()),
                ("loss", topo.loss.is_some()),
                ("trace", topo.trace.is_some()),
                ("reverse_trace", topo.reverse_trace.is_some()),
                ("capacity", topo.capacity.is_some()),
                ("harq", topo.harq.is_some()),
                ("ran", topo.ran.is_some()),
            ] {
                if present {
                    return Err(cx.at(&join(&tp, &[key(k)]), "this key belongs to a dumbbell; a custom topology sets rates, delays and queues on each [[topology.links]]"));
                }
            }
            if topo.nodes.is_empty() {
                return Err(cx.at(&tp, "a custom topology needs [[topology.nodes]] entries"));
            }
            let mut index = BTreeMap::new();
            for (i, n) in topo.nodes.iter().enumerate() {
                let at = [key("topology"), key("nodes"), Seg::Index(i), key("name")];
                if n.name.trim().is_empty() {
                    return Err(cx.at(&at, "expected a non-empty node name"));
                }
                if index.insert(n.name.clone(), i).is_some() {
                    return Err(cx.at(&at, format!("node name {:?} is used twice", n.name)));
                }
                nodes.push(Node { name: n.name.clone() });
            }
            let lookup = |at: &[Seg], n: &str| -> Result<usize, ScenarioError> {
                index.get(n).copied().ok_or_else(|| {
                    cx.at(
                        at,
                        format!(
                            "no node named {n:?}; the nodes are {}",
                            topo.nodes
                                .iter()
                                .map(|n| format!("{:?}", n.name))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )
                })
            };
            for (i, l) in topo.links.into_iter().enumerate() {
                let lp = [key("topology"), key("links"), Seg::Index(i)];
                add_custom_link(cx, &lp, l, &lookup, &mut links, (sc.seed, sc.duration))?;
            }
            let dscps: Vec<u8> = raw.flows.iter().map(|f| f.dscp.unwrap_or(0)).collect();
            for (i, w) in topo.wifi.into_iter().enumerate() {
                let wp = [key("topology"), key("wifi"), Seg::Index(i)];
                crate::wifi::add_wifi(cx, &wp, w, &lookup, &mut links, &dscps)?;
            }
            for (i, c) in topo.cell.into_iter().enumerate() {
                let cp = [key("topology"), key("cell"), Seg::Index(i)];
                crate::cell::add_cell(cx, &cp, c, &lookup, &mut links, (sc.seed, sc.duration))?;
            }
            for (i, f) in raw.flows.iter().enumerate() {
                let fp = [key("flows"), Seg::Index(origin[i])];
                if f.rtt.is_some() {
                    return Err(cx.at(
                        &join(&fp, &[key("rtt")]),
                        "in a custom topology the RTT follows from the links' delays: remove `rtt`",
                    ));
                }
                let from = f
                    .from
                    .as_deref()
                    .ok_or_else(|| cx.at(&fp, "required key `from` is missing: the sending node"))?;
                let to =
                    f.to.as_deref()
                        .ok_or_else(|| cx.at(&fp, "required key `to` is missing: the receiving node"))?;
                let s = lookup(&join(&fp, &[key("from")]), from)?;
                let d = lookup(&join(&fp, &[key("to")]), to)?;
                if s == d {
                    return Err(cx.at(&join(&fp, &[key("to")]), "a flow needs two different nodes"));
                }
                flow_ends.push((s, d));
            }
        }
        other => {
            return Err(cx.at(
                &join(&tp, &[key("type")]),
                format!("unknown topology type {other:?}: expected \"dumbbell\" or \"custom\""),
            ));
        }
    }

    // Every flow needs a path both ways.
    let routes = crate::Routes::compute(nodes.len(), &links);
    for (i, &(s, d)) in flow_ends.iter().enumerate() {
        for (a, b, dir) in [(s, d, "forward"), (d, s, "reverse")] {
            if !routes.reachable(a, b) {
                return Err(cx.at(
                    &[key("flows"), Seg::Index(origin[i])],
                    format!(
                        "no {dir} path from node {:?} to {:?}: add links (bidirectional = true) between them",
                        nodes[a].name, nodes[b].name
                    ),
                ));
            }
        }
    }

    let mut flows = Vec::new();
    for (i, (f, &(s, d))) in raw.flows.into_iter().zip(flow_ends.iter()).enumerate() {
        flows.push(build_flow(cx, origin[i], f, s, d, sc.duration)?);
    }

    let mut scenario = Scenario {
        name,
        description: sc.description.clone(),
        file: cx.file.display().to_string(),
        duration: sc.duration,
        warmup: sc.warmup,
        seed: sc.seed,
        nodes,
        links,
        flows,
        routes,
    };
    // What the run draws that the loader has not: a reverse direction's draw of its
    // forward's process, and a cellular link's rate per millisecond.
    scenario
        .draw_missing_capacities()
        .map_err(|e| cx.at_str("topology", e))?;
    Ok(scenario)
}

/// Resolves a node name (with the key path to blame) to its index.
pub(crate) type NodeLookup<'a> = dyn Fn(&[Seg], &str) -> Result<usize, ScenarioError> + 'a;

pub(crate) fn add_custom_link(
    cx: &ErrCtx,
    lp: &[Seg],
    l: LinkTable,
    lookup: &NodeLookup,
    links: &mut Vec<Link>,
    (seed, duration): (u64, Dur),
) -> Result<(), ScenarioError> {
    let a = lookup(&join(lp, &[key("from")]), &l.from)?;
    let b = lookup(&join(lp, &[key("to")]), &l.to)?;
    if a == b {
        return Err(cx.at(&join(lp, &[key("to")]), "a link needs two different nodes"));
    }
    check_rate(cx, &join(lp, &[key("rate")]), l.rate)?;
    check_rate(cx, &join(lp, &[key("reverse_rate")]), l.reverse_rate)?;
    let (rate, trace, capacity) = capacity_of(
        cx,
        lp,
        (l.rate, l.trace.as_deref(), l.capacity.as_ref()),
        l.rate_schedule.is_some(),
        (seed, links.len(), duration),
    )?;
    // Without its own capacity the reverse draws its own from the same process.
    let reverse_process = match (&l.reverse_rate, &l.reverse_trace) {
        (None, None) => capacity.clone(),
        _ => None,
    };
    let (reverse_rate, reverse_trace) = reverse_capacity(
        rate_or_trace(
            cx,
            lp,
            ("reverse_rate", l.reverse_rate),
            ("reverse_trace", l.reverse_trace.as_deref()),
            false,
        )?,
        &trace,
        reverse_process.is_some(),
    );
    let name = l.name.clone().unwrap_or_else(|| format!("{}->{}", l.from, l.to));
    let cellular = parse_link_kind(cx, lp, l.kind.as_deref(), l.ran.is_some())?;
    let (docsis, docsis_downstream) = match parse_docsis(cx, lp, &l)? {
        Some((up, down)) => (Some(up), Some(down)),
        None => (None, None),
    };
    let ran = parse_ran(cx, lp, (cellular, l.ran.as_ref()), l.harq.is_some())?;
    if ran.is_some() && rate.is_none() {
        return Err(cx.at(
            lp,
            "a cellular link needs a capacity: a `rate` (the downlink's mean), a `trace` or a `capacity` process",
        ));
    }
    let has_aqm = l.aqm.is_some();
    let aqm = parse_aqm(
        cx,
        &join(lp, &[key("aqm")]),
        l.aqm,
        AqmConfig::Fifo(FifoConfig::default()),
    )?;
    if has_aqm && rate.is_none() {
        return Err(cx.at(
            &join(lp, &[key("aqm")]),
            "a queue discipline needs a link `rate` (a link without a rate never queues)",
        ));
    }
    if links.iter().any(|x| x.from == a && x.to == b) {
        return Err(cx.at(lp, format!("there is already a link from {:?} to {:?}", l.from, l.to)));
    }
    // Queues, snapshots, `set` paths and campaign columns are named after links: two of one
    // name could not be told apart. A bidirectional link's reverse is "<name>-reverse".
    let reverse = format!("{name}-reverse");
    let taken = |n: &str| {
        links
            .iter()
            .any(|x| x.name == n || x.medium.as_ref().is_some_and(|m| m.name == n))
    };
    for (n, what) in [(&name, "the name"), (&reverse, "its reverse direction's name")] {
        if (n == &name || l.bidirectional) && taken(n) {
            return Err(cx.at(
                &join(lp, &[key("name")]),
                format!("{what} {n:?} is already used by another link: give each link a name of its own"),
            ));
        }
    }
    links.push(Link {
        name: name.clone(),
        from: a,
        to: b,
        rate,
        delay: l.delay,
        aqm,
        bottleneck: has_aqm || trace.is_some() || ran.is_some(),
        fault: parse_fault(cx, &join(lp, &[key("fault")]), l.fault.as_ref(), duration)?,
        schedule: parse_rate_schedule(
            cx,
            &join(lp, &[key("rate_schedule")]),
            l.rate_schedule.as_ref(),
            rate,
            duration,
        )?,
        loss: parse_loss(cx, &join(lp, &[key("loss")]), l.loss.as_ref())?,
        trace,
        capacity,
        harq: parse_harq(cx, &join(lp, &[key("harq")]), l.harq.as_ref())?,
        ran: ran.clone().map(|r| (r, l4s_link::RanDirection::Downlink)),
        rates: None,
        docsis: None,
        docsis_downstream,
        medium: None,
    });
    if l.bidirectional {
        let mut raqm = parse_aqm(
            cx,
            &join(lp, &[key("reverse_aqm")]),
            l.reverse_aqm,
            AqmConfig::Fifo(FifoConfig::default()),
        )?;
        // A DOCSIS upstream's dual queue estimates the LL delay with the virtual queue,
        // aligned with the modem's request–grant loop (MULPI Annex N.3).
        if let Some(d) = &docsis {
            d.fit_modem_queue(&mut raqm);
        }
        links.push(Link {
            name: format!("{name}-reverse"),
            from: b,
            to: a,
            rate: reverse_rate.or(rate),
            delay: l.reverse_delay.unwrap_or(l.delay),
            aqm: raqm,
            bottleneck: ran.is_some() || docsis.is_some(),
            fault: None,
            schedule: Default::default(),
            loss: None,
            trace: reverse_trace,
            capacity: reverse_process,
            harq: None,
            ran: ran.map(|r| (r, l4s_link::RanDirection::Uplink)),
            rates: None,
            docsis,
            docsis_downstream: None,
            medium: None,
        });
    } else {
        for (k, p) in [
            ("reverse_rate", l.reverse_rate.is_some()),
            ("reverse_delay", l.reverse_delay.is_some()),
            ("reverse_aqm", l.reverse_aqm.is_some()),
            ("reverse_trace", l.reverse_trace.is_some()),
        ] {
            if p {
                return Err(cx.at(
                    &join(lp, &[key(k)]),
                    "only a bidirectional link has a reverse direction",
                ));
            }
        }
    }
    Ok(())
}

/// Build flow `f`; `i` is the index of its table as written (for errors).
fn build_flow(
    cx: &ErrCtx,
    i: usize,
    f: FlowTable,
    src: usize,
    dst: usize,
    duration: Dur,
) -> Result<Flow, ScenarioError> {
    let fp = [key("flows"), Seg::Index(i)];
    let at = |k: &str| join(&fp, &[key(k)]);
    if f.start >= duration {
        return Err(cx.at(
            &at("start"),
            format!("the flow starts at {} but the run ends at {duration}", f.start),
        ));
    }
    if let Some(stop) = f.stop {
        if stop <= f.start {
            return Err(cx.at(&at("stop"), format!("stop ({stop}) must be after start ({})", f.start)));
        }
    }
    let reject = |k: &str, present: bool, kind: &str| -> Result<(), ScenarioError> {
        if present {
            Err(cx.at(&at(k), format!("`{k}` does not apply to a {kind} flow")))
        } else {
            Ok(())
        }
    };
    let kind_name = f.kind.clone();
    let written = written_settings(&[
        ("sender", &f.sender),
        ("receiver", &f.receiver),
        ("cc_params", &f.cc_params),
    ]);
    let (kind, nominal_ecn) = match kind_name.as_str() {
        "tcp" => {
            for (k, p) in [
                ("pps", f.pps.is_some()),
                ("size", f.size.is_some()),
                ("profile", f.profile.is_some()),
                ("media", f.media.is_some()),
                ("app", f.app.is_some()),
            ] {
                reject(k, p, "tcp")?;
            }
            let cc =
                f.cc.clone()
                    .ok_or_else(|| cx.at(&fp, format!("required key `cc` is missing: one of {}", cc_names())))?;
            if !l4s_cc::factory::NAMES.contains(&cc.as_str()) {
                return Err(cx.at(
                    &at("cc"),
                    format!("unknown congestion control {cc:?}: expected one of {}", cc_names()),
                ));
            }
            let ecn = match f.ecn.as_deref() {
                None | Some("auto") => TcpEcn::Auto,
                Some("off") | Some("none") => TcpEcn::Off,
                Some("classic") | Some("rfc3168") => TcpEcn::Classic,
                Some("accecn") | Some("accurate") => TcpEcn::Accurate,
                Some(other) => {
                    return Err(cx.at(&at("ecn"), format!("unknown ECN mode {other:?} for a tcp flow: expected \"auto\", \"off\", \"classic\" or \"accecn\"")))
                }
            };
            let bytes = match &f.bytes {
                None => None,
                Some(b) => {
                    let n = units::parse_bytes(b).map_err(|e| cx.at(&at("bytes"), e))?;
                    if n == 0 {
                        return Err(cx.at(&at("bytes"), "expected a size above zero"));
                    }
                    Some(n)
                }
            };
            crate::flows::tcp(cx, &fp, cc, ecn, bytes, f.cc_params, f.sender, f.receiver)?
        }
        "udp-prague" => {
            for (k, p) in [
                ("cc", f.cc.is_some()),
                ("cc_params", f.cc_params.is_some()),
                ("ecn", f.ecn.is_some()),
                ("pps", f.pps.is_some()),
                ("size", f.size.is_some()),
                ("bytes", f.bytes.is_some()),
                ("profile", f.profile.is_some()),
                ("media", f.media.is_some()),
                ("app", f.app.is_some()),
            ] {
                reject(k, p, "udp-prague")?;
            }
            crate::flows::udp_prague(cx, &fp, f.sender, f.receiver)?
        }
        "probe" | "cbr" => {
            for (k, p) in [
                ("cc", f.cc.is_some()),
                ("cc_params", f.cc_params.is_some()),
                ("bytes", f.bytes.is_some()),
                ("receiver", f.receiver.is_some()),
                ("media", f.media.is_some()),
                ("app", f.app.is_some()),
            ] {
                reject(k, p, &kind_name)?;
            }
            // A cbr flow is a constant-rate real-time stream (game state updates, VoIP):
            // measured like a probe, with presets for its rate and size.
            let (def_pps, def_size) = match (kind_name.as_str(), f.profile.as_deref()) {
                ("probe", None) => (64.0, 200),
                ("probe", Some(_)) => {
                    return Err(cx.at(
                        &at("profile"),
                        "`profile` does not apply to a probe flow (use type = \"cbr\")",
                    ))
                }
                (_, None) => {
                    return Err(cx.at(
                        &fp,
                        format!("required key `profile` is missing: one of {}", cbr_profiles()),
                    ))
                }
                (_, Some(p)) => match CBR_PROFILES.iter().find(|(n, _, _)| *n == p) {
                    Some(&(_, pps, size)) => (pps, size),
                    None => {
                        return Err(cx.at(
                            &at("profile"),
                            format!("unknown cbr profile {p:?}: expected one of {}", cbr_profiles()),
                        ))
                    }
                },
            };
            let pps = f.pps.unwrap_or(def_pps);
            if !(pps.is_finite() && (1.0..=1e7).contains(&pps)) {
                return Err(cx.at(
                    &at("pps"),
                    "expected a packet rate from 1 to 10000000 packets per second",
                ));
            }
            let size = match &f.size {
                None => def_size,
                Some(s) => units::parse_bytes(s).map_err(|e| cx.at(&at("size"), e))?,
            };
            if !(64..=9014).contains(&size) {
                return Err(cx.at(
                    &at("size"),
                    format!("expected a frame size from 64B to 9014B, found {size}B"),
                ));
            }
            let ecn = match f.ecn.as_deref() {
                None => Ecn::NotEct,
                Some(s) => Ecn::parse(s).ok_or_else(|| {
                    cx.at(
                        &at("ecn"),
                        format!("unknown codepoint {s:?}: expected \"not-ect\", \"ect0\", \"ect1\" or \"ce\""),
                    )
                })?,
            };
            crate::flows::probe(cx, &fp, pps, size as u32, ecn, f.profile.clone(), f.sender)?
        }
        "bulk" | "sync" | "request-response" | "web" | "query" => {
            for (k, p) in [
                ("pps", f.pps.is_some()),
                ("size", f.size.is_some()),
                ("profile", f.profile.is_some()),
                ("media", f.media.is_some()),
            ] {
                reject(k, p, &kind_name)?;
            }
            crate::flows::app(
                cx,
                &fp,
                &kind_name,
                f.cc.clone(),
                f.ecn.clone(),
                f.bytes.clone(),
                f.sender,
                f.receiver,
                f.cc_params,
                f.app,
                duration,
            )?
        }
        "media" => {
            for (k, p) in [
                ("cc_params", f.cc_params.is_some()),
                ("bytes", f.bytes.is_some()),
                ("pps", f.pps.is_some()),
                ("size", f.size.is_some()),
                ("sender", f.sender.is_some()),
                ("receiver", f.receiver.is_some()),
                ("app", f.app.is_some()),
            ] {
                reject(k, p, "media")?;
            }
            crate::flows::media(
                cx,
                &fp,
                f.profile.clone(),
                f.cc.clone(),
                f.ecn.clone(),
                f.media,
                duration,
            )?
        }
        other => {
            return Err(cx.at(
                &at("type"),
                format!(
                    "unknown flow type {other:?}: expected one of {}",
                    FLOW_TYPES
                        .iter()
                        .map(|t| format!("{t:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    };
    Ok(Flow {
        name: f.name,
        src,
        dst,
        start: f.start,
        stop: f.stop,
        dscp: match f.dscp {
            Some(d) if d > 63 => return Err(cx.at(&at("dscp"), format!("expected a DSCP from 0 to 63, found {d}"))),
            Some(d) => d,
            None => 0,
        },
        latency_budget: match f.latency_budget {
            Some(b) if b.is_zero() => {
                return Err(cx.at(&at("latency_budget"), "expected a budget above zero, such as \"50ms\""))
            }
            b => b,
        },
        port: f.port.unwrap_or(match kind_name.as_str() {
            "tcp" => 5201,
            _ => 5000,
        }),
        kind,
        nominal_ecn,
        written,
    })
}

/// The settings a flow's tables give, as `table.key` and the value's TOML text, in the
/// order of the tables and then of the keys.
fn written_settings(tables: &[(&str, &Option<toml::Table>)]) -> Vec<(String, String)> {
    tables
        .iter()
        .filter_map(|(name, t)| t.as_ref().map(|t| (name, t)))
        .flat_map(|(name, t)| t.iter().map(move |(k, v)| (format!("{name}.{k}"), v.to_string())))
        .collect()
}

/// Every flow `type` a scenario may use.
pub const FLOW_TYPES: &[&str] = &[
    "tcp",
    "udp-prague",
    "probe",
    "cbr",
    "media",
    "bulk",
    "sync",
    "request-response",
    "web",
    "query",
];

/// `cbr` presets: (name, packets per second, frame bytes). `voip`: one 20 ms G.711 frame
/// per packet (160 B of audio + 12 RTP + 8 UDP + 20 IPv4 + 14 Ethernet = 214 B, RFC 3551
/// §4.5.14). `game`: 60 state updates per second of about 250 B of payload, typical of
/// fast-paced online games' server updates.
pub const CBR_PROFILES: &[(&str, f64, u64)] = &[("voip", 50.0, 214), ("game", 60.0, 300)];

fn cbr_profiles() -> String {
    CBR_PROFILES
        .iter()
        .map(|(n, _, _)| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn cc_names() -> String {
    l4s_cc::factory::NAMES
        .iter()
        .map(|k| format!("\"{k}\""))
        .collect::<Vec<_>>()
        .join(", ")
}
