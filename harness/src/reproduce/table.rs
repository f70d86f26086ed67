//! Reading CSV files by column name, and appending rows to the result files
//! as runs complete.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

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

/// A result file that grows by appending rows; its header is written once
/// and every later batch must have the same columns.
#[derive(Debug)]
pub struct Appender {
    path: PathBuf,
    headers: Option<Vec<String>>,
}

impl Appender {
    pub fn new(path: PathBuf) -> Self {
        Appender {
            path,
            headers: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends to a file that may already exist from an earlier process (a
    /// directory that collects several sweeps): its header must match.
    pub fn append_existing(&mut self, headers: &[String], rows: &[Vec<String>]) -> Result<()> {
        if self.headers.is_none() && self.path.exists() {
            let existing = Table::read(&self.path)?.headers;
            if existing.is_empty() {
                fs::remove_file(&self.path)?;
            } else {
                self.headers = Some(existing);
            }
        }
        self.append(headers, rows)
    }

    /// Appends `rows` under `headers`, creating the file with its header on
    /// first use, and flushes, so that an interrupted reproduction keeps
    /// every completed run.
    pub fn append(&mut self, headers: &[String], rows: &[Vec<String>]) -> Result<()> {
        match &self.headers {
            Some(h) if h.as_slice() != headers => bail!(
                "{}: columns changed from `{}` to `{}`",
                self.path.display(),
                h.join(","),
                headers.join(",")
            ),
            Some(_) => {}
            None => {
                let mut w = csv::Writer::from_writer(
                    File::create(&self.path)
                        .with_context(|| format!("creating {}", self.path.display()))?,
                );
                w.write_record(headers)?;
                w.flush()?;
                self.headers = Some(headers.to_vec());
            }
        }
        if rows.is_empty() {
            return Ok(());
        }
        let file = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .with_context(|| format!("appending to {}", self.path.display()))?;
        let mut w = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(file);
        for row in rows {
            w.write_record(row)?;
        }
        w.flush()?;
        Ok(())
    }
}

/// Writes a whole CSV file at once (through a temp file and a rename, so a
/// reader never sees half of it).
pub fn write_whole(path: &Path, headers: &[&str], rows: &[Vec<String>]) -> Result<()> {
    let tmp = path.with_extension("csv.tmp");
    {
        let mut w =
            csv::Writer::from_path(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        w.write_record(headers)?;
        for r in rows {
            w.write_record(r)?;
        }
        w.flush()?;
    }
    fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

/// Formats an optional number with a fixed number of decimals; missing
/// values are empty cells, never zeros.
pub fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map(|x| format!("{x:.decimals$}")).unwrap_or_default()
}

/// Formats an optional integer.
pub fn opt_u(v: Option<u64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_keeps_one_header_and_refuses_new_columns() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Appender::new(dir.path().join("x.csv"));
        let h = vec!["a".to_string(), "b".to_string()];
        a.append(&h, &[vec!["1".into(), "2".into()]]).unwrap();
        a.append(&h, &[vec!["3".into(), "".into()]]).unwrap();
        let t = Table::read(a.path()).unwrap();
        assert_eq!(t.headers, h);
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.f64(&t.rows[1], "a"), Some(3.0));
        assert_eq!(t.f64(&t.rows[1], "b"), None);
        assert!(a.append(&["a".to_string()], &[]).is_err());
    }

    #[test]
    fn optional_cells_are_empty() {
        assert_eq!(opt(None, 3), "");
        assert_eq!(opt(Some(1.23456), 3), "1.235");
        assert_eq!(opt_u(Some(7)), "7");
    }
}
