//! One HTTP/2 client connection of the load (the `h2` crate): the
//! handshake with the load's windows, the task that drives the
//! connection, a request's URI, and the one mapping from an `h2::Error`
//! to a [`Failure`].

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinHandle;

use crate::edge::H2Settings;
use crate::error::{ErrorKind, Failure};

/// A client connection: requests go through `send`; the connection's own
/// task ends when this is dropped.
pub struct H2Conn {
    pub send: h2::client::SendRequest<Bytes>,
    driver: JoinHandle<()>,
}

impl Drop for H2Conn {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

impl H2Conn {
    /// Sends the connection preface and the load's SETTINGS (windows) over
    /// `io`, and spawns the task that reads and writes the connection's
    /// frames. Must run inside a runtime.
    pub async fn handshake<T>(io: T, settings: &H2Settings) -> Result<H2Conn, Failure>
    where
        T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (send, conn) = settings
            .builder()
            .handshake::<T, Bytes>(io)
            .await
            .map_err(|e| failure(&e))?;
        let driver = tokio::spawn(async move {
            // Its error reaches every stream, which records it.
            let _ = conn.await;
        });
        Ok(H2Conn { send, driver })
    }

    /// [`get`] on this connection.
    pub async fn get(&mut self, uri: &str) -> Result<h2::client::ResponseFuture, Failure> {
        get(self.send.clone(), uri).await
    }
}

/// Sends `GET uri` with no body on `send`'s connection once it takes
/// another stream (the server's `SETTINGS_MAX_CONCURRENT_STREAMS`).
pub async fn get(
    send: h2::client::SendRequest<Bytes>,
    uri: &str,
) -> Result<h2::client::ResponseFuture, Failure> {
    let request = http::Request::get(uri)
        .body(())
        .map_err(|e| Failure::new(ErrorKind::Malformed, format!("request {uri}: {e}")))?;
    let mut send = send.ready().await.map_err(|e| failure(&e))?;
    let (response, _) = send.send_request(request, true).map_err(|e| failure(&e))?;
    Ok(response)
}

/// The URI of `path` on the target: HTTP/2 carries the scheme and the
/// authority as pseudo-headers.
pub fn uri(tls: bool, authority: &str, path: &str) -> String {
    let scheme = if tls { "https" } else { "http" };
    format!("{scheme}://{authority}{path}")
}

/// What an HTTP/2 error fails a request as: the socket's error as ever,
/// a stream reset or GOAWAY as `reset`, a protocol error (a server that
/// does not speak HTTP/2 answers the preface with HTTP/1.1) as
/// `malformed`.
pub fn failure(e: &h2::Error) -> Failure {
    if let Some(io) = e.get_io() {
        return Failure::transfer("HTTP/2", io);
    }
    if e.is_reset() || e.is_go_away() {
        return Failure::new(ErrorKind::Reset, format!("HTTP/2: {e}"));
    }
    Failure::new(ErrorKind::Malformed, format!("HTTP/2: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_uri_carries_scheme_and_authority() {
        assert_eq!(
            uri(true, "127.0.0.1:8443", "/fast"),
            "https://127.0.0.1:8443/fast"
        );
        assert_eq!(uri(false, "[::1]:80", "/a"), "http://[::1]:80/a");
    }
}
