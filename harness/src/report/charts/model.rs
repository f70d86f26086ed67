//! The buffer model's chart: observed `app_send_s` against the model's
//! prediction, one point per condition of `model.csv`, the diagonal drawn,
//! and in words where the model holds and where it does not.

use anyhow::Result;
use plotters::prelude::*;

use super::{Csv, FONT, INK, Key, cell, legend, plot_err, quiet_mesh, route_color, svg};
use crate::model;
use crate::report::data::Results;
use crate::report::doc::{Block, Figure, Section, text};
use crate::results::{ModelRow, Verdict};
use crate::stack::ProxyBuffers;

/// How far from the diagonal a condition may be and still count as held.
const HOLDS_WITHIN: f64 = 0.15;

fn label(m: &ModelRow) -> String {
    let sys = m.sysctls.as_deref().unwrap_or("host sysctls");
    format!("{}/{} {} slow, {sys}", m.server, m.route, m.slow_clients)
}

/// Builds the section.
pub fn section(r: &Results, s: &mut Section) -> Result<()> {
    s.para(
        "The model: the app's last `send` returns once the rest of the body fits into the queues between it and \
         the client, `B` bytes, so `app_send_s = max(0, size - B) / slow_rate`, with `B = wmem_max + rcvbuf` \
         direct and `2 wmem_max + rmem_max + hold + rcvbuf` through a proxy (`hold`: the proxy's own buffer). \
         The sizes come from the sysctls of the server's namespace; `model.csv` has the same formula with the \
         measured peak queues beside it.",
    );
    let rows: Vec<ModelRow> = model::rows(r, &ProxyBuffers::EXPERIMENT)
        .into_iter()
        .filter(|m| m.predicted_app_send_s.is_some() && m.observed_app_send_s.is_some())
        .collect();
    if rows.is_empty() {
        s.note("No condition with slow clients has both a prediction and a measured `app_send_s` here.");
        return Ok(());
    }
    s.para(&words(&rows));
    let mut csv = Csv::new(&[
        "server",
        "route",
        "slow_clients",
        "sysctls",
        "predicted_b_bytes",
        "predicted_app_send_s",
        "observed_app_send_s",
        "explained_b_bytes",
        "explained_app_send_s",
    ]);
    for m in &rows {
        csv.row(&[
            m.server.to_string(),
            m.route.to_string(),
            m.slow_clients.to_string(),
            m.sysctls.clone().unwrap_or_default(),
            cell(m.predicted_b_bytes.map(|v| v as f64), 0),
            cell(m.predicted_app_send_s, 3),
            cell(m.observed_app_send_s, 3),
            cell(m.explained_b_bytes.map(|v| v as f64), 0),
            cell(m.explained_app_send_s, 3),
        ]);
    }
    s.push(Block::Figure(Figure {
        file: "report-model.svg".into(),
        svg: draw(&rows)?,
        alt: "observed app write time against the buffer model's prediction, one point per condition".into(),
        caption: text(
            "Unit: one condition (server, route, slow clients, sysctls); x the model's `app_send_s` from the \
             sysctls, y the median measured `app_send_s` of its runs. On the diagonal the model is exact; above \
             it the app took longer than the buffers on the path explain.",
        ),
        data_csv: csv.finish(),
    }));
    Ok(())
}

/// Where the model holds and where it does not, from the rows.
fn words(rows: &[ModelRow]) -> String {
    let holds: Vec<&ModelRow> = rows
        .iter()
        .filter(|m| {
            let (p, o) = (
                m.predicted_app_send_s.unwrap_or(0.0),
                m.observed_app_send_s.unwrap_or(0.0),
            );
            (o - p).abs() <= HOLDS_WITHIN * p.max(o) || (o - p).abs() < 0.1
        })
        .collect();
    let mut out = format!(
        "The model holds within {:.0}% (or 0.1 s) for {} of {} conditions.",
        HOLDS_WITHIN * 100.0,
        holds.len(),
        rows.len()
    );
    let mut misses: Vec<&ModelRow> = rows
        .iter()
        .filter(|m| !holds.iter().any(|h| std::ptr::eq(*h, *m)))
        .collect();
    misses.sort_by(|a, b| {
        let d = |m: &ModelRow| {
            (m.observed_app_send_s.unwrap_or(0.0) - m.predicted_app_send_s.unwrap_or(0.0)).abs()
        };
        d(b).total_cmp(&d(a))
    });
    for m in misses.iter().take(4) {
        out.push_str(&format!(
            " {}: predicted {:.2} s, measured {:.2} s{}.",
            label(m),
            m.predicted_app_send_s.unwrap_or(0.0),
            m.observed_app_send_s.unwrap_or(0.0),
            m.explained_app_send_s
                .map(|e| format!(", the measured peak queues give {e:.2} s"))
                .unwrap_or_default()
        ));
    }
    let judged: Vec<&ModelRow> = rows
        .iter()
        .filter(|m| m.predicted_blocked.is_some() && m.observed.is_some())
        .collect();
    let agree = judged
        .iter()
        .filter(|m| {
            let obs = m.observed.as_ref().and_then(|v| v.known()) == Some(Verdict::Blocked);
            m.predicted_blocked == Some(obs)
        })
        .count();
    if !judged.is_empty() {
        out.push_str(&format!(
            " Whether `/fast` is blocked: the model agrees with the observed verdict in {agree} of {} conditions.",
            judged.len()
        ));
    }
    out
}

fn draw(rows: &[ModelRow]) -> Result<String> {
    let top = rows
        .iter()
        .flat_map(|m| [m.predicted_app_send_s, m.observed_app_send_s])
        .flatten()
        .fold(1.0f64, f64::max)
        * 1.1;
    svg(640, 560, |root| {
        let (head, body) = root.split_vertically(40);
        legend(
            &head,
            12,
            20,
            &[("observed = predicted".to_string(), INK, Key::Dash)],
        )?;
        let mut chart = ChartBuilder::on(&body)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..top, 0.0..top)
            .map_err(plot_err)?;
        quiet_mesh(&mut chart.configure_mesh())
            .x_desc("predicted app_send_s (s), from the sysctls")
            .y_desc("observed app_send_s (s), median of runs")
            .axis_desc_style((FONT, 13))
            .max_light_lines(0)
            .draw()
            .map_err(plot_err)?;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, 0.0), (top, top)],
                8,
                5,
                INK.stroke_width(1),
            ))
            .map_err(plot_err)?;
        chart
            .draw_series(rows.iter().filter_map(|m| {
                let p = (m.predicted_app_send_s?, m.observed_app_send_s?);
                Some(Circle::new(p, 5, route_color(&m.route).filled()))
            }))
            .map_err(plot_err)?;
        Ok(())
    })
}
