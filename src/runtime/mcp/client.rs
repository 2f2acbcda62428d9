//! The client side of the protocol: the handler the SDK calls back (a
//! changed tool list, a call's progress), the streamable HTTP transport as Holon configures
//! it, and a server's tool listing as the catalog reads it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, Implementation, InitializeRequestParams, ProgressNotificationParam,
    ProgressToken, ProtocolVersion,
};
use rmcp::service::{NotificationContext, Peer};
use rmcp::{ClientHandler, RoleClient};
use serde_json::Value;

use super::names::Listed;
use crate::model::mcp::McpProgress;

/// Where a running call's progress goes (its row in the console).
pub type ProgressSink = Arc<dyn Fn(McpProgress) + Send + Sync>;

/// The sinks of a server's calls in flight, by the connection (its
/// serial) and the progress token each call was sent with: tokens are
/// counted afresh on each connection.
pub(super) type Watchers = Arc<Mutex<HashMap<(u64, ProgressToken), ProgressSink>>>;

/// The largest message a server may send (a 50 MB result is read, then
/// bounded before the model sees it).
pub(super) const MAX_MESSAGE: usize = 64 * 1024 * 1024;

/// The client side's handler: notes that the tool list changed, and
/// passes a call's progress to its sink.
pub(super) struct Handler {
    pub(super) changed: Arc<AtomicBool>,
    pub(super) generation: Arc<AtomicU64>,
    pub(super) watchers: Watchers,
    /// The serial of the connection this handler serves.
    pub(super) serial: u64,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> InitializeRequestParams {
        InitializeRequestParams::new(
            ClientCapabilities::default(),
            Implementation::new("holon", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.swap(true, Ordering::SeqCst);
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // A token no call in flight holds (late, or made up) is ignored.
        let sink = self
            .watchers
            .lock()
            .ok()
            .and_then(|w| w.get(&(self.serial, params.progress_token)).cloned());
        if let Some(sink) = sink {
            sink(McpProgress::new(
                params.progress,
                params.total,
                params.message.as_deref(),
            ));
        }
    }
}

/// The streamable HTTP transport to `url`, with the bearer token the
/// variable `bearer` holds.
pub(super) fn http_transport(
    url: &str,
    bearer: Option<&str>,
) -> Result<impl rmcp::transport::Transport<RoleClient>, String> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::StreamableHttpClientTransport;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url)
        .max_json_response_size(MAX_MESSAGE)
        .max_sse_event_size(MAX_MESSAGE);
    // A dropped stream is resumed three times, half a second apart; past
    // that the server is down, not slow.
    config.retry_config = Arc::new(ThreeRetries);
    if let Some(var) = bearer {
        let token = std::env::var(var).map_err(|_| {
            format!("its bearer token variable `{var}` is not set in Holon's environment")
        })?;
        config = config.auth_header(token);
    }
    // The process's TLS provider, for https servers (once; a second
    // install is refused and harmless).
    let _ = rustls::crypto::ring::default_provider().install_default();
    Ok(StreamableHttpClientTransport::from_config(config))
}

/// How a dropped HTTP event stream is resumed: three times, half a second
/// apart.
#[derive(Debug)]
struct ThreeRetries;

impl rmcp::transport::common::client_side_sse::SseRetryPolicy for ThreeRetries {
    fn retry(&self, current_times: usize) -> Option<Duration> {
        (current_times < 3).then_some(Duration::from_millis(500))
    }
}

pub(super) async fn list_tools(
    peer: &Peer<RoleClient>,
    timeout: Duration,
) -> Result<Vec<Listed>, String> {
    let tools = match tokio::time::timeout(timeout, peer.list_all_tools()).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return Err(format!("cannot list the server's tools: {e}")),
        Err(_) => {
            return Err(format!(
                "the server did not list its tools within {} s",
                timeout.as_secs()
            ))
        }
    };
    Ok(tools
        .into_iter()
        .map(|t| Listed {
            name: t.name.to_string(),
            description: t.description.as_deref().unwrap_or("").to_owned(),
            input_schema: Value::Object((*t.input_schema).clone()),
            read_only: t
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false),
        })
        .collect())
}
