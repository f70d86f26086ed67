//! Every route whose edge speaks HTTP/2 over TLS ([`Route::H2`]), its
//! proxy started as the lab starts it: a fresh certificate in the run's
//! scratch directory (its key private), TLS and HTTP/2 at the listener,
//! the app behind. An independent client, curl, that trusts only the
//! run's authority completes the handshake, negotiates `h2` by ALPN, gets
//! `/fast` from the app through it and carries two streams on one
//! connection; a curl that trusts nothing fails the handshake. The load
//! generator's own client learns the streams a connection runs at once,
//! which the catalogue says (`ProxyKind::h2_max_streams`).

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
fn every_tls_edge_terminates_tls_and_http2_with_the_run_s_certificate() {
    testkit::real::require(
        "curl with HTTP/2",
        match curl(&["--version"]) {
            Ok(v) if v.contains("HTTP2") => None,
            Ok(_) => Some("curl lacks HTTP/2".to_string()),
            Err(e) => Some(e),
        },
    );
    let tools = support::stacks::tools();
    for route in Route::H2 {
        let (kind, _) = route.proxy().expect("a proxy route");
        if let Some(tool) = kind.needs() {
            testkit::real::require(tool.name(), tools.unavailable(tool));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let launcher = support::stacks::launcher(&tools, dir.path());
    let app_logs = dir.path().join("app");
    std::fs::create_dir_all(&app_logs).unwrap();
    let app = support::stacks::start(&launcher, Server::RustSync2, &app_logs);
    for route in Route::H2 {
        let logs = dir.path().join(format!("{route}/run"));
        let scratch = dir.path().join(format!("{route}/scratch"));
        std::fs::create_dir_all(&scratch).unwrap();
        std::fs::create_dir_all(&logs).unwrap();
        let paths = RunPaths::new(&logs, &scratch).unwrap();
        let proxy = launcher
            .start_proxy(
                route,
                app.addr,
                &ProxyBuffers::EXPERIMENT,
                &paths,
                None,
                "/fast",
                &Place::host(),
            )
            .unwrap_or_else(|e| panic!("{route} starts with TLS and HTTP/2: {e:#}"))
            .expect("a proxy route");
        let ca = proxy.tls_ca.clone().expect("the run's authority");
        assert!(ca.starts_with(&scratch), "{route}: {}", ca.display());
        use std::os::unix::fs::PermissionsExt;
        for private in std::fs::read_dir(ca.parent().unwrap())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains("key"))
        {
            assert_eq!(
                private.metadata().unwrap().permissions().mode() & 0o777,
                0o600,
                "{route}: {}",
                private.path().display()
            );
        }

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
        .unwrap_or_else(|e| panic!("{route}: a verified TLS handshake and HTTP/2: {e}"));
        assert_eq!(got, "200 2 0", "{route}: status, protocol, verification");
        // How many streams one connection runs at once, as the proxy
        // advertises it (`SETTINGS_MAX_CONCURRENT_STREAMS`, which the load
        // generator's own client reads), is the catalogue's.
        let edge = loadgen::edge::EdgeArgs {
            tls_ca: Some(ca.clone()),
            http2: true,
            ..Default::default()
        };
        let answer = loadgen::probe::edge_get(
            &format!("https://127.0.0.1:{}", proxy.addr.port()),
            &edge,
            "/fast",
            std::time::Duration::from_secs(10),
        )
        .unwrap_or_else(|e| panic!("{route}: the load generator's client: {e:#}"));
        let (kind, _) = route.proxy().unwrap();
        assert_eq!(answer.status, 200, "{route}");
        assert_eq!(
            answer.max_concurrent_streams,
            kind.h2_max_streams().map(|n| n as usize),
            "{route}"
        );
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
        .unwrap_or_else(|e| panic!("{route}: two streams: {e}"));
        let lines: Vec<&str> = two.lines().collect();
        assert_eq!(lines.len(), 2, "{route}: {two}");
        assert!(
            lines.iter().all(|l| l.starts_with("200 2 ")),
            "{route}: {two}"
        );
        // One of them opened the connection, the other rode on it.
        let connects: u32 = lines
            .iter()
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u32>().unwrap())
            .sum();
        assert_eq!(connects, 1, "{route}: {two}");
        // Without the run's authority the certificate is not trusted.
        let untrusted = curl(&["--http2", "-o", "/dev/null", &url]);
        assert!(untrusted.is_err(), "{route}: {untrusted:?}");
        drop(proxy);
    }
    drop(app);
}
