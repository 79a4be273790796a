//! Where a run's streamed outputs go: the same sinks for both backends, so that a front
//! end opens the results files once and hands them to whichever backend runs.

use crate::timeline::TimelineSink;
use l4s_core::Dur;
use std::io::Write;

/// The time series: interval, flow rows (`snapshots-flows.csv`), queue rows
/// (`snapshots-queues.csv`); see [`crate::snapshot`].
pub type SnapshotSinks = (Dur, Box<dyn Write>, Box<dyn Write>);

/// Where a run's streamed outputs go; `None` writes nothing of that kind.
#[derive(Default)]
pub struct Outputs {
    /// The time series (see [`SnapshotSinks`]).
    pub snapshots: Option<SnapshotSinks>,
    /// `distributions.csv`, written at the end of the run (see [`crate::distributions`]).
    pub distributions: Option<Box<dyn Write>>,
    /// The per-packet timeline (`packets.parquet`, see [`crate::timeline`]).
    pub timeline: Option<Box<dyn TimelineSink>>,
    /// The bottleneck's egress as pcap (writer, IPv6 addresses); only a backend that
    /// sees whole packets writes it (the simulator).
    pub pcap: Option<(Box<dyn Write>, bool)>,
    /// Set to end the run early (Ctrl-C): the simulator stops at the time reached and
    /// writes what it measured until then, marked incomplete. The live testbed has its own
    /// interrupt and ignores this.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}
