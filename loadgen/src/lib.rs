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
//! - [`latency`]: kernel settings that make a thread wake on time.
//! - [`fast`]: one `/fast` request after its connect has started.
//! - [`slow`]: one slow reader thread: `SO_RCVBUF`, paced blocking reads.
//! - [`streamreader`]: the `--reader streamreader` model: asyncio's
//!   `StreamReader` and its transport over the reader's socket.
//! - [`upload`]: slow uploaders and slowloris clients (the request
//!   direction); [`upload_args`]: their flags.
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

pub mod bind;
pub mod chunked;
pub mod cli;
pub mod config;
pub mod error;
pub mod fast;
pub mod fds;
pub mod hgrm;
pub mod latency;
pub mod net;
pub mod output;
pub mod pacing;
pub mod record;
pub mod response;
pub mod runner;
pub mod schedule;
pub mod slow;
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
