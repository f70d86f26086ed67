//! The summary `slowlab sweep-load` prints at the end: a few lines for
//! people, or with `--json` one object whose `uploads` and `slow_headers`
//! are `slowlab load`'s ([`UploadSummary`], [`HeadersSummary`]) over every
//! upload and slowloris connection of the sweep.

use anyhow::Context;
use serde::Serialize;

use super::{StepRow, SweepConfig, SweepOutcome};
use crate::summary::{HeadersSummary, UploadSummary};

/// The `--json` summary.
#[derive(Debug, Clone, Serialize)]
pub struct SweepSummary {
    pub target: String,
    pub steps: usize,
    pub steps_planned: usize,
    pub stopped_saturated: bool,
    pub requests: u64,
    pub replies: u64,
    pub errors: u64,
    /// The demanded connection rate of the last step before the first
    /// step with errors; null when the first step had errors.
    pub highest_error_free_conn_rate: Option<f64>,
    pub loadgen_cpu_s_per_1000: Option<f64>,
    /// Wall clock of the slow clients' start (`started_s` is counted from it).
    pub t0_unix_s: f64,
    pub slow: SlowPoolSummary,
    pub uploads: UploadSummary,
    pub slow_headers: HeadersSummary,
    pub steps_csv: String,
}

/// The slow readers kept running (`--slow`).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SlowPoolSummary {
    pub clients: usize,
    pub completed: u64,
    pub failed: u64,
}

impl SweepSummary {
    pub fn of(config: &SweepConfig, o: &SweepOutcome) -> SweepSummary {
        SweepSummary {
            target: config.target.url.clone(),
            steps: o.rows.len(),
            steps_planned: config.rates.len(),
            stopped_saturated: o.stopped_saturated,
            requests: o.requests(),
            replies: o.replies(),
            errors: o.rows.iter().map(StepRow::errors).sum(),
            highest_error_free_conn_rate: clean_step(o).map(|r| r.conn_rate_demanded),
            loadgen_cpu_s_per_1000: o.cpu_s_per_1000(),
            t0_unix_s: o.t0_unix_s,
            slow: SlowPoolSummary {
                clients: config.slow,
                completed: o.slow_completed,
                failed: o.slow_failed,
            },
            uploads: UploadSummary::of(&o.uploads),
            slow_headers: HeadersSummary::of(&o.slow_headers),
            steps_csv: config.out.join("steps.csv").display().to_string(),
        }
    }
}

/// The last step of the error-free run of steps from the first.
fn clean_step(o: &SweepOutcome) -> Option<&StepRow> {
    o.rows.iter().take_while(|r| r.errors() == 0).last()
}

/// The `--json` summary, one line.
pub fn json(config: &SweepConfig, o: &SweepOutcome) -> anyhow::Result<String> {
    let s =
        serde_json::to_string(&SweepSummary::of(config, o)).context("serializing the summary")?;
    Ok(s + "\n")
}

/// The summary for people.
pub fn text(config: &SweepConfig, o: &SweepOutcome) -> String {
    let j = SweepSummary::of(config, o);
    let mut s = format!(
        "sweep-load: {} of {} steps{}; {} requests, {} replies, {} errors\n",
        j.steps,
        j.steps_planned,
        if j.stopped_saturated {
            " (stopped: saturated)"
        } else {
            ""
        },
        j.requests,
        j.replies,
        j.errors,
    );
    s += &match clean_step(o) {
        Some(r) => format!(
            "highest error-free step: {} conn/s ({} req/s demanded), {:.1} replies/s\n",
            r.conn_rate_demanded,
            r.req_rate_demanded(),
            r.replies_per_s.1
        ),
        None => "highest error-free step: none (the first step had errors)\n".into(),
    };
    if let Some(c) = j.loadgen_cpu_s_per_1000 {
        s += &format!("load generator CPU: {c:.3} s per 1000 requests\n");
    }
    if config.slow > 0 {
        s += &format!(
            "slow readers: {} kept running; {} downloads complete, {} failed\n",
            config.slow, o.slow_completed, o.slow_failed
        );
    }
    let up = &config.upload;
    if up.uploaders > 0 {
        let u = &j.uploads;
        let median = u
            .send_s_median
            .map_or_else(|| "-".into(), |v| format!("{v:.3}"));
        s += &format!(
            "slow uploaders: {} kept running; {} uploads ok, {} failed; send s median {median}\n",
            up.uploaders, u.ok, u.failed
        );
    }
    if up.slow_headers > 0 {
        let h = &j.slow_headers;
        s += &format!(
            "slowloris clients: {} kept running; {} connections, {} held to the end, {} closed by the server\n",
            up.slow_headers, h.clients, h.held_to_end, h.closed_by_server
        );
    }
    let ports: usize = o.rows.iter().filter(|r| r.err_ports_exhausted > 0).count();
    if ports > 0 {
        s += &format!(
            "WARNING: ephemeral ports ran out in {ports} step(s) (EADDRNOTAVAIL, TIME_WAIT): those errors are the client's, not the server's\n"
        );
    }
    s += &format!("steps: {}\n", j.steps_csv);
    s
}
