//! Namespace plumbing against the real kernel (needs root; skipped with a message without).

use l4s_fwd::netns::{cleanup_all, list_netns, registered_count, Netns, RunId, Testbed, VethEnd};

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let ok = unsafe { libc::geteuid() } == 0;
    if !ok {
        eprintln!("skipped: needs root (network namespaces)");
    }
    ok
}

/// A datagram from `a` to `to` in `b`, and back.
fn udp_echo(a: &Netns, b: &Netns, to: &'static str) {
    use std::net::UdpSocket;
    use std::time::Duration;
    let server = b.run(move || UdpSocket::bind(to)).unwrap().unwrap();
    server.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let h = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        let (n, from) = server.recv_from(&mut buf).unwrap();
        server.send_to(&buf[..n], from).unwrap();
    });
    let client = a
        .run(move || UdpSocket::bind(if to.starts_with('[') { "[::]:0" } else { "0.0.0.0:0" }))
        .unwrap()
        .unwrap();
    client.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    client.send_to(b"hello", to).unwrap();
    let mut buf = [0u8; 64];
    let (n, _) = client.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"hello");
    h.join().unwrap();
}

#[test]
fn two_namespaces_ping_and_cleanup() {
    if !root() {
        return;
    }
    let id = RunId::generate();
    let names;
    {
        let mut tb = Testbed::new(id.clone());
        let a = tb.add_netns("a").unwrap();
        let b = tb.add_netns("b").unwrap();
        tb.add_veth(VethEnd { ns: &a, name: "va" }, VethEnd { ns: &b, name: "vb" })
            .unwrap();
        a.set_mtu("va", 1400).unwrap();
        a.add_addr("va", "198.18.0.1/24").unwrap();
        b.add_addr("vb", "198.18.0.2/24").unwrap();
        a.add_addr("va", "fd00:18::1/64").unwrap();
        b.add_addr("vb", "fd00:18::2/64").unwrap();
        a.link_up("va").unwrap();
        b.link_up("vb").unwrap();
        a.disable_offloads("va").unwrap();
        let off = a.offloads("va").unwrap();
        assert!(off.iter().all(|f| !f.on || f.fixed), "{off:?}");
        assert!(a.links().unwrap().contains(&"va".to_string()));
        assert_eq!(a.read_sysctl("net/ipv4/ip_forward").unwrap(), "0");
        a.enable_forwarding().unwrap();
        assert_eq!(a.read_sysctl("net/ipv4/ip_forward").unwrap(), "1");
        // The rest of the process is not in `a`.
        assert_eq!(
            Netns::current().read_sysctl("net/ipv4/ip_forward").unwrap(),
            Netns::current().read_sysctl("net/ipv4/ip_forward").unwrap()
        );
        // Datagrams cross the veth both ways, IPv4 and IPv6.
        udp_echo(&a, &b, "198.18.0.2:7001");
        udp_echo(&a, &b, "[fd00:18::2]:7002");
        // A socket opened on a thread in `b` lives in `b`: it can bind b's address.
        let bound = b
            .run(|| std::net::UdpSocket::bind("198.18.0.2:0").map(|s| s.local_addr().unwrap().port()))
            .unwrap();
        assert!(bound.unwrap() > 0);
        assert!(
            std::net::UdpSocket::bind("198.18.0.2:0").is_err(),
            "the test thread must not be in b"
        );
        names = tb.namespaces().to_vec();
        assert!(names.iter().all(|n| list_netns().unwrap().contains(n)));
        assert!(registered_count() >= 2);
    }
    let left = list_netns().unwrap();
    assert!(names.iter().all(|n| !left.contains(n)), "left behind: {left:?}");
}

#[test]
fn guard_cleans_up_on_panic() {
    if !root() {
        return;
    }
    let id = RunId::generate();
    let prefix = id.prefix();
    let r = std::panic::catch_unwind(move || {
        let mut tb = Testbed::new(id);
        tb.add_netns("p").unwrap();
        panic!("deliberate");
    });
    assert!(r.is_err());
    assert!(list_netns().unwrap().iter().all(|n| !n.starts_with(&prefix)));
}

/// `ip netns exec` enters the namespace after it was spawned: wait until a process is
/// inside (`ip netns pids`), so that the cleanup has something to kill (otherwise the
/// test races the child's setns and the `sleep` outlives the cleanup).
fn wait_until_inside(ns: &str) {
    for _ in 0..200 {
        let out = std::process::Command::new("ip")
            .args(["netns", "pids", ns])
            .output()
            .unwrap();
        if !String::from_utf8_lossy(&out.stdout).trim().is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("no process entered namespace {ns} within 2 s");
}

#[test]
fn cleanup_all_removes_leftovers_of_a_killed_run() {
    if !root() {
        return;
    }
    let id = RunId::generate();
    let prefix = id.prefix();
    // A "killed run": the namespaces exist, with a veth and a local veth end, but no guard.
    let mut tb = Testbed::new(id.clone());
    let a = tb.add_netns("x").unwrap();
    let local = id.local_ifname("h").unwrap();
    tb.add_veth(
        VethEnd { ns: &a, name: "v" },
        VethEnd {
            ns: &Netns::current(),
            name: &local,
        },
    )
    .unwrap();
    // A process left running inside it dies with the testbed's cleanup.
    let mut child = a.command("sleep").arg("30").spawn().unwrap();
    wait_until_inside(&id.ns_name("x").unwrap());
    tb.cleanup().unwrap();
    assert!(list_netns().unwrap().iter().all(|n| !n.starts_with(&prefix)));
    assert!(!Netns::current().links().unwrap().contains(&local));
    assert!(!child.wait().unwrap().success());

    // True leftovers of a killed run: created behind the registry's back.
    let name = id.ns_name("y").unwrap();
    std::process::Command::new("ip")
        .args(["netns", "add", &name])
        .status()
        .unwrap();
    std::process::Command::new("ip")
        .args([
            "link", "add", "name", &local, "type", "veth", "peer", "name", "p", "netns", &name,
        ])
        .status()
        .unwrap();
    let mut child = Netns::named(&name).command("sleep").arg("30").spawn().unwrap();
    wait_until_inside(&name);
    let report = cleanup_all(&format!("{prefix}*"), false).unwrap();
    assert_eq!(report.namespaces, vec![name.clone()]);
    assert!(report.kept.is_empty());
    // The local end died with its peer's namespace or was removed by name.
    assert!(!Netns::current().links().unwrap().contains(&local));
    assert!(!list_netns().unwrap().contains(&name));
    let status = child.wait().unwrap();
    assert!(!status.success(), "the process inside was killed");
}

/// Another process holding `lock` (`flock -o`: only flock itself holds it, not the `cat`
/// it runs, so killing flock releases it).
fn hold_lock(lock: &str) -> std::process::Child {
    std::process::Command::new("flock")
        .args(["--exclusive", "--close", lock, "cat"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("flock (util-linux)")
}

/// End the holder: close its stdin, which ends the `cat` it started, SIGKILL `flock`, and
/// wait until the lock is free. The `cat` can hold the lock's file description for a moment
/// after `flock` is reaped (measured: one run in five to fifteen found the lock still held
/// right after), so the test waits for what it means by "the process is gone".
fn release(holder: &mut std::process::Child, lock: &str) {
    drop(holder.stdin.take());
    let _ = holder.kill();
    holder.wait().unwrap();
    let t0 = std::time::Instant::now();
    // `flock -n` takes and drops the lock if it is free, leaving the file as it is.
    let free = || {
        std::process::Command::new("flock")
            .args(["-n", lock, "true"])
            .status()
            .is_ok_and(|s| s.success())
    };
    while !free() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(5),
            "the lock outlived its holder"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A run still going in another process (it holds the run's lock; here `flock(1)` from
/// util-linux plays that process) is kept by cleanup unless forced; once its process is
/// gone, its leftovers go.
#[test]
fn cleanup_keeps_runs_still_going_unless_forced() {
    if !root() {
        return;
    }
    let id = RunId::generate();
    let prefix = id.prefix();
    let name = id.ns_name("z").unwrap();
    // Whatever happens below, the namespace goes (it is made here with `ip`, outside a
    // testbed).
    struct Gone(String);
    impl Drop for Gone {
        fn drop(&mut self) {
            let _ = std::process::Command::new("ip")
                .args(["netns", "del", &self.0])
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
    let _gone = Gone(name.clone());
    let status = std::process::Command::new("ip")
        .args(["netns", "add", &name])
        .status()
        .unwrap();
    assert!(status.success());
    let lock = format!("{}/{}.lock", l4s_fwd::netns::RUN_LOCK_DIR, id.as_str());
    std::fs::create_dir_all(l4s_fwd::netns::RUN_LOCK_DIR).unwrap();
    let mut holder = hold_lock(&lock);
    let t0 = std::time::Instant::now();
    while !l4s_fwd::netns::run_is_alive(id.as_str()) {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(5),
            "flock never took the lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // Alive: kept, and said so.
    let report = cleanup_all(&format!("{prefix}*"), false).unwrap();
    assert!(report.namespaces.is_empty(), "{report:?}");
    assert_eq!(report.kept, vec![(id.as_str().to_string(), 1)]);
    assert!(list_netns().unwrap().contains(&name));
    // The lock is not taken over by asking.
    assert!(l4s_fwd::netns::run_is_alive(id.as_str()));
    // Its process gone (SIGKILL here): removed, lock file too.
    release(&mut holder, &lock);
    let report = cleanup_all(&format!("{prefix}*"), false).unwrap();
    assert_eq!(report.namespaces, vec![name.clone()]);
    assert!(report.kept.is_empty());
    assert!(!std::path::Path::new(&lock).exists());
    // Forced: removed although alive.
    let status = std::process::Command::new("ip")
        .args(["netns", "add", &name])
        .status()
        .unwrap();
    assert!(status.success());
    let mut holder = hold_lock(&lock);
    while !l4s_fwd::netns::run_is_alive(id.as_str()) {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(10),
            "flock never took the lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let report = cleanup_all(&format!("{prefix}*"), true).unwrap();
    assert_eq!(report.namespaces, vec![name.clone()]);
    assert!(report.kept.is_empty());
    release(&mut holder, &lock);
    let _ = std::fs::remove_file(&lock);
    assert!(list_netns().unwrap().iter().all(|n| !n.starts_with(&prefix)));
}

/// A testbed holds its run's lock while it exists and gives it up (and its file) when it
/// is cleaned up.
#[test]
fn a_testbed_holds_its_run_lock() {
    if !root() {
        return;
    }
    let id = RunId::generate();
    let mut tb = Testbed::new(id.clone());
    assert!(!l4s_fwd::netns::run_is_alive(id.as_str()));
    tb.add_netns("x").unwrap();
    assert!(l4s_fwd::netns::run_is_alive(id.as_str()));
    tb.cleanup().unwrap();
    assert!(!l4s_fwd::netns::run_is_alive(id.as_str()));
    let lock = format!("{}/{}.lock", l4s_fwd::netns::RUN_LOCK_DIR, id.as_str());
    assert!(!std::path::Path::new(&lock).exists());
}
