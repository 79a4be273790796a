//! The forwarder between real veths in namespaces (needs root; skipped with a message
//! without): rate accuracy, ECN marking and rewriting, drops of Not-ECT, added delay,
//! malformed frames, bounded memory.

mod common;

use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use common::*;
use l4s_aqm::{AqmConfig, DualPi2Config};
use l4s_core::{Dur, Rate, Time};
use l4s_fwd::router::{Decision, PacketRecord, RouterConfig};
use l4s_fwd::sys;

fn dualpi2() -> AqmConfig {
    AqmConfig::DualPi2(DualPi2Config::default())
}

/// One run of [`rate_check`].
struct RateRun {
    /// The delivered rate's error against the configured rate over the time the link had
    /// frames to send: the window less the time it stood idle because none had arrived.
    err: f64,
    /// The share of the window the link stood idle for want of frames: the load the host
    /// gave the forwarder, not the forwarder's doing (a sender held back by other work
    /// offers its frames late, in bursts the queue partly drops).
    starved: f64,
    /// The share of the time the link had frames to send (as for `err`) that it stood idle
    /// with a frame waiting, at most the link time the pacer counted as forfeited (woken
    /// more than `max_lag` late). Taken from the same frames and window as `err`, so the
    /// two add up.
    forfeited: f64,
    /// Frames handed on over 1 ms late.
    late: u64,
}

/// How long the A→B link stood idle between `from` and `to`: with no frame arrived (by
/// its kernel receive time) to send, and with one waiting. FIFO order means the next frame
/// it sent was the first waiting, so a gap before a frame that arrived after the link went
/// free is starvation up to the frame's arrival; the rest of a gap, with the frame there,
/// is link time the pacer forfeited when the host woke it more than `max_lag` late.
fn idle_time(records: &[PacketRecord], from: Time, to: Time) -> (Dur, Dur) {
    let (mut starved, mut held) = (0, 0);
    let mut free: Option<Time> = None;
    for r in records
        .iter()
        .filter(|r| r.direction == 0 && r.decision != Decision::Drop)
    {
        let start = Time(r.time.as_nanos() - r.serialisation.as_nanos());
        if let Some(free) = free.filter(|&f| f >= from && start <= to) {
            if r.arrival > free {
                starved += r.arrival.min(start).since(free).as_nanos();
            }
            let ready = r.arrival.max(free);
            if start > ready {
                held += start.since(ready).as_nanos();
            }
        }
        free = Some(r.time);
    }
    (Dur::from_nanos(starved), Dur::from_nanos(held))
}

/// Count datagrams at B over a window after a warm-up, through a FIFO link overloaded by
/// 25 %.
fn rate_check(mbps: u64) -> RateRun {
    let bed = testbed();
    let rate = Rate::mbps(mbps);
    // Tail drop keeps the queue from ever emptying under overload, so this measures the
    // pacer alone (an AQM that empties the queue now and then lowers the utilisation).
    let fifo = AqmConfig::Fifo(l4s_aqm::FifoConfig {
        limit: (rate.bytes_in(l4s_core::Dur::from_millis(20)) / 1514).max(50) as u32,
        ..Default::default()
    });
    let fwd = Fwd::start(&bed.r, RouterConfig::new("ra", "rb", rate, fifo), true);
    let rx = udp_in(&bed.b, &format!("{B_V4}:9000"));
    rx.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    // Each datagram comes with the kernel's receive time (`SCM_TIMESTAMPNS`).
    sys::setsockopt_int(rx.as_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).unwrap();
    let tx = udp_in(&bed.a, &format!("{A_V4}:0"));
    let payload = 1472; // 1514-byte frames
    let total = Duration::from_millis(3500);
    let sender =
        std::thread::spawn(move || blast(&tx, &format!("{B_V4}:9000"), payload, mbps as f64 * 1e6 * 1.25, total));
    let start = Instant::now();
    let clock_start = l4s_fwd::afpacket::monotonic_now();
    let at = |d: Duration| clock_start + Dur::from_nanos(d.as_nanos() as u64);
    // The window's ends are the kernel's receive times of its first and last datagrams:
    // this thread's own clock reads come late when the host holds it back, and a late
    // first read counts the datagrams queued meanwhile over a shorter span.
    let clock = l4s_fwd::afpacket::RxStamp::now();
    let (w0, w1) = (Duration::from_millis(700), Duration::from_millis(3200));
    let mut buf = [0u8; 2048];
    let mut n = 0u64;
    let mut all = 0u64;
    let (mut first, mut last) = (None, None);
    while start.elapsed() < total {
        if let Ok(m) = sys::recvmsg(rx.as_fd(), &mut buf, 0) {
            assert_eq!(m.len, payload);
            all += 1;
            let t = start.elapsed();
            if t >= w0 && t <= w1 {
                let kernel = m
                    .realtime_ns
                    .map_or(at(t), |ns| Time((ns - clock.offset()).max(0) as u64));
                if first.is_none() {
                    first = Some(kernel);
                } else {
                    n += 1;
                    last = Some(kernel);
                }
            }
        }
    }
    sender.join().unwrap();
    // The forwarder hands its records over when it stops.
    let records = fwd.records.clone();
    let stats = fwd.finish();
    let records = std::mem::take(&mut *records.lock().unwrap());
    let (first, last): (Time, Time) = (first.unwrap(), last.unwrap());
    let secs = last.since(first).as_secs_f64();
    let (starved, held) = idle_time(&records, first, last);
    let (starved, held) = (starved.as_secs_f64(), held.as_secs_f64());
    let got = n as f64 * 1514.0 * 8.0 / (secs - starved);
    let err = got / rate.bits_per_sec() as f64 - 1.0;
    let d = &stats.directions[0];
    eprintln!(
        "{mbps} Mbit/s: delivered {:.3} Mbit/s ({:+.3} %) over {:.3} s with frames to send of a {secs:.3} s window (idle {:.3} % of it with a frame waiting), received {all}, rx {} tx {} drops {:?}",
        got / 1e6,
        err * 100.0,
        secs - starved,
        held / (secs - starved) * 100.0,
        d.rx_packets,
        d.tx_packets,
        d.queues.iter().map(|q| q.drops).collect::<Vec<_>>()
    );
    eprintln!(
        "realtime: {}, forfeits {} ({} us), tx retries {}, tx errors {}, kernel drops {}",
        stats.realtime,
        d.pacer_forfeits,
        d.pacer_forfeit_ns / 1000,
        d.tx_retries,
        d.tx_errors,
        d.kernel_drops
    );
    assert!(
        d.queues.iter().map(|q| q.drops).sum::<u64>() > 0,
        "the sender must overload the link"
    );
    // Every frame's queue time counts from the kernel's receive stamp.
    assert_eq!(d.unstamped, 0, "frames without a receive stamp");
    assert!(
        d.lateness.packets >= d.tx_packets.saturating_sub(1) && d.lateness.packets > 1000,
        "{:?}",
        d.lateness
    );
    RateRun {
        err,
        starved: starved / secs,
        // No more than the pacer itself counted as forfeited: idle time with a frame
        // waiting that it does not own to (a pacer that falls behind on its own) is not
        // excused.
        forfeited: held.min(d.pacer_forfeit_ns as f64 / 1e9) / (secs - starved),
        late: d.lateness.over_1ms,
    }
}

#[test]
fn delivered_rate_within_one_percent() {
    if !root() {
        return;
    }
    for mbps in [10, 100, 500] {
        // The forwarder is judged on the load it was given: while it has frames to send it
        // must send them at the configured rate. A host that holds the forwarder back (a
        // hypervisor's steal) costs link time the pacer forfeits rather than bursting, and
        // one that holds the sender back leaves the link without frames for a while; such a
        // run is measured again, up to three times. If every run was held back, the
        // delivered rate plus the forfeited link time must make the configured rate.
        let mut attempt = 0;
        loop {
            let run = rate_check(mbps);
            let busy_enough = run.starved < 0.5;
            if run.err.abs() < 0.01 && busy_enough {
                break;
            }
            assert!(
                !busy_enough || (run.late > 0 && run.forfeited > 0.0),
                "{mbps} Mbit/s: off by {:.3} % on a quiet host",
                run.err * 100.0
            );
            attempt += 1;
            if attempt == 3 {
                assert!(
                    busy_enough,
                    "{mbps} Mbit/s: the link had no frames to send for {:.0} % of every run",
                    run.starved * 100.0
                );
                assert!(
                    (run.err + run.forfeited).abs() < 0.01,
                    "{mbps} Mbit/s: off by {:.3} %, of which {:.3} % forfeited on a host that held the forwarder back",
                    run.err * 100.0,
                    run.forfeited * 100.0
                );
                eprintln!(
                    "{mbps} Mbit/s: the host held the forwarder back in every run; delivered + forfeited checked"
                );
                break;
            }
            eprintln!(
                "{mbps} Mbit/s: off by {:.3} % with {} late frames, {:.1} % of the window without frames: measuring again",
                run.err * 100.0,
                run.late,
                run.starved * 100.0
            );
        }
    }
}

use l4s_aqm::ecn_rewrite::ones_sum;
use l4s_core::Ecn;
use l4s_fwd::packet::{parse, IpVersion, Parsed};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Blast UDP with a given TOS at `factor` × 20 Mbit/s through DualPI2 for 2 s; return the
/// forwarder's stats, the frames captured at B's interface and the datagrams B's socket got.
fn ecn_run(tos: u8, v6: bool, factor: f64) -> (l4s_fwd::RouterStats, Vec<Vec<u8>>, u64) {
    let bed = testbed();
    let fwd = Fwd::start(&bed.r, RouterConfig::new("ra", "rb", Rate::mbps(20), dualpi2()), false);
    let stop = Arc::new(AtomicBool::new(false));
    let cap = capture(&bed.b, "b0", stop.clone());
    let (bind_b, bind_a, to) = if v6 {
        (
            format!("[{B_V6}]:9001"),
            format!("[{A_V6}]:0"),
            format!("[{B_V6}]:9001"),
        )
    } else {
        (format!("{B_V4}:9001"), format!("{A_V4}:0"), format!("{B_V4}:9001"))
    };
    let rx = udp_in(&bed.b, &bind_b);
    rx.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let tx = udp_in(&bed.a, &bind_a);
    set_tos(&tx, tos, v6);
    let sender = std::thread::spawn(move || blast(&tx, &to, 1200, 20e6 * factor, Duration::from_secs(2)));
    let mut got = 0u64;
    let mut buf = [0u8; 2048];
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(2300) {
        if rx.recv(&mut buf).is_ok() {
            got += 1;
        }
    }
    sender.join().unwrap();
    stop.store(true, Ordering::SeqCst);
    let frames = cap.join().unwrap().unwrap();
    (fwd.finish(), frames, got)
}

fn udp_frames(frames: &[Vec<u8>], version: IpVersion) -> Vec<(l4s_fwd::packet::IpInfo, &Vec<u8>)> {
    frames
        .iter()
        .filter_map(|f| match parse(f) {
            Parsed::Ip(i) if i.version == version && i.dst_port == Some(9001) => Some((i, f)),
            _ => None,
        })
        .collect()
}

#[test]
fn ect1_is_marked_with_valid_ipv4_checksums() {
    if !root() {
        return;
    }
    let (stats, frames, got) = ecn_run(0x01, false, 1.5);
    let d = &stats.directions[0];
    let l = d.queues.iter().find(|q| q.queue == "L").unwrap();
    let udp = udp_frames(&frames, IpVersion::V4);
    let ce = udp.iter().filter(|(i, _)| i.ecn == Ecn::Ce).count();
    eprintln!(
        "L: enq {} marks {} drops {}; captured {} ({} CE), socket got {got}",
        l.enqueued_packets,
        l.marks,
        l.drops,
        udp.len(),
        ce
    );
    assert!(l.enqueued_packets > 1000, "ECT(1) goes to the L queue");
    assert!(l.marks > 100 && ce > 100, "marks {} CE frames {ce}", l.marks);
    // Every frame has a valid IPv4 header checksum after the rewrite...
    for (i, f) in &udp {
        let h = &f[i.l3_offset as usize..i.l3_offset as usize + 20];
        assert_eq!(ones_sum(h), 0xFFFF, "bad checksum in {h:02x?}");
        assert!(matches!(i.ecn, Ecn::Ect1 | Ecn::Ce));
    }
    // ...and the kernel at B accepted them all (it drops bad checksums).
    assert!(
        got as f64 >= udp.len() as f64 * 0.99,
        "socket {got} of {} frames",
        udp.len()
    );
}

#[test]
fn ipv6_traffic_class_is_rewritten_to_ce() {
    if !root() {
        return;
    }
    let (stats, frames, got) = ecn_run(0x01, true, 1.5);
    let l = stats.directions[0]
        .queues
        .iter()
        .find(|q| q.queue == "L")
        .unwrap()
        .clone();
    let udp = udp_frames(&frames, IpVersion::V6);
    let ce = udp.iter().filter(|(i, _)| i.ecn == Ecn::Ce).count();
    eprintln!(
        "IPv6 L: marks {}; captured {} ({} CE), socket got {got}",
        l.marks,
        udp.len(),
        ce
    );
    assert!(l.marks > 100 && ce > 100);
    // The DSCP bits are untouched and the payload still arrives (UDP checksum excludes TC).
    assert!(udp.iter().all(|(i, _)| i.dscp == 0));
    assert!(got as f64 >= udp.len() as f64 * 0.99);
}

#[test]
fn not_ect_is_dropped_never_marked() {
    if !root() {
        return;
    }
    let (stats, frames, _) = ecn_run(0x00, false, 1.5);
    let c = stats.directions[0]
        .queues
        .iter()
        .find(|q| q.queue == "C")
        .unwrap()
        .clone();
    let udp = udp_frames(&frames, IpVersion::V4);
    eprintln!("C: enq {} marks {} drops {}", c.enqueued_packets, c.marks, c.drops);
    assert!(c.drops > 100, "the overload must be shed by dropping");
    assert_eq!(c.marks, 0);
    assert!(udp.iter().all(|(i, _)| i.ecn == Ecn::NotEct));
    // Queue delay is held near DualPI2's 15 ms target, not at the buffer limit.
    assert!(c.sojourn.p50_us < 40_000.0, "{:?}", c.sojourn);
}

#[test]
fn malformed_frames_are_counted_and_forwarding_goes_on() {
    if !root() {
        return;
    }
    let bed = testbed();
    let fwd = Fwd::start(&bed.r, RouterConfig::new("ra", "rb", Rate::mbps(100), dualpi2()), false);
    let mb = bed.b.mac("b0").unwrap();
    let ma = bed.a.mac("a0").unwrap();
    let sent = bed
        .a
        .run(move || {
            let s = l4s_fwd::afpacket::PacketSocket::open("a0").unwrap();
            let mut eth = mb.to_vec();
            eth.extend_from_slice(&ma);
            let v4 = |tail: &[u8]| {
                let mut f = eth.clone();
                f.extend_from_slice(&[8, 0]);
                f.extend_from_slice(tail);
                f.resize(f.len().max(60), 0);
                f
            };
            let mut ip = vec![
                0x45, 1, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2, 0, 1, 0, 2, 0, 8, 0, 0,
            ];
            let bad_ihl = {
                ip[0] = 0x43;
                v4(&ip)
            };
            let ihl_beyond = {
                ip[0] = 0x4F;
                v4(&ip[..28])
            };
            let bad_len = {
                ip[0] = 0x45;
                ip[2] = 0x05;
                v4(&ip)
            };
            let mut v6 = eth.clone();
            v6.extend_from_slice(&[0x86, 0xDD, 0x60, 0x10, 0, 0, 0, 16, 0, 64]);
            v6.extend_from_slice(&[0xfd; 32]);
            v6.extend_from_slice(&[17, 200, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            let bad_ext = v6;
            let mut n = [0u64; 4];
            for _ in 0..250 {
                for (k, f) in [&bad_ihl, &ihl_beyond, &bad_len, &bad_ext].iter().enumerate() {
                    while !s.send(f).unwrap() {
                        std::thread::sleep(Duration::from_micros(50));
                    }
                    n[k] += 1;
                }
            }
            n
        })
        .unwrap();
    // Forwarding still works afterwards.
    let rx = udp_in(&bed.b, &format!("{B_V4}:9002"));
    rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let tx = udp_in(&bed.a, &format!("{A_V4}:0"));
    tx.send_to(b"still alive", format!("{B_V4}:9002")).unwrap();
    let mut buf = [0u8; 64];
    let n = rx.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"still alive");
    let stats = fwd.finish();
    let m = &stats.directions[0].malformed;
    eprintln!("{m:?}");
    assert_eq!(m["bad-ihl"], sent[0] + sent[1]);
    assert_eq!(m["bad-length"], sent[2]);
    assert_eq!(m["bad-extension-header"], sent[3]);
}

#[test]
fn memory_stays_within_the_aqm_limit_under_10x_overload() {
    if !root() {
        return;
    }
    let bed = testbed();
    let limit = 500;
    let aqm = AqmConfig::DualPi2(DualPi2Config {
        limit,
        ..Default::default()
    });
    let mut cfg = RouterConfig::new("ra", "rb", Rate::mbps(10), aqm);
    cfg.batch = 32;
    let fwd = Fwd::start(&bed.r, cfg, false);
    let tx = udp_in(&bed.a, &format!("{A_V4}:0"));
    // ECT(1) traffic does not back off: marking cannot shed it, only the limit can.
    set_tos(&tx, 1, false);
    realtime();
    let sent = blast(&tx, &format!("{B_V4}:9"), 1472, 100e6, Duration::from_secs(3));
    let stats = fwd.finish();
    let d = &stats.directions[0];
    eprintln!(
        "sent {sent}, rx {}, tx {}, peak buffers {} of {}, no-buffer drops {}",
        d.rx_packets, d.tx_packets, d.peak_buffers, d.buffer_limit, d.no_buffer_drops
    );
    assert!(
        d.rx_packets as f64 > 8.0 * d.tx_packets as f64,
        "a 10x overload reached the forwarder"
    );
    assert_eq!(d.buffer_limit, limit as usize + 32 + 2);
    assert!(d.peak_buffers <= d.buffer_limit);
    // The queue did fill: memory was bounded by the limit, not by a light load.
    assert!(d.peak_buffers >= limit as usize / 2, "peak {}", d.peak_buffers);
}
