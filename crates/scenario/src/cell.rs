//! `[[topology.cell]]`: a cell of several UEs, expanded into one cellular link each way
//! between the base station's node and each UE's node, all crossing one shared model
//! ([`l4s_link::Cell`]).

use crate::error::{ErrCtx, Seg};
use crate::file::{CellTable, LinkTable};
use crate::load::{add_custom_link, join, key, parse_aqm, parse_ran, NodeLookup};
use crate::{Link, MediumPort, ScenarioError};
use l4s_aqm::config::{AqmConfig, FifoConfig};
use l4s_core::Dur;
use l4s_link::{CellConfig, CellScheduler, CellUe, ConfiguredGrant, RanCapacity, RanDirection};
use std::sync::Arc;

/// The proportional-fair scheduler's averaging window when none is given: about the ns-3
/// LTE module's 99 TTIs of 1 ms.
pub const DEFAULT_PF_WINDOW: Dur = Dur::from_millis(100);

/// Add cell `c` (at `at` in the file): two links per UE, the first the owner of the shared
/// model. The UEs' capacities are filled in when the run's capacities are drawn
/// (`Scenario::draw_capacities`).
pub(crate) fn add_cell(
    cx: &ErrCtx,
    at: &[Seg],
    c: CellTable,
    lookup: &NodeLookup,
    links: &mut Vec<Link>,
    seed_duration: (u64, Dur),
) -> Result<(), ScenarioError> {
    let name = c.name.clone().unwrap_or_else(|| "cell".to_string());
    let bs = lookup(&join(at, &[key("base_station")]), &c.base_station)?;
    let ran = parse_ran(cx, at, (true, c.ran.as_ref()), false)?.unwrap_or_default();
    let scheduler = match c.scheduler.as_deref() {
        None | Some("pf") | Some("proportional-fair") => CellScheduler::ProportionalFair {
            window: c.pf_window.unwrap_or(DEFAULT_PF_WINDOW),
        },
        Some("rr") | Some("round-robin") => {
            if c.pf_window.is_some() {
                return Err(cx.at(
                    &join(at, &[key("pf_window")]),
                    "`pf_window` belongs to the proportional-fair scheduler (scheduler = \"pf\")",
                ));
            }
            CellScheduler::RoundRobin
        }
        Some(other) => {
            return Err(cx.at(
                &join(at, &[key("scheduler")]),
                format!("expected \"pf\" (proportional fair) or \"rr\" (round robin), found {other:?}"),
            ))
        }
    };
    let fifo = || AqmConfig::Fifo(FifoConfig::default());
    let aqm = parse_aqm(cx, &join(at, &[key("aqm")]), c.aqm, fifo())?;
    let ue_aqm = parse_aqm(cx, &join(at, &[key("ue_aqm")]), c.ue_aqm, fifo())?;
    if c.ues.is_empty() {
        return Err(cx.at(&join(at, &[key("ues")]), "expected at least one [[topology.cell.ues]]"));
    }
    let delay = c.delay.unwrap_or(Dur::ZERO);
    let owner = links.len();
    let mut nodes = vec![bs];
    let mut ues = Vec::with_capacity(c.ues.len());
    for (j, ue) in c.ues.into_iter().enumerate() {
        let up = join(at, &[key("ues"), Seg::Index(j)]);
        let n = lookup(&join(&up, &[key("node")]), &ue.node)?;
        if n == bs || nodes.contains(&n) {
            return Err(cx.at(
                &join(&up, &[key("node")]),
                format!(
                    "node {:?} is already in the cell (as its base station or a UE)",
                    ue.node
                ),
            ));
        }
        nodes.push(n);
        let configured_grant = match ue.configured_grant {
            None => {
                let orphan = [
                    ("configured_grant_offset", ue.configured_grant_offset.is_some()),
                    ("configured_grant_share", ue.configured_grant_share.is_some()),
                ];
                if let Some((k, _)) = orphan.iter().find(|o| o.1) {
                    return Err(cx.at(
                        &join(&up, &[key(k)]),
                        format!("`{k}` belongs to a configured grant: set `configured_grant` (its period) too"),
                    ));
                }
                None
            }
            Some(period) => {
                let cg = ConfiguredGrant {
                    period,
                    offset: ue.configured_grant_offset.unwrap_or(Dur::ZERO),
                    share: ue.configured_grant_share.unwrap_or(1.0),
                };
                cg.validate(&ran).map_err(|(k, m)| cx.at(&join(&up, &[key(k)]), m))?;
                Some(cg)
            }
        };
        let table = LinkTable {
            name: Some(format!("{name}/{}", ue.node)),
            from: c.base_station.clone(),
            to: ue.node.clone(),
            rate: ue.rate,
            delay,
            aqm: None,
            bidirectional: true,
            reverse_rate: ue.reverse_rate,
            reverse_delay: None,
            reverse_aqm: None,
            fault: None,
            rate_schedule: ue.rate_schedule,
            loss: None,
            trace: ue.trace,
            reverse_trace: ue.reverse_trace,
            capacity: ue.capacity,
            harq: None,
            kind: Some("cellular".to_string()),
            ran: None,
            docsis: None,
        };
        add_custom_link(cx, &up, table, lookup, links, seed_duration)?;
        let k = links.len();
        links[k - 2].aqm = aqm.clone();
        links[k - 1].aqm = ue_aqm.clone();
        links[k - 2].ran = Some((ran.clone(), RanDirection::Downlink));
        // The shared model is reported once, under its owner (as a Wi-Fi BSS is).
        links[k - 2].bottleneck = k - 2 == owner;
        links[k - 1].bottleneck = false;
        links[k - 1].ran = Some((ran.clone(), RanDirection::Uplink));
        let placeholder = RanCapacity::PerMs(Arc::new(Vec::new()));
        ues.push(CellUe {
            name: ue.node,
            down: placeholder.clone(),
            up: placeholder,
            configured_grant,
        });
    }
    let cfg = CellConfig {
        ran,
        scheduler,
        ues,
        delay,
        aqm,
        ue_aqm,
    };
    cfg.validate().map_err(|(k, m)| {
        let path = match k {
            "ues" | "pf_window" => join(at, &[key(k)]),
            _ => join(at, &[key("ran"), key(k)]),
        };
        cx.at(&path, m)
    })?;
    let cfg = Arc::new(cfg);
    let nodes = Arc::new(nodes);
    for (i, l) in links[owner..].iter_mut().enumerate() {
        let ue = i / 2 + 1;
        let (from, to) = if i % 2 == 0 { (0, ue) } else { (ue, 0) };
        l.medium = Some(MediumPort {
            name: name.clone(),
            owner,
            from,
            to,
            nodes: nodes.clone(),
            wifi: None,
            cell: Some(cfg.clone()),
        });
    }
    Ok(())
}
