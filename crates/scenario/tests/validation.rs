//! Impossible endpoint and topology settings are refused with the key that is wrong.

use std::path::Path;

fn err(extra_flow: &str, kind: &str) -> String {
    let text = format!(
        "[scenario]\nduration = \"3s\"\n[topology]\ntype = \"dumbbell\"\nrate = \"10Mbit\"\nrtt = \"20ms\"\n[[flows]]\nname = \"f\"\ntype = \"{kind}\"\n{}{extra_flow}\n",
        if kind == "tcp" { "cc = \"prague\"\n" } else { "" }
    );
    match l4s_scenario::load_str(&text, Path::new("v.toml")) {
        Ok(_) => panic!("accepted: {extra_flow}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn tcp_endpoint_settings() {
    for (knob, key) in [
        ("sender = { mss = 0 }", "flows[0].sender.mss"),
        ("sender = { max_rto = \"0s\" }", "flows[0].sender.max_rto"),
        (
            "sender = { min_rto = \"2s\", max_rto = \"1s\" }",
            "flows[0].sender.min_rto",
        ),
        (
            "sender = { pacing_burst_pkts = 0 }",
            "flows[0].sender.pacing_burst_pkts",
        ),
        ("receiver = { ack_every = 0 }", "flows[0].receiver.ack_every"),
        ("receiver = { rwnd = 10 }", "flows[0].receiver.rwnd"),
        (
            "receiver = { accecn_ce_ack_n = 9 }",
            "flows[0].receiver.accecn_ce_ack_n",
        ),
        ("sender = { bogus = 1 }", "flows[0].sender"),
        ("cc_params = { ect1 = true }", "flows[0].cc_params.ect1"),
        ("cc_params = { initial_cwnd = 0 }", "flows[0].cc_params.initial_cwnd"),
        ("ecn = \"classic\"", "flows[0].ecn"),
        ("pps = 5", "flows[0].pps"),
    ] {
        let e = err(knob, "tcp");
        assert!(e.starts_with("v.toml:"), "{e}");
        assert!(e.contains(&format!(": {key}: ")), "{knob}: {e}");
    }
}

#[test]
fn udp_prague_and_probe_settings() {
    for (knob, key) in [
        ("sender = { max_packet_size = 0 }", "flows[0].sender.max_packet_size"),
        ("sender = { fps = 1000 }", "flows[0].sender.fps"),
        ("sender = { init_rate = \"0bit\" }", "flows[0].sender.init_rate"),
        (
            "sender = { min_rate = \"2Mbit\", max_rate = \"1Mbit\" }",
            "flows[0].sender.min_rate",
        ),
        (
            "sender = { fps = 60, frame_budget = \"20ms\" }",
            "flows[0].sender.frame_budget",
        ),
        ("receiver = { ack_every = 0 }", "flows[0].receiver.ack_every"),
        ("cc = \"prague\"", "flows[0].cc"),
    ] {
        let e = err(knob, "udp-prague");
        assert!(e.contains(&format!(": {key}: ")), "{knob}: {e}");
    }
    for (knob, key) in [
        ("pps = 0", "flows[0].pps"),
        ("size = \"20B\"", "flows[0].size"),
        ("ecn = \"ect2\"", "flows[0].ecn"),
        ("dscp = 64", "flows[0].dscp"),
        ("start = \"5s\"", "flows[0].start"),
        ("stop = \"0s\"", "flows[0].stop"),
    ] {
        let e = err(knob, "probe");
        assert!(e.contains(&format!(": {key}: ")), "{knob}: {e}");
    }
}

#[test]
fn good_knobs_are_accepted() {
    let text = "[scenario]\nduration = \"3s\"\n[topology]\ntype = \"dumbbell\"\nrate = \"10Mbit\"\nrtt = \"20ms\"\n\
        [[flows]]\nname = \"d\"\ntype = \"tcp\"\ncc = \"dctcp\"\ncc_params = { ect1 = true }\nsender = { mss = 1200 }\n\
        [[flows]]\nname = \"u\"\ntype = \"udp-prague\"\nsender = { fps = 60, frame_budget = \"10ms\" }\n";
    let s = l4s_scenario::load_str(text, Path::new("g.toml")).unwrap();
    assert_eq!(s.flows[0].nominal_ecn, l4s_core::Ecn::Ect1);
    assert_eq!(s.flows.len(), 2);
}

#[test]
fn rate_schedule_settings() {
    for (sched, key, words) in [
        ("{ steps = [] }", "topology.rate_schedule.steps", "at least one step"),
        (
            "{ steps = [{ at = \"2s\", rate = \"1Mbit\" }, { at = \"1s\", rate = \"2Mbit\" }] }",
            "topology.rate_schedule.steps[1].at",
            "increasing time order",
        ),
        (
            "{ steps = [{ at = \"5s\", rate = \"1Mbit\" }] }",
            "topology.rate_schedule.steps[0].at",
            "the run ends at 3s",
        ),
        (
            "{ steps = [{ at = \"1s\", rate = \"0bit\" }] }",
            "topology.rate_schedule.steps[0].rate",
            "above zero",
        ),
        (
            "{ steps = [{ at = \"1s\", rate = \"1Mbit\" }], repeat = \"1s\" }",
            "topology.rate_schedule.repeat",
            "longer than the last step",
        ),
        (
            "{ steps = [{ at = \"1s\", rate = \"1Mbit\" }], every = \"1s\" }",
            "topology.rate_schedule",
            "unknown field",
        ),
    ] {
        let text = format!(
            "[scenario]\nduration = \"3s\"\n[topology]\ntype = \"dumbbell\"\nrate = \"10Mbit\"\nrtt = \"20ms\"\nrate_schedule = {sched}\n[[flows]]\nname = \"f\"\ntype = \"probe\"\n"
        );
        let e = l4s_scenario::load_str(&text, Path::new("v.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!(": {key}")), "{sched}: {e}");
        assert!(e.contains(words), "{sched}: {e}");
    }
}

#[test]
fn cbr_settings() {
    for (knob, key, words) in [
        (
            "",
            "flows[0]",
            "required key `profile` is missing: one of \"voip\", \"game\"",
        ),
        (
            "profile = \"radio\"",
            "flows[0].profile",
            "unknown cbr profile \"radio\"",
        ),
        (
            "profile = \"voip\"\ncc = \"prague\"",
            "flows[0].cc",
            "does not apply to a cbr flow",
        ),
    ] {
        let e = err(knob, "cbr");
        assert!(e.contains(&format!(": {key}: ")), "{knob}: {e}");
        assert!(e.contains(words), "{knob}: {e}");
    }
    let e = err("profile = \"voip\"", "probe");
    assert!(
        e.contains("flows[0].profile: `profile` does not apply to a probe flow"),
        "{e}"
    );
    let e = err("", "carrier-pigeon");
    assert!(
        e.contains("expected one of \"tcp\", \"udp-prague\", \"probe\", \"cbr\""),
        "{e}"
    );
}
