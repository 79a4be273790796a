//! Setting CE on the wire (RFC 1624 eqn. 3, RFC 3168; Linux `IP_ECN_set_ce`), section 11 of
//! the DualPI2 unit properties.

use l4s_aqm::ecn_rewrite::*;
use l4s_core::Ecn;

fn v4(tos: u8) -> [u8; 20] {
    let mut h = [
        0x45, tos, 0x00, 0x3c, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x06, 0, 0, 0xac, 0x10, 0x0a, 0x63, 0xac, 0x10, 0x0a, 0x0c,
    ];
    let c = ipv4_header_checksum(&h).unwrap();
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

fn csum(h: &[u8]) -> u16 {
    u16::from_be_bytes([h[10], h[11]])
}

#[test]
fn ipv4_checksum_vectors() {
    assert_eq!(csum(&v4(0x00)), 0xB1E6);
    assert_eq!(csum(&v4(0x01)), 0xB1E5);
    assert_eq!(csum(&v4(0x02)), 0xB1E4);
    assert_eq!(csum(&v4(0x03)), 0xB1E3);
    for tos in 0..4 {
        assert_eq!(ones_sum(&v4(tos)), 0xFFFF);
    }
}

#[test]
fn ipv4_set_ce_incremental_equals_recompute() {
    for (tos, old) in [(0x01u8, 0xB1E5u16), (0x02, 0xB1E4)] {
        let mut h = v4(tos);
        assert_eq!(csum(&h), old);
        assert_eq!(ip_ecn(&h), Ecn::from_bits(tos));
        assert_eq!(ipv4_set_ce(&mut h), Ok(true));
        assert_eq!(h[1], 0x03);
        assert_eq!(csum(&h), 0xB1E3);
        assert_eq!(h, v4(0x03));
        assert_eq!(ones_sum(&h), 0xFFFF);
        assert_eq!(ip_ecn(&h), Ecn::Ce);
    }
    // With DSCP bits set too (DSCP 45 = NQB, ECT(1)).
    let mut h = v4((45 << 2) | 1);
    assert_eq!(ip_dscp(&h), 45);
    assert_eq!(ip_set_ce(&mut h), Ok(true));
    assert_eq!(h, v4((45 << 2) | 3));
    // Linux's formula: check += 0xFFFB + ((tos + 1) & 3), end-around carry.
    for tos in [1u8, 2] {
        let h = v4(tos);
        let s = csum(&h) as u32 + 0xFFFB + ((tos as u32 + 1) & 3);
        let linux = ((s & 0xFFFF) + (s >> 16)) as u16;
        assert_eq!(linux, 0xB1E3);
    }
    // Generic RFC 1624 update on an arbitrary word.
    assert_eq!(checksum_update(0xB1E5, 0x4501, 0x4503), 0xB1E3);
}

#[test]
fn ce_stays_ce_and_not_ect_is_never_rewritten() {
    let mut h = v4(0x03);
    assert_eq!(ipv4_set_ce(&mut h), Ok(true));
    assert_eq!(h, v4(0x03));
    let mut h = v4(0x00);
    assert_eq!(ipv4_set_ce(&mut h), Ok(false));
    assert_eq!(h, v4(0x00));
    let mut h = v4(45 << 2);
    assert_eq!(ip_set_ce(&mut h), Ok(false));
    assert_eq!(h, v4(45 << 2));
}

#[test]
fn ipv6_set_ce_vectors() {
    let mut h = [0u8; 40];
    h[0] = 0x60;
    for (ecn, changes) in [(0u8, false), (1, true), (2, true), (3, true)] {
        let mut p = h;
        p[1] = (ecn << 4) | 0x05; // flow label bits preserved
        let before = p;
        assert_eq!(ip_ecn(&p), Ecn::from_bits(ecn));
        let r = ip_set_ce(&mut p);
        assert_eq!(r, Ok(changes));
        if changes {
            assert_eq!(p[1], 0x35);
            assert_eq!(ip_ecn(&p), Ecn::Ce);
            assert_eq!(p[0], before[0]);
            assert_eq!(p[2..], before[2..]);
        } else {
            assert_eq!(p, before);
        }
    }
    // DSCP straddles bytes 0 and 1.
    h[0] = 0x60 | (45 >> 2);
    h[1] = (45 & 3) << 6;
    assert_eq!(ip_dscp(&h), 45);
    h[1] |= 0x10;
    let mut p = h;
    assert_eq!(ipv6_set_ce(&mut p), Ok(true));
    assert_eq!(ip_dscp(&p), 45);
}

#[test]
fn garbage_never_panics() {
    let mut empty: [u8; 0] = [];
    assert_eq!(ip_set_ce(&mut empty), Err(RewriteError::Truncated));
    assert_eq!(ip_ecn(&empty), Ecn::NotEct);
    let mut short4 = [0x45, 0x01, 0x00];
    assert_eq!(ipv4_set_ce(&mut short4), Err(RewriteError::Truncated));
    assert_eq!(short4, [0x45, 0x01, 0x00]);
    assert_eq!(ip_ecn(&short4), Ecn::NotEct);
    let mut bad_ihl = v4(1);
    bad_ihl[0] = 0x44;
    assert_eq!(ipv4_set_ce(&mut bad_ihl), Err(RewriteError::NotIp));
    let mut long_ihl = v4(1);
    long_ihl[0] = 0x46; // claims 24 bytes, has 20
    assert_eq!(ipv4_set_ce(&mut long_ihl), Err(RewriteError::Truncated));
    let mut short6 = [0x60, 0x10, 0, 0];
    assert_eq!(ip_set_ce(&mut short6), Err(RewriteError::Truncated));
    let mut other = [0x20u8; 60];
    assert_eq!(ip_set_ce(&mut other), Err(RewriteError::NotIp));
    assert_eq!(ip_ecn(&other), Ecn::NotEct);
    assert_eq!(ipv4_set_ce(&mut [0x60u8; 40]), Err(RewriteError::NotIp));
    assert_eq!(ipv6_set_ce(&mut [0x45u8; 40]), Err(RewriteError::NotIp));
    // Every short prefix and every first byte: no panic.
    let base = v4(2);
    for len in 0..=base.len() {
        for first in 0..=255u8 {
            let mut b = base[..len].to_vec();
            if let Some(x) = b.first_mut() {
                *x = first;
            }
            let _ = ip_set_ce(&mut b);
            let _ = ip_ecn(&b);
            let _ = ip_dscp(&b);
            let _ = ethernet_set_ce(&mut b);
        }
    }
}

#[test]
fn ethernet_frames() {
    let mut f = vec![0u8; 12];
    f.extend_from_slice(&[0x81, 0x00, 0x00, 0x05, 0x08, 0x00]); // one VLAN tag, IPv4
    f.extend_from_slice(&v4(1));
    assert_eq!(ethernet_ip_offset(&f), Some(18));
    assert_eq!(ethernet_set_ce(&mut f), Ok(true));
    assert_eq!(&f[18..], &v4(3));
    let mut arp = vec![0u8; 12];
    arp.extend_from_slice(&[0x08, 0x06, 0, 0]);
    assert_eq!(ethernet_set_ce(&mut arp), Err(RewriteError::NotIp));
}
