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
