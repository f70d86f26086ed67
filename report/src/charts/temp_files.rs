//! Chart 4: the total logical size of the proxy's open temp files over
//! time, for the buffering-on routes. This is the price of relieving the
//! app: the proxy parks the responses the clients have not read yet.

use anyhow::Result;
use plotters::prelude::*;

use super::{
    Csv, FONT, Key, PUBLISHED, cell, legend, note, plot_err, quiet_mesh, route_color, svg,
};
use crate::data::Results;
use crate::doc::{Block, Figure, Section, text};
use crate::fmt::{self, MIB};
use analysis::select::{self, Cond};
use catalogue::published::TEMP_PEAK_MIB;
use schema::{Component, ResourceRow};

/// Builds section 4.
pub fn section(r: &Results, s: &mut Section) -> Result<()> {
    s.para(
        "With buffering on, a proxy reads the app's response as fast as the app writes it and keeps what the \
         client has not taken yet: first in a few memory buffers, then in a temp file. The sampler finds the \
         temp files through `/proc/PID/fd` (they are unlinked while open) and sums their logical sizes.",
    );
    let Some(slow) = select::comparison_slow(r) else {
        s.note("No condition with slow connections in this directory.");
        return Ok(());
    };
    let shown: Vec<(Cond, String, Vec<&ResourceRow>)> = select::shown_runs(r, slow)
        .into_iter()
        .filter(|(c, _)| select::buffering_on(&c.route))
        .map(|(c, run)| {
            let rows: Vec<&ResourceRow> = r
                .resources
                .iter()
                .filter(|x| {
                    x.run_id == run.run_id
                        && x.component == Component::Proxy
                        && x.temp_logical_bytes.is_some()
                })
                .collect();
            (c, run.run_id.clone(), rows)
        })
        .collect();
    if shown.is_empty() {
        s.note(&format!("No buffering-on route ran with {slow} slow connections, so there are no temp files to show."));
        return Ok(());
    }
    if shown.iter().all(|(_, _, rows)| rows.is_empty()) {
        s.note("No temp-file samples for the buffering-on runs (`resource-samples.csv` is missing or has none).");
        return Ok(());
    }
    let svg = draw(&shown)?;
    let mut csv = Csv::new(&[
        "server",
        "route",
        "run_id",
        "t_s",
        "temp_files",
        "temp_logical_bytes",
        "temp_allocated_bytes",
    ]);
    for (c, run, rows) in &shown {
        for x in rows {
            csv.row(&[
                c.server.to_string(),
                c.route.to_string(),
                run.clone(),
                format!("{:.3}", x.t_s),
                x.temp_files.map(|v| v.to_string()).unwrap_or_default(),
                cell(x.temp_logical_bytes.map(|v| v as f64), 0),
                cell(x.temp_allocated_bytes.map(|v| v as f64), 0),
            ]);
        }
    }
    s.push(Block::Figure(Figure {
        file: "report-temp-files.svg".into(),
        svg,
        alt: "logical size of the proxy's open temp files over time, buffering-on routes".into(),
        caption: text(&format!(
            "Unit: one run per buffering-on route (the run with the median p95 of its condition, {slow} slow \
             connections); the sum over the proxy's open temp files at each sample (~200 ms). Logical size, not \
             bytes written to disk or disk speed. Dashed: the original's peak with NGINX buffering on and 2 slow \
             connections, {}. NGINX's memory buffers are not sampled; only its temp files are.",
            fmt::mib(TEMP_PEAK_MIB)
        )),
        data_csv: csv.finish(),
    }));
    Ok(())
}

fn draw(shown: &[(Cond, String, Vec<&ResourceRow>)]) -> Result<String> {
    let t_end = shown
        .iter()
        .flat_map(|(_, _, rows)| rows.iter().map(|x| x.t_s))
        .fold(1.0f64, f64::max);
    let peak = shown
        .iter()
        .flat_map(|(_, _, rows)| rows.iter().filter_map(|x| x.temp_logical_bytes))
        .max()
        .unwrap_or(0) as f64
        / MIB;
    let top = peak.max(TEMP_PEAK_MIB) * 1.15;
    svg(900, 420, |root| {
        let (head, body) = root.split_vertically(40);
        let mut items: Vec<(String, RGBColor, Key)> = shown
            .iter()
            .map(|(c, run, _)| {
                (
                    format!("{} (run {run})", c.label()),
                    route_color(&c.route),
                    Key::Line,
                )
            })
            .collect();
        items.push((
            "published peak (NGINX on, 2 slow)".into(),
            PUBLISHED,
            Key::Dash,
        ));
        legend(&head, 12, 20, &items)?;
        let mut chart = ChartBuilder::on(&body)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..t_end, 0.0..top)
            .map_err(plot_err)?;
        quiet_mesh(&mut chart.configure_mesh())
            .x_desc("seconds since the slow readers started")
            .y_desc("open temp files, logical size (MiB)")
            .axis_desc_style((FONT, 13))
            .max_light_lines(0)
            .draw()
            .map_err(plot_err)?;
        for (c, _, rows) in shown {
            let pts: Vec<(f64, f64)> = rows
                .iter()
                .filter_map(|x| Some((x.t_s, x.temp_logical_bytes? as f64 / MIB)))
                .collect();
            let color = route_color(&c.route);
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(plot_err)?;
            chart
                .draw_series(pts.into_iter().map(|p| Circle::new(p, 2, color.filled())))
                .map_err(plot_err)?;
        }
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, TEMP_PEAK_MIB), (t_end, TEMP_PEAK_MIB)],
                8,
                5,
                PUBLISHED.stroke_width(1),
            ))
            .map_err(plot_err)?;
        note(
            &body,
            80,
            20,
            11,
            "NGINX memory buffers: not sampled; temp files only",
        )
    })
}
