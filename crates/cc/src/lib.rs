//! # l4s-cc
//!
//! Sans-IO congestion controllers. Each is a plain state machine fed [`AckSample`]s and
//! loss events with the current time; none reads a clock.
//!
//! * [`reno::Reno`]: RFC 5681/6582 with RFC 3168 ECN and optional RFC 8511 ABE;
//! * [`cubic::Cubic`]: RFC 9438;
//! * [`dctcp::Dctcp`]: RFC 8257;
//! * [`prague::Prague`]: TCP Prague v0.7 (L4STeam/linux `tcp_prague.c`);
//! * [`udp_prague::UdpPragueCc`]: the L4STeam udp_prague `PragueCC` controller (`prague_cc.cpp`);
//! * [`factory::build`]: construct a window controller by name.

#![forbid(unsafe_code)]

pub mod api;
pub mod cubic;
pub mod dctcp;
pub mod factory;
pub mod prague;
pub mod reno;
pub mod udp_prague;

#[cfg(test)]
mod testutil;

pub use api::{AckSample, CcInfo, CongestionControl, EcnMode};
pub use factory::{build, CcParams, NAMES};
