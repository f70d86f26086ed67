//! Child processes of the harness: each in its own process group, killed
//! when the harness dies (parent-death signal), joined to its cgroup before
//! it executes anything, and stopped from a guard's `Drop`.

use std::ffi::{CString, OsString};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::cgroup::Cgroup;

/// What to start.
#[derive(Debug, Clone)]
pub struct Spec {
    /// A short name for messages: `app`, `proxy`, `loadgen`.
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    /// The network namespace it runs in (`/run/netns/NAME`, entered with
    /// `setns(2)` between fork and exec); none: the harness's own.
    pub netns: Option<PathBuf>,
    /// stdout and stderr go to these files, each through a pipe the
    /// harness drains ([`crate::capture`]), kept up to its limit.
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

/// `argv` as [`Spec::args`]; an argument that is not UTF-8 (a path) is
/// refused rather than altered.
pub fn utf8_args(argv: Vec<OsString>) -> Result<Vec<String>> {
    argv.into_iter()
        .map(|a| {
            a.into_string()
                .map_err(|a| anyhow::anyhow!("argument {a:?} is not UTF-8"))
        })
        .collect()
}

/// A running child. Dropping it stops the child's whole process group.
#[derive(Debug)]
pub struct Guard {
    pub name: String,
    child: Option<Child>,
    pub pid: u32,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
    /// Its network namespace, where readiness probes connect from.
    pub netns: Option<PathBuf>,
}

/// Starts `spec`, inside `cgroup` when one is given.
///
/// Must be called from a thread that outlives the child: Linux sends the
/// parent-death signal when the *thread* that forked exits.
pub fn spawn(spec: &Spec, cgroup: Option<&Cgroup>) -> Result<Guard> {
    // Each stream through a pipe the harness drains into its file, kept
    // up to `capture::LIMIT` (a child that prints without end neither
    // blocks nor fills the disk).
    let stdout = crate::capture::to_file(&spec.stdout)?;
    let stderr = crate::capture::to_file(&spec.stderr)?;
    let procs: Vec<CString> = cgroup
        .map(|c| c.procs_files())
        .unwrap_or_default()
        .iter()
        .map(|p| CString::new(p.as_os_str().as_bytes()))
        .collect::<Result<_, _>>()
        .context("cgroup path with a NUL byte")?;
    // Opened before the fork (close-on-exec, so the child keeps no copy).
    let netns = match &spec.netns {
        Some(path) => {
            Some(File::open(path).with_context(|| format!("opening {}", path.display()))?)
        }
        None => None,
    };
    let netns_fd = netns.as_ref().map(std::os::fd::AsRawFd::as_raw_fd);
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    // SAFETY: the closure runs between fork and exec and calls only
    // async-signal-safe functions (setpgid, prctl, getppid, open, write,
    // close, _exit, setns) on memory prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            // Own process group: a terminal's Ctrl-C reaches only the
            // harness, which then stops its children in order.
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The harness may have died before prctl took effect.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            // The namespace first, so that no socket the program opens is
            // ever the host's; its cgroup placement by pid is unaffected.
            if let Some(fd) = netns_fd {
                if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for path in &procs {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // Writing 0 moves the writing process itself (v1 and v2).
                let ok = libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
                libc::close(fd);
                if !ok {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .with_context(|| format!("starting {} ({})", spec.name, spec.program.display()))?;
    Ok(Guard {
        name: spec.name.clone(),
        pid: child.id(),
        child: Some(child),
        stdout: spec.stdout.clone(),
        stderr: spec.stderr.clone(),
        netns: spec.netns.clone(),
    })
}

impl Guard {
    /// The exit status if the child has ended.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child.as_mut()?.try_wait().ok().flatten()
    }

    /// Waits for the child to end on its own, up to `timeout`.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.try_wait() {
                return Some(s);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the child to end on its own, up to `limit` from `since`,
    /// and gives up early when the user asked to stop (Ctrl-C, SIGTERM).
    /// `None` means it is still running; the caller decides why.
    pub fn wait_or_interrupt(&mut self, since: Instant, limit: Duration) -> Option<ExitStatus> {
        loop {
            if let Some(s) = self.try_wait() {
                return Some(s);
            }
            if crate::signals::requested() || since.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends SIGTERM to the process group, waits up to `grace`, then
    /// SIGKILLs the group. Idempotent.
    pub fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let pgid = self.pid as libc::pid_t;
        if let Ok(Some(status)) = child.try_wait() {
            kill_group(pgid, libc::SIGKILL);
            return Some(status);
        }
        kill_group(pgid, libc::SIGTERM);
        let deadline = Instant::now() + grace;
        let status = loop {
            if let Ok(Some(s)) = child.try_wait() {
                break Some(s);
            }
            if Instant::now() >= deadline {
                kill_group(pgid, libc::SIGKILL);
                break child.wait().ok();
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        // Workers of a master that exited on SIGTERM are in the same group.
        kill_group(pgid, libc::SIGKILL);
        status
    }

    /// The last non-empty line of the child's stderr, else of its stdout
    /// (a server may print what it does there), for error messages.
    pub fn last_error_line(&self) -> String {
        last_line(&self.stderr)
            .or_else(|| last_line(&self.stdout).map(|l| format!("stdout: {l}")))
            .unwrap_or_else(|| "no output".to_string())
    }

    /// Waits for the first stdout line `listening on <addr>` and returns the
    /// address.
    pub fn wait_ready_line(&mut self, timeout: Duration) -> Result<SocketAddr> {
        self.poll(
            timeout,
            Duration::from_millis(20),
            "was ready",
            |g| match first_line(&g.stdout) {
                Some(line) => parse_ready_line(&line)
                    .with_context(|| format!("{}: unexpected first line `{line}`", g.name))
                    .map(Poll::Done),
                None => Ok(Poll::Pending("printed no ready line".into())),
            },
        )
    }

    /// Polls `GET path` on `addr` until it answers 200.
    pub fn wait_http_ok(&mut self, addr: SocketAddr, path: &str, timeout: Duration) -> Result<()> {
        self.wait_http_status(addr, path, 200, timeout)
    }

    /// Polls `GET path` on `addr` until it answers `want`.
    pub fn wait_http_status(
        &mut self,
        addr: SocketAddr,
        path: &str,
        want: u16,
        timeout: Duration,
    ) -> Result<()> {
        self.wait_status_with(addr, path, want, timeout, http_status)
    }

    /// Polls `status(addr, path)` (in the child's namespace) until it
    /// answers `want`: [`Guard::wait_http_status`] with another client,
    /// such as one that speaks TLS and HTTP/2.
    pub fn wait_status_with(
        &mut self,
        addr: SocketAddr,
        path: &str,
        want: u16,
        timeout: Duration,
        status: impl Fn(SocketAddr, &str) -> Result<u16> + Sync,
    ) -> Result<()> {
        self.poll(timeout, Duration::from_millis(50), "answered", |g| {
            let netns = g.netns.clone();
            let status = crate::netns::within(netns.as_deref(), || status(addr, path));
            Ok(match status {
                Ok(code) if code == want => Poll::Done(()),
                Ok(code) => Poll::Pending(format!(
                    "did not answer GET {path} on {addr} (status {code})"
                )),
                Err(e) => Poll::Pending(format!("did not answer GET {path} on {addr} ({e:#})")),
            })
        })
    }

    /// Calls `check` every `step` until it is done, the child exits (an
    /// error: it exited before it `what`), or `timeout` passes (an error
    /// with the last pending reason). Both errors quote the child's last
    /// stderr line.
    fn poll<T>(
        &mut self,
        timeout: Duration,
        step: Duration,
        what: &str,
        mut check: impl FnMut(&Guard) -> Result<Poll<T>>,
    ) -> Result<T> {
        let deadline = Instant::now() + timeout;
        loop {
            let pending = match check(self)? {
                Poll::Done(v) => return Ok(v),
                Poll::Pending(why) => why,
            };
            if let Some(status) = self.try_wait() {
                bail!(
                    "{} exited ({status}) before it {what}: {}",
                    self.name,
                    self.last_error_line()
                );
            }
            // Ctrl-C or SIGTERM: the caller stops everything.
            if crate::signals::requested() {
                bail!("interrupted while {} had not yet {what}", self.name);
            }
            if Instant::now() >= deadline {
                bail!(
                    "{} {pending} within {timeout:?}: {}",
                    self.name,
                    self.last_error_line()
                );
            }
            std::thread::sleep(step);
        }
    }
}

/// One look of [`Guard::poll`].
enum Poll<T> {
    Done(T),
    /// Not yet, and why (for the time-out message).
    Pending(String),
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(2));
    }
}

fn kill_group(pgid: libc::pid_t, signal: libc::c_int) {
    if pgid > 1 {
        // SAFETY: kill(2) has no memory-safety preconditions; a negative pid
        // addresses the process group we created for this child.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
}

/// `listening on 127.0.0.1:8000 (model sync, 2 workers)` → the address.
pub fn parse_ready_line(line: &str) -> Option<SocketAddr> {
    line.trim()
        .strip_prefix("listening on ")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn first_line(path: &Path) -> Option<String> {
    let f = File::open(path).ok()?;
    let mut line = String::new();
    BufReader::new(f).read_line(&mut line).ok()?;
    // Only a complete line counts; the child may be mid-write.
    line.ends_with('\n').then(|| line.trim_end().to_string())
}

fn last_line(path: &Path) -> Option<String> {
    let mut text = String::new();
    File::open(path).ok()?.read_to_string(&mut text).ok()?;
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().chars().take(300).collect())
}

/// One `GET` with `Connection: close`; returns the status code.
pub fn http_status(addr: SocketAddr, path: &str) -> Result<u16> {
    use std::io::Write;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut head = [0u8; 64];
    let n = s.read(&mut head)?;
    loadgen::probe::status_line_code(&head[..n]).context("no status line")
}

/// A loopback port that was free a moment ago, for programs that cannot
/// bind port 0 and report it (Gunicorn, NGINX). The caller must expect the
/// rare race where another program takes it first.
pub fn free_port() -> Result<u16> {
    free_port_at(&crate::netns::Place::host())
}

/// A port of `place`'s address (in its namespace) that was free a moment
/// ago.
pub fn free_port_at(place: &crate::netns::Place) -> Result<u16> {
    crate::netns::within(place.netns.as_deref(), || {
        let l = std::net::TcpListener::bind((place.ip, 0)).context("finding a free port")?;
        Ok(l.local_addr()?.port())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_lines() {
        assert_eq!(
            parse_ready_line("listening on 127.0.0.1:8000 (model sync, 2 workers)\n"),
            Some("127.0.0.1:8000".parse().unwrap())
        );
        assert_eq!(
            parse_ready_line("listening on [::1]:9"),
            Some("[::1]:9".parse().unwrap())
        );
        assert_eq!(parse_ready_line("ready"), None);
    }

    #[test]
    fn arguments_must_be_utf8() {
        use std::os::unix::ffi::OsStringExt;
        let ok = utf8_args(vec!["--out".into(), "/tmp/a b".into()]).unwrap();
        assert_eq!(ok, ["--out", "/tmp/a b"]);
        let bad = OsString::from_vec(vec![b'/', 0xff]);
        assert!(utf8_args(vec![bad]).is_err());
    }

    #[test]
    fn a_dropped_guard_leaves_no_process() {
        let dir = tempfile::tempdir().unwrap();
        let spec = Spec {
            name: "sleeper".into(),
            program: "sh".into(),
            // A child of the child, as Gunicorn's workers are.
            args: vec!["-c".into(), "sleep 30 & sleep 30".into()],
            env: vec![],
            cwd: None,
            netns: None,
            stdout: dir.path().join("out"),
            stderr: dir.path().join("err"),
        };
        let guard = spawn(&spec, None).unwrap();
        let pgid = guard.pid;
        std::thread::sleep(Duration::from_millis(100));
        drop(guard);
        // An orphaned grandchild is reaped by init a moment after it dies;
        // until then it is a zombie that still belongs to the group.
        let deadline = Instant::now() + Duration::from_secs(2);
        let alive = loop {
            let live = crate::procfs::process_group_members(pgid)
                .into_iter()
                .any(|pid| !crate::procfs::is_zombie(pid));
            if !live || Instant::now() > deadline {
                break live;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(!alive, "process group {pgid} survived");
    }
}
