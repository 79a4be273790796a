//! Scenario errors that a person can act on: file, line, key path, what was expected
//! (DESIGN.md principle 6).

use std::fmt;
use std::path::{Path, PathBuf};

/// A problem in a scenario file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    pub file: PathBuf,
    /// 1-based line, when the key could be located.
    pub line: Option<usize>,
    /// Dotted key path, e.g. `topology.aqm.step_thresh` or `flows[1].cc`.
    pub key: String,
    /// What was wrong and what was expected.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if self.key.is_empty() {
            write!(f, ": {}", self.message)
        } else {
            write!(f, ": {}: {}", self.key, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

/// Why a run's overrides (`--seed`, `--duration`) cannot be applied to a scenario
/// ([`crate::Scenario::apply_overrides`]). Typed, so a caller that knows the option's
/// name and where the warm-up came from can word [`OverrideError::NotAfterWarmup`] itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OverrideError {
    /// The duration given was zero.
    ZeroDuration,
    /// The duration given is not longer than the scenario's warm-up.
    NotAfterWarmup {
        duration: l4s_core::Dur,
        warmup: l4s_core::Dur,
    },
    /// A link's capacity trace could not be drawn for the run.
    Draw(String),
}

impl fmt::Display for OverrideError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OverrideError::ZeroDuration => f.write_str("the duration must be above zero"),
            OverrideError::NotAfterWarmup { duration, warmup } => {
                write!(f, "a duration of {duration} is not longer than the warm-up ({warmup})")
            }
            OverrideError::Draw(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for OverrideError {}

impl From<OverrideError> for String {
    fn from(e: OverrideError) -> String {
        e.to_string()
    }
}

/// One step of a key path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// Render a path as `a.b[2].c`.
pub fn path_string(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// Parse a serde_path_to_error path string (`flows[1].cc`, `topology.aqm`) into segments.
pub fn parse_path(p: &str) -> Vec<Seg> {
    let mut out = Vec::new();
    for part in p.split('.') {
        if part.is_empty() || part == "?" {
            continue;
        }
        let mut rest = part;
        if let Some(i) = rest.find('[') {
            let key = &rest[..i];
            if !key.is_empty() {
                out.push(Seg::Key(key.to_string()));
            }
            rest = &rest[i..];
            while let Some(end) = rest.find(']') {
                if let Ok(n) = rest[1..end].parse() {
                    out.push(Seg::Index(n));
                }
                rest = &rest[end + 1..];
                if !rest.starts_with('[') {
                    break;
                }
            }
        } else {
            out.push(Seg::Key(rest.to_string()));
        }
    }
    out
}

/// 1-based line of a byte offset.
pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Find the line where the key at `path` is written (or the nearest enclosing key that
/// exists, so that a missing key points at its table).
pub fn locate(text: &str, path: &[Seg]) -> Option<usize> {
    let doc = toml_edit::Document::parse(text.to_string()).ok()?;
    let mut item: &toml_edit::Item = doc.as_item();
    let mut best: Option<std::ops::Range<usize>> = None;
    for seg in path {
        match seg {
            Seg::Key(k) => {
                let Some(tbl) = item.as_table_like() else { break };
                let (key, next) = match tbl.get_key_value(k) {
                    Some(kv) => kv,
                    None => break,
                };
                if let Some(sp) = key.span() {
                    best = Some(sp);
                } else if let Some(sp) = next.span() {
                    best = Some(sp);
                }
                item = next;
            }
            Seg::Index(i) => {
                if let Some(arr) = item.as_array_of_tables() {
                    match arr.get(*i) {
                        Some(t) => {
                            if let Some(sp) = t.span() {
                                best = Some(sp);
                            }
                            // Continue inside the table.
                            let tbl: &toml_edit::Table = t;
                            // Re-borrow as an Item via a raw lookup of the next key.
                            return locate_in_table(tbl, &path[path.iter().position(|s| s == seg)? + 1..])
                                .or(best.clone())
                                .map(|sp| line_of(text, sp.start));
                        }
                        None => break,
                    }
                } else if let Some(arr) = item.as_array() {
                    match arr.get(*i) {
                        Some(v) => {
                            if let Some(sp) = v.span() {
                                best = Some(sp);
                            }
                            break;
                        }
                        None => break,
                    }
                } else {
                    break;
                }
            }
        }
    }
    best.map(|sp| line_of(text, sp.start))
}

fn locate_in_table(tbl: &toml_edit::Table, path: &[Seg]) -> Option<std::ops::Range<usize>> {
    let mut best = None;
    let mut cur: &dyn toml_edit::TableLike = tbl;
    // The item the last key led to, for an index into an array of tables within it
    // (`topology.wifi[0].stations[1].mcs`).
    let mut last: Option<&toml_edit::Item> = None;
    for seg in path {
        match seg {
            Seg::Key(k) => {
                let (key, next) = match cur.get_key_value(k) {
                    Some(kv) => kv,
                    None => break,
                };
                best = key.span().or_else(|| next.span()).or(best);
                last = Some(next);
                match next.as_table_like() {
                    Some(t) => cur = t,
                    None if next.is_array_of_tables() => {}
                    None => break,
                }
            }
            Seg::Index(i) => {
                let Some(t) = last.and_then(|it| it.as_array_of_tables()).and_then(|a| a.get(*i)) else {
                    break;
                };
                best = t.span().or(best);
                cur = t;
                last = None;
            }
        }
    }
    best
}

/// Whether the key at `path` is written in `text` itself (not only a table around it).
pub fn has_key(text: &str, path: &[Seg]) -> bool {
    fn within(t: &dyn toml_edit::TableLike, path: &[Seg]) -> bool {
        let Some((Seg::Key(k), rest)) = path.split_first() else {
            return path.is_empty();
        };
        let Some(item) = t.get(k) else { return false };
        match rest.split_first() {
            None => true,
            Some((Seg::Index(i), rest)) => {
                if let Some(tables) = item.as_array_of_tables() {
                    tables.get(*i).is_some_and(|t| within(t, rest))
                } else if let Some(values) = item.as_array() {
                    values
                        .get(*i)
                        .is_some_and(|v| rest.is_empty() || v.as_inline_table().is_some_and(|t| within(t, rest)))
                } else {
                    false
                }
            }
            Some(_) => item.as_table_like().is_some_and(|t| within(t, rest)),
        }
    }
    text.parse::<toml_edit::Document<String>>()
        .is_ok_and(|doc| within(doc.as_table(), path))
}

/// Builder of errors for one file.
#[derive(Clone, Debug)]
pub struct ErrCtx<'a> {
    pub file: &'a Path,
    pub text: &'a str,
}

impl ErrCtx<'_> {
    /// An error at a key path.
    pub fn at(&self, path: &[Seg], message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: self.file.to_path_buf(),
            line: locate(self.text, path),
            key: path_string(path),
            message: message.into(),
        }
    }
    /// An error at a key path given as text (`topology.aqm.target`).
    pub fn at_str(&self, path: &str, message: impl Into<String>) -> ScenarioError {
        self.at(&parse_path(path), message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn keys_written_in_the_text() {
        let text = "[topology]\nrtt = \"20ms\"\n[topology.aqm]\nkind = \"fifo\"\n[[flows]]\nname = \"a\"\nst = [{ mcs = 3 }]\n";
        for (key, has) in [
            ("topology.rtt", true),
            ("topology.aqm", true),
            ("topology.aqm.kind", true),
            ("topology.aqm.limit", false),
            ("topology.rate", false),
            ("flows[0].name", true),
            ("flows[0].cc", false),
            ("flows[1].name", false),
            ("flows[0].st[0].mcs", true),
            ("flows[0].st[0].nss", false),
            ("flows[0].st[1]", false),
        ] {
            assert_eq!(has_key(text, &parse_path(key)), has, "{key}");
        }
        assert!(!has_key("[broken", &parse_path("broken")));
    }

    #[test]
    fn paths_and_lines() {
        let text = "[scenario]\nname = \"x\"\n\n[topology.aqm]\nkind = \"dualpi2\"\ntarget = \"1ms\"\n\n[[flows]]\nname = \"a\"\n\n[[flows]]\nname = \"b\"\ncc = \"bogus\"\n";
        assert_eq!(
            parse_path("flows[1].cc"),
            vec![Seg::Key("flows".into()), Seg::Index(1), Seg::Key("cc".into())]
        );
        assert_eq!(path_string(&parse_path("flows[1].cc")), "flows[1].cc");
        assert_eq!(locate(text, &parse_path("topology.aqm.target")), Some(6));
        assert_eq!(locate(text, &parse_path("flows[1].cc")), Some(13));
        assert_eq!(locate(text, &parse_path("flows[0].name")), Some(9));
        // Missing key: nearest enclosing.
        assert_eq!(locate(text, &parse_path("topology.aqm.nothing")), Some(4));
        // A path that runs past a value stops at the value.
        assert_eq!(locate(text, &parse_path("topology.aqm.target.deeper")), Some(6));
        assert_eq!(line_of("a\nb\nc", 4), 3);
    }
}
