//! The `slowlab` command: one subcommand per verb.
//!
//! `serve`, `proxy` and `load` belong to their crates; this module only
//! dispatches to them, so each crate owns its own command-line contract.

use clap::{Parser, Subcommand};

/// slowlab: a lab for slow-client backpressure.
#[derive(Debug, Parser)]
#[command(name = "slowlab", version, about = "slowlab: a lab for slow-client backpressure", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the Rust replica of the experiment's app.
    Serve(server::ServeArgs),
    /// Run the pingora reverse proxy with NGINX-like buffering.
    Proxy(proxy::ProxyArgs),
    /// Run slow readers and the open-loop /fast client against a target.
    Load(loadgen::LoadArgs),
    /// Install or find Gunicorn 23.0.0 and NGINX 1.22 for the real conditions.
    Prepare(crate::prepare::PrepareArgs),
    /// Run the experiment's condition matrix, capped and sampled.
    Reproduce(crate::reproduce::ReproduceArgs),
    /// Write the HTML and Markdown report of a results directory.
    Report(crate::report::ReportArgs),
    /// Merge results directories (shards of one matrix, other machines) into one.
    Merge(crate::merge::MergeArgs),
    /// Step the request rate to saturation against one stack.
    Sweep(crate::sweep::SweepArgs),
    /// The load generator of one rate sweep (run by `slowlab sweep`).
    SweepLoad(loadgen::sweep::SweepLoadArgs),
}

/// Runs the chosen verb.
pub fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => server::run(args),
        Command::Proxy(args) => proxy::run(args),
        Command::Load(args) => loadgen::run(args),
        Command::Prepare(args) => crate::prepare::run(args),
        Command::Reproduce(args) => crate::reproduce::run(args),
        Command::Report(args) => crate::report::run(args),
        Command::Merge(args) => crate::merge::run(args),
        Command::Sweep(args) => crate::sweep::run(args),
        Command::SweepLoad(args) => loadgen::sweep::run(args),
    }
}
