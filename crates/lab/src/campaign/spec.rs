//! The campaign file as written, and its validation: every problem names the campaign
//! file, the line, the key and what was expected (`docs/campaigns.md` documents the
//! format).

use l4s_core::{units, Dur};
use l4s_scenario::error::{line_of, parse_path, ErrCtx};
use l4s_scenario::ScenarioError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileToml {
    campaign: CampaignToml,
    #[serde(default)]
    sweep: BTreeMap<String, toml::Value>,
    sample: Option<SampleToml>,
    #[serde(default)]
    groups: Vec<GroupToml>,
    #[serde(default)]
    outputs: OutputsToml,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CampaignToml {
    name: String,
    #[serde(default)]
    description: String,
    scenario: String,
    variants: Option<Vec<String>>,
    baseline: Option<String>,
    #[serde(default = "one_seed")]
    seeds: toml::Value,
    duration: Option<String>,
    warmup: Option<String>,
    #[serde(default)]
    metrics: Vec<String>,
    gap: Option<String>,
}

fn one_seed() -> toml::Value {
    toml::Value::Integer(1)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SampleToml {
    count: u32,
    #[serde(default)]
    seed: u64,
    params: BTreeMap<String, toml::Table>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupToml {
    name: String,
    #[serde(default)]
    set: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputsToml {
    snapshots: Option<String>,
    #[serde(default)]
    report: bool,
    #[serde(default)]
    packets: bool,
}

/// A validated campaign file.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The campaign file as given, and its text.
    pub file: PathBuf,
    pub text: String,
    pub name: String,
    pub description: String,
    /// The scenario file, relative to the campaign file's folder.
    pub scenario: PathBuf,
    /// The scenario variants to run (all of them when `None`).
    pub variants: Option<Vec<String>>,
    /// The variant every other variant of a pair is compared with.
    pub baseline: Option<String>,
    pub seeds: Vec<u64>,
    /// `scenario.duration` of every run, as written.
    pub duration: Option<String>,
    /// `scenario.warmup` of every run, as written.
    pub warmup: Option<String>,
    /// Live runs: the most time between the end of one run of a pair and the start of the
    /// next; a pair that a restart would split by more is run again whole.
    pub gap: Option<Dur>,
    /// The metrics `campaign.html` shows (patterns of `index.parquet` columns, `*` for
    /// any text); empty for the page's defaults.
    pub metrics: Vec<String>,
    /// The grid: every combination of these values is a point.
    pub sweep: Vec<Sweep>,
    pub sample: Option<Sample>,
    pub groups: Vec<Group>,
    pub outputs: OutputsSpec,
}

/// A swept key and its values: a list, or a table of labelled values
/// (`{ bulk = { ... }, sync = { ... } }`), whose labels then name the points.
#[derive(Clone, Debug)]
pub struct Sweep {
    pub key: String,
    pub values: Vec<toml::Value>,
    pub labels: Option<Vec<String>>,
}

/// Parameters drawn per point ("per home"), `count` draws from `seed`.
#[derive(Clone, Debug)]
pub struct Sample {
    pub count: u32,
    pub seed: u64,
    pub params: Vec<(String, Dist)>,
}

/// How a sampled parameter is drawn.
#[derive(Clone, Debug, PartialEq)]
pub enum Dist {
    Uniform(Quantity, Quantity),
    LogUniform(Quantity, Quantity),
    Choice(Vec<toml::Value>),
}

/// A number with an optional unit as a scenario writes it: `20`, `2.5`, `"20Mbit"`, `"5ms"`.
#[derive(Clone, Debug, PartialEq)]
pub struct Quantity {
    pub value: f64,
    /// The unit after the number (empty for a plain TOML number).
    pub unit: String,
    /// A TOML integer (draws are rounded to integers).
    pub integer: bool,
}

impl Quantity {
    /// The TOML value of `v` in this quantity's unit.
    pub fn with(&self, v: f64) -> toml::Value {
        if self.unit.is_empty() {
            if self.integer {
                toml::Value::Integer(v.round() as i64)
            } else {
                toml::Value::Float(round_sig(v, 6))
            }
        } else if self.integer {
            toml::Value::String(format!("{}{}", v.round() as i64, self.unit))
        } else {
            toml::Value::String(format!("{}{}", round_sig(v, 6), self.unit))
        }
    }
}

/// `v` to `digits` significant digits (a drawn "37.1234Mbit" rather than 17 digits).
fn round_sig(v: f64, digits: i32) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let scale = 10f64.powi(digits - 1 - v.abs().log10().floor() as i32);
    (v * scale).round() / scale
}

/// A label for runs (a "time of day", a background load) and the scenario keys it sets.
#[derive(Clone, Debug)]
pub struct Group {
    pub name: String,
    pub set: Vec<(String, toml::Value)>,
}

/// What each run keeps beside `summary.json` and its distributions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OutputsSpec {
    /// The snapshot interval (no time series when `None`).
    pub snapshots: Option<Dur>,
    pub report: bool,
    pub packets: bool,
}

impl OutputsSpec {
    /// The options of each run of a campaign with these outputs: what `[outputs]` asks for
    /// beside the summary and the distributions, kept only as Parquet, into a store the
    /// campaign has locked as a whole. `command` is recorded in each `run-info.json`;
    /// `caller` asked for the campaign.
    pub fn run_options(&self, command: Vec<String>, caller: crate::Caller) -> crate::RunOptions {
        crate::RunOptions {
            seed: None,
            duration: None,
            snapshot_interval: self.snapshots.unwrap_or(Dur::ZERO),
            pcap: false,
            pcap_ipv6: false,
            packets: self.packets,
            report: self.report,
            png: false,
            out: None,
            variants: Vec::new(),
            command,
            keep_csv: false,
            lock_out: false,
            set: Vec::new(),
            // A campaign stops between runs: a run cut short is never stored as done.
            stop: None,
            caller,
        }
    }
}

/// A key the campaign sets in every run: its key in the campaign file, the scenario's key
/// it sets, what it is called in messages, and the value as written.
pub(crate) struct Fixed<'a> {
    pub key: &'static str,
    pub scenario_key: &'static str,
    pub noun: &'static str,
    pub value: &'a str,
}

impl Spec {
    /// What the campaign sets in every run over the run's own keys, as [`Fixed`]: its
    /// duration and warm-up, where given.
    pub(crate) fn fixed(&self) -> Vec<Fixed<'_>> {
        [
            ("campaign.duration", "scenario.duration", "duration", &self.duration),
            ("campaign.warmup", "scenario.warmup", "warm-up", &self.warmup),
        ]
        .into_iter()
        .filter_map(|(key, scenario_key, noun, v)| {
            v.as_deref().map(|value| Fixed {
                key,
                scenario_key,
                noun,
                value,
            })
        })
        .collect()
    }

    /// The same campaign `k` times larger, toward a field study's size: `k` times the
    /// sampled draws (homes) when it samples, otherwise `k` times the seeds. Its name (and
    /// so its default store) gains `-x<k>`.
    pub fn scaled(mut self, k: u32) -> Result<Spec, ScenarioError> {
        if k == 0 {
            return Err(self.err("campaign", "--scale: expected a factor of at least 1"));
        }
        if k == 1 {
            return Ok(self);
        }
        match self.sample.as_ref().map(|s| s.count) {
            Some(count) => {
                let c = count
                    .checked_mul(k)
                    .filter(|&c| c <= 100_000_000)
                    .ok_or_else(|| self.err("sample.count", format!("--scale {k}: too many draws")))?;
                if let Some(s) = &mut self.sample {
                    s.count = c;
                }
            }
            None => {
                let n = self.seeds.len() as u64 * k as u64;
                if n > 1_000_000 {
                    return Err(self.err("campaign.seeds", format!("--scale {k}: {n} seeds, at most 1000000")));
                }
                let start = self.seeds.iter().max().copied().unwrap_or(0) + 1;
                let more: Vec<u64> = (start..).take(n as usize - self.seeds.len()).collect();
                self.seeds.extend(more);
            }
        }
        self.name = format!("{}-x{k}", self.name);
        Ok(self)
    }

    /// The scenario file's path, relative to the working directory.
    pub fn scenario_path(&self) -> PathBuf {
        match self.file.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.join(&self.scenario),
            _ => self.scenario.clone(),
        }
    }

    /// The line of the key at `path` in the campaign file.
    pub fn err(&self, path: &str, message: impl Into<String>) -> ScenarioError {
        ErrCtx {
            file: &self.file,
            text: &self.text,
        }
        .at_str(path, message)
    }

    /// An error at a quoted (dotted) key inside a table, such as `sweep."topology.rate"`.
    pub fn err_at_param(&self, table: &str, param: &str, message: impl Into<String>) -> ScenarioError {
        let mut e = self.err(table, message);
        e.key = format!("{table}.{param:?}");
        if let Some(line) = self.param_line(table, param) {
            e.line = Some(line);
        }
        e
    }

    /// The line of a quoted key inside `table` (`sweep`, `sample.params`, `groups[i].set`).
    fn param_line(&self, table: &str, param: &str) -> Option<usize> {
        use l4s_scenario::error::Seg;
        let doc = toml_edit::Document::parse(self.text.clone()).ok()?;
        let mut tbl: &dyn toml_edit::TableLike = doc.as_table();
        let segs = parse_path(table);
        let mut i = 0;
        while i < segs.len() {
            let Seg::Key(k) = &segs[i] else { return None };
            let item = tbl.get(k)?;
            if let Some(Seg::Index(n)) = segs.get(i + 1) {
                tbl = item.as_array_of_tables()?.get(*n)?;
                i += 2;
            } else {
                tbl = item.as_table_like()?;
                i += 1;
            }
        }
        let (k, v) = tbl.get_key_value(param)?;
        k.span().or_else(|| v.span()).map(|sp| line_of(&self.text, sp.start))
    }
}

/// Read and validate a campaign file.
pub fn load(file: &Path) -> Result<Spec, ScenarioError> {
    let text = std::fs::read_to_string(file).map_err(|e| ScenarioError {
        file: file.to_path_buf(),
        line: None,
        key: String::new(),
        message: format!("cannot read the campaign file: {e}"),
    })?;
    parse(&text, file)
}

/// Validate campaign text; `file` names it in errors and anchors the scenario's path.
pub fn parse(text: &str, file: &Path) -> Result<Spec, ScenarioError> {
    let raw: FileToml = l4s_scenario::parse_toml(text, file)
        .map_err(|e| l4s_scenario::other_kind(text, file, l4s_scenario::FileKind::Campaign).unwrap_or(e))?;
    let mut spec = Spec {
        file: file.to_path_buf(),
        text: text.to_string(),
        name: raw.campaign.name.clone(),
        description: raw.campaign.description.clone(),
        scenario: PathBuf::from(&raw.campaign.scenario),
        variants: raw.campaign.variants.clone(),
        baseline: raw.campaign.baseline.clone(),
        seeds: Vec::new(),
        duration: raw.campaign.duration.clone(),
        warmup: raw.campaign.warmup.clone(),
        metrics: raw.campaign.metrics.clone(),
        gap: None,
        sweep: Vec::new(),
        sample: None,
        groups: Vec::new(),
        outputs: OutputsSpec::default(),
    };
    let c = &raw.campaign;
    if !valid_name(&c.name) {
        return Err(spec.err(
            "campaign.name",
            format!(
                "{:?}: expected letters, digits, '-', '_' or '.', not starting with '.' (it names the campaign's results directory)",
                c.name
            ),
        ));
    }
    spec.seeds = seeds(&spec, &c.seeds)?;
    if c.variants.as_ref().is_some_and(|v| v.is_empty()) {
        return Err(spec.err(
            "campaign.variants",
            "the list is empty: name the variants to run, or leave the key out to run them all",
        ));
    }
    let duration = match &c.duration {
        Some(d) => {
            let d = units::parse_dur(d).map_err(|e| spec.err("campaign.duration", e))?;
            if d.is_zero() {
                return Err(spec.err("campaign.duration", "the duration must be above zero"));
            }
            Some(d)
        }
        None => None,
    };
    if let Some(w) = &c.warmup {
        let w = units::parse_dur(w).map_err(|e| spec.err("campaign.warmup", e))?;
        if let Some(d) = duration.filter(|d| w >= *d) {
            return Err(spec.err(
                "campaign.warmup",
                format!("the warm-up ({w}) must be shorter than campaign.duration ({d})"),
            ));
        }
    }
    if let Some(g) = &c.gap {
        spec.gap = Some(units::parse_dur(g).map_err(|e| spec.err("campaign.gap", e))?);
    }
    for (k, v) in &raw.sweep {
        check_param(&spec, "sweep", k)?;
        let (vals, labels) = match v {
            toml::Value::Array(vals) => (vals.clone(), None),
            toml::Value::Table(t) => {
                for l in t.keys() {
                    if !valid_name(l) {
                        return Err(spec.err_at_param(
                            "sweep",
                            k,
                            format!("label {l:?}: expected letters, digits, '-', '_' or '.'"),
                        ));
                    }
                }
                (t.values().cloned().collect(), Some(t.keys().cloned().collect()))
            }
            _ => {
                return Err(spec.err_at_param(
                    "sweep",
                    k,
                    "expected a list of values, such as [\"20Mbit\", \"50Mbit\"], or a table of labelled values",
                ))
            }
        };
        if vals.is_empty() {
            return Err(spec.err_at_param("sweep", k, "the list of values is empty"));
        }
        for (i, a) in vals.iter().enumerate() {
            if vals[..i].contains(a) {
                return Err(spec.err_at_param("sweep", k, format!("the value {a} is listed twice")));
            }
        }
        spec.sweep.push(Sweep {
            key: k.clone(),
            values: vals,
            labels,
        });
    }
    if let Some(s) = &raw.sample {
        if s.count == 0 || s.count > MAX_DRAWS {
            return Err(spec.err(
                "sample.count",
                format!("expected 1 to {MAX_DRAWS} draws, found {}", s.count),
            ));
        }
        if s.params.is_empty() {
            return Err(spec.err(
                "sample.params",
                "expected at least one parameter, such as { \"topology.rtt\" = { uniform = [\"5ms\", \"50ms\"] } }",
            ));
        }
        let mut params = Vec::new();
        for (k, t) in &s.params {
            check_param(&spec, "sample.params", k)?;
            if raw.sweep.contains_key(k) {
                return Err(spec.err_at_param("sample.params", k, "this key is also swept: sweep it or sample it"));
            }
            params.push((k.clone(), dist(&spec, k, t)?));
        }
        spec.sample = Some(Sample {
            count: s.count,
            seed: s.seed,
            params,
        });
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, g) in raw.groups.iter().enumerate() {
        let at = format!("groups[{i}]");
        if !valid_name(&g.name) {
            return Err(spec.err(
                &format!("{at}.name"),
                format!("{:?}: expected letters, digits, '-', '_' or '.'", g.name),
            ));
        }
        if seen.contains(&g.name.as_str()) {
            return Err(spec.err(&format!("{at}.name"), format!("group name {:?} is used twice", g.name)));
        }
        seen.push(&g.name);
        for k in g.set.keys() {
            check_param(&spec, &format!("{at}.set"), k)?;
        }
        spec.groups.push(Group {
            name: g.name.clone(),
            set: g.set.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        });
    }
    let o = &raw.outputs;
    spec.outputs = OutputsSpec {
        snapshots: match &o.snapshots {
            None => None,
            Some(s) => {
                let d = units::parse_dur(s).map_err(|e| spec.err("outputs.snapshots", e))?;
                if d.is_zero() {
                    return Err(spec.err(
                        "outputs.snapshots",
                        "expected an interval of at least 1ms (or leave the key out for no time series)",
                    ));
                }
                if let Some(why) = crate::snapshot_interval_error(d) {
                    return Err(spec.err("outputs.snapshots", why));
                }
                Some(d)
            }
        },
        report: o.report,
        packets: o.packets,
    };
    // A baseline outside the variants is refused by the plan, once it has read the
    // scenario's variants: an unknown variant in the list is said first.
    Ok(spec)
}

/// The most draws `sample.count` asks for (a campaign holds at most 10 million runs).
pub const MAX_DRAWS: u32 = 10_000_000;

/// A name that can name a directory: no separators, no leading dot, no control characters.
fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && !n.starts_with('.')
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
}

/// `seeds = N` (the seeds 1..=N) or `seeds = [a, b, ...]`.
fn seeds(spec: &Spec, v: &toml::Value) -> Result<Vec<u64>, ScenarioError> {
    const MAX: i64 = 1_000_000;
    let bad = || {
        spec.err(
            "campaign.seeds",
            "expected a number of repetitions (seeds 1..=N), such as 10, or a list of seeds, such as [1, 2, 7]",
        )
    };
    match v {
        toml::Value::Integer(n) if (1..=MAX).contains(n) => Ok((1..=*n as u64).collect()),
        toml::Value::Integer(n) => Err(spec.err("campaign.seeds", format!("{n} repetitions: expected 1 to {MAX}"))),
        toml::Value::Array(a) if !a.is_empty() => {
            let mut out = Vec::new();
            for x in a {
                let s = x.as_integer().filter(|s| *s >= 0).ok_or_else(bad)? as u64;
                if out.contains(&s) {
                    return Err(spec.err("campaign.seeds", format!("seed {s} is listed twice")));
                }
                out.push(s);
            }
            Ok(out)
        }
        _ => Err(bad()),
    }
}

/// A parameter's key path: dotted, no empty part, and not one the campaign sets itself.
fn check_param(spec: &Spec, table: &str, k: &str) -> Result<(), ScenarioError> {
    if k.split('.').any(|s| s.is_empty()) || k.split('.').count() > 32 {
        return Err(spec.err_at_param(
            table,
            k,
            "expected a dotted key path of the scenario, such as \"topology.rate\" or \"flows.<name>.cc\"",
        ));
    }
    if k == "scenario.seed" || k == "variants" || k.starts_with("variants.") {
        return Err(spec.err_at_param(
            table,
            k,
            "the campaign sets this itself: use campaign.seeds for seeds and campaign.variants for the variants",
        ));
    }
    if let Some(f) = spec.fixed().into_iter().find(|f| f.scenario_key == k) {
        // campaign.duration and campaign.warmup are set over every run's own: the value
        // here would be shown beside runs that did not have it.
        return Err(spec.err_at_param(
            table,
            k,
            format!(
                "{} sets every run's {}: leave {} out to vary it here",
                f.key, f.noun, f.key
            ),
        ));
    }
    Ok(())
}

/// `{ uniform = [lo, hi] }`, `{ log_uniform = [lo, hi] }` or `{ choice = [a, b, ...] }`.
fn dist(spec: &Spec, k: &str, t: &toml::Table) -> Result<Dist, ScenarioError> {
    let expected = "expected one of { uniform = [lo, hi] }, { log_uniform = [lo, hi] } or { choice = [a, b, ...] }";
    let e = |m: String| spec.err_at_param("sample.params", k, m);
    if t.len() != 1 {
        return Err(e(expected.to_string()));
    }
    let (kind, v) = t.iter().next().expect("one entry");
    let Some(list) = v.as_array() else {
        return Err(e(format!("{kind}: {expected}")));
    };
    match kind.as_str() {
        "choice" => {
            if list.is_empty() {
                return Err(e("choice: the list of values is empty".into()));
            }
            Ok(Dist::Choice(list.clone()))
        }
        "uniform" | "log_uniform" => {
            if list.len() != 2 {
                return Err(e(format!("{kind}: expected two bounds [lo, hi]")));
            }
            let lo = quantity(&list[0]).map_err(|m| e(format!("{kind}: {m}")))?;
            let hi = quantity(&list[1]).map_err(|m| e(format!("{kind}: {m}")))?;
            if lo.unit != hi.unit || lo.integer != hi.integer {
                return Err(e(format!(
                    "{kind}: both bounds need the same unit and type, found {} and {}",
                    list[0], list[1]
                )));
            }
            // Integers are drawn exactly up to 2^53, past which f64 skips some.
            const EXACT: f64 = 9_007_199_254_740_992.0;
            if lo.integer && (lo.value.abs() > EXACT || hi.value.abs() > EXACT) {
                return Err(e(format!(
                    "{kind}: integer bounds from -{EXACT} to {EXACT} (2^53), found [{}, {}]",
                    list[0], list[1]
                )));
            }
            if lo.value >= hi.value {
                return Err(e(format!(
                    "{kind}: the range [{}, {}] is empty: expected lo < hi",
                    list[0], list[1]
                )));
            }
            if kind == "log_uniform" {
                if lo.value <= 0.0 {
                    return Err(e(format!("log_uniform: expected bounds above zero, found {}", list[0])));
                }
                Ok(Dist::LogUniform(lo, hi))
            } else {
                Ok(Dist::Uniform(lo, hi))
            }
        }
        _ => Err(e(format!("unknown distribution {kind:?}: {expected}"))),
    }
}

/// A bound of a sampled range: a TOML number, or a string of a number and a unit.
fn quantity(v: &toml::Value) -> Result<Quantity, String> {
    match v {
        toml::Value::Integer(i) => Ok(Quantity {
            value: *i as f64,
            unit: String::new(),
            integer: true,
        }),
        toml::Value::Float(f) if f.is_finite() => Ok(Quantity {
            value: *f,
            unit: String::new(),
            integer: false,
        }),
        toml::Value::String(s) => {
            let s = s.trim();
            let end = s
                .char_indices()
                .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '-' || *c == '+'))
                .map(|(i, _)| i)
                .unwrap_or(s.len());
            let (num, unit) = s.split_at(end);
            let value: f64 = num
                .parse()
                .map_err(|_| format!("expected a number with a unit, such as \"20Mbit\" or \"5ms\", found {s:?}"))?;
            if !value.is_finite() {
                return Err(format!("expected a finite number, found {s:?}"));
            }
            Ok(Quantity {
                value,
                unit: unit.trim().to_string(),
                integer: false,
            })
        }
        other => Err(format!(
            "expected a number or a number with a unit (\"20Mbit\"), found {other}"
        )),
    }
}

/// Draw a value of `d` with `u`, a uniform number in [0, 1).
pub fn draw(d: &Dist, u: f64, pick: u64) -> toml::Value {
    match d {
        Dist::Uniform(lo, hi) => {
            if lo.integer {
                // Integers: every value of [lo, hi] equally likely.
                let n = (hi.value - lo.value) as u64 + 1;
                lo.with(lo.value + (pick % n) as f64)
            } else {
                lo.with(lo.value + u * (hi.value - lo.value))
            }
        }
        Dist::LogUniform(lo, hi) => lo.with((lo.value.ln() + u * (hi.value.ln() - lo.value.ln())).exp()),
        Dist::Choice(vals) => vals[(pick % vals.len() as u64) as usize].clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"
[campaign]
name = "c"
scenario = "s.toml"
seeds = 3

[sweep]
"topology.rate" = ["20Mbit", "50Mbit"]

[sample]
count = 4
params = { "topology.rtt" = { log_uniform = ["5ms", "80ms"] } }

[[groups]]
name = "evening"
set = { "flows.bg.rate" = "5Mbit" }
"#;

    fn parse_err(text: &str) -> ScenarioError {
        parse(text, Path::new("c.toml")).unwrap_err()
    }

    #[test]
    fn parses_a_campaign() {
        let s = parse(OK, Path::new("dir/c.toml")).unwrap();
        assert_eq!(s.seeds, vec![1, 2, 3]);
        assert_eq!(s.sweep[0].key, "topology.rate");
        assert_eq!(s.sweep[0].values.len(), 2);
        assert!(s.sweep[0].labels.is_none());
        let l = parse(
            &OK.replace(
                "\"topology.rate\" = [\"20Mbit\", \"50Mbit\"]",
                "\"topology.rate\" = { slow = \"20Mbit\", fast = \"50Mbit\" }",
            ),
            Path::new("c.toml"),
        )
        .unwrap();
        let labels = l.sweep[0].labels.clone().unwrap();
        assert_eq!(labels.len(), 2);
        assert!(labels.contains(&"slow".to_string()));
        assert_eq!(s.scenario_path(), Path::new("dir/s.toml"));
        let smp = s.sample.unwrap();
        assert_eq!(smp.count, 4);
        assert!(matches!(smp.params[0].1, Dist::LogUniform(..)));
        assert_eq!(s.groups[0].name, "evening");
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let e = parse_err(&OK.replace("\"50Mbit\"]", "\"20Mbit\"]"));
        assert_eq!(e.key, "sweep.\"topology.rate\"");
        assert_eq!(e.line, Some(8));
        assert!(e.message.contains("listed twice"), "{e}");
        let e = parse_err(&OK.replace("[\"5ms\", \"80ms\"]", "[\"80ms\", \"5ms\"]"));
        assert_eq!(e.key, "sample.params.\"topology.rtt\"");
        assert!(e.message.contains("is empty"), "{e}");
        let e = parse_err(&OK.replace("[\"5ms\", \"80ms\"]", "[\"5ms\", 80]"));
        assert!(e.message.contains("same unit"), "{e}");
        let e = parse_err(&OK.replace("seeds = 3", "seeds = 0"));
        assert_eq!((e.key.as_str(), e.line), ("campaign.seeds", Some(5)));
        let e = parse_err(&OK.replace("seeds = 3", "seeds = \"x\""));
        assert!(e.message.contains("list of seeds"), "{e}");
        let e = parse_err(&OK.replace("name = \"c\"", "name = \"../x\""));
        assert_eq!(e.key, "campaign.name");
        let e = parse_err(&OK.replace("count = 4", "count = 4\nbogus = 1"));
        assert_eq!(e.key, "sample.bogus");
        assert!(e.message.contains("unknown field"), "{e}");
        let e = parse_err(&OK.replace("\"topology.rate\" = [", "\"scenario.seed\" = ["));
        assert!(e.message.contains("campaign.seeds"), "{e}");
        let e = parse_err(&OK.replace("\"flows.bg.rate\"", "\"flows..rate\""));
        assert_eq!(e.key, "groups[0].set.\"flows..rate\"");
        assert_eq!(e.line, Some(16));
        let e = parse_err("[campaign]\nname = \"c\"\n");
        assert!(e.message.contains("required key `scenario`"), "{e}");
    }

    #[test]
    fn scaling_multiplies_the_draws_or_else_the_seeds() {
        let s = parse(OK, Path::new("c.toml")).unwrap().scaled(250).unwrap();
        assert_eq!(s.sample.as_ref().unwrap().count, 1000);
        assert_eq!(s.name, "c-x250");
        let no_sample = OK.split("[sample]").next().unwrap();
        let s = parse(no_sample, Path::new("c.toml")).unwrap().scaled(3).unwrap();
        assert_eq!(s.seeds, (1..=9).collect::<Vec<u64>>());
        assert!(parse(OK, Path::new("c.toml")).unwrap().scaled(0).is_err());
    }

    #[test]
    fn draws_stay_in_their_range_with_their_unit() {
        let s = parse(OK, Path::new("c.toml")).unwrap();
        let d = &s.sample.unwrap().params[0].1;
        for i in 0..100 {
            let v = draw(d, i as f64 / 100.0, i);
            let ms = units::parse_dur(v.as_str().unwrap()).unwrap().as_secs_f64() * 1e3;
            assert!((5.0..80.0).contains(&ms), "{v}");
        }
        let ints = Dist::Uniform(
            quantity(&toml::Value::Integer(2)).unwrap(),
            quantity(&toml::Value::Integer(4)).unwrap(),
        );
        let got: Vec<i64> = (0..6).map(|i| draw(&ints, 0.0, i).as_integer().unwrap()).collect();
        assert_eq!(got, vec![2, 3, 4, 2, 3, 4]);
        assert_eq!(round_sig(37.123456789, 6), 37.1235);
    }
}
