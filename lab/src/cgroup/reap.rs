//! Emptying and removing groups: a component's when it is dropped, our base
//! at the end, and those of an earlier harness that was killed before it
//! could remove its own.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{Cgroup, Dirs, Mode, read_pids, write_file};

impl Cgroup {
    /// Kills every process in the group and waits (up to 2 s) until it is
    /// empty.
    pub fn kill_all(&self) {
        let dirs = &self.counters.dirs;
        if let Dirs::V2(dir) = dirs {
            let kill_file = dir.join("cgroup.kill");
            if kill_file.exists() {
                let _ = write_file(&kill_file, "1");
            }
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let left = kill_procs(dirs.procs_dir());
            if left == 0 || Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        self.kill_all();
        for dir in self.counters.dirs.all() {
            remove_dir_retrying(dir);
        }
    }
}

/// Our base in each hierarchy of `mode`.
fn bases(mode: &Mode) -> Vec<&PathBuf> {
    match mode {
        Mode::V2 { base } => vec![base],
        Mode::V1 {
            cpu,
            cpuacct,
            memory,
        } => vec![cpu, cpuacct, memory],
        Mode::None { .. } => vec![],
    }
}

/// Removes our base groups (after every component group is gone).
pub fn remove_base(mode: &Mode) {
    for dir in bases(mode) {
        // cpu and cpuacct may be the same co-mounted directory.
        if dir.exists() {
            remove_dir_retrying(dir);
        }
    }
}

/// Removes groups that earlier harness processes left behind when they were
/// killed with SIGKILL: `slowlab-<pid>` siblings of our base whose pid is gone.
/// Their processes are killed first, so no Gunicorn or NGINX survives a
/// harness crash past the next start.
pub fn reap_stale(mode: &Mode) -> usize {
    let mut reaped = 0;
    for base in bases(mode) {
        let Some(parent) = base.parent() else {
            continue;
        };
        let Ok(entries) = fs::read_dir(parent) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(pid) = name
                .strip_prefix("slowlab-")
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if !crate::procfs::gone(pid) {
                continue;
            }
            remove_dir_retrying(&e.path());
            reaped += 1;
        }
    }
    reaped
}

/// Sends SIGKILL to every process listed in `dir/cgroup.procs`; returns how
/// many there were.
pub(super) fn kill_procs(dir: &Path) -> usize {
    let pids = read_pids(dir);
    for &pid in &pids {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
    }
    pids.len()
}

/// Removes `dir` and every group below it, killing what they hold.
pub(super) fn remove_dir_retrying(dir: &Path) {
    // rmdir on a cgroup fails with EBUSY while exiting processes are still
    // accounted to it, which lasts a few milliseconds after SIGKILL.
    let deadline = Instant::now() + Duration::from_secs(2);
    while dir.exists() {
        if let Ok(entries) = fs::read_dir(dir) {
            for e in entries.flatten() {
                if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                    kill_procs(&e.path());
                    remove_dir_retrying(&e.path());
                }
            }
        }
        if fs::remove_dir(dir).is_ok() || Instant::now() > deadline {
            break;
        }
        kill_procs(dir);
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No process has this pid: it is above the kernel's largest `pid_max`.
    const DEAD: u32 = 4_000_000_000;

    #[test]
    fn only_groups_of_dead_harnesses_are_reaped() {
        let root = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let mode = Mode::V1 {
            cpu: root.path().join("cpu").join(format!("slowlab-{me}")),
            cpuacct: root.path().join("cpuacct").join(format!("slowlab-{me}")),
            memory: root.path().join("memory/box").join(format!("slowlab-{me}")),
        };
        for base in bases(&mode) {
            fs::create_dir_all(base).unwrap();
        }
        let stale = root.path().join(format!("cpu/slowlab-{DEAD}"));
        let stale_memory = root.path().join(format!("memory/box/slowlab-{DEAD}/app"));
        // pid 1 is alive, and a directory not named by us is not ours.
        let alive = root.path().join("cpu/slowlab-1");
        let foreign = root.path().join("cpu/other-tool");
        for dir in [
            stale.join("proxy"),
            stale_memory.clone(),
            alive.clone(),
            foreign.clone(),
        ] {
            fs::create_dir_all(dir).unwrap();
        }
        assert_eq!(reap_stale(&mode), 2);
        assert!(!stale.exists());
        assert!(!stale_memory.parent().unwrap().exists());
        assert!(alive.exists() && foreign.exists());
        for base in bases(&mode) {
            assert!(base.exists(), "our own base {} is kept", base.display());
        }
        remove_base(&mode);
        for base in bases(&mode) {
            assert!(!base.exists());
        }
    }

    #[test]
    fn reaping_without_cgroups_does_nothing() {
        let mode = Mode::None {
            reason: "none here".into(),
        };
        assert_eq!(reap_stale(&mode), 0);
        remove_base(&mode);
    }
}
