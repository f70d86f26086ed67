//! Per-component cgroups: find a writable hierarchy (v2 with the cpu and
//! memory controllers, else v1 `cpu`/`cpuacct`/`memory`), create one group
//! per component with the original's caps, read its counters, and kill and
//! remove it afterwards.
//!
//! When neither works, callers run uncapped and say so; [`Mode::None`] keeps
//! the reason so that it ends up in `environment.json`.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

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
    /// Legacy hierarchies; each path is where our groups go in that one.
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

/// One line of `/proc/self/mountinfo` that we care about.
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupMount {
    pub mount_point: PathBuf,
    /// `cgroup2`, or `cgroup` with its options (the controllers).
    pub fstype: String,
    pub options: Vec<String>,
}

/// Parses the cgroup mounts out of `/proc/self/mountinfo` text.
pub fn parse_mounts(mountinfo: &str) -> Vec<CgroupMount> {
    let mut mounts = Vec::new();
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let left: Vec<&str> = left.split_whitespace().collect();
        let right: Vec<&str> = right.split_whitespace().collect();
        if left.len() < 5 || right.len() < 3 {
            continue;
        }
        let fstype = right[0];
        if fstype != "cgroup" && fstype != "cgroup2" {
            continue;
        }
        mounts.push(CgroupMount {
            mount_point: PathBuf::from(left[4]),
            fstype: fstype.to_string(),
            options: right[2].split(',').map(str::to_string).collect(),
        });
    }
    mounts
}

/// Parses `/proc/self/cgroup`: (hierarchy controllers, path) pairs; v2 has an
/// empty controller list.
pub fn parse_proc_cgroup(text: &str) -> Vec<(Vec<String>, String)> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let _id = parts.next()?;
            let controllers = parts.next()?;
            let path = parts.next()?;
            let list = controllers
                .split(',')
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect();
            Some((list, path.to_string()))
        })
        .collect()
}

/// Finds the best cgroup interface, creating `slowlab-<pid>` as our base.
pub fn detect() -> Mode {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let own = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mounts = parse_mounts(&mountinfo);
    let own = parse_proc_cgroup(&own);
    let tag = format!("slowlab-{}", std::process::id());
    let mut reasons = Vec::new();
    match try_v2(&mounts, &own, &tag) {
        Ok(base) => return Mode::V2 { base },
        Err(e) => reasons.push(format!("v2: {e:#}")),
    }
    match try_v1(&mounts, &own, &tag) {
        Ok(mode) => return mode,
        Err(e) => reasons.push(format!("v1: {e:#}")),
    }
    Mode::None {
        reason: reasons.join("; "),
    }
}

fn try_v2(mounts: &[CgroupMount], own: &[(Vec<String>, String)], tag: &str) -> Result<PathBuf> {
    let mount = mounts
        .iter()
        .find(|m| m.fstype == "cgroup2")
        .context("no cgroup2 mount")?;
    let root = &mount.mount_point;
    let has = |dir: &Path| {
        let c = fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
        let words: Vec<&str> = c.split_whitespace().collect();
        words.contains(&"cpu") && words.contains(&"memory")
    };
    if !has(root) {
        bail!(
            "{} offers no cpu and memory controllers",
            root.join("cgroup.controllers").display()
        );
    }
    // The root cgroup is exempt from the rule that a group with controllers
    // enabled for its children may not hold processes, so prefer it (we are
    // usually root here); otherwise try our own group.
    let own_path = own
        .iter()
        .find(|(c, _)| c.is_empty())
        .map(|(_, p)| p.trim_start_matches('/').to_string())
        .unwrap_or_default();
    let mut candidates = vec![root.clone()];
    if !own_path.is_empty() {
        candidates.push(root.join(&own_path));
    }
    let mut last = None;
    for parent in candidates {
        match make_v2_base(&parent, tag) {
            Ok(base) => return Ok(base),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| anyhow::anyhow!("no candidate parent")))
}

fn make_v2_base(parent: &Path, tag: &str) -> Result<PathBuf> {
    write_file(&parent.join("cgroup.subtree_control"), "+cpu +memory")
        .context("enabling cpu and memory for children")?;
    let base = parent.join(tag);
    fs::create_dir_all(&base).with_context(|| format!("creating {}", base.display()))?;
    if let Err(e) = write_file(&base.join("cgroup.subtree_control"), "+cpu +memory") {
        let _ = fs::remove_dir(&base);
        return Err(e.context("enabling cpu and memory below our base"));
    }
    Ok(base)
}

fn try_v1(mounts: &[CgroupMount], own: &[(Vec<String>, String)], tag: &str) -> Result<Mode> {
    let find = |controller: &str| -> Result<PathBuf> {
        let mount = mounts
            .iter()
            .find(|m| m.fstype == "cgroup" && m.options.iter().any(|o| o == controller))
            .with_context(|| format!("no v1 `{controller}` hierarchy is mounted"))?;
        let own_path = own
            .iter()
            .find(|(c, _)| c.iter().any(|x| x == controller))
            .map(|(_, p)| p.trim_start_matches('/').to_string())
            .unwrap_or_default();
        let base = mount.mount_point.join(own_path).join(tag);
        fs::create_dir_all(&base).with_context(|| format!("creating {}", base.display()))?;
        Ok(base)
    };
    let cpu = find("cpu")?;
    let cpuacct = find("cpuacct")?;
    let memory = find("memory")?;
    Ok(Mode::V1 {
        cpu,
        cpuacct,
        memory,
    })
}

/// Removes our base groups (after every component group is gone).
pub fn remove_base(mode: &Mode) {
    let dirs: Vec<&PathBuf> = match mode {
        Mode::V2 { base } => vec![base],
        Mode::V1 {
            cpu,
            cpuacct,
            memory,
        } => vec![cpu, cpuacct, memory],
        Mode::None { .. } => vec![],
    };
    for dir in dirs {
        // cpu and cpuacct may be the same co-mounted directory.
        if dir.exists() {
            remove_dir_retrying(dir);
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
    mode: Mode,
    dirs: Vec<PathBuf>,
}

impl Cgroup {
    /// Creates the group `name` below our base and applies `caps` if given.
    /// Groups without caps still account CPU time and memory.
    pub fn create(mode: &Mode, name: &str, caps: Option<Caps>) -> Result<Cgroup> {
        let dirs: Vec<PathBuf> = match mode {
            Mode::V2 { base } => vec![base.join(name)],
            Mode::V1 {
                cpu,
                cpuacct,
                memory,
            } => {
                let mut d = vec![cpu.join(name)];
                if cpuacct != cpu {
                    d.push(cpuacct.join(name));
                }
                d.push(memory.join(name));
                d
            }
            Mode::None { reason } => bail!("no cgroups: {reason}"),
        };
        for dir in &dirs {
            if dir.exists() {
                // A leftover of an earlier run with the same name.
                kill_procs(dir);
                remove_dir_retrying(dir);
            }
            fs::create_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let group = Cgroup {
            name: name.to_string(),
            counters: Counters {
                mode: mode.clone(),
                dirs,
            },
            caps,
        };
        if let Some(caps) = caps {
            group.apply(caps)?;
        }
        Ok(group)
    }

    fn apply(&self, caps: Caps) -> Result<()> {
        let c = &self.counters;
        match &c.mode {
            Mode::V2 { .. } => {
                let dir = &c.dirs[0];
                write_file(
                    &dir.join("cpu.max"),
                    &format!("{} {}", caps.quota_us(), caps.period_us),
                )?;
                write_file(&dir.join("memory.max"), &caps.memory_bytes.to_string())?;
                // The original set MemorySwapMax=0; not every kernel has swap
                // accounting, so a missing file is not an error.
                let swap = dir.join("memory.swap.max");
                if swap.exists() {
                    write_file(&swap, "0")?;
                }
            }
            Mode::V1 { .. } => {
                let cpu = &c.dirs[0];
                write_file(&cpu.join("cpu.cfs_period_us"), &caps.period_us.to_string())?;
                write_file(&cpu.join("cpu.cfs_quota_us"), &caps.quota_us().to_string())?;
                let mem = c.memory_dir();
                write_file(
                    &mem.join("memory.limit_in_bytes"),
                    &caps.memory_bytes.to_string(),
                )?;
                let memsw = mem.join("memory.memsw.limit_in_bytes");
                if memsw.exists() {
                    write_file(&memsw, &caps.memory_bytes.to_string())?;
                }
            }
            Mode::None { .. } => {}
        }
        Ok(())
    }

    /// Lets the group's threads use SCHED_FIFO for `runtime_us` of every
    /// second (cgroup v1 with real-time group scheduling, where a new group
    /// gets no real-time time at all). The load generator's scheduler thread
    /// asks for SCHED_FIFO so that no other process delays a request's
    /// start; it falls back to normal scheduling when refused, and records
    /// which it got. Best effort: returns whether the grant took.
    pub fn grant_realtime(&self, runtime_us: u64) -> bool {
        if !matches!(self.counters.mode, Mode::V1 { .. }) {
            return false;
        }
        let group = &self.counters.dirs[0];
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
    /// hierarchy.
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.counters
            .dirs
            .iter()
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

    /// Kills every process in the group and waits (up to 2 s) until it is
    /// empty.
    pub fn kill_all(&self) {
        let c = &self.counters;
        let kill_file = c.dirs[0].join("cgroup.kill");
        if matches!(c.mode, Mode::V2 { .. }) && kill_file.exists() {
            let _ = write_file(&kill_file, "1");
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let left = kill_procs(&c.dirs[0]);
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
        for dir in &self.counters.dirs {
            remove_dir_retrying(dir);
        }
    }
}

impl Counters {
    fn memory_dir(&self) -> &Path {
        self.dirs
            .last()
            .map(PathBuf::as_path)
            .unwrap_or(Path::new("/"))
    }

    fn cpuacct_dir(&self) -> &Path {
        match self.mode {
            Mode::V1 { .. } if self.dirs.len() == 3 => &self.dirs[1],
            _ => &self.dirs[0],
        }
    }

    /// Processes in the group.
    pub fn pids(&self) -> Vec<u32> {
        read_pids(&self.dirs[0])
    }

    /// Reads the counters now.
    pub fn stats(&self) -> Stats {
        match &self.mode {
            Mode::V2 { .. } => {
                let dir = &self.dirs[0];
                let cpu = read_keyed(&dir.join("cpu.stat"));
                Stats {
                    cpu_usage_ns: cpu.get("usage_usec").map(|v| v * 1000),
                    throttled_ns: cpu.get("throttled_usec").map(|v| v * 1000),
                    nr_throttled: cpu.get("nr_throttled").copied(),
                    memory_bytes: read_u64(&dir.join("memory.current")),
                    memory_peak_bytes: read_u64(&dir.join("memory.peak")),
                }
            }
            Mode::V1 { .. } => {
                let cpu = read_keyed(&self.dirs[0].join("cpu.stat"));
                Stats {
                    cpu_usage_ns: read_u64(&self.cpuacct_dir().join("cpuacct.usage")),
                    throttled_ns: cpu.get("throttled_time").copied(),
                    nr_throttled: cpu.get("nr_throttled").copied(),
                    memory_bytes: read_u64(&self.memory_dir().join("memory.usage_in_bytes")),
                    memory_peak_bytes: read_u64(
                        &self.memory_dir().join("memory.max_usage_in_bytes"),
                    ),
                }
            }
            Mode::None { .. } => Stats::default(),
        }
    }
}

/// Sends SIGKILL to every process listed in `dir/cgroup.procs`; returns how
/// many there were.
fn kill_procs(dir: &Path) -> usize {
    let pids = read_pids(dir);
    for &pid in &pids {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
    }
    pids.len()
}

fn read_pids(dir: &Path) -> Vec<u32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn remove_dir_retrying(dir: &Path) {
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

/// Removes groups that earlier harness processes left behind when they were
/// killed with SIGKILL: `slowlab-<pid>` siblings of our base whose pid is gone.
/// Their processes are killed first, so no Gunicorn or NGINX survives a
/// harness crash past the next start.
pub fn reap_stale(mode: &Mode) -> usize {
    let bases: Vec<&PathBuf> = match mode {
        Mode::V2 { base } => vec![base],
        Mode::V1 {
            cpu,
            cpuacct,
            memory,
        } => vec![cpu, cpuacct, memory],
        Mode::None { .. } => return 0,
    };
    let mut reaped = 0;
    for base in bases {
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
            if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
                continue;
            }
            remove_dir_retrying(&e.path());
            reaped += 1;
        }
    }
    reaped
}

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

fn read_keyed(path: &Path) -> std::collections::HashMap<String, u64> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
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

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn mounts_are_parsed() {
        let m = parse_mounts(MOUNTINFO);
        assert_eq!(m.len(), 4);
        assert_eq!(m[0].mount_point, PathBuf::from("/sys/fs/cgroup/cpu"));
        assert_eq!(m[0].options, vec!["rw", "cpu"]);
        assert_eq!(m[3].fstype, "cgroup2");
    }

    #[test]
    fn proc_cgroup_is_parsed() {
        let p = parse_proc_cgroup("4:memory:/process_api/abc\n1:cpu:/\n0::/user.slice\n");
        assert_eq!(
            p[0],
            (vec!["memory".to_string()], "/process_api/abc".into())
        );
        assert_eq!(p[2], (vec![], "/user.slice".to_string()));
    }

    #[test]
    fn v2_without_controllers_is_refused_with_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("cgroup.controllers"), "io pids\n").unwrap();
        let mounts = vec![CgroupMount {
            mount_point: dir.path().to_path_buf(),
            fstype: "cgroup2".into(),
            options: vec!["rw".into()],
        }];
        let err = try_v2(&mounts, &[], "slowlab-1").unwrap_err();
        assert!(format!("{err:#}").contains("no cpu and memory"), "{err:#}");
    }

    #[test]
    fn v1_needs_all_three_hierarchies() {
        let mounts = parse_mounts("32 31 0:29 / /nonexistent/cpu rw - cgroup cgroup rw,cpu\n");
        let err = try_v1(&mounts, &[], "slowlab-1").unwrap_err();
        assert!(format!("{err:#}").contains("cpuacct") || format!("{err:#}").contains("creating"));
    }
}
