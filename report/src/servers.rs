//! "Which servers block": every server reached directly, side by side, at
//! each number of slow readers, with its handler model, what the rule
//! predicts and what was observed (the `servers` preset's chart and
//! table; the chart is drawn in [`super::charts::verdicts`]).

use super::charts::verdicts::{self, Column, Labels};
use super::data::Results;
use super::doc::{Block, Section, Table};
use super::fmt;
use analysis::crosscheck::{self, Verdict};
use catalogue::LoadProfile;
use catalogue::{ProxyBuffers, Route, Server};
use schema::ServerName;

/// Fewer servers measured directly with slow readers than this: no table
/// (the quick preset's two servers are compared in the cross-check).
const MIN_SERVERS: usize = 3;

pub const ID: &str = "servers";
pub const TITLE: &str = "7. Which servers block";
pub const FILE: &str = "report-servers.svg";

/// What chart 7 is.
fn labels() -> Labels {
    Labels {
        file: FILE.into(),
        alt: "p95 of /fast of every server reached directly, by number of slow readers, with the verdicts".into(),
        column: "server",
        clients: "readers",
    }
}

/// One server at one number of slow readers, reached directly.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub slow: u32,
    /// The condition's p95 (median over its runs) and its runs' range.
    pub p95: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// The rule's prediction and the observation against the 0-slow p95;
    /// none at 0 slow.
    pub predicted: Option<Verdict>,
    pub observed: Option<Verdict>,
}

/// One server's row: its handler model and its cells, 0 slow first.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerRow {
    pub name: ServerName,
    pub known: Option<Server>,
    pub cells: Vec<Cell>,
}

impl ServerRow {
    pub fn cell(&self, slow: u32) -> Option<&Cell> {
        self.cells.iter().find(|c| c.slow == slow)
    }
}

/// The servers measured directly, with the numbers of slow readers (0 and
/// each one with slow readers); none when fewer than [`MIN_SERVERS`]
/// servers had slow readers.
pub fn rows(r: &Results) -> Option<(Vec<ServerRow>, Vec<u32>)> {
    let direct: Vec<_> = r
        .conditions
        .iter()
        .filter(|c| c.route == Route::Direct)
        .collect();
    // Known servers in their order, then the others by name.
    let mut servers: Vec<&ServerName> = direct
        .iter()
        .filter(|c| c.slow_clients > 0)
        .map(|c| &c.server)
        .collect();
    servers.sort();
    servers.dedup();
    if servers.len() < MIN_SERVERS {
        return None;
    }
    let mut slows: Vec<u32> = direct.iter().map(|c| c.slow_clients).collect();
    slows.push(0);
    slows.sort_unstable();
    slows.dedup();
    let body = LoadProfile::experiment().body.large_bytes;
    let cap = ProxyBuffers::EXPERIMENT.capacity();
    let rows = servers
        .into_iter()
        .map(|name| {
            let known: Option<Server> = name.known();
            let cond = |slow: u32| {
                direct
                    .iter()
                    .find(|c| &c.server == name && c.slow_clients == slow)
            };
            let base = cond(0).and_then(|c| c.p95);
            let cells = slows
                .iter()
                .map(|&slow| {
                    let c = cond(slow);
                    let p95 = c.and_then(|c| c.p95);
                    let judged = slow > 0;
                    Cell {
                        slow,
                        p95,
                        min: c.and_then(|c| c.p95_min),
                        max: c.and_then(|c| c.p95_max),
                        predicted: known
                            .filter(|_| judged)
                            .map(|s| crosscheck::predict(s, Route::Direct, slow, body, cap)),
                        observed: match (p95, base) {
                            (Some(p), Some(b)) if judged => Some(crosscheck::observe(p, b)),
                            _ => None,
                        },
                    }
                })
                .collect();
            ServerRow {
                name: name.clone(),
                known,
                cells,
            }
        })
        .collect();
    Some((rows, slows))
}

/// The section, when the directory has direct runs of at least
/// [`MIN_SERVERS`] servers with slow readers; otherwise left empty (and so
/// not shown).
pub fn section(r: &Results, sec: &mut Section) -> anyhow::Result<()> {
    let Some((servers, slows)) = rows(r) else {
        return Ok(());
    };
    let slows: Vec<u32> = slows.into_iter().filter(|&s| s > 0).collect();
    let body = LoadProfile::experiment().body.large_bytes;
    let mut header: Vec<String> = ["server", "handlers", "buffers a response", "p95, 0 slow"]
        .map(String::from)
        .to_vec();
    for s in &slows {
        header.push(format!("p95, {s} slow"));
        header.push(format!("{s} slow: predicted / observed"));
    }
    let mut rows = Vec::new();
    let mut disagree = Vec::new();
    for server in &servers {
        let known = server.known;
        let p95 = |slow| server.cell(slow).and_then(|c| c.p95);
        let mut row = vec![
            server.name.to_string(),
            known
                .map(|s| s.handlers().map_or("unbounded".into(), |h| h.to_string()))
                .unwrap_or_else(|| "–".into()),
            known
                .map(|s| if s.absorbs(body) { "yes" } else { "no" }.to_string())
                .unwrap_or_else(|| "–".into()),
            fmt::or_dash(p95(0), fmt::ms),
        ];
        for &slow in &slows {
            row.push(fmt::or_dash(p95(slow), fmt::ms));
            let cell = server.cell(slow);
            let predicted = cell.and_then(|c| c.predicted);
            let observed = cell.and_then(|c| c.observed);
            if let (Some(a), Some(b)) = (predicted, observed)
                && a != b
            {
                disagree.push(format!("{} at {slow} slow", server.name));
            }
            row.push(format!(
                "{} / {}",
                predicted.map_or("–", Verdict::name),
                observed.map_or("–", Verdict::name)
            ));
        }
        rows.push(row);
    }
    sec.para(
        "Every server reached directly, with no proxy, at each number of slow readers of `/large`. \
         *handlers*: how many responses it can write at once (a fixed pool of processes, threads or \
         greenlets; *unbounded* for an event loop); *buffers a response*: whether the server itself takes \
         a whole `/large` response off its handler (Waitress's output buffer, up to 16 MiB). Predicted \
         **blocked** when the slow readers can occupy every handler and nothing takes the response off \
         it; observed as in the cross-check, against the same server's 0-slow p95.",
    );
    let columns: Vec<Column<'_>> = servers
        .iter()
        .map(|s| Column {
            name: s.name.to_string(),
            cells: &s.cells,
        })
        .collect();
    if let Err(e) = verdicts::figure(&columns, &labels(), sec) {
        sec.note(&format!("The chart could not be drawn: {e:#}"));
    }
    // The handlers and the p95 columns; the verdicts are words.
    let numeric = [1, 3]
        .into_iter()
        .chain((0..slows.len()).map(|i| 4 + 2 * i))
        .collect();
    sec.push(Block::Table(Table {
        header,
        rows,
        numeric,
    }));
    if !disagree.is_empty() {
        sec.para(&format!(
            "The rule and the observation disagree for {}: the rule counts only the handlers a slow \
             reader holds, not the time a handler spends otherwise (copying a response into a buffer \
             under the CPU cap, for example).",
            disagree.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use schema::{ConditionRow, Named};

    fn cond(server: &str, slow: u32, p95: f64) -> ConditionRow {
        ConditionRow {
            server: Named::parse(server),
            route: Route::Direct.into(),
            slow_clients: slow,
            runs: 1,
            p95: Some(p95),
            ..ConditionRow::default()
        }
    }

    fn build(r: &Results) -> Section {
        let mut s = Section::new(ID, TITLE);
        section(r, &mut s).expect("the section builds");
        s
    }

    #[test]
    fn the_table_shows_every_server_and_flags_disagreements() {
        let mut r = Results {
            conditions: vec![
                cond("gunicorn-sync2", 0, 2.0),
                cond("gunicorn-sync2", 2, 6000.0),
            ],
            ..Results::default()
        };
        assert!(build(&r).blocks.is_empty(), "one server is no comparison");
        r.conditions.extend([
            cond("uvicorn", 0, 1.0),
            cond("uvicorn", 2, 1.5),
            cond("waitress4", 0, 1.0),
            cond("waitress4", 2, 2000.0),
        ]);
        let sec = build(&r);
        let Some(Block::Table(t)) = sec.blocks.iter().find(|b| matches!(b, Block::Table(_))) else {
            panic!("no table");
        };
        let names: Vec<&str> = t.rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(names, ["gunicorn-sync2", "uvicorn", "waitress4"]);
        assert_eq!(t.rows[0][1], "2");
        assert_eq!(t.rows[0][5], "blocked / blocked");
        assert_eq!(t.rows[1][1], "unbounded");
        assert_eq!(t.rows[1][5], "relieved / relieved");
        assert_eq!(t.rows[2][2], "yes");
        assert_eq!(t.rows[2][5], "relieved / blocked");
        let text = format!("{:?}", sec.blocks);
        assert!(text.contains("disagree for waitress4 at 2 slow"), "{text}");
        // The chart: one point per server and level, with the verdicts.
        let Some(Block::Figure(f)) = sec.blocks.iter().find(|b| matches!(b, Block::Figure(_)))
        else {
            panic!("no chart");
        };
        assert_eq!(f.file, FILE);
        assert!(f.svg.starts_with("<svg"));
        let lines: Vec<&str> = f.data_csv.lines().collect();
        assert_eq!(lines.len(), 1 + 3 * 2, "{}", f.data_csv);
        assert!(
            lines.contains(&"gunicorn-sync2,0,2.000,,,,"),
            "{}",
            f.data_csv
        );
        assert!(lines.contains(&"gunicorn-sync2,2,6000.000,,,blocked,blocked"));
        assert!(lines.contains(&"uvicorn,2,1.500,,,relieved,relieved"));
        assert!(lines.contains(&"waitress4,2,2000.000,,,relieved,blocked"));
    }
}
