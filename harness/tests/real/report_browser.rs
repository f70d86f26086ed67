//! The scrubbable view of `report.html` in a real headless Chromium, on
//! copies of the committed quick fixture and of the committed example run
//! (`docs/example-scrub/`). A probe drags the slider (one
//! `input` event per step, as a drag sends them) to two instants and reads
//! what is drawn there from the panels' data attributes and the marks'
//! positions; the test compares that with `requests.csv` and
//! `app-sends.csv`, read here on their own. Without its script the view
//! stays hidden and the static charts remain.

use crate::support;

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::chromium;

/// The instants the probe drags to, ms: before the first `/fast` request,
/// and while the direct run's workers are still writing (its app takes
/// ~3.3 s in the quick fixture, ~6.6 s in the example; behind NGINX with
/// buffering on ~0.1 s), between two `/fast` schedule points.
const EARLY_MS: f64 = 100.0;
const LATE_MS: f64 = 2400.0;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/quick")
}

/// The committed example run of the view (`docs/example-scrub/`).
fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/example-scrub")
}

/// The report of a copy of `src`, in a temp dir.
fn report_of(src: &Path) -> (tempfile::TempDir, String) {
    let tmp = tempfile::tempdir().unwrap();
    for entry in fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), tmp.path().join(entry.file_name())).unwrap();
    }
    report::write(tmp.path()).expect("the report of the copy");
    let html = fs::read_to_string(tmp.path().join("report.html")).unwrap();
    (tmp, html)
}

fn report() -> (tempfile::TempDir, String) {
    report_of(&fixture())
}

/// Drags the slider to each instant and records what each panel draws.
const PROBE_TAIL: &str = r#"<script>
(function () {
  var data = JSON.parse(document.getElementById('scrub-data').textContent);
  var slider = document.getElementById('scrub-time');
  var view = document.getElementById('scrub-view');
  var all = function (root, sel) { return Array.prototype.slice.call(root.querySelectorAll(sel)); };
  function drag(k) {
    var from = parseInt(slider.value, 10);
    var step = k >= from ? 1 : -1;
    for (var i = from; i !== k; i += step) {
      slider.value = String(i + step);
      slider.dispatchEvent(new Event('input', { bubbles: true }));
    }
  }
  function seen() {
    return all(document, '.scrub-panel').map(function (p) {
      var marks = all(p, '.scrub-mark').filter(function (m) { return !m.hidden; }).map(function (m) {
        var r = m.getBoundingClientRect();
        return { state: m.dataset.state, x: r.left + r.width / 2, y: r.top + r.height / 2 };
      });
      var segs = all(p, '.scrub-bar:not(.scrub-small) .scrub-seg').map(function (s) {
        return { layer: Number(s.dataset.layer), bytes: Number(s.dataset.bytes), width: s.getBoundingClientRect().width };
      });
      return {
        route: p.dataset.route, run: p.dataset.run, t_ms: Number(p.dataset.tMs), sampled: p.dataset.sampled,
        waiting: Number(p.dataset.waiting), answered: Number(p.dataset.answered), busy: Number(p.dataset.busy),
        lanes: all(p, '.scrub-lane').map(function (l) { return l.dataset.busy; }),
        bar_width: p.querySelector('.scrub-bar').getBoundingClientRect().width,
        marks: marks, segs: segs
      };
    });
  }
  var out = {
    errors: window.__errors, ready: view.dataset.ready || null, hidden: view.hidden,
    layers: data.layers.map(function (l) { return l.label; }), instants: []
  };
  [EARLY, LATE].forEach(function (ms) {
    drag(Math.round(ms / data.dt_ms));
    out.instants.push({ now: document.querySelector('.scrub-now').textContent, panels: seen() });
  });
  var pre = document.createElement('pre');
  pre.textContent = ['PROBE', 'START'].join('_') + JSON.stringify(out) + ['PROBE', 'END'].join('_');
  document.body.appendChild(pre);
})();
</script>"#;

/// A CSV file as rows of named cells.
fn rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    let h = r.headers().unwrap().clone();
    r.records()
        .map(|x| {
            let x = x.unwrap();
            h.iter()
                .map(String::from)
                .zip(x.iter().map(String::from))
                .collect()
        })
        .collect()
}

fn num(row: &std::collections::HashMap<String, String>, col: &str) -> Option<f64> {
    row.get(col).and_then(|v| v.parse().ok())
}

/// `/fast` requests of `run` waiting and answered at `t` s: scheduled by
/// then, and answered once their whole answer arrived.
fn fast_at(dir: &Path, run: &str, t: f64) -> (usize, usize) {
    let mut waiting = 0;
    let mut answered = 0;
    for q in rows(&dir.join("requests.csv")) {
        if q["run_id"] != run || num(&q, "scheduled_s").unwrap() > t + 1e-9 {
            continue;
        }
        let end = num(&q, "latency_ms").map(|l| num(&q, "started_s").unwrap() + l / 1000.0);
        match end {
            Some(e) if e <= t + 1e-9 => answered += 1,
            _ => waiting += 1,
        }
    }
    (waiting, answered)
}

/// The app's workers of `run` writing a `/large` body at `t` s.
fn busy_at(dir: &Path, run: &str, t: f64) -> usize {
    rows(&dir.join("app-sends.csv"))
        .into_iter()
        .filter(|a| a["run_id"] == run)
        .filter(|a| {
            let start = num(a, "t_s").unwrap();
            start <= t && t < start + num(a, "app_send_s").unwrap()
        })
        .count()
}

fn panel<'a>(instant: &'a Value, route: &str) -> &'a Value {
    instant["panels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["route"] == route)
        .unwrap_or_else(|| panic!("no {route} panel in {instant}"))
}

fn layer(probe: &Value, label: &str) -> i64 {
    probe["layers"]
        .as_array()
        .unwrap()
        .iter()
        .position(|l| l.as_str().unwrap().starts_with(label))
        .unwrap_or_else(|| panic!("no layer {label}")) as i64
}

fn seg(p: &Value, layer: i64) -> &Value {
    p["segs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["layer"] == layer)
        .unwrap()
}

#[test]
fn dragging_the_slider_draws_the_staircase_behind_direct_and_none_behind_buffering() {
    // gunicorn-sync2 at 2 slow connections, the fixture's runs per route.
    drag_and_check(
        &fixture(),
        [("direct", "002"), ("nginx-off", "006"), ("nginx-on", "004")],
    );
}

#[test]
fn the_committed_example_run_scrubs_the_same_way() {
    drag_and_check(
        &example(),
        [("direct", "003"), ("nginx-off", "006"), ("nginx-on", "009")],
    );
}

/// Writes the report of a copy of `src`, drags its slider in Chromium to
/// [`EARLY_MS`] and [`LATE_MS`], and checks what is drawn against the files;
/// `runs` are the panels' routes and runs, in order.
fn drag_and_check(src: &Path, runs: [(&str, &str); 3]) {
    chromium::require();
    let (tmp, html) = report_of(src);
    let probed = html
        .replacen("<head>", &format!("<head>\n{}", chromium::ERRORS_HEAD), 1)
        .replacen(
            "</body>",
            &format!(
                "{}\n</body>",
                PROBE_TAIL
                    .replace("EARLY", &EARLY_MS.to_string())
                    .replace("LATE", &LATE_MS.to_string())
            ),
            1,
        );
    let page = tmp.path().join("probe.html");
    fs::write(&page, probed).unwrap();
    let dump = chromium::dump_dom(&page);
    let probe = chromium::probe(&dump);
    chromium::assert_no_console_errors(&dump.log);
    assert_eq!(probe["errors"], serde_json::json!([]), "errors in the page");
    assert_eq!(probe["ready"], "true", "the script built the view");
    assert_eq!(probe["hidden"], false, "the view is shown");

    let dir = tmp.path();
    let [early, late] = [&probe["instants"][0], &probe["instants"][1]];
    let routes: Vec<&str> = early["panels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["route"].as_str().unwrap())
        .collect();
    // One run per route of the first server.
    assert_eq!(routes, runs.map(|(route, _)| route));
    for (route, run) in runs {
        assert_eq!(panel(early, route)["run"], run);
    }
    assert_eq!(early["now"], "t = 0.10 s");
    assert_eq!(late["now"], "t = 2.40 s");

    // Everything drawn at both instants is what the files say.
    for (instant, ms) in [(early, EARLY_MS), (late, LATE_MS)] {
        let t = ms / 1000.0;
        for p in instant["panels"].as_array().unwrap() {
            let run = p["run"].as_str().unwrap();
            let what = format!("{} at {t} s", p["route"]);
            assert_eq!(p["t_ms"], ms, "{what}");
            let (waiting, answered) = fast_at(dir, run, t);
            assert_eq!(p["waiting"], waiting, "{what}: /fast waiting");
            assert_eq!(p["answered"], answered, "{what}: /fast answered");
            let marks = p["marks"].as_array().unwrap();
            let drawn = |state: &str| marks.iter().filter(|m| m["state"] == state).count();
            assert_eq!(drawn("waiting"), waiting, "{what}: waiting marks");
            assert_eq!(drawn("answered"), answered, "{what}: answered marks");
            assert_eq!(p["busy"], busy_at(dir, run, t), "{what}: busy workers");
            let lanes = p["lanes"].as_array().unwrap();
            assert_eq!(lanes.len(), 2, "{what}: gunicorn-sync2 has 2 workers");
            let busy_lanes = lanes.iter().filter(|l| *l == "true").count();
            assert_eq!(p["busy"], busy_lanes, "{what}");
        }
    }

    // Early: no /fast request sent yet, the direct run's workers writing.
    for p in early["panels"].as_array().unwrap() {
        assert_eq!(p["waiting"], 0, "nothing waits at 0.1 s: {}", p["route"]);
    }
    assert_eq!(panel(early, "direct")["busy"], 2);

    // Late: the staircase behind direct, each earlier request higher up.
    let direct = panel(late, "direct");
    assert!(direct["waiting"].as_u64().unwrap() >= 3, "{direct}");
    assert_eq!(direct["busy"], 2);
    let mut stair: Vec<(f64, f64)> = direct["marks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["state"] == "waiting")
        .map(|m| (m["x"].as_f64().unwrap(), m["y"].as_f64().unwrap()))
        .collect();
    stair.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(
        stair.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1),
        "waiting marks step down from left to right: {stair:?}"
    );
    // And none behind NGINX with buffering on, whose workers are free.
    let on = panel(late, "nginx-on");
    assert_eq!(on["waiting"], 0, "{on}");
    assert_eq!(on["busy"], 0);

    // Where the bytes are: direct, the app still has bytes to write; with
    // buffering on, none; each segment as wide as its share.
    let unwritten = layer(&probe, "not yet written");
    assert_eq!(direct["sampled"], "true");
    let d = seg(direct, unwritten);
    assert!(d["bytes"].as_f64().unwrap() > 0.0 && d["width"].as_f64().unwrap() > 1.0);
    assert_eq!(seg(on, unwritten)["bytes"], 0.0);
    assert_eq!(seg(on, unwritten)["width"], 0.0);
    for p in [direct, on] {
        let segs = p["segs"].as_array().unwrap();
        let total: f64 = segs.iter().map(|s| s["bytes"].as_f64().unwrap()).sum();
        assert_eq!(total, 2.0 * 16_777_216.0, "every byte is somewhere");
        // The bar's border is 1 px each side.
        let inner = p["bar_width"].as_f64().unwrap() - 2.0;
        for s in segs {
            let want = s["bytes"].as_f64().unwrap() / total * inner;
            assert!(
                (s["width"].as_f64().unwrap() - want).abs() < 1.0,
                "segment {s} of {inner} px"
            );
        }
    }
}

/// Presses Play, switches to 0.25x after 1 s and pauses after 2 s more
/// (of the browser's virtual time), recording the frame each time.
const PLAY_TAIL: &str = r#"<script>
(function () {
  var slider = document.getElementById('scrub-time');
  var play = document.querySelector('.scrub-play');
  var out = { errors: window.__errors, frames: [] };
  var note = function () { out.frames.push([Number(slider.value), play.getAttribute('aria-pressed')]); };
  play.click();
  note();
  setTimeout(function () {
    note();
    document.querySelector('input[name="scrub-speed"][value="0.25"]').click();
    setTimeout(function () {
      note();
      play.click();
      note();
      var pre = document.createElement('pre');
      pre.textContent = ['PROBE', 'START'].join('_') + JSON.stringify(out) + ['PROBE', 'END'].join('_');
      document.body.appendChild(pre);
    }, 2000);
  }, 1000);
})();
</script>"#;

#[test]
fn play_advances_at_1x_and_at_a_quarter_of_that() {
    chromium::require();
    let (tmp, html) = report();
    let page = tmp.path().join("play.html");
    let probed = html
        .replacen("<head>", &format!("<head>\n{}", chromium::ERRORS_HEAD), 1)
        .replacen("</body>", &format!("{PLAY_TAIL}\n</body>"), 1);
    fs::write(&page, probed).unwrap();
    // Virtual time: the 3 s pass in the browser's clock, not the machine's,
    // so a busy machine does not change the frames reached.
    let dump = chromium::dump_dom_after(&page, 10_000);
    let probe = chromium::probe(&dump);
    assert_eq!(probe["errors"], serde_json::json!([]), "errors in the page");
    let frames: Vec<(i64, String)> = probe["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f[0].as_i64().unwrap(), f[1].as_str().unwrap().to_string()))
        .collect();
    let pressed: Vec<&str> = frames.iter().map(|f| f.1.as_str()).collect();
    assert_eq!(pressed, ["true", "true", "true", "false"], "{frames:?}");
    // 100 ms frames: 1 s at 1x is 10 frames, 2 s at 0.25x 5 more (a timer
    // tick late at most), and pausing keeps the frame.
    let at = |i: usize| frames[i].0;
    assert_eq!(at(0), 0);
    assert!((9..=11).contains(&at(1)), "after 1 s at 1x: {frames:?}");
    assert!(
        (4..=6).contains(&(at(2) - at(1))),
        "2 s at 0.25x: {frames:?}"
    );
    assert_eq!(at(3), at(2), "pausing keeps the instant");
}

#[test]
fn without_its_script_the_view_stays_hidden_and_the_static_charts_remain() {
    let (tmp, html) = report();
    // The page as written: the view an empty, hidden container, and a note
    // for a browser with JavaScript off.
    assert!(html.contains("<div class=\"scrub\" id=\"scrub-view\" hidden></div>"));
    assert!(html.contains("<noscript><p class=\"note\">The scrubbable view needs JavaScript"));
    chromium::require();
    // Headless Chromium dumps no DOM with JavaScript off, so the page's
    // own scripts are blocked by a policy instead.
    let blocked = html.replacen(
        "<head>",
        "<head>\n<meta http-equiv=\"Content-Security-Policy\" content=\"script-src 'none'\">",
        1,
    );
    let page = tmp.path().join("blocked.html");
    fs::write(&page, blocked).unwrap();
    let dump = chromium::dump_dom(&page);
    assert!(
        dump.log
            .contains("violates the following Content Security Policy"),
        "the script was blocked, not absent: {}",
        dump.log
    );
    let dom = &dump.dom;
    assert!(
        dom.contains("<div class=\"scrub\" id=\"scrub-view\" hidden=\"\"></div>"),
        "the view stays hidden and empty"
    );
    assert!(!dom.contains("class=\"scrub-panel\""), "no panel was built");
    // The static charts, among them 3 and 5 of the same runs, remain.
    for id in ["report-timeline", "report-bytes"] {
        let at = dom
            .find(&format!("<figure id=\"{id}\""))
            .unwrap_or_else(|| panic!("no {id}"));
        assert!(dom[at..].contains("<svg"), "{id} has its chart");
    }
    assert_eq!(dom.matches("<svg").count(), 6, "every static chart");
}

/// The charts of the quick fixture's report (`report.rs`'s `CHARTS`).
const CHARTS: usize = 6;

const RENDER_PROBE: &str = r#"<script>
(function () {
  var boxes = Array.prototype.map.call(document.querySelectorAll('.chart svg'), function (s) {
    var r = s.getBoundingClientRect(); return Math.round(r.width) + 'x' + Math.round(r.height);
  });
  var out = document.createElement('pre');
  out.id = 'probe';
  // The markers are built at run time so that the script's own text in
  // the dumped DOM never matches them.
  out.textContent = ['PROBE', 'START'].join('_') + JSON.stringify({ errors: window.__errors, boxes: boxes }) + ['PROBE', 'END'].join('_');
  document.body.appendChild(out);
})();
</script>"#;

#[test]
fn chromium_renders_the_page_without_errors() {
    chromium::require();
    let (tmp, html) = report();
    let probed = html
        .replacen("<head>", &format!("<head>\n{}", chromium::ERRORS_HEAD), 1)
        .replacen("</body>", &format!("{RENDER_PROBE}\n</body>"), 1);
    let page = tmp.path().join("probe.html");
    fs::write(&page, probed).unwrap();
    let dump = chromium::dump_dom(&page);
    let probe = chromium::probe(&dump);
    assert_eq!(probe["errors"], serde_json::json!([]), "errors in the page");
    let boxes: Vec<String> = probe["boxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap().to_string())
        .collect();
    assert_eq!(boxes.len(), CHARTS, "every chart is laid out: {boxes:?}");
    for b in &boxes {
        let (w, h) = b.split_once('x').unwrap();
        let (w, h): (f64, f64) = (w.parse().unwrap(), h.parse().unwrap());
        assert!(w > 100.0 && h > 100.0, "a chart of {b} px");
    }
    // Console errors also reach the log with --enable-logging.
    chromium::assert_no_console_errors(&dump.log);
}
