//! `[[variants]]`: one file, several validated scenarios.

use l4s_scenario::variants_of;
use std::path::Path;

const BASE: &str = r#"[scenario]
name = "x"
duration = "5s"

[topology]
type = "dumbbell"
rate = "20Mbit"
rtt = "20ms"
aqm = { kind = "dualpi2", target = "10ms" }

[[flows]]
name = "xr"
type = "media"
profile = "xr-h265"

[[flows]]
name = "bulk"
type = "tcp"
cc = "prague"
"#;

#[test]
fn variants_apply_their_settings() {
    let text = format!(
        "{BASE}\n[[variants]]\nname = \"l4s\"\n\n[[variants]]\nname = \"classic\"\nset = {{ \"topology.aqm\" = {{ kind = \"fifo\", limit = 500 }}, \"flows.xr.ecn\" = \"not-ect\", \"flows.bulk.cc\" = \"cubic\", \"flows.xr.media.max_bitrate\" = \"10Mbit\" }}\n"
    );
    let v = variants_of(&text, Path::new("v.toml")).unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].0.as_deref(), Some("l4s"));
    assert_eq!(v[0].1.links[0].aqm.kind(), "dualpi2");
    assert_eq!(v[0].1.flows[0].nominal_ecn, l4s_core::Ecn::Ect1);
    assert_eq!(v[1].0.as_deref(), Some("classic"));
    assert_eq!(v[1].1.links[0].aqm.kind(), "fifo");
    assert_eq!(v[1].1.flows[0].nominal_ecn, l4s_core::Ecn::NotEct);
    assert_eq!(v[1].1.flows[1].kind.type_name(), "tcp");
    match &v[1].1.flows[0].kind {
        l4s_scenario::FlowKind::Media { params } => assert_eq!(params.max_bitrate.bits_per_sec(), 10_000_000),
        other => panic!("{other:?}"),
    }
    match &v[1].1.flows[1].kind {
        l4s_scenario::FlowKind::Tcp { cc, .. } => assert_eq!(cc, "cubic"),
        other => panic!("{other:?}"),
    }
    // A file without variants is one unnamed run.
    let one = variants_of(BASE, Path::new("v.toml")).unwrap();
    assert_eq!(one.len(), 1);
    assert!(one[0].0.is_none());
}

#[test]
fn bad_variants_name_the_key() {
    for (vars, key, words) in [
        ("[[variants]]\nset = {}\n", "variants[0].name", "required key `name`"),
        (
            "[[variants]]\nname = \"a/b\"\n",
            "variants[0].name",
            "results directory",
        ),
        (
            "[[variants]]\nname = \"a\"\n[[variants]]\nname = \"a\"\n",
            "variants[1].name",
            "used twice",
        ),
        (
            "[[variants]]\nname = \"a\"\nset = { \"flows.nope.ecn\" = \"ect1\" }\n",
            "variants[0].set.\"flows.nope.ecn\"",
            "no flow named \"nope\"",
        ),
        (
            "[[variants]]\nname = \"a\"\nset = { \"topology.rate.x\" = 1 }\n",
            "variants[0].set.\"topology.rate.x\"",
            "not a table",
        ),
        (
            "[[variants]]\nname = \"a\"\nrate = 1\n",
            "variants[0].rate",
            "unknown key",
        ),
        (
            "[[variants]]\nname = \"bad\"\nset = { \"flows.xr.ecn\" = \"purple\" }\n",
            "flows[0].ecn",
            "in variant \"bad\": unknown ECN setting",
        ),
    ] {
        let text = format!("{BASE}\n{vars}");
        let e = variants_of(&text, Path::new("v.toml")).unwrap_err().to_string();
        assert!(e.contains(key), "{vars}: {e}");
        assert!(e.contains(words), "{vars}: {e}");
    }
}

/// Names become directories: a scenario name stays one directory inside results/, and no
/// variant may take the comparison page's name.
#[test]
fn names_that_would_leave_their_directory_are_refused() {
    for bad in ["../../x", "/abs/path", "a/b", "a\\\\b", ".hidden", "..", "tab\\there"] {
        let text = BASE.replace("name = \"x\"", &format!("name = \"{bad}\""));
        let e = variants_of(&text, Path::new("v.toml")).unwrap_err().to_string();
        assert!(e.starts_with("v.toml:2: scenario.name: "), "{bad}: {e}");
        assert!(e.contains("results/<name>"), "{bad}: {e}");
    }
    let ok = BASE.replace("name = \"x\"", "name = \"cable home 2 (10 ms)\"");
    assert_eq!(
        variants_of(&ok, Path::new("v.toml")).unwrap()[0].1.name,
        "cable home 2 (10 ms)"
    );
    // The names of what the set's folder holds beside the variants'.
    for (name, what) in [
        ("compare.html", "the comparison page"),
        ("compare-png", "the folder of the comparison page's charts"),
        ("variants.json", "the set's manifest"),
    ] {
        let text = format!("{BASE}\n[[variants]]\nname = \"{name}\"\n");
        let e = variants_of(&text, Path::new("v.toml")).unwrap_err().to_string();
        assert!(
            e.contains("variants[0].name") && e.contains(&format!("{name:?} is {what} beside")),
            "{e}"
        );
    }
}

#[test]
fn a_flow_set_to_a_table_becomes_that_traffic_and_keeps_its_name() {
    let text = format!(
        "{BASE}\n[[variants]]\nname = \"a\"\n\n[[variants]]\nname = \"b\"\nset = {{ \"flows.bulk\" = {{ type = \"request-response\", cc = \"cubic\", app = {{ response = \"20kB\", repeat = \"1s\" }} }} }}\n"
    );
    let v = variants_of(&text, Path::new("v.toml")).unwrap();
    assert_eq!(v[0].1.flows[1].kind.type_name(), "tcp");
    assert_eq!(v[1].1.flows[1].name, "bulk");
    assert_eq!(v[1].1.flows[1].kind.type_name(), "request-response");
    // The old keys are gone: `cc = "prague"` did not survive into the new flow.
    let bad = format!(
        "{BASE}\n[[variants]]\nname = \"b\"\nset = {{ \"flows.bulk\" = {{ name = \"x\", type = \"tcp\" }} }}\n"
    );
    let e = variants_of(&bad, Path::new("v.toml")).unwrap_err();
    assert!(e.message.contains("keeps its name"), "{e}");
    let bad = format!("{BASE}\n[[variants]]\nname = \"b\"\nset = {{ \"flows.bulk\" = 3 }}\n");
    let e = variants_of(&bad, Path::new("v.toml")).unwrap_err();
    assert!(e.message.contains("give a table of the flow's keys"), "{e}");
}

#[test]
fn count_makes_numbered_copies_and_errors_still_point_at_the_table() {
    let text = BASE.replace(
        "name = \"bulk\"\ntype = \"tcp\"",
        "name = \"bulk\"\ncount = 3\ntype = \"tcp\"",
    );
    let v = variants_of(&text, Path::new("v.toml")).unwrap();
    let names: Vec<&str> = v[0].1.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["xr", "bulk-1", "bulk-2", "bulk-3"]);
    let seeds: std::collections::BTreeSet<u64> = (0..4).map(|i| v[0].1.flow_seed(i)).collect();
    assert_eq!(seeds.len(), 4, "each copy has its own seed");
    // A variant key sets every copy.
    let with = format!(
        "{text}\n[[variants]]\nname = \"c\"\nset = {{ \"flows.bulk.cc\" = \"cubic\", \"flows.bulk.count\" = 2 }}\n"
    );
    let v = variants_of(&with, Path::new("v.toml")).unwrap();
    assert_eq!(v[0].1.flows.len(), 3);
    for f in &v[0].1.flows[1..] {
        match &f.kind {
            l4s_scenario::FlowKind::Tcp { cc, .. } => assert_eq!(cc, "cubic"),
            other => panic!("{other:?}"),
        }
    }
    // An error in a copied flow names the table as written, at its line.
    let bad = text.replace("cc = \"prague\"", "cc = \"bogus\"");
    let e = variants_of(&bad, Path::new("v.toml")).unwrap_err();
    assert_eq!(e.key, "flows[1].cc");
    assert_eq!(e.line, Some(20), "{e}");
    for n in ["0", "10001"] {
        let e = variants_of(&text.replace("count = 3", &format!("count = {n}")), Path::new("v.toml")).unwrap_err();
        assert_eq!(e.key, "flows[1].count");
        assert!(e.message.contains("1 to 10000"), "{e}");
    }
    // A copy's name that another flow already has is refused.
    let clash = format!("{text}\n[[flows]]\nname = \"bulk-2\"\ntype = \"tcp\"\ncc = \"cubic\"\n");
    let e = variants_of(&clash, Path::new("v.toml")).unwrap_err();
    assert!(e.message.contains("already used by flows[1]"), "{e}");
}

#[test]
fn a_variant_sets_a_key_of_a_custom_link_by_its_name() {
    let text = r#"[scenario]
duration = "5s"
[topology]
type = "custom"
[[topology.nodes]]
name = "a"
[[topology.nodes]]
name = "b"
[[topology.nodes]]
name = "c"
[[topology.links]]
name = "cell"
from = "a"
to = "b"
rate = "10Mbit"
aqm = { kind = "dualpi2" }
[[topology.links]]
from = "b"
to = "c"
rate = "50Mbit"
[[flows]]
name = "f"
type = "udp-prague"
from = "a"
to = "c"
[[variants]]
name = "fifo"
set = { "topology.links.cell.aqm" = { kind = "fifo", limit = 300 }, "topology.links.b->c.rate" = "20Mbit" }
"#;
    let v = variants_of(text, Path::new("v.toml")).unwrap();
    let sc = &v[0].1;
    assert_eq!(sc.links[0].aqm.kind(), "fifo");
    assert_eq!(sc.links[2].rate.unwrap().bits_per_sec(), 20_000_000);
    for (set, words) in [
        (
            "\"topology.links.wifi.aqm\" = \"x\"",
            "no link named \"wifi\"; the scenario's links: \"cell\", \"b->c\"",
        ),
        (
            "\"topology.links.1.rate\" = \"1Mbit\"",
            "no link named \"1\" (entries are named, not numbered); the scenario's links: \"cell\", \"b->c\"",
        ),
        (
            "\"flows.0.ecn\" = \"ect1\"",
            "no flow named \"0\" (entries are named, not numbered); the scenario's flows: \"f\"",
        ),
        ("\"topology.links.cell\" = {}", "name a link and a key"),
    ] {
        let t = text.replace(
            "set = { \"topology.links.cell.aqm\" = { kind = \"fifo\", limit = 300 }, \"topology.links.b->c.rate\" = \"20Mbit\" }",
            &format!("set = {{ {set} }}"),
        );
        let e = variants_of(&t, Path::new("v.toml")).unwrap_err().to_string();
        assert!(e.contains(words), "{e}");
    }
}

/// An error in a key that `--set` brought says so, also where the set path picks a flow by
/// its name and the loader names it by its index (`flows.bulk.cc` is `flows[1].cc`).
#[test]
fn an_error_in_a_key_brought_by_set_names_the_set() {
    let text = format!("{BASE}\n[[flows]]\nname = \"other\"\ntype = \"tcp\"\ncc = \"cubic\"\n");
    let err = |k: &str, v: &str| {
        l4s_scenario::variants_with(
            &text,
            Path::new("v.toml"),
            &[(k.to_string(), v.to_string())],
            l4s_scenario::Caller::Cli,
        )
        .unwrap_err()
        .to_string()
    };
    for (k, v, key) in [
        ("flows.bulk.cc", "bbr", "flows[1].cc"),
        ("topology.rate", "0bit", "topology.rate"),
        ("flows.bulk", "{ type = \"probe\", pps = 0 }", "flows[1].pps"),
    ] {
        let e = err(k, v);
        assert!(
            e.contains(key) && e.ends_with(&format!("(set by --set {k})")),
            "{k}: {e}"
        );
    }
    // A key the file holds and no --set touched is not blamed on one.
    let bad = text.replace("cc = \"cubic\"", "cc = \"bbr\"");
    let e = l4s_scenario::variants_with(
        &bad,
        Path::new("v.toml"),
        &[("flows.bulk.cc".into(), "reno".into())],
        l4s_scenario::Caller::Cli,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("flows[2].cc") && !e.contains("set by"), "{e}");
    // A key no set touched, wrong only against one a set changed: the set is named.
    let warm = text.replace("duration = \"5s\"", "duration = \"5s\"\nwarmup = \"2s\"");
    let e = l4s_scenario::variants_with(
        &warm,
        Path::new("v.toml"),
        &[("scenario.duration".into(), "\"1s\"".into())],
        l4s_scenario::Caller::Python,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("scenario.warmup: the warm-up (2s) must be shorter than the duration (1s)")
            && e.ends_with("(after set['scenario.duration'])"),
        "{e}"
    );
    // A flow by number, or a table's key set to a number: said in the file's terms.
    for (k, v, says) in [
        ("flows[0].cc", "\"reno\"", "--set flows[0].cc: expected a dotted key path, such as \"topology.rate\" or \"flows.<name>.cc\" (a flow by its name, not a number)"),
        ("topology", "5", "topology: invalid type: integer `5`, expected a table (a [section], or { key = value, ... })"),
    ] {
        let e = l4s_scenario::variants_with(&text, Path::new("v.toml"), &[(k.into(), v.into())], l4s_scenario::Caller::Cli)
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{e}");
    }
    // The variants are not a key to set: refused, not ignored.
    for k in ["variants", "variants.0.name"] {
        let e = l4s_scenario::variants_with(
            &text,
            Path::new("v.toml"),
            &[(k.into(), "[]".into())],
            l4s_scenario::Caller::Cli,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(&format!(
                "--set {k}: the variants are the file's [[variants]] tables: choose among them with --variant"
            )),
            "{e}"
        );
    }
}

/// The variants of one file hold one copy of a capacity draw they share (the same process
/// on the same link, seed and duration), and that copy is what each would draw alone.
#[test]
fn variants_hold_one_copy_of_a_capacity_draw_they_share() {
    use std::sync::Arc;
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/cellular-xr.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    let v = variants_of(&text, &file).unwrap();
    let by = |n: &str| &v.iter().find(|x| x.0.as_deref() == Some(n)).unwrap().1;
    let (l4s, droptail, walk) = (by("l4s"), by("droptail"), by("l4s-walk"));
    let drawn: Vec<usize> = (0..l4s.links.len())
        .filter(|&i| l4s.links[i].capacity.is_some())
        .collect();
    assert!(!drawn.is_empty());
    for &i in &drawn {
        let (a, b, w) = (&l4s.links[i], &droptail.links[i], &walk.links[i]);
        assert!(
            Arc::ptr_eq(a.trace.as_ref().unwrap(), b.trace.as_ref().unwrap()),
            "link {i}"
        );
        if a.ran.is_some() {
            assert!(
                Arc::ptr_eq(a.rates.as_ref().unwrap(), b.rates.as_ref().unwrap()),
                "link {i}"
            );
        }
        // Another process is another draw.
        assert!(
            !Arc::ptr_eq(a.trace.as_ref().unwrap(), w.trace.as_ref().unwrap()),
            "link {i}"
        );
    }
    // Loaded alone, a variant draws the same.
    let texts = l4s_scenario::variant_texts(text.parse().unwrap(), &file).unwrap();
    let alone = texts.iter().find(|t| t.0.as_deref() == Some("droptail")).unwrap();
    let alone = l4s_scenario::load_str(&alone.1, &file).unwrap();
    for &i in &drawn {
        assert_eq!(alone.links[i].trace, droptail.links[i].trace, "link {i}");
        assert_eq!(alone.links[i].rates, droptail.links[i].rates, "link {i}");
    }
    // A random process with another seed is another draw.
    let other = variants_of(&text.replace("seed = 1", "seed = 2"), &file).unwrap();
    let other_walk = &other.iter().find(|x| x.0.as_deref() == Some("l4s-walk")).unwrap().1;
    assert!(other_walk.links[drawn[0]].trace != walk.links[drawn[0]].trace);
}
