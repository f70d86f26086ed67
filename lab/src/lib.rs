//! The lab: everything that touches the machine to run a stack and
//! measure it. Child processes in their own process groups and cgroups,
//! network namespaces with shaped links and their own sysctls, the socket
//! tables through `sock_diag`, procfs, the ~200 ms sampler, the tools
//! `slowlab prepare` installs, and the one lifecycle of a run
//! ([`stack::run`]). What it starts is described by the catalogue; what it
//! measures goes into the `schema` crate's rows.
//!
//! # Layout
//! - [`stack`]: a stack's app and route, launching them, one run's
//!   lifecycle.
//! - [`child`]: the command line of a `slowlab` child (`serve`, `proxy`,
//!   `load`, `sweep-load`).
//! - [`process`]: child processes with process groups, parent-death
//!   signals and stop guards; [`capture`]: their output, kept in files up
//!   to a bound.
//! - [`cgroup`]: per-component cgroups (v2, else v1), caps and counters.
//! - [`netns`]: the run's server and client network namespaces, their
//!   veth pairs, links and sysctls.
//! - [`sockdiag`]: every TCP socket of a namespace through netlink
//!   `sock_diag`, with `tcp_info` and the buffers' sizes.
//! - [`sockets`]: the sockets of a component's namespace, from sock_diag
//!   or `/proc/net/tcp`.
//! - [`procfs`]: process trees, RSS, open temp files, host CPU.
//! - [`sample`]: the ~200 ms sampler of every component.
//! - [`prepare`]: the tools the catalogue pins, found or installed.
//! - [`envinfo`]: what `environment.json` records.
//! - [`scratch`]: scratch directories named after their harness's pid.
//! - [`reap`]: what a harness that was killed left behind, found by the
//!   pid in its name and removed at the next start.
//! - [`signals`]: Ctrl-C and SIGTERM.

pub mod capture;
pub mod cgroup;
pub mod child;
pub mod envinfo;
pub mod netns;
pub mod prepare;
pub mod process;
pub mod procfs;
pub mod reap;
pub mod sample;
pub mod scratch;
pub mod signals;
pub mod sockdiag;
pub mod sockets;
pub mod stack;
