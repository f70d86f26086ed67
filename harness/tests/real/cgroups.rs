//! cgroups on this machine: detection, caps written as the original's
//! quota arithmetic, a child placed in its group before it runs, counters,
//! removal, and the reaping of a dead harness's groups.

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use lab::cgroup::{self, Caps, Cgroup, Mode};
use lab::process::{self, Spec};

/// The tests share this process's base group, and removing it removes
/// every group below it, so they run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn usable_mode() -> Option<Mode> {
    let mode = cgroup::detect();
    if let Mode::None { reason } = &mode {
        eprintln!("SKIPPED: no usable cgroups on this machine: {reason}");
        return None;
    }
    Some(mode)
}

fn spec(name: &str, script: &str, dir: &std::path::Path) -> Spec {
    Spec {
        name: name.into(),
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        env: vec![],
        cwd: None,
        netns: None,
        stdout: dir.join("out"),
        stderr: dir.join("err"),
    }
}

#[test]
fn a_capped_group_holds_its_child_and_disappears_afterwards() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mode) = usable_mode() else {
        return;
    };
    let group = Cgroup::create(&mode, "test-cap", Some(Caps::new(0.25, 128))).expect("create");
    let files = group.procs_files();
    let dir = files[0].parent().unwrap().to_path_buf();
    match &mode {
        Mode::V1 {
            cpu,
            cpuacct,
            memory,
        } => {
            // One cgroup.procs per hierarchy, cpu first and memory last.
            let mut expected = vec![cpu.join("test-cap/cgroup.procs")];
            if cpuacct != cpu {
                expected.push(cpuacct.join("test-cap/cgroup.procs"));
            }
            expected.push(memory.join("test-cap/cgroup.procs"));
            assert_eq!(files, expected);
            assert_eq!(
                fs::read_to_string(dir.join("cpu.cfs_quota_us"))
                    .unwrap()
                    .trim(),
                "2500"
            );
            assert_eq!(
                fs::read_to_string(dir.join("cpu.cfs_period_us"))
                    .unwrap()
                    .trim(),
                "10000"
            );
            let mem = files.last().unwrap().parent().unwrap();
            assert_eq!(
                fs::read_to_string(mem.join("memory.limit_in_bytes"))
                    .unwrap()
                    .trim(),
                "134217728"
            );
        }
        Mode::V2 { base } => {
            assert_eq!(files, vec![base.join("test-cap/cgroup.procs")]);
            assert_eq!(
                fs::read_to_string(dir.join("cpu.max")).unwrap().trim(),
                "2500 10000"
            );
            assert_eq!(
                fs::read_to_string(dir.join("memory.max")).unwrap().trim(),
                "134217728"
            );
        }
        Mode::None { .. } => unreachable!(),
    }
    let tmp = tempfile::tempdir().unwrap();
    // Burn CPU so that the quota throttles it.
    let spinner = spec("spinner", "while :; do :; done", tmp.path());
    let mut child = process::spawn(&spinner, Some(&group)).unwrap();
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        group.pids().contains(&child.pid),
        "the child is in its group"
    );
    let stats = group.stats();
    let cpu = stats.cpu_usage_ns.expect("cpu usage") as f64 / 1e9;
    // 0.25 core over ~0.6 s is ~0.15 s; allow for scheduling slack but not
    // for an uncapped core (~0.6 s).
    assert!(cpu > 0.02 && cpu < 0.35, "cpu {cpu} s");
    assert!(
        stats.throttled_ns.unwrap_or(0) > 0,
        "the quota throttled it"
    );
    assert!(stats.memory_bytes.unwrap_or(0) > 0);
    // The sampler's view reads the same group.
    assert!(group.counters().pids().contains(&child.pid));
    assert!(group.counters().stats().cpu_usage_ns.unwrap_or(0) > 0);
    child.stop(Duration::from_secs(1));
    drop(group);
    for file in &files {
        let dir = file.parent().unwrap();
        assert!(!dir.exists(), "{} removed", dir.display());
    }
    cgroup::remove_base(&mode);
}

/// A harness killed with SIGKILL leaves `slowlab-<pid>` groups with
/// processes inside; the next harness kills those and removes the groups.
#[test]
fn the_groups_of_a_dead_harness_are_reaped_with_their_processes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mode) = usable_mode() else {
        return;
    };
    // No process has this pid: it is above the kernel's largest pid_max.
    let dead = |base: &PathBuf| base.with_file_name("slowlab-4000000000");
    let stale = match &mode {
        Mode::V2 { base } => Mode::V2 { base: dead(base) },
        Mode::V1 {
            cpu,
            cpuacct,
            memory,
        } => Mode::V1 {
            cpu: dead(cpu),
            cpuacct: dead(cpuacct),
            memory: dead(memory),
        },
        Mode::None { .. } => unreachable!(),
    };
    let stale_bases: Vec<PathBuf> = match &stale {
        Mode::V2 { base } => vec![base.clone()],
        Mode::V1 {
            cpu,
            cpuacct,
            memory,
        } => vec![cpu.clone(), cpuacct.clone(), memory.clone()],
        Mode::None { .. } => unreachable!(),
    };
    for base in &stale_bases {
        fs::create_dir_all(base).unwrap();
        if let Mode::V2 { .. } = stale {
            fs::write(base.join("cgroup.subtree_control"), "+cpu +memory").unwrap();
        }
    }
    let group = Cgroup::create(&stale, "app", None).expect("create");
    let tmp = tempfile::tempdir().unwrap();
    let mut child =
        process::spawn(&spec("sleeper", "exec sleep 30", tmp.path()), Some(&group)).expect("spawn");
    // The dead harness never dropped its group.
    std::mem::forget(group);
    cgroup::reap_stale(&mode);
    let status = child
        .wait_timeout(Duration::from_secs(3))
        .expect("the process in the stale group was killed");
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    for base in &stale_bases {
        assert!(!base.exists(), "{} reaped", base.display());
    }
    // Our own base is not stale.
    match &mode {
        Mode::V2 { base } => assert!(base.exists()),
        Mode::V1 { cpu, memory, .. } => assert!(cpu.exists() && memory.exists()),
        Mode::None { .. } => unreachable!(),
    }
    cgroup::remove_base(&mode);
}
