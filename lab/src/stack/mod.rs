//! Stacks: a server (one of the lab's, a user's command, or one already
//! running) and a route to it, started as capped child processes, and the
//! one lifecycle of a run. What each server and route *is* lives in the
//! catalogue; this module starts them.
//!
//! # Layout
//! - this file: the app of a stack ([`App`], [`ServerCommand`]).
//! - [`launch`]: starting a server and a proxy as capped child processes,
//!   by the catalogue's recipes.
//! - [`nginx`]: the generated NGINX configuration of the experiment (and
//!   of its TLS and HTTP/2 edge).
//! - [`edge`]: the load generator's TLS and HTTP/2 flags for a stack's
//!   edge.
//! - [`packaged`]: the command line of a proxy from Debian's packages,
//!   its configuration written by [`caddy`], [`haproxy`], [`varnish`],
//!   [`apache`], [`h2o`], [`squid`] or [`trafficserver`].
//! - [`policy`]: the cap policy, and the check for missing tools.
//! - [`run`]: one run: cgroups, stack, sampler, load, stop in data-path
//!   order; what `reproduce`, `sweep` and `check` share ([`run::start`]
//!   keeps a stack up for several loads, as `check` does).
//! - [`load_end`]: how a load ended, and what it measured.

pub mod apache;
pub mod caddy;
pub mod edge;
pub mod h2o;
pub mod haproxy;
pub mod launch;
pub mod load_end;
pub mod nginx;
pub mod packaged;
pub mod policy;
pub mod run;
pub mod squid;
pub mod trafficserver;
pub mod varnish;

use catalogue::Server;

/// NGINX's default timeouts (`client_header_timeout`, `send_timeout`,
/// `proxy_connect_timeout`, `proxy_read_timeout`), in seconds: every
/// packaged proxy's config takes them where it has a counterpart, so that
/// each proxy gives a slow client the same time.
pub const NGINX_TIMEOUT_S: u32 = 60;

/// A user's own server, started from a shell command line
/// (`slowlab check --server-cmd`): slowlab picks a free loopback port and
/// puts it where the line says `{port}`, and the address where it says
/// `{host}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCommand {
    /// The line as the user wrote it, run by `/bin/sh -c`.
    pub line: String,
    /// Its working directory (`--server-dir`), else the harness's.
    pub dir: Option<std::path::PathBuf>,
    /// The path that answers 200 once it is ready (`--fast-path`).
    pub ready_path: String,
}

impl ServerCommand {
    /// Checks that the line says where the port goes.
    pub fn new(
        line: &str,
        dir: Option<std::path::PathBuf>,
        ready_path: &str,
    ) -> Result<Self, String> {
        if line.trim().is_empty() {
            return Err("--server-cmd is empty".into());
        }
        if !line.contains("{port}") {
            return Err(format!(
                "--server-cmd must say where the port goes with {{port}}: `{line}`"
            ));
        }
        Ok(ServerCommand {
            line: line.into(),
            dir,
            ready_path: ready_path.into(),
        })
    }

    /// The line with `{host}` and `{port}` filled in.
    pub fn line_for(&self, addr: std::net::SocketAddr) -> String {
        self.line
            .replace("{host}", &addr.ip().to_string())
            .replace("{port}", &addr.port().to_string())
    }
}

/// A user's own proxy (`check --through-cmd`): a shell line that starts
/// it listening on `{host}:{port}` in front of `{upstream}`, the app's
/// `IP:port`, with the user's own configuration. It is started, probed and
/// stopped as `--server-cmd` is, in the proxy's cgroup.
#[derive(Debug, Clone, PartialEq)]
pub struct ProxyCommand {
    /// The line as the user wrote it, run by `/bin/sh -c`.
    pub line: String,
}

impl ProxyCommand {
    /// Checks that the line says where the port and the upstream go.
    pub fn new(line: &str) -> Result<Self, String> {
        if line.trim().is_empty() {
            return Err("--through-cmd is empty".into());
        }
        for needed in ["{port}", "{upstream}"] {
            if !line.contains(needed) {
                return Err(format!(
                    "--through-cmd must say where {needed} goes (the port it listens on, and the app's IP:port it forwards to): `{line}`"
                ));
            }
        }
        Ok(ProxyCommand { line: line.into() })
    }

    /// The line with `{host}`, `{port}` and `{upstream}` filled in.
    pub fn line_for(&self, addr: std::net::SocketAddr, upstream: std::net::SocketAddr) -> String {
        self.line
            .replace("{upstream}", &upstream.to_string())
            .replace("{host}", &addr.ip().to_string())
            .replace("{port}", &addr.port().to_string())
    }
}

/// The app of a stack: one of the lab's servers, a user's command, or a
/// server that already runs (nothing to start or stop).
#[derive(Debug, Clone, PartialEq)]
pub enum App {
    Server(Server),
    Command(ServerCommand),
    Running {
        addr: std::net::SocketAddr,
        /// The path a proxy in front of it is probed with.
        ready_path: String,
    },
}

impl From<Server> for App {
    fn from(s: Server) -> Self {
        App::Server(s)
    }
}

impl App {
    /// The path that answers 200 once the app (and a proxy in front of it)
    /// is ready.
    pub fn ready_path(&self) -> &str {
        match self {
            App::Server(_) => "/fast",
            App::Command(c) => &c.ready_path,
            App::Running { ready_path, .. } => ready_path,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proxy_command_needs_its_port_and_upstream_and_gets_them() {
        assert!(ProxyCommand::new(" ").unwrap_err().contains("empty"));
        assert!(
            ProxyCommand::new("haproxy -p {port}")
                .unwrap_err()
                .contains("{upstream}")
        );
        assert!(
            ProxyCommand::new("x {upstream}")
                .unwrap_err()
                .contains("{port}")
        );
        let c = ProxyCommand::new("p --listen {host}:{port} --to {upstream}").unwrap();
        let line = c.line_for(
            "127.0.0.1:8080".parse().unwrap(),
            "127.0.0.1:9000".parse().unwrap(),
        );
        assert_eq!(line, "p --listen 127.0.0.1:8080 --to 127.0.0.1:9000");
    }
    use crate::prepare::{PyPackages, PyTools, Tools};
    use catalogue::{Route, Tool};

    #[test]
    fn a_missing_python_server_skips_only_its_own_conditions() {
        let mut python = PyTools::default();
        python.set(
            Tool::Uvicorn,
            Ok(PyPackages {
                program: "/venv/bin/uvicorn".into(),
                versions: vec![("uvicorn".into(), "0.54.0".into())],
            }),
        );
        python.set(Tool::Granian, Err("no wheel for this platform".into()));
        let tools = Tools {
            gunicorn: Err("no network".into()),
            python,
            ..Tools::none("not installed")
        };
        let missing =
            |s| super::policy::missing_tool(&tools, s, Route::Direct).map(|m| m.to_string());
        assert_eq!(missing(Server::Uvicorn), None);
        assert_eq!(missing(Server::RustAsync), None);
        assert_eq!(
            missing(Server::Granian).as_deref(),
            Some("granian is not available: no wheel for this platform")
        );
        assert!(
            missing(Server::Waitress4)
                .is_some_and(|m| m.starts_with("waitress is not available: not prepared"))
        );
        assert_eq!(tools.unavailable(Tool::Gunicorn), Some("no network"));
        assert_eq!(tools.unavailable(Tool::Nginx), Some("not installed"));
        assert_eq!(tools.python.missing().len(), 4);
        assert_eq!(
            tools.python.versions().get("uvicorn").map(String::as_str),
            Some("0.54.0")
        );
    }
}
