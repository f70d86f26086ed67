//! The routes of the lab: how the load generator reaches the server
//! (direct, or through a proxy with its buffering), and the proxies'
//! buffer settings. One entry per route: a [`Route`] variant and its arms
//! here; one per proxy: a [`ProxyKind`] variant.

use std::fmt;
use std::str::FromStr;

use crate::names::{Direction, Name, Named, parse_known};
use crate::tool::Tool;

/// How the load generator reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Route {
    Direct,
    NginxOff,
    NginxOn,
    PingoraOff,
    PingoraOn,
    /// The request direction: `proxy_request_buffering on|off` with
    /// response buffering on (NGINX's default), so that only the handling
    /// of request bodies differs between the two.
    NginxReqbufOn,
    NginxReqbufOff,
    PingoraReqbufOn,
    PingoraReqbufOff,
    /// Caddy 2.6 `reverse_proxy` as configured by default: the response
    /// and the request body streamed through a 32 KiB buffer
    /// (`modules/caddyhttp/reverseproxy/streaming.go`:169-188, 366).
    Caddy,
    /// Caddy with `buffer_responses`: the whole response read into memory
    /// before the first byte goes to the client, no size limit without
    /// `max_buffer_size` (`reverseproxy.go`:145-149, 856-858, 1128-1148).
    CaddyBuf,
    /// Caddy with `buffer_requests`: the whole request body read into
    /// memory before the upstream request (`reverseproxy.go`:139-143,
    /// 625-627); the response streamed as by default.
    CaddyReqbuf,
    /// HAProxy 2.6 as configured by default (`mode http`, one thread): the
    /// response and the request body forwarded through one `tune.bufsize`
    /// buffer per direction (16 KiB) as they arrive; HAProxy has no
    /// setting that buffers a whole response, so none of its routes does.
    Haproxy,
    /// HAProxy with `option http-buffer-request`: it waits "until either
    /// the whole body is received or the request buffer is full" before
    /// it connects upstream (configuration.txt, `option
    /// http-buffer-request`), so a body larger than the buffer (16 KiB less
    /// `tune.maxrewrite`) is forwarded at the client's pace after all.
    HaproxyReqbuf,
    /// Varnish 7.1 with `return (pass)` in `vcl_recv` (nothing cached):
    /// its fetch reads the backend's response into Transient storage, in
    /// memory and without limit, as fast as the backend sends it, and the
    /// client is served from there (`beresp.do_stream`, true by default:
    /// "deliver the object to the client while fetching the whole object
    /// into varnish", `doc/sphinx/reference/vcl-var.rst`); the request body
    /// streams to the backend.
    Varnish,
    /// Varnish with `std.cache_req_body(32MB)` in `vcl_recv`: the whole
    /// request body, up to 32 MiB, read into memory before the backend
    /// request (`vmod_std.vcc`, `cache_req_body`).
    VarnishReqbuf,
    /// Apache httpd 2.4 (`mpm_event`, `mod_proxy_http`) with its defaults:
    /// the response goes through the core output filter, which writes
    /// blocking once more than `FlushMaxThreshold` (65,535 bytes) waits
    /// for the client (`server/core_filters.c`:376-381, 411;
    /// `include/http_core.h`:92), so the handler and its upstream
    /// connection wait for the slow client; a request body with a
    /// Content-Length streams upstream (`RB_STREAM_CL`) once its first
    /// 16 KiB are prefetched (`modules/proxy/mod_proxy_http.c`:285,
    /// 541-544, 611-618), without limit: `LimitRequestBody` does not apply
    /// to a reverse-proxied request (`modules/http/http_filters.c`:
    /// 365-375). Cited from httpd 2.4.62, the newest tag of the 2.4 line
    /// in the source the lab read; Debian ships 2.4.71.
    Apache,
    /// Apache with `FlushMaxThreshold 32M`: the core output filter sets
    /// aside up to 32 MiB of a response in memory before it writes
    /// blocking, so a whole `/large` is taken off the upstream while the
    /// upstream sends without pause. `mod_proxy_http` still passes a
    /// flush, which waits for the client, whenever a read from the
    /// upstream would block (`mod_proxy_http.c`:1688-1700): an upstream
    /// that pauses mid-response can still be held.
    ApacheBuf,
    /// Apache with an input filter on the request body (`SetInputFilter
    /// BUFFER`, `mod_buffer`, which changes nothing): with a filter in the
    /// way `mod_proxy_http` cannot trust the Content-Length and spools the
    /// whole body before it connects upstream (`RB_SPOOL_CL`,
    /// `mod_proxy_http.c`:619-628, 649-654; "This spooling can also occur
    /// if ... the server is configured to filter incoming request bodies",
    /// `docs/manual/mod/mod_proxy.xml`:417-442): 16 KiB in memory, the
    /// rest in a temp file under `TMPDIR` (`proxy_util.c`:4942-5060).
    ApacheReqbuf,
    /// H2O 2.2 with its defaults: its HTTP/1 client keeps reading the
    /// upstream's response into the socket's input buffer whatever the
    /// client reads (`on_body` never stops the read,
    /// `lib/core/proxy.c`:379-397, `lib/common/http1client.c`:115-153 of
    /// v2.2.5), in memory up to a 32 MB buffer, past it in an unlinked
    /// temp file mapped into memory (`lib/common/socket.c`:122-124,
    /// `lib/common/memory.c`:243-270); and it reads a whole request body
    /// before it handles the request (`lib/http1.c`:163-169, 218-228), up
    /// to `limit-request-body`, 1 GiB by default (`include/h2o.h`:75).
    /// H2O 2.2 has no setting that streams either, so this one route
    /// buffers both directions.
    H2o,
    /// Squid 5.7 as a reverse proxy (`accel`, nothing cached) with its
    /// defaults: it reads from the upstream only while it holds less than
    /// `read_ahead_gap` (16 KB) beyond what the slowest client has taken
    /// (`src/MemObject.cc`:309-321, `src/http.cc`:1238-1247 and
    /// 1643-1652, `src/cf.data.pre`:6345-6353 of SQUID_5_7), so the app's
    /// handler waits for a slow reader; a request body streams through a
    /// 64 KB pipe (`src/http.cc`:2375-2411, `src/BodyPipe.h`:100), and
    /// Squid has no setting that reads a whole body first.
    Squid,
    /// Squid with `read_ahead_gap 32 MB`: a whole response read off the
    /// upstream into memory, not bounded by `cache_mem` and never written
    /// to disk (`cf.data.pre`:4050-4056).
    SquidBuf,
    /// Apache Traffic Server 9.2 as a reverse proxy (nothing cached) with
    /// its defaults: its tunnel reads from the origin while less than
    /// `default_buffer_water_mark` (32,768 bytes) waits for the client
    /// (`doc/admin-guide/files/records.config.en.rst`:1237-1243,
    /// `proxy/http/HttpSM.cc`:6589, `iocore/eventsystem/I_IOBuffer.h`:
    /// 1077-1079 of 9.2.9), so a slow reader holds the app's handler; a
    /// request body streams to the origin.
    Ats,
    /// Traffic Server with `default_buffer_water_mark` 32 MiB: a whole
    /// response read ahead of the client into memory.
    AtsBuf,
    /// Traffic Server with `request_buffer_enabled` and `post_copy_size`
    /// 32 MiB: "no outbound connection is made until the entire POST
    /// request has been buffered" (records.config.en.rst:1250-1256,
    /// `HttpTransact.cc`:1559-1562, `HttpSM.cc`:947-986), in memory; a
    /// longer body fails.
    AtsReqbuf,
    /// NGINX 1.22 at the edge as deployed: it terminates TLS and HTTP/2
    /// (`listen ... ssl http2`, `http2_max_concurrent_streams 128`, the
    /// default of `ngx_http_v2_module` said explicitly) and proxies each
    /// stream as its own HTTP/1.0 request to the app, with the
    /// experiment's buffers and `proxy_buffering off`. One client
    /// connection then carries many slow downloads, each holding its own
    /// upstream connection and handler: HTTP/2 flow control reaches the
    /// app only through the proxy's buffers, as a slow HTTP/1 reader's
    /// window does (`src/http/v2/ngx_http_v2.c`, `ngx_http_v2_module`'s
    /// documentation of 1.22).
    NginxH2Off,
    /// The same edge with `proxy_buffering on`: each stream's response is
    /// taken off the app whole, into memory buffers and a temp file, as
    /// `nginx-on` does for an HTTP/1.1 client.
    NginxH2On,
    /// The pingora proxy at the same edge (`slowlab proxy --tls-cert
    /// --tls-key --http2`): rustls and pingora's HTTP/2 server connection
    /// towards the clients, each stream served as its own HTTP/1.0
    /// request to the app with `--buffering off`; pingora writes a
    /// stream's body only as its window allows (`v2::write_body` waits
    /// for capacity), so a slow stream holds its upstream as a slow
    /// HTTP/1.1 reader does behind `pingora-off`.
    PingoraH2Off,
    /// The same with `--buffering on`, as `pingora-on`.
    PingoraH2On,
    /// Caddy at the HTTP/2 edge: its own TLS and Go's HTTP/2 server
    /// (`tls CERT KEY`, protocols `h1 h2`), `reverse_proxy` as `caddy`.
    CaddyH2,
    /// The same with `buffer_responses`, as `caddy-buf`.
    CaddyH2Buf,
    /// HAProxy at the HTTP/2 edge: `bind ... ssl crt ... alpn h2,http/1.1`,
    /// its H2 multiplexer towards the clients and HTTP/1.1 to the app, as
    /// `haproxy`.
    HaproxyH2,
    /// Apache at the HTTP/2 edge: `mod_ssl` and `mod_http2` (`Protocols h2
    /// http/1.1`), `mod_proxy_http` to the app, as `apache`.
    ApacheH2,
    /// The same with `FlushMaxThreshold 32M`, as `apache-buf`, which here
    /// buffers nothing: each stream's response leaves through `mod_http2`,
    /// not the core output filter ([`ProxyKind::buffers_at_h2_edge`]).
    ApacheH2Buf,
    /// H2O at the HTTP/2 edge: a TLS listener (`ssl:`), where H2O speaks
    /// HTTP/2 by ALPN by default, proxying as `h2o`.
    H2oH2,
    /// Traffic Server at the HTTP/2 edge: an `ssl` server port with the
    /// run's certificate in `ssl_multicert.config`, where it speaks
    /// HTTP/2 by ALPN by default, as `ats`.
    AtsH2,
    /// The same with its water mark raised, as `ats-buf`.
    AtsH2Buf,
}

/// What clients speak to a route's entry point (the proxy, or the app for
/// direct): the one place that knows it, for the proxy's configuration,
/// the load generator's flags and the results. Every route but the
/// [`Route::H2`] ones is cleartext HTTP/1.1.
/// It is written as its [`Edge::protocol`] (`"h2"`), in the load
/// generator's records and summary as anywhere else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Edge {
    /// TLS is terminated at the entry point (`https://`).
    pub tls: bool,
    /// The clients speak HTTP/2 (ALPN `h2` over TLS).
    pub http2: bool,
}

impl Default for Edge {
    fn default() -> Edge {
        Edge::CLEARTEXT_HTTP1
    }
}

impl serde::Serialize for Edge {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.protocol())
    }
}

impl Edge {
    /// Cleartext HTTP/1.1, the lab's edge before HTTP/2 and TLS.
    pub const CLEARTEXT_HTTP1: Edge = Edge {
        tls: false,
        http2: false,
    };

    /// HTTP/2 over TLS, as ALPN chooses it: every [`Route::H2`] route's.
    pub const H2: Edge = Edge {
        tls: true,
        http2: true,
    };
    /// HTTP/2 with prior knowledge, in the clear (`slowlab load --http2`
    /// to an `http://` target).
    pub const H2C: Edge = Edge {
        tls: false,
        http2: true,
    };
    /// HTTP/1.1 over TLS (`slowlab load` to an `https://` target).
    pub const HTTP1_TLS: Edge = Edge {
        tls: true,
        http2: false,
    };

    /// The URL scheme of the entry point.
    pub fn scheme(self) -> &'static str {
        if self.tls { "https" } else { "http" }
    }

    /// The protocol in words as results record it: `http/1.1`, `h2c`
    /// (HTTP/2 with prior knowledge), `http/1.1+tls`, `h2` (over TLS, as
    /// ALPN names it).
    pub fn protocol(self) -> &'static str {
        match (self.tls, self.http2) {
            (false, false) => "http/1.1",
            (false, true) => "h2c",
            (true, false) => "http/1.1+tls",
            (true, true) => "h2",
        }
    }
}

/// Which reverse proxy a route uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyKind {
    Nginx,
    Pingora,
    Caddy,
    Haproxy,
    Varnish,
    Apache,
    H2o,
    Squid,
    Trafficserver,
}

impl ProxyKind {
    /// Its name in words (`behind NGINX buffering on`).
    pub fn title(self) -> &'static str {
        match self {
            ProxyKind::Nginx => "NGINX",
            ProxyKind::Pingora => "pingora",
            ProxyKind::Caddy => "Caddy",
            ProxyKind::Haproxy => "HAProxy",
            ProxyKind::Varnish => "Varnish",
            ProxyKind::Apache => "Apache",
            ProxyKind::H2o => "H2O",
            ProxyKind::Squid => "Squid",
            ProxyKind::Trafficserver => "Traffic Server",
        }
    }

    /// Whether, buffering, it holds a whole response of `body_bytes`: NGINX
    /// and pingora within `capacity`, their memory buffers plus temp-file
    /// cap ([`ProxyBuffers::capacity`]); Caddy always, in memory
    /// (`bufferedBody` reads to the end without `max_buffer_size`), and
    /// Varnish always, in Transient storage, which the proxy's memory cap
    /// may not allow; HAProxy never, one buffer per direction being all it
    /// has; Apache within its raised `FlushMaxThreshold`
    /// ([`ProxyKind::APACHE_FLUSH_MAX`]); H2O always, in memory or, past
    /// a 32 MB buffer, a mapped temp file; Squid within its raised
    /// `read_ahead_gap` ([`ProxyKind::SQUID_READ_AHEAD`]); Traffic Server
    /// within its raised water mark ([`ProxyKind::ATS_WATER_MARK`]).
    pub fn holds(self, body_bytes: u64, capacity: u64) -> bool {
        match self {
            ProxyKind::Nginx | ProxyKind::Pingora => capacity >= body_bytes,
            ProxyKind::Caddy | ProxyKind::Varnish | ProxyKind::H2o => true,
            ProxyKind::Apache => body_bytes <= Self::APACHE_FLUSH_MAX,
            ProxyKind::Squid => body_bytes <= Self::SQUID_READ_AHEAD,
            ProxyKind::Trafficserver => body_bytes <= Self::ATS_WATER_MARK,
            ProxyKind::Haproxy => false,
        }
    }

    /// `FlushMaxThreshold` of the `apache-buf` route: how much of a
    /// response Apache's core output filter sets aside in memory before
    /// it writes blocking.
    pub const APACHE_FLUSH_MAX: u64 = 32 << 20;

    /// `read_ahead_gap` of the `squid-buf` route: how much of a response
    /// Squid reads ahead of the slowest client.
    pub const SQUID_READ_AHEAD: u64 = 32 << 20;

    /// `default_buffer_water_mark` of the `ats-buf` route: how much of a
    /// response Traffic Server reads ahead of the client.
    pub const ATS_WATER_MARK: u64 = 32 << 20;

    /// Whether it has a setting that buffers whole responses (HAProxy has
    /// none: its routes pass every response through at the client's pace).
    pub fn buffers_responses(self) -> bool {
        !matches!(self, ProxyKind::Haproxy)
    }

    /// Whether it has a setting that reads a request body before it
    /// connects upstream (HAProxy's reads one buffer of it); Squid has
    /// none.
    pub fn buffers_requests(self) -> bool {
        !matches!(self, ProxyKind::Squid)
    }

    /// What one transfer held whole costs it in memory, for a proxy that
    /// holds them in memory: Caddy copies each into a `bytes.Buffer` with
    /// `io.Copy` (`bufferedBody`, `reverseproxy.go`:1128-1148 of v2.6.2),
    /// which grows it by doubling, so up to twice the body. `None` for
    /// NGINX and pingora (memory buffers, then temp files), HAProxy (it
    /// holds no transfer whole) and Varnish (not modelled, see below).
    /// Apache sets a response aside in its deferred-write pool, one copy
    /// of the body (`setaside_remaining_output`, `server/core_filters.c`).
    /// H2O grows its buffer by doubling (`h2o_buffer_reserve`,
    /// `lib/common/memory.c`:233-243) while the client drains it from the
    /// front, so up to the body rounded up to a power of two, in memory
    /// below 32 MB.
    pub fn memory_per_transfer(self, body_bytes: u64) -> Option<u64> {
        match self {
            ProxyKind::Caddy => Some(body_bytes.saturating_mul(2)),
            // Squid: one copy in 4 KB pages (+16.0-16.7 MiB per slow
            // reader of 16 MiB measured here, VmRSS).
            ProxyKind::H2o => Some(body_bytes.checked_next_power_of_two().unwrap_or(u64::MAX)),
            // Varnish 7.1 fetches a passed response into Transient storage
            // as fast as the backend sends it, never waiting for the client
            // (`bin/varnishd/cache/cache_fetch.c`:577-611,
            // `cache_obj.c`:219-265); a body with a Content-Length is one
            // segment of its whole length (`cache_fetch_proc.c`:72-95,
            // `storage/storage_simple.c`:438-476, up to `fetch_maxchunksize`,
            // 256 MiB), which delivery frees only after its last byte
            // (`storage_simple.c`:367-375, `cache_req_fsm.c`:486-502). A
            // request body under `std.cache_req_body` is one segment too
            // (`cache_req_body.c`:70-135), freed after the response
            // (`cache_req_fsm.c`:1202). Measured: 2 readers, +32.3 MiB; 8
            // readers outgrow the 96 MiB cap, and its child is killed.
            ProxyKind::Apache
            | ProxyKind::Squid
            | ProxyKind::Trafficserver
            | ProxyKind::Varnish => Some(body_bytes),
            ProxyKind::Nginx | ProxyKind::Pingora | ProxyKind::Haproxy => None,
        }
    }

    /// Whether a worker the kernel kills for memory is started again at
    /// once, so that an outgrown memory fails the transfers in flight but
    /// not every later request: Varnish's manager restarts its child
    /// (`bin/varnishd/mgt/mgt_child.c`:598-613; its log says "Child (N)
    /// died signal=9", then "Child launched OK"). Measured with 8 slow
    /// readers of 16 MiB under 96 MiB, 3 runs: every download failed, 1 to
    /// 3 of 72 calls of `/fast`, p95 1.5 to 3.0 ms.
    pub fn restarts_when_killed(self) -> bool {
        matches!(self, ProxyKind::Varnish)
    }

    /// Where it keeps what it buffers: NGINX and pingora in memory
    /// buffers, then temp files up to their cap; Caddy and Varnish all in
    /// memory; HAProxy one buffer per direction; Apache its output
    /// filter's memory; H2O memory, then a mapped temp file.
    pub fn store(self) -> &'static str {
        match self {
            ProxyKind::Nginx | ProxyKind::Pingora => "memory, then temp files",
            ProxyKind::Caddy | ProxyKind::Apache | ProxyKind::Squid | ProxyKind::Trafficserver => {
                "memory"
            }
            ProxyKind::Haproxy => "one 16 KiB buffer",
            ProxyKind::Varnish => "memory (Transient storage)",
            ProxyKind::H2o => "memory, then a mapped temp file",
        }
    }

    /// What one request body read whole costs it in memory: Apache spools
    /// it to a temp file past its first 16 KiB; the others hold it as
    /// they hold a response ([`Self::memory_per_transfer`]).
    pub fn memory_per_request(self, body_bytes: u64) -> Option<u64> {
        match self {
            ProxyKind::Apache => None,
            _ => self.memory_per_transfer(body_bytes),
        }
    }

    /// Where it keeps a request body it reads whole: Apache spools one to
    /// a temp file past its first 16 KiB; the others as [`Self::store`].
    pub fn request_store(self) -> &'static str {
        match self {
            ProxyKind::Apache => "memory, then temp files",
            _ => self.store(),
        }
    }

    /// The most streams it runs at once on one HTTP/2 client connection
    /// (the `SETTINGS_MAX_CONCURRENT_STREAMS` it sends), as the lab runs
    /// it; `None` for a proxy without an HTTP/2 edge in the lab. A
    /// client's further streams wait for one of these to end, so this is
    /// how many upstream handlers one client connection can hold. The
    /// real-stack tier checks each against what the proxy advertises.
    /// - NGINX: `http2_max_concurrent_streams 128`, the default of 1.22,
    ///   said in the lab's config;
    /// - pingora: 100 (`DEFAULT_MAX_CONCURRENT_STREAMS`,
    ///   `pingora-core` 0.9.1 `protocols/http/v2/server.rs`:57, 72);
    /// - Caddy 2.6: Go's HTTP/2 server's default, 250
    ///   (`defaultMaxStreams`, `golang.org/x/net/http2/server.go`);
    /// - HAProxy 2.6: `tune.h2.max-concurrent-streams`, 100;
    /// - Apache: `H2MaxSessionStreams`, 100 (`mod_http2`);
    /// - H2O 2.2: `http2-max-concurrent-requests-per-connection`, 100;
    /// - Traffic Server 9.2: `proxy.config.http2.max_concurrent_streams_in`,
    ///   100.
    pub fn h2_max_streams(self) -> Option<u32> {
        match self {
            ProxyKind::Nginx => Some(128),
            ProxyKind::Caddy => Some(250),
            ProxyKind::Pingora
            | ProxyKind::Haproxy
            | ProxyKind::Apache
            | ProxyKind::H2o
            | ProxyKind::Trafficserver => Some(100),
            ProxyKind::Varnish | ProxyKind::Squid => None,
        }
    }

    /// Whether its response buffering works at an HTTP/2 edge as on its
    /// cleartext twin. Apache's does not: `FlushMaxThreshold` is the core
    /// output filter's, and `mod_http2` serves each stream on a secondary
    /// connection whose output filters are its own (`H2_C2_NET_CATCH_H1`,
    /// `H2_C2_NET_OUT`), which hands the response to the client's
    /// connection through a bucket beam and blocks while the beam holds
    /// `H2StreamMaxMemSize` (64 KiB) (`h2_c2_filter_out`, `beam_out`:
    /// `h2_beam_send(..., APR_BLOCK_READ, ...)`, `modules/http2/h2_c2.c`),
    /// so `mod_proxy_http` stops reading the upstream as on `apache-h2`.
    /// Measured: `check --through apache-h2-buf` with one connection of 2
    /// streams denied rust-sync2 from 2 in 3 of 3 runs, the app's sends
    /// stopping near 4 MB of 16.
    pub fn buffers_at_h2_edge(self) -> bool {
        !matches!(self, ProxyKind::Apache)
    }

    /// The external program it needs, if any.
    pub fn needs(self) -> Option<Tool> {
        match self {
            ProxyKind::Nginx => Some(Tool::Nginx),
            ProxyKind::Pingora => None,
            ProxyKind::Caddy => Some(Tool::Caddy),
            ProxyKind::Haproxy => Some(Tool::Haproxy),
            ProxyKind::Varnish => Some(Tool::Varnish),
            ProxyKind::Apache => Some(Tool::Apache),
            ProxyKind::H2o => Some(Tool::H2o),
            ProxyKind::Squid => Some(Tool::Squid),
            ProxyKind::Trafficserver => Some(Tool::Trafficserver),
        }
    }
}

impl Route {
    /// Every route, in the order the report's tables and charts show them
    /// (`analysis::select::route_rank`): direct, the original's proxy and
    /// its twin with buffering off, then on, then the request direction's
    /// the same way, then the packaged proxies, each family's default first.
    pub const ALL: [Route; 37] = [
        Route::Direct,
        Route::NginxOff,
        Route::PingoraOff,
        Route::NginxOn,
        Route::PingoraOn,
        Route::NginxReqbufOff,
        Route::PingoraReqbufOff,
        Route::NginxReqbufOn,
        Route::PingoraReqbufOn,
        Route::NginxH2Off,
        Route::PingoraH2Off,
        Route::NginxH2On,
        Route::PingoraH2On,
        Route::Caddy,
        Route::CaddyBuf,
        Route::CaddyReqbuf,
        Route::Haproxy,
        Route::HaproxyReqbuf,
        Route::Varnish,
        Route::VarnishReqbuf,
        Route::Apache,
        Route::ApacheBuf,
        Route::ApacheReqbuf,
        Route::H2o,
        Route::Squid,
        Route::SquidBuf,
        Route::Ats,
        Route::AtsBuf,
        Route::AtsReqbuf,
        Route::CaddyH2,
        Route::CaddyH2Buf,
        Route::HaproxyH2,
        Route::ApacheH2,
        Route::ApacheH2Buf,
        Route::H2oH2,
        Route::AtsH2,
        Route::AtsH2Buf,
    ];

    /// The original's routes and their pingora twins: response buffering
    /// off and on (the `cross` preset).
    pub const RESPONSE: [Route; 5] = [
        Route::Direct,
        Route::NginxOff,
        Route::NginxOn,
        Route::PingoraOff,
        Route::PingoraOn,
    ];

    /// Direct and every proxy route of the response direction, the
    /// lab's own and the packaged proxies' (the `proxies` preset).
    pub const PROXIES: [Route; 16] = [
        Route::Direct,
        Route::NginxOff,
        Route::NginxOn,
        Route::PingoraOff,
        Route::PingoraOn,
        Route::Caddy,
        Route::CaddyBuf,
        Route::Haproxy,
        Route::Varnish,
        Route::Apache,
        Route::ApacheBuf,
        Route::H2o,
        Route::Squid,
        Route::SquidBuf,
        Route::Ats,
        Route::AtsBuf,
    ];

    /// The routes whose edge speaks HTTP/2 over TLS, buffering off and on
    /// (the `h2` preset): every proxy of the lab that terminates TLS and
    /// HTTP/2 itself. Varnish 7.1 has no TLS (its HTTP/2 is an
    /// experimental feature behind a TLS terminator) and Squid 5.7 no
    /// HTTP/2, so neither has one.
    pub const H2: [Route; 12] = {
        // Derived from ALL, in its order: the routes that are not their
        // own HTTP/1.1 twin. The length is checked when this compiles.
        let mut out = [Route::Direct; 12];
        let (mut i, mut n) = (0, 0);
        while i < Route::ALL.len() {
            let r = Route::ALL[i];
            if r.http1_twin() as u8 != r as u8 {
                out[n] = r;
                n += 1;
            }
            i += 1;
        }
        assert!(
            n == out.len(),
            "Route::H2 has one place per HTTP/2 edge of Route::ALL"
        );
        out
    };

    /// Direct and every proxy route of the request direction: each proxy
    /// with request buffering off and on (the `proxies` preset's uploads).
    pub const PROXIES_UPLOAD: [Route; 17] = [
        Route::Direct,
        Route::NginxReqbufOff,
        Route::NginxReqbufOn,
        Route::PingoraReqbufOff,
        Route::PingoraReqbufOn,
        Route::Caddy,
        Route::CaddyReqbuf,
        Route::Haproxy,
        Route::HaproxyReqbuf,
        Route::Varnish,
        Route::VarnishReqbuf,
        Route::Apache,
        Route::ApacheReqbuf,
        Route::H2o,
        Route::Squid,
        Route::Ats,
        Route::AtsReqbuf,
    ];

    /// The request-direction routes: request buffering on and off behind
    /// each proxy.
    pub const REQUEST: [Route; 4] = [
        Route::NginxReqbufOn,
        Route::NginxReqbufOff,
        Route::PingoraReqbufOn,
        Route::PingoraReqbufOff,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Route::Direct => "direct",
            Route::NginxOff => "nginx-off",
            Route::NginxOn => "nginx-on",
            Route::PingoraOff => "pingora-off",
            Route::PingoraOn => "pingora-on",
            Route::NginxReqbufOn => "nginx-reqbuf-on",
            Route::NginxReqbufOff => "nginx-reqbuf-off",
            Route::PingoraReqbufOn => "pingora-reqbuf-on",
            Route::PingoraReqbufOff => "pingora-reqbuf-off",
            Route::Caddy => "caddy",
            Route::CaddyBuf => "caddy-buf",
            Route::CaddyReqbuf => "caddy-reqbuf",
            Route::Haproxy => "haproxy",
            Route::HaproxyReqbuf => "haproxy-reqbuf",
            Route::Varnish => "varnish",
            Route::VarnishReqbuf => "varnish-reqbuf",
            Route::Apache => "apache",
            Route::ApacheBuf => "apache-buf",
            Route::ApacheReqbuf => "apache-reqbuf",
            Route::H2o => "h2o",
            Route::Squid => "squid",
            Route::SquidBuf => "squid-buf",
            Route::Ats => "ats",
            Route::AtsBuf => "ats-buf",
            Route::AtsReqbuf => "ats-reqbuf",
            Route::NginxH2Off => "nginx-h2-off",
            Route::NginxH2On => "nginx-h2-on",
            Route::PingoraH2Off => "pingora-h2-off",
            Route::PingoraH2On => "pingora-h2-on",
            Route::CaddyH2 => "caddy-h2",
            Route::CaddyH2Buf => "caddy-h2-buf",
            Route::HaproxyH2 => "haproxy-h2",
            Route::ApacheH2 => "apache-h2",
            Route::ApacheH2Buf => "apache-h2-buf",
            Route::H2oH2 => "h2o-h2",
            Route::AtsH2 => "ats-h2",
            Route::AtsH2Buf => "ats-h2-buf",
        }
    }

    /// The original's route this one replicates (pingora's twins of the
    /// NGINX routes); none for the original's own.
    pub fn replicates(self) -> Option<Route> {
        match self {
            Route::PingoraOff => Some(Route::NginxOff),
            Route::PingoraOn => Some(Route::NginxOn),
            Route::PingoraReqbufOn => Some(Route::NginxReqbufOn),
            Route::PingoraReqbufOff => Some(Route::NginxReqbufOff),
            Route::Direct
            | Route::NginxOff
            | Route::NginxOn
            | Route::NginxReqbufOn
            | Route::NginxReqbufOff
            | Route::Caddy
            | Route::CaddyBuf
            | Route::CaddyReqbuf
            | Route::Haproxy
            | Route::HaproxyReqbuf
            | Route::Varnish
            | Route::VarnishReqbuf
            | Route::Apache
            | Route::ApacheBuf
            | Route::ApacheReqbuf
            | Route::H2o
            | Route::Squid
            | Route::SquidBuf
            | Route::Ats
            | Route::AtsBuf
            | Route::AtsReqbuf
            | Route::NginxH2Off
            | Route::NginxH2On
            | Route::PingoraH2Off
            | Route::PingoraH2On
            | Route::CaddyH2
            | Route::CaddyH2Buf
            | Route::HaproxyH2
            | Route::ApacheH2
            | Route::ApacheH2Buf
            | Route::H2oH2
            | Route::AtsH2
            | Route::AtsH2Buf => None,
        }
    }

    /// What clients speak to the route's entry point ([`Edge`]).
    pub fn edge(self) -> Edge {
        match self.http1_twin() == self {
            false => Edge::H2,
            true => Edge::CLEARTEXT_HTTP1,
        }
    }

    /// The route of the same proxy and buffering whose edge is cleartext
    /// HTTP/1.1 (`nginx-h2-on` is `nginx-on`): what happens to a response
    /// between the app and the proxy is the same for both, so the buffer
    /// model and the prediction treat them alike.
    pub const fn http1_twin(self) -> Route {
        match self {
            Route::NginxH2Off => Route::NginxOff,
            Route::NginxH2On => Route::NginxOn,
            Route::PingoraH2Off => Route::PingoraOff,
            Route::PingoraH2On => Route::PingoraOn,
            Route::CaddyH2 => Route::Caddy,
            Route::CaddyH2Buf => Route::CaddyBuf,
            Route::HaproxyH2 => Route::Haproxy,
            Route::ApacheH2 => Route::Apache,
            Route::ApacheH2Buf => Route::ApacheBuf,
            Route::H2oH2 => Route::H2o,
            Route::AtsH2 => Route::Ats,
            Route::AtsH2Buf => Route::AtsBuf,
            r => r,
        }
    }

    /// How many of `slow` slow downloads, `per_conn` to a connection, the
    /// route serves at once, each holding an upstream handler while it
    /// lasts: at an HTTP/2 edge a connection runs at most its proxy's
    /// [`ProxyKind::h2_max_streams`], and its further streams wait for
    /// one to end; elsewhere every download is its own connection.
    pub fn served_at_once(self, slow: u32, per_conn: u32) -> u32 {
        let max = match (self.edge().http2, self.proxy()) {
            (true, Some((kind, _))) => kind.h2_max_streams().unwrap_or(u32::MAX),
            _ => return slow,
        };
        let per_conn = per_conn.max(1);
        let (full, rest) = (slow / per_conn, slow % per_conn);
        full * per_conn.min(max) + rest.min(max)
    }

    /// The proxy and its buffering, or `None` for direct access.
    /// An HTTP/2 edge's route is its HTTP/1.1 twin's proxy and buffering.
    pub fn proxy(self) -> Option<(ProxyKind, bool)> {
        match self.http1_twin() {
            Route::Direct => None,
            Route::NginxOff => Some((ProxyKind::Nginx, false)),
            Route::NginxOn => Some((ProxyKind::Nginx, true)),
            Route::PingoraOff => Some((ProxyKind::Pingora, false)),
            Route::PingoraOn => Some((ProxyKind::Pingora, true)),
            Route::NginxReqbufOn | Route::NginxReqbufOff => Some((ProxyKind::Nginx, true)),
            Route::PingoraReqbufOn | Route::PingoraReqbufOff => Some((ProxyKind::Pingora, true)),
            Route::Caddy | Route::CaddyReqbuf => Some((ProxyKind::Caddy, false)),
            Route::CaddyBuf => Some((ProxyKind::Caddy, true)),
            Route::Haproxy | Route::HaproxyReqbuf => Some((ProxyKind::Haproxy, false)),
            Route::Varnish | Route::VarnishReqbuf => Some((ProxyKind::Varnish, true)),
            Route::Apache | Route::ApacheReqbuf => Some((ProxyKind::Apache, false)),
            Route::ApacheBuf => Some((ProxyKind::Apache, true)),
            Route::H2o => Some((ProxyKind::H2o, true)),
            Route::Squid => Some((ProxyKind::Squid, false)),
            Route::SquidBuf => Some((ProxyKind::Squid, true)),
            Route::Ats | Route::AtsReqbuf => Some((ProxyKind::Trafficserver, false)),
            Route::AtsBuf => Some((ProxyKind::Trafficserver, true)),
            h2 => unreachable!("{h2} has an HTTP/1.1 twin"),
        }
    }

    /// How the route's proxy treats a request body, or `None` for direct
    /// access. The response routes keep their proxies' defaults, so their
    /// configurations stay those of the experiment: NGINX buffers request
    /// bodies (`proxy_request_buffering on`, `client_max_body_size 1m`),
    /// pingora streams them (`--request-buffering off`) with the same 1 MiB
    /// limit. An HTTP/2 edge's route treats one as its HTTP/1.1 twin.
    pub fn request_body(self) -> Option<RequestBody> {
        let default = |buffering| RequestBody {
            buffering,
            max_body_bytes: RequestBody::NGINX_MAX_BODY,
            buffer_limit: u64::MAX,
            explicit: false,
        };
        let set = |buffering| RequestBody {
            buffering,
            max_body_bytes: RequestBody::REQUEST_MAX_BODY,
            buffer_limit: u64::MAX,
            explicit: true,
        };
        match self.http1_twin() {
            Route::Direct => None,
            Route::NginxOff | Route::NginxOn => Some(default(true)),
            Route::PingoraOff | Route::PingoraOn => Some(default(false)),
            Route::NginxReqbufOn | Route::PingoraReqbufOn => Some(set(true)),
            Route::NginxReqbufOff | Route::PingoraReqbufOff => Some(set(false)),
            // Caddy, HAProxy, Varnish, Squid and Traffic Server set no
            // limit on a request body;
            // buffering, HAProxy waits for one buffer of it, Varnish's
            // `cache_req_body` for 32 MiB (a longer one streams).
            Route::Caddy
            | Route::CaddyBuf
            | Route::Haproxy
            | Route::Varnish
            | Route::Squid
            | Route::SquidBuf
            | Route::Ats
            | Route::AtsBuf => Some(RequestBody::unlimited(false, u64::MAX, false)),
            Route::CaddyReqbuf => Some(RequestBody::unlimited(true, u64::MAX, true)),
            Route::HaproxyReqbuf => Some(RequestBody::unlimited(
                true,
                RequestBody::HAPROXY_BUFFER,
                true,
            )),
            Route::VarnishReqbuf => Some(RequestBody::unlimited(
                true,
                RequestBody::REQUEST_MAX_BODY,
                true,
            )),
            // Apache sets no limit on a proxied body: it streams one past
            // its first 16 KiB, or spools it whole to a temp file; H2O
            // reads it whole up to its 1 GiB `limit-request-body`.
            Route::Apache | Route::ApacheBuf => {
                Some(RequestBody::unlimited(false, u64::MAX, false))
            }
            Route::ApacheReqbuf => Some(RequestBody::unlimited(true, u64::MAX, true)),
            // Traffic Server fails a body beyond `post_copy_size` when it
            // buffers.
            Route::AtsReqbuf => Some(RequestBody {
                buffering: true,
                max_body_bytes: RequestBody::REQUEST_MAX_BODY,
                buffer_limit: u64::MAX,
                explicit: true,
            }),
            Route::H2o => Some(RequestBody {
                buffering: true,
                max_body_bytes: RequestBody::GIB_MAX_BODY,
                buffer_limit: u64::MAX,
                explicit: false,
            }),
            h2 => unreachable!("{h2} has an HTTP/1.1 twin"),
        }
    }

    /// Whether the route's proxy takes a whole request body of
    /// `body_bytes` off the client before the app sees the request, so
    /// that a slow uploader does not hold a handler: request buffering on
    /// and a body within its maximum size (a longer one is answered 413 by
    /// the proxy and never reaches the app) and within what it buffers
    /// (HAProxy forwards the rest of a longer one at the client's pace).
    pub fn absorbs_request(self, body_bytes: u64) -> bool {
        self.request_body().is_some_and(|r| {
            r.buffering && body_bytes <= r.max_body_bytes && body_bytes <= r.buffer_limit
        })
    }

    /// The route `--through NAME` means for slow clients in `direction`:
    /// in the request direction the response routes' names stand for the
    /// same proxy with request buffering on or off (`nginx-on` is
    /// `nginx-reqbuf-on`), so that "buffering" is the buffering that
    /// direction needs; every other name, and every name in the download
    /// direction, is itself.
    pub fn for_direction(self, direction: Direction) -> Route {
        match (direction, self) {
            (Direction::Download, r) => r,
            (_, Route::NginxOn) => Route::NginxReqbufOn,
            (_, Route::NginxOff) => Route::NginxReqbufOff,
            (_, Route::PingoraOn) => Route::PingoraReqbufOn,
            (_, Route::PingoraOff) => Route::PingoraReqbufOff,
            (_, Route::CaddyBuf) => Route::CaddyReqbuf,
            (_, Route::AtsBuf) => Route::AtsReqbuf,
            (_, Route::ApacheBuf) => Route::ApacheReqbuf,
            (_, r) => r,
        }
    }

    /// Whether `slow` transfers of `body_bytes` in `direction` that the
    /// route's proxy holds whole in memory outgrow its `memory_cap`
    /// ([`ProxyKind::memory_per_transfer`]): the cgroup then kills the
    /// proxy, and the transfers fail; so does every later request through
    /// it (Caddy buffering 8 x 16 MiB under the experiment's 96 MiB) unless
    /// it starts again ([`ProxyKind::restarts_when_killed`]: Varnish).
    pub fn outgrows_memory(
        self,
        direction: Direction,
        slow: u32,
        body_bytes: u64,
        memory_cap: u64,
    ) -> bool {
        let Some((kind, _)) = self.proxy() else {
            return false;
        };
        let on = self.buffers_here();
        let memory = match direction {
            Direction::Download if on => kind.memory_per_transfer(body_bytes),
            Direction::Upload if self.absorbs_request(body_bytes) => {
                kind.memory_per_request(body_bytes)
            }
            _ => None,
        };
        memory.is_some_and(|m| m.saturating_mul(u64::from(slow)) > memory_cap)
    }

    /// Whether the route parks a whole `/large` response of `body_bytes`
    /// between the app and the client: only a buffering proxy that holds
    /// it ([`ProxyKind::holds`]: the experiment's 64 KiB + 16 KiB + 32 MiB
    /// do for NGINX and pingora; Caddy's memory does).
    pub fn absorbs(self, body_bytes: u64, proxy_capacity_bytes: u64) -> bool {
        self.buffers_here()
            && self
                .proxy()
                .is_some_and(|(kind, _)| kind.holds(body_bytes, proxy_capacity_bytes))
    }

    /// Whether the route's response buffering takes effect at its edge:
    /// its proxy buffers ([`Route::proxy`]), and at an HTTP/2 edge its
    /// buffering is on the stream's path ([`ProxyKind::buffers_at_h2_edge`]).
    pub fn buffers_here(self) -> bool {
        self.proxy()
            .is_some_and(|(kind, on)| on && (!self.edge().http2 || kind.buffers_at_h2_edge()))
    }
}

/// A proxy's request-body handling on a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestBody {
    /// `proxy_request_buffering` / `--request-buffering`.
    pub buffering: bool,
    /// `client_max_body_size` / `--client-max-body-size`.
    pub max_body_bytes: u64,
    /// The most of a body the proxy reads before it connects upstream,
    /// when it buffers: the rest of a longer body follows at the client's
    /// pace. Unlimited for NGINX, pingora (temp files) and Caddy (memory);
    /// one buffer for HAProxy.
    pub buffer_limit: u64,
    /// Whether the route sets the request directives itself (the
    /// request-direction routes) rather than leaving the proxy's defaults.
    pub explicit: bool,
}

impl RequestBody {
    /// NGINX's default `client_max_body_size`.
    pub const NGINX_MAX_BODY: u64 = 1 << 20;
    /// `client_max_body_size 32m` of the request-direction routes.
    pub const REQUEST_MAX_BODY: u64 = 32 << 20;
    /// `client_body_buffer_size 16k` of the request-direction routes
    /// (NGINX's default on x86-64, pingora's default).
    pub const BODY_BUFFER: u64 = 16 << 10;
    /// What HAProxy's `option http-buffer-request` waits for at most: its
    /// request buffer, `tune.bufsize` (16384) less `tune.maxrewrite`
    /// (1024), the defaults of Debian's build.
    pub const HAPROXY_BUFFER: u64 = (16 << 10) - 1024;
    /// H2O's default `limit-request-body`: 1 GiB.
    pub const GIB_MAX_BODY: u64 = 1 << 30;

    /// A proxy's policy without a body size limit (no 413): buffering or
    /// not, reading at most `buffer_limit` of a body before it connects
    /// upstream, set by the route or left to the proxy's defaults.
    pub const fn unlimited(buffering: bool, buffer_limit: u64, explicit: bool) -> Self {
        RequestBody {
            buffering,
            max_body_bytes: u64::MAX,
            buffer_limit,
            explicit,
        }
    }
}

/// The experiment's NGINX buffer values, shared by NGINX and pingora.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ProxyBuffers {
    pub buffer_size: u64,
    pub buffers_count: u64,
    pub buffers_size: u64,
    pub busy_buffers_size: u64,
    pub max_temp_file_size: u64,
    pub temp_file_write_size: u64,
}

impl ProxyBuffers {
    /// `proxy_buffer_size 16k; proxy_buffers 4 16k; proxy_busy_buffers_size
    /// 32k; proxy_max_temp_file_size 32m; proxy_temp_file_write_size 64k`.
    pub const EXPERIMENT: ProxyBuffers = ProxyBuffers {
        buffer_size: 16 << 10,
        buffers_count: 4,
        buffers_size: 16 << 10,
        busy_buffers_size: 32 << 10,
        max_temp_file_size: 32 << 20,
        temp_file_write_size: 64 << 10,
    };

    /// The experiment's memory cap of the proxy's cgroup (96 MiB), which
    /// the rule holds a proxy that buffers in memory to.
    pub const EXPERIMENT_PROXY_MEMORY: u64 = 96 << 20;

    /// How much one response can park in the proxy with buffering on.
    pub fn capacity(&self) -> u64 {
        self.buffer_size + self.buffers_count * self.buffers_size + self.max_temp_file_size
    }
}

/// A route as read from a results file.
pub type RouteName = Named<Route>;

impl Name for Route {
    const ALL: &'static [Route] = &Route::ALL;
    fn name(self) -> &'static str {
        Route::name(self)
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Route {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_known(s, "route")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for r in Route::ALL {
            assert_eq!(r.name().parse::<Route>(), Ok(r));
            if let Some(original) = r.replicates() {
                assert_eq!(original.proxy().map(|p| p.0), Some(ProxyKind::Nginx), "{r}");
                assert_eq!(original.proxy().map(|p| p.1), r.proxy().map(|p| p.1), "{r}");
            }
        }
        assert!("nginx".parse::<Route>().unwrap_err().contains("nginx-on"));
    }

    #[test]
    fn only_nginx_routes_need_nginx() {
        let nginx: Vec<Route> = Route::ALL
            .into_iter()
            .filter(|r| r.proxy().and_then(|(k, _)| k.needs()) == Some(Tool::Nginx))
            .collect();
        assert_eq!(
            nginx,
            [
                Route::NginxOff,
                Route::NginxOn,
                Route::NginxReqbufOff,
                Route::NginxReqbufOn,
                Route::NginxH2Off,
                Route::NginxH2On
            ]
        );
    }

    #[test]
    fn only_the_h2_routes_speak_http2_over_tls_at_the_edge() {
        for r in Route::ALL {
            let h2 = Route::H2.contains(&r);
            assert_eq!(r.edge().tls, h2, "{r}");
            assert_eq!(r.edge().http2, h2, "{r}");
            // The same proxy and buffering as their cleartext twins.
            assert_eq!(r.http1_twin().proxy(), r.proxy(), "{r}");
            assert_eq!(r.http1_twin().request_body(), r.request_body(), "{r}");
            assert_eq!(r.http1_twin().edge(), Edge::CLEARTEXT_HTTP1, "{r}");
        }
        assert_eq!("nginx-h2-on".parse::<Route>(), Ok(Route::NginxH2On));
        assert_eq!("nginx-h2-off".parse::<Route>(), Ok(Route::NginxH2Off));
        assert_eq!(Route::NginxH2Off.http1_twin(), Route::NginxOff);
        assert_eq!(Route::NginxH2On.edge().scheme(), "https");
        assert_eq!(Route::NginxH2On.edge().protocol(), "h2");
        assert_eq!(Route::Direct.edge().protocol(), "http/1.1");
        let cap = ProxyBuffers::EXPERIMENT.capacity();
        assert!(Route::NginxH2On.absorbs(16 << 20, cap));
        assert!(!Route::NginxH2Off.absorbs(16 << 20, cap));
        assert_eq!(
            Route::NginxH2On.for_direction(Direction::Upload),
            Route::NginxH2On
        );
        // Every proxy with an HTTP/2 edge says how many streams one
        // connection runs at once, and names its HTTP/1.1 twin's kind.
        for r in Route::H2 {
            let (kind, _) = r.proxy().unwrap();
            assert!(kind.h2_max_streams().is_some(), "{r}");
            assert!(r.name().starts_with(&r.http1_twin().name()[..3]), "{r}");
        }
    }

    #[test]
    fn apache_buffers_nothing_at_an_h2_edge_and_the_others_as_their_twins() {
        let cap = ProxyBuffers::EXPERIMENT.capacity();
        for r in Route::H2 {
            let twin = r.http1_twin();
            let expect = twin.absorbs(16 << 20, cap) && r != Route::ApacheH2Buf;
            assert_eq!(r.absorbs(16 << 20, cap), expect, "{r}");
        }
        assert!(Route::ApacheBuf.absorbs(16 << 20, cap));
        assert!(!Route::ApacheH2Buf.buffers_here());
        // Not holding them, it is not killed for 8 of them either.
        assert!(Route::ApacheBuf.outgrows_memory(Direction::Download, 8, 16 << 20, 96 << 20));
        assert!(!Route::ApacheH2Buf.outgrows_memory(Direction::Download, 8, 16 << 20, 96 << 20));
    }

    #[test]
    fn one_h2_connection_holds_at_most_its_proxy_s_concurrent_streams() {
        // 8 downloads on one connection: 8 held; HAProxy runs 100 streams
        // of 150, and 2 connections of 150 hold 200.
        assert_eq!(Route::HaproxyH2.served_at_once(8, 8), 8);
        assert_eq!(Route::HaproxyH2.served_at_once(150, 150), 100);
        assert_eq!(Route::HaproxyH2.served_at_once(300, 150), 200);
        assert_eq!(Route::NginxH2Off.served_at_once(150, 150), 128);
        assert_eq!(Route::HaproxyH2.served_at_once(201, 100), 201);
        // Over HTTP/1.1 a connection carries one download.
        assert_eq!(Route::Haproxy.served_at_once(150, 150), 150);
        assert_eq!(Route::Direct.served_at_once(3, 1), 3);
    }

    #[test]
    fn only_buffering_on_absorbs_the_response() {
        let cap = ProxyBuffers::EXPERIMENT.capacity();
        assert_eq!(cap, (16 << 10) + (64 << 10) + (32 << 20));
        assert!(Route::NginxOn.absorbs(16 << 20, cap));
        assert!(Route::PingoraOn.absorbs(16 << 20, cap));
        assert!(!Route::NginxOff.absorbs(16 << 20, cap));
        assert!(!Route::Direct.absorbs(16 << 20, cap));
        assert!(!Route::NginxOn.absorbs(64 << 20, cap));
        assert!(Route::REQUEST.iter().all(|r| r.absorbs(16 << 20, cap)));
        // Caddy buffering takes any response into memory; by default none.
        assert!(Route::CaddyBuf.absorbs(64 << 20, cap));
        assert!(!Route::Caddy.absorbs(16 << 20, cap));
        assert!(!Route::CaddyReqbuf.absorbs(16 << 20, cap));
        assert!(Route::CaddyReqbuf.absorbs_request(64 << 20));
        assert!(!Route::Caddy.absorbs_request(1));
        // Caddy's memory: 2 x 16 MiB fit in 96 MiB, 8 do not.
        let mem = ProxyBuffers::EXPERIMENT_PROXY_MEMORY;
        let d = Direction::Download;
        assert!(!Route::CaddyBuf.outgrows_memory(d, 2, 16 << 20, mem));
        assert!(Route::CaddyBuf.outgrows_memory(d, 8, 16 << 20, mem));
        assert!(Route::CaddyReqbuf.outgrows_memory(Direction::Upload, 8, 16 << 20, mem));
        assert!(!Route::Caddy.outgrows_memory(d, 8, 16 << 20, mem));
        assert!(!Route::NginxOn.outgrows_memory(d, 64, 16 << 20, mem));
        // HAProxy buffers no response, and of a request body one buffer.
        assert!(!Route::Haproxy.absorbs(1, cap));
        assert!(!Route::HaproxyReqbuf.absorbs(1, cap));
        assert!(Route::HaproxyReqbuf.absorbs_request(8 << 10));
        assert!(!Route::HaproxyReqbuf.absorbs_request(16 << 20));
        assert!(!Route::Haproxy.absorbs_request(1));
        assert_eq!(
            Route::CaddyBuf.for_direction(Direction::Upload),
            Route::CaddyReqbuf
        );
        // Apache buffers a response only with its raised threshold, and
        // within it; H2O buffers every response and request body, in
        // memory up to the body rounded up to a power of two, so 8 x 16
        // MiB outgrow 96 MiB.
        assert!(!Route::Apache.absorbs(1, cap));
        assert!(Route::ApacheBuf.absorbs(16 << 20, cap));
        assert!(!Route::ApacheBuf.absorbs((32 << 20) + 1, cap));
        assert!(!Route::ApacheBuf.absorbs_request(1));
        assert!(Route::ApacheReqbuf.absorbs_request(1 << 40));
        assert!(!Route::ApacheReqbuf.absorbs(1, cap));
        // ... to a temp file, so 8 of them do not outgrow its memory.
        assert!(!Route::ApacheReqbuf.outgrows_memory(Direction::Upload, 8, 16 << 20, mem));
        assert_eq!(
            Route::ApacheBuf.for_direction(Direction::Upload),
            Route::ApacheReqbuf
        );
        assert!(Route::H2o.absorbs(64 << 20, cap));
        assert!(Route::H2o.absorbs_request(16 << 20));
        assert!(!Route::H2o.absorbs_request((1 << 30) + 1));
        assert!(!Route::H2o.outgrows_memory(d, 2, 16 << 20, mem));
        assert!(Route::H2o.outgrows_memory(d, 8, 16 << 20, mem));
        assert!(Route::H2o.outgrows_memory(Direction::Upload, 8, 16 << 20, mem));
        assert!(Route::ApacheBuf.outgrows_memory(d, 8, 16 << 20, mem));
        assert!(!Route::Apache.outgrows_memory(d, 8, 16 << 20, mem));
        // Squid reads ahead a whole response only with its raised gap, in
        // memory, and streams every body.
        assert!(!Route::Squid.absorbs(1 << 20, cap));
        assert!(Route::SquidBuf.absorbs(16 << 20, cap));
        assert!(!Route::SquidBuf.absorbs((32 << 20) + 1, cap));
        assert!(!Route::SquidBuf.absorbs_request(1));
        assert!(!Route::SquidBuf.outgrows_memory(d, 2, 16 << 20, mem));
        assert!(Route::SquidBuf.outgrows_memory(d, 8, 16 << 20, mem));
        // Traffic Server: a whole response within its raised water mark; a
        // whole body within post_copy_size with request buffering.
        assert!(!Route::Ats.absorbs(1 << 20, cap));
        assert!(Route::AtsBuf.absorbs(16 << 20, cap));
        assert!(Route::AtsReqbuf.absorbs_request(16 << 20));
        assert!(!Route::AtsReqbuf.absorbs_request((32 << 20) + 1));
        assert!(!Route::AtsBuf.absorbs_request(1));
        assert_eq!(
            Route::AtsBuf.for_direction(Direction::Upload),
            Route::AtsReqbuf
        );
    }

    #[test]
    fn through_names_the_request_buffering_of_the_request_direction() {
        for r in Route::ALL {
            assert_eq!(r.for_direction(Direction::Download), r);
        }
        for d in [Direction::Upload, Direction::Headers] {
            let mapped: Vec<Route> = Route::RESPONSE.iter().map(|r| r.for_direction(d)).collect();
            assert_eq!(
                mapped,
                [
                    Route::Direct,
                    Route::NginxReqbufOff,
                    Route::NginxReqbufOn,
                    Route::PingoraReqbufOff,
                    Route::PingoraReqbufOn
                ]
            );
            for r in Route::REQUEST {
                assert_eq!(r.for_direction(d), r);
            }
        }
    }

    #[test]
    fn only_request_buffering_on_absorbs_an_upload_within_its_limit() {
        let upload = 16 << 20;
        // The HTTP/2 edges' routes treat a body as their twins do; the
        // lab's slow uploaders speak HTTP/1.1.
        let absorbing: Vec<Route> = Route::ALL
            .into_iter()
            .filter(|r| r.http1_twin() == *r && r.absorbs_request(upload))
            .collect();
        assert_eq!(
            absorbing,
            [
                Route::NginxReqbufOn,
                Route::PingoraReqbufOn,
                Route::CaddyReqbuf,
                Route::VarnishReqbuf,
                Route::ApacheReqbuf,
                Route::H2o,
                Route::AtsReqbuf
            ]
        );
        // The response routes' NGINX buffers bodies up to its default 1m.
        assert!(Route::NginxOn.absorbs_request(1 << 20));
        assert!(!Route::PingoraOn.absorbs_request(1 << 20));
        assert!(!Route::NginxReqbufOn.absorbs_request((32 << 20) + 1));
        let sets: Vec<Route> = Route::ALL
            .into_iter()
            .filter(|r| r.request_body().is_some_and(|b| b.explicit))
            .collect();
        let mut first: Vec<Route> = sets[..4].to_vec();
        first.sort_by_key(|r| Route::REQUEST.iter().position(|q| q == r));
        assert_eq!(first, Route::REQUEST);
        assert_eq!(
            sets[4..],
            [
                Route::CaddyReqbuf,
                Route::HaproxyReqbuf,
                Route::VarnishReqbuf,
                Route::ApacheReqbuf,
                Route::AtsReqbuf
            ]
        );
        for r in Route::REQUEST {
            assert!(!Route::RESPONSE.contains(&r));
        }
    }
}
