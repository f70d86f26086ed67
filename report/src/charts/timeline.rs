//! Chart 3: one run per route over time. Every `/fast` request is a point at
//! the time it was sent and the time it waited; the slow downloads are the
//! shaded spans behind. The run shown is the one with its condition's
//! median p95, as in the original.

use anyhow::Result;
use plotters::prelude::*;

use super::{
    Area, Csv, FONT, INK, Key, cell, decade_label, decades, height, legend, panels, plot_err,
    quiet_mesh, route_color, svg,
};
use crate::data::Results;
use crate::doc::{Block, Figure, Section, text};
use crate::fmt;
use analysis::select::{self, Cond};
use schema::{RequestRow, RunRow};

const SPAN: RGBColor = RGBColor(120, 120, 120);
const FAILED: RGBColor = RGBColor(160, 0, 0);

struct Panel<'a> {
    cond: Cond,
    run: &'a RunRow,
    requests: Vec<&'a RequestRow>,
    /// (start, end) of each slow download on the run's clock.
    spans: Vec<(f64, f64)>,
    app_ends: Vec<f64>,
}

fn panels_of(r: &Results, slow: u32) -> Vec<Panel<'_>> {
    select::shown_runs(r, slow)
        .into_iter()
        .map(|(cond, run)| {
            let requests = r
                .requests
                .iter()
                .filter(|q| q.run_id == run.run_id)
                .collect();
            let spans = r
                .large
                .iter()
                .filter(|l| l.run_id == run.run_id)
                .map(|l| {
                    // A download that failed ends at its last progress sample.
                    let last = r
                        .progress
                        .iter()
                        .filter(|p| p.run_id == run.run_id && p.client == l.client)
                        .map(|p| p.t_s)
                        .fold(l.started_s, f64::max);
                    (l.started_s, l.end_s().unwrap_or(last))
                })
                .collect();
            let app_ends = r
                .app_sends
                .iter()
                .filter(|a| a.run_id == run.run_id)
                .filter_map(|a| a.end_s())
                .collect();
            Panel {
                cond,
                run,
                requests,
                spans,
                app_ends,
            }
        })
        .collect()
}

/// Builds section 3.
pub fn section(r: &Results, s: &mut Section) -> Result<()> {
    s.para(
        "Each point is one `/fast` request: when it was sent (seconds since the slow readers started) and how long \
         it took, from the start of its TCP connect to the whole body. The load generator sends on schedule \
         whether or not earlier requests were answered, so a stuck server shows up as a staircase: requests \
         queue in the kernel's accept backlog and are answered together when a worker frees up.",
    );
    let Some(slow) = select::comparison_slow(r) else {
        s.note("No condition with slow connections in this directory.");
        return Ok(());
    };
    let ps: Vec<Panel> = panels_of(r, slow)
        .into_iter()
        .filter(|p| !p.requests.is_empty())
        .collect();
    if ps.is_empty() {
        s.note("No `/fast` requests were recorded for the runs with slow connections (`requests.csv`).");
        return Ok(());
    }
    let svg = draw(&ps)?;
    let mut csv = Csv::new(&[
        "server",
        "route",
        "run_id",
        "kind",
        "t_s",
        "latency_ms_or_end_s",
        "status",
    ]);
    for p in &ps {
        for q in &p.requests {
            csv.row(&[
                p.cond.server.to_string(),
                p.cond.route.to_string(),
                p.run.run_id.clone(),
                "request".into(),
                format!("{:.6}", q.started_s),
                cell(q.latency_ms, 3),
                q.status
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| q.error.clone().unwrap_or_default()),
            ]);
        }
        for (a, b) in &p.spans {
            csv.row(&[
                p.cond.server.to_string(),
                p.cond.route.to_string(),
                p.run.run_id.clone(),
                "download".into(),
                format!("{a:.6}"),
                format!("{b:.6}"),
                String::new(),
            ]);
        }
    }
    s.push(Block::Figure(Figure {
        file: "report-timeline.svg".into(),
        svg,
        alt: format!("latency of every /fast request over time, one run per route with {slow} slow connections"),
        caption: text(&format!(
            "Unit: one run per route, the one with the median p95 of its condition ({slow} slow connections); \
             one point per `/fast` request. Grey spans: the slow downloads (darker where they overlap); dashed \
             line: the run's p95; thin verticals: the app's kernel accepted a response's last byte; red crosses \
             at the top: failed requests. Log axis."
        )),
        data_csv: csv.finish(),
    }));
    Ok(())
}

fn draw(ps: &[Panel]) -> Result<String> {
    let (lo, hi) = decades(
        ps.iter()
            .flat_map(|p| p.requests.iter().filter_map(|q| q.latency_ms)),
    );
    let (cols, panel_w, panel_h, strip) = (3usize, 440u32, 300u32, 40u32);
    let width = ps.len().clamp(1, cols) as u32 * panel_w;
    svg(width, height(ps.len(), cols, panel_h, strip), |root| {
        let (head, body) = root.split_vertically(strip);
        let items = vec![
            ("/fast request".to_string(), INK, Key::Dot),
            (
                "slow download".to_string(),
                RGBColor(222, 222, 222),
                Key::Band,
            ),
            ("p95 of the run".to_string(), INK, Key::Dash),
            (
                "app finished writing".to_string(),
                RGBColor(90, 90, 90),
                Key::VLine,
            ),
            ("failed".to_string(), FAILED, Key::Cross),
        ];
        legend(&head, 12, strip as i32 / 2, &items)?;
        for (p, area) in ps.iter().zip(panels(&body, ps.len(), cols)) {
            draw_panel(&area, p, (lo, hi))?;
        }
        Ok(())
    })
}

fn draw_panel(area: &Area<'_>, p: &Panel, (lo, hi): (f64, f64)) -> Result<()> {
    let t_end = p
        .requests
        .iter()
        .map(|q| q.started_s + q.latency_ms.unwrap_or(0.0) / 1000.0)
        .chain(p.spans.iter().map(|s| s.1))
        .fold(0.5f64, f64::max);
    let title = format!(
        "{} · run {} · p95 {}",
        p.cond.label(),
        p.run.run_id,
        fmt::or_dash(p.run.p95_ms, fmt::ms)
    );
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 14))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..t_end * 1.02, (lo..hi).log_scale())
        .map_err(plot_err)?;
    quiet_mesh(&mut chart.configure_mesh())
        .x_desc("sent at (s since the slow readers started)")
        .y_desc("latency (ms, log)")
        .y_label_formatter(&|v| decade_label(*v))
        .axis_desc_style((FONT, 12))
        .x_max_light_lines(0)
        .draw()
        .map_err(plot_err)?;
    for (a, b) in &p.spans {
        chart
            .draw_series([Rectangle::new(
                [(*a, lo), (*b, hi)],
                SPAN.mix(0.13).filled(),
            )])
            .map_err(plot_err)?;
    }
    for e in &p.app_ends {
        chart
            .draw_series(LineSeries::new(
                vec![(*e, lo), (*e, hi)],
                RGBColor(90, 90, 90).stroke_width(1),
            ))
            .map_err(plot_err)?;
    }
    if let Some(p95) = p.run.p95_ms {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, p95), (t_end * 1.02, p95)],
                10,
                6,
                INK.stroke_width(1),
            ))
            .map_err(plot_err)?;
    }
    let c = route_color(&p.cond.route);
    chart
        .draw_series(
            p.requests
                .iter()
                .filter(|q| q.ok())
                .filter_map(|q| Some(Circle::new((q.started_s, q.latency_ms?), 3, c.filled()))),
        )
        .map_err(plot_err)?;
    chart
        .draw_series(
            p.requests
                .iter()
                .filter(|q| !q.ok())
                .map(|q| Cross::new((q.started_s, hi / 1.5), 4, FAILED.stroke_width(2))),
        )
        .map_err(plot_err)?;
    Ok(())
}
