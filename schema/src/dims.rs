//! The condition cells beyond server, route, slow clients and direction
//! ([`DimCells`]), in one place: [`dim_row!`] defines a row struct with
//! them, so `runs.csv`, `conditions.csv`, `crosscheck.csv` and `model.csv`
//! carry the same cells with the same types, and `dims()`/`set_dims()`
//! move them between a row and a [`DimCells`]. (The csv crate cannot
//! serialise `serde(flatten)`, so the cells are fields of each row.)
//!
//! A cell is defined once, as an arm of [`dim_row!`] (its type, its
//! documentation, how it reads when empty); a row struct places each cell
//! with `@name,` where its column sits in that file. The columns of a file
//! are a stable, append-only contract and each file gained its own columns
//! at its own times, so the place of a cell is the one thing per file; a
//! row struct that leaves a cell out does not compile (`dims()` builds a
//! whole [`DimCells`] from the cells it placed). A new dimension: an arm
//! here, a `@name,` after the last field of each row struct, its book
//! column.

/// A row struct with the condition cells: its own fields, and `@cell,`
/// where each cell sits in its file (see the module). Generates `dims()`
/// and `set_dims()`.
macro_rules! dim_row {
    ($(#[$sm:meta])* $v:vis struct $name:ident { $($body:tt)* }) => {
        dim_row!(@munch [$(#[$sm])* $v struct $name] [] [] $($body)*);
    };
    // The first five cells, in their places.
    (@munch $head:tt [$($n:ident)*] [$($out:tt)*] @netns, $($rest:tt)*) => {
        dim_row!(@munch $head [$($n)* netns] [$($out)*
            /// Whether the run's components ran in the lab's network
            /// namespaces (`--netns`); empty in files of versions before it.
            #[serde(default)]
            pub netns: Option<bool>,
        ] $($rest)*);
    };
    (@munch $head:tt [$($n:ident)*] [$($out:tt)*] @sysctls, $($rest:tt)*) => {
        dim_row!(@munch $head [$($n)* sysctls] [$($out)*
            /// The run's `--sysctl`s as given, `;` between them; empty for
            /// none.
            #[serde(default)]
            pub sysctls: Option<String>,
        ] $($rest)*);
    };
    (@munch $head:tt [$($n:ident)*] [$($out:tt)*] @slow_kind, $($rest:tt)*) => {
        dim_row!(@munch $head [$($n)* slow_kind] [$($out)*
            /// How the slow clients were slow: `pace` or `link`; empty in
            /// files of versions before it.
            #[serde(default)]
            pub slow_kind: Option<String>,
        ] $($rest)*);
    };
    (@munch $head:tt [$($n:ident)*] [$($out:tt)*] @link, $($rest:tt)*) => {
        dim_row!(@munch $head [$($n)* link] [$($out)*
            /// The run's `--link` with its defaults filled in; empty
            /// without one.
            #[serde(default)]
            pub link: Option<String>,
        ] $($rest)*);
    };
    (@munch $head:tt [$($n:ident)*] [$($out:tt)*] @reader, $($rest:tt)*) => {
        dim_row!(@munch $head [$($n)* reader] [$($out)*
            /// The slow readers' model (`strict`, `streamreader`); empty in
            /// files of versions before it.
            #[serde(default)]
            pub reader: Option<String>,
        ] $($rest)*);
    };
    (@munch $head:tt [$($n:ident)*] [$($out:tt)*] @mtu, $($rest:tt)*) => {
        dim_row!(@munch $head [$($n)* mtu] [$($out)*
            /// The MTU of the path between the slow clients and the
            /// server: the lab's veths' in namespaces (`--mtu`, the
            /// condition's, else the veth's 1500), the host loopback's on
            /// the host (read from `/sys/class/net/lo/mtu` at the run);
            /// empty where not recorded (host runs of versions before the
            /// column, an unreadable loopback).
            #[serde(default)]
            pub mtu: Option<u32>,
        ] $($rest)*);
    };
    (@munch $head:tt [$($n:ident)*] [$($out:tt)*] @streams_per_conn, $($rest:tt)*) => {
        dim_row!(@munch $head [$($n)* streams_per_conn] [$($out)*
            /// How many of the slow downloads shared one connection as
            /// HTTP/2 streams (`slowlab load --streams-per-conn`); 1 on an
            /// HTTP/1 edge; empty (read as 1) in files of versions before
            /// it.
            #[serde(default)]
            pub streams_per_conn: Option<u32>,
        ] $($rest)*);
    };
    (@munch $head:tt [$($n:ident)*] [$($out:tt)*] @h2_window_bytes, $($rest:tt)*) => {
        dim_row!(@munch $head [$($n)* h2_window_bytes] [$($out)*
            /// The HTTP/2 stream window the slow readers advertised
            /// (`slowlab load --h2-window`); empty on an HTTP/1 edge.
            #[serde(default)]
            pub h2_window_bytes: Option<u32>,
        ] $($rest)*);
    };
    // One of the struct's own fields.
    (@munch $head:tt $n:tt [$($out:tt)*] $(#[$m:meta])* $fv:vis $f:ident : $t:ty, $($rest:tt)*) => {
        dim_row!(@munch $head $n [$($out)* $(#[$m])* $fv $f: $t,] $($rest)*);
    };
    (@munch [$($head:tt)*] $n:tt [$($out:tt)*]) => {
        $($head)* { $($out)* }
        dim_row!(@impl $n $($head)*);
    };
    (@impl [$($n:ident)*] $(#[$sm:meta])* $v:vis struct $name:ident) => {
        impl $name {
            /// The row's condition cells, empty ones read as older
            /// versions meant them.
            pub fn dims(&self) -> $crate::DimCells {
                $crate::DimCells {
                    $($n: ::std::clone::Clone::clone(&self.$n),)*
                }
                .normal()
            }

            /// Sets the row's condition cells.
            pub fn set_dims(&mut self, d: $crate::DimCells) {
                let $crate::DimCells { $($n),* } = d;
                $(self.$n = $n;)*
            }
        }
    };
}

dim_row! {
    /// The condition cells, as `runs.csv` records them per run and
    /// `conditions.csv`, `crosscheck.csv`, `model.csv` per condition: runs
    /// are grouped on all of them, so two cells of a grid are never
    /// averaged together. Empty cells of older files read as what those
    /// versions ran: the host's loopback, paced readers, veths at 1500.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct DimCells {
        @netns, @sysctls, @slow_kind, @link, @reader, @mtu,
        @streams_per_conn, @h2_window_bytes,
    }
}

use catalogue::preset::{BufferCell, Condition, Kind};
use catalogue::{Direction, ReaderModel, Route, Server};

impl DimCells {
    /// Empty cells as the versions that left them empty ran.
    pub fn normal(self) -> DimCells {
        let netns = self.netns.unwrap_or(false);
        DimCells {
            netns: Some(netns),
            sysctls: self.sysctls.filter(|s| !s.is_empty()),
            slow_kind: Some(self.slow_kind.unwrap_or_else(|| "pace".into())),
            link: self.link.filter(|s| !s.is_empty()),
            reader: self.reader.filter(|s| !s.is_empty()),
            // Namespaces before the `mtu` column ran at the veth's default;
            // host runs before it recorded no loopback MTU.
            mtu: self
                .mtu
                .or(netns.then_some(catalogue::net::VETH_DEFAULT_MTU)),
            // Every run before the column had a connection per download.
            streams_per_conn: Some(self.streams_per_conn.unwrap_or(1)),
            h2_window_bytes: self.h2_window_bytes,
        }
    }
}

/// A condition from the cells its rows record (`conditions.csv`,
/// `runs.csv`); none for a server, route or direction this version does
/// not know. Two conditions that differ only in a run-wide `--sysctl`
/// beyond the cell's keys (directories of different flags merged) map to
/// the same condition here; their rows stay apart in the files.
pub fn condition_of(
    server: Option<Server>,
    route: Option<Route>,
    slow: u32,
    direction: Option<Direction>,
    cells: &DimCells,
) -> Option<Condition> {
    Some(Condition {
        reader: cells.reader.as_deref().and_then(ReaderModel::from_name),
        buffers: BufferCell {
            mtu: cells.mtu,
            ..BufferCell::from_sysctls(cells.sysctls.as_deref())
        },
        kind: Kind::of_cells(
            cells.netns,
            cells.slow_kind.as_deref(),
            cells.link.as_deref(),
        ),
        streams_per_conn: cells.streams_per_conn.unwrap_or(1),
        // The default window is what a condition that names none ran
        // with, so that a planned condition and its rows read back alike.
        h2_window: cells
            .h2_window_bytes
            .filter(|&w| w != catalogue::condition::H2_DEFAULT_WINDOW),
        ..Condition::new(server?, route?, slow, direction?)
    })
}
