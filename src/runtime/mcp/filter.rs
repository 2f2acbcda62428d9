//! Between a stdio server and the protocol client: a response to nothing
//! the client asked (a stray line a server prints before `initialize`, a
//! server's bug) is skipped with a log line. The client would take it for
//! the answer to its handshake and fail every start, forever.
//!
//! Two tasks carry the lines: the client's to the server, noting each
//! request's id, and the server's to the client, dropping responses whose
//! id is not one of those (an id answered is forgotten). Everything else
//! passes as it is, garbage included (the client skips that itself).

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// What a line says of itself: enough to tell a request from a response.
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<IgnoredAny>,
    #[serde(default)]
    result: Option<IgnoredAny>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

/// What one line of JSON-RPC is, for the filter.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Line {
    /// A request (or notification when `None`): its id.
    Request(Option<String>),
    /// A response to the request with this id.
    Response(String),
    /// Anything else: passed on as it is.
    Other,
}

pub(super) fn classify(line: &[u8]) -> Line {
    let Ok(head) = serde_json::from_slice::<Head>(line) else {
        return Line::Other;
    };
    let id = head.id.filter(|v| !v.is_null()).map(|v| v.to_string());
    match (
        head.method.is_some(),
        head.result.is_some() || head.error.is_some(),
        id,
    ) {
        (true, _, id) => Line::Request(id),
        (false, true, Some(id)) => Line::Response(id),
        _ => Line::Other,
    }
}

/// The ids of the client's requests not answered yet, the latest
/// [`MAX_ASKED`] of them (a request cancelled or timed out is never
/// answered: its id goes when newer ones push it out).
#[derive(Default)]
struct Ids {
    open: HashSet<String>,
    order: VecDeque<String>,
}

const MAX_ASKED: usize = 4_096;

impl Ids {
    fn note(&mut self, id: String) {
        self.order.push_back(id.clone());
        self.open.insert(id);
        while self.order.len() > MAX_ASKED {
            if let Some(old) = self.order.pop_front() {
                self.open.remove(&old);
            }
        }
    }
}

type Asked = Arc<Mutex<Ids>>;

fn asked(a: &Asked) -> std::sync::MutexGuard<'_, Ids> {
    a.lock().unwrap_or_else(|p| p.into_inner())
}

/// A line buffer that held one large message is let go, not kept at its
/// size for the life of the server.
fn shrink(line: &mut Vec<u8>) {
    if line.capacity() > 1 << 20 {
        *line = Vec::new();
    }
}

/// Read the next line (at most `max` bytes of it) into `line`; false at
/// the end or on an error.
async fn next_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
    max: usize,
) -> bool {
    line.clear();
    matches!(reader.take(max as u64 + 1).read_until(b'\n', line).await, Ok(n) if n > 0)
}

/// The client's ends of the filtered connection to a server whose stdout
/// is `from_server` and stdin `to_server`: (what the client reads, what
/// it writes). `max` bounds a line (longer ones pass unread, for the
/// client to refuse).
pub(super) fn filtered<R, W>(
    from_server: R,
    to_server: W,
    server: String,
    max: usize,
) -> (tokio::io::DuplexStream, tokio::io::DuplexStream)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    const BUF: usize = 1 << 16;
    let (client_reads, mut to_client) = tokio::io::duplex(BUF);
    let (client_writes, from_client) = tokio::io::duplex(BUF);
    let ids: Asked = Arc::default();
    let noted = Arc::clone(&ids);
    tokio::spawn(async move {
        let (mut reader, mut to_server) = (BufReader::new(from_client), to_server);
        let mut line = Vec::new();
        loop {
            if !next_line(&mut reader, &mut line, max).await {
                break;
            }
            if let Line::Request(Some(id)) = classify(&line) {
                asked(&noted).note(id);
            }
            if to_server.write_all(&line).await.is_err() || to_server.flush().await.is_err() {
                break;
            }
            shrink(&mut line);
        }
        let _ = to_server.shutdown().await;
    });
    tokio::spawn(async move {
        let mut reader = BufReader::new(from_server);
        let mut line = Vec::new();
        loop {
            if !next_line(&mut reader, &mut line, max).await {
                break;
            }
            if let Line::Response(id) = classify(&line) {
                if !asked(&ids).open.remove(&id) {
                    tracing::warn!(%server, %id, "MCP server answered a request it was never sent; skipped");
                    continue;
                }
            }
            if to_client.write_all(&line).await.is_err() {
                break;
            }
            shrink(&mut line);
        }
        let _ = to_client.shutdown().await;
    });
    (client_reads, client_writes)
}

#[cfg(test)]
mod tests {
    use super::{classify, Line};

    #[test]
    fn the_ids_kept_are_bounded() {
        let mut ids = super::Ids::default();
        for n in 0..(super::MAX_ASKED + 10) {
            ids.note(n.to_string());
        }
        assert_eq!(ids.open.len(), super::MAX_ASKED);
        assert!(!ids.open.contains("0") && ids.open.contains("10"));
    }

    #[test]
    fn lines_are_told_apart_by_their_shape() {
        let c = |s: &str| classify(s.as_bytes());
        assert_eq!(
            c(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#),
            Line::Request(Some("0".into()))
        );
        assert_eq!(
            c(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Line::Request(None)
        );
        assert_eq!(
            c(r#"{"jsonrpc":"2.0","id":"a","result":{"x":1}}"#),
            Line::Response("\"a\"".into())
        );
        assert_eq!(
            c(r#"{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}"#),
            Line::Response("7".into())
        );
        assert_eq!(c("this is not JSON-RPC"), Line::Other);
        assert_eq!(c(r#"{"jsonrpc":"2.0","id":null,"error":{}}"#), Line::Other);
    }
}
