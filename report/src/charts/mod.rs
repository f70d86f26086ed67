//! The charts, drawn with plotters' SVG backend into strings, and what they
//! share: colours per route, the panel grid, legends and text styles.
//!
//! # Layout
//! - [`p95`]: chart 1, p95 of `/fast` by route and slow connections.
//! - [`write_receive`]: chart 2, app write time against client receive time.
//! - [`timeline`]: chart 3, every `/fast` request of one run over time.
//! - [`temp_files`]: chart 4, the proxy's temp files over time.
//! - [`bytes`]: chart 5, where the `/large` bytes are over time.
//! - [`model`]: the buffer model, observed against predicted `app_send_s`.
//! - [`verdicts`]: charts 7 and 8, which servers block (the `servers`
//!   preset) and which proxies protect a blocking app (the `proxies` preset).
//!
//! plotters draws text as SVG `<text>` with a generic font family, so the
//! SVGs need no font files; the browser picks its own sans-serif.

pub mod bytes;
pub mod model;
pub mod p95;
pub mod temp_files;
pub mod timeline;
pub mod verdicts;
pub mod write_receive;

use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use catalogue::Route;
use schema::RouteName;

/// The drawing area of a whole chart.
pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

pub const FONT: &str = "sans-serif";
/// Near-black for text and marks.
pub const INK: RGBColor = RGBColor(33, 33, 33);
/// The colour of published reference marks.
pub const PUBLISHED: RGBColor = RGBColor(0, 0, 0);
pub const GRID: RGBColor = RGBColor(225, 225, 225);

/// The grid every chart shares: 12 px labels, faint light lines, pale bold
/// lines. Callers add their axis texts and which light lines to drop.
pub fn quiet_mesh<'m, 'a, 'b, X: Ranged, Y: Ranged, DB: DrawingBackend>(
    mesh: &'m mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB>,
) -> &'m mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB> {
    mesh.label_style((FONT, 12))
        .light_line_style(RGBColor(245, 245, 245))
        .bold_line_style(RGBColor(220, 220, 220))
}

/// The colour of a route, the same in every chart: direct red, buffering
/// off orange, buffering on blue (pingora a shade apart from NGINX);
/// request buffering off magenta, on green.
pub fn route_color(route: &RouteName) -> RGBColor {
    route.known().map_or(RGBColor(120, 120, 120), color_of)
}

/// [`route_color`] of a known route.
fn color_of(route: Route) -> RGBColor {
    match route {
        Route::Direct => RGBColor(204, 51, 51),
        Route::NginxOff => RGBColor(230, 130, 20),
        Route::PingoraOff => RGBColor(180, 120, 0),
        Route::NginxOn => RGBColor(40, 110, 200),
        Route::PingoraOn => RGBColor(20, 150, 150),
        Route::NginxReqbufOff => RGBColor(200, 90, 160),
        Route::PingoraReqbufOff => RGBColor(150, 70, 130),
        Route::NginxReqbufOn => RGBColor(60, 160, 60),
        Route::PingoraReqbufOn => RGBColor(30, 110, 40),
        // Caddy: its default (streaming) brown, buffering purple-blue,
        // request buffering olive.
        Route::Caddy => RGBColor(140, 90, 50),
        Route::CaddyBuf => RGBColor(90, 80, 190),
        Route::CaddyReqbuf => RGBColor(120, 140, 30),
        // HAProxy: its default teal, waiting for request bodies slate.
        Route::Haproxy => RGBColor(20, 150, 160),
        Route::HaproxyReqbuf => RGBColor(70, 100, 130),
        // Varnish: magenta, caching request bodies plum.
        Route::Varnish => RGBColor(200, 60, 140),
        Route::VarnishReqbuf => RGBColor(130, 50, 100),
        // Apache: its default dark red, its raised flush threshold rose,
        // spooling request bodies dark brown;
        // H2O (buffering both ways) sky blue.
        Route::Apache => RGBColor(150, 30, 40),
        Route::ApacheBuf => RGBColor(230, 120, 140),
        Route::ApacheReqbuf => RGBColor(120, 60, 20),
        Route::H2o => RGBColor(90, 180, 230),
        // Squid: its default olive-grey, reading ahead a whole response
        // gold.
        Route::Squid => RGBColor(110, 110, 70),
        Route::SquidBuf => RGBColor(210, 170, 30),
        // Traffic Server: its default slate blue, reading ahead a whole
        // response cyan, buffering request bodies dark green.
        Route::Ats => RGBColor(80, 90, 160),
        Route::AtsBuf => RGBColor(0, 190, 190),
        Route::AtsReqbuf => RGBColor(40, 120, 90),
        // NGINX and pingora at an HTTP/2 edge: darker shades of their
        // HTTP/1 twins.
        Route::NginxH2Off => RGBColor(170, 80, 0),
        Route::NginxH2On => RGBColor(20, 60, 140),
        Route::PingoraH2Off => RGBColor(130, 90, 0),
        Route::PingoraH2On => RGBColor(10, 100, 100),
        // The packaged proxies at an HTTP/2 edge: two thirds of their
        // HTTP/1 twins' colours.
        r => {
            let twin = r.http1_twin();
            if twin == r {
                return RGBColor(120, 120, 120);
            }
            let RGBColor(r, g, b) = color_of(twin);
            let third = |c: u8| (u16::from(c) * 2 / 3) as u8;
            RGBColor(third(r), third(g), third(b))
        }
    }
}

/// Draws into a `w` x `h` SVG and returns its text.
pub fn svg(w: u32, h: u32, draw: impl FnOnce(&Area<'_>) -> Result<()>) -> Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        draw(&root)?;
        root.present().map_err(plot_err)?;
    }
    Ok(out)
}

/// plotters' errors borrow nothing but are generic over the backend; turn
/// them into anyhow errors with their message.
pub fn plot_err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing a chart: {e:?}")
}

/// Rows and columns for `n` panels, at most `max_cols` wide.
pub fn grid(n: usize, max_cols: usize) -> (usize, usize) {
    let cols = n.clamp(1, max_cols);
    (n.div_ceil(cols).max(1), cols)
}

/// Splits `area` into `n` panels of a grid, row by row.
pub fn panels<'a>(area: &Area<'a>, n: usize, max_cols: usize) -> Vec<Area<'a>> {
    let (rows, cols) = grid(n, max_cols);
    area.split_evenly((rows, cols))
        .into_iter()
        .take(n)
        .collect()
}

/// The SVG height for `n` panels of `panel_h` each at most `max_cols` wide,
/// plus a strip for the legend and title.
pub fn height(n: usize, max_cols: usize, panel_h: u32, strip: u32) -> u32 {
    grid(n, max_cols).0 as u32 * panel_h + strip
}

/// How a legend entry is drawn.
#[derive(Debug, Clone, Copy)]
pub enum Key {
    Dot,
    Bar,
    Line,
    Dash,
    /// A vertical line (a min–max bar).
    VLine,
    /// A thick short horizontal bar (a reference mark).
    Mark,
    Cross,
    /// A filled band (stacked areas, shaded spans).
    Band,
}

/// Draws a one-line legend starting at `(x, y)` and returns the x after it.
pub fn legend(area: &Area<'_>, x: i32, y: i32, items: &[(String, RGBColor, Key)]) -> Result<i32> {
    let mut x = x;
    let style = TextStyle::from((FONT, 13).into_font())
        .color(&INK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (label, color, key) in items {
        match key {
            Key::Dot => area.draw(&Circle::new((x + 6, y), 4, color.filled())),
            Key::Bar | Key::Band => area.draw(&Rectangle::new(
                [(x, y - 5), (x + 12, y + 5)],
                color.filled(),
            )),
            Key::Line => area.draw(&PathElement::new(
                vec![(x, y), (x + 14, y)],
                color.stroke_width(2),
            )),
            Key::VLine => area.draw(&PathElement::new(
                vec![(x + 6, y - 7), (x + 6, y + 7)],
                color.stroke_width(2),
            )),
            Key::Mark => area.draw(&PathElement::new(
                vec![(x, y), (x + 14, y)],
                color.stroke_width(4),
            )),
            Key::Cross => area.draw(&Cross::new((x + 6, y), 4, color.stroke_width(2))),
            Key::Dash => area
                .draw(&PathElement::new(
                    vec![(x, y), (x + 5, y)],
                    color.stroke_width(2),
                ))
                .and_then(|_| {
                    area.draw(&PathElement::new(
                        vec![(x + 9, y), (x + 14, y)],
                        color.stroke_width(2),
                    ))
                }),
        }
        .map_err(plot_err)?;
        area.draw(&Text::new(label.clone(), (x + 18, y), style.clone()))
            .map_err(plot_err)?;
        // The SVG backend cannot measure text; estimate about 7 px a
        // character at 13 px, which errs wide rather than overlapping.
        x += 18 + 7 * label.chars().count() as i32 + 18;
    }
    Ok(x)
}

/// Draws a line of text at `(x, y)`, anchored left-top.
pub fn note(area: &Area<'_>, x: i32, y: i32, size: u32, s: &str) -> Result<()> {
    let style = TextStyle::from((FONT, size).into_font())
        .color(&INK)
        .pos(Pos::new(HPos::Left, VPos::Top));
    area.draw(&Text::new(s.to_string(), (x, y), style))
        .map_err(plot_err)
}

/// The log-axis range of positive values `v`, widened to whole decades.
pub fn decades(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::MAX, f64::MIN);
    for v in values.into_iter().filter(|v| *v > 0.0 && v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo > hi {
        return (0.1, 10_000.0);
    }
    let lo = 10f64.powf(lo.log10().floor());
    let mut hi = 10f64.powf(hi.log10().ceil());
    if hi <= lo {
        hi = lo * 10.0;
    }
    // plotters starts its log key points at ceil(log10(lo)), which rounding
    // can push one decade up; a hair below keeps the lowest decade labelled.
    (lo * 0.999, hi * 1.001)
}

/// A log-axis label: decades only (`0.1`, `1`, `10`, `1,000`), nothing for
/// the light lines between them.
pub fn decade_label(v: f64) -> String {
    let l = v.log10();
    if (l - l.round()).abs() > 1e-3 {
        return String::new();
    }
    let v = 10f64.powi(l.round() as i32);
    if v < 1.0 {
        format!("{v}")
    } else {
        super::fmt::count(v.round() as usize)
    }
}

/// A little CSV writer for the data embedded beside each chart.
#[derive(Debug, Default)]
pub struct Csv(String);

impl Csv {
    pub fn new(header: &[&str]) -> Csv {
        Csv(header.join(",") + "\n")
    }

    pub fn row(&mut self, cells: &[String]) {
        let escaped: Vec<String> = cells
            .iter()
            .map(|c| {
                if c.contains([',', '"', '\n']) {
                    format!("\"{}\"", c.replace('"', "\"\""))
                } else {
                    c.clone()
                }
            })
            .collect();
        self.0.push_str(&escaped.join(","));
        self.0.push('\n');
    }

    pub fn finish(self) -> String {
        self.0
    }
}

/// A number for the embedded CSV: empty when absent.
pub fn cell(v: Option<f64>, decimals: usize) -> String {
    v.map(|v| format!("{v:.decimals$}")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decades_and_labels() {
        let close = |(a, b): (f64, f64), (c, d): (f64, f64)| {
            (a / c - 1.0).abs() < 0.01 && (b / d - 1.0).abs() < 0.01
        };
        assert!(close(decades([0.75, 2934.0]), (0.1, 10_000.0)));
        assert!(close(decades([1.0, 1.0]), (1.0, 10.0)));
        assert_eq!(decades(Vec::<f64>::new()), (0.1, 10_000.0));
        assert_eq!(decade_label(1000.0), "1,000");
        assert_eq!(decade_label(0.1), "0.1");
        assert_eq!(decade_label(20.0), "");
        assert_eq!(grid(5, 3), (2, 3));
        assert_eq!(grid(0, 3), (1, 1));
    }

    #[test]
    fn csv_escapes() {
        let mut c = Csv::new(&["a", "b"]);
        c.row(&["1".into(), "x,y".into()]);
        assert_eq!(c.finish(), "a,b\n1,\"x,y\"\n");
    }
}
