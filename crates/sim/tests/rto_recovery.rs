//! A CUBIC flow that loses a long burst to a time-limited FIFO and recovers by a
//! retransmission timeout: after the RTO the window grows in slow start from the loss
//! window while the burst is retransmitted (RFC 5681 §3.1, RFC 6298 §5, RFC 6675 §5.1),
//! so the link is busy again within a few round trips.

use l4s_core::Dur;
use std::io::Write;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);
impl Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// 20 Mbit/s, 18 ms, a FIFO that drops on arrival once its head has waited 211 ms: at
/// about 16.2 s the delay limit drops some 360 packets in a row, fast recovery's
/// retransmissions among them, and the retransmission timer fires.
const SCENARIO: &str = r#"
[scenario]
name = "repro-rto-stall"
duration = "60s"
warmup = "10s"
[topology]
type = "dumbbell"
rate = "20Mbit"
rtt = "18ms"
aqm = { kind = "fifo", limit_time = "211ms" }
[[flows]]
name = "tcp"
type = "tcp"
cc = "cubic"
start = "1s"
"#;

const LINK_BPS: f64 = 20e6;
const INTERVAL_S: f64 = 0.1;

#[test]
fn cubic_after_burst_loss_and_rto_refills_the_link_within_a_second() {
    let sc = l4s_scenario::load_str(SCENARIO, std::path::Path::new("repro-rto-stall.toml")).unwrap();
    let (f, q) = (Buf::default(), Buf::default());
    let opts = l4s_sim::RunOptions {
        seed: None,
        duration: None,
        snapshots: Some((Dur::from_millis(100), Box::new(f.clone()), Box::new(q))),
        distributions: None,
        pcap: None,
        timeline: None,
        stop: None,
    };
    let (summary, _) = l4s_sim::run(sc, opts, &mut |_| {}).unwrap();
    let text = String::from_utf8(f.0.lock().unwrap().clone()).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
    let col = |name: &str| rows[0].iter().position(|c| *c == name).unwrap();
    let (ct, cthr, clost) = (col("time_s"), col("throughput_bps"), col("lost"));
    // (interval end, throughput, packets lost) after the warm-up.
    let series: Vec<(f64, f64, u64)> = rows[1..]
        .iter()
        .map(|r| {
            (
                r[ct].parse().unwrap(),
                r[cthr].parse().unwrap(),
                r[clost].parse().unwrap(),
            )
        })
        .filter(|x: &(f64, f64, u64)| x.0 > 10.0 + 1e-9)
        .collect();

    // The loss event: the first run of intervals with losses after the warm-up; it must
    // still be a burst of ≥ 300 packets (else this test checks nothing).
    let first = series.iter().position(|x| x.2 > 0).expect("no loss after the warm-up");
    let burst: u64 = series[first..].iter().take_while(|x| x.2 > 0).map(|x| x.2).sum();
    let t_loss = series[first].0 - INTERVAL_S;
    assert!(burst >= 300, "loss event at {t_loss:.1} s lost only {burst} packets");

    // From the loss on, the throughput never stays below half the link rate for more than
    // 1 s (10 intervals of 100 ms).
    let mut longest = (0usize, 0.0f64);
    let mut run = 0usize;
    for x in &series[first..] {
        if x.1 < LINK_BPS / 2.0 {
            run += 1;
            if run > longest.0 {
                longest = (run, x.0);
            }
        } else {
            run = 0;
        }
    }
    let below_s = longest.0 as f64 * INTERVAL_S;
    eprintln!(
        "loss of {burst} packets at {t_loss:.1} s; longest stretch below {} Mbit/s: {below_s:.1} s (ending {:.1} s); \
         throughput 10-60 s {:.2} Mbit/s",
        LINK_BPS / 2e6,
        longest.1,
        summary.flows[0].throughput_bps / 1e6
    );
    assert!(
        below_s <= 1.0 + 1e-9,
        "below half the link rate for {below_s:.1} s, until {:.1} s",
        longest.1
    );
}
