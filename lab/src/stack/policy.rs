//! What every verb decides the same way before it starts a stack: which caps
//! the components get, and whether the machine has the tools a stack needs.

use std::fmt;

use crate::cgroup::{Caps, Mode};
use crate::prepare::Tools;

use catalogue::{Route, Server, Tool};

/// The caps per component.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct CapPlan {
    pub app: Option<Caps>,
    pub proxy: Option<Caps>,
    pub loadgen: Option<Caps>,
}

impl CapPlan {
    /// The original's: app 0.25 core / 128 MiB, proxy 0.20 / 96 MiB, load
    /// generator 0.20 / 128 MiB, period 10 ms.
    pub fn experiment() -> Self {
        CapPlan {
            app: Some(Caps::new(0.25, 128)),
            proxy: Some(Caps::new(
                0.20,
                catalogue::ProxyBuffers::EXPERIMENT_PROXY_MEMORY >> 20,
            )),
            loadgen: Some(Caps::new(0.20, 128)),
        }
    }

    pub fn none() -> Self {
        CapPlan {
            app: None,
            proxy: None,
            loadgen: None,
        }
    }
}

/// Whether the load generator is capped along with the stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadgenCaps {
    /// The original's 0.20 core / 128 MiB (a run of the matrix).
    Capped,
    /// Accounted in its cgroup but not capped (a rate sweep, which must
    /// measure the server, not a client starved of CPU).
    Uncapped,
}

/// Why the caps are what they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CapChoice {
    /// No usable cgroups: nothing can be capped or accounted.
    NoCgroups { reason: String },
    /// `--no-caps`: accounted only.
    NoCapsFlag,
    /// The original's caps.
    Experiment,
}

/// The cap policy of every verb: the original's caps where cgroups work,
/// none with `--no-caps` or without cgroups. Warns on stderr when the run
/// is uncapped for want of cgroups, which the user did not ask for.
pub fn cap_plan(mode: &Mode, no_caps: bool, loadgen: LoadgenCaps) -> (CapPlan, CapChoice) {
    match (mode, no_caps) {
        (Mode::None { reason }, _) => {
            eprintln!("slowlab: running UNCAPPED: no usable cgroups ({reason})");
            (
                CapPlan::none(),
                CapChoice::NoCgroups {
                    reason: reason.clone(),
                },
            )
        }
        (_, true) => (CapPlan::none(), CapChoice::NoCapsFlag),
        (_, false) => {
            let experiment = CapPlan::experiment();
            let plan = match loadgen {
                LoadgenCaps::Capped => experiment,
                LoadgenCaps::Uncapped => CapPlan {
                    loadgen: None,
                    ..experiment
                },
            };
            (plan, CapChoice::Experiment)
        }
    }
}

/// A tool a stack needs that this machine lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingTool {
    pub tool: Tool,
    /// The server or route that needs it.
    pub needed_by: String,
    /// Why it is not available (from `slowlab prepare`).
    pub why: String,
}

impl fmt::Display for MissingTool {
    /// `gunicorn is not available: <why>`, the reason of a skipped run.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is not available: {}", self.tool.name(), self.why)
    }
}

impl std::error::Error for MissingTool {}

/// The first tool that `server` behind `route` needs and this machine
/// lacks: the server's, then the proxy's.
pub fn missing_tool(tools: &Tools, server: Server, route: Route) -> Option<MissingTool> {
    let needs = [
        server.needs().map(|t| (t, server.to_string())),
        route
            .proxy()
            .and_then(|(kind, _)| kind.needs())
            .map(|t| (t, route.to_string())),
    ];
    needs.into_iter().flatten().find_map(|(tool, needed_by)| {
        tools.unavailable(tool).map(|why| MissingTool {
            tool,
            needed_by,
            why: why.to_string(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare::{DebPackage, Gunicorn};

    fn tools(gunicorn: bool, nginx: bool) -> Tools {
        let fail = |what: &str| format!("no {what} here");
        let mut t = Tools {
            gunicorn: gunicorn
                .then(|| Gunicorn {
                    gunicorn: "gunicorn".into(),
                    python: "python3".into(),
                    version: "23.0.0".into(),
                    python_version: "3.11".into(),
                })
                .ok_or_else(|| fail("gunicorn")),
            ..Tools::none(&fail("nginx"))
        };
        if nginx {
            let found = DebPackage {
                binary: "nginx".into(),
                version: "1.22.1".into(),
                package: None,
                source: "test".into(),
                root: "/".into(),
                library_path: None,
            };
            t.debian.insert(Tool::Nginx, Ok(found));
        }
        t
    }

    #[test]
    fn the_server_s_tool_is_named_first_then_the_proxy_s() {
        let none = tools(false, false);
        let m = missing_tool(&none, Server::GunicornSync2, Route::NginxOn).expect("missing");
        assert_eq!(m.tool, Tool::Gunicorn);
        assert_eq!(m.needed_by, "gunicorn-sync2");
        assert_eq!(m.to_string(), "gunicorn is not available: no gunicorn here");
        let m = missing_tool(&none, Server::RustSync2, Route::NginxOff).expect("missing");
        assert_eq!((m.tool, m.needed_by.as_str()), (Tool::Nginx, "nginx-off"));
        assert_eq!(m.to_string(), "nginx is not available: no nginx here");
        assert_eq!(
            missing_tool(&none, Server::RustAsync, Route::PingoraOn),
            None
        );
        let gunicorn_only = tools(true, false);
        assert_eq!(
            missing_tool(&gunicorn_only, Server::GunicornGthread4, Route::Direct),
            None
        );
        assert!(missing_tool(&gunicorn_only, Server::GunicornGthread4, Route::NginxOn).is_some());
        assert_eq!(
            missing_tool(&tools(true, true), Server::GunicornSync2, Route::NginxOn),
            None
        );
    }

    #[test]
    fn the_cap_policy_caps_only_where_cgroups_work_and_not_with_no_caps() {
        let none = Mode::None {
            reason: "read-only".into(),
        };
        for (no_caps, loadgen) in [(false, LoadgenCaps::Capped), (true, LoadgenCaps::Uncapped)] {
            let (plan, why) = cap_plan(&none, no_caps, loadgen);
            assert_eq!(plan, CapPlan::none());
            let reason = "read-only".to_string();
            assert_eq!(why, CapChoice::NoCgroups { reason });
        }
        let v2 = Mode::V2 {
            base: "/sys/fs/cgroup/slowlab-test".into(),
        };
        assert_eq!(
            cap_plan(&v2, true, LoadgenCaps::Capped),
            (CapPlan::none(), CapChoice::NoCapsFlag)
        );
        assert_eq!(
            cap_plan(&v2, false, LoadgenCaps::Capped),
            (CapPlan::experiment(), CapChoice::Experiment)
        );
        let (sweep, _) = cap_plan(&v2, false, LoadgenCaps::Uncapped);
        assert_eq!(sweep.app, CapPlan::experiment().app);
        assert_eq!(sweep.proxy, CapPlan::experiment().proxy);
        assert_eq!(sweep.loadgen, None);
    }
}
