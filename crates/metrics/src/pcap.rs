//! A pcap writer for the bottleneck's egress, readable by Wireshark and tshark.
//!
//! # Format and why it is written here
//!
//! Classic libpcap files (the `.pcap` format of tcpdump), **nanosecond** variant:
//! a 24-byte global header (magic `0xa1b23c4d`, version 2.4, `thiszone` 0, `sigfigs` 0,
//! snaplen, `LINKTYPE_ETHERNET` = 1) followed by one 16-byte record header
//! (`ts_sec`, `ts_nsec`, `incl_len`, `orig_len`) and `incl_len` captured bytes per packet.
//! All fields are written little-endian whatever the host, so the same run gives the same
//! bytes everywhere (readers detect the byte order from the magic).
//!
//! The format is about forty bytes of specification, so it is written by hand rather than
//! through the `pcap-file` crate: no new dependency (and no dependency on its API
//! changes), full control over the exact bytes (determinism), and a record is assembled
//! in a fixed buffer inside the writer, so writing a packet never allocates.
//!
//! # What a record contains
//!
//! The simulator does not carry payload bytes, so each packet is synthesised from a
//! [`WirePacket`]: Ethernet II (locally administered MACs derived from the host index,
//! [`mac_addr`]), IPv4 (IHL 5, DF, TTL 64, identification 0, correct header checksum,
//! TOS = `dscp << 2 | ecn`) or IPv6 (traffic class = `dscp << 2 | ecn`, flow label 0,
//! hop limit 64), then TCP (data offset 5, no options, the nine flag bits including AE in
//! the former NS position, urgent pointer 0) or UDP. Addresses are [`ipv4_addr`] /
//! [`ipv6_addr`] of the host index.
//!
//! The payload is taken to be all zero bytes. Zeros do not change an Internet checksum,
//! so the TCP/UDP checksum, computed over the pseudo-header (with the true transport
//! length) and the transport header, is the correct checksum of the whole segment, and
//! tshark can verify it when the whole frame is captured.
//!
//! Captured bytes per record = `min(snaplen, orig_len)`; bytes past the headers are the
//! zero payload (and zero Ethernet trailer, see [`WirePacket`]). With the default
//! snaplen of [`DEFAULT_SNAPLEN`] = 128 B the headers are always captured and files stay
//! small; `orig_len` and the IP/UDP length fields still give the true sizes.
//!
//! # Never panics
//!
//! Every input is accepted; impossible values are clamped as documented on
//! [`WirePacket`], [`PcapWriter::new`] and [`PcapWriter::write`]. The only errors are
//! those of the underlying writer. After an I/O error the output may end in a partial
//! record; discard it.

use l4s_core::{Ecn, Time};
use std::io::{self, Write};
use std::ops::{BitOr, BitOrAssign};

/// Magic number of a nanosecond-resolution libpcap file.
pub const PCAP_MAGIC_NANOS: u32 = 0xa1b2_3c4d;
/// `LINKTYPE_ETHERNET`: records start with an Ethernet II header.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Default snapshot length: all synthesised headers (at most 74 B) fit, payload mostly does not.
pub const DEFAULT_SNAPLEN: u32 = 128;
/// Largest snaplen written. Wireshark rejects records longer than 262 144 B.
pub const MAX_SNAPLEN: u32 = 262_144;

const ETH_LEN: u32 = 14;
const IPV4_LEN: u32 = 20;
const IPV6_LEN: u32 = 40;
const TCP_LEN: u32 = 20;
const UDP_LEN: u32 = 8;
/// Longest synthesised header stack: Ethernet + IPv6 + TCP.
const MAX_HEADERS: usize = (ETH_LEN + IPV6_LEN + TCP_LEN) as usize;
const RECORD_HEADER: usize = 16;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
static ZEROS: [u8; 1024] = [0; 1024];

/// IP version of a [`WirePacket`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IpVersion {
    #[default]
    V4,
    V6,
}

/// The nine TCP flag bits, in their wire positions within the 16-bit word that starts
/// with the data offset: bit 8 is AE (the former NS bit, Accurate ECN, RFC 9768), then
/// CWR, ECE, URG, ACK, PSH, RST, SYN, FIN down to bit 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TcpFlagBits(u16);

impl TcpFlagBits {
    pub const NONE: TcpFlagBits = TcpFlagBits(0);
    pub const FIN: TcpFlagBits = TcpFlagBits(0x001);
    pub const SYN: TcpFlagBits = TcpFlagBits(0x002);
    pub const RST: TcpFlagBits = TcpFlagBits(0x004);
    pub const PSH: TcpFlagBits = TcpFlagBits(0x008);
    pub const ACK: TcpFlagBits = TcpFlagBits(0x010);
    pub const URG: TcpFlagBits = TcpFlagBits(0x020);
    pub const ECE: TcpFlagBits = TcpFlagBits(0x040);
    pub const CWR: TcpFlagBits = TcpFlagBits(0x080);
    /// Accurate ECN flag (RFC 9768), the bit RFC 3540 called NS.
    pub const AE: TcpFlagBits = TcpFlagBits(0x100);
    /// All nine defined bits.
    pub const ALL: TcpFlagBits = TcpFlagBits(0x1ff);

    /// Flags from their wire value; bits above the nine defined ones are dropped.
    pub const fn from_bits_truncate(bits: u16) -> TcpFlagBits {
        TcpFlagBits(bits & Self::ALL.0)
    }
    /// The wire value (low nine bits).
    pub const fn bits(self) -> u16 {
        self.0
    }
    /// True when every flag of `other` is set in `self`.
    pub const fn contains(self, other: TcpFlagBits) -> bool {
        self.0 & other.0 == other.0
    }
    /// Flags of both.
    pub const fn union(self, other: TcpFlagBits) -> TcpFlagBits {
        TcpFlagBits(self.0 | other.0)
    }
    /// `self` with the flags of `other` set (`on`) or cleared.
    pub const fn with(self, other: TcpFlagBits, on: bool) -> TcpFlagBits {
        if on {
            TcpFlagBits(self.0 | other.0)
        } else {
            TcpFlagBits(self.0 & !other.0)
        }
    }
}

impl BitOr for TcpFlagBits {
    type Output = TcpFlagBits;
    fn bitor(self, o: TcpFlagBits) -> TcpFlagBits {
        self.union(o)
    }
}
impl BitOrAssign for TcpFlagBits {
    fn bitor_assign(&mut self, o: TcpFlagBits) {
        *self = self.union(o);
    }
}

/// Transport header of a [`WirePacket`]. `payload_len` is the transport payload in bytes
/// (TCP segment data / UDP datagram data), not counting any header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    Tcp {
        src_port: u16,
        dst_port: u16,
        seq: u32,
        ack: u32,
        flags: TcpFlagBits,
        window: u16,
        payload_len: u32,
    },
    Udp {
        src_port: u16,
        dst_port: u16,
        payload_len: u32,
    },
}

impl Transport {
    /// Transport payload length in bytes, as given.
    pub fn payload_len(&self) -> u32 {
        match *self {
            Transport::Tcp { payload_len, .. } | Transport::Udp { payload_len, .. } => payload_len,
        }
    }
    /// Transport header length in bytes (TCP 20, UDP 8).
    pub fn header_len(&self) -> u32 {
        match self {
            Transport::Tcp { .. } => TCP_LEN,
            Transport::Udp { .. } => UDP_LEN,
        }
    }
}

/// One packet as it leaves the bottleneck, described by its headers only.
///
/// Sizes: `frame_len` is the Ethernet frame on the wire without preamble and FCS (like
/// Linux `qdisc_pkt_len`, [`l4s_core::ETH_HEADER`] included). The writer reconciles it
/// with the headers and the transport `payload_len` as follows, where
/// `headers = `[`WirePacket::header_len`] (54, 42, 74 or 62 B):
///
/// * `orig_len = max(frame_len, headers)`: a frame too short for its headers is written
///   as a frame of exactly the headers;
/// * the transport payload is `min(payload_len, orig_len - headers, L)`, where `L` keeps
///   the IPv4 total length / IPv6 payload length (and the UDP length) within 65 535;
///   the IP and UDP length fields and the pseudo-header use this payload;
/// * any bytes of the frame beyond IP's length are an Ethernet trailer (e.g. the padding
///   of a frame raised to the 60-byte minimum), written as zeros when captured.
///
/// `dscp` is masked to its six bits. Hosts map to addresses by [`mac_addr`],
/// [`ipv4_addr`] and [`ipv6_addr`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WirePacket {
    /// Ethernet frame bytes on the wire (no preamble, no FCS).
    pub frame_len: u32,
    pub ip: IpVersion,
    /// Source host index.
    pub src: u32,
    /// Destination host index.
    pub dst: u32,
    pub ecn: Ecn,
    /// Differentiated Services codepoint (six bits; higher bits are ignored).
    pub dscp: u8,
    pub transport: Transport,
}

impl WirePacket {
    /// Ethernet + IP + transport header bytes this packet is written with.
    pub fn header_len(&self) -> u32 {
        let ip = match self.ip {
            IpVersion::V4 => IPV4_LEN,
            IpVersion::V6 => IPV6_LEN,
        };
        ETH_LEN + ip + self.transport.header_len()
    }
    /// The frame length that exactly holds the headers and `payload_len` (no trailer),
    /// saturating at `u32::MAX`.
    pub fn natural_frame_len(&self) -> u32 {
        self.header_len().saturating_add(self.transport.payload_len())
    }
    /// The lengths the writer will use (see the type's documentation).
    fn layout(&self) -> Layout {
        let headers = self.header_len();
        let ip_hdr = match self.ip {
            IpVersion::V4 => IPV4_LEN,
            IpVersion::V6 => IPV6_LEN,
        };
        let l4_hdr = self.transport.header_len();
        // IPv4 total length counts the IP header; IPv6 payload length does not.
        let max_payload = match self.ip {
            IpVersion::V4 => 65_535 - ip_hdr - l4_hdr,
            IpVersion::V6 => 65_535 - l4_hdr,
        };
        let orig_len = self.frame_len.max(headers);
        let payload = self.transport.payload_len().min(orig_len - headers).min(max_payload);
        Layout {
            orig_len,
            l4_len: l4_hdr + payload,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Layout {
    /// Frame length recorded as `orig_len`.
    orig_len: u32,
    /// Transport header + payload (≤ 65 535).
    l4_len: u32,
}

/// Locally administered unicast MAC of a host: `02:00:` then the index big-endian.
pub fn mac_addr(host: u32) -> [u8; 6] {
    let h = host.to_be_bytes();
    [0x02, 0x00, h[0], h[1], h[2], h[3]]
}

/// IPv4 address of a host: `10.0.x.y` with `x.y` the low 16 bits of the index
/// (indices ≥ 65 536 wrap).
pub fn ipv4_addr(host: u32) -> [u8; 4] {
    [10, 0, (host >> 8) as u8, host as u8]
}

/// IPv6 address of a host: `fd00::x:y` with `x:y` the whole 32-bit index.
pub fn ipv6_addr(host: u32) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[0] = 0xfd;
    a[12..].copy_from_slice(&host.to_be_bytes());
    a
}

/// Adds big-endian 16-bit words of `data` (odd tail padded with zero) to `sum`
/// (RFC 1071). Fold with [`fold`].
fn sum_words(mut sum: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u64::from(*last) << 8;
    }
    sum
}

/// Folds carries into 16 bits (the one's-complement sum).
fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Writes a classic nanosecond libpcap file of Ethernet frames (see the module docs).
///
/// Give it a buffered writer (`std::io::BufWriter`) when writing to a file: each record
/// is handed over in one or a few `write_all` calls.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    w: W,
    snaplen: u32,
    packets: u64,
    /// Record header + synthesised headers, reused for every packet.
    buf: [u8; RECORD_HEADER + MAX_HEADERS],
}

impl<W: Write> PcapWriter<W> {
    /// Starts a file: writes the 24-byte global header. `snaplen` is clamped to
    /// `1..=`[`MAX_SNAPLEN`] (use [`DEFAULT_SNAPLEN`] for headers only).
    pub fn new(mut w: W, snaplen: u32) -> io::Result<Self> {
        let snaplen = snaplen.clamp(1, MAX_SNAPLEN);
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&PCAP_MAGIC_NANOS.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes()); // version major
        h[6..8].copy_from_slice(&4u16.to_le_bytes()); // version minor
                                                      // thiszone (8..12) and sigfigs (12..16) stay 0.
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        w.write_all(&h)?;
        Ok(PcapWriter {
            w,
            snaplen,
            packets: 0,
            buf: [0; RECORD_HEADER + MAX_HEADERS],
        })
    }

    /// The snaplen written in the global header (after clamping).
    pub fn snaplen(&self) -> u32 {
        self.snaplen
    }

    /// Records written so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.w
    }

    /// Appends one record at `ts` (nanoseconds since the start of the run; instants past
    /// `u32::MAX` seconds, year 2106 as an epoch time, are written as `u32::MAX` s
    /// 999 999 999 ns). Timestamps are written as given: the caller keeps them ordered.
    pub fn write(&mut self, ts: Time, p: &WirePacket) -> io::Result<()> {
        let layout = p.layout();
        let hdr_len = self.build_headers(p, &layout);
        let caplen = self.snaplen.min(layout.orig_len);

        let ns = ts.as_nanos();
        let (sec, nsec) = match u32::try_from(ns / 1_000_000_000) {
            Ok(s) => (s, (ns % 1_000_000_000) as u32),
            Err(_) => (u32::MAX, 999_999_999),
        };
        let r = &mut self.buf[..RECORD_HEADER];
        r[0..4].copy_from_slice(&sec.to_le_bytes());
        r[4..8].copy_from_slice(&nsec.to_le_bytes());
        r[8..12].copy_from_slice(&caplen.to_le_bytes());
        r[12..16].copy_from_slice(&layout.orig_len.to_le_bytes());

        // caplen ≤ MAX_SNAPLEN, so these conversions are lossless.
        let from_headers = (caplen as usize).min(hdr_len);
        self.w.write_all(&self.buf[..RECORD_HEADER + from_headers])?;
        let mut zeros = caplen as usize - from_headers;
        while zeros > 0 {
            let n = zeros.min(ZEROS.len());
            self.w.write_all(&ZEROS[..n])?;
            zeros -= n;
        }
        self.packets += 1;
        Ok(())
    }

    /// Flushes and returns the underlying writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.w.flush()?;
        Ok(self.w)
    }

    /// Fills `buf[RECORD_HEADER..]` with the Ethernet, IP and transport headers; returns
    /// their length.
    fn build_headers(&mut self, p: &WirePacket, l: &Layout) -> usize {
        let f = &mut self.buf[RECORD_HEADER..];
        let tos = (p.dscp & 0x3f) << 2 | p.ecn.bits();
        let proto = match p.transport {
            Transport::Tcp { .. } => PROTO_TCP,
            Transport::Udp { .. } => PROTO_UDP,
        };
        let l4_len = l.l4_len as u16; // ≤ 65 535 by construction of the layout

        // Ethernet II.
        f[0..6].copy_from_slice(&mac_addr(p.dst));
        f[6..12].copy_from_slice(&mac_addr(p.src));
        let ethertype: u16 = match p.ip {
            IpVersion::V4 => 0x0800,
            IpVersion::V6 => 0x86dd,
        };
        f[12..14].copy_from_slice(&ethertype.to_be_bytes());

        // IP header and the pseudo-header sum.
        let (ip_end, pseudo) = match p.ip {
            IpVersion::V4 => {
                let src = ipv4_addr(p.src);
                let dst = ipv4_addr(p.dst);
                let ip = &mut f[14..34];
                ip[0] = 0x45; // version 4, IHL 5
                ip[1] = tos;
                ip[2..4].copy_from_slice(&(IPV4_LEN as u16 + l4_len).to_be_bytes());
                ip[4..6].copy_from_slice(&0u16.to_be_bytes()); // identification (RFC 6864: any with DF)
                ip[6..8].copy_from_slice(&0x4000u16.to_be_bytes()); // DF, fragment offset 0
                ip[8] = 64; // TTL
                ip[9] = proto;
                ip[10..12].copy_from_slice(&[0, 0]);
                ip[12..16].copy_from_slice(&src);
                ip[16..20].copy_from_slice(&dst);
                let ck = !fold(sum_words(0, ip));
                ip[10..12].copy_from_slice(&ck.to_be_bytes());
                let pseudo = sum_words(sum_words(0, &src), &dst) + u64::from(proto) + u64::from(l4_len);
                (34, pseudo)
            }
            IpVersion::V6 => {
                let src = ipv6_addr(p.src);
                let dst = ipv6_addr(p.dst);
                let ip = &mut f[14..54];
                let first: u32 = 6 << 28 | u32::from(tos) << 20; // flow label 0
                ip[0..4].copy_from_slice(&first.to_be_bytes());
                ip[4..6].copy_from_slice(&l4_len.to_be_bytes());
                ip[6] = proto;
                ip[7] = 64; // hop limit
                ip[8..24].copy_from_slice(&src);
                ip[24..40].copy_from_slice(&dst);
                let pseudo = sum_words(sum_words(0, &src), &dst) + u64::from(proto) + u64::from(l4_len);
                (54, pseudo)
            }
        };

        // Transport header; the (zero) payload adds nothing to the checksum.
        match p.transport {
            Transport::Tcp {
                src_port,
                dst_port,
                seq,
                ack,
                flags,
                window,
                ..
            } => {
                let t = &mut f[ip_end..ip_end + TCP_LEN as usize];
                t[0..2].copy_from_slice(&src_port.to_be_bytes());
                t[2..4].copy_from_slice(&dst_port.to_be_bytes());
                t[4..8].copy_from_slice(&seq.to_be_bytes());
                t[8..12].copy_from_slice(&ack.to_be_bytes());
                let off_flags: u16 = 5 << 12 | (flags.bits() & TcpFlagBits::ALL.bits());
                t[12..14].copy_from_slice(&off_flags.to_be_bytes());
                t[14..16].copy_from_slice(&window.to_be_bytes());
                t[16..18].copy_from_slice(&[0, 0]);
                t[18..20].copy_from_slice(&[0, 0]); // urgent pointer
                let ck = !fold(sum_words(pseudo, t));
                t[16..18].copy_from_slice(&ck.to_be_bytes());
                ip_end + TCP_LEN as usize
            }
            Transport::Udp { src_port, dst_port, .. } => {
                let u = &mut f[ip_end..ip_end + UDP_LEN as usize];
                u[0..2].copy_from_slice(&src_port.to_be_bytes());
                u[2..4].copy_from_slice(&dst_port.to_be_bytes());
                u[4..6].copy_from_slice(&l4_len.to_be_bytes());
                u[6..8].copy_from_slice(&[0, 0]);
                let mut ck = !fold(sum_words(pseudo, u));
                if ck == 0 {
                    ck = 0xffff; // 0 means "no checksum" (RFC 768); required for IPv6
                }
                u[6..8].copy_from_slice(&ck.to_be_bytes());
                ip_end + UDP_LEN as usize
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_clamps() {
        let mut p = WirePacket {
            frame_len: 10,
            ip: IpVersion::V6,
            src: 1,
            dst: 2,
            ecn: Ecn::Ce,
            dscp: 0xff,
            transport: Transport::Tcp {
                src_port: 1,
                dst_port: 2,
                seq: 0,
                ack: 0,
                flags: TcpFlagBits::ALL,
                window: 0,
                payload_len: u32::MAX,
            },
        };
        let l = p.layout();
        assert_eq!((p.header_len(), l.orig_len, l.l4_len), (74, 74, 20));
        p.frame_len = u32::MAX;
        let l = p.layout();
        assert_eq!((l.orig_len, l.l4_len), (u32::MAX, 65_535));
        p.ip = IpVersion::V4;
        assert_eq!(p.layout().l4_len, 65_515);
    }
}
