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
        ("cc_params = { hystart = true }", "flows[0].cc_params.hystart"),
        ("cc_params = { hystart = \"rfc9406\" }", "flows[0].cc_params.hystart"),
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
fn a_hystart_that_is_neither_a_switch_nor_a_known_name_is_refused() {
    for v in ["\"fast\"", "3"] {
        let text = format!(
            "[scenario]\nduration = \"3s\"\n[topology]\ntype = \"dumbbell\"\nrate = \"10Mbit\"\nrtt = \"20ms\"\n\
             [[flows]]\nname = \"c\"\ntype = \"tcp\"\ncc = \"cubic\"\ncc_params = {{ hystart = {v} }}\n"
        );
        let e = l4s_scenario::load_str(&text, Path::new("h.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("h.toml:")
                && e.contains("flows[0].cc_params.hystart: expected true, false, \"linux\" or \"rfc9406\", not")
                && e.contains(v),
            "{v}: {e}"
        );
    }
    let named = |v: &str| {
        let text = format!(
            "[scenario]\nduration = \"3s\"\n[topology]\ntype = \"dumbbell\"\nrate = \"10Mbit\"\nrtt = \"20ms\"\n\
             [[flows]]\nname = \"c\"\ntype = \"tcp\"\ncc = \"cubic\"\ncc_params = {{ hystart = {v} }}\n"
        );
        let s = l4s_scenario::load_str(&text, Path::new("h.toml")).unwrap();
        let l4s_scenario::FlowKind::Tcp { cc_params, .. } = &s.flows[0].kind else {
            panic!("not tcp")
        };
        cc_params.hystart
    };
    use l4s_cc::cubic::Hystart;
    assert_eq!(named("\"linux\""), Hystart::Linux);
    assert_eq!(named("\"rfc9406\""), Hystart::Rfc9406);
    assert_eq!(named("false"), Hystart::Off);
}

#[test]
fn good_knobs_are_accepted() {
    let text = "[scenario]\nduration = \"3s\"\n[topology]\ntype = \"dumbbell\"\nrate = \"10Mbit\"\nrtt = \"20ms\"\n\
        [[flows]]\nname = \"d\"\ntype = \"tcp\"\ncc = \"dctcp\"\ncc_params = { ect1 = true }\nsender = { mss = 1200 }\n\
        [[flows]]\nname = \"u\"\ntype = \"udp-prague\"\nsender = { fps = 60, frame_budget = \"10ms\" }\n\
        [[flows]]\nname = \"c\"\ntype = \"tcp\"\ncc = \"cubic\"\ncc_params = { hystart = true }\n";
    let s = l4s_scenario::load_str(text, Path::new("g.toml")).unwrap();
    assert_eq!(s.flows[0].nominal_ecn, l4s_core::Ecn::Ect1);
    assert_eq!(s.flows.len(), 3);
    let l4s_scenario::FlowKind::Tcp { cc_params, .. } = &s.flows[2].kind else {
        panic!("not tcp")
    };
    assert_eq!(cc_params.hystart, l4s_cc::cubic::Hystart::Linux);
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

#[test]
fn media_settings() {
    for (knob, key, words) in [
        (
            "",
            "flows[0]",
            "required key `profile` is missing: one of \"cloud-gaming\", \"xr-h264\", \"xr-h265\", \"video-call\"",
        ),
        (
            "profile = \"4k-movie\"",
            "flows[0].profile",
            "expected one of cloud-gaming, xr-h264, xr-h265, video-call",
        ),
        (
            "profile = \"video-call\"\ncc = \"bbr\"",
            "flows[0].cc",
            "expected one of scream, rt-prague",
        ),
        (
            "profile = \"video-call\"\necn = \"purple\"",
            "flows[0].ecn",
            "expected \"ect1\" (L4S)",
        ),
        (
            "profile = \"video-call\"\nmedia = { min_bitrate = \"5Mbit\", max_bitrate = \"1Mbit\" }",
            "flows[0].media.min_bitrate",
            "",
        ),
        (
            "profile = \"video-call\"\nmedia = { fps = 0 }",
            "flows[0].media.fps",
            "",
        ),
        (
            "profile = \"video-call\"\nmedia = { feedback = \"10s\" }",
            "flows[0].media.feedback",
            "longer than the run",
        ),
        (
            "profile = \"video-call\"\nmedia = { frame_rate = 30 }",
            "flows[0].media",
            "unknown field `frame_rate`",
        ),
        (
            "profile = \"video-call\"\nmedia = { profile = \"xr-h264\" }",
            "flows[0].media.profile",
            "not both",
        ),
        (
            "profile = \"video-call\"\nbytes = \"1MB\"",
            "flows[0].bytes",
            "does not apply to a media flow",
        ),
    ] {
        let e = err(knob, "media");
        assert!(e.starts_with("v.toml:"), "{knob}: {e}");
        assert!(e.contains(&format!(": {key}")), "{knob}: {e}");
        assert!(e.contains(words), "{knob}: {e}");
    }
}

#[test]
fn application_settings() {
    for (kind, knob, key, words) in [
        ("bulk", "", "flows[0]", "bytes"),
        ("bulk", "bytes = \"0B\"", "flows[0].bytes", ""),
        (
            "web",
            "app = { objects = 5, object_size = \"10kB\", connections = 0 }",
            "flows[0].app.connections",
            "",
        ),
        (
            "request-response",
            "app = { response = 100, repeat = \"0s\" }",
            "flows[0].app.repeat",
            "",
        ),
        (
            "sync",
            "app = { chunk = \"1MB\", pause = \"1s\", kind = \"bulk\" }",
            "flows[0].app.kind",
            "the flow's `type`",
        ),
        ("query", "app = { seed = 3 }", "flows[0].app.seed", "[scenario]"),
        (
            "bulk",
            "bytes = \"1MB\"\nprofile = \"voip\"",
            "flows[0].profile",
            "does not apply",
        ),
        (
            "web",
            "app = { objects = 5, object_size = \"10kB\", bogus = 1 }",
            "flows[0].app",
            "unknown field `bogus`",
        ),
        ("bulk", "bytes = \"1MB\"\nsender = { mss = 0 }", "flows[0].sender", ""),
    ] {
        let text = format!(
            "[scenario]\nduration = \"3s\"\n[topology]\ntype = \"dumbbell\"\nrate = \"10Mbit\"\nrtt = \"20ms\"\n[[flows]]\nname = \"f\"\ntype = \"{kind}\"\n{knob}\n"
        );
        let e = l4s_scenario::load_str(&text, Path::new("v.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("v.toml:"), "{knob}: {e}");
        assert!(e.contains(&format!(": {key}")), "{kind} {knob}: {e}");
        assert!(e.contains(words), "{kind} {knob}: {e}");
    }
}

/// A `loss` model on a dumbbell's bottleneck or on a custom link: the Gilbert–Elliott
/// parameters reach the link's configuration, and each mistake names its key.
#[test]
fn loss_models() {
    let dumbbell = |loss: &str| {
        format!(
            "[scenario]\nduration = \"3s\"\n[topology]\ntype = \"dumbbell\"\nrate = \"10Mbit\"\nrtt = \"20ms\"\nloss = {loss}\n[[flows]]\nname = \"f\"\ntype = \"probe\"\n"
        )
    };
    let good =
        "{ model = \"gilbert-elliott\", loss_good = 0.01, loss_bad = 0.5, mean_good = \"2ms\", mean_bad = \"500us\" }";
    let sc = l4s_scenario::load_str(&dumbbell(good), Path::new("v.toml")).unwrap();
    let Some(l4s_scenario::LossModel::GilbertElliott(ge)) = sc.links[0].loss else {
        panic!("no loss model on the bottleneck: {:?}", sc.links[0].loss)
    };
    assert!((ge.stationary_loss() - 0.108).abs() < 1e-12, "{ge:?}");
    assert_eq!(sc.links[0].config(sc.duration).loss, sc.links[0].loss);
    assert!(
        sc.links[1..].iter().all(|l| l.loss.is_none()),
        "only the forward bottleneck"
    );
    // Defaults: no loss when good, all lost when bad.
    let sc = l4s_scenario::load_str(
        &dumbbell("{ model = \"gilbert-elliott\", mean_good = \"1s\", mean_bad = \"10ms\" }"),
        Path::new("v.toml"),
    )
    .unwrap();
    let Some(l4s_scenario::LossModel::GilbertElliott(ge)) = sc.links[0].loss else {
        panic!()
    };
    assert_eq!((ge.loss_good, ge.loss_bad), (0.0, 1.0));
    for (loss, key, says) in [
        (
            "{ model = \"bernoulli\" }",
            "topology.loss.model",
            "expected \"gilbert-elliott\"",
        ),
        (
            "{ model = \"gilbert-elliott\", mean_bad = \"10ms\" }",
            "topology.loss",
            "`mean_good` is missing",
        ),
        (
            "{ model = \"gilbert-elliott\", loss_bad = 1.5, mean_good = \"1s\", mean_bad = \"10ms\" }",
            "topology.loss.loss_bad",
            "probability from 0 to 1",
        ),
        (
            "{ model = \"gilbert-elliott\", mean_good = \"0s\", mean_bad = \"10ms\" }",
            "topology.loss.mean_good",
            "at least 1us",
        ),
        (
            "{ model = \"gilbert-elliott\", mean_good = \"1s\", mean_bad = \"10ms\", burst = 3 }",
            "topology.loss.burst",
            "unknown field `burst`",
        ),
    ] {
        let e = l4s_scenario::load_str(&dumbbell(loss), Path::new("v.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("v.toml:7: "), "{loss}: {e}");
        assert!(e.contains(&format!(": {key}: ")) && e.contains(says), "{loss}: {e}");
    }
    // On a custom link, and refused where a dumbbell key is misplaced.
    let custom = "[scenario]\nduration = \"3s\"\n[topology]\ntype = \"custom\"\n[[topology.nodes]]\nname = \"a\"\n[[topology.nodes]]\nname = \"b\"\n[[topology.links]]\nfrom = \"a\"\nto = \"b\"\nrate = \"10Mbit\"\nloss = { model = \"gilbert-elliott\", mean_good = \"1s\", mean_bad = \"10ms\" }\n[[flows]]\nname = \"f\"\ntype = \"probe\"\nfrom = \"a\"\nto = \"b\"\n";
    let sc = l4s_scenario::load_str(custom, Path::new("v.toml")).unwrap();
    assert!(sc.links[0].loss.is_some() && sc.links[1].loss.is_none());
    let e = l4s_scenario::load_str(
        &custom.replace(
            "type = \"custom\"\n",
            "type = \"custom\"\nloss = { model = \"gilbert-elliott\" }\n",
        ),
        Path::new("v.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("topology.loss") && e.contains("belongs to a dumbbell"),
        "{e}"
    );
}

/// Application settings that would take memory without bound are refused with their key
/// (objects per page, an interval below a millisecond), and so is a key path too deep to
/// be a scenario key.
#[test]
fn unbounded_application_settings_and_absurd_key_paths_are_refused() {
    let base = "[scenario]\nname = \"x\"\nduration = \"5s\"\n[topology]\ntype = \"dumbbell\"\nrate = \"10Mbit\"\nrtt = \"10ms\"\n[[flows]]\nname = \"w\"\ncc = \"cubic\"\n";
    for (flow, key, words) in [
        (
            "type = \"web\"\napp = { objects = 4294967295, object_size = \"1kB\" }\n",
            "flows[0].app.objects",
            "at most 100000 objects",
        ),
        (
            "type = \"request-response\"\napp = { response = \"1kB\", repeat = \"1ns\" }\n",
            "flows[0].app.repeat",
            "at least 1ms",
        ),
        (
            "type = \"query\"\napp = { repeat = \"10us\" }\n",
            "flows[0].app.repeat",
            "at least 1ms",
        ),
    ] {
        let e = l4s_scenario::load_str(&format!("{base}{flow}"), std::path::Path::new("a.toml")).unwrap_err();
        assert_eq!(e.key, key, "{e}");
        assert!(e.message.contains(words), "{e}");
    }
    let deep = vec!["a"; 40_000].join(".");
    let text = format!("{base}type = \"tcp\"\n[[variants]]\nname = \"v\"\nset = {{ \"{deep}\" = 1 }}\n");
    let e = l4s_scenario::variants_of(&text, std::path::Path::new("a.toml")).unwrap_err();
    assert!(e.message.contains("at most 32 parts"), "{e}");
}

/// A bare number where a quantity with a unit belongs says how to write it (issue: `size =
/// 200` said only "invalid type: integer").
#[test]
fn a_bare_number_for_a_quantity_gets_a_hint() {
    for (extra, key) in [
        ("pps = 10\nsize = 200", "flows[0].size"),
        ("pps = 10\nsize = 1.5", "flows[0].size"),
    ] {
        let e = err(extra, "probe");
        assert!(e.contains(key), "{e}");
        assert!(
            e.contains("quantities are written as text with their unit, e.g. \"200B\""),
            "{e}"
        );
    }
}

/// And text for a plain number gets the other hint, on one line.
#[test]
fn text_for_a_plain_number_gets_a_hint_on_one_line() {
    for (extra, key) in [
        (
            "profile = \"video-call\"\nmedia = { packet_size = \"1200B\" }",
            "flows[0].media.packet_size",
        ),
        (
            "profile = \"video-call\"\nmedia = { fps = \"30\" }",
            "flows[0].media.fps",
        ),
    ] {
        let e = err(extra, "media");
        assert!(
            e.contains(key) && e.ends_with("this key is a plain number, written without quotes or a unit (e.g. 1200)"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }
    let e = err("profile = \"video-call\"\nmedia = { packet_sizes = 3 }", "media");
    assert!(e.contains("unknown field `packet_sizes`") && !e.contains('\n'), "{e}");
}

/// A missing duration says which key is missing, not that a value has the wrong type
/// (issue 13 item 21).
#[test]
fn a_missing_duration_is_named() {
    let text = "[scenario]\nname = \"x\"\n[topology]\ntype = \"dumbbell\"\nrate = \"10Mbit\"\nrtt = \"20ms\"\n[[flows]]\nname = \"f\"\ntype = \"probe\"\n";
    let e = l4s_scenario::load_str(text, Path::new("v.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("scenario: required key `duration` is missing"), "{e}");
    // A wrong type still gets the wording with the unit.
    let e = l4s_scenario::load_str(&text.replace("name = \"x\"", "duration = 2"), Path::new("v.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("scenario.duration") && e.contains("with a unit"), "{e}");
}

#[test]
fn an_application_flow_takes_the_controller_parameters_it_can_use() {
    let text = |flow: &str| {
        format!(
            "[scenario]\nduration = \"3s\"\n[topology]\ntype = \"dumbbell\"\nrate = \"10Mbit\"\nrtt = \"20ms\"\n[[flows]]\nname = \"a\"\n{flow}\n"
        )
    };
    let s = l4s_scenario::load_str(
        &text("type = \"bulk\"\ncc = \"cubic\"\nbytes = \"1MB\"\ncc_params = { hystart = true, linux_beta = true }"),
        Path::new("a.toml"),
    )
    .unwrap();
    let l4s_scenario::FlowKind::App { cfg } = &s.flows[0].kind else {
        panic!("not an app")
    };
    let (p, _) = cfg.tcp_setup();
    assert_eq!(p.hystart, l4s_cc::cubic::Hystart::Linux);
    assert!(p.cubic_linux_beta);
    for (flow, key, words) in [
        (
            "type = \"bulk\"\ncc = \"prague\"\nbytes = \"1MB\"\ncc_params = { hystart = true }",
            "flows[0].cc_params.hystart",
            "applies to cubic only",
        ),
        (
            "type = \"bulk\"\ncc = \"cubic\"\nbytes = \"1MB\"\ncc_params = { initial_cwnd = 4 }",
            "flows[0].cc_params.initial_cwnd",
            "app.initial_cwnd",
        ),
        (
            "type = \"web\"\ncc = \"dctcp\"\ncc_params = { ect1 = true }\napp = { objects = 2, object_size = \"10kB\", repeat = \"1s\" }",
            "flows[0].cc_params.ect1",
            "`tcp` flows only",
        ),
        (
            "type = \"query\"\ncc_params = { abe = true }\napp = { repeat = \"1s\" }",
            "flows[0].cc_params",
            "no congestion control",
        ),
    ] {
        let e = l4s_scenario::load_str(&text(flow), Path::new("a.toml")).unwrap_err().to_string();
        assert!(e.contains(&format!(": {key}: ")) && e.contains(words), "{flow}: {e}");
    }
}

/// Links are named in queues, snapshots, `set` paths and campaign columns: two links of one
/// name (or one named as another's reverse direction) are refused at the second's name.
#[test]
fn two_links_of_one_name_are_refused() {
    let text = |second: &str, bidirectional: &str| {
        format!(
            "[scenario]\nduration = \"3s\"\n[topology]\ntype = \"custom\"\n[[topology.nodes]]\nname = \"a\"\n[[topology.nodes]]\nname = \"b\"\n[[topology.nodes]]\nname = \"c\"\n[[topology.links]]\nname = \"x\"\nfrom = \"a\"\nto = \"b\"\nrate = \"10Mbit\"\n[[topology.links]]\nname = \"{second}\"\nfrom = \"b\"\nto = \"c\"\nrate = \"5Mbit\"\n{bidirectional}[[flows]]\nname = \"f\"\ntype = \"probe\"\nfrom = \"a\"\nto = \"c\"\n"
        )
    };
    let err = |t: &str| {
        l4s_scenario::load_str(t, Path::new("dup.toml"))
            .unwrap_err()
            .to_string()
    };
    let e = err(&text("x", ""));
    assert!(
        e.contains("dup.toml:17: topology.links[1].name: the name \"x\" is already used by another link"),
        "{e}"
    );
    let e = err(&text("x-reverse", ""));
    assert!(
        e.contains("the name \"x-reverse\" is already used by another link"),
        "{e}"
    );
    // A one-way link named "x-reverse" beside a bidirectional "x" clashes too; a name
    // whose reverse would clash only matters when the link has a reverse.
    let e = err(&text("x-reverse", "bidirectional = false\n"));
    assert!(e.contains("is already used by another link"), "{e}");
    let sc = l4s_scenario::load_str(&text("y", ""), Path::new("dup.toml")).unwrap();
    let names: Vec<&str> = sc.links.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["x", "x-reverse", "y", "y-reverse"]);
}

/// The name is the default results directory: one named in the file and one taken from
/// the file's name obey the same rule (no hidden `results/.x`).
#[test]
fn a_scenario_name_from_the_file_name_obeys_the_names_rule() {
    let text = "[scenario]\nduration = \"3s\"\n[topology]\ntype = \"dumbbell\"\nrate = \"10Mbit\"\nrtt = \"20ms\"\n[[flows]]\nname = \"f\"\ntype = \"probe\"\n";
    let e = l4s_scenario::load_str(text, Path::new(".hidden.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\".hidden\", the file's name,")
            && e.contains("start with '.'")
            && e.ends_with("give the scenario a `name`"),
        "{e}"
    );
    let named = text.replace("[scenario]\n", "[scenario]\nname = \".x\"\n");
    let e = l4s_scenario::load_str(&named, Path::new("ok.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("\".x\": a name cannot") && !e.contains("file's name"), "{e}");
    assert_eq!(
        l4s_scenario::load_str(text, Path::new("plain.toml")).unwrap().name,
        "plain"
    );
    let fine = text.replace("[scenario]\n", "[scenario]\nname = \"fine\"\n");
    assert_eq!(
        l4s_scenario::load_str(&fine, Path::new(".hidden.toml")).unwrap().name,
        "fine"
    );
}
