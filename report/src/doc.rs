//! The report as a document: sections of paragraphs, lists, tables and
//! figures, built once from the data and rendered twice, to HTML
//! ([`super::html`]) and to Markdown ([`super::markdown`]), so that both say
//! exactly the same thing.

/// A piece of running text. Kept structured (rather than pre-rendered) so
/// each renderer escapes and marks it up its own way.
#[derive(Debug, Clone, PartialEq)]
pub enum Inline {
    Text(String),
    /// Inline code: file, column and command names.
    Code(String),
    Strong(String),
}

/// A paragraph or list item.
pub type Text = Vec<Inline>;

/// Builds a [`Text`] from plain text where `backticks` mark code and
/// `**stars**` mark emphasis, so prose in the code reads like Markdown.
pub fn text(s: &str) -> Text {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let code = rest.find('`');
        let strong = rest.find("**");
        match (code, strong) {
            (Some(c), s) if s.is_none_or(|s| c < s) => {
                let after = &rest[c + 1..];
                match after.find('`') {
                    Some(end) => {
                        push_text(&mut out, &rest[..c]);
                        out.push(Inline::Code(after[..end].to_string()));
                        rest = &after[end + 1..];
                    }
                    None => {
                        push_text(&mut out, rest);
                        rest = "";
                    }
                }
            }
            (_, Some(s)) => {
                let after = &rest[s + 2..];
                match after.find("**") {
                    Some(end) => {
                        push_text(&mut out, &rest[..s]);
                        out.push(Inline::Strong(after[..end].to_string()));
                        rest = &after[end + 2..];
                    }
                    None => {
                        push_text(&mut out, rest);
                        rest = "";
                    }
                }
            }
            _ => {
                push_text(&mut out, rest);
                rest = "";
            }
        }
    }
    out
}

fn push_text(out: &mut Text, s: &str) {
    if !s.is_empty() {
        out.push(Inline::Text(s.to_string()));
    }
}

/// A table: header cells and rows of cells.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Columns to right-align (numbers).
    pub numeric: Vec<usize>,
}

/// A chart: its SVG, the file it is saved as for the Markdown report, and
/// the data it was drawn from.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// File name beside `report.md`, e.g. `report-p95.svg`.
    pub file: String,
    pub svg: String,
    /// Short text for `alt`.
    pub alt: String,
    pub caption: Text,
    /// The data drawn, as CSV (header line first), embedded in the HTML.
    pub data_csv: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Para(Text),
    List(Vec<Text>),
    Table(Table),
    Figure(Figure),
    /// Something the reader must not miss: missing data, not-sampled
    /// quantities.
    Note(Text),
    /// A view with its own script (the scrubbable view).
    Interactive(Interactive),
}

/// A view with its own script: the HTML renderer writes `html` as it is and
/// `css` into the page's head; the Markdown renderer writes `instead`.
#[derive(Debug, Clone, PartialEq)]
pub struct Interactive {
    pub html: String,
    pub css: String,
    pub instead: Text,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// The HTML id; the tests look sections up by it.
    pub id: &'static str,
    pub title: String,
    pub blocks: Vec<Block>,
}

impl Section {
    pub fn new(id: &'static str, title: impl Into<String>) -> Section {
        Section {
            id,
            title: title.into(),
            blocks: Vec::new(),
        }
    }

    pub fn para(&mut self, s: &str) {
        self.blocks.push(Block::Para(text(s)));
    }

    pub fn note(&mut self, s: &str) {
        self.blocks.push(Block::Note(text(s)));
    }

    pub fn push(&mut self, b: Block) {
        self.blocks.push(b);
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub title: String,
    /// One line under the title: where the data came from.
    pub subtitle: String,
    pub sections: Vec<Section>,
}

impl Document {
    /// The style sheets of every interactive view, in order.
    pub fn styles(&self) -> impl Iterator<Item = &str> {
        self.sections.iter().flat_map(|s| {
            s.blocks.iter().filter_map(|b| match b {
                Block::Interactive(v) => Some(v.css.as_str()),
                _ => None,
            })
        })
    }

    /// Every figure, in order.
    pub fn figures(&self) -> impl Iterator<Item = &Figure> {
        self.sections.iter().flat_map(|s| {
            s.blocks.iter().filter_map(|b| match b {
                Block::Figure(f) => Some(f),
                _ => None,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup() {
        assert_eq!(
            text("see `runs.csv` and **this** now"),
            vec![
                Inline::Text("see ".into()),
                Inline::Code("runs.csv".into()),
                Inline::Text(" and ".into()),
                Inline::Strong("this".into()),
                Inline::Text(" now".into()),
            ]
        );
        assert_eq!(text("a ` b"), vec![Inline::Text("a ` b".into())]);
        assert_eq!(text(""), vec![]);
    }
}
