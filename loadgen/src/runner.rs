//! One run: set everything up, fix t0, start the slow readers and the
//! schedule, sample progress, and collect every record.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use tokio::time::MissedTickBehavior;

use crate::config::{LoadConfig, ReaderModel};
use crate::edgeread::{EdgeContext, EdgeReader};
use crate::engine::Engine;
use crate::fast::FastContext;
use crate::latency::Tuning;
use crate::net;
use crate::record::{FastRecord, LargeRecord, ProgressRow, SlowHeaderRecord, UploadRecord};
use crate::schedule::Scheduler;
use crate::settle::{self, Settle, Settled};
use crate::slow::{Gauge, SlowContext, SlowReader};
use crate::slowloris::{self, HeadersContext};
use crate::sys::{self, CpuTime, HostInfo};
use crate::upload::{self, UploadContext};
use crate::{h2conn, probe};

/// How often each slow reader's progress is sampled.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// Everything one run recorded.
#[derive(Debug, Clone)]
pub struct Report {
    pub target: String,
    pub labels: Vec<(String, String)>,
    /// Wall clock of t0, when the slow readers started.
    pub t0_unix_s: f64,
    /// From t0 until every request and download had ended.
    pub elapsed_s: f64,
    /// When the `/fast` schedule began, from t0: `--fast-start`, later by
    /// the wait for the slow readers (`--fast-settle`), and why then.
    pub fast_began_s: f64,
    pub settled: Settled,
    pub fast: Vec<FastRecord>,
    pub large: Vec<LargeRecord>,
    pub progress: Vec<ProgressRow>,
    pub uploads: Vec<UploadRecord>,
    pub slow_headers: Vec<SlowHeaderRecord>,
    /// This process's CPU time at the end of the run, setup included (run
    /// in-process, that is the host process's, tests and servers included).
    pub cpu: CpuTime,
    pub host: HostInfo,
    /// The scheduler thread's kernel settings that took effect.
    pub scheduler: Tuning,
    /// The slow clients' loop threads ([`crate::engine`]).
    pub engine_threads: usize,
    /// The signal that stopped the run early (Ctrl-C, SIGTERM), if any:
    /// its records are those it had, the rest cut.
    pub interrupted: Option<i32>,
}

/// Runs one load to completion. Every request and download ends as a record,
/// failed or not; `Err` only when the run itself could not be set up.
///
/// Builds its own runtime and scheduler thread, so call it from a plain
/// thread (or `spawn_blocking`), not from inside a tokio runtime.
pub fn run_load(config: &LoadConfig) -> anyhow::Result<Report> {
    // Everything that allocates or may be slow happens before t0.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let authority = &config.target.parsed.authority;
    let tls = config.target.parsed.tls;
    let fast_ctx = Arc::new(FastContext {
        request: net::request(authority, &config.fast_path),
        uri: h2conn::uri(tls, authority, &config.fast_path),
        timeout: config.timeout,
        edge: config.edge.clone(),
    });
    // A target that does not speak the edge's protocol is refused before
    // the run, with one line, rather than measured as a wall of errors.
    runtime.block_on(probe::probe(config))?;
    let scheduler = Scheduler::spawn(
        config.fast_offsets(),
        config.target.addr,
        config.binds.fast,
        fast_ctx,
        runtime.handle().clone(),
        config.timing,
    )?;
    let slow_ctx = Arc::new(SlowContext {
        addr: config.target.addr,
        request: net::request(authority, &config.large_path),
        reading: config.reading,
        timeout: config.timeout,
        verify: config.verify,
        bind: config.binds,
    });
    let up = &config.upload;
    let on_edge = config.edge.tls.is_some() || config.edge.http2.is_some();
    let engine =
        Engine::new(if on_edge { 0 } else { config.slow } + up.uploaders + up.slow_headers)?;
    let readers: Vec<Reader> = if on_edge {
        let ctx = Arc::new(EdgeContext {
            slow: slow_ctx.clone(),
            edge: config.edge.clone(),
            uri: h2conn::uri(tls, authority, &config.large_path),
        });
        EdgeReader::spawn_all(config.slow, ctx)?
            .into_iter()
            .map(Reader::Edge)
            .collect()
    } else {
        (0..config.slow)
            .map(|i| Reader::Engine(SlowReader::spawn(&engine, i, slow_ctx.clone())))
            .collect()
    };
    let gauges: Vec<Arc<Gauge>> = readers.iter().map(|r| r.gauge().clone()).collect();
    let buffered =
        config.reading.reader == ReaderModel::Streamreader || config.edge.http2.is_some();
    let to = upload::Endpoint::new(up, &config.target, config.timeout, config.binds);
    let upload_ctx = Arc::new(UploadContext::new(to.clone(), up));
    let uploaders: Vec<_> = (0..up.uploaders)
        .map(|i| upload::spawn_uploader(&engine, i, upload_ctx.clone()))
        .collect();
    let headers_ctx = Arc::new(HeadersContext::new(to, up));
    let slowloris: Vec<_> = (0..up.slow_headers)
        .map(|i| slowloris::spawn_slow_headers(&engine, i, headers_ctx.clone()))
        .collect();
    let end_with_fast = config.end_with_fast;
    let settle = (!config.fast_settle.is_zero()).then(|| {
        Settle::new(
            config.fast_start,
            config.fast_settle,
            config.fast_start.max(config.timeout),
        )
    });

    let (elapsed_s, t0_unix_s, began, scheduler, fast, large, progress, uploads, slow_headers) =
        runtime.block_on(async move {
            let t0 = Instant::now();
            let t0_unix_s = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or_default();
            for r in &readers {
                r.start(t0);
            }
            for u in &uploaders {
                u.start(t0);
            }
            for h in &slowloris {
                h.start(t0);
            }
            let watched = gauges.clone();
            let sampler = (!gauges.is_empty()).then(|| tokio::spawn(sample(t0, gauges, buffered)));
            let began = match settle.filter(|_| !watched.is_empty()) {
                Some(rule) => settle::wait(t0, &watched, rule).await,
                None => (Duration::ZERO, Settled::Start),
            };
            drop(watched);
            scheduler.start(t0, began.0);
            let (tuning, fast) = scheduler.records().await?;
            // `--end-with-fast`: the run is over with its last /fast
            // request; transfers still running are cut. So they are when
            // the load was stopped (Ctrl-C, SIGTERM).
            // A signal that comes while they finish cuts them too.
            let cut_now = end_with_fast || common::signals::requested();
            if cut_now {
                for r in &readers {
                    r.stop();
                }
                for u in &uploaders {
                    u.stop();
                }
            }
            let mut large = Vec::with_capacity(readers.len());
            for r in readers {
                large.push(r.record_when(stop_requested()).await?);
            }
            let mut uploads = Vec::with_capacity(uploaders.len());
            for u in uploaders {
                uploads.push(u.record_when(stop_requested()).await?);
            }
            // The slowloris clients hold their connections until here, the
            // end of every other request of the run.
            let mut slow_headers = Vec::with_capacity(slowloris.len());
            for h in slowloris {
                slow_headers.push(h.record_when(std::future::ready(())).await?);
            }
            // Before the sampler's last tick, which may come up to 100 ms later.
            let elapsed_s = t0.elapsed().as_secs_f64();
            let progress = match sampler {
                Some(s) => s.await.context("the progress sampler failed")?,
                None => Vec::new(),
            };
            anyhow::Ok((
                elapsed_s,
                t0_unix_s,
                began,
                tuning,
                fast,
                large,
                progress,
                uploads,
                slow_headers,
            ))
        })?;
    Ok(Report {
        target: config.target.url.clone(),
        labels: config.labels.clone(),
        t0_unix_s,
        elapsed_s,
        fast_began_s: (config.fast_start + began.0).as_secs_f64(),
        settled: began.1,
        fast,
        large,
        progress,
        uploads,
        slow_headers,
        cpu: sys::cpu_time(),
        host: HostInfo::read(),
        scheduler,
        engine_threads: engine.threads(),
        interrupted: common::signals::received(),
    })
}

/// Samples every reader every [`PROGRESS_INTERVAL`] until all are done; the
/// last sample holds their final counts.
/// `buffered`: the readers keep bytes in user space (`streamreader`, or
/// HTTP/2's received and not yet consumed).
async fn sample(t0: Instant, gauges: Vec<Arc<Gauge>>, buffered: bool) -> Vec<ProgressRow> {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::from_std(t0), PROGRESS_INTERVAL);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut rows = Vec::new();
    loop {
        tick.tick().await;
        // Read `done` before the counters, so a final sample is final.
        let all_done = gauges.iter().all(|g| g.done.load(Ordering::Acquire));
        let t_s = t0.elapsed().as_secs_f64();
        for (client, g) in gauges.iter().enumerate() {
            rows.push(ProgressRow {
                t_s,
                client,
                received_bytes: g.received.load(Ordering::Relaxed),
                consumed_bytes: g.consumed.load(Ordering::Relaxed),
                socket_queue_bytes: g.socket_queue(),
                user_buffer_bytes: buffered.then(|| g.buffered.load(Ordering::Relaxed) as u64),
                reading_paused: buffered.then(|| g.paused.load(Ordering::Relaxed)),
            });
        }
        if all_done {
            return rows;
        }
    }
}

/// A slow reader of either kind: on the engine (cleartext HTTP/1.1) or on
/// the edge's runtime (TLS, HTTP/2).
#[derive(Debug)]
enum Reader {
    Engine(SlowReader),
    Edge(EdgeReader),
}

impl Reader {
    fn gauge(&self) -> &Arc<Gauge> {
        match self {
            Reader::Engine(r) => &r.gauge,
            Reader::Edge(r) => &r.gauge,
        }
    }

    fn start(&self, t0: Instant) {
        match self {
            Reader::Engine(r) => r.start(t0),
            Reader::Edge(r) => r.start(t0),
        }
    }

    fn stop(&self) {
        match self {
            Reader::Engine(r) => r.stop(),
            Reader::Edge(r) => r.stop(),
        }
    }

    async fn record_when(
        self,
        stop: impl std::future::Future<Output = ()>,
    ) -> anyhow::Result<LargeRecord> {
        match self {
            Reader::Engine(r) => r.record_when(stop).await,
            Reader::Edge(r) => r.record_when(stop).await,
        }
    }
}

/// Resolves once SIGINT or SIGTERM has asked the run to stop (polled: the
/// handler only sets a flag).
async fn stop_requested() {
    while !common::signals::requested() {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
