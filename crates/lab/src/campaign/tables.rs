//! The campaign's tables, built from the store alone (its plan and its runs' summaries):
//!
//! * `index.parquet`: one row per completed run of the plan: its labels (`run`, `point`,
//!   `pair`, `seed`, `variant`, `order`, `group`, `sample`), one column per parameter
//!   (numbers in bit/s, seconds or bytes when every value has such a unit, otherwise the
//!   text), then the key metrics of every flow, queue and traffic class
//!   ([`metrics`]).
//! * `pairs.parquet`: one row per pair and metric: a variant's value, the baseline
//!   variant's value in the same pair, and their difference (`value - baseline_value`).
//!
//! Both read as they are in pandas and polars.

use super::plan::Plan;
use super::store::{load_summary, run_dir};
use crate::Error;
use arrow_array::builder::{Float64Builder, StringBuilder, UInt32Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use l4s_core::units;
use l4s_metrics::hist::Percentiles;
use l4s_metrics::summary::Summary;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The tables written, and their rows.
#[derive(Clone, Debug)]
pub struct Tables {
    pub index: PathBuf,
    pub pairs: PathBuf,
    pub index_rows: usize,
    pub pair_rows: usize,
}

/// The key metrics of a run, as `(column, value)`: per flow `flow.<name>.<metric>`, per
/// queue `queue.<name>.<metric>`, per class `class.<L4S|classic>.<metric>`. Delays in ms,
/// rates in bit/s, fractions in [0, 1].
pub fn metrics(s: &Summary) -> Vec<(String, f64)> {
    let mut m = Vec::new();
    let mut put = |k: String, v: f64| m.push((k, v));
    fn pct(put: &mut dyn FnMut(String, f64), p: &str, name: &str, x: &Percentiles) {
        if x.count == 0 {
            return;
        }
        put(format!("{p}.{name}_mean_ms"), x.mean);
        put(format!("{p}.{name}_p50_ms"), x.p50);
        put(format!("{p}.{name}_p90_ms"), x.p90);
        put(format!("{p}.{name}_p99_ms"), x.p99);
        put(format!("{p}.{name}_p999_ms"), x.p999);
        put(format!("{p}.{name}_max_ms"), x.max);
    }
    for f in &s.flows {
        let p = format!("flow.{}", f.name);
        put(format!("{p}.throughput_bps"), f.throughput_bps);
        put(format!("{p}.goodput_bps"), f.goodput_bps);
        pct(&mut put, &p, "owd", &f.owd_ms);
        if let Some(r) = &f.rtt_ms {
            pct(&mut put, &p, "rtt", r);
        }
        put(format!("{p}.loss_fraction"), f.loss_fraction);
        put(format!("{p}.ce_fraction"), f.ce_fraction);
        put(format!("{p}.retransmits"), f.retransmits as f64);
        put(
            format!("{p}.ecn_validation_failed"),
            if f.ecn_validation == "failed" { 1.0 } else { 0.0 },
        );
        if let Some(md) = &f.media {
            pct(&mut put, &p, "frame_delay", &md.frame_delay_ms);
            put(format!("{p}.bad_frame_fraction"), md.bad_frame_fraction);
            put(format!("{p}.stall_fraction"), md.stall_fraction);
            put(format!("{p}.received_fps"), md.received_fps);
            put(format!("{p}.target_bitrate_mean_bps"), md.target_bitrate_mean_bps);
        }
        if let Some(a) = &f.app {
            for (kind, c) in &a.completions {
                put(format!("{p}.{kind}_count"), c.count as f64);
                pct(&mut put, &p, &format!("{kind}_time"), &c.time_ms);
            }
        }
    }
    for q in &s.queues {
        let p = format!("queue.{}", q.name);
        put(format!("{p}.utilization"), q.utilization);
        pct(&mut put, &p, "sojourn", &q.sojourn_ms);
        put(format!("{p}.drops"), q.drops as f64);
        put(format!("{p}.marks"), q.marks as f64);
        for (sub, sq) in &q.subqueues {
            if q.subqueues.len() > 1 {
                pct(&mut put, &format!("{p}.{sub}"), "sojourn", &sq.sojourn_ms);
            }
        }
    }
    for c in &s.classes {
        let p = format!("class.{}", c.class);
        put(format!("{p}.throughput_bps"), c.throughput_bps);
        pct(&mut put, &p, "owd", &c.owd_ms);
    }
    m
}

/// A parameter's values as numbers in SI units (bit/s, s, bytes, or the number itself),
/// when every value is one of the same kind.
pub(crate) fn numeric(values: &[&str]) -> Option<Vec<f64>> {
    let plain: Option<Vec<f64>> = values.iter().map(|v| v.parse::<f64>().ok()).collect();
    if plain.is_some() {
        return plain;
    }
    let inner: Option<Vec<&str>> = values
        .iter()
        .map(|v| v.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
        .collect();
    let inner = inner?;
    let by = |f: &dyn Fn(&str) -> Option<f64>| inner.iter().map(|v| f(v)).collect::<Option<Vec<f64>>>();
    // A rate says "bit", "bps" or "Bps" (or "/s"); a bare "kB" is a size.
    let rate_unit = |v: &str| v.contains("bit") || v.contains("bps") || v.contains("Bps") || v.ends_with("/s");
    by(&|v| units::parse_dur(v).ok().map(|d| d.as_secs_f64()))
        .or_else(|| {
            by(&|v| {
                rate_unit(v)
                    .then(|| units::parse_rate(v).ok().map(|r| r.0 as f64))
                    .flatten()
            })
        })
        .or_else(|| by(&|v| units::parse_bytes(v).ok().map(|b| b as f64)))
}

/// The text of a TOML value as a cell: a string without its quotes.
pub(crate) fn text_cell(v: &str) -> String {
    match v.parse::<toml::Value>() {
        Ok(toml::Value::String(s)) => s,
        _ => match format!("x = {v}").parse::<toml::Table>() {
            Ok(t) => match t.get("x") {
                Some(toml::Value::String(s)) => s.clone(),
                _ => v.to_string(),
            },
            Err(_) => v.to_string(),
        },
    }
}

/// One column of parameter values per point.
enum ParamCol {
    Num(Vec<f64>),
    Text(Vec<String>),
}

fn param_columns(plan: &Plan) -> Vec<ParamCol> {
    (0..plan.params.len())
        .map(|i| {
            let vals: Vec<&str> = plan.points.iter().map(|p| p.values[i].as_str()).collect();
            match numeric(&vals) {
                Some(n) => ParamCol::Num(n),
                None => ParamCol::Text(vals.iter().map(|v| text_cell(v)).collect()),
            }
        })
        .collect()
}

/// Build `index.parquet` and `pairs.parquet` in the store `dir` from its completed runs.
pub fn write(dir: &Path, plan: &Plan) -> Result<Tables, Error> {
    // Each distinct run's metrics, read once.
    let mut cols: Vec<String> = Vec::new();
    let mut col_of: HashMap<String, usize> = HashMap::new();
    let mut by_key: HashMap<&str, Vec<(usize, f64)>> = HashMap::new();
    for r in plan.unique_runs() {
        if !run_dir(dir, &r.key).join("summary.json").is_file() {
            continue;
        }
        let s = load_summary(dir, &r.key).map_err(Error::output)?;
        let row = metrics(&s)
            .into_iter()
            .map(|(k, v)| {
                let n = cols.len();
                let i = *col_of.entry(k.clone()).or_insert(n);
                if i == n {
                    cols.push(k);
                }
                (i, v)
            })
            .collect();
        by_key.insert(r.key.as_str(), row);
    }
    let params = param_columns(plan);
    let done: Vec<&super::plan::PlannedRun> = plan
        .runs
        .iter()
        .filter(|r| by_key.contains_key(r.key.as_str()))
        .collect();

    // index.parquet
    let mut fields = vec![
        Field::new("run", DataType::Utf8, false),
        Field::new("point", DataType::UInt32, false),
        Field::new("pair", DataType::UInt32, false),
        Field::new("seed", DataType::UInt64, false),
        Field::new("variant", DataType::Utf8, false),
        Field::new("order", DataType::UInt32, false),
        Field::new("group", DataType::Utf8, true),
        Field::new("sample", DataType::UInt32, true),
    ];
    let mut arrays: Vec<ArrayRef> = vec![
        strings(done.iter().map(|r| Some(r.key.as_str()))),
        u32s(done.iter().map(|r| Some(r.point))),
        u32s(done.iter().map(|r| Some(r.pair))),
        Arc::new(done.iter().map(|r| r.seed).collect::<arrow_array::UInt64Array>()),
        strings(done.iter().map(|r| Some(plan.variants[r.variant as usize].as_str()))),
        u32s(done.iter().map(|r| Some(r.order as u32))),
        strings(done.iter().map(|r| plan.points[r.point as usize].group.as_deref())),
        u32s(done.iter().map(|r| plan.points[r.point as usize].sample)),
    ];
    push_params(plan, &params, &mut fields, &mut arrays, done.iter().map(|r| r.point));
    let mut dense = vec![vec![None; done.len()]; cols.len()];
    for (row, r) in done.iter().enumerate() {
        for &(c, v) in &by_key[r.key.as_str()] {
            dense[c][row] = Some(v);
        }
    }
    for (c, name) in cols.iter().enumerate() {
        fields.push(Field::new(name, DataType::Float64, true));
        let mut b = Float64Builder::with_capacity(done.len());
        for v in &dense[c] {
            b.append_option(*v);
        }
        arrays.push(Arc::new(b.finish()));
    }
    let index = dir.join("index.parquet");
    write_parquet(&index, fields, arrays)?;

    // pairs.parquet: every variant against the baseline of the same pair.
    let mut pair_runs: HashMap<u32, Vec<&super::plan::PlannedRun>> = HashMap::new();
    for r in &done {
        pair_runs.entry(r.pair).or_default().push(r);
    }
    let mut pairs: Vec<u32> = pair_runs.keys().copied().collect();
    pairs.sort();
    struct Row<'a> {
        run: &'a super::plan::PlannedRun,
        metric: usize,
        value: f64,
        base: f64,
    }
    let mut rows: Vec<Row> = Vec::new();
    if let Some(b) = plan.baseline {
        for p in &pairs {
            let runs = &pair_runs[p];
            let Some(base) = runs.iter().find(|r| r.variant == b) else {
                continue;
            };
            let base_m: HashMap<usize, f64> = by_key[base.key.as_str()].iter().copied().collect();
            let mut others: Vec<&&super::plan::PlannedRun> = runs.iter().filter(|r| r.variant != b).collect();
            others.sort_by_key(|r| r.variant);
            for r in others {
                for &(c, v) in &by_key[r.key.as_str()] {
                    if let Some(&bv) = base_m.get(&c) {
                        rows.push(Row {
                            run: r,
                            metric: c,
                            value: v,
                            base: bv,
                        });
                    }
                }
            }
        }
    }
    let mut fields = vec![
        Field::new("pair", DataType::UInt32, false),
        Field::new("point", DataType::UInt32, false),
        Field::new("seed", DataType::UInt64, false),
        Field::new("group", DataType::Utf8, true),
        Field::new("sample", DataType::UInt32, true),
    ];
    let mut arrays: Vec<ArrayRef> = vec![
        u32s(rows.iter().map(|x| Some(x.run.pair))),
        u32s(rows.iter().map(|x| Some(x.run.point))),
        Arc::new(rows.iter().map(|x| x.run.seed).collect::<arrow_array::UInt64Array>()),
        strings(rows.iter().map(|x| plan.points[x.run.point as usize].group.as_deref())),
        u32s(rows.iter().map(|x| plan.points[x.run.point as usize].sample)),
    ];
    push_params(
        plan,
        &params,
        &mut fields,
        &mut arrays,
        rows.iter().map(|x| x.run.point),
    );
    let base_name = plan.baseline.map(|b| plan.variants[b as usize].as_str());
    fields.extend([
        Field::new("variant", DataType::Utf8, false),
        Field::new("baseline", DataType::Utf8, false),
        Field::new("metric", DataType::Utf8, false),
        Field::new("value", DataType::Float64, false),
        Field::new("baseline_value", DataType::Float64, false),
        Field::new("difference", DataType::Float64, false),
    ]);
    arrays.extend([
        strings(
            rows.iter()
                .map(|x| Some(plan.variants[x.run.variant as usize].as_str())),
        ),
        strings(rows.iter().map(|_| base_name)),
        strings(rows.iter().map(|x| Some(cols[x.metric].as_str()))),
        f64s(rows.iter().map(|x| x.value)),
        f64s(rows.iter().map(|x| x.base)),
        f64s(rows.iter().map(|x| x.value - x.base)),
    ]);
    let pairs_path = dir.join("pairs.parquet");
    write_parquet(&pairs_path, fields, arrays)?;
    Ok(Tables {
        index,
        pairs: pairs_path,
        index_rows: done.len(),
        pair_rows: rows.len(),
    })
}

fn strings<'a>(it: impl Iterator<Item = Option<&'a str>>) -> ArrayRef {
    let mut b = StringBuilder::new();
    for s in it {
        b.append_option(s);
    }
    Arc::new(b.finish())
}

fn u32s(it: impl Iterator<Item = Option<u32>>) -> ArrayRef {
    let mut b = UInt32Builder::new();
    for v in it {
        b.append_option(v);
    }
    Arc::new(b.finish())
}

fn f64s(it: impl Iterator<Item = f64>) -> ArrayRef {
    Arc::new(it.collect::<arrow_array::Float64Array>())
}

/// The parameter columns of rows that belong to the points `points`.
fn push_params(
    plan: &Plan,
    params: &[ParamCol],
    fields: &mut Vec<Field>,
    arrays: &mut Vec<ArrayRef>,
    points: impl Iterator<Item = u32> + Clone,
) {
    for (name, col) in plan.params.iter().zip(params) {
        match col {
            ParamCol::Num(v) => {
                fields.push(Field::new(name, DataType::Float64, false));
                arrays.push(f64s(points.clone().map(|p| v[p as usize])));
            }
            ParamCol::Text(v) => {
                fields.push(Field::new(name, DataType::Utf8, false));
                arrays.push(strings(points.clone().map(|p| Some(v[p as usize].as_str()))));
            }
        }
    }
}

/// Write a table as Parquet (Snappy), complete or not at all.
fn write_parquet(path: &Path, fields: Vec<Field>, arrays: Vec<ArrayRef>) -> Result<(), Error> {
    let fail = |e: String| Error::output(format!("cannot write {}: {e}", path.display()));
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|e| fail(e.to_string()))?;
    let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, schema, Some(props)).map_err(|e| fail(e.to_string()))?;
    w.write(&batch).map_err(|e| fail(e.to_string()))?;
    w.close().map_err(|e| fail(e.to_string()))?;
    l4s_metrics::results::write_file_atomic(path, &buf).map_err(|e| fail(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn parameters_become_numbers_in_si_units_when_they_can() {
        assert_eq!(numeric(&["\"20Mbit\"", "\"1Gbit\""]), Some(vec![20e6, 1e9]));
        assert_eq!(numeric(&["\"10ms\"", "\"1s\""]), Some(vec![0.01, 1.0]));
        assert_eq!(numeric(&["2", "2.5"]), Some(vec![2.0, 2.5]));
        assert_eq!(numeric(&["\"prague\"", "\"cubic\""]), None);
        assert_eq!(numeric(&["\"10ms\"", "\"20Mbit\""]), None);
        assert_eq!(numeric(&["\"64kB\"", "\"1MB\""]), Some(vec![64e3, 1e6]));
        assert_eq!(numeric(&["\"1MBps\""]), Some(vec![8e6]));
        assert_eq!(text_cell("\"prague\""), "prague");
        assert_eq!(text_cell("{ kind = \"fifo\" }"), "{ kind = \"fifo\" }");
    }
}
