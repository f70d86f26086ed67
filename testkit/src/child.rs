//! A child process of a test: stdout and stderr drained on threads (stdout
//! line by line, so a test can wait for a ready line with a deadline),
//! optionally in a process group of its own, and killed (with its group)
//! and reaped when dropped, so a failing assertion leaves nothing behind.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

pub struct Child {
    child: std::process::Child,
    /// Whether the child leads a process group of its own.
    group: bool,
    lines: mpsc::Receiver<String>,
    stdout: Arc<Mutex<String>>,
    stdout_done: Option<thread::JoinHandle<()>>,
    stderr: Option<thread::JoinHandle<String>>,
}

/// What a finished child left.
#[derive(Debug)]
pub struct Outcome {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Child {
    /// The child's pid (a signal for it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Starts `cmd` with stdin closed and stdout/stderr captured.
    pub fn spawn(cmd: Command) -> Child {
        Self::start(cmd, false)
    }

    /// Starts `cmd` as the leader of a process group of its own: dropping
    /// the guard kills every process it started (a browser's, a shell's).
    pub fn spawn_group(mut cmd: Command) -> Child {
        cmd.process_group(0);
        Self::start(cmd, true)
    }

    fn start(mut cmd: Command, group: bool) -> Child {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {:?}: {e}", cmd.get_program()));
        let out = child.stdout.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        let stdout = Arc::new(Mutex::new(String::new()));
        let all = stdout.clone();
        let stdout_done = thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if let Ok(mut s) = all.lock() {
                    s.push_str(&line);
                    s.push('\n');
                }
                let _ = tx.send(line);
            }
        });
        let mut err = child.stderr.take().expect("piped");
        let stderr = thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        Child {
            child,
            group,
            lines,
            stdout,
            stdout_done: Some(stdout_done),
            stderr: Some(stderr),
        }
    }

    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The next line of stdout within `patience`, or `None`.
    pub fn line(&self, patience: Duration) -> Option<String> {
        self.lines.recv_timeout(patience).ok()
    }

    /// The address of the `listening on <addr> ...` ready line, or `None`
    /// when the child printed something else or nothing in time.
    pub fn ready(&self, patience: Duration) -> Option<std::net::SocketAddr> {
        let line = self.line(patience)?;
        line.strip_prefix("listening on ")?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    }

    /// Whether the child has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("wait")
    }

    /// Sends `signal` to the child.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, signal);
        }
    }

    /// Waits for the exit; `None` if it is still running after `limit`.
    pub fn wait_for(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(s) = self.exited() {
                return Some(s);
            }
            if Instant::now() > deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits for the exit within `patience`, or fails the test (and the
    /// drop kills the child).
    pub fn finish(mut self, patience: Duration) -> Outcome {
        let deadline = Instant::now() + patience;
        let status = loop {
            if let Some(s) = self.exited() {
                break s;
            }
            assert!(
                Instant::now() < deadline,
                "{} still running after {patience:?}",
                self.child.id()
            );
            thread::sleep(Duration::from_millis(20));
        };
        if let Some(h) = self.stdout_done.take() {
            let _ = h.join();
        }
        let stdout = self.stdout.lock().map(|s| s.clone()).unwrap_or_default();
        let stderr = self.stderr.take().expect("once").join().unwrap_or_default();
        Outcome {
            status,
            stdout,
            stderr,
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.group {
            // SAFETY: kill(2) on our own child's group.
            unsafe {
                libc::kill(-(self.child.id() as libc::pid_t), libc::SIGKILL);
            }
        }
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
