//! A byte encoding of [`MediaHeader`] for media packets on real sockets (the live
//! testbed), where the simulator hands the header over as a value.
//!
//! Every encoding starts with one byte: the format version in the high nibble
//! ([`VERSION`]) and the packet type in the low nibble ([`TYPE_DATA`], [`TYPE_FEEDBACK`]).
//! All integers are big-endian (network order, as RTP and RTCP).
//!
//! Data (`MediaData`, [`DATA_LEN`] bytes, then zero padding up to the size of the packet
//! the sender asked for, so that the wire carries the encoder's bytes):
//!
//! ```text
//! 0        1      2       6     8        16      20      24            28
//! | ver/ty | flags | ssrc | seq | frame  | index | count | frame_bytes |
//! 28                 36         44        52
//! | frame_first_sent | captured | sent_at | padding ...
//! ```
//! flags: bit 0 audio, bit 1 marker (last packet of the frame), bit 2 key frame; the other
//! bits are zero. Times are nanoseconds of the sender's clock.
//!
//! Feedback (an RFC 8888 CCFB report, which is itself a byte format, RFC 8888 §3.1):
//!
//! ```text
//! 0        1     2        4
//! | ver/ty | 0   | len u16 | report bytes (len) ...
//! ```
//!
//! Decoding checks the version, the type, every length and the reserved bits, and returns
//! a [`WireError`] for anything else: it never panics on bytes from the network.

use crate::endpoint::{Feedback, MediaData, MediaHeader};
use l4s_core::Time;

/// Version of this encoding (high nibble of the first byte).
pub const VERSION: u8 = 1;
/// Low nibble of the first byte: a media data packet.
pub const TYPE_DATA: u8 = 1;
/// Low nibble of the first byte: an RFC 8888 feedback report.
pub const TYPE_FEEDBACK: u8 = 2;
/// Bytes of an encoded [`MediaData`] before its padding.
pub const DATA_LEN: usize = 52;
/// Bytes before the report in an encoded feedback packet.
pub const FEEDBACK_HEADER_LEN: usize = 4;
/// Longest report a feedback packet carries (a 16-bit length).
pub const MAX_FEEDBACK: usize = u16::MAX as usize;

const FLAG_AUDIO: u8 = 1;
const FLAG_MARKER: u8 = 2;
const FLAG_KEY: u8 = 4;
const FLAGS_KNOWN: u8 = FLAG_AUDIO | FLAG_MARKER | FLAG_KEY;

/// Why bytes are not a media packet, or a header does not fit a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Fewer bytes than the format needs: `need`, `got`.
    Short { need: usize, got: usize },
    /// A version this code does not speak.
    Version(u8),
    /// An unknown packet type.
    Type(u8),
    /// Reserved bits or bytes that are not zero.
    Reserved,
    /// A feedback report longer than [`MAX_FEEDBACK`].
    TooLong(usize),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Short { need, got } => write!(f, "media packet too short: need {need} bytes, got {got}"),
            WireError::Version(v) => write!(f, "media packet version {v}, expected {VERSION}"),
            WireError::Type(t) => write!(
                f,
                "media packet type {t}, expected {TYPE_DATA} (data) or {TYPE_FEEDBACK} (feedback)"
            ),
            WireError::Reserved => f.write_str("media packet has reserved bits set"),
            WireError::TooLong(n) => write!(f, "feedback report of {n} bytes, at most {MAX_FEEDBACK} fit"),
        }
    }
}

impl std::error::Error for WireError {}

/// Bytes `h` needs at least (data: [`DATA_LEN`]; feedback: header and report).
pub fn encoded_len(h: &MediaHeader) -> usize {
    match h {
        MediaHeader::Data(_) => DATA_LEN,
        MediaHeader::Feedback(f) => FEEDBACK_HEADER_LEN + f.bytes.len(),
    }
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_be_bytes());
}
fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}
fn get_u64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(x)
}
fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Write `h` at the start of `buf` and zero the rest of `buf` (the padding). Returns the
/// bytes the header itself took.
pub fn encode(h: &MediaHeader, buf: &mut [u8]) -> Result<usize, WireError> {
    let need = encoded_len(h);
    if let MediaHeader::Feedback(f) = h {
        if f.bytes.len() > MAX_FEEDBACK {
            return Err(WireError::TooLong(f.bytes.len()));
        }
    }
    if buf.len() < need {
        return Err(WireError::Short { need, got: buf.len() });
    }
    buf.fill(0);
    match h {
        MediaHeader::Data(d) => {
            buf[0] = (VERSION << 4) | TYPE_DATA;
            buf[1] = (d.is_audio as u8 * FLAG_AUDIO) | (d.marker as u8 * FLAG_MARKER) | (d.key as u8 * FLAG_KEY);
            put_u32(buf, 2, d.ssrc);
            buf[6..8].copy_from_slice(&d.seq.to_be_bytes());
            put_u64(buf, 8, d.frame);
            put_u32(buf, 16, d.index);
            put_u32(buf, 20, d.count);
            put_u32(buf, 24, d.frame_bytes);
            put_u64(buf, 28, d.frame_first_sent.as_nanos());
            put_u64(buf, 36, d.captured.as_nanos());
            put_u64(buf, 44, d.sent_at.as_nanos());
        }
        MediaHeader::Feedback(f) => {
            buf[0] = (VERSION << 4) | TYPE_FEEDBACK;
            buf[2..4].copy_from_slice(&(f.bytes.len() as u16).to_be_bytes());
            buf[FEEDBACK_HEADER_LEN..need].copy_from_slice(&f.bytes);
        }
    }
    Ok(need)
}

/// Read a media packet (padding after the header is ignored).
pub fn decode(b: &[u8]) -> Result<MediaHeader, WireError> {
    let Some(&first) = b.first() else {
        return Err(WireError::Short { need: 1, got: 0 });
    };
    if first >> 4 != VERSION {
        return Err(WireError::Version(first >> 4));
    }
    match first & 0x0f {
        TYPE_DATA => {
            if b.len() < DATA_LEN {
                return Err(WireError::Short {
                    need: DATA_LEN,
                    got: b.len(),
                });
            }
            let flags = b[1];
            if flags & !FLAGS_KNOWN != 0 {
                return Err(WireError::Reserved);
            }
            Ok(MediaHeader::Data(MediaData {
                ssrc: get_u32(b, 2),
                seq: u16::from_be_bytes([b[6], b[7]]),
                frame: get_u64(b, 8),
                index: get_u32(b, 16),
                count: get_u32(b, 20),
                frame_bytes: get_u32(b, 24),
                frame_first_sent: Time(get_u64(b, 28)),
                captured: Time(get_u64(b, 36)),
                sent_at: Time(get_u64(b, 44)),
                is_audio: flags & FLAG_AUDIO != 0,
                marker: flags & FLAG_MARKER != 0,
                key: flags & FLAG_KEY != 0,
            }))
        }
        TYPE_FEEDBACK => {
            if b.len() < FEEDBACK_HEADER_LEN {
                return Err(WireError::Short {
                    need: FEEDBACK_HEADER_LEN,
                    got: b.len(),
                });
            }
            if b[1] != 0 {
                return Err(WireError::Reserved);
            }
            let len = u16::from_be_bytes([b[2], b[3]]) as usize;
            let need = FEEDBACK_HEADER_LEN + len;
            if b.len() < need {
                return Err(WireError::Short { need, got: b.len() });
            }
            Ok(MediaHeader::Feedback(Feedback {
                bytes: b[FEEDBACK_HEADER_LEN..need].to_vec(),
            }))
        }
        t => Err(WireError::Type(t)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4s_core::Rng;

    fn data() -> MediaData {
        MediaData {
            ssrc: 0x1234_5678,
            seq: 65_535,
            frame: (1 << 40) + 7,
            index: 3,
            count: 9,
            frame_bytes: 123_456,
            frame_first_sent: Time(1_000_000_007),
            captured: Time(999_000_001),
            sent_at: Time(u64::MAX - 1),
            is_audio: false,
            marker: true,
            key: true,
        }
    }

    #[test]
    fn data_round_trips_with_padding() {
        let d = data();
        let mut buf = vec![0xffu8; 1200];
        let n = encode(&MediaHeader::Data(d), &mut buf).unwrap();
        assert_eq!(n, DATA_LEN);
        assert_eq!(buf[0], 0x11);
        assert_eq!(buf[1], FLAG_MARKER | FLAG_KEY);
        // The padding is zeroed, whatever the buffer held.
        assert!(buf[DATA_LEN..].iter().all(|&x| x == 0));
        assert_eq!(decode(&buf).unwrap(), MediaHeader::Data(d));
        // Exactly the header is enough; every flag combination survives.
        for flags in 0..8u8 {
            let d2 = MediaData {
                is_audio: flags & 1 != 0,
                marker: flags & 2 != 0,
                key: flags & 4 != 0,
                ..d
            };
            let mut b = [0u8; DATA_LEN];
            encode(&MediaHeader::Data(d2), &mut b).unwrap();
            assert_eq!(decode(&b).unwrap(), MediaHeader::Data(d2));
        }
    }

    #[test]
    fn feedback_round_trips_and_checks_its_length() {
        let f = MediaHeader::Feedback(Feedback {
            bytes: (0..=255u8).cycle().take(700).collect(),
        });
        let mut buf = vec![0u8; 800];
        assert_eq!(encode(&f, &mut buf).unwrap(), 704);
        assert_eq!(decode(&buf).unwrap(), f);
        assert_eq!(decode(&buf[..704]).unwrap(), f);
        assert_eq!(decode(&buf[..703]), Err(WireError::Short { need: 704, got: 703 }));
        let empty = MediaHeader::Feedback(Feedback { bytes: Vec::new() });
        let mut b = [0u8; 4];
        encode(&empty, &mut b).unwrap();
        assert_eq!(decode(&b).unwrap(), empty);
        let huge = MediaHeader::Feedback(Feedback {
            bytes: vec![0; MAX_FEEDBACK + 1],
        });
        let mut big = vec![0u8; MAX_FEEDBACK + 10];
        assert_eq!(encode(&huge, &mut big), Err(WireError::TooLong(MAX_FEEDBACK + 1)));
    }

    #[test]
    fn bad_buffers_and_bad_bytes_are_errors() {
        let mut small = [0u8; DATA_LEN - 1];
        assert_eq!(
            encode(&MediaHeader::Data(data()), &mut small),
            Err(WireError::Short {
                need: DATA_LEN,
                got: DATA_LEN - 1
            })
        );
        let mut buf = [0u8; DATA_LEN];
        encode(&MediaHeader::Data(data()), &mut buf).unwrap();
        assert_eq!(decode(&[]), Err(WireError::Short { need: 1, got: 0 }));
        assert_eq!(
            decode(&buf[..DATA_LEN - 1]),
            Err(WireError::Short {
                need: DATA_LEN,
                got: DATA_LEN - 1
            })
        );
        let mut v = buf;
        v[0] = 0x21;
        assert_eq!(decode(&v), Err(WireError::Version(2)));
        v[0] = 0x13;
        assert_eq!(decode(&v), Err(WireError::Type(3)));
        v = buf;
        v[1] |= 0x80;
        assert_eq!(decode(&v), Err(WireError::Reserved));
        assert_eq!(decode(&[0x12, 1, 0, 0]), Err(WireError::Reserved));
        assert!(WireError::Version(2).to_string().contains("version 2"));
    }

    #[test]
    fn random_garbage_never_panics() {
        let mut rng = Rng::new(7);
        let mut ok = 0;
        for i in 0..200_000u32 {
            let len = (rng.next_u64() % 80) as usize;
            let mut b: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            // Half of them with a valid first byte, to reach the field checks.
            if i % 2 == 0 && !b.is_empty() {
                b[0] = 0x10 | (1 + (i / 2 % 2) as u8);
            }
            if let Ok(h) = decode(&b) {
                ok += 1;
                // What decodes re-encodes to the same header.
                let mut out = vec![0u8; encoded_len(&h)];
                encode(&h, &mut out).unwrap();
                assert_eq!(decode(&out).unwrap(), h);
            }
        }
        // About 1 in 32 long random data packets has valid flags (≈ 550 expected); the rest
        // of the garbage is refused.
        assert!(ok > 200 && ok < 2000, "{ok} decoded");
    }
}
