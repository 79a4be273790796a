//! # l4s-measure
//!
//! What a run measures, and how the results are written, the same for both backends: the
//! simulator and the live testbed feed these meters with the events they see (a data
//! packet sent, arriving, dropped; a packet leaving a queue; a frame completed), each
//! with the time it happened on the run's clock, and the meters decide what falls in the
//! statistics window. Memory is fixed: HDR histograms and counters, nothing per packet.
//!
//! * [`Window`]: the statistics window `[warm-up, end]`.
//! * [`Outputs`]: where a run's streamed outputs go (time series, distributions, packet
//!   timeline, pcap), handed to either backend.
//! * [`flow`]: per-flow meters ([`FlowMeter`], with [`MediaMeter`] for per-frame media
//!   metrics and [`AppMeter`] for application completion times).
//! * [`queue`]: per-queue meters ([`QueueMeter`]): sojourn per sub-queue, busy time,
//!   counters.
//! * [`snapshot`]: the time series (`snapshots-flows.csv`, `snapshots-queues.csv`).
//! * [`distributions`]: writes `distributions.csv`.
//! * [`summary`]: `summary.json` from the meters.
//! * [`appmetrics`]: the `media` and `app` sections of a flow's summary.
//! * [`timeline`]: the per-packet timeline's records and its Parquet sink
//!   (`packets.parquet`).

#![forbid(unsafe_code)]

pub mod appmetrics;
pub mod distributions;
pub mod flow;
pub mod outputs;
pub mod queue;
pub mod snapshot;
pub mod summary;
pub mod timeline;

pub use flow::{AppMeter, FlowMeter, LossCount, MediaMeter};
pub use outputs::{Outputs, SnapshotSinks};
pub use queue::{QueueMeter, SubCounts};

use l4s_core::Time;

/// The statistics window `[start, end]` of a run: figures in `summary.json` and
/// `distributions.csv` cover what happened in it (the time series covers the whole run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start: Time,
    pub end: Time,
}

impl Window {
    #[inline]
    pub fn contains(&self, t: Time) -> bool {
        t >= self.start && t <= self.end
    }
    /// Length in seconds.
    pub fn secs(&self) -> f64 {
        self.end.as_nanos().saturating_sub(self.start.as_nanos()) as f64 / 1e9
    }
}
