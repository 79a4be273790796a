//! The payload of live UDP Prague and probe datagrams.
//!
//! Every datagram starts with a small l4s-lab header that carries the sender's monotonic
//! send time (one host clock: `CLOCK_MONOTONIC` is shared by every network namespace, so
//! the receiver computes the one-way delay by subtraction), followed by the transport's own
//! header and zero padding up to the frame size the endpoint asked for.
//!
//! ```text
//! 0     1      2          4               12          16
//! | 'L' | kind | flow u16 | sent_ns u64   | seq32 u32 | transport header ... | padding
//! ```
//! `seq32` is the low 32 bits of the data packet's sequence number (0 for ACKs): with the
//! flow and the send time it sits in the first 16 payload bytes, which the forwarder's
//! per-packet records carry, so that a record can be joined with the packet's send and
//! arrival (`packets.parquet`).
//! Kinds: 1 = probe (`seq u64`), 2 = udp_prague data, 3 = udp_prague ACK, 4 = media data
//! and 5 = media feedback (the transport header is `l4s_media::wire`'s encoding; `seq32`
//! of media data counts the flow's data packets, video and audio together). The udp_prague
//! fields follow the order of udp_prague's `pkt_format.h` messages (big-endian `i32`s; data: seq,
//! timestamp, echoed timestamp, then a frame flag byte and, in frame mode, frame number,
//! bytes of the frame sent before this packet, frame size; ACK: ack seq, timestamp, echoed
//! timestamp, packets received, CE, lost, then the error_L4S byte).
//!
//! Decoding checks every length and never panics on what arrives.

use l4s_core::Time;
use l4s_transport::probe::ProbeHeader;
use l4s_transport::udp_prague::{FrameInfo, UdpPragueHeader};

pub const MAGIC: u8 = b'L';
/// Most flows a run can carry (the flow index is 16 bits on the wire).
pub const MAX_FLOWS: usize = 65_535;
pub const KIND_PROBE: u8 = 1;
pub const KIND_PRAGUE_DATA: u8 = 2;
pub const KIND_PRAGUE_ACK: u8 = 3;
pub const KIND_MEDIA_DATA: u8 = 4;
pub const KIND_MEDIA_FEEDBACK: u8 = 5;
/// The common header.
pub const COMMON_LEN: usize = 16;
/// Largest transport header after the common one.
pub const MAX_TRANSPORT_LEN: usize = 29;
/// The smallest datagram that holds any header.
pub const MIN_DATAGRAM: usize = COMMON_LEN + MAX_TRANSPORT_LEN;
/// IPv4 + UDP + Ethernet header bytes between a UDP payload and the frame size.
pub const FRAME_OVERHEAD_V4: u32 = 14 + 20 + 8;
/// IPv6 + UDP + Ethernet.
pub const FRAME_OVERHEAD_V6: u32 = 14 + 40 + 8;

/// A decoded datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Datagram {
    pub flow: u32,
    pub sent: Time,
    pub body: Body,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    Probe(ProbeHeader),
    Prague(UdpPragueHeader),
}

/// UDP payload bytes for a frame of `frame_size` bytes, never below [`MIN_DATAGRAM`].
pub fn payload_len(frame_size: u32, ipv6: bool) -> usize {
    let oh = if ipv6 { FRAME_OVERHEAD_V6 } else { FRAME_OVERHEAD_V4 };
    (frame_size.saturating_sub(oh) as usize).clamp(MIN_DATAGRAM, 65_000)
}

/// The frame size a UDP payload of `len` bytes makes.
pub fn frame_len(len: usize, ipv6: bool) -> u32 {
    let oh = if ipv6 { FRAME_OVERHEAD_V6 } else { FRAME_OVERHEAD_V4 };
    (len as u32).saturating_add(oh)
}

fn put32(b: &mut [u8], at: usize, v: i32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}
fn get32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Write `d` into `buf` and zero the rest; `buf` must hold [`MIN_DATAGRAM`] bytes.
/// Returns false (and writes nothing) if it is too short.
pub fn encode(d: &Datagram, buf: &mut [u8]) -> bool {
    if buf.len() < MIN_DATAGRAM {
        return false;
    }
    buf.fill(0);
    buf[0] = MAGIC;
    buf[2..4].copy_from_slice(&(d.flow.min(MAX_FLOWS as u32) as u16).to_be_bytes());
    buf[4..12].copy_from_slice(&d.sent.as_nanos().to_be_bytes());
    let seq32 = match d.body {
        Body::Probe(h) => h.seq as u32,
        Body::Prague(UdpPragueHeader::Data { seq, .. }) => seq as u32,
        Body::Prague(UdpPragueHeader::Ack { .. }) => 0,
    };
    buf[12..16].copy_from_slice(&seq32.to_be_bytes());
    let t = &mut buf[COMMON_LEN..];
    match d.body {
        Body::Probe(h) => {
            buf[1] = KIND_PROBE;
            buf[COMMON_LEN..COMMON_LEN + 8].copy_from_slice(&h.seq.to_be_bytes());
        }
        Body::Prague(UdpPragueHeader::Data {
            seq,
            timestamp,
            echoed_ts,
            frame,
        }) => {
            put32(t, 0, seq);
            put32(t, 4, timestamp);
            put32(t, 8, echoed_ts);
            if let Some(f) = frame {
                t[12] = 1;
                put32(t, 13, f.frame_nr);
                put32(t, 17, f.frame_sent);
                put32(t, 21, f.frame_size);
            }
            buf[1] = KIND_PRAGUE_DATA;
        }
        Body::Prague(UdpPragueHeader::Ack {
            ack_seq,
            timestamp,
            echoed_ts,
            packets_received,
            packets_ce,
            packets_lost,
            error_l4s,
        }) => {
            put32(t, 0, ack_seq);
            put32(t, 4, timestamp);
            put32(t, 8, echoed_ts);
            put32(t, 12, packets_received);
            put32(t, 16, packets_ce);
            put32(t, 20, packets_lost);
            t[24] = error_l4s as u8;
            buf[1] = KIND_PRAGUE_ACK;
        }
    }
    true
}

/// What the first 16 payload bytes of a data datagram say (from a forwarder record):
/// `(flow, send time, low 32 bits of the sequence number)`; `None` for ACKs and anything
/// that is not ours.
pub fn data_prefix(p: &[u8]) -> Option<(u32, Time, u32)> {
    if p.len() < COMMON_LEN || p[0] != MAGIC || !matches!(p[1], KIND_PROBE | KIND_PRAGUE_DATA | KIND_MEDIA_DATA) {
        return None;
    }
    let mut ns = [0u8; 8];
    ns.copy_from_slice(&p[4..12]);
    Some((
        u16::from_be_bytes([p[2], p[3]]) as u32,
        Time(u64::from_be_bytes(ns)),
        u32::from_be_bytes([p[12], p[13], p[14], p[15]]),
    ))
}

/// The common header of a datagram whose transport header has its own encoding (media):
/// write it and zero the rest of `buf`; false (nothing written) if `buf` is shorter than
/// [`COMMON_LEN`].
pub fn encode_common(kind: u8, flow: u32, sent: Time, seq32: u32, buf: &mut [u8]) -> bool {
    if buf.len() < COMMON_LEN {
        return false;
    }
    buf.fill(0);
    buf[0] = MAGIC;
    buf[1] = kind;
    buf[2..4].copy_from_slice(&(flow.min(MAX_FLOWS as u32) as u16).to_be_bytes());
    buf[4..12].copy_from_slice(&sent.as_nanos().to_be_bytes());
    buf[12..16].copy_from_slice(&seq32.to_be_bytes());
    true
}

/// The common header of a datagram of ours: `(kind, flow, send time, seq32, the bytes
/// after it)`; `None` if `b` is shorter than [`COMMON_LEN`] or not ours.
pub fn decode_common(b: &[u8]) -> Option<(u8, u32, Time, u32, &[u8])> {
    if b.len() < COMMON_LEN || b[0] != MAGIC {
        return None;
    }
    let mut ns = [0u8; 8];
    ns.copy_from_slice(&b[4..12]);
    Some((
        b[1],
        u16::from_be_bytes([b[2], b[3]]) as u32,
        Time(u64::from_be_bytes(ns)),
        u32::from_be_bytes([b[12], b[13], b[14], b[15]]),
        &b[COMMON_LEN..],
    ))
}

/// Decode a datagram; `None` for anything that is not one of ours.
pub fn decode(b: &[u8]) -> Option<Datagram> {
    if b.len() < MIN_DATAGRAM || b[0] != MAGIC {
        return None;
    }
    let flow = u16::from_be_bytes([b[2], b[3]]) as u32;
    let mut ns = [0u8; 8];
    ns.copy_from_slice(&b[4..12]);
    let sent = Time(u64::from_be_bytes(ns));
    let t = &b[COMMON_LEN..];
    let body = match b[1] {
        KIND_PROBE => {
            let mut s = [0u8; 8];
            s.copy_from_slice(&t[..8]);
            Body::Probe(ProbeHeader {
                seq: u64::from_be_bytes(s),
                sent_at: sent,
            })
        }
        KIND_PRAGUE_DATA => Body::Prague(UdpPragueHeader::Data {
            seq: get32(t, 0),
            timestamp: get32(t, 4),
            echoed_ts: get32(t, 8),
            frame: match t[12] {
                0 => None,
                1 => Some(FrameInfo {
                    frame_nr: get32(t, 13),
                    frame_sent: get32(t, 17),
                    frame_size: get32(t, 21),
                }),
                _ => return None,
            },
        }),
        KIND_PRAGUE_ACK => Body::Prague(UdpPragueHeader::Ack {
            ack_seq: get32(t, 0),
            timestamp: get32(t, 4),
            echoed_ts: get32(t, 8),
            packets_received: get32(t, 12),
            packets_ce: get32(t, 16),
            packets_lost: get32(t, 20),
            error_l4s: match t[24] {
                0 => false,
                1 => true,
                _ => return None,
            },
        }),
        _ => return None,
    };
    Some(Datagram { flow, sent, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any bytes a hostile or broken peer can send: the datagram decoders and the media
    /// header decoder behind the common header never panic (a seeded random sweep of
    /// lengths 0–160 with our magic byte and each kind forced half the time; the media
    /// packets and RFC 8888 reports are also fuzzed by `crates/fwd/fuzz/run.sh`).
    #[test]
    fn random_bytes_never_panic() {
        let mut rng = l4s_core::Rng::new(42);
        let kinds = [
            KIND_PROBE,
            KIND_PRAGUE_DATA,
            KIND_PRAGUE_ACK,
            KIND_MEDIA_DATA,
            KIND_MEDIA_FEEDBACK,
        ];
        let mut ours = 0;
        for _ in 0..400_000 {
            let len = (rng.next_u64() % 161) as usize;
            let mut b: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            if len >= 2 && rng.next_u64().is_multiple_of(2) {
                b[0] = MAGIC;
                b[1] = kinds[(rng.next_u64() % kinds.len() as u64) as usize];
            }
            ours += usize::from(decode(&b).is_some());
            let _ = data_prefix(&b);
            if let Some((_, _, _, _, rest)) = decode_common(&b) {
                let _ = l4s_media::wire::decode(rest);
            }
        }
        assert!(ours > 1000, "the sweep reached the decoders: {ours}");
    }

    #[test]
    fn round_trips_and_rejects_garbage() {
        let cases = [
            Body::Probe(ProbeHeader {
                seq: u64::MAX - 3,
                sent_at: Time(123_456_789),
            }),
            Body::Prague(UdpPragueHeader::Data {
                seq: -5,
                timestamp: i32::MAX,
                echoed_ts: 0,
                frame: None,
            }),
            Body::Prague(UdpPragueHeader::Data {
                seq: 7,
                timestamp: 1,
                echoed_ts: 2,
                frame: Some(FrameInfo {
                    frame_nr: 3,
                    frame_sent: 4,
                    frame_size: 5,
                }),
            }),
            Body::Prague(UdpPragueHeader::Ack {
                ack_seq: 1,
                timestamp: 2,
                echoed_ts: 3,
                packets_received: 4,
                packets_ce: i32::MIN,
                packets_lost: 6,
                error_l4s: true,
            }),
        ];
        for body in cases {
            let d = Datagram {
                flow: 9,
                sent: Time(123_456_789),
                body,
            };
            let mut buf = vec![0xaa; payload_len(200, false)];
            assert!(encode(&d, &mut buf));
            assert_eq!(decode(&buf), Some(d));
            assert_eq!(frame_len(buf.len(), false), 200);
            match body {
                Body::Prague(UdpPragueHeader::Ack { .. }) => assert_eq!(data_prefix(&buf), None),
                Body::Probe(h) => assert_eq!(data_prefix(&buf), Some((9, d.sent, h.seq as u32))),
                Body::Prague(UdpPragueHeader::Data { seq, .. }) => {
                    assert_eq!(data_prefix(&buf), Some((9, d.sent, seq as u32)))
                }
            }
            // Truncated or corrupted: rejected, no panic.
            assert_eq!(decode(&buf[..MIN_DATAGRAM - 1]), None);
            let mut bad = buf.clone();
            bad[0] = b'X';
            assert_eq!(decode(&bad), None);
            assert_eq!(data_prefix(&bad), None);
        }
        assert!(!encode(
            &Datagram {
                flow: 0,
                sent: Time(0),
                body: cases[0]
            },
            &mut [0u8; 10]
        ));
        // Tiny frames still carry the header; IPv6 frames have 20 B more overhead.
        assert_eq!(payload_len(64, false), MIN_DATAGRAM);
        assert_eq!(payload_len(1514, true), 1452);
        for len in 0..80 {
            for fill in [0u8, 1, 2, 3, 0xff] {
                let mut v = vec![fill; len];
                if len >= 4 {
                    v[0] = MAGIC;
                }
                let _ = decode(&v);
                let _ = data_prefix(&v);
            }
        }
    }

    #[test]
    fn common_header_of_media_datagrams() {
        let mut buf = vec![0xaau8; 100];
        assert!(encode_common(KIND_MEDIA_DATA, 70_000, Time(5), 0xdead_beef, &mut buf));
        assert!(buf[COMMON_LEN..].iter().all(|&x| x == 0));
        let (kind, flow, sent, seq32, rest) = decode_common(&buf).unwrap();
        // The flow index saturates at the 16-bit field.
        assert_eq!(
            (kind, flow, sent, seq32, rest.len()),
            (KIND_MEDIA_DATA, 65_535, Time(5), 0xdead_beef, 84)
        );
        assert_eq!(data_prefix(&buf), Some((65_535, Time(5), 0xdead_beef)));
        assert!(encode_common(KIND_MEDIA_FEEDBACK, 1, Time(5), 0, &mut buf));
        assert_eq!(data_prefix(&buf), None);
        assert!(!encode_common(
            KIND_MEDIA_DATA,
            1,
            Time(5),
            0,
            &mut [0u8; COMMON_LEN - 1]
        ));
        assert_eq!(decode_common(&buf[..COMMON_LEN - 1]), None);
        buf[0] = b'X';
        assert_eq!(decode_common(&buf), None);
        // A media datagram is not a probe or udp_prague datagram.
        assert!(encode_common(KIND_MEDIA_DATA, 1, Time(5), 0, &mut buf));
        assert_eq!(decode(&buf), None);
    }
}
