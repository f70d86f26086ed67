//! The report of a sweep directory: the sweep section with its two charts
//! (well-formed SVG, written beside `report.md`), the summary table, the
//! warnings for a saturated load generator and exhausted ports, and a note
//! instead of a failure when `sweep.csv` cannot be read; no reproduction
//! sections in a directory of sweeps only.

use std::fs;
use std::path::Path;

const SWEEP_HEADER: &str = "sweep_id,server,route,slow_clients,caps,step,conn_rate_demanded,req_rate_demanded,calls_per_conn,replies_per_s_min,replies_per_s_avg,replies_per_s_max,p95_ms,errors,err_ports_exhausted,loadgen_saturated";
const SUMMARY_HEADER: &str = "sweep_id,server,route,slow_clients,caps,calls_per_conn,steps,first_error_conn_rate,highest_error_free_conn_rate,highest_error_free_req_rate,highest_error_free_replies_per_s,loadgen_saturated_steps,ports_exhausted_steps";

/// Two sweeps: rust-async never fails (its last step saturates the load
/// generator); rust-sync2 with 2 slow readers fails from its first step
/// and runs out of ports in its second.
fn write_fixture(dir: &Path) {
    let steps = [
        "rust-async-direct-s0-uncapped,rust-async,direct,0,uncapped,1,100,1000,10,990,999.5,1003,0.2,0,0,false",
        "rust-async-direct-s0-uncapped,rust-async,direct,0,uncapped,2,200,2000,10,1990,1999.1,2004,0.3,0,0,false",
        "rust-async-direct-s0-uncapped,rust-async,direct,0,uncapped,3,300,3000,10,2900,2950.2,3001,4.5,0,0,true",
        "rust-sync2-direct-s2-uncapped,rust-sync2,direct,2,uncapped,1,100,1000,10,0,0,0,,1000,0,false",
        "rust-sync2-direct-s2-uncapped,rust-sync2,direct,2,uncapped,2,200,2000,10,0,12.5,40,4800.5,1900,3,false",
    ];
    fs::write(
        dir.join("sweep.csv"),
        format!("{SWEEP_HEADER}\n{}\n", steps.join("\n")),
    )
    .unwrap();
    let summary = [
        "rust-async-direct-s0-uncapped,rust-async,direct,0,uncapped,10,3,,300,3000,2950.2,1,0",
        "rust-sync2-direct-s2-uncapped,rust-sync2,direct,2,uncapped,10,2,100,,,,0,1",
    ];
    fs::write(
        dir.join("sweep-summary.csv"),
        format!("{SUMMARY_HEADER}\n{}\n", summary.join("\n")),
    )
    .unwrap();
}

fn sweep_section(html: &str) -> &str {
    let start = html.find("<section id=\"sweep\"").expect("a sweep section");
    let end = html[start..].find("</section>").expect("closed") + start;
    &html[start..end]
}

#[test]
fn a_sweep_directory_gets_its_charts_and_table() {
    let tmp = tempfile::tempdir().unwrap();
    write_fixture(tmp.path());
    report::write(tmp.path()).expect("the report of a sweep directory");
    let html = fs::read_to_string(tmp.path().join("report.html")).unwrap();
    let sec = sweep_section(&html);
    assert_eq!(sec.matches("<svg").count(), 2, "two inline charts");
    for file in ["report-sweep-replies.svg", "report-sweep-p95.svg"] {
        let svg = fs::read_to_string(tmp.path().join(file)).unwrap();
        roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{file}: {e}"));
        for label in [
            "rust-async direct",
            "rust-sync2 direct",
            "uncapped, 0 slow readers",
            "uncapped, 2 slow readers",
        ] {
            assert!(svg.contains(label), "{file} lacks {label}");
        }
    }
    assert!(sec.contains("Unit: the step"));
    // The table: the highest error-free rate, and "none" for a sweep that
    // failed from its first step.
    assert!(sec.contains("3000 (300 conn/s)"), "{sec}");
    assert!(
        sec.contains("1000 (100 conn/s)"),
        "first errors of rust-sync2"
    );
    assert!(sec.contains("none in the range"));
    // The warnings name the sweeps.
    assert!(
        sec.contains("load generator saturated in <code>rust-async-direct-s0-uncapped</code>"),
        "{sec}"
    );
    assert!(sec.contains("Ephemeral ports ran out"));
    let md = fs::read_to_string(tmp.path().join("report.md")).unwrap();
    assert!(md.contains("](report-sweep-p95.svg)"));
    // A sweep directory is not a reproduction with its files missing: no
    // list of absent CSVs, no empty sections 1-6.
    assert!(!html.contains("What is missing"), "{html}");
    assert!(!html.contains("id=\"p95\""));
    assert!(html.contains("rate sweeps"));
}

#[test]
fn an_interrupted_sweep_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    write_fixture(tmp.path());
    fs::write(tmp.path().join("INCOMPLETE"), "sweep x interrupted\n").unwrap();
    report::write(tmp.path()).expect("a report");
    let html = fs::read_to_string(tmp.path().join("report.html")).unwrap();
    assert!(html.contains("This sweep did not finish"), "{html}");
    assert!(html.contains("sweep x interrupted"));
    assert!(html.contains("<section id=\"sweep\""));
}

#[test]
fn an_unreadable_sweep_file_is_a_note() {
    // The summary is readable, the steps are not: a report with a note.
    let tmp = tempfile::tempdir().unwrap();
    write_fixture(tmp.path());
    fs::write(tmp.path().join("sweep.csv"), "sweep_id,server\nx,y\n").unwrap();
    report::write(tmp.path()).expect("still a report");
    let html = fs::read_to_string(tmp.path().join("report.html")).unwrap();
    let sec = sweep_section(&html);
    assert!(sec.contains("could not be drawn"), "{sec}");
    assert!(sec.contains("sweep.csv"), "the unreadable file is named");
    // Nothing readable at all is no report but one line (exit status 2).
    let empty = tempfile::tempdir().unwrap();
    fs::write(empty.path().join("sweep.csv"), "sweep_id,server\nx,y\n").unwrap();
    let e = report::write(empty.path()).expect_err("nothing to report");
    assert!(
        format!("{e:#}").contains("holds no readable results"),
        "{e:#}"
    );
}

#[test]
fn one_truncated_row_of_sweep_csv_drops_only_that_row() {
    let tmp = tempfile::tempdir().unwrap();
    write_fixture(tmp.path());
    // A sweep killed while it appended a row: its last line cut short.
    let text = fs::read_to_string(tmp.path().join("sweep.csv")).unwrap();
    let cut = &text[..text.trim_end().len() - 25];
    fs::write(tmp.path().join("sweep.csv"), cut).unwrap();
    report::write(tmp.path()).expect("the report");
    let html = fs::read_to_string(tmp.path().join("report.html")).unwrap();
    let sec = sweep_section(&html);
    assert_eq!(sec.matches("<svg").count(), 2, "both charts: {sec}");
    assert!(sec.contains("rust-async direct"), "{sec}");
}

#[test]
fn a_truncated_row_of_the_sweep_costs_that_row_only() {
    let tmp = tempfile::tempdir().unwrap();
    write_fixture(tmp.path());
    let path = tmp.path().join("sweep.csv");
    let mut steps = fs::read_to_string(&path).unwrap();
    // A sweep killed while it wrote its last step.
    steps.push_str("rust-sync2-direct-s2-uncapped,rust-sync2,direct,2,unc");
    fs::write(&path, steps).unwrap();
    report::write(tmp.path()).expect("a report");
    let html = fs::read_to_string(tmp.path().join("report.html")).unwrap();
    let sec = sweep_section(&html);
    assert!(!sec.contains("could not be drawn"), "{sec}");
    assert!(sec.contains("<svg") || sec.contains(".svg"), "{sec}");
    assert!(
        html.contains("could not be read"),
        "the dropped row is named"
    );
}
