//! Reading and writing one results file through its row struct: the
//! header is the struct's fields in order ([`columns`]), rows are matched
//! by column name when read, and appended run by run when written.

use std::fs::{self, File, OpenOptions};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde::de::{self, DeserializeOwned, Visitor};

/// The columns of a row struct, in order: its serde field names.
pub fn columns<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut fields = Fields(None);
    // The deserializer stops at the struct's field list; the error it
    // returns to get out is expected.
    let _ = T::deserialize(&mut fields);
    fields.0.unwrap_or(&[])
}

/// A deserializer that only learns the field names of a struct.
struct Fields(Option<&'static [&'static str]>);

impl<'de> de::Deserializer<'de> for &mut Fields {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("a row must be a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        self.0 = Some(fields);
        Err(de::Error::custom("field names collected"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// Creates `dir` and checks that a file can be written in it, before the
/// run sends anything: a measurement must not be lost to an `--out` that
/// cannot hold it. Bad input (exit status 2) otherwise.
pub fn probe(dir: &Path) -> Result<()> {
    probe_as(dir, "--out")
}

/// [`probe`], the error naming the directory as the argument `arg`.
pub fn probe_as(dir: &Path, arg: &str) -> Result<()> {
    let bad = |what: &str, e: std::io::Error| {
        common::exit::BadInput::new(format!("{arg} {}: {what}: {e}", dir.display()))
    };
    fs::create_dir_all(dir).map_err(|e| bad("cannot create it", e))?;
    let path = dir.join(format!(".slowlab-probe-{}", std::process::id()));
    let written = fs::write(&path, b"probe\n");
    // Remove the probe whatever happened; a failure to write wins.
    let removed = fs::remove_file(&path);
    written.map_err(|e| bad("cannot write in it", e))?;
    removed.map_err(|e| bad("cannot remove a file in it", e))?;
    Ok(())
}

/// The rows of a file that parsed, and the errors of those that did not
/// (with their line numbers).
#[derive(Debug)]
pub struct Parsed<T> {
    pub rows: Vec<T>,
    pub bad: Vec<String>,
}

/// Reads every row of `path` that parses: a writer that raced may leave a
/// stray line, and one bad line should not cost the whole file. Columns are
/// matched by name; columns the struct does not know are ignored.
pub fn read<T: DeserializeOwned>(path: &Path) -> Result<Parsed<T>> {
    let mut r = csv::ReaderBuilder::new()
        .flexible(false)
        .from_path(path)
        .with_context(|| format!("opening {}", path.display()))?;
    r.headers()
        .with_context(|| format!("reading the header of {}", path.display()))?;
    let mut parsed = Parsed {
        rows: Vec::new(),
        bad: Vec::new(),
    };
    for (i, rec) in r.deserialize().enumerate() {
        match rec {
            Ok(row) => parsed.rows.push(row),
            // Line i + 2: one for the header, one because lines count from 1.
            Err(e) => parsed.bad.push(format!("line {}: {e}", i + 2)),
        }
    }
    Ok(parsed)
}

/// Reads every row of `path`, failing at the first that does not parse
/// (for the per-run files the harness merges, which it wrote itself).
pub fn read_all<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let parsed = read(path)?;
    match parsed.bad.first() {
        Some(e) => bail!("{}: {e}", path.display()),
        None => Ok(parsed.rows),
    }
}

/// Reads `path` if it exists.
pub fn read_optional<T: DeserializeOwned>(path: &Path) -> Result<Option<Vec<T>>> {
    if path.exists() {
        read_all(path).map(Some)
    } else {
        Ok(None)
    }
}

/// Reads a component's own log (a file without the leading columns of its
/// results file) as rows of `T`: each line behind `lead`, the leading
/// columns' names and values.
pub fn read_log<T: DeserializeOwned>(path: &Path, lead: &[(&str, String)]) -> Result<Vec<T>> {
    let mut r =
        csv::Reader::from_path(path).with_context(|| format!("opening {}", path.display()))?;
    let mut header = csv::StringRecord::from(lead.iter().map(|(k, _)| *k).collect::<Vec<_>>());
    header.extend(r.headers()?.iter());
    let mut rows = Vec::new();
    for (i, rec) in r.records().enumerate() {
        let mut full =
            csv::StringRecord::from(lead.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>());
        full.extend(
            rec.with_context(|| format!("reading {}", path.display()))?
                .iter(),
        );
        // Line i + 2: one for the header, one because lines count from 1.
        rows.push(
            full.deserialize(Some(&header))
                .with_context(|| format!("{}: line {}", path.display(), i + 2))?,
        );
    }
    Ok(rows)
}

/// [`read_log`] of `path` if it exists.
pub fn read_log_optional<T: DeserializeOwned>(
    path: &Path,
    lead: &[(&str, String)],
) -> Result<Option<Vec<T>>> {
    if path.exists() {
        read_log(path, lead).map(Some)
    } else {
        Ok(None)
    }
}

fn header_of(path: &Path) -> Result<Vec<String>> {
    let mut r =
        csv::Reader::from_path(path).with_context(|| format!("opening {}", path.display()))?;
    Ok(r.headers()?.iter().map(str::to_string).collect())
}

/// A results file that grows by appending rows of `T`; its header is
/// written once, on first use.
#[derive(Debug)]
pub struct Appender<T> {
    path: PathBuf,
    started: bool,
    row: PhantomData<fn(&T)>,
}

impl<T: Serialize + DeserializeOwned> Appender<T> {
    pub fn new(path: PathBuf) -> Self {
        Appender {
            path,
            started: false,
            row: PhantomData,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends to a file that may already exist from an earlier process (a
    /// directory that collects several sweeps): its header must be `T`'s.
    pub fn append_existing(&mut self, rows: &[T]) -> Result<()> {
        if !self.started && self.path.exists() {
            let existing = header_of(&self.path).unwrap_or_default();
            if existing.is_empty() {
                fs::remove_file(&self.path)?;
            } else if existing != columns::<T>() {
                bail!(
                    "{}: columns changed from `{}` to `{}`",
                    self.path.display(),
                    existing.join(","),
                    columns::<T>().join(",")
                );
            } else {
                self.started = true;
            }
        }
        self.append(rows)
    }

    /// Appends `rows`, creating the file with its header on first use, and
    /// flushes, so that an interrupted reproduction keeps every completed
    /// run.
    pub fn append(&mut self, rows: &[T]) -> Result<()> {
        let file = if self.started {
            OpenOptions::new()
                .append(true)
                .open(&self.path)
                .with_context(|| format!("appending to {}", self.path.display()))?
        } else {
            File::create(&self.path).with_context(|| format!("creating {}", self.path.display()))?
        };
        let header = !self.started;
        write_rows(file, header, rows)
            .with_context(|| format!("writing {}", self.path.display()))?;
        self.started = true;
        Ok(())
    }
}

fn write_rows<T: Serialize + DeserializeOwned>(file: File, header: bool, rows: &[T]) -> Result<()> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(file);
    if header {
        w.write_record(columns::<T>())?;
    }
    for row in rows {
        w.serialize(row)?;
    }
    w.flush()?;
    Ok(())
}

/// Writes a whole results file at once (through a temp file and a rename,
/// so a reader never sees half of it).
pub fn write_whole<T: Serialize + DeserializeOwned>(path: &Path, rows: &[T]) -> Result<()> {
    let tmp = path.with_extension("csv.tmp");
    let file = File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    write_rows(file, true, rows).with_context(|| format!("writing {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Row {
        a: u32,
        #[serde(serialize_with = "super::super::cell::d3")]
        b: Option<f64>,
    }

    #[test]
    fn columns_are_the_fields_in_order() {
        assert_eq!(columns::<Row>(), ["a", "b"]);
    }

    #[test]
    fn append_keeps_one_header_and_reads_back_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Appender::<Row>::new(dir.path().join("x.csv"));
        a.append(&[]).unwrap();
        a.append(&[Row { a: 1, b: Some(2.0) }]).unwrap();
        a.append(&[Row { a: 3, b: None }]).unwrap();
        let text = fs::read_to_string(a.path()).unwrap();
        assert_eq!(text, "a,b\n1,2.000\n3,\n");
        let back: Vec<Row> = read_all(a.path()).unwrap();
        assert_eq!(back, [Row { a: 1, b: Some(2.0) }, Row { a: 3, b: None }]);
        // A later process appends below the same header ...
        let mut again = Appender::<Row>::new(a.path().to_path_buf());
        again.append_existing(&[Row { a: 5, b: None }]).unwrap();
        assert_eq!(read_all::<Row>(a.path()).unwrap().len(), 3);
        // ... and refuses a file with other columns.
        fs::write(a.path(), "a,c\n1,2\n").unwrap();
        let mut other = Appender::<Row>::new(a.path().to_path_buf());
        assert!(other.append_existing(&[]).is_err());
    }

    #[test]
    fn a_log_is_read_behind_leading_columns() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log.csv");
        fs::write(&p, "b\n1.5\n\n").unwrap();
        let rows: Vec<Row> = read_log(&p, &[("a", "9".into())]).unwrap();
        assert_eq!(rows, [Row { a: 9, b: Some(1.5) }]);
        fs::write(&p, "b\nx\n").unwrap();
        let err = read_log::<Row>(&p, &[("a", "9".into())]).unwrap_err();
        assert!(format!("{err:#}").contains("line 2"), "{err:#}");
        assert!(
            read_log_optional::<Row>(&dir.path().join("none"), &[])
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn bad_rows_are_counted_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.csv");
        fs::write(&p, "b,a\n1.5,7\nx,8\n").unwrap();
        let parsed = read::<Row>(&p).unwrap();
        assert_eq!(parsed.rows, [Row { a: 7, b: Some(1.5) }]);
        assert_eq!(parsed.bad.len(), 1);
        assert!(parsed.bad[0].starts_with("line 3"), "{:?}", parsed.bad);
        assert!(read_all::<Row>(&p).is_err());
    }
}
