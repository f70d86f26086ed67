//! A pingora reverse proxy whose `--buffering on|off` follows NGINX's
//! `proxy_buffering` semantics.
//!
//! # Layout
//! - [`cli`]: `slowlab proxy` arguments and its `run` entry point.

pub mod cli;

pub use cli::{ProxyArgs, run};
