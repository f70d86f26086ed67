//! The proxy as a TLS and HTTP/2 edge: one client connection carrying two
//! slow HTTP/2 downloads holds both workers of `sync --workers 2` through
//! `--buffering off`, and `/fast` waits; through `--buffering on` it is
//! answered at once. The client is `slowlab load --http2` itself, trusting
//! only the authority made for the test.

mod support;

use std::time::Duration;

use catalogue::Edge;
use clap::Parser;
use common::tls::LabCertificate;
use proxy::Buffering;
use proxy::edge::TlsEdge;
use server::Model;
use support::*;

#[derive(Parser)]
struct Cmd {
    #[command(flatten)]
    args: loadgen::LoadArgs,
}

/// The load's report through a TLS/HTTP/2 proxy with `buffering`.
fn two_streams_on_one_connection(buffering: Buffering) -> loadgen::Report {
    let origin = origin(Model::Sync, Some(2), 16 << 20);
    let dir = tempfile::tempdir().unwrap();
    let files = LabCertificate::generate_into(dir.path()).unwrap();
    let mut cfg = proxy_config(origin.local_addr(), buffering, dir.path());
    cfg.tls = Some(TlsEdge::new(&files.cert, &files.key, true).unwrap());
    let proxy = start_proxy(cfg);
    let url = format!("https://{}", proxy.local_addr());
    let ca = files.ca.display().to_string();
    let words = [
        "load",
        "--target",
        &url,
        "--tls-ca",
        &ca,
        "--http2",
        "--slow",
        "2",
        "--streams-per-conn",
        "2",
        "--slow-rate",
        "2MiB",
        "--fast-rate",
        "10",
        "--fast-start",
        "1s",
        "--fast-duration",
        "1s",
        "--timeout",
        "3s",
        "--end-with-fast",
    ];
    let args = Cmd::try_parse_from(words).unwrap().args;
    let config = loadgen::LoadConfig::from_args(&args).unwrap();
    let report = loadgen::run_load(&config).unwrap();
    eprintln!("{buffering:?}: {}", loadgen::Summary::of(&report));
    drop(proxy);
    report
}

#[test]
fn two_slow_streams_of_one_connection_hold_both_workers_unless_buffered() {
    let off = two_streams_on_one_connection(Buffering::Off);
    assert!(
        off.large
            .iter()
            .all(|d| d.connection == 0 && d.protocol == Edge::H2)
    );
    assert!(!off.fast.is_empty());
    // Every /fast waited for a worker the slow streams held.
    for f in &off.fast {
        assert!(
            f.latency_ms.is_none_or(|ms| ms > 1000.0),
            "answered at once behind buffering off: {f:?}"
        );
    }
    let on = two_streams_on_one_connection(Buffering::On);
    for f in &on.fast {
        assert!(f.ok(), "{f:?}");
        let ms = f.latency_ms.unwrap();
        assert!(ms < Duration::from_millis(500).as_secs_f64() * 1e3, "{f:?}");
        assert!(f.tls_ms.is_some() && f.protocol == Edge::H2, "{f:?}");
    }
}
