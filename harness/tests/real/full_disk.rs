//! A results directory on a disk that fills: nothing measured is lost.
//! `slowlab load` prints its summary before it writes its files, and when
//! they cannot be written whole says so in one line (exit 1) and marks the
//! directory; `slowlab report` never leaves half a page where one was.
//! The disk is a 64 KiB tmpfs, unmounted when the test ends.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::child::Child;

/// A small tmpfs mounted on a temp dir for the test's life.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Tmpfs {
        testkit::real::require_root("mounting a tmpfs");
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount -t tmpfs failed");
        Tmpfs { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn mounted(p: &Path) -> bool {
    std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .contains(&p.display().to_string())
}

#[test]
fn a_load_whose_disk_fills_keeps_its_figures() {
    let disk = Tmpfs::mount("64k");
    let server =
        server::spawn(server::ServerConfig::new(server::Model::Async, Some(2))).expect("server");
    let url = format!("http://{}", server.local_addr());
    let out = disk.path().join("load");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_slowlab"));
    // 3,000 /fast requests: their rows are some 300 KB, more than the disk.
    cmd.arg("load")
        .args(["--target", &url, "--slow", "0"])
        .args([
            "--fast-rate",
            "1000",
            "--fast-duration",
            "3s",
            "--json",
            "--out",
        ])
        .arg(&out);
    let done = Child::spawn(cmd).finish(std::time::Duration::from_secs(60));
    assert_eq!(done.status.code(), Some(1), "{}", done.stderr);
    let summary: serde_json::Value = serde_json::from_str(done.stdout.trim()).unwrap();
    assert_eq!(summary["fast"]["requests"], 3000, "{summary}");
    let err = done.stderr.trim();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("No space left") && err.contains("summary above"),
        "{err}"
    );
    let path = disk.path();
    drop(disk);
    assert!(!mounted(&path), "the tmpfs is unmounted");
}
