//! Before t0, when the load speaks TLS or HTTP/2: one `/fast` request over
//! the edge's protocol. A target that does not speak it (no TLS, a
//! certificate the load does not trust, no h2 in ALPN, an HTTP/1.1-only
//! server given `--http2`) is refused as bad input with one line, rather
//! than measured as a run of failed requests. A target that refuses the
//! connection, or does not answer within the probe's wait, is left to the
//! run, which records it as it always did.

use std::time::Duration;

use common::exit::BadInput;

use crate::config::LoadConfig;
use crate::edge::{Edge, EdgeArgs};
use crate::error::{ErrorKind, Failure};
use crate::h2conn::{self, H2Conn};
use crate::target::Target;
use crate::{bind, net};

/// The longest the probe waits for any step.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The status code of an HTTP/1.x response's first line (`HTTP/1.1 200
/// OK`), from however much of the head was read; `None` when it is not
/// one. The one parser of every readiness probe's answer.
pub fn status_line_code(head: &[u8]) -> Option<u16> {
    let line = head.split(|&b| b == b'\n').next()?;
    let mut words = std::str::from_utf8(line).ok()?.split_whitespace();
    words.next().filter(|v| v.starts_with("HTTP/"))?;
    let code = words.next()?;
    match code.len() == 3 {
        true => code.parse().ok().filter(|c| (100..1000).contains(c)),
        false => None,
    }
}

/// Probes the target; `Err` is [`BadInput`].
pub async fn probe(config: &LoadConfig) -> anyhow::Result<()> {
    let edge = &config.edge;
    if edge.tls.is_none() && edge.http2.is_none() {
        return Ok(());
    }
    let wait = config.timeout.min(PROBE_TIMEOUT);
    let target = &config.target;
    let tcp = async {
        let socket = net::socket(target.addr).map_err(|e| Failure::local("socket", &e))?;
        bind::bind(&socket, config.binds.fast).map_err(|e| Failure::local("bind", &e))?;
        net::start_connect(&socket, target.addr).map_err(|e| Failure::connect(&e))?;
        net::finish_connect(socket).await
    };
    let Ok(Ok(tcp)) = tokio::time::timeout(wait, tcp).await else {
        // Not reachable: the run records that, request by request.
        return Ok(());
    };
    let refuse = |f: Failure| -> anyhow::Error {
        let what = match (edge.tls.is_some(), edge.http2.is_some()) {
            (true, true) => "HTTP/2 over TLS",
            (true, false) => "TLS",
            (false, _) => "HTTP/2 (prior-knowledge h2c)",
        };
        BadInput::new(format!(
            "{}: the target does not speak {what} as asked ({})",
            target.url, f.detail
        ))
        .into()
    };
    let uri = h2conn::uri(
        target.parsed.tls,
        &target.parsed.authority,
        &config.fast_path,
    );
    let result = tokio::time::timeout(wait, async {
        match &edge.tls {
            None => ask(tcp, config, &uri).await,
            Some(tls) => {
                let (stream, _) = tls.handshake(tcp).await?;
                ask(stream, config, &uri).await
            }
        }
    })
    .await;
    match result {
        Ok(answer) => answer.map_err(refuse),
        // No answer in time is not a protocol the target lacks: a server
        // whose handlers are held answers late or not at all (behind
        // Apache's HTTP/2 edge, the recovery after slow streams), and the
        // run records that, request by request.
        Err(_) => Ok(()),
    }
}

/// Over HTTP/2, one request and its response head; over TLS alone the
/// handshake was the question.
async fn ask<S>(io: S, config: &LoadConfig, uri: &str) -> Result<(), Failure>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let Some(settings) = &config.edge.http2 else {
        return Ok(());
    };
    let mut conn = H2Conn::handshake(io, settings).await?;
    let response = conn.get(uri).await?;
    response.await.map_err(|e| h2conn::failure(&e))?;
    Ok(())
}

/// What one `GET` over an edge got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeAnswer {
    pub status: u16,
    /// Over HTTP/2, the most streams the server lets this client open at
    /// once (its `SETTINGS_MAX_CONCURRENT_STREAMS`; `usize::MAX` as the
    /// h2 crate reports a server that sets no limit).
    pub max_concurrent_streams: Option<usize>,
}

/// The status of one `GET path` at the `https://` or `http://` `url`,
/// over the edge `args` asks for (TLS verified against `--tls-ca`,
/// HTTP/2 or HTTP/1.1), on a runtime of its own: how the lab learns that
/// a proxy it started at a TLS edge is up, its certificate loaded and its
/// upstream answering. Blocks for at most about `wait`.
pub fn edge_status(url: &str, args: &EdgeArgs, path: &str, wait: Duration) -> anyhow::Result<u16> {
    edge_get(url, args, path, wait).map(|a| a.status)
}

/// [`edge_status`] with what the server said of its HTTP/2 streams.
pub fn edge_get(
    url: &str,
    args: &EdgeArgs,
    path: &str,
    wait: Duration,
) -> anyhow::Result<EdgeAnswer> {
    let target = Target::resolve(url, false).map_err(|e| anyhow::anyhow!("{url}: {e}"))?;
    let edge = args.check(&target, false)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let uri = h2conn::uri(
        target.parsed.tls,
        &target.parsed.authority,
        &target.path(path),
    );
    let ask = async {
        let tcp = tokio::net::TcpStream::connect(target.addr)
            .await
            .map_err(|e| Failure::connect(&e))?;
        match &edge.tls {
            None => status(tcp, &edge, &target, &uri).await,
            Some(tls) => {
                let (stream, _) = tls.handshake(tcp).await?;
                status(stream, &edge, &target, &uri).await
            }
        }
    };
    let result = runtime.block_on(async { tokio::time::timeout(wait, ask).await });
    match result {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(f)) => anyhow::bail!("{}", f.detail),
        Err(_) => anyhow::bail!("no answer within {wait:?}"),
    }
}

/// The answer to `GET uri` over `io`: an HTTP/2 stream, its connection
/// driven here so that the server's settings can be read, or an HTTP/1.1
/// request whose status line is read.
async fn status<S>(io: S, edge: &Edge, target: &Target, uri: &str) -> Result<EdgeAnswer, Failure>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if let Some(settings) = &edge.http2 {
        let (send, mut conn) = settings
            .builder()
            .handshake::<S, bytes::Bytes>(io)
            .await
            .map_err(|e| h2conn::failure(&e))?;
        let ask = async {
            let response = h2conn::get(send, uri).await?;
            response.await.map_err(|e| h2conn::failure(&e))
        };
        tokio::pin!(ask);
        let head = tokio::select! {
            head = &mut ask => head?,
            ended = &mut conn => {
                ended.map_err(|e| h2conn::failure(&e))?;
                return Err(Failure::new(ErrorKind::Reset, "the connection ended unanswered"));
            }
        };
        return Ok(EdgeAnswer {
            status: head.status().as_u16(),
            max_concurrent_streams: Some(conn.max_concurrent_send_streams()),
        });
    }
    let mut io = io;
    let path = uri.splitn(4, '/').nth(3).unwrap_or_default();
    let request = format!(
        "GET /{path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        target.parsed.authority
    );
    io.write_all(request.as_bytes())
        .await
        .map_err(|e| Failure::transfer("request", &e))?;
    let mut head = [0u8; 64];
    let n = io
        .read(&mut head)
        .await
        .map_err(|e| Failure::transfer("response", &e))?;
    status_line_code(&head[..n])
        .map(|status| EdgeAnswer {
            status,
            max_concurrent_streams: None,
        })
        .ok_or_else(|| Failure::new(ErrorKind::Malformed, "no status line"))
}

#[cfg(test)]
mod tests {
    use super::status_line_code;

    #[test]
    fn a_status_line_gives_its_code_and_anything_else_none() {
        assert_eq!(
            status_line_code(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"),
            Some(200)
        );
        assert_eq!(status_line_code(b"HTTP/1.0 404 Not Found"), Some(404));
        assert_eq!(status_line_code(b"HTTP/1.1 400"), Some(400));
        for bad in [
            &b""[..],
            b"HTTP/1.1",
            b"SSH-2.0-OpenSSH 200",
            b"HTTP/1.1 20 OK",
            b"HTTP/1.1 abc",
            b"\x16\x03\x01",
        ] {
            assert_eq!(
                status_line_code(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
