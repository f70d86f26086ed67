//! The Rust replica of the experiment's WSGI app (`/fast`, `/large`) on hyper.
//!
//! # Layout
//! - [`cli`]: `slowlab serve` arguments and its `run` entry point.

pub mod cli;

pub use cli::{ServeArgs, run};
