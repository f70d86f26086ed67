//! Chart 5: where the `/large` bytes are over time, the chart the original
//! could not draw. One panel per route (the median-p95 run with the
//! comparison's slow connections), a stacked area from the bytes the
//! clients consumed at the bottom to the bytes the app had not written at
//! the top. Derived layers are labelled as derived; what was not sampled is
//! said on the panel, never interpolated.

use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{
    Area, Csv, FONT, INK, Key, cell, height, legend, note, panels, plot_err, quiet_mesh, svg,
};
use crate::data::Results;
use crate::doc::{Block, Figure, Section, text};
use crate::fmt::{self, MIB};
use analysis::select::{self, Cond};
use analysis::whereabouts::{self, Sample, Whereabouts};

/// The layers bottom to top: label, colour, value.
pub type Layer = (&'static str, RGBColor, fn(&Sample) -> f64);

/// Chart 5's layers, which the scrubbable view ([`crate::report::scrub`])
/// draws too.
pub const LAYERS: [Layer; 8] = [
    ("consumed by the clients", RGBColor(96, 160, 96), |s| {
        s.consumed
    }),
    ("clients' receive queues", RGBColor(176, 216, 136), |s| {
        s.client_queue
    }),
    ("link's queue (tbf backlog)", RGBColor(150, 110, 190), |s| {
        s.link_queue.unwrap_or(0.0)
    }),
    ("proxy's send queues", RGBColor(140, 190, 235), |s| {
        s.proxy_send_queue
    }),
    (
        "in the proxy (memory or temp file)",
        RGBColor(50, 110, 200),
        |s| s.proxy_held.unwrap_or(0.0),
    ),
    (
        "kernel between app and proxy/client",
        RGBColor(240, 165, 70),
        |s| s.app_queue,
    ),
    ("not sampled (derived)", RGBColor(205, 205, 205), |s| {
        s.not_sampled
    }),
    (
        "not yet written by the app (derived)",
        RGBColor(232, 120, 120),
        |s| s.not_written,
    ),
];

const TEMP: RGBColor = RGBColor(20, 40, 120);
const SNDBUF: RGBColor = RGBColor(150, 70, 20);

/// Builds section 5.
pub fn section(r: &Results, s: &mut Section) -> Result<()> {
    s.para(
        "Every `/large` byte is somewhere: still in the app, in kernel buffers on the way, inside the proxy, \
         or read by the client. Stacked from the bottom: bytes the clients have read from their sockets \
         (their paced consumption trails this by at most one read chunk); the clients' socket receive queues; \
         the proxy's send queues towards the clients; bytes inside the proxy (pingora's gauge: read from the app \
         and not yet accepted by the client socket, in memory or in its temp file); the kernel between the app \
         and the next hop (the app's socket send queues plus the proxy's receive queues from the app; direct, \
         the app's send queues only). The top two layers are derived, not measured: the remainder of the \
         responses' total after everything sampled is counted as **not yet written by the app** up to the size \
         of the responses the app had not finished (its send log says when it finished), and the rest as \
         **not sampled**: bytes in the send queues of sockets the app had already closed (a closed socket \
         belongs to no process, so the sampler cannot see it) and, for NGINX, its memory buffers and temp file.",
    );
    let Some(slow) = select::comparison_slow(r) else {
        s.note(
            "No condition with slow connections in this directory, so no `/large` bytes to follow.",
        );
        return Ok(());
    };
    let mut shown: Vec<(Cond, Whereabouts)> = Vec::new();
    let mut problems = Vec::new();
    for (c, run) in select::shown_runs(r, slow) {
        match whereabouts::compute(r, &run.run_id, &c.route) {
            Ok(w) => shown.push((c, w)),
            Err(e) => problems.push(format!("{} (run {}): {e}", c.label(), run.run_id)),
        }
    }
    if !problems.is_empty() {
        s.note(&format!("Not drawn: {}.", problems.join("; ")));
    }
    if shown.is_empty() {
        s.note("There is no run with socket samples, client progress and `/large` responses to draw from.");
        return Ok(());
    }
    let clamped: usize = shown.iter().map(|(_, w)| w.clamped).sum();
    let svg = draw(&shown)?;
    let mut csv = Csv::new(&[
        "server",
        "route",
        "run_id",
        "t_s",
        "consumed_bytes",
        "client_queue_bytes",
        "proxy_send_queue_bytes",
        "proxy_held_bytes",
        "app_to_proxy_kernel_bytes",
        "not_sampled_bytes_derived",
        "not_written_bytes_derived",
        "proxy_temp_logical_bytes",
        "app_sndbuf_bytes",
        "link_queue_bytes",
    ]);
    for (c, w) in &shown {
        for x in &w.samples {
            let temp = w
                .temp_logical
                .iter()
                .find(|(t, _)| (t - x.t).abs() < 0.0005)
                .map(|p| p.1);
            csv.row(&[
                c.server.to_string(),
                c.route.to_string(),
                w.run_id.clone(),
                format!("{:.3}", x.t),
                cell(Some(x.consumed), 0),
                cell(Some(x.client_queue), 0),
                cell(Some(x.proxy_send_queue), 0),
                cell(x.proxy_held, 0),
                cell(Some(x.app_queue), 0),
                cell(Some(x.not_sampled), 0),
                cell(Some(x.not_written), 0),
                cell(temp, 0),
                cell(x.app_sndbuf, 0),
                cell(x.link_queue, 0),
            ]);
        }
    }
    let mut caption = format!(
        "Unit: one run per route (the run with the median p95 of its condition, {slow} slow connections), \
         bytes summed over its {slow} responses, at each socket sample (~200 ms). Client progress and the pingora \
         gauge (~100 ms) enter as their latest value at or before each sample. Black verticals: the app's \
         kernel accepted a response's last byte. Dark dashed line (NGINX): the logical size of its open temp \
         files, an upper bound of what they hold, since bytes already sent are not cut from the file. Brown \
         line: the size of the app's socket send buffers, summed over its connections (sock_diag's \
         `sndbuf_bytes`; not bytes of the response but the room the kernel gave them, which it grows up to \
         `tcp_wmem` max while the reader keeps up; absent where the samples came from `/proc`)."
    );
    if shown
        .iter()
        .any(|(_, w)| w.samples.iter().any(|x| x.link_queue.is_some()))
    {
        caption.push_str(
            " Runs with a shaped link (`--link`): the purple layer is the backlog of the link's root qdisc (tbf, or per client the htb) on the \
             server's veth end (`qdisc-samples.csv`, read in the same sampling round, just after the sockets; \
             the frames' bytes, headers included). Those bytes were sent and not yet acknowledged, so the \
             sender's socket also counts them in its send queue: they are taken out of that layer (the proxy's \
             send queues behind a proxy, the app's direct), not counted twice.",
        );
    }
    if clamped > 0 {
        caption.push_str(&format!(
            " In {clamped} samples the sampled layers exceeded the total by a little (the clocks sample a moving \
             stream at slightly different instants); the remainder was set to zero there."
        ));
    }
    s.push(Block::Figure(Figure {
        file: "report-bytes.svg".into(),
        svg,
        alt: "stacked areas of where the /large bytes are over time, one panel per route".into(),
        caption: text(&caption),
        data_csv: csv.finish(),
    }));
    if shown.iter().any(|(c, _)| select::is_nginx(&c.route)) {
        s.note(
            "NGINX keeps no log of its buffers: its memory buffers are not sampled, only its temp files \
             (through `/proc`, as `temp_logical_bytes` in `resource-samples.csv`). In NGINX panels the bytes \
             inside NGINX are part of the grey, derived layer.",
        );
    }
    Ok(())
}

fn draw(shown: &[(Cond, Whereabouts)]) -> Result<String> {
    let (cols, panel_w, panel_h, strip) = (3usize, 440u32, 350u32, 64u32);
    let width = shown.len().clamp(1, cols) as u32 * panel_w;
    svg(width, height(shown.len(), cols, panel_h, strip), |root| {
        let (top, body) = root.split_vertically(strip);
        let items = |range: std::ops::Range<usize>| -> Vec<(String, RGBColor, Key)> {
            LAYERS[range]
                .iter()
                .map(|(l, c, _)| (l.to_string(), *c, Key::Band))
                .collect()
        };
        legend(&top, 12, 16, &items(0..5))?;
        let mut second = items(5..8);
        second.push(("NGINX temp files (logical size)".into(), TEMP, Key::Dash));
        second.push(("app finished writing".into(), INK, Key::VLine));
        second.push(("app's send buffer size".into(), SNDBUF, Key::Line));
        legend(&top, 12, 44, &second)?;
        for ((c, w), panel) in shown.iter().zip(panels(&body, shown.len(), cols)) {
            draw_panel(&panel, c, w)?;
        }
        Ok(())
    })
}

fn draw_panel(panel: &Area<'_>, c: &Cond, w: &Whereabouts) -> Result<()> {
    // Title and the panel's note on their own lines above the plot, so the
    // note never covers data.
    let (head, plot) = panel.split_vertically(40);
    let (pw, _) = head.dim_in_pixel();
    let title = TextStyle::from((FONT, 15).into_font())
        .color(&INK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    head.draw(&Text::new(
        format!("{} · run {}", c.label(), w.run_id),
        (pw as i32 / 2, 4),
        title,
    ))
    .map_err(plot_err)?;
    let line = if select::is_nginx(&w.route) {
        "NGINX memory buffers: not sampled (inside the grey layer)".to_string()
    } else if !select::has_proxy(&w.route) {
        "direct: no proxy between the app and the client".to_string()
    } else if w.samples.iter().all(|s| s.proxy_held.is_none()) {
        "proxy gauge missing: bytes inside the proxy not sampled".to_string()
    } else {
        "inside the proxy: from pingora's gauge".to_string()
    };
    note(
        &head,
        60,
        23,
        11,
        &format!("{line}; total {}", fmt::bytes(w.total)),
    )?;

    let t0 = w.samples.first().map(|s| s.t.min(0.0)).unwrap_or(0.0);
    let t1 = w.samples.last().map(|s| s.t).unwrap_or(1.0).max(t0 + 0.5);
    let sndbuf_max = w
        .samples
        .iter()
        .filter_map(|s| s.app_sndbuf)
        .fold(0.0f64, f64::max);
    let top = w.total.max(sndbuf_max) / MIB * 1.04;
    let mut chart = ChartBuilder::on(&plot)
        .margin(10)
        .margin_top(4)
        .x_label_area_size(36)
        .y_label_area_size(52)
        .build_cartesian_2d(t0..t1, 0.0..top)
        .map_err(plot_err)?;
    quiet_mesh(&mut chart.configure_mesh())
        .x_desc("seconds since the slow readers started")
        .y_desc("MiB")
        .axis_desc_style((FONT, 12))
        .max_light_lines(0)
        .draw()
        .map_err(plot_err)?;
    let n = w.samples.len();
    let mut lower = vec![0.0; n];
    for (i, (_, color, value)) in LAYERS.iter().enumerate() {
        // The pingora layer is zero without a proxy, the link's without a
        // link; skip drawing them rather than an invisible polygon. NGINX
        // has no pingora layer at all.
        if (i == 4
            && w.samples
                .iter()
                .all(|s| s.proxy_held.is_none_or(|v| v == 0.0)))
            || (i == 2 && w.samples.iter().all(|s| s.link_queue.is_none()))
        {
            continue;
        }
        let upper: Vec<f64> = w
            .samples
            .iter()
            .zip(&lower)
            .map(|(s, l)| l + value(s) / MIB)
            .collect();
        let mut pts: Vec<(f64, f64)> = w
            .samples
            .iter()
            .zip(&upper)
            .map(|(s, u)| (s.t, *u))
            .collect();
        pts.extend(w.samples.iter().zip(&lower).rev().map(|(s, l)| (s.t, *l)));
        chart
            .draw_series([Polygon::new(pts, color.filled())])
            .map_err(plot_err)?;
        lower = upper;
    }
    if select::is_nginx(&w.route) && w.temp_logical.iter().any(|(_, v)| *v > 0.0) {
        let pts: Vec<(f64, f64)> = w.temp_logical.iter().map(|(t, v)| (*t, v / MIB)).collect();
        chart
            .draw_series(DashedLineSeries::new(pts, 6, 4, TEMP.stroke_width(2)))
            .map_err(plot_err)?;
    }
    let sndbuf: Vec<(f64, f64)> = w
        .samples
        .iter()
        .filter_map(|s| Some((s.t, s.app_sndbuf? / MIB)))
        .collect();
    if !sndbuf.is_empty() {
        chart
            .draw_series(LineSeries::new(sndbuf, SNDBUF.stroke_width(2)))
            .map_err(plot_err)?;
    }
    for e in &w.app_ends {
        chart
            .draw_series(LineSeries::new(
                vec![(*e, 0.0), (*e, top)],
                INK.stroke_width(1),
            ))
            .map_err(plot_err)?;
    }
    Ok(())
}
