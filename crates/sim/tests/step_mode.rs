//! Issue 15 item 5: below about 12 Mbit/s one 1514-byte frame serialises in more than the
//! 1 ms step, so whether DualPI2 marks a lone L4S packet decides TCP Prague's share against
//! CUBIC. One Prague and one CUBIC flow on a DualPI2 dumbbell at 5 and 10 Mbit/s, under each
//! deployed behaviour (`step_mode`): upstream Linux marks the packet queued behind one frame
//! (its sojourn exceeds 1 ms) and Prague starves; L4STeam's `qlen > 1` guard and DOCSIS's
//! two-frame ramp floor leave it alone, and Prague gets a fair share.

mod common;
use common::*;

struct Outcome {
    share: f64,
    prague_ce: f64,
}

fn run(rate_mbit: u64, mode: &str) -> Outcome {
    let extra = if mode == "docsis" {
        format!(", max_rate = \"{rate_mbit}Mbit\"")
    } else {
        String::new()
    };
    let aqm = format!("{{ kind = \"dualpi2\", step_mode = \"{mode}\"{extra} }}");
    let flows = tcp("prague", "prague", "") + &tcp("cubic", "cubic", "");
    let s = run_toml(&dumbbell(
        &format!("{rate_mbit}Mbit"),
        "20ms",
        &aqm,
        "30s",
        "10s",
        &flows,
    ));
    let why = brief(&s);
    let p = flow(&s, "prague");
    let c = flow(&s, "cubic");
    let out = Outcome {
        share: p.throughput_bps / (p.throughput_bps + c.throughput_bps),
        prague_ce: p.ce_fraction,
    };
    eprintln!(
        "{rate_mbit} Mbit/s {mode}: Prague share {:.3}, Prague CE {:.3}: {why}",
        out.share, out.prague_ce
    );
    out
}

#[test]
fn step_modes_differ_for_a_lone_packet_at_low_rates() {
    for rate in [5, 10] {
        let up = run(rate, "linux-upstream");
        let l4t = run(rate, "l4steam");
        let docsis = run(rate, "docsis");
        // Measured (seed 7, 30 s, 20 ms RTT), Prague share / Prague CE fraction:
        //   5 Mbit/s: upstream 0.026 / 0.995, l4steam 0.540 / 0.31, docsis 0.581 / 0.31
        //  10 Mbit/s: upstream 0.245 / 0.33, l4steam 0.563 / 0.22, docsis 0.604 / 0.21
        // Upstream (min_qlen_step = 0): Prague is step-marked whenever a second packet queues.
        assert!(up.share < 0.35, "{rate} Mbit/s upstream Prague share {}", up.share);
        for (name, o) in [("l4steam", &l4t), ("docsis", &docsis)] {
            assert!(
                (0.45..=0.75).contains(&o.share) && o.share - up.share > 0.25,
                "{rate} Mbit/s {name} Prague share {} vs upstream {}",
                o.share,
                up.share
            );
            assert!(
                o.prague_ce < 0.7 * up.prague_ce,
                "{rate} Mbit/s {name} Prague CE {} vs upstream {}",
                o.prague_ce,
                up.prague_ce
            );
        }
    }
}

#[test]
fn step_mode_names_are_checked() {
    let text = dumbbell(
        "10Mbit",
        "20ms",
        "{ kind = \"dualpi2\", step_mode = \"l4s-team\" }",
        "1s",
        "0s",
        &tcp("p", "prague", ""),
    );
    let e = l4s_scenario::load_str(&text, std::path::Path::new("t.toml"))
        .expect_err("an unknown step_mode must be rejected")
        .to_string();
    eprintln!("{e}");
    for want in ["step_mode", "linux-upstream", "l4steam", "docsis"] {
        assert!(e.contains(want), "error {e:?} lacks {want}");
    }
    let text = text.replace("l4s-team", "docsis");
    let e = l4s_scenario::load_str(&text, std::path::Path::new("t.toml"))
        .expect_err("docsis without max_rate must be rejected")
        .to_string();
    assert!(e.contains("max_rate"), "{e}");
}
