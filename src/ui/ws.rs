//! Where a console or command reaches a runtime: its unix socket, or its
//! HTTP listener's WebSocket (`ws://HOST:PORT`, or `wss://` with a pinned
//! certificate; a bearer token) for remote attach. A WebSocket connection is carried over a socket pair into the
//! same `SocketClient`, so requests, subscriptions, reconnects and
//! resume-from-cursor behave exactly as over the socket; so is an ssh
//! link (`ssh`). Every connection first checks the runtime's protocol
//! revision.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use super::client::SocketClient;

/// How often an idle WebSocket is pinged, on both ends.
pub const KEEPALIVE: Duration = Duration::from_secs(30);

/// When the other end was last heard from: a peer that vanished without
/// closing (a dropped network) is found by the pings each end sends, and
/// nothing heard for three of them ends the connection.
#[derive(Clone)]
pub struct Heard {
    started: Instant,
    secs: std::sync::Arc<AtomicU64>,
}

impl Default for Heard {
    fn default() -> Self {
        Heard {
            started: Instant::now(),
            secs: std::sync::Arc::default(),
        }
    }
}

impl Heard {
    /// Something arrived.
    pub fn now(&self) {
        self.secs
            .store(self.started.elapsed().as_secs(), Ordering::Relaxed);
    }

    /// Nothing arrived for three keepalive periods.
    pub fn gone(&self) -> bool {
        let quiet = self
            .started
            .elapsed()
            .as_secs()
            .saturating_sub(self.secs.load(Ordering::Relaxed));
        quiet > 3 * KEEPALIVE.as_secs()
    }

    /// A ticker for the pings (its first tick is a period from now).
    pub fn pings() -> tokio::time::Interval {
        let start = tokio::time::Instant::now() + KEEPALIVE;
        tokio::time::interval_at(start, KEEPALIVE)
    }
}

/// A runtime's control endpoint.
#[derive(Clone, PartialEq, Eq)]
pub enum Endpoint {
    Unix(PathBuf),
    /// `url` is `ws://HOST:PORT/ws` or `wss://…`; `token` the bearer
    /// token; `pin` the certificate fingerprint a `wss://` runtime must
    /// present.
    WebSocket {
        url: String,
        token: String,
        pin: Option<[u8; 32]>,
    },
    /// `ssh://[user@]host[:port][/home]`: the operator's ssh runs `holon
    /// attach --stdio` there.
    Ssh(super::ssh::SshTarget),
}

impl std::fmt::Debug for Endpoint {
    /// Never the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Endpoint {
    /// `ws://host:port` or `wss://host:port` (the `/ws` path added when
    /// absent). A `wss://` runtime is trusted by its certificate's pinned
    /// fingerprint, which it needs; a `ws://` one has none to pin.
    pub fn websocket(
        target: &str,
        token: String,
        fingerprint: Option<&str>,
    ) -> Result<Endpoint, String> {
        let t = target.trim().trim_end_matches('/');
        let (rest, tls) = match (t.strip_prefix("ws://"), t.strip_prefix("wss://")) {
            (Some(rest), _) => (rest, false),
            (_, Some(rest)) => (rest, true),
            _ => return Err(format!("`{target}` is not a ws:// or wss:// address")),
        };
        if rest.is_empty() || rest.starts_with('/') || rest.contains(char::is_whitespace) {
            return Err(format!("`{target}` names no host"));
        }
        let pin = match (tls, fingerprint) {
            (true, Some(f)) => Some(super::tls::parse_fingerprint(f)?),
            (true, None) => {
                return Err(format!(
                    "`{target}` needs --fingerprint SHA256:… to know the runtime's certificate \
                     (`holon remote-info` on that machine prints it)"
                ))
            }
            (false, Some(_)) => {
                return Err(format!(
                    "`{target}` is plaintext: there is no certificate to pin (use wss://)"
                ))
            }
            (false, None) => None,
        };
        let url = if rest.contains('/') {
            t.to_owned()
        } else {
            format!("{t}/ws")
        };
        Ok(Endpoint::WebSocket { url, token, pin })
    }

    pub fn describe(&self) -> String {
        match self {
            Endpoint::Unix(p) => p.display().to_string(),
            Endpoint::WebSocket { url, .. } => url.clone(),
            Endpoint::Ssh(t) => t.describe(),
        }
    }

    /// Whether the runtime is on another machine (its files are not here).
    pub fn remote(&self) -> bool {
        !matches!(self, Endpoint::Unix(_))
    }

    /// Connect, and check the runtime speaks this protocol's revision.
    /// The first connection may let ssh ask at the terminal; see
    /// `reconnect`.
    pub async fn connect(&self) -> std::io::Result<SocketClient> {
        self.connect_as(true).await
    }

    /// Connect again, in the console: nothing may ask at the terminal.
    pub async fn reconnect(&self) -> std::io::Result<SocketClient> {
        self.connect_as(false).await
    }

    async fn connect_as(&self, interactive: bool) -> std::io::Result<SocketClient> {
        let client = match self {
            Endpoint::Unix(p) => SocketClient::connect(p).await?,
            Endpoint::WebSocket { url, token, pin } => connect_ws(url, token, *pin).await?,
            Endpoint::Ssh(t) => super::ssh::connect(t, interactive).await?,
        };
        same_revision(&client)
            .await
            .map_err(|m| std::io::Error::new(std::io::ErrorKind::InvalidData, m))?;
        Ok(client)
    }

    /// What to tell the operator when `connect` failed with `e`.
    pub fn unreachable(&self, e: &std::io::Error) -> String {
        let refused = e.get_ref().is_some_and(|r| r.is::<Refused>());
        match self {
            // It answered: what it said, not "start one".
            _ if refused || e.kind() == std::io::ErrorKind::InvalidData => e.to_string(),
            Endpoint::Ssh(t) => format!("cannot attach to {}: {e}", t.describe()),
            _ => format!(
                "no Holon runtime answers on {}: {e}; start one with `holon --detach`",
                self.describe()
            ),
        }
    }
}

/// Refuse a runtime whose protocol revision differs from ours, naming
/// both (a transport failure here is left to the caller's next request).
async fn same_revision(client: &SocketClient) -> Result<(), String> {
    use crate::protocol::{Request, RuntimeClient};
    #[derive(serde::Deserialize)]
    struct Said {
        #[serde(default)]
        version: String,
        #[serde(default)]
        protocol: u32,
    }
    let asked = client.call_raw(Request::RuntimeStatus);
    let raw = match tokio::time::timeout(Duration::from_secs(10), asked).await {
        Err(_) => {
            return Err(format!(
                "{} accepted the connection but did not answer within 10 s",
                client.path().display()
            ))
        }
        Ok(Err(_)) => return Ok(()),
        Ok(Ok(raw)) => raw,
    };
    let said: Said = serde_json::from_str(&raw).map_err(|e| {
        format!(
            "{} answered its status in a form this console cannot read: {e}",
            client.path().display()
        )
    })?;
    match said.protocol == crate::protocol::REVISION {
        true => Ok(()),
        false => Err(format!(
            "the runtime on {} is holon {} speaking protocol revision {}; this console is holon {} \
             speaking revision {}: run the same version on both sides",
            client.path().display(),
            if said.version.is_empty() { "(unknown)" } else { &said.version },
            said.protocol,
            env!("CARGO_PKG_VERSION"),
            crate::protocol::REVISION,
        )),
    }
}

fn io_error(message: String) -> std::io::Error {
    std::io::Error::other(message)
}

/// A runtime that answered and refused the connection, in its words (or
/// ours): shown as it is, since the runtime is there.
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

async fn connect_ws(
    url: &str,
    token: &str,
    pin: Option<[u8; 32]>,
) -> std::io::Result<SocketClient> {
    let mut request = url
        .into_client_request()
        .map_err(|e| io_error(format!("{url}: {e}")))?;
    let bearer = format!("Bearer {token}")
        .parse()
        .map_err(|_| io_error("the token is not a valid header value".into()))?;
    request.headers_mut().insert("authorization", bearer);
    let within = std::time::Duration::from_secs(10);
    let late = || io_error(format!("{url} did not answer within 10 s"));
    let (ours, theirs) = UnixStream::pair()?;
    match pin {
        None => {
            let connecting = tokio_tungstenite::connect_async(request);
            let (ws, _) = tokio::time::timeout(within, connecting)
                .await
                .map_err(|_| late())?
                .map_err(|e| ws_error(url, e))?;
            tokio::spawn(bridge_lines(ws, ours, Ends::Either));
        }
        Some(pin) => {
            let uri = request.uri().clone();
            let host = uri
                .host()
                .unwrap_or_default()
                .trim_matches(['[', ']'])
                .to_owned();
            let port = uri.port_u16().unwrap_or(443);
            let connecting = async {
                let tls = super::tls::connect(url, &host, port, pin).await?;
                tokio_tungstenite::client_async(request, tls)
                    .await
                    .map_err(|e| ws_error(url, e))
            };
            let (ws, _) = tokio::time::timeout(within, connecting)
                .await
                .map_err(|_| late())??;
            tokio::spawn(bridge_lines(ws, ours, Ends::Either));
        }
    }
    SocketClient::over(theirs, PathBuf::from(url))
}

/// A WebSocket handshake's failure in the operator's terms. A runtime
/// that answered and refused says why, as `Refused`, which `unreachable`
/// shows as it is (it is there: "start one" would mislead).
fn ws_error(url: &str, e: tokio_tungstenite::tungstenite::Error) -> std::io::Error {
    use std::io::ErrorKind;
    use tokio_tungstenite::tungstenite::Error as WsError;
    match e {
        WsError::Http(r) if r.status().as_u16() == 401 => std::io::Error::new(
            ErrorKind::PermissionDenied,
            Refused(format!("{url} refused the token (401): check --token-file")),
        ),
        WsError::Http(r) if r.status().as_u16() == 503 => {
            let said = (r.body().as_deref())
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
                .and_then(|v| {
                    v["error"]
                        .as_str()
                        .map(|s| crate::ui::present::one_line(s, 300))
                });
            let why = said.unwrap_or_else(|| "it is busy".to_owned());
            let refused = Refused(format!("{url} refused (503): {why}"));
            std::io::Error::new(ErrorKind::ResourceBusy, refused)
        }
        WsError::Io(e) => e,
        WsError::Protocol(_) | WsError::HttpFormat(_) if url.starts_with("ws://") => io_error(
            format!("{url}: {e} (a listener serving TLS is reached as wss://, with --fingerprint)"),
        ),
        e => io_error(format!("{url}: {e}")),
    }
}

/// Which side of the bridge ending ends it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Ends {
    /// Either side (a client: the runtime closing ends its stream).
    Either,
    /// The line side (a server: a client that half-closed still gets its
    /// answers and subscriptions until the handler is done).
    Lines,
}

/// Carry lines between a socket-pair end and a WebSocket: each line out is
/// one text message, each data message in one line. Pings every
/// `KEEPALIVE` find a peer gone without closing.
/// Used by the client (`Ends::Either`) and the listener (`Ends::Lines`).
pub async fn bridge_lines<S>(
    ws: tokio_tungstenite::WebSocketStream<S>,
    stream: UnixStream,
    ends: Ends,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin,
{
    let (mut ws_tx, mut ws_rx) = ws.split();
    let (read, mut write) = stream.into_split();
    let heard = Heard::default();
    let seen = heard.clone();
    let outbound = async move {
        let mut lines = BufReader::new(read).lines();
        let mut ping = Heard::pings();
        loop {
            let message = tokio::select! {
                line = lines.next_line() => match line {
                    Ok(Some(line)) => Message::text(line),
                    Ok(None) | Err(_) => break,
                },
                _ = ping.tick() => {
                    if heard.gone() {
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
        // Whether the peer is done: it said Close, or broke the protocol
        // (a frame past the limit, say). One whose stream merely ended
        // may still read what the line side has to say.
        let mut done = false;
        loop {
            let msg = match ws_rx.next().await {
                Some(Ok(m)) => m,
                Some(Err(_)) => {
                    done = true;
                    break;
                }
                None => break,
            };
            seen.now();
            let bytes = match msg {
                Message::Text(t) => t.as_bytes().to_vec(),
                Message::Binary(b) => b.to_vec(),
                Message::Close(_) => {
                    // One more poll of the read sends the Close reply
                    // tungstenite queued; then the connection is dropped.
                    let _ = futures_util::FutureExt::now_or_never(ws_rx.next());
                    done = true;
                    break;
                }
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
            };
            if write.write_all(&bytes).await.is_err() || write.write_all(b"\n").await.is_err() {
                break;
            }
        }
        let _ = write.shutdown().await;
        done
    };
    tokio::pin!(outbound);
    tokio::select! {
        _ = &mut outbound => {}
        done = inbound => {
            if ends == Ends::Lines && !done {
                outbound.await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_shown_as_said_and_other_failures_name_the_endpoint() {
        let e = Endpoint::Unix(PathBuf::from("/h/run/holon.sock"));
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let told = e.unreachable(&denied);
        assert!(told.contains("/h/run/holon.sock"), "{told}");
        let said = "ws://h:1/ws refused (503): every one following an agent";
        let refused =
            std::io::Error::new(std::io::ErrorKind::ResourceBusy, Refused(said.to_owned()));
        assert_eq!(e.unreachable(&refused), said);
    }

    /// A runtime answering its status with `protocol`.
    async fn answering(protocol: u32) -> SocketClient {
        let (ours, theirs) = UnixStream::pair().unwrap();
        tokio::spawn(async move {
            let (read, mut write) = theirs.into_split();
            let mut lines = BufReader::new(read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let id = serde_json::from_str::<serde_json::Value>(&line).unwrap()["id"].clone();
                let result =
                    serde_json::json!({"holon": "holon", "version": "0.0.9", "protocol": protocol});
                let answer = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result});
                let _ = write.write_all(format!("{answer}\n").as_bytes()).await;
            }
        });
        SocketClient::over(ours, PathBuf::from("far.sock")).unwrap()
    }

    #[tokio::test]
    async fn a_runtime_of_another_protocol_revision_is_refused_naming_both() {
        assert!(same_revision(&answering(crate::protocol::REVISION).await)
            .await
            .is_ok());
        let e = same_revision(&answering(0).await)
            .await
            .err()
            .unwrap_or_default();
        assert!(
            e.contains("holon 0.0.9 speaking protocol revision 0"),
            "{e}"
        );
        assert!(
            e.contains(&format!("revision {}", crate::protocol::REVISION)),
            "{e}"
        );
    }

    #[test]
    fn websocket_targets_gain_the_ws_path_and_hide_the_token() {
        let e = Endpoint::websocket("ws://10.0.0.2:7464", "secret-token".into(), None);
        let e = e.unwrap();
        assert_eq!(e.describe(), "ws://10.0.0.2:7464/ws");
        assert!(!format!("{e:?}").contains("secret"));
        assert!(Endpoint::websocket("http://x:1", String::new(), None).is_err());
        assert!(Endpoint::websocket("ws://", String::new(), None).is_err());
        // wss:// is trusted by a pinned certificate, which ws:// has not.
        let pin = super::super::tls::fingerprint(b"cert");
        let e = Endpoint::websocket("wss://box:7464", String::new(), Some(&pin)).unwrap();
        assert_eq!(e.describe(), "wss://box:7464/ws");
        let unpinned = Endpoint::websocket("wss://box:7464", String::new(), None);
        assert!(unpinned.err().unwrap_or_default().contains("--fingerprint"));
        assert!(Endpoint::websocket("ws://box:1", String::new(), Some(&pin)).is_err());
        assert!(Endpoint::websocket("wss://box:1", String::new(), Some("SHA256:zz")).is_err());
    }
}
