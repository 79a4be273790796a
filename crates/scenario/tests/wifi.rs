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
    assert_eq!(cfg.stations[0].links[0].mode.mcs(), 7);
    assert_eq!(cfg.stations[0].links[0].mode.bandwidth_mhz(), 20);
    assert_eq!(cfg.stations[1].links[0].mode.mcs(), 7);
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
    let cases: [(&str, &str, &str, &str); 13] = [
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
            "signal = nan",
            "topology.wifi[0].stations[0].signal",
            "expected a received signal level in dBm, such as -55, found NaN",
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
            "at most 8.16ms",
        ),
        (
            "edca = \"fast\"",
            "mcs = 3",
            "topology.wifi[0].edca",
            "unknown EDCA preset",
        ),
    ];
    let two = "channels = [{ name = \"5g\", band = \"5\" }, { name = \"6g\", band = \"6\" }]";
    let three = "channels = [{ name = \"5g\", band = \"5\" }, { name = \"6g\", band = \"6\" }, { name = \"2g\", band = \"2.4\" }]";
    let mlo = "standard = \"be\"\nmcs = 3\nlinks = [{ channel = \"5g\" }, { channel = \"6g\" }]";
    let cases_mlo = [
        (
            "channels = [{ name = \"5g\", band = \"7\" }]",
            "mcs = 3".to_string(),
            "topology.wifi[0].channels[0].band",
            "unknown band",
        ),
        (
            "channels = [{ name = \"5g\", band = \"5\" }, { name = \"5g\", band = \"6\" }]",
            "mcs = 3".into(),
            "topology.wifi[0].channels[1].name",
            "used by one channel only",
        ),
        (
            two,
            "standard = \"ac\"\nmcs = 3\nchannel = \"6g\"".into(),
            "topology.wifi[0].stations[0].channel",
            "6 GHz band, which a \"ac\" (802.11ac) station lacks",
        ),
        (
            "channels = [{ name = \"2g\", band = \"2.4\" }]",
            "standard = \"ac\"\nbandwidth = 20\nmcs = 3".into(),
            "topology.wifi[0].stations[0].channel",
            "2.4 GHz band",
        ),
        (
            "channels = [{ name = \"6g\", band = \"6\" }, { name = \"5g\", band = \"5\" }]",
            "mcs = 3\nchannel = \"6g\"\nbandwidth = 40\nstandard = \"ac\"".into(),
            "topology.wifi[0].stations[0].channel",
            "which a \"ac\"",
        ),
        (
            two,
            "mcs = 3\nchannel = \"7g\"".into(),
            "topology.wifi[0].stations[0].channel",
            "no channel \"7g\"",
        ),
        (
            two,
            "standard = \"be\"\nbandwidth = 320\nmcs = 3\nchannel = \"5g\"".into(),
            "topology.wifi[0].stations[0].bandwidth",
            "at most 160 MHz for \"be\" (802.11be) in the 5 GHz band of channel \"5g\" (320 MHz is 6 GHz only)",
        ),
        (
            three,
            "standard = \"ax\"\nbandwidth = 80\nmcs = 3\nchannel = \"2g\"".into(),
            "topology.wifi[0].stations[0].bandwidth",
            "at most 40 MHz",
        ),
        (
            two,
            "mcs = 3\nlinks = [{ channel = \"5g\" }, { channel = \"6g\" }]".into(),
            "topology.wifi[0].stations[0].links",
            "multi-link operation is 802.11be's",
        ),
        (
            two,
            "standard = \"be\"\nmcs = 3\nlinks = [{ channel = \"5g\" }, { channel = \"5g\" }]".into(),
            "topology.wifi[0].stations[0].links[1].channel",
            "one link per channel",
        ),
        (
            two,
            "standard = \"be\"\nmcs = 3\nlinks = [{ channel = \"5g\" }, { channel = \"6g\", bandwidth = 320, mcs = 14 }]".into(),
            "topology.wifi[0].stations[0].links[1].mcs",
            "0 to 13",
        ),
        (
            two,
            "standard = \"be\"\nbandwidth = 320\nmcs = 3\nlinks = [{ channel = \"5g\" }, { channel = \"6g\" }]".into(),
            "topology.wifi[0].stations[0].bandwidth",
            "at most",
        ),
        (
            two,
            format!("{mlo}\ntid_to_link = {{ XX = [\"6g\"] }}"),
            "topology.wifi[0].stations[0].tid_to_link.XX",
            "unknown access category",
        ),
        (
            three,
            format!("{mlo}\ntid_to_link = {{ BE = [\"2g\"] }}"),
            "topology.wifi[0].stations[0].tid_to_link.BE",
            "no link on channel \"2g\"",
        ),
        (
            two,
            "mcs = 3\ntid_to_link = { BE = [\"5g\"] }".into(),
            "topology.wifi[0].stations[0].tid_to_link",
            "needs a multi-link station",
        ),
        (
            two,
            "standard = \"be\"\nmcs = 3\nchannel = \"5g\"\nlinks = [{ channel = \"6g\" }]".into(),
            "topology.wifi[0].stations[0].channel",
            "not both",
        ),
    ];
    for (bss, laptop, key, expected) in &cases_mlo {
        let e = err(bss, laptop);
        assert!(e.contains("wifi.toml:"), "{e}");
        assert!(e.contains(key), "{bss} / {laptop}: {e} (wanted {key})");
        assert!(e.contains(expected), "{bss} / {laptop}: {e} (wanted {expected})");
    }
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
        e.contains("topology.wifi[0].marking") && e.contains("pending-dequeue") && e.contains("\"enqueue\""),
        "{e}"
    );
    let sc = load("marking = \"pending-dequeue\"", "mcs = 1").unwrap();
    let cfg = sc.links[2].medium.as_ref().unwrap().wifi.clone().unwrap();
    assert_eq!(cfg.marking, l4s_link::wifi::MarkingRule::PendingDequeue);
    let sc = load("marking = \"enqueue\"", "mcs = 1").unwrap();
    let cfg = sc.links[2].medium.as_ref().unwrap().wifi.clone().unwrap();
    assert_eq!(cfg.marking, l4s_link::wifi::MarkingRule::Enqueue);
    let e = err("l4s_category = \"XX\"", "mcs = 1");
    assert!(
        e.contains("l4s_category") && e.contains("unknown access category"),
        "{e}"
    );
}

#[test]
fn an_mld_station_has_a_link_per_channel_and_a_mapping() {
    let sc = load(
        "channels = [{ name = \"5g\", band = \"5\" }, { name = \"6g\", band = \"6\" }]",
        "standard = \"be\"\nnss = 2\nsignal = -65\nframe_error_rate = 0.05\nlinks = [{ channel = \"5g\" }, { channel = \"6g\", bandwidth = 320, mcs = 9 }]\ntid_to_link = { VI = [\"6g\"] }",
    )
    .unwrap();
    let cfg = sc
        .links
        .iter()
        .find_map(|l| l.medium.as_ref().and_then(|m| m.wifi.clone()))
        .expect("the BSS");
    assert_eq!(cfg.channels.len(), 2);
    assert_eq!(cfg.channels[1].name, "6g");
    let laptop = &cfg.stations[0];
    assert_eq!(laptop.links.len(), 2);
    // -65 dBm at 80 MHz: EHT-MCS 3; the 6 GHz link's own width and MCS.
    assert_eq!((laptop.links[0].channel, laptop.links[0].mode.mcs()), (0, 3));
    assert_eq!(laptop.links[1].mode.bandwidth_mhz(), 320);
    assert_eq!(laptop.links[1].mode.mcs(), 9);
    assert_eq!(laptop.links[1].frame_error_rate, 0.05);
    let map = laptop.tid_to_link.expect("a mapping");
    assert_eq!(map[AccessCategory::Video as usize], 0b10);
    assert_eq!(map[AccessCategory::BestEffort as usize], 0b11);
    // The phone, single-link, is on the first channel.
    assert_eq!(cfg.stations[1].links.len(), 1);
    assert_eq!(cfg.stations[1].links[0].channel, 0);
}
