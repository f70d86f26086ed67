//! Bounds from the stats log: memory never above the configured buffers, the
//! temp file never above its cap, a tiny cap paces the upstream, and a cap of
//! 0 spills nothing.

mod support;

use proxy::Buffering;
use server::Model;
use support::*;

const LARGE: u64 = 16 * 1024 * 1024;
/// Fast enough to keep the tests short, slow enough that the proxy must hold
/// most of the body while the client reads.
const RATE: f64 = 8.0 * 1024.0 * 1024.0;

/// One paced download of `/large` through a proxy with `max_temp_file_size
/// = cap`; returns its stats row.
fn paced_download(buffering: Buffering, cap: u64) -> Row {
    paced_download_at(buffering, cap, RATE)
}

fn paced_download_at(buffering: Buffering, cap: u64, rate: f64) -> Row {
    let origin = origin(Model::Async, Some(2), LARGE);
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = proxy_config(origin.local_addr(), buffering, dir.path());
    cfg.buffers.max_temp_file_size = cap;
    let proxy = start_proxy(cfg);
    let reply = get(proxy.local_addr(), "/large", &Reader::slow(rate));
    assert_eq!(reply.body_len, LARGE);
    assert_eq!(reply.first_bad, None);
    let row = rows(&dir.path().join("stats.csv"), 1)[0].clone();
    eprintln!("{buffering:?} cap {cap}: {row:?}");
    drop(proxy);
    row
}

#[test]
fn default_cap_spills_within_bounds_and_frees_the_upstream_early() {
    let row = paced_download(Buffering::On, 32 << 20);
    assert!(
        row.num("mem_peak_bytes") <= (16 + 4 * 16) as f64 * 1024.0,
        "{row:?}"
    );
    assert!(row.num("mem_peak_bytes") > 0.0);
    let spilled = row.num("spilled_bytes");
    assert!(spilled > 0.0 && spilled <= (32 << 20) as f64, "{row:?}");
    // The whole body was read long before the client had it.
    assert!(
        row.num("upstream_done_s") < 0.3 * row.num("client_done_s"),
        "{row:?}"
    );
}

#[test]
fn tiny_cap_paces_the_upstream() {
    let cap = 64 * 1024;
    let row = paced_download(Buffering::On, cap);
    assert!(row.num("mem_peak_bytes") <= 80.0 * 1024.0, "{row:?}");
    assert!(row.num("spilled_bytes") <= cap as f64, "{row:?}");
    // Backpressure: the upstream is read only as the client drains, so its
    // end comes late, separated from the client's only by what the kernel
    // buffers toward the client hold (a few MiB, under half a second here).
    assert!(
        row.num("upstream_done_s") > 0.5 * row.num("client_done_s"),
        "{row:?}"
    );
}

#[test]
fn zero_cap_spills_nothing() {
    let row = paced_download(Buffering::On, 0);
    assert_eq!(row.num("spilled_bytes"), 0.0, "{row:?}");
    assert!(row.num("mem_peak_bytes") <= 80.0 * 1024.0, "{row:?}");
    assert!(
        row.num("upstream_done_s") > 0.5 * row.num("client_done_s"),
        "{row:?}"
    );
}

#[test]
fn buffering_off_holds_one_buffer() {
    let row = paced_download(Buffering::Off, 32 << 20);
    assert_eq!(row.num("spilled_bytes"), 0.0, "{row:?}");
    assert!(row.num("mem_peak_bytes") <= 16.0 * 1024.0, "{row:?}");
    assert!(
        row.num("upstream_done_s") > 0.5 * row.num("client_done_s"),
        "{row:?}"
    );
}

#[test]
fn gauge_log_samples_open_responses() {
    let origin = origin(Model::Async, Some(2), LARGE);
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = proxy_config(origin.local_addr(), Buffering::On, dir.path());
    cfg.gauge_log = Some(dir.path().join("gauge.csv"));
    cfg.gauge_interval = std::time::Duration::from_millis(50);
    let proxy = start_proxy(cfg);
    let reply = get(proxy.local_addr(), "/large", &Reader::slow(RATE));
    assert_eq!(reply.body_len, LARGE);
    drop(proxy);
    let text = std::fs::read_to_string(dir.path().join("gauge.csv")).unwrap();
    let mut lines = text.lines();
    let header = schema::child::header_line::<schema::GaugeCells>();
    assert_eq!(lines.next(), Some(header.trim_end()));
    assert!(header.starts_with(
        "t_unix_s,conn,upstream_read_bytes,client_written_bytes,mem_bytes,file_bytes,"
    ));
    let samples: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    // About two seconds at 50 ms: a generous lower bound for a busy machine.
    assert!(samples.len() >= 10, "{} samples", samples.len());
    for s in &samples {
        assert_eq!(s.len(), 10);
        assert_eq!(&s[6..], [0.0; 4], "a GET has no request body: {s:?}");
        assert!(s[3] <= s[2], "client never ahead of upstream: {s:?}");
        assert!(s[4] <= 80.0 * 1024.0, "memory within buffers: {s:?}");
    }
    assert!(samples.iter().any(|s| s[5] > 0.0), "the spill shows");
}

/// Ten slow downloads at once through one buffering proxy, with a temp-file
/// cap (4 MiB) below the body, so that memory, file and backpressure all
/// take part: every response keeps within its buffers and its cap, and at
/// every gauge sample the open responses together hold no more than ten
/// times that.
#[test]
fn ten_concurrent_slow_downloads_stay_within_the_bounds() {
    const N: usize = 10;
    const CAP: u64 = 4 << 20;
    const MEM: f64 = ((16 + 4 * 16) * 1024) as f64;
    let origin = origin(Model::Async, Some(2), LARGE);
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = proxy_config(origin.local_addr(), Buffering::On, dir.path());
    cfg.buffers.max_temp_file_size = CAP;
    cfg.gauge_log = Some(dir.path().join("gauge.csv"));
    cfg.gauge_interval = std::time::Duration::from_millis(50);
    let proxy = start_proxy(cfg);
    let addr = proxy.local_addr();
    let start = std::sync::Arc::new(std::sync::Barrier::new(N));
    let readers: Vec<_> = (0..N)
        .map(|_| {
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                get(addr, "/large", &Reader::slow(RATE))
            })
        })
        .collect();
    for reader in readers {
        let reply = reader.join().expect("reader thread");
        assert_eq!(reply.body_len, LARGE);
        assert_eq!(reply.first_bad, None);
    }
    let rows = rows(&dir.path().join("stats.csv"), N);
    drop(proxy);
    for row in &rows {
        assert_eq!(row.get("error"), "", "{row:?}");
        assert!(row.num("mem_peak_bytes") <= MEM, "{row:?}");
        let spilled = row.num("spilled_bytes");
        assert!(spilled > 0.0 && spilled <= CAP as f64, "{row:?}");
    }
    // Per sample instant: how many responses were open and what they held.
    let text = std::fs::read_to_string(dir.path().join("gauge.csv")).unwrap();
    let mut samples: std::collections::BTreeMap<String, (usize, f64, f64)> = Default::default();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (mem, file): (f64, f64) = (f[4].parse().unwrap(), f[5].parse().unwrap());
        assert!(
            mem <= MEM && file <= CAP as f64,
            "one response over its bounds: {line}"
        );
        let s = samples.entry(f[0].to_string()).or_default();
        *s = (s.0 + 1, s.1 + mem, s.2 + file);
    }
    let most_open = samples.values().map(|s| s.0).max().unwrap_or(0);
    assert_eq!(most_open, N, "all ten were open at once");
    for (t, (open, mem, file)) in &samples {
        assert!(*open <= N, "{t}: {open} open");
        assert!(*mem <= N as f64 * MEM, "{t}: {mem} bytes in memory");
        assert!(
            *file <= (N as u64 * CAP) as f64,
            "{t}: {file} bytes in temp files"
        );
    }
}
