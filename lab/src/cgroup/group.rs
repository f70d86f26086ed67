//! Creating one component's group below our base and writing its caps.

use std::fs;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use super::reap::{kill_procs, remove_dir_retrying};
use super::{Caps, Cgroup, Counters, Dirs, Mode, Stats, read_u64, write_file};

impl Dirs {
    /// The directories of the group `name` below the bases of `mode`.
    fn below(mode: &Mode, name: &str) -> Result<Dirs> {
        Ok(match mode {
            Mode::V2 { base } => Dirs::V2(base.join(name)),
            Mode::V1 {
                cpu,
                cpuacct,
                memory,
            } => Dirs::V1 {
                cpu: cpu.join(name),
                cpuacct: (cpuacct != cpu).then(|| cpuacct.join(name)),
                memory: memory.join(name),
            },
            Mode::None { reason } => bail!("no cgroups: {reason}"),
        })
    }
}

impl Cgroup {
    /// Creates the group `name` below our base and applies `caps` if given.
    /// Groups without caps still account CPU time and memory.
    pub fn create(mode: &Mode, name: &str, caps: Option<Caps>) -> Result<Cgroup> {
        let dirs = Dirs::below(mode, name)?;
        for dir in dirs.all() {
            if dir.exists() {
                // A leftover of an earlier run with the same name.
                kill_procs(dir);
                remove_dir_retrying(dir);
            }
            fs::create_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        // From here on, dropping the group removes what was created.
        let group = Cgroup {
            name: name.to_string(),
            counters: Counters { dirs },
            caps,
        };
        if let Some(caps) = caps {
            write_caps(&group.counters.dirs, caps)?;
        }
        Ok(group)
    }

    /// Lets the group's threads use SCHED_FIFO for `runtime_us` of every
    /// second (cgroup v1 with real-time group scheduling, where a new group
    /// gets no real-time time at all). The load generator's scheduler thread
    /// asks for SCHED_FIFO so that no other process delays a request's
    /// start; it falls back to normal scheduling when refused, and records
    /// which it got. Best effort: returns whether the grant took.
    pub fn grant_realtime(&self, runtime_us: u64) -> bool {
        let Dirs::V1 { cpu: group, .. } = &self.counters.dirs else {
            return false;
        };
        let file = "cpu.rt_runtime_us";
        if !group.join(file).exists() {
            return false;
        }
        // The parent (our base) must hold at least what its children get.
        if let Some(base) = group.parent() {
            let have = read_u64(&base.join(file)).unwrap_or(0);
            if have < runtime_us && write_file(&base.join(file), &runtime_us.to_string()).is_err() {
                return false;
            }
        }
        write_file(&group.join(file), &runtime_us.to_string()).is_ok()
    }

    /// A view for reading counters from another thread.
    pub fn counters(&self) -> Counters {
        self.counters.clone()
    }

    /// The `cgroup.procs` files a child writes `0` into before exec, one per
    /// hierarchy (cpu, cpuacct when it is apart, memory).
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.counters
            .dirs
            .all()
            .into_iter()
            .map(|d| d.join("cgroup.procs"))
            .collect()
    }

    /// Processes in the group.
    pub fn pids(&self) -> Vec<u32> {
        self.counters.pids()
    }

    /// Reads the counters now.
    pub fn stats(&self) -> Stats {
        self.counters.stats()
    }
}

/// Writes the CPU quota and the memory limit into the group's files.
fn write_caps(dirs: &Dirs, caps: Caps) -> Result<()> {
    let memory = caps.memory_bytes.to_string();
    match dirs {
        Dirs::V2(dir) => {
            write_file(
                &dir.join("cpu.max"),
                &format!("{} {}", caps.quota_us(), caps.period_us),
            )?;
            write_file(&dir.join("memory.max"), &memory)?;
            // The original set MemorySwapMax=0; not every kernel has swap
            // accounting, so a missing file is not an error.
            let swap = dir.join("memory.swap.max");
            if swap.exists() {
                write_file(&swap, "0")?;
            }
        }
        Dirs::V1 {
            cpu, memory: mem, ..
        } => {
            write_file(&cpu.join("cpu.cfs_period_us"), &caps.period_us.to_string())?;
            write_file(&cpu.join("cpu.cfs_quota_us"), &caps.quota_us().to_string())?;
            write_file(&mem.join("memory.limit_in_bytes"), &memory)?;
            // Memory plus swap at the same limit: no swap, as in v2.
            let memsw = mem.join("memory.memsw.limit_in_bytes");
            if memsw.exists() {
                write_file(&memsw, &memory)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Creates empty control files, as the kernel would.
    fn touch(dir: &Path, files: &[&str]) {
        fs::create_dir_all(dir).unwrap();
        for f in files {
            fs::write(dir.join(f), "").unwrap();
        }
    }

    fn read(path: PathBuf) -> String {
        fs::read_to_string(path).unwrap()
    }

    #[test]
    fn v2_caps_go_into_cpu_max_and_memory_max() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("app");
        touch(&dir, &["cpu.max", "memory.max", "memory.swap.max"]);
        write_caps(&Dirs::V2(dir.clone()), Caps::new(0.25, 128)).unwrap();
        assert_eq!(read(dir.join("cpu.max")), "2500 10000");
        assert_eq!(read(dir.join("memory.max")), "134217728");
        assert_eq!(read(dir.join("memory.swap.max")), "0");
    }

    #[test]
    fn v1_caps_go_into_the_cpu_and_memory_hierarchies() {
        let root = tempfile::tempdir().unwrap();
        let cpu = root.path().join("cpu/app");
        let memory = root.path().join("memory/app");
        touch(&cpu, &["cpu.cfs_period_us", "cpu.cfs_quota_us"]);
        // No memsw file: a kernel without swap accounting.
        touch(&memory, &["memory.limit_in_bytes"]);
        let dirs = Dirs::V1 {
            cpu: cpu.clone(),
            cpuacct: Some(root.path().join("cpuacct/app")),
            memory: memory.clone(),
        };
        write_caps(&dirs, Caps::new(0.20, 96)).unwrap();
        assert_eq!(read(cpu.join("cpu.cfs_period_us")), "10000");
        assert_eq!(read(cpu.join("cpu.cfs_quota_us")), "2000");
        assert_eq!(read(memory.join("memory.limit_in_bytes")), "100663296");
        assert!(!memory.join("memory.memsw.limit_in_bytes").exists());
    }

    #[test]
    fn a_missing_cap_file_is_an_error() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("app");
        touch(&dir, &["cpu.max"]);
        let err = write_caps(&Dirs::V2(dir), Caps::new(0.25, 128)).unwrap_err();
        assert!(format!("{err:#}").contains("memory.max"), "{err:#}");
    }

    #[test]
    fn group_directories_follow_the_mode() {
        let v1 = Mode::V1 {
            cpu: "/c/cpu/slowlab-1".into(),
            cpuacct: "/c/cpu/slowlab-1".into(),
            memory: "/c/memory/slowlab-1".into(),
        };
        assert_eq!(
            Dirs::below(&v1, "app").unwrap(),
            Dirs::V1 {
                cpu: "/c/cpu/slowlab-1/app".into(),
                cpuacct: None,
                memory: "/c/memory/slowlab-1/app".into(),
            }
        );
        let none = Mode::None {
            reason: "read-only".into(),
        };
        let err = Dirs::below(&none, "app").unwrap_err();
        assert_eq!(err.to_string(), "no cgroups: read-only");
    }
}
