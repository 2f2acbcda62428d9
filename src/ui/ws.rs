//! Where a console or command reaches a runtime: its unix socket, or its
//! HTTP listener's WebSocket (`ws://HOST:PORT`, bearer token) for remote
//! attach. A WebSocket connection is carried over a socket pair into the
//! same `SocketClient`, so requests, subscriptions, reconnects and
//! resume-from-cursor behave exactly as over the socket.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use super::client::SocketClient;

/// How often the connection is pinged.
const KEEPALIVE: Duration = Duration::from_secs(30);

/// A runtime's control endpoint.
#[derive(Clone, PartialEq, Eq)]
pub enum Endpoint {
    Unix(PathBuf),
    /// `url` is `ws://HOST:PORT/ws`; `token` the bearer token.
    WebSocket {
        url: String,
        token: String,
    },
}

impl std::fmt::Debug for Endpoint {
    /// Never the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Endpoint {
    /// `ws://host:port` (the `/ws` path added when absent), else a path.
    pub fn websocket(target: &str, token: String) -> Result<Endpoint, String> {
        let t = target.trim().trim_end_matches('/');
        let rest = t
            .strip_prefix("ws://")
            .ok_or_else(|| format!("`{target}` is not a ws:// address (wss is not served; use an ssh tunnel or a tailnet)"))?;
        if rest.is_empty() || rest.contains(char::is_whitespace) {
            return Err(format!("`{target}` names no host"));
        }
        let url = if rest.contains('/') {
            t.to_owned()
        } else {
            format!("{t}/ws")
        };
        Ok(Endpoint::WebSocket { url, token })
    }

    pub fn describe(&self) -> String {
        match self {
            Endpoint::Unix(p) => p.display().to_string(),
            Endpoint::WebSocket { url, .. } => url.clone(),
        }
    }

    pub async fn connect(&self) -> std::io::Result<SocketClient> {
        match self {
            Endpoint::Unix(p) => SocketClient::connect(p).await,
            Endpoint::WebSocket { url, token } => connect_ws(url, token).await,
        }
    }
}

fn io_error(message: String) -> std::io::Error {
    std::io::Error::other(message)
}

async fn connect_ws(url: &str, token: &str) -> std::io::Result<SocketClient> {
    use tokio_tungstenite::tungstenite::Error as WsError;
    let mut request = url
        .into_client_request()
        .map_err(|e| io_error(format!("{url}: {e}")))?;
    let bearer = format!("Bearer {token}")
        .parse()
        .map_err(|_| io_error("the token is not a valid header value".into()))?;
    request.headers_mut().insert("authorization", bearer);
    let connecting = tokio_tungstenite::connect_async(request);
    let (ws, _) = match tokio::time::timeout(std::time::Duration::from_secs(10), connecting).await {
        Err(_) => return Err(io_error(format!("{url} did not answer within 10 s"))),
        Ok(Err(WsError::Http(r))) if r.status().as_u16() == 401 => {
            return Err(io_error(format!(
                "{url} refused the token (401): check --token-file"
            )))
        }
        Ok(Err(WsError::Io(e))) => return Err(e),
        Ok(Err(e)) => return Err(io_error(format!("{url}: {e}"))),
        Ok(Ok(c)) => c,
    };
    let (ours, theirs) = UnixStream::pair()?;
    tokio::spawn(pump(ws, ours));
    SocketClient::over(theirs, PathBuf::from(url))
}

/// Lines from the client become text messages and text messages become
/// lines, until either side ends.
async fn pump<S>(ws: tokio_tungstenite::WebSocketStream<S>, stream: UnixStream)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (mut ws_tx, mut ws_rx) = ws.split();
    let (read, mut write) = stream.into_split();
    // Pings find a runtime that vanished without closing (a dropped
    // network): nothing heard for three of them ends the stream, and the
    // console reconnects.
    let heard = std::sync::Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let seen = std::sync::Arc::clone(&heard);
    let outbound = async move {
        let mut lines = BufReader::new(read).lines();
        let mut ping = tokio::time::interval(KEEPALIVE);
        ping.tick().await;
        loop {
            let message = tokio::select! {
                line = lines.next_line() => match line {
                    Ok(Some(line)) => Message::text(line),
                    Ok(None) | Err(_) => break,
                },
                _ = ping.tick() => {
                    let quiet = started.elapsed().as_secs().saturating_sub(heard.load(Ordering::Relaxed));
                    if quiet > 3 * KEEPALIVE.as_secs() {
                        return;
                    }
                    Message::Ping(Default::default())
                }
            };
            if ws_tx.send(message).await.is_err() {
                return;
            }
        }
        let _ = ws_tx.send(Message::Close(None)).await;
    };
    let inbound = async move {
        while let Some(Ok(msg)) = ws_rx.next().await {
            seen.store(started.elapsed().as_secs(), Ordering::Relaxed);
            let bytes: Vec<u8> = match msg {
                Message::Text(t) => t.as_bytes().to_vec(),
                Message::Binary(b) => b.to_vec(),
                Message::Close(_) => break,
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
            };
            if write.write_all(&bytes).await.is_err() || write.write_all(b"\n").await.is_err() {
                break;
            }
        }
        let _ = write.shutdown().await;
    };
    // The runtime closing the connection ends the client's stream (it
    // reconnects); the client dropping its end closes the WebSocket.
    tokio::select! {
        _ = outbound => {}
        _ = inbound => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn websocket_targets_gain_the_ws_path_and_hide_the_token() {
        let e = Endpoint::websocket("ws://10.0.0.2:7464", "secret-token".into());
        let e = e.unwrap_or_else(|m| panic!("{m}"));
        assert_eq!(e.describe(), "ws://10.0.0.2:7464/ws");
        assert!(!format!("{e:?}").contains("secret"));
        assert!(Endpoint::websocket("http://x:1", String::new()).is_err());
        assert!(Endpoint::websocket("ws://", String::new()).is_err());
    }
}
