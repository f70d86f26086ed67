//! `slowlab prepare`: make every tool the catalogue pins available
//! (`lab::prepare` does the work) and say what was found.

use std::path::PathBuf;

use anyhow::{Result, bail};
use lab::prepare::{prepare, state_dir};

/// `slowlab prepare` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct PrepareArgs {
    /// Directory for the venv and unpacked packages (default: $SLOWLAB_HOME,
    /// else .slowlab in the binary's checkout, else ~/.local/share/slowlab).
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
}

/// Runs `slowlab prepare`.
pub fn run(args: PrepareArgs) -> Result<()> {
    let dir = args.state_dir.unwrap_or_else(state_dir);
    println!("state directory: {}", dir.display());
    let tools = prepare(&dir);
    for line in tools.describe() {
        println!("{line}");
    }
    if tools.gunicorn.is_err() || tools.nginx().is_err() {
        bail!("not every component is available; the conditions that need it will be skipped");
    }
    if !tools.python.missing().is_empty() {
        eprintln!(
            "slowlab: not every Python server is available; the conditions that need one will be skipped"
        );
    }
    Ok(())
}
