//! The shared-medium forwarder (`l4s_fwd::medium`) between real interfaces: a Wi-Fi BSS of
//! one station whose downlink is offered more than the MAC carries delivers what the model
//! says the channel carries (root: namespaces and AF_PACKET).

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use l4s_aqm::{AqmConfig, FifoConfig};
use l4s_core::{Dur, Time};
use l4s_fwd::afpacket::monotonic_now;
use l4s_fwd::medium::{run_medium, MediumConfig};
use l4s_link::wifi::airtime::mean_backoff;
use l4s_link::wifi::{
    plan_exchange, AmpduLimits, BssConfig, ExchangeConfig, GuardInterval, PhyMode, Standard, StationConfig,
};
use l4s_link::LinkConfig;

/// An error-free HE 80 MHz, 2-stream, MCS 9 station (960.8 Mbit/s PHY), its downlink offered
/// 900 Mbit/s of 1514-byte frames for 3 s: every TXOP carries a full A-MPDU, so the
/// interface towards the station receives the MAC's saturation throughput, AIFS + mean
/// post-backoff + PPDU + SIFS + BlockAck per A-MPDU (within 2 %: the model keeps its own
/// timeline, so only the draws of the backoff part it from the analytic figure), and the
/// station's counters say the same. It is judged on the TXOPs that found a full A-MPDU
/// waiting (see [`judge`]).
#[test]
fn a_saturated_station_receives_the_mac_throughput_of_its_ampdus() {
    if !root() {
        return;
    }
    let mode = PhyMode::new(Standard::He, 80, 2, 9, GuardInterval::Ns800).unwrap();
    let fifo = AqmConfig::Fifo(FifoConfig {
        limit: 2000,
        ..FifoConfig::default()
    });
    let mut link = LinkConfig::new(None, Dur::ZERO, fifo.clone());
    let bss = BssConfig::new(vec![StationConfig::new("laptop", mode)], fifo.clone(), fifo);
    let ba_window = bss.ba_window;
    link.wifi = Some(Arc::new(bss));
    let ex = plan_exchange(
        &mode,
        std::iter::repeat_n(1514u32, 64),
        &ExchangeConfig {
            backoff: mean_backoff(15),
            // The BSS's BlockAck window sets the BlockAck's bitmap (64 bits, 32 bytes).
            limits: AmpduLimits {
                max_bytes: 65_535,
                ba_window,
                ..AmpduLimits::new(Standard::He)
            },
            ..ExchangeConfig::new(&mode)
        },
    )
    .unwrap();
    let analytic = ex.ampdu.mpdus as f64 * 1514.0 * 8.0 / ex.airtime().as_secs_f64() / 1e6;
    for attempt in 0..3 {
        let bed = testbed();
        let mut cfg = MediumConfig::new(vec![("ra".into(), "rb".into())], link.clone());
        cfg.status_interval = Dur::from_millis(500);
        let stop = Arc::new(AtomicBool::new(false));
        let origin = Arc::new(AtomicU64::new(monotonic_now().as_nanos()));
        let (s, o) = (stop.clone(), origin.clone());
        // Every frame the model sent towards the station: when it reached the input
        // interface, when its TXOP began (`time` less its share of the PPDU), its size.
        let h = bed
            .r
            .spawn("medium", move || {
                let mut sent = Vec::new();
                let res = run_medium(&cfg, &s, &o, &mut |_| {}, &mut |r| {
                    if r.decision == l4s_fwd::router::Decision::Pass && r.direction == 0 {
                        sent.push((r.arrival, Time(r.time.as_nanos() - r.serialisation.as_nanos()), r.size));
                    }
                });
                res.map(|st| (st, sent))
            })
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let tx = udp_in(&bed.a, &format!("{A_V4}:0"));
        blast(&tx, &format!("{B_V4}:9"), 1472, 900e6, Duration::from_secs(3));
        stop.store(true, Ordering::SeqCst);
        let (stats, sent) = h.join().unwrap().unwrap().unwrap();
        let run = judge(&sent, ex.ampdu.mpdus);
        let down = &stats.directions[0];
        let (_, wifi) = stats.wifi.clone().expect("the BSS's counters");
        let st = &wifi.stations[0];
        let per_ampdu_all = st.stats.mpdus[0] as f64 / st.stats.ppdus[0].max(1) as f64;
        let late = down.lateness.over_1ms as f64 / down.tx_packets.max(1) as f64;
        println!(
            "medium: {:.1} Mbit/s over back-to-back full TXOPs against {analytic:.1} analytic, \
             {:.2} MPDUs per A-MPDU where {} were waiting ({} of {} PPDUs; {per_ampdu_all:.2} over all), \
             {} frames sent on the interface, late > 1 ms {late:.4}, kernel drops {}, {}",
            run.mbps,
            run.per_ampdu,
            ex.ampdu.mpdus,
            run.given,
            run.ppdus,
            down.tx_packets,
            down.kernel_drops,
            stats.realtime
        );
        // The model is judged on the load it was given: a sender held back by the host's
        // other work leaves the queue short now and then, and a TXOP that finds fewer
        // frames than an A-MPDU holds carries what there is. The TXOPs given a full queue
        // are judged when there are 1000 or more of them (their backoffs' mean then within
        // about 0.15 slots, 0.2 % of an exchange); a run with fewer, or one whose
        // forwarder was held back, is measured again.
        let given_enough = run.given >= 1000;
        if given_enough
            && (run.mbps / analytic - 1.0).abs() < 0.02
            && (run.per_ampdu - ex.ampdu.mpdus as f64).abs() < 0.5
        {
            return;
        }
        assert!(
            (!given_enough || late > 0.001) && attempt < 2,
            "{:.1} Mbit/s against {analytic:.1}, {:.2} MPDUs per A-MPDU, {} of {} PPDUs given a full queue",
            run.mbps,
            run.per_ampdu,
            run.given,
            run.ppdus
        );
        println!("the host held the sender or the forwarder back; measuring again");
    }
}

/// What [`judge`] found in one run.
struct Judged {
    /// TXOPs, and those that began with at least a full A-MPDU of frames waiting.
    ppdus: usize,
    given: usize,
    /// Frames taken per TXOP over the latter.
    per_ampdu: f64,
    /// Throughput over pairs of consecutive such TXOPs: the bytes of the first over the time
    /// from its TXOP's start to the next's (one whole exchange: AIFS, backoff, PPDU, SIFS,
    /// BlockAck).
    mbps: f64,
}

/// Group the frames sent (arrival, TXOP start, size; in order of sending) by the TXOP that
/// took them from the queue, and count for each TXOP the frames that were waiting when it
/// began: those that reached the input interface at least 1 ms before (time enough for the
/// forwarder to read them) less those already taken. Frames pass in FIFO order, so a TXOP
/// with `planned` frames waiting had a full A-MPDU to send. A TXOP takes the frame that no
/// longer fits too and sends it first in the next, so under saturation the frames taken per
/// TXOP are the MPDUs per A-MPDU.
fn judge(sent: &[(Time, Time, u32)], planned: usize) -> Judged {
    let mut arrivals: Vec<Time> = sent.iter().map(|f| f.0).collect();
    arrivals.sort_unstable();
    // (start, frames, bytes, given)
    let mut ppdus: Vec<(Time, usize, u64, bool)> = Vec::new();
    for (before, &(_, start, size)) in sent.iter().enumerate() {
        match ppdus.last_mut() {
            Some(p) if p.0 == start => {
                p.1 += 1;
                p.2 += u64::from(size);
            }
            _ => {
                let margin = Time(start.as_nanos().saturating_sub(1_000_000));
                let waiting = arrivals.partition_point(|&a| a <= margin).saturating_sub(before);
                ppdus.push((start, 1, u64::from(size), waiting >= planned));
            }
        }
    }
    let given: Vec<_> = ppdus.iter().filter(|p| p.3).collect();
    let per_ampdu = given.iter().map(|p| p.1).sum::<usize>() as f64 / given.len().max(1) as f64;
    let (mut bytes, mut ns) = (0u64, 0u64);
    for w in ppdus.windows(2).filter(|w| w[0].3 && w[1].3) {
        bytes += w[0].2;
        ns += w[1].0.since(w[0].0).as_nanos();
    }
    Judged {
        ppdus: ppdus.len(),
        given: given.len(),
        per_ampdu,
        mbps: bytes as f64 * 8.0 / (ns.max(1) as f64 / 1e9) / 1e6,
    }
}
