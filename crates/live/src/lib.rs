//! # l4s-live
//!
//! The live testbed: real packets through a userspace L4S bottleneck.
//!
//! * [`udp`]: UDP sockets that set the ECN field per packet and read it on arrival.
//! * [`ecncheck`]: `l4s ecn-check` and `l4s reflect`, which tell per direction whether
//!   ECT(1) survives a path, is bleached or remarked, and whether CE is seen.
//! * [`wire`]: the payload of live UDP Prague and probe datagrams (send timestamp for the
//!   one-way delay, then the transport header).
//! * [`endpoints`]: flows on real sockets: UDP Prague and probes (the sans-IO objects the
//!   simulator drives, with the real clock), kernel TCP with `TCP_CONGESTION`.
//! * [`meter`]: per-flow measurement with the simulator's meanings.

pub mod ecncheck;
pub mod endpoints;
pub mod meter;
pub mod udp;
pub mod wire;
