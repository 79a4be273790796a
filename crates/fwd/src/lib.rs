//! # l4s-fwd
//!
//! The userspace L4S bottleneck of l4s-lab and the namespace plumbing of the live testbed.
//!
//! * [`netns`]: network namespaces and veth pairs with a run-specific prefix, threads and
//!   commands inside a namespace, offload switching, a cleanup guard, a process-wide
//!   registry with SIGINT/SIGTERM cleanup, and removal of leftovers of killed runs.
//! * [`error`]: [`FwdError`], the crate's one error type.

pub mod afpacket;
#[cfg(feature = "cli")]
pub mod cli;
pub mod error;
pub mod netns;
pub mod packet;
pub mod router;

pub use router::{run, run_recording, PacketRecord, RouterConfig, RouterStats, RouterStatus};

pub use error::FwdError;
