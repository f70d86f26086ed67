//! `slowlab report`: the HTML and Markdown report of a results directory.

use std::path::Path;

use anyhow::Result;

/// Writes the report of the results in `dir`.
pub fn write(dir: &Path) -> Result<()> {
    let _ = dir;
    Ok(())
}
