//! Campaigns: many runs of one scenario, paired and repeated, kept in a store that an
//! interrupted campaign resumes from.
//!
//! A campaign file names a scenario (whose `[[variants]]` are the configurations a pair
//! compares, such as L4S and classic), a grid of swept values, parameters drawn per point
//! (per simulated home), groups that label runs and set keys (a time of day and its
//! background load), and a number of seeds. Every variant of a point runs with the same
//! seed and parameters; the variant order alternates pair by pair. `docs/campaigns.md`
//! documents the format and the store.
//!
//! ```no_run
//! use l4s_lab::campaign::{self, CampaignOptions};
//! let out = campaign::run(
//!     std::path::Path::new("campaigns/dualpi2-sweep.toml"),
//!     &mut l4s_lab::Simulator,
//!     &CampaignOptions::default(),
//!     &mut campaign::NoCampaignProgress,
//! )
//! .unwrap();
//! println!("{} of {} runs done; {}", out.done, out.unique_runs, out.dir.display());
//! ```
//!
//! Each run is stored under the key of its effective scenario (the scenario with the
//! campaign's keys and its seed set, in canonical form, with the content of any trace file
//! it reads, and the outputs it keeps): the same run is never done twice, and a changed
//! parameter never meets an old result. A run's folder is written beside its place and
//! renamed into it when complete, so a killed campaign leaves no half-written run; one
//! whose summary does not read is done again.
//!
//! At the end of every start, the store's tables ([`tables`]: `index.parquet`,
//! `pairs.parquet`) and its page ([`report`]: `campaign.html`, the paired differences and
//! their statistics, [`stats`]) are made from the store alone; both can be made again on
//! demand.

mod exec;
pub mod plan;
pub mod report;
pub mod spec;
pub mod stats;
pub mod store;
pub mod tables;

pub use exec::{run, run_spec, run_to_files, CampaignOptions, CampaignProgress, NoCampaignProgress, Outcome, Session};
pub use plan::{Plan, PlannedRun, Point};
pub use spec::Spec;
pub use store::{status, Status};
pub use tables::Tables;

use crate::Error;
use std::path::{Path, PathBuf};

/// Read, validate and expand a campaign file: every scenario it runs is validated.
pub fn load(file: &Path) -> Result<(Spec, Plan), Error> {
    let spec = spec::load(file)?;
    let plan = plan::build(&spec)?;
    Ok((spec, plan))
}

/// The default store of a campaign: `results/campaigns/<name>`.
pub fn default_dir(spec: &Spec) -> PathBuf {
    PathBuf::from("results").join("campaigns").join(&spec.name)
}

/// Build (again) the tables of the store at `dir` from its completed runs.
pub fn write_tables(dir: &Path) -> Result<Tables, Error> {
    store::marker(dir)?;
    let plan = store::read_plan(dir)?;
    tables::write(dir, &plan)
}
