//! The summaries of a results directory, computed from its `runs.csv` rows:
//! `conditions.csv` and `crosscheck.csv`, after each run of a reproduction
//! and for a merged directory (`slowlab merge`), by the same code.

use std::path::Path;

use anyhow::Result;
use schema::RunRow;

use crate::{aggregate, crosscheck};

/// Writes `conditions.csv` and `crosscheck.csv` of `dir` from `runs`.
pub fn write(dir: &Path, runs: &[RunRow], body_bytes: u64, proxy_capacity: u64) -> Result<()> {
    let conditions = aggregate::conditions(runs);
    let cross: Vec<_> = crosscheck::rows(
        &aggregate::by_condition(&conditions),
        2,
        body_bytes,
        proxy_capacity,
    )
    .iter()
    .map(crosscheck::Row::to_row)
    .collect();
    schema::write_summaries(dir, &conditions, &cross)
}
