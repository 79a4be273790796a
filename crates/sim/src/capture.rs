//! `--pcap`: the egress of the bottleneck link(s) as a pcap file that Wireshark and
//! tshark read, with real Ethernet/IP/TCP/UDP headers and the ECN field as it left the
//! queue (after any CE mark). Packets are recorded when the bottleneck starts sending
//! them. Hosts are numbered by node index (10.0.x.y, or fd00::x:y with IPv6); a flow's
//! sender uses port 32768 + flow index, its receiver the flow's `port`.

use crate::packet::{Packet, Payload};
use crate::world::Sim;
use l4s_core::Time;
use l4s_metrics::pcap::{IpVersion, PcapWriter, TcpFlagBits, Transport, WirePacket, DEFAULT_SNAPLEN};
use std::io::{self, Write};

pub struct Capture {
    w: PcapWriter<Box<dyn Write>>,
    ip: IpVersion,
    error: Option<io::Error>,
}

/// UDP header (8) + IP (20) + Ethernet (14).
const UDP_OVERHEAD: u32 = 42;

impl Sim {
    /// Record the bottleneck egress into `w` (IPv6 addresses when `ipv6`).
    pub fn enable_pcap(&mut self, w: Box<dyn Write>, ipv6: bool) -> io::Result<()> {
        let w = PcapWriter::new(w, DEFAULT_SNAPLEN)?;
        self.capture = Some(Capture {
            w,
            ip: if ipv6 { IpVersion::V6 } else { IpVersion::V4 },
            error: None,
        });
        Ok(())
    }

    /// Flush the capture; returns the first write error.
    pub fn finish_pcap(&mut self) -> io::Result<()> {
        if let Some(mut cap) = self.capture.take() {
            if let Some(e) = cap.error.take() {
                return Err(e);
            }
            cap.w.finish()?;
        }
        Ok(())
    }
}

impl Capture {
    /// Record `pkt` of a flow between nodes `src` and `dst` whose receiver uses `port`,
    /// leaving a bottleneck at `now`.
    #[inline]
    pub(crate) fn record(&mut self, now: Time, pkt: &Packet, payload: &Payload, src: u32, dst: u32, port: u16) {
        let eph = 32768u16.wrapping_add(pkt.flow as u16);
        let (src, dst, sport, dport) = if pkt.forward {
            (src, dst, eph, port)
        } else {
            (dst, src, port, eph)
        };
        // Connections inside one application flow get their own client port.
        let (sport, dport) = match payload {
            Payload::App(h) if matches!(h, l4s_apps::AppHeader::Tcp { .. }) => {
                let conn = h.conn().unwrap_or(0);
                let c = (conn as u16).wrapping_mul(512);
                if pkt.forward {
                    (sport, dport.wrapping_add(c))
                } else {
                    (sport.wrapping_add(c), dport)
                }
            }
            _ => (sport, dport),
        };
        let app_seg = match payload {
            Payload::App(l4s_apps::AppHeader::Tcp { seg, .. }) => Some(seg),
            _ => None,
        };
        let transport = match (payload, app_seg) {
            (Payload::Tcp(seg), _) | (_, Some(seg)) => Transport::Tcp {
                src_port: sport,
                dst_port: dport,
                seq: seg.seq as u32,
                ack: seg.ack as u32,
                flags: TcpFlagBits::from_bits_truncate(seg.flags.0),
                window: seg.wnd.min(u16::MAX as u32) as u16,
                payload_len: seg.len,
            },
            _ => Transport::Udp {
                src_port: sport,
                dst_port: dport,
                payload_len: pkt.size.saturating_sub(UDP_OVERHEAD),
            },
        };
        let wire = WirePacket {
            frame_len: pkt.size,
            ip: self.ip,
            src,
            dst,
            ecn: pkt.ecn,
            dscp: pkt.dscp,
            transport,
        };
        if self.error.is_none() {
            if let Err(e) = self.w.write(now, &wire) {
                self.error = Some(e);
            }
        }
    }
}
