//! The stacks a run is made of: a server (real Gunicorn or the Rust replica)
//! and a route to it (direct, or through NGINX or pingora with buffering off
//! or on), how to start them, and the one lifecycle of a run.
//!
//! A server kind is a [`Server`] variant with its name, its description and
//! its [`Recipe`] (every match on it is exhaustive, so the compiler lists
//! what a new one needs); a route is a [`Route`] variant with its name and
//! its proxy. [`launch`] follows the recipe; [`run`] does the rest.
//!
//! # Layout
//! - this file: the names, and what each stack is (recipe, handlers,
//!   buffering, the tools it needs).
//! - [`launch`]: starting a server and a proxy as capped child processes.
//! - [`nginx`]: the generated NGINX configuration of the experiment.
//! - [`policy`]: the cap policy, and the check for missing tools.
//! - [`run`]: one run: cgroups, stack, sampler, load, stop in data-path
//!   order; what `reproduce`, `sweep` and `check` share ([`run::start`]
//!   keeps a stack up for several loads, as `check` does).

pub mod launch;
pub mod load_end;
pub mod nginx;
pub mod policy;
pub mod run;

use std::fmt;
use std::str::FromStr;

/// The header of the receive log, the send log's twin for `POST /upload`.
pub use server::recv_log::HEADER_LINE as RECV_LOG_HEADER;
/// The header of the send log both servers write (ARCHITECTURE.md).
pub use server::send_log::HEADER_LINE as SEND_LOG_HEADER;

/// A server of the experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Server {
    GunicornSync2,
    GunicornGthread4,
    RustSync2,
    RustThreads4,
    RustAsync,
    Uvicorn,
    GunicornUvicorn2,
    GunicornGevent2,
    Waitress4,
    Granian,
}

impl Server {
    pub const ALL: [Server; 10] = [
        Server::GunicornSync2,
        Server::GunicornGthread4,
        Server::RustSync2,
        Server::RustThreads4,
        Server::RustAsync,
        Server::Uvicorn,
        Server::GunicornUvicorn2,
        Server::GunicornGevent2,
        Server::Waitress4,
        Server::Granian,
    ];

    /// The original's servers and their Rust replicas (the `cross` preset).
    pub const EXPERIMENT: [Server; 5] = [
        Server::GunicornSync2,
        Server::GunicornGthread4,
        Server::RustSync2,
        Server::RustThreads4,
        Server::RustAsync,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Server::GunicornSync2 => "gunicorn-sync2",
            Server::GunicornGthread4 => "gunicorn-gthread4",
            Server::RustSync2 => "rust-sync2",
            Server::RustThreads4 => "rust-threads4",
            Server::RustAsync => "rust-async",
            Server::Uvicorn => "uvicorn",
            Server::GunicornUvicorn2 => "gunicorn-uvicorn2",
            Server::GunicornGevent2 => "gunicorn-gevent2",
            Server::Waitress4 => "waitress4",
            Server::Granian => "granian",
        }
    }

    /// How it is started ([`launch`] follows it).
    pub fn recipe(self) -> Recipe {
        match self {
            Server::GunicornSync2 => Recipe::Gunicorn {
                worker_class: "sync",
                workers: 2,
                threads: None,
            },
            Server::GunicornGthread4 => Recipe::Gunicorn {
                worker_class: "gthread",
                workers: 1,
                threads: Some(4),
            },
            Server::RustSync2 => Recipe::Replica {
                model: server::Model::Sync,
                workers: Some(2),
            },
            Server::RustThreads4 => Recipe::Replica {
                model: server::Model::Threads,
                workers: Some(4),
            },
            Server::RustAsync => Recipe::Replica {
                model: server::Model::Async,
                workers: None,
            },
            Server::Uvicorn => Recipe::Python(PyServer::Uvicorn),
            Server::GunicornUvicorn2 => Recipe::Python(PyServer::GunicornUvicorn { workers: 2 }),
            Server::GunicornGevent2 => Recipe::Python(PyServer::GunicornGevent { workers: 2 }),
            Server::Waitress4 => Recipe::Python(PyServer::Waitress { threads: 4 }),
            Server::Granian => Recipe::Python(PyServer::Granian { workers: 1 }),
        }
    }

    /// How many responses it can write at once; `None` for no fixed limit
    /// (one task per connection).
    pub fn handlers(self) -> Option<u32> {
        match self.recipe() {
            Recipe::Gunicorn {
                workers, threads, ..
            } => Some(workers * threads.unwrap_or(1)),
            Recipe::Replica {
                model: server::Model::Async,
                ..
            } => None,
            Recipe::Replica { workers, .. } => workers.map(|w| w as u32),
            Recipe::Python(py) => py.handlers(),
        }
    }

    /// Whether the server itself takes a whole response of `body_bytes` off
    /// its handler, so that a slow reader does not hold the handler:
    /// Waitress queues up to `outbuf_high_watermark` (16 MiB) of output
    /// per connection before its task thread waits (README's server table).
    pub fn absorbs(self, body_bytes: u64) -> bool {
        match self.recipe() {
            Recipe::Python(py) => py.buffers().is_some_and(|b| b >= body_bytes),
            _ => false,
        }
    }

    /// Whether the server itself reads a whole request body of
    /// `body_bytes` before a handler gets the request, so that a slow
    /// uploader holds no handler: only Waitress ([`PyServer::request_buffers`]).
    pub fn absorbs_request(self, body_bytes: u64) -> bool {
        match self.recipe() {
            Recipe::Python(py) => py.request_buffers().is_some_and(|max| body_bytes < max),
            _ => false,
        }
    }

    /// Whether the server reads a request head outside its handlers, so
    /// that a client that never finishes its head holds none
    /// ([`PyServer::takes_head`]).
    pub fn absorbs_head(self) -> bool {
        match self.recipe() {
            Recipe::Python(py) => py.takes_head(),
            _ => false,
        }
    }

    /// How many client connections the server holds open when it stops
    /// accepting another, however little each holds of a handler; `None`
    /// where only the kernel's limits apply ([`PyServer::connection_room`]).
    pub fn connection_room(self) -> Option<u32> {
        match self.recipe() {
            Recipe::Python(py) => py.connection_room(),
            _ => None,
        }
    }

    pub fn is_gunicorn(self) -> bool {
        matches!(self.recipe(), Recipe::Gunicorn { .. })
    }

    /// The external program it needs, if any.
    pub fn needs(self) -> Option<Tool> {
        match self.recipe() {
            Recipe::Gunicorn { .. } => Some(Tool::Gunicorn),
            Recipe::Replica { .. } => None,
            Recipe::Python(py) => Some(py.tool()),
        }
    }

    /// What the server model is, in words, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Server::GunicornSync2 => "Gunicorn 23.0.0, sync worker class, 2 worker processes",
            Server::GunicornGthread4 => "Gunicorn 23.0.0, gthread, 1 process x 4 threads",
            Server::RustSync2 => "slowlab serve --model sync --workers 2 (hyper)",
            Server::RustThreads4 => "slowlab serve --model threads --workers 4 (hyper)",
            Server::RustAsync => "slowlab serve --model async (hyper on tokio)",
            Server::Uvicorn => "Uvicorn 0.54.0, ASGI app, one process, one asyncio event loop",
            Server::GunicornUvicorn2 => {
                "Gunicorn 23.0.0 with 2 Uvicorn workers (uvicorn-worker 0.4.0), ASGI app"
            }
            Server::GunicornGevent2 => {
                "Gunicorn 23.0.0, gevent 26.9.0 worker class, 2 processes x 1000 connections"
            }
            Server::Waitress4 => "Waitress 3.0.2, 4 threads, output buffered up to 16 MiB",
            Server::Granian => "Granian 2.8.7 (Rust, hyper), WSGI, 1 worker x 512 threads",
        }
    }
}

/// How a server is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recipe {
    /// Gunicorn serving the embedded WSGI app:
    /// `--worker-class <worker_class> --workers <workers> [--threads <threads>]`.
    Gunicorn {
        worker_class: &'static str,
        workers: u32,
        threads: Option<u32>,
    },
    /// `slowlab serve --model <model> [--workers <workers>]`.
    Replica {
        model: server::Model,
        workers: Option<usize>,
    },
    /// A Python server from the venv serving the embedded WSGI app or its
    /// ASGI twin.
    Python(PyServer),
}

/// Gunicorn's `worker_connections` default: the most connections one
/// gevent worker serves at once (its greenlet pool's size).
pub const GUNICORN_WORKER_CONNECTIONS: u32 = 1000;

/// Granian's WSGI blocking threads per worker with its defaults:
/// `backpressure = backlog (1024) // workers`, `blocking_threads =
/// backpressure // 2` (granian/server/common.py).
pub const GRANIAN_BLOCKING_THREADS: u32 = 512;

/// Waitress's `outbuf_high_watermark` default: a task thread writes into
/// the connection's output buffer until more than this waits to be sent.
pub const WAITRESS_HIGH_WATERMARK: u64 = 16 << 20;

/// Waitress's `max_request_body_size` default (1 GiB): a request whose
/// `Content-Length` is at least this is answered 413 by the channel
/// (`waitress/parser.py` 153-162), so only a smaller body is read whole.
pub const WAITRESS_MAX_REQUEST_BODY: u64 = 1 << 30;

/// Waitress's `connection_limit` default (`adjustments.py` 231): the
/// server stops accepting while its socket map holds this many entries.
pub const WAITRESS_CONNECTION_LIMIT: u32 = 100;

/// The entries of Waitress's socket map that are not client connections:
/// the trigger (`server.py` 228, `trigger.py` 118-121) and the one listening
/// socket of `--listen` (`server.py` 234-236, `wasyncore.py` 334-337).
pub const WAITRESS_MAP_OVERHEAD: u32 = 2;

/// The Python servers beyond Gunicorn's own worker classes; each is a
/// pinned package set that `slowlab prepare` installs into the venv.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PyServer {
    /// `uvicorn slowlab_asgi:app`: one process, one event loop.
    Uvicorn,
    /// `gunicorn --worker-class uvicorn_worker.UvicornWorker --workers N
    /// slowlab_asgi:app`.
    GunicornUvicorn { workers: u32 },
    /// `gunicorn --worker-class gevent --workers N slowlab_app:application`.
    GunicornGevent { workers: u32 },
    /// `waitress-serve --threads N slowlab_app:application`.
    Waitress { threads: u32 },
    /// `granian --interface wsgi --workers N slowlab_app:application`.
    Granian { workers: u32 },
}

impl PyServer {
    /// The external program (package set) it needs.
    pub fn tool(self) -> Tool {
        match self {
            PyServer::Uvicorn => Tool::Uvicorn,
            PyServer::GunicornUvicorn { .. } => Tool::UvicornWorker,
            PyServer::GunicornGevent { .. } => Tool::Gevent,
            PyServer::Waitress { .. } => Tool::Waitress,
            PyServer::Granian { .. } => Tool::Granian,
        }
    }

    /// Whether it serves the ASGI twin (`slowlab_asgi:app`) rather than the
    /// WSGI app.
    pub fn asgi(self) -> bool {
        matches!(self, PyServer::Uvicorn | PyServer::GunicornUvicorn { .. })
    }

    /// How many responses it can write at once (see README's server table
    /// for the source of each): an event loop has no fixed limit; a gevent
    /// worker one greenlet per connection up to `worker_connections`;
    /// Waitress one per thread; Granian one per blocking thread.
    pub fn handlers(self) -> Option<u32> {
        match self {
            PyServer::Uvicorn | PyServer::GunicornUvicorn { .. } => None,
            PyServer::GunicornGevent { workers } => Some(workers * GUNICORN_WORKER_CONNECTIONS),
            PyServer::Waitress { threads } => Some(threads),
            PyServer::Granian { workers } => Some(workers * GRANIAN_BLOCKING_THREADS),
        }
    }

    /// How much of one response the server buffers between its handler
    /// and the socket, when that is enough to free the handler of a whole
    /// response: only Waitress (its output buffer, in memory up to
    /// `outbuf_overflow`, then a temp file). Uvicorn's transport, gevent's
    /// `sendall` and Granian's 4-chunk channel hold a few chunks at most.
    pub fn buffers(self) -> Option<u64> {
        match self {
            PyServer::Waitress { .. } => Some(WAITRESS_HIGH_WATERMARK),
            _ => None,
        }
    }

    /// The request direction: the bodies (smaller than the value) the
    /// server reads whole before any handler gets the request. Only
    /// Waitress (3.0.2): its main thread's asyncore loop reads every
    /// connection (`channel.py` 154-166 `handle_read` -> `received`), the
    /// parser appends the body to an `OverflowableBuffer(inbuf_overflow)`
    /// (`parser.py` 330-332, `receiver.py` 33-53: in memory up to 512 KiB,
    /// then a temp file, `adjustments.py` 217-220), and the channel hands
    /// the request to a thread (`server.add_task`) only once
    /// `request.completed`, body included (`channel.py` 224-236); a
    /// `Content-Length` of `max_request_body_size` (1 GiB) or more is a 413
    /// instead. Uvicorn starts the app's task at the head and feeds it the
    /// body through `receive()` (`h11_impl.py` 199-268, 522-533), Granian
    /// runs the WSGI callable on a blocking thread at the head and
    /// `wsgi.input` reads the body from that thread (`src/wsgi/callbacks.rs`
    /// `call_http`, `src/wsgi/types.rs` `WSGIBody`), and gevent's greenlet
    /// reads it as the app asks: each of those handlers is held for the
    /// whole upload.
    pub fn request_buffers(self) -> Option<u64> {
        match self {
            PyServer::Waitress { .. } => Some(WAITRESS_MAX_REQUEST_BODY),
            _ => None,
        }
    }

    /// Whether the server parses a request head before (and apart from)
    /// the handler its `handlers` counts, so that a slowloris client holds
    /// none of them: Waitress's channel (above; `parser.py` 94-170 keeps an
    /// unfinished head in `header_plus`), Uvicorn's h11 in the event loop
    /// (a task only at the `h11.Request` event), and Granian's hyper, which
    /// reads the head on its runtime before `spawn_blocking`. A gevent
    /// worker's greenlet reads the head itself.
    pub fn takes_head(self) -> bool {
        !matches!(self, PyServer::GunicornGevent { .. })
    }

    /// The client connections open at which the server accepts no more:
    /// Waitress's listener is readable only while its socket map (client
    /// channels, the listener and the trigger) holds fewer than
    /// `connection_limit` entries (`server.py` 270-289 `readable`: "no
    /// longer accepting new connections"), so from 98 open connections a
    /// new one waits in the listen backlog until one closes, however
    /// little the open ones hold of its threads. The rule gives the others
    /// no such limit.
    pub fn connection_room(self) -> Option<u32> {
        match self {
            PyServer::Waitress { .. } => Some(WAITRESS_CONNECTION_LIMIT - WAITRESS_MAP_OVERHEAD),
            _ => None,
        }
    }
}

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

/// An external program a stack may need, found by `slowlab prepare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Gunicorn,
    Nginx,
    Uvicorn,
    /// Gunicorn with the `uvicorn-worker` package.
    UvicornWorker,
    /// Gunicorn with gevent.
    Gevent,
    Waitress,
    Granian,
}

impl Tool {
    pub fn name(self) -> &'static str {
        match self {
            Tool::Gunicorn => "gunicorn",
            Tool::Nginx => "nginx",
            Tool::Uvicorn => "uvicorn",
            Tool::UvicornWorker => "uvicorn-worker",
            Tool::Gevent => "gevent",
            Tool::Waitress => "waitress",
            Tool::Granian => "granian",
        }
    }

    /// Why it cannot be used on this machine, if it cannot.
    pub fn unavailable(self, tools: &crate::prepare::Tools) -> Option<&str> {
        match self {
            Tool::Gunicorn => tools.gunicorn.as_ref().err(),
            Tool::Nginx => tools.nginx.as_ref().err(),
            Tool::Uvicorn | Tool::UvicornWorker | Tool::Gevent | Tool::Waitress | Tool::Granian => {
                tools.python.get(self).and_then(|r| r.as_ref().err())
            }
        }
        .map(String::as_str)
    }

    /// The error of using it when it is not available.
    pub fn error(self, why: &str) -> anyhow::Error {
        anyhow::anyhow!("{} is not available: {why}", self.name())
    }
}

/// How the load generator reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Route {
    Direct,
    NginxOff,
    NginxOn,
    PingoraOff,
    PingoraOn,
    /// The request direction: `proxy_request_buffering on|off` with
    /// response buffering on (NGINX's default), so that only the handling
    /// of request bodies differs between the two.
    NginxReqbufOn,
    NginxReqbufOff,
    PingoraReqbufOn,
    PingoraReqbufOff,
}

/// Which reverse proxy a route uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyKind {
    Nginx,
    Pingora,
}

impl ProxyKind {
    /// The external program it needs, if any.
    pub fn needs(self) -> Option<Tool> {
        match self {
            ProxyKind::Nginx => Some(Tool::Nginx),
            ProxyKind::Pingora => None,
        }
    }
}

impl Route {
    pub const ALL: [Route; 9] = [
        Route::Direct,
        Route::NginxOff,
        Route::NginxOn,
        Route::PingoraOff,
        Route::PingoraOn,
        Route::NginxReqbufOn,
        Route::NginxReqbufOff,
        Route::PingoraReqbufOn,
        Route::PingoraReqbufOff,
    ];

    /// The original's routes and their pingora twins: response buffering
    /// off and on (the `cross` preset).
    pub const RESPONSE: [Route; 5] = [
        Route::Direct,
        Route::NginxOff,
        Route::NginxOn,
        Route::PingoraOff,
        Route::PingoraOn,
    ];

    /// The request-direction routes: request buffering on and off behind
    /// each proxy.
    pub const REQUEST: [Route; 4] = [
        Route::NginxReqbufOn,
        Route::NginxReqbufOff,
        Route::PingoraReqbufOn,
        Route::PingoraReqbufOff,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Route::Direct => "direct",
            Route::NginxOff => "nginx-off",
            Route::NginxOn => "nginx-on",
            Route::PingoraOff => "pingora-off",
            Route::PingoraOn => "pingora-on",
            Route::NginxReqbufOn => "nginx-reqbuf-on",
            Route::NginxReqbufOff => "nginx-reqbuf-off",
            Route::PingoraReqbufOn => "pingora-reqbuf-on",
            Route::PingoraReqbufOff => "pingora-reqbuf-off",
        }
    }

    /// The proxy and its buffering, or `None` for direct access.
    pub fn proxy(self) -> Option<(ProxyKind, bool)> {
        match self {
            Route::Direct => None,
            Route::NginxOff => Some((ProxyKind::Nginx, false)),
            Route::NginxOn => Some((ProxyKind::Nginx, true)),
            Route::PingoraOff => Some((ProxyKind::Pingora, false)),
            Route::PingoraOn => Some((ProxyKind::Pingora, true)),
            Route::NginxReqbufOn | Route::NginxReqbufOff => Some((ProxyKind::Nginx, true)),
            Route::PingoraReqbufOn | Route::PingoraReqbufOff => Some((ProxyKind::Pingora, true)),
        }
    }

    /// How the route's proxy treats a request body, or `None` for direct
    /// access. The response routes keep their proxies' defaults, so their
    /// configurations stay those of the experiment: NGINX buffers request
    /// bodies (`proxy_request_buffering on`, `client_max_body_size 1m`),
    /// pingora streams them (`--request-buffering off`) with the same 1 MiB
    /// limit.
    pub fn request_body(self) -> Option<RequestBody> {
        let default = |buffering| RequestBody {
            buffering,
            max_body_bytes: RequestBody::NGINX_MAX_BODY,
            explicit: false,
        };
        let set = |buffering| RequestBody {
            buffering,
            max_body_bytes: RequestBody::REQUEST_MAX_BODY,
            explicit: true,
        };
        match self {
            Route::Direct => None,
            Route::NginxOff | Route::NginxOn => Some(default(true)),
            Route::PingoraOff | Route::PingoraOn => Some(default(false)),
            Route::NginxReqbufOn | Route::PingoraReqbufOn => Some(set(true)),
            Route::NginxReqbufOff | Route::PingoraReqbufOff => Some(set(false)),
        }
    }

    /// Whether the route's proxy takes a whole request body of
    /// `body_bytes` off the client before the app sees the request, so
    /// that a slow uploader does not hold a handler: request buffering on
    /// and a body within its maximum size (a longer one is answered 413 by
    /// the proxy and never reaches the app).
    pub fn absorbs_request(self, body_bytes: u64) -> bool {
        self.request_body()
            .is_some_and(|r| r.buffering && body_bytes <= r.max_body_bytes)
    }

    /// The route `--through NAME` means for slow clients in `direction`:
    /// in the request direction the response routes' names stand for the
    /// same proxy with request buffering on or off (`nginx-on` is
    /// `nginx-reqbuf-on`), so that "buffering" is the buffering that
    /// direction needs; every other name, and every name in the download
    /// direction, is itself.
    pub fn for_direction(self, direction: crate::results::Direction) -> Route {
        use crate::results::Direction;
        match (direction, self) {
            (Direction::Download, r) => r,
            (_, Route::NginxOn) => Route::NginxReqbufOn,
            (_, Route::NginxOff) => Route::NginxReqbufOff,
            (_, Route::PingoraOn) => Route::PingoraReqbufOn,
            (_, Route::PingoraOff) => Route::PingoraReqbufOff,
            (_, r) => r,
        }
    }

    /// Whether the route parks a whole `/large` response of `body_bytes`
    /// between the app and the client: only a buffering proxy whose memory
    /// buffers plus temp-file cap hold it (the experiment's 64 KiB + 16 KiB
    /// + 32 MiB do).
    pub fn absorbs(self, body_bytes: u64, proxy_capacity_bytes: u64) -> bool {
        matches!(self.proxy(), Some((_, true))) && proxy_capacity_bytes >= body_bytes
    }
}

/// A proxy's request-body handling on a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestBody {
    /// `proxy_request_buffering` / `--request-buffering`.
    pub buffering: bool,
    /// `client_max_body_size` / `--client-max-body-size`.
    pub max_body_bytes: u64,
    /// Whether the route sets the request directives itself (the
    /// request-direction routes) rather than leaving the proxy's defaults.
    pub explicit: bool,
}

impl RequestBody {
    /// NGINX's default `client_max_body_size`.
    pub const NGINX_MAX_BODY: u64 = 1 << 20;
    /// `client_max_body_size 32m` of the request-direction routes.
    pub const REQUEST_MAX_BODY: u64 = 32 << 20;
    /// `client_body_buffer_size 16k` of the request-direction routes
    /// (NGINX's default on x86-64, pingora's default).
    pub const BODY_BUFFER: u64 = 16 << 10;
}

macro_rules! name_impls {
    ($t:ty, $what:literal) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $t {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                crate::results::names::parse_known(s, $what)
            }
        }
    };
}

name_impls!(Server, "server");
name_impls!(Route, "route");

/// The experiment's NGINX buffer values, shared by NGINX and pingora.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ProxyBuffers {
    pub buffer_size: u64,
    pub buffers_count: u64,
    pub buffers_size: u64,
    pub busy_buffers_size: u64,
    pub max_temp_file_size: u64,
    pub temp_file_write_size: u64,
}

impl ProxyBuffers {
    /// `proxy_buffer_size 16k; proxy_buffers 4 16k; proxy_busy_buffers_size
    /// 32k; proxy_max_temp_file_size 32m; proxy_temp_file_write_size 64k`.
    pub const EXPERIMENT: ProxyBuffers = ProxyBuffers {
        buffer_size: 16 << 10,
        buffers_count: 4,
        buffers_size: 16 << 10,
        busy_buffers_size: 32 << 10,
        max_temp_file_size: 32 << 20,
        temp_file_write_size: 64 << 10,
    };

    /// How much one response can park in the proxy with buffering on.
    pub fn capacity(&self) -> u64 {
        self.buffer_size + self.buffers_count * self.buffers_size + self.max_temp_file_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in Server::ALL {
            assert_eq!(s.name().parse::<Server>(), Ok(s));
        }
        for r in Route::ALL {
            assert_eq!(r.name().parse::<Route>(), Ok(r));
        }
        assert!("nginx".parse::<Route>().unwrap_err().contains("nginx-on"));
    }

    #[test]
    fn recipes_give_the_experiment_handlers_and_tools() {
        let handlers: Vec<Option<u32>> = Server::ALL.iter().map(|s| s.handlers()).collect();
        assert_eq!(
            handlers,
            [
                Some(2),
                Some(4),
                Some(2),
                Some(4),
                None,
                None,
                None,
                Some(2000),
                Some(4),
                Some(512)
            ]
        );
        let gunicorn: Vec<Server> = Server::ALL
            .into_iter()
            .filter(|s| s.needs() == Some(Tool::Gunicorn))
            .collect();
        assert_eq!(gunicorn, [Server::GunicornSync2, Server::GunicornGthread4]);
        assert!(gunicorn.iter().all(|s| s.is_gunicorn()));
        let nginx: Vec<Route> = Route::ALL
            .into_iter()
            .filter(|r| r.proxy().and_then(|(k, _)| k.needs()) == Some(Tool::Nginx))
            .collect();
        assert_eq!(
            nginx,
            [
                Route::NginxOff,
                Route::NginxOn,
                Route::NginxReqbufOn,
                Route::NginxReqbufOff
            ]
        );
    }

    #[test]
    fn python_servers_need_their_own_tool_and_only_waitress_buffers() {
        let py: Vec<(Server, Option<Tool>)> = Server::ALL
            .into_iter()
            .filter(|s| matches!(s.recipe(), Recipe::Python(_)))
            .map(|s| (s, s.needs()))
            .collect();
        assert_eq!(
            py,
            [
                (Server::Uvicorn, Some(Tool::Uvicorn)),
                (Server::GunicornUvicorn2, Some(Tool::UvicornWorker)),
                (Server::GunicornGevent2, Some(Tool::Gevent)),
                (Server::Waitress4, Some(Tool::Waitress)),
                (Server::Granian, Some(Tool::Granian)),
            ]
        );
        let buffering: Vec<Server> = Server::ALL
            .into_iter()
            .filter(|s| s.absorbs(16 << 20))
            .collect();
        assert_eq!(buffering, [Server::Waitress4]);
        assert!(!Server::Waitress4.absorbs((16 << 20) + 1));
        for s in Server::ALL {
            assert_eq!(
                Server::EXPERIMENT.contains(&s),
                s.name().starts_with("rust-")
                    || s.name().starts_with("gunicorn-sync")
                    || s.name().starts_with("gunicorn-gthread")
            );
        }
    }

    #[test]
    fn a_missing_python_server_skips_only_its_own_conditions() {
        let python = crate::prepare::PyTools {
            uvicorn: Ok(crate::prepare::PyPackages {
                program: "/venv/bin/uvicorn".into(),
                versions: vec![("uvicorn".into(), "0.54.0".into())],
            }),
            granian: Err("no wheel for this platform".into()),
            ..Default::default()
        };
        let tools = crate::prepare::Tools {
            gunicorn: Err("no network".into()),
            nginx: Err("not installed".into()),
            python,
        };
        let missing = |s| policy::missing_tool(&tools, s, Route::Direct).map(|m| m.to_string());
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
        assert_eq!(Tool::Gunicorn.unavailable(&tools), Some("no network"));
        assert_eq!(tools.python.missing().len(), 4);
        assert_eq!(
            tools.python.versions().get("uvicorn").map(String::as_str),
            Some("0.54.0")
        );
    }

    #[test]
    fn only_buffering_on_absorbs_the_response() {
        let cap = ProxyBuffers::EXPERIMENT.capacity();
        assert_eq!(cap, (16 << 10) + (64 << 10) + (32 << 20));
        assert!(Route::NginxOn.absorbs(16 << 20, cap));
        assert!(Route::PingoraOn.absorbs(16 << 20, cap));
        assert!(!Route::NginxOff.absorbs(16 << 20, cap));
        assert!(!Route::Direct.absorbs(16 << 20, cap));
        assert!(!Route::NginxOn.absorbs(64 << 20, cap));
        assert!(Route::REQUEST.iter().all(|r| r.absorbs(16 << 20, cap)));
    }

    #[test]
    fn through_names_the_request_buffering_of_the_request_direction() {
        use crate::results::Direction;
        for r in Route::ALL {
            assert_eq!(r.for_direction(Direction::Download), r);
        }
        for d in [Direction::Upload, Direction::Headers] {
            let mapped: Vec<Route> = Route::RESPONSE.iter().map(|r| r.for_direction(d)).collect();
            assert_eq!(
                mapped,
                [
                    Route::Direct,
                    Route::NginxReqbufOff,
                    Route::NginxReqbufOn,
                    Route::PingoraReqbufOff,
                    Route::PingoraReqbufOn
                ]
            );
            for r in Route::REQUEST {
                assert_eq!(r.for_direction(d), r);
            }
        }
    }

    #[test]
    fn only_waitress_reads_a_whole_upload_before_its_threads() {
        let upload = 16 << 20;
        let whole: Vec<Server> = Server::ALL
            .into_iter()
            .filter(|s| s.absorbs_request(upload))
            .collect();
        assert_eq!(whole, [Server::Waitress4]);
        assert!(!Server::Waitress4.absorbs_request(WAITRESS_MAX_REQUEST_BODY));
        let heads: Vec<Server> = Server::ALL
            .into_iter()
            .filter(|s| s.absorbs_head())
            .collect();
        assert_eq!(
            heads,
            [
                Server::Uvicorn,
                Server::GunicornUvicorn2,
                Server::Waitress4,
                Server::Granian
            ]
        );
    }

    #[test]
    fn only_waitress_stops_accepting_at_its_connection_limit() {
        let limited: Vec<(Server, u32)> = Server::ALL
            .into_iter()
            .filter_map(|s| Some((s, s.connection_room()?)))
            .collect();
        assert_eq!(limited, [(Server::Waitress4, 98)]);
    }

    #[test]
    fn only_request_buffering_on_absorbs_an_upload_within_its_limit() {
        let upload = 16 << 20;
        let absorbing: Vec<Route> = Route::ALL
            .into_iter()
            .filter(|r| r.absorbs_request(upload))
            .collect();
        assert_eq!(absorbing, [Route::NginxReqbufOn, Route::PingoraReqbufOn]);
        // The response routes' NGINX buffers bodies up to its default 1m.
        assert!(Route::NginxOn.absorbs_request(1 << 20));
        assert!(!Route::PingoraOn.absorbs_request(1 << 20));
        assert!(!Route::NginxReqbufOn.absorbs_request((32 << 20) + 1));
        let sets: Vec<Route> = Route::ALL
            .into_iter()
            .filter(|r| r.request_body().is_some_and(|b| b.explicit))
            .collect();
        assert_eq!(sets, Route::REQUEST);
        for r in Route::REQUEST {
            assert!(!Route::RESPONSE.contains(&r));
        }
    }
}
