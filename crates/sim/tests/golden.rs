//! No-change guard: every shipped scenario (and every variant), at its own seed and at
//! seed 7, must give the same `summary.json`, snapshot CSVs and `distributions.csv`, byte
//! for byte, as the digests in `tests/golden/sim.sha256` (SHA-256).
//!
//! A change that is meant to change results regenerates the file with
//! `L4S_GOLDEN_WRITE=1 cargo test -p l4s-sim --test golden` and says why in its commit.

use l4s_core::Dur;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A writer whose bytes the test reads back after the run.
#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);
impl Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
impl Buf {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

fn hex(b: &[u8]) -> String {
    Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

/// `name file -> digest` for every run.
fn digests() -> BTreeMap<String, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 9, "shipped scenarios not found: {files:?}");
    let mut out = BTreeMap::new();
    for f in files {
        let rel = format!("scenarios/{}", f.file_name().unwrap().to_string_lossy());
        let text = std::fs::read_to_string(&f).unwrap();
        let variants = l4s_scenario::variants_of(&text, Path::new(&rel)).unwrap_or_else(|e| panic!("{e}"));
        for (variant, sc) in variants {
            for seed in [None, Some(7)] {
                let name = format!(
                    "{rel}{}@seed={}",
                    variant.as_ref().map(|v| format!("[{v}]")).unwrap_or_default(),
                    seed.map(|s| s.to_string()).unwrap_or_else(|| "default".into())
                );
                let (sf, sq, d) = (Buf::default(), Buf::default(), Buf::default());
                let opts = l4s_sim::RunOptions {
                    seed,
                    duration: None,
                    snapshots: Some((Dur::from_millis(100), Box::new(sf.clone()), Box::new(sq.clone()))),
                    distributions: Some(Box::new(d.clone())),
                    pcap: None,
                    timeline: None,
                };
                let (summary, _) = l4s_sim::run(sc.clone(), opts, &mut |_| {}).expect("run");
                let json = serde_json::to_vec_pretty(&summary).unwrap();
                out.insert(format!("{name} summary.json"), hex(&json));
                out.insert(format!("{name} snapshots-flows.csv"), hex(&sf.take()));
                out.insert(format!("{name} snapshots-queues.csv"), hex(&sq.take()));
                out.insert(format!("{name} distributions.csv"), hex(&d.take()));
            }
        }
    }
    out
}

#[test]
fn shipped_scenarios_give_the_committed_results() {
    let path = root().join("tests/golden/sim.sha256");
    let got = digests();
    let text: String = got.iter().map(|(k, v)| format!("{v}  {k}\n")).collect();
    if std::env::var_os("L4S_GOLDEN_WRITE").is_some() {
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(text.as_bytes()).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let want: BTreeMap<String, String> = want
        .lines()
        .filter_map(|l| l.split_once("  ").map(|(d, k)| (k.to_string(), d.to_string())))
        .collect();
    let differ: Vec<&String> = got
        .keys()
        .chain(want.keys())
        .filter(|k| got.get(*k) != want.get(*k))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert!(
        differ.is_empty(),
        "{} of {} outputs differ from {}:\n{}",
        differ.len(),
        got.len().max(want.len()),
        path.display(),
        differ.iter().map(|k| format!("  {k}")).collect::<Vec<_>>().join("\n")
    );
}
