//! # l4s-live
//!
//! The live testbed: real packets through a userspace L4S bottleneck.
//!
//! * [`udp`]: UDP sockets that set the ECN field per packet and read it on arrival.
//! * [`ecncheck`]: `l4s ecn-check` and `l4s reflect`, which tell per direction whether
//!   ECT(1) survives a path, is bleached or remarked, and whether CE is seen.

pub mod ecncheck;
pub mod udp;
