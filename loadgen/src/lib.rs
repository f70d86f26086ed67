//! The experiment's load generator: slow readers of `/large` and an
//! open-loop `/fast` client that records every request.
//!
//! `slowlab load` runs it from the command line; [`run_load`] runs it
//! in-process and returns a [`Report`] with every record.
//!
//! # Layout
//! - [`cli`]: `slowlab load` arguments and its `run` entry point.
//! - [`config`]: the validated [`LoadConfig`], the `/fast` schedule, labels.
//! - [`target`]: the `--target` URL and the loopback-only policy.
//! - [`runner`]: one run: setup, t0, slow readers, scheduler, sampling.
//! - [`schedule`]: the scheduler thread that starts `/fast` requests on time.
//! - [`settle`]: `--fast-settle`, when the schedule begins: once the slow
//!   readers have their first bytes.
//! - [`latency`]: kernel settings that make a thread wake on time.
//! - [`fast`]: one `/fast` request after its connect has started.
//! - [`engine`]: the event loops every slow client runs on.
//! - [`slow`]: one slow reader: `SO_RCVBUF`, paced reads.
//! - [`edge`]: TLS (`https://` targets) and HTTP/2 (`--http2`): the flags
//!   and the checked [`edge::Edge`] every client gets; [`edgeread`]: the
//!   slow readers over TLS or HTTP/2 (a flow-control window refilled at
//!   the paced rate, many streams on one connection), on a runtime of
//!   their own; [`h2conn`]: one HTTP/2 client connection.
//! - [`streamreader`]: the `--reader streamreader` model: asyncio's
//!   `StreamReader` and its transport over the reader's socket.
//! - [`upload`], [`slowloris`]: slow uploaders and slowloris clients (the
//!   request direction); [`upload_args`]: their flags.
//! - [`sweep`]: `slowlab sweep-load`, the load generator of a rate sweep.
//! - [`verify`]: checking the `/large` body against the pattern or length.
//! - [`pacing`]: absolute-deadline pacing arithmetic.
//! - [`net`]: sockets (socket2) and the request bytes; [`bind`]:
//!   `--fast-bind` and `--slow-bind`, the local addresses they are bound to.
//! - [`fds`]: the descriptors a run needs and the open-files limit.
//! - [`response`], [`chunked`]: a minimal HTTP/1.1 response reader.
//! - [`record`]: the rows; [`output`]: the CSV files; [`hgrm`]: the latency
//!   histogram; [`summary`]: the summary; [`error`]: failure kinds;
//!   [`sys`]: CPU time and host facts.
//!
//! # Design
//!
//! `slowlab load`: slow readers (socket2, `SO_RCVBUF` before connect, paced
//! reads) and an open-loop `/fast` client that never waits for earlier answers.
//! Writes one CSV row per request and per download.
//! - `schedule.rs`: a dedicated thread (timer slack 1 ns; SCHED_FIFO with
//!   `--realtime`) sleeps until each scheduled instant, creates the socket,
//!   records the actual start, starts the connect and hands the rest to tokio.
//!   Nothing else runs on it, so a request starts on time whatever the others
//!   do.
//! - `engine/`: every slow client (reader, uploader, slowloris) is a state
//!   machine (`engine::Machine`) on one of a few event-loop threads (one per
//!   2,048 clients, at most one per core): epoll with `EPOLLONESHOT`
//!   interest armed only when a client must wait for its socket, one timer
//!   heap of deadlines, waits to the nanosecond (`epoll_pwait2`, timer
//!   slack 1 ns), one read buffer per loop. A thread per client paid a
//!   context switch and a sleep per read; what is left is the kernel's TCP
//!   work (the book, "The load generator and the reader models").
//! - `slow.rs`: a slow reader, paced against absolute deadlines `start +
//!   consumed / rate`. The reader model (`--reader`, `config::ReaderModel`)
//!   decides only how bytes leave the socket: `strict` reads there (one
//!   `recv` per deadline); `streamreader.rs` is asyncio's `StreamReader`
//!   and its transport: a user-space buffer filled by `recv(256 KiB)`
//!   whenever reading is not paused (the socket in the selector or the
//!   application's deadline, in whole milliseconds rounded up, whichever is
//!   first), paused above 2 x limit and resumed at limit, as CPython's
//!   `streams.py`/`selector_events.py` (cited in its doc), with the
//!   interpreter's time from readiness to `recv` as an input (`--loop-lag`,
//!   a busy wait; the reference client measures CPython's). Each reader's
//!   `Gauge` lets the runner's 100 ms sampler read the buffer and the
//!   socket's kernel receive queue (`FIONREAD`, under a lock the reader
//!   clears before it closes the socket).
//! - `upload.rs`, `slowloris.rs`: the request direction's clients; an
//!   upload is ok when every byte went and the status is one of
//!   `--upload-ok`, the lab's JSON answer held to the body when it is that.
//!   `--end-with-fast` cuts downloads and uploads still running when the
//!   last `/fast` request has ended (error `cut`).
//! - `bind.rs`: `--fast-bind` and `--slow-bind` (`BindArgs`, flattened into
//!   `load` and `sweep-load`, checked once into `Binds`), and `bind::bind`,
//!   the one place a load's sockets get a local address: the `/fast`
//!   scheduler's and sweep sessions' sockets from `Binds::fast`, slow client
//!   `i` (reader, uploader, slowloris) from `Binds::slow_client(i)`.
//! - `response.rs`: the one HTTP/1.1 response reader of the crate, a sans-IO
//!   state machine fed with each read's bytes (head by httparse; framing by
//!   Content-Length, conflicting ones an error, `chunked.rs`, or EOF; no body
//!   for HEAD, 1xx, 204, 304; keep-alive), with thin drivers `read_blocking`
//!   (slow readers) and `read_async` (`/fast` client, sweep sessions).
//! - `error.rs`: the one `ErrorKind` of `load` and `sweep-load` and the one
//!   mapping from `io::Error`; its names in `requests.csv` and `summary.json`
//!   and its `err_*` columns in `steps.csv` are pinned by a test.
//! - `sweep/`: `slowlab sweep-load`, the load generator of a rate sweep. Its
//!   slow clients (`--slow`, and `load`'s `UploadArgs`: `--slow-upload`,
//!   `--slow-headers`) are `load`'s own clients (`slow.rs`, `upload.rs`, `slowloris.rs`, on one `Engine`), kept
//!   running for the whole sweep by one generic slot pool (`sweep/pool.rs`,
//!   `Pool` over `PoolClient`: a slot starts the next client when one ends;
//!   on stop a transfer in progress is abandoned, a slowloris client is told
//!   to end and keeps its row). Their rows go through `load`'s writer
//!   (`output::write_request_direction`) and their `--json` summary objects
//!   are `load`'s (`summary::UploadSummary::of`, `HeadersSummary::of`;
//!   `sweep/summary.rs`).
//! - `fds.rs`: the descriptors a run may hold at once (`LoadConfig` and
//!   `SweepConfig::connections_at_most`), checked against `RLIMIT_NOFILE`
//!   before anything is sent (soft limit raised, or refusal as bad input);
//!   `EMFILE`/`ENFILE` during a run is `ErrorKind::FdExhausted`.
//! - `config.rs`: `SlowReaderArgs`, the slow-reader flags (`--slow-rate`,
//!   `--rcvbuf`, `--read-chunk`, `--large-path`, `--reader`, `--loop-lag`) and
//!   their one check, flattened into both `LoadArgs` and `SweepLoadArgs`. The
//!   check yields a `SlowReading` (rate, `SO_RCVBUF`, read size, model, loop
//!   lag), the one form in which `LoadConfig` and `SweepConfig` hold it and
//!   every reader (`slow::SlowContext`) is given it.

pub mod bind;
pub mod chunked;
pub mod cli;
pub mod config;
pub mod edge;
pub mod edgeread;
pub mod engine;
pub mod error;
pub mod fast;
pub mod fds;
pub mod h2conn;
pub mod hgrm;
pub mod latency;
pub mod net;
pub mod output;
pub mod pacing;
pub mod probe;
pub mod record;
pub mod response;
pub mod runner;
pub mod schedule;
pub mod settle;
pub mod slow;
pub mod slowloris;
pub mod streamreader;
pub mod summary;
pub mod sweep;
pub mod sys;
pub mod target;
pub mod upload;
pub mod upload_args;
pub mod verify;

pub use cli::{LoadArgs, run};
pub use config::{LoadConfig, ReaderModel, VerifyMode};
pub use error::{ErrorKind, Failure};
pub use record::{FastRecord, LargeRecord, ProgressRow, SlowHeaderRecord, UploadRecord, Verified};
pub use runner::{Report, run_load};
pub use summary::Summary;
