//! The hook for `slowlab sweep` results. A sweep steps the request rate up
//! until the server saturates and writes `sweep.csv` into its directory.
//! Its columns are not fixed yet, so this only notices the file and says
//! that its charts are not drawn; the sweep's author fills [`section`] in.

use std::path::Path;

use super::data::Results;
use super::doc::Section;

/// The file a sweep writes.
pub const SWEEP_CSV: &str = "sweep.csv";

/// The sweep section, when `dir` holds sweep results; `None` otherwise.
///
/// To add the sweep charts: read `sweep.csv` here (as [`super::data`] reads
/// the other files), draw each chart with [`super::charts::svg`], and push
/// `Block::Figure`s with their embedded data, as the other sections do.
/// [`super::data::Results::load`] already accepts a directory that holds
/// only `sweep.csv`; it then lists the reproduction's files as missing,
/// which a sweep directory may want to leave out.
pub fn section(r: &Results) -> Option<Section> {
    let path = r.dir.join(SWEEP_CSV);
    if !path.is_file() {
        return None;
    }
    let mut s = Section::new("sweep", "Rate sweep");
    s.note(&format!(
        "This directory holds sweep results ({}), but the report does not draw sweeps yet. The columns found: {}.",
        SWEEP_CSV,
        columns(&path).unwrap_or_else(|| "(unreadable header)".into())
    ));
    Some(s)
}

/// The header line of a CSV file.
fn columns(path: &Path) -> Option<String> {
    let mut r = csv::Reader::from_path(path).ok()?;
    let h = r.headers().ok()?;
    Some(
        h.iter()
            .map(|c| format!("`{c}`"))
            .collect::<Vec<_>>()
            .join(", "),
    )
}
