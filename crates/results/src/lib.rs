//! The run record: what one dyno run produced, in one documented serde structure.
//!
//! Measurement writes these records and reporting only reads them; a report can be rendered again
//! from the record alone, years later. The JSON contract is `schema/dyno.run-2.schema.json`, and the
//! tests validate every record dyno writes against it.
//!
//! # Layout
//!
//! - [`migrate`]: records of the first schema (`dyno.run/1`) brought to the current one as they
//!   are read.
//! - [`record`]: the types of the record (`RunRecord`, `Case`, `Rep`, `Summary` …), every field documented.
//! - [`rate`]: a count over a time, below the record and the statistics.
//! - [`stats`]: pure statistics over samples (spread of repetitions, percentiles of a histogram).
//! - [`faults`]: what was done to a target and when, and what each fault did to a case
//!   (recovery time, unavailability).
//! - [`histogram`]: the latency histogram type and its portable encoding (HdrHistogram V2, deflate, base64).
//! - [`hlog`]: HdrHistogram interval logs, written at once or streamed as a run goes, and read back.
//! - [`merge`]: one exact record from the records of a run's shards (`dyno merge`).
//! - [`series`]: time series of bounded length (thinned, never truncated).
//! - [`store`]: claiming a new run's directory (never an earlier run's, never a foreign one), writing a record atomically, and reading the records of a results directory back.
//! - [`units`]: how a time reads for people, one rule everywhere.

pub mod compare;
pub mod consistency;
pub mod faults;
pub mod histogram;
pub mod history;
pub mod hlog;
pub mod merge;
pub mod migrate;
pub mod rate;
pub mod record;
pub mod rng;
pub mod series;
pub mod stats;
pub mod store;
pub mod thresholds;
pub mod units;

pub use histogram::{Histogram, new_histogram};
pub use record::*;

/// A suite as its records name it (`RunRecord::suite`): the engine runs it and the renderers
/// show it by this name, which it spells once.
pub trait Named {
    fn name(&self) -> &'static str;
}
