//! Chart 1: the p95 of `/fast` per condition, one panel per server, routes
//! side by side at each number of slow connections, on a log axis (the
//! effect spans three decades). The unit is the condition: the median over
//! its runs of each run's p95, with the runs' min and max, and the
//! original's figure as a reference mark.

use anyhow::Result;
use plotters::prelude::*;

use super::{
    Area, Csv, FONT, INK, Key, PUBLISHED, cell, decade_label, decades, height, legend, panels,
    plot_err, route_color, svg,
};
use crate::data::Results;
use crate::doc::{Block, Figure, Section, text};
use analysis::select::{self, Cond};
use schema::{Direction, RouteName, ServerName};

/// One condition's figures.
#[derive(Debug, Clone)]
struct Point {
    cond: Cond,
    runs: u32,
    p95: Option<f64>,
    min: Option<f64>,
    max: Option<f64>,
    published: Option<(f64, String)>,
}

/// The conditions of `direction`; only the response direction has
/// published figures (the original measured nothing else).
fn points(r: &Results, direction: Direction) -> Vec<Point> {
    let mut out: Vec<Point> = r
        .conditions
        .iter()
        .filter(|c| select::in_direction(&c.direction, direction))
        .map(|c| {
            let cond = Cond::new(&c.server, &c.route, c.slow_clients);
            let published = (direction == Direction::Download)
                .then(|| select::published(&cond).map(|(p, from)| (p.p95, from)))
                .flatten();
            Point {
                cond,
                runs: c.runs,
                p95: c.p95,
                min: c.p95_min,
                max: c.p95_max,
                published,
            }
        })
        .collect();
    out.sort_by_key(|p| {
        (
            p.cond.server.clone(),
            p.cond.slow,
            select::route_key(&p.cond.route),
        )
    });
    out
}

/// The p95 chart of the conditions of `direction`, saved as `file`, with
/// its data; `None` when no condition has a p95.
pub fn chart(r: &Results, direction: Direction, file: &str, alt: &str) -> Result<Option<Figure>> {
    let pts = points(r, direction);
    if pts.iter().all(|p| p.p95.is_none() && p.min.is_none()) {
        return Ok(None);
    }
    let svg = draw(&pts)?;
    let mut csv = Csv::new(&[
        "server",
        "route",
        "slow_clients",
        "runs",
        "p95_ms",
        "p95_min_ms",
        "p95_max_ms",
        "published_p95_ms",
        "published_from",
    ]);
    for p in &pts {
        csv.row(&[
            p.cond.server.to_string(),
            p.cond.route.to_string(),
            p.cond.slow.to_string(),
            p.runs.to_string(),
            cell(p.p95, 3),
            cell(p.min, 3),
            cell(p.max, 3),
            cell(p.published.as_ref().map(|x| x.0), 2),
            p.published
                .as_ref()
                .map(|x| x.1.clone())
                .unwrap_or_default(),
        ]);
    }
    let runs: Vec<u32> = pts.iter().map(|p| p.runs).collect();
    let (lo, hi) = (
        runs.iter().min().copied().unwrap_or(0),
        runs.iter().max().copied().unwrap_or(0),
    );
    let per = if lo == hi {
        format!("{lo}")
    } else {
        format!("{lo} to {hi}")
    };
    let published = if direction == Direction::Download {
        "; black dash: the published figure of the original, or of its Gunicorn/NGINX counterpart \
         for a Rust replica or pingora"
    } else {
        " (the original did not measure this direction, so there is no published figure)"
    };
    Ok(Some(Figure {
        file: file.into(),
        svg,
        alt: alt.into(),
        caption: text(&format!(
            "Unit: the condition ({per} runs each). Point: the median over the runs of each run's p95 \
             (nearest rank over its `/fast` requests); bar: the smallest to the largest run's p95{published}. \
             Log axis: each gridline is ten times the one below."
        )),
        data_csv: csv.finish(),
    }))
}

/// Builds section 1.
pub fn section(r: &Results, s: &mut Section) -> Result<()> {
    s.para(
        "How long an unrelated 12-byte API call (`/fast`) waits while slow clients download `/large`. \
         One panel per server, so the Gunicorn server and its Rust replica sit side by side; \
         within a panel, one colour per route at each number of slow connections.",
    );
    let Some(figure) = chart(
        r,
        Direction::Download,
        "report-p95.svg",
        "p95 of /fast by route and number of slow connections, one panel per server",
    )?
    else {
        s.note("No condition has a p95 yet (`conditions.csv` is missing or empty), so there is nothing to draw.");
        return Ok(());
    };
    s.push(Block::Figure(figure));
    if let Some(d) = crate::notices::profile_difference(r) {
        s.note(&d);
    }
    let blank: Vec<String> = points(r, Direction::Download)
        .iter()
        .filter(|p| p.p95.is_none() && p.runs > 0)
        .map(|p| format!("{} {} slow", p.cond.label(), p.cond.slow))
        .collect();
    if !blank.is_empty() {
        s.note(&format!(
            "No p95 for {}: a run's 95th percentile fell on a failed request, so the condition reports none (see `runs.csv`).",
            blank.join(", ")
        ));
    }
    Ok(())
}

fn draw(pts: &[Point]) -> Result<String> {
    let servers: Vec<ServerName> = {
        let mut v: Vec<ServerName> = pts.iter().map(|p| p.cond.server.clone()).collect();
        v.dedup();
        v
    };
    let mut slows: Vec<u32> = pts.iter().map(|p| p.cond.slow).collect();
    slows.sort_unstable();
    slows.dedup();
    let (lo, hi) = decades(
        pts.iter()
            .flat_map(|p| [p.p95, p.min, p.max, p.published.as_ref().map(|x| x.0)])
            .flatten(),
    );
    let mut routes: Vec<RouteName> = pts.iter().map(|p| p.cond.route.clone()).collect();
    routes.sort_by_key(select::route_key);
    routes.dedup();

    let (cols, panel_w, panel_h, strip) = (3usize, 430u32, 380u32, 40u32);
    let width = servers.len().clamp(1, cols) as u32 * panel_w;
    svg(width, height(servers.len(), cols, panel_h, strip), |root| {
        let (top, body) = root.split_vertically(strip);
        let mut items: Vec<(String, RGBColor, Key)> = routes
            .iter()
            .map(|r| (r.to_string(), route_color(r), Key::Dot))
            .collect();
        items.push(("min–max of runs".into(), INK, Key::VLine));
        items.push(("published".into(), PUBLISHED, Key::Mark));
        legend(&top, 12, strip as i32 / 2, &items)?;
        for (server, panel) in servers.iter().zip(panels(&body, servers.len(), cols)) {
            let mine: Vec<&Point> = pts.iter().filter(|p| &p.cond.server == server).collect();
            draw_panel(&panel, server.as_str(), &mine, &slows, (lo, hi))?;
        }
        Ok(())
    })
}

fn draw_panel(
    panel: &Area<'_>,
    server: &str,
    pts: &[&Point],
    slows: &[u32],
    (lo, hi): (f64, f64),
) -> Result<()> {
    let n = slows.len();
    let mut routes: Vec<&RouteName> = pts.iter().map(|p| &p.cond.route).collect();
    routes.sort_by_key(|r| select::route_key(r));
    routes.dedup();
    let m = routes.len();
    let slot = |slow: u32, route: &RouteName| -> f64 {
        let i = slows.iter().position(|&s| s == slow).unwrap_or(0) as f64;
        let j = routes.iter().position(|&r| r == route).unwrap_or(0) as f64;
        i + (j - (m as f64 - 1.0) / 2.0) * 0.8 / m.max(1) as f64
    };
    let mut chart = ChartBuilder::on(panel)
        .caption(server, (FONT, 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), (lo..hi).log_scale())
        .map_err(plot_err)?;
    let label_x = |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
            format!("{} slow", slows[i as usize])
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .x_labels(n.max(2))
        .x_label_formatter(&label_x)
        .disable_x_mesh()
        .y_label_formatter(&|v| decade_label(*v))
        .y_desc("p95 of /fast (ms, log)")
        .x_desc("slow connections")
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 13))
        .light_line_style(RGBColor(242, 242, 242))
        .x_max_light_lines(0)
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
        .map_err(plot_err)?;
    for p in pts {
        let x = slot(p.cond.slow, &p.cond.route);
        let c = route_color(&p.cond.route);
        if let (Some(a), Some(b)) = (p.min, p.max) {
            let w = 0.03;
            chart
                .draw_series([
                    PathElement::new(vec![(x, a), (x, b)], c.stroke_width(2)),
                    PathElement::new(vec![(x - w, a), (x + w, a)], c.stroke_width(2)),
                    PathElement::new(vec![(x - w, b), (x + w, b)], c.stroke_width(2)),
                ])
                .map_err(plot_err)?;
        }
        if let Some(v) = p.p95 {
            chart
                .draw_series([Circle::new((x, v), 5, c.filled())])
                .map_err(plot_err)?;
        }
        if let Some((v, _)) = &p.published {
            let w = 0.09;
            chart
                .draw_series([PathElement::new(
                    vec![(x - w, *v), (x + w, *v)],
                    PUBLISHED.stroke_width(3),
                )])
                .map_err(plot_err)?;
        }
    }
    Ok(())
}
