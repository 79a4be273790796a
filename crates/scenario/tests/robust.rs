//! No scenario text makes the loader panic: thousands of random mutations of the shipped
//! scenarios are loaded and each either validates or returns an error with a message.

use l4s_core::Rng;
use std::path::Path;

const GARBAGE: &[&str] = &[
    "\"",
    "[",
    "]",
    "=",
    "\n",
    "-1",
    "0",
    "1e400",
    "\"-5ms\"",
    "\"0bit\"",
    "\"\"",
    "{",
    "}",
    "[[flows]]",
    "kind",
    "\"dualpi2\"",
    "nan",
    "\"18446744073709551615s\"",
    "99999999999999999999",
    "inf",
    "\u{0}",
    "é",
    "'",
    "#",
    ",",
];

fn mutate(text: &str, rng: &mut Rng) -> String {
    let mut s: Vec<char> = text.chars().collect();
    for _ in 0..1 + rng.below(4) {
        if s.is_empty() {
            break;
        }
        let at = rng.below(s.len() as u64) as usize;
        match rng.below(3) {
            0 => {
                let n = (1 + rng.below(12) as usize).min(s.len() - at);
                s.drain(at..at + n);
            }
            1 => {
                let g = GARBAGE[rng.below(GARBAGE.len() as u64) as usize];
                for (i, c) in g.chars().enumerate() {
                    s.insert(at + i, c);
                }
            }
            _ => {
                // Replace a digit run's neighbour with a digit to make odd numbers.
                s[at] = char::from(b'0' + rng.below(10) as u8);
            }
        }
    }
    s.into_iter().collect()
}

#[test]
fn random_mutations_never_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 4);
    let mut rng = Rng::new(2024);
    let mut errors = 0;
    let mut ok = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        assert!(l4s_scenario::load_str(&text, f).is_ok(), "{} must load", f.display());
        for _ in 0..400 {
            let m = mutate(&text, &mut rng);
            match l4s_scenario::load_str(&m, Path::new("m.toml")) {
                Ok(_) => ok += 1,
                Err(e) => {
                    errors += 1;
                    assert!(!e.message.is_empty());
                    assert!(e.to_string().starts_with("m.toml"), "{e}");
                }
            }
        }
    }
    assert!(errors > 100, "mutations should mostly fail: {errors} errors, {ok} ok");
}
