//! `slowlab report` on a small committed fixture (a real quick run, trimmed):
//! the six sections with inline SVG, nothing fetched from elsewhere, every
//! SVG well-formed XML, the lesson's numbers taken from the data, missing
//! files named, bad directories refused, and the page rendered by a real
//! headless Chromium without errors.

mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use report::fmt;

/// The six sections of the issue, by HTML id.
const SECTIONS: [&str; 6] = [
    "p95",
    "write-receive",
    "timeline",
    "temp-files",
    "bytes",
    "crosscheck",
];
/// The sections that carry a chart.
const CHARTS: [&str; 6] = [
    "p95",
    "write-receive",
    "timeline",
    "temp-files",
    "bytes",
    "model",
];

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/quick")
}

/// A copy of the fixture in a temp dir, so the report never writes into
/// the repository.
fn copy_fixture() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for entry in fs::read_dir(fixture()).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), tmp.path().join(entry.file_name())).unwrap();
    }
    tmp
}

/// Writes the report of a copy of the fixture and returns it with its HTML.
fn report() -> (tempfile::TempDir, String) {
    let tmp = copy_fixture();
    report::write(tmp.path()).expect("the report of the fixture");
    let html = fs::read_to_string(tmp.path().join("report.html")).unwrap();
    (tmp, html)
}

/// The HTML of the `<section id="...">` element.
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<section id=\"{id}\""))
        .unwrap_or_else(|| panic!("no section {id}"));
    let end = html[start..].find("</section>").expect("a closed section") + start;
    &html[start..end]
}

/// Every inline `<svg ...>...</svg>` of a piece of HTML.
fn svgs(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(a) = rest.find("<svg") {
        let b = rest[a..].find("</svg>").expect("a closed svg") + a + "</svg>".len();
        out.push(&rest[a..b]);
        rest = &rest[b..];
    }
    out
}

/// Values of an attribute (`src=`, `href=`) anywhere in the document.
fn attribute_values(html: &str, attr: &str) -> Vec<String> {
    let needle = format!("{attr}=\"");
    html.match_indices(&needle)
        .map(|(i, _)| {
            let rest = &html[i + needle.len()..];
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect()
}

fn csv_rows(path: &Path) -> Vec<csv::StringRecord> {
    csv::Reader::from_path(path)
        .unwrap()
        .records()
        .map(|r| r.unwrap())
        .collect()
}

fn headers(path: &Path) -> csv::StringRecord {
    csv::Reader::from_path(path)
        .unwrap()
        .headers()
        .unwrap()
        .clone()
}

/// A number from `conditions.csv` of the fixture copy in `dir`.
fn condition(dir: &Path, server: &str, route: &str, slow: &str, column: &str) -> f64 {
    let path = dir.join("conditions.csv");
    let h = headers(&path);
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    csv_rows(&path)
        .into_iter()
        .find(|r| {
            r[col("server")] == *server
                && r[col("route")] == *route
                && r[col("slow_clients")] == *slow
        })
        .and_then(|r| r[col(column)].parse().ok())
        .unwrap_or_else(|| panic!("{server} {route} {slow} {column} in conditions.csv"))
}

#[test]
fn the_report_has_six_sections_with_inline_svg_and_a_markdown_twin() {
    let (tmp, html) = report();
    for id in SECTIONS {
        let s = section(&html, id);
        assert!(s.contains("<h2>"), "section {id} has a title");
    }
    for id in CHARTS {
        assert_eq!(
            svgs(section(&html, id)).len(),
            1,
            "section {id} has one inline SVG"
        );
    }
    assert!(section(&html, "crosscheck").contains("<table>"));
    assert!(section(&html, "lesson").contains("backpressure"));
    let md = fs::read_to_string(tmp.path().join("report.md")).unwrap();
    for file in [
        "report-p95.svg",
        "report-write-receive.svg",
        "report-timeline.svg",
        "report-temp-files.svg",
        "report-bytes.svg",
    ] {
        assert!(md.contains(&format!("]({file})")), "report.md shows {file}");
        let svg = fs::read_to_string(tmp.path().join(file)).unwrap();
        assert!(svg.starts_with("<svg"), "{file} is an SVG");
    }
    assert!(md.contains("## What happened, and why"));
    // Every chart says what one point or bar stands for.
    for id in CHARTS {
        assert!(
            section(&html, id).contains("Unit:"),
            "section {id} states its aggregation unit"
        );
    }
}

#[test]
fn nothing_is_fetched_from_elsewhere() {
    let (_tmp, html) = report();
    assert!(
        attribute_values(&html, "src").is_empty(),
        "no src attributes"
    );
    for href in attribute_values(&html, "href") {
        assert!(href.starts_with('#'), "only in-page links, found {href}");
    }
    for banned in ["<link", "@import", "url(", "<img", "<iframe", "<object"] {
        assert!(!html.contains(banned), "the page contains {banned}");
    }
    // The one script is the scrubbable view's, inline, with its data.
    assert_eq!(html.matches("<script").count(), 2, "two script elements");
    assert_eq!(section(&html, "scrub").matches("<script").count(), 2);
    // The only URLs are the SVG namespace names, which are never fetched.
    let urls = html.matches("http://").count() + html.matches("https://").count();
    let namespaces = html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
    assert_eq!(urls, namespaces, "no URL other than the SVG namespace");
}

#[test]
fn every_svg_is_well_formed_xml() {
    let (tmp, html) = report();
    let inline = svgs(&html);
    assert_eq!(inline.len(), CHARTS.len());
    for svg in inline {
        let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("inline SVG: {e}"));
        assert_eq!(doc.root_element().tag_name().name(), "svg");
    }
    for entry in fs::read_dir(tmp.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "svg") {
            let text = fs::read_to_string(&path).unwrap();
            roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
    }
}

#[test]
fn the_lesson_quotes_the_fixture() {
    let (tmp, html) = report();
    let lesson = section(&html, "lesson");
    let dir = tmp.path();
    let p95 = condition(dir, "gunicorn-sync2", "direct", "2", "p95");
    let base = condition(dir, "gunicorn-sync2", "direct", "0", "p95");
    let send = condition(dir, "gunicorn-sync2", "direct", "2", "app_send_s");
    let off_p95 = condition(dir, "gunicorn-sync2", "nginx-off", "2", "p95");
    let on_send = condition(dir, "gunicorn-sync2", "nginx-on", "2", "app_send_s");
    let temp = condition(dir, "gunicorn-sync2", "nginx-on", "2", "temp_peak_mib");
    for expected in [
        fmt::ms(p95),
        fmt::ms(base),
        fmt::secs(send),
        fmt::ms(off_p95),
        fmt::secs(on_send),
        fmt::mib(temp),
    ] {
        assert!(lesson.contains(&expected), "the lesson quotes {expected}");
    }
    // The same figures, as this fixture holds them, written out: the
    // formatting itself is part of what is checked.
    for literal in [
        "2,934 ms",
        "3.35 ms",
        "3.306 s",
        "1,861 ms",
        "0.124 s",
        "25.2 MiB",
        "<code>4096 16384 4194304</code>",
    ] {
        assert!(lesson.contains(literal), "the lesson says {literal}");
    }
    let env: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("environment.json")).unwrap()).unwrap();
    let wmem = env["sysctls"]["net.ipv4.tcp_wmem"].as_str().unwrap();
    assert!(lesson.contains(wmem), "the lesson quotes tcp_wmem {wmem}");
    // Granted receive buffer of the slow clients, from large-responses.csv.
    let path = dir.join("large-responses.csv");
    let col = headers(&path)
        .iter()
        .position(|c| c == "rcvbuf_granted_bytes")
        .unwrap();
    let granted: f64 = csv_rows(&path)[0][col].parse().unwrap();
    assert!(lesson.contains(&format!("granted {}", fmt::bytes(granted))));
}

#[test]
fn the_lesson_follows_the_data_not_constants() {
    let tmp = copy_fixture();
    let path = tmp.path().join("conditions.csv");
    let text = fs::read_to_string(&path).unwrap();
    // Change one figure: the direct p95 with 2 slow clients.
    let changed: String = text
        .lines()
        .map(|l| {
            if l.starts_with("gunicorn-sync2,direct,2,") {
                let mut cells: Vec<String> = l.split(',').map(String::from).collect();
                cells[6] = "4321.98".into();
                cells.join(",")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    fs::write(&path, changed + "\n").unwrap();
    report::write(tmp.path()).unwrap();
    let html = fs::read_to_string(tmp.path().join("report.html")).unwrap();
    let lesson = section(&html, "lesson");
    assert!(
        lesson.contains("4,322 ms"),
        "the lesson follows conditions.csv"
    );
    assert!(!lesson.contains("2,934 ms"));
}

#[test]
fn missing_files_are_named_and_the_rest_is_still_reported() {
    let tmp = copy_fixture();
    fs::remove_file(tmp.path().join("socket-samples.csv")).unwrap();
    fs::remove_file(tmp.path().join("proxy-gauge.csv")).unwrap();
    fs::write(tmp.path().join("requests.csv"), "not,a\nvalid\n").unwrap();
    fs::write(
        tmp.path().join("INCOMPLETE"),
        "interrupted after 12 of 30 runs\n",
    )
    .unwrap();
    let env_path = tmp.path().join("environment.json");
    let mut env: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&env_path).unwrap()).unwrap();
    env["run"]["runs_planned"] = serde_json::json!(30);
    fs::write(&env_path, env.to_string()).unwrap();
    report::write(tmp.path()).expect("a report despite missing files");
    let html = fs::read_to_string(tmp.path().join("report.html")).unwrap();
    let missing = section(&html, "missing");
    for needle in [
        "socket-samples.csv",
        "proxy-gauge.csv",
        "requests.csv",
        "interrupted after 12 of 30 runs",
        "12 of the 30 planned runs",
    ] {
        assert!(
            missing.contains(needle),
            "the missing section names {needle}"
        );
    }
    // The charts that do not need the missing files are still drawn.
    assert_eq!(svgs(section(&html, "p95")).len(), 1);
    assert_eq!(svgs(section(&html, "temp-files")).len(), 1);
    assert!(section(&html, "bytes").contains("no socket samples"));
    assert!(section(&html, "timeline").contains("requests.csv"));
    let md = fs::read_to_string(tmp.path().join("report.md")).unwrap();
    assert!(md.contains("INCOMPLETE"));
}

#[test]
fn an_empty_or_wrong_directory_is_a_clear_error() {
    let exe = env!("CARGO_BIN_EXE_slowlab");
    let empty = tempfile::tempdir().unwrap();
    let out = Command::new(exe)
        .arg("report")
        .arg(empty.path())
        .output()
        .unwrap();
    // Bad input, the book's exit-status table: 2.
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("not a slowlab results directory"), "{err}");
    assert!(!empty.path().join("report.html").exists());

    let gone = empty.path().join("nope");
    let out = Command::new(exe).arg("report").arg(&gone).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not exist"), "{err}");

    let file = empty.path().join("file.txt");
    fs::write(&file, "x").unwrap();
    let out = Command::new(exe).arg("report").arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a directory"));

    // Files of the right names holding garbage: no "0 runs" report.
    let garbage = tempfile::tempdir().unwrap();
    for f in ["runs.csv", "conditions.csv", "environment.json"] {
        fs::write(
            garbage.path().join(f),
            "\u{0}\u{1}garbage, not, rows\n1,2\n",
        )
        .unwrap();
    }
    let out = Command::new(exe)
        .arg("report")
        .arg(garbage.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds no readable results"));
    assert!(!garbage.path().join("report.html").exists());
}

#[test]
fn a_check_directory_without_its_environment_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let header = schema::child::header_line::<schema::CheckRow>();
    let row = "direct,x,2,1,20,0,,,,,1.0,,20,20,0,0,0,2,0,denied,,,,,,,1.0,direct/level-2,20,21,download,handlers,,,,,2,,,,,1,16,,,,,\n";
    fs::write(tmp.path().join("check.csv"), format!("{header}{row}")).unwrap();
    report::write(tmp.path()).expect("a check directory is a results directory");
    assert!(tmp.path().join("report.html").is_file());
}

#[test]
fn a_report_is_replaced_whole_never_left_half_written() {
    let tmp = copy_fixture();
    report::write(tmp.path()).unwrap();
    // A read-only directory: the new report cannot be written, and the old
    // one stays as it was, whole.
    let before = fs::read(tmp.path().join("report.html")).unwrap();
    let mut perms = fs::metadata(tmp.path()).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o555);
    fs::set_permissions(tmp.path(), perms.clone()).unwrap();
    let r = report::write(tmp.path());
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    fs::set_permissions(tmp.path(), perms).unwrap();
    // Root may write anyway; then the report is simply renewed.
    if r.is_err() {
        assert_eq!(fs::read(tmp.path().join("report.html")).unwrap(), before);
    }
    let leftovers: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary files left");
}

#[test]
fn the_cli_writes_the_report_and_prints_its_path() {
    let tmp = copy_fixture();
    let out = Command::new(env!("CARGO_BIN_EXE_slowlab"))
        .arg("report")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("report.html"));
    assert!(tmp.path().join("report.html").exists());
    assert!(tmp.path().join("report.md").exists());
}

/// Records the size of every chart into the DOM, for `--dump-dom`. Only
/// the test's copy of the page gets it.

#[test]
fn the_fixture_reads_whole_and_rewrites_through_the_row_structs() {
    use schema::{self, Appenders};
    let set = schema::read_dir(&fixture());
    assert!(set.missing.is_empty(), "{:?}", set.missing);
    assert!(set.skipped.is_empty(), "{:?}", set.skipped);
    assert!(!set.runs.is_empty() && !set.requests.is_empty() && !set.gauge.is_empty());
    let out = tempfile::tempdir().unwrap();
    Appenders::create(out.path()).unwrap().append(&set).unwrap();
    schema::write_summaries(out.path(), &set.conditions, &set.crosscheck).unwrap();
    let again = schema::read_dir(out.path());
    assert_eq!(again.runs, set.runs);
    assert_eq!(again.requests, set.requests);
    assert_eq!(again.large, set.large);
    assert_eq!(again.sockets, set.sockets);
    assert_eq!(again.gauge, set.gauge);
    assert_eq!(again.conditions, set.conditions);
    assert_eq!(again.crosscheck, set.crosscheck);
    let mut same = Vec::new();
    for (file, columns) in schema::schema() {
        let path = out.path().join(file);
        if !path.exists() {
            continue;
        }
        assert_eq!(headers(&path).iter().collect::<Vec<_>>(), columns, "{file}");
        // Where the fixture's version had the same columns, the file is
        // written byte for byte as it was.
        let old = fixture().join(file);
        // (A file the fixture's version did not write, such as model.csv,
        // has nothing to compare with.)
        if old.exists() && headers(&old).iter().collect::<Vec<_>>() == columns {
            assert_eq!(
                fs::read_to_string(&path).unwrap(),
                fs::read_to_string(&old).unwrap(),
                "{file} rewritten"
            );
            same.push(file);
        }
    }
    // All but the files that have gained columns since the fixture:
    // runs.csv, requests.csv (`tls_ms`, `protocol`), socket-samples.csv
    // (sock_diag), large-responses.csv (reader, the edge's columns),
    // slow-progress.csv (the reader's queues), proxy-responses.csv
    // and proxy-gauge.csv (the request direction), conditions.csv and
    // crosscheck.csv (`direction`), resource-samples.csv (descriptors);
    // their new cells read back empty.
    assert_eq!(same, ["app-sends.csv"], "rewritten byte for byte");
    assert!(!same.contains(&"socket-samples.csv"));
    assert!(
        set.sockets
            .iter()
            .all(|s| s.source.is_empty() && s.sndbuf_bytes.is_none())
    );
}

/// A scratch copy of a committed example directory, to report on.
fn copy_of(example: &Path) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for entry in fs::read_dir(example).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), tmp.path().join(entry.file_name())).unwrap();
    }
    tmp
}

/// The committed example of the `servers` preset (`docs/example-servers/`):
/// section 7 has its chart, and the chart's data are the direct conditions
/// of `conditions.csv`, every server at 0, 2 and 8 slow readers, with the
/// verdicts of the table.
#[test]
fn the_servers_section_charts_every_server_at_each_slow_level_with_its_verdict() {
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/example-servers");
    let tmp = copy_of(&example);
    report::write(tmp.path()).expect("the report of the servers example");
    let html = fs::read_to_string(tmp.path().join("report.html")).unwrap();
    let sec = section(&html, "servers");
    assert_eq!(svgs(sec).len(), 1, "section 7 has one chart");
    assert!(sec.contains("<figure id=\"report-servers\""), "{sec}");
    assert!(sec.contains("<table>"), "the table stays");
    assert!(sec.contains("Unit:"));
    let md = fs::read_to_string(tmp.path().join("report.md")).unwrap();
    assert!(md.contains("](report-servers.svg)"));
    assert!(
        fs::read_to_string(tmp.path().join("report-servers.svg"))
            .unwrap()
            .starts_with("<svg")
    );
    // The chart's embedded data: its series, one row per server and level.
    let fig = &sec[sec.find("<figure id=\"report-servers\"").unwrap()..];
    let data = &fig[fig.find("<pre class=\"data\">").unwrap() + "<pre class=\"data\">".len()..];
    let data = data[..data.find("</pre>").unwrap()].replace("&amp;", "&");
    let mut reader = csv::Reader::from_reader(data.as_bytes());
    let h = reader.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    let mut servers: Vec<&str> = rows.iter().map(|r| &r[col("server")]).collect();
    servers.dedup();
    assert_eq!(
        servers,
        [
            "gunicorn-sync2",
            "gunicorn-gthread4",
            "rust-sync2",
            "rust-threads4",
            "rust-async",
            "uvicorn",
            "gunicorn-uvicorn2",
            "gunicorn-gevent2",
            "waitress4",
            "granian"
        ]
    );
    assert_eq!(rows.len(), servers.len() * 3, "0, 2 and 8 slow for each");
    for r in &rows {
        let (server, slow) = (&r[col("server")], &r[col("slow_clients")]);
        assert!(["0", "2", "8"].contains(&slow), "{r:?}");
        let p95: f64 = r[col("p95_ms")].parse().unwrap();
        let expected = condition(tmp.path(), server, "direct", slow, "p95");
        assert!(
            (p95 - expected).abs() < 0.01,
            "{server} {slow}: {p95} vs {expected}"
        );
        if slow == "0" {
            assert_eq!(
                (&r[col("predicted")], &r[col("observed")]),
                ("", ""),
                "{r:?}"
            );
        }
    }
    let verdicts = |server: &str, slow: &str| {
        let r = rows
            .iter()
            .find(|r| &r[col("server")] == server && &r[col("slow_clients")] == slow)
            .unwrap();
        (
            r[col("predicted")].to_string(),
            r[col("observed")].to_string(),
        )
    };
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(verdicts("gunicorn-sync2", "2"), pair("blocked", "blocked"));
    assert_eq!(
        verdicts("gunicorn-gthread4", "2"),
        pair("relieved", "relieved")
    );
    assert_eq!(
        verdicts("gunicorn-gthread4", "8"),
        pair("blocked", "blocked")
    );
    assert_eq!(verdicts("uvicorn", "8"), pair("relieved", "relieved"));
    // The one disagreement, marked in the chart with a square.
    assert_eq!(verdicts("waitress4", "8"), pair("relieved", "blocked"));
}

/// `docs/example/` is the fixture's report as today's code writes it: the
/// README and the book quote its sections (by their anchors), so a change
/// of the report's words must renew it (`scripts/regenerate-example`).
#[test]
fn the_committed_example_is_todays_report_of_the_fixture() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("quick");
    fs::create_dir(&dir).unwrap();
    for entry in fs::read_dir(fixture()).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    report::write(&dir).expect("the report of the fixture");
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/example");
    for entry in fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name == "report.md" || (name.starts_with("report-") && name.ends_with(".svg")) {
            let now = fs::read_to_string(dir.join(&name)).unwrap();
            let kept = fs::read_to_string(example.join(&name)).unwrap_or_default();
            assert!(
                now == kept,
                "docs/example/{name} is not what `slowlab report` writes today: run scripts/regenerate-example"
            );
        }
    }
}

/// The committed example of the `proxies` preset (`docs/example-proxies/`):
/// section 8 has a table per direction, one row per route in the lab's
/// order, each verdict predicted from the catalogue and observed from
/// `conditions.csv`, and the section the example keeps is the one the
/// report writes today.
#[test]
fn the_proxies_section_tells_which_proxies_protect_and_at_what_price() {
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/example-proxies");
    let tmp = copy_of(&example);
    report::write(tmp.path()).expect("the report of the proxies example");
    let html = fs::read_to_string(tmp.path().join("report.html")).unwrap();
    let sec = section(&html, "proxies");
    assert_eq!(sec.matches("<table>").count(), 2, "downloads and uploads");
    let md = fs::read_to_string(tmp.path().join("report.md")).unwrap();
    let start = md.find("## 8. Which proxies").expect("section 8");
    let end = md[start..].find("<!-- ANCHOR_END: proxies -->").unwrap() + start;
    let ours = &md[start..end + "<!-- ANCHOR_END: proxies -->".len()];
    let kept = fs::read_to_string(example.join("which-proxies-protect.md")).unwrap();
    assert_eq!(
        ours.trim(),
        kept.trim(),
        "docs/example-proxies/which-proxies-protect.md is section 8 as the report writes it: run scripts/regenerate-example"
    );
    // Its charts, one per direction, are kept beside it.
    for name in ["report-proxies.svg", "report-proxies-upload.svg"] {
        assert!(
            ours.contains(&format!("]({name})")),
            "{name} not in section 8"
        );
        assert!(
            fs::read_to_string(tmp.path().join(name)).unwrap()
                == fs::read_to_string(example.join(name)).unwrap_or_default(),
            "docs/example-proxies/{name} is not what `slowlab report` writes today: run scripts/regenerate-example"
        );
    }
    let row = |route: &str| {
        ours.lines()
            .find(|l| l.starts_with(&format!("| {route} |")))
            .unwrap_or_else(|| panic!("no row {route}"))
            .to_string()
    };
    // Buffering whole responses protects; passing them through does not.
    assert!(
        row("nginx-on").contains("relieved / relieved | "),
        "{}",
        row("nginx-on")
    );
    assert!(row("haproxy").contains("no setting buffers a response"));
    assert!(row("haproxy").contains("blocked / blocked"));
    // Caddy buffering in memory: relieved at 2, killed at 8, as predicted.
    let caddy = row("caddy-buf");
    assert!(caddy.contains("relieved / relieved"), "{caddy}");
    assert!(
        caddy.contains("failed (") && caddy.contains("blocked / blocked"),
        "{caddy}"
    );
    let p95 = condition(tmp.path(), "gunicorn-sync2", "nginx-on", "2", "p95");
    assert!(row("nginx-on").contains(&format!("{p95:.2} ms")), "{p95}");
}

/// The committed example of the `h2` preset (`docs/example-h2/`): the
/// section "One connection, many held workers" it keeps is the one the
/// report writes today, with a row per HTTP/2-edge condition, and in it
/// one connection of 2 slow streams holds both of Gunicorn's workers
/// behind every proxy that does not buffer at that edge, as 2 connections
/// do, while every route that buffers there keeps `/fast` quick.
#[test]
fn the_h2_example_shows_one_connection_holding_many_workers() {
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/example-h2");
    let tmp = copy_of(&example);
    report::write(tmp.path()).expect("the report of the h2 example");
    let md = fs::read_to_string(tmp.path().join("report.md")).unwrap();
    let start = md
        .find("<!-- ANCHOR: streams -->")
        .expect("the streams section");
    let end = md[start..].find("<!-- ANCHOR_END: streams -->").unwrap() + start;
    let ours = &md[start..end + "<!-- ANCHOR_END: streams -->".len()];
    let kept = fs::read_to_string(example.join("one-connection-many-workers.md")).unwrap();
    assert_eq!(
        ours.trim(),
        kept.trim(),
        "docs/example-h2/one-connection-many-workers.md is the section as the report writes it: run scripts/regenerate-example"
    );
    // | server | route | slow streams | streams per connection | connections | served at once | /fast p95 |
    let p95 = |route: &str, spc: &str| -> f64 {
        let prefix = format!("| gunicorn-sync2 | {route} | 2 | {spc} |");
        let line = ours
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no row {prefix}"));
        let cell = line
            .trim_end_matches('|')
            .rsplit('|')
            .next()
            .unwrap()
            .trim();
        // `–`: no p95, every call of /fast failed.
        if cell == "–" {
            return f64::INFINITY;
        }
        cell.trim_end_matches(" ms")
            .replace(',', "")
            .parse()
            .unwrap_or_else(|_| panic!("{line}"))
    };
    let cap = catalogue::ProxyBuffers::EXPERIMENT.capacity();
    for route in catalogue::Route::H2 {
        let name = route.to_string();
        let (one, two) = (p95(&name, "2"), p95(&name, "1"));
        if route.absorbs(16 << 20, cap) {
            assert!(one < 1000.0 && two < 1000.0, "{name}: {one} {two}");
        } else {
            // Both workers held for most of a 16 MiB download at 2 MiB/s
            // (Apache's for longer: see the example's README).
            assert!(one > 5000.0 && two > 5000.0, "{name}: {one} {two}");
        }
    }
}
