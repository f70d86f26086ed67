//! What the slowlab crates' tests share, so that no test file writes its
//! own: a child guard that drains a program's output and kills its
//! process group when dropped ([`child`]), one HTTP/1.1 client for raw
//! exchanges ([`http`]), scripted fake servers ([`fake`]), CSV files read
//! by column name ([`table`]), the workspace's paths ([`paths`]), and the
//! real-stack tier's requirements ([`real`]): a missing tool or privilege
//! fails a real-stack test with one line naming it, never a silent pass.
//!
//! A dev-dependency only: nothing here runs in `slowlab`.

pub mod child;
pub mod fake;
pub mod http;
pub mod paths;
pub mod procs;
pub mod real;
pub mod table;

pub use child::{Child, Outcome};
pub use http::{Reply, exchange, get, request_with_body};
pub use table::Table;
