//! cgroups on this machine: detection, caps written as the original's
//! quota arithmetic, a child placed in its group before it runs, counters,
//! and removal.

use std::fs;
use std::time::Duration;

use harness::cgroup::{self, Caps, Cgroup, Mode};
use harness::process::{self, Spec};

#[test]
fn a_capped_group_holds_its_child_and_disappears_afterwards() {
    let mode = cgroup::detect();
    if let Mode::None { reason } = &mode {
        eprintln!("SKIPPED: no usable cgroups on this machine: {reason}");
        return;
    }
    let group = Cgroup::create(&mode, "test-cap", Some(Caps::new(0.25, 128))).expect("create");
    let files = group.procs_files();
    let dir = files[0].parent().unwrap().to_path_buf();
    match &mode {
        Mode::V1 { .. } => {
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
        Mode::V2 { .. } => {
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
    let spec = Spec {
        name: "spinner".into(),
        program: "sh".into(),
        // Burn CPU so that the quota throttles it.
        args: vec!["-c".into(), "while :; do :; done".into()],
        env: vec![],
        cwd: None,
        stdout: tmp.path().join("out"),
        stderr: tmp.path().join("err"),
    };
    let mut child = process::spawn(&spec, Some(&group)).unwrap();
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
    child.stop(Duration::from_secs(1));
    drop(group);
    assert!(!dir.exists(), "{} removed", dir.display());
    cgroup::remove_base(&mode);
}
