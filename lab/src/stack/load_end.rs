//! How a `slowlab load` ended, as the harness records it: a load that ran
//! to its end measured something, even when every `/fast` request failed.
//!
//! `slowlab load` exits 1 both when no `/fast` request succeeded and when
//! it ran out of descriptors (the book, "Exit status"), after writing all its
//! files. The first is a finding (slowloris clients holding every worker
//! time every `/fast` request out), the second a run that is not
//! comparable; its `summary.json` tells them apart.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::run::LoadExit;

/// The parts of `summary.json` that say how the load ended.
#[derive(Debug, Deserialize)]
struct Ending {
    t0_unix_s: f64,
    fast: FastEnding,
    errors: BTreeMap<String, u64>,
}

#[derive(Debug, Deserialize)]
struct FastEnding {
    requests: u64,
    ok: u64,
}

impl LoadExit {
    /// Whether `slowlab load` ran to its end and measured, its files in
    /// `out`: it exited 0, or it exited 1 ([`common::exit::FAILED`]) because
    /// no `/fast` request succeeded, as the `summary.json` it wrote in
    /// `out` at this run (its t0 not before `since_unix_s`) says, and no
    /// descriptor ran out. Any other end (another status, no summary or an
    /// older one, `fd_exhausted`, a signal, the time limit) did not.
    pub fn measured(&self, out: &Path, since_unix_s: f64) -> bool {
        match self {
            LoadExit::Exited { status, .. } if status.success() => true,
            LoadExit::Exited { status, .. }
                if status.code() == Some(i32::from(common::exit::FAILED)) =>
            {
                every_fast_failed(out, since_unix_s)
            }
            _ => false,
        }
    }

    /// [`Self::measured`] as a result: `Ok` when the load measured, else
    /// why it did not, in one line (its status and the last line of its
    /// stderr, which names a descriptor that ran out).
    pub fn measurement(&self, out: &Path, since_unix_s: f64) -> anyhow::Result<()> {
        if self.measured(out, since_unix_s) {
            return Ok(());
        }
        Err(match self {
            LoadExit::Exited { status, last_error } => {
                anyhow::anyhow!("slowlab load exited with {status}: {last_error}")
            }
            LoadExit::Interrupted => anyhow::anyhow!("interrupted"),
            LoadExit::TimedOut(limit) => {
                anyhow::anyhow!("slowlab load did not finish within {limit:?}")
            }
        })
    }
}

fn every_fast_failed(out: &Path, since_unix_s: f64) -> bool {
    let path = out.join(loadgen::output::SUMMARY_JSON);
    let Some(e) = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Ending>(&t).ok())
    else {
        return false;
    };
    let exhausted = loadgen::error::ErrorKind::FdExhausted.as_str();
    e.t0_unix_s >= since_unix_s
        && e.fast.requests > 0
        && e.fast.ok == 0
        && e.errors.get(exhausted).is_none_or(|&n| n == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    fn exited(code: i32) -> LoadExit {
        LoadExit::Exited {
            status: ExitStatus::from_raw(code << 8),
            last_error: String::new(),
        }
    }

    fn summary(dir: &Path, t0: f64, ok: u64, errors: &str) {
        let json = format!(
            r#"{{"t0_unix_s": {t0}, "fast": {{"requests": 10, "ok": {ok}, "failed": {}}}, "errors": {{{errors}}}}}"#,
            10 - ok
        );
        std::fs::write(dir.join(loadgen::output::SUMMARY_JSON), json).unwrap();
    }

    #[test]
    fn every_fast_request_failing_is_measured_and_a_broken_load_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        assert!(exited(0).measured(out, 100.0));
        // Exit 1 without a summary: it broke before writing its files.
        assert!(!exited(1).measured(out, 100.0));
        summary(out, 105.0, 0, r#""timeout": 10"#);
        assert!(exited(1).measured(out, 100.0));
        // An older run's summary in the same place says nothing of this one.
        assert!(!exited(1).measured(out, 106.0));
        // Descriptors ran out: not comparable.
        summary(out, 105.0, 0, r#""timeout": 5, "fd_exhausted": 5"#);
        assert!(!exited(1).measured(out, 100.0));
        // Exit 1 though some succeeded is not this finding.
        summary(out, 105.0, 3, r#""timeout": 7"#);
        assert!(!exited(1).measured(out, 100.0));
        summary(out, 105.0, 0, r#""timeout": 10"#);
        for other in [exited(2), exited(101), LoadExit::Interrupted] {
            assert!(!other.measured(out, 100.0), "{other:?}");
        }
        let limit = LoadExit::TimedOut(std::time::Duration::from_secs(1));
        assert!(!limit.measured(out, 100.0));
        // The same rule as a result, the reason in one line.
        assert!(exited(1).measurement(out, 100.0).is_ok());
        summary(out, 105.0, 0, r#""fd_exhausted": 10"#);
        let broken = LoadExit::Exited {
            status: ExitStatus::from_raw(1 << 8),
            last_error: "slowlab: the load generator ran out of file descriptors".into(),
        };
        let why = broken.measurement(out, 100.0).unwrap_err().to_string();
        assert!(
            why.contains("exit status: 1") && why.contains("ran out of file descriptors"),
            "{why}"
        );
        assert!(!why.contains('\n'), "{why}");
        assert_eq!(
            limit.measurement(out, 100.0).unwrap_err().to_string(),
            "slowlab load did not finish within 1s"
        );
    }
}
