//! The slowlab harness: the `slowlab` command line, and the verbs that run
//! whole experiments (`prepare`, `reproduce`, `report`, `sweep`).
//!
//! # Layout
//! - [`cli`]: the `slowlab` command and its subcommands.
//! - [`prepare`]: Gunicorn in a venv of ours, NGINX from Debian's package.
//! - [`stack`]: servers and routes, and how to start them.
//! - [`reproduce`]: the condition matrix, its runs and its figures.
//! - [`report`]: the HTML/Markdown report with its charts.
//! - [`results`]: every results file: its name and its row struct.
//! - [`sweep`]: rate sweeps to saturation, with and without slow clients.
//! - [`check`]: `slowlab check`, the capacity of a user's server against slow readers.
//! - [`sample`]: the ~200 ms sampler of every component.
//! - [`envinfo`]: what `environment.json` records.
//! - [`signals`]: Ctrl-C and SIGTERM.
//! - [`cgroup`]: per-component cgroups (v2, else v1), caps and counters.
//! - [`procfs`]: process trees, RSS, open temp files, TCP socket queues.
//! - [`sockdiag`]: every TCP socket of a network namespace through netlink
//!   `sock_diag`, with `tcp_info` and the buffers' sizes.
//! - [`sockets`]: the sockets of a component's namespace, from sock_diag
//!   or `/proc/net/tcp`.
//! - [`netns`]: the run's server and client network namespaces, their
//!   veth pair and `--sysctl`.
//! - [`process`]: child processes with process groups, parent-death signals
//!   and stop guards.

pub mod cgroup;
pub mod check;
pub mod cli;
pub mod envinfo;
pub mod merge;
pub mod model;
pub mod netns;
pub mod prepare;
pub mod process;
pub mod procfs;
pub mod report;
pub mod reproduce;
pub mod results;
pub mod sample;
pub mod scratch;
pub mod signals;
pub mod sockdiag;
pub mod sockets;
pub mod stack;
pub mod sweep;
