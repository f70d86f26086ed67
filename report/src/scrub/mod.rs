//! The report you can scrub: a time slider, play/pause at 1x and 0.25x,
//! over one run per route side by side. At each instant every panel shows
//! where the slow responses' bytes are, each worker busy or free, and each
//! `/fast` request from its schedule to its answer, so the staircase forms
//! behind blocked workers and does not behind a buffering proxy.
//!
//! # Layout
//! - this file: the section (its words, the choice of runs) and the HTML:
//!   an empty container, the data as `<script type="application/json">`,
//!   the script and its style sheet, embedded from `assets/`.
//! - [`data`]: the runs cut into 100 ms frames ([`data::Timeline`]).
//! - [`workers`]: the app's workers as lanes, from the send log.
//! - `assets/scrub.js`: the view, vanilla JavaScript, nothing fetched; it
//!   builds the panels from the data and unhides the container, so a page
//!   read without JavaScript shows only the words and the static charts.
//! - `assets/scrub.css`: its style.

pub mod data;
pub mod workers;

use anyhow::{Context, Result};

use super::data::Results;
use super::doc::{Block, Interactive, Section, text};

pub const ID: &str = "scrub";
pub const TITLE: &str = "Scrub through one run per route";

const JS: &str = include_str!("assets/scrub.js");
const CSS: &str = include_str!("assets/scrub.css");

/// Builds the section: the words for every reader, the view for readers
/// with JavaScript.
pub fn section(r: &Results, s: &mut Section) -> Result<()> {
    let Some(t) = data::timeline(r) else {
        s.note("No completed run with slow connections, so there is nothing to scrub through.");
        return Ok(());
    };
    if t.panels
        .iter()
        .all(|p| p.fast.is_empty() && p.bytes.iter().all(Option::is_none))
    {
        s.note(
            "The runs' per-request and per-sample files (`requests.csv`, `socket-samples.csv`, \
             `slow-progress.csv`, ...) are not in this directory, so there is nothing to scrub through.",
        );
        return Ok(());
    }
    let routes: Vec<String> = t
        .panels
        .iter()
        .map(|p| format!("`{}` (run {})", p.route, p.run_id))
        .collect();
    s.para(&format!(
        "Drag the slider, or press Play (at 1x or 0.25x of real time), to watch {} with {} slow \
         connections, side by side: {}. These are the runs of charts 3 and 5 for the first server of this \
         directory: per route the run with its condition's median p95 (ties by run id), with 2 slow \
         connections where the directory has them, else the most.",
        t.server,
        t.slow,
        routes.join(", ")
    ));
    s.para(
        "Each panel shows, at the chosen instant: **where the bytes of the slow responses are**, summed over \
         them (chart 5's layers, from read by the clients on the left to not yet written by the app on the \
         right), and below, each response as its reader saw it (read, in its receive queue, not at the \
         reader yet); **the app's workers**, busy (with the client each writes to) or free; and **every \
         `/fast` request** from the moment it was scheduled: it rises while it waits and stays where its \
         answer arrived. Behind blocked workers the waiting requests form a staircase; behind a buffering \
         proxy they are answered as they come.",
    );
    s.para(&format!(
        "Nothing is interpolated: a frame every {} ms takes the latest sample at or before its instant \
         (sockets ~200 ms, client progress and pingora's gauge 100 ms); where no sample covers an \
         instant the bar says so. {}",
        t.dt_ms,
        workers::WORKERS_DERIVED
    ));
    let json = serde_json::to_string(&t).context("writing the scrubbable view's data")?;
    // The data sits inside a <script> element: no `<` may end it early,
    // and in JSON a `<` can only be inside a string, where \u003c is the
    // same character.
    let json = json.replace('<', "\\u003c");
    let html = format!(
        "<div class=\"scrub\" id=\"scrub-view\" hidden></div>\n\
         <noscript><p class=\"note\">The scrubbable view needs JavaScript, which is off: charts 3 and 5 \
         above show the same runs.</p></noscript>\n\
         <script type=\"application/json\" id=\"scrub-data\">{json}</script>\n\
         <script>\n{JS}</script>\n"
    );
    s.push(Block::Interactive(Interactive {
        html,
        css: CSS.to_string(),
        instead: text(
            "`report.html` has a scrubbable view here (it needs JavaScript); charts 3 and 5 show the same runs.",
        ),
    }));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Block;
    use catalogue::{Route, Server};
    use schema::{RunRow, RunStatus};

    #[test]
    fn summaries_alone_get_a_note_not_an_empty_view() {
        let r = Results {
            runs: vec![RunRow {
                run_id: "1".into(),
                server: Server::RustSync2.into(),
                route: Route::Direct.into(),
                slow_clients: 2,
                repetition: 1,
                status: RunStatus::Ok.into(),
                p95_ms: Some(1.0),
                ..RunRow::default()
            }],
            ..Results::default()
        };
        let mut s = Section::new(ID, TITLE);
        section(&r, &mut s).unwrap();
        assert!(matches!(s.blocks.as_slice(), [Block::Note(_)]), "{s:?}");
    }
}
