//! A pingora reverse proxy whose `--buffering on|off` follows NGINX's
//! `proxy_buffering` semantics.
//!
//! # Layout
//! - [`cli`]: `slowlab proxy` arguments and its `run` entry point.
//! - [`config`]: [`ProxyConfig`] and NGINX's rules for the buffer sizes.
//! - [`spool`]: memory buffers, then the temp file, then backpressure; pure
//!   accounting, unit-tested.
//! - [`spillfile`]: the unlinked `0600` temp file.
//! - [`reqbody`]: the request body, streamed or read whole first
//!   (`--request-buffering`), its temp file, 413 and the lingering close.
//! - [`upstream`]: connecting, the HTTP/1.0 request and the response head.
//! - [`pipe`]: the loop that moves one body from upstream to client and
//!   decides when the upstream is read.
//! - [`app`]: a connection's requests on pingora's HTTP/1 sessions:
//!   request, errors, head, stats.
//! - [`connlimit`]: NGINX's `worker_connections`, and the idle connections
//!   closed to make room.
//! - [`keepalive`]: a client connection between two requests (NGINX's
//!   `keepalive_*`).
//! - [`client`]: the client connection as pingora's `IO`: one write for a
//!   response that is whole at once, `TCP_NODELAY` only where it matters.
//! - [`stats`]: `--stats-log` and `--gauge-log`.
//! - [`server`]: [`spawn`] and [`ProxyHandle`]: runtime, accept loop, stop.
//!
//! # Design
//!
//! `slowlab proxy`, a pingora-based reverse proxy whose `--buffering on|off`
//! follows NGINX's `proxy_buffering`: memory buffers, then an unlinked temp
//! file, then backpressure.
//!
//! Why this design: pingora 0.9's `ProxyHttp` path moves the body through a
//! small bounded channel with synchronous filters on the client side, so it
//! cannot read the upstream independently of the client, and it has no
//! spooling. We use pingora for what it does well, the per-connection HTTP/1
//! server (`ServerSession` in `app.rs`, with `read_request`, `respond_error`,
//! `write_response_header`, `write_response_body` whose write timeout is
//! `--send-timeout`, and `finish`), and build the rest ourselves, each piece
//! paying per request only what NGINX pays (one upstream `connect` on a plain
//! tokio socket, no pingora connector with its extra socket options and
//! buffering layers; see `scripts/bench-proxy.sh` for the CPU per request and
//! `scripts/bench-instructions.sh` for the user-space instructions). A
//! connection's future is copied whole when its task is spawned and a
//! request's when it begins, so what only some requests need and is
//! kilobytes of state (the error page, the pipe, pingora's `finish`) is
//! boxed, each box in a statement of its own (a temporary of the statement
//! that awaits lives across the await and would keep its place in the
//! future); `app.rs`'s test holds the connection's future under 6 KiB:
//! - the client connection (`client.rs`): a pingora `IO` over a tokio socket
//!   that sends a response whose body is whole at once in one `writev` with
//!   its head (the first response's, and each later one's on a connection
//!   kept open), sets `TCP_NODELAY` only before a streamed body's writes or
//!   a later response, and lets `close(2)` send the FIN;
//! - the listener and stop (`server.rs`): our own tokio runtime with
//!   `--threads` workers (one: the current-thread scheduler on the proxy's
//!   own thread, as `serve --model async --workers 1`), because pingora's `Server` binds inside the runtime,
//!   cannot report the port picked for `:0`, installs its own signal handlers,
//!   exits the process, and counts grace in whole seconds; it binds with
//!   NGINX's backlog (511) and accepts with `serve`'s accept
//!   (`common::accept`), registering each connection with the runtime at once
//!   (`TcpStream::from_std`: its first read waits for epoll, as NGINX's does);
//!   when more connections wait behind the one taken, it yields before the
//!   next accept, so a backlog is taken one connection per pass of the event
//!   loop, as NGINX's `multi_accept off` does (accepting up to tokio's budget
//!   at once, a saturated proxy piled up connections, closed idle kept-open
//!   ones for room and reset their clients, where NGINX's clients waited in
//!   the backlog);
//! - the upstream response head (`upstream.rs`), read with httparse into one
//!   `proxy_buffer_size` buffer, because pingora's client session reads bodies
//!   in 64 KiB pieces into a buffer of its own, which would break "buffering
//!   off holds about one `proxy_buffer_size` read" and hide bytes from the
//!   accounting; upstream requests are HTTP/1.0 with `Connection: close`, like
//!   NGINX's default; the head's headers become pingora's `ResponseHeader`
//!   as pieces of one copy of the head (names as the upstream spelled them,
//!   values as `Bytes`), not an allocation per name and value; while the head
//!   is awaited, the read timeout is cut into
//!   200 ms slices with a peek at the client's socket between them (the same
//!   check as the pipe's, no timer beyond the read's own until 200 ms pass), so
//!   a client that leaves before the head releases the upstream at once; a
//!   request body that ends short is the client's 400 (`client_body_short`);
//! - the pipe (`pipe.rs`): one task per response, one `select!` over the client
//!   write in flight, a cancel-safe upstream read sized by the `Spool`, the read
//!   timeout, stop, and, while no write is in flight, a peek at the client's
//!   socket every 200 ms (NGINX's broken-connection check; its timer is made
//!   the first time the pipe waits with nothing to write), so a client that
//!   leaves while the origin stalls releases the upstream at once. The `Spool` (`spool.rs`, pure accounting, unit-tested
//!   with random schedules) is the only place that decides whether the upstream
//!   may be read: memory buffers, then an unlinked `0600` temp file
//!   (`spillfile.rs`) written in `temp_file_write_size` pieces, then
//!   backpressure.
//!
//! - the request body (`reqbody.rs`, `--request-buffering on|off`, NGINX's
//!   `proxy_request_buffering`): streamed to the upstream as it arrives, or
//!   read whole before the upstream is connected (memory up to
//!   `--client-body-buffer-size`, then all of it in a `spillfile.rs` temp
//!   file), 413 beyond `--client-max-body-size` with NGINX's lingering close;
//!   a chunked body is always read whole and sent with a `Content-Length`.
//!   `app.rs` puts one deadline, `--client-header-timeout`, on the whole
//!   request head (NGINX's `client_header_timeout`; on expiry the connection
//!   is closed without an answer, as NGINX does) in place of pingora's
//!   per-read timer, so a request without a body pays what it paid before.
//! - keep-alive (`keepalive.rs`, NGINX's `keepalive_timeout`,
//!   `keepalive_requests`, `keepalive_time`): `app.rs` serves a client
//!   connection's requests in one loop, each on a fresh upstream connection;
//!   reading a request lets pingora's session decide from the client's
//!   version and `Connection` header, `config::KeepAlive` may make it the
//!   last, and pingora's `finish` hands the connection back only after a
//!   response delivered whole with a length. `keepalive.rs` then waits for
//!   the next request (its first bytes read, at most `--keepalive-timeout`,
//!   not at all once the accept loop's stop comes), passes those bytes, or
//!   the pipelined ones, to the next session, and has `client.rs` set `TCP_NODELAY` as NGINX does on
//!   keep-alive connections.
//! - connections (`connlimit.rs`, NGINX's `worker_connections`): one count
//!   of client and upstream connections (the listener's included) with a
//!   `Slot` per connection, freed on drop; the upstream's slot travels with
//!   its socket (`upstream::Upstream`) and is freed when the body is read.
//!   An idle kept-open connection parks its slot in an ordered map while it
//!   waits, so a new connection that finds at most 1/16 free frees the
//!   oldest eighth of them (1 to 32) at once (`ngx_drain_connections`) and
//!   their waits end; if none is free then, a client is closed at once and
//!   an upstream connection refused (500). The idle wait reads the next
//!   request's first bytes (`ClientIo::read_next`, at most pingora's first
//!   header read, 4 KiB) and hands them to the next session as its prefix,
//!   as NGINX's keep-alive handler reads into a header buffer it allocates
//!   only once the socket is readable (an idle connection holds none);
//!   readiness is confirmed by the read, because tokio's stays set after a
//!   body read that took exactly what was left.
//! - the stats log (`stats.rs`): each response's row is formatted in place
//!   into a pending batch, which goes to the file in one `write(2)` when it
//!   holds 64 KiB, every 100 ms (a task in `server.rs`), when the accept loop
//!   stops, and when the log is dropped; the batch is swapped out under its
//!   lock and written under the file's own, so a response appending its row
//!   never waits for a `write(2)` in progress; no response pays a system call
//!   for its row (NGINX in the same stacks keeps no access log), and a row
//!   reaches the file at most 100 ms after its response ended.
//!
//! Its invariants: memory per response <= `buffer_size + count x size`; spilled
//! bytes <= `max_temp_file_size`; bytes leave in arrival order; the upstream
//! connection is dropped the moment its body is read, which is what frees a
//! sync worker; with request buffering on, no upstream connection exists
//! until the whole request body is in hand.
//!
//! With `--tls-cert`, `--tls-key` and `--http2` the proxy terminates TLS
//! and HTTP/2 towards its clients as deployed proxies do ([`edge`]): each
//! HTTP/2 stream is served by the same request path towards the same
//! HTTP/1.0 upstream, so one client connection of N slow streams holds N
//! upstream connections unless the response is buffered. The cleartext
//! HTTP/1 path is untouched.
//!
//! `examples/floor.rs` is no part of `slowlab`: it is the yardstick for the
//! design's cost. `floor tokio` does a proxy's socket work for a request on
//! bare tokio and nothing else; `floor pingora` does it through pingora's
//! `ServerSession` over this crate's `client::ClientIo`, with its
//! `upstream::request_wire` and `upstream::read_head` (that reader's timer is
//! its only timeout; no limits, logs or keep-alive). `FLOOR=1` of `scripts/bench-proxy.sh` and
//! `scripts/bench-instructions.sh` measures both beside `slowlab proxy` and
//! NGINX, which splits the proxy's cost per request into tokio's, pingora's
//! session's and its own.

pub mod app;
pub mod cli;
pub mod client;
pub mod config;
pub mod connlimit;
pub mod edge;
pub mod keepalive;
pub mod pipe;
pub mod reqbody;
pub mod server;
pub mod spillfile;
pub mod spool;
pub mod stats;
pub mod upstream;

pub use cli::{ProxyArgs, run};
pub use config::{BufferConfig, Buffering, KeepAlive, ProxyConfig, RequestConfig};
pub use server::{ProxyHandle, spawn};
