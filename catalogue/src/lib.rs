//! The catalogue: what the lab knows, with no I/O. Every server and proxy
//! the lab can run is one entry here (what it is, how it blocks or
//! buffers, the version it is pinned to), and so is every route, direction,
//! preset and published figure. A new server, proxy, route or direction is
//! added here, once; the lab launches it by the entry, the results name it
//! by it, the report describes it from it.
//!
//! # Layout
//! - [`names`]: closed sets of names with a canonical spelling ([`Name`]),
//!   a name read from a file ([`Named`]), and the small vocabularies:
//!   components, statuses, verdicts, directions.
//! - [`server`]: the servers ([`Server`]), how each is started
//!   ([`Recipe`]) and its handler model.
//! - [`route`]: the routes ([`Route`]), their proxies ([`ProxyKind`]) and
//!   buffering, the experiment's proxy buffers ([`ProxyBuffers`]).
//! - [`tool`]: the external programs and their pins ([`Tool`]).
//! - [`net`]: the network a run asks for ([`NetSpec`]): sides, sysctls,
//!   shaped links, MTU.
//! - [`reader`]: the slow readers' models ([`ReaderModel`]).
//! - [`preset`]: the presets and the plan of runs.
//! - [`condition`]: one cell of the matrix and its run's network.
//! - [`profile`]: the load of a run.
//! - [`filter`]: the `--only` filter.
//! - [`cells`]: a condition's buffer cell and slow-client kind.
//! - [`published`]: the original's figures.

pub mod cells;
pub mod condition;
pub mod filter;
pub mod names;
pub mod net;
pub mod preset;
pub mod profile;
pub mod published;
pub mod reader;
pub mod route;
pub mod server;
pub mod tool;

pub use names::{
    CapsMode, CapsName, Check, CheckName, Component, ComponentName, Direction, DirectionName, Name,
    Named, RunStatus, StatusName, Verdict, VerdictName, parse_known,
};
pub use net::{Link, NetSpec, Per, Side, SlowKind, Sysctl};
pub use preset::{Body, Condition, LoadProfile, Preset, RunSpec};
pub use reader::ReaderModel;
pub use route::{Edge, ProxyBuffers, ProxyKind, RequestBody, Route, RouteName};
pub use server::{Model, PyServer, Recipe, Server, ServerName};
pub use tool::Tool;
