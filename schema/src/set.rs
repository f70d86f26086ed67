//! A results directory as rows: [`read_dir`] reads every file into its row
//! struct and records what is missing or unreadable instead of failing;
//! [`Appenders`] appends the per-run files run by run.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::file::{self, Appender};
use super::*;
use catalogue::{RouteName, ServerName};

/// A file that was wanted and not read.
#[derive(Debug, Clone, PartialEq)]
pub struct Missing {
    pub file: &'static str,
    /// `None` when absent; the error when unreadable.
    pub error: Option<String>,
}

/// Rows of a file that could not be read and were left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub file: &'static str,
    pub rows: usize,
    /// The first row's error, with its line number.
    pub first: String,
}

/// Every file of one results directory, as rows.
#[derive(Debug, Default, Clone)]
pub struct ResultSet {
    pub dir: PathBuf,
    pub conditions: Vec<ConditionRow>,
    pub runs: Vec<RunRow>,
    pub requests: Vec<RequestRow>,
    pub large: Vec<LargeRow>,
    pub progress: Vec<ProgressRow>,
    /// `uploads.csv`: the slow uploaders of request-direction runs.
    pub uploads: Vec<UploadRow>,
    /// `slow-headers.csv`: the slowloris clients.
    pub slow_headers: Vec<SlowHeaderRow>,
    pub resources: Vec<ResourceRow>,
    pub sockets: Vec<SocketRow>,
    /// `qdisc-samples.csv`: the shaped qdiscs of runs with a link.
    pub qdiscs: Vec<QdiscRow>,
    pub app_sends: Vec<AppSendRow>,
    /// `app-recvs.csv`: the app's receive log, one row per upload.
    pub app_recvs: Vec<AppRecvRow>,
    pub proxy_responses: Vec<ProxyResponseRow>,
    pub gauge: Vec<GaugeRow>,
    pub crosscheck: Vec<CrossRow>,
    pub sweep: Vec<SweepRow>,
    pub sweep_summary: Vec<SweepSummaryRow>,
    /// `check.csv` of a `slowlab check` directory.
    pub check: Vec<CheckRow>,
    /// `environment.json`, `Null` when missing.
    pub environment: serde_json::Value,
    /// `check.json`, the answer of a `slowlab check` directory; `Null`
    /// elsewhere.
    pub check_answer: serde_json::Value,
    /// The text of the `INCOMPLETE` marker, when present.
    pub incomplete: Option<String>,
    /// Files expected and absent or unreadable; their rows are empty.
    pub missing: Vec<Missing>,
    /// Files read in part.
    pub skipped: Vec<Skipped>,
}

/// Reads every results file of `dir`. Never fails: what cannot be read is
/// listed in `missing` or `skipped`. Files that only some directories have
/// are expected only where they would have been written: the send log
/// where a slow client ran, the pingora gauge where a pingora route had
/// slow clients, the sweep files in a sweep directory, the reproduction's
/// files unless the directory holds sweeps only.
pub fn read_dir(dir: &Path) -> ResultSet {
    let mut r = ResultSet {
        dir: dir.to_path_buf(),
        ..ResultSet::default()
    };
    if r.is_check_only() {
        r.check = r.table(CHECK_CSV);
    } else if !r.is_sweep_only() {
        r.conditions = r.table(CONDITIONS_CSV);
        r.runs = r.table(RUNS_CSV);
        r.requests = r.table(REQUESTS_CSV);
        r.large = r.table(LARGE_CSV);
        r.progress = r.table(PROGRESS_CSV);
        r.resources = r.table(RESOURCES_CSV);
        r.sockets = r.table(SOCKETS_CSV);
        r.crosscheck = r.table(CROSSCHECK_CSV);
        let any_slow = r.runs.iter().any(|x| x.slow_readers() > 0) || r.runs.is_empty();
        if any_slow || dir.join(APP_SENDS_CSV).exists() {
            r.app_sends = r.table(APP_SENDS_CSV);
        }
        let any_pingora = r.runs.iter().any(|x| {
            x.slow_clients > 0
                && matches!(
                    x.route.known().and_then(catalogue::Route::proxy),
                    Some((catalogue::ProxyKind::Pingora, _))
                )
        });
        if any_pingora || dir.join(PROXY_GAUGE_CSV).exists() {
            r.gauge = r.table(PROXY_GAUGE_CSV);
        }
        if dir.join(PROXY_RESPONSES_CSV).exists() {
            r.proxy_responses = r.table(PROXY_RESPONSES_CSV);
        }
        let any_upload = r.runs.iter().any(|x| x.slow_uploads() > 0);
        if any_upload || dir.join(UPLOADS_CSV).exists() {
            r.uploads = r.table(UPLOADS_CSV);
        }
        if any_upload || dir.join(APP_RECVS_CSV).exists() {
            r.app_recvs = r.table(APP_RECVS_CSV);
        }
        if r.runs.iter().any(|x| x.link.is_some()) || dir.join(QDISCS_CSV).exists() {
            r.qdiscs = r.table(QDISCS_CSV);
        }
        if r.runs.iter().any(|x| x.slow_headers() > 0) || dir.join(SLOW_HEADERS_CSV).exists() {
            r.slow_headers = r.table(SLOW_HEADERS_CSV);
        }
    }
    if dir.join(SWEEP_CSV).exists() || dir.join(SWEEP_SUMMARY_CSV).exists() {
        r.sweep = r.table(SWEEP_CSV);
        r.sweep_summary = r.table(SWEEP_SUMMARY_CSV);
    }
    r.environment = r.json(ENVIRONMENT_JSON);
    if dir.join(crate::CHECK_JSON).exists() {
        r.check_answer = r.json(crate::CHECK_JSON);
    }
    r.incomplete = fs::read_to_string(dir.join(INCOMPLETE))
        .ok()
        .map(|s| s.trim().to_string());
    r
}

impl ResultSet {
    /// A directory of `slowlab check` results.
    pub fn is_check_only(&self) -> bool {
        self.dir.join(CHECK_CSV).is_file()
    }

    /// A directory of `slowlab sweep` results and nothing of a reproduction.
    pub fn is_sweep_only(&self) -> bool {
        self.dir.join(SWEEP_CSV).is_file()
            && ![CONDITIONS_CSV, RUNS_CSV, REQUESTS_CSV]
                .iter()
                .any(|f| self.dir.join(f).is_file())
    }

    /// Whether a file was read (it is not in `missing`).
    pub fn has(&self, file: &str) -> bool {
        !self.missing.iter().any(|m| m.file == file)
    }

    /// The run with this id.
    pub fn run(&self, run_id: &str) -> Option<&RunRow> {
        self.runs.iter().find(|r| r.run_id == run_id)
    }

    /// The per-run rows of `sets` as one set (for `slowlab merge`): each
    /// row's run is placed by `place(input, identity)`, which gives the
    /// run's rank and its new identity, or `None` to leave the row out.
    /// Rows sort by rank; the rows of one run keep their order. A file is
    /// in the result when any input had it. Returns the set and the number
    /// of rows left out.
    pub fn concat(
        sets: &[ResultSet],
        place: impl Fn(usize, &Ident) -> Option<(usize, Ident)>,
    ) -> (ResultSet, usize) {
        fn gather<T: PerRun + Clone>(
            sets: &[ResultSet],
            rows: fn(&ResultSet) -> &Vec<T>,
            place: &impl Fn(usize, &Ident) -> Option<(usize, Ident)>,
            left_out: &mut usize,
        ) -> Vec<T> {
            let mut ranked: Vec<(usize, T)> = Vec::new();
            for (s, set) in sets.iter().enumerate() {
                for row in rows(set) {
                    match place(s, &row.ident()) {
                        Some((rank, ident)) => {
                            let mut row = row.clone();
                            row.stamp(&ident);
                            ranked.push((rank, row));
                        }
                        None => *left_out += 1,
                    }
                }
            }
            // A stable sort: the rows of one run keep their order.
            ranked.sort_by_key(|(rank, _)| *rank);
            ranked.into_iter().map(|(_, r)| r).collect()
        }
        let mut n = 0;
        let p = &place;
        let mut set = ResultSet {
            runs: gather(sets, |s| &s.runs, p, &mut n),
            requests: gather(sets, |s| &s.requests, p, &mut n),
            large: gather(sets, |s| &s.large, p, &mut n),
            progress: gather(sets, |s| &s.progress, p, &mut n),
            uploads: gather(sets, |s| &s.uploads, p, &mut n),
            slow_headers: gather(sets, |s| &s.slow_headers, p, &mut n),
            app_recvs: gather(sets, |s| &s.app_recvs, p, &mut n),
            resources: gather(sets, |s| &s.resources, p, &mut n),
            sockets: gather(sets, |s| &s.sockets, p, &mut n),
            qdiscs: gather(sets, |s| &s.qdiscs, p, &mut n),
            app_sends: gather(sets, |s| &s.app_sends, p, &mut n),
            proxy_responses: gather(sets, |s| &s.proxy_responses, p, &mut n),
            gauge: gather(sets, |s| &s.gauge, p, &mut n),
            ..ResultSet::default()
        };
        if let Some(first) = sets.first() {
            set.missing = first.missing.clone();
            set.missing.retain(|m| sets.iter().all(|s| !s.has(m.file)));
        }
        (set, n)
    }

    /// Reads a CSV file into rows; a missing or unreadable file becomes an
    /// entry of `missing` and no rows.
    fn table<T: DeserializeOwned>(&mut self, file: &'static str) -> Vec<T> {
        let path = self.dir.join(file);
        if !path.exists() {
            self.missing.push(Missing { file, error: None });
            return Vec::new();
        }
        match file::read(&path) {
            Ok(p) if p.rows.is_empty() && !p.bad.is_empty() => {
                // Not one row parsed: the columns are not what we read.
                self.missing.push(Missing {
                    file,
                    error: Some(p.bad[0].clone()),
                });
                Vec::new()
            }
            Ok(p) => {
                if let Some(first) = p.bad.first() {
                    self.skipped.push(Skipped {
                        file,
                        rows: p.bad.len(),
                        first: first.clone(),
                    });
                }
                p.rows
            }
            Err(e) => {
                self.missing.push(Missing {
                    file,
                    error: Some(format!("{e:#}")),
                });
                Vec::new()
            }
        }
    }

    fn json(&mut self, file: &'static str) -> serde_json::Value {
        let path = self.dir.join(file);
        let parsed = fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))
            .and_then(|s| {
                serde_json::from_str(&s).with_context(|| format!("parsing {}", path.display()))
            });
        match parsed {
            Ok(v) => v,
            Err(e) => {
                let error = path.exists().then(|| format!("{e:#}"));
                self.missing.push(Missing { file, error });
                serde_json::Value::Null
            }
        }
    }
}

/// The identity columns that start every per-run file (a test holds every
/// per-run struct to them).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize)]
pub struct Ident {
    pub run_id: String,
    pub server: ServerName,
    pub route: RouteName,
    pub slow_clients: u32,
    pub repetition: u32,
}

impl From<&catalogue::RunSpec> for Ident {
    /// The identity columns every row of this run starts with.
    fn from(r: &catalogue::RunSpec) -> Ident {
        Ident {
            run_id: r.run_id.clone(),
            server: r.condition.server.into(),
            route: r.condition.route.into(),
            slow_clients: r.condition.slow,
            repetition: r.repetition,
        }
    }
}

impl Ident {
    /// The identity as leading cells (for [`super::file::read_log`]).
    pub fn cells(&self) -> Vec<(&'static str, String)> {
        let values = [
            self.run_id.clone(),
            self.server.to_string(),
            self.route.to_string(),
            self.slow_clients.to_string(),
            self.repetition.to_string(),
        ];
        file::columns::<Ident>()
            .iter()
            .copied()
            .zip(values)
            .collect()
    }
}

/// A row of a per-run file: it starts with the run's identity.
pub trait PerRun {
    fn ident(&self) -> Ident;
    /// Overwrites the identity columns (when merging, or when a log that
    /// lacks them is added to the results).
    fn stamp(&mut self, ident: &Ident);
}

macro_rules! per_run {
    ($($t:ty),+) => {$(
        impl PerRun for $t {
            fn ident(&self) -> Ident {
                Ident {
                    run_id: self.run_id.clone(),
                    server: self.server.clone(),
                    route: self.route.clone(),
                    slow_clients: self.slow_clients,
                    repetition: self.repetition,
                }
            }

            fn stamp(&mut self, ident: &Ident) {
                self.run_id = ident.run_id.clone();
                self.server = ident.server.clone();
                self.route = ident.route.clone();
                self.slow_clients = ident.slow_clients;
                self.repetition = ident.repetition;
            }
        }
    )+};
}

per_run!(
    RunRow,
    RequestRow,
    LargeRow,
    ProgressRow,
    ResourceRow,
    SocketRow,
    QdiscRow,
    AppSendRow,
    ProxyResponseRow,
    GaugeRow,
    UploadRow,
    SlowHeaderRow,
    AppRecvRow
);

/// The per-run files of a results directory, appended run by run.
#[derive(Debug)]
pub struct Appenders {
    requests: Appender<RequestRow>,
    large: Appender<LargeRow>,
    progress: Appender<ProgressRow>,
    runs: Appender<RunRow>,
    resources: Appender<ResourceRow>,
    sockets: Appender<SocketRow>,
    qdiscs: Appender<QdiscRow>,
    app_sends: Appender<AppSendRow>,
    proxy_responses: Appender<ProxyResponseRow>,
    gauge: Appender<GaugeRow>,
    uploads: Appender<UploadRow>,
    slow_headers: Appender<SlowHeaderRow>,
    app_recvs: Appender<AppRecvRow>,
}

impl Appenders {
    /// Creates `dir`; each file is created by the first append that has it.
    pub fn create(dir: &Path) -> Result<Appenders> {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Appenders {
            requests: Appender::new(dir.join(REQUESTS_CSV)),
            large: Appender::new(dir.join(LARGE_CSV)),
            progress: Appender::new(dir.join(PROGRESS_CSV)),
            runs: Appender::new(dir.join(RUNS_CSV)),
            resources: Appender::new(dir.join(RESOURCES_CSV)),
            sockets: Appender::new(dir.join(SOCKETS_CSV)),
            qdiscs: Appender::new(dir.join(QDISCS_CSV)),
            app_sends: Appender::new(dir.join(APP_SENDS_CSV)),
            proxy_responses: Appender::new(dir.join(PROXY_RESPONSES_CSV)),
            gauge: Appender::new(dir.join(PROXY_GAUGE_CSV)),
            uploads: Appender::new(dir.join(UPLOADS_CSV)),
            slow_headers: Appender::new(dir.join(SLOW_HEADERS_CSV)),
            app_recvs: Appender::new(dir.join(APP_RECVS_CSV)),
        })
    }

    /// Appends the per-run rows of `set` (one run's, or a whole directory's
    /// when merging) and flushes every file. A file listed in
    /// `set.missing` is left alone, so that a file appears only once some
    /// run had it (the pingora logs only with pingora routes).
    pub fn append(&mut self, set: &ResultSet) -> Result<()> {
        fn add<T: Serialize + DeserializeOwned>(
            a: &mut Appender<T>,
            set: &ResultSet,
            file: &str,
            rows: &[T],
        ) -> Result<()> {
            if set.has(file) {
                a.append(rows)
            } else {
                Ok(())
            }
        }
        add(&mut self.requests, set, REQUESTS_CSV, &set.requests)?;
        add(&mut self.progress, set, PROGRESS_CSV, &set.progress)?;
        add(&mut self.large, set, LARGE_CSV, &set.large)?;
        add(&mut self.app_sends, set, APP_SENDS_CSV, &set.app_sends)?;
        add(
            &mut self.proxy_responses,
            set,
            PROXY_RESPONSES_CSV,
            &set.proxy_responses,
        )?;
        add(&mut self.gauge, set, PROXY_GAUGE_CSV, &set.gauge)?;
        add(&mut self.uploads, set, UPLOADS_CSV, &set.uploads)?;
        add(
            &mut self.slow_headers,
            set,
            SLOW_HEADERS_CSV,
            &set.slow_headers,
        )?;
        add(&mut self.app_recvs, set, APP_RECVS_CSV, &set.app_recvs)?;
        add(&mut self.resources, set, RESOURCES_CSV, &set.resources)?;
        add(&mut self.sockets, set, SOCKETS_CSV, &set.sockets)?;
        // Only runs with a link have qdiscs: no file without one.
        if !set.qdiscs.is_empty() {
            add(&mut self.qdiscs, set, QDISCS_CSV, &set.qdiscs)?;
        }
        add(&mut self.runs, set, RUNS_CSV, &set.runs)
    }
}

/// Rewrites `conditions.csv` and `crosscheck.csv` of `dir`.
pub fn write_summaries(dir: &Path, conditions: &[ConditionRow], cross: &[CrossRow]) -> Result<()> {
    file::write_whole(&dir.join(CONDITIONS_CSV), conditions)?;
    file::write_whole(&dir.join(CROSSCHECK_CSV), cross)
}

/// Marks `dir` incomplete with a reason, or removes the mark.
pub fn mark_incomplete(dir: &Path, reason: Option<&str>) -> Result<()> {
    let path = dir.join(INCOMPLETE);
    match reason {
        Some(r) => fs::write(&path, format!("{r}\n")).context("writing the INCOMPLETE marker"),
        None => {
            if path.exists() {
                fs::remove_file(&path).context("removing the INCOMPLETE marker")?;
            }
            Ok(())
        }
    }
}
