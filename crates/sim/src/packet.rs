//! The simulator's packet: common IP-level fields plus the transport header of the
//! endpoint that sent it. Packets move by value through queues and delay lines; nothing
//! is allocated per packet.

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
    /// Boxed: an application header (a TCP segment plus connection fields) is larger than
    /// the others, and every packet of every flow would pay for it.
    App(Box<l4s_apps::AppHeader>),
}

#[derive(Clone, Debug)]
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
    pub payload: Payload,
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
        // Fibonacci hashing of (flow, direction): distinct flows spread over FQ buckets.
        ((self.flow as u64 * 2 + self.forward as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32
    }
}
