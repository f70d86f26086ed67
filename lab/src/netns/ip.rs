//! The two ways the harness acts on a namespace: `ip` (iproute2) commands,
//! whose failures become one-line errors, and [`within`], which runs a
//! closure on a short-lived thread that has entered the namespace with
//! `setns(2)` (a network namespace is a per-thread attribute, so the rest
//! of the harness stays where it is).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// Runs `ip ARGS`; a failure is one line naming the command and the first
/// line `ip` printed.
pub fn ip(args: &[&str]) -> Result<()> {
    run("ip", args)
}

/// Runs `program ARGS` (`ip` or `tc`); a failure is one line naming the
/// command and the first line it printed.
pub fn run(program: &str, args: &[&str]) -> Result<()> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running `{program} {}`", args.join(" ")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        bail!(
            "`{program} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            line.trim()
        );
    }
    Ok(())
}

/// Runs `program -n NETNS -batch -` (`ip` or `tc`) with `lines` on its
/// stdin: one process for many commands (a per-client link's hundreds).
/// A failure is one line naming the first command `program` refused.
pub fn batch(program: &str, netns: &str, lines: &[String]) -> Result<()> {
    use std::io::Write;
    let mut child = Command::new(program)
        .args(["-n", netns, "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running `{program} -n {netns} -batch -`"))?;
    let mut text = lines.join("\n");
    text.push('\n');
    let written = child
        .stdin
        .take()
        .map(|mut stdin| stdin.write_all(text.as_bytes()));
    let out = child
        .wait_with_output()
        .with_context(|| format!("waiting for `{program} -batch`"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        // tc and ip name the failing line as "Command failed -:N".
        let line = err
            .lines()
            .find(|l| !l.trim().is_empty() && !l.starts_with("Warning"))
            .unwrap_or("");
        bail!(
            "`{program} -n {netns} -batch` failed ({}): {}",
            out.status,
            line.trim()
        );
    }
    if let Some(Err(e)) = written {
        return Err(e).with_context(|| format!("writing to `{program} -batch`"));
    }
    Ok(())
}

/// `ip ARGS`'s stdout, or none when it fails.
pub fn ip_output(args: &[&str]) -> Option<String> {
    output("ip", args)
}

/// `program ARGS`'s stdout, or none when it fails.
pub fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Enters the network namespace behind `path` (`/run/netns/NAME`) on the
/// calling thread.
pub fn enter(path: &Path) -> Result<()> {
    let f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    // SAFETY: setns(2) on a descriptor we own; it changes only this
    // thread's network namespace.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("entering {}", path.display()));
    }
    Ok(())
}

/// Runs `f` on a thread inside the network namespace at `path`, or on the
/// calling thread when `path` is none (the host's namespace).
pub fn within<T: Send>(path: Option<&Path>, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    let Some(path) = path else {
        return f();
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            enter(path)?;
            f()
        })
        .join()
        .unwrap_or_else(|_| bail!("a thread inside {} panicked", path.display()))
    })
}
