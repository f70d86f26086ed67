//! A pingora reverse proxy whose `--buffering on|off` follows NGINX's
//! `proxy_buffering` semantics.
//!
//! # Layout
//! - [`cli`]: `slowlab proxy` arguments and its `run` entry point.
//! - [`config`]: [`ProxyConfig`] and NGINX's rules for the buffer sizes.
//! - [`spool`]: memory buffers, then the temp file, then backpressure; pure
//!   accounting, unit-tested.
//! - [`spillfile`]: the unlinked `0600` temp file.
//! - [`reqbody`]: the request body, streamed or read whole first
//!   (`--request-buffering`), its temp file, 413 and the lingering close.
//! - [`upstream`]: connecting, the HTTP/1.0 request and the response head.
//! - [`pipe`]: the loop that moves one body from upstream to client and
//!   decides when the upstream is read.
//! - [`app`]: a connection's requests on pingora's HTTP/1 sessions:
//!   request, errors, head, stats.
//! - [`connlimit`]: NGINX's `worker_connections`, and the idle connections
//!   closed to make room.
//! - [`keepalive`]: a client connection between two requests (NGINX's
//!   `keepalive_*`).
//! - [`client`]: the client connection as pingora's `IO`: one write for a
//!   response that is whole at once, `TCP_NODELAY` only where it matters.
//! - [`stats`]: `--stats-log` and `--gauge-log`.
//! - [`server`]: [`spawn`] and [`ProxyHandle`]: runtime, accept loop, stop.

pub mod app;
pub mod cli;
pub mod client;
pub mod config;
pub mod connlimit;
pub mod keepalive;
pub mod pipe;
pub mod reqbody;
pub mod server;
pub mod spillfile;
pub mod spool;
pub mod stats;
pub mod upstream;

pub use cli::{ProxyArgs, run};
pub use config::{BufferConfig, Buffering, KeepAlive, ProxyConfig, RequestConfig};
pub use server::{ProxyHandle, spawn};
