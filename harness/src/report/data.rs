//! Loading a results directory: every file the report draws from, parsed
//! into typed rows, and a list of what is missing or unreadable so that the
//! report can say so instead of failing. Only a directory that holds none of
//! the files at all is an error.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::de::DeserializeOwned;

use super::rows::*;
use crate::reproduce::results::INCOMPLETE;

/// A file the report wanted and did not get.
#[derive(Debug, Clone, PartialEq)]
pub struct Missing {
    pub file: &'static str,
    /// Why it matters, e.g. "chart 5 (where the bytes are)".
    pub used_for: &'static str,
    /// `None` when absent; the parse error when unreadable.
    pub error: Option<String>,
}

/// Everything the report reads from one results directory.
#[derive(Debug, Default)]
pub struct Results {
    pub dir: PathBuf,
    pub conditions: Vec<ConditionRow>,
    pub runs: Vec<RunRow>,
    pub requests: Vec<RequestRow>,
    pub large: Vec<LargeRow>,
    pub progress: Vec<ProgressRow>,
    pub resources: Vec<ResourceRow>,
    pub sockets: Vec<SocketRow>,
    pub app_sends: Vec<AppSendRow>,
    pub gauge: Vec<GaugeRow>,
    pub crosscheck: Vec<CrossRow>,
    /// `environment.json`, `Null` when missing.
    pub environment: serde_json::Value,
    /// The text of the `INCOMPLETE` marker, when the run was interrupted.
    pub incomplete: Option<String>,
    pub missing: Vec<Missing>,
    /// Files read in part: rows that could not be parsed were skipped.
    pub skipped: Vec<Skipped>,
}

/// Rows of a file that could not be read and were left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub file: &'static str,
    pub rows: usize,
    /// The first row's error, with its line number.
    pub first: String,
}

/// The files of a results directory, what the report uses them for, and
/// whether every directory has them (the proxy logs exist only when a
/// pingora route ran; the send log only when a slow client ran).
const FILES: [(&str, &str); 11] = [
    ("conditions.csv", "chart 1 and the tables of section 6"),
    (
        "runs.csv",
        "choosing the run shown per condition, and resource use",
    ),
    ("requests.csv", "chart 3 (time series of /fast)"),
    ("large-responses.csv", "charts 2, 3 and 5"),
    (
        "slow-progress.csv",
        "chart 5 (bytes consumed by the clients)",
    ),
    ("resource-samples.csv", "chart 4 (temp files) and chart 5"),
    (
        "socket-samples.csv",
        "chart 5 (socket queues) and the buffer sizes in the lesson",
    ),
    ("app-sends.csv", "chart 5 (when the app finished writing)"),
    (
        "proxy-gauge.csv",
        "chart 5 (bytes inside the pingora proxy)",
    ),
    ("crosscheck.csv", "the cross-check table of section 6"),
    (
        "environment.json",
        "the kernel buffer sysctls and the load profile in the lesson",
    ),
];

impl Results {
    /// Reads `dir`. Fails only when `dir` is not a results directory.
    pub fn load(dir: &Path) -> Result<Results> {
        if !dir.exists() {
            bail!("{} does not exist", dir.display());
        }
        if !dir.is_dir() {
            bail!("{} is not a directory", dir.display());
        }
        let present: BTreeSet<&str> = FILES
            .iter()
            .map(|(f, _)| *f)
            .filter(|f| dir.join(f).is_file())
            .collect();
        // An interrupted reproduction may have written only its marker and
        // environment.json; that still deserves a report saying so.
        let sweep = dir.join(super::sweep::SWEEP_CSV).is_file();
        if present.is_empty() && !dir.join(INCOMPLETE).exists() && !sweep {
            bail!(
                "{} is not a slowlab results directory: it has none of conditions.csv, runs.csv, environment.json (write one with `slowlab reproduce`)",
                dir.display()
            );
        }
        let mut r = Results {
            dir: dir.to_path_buf(),
            ..Results::default()
        };
        r.conditions = r.table("conditions.csv");
        r.runs = r.table("runs.csv");
        r.requests = r.table("requests.csv");
        r.large = r.table("large-responses.csv");
        r.progress = r.table("slow-progress.csv");
        r.resources = r.table("resource-samples.csv");
        r.sockets = r.table("socket-samples.csv");
        r.crosscheck = r.table("crosscheck.csv");
        let any_slow = r.runs.iter().any(|x| x.slow_clients > 0) || r.runs.is_empty();
        r.app_sends = if any_slow || dir.join("app-sends.csv").exists() {
            r.table("app-sends.csv")
        } else {
            Vec::new()
        };
        let any_pingora = r
            .runs
            .iter()
            .any(|x| x.route.starts_with("pingora") && x.slow_clients > 0);
        r.gauge = if any_pingora || dir.join("proxy-gauge.csv").exists() {
            r.table("proxy-gauge.csv")
        } else {
            Vec::new()
        };
        r.environment = r.json("environment.json");
        r.incomplete = fs::read_to_string(dir.join(INCOMPLETE))
            .ok()
            .map(|s| s.trim().to_string());
        Ok(r)
    }

    /// A directory of `slowlab sweep` results and nothing of a reproduction.
    pub fn is_sweep_only(&self) -> bool {
        self.dir.join(super::sweep::SWEEP_CSV).is_file()
            && !["conditions.csv", "runs.csv", "requests.csv"]
                .iter()
                .any(|f| self.dir.join(f).is_file())
    }

    fn used_for(file: &str) -> &'static str {
        FILES
            .iter()
            .find(|(f, _)| *f == file)
            .map(|(_, u)| *u)
            .unwrap_or("the report")
    }

    fn file_name(file: &str) -> &'static str {
        FILES
            .iter()
            .find(|(f, _)| *f == file)
            .map(|(f, _)| *f)
            .unwrap_or("a results file")
    }

    /// Reads a CSV file into rows; a missing or unreadable file becomes an
    /// entry of `missing` and no rows.
    fn table<T: DeserializeOwned>(&mut self, file: &str) -> Vec<T> {
        let path = self.dir.join(file);
        if !path.exists() {
            self.missing.push(Missing {
                file: Self::file_name(file),
                used_for: Self::used_for(file),
                error: None,
            });
            return Vec::new();
        }
        match read_csv(&path) {
            Ok((rows, bad)) if rows.is_empty() && !bad.is_empty() => {
                // Not one row parsed: the columns are not what we read.
                self.missing.push(Missing {
                    file: Self::file_name(file),
                    used_for: Self::used_for(file),
                    error: Some(bad[0].clone()),
                });
                Vec::new()
            }
            Ok((rows, bad)) => {
                if !bad.is_empty() {
                    self.skipped.push(Skipped {
                        file: Self::file_name(file),
                        rows: bad.len(),
                        first: bad[0].clone(),
                    });
                }
                rows
            }
            Err(e) => {
                self.missing.push(Missing {
                    file: Self::file_name(file),
                    used_for: Self::used_for(file),
                    error: Some(format!("{e:#}")),
                });
                Vec::new()
            }
        }
    }

    fn json(&mut self, file: &str) -> serde_json::Value {
        let path = self.dir.join(file);
        let parsed = fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))
            .and_then(|s| {
                serde_json::from_str(&s).with_context(|| format!("parsing {}", path.display()))
            });
        match parsed {
            Ok(v) => v,
            Err(e) => {
                let absent = !path.exists();
                self.missing.push(Missing {
                    file: Self::file_name(file),
                    used_for: Self::used_for(file),
                    error: (!absent).then(|| format!("{e:#}")),
                });
                serde_json::Value::Null
            }
        }
    }

    /// Whether a file was found and read.
    pub fn has(&self, file: &str) -> bool {
        !self.missing.iter().any(|m| m.file == file)
    }

    /// The run with this id.
    pub fn run(&self, run_id: &str) -> Option<&RunRow> {
        self.runs.iter().find(|r| r.run_id == run_id)
    }

    /// A number from `environment.json` by a path of keys.
    pub fn env_f64(&self, path: &[&str]) -> Option<f64> {
        let mut v = &self.environment;
        for k in path {
            v = v.get(k)?;
        }
        v.as_f64()
    }

    /// A string from `environment.json` by a path of keys.
    pub fn env_str(&self, path: &[&str]) -> Option<String> {
        let mut v = &self.environment;
        for k in path {
            v = v.get(k)?;
        }
        v.as_str().map(str::to_string)
    }

    /// A sysctl triple such as `net.ipv4.tcp_wmem` (min, default, max).
    pub fn sysctl_triple(&self, name: &str) -> Option<[f64; 3]> {
        let s = self.env_str(&["sysctls", name])?;
        let v: Vec<f64> = s
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        (v.len() == 3).then(|| [v[0], v[1], v[2]])
    }

    /// The load profile of the runs (the first preset's, as `reproduce`
    /// writes one per preset), as JSON.
    pub fn profile(&self) -> Option<&serde_json::Value> {
        let profiles = self.environment.get("run")?.get("profiles")?.as_object()?;
        let preset = self.runs.first().and_then(|r| r.preset.as_deref());
        preset
            .and_then(|p| profiles.get(p))
            .or_else(|| profiles.values().next())
    }

    /// A number of the load profile, e.g. `slow_rate`, or `body.large_bytes`.
    pub fn profile_f64(&self, path: &[&str]) -> Option<f64> {
        let mut v = self.profile()?;
        for k in path {
            v = v.get(k)?;
        }
        v.as_f64()
    }
}

/// Reads every row that parses, and the errors of those that do not (a
/// writer that raced may leave a stray line; one bad line should not cost
/// the whole file).
fn read_csv<T: DeserializeOwned>(path: &Path) -> Result<(Vec<T>, Vec<String>)> {
    let mut r = csv::ReaderBuilder::new()
        .flexible(false)
        .from_path(path)
        .with_context(|| format!("opening {}", path.display()))?;
    r.headers()
        .with_context(|| format!("reading the header of {}", path.display()))?;
    let mut rows = Vec::new();
    let mut bad = Vec::new();
    for (i, rec) in r.deserialize().enumerate() {
        match rec {
            Ok(row) => rows.push(row),
            // Line i + 2: one for the header, one because lines count from 1.
            Err(e) => bad.push(format!("line {}: {e}", i + 2)),
        }
    }
    Ok((rows, bad))
}
