//! # l4s-aqm
//!
//! Sans-IO queue disciplines for l4s-lab. Every discipline implements [`Qdisc`] over any
//! packet type that implements [`l4s_core::QueuePacket`].

pub mod qdisc;

pub use qdisc::{DropReason, Dequeued, Dropped, Enqueued, QueueId, QueueStats, Qdisc};
