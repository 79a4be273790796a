//! Parquet output: the per-packet timeline and Parquet copies of the snapshot CSVs.
//!
//! Written with the arrow-rs crates (`parquet` with its `arrow` feature, `arrow-array`,
//! `arrow-schema`), Snappy-compressed. pandas (`pd.read_parquet`, pyarrow engine), polars
//! and DuckDB read the files as they are.
//!
//! # `packets.parquet`: [`PacketTimelineWriter`]
//!
//! One row per data packet, in the order the caller pushes them. The caller fills a
//! [`PacketRecord`] (`Copy`, no heap data: flows and queues are indices into the name
//! tables given to [`PacketTimelineWriter::new`]); the writer buffers column values for
//! `row_group_rows` records (default [`DEFAULT_ROW_GROUP_ROWS`]), then encodes them as one
//! Parquet row group, so memory stays bounded whatever the run length.
//!
//! | column | Arrow type (Parquet) | meaning |
//! |---|---|---|
//! | `flow` | dictionary<int32, utf8> (BYTE_ARRAY, dictionary-encoded) | flow name (pandas: `category`) |
//! | `seq` | uint64 | the transport's sequence number of the packet |
//! | `size` | uint32 | frame length in bytes |
//! | `sent_ns` | uint64 | sender transmit time, ns since the start of the run |
//! | `arrival_ns` | uint64, nullable | receiver arrival time; null when the packet was lost |
//! | `lost` | bool | `arrival_ns` is null |
//! | `ecn_sent` | dictionary<int32, utf8> | ECN codepoint the sender set: `not-ect`, `ect1`, `ect0`, `ce` (the names of `summary.json`) |
//! | `ecn_received` | dictionary<int32, utf8>, nullable | codepoint on arrival (`ce` if a queue marked it); null when lost |
//! | `hop{i}_queue` | dictionary<int32, utf8>, nullable | link name of the `i`-th queue crossed (`i` = 0..3, `hop0` first); null when the packet crossed fewer queues |
//! | `hop{i}_subqueue` | dictionary<int32, utf8>, nullable | `L` or `C` (DualPI2), `single` otherwise |
//! | `hop{i}_sojourn_ns` | uint64, nullable | queue sojourn; null when the packet was dropped there (or no such hop) |
//! | `hop{i}_decision` | dictionary<int32, utf8>, nullable | `pass`, `mark` (CE set there) or `drop` |
//!
//! Nullable unsigned columns become `float64` in pandas' default dtypes (exact below 2⁵³ ns,
//! 104 days); `pd.read_parquet(f, dtype_backend="pyarrow")` keeps them integers.
//! The file's key-value metadata holds `l4s_lab.packet_timeline_version` = `1`.
//!
//! # `snapshots-*.parquet`: [`csv_to_parquet`]
//!
//! Converts a snapshot CSV (header row, RFC 4180 quoting) column by column: the name
//! columns in [`CSV_STRING_COLUMNS`] and columns with any non-numeric cell become utf8,
//! every other column float64; an empty
//! cell is null.

use crate::fixed::plain_decimal;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use ::parquet::arrow::ArrowWriter;
use ::parquet::basic::{Compression, Encoding};
use ::parquet::file::metadata::KeyValue;
use ::parquet::file::properties::WriterProperties;
use ::parquet::schema::types::ColumnPath;
use arrow_array::builder::{BooleanBuilder, Float64Builder, Int32Builder, StringBuilder, UInt32Builder, UInt64Builder};
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, DictionaryArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use l4s_core::{Dur, Ecn, FlowId, Time};

/// Queues a packet record can describe (`hop0` .. `hop3`).
pub const MAX_HOPS: usize = 4;
/// Rows per row group of the packet timeline unless the caller chooses
/// ([`PacketTimelineWriter::with_row_group_rows`]).
pub const DEFAULT_ROW_GROUP_ROWS: usize = 65_536;
/// Version of the packet timeline's columns, in the file's key-value metadata.
pub const PACKET_TIMELINE_VERSION: u32 = 1;
/// Key of [`PACKET_TIMELINE_VERSION`] in the file's key-value metadata.
pub const PACKET_TIMELINE_VERSION_KEY: &str = "l4s_lab.packet_timeline_version";
/// CSV columns [`csv_to_parquet`] writes as utf8; all others are float64.
pub const CSV_STRING_COLUMNS: &[&str] = &["flow", "queue", "kind", "name"];
/// Rows per record batch (and row group) when converting CSV.
const CSV_BATCH_ROWS: usize = 65_536;

/// Which sub-queue of a queue discipline the packet went through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SubQueue {
    /// DualPI2's low-latency queue: `"L"`.
    L,
    /// DualPI2's classic queue: `"C"`.
    C,
    /// A single-queue discipline (FIFO, PIE, CoDel, ...): `"single"`.
    #[default]
    Single,
}

impl SubQueue {
    /// The name written to the file.
    pub fn name(self) -> &'static str {
        match self {
            SubQueue::L => "L",
            SubQueue::C => "C",
            SubQueue::Single => "single",
        }
    }
    fn key(self) -> i32 {
        match self {
            SubQueue::L => 0,
            SubQueue::C => 1,
            SubQueue::Single => 2,
        }
    }
}

/// What a queue did with the packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Forwarded unchanged: `"pass"`.
    #[default]
    Pass,
    /// Forwarded with CE set by this queue: `"mark"`.
    Mark,
    /// Dropped (AQM or buffer limit): `"drop"`.
    Drop,
}

impl Decision {
    /// The name written to the file.
    pub fn name(self) -> &'static str {
        match self {
            Decision::Pass => "pass",
            Decision::Mark => "mark",
            Decision::Drop => "drop",
        }
    }
    fn key(self) -> i32 {
        match self {
            Decision::Pass => 0,
            Decision::Mark => 1,
            Decision::Drop => 2,
        }
    }
}

/// One queue a packet crossed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HopRecord {
    /// Index into the queue (link) names given to [`PacketTimelineWriter::new`].
    pub queue: u32,
    /// Sub-queue the packet was classified into.
    pub subqueue: SubQueue,
    /// Time from enqueue to dequeue; `None` when the packet was dropped here.
    pub sojourn: Option<Dur>,
    /// What the queue did.
    pub decision: Decision,
}

/// One data packet of the timeline: plain data, no allocation to fill.
///
/// `lost` is not a field: the `lost` column is `arrival.is_none()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketRecord {
    /// Index into the flow names given to [`PacketTimelineWriter::new`].
    pub flow: FlowId,
    /// Sequence number.
    pub seq: u64,
    /// Frame length in bytes.
    pub size: u32,
    /// Sender transmit time.
    pub sent: Time,
    /// Receiver arrival time; `None` = lost.
    pub arrival: Option<Time>,
    /// Codepoint the sender set.
    pub ecn_sent: Ecn,
    /// Codepoint on arrival; `None` when lost.
    pub ecn_received: Option<Ecn>,
    /// The queues crossed in path order (`hops[i]` is written to the `hop{i}_*` columns);
    /// `None` for hops the packet did not reach or the path does not have.
    pub hops: [Option<HopRecord>; MAX_HOPS],
}

fn err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

fn dict_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

fn names<S: AsRef<str>>(names: &[S]) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(names.iter().map(|s| s.as_ref())))
}

fn ecn_key(e: Ecn) -> i32 {
    e.bits() as i32
}

/// The timeline's Arrow schema (column order of the table in the module docs).
pub fn packet_timeline_schema() -> SchemaRef {
    let mut f = vec![
        Field::new("flow", dict_type(), false),
        Field::new("seq", DataType::UInt64, false),
        Field::new("size", DataType::UInt32, false),
        Field::new("sent_ns", DataType::UInt64, false),
        Field::new("arrival_ns", DataType::UInt64, true),
        Field::new("lost", DataType::Boolean, false),
        Field::new("ecn_sent", dict_type(), false),
        Field::new("ecn_received", dict_type(), true),
    ];
    for i in 0..MAX_HOPS {
        f.push(Field::new(format!("hop{i}_queue"), dict_type(), true));
        f.push(Field::new(format!("hop{i}_subqueue"), dict_type(), true));
        f.push(Field::new(format!("hop{i}_sojourn_ns"), DataType::UInt64, true));
        f.push(Field::new(format!("hop{i}_decision"), dict_type(), true));
    }
    Arc::new(Schema::new(f))
}

#[derive(Default)]
struct HopColumns {
    queue: Int32Builder,
    subqueue: Int32Builder,
    sojourn: UInt64Builder,
    decision: Int32Builder,
}

#[derive(Default)]
struct Columns {
    flow: Int32Builder,
    seq: UInt64Builder,
    size: UInt32Builder,
    sent: UInt64Builder,
    arrival: UInt64Builder,
    lost: BooleanBuilder,
    ecn_sent: Int32Builder,
    ecn_received: Int32Builder,
    hops: [HopColumns; MAX_HOPS],
}

/// Dictionary values of the string columns (built once, shared by every batch).
struct Dictionaries {
    flows: ArrayRef,
    queues: ArrayRef,
    subqueues: ArrayRef,
    decisions: ArrayRef,
    ecn: ArrayRef,
}

/// Streams [`PacketRecord`]s into a Parquet file, one row group per `row_group_rows`
/// records. Call [`finish`](Self::finish): a writer dropped without it leaves a file with
/// no footer, which readers reject.
pub struct PacketTimelineWriter<W: Write + Send> {
    writer: ArrowWriter<W>,
    schema: SchemaRef,
    cols: Columns,
    dicts: Dictionaries,
    n_flows: usize,
    n_queues: usize,
    buffered: usize,
    row_group_rows: usize,
    rows: u64,
}

impl<W: Write + Send> PacketTimelineWriter<W> {
    /// A writer with [`DEFAULT_ROW_GROUP_ROWS`] rows per row group. `flows[i]` names flow
    /// index `i` and `queues[j]` names queue index `j` of the records.
    pub fn new<F: AsRef<str>, Q: AsRef<str>>(inner: W, flows: &[F], queues: &[Q]) -> io::Result<Self> {
        Self::with_row_group_rows(inner, flows, queues, DEFAULT_ROW_GROUP_ROWS)
    }

    /// As [`new`](Self::new) with `row_group_rows` (≥ 1) records buffered per row group.
    pub fn with_row_group_rows<F: AsRef<str>, Q: AsRef<str>>(
        inner: W,
        flows: &[F],
        queues: &[Q],
        row_group_rows: usize,
    ) -> io::Result<Self> {
        if row_group_rows == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "packet timeline: row_group_rows must be at least 1",
            ));
        }
        if flows.len() > i32::MAX as usize || queues.len() > i32::MAX as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "packet timeline: too many names",
            ));
        }
        let schema = packet_timeline_schema();
        let mut props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(row_group_rows))
            .set_max_row_group_bytes(None)
            .set_key_value_metadata(Some(vec![KeyValue::new(
                PACKET_TIMELINE_VERSION_KEY.to_string(),
                PACKET_TIMELINE_VERSION.to_string(),
            )]));
        // Counters and clocks: delta encoding, not a dictionary that overflows anyway.
        for c in ["seq", "sent_ns", "arrival_ns"] {
            let path = ColumnPath::from(c);
            props = props
                .set_column_dictionary_enabled(path.clone(), false)
                .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
        }
        let writer = ArrowWriter::try_new(inner, schema.clone(), Some(props.build())).map_err(err)?;
        let dicts = Dictionaries {
            flows: names(flows),
            queues: names(queues),
            subqueues: names(&[SubQueue::L.name(), SubQueue::C.name(), SubQueue::Single.name()]),
            decisions: names(&[Decision::Pass.name(), Decision::Mark.name(), Decision::Drop.name()]),
            ecn: names(&(0..4).map(|b| Ecn::from_bits(b).name()).collect::<Vec<_>>()),
        };
        Ok(PacketTimelineWriter {
            writer,
            schema,
            cols: Columns::default(),
            dicts,
            n_flows: flows.len(),
            n_queues: queues.len(),
            buffered: 0,
            row_group_rows,
            rows: 0,
        })
    }

    /// Append one record. Fails without writing anything if the flow or a queue index is
    /// outside the name tables; fails with an I/O error when a full row group cannot be
    /// written.
    pub fn push(&mut self, r: &PacketRecord) -> io::Result<()> {
        if r.flow as usize >= self.n_flows {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("packet timeline: flow index {} but {} flow names", r.flow, self.n_flows),
            ));
        }
        for (i, h) in r.hops.iter().enumerate() {
            if let Some(h) = h {
                if h.queue as usize >= self.n_queues {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "packet timeline: hop {i} queue index {} but {} queue names",
                            h.queue, self.n_queues
                        ),
                    ));
                }
            }
        }
        let c = &mut self.cols;
        c.flow.append_value(r.flow as i32);
        c.seq.append_value(r.seq);
        c.size.append_value(r.size);
        c.sent.append_value(r.sent.as_nanos());
        c.arrival.append_option(r.arrival.map(Time::as_nanos));
        c.lost.append_value(r.arrival.is_none());
        c.ecn_sent.append_value(ecn_key(r.ecn_sent));
        c.ecn_received.append_option(r.ecn_received.map(ecn_key));
        for (h, hc) in r.hops.iter().zip(c.hops.iter_mut()) {
            match h {
                Some(h) => {
                    hc.queue.append_value(h.queue as i32);
                    hc.subqueue.append_value(h.subqueue.key());
                    hc.sojourn.append_option(h.sojourn.map(Dur::as_nanos));
                    hc.decision.append_value(h.decision.key());
                }
                None => {
                    hc.queue.append_null();
                    hc.subqueue.append_null();
                    hc.sojourn.append_null();
                    hc.decision.append_null();
                }
            }
        }
        self.buffered += 1;
        self.rows += 1;
        if self.buffered >= self.row_group_rows {
            self.write_row_group()?;
        }
        Ok(())
    }

    /// Records pushed so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    fn write_row_group(&mut self) -> io::Result<()> {
        if self.buffered == 0 {
            return Ok(());
        }
        fn dict(keys: &mut Int32Builder, values: &ArrayRef) -> io::Result<ArrayRef> {
            Ok(Arc::new(
                DictionaryArray::<Int32Type>::try_new(keys.finish(), values.clone()).map_err(err)?,
            ))
        }
        let (c, d) = (&mut self.cols, &self.dicts);
        let mut columns: Vec<ArrayRef> = vec![
            dict(&mut c.flow, &d.flows)?,
            Arc::new(c.seq.finish()),
            Arc::new(c.size.finish()),
            Arc::new(c.sent.finish()),
            Arc::new(c.arrival.finish()),
            Arc::new(c.lost.finish()),
            dict(&mut c.ecn_sent, &d.ecn)?,
            dict(&mut c.ecn_received, &d.ecn)?,
        ];
        for h in &mut c.hops {
            columns.push(dict(&mut h.queue, &d.queues)?);
            columns.push(dict(&mut h.subqueue, &d.subqueues)?);
            columns.push(Arc::new(h.sojourn.finish()));
            columns.push(dict(&mut h.decision, &d.decisions)?);
        }
        self.buffered = 0;
        let batch = RecordBatch::try_new(self.schema.clone(), columns).map_err(err)?;
        self.writer.write(&batch).map_err(err)?;
        // One batch, one row group: encoded pages are not held beyond it.
        self.writer.flush().map_err(err)
    }

    /// Write the buffered rows and the footer; returns the inner writer (flushed).
    pub fn finish(mut self) -> io::Result<W> {
        self.write_row_group()?;
        let mut w = self.writer.into_inner().map_err(err)?;
        w.flush()?;
        Ok(w)
    }
}

enum CsvColumn {
    Num(Float64Builder),
    Str(StringBuilder),
}

/// Convert a snapshot CSV (`snapshots-flows.csv`, `snapshots-queues.csv`, or any CSV with
/// a header row) to Parquet: columns named in [`CSV_STRING_COLUMNS`] and columns with any
/// non-numeric cell become utf8, all others float64; empty cells are null. Streams in row
/// groups of 65 536 rows. Parsing is the `csv` crate's (RFC 4180 quoting, quoted fields
/// across lines, CRLF, a UTF-8 byte-order mark).
///
/// Errors name the file and, for bad content, the line: an empty file (no header), a
/// column without a name or named twice, a row whose field count differs from the
/// header's, text that is not UTF-8. On error no output file is left behind.
pub fn csv_to_parquet(csv: &Path, parquet: &Path) -> Result<(), String> {
    let res = convert(csv, parquet);
    if res.is_err() {
        let _ = std::fs::remove_file(parquet);
    }
    res
}

fn csv_reader(csv: &Path) -> Result<csv::Reader<File>, String> {
    let f = File::open(csv).map_err(|e| format!("{}: {e}", csv.display()))?;
    // Flexible: ragged rows are reported below with their line number.
    Ok(csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(f))
}

/// The next non-blank record and the line it starts on.
fn next_record(csv: &Path, rd: &mut csv::Reader<File>, rec: &mut csv::StringRecord) -> Result<Option<u64>, String> {
    loop {
        match rd.read_record(rec) {
            Ok(false) => return Ok(None),
            Ok(true) => {
                if rec.len() == 1 && rec[0].trim().is_empty() {
                    continue; // blank line
                }
                return Ok(Some(rec.position().map(|p| p.line()).unwrap_or(0)));
            }
            Err(e) => {
                let line = e.position().map(|p| p.line()).unwrap_or(0);
                return Err(format!("{}:{line}: {e}", csv.display()));
            }
        }
    }
}

/// A cell as a number, as `str::parse` reads it (a plain decimal without its general
/// algorithm: [`plain_decimal`]).
#[inline]
fn number(c: &str) -> Option<f64> {
    plain_decimal(c.as_bytes()).or_else(|| c.parse().ok())
}

/// Which columns hold a non-empty cell that does not parse as a number.
fn text_columns(csv: &Path, width: usize) -> Result<Vec<bool>, String> {
    let mut rd = csv_reader(csv)?;
    let mut rec = csv::StringRecord::new();
    let mut text = vec![false; width];
    next_record(csv, &mut rd, &mut rec)?;
    while next_record(csv, &mut rd, &mut rec)?.is_some() {
        for (t, cell) in text.iter_mut().zip(rec.iter()) {
            let c = cell.trim();
            if !c.is_empty() && number(c).is_none() {
                *t = true;
            }
        }
    }
    Ok(text)
}

fn convert(csv: &Path, out: &Path) -> Result<(), String> {
    let mut rd = csv_reader(csv)?;
    let mut rec = csv::StringRecord::new();
    if next_record(csv, &mut rd, &mut rec)?.is_none() {
        return Err(format!("{}: empty file (no header row)", csv.display()));
    }
    let header: Vec<String> = rec
        .iter()
        .map(|h| h.trim().trim_start_matches('\u{feff}').to_string())
        .collect();
    for (i, h) in header.iter().enumerate() {
        if h.is_empty() {
            return Err(format!("{}:1: column {} has no name", csv.display(), i + 1));
        }
        if header[..i].contains(h) {
            return Err(format!("{}:1: column `{h}` appears twice", csv.display()));
        }
    }
    let names: Vec<bool> = header
        .iter()
        .map(|h| CSV_STRING_COLUMNS.contains(&h.as_str()))
        .collect();
    // One pass when the first row tells the text columns, as in the files l4s writes: a
    // column is text if it is a name column or its first cell is not a number, and the
    // others must hold only numbers; a later cell that is not a number sends it back for a
    // first pass that finds the text columns (each pass parses every cell, and a pass was
    // about a third of the time).
    let first = next_record(csv, &mut rd, &mut rec)?;
    let guess: Vec<bool> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            *n || first.is_some()
                && rec
                    .get(i)
                    .is_some_and(|c| !c.trim().is_empty() && number(c.trim()).is_none())
        })
        .collect();
    if write_columns(csv, out, (&header, &guess), true, rd, (rec, first))? {
        return Ok(());
    }
    let text = text_columns(csv, header.len())?;
    let is_str: Vec<bool> = names.iter().zip(&text).map(|(n, t)| *n || *t).collect();
    let mut rd = csv_reader(csv)?;
    let mut rec = csv::StringRecord::new();
    next_record(csv, &mut rd, &mut rec)?;
    write_columns(csv, out, (&header, &is_str), false, rd, (rec, None)).map(|_| ())
}

/// Write the rows after the header to `out`, the columns marked in `is_str` as utf8 and the
/// others as float64: the row in `rec` if it starts on line `pending`, then those `rd` reads.
/// `optimistic`: the numeric columns were assumed, not checked; a cell in one that is not a
/// number stops the writing (`false`).
fn write_columns(
    csv: &Path,
    out: &Path,
    (header, is_str): (&[String], &[bool]),
    optimistic: bool,
    mut rd: csv::Reader<File>,
    (mut rec, mut pending): (csv::StringRecord, Option<u64>),
) -> Result<bool, String> {
    let schema = Arc::new(Schema::new(
        header
            .iter()
            .zip(is_str)
            .map(|(h, s)| Field::new(h, if *s { DataType::Utf8 } else { DataType::Float64 }, true))
            .collect::<Vec<_>>(),
    ));
    let mut cols: Vec<CsvColumn> = is_str
        .iter()
        .map(|s| {
            if *s {
                CsvColumn::Str(StringBuilder::new())
            } else {
                CsvColumn::Num(Float64Builder::new())
            }
        })
        .collect();
    let file = File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(CSV_BATCH_ROWS));
    // Number columns written plain, not dictionary-encoded: a time series' numbers rarely
    // repeat enough to pay for a dictionary, and each column's dictionary encoder allocates
    // its hash table up front. On `dumbbell-dualpi2`'s three tables (60 s) the copies took
    // 9.3-9.7 ms in a fresh process with 770 page faults, and 5.1-5.4 ms with 441 without
    // them; the three files came out 1 % smaller. Name columns keep their dictionary.
    for (h, s) in header.iter().zip(is_str) {
        if !*s {
            props = props.set_column_dictionary_enabled(ColumnPath::from(h.as_str()), false);
        }
    }
    let props = props.build();
    let wr = |e: ::parquet::errors::ParquetError| format!("{}: {e}", out.display());
    let mut writer = ArrowWriter::try_new(BufWriter::new(file), schema.clone(), Some(props)).map_err(wr)?;
    let mut buffered = 0;
    let flush = |cols: &mut Vec<CsvColumn>, writer: &mut ArrowWriter<_>| -> Result<(), String> {
        let arrays: Vec<ArrayRef> = cols
            .iter_mut()
            .map(|c| -> ArrayRef {
                match c {
                    CsvColumn::Num(b) => Arc::new(b.finish()),
                    CsvColumn::Str(b) => Arc::new(b.finish()),
                }
            })
            .collect();
        let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|e| format!("{}: {e}", out.display()))?;
        writer.write(&batch).map_err(wr)
    };
    loop {
        let line = match pending.take() {
            Some(line) => line,
            None => match next_record(csv, &mut rd, &mut rec)? {
                Some(line) => line,
                None => break,
            },
        };
        if rec.len() != header.len() {
            return Err(format!(
                "{}:{line}: {} fields, the header has {}",
                csv.display(),
                rec.len(),
                header.len()
            ));
        }
        for (cell, col) in rec.iter().zip(cols.iter_mut()) {
            let c = cell.trim();
            match col {
                CsvColumn::Str(b) => b.append_option((!c.is_empty()).then_some(cell)),
                CsvColumn::Num(b) if c.is_empty() => b.append_null(),
                CsvColumn::Num(b) => match number(c) {
                    Some(v) => b.append_value(v),
                    None if optimistic => return Ok(false),
                    // The first pass made every column with a non-number a text column.
                    None => b.append_null(),
                },
            }
        }
        buffered += 1;
        if buffered == CSV_BATCH_ROWS {
            flush(&mut cols, &mut writer)?;
            buffered = 0;
        }
    }
    if buffered > 0 {
        flush(&mut cols, &mut writer)?;
    }
    let mut w = writer.into_inner().map_err(wr)?;
    w.flush().map_err(|e| format!("{}: {e}", out.display()))?;
    w.into_inner()
        .map_err(|e| format!("{}: {e}", out.display()))?
        .sync_all()
        .map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_is_small_and_copy() {
        fn is_copy<T: Copy>() {}
        is_copy::<PacketRecord>();
        // 4 × 24-byte hops + 48 bytes: cheap to fill on the stack and pass by reference.
        assert!(
            std::mem::size_of::<PacketRecord>() <= 160,
            "{}",
            std::mem::size_of::<PacketRecord>()
        );
    }
}
