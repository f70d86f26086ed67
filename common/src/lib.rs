//! The small vocabulary every slowlab crate shares.
//!
//! # Layout
//! - [`units`]: sizes (`16MiB`, NGINX-style `16k`), rates and durations as
//!   people type them on the command line.
//! - [`pattern`]: the documented `/large` body, so the server can write it and
//!   any client can verify every byte and its offset.
//! - [`stats`]: nearest-rank percentiles and medians, the aggregation the
//!   original experiment used.
//! - [`exit`]: the exit statuses every verb shares, and [`exit::BadInput`],
//!   [`exit::Denied`], [`exit::Interrupted`].
//! - [`bounds`]: the range of every numeric flag and its clap value parsers.
//! - [`loopback`]: the loopback-only rule for addresses.
//! - [`accept`]: `accept4`, the accept loops' await on a registered
//!   listener, and what they do when an accept fails (`serve` and `proxy`).
//! - [`tls`]: the lab's certificates, made fresh for each run.

pub mod accept;
pub mod bounds;
pub mod exit;
pub mod loopback;
pub mod pattern;
pub mod signals;
pub mod stats;
pub mod tls;
pub mod units;
