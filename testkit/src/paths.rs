//! The workspace's paths as tests see them.

use std::path::PathBuf;

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("testkit sits in the workspace")
        .to_path_buf()
}

/// The project's state directory (venv, unpacked packages), as
/// `scripts/test` prepares it: `$SLOWLAB_HOME`, else `.slowlab` in the
/// checkout.
pub fn state_dir() -> PathBuf {
    std::env::var_os("SLOWLAB_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".slowlab"))
}

/// The book's reference of the results files: every column of every file,
/// between `<!-- csv:start -->` and `<!-- csv:end -->`.
pub const RESULTS_FILES_DOC: &str = "book/src/reference/results-files.md";

/// The documented columns: the text of [`RESULTS_FILES_DOC`] between its
/// markers.
pub fn results_files_doc() -> String {
    let text = std::fs::read_to_string(root().join(RESULTS_FILES_DOC)).expect(RESULTS_FILES_DOC);
    text.split("<!-- csv:start -->")
        .nth(1)
        .and_then(|s| s.split("<!-- csv:end -->").next())
        .expect("the results files' reference has its csv:start/csv:end markers")
        .to_string()
}
