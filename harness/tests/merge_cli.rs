//! `slowlab merge`: shards of one plan merge into what the whole gives from
//! the same rows; colliding run ids are renumbered; the machines'
//! differences are named; bad input is refused with exit 2.

mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::child::{Child, Outcome};

fn fixture() -> PathBuf {
    support::root().join("harness/tests/fixtures/quick")
}

fn merge(args: &[&Path]) -> Outcome {
    let mut cmd = Command::new(support::slowlab());
    cmd.arg("merge").arg("--no-report").args(args);
    Child::spawn(cmd).finish(Duration::from_secs(60))
}

/// Copies the rows of `src`'s runs for which `keep(run_id)` holds into
/// `dst`, file by file, as a shard of the same plan would have them.
fn split(src: &Path, dst: &Path, keep: impl Fn(&str) -> bool) {
    fs::create_dir_all(dst).unwrap();
    for entry in fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_owned();
        if path.extension().is_none_or(|e| e != "csv") {
            fs::copy(&path, dst.join(&name)).unwrap();
            continue;
        }
        let mut r = csv::Reader::from_path(&path).unwrap();
        let headers = r.headers().unwrap().clone();
        let Some(col) = headers.iter().position(|h| h == "run_id") else {
            continue; // summaries: merge writes them anew
        };
        let mut w = csv::Writer::from_path(dst.join(&name)).unwrap();
        w.write_record(&headers).unwrap();
        for rec in r.records() {
            let rec = rec.unwrap();
            if keep(&rec[col]) {
                w.write_record(&rec).unwrap();
            }
        }
        w.flush().unwrap();
    }
}

fn read(dir: &Path, file: &str) -> String {
    fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn env(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&read(dir, "environment.json")).unwrap()
}

#[test]
fn merged_shards_equal_the_whole_and_name_what_differs() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("shard-1"), tmp.path().join("shard-2"));
    let odd = |id: &str| id.parse::<u32>().unwrap() % 2 == 1;
    split(&fixture(), &a, odd);
    split(&fixture(), &b, |id| !odd(id));
    // The second machine runs another kernel.
    let mut e = env(&b);
    e["kernel"] = "6.12.0-other".into();
    fs::write(b.join("environment.json"), e.to_string()).unwrap();

    let whole = tmp.path().join("whole");
    let out = merge(&[&whole, &fixture()]);
    assert!(out.status.success(), "{}", out.stderr);
    let merged = tmp.path().join("merged");
    let out = merge(&[&merged, &b, &a]);
    assert!(out.status.success(), "{}", out.stderr);
    assert!(
        out.stderr.contains("the machines differ in kernel"),
        "{}",
        out.stderr
    );

    for file in [
        "runs.csv",
        "conditions.csv",
        "crosscheck.csv",
        "requests.csv",
        "large-responses.csv",
        "slow-progress.csv",
        "resource-samples.csv",
        "socket-samples.csv",
        "app-sends.csv",
        "proxy-responses.csv",
        "proxy-gauge.csv",
    ] {
        assert_eq!(read(&merged, file), read(&whole, file), "{file} differs");
    }
    // The whole merged alone keeps the fixture's twelve runs and their ids.
    let runs = read(&whole, "runs.csv");
    assert_eq!(runs.lines().count(), 13);
    assert!(runs.lines().nth(12).unwrap().starts_with("012,"));
    let conditions = read(&whole, "conditions.csv");
    assert_eq!(conditions.lines().count(), 13);

    let e = env(&merged);
    let m = &e["merged"];
    assert_eq!(m["sources"].as_array().unwrap().len(), 2);
    assert_eq!(m["sources"][0]["run_ids"]["002"], "002");
    let diffs = m["differences"].as_array().unwrap();
    assert_eq!(diffs.len(), 1, "{diffs:?}");
    assert_eq!(diffs[0]["key"], "kernel");
    assert_eq!(diffs[0]["values"][0], "6.12.0-other");
    assert!(!merged.join("INCOMPLETE").exists());

    // The report says that the machines differ, and in what.
    let mut cmd = Command::new(support::slowlab());
    cmd.arg("report").arg(&merged);
    let out = Child::spawn(cmd).finish(Duration::from_secs(60));
    assert!(out.status.success(), "{}", out.stderr);
    let md = read(&merged, "report.md");
    assert!(
        md.contains("merged from 2 results directories whose machines differ")
            && md.contains("kernel: 6.12.0-other / 6.18.44-fc-v657"),
        "{md}"
    );
}

#[test]
fn colliding_run_ids_are_renumbered_and_incomplete_inputs_are_marked() {
    let tmp = tempfile::tempdir().unwrap();
    let again = tmp.path().join("again");
    split(&fixture(), &again, |_| true);
    // Another reproduction of the same plan, a day later: the same run
    // ids, other runs.
    let runs = fs::read_to_string(again.join("runs.csv")).unwrap();
    fs::write(
        again.join("runs.csv"),
        runs.replace("2026-11-29T", "2026-11-30T"),
    )
    .unwrap();
    fs::write(
        again.join("INCOMPLETE"),
        "interrupted after 12 of 30 runs\n",
    )
    .unwrap();
    let merged = tmp.path().join("merged");
    let out = merge(&[&merged, &fixture(), &again]);
    assert!(out.status.success(), "{}", out.stderr);

    let runs = read(&merged, "runs.csv");
    let ids: Vec<&str> = runs.lines().skip(1).map(|l| &l[..3]).collect();
    let expected: Vec<String> = (1..=24).map(|i| format!("{i:03}")).collect();
    assert_eq!(ids, expected);
    // The second reproduction's first run is now run 013, in every file.
    let first_of_second = runs.lines().nth(13).unwrap();
    let first = runs.lines().nth(1).unwrap();
    assert_eq!(
        first_of_second[3..].replace("2026-11-30T", "2026-11-29T"),
        first[3..]
    );
    let requests = read(&merged, "requests.csv");
    let of = |id: &str| requests.lines().filter(|l| l.starts_with(id)).count();
    assert!(of("001,") > 0);
    assert_eq!(of("001,"), of("013,"));
    // Every condition now has two runs.
    let conditions = read(&merged, "conditions.csv");
    let mut r = csv::Reader::from_reader(conditions.as_bytes());
    let col = r
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "runs")
        .unwrap();
    for rec in r.records() {
        assert_eq!(&rec.unwrap()[col], "2");
    }
    let marker = read(&merged, "INCOMPLETE");
    assert!(marker.contains("1 of them incomplete"), "{marker}");
    assert!(
        marker.contains("interrupted after 12 of 30 runs"),
        "{marker}"
    );
}

/// Sets the `mtu` cell of every row of `dir`'s `runs.csv` (adding the
/// column to a fixture of a version before it).
fn set_mtu(dir: &Path, mtu: &str) {
    let path = dir.join("runs.csv");
    let mut r = csv::Reader::from_path(&path).unwrap();
    let mut headers = r.headers().unwrap().clone();
    let col = headers.iter().position(|h| h == "mtu").unwrap_or_else(|| {
        headers.push_field("mtu");
        headers.len() - 1
    });
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    let mut w = csv::Writer::from_path(&path).unwrap();
    w.write_record(&headers).unwrap();
    for rec in rows {
        let mut cells: Vec<String> = rec.iter().map(String::from).collect();
        cells.resize(headers.len(), String::new());
        cells[col] = mtu.into();
        w.write_record(&cells).unwrap();
    }
    w.flush().unwrap();
}

/// The values of `column` in `file` of `dir`, row by row.
fn column(dir: &Path, file: &str, column: &str) -> Vec<String> {
    let mut r = csv::Reader::from_path(dir.join(file)).unwrap();
    let col = r
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == column)
        .unwrap_or_else(|| panic!("{file} has no {column}"));
    r.records().map(|x| x.unwrap()[col].to_string()).collect()
}

#[test]
fn directories_that_differ_only_in_mtu_stay_two_conditions_when_merged() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("mtu-1500"), tmp.path().join("mtu-65535"));
    split(&fixture(), &a, |_| true);
    split(&fixture(), &b, |_| true);
    set_mtu(&a, "1500");
    set_mtu(&b, "65535");
    let merged = tmp.path().join("merged");
    let out = merge(&[&merged, &a, &b]);
    assert!(out.status.success(), "{}", out.stderr);
    // The fixture's twelve conditions, once per MTU, one run each.
    let mtus = column(&merged, "conditions.csv", "mtu");
    assert_eq!(mtus.len(), 24, "{mtus:?}");
    assert_eq!(mtus.iter().filter(|m| *m == "1500").count(), 12);
    assert_eq!(mtus.iter().filter(|m| *m == "65535").count(), 12);
    assert!(
        column(&merged, "conditions.csv", "runs")
            .iter()
            .all(|r| r == "1")
    );
    let cross = column(&merged, "crosscheck.csv", "mtu");
    assert!(cross.contains(&"1500".into()) && cross.contains(&"65535".into()));
    assert_eq!(
        cross.iter().filter(|m| *m == "1500").count(),
        cross.iter().filter(|m| *m == "65535").count()
    );
}

#[test]
fn bad_input_is_refused_with_exit_2_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    fs::write(tmp.path().join("notes.txt"), "not results\n").unwrap();
    // A copy of a directory: the same runs, which must not count twice.
    let copy = tmp.path().join("copy");
    split(&fixture(), &copy, |_| true);
    // A directory whose runs.csv has its header only (a check's or a
    // sweep's has none at all).
    let empty = tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let header = read(&fixture(), "runs.csv")
        .lines()
        .next()
        .unwrap()
        .to_string();
    fs::write(empty.join("runs.csv"), header + "\n").unwrap();
    let cases: Vec<(Vec<PathBuf>, &str)> = vec![
        (
            vec![out.clone(), tmp.path().join("nope")],
            "is not a directory",
        ),
        (vec![fixture(), fixture()], "both the output and an input"),
        (vec![tmp.path().to_path_buf(), fixture()], "is not empty"),
        (vec![out.clone(), tmp.path().to_path_buf()], "holds no runs"),
        (vec![out.clone(), fixture(), fixture()], "is given twice"),
        (vec![out.clone(), fixture(), copy.clone()], "is in both"),
        (vec![out.clone(), fixture(), empty.clone()], "holds no runs"),
        // An output that cannot be created (under a file).
        (
            vec![tmp.path().join("notes.txt/out"), fixture()],
            "cannot create it",
        ),
    ];
    for (args, says) in cases {
        let paths: Vec<&Path> = args.iter().map(PathBuf::as_path).collect();
        let o = merge(&paths);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", o.stderr);
        assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
        assert!(o.stderr.contains(says), "{args:?}: {}", o.stderr);
    }
    assert!(!out.exists() || fs::read_dir(&out).unwrap().next().is_none());
}

#[test]
fn real_shards_of_a_reproduction_merge_into_the_plan() {
    let tmp = tempfile::tempdir().unwrap();
    let shard = |k: u32| {
        let out = tmp.path().join(format!("shard-{k}"));
        let mut cmd = Command::new(support::slowlab());
        cmd.args([
            "reproduce",
            "--preset",
            "quick",
            "--only",
            "rust-sync2,direct",
        ])
        .args(["--shard", &format!("{k}/2"), "--no-report", "--out"])
        .arg(&out)
        .env("SLOWLAB_HOME", support::state_dir());
        let o = Child::spawn(cmd).finish(Duration::from_secs(120));
        assert!(o.status.success(), "shard {k}: {}", o.stderr);
        out
    };
    let (a, b) = (shard(1), shard(2));
    let ids = |dir: &Path| -> Vec<String> {
        read(dir, "runs.csv")
            .lines()
            .skip(1)
            .map(|l| l[..3].to_string())
            .collect()
    };
    assert_eq!(ids(&a), ["001"]);
    assert_eq!(ids(&b), ["002"]);
    assert_eq!(env(&a)["run"]["shard"], "1/2");

    let merged = tmp.path().join("merged");
    let out = merge(&[&merged, &b, &a]);
    assert!(out.status.success(), "{}", out.stderr);
    assert_eq!(ids(&merged), ["001", "002"]);
    let runs = read(&merged, "runs.csv");
    let slow: Vec<&str> = runs
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(3).unwrap())
        .collect();
    assert_eq!(slow, ["0", "2"]);
    assert_eq!(read(&merged, "conditions.csv").lines().count(), 3);
    // The shards ran on one machine: nothing but the shard differs, and
    // the shard is not a difference between machines.
    let e = env(&merged);
    assert_eq!(
        e["merged"]["differences"].as_array().unwrap().len(),
        0,
        "{}",
        e["merged"]["differences"]
    );

    // A shard beyond the plan is bad input, refused before any run.
    let mut cmd = Command::new(support::slowlab());
    cmd.args([
        "reproduce",
        "--preset",
        "quick",
        "--only",
        "rust-sync2,direct",
    ])
    .args(["--shard", "3/3", "--out"])
    .arg(tmp.path().join("empty"))
    .env("SLOWLAB_HOME", support::state_dir());
    let o = Child::spawn(cmd).finish(Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(2), "{}", o.stderr);
    assert!(o.stderr.contains("has only 2 runs"), "{}", o.stderr);
}
