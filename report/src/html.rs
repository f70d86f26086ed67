//! The document as one self-contained HTML page: inline styles, charts as
//! inline SVG, each chart's data embedded as CSV, nothing fetched from
//! anywhere, so it opens offline and can be mailed as a file. The one
//! script is the scrubbable view's, inline ([`super::scrub`]).

use super::doc::{Block, Document, Figure, Inline, Section, Table, Text};

/// Escapes text for HTML element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
body { font-family: system-ui, sans-serif; color: #222; max-width: 1320px; margin: 0 auto; padding: 1em 2em 4em; line-height: 1.5; }
h1 { font-size: 1.7em; margin-bottom: 0.1em; }
.subtitle { color: #555; margin-top: 0; }
h2 { margin-top: 2.2em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
section p, section li { max-width: 60em; }
code { background: #f3f3f3; padding: 0 0.25em; border-radius: 3px; font-size: 0.92em; }
.note { background: #fff6e0; border-left: 4px solid #e6a100; padding: 0.5em 0.9em; max-width: 60em; }
.missing .note { background: #fdecea; border-left-color: #c62828; }
figure { margin: 1.2em 0; }
.chart svg { max-width: 100%; height: auto; display: block; }
figcaption { color: #444; font-size: 0.93em; max-width: 60em; margin-top: 0.4em; }
details { margin-top: 0.4em; font-size: 0.9em; }
details pre { max-height: 24em; overflow: auto; background: #f7f7f7; padding: 0.6em; }
.table { overflow-x: auto; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.93em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; vertical-align: top; white-space: nowrap; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.agree { color: #1b7f2a; font-weight: bold; }
.disagree { color: #c62828; font-weight: bold; }
";

/// Renders the whole page.
pub fn render(doc: &Document) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&format!("<title>{}</title>\n", escape(&doc.title)));
    out.push_str(&format!("<style>{STYLE}</style>\n"));
    for css in doc.styles() {
        out.push_str(&format!("<style>{css}</style>\n"));
    }
    out.push_str("</head>\n<body>\n");
    out.push_str(&format!("<header>\n<h1>{}</h1>\n", escape(&doc.title)));
    out.push_str(&format!(
        "<p class=\"subtitle\">{}</p>\n",
        escape(&doc.subtitle)
    ));
    out.push_str("<nav><p>");
    let links: Vec<String> = doc
        .sections
        .iter()
        .map(|s| format!("<a href=\"#{}\">{}</a>", s.id, escape(&s.title)))
        .collect();
    out.push_str(&links.join(" · "));
    out.push_str("</p></nav>\n</header>\n");
    for s in &doc.sections {
        section(&mut out, s);
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn section(out: &mut String, s: &Section) {
    out.push_str(&format!("<section id=\"{}\" class=\"{}\">\n", s.id, s.id));
    out.push_str(&format!("<h2>{}</h2>\n", escape(&s.title)));
    for b in &s.blocks {
        match b {
            Block::Para(t) => out.push_str(&format!("<p>{}</p>\n", inline(t))),
            Block::Note(t) => out.push_str(&format!("<p class=\"note\">{}</p>\n", inline(t))),
            Block::List(items) => {
                out.push_str("<ul>\n");
                for i in items {
                    out.push_str(&format!("<li>{}</li>\n", inline(i)));
                }
                out.push_str("</ul>\n");
            }
            Block::Table(t) => table(out, t),
            Block::Figure(f) => figure(out, f),
            Block::Interactive(v) => out.push_str(&v.html),
        }
    }
    out.push_str("</section>\n");
}

/// Renders running text.
pub fn inline(t: &Text) -> String {
    t.iter()
        .map(|i| match i {
            Inline::Text(s) => escape(s),
            Inline::Code(s) => format!("<code>{}</code>", escape(s)),
            Inline::Strong(s) => format!("<strong>{}</strong>", escape(s)),
        })
        .collect()
}

fn table(out: &mut String, t: &Table) {
    out.push_str("<div class=\"table\"><table>\n<thead><tr>");
    for h in &t.header {
        out.push_str(&format!("<th>{}</th>", escape(h)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for (i, c) in row.iter().enumerate() {
            let class = if t.numeric.contains(&i) {
                " class=\"num\""
            } else if c.starts_with('✓') {
                " class=\"agree\""
            } else if c.starts_with('✗') {
                " class=\"disagree\""
            } else {
                ""
            };
            out.push_str(&format!("<td{class}>{}</td>", escape(c)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
}

fn figure(out: &mut String, f: &Figure) {
    let id = f.file.trim_end_matches(".svg");
    out.push_str(&format!(
        "<figure id=\"{}\">\n<div class=\"chart\" role=\"img\" aria-label=\"{}\">\n",
        escape(id),
        escape(&f.alt)
    ));
    // plotters writes a bare <svg> element with its namespace, which HTML
    // accepts inline as it is.
    out.push_str(f.svg.trim());
    out.push_str("\n</div>\n");
    out.push_str(&format!(
        "<figcaption>{}</figcaption>\n",
        inline(&f.caption)
    ));
    out.push_str(&format!(
        "<details><summary>The data of this chart (CSV)</summary>\n<pre class=\"data\">{}</pre>\n</details>\n",
        escape(&f.data_csv)
    ));
    out.push_str("</figure>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
