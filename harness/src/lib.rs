//! The `slowlab` verbs that run whole experiments, over the lab's layers:
//! each opens one [`session::Session`] (tools, the reaper, scratch, the
//! environment record, `INCOMPLETE`, signals, the report at the end) and
//! runs stacks through `lab::stack::run`.
//!
//! # Layout
//! - [`cli`]: the `slowlab` command and its subcommands.
//! - [`session`]: the one session of a verb.
//! - [`prepare`]: `slowlab prepare`.
//! - [`reproduce`]: the condition matrix, its runs and its files.
//! - [`sweep`]: rate sweeps to saturation, with and without slow clients.
//! - [`check`]: `slowlab check`, the capacity of a user's server against
//!   slow clients.
//! - [`merge`]: results directories merged into one.
//!
//! The crates below, from the bottom: `common` (units, bounds, exit
//! statuses), `catalogue` (what every server, proxy, route and preset is),
//! `schema` (every results file's row struct), `analysis` (figures from rows),
//! `report` (the HTML/Markdown report), `server`, `proxy`, `loadgen` (the
//! children) and `lab` (processes, cgroups, namespaces, sampling, stacks).

pub mod check;
pub mod cli;
pub mod generate;
pub mod merge;
pub mod prepare;
pub mod reproduce;
pub mod session;
pub mod sweep;
