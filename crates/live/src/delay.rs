//! A userspace propagation-delay element: a transparent layer-2 bump in the wire between
//! two interfaces that holds every frame for a constant time per direction.
//!
//! The kernel here has no netem, and the l4s-fwd forwarder has a queue and a pacer but no
//! delay line, so the live testbed puts one of these on every link of the scenario that has
//! a propagation delay (for a dumbbell: each flow's access link, as the simulator does).
//! A constant delay keeps the order of frames, so each direction is a FIFO whose head is the
//! only deadline to wait for; waits use `ppoll(2)` with nanosecond timeouts and 1 ns timer
//! slack. Frames live in reused buffers; at most `max_frames` are held per direction (the
//! bandwidth-delay product of the fastest link is far below the default), beyond which
//! frames are dropped and counted, so memory is bounded.
//!
//! It also plays the faulty middlebox of a scenario's `fault` (bleach, remark ECT(1) to
//! ECT(0), CE on everything ECN-capable) on the A→B direction, rewriting the IPv4 header
//! with its checksum or the IPv6 traffic class through `l4s_aqm::ecn_rewrite`.

use l4s_core::{Dur, Ecn, Time};
use l4s_fwd::afpacket::{monotonic_now, wait_readable, PacketSocket, Received};
use l4s_fwd::lateness::{Lateness, LatenessStats};
use l4s_fwd::FwdError;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a faulty middlebox does to ECN (mirrors `l4s_scenario::FaultKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnFault {
    Bleach,
    Remark,
    MarkAll,
}

/// A delay element between two interfaces of the calling thread's namespace.
#[derive(Clone, Debug, PartialEq)]
pub struct DelayConfig {
    pub a: String,
    pub b: String,
    pub delay_ab: Dur,
    pub delay_ba: Dur,
    /// Frames held at most per direction.
    pub max_frames: usize,
    /// Rewrite the ECN field of A→B frames from `fault.1` (CLOCK_MONOTONIC) on.
    pub fault: Option<(EcnFault, Time)>,
    /// Run under SCHED_FIFO at this priority (as the forwarder does), so that other work on
    /// the host does not delay the release of frames; without the privilege it runs on
    /// under the normal scheduler.
    pub realtime_priority: Option<u8>,
}

impl DelayConfig {
    pub fn new(a: &str, b: &str, delay_ab: Dur, delay_ba: Dur) -> DelayConfig {
        DelayConfig {
            a: a.to_string(),
            b: b.to_string(),
            delay_ab,
            delay_ba,
            max_frames: 200_000,
            fault: None,
            realtime_priority: Some(10),
        }
    }
}

/// Counters of a delay element, per direction (0 = A→B, 1 = B→A).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DelayStats {
    pub forwarded: [u64; 2],
    /// Dropped because `max_frames` were held.
    pub overflow_drops: [u64; 2],
    /// Longer than the buffer (offloads left on, or an MTU mismatch).
    pub oversize_drops: [u64; 2],
    pub tx_errors: [u64; 2],
    /// Frames whose ECN field the fault rewrote.
    pub rewritten: u64,
    /// Most frames held at once.
    pub peak_frames: [usize; 2],
    /// How late frames were released after their due time (arrival plus delay): the
    /// element's own share of every delay a run measures.
    pub lateness: [LatenessStats; 2],
    /// Frames the kernel gave no usable receive time for (timed from when they were read).
    pub unstamped: [u64; 2],
}

/// Rewrite the ECN field of an Ethernet frame carrying IPv4 or IPv6 (no VLAN tags: the
/// testbed's veths carry none). Returns whether it changed.
pub fn rewrite_ecn(frame: &mut [u8], fault: EcnFault) -> bool {
    if frame.len() < 14 + 20 {
        return false;
    }
    let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    let ip = &mut frame[14..];
    let cur = match ethertype {
        0x0800 if ip[0] >> 4 == 4 => Ecn::from_bits(ip[1]),
        0x86dd if ip.len() >= 40 && ip[0] >> 4 == 6 => Ecn::from_bits(ip[1] >> 4),
        _ => return false,
    };
    let new = match (fault, cur) {
        (EcnFault::Bleach, _) => Ecn::NotEct,
        (EcnFault::Remark, Ecn::Ect1) => Ecn::Ect0,
        (EcnFault::MarkAll, e) if e.is_ect() => Ecn::Ce,
        (_, e) => e,
    };
    if new == cur {
        return false;
    }
    if ethertype == 0x0800 {
        // RFC 1624 incremental update of the header checksum for the changed first word.
        let old = u16::from_be_bytes([ip[0], ip[1]]);
        ip[1] = (ip[1] & !3) | new.bits();
        let word = u16::from_be_bytes([ip[0], ip[1]]);
        let hc = u16::from_be_bytes([ip[10], ip[11]]);
        let hc = l4s_aqm::ecn_rewrite::checksum_update(hc, old, word);
        ip[10..12].copy_from_slice(&hc.to_be_bytes());
    } else {
        ip[1] = (ip[1] & 0xcf) | (new.bits() << 4);
    }
    true
}

/// Forward between `cfg.a` and `cfg.b` until `stop` is set.
pub fn run(cfg: &DelayConfig, stop: &AtomicBool) -> Result<DelayStats, FwdError> {
    let socks = [PacketSocket::open(&cfg.a)?, PacketSocket::open(&cfg.b)?];
    let buf_len = (socks[0].mtu().max(socks[1].mtu()) as usize + 14 + 8).div_ceil(64) * 64;
    let delays = [cfg.delay_ab, cfg.delay_ba];
    let mut held: [VecDeque<(Time, Vec<u8>)>; 2] = [VecDeque::new(), VecDeque::new()];
    let mut free: Vec<Vec<u8>> = Vec::new();
    let mut st = DelayStats::default();
    let mut late = [Lateness::new(), Lateness::new()];
    crate::endpoints::precise_timers();
    if let Some(p) = cfg.realtime_priority {
        // Best effort: without CAP_SYS_NICE the element still works, only less precisely.
        let _ = l4s_fwd::afpacket::set_realtime(p);
    }
    let fds = [socks[0].raw_fd(), socks[1].raw_fd()];
    while !stop.load(Ordering::Relaxed) {
        let now = monotonic_now();
        for dir in 0..2 {
            // Read what is waiting (a bounded number per round so the other side is served).
            for _ in 0..256 {
                let mut buf = free.pop().unwrap_or_else(|| vec![0u8; buf_len]);
                buf.resize(buf_len, 0);
                match socks[dir].recv_one_at(&mut buf)? {
                    None => {
                        free.push(buf);
                        break;
                    }
                    Some((Received::Skip, _)) => free.push(buf),
                    Some((Received::Oversize(_), _)) => {
                        st.oversize_drops[dir] += 1;
                        free.push(buf);
                    }
                    Some((Received::Frame(n), stamp)) => {
                        if held[dir].len() >= cfg.max_frames {
                            st.overflow_drops[dir] += 1;
                            free.push(buf);
                            continue;
                        }
                        buf.truncate(n);
                        if dir == 0 {
                            if let Some((f, from)) = cfg.fault {
                                if now >= from && rewrite_ecn(&mut buf, f) {
                                    st.rewritten += 1;
                                }
                            }
                        }
                        // Due after the delay from the kernel's receive time (a frame that
                        // waited in the socket while this thread was held back has been on
                        // the wire that long), never before the frame ahead of it.
                        if stamp.is_none() {
                            st.unstamped[dir] += 1;
                        }
                        let arrived = stamp.unwrap_or(now).min(now);
                        let due = (arrived + delays[dir]).max(held[dir].back().map_or(Time::ZERO, |h| h.0));
                        held[dir].push_back((due, buf));
                        st.peak_frames[dir] = st.peak_frames[dir].max(held[dir].len());
                    }
                }
            }
        }
        let now = monotonic_now();
        for dir in 0..2 {
            let out = &socks[1 - dir];
            while let Some((due, _)) = held[dir].front() {
                if *due > now {
                    break;
                }
                let Some((due, f)) = held[dir].pop_front() else { break };
                late[dir].record(now.since(due).as_nanos());
                match out.send(&f) {
                    Ok(true) => st.forwarded[dir] += 1,
                    // Busy or failed: the frame is lost, as on a congested wire.
                    Ok(false) | Err(_) => st.tx_errors[dir] += 1,
                }
                if free.len() < 1024 {
                    free.push(f);
                }
            }
        }
        let now = monotonic_now();
        let mut wake = now + Dur::from_millis(50);
        for h in &held {
            if let Some((due, _)) = h.front() {
                wake = wake.min(*due);
            }
        }
        if wake > now {
            wait_readable(&fds, wake.since(now).as_nanos());
        }
    }
    st.lateness = [late[0].stats(), late[1].stats()];
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4_frame(ecn: Ecn) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 8];
        f[12] = 0x08;
        f[14] = 0x45;
        f[15] = ecn.bits();
        f[16..18].copy_from_slice(&28u16.to_be_bytes());
        f[22] = 64;
        f[23] = 17;
        // Header checksum.
        let mut sum = 0u32;
        for i in (14..34).step_by(2) {
            sum += u16::from_be_bytes([f[i], f[i + 1]]) as u32;
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        f[24..26].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        f
    }

    fn checksum_ok(f: &[u8]) -> bool {
        let mut sum = 0u32;
        for i in (14..34).step_by(2) {
            sum += u16::from_be_bytes([f[i], f[i + 1]]) as u32;
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum == 0xffff
    }

    #[test]
    fn faults_rewrite_with_valid_checksums() {
        for (fault, from, to) in [
            (EcnFault::Bleach, Ecn::Ect1, Ecn::NotEct),
            (EcnFault::Bleach, Ecn::Ce, Ecn::NotEct),
            (EcnFault::Remark, Ecn::Ect1, Ecn::Ect0),
            (EcnFault::Remark, Ecn::Ect0, Ecn::Ect0),
            (EcnFault::MarkAll, Ecn::Ect0, Ecn::Ce),
            (EcnFault::MarkAll, Ecn::NotEct, Ecn::NotEct),
        ] {
            let mut f = v4_frame(from);
            assert!(checksum_ok(&f));
            let changed = rewrite_ecn(&mut f, fault);
            assert_eq!(changed, from != to, "{fault:?} {from}");
            assert_eq!(Ecn::from_bits(f[15]), to, "{fault:?} {from}");
            assert!(checksum_ok(&f), "{fault:?} {from}: checksum");
        }
        // IPv6: the traffic class straddles bytes 0 and 1.
        let mut f = vec![0u8; 14 + 40];
        f[12] = 0x86;
        f[13] = 0xdd;
        f[14] = 0x60 | 0x0b; // version 6, upper TC nibble 0xb
        f[15] = (Ecn::Ect1.bits() << 4) | 0x5;
        assert!(rewrite_ecn(&mut f, EcnFault::Remark));
        assert_eq!(f[14], 0x6b);
        assert_eq!(f[15], (Ecn::Ect0.bits() << 4) | 0x5);
        // Garbage and non-IP frames are left alone.
        assert!(!rewrite_ecn(&mut [0u8; 10], EcnFault::Bleach));
        let mut arp = vec![0u8; 60];
        arp[12] = 0x08;
        arp[13] = 0x06;
        assert!(!rewrite_ecn(&mut arp, EcnFault::Bleach));
    }
}
