//! Loading a results directory for the report: every file through
//! [`schema::read_dir`] (typed rows, names parsed, what is missing
//! or unreadable listed instead of failing), what each file is used for,
//! and lookups into `environment.json`. Only a directory that holds none
//! of the files at all is an error.

use std::path::Path;

use anyhow::{Result, bail};
use common::exit::BadInput;

use schema::{self as files, INCOMPLETE, ResultSet};

/// Everything the report reads from one results directory.
pub type Results = ResultSet;

/// The files of a results directory and what the report uses them for.
const USES: [(&str, &str); 15] = [
    (files::CONDITIONS_CSV, "chart 1 and the tables of section 6"),
    (
        files::RUNS_CSV,
        "choosing the run shown per condition, and resource use",
    ),
    (files::REQUESTS_CSV, "chart 3 (time series of /fast)"),
    (files::LARGE_CSV, "charts 2, 3 and 5"),
    (
        files::PROGRESS_CSV,
        "chart 5 (bytes consumed by the clients)",
    ),
    (files::RESOURCES_CSV, "chart 4 (temp files) and chart 5"),
    (
        files::SOCKETS_CSV,
        "chart 5 (socket queues) and the buffer sizes in the lesson",
    ),
    (
        files::QDISCS_CSV,
        "chart 5 (the link's queue) and the lesson's paragraph on shaped links",
    ),
    (
        files::APP_SENDS_CSV,
        "chart 5 (when the app finished writing)",
    ),
    (
        files::PROXY_GAUGE_CSV,
        "chart 5 (bytes inside the pingora proxy)",
    ),
    (files::CROSSCHECK_CSV, "the cross-check table of section 6"),
    (files::SWEEP_CSV, "the sweep charts"),
    (files::SWEEP_SUMMARY_CSV, "the sweep table"),
    (files::CHECK_CSV, "the check's levels"),
    (
        files::ENVIRONMENT_JSON,
        "the kernel buffer sysctls and the load profile in the lesson",
    ),
];

/// What the report uses `file` for, e.g. "chart 5 (where the bytes are)".
pub fn used_for(file: &str) -> &'static str {
    USES.iter()
        .find(|(f, _)| *f == file)
        .map(|(_, u)| *u)
        .unwrap_or("the report")
}

/// Reads `dir` for the report. Fails only when `dir` is not a results
/// directory.
pub fn load(dir: &Path) -> Result<Results> {
    if !dir.exists() {
        bail!(BadInput::new(format!("{} does not exist", dir.display())));
    }
    if !dir.is_dir() {
        bail!(BadInput::new(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    // An interrupted reproduction may have written only its marker and
    // environment.json; that still deserves a report saying so.
    let any = USES.iter().any(|(f, _)| dir.join(f).is_file());
    if !any && !dir.join(INCOMPLETE).exists() {
        bail!(BadInput::new(format!(
            "{} is not a slowlab results directory: it has none of conditions.csv, runs.csv, check.csv, sweep.csv, environment.json (write one with `slowlab reproduce`, `check` or `sweep`)",
            dir.display()
        )));
    }
    let r = files::read_dir(dir);
    // Files of the right names that hold nothing readable (garbage, or
    // empty) make no report either, unless the run was interrupted.
    let nothing = r.runs.is_empty()
        && r.conditions.is_empty()
        && r.check.is_empty()
        && r.sweep.is_empty()
        && r.sweep_summary.is_empty()
        && r.environment.is_null();
    if nothing && r.incomplete.is_none() {
        bail!(BadInput::new(format!(
            "{} holds no readable results: its files have no rows that slowlab wrote",
            dir.display()
        )));
    }
    Ok(r)
}
