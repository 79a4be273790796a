//! Network namespaces and veth pairs for the live testbed, with guaranteed cleanup.
//!
//! # Why the `ip` command and not netlink
//!
//! Setting up a testbed is a few dozen operations before a run and none during it, so the
//! cost of a process per operation (about 2 ms) does not matter. `ip` (iproute2) is on every
//! Linux box that can run the testbed at all, its semantics are the ones operators know and
//! can replay by hand, and its error messages ("RTNETLINK answers: File exists") go straight
//! into ours. A netlink implementation would be a few thousand lines (or an async netlink
//! stack pulling in tokio) to save milliseconds. `ip netns add` also creates the
//! `/run/netns/NAME` bind mount that other tools (`ip netns exec`, `iperf3` under it) rely on.
//! Offloads are switched with `ethtool` (Debian package `ethtool`), for the same reasons.
//!
//! # Names
//!
//! Every run has a [`RunId`] of 8 hex digits. Its namespaces are called `l4s-<id>-<role>`
//! (e.g. `l4s-1a2b3c4d-router`), which [`cleanup_all`] finds again after a killed run.
//! Interfaces are created *inside* their namespaces ([`Testbed::add_veth`]), so their names
//! only need to be unique per namespace and never appear in the caller's namespace; a veth
//! end that must live in the caller's namespace is named `l4s<id><tag>` (at most 15
//! characters, [`RunId::local_ifname`]) so that cleanup can find it too. Deleting a namespace
//! destroys the veths in it (and their peers).
//!
//! # Cleanup
//!
//! A [`Testbed`] is a guard: dropping it (also during a panic) deletes every namespace and
//! caller-namespace link it created. Every live testbed is also in a process-wide registry,
//! so that [`install_signal_cleanup`] can remove them on SIGINT/SIGTERM, and
//! [`cleanup_registered`] can be called from any error path. [`cleanup_all`] removes what
//! killed runs left behind (by name pattern; it refuses patterns outside `l4s-`).
//!
//! A testbed holds an exclusive `flock(2)` on `/run/l4s-lab/<id>.lock` while it exists
//! ([`RUN_LOCK_DIR`]). The kernel releases it when the process dies, however it dies, so
//! [`cleanup_all`] can tell a run still going (in any process: its lock is held) from the
//! leftovers of a killed one (no holder), and keeps the former unless forced.
//!
//! # Threads in a namespace
//!
//! [`Netns::spawn`] runs a closure on a new thread that first joins the namespace with
//! `setns(2)`; sockets opened there belong to that namespace for their whole life, even
//! when later used from other threads. The rest of the process is not affected.

use std::collections::BTreeSet;
use std::fs::File;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::FwdError;
use crate::sys;

/// Prefix of every namespace this crate creates.
pub const NS_PREFIX: &str = "l4s-";
/// Prefix of the interfaces it creates in the caller's namespace (no dash: 15-char limit).
pub const LINK_PREFIX: &str = "l4s";
/// Linux `IFNAMSIZ - 1`.
pub const IFNAME_MAX: usize = 15;
/// Where `ip netns add` puts the namespace handles.
pub const NETNS_RUN_DIR: &str = "/run/netns";
/// Where running testbeds hold their lock files (`<id>.lock`).
pub const RUN_LOCK_DIR: &str = "/run/l4s-lab";

fn run_lock_path(id: &str) -> PathBuf {
    PathBuf::from(RUN_LOCK_DIR).join(format!("{id}.lock"))
}

/// Take the lock of run `id` (held until the file is closed or the process ends). Best
/// effort: `None` when it cannot be created (cleanup then cannot tell the run is alive).
fn take_run_lock(id: &str) -> Option<File> {
    use std::os::unix::fs::MetadataExt;
    std::fs::create_dir_all(RUN_LOCK_DIR).ok()?;
    let path = run_lock_path(id);
    // A cleanup that found the file unlocked (between our open and flock) removes it: lock
    // again until the locked file is the one at the path.
    for _ in 0..3 {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .ok()?;
        if sys::flock(f.as_fd(), libc::LOCK_EX | libc::LOCK_NB).is_err() {
            return None;
        }
        let (held, there) = (f.metadata().ok()?, std::fs::metadata(&path));
        if there.is_ok_and(|m| m.ino() == held.ino() && m.dev() == held.dev()) {
            return Some(f);
        }
    }
    None
}

/// Whether a process holds the lock of run `id` (a testbed of that run exists). A lock
/// file without a holder (a killed run's) is removed.
pub fn run_is_alive(id: &str) -> bool {
    let path = run_lock_path(id);
    let Ok(f) = std::fs::OpenOptions::new().write(true).open(&path) else {
        return false;
    };
    if let Err(e) = sys::flock(f.as_fd(), libc::LOCK_EX | libc::LOCK_NB) {
        return e.raw_os_error() == Some(libc::EWOULDBLOCK);
    }
    let _ = std::fs::remove_file(&path);
    false
}

/// The run id in a name `l4s-<id>-...` (8 lowercase hex digits).
fn run_id_of(ns_name: &str) -> Option<&str> {
    let id = ns_name.strip_prefix(NS_PREFIX)?.get(..8)?;
    id.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        .then_some(id)
}

/// The identity of one run: 8 lowercase hex digits, unique per process and call.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RunId(String);

impl RunId {
    /// A fresh id from the clock, the process id and a per-process counter.
    pub fn generate() -> RunId {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let ts = sys::clock_gettime(sys::Clock::Realtime);
        let mut z = (ts.tv_sec as u64).wrapping_mul(1_000_000_007) ^ ts.tv_nsec as u64;
        z ^= (std::process::id() as u64) << 32;
        z ^= (COUNTER.fetch_add(1, Ordering::Relaxed) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        RunId(format!("{:08x}", (z ^ (z >> 31)) as u32))
    }

    /// Use a given id (8 hex digits).
    pub fn parse(s: &str) -> Result<RunId, FwdError> {
        if s.len() == 8 && s.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) {
            Ok(RunId(s.to_string()))
        } else {
            Err(FwdError::config(
                "run id",
                format!("expected 8 lowercase hex digits, found {s:?}"),
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `l4s-<id>-`: the prefix of this run's namespace names.
    pub fn prefix(&self) -> String {
        format!("{NS_PREFIX}{}-", self.0)
    }

    /// `l4s-<id>-<role>`. `role` may use `[a-z0-9_-]`.
    pub fn ns_name(&self, role: &str) -> Result<String, FwdError> {
        if role.is_empty()
            || role.len() > 40
            || !role
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        {
            return Err(FwdError::config(
                "namespace role",
                format!("expected 1 to 40 characters from a-z, 0-9, '-' and '_', found {role:?}"),
            ));
        }
        Ok(format!("{}{role}", self.prefix()))
    }

    /// `l4s<id><tag>`, for a veth end in the caller's namespace; `tag` has at most 4 characters.
    pub fn local_ifname(&self, tag: &str) -> Result<String, FwdError> {
        let name = format!("{LINK_PREFIX}{}{tag}", self.0);
        check_ifname(&name)?;
        Ok(name)
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Interface names: 1 to 15 bytes, no '/', ':', whitespace (Linux `dev_valid_name`).
pub fn check_ifname(name: &str) -> Result<(), FwdError> {
    if name.is_empty()
        || name.len() > IFNAME_MAX
        || name == "."
        || name == ".."
        || name
            .bytes()
            .any(|b| b == b'/' || b == b':' || b.is_ascii_whitespace() || !b.is_ascii_graphic())
    {
        return Err(FwdError::config(
            "interface name",
            format!("expected 1 to {IFNAME_MAX} printable characters without '/', ':' or spaces, found {name:?}"),
        ));
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------
// Running commands
// ------------------------------------------------------------------------------------------

fn command_line(program: &str, args: &[&str]) -> String {
    let mut s = program.to_string();
    for a in args {
        s.push(' ');
        s.push_str(a);
    }
    s
}

/// Run a program, wait, and turn a failure into an error that quotes the command and its
/// stderr. Returns stdout.
fn run_checked(program: &'static str, args: &[&str], hint: &'static str) -> Result<String, FwdError> {
    let out: Output = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                FwdError::MissingTool { tool: program, hint }
            } else {
                FwdError::io(format!("running `{}`", command_line(program, args)), e)
            }
        })?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    let cmd = command_line(program, args);
    if stderr.contains("Operation not permitted") || stderr.contains("Permission denied") {
        return Err(FwdError::Privilege {
            what: format!("`{cmd}` ({stderr})"),
            capability: "CAP_NET_ADMIN and CAP_SYS_ADMIN",
            rerun: std::env::args().collect::<Vec<_>>().join(" "),
        });
    }
    Err(FwdError::Command {
        command: cmd,
        message: if stderr.is_empty() {
            format!("exit status {}", out.status)
        } else {
            stderr
        },
    })
}

const IP_HINT: &str = "install iproute2 (`apt-get install iproute2`)";
const ETHTOOL_HINT: &str = "install it with `apt-get install ethtool`; without it segmentation and receive \
                            offloads stay on and the bottleneck sees merged super-packets";

fn ip(args: &[&str]) -> Result<String, FwdError> {
    run_checked("ip", args, IP_HINT)
}

/// Whether `ethtool` can be run.
pub fn ethtool_available() -> bool {
    Command::new("ethtool")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

// ------------------------------------------------------------------------------------------
// A namespace handle
// ------------------------------------------------------------------------------------------

/// A network namespace: a named one under `/run/netns`, or the namespace of the calling
/// thread ([`Netns::current`]). Cheap to clone; it does not own the namespace (a
/// [`Testbed`] does).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Netns {
    name: Option<String>,
}

impl Netns {
    /// The namespace of the calling thread (commands run without `-n`).
    pub fn current() -> Netns {
        Netns { name: None }
    }

    /// An existing named namespace (not checked until used).
    pub fn named(name: &str) -> Netns {
        Netns {
            name: Some(name.to_string()),
        }
    }

    /// The namespace name; `None` for [`Netns::current`].
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// `/run/netns/NAME`.
    pub fn path(&self) -> Option<PathBuf> {
        self.name.as_ref().map(|n| PathBuf::from(NETNS_RUN_DIR).join(n))
    }

    /// Whether the named namespace exists (`true` for the current one).
    pub fn exists(&self) -> bool {
        self.path().is_none_or(|p| p.exists())
    }

    fn label(&self) -> &str {
        self.name.as_deref().unwrap_or("the current namespace")
    }

    /// Run `ip ARGS` in this namespace (`ip -n NAME ARGS`); returns stdout.
    pub fn ip(&self, args: &[&str]) -> Result<String, FwdError> {
        match &self.name {
            None => ip(args),
            Some(n) => {
                let mut v = vec!["-n", n.as_str()];
                v.extend_from_slice(args);
                ip(&v)
            }
        }
    }

    /// A [`Command`] that runs `program` in this namespace (`ip netns exec NAME program`).
    /// Add arguments, stdio and spawn it as usual.
    pub fn command(&self, program: &str) -> Command {
        match &self.name {
            None => Command::new(program),
            Some(n) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", n.as_str(), program]);
                c
            }
        }
    }

    /// Run a program to completion in this namespace; error (with its stderr) if it fails.
    /// Returns stdout.
    pub fn exec(&self, program: &str, args: &[&str]) -> Result<String, FwdError> {
        let out = self
            .command(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                FwdError::io(
                    format!("running `{}` in {}", command_line(program, args), self.label()),
                    e,
                )
            })?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(FwdError::Command {
                command: format!("{} (in {})", command_line(program, args), self.label()),
                message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            })
        }
    }

    /// Run `f` on a new thread inside this namespace and return its [`JoinHandle`]. The
    /// thread joins the namespace with `setns(CLONE_NEWNET)` before `f` runs; sockets `f`
    /// opens live in the namespace. The handle yields `Err` if joining failed.
    pub fn spawn<T, F>(&self, thread_name: &str, f: F) -> Result<JoinHandle<Result<T, FwdError>>, FwdError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let file = match self.path() {
            Some(p) => {
                Some(File::open(&p).map_err(|e| FwdError::from_os(format!("opening {}", p.display()), e, "root"))?)
            }
            None => None,
        };
        let label = self.label().to_string();
        std::thread::Builder::new()
            .name(thread_name.to_string())
            .spawn(move || {
                if let Some(file) = file {
                    if let Err(e) = sys::setns_net(file.as_fd()) {
                        return Err(FwdError::from_os(
                            format!("joining namespace {label}"),
                            e,
                            "CAP_SYS_ADMIN",
                        ));
                    }
                }
                Ok(f())
            })
            .map_err(|e| FwdError::io("starting a thread", e))
    }

    /// [`Netns::spawn`] and wait for the result. A panic in `f` is resumed in the caller.
    pub fn run<T, F>(&self, f: F) -> Result<T, FwdError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let h = self.spawn("l4s-netns", f)?;
        match h.join() {
            Ok(r) => r,
            Err(p) => std::panic::resume_unwind(p),
        }
    }

    /// Write a sysctl under `/proc/sys` as seen from this namespace (e.g.
    /// `net/ipv4/ip_forward`, `1`).
    pub fn sysctl(&self, key: &str, value: &str) -> Result<(), FwdError> {
        if key.contains("..") || key.starts_with('/') {
            return Err(FwdError::config(
                "sysctl",
                format!("expected a key such as net/ipv4/ip_forward, found {key:?}"),
            ));
        }
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        let value = value.to_string();
        let label = self.label().to_string();
        self.run(move || {
            std::fs::write(&path, &value)
                .map_err(|e| FwdError::from_os(format!("writing {value} to {path} in {label}"), e, "CAP_NET_ADMIN"))
        })?
    }

    /// Read a sysctl as seen from this namespace.
    pub fn read_sysctl(&self, key: &str) -> Result<String, FwdError> {
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        self.run(move || {
            std::fs::read_to_string(&path)
                .map(|s| s.trim().to_string())
                .map_err(|e| FwdError::io(format!("reading {path}"), e))
        })?
    }

    /// Add an address in CIDR form, IPv4 (`198.18.0.1/24`) or IPv6 (`fd00::1/64`). IPv6
    /// addresses are added with `nodad` so that they are usable at once.
    pub fn add_addr(&self, ifname: &str, cidr: &str) -> Result<(), FwdError> {
        check_ifname(ifname)?;
        check_cidr(cidr)?;
        if cidr.contains(':') {
            self.ip(&["-6", "addr", "add", cidr, "dev", ifname, "nodad"])?;
        } else {
            self.ip(&["addr", "add", cidr, "dev", ifname])?;
        }
        Ok(())
    }

    /// Add a route: `dest` is a CIDR or `default`, `via` an optional gateway, `dev` an
    /// optional interface.
    pub fn add_route(&self, dest: &str, via: Option<&str>, dev: Option<&str>) -> Result<(), FwdError> {
        if dest != "default" {
            check_cidr(dest)?;
        }
        let v6 = dest.contains(':') || via.is_some_and(|v| v.contains(':'));
        let mut args = vec![if v6 { "-6" } else { "-4" }, "route", "add", dest];
        if let Some(g) = via {
            g.parse::<std::net::IpAddr>()
                .map_err(|_| FwdError::config("via", format!("expected an IP address, found {g:?}")))?;
            args.extend_from_slice(&["via", g]);
        }
        if let Some(d) = dev {
            check_ifname(d)?;
            args.extend_from_slice(&["dev", d]);
        }
        self.ip(&args)?;
        Ok(())
    }

    /// Set the MTU of an interface.
    pub fn set_mtu(&self, ifname: &str, mtu: u32) -> Result<(), FwdError> {
        check_ifname(ifname)?;
        if !(68..=65_535).contains(&mtu) {
            return Err(FwdError::config(
                "mtu",
                format!("expected 68 to 65535 bytes, found {mtu}"),
            ));
        }
        self.ip(&["link", "set", "dev", ifname, "mtu", &mtu.to_string()])?;
        Ok(())
    }

    /// Bring an interface up.
    pub fn link_up(&self, ifname: &str) -> Result<(), FwdError> {
        check_ifname(ifname)?;
        self.ip(&["link", "set", "dev", ifname, "up"])?;
        Ok(())
    }

    /// Bring the loopback interface up (new namespaces start with it down).
    pub fn loopback_up(&self) -> Result<(), FwdError> {
        self.link_up("lo")
    }

    /// Turn on IPv4 and IPv6 forwarding (a kernel router namespace).
    pub fn enable_forwarding(&self) -> Result<(), FwdError> {
        self.sysctl("net/ipv4/ip_forward", "1")?;
        self.sysctl("net/ipv6/conf/all/forwarding", "1")
    }

    /// Switch IPv6 off on one interface (no link-local address, no router solicitations):
    /// for the ports of a userspace bridge that must stay silent.
    pub fn disable_ipv6(&self, ifname: &str) -> Result<(), FwdError> {
        check_ifname(ifname)?;
        self.sysctl(&format!("net/ipv6/conf/{ifname}/disable_ipv6"), "1")
    }

    /// Interface names in this namespace.
    pub fn links(&self) -> Result<Vec<String>, FwdError> {
        let out = self.ip(&["-o", "link", "show"])?;
        Ok(parse_link_names(&out))
    }

    /// The MAC address of an interface.
    pub fn mac(&self, ifname: &str) -> Result<[u8; 6], FwdError> {
        check_ifname(ifname)?;
        let out = self.ip(&["-o", "link", "show", "dev", ifname])?;
        let pos = out
            .find("link/ether ")
            .ok_or_else(|| FwdError::config("interface", format!("{ifname} is not an Ethernet interface")))?;
        parse_mac(&out[pos + 11..]).ok_or_else(|| FwdError::Command {
            command: format!("ip -o link show dev {ifname}"),
            message: "no MAC address in the output".into(),
        })
    }

    /// Switch off TSO, GSO, GRO, LRO and TX/RX checksum offload on an interface with
    /// `ethtool -K`, so that the bottleneck sees frames of wire size with complete checksums
    /// (with TX checksum offload a veth hands AF_PACKET frames whose TCP/UDP checksum is
    /// only the pseudo-header sum; forwarded as they are, the receiver drops them).
    /// Features the driver does not have or cannot change ("fixed") are skipped. Errors with
    /// [`FwdError::MissingTool`] if `ethtool` is not installed.
    pub fn disable_offloads(&self, ifname: &str) -> Result<(), FwdError> {
        check_ifname(ifname)?;
        if !ethtool_available() {
            return Err(FwdError::MissingTool {
                tool: "ethtool",
                hint: ETHTOOL_HINT,
            });
        }
        let before = self.offloads(ifname)?;
        for (feature, ethtool_name) in OFFLOAD_FEATURES {
            let Some(state) = before.iter().find(|f| f.name == *feature) else {
                continue;
            };
            if !state.on || state.fixed {
                continue;
            }
            self.exec("ethtool", &["-K", ifname, ethtool_name, "off"])?;
        }
        let after = self.offloads(ifname)?;
        let still: Vec<&str> = after
            .iter()
            .filter(|f| f.on && !f.fixed)
            .map(|f| f.name.as_str())
            .collect();
        if !still.is_empty() {
            return Err(FwdError::Command {
                command: format!("ethtool -K {ifname} ... off"),
                message: format!("still on: {}", still.join(", ")),
            });
        }
        Ok(())
    }

    /// The offload features of an interface that matter to the bottleneck (`ethtool -k`).
    pub fn offloads(&self, ifname: &str) -> Result<Vec<Offload>, FwdError> {
        check_ifname(ifname)?;
        if !ethtool_available() {
            return Err(FwdError::MissingTool {
                tool: "ethtool",
                hint: ETHTOOL_HINT,
            });
        }
        let out = self.exec("ethtool", &["-k", ifname])?;
        Ok(parse_offloads(&out))
    }
}

/// One offload feature as `ethtool -k` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offload {
    /// The long name, e.g. `generic-receive-offload`.
    pub name: String,
    pub on: bool,
    /// The driver does not let it change.
    pub fixed: bool,
}

/// The features [`Netns::disable_offloads`] turns off: (long name in `ethtool -k`, short
/// name for `ethtool -K`).
pub const OFFLOAD_FEATURES: &[(&str, &str)] = &[
    ("tcp-segmentation-offload", "tso"),
    ("generic-segmentation-offload", "gso"),
    ("generic-receive-offload", "gro"),
    ("large-receive-offload", "lro"),
    ("rx-gro-hw", "rx-gro-hw"),
    ("tx-checksumming", "tx"),
    ("rx-checksumming", "rx"),
];

/// Parse `ethtool -k` output, keeping the features of [`OFFLOAD_FEATURES`].
pub fn parse_offloads(out: &str) -> Vec<Offload> {
    let mut v = Vec::new();
    for line in out.lines() {
        let Some((name, rest)) = line.trim().split_once(':') else {
            continue;
        };
        if !OFFLOAD_FEATURES.iter().any(|(n, _)| *n == name) {
            continue;
        }
        let rest = rest.trim();
        v.push(Offload {
            name: name.to_string(),
            on: rest.starts_with("on"),
            fixed: rest.contains("[fixed]"),
        });
    }
    v
}

fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let word = s.split_whitespace().next()?;
    let mut mac = [0u8; 6];
    let mut parts = word.split(':');
    for b in &mut mac {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// Names from `ip -o link show` ("3: veth0@if2: <...>").
fn parse_link_names(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, ": ");
            it.next()?;
            let name = it.next()?;
            Some(name.split('@').next().unwrap_or(name).to_string())
        })
        .collect()
}

fn check_cidr(cidr: &str) -> Result<(), FwdError> {
    let bad = || {
        FwdError::config(
            "address",
            format!("expected an address with a prefix length such as 198.18.0.1/24 or fd00::1/64, found {cidr:?}"),
        )
    };
    let (addr, len) = cidr.split_once('/').ok_or_else(bad)?;
    let addr: std::net::IpAddr = addr.parse().map_err(|_| bad())?;
    let len: u8 = len.parse().map_err(|_| bad())?;
    if len > if addr.is_ipv4() { 32 } else { 128 } {
        return Err(bad());
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------
// Registry and guard
// ------------------------------------------------------------------------------------------

#[derive(Default)]
struct Registry {
    namespaces: BTreeSet<String>,
    /// Links in the process's own namespace.
    links: BTreeSet<String>,
    /// Runs whose lock file this process holds.
    locks: BTreeSet<String>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    namespaces: BTreeSet::new(),
    links: BTreeSet::new(),
    locks: BTreeSet::new(),
});

fn registry() -> MutexGuard<'static, Registry> {
    // A panic while holding the lock leaves the sets consistent (single inserts/removes).
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// One end of a veth pair: the namespace it goes into and its name there.
#[derive(Clone, Copy, Debug)]
pub struct VethEnd<'a> {
    pub ns: &'a Netns,
    pub name: &'a str,
}

/// The namespaces and links of one run. Dropping it deletes them all (also on panic);
/// [`Testbed::cleanup`] does the same and reports errors.
#[derive(Debug)]
pub struct Testbed {
    id: RunId,
    namespaces: Vec<String>,
    links: Vec<String>,
    /// The run's lock, taken with the first namespace.
    lock: Option<File>,
}

impl Testbed {
    /// An empty testbed for a run; nothing is created yet.
    pub fn new(id: RunId) -> Testbed {
        Testbed {
            id,
            namespaces: Vec::new(),
            links: Vec::new(),
            lock: None,
        }
    }

    pub fn id(&self) -> &RunId {
        &self.id
    }

    /// Names of the namespaces created so far.
    pub fn namespaces(&self) -> &[String] {
        &self.namespaces
    }

    /// Create the namespace `l4s-<id>-<role>` with its loopback up.
    pub fn add_netns(&mut self, role: &str) -> Result<Netns, FwdError> {
        let name = self.id.ns_name(role)?;
        if self.lock.is_none() {
            self.lock = take_run_lock(self.id.as_str());
            if self.lock.is_some() {
                registry().locks.insert(self.id.as_str().to_string());
            }
        }
        // Register first: a signal between creation and registration must not leak it.
        registry().namespaces.insert(name.clone());
        if let Err(e) = ip(&["netns", "add", &name]) {
            registry().namespaces.remove(&name);
            if list_netns().is_ok_and(|l| l.contains(&name)) {
                return Err(FwdError::config(
                    "run id",
                    format!(
                        "network namespace {name} already exists: run id {} is in use by another run, or a killed run left it (`l4s cleanup --run {}` removes it)",
                        self.id, self.id
                    ),
                ));
            }
            return Err(e);
        }
        self.namespaces.push(name.clone());
        let ns = Netns::named(&name);
        ns.loopback_up()?;
        Ok(ns)
    }

    /// Create a veth pair with one end in each namespace (created there directly, so the
    /// names never clash with the caller's interfaces). An end in [`Netns::current`] must
    /// be named with [`RunId::local_ifname`] so that cleanup can find it.
    pub fn add_veth(&mut self, a: VethEnd<'_>, b: VethEnd<'_>) -> Result<(), FwdError> {
        check_ifname(a.name)?;
        check_ifname(b.name)?;
        for end in [&a, &b] {
            if end.ns.name().is_none() && !end.name.starts_with(&format!("{LINK_PREFIX}{}", self.id)) {
                return Err(FwdError::config(
                    "interface name",
                    format!(
                        "a veth end in the current namespace must be named by RunId::local_ifname (l4s{}...), found {:?}",
                        self.id, end.name
                    ),
                ));
            }
        }
        let local: Vec<String> = [&a, &b]
            .iter()
            .filter(|e| e.ns.name().is_none())
            .map(|e| e.name.to_string())
            .collect();
        {
            let mut r = registry();
            for l in &local {
                r.links.insert(l.clone());
            }
        }
        let mut args: Vec<&str> = vec!["link", "add", "name", a.name];
        if let Some(n) = a.ns.name() {
            args.extend_from_slice(&["netns", n]);
        }
        args.extend_from_slice(&["type", "veth", "peer", "name", b.name]);
        if let Some(n) = b.ns.name() {
            args.extend_from_slice(&["netns", n]);
        }
        if let Err(e) = ip(&args) {
            let mut r = registry();
            for l in &local {
                r.links.remove(l);
            }
            return Err(e);
        }
        self.links.extend(local);
        Ok(())
    }

    /// Delete everything this testbed created. Keeps going after an error and returns the
    /// first one.
    pub fn cleanup(mut self) -> Result<(), FwdError> {
        self.cleanup_inner()
    }

    fn cleanup_inner(&mut self) -> Result<(), FwdError> {
        let mut first = None;
        for l in self.links.drain(..) {
            if let Err(e) = delete_link(&l) {
                first.get_or_insert(e);
            }
            registry().links.remove(&l);
        }
        for n in self.namespaces.drain(..).rev() {
            if let Err(e) = delete_netns(&n) {
                first.get_or_insert(e);
            }
            registry().namespaces.remove(&n);
        }
        if self.lock.take().is_some() {
            let _ = std::fs::remove_file(run_lock_path(self.id.as_str()));
            registry().locks.remove(self.id.as_str());
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        if let Err(e) = self.cleanup_inner() {
            eprintln!("l4s: cleaning up run {}: {e}", self.id);
        }
    }
}

fn delete_link(name: &str) -> Result<(), FwdError> {
    match ip(&["link", "del", "dev", name]) {
        Ok(_) => Ok(()),
        // Gone already (its peer's namespace died): fine.
        Err(FwdError::Command { message, .. }) if message.contains("Cannot find device") => Ok(()),
        Err(e) => Err(e),
    }
}

/// Kill the processes still inside a namespace (never this process), then delete it.
/// Threads of this process that joined it keep the namespace alive until they end; its
/// name is gone at once.
fn delete_netns(name: &str) -> Result<(), FwdError> {
    if !Netns::named(name).exists() {
        return Ok(());
    }
    if let Ok(out) = ip(&["netns", "pids", name]) {
        let me = std::process::id() as i32;
        for pid in out.split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
            if pid != me && pid > 1 {
                let _ = sys::kill(pid, libc::SIGKILL);
            }
        }
    }
    match ip(&["netns", "del", name]) {
        Ok(_) => Ok(()),
        Err(_) if !Netns::named(name).exists() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Delete every namespace and link of live testbeds in this process (for error paths and
/// signal handlers that cannot unwind). Safe to call more than once.
pub fn cleanup_registered() -> Result<(), FwdError> {
    let (namespaces, links) = {
        let r = registry();
        (r.namespaces.clone(), r.links.clone())
    };
    let mut first = None;
    for l in &links {
        if let Err(e) = delete_link(l) {
            first.get_or_insert(e);
        }
        registry().links.remove(l);
    }
    for n in namespaces.iter().rev() {
        if let Err(e) = delete_netns(n) {
            first.get_or_insert(e);
        }
        registry().namespaces.remove(n);
    }
    // The process is about to exit: its locks go with it, and so do their files.
    let locks = std::mem::take(&mut registry().locks);
    for id in locks {
        let _ = std::fs::remove_file(run_lock_path(&id));
    }
    first.map_or(Ok(()), Err)
}

/// How many namespaces and links live testbeds of this process hold.
pub fn registered_count() -> usize {
    let r = registry();
    r.namespaces.len() + r.links.len()
}

/// A signal this soon after the first is the same interrupt delivered again, not a second
/// one: GNU `timeout` signals the command and then its process group, so the command
/// gets each of its signals twice at once.
pub const SAME_INTERRUPT: Duration = Duration::from_millis(100);

/// What a SIGINT or SIGTERM is to a process that stops on the first and gives up on a
/// second: [`Interrupts::on_signal`] tells them apart, treating one within
/// [`SAME_INTERRUPT`] of the first as that first again.
#[derive(Clone, Copy, Debug, Default)]
pub struct Interrupts {
    first: Option<Instant>,
}

/// One signal, as [`Interrupts::on_signal`] sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interrupt {
    /// The first: stop the run.
    First,
    /// The first delivered again (within [`SAME_INTERRUPT`]): nothing new.
    Again,
    /// A second interrupt: stop at once.
    Second,
}

impl Interrupts {
    /// Classify a signal received now.
    pub fn on_signal(&mut self) -> Interrupt {
        self.on_signal_at(Instant::now())
    }

    /// Classify a signal received at `now`.
    pub fn on_signal_at(&mut self, now: Instant) -> Interrupt {
        match self.first {
            None => {
                self.first = Some(now);
                Interrupt::First
            }
            Some(at) if now.saturating_duration_since(at) >= SAME_INTERRUPT => Interrupt::Second,
            Some(_) => Interrupt::Again,
        }
    }

    /// When the first interrupt came, if one has.
    pub fn first(&self) -> Option<Instant> {
        self.first
    }
}

/// Clean up on SIGINT and SIGTERM. Starts one watcher thread (call once per process).
///
/// * With `stop`: the first signal sets `stop` so that the run can end and drop its
///   [`Testbed`]s itself; if after `grace` something is still registered, the watcher
///   removes it and exits with status 128 + signal. A second signal does that at once
///   (one within [`SAME_INTERRUPT`] of the first is the same one).
/// * Without `stop`: the first signal removes everything and exits with 128 + signal.
pub fn install_signal_cleanup(stop: Option<Arc<AtomicBool>>, grace: Duration) -> Result<(), FwdError> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .map_err(|e| FwdError::io("installing SIGINT/SIGTERM handlers", e))?;
    std::thread::Builder::new()
        .name("l4s-signal-cleanup".into())
        .spawn(move || {
            let mut interrupts = Interrupts::default();
            let mut first_signal = 0;
            loop {
                let mut got = None;
                for s in signals.pending() {
                    got = Some(s);
                }
                if let Some(sig) = got {
                    let Some(flag) = &stop else {
                        exit_after_cleanup(sig, "a signal")
                    };
                    match interrupts.on_signal() {
                        Interrupt::First => {
                            flag.store(true, Ordering::SeqCst);
                            first_signal = sig;
                        }
                        Interrupt::Again => {}
                        Interrupt::Second => exit_after_cleanup(sig, "a second signal"),
                    }
                }
                if let Some(at) = interrupts.first() {
                    if at.elapsed() >= grace && registered_count() > 0 {
                        exit_after_cleanup(
                            first_signal,
                            &format!("the run had not ended {grace:?} after the signal"),
                        );
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
        .map_err(|e| FwdError::io("starting the signal thread", e))?;
    Ok(())
}

/// Remove what this process's testbeds hold, say so, and exit with 128 + `sig`.
fn exit_after_cleanup(sig: i32, why: &str) -> ! {
    let (n, l) = {
        let r = registry();
        (r.namespaces.len(), r.links.len())
    };
    match cleanup_registered() {
        Ok(()) => eprintln!(
            "l4s: {why}: stopped at once; removed the testbed ({n} namespaces, {l} links) and wrote no results"
        ),
        Err(e) => eprintln!(
            "l4s: {why}: stopped at once; removing the testbed failed ({e}): `l4s cleanup` removes what is left"
        ),
    }
    std::process::exit(128 + sig)
}

// ------------------------------------------------------------------------------------------
// Leftovers of killed runs
// ------------------------------------------------------------------------------------------

/// What [`cleanup_all`] removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CleanupReport {
    pub namespaces: Vec<String>,
    pub links: Vec<String>,
    /// Runs kept because they are still going (their lock is held), with the namespaces
    /// and links of theirs that matched.
    pub kept: Vec<(String, usize)>,
}

/// `*` (any run of characters) and `?` (one character) glob matching.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p = pattern.as_bytes();
    let n = name.as_bytes();
    let (mut pi, mut ni) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

/// Namespaces under `/run/netns`.
pub fn list_netns() -> Result<Vec<String>, FwdError> {
    let rd = match std::fs::read_dir(NETNS_RUN_DIR) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(FwdError::io(format!("listing {NETNS_RUN_DIR}"), e)),
    };
    let mut v: Vec<String> = rd.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
    v.sort();
    Ok(v)
}

/// The namespace-style name (`l4s-<id>-<tag>`) of a caller-namespace link `l4s<id><tag>`,
/// or `None` if the link is not named like ours.
fn link_as_ns_name(link: &str) -> Option<String> {
    let rest = link.strip_prefix(LINK_PREFIX)?;
    if rest.len() < 8
        || !rest.as_bytes()[..8]
            .iter()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    {
        return None;
    }
    Some(format!("{NS_PREFIX}{}-{}", &rest[..8], &rest[8..]))
}

/// Remove the leftovers of killed runs: every namespace whose name matches `pattern`
/// (processes still in it are killed; its veths die with it), and every veth in the
/// caller's namespace named `l4s<id><tag>` whose `l4s-<id>-<tag>` matches. `pattern` must
/// start with `l4s-` (e.g. `l4s-*` or `l4s-1a2b3c4d-*`): nothing else is ever touched.
/// Namespaces of live testbeds in this process are skipped, and so are those of runs still
/// going in other processes ([`run_is_alive`]) unless `force`.
pub fn cleanup_all(pattern: &str, force: bool) -> Result<CleanupReport, FwdError> {
    if !pattern.starts_with(NS_PREFIX) {
        return Err(FwdError::config(
            "pattern",
            format!("expected a pattern starting with {NS_PREFIX:?} such as \"l4s-*\", found {pattern:?}"),
        ));
    }
    let mut report = CleanupReport::default();
    let mut first = None;
    let live = {
        let r = registry();
        (r.namespaces.clone(), r.links.clone())
    };
    let mut alive: std::collections::BTreeMap<String, bool> = Default::default();
    let mut kept: std::collections::BTreeMap<String, usize> = Default::default();
    let mut keep = |name: &str| -> bool {
        let Some(id) = run_id_of(name) else { return false };
        if force || !*alive.entry(id.to_string()).or_insert_with(|| run_is_alive(id)) {
            return false;
        }
        *kept.entry(id.to_string()).or_default() += 1;
        true
    };
    for name in list_netns()? {
        if glob_match(pattern, &name) && !live.0.contains(&name) && !keep(&name) {
            match delete_netns(&name) {
                Ok(()) => report.namespaces.push(name),
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
    }
    let out = ip(&["-o", "link", "show", "type", "veth"])?;
    for link in parse_link_names(&out) {
        let Some(as_ns) = link_as_ns_name(&link) else { continue };
        if glob_match(pattern, &as_ns) && !live.1.contains(&link) && !keep(&as_ns) {
            match delete_link(&link) {
                Ok(()) => report.links.push(link),
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
    }
    report.kept = kept.into_iter().collect();
    // Lock files of killed runs whose namespaces are gone already.
    if let Ok(rd) = std::fs::read_dir(RUN_LOCK_DIR) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(id) = name
                .strip_suffix(".lock")
                .filter(|id| run_id_of(&format!("{NS_PREFIX}{id}")).is_some())
            {
                if glob_match(pattern, &format!("{NS_PREFIX}{id}-")) {
                    run_is_alive(id);
                }
            }
        }
    }
    match first {
        Some(e) => Err(e),
        None => Ok(report),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first signal stops; the same one delivered again within 100 ms (GNU `timeout`
    /// signals the command, then its group) is nothing new; one 100 ms or more after the
    /// first is a second interrupt, however many repeats came between.
    #[test]
    fn a_signal_repeated_at_once_is_the_same_interrupt() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut i = Interrupts::default();
        assert_eq!(i.first(), None);
        assert_eq!(i.on_signal_at(t0), Interrupt::First);
        assert_eq!(i.on_signal_at(ms(1)), Interrupt::Again);
        assert_eq!(i.on_signal_at(ms(99)), Interrupt::Again);
        assert_eq!(i.on_signal_at(ms(100)), Interrupt::Second);
        assert_eq!(i.first(), Some(t0));
    }

    #[test]
    fn names() {
        let id = RunId::parse("1a2b3c4d").unwrap();
        assert_eq!(id.prefix(), "l4s-1a2b3c4d-");
        assert_eq!(id.ns_name("router").unwrap(), "l4s-1a2b3c4d-router");
        assert!(id.ns_name("Router").is_err());
        assert!(id.ns_name("").is_err());
        assert_eq!(id.local_ifname("ab").unwrap(), "l4s1a2b3c4dab");
        assert_eq!(id.local_ifname("abcd").unwrap().len(), 15);
        assert!(id.local_ifname("abcde").is_err());
        assert!(RunId::parse("1A2B3C4D").is_err());
        assert!(RunId::parse("123").is_err());
        let a = RunId::generate();
        let b = RunId::generate();
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), 8);
        assert!(check_ifname("eth0").is_ok());
        assert!(check_ifname("a/b").is_err());
        assert!(check_ifname("sixteen-chars-xx").is_err());
    }

    #[test]
    fn globbing() {
        assert!(glob_match("l4s-*", "l4s-1a2b3c4d-router"));
        assert!(glob_match("l4s-1a2b3c4d-*", "l4s-1a2b3c4d-a"));
        assert!(!glob_match("l4s-1a2b3c4d-*", "l4s-1a2b3c4e-a"));
        assert!(glob_match("l4s-????????-r*", "l4s-1a2b3c4d-router"));
        assert!(!glob_match("l4s-*", "other"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("a", ""));
        assert_eq!(link_as_ns_name("l4s1a2b3c4dab").as_deref(), Some("l4s-1a2b3c4d-ab"));
        assert_eq!(link_as_ns_name("l4snothexxx"), None);
        assert_eq!(link_as_ns_name("eth0"), None);
        assert!(cleanup_all("*", false).is_err());
        assert!(cleanup_all("foo-*", true).is_err());
    }

    #[test]
    fn parsers() {
        let k = "Features for veth0:\nrx-checksumming: on\ntx-checksumming: on\n\ttx-checksum-ipv4: off [fixed]\n\
                 tcp-segmentation-offload: on\ngeneric-segmentation-offload: on\ngeneric-receive-offload: off\n\
                 large-receive-offload: off [fixed]\n";
        let o = parse_offloads(k);
        assert_eq!(o.len(), 6);
        assert!(o.iter().any(|f| f.name == "large-receive-offload" && f.fixed && !f.on));
        assert!(o
            .iter()
            .any(|f| f.name == "tcp-segmentation-offload" && f.on && !f.fixed));
        assert_eq!(
            parse_link_names("1: lo: <LOOPBACK> mtu\n5: veth0@if4: <BROADCAST> mtu 1500\n"),
            vec!["lo", "veth0"]
        );
        assert_eq!(parse_mac("02:00:00:aa:bb:cc brd ff"), Some([2, 0, 0, 0xaa, 0xbb, 0xcc]));
        assert_eq!(parse_mac("zz"), None);
        assert!(check_cidr("198.18.0.1/24").is_ok());
        assert!(check_cidr("fd00::1/64").is_ok());
        assert!(check_cidr("198.18.0.1").is_err());
        assert!(check_cidr("198.18.0.1/33").is_err());
    }
}
