//! Which cgroup interface this machine offers: v2 when its cpu and memory
//! controllers can be enabled for our groups, else v1 `cpu`+`cpuacct`+
//! `memory`, else none with the reason. Each creates `slowlab-<pid>` as our
//! base, below which every component's group goes.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use procfs::ProcessCGroup;
use procfs::process::{MountInfos, Process};

use super::{Mode, write_file};

/// A cgroup (v1) or cgroup2 mount.
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupMount {
    pub mount_point: PathBuf,
    /// `cgroup2`, or `cgroup` with its options (the controllers).
    pub fstype: String,
    /// The superblock options, sorted: `rw` and, for v1, the controllers.
    pub options: Vec<String>,
}

impl CgroupMount {
    /// The cgroup mounts among `mounts`.
    fn all(mounts: &MountInfos) -> Vec<CgroupMount> {
        mounts
            .iter()
            .filter(|m| m.fs_type == "cgroup" || m.fs_type == "cgroup2")
            .map(|m| {
                let mut options: Vec<String> = m.super_options.keys().cloned().collect();
                options.sort();
                CgroupMount {
                    mount_point: m.mount_point.clone(),
                    fstype: m.fs_type.clone(),
                    options,
                }
            })
            .collect()
    }
}

/// Finds the best cgroup interface, creating `slowlab-<pid>` as our base.
pub fn detect() -> Mode {
    let me = Process::myself();
    let mounts = me
        .as_ref()
        .ok()
        .and_then(|p| p.mountinfo().ok())
        .map(|m| CgroupMount::all(&m))
        .unwrap_or_default();
    let own = me
        .as_ref()
        .ok()
        .and_then(|p| p.cgroups().ok())
        .map(|c| c.0)
        .unwrap_or_default();
    detect_from(&mounts, &own, &format!("slowlab-{}", std::process::id()))
}

/// [`detect`] with the mounts and our own groups given, so that tests can
/// point it at a directory tree of their own.
fn detect_from(mounts: &[CgroupMount], own: &[ProcessCGroup], tag: &str) -> Mode {
    let mut reasons = Vec::new();
    match try_v2(mounts, own, tag) {
        Ok(base) => return Mode::V2 { base },
        Err(e) => reasons.push(format!("v2: {e:#}")),
    }
    match try_v1(mounts, own, tag) {
        Ok(mode) => return mode,
        Err(e) => reasons.push(format!("v1: {e:#}")),
    }
    Mode::None {
        reason: reasons.join("; "),
    }
}

fn try_v2(mounts: &[CgroupMount], own: &[ProcessCGroup], tag: &str) -> Result<PathBuf> {
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
        .find(|c| c.controllers.is_empty())
        .map(|c| c.pathname.trim_start_matches('/').to_string())
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

fn try_v1(mounts: &[CgroupMount], own: &[ProcessCGroup], tag: &str) -> Result<Mode> {
    let find = |controller: &str| -> Result<PathBuf> {
        let mount = mounts
            .iter()
            .find(|m| m.fstype == "cgroup" && m.options.iter().any(|o| o == controller))
            .with_context(|| format!("no v1 `{controller}` hierarchy is mounted"))?;
        let own_path = own
            .iter()
            .find(|c| c.controllers.iter().any(|x| x == controller))
            .map(|c| c.pathname.trim_start_matches('/').to_string())
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

#[cfg(test)]
mod tests {
    use super::*;
    use procfs::FromRead;
    use procfs::ProcessCGroups;

    fn mounts(text: &str) -> Vec<CgroupMount> {
        CgroupMount::all(&MountInfos::from_read(text.as_bytes()).unwrap())
    }

    fn own(text: &str) -> Vec<ProcessCGroup> {
        ProcessCGroups::from_read(text.as_bytes()).unwrap().0
    }

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn cgroup_mounts_are_found_in_mountinfo() {
        let m = mounts(MOUNTINFO);
        assert_eq!(m.len(), 4);
        assert_eq!(m[0].mount_point, PathBuf::from("/sys/fs/cgroup/cpu"));
        assert_eq!(m[0].options, vec!["cpu", "rw"]);
        assert_eq!(m[3].fstype, "cgroup2");
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

    /// A v1 tree like this machine's: `cpu`, `cpuacct` and `memory` mounted
    /// apart, our memory group nested below a container's, and a v2 mount
    /// without controllers.
    #[test]
    fn v1_is_chosen_when_v2_has_no_controllers() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path().display();
        for sub in ["cpu", "cpuacct", "memory/box", "unified"] {
            fs::create_dir_all(root.path().join(sub)).unwrap();
        }
        fs::write(root.path().join("unified/cgroup.controllers"), "").unwrap();
        let mounts = mounts(&format!(
            "32 31 0:29 / {r}/cpu rw - cgroup cgroup rw,cpu\n\
             33 31 0:30 / {r}/cpuacct rw - cgroup cgroup rw,cpuacct\n\
             35 31 0:32 / {r}/memory rw - cgroup cgroup rw,memory\n\
             41 31 0:38 / {r}/unified rw - cgroup2 cgroup2 rw\n"
        ));
        let own = own("4:memory:/box\n2:cpuacct:/\n1:cpu:/\n0::/\n");
        let mode = detect_from(&mounts, &own, "slowlab-7");
        assert_eq!(
            mode,
            Mode::V1 {
                cpu: root.path().join("cpu/slowlab-7"),
                cpuacct: root.path().join("cpuacct/slowlab-7"),
                memory: root.path().join("memory/box/slowlab-7"),
            }
        );
        assert!(root.path().join("memory/box/slowlab-7").is_dir());
    }

    #[test]
    fn comounted_cpu_and_cpuacct_share_one_base() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path().display();
        let mounts = mounts(&format!(
            "32 31 0:29 / {r}/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n\
             35 31 0:32 / {r}/memory rw - cgroup cgroup rw,memory\n"
        ));
        let Mode::V1 { cpu, cpuacct, .. } = detect_from(&mounts, &[], "slowlab-7") else {
            panic!("v1 expected");
        };
        assert_eq!(cpu, cpuacct);
        assert_eq!(cpu, root.path().join("cpu,cpuacct/slowlab-7"));
    }

    #[test]
    fn without_a_usable_hierarchy_the_reason_names_both() {
        // A mount point that is a plain file: no directory can be made below
        // it, even by root.
        let file = tempfile::NamedTempFile::new().unwrap();
        let f = file.path().display();
        let mounts = mounts(&format!("32 31 0:29 / {f} rw - cgroup cgroup rw,cpu\n"));
        let Mode::None { reason } = detect_from(&mounts, &[], "slowlab-1") else {
            panic!("none expected");
        };
        assert!(reason.contains("v2: no cgroup2 mount"), "{reason}");
        assert!(
            reason.contains(&format!("v1: creating {f}/slowlab-1")),
            "{reason}"
        );
    }

    #[test]
    fn v1_needs_all_three_hierarchies() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path().display();
        let mounts = mounts(&format!(
            "32 31 0:29 / {r}/cpu rw - cgroup cgroup rw,cpu\n\
             35 31 0:32 / {r}/memory rw - cgroup cgroup rw,memory\n"
        ));
        let err = try_v1(&mounts, &[], "slowlab-1").unwrap_err();
        assert!(format!("{err:#}").contains("no v1 `cpuacct`"), "{err:#}");
    }
}
