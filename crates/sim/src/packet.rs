//! The simulator's packet: common IP-level fields and a handle to the transport header of
//! the endpoint that sent it. The headers (a TCP segment with its SACK blocks and AccECN
//! option is over 100 bytes) stay in one [`Payloads`] slab for the packet's whole life,
//! so what moves through links, queues and delay lines is a 48-byte packet; slots are
//! reused, so nothing is allocated per packet.

use l4s_core::{Ecn, FlowId, QueuePacket, Time};
use l4s_transport::probe::ProbeHeader;
use l4s_transport::tcp::TcpSegment;
use l4s_transport::udp_prague::UdpPragueHeader;

/// Transport header carried by a packet.
#[derive(Clone, Debug)]
pub enum Payload {
    Tcp(TcpSegment),
    UdpPrague(UdpPragueHeader),
    Probe(ProbeHeader),
    Media(l4s_media::MediaHeader),
    App(l4s_apps::AppHeader),
    /// A free slot of the slab.
    Free,
}

/// Where a packet's transport header is in the [`Payloads`] slab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PayloadId(u32);

/// The transport headers of the packets alive in a run, by [`PayloadId`].
#[derive(Default)]
pub struct Payloads {
    slots: Vec<Payload>,
    free: Vec<u32>,
}

impl Payloads {
    /// Keep `p` until [`Payloads::free`].
    #[inline]
    pub fn insert(&mut self, p: Payload) -> PayloadId {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = p;
                PayloadId(i)
            }
            None => {
                self.slots.push(p);
                PayloadId(self.slots.len() as u32 - 1)
            }
        }
    }
    #[inline]
    pub fn get(&self, id: PayloadId) -> &Payload {
        &self.slots[id.0 as usize]
    }
    /// The packet is gone (delivered or lost): its slot is reused.
    #[inline]
    pub fn free(&mut self, id: PayloadId) {
        self.slots[id.0 as usize] = Payload::Free;
        self.free.push(id.0);
    }
}

/// The [`QueuePacket::flow_hash`] of a flow's packets in one direction: Fibonacci hashing
/// of (flow, direction), so that distinct flows spread over FQ and Queue Protection buckets.
#[inline]
pub fn flow_hash(flow: FlowId, forward: bool) -> u32 {
    ((flow as u64 * 2 + forward as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32
}

#[derive(Clone, Copy, Debug)]
pub struct Packet {
    /// Unique in the run, in order of creation.
    pub id: u64,
    pub flow: FlowId,
    /// True for packets from the flow's sender to its receiver (data), false for feedback.
    pub forward: bool,
    /// Destination node.
    pub dst: u32,
    /// Frame size on the wire, bytes.
    pub size: u32,
    /// ECN field now (may have been set to CE on the way).
    pub ecn: Ecn,
    /// ECN field as the sender set it.
    pub ecn_sent: Ecn,
    pub dscp: u8,
    pub dst_port: u16,
    /// When the sender transmitted it.
    pub sent_at: Time,
    /// Carries application data (counted for throughput, delay and loss).
    pub is_data: bool,
    /// The transport header, in the run's [`Payloads`].
    pub payload: PayloadId,
}

impl QueuePacket for Packet {
    #[inline]
    fn wire_len(&self) -> u32 {
        self.size
    }
    #[inline]
    fn ecn(&self) -> Ecn {
        self.ecn
    }
    #[inline]
    fn set_ce(&mut self) -> bool {
        if self.ecn.is_ect() {
            self.ecn = Ecn::Ce;
            true
        } else {
            false
        }
    }
    #[inline]
    fn dscp(&self) -> u8 {
        self.dscp
    }
    #[inline]
    fn dst_port(&self) -> Option<u16> {
        Some(self.dst_port)
    }
    #[inline]
    fn flow_hash(&self) -> u32 {
        flow_hash(self.flow, self.forward)
    }
}

impl l4s_link::LinkPacket for Packet {
    #[inline]
    fn set_ecn(&mut self, ecn: Ecn) {
        self.ecn = ecn;
    }
}
