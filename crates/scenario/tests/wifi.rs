//! Wi-Fi BSSs: `[[topology.wifi]]` expands into one link each way per station, all
//! crossing one shared model, and bad Wi-Fi parameters are refused with the file, line and
//! key that name them and what was expected.

use l4s_link::wifi::{AccessCategory, Scheduler};
use l4s_scenario::load_str;
use std::path::Path;

const BSS: &str = r#"[scenario]
duration = "3s"
[topology]
type = "custom"
[[topology.nodes]]
name = "server"
[[topology.nodes]]
name = "ap"
[[topology.nodes]]
name = "laptop"
[[topology.nodes]]
name = "phone"
[[topology.links]]
from = "server"
to = "ap"
delay = "4ms"
[[topology.wifi]]
ap = "ap"
aqm = { kind = "dualpi2" }
BSSKEYS
[[topology.wifi.stations]]
node = "laptop"
LAPTOP
[[topology.wifi.stations]]
node = "phone"
mcs = 7
[[flows]]
name = "f"
type = "udp-prague"
from = "server"
to = "laptop"
"#;

fn load(bss: &str, laptop: &str) -> Result<l4s_scenario::Scenario, String> {
    let text = BSS.replace("BSSKEYS", bss).replace("LAPTOP", laptop);
    load_str(&text, Path::new("wifi.toml")).map_err(|e| e.to_string())
}

fn err(bss: &str, laptop: &str) -> String {
    match load(bss, laptop) {
        Ok(_) => panic!("accepted: {bss} / {laptop}"),
        Err(e) => e,
    }
}

#[test]
fn a_bss_is_a_link_each_way_per_station_through_one_model() {
    let sc = load(
        "scheduler = \"airtime\"\nl4s_category = \"VI\"",
        "signal = -64\nbandwidth = 20\nnss = 1",
    )
    .unwrap();
    // The wire, then laptop down/up and phone down/up.
    assert_eq!(sc.links.len(), 6);
    let names: Vec<&str> = sc.links[2..].iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        ["wifi/laptop/down", "wifi/laptop/up", "wifi/phone/down", "wifi/phone/up"]
    );
    let owner = 2;
    for (i, l) in sc.links[2..].iter().enumerate() {
        let m = l.medium.as_ref().expect("crosses the BSS");
        assert_eq!(m.owner, owner);
        assert_eq!(m.name, "wifi");
        assert_eq!(m.nodes.as_slice(), &[1, 2, 3]);
        let station_port = i / 2 + 1;
        let (from, to) = if i % 2 == 0 {
            (0, station_port)
        } else {
            (station_port, 0)
        };
        assert_eq!((m.from, m.to), (from, to), "link {}", l.name);
        // Only the first carries the model's configuration.
        assert_eq!(m.wifi.is_some(), i == 0);
    }
    let cfg = sc.links[owner].config(sc.duration).wifi.expect("the BSS");
    assert_eq!(cfg.scheduler, Scheduler::AirtimeFair);
    assert_eq!(cfg.l4s_category, Some(AccessCategory::Video));
    assert_eq!(cfg.categories, vec![AccessCategory::BestEffort, AccessCategory::Video]);
    // -64 dBm at 20 MHz meets HE-MCS 7's sensitivity (-64 dBm) and not MCS 8's (-59).
    assert_eq!(cfg.stations[0].mode.mcs(), 7);
    assert_eq!(cfg.stations[0].mode.bandwidth_mhz(), 20);
    assert_eq!(cfg.stations[1].mode.mcs(), 7);
    // The defaults: hostapd's EDCA at the AP (BE CWmax 63, no TXOP limit), the standard's
    // at the stations.
    assert_eq!(cfg.ap_edca[AccessCategory::BestEffort as usize].cw_max, 63);
    assert_eq!(cfg.sta_edca[AccessCategory::BestEffort as usize].cw_max, 1023);
    // The routes cross the BSS.
    assert_eq!(sc.base_rtt(0, 2).as_nanos(), 8_000_000);
}

#[test]
fn edca_presets_and_tables() {
    let sc = load("edca = \"latency-0.25ms\"", "mcs = 5").unwrap();
    let cfg = sc.links[2].medium.as_ref().unwrap().wifi.clone().unwrap();
    let be = cfg.ap_edca[AccessCategory::BestEffort as usize];
    assert_eq!((be.aifsn, be.cw_min, be.cw_max), (1, 63, 63));
    assert_eq!(be.txop_limit.unwrap().as_nanos(), 250_000);
    let sc = load(
        "station_edca = { preset = \"ieee\", be = { cw_min = 31, txop = \"0s\" } }",
        "mcs = 5",
    )
    .unwrap();
    let cfg = sc.links[2].medium.as_ref().unwrap().wifi.clone().unwrap();
    let be = cfg.sta_edca[AccessCategory::BestEffort as usize];
    assert_eq!((be.aifsn, be.cw_min, be.cw_max, be.txop_limit), (3, 31, 1023, None));
}

#[test]
fn bad_wifi_parameters_name_the_key() {
    let cases: [(&str, &str, &str, &str); 12] = [
        ("", "mcs = 12", "topology.wifi[0].stations[0].mcs", "0 to 11 for HE"),
        (
            "",
            "standard = \"ac\"\nbandwidth = 20\nnss = 1\nmcs = 9",
            "topology.wifi[0].stations[0].mcs",
            "VHT-MCS valid",
        ),
        (
            "",
            "bandwidth = 320\nmcs = 3",
            "topology.wifi[0].stations[0].bandwidth",
            "20/40/80/160 MHz for HE",
        ),
        (
            "",
            "signal = -95",
            "topology.wifi[0].stations[0].signal",
            "below MCS 0's sensitivity",
        ),
        (
            "",
            "mcs = 3\nsignal = -60",
            "topology.wifi[0].stations[0].signal",
            "not both",
        ),
        ("", "", "topology.wifi[0].stations[0]", "an `mcs` or a `signal`"),
        (
            "",
            "mcs = 3\nframe_error_rate = 1.0",
            "topology.wifi[0].stations[0].frame_error_rate",
            "[0, 1)",
        ),
        (
            "",
            "mcs = 3\nscan = { period = \"1s\", dwell = \"2s\" }",
            "topology.wifi[0].stations[0].scan.dwell",
            "shorter than its period",
        ),
        (
            "edca = { be = { cw_min = 20 } }",
            "mcs = 3",
            "topology.wifi[0].edca.be.cw_min",
            "2^k - 1",
        ),
        (
            "station_edca = \"latency-1ms\"",
            "mcs = 3",
            "topology.wifi[0].station_edca",
            "2 to 15 for a non-AP STA",
        ),
        (
            "edca = { vi = { txop = \"9ms\" } }",
            "mcs = 3",
            "topology.wifi[0].edca.vi.txop",
            "at most 8.160ms",
        ),
        (
            "edca = \"fast\"",
            "mcs = 3",
            "topology.wifi[0].edca",
            "unknown EDCA preset",
        ),
    ];
    for (bss, laptop, key, expected) in cases {
        let e = err(bss, laptop);
        assert!(e.contains("wifi.toml:"), "{e}");
        assert!(e.contains(key), "{bss} / {laptop}: {e} (wanted {key})");
        assert!(e.contains(expected), "{bss} / {laptop}: {e} (wanted {expected})");
    }
    // A station that is the access point, an unknown node, and a second link between the
    // same nodes.
    let e = load_str(
        &BSS.replace("BSSKEYS", "")
            .replace("LAPTOP", "mcs = 1")
            .replace("node = \"phone\"", "node = \"ap\""),
        Path::new("wifi.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("already in this BSS"), "{e}");
    let e = load_str(
        &BSS.replace("BSSKEYS", "")
            .replace("LAPTOP", "mcs = 1")
            .replace("node = \"phone\"", "node = \"tablet\""),
        Path::new("wifi.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("no node named \"tablet\""), "{e}");
    let e = err("marking = \"early\"", "mcs = 1");
    assert!(
        e.contains("topology.wifi[0].marking") && e.contains("pending-dequeue"),
        "{e}"
    );
    let sc = load("marking = \"pending-dequeue\"", "mcs = 1").unwrap();
    let cfg = sc.links[2].medium.as_ref().unwrap().wifi.clone().unwrap();
    assert_eq!(cfg.marking, l4s_link::wifi::MarkingRule::PendingDequeue);
    let e = err("l4s_category = \"XX\"", "mcs = 1");
    assert!(
        e.contains("l4s_category") && e.contains("unknown access category"),
        "{e}"
    );
}
