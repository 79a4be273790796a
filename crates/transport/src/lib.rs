//! # l4s-transport
//!
//! Sans-IO endpoints driven by the simulator or, later, the live testbed.

pub mod endpoint;

pub use endpoint::{Endpoint, EndpointStats, Transmit};
