//! # l4s-transport
//!
//! Sans-IO endpoints driven by the simulator or, later, the live testbed.

#![forbid(unsafe_code)]

pub mod endpoint;
pub mod probe;
pub mod tcp;
pub mod udp_prague;

pub use endpoint::{EcnFailure, EcnValidation, Endpoint, EndpointStats, Transmit};
