use super::*;
use crate::error::{ErrorKind, Failure};
use crate::record::{SlowHeaderRecord, UploadRecord, Verified};
use crate::sys::{CpuTime, HostInfo};

fn report() -> Report {
    Report {
        target: "http://127.0.0.1:8000".into(),
        labels: vec![
            ("server".into(), "rust-sync2".into()),
            ("route".into(), "direct".into()),
        ],
        t0_unix_s: 1_700_000_000.5,
        elapsed_s: 9.2,
        fast_began_s: 0.25,
        settled: crate::settle::Settled::Start,
        fast: vec![
            FastRecord {
                seq: 0,
                scheduled_s: 0.25,
                started_s: 0.250_012,
                schedule_lag_ms: 0.012,
                connect_ms: Some(0.1),
                first_byte_ms: Some(0.4),
                latency_ms: Some(0.5),
                status: Some(200),
                bytes: 12,
                error: None,
                tls_ms: None,
                protocol: catalogue::Edge::CLEARTEXT_HTTP1,
            },
            FastRecord {
                seq: 1,
                scheduled_s: 0.375,
                started_s: 0.375,
                schedule_lag_ms: 0.0,
                connect_ms: Some(0.1),
                first_byte_ms: None,
                latency_ms: None,
                status: None,
                bytes: 0,
                error: Some(Failure::new(ErrorKind::Timeout, "30s")),
                tls_ms: None,
                protocol: catalogue::Edge::CLEARTEXT_HTTP1,
            },
        ],
        large: vec![LargeRecord {
            client: 0,
            started_s: 0.000_1,
            connect_ms: Some(0.2),
            first_byte_ms: Some(1.0),
            status: Some(200),
            bytes: 16 << 20,
            content_length: Some(16 << 20),
            receive_s: Some(8.001),
            rcvbuf_requested_bytes: Some(8192),
            rcvbuf_granted_bytes: Some(16384),
            first_read_bytes: Some(4279),
            verified: Verified::Pattern,
            error: None,
            reader: crate::config::ReaderModel::Streamreader,
            loop_lag: Some(std::time::Duration::from_micros(95)),
            protocol: catalogue::Edge::CLEARTEXT_HTTP1,
            connection: 0,
            h2: None,
        }],
        progress: vec![ProgressRow {
            t_s: 0.1,
            client: 0,
            received_bytes: 200_000,
            consumed_bytes: 180_000,
            socket_queue_bytes: Some(0),
            user_buffer_bytes: Some(20_000),
            reading_paused: Some(false),
        }],
        uploads: vec![UploadRecord {
            client: 0,
            started_s: 0.000_2,
            connect_ms: Some(0.3),
            send_s: Some(7.992_188),
            bytes_sent: 16 << 20,
            upload_bytes: 16 << 20,
            first_byte_ms: Some(8000.5),
            status: Some(200),
            server_bytes: Some(16 << 20),
            pattern_ok: Some(true),
            sndbuf_requested_bytes: 8192,
            sndbuf_granted_bytes: Some(16384),
            error: None,
        }],
        slow_headers: vec![SlowHeaderRecord {
            client: 0,
            started_s: 0.000_3,
            connect_ms: Some(0.1),
            header_lines: 9,
            held_s: Some(9.1),
            ended: crate::slowloris::HeadersEnd::RunEnd,
            status: None,
            error: None,
        }],
        cpu: CpuTime::default(),
        host: HostInfo::default(),
        scheduler: Default::default(),
        engine_threads: 1,
        interrupted: None,
    }
}

fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .expect("readable")
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn the_request_direction_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = report();
    write_all(dir.path(), &r, &Summary::of(&r)).expect("writes");
    assert_eq!(
        lines(&dir.path().join(UPLOADS_CSV)),
        [
            format!("server,route,{}", columns::<UploadCells>().join(",")),
            "rust-sync2,direct,0,0.000200,0.300,7.992188,16777216,16777216,8000.500,200,16777216,true,8192,16384,".into(),
        ]
    );
    assert_eq!(
        lines(&dir.path().join(SLOW_HEADERS_CSV))[1],
        "rust-sync2,direct,0,0.000300,0.100,9,9.100000,run_end,,"
    );
    let summary = Summary::of(&r);
    assert_eq!((summary.uploads.count, summary.uploads.ok), (1, 1));
    assert_eq!(summary.uploads.send_s_median, Some(7.992_188));
    assert_eq!(summary.slow_headers.held_to_end, 1);
    // A run without such clients writes neither file.
    let dir = tempfile::tempdir().expect("tempdir");
    let r = Report {
        uploads: Vec::new(),
        slow_headers: Vec::new(),
        ..report()
    };
    write_all(dir.path(), &r, &Summary::of(&r)).expect("writes");
    assert!(!dir.path().join(UPLOADS_CSV).exists());
    assert!(!dir.path().join(SLOW_HEADERS_CSV).exists());
}

#[test]
fn csv_headers_are_pinned() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = report();
    write_all(dir.path(), &r, &Summary::of(&r)).expect("writes");
    assert_eq!(
        lines(&dir.path().join("requests.csv"))[0],
        "server,route,seq,scheduled_s,started_s,schedule_lag_ms,connect_ms,first_byte_ms,latency_ms,status,bytes,error,tls_ms,protocol"
    );
    assert_eq!(
        lines(&dir.path().join("large-responses.csv"))[0],
        "server,route,client,started_s,connect_ms,first_byte_ms,status,bytes,content_length,receive_s,rcvbuf_requested_bytes,rcvbuf_granted_bytes,verified,error,reader,first_read_bytes,loop_lag_us,protocol,connection,streams_per_conn,h2_window_bytes,h2_conn_window_bytes,h2_unconsumed_peak_bytes"
    );
    assert_eq!(
        lines(&dir.path().join("slow-progress.csv"))[0],
        "server,route,t_s,client,received_bytes,consumed_bytes,socket_queue_bytes,user_buffer_bytes,reading_paused"
    );
}

#[test]
fn rows_use_empty_cells_for_missing_values() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = report();
    write_all(dir.path(), &r, &Summary::of(&r)).expect("writes");
    let req = lines(&dir.path().join("requests.csv"));
    assert_eq!(
        req[1],
        "rust-sync2,direct,0,0.250000,0.250012,0.012,0.100,0.400,0.500,200,12,,,http/1.1"
    );
    assert_eq!(
        req[2],
        "rust-sync2,direct,1,0.375000,0.375000,0.000,0.100,,,,0,timeout,,http/1.1"
    );
    let large = lines(&dir.path().join("large-responses.csv"));
    assert_eq!(
        large[1],
        "rust-sync2,direct,0,0.000100,0.200,1.000,200,16777216,16777216,8.001000,8192,16384,pattern,,streamreader,4279,95.000,http/1.1,0,,,,"
    );
    let progress = lines(&dir.path().join("slow-progress.csv"));
    assert_eq!(
        progress[1],
        "rust-sync2,direct,0.100000,0,200000,180000,0,20000,false"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.path().join("summary.json")).expect("json"))
            .expect("parses");
    assert_eq!(summary["t0_unix_s"], 1_700_000_000.5);
    assert_eq!(summary["labels"]["server"], "rust-sync2");
    assert_eq!(summary["fast"]["errors"]["timeout"], 1);
    assert_eq!(summary["errors"]["timeout"], 1);
    assert!(lines(&dir.path().join("latency.hgrm"))[0].contains("Percentile"));
}

#[test]
fn labels_cannot_shadow_columns() {
    assert!(is_column_name("seq"));
    assert!(is_column_name("verified"));
    assert!(is_column_name("t_s"));
    assert!(!is_column_name("server"));
}

#[test]
fn out_is_probed_before_the_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("a/b");
    super::probe(&out).expect("creatable");
    assert!(out.is_dir());
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        0,
        "the probe is removed"
    );
    for bad in ["/proc/x", "/proc/self/status/x"] {
        let err = super::probe(std::path::Path::new(bad)).expect_err(bad);
        assert!(err.is::<common::exit::BadInput>(), "{err}");
        assert!(
            err.to_string().starts_with(&format!("--out {bad}: ")),
            "{err}"
        );
    }
}
