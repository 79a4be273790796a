//! Errors that name the file and what was wrong with it (DESIGN.md principle 6).

use std::io;
use std::path::PathBuf;

/// Why a report could not be built. Every variant names the file involved.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The directory has no `summary.json`: it is not an l4s-lab results directory (or
    /// not there at all, or the folder of a set of variants).
    #[error("{why}")]
    MissingSummary {
        dir: PathBuf,
        /// What is at `dir` instead, and what to give ([`ReportError::missing_summary`]).
        why: String,
    },
    /// `summary.json` has a `schema_version` this build does not read.
    #[error("{}: schema_version {found} is not supported (this build reads {supported}); regenerate the results with a matching l4s-lab", path.display())]
    UnsupportedSchema {
        path: PathBuf,
        found: String,
        supported: u32,
    },
    /// `summary.json` is not valid JSON or does not match the schema.
    #[error("{}: {reason}", path.display())]
    Summary { path: PathBuf, reason: String },
    /// A CSV file has a malformed header or row. `line` is 1-based (the header is line 1).
    #[error("{}, line {line}: {reason}", path.display())]
    Csv { path: PathBuf, line: usize, reason: String },
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// PNG export ([`crate::write_pngs`]): the system has no font, so chart text would vanish.
    #[error("no font found on this system (fontconfig's directories, /usr/share/fonts, ~/.fonts): chart text would be missing from the PNGs; install one, e.g. the Debian/Ubuntu package fonts-dejavu-core (`apt-get install fonts-dejavu-core`)")]
    NoFonts,
    /// PNG export: the PNG at `path` could not be drawn (bad scale, chart not rasterisable).
    #[error("{}: {reason}", path.display())]
    Png { path: PathBuf, reason: String },
    /// A comparison was given a number of labels other than its number of runs.
    #[error("--label given {labels} times for {runs} runs: give one label per results directory, in the same order")]
    Labels { labels: usize, runs: usize },
    /// `render_compare` / `compare_table` was given no directory.
    #[error("nothing to compare: give at least one results directory")]
    NoRuns,
}

impl ReportError {
    /// `dir` has no `summary.json`: looks at what is there (nothing, a set of variants,
    /// something else) to say what to give instead.
    pub fn missing_summary(dir: &std::path::Path) -> ReportError {
        ReportError::MissingSummary {
            dir: dir.to_path_buf(),
            why: missing_summary_why(dir),
        }
    }
}

/// What [`ReportError::MissingSummary`] says, from what is at `dir`.
fn missing_summary_why(dir: &std::path::Path) -> String {
    let d = dir.display();
    if !dir.exists() {
        return format!("{d}: no such directory (give a results directory that `l4s run` wrote)");
    }
    if dir.join(crate::variant_set::MANIFEST).is_file() {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().join("summary.json").is_file())
            .map(|e| e.path().display().to_string())
            .collect();
        names.sort();
        return format!(
            "{d} holds a set of variants ({}), a results directory each: give {}",
            crate::variant_set::MANIFEST,
            if names.is_empty() {
                "one of them".to_string()
            } else {
                format!("one or more of {}", names.join(" "))
            }
        );
    }
    format!("{d}: no summary.json here, so this is not an l4s-lab results directory (write one with `l4s run SCENARIO --out DIR`)")
}
