//! # l4s-cc
//!
//! Sans-IO congestion controllers. Each is a plain state machine fed [`AckSample`]s and
//! loss events with the current time; none reads a clock.

pub mod api;

pub use api::{AckSample, CcInfo, CongestionControl, EcnMode};
