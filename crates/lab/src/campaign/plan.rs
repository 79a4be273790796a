//! From a campaign file to its plan: the points (a combination of swept values, a draw of
//! the sampled parameters and a group), the scenario text of every point and variant, and
//! one run per point, seed and variant, each with the key of its effective scenario.
//!
//! Every scenario of the plan is validated before anything runs; a value that makes the
//! scenario invalid is reported at its key in the campaign file.

use super::spec::{self, Spec};
use l4s_core::Rng;
use l4s_scenario::{set_path, ScenarioError};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use toml_edit::DocumentMut;

/// One point of the campaign: the values of its parameters and its labels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The group's name, if the campaign has `[[groups]]`.
    pub group: Option<String>,
    /// Which draw of `[sample]` ("which home"), if the campaign samples.
    pub sample: Option<u32>,
    /// The values of [`Plan::params`], in order, as TOML text (`"20Mbit"`, `40`).
    pub values: Vec<String>,
}

/// One run: a variant of a point with a seed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedRun {
    /// Digest of the effective scenario, the seed and what the run keeps: its folder in
    /// the store. Two runs of a plan with the same key are one run.
    pub key: String,
    pub point: u32,
    /// The pair (a point and a seed): its variants run back to back.
    pub pair: u32,
    pub seed: u64,
    /// Index into [`Plan::variants`].
    pub variant: u16,
    /// Position within its pair: the order alternates from pair to pair.
    pub order: u16,
}

/// The plan of a campaign, as kept in the store (`plan.json`): enough to say what is done
/// and to build the tables without the campaign file.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Plan {
    pub format: u32,
    pub name: String,
    pub description: String,
    pub campaign_file: String,
    pub scenario_file: String,
    /// The swept, then the sampled parameters (key paths of the scenario).
    pub params: Vec<String>,
    /// How many of `params` are swept (the first ones).
    #[serde(default)]
    pub swept: usize,
    /// Variant names; `[""]` for a scenario without variants.
    pub variants: Vec<String>,
    /// Index into `variants` of the variant the others are compared with.
    pub baseline: Option<u16>,
    pub seeds: Vec<u64>,
    pub points: Vec<Point>,
    pub runs: Vec<PlannedRun>,
    /// What `campaign.html` shows by default (the campaign's `metrics`); not part of the
    /// digest: it changes no run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<String>,
    /// Digest of all of the above but `metrics`: what makes two campaigns the same campaign.
    pub digest: String,
    /// The scenario text of each point and variant (`point * variants + variant`), with
    /// the campaign's keys set; a run sets its seed in it.
    #[serde(skip)]
    pub templates: Vec<String>,
}

pub const FORMAT: u32 = 1;

impl Plan {
    /// The effective scenario text of a run: its template with `scenario.seed` set.
    pub fn run_text(&self, r: &PlannedRun) -> String {
        let t = &self.templates[r.point as usize * self.variants.len() + r.variant as usize];
        let mut doc: DocumentMut = t.parse().expect("templates are validated TOML");
        set_path(&mut doc, "scenario.seed", toml_edit::value(r.seed as i64)).expect("scenario is a table");
        doc.to_string()
    }
    /// The keys of the plan, each once, in plan order.
    pub fn unique_runs(&self) -> Vec<&PlannedRun> {
        let mut seen = std::collections::HashSet::new();
        self.runs.iter().filter(|r| seen.insert(r.key.as_str())).collect()
    }
}

/// Expand a validated campaign into its plan, validating every scenario it runs.
pub fn build(spec: &Spec) -> Result<Plan, ScenarioError> {
    let scen_path = spec.scenario_path();
    let scen_text = std::fs::read_to_string(&scen_path).map_err(|e| {
        spec.err(
            "campaign.scenario",
            format!("cannot read the scenario file {}: {e}", scen_path.display()),
        )
    })?;
    // The scenario itself first: its own errors are its own.
    let base: DocumentMut = match scen_text.parse() {
        Ok(d) => d,
        Err(_) => {
            l4s_scenario::load_str(&scen_text, &scen_path)?;
            unreachable!("the loader refuses text that is not TOML")
        }
    };
    let mut base_variants = l4s_scenario::variant_texts(base.clone(), &scen_path)?;
    for (_, t) in &base_variants {
        l4s_scenario::load_str(t, &scen_path)?;
    }
    let all: Vec<String> = base_variants
        .iter()
        .map(|(n, _)| n.clone().unwrap_or_default())
        .collect();
    let chosen: Vec<usize> = match &spec.variants {
        None => (0..all.len()).collect(),
        Some(v) => {
            if all == [""] {
                return Err(spec.err(
                    "campaign.variants",
                    format!("{} has no [[variants]]", scen_path.display()),
                ));
            }
            let mut idx = Vec::new();
            for n in v {
                let i = all.iter().position(|a| a == n).ok_or_else(|| {
                    spec.err(
                        "campaign.variants",
                        format!(
                            "{} has no variant {n:?}; expected one of {}",
                            scen_path.display(),
                            all.join(", ")
                        ),
                    )
                })?;
                if idx.contains(&i) {
                    return Err(spec.err("campaign.variants", format!("variant {n:?} is listed twice")));
                }
                idx.push(i);
            }
            idx.sort();
            idx
        }
    };
    base_variants = chosen.iter().map(|&i| base_variants[i].clone()).collect();
    let variants: Vec<String> = base_variants
        .iter()
        .map(|(n, _)| n.clone().unwrap_or_default())
        .collect();
    let baseline = match &spec.baseline {
        None if variants.len() > 1 => {
            return Err(spec.err(
                "campaign.baseline",
                format!(
                    "required with several variants: name the variant the others are compared with, one of {}",
                    variants.join(", ")
                ),
            ))
        }
        None => None,
        Some(_) if all == [""] => {
            return Err(spec.err(
                "campaign.baseline",
                format!(
                    "{} has no [[variants]] to compare: leave campaign.baseline out",
                    scen_path.display()
                ),
            ))
        }
        Some(b) => Some(variants.iter().position(|v| v == b).ok_or_else(|| {
            spec.err(
                "campaign.baseline",
                format!(
                    "{b:?} is not a variant of this campaign; expected one of {}",
                    variants.join(", ")
                ),
            )
        })? as u16),
    };

    // The points: the grid, then the draws, then the groups.
    let mut params: Vec<String> = spec.sweep.iter().map(|w| w.key.clone()).collect();
    let mut tables: Vec<String> = vec!["sweep".into(); params.len()];
    if let Some(s) = &spec.sample {
        params.extend(s.params.iter().map(|(k, _)| k.clone()));
        tables.extend(s.params.iter().map(|_| "sample.params".to_string()));
    }
    let groups: Vec<Option<usize>> = if spec.groups.is_empty() {
        vec![None]
    } else {
        (0..spec.groups.len()).map(Some).collect()
    };
    let count = spec.sample.as_ref().map_or(1, |s| u64::from(s.count));
    // Counted before the grid and the draws are made, which a typo could make too large
    // to hold.
    let cells = spec
        .sweep
        .iter()
        .fold(1u64, |n, w| n.saturating_mul(w.values.len() as u64));
    let total = [count, groups.len() as u64, spec.seeds.len() as u64]
        .iter()
        .fold(cells, |n, &k| n.saturating_mul(k));
    const MAX_RUNS: u64 = 10_000_000;
    let runs_asked = total.saturating_mul(variants.len() as u64);
    if runs_asked > MAX_RUNS {
        let n = match runs_asked {
            u64::MAX => "more than 10^19".to_string(),
            n => n.to_string(),
        };
        return Err(spec.err(
            "campaign",
            format!("{n} runs: a campaign holds at most {MAX_RUNS}; split it into several"),
        ));
    }
    let grid = grid(&spec.sweep);
    let draws: Vec<Option<(u32, Vec<toml::Value>)>> = match &spec.sample {
        None => vec![None],
        Some(s) => (0..s.count)
            .map(|i| {
                let vals = s
                    .params
                    .iter()
                    .enumerate()
                    .map(|(j, (_, d))| {
                        let mut rng = Rng::derive(s.seed, ((i as u64) << 16) | j as u64);
                        let u = rng.next_f64();
                        spec::draw(d, u, rng.next_u64())
                    })
                    .collect();
                Some((i, vals))
            })
            .collect(),
    };
    let mut points = Vec::new();
    let mut templates = Vec::new();
    let mut runs = Vec::new();
    for cell in &grid {
        for draw in &draws {
            for g in &groups {
                // (parameter, value, how the point shows it: the label of a labelled value)
                let mut values: Vec<(usize, toml::Value, String)> = cell
                    .iter()
                    .enumerate()
                    .map(|(j, &k)| {
                        let w = &spec.sweep[j];
                        let shown = match &w.labels {
                            Some(l) => toml::Value::String(l[k].clone()).to_string(),
                            None => w.values[k].to_string(),
                        };
                        (j, w.values[k].clone(), shown)
                    })
                    .collect();
                if let Some((_, vals)) = draw {
                    values.extend(
                        vals.iter()
                            .enumerate()
                            .map(|(j, v)| (cell.len() + j, v.clone(), v.to_string())),
                    );
                }
                let mut sets: Vec<(String, String, toml::Value)> = values
                    .iter()
                    .map(|(i, v, _)| (tables[*i].clone(), params[*i].clone(), v.clone()))
                    .collect();
                if let Some(gi) = g {
                    let grp = &spec.groups[*gi];
                    sets.extend(
                        grp.set
                            .iter()
                            .map(|(k, v)| (format!("groups[{gi}].set"), k.clone(), v.clone())),
                    );
                }
                let texts = point_texts(spec, &base, &chosen, &sets, &scen_path)?;
                let p = points.len() as u32;
                let mut keys = Vec::new();
                for t in &texts {
                    let sc =
                        l4s_scenario::load_str(t, &scen_path).map_err(|e| blame(spec, &base, &sets, &scen_path, e))?;
                    keys.push(template_digest(t, &sc, &spec.outputs));
                }
                templates.extend(texts);
                points.push(Point {
                    group: g.map(|i| spec.groups[i].name.clone()),
                    sample: draw.as_ref().map(|(i, _)| *i),
                    values: values.into_iter().map(|(_, _, shown)| shown).collect(),
                });
                for seed in &spec.seeds {
                    let pair = runs.len() as u32 / variants.len() as u32;
                    let n = variants.len();
                    for o in 0..n {
                        // Alternate the order pair by pair: l4s first, then classic first.
                        let v = if pair % 2 == 1 { n - 1 - o } else { o };
                        runs.push(PlannedRun {
                            key: run_key(&keys[v], *seed),
                            point: p,
                            pair,
                            seed: *seed,
                            variant: v as u16,
                            order: o as u16,
                        });
                    }
                }
            }
        }
    }
    let mut plan = Plan {
        format: FORMAT,
        name: spec.name.clone(),
        description: spec.description.clone(),
        campaign_file: spec.file.display().to_string(),
        scenario_file: scen_path.display().to_string(),
        swept: spec.sweep.len(),
        params,
        variants,
        baseline,
        seeds: spec.seeds.clone(),
        points,
        runs,
        metrics: spec.metrics.clone(),
        digest: String::new(),
        templates,
    };
    plan.digest = plan_digest(&plan);
    Ok(plan)
}

/// Every combination of the swept values, as indices into each key's values (one empty
/// combination without a sweep).
fn grid(sweep: &[super::spec::Sweep]) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new()];
    for w in sweep {
        out = out
            .iter()
            .flat_map(|c| {
                (0..w.values.len()).map(move |k| {
                    let mut c = c.clone();
                    c.push(k);
                    c
                })
            })
            .collect();
    }
    out
}

/// The texts of the chosen variants of the scenario with the campaign's keys set.
fn point_texts(
    spec: &Spec,
    base: &DocumentMut,
    chosen: &[usize],
    sets: &[(String, String, toml::Value)],
    scen_path: &std::path::Path,
) -> Result<Vec<String>, ScenarioError> {
    let mut doc = base.clone();
    for (table, key, v) in sets {
        set_path(&mut doc, key, to_item(v)).map_err(|m| spec.err_at_param(table, key, m))?;
    }
    let all = l4s_scenario::variant_texts(doc, scen_path)?;
    // The campaign's duration and warm-up hold for every run, over a variant's own `set`
    // (as `l4s run --duration` does): a pair compares runs of one length.
    let fixed = spec.fixed();
    chosen
        .iter()
        .map(|&i| {
            let text = &all[i].1;
            let Some(first) = fixed.first() else {
                return Ok(text.clone());
            };
            let mut v: DocumentMut = text.parse().map_err(|e| spec.err(first.key, format!("{e}")))?;
            for f in &fixed {
                set_path(&mut v, f.scenario_key, toml_edit::value(f.value)).map_err(|m| spec.err(f.key, m))?;
            }
            Ok(v.to_string())
        })
        .collect()
}

/// A TOML value as an item that `set_path` can place.
fn to_item(v: &toml::Value) -> toml_edit::Item {
    // Through text: toml's and toml_edit's values are the same TOML.
    let text = v.to_string();
    match text.parse::<toml_edit::Value>() {
        Ok(v) => toml_edit::Item::Value(v),
        Err(_) => toml_edit::Item::None,
    }
}

/// A point's scenario is invalid: blame the first of its values that is invalid on its own
/// (at its key in the campaign file), or else their combination.
fn blame(
    spec: &Spec,
    base: &DocumentMut,
    sets: &[(String, String, toml::Value)],
    scen_path: &std::path::Path,
    e: ScenarioError,
) -> ScenarioError {
    let all: Vec<usize> = (0..l4s_scenario::variant_texts(base.clone(), scen_path).map_or(1, |v| v.len())).collect();
    let invalid_with =
        |spec: &Spec, sets: &[(String, String, toml::Value)]| match point_texts(spec, base, &all, sets, scen_path) {
            Err(e) => Some(e),
            Ok(texts) => texts.iter().find_map(|t| l4s_scenario::load_str(t, scen_path).err()),
        };
    let invalid = |sets: &[(String, String, toml::Value)]| invalid_with(spec, sets);
    // The campaign's duration or warm-up, when the point is valid without it: the duration
    // must be longer than the point's warm-up and its flows' starts, the warm-up shorter
    // than its duration, which the point's own values may set.
    for f in spec.fixed() {
        let mut own = spec.clone();
        match f.scenario_key {
            "scenario.duration" => own.duration = None,
            _ => own.warmup = None,
        }
        if invalid_with(&own, sets).is_none() {
            let with = match sets {
                [] => String::new(),
                _ => format!(
                    " with {}",
                    sets.iter()
                        .map(|(_, k, v)| format!("{k} = {v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            return spec.err(f.key, format!("{:?} makes the scenario invalid{with}: {e}", f.value));
        }
    }
    if sets.is_empty() {
        return e;
    }
    // A value on its own, when it alone gives the point's error (another value alone may
    // fail for a reason the point does not have: a duration shorter than the file's
    // warm-up that the point's own warm-up fits).
    for (i, (table, key, v)) in sets.iter().enumerate() {
        if let Some(inner) = invalid(&sets[i..=i]) {
            if inner.key == e.key && inner.message == e.message {
                return spec.err_at_param(table, key, format!("the value {v} makes the scenario invalid: {inner}"));
            }
        }
    }
    let list: Vec<String> = sets.iter().map(|(_, k, v)| format!("{k} = {v}")).collect();
    let (table, key, _) = &sets[0];
    spec.err_at_param(
        table,
        key,
        format!("together, {} make the scenario invalid: {e}", list.join(", ")),
    )
}

/// The digest of a template: its canonical TOML without the seed, what the run keeps, and
/// the content of every trace it reads from a file (a path names a file, not its content).
fn template_digest(text: &str, sc: &l4s_scenario::Scenario, outputs: &spec::OutputsSpec) -> Vec<u8> {
    let mut h = Sha256::new();
    if let Ok(toml::Value::Table(mut t)) = text.parse::<toml::Table>().map(toml::Value::Table) {
        if let Some(toml::Value::Table(s)) = t.get_mut("scenario") {
            s.remove("seed");
        }
        let mut c = String::new();
        canonical(&toml::Value::Table(t), &mut c);
        h.update(c.as_bytes());
    }
    h.update(
        format!(
            "\n#outputs snapshots={:?} report={} packets={}\n",
            outputs.snapshots.map(|d| d.0),
            outputs.report,
            outputs.packets
        )
        .as_bytes(),
    );
    for l in &sc.links {
        if let (None, Some(t)) = (&l.capacity, &l.trace) {
            h.update(format!("#trace {}:", l.name).as_bytes());
            for ms in t.times_ms() {
                h.update(ms.to_le_bytes());
            }
        }
    }
    h.finalize().to_vec()
}

/// The key of a run: its template's digest and its seed, 128 bits in hex.
fn run_key(template: &[u8], seed: u64) -> String {
    let mut h = Sha256::new();
    h.update(template);
    h.update(seed.to_le_bytes());
    hex(&h.finalize()[..16])
}

fn plan_digest(p: &Plan) -> String {
    let mut h = Sha256::new();
    let mut v = serde_json::to_value(p).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        for k in [
            "digest",
            "campaign_file",
            "scenario_file",
            "description",
            "metrics",
            "swept",
        ] {
            o.remove(k);
        }
    }
    h.update(v.to_string().as_bytes());
    hex(&h.finalize()[..16])
}

pub(crate) fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// TOML in one canonical text: keys sorted, floats exact, strings escaped as JSON.
fn canonical(v: &toml::Value, out: &mut String) {
    match v {
        toml::Value::Table(t) => {
            let mut keys: Vec<&String> = t.keys().collect();
            keys.sort();
            out.push('{');
            for k in keys {
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
                out.push(':');
                canonical(&t[k], out);
                out.push(',');
            }
            out.push('}');
        }
        toml::Value::Array(a) => {
            out.push('[');
            for x in a {
                canonical(x, out);
                out.push(',');
            }
            out.push(']');
        }
        toml::Value::String(s) => out.push_str(&serde_json::to_string(s).unwrap_or_default()),
        toml::Value::Integer(i) => {
            let _ = write!(out, "i{i}");
        }
        toml::Value::Float(f) => {
            let _ = write!(out, "f{f:?}");
        }
        toml::Value::Boolean(b) => {
            let _ = write!(out, "{b}");
        }
        toml::Value::Datetime(d) => {
            let _ = write!(out, "d{d}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_text_ignores_layout_and_key_order() {
        let a: toml::Table = "b = 1\na = { y = 2.5, x = \"s\" }".parse().unwrap();
        let b: toml::Table = "[a]\nx = \"s\"\ny = 2.5\n\n# a comment\n[c]\n".parse().unwrap();
        let mut b2 = b.clone();
        b2.remove("c");
        b2.insert("b".into(), toml::Value::Integer(1));
        let (mut ca, mut cb) = (String::new(), String::new());
        canonical(&toml::Value::Table(a), &mut ca);
        canonical(&toml::Value::Table(b2), &mut cb);
        assert_eq!(ca, cb);
        assert_eq!(ca, "{\"a\":{\"x\":\"s\",\"y\":f2.5,},\"b\":i1,}");
    }

    #[test]
    fn grid_is_every_combination() {
        let w = |k: &str, n: i64| super::super::spec::Sweep {
            key: k.into(),
            values: (0..n).map(toml::Value::from).collect(),
            labels: None,
        };
        let g = grid(&[w("a", 2), w("b", 3)]);
        assert_eq!(g.len(), 6);
        assert_eq!(g[1], vec![0, 1]);
        assert_eq!(grid(&[]), vec![Vec::<usize>::new()]);
    }
}
