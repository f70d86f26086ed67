//! Per-component cgroups: find a writable hierarchy (v2 with the cpu and
//! memory controllers, else v1 `cpu`/`cpuacct`/`memory`), create one group
//! per component with the original's caps, read its counters, and kill and
//! remove it afterwards.
//!
//! When neither works, callers run uncapped and say so; [`Mode::None`] keeps
//! the reason so that it ends up in `environment.json`.
//!
//! # Layout
//! - this file: the public types ([`Caps`], [`Mode`], [`Cgroup`],
//!   [`Counters`], [`Stats`]) and the file helpers the others share.
//! - `detect`: which interface this machine offers, and our base group in it.
//! - `group`: creating a component's group and writing its caps.
//! - `counters`: CPU usage, throttling and memory of a group.
//! - `reap`: killing what is in a group, removing it, and reaping the groups
//!   of a harness that died.

mod counters;
mod detect;
mod group;
mod reap;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub use detect::{CgroupMount, detect};
pub use reap::{reap_stale, remove_base};

/// A CPU and memory cap, as `systemd-run -p CPUQuota -p MemoryMax` set them
/// in the original.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Caps {
    /// Cores, e.g. 0.25.
    pub cpu_cores: f64,
    /// The quota period; the original used 10 ms.
    pub period_us: u64,
    pub memory_bytes: u64,
}

impl Caps {
    pub const PERIOD_US: u64 = 10_000;

    pub fn new(cpu_cores: f64, memory_mib: u64) -> Self {
        Caps {
            cpu_cores,
            period_us: Self::PERIOD_US,
            memory_bytes: memory_mib << 20,
        }
    }

    /// The CFS quota per period: 0.25 core over 10 000 µs is 2 500 µs.
    pub fn quota_us(&self) -> u64 {
        (self.cpu_cores * self.period_us as f64).round() as u64
    }
}

/// Which cgroup interface this machine offers us.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Unified hierarchy; `base` is where our groups go.
    V2 { base: PathBuf },
    /// Legacy hierarchies; each path is where our groups go in that one
    /// (`cpu` and `cpuacct` are the same when the two are co-mounted).
    V1 {
        cpu: PathBuf,
        cpuacct: PathBuf,
        memory: PathBuf,
    },
    /// No usable cgroups; the reason says why.
    None { reason: String },
}

impl Mode {
    pub fn name(&self) -> &'static str {
        match self {
            Mode::V2 { .. } => "v2",
            Mode::V1 { .. } => "v1",
            Mode::None { .. } => "none",
        }
    }
}

/// Counters of one group at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    pub cpu_usage_ns: Option<u64>,
    pub throttled_ns: Option<u64>,
    pub nr_throttled: Option<u64>,
    pub memory_bytes: Option<u64>,
    pub memory_peak_bytes: Option<u64>,
}

/// One component's group in every hierarchy we use. Dropping it kills what
/// is left inside and removes it.
#[derive(Debug)]
pub struct Cgroup {
    pub name: String,
    counters: Counters,
    pub caps: Option<Caps>,
}

/// A read-only view of a group, for the sampler thread.
#[derive(Debug, Clone)]
pub struct Counters {
    dirs: Dirs,
}

/// Where one group lives: one directory under v2, one per hierarchy under
/// v1.
#[derive(Debug, Clone, PartialEq)]
enum Dirs {
    V2(PathBuf),
    V1 {
        cpu: PathBuf,
        /// `None` when `cpuacct` is co-mounted with `cpu`.
        cpuacct: Option<PathBuf>,
        memory: PathBuf,
    },
}

impl Dirs {
    /// The directory whose `cgroup.procs` we read and kill from. Every
    /// hierarchy lists the same processes, since a child joins all of them
    /// before it runs.
    fn procs_dir(&self) -> &Path {
        match self {
            Dirs::V2(dir) => dir,
            Dirs::V1 { cpu, .. } => cpu,
        }
    }

    /// Every directory once, in the order cpu, cpuacct, memory.
    fn all(&self) -> Vec<&Path> {
        match self {
            Dirs::V2(dir) => vec![dir],
            Dirs::V1 {
                cpu,
                cpuacct,
                memory,
            } => {
                let mut all: Vec<&Path> = vec![cpu];
                for dir in cpuacct.iter().chain([memory]) {
                    if !all.contains(&dir.as_path()) {
                        all.push(dir);
                    }
                }
                all
            }
        }
    }
}

/// Writes `value` into an existing (control) file; cgroup files are never
/// created by us, so a missing one is an error.
fn write_file(path: &Path, value: &str) -> Result<()> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    f.write_all(value.as_bytes())
        .with_context(|| format!("writing `{value}` to {}", path.display()))
}

fn read_u64(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The processes listed in `dir/cgroup.procs`.
fn read_pids(dir: &Path) -> Vec<u32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_arithmetic_matches_the_original() {
        assert_eq!(Caps::new(0.25, 128).quota_us(), 2500);
        assert_eq!(Caps::new(0.20, 96).quota_us(), 2000);
        assert_eq!(Caps::new(0.25, 128).period_us, 10_000);
        assert_eq!(Caps::new(0.25, 128).memory_bytes, 134_217_728);
    }

    #[test]
    fn v1_directories_are_listed_once_each_in_hierarchy_order() {
        let separate = Dirs::V1 {
            cpu: "/c/cpu/g".into(),
            cpuacct: Some("/c/cpuacct/g".into()),
            memory: "/c/memory/g".into(),
        };
        assert_eq!(
            separate.all(),
            vec![
                Path::new("/c/cpu/g"),
                Path::new("/c/cpuacct/g"),
                Path::new("/c/memory/g")
            ]
        );
        assert_eq!(separate.procs_dir(), Path::new("/c/cpu/g"));
        let comounted = Dirs::V1 {
            cpu: "/c/cpu,cpuacct,memory/g".into(),
            cpuacct: None,
            memory: "/c/cpu,cpuacct,memory/g".into(),
        };
        assert_eq!(comounted.all(), vec![Path::new("/c/cpu,cpuacct,memory/g")]);
    }

    #[test]
    fn pids_are_read_from_cgroup_procs() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("cgroup.procs"), "12\n345\n").unwrap();
        assert_eq!(read_pids(dir.path()), vec![12, 345]);
        assert_eq!(read_pids(&dir.path().join("missing")), Vec::<u32>::new());
    }

    #[test]
    fn control_files_are_written_but_never_created() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cpu.max");
        assert!(write_file(&file, "1").is_err());
        fs::write(&file, "").unwrap();
        write_file(&file, "2500 10000").unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "2500 10000");
    }
}
