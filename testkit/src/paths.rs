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

/// The README's text.
pub fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).expect("README.md")
}
