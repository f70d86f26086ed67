//! The slowlab harness: the `slowlab` command line, and the verbs that run
//! whole experiments (`prepare`, `reproduce`, `report`, `sweep`).
//!
//! # Layout
//! - [`cli`]: the `slowlab` command and its subcommands.

pub mod cli;
