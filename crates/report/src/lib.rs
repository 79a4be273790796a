//! # l4s-report
//!
//! Turns an l4s-lab results directory into something a latency engineer can trust:
//!
//! * [`verdict()`]: a one-line headline and self-explaining warnings (misconfigured
//!   bottleneck, bleached ECN, unsaturated link, starvation, thin statistics);
//! * [`render_report`] / [`write_report`]: one self-contained HTML file (inline SVG charts
//!   generated here, inline CSS, no script, no font, no URL) with the verdict, summary tables
//!   and time series, CDF and CCDF charts;
//! * [`render_compare`] / [`compare_table`]: several runs overlaid on shared axes, and a
//!   difference table relative to the first run, as HTML or plain text;
//! * [`write_pngs`]: every chart of the report as a PNG (rasterised from the same SVG);
//! * [`render_campaign`]: the page of a campaign (many paired runs), from statistics its
//!   caller computed ([`campaign::CampaignPage`]); [`write_chart_pngs`] its charts as PNGs.
//!
//! The report reads only the results directory (DESIGN.md principle 5): `summary.json`
//! is required; `snapshots-flows.csv`, `snapshots-queues.csv` and `distributions.csv` are
//! used when present, and a section that needs a missing file says so.

#![forbid(unsafe_code)]

pub mod campaign;
pub mod charts;
pub mod compare;
mod csv;
pub mod data;
mod error;
mod figures;
pub mod fmt;
pub mod html;
mod png;
#[doc(hidden)]
pub mod synth;
pub mod variant_set;
pub mod verdict;

pub use campaign::render_campaign;
pub use compare::{
    compare_table, compare_table_with, comparison, render_compare, render_compare_with, CompareOptions, Comparison,
};
pub use data::{Distributions, Results, Snapshots};
pub use error::ReportError;
pub use html::{render_report, write_report};
pub use png::{write_chart_pngs, write_pngs, DEFAULT_PNG_SCALE};
pub use verdict::{verdict, Level, Severity, Verdict, Warning};
