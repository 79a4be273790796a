//! Cellular links: `kind = "cellular"` or a `ran` table makes a link's forward direction a
//! downlink and its reverse an uplink, and bad radio parameters are refused with the key
//! that names them.

use l4s_link::RanDirection;
use l4s_scenario::load_str;
use std::path::Path;

const DUMBBELL: &str = "[scenario]\nduration = \"3s\"\n[topology]\ntype = \"dumbbell\"\nrtt = \"20ms\"\nrate = \"20Mbit\"\nTOPO\n[[flows]]\nname = \"f\"\ntype = \"udp-prague\"\n";

const CUSTOM: &str = r#"[scenario]
duration = "3s"
[topology]
type = "custom"
[[topology.nodes]]
name = "gnb"
[[topology.nodes]]
name = "phone"
[[topology.links]]
from = "gnb"
to = "phone"
LINK
[[flows]]
name = "f"
type = "udp-prague"
from = "gnb"
to = "phone"
"#;

fn dumbbell(topo: &str) -> Result<l4s_scenario::Scenario, String> {
    load_str(&DUMBBELL.replace("TOPO", topo), Path::new("cell.toml")).map_err(|e| e.to_string())
}

fn custom(link: &str) -> Result<l4s_scenario::Scenario, String> {
    load_str(&CUSTOM.replace("LINK", link), Path::new("cell.toml")).map_err(|e| e.to_string())
}

#[test]
fn a_ran_table_makes_the_bottleneck_a_downlink_and_its_reverse_an_uplink() {
    let sc =
        dumbbell("ran = { tdd = \"DDDSU\", sr_period = \"2.5ms\", harq = { bler = 0.1, rtt = \"5ms\" } }").unwrap();
    let (down, dir) = sc.links[0].ran.clone().expect("cellular");
    assert_eq!(dir, RanDirection::Downlink);
    assert_eq!(down.tdd.len(), 5);
    assert_eq!(down.uplink.sr_period.as_nanos(), 2_500_000);
    assert_eq!(down.harq.unwrap().bler, 0.1);
    assert_eq!(sc.links[1].ran.as_ref().unwrap().1, RanDirection::Uplink);
    let cfg = sc.links[0].config(sc.duration);
    assert!(cfg.ran.is_some() && cfg.harq.is_none());
    assert!(down.drx.is_none());
    assert_eq!(down.uplink.sr_grant, None);
    let sc = dumbbell("ran = { sr_grant = \"100B\" }").unwrap();
    assert_eq!(sc.links[1].ran.as_ref().unwrap().0.uplink.sr_grant, Some(100));
    // DRX, with the offset 0 when not given.
    let sc = dumbbell("ran = { drx = { cycle = \"40ms\", on_duration = \"8ms\", inactivity = \"10ms\" } }").unwrap();
    let drx = sc.links[0].ran.as_ref().unwrap().0.drx.expect("drx");
    assert_eq!(drx.short, None);
    assert_eq!(
        (drx.cycle, drx.on_duration, drx.inactivity, drx.offset),
        (
            l4s_core::Dur::from_millis(40),
            l4s_core::Dur::from_millis(8),
            l4s_core::Dur::from_millis(10),
            l4s_core::Dur::ZERO
        )
    );
    // Without it, a wire.
    assert!(dumbbell("").unwrap().links[0].ran.is_none());
}

#[test]
fn a_custom_link_of_kind_cellular_takes_the_defaults_and_a_process_per_millisecond() {
    let sc = custom(
        "kind = \"cellular\"\ncapacity = { process = \"constant\", rate = \"8Mbit\" }\nreverse_rate = \"2Mbit\"",
    )
    .unwrap();
    assert_eq!(sc.links[0].ran.as_ref().unwrap().0, l4s_link::RanConfig::default());
    let rates = sc.links[0].rates.as_ref().expect("drawn per millisecond");
    assert_eq!(rates.len(), 3_000);
    assert!(rates.iter().all(|r| *r == 8e6));
    assert!(sc.links[0].bottleneck && sc.links[1].bottleneck);
    assert_eq!(sc.links[1].rate.unwrap().bits_per_sec(), 2_000_000);
    assert!(sc.links[1].rates.is_none());
    assert_eq!(sc.links[1].ran.as_ref().unwrap().1, RanDirection::Uplink);
}

#[test]
fn bad_radio_parameters_name_their_key() {
    let cases: &[(&str, &str)] = &[
        (
            "ran = { harq = { bler = 1.2, rtt = \"8ms\" } }",
            "topology.ran.harq.bler",
        ),
        ("ran = { sr_period = \"0.7ms\" }", "topology.ran.sr_period"),
        ("ran = { slot = \"0.3ms\" }", "topology.ran.slot"),
        ("ran = { tdd = \"DDXU\" }", "topology.ran.tdd"),
        ("ran = { tdd = \"DDDD\" }", "topology.ran.tdd"),
        ("ran = { k2 = 40 }", "topology.ran.k2"),
        ("ran = { sr_grant = \"0B\" }", "topology.ran.sr_grant"),
        ("ran = { sr_grant = \"lots\" }", "topology.ran.sr_grant"),
        ("ran = { share = 0 }", "topology.ran.share"),
        (
            "ran = { configured_grant = \"0.3ms\" }",
            "topology.ran.configured_grant",
        ),
        ("ran = { bler = 0.1 }", "bler"),
        (
            "ran = { drx = { cycle = \"30ms\", on_duration = \"8ms\", inactivity = \"10ms\" } }",
            "topology.ran.drx.cycle",
        ),
        (
            "ran = { drx = { cycle = \"40ms\", on_duration = \"8ms\", inactivity = \"10ms\", offset = \"40ms\" } }",
            "topology.ran.drx.offset",
        ),
        ("ran = { drx = { cycle = \"40ms\" } }", "on_duration"),
        (
            "ran = { drx = { cycle = \"40ms\", on_duration = \"8ms\", inactivity = \"10ms\", short_cycle = \"10ms\" } }",
            "topology.ran.drx.short_cycle_timer",
        ),
        (
            "ran = { drx = { cycle = \"40ms\", on_duration = \"8ms\", inactivity = \"10ms\", short_cycle = \"16ms\", short_cycle_timer = 2 } }",
            "topology.ran.drx.short_cycle",
        ),
        ("ran = {}\nharq = { bler = 0.1, rtt = \"8ms\" }", "topology.harq"),
    ];
    for (topo, key) in cases {
        let e = dumbbell(topo).expect_err(topo);
        assert!(e.contains(key), "{topo}: {e}");
        assert!(e.contains("cell.toml"), "{e}");
    }
    let e = custom("kind = \"radio\"\nrate = \"10Mbit\"").unwrap_err();
    assert!(
        e.contains("topology.links[0].kind") && e.contains("\"cellular\""),
        "{e}"
    );
    let e = custom("kind = \"wire\"\nrate = \"10Mbit\"\nran = {}").unwrap_err();
    assert!(e.contains("topology.links[0].ran"), "{e}");
    let e = custom("kind = \"cellular\"").unwrap_err();
    assert!(e.contains("needs a capacity"), "{e}");
    let e = custom("kind = \"cellular\"\nrate = \"10Mbit\"\nharq = { bler = 0.1, rtt = \"8ms\" }").unwrap_err();
    assert!(e.contains("topology.links[0].harq") && e.contains("ran"), "{e}");
}
