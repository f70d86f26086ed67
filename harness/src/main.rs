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
            if matches!(err.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
                || matches!(
                    err.kind(),
                    ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                )
            {
                let _ = err.print();
                return ExitCode::from(if err.use_stderr() { 2 } else { 0 });
            }
            // Bad flags get one line, not clap's usage block: scripts log it
            // and people read it at a glance.
            let text = err.to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("slowlab: {first}");
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
            ExitCode::FAILURE
        }
    }
}
