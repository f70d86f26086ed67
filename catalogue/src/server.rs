//! The servers of the lab: what each one is, how it is started, how many
//! responses it can write at once, and what it buffers. One entry per
//! server: a [`Server`] variant and its arms in this file (every match is
//! exhaustive, so the compiler lists what a new one needs), plus, for a
//! Python server, its [`PyServer`] and its [`Tool`] pin.

use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::str::FromStr;

use crate::names::{Name, Named, parse_known};
use crate::tool::Tool;

/// How the Rust replica handles connections (`slowlab serve --model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Model {
    /// N workers, each serving one connection at a time from accept to close.
    Sync,
    /// One acceptor and a pool of N handlers (like Gunicorn gthread).
    Threads,
    /// A tokio multi-thread runtime, one task per connection.
    Async,
}

impl Model {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Model::Sync => "sync",
            Model::Threads => "threads",
            Model::Async => "async",
        }
    }
}

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

    /// The original's server this one replicates (the Rust replicas of
    /// Gunicorn's worker classes); none for the original's own and for
    /// servers the original did not run.
    pub fn replicates(self) -> Option<Server> {
        match self {
            Server::RustSync2 => Some(Server::GunicornSync2),
            Server::RustThreads4 => Some(Server::GunicornGthread4),
            Server::GunicornSync2
            | Server::GunicornGthread4
            | Server::RustAsync
            | Server::Uvicorn
            | Server::GunicornUvicorn2
            | Server::GunicornGevent2
            | Server::Waitress4
            | Server::Granian => None,
        }
    }

    /// How it is started (the lab's launcher follows it).
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
                model: Model::Sync,
                workers: Some(2),
            },
            Server::RustThreads4 => Recipe::Replica {
                model: Model::Threads,
                workers: Some(4),
            },
            Server::RustAsync => Recipe::Replica {
                model: Model::Async,
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
                model: Model::Async,
                ..
            } => None,
            Recipe::Replica { workers, .. } => workers.map(|w| w as u32),
            Recipe::Python(py) => py.handlers(),
        }
    }

    /// Whether the server itself takes a whole response of `body_bytes` off
    /// its handler, so that a slow reader does not hold the handler:
    /// Waitress queues up to `outbuf_high_watermark` (16 MiB) of output
    /// per connection before its task thread waits (the book's server table).
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

    /// What the server model is, in words, for reports; the versions are
    /// the pins of [`Tool`].
    pub fn describe(self) -> String {
        let g = Tool::Gunicorn.version();
        match self {
            Server::GunicornSync2 => format!("Gunicorn {g}, sync worker class, 2 worker processes"),
            Server::GunicornGthread4 => format!("Gunicorn {g}, gthread, 1 process x 4 threads"),
            Server::RustSync2 => "slowlab serve --model sync --workers 2 (hyper)".into(),
            Server::RustThreads4 => "slowlab serve --model threads --workers 4 (hyper)".into(),
            Server::RustAsync => "slowlab serve --model async (hyper on tokio)".into(),
            Server::Uvicorn => format!(
                "Uvicorn {}, ASGI app, one process, one asyncio event loop",
                Tool::Uvicorn.version()
            ),
            Server::GunicornUvicorn2 => format!(
                "Gunicorn {g} with 2 Uvicorn workers (uvicorn-worker {}), ASGI app",
                Tool::UvicornWorker.version()
            ),
            Server::GunicornGevent2 => format!(
                "Gunicorn {g}, gevent {} worker class, 2 processes x {GUNICORN_WORKER_CONNECTIONS} connections",
                Tool::Gevent.version()
            ),
            Server::Waitress4 => format!(
                "Waitress {}, 4 threads, output buffered up to 16 MiB",
                Tool::Waitress.version()
            ),
            Server::Granian => format!(
                "Granian {} (Rust, hyper), WSGI, 1 worker x {GRANIAN_BLOCKING_THREADS} threads",
                Tool::Granian.version()
            ),
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
        model: Model,
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

/// The WSGI app's module and callable, as the Python servers import it
/// from the directory the lab writes it into.
pub const WSGI_APP: &str = "slowlab_app:application";
/// Its ASGI twin's (for Uvicorn).
pub const ASGI_APP: &str = "slowlab_asgi:app";

impl PyServer {
    /// Its argv after the program: listening on `addr`, serving the app
    /// from `dir` (where the lab wrote it).
    pub fn argv(self, addr: SocketAddr, dir: &Path) -> Vec<String> {
        let py = self;
        let app = if py.asgi() { ASGI_APP } else { WSGI_APP };
        let app_dir = dir;
        let dir = dir.to_string_lossy().to_string();
        let (host, port) = (addr.ip().to_string(), addr.port().to_string());
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        match py {
            PyServer::Uvicorn => strings(&[
                "--host",
                &host,
                "--port",
                &port,
                "--app-dir",
                &dir,
                "--log-level",
                "warning",
                "--no-access-log",
                app,
            ]),
            PyServer::GunicornUvicorn { workers } => {
                let class = "uvicorn_worker.UvicornWorker";
                gunicorn_argv(addr, app_dir, class, workers, None, app)
            }
            PyServer::GunicornGevent { workers } => {
                gunicorn_argv(addr, app_dir, "gevent", workers, None, app)
            }
            PyServer::Waitress { threads } => strings(&[
                &format!("--listen={addr}"),
                &format!("--threads={threads}"),
                app,
            ]),
            PyServer::Granian { workers } => strings(&[
                "--interface",
                "wsgi",
                "--host",
                &host,
                "--port",
                &port,
                "--workers",
                &workers.to_string(),
                "--working-dir",
                &dir,
                "--log-level",
                "warning",
                app,
            ]),
        }
    }

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

    /// How many responses it can write at once (see the book's server table
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

/// Gunicorn's argv: `app` on `addr` with the given workers, from `dir`.
pub fn gunicorn_argv(
    addr: SocketAddr,
    dir: &Path,
    worker_class: &str,
    workers: u32,
    threads: Option<u32>,
    app: &str,
) -> Vec<String> {
    let mut args = vec![
        // A post_fork hook that gives each worker a parent-death signal.
        "--config".to_string(),
        dir.join("slowlab_gunicorn_conf.py")
            .to_string_lossy()
            .into(),
        "--bind".into(),
        addr.to_string(),
        "--chdir".into(),
        dir.to_string_lossy().into(),
        "--log-level".into(),
        "warning".into(),
        "--error-logfile".into(),
        "-".into(),
        "--worker-class".into(),
        worker_class.into(),
        "--workers".into(),
        workers.to_string(),
    ];
    if let Some(t) = threads {
        args.extend(["--threads".into(), t.to_string()]);
    }
    args.push(app.into());
    args
}

/// A server as read from a results file.
pub type ServerName = Named<Server>;

impl Name for Server {
    const ALL: &'static [Server] = &Server::ALL;
    fn name(self) -> &'static str {
        Server::name(self)
    }
}

impl fmt::Display for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Server {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_known(s, "server")
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
        for s in Server::ALL {
            if let Some(original) = s.replicates() {
                assert!(original.name().starts_with("gunicorn-"), "{s}");
                assert_eq!(original.handlers(), s.handlers(), "{s}");
            }
        }
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
}
