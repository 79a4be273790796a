//! Hot-path smoke test: packets per second through each discipline (printed with
//! `--nocapture`). The bound is loose (the simulator needs > 1 M packets/s; this machine may
//! be shared), it catches accidental per-packet allocation or quadratic behaviour.

mod common;
use common::*;

use l4s_aqm::config::AqmConfig;
use l4s_aqm::{build, KINDS};
use l4s_core::{Dur, Ecn, Rng, Time};

#[test]
fn throughput_of_every_kind() {
    const N: u64 = 1_000_000;
    for kind in KINDS {
        let cfg = AqmConfig::default_for_kind(kind).unwrap();
        let mut q = build::<TestPkt>(&cfg, Rng::new(1));
        let mut drops = Vec::with_capacity(64);
        let start = std::time::Instant::now();
        let mut t = Time::ZERO;
        let ecns = [Ecn::Ect1, Ecn::NotEct, Ecn::Ect0, Ecn::Ect1];
        for i in 0..N {
            t += Dur::from_nanos(12_112);
            q.enqueue(
                TestPkt {
                    hash: (i % 8) as u32 * 0x1000_0000,
                    ..pkt_id(ecns[(i % 4) as usize], i)
                },
                t,
            );
            if i % 64 != 63 {
                q.dequeue(t, &mut drops);
            }
            if let Some(nt) = q.next_timeout() {
                if nt <= t {
                    q.on_timeout(t);
                }
            }
            drops.clear();
        }
        let secs = start.elapsed().as_secs_f64();
        let rate = N as f64 / secs;
        println!("{kind}: {:.2} M packets/s", rate / 1e6);
        assert!(rate > 500_000.0, "{kind}: {rate}");
    }
}
