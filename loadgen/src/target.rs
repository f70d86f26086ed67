//! The `--target` URL: parsing, resolution and the loopback-only policy.
//!
//! A load test pointed at the wrong host is an attack on someone else's
//! server, so the policy is checked after resolving the name and before any
//! socket exists: a refused target never sees a single packet.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// Why a target URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("`{0}` is not an http:// or https:// URL")]
    NotHttp(String),
    #[error("`{url}` is not a usable URL: {why}")]
    BadUrl { url: String, why: &'static str },
    #[error("cannot resolve `{host}`: {why}")]
    Resolve { host: String, why: String },
    #[error(
        "refusing target `{host}` ({addr}): it is outside 127.0.0.0/8 and ::1; pass --allow-remote if you really mean to load that host"
    )]
    Remote { host: String, addr: IpAddr },
}

/// The parts of a URL we use, before resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedUrl {
    /// `host[:port]` exactly as written, for the `Host` header.
    pub authority: String,
    /// The host without brackets.
    pub host: String,
    pub port: u16,
    /// Path prefix without a trailing slash (`""` for none).
    pub base_path: String,
    /// `https://`: the load speaks TLS (`crate::edge`).
    pub tls: bool,
}

/// A resolved target that passed the policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub url: String,
    pub parsed: ParsedUrl,
    pub addr: SocketAddr,
}

impl Target {
    /// Resolves `url` and applies the loopback policy.
    pub fn resolve(url: &str, allow_remote: bool) -> Result<Target, TargetError> {
        let parsed = parse_url(url)?;
        let addrs: Vec<SocketAddr> = (parsed.host.as_str(), parsed.port)
            .to_socket_addrs()
            .map_err(|e| TargetError::Resolve {
                host: parsed.host.clone(),
                why: e.to_string(),
            })?
            .collect();
        let addr = check_policy(&parsed.host, &addrs, allow_remote)?;
        Ok(Target {
            url: url.to_string(),
            parsed,
            addr,
        })
    }

    /// The request path for `path` under the URL's base path.
    pub fn path(&self, path: &str) -> String {
        format!("{}{}", self.parsed.base_path, path)
    }
}

pub use common::loopback::{is_allowed, is_loopback};

/// Picks the address to use: the first one, provided every address the name
/// resolves to is loopback or the lab's range inside a lab namespace
/// (`common::loopback::is_allowed`), or remote targets are allowed.
pub fn check_policy(
    host: &str,
    addrs: &[SocketAddr],
    allow_remote: bool,
) -> Result<SocketAddr, TargetError> {
    let first = *addrs.first().ok_or_else(|| TargetError::Resolve {
        host: host.to_string(),
        why: "no addresses".to_string(),
    })?;
    if !allow_remote {
        if let Some(remote) = addrs.iter().find(|a| !is_allowed(a.ip())) {
            return Err(TargetError::Remote {
                host: host.to_string(),
                addr: remote.ip(),
            });
        }
    }
    Ok(first)
}

/// Parses `http[s]://host[:port][/base]`.
pub fn parse_url(url: &str) -> Result<ParsedUrl, TargetError> {
    let bad = |why| TargetError::BadUrl {
        url: url.to_string(),
        why,
    };
    let (tls, rest) = match url.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => (false, rest),
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => (true, rest),
        Some(_) => return Err(TargetError::NotHttp(url.to_string())),
        None => return Err(bad("expected http://host:port")),
    };
    if rest.contains(['?', '#']) {
        return Err(bad("a query or fragment makes no sense here"));
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    if authority.contains('@') {
        return Err(bad("user information is not supported"));
    }
    if path.contains(|c: char| c.is_ascii_control() || c == ' ') {
        return Err(bad("the path contains spaces or control characters"));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']').ok_or_else(|| bad("unclosed `[`"))?;
        match after {
            "" => (host, None),
            p => (
                host,
                Some(p.strip_prefix(':').ok_or_else(|| bad("junk after `]`"))?),
            ),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let port = match port {
        None if tls => 443,
        None => 80,
        Some(p) => p.parse().map_err(|_| bad("the port is not a number"))?,
    };
    Ok(ParsedUrl {
        authority: authority.to_string(),
        host: host.to_string(),
        port,
        base_path: path.trim_end_matches('/').to_string(),
        tls,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_usual_shapes() {
        let p = parse_url("http://127.0.0.1:8000").expect("parses");
        assert_eq!((p.host.as_str(), p.port), ("127.0.0.1", 8000));
        assert_eq!(p.authority, "127.0.0.1:8000");
        assert_eq!(p.base_path, "");
        let p = parse_url("http://localhost/").expect("parses");
        assert_eq!(
            (p.host.as_str(), p.port, p.base_path.as_str()),
            ("localhost", 80, "")
        );
        let p = parse_url("HTTP://[::1]:9000/app/").expect("parses");
        assert_eq!((p.host.as_str(), p.port), ("::1", 9000));
        assert_eq!(
            (p.authority.as_str(), p.base_path.as_str()),
            ("[::1]:9000", "/app")
        );
    }

    #[test]
    fn refuses_what_it_cannot_use() {
        assert!(matches!(
            parse_url("ftp://127.0.0.1"),
            Err(TargetError::NotHttp(_))
        ));
        let p = parse_url("https://127.0.0.1").expect("https");
        assert_eq!((p.port, p.tls), (443, true));
        assert!(!parse_url("http://127.0.0.1").expect("http").tls);
        assert!(matches!(
            parse_url("127.0.0.1:80"),
            Err(TargetError::BadUrl { .. })
        ));
        for url in [
            "http://",
            "http://:80",
            "http://h:port",
            "http://[::1",
            "http://u@127.0.0.1",
            "http://127.0.0.1/a b",
            "http://127.0.0.1/?q",
        ] {
            assert!(
                matches!(parse_url(url), Err(TargetError::BadUrl { .. })),
                "{url}"
            );
        }
    }

    #[test]
    fn loopback_policy() {
        let lo: SocketAddr = "127.0.0.2:80".parse().expect("addr");
        let v6: SocketAddr = "[::1]:80".parse().expect("addr");
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:80".parse().expect("addr");
        let remote: SocketAddr = "192.0.2.1:80".parse().expect("addr");
        assert_eq!(check_policy("h", &[lo, v6, mapped], false), Ok(lo));
        assert!(matches!(
            check_policy("h", &[lo, remote], false),
            Err(TargetError::Remote { .. })
        ));
        assert_eq!(check_policy("h", &[remote], true), Ok(remote));
        assert!(check_policy("h", &[], true).is_err());
        assert!(!is_loopback("0.0.0.0".parse().expect("ip")));
    }

    #[test]
    fn resolve_refuses_remote_addresses_before_connecting() {
        let err = Target::resolve("http://192.0.2.1:80", false).expect_err("refused");
        assert!(err.to_string().contains("--allow-remote"), "{err}");
        let ok = Target::resolve("http://127.0.0.1:1/base", false).expect("loopback");
        assert_eq!(ok.path("/fast"), "/base/fast");
    }
}
