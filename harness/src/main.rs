//! The `slowlab` binary: parse the command line, start logging, run one verb.

use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;
use harness::cli::{Cli, dispatch};
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            if matches!(
                err.kind(),
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
            ) || matches!(
                err.kind(),
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = err.print();
                return ExitCode::from(if err.use_stderr() { 2 } else { 0 });
            }
            // Bad flags get one line, not clap's usage block: scripts log it
            // and people read it at a glance.
            let text = err.to_string();
            // Keep what clap says before its usage block, on one line, so
            // that a missing flag is named ("... not provided: --upstream").
            let line = text
                .lines()
                .take_while(|l| !l.trim().is_empty() && !l.starts_with("Usage:"))
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ");
            let line = line.strip_prefix("error: ").unwrap_or(&line);
            eprintln!("slowlab: {line}");
            return ExitCode::from(2);
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    match dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // `{:#}` joins the context chain on one line.
            eprintln!("slowlab: {err:#}");
            // the book, "Exit status": 2 bad input, 3 denied, 130/143
            // interrupted, 1 any other failure.
            ExitCode::from(common::exit::code_of(err.chain()))
        }
    }
}
