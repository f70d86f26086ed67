//! What a results directory says, computed from its rows alone (so a
//! directory's figures can be recomputed from its files): the original's
//! aggregation of runs into conditions, the cross-check's predicted and
//! observed verdicts, the buffer model, and where the bytes of a slow
//! response were at each instant. No processes, no sockets: rows in,
//! figures and rows out.
//!
//! # Layout
//! - [`aggregate`]: runs to conditions (median of runs, min and max of p95).
//! - [`crosscheck`]: the prediction rule and the replica check.
//! - [`model`]: the buffer model `B` and `model.csv`.
//! - [`whereabouts`]: where a slow response's bytes were (app, proxy,
//!   client queues) from the socket and gauge samples.
//! - [`select`]: picking a direction's conditions and a condition's runs.
//! - [`summaries`]: `conditions.csv` and `crosscheck.csv` of a directory.

pub mod aggregate;
pub mod crosscheck;
pub mod model;
pub mod select;
pub mod summaries;
pub mod whereabouts;
