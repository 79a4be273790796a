//! Byte-level checks of the pcap writer, and a read-back through tshark.

use l4s_core::{Ecn, Time};
use l4s_metrics::pcap::{
    ipv4_addr, ipv6_addr, mac_addr, IpVersion, PcapWriter, TcpFlagBits, Transport, WirePacket, DEFAULT_SNAPLEN,
    MAX_SNAPLEN,
};
use std::path::{Path, PathBuf};
use std::process::Command;

// ---------------------------------------------------------------------------------------
// Independent helpers (not shared with the writer).

/// RFC 1071 one's-complement sum of big-endian 16-bit words, folded to 16 bits.
fn ones_sum(parts: &[&[u8]]) -> u16 {
    let mut bytes = Vec::new();
    for p in parts {
        bytes.extend_from_slice(p);
    }
    if bytes.len() % 2 == 1 {
        bytes.push(0);
    }
    let mut sum: u32 = 0;
    for w in bytes.chunks(2) {
        sum += (w[0] as u32) << 8 | w[1] as u32;
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

#[derive(Debug)]
struct Record {
    sec: u32,
    nsec: u32,
    orig_len: u32,
    data: Vec<u8>,
}

/// Parses a whole little-endian pcap file, asserting the record framing is exact.
fn parse(file: &[u8]) -> (Vec<u8>, Vec<Record>) {
    assert!(file.len() >= 24, "file shorter than the global header");
    let mut recs = Vec::new();
    let mut at = 24;
    while at < file.len() {
        assert!(at + 16 <= file.len(), "truncated record header at {at}");
        let incl = le32(file, at + 8) as usize;
        assert!(at + 16 + incl <= file.len(), "truncated record data at {at}");
        recs.push(Record {
            sec: le32(file, at),
            nsec: le32(file, at + 4),
            orig_len: le32(file, at + 12),
            data: file[at + 16..at + 16 + incl].to_vec(),
        });
        at += 16 + incl;
    }
    assert_eq!(at, file.len());
    (file[..24].to_vec(), recs)
}

fn write_all(snaplen: u32, pkts: &[(Time, WirePacket)]) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), snaplen).unwrap();
    for (t, p) in pkts {
        w.write(*t, p).unwrap();
    }
    assert_eq!(w.packets(), pkts.len() as u64);
    w.finish().unwrap()
}

fn tcp(ip: IpVersion, ecn: Ecn, flags: TcpFlagBits, payload_len: u32) -> WirePacket {
    let hdr: u32 = match ip {
        IpVersion::V4 => 54,
        IpVersion::V6 => 74,
    };
    WirePacket {
        frame_len: hdr.saturating_add(payload_len),
        ip,
        src: 0x0102,
        dst: 0x0304,
        ecn,
        dscp: 0,
        transport: Transport::Tcp {
            src_port: 43210,
            dst_port: 5201,
            seq: 0x1122_3344,
            ack: 0x5566_7788,
            flags,
            window: 0xabcd,
            payload_len,
        },
    }
}

fn udp(ip: IpVersion, ecn: Ecn, payload_len: u32) -> WirePacket {
    let hdr: u32 = match ip {
        IpVersion::V4 => 42,
        IpVersion::V6 => 62,
    };
    WirePacket {
        frame_len: hdr.saturating_add(payload_len),
        ip,
        src: 7,
        dst: 0x0001_0009,
        ecn,
        dscp: 0,
        transport: Transport::Udp {
            src_port: 40000,
            dst_port: 40001,
            payload_len,
        },
    }
}

/// Offset of the transport header in a frame.
fn l4_at(frame: &[u8]) -> usize {
    match be16(frame, 12) {
        0x0800 => 14 + 20,
        0x86dd => 14 + 40,
        e => panic!("ethertype {e:#x}"),
    }
}

/// Pseudo-header bytes for the transport checksum, from the frame's own IP header.
fn pseudo_header(frame: &[u8]) -> Vec<u8> {
    let mut ph = Vec::new();
    match be16(frame, 12) {
        0x0800 => {
            let ip = &frame[14..34];
            let l4_len = be16(ip, 2) - 20;
            ph.extend_from_slice(&ip[12..20]);
            ph.extend_from_slice(&[0, ip[9]]);
            ph.extend_from_slice(&l4_len.to_be_bytes());
        }
        _ => {
            let ip = &frame[14..54];
            ph.extend_from_slice(&ip[8..40]);
            ph.extend_from_slice(&(be16(ip, 4) as u32).to_be_bytes());
            ph.extend_from_slice(&[0, 0, 0, ip[6]]);
        }
    }
    ph
}

/// The transport segment as it would be on the wire: captured bytes, then the zero
/// payload the writer promises, up to the IP-declared length.
fn full_segment(frame: &[u8]) -> Vec<u8> {
    let at = l4_at(frame);
    let l4_len = match be16(frame, 12) {
        0x0800 => be16(frame, 16) as usize - 20,
        _ => be16(frame, 18) as usize,
    };
    let mut seg = frame[at..frame.len().min(at + l4_len)].to_vec();
    seg.resize(l4_len, 0);
    seg
}

// ---------------------------------------------------------------------------------------
// Byte-level tests.

#[test]
fn test_sum_matches_a_published_vector() {
    // The IPv4 header example of the Wikipedia "IPv4 header checksum" article: 0xb861.
    let h = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8,
        0x00, 0xc7,
    ];
    assert_eq!(!ones_sum(&[&h]), 0xb861);
}

#[test]
fn global_header_fields() {
    let f = PcapWriter::new(Vec::new(), DEFAULT_SNAPLEN).unwrap().finish().unwrap();
    assert_eq!(f.len(), 24);
    assert_eq!(&f[0..4], &[0x4d, 0x3c, 0xb2, 0xa1], "nanosecond magic, little-endian");
    assert_eq!(le32(&f, 0), 0xa1b2_3c4d);
    assert_eq!(u16::from_le_bytes([f[4], f[5]]), 2, "version major");
    assert_eq!(u16::from_le_bytes([f[6], f[7]]), 4, "version minor");
    assert_eq!(le32(&f, 8), 0, "thiszone");
    assert_eq!(le32(&f, 12), 0, "sigfigs");
    assert_eq!(le32(&f, 16), 128, "snaplen");
    assert_eq!(le32(&f, 20), 1, "LINKTYPE_ETHERNET");

    // snaplen clamps.
    let f = PcapWriter::new(Vec::new(), 0).unwrap();
    assert_eq!(f.snaplen(), 1);
    assert_eq!(le32(&f.finish().unwrap(), 16), 1);
    let f = PcapWriter::new(Vec::new(), u32::MAX).unwrap().finish().unwrap();
    assert_eq!(le32(&f, 16), MAX_SNAPLEN);
}

#[test]
fn known_ipv4_tcp_packet() {
    let mut p = tcp(IpVersion::V4, Ecn::Ect1, TcpFlagBits::ACK | TcpFlagBits::PSH, 1448);
    p.dscp = 10; // AF11
    let f = write_all(DEFAULT_SNAPLEN, &[(Time::from_nanos(3_000_000_123), p)]);
    let (_, recs) = parse(&f);
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_eq!((r.sec, r.nsec), (3, 123));
    assert_eq!(r.orig_len, 54 + 1448);
    assert_eq!(r.data.len(), 128, "captured = min(snaplen, frame_len)");
    let d = &r.data;

    // Ethernet.
    assert_eq!(&d[0..6], &[0x02, 0x00, 0x00, 0x00, 0x03, 0x04], "dst MAC");
    assert_eq!(&d[6..12], &[0x02, 0x00, 0x00, 0x00, 0x01, 0x02], "src MAC");
    assert_eq!(mac_addr(0x0304), [0x02, 0, 0, 0, 3, 4]);
    assert_eq!(be16(d, 12), 0x0800);

    // IPv4 header, field by field.
    let ip = &d[14..34];
    assert_eq!(ip[0], 0x45);
    assert_eq!(ip[1], 10 << 2 | 0b01, "TOS = dscp<<2 | ECT(1)");
    assert_eq!(be16(ip, 2), 20 + 20 + 1448, "total length");
    assert_eq!(be16(ip, 4), 0, "identification");
    assert_eq!(be16(ip, 6), 0x4000, "DF, offset 0");
    assert_eq!(ip[8], 64, "TTL");
    assert_eq!(ip[9], 6, "protocol TCP");
    assert_eq!(&ip[12..16], &[10, 0, 1, 2]);
    assert_eq!(&ip[16..20], &[10, 0, 3, 4]);
    assert_eq!(ipv4_addr(0x0102), [10, 0, 1, 2]);
    // Header checksum: recompute independently with the field zeroed.
    let mut zeroed = ip.to_vec();
    zeroed[10] = 0;
    zeroed[11] = 0;
    let expect = !ones_sum(&[&zeroed]);
    assert_eq!(be16(ip, 10), expect, "IPv4 header checksum");
    assert_eq!(ones_sum(&[ip]), 0xffff, "sum over the IPv4 header");
    // Known value for this exact header, worked by hand: 0x4529 + 0x05d0 + 0x0000 +
    // 0x4000 + 0x4006 + 0x0a00 + 0x0102 + 0x0a00 + 0x0304 = 0xe305 → checksum 0x1cfa.
    assert_eq!(be16(ip, 10), 0x1cfa);

    // TCP header.
    let t = &d[34..54];
    assert_eq!(be16(t, 0), 43210);
    assert_eq!(be16(t, 2), 5201);
    assert_eq!(u32::from_be_bytes(t[4..8].try_into().unwrap()), 0x1122_3344);
    assert_eq!(u32::from_be_bytes(t[8..12].try_into().unwrap()), 0x5566_7788);
    assert_eq!(t[12], 0x50, "data offset 5, AE clear");
    assert_eq!(t[13], 0x18, "ACK|PSH");
    assert_eq!(be16(t, 14), 0xabcd);
    assert_eq!(be16(t, 18), 0, "urgent pointer");
    // Payload bytes are zeros.
    assert!(d[54..].iter().all(|&b| b == 0));
    // TCP checksum verifies over pseudo-header + segment (zero payload).
    let seg = full_segment(d);
    assert_eq!(seg.len(), 20 + 1448);
    assert_eq!(ones_sum(&[&pseudo_header(d), &seg]), 0xffff, "TCP checksum");
}

#[test]
fn transport_checksums_verify_v4_v6_tcp_udp() {
    let mut pkts = Vec::new();
    let mut t = 0;
    for ip in [IpVersion::V4, IpVersion::V6] {
        for payload in [0u32, 1, 7, 100, 1200, 1448] {
            for ecn in [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce] {
                t += 1;
                pkts.push((
                    Time::from_micros(t),
                    tcp(ip, ecn, TcpFlagBits::ACK | TcpFlagBits::AE, payload),
                ));
                pkts.push((Time::from_micros(t), udp(ip, ecn, payload)));
            }
        }
    }
    for snaplen in [DEFAULT_SNAPLEN, 65_535] {
        let (_, recs) = parse(&write_all(snaplen, &pkts));
        assert_eq!(recs.len(), pkts.len());
        for (r, (_, p)) in recs.iter().zip(&pkts) {
            let d = &r.data;
            assert_eq!(r.orig_len, p.frame_len);
            assert_eq!(d.len() as u32, snaplen.min(p.frame_len));
            if p.ip == IpVersion::V4 {
                assert_eq!(ones_sum(&[&d[14..34]]), 0xffff);
            }
            let seg = full_segment(d);
            assert_eq!(seg.len() as u32, p.transport.header_len() + p.transport.payload_len());
            assert_eq!(ones_sum(&[&pseudo_header(d), &seg]), 0xffff, "{p:?}");
            if let Transport::Udp { .. } = p.transport {
                let u = &d[l4_at(d)..];
                assert_eq!(be16(u, 4) as u32, 8 + p.transport.payload_len(), "UDP length");
                assert_ne!(be16(u, 6), 0, "UDP checksum present");
            }
        }
    }
}

#[test]
fn ecn_bits_in_tos_and_traffic_class() {
    for (ecn, bits) in [(Ecn::NotEct, 0u8), (Ecn::Ect1, 1), (Ecn::Ect0, 2), (Ecn::Ce, 3)] {
        for dscp in [0u8, 45, 63] {
            // IPv4: TOS byte.
            let mut p = udp(IpVersion::V4, ecn, 10);
            p.dscp = dscp;
            let (_, r) = parse(&write_all(DEFAULT_SNAPLEN, &[(Time::ZERO, p)]));
            let tos = r[0].data[15];
            assert_eq!(tos & 3, bits, "v4 {ecn}");
            assert_eq!(tos >> 2, dscp, "v4 dscp");
            assert_eq!(ones_sum(&[&r[0].data[14..34]]), 0xffff);

            // IPv6: traffic class is bits 20..28 of the first word.
            let mut p = tcp(IpVersion::V6, ecn, TcpFlagBits::SYN, 0);
            p.dscp = dscp;
            let (_, r) = parse(&write_all(DEFAULT_SNAPLEN, &[(Time::ZERO, p)]));
            let d = &r[0].data;
            assert_eq!(be16(d, 12), 0x86dd);
            let w = u32::from_be_bytes(d[14..18].try_into().unwrap());
            assert_eq!(w >> 28, 6, "version");
            let tc = (w >> 20) as u8;
            assert_eq!(tc & 3, bits, "v6 {ecn}");
            assert_eq!(tc >> 2, dscp, "v6 dscp");
            assert_eq!(w & 0xf_ffff, 0, "flow label");
            assert_eq!(be16(d, 18), 20, "payload length");
            assert_eq!(d[20], 6, "next header");
            assert_eq!(d[21], 64, "hop limit");
            let mut src = [0u8; 16];
            src[0] = 0xfd;
            src[14] = 1;
            src[15] = 2;
            assert_eq!(&d[22..38], &src, "fd00::1:2... i.e. fd00::102");
            assert_eq!(ipv6_addr(0x0102), src);
        }
    }
    // DSCP above six bits is masked, never spills into ECN.
    let mut p = udp(IpVersion::V4, Ecn::NotEct, 0);
    p.dscp = 0xff;
    let (_, r) = parse(&write_all(DEFAULT_SNAPLEN, &[(Time::ZERO, p)]));
    assert_eq!(r[0].data[15], 0xfc);
}

#[test]
fn tcp_flag_bit_positions() {
    let cases = [
        (TcpFlagBits::AE, 0x01u8, 0x00u8),
        (TcpFlagBits::CWR, 0x00, 0x80),
        (TcpFlagBits::ECE, 0x00, 0x40),
        (TcpFlagBits::URG, 0x00, 0x20),
        (TcpFlagBits::ACK, 0x00, 0x10),
        (TcpFlagBits::PSH, 0x00, 0x08),
        (TcpFlagBits::RST, 0x00, 0x04),
        (TcpFlagBits::SYN, 0x00, 0x02),
        (TcpFlagBits::FIN, 0x00, 0x01),
        (TcpFlagBits::AE | TcpFlagBits::CWR | TcpFlagBits::ECE, 0x01, 0xc0),
        (TcpFlagBits::ALL, 0x01, 0xff),
        (TcpFlagBits::from_bits_truncate(0xffff), 0x01, 0xff),
    ];
    for (flags, b12_low, b13) in cases {
        for ip in [IpVersion::V4, IpVersion::V6] {
            let (_, r) = parse(&write_all(
                DEFAULT_SNAPLEN,
                &[(Time::ZERO, tcp(ip, Ecn::Ect1, flags, 0))],
            ));
            let d = &r[0].data;
            let t = &d[l4_at(d)..];
            assert_eq!(t[12] >> 4, 5, "data offset");
            assert_eq!(
                t[12] & 0x0f,
                b12_low,
                "reserved bits zero, AE in the NS position: {flags:?}"
            );
            assert_eq!(t[13], b13, "{flags:?}");
            assert_eq!(ones_sum(&[&pseudo_header(d), &full_segment(d)]), 0xffff);
        }
    }
    assert!((TcpFlagBits::SYN | TcpFlagBits::ECE | TcpFlagBits::CWR).contains(TcpFlagBits::ECE | TcpFlagBits::CWR));
    assert!(!TcpFlagBits::SYN.contains(TcpFlagBits::ACK));
    assert_eq!(TcpFlagBits::ALL.with(TcpFlagBits::AE, false).bits(), 0xff);
}

#[test]
fn lengths_timestamps_and_clamping() {
    // Pure ACK padded to the 60-byte Ethernet minimum: IP says 40, 6 trailer bytes.
    let mut p = tcp(IpVersion::V4, Ecn::Ect0, TcpFlagBits::ACK, 0);
    p.frame_len = 60;
    // Frame shorter than its headers: written as exactly the headers.
    let mut short = udp(IpVersion::V6, Ecn::Ce, 500);
    short.frame_len = 3;
    // Payload larger than the frame allows: clamped to the frame.
    let mut big = udp(IpVersion::V4, Ecn::Ect1, 5000);
    big.frame_len = 1514;
    // Giant frame: IP length saturates at 65535.
    let mut giant = tcp(IpVersion::V4, Ecn::Ce, TcpFlagBits::ACK, u32::MAX);
    giant.frame_len = u32::MAX;
    let pkts = [
        (Time::from_nanos(999_999_999), p),
        (Time::from_secs(1), short),
        (Time::from_nanos(u64::from(u32::MAX) * 1_000_000_000 + 5), big),
        (Time::MAX, giant),
    ];
    let (_, r) = parse(&write_all(DEFAULT_SNAPLEN, &pkts));
    assert_eq!(
        (r[0].sec, r[0].nsec, r[0].orig_len, r[0].data.len()),
        (0, 999_999_999, 60, 60)
    );
    assert_eq!(be16(&r[0].data, 16), 40);
    assert!(r[0].data[54..].iter().all(|&b| b == 0));
    assert_eq!((r[1].sec, r[1].nsec, r[1].orig_len, r[1].data.len()), (1, 0, 62, 62));
    assert_eq!(be16(&r[1].data, 18), 8, "IPv6 payload length: UDP header only");
    assert_eq!(be16(&r[1].data, 58), 8, "UDP length");
    assert_eq!((r[2].sec, r[2].nsec, r[2].orig_len), (u32::MAX, 5, 1514));
    assert_eq!(be16(&r[2].data, 16), 1500);
    assert_eq!(be16(&r[2].data, 38), 1480, "UDP length");
    assert_eq!(
        (r[3].sec, r[3].nsec, r[3].orig_len, r[3].data.len()),
        (u32::MAX, 999_999_999, u32::MAX, 128)
    );
    assert_eq!(be16(&r[3].data, 16), 65535);
    for rec in &r {
        let d = &rec.data;
        if d.len() >= 54 && be16(d, 12) == 0x0800 {
            assert_eq!(ones_sum(&[&d[14..34]]), 0xffff);
        }
        assert_eq!(ones_sum(&[&pseudo_header(d), &full_segment(d)]), 0xffff);
    }

    // A tiny snaplen truncates inside the headers; full snaplen writes zero payload.
    let (_, r) = parse(&write_all(
        20,
        &[(Time::ZERO, tcp(IpVersion::V6, Ecn::Ce, TcpFlagBits::ACK, 1000))],
    ));
    assert_eq!((r[0].data.len(), r[0].orig_len), (20, 1074));
    let (_, r) = parse(&write_all(MAX_SNAPLEN, &[(Time::ZERO, big)]));
    assert_eq!(r[0].data.len(), 1514);
}

#[test]
fn never_panics_on_arbitrary_input() {
    // Deterministic pseudo-random inputs (SplitMix64), every invariant checked.
    let mut s: u64 = 0x1234_5678;
    let mut next = || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for snaplen in [0, 1, 13, 54, 128, 2000, u32::MAX] {
        let mut w = PcapWriter::new(Vec::new(), snaplen).unwrap();
        let mut pkts = Vec::new();
        for _ in 0..300 {
            let r = next();
            let len_pick = |x: u64| match x % 4 {
                0 => (x >> 8) as u32 % 100,
                1 => (x >> 8) as u32 % 2000,
                2 => (x >> 8) as u32,
                _ => u32::MAX - (x >> 8) as u32 % 3,
            };
            let transport = if r & 1 == 0 {
                Transport::Tcp {
                    src_port: next() as u16,
                    dst_port: next() as u16,
                    seq: next() as u32,
                    ack: next() as u32,
                    flags: TcpFlagBits::from_bits_truncate(next() as u16),
                    window: next() as u16,
                    payload_len: len_pick(next()),
                }
            } else {
                Transport::Udp {
                    src_port: next() as u16,
                    dst_port: next() as u16,
                    payload_len: len_pick(next()),
                }
            };
            let p = WirePacket {
                frame_len: len_pick(next()),
                ip: if r & 2 == 0 { IpVersion::V4 } else { IpVersion::V6 },
                src: next() as u32,
                dst: next() as u32,
                ecn: Ecn::from_bits(next() as u8),
                dscp: next() as u8,
                transport,
            };
            w.write(Time(next()), &p).unwrap();
            pkts.push(p);
        }
        let eff_snap = w.snaplen();
        let (_, recs) = parse(&w.finish().unwrap());
        assert_eq!(recs.len(), pkts.len());
        for (rec, p) in recs.iter().zip(&pkts) {
            assert!(rec.nsec < 1_000_000_000);
            assert_eq!(rec.orig_len, p.frame_len.max(p.header_len()));
            assert_eq!(rec.data.len() as u32, eff_snap.min(rec.orig_len));
            if rec.data.len() as u32 >= p.header_len() {
                let d = &rec.data;
                if p.ip == IpVersion::V4 {
                    assert_eq!(ones_sum(&[&d[14..34]]), 0xffff);
                    assert!(be16(d, 16) as u32 + 14 <= rec.orig_len);
                } else {
                    assert!(be16(d, 18) as u32 + 54 <= rec.orig_len);
                }
                assert_eq!(ones_sum(&[&pseudo_header(d), &full_segment(d)]), 0xffff);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// tshark read-back.

/// `true` if tshark runs. Missing tshark fails the test under CI, otherwise warns.
fn have_tshark() -> bool {
    let ok = Command::new("tshark")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        if std::env::var_os("CI").is_some() {
            panic!("tshark is not on PATH but CI is set: install the `tshark` package");
        }
        eprintln!("warning: tshark not on PATH; skipping the tshark read-back test");
    }
    ok
}

fn tshark(file: &Path, args: &[&str]) -> String {
    let out = Command::new("tshark")
        .arg("-n") // no name resolution
        .arg("-r")
        .arg(file)
        .args(args)
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "tshark {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("tshark output is UTF-8")
}

fn rows(file: &Path, filter: &str) -> usize {
    tshark(file, &["-Y", filter])
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count()
}

fn tmp_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}.pcap", std::process::id()))
}

/// 7 Not-ECT, 5 ECT(0), 11 ECT(1), 3 CE, spread over IPv4/IPv6 × TCP/UDP with varied
/// DSCPs, flags and sizes.
fn ecn_mix() -> Vec<(Time, WirePacket)> {
    let mut ecns = Vec::new();
    for (ecn, n) in [(Ecn::NotEct, 7), (Ecn::Ect0, 5), (Ecn::Ect1, 11), (Ecn::Ce, 3)] {
        for _ in 0..n {
            ecns.push(ecn);
        }
    }
    let flag_set = [
        TcpFlagBits::SYN | TcpFlagBits::ECE | TcpFlagBits::CWR | TcpFlagBits::AE,
        TcpFlagBits::ACK,
        TcpFlagBits::ACK | TcpFlagBits::ECE,
        TcpFlagBits::ACK | TcpFlagBits::PSH | TcpFlagBits::CWR,
        TcpFlagBits::ACK | TcpFlagBits::AE,
    ];
    ecns.iter()
        .enumerate()
        .map(|(i, &ecn)| {
            let ip = if i % 2 == 0 { IpVersion::V4 } else { IpVersion::V6 };
            let payload = [0u32, 1448, 100, 1200, 33][i % 5].min(if ip == IpVersion::V6 { 1428 } else { 1448 });
            let mut p = if (i / 2) % 2 == 0 {
                let mut p = tcp(ip, ecn, flag_set[i % flag_set.len()], payload);
                if let Transport::Tcp { ref mut seq, .. } = p.transport {
                    *seq = 1000 + i as u32 * 1448;
                }
                p
            } else {
                udp(ip, ecn, payload)
            };
            p.dscp = [0u8, 45, 10, 46][i % 4];
            (Time::from_micros(100 * i as u64 + 1), p)
        })
        .collect()
}

#[test]
fn tshark_reads_ecn_mix_without_errors() {
    if !have_tshark() {
        return;
    }
    let pkts = ecn_mix();
    assert_eq!(pkts.len(), 26);
    for (name, snaplen) in [("mix-default", DEFAULT_SNAPLEN), ("mix-full", 65_535)] {
        let file = tmp_file(name);
        std::fs::write(&file, write_all(snaplen, &pkts)).unwrap();

        // Per-packet fields as tshark decodes them.
        let out = tshark(
            &file,
            &[
                "-T",
                "fields",
                "-E",
                "separator=,",
                "-e",
                "ip.dsfield.ecn",
                "-e",
                "ipv6.tclass.ecn",
                "-e",
                "ip.dsfield.dscp",
                "-e",
                "ipv6.tclass.dscp",
                "-e",
                "tcp.flags.ae",
                "-e",
                "tcp.flags.cwr",
                "-e",
                "tcp.flags.ece",
                "-e",
                "frame.len",
                "-e",
                "frame.cap_len",
                "-e",
                "ip.len",
                "-e",
                "ipv6.plen",
                "-e",
                "udp.length",
            ],
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), pkts.len(), "{name}: tshark rows\n{out}");
        let mut counts = [0usize; 4];
        for (line, (_, p)) in lines.iter().zip(&pkts) {
            let f: Vec<&str> = line.split(',').collect();
            assert_eq!(f.len(), 12, "{line}");
            let (ecn, dscp) = match p.ip {
                IpVersion::V4 => {
                    assert!(f[1].is_empty() && f[3].is_empty(), "{line}");
                    (f[0], f[2])
                }
                IpVersion::V6 => {
                    assert!(f[0].is_empty() && f[2].is_empty(), "{line}");
                    (f[1], f[3])
                }
            };
            let ecn: u8 = ecn.parse().unwrap_or_else(|_| panic!("ECN field in {line}"));
            assert_eq!(ecn, p.ecn.bits(), "{line}");
            counts[ecn as usize] += 1;
            assert_eq!(dscp.parse::<u8>().unwrap(), p.dscp, "{line}");
            let bit = |s: &str| matches!(s, "1" | "True");
            match p.transport {
                Transport::Tcp { flags, .. } => {
                    assert_eq!(bit(f[4]), flags.contains(TcpFlagBits::AE), "AE {line}");
                    assert_eq!(bit(f[5]), flags.contains(TcpFlagBits::CWR), "CWR {line}");
                    assert_eq!(bit(f[6]), flags.contains(TcpFlagBits::ECE), "ECE {line}");
                }
                Transport::Udp { payload_len, .. } => {
                    assert_eq!(f[11].parse::<u32>().unwrap(), 8 + payload_len, "{line}");
                }
            }
            assert_eq!(f[7].parse::<u32>().unwrap(), p.frame_len, "{line}");
            assert_eq!(f[8].parse::<u32>().unwrap(), p.frame_len.min(snaplen), "{line}");
            let l4 = p.transport.header_len() + p.transport.payload_len();
            match p.ip {
                IpVersion::V4 => assert_eq!(f[9].parse::<u32>().unwrap(), 20 + l4, "{line}"),
                IpVersion::V6 => assert_eq!(f[10].parse::<u32>().unwrap(), l4, "{line}"),
            }
        }
        assert_eq!(
            counts,
            [7, 11, 5, 3],
            "{name}: [Not-ECT, ECT(1), ECT(0), CE] as tshark decodes"
        );

        // The same counts through display filters.
        let ecn_rows = |v: u8| rows(&file, &format!("ip.dsfield.ecn == {v} || ipv6.tclass.ecn == {v}"));
        assert_eq!(ecn_rows(0), 7, "{name} Not-ECT");
        assert_eq!(ecn_rows(2), 5, "{name} ECT(0)");
        assert_eq!(ecn_rows(1), 11, "{name} ECT(1)");
        assert_eq!(ecn_rows(3), 3, "{name} CE");
        assert_eq!(rows(&file, "ip"), 13);
        assert_eq!(rows(&file, "ipv6"), 13);
        assert_eq!(rows(&file, "tcp") + rows(&file, "udp"), 26);

        // Nothing malformed, no expert errors.
        assert_eq!(rows(&file, "_ws.malformed"), 0, "{name}: malformed packets");
        assert_eq!(rows(&file, "_ws.expert.severity == error"), 0, "{name}: expert errors");
        let expert = tshark(&file, &["-q", "-z", "expert"]);
        assert!(
            !expert.contains("Errors ("),
            "{name}: tshark -z expert reports errors:\n{expert}"
        );
        assert!(!expert.contains("Malformed"), "{name}:\n{expert}");

        // With the whole frame captured, tshark itself validates every checksum.
        if snaplen == 65_535 {
            let out = tshark(
                &file,
                &[
                    "-o",
                    "ip.check_checksum:TRUE",
                    "-o",
                    "tcp.check_checksum:TRUE",
                    "-o",
                    "udp.check_checksum:TRUE",
                    "-T",
                    "fields",
                    "-E",
                    "separator=,",
                    "-e",
                    "ip.checksum.status",
                    "-e",
                    "tcp.checksum.status",
                    "-e",
                    "udp.checksum.status",
                ],
            );
            let mut checked = 0;
            for line in out.lines() {
                for s in line.split(',').filter(|s| !s.is_empty()) {
                    assert_eq!(
                        s, "1",
                        "checksum status (1 = good, 0 = bad, 2 = unverified) in {line}\n{out}"
                    );
                    checked += 1;
                }
            }
            assert_eq!(checked, 13 + 26, "IPv4 header + every transport checksum checked");
        }
        std::fs::remove_file(&file).ok();
    }
}
