//! # l4s-live
//!
//! The live testbed: real packets through a userspace L4S bottleneck.
//!
//! * [`udp`]: UDP sockets that set the ECN field per packet and read it on arrival.
pub mod udp;
