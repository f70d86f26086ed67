//! `--open`: hand the report to the desktop's browser, if there is one.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The openers tried in order: the freedesktop one, then Debian's.
const OPENERS: [&str; 2] = ["xdg-open", "sensible-browser"];

/// How long an opener may take to say it failed. Openers usually hand the
/// file to a browser and exit at once; one that is still running after this
/// has most likely started the browser in the foreground, which is success.
const PATIENCE: Duration = Duration::from_secs(5);

/// Opens `path` with the first opener that works; prints the path when
/// none does (a machine without a desktop), which is not an error.
pub fn browser(path: &Path) {
    for opener in OPENERS {
        let Ok(mut child) = Command::new(opener)
            .arg(path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        else {
            continue;
        };
        let started = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(status)) if status.success() => return,
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if started.elapsed() > PATIENCE => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }
    println!(
        "no browser could be opened; open {} yourself",
        path.display()
    );
}
