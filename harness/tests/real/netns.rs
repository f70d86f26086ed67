//! Runs in the lab's network namespaces, with real Gunicorn and NGINX: the
//! namespaces and veths are gone after a normal end, after SIGINT and after
//! SIGKILL followed by a new start; a `tcp_wmem` max set in the server
//! namespace bounds the app's send queue and leaves the host's alone; and
//! a machine without namespaces (simulated with `SLOWLAB_NO_NETNS`, and
//! for real as an unprivileged user) skips with one line per condition.

use crate::support;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use support::netns::leftovers;
use support::{slowlab, state_dir};

/// Every harness reaps what dead harnesses left at its start, so one of
/// these tests would reap the namespaces that another's killed harness left
/// before that test's own next start could: they run one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn usable() -> bool {
    testkit::real::require("network namespaces", lab::netns::unavailable());
    testkit::real::require_program("Gunicorn", &state_dir().join("venv/bin/gunicorn"));
    true
}

fn reproduce(out: &std::path::Path, extra: &[&str]) -> Command {
    reproduce_only(out, "gunicorn-sync2,nginx-off,slow=2", extra)
}

/// `slowlab reproduce --preset quick --only ONLY EXTRA --out OUT`.
fn reproduce_only(out: &std::path::Path, only: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(slowlab());
    c.args([
        "reproduce",
        "--preset",
        "quick",
        "--no-report",
        "--only",
        only,
    ])
    .args(extra)
    .arg("--out")
    .arg(out)
    .env("SLOWLAB_HOME", state_dir());
    c
}

fn column(csv: &str, name: &str) -> Vec<String> {
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let i = head
        .iter()
        .position(|h| *h == name)
        .unwrap_or_else(|| panic!("no {name}"));
    lines
        .map(|l| l.split(',').nth(i).unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_small_tcp_wmem_in_the_server_namespace_bounds_the_send_queue_and_spares_the_host() {
    let _serial = one_at_a_time();
    if !usable() {
        return;
    }
    let host_before = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let child = reproduce(
        &out,
        &["--sysctl", "server:net.ipv4.tcp_wmem=4096 16384 524288"],
    )
    .spawn()
    .unwrap();
    let pid = child.id();
    let status = child.wait_with_output().unwrap().status;
    assert!(status.success(), "{status}");
    assert_eq!(
        leftovers(pid),
        Vec::<String>::new(),
        "left after a normal end"
    );
    assert_eq!(
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem").unwrap(),
        host_before
    );
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert_eq!(column(&runs, "status"), ["ok"], "{runs}");
    assert_eq!(column(&runs, "netns"), ["true"]);
    assert_eq!(
        column(&runs, "sysctls"),
        ["server:net.ipv4.tcp_wmem=4096 16384 524288"]
    );
    let sockets = std::fs::read_to_string(out.join("socket-samples.csv")).unwrap();
    let comps = column(&sockets, "component");
    let tx = column(&sockets, "tx_queue_bytes");
    let local = column(&sockets, "local");
    let app_peak = comps
        .iter()
        .zip(&tx)
        .filter(|(c, _)| *c == "app")
        .filter_map(|(_, t)| t.parse::<u64>().ok())
        .max()
        .expect("app sockets were sampled in their namespace");
    assert!(
        app_peak > 64 << 10,
        "the app's send queue filled: {app_peak}"
    );
    assert!(
        app_peak <= 1 << 20,
        "bounded by the 512 KiB max: {app_peak}"
    );
    // NGINX listens on the server namespace's veth address.
    assert!(
        local.iter().any(|l| l.starts_with("198.18.0.1:")),
        "{local:?}"
    );
    let env = std::fs::read_to_string(out.join("environment.json")).unwrap();
    let env: serde_json::Value = serde_json::from_str(&env).unwrap();
    let ns = &env["run"]["netns"];
    assert_eq!(
        ns["server"]["sysctls"]["net.ipv4.tcp_wmem"],
        "4096 16384 524288"
    );
    assert_eq!(
        ns["client"]["sysctls"]["net.ipv4.tcp_wmem"],
        host_before.split_whitespace().collect::<Vec<_>>().join(" ")
    );
}

/// Waits until `pid`'s namespaces exist and its load generator runs.
fn wait_for_namespaces(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while leftovers(pid).len() < 2 {
        assert!(Instant::now() < deadline, "no namespaces appeared");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
}

#[test]
fn namespaces_go_on_sigint_and_after_sigkill_at_the_next_start() {
    let _serial = one_at_a_time();
    if !usable() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut child = reproduce(&tmp.path().join("a"), &["--netns"])
        .spawn()
        .unwrap();
    let pid = child.id();
    wait_for_namespaces(pid);
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(leftovers(pid), Vec::<String>::new(), "left after SIGINT");

    let mut child = reproduce(&tmp.path().join("b"), &["--netns"])
        .spawn()
        .unwrap();
    let pid = child.id();
    wait_for_namespaces(pid);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !leftovers(pid).is_empty(),
        "SIGKILL leaves them to the next start"
    );
    let next: Output = reproduce(&tmp.path().join("c"), &["--netns"])
        .output()
        .unwrap();
    assert!(next.status.success());
    let err = String::from_utf8_lossy(&next.stderr);
    assert!(
        err.contains("network namespace(s) or veth(s) left by an earlier harness"),
        "{err}"
    );
    assert_eq!(
        leftovers(pid),
        Vec::<String>::new(),
        "reaped at the next start"
    );
}

/// `n` runs skipped in `out`'s `runs.csv`, each with one line on stderr
/// that gives `why`.
fn skipped_one_line_each(o: &Output, out: &std::path::Path, why: &str, n: usize) {
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains(why)).collect();
    assert_eq!(lines.len(), n, "{err}");
    assert!(lines.iter().all(|l| l.contains(" skipped: ")), "{err}");
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert_eq!(column(&runs, "status"), vec!["skipped"; n], "{runs}");
}

#[test]
fn without_namespaces_the_runs_are_skipped_with_one_line() {
    let _serial = one_at_a_time();
    let tmp = tempfile::tempdir().unwrap();
    // Two conditions, one line each.
    let two = "gunicorn-sync2,nginx-off,direct,slow=2";
    let out = tmp.path().join("r");
    let o = reproduce_only(&out, two, &["--netns"])
        .env("SLOWLAB_NO_NETNS", "1")
        .output()
        .unwrap();
    skipped_one_line_each(&o, &out, "SLOWLAB_NO_NETNS", 2);

    // The same run unprivileged (as nobody, through setpriv): the real
    // reason, one line per condition.
    let setpriv = std::path::Path::new("/usr/bin/setpriv");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 && setpriv.exists() {
        use std::os::unix::fs::PermissionsExt;
        let shared = tmp.path().join("nobody");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        let out = shared.join("r");
        let as_root = reproduce_only(&out, two, &["--netns"]);
        let o = Command::new(setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(as_root.get_program())
            .args(as_root.get_args())
            .env("SLOWLAB_HOME", state_dir())
            .output()
            .unwrap();
        skipped_one_line_each(&o, &out, "network namespaces need root", 2);
    } else {
        eprintln!("not checked unprivileged: not root or no setpriv");
    }
    let bad = Command::new(slowlab())
        .args(["reproduce", "--sysctl", "net.core.wmem_max=8388608"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not per network namespace"), "{err}");
}

/// Every key `--sysctl` accepts is per namespace on this kernel: set in a
/// namespace, it leaves the host's value alone.
#[test]
fn a_key_set_in_a_namespace_leaves_the_host_alone() {
    testkit::real::require("network namespaces", lab::netns::unavailable());
    let netlab = lab::netns::NetLab::create(&lab::netns::NetSpec::default()).unwrap();
    let path = netlab.server.path();
    for key in lab::netns::ALLOWED {
        let host = lab::netns::read_sysctl_in(None, key).expect(key);
        let inside = lab::netns::read_sysctl_in(Some(&path), key).expect(key);
        // A value that differs from the host's: the max of a triple
        // halved, a flag flipped, a number plus one.
        let mut words: Vec<u64> = inside.split(' ').map(|w| w.parse().unwrap()).collect();
        let single = words.len() == 1;
        let last = words.last_mut().unwrap();
        *last = match *last {
            0 => 1,
            1 if single => 0,
            v if v > 8192 => v / 2,
            v => v + 1,
        };
        let value = words
            .iter()
            .map(|w| w.to_string())
            .collect::<Vec<_>>()
            .join(" ");
        let s = lab::netns::Sysctl {
            side: None,
            key: key.into(),
            value: value.clone(),
        };
        lab::netns::write_sysctl_in(&s, &path).expect(key);
        assert_eq!(
            lab::netns::read_sysctl_in(Some(&path), key).as_deref(),
            Some(value.as_str()),
            "{key}"
        );
        assert_eq!(
            lab::netns::read_sysctl_in(None, key).as_deref(),
            Some(host.as_str()),
            "{key} changed the host's"
        );
    }
}
