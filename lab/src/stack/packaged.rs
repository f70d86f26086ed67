//! The command line of a proxy from Debian's packages (Caddy, HAProxy,
//! Varnish, Apache, H2O, Squid, Traffic Server) on one route: its config
//! written by [`super::caddy`], [`super::haproxy`], [`super::varnish`],
//! [`super::apache`], [`super::h2o`], [`super::squid`] or
//! [`super::trafficserver`], its argv and its environment. The launcher starts it from here, and
//! `slowlab generate proxy-config` prints it, so that a benchmark or a
//! user runs exactly what the lab runs.

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use catalogue::{ProxyKind, Route, Tool};
use common::tls::CertFiles;

use super::edge::TlsListen;
use super::{apache, caddy, h2o, haproxy, squid, trafficserver, varnish};
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
/// starts with its prefix and temp paths). At a TLS edge `certs` are the
/// run's certificate and key, which the config names where they are.
pub fn line(
    tools: &Tools,
    route: Route,
    listen: SocketAddr,
    upstream: SocketAddr,
    conf_dir: &Path,
    scratch: &Path,
    certs: Option<&CertFiles>,
) -> Result<Option<Line>> {
    let Some((kind, buffering)) = route.proxy() else {
        return Ok(None);
    };
    let tls = TlsListen::of(route.edge(), certs);
    if route.edge().tls && tls.is_none() {
        bail!("{route} terminates TLS: it needs the run's certificate");
    }
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
                caddy::config(listen, upstream, buffering, request, tls, &home),
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
            // looks for them by default: in its tree's
            // usr/lib/<triplet>/varnish/vmods.
            let vmods = (v.root != Path::new("/"))
                .then(|| fs::read_dir(v.root.join("usr/lib")).ok())
                .flatten()
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path().join("varnish/vmods"))
                .find(|d| d.is_dir());
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
            // In the unpacked package as under /.
            let modules = a.root.join("usr/lib/apache2/modules");
            // Where it spools request bodies: the proxy's temp directory,
            // whose size a run samples; its child, www-data, writes there.
            let tmp = reachable(scratch, "proxy-temp", None, 0o1777)?;
            let conf_path = conf_dir.join("httpd.conf");
            fs::write(
                &conf_path,
                apache::config(listen, upstream, &modules, &run, buffering, request, tls),
            )?;
            let mut env = a.env();
            env.push(("TMPDIR".into(), tmp.to_string_lossy().into()));
            Line {
                program: a.binary.clone(),
                args: apache::args(&conf_path),
                env,
            }
        }
        ProxyKind::H2o => {
            let h = deb(Tool::H2o)?;
            // Its temp buffers (unlinked as soon as made) in the proxy's
            // temp directory.
            let temp = scratch.join("proxy-temp");
            fs::create_dir_all(&temp)?;
            let conf_path = conf_dir.join("h2o.conf");
            fs::write(&conf_path, h2o::config(listen, upstream, &temp, tls))?;
            Line {
                program: h.binary.clone(),
                args: vec!["-c".into(), conf_path.to_string_lossy().into()],
                env: h.env(),
            }
        }
        ProxyKind::Squid => {
            let q = deb(Tool::Squid)?;
            let root = &q.root;
            let passwd = fs::read_to_string("/etc/passwd").context("reading /etc/passwd")?;
            let owner = squid::ids(&passwd, squid::USER).with_context(|| {
                format!(
                    "Squid drops root to the user {}, which this system does not have",
                    squid::USER
                )
            })?;
            let state = reachable(scratch, "squid", Some(owner), 0o755)?;
            let conf_path = conf_dir.join("squid.conf");
            fs::write(
                &conf_path,
                squid::config(listen, upstream, root, &state, buffering),
            )?;
            Line {
                program: q.binary.clone(),
                args: squid::args(&conf_path),
                env: q.env(),
            }
        }
        ProxyKind::Trafficserver => {
            let t = deb(Tool::Trafficserver)?;
            let root = &t.root;
            let state = scratch.join("trafficserver");
            fs::create_dir_all(&state)?;
            for (name, text) in
                trafficserver::files(listen, upstream, root, buffering, request, tls)
            {
                fs::write(conf_dir.join(name), text)?;
            }
            let runroot = conf_dir.join("runroot.yaml");
            fs::write(
                &runroot,
                trafficserver::runroot(root, &std::path::absolute(conf_dir)?, &state),
            )?;
            let mut env = t.env();
            env.push(("TS_RUNROOT".into(), runroot.to_string_lossy().into()));
            Line {
                program: t.binary.clone(),
                args: Vec::new(),
                env,
            }
        }
        ProxyKind::Haproxy => {
            let h = deb(Tool::Haproxy)?;
            let conf_path = conf_dir.join("haproxy.cfg");
            // `crt` takes the certificate and its key in one file: beside
            // the key, private as it is.
            let pem = match tls {
                Some(t) => Some(pem_bundle(t)?),
                None => None,
            };
            let tls = tls.zip(pem.as_deref()).map(|(t, pem)| TlsListen {
                cert: pem,
                key: pem,
                ..t
            });
            fs::write(&conf_path, haproxy::config(listen, upstream, request, tls))?;
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

/// The certificate and key of `t` in one PEM file beside the key (mode
/// 0600), as HAProxy's `crt` takes them.
fn pem_bundle(t: TlsListen<'_>) -> Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = t.key.with_file_name("cert-and-key.pem");
    let mut text = fs::read(t.cert).with_context(|| format!("reading {}", t.cert.display()))?;
    text.extend(fs::read(t.key).with_context(|| format!("reading {}", t.key.display()))?);
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .and_then(|mut f| f.write_all(&text))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// A directory `name` in `scratch` for a proxy that drops root
/// (Squid's state, owned by its user; Apache's temp files, mode 1777):
/// with `mode`, owned by `owner` when given, and reachable by any user
/// through the directories above it up to the system's temp directory,
/// where slowlab's scratch directories are (they get the search bit,
/// 0711: other users may not list them).
fn reachable(scratch: &Path, name: &str, owner: Option<(u32, u32)>, mode: u32) -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch.join(name);
    fs::create_dir_all(&dir)?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
            .with_context(|| format!("giving {} to uid {uid}", dir.display()))?;
    }
    fs::set_permissions(&dir, fs::Permissions::from_mode(mode))?;
    let temp = std::env::temp_dir();
    for above in dir
        .ancestors()
        .skip(1)
        .take_while(|d| d.starts_with(&temp) && *d != temp.as_path())
    {
        let m = fs::metadata(above)?.permissions().mode();
        fs::set_permissions(above, fs::Permissions::from_mode(m | 0o011))?;
    }
    Ok(dir)
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
