//! Closed-loop checks of the PI controller with an unresponsive source on a constant-rate link
//! (overload with and without `drop_overload`, as Linux `must_drop` and
//! `calculate_probability` handle it; RFC 9332 §4.2.3): the only "model" here is a link that
//! serialises one packet at a time, so the bounds are tight.

mod common;
use common::*;

use l4s_aqm::config::DualPi2Config;
use l4s_aqm::{DropReason, DualPi2, Enqueued, Qdisc, MAX_PROB};
use l4s_core::{Dur, Ecn, Rate, Rng, Time};

#[derive(Default, Debug)]
struct Outcome {
    arrivals: u64,
    tail_drops: u64,
    aqm_drops: u64,
    sent: u64,
    marked_or_ce: u64,
    sojourn_sum: f64,
    prob_sum: f64,
    prob_max: f64,
    ticks: u64,
}

/// Packets of `ecn` arrive at `load` × the link rate (100 Mbit/s, 1514 B) for `secs` seconds;
/// statistics are collected after `warmup` seconds.
fn run(cfg: DualPi2Config, ecn: Ecn, load: f64, secs: u64, warmup: u64) -> Outcome {
    let rate = Rate::mbps(100);
    let tx = rate.tx_time(1514);
    let gap = Dur((tx.as_nanos() as f64 / load) as u64);
    let mut q: DualPi2<TestPkt> = DualPi2::new(&cfg, Rng::new(42));
    let mut o = Outcome::default();
    let mut drops = Vec::new();
    let (mut next_arrival, mut link_free) = (Time::ZERO, Time::ZERO);
    let end = Time::from_secs(secs);
    let measure = Time::from_secs(warmup);
    loop {
        let timer = q.next_timeout().unwrap();
        let departure = if q.len_packets() > 0 { link_free } else { Time::MAX };
        let now = next_arrival.min(timer).min(departure);
        if now >= end {
            break;
        }
        let on = now >= measure;
        if now == timer {
            q.on_timeout(now);
            if on {
                let p = q.prob() as f64 / MAX_PROB as f64;
                o.prob_sum += p;
                o.prob_max = o.prob_max.max(p);
                o.ticks += 1;
            }
        } else if now == departure {
            drops.clear();
            let d = q.dequeue(now, &mut drops);
            if on {
                o.aqm_drops += drops.iter().filter(|d| d.reason != DropReason::Overlimit).count() as u64;
            }
            if let Some(d) = d {
                link_free = now + tx;
                if on {
                    o.sent += 1;
                    o.marked_or_ce += (d.pkt.ecn == Ecn::Ce) as u64;
                    o.sojourn_sum += d.sojourn.as_secs_f64();
                }
            }
        } else {
            if q.len_packets() == 0 && link_free < now {
                link_free = now;
            }
            let r = q.enqueue(pkt(ecn), now);
            if on {
                o.arrivals += 1;
                if matches!(r, Enqueued::Dropped(_)) {
                    o.tail_drops += 1;
                }
            }
            next_arrival = now + gap;
        }
    }
    o
}

impl Outcome {
    fn drop_frac(&self) -> f64 {
        (self.aqm_drops + self.tail_drops) as f64 / self.arrivals as f64
    }
    fn mean_sojourn_ms(&self) -> f64 {
        self.sojourn_sum / self.sent as f64 * 1e3
    }
    fn mean_prob(&self) -> f64 {
        self.prob_sum / self.ticks as f64
    }
}

#[test]
fn unresponsive_classic_at_twice_capacity() {
    let o = run(DualPi2Config::default(), Ecn::NotEct, 2.0, 15, 5);
    assert_eq!(o.tail_drops, 0);
    assert!((o.drop_frac() - 0.5).abs() < 0.03, "{o:?}");
    assert!((o.mean_prob() - 0.71).abs() < 0.03, "{}", o.mean_prob());
    assert!((o.mean_sojourn_ms() - 15.0).abs() < 3.0, "{}", o.mean_sojourn_ms());
}

#[test]
fn unresponsive_l4s_at_twice_capacity_drop_overload() {
    let o = run(DualPi2Config::default(), Ecn::Ect1, 2.0, 15, 5);
    assert_eq!(o.tail_drops, 0);
    assert!((o.drop_frac() - 0.5).abs() < 0.03, "{o:?}");
    assert!((o.mean_prob() - 0.71).abs() < 0.03, "{}", o.mean_prob());
    // Every survivor is CE; the L delay is regulated to the PI target, not to the step.
    assert_eq!(o.marked_or_ce, o.sent);
    assert!((o.mean_sojourn_ms() - 15.0).abs() < 3.0, "{}", o.mean_sojourn_ms());
}

#[test]
fn unresponsive_classic_at_1_2_capacity() {
    let o = run(DualPi2Config::default(), Ecn::NotEct, 1.2, 20, 5);
    assert!((o.drop_frac() - 1.0 / 6.0).abs() < 0.02, "{o:?}");
}

#[test]
fn unresponsive_l4s_overflow_mode() {
    let cfg = DualPi2Config {
        drop_overload: false,
        limit: 2000,
        ..Default::default()
    };
    let o = run(cfg, Ecn::Ect1, 2.0, 10, 4);
    assert_eq!(o.aqm_drops, 0);
    assert!(o.prob_max <= 0.5 + 1e-9, "{}", o.prob_max);
    assert!((o.drop_frac() - 0.5).abs() < 0.02, "{o:?}");
    // Queue at the limit: delay = limit × 1514 B / 100 Mbit/s = 242 ms.
    let full = 2000.0 * 1514.0 * 8.0 / 100e6 * 1e3;
    assert!(
        (o.mean_sojourn_ms() - full).abs() < 0.02 * full,
        "{} vs {full}",
        o.mean_sojourn_ms()
    );
    assert_eq!(o.marked_or_ce, o.sent);
}
