//! The command line of a verb the harness starts as a child process of the
//! `slowlab` binary, written by the `to_args` beside each child's clap
//! struct, so a renamed flag fails a unit test and a renamed field fails to
//! compile. The binary's own test parses what [`Child::argv`] writes.

use std::ffi::OsString;

/// A verb the harness runs as a child process of the `slowlab` binary, with
/// the arguments the child will parse.
#[derive(Debug, Clone, PartialEq)]
pub enum Child {
    Serve(server::ServeArgs),
    Proxy(proxy::ProxyArgs),
    Load(loadgen::LoadArgs),
    SweepLoad(loadgen::sweep::SweepLoadArgs),
}

impl Child {
    /// The arguments after the program name: the subcommand of the `slowlab`
    /// command,
    /// then the flags of its args struct's `to_args`.
    pub fn argv(&self) -> Vec<OsString> {
        let (verb, flags) = match self {
            Child::Serve(a) => ("serve", a.to_args()),
            Child::Proxy(a) => ("proxy", a.to_args()),
            Child::Load(a) => ("load", a.to_args()),
            Child::SweepLoad(a) => ("sweep-load", a.to_args()),
        };
        std::iter::once(OsString::from(verb)).chain(flags).collect()
    }
}
