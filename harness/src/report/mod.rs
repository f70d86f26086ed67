//! `slowlab report`: the HTML and Markdown report of a results directory.

use std::path::{Path, PathBuf};

use anyhow::Result;

/// `slowlab report` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// A results directory written by `slowlab reproduce` or `slowlab sweep`.
    pub dir: PathBuf,
    /// Open the HTML report in a browser afterwards.
    #[arg(long)]
    pub open: bool,
}

/// Runs `slowlab report`.
pub fn run(args: ReportArgs) -> Result<()> {
    write(&args.dir)
}

/// Writes the report of the results in `dir`.
pub fn write(dir: &Path) -> Result<()> {
    let _ = dir;
    anyhow::bail!("slowlab report is not implemented yet")
}
