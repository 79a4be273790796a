#![deny(unsafe_code)]
//! # l4s-live
//!
//! The live testbed: real packets through a userspace L4S bottleneck.
//!
//! * [`udp`]: UDP sockets that set the ECN field per packet and read it on arrival.
//! * [`ecncheck`]: `l4s ecn-check` and `l4s reflect`, which tell per direction whether
//!   ECT(1) survives a path, is bleached or remarked, and whether CE is seen.
//! * [`wire`]: the payload of live UDP Prague and probe datagrams (send timestamp for the
//!   one-way delay, then the transport header).
//! * [`endpoints`]: flows on real sockets: UDP Prague and probes (the sans-IO objects the
//!   simulator drives, with the real clock), kernel TCP with `TCP_CONGESTION`.
//! * [`apps`]: application flows (bulk, sync, request-response, web, query) on kernel
//!   TCP and UDP sockets, timed per completion.
//! * [`media`]: media flows (the simulator's sans-IO SCReAM / RT-Prague endpoints) on
//!   real sockets, measured per frame.
//! * [`datagram`]: the one driver of every datagram endpoint (UDP Prague, probes, media).
//! * [`meter`]: per-flow measurement with the simulator's meanings.
//! * [`topology`]: the scenario's nodes and links as namespaces, veths and elements.
//! * [`mod@run`]: a whole live run, summarised in the simulator's results format.
//! * [`cli`]: `l4s reflect`, `l4s ecn-check` and `l4s cleanup`.
//! * [`tap`]: packet taps that give kernel TCP flows per-packet one-way delay, CE and loss.
//! * [`timeline`]: `packets.parquet` from the endpoints' and the forwarder's records.
//! * `sys` (private): every system call, behind safe wrappers; the only module allowed
//!   `unsafe` (the crate is `#![deny(unsafe_code)]`).

pub mod apps;
pub mod cli;
pub mod datagram;
pub mod ecncheck;
pub mod endpoints;
pub mod media;
pub mod meter;
pub mod run;
#[allow(unsafe_code)]
mod sys;
pub mod tap;
pub mod timeline;
pub mod topology;
pub mod udp;
pub mod wire;

pub use run::{run, Host, LiveOptions, LiveRunInfo};

/// What kind of failure a [`LiveError`] is (the CLI maps it to an exit status).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiveErrorKind {
    /// The scenario or the command line asks for something this host cannot do (a
    /// congestion control the kernel lacks, Accurate ECN, ...). Nothing was run.
    Input,
    /// Not root / a capability or a tool is missing.
    Privilege,
    /// Building the testbed failed.
    Setup,
    /// The run failed.
    Run,
    /// SIGINT or SIGTERM stopped the run; everything was cleaned up, no results written.
    Interrupted,
}

/// An error of the live backend, with a message a person can act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveError {
    pub kind: LiveErrorKind,
    pub message: String,
}

impl LiveError {
    pub fn input(m: impl Into<String>) -> LiveError {
        LiveError {
            kind: LiveErrorKind::Input,
            message: m.into(),
        }
    }
    pub fn setup(m: impl Into<String>) -> LiveError {
        LiveError {
            kind: LiveErrorKind::Setup,
            message: m.into(),
        }
    }
    pub fn run(m: impl Into<String>) -> LiveError {
        LiveError {
            kind: LiveErrorKind::Run,
            message: m.into(),
        }
    }
}

impl std::fmt::Display for LiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LiveError {}

impl From<l4s_fwd::FwdError> for LiveError {
    fn from(e: l4s_fwd::FwdError) -> LiveError {
        let kind = match &e {
            l4s_fwd::FwdError::Privilege { .. } | l4s_fwd::FwdError::MissingTool { .. } => LiveErrorKind::Privilege,
            l4s_fwd::FwdError::Config { .. } => LiveErrorKind::Input,
            _ => LiveErrorKind::Setup,
        };
        LiveError {
            kind,
            message: e.to_string(),
        }
    }
}
