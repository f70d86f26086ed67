//! `slowlab generate`: what is written from the command line's own
//! definitions, so that it cannot disagree with `--help`: man pages
//! (`clap_mangen`), shell completions (`clap_complete`), and the book's
//! command reference (Markdown); and the command line of a packaged proxy
//! (Caddy, HAProxy) with the config the lab writes for one of its routes,
//! so that a benchmark or a user runs exactly what a run runs; and the
//! lab's TLS certificates (`common::tls`), fresh each time.
//!
//! The repository keeps one copy of each (`docs/man/`, `docs/completions/`,
//! `book/src/reference/commands.md`); a test fails when a copy is not what
//! this verb writes today, and says the command that renews it.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use catalogue::{ProxyKind, Route};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;

/// `slowlab generate` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct GenerateArgs {
    #[command(subcommand)]
    pub what: What,
}

/// What to generate.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum What {
    /// Man pages, one per verb (slowlab.1, slowlab-check.1, ...), into a
    /// directory: `slowlab generate man --out /usr/local/share/man/man1`.
    Man {
        /// Directory the pages are written to (created if missing).
        #[arg(long)]
        out: PathBuf,
    },
    /// The completion script of a shell, on stdout: `slowlab generate
    /// completions --shell bash > /etc/bash_completion.d/slowlab`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        #[arg(long, value_enum)]
        shell: Shell,
    },
    /// The book's command reference (Markdown), on stdout.
    Reference,
    /// The config the lab writes for a route of a proxy from Debian's
    /// packages (caddy, caddy-buf, caddy-reqbuf, haproxy, haproxy-reqbuf,
    /// varnish, varnish-reqbuf, apache, apache-buf, h2o, squid, squid-buf,
    /// ats, ats-buf, ats-reqbuf, apache-reqbuf),
    /// written into --dir, and the shell line that starts it as a run does
    /// (its environment, one process), on stdout: `slowlab generate
    /// proxy-config --route haproxy --listen 127.0.0.1:8080 --upstream
    /// 127.0.0.1:8000 --dir /tmp/haproxy`. Both addresses must be loopback.
    ProxyConfig {
        /// The route whose proxy and settings are written.
        #[arg(long, value_parser = packaged_route)]
        route: Route,
        /// Where the proxy listens.
        #[arg(long, value_parser = loopback_addr)]
        listen: SocketAddr,
        /// Where it forwards to.
        #[arg(long, value_parser = loopback_addr)]
        upstream: SocketAddr,
        /// Directory the config (and Caddy's state) is written to (created if
        /// missing).
        #[arg(long)]
        dir: PathBuf,
    },
    /// A fresh certificate authority and a server certificate for
    /// localhost, 127.0.0.1 and ::1, signed by it, as a run makes for a
    /// proxy that terminates TLS: ca.pem, cert.pem and key.pem (mode 0600)
    /// into --dir; give the proxy cert.pem and key.pem, and `slowlab load`
    /// --tls-ca ca.pem. The key is new each time and never leaves --dir.
    Certificate {
        /// Directory the files are written to (created if missing).
        #[arg(long)]
        dir: PathBuf,
    },
}

/// A route whose proxy comes from Debian's packages, NGINX aside.
fn packaged_route(s: &str) -> Result<Route, String> {
    let packaged: Vec<&str> = Route::ALL
        .iter()
        .filter(
            |r| matches!(r.proxy(), Some((k, _)) if k.needs().is_some() && k != ProxyKind::Nginx),
        )
        .map(|r| r.name())
        .collect();
    match s.parse::<Route>() {
        Ok(r) if packaged.contains(&r.name()) => Ok(r),
        _ => Err(format!(
            "`{s}` is not a route of a packaged proxy (expected one of {})",
            packaged.join(", ")
        )),
    }
}

/// An IP:port on 127.0.0.0/8 or ::1.
fn loopback_addr(s: &str) -> Result<SocketAddr, String> {
    let a: SocketAddr = s.parse().map_err(|_| format!("`{s}` is not an IP:port"))?;
    if common::loopback::is_loopback(a.ip()) {
        Ok(a)
    } else {
        Err(format!(
            "{a} is not a loopback address (127.0.0.0/8 or ::1)"
        ))
    }
}

/// Runs `slowlab generate`.
pub fn run(args: GenerateArgs) -> Result<()> {
    match args.what {
        What::Man { out } => {
            for (name, page) in man_pages()? {
                std::fs::create_dir_all(&out)
                    .with_context(|| format!("creating {}", out.display()))?;
                let path = out.join(name);
                std::fs::write(&path, page)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            Ok(())
        }
        What::Completions { shell } => {
            print!("{}", completions(shell));
            Ok(())
        }
        What::Reference => {
            print!("{}", reference());
            Ok(())
        }
        What::ProxyConfig {
            route,
            listen,
            upstream,
            dir,
        } => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            let dir = dir.canonicalize()?;
            let tools = lab::prepare::prepare(&lab::prepare::state_dir());
            // A TLS edge's proxy gets a fresh certificate in `dir/tls`.
            let certs = match route.edge().tls {
                true => {
                    let tls = dir.join("tls");
                    std::fs::create_dir_all(&tls)?;
                    Some(common::tls::LabCertificate::generate_into(&tls)?)
                }
                false => None,
            };
            let line = lab::stack::packaged::line(
                &tools,
                route,
                listen,
                upstream,
                &dir,
                &dir,
                certs.as_ref(),
            )?
            .context("not a packaged proxy's route")?;
            println!("{}", line.shell());
            Ok(())
        }
        What::Certificate { dir } => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            let files = common::tls::LabCertificate::generate_into(&dir)?;
            println!("{}", files.ca.display());
            Ok(())
        }
    }
}

/// Every visible verb of the command, in the order `--help` lists them.
fn verbs(cmd: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    cmd.get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
}

/// The man pages: `slowlab.1` and one per visible verb, by file name.
pub fn man_pages() -> Result<Vec<(String, Vec<u8>)>> {
    let mut cmd = Cli::command();
    cmd.build();
    let mut pages = Vec::new();
    let mut top = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut top)?;
    pages.push(("slowlab.1".to_string(), top));
    for verb in verbs(&cmd) {
        let name = format!("slowlab-{}", verb.get_name());
        let mut page = Vec::new();
        clap_mangen::Man::new(verb.clone().name(name.clone())).render(&mut page)?;
        pages.push((format!("{name}.1"), page));
    }
    Ok(pages)
}

/// The completion script for `shell`.
pub fn completions(shell: Shell) -> String {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "slowlab", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The book's command reference: each verb's whole `--help`.
pub fn reference() -> String {
    let mut cmd = Cli::command().term_width(100);
    cmd.build();
    let mut s = String::from(
        "# Commands\n\n\
         <!-- Written by `slowlab generate reference`; a test fails when it is not current. -->\n\n\
         Every verb's `--help`, as the binary prints it. The exit statuses are in\n\
         [Exit status](exit-status.md); the files the verbs write in\n\
         [Results files](results-files.md).\n\n",
    );
    let top = cmd.render_long_help().to_string();
    let _ = write!(s, "## slowlab\n\n```text\n{}\n```\n\n", top.trim_end());
    for verb in verbs(&cmd) {
        let help = verb.clone().render_long_help().to_string();
        let _ = write!(
            s,
            "## slowlab {}\n\n```text\n{}\n```\n\n",
            verb.get_name(),
            help.trim_end()
        );
    }
    s
}

/// The shells whose scripts the repository keeps.
pub const KEPT_SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

/// Where the repository keeps the completion script of `shell`.
pub fn kept_completion(root: &Path, shell: Shell) -> PathBuf {
    let name = match shell {
        Shell::Bash => "slowlab.bash".to_string(),
        Shell::Zsh => "_slowlab".to_string(),
        Shell::Fish => "slowlab.fish".to_string(),
        other => format!("slowlab.{other}"),
    };
    root.join("docs/completions").join(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_config_takes_packaged_routes_on_loopback_only() {
        assert_eq!(packaged_route("haproxy-reqbuf"), Ok(Route::HaproxyReqbuf));
        assert_eq!(packaged_route("caddy-buf"), Ok(Route::CaddyBuf));
        for bad in ["nginx-on", "pingora-off", "direct", "traefik"] {
            let e = packaged_route(bad).unwrap_err();
            assert!(e.contains("caddy, caddy-buf"), "{e}");
        }
        assert!(loopback_addr("127.0.0.1:80").is_ok() && loopback_addr("[::1]:80").is_ok());
        assert!(
            loopback_addr("10.0.0.1:80")
                .unwrap_err()
                .contains("not a loopback")
        );
        assert!(
            loopback_addr("localhost")
                .unwrap_err()
                .contains("not an IP:port")
        );
    }
}
