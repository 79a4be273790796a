//! Parquet output: the packet timeline read back with the `parquet` crate's Arrow reader
//! (and with pandas when this machine has it), and the snapshot CSV conversion.

use std::fs::{self, File};
use std::path::Path;
use std::process::Command;

use arrow_array::types::Int32Type;
use arrow_array::{
    Array, BooleanArray, DictionaryArray, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array,
};
use arrow_schema::DataType;
use l4s_core::{Dur, Ecn, Time};
use l4s_metrics::parquet::{
    csv_to_parquet, Decision, HopRecord, PacketRecord, PacketTimelineWriter, SubQueue, DEFAULT_ROW_GROUP_ROWS,
    PACKET_TIMELINE_VERSION_KEY,
};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::Compression;

const FLOWS: [&str; 3] = ["prague-1", "cubic-1", "probe"];
const QUEUES: [&str; 2] = ["access", "bottleneck"];

/// A fresh folder for one test, removed when the returned guard drops (pass or fail).
fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("l4s-parquet-test-").tempdir().unwrap()
}

/// Record `i` of the synthetic timeline: every 97th packet is dropped at the bottleneck,
/// every 10th delivered one is CE-marked there; flow 2 (`probe`) crosses only the access.
fn record(i: u64) -> PacketRecord {
    let flow = (i % 3) as u32;
    let lost = i.is_multiple_of(97) && flow != 2;
    let marked = !lost && i.is_multiple_of(10) && flow != 2;
    let sent = Time::from_nanos(i * 10_000);
    let ecn_sent = [Ecn::Ect1, Ecn::Ect0, Ecn::NotEct][flow as usize];
    let access = HopRecord {
        queue: 0,
        subqueue: SubQueue::Single,
        sojourn: Some(Dur::from_nanos(i % 50)),
        decision: Decision::Pass,
    };
    let bottleneck = HopRecord {
        queue: 1,
        subqueue: if flow == 0 { SubQueue::L } else { SubQueue::C },
        sojourn: if lost {
            None
        } else {
            Some(Dur::from_nanos(1_000 + i % 7_000))
        },
        decision: if lost {
            Decision::Drop
        } else if marked {
            Decision::Mark
        } else {
            Decision::Pass
        },
    };
    PacketRecord {
        flow,
        seq: i / 3,
        size: 100 + (i % 1400) as u32,
        sent,
        arrival: if lost {
            None
        } else {
            Some(Time::from_nanos(sent.as_nanos() + 5_000_000 + i % 1_000))
        },
        ecn_sent,
        ecn_received: if lost {
            None
        } else if marked {
            Some(Ecn::Ce)
        } else {
            Some(ecn_sent)
        },
        hops: [
            Some(access),
            if flow == 2 { None } else { Some(bottleneck) },
            None,
            None,
        ],
    }
}

fn write_timeline(path: &Path, n: u64) {
    let mut w = PacketTimelineWriter::new(File::create(path).unwrap(), &FLOWS, &QUEUES).unwrap();
    for i in 0..n {
        w.push(&record(i)).unwrap();
    }
    assert_eq!(w.rows(), n);
    w.finish().unwrap().sync_all().unwrap();
}

fn u64s(b: &RecordBatch, c: &str) -> UInt64Array {
    b.column_by_name(c)
        .unwrap()
        .as_any()
        .downcast_ref::<UInt64Array>()
        .unwrap()
        .clone()
}

/// A dictionary<int32, utf8> column as strings.
fn strs(b: &RecordBatch, c: &str) -> Vec<Option<String>> {
    let col = b.column_by_name(c).unwrap_or_else(|| panic!("no column {c}"));
    assert_eq!(
        col.data_type(),
        &DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
        "{c}"
    );
    let d = col.as_any().downcast_ref::<DictionaryArray<Int32Type>>().unwrap();
    let values = d.values().as_any().downcast_ref::<StringArray>().unwrap();
    (0..d.len())
        .map(|i| {
            d.keys()
                .is_valid(i)
                .then(|| values.value(d.keys().value(i) as usize).to_string())
        })
        .collect()
}

#[test]
fn timeline_round_trip_200k() {
    const N: u64 = 200_000;
    let dir = scratch();
    let path = dir.path().join("packets.parquet");
    write_timeline(&path, N);

    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
    let meta = builder.metadata().clone();
    assert_eq!(meta.file_metadata().num_rows(), N as i64);
    // Bounded memory: the writer emits a row group every 65 536 rows.
    let groups = meta.num_row_groups();
    assert!(groups >= 3, "{groups} row groups");
    assert_eq!(groups, (N as usize).div_ceil(DEFAULT_ROW_GROUP_ROWS));
    for rg in meta.row_groups() {
        assert!(rg.num_rows() as usize <= DEFAULT_ROW_GROUP_ROWS);
        assert_eq!(rg.column(0).compression(), Compression::SNAPPY);
    }
    let kv = meta.file_metadata().key_value_metadata().unwrap();
    assert!(kv
        .iter()
        .any(|k| k.key == PACKET_TIMELINE_VERSION_KEY && k.value.as_deref() == Some("1")));

    let schema = builder.schema().clone();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names.len(), 8 + 4 * 4);
    assert_eq!(
        &names[..12],
        &[
            "flow",
            "seq",
            "size",
            "sent_ns",
            "arrival_ns",
            "lost",
            "ecn_sent",
            "ecn_received",
            "hop0_queue",
            "hop0_subqueue",
            "hop0_sojourn_ns",
            "hop0_decision"
        ]
    );
    assert_eq!(names[23], "hop3_decision");

    let reader = builder.with_batch_size(50_000).build().unwrap();
    let (mut row, mut lost_rows, mut null_arrivals, mut marks) = (0u64, 0u64, 0usize, 0u64);
    for batch in reader {
        let b = batch.unwrap();
        let flow = strs(&b, "flow");
        let seq = u64s(&b, "seq");
        let size = b
            .column_by_name("size")
            .unwrap()
            .as_any()
            .downcast_ref::<UInt32Array>()
            .unwrap()
            .clone();
        let sent = u64s(&b, "sent_ns");
        let arrival = u64s(&b, "arrival_ns");
        let lost = b
            .column_by_name("lost")
            .unwrap()
            .as_any()
            .downcast_ref::<BooleanArray>()
            .unwrap()
            .clone();
        let (ecn_s, ecn_r) = (strs(&b, "ecn_sent"), strs(&b, "ecn_received"));
        let hop_q: Vec<_> = (0..4).map(|h| strs(&b, &format!("hop{h}_queue"))).collect();
        let hop_s: Vec<_> = (0..4).map(|h| strs(&b, &format!("hop{h}_subqueue"))).collect();
        let hop_d: Vec<_> = (0..4).map(|h| strs(&b, &format!("hop{h}_decision"))).collect();
        let hop_j: Vec<_> = (0..4).map(|h| u64s(&b, &format!("hop{h}_sojourn_ns"))).collect();
        null_arrivals += arrival.null_count();
        for k in 0..b.num_rows() {
            let r = record(row);
            assert_eq!(flow[k].as_deref(), Some(FLOWS[r.flow as usize]), "row {row}");
            assert_eq!(seq.value(k), r.seq);
            assert_eq!(size.value(k), r.size);
            assert_eq!(sent.value(k), r.sent.as_nanos());
            assert_eq!(arrival.is_null(k), r.arrival.is_none(), "row {row}");
            if let Some(a) = r.arrival {
                assert_eq!(arrival.value(k), a.as_nanos());
            }
            assert_eq!(lost.value(k), r.arrival.is_none());
            lost_rows += lost.value(k) as u64;
            assert_eq!(ecn_s[k].as_deref(), Some(r.ecn_sent.name()));
            assert_eq!(ecn_r[k].as_deref(), r.ecn_received.map(Ecn::name));
            for h in 0..4 {
                match r.hops[h] {
                    Some(hr) => {
                        assert_eq!(
                            hop_q[h][k].as_deref(),
                            Some(QUEUES[hr.queue as usize]),
                            "row {row} hop {h}"
                        );
                        assert_eq!(hop_s[h][k].as_deref(), Some(hr.subqueue.name()));
                        assert_eq!(hop_d[h][k].as_deref(), Some(hr.decision.name()));
                        assert_eq!(hop_j[h].is_null(k), hr.sojourn.is_none());
                        if let Some(s) = hr.sojourn {
                            assert_eq!(hop_j[h].value(k), s.as_nanos());
                        }
                        marks += (hr.decision == Decision::Mark) as u64;
                    }
                    None => {
                        assert!(hop_q[h][k].is_none() && hop_s[h][k].is_none() && hop_d[h][k].is_none());
                        assert!(hop_j[h].is_null(k));
                    }
                }
            }
            row += 1;
        }
    }
    assert_eq!(row, N);
    // Lost: i % 97 == 0 and i % 3 != 2, for i < 200 000.
    let expect_lost = (0..N).filter(|i| i.is_multiple_of(97) && i % 3 != 2).count() as u64;
    assert_eq!(lost_rows, expect_lost);
    assert_eq!(null_arrivals as u64, expect_lost);
    assert!(
        expect_lost > 1_300 && marks > 10_000,
        "lost {expect_lost} marks {marks}"
    );

    // A few exact values, spelled out.
    let r = record(97);
    assert_eq!((r.flow, r.seq, r.arrival), (1, 32, None));
    assert_eq!(record(10).ecn_received, Some(Ecn::Ce));
    fs::remove_file(&path).unwrap();
}

#[test]
fn timeline_small_row_groups_and_empty_file() {
    let dir = scratch();
    let path = dir.path().join("small-groups.parquet");
    let mut w = PacketTimelineWriter::with_row_group_rows(File::create(&path).unwrap(), &FLOWS, &QUEUES, 1000).unwrap();
    for i in 0..3_500 {
        w.push(&record(i)).unwrap();
    }
    w.finish().unwrap();
    let b = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
    let sizes: Vec<i64> = b.metadata().row_groups().iter().map(|g| g.num_rows()).collect();
    assert_eq!(sizes, vec![1000, 1000, 1000, 500]);

    // Deterministic: the same records give the same bytes.
    let bytes = |n| {
        let mut w = PacketTimelineWriter::new(Vec::new(), &FLOWS, &QUEUES).unwrap();
        (0..n).for_each(|i| w.push(&record(i)).unwrap());
        w.finish().unwrap()
    };
    assert_eq!(bytes(2_000), bytes(2_000));

    // No rows at all: still a valid file with the full schema.
    let empty = PacketTimelineWriter::new(Vec::new(), &FLOWS, &QUEUES)
        .unwrap()
        .finish()
        .unwrap();
    fs::write(&path, empty).unwrap();
    let b = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
    assert_eq!(b.metadata().file_metadata().num_rows(), 0);
    assert_eq!(b.schema().fields().len(), 24);
    fs::remove_file(&path).unwrap();
}

#[test]
fn timeline_rejects_bad_indices_without_panicking() {
    let mut w = PacketTimelineWriter::new(Vec::new(), &FLOWS, &QUEUES).unwrap();
    let mut r = record(1);
    r.flow = 3;
    assert!(w.push(&r).unwrap_err().to_string().contains("flow index 3"));
    let mut r = record(1);
    r.hops[3] = Some(HopRecord {
        queue: 9,
        ..Default::default()
    });
    assert!(w.push(&r).unwrap_err().to_string().contains("queue index 9"));
    // Rejected records leave nothing behind; the writer goes on.
    w.push(&record(2)).unwrap();
    assert_eq!(w.rows(), 1);
    let bytes = w.finish().unwrap();
    let dir = scratch();
    let path = dir.path().join("one-row.parquet");
    fs::write(&path, bytes).unwrap();
    let rd = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap())
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(rd.map(|b| b.unwrap().num_rows()).sum::<usize>(), 1);

    assert!(PacketTimelineWriter::with_row_group_rows(Vec::new(), &FLOWS, &QUEUES, 0).is_err());
    let none: [&str; 0] = [];
    let mut w = PacketTimelineWriter::new(Vec::new(), &none, &none).unwrap();
    assert!(w.push(&PacketRecord::default()).is_err());
    w.finish().unwrap();
    fs::remove_file(&path).unwrap();
}

/// A small file read back as one batch (an empty batch for no rows).
fn read_all(path: &Path) -> RecordBatch {
    let b = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let schema = b.schema().clone();
    let mut batches: Vec<RecordBatch> = b.build().unwrap().map(|b| b.unwrap()).collect();
    assert!(batches.len() <= 1, "{} batches", batches.len());
    batches.pop().unwrap_or_else(|| RecordBatch::new_empty(schema))
}

const FLOWS_CSV: &str = "time_s,flow,throughput_bps,packets,owd_p99_ms,pacing_bps\n\
0.100,prague-1,1000000,80,12.5,\n\
0.100,\"cubic, the second\",2500000,200,,3e6\n\
\n\
0.200,prague-1,0,0,,\n";

#[test]
fn csv_round_trip_with_empty_cells() {
    let dir = scratch();
    let csv = dir.path().join("snapshots-flows.csv");
    let out = dir.path().join("snapshots-flows.parquet");
    fs::write(&csv, FLOWS_CSV).unwrap();
    csv_to_parquet(&csv, &out).unwrap();
    let b = read_all(&out);
    assert_eq!(b.num_rows(), 3);
    let s = b.schema();
    assert_eq!(s.field_with_name("flow").unwrap().data_type(), &DataType::Utf8);
    for c in ["time_s", "throughput_bps", "packets", "owd_p99_ms", "pacing_bps"] {
        assert_eq!(s.field_with_name(c).unwrap().data_type(), &DataType::Float64, "{c}");
    }
    let f = |c: &str| {
        b.column_by_name(c)
            .unwrap()
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap()
            .clone()
    };
    let flow = b
        .column_by_name("flow")
        .unwrap()
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap()
        .clone();
    assert_eq!(flow.value(1), "cubic, the second");
    assert_eq!(flow.value(2), "prague-1");
    assert_eq!(f("time_s").value(2), 0.2);
    assert_eq!(f("throughput_bps").value(1), 2_500_000.0);
    assert_eq!(f("owd_p99_ms").value(0), 12.5);
    assert!(f("owd_p99_ms").is_null(1) && f("owd_p99_ms").is_null(2));
    assert_eq!(f("owd_p99_ms").null_count(), 2);
    assert!(f("pacing_bps").is_null(0));
    assert_eq!(f("pacing_bps").value(1), 3e6);
    assert_eq!(f("packets").null_count(), 0);

    // Header only: a valid file with no rows.
    fs::write(&csv, "time_s,queue,backlog_packets\r\n").unwrap();
    csv_to_parquet(&csv, &out).unwrap();
    let b = read_all(&out);
    assert_eq!((b.num_rows(), b.num_columns()), (0, 3));
    assert_eq!(b.schema().field(1).data_type(), &DataType::Utf8);
    fs::remove_file(&csv).unwrap();
    fs::remove_file(&out).unwrap();
}

/// Names keep a dictionary; numbers are written without one (a time series' numbers seldom
/// repeat enough to pay for it, and its encoder's table was most of a copy's page faults).
#[test]
fn csv_copies_keep_a_dictionary_for_names_only() {
    let dir = scratch();
    let csv = dir.path().join("dictionary.csv");
    let out = dir.path().join("dictionary.parquet");
    let mut text = String::from("time_s,flow,throughput_bps\n");
    for i in 0..1000 {
        // Two names and two rates, over and over: a dictionary would fit every column.
        text.push_str(&format!(
            "{}.{:03},flow-{},{}\n",
            i / 10,
            i % 10 * 100,
            i % 2,
            1_000_000 * (i % 2)
        ));
    }
    fs::write(&csv, text).unwrap();
    csv_to_parquet(&csv, &out).unwrap();
    let meta = ParquetRecordBatchReaderBuilder::try_new(File::open(&out).unwrap())
        .unwrap()
        .metadata()
        .clone();
    let rg = meta.row_group(0);
    let dictionary = |name: &str| {
        let c = rg
            .columns()
            .iter()
            .find(|c| c.column_path().string() == name)
            .unwrap_or_else(|| panic!("no column {name}"));
        c.dictionary_page_offset().is_some()
    };
    assert!(dictionary("flow"), "the name column keeps its dictionary");
    assert!(
        !dictionary("time_s") && !dictionary("throughput_bps"),
        "numbers are plain"
    );
    let b = read_all(&out);
    let rate = b
        .column_by_name("throughput_bps")
        .unwrap()
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap()
        .clone();
    assert_eq!((b.num_rows(), rate.value(998), rate.value(999)), (1000, 0.0, 1e6));
    fs::remove_file(&csv).unwrap();
    fs::remove_file(&out).unwrap();
}

/// A column with any non-numeric cell is text (e.g. `ecn_mode`), the others numbers.
#[test]
fn csv_mixed_column_becomes_text() {
    let dir = scratch();
    let csv = dir.path().join("mixed.csv");
    let out = dir.path().join("mixed.parquet");
    fs::write(&csv, "a,ecn_mode,b\n1,accecn,2.5\nfoo,,\n3,none,4\n").unwrap();
    csv_to_parquet(&csv, &out).unwrap();
    let b = read_all(&out);
    assert_eq!(b.num_rows(), 3);
    assert_eq!(b.schema().field(0).data_type(), &DataType::Utf8);
    assert_eq!(b.schema().field(1).data_type(), &DataType::Utf8);
    assert_eq!(b.schema().field(2).data_type(), &DataType::Float64);
    let col = |n: &str| -> Vec<Option<String>> {
        let c = b.column_by_name(n).unwrap();
        let a = c.as_any().downcast_ref::<arrow_array::StringArray>().unwrap();
        a.iter().map(|v| v.map(str::to_string)).collect()
    };
    assert_eq!(col("a"), vec![Some("1".into()), Some("foo".into()), Some("3".into())]);
    assert_eq!(col("ecn_mode"), vec![Some("accecn".into()), None, Some("none".into())]);
    fs::remove_file(&csv).unwrap();
    fs::remove_file(&out).unwrap();
}

/// The first row tells a text column (one pass); a later number in it stays text, and a
/// column whose first cell is empty or a number but a later one is not is text as well
/// (the second way, with a pass that finds the text columns first). Both as two passes would.
#[test]
fn csv_text_columns_found_from_the_first_row_or_by_a_first_pass() {
    let dir = scratch();
    let csv = dir.path().join("guess.csv");
    let out = dir.path().join("guess.parquet");
    let strings = |b: &arrow_array::RecordBatch, n: &str| -> Vec<Option<String>> {
        let c = b.column_by_name(n).unwrap();
        let a = c.as_any().downcast_ref::<arrow_array::StringArray>().unwrap();
        a.iter().map(|v| v.map(str::to_string)).collect()
    };
    for (text, mode, late) in [
        // `mode` text from its first cell; `late` all numbers.
        ("t,mode,late\n1,abc,1\n2,5,\n", vec![Some("abc"), Some("5")], None),
        // `late` empty, then a number, then text: found by the first pass.
        (
            "t,mode,late\n1,abc,\n2,5,7\n3,x,y\n",
            vec![Some("abc"), Some("5"), Some("x")],
            Some(vec![None, Some("7"), Some("y")]),
        ),
    ] {
        fs::write(&csv, text).unwrap();
        csv_to_parquet(&csv, &out).unwrap();
        let b = read_all(&out);
        assert_eq!(b.schema().field(0).data_type(), &DataType::Float64, "{text:?}");
        assert_eq!(b.schema().field(1).data_type(), &DataType::Utf8, "{text:?}");
        let want: Vec<Option<String>> = mode.iter().map(|v| v.map(str::to_string)).collect();
        assert_eq!(strings(&b, "mode"), want, "{text:?}");
        match late {
            None => assert_eq!(b.schema().field(2).data_type(), &DataType::Float64, "{text:?}"),
            Some(l) => {
                let want: Vec<Option<String>> = l.iter().map(|v| v.map(str::to_string)).collect();
                assert_eq!(strings(&b, "late"), want, "{text:?}");
            }
        }
    }
    fs::remove_file(&csv).unwrap();
    fs::remove_file(&out).unwrap();
}

#[test]
fn csv_errors_name_file_and_line() {
    let dir = scratch();
    let csv = dir.path().join("bad.csv");
    let out = dir.path().join("bad.parquet");
    let name = csv.display().to_string();
    let cases: [(&str, &str); 6] = [
        ("", "empty file"),
        ("\n\n", "empty file"),
        ("a,b\n1,2\n3\n", ":3: 1 fields, the header has 2"),
        ("a,b\n1,2,3\n", ":2: 3 fields"),
        ("a,a\n", ":1: column `a` appears twice"),
        ("a,,b\n", ":1: column 2 has no name"),
    ];
    for (text, want) in cases {
        fs::write(&csv, text).unwrap();
        let e = csv_to_parquet(&csv, &out).unwrap_err();
        assert!(e.starts_with(&name) && e.contains(want), "{text:?}: {e}");
        assert!(!out.exists(), "{text:?} left an output file");
    }
    // An unterminated quote at the end of the file is read (by the csv crate) as a field
    // that runs to the end: accepted, not an error, and no panic.
    fs::write(&csv, "a,flow\n1,\"open\n").unwrap();
    csv_to_parquet(&csv, &out).unwrap();
    fs::remove_file(&out).unwrap();
    fs::write(&csv, [b'a', b'\n', 0xff, b'\n']).unwrap();
    let e = csv_to_parquet(&csv, &out).unwrap_err();
    assert!(e.starts_with(&format!("{name}:2:")), "{e}");
    let e = csv_to_parquet(&dir.path().join("does-not-exist.csv"), &out).unwrap_err();
    assert!(e.contains("does-not-exist.csv"), "{e}");
    fs::remove_file(&csv).unwrap();
}

/// pandas (pyarrow engine) reads both kinds of file, flow names included. Skipped, with a
/// warning, where `python3` lacks pandas or pyarrow (nothing is installed for it).
#[test]
fn pandas_reads_the_files() {
    let ok = Command::new("python3")
        .args(["-c", "import pandas, pyarrow"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        let ci = std::env::var_os("CI").is_some();
        eprintln!(
            "warning: pandas_reads_the_files skipped: python3 with pandas and pyarrow not available{}",
            if ci { " (CI)" } else { "" }
        );
        return;
    }
    let dir = scratch();
    let packets = dir.path().join("pandas-packets.parquet");
    write_timeline(&packets, 1_000);
    let csv = dir.path().join("pandas-flows.csv");
    let flows = dir.path().join("pandas-flows.parquet");
    fs::write(&csv, FLOWS_CSV).unwrap();
    csv_to_parquet(&csv, &flows).unwrap();
    let script = r#"
import sys, pandas as pd
df = pd.read_parquet(sys.argv[1])
assert len(df) == 1000, len(df)
assert list(df["flow"].iloc[:3]) == ["prague-1", "cubic-1", "probe"], df["flow"].iloc[:3]
assert int(df["lost"].sum()) == 8, df["lost"].sum()
assert df["arrival_ns"].isna().sum() == 8
assert pd.isna(df["arrival_ns"].iloc[0]) and df["hop1_decision"].iloc[0] == "drop"
assert int(df["arrival_ns"].iloc[1]) == 10_000 + 5_000_000 + 1
assert int(df["seq"].iloc[999]) == 333 and df["seq"].dtype == "uint64"
assert df["hop1_subqueue"].iloc[0] == "L" and df["hop1_subqueue"].iloc[1] == "C"
assert pd.isna(df["hop1_queue"].iloc[2]) and df["hop0_queue"].iloc[2] == "access"
assert df["ecn_received"].iloc[10] == "ce" and df["ecn_sent"].iloc[1] == "ect0"
assert (df.groupby("flow", observed=True).size() == [334, 333, 333]).all()
s = pd.read_parquet(sys.argv[2])
assert list(s["flow"]) == ["prague-1", "cubic, the second", "prague-1"]
assert s["owd_p99_ms"].isna().sum() == 2 and s["pacing_bps"].iloc[1] == 3e6
print("pandas ok", pd.__version__)
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&packets)
        .arg(&flows)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pandas check failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim());
    for p in [packets, csv, flows] {
        fs::remove_file(p).unwrap();
    }
}
