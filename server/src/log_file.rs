//! An append-only CSV log shared by every worker of one server: the send
//! log and the receive log are both one of these.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context as _;

/// One open log file with its header.
#[derive(Debug)]
pub struct LogFile {
    path: PathBuf,
    /// What the log is, for error messages ("send log").
    what: &'static str,
    header_line: String,
    /// The lock keeps rows of concurrent workers from interleaving; the file
    /// is also opened in append mode and every row is one `write`, so rows of
    /// other processes appending to the same file stay whole too.
    file: Mutex<File>,
}

impl LogFile {
    /// Opens (creating if needed) `path` and writes the header if the file is
    /// empty, so a bad path fails at start-up rather than at the first row.
    pub fn open(path: &Path, what: &'static str, header_line: String) -> anyhow::Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| {
                // A log that cannot be written is refused as `--out` is.
                common::exit::BadInput::new(format!("opening {what} {}: {e}", path.display()))
            })?;
        let log = LogFile {
            path: path.to_path_buf(),
            what,
            header_line,
            file: Mutex::new(file),
        };
        log.append("")?;
        Ok(log)
    }

    /// Appends `rows` (possibly empty), preceded by the header when the file
    /// is empty, as one write.
    pub fn append(&self, rows: &str) -> anyhow::Result<()> {
        self.write(rows)
            .with_context(|| format!("writing {} {}", self.what, self.path.display()))
    }

    fn write(&self, rows: &str) -> std::io::Result<()> {
        // A poisoned file handle is still a file handle.
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        // Checked at every append, as the WSGI app does, so a file truncated
        // by hand while the server runs gets its header back.
        let mut text = String::new();
        if file.metadata()?.len() == 0 {
            text.push_str(&self.header_line);
        }
        text.push_str(rows);
        if text.is_empty() {
            return Ok(());
        }
        file.write_all(text.as_bytes())
    }
}
