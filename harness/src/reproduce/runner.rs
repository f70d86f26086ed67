//! One run of the matrix: describe its stack and its `slowlab load`, run
//! them through the one lifecycle ([`lab::stack::run`]), and keep what it
//! measured as the run's data.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;
use common::units::Size;

use catalogue::ProxyBuffers;
use catalogue::preset::RunSpec;
use lab::sample::{Samples, unix_now};
use lab::signals;
use lab::stack::launch::RunPaths;
use lab::stack::run::{self as lifecycle, Lab, LoadCommand, RunError, StackSpec};

pub use lab::stack::policy::CapPlan;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum Status {
    Ok,
    Failed(String),
    Skipped(String),
    Interrupted,
}

impl Status {
    pub fn label(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed(_) => "failed",
            Status::Skipped(_) => "skipped",
            Status::Interrupted => "interrupted",
        }
    }

    pub fn reason(&self) -> String {
        match self {
            Status::Failed(r) | Status::Skipped(r) => r.clone(),
            Status::Interrupted => "interrupted by a signal".into(),
            Status::Ok => String::new(),
        }
    }
}

/// What a run left behind.
#[derive(Debug, Clone)]
pub struct RunData {
    pub spec: RunSpec,
    pub status: Status,
    pub started_unix_s: f64,
    /// Wall time of the whole run, start-up and stop included.
    pub wall_s: f64,
    /// Wall time of the load generator process.
    pub load_s: Option<f64>,
    pub samples: Samples,
    /// Where this run's logs and the load generator's files are.
    pub dir: PathBuf,
    /// Cores the whole machine was busy during the load (every process, not
    /// only ours): a noisy neighbour shows here.
    pub host_busy_cores: Option<f64>,
    /// Milliseconds the hypervisor ran something else while this VM wanted a
    /// CPU during the load; timing outliers on a VM often come from here.
    pub host_steal_ms: Option<f64>,
    /// The namespaces it asked for, if any (`runs.csv` `netns`, `sysctls`).
    pub netns: Option<lab::netns::NetSpec>,
}

/// The directory of one run inside the results directory.
pub fn run_dir(out: &Path, spec: &RunSpec) -> PathBuf {
    let c = &spec.condition;
    let kind = match c.direction {
        schema::Direction::Download => "s",
        schema::Direction::Upload => "u",
        schema::Direction::Headers => "h",
    };
    out.join("runs").join(format!(
        "{}-{}-{}-{kind}{}-r{}",
        spec.run_id, c.server, c.route, c.slow, spec.repetition
    ))
}

/// Everything a run needs from the reproduction.
#[derive(Debug)]
pub struct RunContext<'a> {
    pub lab: Lab<'a>,
    pub caps: CapPlan,
    pub buffers: ProxyBuffers,
    /// The run-wide network namespaces (`--netns`, `--sysctl`, `--link`),
    /// if any; a condition's own dimensions go over them
    /// ([`catalogue::preset::Condition::net_spec`]).
    pub netns: Option<lab::netns::NetSpec>,
}

/// Runs one cell of the matrix. Never panics on a component failure: the
/// failure is the run's status.
pub fn run(ctx: &RunContext<'_>, spec: &RunSpec, out: &Path) -> RunData {
    let started = Instant::now();
    let started_unix_s = unix_now();
    let dir = run_dir(out, spec);
    let mut data = RunData {
        spec: spec.clone(),
        status: Status::Ok,
        started_unix_s,
        wall_s: 0.0,
        load_s: None,
        samples: Samples::default(),
        dir: dir.clone(),
        host_busy_cores: None,
        host_steal_ms: None,
        netns: None,
    };
    // `reproduce` checked every planned condition against the run-wide
    // flags before the first run.
    match spec.condition.net_spec(ctx.netns.as_ref()) {
        Ok(net) => data.netns = net,
        Err(e) => {
            data.status = Status::Failed(e);
            return data;
        }
    }
    match run_inner(ctx, spec, &dir, &mut data) {
        Ok(()) => {}
        Err(e @ (RunError::MissingTool(_) | RunError::NoNetns(_))) => {
            data.status = Status::Skipped(e.to_string())
        }
        Err(e) if signals::requested() => {
            data.status = Status::Interrupted;
            tracing::debug!(cause = %e, "run interrupted");
        }
        Err(e) => data.status = Status::Failed(e.to_string()),
    }
    if signals::requested() && data.status == Status::Ok {
        data.status = Status::Interrupted;
    }
    data.wall_s = started.elapsed().as_secs_f64();
    data
}

fn run_inner(
    ctx: &RunContext<'_>,
    spec: &RunSpec,
    dir: &Path,
    data: &mut RunData,
) -> Result<(), RunError> {
    let c = spec.condition;
    let net = data.netns.clone();
    let profile = spec.profile;
    let scratch = lab::scratch::tempdir("run")?;
    let stack = StackSpec {
        streams: lab::stack::edge::Streams::of(&c),
        server: c.server.into(),
        route: c.route,
        proxy_cmd: None,
        body: profile.body,
        buffers: ctx.buffers,
        caps: ctx.caps,
        cgroup_prefix: spec.run_id.clone(),
        paths: RunPaths::new(dir, scratch.path())?,
        // A per-client link makes room for the condition's slow clients
        // (`Condition::net_spec`).
        netns: net.clone(),
    };
    let mut limit = profile.expected_duration_of(&c) + profile.timeout + Duration::from_secs(30);
    if let Some(link) = net.as_ref().and_then(|n| n.link) {
        // The readers share the link: each takes slow x body / rate.
        limit += Duration::from_secs_f64(
            profile.body.large_bytes as f64 / link.share(c.readers()) as f64,
        );
    }
    let measured = lifecycle::run(&ctx.lab, &stack, limit, |target| {
        let mut args = load_args(spec, dir, target);
        args.slow_reader.slow_rate = Size(lab::netns::reader_rate(net.as_ref(), profile.slow_rate));
        args.upload.upload_rate = Size(lab::netns::reader_rate(net.as_ref(), profile.upload.rate));
        LoadCommand::Load(args)
    })?;
    data.load_s = Some(measured.load_s);
    data.host_busy_cores = measured.host_busy_cores;
    data.host_steal_ms = measured.host_steal_ms;
    data.samples = measured.samples;
    // A load whose /fast requests all failed (slowloris clients holding
    // every worker) ran to its end: its rows are the measurement. Any other
    // non-zero end broke the load; its files are still worth keeping.
    measured
        .exit
        .measurement(&dir.join("load"), data.started_unix_s)
        .map_err(RunError::Start)
}

/// The `slowlab load` of a run against `target`.
fn load_args(spec: &RunSpec, dir: &Path, target: &str) -> loadgen::LoadArgs {
    let p = spec.profile;
    loadgen::LoadArgs {
        target: target.into(),
        edge: loadgen::edge::EdgeArgs::default(),
        slow: spec.condition.readers() as usize,
        slow_reader: loadgen::config::SlowReaderArgs {
            slow_rate: Size(p.slow_rate),
            rcvbuf: Size(p.rcvbuf),
            read_chunk: Size(p.read_chunk),
            large_path: "/large".into(),
            reader: spec.reader(),
            loop_lag: Duration::ZERO,
        },
        upload: loadgen::upload_args::UploadArgs {
            slow_upload: spec.condition.uploaders() as usize,
            slow_headers: spec.condition.slowloris() as usize,
            upload_bytes: Size(p.upload.bytes),
            upload_rate: Size(p.upload.rate),
            ..loadgen::upload_args::UploadArgs::default()
        },
        // The stack's run sets them in its namespaces.
        bind: Default::default(),
        fast_rate: p.fast_rate,
        fast_duration: p.fast_duration,
        fast_start: p.fast_start,
        fast_settle: Duration::ZERO,
        fast_path: "/fast".into(),
        timeout: p.timeout,
        out: Some(dir.join("load")),
        labels: schema::Ident::from(spec)
            .cells()
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect(),
        json: true,
        allow_remote: false,
        verify: loadgen::VerifyMode::Auto,
        // SCHED_FIFO for the scheduler thread only, so that other processes
        // cannot delay a request's start; summary.json records whether the
        // kernel granted it.
        realtime: true,
        spin: Duration::ZERO,
        // The experiment waits for every download: its figures include them.
        end_with_fast: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use catalogue::preset::{Preset, plan};
    use lab::prepare::Tools;

    fn missing(tools: &Tools, r: &RunSpec) -> Option<String> {
        lab::stack::policy::missing_tool(tools, r.condition.server, r.condition.route)
            .map(|m| m.to_string())
    }

    #[test]
    fn runs_that_need_a_missing_tool_are_skipped_and_the_rust_ones_are_not() {
        let tools = Tools {
            gunicorn: Err("no network".into()),
            ..Tools::none("not installed")
        };
        let runs = plan(&[Preset::Quick], None, None);
        let skipped: Vec<String> = runs.iter().filter_map(|r| missing(&tools, r)).collect();
        // Gunicorn's six runs; NGINX only ever sits in front of Gunicorn here.
        assert_eq!(skipped.len(), 6);
        assert!(
            skipped
                .iter()
                .all(|r| r.contains("gunicorn is not available: no network"))
        );
        let rust = runs
            .iter()
            .filter(|r| !r.condition.server.is_gunicorn())
            .all(|r| missing(&tools, r).is_none());
        assert!(rust);
        let cross = plan(&[Preset::Cross], Some(1), None);
        let nginx_only = cross
            .iter()
            .filter(|r| !r.condition.server.is_gunicorn())
            .filter_map(|r| missing(&tools, r))
            .count();
        // Three Rust servers behind nginx-off and nginx-on, at 0 and 2 slow.
        assert_eq!(nginx_only, 3 * 2 * 2);
    }
}
