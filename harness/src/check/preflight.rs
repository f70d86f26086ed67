//! The checks before the search: enough file descriptors, a large path
//! that answers 200 with a known length and too large to fit in the
//! kernel's buffers (the download direction), an upload path that takes a
//! POST (the upload direction), and (per route, in [`super`]) the fast
//! path's baseline. Each finding is one line, kept for `--json`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use common::units::Size;
use serde::Serialize;

use analysis::model::{self, PathBuffers};
use lab::envinfo;
use lab::netns::{NetLab, Side};

/// How a pre-flight check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warning,
    Error,
}

/// One pre-flight finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// `descriptors`, `large_path`, `buffers`, `upload_path`, `level_length`,
    /// `baseline`.
    pub check: &'static str,
    pub status: Status,
    pub message: String,
}

impl Finding {
    pub fn new(check: &'static str, status: Status, message: String) -> Finding {
        Finding {
            check,
            status,
            message,
        }
    }
}

/// Descriptors a process of the check may hold besides its connections:
/// standard streams, the runtime, log and result files.
const FD_OVERHEAD: u64 = 64;

/// The descriptors one process needs: `max_slow` downloads, the fast
/// requests that may be outstanding at once (`fast_rate` x `timeout`),
/// and [`FD_OVERHEAD`].
pub fn descriptors_needed(max_slow: u32, fast_rate: f64, timeout: Duration) -> u64 {
    u64::from(max_slow) + (fast_rate * timeout.as_secs_f64()).ceil() as u64 + FD_OVERHEAD
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit (children inherit
/// it: the load generator and the user's server), and fails when even the
/// hard limit is below `needed`.
pub fn descriptors(needed: u64) -> Result<Finding> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(std::io::Error::last_os_error()).context("reading RLIMIT_NOFILE");
    }
    let (soft, hard) = (lim.rlim_cur, lim.rlim_max);
    let mut raised = None;
    if soft < hard {
        let new = libc::rlimit {
            rlim_cur: hard,
            rlim_max: hard,
        };
        // SAFETY: setrlimit reads the struct we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } == 0 {
            raised = Some(soft);
        }
    }
    let now = if raised.is_some() { hard } else { soft };
    if now < needed {
        bail!(common::exit::BadInput::new(format!(
            "too few file descriptors: the slow readers and the open-loop client need about {needed}, and the limit is {now} (hard limit {hard}); raise it (ulimit -n) or lower --max-slow"
        )));
    }
    let message = match raised {
        Some(old) => format!(
            "raised the open-file limit from {old} to the hard limit {hard} (about {needed} needed)"
        ),
        None => format!("open-file limit {now} (about {needed} needed)"),
    };
    Ok(Finding::new("descriptors", Status::Ok, message))
}

/// What the large path answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Large {
    pub bytes: u64,
    /// How its end was known: `content-length`, or, for a body without a
    /// length, `chunked` or `close` (it was downloaded once to measure it).
    pub framing: &'static str,
    /// The `Server` header of the answer, if it had one: what the user's
    /// server says it is, for the report.
    pub server: Option<String>,
}

/// The most a length-less large path is read to measure it.
const MAX_MEASURED: u64 = 4 << 30;

/// `GET path` on `addr`: its status and length, from `Content-Length`, or,
/// for a chunked body or one that ends at the close, by reading it once
/// (any server's large answer counts; its framing is recorded, never a
/// reason to refuse it).
pub fn large_path(addr: SocketAddr, host: &str, path: &str, wait: Duration) -> Result<Large> {
    use loadgen::response::{Discard, Framing, Method, ResponseReader, read_blocking};
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    let mut s = connect(addr, &format!("GET {path}"))?;
    s.set_read_timeout(Some(wait))?;
    s.write_all(request.as_bytes())
        .with_context(|| format!("sending GET {path}"))?;
    let mut reader = ResponseReader::new(Method::Get);
    let mut buf = vec![0u8; 256 << 10];
    let mut head = Vec::new();
    let read = read_blocking(
        &mut TakeHead {
            inner: &mut s,
            head: &mut head,
            max: MAX_MEASURED,
        },
        &mut buf,
        &mut reader,
        &mut Discard,
        |_| {},
    );
    let text = String::from_utf8_lossy(&head).into_owned();
    let server = header(&text, "server");
    match (reader.status(), reader.framing()) {
        (Some(200), Some(Framing::Length(bytes))) => Ok(Large {
            bytes,
            framing: "content-length",
            server,
        }),
        (Some(200), Some(framing)) => {
            read.map_err(|e| {
                anyhow::anyhow!("measuring GET {path} (it has no Content-Length): {e}")
            })?;
            Ok(Large {
                bytes: reader.body_bytes(),
                framing: if framing == Framing::Chunked {
                    "chunked"
                } else {
                    "close"
                },
                server,
            })
        }
        (Some(code), _) => bail!(common::exit::BadInput::new(format!(
            "the large path {path} answers {code}, not 200"
        ))),
        (None, _) => bail!(common::exit::BadInput::new(match read {
            Err(f) if f.kind == loadgen::ErrorKind::Timeout =>
                nothing_in(&format!("GET {path}"), wait),
            Err(f) => format!("GET {path} got no status line ({f})"),
            Ok(()) => format!("GET {path} got no status line"),
        })),
    }
}

/// What a pre-flight request that got no answer in `wait` says.
fn nothing_in(what: &str, wait: Duration) -> String {
    format!(
        "the server accepted {what} but answered nothing in {} (--ready-timeout)",
        common::units::format_duration(wait)
    )
}

/// A stream that keeps the first bytes it reads (the response head, for
/// its headers) and ends after `max` bytes.
struct TakeHead<'a> {
    inner: &'a mut TcpStream,
    head: &'a mut Vec<u8>,
    max: u64,
}

impl Read for TakeHead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.max == 0 {
            return Ok(0);
        }
        let n = self.inner.read(buf)?;
        if self.head.len() < 16 << 10 {
            self.head.extend_from_slice(&buf[..n.min(16 << 10)]);
        }
        self.max = self.max.saturating_sub(n as u64);
        Ok(n)
    }
}

/// The value of header `name` (any case) of a response head.
fn header(text: &str, name: &str) -> Option<String> {
    text.split("\r\n\r\n")
        .next()?
        .split("\r\n")
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim().to_string())
}

/// The body of the upload path's probe: one pattern block's first bytes.
const PROBE_BYTES: usize = 64;

/// `POST path` on `addr` with a small body of the documented pattern: an
/// upload path must answer it with a 2xx. A 404, 405 or 411 (and any other
/// status) means the target does not take uploads there, so a slow upload
/// to it would hold nothing and every level would be a false "held".
pub fn upload_path(addr: SocketAddr, host: &str, path: &str, wait: Duration) -> Result<Finding> {
    let body = &common::pattern::block(loadgen::upload::UPLOAD_BLOCK)[..PROBE_BYTES];
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/octet-stream\r\n\
         Content-Length: {PROBE_BYTES}\r\nX-Slowlab-Block: {}\r\nConnection: close\r\n\r\n",
        loadgen::upload::UPLOAD_BLOCK
    )
    .into_bytes();
    request.extend_from_slice(body);
    let text = exchange(addr, &request, &format!("POST {path}"), wait)?;
    match parse_head(&text).0 {
        Some(code) if (200..300).contains(&code) => Ok(Finding::new(
            "upload_path",
            Status::Ok,
            format!("POST {path} with a {PROBE_BYTES}-byte body answers {code}"),
        )),
        Some(code) => bail!(common::exit::BadInput::new(format!(
            "the target does not take uploads at {path}: POST {path} answers {code}{}, so a slow upload would hold nothing there; give --upload-path a path that reads a request body",
            match code {
                404 => " (not found)",
                405 => " (method not allowed)",
                411 => " (length required)",
                _ => "",
            }
        ))),
        None => bail!("POST {path} got no status line"),
    }
}

/// Sends `request` on a new connection to `addr` and returns the response
/// head as text (`what` names the request in errors).
fn exchange(addr: SocketAddr, request: &[u8], what: &str, wait: Duration) -> Result<String> {
    let mut s = connect(addr, what)?;
    s.set_read_timeout(Some(wait))?;
    s.write_all(request)
        .with_context(|| format!("sending {what}"))?;
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = match s.read(&mut buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                bail!(common::exit::BadInput::new(nothing_in(what, wait)))
            }
            Err(e) => bail!(common::exit::BadInput::new(format!(
                "reading the answer to {what}: {e}"
            ))),
        };
        if n == 0 || head.len() > 64 << 10 {
            bail!("{what} got no complete response head");
        }
        head.extend_from_slice(&buf[..n]);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

/// A connection to `addr` for the probe `what`: one that cannot be made is
/// a target that cannot be checked (bad input).
fn connect(addr: SocketAddr, what: &str) -> Result<TcpStream> {
    TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(|e| {
        common::exit::BadInput::new(format!("{what}: cannot connect to {addr}: {e}")).into()
    })
}

/// The status code and `Content-Length` of a response head.
fn parse_head(text: &str) -> (Option<u16>, Option<u64>) {
    let status = loadgen::probe::status_line_code(text.as_bytes());
    let length = text
        .split("\r\n")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok());
    (status, length)
}

/// The `SO_RCVBUF` Linux grants for a request of `requested` bytes (it
/// doubles the value for its bookkeeping, within its bounds).
pub fn granted_rcvbuf(requested: u64) -> Result<u64> {
    let req = libc::c_int::try_from(requested).context("--rcvbuf is too large")?;
    // SAFETY: plain socket calls on a descriptor we own and close; the
    // option values live on our stack.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error()).context("creating a socket");
        }
        let size = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        let set = libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&req as *const libc::c_int).cast(),
            size,
        );
        let mut granted: libc::c_int = 0;
        let mut len = size;
        let get = libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&mut granted as *mut libc::c_int).cast(),
            &mut len,
        );
        libc::close(fd);
        if set != 0 || get != 0 {
            bail!("setting SO_RCVBUF failed");
        }
        Ok(granted as u64)
    }
}

/// One figure of the direct path's [`PathBuffers`], read in the namespace
/// of its side: the send buffer (up to `tcp_wmem` max), `tcp_rmem` max
/// (recorded beside it) and the reader's granted `SO_RCVBUF` (setting it
/// turns off the receive side's autotuning).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    WmemMax,
    RmemMax,
    RcvbufGranted,
}

impl Figure {
    pub const ALL: [Figure; 3] = [Figure::WmemMax, Figure::RmemMax, Figure::RcvbufGranted];

    /// Where the figure is true. `tcp_wmem` and `tcp_rmem` are per network
    /// namespace, and the sockets that autotune to them are the server's:
    /// the app's send buffer (and a proxy's upstream receive buffer), so
    /// with `--netns` (and `--sysctl server:...`) they are read on the
    /// server side. `SO_RCVBUF` is what the readers are granted in theirs.
    pub fn side(self) -> Side {
        match self {
            Figure::WmemMax | Figure::RmemMax => Side::Server,
            Figure::RcvbufGranted => Side::Client,
        }
    }

    /// The figure in the calling thread's namespace.
    fn read_here(self, rcvbuf: u64) -> Result<u64> {
        let max = |key: &str| -> Result<u64> {
            Ok(envinfo::triple(key).with_context(|| format!("reading {key}"))?[2])
        };
        match self {
            Figure::WmemMax => max("net.ipv4.tcp_wmem"),
            Figure::RmemMax => max("net.ipv4.tcp_rmem"),
            Figure::RcvbufGranted => granted_rcvbuf(rcvbuf),
        }
    }
}

/// What the kernel can hold between the server and one slow reader: the
/// buffer model's direct path, each figure read in its side's namespace
/// of `netlab` (the host's without one). `behind_link`: the readers read
/// unpaced behind `--link`, so the model counts no receive buffer.
pub fn buffers(rcvbuf: u64, behind_link: bool, netlab: Option<&NetLab>) -> Result<PathBuffers> {
    buffers_with(behind_link, |f| {
        let ns = netlab.map(|n| n.side(f.side()).path());
        lab::netns::within(ns.as_deref(), || f.read_here(rcvbuf))
    })
}

/// The direct path's buffers from `read`, which is asked for each figure.
fn buffers_with(
    behind_link: bool,
    mut read: impl FnMut(Figure) -> Result<u64>,
) -> Result<PathBuffers> {
    let wmem_max = read(Figure::WmemMax)?;
    let rmem_max = read(Figure::RmemMax)?;
    let granted = read(Figure::RcvbufGranted)?;
    let client = model::client_rcvbuf(behind_link, Some(granted)).unwrap_or(granted);
    Ok(PathBuffers::direct(wmem_max, rmem_max, client))
}

/// Whether a response of `bytes` can hold a handler: it must not fit in
/// the kernel's buffers `b` (the model's `B`), or the server hands it over
/// at once and a slow reader holds nothing.
pub fn fits(bytes: u64, b: &PathBuffers, behind_link: bool, path: &str) -> Result<Finding> {
    let reader = if behind_link {
        "the reader's receive buffer stays empty, as it reads unpaced behind the link".to_string()
    } else {
        format!("SO_RCVBUF granted {}", Size(b.client_rcvbuf))
    };
    let detail = format!(
        "{path} is {} and the kernel buffers up to {} on the way to one slow reader (tcp_wmem max {} + {reader}; tcp_rmem max {})",
        Size(bytes),
        Size(b.b()),
        Size(b.wmem_max),
        Size(b.rmem_max)
    );
    if bytes <= b.b() {
        bail!(common::exit::BadInput::new(format!(
            "this response fits in the kernel's buffers: slow readers cannot hold a worker with it, use a larger one ({detail})"
        )));
    }
    Ok(Finding::new("buffers", Status::Ok, detail))
}

/// How long a slow reader holds a handler at least: until all but what the
/// kernel buffers was read (the model's `app_send_s`). A level shorter
/// than that is measured while every reader still holds its handler.
pub fn hold_s(bytes: u64, b: &PathBuffers, slow_rate: u64) -> f64 {
    model::app_send_s(bytes, b.b(), slow_rate.max(1) as f64)
}

/// The check's slow readers' rate unless `--slow-rate` says otherwise: a
/// reader at 16 KiB/s still moves its socket every second (one granted
/// window of the default `SO_RCVBUF`), far above any server's or proxy's
/// minimum-rate timeout, and costs the load generator least (its cost
/// grows with the bytes it reads: the book, "The load generator and the
/// reader models"). A level ends when its fast calls do and its
/// readers are cut, so how long a reader would take to finish never
/// lengthens a check.
pub const MIN_AUTO_RATE: u64 = 16 << 10;

/// The slow readers' rate: `given` (`--slow-rate`), else
/// [`MIN_AUTO_RATE`]; with the finding that says which and why: how long
/// a reader at that rate holds its handler (until all but the kernel's
/// buffers, the model's `B`, is read) against a level of `window_s`.
pub fn slow_rate(bytes: u64, b: &PathBuffers, window_s: f64, given: Option<u64>) -> (u64, Finding) {
    if let Some(rate) = given {
        let f = Finding::new(
            "slow_rate",
            Status::Ok,
            format!("each slow reader reads at {}/s (--slow-rate)", Size(rate)),
        );
        return (rate, f);
    }
    let rate = MIN_AUTO_RATE;
    let f = Finding::new(
        "slow_rate",
        Status::Ok,
        format!(
            "each slow reader reads at {}/s, the load generator's cheapest: it would hold its handler for {:.0} s ({} of the {} response beyond the kernel's {}), and is cut when a level of {window_s:.1} s ends; --slow-rate checks at your clients' real rate",
            Size(rate),
            hold_s(bytes, b, rate),
            Size(bytes.saturating_sub(b.b())),
            Size(bytes),
            Size(b.b())
        ),
    );
    (rate, f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_rate_is_the_cheapest_and_holds_a_reader_through_a_level() {
        let b = PathBuffers::direct(4 << 20, 32 << 20, 16 << 10);
        let (rate, f) = slow_rate(16 << 20, &b, 5.25, None);
        assert_eq!(rate, MIN_AUTO_RATE);
        // It still holds its handler when the level ends, by far.
        assert!(hold_s(16 << 20, &b, rate) > 100.0 * 5.25);
        assert!(f.message.contains("--slow-rate"), "{}", f.message);
        // A response barely beyond B is let go of within a second even at
        // that rate: the route's pre-flight warns of it.
        let small = (4 << 20) + (32 << 10);
        assert!(hold_s(small, &b, slow_rate(small, &b, 5.25, None).0) < 5.25);
        assert_eq!(slow_rate(16 << 20, &b, 5.25, Some(2 << 20)).0, 2 << 20);
    }

    #[test]
    fn heads_give_status_and_length() {
        let h = "HTTP/1.1 200 OK\r\nContent-Type: x\r\ncontent-length: 16777216\r\n\r\n";
        assert_eq!(parse_head(h), (Some(200), Some(16 << 20)));
        let h = "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(parse_head(h), (Some(404), None));
        assert_eq!(parse_head("garbage"), (None, None));
    }

    #[test]
    fn a_response_that_fits_in_the_buffers_is_refused() {
        let b = PathBuffers::direct(4 << 20, 32 << 20, 16 << 10);
        // The model's direct `B`: the send buffer and the granted SO_RCVBUF.
        assert_eq!(b.b(), (4 << 20) + (16 << 10));
        let err = fits(1 << 20, &b, false, "/large").unwrap_err();
        assert!(err.is::<common::exit::BadInput>());
        assert!(
            err.to_string().contains("fits in the kernel's buffers"),
            "{err}"
        );
        let ok = fits(16 << 20, &b, false, "/large").unwrap();
        assert_eq!(
            ok.message,
            "/large is 16MiB and the kernel buffers up to 4112KiB on the way to one slow reader \
             (tcp_wmem max 4MiB + SO_RCVBUF granted 16KiB; tcp_rmem max 32MiB)"
        );
        let hold = hold_s(16 << 20, &b, 2 << 20);
        assert!((hold - 5.99).abs() < 0.01, "{hold}");
        assert_eq!(hold, model::app_send_s(16 << 20, b.b(), (2 << 20) as f64));
        assert_eq!(
            descriptors_needed(64, 8.0, Duration::from_secs(5)),
            64 + 40 + 64
        );
    }

    #[test]
    fn behind_a_link_the_readers_receive_buffer_counts_nothing() {
        let read = |f: Figure| -> Result<u64> {
            Ok(match f {
                Figure::WmemMax => 4 << 20,
                Figure::RmemMax => 32 << 20,
                Figure::RcvbufGranted => 16 << 10,
            })
        };
        let paced = buffers_with(false, read).unwrap();
        let linked = buffers_with(true, read).unwrap();
        assert_eq!(paced, PathBuffers::direct(4 << 20, 32 << 20, 16 << 10));
        assert_eq!(linked.b(), 4 << 20);
        // A response between the two is refused only for paced readers.
        let bytes = (4 << 20) + (8 << 10);
        assert!(fits(bytes, &paced, false, "/large").is_err());
        let f = fits(bytes, &linked, true, "/large").unwrap();
        assert!(
            f.message
                .contains("tcp_wmem max 4MiB + the reader's receive buffer stays empty"),
            "{}",
            f.message
        );
        assert!(hold_s(16 << 20, &linked, 2 << 20) > hold_s(16 << 20, &paced, 2 << 20));
    }

    #[test]
    fn the_send_buffer_is_read_on_the_server_side_and_the_rcvbuf_on_the_client_side() {
        assert_eq!(Figure::WmemMax.side(), Side::Server);
        assert_eq!(Figure::RmemMax.side(), Side::Server);
        assert_eq!(Figure::RcvbufGranted.side(), Side::Client);
        // Each figure comes from the namespace of its own side.
        let mut asked = Vec::new();
        let b = buffers_with(false, |f| {
            asked.push(f);
            Ok(match f.side() {
                Side::Server => 4 << 20,
                Side::Client => 16 << 10,
            })
        })
        .unwrap();
        assert_eq!(asked, Figure::ALL);
        assert_eq!(b, PathBuffers::direct(4 << 20, 4 << 20, 16 << 10));
        // Without namespaces, every figure is the host's.
        let host = buffers(8 << 10, false, None).unwrap();
        assert_eq!(
            host.wmem_max,
            envinfo::triple("net.ipv4.tcp_wmem").unwrap()[2]
        );
    }

    #[test]
    fn linux_grants_more_than_it_was_asked() {
        let g = granted_rcvbuf(8 << 10).unwrap();
        assert!(g >= 8 << 10, "{g}");
    }
}
