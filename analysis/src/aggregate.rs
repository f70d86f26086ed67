//! From rows to the original's figures: per run (nearest-rank percentiles
//! of its `/fast` requests, medians of its `/large` responses, resource use
//! per component) and per condition (the median of its runs, with the min
//! and max of p95). Everything is computed from the row structs of
//! the `schema` crate, so rows read back from a directory (or merged from
//! several) aggregate exactly as the rows of a reproduction in progress.

use std::collections::BTreeMap;

use common::stats::{median, rank_index};

use catalogue::Condition;
use catalogue::published;
use schema::{
    AppSendRow, Component, ComponentColumns, ConditionRow, DimCells, Direction, DirectionName,
    LargeRow, Named, RequestRow, ResourceRow, RouteName, RunRow, ServerName,
};

/// The figures of one condition: a row of `conditions.csv`.
pub type ConditionFigures = ConditionRow;

/// The figures of one run: a row of `runs.csv`.
pub type RunFigures = RunRow;

/// Bytes in one MiB, the unit of `temp_peak_mib`.
const MIB: f64 = (1u64 << 20) as f64;

/// Nearest-rank percentile where failed requests rank as the slowest: a
/// percentile that lands on a failure has no value, rather than a flattering
/// one computed from the successes alone.
pub fn percentile_with_failures(ok_values: &[f64], total: usize, p: f64) -> Option<f64> {
    if total == 0 {
        return None;
    }
    let mut sorted = ok_values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(rank_index(total, p)).copied()
}

/// Error kinds in name order, `;` between them; `None` for none.
fn kinds<'a>(all: impl Iterator<Item = &'a str>) -> Option<String> {
    let set: std::collections::BTreeSet<&str> = all.flat_map(|k| k.split(';')).collect();
    (!set.is_empty()).then(|| set.into_iter().collect::<Vec<_>>().join(";"))
}

/// Whether the median of `runs`' p95, the runs whose p95 fell among failed
/// requests ranking last, is one of those: when at least half are.
fn median_p95_failed(runs: &[&RunRow]) -> bool {
    let failed = runs.iter().filter(|r| r.p95_error.is_some()).count();
    failed > 0 && 2 * failed >= runs.len()
}

/// Computes a run's figures from its rows: the figure columns of its
/// `runs.csv` row (identity, status and caps are the caller's).
pub fn run_figures(
    requests: &[RequestRow],
    large: &[LargeRow],
    app_sends: &[AppSendRow],
    resources: &[ResourceRow],
) -> RunRow {
    let mut f = RunRow::default();
    let ok: Vec<f64> = requests
        .iter()
        .filter(|r| r.ok())
        .filter_map(|r| r.latency_ms)
        .collect();
    let n = requests.len();
    f.fast_requests = n as u64;
    f.fast_ok = ok.len() as u64;
    f.fast_errors = f.fast_requests - f.fast_ok;
    f.p50_ms = percentile_with_failures(&ok, n, 50.0);
    f.p95_ms = percentile_with_failures(&ok, n, 95.0);
    f.p99_ms = percentile_with_failures(&ok, n, 99.0);
    if n > 0 && f.p95_ms.is_none() {
        // The rank fell among the failures: say what they were.
        f.p95_error = kinds(
            requests
                .iter()
                .filter(|r| !r.ok())
                .map(|r| r.error.as_deref().map_or("", str::trim))
                .map(|e| if e.is_empty() { "failed" } else { e }),
        );
    }
    f.max_ms = if ok.len() == n {
        ok.iter().copied().reduce(f64::max)
    } else {
        None
    };
    f.max_schedule_lag_ms = requests
        .iter()
        .filter_map(|r| r.schedule_lag_ms)
        .reduce(f64::max);
    let received: Vec<f64> = large
        .iter()
        .filter(|l| l.ok())
        .filter_map(|l| l.receive_s)
        .collect();
    f.large_responses = large.len() as u64;
    f.large_ok = received.len() as u64;
    f.client_receive_s = median(&received);
    let sent: Vec<f64> = app_sends
        .iter()
        .filter(|s| s.complete == Some(true))
        .filter_map(|s| s.app_send_s)
        .collect();
    f.app_send_s = median(&sent);
    f.temp_peak_mib = resources
        .iter()
        .filter(|s| s.component == Component::Proxy)
        .filter_map(|s| s.temp_logical_bytes)
        .max()
        .map(|b| b as f64 / MIB);
    for &c in Component::ALL {
        let mine: Vec<&ResourceRow> = resources.iter().filter(|s| s.component == c).collect();
        if !mine.is_empty() {
            f.set_component(c, component_use(&mine));
        }
    }
    f
}

/// Resource use of one component over one run, from its samples in time
/// order (caps are the caller's).
pub fn component_use(s: &[&ResourceRow]) -> ComponentColumns {
    let (Some(first), Some(last)) = (s.first(), s.last()) else {
        return ComponentColumns::default();
    };
    let elapsed = last.t_s - first.t_s;
    let cpu_cores = match (first.cpu_s, last.cpu_s) {
        (Some(a), Some(b)) if elapsed > 0.0 && b >= a => Some((b - a) / elapsed),
        _ => None,
    };
    let throttled_ms = match (first.throttled_ms, last.throttled_ms) {
        (Some(a), Some(b)) if b >= a => Some(b - a),
        _ => None,
    };
    ComponentColumns {
        cpu_cores,
        throttled_ms,
        memory_peak_bytes: s.iter().filter_map(|x| x.memory_bytes).max(),
        rss_peak_bytes: s.iter().filter_map(|x| x.rss_bytes).max(),
        ..ComponentColumns::default()
    }
}

/// Aggregates completed runs as the original did: the median of per-run
/// values, the min and max of per-run p95, the max of temp peaks. Fills
/// the figure columns of a `conditions.csv` row.
pub fn condition_figures(runs: &[&RunRow]) -> ConditionRow {
    let vals =
        |f: fn(&RunRow) -> Option<f64>| -> Vec<f64> { runs.iter().filter_map(|r| f(r)).collect() };
    let p95s = vals(|r| r.p95_ms);
    let all_p95 = p95s.len() == runs.len();
    ConditionRow {
        runs: runs.len() as u32,
        p50: median(&vals(|r| r.p50_ms)),
        // A run whose p95 landed on a failed request has no p95; the
        // condition then reports none either, rather than the median of the
        // others.
        p95: if all_p95 { median(&p95s) } else { None },
        p95_min: p95s.iter().copied().reduce(f64::min),
        p95_max: if all_p95 {
            p95s.iter().copied().reduce(f64::max)
        } else {
            None
        },
        app_send_s: median(&vals(|r| r.app_send_s)),
        client_receive_s: median(&vals(|r| r.client_receive_s)),
        temp_peak_mib: vals(|r| r.temp_peak_mib).into_iter().reduce(f64::max),
        fast_requests: runs.iter().map(|r| r.fast_requests).sum(),
        fast_errors: runs
            .iter()
            .map(|r| r.fast_requests.saturating_sub(r.fast_ok))
            .sum(),
        max_schedule_lag_ms: vals(|r| r.max_schedule_lag_ms).into_iter().reduce(f64::max),
        app_cpu_cores: median(&vals(|r| r.app_cpu_cores)),
        p95_error: if all_p95 || !median_p95_failed(runs) {
            None
        } else {
            kinds(runs.iter().filter_map(|r| r.p95_error.as_deref()))
        },
        ..ConditionRow::default()
    }
}

/// Every row of `conditions.csv` from the rows of `runs.csv`: one per
/// condition with at least one run, in condition order, the completed runs
/// aggregated, the others counted and the first of them quoted, and the
/// published figures beside. A condition is its server, route, slow
/// clients, direction and [`DimCells`] (namespaces, sysctls, slow-client
/// kind, link, reader), so runs of two grid cells never share a row.
pub fn conditions(runs: &[RunRow]) -> Vec<ConditionRow> {
    type Key = (DirectionName, ServerName, RouteName, u32, DimCells);
    let mut groups: BTreeMap<Key, Vec<&RunRow>> = BTreeMap::new();
    for r in runs {
        let direction = r
            .direction
            .or_download()
            .map_or(r.direction.clone(), Named::Known);
        groups
            .entry((
                direction,
                r.server.clone(),
                r.route.clone(),
                r.slow_clients,
                r.dims(),
            ))
            .or_default()
            .push(r);
    }
    groups
        .into_iter()
        .map(|((direction, server, route, slow, dims), runs)| {
            let download = direction == Direction::Download;
            let ok: Vec<&RunRow> = runs.iter().copied().filter(|r| r.ok()).collect();
            let failed: Vec<&RunRow> = runs.iter().copied().filter(|r| !r.ok()).collect();
            let publ = match (server.known(), route.known()) {
                (Some(s), Some(r)) if download => published::reference(s, r, slow),
                _ => None,
            };
            let pp = publ.as_ref().map(|(p, _)| *p);
            let mut row = ConditionRow {
                server,
                route,
                slow_clients: slow,
                runs_failed: failed.len() as u32,
                published_p95: pp.map(|p| p.p95),
                published_p95_min: pp.and_then(|p| p.p95_min),
                published_p95_max: pp.and_then(|p| p.p95_max),
                published_app_send_s: pp.and_then(|p| p.app_send_s),
                published_client_receive_s: pp.and_then(|p| p.client_receive_s),
                published_from: publ.map(|(_, from)| from),
                note: failed
                    .first()
                    .map(|r| format!("{}: {}", r.status, r.reason.as_deref().unwrap_or_default())),
                direction,
                ..condition_figures(&ok)
            };
            row.set_dims(dims);
            row
        })
        .collect()
}

/// The conditions this version knows, by condition (the cross-check and
/// the console table need the server's and route's properties).
pub fn by_condition(rows: &[ConditionRow]) -> BTreeMap<Condition, ConditionRow> {
    rows.iter()
        .filter_map(|c| {
            let key = schema::dims::condition_of(
                c.server.known(),
                c.route.known(),
                c.slow_clients,
                c.direction.or_download(),
                &c.dims(),
            )?;
            Some((key, c.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use catalogue::{Route, Server};
    use schema::{Named, RunStatus};

    #[test]
    fn failures_rank_last() {
        let ok: Vec<f64> = (1..=70).map(f64::from).collect();
        // 72 requests, 2 failed: p95 is rank 69, still a success.
        assert_eq!(percentile_with_failures(&ok, 72, 95.0), Some(69.0));
        // p99 is rank 72: a failure, so no value.
        assert_eq!(percentile_with_failures(&ok, 72, 99.0), None);
        assert_eq!(percentile_with_failures(&[], 0, 95.0), None);
    }

    #[test]
    fn run_figures_from_rows() {
        let req: Vec<RequestRow> = (1..=72)
            .map(|i| RequestRow {
                seq: i,
                latency_ms: Some(i as f64 * 10.0),
                status: Some(200),
                schedule_lag_ms: Some(0.1),
                ..RequestRow::default()
            })
            .collect();
        let large = |receive: f64| LargeRow {
            receive_s: Some(receive),
            status: Some(200),
            ..LargeRow::default()
        };
        let send = |s: Option<f64>, complete: bool| AppSendRow {
            app_send_s: s,
            complete: Some(complete),
            ..AppSendRow::default()
        };
        let f = run_figures(
            &req,
            &[large(8.0), large(8.2)],
            &[
                send(Some(6.5), true),
                send(Some(6.7), true),
                send(None, false),
            ],
            &[],
        );
        assert_eq!(f.fast_requests, 72);
        assert_eq!(f.p95_ms, Some(690.0));
        assert_eq!(f.p50_ms, Some(360.0));
        assert_eq!(f.max_ms, Some(720.0));
        assert_eq!(f.client_receive_s, Some(8.1));
        assert_eq!(f.app_send_s, Some(6.6));
        assert_eq!(f.max_schedule_lag_ms, Some(0.1));
        assert_eq!(f.large_ok, 2);
    }

    #[test]
    fn a_p95_among_failures_says_what_they_were() {
        let req = |ok: u64, failed: &[&str]| -> Vec<RequestRow> {
            let good = (1..=ok).map(|i| RequestRow {
                seq: i,
                latency_ms: Some(i as f64),
                status: Some(200),
                ..RequestRow::default()
            });
            let bad = failed.iter().map(|e| RequestRow {
                error: Some(e.to_string()),
                ..RequestRow::default()
            });
            good.chain(bad).collect()
        };
        // Every request timed out (slowloris holding both workers).
        let all = run_figures(&req(0, &["timeout"; 24]), &[], &[], &[]);
        assert_eq!((all.p95_ms, all.fast_ok), (None, 0));
        assert_eq!(all.p95_error.as_deref(), Some("timeout"));
        // Two failures of 72 leave p95 on a success: nothing to say.
        let few = run_figures(&req(70, &["timeout", "reset"]), &[], &[], &[]);
        assert_eq!((few.p95_ms, few.p95_error), (Some(69.0), None));
        let mixed = run_figures(&req(10, &["timeout", "reset", "timeout"]), &[], &[], &[]);
        assert_eq!(mixed.p95_error.as_deref(), Some("reset;timeout"));
        assert_eq!(run_figures(&[], &[], &[], &[]).p95_error, None);

        // A condition: the median of its runs, failures ranking last.
        let timed_out = RunRow {
            p95_error: Some("timeout".into()),
            ..RunRow::default()
        };
        let fast = |p: f64| RunRow {
            p95_ms: Some(p),
            ..RunRow::default()
        };
        let c = condition_figures(&[&timed_out]);
        assert_eq!((c.p95, c.p95_error.as_deref()), (None, Some("timeout")));
        let c = condition_figures(&[&fast(3.0), &timed_out, &timed_out]);
        assert_eq!((c.p95, c.p95_error.as_deref()), (None, Some("timeout")));
        assert_eq!(c.p95_min, Some(3.0));
        // One of three: the median is a success, though p95 stays empty.
        let c = condition_figures(&[&fast(3.0), &fast(4.0), &timed_out]);
        assert_eq!((c.p95, c.p95_error), (None, None));
        let c = condition_figures(&[&fast(3.0), &timed_out]);
        assert_eq!(c.p95_error.as_deref(), Some("timeout"));
        assert_eq!(condition_figures(&[&fast(3.0)]).p95_error, None);
    }

    #[test]
    fn component_use_is_an_increment_over_elapsed_time() {
        let s = |t: f64, cpu: f64, thr: f64, mem: u64| ResourceRow {
            t_s: t,
            component: Component::App.into(),
            cpu_s: Some(cpu),
            throttled_ms: Some(thr),
            memory_bytes: Some(mem),
            rss_bytes: Some(mem / 2),
            ..ResourceRow::default()
        };
        let samples = vec![
            s(0.0, 1.0, 0.0, 10),
            s(1.0, 1.1, 5.0, 30),
            s(2.0, 1.2, 7.0, 20),
        ];
        let f = run_figures(&[], &[], &[], &samples);
        let app = f.component(Component::App);
        assert!((app.cpu_cores.unwrap() - 0.1).abs() < 1e-9);
        assert_eq!(app.throttled_ms, Some(7.0));
        assert_eq!(app.memory_peak_bytes, Some(30));
        assert_eq!(app.rss_peak_bytes, Some(15));
        assert_eq!(f.component(Component::Proxy), ComponentColumns::default());
    }

    fn run(p95: f64, send: f64) -> RunRow {
        RunRow {
            server: Server::GunicornSync2.into(),
            route: Route::Direct.into(),
            slow_clients: 2,
            status: RunStatus::Ok.into(),
            p50_ms: Some(p95 / 2.0),
            p95_ms: Some(p95),
            app_send_s: Some(send),
            temp_peak_mib: Some(p95),
            fast_requests: 72,
            fast_ok: 72,
            ..RunRow::default()
        }
    }

    #[test]
    fn conditions_take_the_median_of_runs() {
        let mut runs = vec![run(5945.11, 6.5), run(5928.68, 6.6), run(6590.04, 6.4)];
        runs.push(RunRow {
            status: RunStatus::Failed.into(),
            reason: Some("gunicorn did not start".into()),
            ..run(1.0, 1.0)
        });
        runs.push(RunRow {
            server: Named::parse("other-server"),
            ..run(1.0, 1.0)
        });
        let rows = conditions(&runs);
        assert_eq!(rows.len(), 2, "one row per condition, unknown servers last");
        let c = &rows[0];
        assert_eq!(c.server, Server::GunicornSync2);
        assert_eq!(c.runs, 3);
        assert_eq!(c.runs_failed, 1);
        assert_eq!(c.note.as_deref(), Some("failed: gunicorn did not start"));
        assert_eq!(c.p95, Some(5945.11));
        assert_eq!(c.p95_min, Some(5928.68));
        assert_eq!(c.p95_max, Some(6590.04));
        assert_eq!(c.app_send_s, Some(6.5));
        assert_eq!(c.temp_peak_mib, Some(6590.04));
        assert_eq!(c.fast_requests, 216);
        assert_eq!(c.fast_errors, 0);
        assert_eq!(c.published_from.as_deref(), Some("gunicorn-sync2/direct"));
        assert_eq!(rows[1].server, Named::Unknown("other-server".into()));
        assert_eq!(rows[1].published_p95, None);
        assert_eq!(by_condition(&rows).len(), 1);
    }

    #[test]
    fn grid_cells_and_readers_are_conditions_of_their_own() {
        let cell = |wmem: u64, reader: &str, p95: f64| RunRow {
            netns: Some(true),
            sysctls: Some(format!(
                "net.ipv4.tcp_wmem=4096 16384 {wmem};net.ipv4.tcp_rmem=4096 131072 1048576"
            )),
            slow_kind: Some("pace".into()),
            reader: Some(reader.into()),
            ..run(p95, 1.0)
        };
        let base = RunRow {
            slow_clients: 0,
            netns: Some(true),
            slow_kind: Some("pace".into()),
            reader: Some("streamreader".into()),
            ..run(2.0, 1.0)
        };
        let runs = vec![
            cell(262144, "strict", 3000.0),
            cell(16777216, "strict", 1500.0),
            cell(16777216, "streamreader", 800.0),
            cell(16777216, "streamreader", 900.0),
            base,
        ];
        let rows = conditions(&runs);
        assert_eq!(rows.len(), 4, "never averaged across cells or readers");
        let figures = by_condition(&rows);
        assert_eq!(figures.len(), 4);
        let (c, f) = figures
            .iter()
            .find(|(c, _)| {
                c.buffers.wmem == Some(16 << 20)
                    && c.reader == Some(catalogue::ReaderModel::Streamreader)
            })
            .unwrap();
        assert_eq!((f.runs, f.p95), (2, Some(850.0)));
        assert_eq!(c.buffers.rmem, Some(1 << 20));
        assert_eq!(c.kind, Some(catalogue::cells::Kind::Pace));
        assert_eq!(f.sysctls, runs[2].sysctls);
        // The one baseline at the host's buffers serves every cell.
        let (p, from) = crate::crosscheck::baseline(&figures, *c).unwrap();
        assert_eq!(
            (p, from.as_str()),
            (2.0, "gunicorn-sync2/direct (host buffers)")
        );
        // Runs on the host (no cells) stay apart from runs in namespaces.
        let host = run(5000.0, 1.0);
        assert_eq!(conditions(&[host, cell(262144, "strict", 1.0)]).len(), 2);
    }

    #[test]
    fn runs_that_differ_only_in_mtu_are_two_conditions() {
        let at = |mtu: Option<u32>, p95: f64| RunRow {
            netns: Some(true),
            slow_kind: Some("pace".into()),
            reader: Some("strict".into()),
            mtu,
            ..run(p95, 1.0)
        };
        // A namespace row of a version before the column ran at 1500.
        let runs = [
            at(Some(1500), 7000.0),
            at(None, 6800.0),
            at(Some(65535), 1500.0),
        ];
        let rows = conditions(&runs);
        assert_eq!(rows.len(), 2, "{rows:?}");
        let mtus: Vec<Option<u32>> = rows.iter().map(|r| r.mtu).collect();
        assert_eq!(mtus, [Some(1500), Some(65535)]);
        assert_eq!((rows[0].runs, rows[0].p95), (2, Some(6900.0)));
        let figures = by_condition(&rows);
        let keys: Vec<Option<u32>> = figures.keys().map(|c| c.buffers.mtu).collect();
        assert_eq!(keys, [Some(1500), Some(65535)]);
        let labels: Vec<String> = figures.keys().map(|c| c.dims_label()).collect();
        assert_eq!(
            labels,
            [
                " reader=strict kind=pace mtu=1500",
                " reader=strict kind=pace mtu=65535"
            ]
        );
        // Host runs at the loopback's MTU stay apart from older host runs
        // that recorded none.
        let host = |mtu| RunRow {
            mtu,
            ..run(5000.0, 1.0)
        };
        assert_eq!(conditions(&[host(Some(65536)), host(None)]).len(), 2);
    }

    #[test]
    fn a_run_without_p95_leaves_the_condition_without_one() {
        let a = RunRow {
            p95_ms: Some(3.0),
            ..RunRow::default()
        };
        let b = RunRow::default();
        let c = condition_figures(&[&a, &b]);
        assert_eq!(c.p95, None);
        assert_eq!(c.p95_min, Some(3.0));
    }
}
