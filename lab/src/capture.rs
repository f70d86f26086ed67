//! A child's stdout or stderr, kept in a file up to [`LIMIT`]: the child
//! writes into a pipe that a thread of the harness drains for as long as
//! the pipe is open, so a child that prints without end is neither blocked
//! nor allowed to fill the disk (a server that printed 2.8 GB in 12 s was
//! seen). What is past the limit is counted, not kept, and a last line in
//! the file says how much was discarded.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::thread;

use anyhow::{Context, Result};

/// The most bytes kept of one stream of one child.
pub const LIMIT: u64 = 16 << 20;

/// The line the capture ends with when it discarded `dropped` bytes.
pub fn truncation_line(dropped: u64) -> String {
    format!(
        "\n[slowlab: this output was cut at {} MiB; {dropped} more bytes were discarded]\n",
        LIMIT >> 20
    )
}

/// A pipe whose write end is the child's `Stdio`, drained into `path` by
/// a detached thread that ends when every writer has closed it.
pub fn to_file(path: &Path) -> Result<Stdio> {
    let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let (reader, writer) = pipe().context("creating a pipe for a child's output")?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    thread::Builder::new()
        .name(format!("capture {name}"))
        .spawn(move || drain(reader, file, LIMIT))
        .context("starting a capture thread")?;
    Ok(Stdio::from(writer))
}

/// A pipe, both ends close-on-exec (the child gets its end as a standard
/// stream, which `Command` duplicates without the flag).
fn pipe() -> io::Result<(File, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned by nobody else.
    unsafe {
        Ok((
            File::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        ))
    }
}

/// Copies `from` into `to` up to `limit` bytes, counts the rest, and says
/// so at the end. Returns the bytes discarded.
pub fn drain(mut from: impl Read, mut to: impl Write, limit: u64) -> u64 {
    let mut buf = vec![0u8; 64 << 10];
    let (mut kept, mut dropped) = (0u64, 0u64);
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let room = usize::try_from(limit.saturating_sub(kept)).unwrap_or(usize::MAX);
        let keep = n.min(room);
        // A file that cannot be written (a full disk) loses the output,
        // never the child: the pipe is drained all the same.
        if keep > 0 && to.write_all(&buf[..keep]).is_ok() {
            kept += keep as u64;
        }
        dropped += (n - keep) as u64;
    }
    if dropped > 0 {
        let _ = to.write_all(truncation_line(dropped).as_bytes());
    }
    let _ = to.flush();
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_past_the_limit_is_counted_and_said() {
        let input = vec![b'x'; 1000];
        let mut out = Vec::new();
        assert_eq!(drain(&input[..], &mut out, 300), 700);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with(&"x".repeat(300)));
        assert!(text.ends_with(&truncation_line(700)), "{text}");
        let mut whole = Vec::new();
        assert_eq!(drain(&input[..], &mut whole, 1000), 0);
        assert_eq!(whole, input, "nothing added under the limit");
    }

    #[test]
    fn a_child_that_prints_without_end_is_kept_to_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let stdio = to_file(&path).unwrap();
        // 40 MiB of output, more than the limit.
        let status = std::process::Command::new("sh")
            .args(["-c", "head -c 41943040 /dev/zero"])
            .stdout(stdio)
            .status()
            .unwrap();
        assert!(status.success());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if len > LIMIT {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{len} bytes kept");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let len = std::fs::metadata(&path).unwrap().len();
        let line = truncation_line((40 << 20) - LIMIT);
        assert_eq!(len, LIMIT + line.len() as u64);
    }
}
