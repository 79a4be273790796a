//! Completion times over a rate-limited path: behind a standing FIFO queue, and for a
//! bulk transfer that fills the link.

mod common;
use common::*;
use l4s_apps::CompletionKind;
use l4s_core::{Dur, Rate};

const ONE_WAY: u64 = 10;
const RTT: Dur = Dur::from_millis(2 * ONE_WAY);

/// A 10 Mbit/s forward link with a 1000-packet FIFO, and an unlimited reverse path.
fn rated(c: &l4s_apps::AppConfig) -> Net {
    Net::new(
        c,
        Link::new(ms(ONE_WAY), Some(Rate::mbps(10)), 1000),
        Link::new(ms(ONE_WAY), None, usize::MAX),
    )
}

fn rr_times(queue_pkts: usize) -> Vec<Dur> {
    let c = cfg(r#"
kind = "request-response"
response = 1000
think = "50ms"
count = 8
"#);
    let mut net = rated(&c);
    if queue_pkts > 0 {
        // 1250-byte cross packets take exactly 1 ms at 10 Mbit/s; one more every 1 ms
        // keeps the queue standing at `queue_pkts` ms.
        net.standing_queue(queue_pkts, 1250, ms(1));
    }
    net.run_until(Dur::from_secs(5).into_time());
    let r = net.of(CompletionKind::Response);
    assert_eq!(r.len(), 8);
    r.iter().skip(1).map(|x| x.duration()).collect()
}

trait IntoTime {
    fn into_time(self) -> l4s_core::Time;
}
impl IntoTime for Dur {
    fn into_time(self) -> l4s_core::Time {
        l4s_core::Time(self.0)
    }
}

#[test]
fn request_response_grows_by_the_standing_queue_delay() {
    let idle = rr_times(0);
    let bloated = rr_times(100);
    // Idle: one RTT plus the response's own serialisation (1066 B at 10 Mbit/s = 0.85 ms).
    for d in &idle {
        assert!((f_ms(*d) - 20.853).abs() < 0.01, "idle {:.3} ms", f_ms(*d));
    }
    // Behind a 100 ms standing queue: 100 ms more. Each of our own packets (SYN, the
    // handshake ACK, responses) adds its serialisation time to the queue for good, since
    // the cross traffic keeps the link busy: at most ~1 ms per packet, so allow 10 ms.
    for (i, (b, a)) in bloated.iter().zip(&idle).enumerate() {
        let growth = f_ms(*b) - f_ms(*a);
        assert!(
            (100.0..=110.0).contains(&growth),
            "exchange {}: grew by {growth:.3} ms",
            i + 1
        );
    }
    // And the request timeout adapted to the longer exchanges instead of firing.
    assert!(rr_retries(100) == 0);
}

fn rr_retries(queue_pkts: usize) -> u32 {
    let c = cfg(r#"
kind = "request-response"
response = 1000
think = "50ms"
count = 8
"#);
    let mut net = rated(&c);
    net.standing_queue(queue_pkts, 1250, ms(1));
    net.run_until(l4s_core::Time::from_secs(5));
    net.completions.iter().map(|c| c.retries).sum()
}

#[test]
fn bulk_completion_is_handshake_slow_start_and_line_rate() {
    let bytes = 2_000_000u64;
    let c = cfg(r#"
kind = "bulk"
bytes = "2MB"
cc = "cubic"
"#);
    let mut net = rated(&c);
    net.run_until(l4s_core::Time::from_secs(10));
    let t = net.of(CompletionKind::Transfer);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].bytes, bytes);
    let got = t[0].duration();

    // Expectation: request + handshake + first flight = 2 RTT to the first byte, then
    // unpaced slow-start rounds (IW 10, doubling) until a flight fills the pipe, then the
    // rest at line rate. Frames are 1514 B for 1448 B of payload.
    let rate = Rate::mbps(10);
    let mss = 1448u64;
    let segs = bytes.div_ceil(mss);
    let seg_tx = rate.tx_time(1514);
    let (mut sent, mut cwnd, mut elapsed) = (0u64, 10u64, RTT * 2 - RTT);
    while sent < segs && seg_tx * cwnd < RTT {
        sent += cwnd;
        cwnd *= 2;
        elapsed += RTT;
    }
    let expect = elapsed + seg_tx * (segs - sent.min(segs)) + RTT / 2 + seg_tx;
    // (Here: one round of 10 segments fits the 16.5-segment pipe, then 1372 at line rate.)
    assert!((f_ms(expect) - 1713.0).abs() < 1.0, "{:.1}", f_ms(expect));
    assert!(
        got + RTT >= expect && got <= expect + RTT,
        "bulk took {:.1} ms, expected {:.1} ms ± 1 RTT",
        f_ms(got),
        f_ms(expect)
    );
    // Goodput: payload over completion time, close to the payload share of the link.
    let goodput = bytes as f64 * 8.0 / got.as_secs_f64();
    let ceiling = 10e6 * 1448.0 / 1514.0;
    assert!(
        goodput > 0.85 * ceiling && goodput < ceiling,
        "goodput {:.2} Mbit/s",
        goodput / 1e6
    );
    assert_eq!(net.fwd.dropped, 0);
    assert_eq!(net.snd.open_connections(), 0, "the transfer's connection is closed");
}
