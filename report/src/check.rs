//! The `slowlab check` section: p95 of the fast path against the number of
//! slow clients (log y), one line per route, each level marked with its
//! verdict, and a table of each route's answer. The slow clients are named
//! by `check.csv`'s `direction`: slow readers, slow uploaders or slowloris
//! clients.

use anyhow::Result;
use plotters::prelude::*;

use super::charts::{
    Csv, FONT, INK, Key, cell, decade_label, decades, legend, plot_err, route_color, svg,
};
use super::data::Results;
use super::doc::{Block, Figure, Section, Table, text};
use schema::{CHECK_CSV, CheckRow, Direction, LevelVerdict, RouteName};

pub const ID: &str = "check";
/// The section's title for a directory without levels yet; a check's own
/// follows its direction ([`title`]).
pub const TITLE: &str = "slowlab check: slow readers against the fast path";

/// The direction of the check's levels (`check.csv` `direction`; empty, or
/// no level yet, is `download`).
pub fn direction(rows: &[CheckRow]) -> Direction {
    rows.iter()
        .find_map(|r| r.direction.or_download())
        .unwrap_or(Direction::Download)
}

/// What the slow clients of `direction` are called.
pub fn clients(direction: Direction) -> &'static str {
    match direction {
        Direction::Download => "slow readers",
        Direction::Upload => "slow uploaders",
        Direction::Headers => "slowloris clients",
    }
}

/// The section's title for a check in `direction`.
pub fn title(direction: Direction) -> String {
    format!(
        "slowlab check: {} against the fast path",
        clients(direction)
    )
}

/// The section of a `slowlab check` directory, from its `check.csv`.
pub fn section(r: &Results, s: &mut Section) -> anyhow::Result<()> {
    let direction = direction(&r.check);
    s.title = title(direction);
    let what = match direction {
        Direction::Download => "slow readers on the large path",
        Direction::Upload => "slow uploaders on the upload path",
        Direction::Headers => "slowloris clients (request heads never finished)",
    };
    s.para(&format!(
        "Each level holds a number of {what} while an open-loop client calls the fast \
         path. A level is **held** when its p95 is at most 10x the route's baseline (no slow client), or at \
         most the baseline plus the noise floor (`--noise-floor`; `held_limit_ms` in `check.csv`) if that is \
         larger, and no call failed, **denied** when its p95 is 1 s or more, or 100x the baseline or more, or any call failed \
         or timed out, and **degraded** in between. After the first denied level the search bisects down to \
         the last level that was not."
    ));
    if let Some(m) = r.missing.iter().find(|m| m.file == CHECK_CSV) {
        match &m.error {
            Some(e) => s.note(&format!("`{CHECK_CSV}` could not be read: {e}")),
            None => s.note(&format!("`{CHECK_CSV}` is missing.")),
        }
        return Ok(());
    }
    if r.check.is_empty() {
        s.note(&format!("`{CHECK_CSV}` has no levels yet."));
        return Ok(());
    }
    if let Err(e) = draw(&r.check, clients(direction), s) {
        s.note(&format!("The chart could not be drawn: {e:#}"));
    }
    table(&r.check, clients(direction), s);
    Ok(())
}

/// The routes in the order the check measured them.
fn routes(rows: &[CheckRow]) -> Vec<RouteName> {
    let mut v: Vec<RouteName> = Vec::new();
    for r in rows {
        if !v.contains(&r.route) {
            v.push(r.route.clone());
        }
    }
    v
}

fn sorted<'a>(rows: &'a [CheckRow], route: &RouteName) -> Vec<&'a CheckRow> {
    let mut mine: Vec<&CheckRow> = rows.iter().filter(|x| &x.route == route).collect();
    mine.sort_by_key(|x| x.slow_readers);
    mine
}

fn draw(rows: &[CheckRow], who: &str, s: &mut Section) -> Result<()> {
    let x_max = rows
        .iter()
        .map(|r| r.slow_readers)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let (lo, hi) = decades(rows.iter().filter_map(|r| r.p95_ms));
    let routes = routes(rows);
    let chart_svg = svg(760, 440, |root| {
        let (top, body) = root.split_vertically(40);
        let mut items: Vec<(String, RGBColor, Key)> = routes
            .iter()
            .map(|r| (r.to_string(), route_color(r), Key::Line))
            .collect();
        items.push(("held".into(), INK, Key::Dot));
        items.push(("denied".into(), INK, Key::Cross));
        let x = legend(&top, 12, 20, &items)?;
        top.draw(&Circle::new((x + 6, 20), 4, INK.stroke_width(1)))
            .map_err(plot_err)?;
        top.draw(&Text::new("degraded", (x + 16, 13), (FONT, 13)))
            .map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&body)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.2..x_max * 1.05, (lo..hi).log_scale())
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc(who)
            .y_desc("p95 of the fast path (ms, log)")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| decade_label(*v))
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .light_line_style(RGBColor(242, 242, 242))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(plot_err)?;
        for route in &routes {
            let c = route_color(route);
            let mine = sorted(rows, route);
            let pts: Vec<(f64, f64)> = mine
                .iter()
                .filter_map(|x| Some((f64::from(x.slow_readers), x.p95_ms?)))
                .collect();
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                .map_err(plot_err)?;
            for x in mine {
                // A level without a p95 (every call failed) sits at the top.
                let at = (f64::from(x.slow_readers), x.p95_ms.unwrap_or(hi));
                match x.verdict.known() {
                    Some(LevelVerdict::Held) => chart.draw_series([Circle::new(at, 4, c.filled())]),
                    Some(LevelVerdict::Denied) => {
                        chart.draw_series([Cross::new(at, 5, c.stroke_width(2))])
                    }
                    _ => chart.draw_series([Circle::new(at, 4, c.stroke_width(2))]),
                }
                .map_err(plot_err)?;
            }
        }
        Ok(())
    })?;
    let mut csv = Csv::new(&[
        "route",
        "slow_readers",
        "p95_ms",
        "baseline_p95_ms",
        "errors",
        "verdict",
    ]);
    for x in rows {
        csv.row(&[
            x.route.to_string(),
            x.slow_readers.to_string(),
            cell(x.p95_ms, 3),
            cell(x.baseline_p95_ms, 3),
            x.errors.to_string(),
            x.verdict.to_string(),
        ]);
    }
    s.push(Block::Figure(Figure {
        file: "report-check.svg".into(),
        svg: chart_svg,
        alt: format!("p95 of the fast path against the number of {who}, one line per route"),
        caption: text(
            "Unit: the level (one short load). Point: the p95 (nearest rank) of the level's fast calls; filled: \
             held, ring: degraded, cross: denied (a level where every call failed sits at the top). Log axis: \
             each gridline is ten times the one below.",
        ),
        data_csv: csv.finish(),
    }));
    Ok(())
}

fn table(rows: &[CheckRow], who: &str, s: &mut Section) {
    let body = routes(rows)
        .iter()
        .map(|route| {
            let mine = sorted(rows, route);
            let denied = mine
                .iter()
                .filter(|x| x.verdict == LevelVerdict::Denied)
                .map(|x| x.slow_readers)
                .min();
            let held = mine
                .iter()
                .filter(|x| x.verdict == LevelVerdict::Held)
                .map(|x| x.slow_readers)
                .max();
            let levels: Vec<String> = mine
                .iter()
                .map(|x| format!("{}: {}", x.slow_readers, x.verdict))
                .collect();
            vec![
                route.to_string(),
                denied.map_or("never".into(), |d| format!("{d} {who}")),
                held.map_or("–".into(), |h| h.to_string()),
                cell(mine.first().and_then(|x| x.baseline_p95_ms), 3),
                levels.join(", "),
            ]
        })
        .collect();
    s.push(Block::Table(Table {
        header: [
            "route",
            "denied from",
            "held up to",
            "baseline p95 (ms)",
            "levels",
        ]
        .map(String::from)
        .to_vec(),
        rows: body,
        numeric: vec![2, 3],
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use schema::Named;

    fn level(direction: &str, slow: u32, verdict: LevelVerdict) -> CheckRow {
        CheckRow {
            route: catalogue::Route::Direct.into(),
            slow_readers: slow,
            p95_ms: Some(1.0 + f64::from(slow)),
            baseline_p95_ms: Some(1.0),
            verdict: Named::Known(verdict),
            direction: Named::parse(direction),
            ..CheckRow::default()
        }
    }

    fn build(direction: &str) -> Section {
        let r = Results {
            check: vec![
                level(direction, 0, LevelVerdict::Held),
                level(direction, 2, LevelVerdict::Denied),
            ],
            ..Results::default()
        };
        let mut s = Section::new(ID, TITLE);
        section(&r, &mut s).expect("the section builds");
        s
    }

    #[test]
    fn the_title_and_the_table_name_the_checks_slow_clients() {
        for (direction, who) in [
            ("", "slow readers"),
            ("download", "slow readers"),
            ("upload", "slow uploaders"),
            ("headers", "slowloris clients"),
        ] {
            let s = build(direction);
            assert_eq!(
                s.title,
                format!("slowlab check: {who} against the fast path"),
                "{direction:?}"
            );
            let Some(Block::Table(t)) = s.blocks.iter().find(|b| matches!(b, Block::Table(_)))
            else {
                panic!("no table for {direction:?}");
            };
            assert_eq!(t.rows[0][1], format!("2 {who}"), "{direction:?}");
            for other in ["slow readers", "slow uploaders", "slowloris clients"] {
                if other != who {
                    assert!(!s.title.contains(other), "{direction:?}: {}", s.title);
                }
            }
        }
        assert_eq!(title(Direction::Download), TITLE);
    }
}
