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
}

impl LinkConfig {
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
        }
    }
}

/// Build a link. `rng` seeds the queue discipline exactly as [`l4s_aqm::build`] would; a
/// loss model draws from its own stream derived from it.
pub fn build<P: LinkPacket + 'static>(cfg: &LinkConfig, rng: Rng) -> Box<dyn Link<P>> {
    let loss_seed = rng.clone().next_u64();
    let wire: Box<dyn Link<P>> = match (&cfg.ran, &cfg.trace) {
        (Some((ran, dir)), _) => {
            let capacity = match (&cfg.rates, &cfg.trace) {
                (Some(r), _) => RanCapacity::PerMs(r.clone()),
                (None, Some(t)) => RanCapacity::Trace(t.clone()),
                (None, None) => RanCapacity::Rate {
                    rate: cfg.rate.unwrap_or(Rate::ZERO),
                    schedule: cfg.schedule.clone(),
                },
            };
            Box::new(Cellular::new(
                *dir,
                ran.clone(),
                capacity,
                cfg.delay,
                &cfg.aqm,
                cfg.fault,
                rng,
            ))
        }
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
