//! The sampler's rows as CSV: `resource-samples.csv` (one row per component
//! per sample) and `socket-samples.csv` (one row per TCP socket per sample),
//! each after the run's identity columns, with `t_s` relative to the run's
//! time zero.

use super::table::{opt, opt_u};
use crate::sample::{ResourceSample, SocketSample};

/// The columns of `resource-samples.csv` after the identity columns.
pub const RESOURCE_COLUMNS: [&str; 16] = [
    "t_s",
    "component",
    "procs",
    "cpu_s",
    "cpu_source",
    "throttled_ms",
    "nr_throttled",
    "memory_bytes",
    "rss_bytes",
    "temp_files",
    "temp_logical_bytes",
    "temp_allocated_bytes",
    "sockets",
    "send_queue_bytes",
    "recv_queue_bytes",
    "accept_backlog",
];

/// The columns of `socket-samples.csv` after the identity columns.
pub const SOCKET_COLUMNS: [&str; 7] = [
    "t_s",
    "component",
    "local",
    "remote",
    "state",
    "tx_queue_bytes",
    "rx_queue_bytes",
];

type Rows = (Vec<String>, Vec<Vec<String>>);

fn headers(ident: &[String], columns: &[&str]) -> Vec<String> {
    let mut h = ident.to_vec();
    h.extend(columns.iter().map(|c| c.to_string()));
    h
}

pub fn resources(samples: &[ResourceSample], t0: f64, ih: &[String], iv: &[String]) -> Rows {
    let rows = samples
        .iter()
        .map(|s| {
            let mut r = iv.to_vec();
            r.extend([
                format!("{:.3}", s.t_unix_s - t0),
                s.component.clone(),
                s.procs.to_string(),
                opt(s.cpu_ns.map(|v| v as f64 / 1e9), 6),
                s.cpu_source.to_string(),
                opt(s.throttled_ns.map(|v| v as f64 / 1e6), 3),
                opt_u(s.nr_throttled),
                opt_u(s.memory_bytes),
                s.rss_bytes.to_string(),
                opt_u(s.temp_files),
                opt_u(s.temp_logical_bytes),
                opt_u(s.temp_allocated_bytes),
                s.sockets.to_string(),
                s.send_queue_bytes.to_string(),
                s.recv_queue_bytes.to_string(),
                s.accept_backlog.to_string(),
            ]);
            r
        })
        .collect();
    (headers(ih, &RESOURCE_COLUMNS), rows)
}

pub fn sockets(samples: &[SocketSample], t0: f64, ih: &[String], iv: &[String]) -> Rows {
    let rows = samples
        .iter()
        .map(|s| {
            let mut r = iv.to_vec();
            r.extend([
                format!("{:.3}", s.t_unix_s - t0),
                s.component.clone(),
                s.local.clone(),
                s.remote.clone(),
                s.state.to_string(),
                s.tx_queue_bytes.to_string(),
                s.rx_queue_bytes.to_string(),
            ]);
            r
        })
        .collect();
    (headers(ih, &SOCKET_COLUMNS), rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_values_are_empty_cells_and_times_are_relative() {
        let s = ResourceSample {
            t_unix_s: 101.5,
            component: "app".into(),
            cpu_ns: Some(2_500_000_000),
            cpu_source: "cgroup",
            ..ResourceSample::default()
        };
        let (h, rows) = resources(&[s], 100.0, &["run_id".into()], &["007".into()]);
        assert_eq!(h.len(), 1 + RESOURCE_COLUMNS.len());
        assert_eq!(rows[0][0], "007");
        assert_eq!(rows[0][1], "1.500");
        assert_eq!(rows[0][4], "2.500000");
        // No cgroup memory reading: an empty cell, not a zero.
        assert_eq!(rows[0][8], "");
    }
}
