//! Completion times over an idle path (10 ms each way, no rate limit), in round trips.

mod common;
use common::*;
use l4s_apps::CompletionKind;
use l4s_core::Dur;

const ONE_WAY: u64 = 10;
const RTT: Dur = Dur::from_millis(2 * ONE_WAY);

fn assert_near(what: &str, d: Dur, expect: Dur, tol: Dur) {
    assert!(
        d + tol >= expect && d <= expect + tol,
        "{what}: {:.3} ms, expected {:.3} ms ± {:.3} ms",
        f_ms(d),
        f_ms(expect),
        f_ms(tol)
    );
}

#[test]
fn request_response_persistent_takes_one_rtt_after_setup() {
    let c = cfg(r#"
kind = "request-response"
request = 200
response = 1000
think = "100ms"
count = 5
"#);
    let mut net = Net::idle(&c, ms(ONE_WAY));
    net.run_until(t_ms(2000));
    let r = net.of(CompletionKind::Response);
    assert_eq!(r.len(), 5);
    // The first request opens the connection: request, SYN, SYN-ACK, response = 2 RTT.
    assert_near("first (with set-up)", r[0].duration(), RTT * 2, ms(1) / 2);
    for x in &r[1..] {
        assert_near("later", x.duration(), RTT, ms(1) / 2);
        assert_eq!(x.bytes, 1000);
        assert_eq!(x.retries, 0);
    }
    // Closed loop: each request 100 ms after the previous response.
    for w in r.windows(2) {
        assert_eq!(w[1].started - w[0].completed, ms(100));
    }
    // One connection for all five.
    let syns = net
        .trace
        .iter()
        .filter(|s| matches!(s.header, l4s_apps::AppHeader::Tcp { seg, .. } if seg.flags.contains(l4s_transport::tcp::TcpFlags::SYN) && s.forward))
        .count();
    assert_eq!(syns, 1);
    assert!(l4s_transport::Endpoint::stats(&net.rcv).finished);
    assert!(l4s_transport::Endpoint::stats(&net.snd).finished);
}

#[test]
fn request_response_new_connection_takes_two_rtt() {
    let c = cfg(r#"
kind = "request-response"
response = 1000
persistent = false
repeat = "200ms"
count = 4
"#);
    let mut net = Net::idle(&c, ms(ONE_WAY));
    net.run_until(t_ms(2000));
    let r = net.of(CompletionKind::Response);
    assert_eq!(r.len(), 4);
    for (i, x) in r.iter().enumerate() {
        assert_near("new connection", x.duration(), RTT * 2, ms(1) / 2);
        assert_eq!(x.started, t_ms(200 * i as u64), "open loop every 200 ms");
    }
    // Each request had its own connection, all closed and removed at both ends.
    assert_eq!(net.snd.open_connections(), 0);
    assert_eq!(net.rcv.open_connections(), 0);
}

#[test]
fn dns_like_query_takes_one_rtt() {
    let c = cfg(r#"
kind = "query"
repeat = "50ms"
count = 6
"#);
    let mut net = Net::idle(&c, ms(ONE_WAY));
    net.run_until(t_ms(1000));
    let q = net.of(CompletionKind::Query);
    assert_eq!(q.len(), 6);
    for x in &q {
        assert_eq!(x.duration(), RTT);
        assert_eq!(x.bytes, 256);
    }
    // Query 64 B + 42 B of headers; reply 256 + 42.
    let sizes: Vec<(bool, u32)> = net.trace.iter().map(|s| (s.forward, s.size)).collect();
    assert!(
        sizes.contains(&(false, 106)) && sizes.contains(&(true, 298)),
        "{sizes:?}"
    );
}

/// Rounds of unpaced slow start (IW, doubling per round: delayed ACKs every 2 segments
/// with byte counting give +1 segment per segment acknowledged) to send `segs` segments
/// with a window that starts at `cwnd`; returns (rounds, cwnd after).
fn slow_start_rounds(segs: u64, mut cwnd: u64) -> (u64, u64) {
    let (mut sent, mut rounds) = (0, 0);
    while sent < segs {
        let flight = cwnd.min(segs - sent);
        sent += flight;
        cwnd += flight;
        rounds += 1;
    }
    (rounds, cwnd)
}

fn web_page(pacing: bool) -> (Dur, Dur) {
    let c = cfg(&format!(
        r#"
kind = "web"
objects = 10
object_size = "100KB"
connections = 2
[tcp]
pacing = {pacing}
"#
    ));
    let mut net = Net::idle(&c, ms(ONE_WAY));
    net.run_until(t_ms(5000));
    let pages = net.of(CompletionKind::Page);
    assert_eq!(pages.len(), 1);
    assert_eq!(pages[0].bytes, 1_000_000);
    assert_eq!(net.of(CompletionKind::Object).len(), 10);
    assert_eq!(net.snd.open_connections(), 0);

    // Expectation: each connection fetches 5 objects in turn. The first costs the request
    // (½ RTT), the handshake (1 RTT) and ½ RTT for the first flight, then one more RTT per
    // further slow-start round; later objects cost one RTT per round with the grown window.
    let mss = 1448u64;
    let segs = 100_000u64.div_ceil(mss);
    let mut cwnd = 10;
    let mut rtts = 0;
    for k in 0..5 {
        let (rounds, after) = slow_start_rounds(segs, cwnd);
        cwnd = after;
        rtts += if k == 0 { 2 + (rounds - 1) } else { rounds };
    }
    (pages[0].duration(), RTT * rtts)
}

#[test]
fn web_page_completes_in_the_slow_start_round_count() {
    let (got, expect) = web_page(false);
    // 70 segments per object: 10 + 20 + 40 on a new connection (4 RTT with set-up), then 1
    // RTT for each of the 4 others: 8 RTT = 160 ms.
    assert_eq!(expect, ms(160));
    assert_near("page, unpaced", got, expect, RTT);
    // Paced at 2×cwnd/srtt in slow start, each flight spreads over up to half an RTT.
    let (paced, _) = web_page(true);
    assert!(
        paced >= got && paced <= expect + RTT * 2,
        "paced page {:.1} ms",
        f_ms(paced)
    );
}
