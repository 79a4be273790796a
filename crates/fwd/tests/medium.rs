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
/// post-backoff + PPDU + SIFS + BlockAck per A-MPDU (within 5 %, as the model itself
/// reaches it in virtual time), and the station's counters say the same.
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
    link.wifi = Some(Arc::new(BssConfig::new(
        vec![StationConfig::new("laptop", mode)],
        fifo.clone(),
        fifo,
    )));
    let ex = plan_exchange(
        &mode,
        std::iter::repeat_n(1514u32, 64),
        &ExchangeConfig {
            backoff: mean_backoff(15),
            limits: AmpduLimits {
                max_bytes: 65_535,
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
        // Frames and bytes the model sent, and when the first and last went.
        let h = bed
            .r
            .spawn("medium", move || {
                let mut span: Option<(Time, Time)> = None;
                let (mut n, mut bytes) = (0u64, 0u64);
                let res = run_medium(&cfg, &s, &o, &mut |_| {}, &mut |r| {
                    if r.decision == l4s_fwd::router::Decision::Pass && r.direction == 0 {
                        span = Some(span.map_or((r.time, r.time), |(a, _)| (a, r.time)));
                        n += 1;
                        bytes += u64::from(r.size);
                    }
                });
                res.map(|st| (st, span, n, bytes))
            })
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let tx = udp_in(&bed.a, &format!("{A_V4}:0"));
        blast(&tx, &format!("{B_V4}:9"), 1472, 900e6, Duration::from_secs(3));
        stop.store(true, Ordering::SeqCst);
        let (stats, span, n, bytes) = h.join().unwrap().unwrap().unwrap();
        let (first, last) = span.expect("frames delivered");
        // From the first frame's departure to the last's, n - 1 frames' worth.
        let mbps = (bytes - bytes / n) as f64 * 8.0 / last.since(first).as_secs_f64() / 1e6;
        let down = &stats.directions[0];
        let (_, wifi) = stats.wifi.clone().expect("the BSS's counters");
        let st = &wifi.stations[0];
        let per_ampdu = st.stats.mpdus[0] as f64 / st.stats.ppdus[0].max(1) as f64;
        let late = down.lateness.over_1ms as f64 / down.tx_packets.max(1) as f64;
        println!(
            "medium: {mbps:.1} Mbit/s delivered ({n} frames, {} sent on the interface) against {analytic:.1} \
             analytic, {per_ampdu:.2} MPDUs per A-MPDU ({} planned), late > 1 ms {late:.4}, kernel drops {}, {}",
            down.tx_packets, ex.ampdu.mpdus, down.kernel_drops, stats.realtime
        );
        if (mbps / analytic - 1.0).abs() < 0.05 && (per_ampdu - ex.ampdu.mpdus as f64).abs() < 1.0 {
            return;
        }
        assert!(
            late > 0.001 && attempt < 2,
            "{mbps:.1} Mbit/s against {analytic:.1}, {per_ampdu:.2} MPDUs per A-MPDU"
        );
        println!("the host held the forwarder back; measuring again");
    }
}
