//! One run: start the server and the proxy in their cgroups, wait until they
//! answer, start the sampler and `slowlab load`, wait, stop everything.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::matrix::RunSpec;
use crate::cgroup::{Caps, Cgroup, Mode};
use crate::process::{self, Spec};
use crate::procfs::HostCpu;
use crate::sample::{Probe, Sampler, Samples, unix_now};
use crate::signals;
use crate::stack::ProxyBuffers;
use crate::stack::launch::{Launcher, RunPaths};

/// The original's caps per component.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct CapPlan {
    pub app: Option<Caps>,
    pub proxy: Option<Caps>,
    pub loadgen: Option<Caps>,
}

impl CapPlan {
    /// App 0.25 core / 128 MiB, proxy 0.20 / 96 MiB, load generator 0.20 /
    /// 128 MiB, period 10 ms.
    pub fn experiment() -> Self {
        CapPlan {
            app: Some(Caps::new(0.25, 128)),
            proxy: Some(Caps::new(0.20, 96)),
            loadgen: Some(Caps::new(0.20, 128)),
        }
    }

    pub fn none() -> Self {
        CapPlan {
            app: None,
            proxy: None,
            loadgen: None,
        }
    }
}

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
}

/// The directory of one run inside the results directory.
pub fn run_dir(out: &Path, spec: &RunSpec) -> PathBuf {
    let c = &spec.condition;
    out.join("runs").join(format!(
        "{}-{}-{}-s{}-r{}",
        spec.run_id, c.server, c.route, c.slow, spec.repetition
    ))
}

/// Everything a run needs from the reproduction.
#[derive(Debug)]
pub struct RunContext<'a> {
    pub launcher: &'a Launcher<'a>,
    pub cgroups: &'a Mode,
    pub caps: CapPlan,
    pub buffers: ProxyBuffers,
    pub sample_interval: Duration,
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
    };
    if let Some(reason) = missing_tool(ctx.launcher.tools, spec) {
        data.status = Status::Skipped(reason);
        return data;
    }
    match run_inner(ctx, spec, &dir, &mut data) {
        Ok(()) => {}
        Err(e) if signals::requested() => {
            data.status = Status::Interrupted;
            tracing::debug!(cause = %format!("{e:#}"), "run interrupted");
        }
        Err(e) => data.status = Status::Failed(format!("{e:#}")),
    }
    if signals::requested() && data.status == Status::Ok {
        data.status = Status::Interrupted;
    }
    data.wall_s = started.elapsed().as_secs_f64();
    data
}

/// Why a run cannot start on this machine, if it cannot.
pub fn missing_tool(tools: &crate::prepare::Tools, spec: &RunSpec) -> Option<String> {
    if spec.condition.server.is_gunicorn() {
        if let Err(e) = &tools.gunicorn {
            return Some(format!("gunicorn is not available: {e}"));
        }
    }
    if matches!(
        spec.condition.route.proxy(),
        Some((crate::stack::ProxyKind::Nginx, _))
    ) {
        if let Err(e) = &tools.nginx {
            return Some(format!("nginx is not available: {e}"));
        }
    }
    None
}

fn cgroup(
    ctx: &RunContext<'_>,
    spec: &RunSpec,
    name: &str,
    caps: Option<Caps>,
) -> Result<Option<Cgroup>> {
    if matches!(ctx.cgroups, Mode::None { .. }) {
        return Ok(None);
    }
    Cgroup::create(ctx.cgroups, &format!("{}-{name}", spec.run_id), caps)
        .map(Some)
        .with_context(|| format!("creating the {name} cgroup"))
}

fn run_inner(ctx: &RunContext<'_>, spec: &RunSpec, dir: &Path, data: &mut RunData) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let scratch = crate::scratch::tempdir("run")?;
    let paths = RunPaths::new(dir, scratch.path())?;
    let c = spec.condition;
    let profile = spec.profile;

    let app_cg = cgroup(ctx, spec, "app", ctx.caps.app)?;
    let app = ctx
        .launcher
        .start_server(c.server, profile.body, &paths, app_cg)?;
    let proxy_cg = match c.route.proxy() {
        Some(_) => cgroup(ctx, spec, "proxy", ctx.caps.proxy)?,
        None => None,
    };
    let proxy = ctx
        .launcher
        .start_proxy(c.route, app.addr, &ctx.buffers, &paths, proxy_cg)?;
    let target = proxy.as_ref().map(|p| p.addr).unwrap_or(app.addr);

    let mut probes = vec![app.probe("app")];
    if let Some(p) = &proxy {
        probes.push(p.probe("proxy"));
    }
    let load_cg = cgroup(ctx, spec, "loadgen", ctx.caps.loadgen)?;
    if let Some(g) = &load_cg {
        // 50 ms of every second, far more than one sleeping thread needs.
        g.grant_realtime(50_000);
    }
    let load_spec = load_spec(ctx, spec, dir, target);
    let sampler = Sampler::start(probes, ctx.sample_interval);
    let host_before = HostCpu::read();
    let load_started = Instant::now();
    let mut load = process::spawn(&load_spec, load_cg.as_ref())?;
    sampler.add(Probe {
        component: "loadgen".into(),
        counters: load_cg.as_ref().map(Cgroup::counters),
        root_pid: load.pid,
        temp_dir: None,
    });

    let limit = profile.expected_duration(c.slow) + profile.timeout + Duration::from_secs(30);
    let status = load.wait_or_interrupt(load_started, limit);
    let load_s = load_started.elapsed().as_secs_f64();
    data.load_s = Some(load_s);
    if let (Some(a), Some(b)) = (host_before, HostCpu::read()) {
        let (busy, steal) = a.delta(&b, load_s);
        data.host_busy_cores = Some(busy);
        data.host_steal_ms = Some(steal);
    }
    data.samples = sampler.stop();
    // Stop in the order of the data path: the client is done, then the
    // proxy, then the app; each guard also kills its process group.
    let load_error = load.last_error_line();
    drop(load);
    drop(proxy);
    drop(app);
    match status {
        Some(s) if s.success() => Ok(()),
        Some(s) => {
            // The load generator exits non-zero when no /fast request
            // succeeded; its files are still worth keeping.
            anyhow::bail!("slowlab load exited with {s}: {load_error}")
        }
        None if signals::requested() => anyhow::bail!("interrupted"),
        None => anyhow::bail!("slowlab load did not finish within {limit:?}"),
    }
}

fn load_spec(
    ctx: &RunContext<'_>,
    spec: &RunSpec,
    dir: &Path,
    target: std::net::SocketAddr,
) -> Spec {
    let p = spec.profile;
    let c = spec.condition;
    let d = |v: Duration| format!("{}ms", v.as_millis());
    let mut args = vec![
        "load".to_string(),
        "--target".into(),
        format!("http://{target}"),
        "--slow".into(),
        c.slow.to_string(),
        "--slow-rate".into(),
        p.slow_rate.to_string(),
        "--rcvbuf".into(),
        p.rcvbuf.to_string(),
        "--read-chunk".into(),
        p.read_chunk.to_string(),
        "--fast-rate".into(),
        p.fast_rate.to_string(),
        "--fast-duration".into(),
        d(p.fast_duration),
        "--fast-start".into(),
        d(p.fast_start),
        "--timeout".into(),
        d(p.timeout),
        "--out".into(),
        dir.join("load").to_string_lossy().into(),
        "--json".into(),
        // SCHED_FIFO for the scheduler thread only, so that other processes
        // cannot delay a request's start; summary.json records whether the
        // kernel granted it.
        "--realtime".into(),
    ];
    for (k, v) in labels(spec) {
        args.push("--label".into());
        args.push(format!("{k}={v}"));
    }
    Spec {
        name: "loadgen".into(),
        program: ctx.launcher.exe.clone(),
        args,
        env: vec![],
        cwd: None,
        stdout: dir.join("load.out"),
        stderr: dir.join("load.err"),
    }
}

/// The identity columns of every row of a run, in order.
pub fn labels(spec: &RunSpec) -> Vec<(&'static str, String)> {
    vec![
        ("run_id", spec.run_id.clone()),
        ("server", spec.condition.server.to_string()),
        ("route", spec.condition.route.to_string()),
        ("slow_clients", spec.condition.slow.to_string()),
        ("repetition", spec.repetition.to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare::Tools;
    use crate::reproduce::matrix::{Preset, plan};

    #[test]
    fn runs_that_need_a_missing_tool_are_skipped_and_the_rust_ones_are_not() {
        let tools = Tools {
            gunicorn: Err("no network".into()),
            nginx: Err("not installed".into()),
        };
        let runs = plan(&[Preset::Quick], None, None);
        let skipped: Vec<String> = runs
            .iter()
            .filter_map(|r| missing_tool(&tools, r))
            .collect();
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
            .all(|r| missing_tool(&tools, r).is_none());
        assert!(rust);
        let cross = plan(&[Preset::Cross], Some(1), None);
        let nginx_only = cross
            .iter()
            .filter(|r| !r.condition.server.is_gunicorn())
            .filter_map(|r| missing_tool(&tools, r))
            .count();
        // Three Rust servers behind nginx-off and nginx-on, at 0 and 2 slow.
        assert_eq!(nginx_only, 3 * 2 * 2);
    }
}
