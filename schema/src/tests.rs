//! The schema: every column documented in the book's results files, the files other
//! crates write matching their structs, the headers pinned, and rows that
//! read back as they were written.

use super::*;

/// The book's reference of the results files (its csv:start/csv:end part).
fn readme_csv_section() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../book/src/reference/results-files.md"
    );
    let doc = std::fs::read_to_string(path).expect("the results files' reference");
    doc.split("<!-- csv:start -->")
        .nth(1)
        .and_then(|s| s.split("<!-- csv:end -->").next())
        .expect("the results files' reference has its csv:start/csv:end markers")
        .to_string()
}

fn joined(parts: &[&[&str]]) -> Vec<String> {
    parts
        .iter()
        .flat_map(|p| p.iter().map(|c| c.to_string()))
        .collect()
}

#[test]
fn every_column_of_every_file_is_documented() {
    let docs = readme_csv_section();
    for (file, cols) in schema() {
        assert!(
            docs.contains(&format!("`{file}`")),
            "the results files' reference lacks {file}"
        );
        let undocumented: Vec<&&str> = cols
            .iter()
            .filter(|col| {
                let per_component = ["app_", "proxy_", "loadgen_"]
                    .iter()
                    .filter_map(|c| col.strip_prefix(c))
                    .any(|rest| docs.contains(&format!("`<c>_{rest}`")));
                !docs.contains(&format!("`{col}`")) && !per_component
            })
            .collect();
        assert!(
            undocumented.is_empty(),
            "{file}: {undocumented:?} undocumented"
        );
    }
}

const IDENT_COLUMNS: [&str; 5] = ["run_id", "server", "route", "slow_clients", "repetition"];

#[test]
fn every_per_run_file_starts_with_the_identity() {
    assert_eq!(columns::<Ident>(), IDENT_COLUMNS);
    for (file, cols) in schema() {
        if ![
            CONDITIONS_CSV,
            CROSSCHECK_CSV,
            SWEEP_CSV,
            SWEEP_SUMMARY_CSV,
            CHECK_CSV,
            MODEL_CSV,
        ]
        .contains(&file)
        {
            assert_eq!(cols[..5], IDENT_COLUMNS, "{file}");
        }
    }
    let lead = SweepSummaryRow::default().step_lead();
    let names: Vec<&str> = lead.iter().map(|(k, _)| *k).collect();
    assert_eq!(names, columns::<SweepSummaryRow>()[..5]);
}

#[test]
fn the_files_children_write_are_their_rows_without_the_harness_s_columns() {
    let app = ["app_send_s", "app_bytes", "app_worker"];
    assert_eq!(
        columns::<RequestRow>(),
        joined(&[&IDENT_COLUMNS, columns::<RequestCells>()])
    );
    // The harness's `app_*` columns came before `first_read_bytes`.
    let large = columns::<LargeCells>();
    let later = large
        .iter()
        .position(|c| *c == "first_read_bytes")
        .expect("first_read_bytes");
    let (large, after_app) = large.split_at(later);
    assert_eq!(
        columns::<LargeRow>(),
        joined(&[&IDENT_COLUMNS, large, &app, after_app])
    );
    assert_eq!(
        columns::<ProgressRow>(),
        joined(&[&IDENT_COLUMNS, columns::<ProgressCells>()])
    );
    assert_eq!(
        columns::<UploadRow>(),
        joined(&[&IDENT_COLUMNS, columns::<UploadCells>()])
    );
    assert_eq!(
        columns::<SlowHeaderRow>(),
        joined(&[&IDENT_COLUMNS, columns::<SlowHeaderCells>()])
    );
    for (row, cells) in [
        (columns::<AppSendRow>(), columns::<SendLogCells>()),
        (columns::<AppRecvRow>(), columns::<RecvLogCells>()),
        (columns::<ProxyResponseRow>(), columns::<ProxyStatsCells>()),
        (columns::<GaugeRow>(), columns::<GaugeCells>()),
    ] {
        assert_eq!(row, joined(&[&IDENT_COLUMNS, &["t_s"], cells]));
    }
    let sweep = columns::<SweepRow>();
    let steps = columns::<StepCells>();
    assert_eq!(sweep[5..5 + steps.len()], *steps);
    // The logs' headers as the children (and the WSGI app) write them.
    assert_eq!(
        columns::<SendLogCells>().join(","),
        "start_unix_s,start_s,app_send_s,bytes,worker,complete"
    );
    assert_eq!(
        columns::<RecvLogCells>().join(","),
        "start_unix_s,start_s,app_recv_s,bytes,content_length,pattern_ok,worker,complete"
    );
}

#[test]
fn headers_are_pinned() {
    let mut runs = IDENT_COLUMNS.join(",");
    runs.push_str(
        ",preset,status,reason,started_utc,wall_s,load_s,host_busy_cores,host_steal_ms,\
         fast_requests,fast_ok,fast_errors,p50_ms,p95_ms,p99_ms,max_ms,max_schedule_lag_ms,\
         large_responses,large_ok,app_send_s,client_receive_s,temp_peak_mib",
    );
    for c in ["app", "proxy", "loadgen"] {
        for col in [
            "cpu_cores",
            "throttled_ms",
            "memory_peak_bytes",
            "rss_peak_bytes",
            "cpu_cap_cores",
            "memory_cap_bytes",
        ] {
            runs.push_str(&format!(",{c}_{col}"));
        }
    }
    runs.push_str(
        ",netns,sysctls,direction,slow_kind,link,reader,mtu,p95_error,streams_per_conn,\
         h2_window_bytes",
    );
    assert_eq!(columns::<RunRow>().join(","), runs);
    assert_eq!(
        columns::<ConditionRow>().join(","),
        "server,route,slow_clients,runs,runs_failed,p50,p95,p95_min,p95_max,app_send_s,\
         client_receive_s,temp_peak_mib,fast_requests,fast_errors,max_schedule_lag_ms,\
         app_cpu_cores,published_p95,published_p95_min,published_p95_max,published_app_send_s,\
         published_client_receive_s,published_from,note,direction,netns,sysctls,slow_kind,link,\
         reader,mtu,p95_error,streams_per_conn,h2_window_bytes"
    );
    assert_eq!(
        columns::<CrossRow>().join(","),
        "check,server,route,slow_clients,handlers,absorbs_whole_response,predicted,observed,\
         p95_ms,baseline_p95_ms,baseline_from,reference,reference_observed,reference_p95_ms,\
         p95_ratio,agree,direction,netns,sysctls,slow_kind,link,reader,mtu,p95_error,\
         streams_per_conn,h2_window_bytes"
    );
    assert_eq!(
        columns::<ModelRow>().join(","),
        "server,route,slow_clients,sysctls,runs,body_bytes,slow_rate_bytes_per_s,wmem_max_bytes,\
         rmem_max_bytes,client_rcvbuf_bytes,proxy_hold_bytes,predicted_b_bytes,predicted_app_send_s,\
         observed_app_send_s,explained_b_bytes,explained_app_send_s,ratio,predicted_blocked,\
         observed,p95_ms,netns,slow_kind,link,reader,mtu,app_sndbuf_peak_bytes,sndbuf_as_assumed,\
         proxy_rcvbuf_bytes,streams_per_conn,h2_window_bytes"
    );
    // Every row struct with the condition cells has all of them.
    for cols in [
        columns::<RunRow>(),
        columns::<ConditionRow>(),
        columns::<CrossRow>(),
        columns::<ModelRow>(),
    ] {
        for c in columns::<DimCells>() {
            assert!(cols.contains(c), "{c} missing from {cols:?}");
        }
    }
    assert_eq!(
        columns::<ResourceRow>()[5..].join(","),
        "t_s,component,procs,cpu_s,cpu_source,throttled_ms,nr_throttled,memory_bytes,rss_bytes,\
         temp_files,temp_logical_bytes,temp_allocated_bytes,sockets,send_queue_bytes,\
         recv_queue_bytes,accept_backlog,fds,fd_limit"
    );
    assert_eq!(
        columns::<SocketRow>()[5..].join(","),
        "t_s,component,local,remote,state,tx_queue_bytes,rx_queue_bytes,source,netns,\
         snd_cwnd_segs,snd_mss_bytes,snd_wnd_bytes,rtt_us,rttvar_us,unacked_segs,in_flight_segs,\
         total_retrans_segs,notsent_bytes,bytes_acked,bytes_received,delivery_rate_bytes_per_s,\
         busy_us,rwnd_limited_us,sndbuf_limited_us,rcv_space_bytes,rcv_ssthresh_bytes,\
         rmem_alloc_bytes,rcvbuf_bytes,wmem_alloc_bytes,sndbuf_bytes,wmem_queued_bytes,\
         fwd_alloc_bytes,drops"
    );
    assert_eq!(
        columns::<QdiscRow>()[5..].join(","),
        "t_s,side,dev,kind,sent_bytes,sent_packets,drops,overlimits,backlog_bytes,backlog_packets,\
         class,client_addr"
    );
    assert_eq!(
        columns::<SweepRow>()[..5].join(",") + "|" + &columns::<SweepRow>()[36..].join(","),
        "sweep_id,server,route,slow_clients,caps|app_cpu_cores,proxy_cpu_cores,\
         loadgen_cpu_cores,app_throttled_ms,proxy_throttled_ms,loadgen_saturated"
    );
    assert_eq!(
        columns::<SweepSummaryRow>().join(","),
        "sweep_id,server,route,slow_clients,caps,calls_per_conn,steps,first_error_conn_rate,\
         highest_error_free_conn_rate,highest_error_free_req_rate,\
         highest_error_free_replies_per_s,loadgen_saturated_steps,ports_exhausted_steps"
    );
}

#[test]
fn the_condition_cells_round_trip_through_every_row_struct() {
    let cells = DimCells {
        netns: Some(true),
        sysctls: Some("net.ipv4.tcp_wmem=4096 16384 262144".into()),
        slow_kind: Some("link".into()),
        link: Some("rate=2MiB,burst=20972,limit=209715".into()),
        reader: Some("strict".into()),
        mtu: Some(9000),
        streams_per_conn: Some(8),
        h2_window_bytes: Some(65535),
    };
    let dir = tempfile::tempdir().unwrap();
    fn back<T: serde::Serialize + serde::de::DeserializeOwned>(dir: &std::path::Path, row: T) -> T {
        let path = dir.join("x.csv");
        file::write_whole(&path, &[row]).unwrap();
        file::read_all::<T>(&path).unwrap().remove(0)
    }
    macro_rules! round_trip {
        ($($row:ty)+) => {$({
            let mut row = <$row>::default();
            row.set_dims(cells.clone());
            assert_eq!(back(dir.path(), row).dims(), cells, stringify!($row));
        })+};
    }
    round_trip!(RunRow ConditionRow CrossRow ModelRow);
    // Empty cells read as the versions that left them empty ran: a
    // namespace before the mtu column ran at the veth's 1500; a host run
    // before it recorded no MTU.
    let old = DimCells {
        netns: Some(true),
        ..DimCells::default()
    };
    assert_eq!(old.normal().mtu, Some(1500));
    assert_eq!(DimCells::default().normal().mtu, None);
    // Before the HTTP/2 columns every slow download had its own
    // connection, and no run spoke HTTP/2.
    assert_eq!(DimCells::default().normal().streams_per_conn, Some(1));
    assert_eq!(DimCells::default().normal().h2_window_bytes, None);
    let c = crate::dims::condition_of(
        Some(catalogue::Server::RustSync2),
        Some(catalogue::Route::NginxH2On),
        8,
        Some(catalogue::Direction::Download),
        &cells,
    )
    .unwrap();
    // A planned condition names no window for the default, and its rows
    // read back as it.
    assert_eq!((c.streams_per_conn, c.h2_window), (8, None));
    let planned = catalogue::Condition {
        streams_per_conn: 8,
        ..catalogue::Condition::new(
            catalogue::Server::RustSync2,
            catalogue::Route::NginxH2On,
            8,
            catalogue::Direction::Download,
        )
    };
    assert_eq!(c.streams_per_conn, planned.streams_per_conn);
    assert_eq!(c.h2_window, planned.h2_window);
    let small = DimCells {
        h2_window_bytes: Some(16384),
        ..cells.clone()
    };
    let c = crate::dims::condition_of(
        Some(catalogue::Server::RustSync2),
        Some(catalogue::Route::NginxH2On),
        8,
        Some(catalogue::Direction::Download),
        &small,
    )
    .unwrap();
    assert_eq!(c.h2_window, Some(16384));
}

#[test]
fn a_directory_reads_back_what_was_appended() {
    let dir = tempfile::tempdir().unwrap();
    let ident = Ident {
        run_id: "007".into(),
        server: catalogue::Server::RustSync2.into(),
        route: Named::parse("haproxy-on"),
        slow_clients: 2,
        repetition: 1,
    };
    let mut run = RunRow {
        status: RunStatus::Ok.into(),
        wall_s: Some(12.5),
        p95_ms: Some(2934.125),
        fast_requests: 72,
        fast_ok: 70,
        fast_errors: 2,
        ..RunRow::default()
    };
    run.stamp(&ident);
    run.set_component(
        Component::Proxy,
        ComponentColumns {
            cpu_cores: Some(0.25),
            memory_peak_bytes: Some(1 << 20),
            ..ComponentColumns::default()
        },
    );
    let mut gauge = GaugeRow {
        t_s: Some(1.5),
        conn: 3,
        upstream_read_bytes: 100,
        client_written_bytes: 40,
        ..GaugeRow::default()
    };
    gauge.stamp(&ident);
    let set = ResultSet {
        runs: vec![run.clone()],
        gauge: vec![gauge.clone()],
        missing: vec![Missing {
            file: APP_SENDS_CSV,
            error: None,
        }],
        ..ResultSet::default()
    };
    let mut a = Appenders::create(dir.path()).unwrap();
    a.append(&set).unwrap();
    a.append(&set).unwrap();
    assert!(
        !dir.path().join(APP_SENDS_CSV).exists(),
        "a missing log is not created"
    );
    let text = std::fs::read_to_string(dir.path().join(RUNS_CSV)).unwrap();
    let line = text.lines().nth(1).unwrap();
    assert!(
        line.starts_with("007,rust-sync2,haproxy-on,2,1,,ok,,,12.500,"),
        "{line}"
    );
    assert!(line.contains(",2934.125,"), "{line}");
    let (back, left_out) = ResultSet::concat(&[read_dir(dir.path())], |_, id| {
        let ident = Ident {
            run_id: format!("1{}", id.run_id),
            ..id.clone()
        };
        Some((0, ident))
    });
    assert_eq!(left_out, 0);
    assert_eq!(back.gauge[0].run_id, "1007");
    assert_eq!(back.runs[1].run_id, "1007");
    let back = read_dir(dir.path());
    assert_eq!(back.runs, [run.clone(), run]);
    assert_eq!(back.gauge[0], gauge);
    assert_eq!(
        back.runs[0].component(Component::Proxy).cpu_cores,
        Some(0.25)
    );
    assert_eq!(back.runs[0].route, Named::Unknown("haproxy-on".into()));
    assert!(back.missing.iter().any(|m| m.file == CONDITIONS_CSV));
}
