//! "One connection, many held workers": the conditions of a route whose
//! edge speaks HTTP/2 (the `h2` preset), one row per condition with its
//! slow streams, how many shared a connection, the connections they took
//! and the p95 of `/fast`. Behind a proxy that does not buffer, each
//! stream holds its own upstream handler, so one connection of N streams
//! holds as many handlers as N connections of one.

use super::data::Results;
use super::doc::{Block, Section, Table};
use super::fmt;
use analysis::select;
use catalogue::Direction;
use schema::ConditionRow;

pub const ID: &str = "streams";
pub const TITLE: &str = "One connection, many held workers";

/// The HTTP/2-edge conditions of the response direction, in the report's
/// order (server, route, slow streams, streams per connection).
fn rows(r: &Results) -> Vec<&ConditionRow> {
    let mut out: Vec<&ConditionRow> = r
        .conditions
        .iter()
        .filter(|c| c.route.known().is_some_and(|k| k.edge().http2))
        .filter(|c| select::in_direction(&c.direction, Direction::Download))
        .collect();
    out.sort_by_key(|c| {
        (
            c.server.clone(),
            select::route_rank(&c.route),
            c.slow_clients,
            c.dims().streams_per_conn,
        )
    });
    out
}

pub fn section(r: &Results, sec: &mut Section) -> anyhow::Result<()> {
    let rows = rows(r);
    if rows.is_empty() {
        return Ok(());
    }
    sec.para(
        "Every slow download here is an HTTP/2 stream on a connection that carries \
         `streams per connection` of them, over TLS to the proxy, which sends each to the \
         app as its own HTTP/1.x request. Behind buffering off, a stream whose client reads \
         slowly holds its upstream handler as a slow HTTP/1 connection does: compare one \
         connection of 2 streams with 2 connections of one. `served at once` is how many \
         streams the proxy runs together, each with an upstream request: a connection runs \
         at most the streams its proxy advertises (`SETTINGS_MAX_CONCURRENT_STREAMS`, 100 \
         to 250 here), and its further streams wait. Conditions whose downloads \
         shared a connection are in this table only; the charts and tables above draw those \
         with a connection per download.",
    );
    let table_rows = rows
        .iter()
        .map(|c| {
            let spc = c.dims().streams_per_conn.unwrap_or(1);
            let at_once = c
                .route
                .known()
                .map(|r| r.served_at_once(c.slow_clients, spc).to_string())
                .unwrap_or_else(|| "–".into());
            vec![
                c.server.to_string(),
                c.route.to_string(),
                c.slow_clients.to_string(),
                spc.to_string(),
                c.slow_clients.div_ceil(spc.max(1)).to_string(),
                at_once,
                c.p95.map(fmt::ms).unwrap_or_else(|| "–".into()),
            ]
        })
        .collect();
    sec.push(Block::Table(Table {
        header: [
            "server",
            "route",
            "slow streams",
            "streams per connection",
            "connections",
            "served at once",
            "/fast p95",
        ]
        .map(String::from)
        .to_vec(),
        rows: table_rows,
        numeric: vec![2, 3, 4, 5, 6],
    }));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use catalogue::{Route, Server};

    fn cond(route: Route, slow: u32, spc: u32, p95: f64) -> ConditionRow {
        let mut c = ConditionRow {
            server: Server::GunicornSync2.into(),
            route: route.into(),
            slow_clients: slow,
            runs: 1,
            p95: Some(p95),
            ..ConditionRow::default()
        };
        c.streams_per_conn = Some(spc);
        c
    }

    #[test]
    fn one_row_per_h2_condition_with_its_connections() {
        let r = Results {
            conditions: vec![
                cond(Route::NginxOff, 2, 1, 3000.0),
                cond(Route::NginxH2Off, 2, 1, 3100.0),
                cond(Route::NginxH2Off, 2, 2, 3200.0),
                cond(Route::NginxH2Off, 8, 8, 5000.0),
                cond(Route::NginxH2On, 2, 2, 2.0),
                cond(Route::HaproxyH2, 150, 150, 4000.0),
            ],
            ..Results::default()
        };
        let mut sec = Section::new(ID, TITLE);
        section(&r, &mut sec).unwrap();
        let Some(Block::Table(t)) = sec.blocks.iter().find(|b| matches!(b, Block::Table(_))) else {
            panic!("no table");
        };
        let shapes: Vec<(&str, &str, &str, &str, &str)> = t
            .rows
            .iter()
            .map(|r| {
                (
                    r[1].as_str(),
                    r[2].as_str(),
                    r[3].as_str(),
                    r[4].as_str(),
                    r[5].as_str(),
                )
            })
            .collect();
        assert_eq!(
            shapes,
            [
                ("nginx-h2-off", "2", "1", "2", "2"),
                ("nginx-h2-off", "2", "2", "1", "2"),
                ("nginx-h2-off", "8", "8", "1", "8"),
                ("nginx-h2-on", "2", "2", "1", "2"),
                // HAProxy runs 100 streams of a connection at once.
                ("haproxy-h2", "150", "150", "1", "100"),
            ]
        );
        let mut none = Section::new(ID, TITLE);
        section(
            &Results {
                conditions: vec![cond(Route::NginxOff, 2, 1, 1.0)],
                ..Results::default()
            },
            &mut none,
        )
        .unwrap();
        assert!(none.blocks.is_empty(), "no HTTP/2 edge, no section");
    }
}
