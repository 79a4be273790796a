//! # l4s-aqm
//!
//! Sans-IO queue disciplines for l4s-lab. Every discipline implements [`Qdisc`] over any
//! packet type that implements [`l4s_core::QueuePacket`]; none reads a clock or a global, and
//! randomness comes only from the [`l4s_core::Rng`] handed to its constructor.
//!
//! | kind | module | reference |
//! |---|---|---|
//! | `dualpi2` | [`dualpi2`] | RFC 9332 (+ Appendix A options), Linux `sch_dualpi2` |
//! | `fifo` | [`fifo`] | tail drop |
//! | `pie` | [`pie`] | RFC 8033, Linux `sch_pie` |
//! | `codel` | [`codel`] | RFC 8289 |
//! | `fq-codel` | [`fq_codel`] | RFC 8290, Linux `sch_fq_codel` |
//! | `classic-ecn` | [`classic_ecn`] | RFC 3168 single-queue ECN AQM (RFC 9330 §4.3 hazard) |
//! | `docsis-dualq` | [`docsis_dualq`] | Low Latency DOCSIS: DOCSIS-PIE + IAQM, coupled, WRR 230/256, Queue Protection (MULPI Annexes M–P, RFC 9957) |
//! | `l4s-marker` | [`l4s_marker`] | a RAN's L4S marker: a step or ramp on sojourn for ECT(1) in one FIFO |
//!
//! [`queue_protection`] is RFC 9957's Queue Protection of a low-latency queue, an option of
//! `dualpi2` (`queue_protection = { ... }`).
//!
//! [`config`] holds the scenario-file configuration of each and [`build`]; [`ecn_rewrite`]
//! sets CE in raw IPv4/IPv6 headers (RFC 1624 checksum update).

#![forbid(unsafe_code)]

pub mod classic_ecn;
pub mod codel;
pub mod config;
pub mod docsis_dualq;
pub mod dualpi2;
pub mod ecn_rewrite;
pub mod fifo;
pub mod fq_codel;
pub mod l4s_marker;
pub mod pie;
pub mod qdisc;
pub mod queue_protection;
mod single;

pub use classic_ecn::ClassicEcn;
pub use codel::Codel;
pub use config::{
    build, derive_from_rtt, try_build, AqmConfig, ClassicEcnConfig, CodelConfig, ConfigError, DualPi2Config, EcnMask,
    FifoConfig, FqCodelConfig, L4sMarkerConfig, Marking, PiInput, PieConfig, StepMode, KINDS,
};
pub use docsis_dualq::{DocsisDualq, DocsisDualqConfig, LlEstimator};
pub use dualpi2::{Classifier, DualPi2, DualPi2Params, DualPi2Stats, Step, TrafficClass, MAX_PROB};
pub use fifo::Fifo;
pub use fq_codel::FqCodel;
pub use l4s_marker::L4sMarker;
pub use pie::Pie;
pub use qdisc::{Dequeued, DropReason, Dropped, Enqueued, Qdisc, QueueId, QueueStats};
pub use queue_protection::{QpFlowRecord, QpStats, QueueProtection, QueueProtectionConfig};
