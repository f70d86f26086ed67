//! Every results file of the lab, whoever writes it: its name, one serde
//! row struct per file (used both to write and to read, by every process
//! that writes it, so a column cannot be written in one place and read in
//! another), the appender and the `INCOMPLETE` marker. The children
//! (`slowlab load`, `serve`, `proxy`, `sweep-load`) write their files
//! through the same structs the harness reads ([`child`]). A file's header is its struct's
//! fields in order ([`columns`]); the book's results files document them
//! and a test holds the two together.
//!
//! # Layout
//! - names (the catalogue's [`catalogue::names`]): servers, routes,
//!   components, statuses and verdicts, parsed once when read, with an
//!   `Unknown` for names of other versions.
//! - [`cell`]: how numbers are written (decimals per column, empty cells).
//! - [`dims`]: the condition cells of `runs.csv`, `conditions.csv`,
//!   `crosscheck.csv`, `model.csv`, defined once ([`DimCells`]).
//! - [`file`]: a file through its struct: [`columns`], reading, appending.
//! - [`runs`]: `runs.csv`, `conditions.csv`, `crosscheck.csv`.
//! - [`load`]: the load generator's `requests.csv`, `large-responses.csv`,
//!   `slow-progress.csv`, `uploads.csv`, `slow-headers.csv`.
//! - [`samples`]: `resource-samples.csv`, `socket-samples.csv`.
//! - [`logs`]: `app-sends.csv`, `app-recvs.csv`, `proxy-responses.csv`, `proxy-gauge.csv`.
//! - [`sweep`]: `sweep.csv`, `sweep-summary.csv`.
//! - [`check`]: `check.csv`, written by `slowlab check`.
//! - [`model`]: `model.csv`, the buffer model (the `analysis` crate).
//! - [`set`]: a whole directory as rows ([`read_dir`]), and [`Appenders`].

pub mod cell;
#[macro_use]
pub mod child;
pub mod check;
#[macro_use]
pub mod dims;
pub mod environment;
pub mod file;
pub mod load;
pub mod logs;
pub mod model;
pub mod runs;
pub mod samples;
pub mod set;
pub mod sweep;

pub use catalogue::names;
pub use catalogue::{
    CapsMode, CapsName, Check, CheckName, Component, ComponentName, Direction, DirectionName, Name,
    Named, RouteName, RunStatus, ServerName, StatusName, Verdict, VerdictName,
};
pub use check::{CheckRow, LevelVerdict};
pub use dims::DimCells;
pub use file::{Appender, columns};
pub use load::{
    LargeCells, LargeRow, ProgressCells, ProgressRow, RequestCells, RequestRow, SlowHeaderCells,
    SlowHeaderRow, UploadCells, UploadRow,
};
pub use logs::{
    AppRecvRow, AppSendRow, GaugeCells, GaugeRow, ProxyResponseRow, ProxyStatsCells, RecvLogCells,
    SendLogCells,
};
pub use model::ModelRow;
pub use runs::{ComponentColumns, ConditionRow, CrossRow, RunRow};
pub use samples::{QdiscRow, ResourceRow, SocketRow};
pub use set::{
    Appenders, Ident, Missing, PerRun, ResultSet, Skipped, mark_incomplete, read_dir,
    write_summaries,
};
pub use sweep::{StepCells, SweepRow, SweepSummaryRow};

/// The files `slowlab load` writes into its `--out`, merged into the
/// results directory under the same names.
pub const REQUESTS_CSV: &str = "requests.csv";
pub const LARGE_CSV: &str = "large-responses.csv";
pub const PROGRESS_CSV: &str = "slow-progress.csv";
pub const UPLOADS_CSV: &str = "uploads.csv";
pub const SLOW_HEADERS_CSV: &str = "slow-headers.csv";
pub const LATENCY_HGRM: &str = "latency.hgrm";
pub const SUMMARY_JSON: &str = "summary.json";

pub const CONDITIONS_CSV: &str = "conditions.csv";
pub const RUNS_CSV: &str = "runs.csv";
pub const RESOURCES_CSV: &str = "resource-samples.csv";
pub const SOCKETS_CSV: &str = "socket-samples.csv";
/// The shaped qdiscs of runs with `--link`.
pub const QDISCS_CSV: &str = "qdisc-samples.csv";
pub const APP_SENDS_CSV: &str = "app-sends.csv";
/// The run copy of the app's receive log (`recv-log.csv`).
pub const APP_RECVS_CSV: &str = "app-recvs.csv";
pub const PROXY_RESPONSES_CSV: &str = "proxy-responses.csv";
pub const PROXY_GAUGE_CSV: &str = "proxy-gauge.csv";
pub const CROSSCHECK_CSV: &str = "crosscheck.csv";
pub const SWEEP_CSV: &str = "sweep.csv";
pub const SWEEP_SUMMARY_CSV: &str = "sweep-summary.csv";
pub const CHECK_CSV: &str = "check.csv";
/// The answer of `slowlab check` (its `--json` object): the pre-flight,
/// each route's words and the remedy, for the report.
pub const CHECK_JSON: &str = "check.json";
/// The buffer model against the measurements (the `analysis` crate).
pub const MODEL_CSV: &str = "model.csv";
pub const ENVIRONMENT_JSON: &str = "environment.json";
/// The marker of an unfinished results directory.
pub const INCOMPLETE: &str = "INCOMPLETE";

/// A run's raw files, in its directory: the app's send log, pingora's
/// response log and gauge (the last keeps its name in the results).
pub const SEND_LOG_CSV: &str = "send-log.csv";
/// The app's receive log (`POST /upload`), the send log's sibling.
pub const RECV_LOG_CSV: &str = "recv-log.csv";
pub const PROXY_STATS_CSV: &str = "proxy-stats.csv";
pub const PROXY_GAUGE_LOG: &str = PROXY_GAUGE_CSV;
/// The steps `slowlab sweep-load` writes into its `--out`.
pub const STEPS_CSV: &str = "steps.csv";

/// Every CSV file of a results directory with its columns, in the book's results files'
/// order.
pub fn schema() -> Vec<(&'static str, &'static [&'static str])> {
    vec![
        (CONDITIONS_CSV, columns::<ConditionRow>()),
        (RUNS_CSV, columns::<RunRow>()),
        (REQUESTS_CSV, columns::<RequestRow>()),
        (LARGE_CSV, columns::<LargeRow>()),
        (PROGRESS_CSV, columns::<ProgressRow>()),
        (UPLOADS_CSV, columns::<UploadRow>()),
        (SLOW_HEADERS_CSV, columns::<SlowHeaderRow>()),
        (RESOURCES_CSV, columns::<ResourceRow>()),
        (SOCKETS_CSV, columns::<SocketRow>()),
        (QDISCS_CSV, columns::<QdiscRow>()),
        (APP_SENDS_CSV, columns::<AppSendRow>()),
        (APP_RECVS_CSV, columns::<AppRecvRow>()),
        (PROXY_RESPONSES_CSV, columns::<ProxyResponseRow>()),
        (PROXY_GAUGE_CSV, columns::<GaugeRow>()),
        (CROSSCHECK_CSV, columns::<CrossRow>()),
        (SWEEP_CSV, columns::<SweepRow>()),
        (SWEEP_SUMMARY_CSV, columns::<SweepSummaryRow>()),
        (CHECK_CSV, columns::<CheckRow>()),
        (MODEL_CSV, columns::<ModelRow>()),
    ]
}

#[cfg(test)]
mod tests;
