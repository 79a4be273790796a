//! A three-namespace testbed for the forwarder: A — R — B on one subnet, the forwarder in R
//! bridging its two interfaces. Removed when dropped, also when a test fails.
#![allow(dead_code)]

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use l4s_fwd::netns::{Netns, RunId, Testbed, VethEnd};
use l4s_fwd::router::{run_recording, PacketRecord, RouterConfig, RouterStats};
use l4s_fwd::FwdError;

pub const A_V4: &str = "198.18.0.1";
pub const B_V4: &str = "198.18.0.2";
pub const A_V6: &str = "fd00:18::1";
pub const B_V6: &str = "fd00:18::2";

pub fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let ok = unsafe { libc::geteuid() } == 0;
    if !ok {
        eprintln!("skipped: needs root (network namespaces, AF_PACKET)");
    }
    ok
}

/// Timing tests share two cores: one testbed at a time.
static SERIAL: Mutex<()> = Mutex::new(());

pub struct Bed {
    pub tb: Testbed,
    _serial: std::sync::MutexGuard<'static, ()>,
    pub a: Netns,
    pub r: Netns,
    pub b: Netns,
}

pub fn testbed() -> Bed {
    let serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut tb = Testbed::new(RunId::generate());
    let a = tb.add_netns("a").unwrap();
    let r = tb.add_netns("r").unwrap();
    let b = tb.add_netns("b").unwrap();
    tb.add_veth(VethEnd { ns: &a, name: "a0" }, VethEnd { ns: &r, name: "ra" })
        .unwrap();
    tb.add_veth(VethEnd { ns: &b, name: "b0" }, VethEnd { ns: &r, name: "rb" })
        .unwrap();
    for (ns, ifs) in [(&a, ["a0", ""]), (&r, ["ra", "rb"]), (&b, ["b0", ""])] {
        for i in ifs.iter().filter(|i| !i.is_empty()) {
            if ns == &r {
                ns.disable_ipv6(i).unwrap();
            }
            ns.disable_offloads(i).unwrap();
            ns.link_up(i).unwrap();
        }
    }
    a.add_addr("a0", &format!("{A_V4}/24")).unwrap();
    b.add_addr("b0", &format!("{B_V4}/24")).unwrap();
    a.add_addr("a0", &format!("{A_V6}/64")).unwrap();
    b.add_addr("b0", &format!("{B_V6}/64")).unwrap();
    // Static neighbours: the tests measure the AQM, not ARP under overload.
    let ma = a.mac("a0").unwrap();
    let mb = b.mac("b0").unwrap();
    let hex = |m: [u8; 6]| m.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(":");
    for (ns, dev, ip4, ip6, mac) in [(&a, "a0", B_V4, B_V6, hex(mb)), (&b, "b0", A_V4, A_V6, hex(ma))] {
        ns.ip(&["neigh", "replace", ip4, "lladdr", &mac, "dev", dev, "nud", "permanent"])
            .unwrap();
        ns.ip(&[
            "-6",
            "neigh",
            "replace",
            ip6,
            "lladdr",
            &mac,
            "dev",
            dev,
            "nud",
            "permanent",
        ])
        .unwrap();
    }
    Bed {
        tb,
        _serial: serial,
        a,
        r,
        b,
    }
}

/// The forwarder running on a thread in R.
pub struct Fwd {
    pub stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<Result<RouterStats, FwdError>, FwdError>>>,
    pub records: Arc<Mutex<Vec<PacketRecord>>>,
}

impl Fwd {
    pub fn start(r: &Netns, cfg: RouterConfig, keep_records: bool) -> Fwd {
        let stop = Arc::new(AtomicBool::new(false));
        let records = Arc::new(Mutex::new(Vec::new()));
        let (s, rec) = (stop.clone(), records.clone());
        let handle = r
            .spawn("fwd", move || {
                let mut local = Vec::new();
                let res = run_recording(&cfg, &s, &mut |st| eprintln!("{st}"), &mut |p| {
                    if keep_records {
                        local.push(*p)
                    }
                });
                rec.lock().unwrap().extend(local);
                res
            })
            .unwrap();
        // Let it open its sockets.
        std::thread::sleep(Duration::from_millis(100));
        Fwd {
            stop,
            handle: Some(handle),
            records,
        }
    }

    pub fn finish(mut self) -> RouterStats {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.take().unwrap().join().unwrap().unwrap().unwrap()
    }
}

impl Drop for Fwd {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// A UDP socket bound in a namespace.
pub fn udp_in(ns: &Netns, addr: &str) -> UdpSocket {
    use std::os::fd::AsRawFd;
    let addr = addr.to_string();
    let s = ns.run(move || UdpSocket::bind(addr)).unwrap().unwrap();
    // A large receive buffer: the test's reader must not be what loses datagrams.
    let v: libc::c_int = 16 << 20;
    // SAFETY: setsockopt with an int.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            &v as *const _ as *const libc::c_void,
            4,
        )
    };
    s
}

/// Set the TOS / traffic class byte of a socket (ECN bits included).
pub fn set_tos(s: &UdpSocket, tos: u8, v6: bool) {
    use std::os::fd::AsRawFd;
    let v: libc::c_int = tos as libc::c_int;
    let (level, name) = if v6 {
        (libc::IPPROTO_IPV6, libc::IPV6_TCLASS)
    } else {
        (libc::IPPROTO_IP, libc::IP_TOS)
    };
    // SAFETY: setsockopt with an int.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            level,
            name,
            &v as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as u32,
        )
    };
    assert_eq!(rc, 0);
}

/// Send `payload`-byte datagrams from `s` to `to` at `rate` bit/s of frame bytes
/// (payload + 42 or 62) for `dur`, in 1 ms bursts. Returns datagrams sent.
pub fn blast(s: &UdpSocket, to: &str, payload: usize, rate_bps: f64, dur: Duration) -> u64 {
    let frame = payload + if to.starts_with('[') { 62 } else { 42 };
    let per_sec = rate_bps / (frame as f64 * 8.0);
    let buf = vec![0x5Au8; payload];
    let start = Instant::now();
    let mut sent = 0u64;
    while start.elapsed() < dur {
        let due = (start.elapsed().as_secs_f64() * per_sec) as u64;
        while sent < due {
            let mut b = buf.clone();
            b[..8].copy_from_slice(&sent.to_be_bytes());
            let _ = s.send_to(&b, to);
            sent += 1;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    sent
}

/// Frames seen on an interface by a raw socket in a namespace, collected on a thread until
/// `stop`.
pub fn capture(ns: &Netns, ifname: &'static str, stop: Arc<AtomicBool>) -> JoinHandle<Result<Vec<Vec<u8>>, FwdError>> {
    ns.spawn("capture", move || {
        let s = l4s_fwd::afpacket::PacketSocket::open(ifname).unwrap();
        let mut frames = Vec::new();
        let mut buf = vec![0u8; 2048];
        while !stop.load(Ordering::SeqCst) {
            match s.recv_one(&mut buf).unwrap() {
                Some(l4s_fwd::afpacket::Received::Frame(n)) => frames.push(buf[..n].to_vec()),
                Some(_) => {}
                None => {
                    l4s_fwd::afpacket::wait_readable(&[s.raw_fd(), s.raw_fd()], 10_000_000);
                }
            }
        }
        frames
    })
    .unwrap()
}

/// Raise the calling thread to SCHED_FIFO (test traffic generators, so that the host's
/// other work does not distort timings).
pub fn realtime() {
    let _ = l4s_fwd::afpacket::set_realtime(5);
}
