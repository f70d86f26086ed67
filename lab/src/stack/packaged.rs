//! The command line of a proxy from Debian's packages (Caddy, HAProxy,
//! Varnish, Apache, H2O, Squid) on one route: its config written by
//! [`super::caddy`], [`super::haproxy`], [`super::varnish`],
//! [`super::apache`], [`super::h2o`] or [`super::squid`], its argv and
//! its environment. The launcher starts it from here, and
//! `slowlab generate proxy-config` prints it, so that a benchmark or a
//! user runs exactly what the lab runs.

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use catalogue::{ProxyKind, Route, Tool};

use super::{apache, caddy, h2o, haproxy, squid, varnish};
use crate::prepare::{Tools, unavailable_error};

/// A program, its arguments and the environment it needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl Line {
    /// As one shell line: `VAR=value ... program arg ...`, each word
    /// quoted where it needs it.
    pub fn shell(&self) -> String {
        let quote = |w: &str| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+".contains(c))
            {
                w.to_string()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        };
        self.env
            .iter()
            .map(|(k, v)| format!("{k}={}", quote(v)))
            .chain(std::iter::once(quote(&self.program.to_string_lossy())))
            .chain(self.args.iter().map(|a| quote(a)))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Writes the config of `route`'s packaged proxy listening on `listen` and
/// forwarding to `upstream` into `conf_dir` (its state, for Caddy, under
/// `scratch`), and gives its command line; `None` for a route whose proxy
/// is not a package (direct, pingora) or is NGINX (which the launcher
/// starts with its prefix and temp paths).
pub fn line(
    tools: &Tools,
    route: Route,
    listen: SocketAddr,
    upstream: SocketAddr,
    conf_dir: &Path,
    scratch: &Path,
) -> Result<Option<Line>> {
    let Some((kind, buffering)) = route.proxy() else {
        return Ok(None);
    };
    let request = route.request_body().is_some_and(|r| r.buffering);
    let deb = |tool: Tool| tools.deb(tool).map_err(|e| unavailable_error(tool, e));
    Ok(Some(match kind {
        ProxyKind::Nginx | ProxyKind::Pingora => return Ok(None),
        ProxyKind::Caddy => {
            let c = deb(Tool::Caddy)?;
            // Caddy's storage and config homes: the run's scratch, so
            // nothing is written to the user's home.
            let home = scratch.join("caddy");
            fs::create_dir_all(&home)?;
            let conf_path = conf_dir.join("Caddyfile");
            fs::write(
                &conf_path,
                caddy::config(listen, upstream, buffering, request, &home),
            )?;
            let home = home.to_string_lossy().to_string();
            Line {
                program: c.binary.clone(),
                args: vec![
                    "run".into(),
                    "--config".into(),
                    conf_path.to_string_lossy().into(),
                    "--adapter".into(),
                    "caddyfile".into(),
                ],
                env: vec![
                    ("GOMAXPROCS".into(), "1".into()),
                    ("HOME".into(), home.clone()),
                    ("XDG_DATA_HOME".into(), home.clone()),
                    ("XDG_CONFIG_HOME".into(), home),
                ],
            }
        }
        ProxyKind::Varnish => {
            let v = deb(Tool::Varnish)?;
            let instance = scratch.join("varnish");
            fs::create_dir_all(&instance)?;
            let vcl_path = conf_dir.join("default.vcl");
            fs::write(&vcl_path, varnish::vcl(upstream, request))?;
            // An unpacked package's VMODs (std) are not where varnishd
            // looks for them by default.
            let vmods = v
                .library_path
                .as_ref()
                .and_then(|p| std::env::split_paths(p).next())
                .map(|lib| lib.join("varnish/vmods"))
                .filter(|d| d.is_dir());
            Line {
                program: v.binary.clone(),
                args: varnish::args(listen, &instance, &vcl_path, vmods.as_deref()),
                env: v.env(),
            }
        }
        ProxyKind::Apache => {
            let a = deb(Tool::Apache)?;
            let run = scratch.join("apache");
            fs::create_dir_all(&run)?;
            // usr/sbin/apache2 -> usr/lib/apache2/modules, in the unpacked
            // package as under /.
            let modules = a
                .binary
                .parent()
                .and_then(Path::parent)
                .map(|usr| usr.join("lib/apache2/modules"))
                .context("apache2 is not in a usr/sbin directory")?;
            let conf_path = conf_dir.join("httpd.conf");
            fs::write(
                &conf_path,
                apache::config(listen, upstream, &modules, &run, buffering),
            )?;
            Line {
                program: a.binary.clone(),
                args: apache::args(&conf_path),
                env: a.env(),
            }
        }
        ProxyKind::H2o => {
            let h = deb(Tool::H2o)?;
            let temp = scratch.join("h2o");
            fs::create_dir_all(&temp)?;
            let conf_path = conf_dir.join("h2o.conf");
            fs::write(&conf_path, h2o::config(listen, upstream, &temp))?;
            Line {
                program: h.binary.clone(),
                args: vec!["-c".into(), conf_path.to_string_lossy().into()],
                env: h.env(),
            }
        }
        ProxyKind::Squid => {
            let q = deb(Tool::Squid)?;
            // usr/sbin/squid -> the package's tree, or / for the system's.
            let root = q
                .binary
                .ancestors()
                .nth(3)
                .context("squid is not in a usr/sbin directory")?
                .to_path_buf();
            let state = squid_state(scratch)?;
            let conf_path = conf_dir.join("squid.conf");
            fs::write(
                &conf_path,
                squid::config(listen, upstream, &root, &state, buffering),
            )?;
            Line {
                program: q.binary.clone(),
                args: squid::args(&conf_path),
                env: q.env(),
            }
        }
        ProxyKind::Haproxy => {
            let h = deb(Tool::Haproxy)?;
            let conf_path = conf_dir.join("haproxy.cfg");
            fs::write(&conf_path, haproxy::config(listen, upstream, request))?;
            // -db: in the foreground, as the lab's child.
            Line {
                program: h.binary.clone(),
                args: vec![
                    "-db".into(),
                    "-f".into(),
                    conf_path.to_string_lossy().into(),
                ],
                env: h.env(),
            }
        }
    }))
}

/// Squid's state directory in `scratch`, owned by the user Squid drops
/// root to ([`squid::USER`]), which may pass through the directories
/// above it up to the system's temp directory, where slowlab's scratch
/// directories are (they get the search bit, 0711: that user may not list
/// them).
fn squid_state(scratch: &Path) -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let passwd = fs::read_to_string("/etc/passwd").context("reading /etc/passwd")?;
    let (uid, gid) = squid::ids(&passwd, squid::USER).with_context(|| {
        format!(
            "Squid drops root to the user {}, which this system does not have",
            squid::USER
        )
    })?;
    let state = scratch.join("squid");
    fs::create_dir_all(&state)?;
    std::os::unix::fs::chown(&state, Some(uid), Some(gid))
        .with_context(|| format!("giving {} to {}", state.display(), squid::USER))?;
    let temp = std::env::temp_dir();
    for dir in state
        .ancestors()
        .skip(1)
        .take_while(|d| d.starts_with(&temp) && *d != temp.as_path())
    {
        let mode = fs::metadata(dir)?.permissions().mode();
        fs::set_permissions(dir, fs::Permissions::from_mode(mode | 0o011))?;
    }
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_quoted_for_the_shell() {
        let l = Line {
            program: "/usr/sbin/haproxy".into(),
            args: vec!["-f".into(), "/tmp/a b/haproxy.cfg".into()],
            env: vec![("LD_LIBRARY_PATH".into(), "/x/usr/lib:/y".into())],
        };
        assert_eq!(
            l.shell(),
            "LD_LIBRARY_PATH=/x/usr/lib:/y /usr/sbin/haproxy -f '/tmp/a b/haproxy.cfg'"
        );
    }
}
