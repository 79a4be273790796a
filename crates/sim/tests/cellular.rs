//! Cellular links in whole runs: what a capacity step does to a classic queue and to an
//! L4S one with marking in the RAN, and the request–grant loop's delay seen end to end.

mod common;
use common::*;
use l4s_core::{Dur, Time};

/// 20 → 5 Mbit/s at 10 s on an FDD downlink (0.5 ms slots), one flow, 20 ms base RTT.
fn step_scenario(aqm: &str, cc: &str) -> String {
    format!(
        r#"[scenario]
name = "step"
duration = "16s"
warmup = "2s"
seed = 3
[topology]
type = "dumbbell"
rate = "20Mbit"
rate_schedule = {{ steps = [{{ at = "10s", rate = "5Mbit" }}] }}
rtt = "20ms"
aqm = {aqm}
ran = {{ slot = "0.5ms" }}
[[flows]]
name = "f"
type = "tcp"
cc = "{cc}"
"#
    )
}

/// Each data packet's enqueue time at the bottleneck (sent + the access link's 10 ms),
/// its bottleneck sojourn and its IP size.
fn at_bottleneck(rows: &[l4s_sim::timeline::PacketRow]) -> Vec<(Time, Dur, u64)> {
    rows.iter()
        .filter_map(|r| {
            let hop = r.hops.iter().flatten().find(|h| h.link == 0)?;
            Some((r.sent + Dur::from_millis(10), hop.sojourn, u64::from(r.size) - 14))
        })
        .collect()
}

/// §6.3 item 4 of the access brief: the backlog Q at the step drains at the new rate, so
/// the first packet queued after it waits Q·8/5 Mbit/s.
#[test]
fn after_a_capacity_step_the_head_of_line_delay_jumps_by_the_backlog_at_the_new_rate() {
    let (s, rows) = run_rows(&step_scenario("{ kind = \"fifo\", limit = 1000 }", "cubic"));
    let pk = at_bottleneck(&rows);
    let step = Time::from_secs(10);
    // Bytes queued at the step: enqueued before it, dequeued after it.
    let q: u64 = pk
        .iter()
        .filter(|(t, d, _)| *t < step && *t + *d >= step)
        .map(|p| p.2)
        .sum();
    let first = pk
        .iter()
        .filter(|(t, _, _)| *t >= step)
        .min_by_key(|p| p.0)
        .expect("packets after the step");
    let want = q as f64 * 8.0 / 5e6 * 1e3;
    let got = first.1.as_millis_f64();
    assert!(
        q > 50_000,
        "a classic queue stands at the step: {q} bytes; {}",
        brief(&s)
    );
    // The packet dequeued at a slot start waits for the rest of its own slot at most too.
    assert!(
        (got - want).abs() < 0.02 * want + 1.0,
        "sojourn {got:.1} ms, backlog {q} B gives {want:.1} ms"
    );
    // Classic delay then stays at the scale of the deep buffer at the new rate: CUBIC keeps
    // refilling its 1000 packets, 2.4 s at 5 Mbit/s.
    let late: Vec<f64> = pk
        .iter()
        .filter(|p| p.0 > step + Dur::from_secs(2))
        .map(|p| p.1.as_millis_f64())
        .collect();
    let mean = late.iter().sum::<f64>() / late.len() as f64;
    assert!(
        (1_000.0..2_500.0).contains(&mean),
        "mean sojourn after the step {mean:.1} ms"
    );
    eprintln!(
        "classic: backlog {q} B at the step, first sojourn {got:.1} ms (want {want:.1}), later mean {mean:.1} ms"
    );
}

/// With L4S marking in the RAN (DualPI2 on the RLC buffer, its step at 5 ms as a RAN
/// marker would be set above the slot grid's own wait), a Prague flow's queue is back under
/// about twice the marking threshold soon after the step. How soon is Prague's: its cwnd
/// is four times the new BDP, and it sheds it at α/2 per round trip with α an EWMA (gain
/// 1/16) of the marked fraction, while the queue it builds stretches each round trip to
/// about 100 ms; measured, the recovery takes about 1 s.
#[test]
fn with_ran_marking_an_l4s_flow_recovers_after_a_capacity_step() {
    let (s, rows) = run_rows(&step_scenario(
        "{ kind = \"dualpi2\", step_thresh = \"5ms\" }",
        "prague",
    ));
    let pk = at_bottleneck(&rows);
    let step = Time::from_secs(10);
    // Twice the threshold, and one packet's time at 5 Mbit/s (the grid serves a 1500-byte
    // packet in five slots of 312 bytes).
    let bound = 2.0 * 5.0 + 2.4;
    let p99 = |a: Time, b: Time| {
        let mut v: Vec<f64> = pk
            .iter()
            .filter(|p| p.0 >= a && p.0 < b)
            .map(|p| p.1.as_millis_f64())
            .collect();
        v.sort_by(f64::total_cmp);
        v[v.len() * 99 / 100]
    };
    let before = p99(Time::from_secs(5), step);
    assert!(before < bound, "before the step: p99 {before:.2} ms; {}", brief(&s));
    // The end of the last 100 ms window whose p99 is above the bound.
    let end = Time::from_secs(16);
    let mut recovered = step;
    let mut t = step;
    while t + Dur::from_millis(100) <= end {
        if p99(t, t + Dur::from_millis(100)) > bound {
            recovered = t + Dur::from_millis(100);
        }
        t += Dur::from_millis(100);
    }
    let worst = pk
        .iter()
        .filter(|p| p.0 >= step)
        .map(|p| p.1.as_millis_f64())
        .fold(0.0, f64::max);
    let after = p99(step + Dur::from_millis(1_500), end);
    eprintln!(
        "l4s: p99 {before:.2} ms before the step, worst {worst:.1} ms after it, back under {bound} ms at +{:.1} s, p99 {after:.2} ms from +1.5 s; {}",
        recovered.since(step).as_secs_f64(),
        brief(&s)
    );
    assert!(recovered <= step + Dur::from_millis(1_500), "recovered at {recovered}");
    assert!(after < bound && worst < 150.0, "{after:.2} / {worst:.1} ms");
    // The flow still fills the link: the mean capacity over the window is 14.3 Mbit/s.
    let f = flow(&s, "f");
    assert!(
        f.throughput_bps > 0.9 * (8.0 * 20e6 + 6.0 * 5e6) / 14.0,
        "{}",
        brief(&s)
    );
}

/// §6.3 item 6: an idle phone's packets wait for an SR occasion, the grant and K2. With a
/// 120 s of seven 200-byte probes a second from `from` to `to` over a 50 Mbit/s cellular
/// link (gnb to phone, with `ran`) behind a 5 ms wire from a server.
fn probes_over_a_cell(ran: &str, (from, to): (&str, &str)) -> String {
    format!(
        r#"[scenario]
name = "cell-probes"
duration = "120s"
seed = 2
[topology]
type = "custom"
[[topology.nodes]]
name = "gnb"
[[topology.nodes]]
name = "phone"
[[topology.nodes]]
name = "server"
[[topology.links]]
from = "gnb"
to = "phone"
kind = "cellular"
rate = "50Mbit"
{ran}
[[topology.links]]
from = "server"
to = "gnb"
delay = "5ms"
[[flows]]
name = "probes"
type = "probe"
from = "{from}"
to = "{to}"
pps = 7
size = "200B"
"#
    )
}

/// 10 ms SR period, a 2 ms grant delay, K2 = 4 and 0.5 ms slots (FDD), a packet sent at
/// time t arrives K = 2 + 5·0.5 = 4.5 ms after the first SR occasion (a multiple of 10 ms)
/// after t, on top of the 5 ms wire: between K and K + 10 ms. (The unit tests of
/// `l4s_link::cellular` check that random arrival times make this uniform.)
#[test]
fn an_idle_phone_waits_for_its_scheduling_request_and_grant() {
    let text = probes_over_a_cell(
        "ran = { sr_period = \"10ms\", grant_delay = \"2ms\", k2 = 4 }",
        ("phone", "server"),
    );
    let (s, rows) = run_rows(&text);
    let mut n = 0;
    for r in &rows {
        let Some(a) = r.arrival else { continue };
        let sent = r.sent.as_nanos();
        let occasion = (sent / 10_000_000 + 1) * 10_000_000;
        let want = occasion - sent + 4_500_000 + 5_000_000;
        assert_eq!(a.since(r.sent).as_nanos(), want, "sent at {}", r.sent);
        n += 1;
    }
    assert!(n > 800, "{n}");
    let mean = rows
        .iter()
        .filter_map(|r| Some(r.arrival?.since(r.sent).as_millis_f64() - 5.0))
        .sum::<f64>()
        / n as f64;
    let up = s
        .queues
        .iter()
        .find(|q| q.radio.as_ref().is_some_and(|r| r.direction == "uplink"))
        .expect("uplink");
    let ul = up
        .radio
        .as_ref()
        .and_then(|r| r.uplink.clone())
        .expect("uplink summary");
    assert_eq!(ul.scheduling_requests as usize, n, "{ul:?}");
    assert!((ul.grant_delay_mean_ms.unwrap() - (mean - 0.5)).abs() < 0.05, "{ul:?}");
}

/// DRX on the downlink (40 ms cycle, 8 ms on-duration from 0, 10 ms inactivity timer): a
/// probe packet every 143 ms finds the phone asleep unless it reaches the base station in
/// an on-duration, and then waits for the next one. 50 Mbit/s carries a 200-byte packet in
/// one 0.5 ms slot; the wire to the base station takes 5 ms.
#[test]
fn a_sleeping_phone_is_reached_at_its_next_drx_on_duration() {
    let text = probes_over_a_cell(
        "ran = { drx = { cycle = \"40ms\", on_duration = \"8ms\", inactivity = \"10ms\" } }",
        ("server", "phone"),
    );
    let (_, rows) = run_rows(&text);
    let (mut n, mut waited, mut wait_sum) = (0, 0, 0.0);
    for r in &rows {
        let Some(a) = r.arrival else { continue };
        let at_gnb = r.sent.as_nanos() + 5_000_000;
        let slot = (at_gnb / 500_000 + 1) * 500_000;
        let phase = slot % 40_000_000;
        let first = if phase < 8_000_000 {
            slot
        } else {
            slot + 40_000_000 - phase
        };
        assert_eq!(a.as_nanos(), first + 500_000, "sent at {}", r.sent);
        n += 1;
        if first > slot {
            waited += 1;
            wait_sum += (first - slot) as f64 / 1e6;
        }
    }
    assert!(n > 800, "{n}");
    // The probes' period of 1/7 s walks seven phases of the 40 ms cycle (reaching the base
    // station 5, 10.7, 16.4, 22.1, 27.9, 33.6 and 39.3 ms into it): only the first is in
    // the on-duration, and the other six wait 29, 23.5, 17.5, 12, 6 and 0.5 ms for the next
    // slot of the next one, 14.75 ms on average.
    let share = waited as f64 / n as f64;
    let mean = wait_sum / waited as f64;
    println!("{n} probes: {share:.3} waited for an on-duration, {mean:.2} ms on average");
    assert!((share - 6.0 / 7.0).abs() < 0.01, "{share}");
    assert!((mean - 14.75).abs() < 0.05, "{mean}");
}

/// A cell's queues are reported together, first, as the bottleneck they are, the core
/// link's after them (slower links first among bottlenecks; within the cell, its order).
#[test]
fn a_cells_queues_come_first_together() {
    let text = r#"[scenario]
name = "cell-order"
duration = "2s"
warmup = "1s"
[topology]
type = "custom"
[[topology.nodes]]
name = "server"
[[topology.nodes]]
name = "gnb"
[[topology.nodes]]
name = "phone1"
[[topology.nodes]]
name = "phone2"
[[topology.links]]
from = "server"
to = "gnb"
rate = "1Gbit"
delay = "5ms"
[[topology.links]]
name = "slow"
from = "phone2"
to = "server"
rate = "2Mbit"
aqm = { kind = "fifo" }
bidirectional = false
[[topology.cell]]
name = "cell"
base_station = "gnb"
[[topology.cell.ues]]
node = "phone1"
rate = "40Mbit"
reverse_rate = "10Mbit"
[[topology.cell.ues]]
node = "phone2"
rate = "20Mbit"
reverse_rate = "5Mbit"
[[flows]]
name = "a"
type = "probe"
from = "server"
to = "phone1"
"#;
    let s = common::run_toml(text);
    let names: Vec<&str> = s.queues.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "slow",
            "cell/down/phone1",
            "cell/down/phone2",
            "cell/up/phone1",
            "cell/up/phone2",
            "server->gnb",
            "server->gnb-reverse"
        ]
    );
}
