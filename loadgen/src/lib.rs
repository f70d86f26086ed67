//! The experiment's load generator: slow readers of `/large` and an open-loop
//! `/fast` client that records every request.
//!
//! # Layout
//! - [`cli`]: `slowlab load` arguments and its `run` entry point.

pub mod cli;

pub use cli::{LoadArgs, run};
