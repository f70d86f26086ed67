//! Checks of the report's request-direction section against the raw CSV
//! files of a real run: every figure of its tables recomputed from the
//! files (read with the csv crate, not the harness's row structs), and its
//! sentences held to the figures and verdicts they quote.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use common::stats::median;
use report::doc::{Block, Inline, Section, Table};
use report::{self, data::Results, fmt};

pub type Rec = HashMap<String, String>;

/// `slowlab reproduce` of one repetition of the conditions of `preset`
/// that match `only`, with `flags`, into `out`, without the report; the
/// caller adds what else it needs and runs it.
pub fn reproduce_command(preset: &str, out: &Path, only: &str, flags: &[&str]) -> Command {
    let mut cmd = Command::new(super::slowlab());
    cmd.args([
        "reproduce",
        "--preset",
        preset,
        "--runs",
        "1",
        "--no-report",
    ])
    .args(["--only", only])
    .args(flags)
    .arg("--out")
    .arg(out)
    .env("SLOWLAB_HOME", super::state_dir());
    cmd
}

/// Runs [`reproduce_command`] and asserts that it succeeded.
pub fn reproduce(preset: &str, out: &Path, only: &str, flags: &[&str]) {
    let o = reproduce_command(preset, out, only, flags)
        .output()
        .expect("run slowlab reproduce");
    assert!(
        o.status.success(),
        "reproduce exited with {}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Every row of a CSV file as column -> cell.
pub fn records(path: &Path) -> Vec<Rec> {
    let mut rd = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let h = rd.headers().unwrap().clone();
    rd.records()
        .map(|r| {
            let r = r.unwrap();
            h.iter()
                .zip(r.iter())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn num(r: &Rec, col: &str) -> Option<f64> {
    r.get(col).and_then(|v| v.parse().ok())
}

/// The request section of the report of `dir`.
pub fn section(dir: &Path) -> Section {
    let doc = report::build(&report::data::load(dir).unwrap());
    doc.sections
        .into_iter()
        .find(|s| s.id == report::request::ID)
        .expect("a request-direction section")
}

fn plain(t: &[Inline]) -> String {
    t.iter()
        .map(|i| match i {
            Inline::Text(s) | Inline::Strong(s) => s.clone(),
            Inline::Code(s) => format!("`{s}`"),
        })
        .collect()
}

/// The section's running text, paragraphs and notes joined.
pub fn prose(s: &Section) -> String {
    s.blocks
        .iter()
        .filter_map(|b| match b {
            Block::Para(t) | Block::Note(t) => Some(plain(t)),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The table whose third column is `col`.
pub fn table<'a>(s: &'a Section, col: &str) -> &'a Table {
    s.blocks
        .iter()
        .find_map(|b| match b {
            Block::Table(t) if t.header.get(2).is_some_and(|h| h == col) => Some(t),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no table with a {col:?} column"))
}

fn is(r: &Rec, col: &str, v: &str) -> bool {
    r.get(col).is_some_and(|x| x == v)
}

/// The observed verdict of `crosscheck.csv`, or a dash.
fn observed(dir: &Path, direction: &str, server: &str, route: &str, slow: &str) -> String {
    records(&dir.join("crosscheck.csv"))
        .into_iter()
        .find(|c| {
            is(c, "check", "prediction")
                && is(c, "direction", direction)
                && is(c, "server", server)
                && is(c, "route", route)
                && is(c, "slow_clients", slow)
        })
        .map(|c| c["observed"].clone())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "–".into())
}

/// The p95 table of `direction` holds every condition of `conditions.csv`
/// in that direction, with its runs, p95 and observed verdict.
pub fn check_p95_table(dir: &Path, s: &Section, direction: &str, col: &str) {
    let t = table(s, col);
    let conds: Vec<Rec> = records(&dir.join("conditions.csv"))
        .into_iter()
        .filter(|c| is(c, "direction", direction))
        .collect();
    assert_eq!(
        t.rows.len(),
        conds.len(),
        "one row per {direction} condition"
    );
    for row in &t.rows {
        let c = conds
            .iter()
            .find(|c| {
                is(c, "server", &row[0])
                    && is(c, "route", &row[1])
                    && is(c, "slow_clients", &row[2])
            })
            .unwrap_or_else(|| panic!("{row:?} is not in conditions.csv"));
        assert_eq!(row[3], c["runs"], "{row:?}");
        assert_eq!(row[4], p95_cell(c), "{row:?}");
        assert_eq!(
            row[6],
            observed(dir, direction, &row[0], &row[1], &row[2]),
            "{row:?}"
        );
    }
}

/// A condition's p95 cell from `conditions.csv`: its figure, or what it
/// fell among (`p95_error`), never a number.
fn p95_cell(c: &Rec) -> String {
    match (num(c, "p95"), c.get("p95_error").map(String::as_str)) {
        (None, Some("timeout")) => "timed out".into(),
        (None, Some(k)) if !k.is_empty() => format!("failed ({})", k.replace(';', ", ")),
        (p, _) => fmt::or_dash(p, fmt::ms),
    }
}

/// The ids of the completed runs of a condition.
fn run_ids(dir: &Path, direction: &str, server: &str, route: &str, slow: &str) -> Vec<String> {
    records(&dir.join("runs.csv"))
        .into_iter()
        .filter(|r| {
            is(r, "direction", direction)
                && is(r, "server", server)
                && is(r, "route", route)
                && is(r, "slow_clients", slow)
                && is(r, "status", "ok")
        })
        .map(|r| r["run_id"].clone())
        .collect()
}

/// The sentence of the section's prose about one route of a server.
fn sentence<'a>(text: &'a str, lead: &str, server: &str, route: &str) -> &'a str {
    let words = if route == "direct" {
        "straight to the app".to_string()
    } else {
        format!("behind `{route}`")
    };
    let start = format!("{lead}`{server}` {words}");
    let i = text
        .find(&start)
        .unwrap_or_else(|| panic!("no sentence starting {start:?} in:\n{text}"));
    let rest = &text[i..];
    // A sentence ends at a full stop before a space or the paragraph's end.
    let end = [". ", ".\n"]
        .iter()
        .filter_map(|stop| rest.find(stop))
        .min()
        .map_or(rest.len(), |e| e + 1);
    &rest[..end]
}

/// The upload part: the p95 table, the receive table and its sentences,
/// the where-the-bytes table, each against the files.
pub fn check_upload_section(dir: &Path) {
    let s = section(dir);
    check_p95_table(dir, &s, "upload", "slow uploaders");
    let text = prose(&s);
    let uploads = records(&dir.join("uploads.csv"));
    let recvs = records(&dir.join("app-recvs.csv"));
    let recv = table(&s, "uploads (completed)");
    assert!(!recv.rows.is_empty());
    for row in &recv.rows {
        let ids = run_ids(dir, "upload", &row[0], &row[1], "2");
        let ups: Vec<&Rec> = uploads
            .iter()
            .filter(|u| ids.contains(&u["run_id"]))
            .collect();
        let done = ups.iter().filter(|u| is(u, "status", "200")).count();
        assert_eq!(row[2], format!("{} ({done})", ups.len()), "{row:?}");
        let send = median(
            &ups.iter()
                .filter_map(|u| num(u, "send_s"))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let app: Vec<&Rec> = recvs
            .iter()
            .filter(|a| ids.contains(&a["run_id"]) && is(a, "complete", "true"))
            .collect();
        let got = median(
            &app.iter()
                .filter_map(|a| num(a, "app_recv_s"))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        assert_eq!(row[3], fmt::secs(send), "{row:?}");
        assert_eq!(row[4], fmt::secs(got), "{row:?}");
        assert_eq!(row[5], format!("{:.2}", got / send), "{row:?}");
        let ok = app.iter().filter(|a| is(a, "pattern_ok", "true")).count();
        assert_eq!(row[7], format!("{ok} of {}", app.len()), "{row:?}");
        // The sentence quotes these figures and says held exactly when the
        // app read for at least half the client's time.
        let said = sentence(&text, "With 2 slow uploaders of ", &row[0], &row[1]);
        assert!(
            said.contains(&fmt::secs(got)) && said.contains(&fmt::secs(send)),
            "{said}"
        );
        let held = got >= report::request::HELD_SHARE * send;
        assert_eq!(said.contains("held for the whole upload"), held, "{said}");
        assert_eq!(
            said.contains("took the slow upload off the handler"),
            !held,
            "{said}"
        );
        let v = observed(dir, "upload", &row[0], &row[1], "2");
        assert!(
            said.ends_with(&format!("(observed: {v}).")),
            "crosscheck says {v}: {said}"
        );
        // What the run showed: request buffering on frees the handler.
        let buffering = row[1].ends_with("reqbuf-on");
        assert_eq!(held, !buffering, "{row:?}");
    }
    let routes: Vec<&str> = recv.rows.iter().map(|r| r[1].as_str()).collect();
    let concluded = text.contains("So the proxy alone does not help");
    let on = routes.iter().any(|r| r.ends_with("reqbuf-on"));
    let off = routes.iter().any(|r| r.ends_with("reqbuf-off"));
    assert_eq!(concluded, on && off, "{text}");
    check_bytes_table(dir, &s, &text);
}

/// The where-the-bytes table: each layer recomputed from the samples at
/// the row's `t` (the socket samples, pingora's gauge, NGINX's temp files).
fn check_bytes_table(dir: &Path, s: &Section, text: &str) {
    let sockets = records(&dir.join("socket-samples.csv"));
    let gauge = if dir.join("proxy-gauge.csv").exists() {
        records(&dir.join("proxy-gauge.csv"))
    } else {
        Vec::new()
    };
    let resources = records(&dir.join("resource-samples.csv"));
    let t = table(s, "at t");
    assert!(!t.rows.is_empty());
    for row in &t.rows {
        let ids = run_ids(dir, "upload", &row[0], &row[1], "2");
        assert_eq!(ids.len(), 1, "one run per condition here");
        let id = &ids[0];
        let at: f64 = row[2].trim_end_matches(" s").parse().unwrap();
        let here: Vec<&Rec> = sockets
            .iter()
            .filter(|x| &x["run_id"] == id && (num(x, "t_s").unwrap() - at).abs() < 1e-6)
            .collect();
        assert!(!here.is_empty(), "{row:?}: no socket sample at {at}");
        let q = |x: &Rec, c: &str| num(x, c).unwrap_or(0.0);
        let comp = |x: &Rec, c: &str| is(x, "component", c) && !is(x, "state", "LISTEN");
        let app_ports: Vec<String> = sockets
            .iter()
            .filter(|x| &x["run_id"] == id && is(x, "component", "app") && is(x, "state", "LISTEN"))
            .map(|x| x["local"].rsplit(':').next().unwrap().to_string())
            .collect();
        let upstream = |x: &Rec| {
            app_ports
                .iter()
                .any(|p| x["remote"].ends_with(&format!(":{p}")))
        };
        let client: f64 = here
            .iter()
            .filter(|x| comp(x, "loadgen"))
            .map(|x| q(x, "tx_queue_bytes"))
            .fold(0.0, |a, b| a + b);
        let between: f64 = here
            .iter()
            .map(|x| {
                if comp(x, "app") {
                    q(x, "rx_queue_bytes")
                } else if comp(x, "proxy") && upstream(x) {
                    q(x, "tx_queue_bytes")
                } else if comp(x, "proxy") {
                    q(x, "rx_queue_bytes")
                } else {
                    0.0
                }
            })
            .fold(0.0, |a, b| a + b);
        let read: f64 = here
            .iter()
            .filter(|x| comp(x, "app"))
            .map(|x| (q(x, "bytes_received") - q(x, "rx_queue_bytes")).max(0.0))
            // An empty f64 sum is -0.0, which prints as "-0 bytes".
            .fold(0.0, |a, b| a + b);
        assert_eq!(row[4], fmt::bytes(client), "{row:?}");
        assert_eq!(row[5], fmt::bytes(between), "{row:?}");
        assert_eq!(
            row[8],
            fmt::bytes(read),
            "{row:?}: halfway, no upload has ended"
        );
        let latest = |rows: Vec<(f64, f64)>| -> Option<(f64, f64)> {
            let mut by: std::collections::BTreeMap<i64, f64> = Default::default();
            for (t, v) in rows.into_iter().filter(|(t, _)| *t <= at + 1e-9) {
                *by.entry((t * 1000.0).round() as i64).or_default() += v;
            }
            by.into_iter()
                .next_back()
                .map(|(k, v)| (k as f64 / 1000.0, v))
        };
        let (file, mem) = if row[1].starts_with("pingora") {
            let tick = |col: &str| {
                let series = gauge
                    .iter()
                    .filter(|g| &g["run_id"] == id)
                    .map(|g| (num(g, "t_s").unwrap(), q(g, col)))
                    .collect();
                latest(series)
                    .filter(|(t, _)| at - t <= 1.0)
                    .map_or(0.0, |x| x.1)
            };
            (tick("req_file_bytes"), Some(tick("req_mem_bytes")))
        } else if row[1].starts_with("nginx") {
            let series = resources
                .iter()
                .filter(|x| &x["run_id"] == id && is(x, "component", "proxy"))
                .filter_map(|x| Some((num(x, "t_s")?, num(x, "temp_logical_bytes")?)))
                .collect();
            (latest(series).unwrap().1, None)
        } else {
            (0.0, Some(0.0))
        };
        assert_eq!(row[7], fmt::bytes(file), "{row:?}");
        assert_eq!(
            row[6],
            mem.map_or("not sampled".into(), fmt::bytes),
            "{row:?}"
        );
        // Request buffering on: the proxy holds the body, the app has none.
        if row[1].ends_with("reqbuf-on") {
            assert!(file > 0.0 && read == 0.0, "{row:?}");
            assert!(
                text.contains(&format!(
                    "(`{}`) held {}",
                    row[1],
                    fmt::bytes(file + mem.unwrap_or(0.0))
                )),
                "{text}"
            );
        } else {
            assert!(read > 0.0 && file == 0.0, "{row:?}");
        }
    }
    let nginx = t.rows.iter().any(|r| r[1].starts_with("nginx"));
    assert_eq!(
        text.contains("NGINX's memory buffers are not sampled"),
        nginx,
        "{text}"
    );
}

/// The slowloris part: the p95 table against the files, and one clause per
/// route at 2 clients with its p95 and verdict.
pub fn check_headers_section(dir: &Path) {
    let s = section(dir);
    check_p95_table(dir, &s, "headers", "slowloris clients");
    let text = prose(&s);
    let lead = text
        .find("With 2 slowloris clients: ")
        .map(|i| &text[i..])
        .unwrap_or_else(|| panic!("no slowloris sentence in:\n{text}"));
    for c in records(&dir.join("conditions.csv"))
        .iter()
        .filter(|c| is(c, "direction", "headers") && is(c, "slow_clients", "2"))
    {
        let (server, route) = (&c["server"], &c["route"]);
        let v = observed(dir, "headers", server, route, "2");
        if num(c, "p95").is_none() && is(c, "p95_error", "timeout") {
            // Every run's p95 fell on timed-out requests: said so, blocked.
            let said = sentence(lead, "", server, route);
            assert!(said.contains(": p95 timed out"), "{said}");
            assert_eq!(v, "blocked", "{c:?}");
            assert!(said.ends_with(&format!("(observed: {v}).")), "{said}");
            continue;
        }
        let Some(p95) = num(c, "p95") else {
            let words = if route == "direct" {
                "straight to the app".into()
            } else {
                format!("behind `{route}`")
            };
            assert!(
                !lead.contains(&format!("`{server}` {words}")),
                "no p95, no sentence: {lead}"
            );
            continue;
        };
        let said = sentence(lead, "", server, route);
        assert!(said.contains(&format!("p95 {}", fmt::ms(p95))), "{said}");
        assert!(said.ends_with(&format!("(observed: {v}).")), "{said}");
    }
}
