//! Sparse traffic over every access model. Each shipped scenario with a custom topology (the
//! Wi-Fi BSSs, cable links, cellular links and cells, the multi-hop path) runs with its
//! flows replaced by light probes both ways between the same nodes: a few packets a second
//! each, at rates and sizes that put them at every phase of the slots, grants and TXOPs,
//! so the links sleep between packets and must wake for each one.
//!
//! The simulator asserts in debug builds (the tests' profile) that no link delivers a
//! packet before the moment it hands it over, nor asks to be woken in the past: a cell that
//! had slept once served a new packet in a long-past slot. Here every probe must also be
//! delivered, after at least its path's propagation delay.

use l4s_core::Dur;
use std::collections::BTreeSet;
use std::path::Path;

/// The scenario text of `file` with its flows and variants replaced by probes both ways
/// between every pair of nodes that one of its flows joins.
fn sparse_text(file: &Path) -> Option<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let sc = l4s_scenario::load_file(file).unwrap_or_else(|e| panic!("{e}"));
    if !text.contains("type = \"custom\"") {
        return None;
    }
    let pairs: BTreeSet<(String, String)> = sc
        .flows
        .iter()
        .map(|f| (sc.nodes[f.src].name.clone(), sc.nodes[f.dst].name.clone()))
        .collect();
    let cut = ["\n[[flows]]", "\n[[variants]]"]
        .iter()
        .filter_map(|t| text.find(t))
        .min()
        .unwrap_or(text.len());
    let mut out = text[..cut].to_string();
    let mut i = 0;
    for (a, b) in &pairs {
        for (from, to) in [(a, b), (b, a)] {
            i += 1;
            out += &format!(
                "\n[[flows]]\nname = \"p{i}\"\ntype = \"probe\"\nfrom = \"{from}\"\nto = \"{to}\"\npps = {}\nsize = \"{}B\"\n",
                3 + i,
                200 + 37 * i
            );
        }
    }
    Some(out)
}

#[test]
fn sparse_probes_cross_every_access_model_on_time() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut ran = 0;
    for file in files {
        let Some(text) = sparse_text(&file) else { continue };
        let mut sc = l4s_scenario::load_str(&text, &file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        sc.apply_overrides(None, Some(sc.warmup + Dur::from_secs(8))).unwrap();
        let (s, _) = l4s_sim::run(sc, Default::default(), &mut |_| {}).expect("run");
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        for f in &s.flows {
            println!(
                "{name} {} {} -> {}: {} sent, {} lost, OWD p50 {:.2} p99 {:.2} ms (base RTT {:.1} ms)",
                f.name, f.src, f.dst, f.sent_packets, f.lost_packets, f.owd_ms.p50, f.owd_ms.p99, f.base_rtt_ms
            );
            // About 8 s of 4-20 packets a second.
            assert!(f.sent_packets >= 25, "{name} {}: {} sent", f.name, f.sent_packets);
            // Light traffic loses nothing to queues; a radio's own losses (a Wi-Fi frame
            // that fails every retry, a fault) stay far below this.
            assert!(
                f.loss_fraction < 0.05,
                "{name} {}: {} of {} lost",
                f.name,
                f.lost_packets,
                f.sent_packets
            );
            // No packet arrives faster than light: at least the path's one-way propagation
            // (half the base RTT, or less on an asymmetric path; every shipped path here is
            // symmetric in its delays, to within the radio's own).
            assert!(
                f.owd_ms.p50 >= 0.45 * f.base_rtt_ms,
                "{name} {}: {:?}",
                f.name,
                f.owd_ms
            );
        }
        ran += 1;
    }
    assert!(ran >= 10, "{ran} scenarios");
}
