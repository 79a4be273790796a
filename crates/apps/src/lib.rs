//! # l4s-apps
//!
//! Sans-IO application traffic over the `l4s-transport` TCP endpoints (and a UDP-like
//! query/reply), with per-unit completion times:
//!
//! * **bulk**: a transfer of `bytes` over a new connection (a CDN download, an OS update),
//!   optionally repeated;
//! * **sync**: chunks of `chunk` bytes separated by application pauses over one persistent
//!   connection (a cloud-drive sync);
//! * **request-response**: small requests answered by `response` bytes, over a persistent
//!   connection or a new connection per request;
//! * **web**: page loads of N objects over M new parallel connections (HTTP/1.1 style);
//! * **query**: DNS-like UDP queries with a one-packet reply, retried after a timeout.
//!
//! ## Model
//!
//! The flow's source node holds the [`AppSender`], the data source (the server of a
//! download, the uploader of a sync); the destination holds the [`AppReceiver`], where data
//! is consumed. Requests travel destination → source as single small packets on the
//! reverse path ([`AppHeader::Request`]); the receiver runs the schedule (`repeat`,
//! `think`, `count`), issues requests, retries unanswered ones ([`DEFAULT_TIMEOUT`] says
//! why 1 s, then adaptive) and records [`Completion`]s. The sender answers: a request
//! with `nth = 0` opens a connection (the sender's TCP sends the SYN, so a new connection
//! costs one extra round trip, as a real client's handshake does), later requests on the
//! connection are served in order, and a request marked `close` lets the connection finish
//! once its data is acknowledged. Sync is the exception: the source offers each chunk
//! itself, `pause` after the previous one was acknowledged, and marks the segment holding
//! a chunk's first byte with the offer time ([`AppHeader::Tcp`] `offered`).
//!
//! TCP connections of one app are multiplexed by a 32-bit connection id (the receiver hands
//! them out in increasing order and never reuses one while it is open). A segment for a
//! connection the receiver does not know is answered with [`AppHeader::Reset`] and the
//! sender drops that connection (RFC 9293 §3.10.7.1), which also cleans up a connection a
//! stale duplicate request reopened.
//!
//! ECN: `cc` and `ecn` choose L4S (prague with AccECN, data ECT(1)) or classic (cubic/reno
//! with ECN off or RFC 3168) as for a `tcp` flow; each connection validates ECN on its own
//! (RFC 9768 §3.2.2.3, RFC 9000 §13.4.2), and [`AppSender`]'s stats report the first failure.
//!
//! The schedule itself (when instances start, what they consist of, web pages, query
//! timeouts and retries, sync chunk sizes and pauses, completions) is the sans-IO,
//! clock-free [`schedule`] module, which the live testbed's application clients and
//! servers on kernel sockets use too, so both backends run one schedule.
//!
//! Not modelled: TCP FIN (connections end by acknowledgement and reset), HTTP/2
//! multiplexing, TLS handshakes, a restart window after idle (RFC 5681 §4.1).

#![forbid(unsafe_code)]

pub mod config;
mod conns;
pub mod header;
pub mod receiver;
pub mod schedule;
pub mod sender;
mod stats;

pub use config::{AppConfig, AppEcn, AppKind, ConfigError, Size};
pub use header::{AppHeader, Completion, CompletionKind};
pub use receiver::AppReceiver;
pub use schedule::{ChunkSource, Instance, Schedule, Unit, DEFAULT_TIMEOUT, MAX_TIMEOUT, MIN_TIMEOUT};
pub use sender::AppSender;
