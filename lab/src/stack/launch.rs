//! Starting a server and a proxy as child processes, each in its own cgroup,
//! and waiting until they answer.

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use common::units::Size;

use catalogue::server::{WSGI_APP, gunicorn_argv};
use catalogue::{Body, ProxyBuffers, ProxyKind, Recipe, RequestBody, Route, Server, Tool};

use super::{ProxyCommand, ServerCommand, nginx, packaged};
use crate::cgroup::Cgroup;
use crate::child::Child;
use crate::netns::Place;
use crate::prepare::Tools;
use crate::prepare::unavailable_error;
use crate::process::{self, Guard, Spec, free_port_at};
use schema::child::header_line;
use schema::{RecvLogCells, SendLogCells};

/// The WSGI app, embedded so that the binary is all a user needs.
pub const WSGI_APP_PY: &str = include_str!("../../python/slowlab_app.py");
/// Gunicorn's config: a `post_fork` hook that gives each worker a
/// parent-death signal, so workers die with their master.
pub const GUNICORN_CONF: &str = include_str!("../../python/slowlab_gunicorn_conf.py");

/// Its ASGI twin (for Uvicorn), which imports the WSGI app's constants.
pub const ASGI_APP_PY: &str = include_str!("../../python/slowlab_asgi.py");

/// How long a component may take to answer after it was started, unless
/// the verb says otherwise (`check --ready-timeout`).
pub const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// What every launch needs to know.
#[derive(Debug)]
pub struct Launcher {
    /// The `slowlab` binary (for `serve` and `proxy`).
    pub exe: PathBuf,
    pub tools: Tools,
    /// A directory holding `slowlab_app.py`.
    pub app_dir: PathBuf,
    /// How long a started component may take to answer its probe
    /// ([`READY_TIMEOUT`] unless the verb says otherwise).
    pub ready_timeout: Duration,
}

/// The app's own logs in a run's log directory: the send log (one row per
/// `/large` response) and its twin, the receive log (one row per `POST
/// /upload`). Every server gets both, the replica as flags, the Python apps
/// in their environment.
struct AppLogs {
    send_log: PathBuf,
    recv_log: PathBuf,
}

/// A started component. Fields drop in order: the process stops before its
/// cgroup is removed.
#[derive(Debug)]
pub struct Running {
    pub guard: Guard,
    pub addr: SocketAddr,
    pub cgroup: Option<Cgroup>,
    /// The proxy's temp directory, where its temp files live.
    pub temp_dir: Option<PathBuf>,
    /// The authority a client trusts to reach it over TLS (`ca.pem` of
    /// the run's certificate), when its edge terminates TLS.
    pub tls_ca: Option<PathBuf>,
}

impl Running {
    pub fn pid(&self) -> u32 {
        self.guard.pid
    }

    /// What the sampler reads of this component: its cgroup's counters,
    /// its process tree and its temp files.
    pub fn probe(&self, component: &str) -> crate::sample::Probe {
        crate::sample::Probe {
            component: component.into(),
            counters: self.cgroup.as_ref().map(crate::cgroup::Cgroup::counters),
            root_pid: self.pid(),
            temp_dir: self.temp_dir.clone(),
        }
    }
}

/// Where a run keeps its logs (`logs`) and its scratch files (`scratch`,
/// removed after the run). Both are absolute: Gunicorn runs in the app's
/// directory and NGINX resolves relative paths against its prefix, so a
/// relative path handed to them would point elsewhere.
#[derive(Debug, Clone)]
pub struct RunPaths {
    logs: PathBuf,
    scratch: PathBuf,
}

impl RunPaths {
    pub fn new(logs: &Path, scratch: &Path) -> Result<RunPaths> {
        Ok(RunPaths {
            logs: std::path::absolute(logs).context("resolving the run's directory")?,
            scratch: std::path::absolute(scratch).context("resolving the scratch directory")?,
        })
    }

    /// The run's directory, where its logs and the load generator's files go.
    pub fn logs(&self) -> &Path {
        &self.logs
    }
}

impl Launcher {
    /// Writes the WSGI app and its ASGI twin into `dir` and returns `dir`.
    pub fn write_app(dir: &Path) -> Result<PathBuf> {
        fs::create_dir_all(dir)?;
        fs::write(dir.join("slowlab_app.py"), WSGI_APP_PY).context("writing the WSGI app")?;
        fs::write(dir.join("slowlab_gunicorn_conf.py"), GUNICORN_CONF)
            .context("writing the Gunicorn config")?;
        fs::write(dir.join("slowlab_asgi.py"), ASGI_APP_PY).context("writing the ASGI app")?;
        Ok(dir.to_path_buf())
    }

    /// Starts a Python server from the venv on a port it is given: `args`
    /// makes its argv for an address. The send log's header goes in before
    /// any worker exists, so that workers and threads only ever append rows;
    /// the app finds the log and the body's size in its environment.
    fn start_python(
        &self,
        spec: Spec,
        args: impl Fn(SocketAddr) -> Vec<String>,
        body: Body,
        logs: &AppLogs,
        cgroup: Option<&Cgroup>,
        at: &Place,
    ) -> Result<(Guard, SocketAddr)> {
        let AppLogs { send_log, recv_log } = logs;
        for (path, header) in [
            (send_log, header_line::<SendLogCells>()),
            (recv_log, header_line::<RecvLogCells>()),
        ] {
            fs::write(path, header).with_context(|| format!("creating {}", path.display()))?;
        }
        // Python servers cannot all report a port they picked, so pick one;
        // another program may take it first, hence the retries.
        retry_port(|| {
            let addr = SocketAddr::new(at.ip, free_port_at(at)?);
            let spec = Spec {
                args: args(addr),
                netns: at.netns.clone(),
                env: vec![
                    ("SLOWLAB_SEND_LOG".into(), send_log.to_string_lossy().into()),
                    ("SLOWLAB_RECV_LOG".into(), recv_log.to_string_lossy().into()),
                    ("SLOWLAB_LARGE_BYTES".into(), body.large_bytes.to_string()),
                    ("SLOWLAB_CHUNK_BYTES".into(), body.chunk_bytes.to_string()),
                ],
                cwd: Some(self.app_dir.clone()),
                ..spec.clone()
            };
            start_and_probe(spec, cgroup, Some(addr), "/fast", self.ready_timeout)
        })
    }

    /// Starts `server` by its [`Recipe`] and waits until `GET /fast`
    /// answers 200. The send log goes to `paths.logs/send-log.csv`. It runs
    /// and listens `at`.
    pub fn start_server(
        &self,
        server: Server,
        body: Body,
        paths: &RunPaths,
        cgroup: Option<Cgroup>,
        at: &Place,
    ) -> Result<Running> {
        let logs = AppLogs {
            send_log: paths.logs.join(schema::SEND_LOG_CSV),
            recv_log: paths.logs.join(schema::RECV_LOG_CSV),
        };
        let spec = |program: PathBuf, args: Vec<String>| Spec {
            name: format!("app ({server})"),
            program,
            args,
            env: vec![],
            cwd: None,
            netns: at.netns.clone(),
            stdout: paths.logs.join("app.out"),
            stderr: paths.logs.join("app.err"),
        };
        let (guard, addr) = match server.recipe() {
            Recipe::Gunicorn {
                worker_class,
                workers,
                threads,
            } => {
                let g = self
                    .tools
                    .gunicorn
                    .as_ref()
                    .map_err(|e| unavailable_error(Tool::Gunicorn, e))?;
                let args = |addr| {
                    gunicorn_argv(
                        addr,
                        &self.app_dir,
                        worker_class,
                        workers,
                        threads,
                        WSGI_APP,
                    )
                };
                let spec = spec(g.gunicorn.clone(), vec![]);
                self.start_python(spec, args, body, &logs, cgroup.as_ref(), at)?
            }
            Recipe::Python(py) => {
                let tool = py.tool();
                let found = match self.tools.python.get(tool) {
                    Some(Ok(p)) => p,
                    Some(Err(e)) => return Err(unavailable_error(tool, e)),
                    None => bail!("{} is not a Python server's tool", tool.name()),
                };
                let spec = spec(found.program.clone(), vec![]);
                let args = |addr| py.argv(addr, &self.app_dir);
                self.start_python(spec, args, body, &logs, cgroup.as_ref(), at)?
            }
            Recipe::Replica { model, workers } => {
                let args = Child::Serve(server::ServeArgs {
                    listen: SocketAddr::new(at.ip, 0),
                    model,
                    workers,
                    large_bytes: Size(body.large_bytes),
                    chunk_bytes: Size(body.chunk_bytes),
                    send_log: Some(logs.send_log),
                    recv_log: Some(logs.recv_log),
                    allow_remote: false,
                    // Gunicorn's default `--timeout`, which the harness
                    // starts Gunicorn with.
                    worker_timeout: server::models::sync::GUNICORN_TIMEOUT,
                });
                let spec = spec(self.exe.clone(), process::utf8_args(args.argv())?);
                start_and_probe(spec, cgroup.as_ref(), None, "/fast", self.ready_timeout)?
            }
        };
        Ok(Running {
            guard,
            addr,
            cgroup,
            temp_dir: None,
            tls_ca: None,
        })
    }

    /// Starts a user's server from its command line (`/bin/sh -c`, in its
    /// own process group like every child, so that stopping it stops every
    /// process it started) on a free loopback port, and waits until `GET
    /// ready_path` answers 200. Its output goes to `app.out`/`app.err`. It
    /// runs `at`, and `{host}` is `at`'s address.
    pub fn start_command(
        &self,
        cmd: &ServerCommand,
        paths: &RunPaths,
        cgroup: Option<Cgroup>,
        at: &Place,
    ) -> Result<Running> {
        let user = UserCommand {
            name: "app (--server-cmd)",
            output: "app",
            cwd: cmd.dir.clone(),
            probe: &cmd.ready_path,
            ready: self.ready_timeout,
        };
        user.start(paths, cgroup, at, |addr| cmd.line_for(addr))
    }

    /// Starts a user's proxy from its command line (`--through-cmd`) in
    /// front of `upstream`, on a free port `at`, as [`Self::start_command`]
    /// starts a server, and waits until `GET probe` through it answers 200.
    /// Its output goes to `proxy.out`/`proxy.err`.
    pub fn start_proxy_command(
        &self,
        cmd: &ProxyCommand,
        upstream: SocketAddr,
        paths: &RunPaths,
        cgroup: Option<Cgroup>,
        probe: &str,
        at: &Place,
    ) -> Result<Running> {
        let user = UserCommand {
            name: "proxy (--through-cmd)",
            output: "proxy",
            cwd: None,
            probe,
            ready: self.ready_timeout,
        };
        user.start(paths, cgroup, at, |addr| cmd.line_for(addr, upstream))
    }

    /// Starts the proxy of `route` in front of `upstream`; `None` for direct.
    /// It is ready when `GET probe` through it answers 200. It runs and
    /// listens `at`.
    #[allow(clippy::too_many_arguments)]
    pub fn start_proxy(
        &self,
        route: Route,
        upstream: SocketAddr,
        buffers: &ProxyBuffers,
        paths: &RunPaths,
        cgroup: Option<Cgroup>,
        probe: &str,
        at: &Place,
    ) -> Result<Option<Running>> {
        let Some((kind, buffering)) = route.proxy() else {
            return Ok(None);
        };
        let temp_dir = paths.scratch.join("proxy-temp");
        fs::create_dir_all(&temp_dir)?;
        let edge = route.edge();
        // A fresh authority and server certificate for the run, in its
        // scratch directory (removed with it): the key never outlives it.
        let certs = match edge.tls {
            true => {
                let dir = paths.scratch.join("tls");
                std::os::unix::fs::DirBuilderExt::mode(
                    fs::DirBuilder::new().recursive(true),
                    0o700,
                )
                .create(&dir)
                .with_context(|| format!("creating {}", dir.display()))?;
                Some(
                    common::tls::LabCertificate::generate_into(&dir)
                        .context("making the run's TLS certificate")?,
                )
            }
            false => None,
        };
        let tls_ca = certs.as_ref().map(|c| c.ca.clone());
        // The load generator's own client probes a TLS edge.
        let probe_edge = tls_ca.as_ref().map(|ca| loadgen::edge::EdgeArgs {
            tls_ca: Some(ca.clone()),
            http2: edge.http2,
            ..Default::default()
        });
        let spec = |program: PathBuf, args: Vec<String>| Spec {
            name: format!("proxy ({route})"),
            program,
            args,
            env: vec![],
            cwd: None,
            netns: at.netns.clone(),
            stdout: paths.logs.join("proxy.out"),
            stderr: paths.logs.join("proxy.err"),
        };
        let (guard, addr) = match kind {
            ProxyKind::Nginx => {
                let n = self
                    .tools
                    .nginx()
                    .map_err(|e| unavailable_error(Tool::Nginx, e))?;
                let prefix = paths.scratch.join("nginx");
                fs::create_dir_all(&prefix)?;
                let error_log = paths.logs.join("nginx-error.log");
                retry_port(|| {
                    let addr = SocketAddr::new(at.ip, free_port_at(at)?);
                    let conf = nginx::config(
                        addr,
                        upstream,
                        buffering,
                        buffers,
                        route.request_body(),
                        nginx::TlsListen::of(edge, certs.as_ref()),
                        &prefix,
                        &temp_dir,
                        &error_log,
                    );
                    let conf_path = paths.logs.join("nginx.conf");
                    fs::write(&conf_path, conf)?;
                    let args = vec![
                        "-p".into(),
                        format!("{}/", prefix.display()),
                        "-c".into(),
                        conf_path.to_string_lossy().into(),
                        "-e".into(),
                        error_log.to_string_lossy().into(),
                    ];
                    start_at_edge(
                        spec(n.binary.clone(), args),
                        cgroup.as_ref(),
                        Some(addr),
                        probe,
                        probe_edge.as_ref(),
                        self.ready_timeout,
                    )
                })?
            }
            ProxyKind::Caddy
            | ProxyKind::Haproxy
            | ProxyKind::Varnish
            | ProxyKind::Apache
            | ProxyKind::H2o
            | ProxyKind::Squid
            | ProxyKind::Trafficserver => retry_port(|| {
                let addr = SocketAddr::new(at.ip, free_port_at(at)?);
                let line = packaged::line(
                    &self.tools,
                    route,
                    addr,
                    upstream,
                    &paths.logs,
                    &paths.scratch,
                    certs.as_ref(),
                )?
                .context("a packaged proxy has a command line")?;
                let mut spec = spec(line.program, line.args);
                spec.env = line.env;
                start_at_edge(
                    spec,
                    cgroup.as_ref(),
                    Some(addr),
                    probe,
                    probe_edge.as_ref(),
                    self.ready_timeout,
                )
            })?,
            ProxyKind::Pingora => {
                let defaults = proxy::ProxyConfig::new(upstream, proxy::Buffering::Off);
                let on_off = |on| {
                    if on {
                        proxy::Buffering::On
                    } else {
                        proxy::Buffering::Off
                    }
                };
                // Every proxy route has a request-body policy.
                let request = route.request_body().unwrap_or(RequestBody {
                    buffering: false,
                    max_body_bytes: RequestBody::NGINX_MAX_BODY,
                    buffer_limit: u64::MAX,
                    explicit: false,
                });
                let args = Child::Proxy(proxy::ProxyArgs {
                    listen: SocketAddr::new(at.ip, 0),
                    upstream,
                    buffering: on_off(buffering),
                    buffer_size: Size(buffers.buffer_size),
                    buffers: format!("{}x{}", buffers.buffers_count, Size(buffers.buffers_size)),
                    busy_buffers_size: Size(buffers.busy_buffers_size),
                    max_temp_file_size: Size(buffers.max_temp_file_size),
                    temp_file_write_size: Size(buffers.temp_file_write_size),
                    temp_path: Some(temp_dir.clone()),
                    threads: 1,
                    read_timeout: defaults.read_timeout,
                    send_timeout: defaults.send_timeout,
                    stats_log: Some(paths.logs.join(schema::PROXY_STATS_CSV)),
                    gauge_log: Some(paths.logs.join(schema::PROXY_GAUGE_LOG)),
                    gauge_interval: defaults.gauge_interval,
                    allow_remote: false,
                    request_buffering: on_off(request.buffering),
                    client_body_buffer_size: Size(defaults.request.body_buffer_size as u64),
                    client_max_body_size: Size(request.max_body_bytes),
                    client_header_timeout: defaults.request.header_timeout,
                    client_body_timeout: defaults.request.body_timeout,
                    keepalive_timeout: defaults.keepalive.timeout,
                    keepalive_requests: defaults.keepalive.requests,
                    keepalive_time: defaults.keepalive.time,
                    worker_connections: defaults.worker_connections,
                    tls_cert: certs.as_ref().map(|c| c.cert.clone()),
                    tls_key: certs.as_ref().map(|c| c.key.clone()),
                    http2: edge.http2,
                });
                let spec = spec(self.exe.clone(), process::utf8_args(args.argv())?);
                start_at_edge(
                    spec,
                    cgroup.as_ref(),
                    None,
                    probe,
                    probe_edge.as_ref(),
                    self.ready_timeout,
                )?
            }
        };
        Ok(Some(Running {
            guard,
            addr,
            cgroup,
            temp_dir: Some(temp_dir),
            tls_ca,
        }))
    }
}

/// Starts `spec`; learns its address from the ready line when `addr` is not
/// known in advance; then waits for `GET probe` to answer 200.
fn start_and_probe(
    spec: Spec,
    cgroup: Option<&Cgroup>,
    addr: Option<SocketAddr>,
    probe: &str,
    ready: Duration,
) -> Result<(Guard, SocketAddr)> {
    let mut guard = process::spawn(&spec, cgroup)?;
    let addr = match addr {
        Some(a) => a,
        None => guard.wait_ready_line(ready)?,
    };
    guard.wait_http_ok(addr, probe, ready)?;
    Ok((guard, addr))
}

/// [`start_and_probe`] for a proxy at the route's edge: when the edge
/// has TLS (`tls`: the load's flags for it), the probe is the load
/// generator's own client (`loadgen::probe::edge_status`), TLS verified
/// against the run's authority and HTTP/2 where the edge speaks it, so
/// ready means
/// that the certificate is loaded, that ALPN chooses what the load will
/// speak and that the app answers behind it.
fn start_at_edge(
    spec: Spec,
    cgroup: Option<&Cgroup>,
    addr: Option<SocketAddr>,
    probe: &str,
    tls: Option<&loadgen::edge::EdgeArgs>,
    ready: Duration,
) -> Result<(Guard, SocketAddr)> {
    let Some(edge) = tls else {
        return start_and_probe(spec, cgroup, addr, probe, ready);
    };
    let mut guard = process::spawn(&spec, cgroup)?;
    let addr = match addr {
        Some(a) => a,
        None => guard.wait_ready_line(ready)?,
    };
    guard.wait_status_with(addr, probe, 200, ready, |a, p| {
        loadgen::probe::edge_status(&format!("https://{a}"), edge, p, PROBE_WAIT)
    })?;
    Ok((guard, addr))
}

/// The longest one probe of a TLS edge waits.
const PROBE_WAIT: Duration = Duration::from_secs(2);

/// A user's command line, run by `/bin/sh -c` on a free port.
struct UserCommand<'a> {
    name: &'static str,
    /// Its output goes to `<output>.out` and `<output>.err`.
    output: &'static str,
    cwd: Option<PathBuf>,
    probe: &'a str,
    ready: Duration,
}

impl UserCommand<'_> {
    /// Starts the line `line(addr)` gives for a free port `at`, in its own
    /// process group, and waits until `GET probe` answers 200 there.
    fn start(
        &self,
        paths: &RunPaths,
        cgroup: Option<Cgroup>,
        at: &Place,
        line: impl Fn(SocketAddr) -> String,
    ) -> Result<Running> {
        let (guard, addr) = retry_port(|| {
            let addr = SocketAddr::new(at.ip, free_port_at(at)?);
            let spec = Spec {
                name: self.name.into(),
                program: "/bin/sh".into(),
                args: vec!["-c".into(), line(addr)],
                env: vec![],
                cwd: self.cwd.clone(),
                netns: at.netns.clone(),
                stdout: paths.logs.join(format!("{}.out", self.output)),
                stderr: paths.logs.join(format!("{}.err", self.output)),
            };
            start_and_probe(spec, cgroup.as_ref(), Some(addr), self.probe, self.ready)
        })?;
        Ok(Running {
            guard,
            addr,
            cgroup,
            temp_dir: None,
            tls_ca: None,
        })
    }
}

/// Retries `start` when it failed because its port was taken meanwhile.
fn retry_port<T>(mut start: impl FnMut() -> Result<T>) -> Result<T> {
    let mut last = None;
    for _ in 0..3 {
        match start() {
            Ok(v) => return Ok(v),
            Err(e) => {
                let text = format!("{e:#}");
                if !(text.contains("in use") || text.contains("Address already")) {
                    return Err(e);
                }
                last = Some(e);
            }
        }
    }
    match last {
        Some(e) => Err(e.context("the port was taken three times in a row")),
        None => bail!("no attempt was made"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The WSGI app writes the send and receive logs itself: its headers
    /// are the `schema` crate's cells, as the replica's are.
    #[test]
    fn the_python_app_writes_the_logs_headers_of_the_results_structs() {
        for header in [header_line::<SendLogCells>(), header_line::<RecvLogCells>()] {
            assert!(
                WSGI_APP_PY.contains(&format!("{header:?}")),
                "slowlab_app.py lacks the header {header:?}"
            );
        }
    }
}
