//! `slowlab prepare`: the state directory is the binary's checkout's
//! whatever the working directory, and a venv that does not run Gunicorn is
//! rebuilt instead of being reported fine.

use crate::support;

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::process::Command;
use std::time::Duration;

use support::child::Child;

#[test]
fn the_state_directory_does_not_follow_the_working_directory() {
    let cwd = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(support::slowlab());
    cmd.arg("prepare")
        .current_dir(cwd.path())
        .env_remove("SLOWLAB_HOME");
    let out = Child::spawn(cmd).finish(Duration::from_secs(300));
    assert!(out.status.success(), "{}", out.stderr);
    let expected = support::root().join(".slowlab");
    assert!(
        out.stdout
            .contains(&format!("state directory: {}", expected.display())),
        "{}",
        out.stdout
    );
    assert!(
        !cwd.path().join(".slowlab").exists(),
        "prepare created a second .slowlab in the working directory"
    );
}

#[test]
fn a_venv_whose_gunicorn_does_not_run_is_rebuilt() {
    let home = tempfile::tempdir().unwrap();
    let bin = home.path().join("venv/bin");
    fs::create_dir_all(&bin).unwrap();
    // What a venv copied from another path looks like: a python that runs,
    // and scripts whose shebang names an interpreter that is not there.
    symlink("/usr/bin/python3", bin.join("python")).unwrap();
    let script = bin.join("gunicorn");
    fs::write(&script, "#!/nonexistent/venv/bin/python\nimport gunicorn\n").unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    // Keep NGINX and the other packaged proxies from being fetched again: the checkout's
    // unpacked copies.
    for package in [
        "nginx",
        "caddy",
        "haproxy",
        "varnish",
        "apache2-bin",
        "h2o",
        "squid",
    ] {
        let unpacked = support::state_dir().join(package);
        if unpacked.exists() {
            symlink(&unpacked, home.path().join(package)).unwrap();
        }
    }
    let mut cmd = Command::new(support::slowlab());
    cmd.arg("prepare").env("SLOWLAB_HOME", home.path());
    let out = Child::spawn(cmd).finish(Duration::from_secs(300));
    assert!(
        out.stderr.contains("does not run gunicorn") && out.stderr.contains("rebuilding"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("gunicorn 23.0.0"), "{}", out.stdout);
    let version = Command::new(bin.join("gunicorn"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(
        version.status.success(),
        "the rebuilt venv's gunicorn does not run"
    );
}
