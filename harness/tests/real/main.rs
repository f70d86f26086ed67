//! The real-stack tier: tests with real Gunicorn, NGINX and the Python
//! servers, network namespaces, cgroups, `tc` and Chromium, in one test
//! binary whose tests run one at a time (`scripts/test` runs it with
//! `--test-threads=1`, and each test's parts would load each other's
//! measurements otherwise). Its target has `test = false`, so `cargo
//! test` alone is the fast tier and `cargo test -p harness --test real`
//! runs this one. A missing tool or privilege fails
//! a test here with one line naming it (`testkit::real`).

#[path = "../support/mod.rs"]
mod support;

mod apache;
mod caddy;
mod cgroups;
mod check_cli;
mod full_disk;
mod h2o;
mod haproxy;
mod link;
mod model_direct;
mod net_presets;
mod netns;
mod nginx_reqbuf;
mod packaged;
mod prepare_cli;
mod python_servers;
mod reader_models;
mod report_browser;
mod reproduce_h2;
mod reproduce_headers;
mod reproduce_quick;
mod reproduce_sigkill;
mod reproduce_upload;
mod sockdiag;
mod squid;
mod sweep_cli;
mod through_cmd;
mod tls_edges;
mod trafficserver;
mod upload_cli;
mod varnish;
mod wsgi_identity;
