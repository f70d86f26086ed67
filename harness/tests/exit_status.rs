//! The book's exit-status table (`book/src/reference/exit-status.md`) is
//! what the verbs do: every status it lists is reached by a named test
//! that asserts it, for every verb the table names with that status, and
//! every verb, the hidden ones too, gives status 2 and one line for a flag
//! it does not know.
//!
//! The tests named here drive the binary (or, for 3 and 4, the real-stack
//! tier drives `check` against real servers); this file holds them to the
//! table, so that a status added to the table without a test, or a test
//! renamed away, fails here.

mod support;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command;

use support::slowlab;

/// (status, verb, test file under harness/tests, test function).
const REACHED: &[(i32, &str, &str, &str)] = &[
    (
        0,
        "serve",
        "serve_cli.rs",
        "signals_stop_within_two_seconds_during_slow_downloads",
    ),
    (
        0,
        "proxy",
        "proxy_cli.rs",
        "ready_line_then_sigterm_stops_within_two_seconds",
    ),
    (0, "load", "load_cli.rs", "json_summary_and_out_files"),
    (
        0,
        "report",
        "report.rs",
        "the_cli_writes_the_report_and_prints_its_path",
    ),
    (
        0,
        "merge",
        "merge_cli.rs",
        "real_shards_of_a_reproduction_merge_into_the_plan",
    ),
    (
        0,
        "check",
        "real/check_cli.rs",
        "an_async_server_holds_up_to_the_maximum",
    ),
    (
        1,
        "load",
        "load_cli.rs",
        "no_successful_fast_request_exits_non_zero",
    ),
    (
        1,
        "load",
        "real/full_disk.rs",
        "a_load_whose_disk_fills_keeps_its_figures",
    ),
    (
        1,
        "load",
        "load_fds.rs",
        "descriptors_that_run_out_mid_run_are_fd_exhausted_and_exit_1",
    ),
    (
        1,
        "sweep-load",
        "real/sweep_cli.rs",
        "a_sweep_without_one_success_fails_after_writing_its_steps",
    ),
    (
        1,
        "check",
        "real/check_cli.rs",
        "a_server_that_dies_during_the_check_gets_no_verdict",
    ),
    (2, "load", "load_cli.rs", "bad_flags_are_one_line_errors"),
    (
        2,
        "load",
        "load_cli.rs",
        "an_unwritable_out_fails_before_any_connection",
    ),
    (
        2,
        "serve",
        "serve_cli.rs",
        "bad_input_is_one_line_and_a_failure",
    ),
    (
        2,
        "proxy",
        "bad_input.rs",
        "oversized_serve_and_proxy_inputs_are_refused_at_once",
    ),
    (
        2,
        "sweep",
        "bad_input.rs",
        "sweep_checks_its_flags_before_it_starts_a_stack",
    ),
    (
        2,
        "check",
        "real/check_cli.rs",
        "bad_flags_get_one_line_and_exit_two",
    ),
    (
        2,
        "merge",
        "merge_cli.rs",
        "bad_input_is_refused_with_exit_2_before_anything_is_written",
    ),
    (
        2,
        "report",
        "report.rs",
        "an_empty_or_wrong_directory_is_a_clear_error",
    ),
    (
        3,
        "check",
        "real/check_cli.rs",
        "two_sync_workers_are_denied_from_two_slow_readers_on",
    ),
    (
        4,
        "check",
        "real/check_cli.rs",
        "a_starved_load_generator_makes_the_check_inconclusive_not_denied",
    ),
    (
        130,
        "reproduce",
        "reproduce_interrupt.rs",
        "sigint_mid_run_leaves_no_process_and_marks_the_results",
    ),
    (
        130,
        "load",
        "load_cli.rs",
        "an_interrupted_load_keeps_what_it_measured",
    ),
    (
        143,
        "sweep",
        "sweep_interrupt.rs",
        "sigterm_mid_sweep_exits_143_and_marks_the_results",
    ),
    (
        143,
        "load",
        "load_cli.rs",
        "an_interrupted_load_keeps_what_it_measured",
    ),
    (
        143,
        "check",
        "check_interrupt.rs",
        "an_interrupted_check_keeps_its_levels_marked_incomplete",
    ),
];

fn tests_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests"))
}

/// The table's rows: their statuses (a row may list two, "130, 143") and
/// text.
fn table() -> Vec<(Vec<i32>, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../book/src/reference/exit-status.md");
    let text = fs::read_to_string(&path).expect("the exit-status chapter");
    let mut rows = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let statuses: Vec<i32> = cells[1]
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect();
        if !statuses.is_empty() {
            rows.push((statuses, cells[2].to_string()));
        }
    }
    rows
}

#[test]
fn every_status_of_the_table_is_reached_by_a_named_test() {
    let rows = table();
    let listed: BTreeSet<i32> = rows.iter().flat_map(|(s, _)| s.iter().copied()).collect();
    assert_eq!(
        listed,
        BTreeSet::from([0, 1, 2, 3, 4, 130, 143]),
        "the table changed: name a test for each new status here"
    );
    let reached: BTreeSet<i32> = REACHED.iter().map(|r| r.0).collect();
    assert_eq!(reached, listed, "a status without a test");
    for (status, verb, file, name) in REACHED {
        let source =
            fs::read_to_string(tests_dir().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(
            source.contains(&format!("fn {name}()")),
            "{file} has no test {name} (status {status} of {verb})"
        );
        assert!(
            source.contains(&format!("Some({status})"))
                || source.contains(&format!(", {status})"))
                || source.contains(&format!(", {status},"))
                || (*status == 0 && source.contains("success()")),
            "{file} never asserts status {status}"
        );
    }
    // Every verb the table names beside a status has a test for it.
    // (`reproduce` with no run completed is left untested: every run of
    // a real matrix would have to fail.)
    for (statuses, text) in &rows {
        for verb in verbs() {
            let named = text.contains(&format!("`{verb}`"));
            let tested = REACHED
                .iter()
                .any(|r| statuses.contains(&r.0) && r.1 == verb);
            assert!(
                !named || tested || statuses == &[1] && verb == "reproduce",
                "the table names `{verb}` for status {statuses:?}, and no test here reaches it"
            );
        }
    }
}

/// Every subcommand of the binary, the hidden ones too.
fn verbs() -> Vec<String> {
    let out = Command::new(slowlab())
        .arg("generate")
        .arg("reference")
        .output()
        .expect("slowlab generate reference");
    assert_eq!(out.status.code(), Some(0), "generate: status 0");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut verbs: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("## slowlab "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    verbs.push("sweep-load".into());
    verbs.sort();
    verbs.dedup();
    assert!(verbs.len() >= 10, "{verbs:?} from {text}");
    verbs
}

#[test]
fn every_verb_refuses_a_flag_it_does_not_know_with_status_2_and_one_line() {
    for verb in verbs() {
        let out = Command::new(slowlab())
            .args([verb.as_str(), "--no-such-flag"])
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{verb}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{verb}: {stderr}");
        assert!(stderr.starts_with("slowlab: "), "{verb}: {stderr}");
    }
}
