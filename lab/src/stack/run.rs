//! One run of a stack, the lifecycle every measuring verb shares: check the
//! tools, create the cgroups, start the app and the proxy and wait until
//! they answer, start the sampler, run a load generator, wait for it (or for
//! Ctrl-C, or a time limit), and stop everything in data-path order.
//!
//! A verb describes what to start ([`StackSpec`]) and which load to run
//! ([`LoadCommand`]), and records what [`run`] returns ([`Measured`]). A
//! verb that runs several loads against one stack (`check`) calls the same
//! steps one by one: [`start`], [`Stack::run_load`] per load, [`Stack::stop`].

use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::edge::{EdgeLoad, Streams};
use super::launch::{Launcher, RunPaths, Running};
use super::policy::{CapPlan, MissingTool, missing_tool};
use super::{App, ProxyCommand};
use crate::cgroup::{Caps, Cgroup, Mode};
use crate::child::Child;
use crate::netns::{NetLab, NetSpec, Place};
use crate::process::{self, Spec};
use crate::procfs::HostCpu;
use crate::sample::{Probe, Sampler, Samples};
use crate::signals;
use catalogue::Body;
use catalogue::{ProxyBuffers, Route};

/// What every run on this machine shares.
#[derive(Debug)]
pub struct Lab<'a> {
    pub launcher: &'a Launcher,
    pub cgroups: &'a Mode,
    /// How often the sampler reads every component.
    pub sample_interval: Duration,
}

/// What to start: a server behind a route, capped, with its files in
/// `paths`.
#[derive(Debug, Clone)]
pub struct StackSpec {
    /// One of the lab's servers (`Server::X.into()`), a user's command, or
    /// a server that already runs.
    pub server: App,
    pub route: Route,
    /// A user's own proxy in front of the app (`check --through-cmd`),
    /// with `route` direct: the lab starts no proxy of its own then.
    pub proxy_cmd: Option<ProxyCommand>,
    /// The `/large` body the server sends.
    pub body: Body,
    /// The proxy's buffers (NGINX and pingora alike).
    pub buffers: ProxyBuffers,
    pub caps: CapPlan,
    /// The cgroups are `<prefix>-app`, `<prefix>-proxy`, `<prefix>-loadgen`.
    pub cgroup_prefix: String,
    pub paths: RunPaths,
    /// The run's network namespaces: none, all on the host's loopback;
    /// some, the app and proxy in a server namespace and the load
    /// generator in a client namespace (`crate::netns`), created by
    /// [`start`] and removed by [`Stack::stop`].
    pub netns: Option<NetSpec>,
    /// How the slow downloads share connections on an HTTP/2 edge
    /// ([`Streams::ONE`] on every other).
    pub streams: Streams,
}

impl StackSpec {
    /// The tool this stack needs and the machine lacks, if any; [`run`]
    /// starts nothing then.
    pub fn missing_tool(&self, tools: &crate::prepare::Tools) -> Option<MissingTool> {
        match &self.server {
            App::Server(server) => missing_tool(tools, *server, self.route),
            // A user's server needs nothing of ours; its proxy may.
            App::Command(_) | App::Running { .. } => {
                let tool = self.route.proxy().and_then(|(kind, _)| kind.needs())?;
                tools.unavailable(tool).map(|why| MissingTool {
                    tool,
                    needed_by: self.route.to_string(),
                    why: why.to_string(),
                })
            }
        }
    }
}

/// The load generator of a run, a `slowlab` child verb.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadCommand {
    /// `slowlab load`: slow readers and the open-loop `/fast` client.
    Load(loadgen::LoadArgs),
    /// `slowlab sweep-load`: the steps of a rate sweep.
    SweepLoad(loadgen::sweep::SweepLoadArgs),
}

impl LoadCommand {
    /// Its name in messages.
    fn name(&self) -> &'static str {
        match self {
            LoadCommand::Load(_) => "loadgen",
            LoadCommand::SweepLoad(_) => "sweep-load",
        }
    }

    /// Whether it asks for `SCHED_FIFO`, which a cgroup v1 child grants
    /// only with a realtime budget.
    fn wants_realtime(&self) -> bool {
        matches!(self, LoadCommand::Load(a) if a.realtime)
    }

    /// Its child verb, its sockets bound to `bind` (the lab's addresses
    /// in its namespaces; left as given without them).
    /// The child's arguments: in namespaces with the lab's `bind`, and
    /// `slowlab load` with the stack's `edge` (TLS, HTTP/2);
    /// `sweep-load` speaks cleartext HTTP/1.1 only.
    fn child(&self, bind: Option<loadgen::bind::BindArgs>, edge: &EdgeLoad) -> Child {
        match self {
            LoadCommand::Load(a) => Child::Load(loadgen::LoadArgs {
                bind: bind.unwrap_or_else(|| a.bind.clone()),
                edge: edge.args(),
                ..a.clone()
            }),
            LoadCommand::SweepLoad(a) => Child::SweepLoad(loadgen::sweep::SweepLoadArgs {
                bind: bind.unwrap_or_else(|| a.bind.clone()),
                ..a.clone()
            }),
        }
    }
}

/// How the load generator ended.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadExit {
    /// It exited on its own; `last_error` is the last line of its stderr.
    Exited {
        status: ExitStatus,
        last_error: String,
    },
    /// The user asked to stop (Ctrl-C, SIGTERM) and it was stopped.
    Interrupted,
    /// It was still running after this long and was stopped.
    TimedOut(Duration),
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct Measured {
    pub samples: Samples,
    /// Wall time of the load generator process.
    pub load_s: f64,
    /// Cores the whole machine was busy during the load (every process,
    /// not only ours).
    pub host_busy_cores: Option<f64>,
    /// Milliseconds the hypervisor ran something else while this VM wanted
    /// a CPU during the load.
    pub host_steal_ms: Option<f64>,
    pub exit: LoadExit,
}

/// Why a run did not get to its load.
#[derive(Debug)]
pub enum RunError {
    /// A tool the stack needs is missing: nothing was started.
    MissingTool(MissingTool),
    /// The run asks for network namespaces that this machine cannot
    /// create (why, in one line): nothing was started.
    NoNetns(String),
    /// A cgroup or a component could not be set up or did not answer.
    Start(anyhow::Error),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::MissingTool(m) => fmt::Display::fmt(m, f),
            RunError::NoNetns(why) => f.write_str(why),
            RunError::Start(e) => write!(f, "{e:#}"),
        }
    }
}

impl std::error::Error for RunError {}

impl From<anyhow::Error> for RunError {
    fn from(e: anyhow::Error) -> Self {
        RunError::Start(e)
    }
}

/// Runs `load` against `stack`: `load` is given the URL of the stack's
/// entry point (the proxy, or the app for direct), and the load generator
/// may run for `limit` before it is stopped. The run's directory is
/// created if missing; the load generator's stdout and stderr go to
/// `load.out` and `load.err` there.
///
/// [`start`], one [`Stack::run_load`], [`Stack::stop`]. Must be called from
/// the thread that stays alive for the whole run (see [`process::spawn`]).
pub fn run(
    lab: &Lab<'_>,
    stack: &StackSpec,
    limit: Duration,
    load: impl FnOnce(&str) -> LoadCommand,
) -> Result<Measured, RunError> {
    let running = start(lab, stack)?;
    let command = load(&running.url());
    let measured = running.run_load(stack.paths.logs(), limit, &command);
    running.stop();
    measured
}

/// A started stack: its app (none for a server that was already running)
/// and its proxy, up until [`Stack::stop`] (or drop), for one or more
/// loads.
#[derive(Debug)]
pub struct Stack<'a> {
    lab: &'a Lab<'a>,
    app: Option<Running>,
    proxy: Option<Running>,
    target: SocketAddr,
    /// What the load generator needs beyond the URL to reach the edge.
    edge: EdgeLoad,
    /// The server slowlab did not start (`App::Running`), found by its
    /// listening socket: the root of its processes, sampled as `app`.
    running_pid: Option<u32>,
    loadgen_caps: Option<Caps>,
    cgroup_prefix: String,
    /// Dropped after the processes inside (see [`Stack::stop`]).
    net: Option<NetLab>,
}

/// Checks the tools, creates the cgroups, starts the app (unless it runs
/// already) and the proxy, and waits until they answer. Must be called
/// from the thread that stays alive while the stack runs.
pub fn start<'a>(lab: &'a Lab<'a>, stack: &StackSpec) -> Result<Stack<'a>, RunError> {
    if let Some(missing) = stack.missing_tool(&lab.launcher.tools) {
        return Err(RunError::MissingTool(missing));
    }
    let net = match &stack.netns {
        Some(spec) => {
            if let Some(why) = crate::netns::unavailable() {
                return Err(RunError::NoNetns(why));
            }
            Some(NetLab::create(spec).context("creating the run's network namespaces")?)
        }
        None => None,
    };
    // Clients connect to the entry (the proxy, or the app on direct); an
    // app behind a proxy listens on its namespace's own loopback.
    let entry = net.as_ref().map(NetLab::entry).unwrap_or_else(Place::host);
    let behind_proxy = stack.route.proxy().is_some() || stack.proxy_cmd.is_some();
    let app_at = match behind_proxy {
        true => entry.loopback(),
        false => entry.clone(),
    };
    let paths = &stack.paths;
    let dir = paths.logs();
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let cgroup = |name: &str, caps: Option<Caps>| cgroup(lab, &stack.cgroup_prefix, name, caps);
    let app = match &stack.server {
        App::Server(server) => Some(lab.launcher.start_server(
            *server,
            stack.body,
            paths,
            cgroup("app", stack.caps.app)?,
            &app_at,
        )?),
        App::Command(cmd) => {
            Some(
                lab.launcher
                    .start_command(cmd, paths, cgroup("app", stack.caps.app)?, &app_at)?,
            )
        }
        App::Running { .. } => None,
    };
    let app_addr = match (&app, &stack.server) {
        (Some(a), _) => a.addr,
        (None, App::Running { addr, .. }) => *addr,
        (None, _) => unreachable!("every app but a running one was started above"),
    };
    let proxy_cg = match behind_proxy {
        true => cgroup("proxy", stack.caps.proxy)?,
        false => None,
    };
    let proxy = match &stack.proxy_cmd {
        Some(cmd) => Some(lab.launcher.start_proxy_command(
            cmd,
            app_addr,
            paths,
            proxy_cg,
            stack.server.ready_path(),
            &entry,
        )?),
        None => lab.launcher.start_proxy(
            stack.route,
            app_addr,
            &stack.buffers,
            paths,
            proxy_cg,
            stack.server.ready_path(),
            &entry,
        )?,
    };
    let target = proxy.as_ref().map(|p| p.addr).unwrap_or(app_addr);
    // A running server is on the host (a --target never runs in the lab's
    // namespaces): the lowest pid holding its listener is its root (a
    // master's workers inherit the socket).
    let running_pid = match &stack.server {
        App::Running { addr, .. } => crate::procfs::listeners(addr.port()).first().copied(),
        _ => None,
    };
    let edge = EdgeLoad {
        edge: match &stack.proxy_cmd {
            // A user's proxy is reached as any user's server: cleartext.
            Some(_) => catalogue::Edge::CLEARTEXT_HTTP1,
            None => stack.route.edge(),
        },
        tls_ca: proxy.as_ref().and_then(|p| p.tls_ca.clone()),
        streams: stack.streams,
    };
    Ok(Stack {
        lab,
        app,
        proxy,
        running_pid,
        target,
        edge,
        loadgen_caps: stack.caps.loadgen,
        cgroup_prefix: stack.cgroup_prefix.clone(),
        net,
    })
}

/// `<prefix>-<name>`, or none without usable cgroups.
fn cgroup(
    lab: &Lab<'_>,
    prefix: &str,
    name: &str,
    caps: Option<Caps>,
) -> anyhow::Result<Option<Cgroup>> {
    if matches!(lab.cgroups, Mode::None { .. }) {
        return Ok(None);
    }
    Cgroup::create(lab.cgroups, &format!("{prefix}-{name}"), caps)
        .map(Some)
        .with_context(|| format!("creating the {name} cgroup"))
}

impl Stack<'_> {
    /// The URL of the stack's entry point: the proxy, or the app for
    /// direct; `https://` where the edge terminates TLS.
    pub fn url(&self) -> String {
        match self.edge.edge.tls {
            true => format!("https://{}/", self.target),
            false => format!("http://{}", self.target),
        }
    }

    /// What the clients speak to the stack's entry point.
    pub fn edge(&self) -> catalogue::Edge {
        self.edge.edge
    }

    /// The run's namespaces, if it has them (a later step adds qdiscs or
    /// routes through [`NetLab::ip`]).
    pub fn netlab(&self) -> Option<&NetLab> {
        self.net.as_ref()
    }

    /// Whether the app and the proxy that were started still run; the name
    /// and last stderr line of the first that does not.
    pub fn exited(&mut self) -> Option<String> {
        if let Some(pid) = self.running_pid.filter(|&p| crate::procfs::gone(p)) {
            return Some(format!("the server at {} (pid {pid}) is gone", self.target));
        }
        [self.app.as_mut(), self.proxy.as_mut()]
            .into_iter()
            .flatten()
            .find_map(|r| {
                let status = r.guard.try_wait()?;
                Some(format!(
                    "{} exited ({status}): {}",
                    r.guard.name,
                    r.guard.last_error_line()
                ))
            })
    }

    /// `ListenOverflows` of the server's network namespace (the host's
    /// without namespaces): connections its listen queues dropped since
    /// boot; compare two readings.
    pub fn listen_overflows(&self) -> Option<u64> {
        let ns = self.net.as_ref().map(|n| n.server.path());
        crate::netns::within(ns.as_deref(), || Ok(crate::procfs::listen_overflows()))
            .ok()
            .flatten()
    }

    /// The root pid of the server's processes, started by slowlab or not.
    pub fn app_pid(&self) -> Option<u32> {
        self.app.as_ref().map(Running::pid).or(self.running_pid)
    }

    /// Runs one load generator against the stack, sampled, in its own
    /// cgroup (`<prefix>-loadgen`, removed afterwards); its stdout and
    /// stderr go to `load.out` and `load.err` in `dir` (created if
    /// missing). It may run for `limit` before it is stopped.
    pub fn run_load(
        &self,
        dir: &Path,
        limit: Duration,
        command: &LoadCommand,
    ) -> Result<Measured, RunError> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut probes: Vec<Probe> = self.app.iter().map(|a| a.probe("app")).collect();
        if let Some(pid) = self.running_pid {
            probes.push(Probe {
                component: "app".into(),
                counters: None,
                root_pid: pid,
                temp_dir: None,
            });
        }
        if let Some(p) = &self.proxy {
            probes.push(p.probe("proxy"));
        }
        let load_cg = cgroup(self.lab, &self.cgroup_prefix, "loadgen", self.loadgen_caps)?;
        if let Some(g) = load_cg.as_ref().filter(|_| command.wants_realtime()) {
            // 50 ms of every second, far more than one sleeping thread needs.
            g.grant_realtime(50_000);
        }
        let spec = Spec {
            name: command.name().into(),
            program: self.lab.launcher.exe.clone(),
            // In namespaces, `/fast` takes the unshaped second veth pair
            // and, with a per-client link, each slow client its own class.
            args: process::utf8_args(
                command
                    .child(self.net.as_ref().map(NetLab::binds), &self.edge)
                    .argv(),
            )?,
            env: vec![],
            cwd: None,
            netns: self.net.as_ref().map(|n| n.client.path()),
            stdout: dir.join("load.out"),
            stderr: dir.join("load.err"),
        };
        let qdiscs = self
            .net
            .as_ref()
            .map(NetLab::shaped_qdiscs)
            .unwrap_or_default();
        let sampler = Sampler::start(probes, qdiscs, self.lab.sample_interval);
        let host_before = HostCpu::read();
        let load_started = Instant::now();
        let mut load = process::spawn(&spec, load_cg.as_ref())?;
        sampler.add(Probe {
            component: "loadgen".into(),
            counters: load_cg.as_ref().map(Cgroup::counters),
            root_pid: load.pid,
            temp_dir: None,
        });

        let status = load.wait_or_interrupt(load_started, limit);
        let load_s = load_started.elapsed().as_secs_f64();
        let host = match (host_before, HostCpu::read()) {
            (Some(a), Some(b)) => Some(a.delta(&b, load_s)),
            _ => None,
        };
        let samples = sampler.stop();
        let exit = match status {
            Some(status) => LoadExit::Exited {
                status,
                last_error: load.last_error_line(),
            },
            None if signals::requested() => LoadExit::Interrupted,
            None => LoadExit::TimedOut(limit),
        };
        drop(load);
        drop(load_cg);
        Ok(Measured {
            samples,
            load_s,
            host_busy_cores: host.map(|(busy, _)| busy),
            host_steal_ms: host.map(|(_, steal)| steal),
            exit,
        })
    }

    /// Stops in the order of the data path: the proxy, then the app (the
    /// client stopped at the end of its load). Each guard kills its whole
    /// process group, then its cgroup is removed; the namespaces go last.
    /// Dropping the stack does the same.
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for Stack<'_> {
    fn drop(&mut self) {
        drop(self.proxy.take());
        drop(self.app.take());
        drop(self.net.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare::Tools;
    use catalogue::Server;

    fn load_args(realtime: bool) -> loadgen::LoadArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Cmd {
            #[command(flatten)]
            args: loadgen::LoadArgs,
        }
        let mut words = vec!["load", "--target", "http://127.0.0.1:9"];
        if realtime {
            words.push("--realtime");
        }
        Cmd::try_parse_from(words).expect("parses").args
    }

    #[test]
    fn only_a_load_that_asks_for_realtime_gets_the_budget() {
        assert!(LoadCommand::Load(load_args(true)).wants_realtime());
        assert!(!LoadCommand::Load(load_args(false)).wants_realtime());
        let c = LoadCommand::Load(load_args(true));
        let plain = EdgeLoad {
            edge: catalogue::Edge::CLEARTEXT_HTTP1,
            tls_ca: None,
            streams: Streams::ONE,
        };
        assert_eq!(c.child(None, &plain).argv()[0], "load");
        assert_eq!(c.name(), "loadgen");
    }

    #[test]
    fn the_load_of_an_h2_edge_parses_back_with_its_edge() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cmd {
            #[command(flatten)]
            args: loadgen::LoadArgs,
        }
        let edge = EdgeLoad {
            edge: catalogue::Route::NginxH2Off.edge(),
            tls_ca: Some("/tmp/run/tls/ca.pem".into()),
            streams: Streams {
                per_conn: 2,
                window: None,
            },
        };
        let Child::Load(a) = LoadCommand::Load(load_args(false)).child(None, &edge) else {
            panic!("a load");
        };
        let back = Cmd::try_parse_from(std::iter::once("load".into()).chain(a.to_args()))
            .expect("parses")
            .args;
        assert!(back.edge.http2);
        assert_eq!(back.edge.streams_per_conn, 2);
        assert_eq!(back.edge.h2_window.0, 65535);
        assert_eq!(back.edge.tls_ca, Some("/tmp/run/tls/ca.pem".into()));
        assert_eq!(back, a);
    }

    #[test]
    fn a_stack_that_needs_a_missing_tool_starts_nothing() {
        let tools = Tools {
            gunicorn: Err("no network".into()),
            ..Tools::none("not installed")
        };
        let dir = tempfile::tempdir().unwrap();
        let launcher = Launcher {
            exe: "/nonexistent/slowlab".into(),
            tools,
            app_dir: dir.path().into(),
            ready_timeout: crate::stack::launch::READY_TIMEOUT,
        };
        let mode = Mode::None {
            reason: "test".into(),
        };
        let lab = Lab {
            launcher: &launcher,
            cgroups: &mode,
            sample_interval: Duration::from_millis(200),
        };
        let stack = StackSpec {
            streams: Streams::ONE,
            server: Server::GunicornSync2.into(),
            route: Route::Direct,
            proxy_cmd: None,
            body: Body {
                large_bytes: 1 << 20,
                chunk_bytes: 1 << 16,
            },
            buffers: ProxyBuffers::EXPERIMENT,
            caps: CapPlan::none(),
            cgroup_prefix: "test".into(),
            paths: RunPaths::new(dir.path(), dir.path()).unwrap(),
            netns: None,
        };
        let mut asked = false;
        let err = run(&lab, &stack, Duration::from_secs(1), |_| {
            asked = true;
            LoadCommand::Load(load_args(false))
        })
        .expect_err("skipped");
        assert!(matches!(err, RunError::MissingTool(_)), "{err}");
        assert_eq!(err.to_string(), "gunicorn is not available: no network");
        assert!(!asked, "no load was built");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
