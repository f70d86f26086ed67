//! The external programs a stack may need and the version each is pinned
//! to: Python servers from PyPI into the lab's venv, proxies from Debian 12's
//! packages unpacked into the lab's directory. `slowlab prepare` installs
//! or finds exactly these; reports name them from here.

/// An external program a stack may need, found by `slowlab prepare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tool {
    Gunicorn,
    Nginx,
    Uvicorn,
    /// Gunicorn with the `uvicorn-worker` package.
    UvicornWorker,
    /// Gunicorn with gevent.
    Gevent,
    Waitress,
    Granian,
    /// Caddy 2.6, a reverse proxy (`reverse_proxy`).
    Caddy,
    /// HAProxy 2.6.
    Haproxy,
    /// Varnish 7.1 (it compiles its VCL with the system's C compiler).
    Varnish,
    /// Apache httpd 2.4 (`mod_proxy_http`, `mpm_event`).
    Apache,
    /// H2O 2.2.
    H2o,
    /// Squid 5.7, as a reverse proxy (`accel`).
    Squid,
    /// Apache Traffic Server 9.2.
    Trafficserver,
}

/// The pinned Gunicorn version of the experiment.
pub const GUNICORN_VERSION: &str = "23.0.0";

/// A Python server's package set: what `prepare` installs with pip, what
/// it imports to check it, and the program a run starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PyPin {
    /// The script in the venv's `bin/` that starts the server.
    pub program: &'static str,
    /// The module whose import proves the install works (a wheel with a
    /// native extension may install and still fail to load).
    pub import: &'static str,
    /// `(distribution, exact version)`: the server first, then the packages
    /// that carry its behaviour (the HTTP parser, the event library).
    pub packages: &'static [(&'static str, &'static str)],
}

/// A program from a Debian 12 package, used from `/usr` when the system
/// has it, else downloaded and unpacked into the lab's directory; never
/// installed system-wide, never started as a service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DebPin {
    /// The Debian package.
    pub package: &'static str,
    /// The upstream version Debian 12 ships, as the program reports it.
    pub version: &'static str,
    /// The program's path inside the package (and under `/`).
    pub binary: &'static str,
    /// The arguments that make it print its version (NGINX `-v`, Caddy
    /// `version`).
    pub version_args: &'static [&'static str],
    /// The packages it needs that a minimal Debian 12 lacks, unpacked
    /// beside it: shared libraries (HAProxy's Lua and OpenTracing wrapper),
    /// found through `LD_LIBRARY_PATH`, and data (Squid's error pages).
    pub libraries: &'static [&'static str],
}

/// Where a tool comes from and the version it is pinned to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pin {
    Python(PyPin),
    Debian(DebPin),
}

impl Tool {
    pub const ALL: [Tool; 14] = [
        Tool::Gunicorn,
        Tool::Nginx,
        Tool::Uvicorn,
        Tool::UvicornWorker,
        Tool::Gevent,
        Tool::Waitress,
        Tool::Granian,
        Tool::Caddy,
        Tool::Haproxy,
        Tool::Varnish,
        Tool::Apache,
        Tool::H2o,
        Tool::Squid,
        Tool::Trafficserver,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Tool::Gunicorn => "gunicorn",
            Tool::Nginx => "nginx",
            Tool::Uvicorn => "uvicorn",
            Tool::UvicornWorker => "uvicorn-worker",
            Tool::Gevent => "gevent",
            Tool::Waitress => "waitress",
            Tool::Granian => "granian",
            Tool::Caddy => "caddy",
            Tool::Haproxy => "haproxy",
            Tool::Varnish => "varnish",
            Tool::Apache => "apache",
            Tool::H2o => "h2o",
            Tool::Squid => "squid",
            Tool::Trafficserver => "trafficserver",
        }
    }

    /// Where it comes from, pinned.
    pub fn pin(self) -> Pin {
        let py = |program, import, packages| {
            Pin::Python(PyPin {
                program,
                import,
                packages,
            })
        };
        match self {
            Tool::Gunicorn => py("gunicorn", "gunicorn", &[("gunicorn", GUNICORN_VERSION)]),
            Tool::Nginx => Pin::Debian(DebPin {
                package: "nginx",
                version: "1.22.1",
                binary: "usr/sbin/nginx",
                version_args: &["-v"],
                libraries: &[],
            }),
            Tool::Caddy => Pin::Debian(DebPin {
                package: "caddy",
                version: "2.6.2",
                binary: "usr/bin/caddy",
                version_args: &["version"],
                libraries: &[],
            }),
            Tool::Haproxy => Pin::Debian(DebPin {
                package: "haproxy",
                version: "2.6.12",
                binary: "usr/sbin/haproxy",
                version_args: &["-v"],
                libraries: &[
                    "liblua5.3-0",
                    "libopentracing-c-wrapper0",
                    "libopentracing1",
                ],
            }),
            Tool::Varnish => Pin::Debian(DebPin {
                package: "varnish",
                version: "7.1.1",
                binary: "usr/sbin/varnishd",
                version_args: &["-V"],
                libraries: &["libvarnishapi3", "libjemalloc2"],
            }),
            // The server and its modules; the configuration package
            // (`apache2`, with /etc/apache2) is not needed, the lab writes
            // its own.
            Tool::Apache => Pin::Debian(DebPin {
                package: "apache2-bin",
                version: "2.4.71",
                binary: "usr/sbin/apache2",
                version_args: &["-v"],
                libraries: &["libapr1", "libaprutil1"],
            }),
            Tool::H2o => Pin::Debian(DebPin {
                package: "h2o",
                version: "2.2.5",
                binary: "usr/bin/h2o",
                version_args: &["--version"],
                // Optional in Debian: a minimal system may lack it.
                libraries: &["libyaml-0-2"],
            }),
            // Its error pages and data come with it (`squid-common`, whose
            // error directory links into `squid-langpack`).
            Tool::Squid => Pin::Debian(DebPin {
                package: "squid",
                version: "5.7",
                binary: "usr/sbin/squid",
                version_args: &["-v"],
                libraries: &[
                    "squid-common",
                    "squid-langpack",
                    "libecap3",
                    "libltdl7",
                    "libnetfilter-conntrack3",
                    "libnfnetlink0",
                ],
            }),
            // Debian's 9.2.5+ds-0+deb12u4 reports the upstream release its
            // security fixes come from.
            Tool::Trafficserver => Pin::Debian(DebPin {
                package: "trafficserver",
                version: "9.2.9",
                binary: "usr/bin/traffic_server",
                version_args: &["--version"],
                libraries: &["libhwloc15", "libmaxminddb0", "libpcre3", "libyaml-cpp0.7"],
            }),
            Tool::Uvicorn => py(
                "uvicorn",
                "uvicorn",
                &[("uvicorn", "0.54.0"), ("h11", "0.16.0"), ("click", "8.5.1")],
            ),
            Tool::UvicornWorker => py(
                "gunicorn",
                "uvicorn_worker",
                &[
                    ("uvicorn-worker", "0.4.0"),
                    ("gunicorn", GUNICORN_VERSION),
                    ("uvicorn", "0.54.0"),
                    ("h11", "0.16.0"),
                ],
            ),
            Tool::Gevent => py(
                "gunicorn",
                "gevent",
                &[
                    ("gevent", "26.9.0"),
                    ("gunicorn", GUNICORN_VERSION),
                    ("greenlet", "3.5.6"),
                ],
            ),
            Tool::Waitress => py("waitress-serve", "waitress", &[("waitress", "3.0.2")]),
            Tool::Granian => py("granian", "granian", &[("granian", "2.8.7")]),
        }
    }

    /// The Python pin, for a tool from PyPI.
    pub fn python(self) -> Option<PyPin> {
        match self.pin() {
            Pin::Python(p) => Some(p),
            Pin::Debian(_) => None,
        }
    }

    /// The Python servers beyond Gunicorn itself, each its own pip install.
    pub fn python_servers() -> impl Iterator<Item = Tool> {
        Tool::ALL
            .into_iter()
            .filter(|t| *t != Tool::Gunicorn && t.python().is_some())
    }

    /// The pinned version of the tool's own package (its first).
    pub fn version(self) -> &'static str {
        match self.pin() {
            Pin::Python(p) => p.packages[0].1,
            Pin::Debian(d) => d.version,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_python_pin_names_its_own_package_first_and_once() {
        for t in Tool::ALL {
            if let Some(p) = t.python() {
                assert!(!p.packages.is_empty(), "{} has no package", t.name());
                let mut names: Vec<&str> = p.packages.iter().map(|(d, _)| *d).collect();
                assert_eq!(names[0], t.name(), "{}'s own package comes first", t.name());
                names.sort();
                names.dedup();
                assert_eq!(
                    names.len(),
                    p.packages.len(),
                    "{} pins a package twice",
                    t.name()
                );
            }
        }
        let servers: Vec<Tool> = Tool::python_servers().collect();
        assert_eq!(
            servers,
            [
                Tool::Uvicorn,
                Tool::UvicornWorker,
                Tool::Gevent,
                Tool::Waitress,
                Tool::Granian
            ]
        );
        assert_eq!(Tool::Gunicorn.version(), "23.0.0");
        assert_eq!(Tool::Gevent.version(), "26.9.0");
    }
}
