//! The two sweep charts: one panel per combination of caps and slow
//! readers, one line per sweep, a colour per stack kept in every panel.

use anyhow::Result;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::stack;
use crate::charts::{
    Area, FONT, GRID, INK, Key, decade_label, decades, height, legend, note, panels, plot_err, svg,
};
use analysis::select;
use schema::{CapsMode, CapsName, RouteName, ServerName, SweepRow as Step};

/// A colour per stack: Tableau 10, in stack order.
const PALETTE: [RGBColor; 10] = [
    RGBColor(78, 121, 167),
    RGBColor(242, 142, 43),
    RGBColor(225, 87, 89),
    RGBColor(118, 183, 178),
    RGBColor(89, 161, 79),
    RGBColor(237, 201, 72),
    RGBColor(176, 122, 161),
    RGBColor(255, 157, 167),
    RGBColor(156, 117, 95),
    RGBColor(186, 176, 172),
];

/// Stacks in the harness's order: servers, then direct before proxies.
fn stacks(steps: &[Step]) -> Vec<(ServerName, RouteName)> {
    let mut v: Vec<(ServerName, RouteName)> = steps
        .iter()
        .map(|s| (s.server.clone(), s.route.clone()))
        .collect();
    v.sort_by_key(|(s, r)| (s.clone(), select::route_key(r)));
    v.dedup();
    v
}

/// The panels: (caps, slow readers), uncapped first, fewer slow first.
fn panel_keys(steps: &[Step]) -> Vec<(CapsName, u32)> {
    let mut v: Vec<(CapsName, u32)> = steps
        .iter()
        .map(|s| (s.caps.clone(), s.slow_clients))
        .collect();
    v.sort_by_key(|(c, s)| (*c != CapsMode::Uncapped, c.clone(), *s));
    v.dedup();
    v
}

/// Which chart: replies per second, or the p95 response time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    Replies,
    P95,
}

/// Draws one chart of every sweep's steps, as SVG text.
pub fn draw(steps: &[Step], metric: Metric) -> Result<String> {
    let stacks = stacks(steps);
    let keys = panel_keys(steps);
    let color = |server: &ServerName, route: &RouteName| {
        let i = stacks
            .iter()
            .position(|(s, r)| s == server && r == route)
            .unwrap_or(0);
        PALETTE[i % PALETTE.len()]
    };
    let x_max = steps
        .iter()
        .map(|s| s.req_rate_demanded)
        .fold(1.0, f64::max)
        * 1.05;
    let y_max = steps
        .iter()
        .flat_map(|s| {
            [
                s.replies_per_s_max,
                s.replies_per_s_avg,
                Some(s.req_rate_demanded),
            ]
        })
        .flatten()
        .fold(1.0, f64::max)
        * 1.05;
    let (lo, hi) = decades(steps.iter().filter_map(|s| s.p95_ms));
    let (cols, panel_w, panel_h) = (2usize, 560u32, 380u32);
    let strip = 30 + 22 * stacks.len().div_ceil(4) as u32;
    let width = keys.len().clamp(1, cols) as u32 * panel_w;
    svg(width, height(keys.len(), cols, panel_h, strip), |root| {
        let (top, body) = root.split_vertically(strip);
        for (row, chunk) in stacks.chunks(4).enumerate() {
            let items: Vec<(String, RGBColor, Key)> = chunk
                .iter()
                .map(|(s, r)| (stack(s, r), color(s, r), Key::Line))
                .collect();
            legend(&top, 12, 14 + 22 * row as i32, &items)?;
        }
        let y = strip as i32 - 12;
        let x = legend(
            &top,
            12,
            y,
            &[
                ("min–max of 1 s intervals".into(), INK, Key::VLine),
                ("step with errors".into(), INK, Key::Cross),
            ],
        )?;
        top.draw(&Circle::new((x + 6, y), 6, INK.stroke_width(1)))
            .map_err(plot_err)?;
        note(&top, x + 18, y - 7, 13, "load generator saturated")?;
        for ((caps, slow), panel_area) in keys.iter().zip(panels(&body, keys.len(), cols)) {
            let mine: Vec<&Step> = steps
                .iter()
                .filter(|s| &s.caps == caps && s.slow_clients == *slow)
                .collect();
            let title = format!(
                "{caps}, {slow} slow reader{}",
                if *slow == 1 { "" } else { "s" }
            );
            match metric {
                Metric::Replies => {
                    let count = |v: &f64| format!("{v:.0}");
                    let axis = ("replies per second", &count as &dyn Fn(&f64) -> String);
                    let mut chart = panel(&panel_area, &title, x_max, 0.0..y_max, axis)?;
                    let diagonal = vec![(0.0, 0.0), (x_max, x_max)];
                    chart
                        .draw_series([PathElement::new(diagonal, GRID.stroke_width(2))])
                        .map_err(plot_err)?;
                    lines(&mut chart, &mine, &color, |s| s.replies_per_s_avg, true)?;
                }
                Metric::P95 => {
                    let decade = |v: &f64| decade_label(*v);
                    let axis = (
                        "p95 response time (ms, log)",
                        &decade as &dyn Fn(&f64) -> String,
                    );
                    let mut chart = panel(&panel_area, &title, x_max, (lo..hi).log_scale(), axis)?;
                    lines(&mut chart, &mine, &color, |s| s.p95_ms, false)?;
                }
            }
        }
        Ok(())
    })
}

/// A panel's chart with its axes: demanded requests per second across, the
/// metric up.
fn panel<'a, 'b, Y>(
    area: &'a Area<'b>,
    title: &str,
    x_max: f64,
    y: impl AsRangedCoord<CoordDescType = Y, Value = f64>,
    (y_desc, y_label): (&str, &dyn Fn(&f64) -> String),
) -> Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, Y>>>
where
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 15))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..x_max, y)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("demanded requests per second")
        .y_desc(y_desc)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(y_label)
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 13))
        .light_line_style(RGBColor(242, 242, 242))
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
        .map_err(plot_err)?;
    Ok(chart)
}

/// One line per sweep through its steps' values, with the step marks.
fn lines<Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, Y>>,
    steps: &[&Step],
    color: &dyn Fn(&ServerName, &RouteName) -> RGBColor,
    value: impl Fn(&Step) -> Option<f64>,
    bars: bool,
) -> Result<()>
where
    Y: Ranged<ValueType = f64>,
{
    let mut ids: Vec<&str> = steps.iter().map(|s| s.sweep_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    for id in ids {
        let mut mine: Vec<&&Step> = steps.iter().filter(|s| s.sweep_id == id).collect();
        mine.sort_by(|a, b| a.req_rate_demanded.total_cmp(&b.req_rate_demanded));
        let c = color(&mine[0].server, &mine[0].route);
        let pts: Vec<(f64, f64)> = mine
            .iter()
            .filter_map(|s| Some((s.req_rate_demanded, value(s)?)))
            .collect();
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(plot_err)?;
        for st in &mine {
            let x = st.req_rate_demanded;
            if bars {
                if let (Some(a), Some(b)) = (st.replies_per_s_min, st.replies_per_s_max) {
                    chart
                        .draw_series([PathElement::new(vec![(x, a), (x, b)], c.stroke_width(1))])
                        .map_err(plot_err)?;
                }
            }
            let Some(v) = value(st) else { continue };
            if st.errors > 0 {
                chart
                    .draw_series([Cross::new((x, v), 4, c.stroke_width(2))])
                    .map_err(plot_err)?;
            } else {
                chart
                    .draw_series([Circle::new((x, v), 3, c.filled())])
                    .map_err(plot_err)?;
            }
            if st.loadgen_saturated == Some(true) {
                chart
                    .draw_series([Circle::new((x, v), 7, INK.stroke_width(1))])
                    .map_err(plot_err)?;
            }
        }
    }
    Ok(())
}
