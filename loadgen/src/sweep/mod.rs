//! `slowlab sweep-load`: the load generator of one rate sweep (autobench
//! driving httperf). `slowlab sweep` runs it in its own cgroup and merges
//! its `steps.csv` with the CPU of every component.
//!
//! Each step opens *sessions* at the step's connection rate for
//! `--step-duration`, open loop: session *i* starts at `t_step + i / rate`
//! however earlier ones fare. A session makes `--calls-per-conn` sequential
//! `GET /fast` requests with `Connection: keep-alive`. The experiment's
//! servers answer every response with `Connection: close` and close, so the
//! next call of the session opens a new connection: each call then pays
//! for a connection, like the experiment's `/fast` client, and
//! `connections` counts them apart from `sessions`. A request not answered
//! whole within `--timeout` is an error, and a session ends at its first
//! error; its remaining calls are not made (only issued requests count).
//!
//! After its sending window a step waits for its sessions to end before the
//! next step starts, so steps never overlap; every request is bounded by
//! the timeout, so this wait is too. `--slow N` keeps N slow readers of
//! `/large` downloading during the whole sweep, `--slow-upload N` N slow
//! uploaders uploading and `--slow-headers N` N slowloris clients holding
//! their connections ([`pool`]: the clients of `slowlab load`, restarted as
//! they end); the uploads and the slowloris connections are written to
//! `uploads.csv` and `slow-headers.csv` beside `steps.csv` at the end.
//!
//! What a row counts: a request is *issued* when its call begins (its
//! connect, or its write on a kept connection), so after the wait
//! `requests = replies + errors`. A *reply* is a whole 200 response; its
//! response time runs from the request written to the whole body (the
//! connect is not in it). Replies per second count replies by completion
//! time inside the sending window. A connect failing with `EADDRNOTAVAIL`
//! means this host ran out of ephemeral ports and is counted apart
//! (`err_ports_exhausted`): the client's limit, never the server's. Nothing
//! hides TIME_WAIT (no `SO_LINGER`): the servers close first, so it
//! normally sits on their side; after a timeout it is ours.
//!
//! # Layout
//! - this file: the sweep, step after step, and its summary.
//! - [`args`]: the command line and the checked [`SweepConfig`].
//! - [`schedule`]: the thread that starts sessions on time.
//! - [`session`]: one session's calls, connections and responses.
//! - [`step`]: a step's live counters (errors by `err_*` column), replies per second
//!   and the saturation rule.
//! - [`row`]: the `steps.csv` row (the contract with `slowlab sweep`).
//! - [`pool`]: slow readers, uploaders and slowloris clients that restart
//!   for the whole sweep.
//! - [`summary`]: the summary on stdout (text or `--json`).
//! - [`host`]: the TIME_WAIT count and the open-files limit.

pub mod args;
pub mod host;
pub mod pool;
pub mod row;
pub mod schedule;
pub mod session;
pub mod step;
pub mod summary;

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};

pub use args::{SweepConfig, SweepLoadArgs};
pub use row::StepRow;

use crate::config::VerifyMode;
use crate::engine::Engine;
use crate::record::{LargeRecord, SlowHeaderRecord, UploadRecord};
use crate::slow::{SlowContext, SlowReader};
use crate::slowloris::{self, HeadersContext};
use crate::sys;
use crate::upload::{self, UploadContext};
use pool::Pool;
use schedule::{Scheduler, Window, sessions_in};
use session::SessionContext;
use step::{Saturation, StepStats};

/// How long before the first step the slow clients start, so they hold
/// their workers when it begins (the experiment's `/fast` start, 250 ms).
pub const SLOW_HEAD_START: Duration = Duration::from_millis(250);
/// How long the end of a sweep waits for its slowloris clients to end.
const POOL_STOP: Duration = Duration::from_secs(1);
/// How far ahead of its start a step is scheduled, so the scheduler thread
/// is asleep on time when it begins.
const LEAD: Duration = Duration::from_millis(5);
/// The most replies a step reserves room for up front.
const MAX_RESERVED_REPLIES: u64 = 1 << 20;

/// What a sweep did.
#[derive(Debug, Clone, Default)]
pub struct SweepOutcome {
    pub rows: Vec<StepRow>,
    /// Stopped by `--stop-when-saturated` before the last rate.
    pub stopped_saturated: bool,
    pub open_files_limit: Option<u64>,
    /// Wall clock of the slow clients' start: time zero of `started_s` in
    /// `uploads.csv` and `slow-headers.csv`.
    pub t0_unix_s: f64,
    pub slow_completed: u64,
    pub slow_failed: u64,
    /// Every upload that ended during the sweep.
    pub uploads: Vec<UploadRecord>,
    /// Every slowloris connection, those held to the end included.
    pub slow_headers: Vec<SlowHeaderRecord>,
    /// Requests that failed because the load generator ran out of file
    /// descriptors (counted in `err_other`); any makes the exit status 1.
    pub fd_exhausted: u64,
}

impl SweepOutcome {
    pub fn requests(&self) -> u64 {
        self.rows.iter().map(|r| r.requests).sum()
    }

    pub fn replies(&self) -> u64 {
        self.rows.iter().map(|r| r.replies).sum()
    }

    /// The load generator's CPU seconds per 1000 requests issued.
    pub fn cpu_s_per_1000(&self) -> Option<f64> {
        let cpu: f64 = self.rows.iter().map(|r| r.loadgen_cpu_s).sum();
        let n = self.requests();
        (n > 0).then(|| cpu / n as f64 * 1000.0)
    }
}

/// Runs `slowlab sweep-load`: the sweep, then its summary on stdout. Fails
/// on bad input, or when requests were issued and not one succeeded.
pub fn run(args: SweepLoadArgs) -> anyhow::Result<()> {
    let config = SweepConfig::from_args(&args)?;
    config.ensure_descriptors()?;
    let outcome = run_sweep(&config)?;
    let text = if args.json {
        summary::json(&config, &outcome)?
    } else {
        summary::text(&config, &outcome)
    };
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .context("writing the summary")?;
    if outcome.fd_exhausted > 0 {
        bail!(
            "the load generator ran out of file descriptors ({} fd_exhausted, counted in err_other); the steps with them measure the client, not the server",
            outcome.fd_exhausted
        );
    }
    if outcome.requests() > 0 && outcome.replies() == 0 {
        bail!(
            "no request succeeded in any step ({} issued, all failed)",
            outcome.requests()
        );
    }
    Ok(())
}

/// The request of every call.
pub fn request(authority: &str, path: &str) -> Vec<u8> {
    format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: slowlab-sweep\r\nAccept: */*\r\nConnection: keep-alive\r\n\r\n"
    )
    .into_bytes()
}

/// Runs the sweep, writing `steps.csv` as each step ends. Builds its own
/// runtime and threads: call it from a plain thread, not inside a runtime.
pub fn run_sweep(config: &SweepConfig) -> anyhow::Result<SweepOutcome> {
    let mut outcome = SweepOutcome {
        open_files_limit: host::raise_open_files_limit()
            .inspect_err(|e| tracing::warn!(cause = %e, "cannot raise the open-files limit"))
            .ok(),
        ..SweepOutcome::default()
    };
    let mut file = row::StepsFile::create(&config.out)?;
    // Two I/O threads at most: on the 2-core machines of the lab more would
    // only take CPU from the server being measured.
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("slowlab-sweep-io")
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let authority = &config.target.parsed.authority;
    let ctx = Arc::new(SessionContext {
        addr: config.target.addr,
        request: request(authority, &config.fast_path).into_boxed_slice(),
        calls: config.calls_per_conn,
        timeout: config.timeout,
        bind: config.binds.fast,
    });
    let scheduler = Scheduler::spawn(ctx, runtime.handle().clone())?;
    let t0 = Instant::now();
    outcome.t0_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let rt = runtime.handle();
    let up = &config.upload;
    let engine = Engine::new(config.slow + up.uploaders + up.slow_headers)?;
    let slow = (config.slow > 0).then(|| {
        let ctx = Arc::new(SlowContext {
            addr: config.target.addr,
            request: crate::net::request(authority, &config.large_path),
            reading: config.reading,
            timeout: config.timeout,
            verify: VerifyMode::Auto,
            bind: config.binds,
        });
        let engine = engine.clone();
        Pool::<LargeRecord>::start(config.slow, t0, rt, move |slot| {
            Ok(SlowReader::spawn(&engine, slot, ctx.clone()))
        })
    });
    let to = upload::Endpoint::new(up, &config.target, config.timeout, config.binds);
    let uploads = (up.uploaders > 0).then(|| {
        let ctx = Arc::new(UploadContext::new(to.clone(), up));
        let engine = engine.clone();
        Pool::<UploadRecord>::start(up.uploaders, t0, rt, move |slot| {
            Ok(upload::spawn_uploader(&engine, slot, ctx.clone()))
        })
    });
    let slowloris = (up.slow_headers > 0).then(|| {
        let ctx = Arc::new(HeadersContext::new(to, up));
        let engine = engine.clone();
        Pool::<SlowHeaderRecord>::start(up.slow_headers, t0, rt, move |slot| {
            Ok(slowloris::spawn_slow_headers(&engine, slot, ctx.clone()))
        })
    });
    if slow.is_some() || uploads.is_some() || slowloris.is_some() {
        std::thread::sleep(SLOW_HEAD_START);
    }
    let mut saturation = Saturation::default();
    for (i, &rate) in config.rates.iter().enumerate() {
        let (row, exhausted) = step(config, &scheduler, i + 1, rate, slow.as_deref())?;
        outcome.fd_exhausted += exhausted;
        file.append(&row)?;
        eprintln!("{}", row.line());
        let stop = config.stop_when_saturated && saturation.observe(row.requests, row.errors());
        outcome.rows.push(row);
        if stop && i + 1 < config.rates.len() {
            eprintln!(
                "stopping: more than {:.0}% of requests failed in {} steps in a row",
                Saturation::ERROR_SHARE * 100.0,
                Saturation::STEPS
            );
            outcome.stopped_saturated = true;
            break;
        }
    }
    if let Some(pool) = &slow {
        pool.stop(POOL_STOP);
        outcome.slow_completed = pool.completed.load(Ordering::Relaxed);
        outcome.slow_failed = pool.failed.load(Ordering::Relaxed);
    }
    if let Some(pool) = &uploads {
        pool.stop(POOL_STOP);
        outcome.uploads = pool.take_records();
    }
    if let Some(pool) = &slowloris {
        pool.stop(POOL_STOP);
        outcome.slow_headers = pool.take_records();
    }
    crate::output::write_request_direction(
        &config.out,
        &[],
        &outcome.uploads,
        &outcome.slow_headers,
    )?;
    scheduler.stop()?;
    // Sessions have all ended; what is left are threads of downloads and
    // uploads that are abandoned (see `pool`).
    runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(outcome)
}

/// One step: its sending window, then the wait for its sessions.
fn step(
    config: &SweepConfig,
    scheduler: &Scheduler,
    n: usize,
    rate: f64,
    slow: Option<&Pool<LargeRecord>>,
) -> anyhow::Result<(StepRow, u64)> {
    let cpu_before = sys::cpu_time();
    let calls = config.calls_per_conn;
    let expected =
        (sessions_in(rate, config.step_duration) * u64::from(calls)).min(MAX_RESERVED_REPLIES);
    let stats = Arc::new(StepStats::new(
        Instant::now() + LEAD,
        usize::try_from(expected).unwrap_or(0),
    ));
    let facts = scheduler.window(Window {
        rate,
        duration: config.step_duration,
        stats: stats.clone(),
    })?;
    // Each request ends within the timeout, so a session within calls x
    // timeout; the second of slack covers a busy runtime.
    let limit = config.timeout * calls + Duration::from_secs(1);
    let drain_start = Instant::now();
    while stats.outstanding.load(Ordering::Acquire) > 0 {
        if drain_start.elapsed() > limit {
            eprintln!(
                "step {n}: {} sessions still running {limit:?} after the window; not waiting for them",
                stats.outstanding.load(Ordering::Acquire)
            );
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let replies = stats.take_replies();
    let mut row = StepRow::of(n, rate, calls, &facts, &stats, &replies);
    row.loadgen_cpu_s = (sys::cpu_time().total_s() - cpu_before.total_s()).max(0.0);
    row.time_wait_sockets = host::time_wait_sockets();
    row.slow_active = slow.map_or(0, Pool::active);
    Ok((row, stats.fd_exhausted()))
}
