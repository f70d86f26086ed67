//! A `slowlab` child whose output is drained on threads and which is
//! killed and reaped when dropped, so a failing assertion leaves nothing
//! behind (its own children die with it: the harness gives them a
//! parent-death signal).

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

pub struct Child {
    child: std::process::Child,
    stdout: Option<thread::JoinHandle<String>>,
    stderr: Option<thread::JoinHandle<String>>,
}

/// What a finished child left.
pub struct Outcome {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Child {
    /// Starts `cmd` with stdin closed and stdout/stderr captured.
    pub fn spawn(mut cmd: Command) -> Child {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start slowlab");
        let drain = |mut r: Box<dyn Read + Send>| {
            thread::spawn(move || {
                let mut s = String::new();
                let _ = r.read_to_string(&mut s);
                s
            })
        };
        let stdout = drain(Box::new(child.stdout.take().expect("piped")));
        let stderr = drain(Box::new(child.stderr.take().expect("piped")));
        Child {
            child,
            stdout: Some(stdout),
            stderr: Some(stderr),
        }
    }

    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the exit within `patience`, or fails the test (and the
    /// drop kills the child).
    pub fn finish(mut self, patience: Duration) -> Outcome {
        let deadline = Instant::now() + patience;
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                break s;
            }
            assert!(
                Instant::now() < deadline,
                "slowlab still running after {patience:?}"
            );
            thread::sleep(Duration::from_millis(20));
        };
        let take = |h: &mut Option<thread::JoinHandle<String>>| {
            h.take().expect("once").join().expect("drain")
        };
        Outcome {
            status,
            stdout: take(&mut self.stdout),
            stderr: take(&mut self.stderr),
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
