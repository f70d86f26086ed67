//! The sampler's samples as rows of `resource-samples.csv`,
//! `socket-samples.csv` and `qdisc-samples.csv`: the run's identity, then
//! `t_s` relative to the run's time zero.

use lab::sample::{QdiscSample, ResourceSample, SocketSample};
use schema::{Ident, Named, PerRun, QdiscRow, ResourceRow, SocketRow};

pub fn resources(samples: &[ResourceSample], t0: f64, ident: &Ident) -> Vec<ResourceRow> {
    samples
        .iter()
        .map(|s| {
            let mut row = ResourceRow {
                t_s: s.t_unix_s - t0,
                component: Named::parse(&s.component),
                procs: s.procs,
                cpu_s: s.cpu_ns.map(|v| v as f64 / 1e9),
                cpu_source: s.cpu_source.to_string(),
                throttled_ms: s.throttled_ns.map(|v| v as f64 / 1e6),
                nr_throttled: s.nr_throttled,
                memory_bytes: s.memory_bytes,
                rss_bytes: Some(s.rss_bytes),
                temp_files: s.temp_files,
                temp_logical_bytes: s.temp_logical_bytes,
                temp_allocated_bytes: s.temp_allocated_bytes,
                sockets: s.sockets,
                send_queue_bytes: s.send_queue_bytes,
                recv_queue_bytes: s.recv_queue_bytes,
                accept_backlog: Some(s.accept_backlog),
                fds: Some(s.fds),
                fd_limit: s.fd_limit,
                ..ResourceRow::default()
            };
            row.stamp(ident);
            row
        })
        .collect()
}

pub fn qdiscs(samples: &[QdiscSample], t0: f64, ident: &Ident) -> Vec<QdiscRow> {
    samples
        .iter()
        .map(|s| {
            let q = &s.stats;
            let mut row = QdiscRow {
                t_s: s.t_unix_s - t0,
                side: s.side.to_string(),
                dev: s.dev.clone(),
                kind: q.kind.clone(),
                sent_bytes: q.bytes,
                sent_packets: q.packets,
                drops: q.drops,
                overlimits: q.overlimits,
                backlog_bytes: q.backlog,
                backlog_packets: q.qlen,
                class: q.parent.clone().unwrap_or_default(),
                client_addr: q.client.map(|a| a.to_string()).unwrap_or_default(),
                ..QdiscRow::default()
            };
            row.stamp(ident);
            row
        })
        .collect()
}

pub fn sockets(samples: &[SocketSample], t0: f64, ident: &Ident) -> Vec<SocketRow> {
    samples
        .iter()
        .map(|s| {
            let mut row = SocketRow {
                t_s: s.t_unix_s - t0,
                component: Named::parse(&s.component),
                local: s.local.clone(),
                remote: s.remote.clone(),
                state: s.state.to_string(),
                tx_queue_bytes: s.tx_queue_bytes,
                rx_queue_bytes: s.rx_queue_bytes,
                source: s.source.to_string(),
                netns: s.netns,
                ..SocketRow::default()
            };
            if let Some(t) = &s.tcp {
                let w = |v: Option<u32>| v.map(u64::from);
                row.snd_cwnd_segs = w(t.snd_cwnd);
                row.snd_mss_bytes = w(t.snd_mss);
                row.snd_wnd_bytes = w(t.snd_wnd);
                row.rtt_us = w(t.rtt_us);
                row.rttvar_us = w(t.rttvar_us);
                row.unacked_segs = w(t.unacked);
                row.in_flight_segs = w(t.in_flight);
                row.total_retrans_segs = w(t.total_retrans);
                row.notsent_bytes = w(t.notsent_bytes);
                row.bytes_acked = t.bytes_acked;
                row.bytes_received = t.bytes_received;
                row.delivery_rate_bytes_per_s = t.delivery_rate;
                row.busy_us = t.busy_us;
                row.rwnd_limited_us = t.rwnd_limited_us;
                row.sndbuf_limited_us = t.sndbuf_limited_us;
                row.rcv_space_bytes = w(t.rcv_space);
                row.rcv_ssthresh_bytes = w(t.rcv_ssthresh);
            }
            if let Some(m) = &s.mem {
                row.rmem_alloc_bytes = Some(m.rmem_alloc.into());
                row.rcvbuf_bytes = Some(m.rcvbuf.into());
                row.wmem_alloc_bytes = Some(m.wmem_alloc.into());
                row.sndbuf_bytes = Some(m.sndbuf.into());
                row.wmem_queued_bytes = Some(m.wmem_queued.into());
                row.fwd_alloc_bytes = Some(m.fwd_alloc.into());
                row.drops = Some(m.drops.into());
            }
            row.stamp(ident);
            row
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use schema::{Appender, Component, RESOURCES_CSV};

    #[test]
    fn missing_values_are_empty_cells_and_times_are_relative() {
        let s = ResourceSample {
            t_unix_s: 101.5,
            component: "app".into(),
            cpu_ns: Some(2_500_000_000),
            cpu_source: "cgroup",
            ..ResourceSample::default()
        };
        let ident = Ident {
            run_id: "007".into(),
            ..Ident::default()
        };
        let rows = resources(&[s], 100.0, &ident);
        assert_eq!(rows[0].component, Component::App);
        let dir = tempfile::tempdir().unwrap();
        let mut a = Appender::new(dir.path().join(RESOURCES_CSV));
        a.append(&rows).unwrap();
        let text = std::fs::read_to_string(a.path()).unwrap();
        let cells: Vec<&str> = text.lines().nth(1).unwrap().split(',').collect();
        assert_eq!(cells[0], "007");
        assert_eq!(cells[5], "1.500");
        assert_eq!(cells[8], "2.500000");
        // No cgroup memory reading: an empty cell, not a zero.
        assert_eq!(cells[12], "");
    }
}
