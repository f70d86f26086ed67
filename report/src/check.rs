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
/// A level with a p95 at or above this is denied whatever its baseline.
const DENIED_LINE_MS: f64 = 1000.0;
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
         or timed out, **degraded** in between, and **inconclusive** when the tester or the host ran out meanwhile. \
         After the first denied level the search bisects down to the last level that was not, and measures \
         those two again (`--repeat`)."
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
    what_ran(r, s);
    answer(r, s);
    if let Err(e) = draw(&r.check, clients(direction), s) {
        s.note(&format!("The chart could not be drawn: {e:#}"));
    }
    table(&r.check, clients(direction), s);
    Ok(())
}

/// The command, what it started, and the versions of what ran: the
/// lab's own parts only where they ran, and a user's server as it names
/// itself.
fn what_ran(r: &Results, s: &mut Section) {
    let run = &r.environment["run"];
    if let Some(cmd) = run["command"].as_array() {
        let words: Vec<&str> = cmd.iter().filter_map(|w| w.as_str()).collect();
        s.para(&format!("Command: `{}`", words.join(" ")));
    }
    let started = &run["started"];
    let what = if let Some(name) = started["lab_server"].as_str() {
        format!(
            "the lab's `{name}` ({})",
            started["describe"].as_str().unwrap_or("")
        )
    } else if let Some(line) = started["server_cmd"].as_str() {
        format!("your server, started with `{line}`")
    } else if let Some(addr) = started["target"].as_str() {
        format!("your server, already running at {addr}")
    } else {
        return;
    };
    let software = r.check_answer["preflight"]
        .as_array()
        .and_then(|p| {
            p.iter()
                .find(|f| f["check"] == "server_software")
                .and_then(|f| f["message"].as_str())
        })
        .map(|v| format!(" It names itself `{v}` (its `Server` header)."))
        .unwrap_or_else(|| match started["lab_server"].is_null() {
            true => " It sent no `Server` header, so its version is not known.".into(),
            false => String::new(),
        });
    let lab: Vec<String> = run["ran"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.as_str())
        .filter_map(|t| {
            let v = r.environment["versions"][t].as_str()?;
            Some(format!("{t} {v}"))
        })
        .collect();
    let lab = match lab.is_empty() {
        true => String::new(),
        false => format!(" The lab's parts that ran: {}.", lab.join(", ")),
    };
    s.para(&format!("Checked: {what}.{software}{lab}"));
}

/// The answer of each route and the remedy, as `check` printed them.
fn answer(r: &Results, s: &mut Section) {
    let a = &r.check_answer;
    let Some(routes) = a["routes"].as_array() else {
        return;
    };
    for route in routes {
        if let Some(words) = route["answer"].as_str() {
            s.para(words);
        }
    }
    if let Some(remedy) = a["remedy"].as_str() {
        s.para(remedy);
    }
}

/// Where a level of `n` slow clients sits on the log-2 axis: 0 one step
/// left of 1.
fn x_of(n: u32) -> f64 {
    match n {
        0 => -1.0,
        n => f64::from(n).log2(),
    }
}

/// The label of a log-2 gridline: 0, 1, 2, 4, ...
fn x_label(v: f64) -> String {
    if (v - v.round()).abs() > 1e-6 {
        return String::new();
    }
    match v.round() as i32 {
        -1 => "0".into(),
        k if k >= 0 => format!("{}", 1u64 << k.min(62)),
        _ => String::new(),
    }
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
    let x_max = x_of(
        rows.iter()
            .map(|r| r.slow_readers)
            .max()
            .unwrap_or(1)
            .max(1),
    )
    .max(1.0);
    let held_limits: Vec<f64> = rows.iter().filter_map(|r| r.held_limit_ms).collect();
    let (lo, hi) = decades(
        rows.iter()
            .filter_map(|r| r.p95_ms)
            .chain(held_limits.iter().copied())
            .chain([DENIED_LINE_MS]),
    );
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
            .build_cartesian_2d(-1.2..x_max + 0.2, (lo..hi).log_scale())
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc(format!("{who} (log 2)"))
            .y_desc("p95 of the fast path (ms, log)")
            .x_labels((x_max.ceil() as usize + 2).max(2))
            .x_label_formatter(&|v| x_label(*v))
            .y_label_formatter(&|v| decade_label(*v))
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .light_line_style(RGBColor(242, 242, 242))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(plot_err)?;
        // The lines a level is judged by: denied at or above 1 s, held at or
        // under each route's limit.
        let across = |y: f64| vec![(-1.2, y), (x_max + 0.2, y)];
        chart
            .draw_series(DashedLineSeries::new(
                across(DENIED_LINE_MS),
                6,
                4,
                INK.stroke_width(1),
            ))
            .map_err(plot_err)?;
        for route in &routes {
            let c = route_color(route);
            let mine = sorted(rows, route);
            if let Some(limit) = mine.first().and_then(|x| x.held_limit_ms) {
                chart
                    .draw_series(DashedLineSeries::new(
                        across(limit),
                        2,
                        3,
                        c.stroke_width(1),
                    ))
                    .map_err(plot_err)?;
            }
            let pts: Vec<(f64, f64)> = mine
                .iter()
                .filter(|x| x.repetition.is_none_or(|r| r == 1))
                .filter_map(|x| Some((x_of(x.slow_readers), x.p95_ms?)))
                .collect();
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                .map_err(plot_err)?;
            for x in mine {
                // A level without a p95 (every call failed) sits at the top.
                let at = (x_of(x.slow_readers), x.p95_ms.unwrap_or(hi));
                match x.verdict.known() {
                    Some(LevelVerdict::Held) => chart.draw_series([Circle::new(at, 4, c.filled())]),
                    Some(LevelVerdict::Denied) => {
                        chart.draw_series([Cross::new(at, 5, c.stroke_width(2))])
                    }
                    Some(LevelVerdict::Inconclusive) => {
                        chart.draw_series([TriangleMarker::new(at, 5, c.stroke_width(2))])
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
             held, ring: degraded, cross: denied, triangle: inconclusive (a level where every call failed sits \
             at the top; a boundary level measured again has a point per run, its line goes through the first). \
             Dashed: black, the 1 s at and above which a level is denied; in a route's colour, its held limit. \
             The slow clients double from gridline to gridline (log 2); the p95 is on a log axis, each gridline \
             ten times the one below.",
        ),
        data_csv: csv.finish(),
    }));
    Ok(())
}

/// The verdicts of each level of a route, in the order measured.
fn runs_by_level<'a>(mine: &[&'a CheckRow]) -> Vec<(u32, Vec<&'a CheckRow>)> {
    let mut by: Vec<(u32, Vec<&CheckRow>)> = Vec::new();
    for x in mine {
        match by.iter_mut().find(|(n, _)| *n == x.slow_readers) {
            Some((_, v)) => v.push(x),
            None => by.push((x.slow_readers, vec![x])),
        }
    }
    by.sort_by_key(|(n, _)| *n);
    by
}

fn table(rows: &[CheckRow], who: &str, s: &mut Section) {
    let body = routes(rows)
        .iter()
        .map(|route| {
            let mine = sorted(rows, route);
            let by = runs_by_level(&mine);
            let is = |v: &[&CheckRow], verdict| v.iter().filter(|x| x.verdict == verdict).count();
            // A level is denied when most of its runs were (`--repeat`).
            let denied = by
                .iter()
                .find(|(_, v)| is(v, LevelVerdict::Denied) * 2 > v.len())
                .map(|(n, v)| {
                    let agreed = match v.len() {
                        1 => String::new(),
                        runs => format!(" ({} of {runs} runs)", is(v, LevelVerdict::Denied)),
                    };
                    let cause = v
                        .iter()
                        .find(|x| x.verdict == LevelVerdict::Denied)
                        .map(|x| x.cause.as_str())
                        .filter(|c| !c.is_empty())
                        .map(|c| format!(", {c}"))
                        .unwrap_or_default();
                    format!("{n} {who}{agreed}{cause}")
                });
            let inconclusive = by
                .iter()
                .find(|(_, v)| is(v, LevelVerdict::Inconclusive) > 0)
                .map(|(n, _)| *n);
            let held = mine
                .iter()
                .filter(|x| x.verdict == LevelVerdict::Held)
                .map(|x| x.slow_readers)
                .max();
            let levels: Vec<String> = by
                .iter()
                .map(|(n, v)| {
                    let verdicts: Vec<String> = v.iter().map(|x| x.verdict.to_string()).collect();
                    format!("{n}: {}", verdicts.join("/"))
                })
                .collect();
            vec![
                route.to_string(),
                match (denied, inconclusive) {
                    (Some(d), _) => d,
                    (None, Some(i)) => format!("inconclusive from {i}"),
                    (None, None) => "never".into(),
                },
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

    #[test]
    fn a_server_cmd_check_shows_its_command_and_answer_and_no_lab_version() {
        let env = serde_json::json!({
            "versions": {"slowlab": "0.1.0", "gunicorn": "23.0.0", "nginx": "1.22.1"},
            "run": {
                "command": ["slowlab", "check", "--server-cmd", "python3 app.py {port}"],
                "started": {"server_cmd": "python3 app.py {port}"},
                "ran": [],
            }
        });
        let answer = serde_json::json!({
            "preflight": [{"check": "server_software", "status": "ok", "message": "Werkzeug/3.0"}],
            "routes": [{"answer": "direct: denied from 2 (3 of 3 runs)."}],
            "remedy": "Remedy: put a buffering reverse proxy in front."
        });
        let r = Results {
            check: vec![
                level("download", 0, LevelVerdict::Held),
                level("download", 2, LevelVerdict::Denied),
            ],
            environment: env,
            check_answer: answer,
            ..Results::default()
        };
        let mut s = Section::new(ID, TITLE);
        section(&r, &mut s).expect("the section builds");
        let text = format!("{:?}", s.blocks);
        assert!(
            text.contains("slowlab check --server-cmd python3 app.py {port}"),
            "{text}"
        );
        assert!(text.contains("Werkzeug/3.0"), "{text}");
        assert!(text.contains("denied from 2 (3 of 3 runs)"), "{text}");
        assert!(text.contains("Remedy: put a buffering"), "{text}");
        assert!(
            !text.contains("23.0.0") && !text.contains("gunicorn"),
            "{text}"
        );
        let mut machine = Section::new("machine", "machine");
        crate::notices::machine(&r, &mut machine).expect("the machine section");
        let m = format!("{:?}", machine.blocks);
        assert!(m.contains("version of slowlab"), "{m}");
        assert!(
            !m.contains("version of gunicorn") && !m.contains("version of nginx"),
            "{m}"
        );
    }
}
