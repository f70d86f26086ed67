//! Charts 7 and 8: which servers block, and which proxies protect a
//! blocking app. The p95 of `/fast` of every column (a server reached
//! directly, or a route in front of one server), one colour per number of
//! slow clients (0 is the baseline), on a log axis; each point with slow
//! clients marked with what was observed (filled: relieved, ring: partial,
//! cross: blocked), and a square around it where the rule predicted
//! otherwise.

use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{Csv, FONT, INK, Key, cell, decade_label, decades, legend, plot_err, quiet_mesh, svg};
use crate::doc::{Block, Figure, Section, text};
use crate::servers::Cell;
use schema::Verdict;

/// One column: a server (chart 7) or a route (chart 8), and its cells, 0
/// slow first.
pub struct Column<'a> {
    pub name: String,
    pub cells: &'a [Cell],
}

/// What tells one chart from the other: its file, its alternative text,
/// what a column is (the data's first header) and the clients' name.
pub struct Labels {
    pub file: String,
    pub alt: String,
    pub column: &'static str,
    pub clients: &'static str,
}

/// The colour of a number of slow readers: grey for none, then warmer
/// with more.
fn slow_color(i: usize, slow: u32) -> RGBColor {
    const WARM: [RGBColor; 4] = [
        RGBColor(230, 130, 20),
        RGBColor(204, 51, 51),
        RGBColor(130, 40, 140),
        RGBColor(40, 40, 40),
    ];
    match slow {
        0 => RGBColor(140, 140, 140),
        _ => WARM[i.saturating_sub(1) % WARM.len()],
    }
}

/// Adds the figure of `servers` (the columns) to `s`.
pub fn figure(servers: &[Column<'_>], labels: &Labels, s: &mut Section) -> Result<()> {
    let mut slows: Vec<u32> = servers
        .iter()
        .flat_map(|r| r.cells.iter().map(|c| c.slow))
        .collect();
    slows.sort_unstable();
    slows.dedup();
    let svg = draw(servers, &slows)?;
    let mut csv = Csv::new(&[
        labels.column,
        "slow_clients",
        "p95_ms",
        "p95_min_ms",
        "p95_max_ms",
        "predicted",
        "observed",
    ]);
    for r in servers {
        for c in r.cells {
            csv.row(&[
                r.name.to_string(),
                c.slow.to_string(),
                cell(c.p95, 3),
                cell(c.min, 3),
                cell(c.max, 3),
                c.predicted.map(Verdict::name).unwrap_or_default().into(),
                c.observed.map(Verdict::name).unwrap_or_default().into(),
            ]);
        }
    }
    s.push(Block::Figure(Figure {
        file: labels.file.clone(),
        svg,
        alt: labels.alt.clone(),
        caption: text(&format!(
            "Unit: the condition. Point: the median over its runs of each run's p95 of `/fast`; bar: the \
             smallest to the largest run's p95. With slow {}, filled: observed relieved, ring: partial, \
             cross: blocked (against the same {}'s 0-slow p95); a square: the rule predicted the other \
             verdict. Log axis: each gridline is ten times the one below.",
            labels.clients, labels.column
        )),
        data_csv: csv.finish(),
    }));
    Ok(())
}

fn draw(servers: &[Column<'_>], slows: &[u32]) -> Result<String> {
    let n = servers.len();
    let (lo, hi) = decades(
        servers
            .iter()
            .flat_map(|r| r.cells.iter().flat_map(|c| [c.p95, c.min, c.max]))
            .flatten(),
    );
    let (col_w, strip, labels) = (96u32, 40u32, 52u32);
    let width = (n as u32 * col_w + 90).max(640);
    svg(width, 420 + labels, |root| {
        let (top, body) = root.split_vertically(strip);
        let mut items: Vec<(String, RGBColor, Key)> = slows
            .iter()
            .enumerate()
            .map(|(i, &slow)| (format!("{slow} slow"), slow_color(i, slow), Key::Dot))
            .collect();
        items.push(("blocked".into(), INK, Key::Cross));
        let x = legend(&top, 12, strip as i32 / 2, &items)?;
        let y = strip as i32 / 2;
        top.draw(&Circle::new((x + 6, y), 4, INK.stroke_width(1)))
            .map_err(plot_err)?;
        let style = TextStyle::from((FONT, 13).into_font())
            .color(&INK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        top.draw(&Text::new("partial", (x + 18, y), style.clone()))
            .map_err(plot_err)?;
        let x = x + 18 + 7 * 7 + 18;
        top.draw(&Rectangle::new(
            [(x, y - 6), (x + 12, y + 6)],
            INK.stroke_width(1),
        ))
        .map_err(plot_err)?;
        top.draw(&Text::new("predicted otherwise", (x + 18, y), style))
            .map_err(plot_err)?;

        let mut chart = ChartBuilder::on(&body)
            .margin(12)
            .x_label_area_size(labels)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), (lo..hi).log_scale())
            .map_err(plot_err)?;
        // The names are drawn below, in two staggered rows, so that long
        // ones do not overlap.
        quiet_mesh(&mut chart.configure_mesh())
            .x_labels(n.max(2))
            .x_label_formatter(&|_| String::new())
            .disable_x_mesh()
            .x_max_light_lines(0)
            .y_label_formatter(&|v| decade_label(*v))
            .y_desc("p95 of /fast (ms, log)")
            .axis_desc_style((FONT, 13))
            .draw()
            .map_err(plot_err)?;
        let m = slows.len() as f64;
        for (i, r) in servers.iter().enumerate() {
            for c in r.cells {
                let j = slows.iter().position(|&s| s == c.slow).unwrap_or(0);
                let x = i as f64 + (j as f64 - (m - 1.0) / 2.0) * 0.7 / m.max(1.0);
                let color = slow_color(j, c.slow);
                if let (Some(a), Some(b)) = (c.min, c.max) {
                    chart
                        .draw_series([PathElement::new(
                            vec![(x, a), (x, b)],
                            color.stroke_width(1),
                        )])
                        .map_err(plot_err)?;
                }
                let Some(v) = c.p95 else { continue };
                let at = (x, v);
                match c.observed {
                    Some(Verdict::Blocked) => {
                        chart.draw_series([Cross::new(at, 5, color.stroke_width(2))])
                    }
                    Some(Verdict::Partial) => {
                        chart.draw_series([Circle::new(at, 4, color.stroke_width(2))])
                    }
                    _ => chart.draw_series([Circle::new(at, 4, color.filled())]),
                }
                .map_err(plot_err)?;
                if let (Some(p), Some(o)) = (c.predicted, c.observed)
                    && p != o
                {
                    chart
                        .draw_series([EmptyElement::at(at)
                            + plotters::element::Rectangle::new(
                                [(-8, -8), (8, 8)],
                                INK.stroke_width(1),
                            )])
                        .map_err(plot_err)?;
                }
            }
        }
        let label = TextStyle::from((FONT, 12).into_font())
            .color(&INK)
            .pos(Pos::new(HPos::Center, VPos::Top));
        for (i, r) in servers.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(i as f64, lo));
            let tick = [(px, py), (px, py + 4 + 14 * (i % 2) as i32)];
            root.draw(&PathElement::new(tick.to_vec(), RGBColor(180, 180, 180)))
                .map_err(plot_err)?;
            let at = (px, py + 6 + 14 * (i % 2) as i32);
            root.draw(&Text::new(r.name.clone(), at, label.clone()))
                .map_err(plot_err)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_levels_get_distinct_colours_and_none_is_grey() {
        let c: Vec<RGBColor> = [0, 2, 8]
            .iter()
            .enumerate()
            .map(|(i, &s)| slow_color(i, s))
            .collect();
        assert_eq!(c[0], RGBColor(140, 140, 140));
        assert_ne!(c[1], c[2]);
        assert_ne!(c[0], c[1]);
    }
}
