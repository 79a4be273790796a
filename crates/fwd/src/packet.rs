//! Parsing Ethernet frames for classification, the forwarder's owned frame type, and a
//! buffer pool so that the hot path does not allocate.
//!
//! [`parse`] never panics and never reads past the slice it is given; it classifies a frame
//! as
//!
//! * [`Parsed::Ip`]: a well-formed IPv4 or IPv6 packet (after up to two 802.1Q/802.1ad
//!   tags). The ECN field and DSCP are read from the real header (RFC 3168 §5: the low two
//!   bits of the IPv4 TOS byte; RFC 8200 §7: bits 4–5 of byte 1 of the IPv6 traffic class),
//!   the transport protocol is found by walking the IPv6 extension-header chain
//!   (RFC 8200 §4, RFC 6564 for the uniform TLV format), and the ports are read from
//!   the first fragment of TCP, UDP, UDP-Lite, SCTP and DCCP packets;
//! * [`Parsed::NonIp`]: ARP, LLDP and every other EtherType. These are forwarded
//!   unclassified: Not-ECT, so an AQM can drop but never mark them;
//! * [`Parsed::Malformed`]: an IP EtherType whose header is unusable (truncated, version
//!   mismatch, IPv4 IHL below 5 or beyond the frame, total/payload length beyond the frame,
//!   a truncated extension-header chain). The forwarder drops and counts these, per reason.
//!
//! CE marking reuses [`l4s_aqm::ecn_rewrite`]: the IPv4 checksum is updated incrementally
//! (RFC 1624 eqn. 3), the IPv6 traffic class has no checksum.

use l4s_aqm::ecn_rewrite;
use l4s_core::{Ecn, QueuePacket, Time};

/// EtherTypes.
pub const ETH_P_IPV4: u16 = 0x0800;
pub const ETH_P_IPV6: u16 = 0x86DD;
pub const ETH_P_8021Q: u16 = 0x8100;
pub const ETH_P_8021AD: u16 = 0x88A8;

/// Why an IP frame was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Malformed {
    /// Shorter than the Ethernet header plus its VLAN tags.
    TruncatedEthernet,
    /// Shorter than the fixed IP header.
    TruncatedIp,
    /// The version nibble does not match the EtherType.
    BadVersion,
    /// IPv4 IHL below 5, or beyond the frame.
    BadIhl,
    /// IPv4 total length below the header length or beyond the frame; IPv6 payload length
    /// beyond the frame.
    BadLength,
    /// An IPv6 extension header runs past the packet (or the chain is absurdly long).
    BadExtensionHeader,
}

impl Malformed {
    pub const ALL: [Malformed; 6] = [
        Malformed::TruncatedEthernet,
        Malformed::TruncatedIp,
        Malformed::BadVersion,
        Malformed::BadIhl,
        Malformed::BadLength,
        Malformed::BadExtensionHeader,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Malformed::TruncatedEthernet => "truncated-ethernet",
            Malformed::TruncatedIp => "truncated-ip",
            Malformed::BadVersion => "bad-version",
            Malformed::BadIhl => "bad-ihl",
            Malformed::BadLength => "bad-length",
            Malformed::BadExtensionHeader => "bad-extension-header",
        }
    }
    /// Index into per-reason counter arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The IP version of a classified frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IpVersion {
    V4,
    V6,
}

/// What the classifier learned about an IP packet. Plain data, no allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpInfo {
    pub version: IpVersion,
    /// Offset of the IP header in the frame.
    pub l3_offset: u32,
    /// Offset of the transport header (after options / extension headers), if it was found.
    pub l4_offset: Option<u32>,
    pub ecn: Ecn,
    pub dscp: u8,
    /// Transport protocol (the last Next Header for IPv6).
    pub protocol: u8,
    /// Source address; IPv4 addresses take the first 4 bytes.
    pub src: [u8; 16],
    pub dst: [u8; 16],
    /// Ports of TCP/UDP/UDP-Lite/SCTP/DCCP on the first fragment.
    pub src_port: Option<u16>,
    pub dst_port: Option<u16>,
    /// Offset of the transport payload (after the UDP or TCP header), if known.
    pub payload_offset: Option<u32>,
    /// End of the IP packet in the frame (Ethernet padding excluded).
    pub l3_end: u32,
}

impl IpInfo {
    pub fn src_addr(&self) -> std::net::IpAddr {
        addr(self.version, &self.src)
    }
    pub fn dst_addr(&self) -> std::net::IpAddr {
        addr(self.version, &self.dst)
    }
    /// Hash of (addresses, protocol, ports) for flow queueing and queue protection.
    pub fn flow_hash(&self) -> u32 {
        let n = if self.version == IpVersion::V4 { 4 } else { 16 };
        let mut h: u64 = 0x243F_6A88_85A3_08D3 ^ self.protocol as u64;
        for chunk in self.src[..n].chunks(8).chain(self.dst[..n].chunks(8)) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            h = mix(h ^ u64::from_le_bytes(w));
        }
        let ports = ((self.src_port.unwrap_or(0) as u64) << 16) | self.dst_port.unwrap_or(0) as u64;
        h = mix(h ^ ports);
        (h ^ (h >> 32)) as u32
    }
}

fn addr(v: IpVersion, a: &[u8; 16]) -> std::net::IpAddr {
    match v {
        IpVersion::V4 => std::net::IpAddr::from([a[0], a[1], a[2], a[3]]),
        IpVersion::V6 => std::net::IpAddr::from(*a),
    }
}

#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The classifier's verdict on a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed {
    Ip(IpInfo),
    /// Not IP (ARP, LLDP, ...): forward, unclassified. Carries the EtherType (0 if the frame
    /// is too short to have one... which is reported as malformed instead).
    NonIp {
        ethertype: u16,
    },
    Malformed(Malformed),
}

#[inline]
fn be16(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(off)?, *b.get(off + 1)?]))
}

/// Classify an Ethernet frame (destination MAC first, no FCS).
pub fn parse(frame: &[u8]) -> Parsed {
    let mut off = 12;
    let mut ethertype = match be16(frame, off) {
        Some(t) => t,
        None => return Parsed::Malformed(Malformed::TruncatedEthernet),
    };
    // Up to two VLAN tags (802.1ad outer + 802.1Q inner).
    for _ in 0..2 {
        if ethertype == ETH_P_8021Q || ethertype == ETH_P_8021AD {
            off += 4;
            ethertype = match be16(frame, off) {
                Some(t) => t,
                None => return Parsed::Malformed(Malformed::TruncatedEthernet),
            };
        }
    }
    let l3 = off + 2;
    let r = match ethertype {
        ETH_P_IPV4 => parse_ipv4(frame, l3),
        ETH_P_IPV6 => parse_ipv6(frame, l3),
        t => return Parsed::NonIp { ethertype: t },
    };
    match r {
        Ok(info) => Parsed::Ip(info),
        Err(m) => Parsed::Malformed(m),
    }
}

/// Transport protocols whose first 4 bytes are source and destination port.
fn has_ports(proto: u8) -> bool {
    matches!(proto, 6 | 17 | 33 | 132 | 136)
}

fn transport(frame: &[u8], info: &mut IpInfo, l4: usize, first_fragment: bool) {
    info.l4_offset = Some(l4 as u32);
    if !first_fragment || !has_ports(info.protocol) {
        return;
    }
    let end = info.l3_end as usize;
    if l4 + 4 > end {
        return;
    }
    info.src_port = be16(frame, l4);
    info.dst_port = be16(frame, l4 + 2);
    info.payload_offset = match info.protocol {
        17 | 136 if l4 + 8 <= end => Some((l4 + 8) as u32),
        6 if l4 + 13 <= end => {
            let doff = (frame[l4 + 12] >> 4) as usize * 4;
            (doff >= 20 && l4 + doff <= end).then_some((l4 + doff) as u32)
        }
        _ => None,
    };
}

fn parse_ipv4(frame: &[u8], l3: usize) -> Result<IpInfo, Malformed> {
    let h = frame.get(l3..).ok_or(Malformed::TruncatedIp)?;
    if h.len() < 20 {
        return Err(Malformed::TruncatedIp);
    }
    if h[0] >> 4 != 4 {
        return Err(Malformed::BadVersion);
    }
    let ihl = (h[0] & 0x0F) as usize * 4;
    if ihl < 20 || ihl > h.len() {
        return Err(Malformed::BadIhl);
    }
    let total = u16::from_be_bytes([h[2], h[3]]) as usize;
    if total < ihl || total > h.len() {
        return Err(Malformed::BadLength);
    }
    let frag = u16::from_be_bytes([h[6], h[7]]) & 0x1FFF;
    let mut info = IpInfo {
        version: IpVersion::V4,
        l3_offset: l3 as u32,
        l4_offset: None,
        ecn: Ecn::from_bits(h[1]),
        dscp: h[1] >> 2,
        protocol: h[9],
        src: [0; 16],
        dst: [0; 16],
        src_port: None,
        dst_port: None,
        payload_offset: None,
        l3_end: (l3 + total) as u32,
    };
    info.src[..4].copy_from_slice(&h[12..16]);
    info.dst[..4].copy_from_slice(&h[16..20]);
    transport(frame, &mut info, l3 + ihl, frag == 0);
    Ok(info)
}

/// Longest extension-header chain we walk (RFC 8200 §4.1 recommends an order with at most
/// seven; anything longer is treated as an attack).
const MAX_EXT_HEADERS: usize = 12;

fn parse_ipv6(frame: &[u8], l3: usize) -> Result<IpInfo, Malformed> {
    let h = frame.get(l3..).ok_or(Malformed::TruncatedIp)?;
    if h.len() < 40 {
        return Err(Malformed::TruncatedIp);
    }
    if h[0] >> 4 != 6 {
        return Err(Malformed::BadVersion);
    }
    let plen = u16::from_be_bytes([h[4], h[5]]) as usize;
    if 40 + plen > h.len() {
        return Err(Malformed::BadLength);
    }
    let tc = ((h[0] & 0x0F) << 4) | (h[1] >> 4);
    let end = l3 + 40 + plen;
    let mut info = IpInfo {
        version: IpVersion::V6,
        l3_offset: l3 as u32,
        l4_offset: None,
        ecn: Ecn::from_bits(tc),
        dscp: tc >> 2,
        protocol: h[6],
        src: [0; 16],
        dst: [0; 16],
        src_port: None,
        dst_port: None,
        payload_offset: None,
        l3_end: end as u32,
    };
    info.src.copy_from_slice(&h[8..24]);
    info.dst.copy_from_slice(&h[24..40]);
    let mut next = h[6];
    let mut off = l3 + 40;
    let mut first_fragment = true;
    for _ in 0..MAX_EXT_HEADERS {
        match next {
            // Hop-by-Hop, Routing, Destination Options, Mobility, HIP, Shim6, and the
            // experimental 253/254: RFC 6564 uniform format, (len + 1) * 8 bytes.
            0 | 43 | 60 | 135 | 139 | 140 | 253 | 254 => {
                if off + 2 > end {
                    return Err(Malformed::BadExtensionHeader);
                }
                let len = (frame[off + 1] as usize + 1) * 8;
                next = frame[off];
                off += len;
                if off > end {
                    return Err(Malformed::BadExtensionHeader);
                }
            }
            // Fragment: 8 bytes; ports only in the first fragment.
            44 => {
                if off + 8 > end {
                    return Err(Malformed::BadExtensionHeader);
                }
                next = frame[off];
                let fo = u16::from_be_bytes([frame[off + 2], frame[off + 3]]) >> 3;
                first_fragment &= fo == 0;
                off += 8;
            }
            // Authentication Header: (len + 2) * 4 bytes (RFC 4302 §2.2).
            51 => {
                if off + 2 > end {
                    return Err(Malformed::BadExtensionHeader);
                }
                let len = (frame[off + 1] as usize + 2) * 4;
                next = frame[off];
                off += len;
                if off > end {
                    return Err(Malformed::BadExtensionHeader);
                }
            }
            // No Next Header, ESP (encrypted beyond), or a transport protocol.
            _ => {
                info.protocol = next;
                if next != 59 {
                    transport(frame, &mut info, off, first_fragment);
                }
                return Ok(info);
            }
        }
    }
    Err(Malformed::BadExtensionHeader)
}

/// A received frame, owned by the forwarder while it is queued. The buffer comes from a
/// [`BufferPool`] and goes back to it with [`Frame::into_buffer`].
#[derive(Debug)]
pub struct Frame {
    buf: Box<[u8]>,
    len: u32,
    class: Class,
    /// When the frame was read from the interface.
    pub arrival: Time,
    /// The ECN field on arrival.
    pub ecn_in: Ecn,
    /// Which of the forwarder's inputs it came in on (set by a forwarder with more than
    /// one input per model, [`crate::medium`]; 0 otherwise).
    pub ingress: u16,
}

/// The classification a [`Frame`] keeps (malformed frames never become one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Ip(IpInfo),
    NonIp,
}

impl Frame {
    /// Take a buffer holding a frame of `len` bytes and classify it. `Err` gives the buffer
    /// back with the reason when the frame is malformed. `len` beyond the buffer is clamped.
    pub fn new(buf: Box<[u8]>, len: usize, arrival: Time) -> Result<Frame, (Box<[u8]>, Malformed)> {
        let len = len.min(buf.len());
        let class = match parse(&buf[..len]) {
            Parsed::Ip(i) => Class::Ip(i),
            Parsed::NonIp { .. } => Class::NonIp,
            Parsed::Malformed(m) => return Err((buf, m)),
        };
        let ecn_in = match class {
            Class::Ip(i) => i.ecn,
            Class::NonIp => Ecn::NotEct,
        };
        Ok(Frame {
            buf,
            len: len as u32,
            class,
            arrival,
            ecn_in,
            ingress: 0,
        })
    }

    /// The frame bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn class(&self) -> &Class {
        &self.class
    }

    /// The IP information, if the frame is IP.
    pub fn ip(&self) -> Option<&IpInfo> {
        match &self.class {
            Class::Ip(i) => Some(i),
            Class::NonIp => None,
        }
    }

    /// Give the buffer back (to return it to the pool).
    pub fn into_buffer(self) -> Box<[u8]> {
        self.buf
    }
}

impl QueuePacket for Frame {
    fn wire_len(&self) -> u32 {
        self.len
    }
    fn ecn(&self) -> Ecn {
        match &self.class {
            Class::Ip(i) => i.ecn,
            Class::NonIp => Ecn::NotEct,
        }
    }
    fn set_ce(&mut self) -> bool {
        let Class::Ip(info) = &mut self.class else {
            return false;
        };
        let start = info.l3_offset as usize;
        let end = (info.l3_end as usize).min(self.len as usize);
        let Some(hdr) = self.buf.get_mut(start..end) else {
            return false;
        };
        match ecn_rewrite::ip_set_ce(hdr) {
            Ok(true) => {
                info.ecn = Ecn::Ce;
                true
            }
            _ => false,
        }
    }
    fn dscp(&self) -> u8 {
        self.ip().map_or(0, |i| i.dscp)
    }
    fn dst_port(&self) -> Option<u16> {
        self.ip().and_then(|i| i.dst_port)
    }
    fn flow_hash(&self) -> u32 {
        match &self.class {
            Class::Ip(i) => i.flow_hash(),
            // Non-IP traffic shares one flow.
            Class::NonIp => 0,
        }
    }
}

impl l4s_link::LinkPacket for Frame {
    /// Rewrite the ECN field in the frame's IP header (checksum included) and in its
    /// classification; a non-IP frame has none.
    fn set_ecn(&mut self, ecn: Ecn) {
        let Class::Ip(info) = &mut self.class else { return };
        let start = info.l3_offset as usize;
        let end = (info.l3_end as usize).min(self.len as usize);
        if let Some(hdr) = self.buf.get_mut(start..end) {
            if ecn_rewrite::ip_set_ecn(hdr, ecn).is_ok() {
                info.ecn = ecn;
            }
        }
    }
}

/// Fixed-size frame buffers, reused. At most `max` buffers exist at a time; when all are
/// out, [`BufferPool::get`] says so and the caller drops the incoming frame. The forwarder
/// sizes `max` from the AQM's packet limit, so memory stays bounded under any overload.
#[derive(Debug)]
pub struct BufferPool {
    free: Vec<Box<[u8]>>,
    buf_size: usize,
    max: usize,
    /// Buffers in existence (free or out).
    allocated: usize,
    /// Most buffers that were ever in existence at once.
    peak: usize,
}

impl BufferPool {
    /// A pool of buffers of `buf_size` bytes, at most `max` of them; `prealloc` are made now.
    pub fn new(buf_size: usize, max: usize, prealloc: usize) -> BufferPool {
        let buf_size = buf_size.max(64);
        let max = max.max(1);
        let prealloc = prealloc.min(max);
        let free = (0..prealloc).map(|_| vec![0u8; buf_size].into_boxed_slice()).collect();
        BufferPool {
            free,
            buf_size,
            max,
            allocated: prealloc,
            peak: prealloc,
        }
    }

    /// A buffer, or `None` when `max` are already out.
    pub fn get(&mut self) -> Option<Box<[u8]>> {
        if let Some(b) = self.free.pop() {
            return Some(b);
        }
        if self.allocated >= self.max {
            return None;
        }
        self.allocated += 1;
        self.peak = self.peak.max(self.allocated);
        Some(vec![0u8; self.buf_size].into_boxed_slice())
    }

    /// Return a buffer. Buffers of another size (not ours) are freed instead.
    pub fn put(&mut self, b: Box<[u8]>) {
        if b.len() == self.buf_size && self.free.len() < self.allocated {
            self.free.push(b);
        } else if self.allocated > 0 && b.len() == self.buf_size {
            self.allocated -= 1;
        }
    }

    pub fn buf_size(&self) -> usize {
        self.buf_size
    }
    /// Buffers in existence now.
    pub fn allocated(&self) -> usize {
        self.allocated
    }
    /// Buffers handed out and not yet returned.
    pub fn outstanding(&self) -> usize {
        self.allocated - self.free.len()
    }
    pub fn peak(&self) -> usize {
        self.peak
    }
    pub fn max(&self) -> usize {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eth(ethertype: u16) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
        f.extend_from_slice(&ethertype.to_be_bytes());
        f
    }

    /// An IPv4/UDP frame with a correct header checksum.
    pub(crate) fn ipv4_udp(tos: u8, payload: usize) -> Vec<u8> {
        let mut f = eth(ETH_P_IPV4);
        let total = 20 + 8 + payload;
        let mut ip = vec![0x45, tos, (total >> 8) as u8, total as u8, 0, 1, 0x40, 0, 64, 17, 0, 0];
        ip.extend_from_slice(&[198, 18, 0, 1, 198, 18, 0, 2]);
        let c = ecn_rewrite::ipv4_header_checksum(&ip).unwrap();
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&ip);
        f.extend_from_slice(&[
            0x30,
            0x39,
            0x13,
            0x88,
            ((8 + payload) >> 8) as u8,
            (8 + payload) as u8,
            0,
            0,
        ]);
        f.extend(std::iter::repeat_n(0xAB, payload));
        f
    }

    fn ipv6(tc: u8, next: u8, ext: &[u8], l4: &[u8]) -> Vec<u8> {
        let mut f = eth(ETH_P_IPV6);
        let plen = ext.len() + l4.len();
        f.extend_from_slice(&[
            0x60 | (tc >> 4),
            (tc << 4),
            0,
            0,
            (plen >> 8) as u8,
            plen as u8,
            next,
            64,
        ]);
        f.extend_from_slice(&[0xfd, 0, 0, 0x18, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        f.extend_from_slice(&[0xfd, 0, 0, 0x18, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        f.extend_from_slice(ext);
        f.extend_from_slice(l4);
        f
    }

    #[test]
    fn ipv4_udp_is_classified() {
        let f = ipv4_udp(0x01 | (45 << 2), 100);
        let Parsed::Ip(i) = parse(&f) else { panic!() };
        assert_eq!(i.version, IpVersion::V4);
        assert_eq!(i.ecn, Ecn::Ect1);
        assert_eq!(i.dscp, 45);
        assert_eq!(i.protocol, 17);
        assert_eq!((i.src_port, i.dst_port), (Some(12345), Some(5000)));
        assert_eq!(i.l3_offset, 14);
        assert_eq!(i.payload_offset, Some(14 + 28));
        assert_eq!(i.l3_end as usize, f.len());
        assert_eq!(i.src_addr().to_string(), "198.18.0.1");
        // Ethernet padding after the IP packet is allowed.
        let mut padded = f.clone();
        padded.extend_from_slice(&[0; 10]);
        assert!(matches!(parse(&padded), Parsed::Ip(_)));
    }

    #[test]
    fn vlan_tags_are_skipped() {
        let f = ipv4_udp(2, 10);
        let mut tagged = f[..12].to_vec();
        tagged.extend_from_slice(&[0x88, 0xA8, 0, 5, 0x81, 0x00, 0, 7]);
        tagged.extend_from_slice(&f[12..]);
        let Parsed::Ip(i) = parse(&tagged) else { panic!() };
        assert_eq!(i.l3_offset, 22);
        assert_eq!(i.ecn, Ecn::Ect0);
        assert_eq!(i.dst_port, Some(5000));
    }

    #[test]
    fn ipv4_options_and_fragments() {
        let mut f = ipv4_udp(1, 8);
        // IHL 6 with one 4-byte option (NOPs) inserted.
        f[14] = 0x46;
        let total = u16::from_be_bytes([f[16], f[17]]) + 4;
        f[16..18].copy_from_slice(&total.to_be_bytes());
        f.splice(34..34, [1, 1, 1, 1]);
        let Parsed::Ip(i) = parse(&f) else { panic!() };
        assert_eq!(i.l4_offset, Some(38));
        assert_eq!(i.dst_port, Some(5000));
        // A non-first fragment has no ports.
        f[20] = 0;
        f[21] = 10;
        let Parsed::Ip(i) = parse(&f) else { panic!() };
        assert_eq!(i.dst_port, None);
    }

    #[test]
    fn malformed_ipv4() {
        let f = ipv4_udp(1, 8);
        assert_eq!(parse(&f[..10]), Parsed::Malformed(Malformed::TruncatedEthernet));
        assert_eq!(parse(&f[..30]), Parsed::Malformed(Malformed::TruncatedIp));
        let mut g = f.clone();
        g[14] = 0x44;
        assert_eq!(parse(&g), Parsed::Malformed(Malformed::BadIhl));
        g[14] = 0x4F;
        assert_eq!(parse(&g), Parsed::Malformed(Malformed::BadIhl));
        g[14] = 0x65;
        assert_eq!(parse(&g), Parsed::Malformed(Malformed::BadVersion));
        let mut g = f.clone();
        g[16] = 0xFF;
        assert_eq!(parse(&g), Parsed::Malformed(Malformed::BadLength));
        g[16] = 0;
        g[17] = 19;
        assert_eq!(parse(&g), Parsed::Malformed(Malformed::BadLength));
    }

    #[test]
    fn ipv6_extension_headers() {
        let udp = [0x30, 0x39, 0x13, 0x88, 0, 8, 0, 0];
        let f = ipv6(0x01, 17, &[], &udp);
        let Parsed::Ip(i) = parse(&f) else { panic!() };
        assert_eq!((i.ecn, i.protocol, i.dst_port), (Ecn::Ect1, 17, Some(5000)));
        // Hop-by-hop (8 bytes) + destination options (16 bytes) + fragment (first) + UDP.
        let mut ext = vec![60, 0, 1, 4, 0, 0, 0, 0];
        ext.extend_from_slice(&[44, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        ext.extend_from_slice(&[17, 0, 0, 0, 0, 0, 0, 1]);
        let f = ipv6(0xB8 | 2, 0, &ext, &udp);
        let Parsed::Ip(i) = parse(&f) else { panic!() };
        assert_eq!((i.ecn, i.dscp, i.protocol, i.dst_port), (Ecn::Ect0, 46, 17, Some(5000)));
        assert_eq!(i.l4_offset, Some(14 + 40 + 32));
        // Non-first fragment: protocol known, ports not.
        let mut ext2 = ext.clone();
        ext2[26] = 0;
        ext2[27] = 0x08;
        let Parsed::Ip(i) = parse(&ipv6(0, 0, &ext2, &udp)) else {
            panic!()
        };
        assert_eq!((i.protocol, i.dst_port), (17, None));
        // A hop-by-hop header whose length runs past the packet.
        let bad = ipv6(0, 0, &[17, 9, 0, 0, 0, 0, 0, 0], &udp);
        assert_eq!(parse(&bad), Parsed::Malformed(Malformed::BadExtensionHeader));
        // Payload length beyond the frame.
        let mut g = ipv6(0, 17, &[], &udp);
        g[19] = 200;
        assert_eq!(parse(&g), Parsed::Malformed(Malformed::BadLength));
        // ESP: protocol 50, no ports.
        let Parsed::Ip(i) = parse(&ipv6(0, 50, &[], &udp)) else {
            panic!()
        };
        assert_eq!((i.protocol, i.dst_port), (50, None));
    }

    #[test]
    fn non_ip_is_unclassified_and_never_marked() {
        let mut arp = eth(0x0806);
        arp.extend_from_slice(&[0; 28]);
        assert_eq!(parse(&arp), Parsed::NonIp { ethertype: 0x0806 });
        let len = arp.len();
        let mut fr = Frame::new(arp.into_boxed_slice(), len, Time::ZERO).unwrap();
        assert_eq!(fr.ecn(), Ecn::NotEct);
        assert!(!fr.set_ce());
        assert_eq!(fr.flow_hash(), 0);
    }

    #[test]
    fn set_ce_rewrites_ipv4_checksum_and_ipv6_tc() {
        for ecn in [1u8, 2] {
            let f = ipv4_udp(ecn | (10 << 2), 50);
            let len = f.len();
            let mut fr = Frame::new(f.into_boxed_slice(), len, Time::ZERO).unwrap();
            assert!(fr.set_ce());
            assert_eq!(fr.ecn(), Ecn::Ce);
            assert_eq!(fr.ecn_in, Ecn::from_bits(ecn));
            let b = fr.bytes();
            assert_eq!(b[15], 3 | (10 << 2));
            assert_eq!(
                ecn_rewrite::ipv4_header_checksum(&b[14..34]).unwrap(),
                u16::from_be_bytes([b[24], b[25]])
            );
            assert_eq!(ecn_rewrite::ones_sum(&b[14..34]), 0xFFFF);
        }
        let f = ipv4_udp(0, 50);
        let len = f.len();
        let mut fr = Frame::new(f.clone().into_boxed_slice(), len, Time::ZERO).unwrap();
        assert!(!fr.set_ce());
        assert_eq!(fr.bytes(), &f[..]);

        let f = ipv6(0x01, 17, &[], &[0, 1, 0, 2, 0, 8, 0, 0]);
        let len = f.len();
        let mut fr = Frame::new(f.into_boxed_slice(), len, Time::ZERO).unwrap();
        assert!(fr.set_ce());
        let b = fr.bytes();
        assert_eq!(((b[14] & 0x0F) << 4 | b[15] >> 4) & 3, 3);
    }

    #[test]
    fn flow_hash_separates_flows() {
        let a = ipv4_udp(1, 8);
        let mut b = a.clone();
        b[36] = 0x99; // another destination port
        let (Parsed::Ip(ia), Parsed::Ip(ib)) = (parse(&a), parse(&b)) else {
            panic!()
        };
        assert_ne!(ia.flow_hash(), ib.flow_hash());
        assert_eq!(ia.flow_hash(), ia.flow_hash());
    }

    #[test]
    fn pool_bounds_buffers() {
        let mut p = BufferPool::new(2048, 3, 1);
        let a = p.get().unwrap();
        let b = p.get().unwrap();
        let c = p.get().unwrap();
        assert!(p.get().is_none());
        assert_eq!((p.allocated(), p.outstanding()), (3, 3));
        p.put(a);
        assert_eq!(p.outstanding(), 2);
        let d = p.get().unwrap();
        assert_eq!(p.allocated(), 3);
        for x in [b, c, d] {
            p.put(x);
        }
        assert_eq!((p.outstanding(), p.peak()), (0, 3));
        // A foreign buffer is not kept.
        p.put(vec![0; 10].into_boxed_slice());
        assert_eq!(p.allocated(), 3);
    }
}
