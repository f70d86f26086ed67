//! The scrubbable view's data: one run per route, cut into frames every
//! 100 ms, serialised as the JSON the page embeds. Each frame holds where
//! the slow responses' bytes are (chart 5's layers from
//! [`whereabouts::compute`], with chart 5's labels and colours) and what
//! each response's reader had read and held in its receive queue
//! (`slow-progress.csv`); beside the frames go the app's workers' busy
//! spans (`app-sends.csv`) and every `/fast` request's schedule and end
//! (`requests.csv`). A frame takes the latest sample at or before its
//! instant, never an interpolation; an instant no sample covers is `null`.
//! The page's script only looks these up; the one thing it decides itself
//! is which `/fast` requests are waiting at an instant (scheduled, not yet
//! answered).

use serde::Serialize;

use super::workers::{self, Workers};
use crate::charts::bytes::LAYERS;
use crate::data::Results;
use analysis::select::{self, Cond};
use analysis::whereabouts::{self, Whereabouts};
use schema::{LargeRow, RunRow};

/// The frame step, seconds: the clients' progress and pingora's gauge tick
/// every 100 ms, the socket samples every ~200 ms.
pub const DT: f64 = 0.1;
/// At most this many frames per run: a long run gets coarser frames, so the
/// page stays small.
const MAX_FRAMES: usize = 3000;
/// The whole view.
#[derive(Debug, Clone, Serialize)]
pub struct Timeline {
    pub server: String,
    pub slow: u32,
    /// The frame step, milliseconds.
    pub dt_ms: f64,
    pub frames: usize,
    /// The byte layers of every frame, left (read) to right (not yet
    /// written): chart 5's, bottom to top.
    pub layers: Vec<Layer>,
    /// The largest `/fast` latency of any panel, ms: the shared y scale.
    pub fast_max_ms: f64,
    pub panels: Vec<Panel>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Layer {
    pub label: String,
    /// `#rrggbb`.
    pub color: String,
    /// Whether any frame of any panel has bytes in it.
    pub shown: bool,
}

/// One route's run.
#[derive(Debug, Clone, Serialize)]
pub struct Panel {
    pub route: String,
    pub run_id: String,
    /// What the bytes layers can and cannot see on this route.
    pub note: String,
    /// Bytes of all its slow responses.
    pub total: u64,
    /// Per frame: bytes per layer (the order of [`Timeline::layers`]), or
    /// `null` where no socket sample covers the instant.
    pub bytes: Vec<Option<Vec<u64>>>,
    /// NGINX only: the logical size of its open temp files per frame (an
    /// upper bound of what they hold).
    pub temp: Option<Vec<Option<u64>>>,
    pub responses: Vec<Response>,
    pub workers: Workers,
    pub fast: Vec<Fast>,
}

/// One slow response, as its reader saw it.
#[derive(Debug, Clone, Serialize)]
pub struct Response {
    pub client: u32,
    pub bytes: u64,
    /// Per frame: bytes read from the socket (`received_bytes`).
    pub read: Vec<Option<u64>>,
    /// Per frame: the socket's receive queue (`socket_queue_bytes`), `null`
    /// where the file has no such column.
    pub queue: Vec<Option<u64>>,
    /// When the download ended whole, ms.
    pub end_ms: Option<f64>,
}

/// One `/fast` request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fast {
    pub scheduled_ms: f64,
    pub started_ms: f64,
    /// When its whole answer arrived; `None` for a failed request.
    pub end_ms: Option<f64>,
    pub ok: bool,
}

/// The runs the view shows, the choice written out in the section: the
/// runs of charts 3 and 5 (each condition's median-p95 run, ties by run
/// id) at the comparison's slow-client count (2, else the most), for the
/// first server in the report's order. Empty without such runs.
pub fn chosen(r: &Results) -> Vec<(Cond, &RunRow)> {
    let Some(slow) = select::comparison_slow(r) else {
        return Vec::new();
    };
    let shown = select::shown_runs(r, slow);
    let Some(server) = shown.first().map(|(c, _)| c.server.clone()) else {
        return Vec::new();
    };
    shown
        .into_iter()
        .filter(|(c, _)| c.server == server)
        .collect()
}

/// Rounds seconds to tenths of milliseconds.
pub(super) fn ms(s: f64) -> f64 {
    (s * 10_000.0).round() / 10.0
}

/// The latest value at or before `t` in a time-sorted series, if it is at
/// most `max_age` old.
fn latest<T: Copy>(series: &[(f64, T)], t: f64, max_age: f64) -> Option<T> {
    let i = series.partition_point(|(x, _)| *x <= t + 1e-9);
    let (x, v) = *series.get(i.checked_sub(1)?)?;
    (t - x <= max_age).then_some(v)
}

/// The median gap of a time-sorted series (its sampling period).
fn period(times: impl Iterator<Item = f64>) -> f64 {
    let t: Vec<f64> = times.collect();
    let mut gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_by(f64::total_cmp);
    gaps.get(gaps.len() / 2).copied().unwrap_or(0.2).max(DT)
}

/// One response's size, as chart 5 counts it.
fn size(l: &LargeRow, body: Option<f64>) -> u64 {
    l.content_length
        .map(|c| c as f64)
        .or(body)
        .unwrap_or(l.bytes as f64) as u64
}

/// The run's own data before it is cut into frames.
struct Run<'a> {
    cond: Cond,
    run: &'a RunRow,
    bytes: Result<Whereabouts, String>,
    large: Vec<&'a LargeRow>,
    end: f64,
}

fn gather<'a>(r: &'a Results, cond: Cond, run: &'a RunRow) -> Run<'a> {
    let id = &run.run_id;
    let large: Vec<&LargeRow> = r.large.iter().filter(|l| &l.run_id == id).collect();
    let fast_end = r
        .requests
        .iter()
        .filter(|q| &q.run_id == id)
        .map(|q| q.started_s + q.latency_ms.unwrap_or(0.0) / 1000.0);
    let large_end = large.iter().filter_map(|l| l.end_s());
    let progress_end = r.progress.iter().filter(|p| &p.run_id == id).map(|p| p.t_s);
    let end = fast_end
        .chain(large_end)
        .chain(progress_end)
        .fold(0.0f64, f64::max);
    Run {
        bytes: whereabouts::compute(r, id, &cond.route),
        cond,
        run,
        large,
        end,
    }
}

/// The view's data for the [`chosen`] runs, or `None` without any.
pub fn timeline(r: &Results) -> Option<Timeline> {
    let runs: Vec<Run> = chosen(r)
        .into_iter()
        .map(|(c, run)| gather(r, c, run))
        .collect();
    let first = runs.first()?;
    let (server, slow) = (first.cond.server.to_string(), first.cond.slow);
    let end = runs.iter().map(|x| x.end).fold(0.0f64, f64::max);
    let dt = (end / MAX_FRAMES as f64).max(DT);
    // A hair under, so that 3.0 / 0.1 = 30.000000000000004 makes 31 frames.
    let frames = (end / dt - 1e-6).ceil().max(0.0) as usize + 1;
    let times: Vec<f64> = (0..frames).map(|k| k as f64 * dt).collect();
    let panels: Vec<Panel> = runs.iter().map(|x| panel(r, x, &times, end)).collect();
    let layers = LAYERS
        .iter()
        .enumerate()
        .map(|(i, (label, c, _))| Layer {
            label: label.to_string(),
            color: format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2),
            shown: panels
                .iter()
                .flat_map(|p| p.bytes.iter().flatten())
                .any(|f| f[i] > 0),
        })
        .collect();
    let fast_max_ms = panels
        .iter()
        .flat_map(|p| &p.fast)
        .filter_map(|f| Some(f.end_ms? - f.started_ms))
        .fold(10.0f64, f64::max);
    Some(Timeline {
        server,
        slow,
        dt_ms: ms(dt),
        frames,
        layers,
        fast_max_ms,
        panels,
    })
}

fn panel(r: &Results, x: &Run, times: &[f64], end: f64) -> Panel {
    let id = &x.run.run_id;
    let route = &x.cond.route;
    let body = r.profile_f64(&["body", "large_bytes"]);
    let ended = x
        .large
        .iter()
        .map(|l| l.end_s())
        .collect::<Option<Vec<f64>>>()
        .map(|e| e.into_iter().fold(0.0f64, f64::max))
        .filter(|_| !x.large.is_empty());
    let (bytes, temp, total, mut note) = match &x.bytes {
        Ok(w) => {
            let grid = period(w.samples.iter().map(|s| s.t));
            let series: Vec<(f64, usize)> = w.samples.iter().map(|s| s.t).zip(0..).collect();
            let bytes = times
                .iter()
                .map(|&t| match latest(&series, t, 1.5 * grid) {
                    Some(i) => Some(
                        LAYERS
                            .iter()
                            .map(|(_, _, value)| value(&w.samples[i]).round().max(0.0) as u64)
                            .collect(),
                    ),
                    // After every download ended whole, every byte was read.
                    None if ended.is_some_and(|e| t >= e) => Some(
                        (0..LAYERS.len())
                            .map(|i| if i == 0 { w.total as u64 } else { 0 })
                            .collect(),
                    ),
                    None => None,
                })
                .collect();
            let temp = select::is_nginx(route).then(|| {
                times
                    .iter()
                    .map(|&t| latest(&w.temp_logical, t, 1.5 * grid).map(|v| v as u64))
                    .collect()
            });
            (bytes, temp, w.total as u64, bytes_note(route))
        }
        Err(e) => (
            vec![None; times.len()],
            None,
            x.large.iter().map(|l| size(l, body)).sum(),
            format!("where the bytes are is not drawn: {e}"),
        ),
    };
    let workers = workers::lanes(r, &x.cond.server, id, &x.large, end);
    if !workers.known {
        note.push_str("; ");
        note.push_str(&workers.note);
    }
    Panel {
        route: route.to_string(),
        run_id: id.clone(),
        note,
        total,
        bytes,
        temp,
        responses: responses(r, x, times, body),
        workers,
        fast: r
            .requests
            .iter()
            .filter(|q| &q.run_id == id)
            .map(|q| Fast {
                scheduled_ms: ms(q.scheduled_s),
                started_ms: ms(q.started_s),
                end_ms: q
                    .ok()
                    .then(|| ms(q.started_s + q.latency_ms.unwrap_or(0.0) / 1000.0)),
                ok: q.ok(),
            })
            .collect(),
    }
}

fn bytes_note(route: &schema::RouteName) -> String {
    if select::is_nginx(route) {
        "NGINX's memory buffers are not sampled: its bytes are in the derived grey layer; \
         the text under the bar gives its temp files' logical size"
            .into()
    } else if !select::has_proxy(route) {
        "direct: no proxy between the app and the clients".into()
    } else {
        "inside the proxy: pingora's gauge".into()
    }
}

fn responses(r: &Results, x: &Run, times: &[f64], body: Option<f64>) -> Vec<Response> {
    let id = &x.run.run_id;
    let progress: Vec<_> = r.progress.iter().filter(|p| &p.run_id == id).collect();
    // An empty queue cell means an empty queue in files that have the
    // column, and nothing known in files written before it.
    let has_queue = progress.iter().any(|p| p.socket_queue_bytes.is_some());
    let period = period(progress.iter().map(|p| p.t_s).filter(|t| *t > 0.0));
    let mut out: Vec<Response> = x
        .large
        .iter()
        .map(|l| {
            let bytes = size(l, body);
            let mut series: Vec<(f64, (u64, u64))> = progress
                .iter()
                .filter(|p| p.client == l.client)
                .map(|p| {
                    let q = p.socket_queue_bytes.unwrap_or(0);
                    (p.t_s, (p.received_bytes, q))
                })
                .collect();
            series.sort_by(|a, b| a.0.total_cmp(&b.0));
            let end = l.end_s();
            let at = |t: f64| match latest(&series, t, 1.5 * period) {
                Some(v) => Some(v),
                None if end.is_some_and(|e| t >= e) => Some((bytes, 0)),
                None => None,
            };
            Response {
                client: l.client,
                bytes,
                read: times.iter().map(|&t| at(t).map(|v| v.0)).collect(),
                queue: times
                    .iter()
                    .map(|&t| at(t).filter(|_| has_queue).map(|v| v.1))
                    .collect(),
                end_ms: end.map(ms),
            }
        })
        .collect();
    out.sort_by_key(|r| r.client);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scrub::workers::Span;
    use catalogue::{Route, Server};
    use schema::{AppSendRow, LargeRow, Named, ProgressRow, RequestRow, RunStatus, SocketRow};

    fn run(id: &str, route: Route) -> RunRow {
        RunRow {
            run_id: id.into(),
            server: Server::RustSync2.into(),
            route: route.into(),
            slow_clients: 1,
            repetition: 1,
            status: RunStatus::Ok.into(),
            p95_ms: Some(1.0),
            ..RunRow::default()
        }
    }

    fn sock(t: f64, component: &str, local: &str, remote: &str, tx: u64, rx: u64) -> SocketRow {
        SocketRow {
            run_id: "1".into(),
            t_s: t,
            component: Named::parse(component),
            local: local.into(),
            remote: remote.into(),
            state: if remote.ends_with(":0") {
                "LISTEN"
            } else {
                "ESTABLISHED"
            }
            .into(),
            tx_queue_bytes: tx,
            rx_queue_bytes: rx,
            ..SocketRow::default()
        }
    }

    /// One direct run of one 100-byte response: the app writes until 1.5 s,
    /// the client reads until 2.0 s, the sockets are sampled from 0.8 s
    /// every 0.2 s with a gap; three `/fast` requests, answered at 1.6 s,
    /// failed, answered at 3.0 s.
    fn results() -> Results {
        let progress = |t: f64, b: u64, q: Option<u64>| ProgressRow {
            run_id: "1".into(),
            t_s: t,
            received_bytes: b,
            consumed_bytes: b,
            socket_queue_bytes: q,
            ..ProgressRow::default()
        };
        let fast = |seq: u64, t: f64, latency: Option<f64>| RequestRow {
            run_id: "1".into(),
            seq,
            scheduled_s: t,
            started_s: t,
            latency_ms: latency,
            status: latency.map(|_| 200),
            ..RequestRow::default()
        };
        Results {
            runs: vec![run("1", Route::Direct)],
            large: vec![LargeRow {
                run_id: "1".into(),
                client: 0,
                connect_ms: Some(0.0),
                status: Some(200),
                bytes: 100,
                content_length: Some(100),
                receive_s: Some(2.0),
                app_send_s: Some(1.5),
                app_worker: Some("sync-1".into()),
                ..LargeRow::default()
            }],
            progress: vec![
                progress(0.1, 0, None),
                progress(0.2, 0, None),
                progress(0.9, 40, Some(10)),
                progress(1.0, 40, Some(10)),
                progress(1.1, 44, Some(10)),
                progress(1.9, 80, None),
            ],
            app_sends: vec![AppSendRow {
                run_id: "1".into(),
                t_s: Some(0.0),
                app_send_s: Some(1.5),
                bytes: 100,
                worker: Some("sync-1".into()),
                complete: Some(true),
                ..AppSendRow::default()
            }],
            sockets: vec![
                sock(0.8, "app", "127.0.0.1:5000", "0.0.0.0:0", 0, 0),
                sock(0.8, "app", "127.0.0.1:5000", "127.0.0.1:40000", 30, 0),
                sock(0.8, "loadgen", "127.0.0.1:40000", "127.0.0.1:5000", 0, 10),
                sock(1.0, "app", "127.0.0.1:5000", "127.0.0.1:40000", 30, 0),
                sock(1.0, "loadgen", "127.0.0.1:40000", "127.0.0.1:5000", 0, 10),
                sock(1.2, "loadgen", "127.0.0.1:40000", "127.0.0.1:5000", 0, 10),
                sock(2.0, "loadgen", "127.0.0.1:40000", "127.0.0.1:5000", 0, 5),
            ],
            requests: vec![
                fast(0, 0.25, Some(1350.0)),
                fast(1, 0.5, None),
                fast(2, 2.5, Some(500.0)),
            ],
            ..Results::default()
        }
    }

    /// The index of a layer by its label's start.
    fn layer(t: &Timeline, label: &str) -> usize {
        t.layers
            .iter()
            .position(|l| l.label.starts_with(label))
            .unwrap_or_else(|| panic!("no layer {label}"))
    }

    #[test]
    fn frames_place_the_bytes_of_the_latest_sample() {
        let t = timeline(&results()).expect("a timeline");
        assert_eq!((t.server.as_str(), t.slow), ("rust-sync2", 1));
        assert_eq!(t.dt_ms, 100.0);
        // The last `/fast` answer at 3.0 s ends the run: frames 0.0 to 3.0 s.
        assert_eq!(t.frames, 31);
        let p = &t.panels[0];
        assert_eq!((p.route.as_str(), p.total), ("direct", 100));
        // Frame 11 (1.1 s) takes the samples of 1.0 s: 40 read by then
        // (progress at 1.0 s), 10 in the client's queue, 30 in the app's
        // send queue, and the 20 left not yet written (the app writes
        // until 1.5 s).
        let f = p.bytes[11].as_ref().expect("a sample covers 1.1 s");
        assert_eq!(f[layer(&t, "consumed")], 40);
        assert_eq!(f[layer(&t, "clients' receive")], 10);
        assert_eq!(f[layer(&t, "kernel between")], 30);
        assert_eq!(f[layer(&t, "not yet written")], 20);
        assert_eq!(f.iter().sum::<u64>(), 100);
        // No sample yet at 0.5 s, and none within 1.5 periods (0.3 s) of
        // 1.6 s: nothing is drawn there, nothing is held over.
        assert!(p.bytes[5].is_none() && p.bytes[16].is_none());
        // At 2.0 s the app has finished: the 15 bytes no socket holds any
        // more are not sampled, not unwritten.
        let f = p.bytes[20].as_ref().unwrap();
        assert_eq!(f[layer(&t, "consumed")], 80);
        assert_eq!(f[layer(&t, "not sampled")], 15);
        assert_eq!(f[layer(&t, "not yet written")], 0);
        // After the last sample the download has ended: every byte read.
        let f = p.bytes[25].as_ref().unwrap();
        assert_eq!(f[layer(&t, "consumed")], 100);
        assert_eq!(f.iter().sum::<u64>(), 100);
        assert!(t.layers[layer(&t, "kernel between")].shown);
        assert!(!t.layers[layer(&t, "in the proxy")].shown);
        assert!(p.temp.is_none());
    }

    #[test]
    fn each_response_has_its_reads_and_queue_per_frame() {
        let t = timeline(&results()).unwrap();
        let r = &t.panels[0].responses[0];
        assert_eq!((r.client, r.bytes, r.end_ms), (0, 100, Some(2000.0)));
        assert_eq!((r.read[9], r.queue[9]), (Some(40), Some(10)));
        // An empty queue cell in a file with the column is an empty queue.
        assert_eq!((r.read[19], r.queue[19]), (Some(80), Some(0)));
        // No progress row within 1.5 periods before 0.5 s.
        assert_eq!((r.read[5], r.queue[5]), (None, None));
        // After the download ended and the rows stopped: all of it.
        assert_eq!((r.read[25], r.queue[25]), (Some(100), Some(0)));
    }

    #[test]
    fn workers_are_busy_until_the_app_finished_writing() {
        let t = timeline(&results()).unwrap();
        let w = &t.panels[0].workers;
        assert!(w.known);
        // rust-sync2 has 2 workers; one wrote the response.
        assert_eq!(w.lanes.len(), 2);
        assert_eq!(w.lanes[0].name, "sync-1");
        assert_eq!(
            w.lanes[0].spans,
            [Span {
                start_ms: 0.0,
                end_ms: 1500.0,
                client: Some(0),
                until: "app_send_s"
            }]
        );
        assert!(w.lanes[1].spans.is_empty());
        let fast = &t.panels[0].fast;
        assert_eq!(fast[0].end_ms, Some(1600.0));
        assert_eq!((fast[1].end_ms, fast[1].ok), (None, false));
        assert_eq!(t.fast_max_ms, 1350.0);
    }

    #[test]
    fn an_async_server_says_its_workers_are_not_known() {
        let mut r = results();
        r.runs[0].server = Server::RustAsync.into();
        for x in &mut r.requests {
            x.server = Server::RustAsync.into();
        }
        let t = timeline(&r).unwrap();
        let w = &t.panels[0].workers;
        assert!(!w.known && w.lanes.is_empty());
        assert!(w.note.contains("not known"), "{}", w.note);
        assert!(t.panels[0].note.contains("not known"));
    }

    #[test]
    fn the_runs_are_one_per_route_of_the_first_server() {
        let mut r = results();
        r.runs.push(run("2", Route::NginxOn));
        r.runs.push(RunRow {
            server: Server::GunicornSync2.into(),
            ..run("3", Route::Direct)
        });
        r.runs.push(RunRow {
            p95_ms: Some(5.0),
            repetition: 2,
            ..run("4", Route::Direct)
        });
        r.runs.push(RunRow {
            p95_ms: Some(0.5),
            repetition: 3,
            ..run("5", Route::Direct)
        });
        let got: Vec<(String, String)> = chosen(&r)
            .into_iter()
            .map(|(c, x)| (c.label(), x.run_id.clone()))
            .collect();
        // gunicorn-sync2 sorts first; its one route is shown alone.
        assert_eq!(got, [("gunicorn-sync2 direct".into(), "3".into())]);
        r.runs.retain(|x| x.run_id != "3");
        let got: Vec<(String, String)> = chosen(&r)
            .into_iter()
            .map(|(c, x)| (c.label(), x.run_id.clone()))
            .collect();
        // The median p95 of runs 1, 4, 5 is run 1's.
        assert_eq!(
            got,
            [
                ("rust-sync2 direct".into(), "1".into()),
                ("rust-sync2 nginx-on".into(), "2".into())
            ]
        );
    }
}
