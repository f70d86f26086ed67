//! The `slowlab` command: one subcommand per verb.
//!
//! `serve`, `proxy` and `load` belong to their crates; this module only
//! dispatches to them, so each crate owns its own command-line contract.
//! `lab::child::Child` goes the other way: the command line of a verb the
//! harness starts, written from the same clap structs the child parses;
//! the test below parses it back with this command.

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
    Report(report::ReportArgs),
    /// Merge results directories (shards of one matrix, other machines) into one.
    Merge(crate::merge::MergeArgs),
    /// Step the request rate to saturation against one stack.
    Sweep(crate::sweep::SweepArgs),
    /// The load generator of one rate sweep (run by `slowlab sweep`).
    SweepLoad(loadgen::sweep::SweepLoadArgs),
    /// Check how many slow downloads your server survives, direct and behind a proxy.
    Check(crate::check::CheckArgs),
}

/// Runs the chosen verb.
pub fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => server::run(args),
        Command::Proxy(args) => proxy::run(args),
        Command::Load(args) => loadgen::run(args),
        Command::Prepare(args) => crate::prepare::run(args),
        Command::Reproduce(args) => crate::reproduce::run(args),
        Command::Report(args) => report::run(args),
        Command::Merge(args) => crate::merge::run(args),
        Command::Sweep(args) => crate::sweep::run(args),
        Command::SweepLoad(args) => loadgen::sweep::run(args),
        Command::Check(args) => crate::check::run(args),
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use lab::child::Child;

    use super::*;

    fn parse(argv: &[&str]) -> Command {
        Cli::try_parse_from(std::iter::once("slowlab").chain(argv.iter().copied()))
            .expect("parses")
            .command
    }

    /// What the `slowlab` command line makes of a child's argv.
    fn reparse(child: &Child) -> Child {
        let argv = std::iter::once(OsString::from("slowlab")).chain(child.argv());
        match Cli::try_parse_from(argv).expect("argv parses").command {
            Command::Serve(a) => Child::Serve(a),
            Command::Proxy(a) => Child::Proxy(a),
            Command::Load(a) => Child::Load(a),
            Command::SweepLoad(a) => Child::SweepLoad(a),
            other => panic!("a child verb parsed as {other:?}"),
        }
    }

    #[test]
    fn every_child_verb_round_trips_through_the_slowlab_command_line() {
        let Command::Serve(serve) = parse(&["serve", "--model", "async"]) else {
            unreachable!()
        };
        let Command::Proxy(proxy) = parse(&[
            "proxy",
            "--upstream",
            "127.0.0.1:9",
            "--buffering",
            "on",
            "--temp-path",
            "/tmp",
        ]) else {
            unreachable!()
        };
        let Command::Load(load) = parse(&[
            "load",
            "--target",
            "http://127.0.0.1:9",
            "--label",
            "run_id=001",
            "--realtime",
        ]) else {
            unreachable!()
        };
        let Command::SweepLoad(sweep) = parse(&[
            "sweep-load",
            "--target",
            "http://127.0.0.1:9",
            "--rates",
            "50,100",
            "--out",
            "/tmp/x",
        ]) else {
            unreachable!()
        };
        for child in [
            Child::Serve(serve),
            Child::Proxy(proxy),
            Child::Load(load),
            Child::SweepLoad(sweep),
        ] {
            assert_eq!(reparse(&child), child);
        }
    }
}
