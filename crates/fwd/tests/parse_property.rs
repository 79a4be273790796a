//! Property test of the packet parser: 100 000 random and mutated frames. The parser must
//! never panic, every offset it returns must lie inside the frame, and CE marking must
//! change only the ECN bits (plus the IPv4 checksum, which stays valid) of ECN-capable IP
//! packets and nothing at all otherwise.

use l4s_aqm::ecn_rewrite::{ipv4_header_checksum, ones_sum};
use l4s_core::{Ecn, QueuePacket, Rng, Time};
use l4s_fwd::packet::{parse, Frame, IpVersion, Parsed};

fn seed_frames() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    // IPv4/UDP with a valid checksum, ECT(1).
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let mut ip = vec![
        0x45, 0x01, 0, 48, 0, 1, 0x40, 0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2,
    ];
    let c = ipv4_header_checksum(&ip).unwrap();
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&[0x30, 0x39, 0x13, 0x88, 0, 28, 0, 0]);
    f.extend_from_slice(&[0x55; 20]);
    v.push(f.clone());
    // IPv4/TCP with options.
    let mut t = f.clone();
    t[14] = 0x46;
    t[23] = 6;
    t[17] = 52;
    t.splice(34..34, [1, 1, 1, 0]);
    t.extend_from_slice(&[0; 8]);
    let c = ipv4_header_checksum(&t[14..38]).unwrap();
    t[24..26].copy_from_slice(&c.to_be_bytes());
    v.push(t);
    // IPv6 with a hop-by-hop and a fragment header, then UDP.
    let mut s = vec![
        2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xDD, 0x60, 0x10, 0, 0, 0, 32, 0, 64,
    ];
    s.extend_from_slice(&[0xfd; 32]);
    s.extend_from_slice(&[44, 0, 1, 4, 0, 0, 0, 0, 17, 0, 0, 1, 0, 0, 0, 9]);
    s.extend_from_slice(&[0, 1, 0, 2, 0, 16, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
    v.push(s);
    // VLAN-tagged ARP.
    let mut a = vec![0xff; 6];
    a.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x81, 0x00, 0, 3, 0x08, 0x06]);
    a.extend_from_slice(&[0; 28]);
    v.push(a);
    v
}

fn check(frame: &[u8]) {
    let parsed = parse(frame);
    if let Parsed::Ip(i) = parsed {
        let end = i.l3_end as usize;
        assert!(end <= frame.len());
        assert!((i.l3_offset as usize) < end);
        for off in [i.l4_offset, i.payload_offset].into_iter().flatten() {
            assert!(off as usize <= end, "offset {off} beyond {end}");
        }
        if i.version == IpVersion::V4 {
            assert!(end - i.l3_offset as usize >= 20);
        }
    }
    let before = frame.to_vec();
    let valid_v4_sum = match parsed {
        Parsed::Ip(i) if i.version == IpVersion::V4 => {
            let ihl = (frame[i.l3_offset as usize] & 15) as usize * 4;
            Some((
                i.l3_offset as usize,
                ihl,
                ones_sum(&frame[i.l3_offset as usize..][..ihl]) == 0xFFFF,
            ))
        }
        _ => None,
    };
    match Frame::new(frame.to_vec().into_boxed_slice(), frame.len(), Time::ZERO) {
        Err((_, _)) => assert!(matches!(parsed, Parsed::Malformed(_))),
        Ok(mut fr) => {
            let ecn = fr.ecn();
            let _ = fr.flow_hash();
            let marked = fr.set_ce();
            assert_eq!(marked, ecn.is_ect());
            let after = fr.bytes();
            assert_eq!(after.len(), before.len());
            if !ecn.is_ect() || ecn == Ecn::Ce {
                assert_eq!(after, &before[..], "a Not-ECT or CE frame must not change");
                return;
            }
            assert_eq!(fr.ecn(), Ecn::Ce);
            let Parsed::Ip(i) = parse(after) else {
                panic!("a marked frame still parses")
            };
            assert_eq!(i.ecn, Ecn::Ce);
            let changed: Vec<usize> = (0..before.len()).filter(|&k| before[k] != after[k]).collect();
            let l3 = i.l3_offset as usize;
            match i.version {
                IpVersion::V4 => {
                    assert!(
                        changed.iter().all(|&k| k == l3 + 1 || k == l3 + 10 || k == l3 + 11),
                        "{changed:?}"
                    );
                    let (off, ihl, valid) = valid_v4_sum.unwrap();
                    if valid {
                        assert_eq!(ones_sum(&after[off..off + ihl]), 0xFFFF, "checksum must stay valid");
                    }
                }
                IpVersion::V6 => assert!(changed.iter().all(|&k| k == l3 + 1), "{changed:?}"),
            }
        }
    }
}

#[test]
fn hundred_thousand_random_and_mutated_frames() {
    let mut rng = Rng::new(0x5EED);
    let seeds = seed_frames();
    let mut counts = [0usize; 3];
    for n in 0..100_000 {
        let frame: Vec<u8> = if n % 5 == 0 {
            // Pure noise of random length, with an IP EtherType half the time.
            let len = rng.below(200) as usize;
            let mut f: Vec<u8> = (0..len).map(|_| rng.next_u32() as u8).collect();
            if len >= 14 && rng.chance(0.5) {
                let et: [u8; 2] = if rng.chance(0.5) { [8, 0] } else { [0x86, 0xDD] };
                f[12..14].copy_from_slice(&et);
                if len > 14 {
                    f[14] = (f[14] & 0x0F) | if et[0] == 8 { 0x40 } else { 0x60 };
                }
            }
            f
        } else {
            let mut f = seeds[rng.below(seeds.len() as u64) as usize].clone();
            for _ in 0..=rng.below(4) {
                match rng.below(4) {
                    0 if !f.is_empty() => {
                        let k = rng.below(f.len() as u64) as usize;
                        f[k] = rng.next_u32() as u8;
                    }
                    1 => f.truncate(rng.below(f.len() as u64 + 1) as usize),
                    2 => f.extend((0..rng.below(16)).map(|_| rng.next_u32() as u8)),
                    _ if !f.is_empty() => {
                        let k = rng.below(f.len() as u64) as usize;
                        f[k] ^= 1 << rng.below(8);
                    }
                    _ => {}
                }
            }
            f
        };
        counts[match parse(&frame) {
            Parsed::Ip(_) => 0,
            Parsed::NonIp { .. } => 1,
            Parsed::Malformed(_) => 2,
        }] += 1;
        check(&frame);
    }
    // The mutations reach every verdict often enough to mean something.
    assert!(counts.iter().all(|&c| c > 5_000), "{counts:?}");
}
