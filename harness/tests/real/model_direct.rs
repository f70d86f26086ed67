//! The buffer model against a real run: Gunicorn sync x2, direct, 2 slow
//! readers, the host's sysctls. The model's `app_send_s` (from `tcp_wmem`
//! max and the granted `SO_RCVBUF` alone) is within 15% of the measured
//! median, and the explanation (the measured peak queues in the same
//! formula) is within 15% of it too.

use crate::support;

use std::process::Command;

use schema::{MODEL_CSV, ModelRow, file};
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
    // The explanation: the same formula with the measured peak queues. The
    // queues hold payload, the sysctl bounds memory (payload plus each
    // packet's bookkeeping), so the measured B is below the predicted one,
    // and it accounts for the measured write time more closely.
    let explained_b = row.explained_b_bytes.expect("peak queues were sampled");
    let explained = row.explained_app_send_s.expect("an explained app_send_s");
    assert!(
        explained_b < row.predicted_b_bytes.unwrap()
            && explained_b > row.predicted_b_bytes.unwrap() / 2,
        "measured B {explained_b} against predicted {b}"
    );
    assert!(
        (observed - explained).abs() <= 0.15 * observed,
        "observed {observed:.3} s vs explained {explained:.3} s"
    );
}
