//! How numbers are written into the cells of a results file: a fixed
//! number of decimals per column (declared on the row struct with
//! `#[serde(serialize_with = "cell::d3")]`), an empty cell for a missing
//! value, never a zero.

use serde::Serializer;

/// A number written with a fixed number of decimals.
pub trait Decimal {
    fn write<S: Serializer>(&self, decimals: usize, s: S) -> Result<S::Ok, S::Error>;
}

impl Decimal for f64 {
    fn write<S: Serializer>(&self, decimals: usize, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{self:.decimals$}"))
    }
}

impl Decimal for Option<f64> {
    fn write<S: Serializer>(&self, decimals: usize, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Some(v) => v.write(decimals, s),
            None => s.serialize_none(),
        }
    }
}

macro_rules! decimals {
    ($($f:ident = $d:literal),+) => {$(
        #[doc = concat!("Writes a number with ", stringify!($d), " decimals.")]
        pub fn $f<T: Decimal, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
            v.write($d, s)
        }
    )+};
}

decimals!(d0 = 0, d1 = 1, d2 = 2, d3 = 3, d4 = 4, d6 = 6);

/// Writes a number as Rust's `Display` does: `50` for 50.0, any fraction
/// kept (the load generator's demanded rates).
pub fn plain<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// `yes`, `no`, or an empty cell.
pub mod yes_no {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<bool>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(true) => s.serialize_str("yes"),
            Some(false) => s.serialize_str("no"),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
        let s: Option<String> = Option::deserialize(d)?;
        Ok(match s.as_deref().map(str::trim) {
            Some("yes") => Some(true),
            Some("no") => Some(false),
            _ => None,
        })
    }
}
