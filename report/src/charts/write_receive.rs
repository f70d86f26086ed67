//! Chart 2: how long the app took to hand a `/large` response to the kernel
//! against how long the client took to receive it, with the comparison's
//! slow connections. One panel per server, two bars per route at the
//! condition's median, every response as a dot. A buffering proxy pulls
//! the two apart: the client still needs the same seconds, the app does not.

use anyhow::Result;
use plotters::prelude::*;

use super::{
    Area, Csv, FONT, INK, Key, PUBLISHED, cell, height, legend, panels, plot_err, quiet_mesh,
    route_color, svg,
};
use crate::data::Results;
use crate::doc::{Block, Figure, Section, text};
use analysis::select::{self, Cond};
use schema::{LargeRow, ServerName};

/// One condition: its medians, its responses, the published pair.
#[derive(Debug, Clone)]
struct Group {
    cond: Cond,
    app_send_s: Option<f64>,
    receive_s: Option<f64>,
    /// (app_send_s, receive_s) of every response of its completed runs.
    responses: Vec<(Option<f64>, Option<f64>)>,
    published: Option<(Option<f64>, Option<f64>)>,
}

fn groups(r: &Results, slow: u32) -> Vec<Group> {
    select::at_slow(r, slow)
        .into_iter()
        .map(|cond| {
            let row = select::condition_row(r, &cond);
            let runs: Vec<&str> = select::ok_runs(r, &cond)
                .iter()
                .map(|x| x.run_id.as_str())
                .collect();
            let responses = r
                .large
                .iter()
                .filter(|l| runs.contains(&l.run_id.as_str()))
                .map(|l: &LargeRow| (l.app_send_s, l.receive_s))
                .collect();
            let published =
                select::published(&cond).map(|(p, _)| (p.app_send_s, p.client_receive_s));
            Group {
                app_send_s: row.and_then(|c| c.app_send_s),
                receive_s: row.and_then(|c| c.client_receive_s),
                responses,
                published,
                cond,
            }
        })
        .collect()
}

/// Builds section 2.
pub fn section(r: &Results, s: &mut Section) -> Result<()> {
    s.para(
        "`app_send_s` runs from the start of the app's response to the moment the kernel accepted its last byte \
         (not its arrival at the client); `client_receive_s` from the client's request to the paced consumption \
         of the last byte. While the app is writing, the worker (or thread) that writes is busy.",
    );
    let Some(slow) = select::comparison_slow(r) else {
        s.note("No condition with slow connections in this directory.");
        return Ok(());
    };
    let gs = groups(r, slow);
    if gs
        .iter()
        .all(|g| g.app_send_s.is_none() && g.receive_s.is_none() && g.responses.is_empty())
    {
        s.note("No `/large` response times were recorded (`conditions.csv` and `large-responses.csv` have none).");
        return Ok(());
    }
    let svg = draw(&gs)?;
    let mut csv = Csv::new(&[
        "server",
        "route",
        "kind",
        "app_send_s",
        "client_receive_s",
        "published_app_send_s",
        "published_client_receive_s",
    ]);
    for g in &gs {
        let (pa, pr) = g.published.unwrap_or((None, None));
        csv.row(&[
            g.cond.server.to_string(),
            g.cond.route.to_string(),
            "condition".into(),
            cell(g.app_send_s, 3),
            cell(g.receive_s, 3),
            cell(pa, 3),
            cell(pr, 3),
        ]);
        for (a, rcv) in &g.responses {
            csv.row(&[
                g.cond.server.to_string(),
                g.cond.route.to_string(),
                "response".into(),
                cell(*a, 3),
                cell(*rcv, 3),
                String::new(),
                String::new(),
            ]);
        }
    }
    let n: usize = gs.iter().map(|g| g.responses.len()).max().unwrap_or(0);
    s.push(Block::Figure(Figure {
        file: "report-write-receive.svg".into(),
        svg,
        alt: format!("app write time and client receive time per route with {slow} slow connections"),
        caption: text(&format!(
            "Unit: the condition with {slow} slow connections. Bars: `app_send_s` (dark) and `client_receive_s` \
             (light) of the condition, the median over its runs of each run's median response; dots: every \
             response ({n} per condition at most); black dashes: the published figures (the original's, or its \
             Gunicorn/NGINX counterpart's). The client's time includes the read pacing; it is not a network transfer time."
        )),
        data_csv: csv.finish(),
    }));
    if let Some(d) = crate::notices::profile_difference(r) {
        s.note(&d);
    }
    Ok(())
}

fn draw(gs: &[Group]) -> Result<String> {
    let mut servers: Vec<ServerName> = gs.iter().map(|g| g.cond.server.clone()).collect();
    servers.dedup();
    let top = gs
        .iter()
        .flat_map(|g| {
            let (pa, pr) = g.published.unwrap_or((None, None));
            let mut v = vec![g.app_send_s, g.receive_s, pa, pr];
            v.extend(g.responses.iter().flat_map(|(a, b)| [*a, *b]));
            v
        })
        .flatten()
        .fold(0.0f64, f64::max)
        .max(0.1)
        * 1.1;
    let (cols, panel_w, panel_h, strip) = (3usize, 430u32, 360u32, 40u32);
    let width = servers.len().clamp(1, cols) as u32 * panel_w;
    svg(width, height(servers.len(), cols, panel_h, strip), |root| {
        let (head, body) = root.split_vertically(strip);
        let items = vec![
            (
                "app write (app_send_s)".to_string(),
                RGBColor(90, 90, 90),
                Key::Bar,
            ),
            (
                "client receive".to_string(),
                RGBColor(200, 200, 200),
                Key::Bar,
            ),
            ("one response".to_string(), INK, Key::Dot),
            ("published".to_string(), PUBLISHED, Key::Mark),
        ];
        legend(&head, 12, strip as i32 / 2, &items)?;
        for (server, panel) in servers.iter().zip(panels(&body, servers.len(), cols)) {
            let mine: Vec<&Group> = gs.iter().filter(|g| &g.cond.server == server).collect();
            draw_panel(&panel, server.as_str(), &mine, top)?;
        }
        Ok(())
    })
}

fn draw_panel(panel: &Area<'_>, server: &str, gs: &[&Group], top: f64) -> Result<()> {
    let n = gs.len();
    let names: Vec<String> = gs.iter().map(|g| g.cond.route.to_string()).collect();
    let mut chart = ChartBuilder::on(panel)
        .caption(server, (FONT, 16))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(50)
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..top)
        .map_err(plot_err)?;
    let label_x = |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
            names[i as usize].clone()
        } else {
            String::new()
        }
    };
    quiet_mesh(&mut chart.configure_mesh())
        .x_labels(n.max(2))
        .x_label_formatter(&label_x)
        .disable_x_mesh()
        .y_desc("seconds")
        .axis_desc_style((FONT, 13))
        .max_light_lines(0)
        .draw()
        .map_err(plot_err)?;
    for (i, g) in gs.iter().enumerate() {
        let x = i as f64;
        let c = route_color(&g.cond.route);
        let bars = [
            (x - 0.36, x - 0.02, g.app_send_s, c.mix(1.0)),
            (x + 0.02, x + 0.36, g.receive_s, c.mix(0.35)),
        ];
        for (a, b, v, style) in bars {
            if let Some(v) = v {
                chart
                    .draw_series([Rectangle::new([(a, 0.0), (b, v)], style.filled())])
                    .map_err(plot_err)?;
            }
        }
        let k = g.responses.len().max(1) as f64;
        for (j, (a, rcv)) in g.responses.iter().enumerate() {
            // Spread the dots a little so equal values stay visible.
            let dx = (j as f64 - (k - 1.0) / 2.0) * (0.2 / k);
            for (v, cx) in [(*a, x - 0.19), (*rcv, x + 0.19)] {
                if let Some(v) = v {
                    chart
                        .draw_series([Circle::new((cx + dx, v), 3, INK.filled())])
                        .map_err(plot_err)?;
                }
            }
        }
        if let Some((pa, pr)) = g.published {
            for (v, cx) in [(pa, x - 0.19), (pr, x + 0.19)] {
                if let Some(v) = v {
                    chart
                        .draw_series([PathElement::new(
                            vec![(cx - 0.15, v), (cx + 0.15, v)],
                            PUBLISHED.stroke_width(3),
                        )])
                        .map_err(plot_err)?;
                }
            }
        }
    }
    Ok(())
}
