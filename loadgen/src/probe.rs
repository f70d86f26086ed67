//! Before t0, when the load speaks TLS or HTTP/2: one `/fast` request over
//! the edge's protocol. A target that does not speak it (no TLS, a
//! certificate the load does not trust, no h2 in ALPN, an HTTP/1.1-only
//! server given `--http2`) is refused as bad input with one line, rather
//! than measured as a run of failed requests. A target that refuses the
//! connection is left to the run, which records it as it always did.

use std::time::Duration;

use common::exit::BadInput;

use crate::config::LoadConfig;
use crate::error::{ErrorKind, Failure};
use crate::h2conn::{self, H2Conn};
use crate::{bind, net};

/// The longest the probe waits for any step.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

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
    let timed_out = || Failure::new(ErrorKind::Timeout, format!("no answer within {wait:?}"));
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
    .await
    .unwrap_or_else(|_| Err(timed_out()));
    result.map_err(refuse)
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
