//! The buffer model against a real run: Gunicorn sync x2, direct, 2 slow
//! readers, the host's sysctls. The model's `app_send_s` (from `tcp_wmem`
//! max and the granted `SO_RCVBUF` alone) is within 15% of the measured
//! median.

mod support;

use std::process::Command;

use harness::results::{MODEL_CSV, ModelRow, file};
use support::{slowlab, state_dir};

#[test]
fn the_model_predicts_the_direct_app_write_time_at_the_default_sysctls() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("results");
    let status = Command::new(slowlab())
        .args(["reproduce", "--preset", "quick", "--only"])
        .arg("gunicorn-sync2,direct,slow=2")
        .arg("--no-report")
        .arg("--out")
        .arg(&out)
        .env("SLOWLAB_HOME", state_dir())
        .status()
        .expect("run slowlab reproduce");
    assert!(status.success(), "reproduce exited with {status}");
    let rows: Vec<ModelRow> = file::read_all(&out.join(MODEL_CSV)).unwrap();
    let row = rows
        .iter()
        .find(|m| m.server.to_string() == "gunicorn-sync2" && m.route.to_string() == "direct")
        .expect("a model row for gunicorn-sync2/direct");
    let predicted = row.predicted_app_send_s.expect("a prediction");
    let observed = row.observed_app_send_s.expect("a measured app_send_s");
    eprintln!(
        "B {:?} bytes, predicted {predicted:.3} s, observed {observed:.3} s, explained B {:?}, explained {:?} s",
        row.predicted_b_bytes, row.explained_b_bytes, row.explained_app_send_s
    );
    // The buffers must matter relative to the body, or the test says nothing.
    let b = row.predicted_b_bytes.unwrap() as f64;
    assert!(b > 0.1 * row.body_bytes as f64 && b < 0.9 * row.body_bytes as f64);
    assert!(
        (observed - predicted).abs() <= 0.15 * predicted,
        "observed {observed:.3} s vs predicted {predicted:.3} s"
    );
    assert_eq!(row.predicted_blocked, Some(true));
}
