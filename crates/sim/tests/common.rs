//! Helpers shared by the system tests.
#![allow(dead_code)]

use l4s_metrics::summary::{FlowSummary, QueueSummary, Summary};
use std::path::Path;

/// Run scenario text through the simulator.
pub fn run_toml(text: &str) -> Summary {
    let sc = l4s_scenario::load_str(text, Path::new("test.toml")).unwrap_or_else(|e| panic!("bad test scenario: {e}"));
    let (s, _) = l4s_sim::run(sc, Default::default(), &mut |_| {}).expect("run");
    s
}

/// Run a shipped scenario file.
pub fn run_file(rel: &str) -> Summary {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel);
    let sc = l4s_scenario::load_file(&p).unwrap_or_else(|e| panic!("{e}"));
    let (s, _) = l4s_sim::run(sc, Default::default(), &mut |_| {}).expect("run");
    s
}

pub fn flow<'a>(s: &'a Summary, name: &str) -> &'a FlowSummary {
    s.flows
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no flow {name}"))
}

pub fn queue<'a>(s: &'a Summary, name: &str) -> &'a QueueSummary {
    s.queues
        .iter()
        .find(|q| q.name == name)
        .unwrap_or_else(|| panic!("no queue {name}"))
}

/// A compact one-line description for assertion messages.
pub fn brief(s: &Summary) -> String {
    let mut out = String::new();
    for f in &s.flows {
        out += &format!(
            "[{} {:.2} Mbit/s owd p50 {:.2} p99 {:.2} ms loss {:.4} ce {:.3}] ",
            f.name,
            f.throughput_bps / 1e6,
            f.owd_ms.p50,
            f.owd_ms.p99,
            f.loss_fraction,
            f.ce_fraction
        );
    }
    for q in &s.queues {
        out += &format!(
            "[{} util {:.3} p' {:?} drops {} marks {} ",
            q.name, q.utilization, q.mean_probability, q.drops, q.marks
        );
        for (k, sq) in &q.subqueues {
            out += &format!("{k}: mean {:.2} p99 {:.2} ms; ", sq.sojourn_ms.mean, sq.sojourn_ms.p99);
        }
        out += "] ";
    }
    out
}

/// A dumbbell scenario with the given bottleneck, AQM table and flows.
pub fn dumbbell(rate: &str, rtt: &str, aqm: &str, duration: &str, warmup: &str, flows: &str) -> String {
    format!(
        "[scenario]\nname = \"t\"\nduration = \"{duration}\"\nwarmup = \"{warmup}\"\nseed = 7\n\n[topology]\ntype = \"dumbbell\"\nrate = \"{rate}\"\nrtt = \"{rtt}\"\naqm = {aqm}\n\n{flows}"
    )
}

pub fn tcp(name: &str, cc: &str, extra: &str) -> String {
    format!("[[flows]]\nname = \"{name}\"\ntype = \"tcp\"\ncc = \"{cc}\"\n{extra}\n\n")
}

pub fn probe(name: &str, pps: f64, size: &str, ecn: &str, extra: &str) -> String {
    format!(
        "[[flows]]\nname = \"{name}\"\ntype = \"probe\"\npps = {pps}\nsize = \"{size}\"\necn = \"{ecn}\"\n{extra}\n\n"
    )
}

/// A timeline sink that keeps every packet record in memory, for tests.
pub struct Rows(pub std::sync::Arc<std::sync::Mutex<Vec<l4s_sim::timeline::PacketRow>>>);
impl l4s_sim::timeline::TimelineSink for Rows {
    fn row(&mut self, r: &l4s_sim::timeline::PacketRow) -> std::io::Result<()> {
        self.0.lock().unwrap().push(*r);
        Ok(())
    }
    fn finish(self: Box<Self>) -> std::io::Result<()> {
        Ok(())
    }
}

/// Run scenario text with the packet timeline kept in memory.
pub fn run_rows(text: &str) -> (Summary, Vec<l4s_sim::timeline::PacketRow>) {
    let sc = l4s_scenario::load_str(text, Path::new("t.toml")).unwrap_or_else(|e| panic!("bad test scenario: {e}"));
    let rows = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let opts = l4s_sim::RunOptions {
        timeline: Some(Box::new(Rows(rows.clone()))),
        ..Default::default()
    };
    let (s, _) = l4s_sim::run(sc, opts, &mut |_| {}).expect("run");
    let rows = rows.lock().unwrap().clone();
    (s, rows)
}
