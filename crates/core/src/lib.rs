//! # l4s-core
//!
//! The vocabulary every l4s-lab crate shares:
//!
//! * [`Time`] and [`Dur`]: integer nanoseconds (DESIGN.md principle 2: no `f64` clocks);
//! * [`Rate`]: bits per second, with exact serialisation times;
//! * [`Ecn`]: the two-bit IP ECN field (RFC 3168 §5, RFC 9331 §4);
//! * [`Rng`]: a seeded, deterministic random source that callers hand to algorithms;
//! * [`units`]: parsing of human units such as `100Mbit`, `20ms`, `1.5MB`.
//!
//! Nothing here knows about a clock, a socket or the simulator.

#![forbid(unsafe_code)]

pub mod ecn;
pub mod rng;
pub mod time;
pub mod units;

pub use ecn::Ecn;
pub use rng::Rng;
pub use time::{Dur, Rate, Time};

/// Identifies a flow inside one run (index into the scenario's flow list).
pub type FlowId = u32;

/// What a queue needs to know about a packet, whatever carries it: the simulator's
/// packet struct or a raw frame in the live forwarder.
///
/// Queue disciplines in `l4s-aqm` are generic over this trait so that the same
/// DualPI2 object serves the simulator and the live bottleneck (DESIGN.md principle 1).
pub trait QueuePacket {
    /// Length on the wire in bytes (the L2/L3 length the link serialises).
    fn wire_len(&self) -> u32;
    /// Memory the packet occupies while queued (Linux `skb->truesize`); defaults to the
    /// wire length (documented deviation from Linux `dualpi2_enqueue_skb`).
    fn mem_size(&self) -> u32 {
        self.wire_len()
    }
    /// The ECN field as it is now.
    fn ecn(&self) -> Ecn;
    /// Set CE if the packet is ECN-capable. Returns `true` when the packet now carries CE
    /// (ECT(0), ECT(1) and CE), `false` for Not-ECT, which can never be marked
    /// (RFC 3168 §5, Linux `INET_ECN_set_ce`).
    fn set_ce(&mut self) -> bool;
    /// The 6-bit DSCP, for operator classification rules (e.g. 45 = NQB, RFC 9956).
    fn dscp(&self) -> u8 {
        0
    }
    /// Destination transport port, if any (for port-based classification, e.g. DNS).
    fn dst_port(&self) -> Option<u16> {
        None
    }
    /// A hash of the flow's 5-tuple, for flow queueing (FQ-CoDel) and queue protection.
    fn flow_hash(&self) -> u32;
}

/// Ethernet header length counted in frame sizes (frames exclude preamble and FCS,
/// like Linux `qdisc_pkt_len`).
pub const ETH_HEADER: u32 = 14;
/// Default IP MTU.
pub const IP_MTU: u32 = 1500;
/// Largest frame on an Ethernet path with the default MTU: 1514 B (Linux `psched_mtu`).
pub const FRAME_MTU: u32 = IP_MTU + ETH_HEADER;
