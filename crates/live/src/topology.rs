//! A scenario's topology as network namespaces joined by veth pairs.
//!
//! * Every scenario node is a namespace `l4s-<run>-n<i>` (sender hosts, routers, receiver
//!   hosts). Nodes with more than one neighbour forward IPv4 and IPv6 in the kernel.
//! * Every pair of links between two nodes (a→b and b→a) is one layer-2 segment with the
//!   subnet `10.<k/256>.<k%256>.0/24` (and `fd00:4c:0:<k>::/64` with IPv6): `.1` on the a
//!   side, `.2` on the b side, each on an interface called `e<k>`.
//! * A segment whose links are ideal wires (no rate, delay, fault or loss) is a plain veth
//!   pair. Otherwise a "wire" namespace `l4s-<run>-w<k>` sits in the middle with the
//!   l4s-fwd forwarder in it, a transparent layer-2 bump (hosts on both sides share the
//!   subnet; ARP/NDP cross it) that runs each direction's link model, the very
//!   [`l4s_link`] object the simulator drives: the scenario's ECN `fault`, its AQM at the
//!   link rate following the `rate_schedule` on the run clock, the propagation delay, and a
//!   `loss` model (`a ─[forwarder]─ b`).
//! * Routes: shortest paths in hops (a default route on hosts with one neighbour).
//! * Segmentation and receive offloads are switched off on every interface (`ethtool`), so
//!   that queues see frames of wire size.
//!
//! Everything is owned by an [`l4s_fwd::netns::Testbed`] guard: dropped (normal end, error,
//! panic) it deletes the namespaces, which destroys the veths in them.

use crate::LiveError;
use l4s_core::Dur;
use l4s_fwd::medium::MediumConfig;
use l4s_fwd::netns::{Netns, RunId, Testbed, VethEnd};
use l4s_fwd::RouterConfig;
use l4s_scenario::Scenario;
use std::collections::VecDeque;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::process::{Command, Stdio};

/// One segment (a pair of scenario links).
#[derive(Clone, Debug)]
pub struct Segment {
    pub a: usize,
    pub b: usize,
    /// Scenario link indices of a→b and b→a.
    pub ab: usize,
    pub ba: usize,
}

/// The forwarder to run in a wire namespace: both directions of a segment, or every
/// station's segment of a shared medium.
#[derive(Clone, Debug)]
pub struct Element {
    pub ns: Netns,
    /// The segment (a medium's first station's).
    pub segment: usize,
    pub kind: ElementKind,
}

#[derive(Clone, Debug)]
pub enum ElementKind {
    /// The two-port forwarder of one segment.
    Pair(Box<RouterConfig>),
    /// The medium forwarder of a Wi-Fi BSS or a cell of several UEs.
    Medium(Box<MediumElement>),
}

/// A shared medium (a Wi-Fi BSS, a cell of several UEs) in the testbed: one wire namespace
/// with an interface pair per station or UE.
#[derive(Clone, Debug)]
pub struct MediumElement {
    /// The BSS's name (its queues are reported under it).
    pub name: String,
    /// The scenario link that owns the model (where the simulator reports its queues).
    pub owner: usize,
    /// Per station in port order: its segment, and its downlink and uplink scenario links.
    pub stations: Vec<MediumStation>,
    pub cfg: Box<MediumConfig>,
}

#[derive(Clone, Copy, Debug)]
pub struct MediumStation {
    pub segment: usize,
    pub down: usize,
    pub up: usize,
}

impl Element {
    /// The two-port forwarder's configuration, if this is one.
    pub fn router(&self) -> Option<&RouterConfig> {
        match &self.kind {
            ElementKind::Pair(c) => Some(c),
            ElementKind::Medium(_) => None,
        }
    }
}

/// The most stations a BSS has in the live testbed: each is two interfaces of one
/// forwarding thread and a namespace of endpoints, all sharing the host's cores.
pub const LIVE_MAX_STATIONS: usize = 8;

/// The fastest station PHY rate a live BSS takes: its MAC carries up to about 80 % of it,
/// about the 1 Gbit/s (83 000 full-size frames/s) the forwarder keeps up with alongside the
/// endpoints' kernel TCP on the same host.
pub const LIVE_MAX_PHY_RATE: l4s_core::Rate = l4s_core::Rate(1_250_000_000);

/// A built testbed.
pub struct Built {
    pub testbed: Testbed,
    /// Namespace of each scenario node.
    pub nodes: Vec<Netns>,
    /// The address flows use to reach each node.
    pub node_addr: Vec<IpAddr>,
    pub segments: Vec<Segment>,
    pub elements: Vec<Element>,
    pub ipv6: bool,
}

/// Pair the scenario's links into segments.
pub fn segments(sc: &Scenario) -> Result<Vec<Segment>, LiveError> {
    for l in sc
        .links
        .iter()
        .filter(|l| l.medium.as_ref().is_some_and(|m| m.from == 0))
    {
        let Some(m) = l.medium.as_ref() else { continue };
        let name = m.name.as_str();
        // Every station or UE is a namespace and two interfaces of one forwarding thread.
        let (kind, members) = if m.cell.is_some() {
            ("cell", "UEs")
        } else {
            ("wifi", "stations")
        };
        let count = m.nodes.len().saturating_sub(1);
        if count > LIVE_MAX_STATIONS {
            return Err(LiveError::input(format!(
                "{}: topology.{kind} {name:?}: {count} {members}; the live testbed runs at most {LIVE_MAX_STATIONS} \
                 (every one is a namespace and two interfaces of one forwarding thread on this host): \
                 run it with --backend sim",
                sc.file
            )));
        }
        let Some(w) = m.wifi.as_deref() else {
            continue;
        };
        if let Some(st) = w.stations.iter().find(|s| s.data_rate() > LIVE_MAX_PHY_RATE) {
            return Err(LiveError::input(format!(
                "{}: topology.wifi {name:?}, station {:?}: {} (PHY, over all its links) is more than the live \
                 forwarder keeps up with beside the endpoints on this host; expected at most {LIVE_MAX_PHY_RATE}: \
                 lower its mcs, bandwidth or nss, or run it with --backend sim",
                sc.file,
                st.name,
                st.data_rate()
            )));
        }
    }
    let mut used = vec![false; sc.links.len()];
    let mut out = Vec::new();
    for (i, l) in sc.links.iter().enumerate() {
        if used[i] {
            continue;
        }
        let rev =
            (0..sc.links.len()).find(|&j| !used[j] && j != i && sc.links[j].from == l.to && sc.links[j].to == l.from);
        let Some(j) = rev else {
            return Err(LiveError::input(format!(
                "link {:?} ({} -> {}) has no link back; the live backend builds every link as a two-way segment",
                l.name, sc.nodes[l.from].name, sc.nodes[l.to].name
            )));
        };
        used[i] = true;
        used[j] = true;
        let (ab, ba) = (i, j);
        out.push(Segment {
            a: sc.links[ab].from,
            b: sc.links[ab].to,
            ab,
            ba,
        });
    }
    if out.len() > 65_000 {
        return Err(LiveError::input("more than 65000 links: too many for the live backend"));
    }
    Ok(out)
}

fn v4(seg: usize, host: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, (seg >> 8) as u8, (seg & 255) as u8, host)
}
fn v6(seg: usize, host: u16) -> Ipv6Addr {
    Ipv6Addr::new(0xfd00, 0x4c, 0, seg as u16, 0, 0, 0, host)
}

/// Next hop (neighbour node, segment to it) from every node towards every node, by
/// breadth-first search in hops. `hop[n][m]` is `None` for n == m or unreachable m.
pub fn next_hops(n_nodes: usize, segs: &[Segment]) -> Vec<Vec<Option<(usize, usize)>>> {
    let mut adj: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n_nodes];
    for (k, s) in segs.iter().enumerate() {
        adj[s.a].push((s.b, k));
        adj[s.b].push((s.a, k));
    }
    (0..n_nodes)
        .map(|src| {
            let mut first: Vec<Option<(usize, usize)>> = vec![None; n_nodes];
            let mut seen = vec![false; n_nodes];
            seen[src] = true;
            let mut q = VecDeque::new();
            for &(nb, k) in &adj[src] {
                if !seen[nb] {
                    seen[nb] = true;
                    first[nb] = Some((nb, k));
                    q.push_back(nb);
                }
            }
            while let Some(u) = q.pop_front() {
                for &(nb, _) in &adj[u] {
                    if !seen[nb] {
                        seen[nb] = true;
                        first[nb] = first[u];
                        q.push_back(nb);
                    }
                }
            }
            first
        })
        .collect()
}

/// Run `ip -n NS [-6] -batch -` with these lines.
fn ip_batch(ns: &Netns, v6: bool, lines: &[String]) -> Result<(), LiveError> {
    if lines.is_empty() {
        return Ok(());
    }
    let name = ns.name().unwrap_or_default().to_string();
    let fam = if v6 { "-6" } else { "-4" };
    let mut c = Command::new("ip")
        .args(["-n", &name, fam, "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| LiveError::setup(format!("running `ip -batch` in {name}: {e}")))?;
    if let Some(mut stdin) = c.stdin.take() {
        let text = lines.join("\n") + "\n";
        stdin
            .write_all(text.as_bytes())
            .map_err(|e| LiveError::setup(format!("writing to `ip -batch` in {name}: {e}")))?;
    }
    let out = c
        .wait_with_output()
        .map_err(|e| LiveError::setup(format!("`ip -batch` in {name}: {e}")))?;
    if !out.status.success() {
        return Err(LiveError::setup(format!(
            "`ip -batch` in {name} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Build the testbed of `sc` under run id `id`. `seed` seeds the links; their schedules end
/// at `duration`, the end of the run.
pub fn build(sc: &Scenario, id: RunId, ipv6: bool, seed: u64, duration: Dur) -> Result<Built, LiveError> {
    let segs = segments(sc)?;
    let mut tb = Testbed::new(id);
    let mut nodes = Vec::with_capacity(sc.nodes.len());
    for i in 0..sc.nodes.len() {
        nodes.push(tb.add_netns(&format!("n{i}"))?);
    }
    let mut elements = Vec::new();
    // Each shared medium (a Wi-Fi BSS, a cell): its wire namespace, its owner link and its
    // stations' (UEs') segments.
    let mut media: Vec<(Netns, usize, Vec<Option<MediumStation>>)> = Vec::new();
    for (k, s) in segs.iter().enumerate() {
        let (lab, lba) = (&sc.links[s.ab], &sc.links[s.ba]);
        let e = format!("e{k}");
        let ideal =
            |l: &l4s_scenario::Link| l.rate.is_none() && l.delay.is_zero() && l.fault.is_none() && l.loss.is_none();
        if let Some(m) = lab.medium.as_ref().or(lba.medium.as_ref()) {
            // A station of a BSS: the access point's node reaches it through the BSS's wire
            // namespace, on the interface pair of its port.
            let (down, up) = if m.from == 0 { (s.ab, s.ba) } else { (s.ba, s.ab) };
            let Some(dm) = sc.links[down].medium.as_ref() else {
                return Err(LiveError::input(format!(
                    "link {:?} crosses the shared medium {:?} but its way back does not",
                    lab.name, m.name
                )));
            };
            let j = dm.to.saturating_sub(1);
            let g = match media.iter().position(|x| x.1 == dm.owner) {
                Some(g) => g,
                None => {
                    let stations = dm.nodes.len().saturating_sub(1);
                    media.push((tb.add_netns(&format!("w{k}"))?, dm.owner, vec![None; stations]));
                    media.len() - 1
                }
            };
            let w = media[g].0.clone();
            let (a, b) = (format!("a{j}"), format!("b{j}"));
            tb.add_veth(
                VethEnd {
                    ns: &nodes[sc.links[down].from],
                    name: &e,
                },
                VethEnd { ns: &w, name: &a },
            )?;
            tb.add_veth(
                VethEnd { ns: &w, name: &b },
                VethEnd {
                    ns: &nodes[sc.links[down].to],
                    name: &e,
                },
            )?;
            for p in [&a, &b] {
                w.disable_ipv6(p)?;
                w.link_up(p)?;
                w.disable_offloads(p)?;
            }
            if let Some(slot) = media[g].2.get_mut(j) {
                *slot = Some(MediumStation { segment: k, down, up });
            }
        } else if ideal(lab) && ideal(lba) {
            tb.add_veth(
                VethEnd {
                    ns: &nodes[s.a],
                    name: &e,
                },
                VethEnd {
                    ns: &nodes[s.b],
                    name: &e,
                },
            )?;
        } else {
            let w = tb.add_netns(&format!("w{k}"))?;
            tb.add_veth(
                VethEnd {
                    ns: &nodes[s.a],
                    name: &e,
                },
                VethEnd { ns: &w, name: "a" },
            )?;
            tb.add_veth(
                VethEnd { ns: &w, name: "b" },
                VethEnd {
                    ns: &nodes[s.b],
                    name: &e,
                },
            )?;
            for p in ["a", "b"] {
                w.disable_ipv6(p)?;
                w.link_up(p)?;
                w.disable_offloads(p)?;
            }
            let mut cfg = RouterConfig::new("a", "b", l4s_core::Rate::mbps(1), lab.aqm.clone());
            // The links as the simulator builds them; their schedules and faults count from
            // the scenario's time 0, which the run publishes to the forwarder
            // (`l4s_fwd::run_recording_with_origin`) when its clock starts.
            cfg.ab = lab.config(duration);
            cfg.ba = lba.config(duration);
            cfg.seed = seed.wrapping_add(k as u64);
            cfg.status_interval = Dur::from_millis(100);
            cfg.validate()?;
            elements.push(Element {
                ns: w.clone(),
                segment: k,
                kind: ElementKind::Pair(Box::new(cfg)),
            });
        }
        for (n, host) in [(s.a, 1u8), (s.b, 2u8)] {
            let ns = &nodes[n];
            ns.add_addr(&e, &format!("{}/24", v4(k, host)))?;
            if ipv6 {
                ns.add_addr(&e, &format!("{}/64", v6(k, host as u16)))?;
            }
            ns.link_up(&e)?;
            ns.disable_offloads(&e)?;
        }
    }
    for (w, owner, stations) in media {
        let name = sc.links[owner].medium.as_ref().map_or("", |m| m.name.as_str());
        let stations: Vec<MediumStation> = stations
            .into_iter()
            .enumerate()
            .map(|(j, st)| {
                st.ok_or_else(|| LiveError::input(format!("station {j} of the shared medium {name:?} has no links")))
            })
            .collect::<Result<_, _>>()?;
        let pairs = (0..stations.len())
            .map(|j| (format!("a{j}"), format!("b{j}")))
            .collect();
        let mut cfg = MediumConfig::new(pairs, sc.links[owner].config(duration));
        cfg.seed = seed.wrapping_add(stations[0].segment as u64);
        cfg.status_interval = Dur::from_millis(100);
        // The model's counters are read at the measurement window's start and end.
        cfg.window = Some((sc.warmup, duration));
        cfg.validate()?;
        elements.push(Element {
            ns: w,
            segment: stations[0].segment,
            kind: ElementKind::Medium(Box::new(MediumElement {
                name: name.to_string(),
                owner,
                stations,
                cfg: Box::new(cfg),
            })),
        });
    }
    // Routes and forwarding.
    let hops = next_hops(sc.nodes.len(), &segs);
    let mut degree = vec![0usize; sc.nodes.len()];
    for s in &segs {
        degree[s.a] += 1;
        degree[s.b] += 1;
    }
    let peer = |k: usize, n: usize| -> (Ipv4Addr, Ipv6Addr) {
        // The address of the other end of segment k, seen from node n.
        let host = if segs[k].a == n { 2 } else { 1 };
        (v4(k, host), v6(k, host as u16))
    };
    // Static neighbour entries on both ends of every segment: no ARP or neighbour discovery
    // (whose first lost solicitation would stall a flow for a second) during the run.
    let mut neigh: Vec<(Vec<String>, Vec<String>)> = vec![(Vec::new(), Vec::new()); nodes.len()];
    for (k, s) in segs.iter().enumerate() {
        let e = format!("e{k}");
        let mac_a = nodes[s.a].mac(&e)?;
        let mac_b = nodes[s.b].mac(&e)?;
        let fmt = |m: [u8; 6]| m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":");
        for (n, peer_host, peer_mac) in [(s.a, 2u8, fmt(mac_b)), (s.b, 1u8, fmt(mac_a))] {
            neigh[n].0.push(format!(
                "neigh replace {} lladdr {peer_mac} dev {e} nud permanent",
                v4(k, peer_host)
            ));
            if ipv6 {
                neigh[n].1.push(format!(
                    "neigh replace {} lladdr {peer_mac} dev {e} nud permanent",
                    v6(k, peer_host as u16)
                ));
            }
        }
    }
    for (n, ns) in nodes.iter().enumerate() {
        let (mut lines, mut lines6) = std::mem::take(&mut neigh[n]);
        if degree[n] == 1 {
            let k = segs.iter().position(|s| s.a == n || s.b == n).unwrap_or(0);
            let (g4, g6) = peer(k, n);
            lines.push(format!("route add default via {g4} dev e{k}"));
            if ipv6 {
                lines6.push(format!("route add default via {g6} dev e{k}"));
            }
        } else if degree[n] > 1 {
            ns.enable_forwarding()?;
            for (k, s) in segs.iter().enumerate() {
                if s.a == n || s.b == n {
                    continue;
                }
                // Towards the nearer end of the segment.
                let hop = match (hops[n][s.a], hops[n][s.b]) {
                    (Some(x), None) | (None, Some(x)) => x,
                    (Some(x), Some(y)) => {
                        if dist(&hops, n, s.a) <= dist(&hops, n, s.b) {
                            x
                        } else {
                            y
                        }
                    }
                    (None, None) => continue,
                };
                let (g4, g6) = peer(hop.1, n);
                lines.push(format!("route add {}/24 via {g4} dev e{}", v4(k, 0), hop.1));
                if ipv6 {
                    lines6.push(format!("route add {}/64 via {g6} dev e{}", v6(k, 0), hop.1));
                }
            }
        }
        ip_batch(ns, false, &lines)?;
        ip_batch(ns, true, &lines6)?;
    }
    // A node's address: the one on its first segment.
    let mut node_addr = Vec::with_capacity(sc.nodes.len());
    for n in 0..sc.nodes.len() {
        let k = segs.iter().position(|s| s.a == n || s.b == n);
        let addr = match k {
            Some(k) => {
                let host = if segs[k].a == n { 1 } else { 2 };
                if ipv6 {
                    IpAddr::V6(v6(k, host as u16))
                } else {
                    IpAddr::V4(v4(k, host))
                }
            }
            None => IpAddr::V4(Ipv4Addr::LOCALHOST),
        };
        node_addr.push(addr);
    }
    Ok(Built {
        testbed: tb,
        nodes,
        node_addr,
        segments: segs,
        elements,
        ipv6,
    })
}

/// Hops from `n` to `m` (following the next-hop table).
fn dist(hops: &[Vec<Option<(usize, usize)>>], n: usize, m: usize) -> usize {
    let mut cur = n;
    let mut d = 0;
    while cur != m && d <= hops.len() {
        match hops[cur][m] {
            Some((nb, _)) => cur = nb,
            None => return usize::MAX,
        }
        d += 1;
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_hops_of_a_line_and_a_star() {
        // 0 - 1 - 2 - 3, and 4 hanging off 1.
        let seg = |a, b| Segment { a, b, ab: 0, ba: 0 };
        let segs = [seg(0, 1), seg(1, 2), seg(2, 3), seg(1, 4)];
        let h = next_hops(5, &segs);
        assert_eq!(h[0][3], Some((1, 0)));
        assert_eq!(h[3][0], Some((2, 2)));
        assert_eq!(h[1][3], Some((2, 1)));
        assert_eq!(h[4][3], Some((1, 3)));
        assert_eq!(h[0][0], None);
        assert_eq!(dist(&h, 0, 3), 3);
        assert_eq!(dist(&h, 4, 0), 2);
        // An island is unreachable.
        let h = next_hops(6, &segs);
        assert_eq!(h[0][5], None);
        assert_eq!(dist(&h, 0, 5), usize::MAX);
    }

    #[test]
    fn dumbbell_segments_pair_both_directions() {
        let sc = l4s_scenario::load_str(
            r#"[scenario]
name = "t"
duration = "2s"
[topology]
type = "dumbbell"
rate = "10Mbit"
rtt = "20ms"
[[flows]]
name = "a"
type = "probe"
[[flows]]
name = "b"
type = "probe"
"#,
            std::path::Path::new("t.toml"),
        )
        .unwrap();
        let segs = segments(&sc).unwrap();
        // bottleneck, and per flow src<->left, right<->dst.
        assert_eq!(segs.len(), 5);
        for s in &segs {
            assert_eq!(sc.links[s.ab].from, s.a);
            assert_eq!(sc.links[s.ba].from, s.b);
        }
        assert_eq!(v4(300, 2), Ipv4Addr::new(10, 1, 44, 2));
        assert_eq!(v6(7, 1).to_string(), "fd00:4c:0:7::1");
    }

    /// Two one-way links between `server` and `client`, the second with `fault_b`, the
    /// first with `fault_a`.
    fn one_way_pair(fault_a: &str, fault_b: &str) -> Scenario {
        let text = format!(
            r#"[scenario]
name = "t"
duration = "2s"
[topology]
type = "custom"
[[topology.nodes]]
name = "server"
[[topology.nodes]]
name = "client"
[[topology.links]]
name = "down"
from = "server"
to = "client"
rate = "10Mbit"
bidirectional = false
{fault_a}
[[topology.links]]
name = "up"
from = "client"
to = "server"
rate = "2Mbit"
bidirectional = false
{fault_b}
[[flows]]
name = "f"
type = "probe"
from = "client"
to = "server"
"#
        );
        l4s_scenario::load_str(&text, std::path::Path::new("t.toml")).unwrap()
    }

    #[test]
    fn faults_on_either_or_both_directions_stay_on_their_link() {
        // Each direction of a segment is its own link model in the forwarder, with its own
        // fault: the segment keeps the order the links were written in, whichever has one.
        let fault = r#"fault = { kind = "bleach", start = "1s" }"#;
        for (fa, fb) in [("", fault), (fault, ""), ("", ""), (fault, fault)] {
            let sc = one_way_pair(fa, fb);
            let segs = segments(&sc).unwrap();
            assert_eq!(segs.len(), 1);
            assert_eq!(sc.links[segs[0].ab].name, "down");
            assert_eq!(sc.links[segs[0].ab].fault.is_some(), !fa.is_empty());
            assert_eq!(sc.links[segs[0].ba].fault.is_some(), !fb.is_empty());
            let cfg = sc.links[segs[0].ba].config(sc.duration);
            assert_eq!(cfg.fault.is_some(), !fb.is_empty());
        }
    }

    /// A BSS at `ap` with `n` stations of this PHY (`extra`: more station keys).
    fn bss(n: usize, extra: &str) -> Scenario {
        let mut text = String::from(
            "[scenario]\nname = \"t\"\nduration = \"2s\"\n[topology]\ntype = \"custom\"\n\
             [[topology.nodes]]\nname = \"server\"\n[[topology.nodes]]\nname = \"ap\"\n",
        );
        for i in 0..n {
            text += &format!("[[topology.nodes]]\nname = \"sta{i}\"\n");
        }
        text += "[[topology.links]]\nfrom = \"server\"\nto = \"ap\"\ndelay = \"4ms\"\n";
        text += "[[topology.wifi]]\nname = \"wifi\"\nap = \"ap\"\n";
        for i in 0..n {
            text += &format!("[[topology.wifi.stations]]\nnode = \"sta{i}\"\n{extra}\n");
        }
        text += "[[flows]]\nname = \"f\"\ntype = \"probe\"\nfrom = \"server\"\nto = \"sta0\"\n";
        l4s_scenario::load_str(&text, std::path::Path::new("t.toml")).unwrap()
    }

    #[test]
    fn a_bss_pairs_each_station_and_refuses_what_the_host_cannot_forward() {
        // Every station is a segment: its downlink from the AP and its uplink.
        let sc = bss(3, "mcs = 9");
        let segs = segments(&sc).unwrap();
        let medium: Vec<_> = segs.iter().filter(|s| sc.links[s.ab].medium.is_some()).collect();
        assert_eq!(medium.len(), 3);
        for s in medium {
            assert!(sc.links[s.ba].medium.is_some());
        }
        let e = segments(&bss(LIVE_MAX_STATIONS + 1, "mcs = 9"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("9 stations") && e.contains("at most 8") && e.contains("--backend sim"),
            "{e}"
        );
        // HE 160 MHz, 2 streams, MCS 11: 2.402 Gbit/s.
        let e = segments(&bss(1, "bandwidth = 160\nmcs = 11")).unwrap_err().to_string();
        assert!(
            e.starts_with("t.toml: topology.wifi \"wifi\", station \"sta0\": 2.402Gbit")
                && e.contains("expected at most 1.250Gbit"),
            "{e}"
        );
    }
}
