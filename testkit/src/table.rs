//! Reading any CSV file by column name, as text: for checks of files whose
//! struct a test does not want to assume (the results files themselves are
//! read and written through the `schema` crate's structs).

use std::path::Path;

use anyhow::{Context, Result};

/// A whole CSV file in memory, read by column name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// Reads `path`; a missing file is an error the caller can report.
    pub fn read(path: &Path) -> Result<Table> {
        let mut r = csv::ReaderBuilder::new()
            .flexible(false)
            .from_path(path)
            .with_context(|| format!("reading {}", path.display()))?;
        let headers = r.headers()?.iter().map(str::to_string).collect();
        let mut rows = Vec::new();
        for rec in r.records() {
            let rec = rec.with_context(|| format!("parsing {}", path.display()))?;
            rows.push(rec.iter().map(str::to_string).collect());
        }
        Ok(Table { headers, rows })
    }

    /// Reads `path` if it exists.
    pub fn read_optional(path: &Path) -> Result<Option<Table>> {
        if path.exists() {
            Table::read(path).map(Some)
        } else {
            Ok(None)
        }
    }

    pub fn col(&self, name: &str) -> Option<usize> {
        self.headers.iter().position(|h| h == name)
    }

    /// The cell of `row` in column `name`, `None` when the column is missing.
    pub fn get<'a>(&'a self, row: &'a [String], name: &str) -> Option<&'a str> {
        self.col(name).and_then(|i| row.get(i)).map(String::as_str)
    }

    /// The cell as a number; empty or unparsable cells are `None`.
    pub fn f64(&self, row: &[String], name: &str) -> Option<f64> {
        self.get(row, name)?.trim().parse().ok()
    }

    /// All values of a numeric column.
    pub fn floats(&self, name: &str) -> Vec<f64> {
        self.rows.iter().filter_map(|r| self.f64(r, name)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_by_column_name() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.csv");
        std::fs::write(&p, "a,b\n1,\n3,x\n").unwrap();
        let t = Table::read(&p).unwrap();
        assert_eq!(t.headers, ["a", "b"]);
        assert_eq!(t.f64(&t.rows[1], "a"), Some(3.0));
        assert_eq!(t.f64(&t.rows[0], "b"), None);
        assert_eq!(t.get(&t.rows[1], "b"), Some("x"));
        assert_eq!(t.floats("a"), [1.0, 3.0]);
        assert!(
            Table::read_optional(&dir.path().join("none.csv"))
                .unwrap()
                .is_none()
        );
    }
}
