//! # l4s-metrics
//!
//! Streaming measurement for l4s-lab runs and the results format they write.
//!
//! * [`LatencyHist`]: an HDR histogram of durations (the `hdrhistogram` crate's buckets and
//!   percentiles, in counts of its own that are cheaper to record into: fixed memory,
//!   3 significant digits from 1 ns to 1 hour, percentiles to p99.99 without keeping
//!   samples). Memory does not grow with run length (DESIGN.md principle 4).
//! * [`summary`]: the serialisable `summary.json` schema ([`summary::SCHEMA_VERSION`]).
//! * [`results`]: writing a results directory atomically (a temporary directory renamed
//!   into place, so a failed run never leaves half-written results).
//! * [`table`]: the plain-text summary printed at the end of a run.
//! * [`fixed`]: floats with a fixed number of decimals, the same text as `{:.N}` at a
//!   fraction of its cost, for the writers that print many.
//! * [`pcap`]: a nanosecond libpcap writer of synthesised Ethernet/IP/TCP/UDP headers,
//!   for the bottleneck's egress (read by Wireshark/tshark).
//! * [`parquet`]: the per-packet timeline (`packets.parquet`) and Parquet copies of the
//!   snapshot CSVs (`snapshots-*.parquet`), for pandas/polars.

#![forbid(unsafe_code)]

pub mod fixed;
pub mod hist;
pub mod parquet;
pub mod pcap;
pub mod results;
pub mod summary;
pub mod table;

pub use hist::{IntervalDelays, IntervalFigures, LatencyHist, Percentiles};
