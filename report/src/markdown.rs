//! The document as GitHub Markdown: `report.md` with each chart as an SVG
//! file beside it (GitHub shows SVG images, not inline SVG).

use super::doc::{Block, Document, Inline, Table, Text};

/// Escapes what GitHub Markdown would otherwise read as markup.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Renders running text.
pub fn inline(t: &Text) -> String {
    t.iter()
        .map(|i| match i {
            Inline::Text(s) => escape(s),
            // A backtick inside code needs a longer fence; none of ours has one.
            Inline::Code(s) => format!("`{s}`"),
            Inline::Strong(s) => format!("**{}**", escape(s)),
        })
        .collect()
}

fn cell(s: &str) -> String {
    escape(s).replace('\n', " ")
}

fn table(out: &mut String, t: &Table) {
    let head: Vec<String> = t.header.iter().map(|h| cell(h)).collect();
    out.push_str(&format!("| {} |\n", head.join(" | ")));
    let rule: Vec<&str> = (0..t.header.len())
        .map(|i| {
            if t.numeric.contains(&i) {
                "---:"
            } else {
                "---"
            }
        })
        .collect();
    out.push_str(&format!("| {} |\n", rule.join(" | ")));
    for row in &t.rows {
        let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out.push('\n');
}

/// Renders the whole document; figures refer to their files beside it.
pub fn render(doc: &Document) -> String {
    let mut out = format!("# {}\n\n{}\n\n", escape(&doc.title), escape(&doc.subtitle));
    for s in &doc.sections {
        out.push_str(&format!("## {}\n\n", escape(&s.title)));
        // mdBook's include anchors (invisible in Markdown): the book quotes
        // a section of the example run's report, never a copy of it.
        out.push_str(&format!("<!-- ANCHOR: {} -->\n\n", s.id));
        for b in &s.blocks {
            match b {
                Block::Para(t) => out.push_str(&format!("{}\n\n", inline(t))),
                Block::Note(t) => out.push_str(&format!("> **Note.** {}\n\n", inline(t))),
                Block::Interactive(v) => out.push_str(&format!("{}\n\n", inline(&v.instead))),
                Block::List(items) => {
                    for i in items {
                        out.push_str(&format!("- {}\n", inline(i)));
                    }
                    out.push('\n');
                }
                Block::Table(t) => table(&mut out, t),
                Block::Figure(f) => {
                    out.push_str(&format!("![{}]({})\n\n", escape(&f.alt), f.file));
                    out.push_str(&format!(
                        "*{}* (Its data is embedded in `report.html`.)\n\n",
                        inline(&f.caption)
                    ));
                }
            }
        }
        out.push_str(&format!("<!-- ANCHOR_END: {} -->\n\n", s.id));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{Section, text};

    #[test]
    fn renders_tables_and_escapes() {
        let mut s = Section::new("x", "A | B");
        s.para("use `a|b` and 2*3");
        s.push(Block::Table(Table {
            header: vec!["k".into(), "v".into()],
            rows: vec![vec!["a|b".into(), "1".into()]],
            numeric: vec![1],
        }));
        let doc = Document {
            title: "T".into(),
            subtitle: "S".into(),
            sections: vec![s],
        };
        let md = render(&doc);
        assert!(md.contains("## A \\| B"), "{md}");
        assert!(md.contains("use `a|b` and 2\\*3"), "{md}");
        assert!(md.contains("| --- | ---: |"), "{md}");
        assert!(md.contains("| a\\|b | 1 |"), "{md}");
        let _ = text("");
    }
}
