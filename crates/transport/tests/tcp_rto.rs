//! Recovery from a retransmission timeout after a long burst of losses, with the real
//! controllers of `l4s-cc`.
//!
//! After an RTO the sender marks every segment outstanding and not SACKed at the timeout
//! lost (RFC 6675 §5.1), sets cwnd to the loss window of one segment and grows it in slow
//! start up to ssthresh (RFC 5681 §3.1, RFC 6298 §5), retransmitting the lost segments as
//! the window allows. The burst is therefore repaired in about log2(burst) round trips,
//! not in one round trip per segment.

mod common;

use std::cell::Cell;
use std::rc::Rc;

use common::{Net, PathCfg};
use l4s_cc::{build, CcParams};
use l4s_core::{Dur, Rate, Time};
use l4s_transport::tcp::*;

const MSS: u64 = 1448;
/// Segments lost in a row.
const BURST: u64 = 300;

/// A bulk flow over 20 Mbit/s and an 18 ms base RTT, limited by a receive window of
/// exactly `BURST` segments (so the flight is `BURST` segments and a standing queue
/// builds). At 3 s the forward path goes dark until the sender's tail loss probe has been
/// lost too: the whole window of `BURST` segments sent after that is lost in a row, and
/// nothing is left to be acknowledged, so the retransmission timer fires. Returns
/// (round trips from the RTO until every segment outstanding at the RTO is acknowledged,
/// round trips until the flight is back to 90 % of the window, segments outstanding at
/// the RTO, the time from the RTO to the repair).
fn burst_loss_then_rto(cc: &str) -> (u32, u32, u64, Dur) {
    let cc_box = build(cc, &CcParams::default()).unwrap();
    let s = TcpSender::new(TcpConfig::default(), cc_box, Time::ZERO);
    let r = TcpReceiver::new(TcpReceiverConfig {
        rwnd: BURST * MSS,
        ..Default::default()
    });
    let fwd = PathCfg {
        rate: Rate::mbps(20),
        delay: Dur::from_millis(9),
        queue_limit: 4_000_000,
        ..Default::default()
    };
    let rev = PathCfg {
        delay: Dur::from_millis(9),
        ..Default::default()
    };
    let mut n = Net::new(s, r, fwd, rev);
    let dark = Rc::new(Cell::new(false));
    let d = dark.clone();
    n.fwd.drop_fn = Some(Box::new(move |_, h: &TcpSegment| h.len > 0 && d.get()));

    n.run_until(Time::from_secs(3), |_| false);
    assert_eq!(n.s.rto_count(), 0, "{cc}: RTO before the burst");
    let flight = n.s.snd_nxt() - n.s.snd_una();
    assert!(flight >= (BURST - 2) * MSS, "{cc}: flight {} segments", flight / MSS);
    dark.set(true);
    let tlp0 = n.s.tlp_count();
    n.run_until(Time::from_secs(10), |n| n.s.tlp_count() > tlp0 || n.s.rto_count() > 0);
    dark.set(false);
    let lost = n.fwd.forced_drops;
    assert!(lost > BURST, "{cc}: only {lost} segments lost");

    // The retransmission timer fires: nothing is left that could be acknowledged.
    n.run_until(Time::from_secs(10), |n| n.s.rto_count() > 0);
    assert_eq!(n.s.rto_count(), 1, "{cc}: no RTO");
    let t_rto = n.now;
    let high = n.s.snd_nxt();
    let outstanding = (high - n.s.snd_una()) / MSS;

    // Packet-timed round trips (as RACK and Linux time them): a round that began at `t`
    // ends when an ACK arrives whose timestamp echo (RFC 7323 §4.3) is that of a segment
    // sent at or after `t`; the next round begins then. The reverse path is a pure 9 ms
    // delay, so an ACK put on it at `t` reaches the sender at `t + 9 ms`.
    let rev_delay = Dur::from_millis(9);
    n.rev.log = Some(Vec::new());
    let mut seen = 0usize;
    let mut round_start = t_rto;
    let mut rounds = 0u32;
    let mut repaired: Option<(u32, Time)> = None;
    let mut full: Option<u32> = None;
    n.run_until(t_rto + Dur::from_secs(60), |n| {
        let log = n.rev.log.as_ref().unwrap();
        while seen < log.len() && log[seen].0 + rev_delay <= n.now {
            let (sent, h, _, _) = &log[seen];
            if h.ts_ecr > round_start.0 {
                rounds += 1;
                round_start = *sent + rev_delay;
            }
            seen += 1;
        }
        if repaired.is_none() && n.s.snd_una() >= high {
            repaired = Some((rounds, n.now));
        }
        if full.is_none() && n.s.bytes_in_flight() * 10 >= BURST * MSS * 9 {
            full = Some(rounds);
        }
        repaired.is_some() && full.is_some()
    });
    let (repair_rounds, t_repair) = repaired.unwrap_or_else(|| panic!("{cc}: holes not repaired in 60 s"));
    let full_rounds = full.unwrap_or_else(|| panic!("{cc}: window not restored in 60 s"));
    assert_eq!(n.s.rto_count(), 1, "{cc}: more RTOs during the repair");
    (repair_rounds, full_rounds, outstanding, t_repair - t_rto)
}

#[test]
fn burst_of_300_losses_recovers_within_15_round_trips_after_rto() {
    let results: Vec<_> = ["reno", "cubic", "dctcp", "prague"]
        .into_iter()
        .map(|cc| (cc, burst_loss_then_rto(cc)))
        .collect();
    for (cc, (repair, full, outstanding, dt)) in &results {
        eprintln!(
            "{cc}: {outstanding} segments outstanding at the RTO, repaired in {repair} round trips ({dt}), \
             flight back to 90 % of the window in {full} round trips"
        );
    }
    for (cc, (repair, full, outstanding, dt)) in results {
        assert!(outstanding >= BURST - 2, "{cc}: {outstanding} outstanding");
        assert!(repair <= 15, "{cc}: repair took {repair} round trips ({dt})");
        assert!(full <= 15, "{cc}: window restored after {full} round trips");
    }
}
