//! `slowlab sweep-load` and `slowlab sweep` through the real binary: one
//! line for bad flags, the exit status when nothing succeeds, and short
//! end-to-end sweeps of the two Rust stacks into one directory with the
//! harness's columns, the summary and the report.
//!
//! Every child is killed and reaped by [`Child`]'s `Drop` (its own children
//! die with it: the harness gives them a parent-death signal), so a failing
//! assertion leaves nothing behind.

use crate::support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::child::{Child, Outcome};

const BIN: &str = env!("CARGO_BIN_EXE_slowlab");
/// Generous: a loaded machine may take a while to run a debug binary.
const PATIENCE: Duration = Duration::from_secs(120);

fn run(args: &[&str]) -> Outcome {
    let mut cmd = Command::new(BIN);
    cmd.args(args).env("SLOWLAB_HOME", support::state_dir());
    Child::spawn(cmd).finish(PATIENCE)
}

/// Rows of a CSV file as maps from column to cell, and its header.
fn csv(path: &Path) -> (Vec<String>, Vec<std::collections::HashMap<String, String>>) {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header: Vec<String> = r
        .headers()
        .expect("header")
        .iter()
        .map(String::from)
        .collect();
    let rows = r
        .records()
        .map(|rec| {
            header
                .iter()
                .cloned()
                .zip(rec.expect("row").iter().map(String::from))
                .collect()
        })
        .collect();
    (header, rows)
}

#[test]
fn bad_flags_give_one_line() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("load").to_string_lossy().to_string();
    let cases: [(&[&str], i32, &str); 8] = [
        (
            &[
                "--target",
                "http://127.0.0.1:1",
                "--rates",
                "abc",
                "--out",
                &out,
            ],
            2,
            "rate",
        ),
        (
            &[
                "--target",
                "http://127.0.0.1:1",
                "--rates",
                "10,0",
                "--out",
                &out,
            ],
            2,
            "more than 0",
        ),
        (
            &[
                "--target",
                "http://127.0.0.1:1",
                "--rates",
                "10",
                "--calls-per-conn",
                "0",
                "--out",
                &out,
            ],
            2,
            "calls-per-conn",
        ),
        (
            &["--target", "http://127.0.0.1:1", "--rates", "10"],
            2,
            "--out",
        ),
        (
            &[
                "--target",
                "http://192.0.2.1:80",
                "--rates",
                "10",
                "--out",
                &out,
            ],
            2,
            "--allow-remote",
        ),
        // The request direction's flags: `load`'s ranges and checks.
        (
            &[
                "--target",
                "http://127.0.0.1:1",
                "--rates",
                "10",
                "--slow-upload",
                "2",
                "--upload-rate",
                "0",
                "--out",
                &out,
            ],
            2,
            "--upload-rate",
        ),
        (
            &[
                "--target",
                "http://127.0.0.1:1",
                "--rates",
                "10",
                "--slow-upload",
                "2",
                "--upload-path",
                "upload",
                "--out",
                &out,
            ],
            2,
            "--upload-path",
        ),
        (
            &[
                "--target",
                "http://127.0.0.1:1",
                "--rates",
                "10",
                "--slow-headers",
                "25001",
                "--out",
                &out,
            ],
            2,
            "--slow-headers",
        ),
    ];
    for (args, code, says) in cases {
        let mut words = vec!["sweep-load"];
        words.extend_from_slice(args);
        let o = run(&words);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", o.stderr);
        let lines: Vec<&str> = o.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: one line, got {:?}", o.stderr);
        assert!(
            lines[0].starts_with("slowlab: ") && lines[0].contains(says),
            "{args:?}: {}",
            lines[0]
        );
    }
    assert!(
        !tmp.path().join("load").exists(),
        "nothing is written for bad input"
    );
}

/// The URL of a port nothing listens on (a port that was free a moment ago).
fn closed_target() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    format!("http://127.0.0.1:{port}")
}

#[test]
fn a_sweep_without_one_success_fails_after_writing_its_steps() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let target = closed_target();
    let out = tmp.path().to_string_lossy().to_string();
    let o = run(&[
        "sweep-load",
        "--target",
        &target,
        "--rates",
        "10",
        "--step-duration",
        "300ms",
        "--out",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", o.stderr);
    let last = o.stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("slowlab: no request succeeded"), "{last}");
    assert!(
        o.stdout.contains("sweep-load: 1 of 1 steps"),
        "{}",
        o.stdout
    );
    let (_, rows) = csv(&tmp.path().join("steps.csv"));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["err_connect_refused"], rows[0]["requests"]);
}

#[test]
fn the_json_summary_counts_the_uploads_of_the_sweep() {
    // Against a closed port every upload is refused at once; its slot
    // starts another after a pause, each a row of uploads.csv.
    let tmp = tempfile::tempdir().expect("tempdir");
    let target = closed_target();
    let out = tmp.path().to_string_lossy().to_string();
    let o = run(&[
        "sweep-load",
        "--target",
        &target,
        "--rates",
        "10",
        "--step-duration",
        "300ms",
        "--slow-upload",
        "1",
        "--json",
        "--out",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", o.stderr);
    let summary: serde_json::Value =
        serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stdout));
    let uploads = &summary["uploads"];
    let count = uploads["count"].as_u64().expect("uploads.count");
    assert!(count >= 2, "restarted after each refusal: {summary}");
    assert_eq!(uploads["ok"], 0, "{summary}");
    assert_eq!(uploads["errors"]["connect_refused"], count, "{summary}");
    assert_eq!(summary["steps"], 1, "{summary}");
    let (header, rows) = csv(&tmp.path().join("uploads.csv"));
    assert_eq!(
        header,
        schema::columns::<schema::UploadCells>(),
        "load's columns"
    );
    assert_eq!(rows.len() as u64, count);
    assert!(
        rows.iter().all(|r| r["error"] == "connect_refused"),
        "{rows:?}"
    );
}

#[test]
fn sweeps_of_both_rust_stacks_share_one_directory() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().to_string_lossy().to_string();
    for server in ["rust-async", "rust-sync2"] {
        let o = run(&[
            "sweep",
            "--server",
            server,
            "--route",
            "direct",
            "--low",
            "20",
            "--high",
            "60",
            "--step",
            "20",
            "--step-duration",
            "1s",
            "--calls-per-conn",
            "2",
            "--no-caps",
            "--out",
            &out,
        ]);
        assert!(o.status.success(), "{server}: {}\n{}", o.stdout, o.stderr);
        assert!(o.stdout.contains("highest error-free rate"), "{}", o.stdout);
    }
    let (header, rows) = csv(&tmp.path().join("sweep.csv"));
    for col in schema::columns::<schema::StepCells>().iter().chain(&[
        "sweep_id",
        "app_cpu_cores",
        "loadgen_cpu_cores",
        "loadgen_saturated",
    ]) {
        assert!(header.iter().any(|h| h == col), "sweep.csv lacks {col}");
    }
    support::assert_documented("sweep.csv", &header);
    assert_eq!(rows.len(), 6, "one row per step of each sweep");
    for (server, steps) in [("rust-async", [20, 40, 60]), ("rust-sync2", [20, 40, 60])] {
        let mine: Vec<_> = rows.iter().filter(|r| r["server"] == server).collect();
        let rates: Vec<u32> = mine
            .iter()
            .map(|r| r["conn_rate_demanded"].parse().expect("rate"))
            .collect();
        assert_eq!(rates, steps, "{server}");
        for r in mine {
            assert_eq!(
                r["errors"], "0",
                "{server} at {} conn/s",
                r["conn_rate_demanded"]
            );
            assert_eq!(r["replies"], r["requests"]);
        }
    }
    let (summary_header, summary) = csv(&tmp.path().join("sweep-summary.csv"));
    support::assert_documented("sweep-summary.csv", &summary_header);
    let ids: Vec<&str> = summary.iter().map(|r| r["sweep_id"].as_str()).collect();
    assert_eq!(
        ids,
        [
            "rust-async-direct-s0-uncapped",
            "rust-sync2-direct-s0-uncapped"
        ]
    );
    let html = std::fs::read_to_string(tmp.path().join("report.html")).expect("report.html");
    assert!(html.contains("<section id=\"sweep\""));
    assert!(tmp.path().join("report-sweep-replies.svg").is_file());
}

#[test]
fn a_stack_that_does_not_start_leaves_its_reason() {
    testkit::real::require(
        "NGINX unpacked by `slowlab prepare`",
        std::path::Path::new("/usr/sbin/nginx")
            .exists()
            .then_some("the system's /usr/sbin/nginx is used, which this test cannot replace"),
    );
    let real = support::state_dir().join("nginx/usr/sbin/nginx");
    assert!(real.exists(), "scripts/test prepares {}", real.display());
    // A state directory whose NGINX reports its version but will not run.
    let home = tempfile::tempdir().expect("tempdir");
    let sbin = home.path().join("nginx/usr/sbin");
    std::fs::create_dir_all(&sbin).unwrap();
    std::os::unix::fs::symlink(support::state_dir().join("venv"), home.path().join("venv"))
        .unwrap();
    let fake = sbin.join("nginx");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\n[ \"$1\" = -v ] && exec {} -v\necho 'nginx: refused by the test' >&2\nexit 1\n",
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cmd = Command::new(BIN);
    cmd.args([
        "sweep",
        "--server",
        "rust-async",
        "--route",
        "nginx-on",
        "--low",
        "50",
        "--high",
        "50",
        "--step-duration",
        "1s",
        "--no-caps",
        "--out",
    ])
    .arg(tmp.path())
    .env("SLOWLAB_HOME", home.path());
    let o = Child::spawn(cmd).finish(PATIENCE);
    assert_eq!(o.status.code(), Some(1), "{}", o.stderr);
    assert!(o.stderr.contains("refused by the test"), "{}", o.stderr);
    let failed = tmp
        .path()
        .join("sweeps/rust-async-nginx-on-s0-uncapped/FAILED");
    let reason = std::fs::read_to_string(&failed).expect("FAILED beside the sweep's logs");
    assert!(reason.contains("refused by the test"), "{reason}");
    assert!(!tmp.path().join("INCOMPLETE").exists());
    assert!(!tmp.path().join("sweep.csv").exists(), "no steps, no rows");
}
