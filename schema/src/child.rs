//! The files a child process writes (`slowlab load`'s CSVs, the send and
//! receive logs of `serve` and the WSGI app, `slowlab proxy`'s stats and
//! gauge logs, `sweep-load`'s steps) and the harness reads back into its
//! results rows.
//!
//! A child writes the middle of a results row: the harness's row has the
//! run's identity (and sometimes `t_s`) in front and, for a few files,
//! columns of its own among the child's. [`child_row!`] defines both from
//! one list of fields: the harness's row struct, and the struct of the
//! columns the child writes (its *cells*), with the same types, serde
//! attributes and documentation. A field the harness alone fills is marked
//! `@own`. The child serializes its cells struct ([`Labelled`],
//! [`line`]); the harness reads the file as its row struct by column name.
//! So a column is defined once, and neither side keeps a list of names or
//! builds a row by position.

use std::io::Write;

use anyhow::{Context, Result};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::file::columns;

/// Defines a results row and the cells a child writes of it (see the
/// module): `pub struct Row / Cells { fields }`, each field either the
/// child's or `@own` (the harness's: `t_s`, a column it adds); `@ident,`
/// stands for the run's identity columns (`run_id`, `server`, `route`,
/// `slow_clients`, `repetition`). Generates `Row::cells(&self)` and `Row::from_cells(cells)` (the
/// harness's fields at their defaults).
macro_rules! child_row {
    (
        $(#[$rm:meta])*
        pub struct $row:ident / $cells:ident { $($body:tt)* }
    ) => {
        child_row!(@munch [$(#[$rm])* $row $cells] [] [] [] $($body)*);
    };
    // The run's identity, first in every per-run file.
    (@munch $head:tt [$($all:tt)*] [$($child:tt)*] [$($n:ident)*] @ident, $($rest:tt)*) => {
        child_row!(@munch $head [$($all)*
            pub run_id: String,
            pub server: $crate::ServerName,
            pub route: $crate::RouteName,
            pub slow_clients: u32,
            pub repetition: u32,
        ] [$($child)*] [$($n)*] $($rest)*);
    };
    (@munch $head:tt [$($all:tt)*] [$($child:tt)*] [$($n:ident)*]
        @own $(#[$m:meta])* pub $f:ident : $t:ty, $($rest:tt)*) => {
        child_row!(@munch $head [$($all)* $(#[$m])* pub $f: $t,] [$($child)*] [$($n)*] $($rest)*);
    };
    (@munch $head:tt [$($all:tt)*] [$($child:tt)*] [$($n:ident)*]
        $(#[$m:meta])* pub $f:ident : $t:ty, $($rest:tt)*) => {
        child_row!(@munch $head
            [$($all)* $(#[$m])* pub $f: $t,]
            [$($child)* $(#[$m])* pub $f: $t,]
            [$($n)* $f] $($rest)*);
    };
    (@munch [$(#[$rm:meta])* $row:ident $cells:ident] [$($all:tt)*] [$($child:tt)*] [$($n:ident)*]) => {
        $(#[$rm])*
        #[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
        pub struct $row { $($all)* }

        #[doc = concat!("The columns of [`", stringify!($row), "`] that the child writes, in its order.")]
        #[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
        pub struct $cells { $($child)* }

        impl $row {
            /// The child's columns of this row.
            pub fn cells(&self) -> $cells {
                $cells { $($n: ::std::clone::Clone::clone(&self.$n),)* }
            }

            /// A row with the child's columns, the harness's at their
            /// defaults.
            pub fn from_cells(c: $cells) -> Self {
                $row { $($n: c.$n,)* ..::std::default::Default::default() }
            }
        }
    };
}

/// The header line of a file of `T` rows, with its newline.
pub fn header_line<T: DeserializeOwned>() -> String {
    let mut s = columns::<T>().join(",");
    s.push('\n');
    s
}

/// One row as a CSV line with its newline, for a log that several writers
/// append to line by line (the send log of Gunicorn's workers and of the
/// replica's): the header came first, from [`header_line`].
pub fn line<T: Serialize>(row: &T) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    line_into(&mut out, row)?;
    Ok(out)
}

/// Appends one row as a CSV line with its newline to `out` (a batch of
/// lines that is written to its file at once).
pub fn line_into<T: Serialize>(out: &mut Vec<u8>, row: &T) -> Result<()> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .buffer_capacity(512)
        .from_writer(out);
    w.serialize(row).context("formatting a row")?;
    w.flush().context("formatting a row")
}

/// A CSV writer of `T` rows behind label columns (`slowlab load --label
/// k=v`): the labels' keys then `T`'s columns as the header, each row the
/// labels' values then `T`'s cells.
pub struct Labelled<'a, W: Write> {
    w: csv::Writer<W>,
    labels: &'a [(String, String)],
}

impl<'a, W: Write> Labelled<'a, W> {
    /// Starts the file with its header.
    pub fn new<T: DeserializeOwned>(out: W, labels: &'a [(String, String)]) -> Result<Self> {
        let mut w = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(out);
        let header = labels
            .iter()
            .map(|(k, _)| k.as_str())
            .chain(columns::<T>().iter().copied());
        w.write_record(header).context("writing the header")?;
        Ok(Labelled { w, labels })
    }

    /// Writes one row.
    pub fn write<T: Serialize>(&mut self, row: &T) -> Result<()> {
        for (_, v) in self.labels {
            self.w.write_field(v)?;
        }
        self.w.serialize(row).context("writing a row")
    }

    /// Flushes what was written so far to the file.
    pub fn flush(&mut self) -> Result<()> {
        self.w.flush().context("flushing")
    }

    /// Flushes and gives the writer back.
    pub fn finish(self) -> Result<W> {
        self.w
            .into_inner()
            .map_err(|e| anyhow::anyhow!("flushing: {}", e.error()))
    }
}

/// Writes `rows` as a labelled file at `path`.
pub fn write_labelled<T: Serialize + DeserializeOwned>(
    path: &std::path::Path,
    labels: &[(String, String)],
    rows: impl IntoIterator<Item = T>,
) -> Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = Labelled::new::<T>(std::io::BufWriter::new(file), labels)?;
    for row in rows {
        w.write(&row)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    w.finish()?
        .flush()
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell;

    child_row! {
        /// A row for the test.
        pub struct Row / Cells {
            @own pub run_id: String,
            pub a: u32,
            /// Written with three decimals.
            #[serde(default, serialize_with = "cell::d3")]
            pub b: Option<f64>,
            @own #[serde(default)] pub extra: Option<String>,
            pub c: String,
        }
    }

    #[test]
    fn a_row_and_its_cells_share_their_fields() {
        assert_eq!(columns::<Row>(), ["run_id", "a", "b", "extra", "c"]);
        assert_eq!(columns::<Cells>(), ["a", "b", "c"]);
        let row = Row {
            run_id: "007".into(),
            a: 1,
            b: Some(2.5),
            extra: Some("x".into()),
            c: "y".into(),
        };
        let back = Row::from_cells(row.cells());
        assert_eq!(
            back,
            Row {
                run_id: String::new(),
                extra: None,
                ..row
            }
        );
    }

    #[test]
    fn labelled_files_put_the_labels_first_and_read_back_as_rows() {
        let labels = vec![("run_id".to_string(), "042".to_string())];
        let mut w = Labelled::new::<Cells>(Vec::new(), &labels).unwrap();
        for (a, b) in [(1, Some(0.1234)), (2, None)] {
            w.write(&Cells {
                a,
                b,
                c: "z,z".into(),
            })
            .unwrap();
        }
        let text = String::from_utf8(w.finish().unwrap()).unwrap();
        assert_eq!(text, "run_id,a,b,c\n042,1,0.123,\"z,z\"\n042,2,,\"z,z\"\n");
        let rows: Vec<Row> = csv::Reader::from_reader(text.as_bytes())
            .deserialize()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows[0].run_id, "042");
        assert_eq!(rows[1].b, None);
        assert_eq!(rows[1].extra, None);
        assert_eq!(
            String::from_utf8(line(&rows[0].cells()).unwrap()).unwrap(),
            "1,0.123,\"z,z\"\n"
        );
        assert_eq!(header_line::<Cells>(), "a,b,c\n");
    }
}
