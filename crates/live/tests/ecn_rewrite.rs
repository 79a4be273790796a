//! `ecn-check` through a path that rewrites the ECN field: a userspace UDP relay on
//! loopback plays a faulty middlebox (bleaching, remarking ECT(1) to ECT(0), marking
//! everything CE) in one direction at a time, and the verdict must name the fault and
//! the direction it is in.

use l4s_core::Ecn;
use l4s_live::ecncheck::{check, serve, CheckConfig, Ect1Fate, ReflectorConfig};
use l4s_live::udp::EcnUdpSocket;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone, Copy)]
enum Fault {
    None,
    Bleach,
    Remark,
    MarkAll,
}

fn apply(f: Fault, e: Ecn) -> Ecn {
    match (f, e) {
        (Fault::None, e) => e,
        (Fault::Bleach, _) => Ecn::NotEct,
        (Fault::Remark, Ecn::Ect1) => Ecn::Ect0,
        (Fault::Remark, e) => e,
        (Fault::MarkAll, Ecn::NotEct) => Ecn::NotEct,
        (Fault::MarkAll, _) => Ecn::Ce,
    }
}

/// A relay between one client and `upstream`, rewriting ECN per direction.
fn relay(upstream: SocketAddr, fwd: Fault, rev: Fault, stop: Arc<AtomicBool>) -> SocketAddr {
    let s = EcnUdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = s.local_addr().unwrap();
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    std::thread::spawn(move || {
        let mut client: Option<SocketAddr> = None;
        let mut buf = [0u8; 2048];
        while !stop.load(Ordering::Relaxed) {
            let Ok(r) = s.recv_from(&mut buf) else { continue };
            let ecn = r.ecn().unwrap_or(Ecn::NotEct);
            if r.from == upstream {
                if let Some(c) = client {
                    let _ = s.send_to(&buf[..r.len], c, apply(rev, ecn));
                }
            } else {
                client = Some(r.from);
                let _ = s.send_to(&buf[..r.len], upstream, apply(fwd, ecn));
            }
        }
    });
    addr
}

fn run(fwd: Fault, rev: Fault) -> l4s_live::ecncheck::Report {
    let stop = Arc::new(AtomicBool::new(false));
    let sock = EcnUdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let refl = sock.local_addr().unwrap();
    let s2 = stop.clone();
    let h = std::thread::spawn(move || serve(&sock, ReflectorConfig::default(), &s2, &mut |_, _| {}).unwrap());
    let via = relay(refl, fwd, rev, stop.clone());
    let cfg = CheckConfig {
        probes: 4,
        interval: Duration::from_millis(1),
        wait: Duration::from_millis(500),
        ..CheckConfig::default()
    };
    let r = check(via, cfg).unwrap();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    assert_eq!(r.replies, [4; 4], "{r}");
    r
}

#[test]
fn bleaching_is_found_in_the_direction_it_happens() {
    let r = run(Fault::Bleach, Fault::None);
    assert_eq!(r.forward.ect1, Ect1Fate::Bleached);
    assert!(!r.forward.ce_seen);
    assert_eq!(r.forward.ce_preserved, Some(false));
    assert_eq!(r.reverse.ect1, Ect1Fate::Survives);
    assert!(!r.l4s_ok());
    let text = r.to_string();
    assert!(text.contains("ECT(1) is bleached to Not-ECT"), "{text}");
    assert!(text.contains("L4S: NOT OK"), "{text}");

    let r = run(Fault::None, Fault::Bleach);
    assert_eq!(r.forward.ect1, Ect1Fate::Survives);
    assert_eq!(r.reverse.ect1, Ect1Fate::Bleached);
}

#[test]
fn remarking_and_mark_all_are_named() {
    let r = run(Fault::Remark, Fault::None);
    assert_eq!(r.forward.ect1, Ect1Fate::Remarked);
    assert_eq!(r.forward.ect0_preserved, Some(true), "ECT(0) untouched by a remarker");
    assert_eq!(r.forward.ce_preserved, Some(true));
    assert!(r.to_string().contains("remarked to ECT(0)"));

    let r = run(Fault::None, Fault::MarkAll);
    assert_eq!(r.reverse.ect1, Ect1Fate::AllCe);
    assert!(r.reverse.ce_seen);
    // Not-ECT stays Not-ECT (CE only on ECN-capable packets).
    assert!(!r.reverse.not_ect_upgraded);
    assert_eq!(r.forward.ect1, Ect1Fate::Survives);
}
