//! A link from its description: the wire's rate, delay, queue, fault and rate schedule
//! (or a capacity trace instead of the rate), and an optional loss model around it.

use crate::{
    Cellular, GilbertElliott, GilbertElliottConfig, Harq, HarqConfig, Link, LinkPacket, RanCapacity, RanConfig,
    RanDirection, RateSchedule, Trace, TraceLink, Wired,
};
use l4s_aqm::AqmConfig;
use l4s_core::{Dur, Rate, Rng};
use std::sync::Arc;

/// Loss on the wire.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LossModel {
    GilbertElliott(GilbertElliottConfig),
}

/// Everything a link is built from.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkConfig {
    /// `None`: unlimited (no queue, no serialiser).
    pub rate: Option<Rate>,
    pub delay: Dur,
    pub aqm: AqmConfig,
    pub fault: Option<crate::Fault>,
    pub schedule: RateSchedule,
    pub loss: Option<LossModel>,
    /// Longest lateness a real-time driver's serialiser makes up for (see [`crate::wired`]).
    pub max_lag: Dur,
    /// Capacity as delivery opportunities ([`crate::trace`]) instead of `rate` and
    /// `schedule`.
    pub trace: Option<Arc<Trace>>,
    /// HARQ retransmissions with in-order delivery ([`crate::harq`]), inside the loss model.
    pub harq: Option<HarqConfig>,
    /// A cellular radio link ([`crate::cellular`]) in this direction instead of a wire: its
    /// capacity is `rates`', or `trace`'s, or else `rate` with `schedule`; its HARQ is the
    /// RAN's own (`harq` still wraps it if given).
    pub ran: Option<(RanConfig, RanDirection)>,
    /// A cellular link's capacity as its rate in each millisecond (bit/s), before `trace`.
    pub rates: Option<Arc<Vec<f64>>>,
    /// A DOCSIS upstream ([`crate::docsis`]) in this direction instead of a wire; `rate` is
    /// not used (the service flow's rates are in it).
    pub docsis: Option<crate::DocsisUpstream>,
    /// A DOCSIS downstream ([`crate::docsis_downstream`]) in this direction instead of a
    /// wire; `rate` is not used (the service flow's rates are in it).
    pub docsis_downstream: Option<crate::DocsisDownstream>,
    /// A Wi-Fi BSS ([`crate::wifi::bss`]) instead of a wire: one link with a port for the
    /// access point and one per station; `rate`, `delay` and `aqm` are not used (its
    /// queues and PHY rates are in it).
    pub wifi: Option<Arc<crate::wifi::BssConfig>>,
    /// A cell of several UEs ([`crate::cell`]) instead of a wire: one link with a port for
    /// the base station and one per UE; `rate`, `delay` and `aqm` are not used (its
    /// capacities, delay and queues are in it).
    pub cell: Option<Arc<crate::CellConfig>>,
}

impl LinkConfig {
    /// The capacity a cellular direction of this configuration serves: `rates`', or
    /// `trace`'s, or else `rate` with `schedule`.
    pub fn ran_capacity(&self) -> RanCapacity {
        match (&self.rates, &self.trace) {
            (Some(r), _) => RanCapacity::PerMs(r.clone()),
            (None, Some(t)) => RanCapacity::Trace(t.clone()),
            (None, None) => RanCapacity::Rate {
                rate: self.rate.unwrap_or(Rate::ZERO),
                schedule: self.schedule.clone(),
            },
        }
    }

    /// A wire of this rate and delay with this queue; no fault, schedule or loss.
    pub fn new(rate: Option<Rate>, delay: Dur, aqm: AqmConfig) -> LinkConfig {
        LinkConfig {
            rate,
            delay,
            aqm,
            fault: None,
            schedule: RateSchedule::default(),
            loss: None,
            max_lag: Dur::from_millis(2),
            trace: None,
            harq: None,
            ran: None,
            rates: None,
            docsis: None,
            docsis_downstream: None,
            wifi: None,
            cell: None,
        }
    }
}

/// Build a link. `rng` seeds the queue discipline exactly as [`l4s_aqm::build`] would; a
/// loss model draws from its own stream derived from it.
pub fn build<P: LinkPacket + 'static>(cfg: &LinkConfig, rng: Rng) -> Box<dyn Link<P>> {
    let loss_seed = rng.clone().next_u64();
    if let Some(w) = &cfg.wifi {
        // A configuration that fails its own validation carries no traffic (the scenario
        // layer refuses such a file before a run, naming the key).
        return match crate::wifi::Bss::new(w, rng) {
            Ok(b) => Box::new(b),
            Err(_) => Box::new(crate::Inert),
        };
    }
    if let Some(c) = &cfg.cell {
        return match crate::Cell::new(c, rng) {
            Ok(c) => Box::new(c),
            Err(_) => Box::new(crate::Inert),
        };
    }
    let wire: Box<dyn Link<P>> = match (&cfg.ran, &cfg.trace) {
        _ if cfg.docsis.is_some() => Box::new(crate::DocsisUpstreamLink::new(
            cfg.docsis.clone().unwrap_or_default(),
            cfg.delay,
            &cfg.aqm,
            cfg.fault,
            rng,
        )),
        _ if cfg.docsis_downstream.is_some() => Box::new(crate::DocsisDownstreamLink::new(
            cfg.docsis_downstream.clone().unwrap_or_default(),
            cfg.delay,
            &cfg.aqm,
            cfg.fault,
            rng,
        )),
        (Some((ran, dir)), _) => Box::new(Cellular::new(
            *dir,
            ran.clone(),
            cfg.ran_capacity(),
            cfg.delay,
            &cfg.aqm,
            cfg.fault,
            rng,
        )),
        (None, Some(t)) => Box::new(TraceLink::new(t.clone(), cfg.delay, &cfg.aqm, cfg.fault, rng)),
        (None, None) => Box::new(Wired::new(
            cfg.rate,
            cfg.delay,
            &cfg.aqm,
            cfg.fault,
            cfg.schedule.clone(),
            cfg.max_lag,
            rng,
        )),
    };
    let wire: Box<dyn Link<P>> = match cfg.harq {
        None => wire,
        Some(h) => Box::new(Harq::new(wire, h, Rng::derive(loss_seed, 0x4a52))),
    };
    match cfg.loss {
        None => wire,
        Some(LossModel::GilbertElliott(ge)) => Box::new(GilbertElliott::new(wire, ge, Rng::derive(loss_seed, 0x6745))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{drive_started, Pkt, Seen};
    use l4s_aqm::{DualPi2Config, FifoConfig};
    use l4s_core::{Ecn, Time};

    /// Every kind of link, each with a deep FIFO and with DualPI2.
    fn every_kind() -> Vec<(String, LinkConfig)> {
        let mut kinds = Vec::new();
        let ran = RanConfig {
            harq: Some(HarqConfig {
                bler: 0.1,
                rtt: Dur::from_millis(8),
            }),
            ..RanConfig::default()
        };
        let tdd = RanConfig {
            tdd: crate::cellular::parse_tdd("DDDSU").expect("pattern"),
            ..ran.clone()
        };
        for (q, aqm) in [
            (
                "fifo",
                AqmConfig::Fifo(FifoConfig {
                    limit: 10_000,
                    ..Default::default()
                }),
            ),
            ("dualpi2", AqmConfig::DualPi2(DualPi2Config::default())),
        ] {
            let base = LinkConfig::new(Some(Rate::mbps(12)), Dur::from_millis(5), aqm);
            kinds.push((format!("wire/{q}"), base.clone()));
            kinds.push((
                format!("docsis-upstream/{q}"),
                LinkConfig {
                    docsis: Some(crate::DocsisUpstream {
                        max_sustained_rate: Some(Rate::mbps(12)),
                        ..Default::default()
                    }),
                    ..base.clone()
                },
            ));
            kinds.push((
                format!("docsis-downstream/{q}"),
                LinkConfig {
                    docsis_downstream: Some(crate::DocsisDownstream {
                        max_sustained_rate: Some(Rate::mbps(12)),
                        ..Default::default()
                    }),
                    ..base.clone()
                },
            ));
            kinds.push((
                format!("trace/{q}"),
                LinkConfig {
                    trace: Some(Arc::new(Trace::new(vec![1]).expect("trace"))),
                    ..base.clone()
                },
            ));
            for (name, r) in [("fdd", &ran), ("tdd", &tdd)] {
                for dir in [RanDirection::Downlink, RanDirection::Uplink] {
                    kinds.push((
                        format!("cellular-{name}-{dir:?}/{q}"),
                        LinkConfig {
                            ran: Some((r.clone(), dir)),
                            ..base.clone()
                        },
                    ));
                    kinds.push((
                        format!("cellular-{name}-{dir:?}-per-ms/{q}"),
                        LinkConfig {
                            ran: Some((r.clone(), dir)),
                            rates: Some(Arc::new(vec![12e6; 1_000])),
                            ..base.clone()
                        },
                    ));
                }
            }
        }
        kinds
    }

    /// A live forwarder takes packets before it learns the run's time 0, on a monotonic
    /// clock far from zero, and starts its links with that origin a little in the past.
    /// Every kind of link carries what it was given before, across and after its start:
    /// nothing is held back for good (an uplink once kept an SR counted on the grid of
    /// before its origin, a day of slots away, and never sent again).
    #[test]
    fn every_link_carries_packets_offered_before_its_start() {
        let t0 = Time::from_secs(86_400);
        let start = (t0 + Dur::from_millis(2_500), t0 + Dur::from_secs(2));
        for (name, cfg) in every_kind() {
            let mut link = build::<Pkt>(&cfg, Rng::new(3));
            // 6 Mbit/s: a packet of 1514 bytes every 2 ms, for 6 s.
            let offers: Vec<_> = (0..3_000u64)
                .map(|i| {
                    let p = Pkt {
                        id: i,
                        size: 1514,
                        ecn: Ecn::Ect1,
                    };
                    (t0 + Dur::from_millis(2 * i), 0, 1, p)
                })
                .collect();
            let sent: Vec<Time> = offers.iter().map(|o| o.0).collect();
            let out = drive_started(
                link.as_mut(),
                start,
                offers,
                t0 + Dur::from_secs(7),
                &mut Seen::default(),
            );
            assert_eq!(out.len(), 3_000, "{name}: {} of 3000 delivered", out.len());
            let worst = out
                .iter()
                .map(|(at, _, p)| at.since(sent[p.id as usize]))
                .max()
                .unwrap_or(Dur::ZERO);
            assert!(worst < Dur::from_millis(100), "{name}: a packet took {worst}");
        }
    }
}
