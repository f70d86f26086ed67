//! The buffer model's chart: observed `app_send_s` against the model's
//! prediction, one point per condition of `model.csv`, the diagonal drawn,
//! and in words where the model holds and where it does not.

use std::collections::BTreeMap;

use anyhow::Result;
use plotters::prelude::*;

use super::{Csv, FONT, INK, Key, cell, legend, plot_err, quiet_mesh, route_color, svg};
use crate::data::Results;
use crate::doc::{Block, Figure, Section, text};
use crate::fmt;
use analysis::model;
use catalogue::published;
use catalogue::{ProxyBuffers, Route};
use schema::{ModelRow, RouteName, Verdict};

/// How far from the diagonal a condition may be and still count as held.
const HOLDS_WITHIN: f64 = 0.15;

fn label(m: &ModelRow) -> String {
    let sys = m.sysctls.as_deref().unwrap_or("host sysctls");
    format!(
        "{}/{} {} slow, {sys}{}",
        m.server,
        m.route,
        m.slow_clients,
        at_mtu(m)
    )
}

/// `, MTU n`, or nothing where the MTU was not recorded.
fn at_mtu(m: &ModelRow) -> String {
    m.mtu.map(|v| format!(", MTU {v}")).unwrap_or_default()
}

/// Where the app's send buffer stopped short of the `tcp_wmem` max the
/// prediction assumes (`sndbuf_as_assumed`), from the rows.
fn sndbuf_words(rows: &[ModelRow]) -> Option<String> {
    let sampled = rows
        .iter()
        .filter(|m| m.sndbuf_as_assumed.is_some())
        .count();
    if sampled == 0 {
        return None;
    }
    let short: Vec<&ModelRow> = rows
        .iter()
        .filter(|m| m.sndbuf_as_assumed == Some(false))
        .collect();
    let mut out = format!(
        " The prediction assumes the app's send buffer grows to `tcp_wmem` max; it did in {} of {sampled} \
         condition(s) with sampled sockets.",
        sampled - short.len()
    );
    for m in short.iter().take(3) {
        out.push_str(&format!(
            " {}: it stopped at {} of {}.",
            label(m),
            fmt::or_dash(m.app_sndbuf_peak_bytes.map(|b| b as f64), fmt::bytes),
            fmt::or_dash(m.wmem_max_bytes.map(|b| b as f64), fmt::bytes),
        ));
    }
    if !short.is_empty() {
        out.push_str(
            " There `B` is overstated: the kernel grows a send buffer by the congestion window counted in \
             segments, each slot sized by the MTU, so a small MTU (the veth's 1500) stops it short.",
        );
    }
    Some(out)
}

/// Builds the section.
pub fn section(r: &Results, s: &mut Section) -> Result<()> {
    s.para(
        "The model: the app's last `send` returns once the rest of the body fits into the queues between it and \
         the client, `B` bytes, so `app_send_s = max(0, size - B) / slow_rate`, with `B = wmem_max + rcvbuf` \
         direct and `2 wmem_max + proxy_rcvbuf + hold + rcvbuf` through a proxy (`hold`: the proxy's own buffer; \
         `proxy_rcvbuf`: its receive buffer from the app, `tcp_rmem` default, which a proxy reading at its \
         client's pace does not grow). The sizes come from the sysctls of the server's namespace; `model.csv` has the same formula with the \
         measured peak queues beside it.",
    );
    let rows: Vec<ModelRow> = model::rows(r, &ProxyBuffers::EXPERIMENT)
        .into_iter()
        .filter(|m| m.predicted_app_send_s.is_some() && m.observed_app_send_s.is_some())
        .collect();
    if rows.is_empty() {
        s.note("No condition with slow clients has both a prediction and a measured `app_send_s` here.");
        return Ok(());
    }
    s.para(&words(&rows));
    if let Some(gap) = published_gap(&rows) {
        s.para(&gap);
    }
    let mut csv = Csv::new(&[
        "server",
        "route",
        "slow_clients",
        "sysctls",
        "predicted_b_bytes",
        "predicted_app_send_s",
        "observed_app_send_s",
        "explained_b_bytes",
        "explained_app_send_s",
    ]);
    for m in &rows {
        csv.row(&[
            m.server.to_string(),
            m.route.to_string(),
            m.slow_clients.to_string(),
            m.sysctls.clone().unwrap_or_default(),
            cell(m.predicted_b_bytes.map(|v| v as f64), 0),
            cell(m.predicted_app_send_s, 3),
            cell(m.observed_app_send_s, 3),
            cell(m.explained_b_bytes.map(|v| v as f64), 0),
            cell(m.explained_app_send_s, 3),
        ]);
    }
    s.push(Block::Figure(Figure {
        file: "report-model.svg".into(),
        svg: draw(&rows)?,
        alt: "observed app write time against the buffer model's prediction, one point per condition".into(),
        caption: text(
            "Unit: one condition (server, route, slow clients, sysctls); x the model's `app_send_s` from the \
             sysctls, y the median measured `app_send_s` of its runs. On the diagonal the model is exact; above \
             it the app took longer than the buffers on the path explain.",
        ),
        data_csv: csv.finish(),
    }));
    Ok(())
}

/// Where the model holds and where it does not, from the rows.
fn words(rows: &[ModelRow]) -> String {
    let holds: Vec<&ModelRow> = rows
        .iter()
        .filter(|m| {
            let (p, o) = (
                m.predicted_app_send_s.unwrap_or(0.0),
                m.observed_app_send_s.unwrap_or(0.0),
            );
            (o - p).abs() <= HOLDS_WITHIN * p.max(o) || (o - p).abs() < 0.1
        })
        .collect();
    let mut out = format!(
        "The model holds within {:.0}% (or 0.1 s) for {} of {} conditions.",
        HOLDS_WITHIN * 100.0,
        holds.len(),
        rows.len()
    );
    let mut misses: Vec<&ModelRow> = rows
        .iter()
        .filter(|m| !holds.iter().any(|h| std::ptr::eq(*h, *m)))
        .collect();
    misses.sort_by(|a, b| {
        let d = |m: &ModelRow| {
            (m.observed_app_send_s.unwrap_or(0.0) - m.predicted_app_send_s.unwrap_or(0.0)).abs()
        };
        d(b).total_cmp(&d(a))
    });
    for m in misses.iter().take(4) {
        out.push_str(&format!(
            " {}: predicted {:.2} s, measured {:.2} s{}.",
            label(m),
            m.predicted_app_send_s.unwrap_or(0.0),
            m.observed_app_send_s.unwrap_or(0.0),
            m.explained_app_send_s
                .map(|e| format!(", the measured peak queues give {e:.2} s"))
                .unwrap_or_default()
        ));
    }
    let judged: Vec<&ModelRow> = rows
        .iter()
        .filter(|m| m.predicted_blocked.is_some() && m.observed.is_some())
        .collect();
    let agree = judged
        .iter()
        .filter(|m| {
            let obs = m.observed.as_ref().and_then(|v| v.known()) == Some(Verdict::Blocked);
            m.predicted_blocked == Some(obs)
        })
        .count();
    if !judged.is_empty() {
        out.push_str(&format!(
            " Whether `/fast` is blocked: the model agrees with the observed verdict in {agree} of {} conditions.",
            judged.len()
        ));
    }
    out.push_str(&sndbuf_words(rows).unwrap_or_default());
    out
}

/// The published gap: which sysctls, if any, reproduce the original's
/// figures of a route with buffering off (NGINX's first, then pingora's),
/// and how close the other routes stay under the same sysctls. None when
/// no such condition has a published counterpart.
fn published_gap(rows: &[ModelRow]) -> Option<String> {
    let reference = |m: &ModelRow| {
        published::reference(m.server.known()?, m.route.known()?, m.slow_clients).map(|(p, _)| p)
    };
    let off = [Route::NginxOff, Route::PingoraOff]
        .into_iter()
        .find_map(|route| {
            let cands: Vec<&ModelRow> = rows
                .iter()
                .filter(|m| m.route.known() == Some(route) && m.p95_ms.is_some())
                .filter(|m| reference(m).is_some())
                .collect();
            (!cands.is_empty()).then_some(cands)
        })?;
    // Closest on a log scale: 2x over and 2x under are as far.
    let dist = |m: &ModelRow| {
        let published = reference(m).map_or(1.0, |p| p.p95);
        (m.p95_ms.unwrap_or(0.0).max(0.01) / published).ln().abs()
    };
    let best = off
        .iter()
        .copied()
        .min_by(|a, b| dist(a).total_cmp(&dist(b)))?;
    let p = reference(best)?;
    let ratio = best.p95_ms? / p.p95;
    let sys = |m: &ModelRow| {
        m.sysctls
            .clone()
            .map_or("the host's sysctls".to_string(), |s| format!("`{s}`"))
            + &at_mtu(m)
            + &m.reader
                .as_ref()
                .map(|r| format!(", reader {r}"))
                .unwrap_or_default()
    };
    let mut out = format!(
        "The published gap: the original measured {}/{} with {} slow clients at a p95 of {}{}. Of the {} \
         conditions of that route here (sysctls, MTU, reader), the closest is {}: p95 {} ({:.2}x), the app's write {}.",
        best.server,
        best.route,
        best.slow_clients,
        fmt::ms_published(p.p95),
        p.app_send_s
            .map(|a| format!(" and an app write of {}", fmt::secs(a)))
            .unwrap_or_default(),
        off.len(),
        sys(best),
        fmt::ms(best.p95_ms?),
        ratio,
        fmt::or_dash(best.observed_app_send_s, fmt::secs),
    );
    if (1.0 - HOLDS_WITHIN..=1.0 + HOLDS_WITHIN).contains(&ratio) {
        out.push_str(&format!(
            " It reproduces the published p95 within {:.0}%.",
            HOLDS_WITHIN * 100.0
        ));
    } else {
        out.push_str(&format!(
            " No setting here reproduces it within {:.0}%.",
            HOLDS_WITHIN * 100.0
        ));
    }
    if let (Some(a), Some(rate)) = (p.app_send_s, best.slow_rate_bytes_per_s) {
        // What B the published app write needs: size - B = a x rate.
        let needed = (best.body_bytes as f64 - a * rate).max(0.0);
        out.push_str(&format!(
            " The model says an app write of {} needs {} between the app and each client; this setting \
             predicts {} from its sysctls, and the measured peak queues held {}.",
            fmt::secs(a),
            fmt::bytes(needed),
            fmt::or_dash(best.predicted_b_bytes.map(|b| b as f64), fmt::bytes),
            fmt::or_dash(best.explained_b_bytes.map(|b| b as f64), fmt::bytes),
        ));
    }
    // Where the published p95 falls among the settings of that route.
    let below = off
        .iter()
        .filter(|m| m.p95_ms.is_some_and(|v| v < p.p95))
        .max_by(|a, b| a.p95_ms.unwrap_or(0.0).total_cmp(&b.p95_ms.unwrap_or(0.0)));
    let above = off
        .iter()
        .filter(|m| m.p95_ms.is_some_and(|v| v > p.p95))
        .min_by(|a, b| a.p95_ms.unwrap_or(0.0).total_cmp(&b.p95_ms.unwrap_or(0.0)));
    if let (Some(lo), Some(hi)) = (below, above) {
        out.push_str(&format!(
            " The published p95 falls between {} ({}) and {} ({}).",
            sys(hi),
            fmt::ms(hi.p95_ms?),
            sys(lo),
            fmt::ms(lo.p95_ms?),
        ));
    }
    // The same stack's other routes: under the closest setting, and where
    // their own published p95 is closest, with what this route measured
    // there. Their rows with a p95, grouped by route once (in the routes'
    // order, as `model::rows` sorts them).
    let mut others: BTreeMap<&RouteName, Vec<&ModelRow>> = BTreeMap::new();
    for m in rows.iter().filter(|m| {
        m.server == best.server
            && m.slow_clients == best.slow_clients
            && m.route != best.route
            && m.p95_ms.is_some()
    }) {
        others.entry(&m.route).or_default().push(m);
    }
    for (route, of_route) in others {
        let Some(pr) = of_route.iter().copied().find_map(reference) else {
            continue;
        };
        if let Some(v) = of_route
            .iter()
            .find(|m| m.dims() == best.dims())
            .and_then(|m| m.p95_ms)
        {
            out.push_str(&format!(
                " Under the same sysctls {route} measured {} against the published {}.",
                fmt::ms(v),
                fmt::ms_published(pr.p95)
            ));
        }
        let own = of_route
            .iter()
            .copied()
            .min_by(|a, b| dist(a).total_cmp(&dist(b)));
        if let Some(own) = own.filter(|own| own.dims() != best.dims()) {
            let there = off
                .iter()
                .find(|m| m.dims() == own.dims())
                .and_then(|m| m.p95_ms);
            out.push_str(&format!(
                " The published {route} p95 is closest at {}: {}{}.",
                sys(own),
                fmt::ms(own.p95_ms?),
                there
                    .map(|v| format!(", where {} measured {}", best.route, fmt::ms(v)))
                    .unwrap_or_default(),
            ));
        }
    }
    Some(out)
}

fn draw(rows: &[ModelRow]) -> Result<String> {
    let top = rows
        .iter()
        .flat_map(|m| [m.predicted_app_send_s, m.observed_app_send_s])
        .flatten()
        .fold(1.0f64, f64::max)
        * 1.1;
    svg(640, 560, |root| {
        let (head, body) = root.split_vertically(40);
        legend(
            &head,
            12,
            20,
            &[("observed = predicted".to_string(), INK, Key::Dash)],
        )?;
        let mut chart = ChartBuilder::on(&body)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..top, 0.0..top)
            .map_err(plot_err)?;
        quiet_mesh(&mut chart.configure_mesh())
            .x_desc("predicted app_send_s (s), from the sysctls")
            .y_desc("observed app_send_s (s), median of runs")
            .axis_desc_style((FONT, 13))
            .max_light_lines(0)
            .draw()
            .map_err(plot_err)?;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, 0.0), (top, top)],
                8,
                5,
                INK.stroke_width(1),
            ))
            .map_err(plot_err)?;
        chart
            .draw_series(rows.iter().filter_map(|m| {
                let p = (m.predicted_app_send_s?, m.observed_app_send_s?);
                Some(Circle::new(p, 5, route_color(&m.route).filled()))
            }))
            .map_err(plot_err)?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use catalogue::Server;
    use schema::Named;

    fn row(
        route: Route,
        sysctls: Option<&str>,
        p95: f64,
        predicted: f64,
        observed: f64,
    ) -> ModelRow {
        ModelRow {
            server: Named::Known(Server::GunicornSync2),
            route: Named::Known(route),
            slow_clients: 2,
            sysctls: sysctls.map(String::from),
            body_bytes: 16 << 20,
            slow_rate_bytes_per_s: Some((2 << 20) as f64),
            predicted_b_bytes: Some(4 << 20),
            explained_b_bytes: Some(900 << 10),
            predicted_app_send_s: Some(predicted),
            observed_app_send_s: Some(observed),
            p95_ms: Some(p95),
            ..ModelRow::default()
        }
    }

    #[test]
    fn the_words_say_where_the_model_holds_from_the_rows() {
        let rows = [
            row(Route::Direct, None, 5_950.0, 5.99, 6.59),
            row(
                Route::Direct,
                Some("net.ipv4.tcp_wmem=4096 16384 16777216"),
                6_900.0,
                0.0,
                7.61,
            ),
        ];
        let w = words(&rows);
        assert!(
            w.starts_with("The model holds within 15% (or 0.1 s) for 1 of 2 conditions."),
            "{w}"
        );
        assert!(w.contains("predicted 0.00 s, measured 7.61 s"), "{w}");
        assert!(!w.contains("send buffer"), "nothing sampled: {w}");
        // A send buffer the MTU stopped short of tcp_wmem max is named.
        let at = |mtu, peak: u64, wmem: u64| ModelRow {
            mtu: Some(mtu),
            wmem_max_bytes: Some(wmem),
            app_sndbuf_peak_bytes: Some(peak),
            sndbuf_as_assumed: Some(peak >= wmem),
            ..rows[1].clone()
        };
        let w = words(&[at(1500, 1_100_000, 16 << 20), at(65535, 16 << 20, 16 << 20)]);
        assert!(
            w.contains("it did in 1 of 2 condition(s) with sampled sockets."),
            "{w}"
        );
        assert!(
            w.contains("16777216, MTU 1500: it stopped at 1.0 MiB of 16 MiB."),
            "{w}"
        );
        assert!(w.contains("There `B` is overstated"), "{w}");
    }

    #[test]
    fn the_published_gap_names_the_closest_setting_and_the_other_routes() {
        let m16 = "net.ipv4.tcp_wmem=4096 16384 16777216";
        let mut rows = vec![
            row(
                Route::NginxOff,
                Some("net.ipv4.tcp_wmem=4096 16384 4194304"),
                4_973.0,
                0.0,
                5.67,
            ),
            row(Route::NginxOff, Some(m16), 3_597.0, 0.0, 4.38),
            row(Route::Direct, Some(m16), 6_950.0, 0.0, 7.67),
        ];
        let g = published_gap(&rows).expect("a gap");
        assert!(g.contains("Of the 2 conditions of that route here (sysctls, MTU, reader), the closest is `net.ipv4.tcp_wmem=4096 16384 16777216`: p95 3,597 ms (3.36x)"), "{g}");
        assert!(
            g.contains("No setting here reproduces it within 15%."),
            "{g}"
        );
        // 16 MiB - 1.970 s x 2 MiB/s.
        assert!(
            g.contains("needs 12.1 MiB between the app and each client"),
            "{g}"
        );
        assert!(
            g.contains(
                "Under the same sysctls direct measured 6,950 ms against the published 5,945.11 ms."
            ),
            "{g}"
        );
        rows.push(row(Route::NginxOff, Some("x"), 1_100.0, 0.0, 2.0));
        let g = published_gap(&rows).expect("a gap");
        assert!(
            g.contains("It reproduces the published p95 within 15%."),
            "{g}"
        );
        assert!(published_gap(&rows[2..3]).is_none());
    }

    #[test]
    fn the_published_gap_brackets_the_figure_and_finds_each_route_its_own_setting() {
        let w = |m: u32| format!("net.ipv4.tcp_wmem=4096 16384 {}", m << 20);
        let at = |route, m: u32, reader: &str, p95: f64| ModelRow {
            reader: Some(reader.into()),
            ..row(route, Some(&w(m)), p95, 0.0, 1.0)
        };
        let rows = [
            at(Route::NginxOff, 4, "streamreader", 3_800.0),
            at(Route::NginxOff, 8, "streamreader", 1_900.0),
            at(Route::NginxOff, 16, "streamreader", 3.0),
            at(Route::Direct, 4, "streamreader", 6_005.0),
            at(Route::Direct, 8, "streamreader", 4_500.0),
            // Another reader under the same sysctls is another condition.
            at(Route::Direct, 8, "strict", 2_600.0),
            at(Route::Direct, 16, "streamreader", 1_548.0),
        ];
        let g = published_gap(&rows).expect("a gap");
        assert!(
            g.contains("the closest is `net.ipv4.tcp_wmem=4096 16384 8388608`, reader streamreader: p95 1,900 ms"),
            "{g}"
        );
        assert!(
            g.contains("The published p95 falls between `net.ipv4.tcp_wmem=4096 16384 8388608`, reader streamreader (1,900 ms) and `net.ipv4.tcp_wmem=4096 16384 16777216`, reader streamreader ("),
            "{g}"
        );
        assert!(
            g.contains(
                "Under the same sysctls direct measured 4,500 ms against the published 5,945.11 ms."
            ),
            "{g}"
        );
        assert!(
            !g.contains("2,600"),
            "the strict reader's row is not the same condition: {g}"
        );
        assert!(
            g.contains("The published direct p95 is closest at `net.ipv4.tcp_wmem=4096 16384 4194304`, reader streamreader: 6,005 ms, where nginx-off measured 3,800 ms."),
            "{g}"
        );
    }
}
