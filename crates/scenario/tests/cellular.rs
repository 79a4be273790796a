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
    // Without a reverse rate, the uplink draws the same process for its own index: its
    // rate per millisecond and its trace, as drawing every link again for the run gives.
    let sc = custom("kind = \"cellular\"\ncapacity = { process = \"gaussian\", mean = \"10Mbit\", std_dev = \"3Mbit\", step = \"100ms\", min = \"5Mbit\", max = \"20Mbit\" }").unwrap();
    let mut again = sc.clone();
    again.draw_capacities().unwrap();
    for (a, b) in sc.links.iter().zip(&again.links) {
        assert_eq!(a.rates.as_ref().map(|r| r.len()), Some(3_000), "{}", a.name);
        assert_eq!((a.rate, &a.trace, &a.rates), (b.rate, &b.trace, &b.rates), "{}", a.name);
    }
    assert_ne!(sc.links[0].rates, sc.links[1].rates);
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

const CELL: &str = r#"[scenario]
duration = "3s"
seed = 4
[topology]
type = "custom"
[[topology.nodes]]
name = "gnb"
[[topology.nodes]]
name = "a"
[[topology.nodes]]
name = "b"
[[topology.cell]]
name = "c1"
base_station = "gnb"
CELL
[[topology.cell.ues]]
node = "a"
capacity = { process = "ar1", median = "20Mbit", sigma = 0.3, phi = 0.9, step = "10ms", min = "2Mbit", max = "80Mbit" }
reverse_rate = "5Mbit"
[[topology.cell.ues]]
node = "b"
UE
[[flows]]
name = "f"
type = "udp-prague"
from = "gnb"
to = "b"
"#;

fn cell(cell: &str, ue: &str) -> Result<l4s_scenario::Scenario, String> {
    load_str(&CELL.replace("CELL", cell).replace("UE", ue), Path::new("cells.toml")).map_err(|e| e.to_string())
}

#[test]
fn a_cell_gives_each_ue_a_downlink_and_an_uplink_across_one_shared_model() {
    let sc = cell("scheduler = \"rr\"\nran = { slot = \"1ms\" }", "rate = \"30Mbit\"").unwrap();
    // gnb -> a, a -> gnb, gnb -> b, b -> gnb, all crossing the cell owned by the first.
    assert_eq!(sc.links.len(), 4);
    let cfg = sc.links[0]
        .medium
        .as_ref()
        .and_then(|m| m.cell.clone())
        .expect("a cell");
    assert_eq!(cfg.scheduler, l4s_link::CellScheduler::RoundRobin);
    assert_eq!(cfg.ues.len(), 2);
    for (i, l) in sc.links.iter().enumerate() {
        let m = l.medium.as_ref().expect("crosses the cell");
        assert_eq!(m.owner, 0);
        let ue = i / 2 + 1;
        assert_eq!((m.from, m.to), if i % 2 == 0 { (0, ue) } else { (ue, 0) });
        let dir = if i % 2 == 0 {
            RanDirection::Downlink
        } else {
            RanDirection::Uplink
        };
        assert_eq!(l.ran.as_ref().map(|r| r.1), Some(dir));
    }
    // The UEs' capacities are the ones drawn for the run: UE a's process per millisecond
    // (its uplink the given rate), UE b's rate both ways (the reverse defaults to it).
    let rates = match &cfg.ues[0].down {
        l4s_link::RanCapacity::PerMs(r) => r.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(rates.len(), 3_000);
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    assert!(mean > 5e6 && mean < 60e6, "{mean}");
    assert!(matches!(&cfg.ues[0].up, l4s_link::RanCapacity::Rate { rate, .. } if rate.bits_per_sec() == 5_000_000));
    assert!(matches!(&cfg.ues[1].down, l4s_link::RanCapacity::Rate { rate, .. } if rate.bits_per_sec() == 30_000_000));
    assert!(matches!(&cfg.ues[1].up, l4s_link::RanCapacity::Rate { rate, .. } if rate.bits_per_sec() == 30_000_000));
    // Another seed draws UE a's capacity again, and the cell carries the new draw.
    let mut other = sc.clone();
    other.apply_overrides(Some(5), None).unwrap();
    let cfg2 = other.links[1].medium.as_ref().and_then(|m| m.cell.clone()).unwrap();
    assert_ne!(cfg2.ues[0].down, cfg.ues[0].down);
    // A UE's configured grant: its period, and the whole slot unless a share is given.
    let cg = cell("", "rate = \"30Mbit\"\nconfigured_grant = \"2ms\"").unwrap();
    let cfg = cg.links[0].medium.as_ref().and_then(|m| m.cell.clone()).unwrap();
    assert_eq!(cfg.ues[0].configured_grant, None);
    assert_eq!(
        cfg.ues[1].configured_grant,
        Some(l4s_link::ConfiguredGrant {
            period: l4s_core::Dur::from_millis(2),
            offset: l4s_core::Dur::ZERO,
            share: 1.0
        })
    );
    let cg = cell(
        "ran = { slot = \"1ms\" }",
        "rate = \"30Mbit\"\nconfigured_grant = \"2ms\"\nconfigured_grant_offset = \"1ms\"\nconfigured_grant_share = 0.25",
    )
    .unwrap();
    let cfg = cg.links[0].medium.as_ref().and_then(|m| m.cell.clone()).unwrap();
    assert_eq!(
        cfg.ues[1].configured_grant.map(|g| (g.offset, g.share)),
        Some((l4s_core::Dur::from_millis(1), 0.25))
    );
    // The default scheduler is proportional fair over 100 ms.
    let pf = cell("", "rate = \"30Mbit\"").unwrap();
    let cfg = pf.links[0].medium.as_ref().and_then(|m| m.cell.clone()).unwrap();
    assert_eq!(
        cfg.scheduler,
        l4s_link::CellScheduler::ProportionalFair {
            window: l4s_core::Dur::from_millis(100)
        }
    );
}

#[test]
fn bad_cell_parameters_name_their_key() {
    for (c, ue, key, what) in [
        (
            "scheduler = \"fifo\"",
            "rate = \"30Mbit\"",
            "topology.cell[0].scheduler",
            "\"rr\"",
        ),
        (
            "scheduler = \"rr\"\npf_window = \"50ms\"",
            "rate = \"30Mbit\"",
            "topology.cell[0].pf_window",
            "proportional",
        ),
        (
            "pf_window = \"0.1ms\"\nran = { slot = \"1ms\" }",
            "rate = \"30Mbit\"",
            "topology.cell[0].pf_window",
            "one slot",
        ),
        (
            "ran = { share = 0.5 }",
            "rate = \"30Mbit\"",
            "topology.cell[0].ran.share",
            "one UE",
        ),
        (
            "ran = { configured_grant = \"5ms\" }",
            "rate = \"30Mbit\"",
            "topology.cell[0].ran.configured_grant",
            "[[topology.cell.ues]]",
        ),
        (
            "ran = { slot = \"1ms\" }",
            "rate = \"30Mbit\"\nconfigured_grant = \"2.5ms\"",
            "topology.cell[0].ues[1].configured_grant",
            "whole number of 1ms slots",
        ),
        (
            "",
            "rate = \"30Mbit\"\nconfigured_grant = \"5ms\"\nconfigured_grant_share = 0",
            "topology.cell[0].ues[1].configured_grant_share",
            "(0, 1]",
        ),
        (
            "",
            "rate = \"30Mbit\"\nconfigured_grant_share = 0.5",
            "topology.cell[0].ues[1].configured_grant_share",
            "set `configured_grant`",
        ),
        (
            "",
            "rate = \"30Mbit\"\nconfigured_grant_offset = \"1ms\"",
            "topology.cell[0].ues[1].configured_grant_offset",
            "set `configured_grant`",
        ),
        (
            "ran = { slot = \"1ms\", tdd = \"DDDSU\" }",
            "rate = \"30Mbit\"\nconfigured_grant = \"5ms\"\nconfigured_grant_offset = \"2ms\"",
            "topology.cell[0].ues[1].configured_grant_offset",
            "without uplink",
        ),
        (
            "",
            "rate = \"30Mbit\"\nconfigured_grant = \"5ms\"\nconfigured_grant_offset = \"5ms\"",
            "topology.cell[0].ues[1].configured_grant_offset",
            "below the period",
        ),
        (
            "",
            "rate = \"30Mbit\"\nconfigured_grant = \"5ms\"\nconfigured_grant_share = 0.5\n[[topology.cell.ues]]\nnode = \"c\"\nrate = \"1Mbit\"\nconfigured_grant = \"5ms\"\nconfigured_grant_share = 0.6\n[[topology.nodes]]\nname = \"c\"",
            "topology.cell[0].ues",
            "adding up to 1.1; expected at most 1",
        ),
        (
            "ran = { slot = \"3ms\" }",
            "rate = \"30Mbit\"",
            "topology.cell[0].ran.slot",
            "0.5ms",
        ),
        ("", "", "topology.cell[0].ues[1]", "needs a capacity"),
        (
            "",
            "rate = \"30Mbit\"\n[[topology.cell.ues]]\nnode = \"a\"\nrate = \"1Mbit\"",
            "topology.cell[0].ues[2].node",
            "already in the cell",
        ),
        (
            "",
            "rate = \"30Mbit\"\n[[topology.cell.ues]]\nnode = \"nobody\"\nrate = \"1Mbit\"",
            "topology.cell[0].ues[2].node",
            "no node named",
        ),
        (
            "",
            "rate = \"30Mbit\"\n[[topology.cell.ues]]\nnode = \"gnb\"\nrate = \"1Mbit\"",
            "topology.cell[0].ues[2].node",
            "base station",
        ),
    ] {
        let e = cell(c, ue).expect_err(c);
        assert!(
            e.contains(key) && e.contains(what) && e.contains("cells.toml"),
            "{c} / {ue}: {e}"
        );
    }
}

#[test]
fn variants_set_a_cells_keys_and_its_ues_by_node() {
    let text = CELL.replace("CELL", "").replace("UE", "rate = \"30Mbit\"")
        + "[[variants]]\nname = \"rr\"\nset = { \"topology.cell.c1.scheduler\" = \"rr\", \"topology.cell.c1.ues.b.rate\" = \"7Mbit\" }\n";
    let v = l4s_scenario::variants_of(&text, Path::new("cells.toml")).unwrap();
    let sc = &v[0].1;
    let cfg = sc.links[0].medium.as_ref().and_then(|m| m.cell.clone()).unwrap();
    assert_eq!(cfg.scheduler, l4s_link::CellScheduler::RoundRobin);
    assert!(matches!(&cfg.ues[1].down, l4s_link::RanCapacity::Rate { rate, .. } if rate.bits_per_sec() == 7_000_000));
    for (set, want) in [
        (
            "\"topology.cell.nope.aqm\" = { kind = \"fifo\" }",
            "no cell named \"nope\"; the scenario's cells: \"c1\"",
        ),
        (
            "\"topology.cell.c1.ues.x.rate\" = \"1Mbit\"",
            "has no UE on node \"x\"; its UEs are on \"a\", \"b\"",
        ),
    ] {
        let bad = CELL.replace("CELL", "").replace("UE", "rate = \"30Mbit\"")
            + &format!("[[variants]]\nname = \"v\"\nset = {{ {set} }}\n");
        let e = l4s_scenario::variants_of(&bad, Path::new("cells.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{e}");
    }
}
