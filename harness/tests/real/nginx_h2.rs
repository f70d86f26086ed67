//! Real NGINX on the `nginx-h2-on` route as the lab starts it: a fresh
//! certificate in the run's scratch directory, TLS and HTTP/2 at the
//! listener, HTTP/1.0 to the app. A client that trusts only the run's
//! authority completes the handshake, negotiates `h2` by ALPN and gets
//! `/fast` from the app through it; a client that trusts nothing fails
//! the handshake.

use crate::support;

use std::process::Command;

use catalogue::{ProxyBuffers, Route, Server};
use lab::netns::Place;
use lab::stack::launch::RunPaths;

/// `curl` with `args`: its stdout, or why it failed.
fn curl(args: &[&str]) -> Result<String, String> {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "10"])
        .args(args)
        .output()
        .map_err(|e| format!("curl: {e}"))?;
    match out.status.success() {
        true => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

#[test]
fn nginx_h2_on_terminates_tls_and_http2_with_the_run_s_certificate() {
    testkit::real::require(
        "curl with HTTP/2",
        match curl(&["--version"]) {
            Ok(v) if v.contains("HTTP2") => None,
            Ok(_) => Some("curl lacks HTTP/2".to_string()),
            Err(e) => Some(e),
        },
    );
    let tools = support::stacks::tools();
    testkit::real::require("NGINX", tools.nginx().err());
    let dir = tempfile::tempdir().unwrap();
    let launcher = support::stacks::launcher(&tools, dir.path());
    let logs = dir.path().join("run");
    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    std::fs::create_dir_all(&logs).unwrap();
    let app = support::stacks::start(&launcher, Server::RustSync2, &logs);
    let paths = RunPaths::new(&logs, &scratch).unwrap();
    let proxy = launcher
        .start_proxy(
            Route::NginxH2On,
            app.addr,
            &ProxyBuffers::EXPERIMENT,
            &paths,
            None,
            "/fast",
            &Place::host(),
        )
        .expect("NGINX starts with TLS and HTTP/2")
        .expect("a proxy route");
    let ca = proxy.tls_ca.clone().expect("the run's authority");
    assert!(ca.starts_with(&scratch), "{}", ca.display());
    let key = ca.with_file_name("key.pem");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let conf = std::fs::read_to_string(logs.join("nginx.conf")).unwrap();
    assert!(conf.contains(" ssl http2;"), "{conf}");

    let url = format!("https://127.0.0.1:{}/fast", proxy.addr.port());
    let ca_arg = ca.to_string_lossy().into_owned();
    let got = curl(&[
        "--http2",
        "--cacert",
        &ca_arg,
        "-o",
        "/dev/null",
        "-w",
        "%{http_code} %{http_version} %{ssl_verify_result}",
        &url,
    ])
    .expect("a verified TLS handshake and an HTTP/2 request");
    assert_eq!(got, "200 2 0", "status, protocol, verification");
    // Two streams on one connection: curl multiplexes them.
    let two = curl(&[
        "--http2",
        "--cacert",
        &ca_arg,
        "--parallel",
        "-o",
        "/dev/null",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code} %{http_version} %{num_connects}\n",
        &url,
        &url,
    ])
    .expect("two streams");
    let lines: Vec<&str> = two.lines().collect();
    assert_eq!(lines.len(), 2, "{two}");
    assert!(lines.iter().all(|l| l.starts_with("200 2 ")), "{two}");
    // One of them opened the connection, the other rode on it.
    let connects: u32 = lines
        .iter()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u32>().unwrap())
        .sum();
    assert_eq!(connects, 1, "{two}");
    // Without the run's authority the certificate is not trusted.
    let untrusted = curl(&["--http2", "-o", "/dev/null", &url]);
    assert!(untrusted.is_err(), "{untrusted:?}");
    drop(proxy);
    drop(app);
}
